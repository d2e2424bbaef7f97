//! The buffer pool: a fixed set of 8 KB frames (sized by max server memory), a page table, clock
//! replacement, dirty tracking, a lazy writer, and page latches whose waits are recorded as
//! PAGELATCH_* and PAGEIOLATCH_* (reference §6, §7).
//!
//! Every page the engine reads or changes after it is created goes through here, allocation
//! pages included: PFS, GAM, SGAM and IAM changes take UP latches, so two sessions that allocate
//! in the same file really wait for each other on the same PFS or GAM page.
//!
//! Page bytes are reachable only through a [`PageGuard`], which holds a latch and a pin and
//! releases both on drop. `read` gives the bytes to a closure; `write` (UP and EX guards only)
//! gives them mutably and marks the page dirty. A short reader-writer lock inside the frame
//! makes each closure memory-safe; the latch is what orders sessions, and what is waited on.
//! A commit reads a large inserted record from its page (mtr invariant 2) under that lock,
//! shared, while it takes the log's append lock: a frame's data lock comes before the log's,
//! and the log never calls back into the pool.
//!
//! Waits recorded, each measured around the real blocking:
//! - a session whose latch request is blocked by another holder: PAGELATCH_<mode>, or
//!   PAGEIOLATCH_<mode> if the page's read was in flight when it started to wait;
//! - the session that reads a page from disk: PAGEIOLATCH_<mode> for the read itself (as in
//!   SQL Server, where the reader waits on the I/O latch of its own read).
//!
//! Each wait also counts in latch class BUFFER and registers in the waiting-tasks list with
//! resource_description `db:file:page` while it lasts.
//!
//! A free frame was last used long ago, so the first writes of the page it takes next would
//! each miss the caches: each claim prefetches the next free frame's descriptor and buffer
//! ([`crate::prefetch`]; seed 002 fills a fresh frame per row).
//!
//! Write-back (lazy writer, a session that needs a frame, checkpoint) is SQL Server's gather
//! write: a dirty page goes out with the dirty pages next to it in its file, up to
//! [`GATHER_WRITE_PAGES`] (1 MB) in one write, unbuffered where the backend can
//! ([`crate::io::IoFile::write_gathered`]).
//!
//! Counters for Buffer Manager (sys.dm_os_performance_counters), each counted where its event
//! happens:
//! - page lookups: every [`BufferPool::fetch`], counted by each thread in a counter of its own
//!   (a plain store, no locked instruction on the hottest path), summed when read;
//! - lookup misses: the fetches that had to read their page from disk themselves (a page that
//!   read-ahead brought in is a hit, as in SQL Server); the hit ratio is the rest over lookups;
//! - free list stalls: the frame requests that found the free list empty and had to evict or
//!   write pages back before they got a frame;
//! - page life expectancy: how long the clock hand took for its last full sweep of the frames,
//!   or how long its current sweep has lasted if that is longer (no pressure: it grows by a
//!   second a second). A page referenced just now keeps its frame until the hand has passed it
//!   twice, once to clear its reference bit and once to evict it, so one sweep is the least time
//!   an unreferenced page stays: SQL Server's definition of the counter.
//!
//! The page table is SQL Server's buffer hash table: [`PAGE_TABLE_BUCKETS`] buckets, each a map
//! under a spinlock of its own, all counted as BUF_HASH in sys.dm_os_spinlock_stats. A lookup
//! locks only its page's bucket, so two sessions collide only when their pages hash together.
//! Lock order: a bucket, then the free list, then a frame's meta lock; the clock sweep, which
//! finds its victim under the meta lock, only tries the victim's bucket and passes the frame
//! by if the bucket is busy.
//!
//! Frame hints: each thread remembers the frames it last found its SH- and UP-latched pages in
//! (the index pages of a descent, the PFS page), and looks there first: the frame's meta lock
//! confirms that it still holds the page and pins it, with no page-table lookup. A stale hint
//! (the page left the pool, the frame holds another) falls back to the table.
//!
//! Deviations: reads and writes are synchronous pread/pwrite on the calling thread, not
//! asynchronous I/O completed by another thread; the waits are the same time. In fiber mode a
//! read (and a read-ahead) that the OS cannot serve from its cache at once runs on an I/O
//! thread while the fiber parks in its PAGEIOLATCH wait ([`crate::fiber::IoThreads`]), so that
//! its scheduler's other fibers run, as an asynchronous read lets SQL Server's; its page then
//! costs one 8 KB copy into the frame. A fiber's own write-backs stay on its thread: moved to
//! the I/O threads (from a copy of the pages) they cost more than the overlap gave
//! (docs/benchmarks.md, thirty-second session). A latch request that only the requester's own
//! hold blocks is error 845 at once, where SQL Server's wait ends at its 300 s latch timeout.
//! SQL Server computes its hit ratio over the last few thousand lookups and estimates page life
//! expectancy from the rate of buffer turnover; here the ratio is over every lookup since the
//! pool started, and the life expectancy is read off the clock hand. A fetch served by a frame
//! hint takes no BUF_HASH spinlock, so BUF_HASH counts fewer acquisitions than SQL Server's
//! table would (which, as far as is documented, is searched on every page access); the hint
//! saves two sessions on two CPUs passing the bucket's line to each other for every root and
//! index page of every descent.
//!
//! Latch order (to avoid latch deadlocks), owned here and followed by callers:
//! 1. Allocation pages: at most PFS, then SGAM, then GAM of the same file, nested in that order.
//! 2. IAM pages are latched alone. Data and index pages come before allocation pages.
//! 3. A session that must evict pages to get a frame never waits for a latch: it writes only
//!    unpinned pages it can latch at once.
//! 4. An open mini-transaction keeps the latches of the pages it changed until it commits
//!    ([`crate::log::mtr`]); allocation steps run as nested top actions that commit at once, so
//!    allocation-page latches are never kept while data pages are latched afterwards.
//!
//! Logging: with the database's log registered, [`PageGuard::write`] records the change (XOR
//! of old and new bytes) in the open mtr, or in one of its own; at commit the page is stamped
//! with its group's LSN. Write-back flushes the log up to a page's LSN before writing it (the
//! WAL rule, asserted at the write path).
//!
//! Invariants:
//! 1. A frame with a pin count above 0 is never evicted or reused.
//! 2. A page is modified only under an UP or EX latch, and a write-back holds UP, so the bytes
//!    written are never being changed.
//! 3. Every page read from disk is verified (checksum, page id, structure audit: page
//!    invariant 4) before any guard sees it.
//! 4. A session never waits for a latch it holds itself (latch invariant 4): such a request,
//!    and a new page that the session's open mtr holds, are error 845 at once. Only corrupt
//!    allocation maps lead there.

use crate::datapage;
use crate::error::{SqlError, SqlResult};
use crate::file;
use crate::io::IoFile;
use crate::latch::{Latch, LatchMode};
use crate::log::LogManager;
use crate::log::lsn::Lsn;
use crate::log::mtr::{self, PageChange};
use crate::log::record::{Context, LogRecord, Operation};
use crate::page::PageBuf;
use crate::spinlock::SpinMutex;
use crate::units::{PAGE_HEADER_SIZE, PAGE_SIZE_U64, PageId};
use crate::waits::{LatchStats, SpinlockStats, WaitStats, WaitingTasks};
use crossbeam_utils::CachePadded;
use crossbeam_utils::sync::ShardedLock;
use parking_lot::{Condvar, Mutex, RwLock};
// Page keys are small integers chosen by the engine: FxHash, not SipHash's DoS resistance.
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use thread_local::ThreadLocal;

/// A page of a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageKey {
    pub database_id: u16,
    pub page: PageId,
}

impl PageKey {
    pub fn new(database_id: u16, page: PageId) -> PageKey {
        PageKey { database_id, page }
    }

    /// The page as a wait names it (sys.dm_exec_requests.page_resource, wait_resource).
    pub fn page_resource(&self) -> crate::waits::PageResource {
        crate::waits::PageResource {
            database_id: self.database_id,
            file_id: self.page.file_id,
            page_id: self.page.page_no,
        }
    }
}

/// A file the pool reads pages from and writes them to.
pub struct BufferFile {
    pub handle: Box<dyn IoFile>,
    pub path: String,
}

#[derive(Default)]
struct FrameMeta {
    key: Option<PageKey>,
    pin_count: u32,
    dirty: bool,
    referenced: bool,
}

#[derive(Default)]
struct Frame {
    latch: Latch,
    io_in_progress: AtomicBool,
    /// The frame lost its page while others held pins (its read failed, or its file was
    /// dropped): it returns to the free list when the last pin goes. Written under the meta
    /// lock; read without it by a session that has just latched the frame, since a pinned
    /// frame changes page only by being orphaned.
    orphaned: AtomicBool,
    /// How long the read that brought the frame's page in took, in µs (0 for a page created
    /// in memory): sys.dm_os_buffer_descriptors.read_microsec. Set when a read completes.
    read_us: AtomicU64,
    /// The frame's buffer, taken from the pool's buffers on first use.
    data: RwLock<Option<&'static mut PageBuf>>,
    /// Where that buffer is (0 before its first use): read without the data lock, only to
    /// prefetch a free frame's memory ([`BufferPool::prefetch_free_frames`]).
    buffer_addr: AtomicUsize,
    meta: Mutex<FrameMeta>,
}

/// One page in the pool ([`BufferPool::descriptors`]): sys.dm_os_buffer_descriptors' row.
#[derive(Clone, Debug)]
pub struct BufferDescriptor {
    pub key: PageKey,
    /// The page's header as the frame holds it now.
    pub header: crate::page::PageHeader,
    /// Changed since it was read (or created): not yet written.
    pub is_modified: bool,
    /// How long the read that brought it in took, in µs (0: created in memory).
    pub read_us: u64,
}

/// Latch waits on one page (the "hottest pages" of `bench insert`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageWaitRow {
    pub key: PageKey,
    pub wait_type: &'static str,
    pub waiting_tasks_count: u64,
    pub wait_time_us: u64,
}

/// (waiting_tasks_count, wait time in µs) of one wait type on one page.
type PageWaitCell = (u64, u64);

/// I/O counters of the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferCounters {
    pub page_reads: u64,
    pub page_writes: u64,
    pub evictions: u64,
    pub lazy_writer_writes: u64,
    /// Pages written by checkpoints and other whole-database flushes (Checkpoint pages/sec).
    pub checkpoint_pages: u64,
    /// 8 KB buffers allocated: at most one per frame, ever.
    pub buffers_allocated: u64,
    /// Pages asked of the pool (Page lookups/sec, Buffer cache hit ratio base).
    pub page_lookups: u64,
    /// Lookups that read their page from disk: the hit ratio's misses.
    pub lookup_misses: u64,
    /// Frame requests that found the free list empty (Free list stalls/sec).
    pub free_list_stalls: u64,
    /// Full sweeps of the clock hand over the frames (each ends a page life expectancy).
    pub clock_sweeps: u64,
}

