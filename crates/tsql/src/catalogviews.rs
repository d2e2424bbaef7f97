//! Catalog views (reference §10.4 and SQL Server's documentation of each view): built, when a
//! query reads them, from the current database's catalog (sysschobjs, syscolpars, sysidxstats),
//! its files and filegroups, and its allocation units.
//!
//! Here: sys.master_files, sys.data_spaces, sys.schemas, sys.objects, sys.all_objects,
//! sys.system_objects, sys.tables, sys.columns, sys.types, sys.indexes, sys.partitions,
//! sys.allocation_units and sys.system_internals_allocation_units.
//!
//! Deviations (also in docs/deviations.md):
//! - Each view has the columns listed in its function, SQL Server's most used ones, not all.
//! - One partition per heap or index, and one allocation unit (IN_ROW_DATA) per partition;
//!   partition_id, hobt_id and allocation_unit_id are all the unit's id.
//! - Constraints (PRIMARY KEY, UNIQUE, DEFAULT) are not objects of their own.
//! - modify_date is create_date (ALTER does not record a date).
//! - sys.all_objects lists the database's objects, then the system objects extentdb
//!   implements (views, DMVs, functions and procedures), then, so that the row-generator
//!   idiom `sys.all_objects AS s1 CROSS JOIN sys.all_objects AS s2` yields as many rows as on
//!   SQL Server (whose resource database has over 2,000 objects), numbered placeholder rows
//!   named `resource_object_NNNN` of type 'S' up to [`ALL_OBJECTS_SYSTEM_ROWS`] system rows.

use crate::session::Session;
use crate::sysviews::{ViewRows, columns, text};
use crate::value::Result;
use engine::catalog::{SYSCOLPARS_ID, SYSIDXSTATS_ID, SYSOBJVALUES_ID, SYSSCHOBJS_ID};
use engine::record::{SqlType, Value};
use std::collections::BTreeMap;

/// System rows of sys.all_objects: about the size of SQL Server 2022's resource database.
pub const ALL_OBJECTS_SYSTEM_ROWS: i32 = 2_200;

/// schema_id of `dbo` and of `sys` (as in SQL Server).
const DBO_SCHEMA_ID: i32 = 1;
const SYS_SCHEMA_ID: i32 = 4;

