//! A database: its data files, log files and filegroups, opened from and persisted to the
//! files themselves (file header pages, allocation pages and the boot page; no side files).
//!
//! What it reproduces:
//! - CREATE DATABASE / ALTER DATABASE ADD FILE, ADD LOG FILE, REMOVE FILE, ADD/REMOVE FILEGROUP,
//!   MODIFY FILEGROUP DEFAULT / AUTOGROW_ALL_FILES, MODIFY FILE SIZE / FILEGROWTH / MAXSIZE, with
//!   SQL Server's errors, and nothing left behind when one fails.
//! - File ids as SQL Server gives them: 1 the primary file, 2 the first log file, then 3, 4, ...
//! - Extent allocation through [`crate::filegroup::allocate_extent`], autogrowth (one file, or
//!   all files with AUTOGROW_ALL_FILES / TF 1117), instant file initialisation, zeroing with
//!   PREEMPTIVE_OS_WRITEFILEGATHER and TF 3004, and 1105 when no file can grow.
//! - Allocation units with IAM chains, mixed and uniform extents ([`units`]).
//! - DBCC SHRINKFILE ([`shrink`]): a log file's inactive tail VLFs, a data file's free tail.
//!
//! - The transaction log through [`crate::log::LogManager`]: log files are zeroed here when
//!   created, then formatted with VLFs by the log.
//!
//! - Write-ahead logging: every page change is logged in mini-transactions
//!   ([`crate::log::mtr`]); a checkpoint writes every dirty page and records where redo starts in
//!   the boot page; opening a database redoes the log from there ([`recovery`]) before it reads
//!   any allocation page, then frees allocations the log did not complete.
//!
//! Deviations, until later issues land:
//! - File headers and the boot page are written directly and synced, never through the pool,
//!   and are not logged: each such write is its own commit point (growth, ADD/REMOVE FILE, a
//!   unit's first IAM page), made after the log holds the page changes it depends on.
//! - No user transactions yet: a page change is durable once the log is flushed past it, and
//!   nothing is rolled back at recovery but incomplete allocations.
//!
//! Order of a growth, so that a crash or an I/O error at any step leaves a consistent file:
//! 1. extend the OS file (fallocate with IFI, else write zeros and fdatasync);
//! 2. lay out the new range in the buffer pool, write and fdatasync the file's dirty pages;
//! 3. write and fdatasync the file header with the new size: this is the commit point.
//!
//! On an error the in-memory state is rolled back and the OS file truncated to its old size; map
//! bits past the recorded size are never read (file invariant 2).

mod spec;
mod units;

pub use spec::{
    DEFAULT_GROWTH_PAGES, DEFAULT_SIZE_PAGES, DatabaseSpec, FileSpec, FilegroupSpec,
    MODEL_PRIMARY_SIZE_MB, MaxSize, ResolvedFile, resolve, resolve_growth,
};
pub use units::{AllocUnitInfo, AllocationStatus, UnitPage};

use crate::alloc;
use crate::boot::{BootInfo, FileEntry, FilegroupEntry};
use crate::buffer::{BufferFile, BufferPool, PageKey};
use crate::error::{SqlError, SqlResult};
use crate::file::{self, FileAlloc, FileHeader, FileType};
use crate::filegroup::{self, ExtentSpace, FillControl, Growth, RecalcReport};
use crate::instance::{Instance, current_process_info};
use crate::io::IoFile;
use crate::latch::LatchMode;
use crate::traceflags;
use crate::units::{PAGE_SIZE_U64, PageId, SizeSpec, extents_in_file};
use crate::waits::wait_type;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;
use units::AllocUnit;

use crate::log::record::{Context, LogRecord, Operation};
use crate::log::{LogManager, MIN_LOG_FILE_PAGES, NewLogFile};
pub(crate) use create::write_header_page;

/// Bytes written per call while zeroing (a bounded buffer).
const ZERO_CHUNK_BYTES: usize = 1 << 20;
/// Page-aligned, so that an unbuffered write takes it as it is, without a staging copy.
#[repr(C, align(4096))]
struct ZeroChunk([u8; ZERO_CHUNK_BYTES]);
static ZEROS: ZeroChunk = ZeroChunk([0; ZERO_CHUNK_BYTES]);
/// Log written since the last checkpoint that triggers an automatic one, per minute of
/// 'recovery interval (min)' (0 counts as 1, SQL Server's "about a minute").
const AUTO_CHECKPOINT_LOG_BYTES_PER_MIN: u64 = 256 * 1024 * 1024;
/// The PRIMARY filegroup's id.
pub const PRIMARY_FILEGROUP_ID: u16 = 1;

