//! `extentdb bench checkdb`: seeds 000 and 001's DBCC CHECKDB experiment on one machine. A
//! database with a clustered table, its nonclustered index and a heap (`--rows` rows each) is
//! checked by `DBCC CHECKDB WITH NO_INFOMSGS, MAXDOP = n`, full and WITH PHYSICAL_ONLY, at
//! each DOP from 1 to the CPU count, warm (the pool holds the database). It prints the seed's
//! table: configuration, DOP, seconds, MB checked per second, and the speed-up against DOP 1
//! of the same configuration, measured in the same process (the baseline). Runs alternate
//! between configurations and the best of `--runs` is kept, as the machine is noisy.

use crate::bench_tsql::execute;
use clap::Args;
use engine::instance::InstanceConfig;
use engine::record::Value;
use engine::rng::SplitMix64;
use std::time::Instant;
use tsql::server::Server;
use tsql::session::Session;

#[derive(Args)]
pub struct CheckdbBench {
    /// Rows in each of the two tables (1,000,000: about 390 MB in all).
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Runs of each configuration; the best is kept.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// 'max server memory (MB)': room for the whole database, so every check is warm.
    #[arg(long, default_value_t = 2048)]
    max_server_memory_mb: u32,
    /// Directory under which the run's data directory is made (default: the current one).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

/// Loads `rows` rows into each table through the engine's API, 10,000 per transaction.
fn load(server: &Server, rows: u64) -> Result<(), String> {
    let db = server.database("checked").ok_or("no database")?;
    let catalog = db.catalog().map_err(|e| e.to_string())?;
    let orders = catalog.table("orders").ok_or("no orders")?;
    let events = catalog.table("events").ok_or("no events")?;
    let session = engine::session::Session::open(&server.instance);
    session.enter();
    let mut rng = SplitMix64::new(0x00C4_ECDB);
    let note = Value::Text(format!("{:<150}", "note"));
    let bar = crate::bench_tsql::progress(rows, "loading");
    db.begin_tran().map_err(|e| e.to_string())?;
    for row in 0..rows {
        let id = Value::Int(row as i32);
        orders
            .insert(&db, &[id.clone(), Value::Guid(rng.guid()), note.clone()])
            .map_err(|e| e.to_string())?;
        events.insert(&db, &[id, note.clone()]).map_err(|e| e.to_string())?;
        if (row + 1) % 10_000 == 0 {
            db.commit_tran().map_err(|e| e.to_string())?;
            db.begin_tran().map_err(|e| e.to_string())?;
            bar.inc(10_000);
        }
    }
    db.commit_tran().map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(())
}

pub fn run(args: &CheckdbBench) -> Result<(), String> {
    let dir = crate::bench::run_dir(args.dir.as_deref(), "extentdb-bench-checkdb")?;
    let mut config = InstanceConfig::new(dir.path());
    config.max_server_memory_mb = Some(args.max_server_memory_mb);
    let server = Server::start(config).map_err(|e| e.to_string())?;
    let mut session = Session::new(&server);
    execute(
        &mut session,
        "CREATE DATABASE checked ON (NAME = checked, FILENAME = 'checked.mdf', SIZE = 512MB, FILEGROWTH = 256MB) \
         LOG ON (NAME = checked_log, FILENAME = 'checked_log.ldf', SIZE = 512MB, FILEGROWTH = 512MB)",
    )?;
    execute(&mut session, "USE checked SET NOCOUNT ON")?;
    execute(
        &mut session,
        "CREATE TABLE orders (id INT PRIMARY KEY, customer UNIQUEIDENTIFIER, note CHAR(150)) \
         CREATE INDEX ix_customer ON orders (customer) \
         CREATE TABLE events (id INT, note CHAR(150))",
    )?;
    load(&server, args.rows)?;
    execute(&mut session, "CHECKPOINT")?;
    let used = execute(&mut session, "SELECT SUM(used_pages) FROM sys.allocation_units")?;
    let used_mb = used
        .first()
        .and_then(|r| r.first())
        .and_then(tsql::value::as_i64)
        .map_or(0.0, |pages| pages as f64 * 8.0 / 1024.0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let configurations = ["full", "PHYSICAL_ONLY"];
    // best[configuration][dop - 1], seconds.
    let mut best = vec![vec![f64::INFINITY; cpus]; configurations.len()];
    // Warm the pool, and check that the database is sound before timing anything.
    execute(&mut session, "DBCC CHECKDB (checked) WITH NO_INFOMSGS")?;
    for _ in 0..args.runs {
        for (c, configuration) in configurations.iter().enumerate() {
            for dop in 1..=cpus {
                let physical = if c == 1 { ", PHYSICAL_ONLY" } else { "" };
                let sql =
                    format!("DBCC CHECKDB (checked) WITH NO_INFOMSGS, MAXDOP = {dop}{physical}");
                let started = Instant::now();
                execute(&mut session, &sql).map_err(|e| format!("{configuration}: {e}"))?;
                let seconds = started.elapsed().as_secs_f64();
                best[c][dop - 1] = best[c][dop - 1].min(seconds);
            }
        }
    }
    println!(
        "DBCC CHECKDB of {used_mb:.0} MB ({} rows in a clustered table with a nonclustered index, {} in a heap), warm, best of {}:",
        args.rows, args.rows, args.runs
    );
    println!("| configuration | DOP | seconds | MB/s | vs DOP 1 |");
    println!("|---|---|---|---|---|");
    for (c, configuration) in configurations.iter().enumerate() {
        for dop in 1..=cpus {
            let seconds = best[c][dop - 1];
            println!(
                "| {configuration} | {dop} | {seconds:.3} | {:.0} | {:.2} |",
                used_mb / seconds,
                best[c][0] / seconds
            );
        }
    }
    println!("PHYSICAL_ONLY vs full at DOP 1: {:.2}x as fast", best[0][0] / best[1][0]);
    server.shutdown().map_err(|e| e.to_string())?;
    Ok(())
}
