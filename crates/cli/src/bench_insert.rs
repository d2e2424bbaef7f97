//! `extentdb bench insert`: seed 001 on this machine. K sessions insert rows
//! `(c1 uniqueidentifier, c2 datetime, c3 char(111))` into a clustered index on c1 (random
//! GUIDs) or on an int identity, in batches of 1,000, into a database of N data files. It
//! prints rows/s, the size on disk, the waits that make up 95 % of the wait time in the seed's
//! columns, the latch waits on PFS pages, and the hottest latched pages. `extentdb examples
//! seed001` runs the same load on 1, 2, 4 and 8 files ([`seed001_example`]).
//!
//! Each batch of 1,000 rows is one transaction: its commit waits until the log is durable
//! (fdatasync, group commit across sessions; WRITELOG). `--no-log-flush` turns on delayed
//! durability, to measure the engine without the commit flushes.

use clap::{Args, ValueEnum};
use engine::alloc::{self, MapKind};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::instance::{Instance, InstanceConfig};
use engine::record::{Column, SqlType, Value};
use engine::rng::SplitMix64;
use engine::scheduler::SchedulerRow;
use engine::session::Session;
use engine::units::{PageId, SizeSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Instant;

/// Rows per batch, as in the seed.
const BATCH_ROWS: u64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    Guid,
    Identity,
}