/// A data file of an open database.
pub struct DataFile {
    pub file_id: u16,
    pub logical_name: String,
    pub path: PathBuf,
    pub fg_id: u16,
    pub is_primary: bool,
    /// The OS file, shared with the buffer pool, which reads and writes its pages.
    handle: Arc<BufferFile>,
    /// Counters derived from the file's allocation pages (the pages are in the buffer pool).
    alloc: FileAlloc,
    settings: Mutex<FileSettings>,
    created_ms: i64,
}

#[derive(Clone, Copy, Debug)]
struct FileSettings {
    growth: Growth,
    max_size_pages: Option<u32>,
}

impl DataFile {
    pub fn size_pages(&self) -> u32 {
        self.alloc.size_pages()
    }

    pub fn free_extents(&self) -> u32 {
        self.alloc.free_extents()
    }

    fn io(&self) -> &dyn IoFile {
        self.handle.handle.as_ref()
    }

    fn path_text(&self) -> String {
        self.path.display().to_string()
    }
}

/// A filegroup of an open database.
pub struct Filegroup {
    pub id: u16,
    pub name: String,
    pub is_default: bool,
    pub autogrow_all_files: bool,
    pub read_only: bool,
    /// The files in visit order: the first file, then the others newest first (filegroup choice 4).
    members: Vec<Arc<DataFile>>,
    fill: FillControl,
}

/// One row of DBCC SHOWFILESTATS-like space information.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSpace {
    pub file_id: u16,
    pub filegroup: String,
    pub logical_name: String,
    pub size_pages: u32,
    pub total_extents: u32,
    pub free_extents: u32,
    pub growth: Growth,
    pub max_size_pages: Option<u32>,
}

/// One file of a database, data or log (sys.database_files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseFile {
    pub file_id: u16,
    pub is_log: bool,
    /// The filegroup id; 0 for a log file.
    pub data_space_id: u16,
    pub logical_name: String,
    pub path: PathBuf,
    pub size_pages: u32,
    /// None = unlimited.
    pub max_size_pages: Option<u32>,
    pub growth: Growth,
}

/// A file growth, as the default trace records it (EventClass 92 for data files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrowthEvent {
    pub file_id: u16,
    pub logical_name: String,
    pub old_size_pages: u32,
    pub new_size_pages: u32,
    pub duration_us: u64,
    pub is_automatic: bool,
    pub zeroed: bool,
    /// Local time the growth started.
    pub start_time: chrono::NaiveDateTime,
}

/// A file size change as the default trace (EventClass 92 data, 93 log, automatic growths
/// only) and the Extended Event sqlserver.database_file_size_change (every change) record it
/// (reference §10.2, §10.3).
#[derive(Clone, Debug, PartialEq)]
pub struct FileSizeChange {
    /// 92 (Data File Auto Grow) or 93 (Log File Auto Grow); None for a manual change, which
    /// the default trace does not record.
    pub event_class: Option<u16>,
    pub database_id: u16,
    pub database_name: String,
    pub file_id: u16,
    /// The logical file name.
    pub file_name: String,
    /// "data" or "log".
    pub file_type: &'static str,
    pub is_automatic: bool,
    pub size_change_kb: i64,
    pub total_size_kb: i64,
    pub start_time: chrono::NaiveDateTime,
    pub end_time: chrono::NaiveDateTime,
    /// Microseconds, as the trace file stores Duration.
    pub duration_us: u64,
    /// IntegerData: 8 KB pages added.
    pub integer_data: i64,
}

/// A growth of a `file_type` ("data" or "log") file as the default trace and XE record it.
pub(crate) fn size_change_of(
    database_id: u16,
    database_name: &str,
    file_type: &'static str,
    g: GrowthEvent,
) -> FileSizeChange {
    let class = if file_type == "data" { 92 } else { 93 };
    let pages_added = i64::from(g.new_size_pages) - i64::from(g.old_size_pages);
    FileSizeChange {
        event_class: g.is_automatic.then_some(class),
        database_id,
        database_name: database_name.to_string(),
        file_id: g.file_id,
        file_name: g.logical_name,
        file_type,
        is_automatic: g.is_automatic,
        size_change_kb: pages_added * 8,
        total_size_kb: i64::from(g.new_size_pages) * 8,
        start_time: g.start_time,
        end_time: g.start_time + chrono::Duration::microseconds(g.duration_us as i64),
        duration_us: g.duration_us,
        integer_data: pages_added,
    }
}

/// A change made by ALTER DATABASE ... MODIFY FILE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChange {
    Size(SizeSpec),
    Growth(SizeSpec),
    MaxSize(MaxSize),
}

struct DbInner {
    boot: BootInfo,
    data_files: BTreeMap<u16, Arc<DataFile>>,
    filegroups: BTreeMap<u16, Filegroup>,
    units: BTreeMap<u64, Mutex<AllocUnit>>,
}

