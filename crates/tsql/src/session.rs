//! A session: the connection-level state (current database, variables, SET options,
//! @@ROWCOUNT, @@ERROR) and the execution of statements, with SQL Server's error behaviour.
//!
//! Transactions: a statement outside a transaction runs in its own (autocommit); inside one,
//! a failing statement is rolled back alone (statement-level rollback) and the batch goes on,
//! unless the error aborts the batch (conversion errors 245/8114/8169/241, 208/207/137 name
//! errors, 1205, any error of severity 19 or above) or SET XACT_ABORT is ON, which rolls the
//! whole transaction back for any run-time error of any statement, and for a cancel; not for
//! RAISERROR (which neither ends the batch nor rolls back under XACT_ABORT; THROW does) nor for
//! compile errors (the name errors among them). Errors of severity 19 and above also go to the
//! errorlog.
//!
//! TRY/CATCH sends an error of the TRY block (or of what it calls) to the CATCH block instead
//! of the client; THROW raises (and re-raises) errors that end the batch.
//!
//! Deviations: an error of severity 20 or above does not end the connection (SQL Server ends
//! it in most cases); name errors (208, 207, 137) are found when the statement runs, not when
//! the batch compiles, so statements before them in the batch have run.
//!
//! Doomed transactions: under XACT_ABORT an error that a CATCH block catches leaves the
//! transaction open but uncommittable (XACT_STATE() -1; a change or COMMIT is 3930), for the
//! CATCH block to roll back; one still open when the batch ends is rolled back with 3998, as in
//! SQL Server. Outside a TRY block the error rolls the transaction back at once.

use crate::front::{self, Parsed, Stmt, last_part};
use crate::functions;
use crate::query::{ColRef, Env, shown_row, sql_type_of, table_columns};
use crate::server::{Output, ResultSet, Server};
use crate::value::{self, Result, convert, is_true};
use engine::SqlError;
use engine::catalog::{ColumnDef, IndexSpec, TableSpec};
use engine::database::Database;
use engine::record::{SqlType, Value};
use engine::xevent::FieldValue;
use engine::xevent::catalog::{self, MapName};
use sqlparser::ast::{
    ColumnOption, Expr, FromTable, ObjectType, SetExpr, Statement, TableConstraint, TableFactor,
    TableObject,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A PRIMARY KEY or UNIQUE constraint of CREATE TABLE: (primary key, unique, columns,
/// constraint name, CLUSTERED/NONCLUSTERED if given).
type PendingConstraint = (bool, bool, Vec<String>, Option<String>, Option<bool>);

/// Whether control flow continues after a statement.
pub(crate) enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

/// An error while running a statement, and whether it ends the batch.
pub(crate) struct Failure {
    pub(crate) error: SqlError,
    pub(crate) line: u64,
    pub(crate) abort_batch: bool,
    /// The procedure it happened in (None in a batch or dynamic SQL).
    pub(crate) procedure: Option<String>,
    /// @@NESTLEVEL where it happened.
    pub(crate) nest_level: u32,
    /// Raised by RAISERROR, which SET XACT_ABORT does not act on.
    pub(crate) raiserror: bool,
}

/// The error a CATCH block is handling (ERROR_NUMBER() and the other ERROR_ functions).
struct CaughtError {
    error: SqlError,
    line: u64,
    procedure: Option<String>,
}

/// A row an UPDATE, DELETE or MERGE changes: where it is, as stored, and as expressions see it.
pub(crate) struct MatchedRow {
    pub(crate) locator: engine::catalog::RowLocator,
    pub(crate) stored: Vec<Value>,
    pub(crate) shown: Vec<Value>,
}

/// The name a table goes by in a statement: its alias, else its name.
fn qualifier_of(
    table: &engine::catalog::Table,
    alias: Option<&sqlparser::ast::TableAlias>,
) -> String {
    alias.map_or_else(|| table.name.clone(), |a| a.name.value.clone())
}

/// The most iterations a WHILE loop may make (bounded, as every loop here is).
const MAX_WHILE_ITERATIONS: u64 = 100_000_000;
/// The longest transaction or savepoint name SQL Server takes.
pub(crate) const MAX_TRANSACTION_NAME_CHARS: usize = 32;

/// Error 103 for a transaction name over 32 characters.
pub(crate) fn transaction_name_too_long(name: &str) -> SqlError {
    let shown: String = name.chars().take(MAX_TRANSACTION_NAME_CHARS).collect();
    SqlError::new(
        103,
        15,
        4,
        format!(
            "The identifier that starts with '{shown}' is too long. Maximum length is {MAX_TRANSACTION_NAME_CHARS}."
        ),
    )
}

/// The error a cancelled batch stops with (SQL Server's 3617 for an attention; severity 25,
/// so no CATCH block takes it). The client sees no message, only DONE_ATTN.
const CANCELLED: i32 = 3617;

/// SET TRANSACTION ISOLATION LEVEL's levels, numbered as sys.dm_exec_sessions'
/// transaction_isolation_level numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolationLevel {
    ReadUncommitted = 1,
    ReadCommitted = 2,
    RepeatableRead = 3,
    Serializable = 4,
    Snapshot = 5,
}

impl IsolationLevel {
    /// DBCC USEROPTIONS' name of the level.
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadUncommitted => "read uncommitted",
            IsolationLevel::ReadCommitted => "read committed",
            IsolationLevel::RepeatableRead => "repeatable read",
            IsolationLevel::Serializable => "serializable",
            IsolationLevel::Snapshot => "snapshot",
        }
    }
}

/// 596: the error a killed session's batch stops with. Severity 21, so it ends the batch and
/// the connection, and no CATCH block takes it.
const KILLED: i32 = 596;

fn killed_session() -> SqlError {
    SqlError::new(
        KILLED,
        21,
        1,
        "Cannot continue the execution because the session is in the kill state.",
    )
}

/// The FROM items of `statement` that call xml's nodes() on a column (`x.col.nodes(path)`):
/// their three-part names name no table, of this database or another.
fn xml_nodes_calls(statement: &Statement) -> Vec<sqlparser::ast::ObjectName> {
    use sqlparser::ast::{Visit, Visitor};
    struct Calls(Vec<sqlparser::ast::ObjectName>);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> std::ops::ControlFlow<()> {
            if let TableFactor::Table { name, args: Some(_), .. } = factor
                && last_part(name).eq_ignore_ascii_case("nodes")
            {
                self.0.push(name.clone());
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let mut calls = Calls(Vec::new());
    let _ = statement.visit(&mut calls);
    calls.0
}

/// The database part of a three-part name (`db.schema.object`, brackets removed) when it
/// names a database other than `current` (case-insensitive); None for shorter names.
pub(crate) fn other_database_part(
    name: &sqlparser::ast::ObjectName,
    current: &str,
) -> Option<String> {
    let parts = &name.0;
    let database = parts.len().checked_sub(3).map(|i| parts[i].to_string())?;
    let database = database.trim_matches(['[', ']', '"']).to_string();
    (!database.is_empty() && !database.eq_ignore_ascii_case(current)).then_some(database)
}

/// How the engine always reads and names dates (@@LANGUAGE, @@DATEFIRST, DBCC USEROPTIONS,
/// sys.dm_exec_sessions and sys.dm_exec_requests): SET LANGUAGE, DATEFORMAT and DATEFIRST
/// are accepted and ignored.
pub(crate) const LANGUAGE: &str = "us_english";
pub(crate) const DATE_FORMAT: &str = "mdy";
pub(crate) const DATE_FIRST: u8 = 7;

/// The SET options that are always ON here (NULL = NULL is not true, 'a' + NULL is NULL, a
/// column without NULL or NOT NULL allows NULLs...), in DBCC USEROPTIONS' order. ANSI_DEFAULTS
/// is OFF.
pub(crate) const ALWAYS_ON_OPTIONS: [&str; 7] = [
    "quoted_identifier",
    "arithabort",
    "ansi_null_dflt_on",
    "ansi_warnings",
    "ansi_padding",
    "ansi_nulls",
    "concat_null_yields_null",
];

/// The system objects SQL Server also resolves without a schema or with `dbo`: the
/// compatibility view sysprocesses, and fn_virtualfilestats, which its documentation calls
/// plainly (`SELECT * FROM fn_virtualfilestats(1, 1)`).
const UNQUALIFIED_SYSTEM_OBJECTS: [&str; 2] = ["sysprocesses", "fn_virtualfilestats"];

/// Whether the name names a system view: its schema part is `sys` (a catalog view or DMV),
/// brackets or quotes removed; or it is one of [`UNQUALIFIED_SYSTEM_OBJECTS`] named without a
/// schema or with `dbo`.
pub(crate) fn is_sys_schema(name: &sqlparser::ast::ObjectName) -> bool {
    let parts = &name.0;
    let part = |i: usize| parts[i].to_string().trim_matches(['[', ']', '"']).to_string();
    let schema = parts.len().checked_sub(2).map(part);
    if schema.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("sys")) {
        return true;
    }
    let last = parts.len().checked_sub(1).map(part).unwrap_or_default();
    let unqualified = UNQUALIFIED_SYSTEM_OBJECTS.iter().any(|v| v.eq_ignore_ascii_case(&last));
    unqualified && schema.is_none_or(|s| s.is_empty() || s.eq_ignore_ascii_case("dbo"))
}

/// 9001: a database's log stopped ([`SqlError::log_not_available`]).
const LOG_NOT_AVAILABLE: i32 = 9001;

/// DATABASEPROPERTYEX(name, 'Version'): SQL Server 2022 RTM's internal database version.
const DATABASE_VERSION: i32 = 957;

/// Errors SQL Server raises when it compiles a statement (here some are found when it runs):
/// SET XACT_ABORT does not roll the transaction back for them.
pub(crate) fn is_compile_error(number: i32) -> bool {
    matches!(number, 208 | 207 | 137 | 134 | 4104 | 209 | 102 | 105 | 113 | 156)
}

fn aborts_batch(number: i32) -> bool {
    is_compile_error(number) || matches!(number, 245 | 8114 | 8169 | 241 | 1205 | 217 | CANCELLED)
}

/// A transaction of the session began or ended (by its id, which the TDS layer sends as the
/// 8-byte transaction descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionEvent {
    Began(u64),
    Committed(u64),
    RolledBack(u64),
}

/// Where an INSERT's rows go ([`Session::insert_target`]).
pub(crate) struct InsertTarget {
    table: Arc<engine::catalog::Table>,
    /// The table's column index of each value of a source row.
    positions: Vec<usize>,
    defaults: Vec<Option<Expr>>,
    explicit_identity: bool,
    identity_position: Option<usize>,
    /// Whether the INSERT named its columns (a count mismatch is then 109/110, else 213).
    column_list: bool,
}

pub struct Session {
    pub server: Arc<Server>,
    pub spid: u16,
    pub(crate) db: Arc<Database>,
    /// The open transaction between requests (on the request's thread while one runs).
    transaction: Option<engine::xact::DetachedTransaction>,
    /// The variables of the running batch, procedure or dynamic SQL.
    pub(crate) variables: BTreeMap<String, (SqlType, Value)>,
    /// @@NESTLEVEL: procedures and dynamic SQL running one inside another.
    pub(crate) nest_level: u32,
    /// INSERT ... EXEC statements running (8164 when one would start inside another).
    insert_exec_depth: u32,
    /// The rows an OUTPUT clause is collecting while its statement runs ([`crate::output`]).
    pub(crate) output_capture: Option<crate::output::OutputCapture>,
    /// The session's temporary tables and table variables.
    temp: crate::temp::TempObjects,
    /// SET STATISTICS IO ON: each statement's page reads per table, as messages.
    statistics_io: bool,
    /// SET STATISTICS TIME ON: each batch's parse time and each statement's CPU and elapsed
    /// time, as messages.
    statistics_time: bool,
    /// The session's cursors, @@FETCH_STATUS and @@CURSOR_ROWS.
    pub(crate) cursors: crate::cursor::Cursors,
    /// The procedure (or None for dynamic SQL) at each nesting level.
    pub(crate) module_stack: Vec<Option<String>>,
    /// The RETURN status of the procedure that ran last.
    pub(crate) return_status: i32,
    /// TRY blocks being run: while > 0 every error goes to the CATCH block.
    try_depth: u32,
    /// The errors CATCH blocks are handling, innermost last.
    catch_stack: Vec<CaughtError>,
    /// The running statement's OPTION (...) hints.
    pub(crate) hints: front::QueryHints,
    /// SET IDENTITY_INSERT ... ON: (database id, object id, the name as written).
    identity_insert: Option<(u16, i32, String)>,
    /// SHUTDOWN ran: the server's databases are closed and the session takes no more batches.
    shut_down: bool,
    /// An error of severity 20 or above reached the client: SQL Server ends the connection
    /// after sending it ([`Session::fatal_error_sent`]).
    fatal_error_sent: bool,
    /// The database a catalog view named `db.sys.view` reads while it runs (None: the
    /// session's current database); see [`Session::catalog_db`].
    view_db: std::cell::RefCell<Option<Arc<Database>>>,
    /// Trace flags set by DBCC TRACEON without -1 (this session's own).
    pub(crate) session_trace_flags: std::collections::BTreeSet<u16>,
    /// NEWID()'s generator: seeded from the OS once per session, or by
    /// [`Session::set_random_seed`] to replay a run.
    rng: std::cell::RefCell<engine::rng::SplitMix64>,
    /// The common table expressions of the queries running now, innermost last.
    pub(crate) ctes: std::cell::RefCell<Vec<crate::query::CteBinding>>,
    /// The running statement's index uses for sys.dm_db_index_usage_stats: (database id,
    /// object id, index id, use), each counted once when the statement ends.
    index_uses: std::cell::RefCell<BTreeSet<(u16, i32, i32, engine::index_usage::IndexUse)>>,
    nocount: bool,
    xact_abort: bool,
    pub(crate) rowcount: u64,
    /// The rows the running batch's statements affected or returned, summed (the XE event
    /// sql_batch_completed's row_count), SET NOCOUNT or not.
    batch_row_count: u64,
    pub(crate) last_error: i32,
    /// The running statement reported an error without failing (note_error).
    error_noted: bool,
    /// A statement runs in its own (autocommit) transaction, which @@TRANCOUNT does not show.
    in_autocommit: bool,
    /// SET IMPLICIT_TRANSACTIONS ON: a statement outside a transaction starts one that stays
    /// open until COMMIT or ROLLBACK (JDBC's setAutoCommit(false) relies on it).
    implicit_transactions: bool,
    /// Its cancel flag (set by the TDS layer when the client sends ATTENTION) and KILL's
    /// mark; the server's session registry holds it too.
    control: Arc<crate::server::SessionControl>,
    /// SET LOCK_TIMEOUT: how long a lock request waits, in milliseconds (-1: as long as it
    /// takes; 0: not at all).
    lock_timeout_ms: i32,
    /// SET DEADLOCK_PRIORITY: -10 to 10 (LOW -5, NORMAL 0, HIGH 5).
    deadlock_priority: i8,
    /// SET TRANSACTION ISOLATION LEVEL, as sys.dm_exec_sessions numbers it.
    isolation: IsolationLevel,
    /// The session's transactions beginning and ending, for the TDS layer's ENVCHANGE 8, 9
    /// and 10 (it drains them as the batch's outputs come, so they keep their place). None
    /// until the TDS layer asks for them: an embedded session records nothing.
    transaction_events: Option<std::sync::Arc<parking_lot::Mutex<Vec<TransactionEvent>>>>,
    /// The identity value the session's last insert generated (@@IDENTITY, SCOPE_IDENTITY();
    /// one scope until procedures exist).
    last_identity: std::cell::Cell<Option<i64>>,
    /// The running batch raised an error.
    batch_failed: bool,
}

impl Drop for Session {
    /// The session disconnects: a transaction it left open is rolled back, as SQL Server does
    /// when a connection closes (its locks are released and the log may truncate past it),
    /// and sys.dm_exec_sessions no longer lists it. The session's transaction is rolled back
    /// on the thread that drops it.
    fn drop(&mut self) {
        // A transaction of another session running on this thread (in its request's output
        // callback, say) steps aside while this one's is rolled back and its tables dropped.
        let other = engine::xact::detach();
        if let Some(transaction) = self.transaction.take() {
            engine::xact::attach(transaction);
            engine::instance::set_current_spid(self.spid);
            if let Some(database_id) = engine::xact::current_database()
                && let Some(db) = self.server.database_by_id(i64::from(database_id))
            {
                let _ = db.rollback_tran();
            }
            // A rollback that failed (its database gone) still lets go of the transaction.
            drop(engine::xact::detach());
        }
        let temporary = self.temp.take_all();
        // No transaction is open on the thread now: nothing waits for one to end.
        drop(drop_temporary(temporary));
        if let Some(other) = other {
            engine::xact::attach(other);
        }
        self.server.sessions.lock().remove(&self.spid);
        // A closed session has no row in sys.dm_exec_session_wait_stats.
        self.server.instance.waits.clear_session(self.spid);
        if !self.db.log().is_available() {
            self.leave_failed_database();
        }
    }
}

/// Whether a statement that succeeded leaves @@ERROR at 0: every statement but the compound
/// ones, whose own statements set it.
fn resets_error(stmt: &Stmt) -> bool {
    !matches!(
        stmt,
        Stmt::If { .. }
            | Stmt::While { .. }
            | Stmt::Block(_)
            | Stmt::TryCatch { .. }
            | Stmt::Exec(_)
    )
}

