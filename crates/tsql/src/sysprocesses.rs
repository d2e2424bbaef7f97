//! Who is waiting on what, per session: sys.sysprocesses (SQL Server 2000's table, kept as a
//! compatibility view) and sys.dm_exec_session_wait_stats (SQL Server 2016's per-session
//! wait statistics).
//!
//! What it owns: building both views from the sessions' real state: the waits the engine
//! records for each session ([`engine::waits::WaitStats::session_snapshot`], the same events
//! as sys.dm_os_wait_stats, attributed to the session whose thread waited), the wait each is
//! in now (sys.dm_os_waiting_tasks), its running request, and what its finished requests
//! used. The system sessions (LAZY WRITER, LOG WRITER, CHECKPOINT, ...) have rows too.
//!
//! sys.sysprocesses resolves as `sys.sysprocesses`, `dbo.sysprocesses`,
//! `master.dbo.sysprocesses` or plain `sysprocesses`, as SQL Server resolves it.
//!
//! Deviations:
//! - waittype (documented as reserved) is 0x0000 when the session waits for nothing, and for
//!   a lock or page latch wait the code SQL Server's KB 244455 gives (LCK_M_S 0x0008, LCK_M_X
//!   0x000E, PAGELATCH_SH 0x0412, PAGEIOLATCH_SH 0x0422, ...; codes of SQL Server 7.0, the
//!   latest list in our sources). For a wait whose code no source gives (WRITELOG, CXPACKET,
//!   WAITFOR, LOGMGR_QUEUE, KP and DT latches, ...) it is NULL.
//! - kpid is the OS thread id of the thread running the session's request (0 when it runs
//!   none), cut to smallint as SQL Server's column is; Linux thread ids can exceed 32,767.
//! - physical_io counts the pages the session's finished requests read from disk; its
//!   writes are not counted (the lazy writer and checkpoint write pages, not sessions). cpu
//!   adds the running request's CPU so far to its finished requests'.
//! - memusage is 0 (there is no procedure cache); uid is 1 (dbo: every session is sa); sid
//!   is sa's, 0x01; nt_domain, nt_username and net_address are blank; net_library is TCP/IP
//!   for a TDS connection and blank for an embedded session; context_info is 128 zero bytes
//!   (SET CONTEXT_INFO is not built); stmt_start 0 and stmt_end -1 (the whole batch).
//! - sys.dm_exec_session_wait_stats keeps a session's rows through `DBCC SQLPERF
//!   ('sys.dm_os_wait_stats', CLEAR)`, which clears the instance's rows only.

use crate::dmv::{
    big, int, page_resource, request_cpu_ns, request_status, sql_handle, system_task_database,
    tsql_sort_key,
};
use crate::server::SessionInfo;
use crate::session::Session;
use crate::sysviews::{ViewRows, columns, text};
use engine::record::Value;
use engine::waits::WaitingTaskRow;
use std::collections::BTreeMap;

const SYSPROCESSES_COLUMNS: [&str; 33] = [
    "spid",
    "kpid",
    "blocked",
    "waittype",
    "waittime",
    "lastwaittype",
    "waitresource",
    "dbid",
    "uid",
    "cpu",
    "physical_io",
    "memusage",
    "login_time",
    "last_batch",
    "ecid",
    "open_tran",
    "status",
    "sid",
    "hostname",
    "program_name",
    "hostprocess",
    "cmd",
    "nt_domain",
    "nt_username",
    "net_address",
    "net_library",
    "loginame",
    "context_info",
    "sql_handle",
    "stmt_start",
    "stmt_end",
    "request_id",
    "page_resource",
];

/// Bytes of sysprocesses.context_info.
const CONTEXT_INFO_BYTES: usize = 128;
/// Bytes of sysprocesses.sql_handle.
const SQL_HANDLE_BYTES: usize = 20;

/// sysprocesses.waittype for a wait type: the codes of SQL Server's KB 244455, where it
/// gives one (see the module header).
fn waittype_code(wait_type: &str) -> Option<u16> {
    let code = match wait_type {
        "LCK_M_IS" => 0x0003,
        "LCK_M_IX" => 0x0006,
        "LCK_M_SIX" => 0x0007,
        "LCK_M_S" => 0x0008,
        "LCK_M_U" => 0x0009,
        "LCK_M_X" => 0x000E,
        "PAGELATCH_EX" => 0x0411,
        "PAGELATCH_SH" => 0x0412,
        "PAGELATCH_UP" => 0x0413,
        "PAGEIOLATCH_EX" => 0x0421,
        "PAGEIOLATCH_SH" => 0x0422,
        "PAGEIOLATCH_UP" => 0x0423,
        _ => return None,
    };
    Some(code)
}

