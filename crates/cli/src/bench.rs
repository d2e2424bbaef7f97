//! `extentdb bench ...`: the storage benchmarks recorded in docs/benchmarks.md. Each prints a
//! ratio against a baseline measured in the same process, because the machine is noisy. Build
//! with `--release`; a debug build says so and its numbers mean nothing.

use clap::{Args, Subcommand};
use engine::database::{Database, DatabaseSpec, FileChange, FileSpec};
use engine::filegroup::Growth;
use engine::instance::{Instance, InstanceConfig};
use engine::plan::{PlanConfig, PlanFile, simulate};
use engine::units::{PAGES_PER_MB, SizeSpec};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Planner extent allocations per second on one core, against a bare round-robin loop.
    Plan(PlanBench),
    /// In-engine extent allocations per second: 1 and 2 threads on 1, 2 and 4 files.
    Alloc(AllocBench),
    /// Growing a data file with IFI off, against raw sequential writes of the same size.
    Grow(GrowBench),
    /// Seed 001: K sessions inserting into a clustered index over N data files.
    Insert(crate::bench_insert::InsertBench),
    /// Seed 002: 500,000 nchar(2048) rows in one transaction, log growth by 64 MB or 1 GB
    /// under the 2019 and 2022 VLF rules.
    Seed002(crate::bench_seed002::Seed002Bench),
    /// Crash recovery time per GB of log.
    Recovery(crate::bench_recovery::RecoveryBench),
    /// The T-SQL layer against the embedded API: inserts, and COUNT(*) over 1 M rows.
    Tsql(crate::bench_tsql::TsqlBench),
    /// The TDS server against embedded sessions: SELECT 1 round trips, 16-connection inserts.
    Tds(crate::bench_tds::TdsBench),
    /// Seeds 000 and 001: DBCC CHECKDB by DOP, full and WITH PHYSICAL_ONLY.
    Checkdb(crate::bench_checkdb::CheckdbBench),
}

#[derive(Args)]
pub struct PlanBench {
    /// Extent allocations per run.
    #[arg(long, default_value_t = 20_000_000)]
    allocations: u64,
}

