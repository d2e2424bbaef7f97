//! Clustered B-trees: ascending and random (GUID) keys, SQL Server's GUID order, page splits,
//! duplicate keys (2627/2601), ghosts and ghost cleanup, ranges in both directions, 16
//! concurrent sessions inserting (and deleting), a delete's latches, memory pressure and
//! reopening.

mod common;

use common::{Rng, lab, lab_with};
use engine::alloc::{self, pfs};
use engine::btree::BTree;
use engine::database::Database;
use engine::page::PageHeader;
use engine::record::{self, Column, Layout, SqlType, Value, compare_guid};
use engine::units::PageId;
use std::sync::Arc;

/// Seed 001's table: (c1 uniqueidentifier, c2 datetime, c3 char(111)), clustered on c1.
fn seed_001_columns() -> Vec<Column> {
    vec![
        Column::new("c1", SqlType::UniqueIdentifier, false),
        Column::new("c2", SqlType::DateTime, false),
        Column::new("c3", SqlType::Char(111), false),
    ]
}

fn seed_001_row(guid: [u8; 16], n: u32) -> Vec<Value> {
    vec![Value::Guid(guid), Value::DateTime(45_000, n), Value::Text("a".into())]
}

fn int_columns() -> Vec<Column> {
    vec![Column::new("id", SqlType::Int, false), Column::new("pad", SqlType::Char(200), false)]
}

/// A row as it reads back: char(200) is padded with spaces.
fn int_row(id: i32) -> Vec<Value> {
    vec![Value::Int(id), Value::Text(format!("{:<200}", format!("row {id}")))]
}

/// The ids of an int-keyed tree, in a forward scan.
fn int_ids(db: &Database, tree: &BTree) -> Vec<i32> {
    let rows = tree.range(db, None, None, false).unwrap();
    rows.iter().map(|r| if let Value::Int(i) = r[0] { i } else { 0 }).collect()
}

/// The uniqueidentifier keys of GUID-keyed rows, in the rows' order.
fn guid_keys(rows: &[Vec<Value>]) -> Vec<[u8; 16]> {
    rows.iter().map(|r| if let Value::Guid(g) = r[0] { g } else { [0; 16] }).collect()
}

/// The keys of a GUID-keyed tree, in a forward scan.
fn scanned_guids(db: &Database, tree: &BTree) -> Vec<[u8; 16]> {
    guid_keys(&tree.range(db, None, None, false).unwrap())
}

/// Runs `work` as sessions 51-66, each on a thread of its own with a generator seeded from
/// `test`'s seed (`EXTENTDB_SEED` replays it); returns what each session returned.
fn sixteen_sessions<T: Send + 'static>(
    db: &Arc<Database>,
    tree: &Arc<BTree>,
    test: &str,
    work: fn(&Database, &BTree, &mut Rng) -> T,
) -> Vec<T> {
    let mut seeds = Rng::from_env(test);
    let threads: Vec<_> = (0..16)
        .map(|session| {
            let (db, tree, seed) = (db.clone(), tree.clone(), seeds.next_u64());
            std::thread::spawn(move || {
                engine::instance::set_current_spid(51 + session);
                work(&db, &tree, &mut Rng::seeded(seed))
            })
        })
        .collect();
    threads.into_iter().map(|thread| thread.join().unwrap()).collect()
}

fn leaf_pages(db: &Database, tree: &BTree) -> Vec<PageId> {
    let mut page = tree.root;
    loop {
        let buf = db.page_copy(page).unwrap();
        if PageHeader::read(&buf[..]).level == 0 {
            break;
        }
        // The child page id is the last fixed column of an index record.
        let first = engine::datapage::record(&buf, 0).unwrap();
        let fixed_end = usize::from(u16::from_le_bytes([first[2], first[3]]));
        page = PageId::from_bytes(&first[fixed_end - 6..fixed_end]);
    }
    let mut leaves = Vec::new();
    while !page.is_null() {
        leaves.push(page);
        page = PageHeader::read(&db.page_copy(page).unwrap()[..]).next_page;
    }
    leaves
}

