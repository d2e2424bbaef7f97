//! `extentdb bench tsql`: the T-SQL layer's cost against the embedded API, in one process.
//!
//! - Inserts: seed 001's row `(c1 uniqueidentifier PRIMARY KEY, c2 datetime, c3 char(111))`,
//!   1,000 rows per transaction with a durable commit, once through the engine's API
//!   (`Table::insert`) and once as T-SQL, one `INSERT ... VALUES (NEWID(), GETDATE(), 'a')`
//!   batch per row, as a client sends them. Rounds alternate API and T-SQL; the best round of
//!   each is compared (goal: T-SQL >= 50 % of the API's rows/s).
//! - Counting: `SELECT COUNT(*)` over a table of `--count-rows` rows, warm, against the API's
//!   own count and its decoding scan (goal: >= 10 million rows/s).
//!
//! The front end's own cost (parsing) is measured by criterion:
//! `cargo bench -p extentdb-tsql --bench frontend`.

use clap::Args;
use engine::instance::InstanceConfig;
use engine::record::Value;
use engine::rng::SplitMix64;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;
use tsql::server::{Output, Server};
use tsql::session::Session;

const BATCH_ROWS: u64 = 1000;

#[derive(Args)]
pub struct TsqlBench {
    /// Rows per insert round.
    #[arg(long, default_value_t = 50_000)]
    rows: u64,
    /// Insert rounds of each kind (API and T-SQL alternate).
    #[arg(long, default_value_t = 2)]
    rounds: u32,
    /// Rows in the table COUNT(*) reads.
    #[arg(long, default_value_t = 1_000_000)]
    count_rows: u64,
    /// 'max server memory (MB)': room for the counted table, so the count is warm.
    #[arg(long, default_value_t = 2048)]
    max_server_memory_mb: u32,
    /// Directory under which the run's data directory is made (default: the current one).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

pub(crate) fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if std::io::stderr().is_terminal() {
        let template = format!("{what} {{bar:40}} {{pos}}/{{len}} rows {{per_sec}}");
        bar.set_style(
            ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

/// Runs a batch; an error is the benchmark's error.
pub(crate) fn execute(session: &mut Session, sql: &str) -> Result<Vec<Vec<Value>>, String> {
    let mut rows = Vec::new();
    let mut error = None;
    session.execute(sql, &mut |output| match output {
        Output::Rows(set) => rows = set.rows,
        Output::Error { error: e, .. } => error = Some(format!("{}: {}", e.number, e.message)),
        _ => {}
    });
    match error {
        Some(e) => Err(format!("{sql}: {e}")),
        None => Ok(rows),
    }
}

struct Setup {
    server: Arc<Server>,
    session: Session,
    _dir: tempfile::TempDir,
}

fn setup(args: &TsqlBench) -> Result<Setup, String> {
    let dir = crate::bench::run_dir(args.dir.as_deref(), "extentdb-bench-tsql")?;
    let mut config = InstanceConfig::new(dir.path());
    config.max_server_memory_mb = Some(args.max_server_memory_mb);
    let server = Server::start(config).map_err(|e| e.to_string())?;
    let mut session = Session::new(&server);
    execute(
        &mut session,
        "CREATE DATABASE bench ON (NAME = bench, FILENAME = 'bench.mdf', SIZE = 1024MB, FILEGROWTH = 512MB) \
         LOG ON (NAME = bench_log, FILENAME = 'bench_log.ldf', SIZE = 1024MB, FILEGROWTH = 1024MB)",
    )?;
    execute(&mut session, "USE bench")?;
    execute(&mut session, "SET NOCOUNT ON")?;
    for table in ["api_rows", "tsql_rows"] {
        execute(
            &mut session,
            &format!(
                "CREATE TABLE {table} (c1 UNIQUEIDENTIFIER PRIMARY KEY, c2 DATETIME, c3 CHAR(111))"
            ),
        )?;
    }
    execute(&mut session, "CREATE TABLE counted (id INT PRIMARY KEY, c2 DATETIME, c3 CHAR(111))")?;
    Ok(Setup { server, session, _dir: dir })
}

/// One API round: `rows` rows through `Table::insert`, 1,000 per durable transaction.
fn api_round(setup: &Setup, rows: u64, seed: u64) -> Result<f64, String> {
    let db = setup.server.database("bench").ok_or("no bench database")?;
    let table = db.catalog().map_err(|e| e.to_string())?.table("api_rows").ok_or("no table")?;
    let session = engine::session::Session::open(&setup.server.instance);
    session.enter();
    let mut rng = SplitMix64::new(seed);
    let bar = progress(rows, "API insert");
    let started = Instant::now();
    db.begin_tran().map_err(|e| e.to_string())?;
    for row in 0..rows {
        let values = [
            Value::Guid(rng.guid()),
            Value::DateTime(45_000, (row % 25_920_000) as u32),
            Value::Text(format!("{:<111}", "a")),
        ];
        table.insert(&db, &values).map_err(|e| e.to_string())?;
        if (row + 1) % BATCH_ROWS == 0 || row + 1 == rows {
            db.commit_tran().map_err(|e| e.to_string())?;
            bar.inc(BATCH_ROWS.min(row + 1));
            if row + 1 < rows {
                db.begin_tran().map_err(|e| e.to_string())?;
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(rows as f64 / seconds)
}

/// One T-SQL round: one INSERT batch per row, BEGIN/COMMIT TRAN around every 1,000.
fn tsql_round(setup: &mut Setup, rows: u64) -> Result<f64, String> {
    let bar = progress(rows, "T-SQL insert");
    let insert = "INSERT INTO tsql_rows (c1, c2, c3) VALUES (NEWID(), GETDATE(), 'a')";
    let started = Instant::now();
    execute(&mut setup.session, "BEGIN TRAN")?;
    for row in 0..rows {
        execute(&mut setup.session, insert)?;
        if (row + 1) % BATCH_ROWS == 0 || row + 1 == rows {
            execute(&mut setup.session, "COMMIT TRAN")?;
            bar.inc(BATCH_ROWS.min(row + 1));
            if row + 1 < rows {
                execute(&mut setup.session, "BEGIN TRAN")?;
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(rows as f64 / seconds)
}

/// Fills `counted` through the API (delayed durability: the fill is not what is measured).
fn fill_counted(setup: &Setup, rows: u64) -> Result<(), String> {
    let db = setup.server.database("bench").ok_or("no bench database")?;
    let table = db.catalog().map_err(|e| e.to_string())?.table("counted").ok_or("no table")?;
    let session = engine::session::Session::open(&setup.server.instance);
    session.enter();
    db.set_delayed_durability(true);
    let bar = progress(rows, "filling");
    db.begin_tran().map_err(|e| e.to_string())?;
    for row in 0..rows {
        let values = [
            Value::Int(row as i32),
            Value::DateTime(45_000, 0),
            Value::Text(format!("{:<111}", "b")),
        ];
        table.insert(&db, &values).map_err(|e| e.to_string())?;
        if (row + 1) % 10_000 == 0 {
            db.commit_tran().map_err(|e| e.to_string())?;
            db.begin_tran().map_err(|e| e.to_string())?;
            bar.inc(10_000);
        }
    }
    db.commit_tran().map_err(|e| e.to_string())?;
    db.set_delayed_durability(false);
    bar.finish_and_clear();
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// (T-SQL COUNT(*) rows/s, API count rows/s, API decoding scan rows/s), warm, median of 5.
fn count_rates(setup: &mut Setup, rows: u64) -> Result<(f64, f64, f64), String> {
    let db = setup.server.database("bench").ok_or("no bench database")?;
    let table = db.catalog().map_err(|e| e.to_string())?.table("counted").ok_or("no table")?;
    execute(&mut setup.session, "SELECT COUNT(*) FROM counted")?; // warm the pages
    let mut tsql = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let result = execute(&mut setup.session, "SELECT COUNT(*) FROM counted")?;
        tsql.push(rows as f64 / started.elapsed().as_secs_f64());
        if result.first().and_then(|r| r.first()) != Some(&Value::Int(rows as i32)) {
            return Err(format!("COUNT(*) returned {result:?}, expected {rows}"));
        }
    }
    let session = engine::session::Session::open(&setup.server.instance);
    session.enter();
    let mut api = Vec::new();
    for _ in 0..5 {
        db.begin_tran().map_err(|e| e.to_string())?;
        let started = Instant::now();
        let counted = table.count_rows(&db).map_err(|e| e.to_string())?;
        api.push(counted as f64 / started.elapsed().as_secs_f64());
        db.commit_tran().map_err(|e| e.to_string())?;
    }
    let started = Instant::now();
    let scanned = table.rows(&db).map_err(|e| e.to_string())?.len();
    let scan = scanned as f64 / started.elapsed().as_secs_f64();
    Ok((median(tsql), median(api), scan))
}

pub fn run(args: &TsqlBench) -> Result<(), String> {
    if args.rows == 0 || args.rounds == 0 || args.count_rows == 0 {
        return Err("--rows, --rounds and --count-rows must be at least 1".into());
    }
    let mut setup = setup(args)?;
    let (mut api_best, mut tsql_best) = (0.0f64, 0.0f64);
    outln!("insert rounds ({} rows each, 1,000 per durable transaction):", args.rows);
    for round in 0..args.rounds {
        let api = api_round(&setup, args.rows, u64::from(round) + 1)?;
        let tsql = tsql_round(&mut setup, args.rows)?;
        outln!(
            "  round {}: API {:.0} rows/s, T-SQL {:.0} rows/s, ratio {:.2}",
            round + 1,
            api,
            tsql,
            tsql / api
        );
        api_best = api_best.max(api);
        tsql_best = tsql_best.max(tsql);
    }
    outln!(
        "best: API {:.0} rows/s, T-SQL {:.0} rows/s: T-SQL reaches {:.0} % of the API (goal >= 50 %)",
        api_best,
        tsql_best,
        100.0 * tsql_best / api_best
    );
    fill_counted(&setup, args.count_rows)?;
    let (tsql, api, scan) = count_rates(&mut setup, args.count_rows)?;
    outln!("\nSELECT COUNT(*) over {} rows, warm (median of 5):", args.count_rows);
    outln!("  T-SQL COUNT(*)        {:>14.0} rows/s (goal >= 10,000,000)", tsql);
    outln!("  API Table::count_rows {:>14.0} rows/s (T-SQL / API {:.2})", api, tsql / api);
    outln!("  API decoding scan     {:>14.0} rows/s (count / scan {:.1}x)", scan, api / scan);
    setup.server.shutdown().map_err(|e| e.to_string())?;
    Ok(())
}
