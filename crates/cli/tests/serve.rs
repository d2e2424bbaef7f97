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
    let common::Served { mut child, port, dir, stderr } = common::serve("Str0ng!Passw0rd");
    let idle = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "the server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = stderr.join().unwrap();
    assert!(exit.success(), "{stderr}");
    drop(idle);
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    assert!(
        errorlog.contains(&format!("Server is listening on [ 127.0.0.1 <ipv4> {port}].")),
        "{errorlog}"
    );
    assert!(
        errorlog.contains("SQL Server is terminating because of a system shutdown."),
        "{errorlog}"
    );
    let logins = std::fs::read_to_string(dir.path().join("logins")).unwrap();
    assert!(logins.starts_with("sa\t$argon2id$") && !logins.contains("Str0ng!Passw0rd"));
}

/// Starts `extentdb serve`; returns the child, its port and its directory.
fn serve() -> (std::process::Child, u16, tempfile::TempDir) {
    let served = common::serve("Str0ng!Passw0rd");
    (served.child, served.port, served.dir)
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
    let (mut server, port, _dir) = serve();
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
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let _ = server.wait();
}
