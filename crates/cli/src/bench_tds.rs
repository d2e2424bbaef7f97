//! `extentdb bench tds`: the TDS server against the embedded T-SQL path, in one process.
//!
//! - Round trips: `SELECT 1` batches per second over 1 and over 16 TDS connections (this
//!   crate's client over 127.0.0.1), against as many embedded sessions running the same batch.
//! - Inserts, seed 001's shape (the goal): 16 connections, each sending one batch
//!   whose server-side WHILE loop inserts its share of `--rows` rows into one clustered table
//!   keyed by NEWID(), committing every 1,000 rows ("with the loop code running server-side
//!   ... in batches of 1000 records per transaction"), against 16 embedded sessions running
//!   the same batch.
//! - Inserts, one round trip per row (the peer harness's shape): the same rows, one INSERT
//!   batch each, `COMMIT TRAN; BEGIN TRAN` every 1,000; bound by loopback round trips, which
//!   the client threads here share the two cores with.
//!
//! The ratio (TDS / embedded) is the figure; the machine is noisy, so both sides run here.

use clap::Args;
use engine::instance::InstanceConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tds::client::Client;
use tsql::server::Server;
use tsql::session::Session;

const PASSWORD: &str = "Bench!Passw0rd";

#[derive(Args)]
pub struct TdsBench {
    /// Seconds per round-trip measurement.
    #[arg(long, default_value_t = 3)]
    seconds: u64,
    /// Rows of the insert load (over 16 connections), per round.
    #[arg(long, default_value_t = 160_000)]
    rows: u64,
    /// Rounds of each insert load; the side that runs first alternates.
    #[arg(long, default_value_t = 3)]
    rounds: u64,
    /// Directory under which the runs' data directories are made (default: the current one).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

/// Something that runs a batch: an embedded session or a TDS connection.
trait Runner: Send {
    fn run(&mut self, sql: &str);
}

impl Runner for Session {
    fn run(&mut self, sql: &str) {
        let mut failed = None;
        self.execute(sql, &mut |o| {
            if let tsql::server::Output::Error { error, .. } = o {
                failed = Some(error);
            }
        });
        assert!(failed.is_none(), "{sql}: {failed:?}");
    }
}

impl Runner for Client {
    fn run(&mut self, sql: &str) {
        let outputs = self.batch(sql).expect("the server answers");
        let failed = outputs.iter().any(|o| matches!(o, tsql::server::Output::Error { .. }));
        assert!(!failed, "{sql}: {outputs:?}");
    }
}

/// Batches per second over `runners` running `sql` in a loop for `seconds`.
fn round_trips(runners: Vec<Box<dyn Runner>>, sql: &'static str, seconds: u64) -> f64 {
    let until = Instant::now() + Duration::from_secs(seconds);
    let threads: Vec<_> = runners
        .into_iter()
        .map(|mut runner| {
            std::thread::spawn(move || {
                let mut count = 0u64;
                while Instant::now() < until {
                    runner.run(sql);
                    count += 1;
                }
                count
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().expect("a runner")).sum();
    total as f64 / seconds as f64
}

/// How the rows of an insert load reach the server.
#[derive(Clone, Copy)]
enum Shape {
    /// One batch per runner, its loop running server-side (seed 001).
    ServerLoop,
    /// One INSERT batch per row.
    RoundTripPerRow,
}

const INSERT_ROW: &str = "INSERT dbo.MyBigTable (c1, c2, c3) VALUES (NEWID(), GETDATE(), 'a')";

/// Seed 001's load for one connection: `rows` inserts in a server-side loop, 1,000 a transaction.
fn server_loop_batch(rows: u64) -> String {
    format!(
        "SET NOCOUNT ON; DECLARE @i int = 0; BEGIN TRAN;
WHILE @i < {rows}
BEGIN
    {INSERT_ROW};
    SET @i += 1;
    IF @i % 1000 = 0 BEGIN COMMIT TRAN; BEGIN TRAN; END
END;
COMMIT TRAN;"
    )
}

/// Seconds for the runners to insert `share` rows each in `shape`, committing every 1,000.
fn inserts(runners: Vec<Box<dyn Runner>>, share: u64, shape: Shape) -> f64 {
    let started = Instant::now();
    let threads: Vec<_> = runners
        .into_iter()
        .map(|mut runner| {
            std::thread::spawn(move || match shape {
                Shape::ServerLoop => runner.run(&server_loop_batch(share)),
                Shape::RoundTripPerRow => {
                    runner.run("BEGIN TRAN");
                    for row in 1..=share {
                        runner.run(INSERT_ROW);
                        if row % 1000 == 0 {
                            runner.run("COMMIT TRAN; BEGIN TRAN");
                        }
                    }
                    runner.run("COMMIT TRAN");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("an inserting runner");
    }
    started.elapsed().as_secs_f64()
}

/// VmRSS of this process, in KB (Linux).
fn resident_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

const RECREATE: &str = "IF OBJECT_ID('dbo.MyBigTable') IS NOT NULL DROP TABLE dbo.MyBigTable; CREATE TABLE dbo.MyBigTable (c1 uniqueidentifier NOT NULL PRIMARY KEY, c2 datetime NOT NULL, c3 char(400) NOT NULL)";

pub fn run(args: &TdsBench) -> Result<(), String> {
    if cfg!(debug_assertions) {
        outln!("(debug build: build with --release for meaningful figures)");
    }
    let base = crate::bench::run_dir(args.dir.as_deref(), "extentdb-bench-tds")?;
    let mut config = tds::server::ServeConfig::new(base.path().join("served"));
    config.port = 0;
    config.sa_password = Some(PASSWORD.into());
    let listener = tds::server::Listener::bind(config)?;
    let address = listener.local_addr().to_string();
    let stop = listener.stop_flag();
    let serving = std::thread::spawn(move || listener.run());
    let embedded = Server::start(InstanceConfig::new(base.path().join("embedded")))
        .map_err(|e| e.to_string())?;
    let connect = || -> Result<Box<dyn Runner>, String> {
        Ok(Box::new(Client::connect(&address, "sa", PASSWORD, "master")?))
    };
    let session = |server: &Arc<Server>| -> Box<dyn Runner> { Box::new(Session::new(server)) };
    outln!("{:<34} {:>14} {:>14} {:>7}", "measurement", "embedded", "TDS", "ratio");
    for connections in [1usize, 16] {
        let local: Vec<Box<dyn Runner>> = (0..connections).map(|_| session(&embedded)).collect();
        let remote: Vec<Box<dyn Runner>> =
            (0..connections).map(|_| connect()).collect::<Result<_, _>>()?;
        let local_rate = round_trips(local, "SELECT 1", args.seconds);
        let remote_rate = round_trips(remote, "SELECT 1", args.seconds);
        outln!(
            "{:<34} {:>12.0}/s {:>12.0}/s {:>6.0}%",
            format!("SELECT 1, {connections} connection(s)"),
            local_rate,
            remote_rate,
            100.0 * remote_rate / local_rate
        );
    }
    let share = (args.rows / 16).max(1);
    for (shape, label) in
        [(Shape::ServerLoop, "server-side loop"), (Shape::RoundTripPerRow, "a round trip a row")]
    {
        // Seconds spent by the embedded sessions and by the TDS connections. Each round
        // loads a fresh table on both sides, and the side that goes first alternates, so
        // neither always runs on the warmer (or busier) machine.
        let mut seconds = [0.0f64; 2];
        for round in 0..args.rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let mut runners: Vec<Box<dyn Runner>> = if side == 0 {
                    (0..16).map(|_| session(&embedded)).collect()
                } else {
                    (0..16).map(|_| connect()).collect::<Result<_, _>>()?
                };
                runners[0].run(RECREATE);
                seconds[side] += inserts(runners, share, shape);
            }
        }
        let rows = (share * 16 * args.rounds) as f64;
        let (local_rate, remote_rate) = (rows / seconds[0], rows / seconds[1]);
        outln!(
            "{:<34} {:>10.0} rows/s {:>7.0} rows/s {:>6.0}%",
            format!("INSERT, 16 conn., {label}"),
            local_rate,
            remote_rate,
            100.0 * remote_rate / local_rate
        );
    }
    // Idle connections: the process's resident memory with 200 more of them open (server
    // thread, session and socket, plus this benchmark's client side of each).
    let before_kb = resident_kb();
    let idle: Vec<Box<dyn Runner>> = (0..200).map(|_| connect()).collect::<Result<_, _>>()?;
    std::thread::sleep(Duration::from_millis(200));
    let after_kb = resident_kb();
    outln!(
        "{:<34} {:>14} {:>12.1} KB per connection (both ends)",
        "200 idle connections",
        "",
        (after_kb.saturating_sub(before_kb)) as f64 / 200.0
    );
    drop(idle);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    serving.join().map_err(|_| "the listener panicked".to_string())??;
    embedded.shutdown().map_err(|e| e.to_string())?;
    Ok(())
}
