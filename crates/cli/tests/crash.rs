//! SIGKILL crash tests: a child process (`extentdb crash-load`) commits transactions of
//! inserts, updates and deletes from four sessions on a small buffer pool; it is killed at a
//! random moment; then the database is opened (crash recovery) and checked:
//! - every transaction the child acknowledged (its commit had returned) is there;
//! - every other transaction is there entirely or not at all (only the one in flight per
//!   session may be either), so no uncommitted change is visible;
//! - the B-tree is well formed and the allocation maps agree with the pages.
//!
//! The seed also picks each iteration's scheduling mode: the sessions run as threads, or as
//! fibers (`--lightweight-pooling`, fiber mode), about half the kills each.
//!
//! Iterations: `EXTENTDB_CRASH_ITERATIONS` (default 100); `scripts/soak.sh` runs many more.
//! Sessions: `EXTENTDB_CRASH_THREADS` (default 4).
//! A failing iteration prints its seed (`EXTENTDB_SEED` replays the choices, not the timing),
//! which state each of the index and the journal matches, the first keys that differ, and keeps
//! a copy of the files as the kill left them (before recovery) for inspection.

use engine::btree::BTree;
use engine::database::Database;
use engine::instance::{Instance, InstanceConfig};
use engine::record::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The child's sessions: 4, or `EXTENTDB_CRASH_THREADS` (the soak's stress runs).
fn threads() -> u32 {
    std::env::var("EXTENTDB_CRASH_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(4)
}

/// The child's key rule (crates/cli/src/crash_load.rs).
fn key(thread: u32, seq: u64, j: u64) -> i64 {
    i64::from(thread) * 1_000_000_000 + (seq as i64) * 100 + j as i64
}

/// The rows of `thread` after its first `committed` transactions (the child's load rules).
fn expected_rows(thread: u32, committed: u64) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for seq in 0..committed {
        for j in 0..10 {
            rows.insert(key(thread, seq, j), seq as i64);
        }
        if seq >= 3 {
            for j in 0..3 {
                rows.remove(&key(thread, seq - 3, j));
            }
        }
        if seq >= 1 {
            rows.insert(key(thread, seq - 1, 9), -(seq as i64));
        }
    }
    rows
}

/// The journal heap of `thread` after its first `committed` transactions.
fn expected_journal(thread: u32, committed: u64) -> BTreeMap<i64, i64> {
    let mut rows = BTreeMap::new();
    for seq in 0..committed {
        rows.insert(key(thread, seq, 0), seq as i64);
        if seq >= 1 {
            rows.insert(key(thread, seq - 1, 0), -(seq as i64));
        }
        if seq >= 4 {
            rows.remove(&key(thread, seq - 4, 0));
        }
    }
    rows
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Runs the child (its sessions as fibers if `fibers`), kills it after `delay`; returns the
/// acknowledged commits per thread and the allocation units of the B-tree and of the journal
/// heap.
fn run_and_kill(dir: &std::path::Path, delay: Duration, fibers: bool) -> (Vec<u64>, u64, u64) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_extentdb"));
    command.args(["crash-load", "--threads", &threads().to_string(), "--dir"]).arg(dir);
    if fibers {
        command.arg("--lightweight-pooling");
    }
    let mut child =
        command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the child starts");
    let stdout = child.stdout.take().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let reader = {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("ready") {
                    let _ = ready_tx.send(line.clone());
                }
                lines.lock().unwrap().push(line);
            }
        })
    };
    let ready = ready_rx.recv_timeout(Duration::from_secs(60)).expect("the child got ready");
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    reader.join().unwrap();
    let au_id: u64 = ready.split_whitespace().nth(1).unwrap().parse().unwrap();
    let heap_au_id: u64 = ready.split_whitespace().nth(2).unwrap().parse().unwrap();
    let mut acked = vec![0u64; threads() as usize];
    for line in lines.lock().unwrap().iter() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.first() == Some(&"ack") {
            let (thread, seq): (usize, u64) =
                (parts[1].parse().unwrap(), parts[2].parse().unwrap());
            acked[thread] = acked[thread].max(seq + 1);
        }
    }
    (acked, au_id, heap_au_id)
}

