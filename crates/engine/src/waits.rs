//! Wait and spinlock statistics, counted from real events.
//!
//! [`WaitStats`] has the columns of sys.dm_os_wait_stats. A wait is recorded only by code that
//! really blocked: the caller measures the time it spent (for example writing zeros for
//! PREEMPTIVE_OS_WRITEFILEGATHER) and records it here. Nothing is estimated. Each wait also
//! counts for the session whose thread waited (sys.dm_exec_session_wait_stats, and
//! sys.sysprocesses.lastwaittype), under the same lock (invariant 2).
//!
//! [`SpinlockStats`] has the columns of sys.dm_os_spinlock_stats and is fed by
//! [`crate::filegroup::FillLock`], the FGCB_PRP_FILL lock.
//!
//! Invariant 1: every wait type recorded is one of [`WAIT_TYPES`] (asserted in debug builds),
//! so sys.dm_os_wait_stats lists each type the engine can wait on from the start, with zeros
//! until its first wait, as SQL Server lists every wait type it has.
//!
//! signal_wait_time_ms is the time from a wait's end (its signal) until the worker ran on its
//! scheduler again ([`crate::scheduler`]); 0 for preemptive waits, as SQL Server reports them
//! (the thread runs outside the scheduler), and for threads that are not workers.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One row of sys.dm_os_wait_stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitRow {
    pub wait_type: String,
    pub waiting_tasks_count: u64,
    pub wait_time_ms: u64,
    pub max_wait_time_ms: u64,
    pub signal_wait_time_ms: u64,
}

#[derive(Clone, Copy, Default)]
struct WaitCell {
    count: u64,
    total_us: u64,
    max_us: u64,
    signal_us: u64,
}

/// Every wait type the engine and its T-SQL layer record, in name order.
pub const WAIT_TYPES: [&str; 25] = [
    "CHECKPOINT_QUEUE",
    "CXPACKET",
    "LAZYWRITER_SLEEP",
    "LCK_M_IS",
    "LCK_M_IX",
    "LCK_M_S",
    "LCK_M_SIX",
    "LCK_M_U",
    "LCK_M_X",
    "LOGBUFFER",
    "LOGMGR_QUEUE",
    "PAGEIOLATCH_DT",
    "PAGEIOLATCH_EX",
    "PAGEIOLATCH_KP",
    "PAGEIOLATCH_SH",
    "PAGEIOLATCH_UP",
    "PAGELATCH_DT",
    "PAGELATCH_EX",
    "PAGELATCH_KP",
    "PAGELATCH_SH",
    "PAGELATCH_UP",
    "PREEMPTIVE_OS_WRITEFILEGATHER",
    "SOS_SCHEDULER_YIELD",
    "WAITFOR",
    "WRITELOG",
];

impl WaitCell {
    fn add(&mut self, waited_us: u64, signal_us: u64) {
        self.count += 1;
        self.total_us += waited_us;
        self.max_us = self.max_us.max(waited_us);
        self.signal_us += signal_us;
    }

    fn row(&self, wait_type: &str) -> WaitRow {
        WaitRow {
            wait_type: wait_type.to_string(),
            waiting_tasks_count: self.count,
            wait_time_ms: self.total_us / 1000,
            max_wait_time_ms: self.max_us / 1000,
            signal_wait_time_ms: self.signal_us / 1000,
        }
    }
}

/// One session's waits since it opened (sys.dm_exec_session_wait_stats), and the type of the
/// last one (sys.sysprocesses.lastwaittype).
#[derive(Default)]
struct SessionWaits {
    cells: BTreeMap<&'static str, WaitCell>,
    last_wait_type: Option<&'static str>,
}

#[derive(Default)]
struct WaitTables {
    instance: BTreeMap<&'static str, WaitCell>,
    sessions: BTreeMap<u16, SessionWaits>,
}

/// One row of sys.dm_exec_session_wait_stats: a session's waits of one type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionWaitRow {
    pub session_id: u16,
    pub wait: WaitRow,
}

