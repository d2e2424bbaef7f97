//! System views that FROM can name (`sys.<view>`): each is built, when a query reads it, from
//! the engine's real state, with SQL Server's column names (reference §10.4).
//!
//! This module dispatches a `sys.` name to its builder and holds the database-level views
//! (sys.database_files, sys.filegroups, sys.dm_db_log_info); sys.databases is in
//! [`crate::sysdatabases`], the catalog views are in [`crate::catalogviews`], the DMVs, sys.traces and sys.fn_trace_gettable in
//! [`crate::dmv`].
//!
//! Deviations: each view has the columns listed in its function, not every column SQL Server
//! has (file_guid, the LSN columns and the like are left out until something fills them).

use crate::session::Session;
use crate::value::Result;
use engine::database::DatabaseFile;
use engine::filegroup::Growth;
use engine::record::Value;

/// A system view's columns and rows.
pub type ViewRows = (Vec<String>, Vec<Vec<Value>>);

pub(crate) fn columns(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_string()).collect()
}

pub(crate) fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

impl Session {
    /// The rows of `sys.<name>` (a view, or a table-valued function given `args`), or None
    /// if there is no such view.
    pub fn system_view(&self, name: &str, args: &[Value]) -> Option<Result<ViewRows>> {
        match name.to_lowercase().as_str() {
            "databases" => Some(Ok(self.sys_databases())),
            "database_files" => Some(Ok(self.sys_database_files())),
            "filegroups" => Some(Ok(self.sys_filegroups())),
            "master_files" => Some(Ok(self.sys_master_files())),
            "data_spaces" => Some(Ok(self.sys_data_spaces())),
            "schemas" => Some(Ok(self.sys_schemas())),
            "objects" => Some(self.sys_objects()),
            "all_objects" => Some(self.sys_all_objects()),
            "system_objects" => Some(Ok(self.sys_system_objects())),
            "tables" => Some(self.sys_tables()),
            "columns" => Some(self.sys_columns()),
            "types" => Some(Ok(self.sys_types())),
            "indexes" => Some(self.sys_indexes()),
            "partitions" => Some(self.sys_partitions()),
            "allocation_units" => Some(self.sys_allocation_units(false)),
            "system_internals_allocation_units" => Some(self.sys_allocation_units(true)),
            "dm_os_wait_stats" => Some(Ok(self.dm_os_wait_stats())),
            "dm_os_waiting_tasks" => Some(Ok(self.dm_os_waiting_tasks())),
            "dm_tran_locks" => Some(Ok(self.dm_tran_locks())),
            "dm_tran_database_transactions" => Some(Ok(self.dm_tran_database_transactions())),
            "dm_tran_active_transactions" => Some(Ok(self.dm_tran_active_transactions())),
            "dm_tran_session_transactions" => Some(Ok(self.dm_tran_session_transactions())),
            "dm_os_latch_stats" => Some(Ok(self.dm_os_latch_stats())),
            "dm_os_buffer_descriptors" => Some(Ok(self.dm_os_buffer_descriptors())),
            "dm_os_spinlock_stats" => Some(Ok(self.dm_os_spinlock_stats())),
            "dm_os_schedulers" => Some(Ok(self.dm_os_schedulers())),
            "dm_os_tasks" => Some(Ok(self.dm_os_tasks())),
            "dm_os_performance_counters" => Some(Ok(self.dm_os_performance_counters())),
            "dm_exec_sessions" => Some(Ok(self.dm_exec_sessions())),
            "dm_exec_connections" => Some(Ok(self.dm_exec_connections())),
            "dm_exec_requests" => Some(Ok(self.dm_exec_requests())),
            "dm_io_virtual_file_stats" => Some(Ok(self.dm_io_virtual_file_stats(args))),
            "dm_io_pending_io_requests" => Some(Ok(self.dm_io_pending_io_requests())),
            "dm_os_volume_stats" => Some(Ok(self.dm_os_volume_stats(args))),
            "dm_exec_sql_text" => Some(Ok(self.dm_exec_sql_text(args))),
            "dm_exec_input_buffer" => Some(Ok(self.dm_exec_input_buffer(args))),
            "fn_virtualfilestats" => Some(Ok(self.fn_virtualfilestats(args))),
            "dm_db_log_space_usage" => Some(Ok(self.dm_db_log_space_usage())),
            "dm_db_file_space_usage" => Some(self.dm_db_file_space_usage()),
            "dm_db_partition_stats" => Some(self.dm_db_partition_stats()),
            "dm_db_index_usage_stats" => Some(Ok(self.dm_db_index_usage_stats())),
            "dm_server_services" => Some(Ok(self.dm_server_services())),
            "dm_os_host_info" => Some(Ok(self.dm_os_host_info())),
            "dm_os_sys_info" => Some(Ok(self.dm_os_sys_info())),
            "dm_os_process_memory" => Some(self.dm_os_process_memory()),
            "dm_os_sys_memory" => Some(self.dm_os_sys_memory()),
            "dm_os_memory_clerks" => Some(Ok(self.dm_os_memory_clerks())),
            "sysprocesses" => Some(Ok(self.sys_sysprocesses())),
            "dm_exec_session_wait_stats" => Some(Ok(self.dm_exec_session_wait_stats())),
            "configurations" => Some(Ok(self.sys_configurations())),
            "dm_db_database_page_allocations" => Some(self.dm_db_database_page_allocations(args)),
            "dm_db_index_physical_stats" => Some(self.dm_db_index_physical_stats(args)),
            "dm_db_index_operational_stats" => Some(self.dm_db_index_operational_stats(args)),
            "traces" => Some(Ok(self.sys_traces())),
            "fn_trace_gettable" => Some(self.fn_trace_gettable(args)),
            "dm_db_log_info" => Some(Ok(self.dm_db_log_info(args.first()))),
            "dm_db_log_stats" => Some(Ok(self.dm_db_log_stats(args))),
            "dm_db_page_info" => Some(self.dm_db_page_info(args)),
            "fn_pagerescracker" => Some(Ok(self.fn_page_res_cracker(args))),
            "server_event_sessions" => Some(Ok(self.server_event_sessions())),
            "server_event_session_events" => Some(Ok(self.server_event_session_events())),
            "server_event_session_actions" => Some(Ok(self.server_event_session_actions())),
            "server_event_session_targets" => Some(Ok(self.server_event_session_targets())),
            "server_event_session_fields" => Some(Ok(self.server_event_session_fields())),
            "dm_xe_sessions" => Some(Ok(self.dm_xe_sessions())),
            "dm_xe_session_targets" => Some(Ok(self.dm_xe_session_targets())),
            "dm_xe_session_events" => Some(Ok(self.dm_xe_session_events())),
            "dm_xe_packages" => Some(Ok(self.dm_xe_packages())),
            "dm_xe_objects" => Some(Ok(self.dm_xe_objects())),
            "dm_xe_object_columns" => Some(Ok(self.dm_xe_object_columns())),
            "dm_xe_map_values" => Some(Ok(self.dm_xe_map_values())),
            "fn_xe_file_target_read_file" => Some(self.fn_xe_file_target_read_file(args)),
            _ => None,
        }
    }

