//! DBCC: the front end's parse of `DBCC command [( arguments )] [WITH options]`, and the
//! commands whose engine state exists so far.
//!
//! Here: TRACEON, TRACEOFF and TRACESTATUS (reference §9.2; with -1 the instance's flags, which
//! the engine reads; without it the session's own set, which TRACESTATUS shows), SQLPERF
//! (LOGSPACE) and SQLPERF ('sys.dm_os_wait_stats' | 'sys.dm_os_latch_stats' |
//! 'sys.dm_os_spinlock_stats', CLEAR), LOGINFO [(database)], OPENTRAN [(database)] (the
//! oldest transaction whose begin record pins the log), FREEPROCCACHE (empties the batch
//! cache), SHRINKFILE (the engine's `Database::shrink_file`, whose deviations its module
//! lists) and SHRINKDATABASE (each file through it, to a target_percent of free space), and
//! USEROPTIONS and INPUTBUFFER. Any other command is error 2526.
//!
//! A flag set for the session alone (no -1) acts on the work of this session only: the session
//! installs its flags on the thread that runs its batches (engine::traceflags).
//!
//! PAGE, IND, SHOWFILESTATS, DROPCLEANBUFFERS and CHECKALLOC are in [`crate::dbccpage`];
//! CHECKDB, CHECKFILEGROUP and CHECKTABLE in [`crate::checkdb`].

use crate::front::{is_word, parse_word};
use crate::server::{Output, ResultSet};
use crate::session::{Failure, Flow, Session};
use crate::value;
use engine::SqlError;
use engine::record::Value;
use sqlparser::ast::Expr;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// A parsed DBCC statement.
#[derive(Debug)]
pub struct Dbcc {
    /// The command, upper case.
    pub command: String,
    pub args: Vec<Expr>,
    /// WITH options, upper case (NO_INFOMSGS, ...).
    pub options: Vec<String>,
    /// The values of WITH options written `name = value` (MAXDOP = 2), names upper case.
    pub option_values: Vec<(String, String)>,
}

impl Dbcc {
    /// Whether the WITH clause has this option (upper case).
    pub fn has_option(&self, name: &str) -> bool {
        self.options.iter().any(|o| o == name)
    }
}

