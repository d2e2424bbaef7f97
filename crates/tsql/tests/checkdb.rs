//! DBCC CHECKDB and CHECKTABLE over damage made on disk (the pages are changed in the data
//! file while the server is down, then the server starts and checks): each kind of damage is
//! SQL Server's error for it, naming the page, and a sound database is clean at any MAXDOP.

mod common;

use common::{files_in, rows, run};
use engine::instance::InstanceConfig;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use tsql::server::Server;
use tsql::session::Session;

/// A clustered table with a nonclustered index over enough rows for a three-level tree, and a
/// heap whose updates forwarded some rows.
const SETUP: &str = "CREATE DATABASE ck
GO
USE ck
SET NOCOUNT ON
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(300), code INT)
CREATE TABLE h (a INT, b VARCHAR(400))
CREATE INDEX ix_code ON t (code)
DECLARE @i INT = 0
WHILE @i < 4000
BEGIN
  INSERT t VALUES (@i, REPLICATE('n', 100 + @i % 150), @i % 97)
  INSERT h VALUES (@i, 'b')
  SET @i += 1
END
UPDATE h SET b = REPLICATE('z', 350) WHERE a % 3 = 0
DELETE t WHERE id % 11 = 0
CHECKPOINT";

struct Lab {
    _root: tempfile::TempDir,
    dir: PathBuf,
}

impl Lab {
    fn build() -> Lab {
        Lab::build_with(SETUP)
    }

    fn build_with(setup: &str) -> Lab {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("instance");
        std::fs::create_dir_all(&dir).expect("instance dir");
        let server = Server::start(InstanceConfig::new(&dir)).expect("server starts");
        let mut session = Session::new(&server);
        for batch in setup.split("\nGO\n") {
            let (errors, text) = run(&mut session, batch);
            assert!(errors.is_empty(), "setup failed: {text}");
        }
        server.shutdown().expect("shutdown");
        Lab { _root: root, dir }
    }

    /// Runs `sql` on a server started on the lab: the errors and the text.
    fn run(&self, sql: &str) -> (Vec<i32>, String) {
        let server = Server::start(InstanceConfig::new(&self.dir)).expect("server starts");
        let mut session = Session::new(&server);
        let outcome = run(&mut session, sql);
        server.shutdown().expect("shutdown");
        outcome
    }

    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        let server = Server::start(InstanceConfig::new(&self.dir)).expect("server starts");
        let mut session = Session::new(&server);
        let found = rows(&mut session, sql);
        server.shutdown().expect("shutdown");
        found
    }

    /// Pages of a table's index at a level, in page order, with their previous and next pages.
    fn pages(&self, table: &str, index_id: i32, level: i32) -> Vec<(u32, u32, u32)> {
        self.rows(&format!(
            "USE ck SELECT allocated_page_page_id, ISNULL(previous_page_page_id, 0), \
             ISNULL(next_page_page_id, 0) FROM sys.dm_db_database_page_allocations(DB_ID(), \
             OBJECT_ID('{table}'), {index_id}, NULL, 'DETAILED') WHERE page_level = {level} \
             AND page_type_desc IN ('DATA_PAGE', 'INDEX_PAGE') AND is_allocated = 1 \
             ORDER BY allocated_page_page_id"
        ))
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap(), r[2].parse().unwrap()))
        .collect()
    }

    /// A leaf of `t` with a leaf on each side: (page, previous, next).
    fn middle_leaf(&self) -> (u32, u32, u32) {
        *self
            .pages("t", 1, 0)
            .iter()
            .find(|(_, prev, next)| *prev != 0 && *next != 0)
            .expect("a leaf with two neighbours")
    }

    fn data_file(&self) -> std::fs::File {
        let path = files_in(&self.dir)
            .into_iter()
            .find(|p| p.file_name().is_some_and(|n| n == "ck.mdf"))
            .expect("ck.mdf");
        std::fs::OpenOptions::new().read(true).write(true).open(path).expect("open ck.mdf")
    }

    /// Applies `change` to a page of the data file; `seal` recomputes its checksum.
    fn change_page(&self, page_no: u32, seal: bool, change: impl FnOnce(&mut [u8; 8192])) {
        let file = self.data_file();
        let offset = u64::from(page_no) * 8192;
        let mut buf = [0u8; 8192];
        file.read_exact_at(&mut buf, offset).expect("read page");
        change(&mut buf);
        if seal {
            engine::page::seal(&mut buf);
        }
        file.write_all_at(&buf, offset).expect("write page");
    }

    /// Changes the row locator of the second entry on the second leaf of `table`'s index 2
    /// (on (code), over a clustered key id whose multiples of 11 were deleted) to a deleted
    /// row's id, keeping the keys in order: (page, code, id, deleted id).
    fn point_an_index_entry_at_a_deleted_row(&self, table: &str) -> (u32, i32, i32, i32) {
        let (page, _, _) = self.pages(table, 2, 0)[1];
        let mut changed = (0, 0, 0);
        self.change_page(page, true, |buf| {
            let offset = |slot: usize| {
                let at = 8192 - 2 * (slot + 1);
                usize::from(u16::from_le_bytes([buf[at], buf[at + 1]]))
            };
            let int_at = |buf: &[u8; 8192], at: usize| {
                i32::from_le_bytes(buf[at..at + 4].try_into().unwrap())
            };
            let (entry, next) = (offset(1), offset(2));
            let (code, id) = (int_at(buf, entry + 4), int_at(buf, entry + 8));
            let (next_code, next_id) = (int_at(buf, next + 4), int_at(buf, next + 8));
            let deleted = (id / 11 + 1) * 11; // ids that are multiples of 11 were deleted
            assert!(
                next_code > code || deleted < next_id,
                "the change must keep the keys in order"
            );
            buf[entry + 8..entry + 12].copy_from_slice(&deleted.to_le_bytes());
            changed = (code, id, deleted);
        });
        (page, changed.0, changed.1, changed.2)
    }
}

