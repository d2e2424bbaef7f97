//! Autogrowth and instant file initialisation: growth settings, AUTOGROW_ALL_FILES, MAXSIZE and
//! 1105, zeroing that really writes zeros (and is waited on as PREEMPTIVE_OS_WRITEFILEGATHER),
//! IFI that writes nothing, and the TF 3004 lines.

mod common;

use common::{lab, lab_with, size};
use engine::database::{Database, DatabaseSpec, FileChange, FileSpec, MaxSize};
use engine::traceflags::{TF_FILE_ZEROING_TRACE, TF_TRACE_TO_ERRORLOG};
use engine::units::SizeSpec;
use engine::waits::wait_type::PREEMPTIVE_OS_WRITEFILEGATHER;
use std::os::unix::fs::FileExt;

fn one_file_db(lab: &common::Lab, data: FileSpec) -> Database {
    let spec = DatabaseSpec {
        name: "Grow".into(),
        primary: vec![data],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("Grow_log", "Grow_log.ldf").size(size("1MB"))],
        mixed_page_allocation: false,
    };
    Database::create(&lab.instance, &spec).unwrap()
}

#[test]
fn autogrowth_follows_its_settings_until_maxsize_then_1105() {
    let lab = lab();
    let data = FileSpec::new("Grow_data", "Grow_data.mdf")
        .size(size("3MB"))
        .growth(SizeSpec::Kb(1024))
        .max_size(MaxSize::Kb(5 * 1024));
    let db = one_file_db(&lab, data);
    let unit = db.create_allocation_unit("dbo.T", None).unwrap();
    let free_at_start = db.file_space()[0].free_extents;
    assert_eq!(free_at_start, 46, "3 MB = 48 extents, less extents 0 and 1");
    let mut allocated = 0;
    let error = loop {
        match db.allocate_extent(unit) {
            Ok(_) => allocated += 1,
            Err(error) => break error,
        }
    };
    // 3 MB + 1 MB + 1 MB = 5 MB = MAXSIZE: 80 extents less the two system extents.
    assert_eq!(allocated, 78);
    let sizes: Vec<(u32, u32)> =
        db.growth_events().iter().map(|g| (g.old_size_pages, g.new_size_pages)).collect();
    assert_eq!(sizes, vec![(384, 512), (512, 640)]);
    assert_eq!(error.number, 1105);
    assert_eq!(error.severity, 17);
    assert_eq!(
        error.message,
        "Could not allocate space for object 'dbo.T' in database 'Grow' because the 'PRIMARY' filegroup is full. \
         Create disk space by deleting unneeded files, dropping objects in the filegroup, adding additional files \
         to the filegroup, or setting autogrowth on for existing files in the filegroup."
    );
    let log = lab.errorlog_texts();
    assert!(log.contains(&"Error: 1105, Severity: 17, State: 2.".to_string()));
    // The failed allocation left no trace.
    assert_eq!(db.file_space()[0].size_pages, 640);
    assert_eq!(db.file_space()[0].free_extents, 0);
    assert_eq!(db.allocation_unit(unit).unwrap().extents.len(), 78);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn percent_growth_and_growth_zero() {
    let lab = lab();
    let data = FileSpec::new("Grow_data", "Grow_data.mdf")
        .size(size("10MB"))
        .growth(SizeSpec::Percent(50));
    let db = one_file_db(&lab, data);
    let unit = db.create_allocation_unit("t", None).unwrap();
    for _ in 0..159 {
        db.allocate_extent(unit).unwrap();
    }
    assert_eq!(db.growth_events()[0].new_size_pages, 1920, "10 MB + 50 % = 15 MB");
    db.modify_file("Grow_data", FileChange::Growth(SizeSpec::Kb(0))).unwrap();
    while db.file_space()[0].free_extents > 0 {
        db.allocate_extent(unit).unwrap();
    }
    assert_eq!(db.allocate_extent(unit).unwrap_err().number, 1105, "FILEGROWTH = 0 never grows");
}

#[test]
fn single_file_growth_grows_one_file_and_autogrow_all_files_grows_every_file() {
    // (AUTOGROW_ALL_FILES on the filegroup, trace flag 1117 on the instance)
    for (all_files, tf_1117) in [(false, false), (true, false), (false, true)] {
        let lab = lab();
        if tf_1117 {
            lab.instance.trace_flags.on(engine::traceflags::TF_AUTOGROW_ALL_FILES);
        }
        let db = lab.company();
        db.add_files(&[FileSpec::new("Second", "Second.ndf").size(size("5MB"))], None).unwrap();
        db.set_autogrow_all_files("PRIMARY", all_files).unwrap();
        let all_files = all_files || tf_1117;
        let unit = db.create_allocation_unit("t", None).unwrap();
        for _ in 0..(78 + 79 + 1) {
            db.allocate_extent(unit).unwrap();
        }
        let grown: Vec<u16> = db.growth_events().iter().map(|g| g.file_id).collect();
        if all_files {
            assert_eq!(grown.len(), 2, "AUTOGROW_ALL_FILES grows both files: {grown:?}");
        } else {
            assert_eq!(grown.len(), 1, "AUTOGROW_SINGLE_FILE grows one file: {grown:?}");
        }
        assert!(db.check_allocation().is_empty());
    }
}

#[test]
fn without_ifi_the_new_range_is_written_with_zeros_and_waited_on() {
    let lab = lab_with(|config| config.ifi_enabled = false);
    lab.instance.trace_flags.on(TF_FILE_ZEROING_TRACE);
    lab.instance.trace_flags.on(TF_TRACE_TO_ERRORLOG);
    assert!(
        lab.errorlog_texts()
            .iter()
            .any(|l| l.starts_with("Database Instant File Initialization: disabled."))
    );
    let db = lab.company();
    let path = lab.path("Company_data.mdf");
    // Leave a mark past the end of the file; the growth must overwrite it with zeros.
    let raw = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    raw.write_all_at(&[0xEE; 4096], 640 * 8192 + 100 * 8192).unwrap();
    lab.instance.waits.clear();
    let written_before = lab.faults.lock().counters.bytes_written;
    db.modify_file("Company_data", FileChange::Size(size("10MB"))).unwrap();
    let written = lab.faults.lock().counters.bytes_written - written_before;
    assert!(written >= 640 * 8192, "5 MB of zeros written, saw {written} bytes");
    let wait =
        lab.instance.waits.get(PREEMPTIVE_OS_WRITEFILEGATHER).expect("the zeroing was waited on");
    assert_eq!(wait.waiting_tasks_count, 1);
    assert!(lab.instance.waits.total_us(PREEMPTIVE_OS_WRITEFILEGATHER) > 0);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 1280 * 8192);
    let mark = &bytes[(740 * 8192)..(740 * 8192 + 4096)];
    assert!(mark.iter().all(|b| *b == 0), "the old bytes in the grown range were zeroed");
    let log = lab.errorlog_texts();
    let shown = path.display().to_string();
    assert!(log.contains(&format!("Zeroing {shown} from page 640 to 1280 (0x500000 to 0xa00000)")));
    assert!(log.contains(&format!("Zeroing completed on {shown}")));
}

