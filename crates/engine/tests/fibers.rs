//! Fiber mode ('lightweight pooling', `engine::fiber`): sessions run as fibers of one thread
//! per scheduler. Asserted: sixteen fiber sessions with durable commits build a correct tree
//! and keep their own session state; a fiber that waits for a key lock held by a fiber of its
//! own scheduler lets that fiber run (a wait that blocked the thread would never end); a log
//! sync that fails while fibers wait for their commits' flush ends every one of those commits
//! with 9001, and keeps every commit acknowledged before it; a fiber whose page read is in
//! flight lets the other fibers of its scheduler run.

mod common;

use common::{Rng, lab_with};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{Column, SqlType, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A database of one data file and a clustered index on a uniqueidentifier key, with the log
/// writer running (fibers leave their log flushes to it) unless `log_writer` is false.
fn database_with(lab: &common::Lab, log_writer: bool) -> (Arc<Database>, Arc<BTree>) {
    let spec = DatabaseSpec {
        name: "Fibers".into(),
        primary: vec![FileSpec::new("d1", "d1.mdf").size(common::size("20MB"))],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("l", "l.ldf").size(common::size("20MB"))],
        mixed_page_allocation: false,
    };
    let db = Arc::new(Database::create(&lab.instance, &spec).unwrap());
    if log_writer {
        db.start_log_writer();
    }
    let columns = vec![
        Column::new("c1", SqlType::UniqueIdentifier, false),
        Column::new("c2", SqlType::Char(200), false),
    ];
    let tree = BTree::create(&db, "dbo.T", "PK_T", columns, vec![0], true, None).unwrap();
    (db, Arc::new(tree))
}

fn database(lab: &common::Lab) -> (Arc<Database>, Arc<BTree>) {
    database_with(lab, true)
}

/// Runs `jobs` as fibers on another thread; panics if they have not all returned within a
/// minute (a fiber blocking its scheduler's thread would hang them for good).
fn run_fibers(lab: &common::Lab, jobs: Vec<Box<dyn FnOnce() + Send>>) {
    let schedulers = lab.instance.schedulers.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        engine::fiber::run(&schedulers, jobs);
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => runner.join().unwrap(),
        Err(_) if runner.is_finished() => {
            // A fiber panicked: raise it here.
            if let Err(panic) = runner.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(_) => panic!("the fibers did not finish within a minute"),
    }
}

#[test]
fn sixteen_fiber_sessions_commit_durably_into_a_correct_tree_each_with_its_own_state() {
    let lab = lab_with(|config| config.schedulers = Some(2));
    let (db, tree) = database(&lab);
    lab.instance.waits.clear();
    const SESSIONS: u16 = 16;
    const BATCHES: u64 = 5;
    const BATCH_ROWS: u64 = 100;
    let jobs: Vec<Box<dyn FnOnce() + Send>> = (0..SESSIONS)
        .map(|n| {
            let (db, tree) = (db.clone(), tree.clone());
            Box::new(move || {
                let spid = 51 + n;
                engine::instance::set_current_spid(spid);
                let mut rng = Rng::seeded(u64::from(n) + 1);
                for _ in 0..BATCHES {
                    db.begin_tran().unwrap();
                    for _ in 0..BATCH_ROWS {
                        let row = [Value::Guid(rng.guid()), Value::Text("a".into())];
                        tree.insert(&db, &row).unwrap();
                        assert_eq!(engine::instance::current_spid(), spid, "its own session id");
                    }
                    db.commit_tran().unwrap();
                    assert_eq!(engine::instance::current_spid(), spid);
                }
            }) as Box<dyn FnOnce() + Send>
        })
        .collect();
    run_fibers(&lab, jobs);
    let rows = u64::from(SESSIONS) * BATCHES * BATCH_ROWS;
    assert_eq!(tree.check(&db), Ok(rows as usize));
    let writelog = lab.instance.waits.get("WRITELOG").expect("commits waited for the log");
    assert!(writelog.waiting_tasks_count > 0 && writelog.waiting_tasks_count <= 80);
    // Fibers never write the log themselves: the log writer wrote their commits.
    assert!(db.log().stats().flushes > 0);
}

