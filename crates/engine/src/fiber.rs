//! Fiber mode ('lightweight pooling'): a scheduler's workers as fibers on one thread.
//!
//! What it reproduces: 'lightweight pooling' set to 1 switches SQL Server to fiber mode
//! scheduling: each scheduler's workers are fibers of one thread, and a worker that waits
//! switches to the next runnable one in user mode, without the user/kernel transitions of a
//! thread switch (Microsoft Learn, "lightweight pooling Option"). Everything else is as in
//! thread mode ([`crate::scheduler`]): a worker keeps its scheduler until it waits or its
//! quantum ends, a signalled waiter joins its scheduler's runnable queue in FIFO order, and
//! the time from the signal to running again is the wait's signal time.
//!
//! How: [`run`] starts one thread per online scheduler, bound to its CPU, and runs the jobs
//! given to it as fibers (stackful coroutines of the `generator` crate). A fiber parks
//! ([`park`]) by switching back to its scheduler's loop; a [`FiberHandle::wake`] from any
//! thread puts it at the tail of that scheduler's runnable queue and wakes the scheduler's
//! thread only if it sleeps with nothing to run. State the engine keeps per thread and that
//! belongs to a session (its open mini-transactions and transaction, its session id, its
//! latch-holder token, its trace flags, its STATISTICS IO counts) is swapped in and out with
//! each fiber ([`FiberLocals`]). What the engine caches per thread (frame hints, the
//! ascending-key hint of `btree`, spare log buffers) stays with the thread: it changes no
//! outcome, only how fast one is found. Each fiber is one of its scheduler's workers in
//! sys.dm_os_schedulers and has its task in sys.dm_os_tasks ([`crate::scheduler::FiberTask`]):
//! RUNNING while its thread runs it, RUNNABLE in the queue, SUSPENDED while parked; the
//! scheduler's yield_count and context_switches_count count its turns, and its waits count in
//! sys.dm_os_wait_stats as in thread mode.
//!
//! Deviations:
//! - Only [`run`]'s jobs (`bench insert --lightweight-pooling`) are fibers; the server's
//!   sessions stay threads whatever the option says.
//! - Waits that switch fibers: latches, locks, WRITELOG and quantum ends. A fiber's log flush
//!   is written by the log writer (a thread-mode session may write the log itself). Anything
//!   else that blocks in the OS (WAITFOR, a file's growth, a page write a fiber makes itself,
//!   a mutex the engine holds briefly) blocks the scheduler's other fibers too, as a
//!   preemptive call does in SQL Server. Page reads and read-aheads are not among them: one
//!   the OS cannot serve from its cache at once goes to [`IoThreads`] while the fiber parks in
//!   its PAGEIOLATCH wait, as SQL Server's asynchronous reads leave the scheduler to its other
//!   workers. The mutexes held across latch waits (an allocation unit's, file growth's) are
//!   taken with [`lock`], which lets the other fibers run meanwhile: blocking on one whose
//!   holder is a parked fiber of the same thread would never end. So is a database's file and
//!   unit map ([`read`], [`write`]): a checkpoint waiting to write it must not stop new readers
//!   of the thread whose parked fiber holds it shared.
//!
//! Invariants (owned here):
//! 1. A fiber runs only on its scheduler's thread, and at most one fiber runs there at once.
//! 2. A parked fiber is in no runnable queue; a woken one is in exactly one, once.

use crate::scheduler::Schedulers;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A fiber's stack: as large as a spawned thread's by default. The `generator` crate maps it
/// (untouched pages cost no memory) and takes its size in words.
const FIBER_STACK_BYTES: usize = 2 << 20;

const RUNNING: u8 = 0;
const PARKED: u8 = 1;
const NOTIFIED: u8 = 2;

/// A scheduler's runnable fibers and its thread.
struct RunQueue {
    state: Mutex<RunQueueState>,
    thread: Thread,
    /// The schedulers, and which of them this queue's thread is (its waits and DMV counts).
    schedulers: Arc<Schedulers>,
    scheduler_id: usize,
    /// The id of the fiber the thread runs now (0: none; worker ids start at 1), for
    /// sys.dm_os_tasks.
    running_id: AtomicU64,
}

#[derive(Default)]
struct RunQueueState {
    runnable: VecDeque<Arc<FiberHandle>>,
    /// The scheduler's thread sleeps: a fiber made runnable must wake it.
    idle: bool,
    /// Parked fibers' deadlines ([`park_timeout`]). An entry outlives the wait it was for; a
    /// late one wakes the fiber for nothing, which waiters allow for.
    timers: Vec<(Instant, Arc<FiberHandle>)>,
}

