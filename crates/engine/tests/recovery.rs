//! Crash recovery from the log: page changes are logged in mini-transactions, pages are written
//! only after their log records (WAL), and a database opened after a crash redoes the log from
//! its last checkpoint, so a B-tree and the allocation maps come back exactly as the durable
//! log says, whatever the buffer pool had written.

mod common;

use common::{Lab, Rng, lab_with, size};
use engine::btree::BTree;
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{Column, SqlType, Value};
use std::sync::Arc;

fn spec() -> DatabaseSpec {
    DatabaseSpec {
        name: "Crash".into(),
        primary: vec![FileSpec::new("crash_data", "crash.mdf").size(size("4MB"))],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("crash_log", "crash.ldf").size(size("4MB")).growth(size("4MB"))],
        mixed_page_allocation: false,
    }
}

fn columns() -> Vec<Column> {
    vec![
        Column::new("c1", SqlType::UniqueIdentifier, false),
        Column::new("c3", SqlType::Char(111), false),
    ]
}

fn row(rng: &mut Rng) -> Vec<Value> {
    vec![Value::Guid(rng.guid()), Value::Text("a".into())]
}

/// Inserts `rows` random rows from `sessions` threads; returns the tree.
fn load(db: &Arc<Database>, rows: u64, sessions: u64, seed: u64) -> Arc<BTree> {
    let tree =
        Arc::new(BTree::create(db, "dbo.T", "PK_T", columns(), vec![0], true, None).unwrap());
    let threads: Vec<_> = (0..sessions)
        .map(|n| {
            let (db, tree) = (db.clone(), tree.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::seeded(seed.wrapping_add(n));
                for _ in 0..rows / sessions {
                    tree.insert(&db, &row(&mut rng)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    tree
}

fn reopen(lab: &mut Lab, db: Arc<Database>) -> Database {
    Arc::try_unwrap(db).ok().expect("the test holds the last reference").crash();
    lab.restart();
    Database::open(&lab.instance, &lab.path("crash.mdf")).unwrap()
}

fn attach(tree: &BTree) -> BTree {
    BTree::attach(tree.au_id, tree.root, "dbo.T", "PK_T", columns(), vec![0], true)
}

#[test]
fn rows_whose_log_is_durable_survive_a_crash_that_wrote_no_page() {
    let mut lab = lab_with(|_| {});
    let seed = Rng::from_env("recovery_durable_log").next_u64();
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let tree = load(&db, 4000, 4, seed);
    assert_eq!(tree.check(&db), Ok(4000));
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    let tree = attach(&tree);
    assert_eq!(tree.check(&db), Ok(4000), "every row redone from the log (seed {seed})");
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    let texts = lab.errorlog_texts();
    assert!(
        texts.iter().any(|t| t.starts_with("Recovery completed for database Crash")),
        "{texts:?}"
    );
    // Inserting goes on after recovery, and survives a clean close and open.
    let mut rng = Rng::seeded(seed ^ 0xFF);
    for _ in 0..500 {
        tree.insert(&db, &row(&mut rng)).unwrap();
    }
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("crash.mdf")).unwrap();
    assert_eq!(tree.check(&db), Ok(4500));
}

#[test]
fn with_a_small_buffer_pool_the_lazy_writer_obeys_wal_and_recovery_completes_the_pages() {
    // 1 MB of buffer pool for a ~1.5 MB tree: pages are written and evicted during the load,
    // each after its log records.
    let mut lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let seed = Rng::from_env("recovery_small_pool").next_u64();
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let tree = load(&db, 6000, 2, seed);
    assert!(lab.instance.buffer_pool.counters().page_writes > 0, "pages were written mid-load");
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    let tree = attach(&tree);
    assert_eq!(tree.check(&db), Ok(6000), "seed {seed}");
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

#[test]
fn a_crash_before_the_log_is_flushed_loses_a_suffix_and_nothing_else() {
    let mut lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let seed = Rng::from_env("recovery_unflushed").next_u64();
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let tree = load(&db, 12_000, 1, seed);
    // No flush: what survives is what the WAL rule forced out before pages were written.
    let db = reopen(&mut lab, db);
    let tree = attach(&tree);
    let rows = tree.check(&db).expect("a well-formed tree");
    assert!(rows <= 12_000, "{rows} rows");
    eprintln!("{rows} of 12000 rows survived (seed {seed})");
    assert!(rows > 0, "the lazy writer forced some of the log out");
    // One session inserted in order: the rows left are a prefix of its sequence.
    let mut rng = Rng::seeded(seed);
    for n in 0..12_000 {
        let values = row(&mut rng);
        let present = tree.seek(&db, &values[..1]).unwrap().is_some();
        assert_eq!(present, n < rows, "row {n} of {rows} (seed {seed})");
    }
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

/// Regression: a mini-transaction that formats a new heap page and puts a row on it changes the
/// page twice in one group; redo once stamped the page after the format and skipped the row.
#[test]
fn a_group_that_formats_and_fills_a_page_is_redone_whole() {
    use engine::heap::{Heap, Rid};
    for open_ops in 1..=3 {
        let mut lab = lab_with(|_| {});
        let db = Database::create(&lab.instance, &spec()).unwrap();
        let columns = vec![
            Column::new("k", SqlType::BigInt, false),
            Column::new("v", SqlType::BigInt, false),
        ];
        let heap = Heap::create(&db, "dbo.Journal", columns, None).unwrap();
        let mut rids: Vec<Rid> = Vec::new();
        let n = 40i64;
        for seq in 0..=n {
            db.begin_tran().unwrap();
            let rid = heap.insert(&db, &[Value::BigInt(seq), Value::BigInt(seq)]).unwrap();
            if seq >= 1 && open_ops >= 2 {
                let values = [Value::BigInt(seq - 1), Value::BigInt(-seq)];
                heap.update(&db, rids[seq as usize - 1], &values).unwrap();
            }
            if seq >= 4 && open_ops >= 3 {
                heap.delete(&db, rids[seq as usize - 4]).unwrap();
            }
            if seq < n {
                db.commit_tran().unwrap(); // the last transaction stays open
            }
            rids.push(rid);
        }
        db.log().flush_all().unwrap();
        let expected = if open_ops >= 3 { 4 } else { 40 };
        let au_id = heap.au_id;
        db.crash();
        lab.restart();
        let db = Database::open(&lab.instance, &lab.path("crash.mdf")).unwrap();
        let heap = Heap::from_descriptor(au_id, &db.unit_descriptor(au_id).unwrap()).unwrap();
        assert_eq!(heap.scan(&db).unwrap().len(), expected, "open ops {open_ops}");
        assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    }
}

/// The pages of allocation unit `au_id` in file 1 (below `pages`), each with its bytes after
/// the header (records, free space and slot array).
fn unit_pages(db: &Database, au_id: u64, pages: u32) -> Vec<(u32, u16, Vec<u8>)> {
    (0..pages)
        .filter_map(|page_no| {
            let buf = db.page_copy(engine::units::PageId::new(1, page_no)).ok()?;
            let header = engine::page::PageHeader::read(&buf[..]);
            (header.allocation_unit_id() == au_id && matches!(header.page_type, 1 | 2))
                .then(|| (page_no, header.free_data, buf[96..].to_vec()))
        })
        .collect()
}

/// After redo: the unit's pages are those in `expected`, byte for byte, and the allocation
/// maps agree with them.
fn assert_redone_as(db: &Database, au_id: u64, expected: &[(u32, u16, Vec<u8>)]) {
    let redone = unit_pages(db, au_id, 512);
    assert_eq!(redone.len(), expected.len(), "the same pages");
    for ((page, _, bytes), (_, _, redone)) in expected.iter().zip(&redone) {
        assert!(bytes == redone, "page 1:{page} redone differently");
    }
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

/// Invariant 1 of `log/mtr.rs` after a crash: inserts logged as LOP_INSERT_ROWS, after the
/// compactions they needed (leaves left with holes by deletes and ghost cleanup), are redone
/// into pages identical, byte for byte, to the pages the sessions had in memory.
#[test]
fn logged_inserts_and_compactions_are_redone_byte_for_byte() {
    let mut lab = lab_with(|_| {});
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let columns =
        vec![Column::new("id", SqlType::Int, false), Column::new("pad", SqlType::Char(200), false)];
    let tree = BTree::create(&db, "dbo.T", "PK_T", columns, vec![0], true, None).unwrap();
    let row = |id: i32| vec![Value::Int(id), Value::Text(format!("row {id}"))];
    db.begin_tran().unwrap();
    for id in 0..3000 {
        tree.insert(&db, &row(2 * id)).unwrap();
    }
    db.commit_tran().unwrap();
    db.checkpoint().unwrap(); // the full leaves are on disk: redo starts from them
    db.begin_tran().unwrap();
    for id in (0..3000).filter(|id| id % 3 != 0) {
        tree.delete(&db, &[Value::Int(2 * id)]).unwrap();
    }
    db.commit_tran().unwrap();
    tree.ghost_cleanup(&db).unwrap(); // the deleted rows become holes
    let before = unit_pages(&db, tree.au_id, 512);
    db.begin_tran().unwrap();
    for id in (0..3000).filter(|id| id % 3 == 1) {
        tree.insert(&db, &row(2 * id + 1)).unwrap(); // between the rows left: no split
    }
    db.commit_tran().unwrap();
    let expected = unit_pages(&db, tree.au_id, 512);
    let compacted = before.iter().filter(|(page, free_data, _)| {
        expected.iter().any(|(p, after, _)| p == page && after < free_data)
    });
    assert!(compacted.count() > 0, "some leaf was compacted to take the new rows");
    let (au_id, root) = (tree.au_id, tree.root);
    db.log().flush_all().unwrap();
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("crash.mdf")).unwrap();
    let columns =
        vec![Column::new("id", SqlType::Int, false), Column::new("pad", SqlType::Char(200), false)];
    let tree = BTree::attach(au_id, root, "dbo.T", "PK_T", columns, vec![0], true);
    assert_eq!(tree.check(&db), Ok(2000));
    assert_redone_as(&db, au_id, &expected);
}

/// An ascending key's splits move only the new record: the new page is logged as a format of
/// its header and a logical insert (no diff of the whole page). Redo after a crash gives pages
/// identical, byte for byte, to the pages the session had in memory.
#[test]
fn ascending_key_splits_are_redone_byte_for_byte() {
    let mut lab = lab_with(|_| {});
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let columns = || {
        vec![
            Column::new("id", SqlType::Int, false),
            Column::new("pad", SqlType::NChar(1500), false),
        ]
    };
    let tree = BTree::create(&db, "dbo.T", "PK_T", columns(), vec![0], true, None).unwrap();
    db.checkpoint().unwrap();
    db.begin_tran().unwrap();
    for id in 0..200 {
        tree.insert(&db, &[Value::Int(id), Value::Text(format!("row {id}"))]).unwrap();
    }
    db.commit_tran().unwrap();
    let expected = unit_pages(&db, tree.au_id, 512);
    assert!(expected.len() >= 100, "two rows a page: {} pages", expected.len());
    let (au_id, root) = (tree.au_id, tree.root);
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("crash.mdf")).unwrap();
    let tree = BTree::attach(au_id, root, "dbo.T", "PK_T", columns(), vec![0], true);
    assert_eq!(tree.check(&db), Ok(200));
    assert_redone_as(&db, au_id, &expected);
}

/// Regression (found by DBCC CHECKDB's checks in the SIGKILL crash test): a page is allocated
/// in its own nested top action before the split that links it (or the heap change that
/// formats it), so a crash between the two left it allocated for ever, linked by nothing and
/// never formatted. Recovery now frees such pages: a B-tree page no index page links, and a
/// heap page whose header is not the heap's; the tree's and the heap's own pages stay.
#[test]
fn pages_a_crash_left_allocated_and_unused_are_freed_by_recovery() {
    let mut lab = lab_with(|_| {});
    let seed = Rng::from_env("recovery_unused_pages").next_u64();
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let tree = load(&db, 3000, 1, seed);
    let heap =
        engine::heap::Heap::create(&db, "dbo.H", vec![Column::new("a", SqlType::Int, false)], None)
            .unwrap();
    for value in 0..100 {
        heap.insert(&db, &[Value::Int(value)]).unwrap();
    }
    let is_allocated =
        |db: &Database, page| db.allocation_status(page).unwrap().unwrap().pfs_byte & 0x40 != 0;
    let orphans = [db.allocate_page(tree.au_id).unwrap(), db.allocate_page(heap.au_id).unwrap()];
    assert!(orphans.iter().all(|p| is_allocated(&db, *p)));
    // A page whose header makes it one of the tree's, though nothing links it (as damage to
    // an index page could make a real leaf look): recovery does not free it.
    let kept = db.allocate_page(tree.au_id).unwrap();
    {
        let key = engine::buffer::PageKey::new(db.database_id, kept);
        let guard = db.buffer_pool().new_page(key).unwrap();
        let mut header = engine::page::PageHeader::new(engine::page::PageType::Data, kept);
        header.set_allocation_unit_id(tree.au_id);
        guard.write(|buf| header.write(&mut buf[..])).unwrap();
    }
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    for page in orphans {
        assert!(!is_allocated(&db, page), "{page} is still allocated (seed {seed})");
    }
    assert!(is_allocated(&db, kept), "{kept}, a page of the tree, was freed (seed {seed})");
    let tree = attach(&tree);
    assert_eq!(tree.check(&db), Ok(3000), "seed {seed}");
    assert_eq!(heap.count_rows(&db).unwrap(), 100);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    let texts = lab.errorlog_texts();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("Recovery freed 0 extent(s) and 2 page(s) in database 'Crash'")),
        "{texts:?}"
    );
}

/// Writes `bucket` into the PFS fullness bits of `page` (as a heap insert's nested top action
/// does, ahead of the row change it describes).
fn set_pfs_bucket(db: &Database, page: engine::units::PageId, bucket: u8) {
    let pfs = engine::units::PageId::new(page.file_id, engine::alloc::pfs_page_for(page.page_no));
    let key = engine::buffer::PageKey::new(db.database_id, pfs);
    let guard = db.buffer_pool().fetch(key, engine::latch::LatchMode::Up).unwrap();
    guard
        .write(|buf| {
            let byte = engine::alloc::pfs_get(buf, page.page_no);
            engine::alloc::pfs_set(buf, page.page_no, (byte & !0x07) | bucket);
        })
        .unwrap();
}

/// Regression (a SIGKILL crash test failed with "page (1:27) contains an incorrect page ID"):
/// a heap insert's PFS fullness change is a nested top action, so a crash can keep it while
/// losing the row, or a new page's format, that it followed. Recovery reads every page of a
/// heap after a crash: an unformatted page of nonzero fullness is freed, and a formatted one
/// gets the bucket its free space calls for (CHECKDB's 8914 otherwise).
#[test]
fn a_heap_pfs_bucket_that_outran_its_page_is_settled_by_recovery() {
    let mut lab = lab_with(|_| {});
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let columns = vec![Column::new("a", SqlType::Int, false)];
    let heap = engine::heap::Heap::create(&db, "dbo.H", columns, None).unwrap();
    heap.insert(&db, &[Value::Int(1)]).unwrap();
    let written = heap.pages(&db).unwrap()[0];
    let unformatted = db.allocate_page(heap.au_id).unwrap();
    set_pfs_bucket(&db, unformatted, 2);
    set_pfs_bucket(&db, written, 4);
    db.log().flush_all().unwrap();
    let au_id = heap.au_id;
    let db = reopen(&mut lab, db);
    let status = |page| db.allocation_status(page).unwrap().unwrap().pfs_byte;
    assert_eq!(status(unformatted) & 0x40, 0, "the unformatted page is freed");
    assert_eq!(status(written) & 0x07, 1, "one small row: the 1-50 % bucket again");
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    use engine::dbcc::{Logical, Owners, Structure, UnitName, UnitOptions, check_unit};
    let name = UnitName { object_id: 2, index_id: 0, au_id };
    let options = UnitOptions { maxdop: 1, physical_only: false, logical: Logical::Off };
    let check =
        check_unit(&db, name, &Structure::Heap, &Owners::from([(au_id, name)]), options).unwrap();
    let messages: Vec<&str> = check.findings.iter().map(|f| f.error.message.as_str()).collect();
    assert!(messages.is_empty(), "{messages:?}");
}

/// Rows of 1.2 KB (an nchar(600) each, so their records are read from the page at commit:
/// mtr invariant 2) inserted in random key order, so leaves split in the middle and records
/// land beside others already on the page. After a crash that wrote no page, every row is
/// redone from the log with its own values.
#[test]
fn large_rows_in_random_order_are_redone_whole_after_a_crash() {
    let mut lab = lab_with(|_| {});
    let seed = Rng::from_env("recovery_large_rows").next_u64();
    let mut rng = Rng::seeded(seed);
    let db = Arc::new(Database::create(&lab.instance, &spec()).unwrap());
    let columns = || {
        vec![Column::new("id", SqlType::Int, false), Column::new("v", SqlType::NChar(600), false)]
    };
    let value = |id: i32| Value::Text(format!("row {id}-{}", "z".repeat((id % 97) as usize)));
    let tree = BTree::create(&db, "dbo.L", "PK_L", columns(), vec![0], true, None).unwrap();
    let mut ids: Vec<i32> = (1..=600).collect();
    for at in (1..ids.len()).rev() {
        ids.swap(at, (rng.next_u64() % (at as u64 + 1)) as usize);
    }
    for id in &ids {
        tree.insert(&db, &[Value::Int(*id), value(*id)]).unwrap();
    }
    db.log().flush_all().unwrap();
    let db = reopen(&mut lab, db);
    let tree = BTree::attach(tree.au_id, tree.root, "dbo.L", "PK_L", columns(), vec![0], true);
    assert_eq!(tree.check(&db), Ok(600), "seed {seed}");
    for id in 1..=600 {
        let row = tree.seek(&db, &[Value::Int(id)]).unwrap().expect("the row");
        let Value::Text(text) = &row[1] else { panic!("an nchar value: {row:?}") };
        let Value::Text(expected) = value(id) else { unreachable!() };
        assert_eq!(text.trim_end(), expected, "row {id} (seed {seed})");
    }
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}