#[test]
fn a_fiber_waiting_for_a_key_lock_lets_the_holding_fiber_of_its_scheduler_run() {
    let lab = lab_with(|config| config.schedulers = Some(1));
    let (db, tree) = database(&lab);
    let key = Value::Guid(Rng::seeded(7).guid());
    let second_waits = Arc::new(AtomicBool::new(false));
    let first = {
        let (db, tree, key, instance) =
            (db.clone(), tree.clone(), key.clone(), lab.instance.clone());
        Box::new(move || {
            engine::instance::set_current_spid(51);
            db.begin_tran().unwrap();
            tree.insert(&db, &[key, Value::Text("first".into())]).unwrap();
            // Let the other fiber run until it waits for this transaction's key lock.
            let started = Instant::now();
            while !instance.waiting_tasks.snapshot().iter().any(|t| t.session_id == 52) {
                assert!(started.elapsed() < Duration::from_secs(30), "the second never waited");
                engine::fiber::park_timeout(Duration::from_millis(1));
            }
            db.commit_tran().unwrap();
        }) as Box<dyn FnOnce() + Send>
    };
    let second = {
        let (db, tree, second_waits) = (db.clone(), tree.clone(), second_waits.clone());
        Box::new(move || {
            engine::instance::set_current_spid(52);
            db.begin_tran().unwrap();
            let error = tree.insert(&db, &[key, Value::Text("second".into())]).unwrap_err();
            assert_eq!(error.number, 2627, "{error:?}");
            second_waits.store(true, Ordering::SeqCst);
            let _ = db.rollback_tran();
        }) as Box<dyn FnOnce() + Send>
    };
    run_fibers(&lab, vec![first, second]);
    assert!(second_waits.load(Ordering::SeqCst));
    assert_eq!(tree.check(&db), Ok(1));
    let lock_waits: u64 = lab
        .instance
        .waits
        .snapshot()
        .iter()
        .filter(|w| w.wait_type.starts_with("LCK_M_"))
        .map(|w| w.waiting_tasks_count)
        .sum();
    assert_eq!(lock_waits, 1, "the second fiber waited for the key lock once");
}

/// Without a log writer (embedded use that never starts one) a fiber writes its commit's log
/// itself, as a thread-mode session does.
#[test]
fn fibers_commit_without_a_log_writer() {
    let lab = lab_with(|config| config.schedulers = Some(1));
    let (db, tree) = database_with(&lab, false);
    let jobs: Vec<Box<dyn FnOnce() + Send>> = (0..3u64)
        .map(|n| {
            let (db, tree) = (db.clone(), tree.clone());
            Box::new(move || {
                let mut rng = Rng::seeded(n + 11);
                for _ in 0..4 {
                    db.begin_tran().unwrap();
                    for _ in 0..50 {
                        tree.insert(&db, &[Value::Guid(rng.guid()), Value::Text("a".into())])
                            .unwrap();
                    }
                    db.commit_tran().unwrap();
                }
            }) as Box<dyn FnOnce() + Send>
        })
        .collect();
    run_fibers(&lab, jobs);
    assert_eq!(tree.check(&db), Ok(600));
    assert!(db.log().stats().flushes >= 4, "the commits flushed the log");
}

/// Fibers leave their commits' log flushes to the log writer and park until it has written
/// them (WRITELOG). When the writer's sync fails, each parked fiber must get the log's 9001
/// and go on (a fiber left parked would hang its scheduler's other fibers too); no commit is
/// acknowledged after the failure, and after a crash every acknowledged one is there.
#[test]
fn a_failed_log_sync_ends_the_waiting_fibers_commits_with_9001_and_keeps_every_acknowledged() {
    let mut lab = lab_with(|config| config.schedulers = Some(2));
    let (db, tree) = database(&lab);
    lab.faults.lock().only_paths_ending = Some(".ldf".into());
    lab.faults.lock().fail_sync_after = Some(6);
    const SESSIONS: u64 = 8;
    // (keys, commit outcome: None if acknowledged, else the error number).
    let batches = Arc::new(Mutex::new(Vec::<(Vec<[u8; 16]>, Option<i32>)>::new()));
    let jobs: Vec<Box<dyn FnOnce() + Send>> = (0..SESSIONS)
        .map(|n| {
            let (db, tree, batches) = (db.clone(), tree.clone(), batches.clone());
            Box::new(move || {
                let mut rng = Rng::seeded(n + 101);
                for _ in 0..40 {
                    let keys: Vec<[u8; 16]> = (0..20).map(|_| rng.guid()).collect();
                    let outcome = db.begin_tran().and_then(|()| {
                        for key in &keys {
                            tree.insert(&db, &[Value::Guid(*key), Value::Text("a".into())])?;
                        }
                        db.commit_tran()
                    });
                    let failed = outcome.as_ref().err().map(|error| error.number);
                    batches.lock().unwrap().push((keys, failed));
                    if failed.is_some() {
                        let _ = db.rollback_tran();
                        break;
                    }
                }
            }) as Box<dyn FnOnce() + Send>
        })
        .collect();
    run_fibers(&lab, jobs);
    let batches = std::mem::take(&mut *batches.lock().unwrap());
    let failures: Vec<i32> = batches.iter().filter_map(|(_, failed)| *failed).collect();
    assert_eq!(failures.len(), SESSIONS as usize, "every session met the stopped log once");
    assert!(failures.iter().all(|number| *number == 9001), "{failures:?}");
    assert!(!db.log().is_available());
    let texts = lab.errorlog_texts();
    assert_eq!(texts.iter().filter(|t| t.starts_with("Error: 17053")).count(), 1, "{texts:?}");
    let acknowledged: BTreeSet<[u8; 16]> = batches
        .iter()
        .filter(|(_, failed)| failed.is_none())
        .flat_map(|(k, _)| k.clone())
        .collect();
    let in_doubt: BTreeSet<[u8; 16]> = batches
        .iter()
        .filter(|(_, failed)| failed.is_some())
        .flat_map(|(k, _)| k.clone())
        .collect();
    assert!(!acknowledged.is_empty(), "commits were acknowledged before the sync failed");
    // A crash, then recovery: every acknowledged commit is there; a failed one may be (its
    // commit record was written, its sync failed), and nothing else is.
    let au_id = tree.au_id;
    drop(tree);
    Arc::try_unwrap(db).ok().expect("the fibers are done with the database").crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("d1.mdf")).unwrap();
    let descriptor = db.unit_descriptor(au_id).expect("the index's schema");
    let tree = BTree::from_descriptor(au_id, &descriptor).unwrap();
    let found: BTreeSet<[u8; 16]> = tree
        .range(&db, None, None, false)
        .unwrap()
        .into_iter()
        .map(|row| match row[0] {
            Value::Guid(key) => key,
            ref other => panic!("a key {other:?}"),
        })
        .collect();
    assert!(found.is_superset(&acknowledged), "every acknowledged commit survived");
    assert!(found.difference(&acknowledged).all(|key| in_doubt.contains(key)), "nothing else");
    assert_eq!(tree.check(&db), Ok(found.len()));
}