/// Process-wide wait statistics, and each session's share of them.
///
/// Invariant 2: every wait recorded counts once in the instance's row of its type and once in
/// the row of the session it was recorded for, under the same lock; so while no session's
/// rows have been cleared since the instance's were, the sessions' counts of a type sum to
/// the instance's.
#[derive(Default)]
pub struct WaitStats {
    tables: Mutex<WaitTables>,
    /// The instance's event sessions, told of each wait once it is recorded (sqlos.wait_info
    /// and wait_info_external).
    xevents: std::sync::OnceLock<Arc<crate::xevent::XEvents>>,
}

impl WaitStats {
    /// Records one completed wait of `waited` (and `signal` from wake-up to running) for the
    /// session the calling thread runs ([`crate::instance::current_spid`]).
    pub fn record(&self, wait_type: &'static str, waited: Duration, signal: Duration) {
        self.record_for(crate::instance::current_spid(), wait_type, waited, signal);
    }

    /// Records one completed wait of session `spid`.
    pub fn record_for(
        &self,
        spid: u16,
        wait_type: &'static str,
        waited: Duration,
        signal: Duration,
    ) {
        debug_assert!(WAIT_TYPES.contains(&wait_type), "invariant 1: {wait_type} is listed");
        let waited_us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        let signal_us = u64::try_from(signal.as_micros()).unwrap_or(u64::MAX);
        let mut tables = self.tables.lock();
        tables.instance.entry(wait_type).or_default().add(waited_us, signal_us);
        let session = tables.sessions.entry(spid).or_default();
        session.cells.entry(wait_type).or_default().add(waited_us, signal_us);
        session.last_wait_type = Some(wait_type);
        drop(tables);
        if let Some(xevents) = self.xevents.get() {
            xevents.wait_completed(spid, wait_type, waited, signal);
        }
    }

    /// Fires the wait events of `xevents`' running sessions from now on (once, at startup).
    pub fn attach_xevents(&self, xevents: Arc<crate::xevent::XEvents>) {
        let _ = self.xevents.set(xevents);
    }

    /// The rows, by wait type.
    pub fn snapshot(&self) -> Vec<WaitRow> {
        let tables = self.tables.lock();
        tables.instance.iter().map(|(name, cell)| cell.row(name)).collect()
    }

    /// Each session's rows (sys.dm_exec_session_wait_stats), by session id, then wait type:
    /// the types it has waited on since it opened ([`WaitStats::clear_session`]).
    pub fn session_snapshot(&self) -> Vec<SessionWaitRow> {
        let tables = self.tables.lock();
        let mut rows = Vec::new();
        for (session_id, session) in &tables.sessions {
            for (name, cell) in &session.cells {
                rows.push(SessionWaitRow { session_id: *session_id, wait: cell.row(name) });
            }
        }
        rows
    }

    /// The type of session `spid`'s last completed wait, if it has waited since it opened.
    pub fn last_wait_type(&self, spid: u16) -> Option<&'static str> {
        self.tables.lock().sessions.get(&spid).and_then(|session| session.last_wait_type)
    }

    /// Forgets session `spid`'s waits: a session opening (or reset) starts with none, as
    /// sys.dm_exec_session_wait_stats shows it. The instance's rows keep them.
    pub fn clear_session(&self, spid: u16) {
        self.tables.lock().sessions.remove(&spid);
    }

    /// A row for every one of [`WAIT_TYPES`], zeros where nothing has waited
    /// (sys.dm_os_wait_stats), by wait type.
    pub fn snapshot_all(&self) -> Vec<WaitRow> {
        let waited = self.snapshot();
        let mut rows: Vec<WaitRow> = WAIT_TYPES
            .iter()
            .filter(|name| !waited.iter().any(|row| row.wait_type == **name))
            .map(|name| WaitRow { wait_type: (*name).to_string(), ..WaitRow::default() })
            .collect();
        rows.extend(waited);
        rows.sort_by(|a, b| a.wait_type.cmp(&b.wait_type));
        rows
    }

    /// One wait type's row, if it has been waited on.
    pub fn get(&self, wait_type: &str) -> Option<WaitRow> {
        self.snapshot().into_iter().find(|row| row.wait_type == wait_type)
    }

    /// Total microseconds waited on a type (finer than the ms columns, for tests and benches).
    pub fn total_us(&self, wait_type: &str) -> u64 {
        self.tables.lock().instance.get(wait_type).map_or(0, |cell| cell.total_us)
    }

    /// `DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)`: the instance's rows. The sessions' rows
    /// are kept (see docs/deviations.md).
    pub fn clear(&self) {
        self.tables.lock().instance.clear();
    }
}

