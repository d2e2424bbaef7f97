//! Interoperability with real SQL Server clients (issue "TDS server…"): each connects to
//! `extentdb serve`, runs seed 004's example end to end, a parameterised query, a transaction
//! that rolls back, and gets error 208 with its number; without TLS and with TLS.
//!
//! These need the clients installed, which `scripts/test.sh` does (a Python virtual
//! environment with python-tds, pymssql and pyOpenSSL) before it runs them with `--ignored`;
//! `EXTENTDB_INTEROP_PYTHON` names that environment's python.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn python() -> String {
    std::env::var("EXTENTDB_INTEROP_PYTHON")
        .expect("EXTENTDB_INTEROP_PYTHON names a python with the clients (scripts/test.sh sets it)")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn run_client(client: &str) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["serve", "--port", &port.to_string(), "--dir"])
        .arg(dir.path())
        .env("EXTENTDB_SA_PASSWORD", "Str0ng!Passw0rd")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    for tls in ["plain", "tls"] {
        let output = Command::new(python())
            .arg(repo("tests/interop/python_clients.py"))
            .args(["127.0.0.1", &port.to_string(), "Str0ng!Passw0rd"])
            .arg(repo("examples/seed004_create_drop.sql"))
            .args([client, tls])
            .arg(dir.path().join("tds_cert.pem"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{client} {tls}:\n{stdout}\n{stderr}");
        for check in
            ["connected", "example ran", "parameterised query ok", "rollback ok", "error 208 ok"]
        {
            assert!(
                stdout.contains(&format!("{client} {tls}: {check}")),
                "{client} {tls}: {check}\n{stdout}"
            );
        }
    }
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let exit = server.wait().unwrap();
    assert!(exit.success(), "the server stops cleanly after the clients");
}

#[test]
#[ignore = "needs the Python clients that scripts/test.sh installs"]
fn pytds_plain_and_tls() {
    run_client("pytds");
}

#[test]
#[ignore = "needs the Python clients that scripts/test.sh installs"]
fn pymssql_plain_and_tls() {
    run_client("pymssql");
}