/// A page read runs on an I/O thread while the fiber that needs the page parks in its
/// PAGEIOLATCH_SH wait, so the other fibers of its scheduler run meanwhile, as SQL Server's
/// asynchronous reads leave the scheduler to its other workers. Here the read is held at a gate
/// that only the other fiber opens: a read made on the scheduler's thread would never end.
#[test]
fn a_fiber_whose_page_read_is_in_flight_lets_the_other_fibers_of_its_scheduler_run() {
    let lab = lab_with(|config| config.schedulers = Some(1));
    let (db, tree) = database(&lab);
    let mut rng = Rng::seeded(5);
    // Enough rows for an index of more than 16 pages, which a whole scan reads ahead.
    let keys: Vec<[u8; 16]> = (0..1000).map(|_| rng.guid()).collect();
    db.begin_tran().unwrap();
    for key in &keys {
        tree.insert(&db, &[Value::Guid(*key), Value::Text("on disk".into())]).unwrap();
    }
    db.commit_tran().unwrap();
    db.checkpoint().unwrap();
    // The index's pages leave the pool: the next seek reads its root from disk.
    lab.instance.buffer_pool.discard(db.database_id, Some(tree.root.file_id), tree.root.page_no);
    let gate = engine::io::IoGate::closed();
    lab.faults.lock().read_gate = Some(gate.clone());
    lab.instance.waits.clear();
    let reader = {
        let (db, tree, key) = (db.clone(), tree.clone(), keys[7]);
        Box::new(move || {
            engine::instance::set_current_spid(51);
            let row = tree.seek(&db, &[Value::Guid(key)]).unwrap().expect("the row");
            assert!(matches!(&row[1], Value::Text(t) if t.trim_end() == "on disk"), "{row:?}");
        }) as Box<dyn FnOnce() + Send>
    };
    let root = format!("{}:{}:{}", db.database_id, tree.root.file_id, tree.root.page_no);
    let seen_waiting = Arc::new(AtomicBool::new(false));
    let opener = {
        let (gate, instance, seen_waiting) =
            (gate.clone(), lab.instance.clone(), seen_waiting.clone());
        Box::new(move || {
            engine::instance::set_current_spid(52);
            let started = Instant::now();
            while gate.waiting() == 0 {
                assert!(started.elapsed() < Duration::from_secs(30), "no read reached the gate");
                engine::fiber::park_timeout(Duration::from_millis(1));
            }
            let tasks = instance.waiting_tasks.snapshot();
            seen_waiting.store(
                tasks.iter().any(|t| {
                    t.session_id == 51
                        && t.wait_type == "PAGEIOLATCH_SH"
                        && t.resource_description == root
                }),
                Ordering::SeqCst,
            );
            gate.open();
        }) as Box<dyn FnOnce() + Send>
    };
    run_fibers(&lab, vec![reader, opener]);
    assert!(seen_waiting.load(Ordering::SeqCst), "the reader waited PAGEIOLATCH_SH on the root");
    let io_waits = lab.instance.waits.get("PAGEIOLATCH_SH").expect("the reads' waits");
    assert!(io_waits.waiting_tasks_count >= 1);
    // A fiber's read-ahead goes through an I/O thread as well, and installs the same pages.
    lab.instance.buffer_pool.discard(db.database_id, Some(tree.root.file_id), tree.root.page_no);
    let read_ahead_before = lab.instance.buffer_pool.read_ahead_pages();
    let scanner = {
        let (db, tree) = (db.clone(), tree.clone());
        Box::new(move || {
            assert_eq!(tree.range(&db, None, None, false).unwrap().len(), 1000);
        }) as Box<dyn FnOnce() + Send>
    };
    run_fibers(&lab, vec![scanner]);
    assert!(lab.instance.buffer_pool.read_ahead_pages() > read_ahead_before, "the scan read ahead");
    assert_eq!(tree.check(&db), Ok(1000));
}