impl RunQueueState {
    /// Makes the fibers whose deadline has passed runnable; returns the next deadline.
    fn fire_timers(&mut self) -> Option<Instant> {
        let now = Instant::now();
        let mut next = None::<Instant>;
        let mut kept = Vec::with_capacity(self.timers.len());
        for (deadline, handle) in std::mem::take(&mut self.timers) {
            if deadline > now {
                next = Some(next.map_or(deadline, |n| n.min(deadline)));
                kept.push((deadline, handle));
            } else if handle
                .state
                .compare_exchange(PARKED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                handle.woken_at_ns.store(now_ns(), Ordering::Relaxed);
                self.runnable.push_back(handle);
            }
        }
        self.timers = kept;
        next
    }
}

/// What other threads hold of a fiber: enough to wake it.
pub struct FiberHandle {
    id: u64,
    /// RUNNING, PARKED or NOTIFIED (woken while not parked: its next park returns at once).
    state: AtomicU8,
    queue: Arc<RunQueue>,
    /// When it was last made runnable (ns since [`epoch`]), for its signal time.
    woken_at_ns: AtomicU64,
    /// Time spent runnable since the last [`take_signal_time`], in ns.
    signal_ns: AtomicU64,
    /// The fiber's session id as it last set it (sys.dm_os_tasks.session_id).
    spid: AtomicU16,
    /// The times it took its scheduler over from another fiber (context_switches_count).
    switches: AtomicU64,
}

impl crate::scheduler::FiberTask for FiberHandle {
    fn session_id(&self) -> u16 {
        self.spid.load(Ordering::Relaxed)
    }

    fn task_state(&self) -> &'static str {
        if self.queue.running_id.load(Ordering::Relaxed) == self.id {
            "RUNNING"
        } else if self.state.load(Ordering::Acquire) == PARKED {
            "SUSPENDED"
        } else {
            "RUNNABLE"
        }
    }

    fn context_switches(&self) -> u64 {
        self.switches.load(Ordering::Relaxed)
    }
}

