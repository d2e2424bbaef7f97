//! System surfaces that a golden script cannot show: a blocked session as the DMVs, sp_who
//! and DBCC OPENTRAN see it while it really waits, DBCC CHECKALLOC on a file corrupted on
//! disk, and sp_configure's static option taking effect at the next start.

mod common;

use common::{rows, run};
use engine::instance::InstanceConfig;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};
use tsql::server::Server;
use tsql::session::Session;

/// Runs a batch in a new session on its own thread (a session that is to wait).
fn spawn_batch(
    server: &std::sync::Arc<Server>,
    sql: &'static str,
) -> std::thread::JoinHandle<(Vec<i32>, String)> {
    let server = server.clone();
    std::thread::spawn(move || run(&mut Session::new(&server), sql))
}

/// Polls `query` until its first value is `expected`; `what` names the wait in the panic.
fn wait_for_value(observer: &mut Session, query: &str, expected: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while rows(observer, query)[0][0] != expected {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A session that has made table `t (id, v)` with row 1 and holds that row's key X-locked in
/// an open transaction, with its session id as the views show it.
fn holder_of_row_1(server: &std::sync::Arc<Server>) -> (Session, String) {
    let mut holder = Session::new(server);
    let (errors, _) = run(
        &mut holder,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)\nINSERT t VALUES (1, 0)\nBEGIN TRAN\nUPDATE t SET v = 1 WHERE id = 1",
    );
    assert!(errors.is_empty(), "{errors:?}");
    let spid = holder.spid.to_string();
    (holder, spid)
}

/// The data page of table `t`'s clustered index, with its database.
fn data_page_of_t(observer: &mut Session) -> engine::buffer::PageKey {
    let page = rows(
        observer,
        "SELECT DB_ID(), allocated_page_file_id, allocated_page_page_id FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), 1, NULL, 'DETAILED') WHERE page_type_desc = 'DATA_PAGE' AND is_allocated = 1",
    );
    let number = |i: usize| page[0][i].parse::<u32>().unwrap();
    let file_page = engine::units::PageId::new(number(1) as u16, number(2));
    engine::buffer::PageKey::new(number(0) as u16, file_page)
}

/// The system sessions' background tasks are listed (sys.dm_exec_requests, sp_who), and their
/// idle waits are time they really waited: the lazy writer's LAZYWRITER_SLEEP adds up to no
/// more than the time the instance has been up, the log writer's LOGMGR_QUEUE ends when a
/// transaction's log gives it work, and the checkpoint task shows CHECKPOINT_QUEUE while it
/// waits for a request.
#[test]
fn system_tasks_are_listed_and_their_idle_waits_are_real() {
    let dir = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    std::thread::sleep(Duration::from_millis(650));
    let sleeps = rows(
        &mut session,
        "SELECT waiting_tasks_count, wait_time_ms FROM sys.dm_os_wait_stats WHERE wait_type = 'LAZYWRITER_SLEEP'",
    );
    let up_ms = started.elapsed().as_millis();
    let (count, waited_ms): (u64, u128) =
        (sleeps[0][0].parse().unwrap(), sleeps[0][1].parse().unwrap());
    assert!(count >= 2, "the lazy writer sleeps 200 ms at a time: {sleeps:?}");
    assert!(waited_ms >= 300 && waited_ms <= up_ms, "{waited_ms} ms slept in {up_ms} ms up");
    // Each task's row, waiting for its work (polled: a task is briefly awake between waits).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let requests = rows(
            &mut session,
            "SELECT command, status, wait_type FROM sys.dm_exec_requests WHERE session_id < 51 AND database_id = 1 ORDER BY command",
        );
        let expected = [
            ("CHECKPOINT", "CHECKPOINT_QUEUE"),
            ("GHOST CLEANUP", "NULL"),
            ("LAZY WRITER", "LAZYWRITER_SLEEP"),
            ("LOG WRITER", "LOGMGR_QUEUE"),
        ];
        let seen: Vec<(String, String)> =
            requests.iter().map(|r| (r[0].clone(), r[2].clone())).collect();
        let wanted: Vec<(String, String)> =
            expected.iter().map(|(c, w)| (c.to_string(), w.to_string())).collect();
        assert!(requests.iter().all(|r| r[1] == "background"), "{requests:?}");
        if seen == wanted {
            break;
        }
        assert!(Instant::now() < deadline, "{requests:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lazy_writer = rows(
        &mut session,
        "SELECT is_user_process, total_elapsed_time FROM sys.dm_exec_sessions WHERE session_id = 18",
    );
    assert_eq!(lazy_writer[0][0], "0", "{lazy_writer:?}");
    let alive_ms: u128 = lazy_writer[0][1].parse().unwrap();
    assert!(alive_ms >= 600 && alive_ms <= started.elapsed().as_millis(), "{lazy_writer:?}");
    let who = rows(&mut session, "EXEC sp_who 18");
    assert_eq!((who[0][2].as_str(), who[0][7].as_str()), ("background", "LAZY WRITER"), "{who:?}");
    // A transaction whose log fills batches of blocks wakes the log writer: its wait ends.
    let before = rows(
        &mut session,
        "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'LOGMGR_QUEUE'",
    )[0][0]
        .parse::<u64>()
        .unwrap();
    let (errors, _) = run(
        &mut session,
        "CREATE TABLE big (id INT PRIMARY KEY, filler CHAR(4000))
BEGIN TRAN
         DECLARE @i INT = 0
WHILE @i < 400 BEGIN INSERT big VALUES (@i, 'x') SET @i += 1 END
COMMIT",
    );
    assert!(errors.is_empty(), "{errors:?}");
    let after = rows(
        &mut session,
        "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'LOGMGR_QUEUE'",
    )[0][0]
        .parse::<u64>()
        .unwrap();
    assert!(after > before, "the log writer's wait ended: {before} -> {after}");
    drop(session);
    server.shutdown().expect("shutdown");
}

