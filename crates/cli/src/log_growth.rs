//! `extentdb log`: seed 002's log-growth experiment on the log alone. A real database is
//! created in a temporary directory with the given log size and FILEGROWTH; log records are
//! appended and flushed until the log has grown to the target size, by real autogrowths (zeroed,
//! or IFI for 2022-rule growths of 64 MB or less). It prints what seed 002 tabulates: duration,
//! PREEMPTIVE_OS_WRITEFILEGATHER time, growth events (EventClass 93), VLF count, average VLF
//! size and final log size, and DBCC LOGINFO's rows with `--vlfs`.

use clap::Args;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::instance::{Instance, InstanceConfig};
use engine::log::record::{Context, LogRecord, Operation};
use engine::log::vlf::VlfRule;
use engine::units::SizeSpec;
use std::time::Instant;

#[derive(Args)]
pub struct LogArgs {
    /// VLF rule: 2019 or 2022.
    #[arg(long, default_value = "2022")]
    rule: String,
    /// Initial log size (SQL Server units: 32MB, 1GB).
    #[arg(long, default_value = "32MB")]
    size: String,
    /// Log FILEGROWTH.
    #[arg(long, default_value = "64MB")]
    growth: String,
    /// Stop once the log file has reached this size.
    #[arg(long, default_value = "512MB")]
    grow_to: String,
    /// Print DBCC LOGINFO's rows.
    #[arg(long)]
    vlfs: bool,
}

fn parse(text: &str, what: &str) -> Result<SizeSpec, String> {
    SizeSpec::parse(text).ok_or_else(|| format!("{what}: '{text}' is not a size such as 64MB"))
}

pub fn run(args: &LogArgs) -> Result<(), String> {
    let rule = VlfRule::parse(&args.rule).ok_or("--rule must be 2019 or 2022")?;
    let target_kb = match parse(&args.grow_to, "--grow-to")? {
        SizeSpec::Kb(kb) => kb,
        SizeSpec::Percent(_) => return Err("--grow-to must be a size".into()),
    };
    let temp = tempfile::Builder::new()
        .prefix("extentdb-log")
        .tempdir_in(std::env::current_dir().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let mut config = InstanceConfig::new(temp.path());
    config.vlf_rule = rule;
    let instance = Instance::start(config).map_err(|e| e.to_string())?;
    let spec = DatabaseSpec {
        name: format!("ifi_{}", rule.name()),
        primary: vec![FileSpec::new("ifi_data", "ifi.mdf").size(SizeSpec::Kb(3 * 1024))],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("ifi_log", "ifi.ldf")
                .size(parse(&args.size, "--size")?)
                .growth(parse(&args.growth, "--growth")?),
        ],
        mixed_page_allocation: false,
    };
    let db = Database::create(&instance, &spec).map_err(|e| e.to_string())?;
    instance.waits.clear();
    let bar = indicatif::ProgressBar::new(target_kb / 1024);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} MB of log ({elapsed})")
            .map_err(|e| e.to_string())?,
    );
    let started = Instant::now();
    let filler = LogRecord::new(Operation::InsertRows, Context::Clustered, 1, vec![0x78; 8000]);
    let mut appended = 0u64;
    loop {
        let size_kb: u64 = db.log().files().iter().map(|f| u64::from(f.2) * 8).sum();
        bar.set_position(appended / (1024 * 1024));
        if size_kb >= target_kb {
            break;
        }
        let lsn = db.log().append(&filler).map_err(|e| e.to_string())?;
        appended += filler.encoded_len() as u64;
        if appended % (1024 * 1024) < filler.encoded_len() as u64 {
            db.log().flush_to(lsn).map_err(|e| e.to_string())?;
        }
    }
    db.log().flush_all().map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    print_summary(&instance, &db, rule, seconds);
    if args.vlfs {
        print_vlfs(&db);
    }
    db.close().map_err(|e| e.to_string())
}

fn print_summary(instance: &Instance, db: &Database, rule: VlfRule, seconds: f64) {
    let zeroing = instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER");
    let growths = db.log().growths();
    let info = db.log().log_info();
    let size_mb: f64 = db.log().files().iter().map(|f| f64::from(f.2) / 128.0).sum();
    let average_mb = info.iter().map(|r| r.vlf_size_mb).sum::<f64>() / info.len().max(1) as f64;
    outln!("rule                         {}", rule.name());
    outln!("duration_s                   {seconds:.2}");
    outln!("writefilegather_ms           {}", zeroing.map_or(0, |w| w.wait_time_ms));
    outln!("growth_events (class 93)     {}", growths.iter().filter(|g| g.is_automatic).count());
    outln!("zeroed_growths               {}", growths.iter().filter(|g| g.zeroed).count());
    outln!("vlf_count                    {}", info.len());
    outln!("avg_vlf_size_mb              {average_mb:.2}");
    outln!("final_log_size_mb            {size_mb:.0}");
}

fn print_vlfs(db: &Database) {
    outln!();
    outln!("RecoveryUnitId FileId FileSize   StartOffset FSeqNo Status Parity CreateLSN");
    for row in db.log().dbcc_loginfo() {
        outln!(
            "{:<14} {:<6} {:<10} {:<11} {:<6} {:<6} {:<6} {}",
            row.recovery_unit_id,
            row.file_id,
            row.file_size,
            row.start_offset,
            row.fseqno,
            row.status,
            row.parity,
            row.create_lsn
        );
    }
}