/// Notes the calling fiber's new session id for sys.dm_os_tasks (nothing on a thread).
pub(crate) fn note_spid(spid: u16) {
    CURRENT.with(|c| {
        if let Some(running) = c.borrow().as_ref() {
            running.handle.spid.store(spid, Ordering::Relaxed);
        }
    });
}

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl FiberHandle {
    /// Ends the fiber's wait: it joins its scheduler's runnable queue (invariant 2). A fiber
    /// that is not parked yet finds the wake-up at its next [`park`].
    pub fn wake(self: &Arc<Self>) {
        loop {
            match self.state.load(Ordering::Acquire) {
                PARKED => {
                    if self
                        .state
                        .compare_exchange(PARKED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        self.enqueue();
                        return;
                    }
                }
                RUNNING => {
                    if self
                        .state
                        .compare_exchange(RUNNING, NOTIFIED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    fn enqueue(self: &Arc<Self>) {
        self.woken_at_ns.store(now_ns(), Ordering::Relaxed);
        let mut queue = self.queue.state.lock();
        queue.runnable.push_back(self.clone());
        if queue.idle {
            queue.idle = false;
            self.queue.thread.unpark();
        }
    }
}

/// Session state the engine keeps per thread, held by a fiber while it does not run.
#[derive(Default)]
struct FiberLocals {
    mtrs: crate::log::mtr::FiberMtrs,
    transaction: crate::xact::FiberTransaction,
    spid: u16,
    latch_token: u32,
    trace_flags: BTreeSet<u16>,
    io_counts: crate::iostats::FiberIoCounts,
}

impl FiberLocals {
    /// Swaps these with the thread's: called before a fiber runs and after it switches out.
    fn swap(&mut self) {
        crate::log::mtr::swap_fiber_mtrs(&mut self.mtrs);
        crate::xact::swap_fiber_transaction(&mut self.transaction);
        crate::instance::swap_fiber_spid(&mut self.spid);
        crate::latch::swap_fiber_token(&mut self.latch_token);
        crate::traceflags::swap_fiber_flags(&mut self.trace_flags);
        crate::iostats::swap_fiber_counts(&mut self.io_counts);
    }
}

struct Running {
    handle: Arc<FiberHandle>,
    quantum_started: Instant,
}

thread_local! {
    /// The fiber running on this thread, if any.
    static CURRENT: RefCell<Option<Running>> = const { RefCell::new(None) };
}

/// The calling fiber's handle (None on a thread that is not running a fiber).
pub fn current() -> Option<Arc<FiberHandle>> {
    CURRENT.with(|c| c.borrow().as_ref().map(|running| running.handle.clone()))
}

/// The calling fiber's scheduler (None on a thread that is not running a fiber).
pub(crate) fn current_scheduler_id() -> Option<usize> {
    CURRENT.with(|c| c.borrow().as_ref().map(|running| running.handle.queue.scheduler_id))
}

/// Whether the caller is a fiber.
pub fn on_fiber() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// Parks the calling fiber until a [`FiberHandle::wake`] (at once if one came since its last
/// park). Callers look again at what they wait for: a wake-up may be for an earlier wait.
pub fn park() {
    park_until(None);
}

/// [`park`], for at most `timeout`.
pub fn park_timeout(timeout: Duration) {
    park_until(Some(Instant::now() + timeout));
}

fn park_until(deadline: Option<Instant>) {
    let Some(handle) = current() else { return };
    if handle.state.compare_exchange(NOTIFIED, RUNNING, Ordering::AcqRel, Ordering::Acquire).is_ok()
    {
        return;
    }
    if handle.state.compare_exchange(RUNNING, PARKED, Ordering::AcqRel, Ordering::Acquire).is_err()
    {
        // Notified between the two looks.
        handle.state.store(RUNNING, Ordering::Release);
        return;
    }
    if let Some(deadline) = deadline {
        handle.queue.state.lock().timers.push((deadline, handle.clone()));
    }
    drop(handle);
    switch_out();
}

/// Lets the scheduler's other runnable fibers run first; the caller stays runnable.
fn yield_now() {
    let Some(handle) = current() else { return };
    handle.enqueue();
    drop(handle);
    switch_out();
}

/// Locks `mutex` for a caller that may be a fiber. A fiber that finds it held lets its
/// scheduler's other fibers run until it can take it: the holder may be one of them, parked
/// in a latch wait with the mutex held, and blocking the thread would stop it for good. A
/// thread blocks as usual.
pub fn lock<T>(mutex: &Mutex<T>) -> parking_lot::MutexGuard<'_, T> {
    take_yielding(|| mutex.lock(), || mutex.try_lock())
}

/// Takes `lock` shared for a caller that may be a fiber. A fiber that cannot take it at once
/// (a writer holds it, or waits for a reader that may be a parked fiber of the same thread)
/// lets its scheduler's other fibers run until it can.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    take_yielding(|| lock.read(), || lock.try_read())
}

/// Takes `lock` exclusively for a caller that may be a fiber: a fiber lets its scheduler's
/// other fibers run (a reader among them) until it can take it.
pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    take_yielding(|| lock.write(), || lock.try_write())
}

/// [`lock`], [`read`] and [`write`]: a thread blocks in `block`; a fiber tries `try_take` and
/// lets its scheduler's other fibers run between tries.
fn take_yielding<G>(block: impl FnOnce() -> G, mut try_take: impl FnMut() -> Option<G>) -> G {
    if !on_fiber() {
        return block();
    }
    loop {
        if let Some(guard) = try_take() {
            return guard;
        }
        yield_now();
    }
}

/// Switches from the running fiber back to its scheduler's loop.
fn switch_out() {
    // The free function finds the running generator itself; its replacement needs the
    // generator's scope passed down to every wait, through the whole engine.
    #[allow(deprecated)]
    generator::yield_with(());
}

/// Starts the caller's signal-time count (a wait begins).
pub fn reset_signal_time() {
    if let Some(handle) = current() {
        handle.signal_ns.store(0, Ordering::Relaxed);
    }
}

/// The time the calling fiber spent runnable since [`reset_signal_time`].
pub fn take_signal_time() -> Duration {
    current()
        .map_or(Duration::ZERO, |h| Duration::from_nanos(h.signal_ns.swap(0, Ordering::Relaxed)))
}

/// A yield point for a fiber: when its quantum has ended it goes to the tail of the runnable
/// queue (straight back if nothing else is runnable) and waits SOS_SCHEDULER_YIELD, all of it
/// signal time, as in thread mode.
pub fn yield_point() {
    let Some(handle) = CURRENT.with(|c| {
        let c = c.borrow();
        let running = c.as_ref()?;
        let due = running.quantum_started.elapsed() >= crate::scheduler::QUANTUM;
        due.then(|| running.handle.clone())
    }) else {
        return;
    };
    let queue = &handle.queue;
    let queued = if queue.state.lock().runnable.is_empty() {
        // Given up and taken straight back, as a lone thread-mode worker does.
        queue.schedulers.count_fiber_turn(queue.scheduler_id, false, true);
        CURRENT.with(|c| c.borrow_mut().as_mut().map(|r| r.quantum_started = Instant::now()));
        Duration::ZERO
    } else {
        handle.signal_ns.store(0, Ordering::Relaxed);
        handle.enqueue();
        switch_out();
        take_signal_time()
    };
    queue.schedulers.waits().record(crate::scheduler::YIELD_WAIT_TYPE, queued, queued);
}

/// I/O threads for fibers ([`IoThreads::run`]): how many a pool starts, so that the reads of
/// several fibers overlap.
const IO_THREADS: usize = 4;

type IoJob = Box<dyn FnOnce() + Send>;

/// Threads that do I/O for fibers, so that a fiber waits for its I/O parked, not on its
/// scheduler's thread. The buffer pool owns one set: started at the first fiber's read, bound
/// to the 'affinity I/O mask' CPUs as its lazy writer is, and ended with the pool (their queue
/// closes when it is dropped).
pub struct IoThreads {
    cpus: Vec<usize>,
    queue: std::sync::OnceLock<std::sync::mpsc::Sender<IoJob>>,
}

impl IoThreads {
    /// Threads to start on `cpus` (empty: where the OS places them) at the first use.
    pub fn new(cpus: Vec<usize>) -> IoThreads {
        IoThreads { cpus, queue: std::sync::OnceLock::new() }
    }

    /// The threads' queue, starting them at the first call. It returns once every thread has
    /// bound itself to its CPUs, so that no I/O thread is ever seen, or runs a job, unbound
    /// (the first caller waits for the threads' start, once).
    fn queue(&self) -> &std::sync::mpsc::Sender<IoJob> {
        self.queue.get_or_init(|| {
            let (sender, receiver) = std::sync::mpsc::channel::<IoJob>();
            let receiver = Arc::new(Mutex::new(receiver));
            let bound = Arc::new(std::sync::Barrier::new(IO_THREADS + 1));
            for n in 0..IO_THREADS {
                let (receiver, cpus, bound) = (receiver.clone(), self.cpus.clone(), bound.clone());
                std::thread::Builder::new()
                    .name(format!("extentdb-fiberio{n}"))
                    .spawn(move || {
                        crate::affinity::bind_io_thread(&cpus);
                        bound.wait();
                        loop {
                            // The guard goes at the end of the statement: one thread waits in
                            // recv, the others for the lock, and a job runs with neither held.
                            let job = receiver.lock().recv();
                            match job {
                                Ok(job) => job(),
                                Err(_) => return, // the pool is gone
                            }
                        }
                    })
                    .expect("an I/O thread");
            }
            bound.wait();
            sender
        })
    }

    /// Does an I/O (`work`) for a caller that may be a fiber, and returns its outcome. A fiber
    /// hands it to one of these threads and parks until it is done, so that its scheduler's
    /// other fibers run in the meantime: SQL Server issues a page read asynchronously, and the
    /// worker waits on the page's latch (PAGEIOLATCH_*) while its scheduler runs the others. A
    /// thread does the I/O itself. A panic in `work` is raised again in the caller.
    pub fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> T {
        let Some(handle) = current() else { return work() };
        let outcome = Arc::new(Mutex::new(None));
        let job: IoJob = {
            let outcome = outcome.clone();
            Box::new(move || {
                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
                *outcome.lock() = Some(done);
                handle.wake();
            })
        };
        self.queue().send(job).expect("the I/O threads live as long as their pool");
        loop {
            // A wake-up may be for an earlier wait: look again after each.
            if let Some(done) = outcome.lock().take() {
                return done.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            }
            park();
        }
    }
}

/// Runs `jobs` as fibers on the online schedulers (round robin), one thread per scheduler
/// bound to its CPU when 'affinity mask' binds it; returns when every job has returned. A
/// job's panic is raised again here once the others are done.
pub fn run(schedulers: &Arc<Schedulers>, jobs: Vec<Box<dyn FnOnce() + Send>>) {
    let placements = schedulers.fiber_placements();
    let mut per_scheduler: Vec<Vec<Box<dyn FnOnce() + Send>>> =
        placements.iter().map(|_| Vec::new()).collect();
    for (n, job) in jobs.into_iter().enumerate() {
        per_scheduler[n % placements.len()].push(job);
    }
    // A fiber starts as the caller's session, as a job run on the caller's thread would.
    let spid = crate::instance::current_spid();
    let threads: Vec<_> = placements
        .into_iter()
        .zip(per_scheduler)
        .filter(|(_, jobs)| !jobs.is_empty())
        .map(|((id, cpu), jobs)| {
            let schedulers = schedulers.clone();
            std::thread::Builder::new()
                .name(format!("extentdb-sched{id}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        crate::affinity::bind_current_thread(&[cpu]);
                    }
                    crate::session::run_as_worker();
                    scheduler_loop(jobs, spid, schedulers, id);
                })
                .expect("a scheduler thread")
        })
        .collect();
    let mut panic = None;
    for thread in threads {
        if let Err(payload) = thread.join() {
            panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// A fiber and its session state while it does not run.
type Fiber = (generator::Generator<'static, (), ()>, FiberLocals);

/// One scheduler's thread: runs its runnable fibers in FIFO order until all have returned.
fn scheduler_loop(
    jobs: Vec<Box<dyn FnOnce() + Send>>,
    spid: u16,
    schedulers: Arc<Schedulers>,
    scheduler_id: usize,
) {
    let queue = Arc::new(RunQueue {
        state: Mutex::new(RunQueueState::default()),
        thread: std::thread::current(),
        schedulers,
        scheduler_id,
        running_id: AtomicU64::new(0),
    });
    let mut fibers: HashMap<u64, Fiber> = HashMap::new();
    for job in jobs {
        // The fiber's id is its worker id on the scheduler (sys.dm_os_tasks).
        let id = queue.schedulers.new_worker_id();
        let handle = Arc::new(FiberHandle {
            id,
            state: AtomicU8::new(RUNNING),
            queue: queue.clone(),
            woken_at_ns: AtomicU64::new(now_ns()),
            signal_ns: AtomicU64::new(0),
            spid: AtomicU16::new(spid),
            switches: AtomicU64::new(0),
        });
        let fiber = generator::Gn::<()>::new_opt(FIBER_STACK_BYTES / size_of::<usize>(), job);
        queue.schedulers.attach_fiber(scheduler_id, id, handle.clone());
        fibers.insert(id, (fiber, FiberLocals { spid, ..FiberLocals::default() }));
        queue.state.lock().runnable.push_back(handle);
    }
    let mut panic = None;
    let mut last_id = None;
    while !fibers.is_empty() {
        let handle = next_runnable(&queue);
        let woken_at = handle.woken_at_ns.load(Ordering::Relaxed);
        handle.signal_ns.fetch_add(now_ns().saturating_sub(woken_at), Ordering::Relaxed);
        let id = handle.id;
        let (fiber, locals) = fibers.get_mut(&id).expect("invariant 2: a queued fiber is live");
        let took_over = last_id.is_some_and(|last| last != id);
        if took_over {
            handle.switches.fetch_add(1, Ordering::Relaxed);
        }
        queue.running_id.store(id, Ordering::Relaxed);
        CURRENT
            .with(|c| *c.borrow_mut() = Some(Running { handle, quantum_started: Instant::now() }));
        locals.swap();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fiber.resume()));
        locals.swap();
        CURRENT.with(|c| *c.borrow_mut() = None);
        queue.running_id.store(0, Ordering::Relaxed);
        let ended = outcome.is_err() || fiber.is_done();
        queue.schedulers.count_fiber_turn(scheduler_id, took_over, !ended);
        last_id = Some(id);
        if let Err(payload) = outcome {
            panic.get_or_insert(payload);
        }
        if ended {
            queue.schedulers.detach_fiber(scheduler_id, id);
            fibers.remove(&id);
        }
    }
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// The head of the runnable queue, sleeping until there is one.
fn next_runnable(queue: &RunQueue) -> Arc<FiberHandle> {
    let mut state = queue.state.lock();
    loop {
        let next_deadline = if state.timers.is_empty() { None } else { state.fire_timers() };
        if let Some(handle) = state.runnable.pop_front() {
            return handle;
        }
        state.idle = true;
        // An unpark between the unlock and the park is kept by the thread's token.
        parking_lot::MutexGuard::unlocked(&mut state, || match next_deadline {
            Some(deadline) => {
                std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()))
            }
            None => std::thread::park(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latch::{Latch, LatchMode};
    use crate::waits::WaitStats;
    use std::sync::atomic::{AtomicBool, AtomicUsize};

    fn schedulers(count: usize) -> Arc<Schedulers> {
        Schedulers::new(count, Arc::new(WaitStats::default()))
    }

    fn job(f: impl FnOnce() + Send + 'static) -> Box<dyn FnOnce() + Send> {
        Box::new(f)
    }

    /// Runs `jobs` on another thread; panics if they have not returned within a minute.
    fn run_within_a_minute(schedulers: &Arc<Schedulers>, jobs: Vec<Box<dyn FnOnce() + Send>>) {
        let schedulers = schedulers.clone();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let runner = std::thread::spawn(move || {
            run(&schedulers, jobs);
            let _ = done_tx.send(());
        });
        if done_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            assert!(runner.is_finished(), "the fibers did not finish within a minute");
        }
        if let Err(panic) = runner.join() {
            std::panic::resume_unwind(panic);
        }
    }

    /// A fiber starts as the session of the thread that ran [`run`].
    #[test]
    fn a_fiber_starts_as_the_callers_session() {
        let schedulers = schedulers(1);
        crate::instance::set_current_spid(77);
        let seen = Arc::new(Mutex::new(0));
        let job_seen = seen.clone();
        let job_schedulers = schedulers.clone();
        run(
            &schedulers,
            vec![job(move || {
                *job_seen.lock() = crate::instance::current_spid();
                // A fiber is its scheduler's worker already: attaching does nothing.
                let _worker = crate::scheduler::attach(&job_schedulers);
                assert!(!crate::scheduler::holds_scheduler());
                assert_eq!(job_schedulers.snapshot()[0].current_workers_count, 1);
            })],
        );
        assert_eq!(*seen.lock(), 77);
    }

    /// A fiber alone on its scheduler still yields at each quantum's end, and
    /// sys.dm_os_schedulers counts each yield, as it does for a lone thread-mode worker.
    #[test]
    fn a_lone_fiber_counts_each_quantum_end_as_a_yield() {
        let schedulers = schedulers(1);
        let job_schedulers = schedulers.clone();
        run_within_a_minute(
            &schedulers,
            vec![job(move || {
                let waits = job_schedulers.waits().clone();
                let yields = || waits.get(crate::scheduler::YIELD_WAIT_TYPE);
                let started = Instant::now();
                while yields().map_or(0, |w| w.waiting_tasks_count) < 3 {
                    assert!(started.elapsed() < Duration::from_secs(30), "no quantum ended");
                    std::hint::spin_loop();
                    crate::scheduler::yield_point();
                }
            })],
        );
        assert!(schedulers.snapshot()[0].yield_count >= 3, "{:?}", schedulers.snapshot());
    }

    /// sys.dm_os_tasks shows each fiber with its session, RUNNING (the one its scheduler runs),
    /// RUNNABLE (queued behind it) or SUSPENDED (parked in a wait), and sys.dm_os_schedulers
    /// counts them as its workers; a fiber that has returned leaves both.
    #[test]
    fn fibers_show_in_the_task_and_scheduler_views_with_their_state() {
        let schedulers = schedulers(1);
        let latch = Arc::new(Latch::default());
        let (holding, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let seen = Arc::new(Mutex::new(None));
        // Lets the scheduler's other fibers run until `flag` is set (the caller stays runnable).
        fn yield_until(flag: &AtomicBool) {
            let started = Instant::now();
            while !flag.load(Ordering::SeqCst) {
                assert!(started.elapsed() < Duration::from_secs(30), "the other fibers stalled");
                yield_now();
            }
        }
        let holder = {
            let (latch, holding, done) = (latch.clone(), holding.clone(), done.clone());
            job(move || {
                crate::instance::set_current_spid(71);
                latch.acquire(LatchMode::Ex, 71, |_| {}).unwrap();
                holding.store(true, Ordering::SeqCst);
                yield_until(&done);
                latch.release(LatchMode::Ex, 71);
            })
        };
        let waiter = {
            let (latch, holding) = (latch.clone(), holding.clone());
            job(move || {
                crate::instance::set_current_spid(72);
                yield_until(&holding);
                assert!(latch.acquire(LatchMode::Sh, 72, |_| {}).unwrap().is_some(), "it waited");
                latch.release(LatchMode::Sh, 72);
            })
        };
        let observer = {
            let (latch, done, seen, schedulers) =
                (latch.clone(), done.clone(), seen.clone(), schedulers.clone());
            job(move || {
                crate::instance::set_current_spid(73);
                let started = Instant::now();
                while latch.waiter_count() == 0 {
                    assert!(started.elapsed() < Duration::from_secs(30), "no fiber waited");
                    yield_now();
                }
                let mut tasks: Vec<(u16, &str)> =
                    schedulers.tasks().iter().map(|t| (t.session_id, t.task_state)).collect();
                tasks.sort();
                *seen.lock() = Some((tasks, schedulers.snapshot()[0].clone()));
                done.store(true, Ordering::SeqCst);
            })
        };
        run_within_a_minute(&schedulers, vec![holder, waiter, observer]);
        let (tasks, row) = seen.lock().take().expect("the observer looked");
        assert_eq!(tasks, vec![(71, "RUNNABLE"), (72, "SUSPENDED"), (73, "RUNNING")]);
        assert_eq!(row.current_workers_count, 3);
        assert_eq!((row.active_workers_count, row.runnable_tasks_count), (2, 1));
        assert!(!row.is_idle);
        assert!(schedulers.tasks().is_empty(), "returned fibers leave sys.dm_os_tasks");
        assert_eq!(schedulers.snapshot()[0].current_workers_count, 0);
    }

    #[test]
    fn every_job_runs_and_each_scheduler_runs_one_fiber_at_a_time() {
        let schedulers = schedulers(2);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let jobs = (0..6)
            .map(|_| {
                let (running, most, finished) = (running.clone(), most.clone(), finished.clone());
                job(move || {
                    assert!(on_fiber());
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_millis(30) {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::hint::spin_loop();
                        running.fetch_sub(1, Ordering::SeqCst);
                        crate::scheduler::yield_point();
                    }
                    finished.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        run_within_a_minute(&schedulers, jobs);
        assert_eq!(finished.load(Ordering::SeqCst), 6);
        assert!(most.load(Ordering::SeqCst) <= 2, "invariant 1: one fiber per scheduler at once");
        let yields = schedulers.waits().get(crate::scheduler::YIELD_WAIT_TYPE).expect("yields");
        assert!(yields.waiting_tasks_count >= 6, "quanta ended: {yields:?}");
        // sys.dm_os_schedulers counts the fibers' turns: fibers gave their scheduler up at
        // their quantum's end and took it over from one another.
        let rows = schedulers.snapshot();
        assert!(rows.iter().map(|r| r.yield_count).sum::<u64>() >= 1, "{rows:?}");
        assert!(rows.iter().map(|r| r.context_switches_count).sum::<u64>() >= 1, "{rows:?}");
        assert!(!on_fiber(), "the test thread is no fiber");
    }

    /// Two fibers of one scheduler: the first holds latch A and waits for latch B (held by
    /// the test); the second then waits for A. Only switching fibers lets both finish.
    #[test]
    fn a_fiber_waits_for_a_latch_held_by_a_parked_fiber_of_its_own_scheduler() {
        let schedulers = schedulers(1);
        let (a, b) = (Arc::new(Latch::default()), Arc::new(Latch::default()));
        b.acquire(LatchMode::Ex, 1, |_| {}).unwrap();
        let second_waited = Arc::new(AtomicBool::new(false));
        let first = {
            let (a, b) = (a.clone(), b.clone());
            job(move || {
                a.acquire(LatchMode::Ex, 51, |_| {}).unwrap();
                assert!(b.acquire(LatchMode::Sh, 51, |_| {}).unwrap().is_some(), "waited for B");
                b.release(LatchMode::Sh, 51);
                a.release(LatchMode::Ex, 51);
            })
        };
        let second = {
            let (a, second_waited) = (a.clone(), second_waited.clone());
            job(move || {
                let wait = a.acquire(LatchMode::Sh, 52, |_| {}).unwrap();
                second_waited.store(wait.is_some(), Ordering::SeqCst);
                a.release(LatchMode::Sh, 52);
            })
        };
        let releaser = {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                while a.waiter_count() == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                b.release(LatchMode::Ex, 1);
            })
        };
        run_within_a_minute(&schedulers, vec![first, second]);
        releaser.join().unwrap();
        assert!(second_waited.load(Ordering::SeqCst), "the second fiber waited for A");
    }

    /// The first fiber holds a mutex while it waits for a latch; the second asks for the
    /// mutex. [`lock`] lets the first run again once its latch comes.
    #[test]
    fn a_fiber_asking_for_a_mutex_held_by_a_parked_fiber_lets_it_run() {
        let schedulers = schedulers(1);
        let mutex = Arc::new(Mutex::new(0));
        let latch = Arc::new(Latch::default());
        latch.acquire(LatchMode::Ex, 1, |_| {}).unwrap();
        let first = {
            let (mutex, latch) = (mutex.clone(), latch.clone());
            job(move || {
                let mut held = lock(&mutex);
                latch.acquire(LatchMode::Sh, 51, |_| {}).unwrap();
                *held += 1;
                latch.release(LatchMode::Sh, 51);
            })
        };
        let second = {
            let mutex = mutex.clone();
            job(move || *lock(&mutex) += 10)
        };
        let releaser = {
            let latch = latch.clone();
            std::thread::spawn(move || {
                while latch.waiter_count() == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(20));
                latch.release(LatchMode::Ex, 1);
            })
        };
        run_within_a_minute(&schedulers, vec![first, second]);
        releaser.join().unwrap();
        assert_eq!(*mutex.lock(), 11);
    }

    /// The first fiber holds a lock shared while it waits for a latch; a thread then waits to
    /// write it, and the second fiber asks to read it. [`read`] lets the first run again once
    /// its latch comes, and the second reads after the writer (a plain read would queue behind
    /// the writer and stop the thread the first needs).
    #[test]
    fn a_fiber_asking_to_read_while_a_writer_waits_lets_the_parked_reader_run() {
        let schedulers = schedulers(1);
        let lock = Arc::new(RwLock::new(0));
        let latch = Arc::new(Latch::default());
        latch.acquire(LatchMode::Ex, 1, |_| {}).unwrap();
        let writer_waits = Arc::new(AtomicBool::new(false));
        let first = {
            let (lock, latch) = (lock.clone(), latch.clone());
            job(move || {
                let shared = read(&lock);
                latch.acquire(LatchMode::Sh, 51, |_| {}).unwrap();
                assert_eq!(*shared, 0);
                latch.release(LatchMode::Sh, 51);
            })
        };
        let second = {
            let (lock, writer_waits) = (lock.clone(), writer_waits.clone());
            job(move || {
                while !writer_waits.load(Ordering::SeqCst) {
                    park_timeout(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(20)); // the writer queues meanwhile
                assert_eq!(*read(&lock), 1, "read after the writer");
            })
        };
        let writer = {
            let (lock, latch, writer_waits) = (lock.clone(), latch.clone(), writer_waits.clone());
            std::thread::spawn(move || {
                while latch.waiter_count() == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                writer_waits.store(true, Ordering::SeqCst);
                *lock.write() += 1;
            })
        };
        let releaser = {
            let latch = latch.clone();
            let lock = lock.clone();
            std::thread::spawn(move || {
                // The first fiber's latch comes while the second asks to read.
                std::thread::sleep(Duration::from_millis(100));
                latch.release(LatchMode::Ex, 1);
                drop(lock);
            })
        };
        run_within_a_minute(&schedulers, vec![first, second]);
        writer.join().unwrap();
        releaser.join().unwrap();
        assert_eq!(*lock.read(), 1);
    }

    /// Fibers that park for a time wake after it, each with its own session id, trace flags
    /// and latch-holder token, while the others ran on the same thread meanwhile.
    #[test]
    fn a_timed_park_wakes_after_its_time_and_each_fiber_keeps_its_own_state() {
        let schedulers = schedulers(1);
        let tokens = Arc::new(Mutex::new(Vec::new()));
        let jobs = (0..3u16)
            .map(|n| {
                let tokens = tokens.clone();
                job(move || {
                    let spid = 60 + n;
                    crate::instance::set_current_spid(spid);
                    crate::traceflags::set_session_flags([3604 + n]);
                    let latch = Latch::default();
                    latch.acquire(LatchMode::Ex, spid, |_| {}).unwrap();
                    let token = crate::latch::current_token_for_tests();
                    let started = Instant::now();
                    park_timeout(Duration::from_millis(20));
                    assert!(started.elapsed() >= Duration::from_millis(20), "woke early");
                    assert_eq!(crate::instance::current_spid(), spid);
                    assert!(crate::traceflags::session_flag_for_tests(3604 + n));
                    assert_eq!(crate::latch::current_token_for_tests(), token);
                    latch.release(LatchMode::Ex, spid);
                    tokens.lock().push(token);
                })
            })
            .collect();
        run_within_a_minute(&schedulers, jobs);
        let mut tokens = tokens.lock().clone();
        tokens.sort_unstable();
        tokens.dedup();
        assert_eq!(tokens.len(), 3, "three latch holders, one per fiber: {tokens:?}");
    }

    /// IoThreads::run: a thread does the work itself; a fiber has an I/O thread do it, and the
    /// other fibers of its scheduler run until it is done; a panic in the work comes back to
    /// the fiber that asked.
    #[test]
    fn io_threads_do_a_fibers_work_elsewhere_and_a_threads_in_place() {
        let io = Arc::new(IoThreads::new(Vec::new()));
        let me = std::thread::current().id();
        assert_eq!(io.run(move || std::thread::current().id()), me, "a thread's own work");
        let schedulers = schedulers(1);
        let other_ran = Arc::new(AtomicBool::new(false));
        let asking = {
            let (io, other_ran) = (io.clone(), other_ran.clone());
            job(move || {
                let fiber_thread = std::thread::current().id();
                let (done_on, saw_other) = io.run(move || {
                    // Held until the other fiber has run: only possible if this one parked.
                    let started = Instant::now();
                    while !other_ran.load(Ordering::SeqCst) {
                        assert!(started.elapsed() < Duration::from_secs(30), "no other fiber ran");
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    (std::thread::current().id(), true)
                });
                assert_ne!(done_on, fiber_thread, "an I/O thread did the work");
                assert!(saw_other);
                let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    io.run(|| panic!("a failed I/O"));
                }));
                assert!(panicked.is_err(), "the work's panic came back to the fiber");
            })
        };
        let other = {
            let other_ran = other_ran.clone();
            job(move || other_ran.store(true, Ordering::SeqCst))
        };
        run_within_a_minute(&schedulers, vec![asking, other]);
        assert!(other_ran.load(Ordering::SeqCst));
    }
}
