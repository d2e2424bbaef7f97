//! Locks: what transactions hold on objects and keys until they end (reference §7.2, §7.3).
//!
//! What it reproduces:
//! - Modes IS, S, U, IX, SIX and X with SQL Server's compatibility matrix; a transaction that
//!   holds a mode and asks for another holds their combination (S + IX = SIX, anything + X = X).
//! - Resources: an object (its allocation unit), a key (a hash of the key bytes in an index,
//!   shown as `keylock hobtid=<au> dbid=<db> (<hash>)`).
//! - Waiting: requests are granted first come first served; a blocked request waits on a
//!   condition variable and the time it waited is recorded as LCK_M_<mode>, with the blocking
//!   session in the waiting-tasks snapshot.
//! - Deadlocks: a waiter that has waited 100 ms looks for a cycle in the wait-for graph; the
//!   victim is the transaction in the cycle of the lowest deadlock priority (SET
//!   DEADLOCK_PRIORITY, -10 to 10) and, among those, the one whose rollback costs least (least
//!   log written); it gets 1205. With trace flags 1204 or 1222 the deadlock is written to the errorlog.
//! - Lock lists: each transaction keeps the list of resources it holds (SQL Server's
//!   transaction lock list, from which its end releases every lock); the lock table keeps,
//!   per resource, its holders and waiters, the first holder inline (an entry is 32 bytes, so
//!   sixteen transactions of a thousand key locks keep a small, warmer table).
//!
//! Deviations: the lock monitor runs inside the waiting sessions (every 100 ms of waiting)
//! rather than as a separate task every 5 s; the lock table is split into 16 partitions by
//! resource (SQL Server splits its lock hash table into buckets under LOCK_HASH spinlocks, and
//! partitions object locks per scheduler on large machines: resource descriptions keep
//! lockPartition=0); no page or RID locks yet (heaps are not transactional), and key-range
//! locks (SERIALIZABLE) come with the isolation levels of the T-SQL issue.
//!
//! Lock escalation (the attempt is made by [`crate::xact::lock`]): a transaction that holds
//! 5,000 X or U key locks in one index tries, without waiting, for X on the object; granted,
//! its key locks in that index are released and it takes no more there. Refused (another
//! transaction holds an incompatible object lock), it tries again at every 1,250 further key
//! locks, as SQL Server does. Trace flags 1211 and 1224 turn escalation off. Deviation: SQL
//! Server counts the locks one statement acquired; the engine has no statements, so the
//! transaction's count stands in (the same thing for seed 002's one INSERT ... SELECT).
//!
//! A wait also ends, without the lock, when its session's LOCK_TIMEOUT passes (1222; zero
//! refuses without waiting) or its session is cancelled (a client's ATTENTION or a KILL:
//! [`WaitLimits`]); the request leaves the queue and the time waited is still recorded.
//!
//! Lock order with latches: a session never waits for a lock while it holds a page latch.

use crate::error::{SqlError, SqlResult};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex, MutexGuard};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a waiter waits before it looks for a deadlock.
const DEADLOCK_CHECK_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    IS,
    S,
    U,
    IX,
    SIX,
    X,
}

impl LockMode {
    /// SQL Server's compatibility matrix for these modes.
    pub fn compatible(self, other: LockMode) -> bool {
        use LockMode::*;
        match (self, other) {
            (X, _) | (_, X) => false,
            (IS, _) | (_, IS) => true,
            (S, S) | (S, U) | (U, S) => true,
            (IX, IX) => true,
            _ => false,
        }
    }

    /// The mode that covers holding both.
    pub fn combine(self, other: LockMode) -> LockMode {
        use LockMode::*;
        if self == other {
            return self;
        }
        match (self.min(other), self.max(other)) {
            (_, X) => X,
            (IS, m) => m,
            (S, IX) | (S, SIX) | (IX, SIX) | (U, SIX) => SIX,
            (S, U) => U,
            (U, IX) => X,
            (a, b) => a.max(b),
        }
    }

    /// The wait type of a request in this mode.
    pub fn wait_type(self) -> &'static str {
        match self {
            LockMode::IS => "LCK_M_IS",
            LockMode::S => "LCK_M_S",
            LockMode::U => "LCK_M_U",
            LockMode::IX => "LCK_M_IX",
            LockMode::SIX => "LCK_M_SIX",
            LockMode::X => "LCK_M_X",
        }
    }

    pub fn name(self) -> &'static str {
        &self.wait_type()[6..]
    }
}

/// What is locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockResource {
    Object { database_id: u16, au_id: u64 },
    Key { database_id: u16, au_id: u64, hash: u64 },
}

impl LockResource {
    /// The key lock of `key_bytes` in an index (a 48-bit hash, as %%lockres%% shows 12 hex
    /// digits).
    pub fn key(database_id: u16, au_id: u64, key_bytes: &[u8]) -> LockResource {
        let hash = crc32c::crc32c(key_bytes) as u64 | (u64::from(key_bytes.len() as u16) << 32);
        LockResource::Key { database_id, au_id, hash }
    }

    /// resource_description as sys.dm_os_waiting_tasks shows it.
    pub fn description(&self) -> String {
        match self {
            LockResource::Object { database_id, au_id } => {
                format!(
                    "objectlock lockPartition=0 objid={au_id} subresource=FULL dbid={database_id}"
                )
            }
            LockResource::Key { database_id, au_id, hash } => {
                format!("keylock hobtid={au_id} dbid={database_id} ({hash:012x})")
            }
        }
    }