/// The shared statistics a pool records into.
#[derive(Clone)]
pub struct PoolStats {
    pub waits: Arc<WaitStats>,
    pub latches: Arc<LatchStats>,
    pub waiting: Arc<WaitingTasks>,
    pub spinlocks: Arc<SpinlockStats>,
    /// The instance's system tasks (the lazy writer is one), recording into `waits`.
    pub system_tasks: Arc<crate::system_tasks::SystemTasks>,
}

impl Default for PoolStats {
    fn default() -> PoolStats {
        let waits = Arc::new(WaitStats::default());
        let waiting = Arc::new(WaitingTasks::default());
        let system_tasks = crate::system_tasks::SystemTasks::new(waits.clone(), waiting.clone());
        PoolStats {
            waits,
            latches: Arc::default(),
            waiting,
            spinlocks: Arc::default(),
            system_tasks: Arc::new(system_tasks),
        }
    }
}

/// Buckets of the page table. A power of two, so that a key's bucket is the top bits of its
/// hash.
pub const PAGE_TABLE_BUCKETS: usize = 64;

/// A database's bit in its word of [`BufferPool`]'s `logged` bitmap.
fn logged_bit(database_id: u16) -> u64 {
    1 << (database_id % 64)
}

/// What [`BufferPool::pin_hinted`] found.
enum Pinned {
    /// The hinted frame holds the page and is now pinned.
    Pinned(usize),
    /// The hinted frame holds the page, and this session's open mtr holds its latch.
    HeldByMtr(usize, LatchMode),
}

/// Each thread's memory of the frames it found its shared-latched pages in (index and root
/// pages, the PFS page), so that its next fetch of one skips the page table. A hint is only a
/// guess: [`BufferPool::pin_hinted`] checks the frame's page under the frame's meta lock. Pages
/// latched EX (leaves being changed, new pages) are not remembered: they would push the hot
/// upper levels out of this small direct-mapped table.
mod frame_hints {
    use super::PageKey;
    use std::cell::Cell;

    /// Slots in each thread's table (direct-mapped by page number).
    const SLOTS: usize = 256;

    /// An empty slot (no frame has index u32::MAX).
    const EMPTY: (PageKey, u32) =
        (PageKey { database_id: 0, page: crate::units::PageId::NULL }, u32::MAX);

    thread_local! {
        static HINTS: [Cell<(PageKey, u32)>; SLOTS] = const { [const { Cell::new(EMPTY) }; SLOTS] };
    }

    fn slot(key: PageKey) -> usize {
        let bits = u64::from(key.page.page_no)
            ^ (u64::from(key.page.file_id) << 20)
            ^ (u64::from(key.database_id) << 36);
        (bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % SLOTS
    }

    pub(super) fn remember(key: PageKey, index: usize) {
        let Ok(index) = u32::try_from(index) else { return };
        HINTS.with(|hints| hints[slot(key)].set((key, index)));
    }

    pub(super) fn recall(key: PageKey) -> Option<usize> {
        let (hinted, index) = HINTS.with(|hints| hints[slot(key)].get());
        (hinted == key && index != u32::MAX).then_some(index as usize)
    }
}

/// The page table: page key to frame index, in [`PAGE_TABLE_BUCKETS`] buckets, each a map under
/// a BUF_HASH spinlock of its own (on its own cache line), as SQL Server's buffer hash buckets
/// each have theirs.
struct PageTable {
    buckets: Box<[CachePadded<Bucket>]>,
}

/// One bucket of the page table: its pages' frames, under its BUF_HASH spinlock.
type Bucket = SpinMutex<HashMap<PageKey, usize>>;

impl PageTable {
    fn new(spinlocks: &SpinlockStats) -> PageTable {
        let buckets = (0..PAGE_TABLE_BUCKETS)
            .map(|_| CachePadded::new(SpinMutex::new(HashMap::default(), "BUF_HASH", spinlocks)))
            .collect();
        PageTable { buckets }
    }

    /// The bucket of `key`: Fibonacci hashing of the key's 64 bits (database, file, page), so
    /// that neighbouring pages land in different buckets.
    fn bucket(&self, key: &PageKey) -> &Bucket {
        let bits = (u64::from(key.database_id) << 48)
            | (u64::from(key.page.file_id) << 32)
            | u64::from(key.page.page_no);
        let shift = 64 - PAGE_TABLE_BUCKETS.trailing_zeros();
        &self.buckets[(bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize]
    }

    /// The frame holding `key`, if any.
    fn get(&self, key: &PageKey) -> Option<usize> {
        self.bucket(key).lock().get(key).copied()
    }

    /// Pages mapped, over all buckets (each counted under its own lock: a moment's view).
    fn len(&self) -> usize {
        self.buckets.iter().map(|bucket| bucket.lock().len()).sum()
    }

    fn buckets(&self) -> impl Iterator<Item = &Bucket> {
        self.buckets.iter().map(|bucket| &**bucket)
    }
}

pub struct BufferPool {
    frames: Box<[Frame]>,
    /// The page table: buckets, each under its own BUF_HASH spinlock.
    table: PageTable,
    free: Mutex<Vec<usize>>,
    clock_hand: Mutex<ClockHand>,
    files: RwLock<HashMap<(u16, u16), Arc<BufferFile>>>,
    stats: PoolStats,
    page_waits: Mutex<HashMap<(PageKey, &'static str), PageWaitCell>>,
    page_reads: AtomicU64,
    page_writes: AtomicU64,
    /// Pages installed by read-ahead.
    read_ahead_pages: AtomicU64,
    evictions: AtomicU64,
    /// Page lookups, each thread adding to its own counter alone (so a relaxed load and store,
    /// not a locked add); a thread that ends leaves its count for the next thread to take its
    /// slot. Padded to a cache line each, so two threads' counters never share one.
    page_lookups: ThreadLocal<CachePadded<AtomicU64>>,
    lookup_misses: AtomicU64,
    free_list_stalls: AtomicU64,
    lazy_writer_writes: AtomicU64,
    /// Pages written by flushes of a whole database or file (checkpoints, close, shrink).
    checkpoint_pages: AtomicU64,
    buffers_allocated: AtomicU64,
    /// Every buffer's memory was committed at startup, in huge pages (trace flag 834).
    committed_at_start: bool,
    /// Buffers no frame has used yet ([`crate::pool_memory`]): one per frame at the start,
    /// each with whether its bytes are known to be zero.
    unused_buffers: Mutex<Vec<crate::pool_memory::Buffer>>,
    lazy_writer: (Mutex<bool>, Condvar),
    /// The threads that read pages for fibers (fiber mode), on the 'affinity I/O mask' CPUs.
    fiber_io: crate::fiber::IoThreads,
    /// Test seam: microseconds a PFS change sleeps while it holds the PFS page's UP latch,
    /// standing in for a slower CPU or a preempted latch holder (0 = none).
    pfs_latch_hold_us: AtomicU64,
    /// Each database's log: page changes are logged to it, and a page is written only after
    /// its log records are durable (WAL). A database with no log registered (while it is being
    /// created or recovered) changes pages without logging.
    /// Read by every logged page change: a lock sharded per thread, so that readers on different
    /// cores do not pass one lock word between them.
    logs: ShardedLock<HashMap<u16, Arc<LogManager>>>,
    /// One bit per database id: its log is registered. Every page change asks (two or three
    /// times a row), so the answer is a load of a line nobody writes, not a lock.
    logged: Box<[AtomicU64]>,
}

impl Drop for BufferPool {
    /// The frames' buffers go back to [`crate::pool_memory`] for the next pool.
    fn drop(&mut self) {
        let used = self.frames.iter_mut().filter_map(|frame| frame.data.get_mut().take());
        let unused = self.unused_buffers.get_mut().drain(..).map(|(buffer, _)| buffer);
        crate::pool_memory::give_back(used.chain(unused));
    }
}

/// The clock replacement's hand, and the times of its sweeps (page life expectancy).
struct ClockHand {
    /// The next frame the hand looks at.
    index: usize,
    /// When the hand last passed the first frame, or the pool started.
    sweep_started: Instant,
    /// How long the last full sweep took; none before the first one ends.
    last_sweep: Option<Duration>,
    /// Full sweeps so far.
    sweeps: u64,
}

impl ClockHand {
    fn new() -> ClockHand {
        ClockHand { index: 0, sweep_started: Instant::now(), last_sweep: None, sweeps: 0 }
    }

    /// Moves the hand one frame on; returns the frame it was at. Passing the first frame ends a
    /// sweep.
    fn advance(&mut self, frames: usize) -> usize {
        let at = self.index;
        self.index = (at + 1) % frames;
        if self.index == 0 {
            let now = Instant::now();
            self.last_sweep = Some(now.saturating_duration_since(self.sweep_started));
            self.sweep_started = now;
            self.sweeps += 1;
        }
        at
    }
}

/// Frames below which the lazy writer starts working: 1/16 of the pool, at least 2.
fn low_water(frames: usize) -> usize {
    (frames / 16).max(2)
}

/// Smallest pool: enough for the pages one operation holds at once.
pub const MIN_FRAMES: usize = 16;
/// How many times a fetch may find every frame pinned or dirty before it reports error 802.
const MAX_EVICTION_ROUNDS: u32 = 64;

/// The most pages one gathered write-back takes: SQL Server 2016+ (x64) gathers up to 128
/// consecutive dirty pages, 1 MB, for the lazy writer and checkpoint (reference §7).
pub const GATHER_WRITE_PAGES: usize = 128;

impl BufferPool {
    /// Test seam: every page allocation then holds its PFS latch at least `hold_us`
    /// microseconds longer. Waits it causes are real waits of other sessions on that latch.
    pub fn set_pfs_latch_hold_us(&self, hold_us: u64) {
        self.pfs_latch_hold_us.store(hold_us, Ordering::Relaxed);
    }

    /// Sleeps for the PFS hold set by [`BufferPool::set_pfs_latch_hold_us`], if any.
    pub(crate) fn hold_pfs_latch(&self) {
        let hold_us = self.pfs_latch_hold_us.load(Ordering::Relaxed);
        if hold_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(hold_us));
        }
    }

    /// A pool of `frames` frames (max server memory / 8 KB) with its lazy writer thread; their
    /// memory is committed as each frame is first used.
    pub fn new(frames: usize, stats: PoolStats) -> Arc<BufferPool> {
        BufferPool::start(frames, stats, false, Vec::new())
    }