#[test]
fn a_blocked_session_shows_in_waiting_tasks_requests_and_sp_who() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let (mut holder, holder_spid) = holder_of_row_1(&server);
    let blocked = {
        let server = server.clone();
        std::thread::spawn(move || {
            let mut reader = Session::new(&server);
            let spid = reader.spid;
            let (errors, text) = run(&mut reader, "SELECT v FROM t WHERE id = 1");
            (spid, errors, text)
        })
    };
    let mut observer = Session::new(&server);
    let deadline = Instant::now() + Duration::from_secs(20);
    let waiting = loop {
        let waiting = rows(
            &mut observer,
            "SELECT session_id, wait_type, blocking_session_id, resource_description FROM sys.dm_os_waiting_tasks WHERE session_id > 50",
        );
        if !waiting.is_empty() {
            break waiting;
        }
        assert!(Instant::now() < deadline, "the reader never waited");
        std::thread::sleep(Duration::from_millis(10));
    };
    let (wait_type, blocker) = (&waiting[0][1], &waiting[0][2]);
    assert!(wait_type.starts_with("LCK_M_"), "{waiting:?}");
    assert_eq!(blocker, &holder_spid, "{waiting:?}");
    let waiter = waiting[0][0].clone();
    let requests = rows(
        &mut observer,
        &format!(
            "SELECT status, wait_type, blocking_session_id FROM sys.dm_exec_requests WHERE session_id = {waiter}"
        ),
    );
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0][0], "suspended");
    assert_eq!(&requests[0][1], wait_type);
    assert_eq!(requests[0][2], holder_spid);
    let who = rows(&mut observer, &format!("EXEC sp_who {waiter}"));
    assert_eq!(who[0][2], "suspended", "{who:?}");
    assert_eq!(who[0][5].trim(), holder_spid, "{who:?}");
    let who2 = rows(&mut observer, &format!("EXEC sp_who2 {waiter}"));
    assert_eq!(who2.len(), 1, "{who2:?}");
    assert_eq!(who2[0][0].trim(), waiter.to_string(), "{who2:?}");
    assert_eq!(who2[0][1], "suspended", "{who2:?}");
    assert_eq!(who2[0][4].trim(), holder_spid, "BlkBy: {who2:?}");
    assert_eq!(who2[0][5], "master", "{who2:?}");
    let everyone = rows(&mut observer, "EXEC sp_who2");
    let holder_row = everyone.iter().find(|r| r[0].trim() == holder_spid).expect("holder");
    assert_eq!((holder_row[1].as_str(), holder_row[4].as_str()), ("sleeping", "  ."));
    let sessions = rows(
        &mut observer,
        "SELECT session_id, status, open_transaction_count FROM sys.dm_exec_sessions",
    );
    assert!(
        sessions.iter().any(|s| s[0] == holder_spid && s[1] == "sleeping" && s[2] == "1"),
        "{sessions:?}"
    );
    // DBCC OPENTRAN names the holder's transaction: its begin record pins the log.
    let (errors, opentran) = run(&mut observer, "DBCC OPENTRAN");
    assert!(errors.is_empty(), "{opentran}");
    let field = |name: &str| -> String {
        let line = opentran.lines().find(|l| l.trim_start().starts_with(name));
        let line = line.unwrap_or_else(|| panic!("{name} in {opentran}"));
        line.split_once(':').map(|(_, v)| v.trim().to_string()).unwrap_or_default()
    };
    assert!(opentran.starts_with("Transaction information for database 'master'."), "{opentran}");
    assert_eq!(field("SPID (server process ID)"), holder_spid, "{opentran}");
    assert_eq!(field("Name"), "user_transaction", "{opentran}");
    let lsn = field("LSN");
    let parts: Vec<&str> = lsn.trim_matches(['(', ')']).split(':').collect();
    assert!(parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()), "{lsn}");
    // CONVERT style 109: "Nov 27 2026  3:20:12:351AM" (the time part has colons of its own).
    let start = opentran.lines().find(|l| l.contains("Start time")).expect("a start time");
    let start = start.split_once(": ").map(|(_, v)| v.trim()).unwrap_or_default();
    let shape_ok = start.len() == 26 && (start.ends_with("AM") || start.ends_with("PM"));
    assert!(shape_ok && start[..3].chars().all(|c| c.is_ascii_alphabetic()), "{start:?}");
    // WITH TABLERESULTS: the same facts as rows, as monitoring scripts read them with
    // INSERT ... EXEC; the columns are named after the database and OPENTRAN.
    let mut columns = Vec::new();
    let mut table = Vec::new();
    observer.execute("DBCC OPENTRAN WITH TABLERESULTS, NO_INFOMSGS", &mut |output| {
        if let tsql::server::Output::Rows(set) = output {
            columns = set.columns.clone();
            table = set.rows.iter().map(|r| r.iter().map(tsql::value::display).collect()).collect();
        }
    });
    assert_eq!(columns, ["master", "OPENTRAN"]);
    let table: Vec<Vec<String>> = table;
    let names: Vec<&str> = table.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "OLDACT_SPID",
            "OLDACT_UID",
            "OLDACT_NAME",
            "OLDACT_RECOVERYUNITID",
            "OLDACT_LSN",
            "OLDACT_STARTTIME",
            "OLDACT_SID"
        ]
    );
    assert_eq!(table[0][1], holder_spid);
    assert_eq!(table[2][1], "user_transaction");
    assert_eq!(table[4][1], lsn, "the LSN the text form shows");
    assert_eq!(table[5][1], start, "the start time the text form shows");
    let (errors, _) = run(&mut holder, "COMMIT");
    assert!(errors.is_empty());
    let (_, after) = run(&mut observer, "DBCC OPENTRAN");
    assert!(after.starts_with("No active open transactions."), "{after}");
    let (_, errors, text) = blocked.join().expect("reader");
    assert!(errors.is_empty(), "{text}");
    assert!(text.contains("\n1\n"), "the reader sees the committed value: {text}");
    // The wait was recorded when it ended.
    let recorded = rows(
        &mut observer,
        &format!(
            "SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = '{wait_type}'"
        ),
    );
    assert!(recorded[0][0].parse::<u64>().unwrap() >= 1);
    // sys.dm_os_performance_counters' Locks object counts the same wait, and the requests.
    let locks = rows(
        &mut observer,
        "SELECT RTRIM(counter_name), cntr_value FROM sys.dm_os_performance_counters \
         WHERE object_name = 'SQLServer:Locks' AND instance_name = '_Total'",
    );
    let value = |name: &str| -> u64 {
        let row =
            locks.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("{name}: {locks:?}"));
        row[1].parse().expect("a count")
    };
    assert!(value("Lock Waits/sec") >= 1, "{locks:?}");
    assert!(value("Lock Requests/sec") >= 2, "the holder's and the reader's: {locks:?}");
    assert_eq!(value("Number of Deadlocks/sec"), 0, "{locks:?}");
    // The lock manager counts its own waits: clearing the wait statistics leaves them.
    let (errors, _) = run(&mut observer, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)");
    assert!(errors.is_empty());
    let waits_after_clear = rows(
        &mut observer,
        "SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Lock Waits/sec'",
    );
    assert_eq!(waits_after_clear[0][0], value("Lock Waits/sec").to_string());
}