    /// The resource as sys.dm_exec_requests.wait_resource and sys.sysprocesses.waitresource
    /// show it: `KEY: <db>:<hobt> (<hash>)`, `OBJECT: <db>:<objid>:0` (lock partition 0), as
    /// blocked-process reports show them. The engine knows an object lock by its allocation
    /// unit, whose id this gives; the T-SQL layer, which has the catalog, names the table.
    pub fn wait_resource(&self) -> String {
        match self {
            LockResource::Object { database_id, au_id } => {
                format!("OBJECT: {database_id}:{au_id}:0")
            }
            LockResource::Key { database_id, au_id, hash } => {
                format!("KEY: {database_id}:{au_id} ({hash:012x})")
            }
        }
    }
}

/// What may end a lock request's wait before it is granted (besides a deadlock): its
/// session's SET LOCK_TIMEOUT (1222) and its cancel flag, set by a client's ATTENTION or a
/// KILL. A waiter looks at the flag whenever it wakes, at least every
/// [`DEADLOCK_CHECK_INTERVAL`], so a cancel ends a lock wait within 100 ms.
#[derive(Clone, Debug, Default)]
pub struct WaitLimits {
    /// None: wait as long as it takes (LOCK_TIMEOUT -1, the default); zero: never wait.
    pub timeout: Option<Duration>,
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// The session's SET DEADLOCK_PRIORITY, which the deadlock search reads off its waiters.
    pub deadlock_priority: i8,
}

impl WaitLimits {
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

/// A transaction as the lock manager knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockOwner {
    pub xact_id: u64,
    pub spid: u16,
    /// What rolling it back would cost (log bytes written): the deadlock victim is the cheapest
    /// of the lowest priority.
    pub cost: u64,
    /// Its session's SET DEADLOCK_PRIORITY (-10 to 10; 0 NORMAL), set when it waits.
    pub deadlock_priority: i8,
}

/// One row of [`LockManager::requests_snapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockRequest {
    pub resource: LockResource,
    pub spid: u16,
    pub xact_id: u64,
    /// The mode held (GRANT) or asked for (WAIT, CONVERT).
    pub mode: LockMode,
    pub status: RequestStatus,
}

/// sys.dm_tran_locks.request_status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RequestStatus {
    Grant,
    Convert,
    Wait,
}

impl RequestStatus {
    pub fn name(self) -> &'static str {
        match self {
            RequestStatus::Grant => "GRANT",
            RequestStatus::Convert => "CONVERT",
            RequestStatus::Wait => "WAIT",
        }
    }
}

#[derive(Debug)]
struct Waiter {
    owner: LockOwner,
    mode: LockMode,
    victim: bool,
}

/// One hold of a resource: the transaction, the mode it holds and its session id.
type Holder = (u64, (LockMode, u16));

/// The owners holding a resource: the first inline (nearly every key lock has one holder, so a
/// new lock allocates nothing), any others on the heap. Kept small, with [`Waiting`], because
/// the lock table holds an entry per locked key: sixteen transactions of a thousand inserts
/// hold sixteen thousand, and every request and release probes a cold part of the table.
#[derive(Default, Debug)]
struct Grants {
    first: Option<Holder>,
    /// Further holders, in the order they were granted; never `Some` of an empty list, and
    /// only while `first` is set.
    #[allow(clippy::box_collection, reason = "one pointer in the entry, not a Vec's three words")]
    others: Option<Box<Vec<Holder>>>,
}

impl Grants {
    fn get(&self, xact_id: &u64) -> Option<&(LockMode, u16)> {
        self.iter().find(|(x, _)| *x == xact_id).map(|(_, g)| g)
    }

    fn insert(&mut self, xact_id: u64, grant: (LockMode, u16)) {
        let mut holders =
            self.first.iter_mut().chain(self.others.iter_mut().flat_map(|o| o.iter_mut()));
        if let Some(existing) = holders.find(|(x, _)| *x == xact_id) {
            existing.1 = grant;
            return;
        }
        match self.first {
            None => self.first = Some((xact_id, grant)),
            Some(_) => self.others.get_or_insert_with(Box::default).push((xact_id, grant)),
        }
    }

