//! Event counters behind `sys.dm_os_performance_counters` that no other module already keeps.
//!
//! What it owns: the instance-wide Access Methods counts (page splits, page and extent
//! allocations and deallocations, full scans and index searches) and the SQL Statistics batch
//! count, each bumped where the event happens. The other counters the view shows are read from
//! where they already live: the buffer pool (page reads and writes, read-ahead, lazy writes,
//! checkpoint pages), each database's log (flushes, bytes, growths, shrinks, open
//! transactions) and transaction count, the lock manager (requests, waits and their time,
//! deadlocks).
//!
//! Behaviour reproduced: SQL Server's "/sec" counters are cumulative counts that a reader
//! samples twice and divides by the interval (cntr_type 272696576); so are these, from the
//! instance's start. A count is an event that happened: nothing is estimated.
//!
//! Page Splits counts every split of an index page, including the new last page an ascending
//! key gets at the end of an index: SQL Server counts those end-of-index allocations as splits
//! too, and here both go through the same split path. Full Scans counts unrestricted scans of
//! a heap or a whole index (no key bound); Index Searches counts the seeks that start a bounded
//! range scan and the lookups of one row by its clustered key, as SQL Server's "index searches
//! ... used to start range scans, single index record fetches" do. They are counted by the
//! catalog's row access ([`crate::catalog::Table`]), where each scan or seek starts.
//!
//! No deviation from SQL Server is known for the counts kept here; the view's missing counters
//! are listed in `docs/deviations.md`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Instance-wide counts (SQLServer:Access Methods and SQLServer:SQL Statistics).
#[derive(Default, Debug)]
pub struct InstanceCounters {
    page_splits: AtomicU64,
    pages_allocated: AtomicU64,
    extents_allocated: AtomicU64,
    page_deallocations: AtomicU64,
    extent_deallocations: AtomicU64,
    full_scans: AtomicU64,
    index_searches: AtomicU64,
    batch_requests: AtomicU64,
}

/// A reading of [`InstanceCounters`].
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct InstanceCounts {
    pub page_splits: u64,
    pub pages_allocated: u64,
    pub extents_allocated: u64,
    pub page_deallocations: u64,
    pub extent_deallocations: u64,
    pub full_scans: u64,
    pub index_searches: u64,
    pub batch_requests: u64,
}

impl InstanceCounters {
    pub fn count_page_split(&self) {
        self.page_splits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_pages_allocated(&self, pages: u64) {
        self.pages_allocated.fetch_add(pages, Ordering::Relaxed);
    }

    pub fn count_extent_allocated(&self) {
        self.extents_allocated.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_page_deallocated(&self) {
        self.page_deallocations.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_extent_deallocated(&self) {
        self.extent_deallocations.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_full_scan(&self) {
        self.full_scans.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_index_search(&self) {
        self.index_searches.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count_batch_request(&self) {
        self.batch_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub fn read(&self) -> InstanceCounts {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        InstanceCounts {
            page_splits: get(&self.page_splits),
            pages_allocated: get(&self.pages_allocated),
            extents_allocated: get(&self.extents_allocated),
            page_deallocations: get(&self.page_deallocations),
            extent_deallocations: get(&self.extent_deallocations),
            full_scans: get(&self.full_scans),
            index_searches: get(&self.index_searches),
            batch_requests: get(&self.batch_requests),
        }
    }
}
