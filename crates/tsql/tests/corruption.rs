//! Pages corrupted on disk behind a checksum that still matches: the damage a checksum cannot
//! catch (a slot that points into another record, a wrong m_slotCnt, a PFS byte that calls a
//! page in use free). Every statement must either work or fail with a SQL Server error; none
//! may panic a thread or wait for ever.
//!
//! - A data or index page whose slot array and header do not describe its records is error 824
//!   "audit failure" naming the page, as SQL Server reports a page that fails its basic
//!   integrity checks on read.
//! - A PFS byte that calls a fixed page free never gets that page allocated.
//! - A session that would wait for a latch it holds itself (an allocation map that calls a page
//!   it holds free) gets error 845 at once instead of waiting (the mechanism's own tests are in
//!   the engine's tests/buffer_pool.rs).
//!
//! The seeded sweep corrupts one random page of a small database per seed, with valid
//! checksums, and runs a fixed set of statements over it. `CORRUPTION_SEEDS=N` (default 24)
//! sets how many seeds; a failure names the seed, and `CORRUPTION_FIRST_SEED=<seed>
//! CORRUPTION_SEEDS=1` replays it.

mod common;

use common::{files_in, rows, run};
use engine::instance::InstanceConfig;
use engine::rng::SplitMix64;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tsql::server::Server;
use tsql::session::Session;

/// Panics of any thread (background tasks included) while a seed runs.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The tests of this file share the panic hook: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
/// A seed that takes longer than this is taken to hang: the process exits, naming it.
const SEED_DEADLINE: Duration = Duration::from_secs(120);

const SETUP: &[&str] = &[
    "CREATE DATABASE fz",
    "USE fz
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(200), g UNIQUEIDENTIFIER)
CREATE TABLE h (a INT, b CHAR(100), c NVARCHAR(50))
CREATE INDEX ix_g ON t (g)
DECLARE @i INT = 0
WHILE @i < 1500
BEGIN
  INSERT t VALUES (@i, REPLICATE('n', @i % 150), NEWID())
  INSERT h VALUES (@i, 'b', N'c' + CAST(@i AS NVARCHAR(10)))
  SET @i += 1
END
DELETE t WHERE id % 7 = 0
UPDATE h SET c = REPLICATE(N'z', 40) WHERE a % 5 = 0
CHECKPOINT",
];

/// Reads, writes that split pages and allocate, deletes, updates, DMVs, DBCC and a checkpoint.
const STATEMENTS: &[&str] = &[
    "USE fz",
    "SELECT COUNT(*) FROM t",
    "SELECT COUNT(*) FROM h",
    "SELECT TOP 5 * FROM t ORDER BY id DESC",
    "SELECT * FROM t WHERE id = 750",
    "SELECT COUNT(*) FROM t WHERE g > '00000000-0000-0000-0000-000000000000'",
    "SELECT SUM(a) FROM h WHERE c LIKE N'z%'",
    "INSERT t SELECT id + 100000, name, NEWID() FROM t WHERE id < 400",
    "INSERT h SELECT a, b, c FROM h WHERE a < 300",
    "DELETE t WHERE id BETWEEN 100 AND 200",
    "UPDATE t SET name = REPLICATE('q', 190) WHERE id % 3 = 0",
    "UPDATE h SET c = N'short' WHERE a % 2 = 0",
    "DELETE h WHERE a % 11 = 0",
    "SELECT COUNT(*) FROM sys.dm_db_database_page_allocations(DB_ID(), NULL, NULL, NULL, 'DETAILED')",
    "DBCC CHECKALLOC",
    "DBCC CHECKDB WITH MAXDOP = 2",
    "CHECKPOINT",
];

/// A built database, its pristine copy, and the directory the server knows it by.
struct Lab {
    _root: tempfile::TempDir,
    live: PathBuf,
    pristine: PathBuf,
}

impl Lab {
    fn build() -> Lab {
        let root = tempfile::tempdir().expect("temp dir");
        let live = root.path().join("live");
        let pristine = root.path().join("pristine");
        std::fs::create_dir_all(&live).expect("live dir");
        let server = Server::start(InstanceConfig::new(&live)).expect("server starts");
        let mut session = Session::new(&server);
        for batch in SETUP {
            let (errors, text) = run(&mut session, batch);
            assert!(errors.is_empty(), "setup failed: {text}");
        }
        server.shutdown().expect("shutdown");
        copy_dir(&live, &pristine);
        Lab { _root: root, live, pristine }
    }

