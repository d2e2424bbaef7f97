//! KILL session_id [WITH STATUSONLY] and KILL 'UOW': ending another session.
//!
//! What it reproduces:
//! - KILL n marks session n killed and sets its cancel flag ([`crate::server::SessionControl`]).
//!   A running batch stops at its next check (before each statement, in row loops, in a lock
//!   wait or a WAITFOR) with 596 (severity 21: no CATCH takes it), its transaction is rolled
//!   back, and its connection is closed. An idle connection's socket is shut for reading, so
//!   its connection ends at once and the session's drop rolls its transaction back. KILL
//!   itself returns at once, as SQL Server's does; the rollback runs on the killed session's
//!   thread.
//! - A session whose rollback is under way is KILLED/ROLLBACK in sys.dm_exec_requests and
//!   sp_who; KILL n WITH STATUSONLY, or KILL n again, reports its progress (6109), from its
//!   transaction's undo entries taken so far ([`engine::log::RollbackProgress`]).
//! - Errors: 6101 (not a session id), 6104 (the session's own id), 6106 (no such session),
//!   6107 (a system session: ids below 51), 6115 (inside a user transaction), 6120 (STATUSONLY
//!   with no rollback under way), and 6110 for a unit of work (there are no distributed
//!   transactions, so none exists).
//!
//! The numbers, severities and texts are SQL Server's message table's (sys.messages, as the
//! SQL Server documentation lists it); the states are those its replies show (6106: 2).
//!
//! Deviations:
//! - An embedded session (no connection) that is killed while idle keeps its transaction
//!   until its next batch, which gets 596 and rolls it back (there is no thread to end).
//! - A killed session's 6109 message is an informational message without its number.
//! - The upper bound 6101 names (32767, the largest smallint) is not confirmed from SQL Server.
//! - No permission check (ALTER ANY CONNECTION, 6102): every login is sa.

use crate::front::{is_word, parse_word};
use crate::server::Output;
use crate::session::{Failure, Flow, Session};
use engine::SqlError;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// How often ALTER DATABASE ... WITH ROLLBACK looks at the sessions it waits for.
const SESSION_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The largest session id 6101 accepts.
const MAX_SESSION_ID: i64 = 32_767;

/// What KILL names.
#[derive(Clone, Debug, PartialEq)]
pub enum KillTarget {
    Session(i64),
    /// A distributed transaction's unit of work, as written.
    UnitOfWork(String),
}

/// A parsed KILL.
#[derive(Clone, Debug, PartialEq)]
pub struct Kill {
    pub target: KillTarget,
    pub status_only: bool,
}

/// Whether the next token starts KILL.
pub fn starts(parser: &Parser<'_>) -> bool {
    is_word(&parser.peek_token().token, "KILL")
}

/// KILL { [-]number | 'uow' } [WITH STATUSONLY | COMMIT | ROLLBACK]. A variable or an
/// expression is a syntax error, as in SQL Server (KILL takes a constant).
pub fn parse(parser: &mut Parser<'_>) -> Result<Kill, ParserError> {
    parser.next_token();
    let negative = parser.consume_token(&Token::Minus);
    let next = parser.next_token();
    let target = match &next.token {
        Token::Number(digits, _) => match digits.parse::<i64>() {
            Ok(n) => KillTarget::Session(if negative { -n } else { n }),
            Err(_) => return expected_here(parser, "a session id"),
        },
        Token::SingleQuotedString(uow) | Token::NationalStringLiteral(uow) if !negative => {
            KillTarget::UnitOfWork(uow.clone())
        }
        _ => return expected_here(parser, "a session id"),
    };
    let mut status_only = false;
    if parse_word(parser, "WITH") {
        let option = parser.next_token();
        status_only = is_word(&option.token, "STATUSONLY");
        let uow_outcome = matches!(target, KillTarget::UnitOfWork(_))
            && (is_word(&option.token, "COMMIT") || is_word(&option.token, "ROLLBACK"));
        if !status_only && !uow_outcome {
            return expected_here(parser, "STATUSONLY");
        }
    }
    Ok(Kill { target, status_only })
}

/// A syntax error at the token just read.
fn expected_here<T>(parser: &mut Parser<'_>, what: &str) -> Result<T, ParserError> {
    parser.prev_token();
    parser.expected(what, parser.peek_token())
}

