//! `extentdb bench recovery`: crash recovery time per GB of log. Committed transactions write
//! about `--log-mb` MB of log (nchar(2048) rows, no checkpoint in between); the process then
//! drops the database without writing a page (a crash), and the database is opened again:
//! analysis, redo of every page change, undo of nothing. Reported per GB of log, and against
//! the time the same run took to do the work the first time (the load that wrote the log).

use clap::Args;
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::instance::{Instance, InstanceConfig};
use engine::record::{Column, SqlType, Value};
use engine::units::SizeSpec;
use std::time::Instant;

#[derive(Args)]
pub struct RecoveryBench {
    /// Log to write before the crash, in MB (under the 256 MB automatic checkpoint).
    #[arg(long, default_value_t = 200)]
    log_mb: u64,
    /// Directory under which the run's data directory is made (default: the current one).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

pub fn run(args: &RecoveryBench) -> Result<(), String> {
    let temp = crate::bench::run_dir(args.dir.as_deref(), "extentdb-recovery")?;
    let instance = Instance::start(InstanceConfig::new(temp.path())).map_err(|e| e.to_string())?;
    let spec = DatabaseSpec {
        name: "Recover".into(),
        primary: vec![
            FileSpec::new("recover_data", "recover.mdf")
                .size(SizeSpec::Kb(args.log_mb * 1024 + 64 * 1024)),
        ],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("recover_log", "recover.ldf")
                .size(SizeSpec::Kb(args.log_mb * 2 * 1024 + 64 * 1024)),
        ],
        mixed_page_allocation: false,
    };
    let db = Database::create(&instance, &spec).map_err(|e| e.to_string())?;
    let columns = vec![
        Column::new("ID", SqlType::Int, false),
        Column::new("name", SqlType::NChar(2048), false),
    ];
    let tree = BTree::create(&db, "dbo.t", "PK_t", columns, vec![0], true, None)
        .map_err(|e| e.to_string())?;
    let target = args.log_mb * 1024 * 1024;
    let start_bytes = db.log().stats().bytes_flushed;
    let bar = indicatif::ProgressBar::new(args.log_mb);
    let load_started = Instant::now();
    let mut id = 0;
    while db.log().stats().bytes_flushed - start_bytes < target {
        db.begin_tran().map_err(|e| e.to_string())?;
        for _ in 0..100 {
            id += 1;
            tree.insert(&db, &[Value::Int(id), Value::Text("x".into())])
                .map_err(|e| e.to_string())?;
        }
        db.commit_tran().map_err(|e| e.to_string())?;
        bar.set_position((db.log().stats().bytes_flushed - start_bytes) >> 20);
    }
    let load_s = load_started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let logged = db.log().stats().bytes_flushed - start_bytes;
    let checkpoints = db.auto_checkpoints();
    db.crash();
    let instance = Instance::start(InstanceConfig::new(temp.path())).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let db =
        Database::open(&instance, &temp.path().join("recover.mdf")).map_err(|e| e.to_string())?;
    let recovery_s = started.elapsed().as_secs_f64();
    let rows =
        BTree::from_descriptor(tree.au_id, &db.unit_descriptor(tree.au_id).unwrap_or_default())
            .ok_or("descriptor")?
            .check(&db)?;
    db.close().map_err(|e| e.to_string())?;
    let gb = logged as f64 / (1u64 << 30) as f64;
    outln!(
        "bench recovery: {:.0} MB of log ({rows} rows, {checkpoints} automatic checkpoints), \
         recovery {recovery_s:.2} s = {:.1} s per GB of log; the load that wrote it took \
         {load_s:.2} s (recovery / load = {:.2})",
        logged as f64 / 1048576.0,
        recovery_s / gb,
        recovery_s / load_s.max(1e-9)
    );
    Ok(())
}