    /// The live directory made pristine again (the server's catalog names its paths).
    fn reset(&self) {
        std::fs::remove_dir_all(&self.live).expect("remove live dir");
        copy_dir(&self.pristine, &self.live);
    }

    fn data_file(&self) -> std::fs::File {
        self.fz_file("mdf")
    }

    /// fz's file with this extension (mdf: its data file, ldf: its log), open to write.
    fn fz_file(&self, extension: &str) -> std::fs::File {
        let is_fz =
            |p: &PathBuf| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("fz"));
        let has_extension = |p: &PathBuf| p.extension().is_some_and(|e| e == extension);
        // Directory order differs between file systems: both tests on each file.
        let path = files_in(&self.live)
            .into_iter()
            .find(|p| is_fz(p) && has_extension(p))
            .unwrap_or_else(|| panic!("fz's .{extension} file"));
        std::fs::OpenOptions::new().read(true).write(true).open(path).expect("open fz's file")
    }

    /// Applies `change` to page `page_no` of fz's data file and seals it again (a valid
    /// checksum over the damage).
    fn corrupt_page(&self, page_no: u64, change: impl FnOnce(&mut [u8; 8192])) {
        let file = self.data_file();
        let mut buf = [0u8; 8192];
        file.read_exact_at(&mut buf, page_no * 8192).expect("read page");
        change(&mut buf);
        engine::page::seal(&mut buf);
        file.write_all_at(&buf, page_no * 8192).expect("write page");
    }
}

/// What each statement raised and printed.
type Outcomes = Vec<(&'static str, Vec<i32>, String)>;

/// Starts the server on the lab and runs every statement; the errors each one raised. Panics
/// of any thread are collected in [`PANICS`]; a statement that panics ends the run. A server
/// that refuses to start (a database whose IAM chain or boot page is damaged does not open)
/// is an error too: `Err` with its text.
fn run_statements(lab: &Lab) -> Result<Outcomes, String> {
    let server = Server::start(InstanceConfig::new(&lab.live)).map_err(|e| e.to_string())?;
    let mut session = Session::new(&server);
    let mut outcomes = Vec::new();
    for statement in STATEMENTS {
        let ran =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut session, statement)));
        match ran {
            Ok((errors, text)) => outcomes.push((*statement, errors, text)),
            Err(_) => break,
        }
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.shutdown()));
    Ok(outcomes)
}

/// Runs `body` with every thread's panics recorded, and exits the process if it takes longer
/// than [`SEED_DEADLINE`] (a hang), naming `what`. A panic of `body` itself is returned as
/// `None`, with the others.
fn watched<T>(what: &str, body: impl FnOnce() -> T) -> (Option<T>, Vec<String>) {
    PANICS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let name = what.to_string();
    std::thread::spawn(move || {
        if finished.recv_timeout(SEED_DEADLINE).is_err() {
            eprintln!("{name}: no answer after {SEED_DEADLINE:?}: a statement hangs");
            std::process::exit(1);
        }
    });
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).ok();
    let _ = done.send(());
    let panics = PANICS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (result, panics)
}

/// While it lives, panics are recorded in [`PANICS`] (and printed as usual); the tests of this
/// file run one at a time. Dropped, the default hook is back.
struct RecordPanics {
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Drop for RecordPanics {
    fn drop(&mut self) {
        let _ = std::panic::take_hook();
    }
}

fn record_panics() -> RecordPanics {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current().name().unwrap_or("?").to_string();
        PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(format!("[{thread}] {info}"));
        default(info);
    }));
    RecordPanics { _serial: serial }
}