#[test]
fn checkalloc_reports_an_extent_the_gam_lost_with_sql_servers_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = "CREATE DATABASE c ON (NAME = c_data, FILENAME = 'c_data.mdf', SIZE = 4MB) LOG ON (NAME = c_log, FILENAME = 'c_log.ldf', SIZE = 1MB)";
    let extent: u32 = {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        assert!(run(&mut session, script).0.is_empty());
        let side = "ALTER DATABASE c ADD FILEGROUP side\nALTER DATABASE c ADD FILE (NAME = c_side, FILENAME = 'c_side.ndf', SIZE = 1MB) TO FILEGROUP side";
        assert!(run(&mut session, side).0.is_empty());
        assert!(
            run(&mut session, "USE c\nCREATE TABLE t (id INT PRIMARY KEY)\nINSERT t VALUES (1)")
                .0
                .is_empty()
        );
        let (errors, clean) = run(&mut session, "DBCC CHECKALLOC");
        assert!(errors.is_empty(), "{clean}");
        assert!(
            clean.contains(
                "CHECKALLOC found 0 allocation errors and 0 consistency errors in database 'c'."
            ),
            "{clean}"
        );
        let extent = rows(
            &mut session,
            "SELECT TOP (1) extent_page_id FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), NULL, NULL, 'LIMITED') WHERE is_iam_page = 0",
        );
        drop(session);
        server.shutdown().expect("shutdown");
        extent[0][0].parse().unwrap()
    };
    // Mark the table's extent free in the GAM (page 2), behind the engine's back.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("c_data.mdf"))
        .unwrap();
    let mut gam = engine::page::new_page_buf();
    file.read_exact_at(&mut gam[..], 2 * 8192).unwrap();
    engine::alloc::bitmap_set(&mut gam, extent / 8, true);
    engine::page::seal(&mut gam);
    file.write_all_at(&gam[..], 2 * 8192).unwrap();
    drop(file);
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let (errors, text) = run(&mut session, "DBCC CHECKALLOC ('c')");
    assert!(errors.contains(&8939), "{text}");
    assert!(text.contains(&format!("Test (extent (1:{extent}) is owned or has allocated pages but is free in the GAM) failed. Values are 1 and 0.")), "{text}");
    assert!(
        text.contains(
            "CHECKALLOC found 1 allocation errors and 0 consistency errors in database 'c'."
        ),
        "{text}"
    );
    // CHECKFILEGROUP's allocation checks are its files': PRIMARY's finds the extent, the
    // other filegroup's does not look at it.
    let (errors, text) = run(&mut session, "USE c\nDBCC CHECKFILEGROUP (PRIMARY) WITH NO_INFOMSGS");
    assert_eq!(errors, vec![8939], "{text}");
    assert!(
        text.contains("CHECKFILEGROUP found 1 allocation errors and 0 consistency errors not associated with any single object."),
        "{text}"
    );
    let (errors, text) = run(&mut session, "DBCC CHECKFILEGROUP (side) WITH NO_INFOMSGS");
    assert!(errors.is_empty(), "{text}");
}

/// Field -> VALUE of `DBCC PAGE ... WITH TABLERESULTS`.
fn page_fields(
    session: &mut Session,
    file: &str,
    page: &str,
    printopt: u8,
) -> std::collections::BTreeMap<String, String> {
    rows(session, &format!("DBCC PAGE (0, {file}, {page}, {printopt}) WITH TABLERESULTS"))
        .into_iter()
        .map(|r| (r[2].clone(), r[3].clone()))
        .collect()
}

#[test]
fn allocation_dmvs_agree_with_dbcc_ind_and_page_and_database_files_with_file_headers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut s = Session::new(&server);
    let setup = "CREATE DATABASE k ON PRIMARY (NAME = k1, FILENAME = 'k1.mdf', SIZE = 4MB), (NAME = k2, FILENAME = 'k2.ndf', SIZE = 4MB) LOG ON (NAME = k_log, FILENAME = 'k.ldf', SIZE = 2MB)