#[derive(Args)]
pub struct InsertBench {
    /// Concurrent sessions (threads).
    #[arg(long, default_value_t = 16)]
    sessions: u32,
    /// Data files in the PRIMARY filegroup.
    #[arg(long, default_value_t = 1)]
    files: u32,
    /// Rows in all, over all sessions.
    #[arg(long, default_value_t = 160_000)]
    rows: u64,
    /// The clustered key: random uniqueidentifier or int identity.
    #[arg(long, value_enum, default_value_t = KeyKind::Guid)]
    key: KeyKind,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Directory for the database (default: a fresh temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the GUID generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// 'max server memory (MB)' of the instance.
    #[arg(long, default_value_t = 1024)]
    max_server_memory_mb: u32,
    /// Initial size of the log file in MB (it grows by 64 MB). Default: room for the run's
    /// log twice over, at least 64 MB (see [`default_log_size_mb`]).
    #[arg(long)]
    log_size_mb: Option<u64>,
    /// Delayed durability: commits do not wait for the log (the engine without the flushes).
    #[arg(long)]
    no_log_flush: bool,
    /// Start the instance without trace flag 834. With it (the default, as for `bench
    /// seed002`) the pool's memory is committed at startup in huge pages, as SQL Server's
    /// large-page buffer pool is: random keys spread each session's inserts over the whole
    /// table, and in 4 KB pages most of them also missed the TLB (10 % more CPU per row).
    #[arg(long)]
    no_large_pages: bool,
    /// Schedulers (sqlservr's -P<n>): at most this many sessions run at once. Default: one
    /// per CPU, as SQL Server makes them. More than the CPUs lets every session run, and
    /// contend, as on a server with that many cores (seed 001's machine had 16 and more).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    schedulers: Option<u16>,
    /// 'affinity mask' for the run (sp_configure option 1535): the CPUs whose schedulers are
    /// online, each binding its workers to its CPU. 0, the default: the OS places threads.
    #[arg(long, default_value_t = 0)]
    affinity_mask: i32,
    /// 'affinity I/O mask' for the run (option 1536): the CPUs of the log writer, the lazy
    /// writer and the checkpoint task. 0, the default: no binding.
    #[arg(long, default_value_t = 0)]
    affinity_io_mask: i32,
    /// 'lightweight pooling' for the run (fiber mode): each scheduler's sessions run as fibers
    /// of one thread, switching in user mode when they wait.
    #[arg(long)]
    lightweight_pooling: bool,
    /// Skip the in-process baseline (the same rows into a bare in-memory B-tree, timed before
    /// and after the load, and a cache line's round trip between the CPUs; `vs_baseline` in
    /// the report).
    #[arg(long)]
    no_baseline: bool,
    /// After the load, run this T-SQL script on the same instance (its waits, latches and
    /// files), e.g. examples/top_waits.sql.
    #[arg(long)]
    sql: Option<PathBuf>,
}

#[derive(Serialize)]
struct WaitJson {
    wait_type: String,
    waiting_tasks_count: u64,
    wait_time_ms: u64,
    signal_wait_time_ms: u64,
}

#[derive(Serialize)]
struct LatchResourceJson {
    resource: String,
    page_type: String,
    wait_type: String,
    waiting_tasks_count: u64,
    wait_time_ms: f64,
}

#[derive(Serialize)]
struct Report {
    sessions: u32,
    files: u32,
    key: KeyKind,
    /// Trace flag 834: the buffer pool committed at startup in huge pages.
    large_pages: bool,
    /// 'lightweight pooling': the sessions ran as fibers of one thread per scheduler.
    lightweight_pooling: bool,
    rows: u64,
    seconds: f64,
    rows_per_s: f64,
    /// CPU seconds of the whole process during the run (every thread), and per row: a cost
    /// that varies less than wall time on a noisy machine. Absent where /proc is missing.
    cpu_seconds: Option<f64>,
    cpu_us_per_row: Option<f64>,
    /// That CPU against all the CPUs the process may use for the run's duration, in per cent:
    /// below 100 when sessions leave CPUs idle (every worker of a scheduler waiting on a
    /// latch, say), as well as a cost per row that is too high.
    cpu_busy_percent: Option<f64>,
    /// The CPUs the process may use (its affinity).
    cpus: usize,
    size_on_disk_mb: f64,
    used_mb: f64,
    waits: Vec<WaitJson>,
    latch_resources: Vec<LatchResourceJson>,
    durable: bool,
    /// The log file's initial size (`--log-size-mb`, or room for the run's log twice over).
    log_size_mb: u64,
    /// Its size when the run ended: larger if it grew (autogrowth, 64 MB at a time).
    log_end_size_mb: f64,
    /// Log flushes during the run, the bytes they wrote and their average size (the log's I/O).
    log_flushes: u64,
    log_mb_flushed: f64,
    avg_log_flush_kb: f64,
    /// Automatic checkpoints taken during the run, and the data pages the pool wrote (the
    /// checkpoints' and the lazy writer's): background work that shares the machine's cores.
    auto_checkpoints: u64,
    page_writes: u64,
    /// Latch waits on PFS pages (page 1 and every 8,088th page after it, in any file) during the run,
    /// and their wait time: seed 001's allocation contention.
    pfs_waits: u64,
    pfs_wait_ms: f64,
    /// The online schedulers (sys.dm_os_schedulers) during the run: the sessions each ran, and
    /// its context switches and yields over the run.
    schedulers: Vec<SchedulerJson>,
    /// The in-process baseline ([`crate::insert_baseline`]): the same rows inserted into one
    /// bare in-memory B-tree per thread, timed just before the instance starts and just after
    /// the load; its threads, each side's rows/s, their mean, and the load's rows/s over that
    /// mean. Absent with `--no-baseline`.
    baseline: Option<BaselineJson>,
    vs_baseline: Option<f64>,
}

#[derive(Serialize)]
struct BaselineJson {
    threads: usize,
    before_rows_per_s: f64,
    after_rows_per_s: f64,
    rows_per_s: f64,
    /// The two CPUs of [`crate::insert_baseline::cpu_round_trip_ns`] and a cache line's round
    /// trip between them before and after the load, in ns (None: one CPU, or not measured).
    cpu_pair: Option<(usize, usize)>,
    round_trip_before_ns: Option<f64>,
    round_trip_after_ns: Option<f64>,
}

#[derive(Serialize)]
struct SchedulerJson {
    scheduler_id: u32,
    cpu_id: u32,
    /// The sessions whose worker (or fiber) ran on it.
    sessions: u32,
    context_switches_count: u64,
    yield_count: u64,
}

/// The online schedulers' rows over the run: `before` and `after` are sys.dm_os_schedulers'
/// rows at its start and end, `placed` the scheduler each session ran on.
fn scheduler_rows(
    before: &[SchedulerRow],
    after: &[SchedulerRow],
    placed: &[usize],
) -> Vec<SchedulerJson> {
    let mut rows = Vec::new();
    for row in after.iter().filter(|row| row.is_online) {
        let start = before.iter().find(|b| b.scheduler_id == row.scheduler_id);
        let (switches, yields) =
            start.map_or((0, 0), |b| (b.context_switches_count, b.yield_count));
        let id = row.scheduler_id as usize;
        rows.push(SchedulerJson {
            scheduler_id: row.scheduler_id,
            cpu_id: row.cpu_id,
            sessions: placed.iter().filter(|p| **p == id).count() as u32,
            context_switches_count: row.context_switches_count - switches,
            yield_count: row.yield_count - yields,
        });
    }
    rows
}

fn columns(key: KeyKind) -> Vec<Column> {
    let c1 = match key {
        KeyKind::Guid => Column::new("c1", SqlType::UniqueIdentifier, false),
        KeyKind::Identity => Column::new("c1", SqlType::Int, false),
    };
    vec![
        c1,
        Column::new("c2", SqlType::DateTime, false),
        Column::new("c3", SqlType::Char(111), false),
    ]
}

/// Log bytes a row of this load writes, about: its LOP_INSERT_ROWS record, its share of the
/// slot-array shifts and of the page splits' moved rows (142 MB for 400,000 rows, measured).
const LOG_BYTES_PER_ROW: u64 = 360;

/// The log's initial size when `--log-size-mb` is not given: twice the run's log, at least
/// 64 MB. A DBA presizes the log for a load as the data files are presized here, so that the
/// timed run neither grows the log nor reaches the SIMPLE log's 70 % mark, whose automatic
/// checkpoint would write the whole table in the middle of it (a run of 400,000 rows with a
/// 64 MB log takes two to four such checkpoints; `--log-size-mb 64` shows them).
fn default_log_size_mb(rows: u64) -> u64 {
    (rows * LOG_BYTES_PER_ROW * 2).div_ceil(1024 * 1024).max(64)
}

fn create_database(
    instance: &Arc<Instance>,
    files: u32,
    rows: u64,
    log_size_mb: u64,
) -> Result<Database, String> {
    // Room for the rows at half-full pages, spread over the files; growth covers the rest.
    let per_file_mb = (rows * 300 / 1024 / 1024 / u64::from(files)).max(8);
    let size = SizeSpec::Kb(per_file_mb * 1024);
    let mut primary = vec![
        FileSpec::new("InsertBench_1", "InsertBench_1.mdf")
            .size(size)
            .growth(SizeSpec::Kb(64 * 1024)),
    ];
    for n in 2..=files {
        primary.push(
            FileSpec::new(&format!("InsertBench_{n}"), format!("InsertBench_{n}.ndf"))
                .size(size)
                .growth(SizeSpec::Kb(64 * 1024)),
        );
    }
    let spec = DatabaseSpec {
        name: "InsertBench".into(),
        primary,
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("InsertBench_log", "InsertBench_log.ldf")
                .size(SizeSpec::Kb(log_size_mb * 1024))
                .growth(SizeSpec::Kb(64 * 1024)),
        ],
        mixed_page_allocation: false,
    };
    Database::create(instance, &spec).map_err(|e| e.to_string())
}

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} rows {per_sec} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

