//! Spinlocks: short locks whose contention sys.dm_os_spinlock_stats counts.
//!
//! A [`SpinMutex`] is a mutex acquired the way SQL Server acquires a spinlock: try once; on a
//! collision spin, and after each batch of spins back off by yielding the CPU. Collisions,
//! spins, backoffs and the time slept backing off are counted as they happen, under the
//! spinlock's name (FGCB_PRP_FILL guards the proportional-fill state; BUF_HASH guards each
//! bucket of the buffer pool's page table, as SQL Server's BUF_HASH guards its buffer hash
//! buckets: the spinlocks of one name share their counters, one row in the DMV).

use crate::waits::{SpinlockCounters, SpinlockStats};
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;
use std::time::Instant;

/// Spins between two backoffs.
pub const SPINS_PER_BACKOFF: u64 = 128;

/// A mutex with spinlock statistics.
pub struct SpinMutex<T> {
    inner: Mutex<T>,
    counters: Arc<SpinlockCounters>,
}

impl<T> SpinMutex<T> {
    pub fn new(value: T, name: &'static str, stats: &SpinlockStats) -> SpinMutex<T> {
        SpinMutex { inner: Mutex::new(value), counters: stats.register(name) }
    }

    /// Acquires: try, then spin, backing off after each batch of spins.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        if let Some(guard) = self.inner.try_lock() {
            self.counters.record_acquire();
            return guard;
        }
        self.counters.record_collision();
        let mut spins = 0u64;
        loop {
            std::hint::spin_loop();
            spins += 1;
            if let Some(guard) = self.inner.try_lock() {
                self.counters.record_contended_acquire(spins);
                return guard;
            }
            if spins == SPINS_PER_BACKOFF {
                let started = Instant::now();
                std::thread::yield_now();
                self.counters.record_backoff(spins, started.elapsed());
                spins = 0;
            }
        }
    }

    /// Acquires if free, at once; None if another holds it (no collision is counted: the
    /// caller does not spin).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let guard = self.inner.try_lock()?;
        self.counters.record_acquire();
        Some(guard)
    }

    /// Acquires without counting (for tests that need to hold the lock from outside).
    pub fn lock_uncounted(&self) -> MutexGuard<'_, T> {
        self.inner.lock()
    }
}
