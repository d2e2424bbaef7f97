//! Sessions: what a connection is to the engine. A session has a session id (spid, from 51 up,
//! as SQL Server numbers user sessions) under which its waits, latches and errorlog lines are
//! recorded. A thread works for a session after [`Session::enter`]; the T-SQL and TDS issues
//! put statements, transactions and session trace flags here.
//!
//! Scheduling. SQL Server runs sessions on SQLOS schedulers, which are cooperative: a worker
//! runs until it waits (a latch, a lock, I/O) or yields at the end of its quantum, and a worker
//! that is signalled goes to the runnable queue (its signal wait) instead of throwing the
//! running worker off the CPU. The engine's sessions are OS threads; on Linux
//! [`run_as_worker`] puts each under SCHED_BATCH, the policy whose woken threads do not preempt
//! the running one, which is the nearest the OS offers to SQLOS's rule. With many sessions
//! per core (`bench insert`'s 16 on 2 cores) a session woken by a latch release then no longer
//! preempts the session that released it, often while that one holds another latch.
//!
//! System tasks follow the scheduler SQL Server runs them on
//! (`database::TaskScheduler`). The CHECKPOINT and GHOST CLEANUP system sessions are
//! tasks on the regular schedulers, cooperative like user workers [R]: their threads run as
//! workers too, so a checkpoint woken by each completed write no longer preempts a session
//! that holds a latch. The LOG WRITER runs on hidden schedulers of its own since SQL Server 2016
//! (Bob Dorr, "SQL 2016 - It Just Runs Faster: Multiple Log Writer Workers") and keeps the
//! normal policy, as does the lazy writer, whose scheduler is not established here.
//! Deviation: SCHED_BATCH still time-slices (SQLOS's quantum is 4 ms; the kernel's slice is
//! its own), and other OSes keep their default policy.
//!
//! SCHED_BATCH is the OS's part. The schedulers themselves are [`crate::scheduler`]'s: a
//! T-SQL batch or a `bench insert` session attaches to one, and at most one worker per
//! scheduler runs at a time.

use crate::instance::{Instance, set_current_spid};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

/// The first user session id.
pub const FIRST_USER_SPID: u16 = 51;

/// Hands out session ids.
#[derive(Debug)]
pub struct SpidAllocator(AtomicU16);

impl Default for SpidAllocator {
    fn default() -> SpidAllocator {
        SpidAllocator(AtomicU16::new(FIRST_USER_SPID))
    }
}

impl SpidAllocator {
    pub fn next(&self) -> u16 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// A session.
pub struct Session {
    pub spid: u16,
    pub instance: Arc<Instance>,
}

impl Session {
    /// Opens a session: a new session id, with no waits of its own yet.
    pub fn open(instance: &Arc<Instance>) -> Session {
        let spid = instance.spids.next();
        instance.waits.clear_session(spid);
        Session { spid, instance: instance.clone() }
    }

    /// Makes the calling thread work for this session (and schedules it as a worker).
    pub fn enter(&self) {
        set_current_spid(self.spid);
        run_as_worker();
    }
}

thread_local! {
    static IS_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Schedules the calling thread as a session worker (SCHED_BATCH on Linux; see the module
/// header), once per thread. A refusal by the OS leaves the thread as it was: scheduling is
/// not part of any result.
pub fn run_as_worker() {
    if IS_WORKER.with(|w| w.replace(true)) {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
            thread_native_id,
        };
        use thread_priority::{ThreadPriority, ThreadPriorityOsValue};
        // Nice 0: a normal thread's own priority (the crate sets the nice value with the
        // policy; a process started under `nice` gets EACCES for that part and keeps its own).
        let _ = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Os(ThreadPriorityOsValue::default()),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, thread_schedule_policy,
    };

    #[test]
    fn a_thread_that_becomes_a_worker_is_scheduled_under_sched_batch() {
        std::thread::spawn(|| {
            let batch = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch);
            assert_ne!(thread_schedule_policy().expect("policy"), batch, "a new thread's own");
            super::run_as_worker();
            assert_eq!(thread_schedule_policy().expect("policy"), batch);
            super::run_as_worker();
            assert_eq!(thread_schedule_policy().expect("policy"), batch, "once is enough");
        })
        .join()
        .expect("the worker thread");
    }
}

/// Nanoseconds the calling thread has been on a CPU (CLOCK_THREAD_CPUTIME_ID: one system
/// call, cheap enough for every request; the same account as [`thread_cpu_ns`]).
pub fn thread_cpu_time_ns() -> u64 {
    let at = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (at.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(at.tv_nsec as u64)
}

/// The calling thread's id, by which [`thread_cpu_ns_of`] reads its CPU time from another.
pub fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Nanoseconds thread `thread_id` of this process has been on a CPU
/// (/proc/self/task/<id>/schedstat; None once the thread is gone, or where there is none).
pub fn thread_cpu_ns_of(thread_id: i32) -> Option<u64> {
    let schedstat =
        std::fs::read_to_string(format!("/proc/self/task/{thread_id}/schedstat")).ok()?;
    schedstat.split_whitespace().next()?.parse().ok()
}

/// Nanoseconds the calling thread has been on a CPU, from the scheduler's own account
/// (/proc/thread-self/schedstat; None where there is none). SET STATISTICS TIME and the
/// benchmarks' per-session CPU read it.
pub fn thread_cpu_ns() -> Option<u64> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    schedstat.split_whitespace().next()?.parse().ok()
}
