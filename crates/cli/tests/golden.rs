//! Golden tests of the command line: each `golden/NAME.args` holds the arguments of one
//! `extentdb` run (one per line), and `golden/NAME.out` its expected standard output. A change
//! in behaviour shows as a readable diff. `UPDATE_GOLDEN=1 cargo test -p extentdb --test golden`
//! rewrites the expected files; review them with `git diff` before committing.

use std::path::Path;
use std::process::Command;

fn run_case(args_path: &Path) -> Result<(), String> {
    let args_text = std::fs::read_to_string(args_path).map_err(|e| e.to_string())?;
    let args: Vec<&str> =
        args_text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(&args)
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let actual = if output.status.success() {
        stdout
    } else {
        format!("{stdout}exit status: failure\n{}", String::from_utf8_lossy(&output.stderr))
    };
    let expected_path = args_path.with_extension("out");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&expected_path, &actual).map_err(|e| e.to_string())?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(&expected_path)
        .map_err(|e| format!("{}: {e}", expected_path.display()))?;
    if expected != actual {
        return Err(format!(
            "{} differs:\n--- expected\n{expected}\n--- actual\n{actual}",
            args_path.display()
        ));
    }
    Ok(())
}

#[test]
fn golden_cli_runs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "args"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 3, "golden cases are present");
    let failures: Vec<String> = cases.iter().filter_map(|case| run_case(case).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Regression: `extentdb plan ... | head` panicked with "failed printing to stdout: Broken pipe".
#[test]
fn a_closed_output_pipe_ends_the_program_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args([
            "plan",
            "--file",
            "name=a,size=5MB",
            "--file",
            "name=b,size=250MB",
            "--allocations",
            "100000",
            "--show-recalculations",
            "400",
            "--trace",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success());
}
