//! A process file-size limit (`ulimit -f`, RLIMIT_FSIZE) met by `extentdb run`: each write past
//! it is an error the engine answers as SQL Server answers a full disk, never a kill by SIGXFSZ
//! (crates/cli/src/file_size_limit.rs), and nothing committed is lost.
//!
//! Each test runs the CLI under `bash -c 'ulimit -f KB && exec extentdb run ...'`, then runs it
//! again without the limit on the same data directory to check what was kept.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

/// Runs `extentdb run --dir DIR SCRIPT` under a file-size limit (KB, as `ulimit -f` counts
/// them), or with none.
fn run_script(dir: &Path, script: &str, limit_kb: Option<u64>) -> Output {
    let script_path = dir.join(format!("script-{}.sql", std::process::id()));
    std::fs::write(&script_path, script).unwrap();
    let limit = limit_kb.map_or("unlimited".to_string(), |kb| kb.to_string());
    let output = Command::new("bash")
        .args(["-c", &format!("ulimit -f {limit} && exec \"$0\" run --dir \"$1\" \"$2\"")])
        .arg(env!("CARGO_BIN_EXE_extentdb"))
        .arg(dir.join("data"))
        .arg(&script_path)
        .output()
        .unwrap();
    std::fs::remove_file(&script_path).unwrap();
    output
}

/// Standard output, after asserting that the process ended by itself (no SIGXFSZ), with 0 when
/// `success` and with 1 otherwise.
fn stdout_of_exit(output: &Output, success: bool) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.signal(),
        None,
        "killed by a signal (SIGXFSZ is 25)\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(
        output.status.success(),
        success,
        "{:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

fn stdout_of_clean_exit(output: &Output) -> String {
    stdout_of_exit(output, true)
}

fn errorlog(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("data").join("ERRORLOG")).unwrap()
}

/// The number printed under the last column rule ("-----") of a one-value SELECT.
fn last_count(stdout: &str) -> u64 {
    let lines: Vec<&str> = stdout.lines().collect();
    let rule = lines.iter().rposition(|line| line.starts_with('-')).expect(stdout);
    lines[rule + 1].trim().parse().unwrap_or_else(|_| panic!("no count in:\n{stdout}"))
}

/// What a later run without the limit finds: the row count, after a clean DBCC CHECKDB.
fn count_and_check(dir: &Path, database: &str, table: &str) -> u64 {
    let script = format!(
        "USE {database};\nDBCC CHECKDB({database}) WITH NO_INFOMSGS;\nSELECT COUNT(*) AS row_count FROM {table};\nGO\n"
    );
    let stdout = stdout_of_clean_exit(&run_script(dir, &script, None));
    assert!(!stdout.contains("Msg "), "CHECKDB or the count failed:\n{stdout}");
    last_count(&stdout)
}

/// Autogrowth of a data file past the limit: 1105, as for a full disk, with error 27 in the
/// errorlog; the rows inserted before it are all there afterwards, and the file grows again
/// once the limit is gone.
#[test]
fn a_data_file_growing_past_the_file_size_limit_gets_1105_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let load = "CREATE DATABASE fsz ON (NAME = fsz_data, FILENAME = 'fsz.mdf', SIZE = 4MB, \
                FILEGROWTH = 4MB) LOG ON (NAME = fsz_log, FILENAME = 'fsz.ldf', SIZE = 14MB, \
                FILEGROWTH = 0);\nGO\nUSE fsz;\n\
                CREATE TABLE t (id int IDENTITY PRIMARY KEY, pad char(4100) NOT NULL DEFAULT 'x');\n\
                GO\nSET NOCOUNT ON;\nDECLARE @i int = 0;\n\
                WHILE @i < 3000 BEGIN INSERT t DEFAULT VALUES; IF @@ERROR <> 0 BREAK; \
                SET @i += 1; END\nGO\nSELECT COUNT(*) AS row_count FROM t;\nGO\n";
    // 16 MB: the file grows 4 -> 8 -> 12 -> 16 MB, and the growth to 20 MB meets the limit.
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), load, Some(16 * 1024)));
    assert!(stdout.contains("Msg 1105, Level 17, State 2"), "{stdout}");
    assert!(stdout.contains("because the 'PRIMARY' filegroup is full"), "{stdout}");
    assert!(!stdout.contains("Msg 9002"), "the log must not be what fills:\n{stdout}");
    let errorlog = errorlog(dir.path());
    assert!(
        errorlog.contains("operating system error 27(File too large) while attempting to expand"),
        "{errorlog}"
    );
    let inserted = last_count(&stdout);
    assert!((1000..3000).contains(&inserted), "{inserted} rows before the limit:\n{stdout}");
    let data_file = dir.path().join("data").join("fsz.mdf");
    assert_eq!(std::fs::metadata(&data_file).unwrap().len(), 16 << 20, "no partial growth kept");

    assert_eq!(count_and_check(dir.path(), "fsz", "t"), inserted);
    let more = "USE fsz;\nSET NOCOUNT ON;\nINSERT t DEFAULT VALUES;\nINSERT t DEFAULT VALUES;\n\
                INSERT t DEFAULT VALUES;\nGO\n";
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), more, None));
    assert!(!stdout.contains("Msg "), "{stdout}");
    assert_eq!(count_and_check(dir.path(), "fsz", "t"), inserted + 3);
    assert!(std::fs::metadata(&data_file).unwrap().len() > 16 << 20, "it grew again");
}

