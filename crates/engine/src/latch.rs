//! Page latches: SQL Server's five buffer-latch modes with its compatibility matrix (reference
//! §6.1), FIFO waiting, and the bookkeeping behind PAGELATCH_* / PAGEIOLATCH_* waits.
//!
//! | held \ requested | KP | SH | UP | EX | DT |
//! |------------------|----|----|----|----|----|
//! | KP               | Y  | Y  | Y  | Y  | N  |
//! | SH               | Y  | Y  | Y  | N  | N  |
//! | UP               | Y  | Y  | N  | N  | N  |
//! | EX               | Y  | N  | N  | N  | N  |
//! | DT               | N  | N  | N  | N  | N  |
//!
//! A latch is a mutex-protected holder count per mode and a FIFO queue of waiters, each parked
//! on its own thread: a release wakes only the waiters it grants. A requester waits when its
//! mode is incompatible with a holder or when anyone is queued before it (no barging, as SQL
//! Server queues latch waiters FIFO). The caller is told how long it waited and how long it
//! took from being made grantable (signalled) to running, so that the wait recorded is time
//! really waited.
//!
//! Invariants:
//! 1. Every pair of simultaneous holders is compatible by the matrix.
//! 2. Waiters are granted in arrival order.
//! 3. A holder count never underflows (releasing a mode not held is a programmer error).
//! 4. A thread never waits for a latch that only it can let go: when its request cannot be
//!    granted at once and the thread itself holds the latch in a mode that blocks the request
//!    (or blocks a waiter queued ahead of it), [`Latch::acquire`] refuses with
//!    [`SelfDeadlock`] instead of parking for ever. Only corruption leads there (an
//!    allocation map that calls a page in use free, so a session allocates the page it holds);
//!    the buffer pool reports it as SQL Server reports a latch it could not get, error 845.

use parking_lot::{Mutex, MutexGuard};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A latch mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LatchMode {
    Kp,
    Sh,
    Up,
    Ex,
    Dt,
}

impl LatchMode {
    pub const ALL: [LatchMode; 5] =
        [LatchMode::Kp, LatchMode::Sh, LatchMode::Up, LatchMode::Ex, LatchMode::Dt];

    fn index(self) -> usize {
        self as usize
    }

    /// The mode's suffix in wait-type names: KP, SH, UP, EX, DT.
    pub fn name(self) -> &'static str {
        ["KP", "SH", "UP", "EX", "DT"][self.index()]
    }

    /// PAGELATCH_<mode>: waiting for a buffer that is not in an I/O request.
    pub fn pagelatch_wait(self) -> &'static str {
        ["PAGELATCH_KP", "PAGELATCH_SH", "PAGELATCH_UP", "PAGELATCH_EX", "PAGELATCH_DT"]
            [self.index()]
    }

    /// PAGEIOLATCH_<mode>: waiting for a buffer whose read or write is in flight.
    pub fn pageiolatch_wait(self) -> &'static str {
        ["PAGEIOLATCH_KP", "PAGEIOLATCH_SH", "PAGEIOLATCH_UP", "PAGEIOLATCH_EX", "PAGEIOLATCH_DT"]
            [self.index()]
    }
}

/// SQL Server's latch compatibility matrix: can `requested` be granted while `held` is held?
pub fn compatible(held: LatchMode, requested: LatchMode) -> bool {
    use LatchMode::*;
    match (held, requested) {
        (Dt, _) | (_, Dt) => false,
        (Kp, _) | (_, Kp) => true,
        (Sh, Sh) | (Sh, Up) | (Up, Sh) => true,
        _ => false,
    }
}

/// A number for the calling thread (a latch holder's identity; session ids are not unique to
/// a thread: every thread outside a session runs as spid 0).
fn thread_token() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    TOKEN.with(|token| {
        if token.get() == 0 {
            token.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        token.get()
    })
}

thread_local! {
    /// The calling thread's (or fiber's: [`swap_fiber_token`]) [`thread_token`]; 0 until its
    /// first latch.
    static TOKEN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The calling thread's (or fiber's) latch-holder token (tests).
#[cfg(test)]
pub(crate) fn current_token_for_tests() -> u32 {
    thread_token()
}

/// Swaps the thread's latch-holder token with a fiber's (0: not given yet), so that fibers
/// sharing a thread hold latches as different holders (invariant 4's self-deadlock check).
pub(crate) fn swap_fiber_token(saved: &mut u32) {
    *saved = TOKEN.with(|token| token.replace(*saved));
}

/// One hold of a latch: by which session, in which mode, on which thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Holder {
    spid: u16,
    mode: LatchMode,
    thread: u32,
}