impl Session {
    pub(crate) fn kill(
        &mut self,
        kill: &Kill,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        if self.user_transaction_open() {
            let text = "KILL command cannot be used inside user transactions.";
            return Err(self.fail(SqlError::new(6115, 16, 1, text), line));
        }
        let spid = match &kill.target {
            KillTarget::Session(spid) => *spid,
            KillTarget::UnitOfWork(uow) => {
                let (number, text) = if kill.status_only {
                    (
                        6121,
                        format!(
                            "Status report cannot be obtained. Rollback operation for UOW {uow} is not in progress."
                        ),
                    )
                } else {
                    (6110, format!("The distributed transaction with UOW {uow} does not exist."))
                };
                return Err(self.fail(SqlError::new(number, 16, 1, text), line));
            }
        };
        let control = self.kill_target(spid).map_err(|e| self.fail(e, line))?;
        let spid = spid as u16;
        let progress = control.is_killed().then(|| self.rollback_progress(spid)).flatten();
        if let Some(progress) = progress {
            let (percent, seconds) = progress.estimate(std::time::Instant::now());
            out(Output::Message(format!(
                "SPID {spid}: transaction rollback in progress. Estimated rollback completion: \
                 {percent}%. Estimated time remaining: {seconds} seconds."
            )));
            return Ok(Flow::Next);
        }
        if kill.status_only {
            let text = format!(
                "Status report cannot be obtained. Rollback operation for Process ID {spid} is \
                 not in progress."
            );
            return Err(self.fail(SqlError::new(6120, 16, 1, text), line));
        }
        control.kill();
        Ok(Flow::Next)
    }

    /// The session KILL may end: 6101, 6104, 6107 or 6106 when `spid` is none.
    fn kill_target(
        &self,
        spid: i64,
    ) -> engine::error::SqlResult<std::sync::Arc<crate::server::SessionControl>> {
        if !(1..=MAX_SESSION_ID).contains(&spid) {
            let text = format!(
                "Process ID {spid} is not a valid process ID. Choose a number between 1 and \
                 {MAX_SESSION_ID}."
            );
            return Err(SqlError::new(6101, 16, 1, text));
        }
        if spid == i64::from(self.spid) {
            return Err(SqlError::new(6104, 16, 1, "Cannot use KILL to kill your own process."));
        }
        if spid < i64::from(engine::session::FIRST_USER_SPID) {
            return Err(SqlError::new(6107, 14, 1, "Only user processes can be killed."));
        }
        let sessions = self.server.sessions.lock();
        match sessions.get(&(spid as u16)) {
            Some(info) => Ok(info.control.clone()),
            None => {
                let text = format!("Process ID {spid} is not an active process ID.");
                Err(SqlError::new(6106, 16, 2, text))
            }
        }
    }

    /// ALTER DATABASE ... SET { OFFLINE | SINGLE_USER } WITH ROLLBACK IMMEDIATE | ROLLBACK
    /// AFTER n: the other sessions whose database is `name` get `after_seconds` to leave, then
    /// are killed; this waits until those that can end have (a connection's, or one running a
    /// request, whose rollback runs first), as SQL Server's ALTER waits for the rollbacks. An
    /// attention ends the wait.
    pub(crate) fn end_database_sessions(
        &self,
        name: &str,
        after_seconds: u64,
    ) -> Result<(), SqlError> {
        let Some(database_id) = self.server.database_id_of(name) else {
            return Ok(()); // the statement itself reports a database it cannot find
        };
        let others = |only_ending: bool| -> Vec<std::sync::Arc<crate::server::SessionControl>> {
            let sessions = self.server.sessions.lock();
            sessions
                .iter()
                .filter(|(spid, info)| **spid != self.spid && info.database_id == database_id)
                .filter(|(_, info)| {
                    !only_ending || info.control.has_connection() || info.request.is_some()
                })
                .map(|(_, info)| info.control.clone())
                .collect()
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(after_seconds);
        while !others(false).is_empty() && std::time::Instant::now() < deadline {
            self.check_cancel()?;
            std::thread::sleep(SESSION_POLL);
        }
        for control in others(false) {
            control.kill();
        }
        while !others(true).is_empty() {
            self.check_cancel()?;
            std::thread::sleep(SESSION_POLL);
        }
        Ok(())
    }

    /// The rollback under way of session `spid`'s transaction, in whichever database it is.
    fn rollback_progress(&self, spid: u16) -> Option<engine::log::RollbackProgress> {
        self.server.databases().iter().find_map(|db| {
            db.log()
                .open_transactions()
                .iter()
                .filter(|t| t.spid == spid)
                .find_map(|t| t.log_use.rollback_progress())
        })
    }
}