/// The system objects extentdb implements, with their SQL Server type codes, as
/// sys.system_objects lists them.
const SYSTEM_OBJECTS: &[(&str, &str)] = &[
    ("all_objects", "V"),
    ("allocation_units", "V"),
    ("columns", "V"),
    ("configurations", "V"),
    ("data_spaces", "V"),
    ("database_files", "V"),
    ("databases", "V"),
    ("dm_db_database_page_allocations", "IF"),
    ("dm_db_file_space_usage", "V"),
    ("dm_db_index_operational_stats", "IF"),
    ("dm_db_index_physical_stats", "IF"),
    ("dm_db_log_info", "IF"),
    ("dm_db_log_stats", "IF"),
    ("dm_db_log_space_usage", "V"),
    ("dm_db_index_usage_stats", "V"),
    ("dm_db_partition_stats", "V"),
    ("dm_exec_connections", "V"),
    ("dm_exec_requests", "V"),
    ("dm_exec_sessions", "V"),
    ("dm_exec_sql_text", "IF"),
    ("dm_io_virtual_file_stats", "IF"),
    ("dm_os_latch_stats", "V"),
    ("dm_os_performance_counters", "V"),
    ("dm_os_buffer_descriptors", "V"),
    ("dm_os_host_info", "V"),
    ("dm_os_schedulers", "V"),
    ("dm_os_spinlock_stats", "V"),
    ("dm_os_sys_info", "V"),
    ("dm_os_sys_memory", "V"),
    ("dm_os_tasks", "V"),
    ("dm_os_volume_stats", "IF"),
    ("dm_os_wait_stats", "V"),
    ("dm_os_waiting_tasks", "V"),
    ("dm_server_services", "V"),
    ("dm_tran_active_transactions", "V"),
    ("dm_tran_database_transactions", "V"),
    ("dm_tran_locks", "V"),
    ("dm_tran_session_transactions", "V"),
    ("filegroups", "V"),
    ("fn_trace_gettable", "IF"),
    ("indexes", "V"),
    ("master_files", "V"),
    ("objects", "V"),
    ("partitions", "V"),
    ("schemas", "V"),
    ("sp_configure", "P"),
    ("sp_cycle_errorlog", "P"),
    ("sp_executesql", "X"),
    ("sp_help", "P"),
    ("sp_helpdb", "P"),
    ("sp_helpfile", "P"),
    ("sp_helpindex", "P"),
    ("sp_lock", "P"),
    ("sp_readerrorlog", "P"),
    ("sp_spaceused", "P"),
    ("sp_who", "P"),
    ("sp_who2", "P"),
    ("system_internals_allocation_units", "V"),
    ("system_objects", "V"),
    ("tables", "V"),
    ("traces", "V"),
    ("types", "V"),
    ("xp_readerrorlog", "X"),
    // Added later, kept at the end so that the ids above stay as they were.
    ("dm_db_page_info", "IF"),
    ("fn_PageResCracker", "TF"),
    ("dm_io_pending_io_requests", "V"),
    ("dm_os_process_memory", "V"),
    ("dm_os_memory_clerks", "V"),
    ("sysprocesses", "V"),
    ("dm_exec_session_wait_stats", "V"),
    ("dm_exec_input_buffer", "IF"),
    ("fn_virtualfilestats", "IF"),
    ("server_event_sessions", "V"),
    ("server_event_session_events", "V"),
    ("server_event_session_actions", "V"),
    ("server_event_session_targets", "V"),
    ("server_event_session_fields", "V"),
    ("dm_xe_sessions", "V"),
    ("dm_xe_session_targets", "V"),
    ("dm_xe_session_events", "V"),
    ("dm_xe_packages", "V"),
    ("dm_xe_objects", "V"),
    ("dm_xe_object_columns", "V"),
    ("dm_xe_map_values", "V"),
    ("fn_xe_file_target_read_file", "IF"),
];

/// sys.objects.type_desc for a type code.
fn type_desc(code: &str) -> &'static str {
    match code.trim_end() {
        "U" => "USER_TABLE",
        "S" => "SYSTEM_TABLE",
        "P" => "SQL_STORED_PROCEDURE",
        "V" => "VIEW",
        "IF" => "SQL_INLINE_TABLE_VALUED_FUNCTION",
        "TF" => "SQL_TABLE_VALUED_FUNCTION",
        "X" => "EXTENDED_STORED_PROCEDURE",
        _ => "UNKNOWN",
    }
}

/// A type's (name, system_type_id, max_length, precision, scale), as sys.types and
/// sys.columns show them. max_length is the bytes the record format gives the type
/// ([`SqlType::fixed_size`], else its largest variable size), so it follows the storage
/// (bug fix: time(n) and datetime2(n) showed 5 and 8 bytes whatever their scale).
pub fn type_info(sql_type: SqlType) -> (&'static str, u8, i16, u8, u8) {
    use SqlType::*;
    let max_length = match sql_type.fixed_size() {
        Some(bytes) => bytes.max(1),
        None => sql_type.max_var_size(),
    } as i16;
    // time and datetime2 precision: the digits shown, a fraction adding its point.
    let fraction = |scale: u8| if scale == 0 { 0 } else { scale + 1 };
    let (name, id, precision, scale) = match sql_type {
        TinyInt => ("tinyint", 48, 3, 0),
        SmallInt => ("smallint", 52, 5, 0),
        Int => ("int", 56, 10, 0),
        BigInt => ("bigint", 127, 19, 0),
        Bit => ("bit", 104, 1, 0),
        Decimal { precision, scale } => ("decimal", 106, precision, scale),
        Float => ("float", 62, 53, 0),
        Real => ("real", 59, 24, 0),
        Money => ("money", 60, 19, 4),
        Char(_) => ("char", 175, 0, 0),
        VarChar(_) => ("varchar", 167, 0, 0),
        NChar(_) => ("nchar", 239, 0, 0),
        NVarChar(_) => ("nvarchar", 231, 0, 0),
        Binary(_) => ("binary", 173, 0, 0),
        VarBinary(_) => ("varbinary", 165, 0, 0),
        UniqueIdentifier => ("uniqueidentifier", 36, 0, 0),
        Date => ("date", 40, 10, 0),
        Time(scale) => ("time", 41, 8 + fraction(scale), scale),
        DateTime => ("datetime", 61, 23, 3),
        DateTime2(scale) => ("datetime2", 42, 19 + fraction(scale), scale),
    };
    (name, id, max_length, precision, scale)
}

