//! Injected faults in the middle of a growth (ENOSPC, a failed fsync, a torn write) leave the
//! database consistent, in memory and after reopening.

mod common;

use common::{lab_with, size};
use engine::database::{Database, FileChange};

/// Fills the primary file so that the next extent needs a growth, then arms `arm`.
fn grow_under_fault(arm: impl FnOnce(&mut engine::io::FaultPlan), ifi: bool) {
    let mut lab = lab_with(|config| config.ifi_enabled = ifi);
    let db = lab.company();
    let unit = db.create_allocation_unit("dbo.T", None).unwrap();
    for _ in 0..78 {
        db.allocate_extent(unit).unwrap();
    }
    db.checkpoint().unwrap();
    let space_before = db.file_space();
    let disk_size_before = std::fs::metadata(lab.path("Company_data.mdf")).unwrap().len();
    // The growth's faults hit the data file; the log has its own fault tests (tests/log.rs).
    lab.faults.lock().only_paths_ending = Some(".mdf".into());
    arm(&mut lab.faults.lock());
    let error = db.allocate_extent(unit).unwrap_err();
    assert_eq!(error.number, 1105, "{error}");
    assert!(
        lab.errorlog_texts()
            .iter()
            .any(|l| l.starts_with("Error: 5149") || l.starts_with("Error: 823"))
    );
    assert_eq!(db.file_space(), space_before, "nothing changed");
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
    assert_eq!(
        std::fs::metadata(lab.path("Company_data.mdf")).unwrap().len(),
        disk_size_before,
        "file truncated back"
    );
    assert!(db.growth_events().is_empty());
    // Once the disk has room again (the other faults fire once), the same allocation succeeds.
    lab.faults.lock().enospc_after_bytes = None;
    db.allocate_extent(unit).unwrap();
    let grown = db.file_space();
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    assert_eq!(db.file_space(), grown);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

#[test]
fn enospc_while_zeroing_a_growth() {
    grow_under_fault(|plan| plan.enospc_after_bytes = Some(3 << 20), false);
}

#[test]
fn enospc_while_allocating_a_growth_with_ifi() {
    grow_under_fault(|plan| plan.enospc_after_bytes = Some(1 << 20), true);
}

#[test]
fn failed_fsync_during_a_growth() {
    grow_under_fault(|plan| plan.fail_sync_after = Some(0), true);
}

#[test]
fn failed_fsync_after_zeroing() {
    grow_under_fault(|plan| plan.fail_sync_after = Some(0), false);
}

#[test]
fn torn_allocation_page_write_during_a_growth() {
    grow_under_fault(|plan| plan.tear_write_after = Some((1, 512)), true);
}

#[test]
fn failed_header_write_during_a_growth() {
    // Writes of a growth with IFI: the new PFS page, GAM, SGAM, then the header. Fail the header.
    grow_under_fault(|plan| plan.fail_write_after = Some(3), true);
}

#[test]
fn a_crash_after_a_failed_growth_reopens_consistently() {
    let mut lab = lab_with(|_| {});
    let db = lab.company();
    db.checkpoint().unwrap();
    lab.faults.lock().fail_write_after = Some(2);
    assert!(db.modify_file("Company_data", FileChange::Size(size("200MB"))).is_err());
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("Company_data.mdf")).unwrap();
    assert_eq!(db.file_space()[0].size_pages, 640);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

/// The I/O seam reports the volume that holds a file (sys.dm_os_volume_stats), and the
/// fault backend's armed full disk shows there as the space left to write.
#[test]
fn a_volume_reports_its_space_and_an_armed_full_disk_leaves_none() {
    use engine::io::{FaultIo, Io};
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("f.mdf");
    std::fs::write(&file, b"x").expect("a file");
    let fault = FaultIo::new(engine::io::std_io());
    let volume = fault.volume(&file).expect("the volume");
    assert!(volume.total_bytes > 0 && volume.available_bytes <= volume.total_bytes, "{volume:?}");
    assert!(file.canonicalize().unwrap().starts_with(&volume.mount_point), "{volume:?}");
    fault.plan().lock().enospc_after_bytes = Some(8192);
    assert_eq!(fault.volume(&file).expect("the volume").available_bytes, 8192);
    assert!(fault.volume(&dir.path().join("missing")).is_err());
}