impl Session {
    /// A session in `master`.
    pub fn new(server: &Arc<Server>) -> Session {
        let engine_session = engine::session::Session::open(&server.instance);
        let db = server.database("master").expect("master exists");
        let now = std::time::Instant::now();
        let control = Arc::new(crate::server::SessionControl::default());
        server.sessions.lock().insert(
            engine_session.spid,
            crate::server::SessionInfo {
                login_time: now,
                host_name: None,
                program_name: "extentdb".into(),
                login_name: "sa".into(),
                connection: None,
                database_id: db.database_id,
                request: None,
                last_request_start_time: now,
                last_request_end_time: now,
                open_transaction_count: 0,
                last_batch: Arc::from(""),
                used: crate::server::RequestUse::default(),
                row_count: 0,
                prev_error: 0,
                lock_timeout_ms: -1,
                deadlock_priority: 0,
                transaction_isolation_level: IsolationLevel::ReadCommitted as i16,
                control: control.clone(),
            },
        );
        Session {
            server: server.clone(),
            spid: engine_session.spid,
            db,
            transaction: None,
            variables: BTreeMap::new(),
            nest_level: 0,
            insert_exec_depth: 0,
            output_capture: None,
            temp: crate::temp::TempObjects::default(),
            cursors: crate::cursor::Cursors::default(),
            statistics_io: false,
            statistics_time: false,
            module_stack: Vec::new(),
            return_status: 0,
            try_depth: 0,
            catch_stack: Vec::new(),
            ctes: std::cell::RefCell::new(Vec::new()),
            index_uses: std::cell::RefCell::new(BTreeSet::new()),
            hints: front::QueryHints::default(),
            identity_insert: None,
            shut_down: false,
            fatal_error_sent: false,
            view_db: std::cell::RefCell::new(None),
            session_trace_flags: std::collections::BTreeSet::new(),
            rng: std::cell::RefCell::new(engine::rng::SplitMix64::new(os_seed())),
            nocount: false,
            xact_abort: false,
            rowcount: 0,
            batch_row_count: 0,
            last_error: 0,
            error_noted: false,
            in_autocommit: false,
            implicit_transactions: false,
            control,
            lock_timeout_ms: -1,
            deadlock_priority: 0,
            isolation: IsolationLevel::ReadCommitted,
            transaction_events: None,
            last_identity: std::cell::Cell::new(None),
            batch_failed: false,
        }
    }

    /// Seeds NEWID()'s generator, so that a run's GUIDs can be replayed.
    pub fn set_random_seed(&mut self, seed: u64) {
        self.rng = std::cell::RefCell::new(engine::rng::SplitMix64::new(seed));
    }

    /// Whether SHUTDOWN ran (the client should stop sending batches).
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// The errorlog's ProcessInfo for this session's lines (`spid<n>`).
    fn process_info(&self) -> String {
        format!("spid{}", self.spid)
    }

    /// Whether an error of severity 20 to 25 was sent (an 824, or RAISERROR ... WITH LOG):
    /// SQL Server treats these as fatal and terminates the client's connection once the
    /// client has the message, so the TDS server closes it (and the session, dropped, rolls
    /// back its open transaction). Deviation: an embedded session, which has no connection,
    /// takes further batches.
    pub fn fatal_error_sent(&self) -> bool {
        self.fatal_error_sent
    }

    /// The current database.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The database whose catalog views a query reads: the one a three-part name
    /// (`otherdb.sys.tables`) names while that view runs, else the current one.
    pub(crate) fn catalog_db(&self) -> Arc<Database> {
        match self.view_db.borrow().as_ref() {
            Some(db) => db.clone(),
            None => self.db.clone(),
        }
    }

    /// Runs `view` (a catalog view's rows) with [`Session::catalog_db`] as the database that
    /// `name` names (`db.sys.view`): 911, 926, 942 or 9001 if that database cannot be used.
    pub(crate) fn in_named_database<T>(
        &self,
        name: &sqlparser::ast::ObjectName,
        view: impl FnOnce() -> T,
    ) -> Result<T> {
        let Some(database) = other_database_part(name, &self.db.name) else { return Ok(view()) };
        let db = self.server.open_database(&database)?;
        let previous = self.view_db.replace(Some(db));
        let result = view();
        *self.view_db.borrow_mut() = previous;
        Ok(result)
    }

    /// Error 40517 for a three-part name that names a table or other user object of another
    /// database (`otherdb.dbo.t`): reading or changing another database's tables is not built
    /// (a session's transaction belongs to one database). Before, the name's last part was
    /// looked up in the current database, which could read or change the wrong table.
    /// Catalog views of another database (`otherdb.sys.tables`) are served.
    fn refuse_other_database_objects(&self, statement: &Statement) -> Result<()> {
        let current = &self.db.name;
        // Looked for only when a three-part name is met (most statements have none).
        let method_calls = std::cell::OnceCell::new();
        let is_method_call = |name: &sqlparser::ast::ObjectName| {
            method_calls.get_or_init(|| xml_nodes_calls(statement)).contains(name)
        };
        let found =
            sqlparser::ast::visit_relations(statement, |name: &sqlparser::ast::ObjectName| {
                match other_database_part(name, current) {
                    Some(_) if !is_sys_schema(name) && !is_method_call(name) => {
                        std::ops::ControlFlow::Break(name.to_string())
                    }
                    _ => std::ops::ControlFlow::Continue(()),
                }
            });
        match found {
            std::ops::ControlFlow::Break(written) => Err(SqlError::new(
                40517,
                16,
                1,
                format!(
                    "Keyword or statement option 'a table of another database ({written})' is \
                     not supported in this version of extentdb."
                ),
            )),
            std::ops::ControlFlow::Continue(()) => Ok(()),
        }
    }

    /// BEGIN TRAN [name | @variable]: a transaction, or one level deeper in the open one. The
    /// outermost transaction keeps the name (DBCC OPENTRAN, ROLLBACK TRAN name). As SQL Server
    /// documents it, a written name over 32 characters is refused (error 103 when the batch is
    /// parsed; its text is the common identifier-too-long text, unverified) and a variable's
    /// value is cut to 32.
    fn begin_named_tran(
        &mut self,
        name: Option<&str>,
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let name = match name {
            Some(variable) if variable.starts_with('@') => {
                let value = self.variable(variable).map_err(|e| self.fail(e, line))?;
                let text = value::display(&value);
                let cut: String = text.chars().take(MAX_TRANSACTION_NAME_CHARS).collect();
                (!matches!(value, Value::Null)).then_some(cut)
            }
            other => other.map(str::to_string),
        };
        self.tracking_transaction(false, |db| db.begin_tran()).map_err(|e| self.fail(e, line))?;
        if let Some(name) = &name {
            engine::xact::name_current_transaction(name);
        }
        Ok(Flow::Next)
    }

    /// The current database's name.
    pub fn database_name(&self) -> String {
        self.db.name.clone()
    }

    /// Runs one batch (its text without GO); every result, message and error goes to `out`.
    /// Returns false if an error was raised.
    pub fn execute(&mut self, sql: &str, out: &mut dyn FnMut(Output)) -> bool {
        if self.shut_down {
            return false;
        }
        self.execute_with_variables(sql, Vec::new(), out)
    }

    /// Runs a batch whose variables start with `variables` (name with its @, type, value):
    /// how a remote procedure call's parameters reach the batch the TDS server makes of it.
    /// After the batch, [`Session::variable_after_batch`] reads them back (OUTPUT parameters).
    pub fn execute_with_variables(
        &mut self,
        sql: &str,
        variables: Vec<(String, SqlType, Value)>,
        out: &mut dyn FnMut(Output),
    ) -> bool {
        if self.shut_down {
            return false;
        }
        engine::instance::set_current_spid(self.spid);
        if self.control.is_killed() {
            self.end_killed(out);
            return false;
        }
        engine::session::run_as_worker();
        engine::traceflags::set_session_flags(self.session_trace_flags.iter().copied());
        self.install_wait_limits();
        // The session's open transaction runs on the thread that runs the request (engine::xact
        // keeps it per thread), whichever thread ran the session's last request.
        if let Some(transaction) = self.transaction.take() {
            engine::xact::attach(transaction);
        }
        let succeeded = self.run_request(sql, variables, out);
        self.transaction = engine::xact::detach();
        succeeded
    }

    /// A batch of a killed session (embedded: the TDS server ends a killed connection): 596,
    /// and its transaction is rolled back.
    fn end_killed(&mut self, out: &mut dyn FnMut(Output)) {
        if let Some(transaction) = self.transaction.take() {
            engine::xact::attach(transaction);
            let _ = self.tracking_transaction(false, |db| db.rollback_tran());
            drop(engine::xact::detach());
        }
        let failure = self.fail(killed_session(), 1);
        self.report(failure, out);
    }

    fn run_request(
        &mut self,
        sql: &str,
        variables: Vec<(String, SqlType, Value)>,
        out: &mut dyn FnMut(Output),
    ) -> bool {
        if !self.db.log().is_available() {
            // The session's database was shut down when its log stopped (another session got
            // the 9001): this batch gets it too, and the session lets go of the database.
            let error = SqlError::log_not_available(&self.db.name);
            let failure = self.fail(error, 1);
            self.report(failure, out);
            return false;
        }
        self.request_started(sql);
        self.batch_row_count = 0;
        // The batch and error events are looked at only while a session has one of them (the
        // instance's event list is not even touched otherwise: a batch of `SELECT 1` costs
        // about a microsecond).
        let xevents =
            [catalog::SQL_BATCH_STARTING, catalog::SQL_BATCH_COMPLETED, catalog::ERROR_REPORTED]
                .into_iter()
                .any(|event| self.server.instance.xevents.is_enabled(event))
                .then(|| self.server.instance.xevents.clone());
        if let Some(xevents) = &xevents {
            xevents.fire(self.spid, catalog::SQL_BATCH_STARTING, || {
                vec![FieldValue::Text(sql.to_string())]
            });
        }
        // Each error the batch sends is an error_reported event; the worst ends the batch's
        // result (OK, Error, or Abort for a cancel or a KILL).
        let mut result = 0u32;
        let spid = self.spid;
        let mut observed = |output: Output| {
            if let (Some(xevents), Output::Error { error, .. }) = (&xevents, &output) {
                let aborted = [CANCELLED, KILLED].contains(&error.number);
                result = result.max(if aborted { 2 } else { 1 });
                xevents.fire(spid, catalog::ERROR_REPORTED, || error_reported_fields(error));
            }
            out(output);
        };
        // The request runs on a worker of one of the instance's schedulers.
        let worker = engine::scheduler::attach(&self.server.instance.schedulers);
        let succeeded = self.execute_batch(sql, variables, &mut observed);
        drop(worker);
        let used = self.request_ended();
        let rows = self.batch_row_count;
        if let Some(xevents) = &xevents {
            xevents.fire(self.spid, catalog::SQL_BATCH_COMPLETED, || {
                let used = used.unwrap_or_default();
                vec![
                    FieldValue::U64(used.cpu_time_ns / 1_000),
                    FieldValue::U64(used.elapsed_ns / 1_000),
                    FieldValue::U64(used.reads),
                    FieldValue::U64(used.logical_reads),
                    FieldValue::U64(0),
                    FieldValue::U64(rows),
                    FieldValue::Map(MapName::ExecutionResult, result),
                    FieldValue::Text(sql.to_string()),
                ]
            });
        }
        succeeded
    }

    /// The value of a variable of the last batch (None if it has none by that name).
    pub fn variable_after_batch(&self, name: &str) -> Option<Value> {
        self.variables.get(&name.to_lowercase()).map(|(_, v)| v.clone())
    }

    /// The batch's request starts: sys.dm_exec_requests shows it from now.
    fn request_started(&self, sql: &str) {
        self.server.instance.counters.count_batch_request();
        let now = std::time::Instant::now();
        let request = crate::server::RunningRequest {
            started: now,
            thread_id: engine::session::thread_id(),
            cpu_start_ns: engine::session::thread_cpu_time_ns(),
            reads_start: engine::iostats::thread_reads(),
            command: first_keyword(sql),
        };
        if let Some(info) = self.server.sessions.lock().get_mut(&self.spid) {
            info.last_request_start_time = now;
            info.request = Some(request);
            info.last_batch = Arc::from(sql);
        }
    }

    /// The batch's request ended: the session is sleeping again. What the request used
    /// (None for a session the server does not list).
    fn request_ended(&self) -> Option<crate::server::RequestUse> {
        let now = std::time::Instant::now();
        let open = self.user_trancount();
        let reads = engine::iostats::thread_reads();
        let cpu_ns = engine::session::thread_cpu_time_ns();
        let mut sessions = self.server.sessions.lock();
        let info = sessions.get_mut(&self.spid)?;
        let used = info.request.as_ref().map(|request| crate::server::RequestUse {
            cpu_time_ns: cpu_ns.saturating_sub(request.cpu_start_ns),
            elapsed_ns: u64::try_from((now - request.started).as_nanos()).unwrap_or(u64::MAX),
            logical_reads: reads.logical_reads.saturating_sub(request.reads_start.logical_reads),
            reads: reads.reads.saturating_sub(request.reads_start.reads),
        });
        if let Some(used) = used {
            info.used.add(used);
        }
        info.request = None;
        info.last_request_end_time = now;
        info.database_id = self.db.database_id;
        info.open_transaction_count = open;
        info.row_count = self.rowcount;
        info.prev_error = self.last_error;
        Some(used.unwrap_or_default())
    }