    /// A pool whose memory is committed now, in huge pages, when `commit_now` (trace flag 834's
    /// large-page buffer pool, allocated at startup), else as frames are first used. Its lazy
    /// writer runs on `io_cpus` ('affinity I/O mask'; empty: where the OS places it).
    pub fn start(
        frames: usize,
        stats: PoolStats,
        commit_now: bool,
        io_cpus: Vec<usize>,
    ) -> Arc<BufferPool> {
        let frames = frames.max(MIN_FRAMES);
        let mut buffers = crate::pool_memory::take(frames, commit_now);
        if commit_now {
            crate::pool_memory::commit(&mut buffers);
        }
        let pool = Arc::new(BufferPool {
            frames: (0..frames).map(|_| Frame::default()).collect(),
            // Grows with the pages cached: sized for every frame, it spread a small working
            // set's entries over more cache lines, and each lookup missed.
            table: PageTable::new(&stats.spinlocks),
            free: Mutex::new((0..frames).rev().collect()),
            clock_hand: Mutex::new(ClockHand::new()),
            files: RwLock::new(HashMap::default()),
            stats,
            page_waits: Mutex::new(HashMap::default()),
            page_reads: AtomicU64::new(0),
            page_writes: AtomicU64::new(0),
            read_ahead_pages: AtomicU64::new(0),
            pfs_latch_hold_us: AtomicU64::new(0),
            logs: ShardedLock::new(HashMap::default()),
            logged: (0..(1usize << 16) / 64).map(|_| AtomicU64::new(0)).collect(),
            evictions: AtomicU64::new(0),
            page_lookups: ThreadLocal::new(),
            lookup_misses: AtomicU64::new(0),
            free_list_stalls: AtomicU64::new(0),
            lazy_writer_writes: AtomicU64::new(0),
            checkpoint_pages: AtomicU64::new(0),
            buffers_allocated: AtomicU64::new(0),
            committed_at_start: commit_now,
            unused_buffers: Mutex::new(buffers),
            lazy_writer: (Mutex::new(false), Condvar::new()),
            fiber_io: crate::fiber::IoThreads::new(io_cpus.clone()),
        });
        let weak = Arc::downgrade(&pool);
        let identity = crate::system_tasks::TaskIdentity {
            session_id: crate::system_tasks::LAZY_WRITER_SPID,
            command: "LAZY WRITER",
            database_id: 0,
            queue_wait: Some(crate::system_tasks::LAZYWRITER_SLEEP),
        };
        let listed = crate::system_tasks::register(&pool.stats.system_tasks, identity);
        std::thread::Builder::new()
            .name("extentdb-lazywriter".into())
            .spawn(move || {
                crate::affinity::bind_io_thread(&io_cpus);
                listed.run(|| lazy_writer_loop(&weak))
            })
            .expect("the lazy writer thread starts");
        pool
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Whether the pool's memory was committed at startup in huge pages (trace flag 834).
    pub fn in_large_pages(&self) -> bool {
        self.committed_at_start
    }

    /// Bytes of memory the pool has committed: every frame's buffer when committed at
    /// startup, else the buffers frames have taken so far (sys.dm_os_sys_info.committed_kb).
    pub fn committed_bytes(&self) -> u64 {
        let buffers = if self.committed_at_start {
            self.frames.len() as u64
        } else {
            self.buffers_allocated.load(Ordering::Relaxed)
        };
        buffers * crate::units::PAGE_SIZE as u64
    }

    /// Pages the pool holds now (Buffer Manager's Database pages).
    pub fn cached_pages(&self) -> usize {
        self.table.len()
    }

    pub fn free_frames(&self) -> usize {
        self.free.lock().len()
    }

    pub fn counters(&self) -> BufferCounters {
        BufferCounters {
            page_reads: self.page_reads.load(Ordering::Relaxed),
            page_writes: self.page_writes.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            lazy_writer_writes: self.lazy_writer_writes.load(Ordering::Relaxed),
            checkpoint_pages: self.checkpoint_pages.load(Ordering::Relaxed),
            buffers_allocated: self.buffers_allocated.load(Ordering::Relaxed),
            page_lookups: self.page_lookups.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
            lookup_misses: self.lookup_misses.load(Ordering::Relaxed),
            free_list_stalls: self.free_list_stalls.load(Ordering::Relaxed),
            clock_sweeps: self.clock_hand.lock().sweeps,
        }
    }

    /// Page life expectancy at `now`: the clock hand's last full sweep, or its current one if
    /// that has lasted longer (see the module header).
    pub fn page_life_expectancy(&self, now: Instant) -> Duration {
        let hand = self.clock_hand.lock();
        let current = now.saturating_duration_since(hand.sweep_started);
        hand.last_sweep.unwrap_or_default().max(current)
    }

    /// Counts a lookup on this thread's own counter (only this thread writes it).
    fn count_lookup(&self) {
        let mine = self.page_lookups.get_or_default();
        mine.store(mine.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// From now on, changes to the database's pages are logged to `log`.
    pub fn register_log(&self, database_id: u16, log: Arc<LogManager>) {
        let mut logs = self.logs.write().expect("the log map is never poisoned");
        logs.insert(database_id, log);
        self.logged_word(database_id).fetch_or(logged_bit(database_id), Ordering::Release);
    }

    pub fn unregister_log(&self, database_id: u16) {
        let mut logs = self.logs.write().expect("the log map is never poisoned");
        logs.remove(&database_id);
        self.logged_word(database_id).fetch_and(!logged_bit(database_id), Ordering::Release);
    }

    fn logged_word(&self, database_id: u16) -> &AtomicU64 {
        &self.logged[usize::from(database_id) / 64]
    }

    fn log_of(&self, database_id: u16) -> Option<Arc<LogManager>> {
        self.logs.read().expect("the log map is never poisoned").get(&database_id).cloned()
    }

    /// Whether a database's page changes are logged (its log is registered).
    fn is_logged(&self, database_id: u16) -> bool {
        self.logged_word(database_id).load(Ordering::Acquire) & logged_bit(database_id) != 0
    }

    pub fn register_file(&self, database_id: u16, file_id: u16, file: Arc<BufferFile>) {
        self.files.write().insert((database_id, file_id), file);
    }

    /// Forgets a file and every cached page of it (its dirty pages are dropped, not written).
    pub fn unregister_file(&self, database_id: u16, file_id: u16) {
        self.discard(database_id, Some(file_id), 0);
        self.files.write().remove(&(database_id, file_id));
    }

    fn file(&self, key: PageKey) -> SqlResult<Arc<BufferFile>> {
        self.files
            .read()
            .get(&(key.database_id, key.page.file_id))
            .cloned()
            .ok_or_else(|| SqlError::new(5180, 22, 1, format!(
                "Could not open File Control Bank (FCB) for invalid file ID {} in database '{}'. Verify the file location. Execute DBCC CHECKDB.",
                key.page.file_id, key.database_id
            )))
    }

    /// The guard of a frame this session has just pinned and latched in `mode`.
    fn guard(&self, index: usize, mode: LatchMode, key: PageKey, spid: u16) -> PageGuard<'_> {
        PageGuard {
            pool: self,
            index,
            mode,
            key,
            spid,
            fresh: std::cell::Cell::new(false),
            body_zero: std::cell::Cell::new(false),
            borrowed: false,
        }
    }

    /// Latches a page in `mode`, reading it from disk if it is not cached.
    pub fn fetch(&self, key: PageKey, mode: LatchMode) -> SqlResult<PageGuard<'_>> {
        self.count_lookup();
        for _ in 0..MAX_EVICTION_ROUNDS {
            if let Some(guard) = self.fetch_cached(key, mode)? {
                Self::count_read(&guard, false);
                return Ok(guard);
            }
            if let Some(index) = self.claim_frame(key)? {
                self.lookup_misses.fetch_add(1, Ordering::Relaxed);
                let guard = self.load(index, key, mode)?;
                Self::count_read(&guard, true);
                return Ok(guard);
            }
        }
        Err(insufficient_memory())
    }

    /// [`BufferPool::fetch`] of a page that is cached; None, with no read, when it is not (a
    /// hint's page: the caller has another way to it).
    pub fn fetch_if_cached(
        &self,
        key: PageKey,
        mode: LatchMode,
    ) -> SqlResult<Option<PageGuard<'_>>> {
        self.count_lookup();
        let guard = self.fetch_cached(key, mode)?;
        if let Some(guard) = &guard {
            Self::count_read(guard, false);
        }
        Ok(guard)
    }

    /// SET STATISTICS IO's counts ([`crate::iostats`]): a logical read of the fetched page,
    /// and a physical one if the fetch read it from disk.
    fn count_read(guard: &PageGuard<'_>, physical: bool) {
        crate::iostats::count_fetch(physical);
        if !crate::iostats::is_counting() {
            return;
        }
        let au_id = guard.read(|buf| crate::page::PageHeader::read(&buf[..]).allocation_unit_id());
        let database_id = guard.key().database_id;
        crate::iostats::note_logical(database_id, au_id);
        if physical {
            crate::iostats::note_physical(database_id, au_id);
        }
    }

    /// Latches a page that is being created: no read, the bytes start zeroed, the page is dirty.
    pub fn new_page(&self, key: PageKey) -> SqlResult<PageGuard<'_>> {
        for _ in 0..MAX_EVICTION_ROUNDS {
            if let Some(guard) = self.fetch_cached(key, LatchMode::Ex)? {
                if guard.borrowed {
                    // This session's mtr holds the page: it is in use, whatever the allocation
                    // maps said (latch invariant 4's case, met without a wait).
                    return Err(latch_timeout(key, LatchMode::Ex));
                }
                // Not logged: the first logged change of a new page is a format record, whose
                // redo starts from zeros.
                self.frames[guard.index].data.write().as_mut().expect("latched").fill(0);
                self.frames[guard.index].meta.lock().dirty = true;
                guard.fresh.set(true);
                guard.body_zero.set(true);
                return Ok(guard);
            }
            if let Some(index) = self.claim_frame(key)? {
                let frame = &self.frames[index];
                let mut data = frame.data.write();
                match data.as_mut() {
                    Some(buf) => buf.fill(0),
                    None => {
                        // A frame's first use: a buffer fresh from the kernel is zero already.
                        let (buf, zeroed) = self.new_zeroable_buffer(frame);
                        if !zeroed {
                            buf.fill(0);
                        }
                        *data = Some(buf);
                    }
                }
                drop(data);
                frame.meta.lock().dirty = true;
                frame.io_in_progress.store(false, Ordering::Release);
                let guard = self.guard(index, LatchMode::Ex, key, crate::instance::current_spid());
                guard.fresh.set(true);
                guard.body_zero.set(true);
                return Ok(guard);
            }
        }
        Err(insufficient_memory())
    }