GO
USE k
CREATE TABLE t (id INT PRIMARY KEY, pad CHAR(500) NOT NULL)
CREATE INDEX ix_pad ON t (pad)
CREATE TABLE h (id INT NOT NULL, pad CHAR(700) NOT NULL)
SET NOCOUNT ON
BEGIN TRAN
DECLARE @i INT = 0
WHILE @i < 400 BEGIN INSERT t VALUES ((@i * 7919) % 400, CAST(@i AS CHAR(10))); INSERT h VALUES (@i, 'x'); SET @i += 1 END
COMMIT";
    for batch in setup.split("\nGO\n") {
        let (errors, text) = run(&mut s, batch);
        assert!(errors.is_empty(), "{text}");
    }
    for table in ["t", "h"] {
        let object_id = rows(&mut s, &format!("SELECT OBJECT_ID('{table}')"))[0][0].clone();
        let mut ind: Vec<(String, String, String)> =
            rows(&mut s, &format!("DBCC IND (0, '{table}', -1)"))
                .into_iter()
                .map(|r| (r[0].clone(), r[1].clone(), r[9].clone()))
                .collect();
        let dmv = rows(
            &mut s,
            &format!(
                "SELECT allocated_page_file_id, allocated_page_page_id, page_type, page_level FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('{table}'), NULL, NULL, 'DETAILED') WHERE is_allocated = 1"
            ),
        );
        let mut from_dmv: Vec<(String, String, String)> =
            dmv.iter().map(|r| (r[0].clone(), r[1].clone(), r[2].clone())).collect();
        ind.sort();
        from_dmv.sort();
        assert_eq!(ind, from_dmv, "DBCC IND and the DMV list the same pages of {table}");
        assert!(from_dmv.len() > 20, "{table} spans many pages");
        assert!(dmv.iter().any(|r| r[0] == "3"), "{table} has pages in both files");
        for r in &dmv {
            let fields = page_fields(&mut s, &r[0], &r[1], 0);
            assert_eq!(fields["m_type"], r[2], "page ({}:{})", r[0], r[1]);
            assert_eq!(fields["m_level"], r[3], "page ({}:{})", r[0], r[1]);
            assert_eq!(fields["Metadata: ObjectId"], object_id, "page ({}:{})", r[0], r[1]);
        }
    }
    let (errors, text) =
        run(&mut s, "ALTER DATABASE k MODIFY FILE (NAME = k2, SIZE = 6MB, FILEGROWTH = 10%)");
    assert!(errors.is_empty(), "{text}");
    let files = rows(
        &mut s,
        "SELECT file_id, name, size, max_size, growth, is_percent_growth, FILEPROPERTY(name, 'SpaceUsed') FROM sys.database_files WHERE type = 0",
    );
    let usage =
        rows(&mut s, "SELECT file_id, allocated_extent_page_count FROM sys.dm_db_file_space_usage");
    assert_eq!(files.len(), 2);
    for f in &files {
        let header = page_fields(&mut s, &f[0], "0", 3);
        assert_eq!(header["LogicalName"], f[1]);
        assert_eq!(header["Size"], f[2], "file {} size: header against sys.database_files", f[1]);
        assert_eq!(header["MaxSize"], f[3]);
        assert_eq!(header["Growth"], f[4]);
        assert_eq!(header["IsPercentGrowth"], f[5]);
        let used = usage.iter().find(|u| u[0] == f[0]).expect("usage row");
        assert_eq!(f[6], used[1], "FILEPROPERTY SpaceUsed against dm_db_file_space_usage");
    }
    assert_eq!(files.iter().find(|f| f[1] == "k2").unwrap()[2], "768", "6 MB in pages");
}

/// SET STATISTICS TIME's messages have SQL Server's shape, with whole milliseconds (the
/// values are real times, so only their form is checked), and stop with OFF.
#[test]
fn statistics_time_reports_each_batch_and_statement() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let (errors, _) = run(&mut session, "SET STATISTICS TIME ON");
    assert!(errors.is_empty(), "{errors:?}");
    let (errors, text) = run(&mut session, "SELECT COUNT(*) FROM sys.objects\nSELECT 1");
    assert!(errors.is_empty(), "{errors:?}");
    let milliseconds = |line: &str, label: &str| -> u64 {
        let at = line.find(label).unwrap_or_else(|| panic!("{label} in {line:?}")) + label.len();
        let digits: String = line[at..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or_else(|_| panic!("a number after {label} in {line:?}"))
    };
    let lines: Vec<&str> = text.lines().collect();
    let parse = lines.iter().position(|l| *l == "SQL Server parse and compile time: ");
    let parse = parse.unwrap_or_else(|| panic!("the parse line: {text}"));
    milliseconds(lines[parse + 1], "   CPU time = ");
    milliseconds(lines[parse + 1], ", elapsed time = ");
    let executions: Vec<usize> =
        (0..lines.len()).filter(|&i| lines[i] == " SQL Server Execution Times:").collect();
    assert_eq!(executions.len(), 2, "one per statement: {text}");
    for at in executions {
        milliseconds(lines[at + 1], "   CPU time = ");
        milliseconds(lines[at + 1], ",  elapsed time = ");
    }
    let (_, text) = run(&mut session, "SET STATISTICS TIME OFF\nSELECT 1");
    assert!(!text.contains("Execution Times"), "{text}");
}

/// 'max server memory (MB)' is static here: sp_configure and RECONFIGURE configure it, and the
/// next start sizes the buffer pool by it, unless a startup option overrides it for that run.
#[test]
fn max_server_memory_sizes_the_pool_from_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let memory = |config: InstanceConfig| -> Vec<Vec<String>> {
        let server = Server::start(config).expect("server");
        let mut session = Session::new(&server);
        let found = rows(
            &mut session,
            "SELECT c.value, c.value_in_use, i.committed_target_kb \
             FROM sys.configurations c CROSS JOIN sys.dm_os_sys_info i \
             WHERE c.name = 'max server memory (MB)'",
        );
        server.shutdown().expect("shutdown");
        found
    };
    {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        let (errors, text) = run(
            &mut session,
            "EXEC sp_configure 'show advanced options', 1 RECONFIGURE \
             EXEC sp_configure 'max server memory (MB)', 640 RECONFIGURE",
        );
        assert!(errors.is_empty(), "{text}");
        let now = rows(
            &mut session,
            "SELECT value, value_in_use FROM sys.configurations WHERE configuration_id = 1544",
        );
        assert_eq!(now, [["640", "512"]], "in use only from the next start");
        server.shutdown().expect("shutdown");
    }
    assert_eq!(memory(InstanceConfig::new(dir.path())), [["640", "640", "655360"]]);
    let mut overridden = InstanceConfig::new(dir.path());
    overridden.max_server_memory_mb = Some(256);
    assert_eq!(memory(overridden), [["640", "256", "262144"]]);
    assert_eq!(memory(InstanceConfig::new(dir.path())), [["640", "640", "655360"]]);
}