    fn execute_batch(
        &mut self,
        sql: &str,
        variables: Vec<(String, SqlType, Value)>,
        out: &mut dyn FnMut(Output),
    ) -> bool {
        self.variables.clear();
        for (name, sql_type, value) in variables {
            self.variables.insert(name.to_lowercase(), (sql_type, value));
        }
        // The thread's CPU account is a /proc read: taken only when it is to be shown.
        let timing = self.statistics_time.then(|| (thread_cpu_ns(), std::time::Instant::now()));
        let parsed = self.server.batch_cache.parse(sql);
        if let Some((cpu_before, started)) = timing {
            let cpu_ms = thread_cpu_ns().saturating_sub(cpu_before) / 1_000_000;
            let elapsed_ms = started.elapsed().as_millis();
            out(Output::Message(format!(
                "SQL Server parse and compile time: \n   CPU time = {cpu_ms} ms, elapsed time = {elapsed_ms} ms."
            )));
        }
        // Variables that come with the batch (an RPC's parameters) are declared before it; the
        // cached parse checked the batch's own DECLAREs already.
        let parsed = parsed.and_then(|parsed| {
            if self.variables.is_empty() {
                return Ok(parsed);
            }
            crate::front::check_declarations(&parsed, self.variables.keys().map(String::as_str))
                .map(|()| parsed)
        });
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err((error, line)) => {
                self.last_error = error.number;
                // A CREATE PROCEDURE's compile errors name the procedure.
                let procedure = crate::front::defined_procedure(sql);
                out(Output::Error { error, line, procedure });
                return false;
            }
        };
        self.batch_failed = false;
        self.control.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        if let Err(failure) = self.run_parsed_block(&parsed, out) {
            if failure.error.number == CANCELLED {
                // An attention: the batch stops with no error message (the client gets
                // DONE_ATTN from the TDS layer); an open transaction stays open, unless
                // XACT_ABORT is ON (the reason client libraries advise it: a query timeout
                // then leaves no transaction behind).
                self.roll_back_for_xact_abort(&failure);
                self.control.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
                self.batch_failed = true;
            } else {
                let killed = failure.error.number == KILLED;
                self.report(failure, out);
                if killed && self.db.trancount() > 0 {
                    // KILL rolls the session's transaction back.
                    let _ = self.tracking_transaction(false, |db| db.rollback_tran());
                }
            }
        }
        if self.db.trancount() > 0 && engine::xact::is_doomed() {
            // A CATCH block that left its doomed transaction open: SQL Server rolls it back.
            let _ = self.tracking_transaction(false, |db| db.rollback_tran());
            let text = "Uncommittable transaction is detected at the end of the batch. The \
                        transaction is rolled back.";
            let failure = self.fail(SqlError::new(3998, 16, 1, text), 1);
            self.report(failure, out);
        }
        // The batch's table variables and LOCAL cursors end with it.
        self.cursors.end_scope(0);
        let mut ended = self.temp.take_scope(0, true);
        ended.extend(self.temp.take_waiting());
        let waiting = drop_temporary(ended);
        self.temp.wait_for_transaction_end(waiting);
        !self.batch_failed
    }

    /// The queue of the session's transaction changes (see [`TransactionEvent`]), recorded
    /// from the first call on; the TDS layer drains it while a batch runs.
    pub fn transaction_events(
        &mut self,
    ) -> std::sync::Arc<parking_lot::Mutex<Vec<TransactionEvent>>> {
        self.transaction_events.get_or_insert_with(Default::default).clone()
    }

    /// Runs a transaction statement (`op` on the session's database) and records the
    /// outermost transaction it began or ended: the client is told of those (ENVCHANGE), not
    /// of nested BEGIN/COMMIT nor of the autocommit transaction of a single statement.
    fn tracking_transaction(
        &self,
        committing: bool,
        op: impl FnOnce(&Database) -> Result<()>,
    ) -> Result<()> {
        let before = engine::xact::current_xact_id();
        let result = op(&self.transaction_database());
        let after = engine::xact::current_xact_id();
        if before != after
            && let Some(events) = &self.transaction_events
        {
            let mut events = events.lock();
            if let Some(xact_id) = before {
                events.push(if committing && result.is_ok() {
                    TransactionEvent::Committed(xact_id)
                } else {
                    TransactionEvent::RolledBack(xact_id)
                });
            }
            if let Some(xact_id) = after {
                events.push(TransactionEvent::Began(xact_id));
            }
        }
        result
    }

    /// The database of the session's open transaction, else the current one. A transaction
    /// belongs to the session: after `USE other` inside it, COMMIT, ROLLBACK and SAVE TRAN
    /// still end or mark it, as in SQL Server (they answered 3902/3903/628 and left it open,
    /// holding its locks and its log).
    fn transaction_database(&self) -> Arc<Database> {
        match engine::xact::current_database() {
            Some(id) if id != self.db.database_id => {
                self.server.database_by_id(i64::from(id)).unwrap_or_else(|| self.db.clone())
            }
            _ => self.db.clone(),
        }
    }

    /// A flag that, when set (a client's ATTENTION), stops the running batch before its next
    /// statement or loop iteration, or at the next row of a running statement
    /// ([`Session::check_cancel`]).
    pub fn cancel_handle(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.control.cancel.clone()
    }

    /// @@TRANCOUNT: the session's transaction nesting, not counting a statement's own
    /// autocommit transaction.
    fn user_trancount(&self) -> i32 {
        self.db.trancount() as i32 - i32::from(self.in_autocommit)
    }

    /// Whether a user transaction is open (BEGIN TRAN, or an implicit one).
    pub(crate) fn user_transaction_open(&self) -> bool {
        self.user_trancount() > 0
    }

    /// SET LOCK_TIMEOUT's value (@@LOCK_TIMEOUT).
    pub(crate) fn lock_timeout_ms(&self) -> i32 {
        self.lock_timeout_ms
    }

    /// Whether SET IMPLICIT_TRANSACTIONS is ON.
    pub(crate) fn implicit_transactions_on(&self) -> bool {
        self.implicit_transactions
    }

    /// Whether another session's KILL ended this one (the TDS server then closes the
    /// connection).
    pub fn is_killed(&self) -> bool {
        self.control.is_killed()
    }

    /// The TDS server's facts about the session's client: its login, host and program names
    /// (LOGIN7's) and its connection. sys.dm_exec_sessions, sys.dm_exec_connections,
    /// HOST_NAME(), APP_NAME() and SUSER_SNAME() show them.
    pub fn set_client(
        &self,
        login_name: &str,
        host_name: &str,
        program_name: &str,
        connection: Arc<crate::server::Connection>,
    ) {
        if let Some(info) = self.server.sessions.lock().get_mut(&self.spid) {
            info.login_name = login_name.to_string();
            info.host_name = Some(host_name.to_string());
            info.program_name = program_name.to_string();
            info.connection = Some(connection);
        }
    }

    /// How KILL ends this session's connection (the TDS server's hook).
    pub fn on_kill(&self, disconnect: Box<dyn Fn() + Send + Sync>) {
        self.control.on_kill(disconnect);
    }

    /// Remembers an error that was sent without failing the statement (DBCC's findings):
    /// @@ERROR shows it and the batch counts as failed.
    pub(crate) fn note_error(&mut self, number: i32) {
        self.last_error = number;
        self.batch_failed = true;
        self.error_noted = true;
    }

    /// ALTER DATABASE ... SET OFFLINE or SET ONLINE. A database in use is 5070 then 5069
    /// ("ALTER DATABASE statement failed."), as SQL Server reports it. WITH ROLLBACK ended
    /// the other sessions first ([`Session::end_database_sessions`]). Deviation: without it,
    /// SQL Server waits for the other users to leave; extentdb fails at once (as WITH NO_WAIT
    /// does), and so it does when an embedded session, which KILL cannot end while it is
    /// idle, still uses the database.
    fn change_database_state(
        &mut self,
        name: &str,
        online: bool,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        let result =
            if online { self.server.set_online(name) } else { self.server.set_offline(name) };
        match result {
            Ok(()) => Ok(Flow::Next),
            Err(error) if error.number == 5070 => {
                out(Output::Error { error, line, procedure: None });
                let failed = SqlError::new(5069, 16, 1, "ALTER DATABASE statement failed.");
                Err(self.fail(failed, line))
            }
            Err(error) => Err(self.fail(error, line)),
        }
    }

    /// Sends an error to the client and remembers it (@@ERROR, the batch's result).
    /// A statement that failed affected no rows: @@ROWCOUNT is 0 after it, as in SQL Server.
    fn report(&mut self, failure: Failure, out: &mut dyn FnMut(Output)) {
        self.batch_failed = true;
        self.last_error = failure.error.number;
        self.rowcount = 0;
        // Severities 19 to 25 are written to the errorlog too (an 824, say).
        if failure.error.severity >= 19 && ![CANCELLED, KILLED].contains(&failure.error.number) {
            self.server.instance.errorlog.write_error(&self.process_info(), &failure.error);
            self.fatal_error_sent |= failure.error.severity >= 20;
        }
        let log_failed = failure.error.number == LOG_NOT_AVAILABLE;
        out(Output::Error {
            error: failure.error,
            line: failure.line,
            procedure: failure.procedure,
        });
        if log_failed {
            self.leave_failed_database();
        }
    }

    /// After a 9001 (a database's log stopped): the session lets go of its database if that
    /// is the one, as SQL Server ends the connection, so that the server can shut it down and
    /// restart it ([`Server::restart_databases_whose_log_failed`]). An open transaction ends
    /// with it (the restart's recovery decides what of it was durable); the session goes on
    /// in master. Deviation: an embedded session is not ended, only moved to master.
    fn leave_failed_database(&mut self) {
        if !self.db.log().is_available() {
            let _ = self.db.rollback_tran();
            if let Ok(master) = self.server.open_database("master") {
                self.db = master;
                self.note_database();
            }
        }
        self.server.restart_databases_whose_log_failed();
    }

    /// Shows the session's database in its SessionInfo at once (sys.dm_exec_sessions and
    /// _requests' database_id, the XE actions database_id and database_name), not only when
    /// the request ends (bug fix: a `USE` inside a batch showed the batch's first database
    /// until the batch ended, so the seed 002 example's zeroing waits were given to the
    /// database used before).
    fn note_database(&self) {
        if let Some(info) = self.server.sessions.lock().get_mut(&self.spid) {
            info.database_id = self.db.database_id;
        }
    }

    /// Error 3617 once the client's ATTENTION has cancelled the batch. Checked before each
    /// statement and inside the row loops of scans, joins, inserts, updates and deletes, so a
    /// long single statement stops too (and is rolled back alone, as any failed statement).
    pub(crate) fn check_cancel(&self) -> Result<()> {
        if self.control.is_killed() {
            return Err(killed_session());
        }
        if self.control.cancel.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(SqlError::new(
                CANCELLED,
                25,
                1,
                "The query was cancelled by the client (ATTENTION).",
            ));
        }
        Ok(())
    }

    /// A statement's error as a failure: it ends the batch for the batch-aborting errors, for
    /// every error of severity 19 and above (SQL Server: "error messages with a severity level
    /// of 19 or higher stop the execution of the current batch"), and under XACT_ABORT.
    pub(crate) fn fail(&self, error: SqlError, line: u64) -> Failure {
        // A wait the engine ended for a cancel: the cancel's own error (596 once killed).
        let error = match error.number {
            engine::error::WAIT_CANCELLED => self.check_cancel().err().unwrap_or(error),
            _ => error,
        };
        let abort_batch = aborts_batch(error.number) || error.severity >= 19 || self.xact_abort;
        Failure {
            error,
            line,
            abort_batch,
            procedure: self.module_stack.last().cloned().flatten(),
            nest_level: self.nest_level,
            raiserror: false,
        }
    }

    /// SET XACT_ABORT ON: a statement's run-time error rolls the whole transaction back, a
    /// cancel (attention) included; not RAISERROR's errors, nor compile errors.
    fn xact_abort_rolls_back(&self, number: i32, raiserror: bool) -> bool {
        self.xact_abort && !raiserror && !is_compile_error(number)
    }

    /// Ends the transaction if [`Session::xact_abort_rolls_back`] says the failure does: inside
    /// a TRY block the transaction is doomed (uncommittable, XACT_STATE() -1) for the CATCH
    /// block to roll back, as in SQL Server; elsewhere it is rolled back.
    fn roll_back_for_xact_abort(&self, failure: &Failure) {
        let applies = self.xact_abort_rolls_back(failure.error.number, failure.raiserror);
        if !applies || self.db.trancount() == 0 {
            return;
        }
        if self.try_depth > 0 && failure.error.number != CANCELLED {
            engine::xact::doom_current();
        } else {
            let _ = self.tracking_transaction(false, |db| db.rollback_tran());
        }
    }

    /// BEGIN TRY ... END TRY BEGIN CATCH ... END CATCH: an error in the TRY block (or in what
    /// it calls) runs the CATCH block instead of reaching the client. Not caught, as in SQL
    /// Server: severity 20 and above, and name errors of the TRY block's own level, which SQL
    /// Server raises when it compiles the statement.
    fn run_try_catch(
        &mut self,
        try_body: &[Parsed],
        catch_body: &[Parsed],
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        self.try_depth += 1;
        let result = self.run_parsed_block(try_body, out);
        if result.is_err() {
            // The CATCH block comes after the TRY block's DECLAREs, run or not. Made while
            // still in the TRY block, so that a failure to make one dooms the transaction
            // rather than rolling it back. A table variable cannot be made in a doomed
            // transaction (here it is a table under the session's transaction: deviation): it
            // stays undeclared rather than keep the CATCH block from running.
            let _ = self.declare_skipped(try_body);
        }
        self.try_depth -= 1;
        let failure = match result {
            Ok(flow) => return Ok(flow),
            Err(failure) => failure,
        };
        let compile_error =
            matches!(failure.error.number, 207 | 208) && failure.nest_level == self.nest_level;
        if failure.error.severity >= 20 || compile_error {
            return Err(failure);
        }
        self.last_error = failure.error.number;
        self.catch_stack.push(CaughtError {
            error: failure.error,
            line: failure.line,
            procedure: failure.procedure,
        });
        let result = self.run_parsed_block(catch_body, out);
        self.catch_stack.pop();
        result
    }

    /// THROW [number, message, state]: severity 16, ends the batch; without arguments, in a
    /// CATCH block, raises the caught error again.
    fn run_throw(
        &mut self,
        arguments: Option<&[Expr; 3]>,
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let Some([number, message, state]) = arguments else {
            let Some(caught) = self.catch_stack.last() else {
                return Err(self.fail(SqlError::new(10704, 15, 1, "To rethrow an error, a THROW statement must be used inside a CATCH block. Insert the THROW statement inside a CATCH block, or add error parameters to the THROW statement."), line));
            };
            let mut failure = self.fail(caught.error.clone(), caught.line);
            failure.procedure = caught.procedure.clone();
            failure.abort_batch = true;
            return Err(failure);
        };
        let as_int = |s: &Session, e: &Expr| -> std::result::Result<i64, Failure> {
            let v = convert(&s.eval_stmt(e, line)?, SqlType::Int).map_err(|e| s.fail(e, line))?;
            Ok(value::as_i64(&v).unwrap_or(0))
        };
        let number = as_int(self, number)?;
        if number < 50000 {
            return Err(self.fail(SqlError::new(35100, 16, 10, format!("Error number {number} in the THROW statement is outside the valid range. Specify an error number in the valid range of 50000 to 2147483647.")), line));
        }
        let state = as_int(self, state)?.clamp(0, 255) as u8;
        let message = value::display(&self.eval_stmt(message, line)?);
        let mut failure = self.fail(SqlError::new(number as i32, 16, state, message), line);
        failure.abort_batch = true;
        Err(failure)
    }

    /// Runs one statement, then records the index uses it made (each once, as
    /// sys.dm_db_index_usage_stats counts them).
    fn run(
        &mut self,
        stmt: &Stmt,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        let flow = self.run_one(stmt, line, out);
        self.record_index_uses();
        flow
    }

    /// Notes that the running statement used a table's index (`position` in its indexes: 0
    /// is the heap or clustered index) for sys.dm_db_index_usage_stats. Temporary tables and
    /// table variables are not counted: they are tempdb's in SQL Server.
    pub(crate) fn note_index_use(
        &self,
        table: &engine::catalog::Table,
        position: usize,
        kind: engine::index_usage::IndexUse,
    ) {
        if crate::temp::is_stored_temporary(&table.name) {
            return;
        }
        let index_id = table.indexes[position].index_id;
        let key = (self.db.database_id, table.object_id, index_id, kind);
        self.index_uses.borrow_mut().insert(key);
    }

    /// Notes a statement's change of a table's rows: its heap or clustered index, and the
    /// nonclustered indexes whose entries change: all of them for an insert or a delete
    /// (`changed_columns` None); for an update, those keyed on a changed column, or all when
    /// a clustered key column changes (every entry's row locator does).
    pub(crate) fn note_table_change(
        &self,
        table: &engine::catalog::Table,
        changed_columns: Option<&[usize]>,
    ) {
        use engine::index_usage::IndexUse;
        let touches = |index: &engine::catalog::IndexDef| {
            changed_columns
                .is_none_or(|changed| index.key_columns.iter().any(|c| changed.contains(c)))
        };
        let locators_change = touches(&table.indexes[0]);
        for (position, index) in table.indexes.iter().enumerate() {
            if position == 0 || locators_change || touches(index) {
                self.note_index_use(table, position, IndexUse::Update);
            }
        }
    }

    /// Records the statement's index uses in their databases, at its end.
    fn record_index_uses(&self) {
        let uses = std::mem::take(&mut *self.index_uses.borrow_mut());
        if uses.is_empty() {
            return;
        }
        let now = std::time::Instant::now();
        for (database_id, object_id, index_id, kind) in uses {
            if database_id == self.db.database_id {
                self.db.index_usage.record(object_id, index_id, kind, now);
            } else if let Some(db) = self.server.database_by_id(i64::from(database_id)) {
                db.index_usage.record(object_id, index_id, kind, now);
            }
        }
    }

    fn run_one(
        &mut self,
        stmt: &Stmt,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        match stmt {
            Stmt::Sql(statement) if self.statistics_io || self.statistics_time => {
                let timing =
                    self.statistics_time.then(|| (thread_cpu_ns(), std::time::Instant::now()));
                if self.statistics_io {
                    engine::iostats::start();
                }
                let result = self.run_statement(statement, line, out);
                if self.statistics_io {
                    let counts = engine::iostats::take();
                    self.report_io(counts, out);
                }
                if let Some((cpu_before, started)) = timing {
                    let cpu_ms = thread_cpu_ns().saturating_sub(cpu_before) / 1_000_000;
                    let elapsed_ms = started.elapsed().as_millis();
                    out(Output::Message(format!(
                        "\n SQL Server Execution Times:\n   CPU time = {cpu_ms} ms,  elapsed time = {elapsed_ms} ms."
                    )));
                }
                result
            }
            Stmt::Sql(statement) => self.run_statement(statement, line, out),
            Stmt::If { condition, then, otherwise } => {
                let take = is_true(&self.eval_stmt(condition, line)?);
                self.last_error = 0;
                if !take {
                    // The ELSE branch comes after the THEN branch's DECLAREs.
                    self.declare_skipped(then)?;
                }
                self.run_parsed_block(if take { then } else { otherwise }, out)
            }
            Stmt::While { condition, body } => {
                for _ in 0..MAX_WHILE_ITERATIONS {
                    let go_on = is_true(&self.eval_stmt(condition, line)?);
                    self.last_error = 0;
                    if !go_on {
                        return Ok(Flow::Next);
                    }
                    match self.run_parsed_block(body, out)? {
                        Flow::Break => return Ok(Flow::Next),
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Next | Flow::Continue => {}
                    }
                }
                Err(self.fail(
                    SqlError::new(50000, 16, 1, "WHILE loop exceeded its iteration bound."),
                    line,
                ))
            }
            Stmt::Block(statements) => self.run_parsed_block(statements, out),
            Stmt::Break => Ok(Flow::Break),
            Stmt::Commit => {
                let committed = self.tracking_transaction(true, |db| db.commit_tran());
                self.drop_waiting_variables();
                committed.map(|()| Flow::Next).map_err(|e| self.fail(e, line))
            }
            Stmt::Rollback(savepoint) => {
                let result = self.tracking_transaction(false, |db| {
                    // ROLLBACK is a statement of its own: what the statements before it did
                    // to table variables stays.
                    let mark = db.begin_statement();
                    let result = match savepoint {
                        // A savepoint, or the transaction's own name (which ends it).
                        Some(name) => db.rollback_tran_to(name),
                        None => db.rollback_tran(),
                    };
                    if let Some(mark) = mark {
                        db.end_statement(mark);
                    }
                    result
                });
                self.drop_waiting_variables();
                result.map(|()| Flow::Next).map_err(|e| self.fail(e, line))
            }
            Stmt::BeginTran(name) => self.begin_named_tran(name.as_deref(), line),
            Stmt::Continue => Ok(Flow::Continue),
            Stmt::Checkpoint => {
                self.db.checkpoint().map(|()| Flow::Next).map_err(|e| self.fail(e, line))
            }
            Stmt::Reconfigure { with_override } => self
                .reconfigure(*with_override)
                .map(|()| Flow::Next)
                .map_err(|e| self.fail(e, line)),
            Stmt::SaveTran(name) => {
                let db = self.transaction_database();
                db.save_tran(name).map(|()| Flow::Next).map_err(|e| self.fail(e, line))
            }
            Stmt::CreateTable { statement, clustering, rowguidcol, filegroup } => {
                let spec = self
                    .table_spec(statement, clustering, rowguidcol, filegroup.clone())
                    .map_err(|e| self.fail(e, line))?;
                self.atomic(line, |s| s.create_table(spec).map(|_| ()))?;
                Ok(Flow::Next)
            }
            Stmt::CreateDatabase(spec) => {
                self.no_user_transaction("CREATE DATABASE", line)?;
                self.server.create_database(spec).map_err(|e| self.fail(e, line))?;
                Ok(Flow::Next)
            }
            Stmt::AlterDatabase(alter) => {
                use crate::dbddl::{AlterAction, Termination};
                self.no_user_transaction("ALTER DATABASE", line)?;
                let name = alter.target.clone().unwrap_or_else(|| self.db.name.clone());
                if let Termination::RollbackAfter(seconds) = alter.termination
                    && matches!(
                        alter.action,
                        AlterAction::State { online: false } | AlterAction::SingleUser
                    )
                {
                    self.end_database_sessions(&name, seconds).map_err(|e| self.fail(e, line))?;
                }
                if let AlterAction::State { online } = alter.action {
                    return self.change_database_state(&name, online, line, out);
                }
                let db = match &alter.target {
                    None => self.db.clone(),
                    Some(name) => self
                        .server
                        .database(name)
                        .ok_or_else(|| self.fail(crate::server::cannot_alter(name), line))?,
                };
                crate::dbddl::alter(&db, &alter.action).map_err(|e| self.fail(e, line))?;
                Ok(Flow::Next)
            }
            Stmt::TryCatch { try_body, catch_body } => {
                self.run_try_catch(try_body, catch_body, out)
            }
            Stmt::CreateProcedure(def) => self.run_create_procedure(def, line),
            Stmt::DropProcedure { names, if_exists } => {
                self.run_drop_procedure(names, *if_exists, line)
            }
            Stmt::Exec(exec) => self.run_exec(exec, line, out),
            Stmt::Cursor(cursor) => self.run_cursor(cursor, line, out),
            Stmt::SetStatistics { options, on } => {
                // PROFILE and XML (actual plans) are accepted and change nothing: there are
                // no plans to show (deviation).
                for option in options {
                    match option.as_str() {
                        "IO" => self.statistics_io = *on,
                        "TIME" => self.statistics_time = *on,
                        _ => {}
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::InsertExec { table, columns, exec } => {
                self.run_insert_exec(table, columns, exec, line, out)
            }
            Stmt::TopDml { top, statement } => self.run_top_dml(top, statement, line, out),
            Stmt::Throw(arguments) => self.run_throw(arguments.as_deref(), line),
            Stmt::Dbcc(dbcc) => self.run_dbcc(dbcc, line, out),
            Stmt::AlterIndex(statement) => self.alter_index(statement, line),
            Stmt::Kill(kill) => self.kill(kill, line, out),
            Stmt::EventSession(statement) => self.event_session(statement, line),
            Stmt::Hinted { hints, statement } => {
                self.hints = *hints;
                let result = self.run(statement, line, out);
                self.hints = front::QueryHints::default();
                result
            }
            Stmt::SetVariable { name, value } => {
                let v = self.eval_stmt(value, line)?;
                self.set_variable(name, v).map_err(|e| self.fail(e, line))?;
                Ok(Flow::Next)
            }
            Stmt::AddColumns { table, columns } => self.add_columns_statement(table, columns, line),
            Stmt::AlterColumn { table, column, data_type, nullable } => {
                self.alter_column(table, column, data_type, *nullable, line, out)
            }
            Stmt::Shutdown { nowait } => {
                out(Output::Message("Server shut down by request from login sa.".into()));
                self.server.shutdown_from_session(*nowait).map_err(|e| self.fail(e, line))?;
                self.shut_down = true;
                Ok(Flow::Return)
            }
            Stmt::CreateIndex { name, table, unique, clustered, columns, filegroup } => {
                let spec = self
                    .index_spec(table, name, *unique, *clustered, columns, filegroup.clone())
                    .map_err(|e| self.fail(e, line))?;
                self.atomic(line, |s| {
                    let stored = s.catalog_name(table)?;
                    s.db.catalog()?.create_index(&s.db, &stored, &spec)
                })?;
                Ok(Flow::Next)
            }
        }
    }

    /// SET NOCOUNT, XACT_ABORT, LOCK_TIMEOUT, DEADLOCK_PRIORITY and TRANSACTION ISOLATION
    /// LEVEL, which a procedure's own SETs change only until it returns.
    pub(crate) fn set_options(&self) -> (bool, bool, i32, i8, IsolationLevel) {
        (
            self.nocount,
            self.xact_abort,
            self.lock_timeout_ms,
            self.deadlock_priority,
            self.isolation,
        )
    }

    pub(crate) fn restore_set_options(
        &mut self,
        (nocount, xact_abort, lock_timeout_ms, deadlock_priority, isolation): (
            bool,
            bool,
            i32,
            i8,
            IsolationLevel,
        ),
    ) {
        self.nocount = nocount;
        self.xact_abort = xact_abort;
        if self.isolation != isolation {
            self.set_isolation(isolation);
        }
        if (self.lock_timeout_ms, self.deadlock_priority) != (lock_timeout_ms, deadlock_priority) {
            self.lock_timeout_ms = lock_timeout_ms;
            self.deadlock_priority = deadlock_priority;
            self.lock_options_changed();
        }
    }

    /// Gives the engine what ends this session's lock waits: its LOCK_TIMEOUT and its cancel
    /// flag (an ATTENTION or a KILL ends a lock wait, as in SQL Server).
    fn install_wait_limits(&self) {
        let timeout =
            u64::try_from(self.lock_timeout_ms).ok().map(std::time::Duration::from_millis);
        engine::xact::set_wait_limits(engine::lock::WaitLimits {
            timeout,
            cancel: Some(self.control.cancel.clone()),
            deadlock_priority: self.deadlock_priority,
        });
    }

    /// A SET LOCK_TIMEOUT or DEADLOCK_PRIORITY took effect: the engine's limits for this
    /// thread, and sys.dm_exec_sessions.
    fn lock_options_changed(&self) {
        self.install_wait_limits();
        if let Some(info) = self.server.sessions.lock().get_mut(&self.spid) {
            info.lock_timeout_ms = self.lock_timeout_ms;
            info.deadlock_priority = self.deadlock_priority;
        }
    }

    /// Error 226: a statement that may not run inside a user transaction.
    fn no_user_transaction(&self, statement: &str, line: u64) -> std::result::Result<(), Failure> {
        if self.db.trancount() == 0 {
            return Ok(());
        }
        Err(self.fail(
            SqlError::new(
                226,
                16,
                6,
                format!("{statement} statement not allowed within multi-statement transaction."),
            ),
            line,
        ))
    }

    /// Runs `f` as one statement: in its own transaction outside one, else rolled back alone
    /// if it fails (or the whole transaction under XACT_ABORT). Its changes to table
    /// variables go with it if it fails; once it has run, a ROLLBACK keeps them
    /// ([`engine::database::Database::begin_statement`]).
    pub(crate) fn atomic<T>(
        &mut self,
        line: u64,
        f: impl FnOnce(&mut Session) -> Result<T>,
    ) -> std::result::Result<T, Failure> {
        let db = self.db.clone();
        if db.trancount() == 0 && self.implicit_transactions {
            self.tracking_transaction(false, |db| db.begin_tran())
                .map_err(|e| self.fail(e, line))?;
            engine::xact::name_current_transaction("implicit_transaction");
        }
        if db.trancount() == 0 {
            db.begin_tran().map_err(|e| self.fail(e, line))?;
            db.begin_statement();
            self.in_autocommit = true;
            let result = f(self);
            self.in_autocommit = false;
            let ended = match result {
                Ok(v) => db.commit_tran().map(|()| v).map_err(|e| self.fail(e, line)),
                Err(error) => {
                    if db.trancount() > 0 {
                        let _ = db.rollback_tran();
                    }
                    Err(self.fail(error, line))
                }
            };
            // A procedure's table variables made in this statement's transaction go now.
            self.drop_waiting_variables();
            ended
        } else {
            let mark = db.begin_statement();
            let result = f(self);
            if result.is_ok()
                && let Some(mark) = mark
            {
                db.end_statement(mark);
            }
            result.map_err(|error| {
                if db.trancount() > 0 {
                    let xact_abort = self.xact_abort_rolls_back(error.number, false);
                    if error.number == 1205 || (xact_abort && self.try_depth == 0) {
                        let _ = self.tracking_transaction(false, |db| db.rollback_tran());
                    } else if let Some(mark) = mark {
                        // Under XACT_ABORT in a TRY block the statement goes and the
                        // transaction is doomed ([`Session::roll_back_for_xact_abort`]).
                        let _ = db.rollback_statement(mark);
                    }
                }
                self.fail(error, line)
            })
        }
    }

    /// @@ROWCOUNT, and "(n rows affected)" unless SET NOCOUNT ON.
    pub(crate) fn rows_affected(&mut self, n: u64, out: &mut dyn FnMut(Output)) {
        self.rowcount = n;
        self.batch_row_count += n;
        if !self.nocount {
            out(Output::RowCount(n));
        }
    }

    fn run_statement(
        &mut self,
        statement: &Statement,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        self.refuse_other_database_objects(statement).map_err(|e| self.fail(e, line))?;
        match statement {
            Statement::Query(query)
                if let (
                    Some(with),
                    SetExpr::Insert(dml) | SetExpr::Update(dml) | SetExpr::Delete(dml),
                ) = (&query.with, query.body.as_ref()) =>
            {
                // WITH ... INSERT / UPDATE / DELETE: the CTEs are bound while the statement runs.
                let depth = self.ctes.borrow().len();
                let mut bound = Ok(());
                for cte in &with.cte_tables {
                    match self.run_cte(cte, None) {
                        Ok(binding) => self.ctes.borrow_mut().push(binding),
                        Err(error) => {
                            bound = Err(error);
                            break;
                        }
                    }
                }
                let result = match bound {
                    Ok(()) => self.run_statement(dml, line, out),
                    Err(error) => Err(self.fail(error, line)),
                };
                self.ctes.borrow_mut().truncate(depth);
                result
            }
            Statement::Query(query) => {
                let into = match query.body.as_ref() {
                    SetExpr::Select(select) => {
                        select.into.as_ref().and_then(|i| i.targets.first()).map(|e| {
                            let text = e.to_string();
                            text.rsplit('.')
                                .next()
                                .unwrap_or_default()
                                .trim_matches(['[', ']'])
                                .to_string()
                        })
                    }
                    _ => None,
                };
                if let Some(target) = into {
                    let (query, identity) =
                        identity_column(query).map_err(|e| self.fail(e, line))?;
                    let declared = declared_types(&query);
                    let result = self.atomic(line, |s| s.run_query(&query, None))?;
                    let n = result.rows.len() as u64;
                    let table = target;
                    self.atomic(line, |s| {
                        s.select_into(&table, &result.columns, &result.rows, identity, &declared)
                    })?;
                    self.rows_affected(n, out);
                    return Ok(Flow::Next);
                }
                let result = self.atomic(line, |s| s.run_query(query, None))?;
                if !result.assignments.is_empty() {
                    if let Some(last) = result.rows.last() {
                        for (name, value) in result.assignments.iter().zip(last) {
                            self.set_variable(name, value.clone())
                                .map_err(|e| self.fail(e, line))?;
                        }
                    }
                    self.rowcount = result.rows.len() as u64;
                    self.batch_row_count += self.rowcount;
                    return Ok(Flow::Next);
                }
                let n = result.rows.len() as u64;
                out(Output::Rows(ResultSet {
                    columns: result.columns,
                    rows: result.rows,
                    types: result.types,
                }));
                self.rows_affected(n, out);
                Ok(Flow::Next)
            }
            Statement::Insert(sqlparser::ast::Insert { output: Some(output), .. })
            | Statement::Update(sqlparser::ast::Update { output: Some(output), .. })
            | Statement::Delete(sqlparser::ast::Delete { output: Some(output), .. })
            | Statement::Merge(sqlparser::ast::Merge { output: Some(output), .. }) => {
                self.run_with_output(statement, None, output, line, out)
            }
            Statement::Merge(merge) => {
                let n = self.atomic(line, |s| s.merge(merge))?;
                self.rows_affected(n, out);
                Ok(Flow::Next)
            }
            Statement::Insert(insert) => {
                let n = self.atomic(line, |s| s.insert(insert))?;
                self.rows_affected(n, out);
                Ok(Flow::Next)
            }
            Statement::Update(update) => {
                let n = self.atomic(line, |s| s.update(update, None))?;
                self.rows_affected(n, out);
                Ok(Flow::Next)
            }
            Statement::Delete(delete) => {
                let n = self.atomic(line, |s| s.delete(delete, None))?;
                self.rows_affected(n, out);
                Ok(Flow::Next)
            }
            Statement::Truncate(truncate) => {
                for target in &truncate.table_names {
                    let name = last_part(&target.name);
                    self.atomic(line, |s| s.truncate(&name))?;
                }
                Ok(Flow::Next)
            }
            Statement::Drop { object_type: ObjectType::Table, if_exists, names, .. } => {
                for name in names {
                    let name = last_part(name);
                    let stored = self.catalog_name(&name).map_err(|e| self.fail(e, line))?;
                    let exists =
                        self.db.catalog().map_err(|e| self.fail(e, line))?.table(&stored).is_some();
                    if !exists && *if_exists {
                        continue;
                    }
                    // A missing table is 3701 under the name the session used.
                    let target = if exists { stored } else { name.clone() };
                    self.atomic(line, |s| s.db.catalog()?.drop_table(&s.db, &target))?;
                    if exists && crate::temp::is_temporary(&name) {
                        self.temp.remove(&name);
                    }
                }
                Ok(Flow::Next)
            }
            Statement::Drop { object_type: ObjectType::Index, names, table, .. } => {
                for name in names {
                    let parts: Vec<String> = name.0.iter().map(|p| p.to_string()).collect();
                    let (table_name, index_name) = match (parts.as_slice(), table) {
                        (_, Some(t)) => (last_part(t), parts.last().cloned().unwrap_or_default()),
                        ([.., t, i], None) => (t.clone(), i.clone()),
                        _ => return Err(self.fail(SqlError::new(159, 15, 1, "Must specify the table name and index name for the DROP INDEX statement."), line)),
                    };
                    self.atomic(line, |s| {
                        s.db.catalog()?.drop_index(&s.db, &table_name, &index_name)
                    })?;
                }
                Ok(Flow::Next)
            }
            Statement::CreateTable(_) => unreachable!("the front end wraps CREATE TABLE"),
            Statement::AlterTable(alter) => self.alter_table(alter, line, out),
            Statement::Declare { stmts } => {
                for declare in stmts {
                    if let Some(sqlparser::ast::DataType::Table(Some(columns))) = &declare.data_type
                    {
                        for name in &declare.names {
                            let name = name.value.clone();
                            self.atomic(line, |s| s.declare_table_variable(&name, columns))?;
                        }
                        continue;
                    }
                    let data_type = declare.data_type.as_ref().ok_or_else(|| {
                        self.fail(
                            SqlError::new(102, 15, 1, "Incorrect syntax near 'DECLARE'."),
                            line,
                        )
                    })?;
                    let sql_type = sql_type_of(data_type).map_err(|e| self.fail(e, line))?;
                    for name in &declare.names {
                        // A DECLARE that runs again (in a loop) keeps the variable's value;
                        // only its initial value, if any, is assigned again, as in SQL Server.
                        // Two DECLAREs of a name are 134 before the batch runs
                        // (front::check_declarations).
                        let key = name.value.to_lowercase();
                        self.variables.entry(key).or_insert((sql_type, Value::Null));
                        if let Some(assignment) = &declare.assignment {
                            let expr = match assignment {
                                sqlparser::ast::DeclareAssignment::Expr(e)
                                | sqlparser::ast::DeclareAssignment::Default(e)
                                | sqlparser::ast::DeclareAssignment::DuckAssignment(e)
                                | sqlparser::ast::DeclareAssignment::For(e)
                                | sqlparser::ast::DeclareAssignment::MsSqlAssignment(e) => e,
                            };
                            let v =
                                self.eval(expr, &Env::empty()).map_err(|e| self.fail(e, line))?;
                            self.set_variable(&name.value, v).map_err(|e| self.fail(e, line))?;
                        }
                    }
                }
                Ok(Flow::Next)
            }
            Statement::Set(set) => self.run_set(set, line),
            Statement::WaitFor(waitfor) => self.run_waitfor(waitfor, line),
            Statement::Print(print) => {
                let v = self.eval_stmt(&print.message, line)?;
                out(Output::Message(value::display(&v).replace("NULL", "")));
                Ok(Flow::Next)
            }
            Statement::RaisError { message, severity, state, arguments, options } => {
                let text = value::display(&self.eval_stmt(message, line)?);
                let severity = value::as_i64(
                    &convert(&self.eval_stmt(severity, line)?, SqlType::Int)
                        .map_err(|e| self.fail(e, line))?,
                )
                .unwrap_or(16);
                let state = value::as_i64(
                    &convert(&self.eval_stmt(state, line)?, SqlType::Int)
                        .map_err(|e| self.fail(e, line))?,
                )
                .unwrap_or(1);
                let mut args = Vec::new();
                for a in arguments {
                    args.push(self.eval_stmt(a, line)?);
                }
                let text = format_message(&text, &args);
                let with_log = options.contains(&sqlparser::ast::RaisErrorOption::Log);
                if severity > 18 && !with_log {
                    return Err(self.fail(high_severity_without_log(), line));
                }
                if severity <= 10 {
                    if with_log {
                        let logged = SqlError::new(
                            50000,
                            severity.max(0) as u8,
                            state.clamp(0, 255) as u8,
                            &text,
                        );
                        self.server.instance.errorlog.write_error(&self.process_info(), &logged);
                    }
                    out(Output::Message(text));
                    // WITH SETERROR: @@ERROR is 50000 even for an informational message
                    // (without it, 0: the statement succeeded).
                    if options.contains(&sqlparser::ast::RaisErrorOption::SetError) {
                        self.last_error = 50000;
                        self.error_noted = true;
                    }
                    return Ok(Flow::Next);
                }
                let error = SqlError::new(
                    50000,
                    severity.clamp(11, 25) as u8,
                    state.clamp(0, 255) as u8,
                    text,
                );
                // WITH LOG: to the errorlog too (severity 19 and above go there anyway).
                if with_log && error.severity < 19 {
                    self.server.instance.errorlog.write_error(&self.process_info(), &error);
                }
                // RAISERROR does not end the batch under XACT_ABORT (THROW does).
                let mut failure = self.fail(error, line);
                failure.abort_batch = false;
                failure.raiserror = true;
                Err(failure)
            }
            Statement::StartTransaction { .. } => self
                .tracking_transaction(false, |db| db.begin_tran())
                .map(|()| Flow::Next)
                .map_err(|e| self.fail(e, line)),
            Statement::Use(use_statement) => {
                let name = match use_statement {
                    sqlparser::ast::Use::Object(name) => last_part(name),
                    other => other.to_string().trim_start_matches("USE ").to_string(),
                };
                let db = self.server.open_database(&name).map_err(|e| self.fail(e, line))?;
                self.db = db;
                self.note_database();
                out(Output::Message(format!("Changed database context to '{}'.", self.db.name)));
                Ok(Flow::Next)
            }
            Statement::Drop { object_type: ObjectType::Database, names, if_exists, .. } => {
                for name in names {
                    let name = last_part(name);
                    if *if_exists && self.server.database(&name).is_none() {
                        continue;
                    }
                    if self.db.name.eq_ignore_ascii_case(&name) {
                        return Err(self.fail(SqlError::new(3702, 16, 4, format!("Cannot drop database \"{name}\" because it is currently in use.")), line));
                    }
                    self.server.drop_database(&name).map_err(|e| self.fail(e, line))?;
                }
                Ok(Flow::Next)
            }
            Statement::Return(r) => {
                if let Some(sqlparser::ast::ReturnStatementValue::Expr(e)) = &r.value {
                    let v = convert(&self.eval_stmt(e, line)?, SqlType::Int)
                        .map_err(|e| self.fail(e, line))?;
                    self.return_status = value::as_i64(&v).unwrap_or(0) as i32;
                }
                Ok(Flow::Return)
            }
            other => {
                let text = other.to_string();
                let word = text.split_whitespace().next().unwrap_or_default().to_uppercase();
                Err(self.fail(SqlError::new(40517, 16, 1, format!("Keyword or statement option '{word}' is not supported in this version of extentdb.")), line))
            }
        }
    }

    /// Runs statements of a block; an error that does not abort the batch is reported and the
    /// block goes on, as in SQL Server.
    pub(crate) fn run_parsed_block(
        &mut self,
        statements: &[Parsed],
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        // A block in a block (in a procedure...) recurses: each level has its stack room
        // (nesting invariant 1).
        crate::nesting::with_stack_room(|| self.run_block_here(statements, out))
    }

    fn run_block_here(
        &mut self,
        statements: &[Parsed],
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        for parsed in statements {
            let Parsed { stmt, line } = parsed;
            // Between statements the worker's quantum may end (SOS_SCHEDULER_YIELD).
            engine::scheduler::yield_point();
            if let Err(error) = self.check_cancel() {
                return Err(self.fail(error, *line));
            }
            self.error_noted = false;
            let mut result = self.run(stmt, *line, out);
            if !resets_error(stmt) {
                // What follows a compound statement sees every variable declared in it.
                let declared = self.declare_skipped(std::slice::from_ref(parsed));
                if let (Ok(_), Err(failure)) = (&result, declared) {
                    result = Err(failure);
                }
            }
            match result {
                Ok(Flow::Next) => {
                    // @@ERROR is 0 after a statement that succeeded (a DBCC that reported
                    // errors keeps them). IF and WHILE clear it when they test their
                    // condition; a block, EXEC or TRY...CATCH leaves what its last statement set.
                    if resets_error(stmt) && !self.error_noted {
                        self.last_error = 0;
                    }
                }
                Ok(flow) => return Ok(flow),
                Err(failure) => {
                    self.roll_back_for_xact_abort(&failure);
                    if failure.abort_batch || self.try_depth > 0 {
                        return Err(failure);
                    }
                    self.report(failure, out)
                }
            }
        }
        Ok(Flow::Next)
    }

    pub(crate) fn eval_stmt(&self, expr: &Expr, line: u64) -> std::result::Result<Value, Failure> {
        self.eval(expr, &Env::empty()).map_err(|e| self.fail(e, line))
    }

    fn run_set(
        &mut self,
        set: &sqlparser::ast::Set,
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        if let sqlparser::ast::Set::SetTransaction { modes, .. } = set {
            use sqlparser::ast::{TransactionIsolationLevel as Level, TransactionMode};
            for mode in modes {
                if let TransactionMode::IsolationLevel(level) = mode {
                    self.set_isolation(match level {
                        Level::ReadUncommitted => IsolationLevel::ReadUncommitted,
                        Level::ReadCommitted => IsolationLevel::ReadCommitted,
                        Level::RepeatableRead => IsolationLevel::RepeatableRead,
                        Level::Serializable => IsolationLevel::Serializable,
                        Level::Snapshot => IsolationLevel::Snapshot,
                    });
                }
            }
            return Ok(Flow::Next);
        }
        let text = set.to_string();
        let words: Vec<String> = text.split_whitespace().map(|w| w.to_uppercase()).collect();
        if let sqlparser::ast::Set::SingleAssignment { variable, values, .. } = set {
            let name = variable.to_string();
            if name.starts_with('@') {
                let v = self.eval_stmt(&values[0], line)?;
                self.set_variable(&name, v).map_err(|e| self.fail(e, line))?;
                return Ok(Flow::Next);
            }
        }
        let on = words.last().is_some_and(|w| w == "ON");
        if words.get(1).map(String::as_str) == Some("IDENTITY_INSERT") {
            let name = text.split_whitespace().nth(2).unwrap_or_default().to_string();
            return self
                .set_identity_insert(&name, on)
                .map(|()| Flow::Next)
                .map_err(|e| self.fail(e, line));
        }
        match words.get(1).map(String::as_str) {
            Some("LOCK_TIMEOUT") => {
                let written: Vec<&str> = text.split_whitespace().skip(2).collect();
                return self.set_lock_timeout(&written, line);
            }
            Some("DEADLOCK_PRIORITY") => {
                let written: Vec<&str> = text.split_whitespace().skip(2).collect();
                return self.set_deadlock_priority(&written, line);
            }
            Some("NOCOUNT") => self.nocount = on,
            Some("XACT_ABORT") => self.xact_abort = on,
            Some("IMPLICIT_TRANSACTIONS") => self.implicit_transactions = on,
            _ => {} // other SET options are accepted and ignored (deviation)
        }
        Ok(Flow::Next)
    }

    /// SET LOCK_TIMEOUT milliseconds (a number, or a variable). Deviation: a negative value
    /// other than -1 is taken as -1 (wait as long as it takes).
    fn set_lock_timeout(
        &mut self,
        words: &[&str],
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let written = words.concat();
        let value = if written.starts_with('@') {
            self.variable(&written).map_err(|e| self.fail(e, line))?
        } else {
            written.parse::<i64>().map_or(Value::Null, Value::BigInt)
        };
        let ms = match convert(&value, SqlType::Int).ok().as_ref().and_then(value::as_i64) {
            Some(ms) => ms,
            None => {
                let near = words.first().copied().unwrap_or_default();
                let error = SqlError::new(102, 15, 1, format!("Incorrect syntax near '{near}'."));
                return Err(self.fail(error, line));
            }
        };
        self.lock_timeout_ms = if ms < 0 { -1 } else { ms as i32 };
        self.lock_options_changed();
        Ok(Flow::Next)
    }

    /// SET TRANSACTION ISOLATION LEVEL: how SELECT's reads lock ([`Session::read_locks`]), and
    /// sys.dm_exec_sessions.transaction_isolation_level.
    fn set_isolation(&mut self, level: IsolationLevel) {
        self.isolation = level;
        if let Some(info) = self.server.sessions.lock().get_mut(&self.spid) {
            info.transaction_isolation_level = level as i16;
        }
    }

    /// How a SELECT's read of a table locks: by its table hint (NOLOCK and READUNCOMMITTED
    /// none; HOLDLOCK, SERIALIZABLE and REPEATABLEREAD to the transaction's end; READCOMMITTED
    /// per row), else by the session's isolation level. SNAPSHOT is 3952: no database here
    /// allows snapshot isolation (there is no row versioning). Deviation: SERIALIZABLE holds
    /// the rows' shared locks as REPEATABLE READ does, without key-range locks, so it does not
    /// keep new rows out of a range read.
    pub(crate) fn read_locks(&self, hints: &[Expr]) -> Result<engine::xact::ReadLocks> {
        use engine::xact::ReadLocks;
        for hint in hints {
            let word = hint.to_string().to_ascii_uppercase();
            match word.as_str() {
                "NOLOCK" | "READUNCOMMITTED" => return Ok(ReadLocks::None),
                "HOLDLOCK" | "SERIALIZABLE" | "REPEATABLEREAD" => return Ok(ReadLocks::Held),
                "READCOMMITTED" | "READCOMMITTEDLOCK" => return Ok(ReadLocks::Released),
                _ => {}
            }
        }
        Ok(match self.isolation {
            IsolationLevel::ReadUncommitted => ReadLocks::None,
            IsolationLevel::ReadCommitted => ReadLocks::Released,
            IsolationLevel::RepeatableRead | IsolationLevel::Serializable => ReadLocks::Held,
            IsolationLevel::Snapshot => {
                let text = format!(
                    "Snapshot isolation transaction failed accessing database '{}' because \
                     snapshot isolation is not allowed in this database. Use ALTER DATABASE to \
                     allow snapshot isolation.",
                    self.db.name
                );
                return Err(SqlError::new(3952, 16, 1, text));
            }
        })
    }

    /// SET DEADLOCK_PRIORITY { LOW | NORMAL | HIGH | n | @v }, n from -10 to 10 (else 2755).
    /// A deadlock's victim is the session of the lowest priority in it (engine::lock).
    fn set_deadlock_priority(
        &mut self,
        words: &[&str],
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let written = words.concat();
        let number = match written.to_ascii_uppercase().as_str() {
            "LOW" => Some(-5),
            "NORMAL" => Some(0),
            "HIGH" => Some(5),
            _ if written.starts_with('@') => {
                let value = self.variable(&written).map_err(|e| self.fail(e, line))?;
                convert(&value, SqlType::Int).ok().as_ref().and_then(value::as_i64)
            }
            _ => written.parse::<i64>().ok(),
        };
        let Some(priority) = number.filter(|n| (-10..=10).contains(n)) else {
            let text = "SET DEADLOCK_PRIORITY option is invalid. Valid options are {HIGH | \
                        NORMAL | LOW | [-10 ... 10] of type integer}.";
            return Err(self.fail(SqlError::new(2755, 16, 1, text), line));
        };
        self.deadlock_priority = priority as i8;
        self.lock_options_changed();
        Ok(Flow::Next)
    }

    /// SET IDENTITY_INSERT table { ON | OFF }: one table per session at a time (8107); the
    /// table needs an identity column (8106).
    fn set_identity_insert(&mut self, written: &str, on: bool) -> Result<()> {
        let name = written.rsplit('.').next().unwrap_or_default().trim_matches(['[', ']']);
        let table = self.table(name)?;
        if !table.columns.iter().any(|c| c.identity.is_some()) {
            return Err(SqlError::new(
                8106,
                16,
                1,
                format!(
                    "Table '{written}' does not have the identity property. Cannot perform SET operation."
                ),
            ));
        }
        let this = (self.db.database_id, table.object_id);
        if let Some((db, object, other)) = &self.identity_insert
            && on
            && (*db, *object) != this
        {
            let db_name = self
                .server
                .databases()
                .iter()
                .find(|d| d.database_id == *db)
                .map(|d| d.name.clone())
                .unwrap_or_default();
            return Err(SqlError::new(
                8107,
                16,
                1,
                format!(
                    "IDENTITY_INSERT is already ON for table '{db_name}.dbo.{other}'. Cannot perform SET operation for table '{written}'."
                ),
            ));
        }
        if on {
            self.identity_insert = Some((this.0, this.1, table.name.clone()));
        } else if self
            .identity_insert
            .as_ref()
            .is_some_and(|(db, object, _)| (*db, *object) == this)
        {
            self.identity_insert = None;
        }
        Ok(())
    }

    /// Whether SET IDENTITY_INSERT is ON for this table.
    fn identity_insert_on(&self, table: &engine::catalog::Table) -> bool {
        self.identity_insert
            .as_ref()
            .is_some_and(|(db, object, _)| *db == self.db.database_id && *object == table.object_id)
    }

    pub(crate) fn set_variable(&mut self, name: &str, v: Value) -> Result<()> {
        let key = name.to_lowercase();
        let Some((sql_type, _)) = self.variables.get(&key) else {
            return Err(undeclared(name));
        };
        let converted = convert(&v, *sql_type)?;
        self.variables.insert(key, (*sql_type, converted));
        Ok(())
    }

    /// A variable's value (137 if it was not declared).
    pub fn variable(&self, name: &str) -> Result<Value> {
        self.variables
            .get(&name.to_lowercase())
            .map(|(_, v)| v.clone())
            .ok_or_else(|| undeclared(name))
    }

    /// SERVERPROPERTY(name): the instance's facts under SQL Server's property names; NULL for
    /// a name it does not know, as SQL Server answers. The collation's figures are SQL Server's
    /// for SQL_Latin1_General_CP1_CI_AS (its id, comparison style, character set iso_1 and
    /// sort order 52, nocase_iso). Deviations: EngineEdition is 3, the on-premises engine with
    /// every feature (trace flag 834's large pages are an Enterprise feature), so that scripts
    /// take their SQL Server path, while Edition names extentdb; the default data and log
    /// paths are the data directory; features extentdb has not (clustering, availability
    /// groups, full-text, PolyBase, In-Memory OLTP, FILESTREAM) are 0 and their names NULL.
    fn server_property(&self, name: &str) -> Value {
        let instance = &self.server.instance;
        let dir = format!("{}/", instance.dir().display());
        let text = |s: &str| Value::Text(s.to_string());
        match name.to_lowercase().as_str() {
            "productversion" => text("16.0.1000.6"),
            "productmajorversion" => text("16"),
            "productminorversion" => text("0"),
            "productbuild" => text("1000"),
            "productlevel" => text("RTM"),
            "edition" => text("extentdb (open source)"),
            "engineedition" => Value::Int(3),
            "servername" | "machinename" | "computernamephysicalnetbios" => text(&server_name()),
            "collation" => text(engine::record::COLLATION_NAME),
            "collationid" => Value::Int(872_468_488),
            "comparisonstyle" => Value::Int(196_609),
            "lcid" => Value::Int(1033),
            "sqlcharset" => Value::TinyInt(1),
            "sqlcharsetname" => text("iso_1"),
            "sqlsortorder" => Value::TinyInt(52),
            "sqlsortordername" => text("nocase_iso"),
            "processid" => Value::Int(std::process::id() as i32),
            "instancedefaultdatapath" | "instancedefaultlogpath" => text(&dir),
            "errorlogfilename" => text(&instance.errorlog.path(0).display().to_string()),
            "licensetype" => text("DISABLED"),
            "isclustered"
            | "ishadrenabled"
            | "isintegratedsecurityonly"
            | "issingleuser"
            | "isfulltextinstalled"
            | "ispolybaseinstalled"
            | "isxtpsupported"
            | "islocaldb"
            | "isadvancedanalyticsinstalled"
            | "filestreamconfiguredlevel"
            | "filestreameffectivelevel"
            | "istempdbmetadatamemoryoptimized" => Value::Int(0),
            _ => Value::Null,
        }
    }

    /// The login the session authenticated as (sa for an embedded session).
    fn login_name(&self) -> String {
        let sessions = self.server.sessions.lock();
        sessions.get(&self.spid).map_or("sa".to_string(), |info| info.login_name.clone())
    }

    /// @@ variables.
    pub fn system_variable(&self, name: &str) -> Result<Value> {
        Ok(match name.to_uppercase().as_str() {
            "@@TRANCOUNT" => Value::Int(self.user_trancount()),
            "@@ROWCOUNT" => Value::Int(self.rowcount as i32),
            "@@ERROR" => Value::Int(self.last_error),
            "@@SPID" => Value::SmallInt(self.spid as i16),
            "@@LOCK_TIMEOUT" => Value::Int(self.lock_timeout_ms),
            "@@LANGUAGE" => Value::Text(LANGUAGE.into()),
            "@@DATEFIRST" => Value::TinyInt(DATE_FIRST),
            "@@VERSION" => {
                Value::Text(self.server.instance.banner().first().cloned().unwrap_or_default())
            }
            "@@SERVERNAME" => Value::Text(server_name()),
            "@@IDENTITY" => self.last_identity.get().map_or(Value::Null, Value::BigInt),
            "@@NESTLEVEL" => Value::Int(self.nest_level as i32),
            "@@FETCH_STATUS" => Value::Int(self.cursors.fetch_status),
            "@@CURSOR_ROWS" => Value::Int(self.cursors.cursor_rows as i32),
            other => return Err(undeclared(other)),
        })
    }

    /// Built-ins that read the session or the server. None if `name` is not one.
    pub fn system_function(&self, name: &str, args: &[Value]) -> Option<Result<Value>> {
        let text = |i: usize| args.get(i).map(value::display).unwrap_or_default();
        let result = match name {
            // int, as SQL Server's DB_ID returns.
            "DB_ID" => Ok(match args.first() {
                None => Value::Int(i32::from(self.db.database_id)),
                Some(_) => self
                    .server
                    .database_id_of(&text(0))
                    .map_or(Value::Null, |id| Value::Int(i32::from(id))),
            }),
            "DB_NAME" => Ok(match args.first().and_then(value::as_i64) {
                None => Value::Text(self.db.name.clone()),
                Some(id) => self.server.database_name_of(id).map_or(Value::Null, Value::Text),
            }),
            "OBJECT_ID" => Ok(self.object_id(&text(0)).map_or(Value::Null, Value::Int)),
            "OBJECT_NAME" => Ok(args
                .first()
                .and_then(value::as_i64)
                .and_then(|id| self.object_name(id as i32))
                .map_or(Value::Null, Value::Text)),
            "FILE_ID" => Ok(self
                .db
                .file_space()
                .iter()
                .find(|f| f.logical_name.eq_ignore_ascii_case(&text(0)))
                .map_or(Value::Null, |f| Value::SmallInt(f.file_id as i16))),
            "FILE_NAME" => Ok(args
                .first()
                .and_then(value::as_i64)
                .and_then(|id| {
                    self.db.file_space().into_iter().find(|f| i64::from(f.file_id) == id)
                })
                .map_or(Value::Null, |f| Value::Text(f.logical_name))),
            // COL_LENGTH(table, column): the column's max_length in bytes, as sys.columns.
            "COL_LENGTH" => Ok(self.column_of(&text(0), &text(1)).map_or(Value::Null, |c| {
                Value::SmallInt(crate::catalogviews::type_info(c.column.sql_type).2)
            })),
            "COL_NAME" => Ok(self.column_name_by_id(args).map_or(Value::Null, Value::Text)),
            "TYPE_NAME" => Ok(args
                .first()
                .and_then(value::as_i64)
                .and_then(crate::catalogviews::type_name_of_id)
                .map_or(Value::Null, |name| Value::Text(name.into()))),
            "TYPE_ID" => Ok(crate::catalogviews::type_id_of_name(text(0).trim_matches(['[', ']']))
                .map_or(Value::Null, Value::Int)),
            "FILEPROPERTY" => Ok(self.file_property(&text(0), &text(1))),
            "DATABASEPROPERTYEX" => Ok(self.database_property(&text(0), &text(1))),
            "SERVERPROPERTY" => Ok(self.server_property(&text(0))),
            "GETDATE" | "CURRENT_TIMESTAMP" | "SYSDATETIME" if args.is_empty() => {
                Ok(functions::current_time(name, self.server.instance.clock.now_local()))
            }
            "GETUTCDATE" if args.is_empty() => {
                Ok(functions::current_time("GETDATE", self.server.instance.clock.now_utc()))
            }
            "SYSUTCDATETIME" if args.is_empty() => {
                Ok(functions::current_time("SYSDATETIME", self.server.instance.clock.now_utc()))
            }
            // One schema (dbo, id 1) and one login (sa, mapped to dbo) exist.
            "SCHEMA_NAME" => Ok(match args.first() {
                None => Value::Text("dbo".into()),
                Some(id) if value::as_i64(id) == Some(1) => Value::Text("dbo".into()),
                Some(_) => Value::Null,
            }),
            "SCHEMA_ID" => Ok(match args.first() {
                None => Value::Int(1),
                Some(name) if value::display(name).eq_ignore_ascii_case("dbo") => Value::Int(1),
                Some(_) => Value::Null,
            }),
            "SUSER_SNAME" | "SUSER_NAME" | "ORIGINAL_LOGIN" if args.is_empty() => {
                Ok(Value::Text(self.login_name()))
            }
            // sa, the one login, has sid 0x01 and principal id 1 as in SQL Server; any other
            // sid, id or name has none.
            "SUSER_SNAME" if args.len() == 1 => Ok(match &args[0] {
                Value::Bytes(sid) if sid[..] == crate::sysdatabases::SA_SID => {
                    Value::Text("sa".into())
                }
                _ => Value::Null,
            }),
            "SUSER_NAME" if args.len() == 1 => Ok(match value::as_i64(&args[0]) {
                Some(1) => Value::Text("sa".into()),
                _ => Value::Null,
            }),
            "SUSER_SID" if args.len() <= 1 => {
                let login = match args.first() {
                    Some(name) => value::display(name),
                    None => self.login_name(),
                };
                Ok(if login.eq_ignore_ascii_case("sa") {
                    Value::Bytes(crate::sysdatabases::SA_SID.to_vec())
                } else {
                    Value::Null
                })
            }
            "USER_NAME" | "CURRENT_USER" | "SESSION_USER" | "USER" if args.is_empty() => {
                Ok(Value::Text("dbo".into()))
            }
            "HOST_NAME" | "APP_NAME" if args.is_empty() => {
                let sessions = self.server.sessions.lock();
                let info = sessions.get(&self.spid);
                Ok(match (name, info) {
                    ("HOST_NAME", Some(info)) => {
                        info.host_name.clone().map_or(Value::Null, Value::Text)
                    }
                    ("APP_NAME", Some(info)) => Value::Text(info.program_name.clone()),
                    _ => Value::Null,
                })
            }
            "NEWID" if args.is_empty() => Ok(Value::Guid(self.rng.borrow_mut().guid())),
            "CURSOR_STATUS" if args.len() == 2 => {
                Ok(Value::SmallInt(self.cursors.status(&text(0), &text(1))))
            }
            "SCOPE_IDENTITY" => Ok(self.last_identity.get().map_or(Value::Null, Value::BigInt)),
            "ERROR_NUMBER" | "ERROR_MESSAGE" | "ERROR_SEVERITY" | "ERROR_STATE" | "ERROR_LINE"
            | "ERROR_PROCEDURE" => Ok(self.error_function(name)),
            "XACT_STATE" => {
                let state = match (self.user_transaction_open(), engine::xact::is_doomed()) {
                    (false, _) => 0,
                    (true, true) => -1,
                    (true, false) => 1,
                };
                Ok(Value::SmallInt(state))
            }
            _ => return None,
        };
        Some(result)
    }

    /// The object id of a table or procedure of the current database.
    fn object_id(&self, name: &str) -> Option<i32> {
        let name = name.rsplit('.').next().unwrap_or_default().trim_matches(['[', ']']);
        let catalog = self.db.catalog().ok()?;
        // `tempdb..#t` names the session's temporary table.
        let stored = self.catalog_name(name).ok()?;
        let table = catalog.table(&stored).map(|t| t.object_id);
        table.or_else(|| catalog.module(name).map(|m| m.object_id))
    }

    /// A column of a table the session can name (COL_LENGTH).
    fn column_of(&self, table: &str, column: &str) -> Option<ColumnDef> {
        let name = table.rsplit('.').next().unwrap_or_default().trim_matches(['[', ']']);
        let stored = self.catalog_name(name).ok()?;
        let table = self.db.catalog().ok()?.table(&stored)?;
        let position = table.column_index(column.trim_matches(['[', ']']))?;
        Some(table.columns[position].clone())
    }

    /// COL_NAME(object_id, column_id): column ids count from 1, as sys.columns' do.
    fn column_name_by_id(&self, args: &[Value]) -> Option<String> {
        let object_id = args.first().and_then(value::as_i64)?;
        let column_id = args.get(1).and_then(value::as_i64)?;
        let table = self.db.catalog().ok()?.table_by_id(i32::try_from(object_id).ok()?)?;
        let position = usize::try_from(column_id.checked_sub(1)?).ok()?;
        table.columns.get(position).map(|c| c.column.name.clone())
    }

    fn object_name(&self, object_id: i32) -> Option<String> {
        let catalog = self.db.catalog().ok()?;
        if let Some(table) = catalog.table_by_id(object_id) {
            return Some(table.name.clone());
        }
        catalog.modules().iter().find(|m| m.object_id == object_id).map(|m| m.name.clone())
    }

    /// ERROR_NUMBER() and the rest: the error the innermost CATCH block handles, else NULL.
    fn error_function(&self, name: &str) -> Value {
        let Some(caught) = self.catch_stack.last() else { return Value::Null };
        match name {
            "ERROR_NUMBER" => Value::Int(caught.error.number),
            "ERROR_MESSAGE" => Value::Text(caught.error.message.clone()),
            "ERROR_SEVERITY" => Value::Int(i32::from(caught.error.severity)),
            "ERROR_STATE" => Value::Int(i32::from(caught.error.state)),
            "ERROR_LINE" => Value::Int(caught.line as i32),
            _ => caught.procedure.clone().map_or(Value::Null, Value::Text),
        }
    }

    fn file_property(&self, file: &str, property: &str) -> Value {
        let Some(space) =
            self.db.file_space().into_iter().find(|f| f.logical_name.eq_ignore_ascii_case(file))
        else {
            return Value::Null;
        };
        match property.to_lowercase().as_str() {
            // Deviation: counted in whole extents (8 pages each) in use.
            "spaceused" => Value::Int(((space.total_extents - space.free_extents) * 8) as i32),
            "isprimaryfile" => Value::Int(i32::from(space.file_id == 1)),
            "islogfile" => Value::Int(0),
            _ => Value::Null,
        }
    }

    fn database_property(&self, name: &str, property: &str) -> Value {
        let Some(db) = self.server.database(name) else {
            return match property.to_lowercase().as_str() {
                "status" => match self.server.closed_state(name) {
                    Some(state) => Value::Text(state.desc().into()),
                    None => Value::Null,
                },
                _ => Value::Null,
            };
        };
        match property.to_lowercase().as_str() {
            "recovery" => Value::Text(db.recovery_model_desc().to_string()),
            "status" => Value::Text("ONLINE".into()),
            // The internal database version of SQL Server 2022, whose formats extentdb follows
            // (deviation: a constant; extentdb has one file format and no dbi_version yet).
            "version" => Value::Int(DATABASE_VERSION),
            "updateability" => Value::Text("READ_WRITE".into()),
            "collation" => Value::Text(engine::record::COLLATION_NAME.into()),
            // 1900-01-01 00:00:00.000 until a CHECKDB has found no error.
            "lastgoodcheckdbtime" => match db.last_known_good() {
                Some(at) => crate::functions::current_time("GETDATE", at),
                None => Value::DateTime(0, 0),
            },
            // Every page is written with a checksum (PAGE_VERIFY CHECKSUM), none with torn-page
            // bits; there is no In-Memory OLTP.
            "istornpagedetectionenabled" | "isxtpsupported" => Value::Int(0),
            "comparisonstyle" => Value::Int(196_609),
            "lcid" => Value::Int(1033),
            "sqlsortorder" => Value::TinyInt(52),
            _ => self.database_option(&db, property).unwrap_or(Value::Null),
        }
    }

    fn table_spec(
        &self,
        statement: &Statement,
        clustering: &[Option<bool>],
        rowguidcol: &[String],
        filegroup: Option<String>,
    ) -> Result<TableSpec> {
        let Statement::CreateTable(create) = statement else { unreachable!("CREATE TABLE") };
        let name = last_part(&create.name);
        let mut columns = Vec::new();
        let mut indexes = Vec::new();
        let mut flags = clustering.iter().copied();
        let mut pending: Vec<PendingConstraint> = Vec::new();
        for def in &create.columns {
            crate::query::check_column_size(def)?;
            let sql_type = sql_type_of(&def.data_type)?;
            if columns
                .iter()
                .any(|c: &ColumnDef| c.column.name.eq_ignore_ascii_case(&def.name.value))
            {
                return Err(SqlError::new(
                    2705,
                    16,
                    3,
                    format!(
                        "Column names in each table must be unique. Column name '{}' in table '{name}' is specified more than once.",
                        def.name.value
                    ),
                ));
            }
            let mut column = ColumnDef::new(&def.name.value, sql_type, true);
            column.rowguidcol = rowguidcol.iter().any(|r| r.eq_ignore_ascii_case(&def.name.value));
            for option in &def.options {
                match &option.option {
                    ColumnOption::NotNull => column.column.nullable = false,
                    ColumnOption::Null => column.column.nullable = true,
                    ColumnOption::Default(e) => column.default_sql = Some(e.to_string()),
                    ColumnOption::Identity(identity) => {
                        column.identity =
                            Some(crate::query::identity_seed_step(&identity.to_string()));
                        column.column.nullable = false;
                    }
                    ColumnOption::PrimaryKey(pk) => {
                        // `CONSTRAINT name PRIMARY KEY` on a column: the name is the option's.
                        let named = option.name.as_ref().or(pk.name.as_ref());
                        let constraint = named.map(|n| n.value.clone());
                        pending.push((
                            true,
                            true,
                            vec![def.name.value.clone()],
                            constraint,
                            flags.next().flatten(),
                        ));
                    }
                    ColumnOption::Unique(unique) => {
                        let named = option.name.as_ref().or(unique.name.as_ref());
                        let constraint = named.map(|n| n.value.clone());
                        pending.push((
                            false,
                            true,
                            vec![def.name.value.clone()],
                            constraint,
                            flags.next().flatten(),
                        ));
                    }
                    _ => {}
                }
            }
            columns.push(column);
        }
        for constraint in &create.constraints {
            match constraint {
                TableConstraint::PrimaryKey(pk) => {
                    let cols = pk.columns.iter().map(|c| c.column.expr.to_string()).collect();
                    pending.push((
                        true,
                        true,
                        cols,
                        pk.name.as_ref().map(|n| n.value.clone()),
                        flags.next().flatten(),
                    ));
                }
                TableConstraint::Unique(unique) => {
                    let cols = unique.columns.iter().map(|c| c.column.expr.to_string()).collect();
                    pending.push((
                        false,
                        true,
                        cols,
                        unique.name.as_ref().map(|n| n.value.clone()),
                        flags.next().flatten(),
                    ));
                }
                _ => {}
            }
        }
        let plain: Vec<engine::record::Column> = columns.iter().map(|c| c.column.clone()).collect();
        let min_row_bytes = engine::record::min_record_bytes(&plain);
        if min_row_bytes > engine::record::MAX_RECORD_BYTES {
            let fixed_bytes: usize = plain.iter().filter_map(|c| c.sql_type.fixed_size()).sum();
            let overhead = min_row_bytes.saturating_sub(fixed_bytes);
            return Err(SqlError::new(
                1701,
                16,
                1,
                format!(
                    "Creating or altering table '{name}' failed because the minimum row size would be {min_row_bytes}, including {overhead} bytes of internal overhead. This exceeds the maximum allowable table row size of 8060 bytes."
                ),
            ));
        }
        if pending.iter().filter(|p| p.0).count() > 1 {
            return Err(SqlError::new(
                8110,
                16,
                0,
                format!("Cannot add multiple PRIMARY KEY constraints to table '{name}'."),
            ));
        }
        for (primary_key, unique, cols, constraint, clustered) in pending {
            let mut key_columns = Vec::new();
            for c in &cols {
                let c = c.trim_matches(['[', ']']);
                let position = columns
                    .iter()
                    .position(|d: &ColumnDef| d.column.name.eq_ignore_ascii_case(c))
                    .ok_or_else(|| {
                        SqlError::new(
                            1911,
                            16,
                            1,
                            format!(
                                "Column name '{c}' does not exist in the target table or view."
                            ),
                        )
                    })?;
                key_columns.push(position);
            }
            let clustered = clustered.unwrap_or(primary_key)
                && !indexes.iter().any(|i: &IndexSpec| i.clustered);
            let generated = if primary_key {
                format!("PK__{name}")
            } else {
                format!("UQ__{name}__{}", indexes.len())
            };
            indexes.push(IndexSpec {
                name: constraint.unwrap_or(generated),
                clustered,
                unique,
                primary_key,
                key_columns,
                filegroup: None,
            });
        }
        Ok(TableSpec { name, columns, indexes, filegroup })
    }

    fn index_spec(
        &self,
        table: &str,
        name: &str,
        unique: bool,
        clustered: bool,
        columns: &[String],
        filegroup: Option<String>,
    ) -> Result<IndexSpec> {
        let t = self.table(table)?;
        let mut key_columns = Vec::new();
        for c in columns {
            key_columns.push(t.column_index(c).ok_or_else(|| {
                SqlError::new(
                    1911,
                    16,
                    1,
                    format!("Column name '{c}' does not exist in the target table or view."),
                )
            })?);
        }
        Ok(IndexSpec {
            name: name.to_string(),
            clustered,
            unique,
            primary_key: false,
            key_columns,
            filegroup,
        })
    }

    /// The DEFAULT expressions of a table's columns, parsed once per statement (each row
    /// evaluates them again, so that NEWID() differs row to row).
    fn default_exprs(table: &engine::catalog::Table) -> Result<Vec<Option<Expr>>> {
        let mut exprs = Vec::with_capacity(table.columns.len());
        for column in &table.columns {
            let Some(sql) = &column.default_sql else {
                exprs.push(None);
                continue;
            };
            let parsed = front::parse_batch(&format!("SELECT {sql}")).map_err(|(e, _)| e)?;
            let expr = match parsed.first().map(|p| &p.stmt) {
                Some(Stmt::Sql(statement)) => match statement.as_ref() {
                    Statement::Query(query) => match query.body.as_ref() {
                        SetExpr::Select(select) => match select.projection.first() {
                            Some(sqlparser::ast::SelectItem::UnnamedExpr(e)) => Some(e.clone()),
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            exprs.push(expr);
        }
        Ok(exprs)
    }

    /// A row ready for the table: identity, defaults, conversion to the column types, NOT NULL.
    /// `defaults` are [`Session::default_exprs`] (empty when every value is given).
    pub(crate) fn complete_row(
        &self,
        table: &engine::catalog::Table,
        given: Vec<Option<Value>>,
        defaults: &[Option<Expr>],
        verb: &str,
    ) -> Result<Vec<Value>> {
        let mut row = Vec::with_capacity(table.columns.len());
        for (position, (column, value)) in table.columns.iter().zip(given).enumerate() {
            let v = match (value, defaults.get(position)) {
                (Some(v), _) => v,
                (None, _) if column.identity.is_some() => {
                    let value = table.next_identity(&self.db)?.expect("an identity column");
                    self.last_identity.set(Some(value));
                    Value::BigInt(value)
                }
                (None, Some(Some(expr))) => self.eval(expr, &Env::empty())?,
                (None, _) => Value::Null,
            };
            let sql_type = column.column.sql_type;
            let converted = convert(&v, sql_type)?;
            check_length(&converted, &v, column, table, &self.db.name)?;
            if matches!(converted, Value::Null) && !column.column.nullable {
                return Err(null_not_allowed(
                    &column.column.name,
                    &self.db.name,
                    &table.name,
                    verb,
                ));
            }
            row.push(functions::to_storage(converted, sql_type));
        }
        Ok(row)
    }

    /// SET STATISTICS IO's messages for one statement: per table (its units summed), SQL
    /// Server 2019's line. Units that belong to no table of an open database are left out.
    fn report_io(
        &self,
        counts: std::collections::BTreeMap<(u16, u64), engine::iostats::IoCounts>,
        out: &mut dyn FnMut(Output),
    ) {
        let mut by_table: std::collections::BTreeMap<String, engine::iostats::IoCounts> =
            std::collections::BTreeMap::new();
        for ((database_id, au_id), unit) in counts {
            let Some(db) = self.server.database_by_id(i64::from(database_id)) else { continue };
            let Ok(catalog) = db.catalog() else { continue };
            let Some(table) = catalog.tables().into_iter().find(|t| t.au_ids().contains(&au_id))
            else {
                continue;
            };
            let total = by_table.entry(table.name.clone()).or_default();
            total.scan_count += unit.scan_count;
            total.logical_reads += unit.logical_reads;
            total.physical_reads += unit.physical_reads;
            total.read_ahead_reads += unit.read_ahead_reads;
        }
        for (name, c) in by_table {
            out(Output::Message(format!(
                "Table '{name}'. Scan count {}, logical reads {}, physical reads {}, page server reads 0, read-ahead reads {}, page server read-ahead reads 0, lob logical reads 0, lob physical reads 0, page server lob reads 0, lob read-ahead reads 0, page server lob read-ahead reads 0.",
                c.scan_count, c.logical_reads, c.physical_reads, c.read_ahead_reads
            )));
        }
    }

    /// DECLARE CURSOR, OPEN, FETCH, CLOSE and DEALLOCATE ([`crate::cursor`]).
    fn run_cursor(
        &mut self,
        stmt: &crate::cursor::CursorStmt,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        use crate::cursor::{Cursor, CursorStmt, Direction};
        let result = match stmt {
            CursorStmt::Declare { name, local, scroll, query } => {
                let cursor = Cursor {
                    query: query.clone(),
                    local: *local,
                    scroll: *scroll,
                    nest_level: self.nest_level,
                    rows: None,
                    columns: Vec::new(),
                    position: 0,
                };
                self.cursors.declare(name, cursor)
            }
            CursorStmt::Open(name) => self.open_cursor(name),
            CursorStmt::Fetch { name, direction, into } => {
                let offset = match direction {
                    Direction::Absolute(e) | Direction::Relative(e) => {
                        let n = self.eval_stmt(e, line)?;
                        value::as_i64(
                            &convert(&n, SqlType::BigInt).map_err(|e| self.fail(e, line))?,
                        )
                        .unwrap_or(0)
                    }
                    _ => 0,
                };
                self.fetch_cursor(name, direction, offset, into, out)
            }
            CursorStmt::Close(name) => self.cursors.close(name),
            CursorStmt::Deallocate(name) => self.cursors.deallocate(name),
        };
        result.map(|()| Flow::Next).map_err(|e| self.fail(e, line))
    }

    fn open_cursor(&mut self, name: &str) -> Result<()> {
        let query = self.cursors.query_to_open(name)?;
        let result = self.run_query(&query, None)?;
        self.cursors.open(name, result.columns, result.rows)
    }

    fn fetch_cursor(
        &mut self,
        name: &str,
        direction: &crate::cursor::Direction,
        offset: i64,
        into: &[String],
        out: &mut dyn FnMut(Output),
    ) -> Result<()> {
        let row = self.cursors.fetch(name, direction, offset)?;
        if into.is_empty() {
            // FETCH without INTO sends the row (none past the ends) as a result set.
            let columns = self.cursors.get_mut(name)?.columns.clone();
            let width = columns.len();
            let rows: Vec<Vec<Value>> = row.into_iter().collect();
            out(Output::Rows(ResultSet { columns, rows, types: vec![None; width] }));
            return Ok(());
        }
        let Some(row) = row else { return Ok(()) };
        if row.len() != into.len() {
            return Err(SqlError::new(
                16924,
                16,
                1,
                "Cursorfetch: The number of variables declared in the INTO list must match that of selected columns.",
            ));
        }
        for (variable, value) in into.iter().zip(row) {
            self.set_variable(variable, value)?;
        }
        Ok(())
    }

    pub(crate) fn temp_objects_mut(&mut self) -> &mut crate::temp::TempObjects {
        &mut self.temp
    }

    /// The catalog's name for a table the session names: its own temporary table's or table
    /// variable's stored name, else the name itself. 40517 for a temporary table of another
    /// database (see [`crate::temp`]).
    pub(crate) fn catalog_name(&self, name: &str) -> Result<String> {
        if !crate::temp::is_temporary(name) {
            return Ok(name.to_string());
        }
        let Some(object) = self.temp.resolve(name) else { return Ok(name.to_string()) };
        if object.database.database_id != self.db.database_id {
            return Err(SqlError::new(
                40517,
                16,
                1,
                format!(
                    "Keyword or statement option '{name}' (made in database '{}') is not supported in this version of extentdb from database '{}'.",
                    object.database.name, self.db.name
                ),
            ));
        }
        Ok(object.stored.clone())
    }

    /// Creates a table; a `#name` one, or a table variable's (`@name`), under its stored name
    /// as the session's object of the current scope (2714 if the scope has one of that name).
    fn create_table(&mut self, mut spec: TableSpec) -> Result<Arc<engine::catalog::Table>> {
        let name = spec.name.clone();
        if !crate::temp::is_temporary(&name) {
            return self.db.catalog()?.create_table(&self.db, &spec);
        }
        if let Some(object) = self.temp.resolve(&name)
            && object.nest_level == self.nest_level
        {
            let still_there = object.database.catalog()?.table(&object.stored).is_some();
            if still_there {
                return Err(SqlError::new(
                    2714,
                    16,
                    6,
                    format!("There is already an object named '{name}' in the database."),
                ));
            }
            self.temp.remove(&name); // its creation was rolled back
        }
        spec.name = crate::temp::stored_name(&name);
        let variable = name.starts_with('@');
        let db = self.db.clone();
        let table = if variable {
            // A table variable is made outside the session's transaction, so that its
            // ROLLBACK does not unmake it; its units are outside transactions from then on.
            outside_user_transaction(&db, || db.catalog()?.create_table(&db, &spec))?
        } else {
            db.catalog()?.create_table(&db, &spec)?
        };
        if variable {
            db.keep_through_rollback(&table.au_ids());
        }
        let object = crate::temp::TempObject {
            stored: spec.name.clone(),
            database: self.db.clone(),
            nest_level: self.nest_level,
            variable,
        };
        self.temp.add(&name, object);
        Ok(table)
    }

    /// Drops the table variables that waited for the session's transaction, if it has ended
    /// ([`drop_temporary`]).
    fn drop_waiting_variables(&mut self) {
        if self.temp.any_waiting() {
            let waiting = drop_temporary(self.temp.take_waiting());
            self.temp.wait_for_transaction_end(waiting);
        }
    }

    /// Declares each variable DECLAREd in `statements` that is not declared yet: one whose
    /// DECLARE did not run (a branch not taken, a loop body not entered, the rest of a block
    /// after BREAK or an error). SQL Server declares variables when it compiles the batch, so a
    /// statement after such a DECLARE in the text sees a scalar variable, NULL, and a table
    /// variable, empty (it was 137 or 1087 here). A table variable is made here, when the
    /// compound statement that skipped its DECLARE ends, where SQL Server makes it as the batch
    /// starts: nothing can see the difference but the moment its table appears in tempdb.
    fn declare_skipped(&mut self, statements: &[Parsed]) -> std::result::Result<(), Failure> {
        front::visit_statements(statements, &mut |parsed| {
            let Stmt::Sql(statement) = &parsed.stmt else { return Ok(()) };
            let Statement::Declare { stmts } = statement.as_ref() else { return Ok(()) };
            for declare in stmts {
                let Some(data_type) = &declare.data_type else { continue };
                let names = declare.names.iter().filter(|name| name.value.starts_with('@'));
                if let sqlparser::ast::DataType::Table(columns) = data_type {
                    let Some(columns) = columns else { continue };
                    for name in names {
                        let name = name.value.clone();
                        self.atomic(parsed.line, |s| s.declare_table_variable(&name, columns))?;
                    }
                    continue;
                }
                let Ok(sql_type) = sql_type_of(data_type) else { continue };
                for name in names {
                    let key = name.value.to_lowercase();
                    self.variables.entry(key).or_insert((sql_type, Value::Null));
                }
            }
            Ok(())
        })
    }

    /// `DECLARE @name TABLE (columns)`: a table variable, as a table of the current database
    /// that the batch or procedure drops when it ends.
    fn declare_table_variable(
        &mut self,
        name: &str,
        columns: &[sqlparser::ast::ColumnDef],
    ) -> Result<()> {
        // Run again (in a loop), the DECLARE keeps the table variable, rows and all, as in SQL
        // Server. Two DECLAREs of a name are 134 before the batch runs (front::check_declarations).
        if self.temp.made_in_scope(name, self.nest_level) {
            return Ok(());
        }
        let definitions: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        let sql = format!("CREATE TABLE [{}] ({})", name, definitions.join(", "));
        let parsed = crate::front::parse_batch(&sql).map_err(|(error, _)| error)?;
        let Some(Stmt::CreateTable { statement, clustering, rowguidcol, .. }) =
            parsed.into_iter().next().map(|p| p.stmt)
        else {
            return Err(SqlError::new(102, 15, 1, "Incorrect syntax near 'TABLE'."));
        };
        let spec = self.table_spec(&statement, &clustering, &rowguidcol, None)?;
        self.create_table(spec).map(|_| ())
    }

    pub(crate) fn insert(&mut self, insert: &sqlparser::ast::Insert) -> Result<u64> {
        let TableObject::TableName(name) = &insert.table else {
            return Err(SqlError::new(
                40517,
                16,
                1,
                "INSERT into a table function is not supported.",
            ));
        };
        let columns: Vec<String> = insert.columns.iter().map(last_part).collect();
        let target = self.insert_target(&last_part(name), &columns)?;
        let source_rows: Vec<Vec<Value>> = match &insert.source {
            None => vec![Vec::new()],
            Some(query) => match query.body.as_ref() {
                SetExpr::Values(values) => {
                    let mut rows = Vec::new();
                    for row in &values.rows {
                        let mut out = Vec::new();
                        for e in &row.content {
                            out.push(self.eval(e, &Env::empty())?);
                        }
                        rows.push(out);
                    }
                    rows
                }
                _ => self.run_query(query, None)?.rows,
            },
        };
        self.insert_rows(&target, source_rows, insert.source.is_some())
    }

    /// An INSERT's table, locked IX, and the places of the columns it names (or of every
    /// column but the identity when it names none).
    pub(crate) fn insert_target(&mut self, name: &str, columns: &[String]) -> Result<InsertTarget> {
        let table = self.table(name)?;
        self.note_output_table(&table);
        table.lock(&self.db, engine::lock::LockMode::IX)?;
        let defaults = Self::default_exprs(&table)?;
        let explicit_identity = self.identity_insert_on(&table);
        let identity_position = table.columns.iter().position(|c| c.identity.is_some());
        let positions: Vec<usize> = if columns.is_empty() {
            if explicit_identity {
                return Err(SqlError::new(
                    8101,
                    16,
                    1,
                    format!(
                        "An explicit value for the identity column in table '{}' can only be specified when a column list is used and IDENTITY_INSERT is ON.",
                        table.name
                    ),
                ));
            }
            (0..table.columns.len()).filter(|p| table.columns[*p].identity.is_none()).collect()
        } else {
            let mut positions = Vec::new();
            for c in columns {
                let p = table.column_index(c).ok_or_else(|| {
                    SqlError::new(207, 16, 1, format!("Invalid column name '{c}'."))
                })?;
                if table.columns[p].identity.is_some() && !explicit_identity {
                    return Err(SqlError::new(
                        544,
                        16,
                        1,
                        format!(
                            "Cannot insert explicit value for identity column in table '{}' when IDENTITY_INSERT is set to OFF.",
                            table.name
                        ),
                    ));
                }
                positions.push(p);
            }
            if explicit_identity && !identity_position.is_some_and(|i| positions.contains(&i)) {
                return Err(explicit_identity_needed(&table.name));
            }
            positions
        };
        Ok(InsertTarget {
            table,
            positions,
            defaults,
            explicit_identity,
            identity_position,
            column_list: !columns.is_empty(),
        })
    }

    /// Inserts `source_rows` (each holding the target's named columns, in order) into the
    /// target; `has_source` is false for DEFAULT VALUES.
    pub(crate) fn insert_rows(
        &mut self,
        target: &InsertTarget,
        source_rows: Vec<Vec<Value>>,
        has_source: bool,
    ) -> Result<u64> {
        let table = &target.table;
        let positions = &target.positions;
        self.note_table_change(table, None);
        let mut count = 0;
        for values in source_rows {
            self.check_cancel()?;
            if has_source && values.len() != positions.len() {
                let error = if values.len() > positions.len() {
                    SqlError::new(
                        110,
                        15,
                        1,
                        "There are fewer columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.",
                    )
                } else {
                    SqlError::new(
                        109,
                        15,
                        1,
                        "There are more columns in the INSERT statement than values specified in the VALUES clause. The number of values in the VALUES clause must match the number of columns specified in the INSERT statement.",
                    )
                };
                return Err(if target.column_list {
                    error
                } else {
                    SqlError::new(
                        213,
                        16,
                        1,
                        "Column name or number of supplied values does not match table definition.",
                    )
                });
            }
            let mut given: Vec<Option<Value>> = vec![None; table.columns.len()];
            for (p, v) in positions.iter().zip(values) {
                given[*p] = Some(v);
            }
            let row = self.complete_row(table, given, &target.defaults, "INSERT")?;
            table.insert(&self.db, &row)?;
            self.capture_output(None, Some(&row));
            if target.explicit_identity
                && let Some(value) = target.identity_position.and_then(|i| value::as_i64(&row[i]))
            {
                table.note_identity_value(value);
                self.last_identity.set(Some(value));
            }
            count += 1;
        }
        Ok(count)
    }

    /// INSERT [INTO] table [(columns)] EXEC ...: the EXEC runs first, its result sets kept
    /// rather than sent (its messages and errors still go out), then their rows are inserted
    /// as one statement. A result set whose width does not fit the column list is 213.
    ///
    /// Deviation: SQL Server runs the EXEC inside the INSERT's statement transaction, so an
    /// INSERT that fails also undoes what the procedure changed; here the procedure's own
    /// statements stand on their own, and only the INSERT is undone.
    pub(crate) fn run_insert_exec(
        &mut self,
        table: &str,
        columns: &[String],
        exec: &crate::procs::Exec,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        if self.insert_exec_depth > 0 {
            let error = SqlError::new(8164, 16, 1, "An INSERT EXEC statement cannot be nested.");
            return Err(self.fail(error, line));
        }
        // The table and columns are checked before the EXEC runs, as SQL Server compiles them.
        self.atomic(line, |s| s.insert_target(table, columns).map(|_| ()))?;
        let mut captured: Vec<Vec<Value>> = Vec::new();
        self.insert_exec_depth += 1;
        let ran = self.run_exec(exec, line, &mut |output| match output {
            Output::Rows(result) => captured.extend(result.rows),
            Output::RowCount(_) => {}
            other => out(other),
        });
        self.insert_exec_depth -= 1;
        ran?;
        let n = self.atomic(line, |s| {
            let target = s.insert_target(table, columns)?;
            s.insert_rows(&target, captured, true)
        })?;
        self.rows_affected(n, out);
        Ok(Flow::Next)
    }

    /// The rows of a table that a WHERE clause selects, with their locators.
    fn matching_rows(
        &self,
        table: &engine::catalog::Table,
        cols: &[ColRef],
        selection: Option<&Expr>,
    ) -> Result<Vec<MatchedRow>> {
        let mut out = Vec::new();
        let rows = self.candidate_rows(table, cols, selection, None)?;
        if rows.is_empty() {
            self.bind_check(selection, cols, None, false)?;
        }
        for (locator, stored) in rows {
            self.check_cancel()?;
            let shown = shown_row(table, stored.clone());
            let keep = match selection {
                Some(filter) => {
                    let env = Env { cols, row: &shown, group: None, outer: None };
                    is_true(&self.eval(filter, &env)?)
                }
                None => true,
            };
            if keep {
                out.push(MatchedRow { locator, stored, shown });
            }
        }
        Ok(out)
    }

    /// UPDATE and DELETE with a FROM clause: the target's rows as the FROM list joins and
    /// filters them, with `exprs` evaluated on each joined row. A target row that several
    /// joined rows match is changed once, with the first match's values (SQL Server leaves
    /// which one undefined). The target is the FROM item whose alias or name is `target`.
    fn joined_targets(
        &self,
        target: &str,
        from: &[sqlparser::ast::TableWithJoins],
        selection: Option<&Expr>,
        exprs: &[&Expr],
    ) -> Result<JoinedTargets> {
        let table_name = from_item_table(from, target).unwrap_or_else(|| target.to_string());
        let table = self.table(&table_name)?;
        table.lock(&self.db, engine::lock::LockMode::IX)?;
        engine::iostats::note_scan(self.db.database_id, table.au_ids()[0]);
        self.note_index_use(&table, 0, engine::index_usage::IndexUse::Scan);
        let stored_rows = table.rows(&self.db)?;
        let mut columns: Vec<String> =
            table.columns.iter().map(|c| c.column.name.clone()).collect();
        columns.push(TARGET_ROW_COLUMN.to_string());
        let rows = stored_rows
            .iter()
            .enumerate()
            .map(|(i, (_, stored))| {
                let mut shown = shown_row(&table, stored.clone());
                shown.push(Value::BigInt(i as i64));
                shown
            })
            .collect();
        let binding = crate::query::CteBinding {
            name: table.name.clone(),
            columns,
            rows: Arc::new(rows),
            shadows_table: true,
        };
        self.ctes.borrow_mut().push(binding);
        let joined = self.joined_rows(from, None, None);
        self.ctes.borrow_mut().pop();
        let (cols, joined) = joined?;
        let markers: Vec<usize> =
            (0..cols.len()).filter(|&i| cols[i].name == TARGET_ROW_COLUMN).collect();
        let marker = markers
            .iter()
            .copied()
            .find(|&i| cols[i].qualifier.eq_ignore_ascii_case(target))
            .or(markers.first().copied())
            .ok_or_else(|| engine::catalog::invalid_object(target))?;
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        for row in &joined {
            self.check_cancel()?;
            let env = Env { cols: &cols, row, group: None, outer: None };
            if let Some(filter) = selection
                && !is_true(&self.eval(filter, &env)?)
            {
                continue;
            }
            let Some(index) = value::as_i64(&row[marker]).map(|i| i as usize) else { continue };
            if !seen.insert(index) {
                continue;
            }
            let mut values = Vec::with_capacity(exprs.len());
            for e in exprs {
                values.push(self.eval(e, &env)?);
            }
            let (locator, stored) = stored_rows[index].clone();
            let shown = shown_row(&table, stored.clone());
            out.push((MatchedRow { locator, stored, shown }, values));
        }
        Ok((table, out))
    }

    /// `DELETE TOP (n) ...` or `UPDATE TOP (n) ...` ([`Stmt::TopDml`]).
    fn run_top_dml(
        &mut self,
        top: &sqlparser::ast::Top,
        statement: &Statement,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        let n = match statement {
            Statement::Update(sqlparser::ast::Update { output: Some(output), .. })
            | Statement::Delete(sqlparser::ast::Delete { output: Some(output), .. }) => {
                return self.run_with_output(statement, Some(top), output, line, out);
            }
            Statement::Update(update) => self.atomic(line, |s| s.update(update, Some(top)))?,
            Statement::Delete(delete) => self.atomic(line, |s| s.delete(delete, Some(top)))?,
            _ => unreachable!("the front end makes TopDml of DELETE and UPDATE only"),
        };
        self.rows_affected(n, out);
        Ok(Flow::Next)
    }

    /// How many of `matched` rows a DELETE or UPDATE with `top` changes: n, or n percent
    /// rounded up (1014 and 1031 as for SELECT's TOP).
    fn top_rows(&self, top: Option<&sqlparser::ast::Top>, matched: usize) -> Result<usize> {
        let Some(quantity) = top.and_then(|top| top.quantity.as_ref()) else { return Ok(matched) };
        let limit = if top.is_some_and(|top| top.percent) {
            let percent = self.top_percent(quantity, None)?;
            (matched as f64 * percent / 100.0).ceil() as usize
        } else {
            usize::try_from(self.top_count(quantity, None)?).unwrap_or(usize::MAX)
        };
        Ok(limit.min(matched))
    }

    pub(crate) fn update(
        &mut self,
        update: &sqlparser::ast::Update,
        top: Option<&sqlparser::ast::Top>,
    ) -> Result<u64> {
        let TableFactor::Table { name, alias, .. } = &update.table.relation else {
            return Err(SqlError::new(40517, 16, 1, "UPDATE of this form is not supported."));
        };
        if !update.table.joins.is_empty() {
            return Err(SqlError::new(40517, 16, 1, "UPDATE of this form is not supported."));
        }
        if let Some(
            sqlparser::ast::UpdateTableFromKind::AfterSet(from)
            | sqlparser::ast::UpdateTableFromKind::BeforeSet(from),
        ) = &update.from
        {
            return self.update_from(&last_part(name), from, update, top);
        }
        let table = self.table(&last_part(name))?;
        self.note_output_table(&table);
        table.lock(&self.db, engine::lock::LockMode::IX)?;
        let cols = table_columns(&table, &qualifier_of(&table, alias.as_ref()));
        let targets = Self::update_targets(&table, &update.assignments)?;
        let mut rows = self.matching_rows(&table, &cols, update.selection.as_ref())?;
        rows.truncate(self.top_rows(top, rows.len())?);
        self.note_update_targets(&table, &targets);
        let mut count = 0;
        for MatchedRow { locator, stored: old, shown } in rows {
            let env = Env { cols: &cols, row: &shown, group: None, outer: None };
            let mut given: Vec<Option<Value>> = shown.iter().cloned().map(Some).collect();
            for (p, e) in &targets {
                given[*p] = Some(self.eval(e, &env)?);
            }
            let new = self.complete_row(&table, given, &[], "UPDATE")?;
            table.update(&self.db, &locator, &old, &new)?;
            self.capture_output(Some(&shown), Some(&new));
            count += 1;
        }
        Ok(count)
    }

    /// Notes an UPDATE's change of the indexes its SET list reaches ([`Self::note_table_change`]).
    pub(crate) fn note_update_targets(
        &self,
        table: &engine::catalog::Table,
        targets: &[(usize, &Expr)],
    ) {
        let changed: Vec<usize> = targets.iter().map(|(p, _)| *p).collect();
        self.note_table_change(table, Some(&changed));
    }

    /// The target columns of a SET list (UPDATE's, MERGE's): (column position, value
    /// expression).
    pub(crate) fn update_targets<'u>(
        table: &engine::catalog::Table,
        assignments: &'u [sqlparser::ast::Assignment],
    ) -> Result<Vec<(usize, &'u Expr)>> {
        let mut targets = Vec::new();
        for assignment in assignments {
            let column = match &assignment.target {
                sqlparser::ast::AssignmentTarget::ColumnName(n) => last_part(n),
                other => other.to_string(),
            };
            let p = table.column_index(&column).ok_or_else(|| {
                SqlError::new(207, 16, 1, format!("Invalid column name '{column}'."))
            })?;
            if table.columns[p].identity.is_some() {
                return Err(SqlError::new(
                    8102,
                    16,
                    1,
                    format!("Cannot update identity column '{column}'."),
                ));
            }
            targets.push((p, &assignment.value));
        }
        Ok(targets)
    }

    /// UPDATE target SET ... FROM ... [WHERE ...].
    fn update_from(
        &mut self,
        target: &str,
        from: &[sqlparser::ast::TableWithJoins],
        update: &sqlparser::ast::Update,
        top: Option<&sqlparser::ast::Top>,
    ) -> Result<u64> {
        let table_name = from_item_table(from, target).unwrap_or_else(|| target.to_string());
        let table = self.table(&table_name)?;
        let targets = Self::update_targets(&table, &update.assignments)?;
        let exprs: Vec<&Expr> = targets.iter().map(|(_, e)| *e).collect();
        let (table, mut matched) =
            self.joined_targets(target, from, update.selection.as_ref(), &exprs)?;
        self.note_output_table(&table);
        matched.truncate(self.top_rows(top, matched.len())?);
        self.note_update_targets(&table, &targets);
        let mut count = 0;
        for (MatchedRow { locator, stored: old, shown }, values) in matched {
            let mut given: Vec<Option<Value>> = shown.iter().cloned().map(Some).collect();
            for ((p, _), v) in targets.iter().zip(values) {
                given[*p] = Some(v);
            }
            let new = self.complete_row(&table, given, &[], "UPDATE")?;
            table.update(&self.db, &locator, &old, &new)?;
            self.capture_output(Some(&shown), Some(&new));
            count += 1;
        }
        Ok(count)
    }

    pub(crate) fn delete(
        &mut self,
        delete: &sqlparser::ast::Delete,
        top: Option<&sqlparser::ast::Top>,
    ) -> Result<u64> {
        let from = match &delete.from {
            FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
        };
        if let Some(target) = delete.tables.first() {
            let target = last_part(target);
            let (table, mut matched) =
                self.joined_targets(&target, from, delete.selection.as_ref(), &[])?;
            self.note_output_table(&table);
            matched.truncate(self.top_rows(top, matched.len())?);
            self.note_table_change(&table, None);
            let count = matched.len() as u64;
            for (MatchedRow { locator, stored, shown }, _) in matched {
                table.delete(&self.db, &locator, &stored)?;
                self.capture_output(Some(&shown), None);
            }
            return Ok(count);
        }
        let Some(TableFactor::Table { name, alias, .. }) = from.first().map(|t| &t.relation) else {
            return Err(SqlError::new(40517, 16, 1, "DELETE of this form is not supported."));
        };
        let table = self.table(&last_part(name))?;
        self.note_output_table(&table);
        table.lock(&self.db, engine::lock::LockMode::IX)?;
        let cols = table_columns(&table, &qualifier_of(&table, alias.as_ref()));
        let mut rows = self.matching_rows(&table, &cols, delete.selection.as_ref())?;
        rows.truncate(self.top_rows(top, rows.len())?);
        self.note_table_change(&table, None);
        let count = rows.len() as u64;
        for MatchedRow { locator, stored: row, shown } in rows {
            table.delete(&self.db, &locator, &row)?;
            self.capture_output(Some(&shown), None);
        }
        Ok(count)
    }

    fn truncate(&mut self, name: &str) -> Result<()> {
        let table = self.table(name)?;
        table.lock(&self.db, engine::lock::LockMode::X)?;
        for (locator, row) in table.rows(&self.db)? {
            table.delete(&self.db, &locator, &row)?;
        }
        Ok(())
    }

    /// SELECT ... INTO: a new heap whose columns take the types the select list declares
    /// (CAST and CONVERT), else the types of the values.
    fn select_into(
        &mut self,
        name: &str,
        columns: &[String],
        rows: &[Vec<Value>],
        identity: Option<IdentityColumn>,
        declared: &[Option<SqlType>],
    ) -> Result<()> {
        let mut defs = Vec::new();
        for (i, column) in columns.iter().enumerate() {
            if column.is_empty() {
                return Err(SqlError::new(
                    1038,
                    15,
                    5,
                    "An object or column name is missing or empty. For SELECT INTO statements, verify each column has a name.",
                ));
            }
            let sample = rows.iter().map(|r| &r[i]).find(|v| !matches!(v, Value::Null));
            match identity {
                Some(id) if id.position == i => {
                    let mut def = ColumnDef::new(column, id.sql_type, false);
                    def.identity = Some((id.seed, id.step));
                    defs.push(def);
                }
                _ => {
                    let sql_type = match declared.get(i).copied().flatten() {
                        Some(sql_type) => sql_type,
                        None => type_of_value(sample, rows, i),
                    };
                    defs.push(ColumnDef::new(column, sql_type, true))
                }
            }
        }
        let spec = TableSpec {
            name: name.to_string(),
            columns: defs,
            indexes: Vec::new(),
            filegroup: None,
        };
        let table = self.create_table(spec)?;
        for row in rows {
            let mut given: Vec<Option<Value>> = row.iter().cloned().map(Some).collect();
            if let Some(id) = identity {
                given[id.position] = None; // generated by the identity
            }
            let stored = self.complete_row(&table, given, &[], "INSERT")?;
            table.insert(&self.db, &stored)?;
        }
        Ok(())
    }
}

/// `IDENTITY(type [, seed, increment])` in a SELECT INTO's list: the new table's identity column.
#[derive(Clone, Copy, Debug)]
struct IdentityColumn {
    position: usize,
    sql_type: SqlType,
    seed: i64,
    step: i64,
}

/// Takes `IDENTITY(type, seed, increment)` out of a SELECT INTO's list (the query then selects
/// NULL there); the column is generated as the rows go in, as SQL Server numbers them.
fn identity_column(
    query: &sqlparser::ast::Query,
) -> Result<(sqlparser::ast::Query, Option<IdentityColumn>)> {
    let mut query = query.clone();
    let SetExpr::Select(select) = query.body.as_mut() else { return Ok((query, None)) };
    let mut found = None;
    for (position, item) in select.projection.iter_mut().enumerate() {
        let expr = match item {
            sqlparser::ast::SelectItem::UnnamedExpr(e) => e,
            sqlparser::ast::SelectItem::ExprWithAlias { expr, .. } => expr,
            _ => continue,
        };
        let Expr::Function(f) = expr else { continue };
        if !last_part(&f.name).eq_ignore_ascii_case("IDENTITY") {
            continue;
        }
        let args: Vec<String> = match &f.args {
            sqlparser::ast::FunctionArguments::List(list) => {
                list.args.iter().map(|a| a.to_string()).collect()
            }
            _ => Vec::new(),
        };
        let sql_type = args
            .first()
            .and_then(|t| value::parse_type_name(t.trim(), &[]))
            .filter(|t| matches!(t, SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt | SqlType::Decimal { scale: 0, .. }))
            .ok_or_else(|| SqlError::new(2749, 16, 2, "Identity column must be of data type int, bigint, smallint, tinyint, or decimal or numeric with a scale of 0, and constrained to be nonnullable."))?;
        let number = |i: usize| args.get(i).and_then(|n| n.trim().parse::<i64>().ok()).unwrap_or(1);
        found = Some(IdentityColumn { position, sql_type, seed: number(1), step: number(2) });
        *expr = Expr::value(sqlparser::ast::Value::Null);
    }
    Ok((query, found))
}

/// error_reported's fields for an error sent to the client: category SERVER, destination
/// USER, user-defined for RAISERROR and THROW's numbers from 50000 (is_intercepted false: an
/// error a CATCH takes is not sent).
fn error_reported_fields(error: &SqlError) -> Vec<FieldValue> {
    vec![
        FieldValue::I64(i64::from(error.number)),
        FieldValue::I64(i64::from(error.severity)),
        FieldValue::I64(i64::from(error.state)),
        FieldValue::Bool(error.number >= 50_000),
        FieldValue::Map(MapName::ErrorCategory, 2),
        FieldValue::Map(MapName::ErrorDestination, 0x02),
        FieldValue::Bool(false),
        FieldValue::Text(error.message.clone()),
    ]
}

/// The first word of a batch after comments, upper case: what sys.dm_exec_requests shows as
/// its command.
fn first_keyword(sql: &str) -> String {
    let mut rest = sql.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, next)| next).trim_start();
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, next)| next).trim_start();
        } else {
            break;
        }
    }
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    word.to_uppercase()
}