/// One row of sys.dm_os_spinlock_stats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpinlockRow {
    pub name: String,
    pub collisions: u64,
    pub spins: u64,
    pub spins_per_collision: f64,
    pub sleep_time: u64,
    pub backoffs: u64,
}

/// Shards of a spinlock's acquisition count: each thread adds to its own cache line, so that
/// counting an uncontended acquisition does not move a line between cores.
const ACQUIRE_SHARDS: usize = 16;

thread_local! {
    static ACQUIRE_SHARD: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % ACQUIRE_SHARDS
    };
}

/// The counters of one spinlock, updated with atomics so that an uncontended acquisition costs
/// one atomic add on the thread's own shard.
#[derive(Default)]
pub struct SpinlockCounters {
    acquires: [CachePadded<AtomicU64>; ACQUIRE_SHARDS],
    collisions: AtomicU64,
    spins: AtomicU64,
    backoffs: AtomicU64,
    sleep_us: AtomicU64,
}

impl SpinlockCounters {
    /// Records an acquisition that found the lock free.
    pub fn record_acquire(&self) {
        self.count_acquire();
    }

    fn count_acquire(&self) {
        ACQUIRE_SHARD.with(|shard| self.acquires[*shard].fetch_add(1, Ordering::Relaxed));
    }

    fn acquires(&self) -> u64 {
        self.acquires.iter().map(|shard| shard.load(Ordering::Relaxed)).sum()
    }

    /// Records that an acquirer found the lock held (counted as it happens).
    pub fn record_collision(&self) {
        self.collisions.fetch_add(1, Ordering::Relaxed);
    }

    /// Records spins and one backoff of a waiting acquirer, as they happen, so that a reader
    /// of sys.dm_os_spinlock_stats sees a spinner that has not got the lock yet.
    pub fn record_backoff(&self, spins: u64, sleep: Duration) {
        self.spins.fetch_add(spins, Ordering::Relaxed);
        self.backoffs.fetch_add(1, Ordering::Relaxed);
        let sleep_us = u64::try_from(sleep.as_micros()).unwrap_or(u64::MAX);
        self.sleep_us.fetch_add(sleep_us, Ordering::Relaxed);
    }

    /// Records the spins since the last backoff of an acquirer that finally got the lock.
    pub fn record_contended_acquire(&self, spins: u64) {
        self.spins.fetch_add(spins, Ordering::Relaxed);
        self.count_acquire();
    }