/// BEGIN TRAN's name is the transaction's name in DBCC OPENTRAN: the outermost one only (a
/// nested BEGIN TRAN's name is not kept), a variable's value cut to 32 characters.
#[test]
fn dbcc_opentran_shows_the_name_begin_tran_gave() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let name_in = |session: &mut Session| -> String {
        let (errors, text) = run(session, "DBCC OPENTRAN");
        assert!(errors.is_empty(), "{text}");
        let line = text.lines().find(|l| l.trim_start().starts_with("Name"));
        let line = line.unwrap_or_else(|| panic!("a Name line in {text}"));
        line.split_once(':').map(|(_, v)| v.trim().to_string()).unwrap_or_default()
    };
    let (errors, _) = run(
        &mut session,
        "CREATE TABLE named (id int)\nBEGIN TRAN outer_tran\nBEGIN TRAN inner_tran\n\
         INSERT named VALUES (1)",
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(name_in(&mut session), "outer_tran");
    let (errors, _) = run(&mut session, "ROLLBACK TRAN inner_tran");
    assert_eq!(errors, [6401], "only the outermost name is a transaction's");
    let (errors, text) = run(&mut session, "ROLLBACK TRAN outer_tran\nSELECT @@TRANCOUNT AS n");
    assert!(errors.is_empty() && text.contains("\n0\n"), "{errors:?} {text}");
    let (errors, _) = run(
        &mut session,
        "DECLARE @name nvarchar(60) = REPLICATE(N'v', 40)\nBEGIN TRAN @name\n\
         INSERT named VALUES (2)",
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(name_in(&mut session), "v".repeat(32));
    let (errors, _) = run(&mut session, "COMMIT\nBEGIN TRAN\nINSERT named VALUES (3)");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(name_in(&mut session), "user_transaction");
    run(&mut session, "COMMIT");
    drop(session);
    server.shutdown().expect("shutdown");
}

/// A database whose delimited name holds a tab, a line break or a backslash (SQL Server allows
/// them) is there again after a restart, ONLINE; its registry line keeps them escaped. Before,
/// the registry's tab-separated line broke and the database was gone or SUSPECT.
#[test]
fn a_database_named_with_a_tab_line_break_or_backslash_survives_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let names = ["tab\there", "line\nbreak", "back\\slash"];
    {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        for (n, name) in names.iter().enumerate() {
            let create = format!(
                "CREATE DATABASE [{name}] ON (NAME = f{n}, FILENAME = 'f{n}.mdf') \
                 LOG ON (NAME = f{n}_log, FILENAME = 'f{n}.ldf')"
            );
            let (errors, text) = run(&mut session, &create);
            assert!(errors.is_empty(), "{errors:?} {text}");
        }
        drop(session);
        server.shutdown().expect("shutdown");
    }
    let registry = std::fs::read_to_string(dir.path().join("databases")).unwrap();
    assert_eq!(registry.lines().count(), 4, "master and one line each:\n{registry}");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server restarts");
    let mut session = Session::new(&server);
    for name in names {
        let query = format!(
            "SELECT state_desc FROM sys.databases WHERE name = N'{}'",
            name.replace('\'', "''")
        );
        assert_eq!(rows(&mut session, &query), vec![vec!["ONLINE".to_string()]], "{name:?}");
    }
    drop(session);
    server.shutdown().expect("shutdown");
}

/// sys.dm_db_index_operational_stats counts the waits an index's pages and keys really
/// caused: a read that waits for the latch another thread holds on the index's page is one
/// page latch wait of that index, and a read that waits for a key lock until its LOCK_TIMEOUT
/// is one row lock wait; another table's index has none.
#[test]
fn index_operational_stats_count_each_indexs_latch_and_lock_waits() {
    use engine::latch::LatchMode;
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut observer = Session::new(&server);
    let (errors, _) = run(
        &mut observer,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)\nINSERT t VALUES (1, 0), (2, 0)\nCREATE TABLE u (id INT PRIMARY KEY)",
    );
    assert!(errors.is_empty(), "{errors:?}");
    let key = data_page_of_t(&mut observer);
    let stats = "SELECT OBJECT_NAME(object_id), page_latch_wait_count, page_latch_wait_in_ms, \
                 row_lock_wait_count, row_lock_wait_in_ms FROM \
                 sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL) \
                 WHERE OBJECT_NAME(object_id) IN ('t', 'u') ORDER BY 1";
    let before = rows(&mut observer, stats);
    engine::instance::set_current_spid(90);
    let latched = server.instance.buffer_pool.fetch(key, LatchMode::Ex).expect("the page");
    let reader = spawn_batch(&server, "SELECT v FROM t WHERE id = 1");
    wait_for_value(
        &mut observer,
        "SELECT COUNT(*) FROM sys.dm_os_waiting_tasks WHERE wait_type = 'PAGELATCH_SH' AND session_id > 50",
        "1",
        "the reader never waited for the latch",
    );
    std::thread::sleep(Duration::from_millis(60));
    drop(latched);
    assert!(reader.join().unwrap().0.is_empty());
    let mut holder = Session::new(&server);
    let (errors, _) = run(&mut holder, "BEGIN TRAN\nUPDATE t SET v = 1 WHERE id = 2");
    assert!(errors.is_empty(), "{errors:?}");
    let mut reader = Session::new(&server);
    let (errors, _) = run(&mut reader, "SET LOCK_TIMEOUT 200\nSELECT v FROM t WHERE id = 2");
    assert_eq!(errors, vec![1222]);
    run(&mut holder, "ROLLBACK");
    let after = rows(&mut observer, stats);
    let n = |rows: &[Vec<String>], r: usize, c: usize| rows[r][c].parse::<u64>().unwrap();
    assert_eq!((after[0][0].as_str(), after[1][0].as_str()), ("t", "u"), "{after:?}");
    assert_eq!(n(&after, 0, 1) - n(&before, 0, 1), 1, "one latch wait on t's page: {after:?}");
    assert!(n(&after, 0, 2) >= 50, "it waited about 60 ms: {after:?}");
    assert_eq!(n(&after, 0, 3) - n(&before, 0, 3), 1, "one key lock wait in t: {after:?}");
    assert!(n(&after, 0, 4) >= 150, "it waited its LOCK_TIMEOUT of 200 ms: {after:?}");
    assert_eq!(after[1][1..], ["0", "0", "0", "0"], "u waited for nothing: {after:?}");
    drop((observer, holder, reader));
    server.shutdown().expect("shutdown");
}

