//! Helpers shared by the T-SQL integration tests.

use tsql::server::Output;
use tsql::session::Session;

/// Runs a batch; the error numbers it raised and its output as sqlcmd prints it.
pub fn run(session: &mut Session, sql: &str) -> (Vec<i32>, String) {
    let mut errors = Vec::new();
    let mut text = String::new();
    session.execute(sql, &mut |output| {
        if let Output::Error { error, .. } = &output {
            errors.push(error.number);
        }
        text.push_str(&tsql::sqlcmd::format(&output));
    });
    (errors, text)
}

/// The rows of a query's last result set, each value as sqlcmd shows it; panics on an error.
#[allow(dead_code)] // not every test binary that shares this module reads rows
pub fn rows(session: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    session.execute(sql, &mut |output| match output {
        Output::Rows(set) => {
            found = set.rows.iter().map(|r| r.iter().map(tsql::value::display).collect()).collect()
        }
        Output::Error { error, .. } => panic!("{sql}: {}: {}", error.number, error.message),
        _ => {}
    });
    found
}

/// Every file under `dir`, subdirectories included.
#[allow(dead_code)] // not every test binary that shares this module looks for files
pub fn files_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(files_in(&path));
        } else {
            files.push(path);
        }
    }
    files
}