/// The type each item of a SELECT INTO's list declares: the target of a CAST or CONVERT
/// (bug fix: `SELECT TOP (0) CONVERT(nchar(2048), N'x') AS name INTO t` made an int column,
/// as there was no value to take a type from). None where the list does not say.
fn declared_types(query: &sqlparser::ast::Query) -> Vec<Option<SqlType>> {
    let SetExpr::Select(select) = query.body.as_ref() else { return Vec::new() };
    select
        .projection
        .iter()
        .map(|item| {
            let expr = match item {
                sqlparser::ast::SelectItem::UnnamedExpr(e) => e,
                sqlparser::ast::SelectItem::ExprWithAlias { expr, .. } => expr,
                _ => return None,
            };
            match expr {
                Expr::Cast { data_type, .. } | Expr::Convert { data_type: Some(data_type), .. } => {
                    crate::query::sql_type_of(data_type).ok()
                }
                _ => None,
            }
        })
        .collect()
}

/// The type SELECT INTO gives a column, from its values.
fn type_of_value(sample: Option<&Value>, rows: &[Vec<Value>], i: usize) -> SqlType {
    let longest = rows
        .iter()
        .map(|r| value::display(&r[i]).chars().count())
        .max()
        .unwrap_or(1)
        .clamp(1, 4000) as u16;
    match sample {
        Some(Value::TinyInt(_)) => SqlType::TinyInt,
        Some(Value::SmallInt(_)) => SqlType::SmallInt,
        Some(Value::Int(_)) | Some(Value::Null) | None => SqlType::Int,
        Some(Value::BigInt(_)) => SqlType::BigInt,
        Some(Value::Bit(_)) => SqlType::Bit,
        Some(Value::Decimal(_, s)) => SqlType::Decimal { precision: 38, scale: *s },
        Some(Value::Float(_)) => SqlType::Float,
        Some(Value::Real(_)) => SqlType::Real,
        Some(Value::Money(_)) => SqlType::Money,
        Some(Value::Text(_)) => SqlType::NVarChar(longest),
        Some(Value::Bytes(_)) => SqlType::VarBinary(longest.max(1)),
        Some(Value::Guid(_)) => SqlType::UniqueIdentifier,
        Some(Value::Date(_)) => SqlType::Date,
        Some(Value::Time(_)) => SqlType::Time(7),
        Some(Value::DateTime(..)) => SqlType::DateTime,
        Some(Value::DateTime2(..)) => SqlType::DateTime2(7),
    }
}

