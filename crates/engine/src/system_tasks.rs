//! System sessions: the background tasks SQL Server runs as session ids below 51 (LAZY WRITER,
//! LOG WRITER, CHECKPOINT, GHOST CLEANUP), as sys.dm_exec_sessions (is_user_process 0),
//! sys.dm_exec_requests (status background), sp_who and sys.dm_os_waiting_tasks show them.
//!
//! What it owns: the registry of running system tasks ([`SystemTasks`]), and the waits a task
//! makes for its next piece of work. Such a wait is real time the task's thread spent waiting,
//! recorded under SQL Server's wait type for it (sys.dm_os_wait_stats, and the task's row in
//! sys.dm_os_waiting_tasks while it lasts):
//!
//! | task | wait type | SQL Server's description |
//! |---|---|---|
//! | LAZY WRITER | LAZYWRITER_SLEEP | "Occurs when lazy writer tasks are suspended" |
//! | LOG WRITER | LOGMGR_QUEUE | "the log writer task waits for work requests" |
//! | CHECKPOINT | CHECKPOINT_QUEUE | "the checkpoint task is waiting for the next checkpoint request" |
//!
//! The field's top-waits scripts leave these out as benign ([`BENIGN_WAIT_TYPES`]).
//!
//! Deviations: the GHOST CLEANUP task's sleep between runs has no wait type here (SQL Server
//! schedules that task afresh each time; what it waits on between runs is not in our
//! sources), so its row shows no wait. The log writer and the checkpoint and ghost-cleanup
//! tasks are one each per database here (SQL Server has one or a few per instance), so their
//! rows share a session id and differ by database_id.

use crate::waits::{WaitStats, WaitingTasks};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The session id the lazy writer runs as (a system session, below 51).
pub const LAZY_WRITER_SPID: u16 = 18;

pub const LAZYWRITER_SLEEP: &str = "LAZYWRITER_SLEEP";
pub const LOGMGR_QUEUE: &str = "LOGMGR_QUEUE";
pub const CHECKPOINT_QUEUE: &str = "CHECKPOINT_QUEUE";

/// Wait types that show a system task idle rather than anything slow: Paul Randal's top-waits
/// script (examples/top_waits.sql) leaves them out, and so do the benchmarks' top waits.
pub const BENIGN_WAIT_TYPES: [&str; 4] =
    [CHECKPOINT_QUEUE, LAZYWRITER_SLEEP, LOGMGR_QUEUE, "WAITFOR"];

/// Whether a wait type is one of [`BENIGN_WAIT_TYPES`].
pub fn is_benign(wait_type: &str) -> bool {
    BENIGN_WAIT_TYPES.contains(&wait_type)
}

/// Who a system task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskIdentity {
    pub session_id: u16,
    /// sys.dm_exec_requests.command: `LAZY WRITER`, `LOG WRITER`, `CHECKPOINT`, `GHOST CLEANUP`.
    pub command: &'static str,
    /// The database it works for; 0 for an instance-wide task (the lazy writer).
    pub database_id: u16,
    /// The wait type of its waits for work, if it has one.
    pub queue_wait: Option<&'static str>,
}

/// One running system task, as the views show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemTaskRow {
    pub identity: TaskIdentity,
    /// When the task started (its request's start_time).
    pub started: Instant,
    /// The OS thread it runs on (for its CPU time).
    pub thread_id: i32,
    /// The wait it is in now, and since when.
    pub waiting: Option<(&'static str, Instant)>,
}

/// The running system tasks of an instance.
pub struct SystemTasks {
    rows: Mutex<BTreeMap<u64, SystemTaskRow>>,
    next_id: AtomicU64,
    waits: Arc<WaitStats>,
    waiting_tasks: Arc<WaitingTasks>,
}

thread_local! {
    /// The system task this thread runs as, if any ([`RegisteredTask::run`]).
    static CURRENT: RefCell<Option<(Arc<SystemTasks>, u64)>> = const { RefCell::new(None) };
}

impl SystemTasks {
    pub fn new(waits: Arc<WaitStats>, waiting_tasks: Arc<WaitingTasks>) -> SystemTasks {
        SystemTasks {
            rows: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            waits,
            waiting_tasks,
        }
    }

    /// Every running system task, by session id, then database id.
    pub fn snapshot(&self) -> Vec<SystemTaskRow> {
        let mut rows: Vec<SystemTaskRow> = self.rows.lock().values().cloned().collect();
        rows.sort_by_key(|row| (row.identity.session_id, row.identity.database_id));
        rows
    }