pub fn run(args: &InsertBench) -> Result<(), String> {
    let measured = measure(args)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&measured.report).map_err(|e| e.to_string())?);
    } else {
        print_report(&measured.report);
    }
    if let Some(script) = &args.sql {
        run_script_on(&measured.instance, script)?;
    }
    Ok(())
}

/// A finished load: its report, and its instance for a script to look at (dropped in field
/// order: the database, then the instance, then the temporary directory).
struct Measured {
    report: Report,
    _db: Arc<Database>,
    instance: Arc<Instance>,
    _temp: Option<tempfile::TempDir>,
}

/// Runs the load and measures it.
fn measure(args: &InsertBench) -> Result<Measured, String> {
    if args.sessions == 0 || args.files == 0 || args.rows == 0 {
        return Err("--sessions, --files and --rows must be at least 1".into());
    }
    let temp = match &args.dir {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("extentdb-bench-insert")
                .tempdir_in(std::env::current_dir().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?,
        ),
    };
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_default());
    crate::bench::check_affinity_masks(args.affinity_mask, args.affinity_io_mask)?;
    let process_cpus = engine::affinity::process_cpus();
    let baseline_threads =
        crate::insert_baseline::thread_count(args.sessions, args.affinity_mask, process_cpus.len());
    let cpu_pair = crate::insert_baseline::cpu_pair(args.affinity_mask, process_cpus)
        .filter(|_| baseline_threads > 1);
    let run_baseline = || {
        let run = crate::insert_baseline::run(args.rows, baseline_threads, args.key, args.seed, 3);
        (run, cpu_pair.and_then(crate::insert_baseline::cpu_round_trip_ns))
    };
    let baseline_before = (!args.no_baseline).then(run_baseline);
    let mut config = InstanceConfig::new(&dir);
    config.max_server_memory_mb = Some(args.max_server_memory_mb);
    config.schedulers = args.schedulers.map(usize::from);
    config.affinity_mask = Some(args.affinity_mask);
    config.affinity_io_mask = Some(args.affinity_io_mask);
    if !args.no_large_pages {
        config.startup_trace_flags.push(engine::traceflags::TF_LARGE_PAGE_BUFFER_POOL);
    }
    let instance = Instance::start(config).map_err(|e| e.to_string())?;
    let log_size_mb = args.log_size_mb.unwrap_or_else(|| default_log_size_mb(args.rows));
    let db = Arc::new(create_database(&instance, args.files, args.rows, log_size_mb)?);
    // As the server runs it: automatic checkpoints on the background checkpoint task, log
    // blocks written by the log writer.
    db.start_checkpoint_task();
    db.start_log_writer();
    db.set_delayed_durability(args.no_log_flush);
    let tree = Arc::new(
        BTree::create(
            &db,
            "dbo.MyBigTable",
            "PK_MyBigTable",
            columns(args.key),
            vec![0],
            true,
            None,
        )
        .map_err(|e| e.to_string())?,
    );
    instance.waits.clear();
    let log_before = db.log().stats();
    let (checkpoints_before, writes_before) =
        (db.auto_checkpoints(), instance.buffer_pool.counters().page_writes);
    instance.latches.clear();
    instance.buffer_pool.clear_page_waits();
    let bar = progress(args.rows);
    let done = Arc::new(AtomicU64::new(0));
    let identity = Arc::new(AtomicI32::new(1));
    let placed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let schedulers_before = instance.schedulers.snapshot();
    let cpu_before = crate::cpu_time::process_cpu_s();
    let started = Instant::now();
    let workers: Vec<_> = (0..args.sessions)
        .map(|n| {
            let share = args.rows / u64::from(args.sessions)
                + u64::from(u64::from(n) < args.rows % u64::from(args.sessions));
            let (db, tree, done, identity, bar, placed) = (
                db.clone(),
                tree.clone(),
                done.clone(),
                identity.clone(),
                bar.clone(),
                placed.clone(),
            );
            let session = Session::open(&instance);
            let schedulers = instance.schedulers.clone();
            let (key, seed) =
                (args.key, args.seed.wrapping_mul(1_000_003).wrapping_add(u64::from(n)));
            move || -> Result<(), String> {
                session.enter();
                // The session's worker runs on a scheduler, as a SQL Server request does.
                let _worker = engine::scheduler::attach(&schedulers);
                if let Some(id) = engine::scheduler::current_scheduler_id() {
                    placed.lock().expect("no session panics holding it").push(id);
                }
                let mut rng = SplitMix64::new(seed);
                let mut batch = 0;
                db.begin_tran().map_err(|e| e.to_string())?;
                for row in 0..share {
                    let c1 = match key {
                        KeyKind::Guid => Value::Guid(rng.guid()),
                        KeyKind::Identity => Value::Int(identity.fetch_add(1, Ordering::Relaxed)),
                    };
                    let values = [
                        c1,
                        Value::DateTime(45_000, (row % 25_920_000) as u32),
                        Value::Text("a".into()),
                    ];
                    tree.insert(&db, &values).map_err(|e| e.to_string())?;
                    batch += 1;
                    if batch == BATCH_ROWS || row + 1 == share {
                        db.commit_tran().map_err(|e| e.to_string())?;
                        if row + 1 < share {
                            db.begin_tran().map_err(|e| e.to_string())?;
                        }
                        done.fetch_add(batch, Ordering::Relaxed);
                        bar.inc(batch);
                        batch = 0;
                    }
                }
                Ok(())
            }
        })
        .collect();
    crate::sessions::run(&instance, workers, args.lightweight_pooling)?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_before.zip(crate::cpu_time::process_cpu_s()).map(|(a, b)| b - a);
    bar.finish_and_clear();
    let counted = tree.check(&db)?;
    if counted as u64 != args.rows {
        return Err(format!("the index holds {counted} rows, {} were inserted", args.rows));
    }
    let baseline_after = baseline_before.as_ref().map(|_| run_baseline());
    let log_after = db.log().stats();
    let flushes = log_after.flushes - log_before.flushes;
    let flushed = log_after.bytes_flushed - log_before.bytes_flushed;
    let mut report = build_report(args, &instance, &db, done.load(Ordering::Relaxed), seconds);
    report.cpu_seconds = cpu_seconds;
    report.cpu_us_per_row = cpu_seconds.map(|s| s * 1e6 / args.rows.max(1) as f64);
    report.cpu_busy_percent = cpu_seconds.map(|s| busy_percent(s, seconds, report.cpus));
    report.log_size_mb = log_size_mb;
    report.log_end_size_mb = db.log().log_stats().total_log_size_bytes as f64 / 1048576.0;
    report.log_flushes = flushes;
    report.log_mb_flushed = flushed as f64 / 1048576.0;
    report.avg_log_flush_kb = flushed as f64 / 1024.0 / flushes.max(1) as f64;
    report.auto_checkpoints = db.auto_checkpoints() - checkpoints_before;
    report.page_writes = instance.buffer_pool.counters().page_writes - writes_before;
    let placed = placed.lock().expect("the sessions are done").clone();
    report.schedulers =
        scheduler_rows(&schedulers_before, &instance.schedulers.snapshot(), &placed);
    if let (Some((before, trip_before)), Some((after, trip_after))) =
        (baseline_before, baseline_after)
    {
        let (before, after) = (before.rows_per_s(), after.rows_per_s());
        let mean = (before + after) / 2.0;
        report.vs_baseline = Some(report.rows_per_s / mean);
        report.baseline = Some(BaselineJson {
            threads: baseline_threads,
            before_rows_per_s: before,
            after_rows_per_s: after,
            rows_per_s: mean,
            cpu_pair,
            round_trip_before_ns: trip_before,
            round_trip_after_ns: trip_after,
        });
    }
    Ok(Measured { report, _db: db, instance, _temp: temp })
}

