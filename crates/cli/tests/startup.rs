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