fn count_of(errors: &[i32], number: i32) -> usize {
    errors.iter().filter(|e| **e == number).count()
}

#[test]
fn a_sound_database_is_clean_at_any_maxdop_and_counts_its_rows() {
    let lab = Lab::build();
    let counts = lab.rows("USE ck SELECT (SELECT COUNT(*) FROM t), (SELECT COUNT(*) FROM h)");
    for options in ["", " WITH MAXDOP = 1", " WITH MAXDOP = 2", " WITH ALL_ERRORMSGS, TABLOCK"] {
        let (errors, text) = lab.run(&format!("USE ck DBCC CHECKDB{options}"));
        assert!(errors.is_empty(), "{options}: {text}");
        assert!(text.contains(&format!("There are {} rows in", counts[0][0])), "{text}");
        assert!(text.contains("pages for object \"dbo.t\"."), "{text}");
        assert!(text.contains(&format!("There are {} rows in", counts[0][1])), "{text}");
        assert!(
            text.contains(
                "CHECKDB found 0 allocation errors and 0 consistency errors in database 'ck'."
            ),
            "{text}"
        );
        assert!(!text.contains("minimum repair level"), "{text}");
    }
    let (errors, text) = lab.run("DBCC CHECKDB ('ck') WITH NO_INFOMSGS");
    assert!(errors.is_empty() && text.trim().is_empty(), "NO_INFOMSGS printed: {text}");
    let (_, text) =
        lab.run("DBCC TRACEON (2528, -1) WITH NO_INFOMSGS DBCC CHECKDB ('ck') WITH PHYSICAL_ONLY");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "DBCC results for 'ck'.",
            "CHECKDB found 0 allocation errors and 0 consistency errors in database 'ck'.",
            "DBCC execution completed. If DBCC printed error messages, contact your system administrator.",
        ],
        "{text}"
    );
    // Two workers read t's pages at once; the command's thread waited for them (CXPACKET).
    let waits = lab.rows(
        "DBCC CHECKDB ('ck') WITH NO_INFOMSGS, MAXDOP = 2 \
         SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'CXPACKET'",
    );
    assert!(waits[0][0].parse::<u64>().unwrap() >= 1, "{waits:?}");
    let errorlog = std::fs::read_to_string(lab.dir.join("ERRORLOG")).expect("ERRORLOG");
    assert!(
        errorlog.contains("DBCC CHECKDB (ck) WITH maxdop = 2 executed by sa found 0 errors and repaired 0 errors. Elapsed time: 0 hours 0 minutes"),
        "{errorlog}"
    );
}

