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
