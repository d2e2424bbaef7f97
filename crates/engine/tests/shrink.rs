//! DBCC SHRINKFILE in the engine (`Database::shrink_file`): a log file loses inactive VLFs from
//! its end, a data file is cut after its last extent in use; both survive a crash, and a data
//! file that grows back over its cut range after a shrink recovers every row.

mod common;

use common::{Lab, lab, size};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{Column, SqlType, Value};

fn spec() -> DatabaseSpec {
    DatabaseSpec {
        name: "Shrink".into(),
        primary: vec![
            FileSpec::new("shrink_data", "shrink.mdf").size(size("4MB")).growth(size("1MB")),
        ],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("shrink_log", "shrink.ldf").size(size("1MB")).growth(size("1MB"))],
        mixed_page_allocation: false,
    }
}

fn columns() -> Vec<Column> {
    vec![Column::new("id", SqlType::BigInt, false), Column::new("pad", SqlType::Char(3000), false)]
}

fn fill(db: &Database, name: &str, rows: std::ops::Range<i64>) -> BTree {
    let table = format!("dbo.{name}");
    let tree = BTree::create(db, &table, &format!("PK_{name}"), columns(), vec![0], true, None)
        .expect("the tree is created");
    for id in rows {
        tree.insert(db, &[Value::BigInt(id), Value::Text("p".into())]).expect("a row goes in");
    }
    tree
}

fn data_size_pages(db: &Database) -> u32 {
    db.database_files().iter().find(|f| f.file_id == 1).expect("the primary file").size_pages
}

fn reopen(lab: &mut Lab, db: Database) -> Database {
    db.crash();
    lab.restart();
    Database::open(&lab.instance, &lab.path("shrink.mdf")).expect("the database opens")
}

#[test]
fn a_data_file_shrunk_then_grown_back_recovers_every_row_after_a_crash() {
    let mut lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let kept = fill(&db, "Kept", 0..100);
    // The dropped table's pages change after a checkpoint without being formatted again
    // (odd keys into pages of even ones): recovery from that checkpoint would redo those
    // changes onto the range the shrink cut, unless the shrink's own checkpoint comes after.
    let dropped = fill(&db, "Dropped", 0..0);
    for id in (0..2000).step_by(2) {
        dropped.insert(&db, &[Value::BigInt(id), Value::Text("p".into())]).unwrap();
    }
    db.checkpoint().unwrap();
    for id in (1..2000).step_by(2) {
        dropped.insert(&db, &[Value::BigInt(id), Value::Text("p".into())]).unwrap();
    }
    let grown_pages = data_size_pages(&db);
    db.drop_allocation_unit(dropped.au_id).unwrap();
    let shrink = db.shrink_file(1, None).unwrap();
    assert!(shrink.current_pages < grown_pages, "{shrink:?} from {grown_pages} pages");
    assert_eq!(shrink.current_pages, data_size_pages(&db));
    let on_disk = std::fs::metadata(lab.path("shrink.mdf")).unwrap().len();
    assert_eq!(on_disk, u64::from(shrink.current_pages) * 8192, "the OS file is cut too");
    // Rows after the shrink grow the file back over the range it gave up; no checkpoint runs
    // before the crash, so recovery redoes them onto that range.
    let regrown = fill(&db, "Regrown", 0..2000);
    assert!(data_size_pages(&db) > shrink.current_pages, "the file grew back");
    let (kept_au, regrown_au) = (kept.au_id, regrown.au_id);
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    for (au_id, rows) in [(kept_au, 100), (regrown_au, 2000)] {
        let descriptor = db.unit_descriptor(au_id).expect("the unit survives");
        let tree = BTree::from_descriptor(au_id, &descriptor).expect("a B-tree unit");
        assert_eq!(tree.check(&db), Ok(rows));
    }
}

