//! sqlservr's startup options on `shell` (and `run` and `serve`, which share them): `-T` trace
//! flags, `--startup-e` (sqlservr's -E), `--schedulers` (sqlservr's -P) and
//! `--max-server-memory-mb`, which sizes the buffer pool. The errorlog lists them as SQL Server's does, and the T-SQL surfaces show them.

use std::process::Command;

fn shell(dir: &std::path::Path, args: &[&str], query: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .arg("shell")
        .arg("--dir")
        .arg(dir)
        .args(args)
        .args(["-b", "-Q", query])
        .output()
        .unwrap()
}

#[test]
fn startup_options_reach_the_instance_and_the_errorlog() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "-T",
        "1165",
        "-T3004",
        "--startup-e",
        "--max-server-memory-mb",
        "256",
        "--schedulers",
        "7",
    ];
    let query = "DBCC TRACESTATUS(-1); \
                 SELECT value_in_use FROM sys.configurations WHERE configuration_id = 1544; \
                 SELECT committed_target_kb FROM sys.dm_os_sys_info; \
                 SELECT COUNT(*) AS schedulers FROM sys.dm_os_schedulers";
    let output = shell(dir.path(), &args, query);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let expected = ["1165      1      1", "3004      1      1", "\n256\n", "\n262144\n", "\n7\n"];
    for expected in expected {
        assert!(stdout.contains(expected), "{expected:?} not in:\n{stdout}");
    }
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    let at = |text: &str| errorlog.find(text).unwrap_or_else(|| panic!("{text:?}: {errorlog}"));
    let header = at("Command Line Startup Parameters:");
    assert!(header < at("\t -E") && at("\t -E") < at("\t -T 1165") && at("\t -T 3004") > 0);
    assert!(at("\t -T 3004") < at("\t -P 7"), "{errorlog}");

    // The default pool, without options: 512 MB and no trace flags.
    let plain = tempfile::tempdir().unwrap();
    let output = shell(plain.path(), &[], "SELECT committed_target_kb FROM sys.dm_os_sys_info");
    assert!(String::from_utf8_lossy(&output.stdout).contains("\n524288\n"));
}

#[test]
fn a_max_server_memory_below_sql_servers_minimum_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = shell(dir.path(), &["--max-server-memory-mb", "64"], "SELECT 1");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("64 is not in 128.."), "{stderr}");
    assert!(!dir.path().join("ERRORLOG").exists(), "nothing started");
}

/// A relative `--dir` is made absolute before anything is created in it: the physical names
/// (sys.database_files, the instance's `databases` file) are absolute, as SQL Server's are, so
/// the instance starts again from another working directory. (They were relative to the
/// working directory of the first start, and a start from anywhere else failed with 5120 on
/// master's file.)
#[test]
fn a_relative_data_directory_is_kept_absolute_and_starts_from_anywhere() {
    let work = tempfile::tempdir().unwrap();
    let create = "CREATE DATABASE rel; \
                  EXEC('USE rel; CREATE TABLE t (a int); INSERT t VALUES (7)'); \
                  SELECT physical_name FROM rel.sys.database_files";
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .current_dir(work.path())
        .args(["shell", "--dir", "relative-data", "-b", "-Q", create])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let dir = work.path().join("relative-data");
    assert!(stdout.contains(&format!("{}/rel.mdf", dir.display())), "{stdout}");
    let databases = std::fs::read_to_string(dir.join("databases")).unwrap();
    assert!(databases.contains(&format!("\t{}/master_data.mdf", dir.display())), "{databases}");

    // From another working directory, by its absolute path.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .current_dir(elsewhere.path())
        .arg("shell")
        .arg("--dir")
        .arg(&dir)
        .args(["-d", "rel", "-b", "-Q", "SELECT a AS found FROM t"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("found\n-----\n7\n"), "{stdout}");
}

/// A data directory whose path is not Unicode, or holds a control character, is refused
/// before anything is made: the files' names would be stored with U+FFFD for the bad bytes, or
/// break the `databases` file's lines, and name no file at the next start.
#[test]
fn a_data_directory_whose_path_is_not_unicode_or_has_a_line_break_is_refused_and_not_made() {
    use std::os::unix::ffi::OsStrExt;
    let work = tempfile::tempdir().unwrap();
    let cases: [(&[u8], &str); 2] = [
        (b"not-\xffunicode", "is not a valid Unicode path"),
        (b"line\nbreak", "holds a control character"),
    ];
    for (name, expected) in cases {
        let dir = work.path().join(std::ffi::OsStr::from_bytes(name));
        let output = shell(&dir, &[], "SELECT 1");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{stderr}");
        assert!(stderr.contains("Msg 5123, Level 16, State 1"), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!dir.exists(), "nothing is made");
    }
}

/// The embedded shell's -d (sqlcmd's): the session starts in that database (it was taken only
/// with -S, and the embedded shell started in master whatever it said), or the shell ends with
/// the login's 4060 when there is no such database.
#[test]
fn the_shells_d_option_starts_the_embedded_session_in_that_database() {
    let dir = tempfile::tempdir().unwrap();
    let output = shell(dir.path(), &[], "CREATE DATABASE start_here");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output = shell(dir.path(), &["-d", "start_here"], "SELECT DB_NAME() AS db");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("start_here"), "{stdout}");
    assert!(!stdout.contains("Changed database context"), "silent, as a login's: {stdout}");
    let output = shell(dir.path(), &["-d", "not_there"], "SELECT 1");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Msg 4060, Level 11, State 1\nCannot open database \"not_there\" requested by the login. The login failed."),
        "{stderr}"
    );
}

/// A data directory that cannot be made names itself and the operating system's error, as SQL
/// Server prints one (it was "CREATE DIRECTORY: File exists (os error 17)", with no path).
#[test]
fn a_data_directory_that_cannot_be_made_is_named_with_the_os_error() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let output = shell(&file, &[], "SELECT 1");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let expected = format!(
        "Msg 5123, Level 16, State 1\nInstance start in \"{}\": operating system error 17(File exists)",
        file.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}

/// SQL Server's own default of 'max server memory (MB)', 2147483647, starts an instance whose
/// pool is 80 % of the machine's memory (SQL Server on Linux's default limit); it aborted the
/// process, asking for 2 PB of frames, and 1000000 (1 TB) was killed by the kernel. The
/// errorlog says how much memory it detected, as SQL Server's does.
#[test]
fn a_max_server_memory_above_the_machine_is_capped_at_80_percent_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let query = "SELECT physical_memory_kb, committed_target_kb FROM sys.dm_os_sys_info";
    let output = shell(dir.path(), &["--max-server-memory-mb", "2147483647"], query);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let values: Vec<u64> = stdout
        .lines()
        .nth(2)
        .expect(&stdout)
        .split_whitespace()
        .map(|value| value.parse().unwrap())
        .collect();
    let (physical_kb, target_kb) = (values[0], values[1]);
    let physical_mb = physical_kb / 1024;
    assert_eq!(target_kb, (physical_mb * 80 / 100).max(128) * 1024, "{stdout}");
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    let detected = format!(
        "Detected {physical_mb} MB of RAM. This is an informational message; no user action is required."
    );
    assert!(errorlog.contains(&detected), "{errorlog}");
}
