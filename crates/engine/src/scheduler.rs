//! Schedulers: SQLOS's cooperative scheduling of session workers, one scheduler per CPU.
//!
//! What it reproduces: SQL Server runs a request's worker on a scheduler, and a scheduler
//! runs one worker at a time. A worker keeps its scheduler until it waits (a latch, a lock,
//! WRITELOG, WAITFOR) or its 4 ms quantum ends at a point where it checks (a yield point);
//! then the next worker in the scheduler's runnable queue runs. So with 16 sessions on two
//! CPUs only two sessions run at once, a latch holder is not preempted by another session,
//! and the time from a wait's end to running again is a queue the engine can measure: the
//! wait's signal_wait_time_ms. A worker that ends its quantum with others runnable waits
//! SOS_SCHEDULER_YIELD (all of it signal time); one that finds the queue empty gives the
//! scheduler up and takes it straight back, and its yield counts with that next-to-no time.
//! SQL Server does the same: a worker whose quantum is used up goes to the bottom of the
//! runnable queue, not to the waiter list, and the wait it registers has no resource time
//! (Paul Randal, "Curious Case of the missing SOS_SCHEDULER_YIELD waits", ITPro Today, and
//! "Knee-Jerk Wait Statistics: SOS_SCHEDULER_YIELD", SQLPerformance.com, 2014).
//!
//! How: a worker attaches ([`attach`]) to the scheduler with the fewest workers and takes
//! it, in FIFO order behind the runnable ones. A wait calls [`suspend`] before it blocks
//! and [`Suspended::resume`] after: the scheduler passes to the head of its runnable queue
//! while the worker waits. A latch release signals a waiting worker through its [`Waker`]:
//! the worker joins its scheduler's runnable queue and its thread is woken only when it can
//! run. Threads that never attach (the log writer, checkpoint, the lazy writer, CHECKDB's
//! parallel readers, an embedding program's own threads) are not scheduled: for them both
//! calls do nothing. [`Schedulers::snapshot`] and [`Schedulers::tasks`] are
//! sys.dm_os_schedulers and sys.dm_os_tasks. In fiber mode ('lightweight pooling',
//! [`crate::fiber`]) a scheduler's workers are fibers of one thread instead: [`waker`],
//! [`suspend`], [`park_timeout`] and [`yield_point`] switch fibers for them.
//!
//! Deviations:
//! - The engine also blocks on short mutexes that SQLOS does not have. A worker blocked on
//!   one keeps its scheduler, and the mutex's holder may be queued for that very scheduler.
//!   So a worker queued for [`STALL_ADMIT`] behind a running worker that has not let the
//!   scheduler go for that long runs anyway, outside the scheduler ("admitted on a stall",
//!   counted per scheduler). SQL Server has no such valve; it has no such mutexes either.
//! - Background threads are outside the schedulers (SQL Server's system tasks have their
//!   own workers on the same schedulers).
//! - A preemptive wait (PREEMPTIVE_OS_WRITEFILEGATHER) keeps the scheduler; SQL Server's
//!   worker leaves it. Other workers queued behind it get in after [`STALL_ADMIT`].
//! - 'affinity mask' ([`crate::affinity`]): with a nonzero mask, the schedulers of the CPUs it
//!   names are online (VISIBLE ONLINE) and bind each worker that attaches to their CPU; the
//!   others are VISIBLE OFFLINE and take no new worker. A worker keeps the scheduler it has
//!   when the mask changes (SQL Server's running batches do too). Should no scheduler be
//!   online (a `-P` count whose schedulers the mask does not name), workers attach as if the
//!   mask were 0.
//! - The count of schedulers is the machine's CPUs, or sqlservr's `-P<n>` startup option
//!   (`--schedulers n` here; undocumented in SQL Server, where it makes n schedulers for
//!   experiments). The lab uses it to give a 2-CPU machine the seed machine's schedulers.
//!
//! Invariants (owned here):
//! 1. A scheduler runs at most one worker that holds it; a worker holds at most one.
//! 2. Queued workers take the scheduler in arrival order.
//! 3. A worker never queues for a scheduler while it holds one.
//! 4. While workers only attach, the online schedulers' counts of attached workers differ by
//!    at most one: each joins one with the fewest, counting those attaching at the same time.

use crate::waits::WaitStats;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A worker's quantum: how long it runs before a yield point lets the next one run.
pub const QUANTUM: Duration = Duration::from_millis(4);

/// How long a queued worker waits behind a worker that has not let the scheduler go before
/// it runs anyway (see the module header's deviations).
pub const STALL_ADMIT: Duration = Duration::from_millis(20);