    /// The cached frame of `key`, pinned and latched; None if not cached.
    fn fetch_cached(&self, key: PageKey, mode: LatchMode) -> SqlResult<Option<PageGuard<'_>>> {
        let index = match self.pin_hinted(key) {
            Some(Pinned::Pinned(index)) => index,
            Some(Pinned::HeldByMtr(index, held_mode)) => {
                return Ok(Some(self.borrowed(index, key, held_mode)));
            }
            None => {
                let table = self.table.bucket(&key).lock();
                let Some(index) = table.get(&key).copied() else { return Ok(None) };
                if let Some(held_mode) = mtr::held_mode(index) {
                    // This session's open mtr still holds the page: use its latch.
                    drop(table);
                    return Ok(Some(self.borrowed(index, key, held_mode)));
                }
                {
                    let mut meta = self.frames[index].meta.lock();
                    meta.pin_count += 1;
                    meta.referenced = true;
                }
                drop(table);
                if mode != LatchMode::Ex {
                    frame_hints::remember(key, index);
                }
                index
            }
        };
        let frame = &self.frames[index];
        let spid = crate::instance::current_spid();
        if let Err(error) = self.latch_frame(index, key, mode, spid) {
            self.unpin(index);
            return Err(error);
        }
        if frame.orphaned.load(Ordering::Acquire) {
            // The page's read failed while we waited (or its file was dropped); its frame was
            // given back. Start again.
            frame.latch.release(mode, spid);
            self.unpin(index);
            return Ok(None);
        }
        Ok(Some(self.guard(index, mode, key, spid)))
    }

    /// The frame this thread last found `key` in, pinned, if it still holds the page: the
    /// frame's meta lock alone orders this with eviction (which unmaps a frame under that lock,
    /// and only when it is unpinned), so the page table and its BUF_HASH spinlock are not
    /// needed (see the module header's deviations). None if there is no hint or it is stale.
    fn pin_hinted(&self, key: PageKey) -> Option<Pinned> {
        let index = frame_hints::recall(key).filter(|index| *index < self.frames.len())?;
        let mut meta = self.frames[index].meta.lock();
        // An orphaned frame has no page (its key is cleared under this lock as it is orphaned),
        // so the key alone says whether the hint holds.
        if meta.key != Some(key) {
            return None;
        }
        if let Some(held_mode) = mtr::held_mode(index) {
            return Some(Pinned::HeldByMtr(index, held_mode));
        }
        meta.pin_count += 1;
        meta.referenced = true;
        Some(Pinned::Pinned(index))
    }

    /// A guard over a page this session's open mtr holds latched already: it uses that latch.
    fn borrowed(&self, index: usize, key: PageKey, held_mode: LatchMode) -> PageGuard<'_> {
        let mut guard = self.guard(index, held_mode, key, crate::instance::current_spid());
        guard.borrowed = true;
        guard
    }

    /// Acquires a frame's latch, recording the wait if there was one. Error 845 when this
    /// thread holds the latch itself in a mode that blocks the request (latch invariant 4):
    /// that wait would never end, where SQL Server's ends at its latch timeout with 845.
    fn latch_frame(&self, index: usize, key: PageKey, mode: LatchMode, spid: u16) -> SqlResult<()> {
        let frame = &self.frames[index];
        let mut wait_type = mode.pagelatch_wait();
        let mut registration = None;
        let waited = frame.latch.acquire(mode, spid, |blocking| {
            if frame.io_in_progress.load(Ordering::Acquire) {
                wait_type = mode.pageiolatch_wait();
            }
            registration =
                Some(self.stats.waiting.begin_page(spid, wait_type, blocking, key.page_resource()));
        });
        drop(registration);
        match waited {
            Ok(Some(wait)) => self.record_wait(key, wait_type, wait.waited, wait.signal),
            Ok(None) => {}
            Err(_) => return Err(latch_timeout(key, mode)),
        }
        Ok(())
    }

    fn record_wait(
        &self,
        key: PageKey,
        wait_type: &'static str,
        waited: Duration,
        signal: Duration,
    ) {
        self.stats.waits.record(wait_type, waited, signal);
        self.stats.latches.record("BUFFER", waited);
        let mut page_waits = self.page_waits.lock();
        let cell = page_waits.entry((key, wait_type)).or_default();
        cell.0 += 1;
        cell.1 += u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
    }

    /// Claims a frame for `key`: maps it, pins it, latches it EX and marks its I/O in progress.
    /// None if another session mapped the page meanwhile (the caller retries the cached path).
    fn claim_frame(&self, key: PageKey) -> SqlResult<Option<usize>> {
        let index = self.free_frame()?;
        let mut table = self.table.bucket(&key).lock();
        if table.contains_key(&key) {
            self.free.lock().push(index);
            return Ok(None);
        }
        let frame = &self.frames[index];
        *frame.meta.lock() =
            FrameMeta { key: Some(key), pin_count: 1, dirty: false, referenced: true };
        frame.read_us.store(0, Ordering::Relaxed); // a new page is not read; a read sets it
        frame.io_in_progress.store(true, Ordering::Release);
        let spid = crate::instance::current_spid();
        assert!(frame.latch.try_acquire(LatchMode::Ex, spid), "a free frame has no latch holder");
        table.insert(key, index);
        Ok(Some(index))
    }

    /// Reads a claimed frame's page from disk and hands it over latched in `mode`.
    fn load(&self, index: usize, key: PageKey, mode: LatchMode) -> SqlResult<PageGuard<'_>> {
        let frame = &self.frames[index];
        let spid = crate::instance::current_spid();
        let io_wait = mode.pageiolatch_wait();
        let started = Instant::now();
        let registration = self.stats.waiting.begin_page(spid, io_wait, None, key.page_resource());
        let suspended = crate::scheduler::suspend();
        let result = self.read_from_disk(key, frame);
        drop(registration);
        let signal = suspended.resume();
        self.record_wait(key, io_wait, started.elapsed(), signal);
        match result {
            Ok(()) => {
                frame.read_us.store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                self.page_reads.fetch_add(1, Ordering::Relaxed);
                frame.io_in_progress.store(false, Ordering::Release);
                if mode != LatchMode::Ex {
                    frame.latch.downgrade(mode, spid);
                }
                Ok(self.guard(index, mode, key, spid))
            }
            Err(error) => {
                self.abandon_frame(index, key, spid);
                Err(error)
            }
        }
    }

    /// Read-ahead (reference §6.3): reads `count` contiguous pages of one file from `first`
    /// in a single I/O and installs the ones that are not cached. Cached pages at either end
    /// are trimmed from the read; a cached page inside it is read but its bytes are dropped.
    /// Each installed page is verified as a normal read verifies it; one that fails is left
    /// out, so that the normal read reports it when the scan gets there. While the read is in
    /// flight the pages' frames are latched EX with their I/O in progress, so a session that
    /// wants one waits PAGEIOLATCH. Returns the pages installed.
    pub fn read_ahead(&self, database_id: u16, first: PageId, count: u32) -> SqlResult<u32> {
        let page = |page_no: u32| PageKey::new(database_id, PageId::new(first.file_id, page_no));
        let cached = |page_no: u32| self.table.get(&page(page_no)).is_some();
        let (mut lo, mut hi) = (first.page_no, first.page_no + count);
        while lo < hi && cached(lo) {
            lo += 1;
        }
        while hi > lo && cached(hi - 1) {
            hi -= 1;
        }
        if lo == hi {
            return Ok(0);
        }
        let file = self.file(page(lo))?;
        let mut claimed = Vec::new();
        for page_no in lo..hi {
            match self.claim_frame(page(page_no)) {
                Ok(Some(index)) => claimed.push((page_no, index)),
                Ok(None) => {}
                Err(_) => break, // no free frame: read what was claimed
            }
        }
        let offset = u64::from(lo) * crate::units::PAGE_SIZE as u64;
        let started = Instant::now();
        // A fiber reads a run the OS has cached at once, and has an I/O thread read any other
        // while it parks ([`crate::fiber::IoThreads`]); a thread reads it itself.
        let mut bytes = vec![0u8; (hi - lo) as usize * crate::units::PAGE_SIZE];
        let cached = crate::fiber::on_fiber() && file.handle.read_at_if_cached(&mut bytes, offset);
        let (bytes, read) = if cached {
            (bytes, Ok(()))
        } else {
            self.fiber_io.run(move || {
                let read = file.handle.read_at(&mut bytes, offset);
                (bytes, read)
            })
        };
        // Every page of the run took the run's read (as each of SQL Server's read-ahead
        // buffers records the whole I/O's time).
        let read_us = started.elapsed().as_micros() as u64;
        let spid = crate::instance::current_spid();
        let mut installed = 0;
        for (page_no, index) in claimed {
            let frame = &self.frames[index];
            let at = (page_no - lo) as usize * crate::units::PAGE_SIZE;
            let good = read.is_ok() && {
                let mut data = frame.data.write();
                let buf = data.get_or_insert_with(|| self.new_buffer(frame));
                buf.copy_from_slice(&bytes[at..at + crate::units::PAGE_SIZE]);
                crate::page::verify(buf, PageId::new(first.file_id, page_no)).is_ok()
            };
            if good {
                installed += 1;
                crate::iostats::count_read_ahead(1);
                if crate::iostats::is_counting() {
                    let page_bytes = &bytes[at..at + crate::units::PAGE_SIZE];
                    let au_id = crate::page::PageHeader::read(page_bytes).allocation_unit_id();
                    crate::iostats::note_read_ahead(database_id, au_id);
                }
                frame.read_us.store(read_us, Ordering::Relaxed);
                frame.io_in_progress.store(false, Ordering::Release);
                frame.latch.release(LatchMode::Ex, spid);
                self.unpin(index);
            } else {
                self.abandon_frame(index, page(page_no), spid);
            }
        }
        self.page_reads.fetch_add(u64::from(installed), Ordering::Relaxed);
        self.read_ahead_pages.fetch_add(u64::from(installed), Ordering::Relaxed);
        Ok(installed)
    }

    /// Gives back a claimed frame whose read failed: unmapped, unlatched, unpinned (freed by
    /// its last unpin, as another session may have pinned it to wait for the read).
    fn abandon_frame(&self, index: usize, key: PageKey, spid: u16) {
        let frame = &self.frames[index];
        {
            let mut table = self.table.bucket(&key).lock();
            table.remove(&key);
            let mut meta = frame.meta.lock();
            meta.key = None;
            frame.orphaned.store(true, Ordering::Release);
        }
        frame.io_in_progress.store(false, Ordering::Release);
        frame.latch.release(LatchMode::Ex, spid);
        self.unpin(index);
    }

    /// The pages in the pool now, as sys.dm_os_buffer_descriptors lists them: free frames,
    /// and frames whose read is in flight or failed, are left out (as SQL Server leaves out
    /// free, stolen and erroneous buffers). No latch is taken: each frame's page and dirty
    /// bit are read under its meta lock, then its header under its data lock, and a frame
    /// whose page changed in between (its header names another page) is skipped.
    pub fn descriptors(&self) -> Vec<BufferDescriptor> {
        let mut found = Vec::new();
        for frame in &self.frames {
            let (key, is_modified) = {
                let meta = frame.meta.lock();
                match meta.key {
                    Some(key) => (key, meta.dirty),
                    None => continue,
                }
            };
            if frame.io_in_progress.load(Ordering::Acquire)
                || frame.orphaned.load(Ordering::Acquire)
            {
                continue;
            }
            let header = {
                let data = frame.data.read();
                let Some(buf) = data.as_ref() else { continue };
                crate::page::PageHeader::read(&buf[..])
            };
            if header.page_id != key.page {
                continue;
            }
            let read_us = frame.read_us.load(Ordering::Relaxed);
            found.push(BufferDescriptor { key, header, is_modified, read_us });
        }
        found
    }

    /// Pages installed by read-ahead since the pool started.
    pub fn read_ahead_pages(&self) -> u64 {
        self.read_ahead_pages.load(Ordering::Relaxed)
    }

    /// Reads a page into its frame's own buffer (allocated once, on the frame's first use).
    /// A fiber reads a page the OS has cached at once, as an asynchronous read that completes
    /// at once would; any other read runs on an I/O thread ([`crate::fiber::IoThreads`]) into a
    /// buffer of its own, copied into the frame once done: its scheduler's other fibers run
    /// meanwhile.
    fn read_from_disk(&self, key: PageKey, frame: &Frame) -> SqlResult<()> {
        let file = self.file(key)?;
        let (handle, path) = (file.handle.as_ref(), file.path.as_str());
        let mut data = frame.data.write();
        let buf = data.get_or_insert_with(|| self.new_buffer(frame));
        if !crate::fiber::on_fiber() {
            return file::read_page_into(handle, buf, key.page, key.database_id, path);
        }
        if let Some(verified) =
            file::read_cached_page_into(handle, buf, key.page, key.database_id, path)
        {
            return verified;
        }
        // Not held while the fiber parks: the frame's data lock is no fiber's to keep.
        drop(data);
        let page = self.fiber_io.run(move || {
            let mut page = crate::page::new_page_buf();
            let handle = file.handle.as_ref();
            file::read_page_into(handle, &mut page, key.page, key.database_id, &file.path)
                .map(|()| page)
        })?;
        let mut data = frame.data.write();
        data.as_mut().expect("a frame keeps its buffer for life").copy_from_slice(&page[..]);
        Ok(())
    }

    /// A frame's 8 KB buffer, allocated on the frame's first use and kept for its life.
    fn new_buffer(&self, frame: &Frame) -> &'static mut PageBuf {
        self.new_zeroable_buffer(frame).0
    }

    /// `frame`'s buffer on its first use, and whether its bytes are known to be zero. The
    /// buffer the next frame's first use will take is prefetched ([`prefetch_new_page`]).
    fn new_zeroable_buffer(&self, frame: &Frame) -> crate::pool_memory::Buffer {
        self.buffers_allocated.fetch_add(1, Ordering::Relaxed);
        let mut unused = self.unused_buffers.lock();
        let buffer = unused.pop().expect("pool_memory invariant 1: a buffer per frame");
        if let Some((next, _)) = unused.last() {
            prefetch_new_page(&**next);
        }
        drop(unused);
        frame.buffer_addr.store(buffer.0.as_ptr() as usize, Ordering::Relaxed);
        buffer
    }

    /// Prefetches what the next claims of free frames will touch, in two steps so that no
    /// prefetch waits on a miss: the descriptor of the frame after next, and the buffer of the
    /// next one (whose descriptor the previous claim prefetched), if it has one; a frame on its
    /// first use takes the buffer [`Self::new_zeroable_buffer`] prefetched. The frames will
    /// most likely hold new pages or pages read from disk, whose first writes would each miss
    /// the caches otherwise: a free frame was last used long ago.
    fn prefetch_free_frames(&self, next: Option<usize>, after_next: Option<usize>) {
        if let Some(index) = after_next {
            let frame: *const Frame = &self.frames[index];
            crate::prefetch::into_l1(frame.cast(), std::mem::size_of::<Frame>());
        }
        if let Some(index) = next {
            let addr = self.frames[index].buffer_addr.load(Ordering::Relaxed);
            if addr != 0 {
                prefetch_new_page(addr as *const PageBuf);
            }
        }
    }

    fn unpin(&self, index: usize) {
        let frame = &self.frames[index];
        let mut meta = frame.meta.lock();
        assert!(meta.pin_count > 0, "unpinning a frame that is not pinned");
        meta.pin_count -= 1;
        if meta.pin_count == 0 && frame.orphaned.load(Ordering::Acquire) {
            *meta = FrameMeta::default();
            frame.orphaned.store(false, Ordering::Release);
            drop(meta);
            self.free.lock().push(index);
        }
    }

    /// A frame with no page: from the free list, else by evicting a clean, unpinned, unreferenced
    /// page (clock), else after writing dirty pages back. A request that finds the free list
    /// empty counts one free list stall, however many rounds it takes.
    fn free_frame(&self) -> SqlResult<usize> {
        let mut stalled = false;
        for _ in 0..MAX_EVICTION_ROUNDS {
            let (popped, next, after_next) = {
                let mut free = self.free.lock();
                let popped = free.pop();
                let len = free.len();
                (popped, free.last().copied(), len.checked_sub(2).map(|i| free[i]))
            };
            self.prefetch_free_frames(next, after_next);
            if let Some(index) = popped {
                self.wake_lazy_writer_if_low();
                return Ok(index);
            }
            if !stalled {
                stalled = true;
                self.free_list_stalls.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(index) = self.evict_clean() {
                return Ok(index);
            }
            self.write_back_some(self.frames.len() / 8 + 1, false)?;
        }
        Err(insufficient_memory())
    }

    fn wake_lazy_writer_if_low(&self) {
        let free = self.free_frames();
        if free < low_water(self.frames.len()) {
            *self.lazy_writer.0.lock() = true;
            self.lazy_writer.1.notify_one();
        }
    }

    /// Clock sweep over two turns: evicts the first clean, unpinned page whose reference bit is
    /// clear (clearing reference bits on the way).
    fn evict_clean(&self) -> Option<usize> {
        let mut hand = self.clock_hand.lock();
        for _ in 0..2 * self.frames.len() {
            let index = hand.advance(self.frames.len());
            let mut meta = self.frames[index].meta.lock();
            let Some(key) = meta.key else { continue };
            if meta.pin_count > 0 || meta.dirty {
                continue;
            }
            if meta.referenced {
                meta.referenced = false;
                continue;
            }
            // The bucket after the meta lock would invert the lock order: only try it. A
            // session holding it may be about to pin this very frame.
            let Some(mut table) = self.table.bucket(&key).try_lock() else { continue };
            table.remove(&key);
            *meta = FrameMeta::default();
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Some(index);
        }
        None
    }

    /// Writes back up to about `limit` dirty, unpinned pages in clock order, each with its
    /// dirty neighbours ([`BufferPool::write_back`]). Returns how many pages.
    fn write_back_some(&self, limit: usize, by_lazy_writer: bool) -> SqlResult<usize> {
        let start = self.clock_hand.lock().index;
        let mut written = 0;
        for step in 0..self.frames.len() {
            if written >= limit {
                break;
            }
            let index = (start + step) % self.frames.len();
            let pages = self.write_back(index, false, |_| true)?;
            written += pages;
            if by_lazy_writer {
                self.lazy_writer_writes.fetch_add(pages as u64, Ordering::Relaxed);
            }
        }
        Ok(written)
    }

    /// Writes one frame back if it is dirty, unpinned and its key passes `filter`, gathering the
    /// dirty pages next to it (consecutive page ids of the same file, forward and backward) into
    /// the same write, as SQL Server's gather write does (reference §7): up to
    /// [`GATHER_WRITE_PAGES`], stopping at a page that is clean, pinned, fails `filter`, cannot
    /// be latched at once, or whose LSN the log has not flushed. Every page of the run is pinned
    /// and latched UP during the write (invariant 2). Returns how many pages were written.
    /// `wait` is false when evicting: a session that needs a frame may hold latches of its own,
    /// so it only writes pages that nobody pins and whose latch it gets at once (latch order 3).
    /// A checkpoint holds no latch and waits for the first page's.
    fn write_back(
        &self,
        index: usize,
        wait: bool,
        filter: impl Fn(PageKey) -> bool,
    ) -> SqlResult<usize> {
        let spid = crate::instance::current_spid();
        let Some(key) = self.claim_for_write(index, wait, &filter, spid)? else {
            return Ok(0);
        };
        let mut run = WriteRun { pool: self, spid, frames: SmallVec::new(), first: key };
        run.frames.push(index);
        // The WAL rule: the log records of every change the page holds are durable first.
        let page_lsn = self.seal_frame(index);
        let log = self.log_of(key.database_id);
        if let Some(log) = &log
            && !page_lsn.is_null()
        {
            log.flush_to(page_lsn)?;
            assert!(log.flushed_lsn() >= page_lsn, "WAL: page {key:?} written before its log");
        }
        let flushed = log.as_ref().map(|log| log.flushed_lsn());
        let unflushed = |lsn: Lsn| flushed.is_some_and(|flushed| lsn > flushed);
        self.gather_neighbours(&mut run, &filter, &unflushed);
        run.write()
    }

    /// Pins and latches (UP) a dirty frame for a write-back; the frame's meta lock alone orders
    /// this with eviction, which unmaps a frame under the same lock only when it is unpinned.
    /// None (nothing held) if the frame is clean, pinned while `wait` is false, fails
    /// `filter`, or was discarded meanwhile; error 845 if this thread holds its latch.
    fn claim_for_write(
        &self,
        index: usize,
        wait: bool,
        filter: &impl Fn(PageKey) -> bool,
        spid: u16,
    ) -> SqlResult<Option<PageKey>> {
        let frame = &self.frames[index];
        let key = {
            let mut meta = frame.meta.lock();
            match meta.key {
                Some(key) if meta.dirty && filter(key) && (wait || meta.pin_count == 0) => {
                    meta.pin_count += 1;
                    key
                }
                _ => return Ok(None),
            }
        };
        if wait {
            if let Err(error) = self.latch_frame(index, key, LatchMode::Up, spid) {
                self.unpin(index);
                return Err(error);
            }
        } else if !frame.latch.try_acquire(LatchMode::Up, spid) {
            self.unpin(index);
            return Ok(None);
        }
        // The page may have been discarded, or written by another, while this session waited.
        let meta = frame.meta.lock();
        if meta.key == Some(key) && meta.dirty {
            return Ok(Some(key));
        }
        drop(meta);
        frame.latch.release(LatchMode::Up, spid);
        self.unpin(index);
        Ok(None)
    }

    /// Extends `run` with the dirty neighbours of its first page: forward, then backward.
    fn gather_neighbours(
        &self,
        run: &mut WriteRun<'_>,
        filter: &impl Fn(PageKey) -> bool,
        unflushed: &impl Fn(Lsn) -> bool,
    ) {
        let first = run.first;
        let mut page_no = first.page.page_no;
        while run.frames.len() < GATHER_WRITE_PAGES {
            let Some(next) = page_no.checked_add(1) else { break };
            page_no = next;
            let neighbour =
                PageKey::new(first.database_id, PageId::new(first.page.file_id, page_no));
            if !self.take_neighbour(run, neighbour, filter, unflushed, false) {
                break;
            }
        }
        let mut page_no = first.page.page_no;
        while run.frames.len() < GATHER_WRITE_PAGES && page_no > 0 {
            page_no -= 1;
            let neighbour =
                PageKey::new(first.database_id, PageId::new(first.page.file_id, page_no));
            if !self.take_neighbour(run, neighbour, filter, unflushed, true) {
                break;
            }
        }
    }

    /// Adds a neighbouring page to `run` if it is cached, dirty, unpinned, passes `filter`, can
    /// be latched at once and its LSN is flushed; false (nothing held) otherwise.
    fn take_neighbour(
        &self,
        run: &mut WriteRun<'_>,
        key: PageKey,
        filter: &impl Fn(PageKey) -> bool,
        unflushed: &impl Fn(Lsn) -> bool,
        before: bool,
    ) -> bool {
        let Some(index) = self.table.get(&key) else { return false };
        // Without waiting (`wait` false), a claim never meets latch invariant 4's error.
        match self.claim_for_write(index, false, filter, run.spid) {
            Ok(Some(claimed)) if claimed == key => {}
            Ok(Some(_)) => {
                // The frame was given to another page since the table was read.
                self.frames[index].latch.release(LatchMode::Up, run.spid);
                self.unpin(index);
                return false;
            }
            Ok(None) | Err(_) => return false,
        }
        let page_lsn = self.seal_frame(index);
        if unflushed(page_lsn) {
            self.frames[index].latch.release(LatchMode::Up, run.spid);
            self.unpin(index);
            return false;
        }
        if before {
            run.frames.insert(0, index);
            run.first = key;
        } else {
            run.frames.push(index);
        }
        true
    }

    /// Seals a frame's page (checksum) for writing and returns its page LSN. The caller holds
    /// its UP latch.
    fn seal_frame(&self, index: usize) -> Lsn {
        let mut data = self.frames[index].data.write();
        let buf = data.as_mut().expect("a mapped frame has bytes");
        crate::page::seal(buf);
        Lsn::from_bytes(&buf[PAGE_LSN_OFFSET..PAGE_LSN_OFFSET + 10])
    }

    /// Writes every dirty page of a database (or of one of its files) and syncs those files.
    /// Then the files' pages leave the OS page cache: SQL Server's data files bypass it, and a
    /// cache that grows by every page written slows the whole machine's writes (seed 002's
    /// raw-write baseline took 5-7 s after a run instead of 1 s).
    pub fn flush(&self, database_id: u16, file_id: Option<u16>) -> SqlResult<()> {
        let belongs = |key: PageKey| {
            key.database_id == database_id && file_id.is_none_or(|f| f == key.page.file_id)
        };
        for index in 0..self.frames.len() {
            let pages = self.write_back(index, true, belongs)?;
            self.checkpoint_pages.fetch_add(pages as u64, Ordering::Relaxed);
        }
        let files: Vec<Arc<BufferFile>> = self
            .files
            .read()
            .iter()
            .filter(|((db, file), _)| *db == database_id && file_id.is_none_or(|f| f == *file))
            .map(|(_, file)| file.clone())
            .collect();
        for file in files {
            file.handle
                .sync_data()
                .map_err(|err| SqlError::os_io_error(&err, true, 0, &file.path))?;
            let _ = file.handle.drop_cached();
        }
        Ok(())
    }

    /// Writes the given pages of a database if they are cached and dirty, then syncs their
    /// files. Used where only allocation pages must be durable (a growth's commit, the boot
    /// page), so that the caller never waits for the latch of a data page another session holds.
    pub fn flush_pages(&self, database_id: u16, pages: &[PageId]) -> SqlResult<()> {
        let mut files = std::collections::BTreeSet::new();
        for page in pages {
            let key = PageKey::new(database_id, *page);
            let index = self.table.get(&key);
            if let Some(index) = index {
                self.write_back(index, true, |k| k == key)?;
            }
            files.insert(page.file_id);
        }
        for file_id in files {
            let file = self.files.read().get(&(database_id, file_id)).cloned();
            if let Some(file) = file {
                file.handle
                    .sync_data()
                    .map_err(|err| SqlError::os_io_error(&err, true, 0, &file.path))?;
            }
        }
        Ok(())
    }

    /// Drops cached pages (dirty or not) of a database, or of one file from `from_page` on,
    /// without writing them: for a removed file, a rolled-back growth or a crash test. A frame
    /// pinned right now (by a write-back) is unmapped at once and freed by its last unpin.
    pub fn discard(&self, database_id: u16, file_id: Option<u16>, from_page: u32) {
        for bucket in self.table.buckets() {
            let mut table = bucket.lock();
            let doomed: Vec<(PageKey, usize)> = table
                .iter()
                .filter(|(key, _)| {
                    key.database_id == database_id
                        && file_id.is_none_or(|f| f == key.page.file_id)
                        && key.page.page_no >= from_page
                })
                .map(|(key, index)| (*key, *index))
                .collect();
            let mut free = self.free.lock();
            for (key, index) in doomed {
                table.remove(&key);
                let mut meta = self.frames[index].meta.lock();
                if meta.pin_count == 0 {
                    *meta = FrameMeta::default();
                    free.push(index);
                } else {
                    *meta = FrameMeta { pin_count: meta.pin_count, ..FrameMeta::default() };
                    self.frames[index].orphaned.store(true, Ordering::Release);
                }
            }
        }
    }

    /// DBCC DROPCLEANBUFFERS: every clean page that nobody has pinned leaves the pool, so the
    /// next access reads it from disk. Dirty and pinned pages stay (SQL Server's advice is to
    /// run CHECKPOINT first). Returns how many pages were dropped.
    pub fn drop_clean_buffers(&self) -> usize {
        let mut dropped = 0;
        for bucket in self.table.buckets() {
            let mut table = bucket.lock();
            let mut free = self.free.lock();
            table.retain(|_, index| {
                let mut meta = self.frames[*index].meta.lock();
                let in_io = self.frames[*index].io_in_progress.load(Ordering::Acquire);
                let drop_it = meta.pin_count == 0 && !meta.dirty && !in_io;
                if drop_it {
                    *meta = FrameMeta::default();
                    free.push(*index);
                    dropped += 1;
                }
                !drop_it
            });
        }
        dropped
    }

    /// Latch waits per page, most waited first.
    pub fn page_waits(&self) -> Vec<PageWaitRow> {
        let mut rows: Vec<PageWaitRow> = self
            .page_waits
            .lock()
            .iter()
            .map(|((key, wait_type), (count, us))| PageWaitRow {
                key: *key,
                wait_type,
                waiting_tasks_count: *count,
                wait_time_us: *us,
            })
            .collect();
        rows.sort_by(|a, b| b.wait_time_us.cmp(&a.wait_time_us).then(a.key.cmp(&b.key)));
        rows
    }

    pub fn clear_page_waits(&self) {
        self.page_waits.lock().clear();
    }

    /// Whether the page is cached and its read is in flight (tests).
    pub fn is_io_in_progress(&self, key: PageKey) -> bool {
        let index = self.table.get(&key);
        index.is_some_and(|i| self.frames[i].io_in_progress.load(Ordering::Acquire))
    }

    /// Whether the page is cached and dirty.
    pub fn is_dirty(&self, key: PageKey) -> bool {
        let index = self.table.get(&key);
        index.is_some_and(|i| self.frames[i].meta.lock().dirty)
    }
}

