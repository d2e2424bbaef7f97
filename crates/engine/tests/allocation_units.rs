//! Allocation units: mixed extents only for the first eight pages and only with
//! MIXED_PAGE_ALLOCATION ON, IAM chains with one IAM page per file used and increasing sequence
//! numbers, PFS/GAM/SGAM/IAM bits, and freeing that updates every map involved.

mod common;

use common::{lab, size};
use engine::alloc::{self, MapKind, pfs};
use engine::database::FileSpec;
use engine::page::{PageHeader, PageType};

#[test]
fn mixed_page_allocation_off_by_default_gives_uniform_extents_from_the_first_page() {
    let lab = lab();
    let db = lab.company();
    assert!(!db.mixed_page_allocation());
    let unit = db.create_allocation_unit("t", None).unwrap();
    let first = db.allocate_page(unit).unwrap();
    let info = db.allocation_unit(unit).unwrap();
    assert!(info.single_pages.is_empty());
    assert_eq!(
        info.extents,
        vec![engine::units::PageId::new(1, first.page_no)],
        "the first page opens a uniform extent"
    );
    let pfs_page = db.page_copy(engine::units::PageId::new(1, 1)).unwrap();
    assert_eq!(alloc::pfs_get(&pfs_page, first.page_no), pfs::ALLOCATED);
    // The IAM page itself is a single page of a mixed extent.
    let iam = info.iam_pages[0];
    assert_eq!(alloc::pfs_get(&pfs_page, iam.page_no), pfs::IAM | pfs::MIXED | pfs::ALLOCATED);
    assert_eq!(pfs::describe(0x70), "0x70 IAM_PG MIXED_EXT ALLOCATED  0_PCT_FULL");
}

#[test]
fn with_mixed_page_allocation_on_the_first_eight_pages_are_single_pages() {
    let lab = lab();
    let db = lab.company();
    db.set_mixed_page_allocation(true).unwrap();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<_> = (0..10).map(|_| db.allocate_page(unit).unwrap()).collect();
    let info = db.allocation_unit(unit).unwrap();
    assert_eq!(info.single_pages, pages[..8].to_vec());
    assert_eq!(info.extents.len(), 1, "page nine opens the first uniform extent");
    let iam = db.page_copy(info.iam_pages[0]).unwrap();
    let header = alloc::iam_header(&iam);
    assert_eq!(header.single_page_slots.to_vec(), pages[..8].to_vec());
    let pfs_page = db.page_copy(engine::units::PageId::new(1, 1)).unwrap();
    for page in &pages[..8] {
        assert_eq!(
            alloc::pfs_get(&pfs_page, page.page_no) & (pfs::MIXED | pfs::ALLOCATED),
            pfs::MIXED | pfs::ALLOCATED
        );
    }
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

#[test]
fn iam_chain_has_one_page_per_file_with_increasing_sequence_numbers() {
    let lab = lab();
    let db = lab.company();
    db.add_files(&[FileSpec::new("Two", "Two.ndf").size(size("5MB"))], None).unwrap();
    db.add_files(&[FileSpec::new("Three", "Three.ndf").size(size("5MB"))], None).unwrap();
    let unit = db.create_allocation_unit("t", None).unwrap();
    for _ in 0..9 {
        db.allocate_extent(unit).unwrap();
    }
    let info = db.allocation_unit(unit).unwrap();
    assert_eq!(info.iam_pages.len(), 3);
    let mut covered = Vec::new();
    for (sequence, page) in info.iam_pages.iter().enumerate() {
        let buf = db.page_copy(*page).unwrap();
        let header = PageHeader::read(&buf[..]);
        assert_eq!(header.page_type, PageType::Iam as u8);
        assert_eq!(header.allocation_unit_id(), unit);
        let iam = alloc::iam_header(&buf);
        assert_eq!(iam.sequence as usize, sequence);
        let next = info.iam_pages.get(sequence + 1).copied().unwrap_or_default();
        assert_eq!(header.next_page, next, "IAM pages are chained");
        let bits = alloc::bitmap_count(&buf, 80);
        covered.push((iam.start_page.file_id, bits));
    }
    covered.sort();
    assert_eq!(
        covered,
        vec![(1, 3), (3, 3), (4, 3)],
        "three extents per file, each in its file's IAM page"
    );
}

#[test]
fn freeing_updates_every_map_and_dropping_gives_everything_back() {
    let lab = lab();
    let db = lab.company();
    db.set_mixed_page_allocation(true).unwrap();
    let free_at_start = db.file_space()[0].free_extents;
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<_> = (0..40).map(|_| db.allocate_page(unit).unwrap()).collect();
    let info = db.allocation_unit(unit).unwrap();
    let extent = info.extents[0];
    // Free every page of one uniform extent: the IAM bit clears and GAM marks it free.
    for page in pages.iter().filter(|p| p.page_no / 8 == extent.page_no / 8) {
        db.free_page(unit, *page).unwrap();
    }
    let info_after = db.allocation_unit(unit).unwrap();
    assert!(!info_after.extents.contains(&extent));
    let gam =
        db.page_copy(engine::units::PageId::new(1, alloc::map_page(0, MapKind::Gam))).unwrap();
    assert!(alloc::bitmap_get(&gam, extent.page_no / 8), "GAM: the extent is free again");
    // Free a mixed page: its extent gets an SGAM bit (a mixed extent with a free page).
    db.free_page(unit, pages[3]).unwrap();
    let sgam =
        db.page_copy(engine::units::PageId::new(1, alloc::map_page(0, MapKind::Sgam))).unwrap();
    assert!(alloc::bitmap_get(&sgam, pages[3].page_no / 8));
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    db.drop_allocation_unit(unit).unwrap();
    assert!(db.allocation_unit(unit).is_none());
    assert_eq!(db.file_space()[0].free_extents, free_at_start, "every extent came back");
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}