/// The wait a worker records when its quantum ends.
pub const YIELD_WAIT_TYPE: &str = "SOS_SCHEDULER_YIELD";

struct Queued {
    worker: u64,
    thread: Thread,
}

#[derive(Default)]
struct SchedulerState {
    /// The worker that holds the scheduler (invariant 1).
    running: Option<u64>,
    /// When the scheduler last changed hands (or was taken).
    running_since: Option<Instant>,
    /// Workers waiting to run, in arrival order (invariant 2).
    runnable: VecDeque<Queued>,
    /// Workers running outside the scheduler after a stall (see the module header).
    outside: Vec<u64>,
    /// Workers attached to the scheduler (current_workers_count): each one's session id and
    /// the times it took the scheduler over from another worker (its context switches).
    attached: BTreeMap<u64, (u16, u64)>,
    /// Fiber-mode workers on the scheduler ([`crate::fiber`]), which keep their own state.
    fibers: BTreeMap<u64, Arc<dyn FiberTask>>,
}

/// What sys.dm_os_tasks and sys.dm_os_schedulers show of a fiber-mode worker: the fiber keeps
/// its state itself, since its scheduler's thread, not this module, switches it.
pub(crate) trait FiberTask: Send + Sync {
    fn session_id(&self) -> u16;
    /// RUNNING, RUNNABLE or SUSPENDED, as [`TaskRow::task_state`].
    fn task_state(&self) -> &'static str;
    /// The times it took its scheduler over from another fiber.
    fn context_switches(&self) -> u64;
}

impl SchedulerState {
    /// `worker` takes the scheduler over from the queue: one context switch of its own.
    fn count_switch(&mut self, worker: u64) {
        if let Some((_, switches)) = self.attached.get_mut(&worker) {
            *switches += 1;
        }
    }
}

#[derive(Default)]
struct Scheduler {
    state: Mutex<SchedulerState>,
    yield_count: AtomicU64,
    context_switches: AtomicU64,
    stall_admissions: AtomicU64,
}

/// One task (a worker's request) as sys.dm_os_tasks shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub session_id: u16,
    pub scheduler_id: u32,
    /// RUNNING (on the scheduler, or outside it after a stall), RUNNABLE (queued for it) or
    /// SUSPENDED (waiting for a resource).
    pub task_state: &'static str,
    pub context_switches_count: u64,
}

/// One row of sys.dm_os_schedulers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerRow {
    pub scheduler_id: u32,
    /// The CPU the scheduler belongs to (its workers' CPU when it is bound).
    pub cpu_id: u32,
    /// VISIBLE ONLINE, or VISIBLE OFFLINE when 'affinity mask' leaves its CPU out.
    pub status: &'static str,
    pub is_online: bool,
    pub is_idle: bool,
    /// Workers attached (a session's request has one).
    pub current_workers_count: u32,
    /// Workers running or runnable (not waiting on a resource).
    pub active_workers_count: u32,
    pub runnable_tasks_count: u32,
    /// Times the running worker gave the scheduler up (a wait, a quantum's end).
    pub yield_count: u64,
    /// Times another worker took the scheduler.
    pub context_switches_count: u64,
    /// Workers that ran outside the scheduler after a stall (a deviation; see above).
    pub stall_admissions: u64,
}

/// The instance's schedulers.
pub struct Schedulers {
    schedulers: Vec<Scheduler>,
    /// The CPUs the process may use: scheduler i belongs to the (i modulo their count)th.
    cpus: &'static [usize],
    /// 'affinity mask' in use: which schedulers are online and bound ([`Schedulers::is_online`]).
    affinity_mask: AtomicI32,
    waits: Arc<WaitStats>,
    next_worker: AtomicU64,
    /// Held while a worker chooses its scheduler and joins it ([`attach`]), so that workers
    /// attaching at the same moment count each other (invariant 4).
    placing: Mutex<()>,
    /// Test seam: a pause in µs between choosing a scheduler and joining it, which widens the
    /// window invariant 4's lock closes.
    #[cfg(test)]
    place_pause_us: AtomicU64,
    /// [`STALL_ADMIT`], or another limit for tests.
    stall_admit: Duration,
}

/// What the calling thread is, as a worker.
struct WorkerState {
    schedulers: Arc<Schedulers>,
    scheduler: usize,
    worker: u64,
    /// True while the worker holds its scheduler; false while it waits or was admitted on
    /// a stall.
    holding: bool,
    quantum_started: Instant,
}