/// A request refused by invariant 4: the calling thread holds the latch in `held`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfDeadlock {
    pub held: LatchMode,
}

/// A queued request.
struct Waiter {
    ticket: u64,
    mode: LatchMode,
    spid: u16,
    /// The waiting thread's [`thread_token`].
    token: u32,
    /// Woken when granted, and only then: a worker when its scheduler can run it.
    waker: crate::scheduler::Waker,
}

/// The waiters a release granted, to wake after the latch's state is unlocked.
type Granted = smallvec::SmallVec<[crate::scheduler::Waker; 4]>;

#[derive(Default)]
struct LatchState {
    held: [u32; 5],
    /// Session ids of the holders (for blocking_session_id), one entry per hold.
    /// Inline for the usual few holders: no heap line to fetch on each grant.
    holders: smallvec::SmallVec<[Holder; 4]>,
    queue: VecDeque<Waiter>,
    /// Tickets granted by a releaser, with the moment they were granted (signalled).
    granted: Vec<(u64, Instant)>,
    next_ticket: u64,
}

impl LatchState {
    fn grantable(&self, mode: LatchMode) -> bool {
        LatchMode::ALL.iter().all(|held| self.held[held.index()] == 0 || compatible(*held, mode))
    }

    fn grant(&mut self, mode: LatchMode, spid: u16, thread: u32) {
        debug_assert!(self.grantable(mode), "invariant 1");
        self.held[mode.index()] += 1;
        self.holders.push(Holder { spid, mode, thread });
    }

    /// Invariant 4: a mode `thread` holds that blocks `mode`, or blocks a waiter queued ahead.
    fn held_in_the_way(&self, mode: LatchMode, thread: u32) -> Option<LatchMode> {
        let mine = self.holders.iter().filter(|h| h.thread == thread);
        for held in mine {
            let blocks_queue = self.queue.iter().any(|w| !compatible(held.mode, w.mode));
            if !compatible(held.mode, mode) || blocks_queue {
                return Some(held.mode);
            }
        }
        None
    }

    /// Grants the head of the queue and every waiter behind it that is compatible too, in
    /// order, stopping at the first that must keep waiting (invariant 2). Returns the granted
    /// waiters' threads: only they are woken, not every waiter of the latch.
    fn grant_waiters(&mut self) -> Granted {
        let mut woken = Granted::new();
        while let Some(head) = self.queue.front() {
            if !self.grantable(head.mode) {
                break;
            }
            let waiter = self.queue.pop_front().expect("the head exists");
            self.grant(waiter.mode, waiter.spid, waiter.token);
            self.granted.push((waiter.ticket, Instant::now()));
            woken.push(waiter.waker);
        }
        woken
    }
}

/// What a waiting acquisition cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatchWait {
    pub waited: Duration,
    /// From the moment the latch was granted to this waiter (signalled) to the moment it ran.
    pub signal: Duration,
    /// A holder's session id when the wait began, if any.
    pub blocking_spid: Option<u16>,
}

/// A latch.
#[derive(Default)]
pub struct Latch {
    state: Mutex<LatchState>,
}

/// Grants the waiters at the head of the queue that the holds now admit, unlocks the latch's
/// state, then wakes them (so that they do not wake into a lock still held). Most releases find
/// no waiter: they return at once, without building and dropping an empty list of wakers
/// (about 200 instructions a release, three releases a row in `bench insert`).
fn grant_and_wake(mut state: MutexGuard<'_, LatchState>) {
    if state.queue.is_empty() {
        return;
    }
    let granted = state.grant_waiters();
    drop(state);
    for waker in granted {
        waker.wake();
    }
}

impl Latch {
    /// Acquires without waiting; false if it would have to wait.
    pub fn try_acquire(&self, mode: LatchMode, spid: u16) -> bool {
        let mut state = self.state.lock();
        if state.queue.is_empty() && state.grantable(mode) {
            state.grant(mode, spid, thread_token());
            return true;
        }
        false
    }

