//! Bad file specifications get SQL Server's errors and leave nothing behind: no file on disk,
//! no catalog entry. Also ADD/REMOVE FILE, filegroups and file ids.

mod common;

use common::{lab, size};
use engine::database::{Database, DatabaseSpec, FileSpec, FilegroupSpec, MaxSize};

fn spec_with(primary: FileSpec) -> DatabaseSpec {
    DatabaseSpec {
        name: "Bad".into(),
        primary: vec![primary],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("Bad_log", "Bad_log.ldf").size(size("1MB"))],
        mixed_page_allocation: false,
    }
}

#[test]
fn bad_create_database_specs_get_their_errors_and_leave_nothing() {
    let lab = lab();
    let cases: Vec<(DatabaseSpec, i32)> = vec![
        (spec_with(FileSpec::new("d", "d.mdf").size(size("2MB"))), 1803),
        (
            spec_with(FileSpec::new("d", "d.mdf").size(size("5MB")).max_size(MaxSize::Kb(4096))),
            5103,
        ),
        (
            spec_with(
                FileSpec::new("d", "d.mdf")
                    .size(size("5MB"))
                    .max_size(MaxSize::Kb(6144))
                    .growth(size("10MB")),
            ),
            5169,
        ),
        (spec_with(FileSpec::new("d", "no/such/dir/d.mdf").size(size("5MB"))), 5123),
        (spec_with(FileSpec::new("Bad_log", "d.mdf").size(size("5MB"))), 1828),
        (spec_with(FileSpec::new("d", "Bad_log.ldf").size(size("5MB"))), 5170),
        (
            DatabaseSpec {
                filegroups: vec![FilegroupSpec {
                    name: "FG".into(),
                    is_default: false,
                    files: vec![FileSpec::new("s", "s.ndf").size(size("256KB"))],
                }],
                ..spec_with(FileSpec::new("d", "d.mdf").size(size("5MB")))
            },
            5174,
        ),
    ];
    for (spec, number) in cases {
        let error = Database::create(&lab.instance, &spec)
            .err()
            .unwrap_or_else(|| panic!("{number} expected"));
        assert_eq!(error.number, number, "{error}");
        assert!(lab.files_on_disk().is_empty(), "error {number} left {:?}", lab.files_on_disk());
    }
    // A failing later file removes the files created before it.
    let late = DatabaseSpec {
        logs: vec![FileSpec::new("Bad_log", "no/dir/Bad_log.ldf").size(size("1MB"))],
        ..spec_with(FileSpec::new("d", "d.mdf").size(size("5MB")))
    };
    assert_eq!(Database::create(&lab.instance, &late).err().unwrap().number, 5123);
    assert!(lab.files_on_disk().is_empty(), "{:?}", lab.files_on_disk());
    // And the name is free again.
    Database::create(&lab.instance, &spec_with(FileSpec::new("d", "d.mdf").size(size("5MB"))))
        .unwrap();
}

#[test]
fn an_existing_file_is_never_overwritten() {
    let lab = lab();
    std::fs::write(lab.path("taken.mdf"), b"somebody's data").unwrap();
    let error = Database::create(
        &lab.instance,
        &spec_with(FileSpec::new("d", "taken.mdf").size(size("5MB"))),
    )
    .err()
    .unwrap();
    assert_eq!(error.number, 5170);
    assert_eq!(std::fs::read(lab.path("taken.mdf")).unwrap(), b"somebody's data");
    assert_eq!(lab.files_on_disk(), vec!["taken.mdf".to_string()]);
}

#[test]
fn a_second_database_of_the_same_name_is_1801() {
    let lab = lab();
    let _db = lab.company();
    let spec = DatabaseSpec::simple("Company", size("5MB"));
    assert_eq!(Database::create(&lab.instance, &spec).err().unwrap().number, 1801);
}

#[test]
fn file_ids_filegroups_and_bad_alter_specs() {
    let lab = lab();
    let db = lab.company();
    let before = lab.files_on_disk();
    let bad: Vec<(Vec<FileSpec>, Option<&str>, i32)> = vec![
        (vec![FileSpec::new("Company_data", "x.ndf")], None, 1828),
        (vec![FileSpec::new("x", "Company_data.mdf")], None, 5170),
        (vec![FileSpec::new("x", "x.ndf"), FileSpec::new("y", "x.ndf")], None, 5170),
        (vec![FileSpec::new("x", "x.ndf").size(size("100KB"))], None, 5174),
        (vec![FileSpec::new("x", "x.ndf")], Some("NoSuchGroup"), 5014),
        (vec![FileSpec::new("x", "x.ndf"), FileSpec::new("y", "missing/y.ndf")], None, 5123),
    ];
    for (files, fg, number) in bad {
        assert_eq!(db.add_files(&files, fg).unwrap_err().number, number);
        assert_eq!(lab.files_on_disk(), before, "error {number} left files behind");
        assert_eq!(db.file_space().len(), 1);
    }
    db.add_filegroup("Archive").unwrap();
    assert_eq!(db.add_filegroup("archive").unwrap_err().number, 5035);
    assert_eq!(db.set_default_filegroup("Archive").unwrap_err().number, 5050);
    db.add_files(&[FileSpec::new("Second", "Second.ndf").size(size("1MB"))], None).unwrap();
    db.add_log_files(&[FileSpec::new("Log2", "Log2.ldf").size(size("1MB"))]).unwrap();
    db.add_files(&[FileSpec::new("Arch1", "Arch1.ndf").size(size("1MB"))], Some("Archive"))
        .unwrap();
    db.set_default_filegroup("Archive").unwrap();
    let ids: Vec<(u16, String)> =
        db.file_space().into_iter().map(|f| (f.file_id, f.logical_name)).collect();
    assert_eq!(ids, vec![(1, "Company_data".into()), (3, "Second".into()), (5, "Arch1".into())]);
    let logs: Vec<u16> = db.log_files().into_iter().map(|l| l.0).collect();
    assert_eq!(logs, vec![2, 4]);
    // New allocation units go to the DEFAULT filegroup.
    let unit = db.create_allocation_unit("t", None).unwrap();
    assert_eq!(db.allocate_extent(unit).unwrap().file_id, 5);
    assert_eq!(db.remove_filegroup("Archive").unwrap_err().number, 5042);
    assert_eq!(db.remove_file("Arch1").unwrap_err().number, 5042);
    assert_eq!(db.remove_file("Company_data").unwrap_err().number, 5020);
    assert_eq!(db.remove_file("Company_log").unwrap_err().number, 5020);
    assert_eq!(db.remove_file("nothing").unwrap_err().number, 5009);
    db.remove_file("Second").unwrap();
    db.remove_file("Log2").unwrap();
    assert!(!lab.path("Second.ndf").exists());
    assert!(!lab.path("Log2.ldf").exists());
    db.drop_allocation_unit(unit).unwrap();
    assert_eq!(
        db.remove_file("Arch1").unwrap_err().number,
        5031,
        "the only file of the DEFAULT filegroup"
    );
    db.set_default_filegroup("PRIMARY").unwrap();
    db.remove_file("Arch1").unwrap();
    db.remove_filegroup("Archive").unwrap();
    assert!(db.check_allocation().is_empty());
}

#[test]
fn log_on_omitted_makes_a_quarter_size_log() {
    let lab = lab();
    let spec = DatabaseSpec { logs: Vec::new(), ..DatabaseSpec::simple("Quarter", size("8MB")) };
    let db = Database::create(&lab.instance, &spec).unwrap();
    assert_eq!(db.log_files(), vec![(2, "Quarter_log".to_string(), 256)]);
}