    /// sys.dm_db_log_info(database_id): one row per VLF of the database's log (reference §5.3),
    /// from the log files' real layout. A NULL or unknown id gives no rows.
    fn dm_db_log_info(&self, database_id: Option<&Value>) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "file_id",
            "vlf_begin_offset",
            "vlf_size_mb",
            "vlf_sequence_number",
            "vlf_active",
            "vlf_status",
            "vlf_parity",
            "vlf_first_lsn",
            "vlf_create_lsn",
        ]);
        // NULL or DEFAULT: the current database (before, no rows).
        let db = match database_id.and_then(crate::value::as_i64) {
            Some(id) => self.server.database_by_id(id),
            None => Some(self.catalog_db()),
        };
        let Some(db) = db else { return (cols, Vec::new()) };
        let rows = db
            .log()
            .log_info()
            .into_iter()
            .map(|vlf| {
                vec![
                    Value::Int(i32::from(vlf.database_id)),
                    Value::SmallInt(vlf.file_id as i16),
                    Value::BigInt(vlf.vlf_begin_offset as i64),
                    Value::Float((vlf.vlf_size_mb * 100.0).round() / 100.0),
                    Value::BigInt(i64::from(vlf.vlf_sequence_number)),
                    Value::Bit(vlf.vlf_active),
                    Value::Int(i32::from(vlf.vlf_status)),
                    Value::TinyInt(vlf.vlf_parity),
                    Value::Text(vlf.vlf_first_lsn),
                    Value::Text(vlf.vlf_create_lsn),
                ]
            })
            .collect();
        (cols, rows)
    }

    fn sys_database_files(&self) -> ViewRows {
        let cols = columns(&DATABASE_FILE_COLUMNS);
        let rows = self.catalog_db().database_files().iter().map(database_file_row).collect();
        (cols, rows)
    }

    pub(crate) fn sys_filegroups(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "data_space_id",
            "type",
            "type_desc",
            "is_default",
            "is_system",
            "is_read_only",
            "is_autogrow_all_files",
        ]);
        let rows = self
            .db()
            .filegroups()
            .into_iter()
            .map(|(id, name, is_default, autogrow_all_files, _)| {
                vec![
                    Value::Text(name),
                    Value::Int(i32::from(id)),
                    text("FG"),
                    text("ROWS_FILEGROUP"),
                    Value::Bit(is_default),
                    Value::Bit(false),
                    Value::Bit(false),
                    Value::Bit(autogrow_all_files),
                ]
            })
            .collect();
        (cols, rows)
    }
}

/// sys.database_files' columns (sys.master_files adds database_id before them).
pub(crate) const DATABASE_FILE_COLUMNS: [&str; 12] = [
    "file_id",
    "type",
    "type_desc",
    "data_space_id",
    "name",
    "physical_name",
    "state",
    "state_desc",
    "size",
    "max_size",
    "growth",
    "is_percent_growth",
];

/// max_size: -1 unlimited, else pages; a log's unlimited shows as 2 TB (268435456), as SQL
/// Server shows it. growth: pages, or whole percent.
pub(crate) fn database_file_row(file: &DatabaseFile) -> Vec<Value> {
    const LOG_UNLIMITED_PAGES: i32 = 268_435_456;
    let max_size = match (file.max_size_pages, file.is_log) {
        (Some(pages), _) => i32::try_from(pages).unwrap_or(i32::MAX),
        (None, true) => LOG_UNLIMITED_PAGES,
        (None, false) => -1,
    };
    let (growth, is_percent) = match file.growth {
        Growth::None => (0, false),
        Growth::Pages(pages) => (i32::try_from(pages).unwrap_or(i32::MAX), false),
        Growth::Percent(pct) => (i32::try_from(pct).unwrap_or(i32::MAX), true),
    };
    vec![
        Value::Int(i32::from(file.file_id)),
        Value::TinyInt(u8::from(file.is_log)),
        text(if file.is_log { "LOG" } else { "ROWS" }),
        Value::Int(i32::from(file.data_space_id)),
        text(&file.logical_name),
        text(&file.path.display().to_string()),
        Value::TinyInt(0),
        text("ONLINE"),
        Value::Int(i32::try_from(file.size_pages).unwrap_or(i32::MAX)),
        Value::Int(max_size),
        Value::Int(growth),
        Value::Bit(is_percent),
    ]
}