    /// Acquires in `mode`, waiting if needed. `on_wait_start` runs once, before blocking, with
    /// a holder's session id (it registers the waiting task); the return value says whether
    /// and how long the caller waited. Releasers grant waiters in FIFO order, several at once
    /// when their modes are compatible, so a queue of SH waiters drains in one step instead of
    /// one context switch each. Refused, without waiting, when the wait could never end
    /// (invariant 4).
    pub fn acquire(
        &self,
        mode: LatchMode,
        spid: u16,
        on_wait_start: impl FnOnce(Option<u16>),
    ) -> Result<Option<LatchWait>, SelfDeadlock> {
        let token = thread_token();
        let mut state = self.state.lock();
        if state.queue.is_empty() && state.grantable(mode) {
            state.grant(mode, spid, token);
            return Ok(None);
        }
        if let Some(held) = state.held_in_the_way(mode, token) {
            return Err(SelfDeadlock { held });
        }
        let started = Instant::now();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        let waker = crate::scheduler::waker();
        state.queue.push_back(Waiter { ticket, mode, spid, token, waker });
        let blocking_spid = state.holders.first().map(|holder| holder.spid);
        on_wait_start(blocking_spid);
        // The worker's scheduler runs another worker while this one waits.
        let suspended = crate::scheduler::suspend();
        loop {
            if let Some(at) = state.granted.iter().position(|(t, _)| *t == ticket) {
                let (_, granted_at) = state.granted.swap_remove(at);
                drop(state);
                // Signal time runs from the grant until the worker runs on its scheduler again.
                suspended.resume();
                return Ok(Some(LatchWait {
                    waited: started.elapsed(),
                    signal: granted_at.elapsed(),
                    blocking_spid,
                }));
            }
            // An unpark that comes between the unlock and the park is kept by the thread's
            // token, so the grant is never missed; a spurious wake only looks again. A worker
            // granted the latch but queued for its scheduler looks again after the stall
            // limit, so that the scheduler's stall admission applies to it too.
            MutexGuard::unlocked(&mut state, || {
                crate::scheduler::park_timeout(crate::scheduler::STALL_ADMIT)
            });
        }
    }

    /// Releases one hold of `mode` by `spid`.
    pub fn release(&self, mode: LatchMode, spid: u16) {
        let mut state = self.state.lock();
        assert!(
            state.held[mode.index()] > 0,
            "invariant 3: releasing a latch mode that is not held"
        );
        state.held[mode.index()] -= 1;
        // This thread's hold first: a session id may be shared by several threads.
        let token = thread_token();
        let at = state
            .holders
            .iter()
            .position(|h| (h.spid, h.mode, h.thread) == (spid, mode, token))
            .or_else(|| state.holders.iter().position(|h| (h.spid, h.mode) == (spid, mode)));
        if let Some(at) = at {
            state.holders.swap_remove(at);
        }
        grant_and_wake(state);
    }

    /// Converts a held EX to `mode` (SH, UP or KP) without releasing it, waking compatible waiters.
    pub fn downgrade(&self, mode: LatchMode, spid: u16) {
        let mut state = self.state.lock();
        assert!(state.held[LatchMode::Ex.index()] > 0, "downgrading a latch that is not held EX");
        state.held[LatchMode::Ex.index()] -= 1;
        state.held[mode.index()] += 1;
        if let Some(holder) =
            state.holders.iter_mut().find(|h| (h.spid, h.mode) == (spid, LatchMode::Ex))
        {
            holder.mode = mode;
        }
        grant_and_wake(state);
    }

    /// The modes currently held (tests and diagnostics).
    pub fn held_counts(&self) -> [u32; 5] {
        self.state.lock().held
    }