/// DBCC CHECKDB's checks of the index and the heap (engine::dbcc), with two workers: a
/// recovered database has no consistency error.
fn check_units(db: &Database, tree: &BTree, au_id: u64, heap_au_id: u64) -> Result<(), String> {
    use engine::dbcc::{Logical, Owners, Structure, UnitName, UnitOptions, check_unit};
    let tree_name = UnitName { object_id: 1, index_id: 1, au_id };
    let heap_name = UnitName { object_id: 2, index_id: 0, au_id: heap_au_id };
    let owners = Owners::from([(au_id, tree_name), (heap_au_id, heap_name)]);
    let options = UnitOptions { maxdop: 2, physical_only: false, logical: Logical::Off };
    for (name, structure) in [(tree_name, Structure::Tree(tree)), (heap_name, Structure::Heap)] {
        let check =
            check_unit(db, name, &structure, &owners, options).map_err(|e| e.to_string())?;
        if !check.findings.is_empty() {
            let messages: Vec<&str> =
                check.findings.iter().map(|f| f.error.message.as_str()).collect();
            return Err(format!("CHECKDB: {messages:?}"));
        }
    }
    Ok(())
}

/// What a session's rows differ in from the states after `done` and `done + 1` commits: which
/// state each of the index and the journal matches, and the first keys that differ.
fn explain(
    thread: u32,
    done: u64,
    rows: &BTreeMap<i64, i64>,
    heap_rows: &BTreeMap<i64, i64>,
) -> String {
    let matches = |actual: &BTreeMap<i64, i64>, expected: fn(u32, u64) -> BTreeMap<i64, i64>| {
        (done.saturating_sub(3)..done + 3).find(|state| *actual == expected(thread, *state))
    };
    let differences = |actual: &BTreeMap<i64, i64>, expected: &BTreeMap<i64, i64>| {
        let mut found = Vec::new();
        for (k, v) in expected {
            if actual.get(k) != Some(v) {
                found.push(format!("{k}: {:?} not {v}", actual.get(k)));
            }
        }
        for (k, v) in actual {
            if !expected.contains_key(k) {
                found.push(format!("{k}: {v} not absent"));
            }
        }
        found.truncate(6);
        found
    };
    format!(
        "index matches state {:?}, journal matches state {:?}; index differs from state {done} \
         at {:?} and from state {} at {:?}; journal differs from state {done} at {:?}",
        matches(rows, expected_rows),
        matches(heap_rows, expected_journal),
        differences(rows, &expected_rows(thread, done)),
        done + 1,
        differences(rows, &expected_rows(thread, done + 1)),
        differences(heap_rows, &expected_journal(thread, done)),
    )
}

