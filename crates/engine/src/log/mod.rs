//! The transaction log of a database: its log files and their virtual log files, log records
//! appended into log blocks, and the flush that makes them durable (reference §5).
//!
//! What it owns and reproduces:
//! - Log files: an 8 KB header page, then VLFs made at creation and at every growth by the
//!   instance's VLF rule ([`vlf`], 2019 or 2022). Growth writes zeros (PREEMPTIVE_OS_WRITEFILEGATHER,
//!   TF 3004), except that under the 2022 rule an autogrowth of 64 MB or less uses instant file
//!   initialisation and writes nothing (reference §4).
//! - VLF discovery on open: the VLF headers are read one after another from offset 8192, so a
//!   log with many VLFs is slower to open, as in SQL Server.
//! - Appending: records go into the open block ([`block`], up to 60 KB); LSN = FSeqNo : block
//!   offset : slot ([`lsn`]). When a VLF is full the log moves to the next reusable VLF in
//!   file order (wrapping round, across several log files), giving it the next FSeqNo and
//!   flipping its parity; when none is reusable the log autogrows, and when it cannot grow the
//!   append fails with 9002 naming the reuse wait.
//! - Flushing with group commit: one session writes every sealed block and fdatasyncs while the
//!   others whose records it covers wait on it. The time each committing session spends
//!   waiting for its LSN to be durable is its WRITELOG wait.
//! - The log writer ([`LogManager::start_writer`]): a system task that writes sealed blocks as
//!   [`LOG_WRITER_BATCH_BLOCKS`] of them accumulate, so that appends overlap the log's writes.
//!   An appender wakes it; while batches keep coming it looks for the next one itself every
//!   [`LOG_WRITER_POLL_INTERVAL`], so a streaming log costs its appender no wake-up per batch.
//! - The log cache: [`LOG_BUFFERS`] (128) sealed blocks, as SQL Server keeps at most 128 log
//!   buffers per database. An append that leaves it full (the writer behind, or not started)
//!   flags it; one session then writes it (or waits for the one writing) once its mtr has
//!   released its page latches: its LOGBUFFER wait. Others go on appending meanwhile, so the
//!   cache can pass 128 blocks for that while. The written blocks' buffers are sealed into
//!   again.
//! - Truncation: [`LogManager::truncate`] marks VLFs wholly before MinLSN reusable (called by
//!   checkpoints in SIMPLE recovery; FULL waits for a log backup: LOG_BACKUP).
//! - Shrinking: [`LogManager::shrink_file`] (DBCC SHRINKFILE) removes inactive VLFs from the end
//!   of a log file, rounding the target up to a VLF boundary; an active VLF stops it, and the
//!   log keeps [`MIN_LOG_VLFS`] VLFs.
//! - Rollback reservations: open transactions reserve what their undo will log; a group that
//!   is not a compensation must leave that much free (growing the log first, or 9002), so a
//!   rollback never runs out of log.
//!
//! Deviations: the VLF header, block and record layouts are extentdb's (SQL Server's are
//! undocumented; docs/format/log-file.md); FSeqNo starts at 1 in a new database (SQL Server
//! continues model's); end-of-log detection uses block checksums chained from block to block
//! instead of per-sector parity bits; the log writer is one thread per database, not SQL
//! Server's one per instance.
//!
//! A failed log write or sync stops the log, as SQL Server's does: 17053 and "Write error
//! during log flush." go to the errorlog once, and every later flush (the commit's first)
//! returns 9001 until the database restarts (the T-SQL server shuts it down and restarts it;
//! recovery decides what reached the disk). Retrying a failed fsync would be unsafe: the
//! kernel may have dropped the pages it could not write.
//!
//! Latch and lock order: `chain_crc` before `state` (the log's append mutex) before `flush`; a
//! flusher holds `flush`'s writing flag, never the mutex, while it writes.
//!
//! Invariants:
//! 1. Every record with LSN <= `flushed_lsn` is durable (fdatasync returned after its write).
//! 2. The current VLF is never reusable; VLFs between MinLSN's and the current one are active.
//! 3. FSeqNos of used VLFs are distinct, and the VLF with FSeqNo n + 1 follows n in the log.
//! 4. A checkpoint's MinLSN is at or before the BEGIN of every transaction open when its own
//!    BEGIN record was appended. It is read under the append lock with that record: a
//!    transaction's BEGIN is registered under that lock, and its end is unregistered only
//!    after its end record is appended, so a transaction missing from the table then either
//!    had not begun or had its end record before the checkpoint's (made durable by the
//!    checkpoint's own flush). Read later, a transaction whose commit was appended but not yet
//!    durable could drop out: analysis from MinLSN never saw its BEGIN, and recovery kept its
//!    changes though its commit was lost.

pub mod block;
pub mod lsn;
pub mod mtr;
pub mod record;
pub mod vlf;

use crate::database::{BackgroundTask, TaskScheduler};
use crate::error::{SqlError, SqlResult};
use crate::file::{FileHeader, FileType};
use crate::filegroup::{Growth, grown_size_pages};
use crate::instance::Instance;
use crate::io::IoFile;
use crate::units::PAGE_SIZE_U64;
use block::{BlockBuilder, MAX_BLOCK_BYTES, SECTOR_BYTES};
use lsn::Lsn;
use parking_lot::{Condvar, Mutex};
use record::{Context, LogRecord, Operation};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vlf::{FIRST_VLF_OFFSET, VLF_HEADER_BYTES, VlfHeader, VlfRule};

/// Wait type of a session waiting for its log records to become durable.
pub const WRITELOG: &str = "WRITELOG";
/// Wait type of a session that ended a log block while every log buffer was full: it waits
/// for the buffers to be written.
pub const LOGBUFFER: &str = "LOGBUFFER";
/// The smallest log file: 512 KB, as in SQL Server.
pub const MIN_LOG_FILE_PAGES: u32 = 64;
/// Growths one append may make to find room before it reports 9002.
const MAX_GROWTHS_PER_APPEND: u32 = 64;
/// Autogrowths up to this size use IFI under the 2022 rule.
const LOG_IFI_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// The most bytes of consecutive log blocks gathered into one write (1 MB).
const MAX_GATHERED_WRITE_BYTES: u64 = 1024 * 1024;
/// The log cache: when this many sealed blocks wait to be written (SQL Server's 128 log
/// buffers per database, 60 KB each; the log writer behind or not started), the appending
/// session writes them once it holds no page latch ([`LogManager::write_cache_if_full`]).
/// Their buffers are kept for sealing into again.
pub const LOG_BUFFERS: usize = 128;
/// The log writer ([`LogManager::start_writer`]) is woken when this many sealed blocks wait:
/// about 1 MB, one gathered write.
pub const LOG_WRITER_BATCH_BLOCKS: usize = 16;
/// How long a fiber waiting for the log writer's flush parks before it looks again at whether
/// the writer still runs (it is woken as soon as a write ends).
const FIBER_FLUSH_RECHECK: std::time::Duration = std::time::Duration::from_millis(50);
/// How often the log writer looks for a batch itself while blocks keep coming.
pub const LOG_WRITER_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_micros(200);
/// After this many looks that found no batch, the log writer sleeps until asked again.
pub const LOG_WRITER_IDLE_POLLS: u32 = 10;
/// The session id the log writer runs as (a system session, below 51).
pub const LOG_WRITER_SPID: u16 = 21;

/// Why the log cannot be truncated (sys.databases.log_reuse_wait_desc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReuseWait {
    Nothing,
    Checkpoint,
    LogBackup,
    ActiveTransaction,
}

impl ReuseWait {
    pub fn desc(self) -> &'static str {
        match self {
            ReuseWait::Nothing => "NOTHING",
            ReuseWait::Checkpoint => "CHECKPOINT",
            ReuseWait::LogBackup => "LOG_BACKUP",
            ReuseWait::ActiveTransaction => "ACTIVE_TRANSACTION",
        }
    }
}

/// A VLF as the log keeps it in memory.
#[derive(Clone, Copy, Debug)]
struct Vlf {
    header: VlfHeader,
    /// Bytes from the VLF's start to the end of its last block (8192 when it has none).
    end_bytes: u64,
}

/// A log file of an open database.
pub struct LogFile {
    pub file_id: u16,
    pub logical_name: String,
    pub path: PathBuf,
    pub size_pages: u32,
    pub growth: Growth,
    pub max_size_pages: Option<u32>,
    pub created_ms: i64,
    /// Shared with a flush, which writes blocks without holding the log's mutex.
    handle: Arc<dyn IoFile>,
    vlfs: Vec<Vlf>,
}

impl LogFile {
    /// The file's header page content with the given size.
    pub fn header(&self, size_pages: u32, database_id: u16, binding_id: u64) -> FileHeader {
        let (growth, is_percent_growth) = match self.growth {
            Growth::None => (0, false),
            Growth::Pages(pages) => (pages, false),
            Growth::Percent(pct) => (pct, true),
        };
        FileHeader {
            file_id: self.file_id,
            file_type: FileType::Log,
            is_primary: false,
            data_space_id: 0,
            size_pages,
            max_size_pages: self.max_size_pages.map_or(-1, |p| p as i32),
            growth,
            is_percent_growth,
            database_id,
            binding_id,
            created_ms: self.created_ms,
            logical_name: self.logical_name.clone(),
        }
    }

    pub fn io(&self) -> &dyn IoFile {
        self.handle.as_ref()
    }

    fn path_text(&self) -> String {
        self.path.display().to_string()
    }

    fn size_bytes(&self) -> u64 {
        u64::from(self.size_pages) * PAGE_SIZE_U64
    }
}

/// What a new log file is made of.
pub struct NewLogFile {
    pub file_id: u16,
    pub logical_name: String,
    pub path: PathBuf,
    pub size_pages: u32,
    pub growth: Growth,
    pub max_size_pages: Option<u32>,
    pub created_ms: i64,
    pub handle: Box<dyn IoFile>,
}

/// What DBCC SHRINKFILE did to a log file ([`LogManager::shrink_file`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogShrink {
    /// The file's size after the shrink.
    pub size_pages: u32,
    /// The smallest size the file could be shrunk to now: its end after the last VLF that must
    /// stay (an active one, or the second VLF of the log).
    pub minimum_pages: u32,
    /// Why the file stayed above the target, if it did.
    pub stopped_by: Option<ShrinkStop>,
}

/// What kept a log file's shrink above its target: SQL Server's 9008 and 9006.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkStop {
    /// An active VLF (part of the logical log) is the last one that could go.
    ActiveVlf,
    /// The log keeps at least [`MIN_LOG_VLFS`] VLFs.
    VlfMinimum,
}

/// The fewest VLFs a shrink leaves in the log (over all its files), as in SQL Server.
pub const MIN_LOG_VLFS: usize = 2;