/// 845, SQL Server's error for a buffer latch it could not get in time. Latch types are
/// numbered KP 1, SH 2, UP 3, EX 4, DT 5 in its text.
fn latch_timeout(key: PageKey, mode: LatchMode) -> SqlError {
    let latch_type = LatchMode::ALL.iter().position(|m| *m == mode).unwrap_or(0) + 1;
    SqlError::new(
        845,
        17,
        1,
        format!(
            "Time-out occurred while waiting for buffer latch type {latch_type} for page {}, \
             database ID {}.",
            key.page, key.database_id
        ),
    )
}

fn insufficient_memory() -> SqlError {
    SqlError::new(802, 17, 20, "There is insufficient memory available in the buffer pool.")
}

/// The lazy writer: when free frames run low, writes dirty pages back so that the clock can
/// evict them, until twice the low-water mark is free. Exits when the pool goes.
fn lazy_writer_loop(pool: &Weak<BufferPool>) {
    loop {
        let Some(strong) = pool.upgrade() else { return };
        {
            let mut signalled = strong.lazy_writer.0.lock();
            if !*signalled {
                // Sleeping until the next look or a free-list stall's signal: LAZYWRITER_SLEEP.
                crate::system_tasks::wait_for_work(|| {
                    strong.lazy_writer.1.wait_for(&mut signalled, Duration::from_millis(200))
                });
            }
            *signalled = false;
        }
        let target = low_water(strong.frames.len()) * 2;
        for _ in 0..4 {
            if strong.free_frames() >= target {
                break;
            }
            // A write failure is reported to the session that later needs the page.
            let _ = strong.write_back_some(target, true);
            while strong.free_frames() < target {
                let Some(index) = strong.evict_clean() else { break };
                strong.free.lock().push(index);
            }
        }
        drop(strong);
    }
}

