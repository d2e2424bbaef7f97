//! Interoperability with real SQL Server clients (issue "TDS server…"): FreeTDS `tsql`,
//! pytds, pymssql, go-mssqldb and Microsoft's JDBC driver each connect to `extentdb serve`,
//! run seed 004's example end to end, a parameterised query, a transaction that rolls back,
//! and get error 208 with its number; without TLS and with TLS. (tiberius is tested in the
//! tds crate.)
//!
//! These need the clients installed, which `scripts/test.sh` does (apt freetds-bin; a Python
//! virtual environment with python-tds, pymssql and pyOpenSSL; Go modules and Maven
//! artifacts fetched by the builds here) before it runs them with `--ignored`;
//! `EXTENTDB_INTEROP_PYTHON` names that environment's python.

mod common;

use std::process::{Command, Stdio};

fn python() -> String {
    std::env::var("EXTENTDB_INTEROP_PYTHON")
        .expect("EXTENTDB_INTEROP_PYTHON names a python with the clients (scripts/test.sh sets it)")
}

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

fn run_client(client: &str) {
    let server = common::serve("Str0ng!Passw0rd");
    let (port, dir) = (server.port, server.dir.path());
    for tls in ["plain", "tls"] {
        let output = Command::new(python())
            .arg(repo("tests/interop/python_clients.py"))
            .args(["127.0.0.1", &port.to_string(), "Str0ng!Passw0rd"])
            .arg(repo("examples/seed004_create_drop.sql"))
            .args([client, tls])
            .arg(dir.join("tds_cert.pem"))
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
    server.stop_cleanly();
}

/// FreeTDS `tsql` (apt: freetds-bin), plain and with `encryption = require` from a private
/// freetds.conf: seed 004's example piped in, sp_executesql with a parameter, a rolled-back
/// transaction, and Msg 208.
#[test]
#[ignore = "needs FreeTDS tsql, which scripts/test.sh installs"]
fn freetds_tsql_plain_and_tls() {
    let server = common::serve("Str0ng!Passw0rd");
    let (port, dir) = (server.port, server.dir.path());
    let example = std::fs::read_to_string(repo("examples/seed004_create_drop.sql")).unwrap();
    let checks = "EXEC sp_executesql N'SELECT @p + 1 AS n', N'@p int', @p = 41\ngo\n\
        BEGIN TRAN\nCREATE TABLE r (id int)\nINSERT r VALUES (1)\nROLLBACK\nSELECT OBJECT_ID('r') AS gone\ngo\n\
        SELECT * FROM no_such_table\ngo\nexit\n";
    let conf = dir.join("freetds.conf");
    std::fs::write(&conf, "[global]\n\tencryption = require\n").unwrap();
    for tls in [false, true] {
        let mut command = Command::new("tsql");
        command.args([
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "sa",
            "-P",
            "Str0ng!Passw0rd",
        ]);
        if tls {
            command.env("FREETDSCONF", &conf);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tsql (freetds-bin)");
        {
            use std::io::Write;
            let mut input = child.stdin.take().unwrap();
            input.write_all(example.as_bytes()).unwrap();
            input.write_all(b"\n").unwrap();
            input.write_all(checks.as_bytes()).unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(out.contains("files4\tf4_data4"), "tls {tls}: seed 004's example\n{out}");
        assert!(out.contains("n\n42\n"), "tls {tls}: sp_executesql\n{out}");
        assert!(out.contains("gone\nNULL\n"), "tls {tls}: rollback\n{out}");
        assert!(out.contains("Msg 208 (severity 16, state 1)"), "tls {tls}: error 208\n{out}");
    }
    server.stop_cleanly();
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

/// Runs a client program for plain and TLS and checks its report lines.
fn run_program(label: &str, program: &mut dyn FnMut(&str, u16) -> std::process::Output) {
    let server = common::serve("Str0ng!Passw0rd");
    let port = server.port;
    for tls in ["plain", "tls"] {
        let output = program(tls, port);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{label} {tls}:\n{stdout}\n{stderr}");
        for check in
            ["connected", "example ran", "parameterised query ok", "rollback ok", "error 208 ok"]
        {
            assert!(
                stdout.contains(&format!("{label} {tls}: {check}")),
                "{label} {tls}: {check}\n{stdout}"
            );
        }
    }
    server.stop_cleanly();
}

/// go-mssqldb v1.11.2 (Go module proxy): tests/interop/go, built here.
#[test]
#[ignore = "needs Go and the module proxy (scripts/test.sh runs it)"]
fn go_mssqldb_plain_and_tls() {
    let build = tempfile::tempdir().unwrap();
    let binary = build.path().join("interop-go");
    let built = Command::new("go")
        .args(["build", "-mod=mod", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(repo("tests/interop/go"))
        .status()
        .expect("go");
    assert!(built.success(), "go build");
    run_program("go-mssqldb", &mut |tls, port| {
        let output = Command::new(&binary)
            .args(["127.0.0.1", &port.to_string(), "Str0ng!Passw0rd"])
            .arg(repo("examples/seed004_create_drop.sql"))
            .arg(tls)
            .output()
            .unwrap();
        // A context deadline sends ATTENTION: the loop stops on the server, plain and over
        // full TLS (where the watcher sees only an encrypted record).
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(&format!("go-mssqldb {tls}: cancel ok")), "{stdout}");
        output
    });
}

/// Microsoft's JDBC driver 13.6.2 (Maven Central): tests/interop/jdbc, built here with Maven.
#[test]
#[ignore = "needs Java and Maven (scripts/test.sh runs it)"]
fn mssql_jdbc_plain_and_tls() {
    let project = repo("tests/interop/jdbc");
    let built = Command::new("mvn")
        .args(["-q", "-B", "package", "dependency:copy-dependencies"])
        .current_dir(&project)
        .status()
        .expect("mvn");
    assert!(built.success(), "mvn package");
    let classpath = format!(
        "{}:{}/*",
        project.join("target/classes").display(),
        project.join("target/dependency").display()
    );
    run_program("jdbc", &mut |tls, port| {
        Command::new("java")
            .args(["-cp", &classpath, "Interop", "127.0.0.1", &port.to_string(), "Str0ng!Passw0rd"])
            .arg(repo("examples/seed004_create_drop.sql"))
            .arg(tls)
            .output()
            .unwrap()
    });
}