    fn set_waiting(&self, id: u64, waiting: Option<(&'static str, Instant)>) {
        if let Some(row) = self.rows.lock().get_mut(&id) {
            row.waiting = waiting;
        }
    }
}

/// A system task listed before its thread starts ([`register`]), so that it shows as soon as
/// whoever started it goes on; its thread then runs as it ([`RegisteredTask::run`]).
pub struct RegisteredTask {
    tasks: Arc<SystemTasks>,
    id: u64,
}

/// Lists a system task that is about to start.
pub fn register(tasks: &Arc<SystemTasks>, identity: TaskIdentity) -> RegisteredTask {
    let id = tasks.next_id.fetch_add(1, Ordering::Relaxed);
    let row = SystemTaskRow { identity, started: Instant::now(), thread_id: 0, waiting: None };
    tasks.rows.lock().insert(id, row);
    RegisteredTask { tasks: Arc::clone(tasks), id }
}

impl RegisteredTask {
    /// Runs `body` on the calling thread as the task: its thread is the task's (for its CPU
    /// time), its waits for work ([`wait_for_work`]) are recorded, and it is unlisted when
    /// `body` returns.
    pub fn run<T>(self, body: impl FnOnce() -> T) -> T {
        let session_id = self.tasks.rows.lock().get_mut(&self.id).map(|row| {
            row.thread_id = crate::session::thread_id();
            row.identity.session_id
        });
        if let Some(session_id) = session_id {
            // The thread's waits (and errorlog lines) are the system session's.
            crate::instance::set_current_spid(session_id);
        }
        CURRENT.with(|current| *current.borrow_mut() = Some((Arc::clone(&self.tasks), self.id)));
        body()
    }
}

impl Drop for RegisteredTask {
    fn drop(&mut self) {
        CURRENT.with(|current| {
            let mut current = current.borrow_mut();
            if current.as_ref().is_some_and(|(_, id)| *id == self.id) {
                *current = None;
            }
        });
        self.tasks.rows.lock().remove(&self.id);
    }
}

/// Runs `wait`, a system task's wait for its next piece of work, as a wait of the task's queue
/// wait type: listed in sys.dm_os_waiting_tasks while it lasts, then recorded with the time it
/// took. On a thread that is no system task, or one without a queue wait, it only runs `wait`.
pub fn wait_for_work<T>(wait: impl FnOnce() -> T) -> T {
    let current = CURRENT.with(|current| current.borrow().clone());
    let Some((tasks, id)) = current else { return wait() };
    let Some(row) = tasks.rows.lock().get(&id).cloned() else { return wait() };
    let Some(wait_type) = row.identity.queue_wait else { return wait() };
    let started = Instant::now();
    tasks.set_waiting(id, Some((wait_type, started)));
    let listed = tasks.waiting_tasks.begin(row.identity.session_id, wait_type, None, String::new());
    let value = wait();
    drop(listed);
    tasks.set_waiting(id, None);
    tasks.waits.record_for(row.identity.session_id, wait_type, started.elapsed(), Duration::ZERO);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_listed_while_it_runs_and_its_waits_for_work_are_recorded() {
        let waits = Arc::new(WaitStats::default());
        let tasks = Arc::new(SystemTasks::new(Arc::clone(&waits), Arc::default()));
        let identity = TaskIdentity {
            session_id: 19,
            command: "CHECKPOINT",
            database_id: 5,
            queue_wait: Some(CHECKPOINT_QUEUE),
        };
        register(&tasks, identity).run(|| {
            let listed = tasks.snapshot();
            assert_eq!(listed.len(), 1);
            assert_eq!(listed[0].identity, identity);
            assert_eq!(listed[0].waiting, None);
            wait_for_work(|| {
                let row = tasks.snapshot()[0].clone();
                assert_eq!(row.waiting.map(|(wait_type, _)| wait_type), Some(CHECKPOINT_QUEUE));
                std::thread::sleep(Duration::from_millis(5));
            });
        });
        assert!(tasks.snapshot().is_empty(), "unlisted when its body returns");
        let row = waits.get(CHECKPOINT_QUEUE).expect("the wait was recorded");
        assert_eq!(row.waiting_tasks_count, 1);
        assert!(waits.total_us(CHECKPOINT_QUEUE) >= 5_000, "the time it really waited");
        // Off a system task's thread, a wait for work records nothing.
        wait_for_work(|| ());
        assert_eq!(waits.get(CHECKPOINT_QUEUE).unwrap().waiting_tasks_count, 1);
    }
}