/// Growth of a log file past the limit: 9002 ("full due to 'ACTIVE_TRANSACTION'") for the
/// statement that needed the space; the transaction's rollback still has its reserved log
/// space, and the database stays usable.
#[test]
fn a_log_growing_past_the_file_size_limit_gets_9002_and_the_transaction_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    // The instance's own files (master's 8 MB log) are made before the limit.
    let create = "CREATE DATABASE fszlog ON (NAME = fszlog_data, FILENAME = 'fszlog.mdf', \
                  SIZE = 4MB, FILEGROWTH = 0) LOG ON (NAME = fszlog_log, \
                  FILENAME = 'fszlog.ldf', SIZE = 6MB, FILEGROWTH = 1MB);\nGO\nUSE fszlog;\n\
                  CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL);\nINSERT t VALUES (1, 0);\n\
                  GO\n";
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), create, None));
    assert!(!stdout.contains("Msg "), "{stdout}");
    let load = "USE fszlog;\nSET NOCOUNT ON;\nSET XACT_ABORT ON;\nBEGIN TRANSACTION;\n\
                DECLARE @i int = 0;\n\
                WHILE @i < 20000 BEGIN UPDATE t SET v = v + 1; SET @i += 1; END\nCOMMIT;\nGO\n\
                SELECT @@TRANCOUNT AS trancount;\nSELECT v AS [count] FROM t;\nGO\n";
    // 9 MB: the log grows 6 -> 7 -> 8 -> 9 MB, and the growth to 10 MB meets the limit.
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), load, Some(9 * 1024)));
    assert!(stdout.contains("Msg 9002, Level 17, State 2"), "{stdout}");
    assert!(
        stdout.contains(
            "The transaction log for database 'fszlog' is full due to 'ACTIVE_TRANSACTION'."
        ),
        "{stdout}"
    );
    assert_eq!(last_count(&stdout), 0, "XACT_ABORT rolled the transaction back:\n{stdout}");
    let errorlog = errorlog(dir.path());
    assert!(errorlog.contains("operating system error 27(File too large)"), "{errorlog}");
    let log_file = dir.path().join("data").join("fszlog.ldf");
    assert_eq!(std::fs::metadata(&log_file).unwrap().len(), 9 << 20, "no partial growth kept");

    let more = "USE fszlog;\nUPDATE t SET v = 42;\nGO\n";
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), more, Some(9 * 1024)));
    assert!(!stdout.contains("Msg "), "{stdout}");
    assert_eq!(count_and_check(dir.path(), "fszlog", "t"), 1);
}

/// A limit below the size of files that already exist: the log writer's write past it fails
/// (17053 with error 27, then 9001), the database restarts through recovery, and every
/// transaction whose commit returned is there in a later run without the limit.
#[test]
fn a_log_write_past_the_file_size_limit_takes_the_log_offline_and_loses_no_commit() {
    let dir = tempfile::tempdir().unwrap();
    let create = "CREATE DATABASE fszw ON (NAME = fszw_data, FILENAME = 'fszw.mdf', SIZE = 16MB, \
                  FILEGROWTH = 0) LOG ON (NAME = fszw_log, FILENAME = 'fszw.ldf', SIZE = 16MB, \
                  FILEGROWTH = 0);\nGO\nUSE fszw;\n\
                  CREATE TABLE t (id int IDENTITY PRIMARY KEY, pad char(400) NOT NULL DEFAULT 'x');\n\
                  CREATE TABLE progress (id int PRIMARY KEY, rows_committed int NOT NULL);\n\
                  INSERT progress VALUES (1, 0);\nGO\n";
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), create, None));
    assert!(!stdout.contains("Msg "), "{stdout}");
    // Each transaction adds 10 rows and counts them in `progress`, so the two agree after any
    // crash or restart, whichever transaction the failed write stopped.
    let load = "USE fszw;\nSET NOCOUNT ON;\nDECLARE @i int = 0;\nWHILE @i < 2000 BEGIN\n\
                BEGIN TRANSACTION;\nDECLARE @j int = 0;\n\
                WHILE @j < 10 BEGIN INSERT t DEFAULT VALUES; SET @j += 1; END\n\
                UPDATE progress SET rows_committed = rows_committed + 10;\nCOMMIT;\n\
                SET @i += 1;\nEND\nGO\n";
    // 2 MB: the log's first VLFs are below it; its write past 2 MB fails.
    // The run ends with 1: closing the database at its end meets the stopped log too.
    let output = run_script(dir.path(), load, Some(2 * 1024));
    let stdout = stdout_of_exit(&output, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Msg 9001"), "{stderr}");
    assert!(stdout.contains("Msg 9001, Level 21, State 4"), "{stdout}");
    let errorlog = errorlog(dir.path());
    assert!(
        errorlog.contains("SQLServerLogMgr::LogWriter: Operating system error 27(File too large)"),
        "{errorlog}"
    );
    let rows = count_and_check(dir.path(), "fszw", "t");
    let check = "USE fszw;\nSELECT rows_committed FROM progress;\nGO\n";
    let stdout = stdout_of_clean_exit(&run_script(dir.path(), check, None));
    assert_eq!(last_count(&stdout), rows, "the rows and their count agree");
    assert!(rows > 0 && rows < 20_000, "{rows} rows committed before the failed write");
}
