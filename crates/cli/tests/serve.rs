//! `extentdb serve` as a user starts it: the first start refuses a weak sa password with
//! SQL Server's policy error and writes nothing; with a strong one it listens, an idle client
//! does not hold it up, and SIGTERM ends it cleanly with the errorlog's shutdown line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

#[test]
fn a_weak_sa_password_is_refused_at_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["serve", "--port", "0", "--dir"])
        .arg(dir.path())
        .env("EXTENTDB_SA_PASSWORD", "password")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("15118") && stderr.contains("not complex enough"), "{stderr}");
    assert!(!dir.path().join("logins").exists());
}

#[test]
fn sigterm_stops_the_server_cleanly_with_an_idle_client_connected() {
    let mut served = common::serve("Str0ng!Passw0rd");
    let (port, dir) = (served.port, served.dir.path().to_path_buf());
    let idle = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let pid = served.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = served.child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "the server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = served.stderr.take().unwrap().join().unwrap();
    assert!(exit.success(), "{stderr}");
    drop(idle);
    let errorlog = std::fs::read_to_string(dir.join("ERRORLOG")).unwrap();
    assert!(
        errorlog.contains(&format!("Server is listening on [ 127.0.0.1 <ipv4> {port}].")),
        "{errorlog}"
    );
    assert!(
        errorlog.contains("SQL Server is terminating because of a system shutdown."),
        "{errorlog}"
    );
    let logins = std::fs::read_to_string(dir.join("logins")).unwrap();
    assert!(logins.starts_with("sa\t$argon2id$") && !logins.contains("Str0ng!Passw0rd"));
}

fn shell(port: u16, extra: &[&str], stdin: Option<&str>) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["shell", "-S", &format!("127.0.0.1,{port}"), "-U", "sa", "-P", "Str0ng!Passw0rd"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stdout).to_string())
}

#[test]
fn the_shell_speaks_tds_and_runs_a_seed_example_over_it() {
    let mut served = common::serve("Str0ng!Passw0rd");
    let port = served.port;
    let (ok, out) = shell(port, &["-Q", "SELECT 1 AS one; PRINT 'printed'", "-b"], None);
    assert!(ok, "{out}");
    assert!(out.contains("one\n---\n1\n") && out.contains("printed"), "{out}");
    let (ok, out) = shell(port, &["-Q", "SELECT * FROM no_such_table", "-b"], None);
    assert!(!ok, "-b makes an error the exit code");
    assert!(
        out.contains("Msg 208, Level 16, State 1, Line 1\nInvalid object name 'no_such_table'."),
        "{out}"
    );
    let (ok, out) = shell(
        port,
        &[
            "-Q",
            "BEGIN TRAN; CREATE TABLE r (id int); INSERT r VALUES (1); ROLLBACK; SELECT OBJECT_ID('r') AS gone",
        ],
        None,
    );
    assert!(ok && out.contains("gone\n----\nNULL"), "{out}");
    // Seed 004's example, as a script piped into the shell (GO-separated batches).
    let script = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/seed004_create_drop.sql"),
    )
    .unwrap();
    let (ok, out) = shell(port, &["-b"], Some(&script));
    assert!(ok, "{out}");
    assert!(out.contains("files4        f4_data4"), "{out}");
    served.stop();
}