    /// A transaction holds a resource once: it is the first holder or one of the others.
    fn remove(&mut self, xact_id: &u64) {
        if self.first.is_some_and(|(x, _)| x == *xact_id) {
            // The next holder in grant order moves up.
            let others = self.others.as_mut();
            self.first = others.and_then(|others| (!others.is_empty()).then(|| others.remove(0)));
        } else if let Some(others) = &mut self.others {
            others.retain(|(x, _)| x != xact_id);
        }
        if self.others.as_ref().is_some_and(|others| others.is_empty()) {
            self.others = None;
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn iter(&self) -> impl Iterator<Item = (&u64, &(LockMode, u16))> {
        let others = self.others.iter().flat_map(|others| others.iter());
        self.first.iter().chain(others).map(|(x, g)| (x, g))
    }
}

/// The requests waiting for a resource, first come first served: on the heap only while
/// there are any (an entry without waiters carries one pointer).
#[derive(Default, Debug)]
#[allow(clippy::box_collection, reason = "one pointer in the entry, not a VecDeque's four words")]
struct Waiting(Option<Box<VecDeque<Waiter>>>);

impl Waiting {
    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    fn front(&self) -> Option<&Waiter> {
        self.0.as_ref().and_then(|queue| queue.front())
    }

    fn queue(&mut self) -> &mut VecDeque<Waiter> {
        self.0.get_or_insert_with(Box::default)
    }

    fn push_back(&mut self, waiter: Waiter) {
        self.queue().push_back(waiter);
    }

    fn push_front(&mut self, waiter: Waiter) {
        self.queue().push_front(waiter);
    }

    fn remove(&mut self, at: usize) -> Option<Waiter> {
        let removed = self.0.as_mut().and_then(|queue| queue.remove(at));
        if self.0.as_ref().is_some_and(|queue| queue.is_empty()) {
            self.0 = None;
        }
        removed
    }

    fn pop_front(&mut self) -> Option<Waiter> {
        self.remove(0)
    }

    fn iter(&self) -> impl Iterator<Item = &Waiter> {
        self.0.iter().flat_map(|queue| queue.iter())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Waiter> {
        self.0.iter_mut().flat_map(|queue| queue.iter_mut())
    }
}

#[derive(Default, Debug)]
struct Entry {
    granted: Grants,
    waiting: Waiting,
}

impl Entry {
    fn compatible_with_others(&self, xact_id: u64, mode: LockMode) -> bool {
        self.granted.iter().all(|(owner, (held, _))| *owner == xact_id || held.compatible(mode))
    }

    /// Grants waiters in order while they are compatible; returns whether any was granted.
    fn grant_waiters(&mut self) -> bool {
        let mut granted_any = false;
        while let Some(front) = self.waiting.front() {
            if front.victim || !self.compatible_with_others(front.owner.xact_id, front.mode) {
                break;
            }
            let waiter = self.waiting.pop_front().expect("front exists");
            let held = self.granted.get(&waiter.owner.xact_id).map(|(m, _)| *m);
            let mode = held.map_or(waiter.mode, |h| h.combine(waiter.mode));
            self.granted.insert(waiter.owner.xact_id, (mode, waiter.owner.spid));
            granted_any = true;
        }
        granted_any
    }
}

#[derive(Default)]
struct Table {
    entries: HashMap<LockResource, Entry>,
    /// Lock requests made in this partition (Lock Requests/sec), counted under its mutex.
    requests: u64,
    /// Fibers waiting in this partition ([`crate::fiber`]): woken with the condition variable.
    fiber_waiters: Vec<crate::scheduler::Waker>,
}

impl Table {
    /// Takes a transaction's grant off a resource, grants the waiters that can now go, and
    /// forgets the resource once nobody holds or waits for it.
    /// One lookup: the entry found is the one removed (a commit drops about a thousand key
    /// locks, each in a cold bucket).
    fn drop_grant(&mut self, xact_id: u64, resource: LockResource) {
        if let std::collections::hash_map::Entry::Occupied(mut found) = self.entries.entry(resource)
        {
            let entry = found.get_mut();
            entry.granted.remove(&xact_id);
            entry.grant_waiters();
            if entry.granted.is_empty() && entry.waiting.is_empty() {
                found.remove();
            }
        }
    }
}

/// A deadlock, for the errorlog (TF 1204, 1222).
#[derive(Clone, Debug)]
pub struct DeadlockReport {
    /// (spid, xact id, resource waited for, mode requested) of each transaction in the cycle.
    pub nodes: Vec<(u16, u64, LockResource, LockMode)>,
    /// Each node's deadlock priority and log used (its rollback's cost), in the same order.
    pub priorities_and_costs: Vec<(i8, u64)>,
    pub victim_spid: u16,
}

/// How many partitions the lock table is split into. A resource always lives in the same one.
const LOCK_PARTITIONS: usize = 16;

/// One partition of the lock table: its resources, and the waiters of those resources.
#[derive(Default)]
struct Partition {
    table: Mutex<Table>,
    changed: Condvar,
}

impl Partition {
    /// Waits for a change in the partition, at most `timeout`: on the condition variable, or,
    /// for a fiber, parked with its waker in the partition (a fiber must not block its thread).
    fn wait(&self, table: &mut MutexGuard<'_, Table>, timeout: Duration) {
        if !crate::fiber::on_fiber() {
            self.changed.wait_for(table, timeout);
            return;
        }
        table.fiber_waiters.push(crate::scheduler::waker());
        MutexGuard::unlocked(table, || crate::fiber::park_timeout(timeout));
    }

    /// Wakes every waiter of the partition (each looks again at its request).
    fn notify(&self, table: &mut Table) {
        self.changed.notify_all();
        for waker in table.fiber_waiters.drain(..) {
            waker.wake();
        }
    }
}

/// The instance's lock manager.
///
/// The lock table is split into [`LOCK_PARTITIONS`] partitions by a hash of the resource, each
/// with its own mutex and condition variable, so sessions locking different keys rarely meet
/// on one mutex, and a commit releasing its thousand key locks holds each partition for a
/// sixteenth of the work. Invariant 1: a session holds at most one partition's mutex, except
/// the deadlock search, which takes every partition's in index order (so two searches cannot
/// deadlock each other).
pub struct LockManager {
    /// Each partition on cache lines of its own: every lock request writes its partition's
    /// mutex and table header, and two sessions on two CPUs should not pass a line back and
    /// forth for neighbouring partitions.
    partitions: Vec<CachePadded<Partition>>,
    /// Deadlocks found so far.
    deadlocks: AtomicU64,
    /// Lock escalations so far.
    escalations: AtomicU64,
    /// Requests that had to wait (Lock Waits/sec), counted when the wait begins, and the
    /// microseconds they waited, counted when it ends (granted or chosen as deadlock victim).
    waits: AtomicU64,
    wait_time_us: AtomicU64,
    /// Key-lock waits by (database id, allocation unit): (waits, microseconds), counted when a
    /// wait ends (sys.dm_db_index_operational_stats' row_lock_wait_count and _in_ms). Touched
    /// only on the wait path, under no other lock but the waiter's partition.
    row_lock_waits: Mutex<HashMap<(u16, u64), (u64, u64)>>,
}

impl Default for LockManager {
    fn default() -> Self {
        LockManager {
            partitions: (0..LOCK_PARTITIONS)
                .map(|_| CachePadded::new(Partition::default()))
                .collect(),
            deadlocks: AtomicU64::new(0),
            escalations: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            wait_time_us: AtomicU64::new(0),
            row_lock_waits: Mutex::new(HashMap::default()),
        }
    }
}

/// What [`LockManager::grant_now`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grant {
    AlreadyHeld,
    /// Granted; `new` when the transaction held the resource in no mode before.
    Granted {
        new: bool,
    },
    Blocked,
}

/// What a lock request came to. A grant says whether the resource is newly held by the
/// transaction (it held it in no mode before): the transaction keeps the list of what it holds
/// (SQL Server's transaction lock list), which its end releases.
pub enum Acquired {
    /// The transaction held the resource in a mode that covers the request already.
    AlreadyHeld,
    Granted {
        new: bool,
    },
    /// Waited `waited` (LCK_M_<mode>), blocked by session `blocker` when the wait began,
    /// then granted.
    AfterWait {
        waited: Duration,
        blocker: Option<u16>,
        new: bool,
    },
}

impl Acquired {
    /// The transaction holds the resource now and did not before: it joins its lock list.
    pub fn newly_held(&self) -> bool {
        match self {
            Acquired::AlreadyHeld => false,
            Acquired::Granted { new } | Acquired::AfterWait { new, .. } => *new,
        }
    }
}

impl LockManager {
    fn partition(&self, resource: &LockResource) -> &Partition {
        &self.partitions[Self::partition_index(resource)]
    }

    /// The partition a resource always lives in.
    fn partition_index(resource: &LockResource) -> usize {
        let mixed = match resource {
            LockResource::Object { database_id, au_id } => au_id ^ u64::from(*database_id),
            LockResource::Key { database_id, au_id, hash } => {
                hash ^ au_id.rotate_left(17) ^ u64::from(*database_id)
            }
        };
        let index = (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize;
        index % LOCK_PARTITIONS
    }

    /// Key-lock waits that ended, by (database id, allocation unit): (waits, microseconds).
    pub fn row_lock_waits(&self) -> Vec<((u16, u64), (u64, u64))> {
        self.row_lock_waits.lock().iter().map(|(unit, cell)| (*unit, *cell)).collect()
    }

    /// Acquires `mode` on `resource` for `owner`, waiting as long as `limits` allow (asked
    /// for only when the request must wait, so a grant costs nothing more). Error
    /// 1205 when the owner is chosen as a deadlock victim (the caller rolls its transaction
    /// back), 1222 when the wait reaches the timeout, [`SqlError::wait_cancelled`] when the
    /// session is cancelled; after any of them the request is gone from the queue.
    /// `on_deadlock` is told of every deadlock this request finds.
    pub fn acquire(
        &self,
        owner: LockOwner,
        resource: LockResource,
        mode: LockMode,
        limits: &dyn Fn() -> WaitLimits,
        on_wait: &mut dyn FnMut(Option<u16>),
        on_deadlock: &mut dyn FnMut(&DeadlockReport),
    ) -> SqlResult<Acquired> {
        let partition = self.partition(&resource);
        let mut table = partition.table.lock();
        table.requests += 1;
        match Self::grant_now(&mut table, owner, resource, mode) {
            Grant::AlreadyHeld => return Ok(Acquired::AlreadyHeld),
            Grant::Granted { new } => return Ok(Acquired::Granted { new }),
            Grant::Blocked => {}
        }
        let limits = limits();
        let owner = LockOwner { deadlock_priority: limits.deadlock_priority, ..owner };
        if limits.timeout == Some(Duration::ZERO) {
            // LOCK_TIMEOUT 0: the request is refused without waiting; grant_now queued nothing.
            Self::forget_if_unused(&mut table, resource);
            return Err(lock_timeout(resource));
        }
        let entry = table.entries.get_mut(&resource).expect("grant_now made the entry");
        let held = entry.granted.get(&owner.xact_id).map(|(m, _)| *m);
        let wanted = held.map_or(mode, |h| h.combine(mode));
        let blocker = entry
            .granted
            .iter()
            .find(|(x, (m, _))| **x != owner.xact_id && !m.compatible(wanted))
            .map(|(_, (_, spid))| *spid);
        let waiter = Waiter { owner, mode: wanted, victim: false };
        if held.is_some() {
            entry.waiting.push_front(waiter);
        } else {
            entry.waiting.push_back(waiter);
        }
        on_wait(blocker);
        self.waits.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let waited = || {
            let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.wait_time_us.fetch_add(us, Ordering::Relaxed);
            if let LockResource::Key { database_id, au_id, .. } = resource {
                let mut row_lock_waits = self.row_lock_waits.lock();
                let cell = row_lock_waits.entry((database_id, au_id)).or_default();
                cell.0 += 1;
                cell.1 += us;
            }
        };
        let deadline = limits.timeout.map(|timeout| started + timeout);
        let mut last_check = Instant::now();
        let mut wait = true;
        loop {
            if wait {
                let until_deadline = deadline.map_or(DEADLOCK_CHECK_INTERVAL, |d| {
                    d.saturating_duration_since(Instant::now())
                });
                partition.wait(&mut table, until_deadline.min(DEADLOCK_CHECK_INTERVAL));
            }
            wait = true;
            let timed_out = last_check.elapsed() >= DEADLOCK_CHECK_INTERVAL;
            let entry = table.entries.get_mut(&resource).expect("a waited-for entry stays");
            if entry.granted.get(&owner.xact_id).is_some_and(|(m, _)| m.combine(wanted) == *m) {
                waited();
                let waited = started.elapsed();
                return Ok(Acquired::AfterWait { waited, blocker, new: held.is_none() });
            }
            let me = entry.waiting.iter().position(|w| w.owner.xact_id == owner.xact_id);
            let victim = me.is_some_and(|i| entry.waiting.iter().nth(i).is_some_and(|w| w.victim));
            let expired = deadline.is_some_and(|d| Instant::now() >= d);
            let ended = if victim {
                Some(deadlock_victim(owner.spid))
            } else if limits.cancelled() {
                Some(SqlError::wait_cancelled())
            } else if expired {
                Some(lock_timeout(resource))
            } else {
                None
            };
            if let Some(error) = ended {
                entry.waiting.remove(me.expect("a request not granted still waits"));
                entry.grant_waiters();
                Self::forget_if_unused(&mut table, resource);
                partition.notify(&mut table);
                waited();
                return Err(error);
            }
            if timed_out {
                last_check = Instant::now();
                // The wait-for graph spans every partition (invariant 1: ours is let go first).
                MutexGuard::unlocked(&mut table, || {
                    self.search_deadlock(owner.xact_id, on_deadlock)
                });
                // Look again at once: this session may be the victim it chose.
                wait = false;
            }
        }
    }

    /// Drops a resource's entry once nobody holds or waits for it.
    fn forget_if_unused(table: &mut Table, resource: LockResource) {
        if table
            .entries
            .get(&resource)
            .is_some_and(|e| e.granted.is_empty() && e.waiting.is_empty())
        {
            table.entries.remove(&resource);
        }
    }

    /// Grants `mode` if no other holder and no earlier waiter stands in the way, else leaves
    /// the entry as it was (Blocked). Conversions go ahead of the queue.
    fn grant_now(
        table: &mut Table,
        owner: LockOwner,
        resource: LockResource,
        mode: LockMode,
    ) -> Grant {
        let entry = table.entries.entry(resource).or_default();
        let held = entry.granted.get(&owner.xact_id).map(|(m, _)| *m);
        if held.is_some_and(|h| h.combine(mode) == h) {
            return Grant::AlreadyHeld;
        }
        let wanted = held.map_or(mode, |h| h.combine(mode));
        let free = entry.compatible_with_others(owner.xact_id, wanted)
            && (held.is_some() || entry.waiting.is_empty());
        if !free {
            return Grant::Blocked;
        }
        entry.granted.insert(owner.xact_id, (wanted, owner.spid));
        Grant::Granted { new: held.is_none() }
    }

    /// Lock escalation's attempt: `mode` on `resource` if it can be granted at once, without
    /// waiting (SQL Server's escalation never waits: it tries again later). A refusal changes
    /// nothing: it means another transaction holds or waits for the resource. Granted, it
    /// says whether the resource is newly held (see [`Acquired`]).
    pub fn try_acquire(
        &self,
        owner: LockOwner,
        resource: LockResource,
        mode: LockMode,
    ) -> Option<Acquired> {
        let mut table = self.partition(&resource).table.lock();
        table.requests += 1;
        match Self::grant_now(&mut table, owner, resource, mode) {
            Grant::AlreadyHeld => Some(Acquired::AlreadyHeld),
            Grant::Granted { new } => Some(Acquired::Granted { new }),
            Grant::Blocked => None,
        }
    }

    /// Releases the key locks a transaction holds in one index, once an escalated object lock
    /// covers them, and takes them off its lock list `held`. Counts the escalation.
    pub fn release_keys_after_escalation(
        &self,
        xact_id: u64,
        database_id: u16,
        au_id: u64,
        held: &mut Vec<LockResource>,
    ) {
        let in_index = |r: &LockResource| match r {
            LockResource::Key { database_id: d, au_id: a, .. } => *d == database_id && *a == au_id,
            LockResource::Object { .. } => false,
        };
        let keys: Vec<LockResource> = held.extract_if(.., |r| in_index(r)).collect();
        self.release_all(xact_id, &keys);
        self.escalations.fetch_add(1, Ordering::Relaxed);
    }

    /// Lock escalations since the instance started (index_lock_promotion_count).
    pub fn escalations(&self) -> u64 {
        self.escalations.load(Ordering::Relaxed)
    }

    /// Takes every partition in order, looks for a cycle through `start`, and wakes every
    /// waiter if one was found (the victim may wait in any partition).
    fn search_deadlock(&self, start: u64, on_deadlock: &mut dyn FnMut(&DeadlockReport)) {
        let mut tables: Vec<MutexGuard<'_, Table>> =
            self.partitions.iter().map(|p| p.table.lock()).collect();
        let Some(report) = Self::find_deadlock(&mut tables, start) else { return };
        self.deadlocks.fetch_add(1, Ordering::Relaxed);
        on_deadlock(&report);
        drop(tables);
        for partition in &self.partitions {
            partition.notify(&mut partition.table.lock());
        }
    }

    /// Releases one lock early (READ COMMITTED's S locks after the read).
    /// The caller takes it off the transaction's lock list.
    pub fn release(&self, xact_id: u64, resource: LockResource) {
        let partition = self.partition(&resource);
        let mut table = partition.table.lock();
        table.drop_grant(xact_id, resource);
        partition.notify(&mut table);
    }

    /// Releases every lock on a transaction's lock list `held` (at commit or rollback), one
    /// partition at a time: each partition's mutex is taken once for all its resources.
    pub fn release_all(&self, xact_id: u64, held: &[LockResource]) {
        // The list grouped by partition in one counting pass (a commit releases ~1,000).
        let indexes: Vec<usize> = held.iter().map(Self::partition_index).collect();
        let mut ends = [0usize; LOCK_PARTITIONS];
        for index in &indexes {
            ends[*index] += 1;
        }
        for index in 1..LOCK_PARTITIONS {
            ends[index] += ends[index - 1];
        }
        let mut grouped = held.to_vec();
        let mut next = ends;
        for (resource, index) in held.iter().zip(&indexes).rev() {
            next[*index] -= 1;
            grouped[next[*index]] = *resource;
        }
        let mut start = 0;
        for (index, end) in ends.into_iter().enumerate() {
            if end > start {
                let partition = &self.partitions[index];
                let mut table = partition.table.lock();
                for resource in &grouped[start..end] {
                    table.drop_grant(xact_id, *resource);
                }
                partition.notify(&mut table);
            }
            start = end;
        }
    }

    /// Locks held now: (resource, xact id, spid, mode), for tests and sys.dm_tran_locks.
    pub fn snapshot(&self) -> Vec<(LockResource, u64, u16, LockMode)> {
        let mut rows = Vec::new();
        for partition in &self.partitions {
            let table = partition.table.lock();
            rows.extend(
                table
                    .entries
                    .iter()
                    .flat_map(|(r, e)| e.granted.iter().map(|(x, (m, s))| (*r, *x, *s, *m))),
            );
        }
        rows.sort();
        rows
    }

    /// Every request in the lock table now, as sys.dm_tran_locks lists them: each lock held
    /// (GRANT), and each request waiting (WAIT, or CONVERT when its transaction already holds
    /// the resource in a weaker mode: that one row then stands for both, in the mode asked
    /// for), by resource, then session.
    pub fn requests_snapshot(&self) -> Vec<LockRequest> {
        let mut rows = Vec::new();
        for partition in &self.partitions {
            let table = partition.table.lock();
            for (resource, entry) in &table.entries {
                let converting =
                    |x: &u64| entry.waiting.iter().any(|waiter| waiter.owner.xact_id == *x);
                for (xact_id, (mode, spid)) in entry.granted.iter().filter(|(x, _)| !converting(x))
                {
                    rows.push(LockRequest {
                        resource: *resource,
                        spid: *spid,
                        xact_id: *xact_id,
                        mode: *mode,
                        status: RequestStatus::Grant,
                    });
                }
                for waiter in entry.waiting.iter() {
                    let holds = entry.granted.iter().any(|(x, _)| *x == waiter.owner.xact_id);
                    rows.push(LockRequest {
                        resource: *resource,
                        spid: waiter.owner.spid,
                        xact_id: waiter.owner.xact_id,
                        mode: waiter.mode,
                        status: if holds { RequestStatus::Convert } else { RequestStatus::Wait },
                    });
                }
            }
        }
        rows.sort();
        rows
    }

    /// Lock requests since the instance started, granted or not (Lock Requests/sec).
    pub fn requests(&self) -> u64 {
        self.partitions.iter().map(|p| p.table.lock().requests).sum()
    }

    /// Lock requests that waited since the instance started, and their wait time in ms
    /// (Lock Waits/sec, Lock Wait Time (ms)); DBCC SQLPERF's CLEAR of the wait statistics
    /// does not reset them, as it does not reset SQL Server's counters.
    pub fn waits(&self) -> (u64, u64) {
        let us = self.wait_time_us.load(Ordering::Relaxed);
        (self.waits.load(Ordering::Relaxed), us / 1000)
    }

    /// Deadlocks found since the instance started.
    pub fn deadlocks(&self) -> u64 {
        self.deadlocks.load(Ordering::Relaxed)
    }

    /// Looks for a cycle through `start` in the wait-for graph of every partition; marks the
    /// cheapest transaction in it as the victim.
    fn find_deadlock(tables: &mut [MutexGuard<'_, Table>], start: u64) -> Option<DeadlockReport> {
        // waiter xact -> (resource, mode, owner) and the xacts it waits for.
        let mut waits: HashMap<u64, (LockResource, LockMode, LockOwner, Vec<u64>)> =
            HashMap::default();
        for table in tables.iter() {
            for (resource, entry) in &table.entries {
                Self::add_waits(&mut waits, resource, entry);
            }
        }
        let cycle = find_cycle(&waits, start)?;
        let victim = cycle
            .iter()
            .min_by_key(|x| {
                let owner = waits[x].2;
                (owner.deadlock_priority, owner.cost, std::cmp::Reverse(**x))
            })
            .copied()
            .expect("a cycle has members");
        let (resource, _, _, _) = waits[&victim];
        let entry = tables
            .iter_mut()
            .find_map(|table| table.entries.get_mut(&resource))
            .expect("the victim waits here");
        for waiter in entry.waiting.iter_mut() {
            if waiter.owner.xact_id == victim {
                waiter.victim = true;
            }
        }
        let nodes = cycle.iter().map(|x| (waits[x].2.spid, *x, waits[x].0, waits[x].1)).collect();
        let priorities_and_costs =
            cycle.iter().map(|x| (waits[x].2.deadlock_priority, waits[x].2.cost)).collect();
        Some(DeadlockReport { nodes, priorities_and_costs, victim_spid: waits[&victim].2.spid })
    }

    /// The wait-for edges of one resource's waiters: each waits for the incompatible holders
    /// and for the waiters queued before it.
    fn add_waits(
        waits: &mut HashMap<u64, (LockResource, LockMode, LockOwner, Vec<u64>)>,
        resource: &LockResource,
        entry: &Entry,
    ) {
        for (i, waiter) in entry.waiting.iter().enumerate() {
            if waiter.victim {
                continue;
            }
            let mut blockers: Vec<u64> = entry
                .granted
                .iter()
                .filter(|(x, (m, _))| **x != waiter.owner.xact_id && !m.compatible(waiter.mode))
                .map(|(x, _)| *x)
                .collect();
            blockers.extend(
                entry
                    .waiting
                    .iter()
                    .take(i)
                    .map(|w| w.owner.xact_id)
                    .filter(|x| *x != waiter.owner.xact_id),
            );
            waits.insert(waiter.owner.xact_id, (*resource, waiter.mode, waiter.owner, blockers));
        }
    }
}

/// A cycle of the wait-for graph through `start`, if there is one (depth-first, bounded).
fn find_cycle(
    waits: &HashMap<u64, (LockResource, LockMode, LockOwner, Vec<u64>)>,
    start: u64,
) -> Option<Vec<u64>> {
    let mut path = vec![start];
    let mut next_child = vec![0usize];
    while let Some(&node) = path.last() {
        let depth = path.len() - 1;
        let children = waits.get(&node).map(|w| w.3.as_slice()).unwrap_or(&[]);
        if next_child[depth] >= children.len() || path.len() > waits.len() + 1 {
            path.pop();
            next_child.pop();
            continue;
        }
        let child = children[next_child[depth]];
        next_child[depth] += 1;
        if child == start {
            return Some(path);
        }
        if !path.contains(&child) {
            path.push(child);
            next_child.push(0);
        }
    }
    None
}

/// 1222 for a request on `resource` that reached its LOCK_TIMEOUT.
fn lock_timeout(resource: LockResource) -> SqlError {
    match resource {
        LockResource::Key { .. } => SqlError::lock_timeout(51),
        LockResource::Object { .. } => SqlError::lock_timeout(56),
    }
}

/// 1205 for the victim's session.
pub fn deadlock_victim(spid: u16) -> SqlError {
    SqlError::new(
        1205,
        13,
        51,
        format!(
            "Transaction (Process ID {spid}) was deadlocked on lock resources with another \
             process and has been chosen as the deadlock victim. Rerun the transaction."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockMode::*;

    #[test]
    fn the_compatibility_matrix_is_sql_servers() {
        let modes = [IS, S, U, IX, SIX, X];
        let expected = [
            [true, true, true, true, true, false],
            [true, true, true, false, false, false],
            [true, true, false, false, false, false],
            [true, false, false, true, false, false],
            [true, false, false, false, false, false],
            [false, false, false, false, false, false],
        ];
        for (i, a) in modes.iter().enumerate() {
            for (j, b) in modes.iter().enumerate() {
                assert_eq!(a.compatible(*b), expected[i][j], "{a:?} with {b:?}");
            }
        }
        assert_eq!(S.combine(IX), SIX);
        assert_eq!(IS.combine(S), S);
        assert_eq!(S.combine(X), X);
        assert_eq!(IX.combine(IX), IX);
    }

    fn key(hash: u64) -> LockResource {
        LockResource::Key { database_id: 5, au_id: 72057594043039744, hash }
    }

    fn owner(xact_id: u64) -> LockOwner {
        LockOwner { xact_id, spid: 50 + xact_id as u16, cost: xact_id, deadlock_priority: 0 }
    }

    fn lock(manager: &LockManager, xact_id: u64, resource: LockResource) -> SqlResult<Acquired> {
        manager.acquire(owner(xact_id), resource, X, &WaitLimits::default, &mut |_| {}, &mut |_| {})
    }

    /// A lock list as a transaction keeps it: every resource newly held by `xact_id`.
    fn held_by(manager: &LockManager, xact_id: u64) -> Vec<LockResource> {
        let mut held: Vec<LockResource> = manager
            .snapshot()
            .into_iter()
            .filter(|(_, x, _, _)| *x == xact_id)
            .map(|(resource, ..)| resource)
            .collect();
        held.dedup();
        held
    }

    fn entries_kept(manager: &LockManager) -> usize {
        manager.partitions.iter().map(|p| p.table.lock().entries.len()).sum()
    }

    /// A commit forgets every resource nobody holds or waits for any more, and keeps the ones
    /// another transaction still holds.
    #[test]
    fn releasing_forgets_the_resources_left_without_holders() {
        let manager = LockManager::default();
        for hash in 0..100 {
            assert!(matches!(lock(&manager, 1, key(hash)), Ok(Acquired::Granted { new: true })));
        }
        let shared = |x| {
            manager.acquire(owner(x), key(1_000), S, &WaitLimits::default, &mut |_| {}, &mut |_| {})
        };
        assert!(matches!(shared(1), Ok(Acquired::Granted { new: true })));
        assert!(matches!(shared(2), Ok(Acquired::Granted { new: true })));
        assert_eq!(entries_kept(&manager), 101);
        manager.release_all(1, &held_by(&manager, 1));
        assert_eq!(entries_kept(&manager), 1, "only the key transaction 2 still holds");
        assert_eq!(manager.snapshot(), vec![(key(1_000), 2, 52, S)]);
        manager.release_all(2, &held_by(&manager, 2));
        assert_eq!(entries_kept(&manager), 0);
    }

    /// Two transactions that each hold the key the other wants, the keys in different
    /// partitions: the search that spans the partitions finds the cycle, the cheaper one gets
    /// 1205, and the other is granted once the victim's locks go.
    #[test]
    fn a_deadlock_across_partitions_is_found_and_resolved() {
        let manager = std::sync::Arc::new(LockManager::default());
        let (a, b) = (
            key(1),
            (2..)
                .map(key)
                .find(|k| !std::ptr::eq(manager.partition(k), manager.partition(&key(1))))
                .expect("some key lives in another partition"),
        );
        assert!(matches!(lock(&manager, 1, a), Ok(Acquired::Granted { new: true })));
        assert!(matches!(lock(&manager, 2, b), Ok(Acquired::Granted { new: true })));
        let other = std::sync::Arc::clone(&manager);
        let second = std::thread::spawn(move || {
            let result = lock(&other, 2, a);
            if result.is_err() {
                other.release_all(2, &held_by(&other, 2));
            }
            result.map(|_| ())
        });
        let first = lock(&manager, 1, b).map(|_| ());
        if first.is_err() {
            manager.release_all(1, &held_by(&manager, 1));
        }
        let second = second.join().expect("the second session");
        let errors: Vec<i32> =
            [&first, &second].iter().filter_map(|r| r.as_ref().err()).map(|e| e.number).collect();
        assert_eq!(errors, vec![1205], "exactly one victim: {first:?} {second:?}");
        assert!(first.is_err(), "the victim is the cheaper transaction (cost 1)");
        assert_eq!(manager.deadlocks(), 1);
        manager.release_all(2, &held_by(&manager, 2));
        assert!(manager.snapshot().is_empty(), "every lock released");
    }

    /// A waiting request's resource as dm_os_waiting_tasks describes it and as
    /// dm_exec_requests.wait_resource names it (Kendra Little's decoding of `KEY: 6:<hobt>
    /// (<hash>)`; `OBJECT: db:id:partition`).
    #[test]
    fn a_resource_is_described_and_named_as_sql_server_shows_it() {
        let key =
            LockResource::Key { database_id: 6, au_id: 72057594041991168, hash: 0xce52f92a058c };
        assert_eq!(key.description(), "keylock hobtid=72057594041991168 dbid=6 (ce52f92a058c)");
        assert_eq!(key.wait_resource(), "KEY: 6:72057594041991168 (ce52f92a058c)");
        let object = LockResource::Object { database_id: 5, au_id: 7 };
        assert_eq!(object.wait_resource(), "OBJECT: 5:7:0");
    }

    /// A request that reaches its LOCK_TIMEOUT gets 1222 (state 51 for a key, 56 for an
    /// object) and leaves the queue: a later request is not stuck behind it, and its session
    /// holds nothing new. LOCK_TIMEOUT 0 refuses at once, without a wait.
    #[test]
    fn a_lock_timeout_ends_the_wait_with_1222_and_leaves_the_queue() {
        let manager = LockManager::default();
        let object = LockResource::Object { database_id: 5, au_id: 7 };
        assert!(lock(&manager, 1, key(9)).is_ok());
        assert!(lock(&manager, 1, object).is_ok());
        let limits =
            || WaitLimits { timeout: Some(Duration::from_millis(30)), ..WaitLimits::default() };
        let mut waits = 0;
        let started = Instant::now();
        let error = manager
            .acquire(owner(2), key(9), S, &limits, &mut |_| waits += 1, &mut |_| {})
            .err()
            .expect("1222");
        assert!(started.elapsed() >= Duration::from_millis(30), "it waited its timeout");
        assert_eq!((error.number, error.state, waits), (1222, 51, 1));
        let error = manager
            .acquire(owner(2), object, IS, &limits, &mut |_| {}, &mut |_| {})
            .err()
            .expect("1222");
        assert_eq!((error.number, error.state), (1222, 56));
        let never = || WaitLimits { timeout: Some(Duration::ZERO), ..WaitLimits::default() };
        let mut waits = 0;
        let refused =
            manager.acquire(owner(3), key(9), S, &never, &mut |_| waits += 1, &mut |_| {});
        assert_eq!((refused.err().map(|e| e.number), waits), (Some(1222), 0));
        assert!(manager.requests_snapshot().iter().all(|r| r.status == RequestStatus::Grant));
        assert!(held_by(&manager, 2).is_empty() && held_by(&manager, 3).is_empty());
        manager.release_all(1, &held_by(&manager, 1));
        assert_eq!(entries_kept(&manager), 0, "no entry is left behind by the refused requests");
    }

    /// A waiter whose session is cancelled (ATTENTION, KILL) stops waiting within the
    /// deadlock-check interval and withdraws its request; the holder is untouched.
    #[test]
    fn a_cancelled_session_stops_waiting_for_its_lock() {
        let manager = std::sync::Arc::new(LockManager::default());
        assert!(lock(&manager, 1, key(4)).is_ok());
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancel.clone();
        let limits = move || WaitLimits { cancel: Some(flag.clone()), ..WaitLimits::default() };
        let other = std::sync::Arc::clone(&manager);
        let waiter = std::thread::spawn(move || {
            other.acquire(owner(2), key(4), X, &limits, &mut |_| {}, &mut |_| {}).err()
        });
        while !manager.requests_snapshot().iter().any(|r| r.status == RequestStatus::Wait) {
            std::thread::sleep(Duration::from_millis(1));
        }
        cancel.store(true, Ordering::Relaxed);
        let error = waiter.join().expect("the waiter").expect("cancelled");
        assert_eq!(error.number, crate::error::WAIT_CANCELLED);
        assert_eq!(manager.snapshot(), vec![(key(4), 1, 51, X)], "only the holder is left");
        manager.release_all(1, &held_by(&manager, 1));
    }

    /// SET DEADLOCK_PRIORITY decides the victim before the rollback cost does: the cheaper
    /// transaction survives when its session's priority is higher.
    #[test]
    fn a_higher_deadlock_priority_outranks_a_cheaper_rollback() {
        let manager = std::sync::Arc::new(LockManager::default());
        assert!(lock(&manager, 1, key(1)).is_ok());
        assert!(lock(&manager, 2, key(2)).is_ok());
        let high = || WaitLimits { deadlock_priority: 5, ..WaitLimits::default() };
        let other = std::sync::Arc::clone(&manager);
        let second = std::thread::spawn(move || {
            let result = lock(&other, 2, key(1));
            if result.is_err() {
                other.release_all(2, &held_by(&other, 2));
            }
            result.map(|_| ())
        });
        let first = manager.acquire(owner(1), key(2), X, &high, &mut |_| {}, &mut |_| {});
        let second = second.join().expect("the second session");
        assert!(first.is_ok(), "transaction 1 (cost 1, priority 5) is not the victim");
        assert_eq!(second.err().map(|e| e.number), Some(1205));
        manager.release_all(1, &held_by(&manager, 1));
    }
}