/// 515: a NULL for a NOT NULL column; `verb` is the statement (INSERT, UPDATE) that fails.
pub(crate) fn null_not_allowed(column: &str, database: &str, table: &str, verb: &str) -> SqlError {
    SqlError::new(
        515,
        16,
        2,
        format!(
            "Cannot insert the value NULL into column '{column}', table '{database}.dbo.{table}'; column does not allow nulls. {verb} fails."
        ),
    )
}

/// 2628 when a string would be cut to fit its column.
pub(crate) fn check_length(
    converted: &Value,
    given: &Value,
    column: &ColumnDef,
    table: &engine::catalog::Table,
    db: &str,
) -> Result<()> {
    let limit = match column.column.sql_type {
        SqlType::Char(n) | SqlType::VarChar(n) | SqlType::NChar(n) | SqlType::NVarChar(n) => {
            usize::from(n)
        }
        _ => return Ok(()),
    };
    if let (Value::Text(original), Value::Text(_)) = (given, converted)
        && original.trim_end_matches(' ').chars().count() > limit
    {
        let shown: String = original.chars().take(limit).collect();
        return Err(SqlError::new(
            2628,
            16,
            1,
            format!(
                "String or binary data would be truncated in table '{db}.dbo.{}', column '{}'. Truncated value: '{shown}'.",
                table.name, column.column.name
            ),
        ));
    }
    Ok(())
}