/// A system type's name by its id (TYPE_NAME), as sys.types lists it.
pub fn type_name_of_id(id: i64) -> Option<&'static str> {
    if id == 108 {
        return Some("numeric");
    }
    TYPES.iter().map(|t| type_info(*t)).find(|info| i64::from(info.1) == id).map(|info| info.0)
}

/// A system type's id by its name (TYPE_ID), case-insensitively.
pub fn type_id_of_name(name: &str) -> Option<i32> {
    if name.eq_ignore_ascii_case("numeric") {
        return Some(108);
    }
    TYPES
        .iter()
        .map(|t| type_info(*t))
        .find(|info| info.0.eq_ignore_ascii_case(name))
        .map(|info| i32::from(info.1))
}

/// The types sys.types lists (their widest forms).
const TYPES: [SqlType; 21] = [
    SqlType::UniqueIdentifier,
    SqlType::Date,
    SqlType::Time(7),
    SqlType::DateTime2(7),
    SqlType::TinyInt,
    SqlType::SmallInt,
    SqlType::Int,
    SqlType::Real,
    SqlType::Money,
    SqlType::DateTime,
    SqlType::Float,
    SqlType::Bit,
    SqlType::Decimal { precision: 38, scale: 38 },
    SqlType::BigInt,
    SqlType::VarBinary(8000),
    SqlType::VarChar(8000),
    SqlType::Binary(8000),
    SqlType::Char(8000),
    SqlType::NVarChar(4000),
    SqlType::NChar(4000),
    SqlType::Decimal { precision: 38, scale: 0 },
];

/// One object for sys.objects: (name, object_id, schema_id, parent_object_id, type code,
/// create_date, is_ms_shipped).
type ObjectRow = (String, i32, i32, i32, String, Value, bool);

fn object_row(object: ObjectRow) -> Vec<Value> {
    let (name, object_id, schema_id, parent, code, created, shipped) = object;
    let code = code.trim_end().to_string();
    vec![
        Value::Text(name),
        Value::Int(object_id),
        Value::Null,
        Value::Int(schema_id),
        Value::Int(parent),
        text(&format!("{code:<2}")),
        text(type_desc(&code)),
        created.clone(),
        created,
        Value::Bit(shipped),
        Value::Bit(false),
        Value::Bit(false),
    ]
}

const OBJECT_COLUMNS: [&str; 12] = [
    "name",
    "object_id",
    "principal_id",
    "schema_id",
    "parent_object_id",
    "type",
    "type_desc",
    "create_date",
    "modify_date",
    "is_ms_shipped",
    "is_published",
    "is_schema_published",
];