#[test]
fn ascending_keys_fill_pages_by_the_append_split() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    for id in 1..=5000 {
        tree.insert(&db, &int_row(id)).unwrap();
    }
    assert_eq!(tree.check(&db), Ok(5000));
    let leaves = leaf_pages(&db, &tree);
    // 211-byte rows and their slots: 38 per page; appending fills every leaf but the last.
    assert_eq!(leaves.len(), 5000usize.div_ceil(38));
    assert_eq!(tree.seek(&db, &[Value::Int(4321)]).unwrap(), Some(int_row(4321)));
    assert_eq!(tree.seek(&db, &[Value::Int(5001)]).unwrap(), None);
    assert_eq!(int_ids(&db, &tree), (1..=5000).collect::<Vec<_>>());
    assert!(db.check_allocation().is_empty());
}

/// After ascending splits the descent first compares the key with the last entry of each
/// index page: keys that belong before it (here every one, interleaved after each split) must
/// still find their own leaf.
#[test]
fn a_key_below_the_last_after_an_ascending_split_finds_its_own_leaf() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    for id in (2..=12_000).step_by(2) {
        tree.insert(&db, &int_row(id)).unwrap();
        // 38 rows fill a leaf: inserting 78, 154, ... split the last leaf. Right after such a
        // split, a key well inside the tree.
        if id > 2 && (id - 2) % 76 == 0 {
            tree.insert(&db, &int_row(id / 2 + 1 - (id / 2) % 2)).unwrap();
        }
    }
    for id in (1..12_000).step_by(2) {
        if tree.seek(&db, &[Value::Int(id)]).unwrap().is_none() {
            tree.insert(&db, &int_row(id)).unwrap();
        }
    }
    assert_eq!(tree.check(&db), Ok(12_000));
    assert_eq!(int_ids(&db, &tree), (1..=12_000).collect::<Vec<_>>());
}

/// Rows of 5,011 bytes: one fills a leaf, so every ascending insert splits the last leaf, as
/// seed 002's nchar(2048) rows do.
fn wide_columns() -> Vec<Column> {
    vec![Column::new("id", SqlType::Int, false), Column::new("pad", SqlType::Char(5000), false)]
}

fn wide_row(id: i32) -> Vec<Value> {
    vec![Value::Int(id), Value::Text(format!("row {id}"))]
}

/// Pages of `tree` that one insert of `id`, on this thread, read through the buffer pool.
fn pages_read_by_insert(db: &Database, tree: &BTree, id: i32) -> u64 {
    engine::iostats::start();
    tree.insert(db, &wide_row(id)).unwrap();
    let counts = engine::iostats::take();
    counts.get(&(db.database_id, tree.au_id)).map_or(0, |c| c.logical_reads)
}

/// After a session's ascending split of the last leaf, its next insert into the index latches
/// the level-1 page that took the split's entry directly, not through the root: two pages
/// read (that parent and the full leaf), against at least three for a descent from a level-2
/// root.
#[test]
fn after_an_ascending_split_the_next_insert_skips_the_descent_from_the_root() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.W", "PK_W", wide_columns(), vec![0], true, None).unwrap();
    // About 426 entries fit a level-1 page: 600 leaves make a level-2 root.
    for id in 1..=600 {
        tree.insert(&db, &wide_row(id)).unwrap();
    }
    let root = PageHeader::read(&db.page_copy(tree.root).unwrap()[..]);
    assert_eq!(root.level, 2, "a root above the leaves' parents");
    assert_eq!(pages_read_by_insert(&db, &tree, 601), 2, "the parent and the leaf");
    // Another thread has no hint: it descends from the root (its first attempt, under SH
    // latches, finds the leaf full; its second splits it).
    let other = std::thread::scope(|scope| {
        scope.spawn(|| pages_read_by_insert(&db, &tree, 602)).join().unwrap()
    });
    assert!(other >= 3, "root, parent and leaf at least: {other}");
    // This thread's hint names the parent that took 601's split; 602's split went there too.
    assert_eq!(pages_read_by_insert(&db, &tree, 603), 2);
    // A key below the parent's last entry is not taken by the hint: a descent finds its leaf.
    tree.delete(&db, &[Value::Int(300)]).unwrap();
    tree.insert(&db, &wide_row(300)).unwrap();
    assert_eq!(tree.check(&db), Ok(603));
    assert_eq!(int_ids(&db, &tree), (1..=603).collect::<Vec<_>>());
    assert!(db.check_allocation().is_empty());
}