/// The data file counts of seed 001's sweep that `extentdb examples seed001` runs.
const SEED001_FILES: [u32; 4] = [1, 2, 4, 8];

/// `extentdb examples seed001`: seed 001's load (16 sessions, random GUID keys, batches of
/// 1,000) on 1, 2, 4 and 8 data files, each in its own directory under `dir` (made anew and
/// removed after the run): each run's report in the seed's columns, then the PFS latch waits
/// side by side. With one
/// file every allocation's PFS byte is on the same few PFS pages; each added file brings its
/// own, so the sessions meet on them less.
pub fn seed001_example(dir: &std::path::Path, rows: u64) -> Result<Vec<Seed001Run>, String> {
    let mut summary = Vec::new();
    for files in SEED001_FILES {
        let run_dir = dir.join(format!("files{files}"));
        if run_dir.exists() {
            std::fs::remove_dir_all(&run_dir).map_err(|e| e.to_string())?;
        }
        let args = InsertBench {
            sessions: 16,
            files,
            rows,
            key: KeyKind::Guid,
            json: false,
            dir: Some(run_dir),
            seed: 1,
            max_server_memory_mb: 1024,
            log_size_mb: None,
            no_log_flush: false,
            no_large_pages: true,
            // The seed's machine: 8 cores, so 8 schedulers ("there can only be 8 threads
            // running at once (one per SQLOS scheduler)").
            schedulers: Some(8),
            affinity_mask: 0,
            affinity_io_mask: 0,
            lightweight_pooling: false,
            no_baseline: false,
            sql: None,
        };
        let report = measure(&args)?.report; // the instance has shut down
        print_report(&report);
        outln!();
        // Nothing opens the load's database again (it is not in a server's registry): its
        // files (about 100 MB at 160,000 rows) go.
        std::fs::remove_dir_all(dir.join(format!("files{files}"))).map_err(|e| e.to_string())?;
        let (rows_per_s, pfs_waits) = (report.rows_per_s, report.pfs_waits);
        summary.push(Seed001Run { files, rows_per_s, pfs_waits, pfs_wait_ms: report.pfs_wait_ms });
    }
    outln!("PFS page latch waits (PAGELATCH_* on page 1 and every 8,088th page) by data files:");
    outln!("DataFiles  RowsPerSec  PfsWaits  PfsWaitsPer1000Rows  PfsWait_ms");
    for run in &summary {
        let Seed001Run { files, rows_per_s, pfs_waits, pfs_wait_ms } = run;
        let per_1000 = run.pfs_waits_per_1000_rows(rows);
        outln!(
            "{files:<9}  {rows_per_s:>10.0}  {pfs_waits:>8}  {per_1000:>19.2}  {pfs_wait_ms:>10.1}"
        );
    }
    Ok(summary)
}

