//! Cache prefetch hints: asking the CPU to bring memory into its caches before it is written.
//!
//! What it serves: a new page lands in a frame whose 8 KB nobody has touched for a long time
//! (seed 002 fills a fresh frame for every row, 4 GB of them), so its first writes miss every
//! cache and stall the session until the store buffer drains. The buffer pool hints the next
//! free frame's memory one new page ahead, while the session still works on the current one.
//!
//! A hint changes no state a program can observe: it reads nothing into the program and never
//! faults, whatever the address. That is why this is the one module of the engine that is
//! allowed `unsafe`: the intrinsics are marked unsafe for their target feature, not for memory.
//! On targets other than x86-64 the hints do nothing.
#![allow(unsafe_code)]

const CACHE_LINE_BYTES: usize = 64;

/// Hints `len` bytes from `ptr` into the level-1 cache (small objects about to be written).
pub fn into_l1(ptr: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    hint_lines::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr, len);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, len);
}

/// Hints `len` bytes from `ptr` into the level-2 cache: for a run of lines (a page's half), so
/// that the hints do not hold the level-1 cache's few fill buffers while they are in flight.
pub fn into_l2(ptr: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    hint_lines::<{ std::arch::x86_64::_MM_HINT_T1 }>(ptr, len);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, len);
}

#[cfg(target_arch = "x86_64")]
fn hint_lines<const STRATEGY: i32>(ptr: *const u8, len: usize) {
    for_each_line(ptr, len, |line| {
        // SAFETY: a prefetch reads nothing into the program and never faults (module header).
        unsafe { std::arch::x86_64::_mm_prefetch::<STRATEGY>(line.cast()) };
    });
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn for_each_line(ptr: *const u8, len: usize, mut hint: impl FnMut(*const u8)) {
    let mut offset = 0;
    while offset < len {
        hint(ptr.wrapping_add(offset));
        offset += CACHE_LINE_BYTES;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_leave_memory_as_it_was_and_accept_any_address() {
        let bytes: Vec<u8> = (0..=255).cycle().take(8192).collect();
        into_l1(bytes.as_ptr(), bytes.len());
        into_l2(bytes.as_ptr(), bytes.len());
        // Addresses that are not mapped: a hint must not fault.
        into_l1(std::ptr::null(), 4096);
        into_l2(usize::MAX as *const u8, 64);
        assert!(bytes.iter().copied().eq((0..=255).cycle().take(8192)));
    }

    #[test]
    fn every_line_of_a_range_is_hinted_once() {
        let mut lines = Vec::new();
        for_each_line(std::ptr::null::<u8>().wrapping_add(1000), 130, |line| {
            lines.push(line as usize)
        });
        assert_eq!(lines, vec![1000, 1064, 1128]);
        lines.clear();
        for_each_line(std::ptr::null(), 0, |line| lines.push(line as usize));
        assert!(lines.is_empty());
    }
}