/// A waittype code as binary(2) shows it: most significant byte first, so that it reads as
/// the number (0x0412). Never stored.
#[allow(clippy::big_endian_bytes)]
fn waittype_bytes(code: u16) -> Value {
    Value::Bytes(code.to_be_bytes().to_vec())
}

/// The wait columns of a sysprocesses row: blocked, waittype, waittime, lastwaittype,
/// waitresource, and page_resource.
struct WaitColumns {
    blocked: Value,
    waittype: Value,
    waittime: Value,
    lastwaittype: Value,
    waitresource: Value,
    page_resource: Value,
}

impl WaitColumns {
    /// From the wait the session is in now (its resource named by `session`), or else from
    /// its last completed wait.
    fn of(
        session: &Session,
        now: Option<&WaitingTaskRow>,
        last: Option<&'static str>,
    ) -> WaitColumns {
        let Some(wait) = now else {
            return WaitColumns {
                blocked: Value::SmallInt(0),
                waittype: Value::Bytes(vec![0, 0]),
                waittime: Value::BigInt(0),
                lastwaittype: text(last.unwrap_or("")),
                waitresource: text(""),
                page_resource: Value::Null,
            };
        };
        let code = waittype_code(wait.wait_type);
        WaitColumns {
            blocked: Value::SmallInt(wait.blocking_session_id.unwrap_or(0) as i16),
            waittype: code.map_or(Value::Null, waittype_bytes),
            waittime: big(wait.wait_duration_ms),
            lastwaittype: text(wait.wait_type),
            waitresource: Value::Text(session.wait_resource(wait)),
            page_resource: page_resource(Some(wait)),
        }
    }
}

impl Session {
    /// sys.sysprocesses: a row per session, the system sessions first.
    pub(crate) fn sys_sysprocesses(&self) -> ViewRows {
        let instance = &self.server.instance;
        let waiting: BTreeMap<u16, WaitingTaskRow> =
            instance.waiting_tasks.snapshot().into_iter().map(|t| (t.session_id, t)).collect();
        let runnable: BTreeMap<u16, &'static str> = instance
            .schedulers
            .tasks()
            .into_iter()
            .map(|task| (task.session_id, task.task_state))
            .collect();
        let mut rows = self.system_sysprocesses(&waiting);
        let sessions = self.server.sessions.lock().clone();
        for (spid, info) in sessions {
            let wait =
                WaitColumns::of(self, waiting.get(&spid), instance.waits.last_wait_type(spid));
            let status = user_status(&info, waiting.contains_key(&spid), runnable.get(&spid));
            let database_id =
                if spid == self.spid { self.db().database_id } else { info.database_id };
            rows.push(self.user_sysprocess(spid, &info, database_id, status, wait));
        }
        rows.sort_by_key(|row| tsql_sort_key(&row[0]));
        (columns(&SYSPROCESSES_COLUMNS), rows)
    }

    fn user_sysprocess(
        &self,
        spid: u16,
        info: &SessionInfo,
        database_id: u16,
        status: &str,
        wait: WaitColumns,
    ) -> Vec<Value> {
        let running_cpu_ns = info.request.as_ref().map_or(0, request_cpu_ns);
        let kpid = info.request.as_ref().map_or(0, |r| r.thread_id as i16);
        let command = info.command().unwrap_or_else(|| "AWAITING COMMAND".to_string());
        let handle = if info.request.is_some() {
            sql_handle(&info.last_batch)
        } else {
            vec![0; SQL_HANDLE_BYTES]
        };
        let connection = info.connection.as_ref();
        vec![
            Value::SmallInt(spid as i16),
            Value::SmallInt(kpid),
            wait.blocked,
            wait.waittype,
            wait.waittime,
            wait.lastwaittype,
            wait.waitresource,
            Value::SmallInt(database_id as i16),
            Value::SmallInt(1),
            int((info.used.cpu_time_ns + running_cpu_ns) / 1_000_000),
            big(info.used.reads),
            Value::Int(0),
            self.server.datetime_of(info.login_time),
            self.server.datetime_of(info.last_request_start_time),
            Value::SmallInt(0),
            Value::SmallInt(info.open_transaction_count as i16),
            text(status),
            Value::Bytes(crate::sysdatabases::SA_SID.to_vec()),
            Value::Text(info.host_name.clone().unwrap_or_default()),
            Value::Text(info.program_name.clone()),
            Value::Text(connection.map_or(String::new(), |c| c.facts.host_process_id.to_string())),
            Value::Text(command),
            text(""),
            text(""),
            text(""),
            text(if connection.is_some() { "TCP/IP" } else { "" }),
            Value::Text(info.login_name.clone()),
            Value::Bytes(vec![0; CONTEXT_INFO_BYTES]),
            Value::Bytes(handle),
            Value::Int(0),
            Value::Int(-1),
            Value::Int(0),
            wait.page_resource,
        ]
    }