#[test]
fn a_data_file_is_not_cut_below_its_last_extent_in_use_nor_below_the_target() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let _kept = fill(&db, "Kept", 0..600);
    let before = data_size_pages(&db);
    let shrink = db.shrink_file(1, Some(0)).unwrap();
    assert_eq!(shrink.current_pages, shrink.minimum_pages, "{shrink:?}");
    assert!(shrink.current_pages <= before);
    let again = db.shrink_file(1, None).unwrap();
    assert_eq!(again.current_pages, shrink.current_pages, "nothing more to give back");
    // A target above the used end is kept (rounded up to an extent).
    let db2 =
        Database::create(&lab.instance, &DatabaseSpec { name: "Other".into(), ..spec_at("o") })
            .unwrap();
    let target = db2.shrink_file(1, Some(450)).unwrap();
    assert_eq!(target.current_pages, 456, "{target:?}");
    let floor = db2.shrink_file(1, Some(0)).unwrap();
    assert_eq!(floor.current_pages, 384, "a primary file keeps model's 3 MB: {floor:?}");
    assert_eq!(db.shrink_file(9, None).unwrap_err().number, 8985);
}

fn spec_at(prefix: &str) -> DatabaseSpec {
    DatabaseSpec {
        name: prefix.into(),
        primary: vec![
            FileSpec::new(&format!("{prefix}_data"), format!("{prefix}.mdf")).size(size("4MB")),
        ],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new(&format!("{prefix}_log"), format!("{prefix}.ldf")).size(size("1MB")),
        ],
        mixed_page_allocation: false,
    }
}

#[test]
fn a_log_file_loses_its_inactive_tail_vlfs_and_keeps_them_lost_after_a_crash() {
    let mut lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    db.set_recovery_full(false).unwrap();
    // One transaction: the log cannot truncate and grows VLF by VLF.
    let tree = fill(&db, "T", 0..0);
    db.begin_tran().unwrap();
    for id in 0..2000 {
        tree.insert(&db, &[Value::BigInt(id), Value::Text("p".into())]).unwrap();
    }
    db.commit_tran().unwrap();
    let grown = db.log().log_info().len();
    assert!(grown > 4, "{grown} VLFs");
    db.checkpoint().unwrap();
    // Only the VLFs after the current one can go (a growth's VLF not used yet); the current
    // one, active, is then the last and stops the shrink (9008).
    let stuck = db.shrink_file(2, Some(0)).unwrap();
    assert!(stuck.notice.as_deref().is_some_and(|n| n.contains("is in use")), "{stuck:?}");
    let vlfs = db.log().log_info();
    assert!(vlfs.len() <= grown && vlfs.last().unwrap().vlf_active, "{vlfs:?}");
    // Fill the current VLF so the log wraps to the first one; a checkpoint frees the rest.
    let last = db.log().log_info().iter().map(|v| v.vlf_sequence_number).max().unwrap();
    let mut id = 2000;
    while db.log().log_info().iter().map(|v| v.vlf_sequence_number).max().unwrap() == last {
        tree.insert(&db, &[Value::BigInt(id), Value::Text("p".into())]).unwrap();
        id += 1;
    }
    db.checkpoint().unwrap();
    let shrink = db.shrink_file(2, Some(0)).unwrap();
    assert_eq!(db.log().log_info().len(), 2, "{shrink:?}");
    assert!(shrink.notice.as_deref().is_some_and(|n| n.contains("fewer than 2")));
    let on_disk = std::fs::metadata(lab.path("shrink.ldf")).unwrap().len();
    assert_eq!(on_disk, u64::from(shrink.current_pages) * 8192);
    let au_id = tree.au_id;
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    assert_eq!(db.log().log_info().len(), 2, "the shrink is durable");
    let descriptor = db.unit_descriptor(au_id).unwrap();
    let tree = BTree::from_descriptor(au_id, &descriptor).unwrap();
    assert_eq!(tree.check(&db), Ok(id as usize));
}
