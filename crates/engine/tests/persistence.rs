//! Close and reopen: every map bit, every IAM chain and every skip-target input comes back from
//! the files; a byte flipped on disk is error 824 naming the page.

mod common;

use common::{lab, size};
use engine::alloc::{self, MapKind};
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::units::PageId;
use std::os::unix::fs::FileExt;

/// Every allocation page of every data file, plus the IAM pages of `units`, as bytes.
fn map_image(db: &Database, units: &[u64]) -> Vec<(PageId, Vec<u8>)> {
    let mut pages = Vec::new();
    for file in db.file_space() {
        let primary = file.file_id == 1;
        for page_no in alloc::fixed_pages_in(0, file.size_pages, primary) {
            if page_no == 0 || (primary && page_no == alloc::BOOT_PAGE) {
                continue;
            }
            let id = PageId::new(file.file_id, page_no);
            pages.push((id, db.page_copy(id).unwrap()[..60].to_vec()));
            pages.push((id, db.page_copy(id).unwrap()[64..].to_vec()));
        }
    }
    for unit in units {
        for iam in db.allocation_unit(*unit).unwrap().iam_pages {
            pages.push((iam, db.page_copy(iam).unwrap()[64..].to_vec()));
        }
    }
    pages
}

fn build(lab: &common::Lab) -> (Database, Vec<u64>) {
    let db = lab.company();
    db.set_mixed_page_allocation(true).unwrap();
    db.add_filegroup("FG2").unwrap();
    db.add_files(&[FileSpec::new("Second", "Second.ndf").size(size("5MB"))], None).unwrap();
    db.add_files(&[FileSpec::new("Big", "Big.ndf").size(size("40MB"))], Some("FG2")).unwrap();
    let a = db.create_allocation_unit("dbo.A", None).unwrap();
    let b = db.create_allocation_unit("dbo.B", Some("FG2")).unwrap();
    let mut pages = Vec::new();
    for _ in 0..60 {
        pages.push(db.allocate_page(a).unwrap());
        db.allocate_page(b).unwrap();
    }
    for page in pages.iter().skip(2).step_by(4) {
        db.free_page(a, *page).unwrap();
    }
    for _ in 0..20 {
        db.allocate_extent(b).unwrap();
    }
    (db, vec![a, b])
}

#[test]
fn close_and_reopen_restores_every_map_bit_and_skip_target_input() {
    let mut lab = lab();
    let (db, units) = build(&lab);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    let image = map_image(&db, &units);
    let space = db.file_space();
    let groups = db.filegroups();
    let targets = db.skip_targets("PRIMARY").unwrap();
    let unit_a = db.allocation_unit(units[0]).unwrap();
    let unit_b = db.allocation_unit(units[1]).unwrap();
    // A's first eight pages came from mixed extents; two of them (pages 2 and 6) were freed.
    assert_eq!(unit_a.single_pages.len(), 6);
    assert!(!unit_b.iam_pages.is_empty());
    db.close().unwrap();

    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    assert_eq!(map_image(&db, &units), image);
    assert_eq!(db.file_space(), space);
    assert_eq!(db.filegroups(), groups);
    assert_eq!(db.skip_targets("PRIMARY").unwrap(), targets);
    assert_eq!(db.allocation_unit(units[0]).unwrap(), unit_a);
    assert_eq!(db.allocation_unit(units[1]).unwrap(), unit_b);
    assert!(db.mixed_page_allocation());
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    // The reopened database keeps allocating where it left off.
    db.allocate_page(units[0]).unwrap();
    assert!(db.check_allocation().is_empty());
}