/// The pages of one gathered write-back: consecutive pages of one file from `first`, each
/// pinned, sealed and latched UP until the run drops.
struct WriteRun<'a> {
    pool: &'a BufferPool,
    spid: u16,
    frames: SmallVec<[usize; 8]>,
    first: PageKey,
}

impl WriteRun<'_> {
    /// Writes the run's pages in one gathered write (unbuffered where the backend can, as SQL
    /// Server's WriteFileGather on files opened without buffering) and marks them clean.
    fn write(self) -> SqlResult<usize> {
        let pool = self.pool;
        let file = pool.file(self.first)?;
        let offset = u64::from(self.first.page.page_no) * PAGE_SIZE_U64;
        let flushed = pool.log_of(self.first.database_id).map(|log| log.flushed_lsn());
        {
            let frames = self.frames.iter().map(|index| pool.frames[*index].data.read());
            let guards: SmallVec<[_; 8]> = frames.collect();
            for data in &guards {
                let buf = data.as_ref().expect("a mapped frame");
                let page_lsn = Lsn::from_bytes(&buf[PAGE_LSN_OFFSET..PAGE_LSN_OFFSET + 10]);
                let durable = flushed.is_none_or(|flushed| page_lsn <= flushed);
                assert!(durable, "WAL: a page of the run from {:?} before its log", self.first);
            }
            let bytes = guards.iter().map(|data| &data.as_ref().expect("a mapped frame")[..]);
            let parts: SmallVec<[&[u8]; 8]> = bytes.collect();
            file.handle
                .write_gathered(&parts, offset)
                .map_err(|err| SqlError::os_io_error(&err, true, offset, &file.path))?;
        }
        for index in &self.frames {
            pool.frames[*index].meta.lock().dirty = false;
        }
        pool.page_writes.fetch_add(self.frames.len() as u64, Ordering::Relaxed);
        Ok(self.frames.len())
    }
}

