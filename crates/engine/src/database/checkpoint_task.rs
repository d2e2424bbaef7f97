//! The background checkpoint task (reference §5.6): SQL Server's automatic checkpoints are run
//! by a system task, not by the session whose commit made one due. Once
//! [`Database::start_checkpoint_task`] has started it, [`Database::maybe_checkpoint`] hands a
//! due checkpoint to the task and the committing session goes on; without it (embedded use
//! that never starts the task) the session runs the checkpoint itself, as before.
//!
//! The task holds only a weak reference to the database while it waits, so dropping the last
//! reference still closes the database; [`Database::stop_checkpoint_task`] stops it and waits
//! for a checkpoint under way.

use super::*;
use crate::system_tasks::{SystemTasks, TaskIdentity};
use parking_lot::Condvar;
use std::sync::Weak;
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::Duration;

/// The session id the checkpoint task runs as (a system session, below 51).
pub const CHECKPOINT_SPID: u16 = 19;

/// Which kind of SQLOS scheduler SQL Server runs a system task on, and so how its thread is
/// scheduled here ([`crate::session`]'s module header has the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskScheduler {
    /// A regular scheduler, shared with user workers: the task is cooperative like them (the
    /// CHECKPOINT and GHOST CLEANUP system sessions). Its thread runs as a worker
    /// ([`crate::session::run_as_worker`]), so its wake-ups do not preempt a running session.
    Regular,
    /// A hidden scheduler of its own (the LOG WRITER since SQL Server 2016): the thread keeps
    /// the OS's normal policy and competes with the workers as SQL Server's does.
    Hidden,
}

/// A background system task's state, shared by the database and the task's thread (the
/// checkpoint task, the ghost-cleanup task of `ghosts.rs` and the log writer).
#[derive(Default)]
pub(crate) struct BackgroundTask {
    stop: AtomicBool,
    wanted: Mutex<bool>,
    wake: Condvar,
    /// The task's thread while it runs (so that a request will be served).
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl BackgroundTask {
    /// Asks the task to do its work now (the checkpoint task: a checkpoint); false if the task
    /// does not run (the caller then does the work itself).
    pub(crate) fn request(&self) -> bool {
        if self.thread.lock().is_none() {
            return false;
        }
        *self.wanted.lock() = true;
        self.wake.notify_one();
        true
    }

    /// Waits for a request or a stop, at most `timeout` if one is given; true if there was a
    /// request (it is taken).
    pub(crate) fn take_request(&self, timeout: Option<Duration>) -> bool {
        let mut wanted = self.wanted.lock();
        if !*wanted && !self.stopped() {
            // The task's wait for work (its queue wait type, crate::system_tasks).
            crate::system_tasks::wait_for_work(|| match timeout {
                Some(timeout) => {
                    self.wake.wait_for(&mut wanted, timeout);
                }
                None => self.wake.wait(&mut wanted),
            });
        }
        std::mem::replace(&mut *wanted, false)
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Runs `body` on a thread named `name`, scheduled as `scheduler` says and listed as the
    /// system task `identity` of the instance's `tasks`, unless the task runs already.
    pub(crate) fn start(
        &self,
        name: &str,
        scheduler: TaskScheduler,
        (tasks, identity): (Arc<SystemTasks>, TaskIdentity),
        body: impl FnOnce() + Send + 'static,
    ) {
        let mut thread = self.thread.lock();
        if thread.is_some() {
            return;
        }
        self.stop.store(false, Ordering::Release);
        let listed = crate::system_tasks::register(&tasks, identity);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if scheduler == TaskScheduler::Regular {
                    crate::session::run_as_worker();
                }
                listed.run(body)
            })
            .expect("a background task's thread starts");
        *thread = Some(handle);
    }

    /// The body of a task that works on request, on its own thread as session `spid`: each
    /// request runs `work` on the target while the target lives. Returns when the task is
    /// stopped, the target is gone, or `work` returns false.
    pub(crate) fn serve_requests<T>(
        &self,
        spid: u16,
        target: &Weak<T>,
        mut work: impl FnMut(&T) -> bool,
    ) {
        self.serve(spid, || target.upgrade().is_some_and(|target| work(&target)));
    }

    /// [`BackgroundTask::serve_requests`] for work that holds its target itself (the log
    /// writer holds its log only while it looks or writes, not between its looks): each
    /// request runs `work`, until the task is stopped or `work` returns false.
    pub(crate) fn serve(&self, spid: u16, mut work: impl FnMut() -> bool) {
        crate::instance::set_current_spid(spid);
        loop {
            let requested = self.take_request(None);
            if self.stopped() {
                return;
            }
            if !requested {
                continue;
            }
            if !work() {
                return;
            }
        }
    }

    /// Stops the task and waits for its thread (unless called on it).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        {
            let _wanted = self.wanted.lock();
            self.wake.notify_one();
        }
        let handle = self.thread.lock().take();
        if let Some(handle) = handle
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
    }
}

impl Database {
    /// Starts the background checkpoint task: from now on automatic checkpoints run on it.
    pub fn start_checkpoint_task(self: &Arc<Self>) {
        let weak: Weak<Database> = Arc::downgrade(self);
        let shared = Arc::clone(&self.checkpoint_task);
        // Its work is its writes: under 'affinity I/O mask' it runs on the I/O CPUs (a
        // deviation, crate::affinity).
        let io_cpus = self.instance.io_affinity_cpus.clone();
        let identity = TaskIdentity {
            session_id: CHECKPOINT_SPID,
            command: "CHECKPOINT",
            database_id: self.database_id,
            queue_wait: Some(crate::system_tasks::CHECKPOINT_QUEUE),
        };
        let listed = (self.instance.system_tasks.clone(), identity);
        self.checkpoint_task.start(
            "extentdb-checkpoint",
            TaskScheduler::Regular,
            listed,
            move || {
                crate::affinity::bind_io_thread(&io_cpus);
                checkpoint_loop(&shared, &weak)
            },
        );
    }

    /// Stops the checkpoint task and waits for a checkpoint it has under way; automatic
    /// checkpoints run on the committing session again.
    pub fn stop_checkpoint_task(&self) {
        self.checkpoint_task.stop();
    }

    /// Starts the log writer ([`crate::log::LogManager::start_writer`]): a long
    /// transaction's log is then written while it runs, not by its session when the log cache
    /// fills.
    pub fn start_log_writer(&self) {
        self.log.start_writer();
    }

    /// Stops the checkpoint, ghost-cleanup and log-writer tasks and waits for their work under
    /// way, so that they hold no reference to the database any more (before DROP DATABASE or
    /// close).
    pub fn stop_background_tasks(&self) {
        self.checkpoint_task.stop();
        self.ghost_task.stop();
        self.log().stop_writer();
    }

    /// An automatic checkpoint, unless another is under way.
    pub(super) fn automatic_checkpoint(&self) -> SqlResult<bool> {
        let Some(_running) = self.checkpoint_running.try_lock() else { return Ok(false) };
        self.checkpoint()?;
        self.auto_checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }
}

fn checkpoint_loop(task: &BackgroundTask, weak: &Weak<Database>) {
    // The database's drop stops the task (`stop_background_tasks`), so it waits for nothing
    // else than a request or that stop.
    task.serve_requests(CHECKPOINT_SPID, weak, |db| {
        if db.closed.load(Ordering::Acquire) {
            return false;
        }
        if let Err(error) = db.automatic_checkpoint() {
            db.instance.errorlog.write_error(&current_process_info(), &error);
        }
        true
    });
}