/// The target table of UPDATE/DELETE ... FROM, and each row it changes with the values of
/// the expressions asked for.
type JoinedTargets = (Arc<engine::catalog::Table>, Vec<(MatchedRow, Vec<Value>)>);

/// The column a target row's index travels in through UPDATE/DELETE ... FROM.
const TARGET_ROW_COLUMN: &str = "__target_row";

/// The table that the FROM item called `target` (by alias, else by name) reads.
fn from_item_table(from: &[sqlparser::ast::TableWithJoins], target: &str) -> Option<String> {
    let factors = from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)));
    for factor in factors {
        if let TableFactor::Table { name, alias, .. } = factor {
            let table = last_part(name);
            let called = alias.as_ref().map_or(table.as_str(), |a| a.name.value.as_str());
            if called.eq_ignore_ascii_case(target) {
                return Some(table);
            }
        }
    }
    None
}

/// A seed from the operating system's random source.
fn os_seed() -> u64 {
    u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().expect("8 bytes"))
}

fn explicit_identity_needed(table: &str) -> SqlError {
    SqlError::new(
        545,
        16,
        1,
        format!(
            "Explicit value must be specified for identity column in table '{table}' either when IDENTITY_INSERT is set to ON or when a replication user is inserting into a NOT FOR REPLICATION identity column."
        ),
    )
}