/// One of seed 001's runs: its data files, rows per second and PFS page latch waits.
pub struct Seed001Run {
    pub files: u32,
    pub rows_per_s: f64,
    pub pfs_waits: u64,
    pub pfs_wait_ms: f64,
}

impl Seed001Run {
    pub fn pfs_waits_per_1000_rows(&self, rows: u64) -> f64 {
        self.pfs_waits as f64 * 1000.0 / rows as f64
    }
}

/// Runs a T-SQL script in a session of a server over the benchmark's instance.
fn run_script_on(instance: &Arc<Instance>, script: &std::path::Path) -> Result<(), String> {
    let text = crate::script_file::read_script(script)?;
    let server = tsql::server::Server::attach(instance).map_err(|e| e.to_string())?;
    let mut session = tsql::session::Session::new(&server);
    let ok = tsql::sqlcmd::run_script(&mut session, &text, false, &mut |t| crate::write_stdout(t));
    drop(session);
    server.shutdown().map_err(|e| e.to_string())?;
    if ok { Ok(()) } else { Err(format!("{} raised an error", script.display())) }
}

/// PFS / GAM / SGAM by their positions in the engine's file layout ([`engine::alloc`]), else
/// the page's m_type. (Microsoft's scripts test `page % 8088 = 0` and `page % 511232 = 0`,
/// which also call page 0, the file header, a PFS page.)
fn page_type(db: &Database, page: PageId) -> String {
    let p = page.page_no;
    let interval = alloc::gam_interval_of(p);
    if is_pfs_page(page) {
        return "PFS_PAGE".into();
    }
    if alloc::map_page(interval, MapKind::Gam) == p {
        return "GAM_PAGE".into();
    }
    if alloc::map_page(interval, MapKind::Sgam) == p {
        return "SGAM_PAGE".into();
    }
    match db.page_copy(page).map(|buf| buf[1]) {
        Ok(1) => "DATA_PAGE".into(),
        Ok(2) => "INDEX_PAGE".into(),
        Ok(10) => "IAM_PAGE".into(),
        Ok(other) => format!("TYPE_{other}"),
        Err(_) => "UNKNOWN".into(),
    }
}

