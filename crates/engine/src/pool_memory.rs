//! The buffer pool's memory: the 8 KB buffers of its frames, carved out of anonymous mappings
//! that the kernel is asked to back with transparent huge pages (2 MB).
//!
//! What it reproduces: SQL Server's buffer pool takes its memory in large blocks, not a page
//! at a time, and with large pages (trace flag 834, locked pages) the operating system maps it
//! 2 MB at a time. Here every frame's buffer lies in one mapping per pool, advised
//! `MADV_HUGEPAGE`: a pool that fills faults its memory in 2 MB at a time (one fault per 256
//! frames) instead of 4 KB at a time. On this project's VM a 4 KB first touch costs about
//! 2.7 us and a 2 MB one about 190 us (0.37 us per 4 KB), which decided seed 002's cost with a
//! pool that holds the table (docs/benchmarks.md).
//!
//! Memory is reserved when a pool starts and is resident only once a frame is first used, as
//! before. Buffers are never unmapped: a pool that stops hands its buffers to a process-wide
//! spare list, and the next pool takes them from there before it maps more. So the process
//! maps at most the largest number of frames its pools had at one time, and a test binary
//! that starts hundreds of instances does not grow by each one's pool.
//!
//! With trace flag 834 at startup, as SQL Server's large-page buffer pool, the whole pool is
//! committed when the instance starts ([`commit`]) rather than as frames are first used.
//!
//! Deviations: the pages are not locked in memory, and "large" is the kernel's transparent
//! huge pages, a request it may not grant: where it has none the advice is ignored and the
//! pool faults in 4 KB pages.
//!
//! Invariant (owned here): 1. A buffer belongs to at most one frame of one pool at a time: it
//! is handed out by [`take`] and comes back only through [`give_back`].

use crate::page::PageBuf;
use crate::units::PAGE_SIZE;
use parking_lot::Mutex;

/// Buffers of pools that have stopped, kept for the next pool.
static SPARE_BUFFERS: Mutex<Vec<&'static mut PageBuf>> = Mutex::new(Vec::new());

/// A page buffer and whether its bytes are known to be zero (fresh from the kernel).
pub type Buffer = (&'static mut PageBuf, bool);

/// `count` page buffers: spare ones first (their bytes are what their last page left), the
/// rest from a new mapping (reserved, not yet resident, zero).
pub fn take(count: usize) -> Vec<Buffer> {
    let mut buffers: Vec<Buffer> = {
        let mut spare = SPARE_BUFFERS.lock();
        let keep = spare.len().saturating_sub(count);
        spare.split_off(keep).into_iter().map(|buffer| (buffer, false)).collect()
    };
    let missing = count - buffers.len();
    if missing > 0 {
        buffers.extend(map_buffers(missing).into_iter().map(|buffer| (buffer, true)));
    }
    assert_eq!(buffers.len(), count, "pool_memory invariant 1: one buffer per frame asked");
    buffers
}

/// Commits buffers now (trace flag 834): each 4 KB of them is written once, so that the
/// kernel maps their memory (2 MB at a time where it can) before the pool serves a page, and
/// no first use of a frame faults. Returns the bytes committed.
pub fn commit(buffers: &mut [Buffer]) -> u64 {
    for (buffer, _) in buffers.iter_mut() {
        for os_page in buffer.chunks_mut(4096) {
            os_page[0] = 0;
        }
    }
    buffers.len() as u64 * PAGE_SIZE as u64
}

/// Returns buffers whose frames are gone (the pool stopped).
pub fn give_back(buffers: impl IntoIterator<Item = &'static mut PageBuf>) {
    SPARE_BUFFERS.lock().extend(buffers);
}

/// Buffers kept for the next pool (for tests and the memory measurement).
pub fn spare_count() -> usize {
    SPARE_BUFFERS.lock().len()
}

/// Maps `count` buffers in one anonymous mapping advised for huge pages. The mapping is
/// leaked on purpose: its buffers live as long as the process, moving between pools.
fn map_buffers(count: usize) -> Vec<&'static mut PageBuf> {
    let map = match memmap2::MmapMut::map_anon(count * PAGE_SIZE) {
        Ok(map) => map,
        // No address space for a mapping: one heap allocation per buffer, as before.
        Err(_) => return (0..count).map(|_| Box::leak(crate::page::new_page_buf())).collect(),
    };
    advise_huge_pages(&map);
    let map: &'static mut memmap2::MmapMut = Box::leak(Box::new(map));
    let bytes: &'static mut [u8] = &mut map[..];
    bytes
        .chunks_exact_mut(PAGE_SIZE)
        .map(|chunk| <&mut PageBuf>::try_from(chunk).expect("chunks are one page long"))
        .collect()
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(map: &memmap2::MmapMut) {
    // Advice only: a kernel without transparent huge pages refuses it, and 4 KB pages remain.
    let _ = map.advise(memmap2::Advice::HugePage);
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_map: &memmap2::MmapMut) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_distinct_pages_and_come_back_for_the_next_pool() {
        let mut buffers = take(300);
        for (n, (buffer, zeroed)) in buffers.iter_mut().enumerate() {
            if *zeroed {
                assert!(buffer.iter().all(|b| *b == 0), "a buffer said to be zero is");
            }
            buffer.fill(n as u8);
        }
        for (n, (buffer, _)) in buffers.iter().enumerate() {
            assert!(buffer.iter().all(|b| *b == n as u8), "buffer {n} kept its own bytes");
        }
        let spare_before = spare_count();
        give_back(buffers.into_iter().map(|(buffer, _)| buffer));
        assert!(spare_count() >= spare_before + 300);
        // Other tests of this binary may take spare buffers meanwhile; what is taken is whole.
        let again = take(300);
        assert_eq!(again.len(), 300);
        give_back(again.into_iter().map(|(buffer, _)| buffer));
    }
}
