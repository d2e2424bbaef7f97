//! The buffer pool's memory: the 8 KB buffers of its frames, carved out of one anonymous
//! mapping per pool.
//!
//! What it reproduces: SQL Server's buffer pool commits its memory as it grows, in the
//! operating system's small pages; with trace flag 834 (large pages, locked pages) it takes all
//! of it at startup, mapped 2 MB at a time. Here a pool started with TF 834 has its mapping
//! advised for transparent huge pages (`MADV_HUGEPAGE`) and every buffer written once before
//! the pool serves a page ([`commit`]); without it, the mapping is resident 4 KB at a time as
//! frames are first used, as before.
//!
//! Why it matters on this project's VM: memory a process touches for the first time is slow
//! (about 2.7 us per 4 KB page, more where the guest never touched it before), and a pool that
//! holds seed 002's 4 GB table spent more of the run faulting than inserting. Huge pages alone
//! do not help a small pool: each first touch of a 2 MB page then takes a whole fresh 2 MB
//! block (6 ms each was measured with 16 sessions inserting), so they come only with the
//! commit at startup.
//!
//! Buffers are never unmapped: a pool that stops hands its buffers to a process-wide spare
//! list, and the next pool takes them from there before it maps more. So the process maps at
//! most the largest number of frames its pools had at one time, and a test binary that starts
//! hundreds of instances does not grow by each one's pool.
//!
//! Deviations: the pages are not locked in memory, and "large" is the kernel's transparent
//! huge pages, a request it may not grant (where it has none, the pool is committed in 4 KB
//! pages). A spare buffer keeps the page size of the pool that mapped it.
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
/// rest from a new mapping (reserved, not yet resident, zero), advised for huge pages when
/// `large_pages` (TF 834).
pub fn take(count: usize, large_pages: bool) -> Vec<Buffer> {
    let mut buffers: Vec<Buffer> = {
        let mut spare = SPARE_BUFFERS.lock();
        let keep = spare.len().saturating_sub(count);
        spare.split_off(keep).into_iter().map(|buffer| (buffer, false)).collect()
    };
    let missing = count - buffers.len();
    if missing > 0 {
        let mapped = map_buffers(missing, large_pages);
        buffers.extend(mapped.into_iter().map(|buffer| (buffer, true)));
    }
    assert_eq!(buffers.len(), count, "pool_memory invariant 1: one buffer per frame asked");
    buffers
}

/// Commits buffers now (trace flag 834): each 4 KB of them is written once, so that the
/// kernel maps their memory (2 MB at a time where it can) before the pool serves a page, and
/// no first use of a frame faults.
pub fn commit(buffers: &mut [Buffer]) {
    for (buffer, _) in buffers.iter_mut() {
        for os_page in buffer.chunks_mut(4096) {
            os_page[0] = 0;
        }
    }
}

/// Returns buffers whose frames are gone (the pool stopped).
pub fn give_back(buffers: impl IntoIterator<Item = &'static mut PageBuf>) {
    SPARE_BUFFERS.lock().extend(buffers);
}

/// Buffers kept for the next pool (for tests and the memory measurement).
pub fn spare_count() -> usize {
    SPARE_BUFFERS.lock().len()
}

/// Maps `count` buffers in one anonymous mapping, advised for huge pages when `large_pages`.
/// The mapping is leaked on purpose: its buffers live as long as the process, moving between
/// pools.
fn map_buffers(count: usize, large_pages: bool) -> Vec<&'static mut PageBuf> {
    let map = match memmap2::MmapMut::map_anon(count * PAGE_SIZE) {
        Ok(map) => map,
        // No address space for a mapping: one heap allocation per buffer, as before.
        Err(_) => return (0..count).map(|_| Box::leak(crate::page::new_page_buf())).collect(),
    };
    if large_pages {
        advise_huge_pages(&map);
    }
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
        let mut buffers = take(300, false);
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
        let again = take(300, true);
        assert_eq!(again.len(), 300);
        give_back(again.into_iter().map(|(buffer, _)| buffer));
    }
}
