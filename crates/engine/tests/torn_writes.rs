//! Torn writes at random points of a transactional load, in process (a SIGKILL cannot tear a
//! write; a power cut can). For each seed, one write to the log or to the data file lands only in
//! part and fails; the session stops there (the log stops for good after a failed log write);
//! then the database is opened again. Every acknowledged commit must be there and nothing
//! uncommitted, unless the torn write was a data page that redo needs, which is SQL Server's
//! 824 naming the page.

mod common;

use common::{Rng, lab_with, size};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{Column, SqlType, Value};

const SEEDS: u64 = 24;

fn spec() -> DatabaseSpec {
    DatabaseSpec {
        name: "Torn".into(),
        primary: vec![FileSpec::new("torn_data", "torn.mdf").size(size("16MB"))],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("torn_log", "torn.ldf").size(size("2MB")).growth(size("2MB"))],
        mixed_page_allocation: false,
    }
}

fn columns() -> Vec<Column> {
    vec![Column::new("k", SqlType::Int, false), Column::new("pad", SqlType::Char(2000), false)]
}

#[test]
fn a_torn_log_or_page_write_loses_no_acknowledged_commit() {
    let base = Rng::from_env("torn_writes").next_u64();
    let (mut clean, mut reported, mut fired) = (0, 0, 0);
    for n in 0..SEEDS {
        let seed = base.wrapping_add(n);
        let mut rng = Rng::seeded(seed);
        let mut lab = lab_with(|config| config.max_server_memory_mb = Some(1));
        let db = Database::create(&lab.instance, &spec()).unwrap();
        let tree = BTree::create(&db, "dbo.T", "PK_T", columns(), vec![0], true, None).unwrap();
        let target = if rng.next_u64().is_multiple_of(2) { ".ldf" } else { ".mdf" };
        {
            let mut plan = lab.faults.lock();
            plan.only_paths_ending = Some(target.into());
            plan.tear_write_after =
                Some((rng.next_u64() % 60, 512 + (rng.next_u64() % 7) as usize * 512));
        }
        let mut acknowledged: i32 = 0;
        'load: for batch in 0..200 {
            if db.begin_tran().is_err() {
                break;
            }
            for j in 0..10 {
                let key = batch * 10 + j;
                if tree.insert(&db, &[Value::Int(key), Value::Text("p".into())]).is_err() {
                    let _ = db.rollback_tran();
                    break 'load;
                }
            }
            if db.commit_tran().is_err() {
                break;
            }
            acknowledged = (batch + 1) * 10;
        }
        if lab.faults.lock().tear_write_after.is_none() {
            fired += 1;
        }
        db.crash();
        lab.restart();
        match Database::open(&lab.instance, &lab.path("torn.mdf")) {
            Ok(db) => {
                clean += 1;
                let tree =
                    BTree::from_descriptor(tree.au_id, &db.unit_descriptor(tree.au_id).unwrap())
                        .unwrap();
                let rows = tree.check(&db).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
                // Acknowledged batches are all there; beyond them at most the batch whose commit
                // record reached the disk without its acknowledgement.
                assert!(
                    rows as i32 == acknowledged || rows as i32 == acknowledged + 10,
                    "seed {seed} ({target}): {rows} rows, {acknowledged} acknowledged"
                );
                for key in 0..acknowledged {
                    assert!(
                        tree.seek(&db, &[Value::Int(key)]).unwrap().is_some(),
                        "seed {seed}: key {key}"
                    );
                }
                assert!(
                    db.check_allocation().is_empty(),
                    "seed {seed}: {:?}",
                    db.check_allocation()
                );
            }
            Err(error) => {
                reported += 1;
                assert_eq!(error.number, 824, "seed {seed} ({target}): {error}");
                assert_eq!(target, ".mdf", "a torn log write never stops recovery (seed {seed})");
            }
        }
    }
    eprintln!(
        "{SEEDS} seeds, {fired} torn writes happened: {clean} clean recoveries, {reported} \
         reported as 824"
    );
    assert!(clean > 0);
    assert!(fired >= SEEDS / 2, "most seeds tore a write during the load");
}
