//! `extentdb log` end to end: a real log grown by autogrowth, under each VLF rule.

use std::process::Command;

/// The summary's `name value` lines of one run.
fn run(rule: &str) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .current_dir(dir.path())
        .args(["log", "--rule", rule, "--size", "1MB", "--growth", "2MB", "--grow-to", "9MB"])
        .args(["--vlfs"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .take_while(|line| !line.is_empty())
        .map(|line| {
            let (name, value) = line.rsplit_once(' ').unwrap();
            (name.trim().to_string(), value.to_string())
        })
        .collect()
}

fn value(summary: &[(String, String)], name: &str) -> String {
    summary.iter().find(|(n, _)| n.starts_with(name)).unwrap().1.clone()
}

#[test]
fn growing_a_1_mb_log_by_2_mb_to_9_mb_under_each_rule() {
    // 2019: 1 MB makes 4 VLFs; the growths at 1, 3 and 5 MB are at least 1/8 of the size and
    // make 4 each; at 7 MB, 2 MB is still over 7/8 MB: 4 more. All zeroed.
    let old = run("2019");
    assert_eq!(value(&old, "growth_events"), "4");
    assert_eq!(value(&old, "zeroed_growths"), "4");
    assert_eq!(value(&old, "vlf_count"), "20");
    assert_eq!(value(&old, "final_log_size_mb"), "9");
    // 2022: every piece is 64 MB or less: 1 VLF each, and the autogrowths are not zeroed.
    let new = run("2022");
    assert_eq!(value(&new, "growth_events"), "4");
    assert_eq!(value(&new, "zeroed_growths"), "0");
    assert_eq!(value(&new, "writefilegather_ms"), "0");
    assert_eq!(value(&new, "vlf_count"), "5");
}