/// A database that starts up with more VLFs than this gets message 9017 in the errorlog
/// (SQL Server 2012 and later; 2008 R2 SP2 warned past 1,000).
pub const EXCESSIVE_VLF_COUNT: usize = 10_000;

/// Message 9017, written to the errorlog when a database with more than
/// [`EXCESSIVE_VLF_COUNT`] VLFs starts up (reference §3.6); None for fewer.
pub fn excessive_vlfs_message(database_name: &str, vlf_count: usize) -> Option<String> {
    (vlf_count > EXCESSIVE_VLF_COUNT).then(|| {
        format!(
            "Database {database_name} has more than {EXCESSIVE_VLF_COUNT} virtual log files which \
             is excessive. Too many virtual log files can cause long startup and backup times. \
             Consider shrinking the log and using a different growth increment to reduce the \
             number of virtual log files."
        )
    })
}

/// A transaction whose begin record is in the log and that has not ended, as DBCC OPENTRAN
/// reports it: the begin record's LSN, the session, the name, and when the record was
/// written (its first change; SQL Server's start time is its BEGIN TRAN, a deviation of at
/// most the time before the first change).
#[derive(Clone, Debug, PartialEq)]
pub struct OpenTransaction {
    pub xact_id: u64,
    pub begin_lsn: Lsn,
    pub spid: u16,
    pub name: std::sync::Arc<str>,
    pub begin_time: chrono::NaiveDateTime,
    /// What it has logged so far (sys.dm_tran_database_transactions), kept by its session.
    pub log_use: std::sync::Arc<TransactionLogUse>,
}

/// A transaction's log records, bytes and rollback reservation so far: written by its own
/// session only (a load and a store, no read-modify-write on the row path), read by the DMV.
#[derive(Debug, Default)]
pub struct TransactionLogUse {
    record_count: std::sync::atomic::AtomicU64,
    bytes_used: std::sync::atomic::AtomicU64,
    bytes_reserved: std::sync::atomic::AtomicU64,
    /// The rollback under way, if one is (KILL ... WITH STATUSONLY reads it).
    rollback: parking_lot::Mutex<Option<RollbackProgress>>,
}

/// How far a transaction's rollback has come: its undo entries in all, and those taken off its
/// undo list so far (undone, or being undone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollbackProgress {
    pub total_entries: u64,
    pub undone_entries: u64,
    pub started: std::time::Instant,
}

impl RollbackProgress {
    /// SQL Server's estimate (message 6109): the per cent undone, and the seconds left at the
    /// rate so far (0 until an entry is undone).
    pub fn estimate(&self, now: std::time::Instant) -> (u32, u64) {
        if self.total_entries == 0 {
            return (100, 0);
        }
        let percent = self.undone_entries * 100 / self.total_entries;
        let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
        let left = self.total_entries - self.undone_entries;
        let seconds = if self.undone_entries == 0 {
            0.0
        } else {
            elapsed * left as f64 / self.undone_entries as f64
        };
        (percent as u32, seconds.ceil() as u64)
    }
}

impl TransactionLogUse {
    /// A group of `records` records and `bytes` bytes was appended for the transaction, and
    /// `reserved` more bytes were set aside for its rollback. Called by its session alone.
    pub fn add(&self, records: u64, bytes: u64, reserved: u64) {
        let add = |counter: &std::sync::atomic::AtomicU64, n: u64| {
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            counter.store(counter.load(relaxed) + n, relaxed)
        };
        add(&self.record_count, records);
        add(&self.bytes_used, bytes);
        add(&self.bytes_reserved, reserved);
    }

    /// A rollback of `total_entries` undo entries begins (None: it ended).
    pub fn rollback_began(&self, total_entries: Option<u64>) {
        *self.rollback.lock() = total_entries.map(|total_entries| RollbackProgress {
            total_entries,
            undone_entries: 0,
            started: std::time::Instant::now(),
        });
    }

    /// The rollback under way takes its next undo entry.
    pub fn rollback_step(&self) {
        if let Some(progress) = self.rollback.lock().as_mut() {
            progress.undone_entries += 1;
        }
    }

    /// The rollback under way, if one is.
    pub fn rollback_progress(&self) -> Option<RollbackProgress> {
        *self.rollback.lock()
    }

    /// (log record count, log bytes used, log bytes reserved).
    pub fn read(&self) -> (u64, u64, u64) {
        let load = |counter: &std::sync::atomic::AtomicU64| {
            counter.load(std::sync::atomic::Ordering::Relaxed)
        };
        (load(&self.record_count), load(&self.bytes_used), load(&self.bytes_reserved))
    }
}

impl PartialEq for TransactionLogUse {
    fn eq(&self, other: &TransactionLogUse) -> bool {
        self.read() == other.read()
    }
}

/// One row of sys.dm_db_log_info (reference §5.3).
#[derive(Clone, Debug, PartialEq)]
pub struct LogInfoRow {
    pub database_id: u16,
    pub file_id: u16,
    pub vlf_begin_offset: u64,
    pub vlf_size_mb: f64,
    pub vlf_sequence_number: u32,
    pub vlf_active: bool,
    /// 0 inactive, 1 initialised but unused, 2 active.
    pub vlf_status: u8,
    pub vlf_parity: u8,
    pub vlf_first_lsn: String,
    pub vlf_create_lsn: String,
}

/// A log's figures for sys.dm_db_log_stats ([`LogManager::log_stats`]).
#[derive(Clone, Debug)]
pub struct LogStats {
    /// MinLSN: the log before it is no longer needed (log_min_lsn).
    pub min_lsn: Lsn,
    pub end_lsn: Lsn,
    /// The VLF the end of the log is in (0 if nothing was written yet).
    pub current_vlf_sequence_number: u32,
    pub current_vlf_size_bytes: u64,
    pub total_vlf_count: u64,
    pub total_log_size_bytes: u64,
    /// VLFs from MinLSN's on (status 2 in DBCC LOGINFO).
    pub active_vlf_count: u64,
    pub active_log_size_bytes: u64,
}

/// One row of DBCC LOGINFO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogInfoDbccRow {
    pub recovery_unit_id: u32,
    pub file_id: u16,
    pub file_size: u64,
    pub start_offset: u64,
    pub fseqno: u32,
    /// 0 reusable, 2 active.
    pub status: u8,
    pub parity: u8,
    pub create_lsn: u128,
}

/// A log file growth, as the default trace records it (EventClass 93 when automatic).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogGrowth {
    pub file_id: u16,
    pub logical_name: String,
    pub old_size_pages: u32,
    pub new_size_pages: u32,
    pub duration_us: u64,
    pub is_automatic: bool,
    pub zeroed: bool,
    pub vlfs_added: usize,
    /// Local time the growth started.
    pub start_time: chrono::NaiveDateTime,
}

impl LogGrowth {
    /// The growth as a data file's growth event (the fields both have).
    pub fn as_growth_event(&self) -> crate::database::GrowthEvent {
        crate::database::GrowthEvent {
            file_id: self.file_id,
            logical_name: self.logical_name.clone(),
            old_size_pages: self.old_size_pages,
            new_size_pages: self.new_size_pages,
            duration_us: self.duration_us,
            is_automatic: self.is_automatic,
            zeroed: self.zeroed,
            start_time: self.start_time,
        }
    }
}

/// One row of fn_dblog(NULL, NULL), with its column names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbLogRow {
    /// Current LSN, in fn_dblog's hex form.
    pub current_lsn: String,
    pub operation: &'static str,
    pub context: &'static str,
    /// Transaction ID, as `0000:000002e5` (0000:00000000 for records of no transaction).
    pub transaction_id: String,
    pub previous_lsn: String,
    pub flag_bits: u16,
    pub log_record_length: u32,
    /// AllocUnitId of a row record.
    pub alloc_unit_id: Option<u64>,
    /// Page ID of a page record, as `0001:00000010`.
    pub page_id: Option<String>,
}

/// Log flush figures (I/O statistics of the log).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFlushStats {
    pub flushes: u64,
    pub bytes_flushed: u64,
    pub largest_flush_bytes: u64,
    pub records_appended: u64,
}

/// A write the next flush makes: a sealed block or a VLF header.
struct PendingWrite {
    file_id: u16,
    offset: u64,
    bytes: Vec<u8>,
    /// A log block, whose checksums are stamped as it is written (a VLF header is not).
    is_block: bool,
}

/// What the free bytes outside the current VLF depend on. A VLF's status changes only when
/// MinLSN moves or the log enters a VLF (which gives the new current VLF its FSeqNo); the set
/// of VLFs and their sizes only when a file grows, shrinks, joins or leaves the log. The
/// current FSeqNo is redundant with the other two (the log returns to a VLF only once MinLSN
/// has passed it) and is kept so that the key does not rest on that argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OtherFreeKey {
    current: VlfPos,
    current_fseqno: u32,
    min_seqno: u32,
    vlf_count: usize,
    size_pages: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct VlfPos {
    file_id: u16,
    index: usize,
}

struct LogState {
    files: BTreeMap<u16, LogFile>,
    current: VlfPos,
    open: BlockBuilder,
    /// Where the open block goes, in bytes from the current VLF's start.
    open_offset: u64,
    /// Checksum of the last block on disk when the log was opened (0 for a new log): where
    /// [`LogManager`]'s chain of stamped blocks starts.
    prev_crc: u32,
    pending: Vec<PendingWrite>,
    /// The last record appended.
    end_lsn: Lsn,
    /// The last record in a sealed block: what a write of the sealed blocks alone makes
    /// durable (the log writer's).
    sealed_lsn: Lsn,
    /// MinLSN: VLFs whose FSeqNo is below its FSeqNo are reusable.
    min_lsn: Lsn,
    reuse_wait: ReuseWait,
    growths: Vec<LogGrowth>,
    stats: LogFlushStats,
    /// A group failed part way: an abort marker goes before the next record.
    group_broken: bool,
    /// Log space set aside for the rollback of open transactions.
    reserved_bytes: u64,
    /// Buffers of written blocks, sealed into again (at most [`LOG_BUFFERS`]): a fresh 60 KB
    /// buffer per block cost a page fault per 4 KB (glibc hands such buffers back to the
    /// kernel when they are freed).
    spare_blocks: Vec<Vec<u8>>,
    /// [`LogState::other_free_bytes`]'s last answer, with what it depended on.
    other_free_cache: std::cell::Cell<Option<(OtherFreeKey, u64)>>,
}

struct FlushState {
    flushed_lsn: Lsn,
    writing: bool,
    failed: Option<SqlError>,
    /// Fibers waiting for a flush ([`crate::fiber`]): woken after each write.
    fiber_waiters: Vec<crate::scheduler::Waker>,
    /// A fiber asked the log writer to write the open block too (fibers do not write the log
    /// themselves: the write would stall their scheduler's other fibers).
    seal_requested: bool,
}