fn undeclared(name: &str) -> SqlError {
    SqlError::new(137, 15, 2, format!("Must declare the scalar variable \"{name}\"."))
}

/// @@SERVERNAME: the machine's name from the environment, else `extentdb`.
pub(crate) fn server_name() -> String {
    std::env::var("HOSTNAME").unwrap_or_else(|_| "extentdb".into())
}

/// Error 2754: RAISERROR of severity 19 to 25 without WITH LOG (SQL Server also requires the
/// sysadmin role; every extentdb login is sysadmin).
fn high_severity_without_log() -> SqlError {
    SqlError::new(
        2754,
        16,
        1,
        "Error severity levels greater than 18 can only be specified by members of the sysadmin \
         role, using the WITH LOG option.",
    )
}

/// RAISERROR's printf-style substitution: %d %i %u %s %x %%.
fn format_message(template: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    let mut next_arg = args.iter();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        while chars
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | ' ' | '#' | '.'))
        {
            chars.next();
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('d' | 'i' | 'u' | 's' | 'S') => out
                .push_str(&next_arg.next().map(value::display).unwrap_or_else(|| "(null)".into())),
            Some('x' | 'X') => out.push_str(
                &next_arg
                    .next()
                    .and_then(value::as_i64)
                    .map(|v| format!("{v:x}"))
                    .unwrap_or_default(),
            ),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Runs `f` in a transaction of its own while the session's transaction, if one is open,
/// steps aside (it comes back after, whatever happened): how table variables are made and
/// dropped, outside every user transaction, as SQL Server makes them.
fn outside_user_transaction<T>(db: &Database, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let user = engine::xact::detach();
    let result = db.begin_tran().and_then(|()| {
        let done = f()?;
        db.commit_tran().map(|()| done)
    });
    if db.trancount() > 0 {
        let _ = db.rollback_tran();
    }
    drop(engine::xact::detach()); // a rollback that failed still lets go of it
    if let Some(user) = user {
        engine::xact::attach(user);
    }
    result
}

/// Drops temporary tables and table variables whose scope ended: a temporary table in its
/// own transaction unless the session's transaction is open in its database (then in that
/// one); a table variable outside the session's transaction, once that transaction (if open
/// in its database) has ended: the ones still waiting for it are returned. A failure leaves
/// the table to the cleanup at the next start ([`crate::temp`]).
#[must_use = "table variables waiting for their transaction to end"]
pub(crate) fn drop_temporary(
    objects: Vec<crate::temp::TempObject>,
) -> Vec<crate::temp::TempObject> {
    let mut waiting = Vec::new();
    for object in objects {
        let db = &object.database;
        let Ok(catalog) = db.catalog() else { continue };
        let Some(table) = catalog.table(&object.stored) else { continue };
        if object.variable {
            // The transaction's log holds the variable's changes: recovery, after a crash,
            // would undo them in its table (and fail, 9004, were it gone).
            if engine::xact::is_open(db.database_id) {
                waiting.push(object);
                continue;
            }
            let dropped = outside_user_transaction(db, || catalog.drop_table(db, &object.stored));
            if dropped.is_ok() {
                db.forget_kept_units(&table.au_ids());
            }
            continue;
        }
        let own_transaction = db.trancount() == 0;
        if own_transaction && db.begin_tran().is_err() {
            continue;
        }
        let dropped = catalog.drop_table(db, &object.stored);
        if own_transaction {
            let _ = if dropped.is_ok() { db.commit_tran() } else { db.rollback_tran() };
        }
    }
    waiting
}

/// The session thread's CPU nanoseconds (0 where the OS has no account): SET STATISTICS
/// TIME's CPU time is the session thread's (deviation: a parallel DBCC's workers are not in
/// it).
fn thread_cpu_ns() -> u64 {
    engine::session::thread_cpu_ns().unwrap_or(0)
}