    /// The system sessions' rows: one per system task (status background), with its wait for
    /// work when it is in one.
    fn system_sysprocesses(&self, waiting: &BTreeMap<u16, WaitingTaskRow>) -> Vec<Vec<Value>> {
        let instance = &self.server.instance;
        let mut rows = Vec::new();
        for task in instance.system_tasks.snapshot() {
            let spid = task.identity.session_id;
            let now = waiting.get(&spid).filter(|_| task.waiting.is_some());
            let wait = WaitColumns::of(self, now, instance.waits.last_wait_type(spid));
            let cpu_ns = engine::session::thread_cpu_ns_of(task.thread_id).unwrap_or(0);
            let started = self.server.datetime_of(task.started);
            rows.push(vec![
                Value::SmallInt(spid as i16),
                Value::SmallInt(task.thread_id as i16),
                wait.blocked,
                wait.waittype,
                wait.waittime,
                wait.lastwaittype,
                wait.waitresource,
                Value::SmallInt(system_task_database(&task) as i16),
                Value::SmallInt(1),
                int(cpu_ns / 1_000_000),
                big(0),
                Value::Int(0),
                started.clone(),
                started,
                Value::SmallInt(0),
                Value::SmallInt(0),
                text("background"),
                Value::Bytes(crate::sysdatabases::SA_SID.to_vec()),
                text(""),
                text(""),
                text(""),
                text(task.identity.command),
                text(""),
                text(""),
                text(""),
                text(""),
                text("sa"),
                Value::Bytes(vec![0; CONTEXT_INFO_BYTES]),
                Value::Bytes(vec![0; SQL_HANDLE_BYTES]),
                Value::Int(0),
                Value::Int(0),
                Value::Int(0),
                wait.page_resource,
            ]);
        }
        rows
    }

    /// sys.dm_exec_session_wait_stats: each open session's waits since it opened, by wait
    /// type; a session that has not waited has no rows.
    pub(crate) fn dm_exec_session_wait_stats(&self) -> ViewRows {
        let cols = columns(&[
            "session_id",
            "wait_type",
            "waiting_tasks_count",
            "wait_time_ms",
            "max_wait_time_ms",
            "signal_wait_time_ms",
        ]);
        let mut open: std::collections::BTreeSet<u16> =
            self.server.sessions.lock().keys().copied().collect();
        let system = self.server.instance.system_tasks.snapshot();
        open.extend(system.iter().map(|task| task.identity.session_id));
        let rows = self
            .server
            .instance
            .waits
            .session_snapshot()
            .into_iter()
            .filter(|row| open.contains(&row.session_id))
            .map(|row| {
                vec![
                    Value::SmallInt(row.session_id as i16),
                    Value::Text(row.wait.wait_type),
                    big(row.wait.waiting_tasks_count),
                    big(row.wait.wait_time_ms),
                    big(row.wait.max_wait_time_ms),
                    big(row.wait.signal_wait_time_ms),
                ]
            })
            .collect();
        (cols, rows)
    }
}

/// A user session's sysprocesses status: sleeping without a request; with one, its request's
/// status as sys.dm_exec_requests shows it.
fn user_status(info: &SessionInfo, waits: bool, task_state: Option<&&'static str>) -> &'static str {
    if info.request.is_none() {
        return "sleeping";
    }
    request_status(task_state.copied(), waits)
}
