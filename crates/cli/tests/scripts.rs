//! Script files as sqlcmd reads them (`run`'s files, the shell's `:r`): a script saved by SSMS,
//! in UTF-8 with a byte-order mark or in UTF-16, runs as written (crates/cli/src/script_file.rs).
//! Before, the UTF-8 mark made the first statement a syntax error (156) and a UTF-16 file was
//! "Invalid filename".

use std::io::Write;
use std::process::{Command, Stdio};

const SCRIPT: &str = "SELECT N'\u{e9}t\u{e9}' AS word;\r\nGO\r\n";

fn utf8_with_mark() -> Vec<u8> {
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend_from_slice(SCRIPT.as_bytes());
    bytes
}

fn utf16_le_with_mark() -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xFE];
    for unit in SCRIPT.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    bytes
}

#[test]
fn run_reads_scripts_saved_with_a_byte_order_mark() {
    let work = tempfile::tempdir().unwrap();
    let utf8 = work.path().join("utf8.sql");
    let utf16 = work.path().join("utf16.sql");
    std::fs::write(&utf8, utf8_with_mark()).unwrap();
    std::fs::write(&utf16, utf16_le_with_mark()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["run", "-b", "--dir"])
        .arg(work.path().join("data"))
        .args([&utf8, &utf16])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.matches("word\n----\n\u{e9}t\u{e9}\n").count(), 2, "{stdout}");
}

#[test]
fn the_shells_r_command_reads_a_utf16_script() {
    let work = tempfile::tempdir().unwrap();
    let utf16 = work.path().join("included.sql");
    std::fs::write(&utf16, utf16_le_with_mark()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["shell", "-b", "--dir"])
        .arg(work.path().join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = format!(":r {}\nexit\n", utf16.display());
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("word\n----\n\u{e9}t\u{e9}\n"), "{stdout}");
}