impl Session {
    /// sys.master_files: every database's files.
    pub(crate) fn sys_master_files(&self) -> ViewRows {
        let mut cols = columns(&["database_id"]);
        cols.extend(crate::sysviews::DATABASE_FILE_COLUMNS.iter().map(|c| (*c).to_string()));
        let mut databases = self.server.databases();
        databases.sort_by_key(|db| db.database_id);
        let mut rows = Vec::new();
        for db in databases {
            for file in db.database_files() {
                let mut row = vec![Value::Int(i32::from(db.database_id))];
                row.extend(crate::sysviews::database_file_row(&file));
                rows.push(row);
            }
        }
        (cols, rows)
    }

    /// sys.data_spaces: the filegroups, as data spaces (sys.filegroups' first six columns).
    pub(crate) fn sys_data_spaces(&self) -> ViewRows {
        let (cols, rows) = self.sys_filegroups();
        (cols[..6].to_vec(), rows.into_iter().map(|r| r[..6].to_vec()).collect())
    }

    /// sys.schemas: SQL Server's fixed schemas (extentdb has no CREATE SCHEMA).
    pub(crate) fn sys_schemas(&self) -> ViewRows {
        let cols = columns(&["name", "schema_id", "principal_id"]);
        let fixed = [
            ("dbo", DBO_SCHEMA_ID, 1),
            ("guest", 2, 2),
            ("INFORMATION_SCHEMA", 3, 3),
            ("sys", SYS_SCHEMA_ID, 4),
        ];
        let rows = fixed
            .iter()
            .map(|(name, id, owner)| vec![text(name), Value::Int(*id), Value::Int(*owner)])
            .collect();
        (cols, rows)
    }

    /// The database's own objects: its system base tables, tables and procedures.
    fn database_objects(&self) -> Result<Vec<ObjectRow>> {
        let db = &*self.catalog_db();
        let catalog = db.catalog()?;
        let created = catalog.created_dates(db)?;
        let date_of = |id: i32| created.get(&id).cloned().unwrap_or(Value::Null);
        let mut objects: Vec<ObjectRow> = [
            ("sysschobjs", SYSSCHOBJS_ID),
            ("syscolpars", SYSCOLPARS_ID),
            ("sysidxstats", SYSIDXSTATS_ID),
            ("sysobjvalues", SYSOBJVALUES_ID),
        ]
        .iter()
        .map(|(name, id)| {
            (name.to_string(), *id, SYS_SCHEMA_ID, 0, "S".to_string(), Value::Null, true)
        })
        .collect();
        // Temporary tables and table variables are the sessions' own (SQL Server shows them in
        // tempdb's views, which extentdb does not have).
        for table in catalog.tables().iter().filter(|t| !crate::temp::is_stored_temporary(&t.name))
        {
            let id = table.object_id;
            objects.push((
                table.name.clone(),
                id,
                DBO_SCHEMA_ID,
                0,
                "U".into(),
                date_of(id),
                false,
            ));
        }
        for module in catalog.modules() {
            let id = module.object_id;
            let code = module.type_code.clone();
            objects.push((module.name.clone(), id, DBO_SCHEMA_ID, 0, code, date_of(id), false));
        }
        objects.sort_by_key(|o| o.1);
        Ok(objects)
    }

    /// sys.objects.
    pub(crate) fn sys_objects(&self) -> Result<ViewRows> {
        let rows = self.database_objects()?.into_iter().map(object_row).collect();
        Ok((columns(&OBJECT_COLUMNS), rows))
    }

    /// sys.system_objects: the system objects extentdb implements, with negative object ids
    /// as SQL Server's resource database numbers them.
    pub(crate) fn sys_system_objects(&self) -> ViewRows {
        let rows = system_objects().into_iter().map(object_row).collect();
        (columns(&OBJECT_COLUMNS), rows)
    }

