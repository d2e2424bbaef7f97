//! Starting `extentdb serve` for a test: on a port the server picks itself (`--port 0`),
//! read back from its "listening on" line. (A port probed free and then passed in could be
//! taken by another test's server or client meanwhile; the interop tests, which run in
//! parallel, once connected to a sibling's server that way and failed when it stopped.)
#![allow(dead_code, reason = "each test binary that includes this module uses part of it")]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Command, Stdio};

/// A started server: its process, port and data directory, and the rest of its standard
/// error (drained by a thread, so the server never blocks on a full pipe). Dropped while the
/// server still runs (a test that failed before it stopped the server), it kills the server:
/// no test leaves one behind.
pub struct Served {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    /// Taken by [`Served::stop`] (or by a test that reads it itself).
    pub stderr: Option<std::thread::JoinHandle<String>>,
}

impl Served {
    /// Stops the server with SIGTERM, as a service manager does, and waits for it; its exit
    /// status and the rest of its standard error.
    pub fn stop(&mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let exit = self.child.wait().unwrap();
        let stderr = self.stderr.take().map(|drain| drain.join().unwrap()).unwrap_or_default();
        (exit, stderr)
    }

    /// [`Served::stop`], asserting that the server exits cleanly.
    pub fn stop_cleanly(mut self) {
        let (exit, stderr) = self.stop();
        assert!(exit.success(), "the server stops cleanly:\n{stderr}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `extentdb serve --port 0` in a new directory with sa's password `password`.
pub fn serve(password: &str) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_extentdb"));
    command.args(["serve", "--port", "0", "--dir"]).arg(dir.path());
    start(command, dir, password)
}

/// [`serve`] without TLS, under a shell that first runs `ulimit` with `ulimit_args` (`-n 64`,
/// say): the server then starts with those resource limits.
pub fn serve_under_ulimit(password: &str, ulimit_args: &str) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let script =
        format!("ulimit {ulimit_args} && exec \"$0\" serve --no-tls --port 0 --dir \"$1\"");
    let mut command = Command::new("bash");
    command.args(["-c", &script]).arg(env!("CARGO_BIN_EXE_extentdb")).arg(dir.path());
    start(command, dir, password)
}

/// Spawns the server. Its standard output goes nowhere: a server left running by a failed test
/// must not hold the test binary's output pipe open (cargo test would wait for it).
fn start(mut command: Command, dir: tempfile::TempDir, password: &str) -> Served {
    command.env("EXTENTDB_SA_PASSWORD", password).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let port = listening_port(&mut stderr);
    let stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    Served { child, port, dir, stderr: Some(stderr) }
}

/// Reads standard error up to "extentdb: listening on 127.0.0.1:PORT (...)"; its PORT.
fn listening_port(stderr: &mut BufReader<ChildStderr>) -> u16 {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let read = stderr.read_line(&mut line).unwrap();
        assert!(read > 0, "the server ended before it listened:\n{seen}");
        if let Some(rest) = line.strip_prefix("extentdb: listening on ") {
            let address = rest.split_whitespace().next().unwrap();
            return address.rsplit(':').next().unwrap().parse().unwrap();
        }
        seen.push_str(&line);
    }
}