/// sp_configure's 'max degree of parallelism' is CHECKDB's DOP when the command names none,
/// kept across a restart; WITH MAXDOP still overrides it.
#[test]
fn checkdb_takes_the_configured_max_degree_of_parallelism() {
    let lab = Lab::build();
    let cxpacket_after = |checkdb: &str| -> u64 {
        let rows = lab.rows(&format!(
            "DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR) WITH NO_INFOMSGS \
             {checkdb} \
             SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'CXPACKET'"
        ));
        // A wait type with no wait since the clear has no row.
        rows.first().map_or(0, |row| row[0].parse().expect("a count"))
    };
    let (errors, text) = lab.run(
        "EXEC sp_configure 'show advanced options', 1 RECONFIGURE \
         EXEC sp_configure 'max degree of parallelism', 1 RECONFIGURE",
    );
    assert!(errors.is_empty(), "{text}");
    assert!(
        text.contains("Configuration option 'max degree of parallelism' changed from 0 to 1. Run the RECONFIGURE statement to install."),
        "{text}"
    );
    // A new server on the same directory: the configured value is in use from the start.
    let configured = lab.rows(
        "SELECT value, value_in_use FROM sys.configurations WHERE name = 'max degree of parallelism'",
    );
    assert_eq!(configured, [["1", "1"]]);
    assert_eq!(cxpacket_after("DBCC CHECKDB ('ck') WITH NO_INFOMSGS"), 0, "one worker");
    assert!(cxpacket_after("DBCC CHECKDB ('ck') WITH NO_INFOMSGS, MAXDOP = 2") >= 1);
    let errorlog = std::fs::read_to_string(lab.dir.join("ERRORLOG")).expect("ERRORLOG");
    assert!(errorlog.contains("changed from 0 to 1. Run the RECONFIGURE"), "{errorlog}");
}

