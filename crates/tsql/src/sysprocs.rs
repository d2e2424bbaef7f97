//! System procedures (reference §10.1 and SQL Server's documentation of each): run in
//! place of a catalog lookup when EXEC names them, from the instance's and the databases'
//! real state.
//!
//! Here: sp_cycle_errorlog, xp_readerrorlog and sp_readerrorlog (LogDate, ProcessInfo, Text;
//! log number, log type, two search strings, start and end times, sort order), sp_helpdb,
//! sp_helpfile, sp_helpindex, sp_spaceused (database or table), sp_who and sp_who2; sp_help
//! is in [`crate::sphelp`], sp_configure in [`crate::configure`].
//!
//! Deviations: there is no SQL Server Agent log (log type 2 gives no rows); sizes in
//! sp_spaceused come from the allocation units' IAM chains and page headers, read at the time
//! of the call (SQL Server reads metadata counts); sp_who shows every session as login `sa`;
//! sp_who2's CPUTime and DiskIO are sys.sysprocesses' cpu and physical_io (see
//! [`crate::sysprocesses`] for what they count).

use crate::procs::ExecArg;
use crate::server::{Output, ResultSet};
use crate::session::{Failure, Session};
use crate::sysviews::{columns, text};
use crate::value;
use engine::SqlError;
use engine::database::{Database, FileSpace};
use engine::filegroup::Growth;
use engine::record::{SqlType, Value};

/// The system procedures this module runs.
pub const SYSTEM_PROCEDURES: [&str; 14] = [
    "sp_columns",
    "sp_configure",
    "sp_help",
    "sp_cycle_errorlog",
    "xp_readerrorlog",
    "sp_readerrorlog",
    "sp_helpdb",
    "sp_helpfile",
    "sp_helpfilegroup",
    "sp_helpindex",
    "sp_lock",
    "sp_spaceused",
    "sp_who",
    "sp_who2",
];

const DBCC_COMPLETED: &str =
    "DBCC execution completed. If DBCC printed error messages, contact your system administrator.";

/// Whether `name` (possibly `sys.`- or `master..`-qualified) is a system procedure here.
pub fn is_system_procedure(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name).trim_matches(['[', ']']);
    SYSTEM_PROCEDURES.iter().any(|p| p.eq_ignore_ascii_case(last))
}

fn kb(pages: i64) -> String {
    format!("{} KB", pages * 8)
}

/// A file's size, maximum size and growth as sp_helpfile and sp_helpfilegroup show them.
fn size_texts(file: &engine::database::DatabaseFile) -> (Value, Value, Value) {
    let maxsize = match file.max_size_pages {
        None => "Unlimited".to_string(),
        Some(pages) => kb(i64::from(pages)),
    };
    let growth = match file.growth {
        Growth::None => "0 KB".to_string(),
        Growth::Pages(pages) => kb(i64::from(pages)),
        Growth::Percent(pct) => format!("{pct}%"),
    };
    (Value::Text(kb(i64::from(file.size_pages))), Value::Text(maxsize), Value::Text(growth))
}

fn mb_text(pages: i64) -> String {
    format!("{:.2} MB", pages as f64 / 128.0)
}

/// Space used by a set of allocation units: (reserved, used, data) pages, data being the
/// leaf pages of `data_units` (sp_spaceused, sys.dm_db_partition_stats).
pub(crate) fn unit_space(
    db: &Database,
    au_ids: &[u64],
    data_units: &[u64],
) -> Result<(i64, i64, i64), SqlError> {
    let (mut reserved, mut used, mut data) = (0i64, 0i64, 0i64);
    for au_id in au_ids {
        for page in db.unit_pages(*au_id)? {
            reserved += 1;
            if !page.is_allocated {
                continue;
            }
            used += 1;
            if data_units.contains(au_id) && !page.is_iam {
                let header = engine::page::PageHeader::read(&db.page_copy(page.page)?[..]);
                data += i64::from(header.level == 0);
            }
        }
    }
    Ok((reserved, used, data))
}