    /// sys.all_objects: sys.objects, then the system objects, padded as the module header says.
    pub(crate) fn sys_all_objects(&self) -> Result<ViewRows> {
        let mut objects = self.database_objects()?;
        let system = system_objects();
        let placeholders = ALL_OBJECTS_SYSTEM_ROWS - system.len() as i32;
        objects.extend(system);
        for n in 1..=placeholders {
            let id = -100_000 - n;
            let name = format!("resource_object_{n:04}");
            objects.push((name, id, SYS_SCHEMA_ID, 0, "S".into(), Value::Null, true));
        }
        let rows = objects.into_iter().map(object_row).collect();
        Ok((columns(&OBJECT_COLUMNS), rows))
    }

    /// sys.tables: the user tables.
    pub(crate) fn sys_tables(&self) -> Result<ViewRows> {
        let mut cols = columns(&OBJECT_COLUMNS);
        cols.extend(columns(&[
            "lob_data_space_id",
            "max_column_id_used",
            "is_replicated",
            "temporal_type_desc",
        ]));
        let catalog = self.catalog_db().catalog()?;
        let rows = self
            .database_objects()?
            .into_iter()
            .filter(|o| o.4 == "U")
            .map(|o| {
                let max_column = catalog.table_by_id(o.1).map_or(0, |t| t.columns.len() as i32);
                let mut row = object_row(o);
                row.extend([
                    Value::Int(0),
                    Value::Int(max_column),
                    Value::Bit(false),
                    text("NON_TEMPORAL_TABLE"),
                ]);
                row
            })
            .collect();
        Ok((cols, rows))
    }