pub struct Database {
    pub name: String,
    pub database_id: u16,
    binding_id: u64,
    instance: Arc<Instance>,
    /// The instance's buffer pool (every page of the database is read and changed through it).
    pool: Arc<BufferPool>,
    primary_dir: PathBuf,
    inner: RwLock<DbInner>,
    /// The transaction log: log files, VLFs, appends and flushes (shared with the buffer pool,
    /// which logs page changes to it and flushes it before writing a page).
    log: Arc<LogManager>,
    /// Each allocation unit's first IAM page, as the boot page records it (written at once
    /// when a unit gets its first IAM page; see `persist_first_iam`).
    first_iams: Mutex<BTreeMap<u64, PageId>>,
    /// ALTER DATABASE SET DELAYED_DURABILITY = FORCED (off by default).
    delayed_durability: std::sync::atomic::AtomicBool,
    /// Log bytes flushed when the last checkpoint ended (automatic checkpoints).
    checkpoint_log_bytes: std::sync::atomic::AtomicU64,
    checkpoint_running: Mutex<()>,
    auto_checkpoints: std::sync::atomic::AtomicU64,
    /// The background checkpoint task, when started ([`Database::start_checkpoint_task`]).
    checkpoint_task: Arc<checkpoint_task::BackgroundTask>,
    /// The ghost-cleanup task, when started ([`Database::start_ghost_cleanup`]).
    ghost_task: Arc<checkpoint_task::BackgroundTask>,
    growth_lock: Mutex<()>,
    growth_events: Mutex<Vec<GrowthEvent>>,
    /// Pages holding ghost records, for the ghost-cleanup task.
    ghost_pages: Mutex<BTreeSet<PageId>>,
    ghost_stats: Mutex<ghosts::GhostCleanupStats>,
    /// Allocation units outside transactions: the table variables' (see
    /// [`Database::keep_through_rollback`]), with their count for the lock path's quick look.
    units_outside_transactions: RwLock<BTreeSet<u64>>,
    units_outside_transactions_count: std::sync::atomic::AtomicUsize,
    closed: std::sync::atomic::AtomicBool,
    /// The catalog, loaded when first used ([`Database::catalog`]).
    catalog: Mutex<Option<Arc<crate::catalog::Catalog>>>,
    /// sys.dm_db_index_usage_stats' counters, from the database's opening on.
    pub index_usage: crate::index_usage::IndexUsage,
}

/// The data files of filegroup `fg_id` in visit order: the lowest file id first, then the rest
/// newest (highest id) first.
fn visit_order(data_files: &BTreeMap<u16, Arc<DataFile>>, fg_id: u16) -> Vec<Arc<DataFile>> {
    let mut files: Vec<Arc<DataFile>> =
        data_files.values().filter(|f| f.fg_id == fg_id).cloned().collect();
    if files.len() > 1 {
        files[1..].reverse();
    }
    files
}

impl Filegroup {
    /// File ids in visit order.
    pub fn member_ids(&self) -> Vec<u16> {
        self.members.iter().map(|file| file.file_id).collect()
    }
}

fn now_ms(instance: &Instance) -> i64 {
    instance.clock.now_local().and_utc().timestamp_millis()
}

/// An identity shared by the files of one database (not security-relevant).
fn new_binding_id(instance: &Instance) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64)
        ^ (u64::from(std::process::id()) << 32)
        ^ (now_ms(instance) as u64).rotate_left(17);
    mixed | 1
}

fn growth_to_header(growth: Growth) -> (u32, bool) {
    match growth {
        Growth::None => (0, false),
        Growth::Pages(pages) => (pages, false),
        Growth::Percent(pct) => (pct, true),
    }
}

fn growth_from_header(value: u32, is_percent: bool) -> Growth {
    match (value, is_percent) {
        (0, _) => Growth::None,
        (pct, true) => Growth::Percent(pct),
        (pages, false) => Growth::Pages(pages),
    }
}

impl Database {
    /// The catalog of tables, loaded (its system tables created, for a database that has none)
    /// when first asked for.
    pub fn catalog(&self) -> SqlResult<Arc<crate::catalog::Catalog>> {
        let mut catalog = self.catalog.lock();
        if let Some(loaded) = catalog.as_ref() {
            return Ok(loaded.clone());
        }
        let loaded = Arc::new(crate::catalog::Catalog::load(self)?);
        *catalog = Some(loaded.clone());
        Ok(loaded)
    }

    /// The catalog if it has been loaded.
    pub(crate) fn loaded_catalog(&self) -> Option<Arc<crate::catalog::Catalog>> {
        self.catalog.lock().clone()
    }

    pub fn instance(&self) -> &Arc<Instance> {
        &self.instance
    }

