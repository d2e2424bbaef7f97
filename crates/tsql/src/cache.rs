//! The batch cache: parsed batches kept by their exact text, as SQL Server's plan cache keeps
//! ad hoc plans by the batch's text, so that a batch sent again (a client's loop of INSERTs, a
//! monitoring query) is not parsed again.
//!
//! What is cached is the front end's output ([`crate::front::Parsed`]): names are resolved when
//! statements run, so no schema change makes an entry stale. Batches with a syntax error are
//! not cached. The cache is bounded: at most [`MAX_ENTRIES`] batches of at most
//! [`MAX_BATCH_CHARS`] characters; the oldest entry goes first (SQL Server ages entries by
//! cost; deviation).

use crate::front::{self, Parsed};
use engine::SqlError;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The most batches kept.
pub const MAX_ENTRIES: usize = 4096;
/// Longer batches are parsed every time.
pub const MAX_BATCH_CHARS: usize = 16 * 1024;

/// A parsed batch, shared by the sessions that run it.
pub type ParsedBatch = Arc<Vec<Parsed>>;

#[derive(Default)]
struct Entries {
    by_text: HashMap<String, ParsedBatch>,
    oldest_first: VecDeque<String>,
}

#[derive(Default)]
pub struct BatchCache {
    entries: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BatchCache {
    /// The parsed batch for `sql`, from the cache or parsed now (and kept).
    pub fn parse(&self, sql: &str) -> Result<ParsedBatch, (SqlError, u64)> {
        if let Some(parsed) = self.entries.lock().by_text.get(sql) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(parsed.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let parsed: ParsedBatch = Arc::new(front::parse_batch(sql)?);
        if sql.chars().count() <= MAX_BATCH_CHARS {
            let mut entries = self.entries.lock();
            if entries.by_text.len() >= MAX_ENTRIES
                && let Some(oldest) = entries.oldest_first.pop_front()
            {
                entries.by_text.remove(&oldest);
            }
            if entries.by_text.insert(sql.to_string(), parsed.clone()).is_none() {
                entries.oldest_first.push_back(sql.to_string());
            }
        }
        Ok(parsed)
    }

    /// (hits, misses) since the server started.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    /// DBCC FREEPROCCACHE: forgets every batch.
    pub fn clear(&self) {
        let mut entries = self.entries.lock();
        entries.by_text.clear();
        entries.oldest_first.clear();
    }

    /// Batches kept now.
    pub fn len(&self) -> usize {
        self.entries.lock().by_text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_parsed_once_and_the_cache_stays_bounded() {
        let cache = BatchCache::default();
        let first = cache.parse("SELECT 1").unwrap();
        let second = cache.parse("SELECT 1").unwrap();
        assert!(Arc::ptr_eq(&first, &second), "the second run reuses the parse");
        assert_eq!(cache.hits_and_misses(), (1, 1));
        assert!(cache.parse("SELECT (").is_err());
        assert_eq!(cache.len(), 1, "syntax errors are not kept");
        for n in 0..MAX_ENTRIES + 10 {
            cache.parse(&format!("SELECT {n}")).unwrap();
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        cache.clear();
        assert!(cache.is_empty(), "DBCC FREEPROCCACHE empties it");
        let again = cache.parse("SELECT 1").unwrap();
        assert!(!Arc::ptr_eq(&first, &again), "parsed anew after the clear");
    }
}
