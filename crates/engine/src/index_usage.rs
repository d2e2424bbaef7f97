//! Index usage, as sys.dm_db_index_usage_stats shows it: for each index (heap, clustered or
//! nonclustered) of a database, how many statements sought it, scanned it, looked rows up in
//! it and changed it, and when each last did.
//!
//! What it reproduces: SQL Server's counters count a use once per statement that used the
//! index that way, however many rows or loop iterations the use had (an index nested-loop
//! join's thousand seeks into its inner table are one seek); a row appears when an index is
//! first used; the counters live in memory and are gone when the database closes (a restart,
//! OFFLINE, DROP). The T-SQL layer gathers a statement's uses and records them here when the
//! statement ends ([`IndexUsage::record`]).
//!
//! Deviation: only user statements are counted; SQL Server's system_* columns (statistics
//! updates, internal maintenance) have no source here and stay 0 / NULL.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::time::Instant;

/// How a statement used an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexUse {
    /// A seek: rows read from a key range of the index.
    Seek,
    /// A scan: the whole index (or heap) read.
    Scan,
    /// A lookup: base-table rows fetched by the locators a nonclustered index gave.
    Lookup,
    /// A change: rows inserted, updated or deleted in the index.
    Update,
}

/// One index's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexUsageCounts {
    pub user_seeks: u64,
    pub user_scans: u64,
    pub user_lookups: u64,
    pub user_updates: u64,
    pub last_user_seek: Option<Instant>,
    pub last_user_scan: Option<Instant>,
    pub last_user_lookup: Option<Instant>,
    pub last_user_update: Option<Instant>,
}

impl IndexUsageCounts {
    fn add(&mut self, kind: IndexUse, at: Instant) {
        let (count, last) = match kind {
            IndexUse::Seek => (&mut self.user_seeks, &mut self.last_user_seek),
            IndexUse::Scan => (&mut self.user_scans, &mut self.last_user_scan),
            IndexUse::Lookup => (&mut self.user_lookups, &mut self.last_user_lookup),
            IndexUse::Update => (&mut self.user_updates, &mut self.last_user_update),
        };
        *count += 1;
        *last = Some(at);
    }
}

/// A database's index usage, keyed by (object_id, index_id).
#[derive(Default)]
pub struct IndexUsage {
    counts: Mutex<BTreeMap<(i32, i32), IndexUsageCounts>>,
}

impl IndexUsage {
    /// Counts one statement's use of an index, ended at `at`.
    pub fn record(&self, object_id: i32, index_id: i32, kind: IndexUse, at: Instant) {
        self.counts.lock().entry((object_id, index_id)).or_default().add(kind, at);
    }

    /// Every index used so far, in (object_id, index_id) order.
    pub fn snapshot(&self) -> Vec<((i32, i32), IndexUsageCounts)> {
        self.counts.lock().iter().map(|(key, counts)| (*key, *counts)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_use_counts_once_and_keeps_its_last_time() {
        let usage = IndexUsage::default();
        let (first, later) = (Instant::now(), Instant::now() + std::time::Duration::from_secs(1));
        usage.record(5, 1, IndexUse::Seek, first);
        usage.record(5, 1, IndexUse::Seek, later);
        usage.record(5, 2, IndexUse::Update, first);
        let rows = usage.snapshot();
        assert_eq!(rows.len(), 2);
        let clustered = rows[0].1;
        assert_eq!((clustered.user_seeks, clustered.user_scans), (2, 0));
        assert_eq!(clustered.last_user_seek, Some(later));
        assert_eq!(clustered.last_user_scan, None);
        assert_eq!((rows[1].0, rows[1].1.user_updates), ((5, 2), 1));
    }
}
