//! Transaction locks: a reader waits for a writer's commit (LCK_M_S, with the blocker in the
//! waiting tasks), and a deadlock between two transactions is found and resolved with 1205.

mod common;

use common::{lab_with, size};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{Column, SqlType, Value};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn setup(
    configure: impl FnOnce(&mut engine::instance::InstanceConfig),
) -> (common::Lab, Arc<Database>, Arc<BTree>) {
    let lab = lab_with(configure);
    let spec = DatabaseSpec {
        name: "Locks".into(),
        primary: vec![FileSpec::new("locks_data", "locks.mdf").size(size("4MB"))],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("locks_log", "locks.ldf").size(size("4MB"))],
        mixed_page_allocation: false,
    };
    let db = Arc::new(Database::create(&lab.instance, &spec).unwrap());
    let columns =
        vec![Column::new("id", SqlType::Int, false), Column::new("v", SqlType::Int, false)];
    let tree = Arc::new(BTree::create(&db, "dbo.T", "PK_T", columns, vec![0], true, None).unwrap());
    (lab, db, tree)
}

fn row(id: i32, v: i32) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(v)]
}

#[test]
fn a_reader_waits_for_the_writers_commit_and_sees_the_committed_row() {
    let (lab, db, tree) = setup(|_| {});
    engine::instance::set_current_spid(51);
    db.begin_tran().unwrap();
    tree.insert(&db, &row(5, 500)).unwrap();
    let reader = {
        let (db, tree) = (db.clone(), tree.clone());
        std::thread::spawn(move || {
            engine::instance::set_current_spid(52);
            db.begin_tran().unwrap();
            let found = tree.seek(&db, &[Value::Int(5)]).unwrap();
            db.commit_tran().unwrap();
            found
        })
    };
    // The reader blocks on the key lock the writer holds, and shows it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let task = loop {
        let tasks = lab.instance.waiting_tasks.snapshot();
        if let Some(task) = tasks.into_iter().find(|t| t.wait_type == "LCK_M_S") {
            break task;
        }
        assert!(Instant::now() < deadline, "the reader never waited");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!((task.session_id, task.blocking_session_id), (52, Some(51)));
    assert!(
        task.resource_description.starts_with("keylock hobtid="),
        "{}",
        task.resource_description
    );
    std::thread::sleep(Duration::from_millis(20));
    db.commit_tran().unwrap();
    assert_eq!(reader.join().unwrap(), Some(row(5, 500)), "the committed row");
    let wait = lab.instance.waits.get("LCK_M_S").unwrap();
    assert_eq!(wait.waiting_tasks_count, 1);
    assert!(wait.wait_time_ms >= 20, "{} ms", wait.wait_time_ms);
    assert!(lab.instance.locks.snapshot().is_empty(), "every lock released");
}

/// A transaction that reads a row it inserted keeps its X lock on the key. The read asks for
/// S, which the X lock covers; the read's release after reading (READ COMMITTED) must not take
/// the X lock away with it, or another session could read the uncommitted row. A read of a key
/// the transaction did not hold still leaves no lock behind.
#[test]
fn reading_its_own_inserted_row_keeps_the_transactions_x_lock() {
    use engine::lock::{LockMode, LockResource};
    let (lab, db, tree) = setup(|_| {});
    engine::instance::set_current_spid(51);
    tree.insert(&db, &row(6, 600)).unwrap();
    db.begin_tran().unwrap();
    tree.insert(&db, &row(5, 500)).unwrap();
    let key_locks = || {
        let locks = lab.instance.locks.snapshot();
        locks
            .into_iter()
            .filter(|(r, ..)| matches!(r, LockResource::Key { .. }))
            .collect::<Vec<_>>()
    };
    assert_eq!(key_locks().len(), 1, "the insert's X lock");
    assert_eq!(tree.seek(&db, &[Value::Int(5)]).unwrap(), Some(row(5, 500)));
    let after_own = key_locks();
    assert_eq!(after_own.len(), 1, "still held after reading the row: {after_own:?}");
    assert_eq!((after_own[0].2, after_own[0].3), (51, LockMode::X));
    assert_eq!(tree.seek(&db, &[Value::Int(6)]).unwrap(), Some(row(6, 600)));
    assert_eq!(key_locks(), after_own, "the other key's S lock went after the read");
    db.commit_tran().unwrap();
    assert!(lab.instance.locks.snapshot().is_empty(), "every lock released");
}