#[test]
fn a_flipped_byte_on_disk_is_error_824_naming_the_page() {
    let mut lab = lab();
    let (db, _) = build(&lab);
    db.close().unwrap();
    let path = lab.path("Second.ndf");
    let raw = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let gam_offset = u64::from(alloc::map_page(0, MapKind::Gam)) * 8192;
    let mut byte = [0u8; 1];
    raw.read_exact_at(&mut byte, gam_offset + 300).unwrap();
    raw.write_all_at(&[byte[0] ^ 0x10], gam_offset + 300).unwrap();
    lab.restart();
    let error = Database::open(&lab.instance, &lab.path("Company_data.mdf")).err().expect("824");
    assert_eq!((error.number, error.severity), (824, 24));
    assert!(error.message.contains("incorrect checksum"), "{}", error.message);
    assert!(
        error.message.contains("of page (3:2) in database ID 5 at offset 0x00000000004000"),
        "{}",
        error.message
    );
    assert!(error.message.contains(&format!("in file '{}'", path.display())), "{}", error.message);
    // The failed open released the name: after a repair the database opens again.
    raw.write_all_at(&byte, gam_offset + 300).unwrap();
    Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
}

#[test]
fn a_page_written_at_the_wrong_place_is_an_incorrect_pageid() {
    let mut lab = lab();
    let (db, units) = build(&lab);
    let iam = db.allocation_unit(units[1]).unwrap().iam_pages[0];
    db.close().unwrap();
    let path = lab.path(if iam.file_id == 1 {
        "Company_data.mdf"
    } else if iam.file_id == 3 {
        "Second.ndf"
    } else {
        "Big.ndf"
    });
    let raw = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    // Copy the SGAM page over the IAM page: a valid page, but not the one that belongs there.
    let mut sgam = vec![0u8; 8192];
    raw.read_exact_at(&mut sgam, 3 * 8192).unwrap();
    raw.write_all_at(&sgam, u64::from(iam.page_no) * 8192).unwrap();
    lab.restart();
    let error = Database::open(&lab.instance, &lab.path("Company_data.mdf")).err().expect("824");
    assert_eq!(error.number, 824);
    let expected = format!(
        "incorrect pageid (expected {}:{}; actual {}:3)",
        iam.file_id, iam.page_no, iam.file_id
    );
    assert!(error.message.contains(&expected), "{}", error.message);
}

#[test]
fn the_allocation_check_catches_a_gam_bit_that_disagrees_with_an_iam_page() {
    let mut lab = lab();
    let (db, units) = build(&lab);
    let owned = db.allocation_unit(units[1]).unwrap().extents[0];
    db.close().unwrap();
    let path = lab.path(if owned.file_id == 3 {
        "Second.ndf"
    } else if owned.file_id == 4 {
        "Big.ndf"
    } else {
        "Company_data.mdf"
    });
    let raw = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    let mut gam = engine::page::new_page_buf();
    raw.read_exact_at(&mut gam[..], 2 * 8192).unwrap();
    alloc::bitmap_set(&mut gam, owned.page_no / 8, true);
    engine::page::seal(&mut gam);
    raw.write_all_at(&gam[..], 2 * 8192).unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    let problems = db.check_allocation();
    let expected = format!(
        "Table error: Object ID 0, index ID -1, partition ID 0, alloc unit ID 0 (type Unknown), page ({}:2). Test (extent {owned} is owned or has allocated pages but is free in the GAM) failed. Values are 1 and 0.",
        owned.file_id
    );
    assert!(problems.iter().any(|p| p.number == 8939 && p.message == expected), "{problems:?}");
}

#[test]
fn a_file_truncated_by_the_operating_system_is_5125() {
    let mut lab = lab();
    let (db, _) = build(&lab);
    db.close().unwrap();
    let raw = std::fs::OpenOptions::new().write(true).open(lab.path("Second.ndf")).unwrap();
    raw.set_len(320 * 8192).unwrap();
    lab.restart();
    let error = Database::open(&lab.instance, &lab.path("Company_data.mdf")).err().expect("5125");
    assert_eq!((error.number, error.severity), (5125, 24));
    assert!(
        error.message.ends_with("Expected size is 5120 KB but actual size is 2560 KB."),
        "{}",
        error.message
    );
}