    /// sys.columns: the columns of the user tables.
    pub(crate) fn sys_columns(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "object_id",
            "name",
            "column_id",
            "system_type_id",
            "user_type_id",
            "max_length",
            "precision",
            "scale",
            "is_nullable",
            "is_rowguidcol",
            "is_identity",
            "is_computed",
        ]);
        let mut tables = self.catalog_db().catalog()?.tables();
        tables.sort_by_key(|t| t.object_id);
        let mut rows = Vec::new();
        for table in tables {
            for (i, def) in table.columns.iter().enumerate() {
                let (_, type_id, max_length, precision, scale) = type_info(def.column.sql_type);
                rows.push(vec![
                    Value::Int(table.object_id),
                    Value::Text(def.column.name.clone()),
                    Value::Int(i as i32 + 1),
                    Value::TinyInt(type_id),
                    Value::Int(i32::from(type_id)),
                    Value::SmallInt(max_length),
                    Value::TinyInt(precision),
                    Value::TinyInt(scale),
                    Value::Bit(def.column.nullable),
                    Value::Bit(def.rowguidcol),
                    Value::Bit(def.identity.is_some()),
                    Value::Bit(false),
                ]);
            }
        }
        Ok((cols, rows))
    }

    /// sys.types: the system types extentdb stores.
    pub(crate) fn sys_types(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "system_type_id",
            "user_type_id",
            "schema_id",
            "max_length",
            "precision",
            "scale",
            "is_nullable",
            "is_user_defined",
        ]);
        let mut rows = Vec::new();
        for (i, sql_type) in TYPES.iter().enumerate() {
            let (name, id, max_length, precision, scale) = type_info(*sql_type);
            // numeric shares decimal's storage; it is the last entry, with its own id.
            let (name, id) = if i == TYPES.len() - 1 { ("numeric", 108) } else { (name, id) };
            let scale = if matches!(sql_type, SqlType::Decimal { .. }) { 0 } else { scale };
            rows.push(vec![
                text(name),
                Value::TinyInt(id),
                Value::Int(i32::from(id)),
                Value::Int(SYS_SCHEMA_ID),
                Value::SmallInt(max_length),
                Value::TinyInt(precision),
                Value::TinyInt(scale),
                Value::Bit(true),
                Value::Bit(false),
            ]);
        }
        (cols, rows)
    }

    /// Every heap and index of the database's tables: (object id, index def, the table).
    fn all_indexes(
        &self,
    ) -> Result<Vec<(i32, engine::catalog::IndexDef, std::sync::Arc<engine::catalog::Table>)>> {
        let mut tables = self.catalog_db().catalog()?.tables();
        tables.sort_by_key(|t| t.object_id);
        let mut out = Vec::new();
        for table in tables {
            for index in &table.indexes {
                out.push((table.object_id, index.clone(), table.clone()));
            }
        }
        Ok(out)
    }

    /// sys.indexes.
    pub(crate) fn sys_indexes(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "object_id",
            "name",
            "index_id",
            "type",
            "type_desc",
            "is_unique",
            "data_space_id",
            "is_primary_key",
            "is_unique_constraint",
            "fill_factor",
            "is_disabled",
        ]);
        let db = &*self.catalog_db();
        let rows = self
            .all_indexes()?
            .into_iter()
            .map(|(object_id, index, _)| {
                let fg_id = db.allocation_unit(index.au_id).map_or(1, |u| u.fg_id);
                let name = if index.name.is_empty() {
                    Value::Null
                } else {
                    Value::Text(index.name.clone())
                };
                vec![
                    Value::Int(object_id),
                    name,
                    Value::Int(index.index_id),
                    Value::TinyInt(index.kind as u8),
                    text(index.kind.desc()),
                    Value::Bit(index.unique),
                    Value::Int(i32::from(fg_id)),
                    Value::Bit(index.primary_key),
                    Value::Bit(index.is_unique_constraint()),
                    Value::TinyInt(0),
                    Value::Bit(false),
                ]
            })
            .collect();
        Ok((cols, rows))
    }

    /// sys.partitions: one partition per heap or index; rows counted in the heap or
    /// clustered index without a lock.
    pub(crate) fn sys_partitions(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "partition_id",
            "object_id",
            "index_id",
            "partition_number",
            "hobt_id",
            "rows",
            "data_compression",
            "data_compression_desc",
        ]);
        let db = &*self.catalog_db();
        let mut counts: BTreeMap<i32, i64> = BTreeMap::new();
        let mut rows = Vec::new();
        for (object_id, index, table) in self.all_indexes()? {
            let count = row_count_once(&mut counts, db, object_id, &table)?;
            rows.push(vec![
                Value::BigInt(index.au_id as i64),
                Value::Int(object_id),
                Value::Int(index.index_id),
                Value::Int(1),
                Value::BigInt(index.au_id as i64),
                Value::BigInt(count),
                Value::TinyInt(0),
                text("NONE"),
            ]);
        }
        Ok((cols, rows))
    }

    /// sys.dm_db_partition_stats: per heap or index of the database's tables, its pages as its
    /// IAM chain and PFS give them (reserved: every page of its extents; used: allocated pages,
    /// IAM pages included; in-row data: its leaf level, read from the page headers) and its
    /// rows. No LOB or row-overflow pages exist here (their columns are 0).
    pub(crate) fn dm_db_partition_stats(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "partition_id",
            "object_id",
            "index_id",
            "partition_number",
            "in_row_data_page_count",
            "in_row_used_page_count",
            "in_row_reserved_page_count",
            "lob_used_page_count",
            "lob_reserved_page_count",
            "row_overflow_used_page_count",
            "row_overflow_reserved_page_count",
            "used_page_count",
            "reserved_page_count",
            "row_count",
        ]);
        let db = &*self.catalog_db();
        let mut counts: BTreeMap<i32, i64> = BTreeMap::new();
        let mut rows = Vec::new();
        for (object_id, index, table) in self.all_indexes()? {
            let row_count = row_count_once(&mut counts, db, object_id, &table)?;
            let unit = [index.au_id];
            let (reserved, used, leaf) = crate::sysprocs::unit_space(db, &unit, &unit)?;
            let mut row = vec![Value::BigInt(index.au_id as i64), Value::Int(object_id)];
            row.extend([Value::Int(index.index_id), Value::Int(1)]);
            row.extend(
                [leaf, used, reserved, 0, 0, 0, 0, used, reserved, row_count].map(Value::BigInt),
            );
            rows.push(row);
        }
        Ok((cols, rows))
    }

    /// sys.allocation_units (internal = false) and sys.system_internals_allocation_units
    /// (internal = true, which adds the first, root and first IAM pages): every allocation
    /// unit of the database, system tables included, with its pages counted from its IAM
    /// chain and PFS.
    pub(crate) fn sys_allocation_units(&self, internal: bool) -> Result<ViewRows> {
        let mut cols = columns(&[
            "allocation_unit_id",
            "type",
            "type_desc",
            "container_id",
            "data_space_id",
            "total_pages",
            "used_pages",
            "data_pages",
        ]);
        if internal {
            cols.extend(columns(&["first_page", "root_page", "first_iam_page"]));
        }
        let db = &*self.catalog_db();
        let mut units = db.allocation_units();
        units.sort_by_key(|u| u.0);
        let mut rows = Vec::new();
        for (au_id, _) in units {
            let Some(info) = db.allocation_unit(au_id) else { continue };
            let pages = db.unit_pages(au_id)?;
            let total = pages.len() as i64;
            let used = pages.iter().filter(|p| p.is_allocated).count() as i64;
            let data = pages.iter().filter(|p| p.is_allocated && !p.is_iam).count() as i64;
            let mut row = vec![
                Value::BigInt(au_id as i64),
                Value::TinyInt(1),
                text("IN_ROW_DATA"),
                Value::BigInt(au_id as i64),
                Value::Int(i32::from(info.fg_id)),
                Value::BigInt(total),
                Value::BigInt(used),
                Value::BigInt(data),
            ];
            if internal {
                let (first, root) = first_and_root(db, &pages)?;
                row.push(page_pointer(first));
                row.push(page_pointer(root));
                row.push(page_pointer(info.iam_pages.first().copied()));
            }
            rows.push(row);
        }
        Ok((cols, rows))
    }
}