    /// The buffer pool every page of this database goes through.
    pub fn buffer_pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    fn io_err_create(err: &std::io::Error, path: &Path) -> SqlError {
        if err.kind() == std::io::ErrorKind::AlreadyExists {
            SqlError::file_exists(&path.display().to_string())
        } else {
            SqlError::create_file_os_error(err, &path.display().to_string())
        }
    }

    fn zero_fill(
        instance: &Instance,
        handle: &dyn IoFile,
        path: &Path,
        from_page: u32,
        to_page: u32,
    ) -> std::io::Result<()> {
        zero_fill(instance, handle, path, from_page, to_page)
    }

    /// Makes `[from_page, to_page)` of a data file usable: fallocate with IFI, zeros without.
    /// Returns whether zeros were written.
    fn extend_data_file(
        instance: &Instance,
        handle: &dyn IoFile,
        path: &Path,
        from_page: u32,
        to_page: u32,
    ) -> std::io::Result<bool> {
        if instance.ifi_enabled() {
            let from = u64::from(from_page) * PAGE_SIZE_U64;
            handle.allocate(from, u64::from(to_page - from_page) * PAGE_SIZE_U64)?;
            return Ok(false);
        }
        Self::zero_fill(instance, handle, path, from_page, to_page)?;
        Ok(true)
    }
}

/// Writes zeros over `[from_page, to_page)` of a file and syncs, recording the time as
/// PREEMPTIVE_OS_WRITEFILEGATHER and, with TF 3004, the errorlog lines.
pub(crate) fn zero_fill(
    instance: &Instance,
    handle: &dyn IoFile,
    path: &Path,
    from_page: u32,
    to_page: u32,
) -> std::io::Result<()> {
    let from = u64::from(from_page) * PAGE_SIZE_U64;
    let to = u64::from(to_page) * PAGE_SIZE_U64;
    let shown = path.display();
    instance.trace(
        traceflags::TF_FILE_ZEROING_TRACE,
        &format!("Zeroing {shown} from page {from_page} to {to_page} ({from:#x} to {to:#x})"),
    );
    let started = Instant::now();
    let mut offset = from;
    while offset < to {
        let len = (to - offset).min(ZERO_CHUNK_BYTES as u64) as usize;
        // Unbuffered where the file system allows, as WriteFileGather writes its zeros.
        handle.write_gathered(&[&ZEROS.0[..len]], offset)?;
        offset += len as u64;
    }
    handle.sync_data()?;
    instance.waits.record(
        wait_type::PREEMPTIVE_OS_WRITEFILEGATHER,
        started.elapsed(),
        std::time::Duration::ZERO,
    );
    instance.trace(traceflags::TF_FILE_ZEROING_TRACE, &format!("Zeroing completed on {shown}"));
    Ok(())
}

mod checkpoint_task;
pub(crate) use checkpoint_task::{BackgroundTask, TaskScheduler};
mod create;
mod ghosts;
mod growth;
mod open;
mod recovery;
mod shrink;

pub use ghosts::{GHOST_CLEANUP_INTERVAL, GHOST_PAGES_PER_RUN, GhostCleanupStats};
pub use shrink::FileShrink;

impl Database {
    /// Space of every data file, in file-id order.
    pub fn file_space(&self) -> Vec<FileSpace> {
        let inner = crate::fiber::read(&self.inner);
        inner
            .data_files
            .values()
            .map(|file| {
                let settings = *file.settings.lock();
                FileSpace {
                    file_id: file.file_id,
                    filegroup: inner.filegroups[&file.fg_id].name.clone(),
                    logical_name: file.logical_name.clone(),
                    size_pages: file.size_pages(),
                    total_extents: extents_in_file(file.size_pages()),
                    free_extents: file.free_extents(),
                    growth: settings.growth,
                    max_size_pages: settings.max_size_pages,
                }
            })
            .collect()
    }

    /// Every file of the database, data files then log files, in file id order within each:
    /// what sys.database_files shows.
    pub fn database_files(&self) -> Vec<DatabaseFile> {
        let mut files: Vec<DatabaseFile> = {
            let inner = crate::fiber::read(&self.inner);
            inner
                .data_files
                .values()
                .map(|file| {
                    let settings = *file.settings.lock();
                    DatabaseFile {
                        file_id: file.file_id,
                        is_log: false,
                        data_space_id: file.fg_id,
                        logical_name: file.logical_name.clone(),
                        path: file.path.clone(),
                        size_pages: file.size_pages(),
                        max_size_pages: settings.max_size_pages,
                        growth: settings.growth,
                    }
                })
                .collect()
        };
        for (file_id, _, _) in self.log.files() {
            let log = self.log.with_file(file_id, |log| DatabaseFile {
                file_id,
                is_log: true,
                data_space_id: 0,
                logical_name: log.logical_name.clone(),
                path: log.path.clone(),
                size_pages: log.size_pages,
                max_size_pages: log.max_size_pages,
                growth: log.growth,
            });
            files.extend(log);
        }
        files.sort_by_key(|f| f.file_id);
        files
    }