#[test]
fn log_files_keep_their_modified_size_and_settings() {
    let mut lab = lab();
    let db = lab.company();
    lab.instance.waits.clear();
    db.modify_file("Company_log", engine::database::FileChange::Size(size("3MB"))).unwrap();
    assert!(
        lab.instance.waits.get(engine::waits::wait_type::PREEMPTIVE_OS_WRITEFILEGATHER).is_some(),
        "log growth is zeroed"
    );
    assert_eq!(
        db.modify_file("Company_log", engine::database::FileChange::Size(size("2MB")))
            .unwrap_err()
            .number,
        5039
    );
    db.modify_file(
        "Company_log",
        engine::database::FileChange::Growth(engine::units::SizeSpec::Percent(10)),
    )
    .unwrap();
    db.modify_file(
        "Company_log",
        engine::database::FileChange::MaxSize(engine::database::MaxSize::Kb(100 * 1024)),
    )
    .unwrap();
    assert_eq!(db.log_files(), vec![(2, "Company_log".to_string(), 384)]);
    db.close().unwrap();
    assert_eq!(std::fs::metadata(lab.path("Company_log.ldf")).unwrap().len(), 384 * 8192);
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    assert_eq!(db.log_files(), vec![(2, "Company_log".to_string(), 384)]);
    assert_eq!(
        db.modify_file("Company_log", engine::database::FileChange::Size(size("200MB")))
            .unwrap_err()
            .number,
        5040
    );
}

/// A new file survives a crash only once its directory is synced: CREATE DATABASE syncs the
/// directory of every file it created (each directory once) before its boot page names them,
/// and ADD FILE does the same for the files it adds.
#[test]
fn new_files_have_their_directories_synced() {
    let lab = lab();
    let other_dir = lab.path("elsewhere");
    std::fs::create_dir_all(&other_dir).expect("second directory");
    let spec = DatabaseSpec {
        name: "Synced".into(),
        primary: vec![
            FileSpec::new("Synced_1", "Synced_1.mdf").size(size("3MB")),
            FileSpec::new("Synced_2", other_dir.join("Synced_2.ndf")).size(size("3MB")),
            FileSpec::new("Synced_3", "Synced_3.ndf").size(size("3MB")),
        ],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("Synced_log", "Synced_log.ldf").size(size("1MB"))],
        mixed_page_allocation: false,
    };
    let before = lab.faults.lock().counters.dir_syncs;
    let db = Database::create(&lab.instance, &spec).expect("create");
    assert_eq!(lab.faults.lock().counters.dir_syncs - before, 2, "two directories, once each");
    let before = lab.faults.lock().counters.dir_syncs;
    db.add_files(&[FileSpec::new("Synced_4", other_dir.join("Synced_4.ndf"))], None)
        .expect("add file");
    assert_eq!(lab.faults.lock().counters.dir_syncs - before, 1);
}

/// One instance at a time in a data directory: a second start there, in this process or
/// another, is refused (OS error 32's text, with the holder's process id) before it touches a
/// file, and it works once the first instance has released the directory. Two instances on one
/// directory each wrote pages and log that the other did not know of.
#[test]
fn a_second_instance_on_the_same_data_directory_is_refused_until_the_first_releases_it() {
    let lab = lab();
    let db = lab.company();
    let errorlog_before = std::fs::read_to_string(lab.path("ERRORLOG")).unwrap();
    let config = lab.instance.config.clone();
    let error = engine::instance::Instance::start(config.clone()).err().expect("refused");
    assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy, "{error}");
    let text = error.to_string();
    assert!(text.contains("because it is being used by another process"), "{text}");
    assert!(text.contains(&format!("extentdb process {}", std::process::id())), "{text}");
    let errorlog_after = std::fs::read_to_string(lab.path("ERRORLOG")).unwrap();
    assert_eq!(errorlog_after, errorlog_before, "the refused start wrote nothing");

    db.close().unwrap();
    lab.instance.release_data_directory();
    let second = engine::instance::Instance::start(config).expect("starts once released");
    let db = Database::open(&second, &lab.path("Company_data.mdf")).expect("opens");
    assert!(db.check_allocation().is_empty());
}