/// A hint that no longer holds is not used: another session split the hinted parent (it is no
/// longer the last page of its level), or the root the hint names split and is no longer at
/// level 1. Each time the insert descends from the root and every row lands in order.
#[test]
fn an_ascending_insert_descends_again_when_its_parent_split_since() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.W", "PK_W", wide_columns(), vec![0], true, None).unwrap();
    for id in 1..=10 {
        tree.insert(&db, &wide_row(id)).unwrap();
    }
    // The root is the leaves' parent, and this thread's hint names it.
    assert_eq!(PageHeader::read(&db.page_copy(tree.root).unwrap()[..]).level, 1);
    // Another session fills the root until it splits: it is now at level 2.
    let mut next = 11;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                while PageHeader::read(&db.page_copy(tree.root).unwrap()[..]).level == 1 {
                    tree.insert(&db, &wide_row(next)).unwrap();
                    next += 1;
                }
            })
            .join()
            .unwrap()
    });
    let reads = pages_read_by_insert(&db, &tree, next);
    assert!(reads >= 3, "a descent: the hint named the root ({reads} pages read)");
    next += 1;
    // The hint now names the last level-1 page. Another session appends until that page
    // splits: a new last page takes the level's next entries.
    let hinted = last_level_one_page(&db, &tree);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                while last_level_one_page(&db, &tree) == hinted {
                    tree.insert(&db, &wide_row(next)).unwrap();
                    next += 1;
                }
            })
            .join()
            .unwrap()
    });
    let reads = pages_read_by_insert(&db, &tree, next);
    assert!(reads >= 3, "a descent: the hinted page split ({reads} pages read)");
    assert_eq!(pages_read_by_insert(&db, &tree, next + 1), 2, "the new hint holds");
    let rows = usize::try_from(next + 1).unwrap();
    assert_eq!(tree.check(&db), Ok(rows));
    assert_eq!(int_ids(&db, &tree), (1..=next + 1).collect::<Vec<_>>());
    assert!(db.check_allocation().is_empty());
}

/// The last page of level 1 of a tree whose root is at level 2.
fn last_level_one_page(db: &Database, tree: &BTree) -> PageId {
    let root = db.page_copy(tree.root).unwrap();
    assert_eq!(PageHeader::read(&root[..]).level, 2);
    let count = engine::datapage::slot_count(&root);
    let last = engine::datapage::record(&root, count - 1).unwrap();
    let fixed_end = usize::from(u16::from_le_bytes([last[2], last[3]]));
    PageId::from_bytes(&last[fixed_end - 6..fixed_end])
}

#[test]
fn random_guids_split_in_the_middle_and_scan_in_sql_server_order() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(
        &db,
        "dbo.MyBigTable",
        "PK_MyBigTable",
        seed_001_columns(),
        vec![0],
        true,
        None,
    )
    .unwrap();
    let mut rng = Rng::from_env("random_guids_split_in_the_middle");
    let mut guids: Vec<[u8; 16]> = (0..5000).map(|_| rng.guid()).collect();
    for (n, guid) in guids.iter().enumerate() {
        tree.insert(&db, &seed_001_row(*guid, n as u32)).unwrap();
    }
    assert_eq!(tree.check(&db), Ok(5000));
    guids.sort_by(compare_guid);
    assert_eq!(
        scanned_guids(&db, &tree),
        guids,
        "key order is SQL Server's uniqueidentifier order"
    );
    // Middle splits leave leaves 50-100 % full: between 57 rows (full) and about half that.
    let leaves = leaf_pages(&db, &tree).len();
    assert!(leaves > 5000 / 57 + 5 && leaves < 5000 / 28, "{leaves} leaves for 5,000 random keys");
    let descending = tree
        .range(&db, Some(&[Value::Guid(guids[100])]), Some(&[Value::Guid(guids[199])]), true)
        .unwrap();
    let expected: Vec<[u8; 16]> = guids[100..200].iter().rev().copied().collect();
    assert_eq!(guid_keys(&descending), expected);
}