    fn clear(&self) {
        for shard in &self.acquires {
            shard.store(0, Ordering::Relaxed);
        }
        for counter in [&self.collisions, &self.spins, &self.backoffs, &self.sleep_us] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

/// Process-wide spinlock statistics: one set of counters per spinlock name.
#[derive(Default)]
pub struct SpinlockStats {
    locks: Mutex<BTreeMap<&'static str, Arc<SpinlockCounters>>>,
}

impl SpinlockStats {
    /// The counters for `name`, shared by every lock of that name.
    pub fn register(&self, name: &'static str) -> Arc<SpinlockCounters> {
        self.locks.lock().entry(name).or_default().clone()
    }

    pub fn snapshot(&self) -> Vec<SpinlockRow> {
        let locks = self.locks.lock();
        locks
            .iter()
            .map(|(name, c)| {
                let collisions = c.collisions.load(Ordering::Relaxed);
                let spins = c.spins.load(Ordering::Relaxed);
                SpinlockRow {
                    name: (*name).to_string(),
                    collisions,
                    spins,
                    spins_per_collision: if collisions == 0 {
                        0.0
                    } else {
                        spins as f64 / collisions as f64
                    },
                    sleep_time: c.sleep_us.load(Ordering::Relaxed) / 1000,
                    backoffs: c.backoffs.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// How many times a spinlock was acquired at all (not a DMV column; tests use it to show
    /// that FGCB_PRP_FILL is skipped while every skip target is 1).
    pub fn acquires(&self, name: &str) -> u64 {
        self.locks.lock().get(name).map_or(0, |c| c.acquires())
    }

    pub fn get(&self, name: &str) -> Option<SpinlockRow> {
        self.snapshot().into_iter().find(|row| row.name == name)
    }

    pub fn clear(&self) {
        for counters in self.locks.lock().values() {
            counters.clear();
        }
    }
}

/// One row of sys.dm_os_latch_stats.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatchClassRow {
    pub latch_class: String,
    pub waiting_requests_count: u64,
    pub wait_time_ms: u64,
    pub max_wait_time_ms: u64,
}

/// Latch waits per latch class (all buffer latch waits are class BUFFER, as in SQL Server).
#[derive(Default)]
pub struct LatchStats {
    cells: Mutex<BTreeMap<&'static str, WaitCell>>,
}

impl LatchStats {
    pub fn record(&self, latch_class: &'static str, waited: Duration) {
        let waited_us = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        let mut cells = self.cells.lock();
        let cell = cells.entry(latch_class).or_default();
        cell.count += 1;
        cell.total_us += waited_us;
        cell.max_us = cell.max_us.max(waited_us);
    }

    pub fn snapshot(&self) -> Vec<LatchClassRow> {
        self.cells
            .lock()
            .iter()
            .map(|(name, cell)| LatchClassRow {
                latch_class: (*name).to_string(),
                waiting_requests_count: cell.count,
                wait_time_ms: cell.total_us / 1000,
                max_wait_time_ms: cell.max_us / 1000,
            })
            .collect()
    }

    pub fn clear(&self) {
        self.cells.lock().clear();
    }
}

/// A page a task waits for: sys.dm_exec_requests.page_resource, which sys.fn_PageResCracker
/// takes apart for sys.dm_db_page_info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageResource {
    pub database_id: u16,
    pub file_id: u16,
    pub page_id: u32,
}

impl PageResource {
    /// page_resource's binary(8): the page id (4 bytes), the file id (2) and the database id
    /// (2), each little-endian, the order sys.fn_PageResCracker reads them in.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&self.page_id.to_le_bytes());
        bytes[4..6].copy_from_slice(&self.file_id.to_le_bytes());
        bytes[6..].copy_from_slice(&self.database_id.to_le_bytes());
        bytes
    }

    /// The page a page_resource names; None unless it is 8 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<PageResource> {
        let bytes: &[u8; 8] = bytes.try_into().ok()?;
        Some(PageResource {
            page_id: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            file_id: u16::from_le_bytes([bytes[4], bytes[5]]),
            database_id: u16::from_le_bytes([bytes[6], bytes[7]]),
        })
    }

    /// `db:file:page`, as sys.dm_os_waiting_tasks describes a page latch.
    pub fn description(self) -> String {
        format!("{}:{}:{}", self.database_id, self.file_id, self.page_id)
    }
}

/// One row of sys.dm_os_waiting_tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitingTaskRow {
    pub session_id: u16,
    pub wait_duration_ms: u64,
    pub wait_type: &'static str,
    pub blocking_session_id: Option<u16>,
    pub resource_description: String,
    /// The resource as sys.dm_exec_requests.wait_resource and sys.sysprocesses.waitresource
    /// name it: `KEY: db:hobt (hash)` for a key lock, `db:file:page` for a page latch, empty
    /// for a wait on no resource.
    pub wait_resource: String,
    /// The page waited for, when the wait is a page latch's.
    pub page: Option<PageResource>,
    /// The lock waited for, when the wait is a lock's.
    pub lock: Option<crate::lock::LockResource>,
}

struct WaitingTask {
    session_id: u16,
    wait_type: &'static str,
    started: std::time::Instant,
    blocking_session_id: Option<u16>,
    resource_description: String,
    wait_resource: String,
    page: Option<PageResource>,
    lock: Option<crate::lock::LockResource>,
}

/// The tasks waiting right now. A waiter registers itself when it starts to wait and is
/// removed when the wait ends, so a snapshot shows only real, current waits.
#[derive(Default)]
pub struct WaitingTasks {
    tasks: Mutex<BTreeMap<u64, WaitingTask>>,
    next_id: AtomicU64,
}

/// Removes its task from [`WaitingTasks`] when dropped.
pub struct WaitingTaskGuard<'a> {
    registry: &'a WaitingTasks,
    id: u64,
}