#[test]
fn a_deadlock_is_resolved_within_5_seconds_with_1205_and_written_with_tf_1222() {
    let (lab, db, tree) = setup(|config| config.startup_trace_flags = vec![1204, 1222]);
    // An Extended Events session that keeps the deadlock graph (xml_deadlock_report).
    let xe = &lab.instance.xevents;
    let event = engine::xevent::catalog::XML_DEADLOCK_REPORT;
    xe.create(engine::xevent::SessionDef {
        event_session_id: 0,
        name: "deadlocks".into(),
        events: vec![engine::xevent::EventDef { event, actions: Vec::new(), predicate: None }],
        targets: vec![engine::xevent::TargetDef {
            target: engine::xevent::catalog::target("ring_buffer").unwrap(),
            settings: Vec::new(),
        }],
        options: engine::xevent::SessionOptions::default(),
    })
    .unwrap();
    xe.start("deadlocks").unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let started = Instant::now();
    let sessions: Vec<_> = [(61u16, 1, 2), (62u16, 2, 1)]
        .into_iter()
        .map(|(spid, mine, theirs)| {
            let (db, tree, barrier) = (db.clone(), tree.clone(), barrier.clone());
            std::thread::spawn(move || {
                engine::instance::set_current_spid(spid);
                db.begin_tran().unwrap();
                tree.insert(&db, &row(mine, 0)).unwrap();
                barrier.wait();
                // Each now wants the key the other holds.
                match tree
                    .insert(&db, &row(theirs + 100, 0))
                    .and_then(|()| tree.delete(&db, &[Value::Int(theirs)]).map(|_| ()))
                {
                    Ok(()) => {
                        db.commit_tran().unwrap();
                        (spid, None)
                    }
                    Err(error) => (spid, Some(error)),
                }
            })
        })
        .collect();
    let outcomes: Vec<_> = sessions.into_iter().map(|s| s.join().unwrap()).collect();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(5), "resolved in {elapsed:?}");
    let victims: Vec<_> = outcomes.iter().filter(|(_, e)| e.is_some()).collect();
    assert_eq!(victims.len(), 1, "{outcomes:?}");
    let (victim_spid, error) = victims[0];
    let error = error.as_ref().unwrap();
    assert_eq!((error.number, error.severity), (1205, 13));
    assert_eq!(
        error.message,
        format!(
            "Transaction (Process ID {victim_spid}) was deadlocked on lock resources with another \
             process and has been chosen as the deadlock victim. Rerun the transaction."
        )
    );
    // The victim's transaction was rolled back; the survivor's committed.
    let survivor = if *victim_spid == 61 { 2 } else { 1 };
    let victim_key = if *victim_spid == 61 { 1 } else { 2 };
    assert!(tree.seek(&db, &[Value::Int(survivor)]).unwrap().is_some());
    assert!(tree.seek(&db, &[Value::Int(victim_key)]).unwrap().is_none());
    assert_eq!(lab.instance.locks.deadlocks(), 1);
    let texts = lab.errorlog_texts();
    assert!(texts.iter().any(|t| t == "deadlock-list"), "{texts:?}");
    assert!(texts.iter().any(|t| t == &format!(" deadlock victim=process{victim_spid}")));
    assert!(texts.iter().any(|t| t.starts_with("Deadlock encountered")));
    let victim_line =
        format!("   process id=process{victim_spid} spid={victim_spid} priority=0 logused=");
    assert!(texts.iter().any(|t| t.starts_with(&victim_line)), "{texts:?}");
    // The graph: the victim, both processes, and each key with its waiter and its owner.
    let ring = &xe.running()[0].target_snapshots()[0].target_data;
    assert!(ring.contains("eventCount=\"1\""), "{ring}");
    assert!(ring.contains("<event name=\"xml_deadlock_report\" package=\"sqlserver\""));
    assert!(ring.contains(&format!("<victimProcess id=\"process{victim_spid}\" />")), "{ring}");
    for spid in [61, 62] {
        assert!(ring.contains(&format!("<process id=\"process{spid}\" ")), "{ring}");
        assert!(ring.contains(&format!("<owner id=\"process{spid}\" />")), "{ring}");
        assert!(ring.contains(&format!("<waiter id=\"process{spid}\" mode=\"")), "{ring}");
    }
    assert_eq!(ring.matches("<keylock hobtid=").count(), 2, "{ring}");
}

/// (object locks, key locks) a transaction holds in the snapshot of the lock table.
fn held_by(lab: &common::Lab, xact_spid: u16) -> (Vec<engine::lock::LockMode>, usize) {
    let rows = lab.instance.locks.snapshot();
    let mine = rows.iter().filter(|(_, _, spid, _)| *spid == xact_spid);
    let objects = mine
        .clone()
        .filter(|(r, _, _, _)| matches!(r, engine::lock::LockResource::Object { .. }))
        .map(|(_, _, _, m)| *m)
        .collect();
    let keys =
        mine.filter(|(r, _, _, _)| matches!(r, engine::lock::LockResource::Key { .. })).count();
    (objects, keys)
}

