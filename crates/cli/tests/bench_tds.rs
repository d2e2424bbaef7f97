//! `extentdb bench tds` runs end to end on a small load: both insert shapes load their rows
//! over TDS and in process, and every measurement line reports a rate on each side (no
//! timing is asserted; the figures belong to docs/benchmarks.md).

use std::process::Command;

/// The numbers of a measurement line, in order (rates, the ratio).
fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .filter_map(|w| w.trim_end_matches(['%', ',']).trim_end_matches("/s").parse().ok())
        .collect()
}

#[test]
fn bench_tds_measures_each_load_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "tds", "--seconds", "1", "--rows", "320", "--rounds", "2", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    for label in [
        "SELECT 1, 1 connection(s)",
        "SELECT 1, 16 connection(s)",
        "INSERT, 16 conn., server-side loop",
        "INSERT, 16 conn., a round trip a row",
    ] {
        let line = stdout.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| {
            panic!("no line {label:?} in\n{stdout}");
        });
        let figures = numbers(&line[label.len()..]);
        assert!(
            figures.len() == 3 && figures.iter().all(|&f| f > 0.0),
            "{label}: embedded, TDS and ratio: {figures:?}"
        );
    }
    assert!(stdout.contains("KB per connection"), "{stdout}");
    // The run's data directories are removed at the end.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