impl Session {
    /// Runs a system procedure; None if `name` is not one.
    pub(crate) fn run_system_procedure(
        &mut self,
        name: &str,
        args: &[ExecArg],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Option<Result<i32, Failure>> {
        if !is_system_procedure(name) {
            return None;
        }
        let proc_name =
            name.rsplit('.').next().unwrap_or(name).trim_matches(['[', ']']).to_lowercase();
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            let value = match &arg.value {
                Some(expr) => match self.eval_stmt(expr, line) {
                    Ok(v) => v,
                    Err(failure) => return Some(Err(failure)),
                },
                None => Value::Null,
            };
            values.push(value);
        }
        let result = match proc_name.as_str() {
            "sp_cycle_errorlog" => self.sp_cycle_errorlog(out),
            "xp_readerrorlog" | "sp_readerrorlog" => self.xp_readerrorlog(&values, out),
            "sp_helpdb" => self.sp_helpdb(values.first(), out),
            "sp_helpfile" => self.sp_helpfile(values.first(), out),
            "sp_helpfilegroup" => self.sp_helpfilegroup(values.first(), out),
            "sp_helpindex" => self.sp_helpindex(values.first(), out),
            "sp_help" => self.sp_help(values.first(), out),
            "sp_spaceused" => self.sp_spaceused(values.first(), out),
            "sp_columns" => self.sp_columns(&values, out),
            "sp_configure" => self.sp_configure(&values, out),
            "sp_who2" => self.sp_who2(values.first(), out),
            "sp_lock" => self.sp_lock(&values, out),
            _ => self.sp_who(values.first(), out),
        };
        Some(result.map(|_| 0).map_err(|error| self.fail(error, line)))
    }

    fn sp_cycle_errorlog(&self, out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        self.server.instance.cycle_errorlog().map_err(|e| {
            SqlError::new(17049, 16, 1, format!("Unable to cycle error log file: {e}"))
        })?;
        out(Output::Message(DBCC_COMPLETED.into()));
        Ok(())
    }