/// Opens the killed child's database and checks it against the acknowledgements; returns how
/// many transactions recovery rolled back (from the errorlog line).
fn verify(
    dir: &std::path::Path,
    acked: &[u64],
    au_id: u64,
    heap_au_id: u64,
) -> Result<u64, String> {
    let instance = Instance::start(InstanceConfig::new(dir)).map_err(|e| e.to_string())?;
    let db = Database::open(&instance, &dir.join("crash.mdf")).map_err(|e| e.to_string())?;
    let rolled_back: u64 = instance
        .errorlog
        .read(0)
        .map_err(|e| e.to_string())?
        .iter()
        .filter_map(|entry| entry.text.split_once(" transactions rolled back"))
        .filter_map(|(count, _)| count.trim().parse::<u64>().ok())
        .sum();
    let descriptor = db.unit_descriptor(au_id).ok_or("the index's descriptor is missing")?;
    let tree = BTree::from_descriptor(au_id, &descriptor).ok_or("bad descriptor")?;
    tree.check(&db)?;
    let problems = db.check_allocation();
    if !problems.is_empty() {
        return Err(format!("allocation: {problems:?}"));
    }
    check_units(&db, &tree, au_id, heap_au_id)?;
    let mut actual: Vec<BTreeMap<i64, i64>> = vec![BTreeMap::new(); threads() as usize];
    for row in tree.range(&db, None, None, false).map_err(|e| e.to_string())? {
        let (Value::BigInt(k), Value::BigInt(v)) = (&row[0], &row[1]) else {
            return Err(format!("unexpected row {row:?}"));
        };
        actual[(*k / 1_000_000_000) as usize].insert(*k, *v);
    }
    let heap_descriptor =
        db.unit_descriptor(heap_au_id).ok_or("the heap's descriptor is missing")?;
    let heap =
        engine::heap::Heap::from_descriptor(heap_au_id, &heap_descriptor).ok_or("bad heap")?;
    let mut journal: Vec<BTreeMap<i64, i64>> = vec![BTreeMap::new(); threads() as usize];
    for (_, row) in heap.scan(&db).map_err(|e| e.to_string())? {
        let (Value::BigInt(k), Value::BigInt(v)) = (&row[0], &row[1]) else {
            return Err(format!("unexpected journal row {row:?}"));
        };
        journal[(*k / 1_000_000_000) as usize].insert(*k, *v);
    }
    for thread in 0..threads() {
        let done = acked[thread as usize];
        let (rows, heap_rows) = (&actual[thread as usize], &journal[thread as usize]);
        // The index and the heap must both show the same committed prefix.
        let consistent = [done, done + 1].into_iter().any(|state| {
            *rows == expected_rows(thread, state) && *heap_rows == expected_journal(thread, state)
        });
        if !consistent {
            return Err(format!(
                "session {thread}: {} rows and {} journal rows, not the state after {done} or {} \
                 commits; {}",
                rows.len(),
                heap_rows.len(),
                done + 1,
                explain(thread, done, rows, heap_rows)
            ));
        }
    }
    db.close().map_err(|e| e.to_string())?;
    Ok(rolled_back)
}

/// Copies the files of directory `from` into directory `to`.
fn copy_files(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn killed_at_random_points_the_database_keeps_every_commit_and_nothing_else() {
    let iterations: u32 =
        std::env::var("EXTENTDB_CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let seed =
        std::env::var("EXTENTDB_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
                as u64
        });
    let mut rng = SplitMix(seed);
    // Per mode (threads, fibers): kills, acknowledged commits, transactions rolled back.
    let mut totals = [[0u64; 3]; 2];
    for iteration in 0..iterations {
        let dir = tempfile::tempdir().unwrap();
        let delay = Duration::from_millis(5 + rng.next() % 300);
        let fibers = rng.next() % 2 == 1;
        let (acked, au_id, heap_au_id) = run_and_kill(dir.path(), delay, fibers);
        let mode = &mut totals[usize::from(fibers)];
        mode[0] += 1;
        mode[1] += acked.iter().sum::<u64>();
        // The files as the kill left them, before recovery changes them: kept if the check fails.
        let killed = tempfile::tempdir().unwrap();
        copy_files(dir.path(), killed.path());
        match verify(dir.path(), &acked, au_id, heap_au_id) {
            Ok(rolled_back) => mode[2] += rolled_back,
            Err(problem) => panic!(
                "iteration {iteration} (EXTENTDB_SEED={seed}, {}, killed after {delay:?}, \
                 acknowledged {acked:?}, index au {au_id}, journal au {heap_au_id}, files as \
                 killed kept in {}): {problem}",
                if fibers { "fibers" } else { "threads" },
                killed.keep().display()
            ),
        }
    }
    for (mode, [kills, acked, rolled_back]) in ["threads", "fibers"].iter().zip(totals) {
        eprintln!(
            "{mode}: {kills} kills, {acked} acknowledged commits checked, {rolled_back} open \
             transactions rolled back by recovery (seed {seed})"
        );
    }
    for (mode, [kills, acked, rolled_back]) in ["threads", "fibers"].iter().zip(totals) {
        if kills >= 10 {
            assert!(acked > 0, "{mode}: the child committed something before being killed");
            assert!(rolled_back > 0, "{mode}: kills caught transactions in flight");
        }
    }
    assert!(totals.iter().map(|t| t[1]).sum::<u64>() > 0, "the child committed something");
}