#[derive(Args)]
pub struct AllocBench {
    /// Extents each configuration allocates per round (64 KB each, fallocated on disk).
    #[arg(long, default_value_t = 16_384)]
    extents: u32,
    /// Rounds per configuration (the allocation unit is dropped between rounds, untimed).
    #[arg(long, default_value_t = 8)]
    rounds: u32,
    /// Directory for the databases (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(Args)]
pub struct GrowBench {
    /// Growth size in MB.
    #[arg(long, default_value_t = 1024)]
    size_mb: u32,
    /// Alternating rounds of raw write and growth.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Directory for the files (default: a temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// A bench's affinity masks, checked as RECONFIGURE (without OVERRIDE) checks them: a CPU the
/// process cannot use is 5832, a CPU in both masks 5834.
pub fn check_affinity_masks(affinity_mask: i32, affinity_io_mask: i32) -> Result<(), String> {
    let cpus = engine::affinity::process_cpus();
    engine::affinity::check_masks(affinity_mask, affinity_io_mask, cpus, false)
        .map_err(|e| format!("Msg {}, Level {}: {}", e.number, e.severity, e.message))
}

/// A run's temporary data directory, made under `parent` (default: the current directory) and
/// removed when the run ends.
pub fn run_dir(parent: Option<&Path>, prefix: &str) -> Result<tempfile::TempDir, String> {
    let parent = match parent {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            dir.to_path_buf()
        }
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    tempfile::Builder::new().prefix(prefix).tempdir_in(parent).map_err(|e| e.to_string())
}

pub fn run(command: &BenchCommand) -> Result<(), String> {
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run benchmarks with cargo run --release");
    }
    match command {
        BenchCommand::Plan(args) => bench_plan(args),
        BenchCommand::Alloc(args) => bench_alloc(args),
        BenchCommand::Grow(args) => bench_grow(args),
        BenchCommand::Insert(args) => crate::bench_insert::run(args),
        BenchCommand::Seed002(args) => crate::bench_seed002::run(args),
        BenchCommand::Recovery(args) => crate::bench_recovery::run(args),
        BenchCommand::Tsql(args) => crate::bench_tsql::run(args),
        BenchCommand::Tds(args) => crate::bench_tds::run(args),
        BenchCommand::Checkdb(args) => crate::bench_checkdb::run(args),
    }
}

fn rate(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn big_file(name: &str, size_gb: u32) -> PlanFile {
    PlanFile {
        name: name.into(),
        size_pages: size_gb * 1024 * PAGES_PER_MB,
        free_extents: None,
        growth: Growth::None,
        max_size_pages: None,
    }
}

/// The cheapest allocator there is: round robin over free counters, no skip targets.
fn baseline_round_robin(free: &mut [u32], allocations: u64) -> u64 {
    let mut cursor = 0;
    let mut done = 0;
    while done < allocations {
        if free[cursor] > 0 {
            free[cursor] -= 1;
            done += 1;
        }
        cursor = (cursor + 1) % free.len();
        if free.iter().all(|f| *f == 0) {
            break;
        }
    }
    std::hint::black_box(done)
}

fn bench_plan(args: &PlanBench) -> Result<(), String> {
    let shapes = [
        (
            "4 equal files (all skip targets 1, no FGCB_PRP_FILL)",
            vec![big_file("a", 500), big_file("b", 500), big_file("c", 500), big_file("d", 500)],
        ),
        (
            "4 unequal files (skip targets 1-4, FGCB_PRP_FILL taken)",
            vec![big_file("a", 300), big_file("b", 600), big_file("c", 900), big_file("d", 1200)],
        ),
    ];
    let mut free: Vec<u32> = vec![u32::MAX / 2; 4];
    let started = Instant::now();
    let baseline_done = baseline_round_robin(&mut free, args.allocations);
    let baseline = rate(baseline_done, started.elapsed());
    outln!("bench plan: {} extent allocations per run, one thread", args.allocations);
    outln!("  baseline round-robin loop: {:>14.0} allocations/s", baseline);
    let mut equal_rate: Option<f64> = None;
    for (label, files) in shapes {
        let config = PlanConfig {
            database: "bench".into(),
            files,
            allocations: args.allocations,
            e_option: false,
            autogrow_all_files: false,
        };
        let started = Instant::now();
        let report = simulate(&config, false);
        let elapsed = started.elapsed();
        let per_s = rate(report.allocated, elapsed);
        let versus_equal = per_s / *equal_rate.get_or_insert(per_s);
        outln!(
            "  {label}: {per_s:>12.0} allocations/s  ({:.3}x baseline, {versus_equal:.2}x equal files, {} recalculations)",
            per_s / baseline,
            report.recalculations.len()
        );
    }
    Ok(())
}

struct BenchDir {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

fn bench_dir(dir: &Option<PathBuf>) -> Result<BenchDir, String> {
    match dir {
        Some(path) => {
            std::fs::create_dir_all(path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(BenchDir { path: path.clone(), _temp: None })
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("extentdb-bench")
                .tempdir_in(std::env::current_dir().map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            Ok(BenchDir { path: temp.path().to_path_buf(), _temp: Some(temp) })
        }
    }
}

/// A database with `files` data files sized to hold `extents` extents between them.
fn alloc_database(
    instance: &Arc<Instance>,
    name: &str,
    files: u32,
    extents: u32,
) -> Result<Database, String> {
    let per_file_mb = (extents / files) / 16 + 2;
    let mut primary = vec![
        FileSpec::new(&format!("{name}_1"), format!("{name}_1.mdf"))
            .size(SizeSpec::Kb(u64::from(per_file_mb) * 1024)),
    ];
    for n in 2..=files {
        primary.push(
            FileSpec::new(&format!("{name}_{n}"), format!("{name}_{n}.ndf"))
                .size(SizeSpec::Kb(u64::from(per_file_mb) * 1024)),
        );
    }
    let spec = DatabaseSpec {
        name: name.into(),
        primary,
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new(&format!("{name}_log"), format!("{name}_log.ldf"))
                .size(SizeSpec::Kb(1024)),
        ],
        mixed_page_allocation: false,
    };
    Database::create(instance, &spec).map_err(|e| e.to_string())
}

fn bench_alloc(args: &AllocBench) -> Result<(), String> {
    let dir = bench_dir(&args.dir)?;
    let instance = Instance::start(InstanceConfig::new(&dir.path)).map_err(|e| e.to_string())?;
    outln!(
        "bench alloc: {} extents x {} rounds per configuration, IFI on, in {}",
        args.extents,
        args.rounds,
        dir.path.display()
    );
    let mut reference = None;
    for threads in [1u32, 2] {
        for files in [1u32, 2, 4] {
            let name = format!("alloc_t{threads}_f{files}");
            let db = Arc::new(alloc_database(&instance, &name, files, args.extents)?);
            instance.waits.clear();
            let mut total = Duration::ZERO;
            for round in 0..args.rounds {
                eprint!("\r  {name}: round {}/{}", round + 1, args.rounds);
                total += alloc_round(&db, threads, args.extents)?;
            }
            eprint!("\r");
            let per_s = rate(u64::from(args.extents) * u64::from(args.rounds), total);
            let base = *reference.get_or_insert(per_s);
            let latch_waits: Vec<String> = instance
                .waits
                .snapshot()
                .into_iter()
                .filter(|w| w.wait_type.starts_with("PAGELATCH"))
                .map(|w| {
                    format!("{} {} waits {} ms", w.wait_type, w.waiting_tasks_count, w.wait_time_ms)
                })
                .collect();
            let latch_waits = if latch_waits.is_empty() {
                "no latch waits".to_string()
            } else {
                latch_waits.join(", ")
            };
            outln!(
                "  {threads} thread(s), {files} file(s): {per_s:>12.0} extents/s  ({:.2}x 1 thread on 1 file; {latch_waits})",
                per_s / base
            );
            let db = Arc::try_unwrap(db).map_err(|_| "database still shared".to_string())?;
            db.close().map_err(|e| e.to_string())?;
            remove_files(&dir.path, &name);
        }
    }
    Ok(())
}

/// One timed round: `threads` threads allocate `extents` extents between them, each to its own
/// allocation unit; the units are dropped afterwards (not timed).
fn alloc_round(db: &Arc<Database>, threads: u32, extents: u32) -> Result<Duration, String> {
    let units: Vec<u64> = (0..threads)
        .map(|t| db.create_allocation_unit(&format!("t{t}"), None))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let handles: Vec<_> = units
        .iter()
        .map(|unit| {
            let (db, unit) = (db.clone(), *unit);
            std::thread::spawn(move || -> Result<(), String> {
                for _ in 0..extents / threads {
                    db.allocate_extent(unit).map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for handle in handles {
        handle.join().map_err(|_| "an allocating thread panicked".to_string())??;
    }
    let elapsed = started.elapsed();
    for unit in units {
        db.drop_allocation_unit(unit).map_err(|e| e.to_string())?;
    }
    Ok(elapsed)
}

fn remove_files(dir: &Path, prefix: &str) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Writes `size_mb` MB of zeros sequentially in 1 MB writes and fdatasyncs: the raw bandwidth.
fn raw_write(path: &Path, size_mb: u32) -> Result<Duration, String> {
    let chunk = vec![0u8; 1 << 20];
    let started = Instant::now();
    let mut file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    for _ in 0..size_mb {
        file.write_all(&chunk).map_err(|e| e.to_string())?;
    }
    file.sync_data().map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    drop(file);
    std::fs::remove_file(path).map_err(|e| e.to_string())?;
    Ok(elapsed)
}

fn bench_grow(args: &GrowBench) -> Result<(), String> {
    let dir = bench_dir(&args.dir)?;
    let mut config = InstanceConfig::new(&dir.path);
    config.ifi_enabled = false;
    let instance = Instance::start(config).map_err(|e| e.to_string())?;
    outln!(
        "bench grow: +{} MB with IFI off, against raw sequential writes, in {}",
        args.size_mb,
        dir.path.display()
    );
    // One untimed write first: the first large write to a fresh file system area is slower.
    eprint!("\r  warm-up write");
    raw_write(&dir.path.join("warmup.bin"), args.size_mb)?;
    let mut best_raw = Duration::MAX;
    let mut best_grow = Duration::MAX;
    for round in 0..args.rounds {
        eprint!("\r  round {}/{}", round + 1, args.rounds);
        let raw = raw_write(&dir.path.join("raw.bin"), args.size_mb)?;
        let name = format!("grow{round}");
        let db = Database::create(&instance, &DatabaseSpec::simple(&name, SizeSpec::Kb(8 * 1024)))
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        db.modify_file(
            &format!("{name}_data"),
            FileChange::Size(SizeSpec::Kb(u64::from(8 + args.size_mb) * 1024)),
        )
        .map_err(|e| e.to_string())?;
        let grow = started.elapsed();
        db.close().map_err(|e| e.to_string())?;
        remove_files(&dir.path, &name);
        eprint!("\r");
        outln!(
            "  round {}: raw write {:>7.3} s ({:.0} MB/s), growth {:>7.3} s ({:.0} MB/s), ratio {:.2}",
            round + 1,
            raw.as_secs_f64(),
            f64::from(args.size_mb) / raw.as_secs_f64(),
            grow.as_secs_f64(),
            f64::from(args.size_mb) / grow.as_secs_f64(),
            raw.as_secs_f64() / grow.as_secs_f64()
        );
        best_raw = best_raw.min(raw);
        best_grow = best_grow.min(grow);
    }
    let waited = instance
        .waits
        .get(engine::waits::wait_type::PREEMPTIVE_OS_WRITEFILEGATHER)
        .map_or(0, |w| w.wait_time_ms);
    outln!(
        "  best of {}: growth bandwidth / raw bandwidth = {:.2} (PREEMPTIVE_OS_WRITEFILEGATHER {} ms in all)",
        args.rounds,
        best_raw.as_secs_f64() / best_grow.as_secs_f64(),
        waited
    );
    Ok(())
}