impl Drop for WaitingTaskGuard<'_> {
    fn drop(&mut self) {
        self.registry.tasks.lock().remove(&self.id);
    }
}

impl WaitingTasks {
    /// Registers a task that starts waiting now.
    pub fn begin(
        &self,
        session_id: u16,
        wait_type: &'static str,
        blocking_session_id: Option<u16>,
        resource_description: String,
    ) -> WaitingTaskGuard<'_> {
        let task = self.task(session_id, wait_type, blocking_session_id, resource_description);
        self.register(task)
    }

    /// Registers a task that starts waiting for a lock on `resource` now.
    pub fn begin_lock(
        &self,
        session_id: u16,
        wait_type: &'static str,
        blocking_session_id: Option<u16>,
        resource: crate::lock::LockResource,
    ) -> WaitingTaskGuard<'_> {
        let task = self.task(session_id, wait_type, blocking_session_id, resource.description());
        let wait_resource = resource.wait_resource();
        self.register(WaitingTask { wait_resource, lock: Some(resource), ..task })
    }

    /// Registers a task that starts waiting for a page's latch now.
    pub fn begin_page(
        &self,
        session_id: u16,
        wait_type: &'static str,
        blocking_session_id: Option<u16>,
        page: PageResource,
    ) -> WaitingTaskGuard<'_> {
        // A page latch's wait_resource is the page's db:file:page, as its description is.
        let task = self.task(session_id, wait_type, blocking_session_id, page.description());
        self.register(WaitingTask { wait_resource: page.description(), page: Some(page), ..task })
    }

    /// A task that starts waiting now, on no page, with no wait_resource.
    fn task(
        &self,
        session_id: u16,
        wait_type: &'static str,
        blocking_session_id: Option<u16>,
        resource_description: String,
    ) -> WaitingTask {
        WaitingTask {
            session_id,
            wait_type,
            started: std::time::Instant::now(),
            blocking_session_id,
            resource_description,
            wait_resource: String::new(),
            page: None,
            lock: None,
        }
    }

    fn register(&self, task: WaitingTask) -> WaitingTaskGuard<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.tasks.lock().insert(id, task);
        WaitingTaskGuard { registry: self, id }
    }

    pub fn snapshot(&self) -> Vec<WaitingTaskRow> {
        self.tasks
            .lock()
            .values()
            .map(|task| WaitingTaskRow {
                session_id: task.session_id,
                wait_duration_ms: u64::try_from(task.started.elapsed().as_millis())
                    .unwrap_or(u64::MAX),
                wait_type: task.wait_type,
                blocking_session_id: task.blocking_session_id,
                resource_description: task.resource_description.clone(),
                wait_resource: task.wait_resource.clone(),
                page: task.page,
                lock: task.lock,
            })
            .collect()
    }
}

/// Wait type names used by this crate.
pub mod wait_type {
    pub const PREEMPTIVE_OS_WRITEFILEGATHER: &str = "PREEMPTIVE_OS_WRITEFILEGATHER";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// page_resource 0x5001000001000600 is page 336 of file 1 in database 6 (the bytes
    /// sys.fn_PageResCracker reverses: page id, file id, database id).
    #[test]
    fn a_page_resource_is_page_then_file_then_database_little_endian() {
        let page = PageResource { database_id: 6, file_id: 1, page_id: 336 };
        let bytes = [0x50, 0x01, 0x00, 0x00, 0x01, 0x00, 0x06, 0x00];
        assert_eq!(page.to_bytes(), bytes);
        assert_eq!(PageResource::from_bytes(&bytes), Some(page));
        assert_eq!(PageResource::from_bytes(&bytes[..7]), None);
        assert_eq!(page.description(), "6:1:336");
    }

