//! Page reads per allocation unit, counted on the thread that asked for them, for SET
//! STATISTICS IO ON (SQL Server's "Table 't'. Scan count 1, logical reads ..., physical reads
//! ..., read-ahead reads ...").
//!
//! What it counts, while [`start`] has been called on the thread and until [`take`]:
//! - a logical read: every page the thread fetches from the buffer pool (cached or not);
//! - a physical read: a page the fetch had to read from disk itself;
//! - a read-ahead read: a page the thread's read-ahead brought in (a later fetch of it is a
//!   logical read only, as in SQL Server).
//!
//! Each is filed under the allocation unit the page's header names (m_objId/m_indexId), so
//! allocation pages (PFS, GAM, IAM), which name none, count for no table, as in SQL Server's
//! output. Counting costs one thread-local flag test per fetch while it is off.
//!
//! Apart from that, every thread keeps running totals of its logical reads and of the pages
//! it read from disk (its fetches' reads and its read-ahead's), always on: the T-SQL session
//! adds each request's share to sys.dm_exec_sessions' logical_reads and reads.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// One allocation unit's reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Scans and seeks the caller noted ([`note_scan`]).
    pub scan_count: u64,
    pub logical_reads: u64,
    pub physical_reads: u64,
    pub read_ahead_reads: u64,
}

/// A thread's running totals ([`thread_reads`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadTotals {
    pub logical_reads: u64,
    /// Pages read from disk: by the thread's own fetches and by its read-ahead.
    pub reads: u64,
}

thread_local! {
    static TOTALS: Cell<ReadTotals> = const { Cell::new(ReadTotals { logical_reads: 0, reads: 0 }) };
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNTS: RefCell<BTreeMap<(u16, u64), IoCounts>> = const { RefCell::new(BTreeMap::new()) };
}

/// A fiber's STATISTICS IO counting, kept off the thread while another fiber runs on it.
#[derive(Default)]
pub(crate) struct FiberIoCounts {
    totals: ReadTotals,
    counting: bool,
    counts: BTreeMap<(u16, u64), IoCounts>,
}

/// Swaps the thread's counting with a fiber's (see [`crate::fiber`]).
pub(crate) fn swap_fiber_counts(saved: &mut FiberIoCounts) {
    saved.totals = TOTALS.with(|c| c.replace(saved.totals));
    saved.counting = COUNTING.with(|c| c.replace(saved.counting));
    COUNTS.with(|c| std::mem::swap(&mut *c.borrow_mut(), &mut saved.counts));
}

/// This thread's totals so far.
pub fn thread_reads() -> ReadTotals {
    TOTALS.with(Cell::get)
}

/// Adds a fetch (and a read from disk if `physical`) to the thread's totals.
pub(crate) fn count_fetch(physical: bool) {
    TOTALS.with(|t| {
        let mut totals = t.get();
        totals.logical_reads += 1;
        totals.reads += u64::from(physical);
        t.set(totals);
    });
}

/// Adds `pages` read by the thread's read-ahead to its totals.
pub(crate) fn count_read_ahead(pages: u64) {
    TOTALS.with(|t| {
        let mut totals = t.get();
        totals.reads += pages;
        t.set(totals);
    });
}

/// Starts counting this thread's reads from zero.
pub fn start() {
    COUNTS.with(|c| c.borrow_mut().clear());
    COUNTING.with(|c| c.set(true));
}

/// Stops counting and returns the counts by (database id, allocation unit id).
pub fn take() -> BTreeMap<(u16, u64), IoCounts> {
    COUNTING.with(|c| c.set(false));
    COUNTS.with(|c| std::mem::take(&mut *c.borrow_mut()))
}

pub fn is_counting() -> bool {
    COUNTING.with(Cell::get)
}

fn note(database_id: u16, au_id: u64, add: impl FnOnce(&mut IoCounts)) {
    if au_id == 0 || !is_counting() {
        return;
    }
    COUNTS.with(|c| add(c.borrow_mut().entry((database_id, au_id)).or_default()));
}

/// A scan or seek of the unit began (noted by the query layer, which knows when one does).
pub fn note_scan(database_id: u16, au_id: u64) {
    note(database_id, au_id, |c| c.scan_count += 1);
}

pub(crate) fn note_logical(database_id: u16, au_id: u64) {
    note(database_id, au_id, |c| c.logical_reads += 1);
}

pub(crate) fn note_physical(database_id: u16, au_id: u64) {
    note(database_id, au_id, |c| c.physical_reads += 1);
}

pub(crate) fn note_read_ahead(database_id: u16, au_id: u64) {
    note(database_id, au_id, |c| c.read_ahead_reads += 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_between_start_and_take() {
        note_logical(5, 72057594043170816);
        start();
        note_logical(5, 72057594043170816);
        note_logical(5, 72057594043170816);
        note_physical(5, 72057594043170816);
        note_read_ahead(5, 0); // no allocation unit: not counted
        let counts = take();
        let unit = counts[&(5, 72057594043170816)];
        assert_eq!((unit.logical_reads, unit.physical_reads, unit.read_ahead_reads), (2, 1, 0));
        assert_eq!(counts.len(), 1);
        note_logical(5, 1);
        assert!(take().is_empty(), "nothing is counted after take");
    }

    #[test]
    fn the_thread_totals_count_always() {
        let before = thread_reads();
        count_fetch(false);
        count_fetch(true);
        count_read_ahead(8);
        let after = thread_reads();
        assert_eq!(after.logical_reads - before.logical_reads, 2);
        assert_eq!(after.reads - before.reads, 9);
    }
}