/// A table's row count, counted once per view however many of its indexes the view lists.
fn row_count_once(
    counts: &mut BTreeMap<i32, i64>,
    db: &engine::database::Database,
    object_id: i32,
    table: &engine::catalog::Table,
) -> Result<i64> {
    if let Some(count) = counts.get(&object_id) {
        return Ok(*count);
    }
    let count = table.stored_row_count(db)? as i64;
    counts.insert(object_id, count);
    Ok(count)
}

/// A page pointer as system_internals_allocation_units shows it: 6 bytes, page number then
/// file id (zeros when there is none).
fn page_pointer(page: Option<engine::units::PageId>) -> Value {
    Value::Bytes(page.map_or([0; 6], |p| p.to_bytes()).to_vec())
}

/// The unit's first data page (lowest page id) and its root (the page of the highest level,
/// read from the page headers; a heap's root is its first page).
fn first_and_root(
    db: &engine::database::Database,
    pages: &[engine::database::UnitPage],
) -> Result<(Option<engine::units::PageId>, Option<engine::units::PageId>)> {
    let mut first = None;
    let mut root: Option<(u8, engine::units::PageId)> = None;
    for page in pages.iter().filter(|p| p.is_allocated && !p.is_iam) {
        first = Some(first.map_or(page.page, |f: engine::units::PageId| f.min(page.page)));
        let header = engine::page::PageHeader::read(&db.page_copy(page.page)?[..]);
        if root.is_none_or(|(level, _)| header.level > level) {
            root = Some((header.level, page.page));
        }
    }
    Ok((first, root.map(|(_, page)| page)))
}

/// The system objects extentdb implements, with negative ids.
fn system_objects() -> Vec<ObjectRow> {
    SYSTEM_OBJECTS
        .iter()
        .enumerate()
        .map(|(i, (name, code))| {
            let id = -1000 - i as i32;
            (name.to_string(), id, SYS_SCHEMA_ID, 0, code.to_string(), Value::Null, true)
        })
        .collect()
}