    /// How many requesters are queued.
    pub fn waiter_count(&self) -> usize {
        self.state.lock().queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LatchMode::*;
    use std::sync::Arc;

    #[test]
    fn the_compatibility_matrix_is_sql_servers() {
        let expected = [
            (Kp, [true, true, true, true, false]),
            (Sh, [true, true, true, false, false]),
            (Up, [true, true, false, false, false]),
            (Ex, [true, false, false, false, false]),
            (Dt, [false, false, false, false, false]),
        ];
        for (held, row) in expected {
            for (requested, allowed) in LatchMode::ALL.into_iter().zip(row) {
                assert_eq!(
                    compatible(held, requested),
                    allowed,
                    "held {held:?} requested {requested:?}"
                );
            }
        }
    }

    #[test]
    fn holders_of_compatible_modes_coexist_and_incompatible_ones_wait() {
        let latch = Latch::default();
        assert!(latch.try_acquire(Sh, 51));
        assert!(latch.try_acquire(Up, 52));
        assert!(latch.try_acquire(Kp, 53));
        assert!(!latch.try_acquire(Up, 54), "UP is not compatible with UP");
        assert!(!latch.try_acquire(Ex, 54));
        latch.release(Up, 52);
        latch.release(Sh, 51);
        assert!(latch.try_acquire(Ex, 54), "EX is compatible with KP only");
        assert!(!latch.try_acquire(Dt, 55));
        latch.release(Ex, 54);
        latch.release(Kp, 53);
        assert!(latch.try_acquire(Dt, 55));
        assert_eq!(latch.held_counts(), [0, 0, 0, 0, 1]);
    }

    #[test]
    fn a_waiter_is_told_who_blocks_it_and_how_long_it_waited() {
        let latch = Arc::new(Latch::default());
        assert!(latch.try_acquire(Ex, 60));
        let waiter = {
            let latch = latch.clone();
            std::thread::spawn(move || {
                let mut blocker = None;
                let wait = latch.acquire(Sh, 61, |holder| blocker = holder);
                latch.release(Sh, 61);
                (blocker, wait)
            })
        };
        while latch.waiter_count() == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        latch.release(Ex, 60);
        let (blocker, wait) = waiter.join().unwrap();
        let wait = wait.expect("another thread's EX is no self-deadlock");
        let wait = wait.expect("the SH request had to wait");
        assert_eq!(blocker, Some(60));
        assert_eq!(wait.blocking_spid, Some(60));
        assert!(wait.waited >= Duration::from_millis(20));
        assert!(wait.signal <= wait.waited);
    }

    /// Invariant 4: a request that only the requesting thread's own hold blocks is refused at
    /// once; one that another thread's hold blocks waits as before.
    #[test]
    fn a_thread_never_waits_for_a_latch_only_it_can_release() {
        let latch = Arc::new(Latch::default());
        assert!(latch.try_acquire(Up, 70));
        assert_eq!(latch.acquire(Up, 70, |_| {}), Err(SelfDeadlock { held: Up }));
        assert_eq!(latch.acquire(Ex, 70, |_| {}), Err(SelfDeadlock { held: Up }));
        assert_eq!(latch.acquire(Sh, 70, |_| {}), Ok(None), "SH is compatible with UP");
        latch.release(Sh, 70);
        // Another thread queues for EX behind this thread's UP: a second SH of this thread
        // would queue behind that EX, which waits for the UP, so it is refused too.
        let other = {
            let latch = latch.clone();
            std::thread::spawn(move || {
                let wait = latch.acquire(Ex, 71, |_| {});
                latch.release(Ex, 71);
                wait
            })
        };
        while latch.waiter_count() == 0 {
            std::thread::yield_now();
        }
        assert_eq!(latch.acquire(Sh, 70, |_| {}), Err(SelfDeadlock { held: Up }));
        latch.release(Up, 70);
        assert!(other.join().unwrap().expect("another thread's UP").is_some());
        // KP held here, SH held by another thread: an EX request of this thread waits for the
        // other thread's SH (KP does not block EX), and is granted when it goes.
        assert!(latch.try_acquire(Kp, 70));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let reader = {
            let latch = latch.clone();
            std::thread::spawn(move || {
                assert!(latch.try_acquire(Sh, 72));
                held_tx.send(()).unwrap();
                while latch.waiter_count() == 0 {
                    std::thread::yield_now();
                }
                latch.release(Sh, 72);
            })
        };
        held_rx.recv().unwrap();
        let wait = latch.acquire(Ex, 70, |_| {});
        assert!(wait.expect("the SH is another thread's").is_some(), "EX waited for the SH");
        reader.join().unwrap();
        latch.release(Ex, 70);
        latch.release(Kp, 70);
        assert_eq!(latch.held_counts(), [0; 5]);
    }

    /// Regression: waiters used to be granted one at a time, each after the previous one ran,
    /// and sixteen sessions formed a convoy on a B-tree root.
    #[test]
    fn compatible_waiters_at_the_head_are_granted_together() {
        let latch = Arc::new(Latch::default());
        assert!(latch.try_acquire(Ex, 1));
        let release = Arc::new(std::sync::Barrier::new(4));
        let mut threads = Vec::new();
        for spid in 2..5u16 {
            let (shared, release) = (latch.clone(), release.clone());
            threads.push(std::thread::spawn(move || {
                shared.acquire(Sh, spid, |_| {}).expect("held by another thread");
                release.wait();
                shared.release(Sh, spid);
            }));
            while latch.waiter_count() < usize::from(spid - 1) {
                std::thread::yield_now();
            }
        }
        latch.release(Ex, 1);
        // One release granted all three SH waiters: they hold the latch at the same time.
        assert_eq!(latch.held_counts(), [0, 3, 0, 0, 0]);
        assert_eq!(latch.waiter_count(), 0);
        release.wait();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    #[test]
    fn waiters_are_granted_in_arrival_order() {
        let latch = Arc::new(Latch::default());
        assert!(latch.try_acquire(Ex, 1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for spid in 2..6u16 {
            let (shared, order) = (latch.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                shared.acquire(Ex, spid, |_| {}).expect("held by another thread");
                order.lock().push(spid);
                shared.release(Ex, spid);
            }));
            while latch.waiter_count() < usize::from(spid - 1) {
                std::thread::yield_now();
            }
        }
        latch.release(Ex, 1);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(*order.lock(), vec![2, 3, 4, 5]);
    }
}
