//! Heaps: inserts through PFS free space, scans in IAM order, forwarding stubs, stable RIDs,
//! persistence and memory pressure.

mod common;

use common::{lab, lab_with};
use engine::alloc::{self, pfs};
use engine::database::Database;
use engine::heap::Heap;
use engine::record::{Column, SqlType, Value};
use engine::units::PageId;

fn columns() -> Vec<Column> {
    vec![Column::new("id", SqlType::Int, false), Column::new("pad", SqlType::VarChar(8000), true)]
}

fn row(id: i32, pad: usize) -> Vec<Value> {
    vec![Value::Int(id), Value::Text("p".repeat(pad))]
}

fn ids(rows: &[(engine::heap::Rid, Vec<Value>)]) -> Vec<i32> {
    let mut ids: Vec<i32> =
        rows.iter().map(|(_, v)| if let Value::Int(id) = v[0] { id } else { -1 }).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn inserted_rows_come_back_by_rid_and_by_scan() {
    let lab = lab();
    let db = lab.company();
    let heap = Heap::create(&db, "dbo.H", columns(), None).unwrap();
    let rids: Vec<_> = (0..500).map(|n| heap.insert(&db, &row(n, 100)).unwrap()).collect();
    assert_eq!(heap.get(&db, rids[123]).unwrap(), Some(row(123, 100)));
    let rows = heap.scan(&db).unwrap();
    assert_eq!(ids(&rows), (0..500).collect::<Vec<_>>());
    // 500 rows of 118 bytes: 68 per page, so 8 pages.
    assert_eq!(heap.pages(&db).unwrap().len(), 8);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn free_space_left_by_deletes_is_found_again_through_pfs() {
    let lab = lab();
    let db = lab.company();
    let heap = Heap::create(&db, "dbo.H", columns(), None).unwrap();
    let rids: Vec<_> = (0..400).map(|n| heap.insert(&db, &row(n, 300)).unwrap()).collect();
    let pages = heap.pages(&db).unwrap();
    let pfs_of = |db: &Database, page: PageId| {
        let buf =
            db.page_copy(PageId::new(page.file_id, alloc::pfs_page_for(page.page_no))).unwrap();
        alloc::pfs_get(&buf, page.page_no)
    };
    assert_eq!(
        pfs_of(&db, pages[0]) & pfs::FULLNESS_MASK,
        pfs::PCT_100,
        "a full page is 96-100 % in PFS"
    );
    for rid in rids.iter().step_by(2) {
        heap.delete(&db, *rid).unwrap();
    }
    assert_eq!(
        pfs_of(&db, pages[0]) & pfs::FULLNESS_MASK,
        pfs::PCT_50,
        "half the rows gone: the 1-50 % bucket"
    );
    for n in 1000..1200 {
        heap.insert(&db, &row(n, 300)).unwrap();
    }
    assert_eq!(heap.pages(&db).unwrap(), pages, "the inserts reused the freed space: no new page");
    assert_eq!(heap.scan(&db).unwrap().len(), 400);
    // The rows that stayed kept their RIDs.
    assert_eq!(heap.get(&db, rids[1]).unwrap(), Some(row(1, 300)));
}

#[test]
fn a_row_that_outgrows_its_page_leaves_a_forwarding_stub() {
    let lab = lab();
    let db = lab.company();
    let heap = Heap::create(&db, "dbo.H", columns(), None).unwrap();
    let rids: Vec<_> = (0..7).map(|n| heap.insert(&db, &row(n, 1100)).unwrap()).collect();
    let page = rids[0].page;
    assert!(rids.iter().all(|r| r.page == page), "seven rows share one page");
    heap.update(&db, rids[2], &row(2, 3000)).unwrap();
    let stub = db.page_copy(page).unwrap();
    let stub_record = engine::datapage::record(&stub, rids[2].slot).unwrap();
    assert_eq!((stub_record.len(), stub_record[0]), (9, 0x04), "a 9-byte forwarding stub");
    assert_eq!(heap.get(&db, rids[2]).unwrap(), Some(row(2, 3000)));
    let (target, back) = heap.forwarded(&db, rids[2]).unwrap().expect("the row moved");
    assert_ne!(target.page, page);
    assert_eq!(back, rids[2], "the forwarded record points back at its stub");
    assert_eq!(heap.forwarded(&db, rids[3]).unwrap(), None, "a row that never moved");
    heap.update(&db, rids[2], &row(2, 6000)).unwrap();
    assert_eq!(heap.forwarded(&db, rids[2]).unwrap().map(|(_, back)| back), Some(rids[2]));
    assert_eq!(
        heap.get(&db, rids[2]).unwrap(),
        Some(row(2, 6000)),
        "moved again: the stub was updated, not chained"
    );
    let rows = heap.scan(&db).unwrap();
    assert_eq!(ids(&rows), (0..7).collect::<Vec<_>>(), "the forwarded row is returned once");
    heap.update(&db, rids[2], &row(2, 10)).unwrap();
    assert_eq!(
        heap.get(&db, rids[2]).unwrap(),
        Some(row(2, 10)),
        "a forwarded row that shrinks stays forwarded"
    );
    assert_eq!(heap.forwarded(&db, rids[2]).unwrap().map(|(_, back)| back), Some(rids[2]));
    heap.delete(&db, rids[2]).unwrap();
    assert_eq!(heap.get(&db, rids[2]).unwrap(), None);
    assert_eq!(heap.scan(&db).unwrap().len(), 6);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn a_heap_survives_close_and_reopen_and_memory_pressure() {
    let mut lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let db = lab.company();
    let heap = Heap::create(&db, "dbo.H", columns(), None).unwrap();
    for n in 0..3000 {
        heap.insert(&db, &row(n, 500)).unwrap();
    }
    let au = heap.au_id;
    assert!(
        heap.pages(&db).unwrap().len() > lab.instance.buffer_pool.frame_count(),
        "more pages than frames"
    );
    lab.instance.waits.clear();
    assert_eq!(ids(&heap.scan(&db).unwrap()), (0..3000).collect::<Vec<_>>());
    assert!(lab.instance.waits.get("PAGEIOLATCH_SH").is_some(), "the scan read evicted pages back");
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    let heap = Heap::attach(au, "dbo.H", columns());
    assert_eq!(ids(&heap.scan(&db).unwrap()), (0..3000).collect::<Vec<_>>());
    assert!(db.check_allocation().is_empty());
}
