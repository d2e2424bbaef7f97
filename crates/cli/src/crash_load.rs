//! `extentdb crash-load`: the child process of the SIGKILL crash tests (crates/cli/tests/crash.rs)
//! and of `extentdb soak`. It creates a database in `--dir`, prints `ready <au_id>`, then runs
//! `--threads` sessions that each commit transactions one after another, printing
//! `ack <thread> <seq>` once each commit has returned (so the log holds it durably), until it is
//! killed.
//!
//! Transaction `seq` of thread `t` (the "load"):
//! - inserts rows `key(t, seq, j)` for j in 0..10, with value `seq`;
//! - from seq 3 on, deletes `key(t, seq - 3, j)` for j in 0..3;
//! - from seq 1 on, updates `key(t, seq - 1, 9)` to value `-seq` (a delete and an insert of the
//!   same key, as an update that moves a row does);
//! - in the heap dbo.Journal: inserts `(key(t, seq, 0), seq)`, updates the previous
//!   transaction's journal row to `-seq`, and from seq 4 on deletes the journal row of seq - 4.
//!
//! The test computes the expected table from the acknowledged sequence numbers with the same
//! rules (its `expected_rows`; keep both in step).
//!
//! With `--lightweight-pooling` the sessions run as fibers ([`engine::fiber::run`]: fiber
//! mode, each scheduler's sessions on one thread), so that a kill also lands where a fiber is
//! parked on a latch, a lock or its commit's log flush (WRITELOG), which the log writer then
//! writes for it.

use clap::Args;
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::heap::{Heap, Rid};
use engine::instance::{Instance, InstanceConfig};
use engine::record::{Column, SqlType, Value};
use engine::units::SizeSpec;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub struct CrashLoadArgs {
    /// Directory for a new database (created).
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, default_value_t = 4)]
    threads: u32,
    /// Stop after this many transactions per thread (0: run until killed).
    #[arg(long, default_value_t = 0)]
    transactions: u64,
    /// Buffer pool size: small, so that the lazy writer writes uncommitted pages.
    #[arg(long, default_value_t = 1)]
    max_server_memory_mb: u32,
    /// 'lightweight pooling': the sessions run as fibers (fiber mode), not threads.
    #[arg(long)]
    lightweight_pooling: bool,
}

pub fn key(thread: u32, seq: u64, j: u64) -> i64 {
    i64::from(thread) * 1_000_000_000 + (seq as i64) * 100 + j as i64
}

fn columns() -> Vec<Column> {
    vec![
        Column::new("k", SqlType::BigInt, false),
        Column::new("v", SqlType::BigInt, false),
        Column::new("pad", SqlType::Char(400), false),
    ]
}

/// Rows are wide (about 430 bytes) so that the load outgrows the small buffer pool and the
/// lazy writer writes pages holding uncommitted changes.
fn row(key: i64, value: i64) -> Vec<Value> {
    vec![Value::BigInt(key), Value::BigInt(value), Value::Text("p".into())]
}

/// One transaction of the load.
/// The journal heap's columns: (k bigint, v bigint).
fn journal_columns() -> Vec<Column> {
    vec![Column::new("k", SqlType::BigInt, false), Column::new("v", SqlType::BigInt, false)]
}

fn transaction(
    db: &Database,
    tree: &BTree,
    journal: &Heap,
    journal_rids: &mut Vec<Rid>,
    thread: u32,
    seq: u64,
) -> engine::SqlResult<()> {
    db.begin_tran()?;
    // The journal heap: a row per transaction, the previous one updated, the fourth last deleted.
    let rid =
        journal.insert(db, &[Value::BigInt(key(thread, seq, 0)), Value::BigInt(seq as i64)])?;
    if seq >= 1 {
        let previous = journal_rids[seq as usize - 1];
        let values = [Value::BigInt(key(thread, seq - 1, 0)), Value::BigInt(-(seq as i64))];
        journal.update(db, previous, &values)?;
    }
    if seq >= 4 {
        journal.delete(db, journal_rids[seq as usize - 4])?;
    }
    for j in 0..10 {
        tree.insert(db, &row(key(thread, seq, j), seq as i64))?;
    }
    if seq >= 3 {
        for j in 0..3 {
            tree.delete(db, &[Value::BigInt(key(thread, seq - 3, j))])?;
        }
    }
    if seq >= 1 {
        let moved = key(thread, seq - 1, 9);
        tree.delete(db, &[Value::BigInt(moved)])?;
        tree.insert(db, &row(moved, -(seq as i64)))?;
    }
    db.commit_tran()?;
    journal_rids.push(rid);
    Ok(())
}

pub fn run(args: &CrashLoadArgs) -> Result<(), String> {
    let mut config = InstanceConfig::new(&args.dir);
    config.max_server_memory_mb = Some(args.max_server_memory_mb);
    let instance = Instance::start(config).map_err(|e| e.to_string())?;
    let spec = DatabaseSpec {
        name: "Crash".into(),
        primary: vec![FileSpec::new("crash_data", "crash.mdf").size(SizeSpec::Kb(4096))],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("crash_log", "crash.ldf")
                .size(SizeSpec::Kb(2048))
                .growth(SizeSpec::Kb(4096)),
        ],
        mixed_page_allocation: false,
    };
    let db = Arc::new(Database::create(&instance, &spec).map_err(|e| e.to_string())?);
    // As the server runs a database: automatic checkpoints on their task, the log writer.
    db.start_checkpoint_task();
    db.start_log_writer();
    let tree = Arc::new(
        BTree::create(&db, "dbo.Load", "PK_Load", columns(), vec![0], true, None)
            .map_err(|e| e.to_string())?,
    );
    let journal = Arc::new(
        Heap::create(&db, "dbo.Journal", journal_columns(), None).map_err(|e| e.to_string())?,
    );
    say(&format!("ready {} {}", tree.au_id, journal.au_id));
    let sessions: Vec<_> = (0..args.threads)
        .map(|thread| {
            let (db, tree, journal) = (db.clone(), tree.clone(), journal.clone());
            let limit = args.transactions;
            move || -> Result<(), String> {
                let mut seq = 0;
                let mut journal_rids = Vec::new();
                while limit == 0 || seq < limit {
                    transaction(&db, &tree, &journal, &mut journal_rids, thread, seq)
                        .map_err(|e| e.to_string())?;
                    say(&format!("ack {thread} {seq}"));
                    seq += 1;
                    // Checkpoints while other sessions' transactions are open: MinLSN, log
                    // truncation and VLF reuse are part of what a kill can interrupt.
                    if thread == 0 && seq % 16 == 0 {
                        db.checkpoint().map_err(|e| e.to_string())?;
                    }
                }
                Ok(())
            }
        })
        .collect();
    crate::sessions::run(&instance, sessions, args.lightweight_pooling)
}

/// One line on stdout, flushed at once (the parent reads acknowledgements as they come).
fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