/// The log of one database.
pub struct LogManager {
    instance: Arc<Instance>,
    database_id: u16,
    database_name: String,
    binding_id: u64,
    rule: VlfRule,
    state: Mutex<LogState>,
    flush: Mutex<FlushState>,
    flushed: Condvar,
    next_xact_id: std::sync::atomic::AtomicU64,
    /// Set by an append that left the log cache full ([`LOG_BUFFERS`] sealed blocks).
    cache_full: std::sync::atomic::AtomicBool,
    /// The log writer task, once [`LogManager::start_writer`] has started it.
    writer: Arc<BackgroundTask>,
    writer_started: std::sync::atomic::AtomicBool,
    /// Set when the writer was asked to write, cleared when it takes the blocks.
    writer_requested: std::sync::atomic::AtomicBool,
    /// Set while the writer looks for batches itself ([`log_writer_loop`]): appenders do not
    /// wake it. Read by appenders under the append lock; cleared by the writer before it looks
    /// a last time under that lock.
    writer_polling: std::sync::atomic::AtomicBool,
    /// How many times an appender woke the writer (tests: a streaming log wakes it rarely).
    writer_wakes: std::sync::atomic::AtomicU64,
    /// [`LOG_WRITER_IDLE_POLLS`], unless a test set another ([`LogManager::set_writer_idle_polls`]).
    writer_idle_polls: std::sync::atomic::AtomicU32,
    /// The checksum of the last block stamped: the next block's predecessor. A writer holds it
    /// from taking the pending blocks until they are stamped, so blocks are chained in log
    /// order (block invariant 3) outside the append lock.
    chain_crc: Mutex<u32>,
    /// Open transactions (those whose begin record is written) by id.
    open_transactions: Mutex<BTreeMap<u64, OpenTransaction>>,
    /// Transactions begun since the database opened (Transactions/sec).
    transactions_started: std::sync::atomic::AtomicU64,
    /// Shrinks that removed VLFs since the database opened (Log Shrinks).
    shrinks: std::sync::atomic::AtomicU64,
}

/// The log writer's body. Idle, it sleeps until an appender asks for it (once
/// [`LOG_WRITER_BATCH_BLOCKS`] blocks are sealed). Once asked, it writes, then looks for the
/// next batch itself every [`LOG_WRITER_POLL_INTERVAL`] while [`LogManager::writer_polling`]
/// tells appenders not to wake it, and goes back to sleep after [`LOG_WRITER_IDLE_POLLS`]
/// looks that found no batch. A wake-up costs the appender a futex call and the other CPU an
/// interrupt (tens of microseconds on a VM, `docs/benchmarks.md`); a log that streams (one
/// long transaction, seed 002) would pay one per batch, about 1 MB.
fn log_writer_loop(task: &BackgroundTask, weak: &std::sync::Weak<LogManager>) {
    task.serve(LOG_WRITER_SPID, || write_while_streaming(task, weak));
}

/// Writes the batch it was asked for, and the batches that follow while they keep coming
/// (polling). Holds the log only while it looks or writes, so that dropping the database's
/// last reference still closes it. False when the task should end (stopped, or the log gone).
fn write_while_streaming(task: &BackgroundTask, weak: &std::sync::Weak<LogManager>) -> bool {
    use std::sync::atomic::Ordering;
    let mut idle_polls = 0;
    loop {
        {
            let Some(log) = weak.upgrade() else { return false };
            if idle_polls == 0 {
                // Set before the write: appenders that fill a batch meanwhile leave it to the
                // next look.
                log.writer_polling.store(true, Ordering::SeqCst);
                log.write_sealed_blocks();
            }
            if idle_polls >= log.writer_idle_polls.load(Ordering::Relaxed) {
                // Appenders ask again from here on. One that saw the flag set while its block
                // made the batch asked nobody: look once more, under the append lock it held.
                log.writer_polling.store(false, Ordering::SeqCst);
                if !log.writer_has_work() {
                    return true;
                }
                idle_polls = 0;
                continue;
            }
        }
        task.take_request(Some(LOG_WRITER_POLL_INTERVAL));
        let Some(log) = weak.upgrade() else { return false };
        if task.stopped() {
            log.writer_polling.store(false, Ordering::SeqCst);
            return false;
        }
        let batch_waits = log.writer_has_work();
        idle_polls = if batch_waits { 0 } else { idle_polls + 1 };
    }
}

/// A failed write or sync of the log: the log stops. The OS error goes to the errorlog as
/// SQL Server writes it (17053, then "Write error during log flush."), and the error returned,
/// the one every later flush returns until the database restarts, is 9001.
struct LogWriteFailed(std::io::Error);

/// 823 for a failed write of VLF headers (a log's creation or growth, not a flush).
fn os_write_error(err: &std::io::Error, offset: u64, path: &str) -> SqlError {
    SqlError::os_io_error(err, true, offset, path)
}