/// After `DBCC`.
pub fn parse(parser: &mut Parser<'_>) -> Result<Dbcc, ParserError> {
    let command = parser.parse_identifier()?.value.to_uppercase();
    let mut args = Vec::new();
    if parser.consume_token(&Token::LParen) && !parser.consume_token(&Token::RParen) {
        loop {
            args.push(parser.parse_expr()?);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        parser.expect_token(&Token::RParen)?;
    }
    let mut options = Vec::new();
    let mut option_values = Vec::new();
    if parse_word(parser, "WITH") {
        loop {
            let name = parser.parse_identifier()?.value.to_uppercase();
            if parser.consume_token(&Token::Eq) {
                option_values.push((name.clone(), parser.next_token().token.to_string()));
            }
            options.push(name);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    Ok(Dbcc { command, args, options, option_values })
}

/// Whether the next token starts a DBCC statement.
pub fn starts(parser: &Parser<'_>) -> bool {
    is_word(&parser.peek_token().token, "DBCC")
}

const COMPLETED: &str =
    "DBCC execution completed. If DBCC printed error messages, contact your system administrator.";

/// Shrinks a file (`Database::shrink_file`), sending its notice (9008, 9006) unless `quiet`.
fn shrink_reporting(
    db: &engine::database::Database,
    file_id: u16,
    target_pages: Option<u32>,
    quiet: bool,
    out: &mut dyn FnMut(Output),
) -> Result<engine::database::FileShrink, SqlError> {
    let result = db.shrink_file(file_id, target_pages)?;
    if let Some(notice) = &result.notice
        && !quiet
    {
        out(Output::Message(notice.clone()));
    }
    Ok(result)
}

/// A shrunk file's row of SHRINKFILE's and SHRINKDATABASE's result (8 KB pages).
fn shrink_row(
    db: &engine::database::Database,
    result: &engine::database::FileShrink,
) -> Vec<Value> {
    let int = |pages: u32| Value::Int(pages as i32);
    vec![
        Value::SmallInt(db.database_id as i16),
        Value::Int(i32::from(result.file_id)),
        int(result.current_pages),
        int(result.minimum_pages),
        int(result.used_pages),
        int(result.estimated_pages),
    ]
}

fn shrink_result_set(rows: Vec<Vec<Value>>) -> ResultSet {
    let names = ["DbId", "FileId", "CurrentSize", "MinimumSize", "UsedPages", "EstimatedPages"];
    ResultSet { columns: columns(&names), rows, types: Vec::new() }
}

fn is_zero(value: &Value) -> bool {
    value::as_i64(value) == Some(0)
}

fn incorrect() -> SqlError {
    SqlError::new(
        2526,
        16,
        3,
        "Incorrect DBCC statement. Check the documentation for the correct DBCC syntax and options.",
    )
}

fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_string()).collect()
}

impl Session {
    pub(crate) fn run_dbcc(
        &mut self,
        dbcc: &Dbcc,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<Flow, Failure> {
        let mut args = Vec::with_capacity(dbcc.args.len());
        for arg in &dbcc.args {
            args.push(match arg {
                // A bare word (LOGSPACE, CLEAR, a database name) is its text.
                Expr::Identifier(ident) if !ident.value.starts_with('@') => {
                    Value::Text(ident.value.clone())
                }
                other => self.eval_stmt(other, line)?,
            });
        }
        let text = |i: usize| args.get(i).map(value::display).unwrap_or_default().to_uppercase();
        match dbcc.command.as_str() {
            "TRACEON" | "TRACEOFF" => self.dbcc_trace(dbcc.command == "TRACEON", &args, line)?,
            "TRACESTATUS" => out(Output::Rows(self.dbcc_tracestatus(&args))),
            "SQLPERF" if text(0) == "LOGSPACE" => out(Output::Rows(self.dbcc_logspace())),
            "SQLPERF" if text(1) == "CLEAR" => {
                let instance = &self.server.instance;
                match text(0).as_str() {
                    "SYS.DM_OS_WAIT_STATS" => instance.waits.clear(),
                    "SYS.DM_OS_LATCH_STATS" => instance.latches.clear(),
                    "SYS.DM_OS_SPINLOCK_STATS" => instance.spinlocks.clear(),
                    _ => return Err(self.fail(incorrect(), line)),
                }
            }
            "LOGINFO" => {
                let db = self.dbcc_database(args.first()).map_err(|e| self.fail(e, line))?;
                out(Output::Rows(loginfo(&db)));
            }
            "OPENTRAN" => {
                let db = self.dbcc_database(args.first()).map_err(|e| self.fail(e, line))?;
                opentran(&db, dbcc.has_option("TABLERESULTS"), out);
            }
            "FREEPROCCACHE" => self.server.batch_cache.clear(),
            "USEROPTIONS" => out(Output::Rows(self.dbcc_useroptions())),
            "INPUTBUFFER" => {
                out(Output::Rows(self.dbcc_inputbuffer(&args).map_err(|e| self.fail(e, line))?))
            }
            "PAGE" => {
                let table_results = dbcc.options.iter().any(|o| o == "TABLERESULTS");
                self.dbcc_page(&args, table_results, out).map_err(|e| self.fail(e, line))?
            }
            "IND" => self.dbcc_ind(&args, out).map_err(|e| self.fail(e, line))?,
            "SHOWFILESTATS" => self.dbcc_showfilestats(out),
            "SHRINKFILE" => {
                let quiet = dbcc.has_option("NO_INFOMSGS");
                self.dbcc_shrinkfile(&args, quiet, out).map_err(|e| self.fail(e, line))?
            }
            "SHRINKDATABASE" => {
                let quiet = dbcc.has_option("NO_INFOMSGS");
                self.dbcc_shrinkdatabase(&args, quiet, out).map_err(|e| self.fail(e, line))?
            }
            "DROPCLEANBUFFERS" => {
                self.server.instance.buffer_pool.drop_clean_buffers();
            }
            "CHECKDB" => {
                self.dbcc_checkdb(dbcc, &args, line, out).map_err(|e| self.fail(e, line))?
            }
            "CHECKFILEGROUP" => {
                self.dbcc_checkfilegroup(dbcc, &args, line, out).map_err(|e| self.fail(e, line))?
            }
            "CHECKTABLE" => {
                self.dbcc_checktable(dbcc, &args, line, out).map_err(|e| self.fail(e, line))?
            }
            "CHECKALLOC" => {
                let quiet = dbcc.options.iter().any(|o| o == "NO_INFOMSGS");
                self.dbcc_checkalloc(&args, quiet, line, out).map_err(|e| self.fail(e, line))?
            }
            _ => return Err(self.fail(incorrect(), line)),
        }
        if !dbcc.options.iter().any(|o| o == "NO_INFOMSGS") {
            out(Output::Message(COMPLETED.into()));
        }
        Ok(Flow::Next)
    }

    /// DBCC USEROPTIONS: the session's SET options, in SQL Server's order. The language, date
    /// format, first day of the week and the ANSI options are how this engine always behaves
    /// (us_english, mdy, 7, and ON: NULL = NULL is not true, 'a' + NULL is NULL, a column
    /// without NULL or NOT NULL allows NULLs...); lock_timeout, XACT_ABORT, NOCOUNT,
    /// IMPLICIT_TRANSACTIONS and the isolation level are the session's own. Deviation: no
    /// textsize row (there is no TEXTSIZE limit).
    fn dbcc_useroptions(&self) -> ResultSet {
        let mut rows: Vec<(&str, String)> = vec![
            ("language", crate::session::LANGUAGE.into()),
            ("dateformat", crate::session::DATE_FORMAT.into()),
            ("datefirst", crate::session::DATE_FIRST.to_string()),
            ("lock_timeout", self.lock_timeout_ms().to_string()),
        ];
        for option in crate::session::ALWAYS_ON_OPTIONS {
            rows.push((option, "SET".into()));
        }
        let (nocount, xact_abort, _, _, isolation) = self.set_options();
        for (option, on) in [
            ("xact_abort", xact_abort),
            ("nocount", nocount),
            ("implicit_transactions", self.implicit_transactions_on()),
        ] {
            if on {
                rows.push((option, "SET".into()));
            }
        }
        rows.push(("isolation level", isolation.name().into()));
        let rows = rows
            .into_iter()
            .map(|(option, value)| vec![Value::Text(option.into()), Value::Text(value)])
            .collect();
        ResultSet { columns: columns(&["Set Option", "Value"]), rows, types: Vec::new() }
    }

    /// DBCC INPUTBUFFER (session_id [, request_id]): the text of the session's running or last
    /// batch, as a 'Language Event' (deviation: a TDS RPC shows as its statement text too, not
    /// as an 'RPC Event'). A session that is not connected is 7940 (its number inferred from
    /// SQL Server's message text, not from a source).
    fn dbcc_inputbuffer(&self, args: &[Value]) -> crate::value::Result<ResultSet> {
        let spid = args.first().and_then(value::as_i64).ok_or_else(incorrect)?;
        let batch = u16::try_from(spid)
            .ok()
            .and_then(|spid| self.server.sessions.lock().get(&spid).map(|i| i.last_batch.clone()))
            .ok_or_else(|| SqlError::new(7940, 16, 1, format!("Invalid SPID {spid} specified.")))?;
        let row = crate::dmv::input_buffer_row(&batch);
        let columns = columns(&["EventType", "Parameters", "EventInfo"]);
        Ok(ResultSet { columns, rows: vec![row], types: Vec::new() })
    }

    /// DBCC SHRINKFILE (file_name | file_id [, target_mb | EMPTYFILE] [, NOTRUNCATE |
    /// TRUNCATEONLY]) on the current database: its result row (DbId, FileId, CurrentSize,
    /// MinimumSize, UsedPages, EstimatedPages, in 8 KB pages), after 9008 or 9006 when a log
    /// file stayed above its target. TRUNCATEONLY ignores the target; NOTRUNCATE, which only
    /// moves pages in SQL Server, changes nothing here (no page is moved); EMPTYFILE is 40517.
    fn dbcc_shrinkfile(
        &self,
        args: &[Value],
        quiet: bool,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.db();
        let file_id = match args.first() {
            Some(Value::Text(name)) => db
                .database_files()
                .iter()
                .find(|f| f.logical_name.eq_ignore_ascii_case(name))
                .map(|f| f.file_id)
                .ok_or_else(|| SqlError::file_not_found_in_database(name, &db.name))?,
            Some(other) => {
                value::as_i64(other).and_then(|id| u16::try_from(id).ok()).ok_or_else(incorrect)?
            }
            None => return Err(incorrect()),
        };
        let word = |w: &str| {
            args[1..].iter().any(|a| matches!(a, Value::Text(t) if t.eq_ignore_ascii_case(w)))
        };
        if word("EMPTYFILE") {
            return Err(SqlError::new(
                40517,
                16,
                1,
                "DBCC SHRINKFILE with EMPTYFILE is not supported.",
            ));
        }
        let mut target_pages = None;
        for arg in &args[1..] {
            match arg {
                Value::Text(w)
                    if ["TRUNCATEONLY", "NOTRUNCATE"].contains(&w.to_uppercase().as_str()) => {}
                Value::Text(_) => return Err(incorrect()),
                number => {
                    let mb = value::as_i64(number).filter(|mb| *mb >= 0).ok_or_else(incorrect)?;
                    target_pages = Some(u32::try_from(mb.saturating_mul(128)).unwrap_or(u32::MAX));
                }
            }
        }
        // TRUNCATEONLY ignores the target; NOTRUNCATE only moves pages in SQL Server, and no
        // page moves here, so it is a shrink to a target no smaller than the file.
        if word("TRUNCATEONLY") {
            target_pages = None;
        } else if word("NOTRUNCATE") {
            target_pages = Some(u32::MAX);
        }
        let result = shrink_reporting(db, file_id, target_pages, quiet, out)?;
        out(Output::Rows(shrink_result_set(vec![shrink_row(db, &result)])));
        Ok(())
    }

    /// DBCC SHRINKDATABASE (database_name | database_id | 0 [, target_percent] [, NOTRUNCATE |
    /// TRUNCATEONLY]): each file shrunk as DBCC SHRINKFILE shrinks it, to a size that leaves
    /// `target_percent` of it free (a data file's used pages, the log's used share of each log
    /// file: 6 MB used and 25 % give 8 MB, the docs' example), or as far as it goes without a
    /// target or with TRUNCATEONLY; a row (SHRINKFILE's columns) for each file that shrank.
    /// Deviations are SHRINKFILE's: no page moves, so NOTRUNCATE shrinks nothing.
    fn dbcc_shrinkdatabase(
        &self,
        args: &[Value],
        quiet: bool,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.dbcc_database(args.first().filter(|a| !is_zero(a)))?;
        let (mut percent, mut truncate_only, mut no_truncate) = (None, false, false);
        for arg in args.iter().skip(1) {
            match arg {
                Value::Text(w) if w.eq_ignore_ascii_case("TRUNCATEONLY") => truncate_only = true,
                Value::Text(w) if w.eq_ignore_ascii_case("NOTRUNCATE") => no_truncate = true,
                Value::Text(_) => return Err(incorrect()),
                number => {
                    let pct = value::as_i64(number).filter(|p| (0..=100).contains(p));
                    percent = Some(pct.ok_or_else(incorrect)?);
                }
            }
        }
        let (_, _, log_used_pct, _) = db.sqlperf_logspace();
        let mut rows = Vec::new();
        for file in db.database_files() {
            let used_pages = if file.is_log {
                // This file's share of the log's used space.
                f64::from(file.size_pages) * log_used_pct / 100.0
            } else {
                db.file_space()
                    .iter()
                    .find(|f| f.file_id == file.file_id)
                    .map_or(0.0, |f| f64::from((f.total_extents - f.free_extents) * 8))
            };
            let target_pages = match (truncate_only, no_truncate, percent) {
                (true, _, _) => None,
                (false, true, _) => Some(u32::MAX),
                (false, false, Some(pct)) if pct < 100 => {
                    let target = (used_pages * 100.0 / (100 - pct) as f64).ceil();
                    Some(target.min(f64::from(u32::MAX)) as u32)
                }
                (false, false, _) => None,
            };
            let result = shrink_reporting(&db, file.file_id, target_pages, quiet, out)?;
            // SQL Server shows no row for a file it did not shrink.
            if result.current_pages < file.size_pages {
                rows.push(shrink_row(&db, &result));
            }
        }
        out(Output::Rows(shrink_result_set(rows)));
        Ok(())
    }

    /// TRACEON / TRACEOFF (flags..., [-1]).
    fn dbcc_trace(&mut self, on: bool, args: &[Value], line: u64) -> Result<(), Failure> {
        let mut flags = Vec::new();
        let mut global = false;
        for arg in args {
            match value::as_i64(arg) {
                Some(-1) => global = true,
                Some(flag) if (0..=u16::MAX as i64).contains(&flag) => flags.push(flag as u16),
                _ => return Err(self.fail(incorrect(), line)),
            }
        }
        for flag in flags.iter().copied() {
            let flags = &self.server.instance.trace_flags;
            match (global, on) {
                (true, true) => flags.on(flag),
                (true, false) => flags.off(flag),
                (false, true) => {
                    self.session_trace_flags.insert(flag);
                }
                (false, false) => {
                    self.session_trace_flags.remove(&flag);
                }
            }
        }
        engine::traceflags::set_session_flags(self.session_trace_flags.iter().copied());
        Ok(())
    }

    /// TRACESTATUS: TraceFlag, Status, Global, Session for the flags asked for (all that are on
    /// when none are named).
    fn dbcc_tracestatus(&self, args: &[Value]) -> ResultSet {
        let global = self.server.instance.trace_flags.list();
        let asked: Vec<u16> =
            args.iter().filter_map(value::as_i64).filter(|f| *f >= 0).map(|f| f as u16).collect();
        let mut flags: Vec<u16> = if asked.is_empty() {
            global.iter().chain(&self.session_trace_flags).copied().collect()
        } else {
            asked
        };
        flags.sort_unstable();
        flags.dedup();
        let rows = flags
            .into_iter()
            .map(|flag| {
                let is_global = global.contains(&flag);
                let is_session = self.session_trace_flags.contains(&flag);
                vec![
                    Value::Int(i32::from(flag)),
                    Value::Int(i32::from(is_global || is_session)),
                    Value::Int(i32::from(is_global)),
                    Value::Int(i32::from(is_session)),
                ]
            })
            .collect();
        ResultSet {
            columns: columns(&["TraceFlag", "Status", "Global", "Session"]),
            rows,
            types: Vec::new(),
        }
    }

    /// SQLPERF(LOGSPACE): one row per database.
    fn dbcc_logspace(&self) -> ResultSet {
        let mut databases = self.server.databases();
        databases.sort_by_key(|d| d.database_id);
        let rows = databases
            .iter()
            .map(|db| {
                let (name, size_mb, used_pct, status) = db.sqlperf_logspace();
                vec![
                    Value::Text(name),
                    Value::Real(size_mb as f32),
                    Value::Real(used_pct as f32),
                    Value::Int(status),
                ]
            })
            .collect();
        ResultSet {
            columns: columns(&["Database Name", "Log Size (MB)", "Log Space Used (%)", "Status"]),
            rows,
            types: Vec::new(),
        }
    }
}

/// DBCC OPENTRAN: the oldest open transaction of the database (the one whose begin record
/// pins the log, log_reuse_wait_desc ACTIVE_TRANSACTION), in SQL Server's lines, or "No active
/// open transactions.". A transaction that has changed nothing has written no begin record
/// and is not listed, as in SQL Server. Start time is CONVERT style 109.
///
/// WITH TABLERESULTS gives the same facts as rows of two columns, the first named after the
/// database and the second OPENTRAN (OLDACT_SPID, OLDACT_UID, OLDACT_NAME,
/// OLDACT_RECOVERYUNITID, OLDACT_LSN, OLDACT_STARTTIME, OLDACT_SID), which monitoring
/// scripts read with INSERT ... EXEC and pick out by field name. Deviation: Microsoft's page
/// shows no such output; the shape comes from public scripts that consume it, so it is
/// corroborated, not documented.
fn opentran(db: &engine::database::Database, table_results: bool, out: &mut dyn FnMut(Output)) {
    // One UID and SID for both forms (every session here is sa, SID 0x01).
    const OPENTRAN_UID: &str = "-1";
    const OPENTRAN_SID: &str = "0x01";
    let Some(oldest) = db.log().oldest_open_transaction_info() else {
        out(Output::Message("No active open transactions.".into()));
        return;
    };
    let start = oldest.begin_time;
    let millis = start.and_utc().timestamp_subsec_millis();
    let start = format!("{}{millis:03}{}", start.format("%b %e %Y %l:%M:%S:"), start.format("%p"));
    if table_results {
        let fields = [
            ("OLDACT_SPID", oldest.spid.to_string()),
            ("OLDACT_UID", OPENTRAN_UID.to_string()),
            ("OLDACT_NAME", oldest.name.to_string()),
            ("OLDACT_RECOVERYUNITID", "0".to_string()),
            ("OLDACT_LSN", oldest.begin_lsn.to_string()),
            ("OLDACT_STARTTIME", start),
            ("OLDACT_SID", OPENTRAN_SID.to_string()),
        ];
        let rows = fields
            .into_iter()
            .map(|(field, value)| vec![Value::Text(field.into()), Value::Text(value)])
            .collect();
        let columns = vec![db.name.clone(), "OPENTRAN".to_string()];
        out(Output::Rows(ResultSet { columns, rows, types: Vec::new() }));
        return;
    }
    let lines = [
        format!("Transaction information for database '{}'.", db.name),
        String::new(),
        "Oldest active transaction:".to_string(),
        format!("    SPID (server process ID): {}", oldest.spid),
        format!("    UID (user ID) : {OPENTRAN_UID}"),
        format!("    Name          : {}", oldest.name),
        format!("    LSN           : {}", oldest.begin_lsn),
        format!("    Start time    : {start}"),
        format!("    SID           : {OPENTRAN_SID}"),
    ];
    for line in lines {
        out(Output::Message(line));
    }
}

/// DBCC LOGINFO's rows, from the log's real VLFs.
fn loginfo(db: &engine::database::Database) -> ResultSet {
    let rows = db
        .log()
        .dbcc_loginfo()
        .into_iter()
        .map(|vlf| {
            vec![
                Value::Int(vlf.recovery_unit_id as i32),
                Value::Int(i32::from(vlf.file_id)),
                Value::BigInt(vlf.file_size as i64),
                Value::BigInt(vlf.start_offset as i64),
                Value::Int(vlf.fseqno as i32),
                Value::Int(i32::from(vlf.status)),
                Value::Int(i32::from(vlf.parity)),
                Value::Decimal(vlf.create_lsn as i128, 0),
            ]
        })
        .collect();
    ResultSet {
        columns: columns(&[
            "RecoveryUnitId",
            "FileId",
            "FileSize",
            "StartOffset",
            "FSeqNo",
            "Status",
            "Parity",
            "CreateLSN",
        ]),
        rows,
        types: Vec::new(),
    }
}