/// A request waiting for a page latch names the page in sys.dm_exec_requests.page_resource,
/// and the documented chain (sys.fn_PageResCracker, then sys.dm_db_page_info) leads from the
/// request to that page, its owner and its PFS byte. dm_db_page_info reads the page under a
/// shared latch, so the observer's query waits too, until the holder lets go.
#[test]
fn a_page_latch_wait_leads_through_page_resource_to_the_page_and_its_owner() {
    use engine::latch::LatchMode;
    use std::sync::mpsc;
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut observer = Session::new(&server);
    let (errors, _) =
        run(&mut observer, "CREATE TABLE t (id INT PRIMARY KEY, v INT)\nINSERT t VALUES (1, 0)");
    assert!(errors.is_empty(), "{errors:?}");
    let key = data_page_of_t(&mut observer);
    let object = rows(&mut observer, "SELECT OBJECT_ID('t')")[0][0].clone();
    // Another thread (session 90) holds the page's EX latch until it is told to let go.
    let (held_tx, held_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let holder = {
        let pool = server.instance.buffer_pool.clone();
        std::thread::spawn(move || {
            engine::instance::set_current_spid(90);
            let latched = pool.fetch(key, LatchMode::Ex).expect("the page");
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            drop(latched);
        })
    };
    held_rx.recv().unwrap();
    let reader = spawn_batch(&server, "SELECT v FROM t WHERE id = 1");
    wait_for_value(
        &mut observer,
        "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE wait_type = 'PAGELATCH_SH' AND session_id > 50",
        "1",
        "the reader never waited for the latch",
    );
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        release_tx.send(()).unwrap();
    });
    let chain = "SELECT r.db_id, r.file_id, r.page_id, d.wait_resource, page_info.object_id, \
                 page_info.page_type_desc, page_info.slot_count, page_info.pfs_is_allocated \
                 FROM sys.dm_exec_requests AS d \
                 CROSS APPLY sys.fn_PageResCracker(d.page_resource) AS r \
                 CROSS APPLY sys.dm_db_page_info(r.db_id, r.file_id, r.page_id, 'DETAILED') AS page_info \
                 WHERE d.wait_type = 'PAGELATCH_SH'";
    let found = rows(&mut observer, chain);
    releaser.join().unwrap();
    holder.join().unwrap();
    assert!(reader.join().unwrap().0.is_empty());
    let (db, file, page_no) = (key.database_id, key.page.file_id, key.page.page_no);
    let (db, file, page_no) = (db.to_string(), file.to_string(), page_no.to_string());
    let resource = format!("{db}:{file}:{page_no}");
    let expected = [&db, &file, &page_no, &resource, &object, "DATA_PAGE", "1", "1"];
    assert_eq!(found, vec![expected.map(|s| s.to_string()).to_vec()]);
    // A request that waits for no page has none.
    let own = rows(
        &mut observer,
        "SELECT page_resource FROM sys.dm_exec_requests WHERE session_id = @@SPID",
    );
    assert_eq!(own, vec![vec!["NULL".to_string()]]);
    drop(observer);
    server.shutdown().expect("shutdown");
}

/// A read held in the kernel (here, at a fault-injecting gate) is a pending I/O: listed by
/// sys.dm_io_pending_io_requests with its file's handle, which joins to
/// sys.dm_io_virtual_file_stats and sys.master_files as the usual pending-I/O query does, and
/// counted by its scheduler's pending_disk_io_count and its task's pending_io_count; once it
/// returns it is gone.
#[test]
fn a_read_in_flight_is_a_pending_io_of_its_file_scheduler_and_task() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fault_io = engine::io::FaultIo::new(engine::io::std_io());
    let plan = fault_io.plan();
    let io: std::sync::Arc<dyn engine::io::Io> = std::sync::Arc::new(fault_io);
    let instance = engine::instance::Instance::start_with(
        InstanceConfig::new(dir.path()),
        io,
        engine::clock::system_clock(),
    )
    .expect("instance");
    let server = Server::start_on(instance).expect("server");
    let mut observer = Session::new(&server);
    assert!(run(&mut observer, "CREATE DATABASE pio").0.is_empty());
    let setup = "USE pio\nCREATE TABLE t (id INT PRIMARY KEY, v INT)\n\
                 INSERT t VALUES (1, 0)\nCHECKPOINT\nDBCC DROPCLEANBUFFERS\nUSE master";
    let (errors, _) = run(&mut observer, setup);
    assert!(errors.is_empty(), "{errors:?}");
    let none = "SELECT COUNT(*) FROM sys.dm_io_pending_io_requests";
    assert_eq!(rows(&mut observer, none), vec![vec!["0".to_string()]]);
    let gate = engine::io::IoGate::closed();
    plan.lock().only_paths_ending = Some("pio.mdf".into());
    plan.lock().read_gate = Some(gate.clone());
    let reader = spawn_batch(&server, "USE pio\nSELECT v FROM t WHERE id = 1");
    let deadline = Instant::now() + Duration::from_secs(20);
    while gate.waiting() == 0 {
        assert!(Instant::now() < deadline, "the reader never read pio's data file");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(30));
    let by_file = "SELECT COUNT(*), DB_NAME(vfs.database_id), mf.name, mf.type_desc, \
                   MIN(pior.io_pending_ms_ticks), MIN(pior.io_offset % 8192), \
                   MIN(RIGHT(pior.io_handle_path, 7)) \
                   FROM sys.dm_io_pending_io_requests AS pior \
                   JOIN sys.dm_io_virtual_file_stats(NULL, NULL) AS vfs ON vfs.file_handle = pior.io_handle \
                   JOIN sys.master_files AS mf ON mf.database_id = vfs.database_id AND mf.file_id = vfs.file_id \
                   WHERE pior.io_pending = 1 \
                   GROUP BY vfs.database_id, mf.name, mf.type_desc";
    let found = rows(&mut observer, by_file);
    let by_scheduler = rows(
        &mut observer,
        "SELECT s.pending_disk_io_count, t.pending_io_count FROM sys.dm_io_pending_io_requests AS p \
         JOIN sys.dm_os_schedulers AS s ON s.scheduler_address = p.scheduler_address \
         JOIN sys.dm_os_tasks AS t ON t.scheduler_address = s.scheduler_address AND t.pending_io_count > 0",
    );
    gate.open();
    assert!(reader.join().unwrap().0.is_empty());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0][..4], ["1", "pio", "pio", "ROWS"], "{found:?}");
    let pending_ms: u64 = found[0][4].parse().unwrap();
    assert!(pending_ms >= 25, "it has been pending about 30 ms: {found:?}");
    assert_eq!(found[0][5..], ["0", "pio.mdf"], "a page's offset in pio.mdf: {found:?}");
    assert_eq!(by_scheduler, vec![vec!["1".to_string(), "1".to_string()]]);
    assert_eq!(rows(&mut observer, none), vec![vec!["0".to_string()]], "it returned");
    drop(observer);
    server.shutdown().expect("shutdown");
}