#[test]
fn duplicate_keys_get_2627_or_2601() {
    let lab = lab();
    let db = lab.company();
    let pk = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    pk.insert(&db, &int_row(7)).unwrap();
    let error = pk.insert(&db, &int_row(7)).unwrap_err();
    assert_eq!((error.number, error.severity), (2627, 14));
    assert_eq!(
        error.message,
        "Violation of PRIMARY KEY constraint 'PK_T'. Cannot insert duplicate key in object 'dbo.T'. The duplicate key value is (7)."
    );
    let unique = BTree::create(&db, "dbo.U", "IX_U", int_columns(), vec![0], false, None).unwrap();
    unique.insert(&db, &int_row(1)).unwrap();
    let error = unique.insert(&db, &int_row(1)).unwrap_err();
    assert_eq!(error.number, 2601);
    assert_eq!(
        error.message,
        "Cannot insert duplicate key row in object 'dbo.U' with unique index 'IX_U'. The duplicate key value is (1)."
    );
}

/// A delete latches its leaf EX and the index pages above it only SH, as SQL Server does for a
/// change that keeps the tree's shape: it goes ahead while another session holds the root SH
/// (with the root latched EX, it waited for every reader of the root).
#[test]
fn a_delete_goes_ahead_while_another_session_holds_the_root_shared() {
    use engine::buffer::PageKey;
    use engine::latch::LatchMode;
    use std::time::{Duration, Instant};
    let lab = lab();
    let db = Arc::new(lab.company());
    let tree =
        Arc::new(BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap());
    for id in 0..400 {
        tree.insert(&db, &int_row(id)).unwrap();
    }
    let root_key = PageKey::new(db.database_id, tree.root);
    let root = lab.instance.buffer_pool.fetch(root_key, LatchMode::Sh).unwrap();
    assert!(root.read(|buf| buf[3]) > 0, "the root is an index page");
    let deleter = {
        let (db, tree) = (db.clone(), tree.clone());
        std::thread::spawn(move || {
            engine::instance::set_current_spid(52);
            tree.delete(&db, &[Value::Int(7)]).unwrap()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !deleter.is_finished() {
        assert!(Instant::now() < deadline, "the delete waits for the root's latch");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(root);
    assert!(deleter.join().unwrap());
    assert_eq!(tree.seek(&db, &[Value::Int(7)]).unwrap(), None);
    assert_eq!(tree.check(&db), Ok(399));
}

#[test]
fn deletes_leave_ghosts_until_ghost_cleanup() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    for id in 0..200 {
        tree.insert(&db, &int_row(id)).unwrap();
    }
    for id in (0..200).step_by(2) {
        assert!(tree.delete(&db, &[Value::Int(id)]).unwrap());
    }
    assert!(!tree.delete(&db, &[Value::Int(0)]).unwrap(), "already a ghost");
    assert_eq!(tree.check(&db), Ok(100));
    assert_eq!(tree.seek(&db, &[Value::Int(10)]).unwrap(), None);
    let leaf = leaf_pages(&db, &tree)[0];
    let header = PageHeader::read(&db.page_copy(leaf).unwrap()[..]);
    assert!(header.ghost_record_count > 0);
    let pfs_byte = |db: &Database| {
        alloc::pfs_get(&db.page_copy(PageId::new(leaf.file_id, 1)).unwrap(), leaf.page_no)
    };
    assert_ne!(pfs_byte(&db) & pfs::GHOST, 0, "PFS marks the page as having ghosts");
    tree.insert(&db, &int_row(10)).unwrap();
    assert_eq!(
        tree.seek(&db, &[Value::Int(10)]).unwrap(),
        Some(int_row(10)),
        "an insert reuses the ghost of its key"
    );
    let removed = tree.ghost_cleanup(&db).unwrap();
    assert_eq!(removed, 99);
    assert_eq!(pfs_byte(&db) & pfs::GHOST, 0);
    assert_eq!(tree.check(&db), Ok(101));
}

/// Deletes (SH down to the leaves' parent, EX on the leaf) interleaved with inserts that split
/// leaves under their parent's EX latch, in sixteen sessions: every deleted row is a ghost,
/// every other row is there once, and the tree's invariants hold.
#[test]
fn sixteen_sessions_inserting_and_deleting_keep_a_correct_tree() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let tree = Arc::new(
        BTree::create(&db, "dbo.T", "PK_T", seed_001_columns(), vec![0], true, None).unwrap(),
    );
    let sessions =
        sixteen_sessions(&db, &tree, "sixteen_sessions_inserting_and_deleting", |db, tree, rng| {
            let (mut kept, mut deleted) = (Vec::new(), Vec::new());
            for n in 0..300 {
                let guid = rng.guid();
                tree.insert(db, &seed_001_row(guid, n)).unwrap();
                if n % 3 == 2 {
                    // The row inserted two steps ago: by now other sessions may have split its leaf.
                    let victim = kept.remove(kept.len() - 2);
                    assert!(tree.delete(db, &[Value::Guid(victim)]).unwrap());
                    deleted.push(victim);
                }
                kept.push(guid);
            }
            (kept, deleted)
        });
    let (mut kept, mut deleted) = (Vec::new(), Vec::new());
    for (k, d) in sessions {
        kept.extend(k);
        deleted.extend(d);
    }
    assert_eq!(tree.check(&db), Ok(kept.len()), "live rows once, keys ordered, links right");
    assert_eq!(kept.len() + deleted.len(), 4800);
    for guid in &deleted {
        assert_eq!(tree.seek(&db, &[Value::Guid(*guid)]).unwrap(), None, "deleted rows are gone");
    }
    kept.sort_by(compare_guid);
    assert_eq!(scanned_guids(&db, &tree), kept);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn sixteen_sessions_inserting_random_guids_build_a_correct_tree() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let tree = Arc::new(
        BTree::create(
            &db,
            "dbo.MyBigTable",
            "PK_MyBigTable",
            seed_001_columns(),
            vec![0],
            true,
            None,
        )
        .unwrap(),
    );
    let sessions = sixteen_sessions(&db, &tree, "sixteen_sessions", |db, tree, rng| {
        let mut mine = Vec::new();
        for n in 0..300 {
            let guid = rng.guid();
            tree.insert(db, &seed_001_row(guid, n)).unwrap();
            mine.push(guid);
        }
        mine
    });
    let mut all: Vec<[u8; 16]> = sessions.into_iter().flatten().collect();
    assert_eq!(
        tree.check(&db),
        Ok(4800),
        "every row present once, keys ordered, links and levels right"
    );
    all.sort_by(compare_guid);
    assert_eq!(scanned_guids(&db, &tree), all);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn a_tree_larger_than_memory_survives_close_and_reopen() {
    let mut lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    let mut rng = Rng::from_env("a_tree_larger_than_memory");
    let mut ids: Vec<i32> = (0..8000).collect();
    for i in (1..ids.len()).rev() {
        ids.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    for id in &ids {
        tree.insert(&db, &int_row(*id)).unwrap();
    }
    assert_eq!(tree.check(&db), Ok(8000));
    assert!(lab.instance.buffer_pool.counters().page_reads > 0, "pages were evicted and read back");
    let (au, root) = (tree.au_id, tree.root);
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    let tree = BTree::attach(au, root, "dbo.T", "PK_T", int_columns(), vec![0], true);
    assert_eq!(tree.check(&db), Ok(8000));
    assert_eq!(tree.seek(&db, &[Value::Int(7777)]).unwrap(), Some(int_row(7777)));
    assert!(db.check_allocation().is_empty());
}

#[test]
fn every_invariant_holds_after_every_random_insert() {
    let lab = lab();
    let db = lab.company();
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    let mut rng = Rng::from_env("every_invariant_holds_after_every_random_insert");
    for n in 0..700 {
        let id = (rng.next_u64() % 1_000_000) as i32;
        let _ = tree.insert(&db, &int_row(id));
        if let Err(e) = tree.check(&db) {
            let root = db.page_copy(tree.root).unwrap();
            let keys: Vec<(i32, u32)> = (0..engine::datapage::slot_count(&root))
                .map(|s| {
                    let r = engine::datapage::record(&root, s).unwrap();
                    (
                        i32::from_le_bytes(r[4..8].try_into().unwrap()),
                        u32::from_le_bytes(r[8..12].try_into().unwrap()),
                    )
                })
                .collect();
            panic!("after insert {n} of {id}: {e}\nroot: {keys:?}");
        }
    }
}

/// Regression: a session evicting pages to get a frame used to wait for the latch of a pinned
/// victim while holding its own latches, and sixteen sessions on a small pool deadlocked.
#[test]
fn sixteen_sessions_on_a_small_buffer_pool_do_not_deadlock() {
    let lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let db = Arc::new(lab.company());
    let tree = Arc::new(
        BTree::create(&db, "dbo.T", "PK_T", seed_001_columns(), vec![0], true, None).unwrap(),
    );
    let mut seeds = Rng::from_env("sixteen_sessions_on_a_small_buffer_pool");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for session in 0..16u16 {
        let (db, tree, seed, done) = (db.clone(), tree.clone(), seeds.next_u64(), done_tx.clone());
        std::thread::spawn(move || {
            engine::instance::set_current_spid(51 + session);
            let mut rng = Rng::seeded(seed);
            for n in 0..1500 {
                tree.insert(&db, &seed_001_row(rng.guid(), n)).unwrap();
            }
            done.send(()).unwrap();
        });
    }
    for _ in 0..16 {
        done_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("every session finishes (no latch deadlock)");
    }
    assert_eq!(tree.check(&db), Ok(24_000));
    assert!(lab.instance.buffer_pool.counters().evictions > 0);
}

#[test]
fn the_ghost_cleanup_task_removes_ghosts_unless_trace_flag_661_is_on() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let tree = BTree::create(&db, "dbo.T", "PK_T", int_columns(), vec![0], true, None).unwrap();
    for id in 0..300 {
        tree.insert(&db, &int_row(id)).unwrap();
    }
    lab.instance.trace_flags.on(engine::traceflags::TF_DISABLE_GHOST_CLEANUP);
    for id in (0..300).step_by(3) {
        tree.delete(&db, &[Value::Int(id)]).unwrap();
    }
    let ghosts = |db: &Database| -> u32 {
        leaf_pages(db, &tree)
            .iter()
            .map(|p| u32::from(PageHeader::read(&db.page_copy(*p).unwrap()[..]).ghost_record_count))
            .sum()
    };
    assert_eq!(ghosts(&db), 100);
    db.start_ghost_cleanup(std::time::Duration::from_millis(10));
    let poll = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    poll("three runs skipped by TF 661", &|| db.ghost_cleanup_stats().runs_skipped_by_tf661 >= 3);
    assert_eq!(ghosts(&db), 100, "TF 661: the task runs but removes nothing");
    lab.instance.trace_flags.off(engine::traceflags::TF_DISABLE_GHOST_CLEANUP);
    // The task counts a run when it ends: wait for the count, then look at the pages.
    poll("the task removed the ghosts", &|| db.ghost_cleanup_stats().ghosts_removed == 100);
    assert_eq!(ghosts(&db), 0);
    let stats = db.ghost_cleanup_stats();
    assert!(stats.runs >= 1, "ten pages per run at most: {stats:?}");
    assert_eq!(tree.check(&db), Ok(200));
}

/// Each entry of an index page but its first, against the first record of the child it names
/// (the entry's key columns, decoded; the child's key, decoded from its first record).
fn entries_and_child_first_keys(
    db: &Database,
    tree: &BTree,
    page: PageId,
) -> Vec<(Vec<Value>, Vec<Value>)> {
    let buf = db.page_copy(page).unwrap();
    let level = PageHeader::read(&buf[..]).level;
    if level == 0 {
        return Vec::new();
    }
    let entry_columns = tree.record_columns(level);
    let entry_layout = Layout::new(entry_columns);
    let mut pairs = Vec::new();
    for slot in 0..engine::datapage::slot_count(&buf) {
        let bytes = engine::datapage::record(&buf, slot).unwrap();
        let mut entry = record::decode(entry_columns, &entry_layout, bytes).unwrap();
        let Some(Value::Bytes(child)) = entry.pop() else { panic!("an entry names its child") };
        let child = PageId::from_bytes(&child);
        let child_buf = db.page_copy(child).unwrap();
        let child_level = PageHeader::read(&child_buf[..]).level;
        let child_columns = tree.record_columns(child_level);
        let first = engine::datapage::record(&child_buf, 0).unwrap();
        let first = record::decode(child_columns, &Layout::new(child_columns), first).unwrap();
        // A leaf's first row gives its key; an index page's first entry stands for minus
        // infinity, so only entries naming leaves are compared.
        if slot > 0 && child_level == 0 {
            pairs.push((entry, tree.stored_key(&first)));
        }
        pairs.extend(entries_and_child_first_keys(db, tree, child));
    }
    pairs
}

/// A split adds an entry for its new page to the parent, made from the new page's first key.
/// When that first record is the row being inserted (every ascending split, and a middle split
/// whose new row starts the right half), the entry is encoded from the row's key rather than
/// decoded back from the record: the same key, a char key's padding and a non-unique index's
/// uniquifier included. In a tree that only grew, each entry is its child's first key.
#[test]
fn a_split_entry_is_the_first_key_of_its_new_page() {
    let lab = lab();
    let db = lab.company();
    let columns = vec![
        Column::new("k", SqlType::Char(30), false),
        Column::new("pad", SqlType::Char(400), false),
    ];
    let tree = BTree::create_non_unique(&db, "dbo.S", "CIX_S", columns, vec![0], None).unwrap();
    let row = |n: u32| vec![Value::Text(format!("key {n:05}")), Value::Text("p".into())];
    // Ascending keys, each three times (uniquifiers 0, 1 and 2), then random ones in between.
    for n in 0..1200 {
        tree.insert(&db, &row(2 * (n / 3))).unwrap();
    }
    let mut rng = Rng::from_env("a_split_entry_is_the_first_key_of_its_new_page");
    for _ in 0..1200 {
        tree.insert(&db, &row(2 * (rng.next_u64() % 400) as u32 + 1)).unwrap();
    }
    assert_eq!(tree.check(&db), Ok(2400));
    let pairs = entries_and_child_first_keys(&db, &tree, tree.root);
    assert!(pairs.len() > 100, "{} entries: the tree split often", pairs.len());
    for (entry, first_key) in pairs {
        assert_eq!(entry, first_key);
    }
}

#[test]
fn a_non_unique_clustered_index_numbers_duplicates_with_a_uniquifier() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let tree = Arc::new(
        BTree::create_non_unique(&db, "dbo.N", "CIX_N", int_columns(), vec![0], None).unwrap(),
    );
    for id in 0..100 {
        tree.insert(&db, &int_row(id % 10)).unwrap();
    }
    // Eight sessions insert the same key at once: each row still gets its own uniquifier.
    let threads: Vec<_> = (0..8u16)
        .map(|session| {
            let (db, tree) = (db.clone(), tree.clone());
            std::thread::spawn(move || {
                engine::instance::set_current_spid(51 + session);
                for _ in 0..25 {
                    tree.insert(&db, &int_row(7)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(tree.check(&db), Ok(300));
    let sevens = tree.range(&db, Some(&[Value::Int(7)]), Some(&[Value::Int(7)]), false).unwrap();
    assert_eq!(sevens.len(), 210, "10 + 200 rows with key 7");
    assert!(
        sevens.iter().all(|row| row == &int_row(7)),
        "rows come back without the hidden column"
    );
    let descending = tree.range(&db, Some(&[Value::Int(6)]), Some(&[Value::Int(7)]), true).unwrap();
    assert_eq!(descending.len(), 220);
    assert_eq!(descending[0], int_row(7));
    assert_eq!(descending[219], int_row(6));
    assert_eq!(tree.seek(&db, &[Value::Int(3)]).unwrap(), Some(int_row(3)));
    // The first row of a key stores no uniquifier: no variable-column section at all.
    let first_leaf = leaf_pages(&db, &tree)[0];
    let buf = db.page_copy(first_leaf).unwrap();
    let first = engine::datapage::record(&buf, 0).unwrap();
    assert_eq!(first[0] & engine::record::STATUS_VAR_COLUMNS, 0);
    let second = engine::datapage::record(&buf, 1).unwrap();
    assert_ne!(
        second[0] & engine::record::STATUS_VAR_COLUMNS,
        0,
        "a duplicate stores its uniquifier"
    );
}

#[test]
fn nonclustered_indexes_point_at_heap_rids_and_clustered_keys() {
    let lab = lab();
    let db = lab.company();
    // A heap with a non-unique nonclustered index on `code`: rows are (code, RID).
    let heap_columns =
        vec![Column::new("id", SqlType::Int, false), Column::new("code", SqlType::Char(10), false)];
    let heap = engine::heap::Heap::create(&db, "dbo.H", heap_columns, None).unwrap();
    let nc = BTree::create_nonclustered(
        &db,
        "dbo.H",
        "IX_H_code",
        vec![Column::new("code", SqlType::Char(10), false)],
        vec![Column::new("rid", SqlType::Binary(8), false)],
        false,
        None,
    )
    .unwrap();
    for id in 0..600 {
        let code = format!("c{}", id % 50);
        let rid = heap.insert(&db, &[Value::Int(id), Value::Text(code.clone())]).unwrap();
        let mut locator = rid.page.to_bytes().to_vec();
        locator.extend_from_slice(&rid.slot.to_le_bytes());
        nc.insert(&db, &[Value::Text(code), Value::Bytes(locator)]).unwrap();
    }
    assert_eq!(nc.check(&db), Ok(600));
    let hits = nc
        .range(&db, Some(&[Value::Text("c7".into())]), Some(&[Value::Text("c7".into())]), false)
        .unwrap();
    assert_eq!(hits.len(), 12);
    for hit in &hits {
        let Value::Bytes(locator) = &hit[1] else { panic!("a RID locator") };
        let rid = engine::heap::Rid {
            page: PageId::from_bytes(&locator[..6]),
            slot: u16::from_le_bytes([locator[6], locator[7]]),
        };
        let row = heap.get(&db, rid).unwrap().unwrap();
        assert_eq!(row[1], Value::Text(format!("{:<10}", "c7")));
    }
    let leaf = leaf_pages(&db, &nc)[0];
    let header = PageHeader::read(&db.page_copy(leaf).unwrap()[..]);
    assert_eq!((header.page_type, header.level), (2, 0), "nonclustered leaves are index pages");

    // A clustered table with a unique nonclustered index on a GUID: rows are (guid, id).
    let tree = BTree::create(&db, "dbo.C", "PK_C", int_columns(), vec![0], true, None).unwrap();
    let unique = BTree::create_nonclustered(
        &db,
        "dbo.C",
        "UX_C_guid",
        vec![Column::new("g", SqlType::UniqueIdentifier, false)],
        vec![Column::new("id", SqlType::Int, false)],
        true,
        None,
    )
    .unwrap();
    let mut rng = Rng::from_env("nonclustered_indexes");
    let mut guids = Vec::new();
    for id in 0..300 {
        let guid = rng.guid();
        tree.insert(&db, &int_row(id)).unwrap();
        unique.insert(&db, &[Value::Guid(guid), Value::Int(id)]).unwrap();
        guids.push(guid);
    }
    let error = unique.insert(&db, &[Value::Guid(guids[5]), Value::Int(999)]).unwrap_err();
    assert_eq!(error.number, 2601, "{error}");
    let found = unique.seek(&db, &[Value::Guid(guids[123])]).unwrap().unwrap();
    assert_eq!(found[1], Value::Int(123));
    assert_eq!(tree.seek(&db, &[found[1].clone()]).unwrap(), Some(int_row(123)));
    assert!(unique.delete(&db, &[Value::Guid(guids[123])]).unwrap());
    assert_eq!(
        unique.seek(&db, &[Value::Guid(guids[123])]).unwrap(),
        None,
        "an index ghost is not found"
    );
    assert_eq!(unique.check(&db), Ok(299));
    assert!(db.check_allocation().is_empty());
}