/// Out of file descriptors (a hard limit of 64, which the server cannot raise), the listener
/// neither spins nor floods its errorlog: clients it cannot accept wait in the backlog, the
/// errorlog says so once, and when connections close it accepts again and serves queries.
#[test]
fn out_of_file_descriptors_the_listener_waits_and_logs_once() {
    let served = common::serve_under_ulimit("Str0ng!Passw0rd", "-n 64");
    let port = served.port;
    let errorlog_path = served.dir.path().join("ERRORLOG");
    let errorlog = || std::fs::read_to_string(&errorlog_path).unwrap();
    let clients: Vec<std::net::TcpStream> =
        (0..40).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !errorlog().contains("TDS: accept failed") {
        assert!(Instant::now() < deadline, "40 clients never used up 64 descriptors");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ten retries' time at least: each retry would have been a line before.
    std::thread::sleep(Duration::from_millis(1500));
    let failure_lines = errorlog().matches("TDS: accept failed").count();
    // A server that logs each retry would fill the disk: `served` kills it if this fails.
    assert_eq!(failure_lines, 1, "accept failures logged {failure_lines} times in 1.5 s");
    drop(clients);
    while !errorlog().contains("TDS: accepting connections again after") {
        assert!(Instant::now() < deadline, "no accept after the clients left: {}", errorlog());
        std::thread::sleep(Duration::from_millis(50));
    }
    let (ok, out) = shell(port, &["-Q", "SELECT 40 + 2 AS answer"], None);
    assert!(ok && out.contains("42"), "{out}");
    served.stop_cleanly();
}

/// The server raises its soft limit on open files to the hard limit at start (a login
/// session's soft 1,024 ran out near 200 connections).
#[cfg(target_os = "linux")]
#[test]
fn the_server_raises_its_soft_open_file_limit_to_the_hard_limit() {
    let served = common::serve_under_ulimit("Str0ng!Passw0rd", "-Sn 200");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", served.child.id())).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let figures: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    let (soft, hard) = (figures[0], figures[1]);
    // An unlimited hard limit gives the kernel's default nr_open (1,048,576).
    let wanted = if hard == "unlimited" { "1048576" } else { hard };
    assert!(soft == wanted && soft != "200", "{line}");
    served.stop_cleanly();
}

/// A logged-in connection holds at most three of the server's file descriptors (its socket,
/// the handle that closes it at shutdown, the one its ATTENTION watcher peeks at), so a
/// default soft limit of 1,024 would still serve 300 connections; it held five.
#[cfg(target_os = "linux")]
#[test]
fn a_connection_holds_at_most_three_of_the_servers_file_descriptors() {
    let served = common::serve("Str0ng!Passw0rd");
    let fd_dir = format!("/proc/{}/fd", served.child.id());
    let open_files = || std::fs::read_dir(&fd_dir).unwrap().count();
    let address = format!("127.0.0.1:{}", served.port);
    let connect = || tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master");
    // One connection first, so that what a first session sets up once is not counted.
    let first = connect().unwrap();
    let before = open_files();
    let clients: Vec<_> = (0..40).map(|_| connect().unwrap()).collect();
    let opened = open_files() - before;
    // A few descriptors the server has open for a moment (a file being written) may be counted.
    let most = 3 * clients.len() + 4;
    assert!(opened <= most, "{opened} more descriptors for {} connections", clients.len());
    drop(clients);
    drop(first);
    served.stop_cleanly();
}

/// While a server runs on a data directory, another extentdb process on it (here the embedded
/// shell) is refused before it touches a file, naming the server's process; once the server
/// has stopped, the directory is free. Two processes on one directory each wrote pages and
/// log that the other did not know of.
#[test]
fn a_second_process_on_a_served_data_directory_is_refused_until_the_server_stops() {
    let mut served = common::serve("Str0ng!Passw0rd");
    let dir = served.dir.path().to_path_buf();
    let errorlog_before = std::fs::read_to_string(dir.join("ERRORLOG")).unwrap();
    let embedded = |query: &str| {
        Command::new(env!("CARGO_BIN_EXE_extentdb"))
            .args(["shell", "-b", "-Q", query, "--dir"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    let output = embedded("CREATE DATABASE second_writer");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("because it is being used by another process"), "{stderr}");
    assert!(stderr.contains(&format!("extentdb process {}", served.child.id())), "{stderr}");
    let errorlog_after = std::fs::read_to_string(dir.join("ERRORLOG")).unwrap();
    assert_eq!(errorlog_after, errorlog_before, "the refused process wrote nothing");

    // Stopped, not dropped: the directory (the served one's TempDir) stays.
    let (exit, server_stderr) = served.stop();
    assert!(exit.success(), "{server_stderr}");
    let output = embedded("SELECT name FROM sys.databases");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("master"), "{stdout}");
}

/// A port another process listens on: the server says so on standard error, writes SQL
/// Server's 26023 to the errorlog, closes its databases and exits with 1.
#[test]
fn a_port_already_in_use_is_26023_in_the_errorlog_and_the_server_exits() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["serve", "--no-tls", "--port", &port, "--dir"])
        .arg(dir.path())
        .env("EXTENTDB_SA_PASSWORD", "Str0ng!Passw0rd")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("could not listen on 127.0.0.1:{port}")), "{stderr}");
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    let expected = [
        "Error: 26023, Severity: 16, State: 1.".to_string(),
        format!(
            "Server TCP provider failed to listen on [ 127.0.0.1 <ipv4> {port}]. Tcp port is \
             already in use."
        ),
    ];
    for text in expected {
        assert!(errorlog.lines().any(|line| line.ends_with(&text)), "{text}\n{errorlog}");
    }
    drop(taken);
}