thread_local! {
    static WORKER: RefCell<Option<WorkerState>> = const { RefCell::new(None) };
    /// The thread was bound to a scheduler's CPU when it last attached.
    static BOUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Schedulers {
    /// `count` schedulers (at least one); waits go to `waits`.
    pub fn new(count: usize, waits: Arc<WaitStats>) -> Arc<Schedulers> {
        Schedulers::with_stall_admit(count, waits, STALL_ADMIT)
    }

    /// [`Schedulers::new`] with another stall limit (tests whose workers hold a scheduler
    /// on purpose for longer than [`STALL_ADMIT`]).
    pub fn with_stall_admit(
        count: usize,
        waits: Arc<WaitStats>,
        stall_admit: Duration,
    ) -> Arc<Schedulers> {
        let schedulers = (0..count.max(1)).map(|_| Scheduler::default()).collect();
        Arc::new(Schedulers {
            schedulers,
            cpus: crate::affinity::process_cpus(),
            affinity_mask: AtomicI32::new(0),
            waits,
            next_worker: AtomicU64::new(1),
            placing: Mutex::new(()),
            #[cfg(test)]
            place_pause_us: AtomicU64::new(0),
            stall_admit,
        })
    }

    /// Puts 'affinity mask' in use: 0 brings every scheduler online, unbound; otherwise the
    /// schedulers of the mask's CPUs are online and bind their workers, the others go
    /// offline. Workers attached already keep their scheduler.
    pub fn set_affinity_mask(&self, mask: i32) {
        self.affinity_mask.store(mask, Ordering::Relaxed);
    }

    /// Whether scheduler `id` is online under `mask` (0: every scheduler is).
    fn is_online(&self, id: usize, mask: i32) -> bool {
        mask == 0 || crate::affinity::mask_names_cpu(mask, self.cpu_of(id))
    }

    /// Whether scheduler `id` binds its workers to its CPU: online under a nonzero mask.
    fn is_bound(&self, id: usize) -> bool {
        let mask = self.affinity_mask.load(Ordering::Relaxed);
        mask != 0 && self.is_online(id, mask)
    }

    /// The CPU scheduler `id` belongs to.
    fn cpu_of(&self, id: usize) -> usize {
        self.cpus[id % self.cpus.len()]
    }

    /// The count of CPUs the process may use: the default number of schedulers.
    pub fn cpu_count() -> usize {
        crate::affinity::process_cpus().len()
    }

    /// Counts a fiber's turn on scheduler `id` ([`crate::fiber`]): a switch out that is not its
    /// end gave the scheduler up (yield_count), and a turn after another fiber's took it over
    /// (context_switches_count).
    pub(crate) fn count_fiber_turn(&self, id: usize, took_over: bool, gave_up: bool) {
        let scheduler = &self.schedulers[id];
        if took_over {
            scheduler.context_switches.fetch_add(1, Ordering::Relaxed);
        }
        if gave_up {
            scheduler.yield_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The wait statistics the workers' waits go to.
    pub(crate) fn waits(&self) -> &Arc<WaitStats> {
        &self.waits
    }

    pub fn count(&self) -> usize {
        self.schedulers.len()
    }

    /// sys.dm_os_schedulers' rows.
    pub fn snapshot(&self) -> Vec<SchedulerRow> {
        let mask = self.affinity_mask.load(Ordering::Relaxed);
        let mut rows = Vec::new();
        for (id, scheduler) in self.schedulers.iter().enumerate() {
            let state = scheduler.state.lock();
            let mut running = u32::from(state.running.is_some());
            let mut runnable = state.runnable.len() as u32;
            for fiber in state.fibers.values() {
                match fiber.task_state() {
                    "RUNNING" => running += 1,
                    "RUNNABLE" => runnable += 1,
                    _ => {}
                }
            }
            let is_online = self.is_online(id, mask);
            rows.push(SchedulerRow {
                scheduler_id: id as u32,
                cpu_id: self.cpu_of(id) as u32,
                status: if is_online { "VISIBLE ONLINE" } else { "VISIBLE OFFLINE" },
                is_online,
                is_idle: running == 0 && runnable == 0,
                current_workers_count: (state.attached.len() + state.fibers.len()) as u32,
                active_workers_count: running + runnable,
                runnable_tasks_count: runnable,
                yield_count: scheduler.yield_count.load(Ordering::Relaxed),
                context_switches_count: scheduler.context_switches.load(Ordering::Relaxed),
                stall_admissions: scheduler.stall_admissions.load(Ordering::Relaxed),
            });
        }
        rows
    }

    /// sys.dm_os_tasks' rows: every attached worker's task, by scheduler.
    pub fn tasks(&self) -> Vec<TaskRow> {
        let mut rows = Vec::new();
        for (id, scheduler) in self.schedulers.iter().enumerate() {
            let state = scheduler.state.lock();
            for (worker, (spid, switches)) in &state.attached {
                let task_state = if state.running == Some(*worker) || state.outside.contains(worker)
                {
                    "RUNNING"
                } else if state.runnable.iter().any(|queued| queued.worker == *worker) {
                    "RUNNABLE"
                } else {
                    "SUSPENDED"
                };
                rows.push(TaskRow {
                    session_id: *spid,
                    scheduler_id: id as u32,
                    task_state,
                    context_switches_count: *switches,
                });
            }
            for fiber in state.fibers.values() {
                rows.push(TaskRow {
                    session_id: fiber.session_id(),
                    scheduler_id: id as u32,
                    task_state: fiber.task_state(),
                    context_switches_count: fiber.context_switches(),
                });
            }
        }
        rows
    }

    /// A new worker id, unique among the instance's workers (threads and fibers).
    pub(crate) fn new_worker_id(&self) -> u64 {
        self.next_worker.fetch_add(1, Ordering::Relaxed)
    }

    /// Fiber `worker` joins scheduler `id`'s workers until [`Schedulers::detach_fiber`].
    pub(crate) fn attach_fiber(&self, id: usize, worker: u64, fiber: Arc<dyn FiberTask>) {
        self.schedulers[id].state.lock().fibers.insert(worker, fiber);
    }

    /// A fiber that has returned leaves its scheduler's workers.
    pub(crate) fn detach_fiber(&self, id: usize, worker: u64) {
        self.schedulers[id].state.lock().fibers.remove(&worker);
    }

    /// Where fiber mode runs each online scheduler's fibers: (scheduler id, the CPU its thread is
    /// bound to, if it binds).
    pub fn fiber_placements(&self) -> Vec<(usize, Option<usize>)> {
        let mask = self.affinity_mask.load(Ordering::Relaxed);
        let online: Vec<usize> =
            (0..self.schedulers.len()).filter(|id| self.is_online(*id, mask)).collect();
        let ids = if online.is_empty() { (0..self.schedulers.len()).collect() } else { online };
        ids.into_iter().map(|id| (id, self.is_bound(id).then(|| self.cpu_of(id)))).collect()
    }

    /// Attaches `worker` (session `spid`) to the online scheduler with the fewest attached
    /// workers and returns its id. Choosing and joining are one step under `placing`: chosen
    /// apart, workers attaching together all saw the same counts and crowded onto the
    /// lowest-id scheduler (two sessions of `bench insert` shared one CPU of two).
    fn place(&self, worker: u64, spid: u16) -> usize {
        let _placing = self.placing.lock();
        let id = self.least_loaded();
        #[cfg(test)]
        std::thread::sleep(Duration::from_micros(self.place_pause_us.load(Ordering::Relaxed)));
        self.schedulers[id].state.lock().attached.insert(worker, (spid, 0));
        id
    }

    /// The online scheduler with the fewest attached workers (the lowest id on a tie); any
    /// scheduler if none is online.
    fn least_loaded(&self) -> usize {
        let mask = self.affinity_mask.load(Ordering::Relaxed);
        let any_online = (0..self.schedulers.len()).any(|id| self.is_online(id, mask));
        let mut best = 0;
        let mut best_workers = u32::MAX;
        for (id, scheduler) in self.schedulers.iter().enumerate() {
            if any_online && !self.is_online(id, mask) {
                continue;
            }
            let workers = scheduler.state.lock().attached.len() as u32;
            if workers < best_workers {
                (best, best_workers) = (id, workers);
            }
        }
        best
    }

    /// Takes scheduler `id` for `worker`, queueing behind the runnable ones unless a waker
    /// queued it already or handed it the scheduler. Returns the time queued and whether the
    /// worker holds the scheduler (false: admitted on a stall).
    fn take(&self, id: usize, worker: u64) -> (Duration, bool) {
        let scheduler = &self.schedulers[id];
        let queued_at = Instant::now();
        let mut state = scheduler.state.lock();
        if !state.outside.is_empty() {
            state.outside.retain(|outside| *outside != worker);
        }
        if state.running == Some(worker) {
            return (Duration::ZERO, true);
        }
        let queued = state.runnable.iter().any(|queued| queued.worker == worker);
        if !queued && state.running.is_none() && state.runnable.is_empty() {
            state.running = Some(worker);
            state.running_since = Some(queued_at);
            return (Duration::ZERO, true);
        }
        if !queued {
            state.runnable.push_back(Queued { worker, thread: std::thread::current() });
        }
        loop {
            if state.running == Some(worker) {
                return (queued_at.elapsed(), true);
            }
            let held_for = state.running_since.map_or(Duration::ZERO, |since| since.elapsed());
            if queued_at.elapsed() >= self.stall_admit && held_for >= self.stall_admit {
                state.runnable.retain(|queued| queued.worker != worker);
                state.outside.push(worker);
                scheduler.stall_admissions.fetch_add(1, Ordering::Relaxed);
                return (queued_at.elapsed(), false);
            }
            // A handoff between the unlock and the park is kept by the thread's park token.
            parking_lot::MutexGuard::unlocked(&mut state, || {
                std::thread::park_timeout(self.stall_admit)
            });
        }
    }

    /// Gives scheduler `id` up: the head of its runnable queue takes it.
    fn give_up(&self, id: usize, worker: u64) {
        let scheduler = &self.schedulers[id];
        let mut state = scheduler.state.lock();
        assert_eq!(state.running, Some(worker), "invariant 1: only the holder gives it up");
        scheduler.yield_count.fetch_add(1, Ordering::Relaxed);
        let next = state.runnable.pop_front();
        state.running = next.as_ref().map(|queued| queued.worker);
        state.running_since = Some(Instant::now());
        if let Some(queued) = &next {
            state.count_switch(queued.worker);
        }
        drop(state);
        if let Some(queued) = next {
            scheduler.context_switches.fetch_add(1, Ordering::Relaxed);
            queued.thread.unpark();
        }
    }

    /// A waiting worker was signalled: it takes its scheduler at once if the scheduler is
    /// free, or joins the runnable queue without being woken until its turn (as SQLOS moves a
    /// signalled worker to the runnable list: no thread wakes only to queue).
    fn make_runnable(&self, id: usize, worker: u64, thread: &Thread) {
        let mut state = self.schedulers[id].state.lock();
        if state.running == Some(worker) || state.runnable.iter().any(|q| q.worker == worker) {
            return;
        }
        if state.running.is_none() && state.runnable.is_empty() {
            state.running = Some(worker);
            state.running_since = Some(Instant::now());
            state.count_switch(worker);
            drop(state);
            self.schedulers[id].context_switches.fetch_add(1, Ordering::Relaxed);
            thread.unpark();
            return;
        }
        state.runnable.push_back(Queued { worker, thread: thread.clone() });
    }
}

/// How to wake a waiting thread: a worker is made runnable on its scheduler (woken when it
/// can run), a fiber joins its scheduler's runnable queue; any other thread is unparked.
#[derive(Clone)]
pub struct Waker {
    worker: Option<(Arc<Schedulers>, usize, u64)>,
    fiber: Option<Arc<crate::fiber::FiberHandle>>,
    thread: Thread,
}

/// The calling thread's (or fiber's) [`Waker`], taken before it waits.
pub fn waker() -> Waker {
    let worker = WORKER.with(|w| {
        w.borrow().as_ref().map(|state| (state.schedulers.clone(), state.scheduler, state.worker))
    });
    Waker { worker, fiber: crate::fiber::current(), thread: std::thread::current() }
}

impl Waker {
    /// Signals the thread: its wait is over.
    pub fn wake(&self) {
        if let Some(fiber) = &self.fiber {
            fiber.wake();
            return;
        }
        match &self.worker {
            Some((schedulers, id, worker)) => schedulers.make_runnable(*id, *worker, &self.thread),
            None => self.thread.unpark(),
        }
    }
}

/// Blocks the caller until its [`Waker`] wakes it, or for at most `timeout` (a thread; a fiber
/// parks until woken). Either may return early: callers look again at what they wait for.
pub fn park_timeout(timeout: Duration) {
    if crate::fiber::on_fiber() {
        crate::fiber::park();
    } else {
        std::thread::park_timeout(timeout);
    }
}

/// The calling thread is a worker until this drops: it holds a scheduler while it runs.
pub struct WorkerGuard {
    attached: bool,
}

/// Makes the calling thread a worker on the least-loaded scheduler and takes it (waiting in
/// its runnable queue). A thread that is a worker already, or a fiber, gets a guard that does
/// nothing.
pub fn attach(schedulers: &Arc<Schedulers>) -> WorkerGuard {
    // A fiber runs on its scheduler's thread already ([`crate::fiber`]).
    if crate::fiber::on_fiber() || WORKER.with(|w| w.borrow().is_some()) {
        return WorkerGuard { attached: false };
    }
    let worker = schedulers.new_worker_id();
    let id = schedulers.place(worker, crate::instance::current_spid());
    bind_to_scheduler(schedulers, id);
    let (_, holding) = schedulers.take(id, worker);
    let state = WorkerState {
        schedulers: schedulers.clone(),
        scheduler: id,
        worker,
        holding,
        quantum_started: Instant::now(),
    };
    WORKER.with(|w| *w.borrow_mut() = Some(state));
    WorkerGuard { attached: true }
}

/// The scheduler the caller is a worker of: a thread's since it attached, a fiber's own; None
/// for a thread that is no worker.
pub fn current_scheduler_id() -> Option<usize> {
    crate::fiber::current_scheduler_id()
        .or_else(|| WORKER.with(|w| w.borrow().as_ref().map(|state| state.scheduler)))
}

/// Binds the calling thread to scheduler `id`'s CPU if the scheduler is bound, or gives a
/// thread bound at an earlier attach every CPU back.
fn bind_to_scheduler(schedulers: &Schedulers, id: usize) {
    if schedulers.is_bound(id) {
        crate::affinity::bind_current_thread(&[schedulers.cpu_of(id)]);
        BOUND.set(true);
    } else if BOUND.replace(false) {
        crate::affinity::bind_current_thread(&[]);
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        if !self.attached {
            return;
        }
        let Some(state) = WORKER.with(|w| w.borrow_mut().take()) else { return };
        if state.holding {
            state.schedulers.give_up(state.scheduler, state.worker);
        }
        let mut scheduler = state.schedulers.schedulers[state.scheduler].state.lock();
        scheduler.attached.remove(&state.worker);
        scheduler.outside.retain(|outside| *outside != state.worker);
        drop(scheduler);
        // The thread goes back to its program unbound, as it came.
        if BOUND.replace(false) {
            crate::affinity::bind_current_thread(&[]);
        }
    }
}

/// A worker's scheduler, given up for a wait; [`Suspended::resume`] takes it back.
pub struct Suspended {
    resumed: bool,
}

/// Gives up the calling worker's scheduler before it blocks (a thread that is not a worker,
/// or one admitted on a stall, has nothing to give up).
pub fn suspend() -> Suspended {
    crate::fiber::reset_signal_time();
    WORKER.with(|w| {
        let mut worker = w.borrow_mut();
        let Some(state) = worker.as_mut() else { return };
        if state.holding {
            state.holding = false;
            state.schedulers.give_up(state.scheduler, state.worker);
        }
    });
    Suspended { resumed: false }
}

impl Suspended {
    /// Takes the worker's scheduler back after its wait; returns the time queued for it (the
    /// wait's signal time). Zero for a thread that is not a worker.
    pub fn resume(mut self) -> Duration {
        self.resumed = true;
        retake()
    }
}

impl Drop for Suspended {
    fn drop(&mut self) {
        if !self.resumed {
            retake();
        }
    }
}

/// Takes the calling worker's scheduler again (invariant 3: only when it holds none).
fn retake() -> Duration {
    if crate::fiber::on_fiber() {
        return crate::fiber::take_signal_time();
    }
    let Some((schedulers, id, worker)) = WORKER.with(|w| {
        w.borrow()
            .as_ref()
            .filter(|state| !state.holding)
            .map(|state| (state.schedulers.clone(), state.scheduler, state.worker))
    }) else {
        return Duration::ZERO;
    };
    let (queued, holding) = schedulers.take(id, worker);
    WORKER.with(|w| {
        if let Some(state) = w.borrow_mut().as_mut() {
            state.holding = holding;
            state.quantum_started = Instant::now();
        }
    });
    queued
}

/// A yield point: if the calling worker's quantum has ended, it lets the next runnable worker
/// run (SOS_SCHEDULER_YIELD) and queues behind it. Call it where the worker holds no page
/// latch it could keep others waiting on, between rows.
pub fn yield_point() {
    if crate::fiber::on_fiber() {
        crate::fiber::yield_point();
        return;
    }
    let due = WORKER.with(|w| {
        let worker = w.borrow();
        let state = worker.as_ref()?;
        let due = !state.holding || state.quantum_started.elapsed() >= QUANTUM;
        due.then(|| (state.schedulers.clone(), state.holding))
    });
    let Some((schedulers, holding)) = due else { return };
    // The worker gives its scheduler up and queues for it again: behind the runnable workers,
    // or straight back when none waits (a yield of next to no time).
    let queued = suspend().resume();
    if holding {
        schedulers.waits.record(YIELD_WAIT_TYPE, queued, queued);
    }
}

/// Whether the calling thread is a worker holding its scheduler (for tests).
pub fn holds_scheduler() -> bool {
    WORKER.with(|w| w.borrow().as_ref().is_some_and(|state| state.holding))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Schedulers whose stall limit no test reaches by accident (a slow machine included).
    fn schedulers(count: usize) -> (Arc<Schedulers>, Arc<WaitStats>) {
        let waits = Arc::new(WaitStats::default());
        let stall_admit = Duration::from_secs(30);
        (Schedulers::with_stall_admit(count, waits.clone(), stall_admit), waits)
    }

    /// Spins for `duration` of wall time, calling yield points as a row loop would.
    fn work(duration: Duration, running: &AtomicUsize, most: &AtomicUsize) {
        let started = Instant::now();
        while started.elapsed() < duration {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::hint::spin_loop();
            running.fetch_sub(1, Ordering::SeqCst);
            yield_point();
        }
    }

    /// Invariant 4: workers that attach at the same moment spread over the schedulers. They
    /// used to choose before any of them had joined, so all saw the same counts and took
    /// scheduler 0 (two `bench insert` sessions shared one CPU of two). The pause between
    /// choosing and joining makes that window wide.
    #[test]
    fn workers_attaching_at_once_spread_over_the_schedulers() {
        let (schedulers, _) = schedulers(2);
        schedulers.place_pause_us.store(2_000, Ordering::Relaxed);
        let barrier = Arc::new(std::sync::Barrier::new(6));
        let go = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (schedulers, barrier, go) = (schedulers.clone(), barrier.clone(), go.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let _worker = attach(&schedulers);
                    while !go.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                        yield_point();
                    }
                })
            })
            .collect();
        let started = Instant::now();
        let counts = loop {
            let counts: Vec<u32> =
                schedulers.snapshot().iter().map(|row| row.current_workers_count).collect();
            if counts.iter().sum::<u32>() == 6 {
                break counts;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "not all attached: {counts:?}");
            std::thread::sleep(Duration::from_millis(1));
        };
        go.store(true, Ordering::SeqCst);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(counts, vec![3, 3], "invariant 4: attached workers per scheduler");
    }

    #[test]
    fn two_schedulers_run_at_most_two_of_six_workers_at_once_and_each_yields() {
        let (schedulers, waits) = schedulers(2);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (schedulers, running, most) =
                    (schedulers.clone(), running.clone(), most.clone());
                std::thread::spawn(move || {
                    let _worker = attach(&schedulers);
                    assert!(holds_scheduler());
                    work(Duration::from_millis(40), &running, &most);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2, "invariant 1: at most one worker per scheduler");
        let rows = schedulers.snapshot();
        assert_eq!(rows.iter().map(|r| r.stall_admissions).sum::<u64>(), 0);
        assert!(rows.iter().all(|r| r.current_workers_count == 0 && r.is_idle));
        let switches: u64 = rows.iter().map(|r| r.context_switches_count).sum();
        assert!(switches >= 6, "queued workers took the schedulers over: {switches}");
        let yields = waits.get(YIELD_WAIT_TYPE).expect("quanta ended");
        assert!(yields.waiting_tasks_count >= 6, "{yields:?}");
        assert_eq!(yields.wait_time_ms, yields.signal_wait_time_ms, "a yield is all signal time");
    }

    /// A worker alone on its scheduler still yields when its quantum ends, and the yield is
    /// counted, all of it signal time (next to none: nobody else was runnable), as SQL Server
    /// counts SOS_SCHEDULER_YIELD for a thread that goes straight back to the processor.
    #[test]
    fn a_lone_worker_counts_each_quantum_end_as_a_yield() {
        let (schedulers, waits) = schedulers(1);
        let _worker = attach(&schedulers);
        let started = Instant::now();
        let yields = || waits.get(YIELD_WAIT_TYPE).map_or(0, |w| w.waiting_tasks_count);
        while yields() < 3 {
            assert!(started.elapsed() < Duration::from_secs(60), "no quantum ended");
            std::hint::spin_loop();
            yield_point();
        }
        assert!(holds_scheduler(), "it took its scheduler straight back");
        let row = waits.get(YIELD_WAIT_TYPE).expect("counted");
        assert_eq!(row.wait_time_ms, row.signal_wait_time_ms, "a yield is all signal time");
        assert_eq!(schedulers.snapshot()[0].runnable_tasks_count, 0);
    }

    #[test]
    fn a_suspended_worker_lets_the_next_run_and_resumes_after_it() {
        let (schedulers, _) = schedulers(1);
        let order = Arc::new(Mutex::new(Vec::new()));
        let _first = attach(&schedulers);
        let second = {
            let (schedulers, order) = (schedulers.clone(), order.clone());
            std::thread::spawn(move || {
                let _worker = attach(&schedulers);
                order.lock().push("second runs");
                std::thread::sleep(Duration::from_millis(30));
            })
        };
        while schedulers.snapshot()[0].runnable_tasks_count == 0 {
            std::thread::yield_now();
        }
        let suspended = suspend();
        assert!(!holds_scheduler());
        std::thread::sleep(Duration::from_millis(5));
        let queued = suspended.resume();
        order.lock().push("first resumes");
        assert!(holds_scheduler());
        assert!(queued >= Duration::from_millis(20), "waited for the second's run: {queued:?}");
        second.join().unwrap();
        assert_eq!(*order.lock(), ["second runs", "first resumes"]);
        assert_eq!(schedulers.snapshot()[0].stall_admissions, 0);
    }

    #[test]
    fn a_worker_queued_behind_a_stalled_one_is_admitted_after_the_stall_limit() {
        let schedulers = Schedulers::new(1, Arc::new(WaitStats::default()));
        let _stalled = attach(&schedulers);
        let admitted = {
            let schedulers = schedulers.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let _worker = attach(&schedulers);
                assert!(!holds_scheduler(), "admitted outside the scheduler");
                let states: Vec<&str> = schedulers.tasks().iter().map(|t| t.task_state).collect();
                assert_eq!(states, ["RUNNING", "RUNNING"], "both run, one outside");
                started.elapsed()
            })
        };
        // This worker never yields: it blocks on something the schedulers do not see.
        let waited = admitted.join().unwrap();
        assert!(waited >= STALL_ADMIT, "{waited:?}");
        assert_eq!(schedulers.snapshot()[0].stall_admissions, 1);
        assert!(holds_scheduler());
    }

    #[test]
    fn a_signalled_latch_waiter_queues_for_its_busy_scheduler_and_counts_that_as_signal_time() {
        use crate::latch::{Latch, LatchMode};
        let (schedulers, _) = schedulers(1);
        let latch = Arc::new(Latch::default());
        crate::instance::set_current_spid(1);
        let main_worker = attach(&schedulers);
        latch.acquire(LatchMode::Ex, 1, |_| {}).unwrap();
        let waiter = {
            let (schedulers, latch) = (schedulers.clone(), latch.clone());
            std::thread::spawn(move || {
                crate::instance::set_current_spid(2);
                let _worker = attach(&schedulers);
                let wait = latch.acquire(LatchMode::Sh, 2, |_| {}).unwrap().expect("it waited");
                assert!(holds_scheduler(), "a granted waiter runs on its scheduler");
                latch.release(LatchMode::Sh, 2);
                wait
            })
        };
        // Let the waiter run until it waits for the latch (giving the scheduler back).
        let suspended = suspend();
        while latch.waiter_count() == 0 {
            std::thread::yield_now();
        }
        let states = |schedulers: &Schedulers| {
            let mut states: Vec<(u16, &str)> =
                schedulers.tasks().into_iter().map(|t| (t.session_id, t.task_state)).collect();
            states.sort();
            states
        };
        assert_eq!(states(&schedulers), [(1, "SUSPENDED"), (2, "SUSPENDED")]);
        suspended.resume();
        // Granted while this worker runs: the waiter is runnable, not running.
        latch.release(LatchMode::Ex, 1);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(schedulers.snapshot()[0].runnable_tasks_count, 1);
        assert_eq!(states(&schedulers), [(1, "RUNNING"), (2, "RUNNABLE")]);
        drop(main_worker);
        let wait = waiter.join().unwrap();
        assert!(wait.signal >= Duration::from_millis(25), "signal time: {:?}", wait.signal);
        assert!(wait.waited >= wait.signal);
        assert_eq!(schedulers.snapshot()[0].stall_admissions, 0);
        assert!(schedulers.tasks().is_empty(), "both workers detached");
    }

    #[test]
    fn threads_that_are_not_workers_are_not_scheduled() {
        assert!(!holds_scheduler());
        assert_eq!(suspend().resume(), Duration::ZERO);
        yield_point();
        assert!(!holds_scheduler());
    }
}