    /// xp_readerrorlog [log_no], [log_type], [search1], [search2], [start], [end], [sort]; the
    /// two search strings are ANDed, case-insensitively.
    fn xp_readerrorlog(&self, args: &[Value], out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let log_no = args.first().and_then(value::as_i64).unwrap_or(0);
        let log_type = args.get(1).and_then(value::as_i64).unwrap_or(1);
        let search: Vec<String> = args
            .iter()
            .skip(2)
            .take(2)
            .filter(|v| !matches!(v, Value::Null))
            .map(|v| value::display(v).to_lowercase())
            .collect();
        let bound = |i: usize| -> Result<Option<Value>, SqlError> {
            match args.get(i) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => Ok(Some(value::convert(v, SqlType::DateTime)?)),
            }
        };
        let (start, end) = (bound(4)?, bound(5)?);
        let descending =
            args.get(6).is_some_and(|v| value::display(v).eq_ignore_ascii_case("desc"));
        let entries = if log_type == 2 {
            Vec::new()
        } else {
            let not_found = || {
                SqlError::new(
                    22004,
                    16,
                    1,
                    "xp_readerrorlog() returned error 2, 'The system cannot find the file specified.'",
                )
            };
            let log_no = u32::try_from(log_no).map_err(|_| not_found())?;
            self.server.instance.errorlog.read(log_no).map_err(|_| not_found())?
        };
        let mut rows = Vec::new();
        for entry in entries {
            let lower = entry.text.to_lowercase();
            if !search.iter().all(|s| lower.contains(s.as_str())) {
                continue;
            }
            let date = value::convert(&Value::Text(entry.log_date), SqlType::DateTime)?;
            let after_start =
                start.as_ref().is_none_or(|s| value::compare(&date, s).is_ok_and(|o| o.is_ge()));
            let before_end =
                end.as_ref().is_none_or(|e| value::compare(&date, e).is_ok_and(|o| o.is_le()));
            if after_start && before_end {
                rows.push(vec![date, Value::Text(entry.process_info), Value::Text(entry.text)]);
            }
        }
        if descending {
            rows.reverse();
        }
        out(Output::Rows(ResultSet {
            columns: columns(&["LogDate", "ProcessInfo", "Text"]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    /// The database an argument names, or the current one; error 15010 if there is none.
    fn named_database(&self, name: Option<&Value>) -> Result<std::sync::Arc<Database>, SqlError> {
        let name = match name {
            None | Some(Value::Null) => self.db().name.clone(),
            Some(v) => value::display(v),
        };
        self.server.database(&name).ok_or_else(|| {
            SqlError::new(15010, 16, 1, format!("The database '{name}' does not exist. Supply a valid database name. To see available databases, use sys.databases."))
        })
    }

    /// sp_helpdb [name]: a row per database; with a name, that database and then its files.
    fn sp_helpdb(&self, name: Option<&Value>, out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let databases = match name {
            None | Some(Value::Null) => {
                let mut all = self.server.databases();
                all.sort_by_key(|d| d.name.to_lowercase());
                all
            }
            Some(_) => vec![self.named_database(name)?],
        };
        let rows = databases
            .iter()
            .map(|db| {
                let pages: i64 = db.database_files().iter().map(|f| i64::from(f.size_pages)).sum();
                vec![
                    Value::Text(db.name.clone()),
                    Value::Text(format!("{:>13}", mb_text(pages))),
                    text("sa"),
                    Value::SmallInt(db.database_id as i16),
                    // CONVERT(nvarchar(11), crdate): 'Dec  7 2026'.
                    Value::Text(db.create_date().format("%b %e %Y").to_string()),
                    Value::Text(format!(
                        // Only what extentdb has: no statistics, no version stamp or sort order.
                        "Status=ONLINE, Updateability=READ_WRITE, UserAccess=MULTI_USER, Recovery={}, Collation={}",
                        db.recovery_model_desc(),
                        engine::record::COLLATION_NAME
                    )),
                    Value::TinyInt(crate::sysdatabases::COMPATIBILITY_LEVEL),
                ]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "name",
                "db_size",
                "owner",
                "dbid",
                "created",
                "status",
                "compatibility_level",
            ]),
            rows,
            types: Vec::new(),
        }));
        if !matches!(name, None | Some(Value::Null)) {
            out(Output::Rows(self.help_files(&databases[0], None)));
        }
        Ok(())
    }

    /// sp_helpfile [name]: the current database's files (or the one named).
    fn sp_helpfile(
        &self,
        name: Option<&Value>,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let only = match name {
            None | Some(Value::Null) => None,
            Some(v) => Some(value::display(v)),
        };
        out(Output::Rows(self.help_files(self.db(), only.as_deref())));
        Ok(())
    }

    /// sp_helpfilegroup [name]: each filegroup of the current database with its file count;
    /// with a name, that filegroup, then a row per file in it. An unknown name is 5014 (the
    /// engine's message for a filegroup that is not there: SQL Server's number for it in this
    /// procedure is not in our sources).
    fn sp_helpfilegroup(
        &self,
        name: Option<&Value>,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.db();
        let mut filegroups = db.filegroups();
        filegroups.sort_by_key(|fg| fg.0);
        let only = name.filter(|v| !matches!(v, Value::Null)).map(value::display);
        if let Some(only) = &only {
            filegroups.retain(|fg| fg.1.eq_ignore_ascii_case(only));
            if filegroups.is_empty() {
                return Err(SqlError::filegroup_missing(only, &db.name));
            }
        }
        let rows = filegroups
            .iter()
            .map(|(id, name, _, _, files)| {
                let count = i32::try_from(files.len()).unwrap_or(i32::MAX);
                vec![Value::Text(name.clone()), Value::SmallInt(*id as i16), Value::Int(count)]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&["groupname", "groupid", "filecount"]),
            rows,
            types: Vec::new(),
        }));
        let Some((fg_id, ..)) = filegroups.first().filter(|_| only.is_some()) else {
            return Ok(());
        };
        let rows = db
            .database_files()
            .into_iter()
            .filter(|f| !f.is_log && f.data_space_id == *fg_id)
            .map(|f| {
                let (size, maxsize, growth) = size_texts(&f);
                vec![
                    Value::Text(f.logical_name.clone()),
                    Value::SmallInt(f.file_id as i16),
                    Value::Text(f.path.display().to_string()),
                    size,
                    maxsize,
                    growth,
                ]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&["file_in_group", "fileid", "filename", "size", "maxsize", "growth"]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    fn help_files(&self, db: &Database, only: Option<&str>) -> ResultSet {
        let filegroups: std::collections::BTreeMap<u16, String> =
            db.filegroups().into_iter().map(|(id, name, ..)| (id, name)).collect();
        let rows = db
            .database_files()
            .into_iter()
            .filter(|f| only.is_none_or(|n| n.eq_ignore_ascii_case(&f.logical_name)))
            .map(|f| {
                let (size, maxsize, growth) = size_texts(&f);
                let filegroup = if f.is_log {
                    Value::Null
                } else {
                    filegroups.get(&f.data_space_id).map_or(Value::Null, |n| Value::Text(n.clone()))
                };
                vec![
                    Value::Text(f.logical_name.clone()),
                    Value::SmallInt(f.file_id as i16),
                    Value::Text(f.path.display().to_string()),
                    filegroup,
                    size,
                    maxsize,
                    growth,
                    text(if f.is_log { "log only" } else { "data only" }),
                ]
            })
            .collect();
        ResultSet {
            columns: columns(&[
                "name",
                "fileid",
                "filename",
                "filegroup",
                "size",
                "maxsize",
                "growth",
                "usage",
            ]),
            rows,
            types: Vec::new(),
        }
    }

    /// The table a system procedure's object argument names (`[dbo].[t]`, `#t`): 15009 if the
    /// current database has none.
    fn procedure_table(
        &self,
        name: &str,
    ) -> Result<std::sync::Arc<engine::catalog::Table>, SqlError> {
        let short = name.rsplit('.').next().unwrap_or(name).trim_matches(['[', ']']);
        let db = self.db();
        db.catalog()?.table(&self.catalog_name(short)?).ok_or_else(|| {
            SqlError::new(15009, 16, 1, format!("The object '{name}' does not exist in database '{}' or is invalid for this operation.", db.name))
        })
    }

    /// sp_helpindex 'table': each index's name, description (clustered or nonclustered,
    /// unique, primary key or unique key, and its filegroup) and key columns; a message when
    /// the table has none (a heap without nonclustered indexes); 15009 for no such table.
    pub(crate) fn sp_helpindex(
        &self,
        object: Option<&Value>,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.db();
        let name = object.map(value::display).unwrap_or_default();
        let table = self.procedure_table(&name)?;
        let mut rows = Vec::new();
        for index in table.indexes.iter().filter(|i| i.kind != engine::catalog::IndexKind::Heap) {
            let mut description = vec![index.kind.desc().to_lowercase()];
            if index.unique {
                description.push("unique".into());
            }
            if index.primary_key {
                description.push("primary key".into());
            } else if index.is_unique_constraint() {
                description.push("unique key".into());
            }
            let filegroup = db.unit_filegroup_name(index.au_id).unwrap_or_else(|| "PRIMARY".into());
            let keys: Vec<String> =
                index.key_columns.iter().map(|&c| table.columns[c].column.name.clone()).collect();
            rows.push(vec![
                Value::Text(index.name.clone()),
                Value::Text(format!("{} located on {filegroup}", description.join(", "))),
                Value::Text(keys.join(", ")),
            ]);
        }
        if rows.is_empty() {
            out(Output::Message(format!(
                "The object '{name}' does not have any indexes, or you do not have permissions."
            )));
            return Ok(());
        }
        out(Output::Rows(ResultSet {
            columns: columns(&["index_name", "index_description", "index_keys"]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    /// sp_spaceused: the database's size and unallocated space, then reserved, data, index and
    /// unused space over every allocation unit; or, given a table, its rows and space.
    fn sp_spaceused(
        &self,
        object: Option<&Value>,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.db();
        let catalog = db.catalog()?;
        if let Some(object) = object.filter(|v| !matches!(v, Value::Null)) {
            let table = self.procedure_table(&value::display(object))?;
            let au_ids = table.au_ids();
            let (reserved, used, data) = unit_space(db, &au_ids, &au_ids[..1])?;
            let rows = table.stored_row_count(db)?;
            out(Output::Rows(ResultSet {
                columns: columns(&["name", "rows", "reserved", "data", "index_size", "unused"]),
                rows: vec![vec![
                    Value::Text(table.name.clone()),
                    Value::Text(format!("{rows:>20}")),
                    Value::Text(kb(reserved)),
                    Value::Text(kb(data)),
                    Value::Text(kb(used - data)),
                    Value::Text(kb(reserved - used)),
                ]],
                types: Vec::new(),
            }));
            return Ok(());
        }
        let files = db.database_files();
        let size_pages: i64 = files.iter().map(|f| i64::from(f.size_pages)).sum();
        let space: Vec<FileSpace> = db.file_space();
        let free_pages: i64 = space.iter().map(|f| i64::from(f.free_extents) * 8).sum();
        out(Output::Rows(ResultSet {
            columns: columns(&["database_name", "database_size", "unallocated space"]),
            rows: vec![vec![
                Value::Text(db.name.clone()),
                Value::Text(mb_text(size_pages)),
                Value::Text(mb_text(free_pages)),
            ]],
            types: Vec::new(),
        }));
        let all: Vec<u64> = db.allocation_units().into_iter().map(|(id, _)| id).collect();
        let base: Vec<u64> = catalog.tables().iter().map(|t| t.indexes[0].au_id).collect();
        let (reserved, used, data) = unit_space(db, &all, &base)?;
        out(Output::Rows(ResultSet {
            columns: columns(&["reserved", "data", "index_size", "unused"]),
            rows: vec![vec![
                Value::Text(kb(reserved)),
                Value::Text(kb(data)),
                Value::Text(kb(used - data)),
                Value::Text(kb(reserved - used)),
            ]],
            types: Vec::new(),
        }));
        Ok(())
    }

    /// sp_columns @table_name [, @table_owner, @table_qualifier, @column_name]: the ODBC
    /// catalog call for a table's columns (names may use % and _ as LIKE patterns).
    fn sp_columns(&self, args: &[Value], out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let pattern = |i: usize| match args.get(i) {
            None | Some(Value::Null) => "%".to_string(),
            Some(v) => value::display(v),
        };
        let (table_pattern, column_pattern) = (pattern(0), pattern(3));
        let db = self.db();
        let mut tables = db.catalog()?.tables();
        tables.sort_by_key(|t| t.name.to_lowercase());
        let mut rows = Vec::new();
        for table in tables.iter().filter(|t| crate::query::like_pattern(&t.name, &table_pattern)) {
            for (i, def) in table.columns.iter().enumerate() {
                if !crate::query::like_pattern(&def.column.name, &column_pattern) {
                    continue;
                }
                let (type_name, _, max_length, precision, scale) =
                    crate::catalogviews::type_info(def.column.sql_type);
                let (odbc_type, precision) = odbc_type(def.column.sql_type, precision, max_length);
                let nullable = def.column.nullable;
                rows.push(vec![
                    Value::Text(db.name.clone()),
                    text("dbo"),
                    Value::Text(table.name.clone()),
                    Value::Text(def.column.name.clone()),
                    Value::SmallInt(odbc_type),
                    Value::Text(if def.identity.is_some() {
                        format!("{type_name} identity")
                    } else {
                        type_name.to_string()
                    }),
                    Value::Int(precision),
                    Value::Int(i32::from(max_length)),
                    Value::SmallInt(i16::from(scale)),
                    Value::SmallInt(if matches!(odbc_type, 2..=8 | -5 | -6) { 10 } else { 0 }),
                    Value::SmallInt(i16::from(nullable)),
                    Value::Null,
                    def.default_sql.clone().map_or(Value::Null, Value::Text),
                    Value::SmallInt(odbc_type),
                    Value::Null,
                    Value::Int(i32::from(max_length)),
                    Value::Int(i as i32 + 1),
                    text(if nullable { "YES" } else { "NO" }),
                    Value::TinyInt(0),
                ]);
            }
        }
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "TABLE_QUALIFIER",
                "TABLE_OWNER",
                "TABLE_NAME",
                "COLUMN_NAME",
                "DATA_TYPE",
                "TYPE_NAME",
                "PRECISION",
                "LENGTH",
                "SCALE",
                "RADIX",
                "NULLABLE",
                "REMARKS",
                "COLUMN_DEF",
                "SQL_DATA_TYPE",
                "SQL_DATETIME_SUB",
                "CHAR_OCTET_LENGTH",
                "ORDINAL_POSITION",
                "IS_NULLABLE",
                "SS_DATA_TYPE",
            ]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    /// The sessions sp_who and sp_who2 list: every one, or the one `spid` names.
    fn who(&self, spid: Option<&Value>) -> Vec<Who> {
        let only = spid.and_then(value::as_i64);
        let waits: std::collections::BTreeMap<u16, Option<u16>> = self
            .server
            .instance
            .waiting_tasks
            .snapshot()
            .into_iter()
            .map(|t| (t.session_id, t.blocking_session_id))
            .collect();
        let names: std::collections::BTreeMap<u16, String> =
            self.server.databases().into_iter().map(|d| (d.database_id, d.name.clone())).collect();
        let sessions = self.server.sessions.lock().clone();
        let mut found = Vec::new();
        for (id, info) in sessions {
            if only.is_some_and(|o| o != i64::from(id)) {
                continue;
            }
            let database_id =
                if id == self.spid { self.db().database_id } else { info.database_id };
            let (status, command) = match info.command() {
                Some(command) if waits.contains_key(&id) => ("suspended", command),
                Some(command) => ("runnable", command),
                None => ("sleeping", "AWAITING COMMAND".to_string()),
            };
            found.push(Who {
                spid: id,
                status,
                login_name: info.login_name,
                host_name: info.host_name,
                program_name: info.program_name,
                blocked_by: waits.get(&id).copied().flatten(),
                database: names.get(&database_id).cloned(),
                command,
                last_batch: self.server.datetime_of(info.last_request_start_time),
                cpu_ms: (info.used.cpu_time_ns
                    + info.request.as_ref().map_or(0, crate::dmv::request_cpu_ns))
                    / 1_000_000,
                disk_io: info.used.reads,
            });
        }
        // The system sessions (status background), before the user sessions as in SQL Server.
        let mut system = Vec::new();
        for task in self.server.instance.system_tasks.snapshot() {
            let id = task.identity.session_id;
            if only.is_some_and(|o| o != i64::from(id)) {
                continue;
            }
            let database_id = task.identity.database_id.max(1);
            system.push(Who {
                spid: id,
                status: "background",
                login_name: "sa".into(),
                host_name: None,
                program_name: String::new(),
                blocked_by: None,
                database: names.get(&database_id).cloned(),
                command: task.identity.command.to_string(),
                last_batch: self.server.datetime_of(task.started),
                cpu_ms: engine::session::thread_cpu_ns_of(task.thread_id).unwrap_or(0) / 1_000_000,
                disk_io: 0,
            });
        }
        system.extend(found);
        system
    }

    /// sp_who [spid]: every session (or one), with what it runs and the session blocking it.
    fn sp_who(&self, spid: Option<&Value>, out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let rows = self
            .who(spid)
            .into_iter()
            .map(|w| {
                vec![
                    Value::SmallInt(w.spid as i16),
                    Value::SmallInt(0),
                    text(w.status),
                    Value::Text(w.login_name),
                    Value::Text(w.host_name.unwrap_or_default()),
                    Value::Text(format!("{:>5}", w.blocked_by.unwrap_or(0))),
                    w.database.map_or(Value::Null, Value::Text),
                    Value::Text(w.command),
                    Value::Int(0),
                ]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "spid",
                "ecid",
                "status",
                "loginame",
                "hostname",
                "blk",
                "dbname",
                "cmd",
                "request_id",
            ]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    /// sp_lock [spid1 [, spid2]]: the lock table's requests (sys.dm_tran_locks') in sp_lock's
    /// columns: TAB for an object lock (IndId 0), HBT for one on a nonclustered index's unit,
    /// KEY with the index's id and the key's hash, Status GRANT, WAIT or CNVT. Deviation: no
    /// DB lock per session (the engine has none).
    fn sp_lock(&self, spids: &[Value], out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let wanted: Vec<i64> = spids.iter().filter_map(crate::value::as_i64).collect();
        let mut rows = Vec::new();
        for request in self.server.instance.locks.requests_snapshot() {
            if !wanted.is_empty() && !wanted.contains(&i64::from(request.spid)) {
                continue;
            }
            let (kind, database_id, au_id, resource) = match request.resource {
                engine::lock::LockResource::Object { database_id, au_id } => {
                    ("TAB", database_id, au_id, String::new())
                }
                engine::lock::LockResource::Key { database_id, au_id, hash } => {
                    ("KEY", database_id, au_id, format!("({hash:012x})"))
                }
            };
            let (object_id, index_id) = self.unit_owner(database_id, au_id).unwrap_or((0, 0));
            // An object lock on a nonclustered index's own unit is a HOBT lock (HBT).
            let kind = if kind == "TAB" && index_id > 1 { "HBT" } else { kind };
            let status = match request.status {
                engine::lock::RequestStatus::Convert => "CNVT",
                other => other.name(),
            };
            rows.push(vec![
                Value::SmallInt(request.spid as i16),
                Value::SmallInt(database_id as i16),
                Value::Int(object_id),
                Value::SmallInt(if kind == "TAB" { 0 } else { index_id as i16 }),
                text(kind),
                Value::Text(resource),
                text(request.mode.name()),
                text(status),
            ]);
        }
        let columns =
            columns(&["spid", "dbid", "ObjId", "IndId", "Type", "Resource", "Mode", "Status"]);
        out(Output::Rows(ResultSet { columns, rows, types: Vec::new() }));
        Ok(())
    }

    /// sp_who2 [spid]: sp_who's sessions in sp_who2's columns, with the start of each
    /// session's last batch (MM/DD HH:MM:SS) and its program; CPUTime and DiskIO are its CPU
    /// in ms and the pages it read, as sys.sysprocesses' cpu and physical_io.
    fn sp_who2(&self, spid: Option<&Value>, out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let dotted = |value: Option<String>| match value {
            Some(v) if !v.is_empty() => v,
            _ => "  .".to_string(),
        };
        let rows = self
            .who(spid)
            .into_iter()
            .map(|w| {
                let last_batch = match &w.last_batch {
                    Value::DateTime(..) => {
                        let full = value::display(&w.last_batch);
                        format!("{}/{} {}", &full[5..7], &full[8..10], &full[11..19])
                    }
                    _ => String::new(),
                };
                vec![
                    Value::Text(format!("{:>5}", w.spid)),
                    text(w.status),
                    Value::Text(w.login_name),
                    Value::Text(dotted(w.host_name)),
                    Value::Text(dotted(w.blocked_by.map(|b| format!("{b:>5}")))),
                    w.database.map_or(Value::Null, Value::Text),
                    Value::Text(w.command),
                    crate::dmv::int(w.cpu_ms),
                    crate::dmv::int(w.disk_io),
                    Value::Text(last_batch),
                    Value::Text(w.program_name),
                    Value::Text(format!("{:>5}", w.spid)),
                    Value::Text(format!("{:>5}", 0)),
                ]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "SPID",
                "Status",
                "Login",
                "HostName",
                "BlkBy",
                "DBName",
                "Command",
                "CPUTime",
                "DiskIO",
                "LastBatch",
                "ProgramName",
                "SPID",
                "REQUESTID",
            ]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }
}

/// One session as sp_who and sp_who2 show it.
struct Who {
    spid: u16,
    status: &'static str,
    login_name: String,
    host_name: Option<String>,
    program_name: String,
    blocked_by: Option<u16>,
    database: Option<String>,
    command: String,
    last_batch: Value,
    /// sysprocesses.cpu and physical_io: sp_who2's CPUTime and DiskIO.
    cpu_ms: u64,
    disk_io: u64,
}

/// A type's ODBC DATA_TYPE code and PRECISION column (characters for strings, digits for
/// numbers), as sp_columns reports them.
fn odbc_type(sql_type: SqlType, precision: u8, max_length: i16) -> (i16, i32) {
    use SqlType::*;
    let chars = i32::from(max_length);
    match sql_type {
        Bit => (-7, 1),
        TinyInt => (-6, 3),
        SmallInt => (5, 5),
        Int => (4, 10),
        BigInt => (-5, 19),
        Decimal { .. } => (3, i32::from(precision)),
        Float => (6, 15),
        Real => (7, 7),
        Money => (3, 19),
        Char(_) => (1, chars),
        VarChar(_) => (12, chars),
        NChar(_) => (-8, chars / 2),
        NVarChar(_) => (-9, chars / 2),
        Binary(_) => (-2, chars),
        VarBinary(_) => (-3, chars),
        UniqueIdentifier => (-11, 36),
        Date => (-9, 10),
        Time(_) => (-9, 16),
        DateTime => (11, 23),
        DateTime2(_) => (-9, 27),
    }
}