/// At 5,000 X key locks in one index a transaction escalates: it holds X on the index and no key
/// lock there, takes no more key locks, and its rows are still all there at commit.
#[test]
fn five_thousand_key_locks_escalate_to_an_exclusive_object_lock() {
    let (lab, db, tree) = setup(|_| {});
    engine::instance::set_current_spid(53);
    let threshold = engine::xact::LOCK_ESCALATION_THRESHOLD as i32;
    db.begin_tran().unwrap();
    for id in 0..threshold - 1 {
        tree.insert(&db, &row(id, id)).unwrap();
    }
    assert_eq!(held_by(&lab, 53), (vec![engine::lock::LockMode::IX], threshold as usize - 1));
    assert_eq!(lab.instance.locks.escalations(), 0);
    for id in threshold - 1..threshold + 500 {
        tree.insert(&db, &row(id, id)).unwrap();
    }
    let (objects, keys) = held_by(&lab, 53);
    assert_eq!(objects, vec![engine::lock::LockMode::X], "IX became X");
    assert_eq!(keys, 0, "the key locks went with the escalation, and no new one was taken");
    assert_eq!(lab.instance.locks.escalations(), 1);
    db.commit_tran().unwrap();
    assert!(lab.instance.locks.snapshot().is_empty(), "commit releases the object lock");
    assert_eq!(tree.check(&db), Ok(threshold as usize + 500));
}

/// Trace flag 1211 (and 1224) turn escalation off: every key lock stays.
#[test]
fn trace_flag_1211_keeps_every_key_lock() {
    for flag in [1211, 1224] {
        let (lab, db, tree) = setup(|config| config.startup_trace_flags.push(flag));
        engine::instance::set_current_spid(54);
        db.begin_tran().unwrap();
        for id in 0..6_000 {
            tree.insert(&db, &row(id, id)).unwrap();
        }
        assert_eq!(held_by(&lab, 54), (vec![engine::lock::LockMode::IX], 6_000), "TF {flag}");
        assert_eq!(lab.instance.locks.escalations(), 0);
        db.commit_tran().unwrap();
    }
}

/// An escalation that another transaction's intent lock refuses does not wait: the key locks
/// stay, and it is tried again every 1,250 key locks, succeeding once the other has committed.
#[test]
fn a_refused_escalation_keeps_the_key_locks_and_is_tried_again_later() {
    let (lab, db, tree) = setup(|_| {});
    let other_holds = Arc::new(Barrier::new(2));
    let other_may_commit = Arc::new(Barrier::new(2));
    let other = {
        let (db, tree) = (db.clone(), tree.clone());
        let (holds, may_commit) = (other_holds.clone(), other_may_commit.clone());
        std::thread::spawn(move || {
            engine::instance::set_current_spid(56);
            db.begin_tran().unwrap();
            tree.insert(&db, &row(-1, 0)).unwrap();
            holds.wait();
            may_commit.wait();
            db.commit_tran().unwrap();
        })
    };
    other_holds.wait();
    engine::instance::set_current_spid(55);
    db.begin_tran().unwrap();
    for id in 0..6_000 {
        tree.insert(&db, &row(id, id)).unwrap();
    }
    // Refused at 5,000 (the other holds IX): nothing waited, every key lock kept.
    assert_eq!(held_by(&lab, 55), (vec![engine::lock::LockMode::IX], 6_000));
    assert_eq!(lab.instance.locks.escalations(), 0);
    assert!(lab.instance.waits.get("LCK_M_X").is_none(), "an escalation never waits");
    other_may_commit.wait();
    other.join().unwrap();
    // The next attempt, at 6,250 key locks, finds the object free.
    for id in 6_000..6_250 {
        tree.insert(&db, &row(id, id)).unwrap();
    }
    assert_eq!(held_by(&lab, 55), (vec![engine::lock::LockMode::X], 0));
    assert_eq!(lab.instance.locks.escalations(), 1);
    db.commit_tran().unwrap();
    assert_eq!(tree.check(&db), Ok(6_251));
}

/// Escalation counts the key locks a transaction holds: asking 6,000 times for the one X key
/// lock it already has does not escalate.
#[test]
fn asking_again_for_a_held_key_lock_does_not_count_towards_escalation() {
    let (lab, db, tree) = setup(|_| {});
    engine::instance::set_current_spid(57);
    db.begin_tran().unwrap();
    tree.insert(&db, &row(1, 1)).unwrap();
    let key =
        engine::lock::LockResource::Key { database_id: db.database_id, au_id: tree.au_id, hash: 7 };
    for _ in 0..6_000 {
        engine::xact::lock(&db, key, engine::lock::LockMode::X).unwrap();
    }
    assert_eq!(lab.instance.locks.escalations(), 0);
    assert_eq!(held_by(&lab, 57), (vec![engine::lock::LockMode::IX], 2));
    db.commit_tran().unwrap();
}
