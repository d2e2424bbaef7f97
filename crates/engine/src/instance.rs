//! The instance: what one extentdb process shares across its databases. It owns the data
//! directory, the I/O backend, the clock, the errorlog, the trace flags, the startup options
//! (`-E`, `-T`), the instant-file-initialisation setting, and the wait and spinlock statistics.
//!
//! Startup writes SQL Server's informational lines to the errorlog, including the IFI line
//! (reference §4): `Database Instant File Initialization: enabled. ...` or `disabled.`.
//!
//! Sessions arrive in a later issue; until then the ProcessInfo column of errorlog lines comes
//! from a per-thread session id set with [`set_current_spid`] (default 51, the first user spid).

use crate::buffer::{BufferPool, PoolStats};
use crate::clock::{self, Clock};
use crate::configuration::{self, Configuration};
use crate::errorlog::ErrorLog;
use crate::io::{self, Io};
use crate::traceflags::{self, TraceFlags};
use crate::units::PAGES_PER_MB;
use crate::waits::{LatchStats, SpinlockStats, WaitStats, WaitingTasks};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Default 'max server memory (MB)' (SQL Server's default is all memory; extentdb's is modest
/// because it is embedded in other processes and tests).
pub const DEFAULT_MAX_SERVER_MEMORY_MB: u32 = 512;

/// The first database id given to user databases, as in SQL Server (1-4 are system databases).
pub const FIRST_USER_DATABASE_ID: u16 = 5;
/// master's database id.
pub const MASTER_DATABASE_ID: u16 = 1;

thread_local! {
    static CURRENT_SPID: Cell<u16> = const { Cell::new(51) };
}

/// Swaps the thread's session id with a fiber's (see [`crate::fiber`]).
pub(crate) fn swap_fiber_spid(saved: &mut u16) {
    *saved = CURRENT_SPID.with(|cell| cell.replace(*saved));
}

/// Sets the session id that this thread's errorlog lines carry.
pub fn set_current_spid(spid: u16) {
    CURRENT_SPID.with(|cell| cell.set(spid));
    crate::fiber::note_spid(spid);
}

/// The session id of the current thread.
pub fn current_spid() -> u16 {
    CURRENT_SPID.with(Cell::get)
}

/// `spidNN` for the current thread.
pub fn current_process_info() -> String {
    format!("spid{}", CURRENT_SPID.with(Cell::get))
}

/// Startup configuration.
#[derive(Clone, Debug)]
pub struct InstanceConfig {
    pub dir: PathBuf,
    /// Instant file initialisation (the service account's "Perform volume maintenance tasks").
    pub ifi_enabled: bool,
    /// The `-E` startup option: 64 consecutive extents per file.
    pub startup_e: bool,
    /// `-T` startup trace flags.
    pub startup_trace_flags: Vec<u16>,
    /// 'max server memory (MB)' as a startup option: the buffer pool has this many MB of 8 KB
    /// frames, whatever sp_configure configured. None: the configured value (512 MB unless
    /// sp_configure set another). Frames get their memory when first used.
    pub max_server_memory_mb: Option<u32>,
    /// Which version's VLF algorithm log creation and growth follow (2022 by default).
    pub vlf_rule: crate::log::vlf::VlfRule,
    /// The `-P<n>` startup option: n schedulers. None: one per CPU of the machine.
    pub schedulers: Option<usize>,
    /// 'affinity mask' and 'affinity I/O mask' for this run, whatever sp_configure configured
    /// (as `max_server_memory_mb` overrides its option). None: the configured values.
    pub affinity_mask: Option<i32>,
    pub affinity_io_mask: Option<i32>,
}

impl InstanceConfig {
    pub fn new(dir: impl Into<PathBuf>) -> InstanceConfig {
        InstanceConfig {
            dir: dir.into(),
            ifi_enabled: true,
            startup_e: false,
            startup_trace_flags: Vec::new(),
            max_server_memory_mb: None,
            vlf_rule: crate::log::vlf::VlfRule::default(),
            schedulers: None,
            affinity_mask: None,
            affinity_io_mask: None,
        }
    }
}

pub struct Instance {
    pub config: InstanceConfig,
    pub io: Arc<dyn Io>,
    /// When the instance started: the clock's reading (sqlserver_start_time) and the
    /// monotonic instant that sample_ms counts from.
    pub start_time: chrono::NaiveDateTime,
    pub started: std::time::Instant,
    /// Every data and log file's I/O counters (sys.dm_io_virtual_file_stats).
    pub file_io: Arc<crate::io::FileIoRegistry>,
    pub clock: Arc<dyn Clock>,
    pub errorlog: ErrorLog,
    pub trace_flags: TraceFlags,
    pub waits: Arc<WaitStats>,
    pub spinlocks: Arc<SpinlockStats>,
    pub latches: Arc<LatchStats>,
    pub waiting_tasks: Arc<WaitingTasks>,
    /// The system sessions' background tasks (lazy writer, log writers, checkpoint and
    /// ghost-cleanup tasks).
    pub system_tasks: Arc<crate::system_tasks::SystemTasks>,
    /// The schedulers session workers run on (sys.dm_os_schedulers).
    pub schedulers: Arc<crate::scheduler::Schedulers>,
    pub buffer_pool: Arc<BufferPool>,
    pub spids: crate::session::SpidAllocator,
    /// Transaction locks of every database.
    pub locks: crate::lock::LockManager,
    /// Page splits, allocations and batches counted as they happen (perfcounters).
    pub counters: crate::perfcounters::InstanceCounters,
    /// sp_configure's options, configured and in use.
    pub configuration: Configuration,
    /// The CPUs of the I/O threads ('affinity I/O mask' at startup; empty: no binding).
    pub io_affinity_cpus: Vec<usize>,
    /// The machine's memory in MB as detected at startup ([`detect_physical_memory_mb`]): the
    /// errorlog's "Detected N MB of RAM", sys.dm_os_sys_info.physical_memory_kb.
    pub physical_memory_mb: Option<u64>,
    /// The server's Extended Events sessions.
    pub xevents: Arc<crate::xevent::XEvents>,
    next_database_id: Mutex<u16>,
    open_databases: Mutex<BTreeSet<String>>,
    /// The open lock file that keeps other instances out of the data directory
    /// ([`lock_data_directory`]); None once released at shutdown.
    data_directory_lock: Mutex<Option<Box<dyn io::IoFile>>>,
}

/// The data directory as the instance keeps it: absolute, so that the physical file names made
/// in it (sys.database_files, the `databases` file) are absolute, as SQL Server's are; a relative
/// one named other files, or none, when the instance was started again from another working
/// directory. Its path must be Unicode (physical names are nvarchar) without control characters
/// (the `databases` file keeps a path per line): one that is not is refused before anything is
/// made.
fn data_directory(dir: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(dir)?;
    if absolute.to_str().is_some_and(|text| text.chars().any(char::is_control)) {
        let text = format!(
            "The data directory \"{}\" holds a control character, which SQL Server's file \
             names cannot (Windows' operating system error 123).",
            absolute.display().to_string().escape_debug()
        );
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, text));
    }
    if absolute.to_str().is_none() {
        let text = format!(
            "The data directory \"{}\" is not a valid Unicode path: SQL Server's file names are \
             Unicode text.",
            absolute.display()
        );
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, text));
    }
    Ok(absolute)
}