#[test]
fn with_ifi_a_growth_writes_only_the_new_allocation_pages() {
    let lab = lab();
    assert!(
        lab.errorlog_texts()
            .iter()
            .any(|l| l.starts_with("Database Instant File Initialization: enabled."))
    );
    let db = lab.company();
    lab.instance.waits.clear();
    let before = lab.faults.lock().counters;
    db.modify_file("Company_data", FileChange::Size(size("100MB"))).unwrap();
    let after = lab.faults.lock().counters;
    let written = after.bytes_written - before.bytes_written;
    // New PFS page 8088, rewritten GAM/SGAM, the header and the log records of those page
    // changes: about a hundred KB, not 95 MB of zeros.
    assert!(written <= 256 * 1024, "IFI growth wrote {written} bytes");
    assert_eq!(after.bytes_allocated - before.bytes_allocated, (12_800 - 640) * 8192);
    assert!(lab.instance.waits.get(PREEMPTIVE_OS_WRITEFILEGATHER).is_none());
    assert_eq!(db.file_space()[0].size_pages, 12_800);
}

#[test]
fn trace_flag_1806_disables_ifi() {
    let lab = lab();
    assert!(lab.instance.ifi_enabled());
    lab.instance.trace_flags.on(engine::traceflags::TF_DISABLE_IFI);
    assert!(!lab.instance.ifi_enabled());
    let db = lab.company();
    lab.instance.waits.clear();
    db.modify_file("Company_data", FileChange::Size(size("6MB"))).unwrap();
    assert!(lab.instance.waits.get(PREEMPTIVE_OS_WRITEFILEGATHER).is_some());
}

#[test]
fn modify_file_checks_sizes() {
    let lab = lab();
    let db = lab.company();
    assert_eq!(
        db.modify_file("Company_data", FileChange::Size(size("5MB"))).unwrap_err().number,
        5039
    );
    db.modify_file("Company_data", FileChange::MaxSize(MaxSize::Kb(8 * 1024))).unwrap();
    assert_eq!(
        db.modify_file("Company_data", FileChange::Size(size("9MB"))).unwrap_err().number,
        5040
    );
    assert_eq!(
        db.modify_file("Company_data", FileChange::MaxSize(MaxSize::Kb(4 * 1024)))
            .unwrap_err()
            .number,
        5103
    );
    assert_eq!(db.modify_file("nope", FileChange::Size(size("9MB"))).unwrap_err().number, 5041);
    assert_eq!(
        db.modify_file("Company_data", FileChange::Growth(size("9MB"))).unwrap_err().number,
        5169
    );
    db.modify_file("Company_data", FileChange::Size(size("8MB"))).unwrap();
    assert_eq!(db.file_space()[0].size_pages, 1024);
    assert!(!db.growth_events()[0].is_automatic);
}