impl Drop for WriteRun<'_> {
    fn drop(&mut self) {
        for index in &self.frames {
            self.pool.frames[*index].latch.release(LatchMode::Up, self.spid);
            self.pool.unpin(*index);
        }
    }
}

/// A latched, pinned page. Dropping it releases the latch and the pin, unless an open mtr
/// changed the page: then the mtr keeps both until it commits ([`crate::log::mtr`]).
pub struct PageGuard<'a> {
    pool: &'a BufferPool,
    index: usize,
    mode: LatchMode,
    key: PageKey,
    spid: u16,
    /// Made by `new_page` and not changed yet: its first change is logged as a format.
    fresh: std::cell::Cell<bool>,
    /// Made by `new_page`, and changed since only within its 96-byte header: every byte after
    /// the header is still zero, so an insert's undo needs no copy or scan of the bytes it
    /// overwrites ([`PageGuard::insert_record`]; a new page of an ascending key's split).
    body_zero: std::cell::Cell<bool>,
    /// A second guard on a page this session's mtr holds: dropping it releases nothing.
    borrowed: bool,
}

impl PageGuard<'_> {
    pub fn key(&self) -> PageKey {
        self.key
    }

    pub fn mode(&self) -> LatchMode {
        self.mode
    }

    /// Reads the page's bytes.
    pub fn read<R>(&self, f: impl FnOnce(&PageBuf) -> R) -> R {
        let data = self.pool.frames[self.index].data.read();
        f(data.as_ref().expect("a latched frame has bytes"))
    }

    /// Changes the page's bytes (UP or EX latch only) and marks it dirty. With the database's
    /// log registered, the change is logged: in the open mtr, or in an mtr of its own that
    /// commits before this returns (an error then means the change was undone: the log could
    /// not take it, 9002).
    pub fn write<R>(&self, f: impl FnOnce(&mut PageBuf) -> R) -> SqlResult<R> {
        self.begin_write();
        self.body_zero.set(false);
        let frame = &self.pool.frames[self.index];
        if !self.pool.is_logged(self.key.database_id) {
            let mut data = frame.data.write();
            return Ok(f(data.as_mut().expect("a latched frame has bytes")));
        }
        let page = self.key.page;
        self.logged_change(|buf| {
            // A new page starts zeroed (new_page): its format record is its diff from zeros,
            // with no copy of the page before.
            let fresh = self.fresh.replace(false);
            let (result, payload) = if fresh {
                let result = f(buf);
                (result, mtr::PayloadBuilder::runs(page, mtr::KIND_FORMAT).from_zeros(buf))
            } else {
                let before: PageBuf = *buf;
                let result = f(buf);
                (result, mtr::PayloadBuilder::runs(page, mtr::KIND_XOR).diff(&before, buf))
            };
            (result, LoggedChange::of_payload(fresh, payload))
        })
    }

    /// [`PageGuard::write`] for a change confined to `ranges` (`[from, to)`, at most three):
    /// only those bytes are saved and compared, not the whole page (a PFS byte, a map bit's
    /// byte, a page header). A change outside them would be lost to the log: debug builds
    /// check the rest of the page is unchanged. A new page's first change (its header, say) is
    /// logged as its format: the rest of the page stays zero.
    pub fn write_within<R>(
        &self,
        ranges: &[(usize, usize)],
        f: impl FnOnce(&mut PageBuf) -> R,
    ) -> SqlResult<R> {
        if !self.pool.is_logged(self.key.database_id) {
            return self.write(f);
        }
        self.begin_write();
        if ranges.iter().any(|(_, to)| *to > PAGE_HEADER_SIZE) {
            self.body_zero.set(false);
        }
        let fresh = self.fresh.replace(false);
        self.logged_change(|buf| {
            // A fresh page is all zeros (new_page, and no write since): its ranges are known
            // zero, neither read nor copied.
            let zero_from = if fresh { 0 } else { crate::units::PAGE_SIZE };
            debug_assert!(!fresh || buf.iter().all(|byte| *byte == 0), "a fresh page is zero");
            let before = mtr::Saved::of_zero_from(buf, ranges, zero_from);
            #[cfg(debug_assertions)]
            let whole: Box<PageBuf> = Box::new(*buf);
            let result = f(buf);
            #[cfg(debug_assertions)]
            {
                // The page as it is now, but with the ranges' old bytes: the page before.
                let mut outside_ranges = *buf;
                before.restore(&mut outside_ranges);
                let changed = mtr::diff(&whole, &outside_ranges);
                assert!(changed.is_empty(), "a change outside {ranges:?}: {changed:?}");
            }
            let kind = if fresh { mtr::KIND_FORMAT } else { mtr::KIND_XOR };
            let payload = mtr::PayloadBuilder::runs(self.key.page, kind).diff_within(&before, buf);
            // The old bytes served only the diff: their buffer goes back at once.
            mtr::give_back_buffer(before.into_bytes());
            (result, LoggedChange::of_payload(fresh, payload))
        })
    }

    /// Inserts `record` as `slot` of a data or index page ([`datapage::insert`]); false if it
    /// does not fit. The change is logged logically: the slot and the record
    /// ([`mtr::Redo::Insert`]), after a compaction ([`mtr::Redo::Compact`]) if the page's
    /// contiguous free space is too small; only the ranges the insert overwrites (the whole
    /// page for a compaction) are kept for an abort. A page not logged yet, or of a database
    /// without a log, takes the [`PageGuard::write`] path. A record that does not fit changes
    /// nothing and logs nothing.
    pub fn insert_record(&self, slot: u16, record: &[u8]) -> SqlResult<bool> {
        // One read for both questions: each read takes the frame's data lock.
        let (fits, mut ranges) = self.read(|buf| {
            (datapage::fits(buf, record.len()), datapage::insert_ranges(buf, slot, record.len()))
        });
        if !fits {
            // Nothing changes (a full leaf before its split): no copy or diff of the page.
            return Ok(false);
        }
        if !self.pool.is_logged(self.key.database_id) || self.fresh.get() {
            return self.write(|buf| datapage::insert(buf, slot, record));
        }
        self.begin_write();
        if ranges.is_none() {
            self.body_zero.set(false);
            self.logged_change(|buf| {
                let before = mtr::Saved::of(buf, &[(0, crate::units::PAGE_SIZE)]);
                datapage::compact(buf);
                let payload = mtr::encode_page_payload(self.key.page, &mtr::Redo::Compact);
                ((), Some(LoggedChange { payload, before, record_at: None }))
            })?;
            ranges = self.read(|buf| datapage::insert_ranges(buf, slot, record.len()));
        }
        let ranges = ranges.expect("a record that fits fits contiguously after compaction");
        let body_zero = self.body_zero.replace(false);
        self.logged_change(|buf| {
            // Trusted only while the header agrees: no slot, m_freeData right after the header
            // (a change made through another guard of the page would not clear the flag).
            let empty = datapage::slot_count(buf) == 0
                && usize::from(crate::page::header_free_data(&buf[..])) == PAGE_HEADER_SIZE;
            let zero_from =
                if body_zero && empty { PAGE_HEADER_SIZE } else { crate::units::PAGE_SIZE };
            debug_assert!(buf[zero_from..].iter().all(|byte| *byte == 0), "a zero body");
            let before = mtr::Saved::of_zero_from(buf, &ranges, zero_from);
            let at = crate::page::header_free_data(&buf[..]);
            let placed = datapage::insert(buf, slot, record);
            assert!(placed, "insert_ranges said the record fits without compaction");
            if record.len() < mtr::RECORD_FROM_PAGE_MIN_BYTES {
                let payload = mtr::insert_payload(self.key.page, slot, record);
                return (true, Some(LoggedChange { payload, before, record_at: None }));
            }
            // The record stays in the page until commit (mtr invariant 2).
            let payload = mtr::insert_payload_head(self.key.page, slot, record.len());
            (
                true,
                Some(LoggedChange { payload, before, record_at: Some((at, record.len() as u16)) }),
            )
        })
    }

    /// Checks invariant 2 (an UP or EX latch) and marks the page dirty.
    fn begin_write(&self) {
        assert!(
            matches!(self.mode, LatchMode::Up | LatchMode::Ex),
            "invariant 2: writing under a {:?} latch",
            self.mode
        );
        self.pool.frames[self.index].meta.lock().dirty = true;
    }

    /// Makes a change under the frame's write lock and records it in the open mtr, or, outside
    /// any mtr grouping changes (an allocation's autocommit scope, a write on its own), logs it
    /// as an mtr of its own before returning ([`PageGuard::logged_alone`]). `change` returns its
    /// result and the change's redo with the ranges to restore on abort (None: the bytes did not
    /// change).
    fn logged_change<R>(
        &self,
        change: impl FnOnce(&mut PageBuf) -> (R, Option<LoggedChange>),
    ) -> SqlResult<R> {
        if !mtr::active() {
            return self.logged_alone(change);
        }
        let mut data = self.pool.frames[self.index].data.write();
        let buf = data.as_mut().expect("a latched frame has bytes");
        mtr::complete_pending_records(self.index, buf);
        let (result, redo) = change(buf);
        if let Some(LoggedChange { payload, before, record_at }) = redo {
            let change = PageChange {
                database_id: self.key.database_id,
                page: self.key.page,
                payload,
                before,
                page_type: buf[1],
                frame: self.index,
                record_at,
            };
            if record_at.is_some() {
                mtr::note_pending_record();
            }
            mtr::with_top(|m| m.changes.push(change));
        }
        Ok(result)
    }

    /// [`PageGuard::logged_change`] for a change that is an mtr of its own (a nested top
    /// action's PFS byte, say): with one change there is nothing to group, so its record is
    /// appended right after the change and the page stamped with its LSN, without an mtr state
    /// to open, fill and commit (that round cost seed 002 about 1,400 instructions an
    /// allocation). The record, LSNs and latch release are those [`BufferPool::commit_mtr`]
    /// gives a one-change mtr: the frame's data lock is not held through the append (a log
    /// growth may come in it), the guard keeps its latch until dropped, and no mtr holds the
    /// page. A log that refuses the record gets the change undone.
    fn logged_alone<R>(
        &self,
        change: impl FnOnce(&mut PageBuf) -> (R, Option<LoggedChange>),
    ) -> SqlResult<R> {
        let frame = &self.pool.frames[self.index];
        let (result, redo, page_type) = {
            let mut data = frame.data.write();
            let buf = data.as_mut().expect("a latched frame has bytes");
            mtr::complete_pending_records(self.index, buf);
            let (result, mut redo) = change(buf);
            if let Some(redo) = redo.as_mut() {
                // An insert's record is read from the page now: no commit comes to read it.
                mtr::complete_payload(&mut redo.payload, &mut redo.record_at, buf);
            }
            (result, redo, buf[1])
        };
        let Some(LoggedChange { payload, before, .. }) = redo else { return Ok(result) };
        let (operation, context) = record_label(mtr::payload_kind(&payload), page_type);
        let mut record = LogRecord::new(operation, context, 0, payload);
        record.flags |= crate::log::record::FLAG_PAGE;
        let logs = self.pool.logs.read().expect("the log map is never poisoned");
        let Some(log) = logs.get(&self.key.database_id) else { return Ok(result) };
        let appended = log.append_group(&[&record], &[], crate::xact::compensating(), 0);
        let mut data = frame.data.write();
        let buf = data.as_mut().expect("a latched frame has bytes");
        match appended {
            Ok(lsns) => {
                buf[PAGE_LSN_OFFSET..PAGE_LSN_OFFSET + 10].copy_from_slice(&lsns[0].to_bytes());
            }
            Err(error) => {
                mtr::undo(buf, &record.payload, &before);
                return Err(error);
            }
        }
        drop(data);
        mtr::give_back_buffer(record.payload);
        mtr::give_back_buffer(before.into_bytes());
        // As commit_mtr does: a full log cache is written here only when no mtr (nor
        // autocommit scope) encloses the change; an enclosing one's commit writes it otherwise,
        // once its latches are released.
        if mtr::none_open() && log.cache_is_full() {
            let log = log.clone();
            drop(logs);
            log.write_cache_if_full();
        }
        Ok(result)
    }
}