/// The share of the machine's memory SQL Server on Linux takes at most by default (mssql-conf's
/// memory.memorylimitmb: 80 % of the physical memory).
const MEMORY_LIMIT_PERCENT: u64 = 80;

/// The machine's memory in MB, as SQL Server on Linux detects it: /proc/meminfo's MemTotal, or
/// a container's smaller cgroup limit (v2 `memory.max`, v1 `memory.limit_in_bytes`). None
/// where MemTotal cannot be read.
fn detect_physical_memory_mb() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let total_kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    let limits = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"];
    let cgroup_bytes = limits
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok())
        .min();
    let cgroup_mb = cgroup_bytes.map_or(u64::MAX, |bytes| bytes / (1024 * 1024));
    Some((total_kb / 1024).min(cgroup_mb))
}

/// The buffer pool's size in MB: 'max server memory (MB)', but no more than SQL Server on
/// Linux's default memory limit, 80 % of `physical_mb` (never under the option's minimum,
/// 128). The option's own default in SQL Server, 2147483647, means "as much as the machine
/// has"; taken as frames, it asked for 2 PB at startup, and 1 TB was killed by the kernel
/// after 50 s of allocating frame descriptors.
fn buffer_pool_mb(configured_mb: u64, physical_mb: Option<u64>) -> u64 {
    let Some(physical_mb) = physical_mb else { return configured_mb };
    let minimum_mb = configuration::MAX_SERVER_MEMORY_MINIMUM_MB as u64;
    let limit_mb = (physical_mb * MEMORY_LIMIT_PERCENT / 100).max(minimum_mb);
    configured_mb.min(limit_mb)
}