fn build_report(
    args: &InsertBench,
    instance: &Instance,
    db: &Database,
    rows: u64,
    seconds: f64,
) -> Report {
    let space = db.file_space();
    let size_pages: u64 = space.iter().map(|f| u64::from(f.size_pages)).sum();
    let used_extents: u64 = space.iter().map(|f| u64::from(f.total_extents - f.free_extents)).sum();
    // The system tasks' idle waits (LAZYWRITER_SLEEP, LOGMGR_QUEUE, CHECKPOINT_QUEUE) are
    // left out, as the seed's top-waits script leaves them out.
    let waits = instance
        .waits
        .snapshot()
        .into_iter()
        .filter(|w| !engine::system_tasks::is_benign(&w.wait_type))
        .map(|w| WaitJson {
            wait_type: w.wait_type,
            waiting_tasks_count: w.waiting_tasks_count,
            wait_time_ms: w.wait_time_ms,
            signal_wait_time_ms: w.signal_wait_time_ms,
        })
        .collect();
    let page_waits = instance.buffer_pool.page_waits();
    let on_pfs = page_waits.iter().filter(|w| is_pfs_page(w.key.page));
    let (pfs_waits, pfs_wait_us) =
        on_pfs.fold((0, 0), |(n, us), w| (n + w.waiting_tasks_count, us + w.wait_time_us));
    let latch_resources = page_waits
        .into_iter()
        .take(10)
        .map(|w| LatchResourceJson {
            resource: w.key.page_resource().description(),
            page_type: page_type(db, w.key.page),
            wait_type: w.wait_type.to_string(),
            waiting_tasks_count: w.waiting_tasks_count,
            wait_time_ms: w.wait_time_us as f64 / 1000.0,
        })
        .collect();
    Report {
        sessions: args.sessions,
        large_pages: !args.no_large_pages,
        lightweight_pooling: args.lightweight_pooling,
        files: args.files,
        key: args.key,
        rows,
        seconds,
        rows_per_s: rows as f64 / seconds,
        cpu_seconds: None,
        cpu_us_per_row: None,
        cpu_busy_percent: None,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        size_on_disk_mb: size_pages as f64 / 128.0,
        used_mb: used_extents as f64 / 16.0,
        waits,
        latch_resources,
        durable: !args.no_log_flush,
        log_size_mb: 0,
        log_end_size_mb: 0.0,
        log_flushes: 0,
        log_mb_flushed: 0.0,
        avg_log_flush_kb: 0.0,
        auto_checkpoints: 0,
        page_writes: 0,
        pfs_waits,
        pfs_wait_ms: pfs_wait_us as f64 / 1000.0,
        schedulers: Vec::new(),
        baseline: None,
        vs_baseline: None,
    }
}