    /// (file id, logical name, size in pages) of every log file.
    pub fn log_files(&self) -> Vec<(u16, String, u32)> {
        self.log.files()
    }

    /// The database's transaction log.
    pub fn log(&self) -> &LogManager {
        &self.log
    }

    /// This database's row of DBCC SQLPERF(LOGSPACE): Database Name, Log Size (MB), Log Space
    /// Used (%), Status (always 0).
    pub fn sqlperf_logspace(&self) -> (String, f64, f64, i32) {
        let (size_mb, used_pct) = self.log.space();
        (self.name.clone(), size_mb, used_pct, 0)
    }

    /// sys.databases.log_reuse_wait_desc.
    pub fn log_reuse_wait_desc(&self) -> &'static str {
        self.log.log_reuse_wait().desc()
    }

    /// Puts allocation units outside transactions, as SQL Server keeps table variables: a
    /// transaction's rollback (ROLLBACK, a rollback to a savepoint, XACT_ABORT, a deadlock)
    /// keeps their changes, except those of the statement running when it comes, which a
    /// failed statement loses as a whole; and no lock is taken on them (only the session that
    /// made them can reach them). Their changes are logged in the session's transaction as
    /// any other, so recovery undoes a crashed transaction's changes to them (the tables are
    /// dropped when the database next opens in any case).
    pub fn keep_through_rollback(&self, au_ids: &[u64]) {
        let mut units = self.units_outside_transactions.write();
        units.extend(au_ids.iter().copied());
        self.units_outside_transactions_count.store(units.len(), Ordering::Release);
    }

    /// Ends [`Database::keep_through_rollback`] for these units (their table is dropped).
    pub fn forget_kept_units(&self, au_ids: &[u64]) {
        let mut units = self.units_outside_transactions.write();
        for au_id in au_ids {
            units.remove(au_id);
        }
        self.units_outside_transactions_count.store(units.len(), Ordering::Release);
    }

    /// Whether `au_id` is outside transactions ([`Database::keep_through_rollback`]). One
    /// atomic load when no unit is (every database without table variables).
    pub fn is_outside_transactions(&self, au_id: u64) -> bool {
        self.units_outside_transactions_count.load(Ordering::Acquire) > 0
            && self.units_outside_transactions.read().contains(&au_id)
    }

    pub(crate) fn note_xact_end(&self, xact_id: u64) {
        self.log.note_transaction_end(xact_id);
    }

    /// The LSN of the oldest open transaction's begin record, if any.
    pub fn oldest_active_begin(&self) -> Option<crate::log::lsn::Lsn> {
        self.log.oldest_open_transaction()
    }

    /// An automatic checkpoint when one is due (reference §5.6): the log is 70 % full (SIMPLE
    /// recovery), or 256 MB of log per minute of 'recovery interval (min)' in use (0 counting
    /// as one) have been written since the last checkpoint (extentdb's stand-in for the log
    /// that recovery can redo in the interval; SQL Server estimates that amount from its own
    /// redo rate). Handed to the background checkpoint task when it runs (as in SQL Server;
    /// false is returned); otherwise run on the calling session. A session finding another
    /// checkpoint under way does not wait.
    pub fn maybe_checkpoint(&self) -> SqlResult<bool> {
        let (size_mb, used_pct) = self.log.space();
        let since = self
            .log
            .stats()
            .bytes_flushed
            .saturating_sub(self.checkpoint_log_bytes.load(Ordering::Relaxed));
        // A checkpoint cannot free the VLF in use: after one, the 70 % rule waits until a tenth
        // of the log has been written again (else a log of one large VLF checkpoints at every
        // commit).
        let advanced = since as f64 >= size_mb * 1024.0 * 1024.0 / 10.0;
        let simple_and_full =
            used_pct >= 70.0 && advanced && self.recovery_model_desc() == "SIMPLE";
        if !simple_and_full && since < self.auto_checkpoint_log_bytes() {
            return Ok(false);
        }
        if self.checkpoint_task.request() {
            return Ok(false);
        }
        self.automatic_checkpoint()
    }

    /// Log since the last checkpoint that makes an automatic one due under the recovery
    /// interval in use.
    pub fn auto_checkpoint_log_bytes(&self) -> u64 {
        let configuration = &self.instance.configuration;
        let interval_min = configuration.value_in_use(crate::configuration::RECOVERY_INTERVAL_MIN);
        AUTO_CHECKPOINT_LOG_BYTES_PER_MIN * u64::try_from(interval_min.max(1)).unwrap_or(1)
    }

    /// The last checkpoint's LSNs, as the boot page records them: (checkpoint LSN, MinLSN),
    /// MinLSN being where recovery would start.
    pub fn checkpoint_lsns(&self) -> (crate::log::lsn::Lsn, crate::log::lsn::Lsn) {
        let inner = crate::fiber::read(&self.inner);
        (inner.boot.checkpoint_lsn, inner.boot.min_lsn)
    }

    /// Automatic checkpoints taken so far.
    pub fn auto_checkpoints(&self) -> u64 {
        self.auto_checkpoints.load(Ordering::Relaxed)
    }

    /// DELAYED_DURABILITY: commits return before their log records are durable.
    pub fn set_delayed_durability(&self, on: bool) {
        self.delayed_durability.store(on, Ordering::Relaxed);
    }

    pub fn delayed_durability(&self) -> bool {
        self.delayed_durability.load(Ordering::Relaxed)
    }

    /// (id, name, is_default, autogrow_all_files, visit order) of every filegroup.
    pub fn filegroups(&self) -> Vec<(u16, String, bool, bool, Vec<u16>)> {
        let inner = crate::fiber::read(&self.inner);
        inner
            .filegroups
            .values()
            .map(|fg| {
                (fg.id, fg.name.clone(), fg.is_default, fg.autogrow_all_files, fg.member_ids())
            })
            .collect()
    }

    /// The current skip targets of a filegroup, in visit order (file id, skip target).
    pub fn skip_targets(&self, filegroup: &str) -> SqlResult<Vec<(u16, u32)>> {
        let inner = crate::fiber::read(&self.inner);
        let fg = self.filegroup_by_name(&inner, filegroup)?;
        let state = fg.fill.snapshot();
        Ok(fg.member_ids().into_iter().zip(state.skip_targets().iter().copied()).collect())
    }

    pub fn growth_events(&self) -> Vec<GrowthEvent> {
        self.growth_events.lock().clone()
    }

    /// Every data and log file size change, in time order (the XE event stream).
    pub fn file_size_changes(&self) -> Vec<FileSizeChange> {
        let data = self.growth_events.lock().clone();
        let log = self.log.growths().into_iter().map(|g| g.as_growth_event());
        let mut changes: Vec<FileSizeChange> = data
            .into_iter()
            .map(|g| self.size_change("data", g))
            .chain(log.map(|g| self.size_change("log", g)))
            .collect();
        changes.sort_by_key(|c| c.start_time);
        changes
    }

    /// The default trace's file auto-grow events (EventClass 92 and 93).
    pub fn default_trace_growths(&self) -> Vec<FileSizeChange> {
        self.file_size_changes().into_iter().filter(|c| c.event_class.is_some()).collect()
    }

    fn size_change(&self, file_type: &'static str, g: GrowthEvent) -> FileSizeChange {
        size_change_of(self.database_id, &self.name, file_type, g)
    }

    pub fn mixed_page_allocation(&self) -> bool {
        crate::fiber::read(&self.inner).boot.mixed_page_allocation
    }

    /// The physical path of a data or log file.
    pub fn file_path(&self, file_id: u16) -> Option<PathBuf> {
        let inner = crate::fiber::read(&self.inner);
        if let Some(file) = inner.data_files.get(&file_id) {
            return Some(file.path.clone());
        }
        drop(inner);
        self.log.path_of(file_id)
    }

    /// A copy of a page as the buffer pool has it (read from disk if not cached), taken under
    /// an SH latch.
    pub fn page_copy(&self, page: PageId) -> SqlResult<Box<crate::page::PageBuf>> {
        let guard = self.pool.fetch(PageKey::new(self.database_id, page), LatchMode::Sh)?;
        Ok(guard.read(|buf| Box::new(*buf)))
    }

    /// dbi_crdate: when the database was created (local time), as its boot page records it
    /// (sys.databases.create_date, sp_helpdb's created).
    pub fn create_date(&self) -> chrono::NaiveDateTime {
        let ms = crate::fiber::read(&self.inner).boot.created_ms;
        chrono::DateTime::from_timestamp_millis(ms)
            .map_or(chrono::NaiveDateTime::MIN, |at| at.naive_utc())
    }

    /// dbi_dbccLastKnownGood: when DBCC CHECKDB last found no error in the database (local
    /// time); None if it never has.
    pub fn last_known_good(&self) -> Option<chrono::NaiveDateTime> {
        let ms = crate::fiber::read(&self.inner).boot.last_known_good_ms;
        if ms == 0 {
            return None;
        }
        chrono::DateTime::from_timestamp_millis(ms).map(|at| at.naive_utc())
    }

    /// Records that DBCC CHECKDB found no error at `at` (local time), in the boot page at once.
    pub fn set_last_known_good(&self, at: chrono::NaiveDateTime) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let mut boot = inner.boot.clone();
        boot.last_known_good_ms = at.and_utc().timestamp_millis();
        self.save_boot(&mut inner, boot)
    }

    /// A page's bytes as they are on disk, read through the file's I/O backend without the
    /// checks a read into the buffer pool makes (checksum, page id, structure): DBCC CHECKDB
    /// reads a page the pool refused (824) this way, to say what is wrong with it. A page
    /// the pool holds may be newer than this.
    pub fn read_page_unverified(&self, page: PageId) -> SqlResult<Box<crate::page::PageBuf>> {
        let inner = crate::fiber::read(&self.inner);
        let file = inner.data_files.get(&page.file_id).ok_or_else(|| {
            SqlError::new(
                8968,
                16,
                1,
                format!("Table error: page {page} is out of the range of this database."),
            )
        })?;
        let mut buf = crate::page::new_page_buf();
        let offset = u64::from(page.page_no) * crate::units::PAGE_SIZE_U64;
        file.handle
            .handle
            .read_at(&mut buf[..], offset)
            .map_err(|err| SqlError::os_io_error(&err, false, offset, &file.handle.path))?;
        Ok(buf)
    }

    fn filegroup_by_name<'a>(&self, inner: &'a DbInner, name: &str) -> SqlResult<&'a Filegroup> {
        inner
            .filegroups
            .values()
            .find(|fg| fg.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| SqlError::filegroup_missing(name, &self.name))
    }

    fn default_filegroup<'a>(&self, inner: &'a DbInner) -> &'a Filegroup {
        inner.filegroups.values().find(|fg| fg.is_default).expect("one filegroup is always DEFAULT")
    }

    /// Recalculates a filegroup's skip targets and writes the TF 1165 lines.
    fn recalculate(&self, inner: &DbInner, fg_id: u16) {
        let fg = &inner.filegroups[&fg_id];
        let space = FgSpace::new(self, fg);
        let report = fg.fill.recalculate(&space);
        self.trace_recalc(&report);
    }

    fn trace_recalc(&self, report: &RecalcReport) {
        if self.instance.trace_flags.traces_to_errorlog(traceflags::TF_PROPORTIONAL_FILL_TRACE) {
            let process_info = current_process_info();
            for line in report.errorlog_lines(&self.name) {
                self.instance.errorlog.write(&process_info, &line);
            }
        }
    }

    /// Allocates one extent in a filegroup (proportional fill, autogrowth). `object` names the
    /// object in a 1105 message.
    fn allocate_extent_in(&self, inner: &DbInner, fg_id: u16, object: &str) -> SqlResult<PageId> {
        let fg = &inner.filegroups[&fg_id];
        let mut space = FgSpace::new(self, fg);
        let mut reports = Vec::new();
        let picked = filegroup::allocate_extent(&fg.fill, &mut space, &mut |report| {
            reports.push(report.clone())
        })?;
        for report in &reports {
            self.trace_recalc(report);
        }
        let Some((slot, first_page)) = picked else {
            let error = SqlError::filegroup_full(object, &self.name, &fg.name);
            self.instance.errorlog.write_error(&current_process_info(), &error);
            return Err(error);
        };
        Ok(PageId::new(space.files[slot].file_id, first_page))
    }

    /// Writes every cached allocation page and the boot page, and makes them durable.
    /// Data pages are written first, holding no lock (sessions holding page latches may need
    /// the database lock to allocate); then, under the database write lock, so that no
    /// allocation creates an IAM page meanwhile, the allocation pages and the boot page.
    pub fn checkpoint(&self) -> SqlResult<()> {
        // MinLSN: the oldest begin of the transactions open at the BEGIN record (log
        // invariant 4), never of those still open at the end.
        let (begin, oldest) = self.log.append_checkpoint_begin(&LogRecord::new(
            Operation::BeginCkpt,
            Context::Null,
            0,
            vec![],
        ))?;
        // Every page dirtied before `begin` is written (after its log records: the WAL rule).
        self.pool.flush(self.database_id, None)?;
        let mut inner = crate::fiber::write(&self.inner);
        self.flush_allocation_pages(&inner)?;
        let end = self.log.append(&LogRecord::new(
            Operation::EndCkpt,
            Context::Null,
            0,
            begin.to_bytes().to_vec(),
        ))?;
        self.log.flush_to(end)?;
        // The boot page last: it must never point at an IAM page that is not on disk yet, and
        // its checkpoint LSN is where recovery starts.
        let min_lsn = oldest.map_or(begin, |oldest| oldest.min(begin));
        let full_recovery = inner.boot.full_recovery;
        let mut boot = inner.boot.clone();
        self.fill_first_iams(&mut boot);
        boot.checkpoint_lsn = begin;
        boot.min_lsn = min_lsn;
        Self::write_boot(&inner.data_files[&1], &boot)?;
        inner.boot = boot;
        drop(inner);
        if full_recovery {
            // FULL: only a log backup truncates the log.
            self.log.truncate(crate::log::lsn::Lsn::NULL, crate::log::ReuseWait::LogBackup);
        } else {
            // SIMPLE: the log before MinLSN is no longer needed.
            let reuse_wait = if min_lsn < begin {
                crate::log::ReuseWait::ActiveTransaction
            } else {
                crate::log::ReuseWait::Nothing
            };
            self.log.truncate(min_lsn, reuse_wait);
        }
        self.checkpoint_log_bytes.store(self.log.stats().bytes_flushed, Ordering::Relaxed);
        Ok(())
    }

    /// Checkpoints and closes the database.
    pub fn close(self) -> SqlResult<()> {
        self.stop_background_tasks();
        self.checkpoint()?;
        self.log.flush_all()?;
        self.release_from_instance();
        Ok(())
    }

    /// Drops the in-memory state without writing anything, as a crash would: tests, and a
    /// database whose files are deleted next (DROP DATABASE, a CREATE DATABASE undone).
    pub fn crash(self) {
        self.release_from_instance();
    }

    /// Makes every allocation page (PFS, GAM, SGAM, DCM, BCM and the units' IAM pages) durable.
    /// Callers hold the database write lock, so no session is inside the allocator and no
    /// session waits for the lock while holding one of these pages' latches.
    fn flush_allocation_pages(&self, inner: &DbInner) -> SqlResult<()> {
        let mut pages: Vec<PageId> = inner
            .data_files
            .values()
            .flat_map(|f| f.alloc.allocation_pages(f.size_pages()))
            .collect();
        for unit in inner.units.values() {
            pages.extend(crate::fiber::lock(unit).iam_pages());
        }
        self.pool.flush_pages(self.database_id, &pages)
    }

    /// Forgets the database's cached pages and files, and frees its name.
    fn release_from_instance(&self) {
        self.closed.store(true, Ordering::Release);
        self.pool.unregister_log(self.database_id);
        for file_id in crate::fiber::read(&self.inner).data_files.keys() {
            self.pool.unregister_file(self.database_id, *file_id);
        }
        self.instance.unregister_database(&self.name);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.stop_background_tasks();
        if !self.closed.load(Ordering::Acquire) {
            if let Err(err) = self.checkpoint() {
                self.instance.errorlog.write_error(&current_process_info(), &err);
            }
            self.release_from_instance();
        }
    }
}