/// The file of the data directory whose lock an instance holds while it runs.
pub const LOCK_FILE_NAME: &str = "extentdb.lock";

/// Keeps other instances, in this process or another, out of the data directory while this one
/// runs: an exclusive lock (flock) on its `extentdb.lock`, which holds the process id of the
/// holder. SQL Server opens its files for exclusive use, and a second instance on the same
/// files gets OS error 32; two extentdb processes on one directory each wrote pages and log the
/// other did not know of. The lock goes with the process however it ends (no stale lock after
/// a kill), and with [`Instance::release_data_directory`] at shutdown.
fn lock_data_directory(io: &dyn Io, dir: &Path) -> std::io::Result<Box<dyn io::IoFile>> {
    io.create_dir_all(dir)?;
    let path = dir.join(LOCK_FILE_NAME);
    let Some(file) = io.lock_exclusive(&path)? else {
        let holder = io.read_to_string(&path).unwrap_or_default();
        let text = format!(
            "The process cannot access the file \"{}\" because it is being used by another \
             process (extentdb process {} holds the data directory).",
            path.display(),
            holder.trim()
        );
        return Err(std::io::Error::new(std::io::ErrorKind::ResourceBusy, text));
    };
    let holder = format!("{}\n", std::process::id());
    file.set_len(0)?;
    file.write_at(holder.as_bytes(), 0)?;
    Ok(file)
}

impl Instance {
    /// Starts an instance on the real backend and clock.
    pub fn start(config: InstanceConfig) -> std::io::Result<Arc<Instance>> {
        Instance::start_with(config, io::std_io(), clock::system_clock())
    }