impl Drop for PageGuard<'_> {
    fn drop(&mut self) {
        if self.borrowed {
            return;
        }
        let index = self.index;
        let (mode, spid) = (self.mode, self.spid);
        if !mtr::keep_if_changed(index, mode, spid) {
            self.pool.frames[index].latch.release(mode, spid);
            self.pool.unpin(index);
        }
    }
}

/// What a logged change hands to its mtr ([`PageChange`]'s fields of the same names).
struct LoggedChange {
    payload: Vec<u8>,
    before: mtr::Saved,
    record_at: Option<(u16, u16)>,
}

impl LoggedChange {
    /// The change a write logs: XOR runs, or a new page's format (always logged), whose
    /// payload alone undoes it; none when no byte changed (the payload's buffer is then kept
    /// for reuse).
    fn of_payload(fresh: bool, payload: mtr::PayloadBuilder) -> Option<LoggedChange> {
        if !fresh && payload.is_empty() {
            payload.discard();
            return None;
        }
        let payload = payload.finish();
        Some(LoggedChange { payload, before: mtr::Saved::default(), record_at: None })
    }
}

/// Where the page LSN lies in the page header (m_lsn).
const PAGE_LSN_OFFSET: usize = 40;

impl BufferPool {
    /// Runs `f` as one mini-transaction: its page changes are logged as one group when it
    /// succeeds, and undone when it fails (or when the log cannot take them).
    pub fn in_mtr<R>(&self, f: impl FnOnce() -> SqlResult<R>) -> SqlResult<R> {
        mtr::begin();
        match f() {
            Ok(value) => self.commit_mtr().map(|()| value),
            Err(error) => {
                self.abort_mtr();
                Err(error)
            }
        }
    }

    /// Undoes every change of this thread's innermost mtr and releases what it held.
    pub fn abort_mtr(&self) {
        let mut state = mtr::take_top();
        self.undo_changes(&state.changes);
        self.release_held(&mut state.held);
        mtr::recycle(state);
    }

    fn undo_changes(&self, changes: &[PageChange]) {
        for change in changes.iter().rev() {
            let mut data = self.frames[change.frame].data.write();
            let buf = data.as_mut().expect("held frames have bytes");
            mtr::undo(buf, &change.payload, &change.before);
        }
    }

    fn release_held(&self, held: &mut Vec<mtr::HeldPage>) {
        for page in held.drain(..) {
            self.frames[page.frame].latch.release(page.mode, page.spid);
            self.unpin(page.frame);
        }
    }

    /// Commits this thread's innermost mtr: appends its page changes to the log as one group,
    /// stamps each changed page with the group's last LSN, then releases the pages it held
    /// (and then writes the log cache if the append left it full).
    /// If the log cannot take the group, every change is undone and the error returned.
    pub fn commit_mtr(&self) -> SqlResult<()> {
        let mut state = mtr::take_top();
        let result = self.log_mtr(&mut state.changes, &mut state.extra);
        if result.is_err() {
            self.undo_changes(&state.changes);
        }
        self.release_held(&mut state.held);
        mtr::recycle(state);
        // A full log cache is written with the mtr's latches released, not under them; an
        // mtr nested in another (an allocation's) leaves it to the outer one's commit.
        if let Ok(Some(log)) = &result
            && mtr::none_open()
        {
            log.write_cache_if_full();
        }
        result.map(|_| ())
    }

    fn log_mtr(
        &self,
        changes: &mut [PageChange],
        extra: &mut Vec<(LogRecord, crate::xact::RowOp)>,
    ) -> SqlResult<Option<Arc<LogManager>>> {
        let database_id = match changes.first() {
            Some(first) => first.database_id,
            // A transaction's record with no page change of its own (a heap update's old row).
            None if !extra.is_empty() => crate::xact::current_database().unwrap_or(0),
            None => return Ok(None),
        };
        // The map's read guard is held through the append: the log never calls into the pool,
        // and logs are registered only when a database opens, is created or closes.
        let logs = self.logs.read().expect("the log map is never poisoned");
        let Some(log) = logs.get(&database_id) else { return Ok(None) };
        // The payloads move into the records (no copy), and back if the log refuses them: an
        // undo of XOR runs reads them.
        let mut page_records: SmallVec<[LogRecord; 4]> =
            changes.iter_mut().map(page_record).collect();
        let mut records: SmallVec<[&LogRecord; 6]> = SmallVec::new();
        records.extend(page_records.iter());
        records.extend(extra.iter().map(|(record, _)| record));
        let undo_bytes = crate::xact::undo_reservation(extra);
        // An insert's record goes from its page into the log block (mtr invariant 2), read
        // under the frame's data lock; the mtr's latch keeps every other session off the page.
        let mut pages: SmallVec<[_; 4]> = SmallVec::new();
        let mut tails: SmallVec<[&[u8]; 6]> = SmallVec::new();
        if changes.iter().any(|c| c.record_at.is_some()) {
            let read = |c: &PageChange| c.record_at.map(|_| self.frames[c.frame].data.read());
            pages.extend(changes.iter().map(read));
            for (change, page) in changes.iter().zip(&pages) {
                tails.push(match (change.record_at, page) {
                    (Some((offset, len)), Some(page)) => {
                        let buf = page.as_deref().expect("held frames have bytes");
                        &buf[usize::from(offset)..usize::from(offset) + usize::from(len)]
                    }
                    _ => &[],
                });
            }
            tails.resize(records.len(), &[]);
        }
        let group_bytes: usize = records
            .iter()
            .enumerate()
            .map(|(i, record)| record.encoded_len_with(tails.get(i).map_or(0, |t| t.len())))
            .sum();
        let group = (records.len() as u64, group_bytes as u64);
        let appended = log.append_group(&records, &tails, crate::xact::compensating(), undo_bytes);
        // Released before the page LSNs are stamped below, under the same frames' write locks.
        drop(tails);
        drop(pages);
        drop(records);
        let Ok(lsns) = appended else {
            for (change, record) in changes.iter_mut().zip(page_records.iter_mut()) {
                change.payload = std::mem::take(&mut record.payload);
            }
            return appended.map(|_| None);
        };
        let last = *lsns.last().expect("a group has records");
        crate::xact::logged(extra.drain(..), &lsns[changes.len()..], undo_bytes, group);
        for change in changes {
            let mut data = self.frames[change.frame].data.write();
            let buf = data.as_mut().expect("held frames have bytes");
            buf[PAGE_LSN_OFFSET..PAGE_LSN_OFFSET + 10].copy_from_slice(&last.to_bytes());
        }
        for record in page_records {
            mtr::give_back_buffer(record.payload);
        }
        // The log, for its cache to be written once the mtr's latches are released.
        Ok(log.cache_is_full().then(|| log.clone()))
    }
}

/// The log record of a page change, labelled as fn_dblog would label it.
fn page_record(change: &mut PageChange) -> LogRecord {
    let (operation, context) = record_label(mtr::payload_kind(&change.payload), change.page_type);
    let payload = std::mem::take(&mut change.payload);
    let mut record = LogRecord::new(operation, context, 0, payload);
    record.flags |= crate::log::record::FLAG_PAGE;
    record
}

/// The operation and context of a page record, from its payload's kind and the page's m_type.
fn record_label(kind: u8, page_type: u8) -> (Operation, Context) {
    match (kind, page_type) {
        (mtr::KIND_FORMAT, _) => (Operation::FormatPage, Context::Null),
        (mtr::KIND_INSERT, 2) => (Operation::InsertRows, Context::IndexLeaf),
        (mtr::KIND_INSERT, _) => (Operation::InsertRows, Context::Heap),
        (_, 11) => (Operation::SetBits, Context::Pfs),
        (_, 8) => (Operation::SetBits, Context::Gam),
        (_, 9) => (Operation::SetBits, Context::Sgam),
        (_, 10) => (Operation::SetBits, Context::Iam),
        (_, 2) => (Operation::ModifyRow, Context::IndexInterior),
        _ => (Operation::ModifyRow, Context::Heap),
    }
}

/// Prefetches the part of a frame's buffer that a new page's first changes write: the lower
/// half (the header, then the records, which go from the header up: an ascending insert's
/// first rows, or the half a split moves) and the last line (the slot array's first entries).
fn prefetch_new_page(buf: *const PageBuf) {
    let start: *const u8 = buf.cast();
    crate::prefetch::into_l2(start, crate::units::PAGE_SIZE / 2);
    crate::prefetch::into_l2(start.wrapping_add(crate::units::PAGE_SIZE - 64), 64);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BUF_HASH is per bucket: while one bucket's spinlock is held, a page of another bucket is
    /// still found at once; only the held bucket's pages wait. Consecutive pages of a file are
    /// spread over every bucket.
    #[test]
    fn a_held_bucket_blocks_only_its_own_pages() {
        let stats = SpinlockStats::default();
        let table = PageTable::new(&stats);
        let key = |page_no| PageKey::new(5, PageId::new(1, page_no));
        let same = |a: &PageKey, b: &PageKey| std::ptr::eq(table.bucket(a), table.bucket(b));
        let (a, b) = (key(10), key(11));
        assert!(!same(&a, &b), "neighbouring pages share a bucket");
        table.bucket(&b).lock().insert(b, 7);
        let held = table.bucket(&a).lock_uncounted();
        assert!(table.bucket(&a).try_lock().is_none(), "the held bucket is busy");
        assert_eq!(table.get(&b), Some(7), "another bucket's page is found meanwhile");
        drop(held);
        let buckets: std::collections::HashSet<*const Bucket> =
            (0..8 * PAGE_TABLE_BUCKETS as u32).map(|n| table.bucket(&key(n)) as *const _).collect();
        assert_eq!(buckets.len(), PAGE_TABLE_BUCKETS);
        assert_eq!(stats.snapshot().iter().filter(|row| row.name == "BUF_HASH").count(), 1);
    }
}
