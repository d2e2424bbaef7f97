//! Golden T-SQL scripts: every `tests/scripts/NAME.sql` runs on a fresh embedded server (a
//! temporary data directory) as `sqlcmd -i` runs it, and its output must equal
//! `tests/scripts/NAME.out`. `UPDATE_GOLDEN=1 cargo test -p extentdb-tsql --test golden`
//! rewrites the expected files; review the diff.
//!
//! The data directory's path shows as `$DIR` in the output. Its length still shapes the output
//! (sqlcmd pads a column to its widest value, and `sp_helpfile` shows full file names), so the
//! directory is made where its path has the same length on every machine ([`data_dir`]).
//!
//! A script whose first line is `-- golden: mask-times` also has every
//! `yyyy-mm-dd hh:mm:ss.fff` datetime shown as `<datetime>` (errorlog lines, login times), so
//! that its output is the same on every run.

use engine::instance::InstanceConfig;
use std::path::Path;
use tsql::server::Server;
use tsql::session::Session;

fn run(script: &str, dir: &Path) -> String {
    let server = Server::start(InstanceConfig::new(dir)).expect("server starts");
    let mut session = Session::new(&server);
    let mut output = String::new();
    tsql::sqlcmd::run_script(&mut session, script, false, &mut |text| output.push_str(text));
    server.shutdown().expect("shutdown");
    output
}

#[test]
fn golden_scripts() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut scripts: Vec<_> = std::fs::read_dir(&folder)
        .expect("tests/scripts")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty(), "no golden scripts found");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for script in scripts {
        let dir = data_dir();
        let text = std::fs::read_to_string(&script).expect("script");
        let actual = run(&text, dir.path());
        let actual = actual.replace(&dir.path().display().to_string(), "$DIR");
        let actual =
            if text.starts_with("-- golden: mask-times") { mask_times(&actual) } else { actual };
        let expected_path = script.with_extension("out");
        if update {
            std::fs::write(&expected_path, &actual).expect("write expected");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}: output differs\n--- expected\n{expected}\n--- actual\n{actual}",
                script.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A fresh data directory whose path is as long on every machine: `/tmp/.tmpXXXXXX`, not
/// under `$TMPDIR`, which may be set to any path (a RAM disk, a per-user `/tmp/user/1000`).
/// The expected files were made with this length; a longer path widens the columns that show
/// file names. Falls back to the usual temporary directory where `/tmp` cannot be written.
fn data_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/tmp").or_else(|_| tempfile::tempdir()).expect("temp dir")
}

/// The golden outputs do not depend on `$TMPDIR`: the golden test, run again in a child
/// process whose `TMPDIR` is a longer path, still passes. (It failed on `sp_helpfile`'s and
/// `DBCC SHOWFILESTATS`' widened file-name columns when the data directory followed `TMPDIR`.)
#[test]
fn golden_outputs_do_not_follow_tmpdir() {
    let longer = tempfile::tempdir().expect("temp dir");
    let tmpdir = longer.path().join("a-longer-temporary-directory-than-tmp");
    std::fs::create_dir(&tmpdir).expect("the longer TMPDIR");
    let child = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["golden_scripts", "--exact", "--test-threads", "1"])
        .env("TMPDIR", &tmpdir)
        .env_remove("UPDATE_GOLDEN")
        .output()
        .expect("the golden test in a child process");
    assert!(
        child.status.success(),
        "golden scripts with TMPDIR={}:\n{}",
        tmpdir.display(),
        String::from_utf8_lossy(&child.stdout)
    );
}

/// Replaces each `dddd-dd-dd dd:dd:dd.d...` with `<datetime>`.
fn mask_times(text: &str) -> String {
    mask_short_dates(&mask_datetimes(text))
}

/// `yyyy-mm-dd hh:mm:ss.fff` becomes `<datetime>`.
fn mask_datetimes(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-dd dd:dd:dd.";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < bytes.len() {
        let fits = bytes.len() - at > SHAPE.len()
            && SHAPE.iter().zip(&bytes[at..]).all(|(shape, b)| match shape {
                b'd' => b.is_ascii_digit(),
                other => other == b,
            });
        if fits {
            let mut end = at + SHAPE.len();
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            out.push_str("<datetime>");
            at = end;
        } else {
            let ch = text[at..].chars().next().expect("in bounds");
            out.push(ch);
            at += ch.len_utf8();
        }
    }
    out
}

/// A date as `CONVERT(nvarchar(11), d)` shows it (sp_helpdb's created: `Dec  7 2026`,
/// `Nov 26 2026`) becomes `<date>`.
fn mask_short_dates(text: &str) -> String {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let is_short_date = |s: &str| {
        let b = s.as_bytes();
        b.len() == 11
            && MONTHS.contains(&&s[..3])
            && b[3] == b' '
            && (b[4] == b' ' || b[4].is_ascii_digit())
            && b[5].is_ascii_digit()
            && b[6] == b' '
            && b[7..].iter().all(u8::is_ascii_digit)
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        if text.is_char_boundary(at) && text.get(at..at + 11).is_some_and(is_short_date) {
            out.push_str("<date>");
            at += 11;
        } else {
            let ch = text[at..].chars().next().expect("in bounds");
            out.push(ch);
            at += ch.len_utf8();
        }
    }
    out
}

#[test]
fn masking_replaces_datetimes_only() {
    assert_eq!(
        mask_times("2016-10-04 11:38:33.830 spid56 took 12.5 ms"),
        "<datetime> spid56 took 12.5 ms"
    );
    assert_eq!(
        mask_times("5    Dec  7 2026 Status=ONLINE; Nov 26 2026; Mon  7 2026; Dec 7 2026"),
        "5    <date> Status=ONLINE; <date>; Mon  7 2026; Dec 7 2026"
    );
}

/// SHUTDOWN WITH NOWAIT skips the checkpoint: the next start recovers the committed rows from
/// the log. The script stops at SHUTDOWN.
#[test]
fn shutdown_with_nowait_leaves_committed_work_to_recovery() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = run(
        "CREATE TABLE t (id INT PRIMARY KEY)\nINSERT INTO t VALUES (1), (2), (3)\nGO\nSHUTDOWN WITH NOWAIT\nGO\nSELECT 'not reached'\nGO\n",
        dir.path(),
    );
    assert!(first.contains("Server shut down by request from login sa."), "{first}");
    assert!(!first.contains("not reached"), "{first}");
    let second = run("SELECT COUNT(*) AS n FROM t\nGO\n", dir.path());
    assert!(second.contains("\n3\n"), "{second}");
}

/// Tables, rows and their indexes come back when the server restarts on the same directory.
#[test]
fn tables_survive_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = run(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))\nINSERT INTO t VALUES (1, 'one'), (2, 'two')\nCREATE INDEX ix_name ON t (name)\nGO\n",
        dir.path(),
    );
    assert!(first.contains("(2 rows affected)"), "{first}");
    let second = run("SELECT id FROM t WHERE name = 'two'\nGO\n", dir.path());
    assert_eq!(second, "id\n--\n2\n\n(1 row affected)\n");
}