    /// Starts an instance on a given backend and clock (tests inject faults and fixed time).
    pub fn start_with(
        config: InstanceConfig,
        io: Arc<dyn Io>,
        clock: Arc<dyn Clock>,
    ) -> std::io::Result<Arc<Instance>> {
        let mut config = config;
        config.dir = data_directory(&config.dir)?;
        let data_directory_lock = lock_data_directory(io.as_ref(), &config.dir)?;
        let file_io = Arc::new(crate::io::FileIoRegistry::default());
        let io: Arc<dyn Io> = Arc::new(crate::io::StatsIo::new(io, file_io.clone()));
        let errorlog = ErrorLog::open(&config.dir, io.clone(), clock.clone())?;
        let stats = PoolStats::default();
        let configuration = Configuration::load(io.clone(), &config.dir);
        if let Some(startup_mb) = config.max_server_memory_mb {
            let startup_mb = i32::try_from(startup_mb).unwrap_or(i32::MAX);
            configuration.override_in_use(configuration::MAX_SERVER_MEMORY_MB, startup_mb);
        }
        let affinity_error = apply_affinity_overrides(&config, &configuration);
        let io_affinity_cpus = crate::affinity::cpus_of_mask(
            configuration.value_in_use(configuration::AFFINITY_IO_MASK),
        );
        let configured_mb = configuration.value_in_use(configuration::MAX_SERVER_MEMORY_MB);
        let configured_mb = u64::try_from(configured_mb).expect("at least 128");
        let physical_memory_mb = detect_physical_memory_mb();
        let memory_mb = buffer_pool_mb(configured_mb, physical_memory_mb);
        let frames = usize::try_from(memory_mb * u64::from(PAGES_PER_MB)).expect("fits in memory");
        let large_pages =
            config.startup_trace_flags.contains(&traceflags::TF_LARGE_PAGE_BUFFER_POOL);
        let scheduler_count =
            config.schedulers.unwrap_or_else(crate::scheduler::Schedulers::cpu_count);
        let xevents =
            Arc::new(crate::xevent::XEvents::load(io.clone(), &config.dir, clock.clone()));
        stats.waits.attach_xevents(xevents.clone());
        let instance = Instance {
            schedulers: crate::scheduler::Schedulers::new(scheduler_count, stats.waits.clone()),
            trace_flags: TraceFlags::new(&config.startup_trace_flags),
            buffer_pool: BufferPool::start(
                frames,
                stats.clone(),
                large_pages,
                io_affinity_cpus.clone(),
            ),
            waits: stats.waits,
            latches: stats.latches,
            waiting_tasks: stats.waiting,
            system_tasks: stats.system_tasks,
            config,
            start_time: clock.now_local(),
            started: std::time::Instant::now(),
            io,
            file_io,
            clock,
            errorlog,
            spinlocks: stats.spinlocks,
            spids: crate::session::SpidAllocator::default(),
            locks: crate::lock::LockManager::default(),
            counters: crate::perfcounters::InstanceCounters::default(),
            configuration,
            io_affinity_cpus,
            physical_memory_mb,
            xevents,
            next_database_id: Mutex::new(FIRST_USER_DATABASE_ID),
            open_databases: Mutex::new(BTreeSet::new()),
            data_directory_lock: Mutex::new(Some(data_directory_lock)),
        };
        for line in instance.banner() {
            instance.errorlog.write("Server", &line);
        }
        if large_pages {
            for line in instance.large_page_lines() {
                instance.errorlog.write("Server", &line);
            }
        }
        if let Some(error) = affinity_error {
            instance.errorlog.write_error("Server", &error);
            instance.errorlog.write("Server", "The affinity masks are set to 0 until a restart.");
        }
        instance
            .schedulers
            .set_affinity_mask(instance.configuration.value_in_use(configuration::AFFINITY_MASK));
        for error in instance.xevents.start_startup_sessions() {
            instance.errorlog.write_error("Server", &error);
        }
        Ok(Arc::new(instance))
    }