/// Every view sys.system_objects lists can be read (a view listed but not built would answer
/// 208), and the functions this session added are listed with their types.
#[test]
fn every_listed_system_view_can_be_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let views = rows(&mut session, "SELECT name FROM sys.system_objects WHERE type = 'V'");
    assert!(views.len() > 30, "{views:?}");
    for view in &views {
        let (errors, _) = run(&mut session, &format!("SELECT TOP (0) * FROM sys.{}", view[0]));
        assert!(errors.is_empty(), "sys.{}: {errors:?}", view[0]);
    }
    let functions = rows(
        &mut session,
        "SELECT name, type_desc FROM sys.system_objects \
         WHERE name IN ('dm_db_page_info', 'fn_PageResCracker') ORDER BY name",
    );
    assert_eq!(
        functions,
        vec![
            vec!["dm_db_page_info".to_string(), "SQL_INLINE_TABLE_VALUED_FUNCTION".to_string()],
            vec!["fn_PageResCracker".to_string(), "SQL_TABLE_VALUED_FUNCTION".to_string()],
        ]
    );
    drop(session);
    server.shutdown().expect("shutdown");
}

/// A session blocked on a lock, as sys.sysprocesses shows it while it waits (blocked,
/// waittype, lastwaittype, waitresource, status, cmd) under each name the view answers to,
/// and after: its wait counted in sys.dm_exec_session_wait_stats for that session alone, its
/// lastwaittype kept; its rows go when it closes. The system sessions' idle waits are theirs
/// (the lazy writer's LAZYWRITER_SLEEP), and a session's page reads are its physical_io and
/// sp_who2's DiskIO.
#[test]
fn sysprocesses_and_session_wait_stats_follow_a_sessions_waits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let (mut holder, holder_spid) = holder_of_row_1(&server);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (spid_tx, spid_rx) = std::sync::mpsc::channel::<u16>();
    let reader = {
        let server = server.clone();
        std::thread::spawn(move || {
            let mut reader = Session::new(&server);
            spid_tx.send(reader.spid).expect("spid");
            let (errors, _) = run(&mut reader, "SELECT v FROM t WHERE id = 1");
            assert!(errors.is_empty(), "{errors:?}");
            // Stays open until the observer has read its rows.
            done_rx.recv().expect("done");
        })
    };
    let waiter = spid_rx.recv().expect("spid").to_string();
    let mut observer = Session::new(&server);
    let query = format!(
        "SELECT blocked, waittype, lastwaittype, waitresource, RTRIM(status), RTRIM(cmd), waittime FROM sys.sysprocesses WHERE spid = {waiter}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let waiting = loop {
        let row = rows(&mut observer, &query);
        if row[0][0] != "0" {
            break row[0].clone();
        }
        assert!(Instant::now() < deadline, "the reader never waited: {row:?}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(waiting[0], holder_spid, "{waiting:?}");
    assert_eq!((waiting[1].as_str(), waiting[2].as_str()), ("0x0008", "LCK_M_S"), "{waiting:?}");
    assert!(waiting[3].starts_with("KEY: "), "{waiting:?}");
    assert_eq!((waiting[4].as_str(), waiting[5].as_str()), ("suspended", "SELECT"));
    for name in ["master.dbo.sysprocesses", "sysprocesses", "dbo.sysprocesses"] {
        let seen =
            rows(&mut observer, &format!("SELECT blocked FROM {name} WHERE spid = {waiter}"));
        assert_eq!(seen, [[holder_spid.clone()]], "{name}");
    }
    // A TRUNCATE waits for the table's object lock: OBJECT: db:object_id:0, LCK_M_X's code.
    let truncater = spawn_batch(&server, "TRUNCATE TABLE t");
    let object_id = rows(&mut observer, "SELECT OBJECT_ID('t')")[0][0].clone();
    let object_wait = format!("OBJECT: 1:{object_id}:0");
    wait_for_value(
        &mut observer,
        "SELECT COUNT(*) FROM sys.sysprocesses WHERE waittype = 0x000E AND lastwaittype = 'LCK_M_X'",
        "1",
        "the TRUNCATE never waited for the table",
    );
    let truncating = rows(
        &mut observer,
        "SELECT p.waitresource, r.wait_resource FROM sys.sysprocesses AS p \
         JOIN sys.dm_exec_requests AS r ON r.session_id = p.spid WHERE p.waittype = 0x000E",
    );
    assert_eq!(truncating, [[object_wait.clone(), object_wait]]);
    let (errors, _) = run(&mut holder, "COMMIT");
    assert!(errors.is_empty());
    let (errors, text) = truncater.join().expect("truncater");
    assert!(errors.is_empty(), "{text}");
    wait_for_value(
        &mut observer,
        &format!("SELECT RTRIM(cmd) FROM sys.sysprocesses WHERE spid = {waiter}"),
        "AWAITING COMMAND",
        "the reader's batch never ended",
    );
    let after = rows(&mut observer, &query);
    assert_eq!(after[0][..3], ["0", "0x0000", "LCK_M_S"], "{after:?}");
    assert_eq!((after[0][4].as_str(), after[0][6].as_str()), ("sleeping", "0"));
    let session_waits = |observer: &mut Session, spid: &str| {
        rows(
            observer,
            &format!(
                "SELECT wait_type, waiting_tasks_count, wait_time_ms FROM sys.dm_exec_session_wait_stats WHERE session_id = {spid} AND wait_type LIKE 'LCK%'"
            ),
        )
    };
    let waited = session_waits(&mut observer, &waiter);
    assert_eq!((waited.len(), waited[0][0].as_str(), waited[0][1].as_str()), (1, "LCK_M_S", "1"));
    let waited_ms: u64 = waited[0][2].parse().unwrap();
    let seen_ms: u64 = waiting[6].parse().unwrap();
    assert!(waited_ms >= seen_ms, "{waited_ms} ms recorded, {seen_ms} ms seen waiting");
    assert!(session_waits(&mut observer, &holder_spid).is_empty(), "the holder never waited");
    // The system sessions' waits are theirs: the lazy writer's sleeps are session 18's.
    wait_for_value(
        &mut observer,
        "SELECT COUNT(*) FROM sys.dm_exec_session_wait_stats WHERE session_id = 18 AND wait_type = 'LAZYWRITER_SLEEP'",
        "1",
        "the lazy writer's sleeps are not its session's",
    );
    let lazy = rows(
        &mut observer,
        "SELECT RTRIM(status), RTRIM(cmd) FROM sys.sysprocesses WHERE spid = 18",
    );
    assert_eq!(lazy, [["background", "LAZY WRITER"]]);
    // Pages read from disk are the reading session's physical_io and sp_who2's DiskIO.
    let (errors, _) =
        run(&mut observer, "CHECKPOINT\nDBCC DROPCLEANBUFFERS\nSELECT COUNT(*) FROM t");
    assert!(errors.is_empty(), "{errors:?}");
    let me = observer.spid.to_string();
    let physical_io: u64 =
        rows(&mut observer, "SELECT physical_io FROM sys.sysprocesses WHERE spid = @@SPID")[0][0]
            .parse()
            .unwrap();
    assert!(physical_io >= 1, "{physical_io}");
    let who2 = rows(&mut observer, &format!("EXEC sp_who2 {me}"));
    assert!(who2[0][8].parse::<u64>().unwrap() >= physical_io, "DiskIO: {who2:?}");
    // A closed session has no rows.
    done_tx.send(()).expect("done");
    reader.join().expect("reader");
    assert!(session_waits(&mut observer, &waiter).is_empty());
    assert!(
        rows(&mut observer, &format!("SELECT spid FROM sys.sysprocesses WHERE spid = {waiter}"))
            .is_empty()
    );
    drop((holder, observer));
    server.shutdown().expect("shutdown");
}

/// Glenn Berry's "Detect blocking" query, as he writes it, finds a reader blocked on a key
/// lock: sys.dm_tran_locks' lock_owner_address meets sys.dm_os_waiting_tasks'
/// resource_address at the waiter's request, and the waiter's batch comes from
/// sys.dm_exec_sql_text over sys.dm_exec_requests' handle. sys.dm_exec_requests shows the
/// waiter's task, last wait type and statement offsets.
#[test]
fn the_detect_blocking_query_finds_the_waiter_and_its_blocker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let (mut holder, holder_spid) = holder_of_row_1(&server);
    let reader = spawn_batch(&server, "SELECT v FROM t WHERE id = 1");
    let mut observer = Session::new(&server);
    wait_for_value(
        &mut observer,
        "SELECT COUNT(*) FROM sys.dm_exec_requests WHERE wait_type = 'LCK_M_S'",
        "1",
        "the reader never waited",
    );
    let detect_blocking =
        "SELECT t1.resource_type AS [lock type], DB_NAME(resource_database_id) AS [database],
t1.resource_associated_entity_id AS [blk object],t1.request_mode AS [lock req],
t1.request_session_id AS [waiter sid], t2.wait_duration_ms AS [wait time],
(SELECT [text] FROM sys.dm_exec_requests AS r WITH (NOLOCK)
CROSS APPLY sys.dm_exec_sql_text(r.[sql_handle])
WHERE r.session_id = t1.request_session_id) AS [waiter_batch],
(SELECT SUBSTRING(qt.[text],r.statement_start_offset/2,
    (CASE WHEN r.statement_end_offset = -1
    THEN LEN(CONVERT(nvarchar(max), qt.[text])) * 2
    ELSE r.statement_end_offset END - r.statement_start_offset)/2)
FROM sys.dm_exec_requests AS r WITH (NOLOCK)
CROSS APPLY sys.dm_exec_sql_text(r.[sql_handle]) AS qt
WHERE r.session_id = t1.request_session_id) AS [waiter_stmt],
t2.blocking_session_id AS [blocker sid],
(SELECT [text] FROM sys.sysprocesses AS p
CROSS APPLY sys.dm_exec_sql_text(p.[sql_handle])
WHERE p.spid = t2.blocking_session_id) AS [blocker_batch]
FROM sys.dm_tran_locks AS t1 WITH (NOLOCK)
INNER JOIN sys.dm_os_waiting_tasks AS t2 WITH (NOLOCK)
ON t1.lock_owner_address = t2.resource_address OPTION (RECOMPILE);";
    let found = rows(&mut observer, detect_blocking);
    assert_eq!(found.len(), 1, "{found:?}");
    let row = &found[0];
    let waiter = rows(
        &mut observer,
        "SELECT session_id FROM sys.dm_exec_requests WHERE wait_type = 'LCK_M_S'",
    )[0][0]
        .clone();
    assert_eq!((row[0].as_str(), row[1].as_str(), row[3].as_str()), ("KEY", "master", "S"));
    assert_eq!(row[4], waiter);
    assert_eq!(row[6], "SELECT v FROM t WHERE id = 1");
    // Offsets 0 and -1 (the whole batch): SUBSTRING from 0 drops the last character, as it
    // does on SQL Server for a statement at the batch's start.
    assert_eq!(row[7], "SELECT v FROM t WHERE id = ");
    assert_eq!(row[8], holder_spid);
    // The blocker sleeps (AWAITING COMMAND): sysprocesses' handle is zeros, as SQL Server's
    // is for a session with no running batch, so the query finds no batch text for it.
    assert_eq!(row[9], "NULL");
    // The waiter's request and its waiting task name the same task; the blocker, a sleeping
    // session, runs no task, so the blocking task has no address.
    let task = rows(
        &mut observer,
        &format!(
            "SELECT CASE WHEN r.task_address = w.waiting_task_address THEN 'same' END, \
             r.last_wait_type, r.statement_start_offset, r.statement_end_offset, \
             w.blocking_task_address, r.user_id, r.dop \
             FROM sys.dm_exec_requests AS r JOIN sys.dm_os_waiting_tasks AS w \
             ON w.session_id = r.session_id WHERE r.session_id = {waiter}"
        ),
    );
    assert_eq!(task, [["same", "LCK_M_S", "0", "-1", "NULL", "1", "1"]]);
    let (errors, _) = run(&mut holder, "COMMIT");
    assert!(errors.is_empty(), "{errors:?}");
    let (errors, text) = reader.join().expect("reader");
    assert!(errors.is_empty(), "{text}");
    drop((holder, observer));
    server.shutdown().expect("shutdown");
}