    #[test]
    fn each_wait_counts_for_the_instance_and_for_its_session() {
        let stats = WaitStats::default();
        stats.record_for(52, "WRITELOG", Duration::from_millis(4), Duration::ZERO);
        stats.record_for(53, "WRITELOG", Duration::from_millis(2), Duration::ZERO);
        stats.record_for(52, "LCK_M_X", Duration::from_millis(30), Duration::from_millis(1));
        let rows = stats.session_snapshot();
        let of = |spid: u16, wait_type: &str| {
            rows.iter().find(|r| r.session_id == spid && r.wait.wait_type == wait_type).cloned()
        };
        assert_eq!(rows.len(), 3);
        assert_eq!(
            of(52, "LCK_M_X").map(|r| (r.wait.wait_time_ms, r.wait.signal_wait_time_ms)),
            Some((30, 1))
        );
        assert_eq!(of(53, "WRITELOG").map(|r| r.wait.waiting_tasks_count), Some(1));
        assert_eq!(of(53, "LCK_M_X"), None);
        // Invariant 2: the sessions' counts of a type sum to the instance's.
        let sessions: u64 = rows
            .iter()
            .filter(|r| r.wait.wait_type == "WRITELOG")
            .map(|r| r.wait.waiting_tasks_count)
            .sum();
        assert_eq!(sessions, stats.get("WRITELOG").unwrap().waiting_tasks_count);
        assert_eq!(stats.last_wait_type(52), Some("LCK_M_X"));
        assert_eq!(stats.last_wait_type(54), None);
        // A session that opens again starts with no waits; the instance keeps them, and a
        // CLEAR of the instance's rows keeps the sessions'.
        stats.clear_session(52);
        assert_eq!(stats.last_wait_type(52), None);
        assert_eq!(stats.session_snapshot().len(), 1);
        assert_eq!(stats.get("LCK_M_X").unwrap().waiting_tasks_count, 1);
        stats.clear();
        assert_eq!(stats.session_snapshot().len(), 1);
        assert_eq!(stats.get("WRITELOG"), None);
    }

    #[test]
    fn every_wait_type_is_listed_with_zeros_until_its_first_wait() {
        let stats = WaitStats::default();
        let rows = stats.snapshot_all();
        assert_eq!(rows.len(), WAIT_TYPES.len());
        assert!(rows.iter().all(|row| row.waiting_tasks_count == 0 && row.wait_time_ms == 0));
        stats.record("WRITELOG", Duration::from_millis(3), Duration::ZERO);
        let rows = stats.snapshot_all();
        assert_eq!(rows.len(), WAIT_TYPES.len(), "a waited type is listed once");
        let writelog = rows.iter().find(|row| row.wait_type == "WRITELOG").unwrap();
        assert_eq!((writelog.waiting_tasks_count, writelog.wait_time_ms), (1, 3));
        let names: Vec<&str> = rows.iter().map(|row| row.wait_type.as_str()).collect();
        assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "by wait type: {names:?}");
        assert_eq!(stats.snapshot().len(), 1, "snapshot keeps only the waited types");
    }

    #[test]
    fn the_wait_types_of_latches_and_locks_are_listed() {
        use crate::latch::LatchMode;
        use crate::lock::LockMode;
        for mode in [LatchMode::Kp, LatchMode::Sh, LatchMode::Up, LatchMode::Ex, LatchMode::Dt] {
            assert!(WAIT_TYPES.contains(&mode.pagelatch_wait()));
            assert!(WAIT_TYPES.contains(&mode.pageiolatch_wait()));
        }
        for mode in
            [LockMode::IS, LockMode::S, LockMode::U, LockMode::IX, LockMode::SIX, LockMode::X]
        {
            assert!(WAIT_TYPES.contains(&mode.wait_type()));
        }
        for name in [crate::log::WRITELOG, crate::log::LOGBUFFER] {
            assert!(WAIT_TYPES.contains(&name));
        }
    }
}