    /// The lines an errorlog starts with: version, startup parameters, the IFI line.
    pub fn banner(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "extentdb {} - a storage engine after Microsoft SQL Server 2022 (16.0), open source",
                env!("CARGO_PKG_VERSION")
            ),
            "Command Line Startup Parameters:".to_string(),
        ];
        if self.config.startup_e {
            lines.push("\t -E".to_string());
        }
        for flag in &self.config.startup_trace_flags {
            lines.push(format!("\t -T {flag}"));
        }
        if let Some(schedulers) = self.config.schedulers {
            lines.push(format!("\t -P {schedulers}"));
        }
        if let Some(physical_mb) = self.physical_memory_mb {
            lines.push(format!(
                "Detected {physical_mb} MB of RAM. This is an informational message; no user \
                 action is required."
            ));
        }
        let state = if self.ifi_enabled() { "enabled" } else { "disabled" };
        lines.push(format!(
            "Database Instant File Initialization: {state}. For security and performance \
             considerations see the topic 'Database Instant File Initialization' in SQL Server \
             Books Online. This is an informational message only. No user action is required."
        ));
        lines
    }

    /// What SQL Server's errorlog says at startup when TF 834 gives the buffer pool large
    /// pages, the pool having been committed by then. The reference does not cover TF 834:
    /// the texts follow errorlogs quoted in Microsoft CSS's "SQL Server and Large Pages
    /// Explained" (2009), from memory of them, so their wording is not verified.
    fn large_page_lines(&self) -> Vec<String> {
        vec![
            "Using large pages in the memory manager.".to_string(),
            "Large Page Granularity: 2097152".to_string(),
            "Using large pages for buffer pool.".to_string(),
            format!(
                "{} MB of large page memory allocated.",
                (self.buffer_pool.frame_count() as u64 * crate::units::PAGE_SIZE_U64) >> 20
            ),
        ]
    }

    /// Whether data-file creation and growth skip zeroing (TF 1806 turns it off).
    pub fn ifi_enabled(&self) -> bool {
        self.config.ifi_enabled && !self.trace_flags.is_on(traceflags::TF_DISABLE_IFI)
    }

    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// Lets another instance use the data directory (at shutdown, once the databases are
    /// closed; dropping the instance does it too).
    pub fn release_data_directory(&self) {
        self.data_directory_lock.lock().take();
    }

    /// sp_cycle_errorlog.
    pub fn cycle_errorlog(&self) -> std::io::Result<()> {
        self.errorlog.cycle(&current_process_info(), &self.banner())
    }

    /// Writes trace output for `flag` to the errorlog when the flag and 3605 are on.
    pub fn trace(&self, flag: u16, line: &str) {
        if self.trace_flags.traces_to_errorlog(flag) {
            self.errorlog.write(&current_process_info(), line);
        }
    }

    /// Reserves a database name and id; false if a database of that name is open.
    pub(crate) fn register_database(&self, name: &str) -> bool {
        self.open_databases.lock().insert(name.to_ascii_lowercase())
    }

    pub(crate) fn unregister_database(&self, name: &str) {
        self.open_databases.lock().remove(&name.to_ascii_lowercase());
    }

    pub(crate) fn allocate_database_id(&self) -> u16 {
        // Invariant: ids below FIRST_USER_DATABASE_ID are reserved for system databases.
        debug_assert!(*self.next_database_id.lock() >= FIRST_USER_DATABASE_ID);
        let mut next = self.next_database_id.lock();
        let id = *next;
        *next += 1;
        id
    }

    /// Makes sure an id a database holds is not handed out again: a reopened database's, or a
    /// SUSPECT one's, which keeps its id while it does not open.
    pub fn note_database_id(&self, id: u16) {
        let mut next = self.next_database_id.lock();
        *next = (*next).max(id + 1);
    }
}

/// Puts the startup overrides of the affinity masks in use, then checks the masks in use as
/// RECONFIGURE WITH OVERRIDE would: masks naming a CPU the machine does not have (a
/// configuration file from another machine) are not used, and the errorlog says so (5832,
/// the error returned).
fn apply_affinity_overrides(
    config: &InstanceConfig,
    configuration: &Configuration,
) -> Option<crate::error::SqlError> {
    if let Some(mask) = config.affinity_mask {
        configuration.override_in_use(configuration::AFFINITY_MASK, mask);
    }
    if let Some(mask) = config.affinity_io_mask {
        configuration.override_in_use(configuration::AFFINITY_IO_MASK, mask);
    }
    let cpu_mask = configuration.value_in_use(configuration::AFFINITY_MASK);
    let io_mask = configuration.value_in_use(configuration::AFFINITY_IO_MASK);
    let cpus = crate::affinity::process_cpus();
    let error = crate::affinity::check_masks(cpu_mask, io_mask, cpus, true).err()?;
    configuration.override_in_use(configuration::AFFINITY_MASK, 0);
    configuration.override_in_use(configuration::AFFINITY_IO_MASK, 0);
    Some(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 'max server memory (MB)' sizes the pool up to 80 % of the machine's memory, and never
    /// below the option's minimum; without a reading of the machine, as configured.
    #[test]
    fn the_pool_is_max_server_memory_capped_at_80_percent_of_the_machine() {
        assert_eq!(buffer_pool_mb(512, Some(24_105)), 512);
        assert_eq!(buffer_pool_mb(2_147_483_647, Some(24_105)), 19_284);
        assert_eq!(buffer_pool_mb(20_000, Some(24_105)), 19_284);
        assert_eq!(buffer_pool_mb(1_024, Some(100)), 128, "the option's minimum");
        assert_eq!(buffer_pool_mb(2_147_483_647, None), 2_147_483_647);
    }
}