/// One random change to a page: bytes of its body, header fields, slot entries, the first
/// bytes of a record, or m_slotCnt. The description says what was changed.
fn damage(rng: &mut SplitMix64, buf: &mut [u8; 8192]) -> String {
    let kind = rng.next_u64() % 6;
    let slot_count = usize::from(u16::from_le_bytes([buf[22], buf[23]])).clamp(1, 4000);
    let mut what = Vec::new();
    for _ in 0..=rng.next_u64() % 2 {
        let value = rng.next_u64();
        match kind {
            0 => {
                let at = 96 + (value as usize) % (8192 - 96);
                buf[at] ^= (rng.next_u64() as u8) | 1;
                what.push(format!("byte {at}"));
            }
            1 => {
                let fields = [1, 3, 6, 8, 14, 16, 22, 24, 28, 30, 58];
                let at = fields[(value as usize) % fields.len()];
                buf[at] = rng.next_u64() as u8;
                what.push(format!("header byte {at}"));
            }
            2 => {
                let slot = (value as usize) % slot_count;
                let entry = 8192 - 2 * (slot + 1);
                let offset = (rng.next_u64() % 8300) as u16;
                buf[entry..entry + 2].copy_from_slice(&offset.to_le_bytes());
                what.push(format!("slot {slot} = {offset}"));
            }
            3 => {
                let slot = (value as usize) % slot_count;
                let entry = 8192 - 2 * (slot + 1);
                let offset = usize::from(u16::from_le_bytes([buf[entry], buf[entry + 1]]));
                let at = offset + (rng.next_u64() % 16) as usize;
                if at < 8192 {
                    buf[at] = rng.next_u64() as u8;
                }
                what.push(format!("record byte {at}"));
            }
            4 => {
                let at = 96 + (value as usize) % (8192 - 96 - 8);
                buf[at..at + 8].copy_from_slice(&rng.next_u64().to_le_bytes());
                what.push(format!("8 bytes at {at}"));
            }
            _ => {
                let count = (value % 200) as u16;
                buf[22..24].copy_from_slice(&count.to_le_bytes());
                what.push(format!("m_slotCnt = {count}"));
            }
        }
    }
    what.join(", ")
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn random_damage_behind_a_valid_checksum_is_an_error_never_a_panic_or_a_hang() {
    let _serial = record_panics();
    let lab = Lab::build();
    let pages = lab.data_file().metadata().expect("metadata").len() / 8192;
    let (first, seeds) = (env_u64("CORRUPTION_FIRST_SEED", 0), env_u64("CORRUPTION_SEEDS", 24));
    let mut failures = Vec::new();
    for seed in first..first + seeds {
        lab.reset();
        let mut rng = SplitMix64::new(seed);
        // A formatted page other than the file header and the boot page.
        let mut page_no = 0;
        for _ in 0..64 {
            page_no = 1 + rng.next_u64() % (pages - 1);
            let mut header = [0u8; 96];
            lab.data_file().read_exact_at(&mut header, page_no * 8192).expect("read header");
            if page_no != 9 && header.iter().any(|b| *b != 0) {
                break;
            }
        }
        let mut what = String::new();
        lab.corrupt_page(page_no, |buf| what = damage(&mut rng, buf));
        let label = format!("seed {seed} (page 1:{page_no}: {what})");
        let (outcomes, panics) = watched(&label, || run_statements(&lab));
        // A database that does not open is an error, not a failure of this test.
        let ran = match &outcomes {
            Some(Ok(outcomes)) => outcomes.len(),
            Some(Err(_)) => STATEMENTS.len(),
            None => 0,
        };
        if !panics.is_empty() || ran < STATEMENTS.len() {
            failures.push(format!("{label}: {ran} statements ran\n{}", panics.join("\n")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Slot 2 of a data page of heap `h` pointed into slot 1's record: the checksum matches, the
/// records overlap. Reading the page is error 824 "audit failure" naming it, which ends its
/// batch and is written to the errorlog; `t` still works.
#[test]
fn overlapping_records_behind_a_valid_checksum_are_an_audit_failure_naming_the_page() {
    let _serial = record_panics();
    let lab = Lab::build();
    let page = heap_data_page(&lab);
    lab.corrupt_page(page, |buf| {
        let inside = u16::from_le_bytes([buf[8188], buf[8189]]) + 4;
        buf[8186..8188].copy_from_slice(&inside.to_le_bytes());
    });
    let (outcomes, panics) = watched("overlapping records", || run_statements(&lab));
    assert!(panics.is_empty(), "{panics:?}");
    let outcomes = outcomes.expect("no panic").expect("the server starts");
    let count = |table: &str| {
        let statement = format!("SELECT COUNT(*) FROM {table}");
        outcomes.iter().find(|(s, ..)| *s == statement).cloned().expect("ran")
    };
    let (damaged, intact) = (count("h"), count("t"));
    assert_eq!(damaged.1, vec![824], "{}", damaged.2);
    assert!(
        damaged.2.contains("Msg 824, Level 24, State 2")
            && damaged.2.contains(
                "audit failure (a page read from disk failed to pass basic integrity checks)"
            )
            && damaged.2.contains(&format!("during a read of page (1:{page}) in database ID")),
        "{}",
        damaged.2
    );
    assert!(intact.1.is_empty(), "the other table is not damaged: {}", intact.2);
    // Severity 24 ends the batch (SQL Server stops a batch at severity 19 and above) and goes
    // to the errorlog.
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("server starts");
    let mut session = Session::new(&server);
    let (errors, text) =
        run(&mut session, "USE fz\nSELECT COUNT(*) FROM h\nSELECT 'after' AS next");
    assert_eq!(errors, vec![824], "{text}");
    assert!(!text.contains("after"), "the batch went on after an 824: {text}");
    server.shutdown().expect("shutdown");
    let errorlog = std::fs::read_to_string(lab.live.join("ERRORLOG")).expect("ERRORLOG");
    assert!(errorlog.contains("Error: 824, Severity: 24, State: 2."), "{errorlog}");
}

/// Regression (found by an early version of the sweep): the PFS byte of PFS page 1 cleared, with a
/// valid checksum. The allocator took page 1 as a free data page, formatted the PFS page in
/// its place and then waited for ever on its own latch of it. Now fixed pages are never
/// taken, inserts go on, and CHECKALLOC reports the byte.
#[test]
fn a_pfs_byte_that_calls_a_fixed_page_free_never_gets_it_allocated() {
    let _serial = record_panics();
    let lab = Lab::build();
    // PFS bytes start at offset 100 of the PFS page: byte n describes page n.
    lab.corrupt_page(1, |buf| {
        for page in [1, 2, 3] {
            buf[100 + page] = 0;
        }
    });
    let (outcomes, panics) = watched("fixed pages free in PFS", || run_statements(&lab));
    assert!(panics.is_empty(), "{panics:?}");
    let outcomes = outcomes.expect("no panic").expect("the server starts");
    assert_eq!(outcomes.len(), STATEMENTS.len());
    for (statement, errors, text) in &outcomes[..13] {
        assert!(errors.is_empty(), "{statement}: {text}");
    }
    let checkalloc = outcomes.iter().find(|(s, ..)| *s == "DBCC CHECKALLOC").expect("ran");
    assert!(checkalloc.2.contains("Msg 8948"), "{}", checkalloc.2);
    assert!(checkalloc.2.contains("Page (1:1) is marked with the wrong type in PFS page (1:1)"));
}

/// An IAM page whose m_type is unknown (behind a valid checksum): fz does not open. The instance
/// starts anyway with fz SUSPECT, as SQL Server does: its error is in the errorlog, USE fz is
/// 926, its name stays taken, master works, and DROP DATABASE takes it off the list.
#[test]
fn a_database_that_does_not_open_is_suspect_and_the_instance_starts() {
    let _serial = record_panics();
    let lab = Lab::build();
    let iam = find_page(&lab, |buf| buf[1] == 10);
    lab.corrupt_page(iam, |buf| buf[1] = 99);
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    let mut session = Session::new(&server);
    assert_eq!(server.suspect_databases(), vec!["fz".to_string()]);
    let (errors, text) = run(&mut session, "USE fz");
    assert_eq!(errors, vec![926], "{text}");
    assert!(
        text.contains(
            "Msg 926, Level 14, State 1, Line 1\nDatabase 'fz' cannot be opened. It has been \
             marked SUSPECT by recovery. See the SQL Server errorlog for more information."
        ),
        "{text}"
    );
    let errorlog = std::fs::read_to_string(lab.live.join("ERRORLOG")).expect("ERRORLOG");
    assert!(errorlog.contains("Error: 824"), "{errorlog}");
    assert!(errorlog.contains(&format!("page (1:{iam})")), "{errorlog}");
    // It keeps its id (the registry's), in sys.databases and the errorlog's 3414 alike, and a
    // new database does not get it.
    let listed = rows(
        &mut session,
        "SELECT name, database_id, state, state_desc, recovery_model_desc FROM sys.databases \
         WHERE name = 'fz'",
    );
    let fz_id = listed[0][1].clone();
    assert_eq!(listed, [["fz", &fz_id, "4", "SUSPECT", "NULL"]]);
    assert!(fz_id.parse::<u16>().is_ok_and(|id| id > 4), "a user database's id: {fz_id}");
    assert!(errorlog.contains("Error: 3414, Severity: 21, State: 1."), "{errorlog}");
    assert!(
        errorlog.contains(&format!(
            "An error occurred during recovery, preventing the database 'fz' (database ID \
             {fz_id}) from restarting. Diagnose the recovery errors and fix them, or restore \
             from a known good backup."
        )),
        "{errorlog}"
    );
    assert_eq!(run(&mut session, "CREATE DATABASE fz").0, vec![1801]);
    assert_eq!(run(&mut session, "CREATE DATABASE other").0, Vec::<i32>::new());
    let other_id = rows(&mut session, "SELECT DB_ID('other')");
    assert_ne!(other_id[0][0], fz_id, "a new database took the SUSPECT one's id");
    let by_id = format!(
        "SELECT DB_ID('fz'), DB_NAME({fz_id}), DATABASEPROPERTYEX('fz', 'Status'), \
         DATABASEPROPERTYEX('fz', 'Version')"
    );
    assert_eq!(rows(&mut session, &by_id), [[fz_id.as_str(), "fz", "SUSPECT", "NULL"]]);
    assert_eq!(run(&mut session, "SELECT 1").0, Vec::<i32>::new());
    // A restart tries fz again: still SUSPECT, still listed.
    server.shutdown().expect("shutdown");
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    let mut session = Session::new(&server);
    assert_eq!(server.suspect_databases(), vec!["fz".to_string()]);
    assert_eq!(run(&mut session, "DROP DATABASE fz").0, Vec::<i32>::new());
    assert_eq!(run(&mut session, "USE fz").0, vec![911]);
    server.shutdown().expect("shutdown");
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    assert!(server.suspect_databases().is_empty());
    server.shutdown().expect("shutdown");
}

/// The DBA's way back for a SUSPECT database: ALTER DATABASE ... SET ONLINE runs its
/// recovery again. While the damage is there it fails with the damage's error and fz stays
/// SUSPECT; once the page is repaired, fz comes back whole. SET OFFLINE then survives a
/// restart of the instance (the registry records it), and SET ONLINE opens fz again.
#[test]
fn set_online_brings_a_suspect_database_back_once_its_damage_is_repaired() {
    let _serial = record_panics();
    let lab = Lab::build();
    let iam = find_page(&lab, |buf| buf[1] == 10);
    let mut original = [0u8; 8192];
    lab.data_file().read_exact_at(&mut original, iam * 8192).expect("read the IAM page");
    lab.corrupt_page(iam, |buf| buf[1] = 99);
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    let mut session = Session::new(&server);
    assert_eq!(server.suspect_databases(), vec!["fz".to_string()]);
    assert_eq!(run(&mut session, "ALTER DATABASE fz SET ONLINE").0, vec![824]);
    assert_eq!(server.suspect_databases(), vec!["fz".to_string()]);
    lab.data_file().write_all_at(&original, iam * 8192).expect("repair the IAM page");
    assert_eq!(run(&mut session, "ALTER DATABASE fz SET ONLINE").0, Vec::<i32>::new());
    assert!(server.suspect_databases().is_empty());
    // 1,500 rows less the 215 ids that are multiples of 7.
    assert_eq!(rows(&mut session, "USE fz SELECT COUNT(*) FROM t"), [["1285"]]);
    let (errors, text) = run(&mut session, "USE master ALTER DATABASE fz SET OFFLINE");
    assert_eq!(errors, Vec::<i32>::new(), "{text}");
    server.shutdown().expect("shutdown");

    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    let mut session = Session::new(&server);
    let state = "SELECT state_desc FROM sys.databases WHERE name = 'fz'";
    assert_eq!(rows(&mut session, state), [["OFFLINE"]]);
    assert_eq!(run(&mut session, "USE fz").0, vec![942]);
    assert_eq!(run(&mut session, "ALTER DATABASE fz SET ONLINE").0, Vec::<i32>::new());
    assert_eq!(rows(&mut session, state), [["ONLINE"]]);
    assert_eq!(rows(&mut session, "USE fz SELECT COUNT(*) FROM t"), [["1285"]]);
    drop(session);
    server.shutdown().expect("shutdown");
}

/// A damaged VLF header (its checksum fails): fz is SUSPECT with error 9004, written to the
/// errorlog once (regression: the log manager and the server each wrote it), after the line
/// that says where the log is damaged, and followed by 3414.
#[test]
fn a_damaged_vlf_header_is_9004_once_then_3414() {
    let _serial = record_panics();
    let lab = Lab::build();
    lab.fz_file("ldf")
        .write_all_at(&[0xEE; 4], 8192 + 4)
        .expect("damage the first VLF header's FSeqNo");
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    assert_eq!(server.suspect_databases(), vec!["fz".to_string()]);
    server.shutdown().expect("shutdown");
    let errorlog = std::fs::read_to_string(lab.live.join("ERRORLOG")).expect("ERRORLOG");
    assert_eq!(errorlog.matches("Error: 9004, Severity: 21, State: 1.").count(), 1, "{errorlog}");
    let at_9004 = errorlog.find("Error: 9004").expect("9004");
    let detail = errorlog.find("offset 0x2000").expect("the place of the damage");
    let at_3414 = errorlog.find("Error: 3414").expect("3414");
    assert!(detail < at_9004 && at_9004 < at_3414, "{errorlog}");
}

/// A registry written before database ids were recorded (name and path only) gets the ids of
/// the databases that open at the next start, so that one of them marked SUSPECT later keeps
/// its id.
#[test]
fn an_older_registry_gets_the_ids_of_its_databases() {
    let _serial = record_panics();
    let lab = Lab::build();
    let registry = lab.live.join("databases");
    let text = std::fs::read_to_string(&registry).expect("registry");
    let without_ids: String = text
        .lines()
        .map(|line| line.split('\t').take(2).collect::<Vec<_>>().join("\t") + "\n")
        .collect();
    assert_ne!(text, without_ids, "the registry records ids");
    std::fs::write(&registry, &without_ids).expect("write registry");
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("the instance starts");
    let mut session = Session::new(&server);
    let fz_id = rows(&mut session, "SELECT DB_ID('fz')")[0][0].clone();
    server.shutdown().expect("shutdown");
    let upgraded = std::fs::read_to_string(&registry).expect("registry");
    let fz_line = upgraded.lines().find(|line| line.starts_with("fz\t")).expect("fz listed");
    assert!(fz_line.ends_with(&format!("\t{fz_id}")), "{upgraded}");
}

/// CREATE DATABASE makes its files' directory entries and the registry's rename durable: the
/// data directory is synced for the new files (the engine) and again after the registry is
/// renamed into place (the server).
#[test]
fn create_database_syncs_the_data_directory_for_its_files_and_the_registry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fault_io = engine::io::FaultIo::new(engine::io::std_io());
    let plan = fault_io.plan();
    let io: std::sync::Arc<dyn engine::io::Io> = std::sync::Arc::new(fault_io);
    let config = InstanceConfig::new(dir.path());
    let instance =
        engine::instance::Instance::start_with(config, io, engine::clock::system_clock())
            .expect("instance");
    let server = Server::start_on(instance).expect("server");
    let mut session = Session::new(&server);
    let before = plan.lock().counters.dir_syncs;
    assert_eq!(run(&mut session, "CREATE DATABASE synced").0, Vec::<i32>::new());
    assert_eq!(plan.lock().counters.dir_syncs - before, 2, "the files, then the registry");
    server.shutdown().expect("shutdown");
}

/// The first page of fz's data file after its system pages for which `test` holds.
fn find_page(lab: &Lab, test: impl Fn(&[u8; 8192]) -> bool) -> u64 {
    let file = lab.data_file();
    let pages = file.metadata().expect("metadata").len() / 8192;
    let mut buf = [0u8; 8192];
    for page_no in 10..pages {
        file.read_exact_at(&mut buf, page_no * 8192).expect("read page");
        if test(&buf) {
            return page_no;
        }
    }
    panic!("no page of fz matches");
}

/// A data page of heap `h`, as sys.dm_db_database_page_allocations lists it.
fn heap_data_page(lab: &Lab) -> u64 {
    let server = Server::start(InstanceConfig::new(&lab.live)).expect("server starts");
    let mut session = Session::new(&server);
    let found = rows(
        &mut session,
        "USE fz SELECT TOP 1 allocated_page_page_id FROM sys.dm_db_database_page_allocations(\
         DB_ID(), OBJECT_ID('h'), NULL, NULL, 'DETAILED') WHERE page_type_desc = 'DATA_PAGE' \
         ORDER BY allocated_page_page_id",
    );
    server.shutdown().expect("shutdown");
    found[0][0].parse().expect("a page number")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy file");
        }
    }
}