/// The engine's view of one filegroup for [`filegroup::allocate_extent`].
struct FgSpace<'a> {
    db: &'a Database,
    fg: &'a Filegroup,
    files: &'a [Arc<DataFile>],
    /// Files whose growth failed during this allocation (disk full): not tried again.
    failed: BTreeSet<u16>,
}

impl<'a> FgSpace<'a> {
    fn new(db: &'a Database, fg: &'a Filegroup) -> FgSpace<'a> {
        FgSpace { db, fg, files: &fg.members, failed: BTreeSet::new() }
    }
}

impl ExtentSpace for FgSpace<'_> {
    fn slot_count(&self) -> usize {
        self.files.len()
    }

    fn file_id(&self, slot: usize) -> u16 {
        self.files[slot].file_id
    }

    fn file_name(&self, slot: usize) -> String {
        self.files[slot].logical_name.clone()
    }

    fn free_extents(&self, slot: usize) -> u32 {
        self.files[slot].free_extents()
    }

    fn take_extent(&mut self, slot: usize) -> SqlResult<Option<u32>> {
        self.files[slot].alloc.take_extent(&self.db.pool)
    }

    fn grow(&mut self, cursor: usize) -> SqlResult<bool> {
        let _one_growth_at_a_time = crate::fiber::lock(&self.db.growth_lock);
        if self.files.iter().any(|file| file.free_extents() > 0) {
            return Ok(true);
        }
        let all_files = self.fg.autogrow_all_files
            || self.db.instance.trace_flags.is_on(traceflags::TF_AUTOGROW_ALL_FILES);
        let slots = self.files.len();
        let grew = filegroup::grow_by_policy(cursor, slots, all_files, |slot| {
            let file = self.files[slot].clone();
            if self.failed.contains(&file.file_id) {
                return false;
            }
            let settings = *file.settings.lock();
            let Some(new_size) = filegroup::grown_size_pages(
                file.size_pages(),
                settings.growth,
                settings.max_size_pages,
            ) else {
                return false;
            };
            match self.db.grow_file(&file, new_size, true) {
                Ok(()) => true,
                Err(error) => {
                    self.db.instance.errorlog.write_error(&current_process_info(), &error);
                    self.failed.insert(file.file_id);
                    false
                }
            }
        });
        Ok(grew)
    }
}