/// A leaf of the clustered index with one byte changed and its old checksum: the pool refuses
/// it (824); CHECKDB says why (8939, IS_OFF BUF_IOERR) and that it could not process it
/// (8928), and the page's parent (8980), previous (8976) and next page (8978) miss it.
#[test]
fn a_checksum_failure_is_8939_and_8928_and_its_neighbours_miss_the_page() {
    let lab = Lab::build();
    let (page, prev, next) = lab.middle_leaf();
    lab.change_page(page, false, |buf| buf[4000] ^= 0x5A);
    let (errors, text) = lab.run("USE ck DBCC CHECKDB");
    let mut numbers = errors.clone();
    numbers.sort_unstable();
    assert_eq!(numbers, vec![8928, 8939, 8976, 8978, 8980], "{text}");
    assert!(text.contains("Test (IS_OFF (BUF_IOERR, pBUF->bstat)) failed."), "{text}");
    assert!(
        text.contains(&format!(
            "Page (1:{page}) could not be processed. See other errors for details."
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("Page (1:{page}) was not seen in the scan although its parent")),
        "{text}"
    );
    assert!(text.contains(&format!("and previous (1:{prev}) refer to it.")), "{text}");
    assert!(
        text.contains(&format!(
            "Page (1:{next}) is missing a reference from previous page (1:{page})."
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "CHECKDB found 0 allocation errors and 5 consistency errors in table 'dbo.t'"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "CHECKDB found 0 allocation errors and 5 consistency errors in database 'ck'."
        ),
        "{text}"
    );
    assert!(
        text.contains("repair_allow_data_loss is the minimum repair level for the errors found by DBCC CHECKDB (ck)."),
        "{text}"
    );
    let errorlog = std::fs::read_to_string(lab.dir.join("ERRORLOG")).expect("ERRORLOG");
    assert!(
        errorlog.contains("DBCC CHECKDB (ck) executed by sa found 5 errors and repaired 0 errors."),
        "{errorlog}"
    );
}

/// A leaf zeroed on disk reads as a page never formatted: 8909 naming no unit and the header's
/// page id (0:0), then 8928.
#[test]
fn a_zeroed_page_is_8909_with_page_id_0_0() {
    let lab = Lab::build();
    let (page, _, _) = lab.middle_leaf();
    lab.change_page(page, false, |buf| buf.fill(0));
    let (errors, text) = lab.run("USE ck DBCC CHECKTABLE ('t') WITH NO_INFOMSGS");
    assert_eq!(count_of(&errors, 8909), 1, "{text}");
    assert!(
        text.contains(&format!(
            "Table error: Object ID 0, index ID -1, partition ID 0, alloc unit ID 0 (type Unknown), page ID (1:{page}) contains an incorrect page ID in its page header. The PageId in the page header = (0:0)."
        )),
        "{text}"
    );
    assert_eq!(count_of(&errors, 8928), 1, "{text}");
    assert!(text.contains("repair_allow_data_loss is the minimum repair level for the errors found by DBCC CHECKTABLE (ck.dbo.t)."), "{text}");
}

/// Two slots of a leaf swapped, the checksum made good: the page reads, and its keys are out
/// of order (2511), as SQL Server reports it.
#[test]
fn swapped_slots_are_keys_out_of_order() {
    let lab = Lab::build();
    let (page, _, _) = lab.middle_leaf();
    lab.change_page(page, true, |buf| {
        let (first, second) = ([buf[8190], buf[8191]], [buf[8188], buf[8189]]);
        buf[8190..8192].copy_from_slice(&second);
        buf[8188..8190].copy_from_slice(&first);
    });
    let (errors, text) = lab.run("USE ck DBCC CHECKDB WITH NO_INFOMSGS");
    assert_eq!(errors, vec![2511], "{text}");
    assert!(
        text.contains(&format!("Keys out of order on page (1:{page}), slots 0 and 1.")),
        "{text}"
    );
    assert!(text.contains("index ID 1, partition ID"), "{text}");
}

/// Records that overlap behind a valid checksum (an audit failure on read): CHECKDB reads the
/// bytes and names the slot (8942).
#[test]
fn overlapping_records_are_8942_naming_the_slot() {
    let lab = Lab::build();
    let (page, _, _) = lab.pages("h", 0, 0)[3];
    lab.change_page(page, true, |buf| {
        let inside = u16::from_le_bytes([buf[8188], buf[8189]]) + 4;
        buf[8186..8188].copy_from_slice(&inside.to_le_bytes());
    });
    let (errors, text) = lab.run("USE ck DBCC CHECKTABLE ('h')");
    assert!(errors.contains(&8942) && errors.contains(&8928), "{text}");
    assert!(
        text.contains(&format!(
            "page (1:{page}). Test (sorted[i].offset >= max) failed. Slot 2, offset"
        )),
        "{text}"
    );
    assert!(text.contains("overlaps with the prior row."), "{text}");
}

/// A heap page's PFS fullness changed (the PFS page resealed): 8914, level 10.
#[test]
fn a_wrong_pfs_fullness_is_8914() {
    let lab = Lab::build();
    let (page, _, _) = lab.pages("h", 0, 0)[1];
    lab.change_page(1, true, |buf| {
        let at = 100 + page as usize;
        buf[at] = (buf[at] & !0x07) | if buf[at] & 0x07 == 4 { 1 } else { 4 };
    });
    let (errors, text) = lab.run("USE ck DBCC CHECKDB WITH NO_INFOMSGS");
    assert_eq!(errors, vec![8914], "{text}");
    assert!(
        text.contains(&format!(
            "Incorrect PFS free space information for page (1:{page}) in object ID"
        )),
        "{text}"
    );
    assert!(text.contains("Msg 8914, Level 10, State 1"), "{text}");
}

/// A leaf whose header names the heap's unit: 2534 for the heap, 2533 for the index that owns
/// the page and did not see it, and 8928.
#[test]
fn a_page_claimed_by_another_unit_is_2534_and_2533() {
    let lab = Lab::build();
    let (heap_page, _, _) = lab.pages("h", 0, 0)[0];
    let (page, _, _) = lab.middle_leaf();
    let mut heap_ids = [0u8; 6];
    lab.change_page(heap_page, false, |buf| {
        heap_ids[..2].copy_from_slice(&buf[6..8]);
        heap_ids[2..].copy_from_slice(&buf[24..28]);
    });
    lab.change_page(page, true, |buf| {
        buf[6..8].copy_from_slice(&heap_ids[..2]);
        buf[24..28].copy_from_slice(&heap_ids[2..]);
    });
    let (errors, text) = lab.run("USE ck DBCC CHECKDB WITH NO_INFOMSGS");
    assert_eq!(count_of(&errors, 2534), 1, "{text}");
    assert_eq!(count_of(&errors, 2533), 1, "{text}");
    assert!(
        text.contains(&format!(
            "Table error: page (1:{page}), whose header indicates that it is allocated to object ID"
        )),
        "{text}"
    );
    assert!(text.contains("index ID 0"), "{text}");
    assert!(text.contains("was not seen. The page may be invalid or may have an incorrect alloc unit ID in its header."), "{text}");
}

/// CHECKTABLE inside a transaction holds its shared table lock to the transaction's end, as
/// WITH TABLOCK does: another session's insert waits (LCK_M_IX) until the checking session
/// commits, then goes in.
#[test]
fn the_shared_table_lock_of_a_check_makes_writers_wait() {
    let lab = Lab::build();
    let server = Server::start(InstanceConfig::new(&lab.dir)).expect("server starts");
    let mut checker = Session::new(&server);
    let (errors, text) =
        run(&mut checker, "USE ck BEGIN TRAN DBCC CHECKTABLE ('h') WITH NO_INFOMSGS");
    assert!(errors.is_empty(), "{text}");
    let writer_server = server.clone();
    let writer = std::thread::spawn(move || {
        let mut writer = Session::new(&writer_server);
        run(&mut writer, "USE ck INSERT h VALUES (-1, 'after the check')")
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting = rows(
            &mut checker,
            "SELECT COUNT(*) FROM sys.dm_os_waiting_tasks WHERE wait_type = 'LCK_M_IX'",
        );
        if waiting[0][0] == "1" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the insert never waited");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!writer.is_finished(), "the insert went in under the check's lock");
    run(&mut checker, "COMMIT");
    let (errors, text) = writer.join().expect("writer");
    assert!(errors.is_empty(), "{text}");
    let found = rows(&mut checker, "SELECT COUNT(*) FROM h WHERE a = -1");
    assert_eq!(found[0][0], "1");
    drop(checker);
    server.shutdown().expect("shutdown");
}

/// The row locator of one entry of the nonclustered index changed to a deleted row's id (its
/// keys still in order, the checksum made good): the pages are sound, and the logical check
/// finds the row without its entry (8951, then 8955 naming the row) and the entry without its
/// row (8952, then 8956 naming the entry); repair_rebuild is enough.
#[test]
fn a_nonclustered_entry_that_points_at_no_row_is_8951_and_8952() {
    let lab = Lab::build();
    let (page, code, id, deleted) = lab.point_an_index_entry_at_a_deleted_row("t");
    let (errors, text) = lab.run("USE ck DBCC CHECKTABLE ('t') WITH NO_INFOMSGS");
    assert_eq!(errors, vec![8951, 8955, 8952, 8956], "{text}");
    assert!(
        text.contains("Data row does not have a matching index row in the index 'ix_code' (ID 2)."),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "identified by (id = {id}) with index values 'code = {code} and id = {id}'."
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Index row (1:{page}:1) with values (code = {code} and id = {deleted}) pointing to the data row identified by (id = {deleted})."
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "CHECKTABLE found 0 allocation errors and 2 consistency errors in table 'dbo.t'"
        ),
        "{text}"
    );
    assert!(
        text.contains("repair_rebuild is the minimum repair level for the errors found by DBCC CHECKTABLE (ck.dbo.t)."),
        "{text}"
    );
    // NOINDEX and PHYSICAL_ONLY skip the logical check.
    let (errors, text) = lab
        .run("USE ck DBCC CHECKDB (0, NOINDEX) WITH NO_INFOMSGS DBCC CHECKDB WITH PHYSICAL_ONLY");
    assert!(errors.is_empty(), "{text}");
}

/// The logical check's first pass: on a sound table, the sum of the entries the rows call for
/// equals the sum of the index's leaf records, for a clustered table and a heap alike, and
/// is not zero (so a deep dive runs only when they differ).
#[test]
fn the_index_sums_of_a_sound_table_agree() {
    use engine::dbcc::{Logical, Owners, UnitOptions, check_unit};
    let lab = Lab::build();
    let server = Server::start(InstanceConfig::new(&lab.dir)).expect("server starts");
    let mut session = Session::new(&server);
    let (errors, text) = run(&mut session, "USE ck CREATE INDEX ix_b ON h (b, a)");
    assert!(errors.is_empty(), "{text}");
    let db = server.database("ck").expect("ck");
    let catalog = db.catalog().expect("catalog");
    for name in ["t", "h"] {
        let table = catalog.table(name).expect("table");
        let targets = table.check_targets();
        let (mut base_sums, mut index_sums) = (Vec::new(), Vec::new());
        for (position, (unit, structure)) in targets.iter().enumerate() {
            let logical = if position == 0 { Logical::Base(&*table) } else { Logical::Index };
            let options = UnitOptions { maxdop: 2, physical_only: false, logical };
            let check = check_unit(&db, *unit, structure, &Owners::new(), options).expect("check");
            assert!(check.findings.is_empty(), "{name}: {:?}", check.findings);
            if position == 0 {
                base_sums = check.digests;
            } else {
                index_sums.extend(check.digests);
            }
        }
        assert_eq!(base_sums.len(), 1, "{name}");
        assert_eq!(base_sums, index_sums, "{name}");
        assert_ne!(base_sums[0], 0, "{name}");
    }
    drop(session);
    server.shutdown().expect("shutdown");
}

/// A CHECKDB that finds no error is the database's last known good (dbi_dbccLastKnownGood):
/// DATABASEPROPERTYEX(db, 'LastGoodCheckDbTime') returns it, every start of the database
/// writes it to the errorlog, and a CHECKDB that finds errors leaves it as it was.
#[test]
fn a_clean_checkdb_is_the_last_known_good() {
    let lab = Lab::build();
    let property = "SELECT DATABASEPROPERTYEX('ck', 'LastGoodCheckDbTime')";
    assert_eq!(lab.rows(property)[0][0], "1900-01-01 00:00:00.000");
    let (errors, text) = lab.run("DBCC CHECKDB ('ck') WITH NO_INFOMSGS");
    assert!(errors.is_empty(), "{text}");
    let good = lab.rows(property)[0][0].clone();
    assert!(good.starts_with("20"), "{good}");
    let errorlog = std::fs::read_to_string(lab.dir.join("ERRORLOG")).expect("ERRORLOG");
    let line = format!("CHECKDB for database 'ck' finished without errors on {}", &good[..19]);
    assert!(errorlog.contains(&line), "{line} not in\n{errorlog}");
    assert!(
        errorlog.contains(
            "(local time). This is an informational message only; no user action is required."
        ),
        "{errorlog}"
    );
    // Damage found: the last known good stays.
    let (page, _, _) = lab.middle_leaf();
    lab.change_page(page, false, |buf| buf[4000] ^= 0x5A);
    let (errors, _) = lab.run("DBCC CHECKDB ('ck') WITH NO_INFOMSGS");
    assert!(!errors.is_empty());
    assert_eq!(lab.rows(property)[0][0], good);
}

/// DBCC CHECKFILEGROUP checks the tables whose data is in the filegroup, with their
/// nonclustered indexes in the same filegroup, and nothing else: a damaged index of a PRIMARY
/// table is found by PRIMARY's check; one in PRIMARY whose table is in another filegroup is
/// found by neither filegroup's check (as SQL Server documents), only by CHECKDB.
#[test]
fn checkfilegroup_checks_only_what_is_in_its_filegroup() {
    let setup = "CREATE DATABASE ck
GO
ALTER DATABASE ck ADD FILEGROUP side
ALTER DATABASE ck ADD FILE (NAME = side1, FILENAME = 'ck_side1.ndf', SIZE = 2MB) TO FILEGROUP side
GO
USE ck
SET NOCOUNT ON
CREATE TABLE t (id INT PRIMARY KEY, code INT) ON side
CREATE INDEX ix_code ON t (code) ON [PRIMARY]
CREATE TABLE u (id INT PRIMARY KEY, code INT) ON [PRIMARY]
CREATE INDEX ix_code ON u (code) ON [PRIMARY]
DECLARE @i INT = 0
WHILE @i < 2000
BEGIN
  INSERT t VALUES (@i, @i % 97)
  INSERT u VALUES (@i, @i % 97)
  SET @i += 1
END
DELETE t WHERE id % 11 = 0
DELETE u WHERE id % 11 = 0
CHECKPOINT";
    let lab = Lab::build_with(setup);
    lab.point_an_index_entry_at_a_deleted_row("t");
    lab.point_an_index_entry_at_a_deleted_row("u");
    let (errors, text) = lab.run("USE ck DBCC CHECKFILEGROUP WITH NO_INFOMSGS");
    assert_eq!(errors, vec![8951, 8955, 8952, 8956], "{text}");
    assert!(text.contains("in table 'dbo.u'") && !text.contains("'dbo.t'"), "{text}");
    assert!(
        text.contains(
            "CHECKFILEGROUP found 0 allocation errors and 2 consistency errors in database 'ck'."
        ),
        "{text}"
    );
    let (errors, text) = lab.run("USE ck DBCC CHECKFILEGROUP (side)");
    assert!(errors.is_empty(), "{text}");
    assert!(text.contains("There are 1818 rows in") && text.contains("\"dbo.t\""), "{text}");
    let (errors, text) = lab.run("USE ck DBCC CHECKDB WITH NO_INFOMSGS");
    assert_eq!(count_of(&errors, 8951), 2, "{text}");
}
