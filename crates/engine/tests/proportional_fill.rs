//! Seed 000 on the engine: skip targets from real GAM pages, the TF 1165 errorlog lines,
//! recalculation after 8,192 allocations, shares that follow the skip targets, `-E` runs, and
//! the FGCB_PRP_FILL lock that is skipped while every skip target is 1.

mod common;

use common::{lab, lab_with, per_file, size};
use engine::database::FileSpec;
use engine::filegroup::FGCB_PRP_FILL;
use engine::traceflags::{TF_PROPORTIONAL_FILL_TRACE, TF_TRACE_TO_ERRORLOG};

#[test]
fn seed_000_free_extents_skip_targets_and_errorlog_lines() {
    let lab = lab();
    lab.instance.trace_flags.on(TF_PROPORTIONAL_FILL_TRACE);
    lab.instance.trace_flags.on(TF_TRACE_TO_ERRORLOG);
    let db = lab.company();
    // Our 5 MB primary file has 78 free extents (extent 0: allocation pages; extent 1: the boot
    // page). SQL Server's had 44 because model's catalog filled 34 more; fill those 34 here.
    assert_eq!(db.file_space()[0].free_extents, 78);
    let catalog = db.create_allocation_unit("sys.catalog", None).unwrap();
    for _ in 0..34 {
        db.allocate_extent(catalog).unwrap();
    }
    assert_eq!(db.file_space()[0].free_extents, 44);

    db.add_files(&[FileSpec::new("SecondFile", "SecondFile.ndf").size(size("5MB"))], None).unwrap();
    let second = db.file_space().into_iter().find(|f| f.file_id == 3).unwrap();
    assert_eq!(second.free_extents, 79, "a new 5 MB secondary file has 79 free extents");
    assert_eq!(db.skip_targets("PRIMARY").unwrap(), vec![(1, 1), (3, 1)]);

    db.add_files(&[FileSpec::new("ThirdFile", "ThirdFile.ndf").size(size("250MB"))], None).unwrap();
    let third = db.file_space().into_iter().find(|f| f.file_id == 4).unwrap();
    // 4,000 extents less extent 0 and the extents of PFS pages 8088, 16176 and 24264. The seed
    // shows 3,995: one extent more is used there, which no public source explains (reference §11).
    assert_eq!(third.free_extents, 3996);
    assert_eq!(db.skip_targets("PRIMARY").unwrap(), vec![(1, 90), (4, 1), (3, 50)]);

    let log = lab.errorlog_texts();
    let expected = [
        "Proportional Fill Recalculation Starting for DB Company with m_cAllocs 8192.",
        "Proportional Fill Recalculation Completed for DB Company new m_cAllocs 8192, most free file is file 4.",
        "\tFile [Company_data] (1) has 44 free extents and skip target of 90.",
        "\tFile [ThirdFile] (4) has 3996 free extents and skip target of 1.",
        "\tFile [SecondFile] (3) has 79 free extents and skip target of 50.",
    ];
    let at = log.iter().position(|line| line == expected[1]).expect("the completed line is logged");
    assert_eq!(&log[at - 1..at + 4], &expected);
    assert!(log.contains(
        &"Proportional Fill Recalculation Starting for DB Company with m_cAllocs 0.".to_string()
    ));
    assert!(log.contains(
        &"\tFile [Company_data] (1) has 78 free extents and skip target of 1.".to_string()
    ));
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

#[test]
fn without_trace_flag_3605_nothing_is_logged() {
    let lab = lab();
    lab.instance.trace_flags.on(TF_PROPORTIONAL_FILL_TRACE);
    let _db = lab.company();
    assert!(!lab.errorlog_texts().iter().any(|l| l.starts_with("Proportional Fill")));
}

#[test]
fn shares_follow_skip_targets_and_the_lock_is_taken_only_when_they_differ() {
    let lab = lab();
    let db = lab.company();
    db.add_files(&[FileSpec::new("Big", "Big.ndf").size(size("15MB"))], None).unwrap();
    // Primary 78 free, Big 239 free: targets 3 and 1.
    assert_eq!(db.skip_targets("PRIMARY").unwrap(), vec![(1, 3), (3, 1)]);
    let before = lab.instance.spinlocks.acquires(FGCB_PRP_FILL);
    let unit = db.create_allocation_unit("t", None).unwrap();
    let extents: Vec<_> = (0..200).map(|_| db.allocate_extent(unit).unwrap()).collect();
    let counts = per_file(&extents);
    assert_eq!(counts[&1], 50, "one extent per three visits");
    assert_eq!(counts[&3], 150);
    assert!(lab.instance.spinlocks.acquires(FGCB_PRP_FILL) >= before + 200);

    let equal = lab_with(|_| {});
    let db = equal.company();
    db.add_files(&[FileSpec::new("Same", "Same.ndf").size(size("5MB"))], None).unwrap();
    assert_eq!(db.skip_targets("PRIMARY").unwrap(), vec![(1, 1), (3, 1)]);
    let unit = db.create_allocation_unit("t", None).unwrap();
    let before = equal.instance.spinlocks.acquires(FGCB_PRP_FILL);
    let extents: Vec<_> = (0..100).map(|_| db.allocate_extent(unit).unwrap()).collect();
    assert_eq!(
        equal.instance.spinlocks.acquires(FGCB_PRP_FILL),
        before,
        "all targets 1: no FGCB_PRP_FILL"
    );
    let counts = per_file(&extents);
    assert_eq!((counts[&1], counts[&3]), (50, 50), "plain round robin");
}

#[test]
fn recalculation_after_8192_allocations() {
    let lab = lab();
    lab.instance.trace_flags.on(TF_PROPORTIONAL_FILL_TRACE);
    lab.instance.trace_flags.on(TF_TRACE_TO_ERRORLOG);
    let db = lab.company();
    db.add_files(&[FileSpec::new("Wide", "Wide.ndf").size(size("600MB"))], None).unwrap();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let starting = |lab: &common::Lab| {
        lab.errorlog_texts()
            .iter()
            .filter(|l| l.starts_with("Proportional Fill Recalculation Starting"))
            .count()
    };
    let before = starting(&lab);
    for _ in 0..8191 {
        db.allocate_extent(unit).unwrap();
    }
    assert_eq!(starting(&lab), before, "no recalculation before the 8,192nd allocation");
    db.allocate_extent(unit).unwrap();
    assert_eq!(starting(&lab), before + 1, "recalculated at the 8,192nd allocation");
    assert!(db.check_allocation().is_empty());
}

#[test]
fn e_option_allocates_runs_of_64_extents_per_file() {
    let lab = lab_with(|config| config.startup_e = true);
    assert!(lab.errorlog_texts().contains(&"\t -E".to_string()));
    let db = lab.company();
    db.add_files(&[FileSpec::new("Two", "Two.ndf").size(size("5MB"))], None).unwrap();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let files: Vec<u16> = (0..128).map(|_| db.allocate_extent(unit).unwrap().file_id).collect();
    let runs: Vec<(u16, usize)> =
        files.chunk_by(|a, b| a == b).map(|run| (run[0], run.len())).collect();
    assert_eq!(runs[0].1, 64, "first run is 64 extents: {runs:?}");
    assert_ne!(runs[0].0, runs[1].0);
}

#[test]
fn concurrent_allocation_keeps_the_maps_consistent() {
    let lab = lab();
    let db = std::sync::Arc::new(lab.company());
    db.add_files(&[FileSpec::new("Two", "Two.ndf").size(size("20MB"))], None).unwrap();
    let units: Vec<u64> =
        (0..4).map(|i| db.create_allocation_unit(&format!("t{i}"), None).unwrap()).collect();
    let threads: Vec<_> = units
        .iter()
        .map(|unit| {
            let (db, unit) = (db.clone(), *unit);
            std::thread::spawn(move || {
                let mut pages = Vec::new();
                for _ in 0..300 {
                    pages.push(db.allocate_page(unit).unwrap());
                }
                for page in pages.iter().step_by(3) {
                    db.free_page(unit, *page).unwrap();
                }
                pages.len()
            })
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), 300);
    }
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}