/// A PFS page by its position: page 1 of each file and every 8,088th page after it.
fn is_pfs_page(page: PageId) -> bool {
    alloc::pfs_page_for(page.page_no) == page.page_no
}

/// CPU seconds used against `cpus` CPUs over `seconds` of wall time, in per cent.
fn busy_percent(cpu_seconds: f64, seconds: f64, cpus: usize) -> f64 {
    100.0 * cpu_seconds / (seconds * cpus.max(1) as f64).max(1e-9)
}

/// Paul Randal's top-waits shape: the waits making up 95 % of the wait time.
fn print_report(report: &Report) {
    outln!(
        "bench insert: {} sessions, {} file(s), key {:?}: {} rows in {:.2} s = {:.0} rows/s ({})",
        report.sessions,
        report.files,
        report.key,
        report.rows,
        report.seconds,
        report.rows_per_s,
        if report.durable { "durable commits every 1,000 rows" } else { "delayed durability" }
    );
    if let (Some(cpu_s), Some(per_row), Some(busy)) =
        (report.cpu_seconds, report.cpu_us_per_row, report.cpu_busy_percent)
    {
        let cpus = report.cpus;
        outln!(
            "cpu {cpu_s:.2} s over all threads ({busy:.0} % of {cpus} CPUs), {per_row:.2} us per row"
        );
    }
    if let (Some(baseline), Some(ratio)) = (&report.baseline, report.vs_baseline) {
        outln!(
            "baseline: the same rows into a bare in-memory B-tree, {} thread(s), in this process: \
             {:.0} rows/s before the load, {:.0} after; the load ran at {ratio:.3} of their mean",
            baseline.threads,
            baseline.before_rows_per_s,
            baseline.after_rows_per_s
        );
        if let (Some((a, b)), Some(before), Some(after)) =
            (baseline.cpu_pair, baseline.round_trip_before_ns, baseline.round_trip_after_ns)
        {
            outln!(
                "a cache line between CPUs {a} and {b}: {before:.0} ns a round trip before the \
                 load, {after:.0} after"
            );
        }
    }
    if report.large_pages {
        outln!("buffer pool: -T834, committed at startup in large pages");
    }
    if report.lightweight_pooling {
        outln!("sessions: fibers ('lightweight pooling'), one thread per scheduler");
    }
    for row in &report.schedulers {
        outln!(
            "scheduler {} (CPU {}): {} sessions, {} context switches, {} yields",
            row.scheduler_id,
            row.cpu_id,
            row.sessions,
            row.context_switches_count,
            row.yield_count
        );
    }
    outln!("size on disk {:.1} MB, {:.1} MB used", report.size_on_disk_mb, report.used_mb);
    outln!(
        "log: {} MB at the start, {:.0} MB at the end; {} flushes, {:.1} MB, {:.1} KB per flush",
        report.log_size_mb,
        report.log_end_size_mb,
        report.log_flushes,
        report.log_mb_flushed,
        report.avg_log_flush_kb
    );
    outln!(
        "background: {} automatic checkpoint(s), {} data pages written",
        report.auto_checkpoints,
        report.page_writes
    );
    outln!(
        "PFS pages: {} latch waits ({:.2} per 1,000 rows), {:.1} ms",
        report.pfs_waits,
        report.pfs_waits as f64 * 1000.0 / report.rows.max(1) as f64,
        report.pfs_wait_ms
    );
    let total_ms: u64 = report.waits.iter().map(|w| w.wait_time_ms).sum();
    outln!(
        "\n{:<24} {:>9} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}",
        "WaitType",
        "Wait_S",
        "Resource_S",
        "Signal_S",
        "WaitCount",
        "Percentage",
        "AvgWait_S",
        "AvgRes_S",
        "AvgSig_S"
    );
    let mut waits: Vec<&WaitJson> =
        report.waits.iter().filter(|w| w.waiting_tasks_count > 0).collect();
    waits.sort_by_key(|w| std::cmp::Reverse(w.wait_time_ms));
    let mut cumulative = 0.0;
    for wait in waits {
        if cumulative >= 95.0 {
            break;
        }
        let pct =
            if total_ms == 0 { 100.0 } else { 100.0 * wait.wait_time_ms as f64 / total_ms as f64 };
        cumulative += pct;
        let (wait_s, signal_s) =
            (wait.wait_time_ms as f64 / 1000.0, wait.signal_wait_time_ms as f64 / 1000.0);
        let count = wait.waiting_tasks_count as f64;
        outln!(
            "{:<24} {:>9.2} {:>10.2} {:>9.2} {:>9} {:>10.2} {:>9.4} {:>9.4} {:>9.4}",
            wait.wait_type,
            wait_s,
            wait_s - signal_s,
            signal_s,
            wait.waiting_tasks_count,
            pct,
            wait_s / count,
            (wait_s - signal_s) / count,
            signal_s / count
        );
    }
    outln!(
        "\n{:<16} {:<11} {:<16} {:>10} {:>12}",
        "resource",
        "page_type",
        "wait_type",
        "waits",
        "wait_ms"
    );
    for page in &report.latch_resources {
        outln!(
            "{:<16} {:<11} {:<16} {:>10} {:>12.1}",
            page.resource,
            page.page_type,
            page.wait_type,
            page.waiting_tasks_count,
            page.wait_time_ms
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the script formula `page % 8088 = 0` took page 0, the file header, for a
    /// PFS page; the engine's layout does not.
    #[test]
    fn pfs_pages_are_page_1_and_every_8088th_page() {
        let pfs = |page_no| is_pfs_page(PageId::new(1, page_no));
        assert!(!pfs(0), "the file header");
        assert!(pfs(1) && pfs(8088) && pfs(16_176));
        assert!(!pfs(2) && !pfs(8087) && !pfs(8089));
    }

    #[test]
    fn the_default_log_holds_the_run_twice_and_at_least_64_mb() {
        assert_eq!(default_log_size_mb(1000), 64);
        assert_eq!(default_log_size_mb(400_000), 275, "400,000 rows log about 142 MB");
        assert_eq!(default_log_size_mb(160_000_000), 109_864, "seed 001's 160 million rows");
    }
}