/// 9004, with the place and the reason in the errorlog. The error itself is the caller's to
/// report (the server writes it to the errorlog when the database is marked SUSPECT, a
/// session when it reaches the client), as for every other error: writing it here too put it
/// in the errorlog twice.
fn log_corrupt(
    instance: &Instance,
    database: &str,
    state: u8,
    path: &str,
    offset: u64,
    why: &str,
) -> SqlError {
    let process_info = crate::instance::current_process_info();
    instance
        .errorlog
        .write(&process_info, &format!("Log file '{path}', offset {offset:#x}: {why}."));
    SqlError::log_corrupt(database, state)
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

impl LogManager {
    /// Formats new log files (already zeroed by the caller: creation always zeroes) with their
    /// VLFs, and starts the log in the first VLF of the first file with FSeqNo 1.
    pub fn create(
        instance: &Arc<Instance>,
        database_id: u16,
        database_name: &str,
        binding_id: u64,
        files: Vec<NewLogFile>,
    ) -> SqlResult<LogManager> {
        assert!(!files.is_empty(), "a database has at least one log file");
        let rule = instance.config.vlf_rule;
        let mut formatted = BTreeMap::new();
        for new in files {
            let file = Self::format_file(rule, new, database_id, binding_id)?;
            formatted.insert(file.file_id, file);
        }
        let first = *formatted.keys().next().expect("checked above");
        let mut state = LogState {
            files: formatted,
            current: VlfPos { file_id: first, index: 0 },
            open: BlockBuilder::default(),
            open_offset: VLF_HEADER_BYTES,
            prev_crc: 0,
            pending: Vec::new(),
            end_lsn: Lsn::NULL,
            sealed_lsn: Lsn::NULL,
            min_lsn: Lsn::new(1, 0, 0),
            reuse_wait: ReuseWait::Nothing,
            growths: Vec::new(),
            stats: LogFlushStats::default(),
            group_broken: false,
            reserved_bytes: 0,
            spare_blocks: Vec::new(),
            other_free_cache: std::cell::Cell::new(None),
        };
        let first_vlf = state.current;
        Self::enter_vlf(&mut state, first_vlf, 1);
        let log = Self::assemble(instance, database_id, database_name, binding_id, state);
        log.flush_all()?;
        Ok(log)
    }

    fn assemble(
        instance: &Arc<Instance>,
        database_id: u16,
        database_name: &str,
        binding_id: u64,
        state: LogState,
    ) -> LogManager {
        let flushed_lsn = state.end_lsn;
        LogManager {
            instance: instance.clone(),
            database_id,
            database_name: database_name.to_string(),
            binding_id,
            rule: instance.config.vlf_rule,
            chain_crc: Mutex::new(state.prev_crc),
            state: Mutex::new(state),
            flush: Mutex::new(FlushState {
                flushed_lsn,
                writing: false,
                failed: None,
                fiber_waiters: Vec::new(),
                seal_requested: false,
            }),
            flushed: Condvar::new(),
            next_xact_id: std::sync::atomic::AtomicU64::new(1),
            cache_full: std::sync::atomic::AtomicBool::new(false),
            writer: Arc::default(),
            writer_started: std::sync::atomic::AtomicBool::new(false),
            writer_requested: std::sync::atomic::AtomicBool::new(false),
            writer_polling: std::sync::atomic::AtomicBool::new(false),
            writer_wakes: std::sync::atomic::AtomicU64::new(0),
            writer_idle_polls: std::sync::atomic::AtomicU32::new(LOG_WRITER_IDLE_POLLS),
            open_transactions: Mutex::new(BTreeMap::new()),
            transactions_started: std::sync::atomic::AtomicU64::new(0),
            shrinks: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Writes the header page and the VLF headers of a new, zeroed log file, and syncs.
    fn format_file(
        rule: VlfRule,
        new: NewLogFile,
        database_id: u16,
        binding_id: u64,
    ) -> SqlResult<LogFile> {
        let mut file = LogFile {
            file_id: new.file_id,
            logical_name: new.logical_name,
            path: new.path,
            size_pages: new.size_pages,
            growth: new.growth,
            max_size_pages: new.max_size_pages,
            created_ms: new.created_ms,
            handle: Arc::from(new.handle),
            vlfs: Vec::new(),
        };
        let vlf_bytes = file.size_bytes() - FIRST_VLF_OFFSET;
        let sizes = vlf::vlf_sizes(rule, 0, vlf_bytes);
        Self::write_vlf_headers(&mut file, FIRST_VLF_OFFSET, &sizes, Lsn::NULL)?;
        let header = file.header(file.size_pages, database_id, binding_id);
        crate::database::write_header_page(file.io(), &header, &file.path)?;
        Ok(file)
    }

    /// Writes headers for new VLFs of `sizes` from `start` (FSeqNo 0) and syncs; adds them.
    fn write_vlf_headers(
        file: &mut LogFile,
        start: u64,
        sizes: &[u64],
        create_lsn: Lsn,
    ) -> SqlResult<()> {
        let mut offset = start;
        let mut added = Vec::with_capacity(sizes.len());
        for size in sizes {
            let header = VlfHeader {
                fseqno: 0,
                parity: 0,
                file_id: file.file_id,
                start_offset: offset,
                size_bytes: *size,
                create_lsn,
            };
            file.io()
                .write_at(&header.encode(), offset)
                .map_err(|err| os_write_error(&err, offset, &file.path_text()))?;
            added.push(Vlf { header, end_bytes: VLF_HEADER_BYTES });
            offset += size;
        }
        file.io().sync_data().map_err(|err| os_write_error(&err, start, &file.path_text()))?;
        file.vlfs.extend(added);
        Ok(())
    }

    /// Opens the log: discovers each file's VLFs from their headers and finds the end of the
    /// log by reading blocks along their checksum chain (block invariant 2), from the VLF of
    /// `scan_from` (recovery's MinLSN; the oldest VLF of the log when null). Returns the log and
    /// the records read on the way from `scan_from` on, which recovery replays: the log is read
    /// once at startup.
    pub fn open(
        instance: &Arc<Instance>,
        database_id: u16,
        database_name: &str,
        binding_id: u64,
        files: Vec<LogFile>,
        scan_from: Lsn,
    ) -> SqlResult<(LogManager, Vec<(Lsn, LogRecord)>)> {
        let mut discovered = BTreeMap::new();
        for mut file in files {
            file.vlfs = Self::discover_vlfs(instance, &file, database_name)?;
            discovered.insert(file.file_id, file);
        }
        let mut state = LogState {
            files: discovered,
            current: VlfPos { file_id: 0, index: 0 },
            open: BlockBuilder::default(),
            open_offset: VLF_HEADER_BYTES,
            prev_crc: 0,
            pending: Vec::new(),
            end_lsn: Lsn::NULL,
            sealed_lsn: Lsn::NULL,
            min_lsn: Lsn::NULL,
            reuse_wait: ReuseWait::Nothing,
            growths: Vec::new(),
            stats: LogFlushStats::default(),
            group_broken: false,
            reserved_bytes: 0,
            spare_blocks: Vec::new(),
            other_free_cache: std::cell::Cell::new(None),
        };
        let records = Self::find_end(instance, &mut state, database_name, scan_from)?;
        let log = Self::assemble(instance, database_id, database_name, binding_id, state);
        // A new block after every open: the log's timeline continues from here, so blocks a
        // crash left beyond the end can never join the chain.
        let lsn =
            log.append(&LogRecord::new(Operation::BeginCkpt, Context::Null, 0, Vec::new()))?;
        log.flush_to(lsn)?;
        Ok((log, records))
    }

    /// A log file as the database found it on disk, before VLF discovery.
    #[allow(clippy::too_many_arguments)]
    pub fn file_from_disk(
        file_id: u16,
        logical_name: String,
        path: PathBuf,
        size_pages: u32,
        growth: Growth,
        max_size_pages: Option<u32>,
        created_ms: i64,
        handle: Box<dyn IoFile>,
    ) -> LogFile {
        LogFile {
            file_id,
            logical_name,
            path,
            size_pages,
            growth,
            max_size_pages,
            created_ms,
            handle: Arc::from(handle),
            vlfs: Vec::new(),
        }
    }

    /// Reads VLF headers one after another from offset 8192 (VLF invariant 1).
    fn discover_vlfs(
        instance: &Instance,
        file: &LogFile,
        database_name: &str,
    ) -> SqlResult<Vec<Vlf>> {
        let mut vlfs = Vec::new();
        let mut offset = FIRST_VLF_OFFSET;
        let mut buf = [0u8; vlf::VLF_HEADER_SEALED_BYTES];
        while offset < file.size_bytes() {
            file.io()
                .read_at(&mut buf, offset)
                .map_err(|err| SqlError::os_io_error(&err, false, offset, &file.path_text()))?;
            let header = VlfHeader::decode(&buf).map_err(|why| {
                log_corrupt(instance, database_name, 1, &file.path_text(), offset, why)
            })?;
            let fits = header.start_offset == offset
                && header.file_id == file.file_id
                && header.size_bytes >= vlf::MIN_VLF_BYTES
                && offset + header.size_bytes <= file.size_bytes();
            if !fits {
                let why = "VLF header does not tile the file";
                return Err(log_corrupt(
                    instance,
                    database_name,
                    1,
                    &file.path_text(),
                    offset,
                    why,
                ));
            }
            vlfs.push(Vlf { header, end_bytes: VLF_HEADER_BYTES });
            offset += header.size_bytes;
        }
        Ok(vlfs)
    }

    /// Positions of every VLF in use, by FSeqNo.
    fn used_by_fseqno(state: &LogState) -> Vec<(u32, VlfPos)> {
        let mut used = Vec::new();
        for (file_id, file) in &state.files {
            for (index, vlf) in file.vlfs.iter().enumerate() {
                if vlf.header.fseqno > 0 {
                    used.push((vlf.header.fseqno, VlfPos { file_id: *file_id, index }));
                }
            }
        }
        used.sort_by_key(|(fseqno, _)| *fseqno);
        used
    }

    /// Walks the newest run of consecutive FSeqNos block by block, from `scan_from`'s VLF when it
    /// is in the run; the last valid block is the end of the log, and the log continues after
    /// it. Returns the records from `scan_from` on.
    fn find_end(
        instance: &Instance,
        state: &mut LogState,
        database_name: &str,
        scan_from: Lsn,
    ) -> SqlResult<Vec<(Lsn, LogRecord)>> {
        let used = Self::used_by_fseqno(state);
        let Some(&(last_fseqno, last_pos)) = used.last() else {
            let path = state.files.values().next().map_or(String::new(), |f| f.path_text());
            return Err(log_corrupt(instance, database_name, 1, &path, 0, "no VLF in use"));
        };
        let mut run_start = used.len() - 1;
        while run_start > 0 && used[run_start - 1].0 + 1 == used[run_start].0 {
            run_start -= 1;
        }
        if let Some(at) = used[run_start..].iter().position(|(seq, _)| *seq == scan_from.seqno) {
            run_start += at; // VLFs before MinLSN's hold nothing recovery needs
        }
        let mut records = Vec::new();
        let mut sink = |lsn: Lsn, record: LogRecord| {
            if lsn >= scan_from {
                records.push((lsn, record));
            }
        };
        let mut prev_crc = None;
        let mut end = (last_pos, VLF_HEADER_BYTES, Lsn::NULL);
        for &(fseqno, pos) in &used[run_start..] {
            let (vlf_end, last_lsn, crc) = Self::scan_vlf(state, pos, prev_crc, &mut sink)?;
            state.vlf_mut(pos).end_bytes = vlf_end;
            if let Some(lsn) = last_lsn {
                end = (pos, vlf_end, lsn);
            }
            if crc.is_some() {
                prev_crc = crc;
            }
            if fseqno == last_fseqno || vlf_end == VLF_HEADER_BYTES {
                end.0 = pos;
                end.1 = vlf_end;
                break;
            }
        }
        state.current = end.0;
        state.open_offset = end.1;
        state.prev_crc = prev_crc.unwrap_or(0);
        state.end_lsn = end.2;
        state.sealed_lsn = end.2;
        state.min_lsn = Lsn::new(used[run_start].0, 0, 0);
        Ok(records)
    }

    /// Reads a VLF's blocks until one is invalid: (end offset, last record's LSN, last block's
    /// checksum). `prev_crc` None accepts whatever the first block names as predecessor.
    fn scan_vlf(
        state: &LogState,
        pos: VlfPos,
        mut prev_crc: Option<u32>,
        sink: &mut dyn FnMut(Lsn, LogRecord),
    ) -> SqlResult<(u64, Option<Lsn>, Option<u32>)> {
        let file = &state.files[&pos.file_id];
        let vlf = file.vlfs[pos.index];
        let fseqno = vlf.header.fseqno;
        let mut at = VLF_HEADER_BYTES;
        let mut last_lsn = None;
        let mut last_crc = None;
        let mut head = [0u8; SECTOR_BYTES];
        while at + SECTOR_BYTES as u64 <= vlf.header.size_bytes {
            let offset = vlf.header.start_offset + at;
            let block_no = (at / SECTOR_BYTES as u64) as u32;
            file.io()
                .read_at(&mut head, offset)
                .map_err(|err| SqlError::os_io_error(&err, false, offset, &file.path_text()))?;
            let Some(header) = block::read_header(&head, fseqno, block_no) else { break };
            if at + header.size_bytes as u64 > vlf.header.size_bytes {
                break;
            }
            let mut whole = vec![0u8; header.size_bytes];
            file.io()
                .read_at(&mut whole, offset)
                .map_err(|err| SqlError::os_io_error(&err, false, offset, &file.path_text()))?;
            let expected = prev_crc.unwrap_or(header.prev_crc);
            let Some(records) = block::check_block(&whole, &header, expected) else { break };
            if !records.is_empty() {
                last_lsn = Some(Lsn::new(fseqno, block_no, records.len() as u16));
            }
            for (index, record) in records.into_iter().enumerate() {
                sink(Lsn::new(fseqno, block_no, index as u16 + 1), record);
            }
            prev_crc = Some(header.crc);
            last_crc = Some(header.crc);
            at += header.size_bytes as u64;
        }
        Ok((at, last_lsn, last_crc))
    }

    /// The durable records of the active log (from MinLSN's VLF on), in LSN order, read from
    /// the log files (fn_dblog's source; tests use it to see what reached the disk).
    pub fn read_durable(&self) -> SqlResult<Vec<(Lsn, LogRecord)>> {
        let from = Lsn::new(self.state.lock().min_lsn.seqno.max(1), 0, 0);
        self.read_from(from)
    }

    /// The durable records from `from` (the log's oldest VLF when null) to the end.
    pub fn read_from(&self, from: Lsn) -> SqlResult<Vec<(Lsn, LogRecord)>> {
        let state = self.state.lock();
        let mut records = Vec::new();
        let mut prev_crc = None;
        let used = Self::used_by_fseqno(&state);
        let oldest = used.first().map_or(1, |(fseqno, _)| *fseqno);
        let mut expected = if from.is_null() { oldest } else { from.seqno };
        for (fseqno, pos) in used {
            if fseqno < expected {
                continue;
            }
            if fseqno != expected {
                break;
            }
            let mut sink = |lsn: Lsn, record: LogRecord| {
                if lsn >= from {
                    records.push((lsn, record));
                }
            };
            let (end, _, crc) = Self::scan_vlf(&state, pos, prev_crc, &mut sink)?;
            if crc.is_some() {
                prev_crc = crc;
            }
            if end < state.vlf(pos).end_bytes || pos == state.current {
                break;
            }
            expected += 1;
        }
        Ok(records)
    }

    /// fn_dblog(NULL, NULL): one row per durable record of the active log, with fn_dblog's
    /// columns (reference §5.5).
    pub fn fn_dblog(&self) -> SqlResult<Vec<DbLogRow>> {
        let records = self.read_durable()?;
        Ok(records
            .into_iter()
            .map(|(lsn, record)| {
                let page = if record.flags & record::FLAG_PAGE != 0 {
                    mtr::decode_page_payload(&record.payload).map(|(page, _)| page)
                } else {
                    None
                };
                let au_id = match (record.flags & record::FLAG_PAGE, record.payload.len()) {
                    (0, n) if n >= 8 && record.xact_id != 0 => {
                        let mut bytes = [0u8; 8];
                        bytes.copy_from_slice(&record.payload[..8]);
                        Some(u64::from_le_bytes(bytes))
                    }
                    _ => None,
                };
                DbLogRow {
                    current_lsn: lsn.to_hex(),
                    operation: record.operation.name(),
                    context: record.context.name(),
                    transaction_id: format!(
                        "{:04x}:{:08x}",
                        record.xact_id >> 32,
                        record.xact_id & 0xFFFF_FFFF
                    ),
                    previous_lsn: record.prev_lsn.to_hex(),
                    flag_bits: record.flags,
                    log_record_length: record.encoded_len() as u32,
                    alloc_unit_id: au_id,
                    page_id: page.map(|p| format!("{:04x}:{:08x}", p.file_id, p.page_no)),
                }
            })
            .collect())
    }

    /// Makes `pos` the current VLF with `fseqno`, queueing its header for the next flush.
    fn enter_vlf(state: &mut LogState, pos: VlfPos, fseqno: u32) {
        let vlf = state.vlf_mut(pos);
        vlf.header.fseqno = fseqno;
        vlf.header.parity = vlf::next_parity(vlf.header.parity);
        vlf.end_bytes = VLF_HEADER_BYTES;
        let header = vlf.header;
        state.pending.push(PendingWrite {
            file_id: pos.file_id,
            offset: header.start_offset,
            bytes: header.encode().to_vec(),
            is_block: false,
        });
        state.current = pos;
        state.open_offset = VLF_HEADER_BYTES;
    }

    /// Appends a record to the open block; returns its LSN. The record is durable once
    /// [`LogManager::flush_to`] has returned for an LSN at or after it.
    pub fn append(&self, record: &LogRecord) -> SqlResult<Lsn> {
        self.append_then(record, |_| {})
    }

    /// Appends a record and runs `under_lock` with its LSN before the append lock is released.
    fn append_then(&self, record: &LogRecord, under_lock: impl FnOnce(Lsn)) -> SqlResult<Lsn> {
        let mut state = self.state.lock();
        let lsn = self.append_locked(&mut state, record, 0, &[])?;
        under_lock(lsn);
        self.note_cache(&state);
        drop(state);
        self.write_cache_if_full();
        Ok(lsn)
    }

    /// Under the append lock: flags a full log cache for [`LogManager::write_cache_if_full`].
    /// Also wakes the log writer, if it runs and is not polling, once [`LOG_WRITER_BATCH_BLOCKS`]
    /// are sealed.
    fn note_cache(&self, state: &LogState) {
        use std::sync::atomic::Ordering;
        if state.pending.len() >= LOG_BUFFERS {
            self.cache_full.store(true, Ordering::Release);
        }
        if state.pending.len() >= LOG_WRITER_BATCH_BLOCKS
            && self.writer_started.load(Ordering::Acquire)
            && !self.writer_polling.load(Ordering::SeqCst)
            && !self.writer_requested.swap(true, Ordering::AcqRel)
        {
            self.writer_wakes.fetch_add(1, Ordering::Relaxed);
            self.writer.request();
        }
    }

    /// Starts the log writer: a system task that writes sealed log blocks as they accumulate
    /// ([`LOG_WRITER_BATCH_BLOCKS`] at a time), so that a long transaction's appends overlap
    /// its log's writes and reach LOGBUFFER only when the device falls behind, as SQL Server's
    /// LOG WRITER task does. Without it (embedded use that never starts it) the log is written
    /// by commits and by the session that fills the cache.
    pub fn start_writer(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let task = Arc::clone(&self.writer);
        let io_cpus = self.instance.io_affinity_cpus.clone();
        let identity = crate::system_tasks::TaskIdentity {
            session_id: LOG_WRITER_SPID,
            command: "LOG WRITER",
            database_id: self.database_id,
            queue_wait: Some(crate::system_tasks::LOGMGR_QUEUE),
        };
        let listed = (self.instance.system_tasks.clone(), identity);
        self.writer.start("extentdb-logwriter", TaskScheduler::Hidden, listed, move || {
            crate::affinity::bind_io_thread(&io_cpus);
            log_writer_loop(&task, &weak)
        });
        self.writer_started.store(true, std::sync::atomic::Ordering::Release);
    }

    /// How many times appenders have woken the log writer.
    pub fn writer_wakes(&self) -> u64 {
        self.writer_wakes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the log writer is looking for batches itself (appenders do not wake it).
    pub fn writer_is_polling(&self) -> bool {
        self.writer_polling.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Test seam: how many looks that find no batch the log writer makes before it sleeps
    /// until asked ([`LOG_WRITER_IDLE_POLLS`] otherwise). Taken at its next look.
    pub fn set_writer_idle_polls(&self, polls: u32) {
        self.writer_idle_polls.store(polls, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the log writer has a write to make: a batch of sealed blocks, or a fiber's
    /// request for the open block.
    fn writer_has_work(&self) -> bool {
        // One lock at a time (a guard in the first operand of `||` would live to the end).
        let seal_requested = self.flush.lock().seal_requested;
        seal_requested || self.state.lock().pending.len() >= LOG_WRITER_BATCH_BLOCKS
    }

    /// Stops the log writer and waits for a write it has under way.
    pub fn stop_writer(&self) {
        self.writer_started.store(false, std::sync::atomic::Ordering::Release);
        self.writer.stop();
    }

    /// The log writer's turn: writes the sealed blocks (not the open one) unless a session is
    /// writing already, whose write takes them too. Nobody waits on it, so no wait is recorded;
    /// a failure stops the log as a session's write would (the next flush returns 9001).
    fn write_sealed_blocks(&self) {
        let mut flush = self.flush.lock();
        if flush.failed.is_some() || flush.writing {
            return;
        }
        let seal_open = std::mem::take(&mut flush.seal_requested);
        if !seal_open && self.state.lock().pending.is_empty() {
            return;
        }
        flush.writing = true;
        drop(flush);
        let written = self.write_pending(seal_open);
        let mut flush = self.flush.lock();
        flush.writing = false;
        match written {
            Ok(upto) => flush.flushed_lsn = flush.flushed_lsn.max(upto),
            Err(failure) => self.stop_after_write_failure(&mut flush, failure),
        }
        self.notify_flushed(&mut flush);
    }

    /// Wakes everyone waiting for a flush: threads on the condition variable, fibers by their
    /// wakers. Each looks again at the flushed LSN.
    fn notify_flushed(&self, flush: &mut FlushState) {
        self.flushed.notify_all();
        for waker in flush.fiber_waiters.drain(..) {
            waker.wake();
        }
    }

    /// Stops the log after a failed write or sync ([`LogWriteFailed`]): the first failure
    /// writes the OS error to the errorlog, and 9001 becomes the answer of every later flush.
    fn stop_after_write_failure(&self, flush: &mut FlushState, failure: LogWriteFailed) {
        if flush.failed.is_some() {
            return;
        }
        let process_info = crate::instance::current_process_info();
        let errorlog = &self.instance.errorlog;
        errorlog.write_error(&process_info, &SqlError::log_writer_os_error(&failure.0));
        errorlog.write(&process_info, "Write error during log flush.");
        flush.failed = Some(SqlError::log_not_available(&self.database_name));
    }

    /// False once a write or sync of this log has failed: the log has stopped, every flush
    /// returns 9001, and the database must restart (its recovery decides what was durable).
    pub fn is_available(&self) -> bool {
        self.flush.lock().failed.is_none()
    }

    /// Whether an append left the log cache full: the appender should call
    /// [`LogManager::write_cache_if_full`] once it holds no page latch.
    pub fn cache_is_full(&self) -> bool {
        self.cache_full.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Writes a full log cache, waiting as LOGBUFFER (or on the session already writing).
    /// One session takes the flag; the others go on appending meanwhile. A failed write stops
    /// the log for good and every later flush (a commit's first) reports it; the appends
    /// themselves succeeded, so nothing is returned.
    pub fn write_cache_if_full(&self) {
        if !self.cache_full.swap(false, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let state = self.state.lock();
        if state.pending.len() < LOG_BUFFERS {
            // Another session's write took the blocks since the flag was set.
            return;
        }
        let end = state.end_lsn;
        drop(state);
        let _ = self.flush_to_as(end, LOGBUFFER);
    }

    fn append_locked(
        &self,
        state: &mut LogState,
        record: &LogRecord,
        extra_flags: u16,
        tail: &[u8],
    ) -> SqlResult<Lsn> {
        if state.group_broken {
            let abort = LogRecord {
                flags: record::FLAG_GROUP_ABORT,
                ..LogRecord::new(Operation::AbortXact, Context::Null, 0, Vec::new())
            };
            self.place(state, &abort, 0, &[])?;
            state.group_broken = false;
        }
        self.place(state, record, extra_flags, tail)
    }

    fn place(
        &self,
        state: &mut LogState,
        record: &LogRecord,
        extra_flags: u16,
        tail: &[u8],
    ) -> SqlResult<Lsn> {
        let len = record.encoded_len_with(tail.len());
        if !state.open.is_empty() && state.open.size_with(len) > MAX_BLOCK_BYTES {
            state.seal_open();
        }
        let vlf_size = state.vlf(state.current).header.size_bytes;
        if state.open_offset + state.open.size_with(len) as u64 > vlf_size {
            state.seal_open();
            self.next_vlf(state)?;
        }
        // LSN slots count from 1, as SQL Server's do.
        let slot = state.open.push(record, extra_flags, tail) + 1;
        let fseqno = state.vlf(state.current).header.fseqno;
        let lsn = Lsn::new(fseqno, (state.open_offset / SECTOR_BYTES as u64) as u32, slot);
        state.end_lsn = lsn;
        state.stats.records_appended += 1;
        Ok(lsn)
    }

    /// Appends records as one group: recovery replays all of them or none (every record but
    /// the last carries [`record::FLAG_GROUP_CONTINUES`]). Returns each record's LSN.
    ///
    /// Log space reserved for rolling back open transactions is kept free: a group that would
    /// eat into it makes the log grow first, or fails with 9002 before anything is appended.
    /// A compensation group (`use_reserve`) may use the reserve: a rollback never runs out.
    /// `reserve_after` bytes join the reserve once the group is in (its row changes' undo).
    /// `tails` is empty, or holds for each record the bytes its payload ends with
    /// ([`LogRecord::encode_into`]; an insert's record read from its page).
    pub fn append_group<R: std::borrow::Borrow<LogRecord>>(
        &self,
        records: &[R],
        tails: &[&[u8]],
        use_reserve: bool,
        reserve_after: u64,
    ) -> SqlResult<SmallVec<[Lsn; 8]>> {
        assert!(!records.is_empty(), "a group has records");
        assert!(tails.is_empty() || tails.len() == records.len(), "a tail per record, or none");
        let tail = |i: usize| tails.get(i).copied().unwrap_or(&[]);
        let mut state = self.state.lock();
        let needed: u64 = records
            .iter()
            .enumerate()
            .map(|(i, r)| r.borrow().encoded_len_with(tail(i).len()) as u64 + 2)
            .sum::<u64>()
            + SECTOR_BYTES as u64;
        let reserve = if use_reserve { 0 } else { state.reserved_bytes };
        let mut growths = 0;
        while !state.has_room(reserve + needed) {
            growths += 1;
            if growths > MAX_GROWTHS_PER_APPEND {
                let reason = self.reuse_wait_now(&state).desc();
                return Err(SqlError::log_full(&self.database_name, reason));
            }
            self.autogrow(&mut state)?;
        }
        let mut lsns = SmallVec::new();
        for (i, record) in records.iter().enumerate() {
            let continues = if i + 1 < records.len() { record::FLAG_GROUP_CONTINUES } else { 0 };
            match self.append_locked(&mut state, record.borrow(), continues, tail(i)) {
                Ok(lsn) => lsns.push(lsn),
                Err(error) => {
                    // Records of the group already appended must never join a later group.
                    state.group_broken = i > 0;
                    return Err(error);
                }
            }
        }
        // Reserved in the same critical section as the append: one lock round per row change.
        state.reserved_bytes += reserve_after;
        self.note_cache(&state);
        Ok(lsns)
    }

    /// Moves the log to the next reusable VLF, growing the log when there is none.
    fn next_vlf(&self, state: &mut LogState) -> SqlResult<()> {
        let fseqno = state.vlf(state.current).header.fseqno + 1;
        let next = match state.next_reusable() {
            Some(pos) => pos,
            None => self.autogrow(state)?,
        };
        Self::enter_vlf(state, next, fseqno);
        Ok(())
    }

    /// Grows a log file by its FILEGROWTH (the current VLF's file first, then the others in
    /// file order); returns the first new VLF. 9002 when no file can grow.
    fn autogrow(&self, state: &mut LogState) -> SqlResult<VlfPos> {
        let mut order: Vec<u16> = vec![state.current.file_id];
        order.extend(state.files.keys().copied().filter(|id| *id != state.current.file_id));
        for file_id in order {
            let file = &state.files[&file_id];
            let Some(new_size) =
                grown_size_pages(file.size_pages, file.growth, file.max_size_pages)
            else {
                continue;
            };
            let first_new = file.vlfs.len();
            match self.grow_file(state, file_id, new_size, true) {
                Ok(()) => return Ok(VlfPos { file_id, index: first_new }),
                // The OS error goes to the errorlog; the session gets 9002, as in SQL Server.
                Err(error) => self
                    .instance
                    .errorlog
                    .write_error(&crate::instance::current_process_info(), &error),
            }
        }
        let reason = self.reuse_wait_now(state).desc();
        let error = SqlError::log_full(&self.database_name, reason);
        self.instance.errorlog.write_error(&crate::instance::current_process_info(), &error);
        Err(error)
    }

    /// Why the log cannot be reused right now, first reason first: LOG_BACKUP (FULL recovery),
    /// an open transaction that began in an older VLF, a checkpoint that would free VLFs, or
    /// what the last checkpoint said (reported by 9002 and log_reuse_wait_desc).
    fn reuse_wait_now(&self, state: &LogState) -> ReuseWait {
        // FULL recovery without a log backup pins every VLF first.
        if state.reuse_wait == ReuseWait::LogBackup {
            return ReuseWait::LogBackup;
        }
        let current = state.vlf(state.current).header.fseqno;
        // An open transaction pins the VLF its BEGIN is in, the current one included (a log
        // of one VLF, or a transaction begun in the current VLF, cannot wrap past it either).
        let oldest = self.oldest_open_transaction();
        if oldest.is_some_and(|begin| begin.seqno <= current) {
            return ReuseWait::ActiveTransaction;
        }
        if state.min_lsn.seqno < current {
            return ReuseWait::Checkpoint;
        }
        state.reuse_wait
    }

    /// Gives back a transaction's reservation when it ends.
    pub fn release(&self, bytes: u64) {
        let mut state = self.state.lock();
        state.reserved_bytes = state.reserved_bytes.saturating_sub(bytes);
    }

    /// Appends a transaction's BEGIN record and registers the transaction as open (its begin
    /// LSN pins the log) in the same critical section as the append. A checkpoint appends its
    /// own begin record under the same lock, so every transaction whose BEGIN precedes it is
    /// registered by then, and the checkpoint's MinLSN covers it. (Registered after the append,
    /// as before, a checkpoint could run in between: its MinLSN then passed the BEGIN, recovery
    /// never saw the transaction begin, and never rolled it back; the crash soak caught it.)
    /// `name` is the transaction's name for DBCC OPENTRAN.
    pub fn append_transaction_begin(
        &self,
        record: &LogRecord,
        name: std::sync::Arc<str>,
        log_use: std::sync::Arc<TransactionLogUse>,
    ) -> SqlResult<Lsn> {
        let spid = crate::instance::current_spid();
        let begin_time = self.instance.clock.now_local();
        // Lock order: the append lock, then the open-transaction table (as reuse_wait_now).
        let xact_id = record.xact_id;
        self.append_then(record, |begin_lsn| {
            let open = OpenTransaction { xact_id, begin_lsn, spid, name, begin_time, log_use };
            self.open_transactions.lock().insert(xact_id, open);
        })
    }

    /// The transactions open now that have logged, oldest first (sys.dm_tran_*).
    pub fn open_transactions(&self) -> Vec<OpenTransaction> {
        let mut open: Vec<OpenTransaction> =
            self.open_transactions.lock().values().cloned().collect();
        open.sort_by_key(|t| t.begin_lsn);
        open
    }

    /// Appends a checkpoint's BEGIN record and returns its LSN with the begin LSN of the oldest
    /// transaction open at that moment, read in the same critical section (invariant 4).
    pub fn append_checkpoint_begin(&self, record: &LogRecord) -> SqlResult<(Lsn, Option<Lsn>)> {
        let mut oldest = None;
        let lsn = self.append_then(record, |_| oldest = self.oldest_open_transaction())?;
        Ok((lsn, oldest))
    }

    pub fn note_transaction_end(&self, xact_id: u64) {
        self.open_transactions.lock().remove(&xact_id);
    }

    /// The begin LSN of the oldest open transaction.
    pub fn oldest_open_transaction(&self) -> Option<Lsn> {
        self.open_transactions.lock().values().map(|t| t.begin_lsn).min()
    }

    /// The oldest open transaction (DBCC OPENTRAN).
    pub fn oldest_open_transaction_info(&self) -> Option<OpenTransaction> {
        self.open_transactions.lock().values().min_by_key(|t| t.begin_lsn).cloned()
    }

    /// log_reuse_wait_desc as it stands.
    pub fn log_reuse_wait(&self) -> ReuseWait {
        let state = self.state.lock();
        self.reuse_wait_now(&state)
    }

    /// Grows a log file to `new_size_pages`: zeros (or IFI for a 2022-rule autogrowth of 64 MB
    /// or less), VLF headers, then the file header as the commit point.
    fn grow_file(
        &self,
        state: &mut LogState,
        file_id: u16,
        new_size_pages: u32,
        is_automatic: bool,
    ) -> SqlResult<()> {
        let started = Instant::now();
        let start_time = self.instance.clock.now_local();
        let create_lsn = state.end_lsn;
        let file = state.files.get_mut(&file_id).expect("growing a log file that exists");
        let old_size_pages = file.size_pages;
        let old_bytes = file.size_bytes();
        // Every VLF holds at least one largest block (VLF invariant 2).
        let new_size_pages = new_size_pages.max(old_size_pages + vlf::MIN_VLF_PAGES);
        let growth_bytes = u64::from(new_size_pages - old_size_pages) * PAGE_SIZE_U64;
        let use_ifi =
            is_automatic && self.rule == VlfRule::Sql2022 && growth_bytes <= LOG_IFI_MAX_BYTES;
        let path = file.path.clone();
        let extended = if use_ifi {
            file.io().allocate(old_bytes, growth_bytes)
        } else {
            crate::database::zero_fill(
                &self.instance,
                file.io(),
                &path,
                old_size_pages,
                new_size_pages,
            )
        };
        let sizes = vlf::vlf_sizes(self.rule, old_bytes, growth_bytes);
        let vlfs_before = file.vlfs.len();
        let durable = extended
            .map_err(|err| SqlError::expand_file_os_error(&err, &file.path_text()))
            .and_then(|()| Self::write_vlf_headers(file, old_bytes, &sizes, create_lsn))
            .and_then(|()| {
                let header = file.header(new_size_pages, self.database_id, self.binding_id);
                crate::database::write_header_page(file.io(), &header, &file.path)
            });
        if let Err(error) = durable {
            file.vlfs.truncate(vlfs_before);
            let _ = file.io().set_len(old_bytes);
            return Err(error);
        }
        file.size_pages = new_size_pages;
        let growth = LogGrowth {
            file_id,
            logical_name: state.files[&file_id].logical_name.clone(),
            old_size_pages,
            new_size_pages,
            duration_us: elapsed_us(started),
            is_automatic,
            zeroed: !use_ifi,
            vlfs_added: sizes.len(),
            start_time,
        };
        if self.instance.xevents.is_enabled(crate::xevent::catalog::DATABASE_FILE_SIZE_CHANGE) {
            let change = crate::database::size_change_of(
                self.database_id,
                &self.database_name,
                "log",
                growth.as_growth_event(),
            );
            self.instance.xevents.file_size_changed(&change);
        }
        state.growths.push(growth);
        Ok(())
    }

    /// DBCC SHRINKFILE on a log file: removes VLFs from the end of the file while each is
    /// inactive (reusable or never used), the file stays at or above `target_pages` (so the
    /// target is rounded up to a VLF boundary, as in SQL Server), and the log keeps at least
    /// [`MIN_LOG_VLFS`] VLFs (and the file one). The header page, with the new size, is made
    /// durable before the file is truncated: a crash (or a failed truncation) in between
    /// leaves a file longer than its header says, whose tail VLF discovery never reads.
    pub fn shrink_file(&self, file_id: u16, target_pages: u32) -> SqlResult<LogShrink> {
        let mut state = self.state.lock();
        let total_vlfs: usize = state.files.values().map(|f| f.vlfs.len()).sum();
        let file = &state.files[&file_id];
        let vlfs = &file.vlfs;
        // The first VLF of the tail that may go, and what stops the tail growing further.
        let mut first_removable = vlfs.len();
        // Reaching the file's first VLF, which stays, counts as the VLF minimum.
        let mut stop = ShrinkStop::VlfMinimum;
        while first_removable > 1 {
            let pos = VlfPos { file_id, index: first_removable - 1 };
            let removed = vlfs.len() - first_removable + 1;
            if total_vlfs - removed < MIN_LOG_VLFS {
                break;
            }
            if pos == state.current || state.status_of(&vlfs[pos.index]) == 2 {
                stop = ShrinkStop::ActiveVlf;
                break;
            }
            first_removable -= 1;
        }
        let start_of = |index: usize| vlfs.get(index).map(|v| v.header.start_offset);
        let minimum_bytes = start_of(first_removable).unwrap_or(file.size_bytes());
        let target_bytes = u64::from(target_pages) * PAGE_SIZE_U64;
        let mut keep = first_removable;
        while keep < vlfs.len() && vlfs[keep].header.start_offset < target_bytes {
            keep += 1;
        }
        let wanted_more = keep == first_removable
            && first_removable > 0
            && start_of(first_removable - 1).is_some_and(|start| start >= target_bytes);
        let outcome = LogShrink {
            size_pages: file.size_pages,
            minimum_pages: (minimum_bytes / PAGE_SIZE_U64) as u32,
            stopped_by: wanted_more.then_some(stop),
        };
        if keep == vlfs.len() {
            return Ok(outcome);
        }
        let new_bytes = vlfs[keep].header.start_offset;
        assert_eq!(new_bytes % PAGE_SIZE_U64, 0, "VLFs start on pages (VLF invariant 1)");
        let new_size_pages = (new_bytes / PAGE_SIZE_U64) as u32;
        let header = file.header(new_size_pages, self.database_id, self.binding_id);
        crate::database::write_header_page(file.io(), &header, &file.path)?;
        // The header is the truth from here: the tail's VLFs are gone even if the truncation
        // below fails (the file is then only longer than it needs to be).
        let file = state.files.get_mut(&file_id).expect("the file looked at above");
        file.vlfs.truncate(keep);
        file.size_pages = new_size_pages;
        self.shrinks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = file.path_text();
        file.io()
            .set_len(new_bytes)
            .and_then(|()| file.io().sync_data())
            .map_err(|err| SqlError::os_io_error(&err, true, new_bytes, &path))?;
        Ok(LogShrink { size_pages: new_size_pages, ..outcome })
    }

    /// ALTER DATABASE MODIFY FILE (SIZE = larger) on a log file: a manual, zeroed growth.
    pub fn grow_manually(&self, file_id: u16, new_size_pages: u32) -> SqlResult<()> {
        let mut state = self.state.lock();
        self.grow_file(&mut state, file_id, new_size_pages, false)
    }

    /// Waits until every record up to `lsn` is durable, writing the log itself when no other
    /// session is (group commit). Time spent waiting is recorded as WRITELOG.
    pub fn flush_to(&self, lsn: Lsn) -> SqlResult<()> {
        self.flush_to_as(lsn, WRITELOG)
    }

    /// [`LogManager::flush_to`], recording any wait as `wait_type`.
    fn flush_to_as(&self, lsn: Lsn, wait_type: &'static str) -> SqlResult<()> {
        let started = Instant::now();
        let mut waited = false;
        let mut suspended = None;
        let mut flush = self.flush.lock();
        let result = loop {
            if let Some(error) = &flush.failed {
                break Err(error.clone());
            }
            if flush.flushed_lsn >= lsn {
                break Ok(());
            }
            waited = true;
            // The worker's scheduler runs another worker while this one waits for the log.
            suspended.get_or_insert_with(crate::scheduler::suspend);
            if crate::fiber::on_fiber()
                && self.writer_started.load(std::sync::atomic::Ordering::Acquire)
            {
                // A fiber leaves the write to the log writer, as SQL Server's sessions do.
                flush.fiber_waiters.push(crate::scheduler::waker());
                flush.seal_requested = true;
                drop(flush);
                self.writer.request();
                // Woken after the writer's next write; the timeout looks again should the
                // writer have stopped meanwhile (the fiber then writes the log itself).
                crate::fiber::park_timeout(FIBER_FLUSH_RECHECK);
                flush = self.flush.lock();
                continue;
            }
            if flush.writing {
                self.flushed.wait(&mut flush);
                continue;
            }
            flush.writing = true;
            drop(flush);
            let written = self.write_pending(true);
            flush = self.flush.lock();
            flush.writing = false;
            match written {
                Ok(upto) => flush.flushed_lsn = flush.flushed_lsn.max(upto),
                Err(failure) => self.stop_after_write_failure(&mut flush, failure),
            }
            self.notify_flushed(&mut flush);
        };
        drop(flush);
        let signal = suspended.map_or(Duration::ZERO, crate::scheduler::Suspended::resume);
        // A flush that failed was waited on all the same.
        if waited {
            self.instance.waits.record(wait_type, started.elapsed(), signal);
        }
        result
    }

    /// Flushes everything appended so far.
    pub fn flush_all(&self) -> SqlResult<()> {
        let end = self.state.lock().end_lsn;
        if end.is_null() {
            // Only VLF headers may be pending (a new log): write them.
            return match self.write_pending(true) {
                Ok(_) => Ok(()),
                Err(failure) => {
                    let mut flush = self.flush.lock();
                    self.stop_after_write_failure(&mut flush, failure);
                    Err(flush.failed.clone().expect("the log stopped"))
                }
            };
        }
        self.flush_to(end)
    }

    /// Writes every pending write, after sealing the open block if `seal_open` (the log
    /// writer leaves the open block to be filled), then syncs each file written. Returns the
    /// LSN now durable.
    fn write_pending(&self, seal_open: bool) -> Result<Lsn, LogWriteFailed> {
        let mut chain_crc = self.chain_crc.lock();
        let (mut writes, upto, targets) = {
            let mut state = self.state.lock();
            self.writer_requested.store(false, std::sync::atomic::Ordering::Release);
            if seal_open {
                state.seal_open();
            }
            let upto = if seal_open { state.end_lsn } else { state.sealed_lsn };
            let writes = std::mem::take(&mut state.pending);
            let bytes: u64 = writes.iter().map(|w| w.bytes.len() as u64).sum();
            state.stats.flushes += 1;
            state.stats.bytes_flushed += bytes;
            state.stats.largest_flush_bytes = state.stats.largest_flush_bytes.max(bytes);
            let mut targets: BTreeMap<u16, Arc<dyn IoFile>> = BTreeMap::new();
            for write in &writes {
                let file = &state.files[&write.file_id];
                targets.entry(write.file_id).or_insert_with(|| file.handle.clone());
            }
            (writes, upto, targets)
        };
        for write in writes.iter_mut().filter(|write| write.is_block) {
            *chain_crc = block::stamp_checksums(&mut write.bytes, *chain_crc);
        }
        drop(chain_crc);
        // Appenders carry on filling the next block while this session writes. Blocks that
        // follow each other in a file go out as one gathered, unbuffered write.
        let mut first = 0;
        while first < writes.len() {
            let (file_id, offset) = (writes[first].file_id, writes[first].offset);
            let mut end = offset + writes[first].bytes.len() as u64;
            let mut last = first + 1;
            while last < writes.len()
                && writes[last].file_id == file_id
                && writes[last].offset == end
                && end - offset < MAX_GATHERED_WRITE_BYTES
            {
                end += writes[last].bytes.len() as u64;
                last += 1;
            }
            let parts: Vec<&[u8]> = writes[first..last].iter().map(|w| &w.bytes[..]).collect();
            targets[&file_id].write_gathered(&parts, offset).map_err(LogWriteFailed)?;
            first = last;
        }
        for handle in targets.values() {
            handle.sync_data().map_err(LogWriteFailed)?;
        }
        let mut state = self.state.lock();
        for write in writes {
            if state.spare_blocks.len() < LOG_BUFFERS {
                state.spare_blocks.push(write.bytes);
            }
        }
        Ok(upto)
    }

    /// Marks VLFs wholly before `min_lsn` reusable, and records why the log could not be
    /// truncated further.
    pub fn truncate(&self, min_lsn: Lsn, reuse_wait: ReuseWait) {
        let mut state = self.state.lock();
        state.min_lsn = state.min_lsn.max(min_lsn);
        state.reuse_wait = reuse_wait;
    }

    /// A new transaction's id; counts the transaction as begun.
    pub fn next_xact_id(&self) -> u64 {
        self.transactions_started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.next_xact_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Transactions begun since the database opened.
    pub fn transactions_started(&self) -> u64 {
        self.transactions_started.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Shrinks of a log file that removed VLFs since the database opened.
    pub fn shrinks(&self) -> u64 {
        self.shrinks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Transactions open now (each pins the log from its begin record).
    pub fn open_transaction_count(&self) -> usize {
        self.open_transactions.lock().len()
    }

    /// Recovery: transaction ids continue after the highest one the log holds.
    pub fn continue_xact_ids_after(&self, highest: u64) {
        self.next_xact_id.fetch_max(highest + 1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The last LSN appended.
    pub fn end_lsn(&self) -> Lsn {
        self.state.lock().end_lsn
    }

    /// The last LSN known durable.
    pub fn flushed_lsn(&self) -> Lsn {
        self.flush.lock().flushed_lsn
    }

    pub fn reuse_wait(&self) -> ReuseWait {
        self.state.lock().reuse_wait
    }

    pub fn stats(&self) -> LogFlushStats {
        self.state.lock().stats
    }

    pub fn growths(&self) -> Vec<LogGrowth> {
        self.state.lock().growths.clone()
    }

    /// The VLFs of every log file of the database, as their headers on disk lay them out.
    pub fn vlf_count(&self) -> usize {
        self.state.lock().files.values().map(|f| f.vlfs.len()).sum()
    }

    /// sys.dm_db_log_info rows, in file and offset order.
    pub fn log_info(&self) -> Vec<LogInfoRow> {
        let state = self.state.lock();
        let mut rows = Vec::new();
        for file in state.files.values() {
            for vlf in &file.vlfs {
                let status = state.status_of(vlf);
                let first_lsn = if vlf.header.fseqno == 0 {
                    Lsn::NULL
                } else {
                    Lsn::new(vlf.header.fseqno, (VLF_HEADER_BYTES / 512) as u32, 1)
                };
                let size_mb = vlf.header.size_bytes as f64 / (1024.0 * 1024.0);
                rows.push(LogInfoRow {
                    database_id: self.database_id,
                    file_id: file.file_id,
                    vlf_begin_offset: vlf.header.start_offset,
                    vlf_size_mb: (size_mb * 100.0).round() / 100.0,
                    vlf_sequence_number: vlf.header.fseqno,
                    vlf_active: status == 2,
                    vlf_status: status,
                    vlf_parity: vlf.header.parity,
                    vlf_first_lsn: first_lsn.to_hex(),
                    vlf_create_lsn: vlf.header.create_lsn.to_hex(),
                });
            }
        }
        rows
    }

    /// The log's own figures for sys.dm_db_log_stats, from its VLFs as they are now.
    pub fn log_stats(&self) -> LogStats {
        let state = self.state.lock();
        let end_lsn = state.end_lsn;
        let mut stats = LogStats {
            min_lsn: state.min_lsn,
            end_lsn,
            current_vlf_sequence_number: 0,
            current_vlf_size_bytes: 0,
            total_vlf_count: 0,
            total_log_size_bytes: 0,
            active_vlf_count: 0,
            active_log_size_bytes: 0,
        };
        for file in state.files.values() {
            stats.total_log_size_bytes += file.size_bytes();
            for vlf in &file.vlfs {
                stats.total_vlf_count += 1;
                if state.status_of(vlf) == 2 {
                    stats.active_vlf_count += 1;
                    stats.active_log_size_bytes += vlf.header.size_bytes;
                }
                if vlf.header.fseqno != 0 && vlf.header.fseqno == end_lsn.seqno {
                    stats.current_vlf_sequence_number = vlf.header.fseqno;
                    stats.current_vlf_size_bytes = vlf.header.size_bytes;
                }
            }
        }
        stats
    }

    /// The VLFs that hold log from `lsn` on, and the bytes of log written from `lsn` to the
    /// end of the log (what recovery from `lsn` would read): (VLFs, bytes).
    pub fn written_since(&self, lsn: Lsn) -> (u64, u64) {
        let state = self.state.lock();
        let (mut vlfs, mut bytes) = (0u64, 0u64);
        for file in state.files.values() {
            for vlf in &file.vlfs {
                let fseqno = vlf.header.fseqno;
                if fseqno == 0 || fseqno < lsn.seqno || fseqno > state.end_lsn.seqno {
                    continue;
                }
                vlfs += 1;
                let start = if fseqno == lsn.seqno {
                    u64::from(lsn.block) * SECTOR_BYTES as u64
                } else {
                    0
                };
                bytes += vlf.end_bytes.saturating_sub(start.max(VLF_HEADER_BYTES));
            }
        }
        (vlfs, bytes)
    }

    /// DBCC LOGINFO rows.
    pub fn dbcc_loginfo(&self) -> Vec<LogInfoDbccRow> {
        let state = self.state.lock();
        let mut rows = Vec::new();
        for file in state.files.values() {
            for vlf in &file.vlfs {
                rows.push(LogInfoDbccRow {
                    recovery_unit_id: 0,
                    file_id: file.file_id,
                    file_size: vlf.header.size_bytes,
                    start_offset: vlf.header.start_offset,
                    fseqno: vlf.header.fseqno,
                    status: if state.status_of(vlf) == 2 { 2 } else { 0 },
                    parity: vlf.header.parity,
                    create_lsn: vlf.header.create_lsn.to_numeric(),
                });
            }
        }
        rows
    }

    /// DBCC SQLPERF(LOGSPACE): (log size MB, log space used %). Used space is what the active
    /// VLFs hold: whole VLFs before the current one, and the current one up to its end.
    pub fn space(&self) -> (f64, f64) {
        let state = self.state.lock();
        let mut size_bytes = 0u64;
        let mut used_bytes = 0u64;
        for file in state.files.values() {
            size_bytes += file.size_bytes();
            for vlf in &file.vlfs {
                if state.status_of(vlf) == 2 {
                    used_bytes += vlf.end_bytes;
                }
            }
        }
        let open = state.open.size() as u64;
        used_bytes += open;
        let size_mb = size_bytes as f64 / (1024.0 * 1024.0);
        (size_mb, 100.0 * used_bytes as f64 / size_bytes.max(1) as f64)
    }

    /// Log files: (file id, logical name, size in pages).
    pub fn files(&self) -> Vec<(u16, String, u32)> {
        let state = self.state.lock();
        state.files.values().map(|f| (f.file_id, f.logical_name.clone(), f.size_pages)).collect()
    }

    /// Runs `f` on a log file (settings, header writes).
    pub fn with_file<T>(&self, file_id: u16, f: impl FnOnce(&mut LogFile) -> T) -> Option<T> {
        let mut state = self.state.lock();
        state.files.get_mut(&file_id).map(f)
    }

    /// The id of the log file with this logical name.
    pub fn file_id_by_name(&self, logical_name: &str) -> Option<u16> {
        let state = self.state.lock();
        state
            .files
            .values()
            .find(|f| f.logical_name.eq_ignore_ascii_case(logical_name))
            .map(|f| f.file_id)
    }

    /// Formats a new, zeroed log file with its VLFs (ALTER DATABASE ADD LOG FILE); it joins
    /// the log with [`LogManager::insert_file`] once the boot page lists it.
    pub fn format_new_file(&self, new: NewLogFile) -> SqlResult<LogFile> {
        Self::format_file(self.rule, new, self.database_id, self.binding_id)
    }

    /// Adds a formatted log file; the log uses its VLFs when it next needs one.
    pub fn insert_file(&self, file: LogFile) {
        self.state.lock().files.insert(file.file_id, file);
    }

    /// Removes a log file none of whose VLFs is active (5042 otherwise).
    pub fn remove_file(&self, file_id: u16) -> SqlResult<LogFile> {
        let mut state = self.state.lock();
        let file = &state.files[&file_id];
        let active = file.vlfs.iter().any(|vlf| state.status_of(vlf) == 2);
        if active || state.current.file_id == file_id {
            return Err(SqlError::file_not_empty(&file.logical_name));
        }
        Ok(state.files.remove(&file_id).expect("checked above"))
    }

    pub fn path_of(&self, file_id: u16) -> Option<PathBuf> {
        self.state.lock().files.get(&file_id).map(|f| f.path.clone())
    }
}

impl LogState {
    fn vlf(&self, pos: VlfPos) -> &Vlf {
        &self.files[&pos.file_id].vlfs[pos.index]
    }

    fn vlf_mut(&mut self, pos: VlfPos) -> &mut Vlf {
        &mut self.files.get_mut(&pos.file_id).expect("VLF position of a known file").vlfs[pos.index]
    }

    /// 2 active, 1 never used, 0 reusable (dm_db_log_info's vlf_status).
    fn status_of(&self, vlf: &Vlf) -> u8 {
        let fseqno = vlf.header.fseqno;
        if fseqno == 0 {
            1
        } else if fseqno >= self.min_lsn.seqno {
            2
        } else {
            0
        }
    }

    /// VLF positions in physical order: files by id, VLFs by offset.
    fn ring(&self) -> Vec<VlfPos> {
        let mut ring = Vec::new();
        for (file_id, file) in &self.files {
            for index in 0..file.vlfs.len() {
                ring.push(VlfPos { file_id: *file_id, index });
            }
        }
        ring
    }

    /// Bytes the log can take without growing: the rest of the current VLF and every VLF
    /// that is not active (less their headers).
    fn free_bytes(&self) -> u64 {
        self.current_vlf_free_bytes() + self.other_free_bytes()
    }

    /// The bytes of every VLF but the current one that is not active (less their headers).
    /// Remembered between appends: a transaction whose undo reserve outgrows the current VLF
    /// (seed 002's, one insert of 500,000 rows) asks at every append, and the walk over every
    /// VLF took 1.7 % of its session's time. The answer depends only on what
    /// [`OtherFreeKey`] holds.
    fn other_free_bytes(&self) -> u64 {
        let key = self.other_free_key();
        if let Some((cached_key, free)) = self.other_free_cache.get()
            && cached_key == key
        {
            debug_assert_eq!(free, self.walk_other_free_bytes(), "a stale free-bytes cache");
            return free;
        }
        let free = self.walk_other_free_bytes();
        self.other_free_cache.set(Some((key, free)));
        free
    }

    fn walk_other_free_bytes(&self) -> u64 {
        let mut free = 0;
        for (file_id, file) in &self.files {
            for (index, vlf) in file.vlfs.iter().enumerate() {
                let pos = VlfPos { file_id: *file_id, index };
                if pos != self.current && self.status_of(vlf) != 2 {
                    free += vlf.header.size_bytes - VLF_HEADER_BYTES;
                }
            }
        }
        free
    }

    fn other_free_key(&self) -> OtherFreeKey {
        let mut key = OtherFreeKey {
            current: self.current,
            current_fseqno: self.vlf(self.current).header.fseqno,
            min_seqno: self.min_lsn.seqno,
            vlf_count: 0,
            size_pages: 0,
        };
        for file in self.files.values() {
            key.vlf_count += file.vlfs.len();
            key.size_pages += u64::from(file.size_pages);
        }
        key
    }

    /// The rest of the current VLF.
    fn current_vlf_free_bytes(&self) -> u64 {
        let used = self.open_offset + self.open.size() as u64;
        self.vlf(self.current).header.size_bytes.saturating_sub(used)
    }

    /// Whether the log can take `bytes` without growing. The current VLF usually has the
    /// room: the walk over every VLF (thousands after many small growths) is only done when
    /// it has not, as it runs under the log's lock at every append.
    fn has_room(&self, bytes: u64) -> bool {
        self.current_vlf_free_bytes() >= bytes || self.free_bytes() >= bytes
    }

    /// The first VLF after the current one, wrapping round, that is not active.
    fn next_reusable(&self) -> Option<VlfPos> {
        let ring = self.ring();
        let at = ring.iter().position(|pos| *pos == self.current).expect("current is in the ring");
        (1..ring.len())
            .map(|step| ring[(at + step) % ring.len()])
            .find(|pos| self.status_of(self.vlf(*pos)) != 2)
    }

    /// Closes the open block: it becomes a pending write, and the next block follows it.
    fn seal_open(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let pos = self.current;
        let header = self.vlf(pos).header;
        let block_no = (self.open_offset / SECTOR_BYTES as u64) as u32;
        // Without a spare, a buffer of a whole block's size: an empty one grew by doubling as
        // records went in, copying the block twice on the way to 60 KB.
        let buffer = self.spare_blocks.pop().unwrap_or_else(|| Vec::with_capacity(MAX_BLOCK_BYTES));
        let bytes = self.open.seal_into(buffer, header.fseqno, block_no);
        self.sealed_lsn = self.end_lsn;
        let len = bytes.len() as u64;
        self.pending.push(PendingWrite {
            file_id: pos.file_id,
            offset: header.start_offset + self.open_offset,
            bytes,
            is_block: true,
        });
        self.open_offset += len;
        self.vlf_mut(pos).end_bytes = self.open_offset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// KILL ... WITH STATUSONLY's estimate (6109): the share of undo entries taken, and the
    /// time left at the rate so far; a rollback's progress is kept only while it runs.
    #[test]
    fn a_rollbacks_progress_is_counted_and_estimated() {
        let started = std::time::Instant::now();
        let halfway = RollbackProgress { total_entries: 200, undone_entries: 50, started };
        let later = started + std::time::Duration::from_secs(10);
        assert_eq!(halfway.estimate(later), (25, 30), "a quarter in 10 s: 30 s to go");
        let none_yet = RollbackProgress { undone_entries: 0, ..halfway };
        assert_eq!(none_yet.estimate(later), (0, 0));
        let empty = RollbackProgress { total_entries: 0, undone_entries: 0, started };
        assert_eq!(empty.estimate(later), (100, 0));
        let log_use = TransactionLogUse::default();
        assert_eq!(log_use.rollback_progress(), None);
        log_use.rollback_began(Some(3));
        log_use.rollback_step();
        log_use.rollback_step();
        let taken = log_use.rollback_progress().map(|p| (p.total_entries, p.undone_entries));
        assert_eq!(taken, Some((3, 2)));
        log_use.rollback_began(None);
        assert_eq!(log_use.rollback_progress(), None);
    }
}
