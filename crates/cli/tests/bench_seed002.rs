//! `extentdb bench seed002` end to end, small: its table, and the affinity masks it takes as
//! RECONFIGURE would.

use std::process::{Command, Output};

fn bench(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "seed002", "--rows", "3000", "--rule", "2022", "--growth", "64MB"])
        .args(["--max-server-memory-mb", "256", "--no-large-pages", "--dir"])
        .arg(dir.path())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_run_reports_its_row_and_names_its_affinity_masks() {
    let output = bench(&["--affinity-mask", "1"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("affinity mask 1, affinity I/O mask 0"), "{stdout}");
    let row = stdout.lines().find(|l| l.starts_with("2022")).expect("the 2022 row");
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields[1], "64MB");
    let duration_s: f64 = fields[2].parse().expect("a duration");
    assert!(duration_s > 0.0, "{row}");
}

#[test]
fn masks_that_share_a_cpu_are_refused_with_5834() {
    let output = bench(&["--affinity-mask", "1", "--affinity-io-mask", "1"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Msg 5834, Level 16: The affinity mask specified conflicts with the IO affinity mask specified."),
        "{stderr}"
    );
}
