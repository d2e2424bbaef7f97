//! Dynamic management views and functions (reference §5–7, §6.5, §10.6), built when a query
//! reads them from the instance's real counters and the databases' real pages:
//!
//! - waits, latches, spinlocks, waiting tasks: the engine's statistics, every figure from a
//!   wait that a thread really waited (issue 3);
//! - sessions and requests: the server's session registry, with the waits of the tasks that
//!   wait now, and the instance's system tasks ([`engine::system_tasks`]) as system sessions;
//! - file I/O: the counters of the I/O seam ([`engine::io::StatsIo`]);
//! - space: GAM free-extent counts, the log's VLFs, and allocation units read page by page.
//!
//! Deviations (also in docs/deviations.md): each view has the columns its function lists;
//! sample_ms counts from instance start, not computer start; dm_exec_requests.command is the
//! batch's first keyword, not the running statement's; there is one task per session
//! (exec_context_id 0) and no task addresses (NULL).

use crate::session::Session;
use crate::sysviews::{ViewRows, columns, text};
use crate::value::{self, Result};
use engine::SqlError;
use engine::configuration::{ConfigOption, OPTIONS};
use engine::database::{Database, UnitPage};
use engine::page::PageHeader;
use engine::record::Value;
use engine::units::PageId;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A batch's sql_handle: 0x02 (SQL Server's first byte for an ad hoc batch's handle), three
/// zero bytes, then a 64-bit hash of the text (FNV-1a over its UTF-8 bytes) twice, 20 bytes.
pub(crate) fn sql_handle(batch: &str) -> Vec<u8> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in batch.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    let mut handle = vec![2, 0, 0, 0];
    handle.extend_from_slice(&hash.to_le_bytes());
    handle.extend_from_slice(&hash.rotate_left(32).to_le_bytes());
    handle
}

/// The CPU a running request has used so far: its thread's account now (read from the
/// calling thread directly, from another's through /proc) less its account at the start.
pub(crate) fn request_cpu_ns(request: &crate::server::RunningRequest) -> u64 {
    let now = if request.thread_id == engine::session::thread_id() {
        Some(engine::session::thread_cpu_time_ns())
    } else {
        engine::session::thread_cpu_ns_of(request.thread_id)
    };
    now.map_or(0, |ns| ns.saturating_sub(request.cpu_start_ns))
}

/// Which allocation unit owns a page, from the units' extents, single pages and IAM pages.
struct PageOwners {
    extents: BTreeMap<PageId, u64>,
    pages: BTreeMap<PageId, u64>,
}

impl PageOwners {
    fn owner(&self, page: PageId) -> Option<u64> {
        if let Some(au_id) = self.pages.get(&page) {
            return Some(*au_id);
        }
        let extent =
            engine::units::first_page_of_extent(engine::units::extent_of_page(page.page_no));
        self.extents.get(&PageId::new(page.file_id, extent)).copied()
    }
}

/// The pages of `units` by owner, as their allocation maps say now.
fn page_owners(db: &Database, units: impl Iterator<Item = u64>) -> PageOwners {
    let mut owners = PageOwners { extents: BTreeMap::new(), pages: BTreeMap::new() };
    for au_id in units {
        let Some(unit) = db.allocation_unit(au_id) else { continue };
        owners.extents.extend(unit.extents.iter().map(|extent| (*extent, au_id)));
        let pages = unit.single_pages.iter().chain(&unit.iam_pages);
        owners.pages.extend(pages.map(|page| (*page, au_id)));
    }
    owners
}

/// A system task's database: its own, or master (1) for an instance-wide task.
pub(crate) fn system_task_database(task: &engine::system_tasks::SystemTaskRow) -> u16 {
    if task.identity.database_id == 0 { 1 } else { task.identity.database_id }
}

/// A session_id cell's order (system sessions before user sessions).
/// A running request's status (sys.dm_exec_requests, sys.sysprocesses): runnable while its task
/// is queued for its scheduler; suspended while it waits for a resource (or for its task to
/// start); running otherwise.
pub(crate) fn request_status(task_state: Option<&str>, waiting: bool) -> &'static str {
    match (task_state, waiting) {
        (Some("RUNNABLE"), _) => "runnable",
        (_, true) | (Some("SUSPENDED"), false) => "suspended",
        _ => "running",
    }
}

/// page_resource (sys.dm_exec_requests, sys.sysprocesses): the page a page latch wait is for,
/// NULL for any other wait or none.
pub(crate) fn page_resource(wait: Option<&engine::waits::WaitingTaskRow>) -> Value {
    wait.and_then(|w| w.page).map_or(Value::Null, |p| Value::Bytes(p.to_bytes().to_vec()))
}

/// DBCC INPUTBUFFER's and sys.dm_exec_input_buffer's row for a session's batch: a 'Language
/// Event' (deviation: a TDS RPC shows as its statement text too), no parameters.
pub(crate) fn input_buffer_row(batch: &str) -> Vec<Value> {
    vec![text("Language Event"), Value::SmallInt(0), Value::Text(batch.to_string())]
}

pub(crate) fn tsql_sort_key(cell: &Value) -> i64 {
    value::as_i64(cell).unwrap_or(i64::MAX)
}

pub(crate) fn big(n: u64) -> Value {
    Value::BigInt(i64::try_from(n).unwrap_or(i64::MAX))
}

/// An int column's value (saturating).
pub(crate) fn int(n: u64) -> Value {
    Value::Int(i32::try_from(n).unwrap_or(i32::MAX))
}

/// A scheduler's address (dm_os_schedulers, dm_os_tasks, dm_io_pending_io_requests), for
/// joins: synthetic, 64 bytes apart from a fixed base, as there is no SOS_Scheduler object
/// whose address would mean anything.
fn scheduler_address(scheduler_id: usize) -> Value {
    const BASE: u64 = 0x0000_0100_0000_0040;
    pointer_bytes(BASE + scheduler_id as u64 * 0x40)
}

/// A session's task (sys.dm_os_tasks.task_address, sys.dm_exec_requests.task_address,
/// sys.dm_os_waiting_tasks' waiting and blocking task addresses): an identifier in the shape
/// of an address, one per session, as a session runs one task here.
pub(crate) fn task_address(session_id: u16) -> Value {
    const BASE: u64 = 0x0000_0200_0000_0000;
    pointer_bytes(BASE + u64::from(session_id) * 0x100)
}

/// A session's lock request on a resource (sys.dm_tran_locks.lock_owner_address) and, while
/// the request waits, the resource its task waits for (sys.dm_os_waiting_tasks.
/// resource_address): the two are equal, so the usual join of the two views finds the
/// waiter's request, as in SQL Server, where both are the address of the lock block.
pub(crate) fn lock_block_address(session_id: u16, resource: &engine::lock::LockResource) -> Value {
    const BASE: u64 = 0x0000_0300_0000_0000;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in format!("{session_id}:{resource:?}").bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
    }
    // Aligned as an allocation is, within a 40-bit range above the base.
    pointer_bytes(BASE + (hash & 0x00FF_FFFF_FFC0))
}

/// A file's handle (dm_io_virtual_file_stats.file_handle, dm_io_pending_io_requests.io_handle):
/// its handle number in the instance's I/O registry, as 8 bytes.
fn file_handle(handle: u64) -> Value {
    pointer_bytes(handle)
}

/// A pointer-sized value as varbinary(8) shows an address or handle: most significant byte
/// first, so that it reads as the number (0x0000000000000001). Never stored.
#[allow(clippy::big_endian_bytes)]
pub(crate) fn pointer_bytes(value: u64) -> Value {
    Value::Bytes(value.to_be_bytes().to_vec())
}

/// An argument of a DMF: None when absent, NULL or DEFAULT.
fn arg_i64(args: &[Value], i: usize) -> Option<i64> {
    args.get(i).and_then(value::as_i64)
}

/// The page type names of sys.dm_db_database_page_allocations (reference §1.4).
pub(crate) fn page_type_desc(page_type: u8) -> &'static str {
    match page_type {
        1 => "DATA_PAGE",
        2 => "INDEX_PAGE",
        3 => "TEXT_MIX_PAGE",
        4 => "TEXT_TREE_PAGE",
        8 => "GAM_PAGE",
        9 => "SGAM_PAGE",
        10 => "IAM_PAGE",
        11 => "PFS_PAGE",
        13 => "BOOT_PAGE",
        15 => "FILEHEADER_PAGE",
        16 => "DIFF_MAP_PAGE",
        17 => "ML_MAP_PAGE",
        _ => "UNKNOWN",
    }
}

impl Session {
    /// The database a DMF's database_id argument names (NULL or absent: the current one).
    fn dmf_database(&self, args: &[Value]) -> Option<Arc<Database>> {
        match arg_i64(args, 0) {
            None => self.server.database(&self.db().name),
            Some(id) => self.server.database_by_id(id),
        }
    }

    /// sys.dm_os_wait_stats: a row for every wait type the engine can wait on, zeros until its
    /// first wait (SQL Server lists its ~900 wait types the same way; the ones this engine
    /// never waits on are left out).
    pub(crate) fn dm_os_wait_stats(&self) -> ViewRows {
        let cols = columns(&[
            "wait_type",
            "waiting_tasks_count",
            "wait_time_ms",
            "max_wait_time_ms",
            "signal_wait_time_ms",
        ]);
        let rows = self
            .server
            .instance
            .waits
            .snapshot_all()
            .into_iter()
            .map(|w| {
                vec![
                    Value::Text(w.wait_type),
                    big(w.waiting_tasks_count),
                    big(w.wait_time_ms),
                    big(w.max_wait_time_ms),
                    big(w.signal_wait_time_ms),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_tran_locks: the lock table's requests now (engine::lock), granted and waiting.
    /// Deviations: only OBJECT and KEY resources exist (no DATABASE lock per session, no PAGE,
    /// RID or METADATA locks); an OBJECT lock is on the table's heap or clustered index, shown
    /// with the table's object_id (the unit's id for a table the current catalog does not
    /// know), and one on a nonclustered index's own unit as a HOBT lock (hobt_id); a
    /// converting request is one row, in the mode it asks for; lock_owner_address is an
    /// identifier per session and resource ([`lock_block_address`]).
    pub(crate) fn dm_tran_locks(&self) -> ViewRows {
        let cols = columns(&[
            "resource_type",
            "resource_subtype",
            "resource_database_id",
            "resource_description",
            "resource_associated_entity_id",
            "resource_lock_partition",
            "request_mode",
            "request_type",
            "request_status",
            "request_reference_count",
            "request_lifetime",
            "request_session_id",
            "request_exec_context_id",
            "request_request_id",
            "request_owner_type",
            "request_owner_id",
            "lock_owner_address",
        ]);
        let mut owners: BTreeMap<(u16, u64), Option<(i32, i32)>> = BTreeMap::new();
        let mut rows = Vec::new();
        for request in self.server.instance.locks.requests_snapshot() {
            let (kind, database_id, entity_id, description) = match request.resource {
                engine::lock::LockResource::Object { database_id, au_id } => {
                    let owner = *owners
                        .entry((database_id, au_id))
                        .or_insert_with(|| self.unit_owner(database_id, au_id));
                    match owner {
                        Some((object_id, index_id)) if index_id <= 1 => {
                            ("OBJECT", database_id, i64::from(object_id), String::new())
                        }
                        // A nonclustered index's own unit: a HOBT lock in SQL Server's terms.
                        _ => ("HOBT", database_id, au_id as i64, String::new()),
                    }
                }
                engine::lock::LockResource::Key { database_id, au_id, hash } => {
                    let hobt_id = i64::try_from(au_id).unwrap_or(i64::MAX);
                    ("KEY", database_id, hobt_id, format!("({hash:012x})"))
                }
            };
            rows.push(vec![
                text(kind),
                text(""),
                Value::Int(i32::from(database_id)),
                Value::Text(description),
                Value::BigInt(entity_id),
                Value::Int(0),
                text(request.mode.name()),
                text("LOCK"),
                text(request.status.name()),
                Value::SmallInt(1),
                Value::Int(0),
                Value::Int(i32::from(request.spid)),
                Value::Int(0),
                Value::Int(0),
                text("TRANSACTION"),
                big(request.xact_id),
                lock_block_address(request.spid, &request.resource),
            ]);
        }
        (cols, rows)
    }

    /// A waiting task's wait_resource (sys.dm_exec_requests, sys.sysprocesses): an object
    /// lock on a table's heap or clustered index names the table's object id, as SQL Server's
    /// `OBJECT: db:object_id:0` does; every other form is the engine's.
    pub(crate) fn wait_resource(&self, wait: &engine::waits::WaitingTaskRow) -> String {
        if let Some(engine::lock::LockResource::Object { database_id, au_id }) = wait.lock
            && let Some((object_id, index_id)) = self.unit_owner(database_id, au_id)
            && index_id <= 1
        {
            return format!("OBJECT: {database_id}:{object_id}:0");
        }
        wait.wait_resource.clone()
    }

    /// The table (object_id) and index (index_id) whose unit `au_id` is, if the database's
    /// catalog has one.
    pub(crate) fn unit_owner(&self, database_id: u16, au_id: u64) -> Option<(i32, i32)> {
        let catalog = self.server.database_by_id(i64::from(database_id))?.catalog().ok()?;
        catalog.tables().into_iter().find_map(|table| {
            let index = table.indexes.iter().find(|index| index.au_id == au_id)?;
            Some((table.object_id, index.index_id))
        })
    }

    /// The open transactions of every open database that have logged (the log's table of
    /// them), oldest first, with their database's id.
    fn logged_transactions(&self) -> Vec<(u16, engine::log::OpenTransaction)> {
        let mut open = Vec::new();
        for db in self.server.databases() {
            open.extend(db.log().open_transactions().into_iter().map(|t| (db.database_id, t)));
        }
        open
    }

    /// sys.dm_tran_database_transactions: per open transaction and database, what it has
    /// logged: records, bytes (its page changes' included) and the log it reserved for its
    /// rollback. Deviation: a transaction is listed from its first change (its begin record:
    /// one that has only read is not), in state 4 ('has generated log records'); its last LSN
    /// and the columns of system work are not kept (NULL, 0).
    pub(crate) fn dm_tran_database_transactions(&self) -> ViewRows {
        let cols = columns(&[
            "transaction_id",
            "database_id",
            "database_transaction_begin_time",
            "database_transaction_type",
            "database_transaction_state",
            "database_transaction_log_record_count",
            "database_transaction_log_bytes_used",
            "database_transaction_log_bytes_reserved",
            "database_transaction_log_bytes_used_system",
            "database_transaction_log_bytes_reserved_system",
            "database_transaction_begin_lsn",
            "database_transaction_last_lsn",
        ]);
        let mut rows = Vec::new();
        for (database_id, t) in self.logged_transactions() {
            let (records, used, reserved) = t.log_use.read();
            rows.push(vec![
                big(t.xact_id),
                Value::Int(i32::from(database_id)),
                crate::functions::current_time("GETDATE", t.begin_time),
                Value::Int(1),
                Value::Int(4),
                big(records),
                big(used),
                big(reserved),
                Value::BigInt(0),
                Value::BigInt(0),
                Value::Decimal(t.begin_lsn.to_numeric() as i128, 0),
                Value::Null,
            ]);
        }
        (cols, rows)
    }

    /// sys.dm_tran_active_transactions: the open transactions (those that have logged, as in
    /// sys.dm_tran_database_transactions), read/write (type 1) and active (state 2).
    pub(crate) fn dm_tran_active_transactions(&self) -> ViewRows {
        let cols = columns(&[
            "transaction_id",
            "name",
            "transaction_begin_time",
            "transaction_type",
            "transaction_state",
            "dtc_state",
        ]);
        let rows = self
            .logged_transactions()
            .into_iter()
            .map(|(_, t)| {
                vec![
                    big(t.xact_id),
                    Value::Text(t.name.to_string()),
                    crate::functions::current_time("GETDATE", t.begin_time),
                    Value::Int(1),
                    Value::Int(2),
                    Value::Int(0),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_tran_session_transactions: which session each open transaction (that has
    /// logged) belongs to, with the session's @@TRANCOUNT (another session's as its last
    /// request left it).
    pub(crate) fn dm_tran_session_transactions(&self) -> ViewRows {
        let cols = columns(&[
            "session_id",
            "transaction_id",
            "enlist_count",
            "is_user_transaction",
            "is_local",
            "is_enlisted",
            "is_bound",
            "open_transaction_count",
        ]);
        let sessions = self.server.sessions.lock();
        let rows = self
            .logged_transactions()
            .into_iter()
            .map(|(_, t)| {
                let open = if t.spid == self.spid {
                    self.db().trancount() as i32 // its own: as it stands now
                } else {
                    sessions.get(&t.spid).map_or(0, |info| info.open_transaction_count)
                };
                vec![
                    Value::Int(i32::from(t.spid)),
                    big(t.xact_id),
                    Value::Int(1),
                    Value::Bit(true),
                    Value::Bit(true),
                    Value::Bit(false),
                    Value::Bit(false),
                    Value::Int(open),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_os_volume_stats(database_id, file_id): the file system holding the file, as the
    /// I/O seam reports it (statvfs and /proc/self/mountinfo; a fault plan's full disk shows
    /// as no space available). No row for a database or file that is not there. Deviations:
    /// volume_id is the mounted device, logical_volume_name is empty, and the Windows-only
    /// flags are 0 (sparse files: 1).
    pub(crate) fn dm_os_volume_stats(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "file_id",
            "volume_mount_point",
            "volume_id",
            "logical_volume_name",
            "file_system_type",
            "total_bytes",
            "available_bytes",
            "supports_compression",
            "supports_alternate_streams",
            "supports_sparse_files",
            "is_read_only",
            "is_compressed",
        ]);
        let db = arg_i64(args, 0).and_then(|id| self.server.database_by_id(id));
        let file_id = arg_i64(args, 1).and_then(|id| u16::try_from(id).ok());
        let volume = db.as_ref().zip(file_id).and_then(|(db, file_id)| {
            let path = db.file_path(file_id)?;
            self.server.instance.io.volume(&path).ok().map(|v| (db.database_id, file_id, v))
        });
        let rows = volume
            .map(|(database_id, file_id, v)| {
                vec![
                    Value::Int(i32::from(database_id)),
                    Value::Int(i32::from(file_id)),
                    Value::Text(v.mount_point),
                    Value::Text(v.source),
                    Value::Text(String::new()),
                    Value::Text(v.file_system_type),
                    big(v.total_bytes),
                    big(v.available_bytes),
                    Value::TinyInt(0),
                    Value::TinyInt(0),
                    Value::TinyInt(1),
                    Value::TinyInt(u8::from(v.read_only)),
                    Value::TinyInt(0),
                ]
            })
            .into_iter()
            .collect();
        (cols, rows)
    }

    /// sys.dm_os_waiting_tasks: each task waiting now, from the engine's waiting-tasks table.
    /// The task addresses are [`task_address`]'s identifiers; a lock wait's resource_address
    /// is its lock request's lock_owner_address in sys.dm_tran_locks ([`lock_block_address`]),
    /// other waits have none (NULL).
    pub(crate) fn dm_os_waiting_tasks(&self) -> ViewRows {
        let cols = columns(&[
            "waiting_task_address",
            "session_id",
            "exec_context_id",
            "wait_duration_ms",
            "wait_type",
            "resource_address",
            "blocking_task_address",
            "blocking_session_id",
            "blocking_exec_context_id",
            "resource_description",
        ]);
        // A blocker that runs no task now (a sleeping session holding locks) has no address.
        let with_tasks: std::collections::BTreeSet<u16> =
            self.server.instance.schedulers.tasks().iter().map(|t| t.session_id).collect();
        let rows = self
            .server
            .instance
            .waiting_tasks
            .snapshot()
            .into_iter()
            .map(|t| {
                let blocking_task = t.blocking_session_id.filter(|s| with_tasks.contains(s));
                vec![
                    task_address(t.session_id),
                    Value::SmallInt(t.session_id as i16),
                    Value::Int(0),
                    big(t.wait_duration_ms),
                    text(t.wait_type),
                    t.lock.map_or(Value::Null, |lock| lock_block_address(t.session_id, &lock)),
                    blocking_task.map_or(Value::Null, task_address),
                    t.blocking_session_id.map_or(Value::Null, |s| Value::SmallInt(s as i16)),
                    Value::Null,
                    Value::Text(t.resource_description),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_db_index_usage_stats: a row per index of an open database that a statement has
    /// sought, scanned, looked up or changed since the database opened
    /// ([`engine::index_usage`]), while the index still exists. Deviation: the system_*
    /// columns are 0 and NULL (no system uses are counted).
    pub(crate) fn dm_db_index_usage_stats(&self) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "object_id",
            "index_id",
            "user_seeks",
            "user_scans",
            "user_lookups",
            "user_updates",
            "last_user_seek",
            "last_user_scan",
            "last_user_lookup",
            "last_user_update",
            "system_seeks",
            "system_scans",
            "system_lookups",
            "system_updates",
            "last_system_seek",
            "last_system_scan",
            "last_system_lookup",
            "last_system_update",
        ]);
        let when = |at: Option<std::time::Instant>| {
            at.map_or(Value::Null, |at| self.server.datetime_of(at))
        };
        let mut rows = Vec::new();
        let mut databases = self.server.databases();
        databases.sort_by_key(|db| db.database_id);
        for db in databases {
            let Ok(catalog) = db.catalog() else { continue };
            let indexes: BTreeSet<(i32, i32)> = catalog
                .tables()
                .iter()
                .flat_map(|t| t.indexes.iter().map(|i| (t.object_id, i.index_id)))
                .collect();
            for ((object_id, index_id), used) in db.index_usage.snapshot() {
                if !indexes.contains(&(object_id, index_id)) {
                    continue;
                }
                let mut row = vec![
                    Value::SmallInt(db.database_id as i16),
                    Value::Int(object_id),
                    Value::Int(index_id),
                    big(used.user_seeks),
                    big(used.user_scans),
                    big(used.user_lookups),
                    big(used.user_updates),
                    when(used.last_user_seek),
                    when(used.last_user_scan),
                    when(used.last_user_lookup),
                    when(used.last_user_update),
                ];
                row.extend([big(0), big(0), big(0), big(0)]);
                row.extend([Value::Null, Value::Null, Value::Null, Value::Null]);
                rows.push(row);
            }
        }
        (cols, rows)
    }

    pub(crate) fn dm_os_latch_stats(&self) -> ViewRows {
        let cols =
            columns(&["latch_class", "waiting_requests_count", "wait_time_ms", "max_wait_time_ms"]);
        let rows = self
            .server
            .instance
            .latches
            .snapshot()
            .into_iter()
            .map(|l| {
                vec![
                    Value::Text(l.latch_class),
                    big(l.waiting_requests_count),
                    big(l.wait_time_ms),
                    big(l.max_wait_time_ms),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_db_log_stats(database_id): one row of the log's summary, from its VLFs and the
    /// boot page's checkpoint LSNs. Deviation: there are no log backups, so log_backup_time,
    /// log_backup_lsn and log_since_last_log_backup_mb are NULL.
    pub(crate) fn dm_db_log_stats(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "recovery_model",
            "log_min_lsn",
            "log_end_lsn",
            "current_vlf_sequence_number",
            "current_vlf_size_mb",
            "total_vlf_count",
            "total_log_size_mb",
            "active_vlf_count",
            "active_log_size_mb",
            "log_truncation_holdup_reason",
            "log_backup_time",
            "log_backup_lsn",
            "log_since_last_log_backup_mb",
            "log_checkpoint_lsn",
            "log_since_last_checkpoint_mb",
            "log_recovery_lsn",
            "log_recovery_size_mb",
            "recovery_vlf_count",
        ]);
        let db = match arg_i64(args, 0) {
            None => Some(self.catalog_db()),
            Some(id) => self.server.database_by_id(id),
        };
        let Some(db) = db else { return (cols, Vec::new()) };
        let log = db.log();
        let stats = log.log_stats();
        let (checkpoint_lsn, recovery_lsn) = db.checkpoint_lsns();
        let (_, since_checkpoint_bytes) = log.written_since(checkpoint_lsn);
        let (recovery_vlfs, recovery_bytes) = log.written_since(recovery_lsn);
        let mb = |bytes: u64| Value::Float(bytes as f64 / (1024.0 * 1024.0));
        let row = vec![
            Value::Int(i32::from(db.database_id)),
            Value::Text(db.recovery_model_desc().into()),
            Value::Text(stats.min_lsn.to_hex()),
            Value::Text(stats.end_lsn.to_hex()),
            big(u64::from(stats.current_vlf_sequence_number)),
            mb(stats.current_vlf_size_bytes),
            big(stats.total_vlf_count),
            mb(stats.total_log_size_bytes),
            big(stats.active_vlf_count),
            mb(stats.active_log_size_bytes),
            Value::Text(db.log_reuse_wait_desc().into()),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Text(checkpoint_lsn.to_hex()),
            mb(since_checkpoint_bytes),
            Value::Text(recovery_lsn.to_hex()),
            mb(recovery_bytes),
            big(recovery_vlfs),
        ];
        (cols, vec![row])
    }

    /// sys.dm_os_buffer_descriptors: a row per page in the buffer pool, from its frame
    /// ([`engine::buffer::BufferPool::descriptors`]): not latched, as SQL Server reads its
    /// buffer headers. numa_node is 0 (one node).
    pub(crate) fn dm_os_buffer_descriptors(&self) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "file_id",
            "page_id",
            "page_level",
            "allocation_unit_id",
            "page_type",
            "row_count",
            "free_space_in_bytes",
            "is_modified",
            "numa_node",
            "read_microsec",
        ]);
        let mut descriptors = self.server.instance.buffer_pool.descriptors();
        descriptors.sort_by_key(|d| (d.key.database_id, d.key.page.file_id, d.key.page.page_no));
        let rows = descriptors
            .into_iter()
            .map(|d| {
                let header = &d.header;
                vec![
                    Value::Int(i32::from(d.key.database_id)),
                    Value::Int(i32::from(d.key.page.file_id)),
                    Value::Int(d.key.page.page_no as i32),
                    Value::Int(i32::from(header.level)),
                    big(header.allocation_unit_id()),
                    Value::Text(page_type_desc(header.page_type).into()),
                    Value::Int(i32::from(header.slot_count)),
                    Value::Int(i32::from(header.free_count)),
                    Value::Bit(d.is_modified),
                    Value::Int(0),
                    big(d.read_us),
                ]
            })
            .collect();
        (cols, rows)
    }

    pub(crate) fn dm_os_spinlock_stats(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "collisions",
            "spins",
            "spins_per_collision",
            "sleep_time",
            "backoffs",
        ]);
        let rows = self
            .server
            .instance
            .spinlocks
            .snapshot()
            .into_iter()
            .map(|s| {
                vec![
                    Value::Text(s.name),
                    big(s.collisions),
                    big(s.spins),
                    Value::Real(s.spins_per_collision as f32),
                    big(s.sleep_time),
                    Value::Int(i32::try_from(s.backoffs).unwrap_or(i32::MAX)),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_os_schedulers: the instance's schedulers ([`engine::scheduler`]), one row each.
    /// Deviations: only the VISIBLE schedulers (no hidden or DAC ones); no addresses; cpu_id
    /// is the process's CPU of the scheduler's number (modulo their count; its workers are
    /// bound to it only under an 'affinity mask', as SQL Server's are); one task per worker.
    pub(crate) fn dm_os_schedulers(&self) -> ViewRows {
        let cols = columns(&[
            "scheduler_address",
            "parent_node_id",
            "scheduler_id",
            "cpu_id",
            "status",
            "is_online",
            "is_idle",
            "context_switches_count",
            "current_tasks_count",
            "runnable_tasks_count",
            "current_workers_count",
            "active_workers_count",
            "work_queue_count",
            "pending_disk_io_count",
            "load_factor",
            "yield_count",
            "quantum_length_us",
        ]);
        let quantum_us = engine::scheduler::QUANTUM.as_micros() as u64;
        let pending = self.server.instance.file_io.pending();
        let rows = self
            .server
            .instance
            .schedulers
            .snapshot()
            .into_iter()
            .map(|s| {
                let workers = u64::from(s.current_workers_count);
                let scheduler_id = s.scheduler_id as usize;
                let pending_ios =
                    pending.iter().filter(|io| io.scheduler_id == Some(scheduler_id)).count();
                vec![
                    scheduler_address(scheduler_id),
                    Value::Int(0),
                    int(u64::from(s.scheduler_id)),
                    int(u64::from(s.cpu_id)),
                    text(s.status),
                    Value::Bit(s.is_online),
                    Value::Bit(s.is_idle),
                    int(s.context_switches_count),
                    int(workers),
                    int(u64::from(s.runnable_tasks_count)),
                    int(workers),
                    int(u64::from(s.active_workers_count)),
                    big(0),
                    int(pending_ios as u64),
                    int(workers),
                    int(s.yield_count),
                    big(quantum_us),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_os_tasks: the task of every request running on a scheduler now. Deviations:
    /// one task per request (exec_context_id 0, request_id 0), whose task_address is an
    /// identifier per session ([`task_address`]), no worker address, and only RUNNING, RUNNABLE and SUSPENDED (no PENDING, DONE or SPINLOOP);
    /// pending_io_count is the reads and writes the task's session is inside now (at most
    /// one: the engine's I/O is synchronous on the worker's thread).
    pub(crate) fn dm_os_tasks(&self) -> ViewRows {
        let cols = columns(&[
            "task_address",
            "task_state",
            "context_switches_count",
            "pending_io_count",
            "scheduler_address",
            "scheduler_id",
            "session_id",
            "exec_context_id",
            "request_id",
        ]);
        let pending = self.server.instance.file_io.pending();
        let rows = self
            .server
            .instance
            .schedulers
            .tasks()
            .into_iter()
            .map(|t| {
                let pending_ios = pending.iter().filter(|io| io.session_id == t.session_id).count();
                vec![
                    task_address(t.session_id),
                    text(t.task_state),
                    int(t.context_switches_count),
                    int(pending_ios as u64),
                    scheduler_address(t.scheduler_id as usize),
                    Value::Int(t.scheduler_id as i32),
                    Value::SmallInt(t.session_id as i16),
                    Value::Int(0),
                    Value::Int(0),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_exec_sessions: a row per user session (is_user_process 1) and per system
    /// session. The SET options are how the engine always behaves (DBCC USEROPTIONS): language
    /// us_english, mdy, DATEFIRST 7, the ANSI options ON, no TEXTSIZE limit (2147483647).
    /// Deviations: memory_usage and writes are 0 (a session's memory and its page writes are
    /// not counted apart); total_scheduled_time is its requests' elapsed time, waits included;
    /// client_version is the TDS major version (7), inferred from the column's description;
    /// endpoint_id is 4 (the default TCP endpoint) for TDS sessions and 2 (SQL Server's local
    /// machine endpoint) for embedded ones; group_id is 2 (Resource Governor's default group:
    /// there is no other).
    pub(crate) fn dm_exec_sessions(&self) -> ViewRows {
        let cols = columns(&SESSION_COLUMNS);
        let sessions = self.server.sessions.lock().clone();
        let mut rows: Vec<Vec<Value>> = sessions
            .into_iter()
            .map(|(spid, info)| self.user_session_row(spid, &info).values())
            .collect();
        rows.extend(self.system_sessions().iter().map(SessionRow::values));
        rows.sort_by_key(|row| tsql_sort_key(&row[0]));
        (cols, rows)
    }

    /// A user session's row, from what the server keeps of it.
    fn user_session_row(&self, spid: u16, info: &crate::server::SessionInfo) -> SessionRow {
        let connection = info.connection.as_ref();
        let elapsed_ms = (info.used.elapsed_ns / 1_000_000) as i64;
        SessionRow {
            session_id: spid,
            login_time: self.server.datetime_of(info.login_time),
            host_name: info.host_name.clone().map_or(Value::Null, Value::Text),
            program_name: Value::Text(info.program_name.clone()),
            host_process_id: connection
                .map_or(Value::Null, |c| int(c.facts.host_process_id.into())),
            client_version: connection
                .map_or(Value::Null, |c| Value::Int((c.facts.protocol_version >> 28) as i32)),
            client_interface_name: connection
                .map_or(Value::Null, |c| Value::Text(c.facts.client_interface_name.clone())),
            login_name: info.login_name.clone(),
            status: if info.request.is_some() { "running" } else { "sleeping" },
            cpu_time_ms: (info.used.cpu_time_ns / 1_000_000) as i64,
            scheduled_time_ms: elapsed_ms,
            elapsed_time_ms: elapsed_ms,
            endpoint_id: if connection.is_some() { 4 } else { 2 },
            last_request_start_time: self.server.datetime_of(info.last_request_start_time),
            last_request_end_time: self.server.datetime_of(info.last_request_end_time),
            reads: info.used.reads,
            logical_reads: info.used.logical_reads,
            is_user_process: true,
            transaction_isolation_level: info.transaction_isolation_level,
            lock_timeout_ms: info.lock_timeout_ms,
            deadlock_priority: i32::from(info.deadlock_priority),
            row_count: info.row_count,
            prev_error: info.prev_error,
            database_id: info.database_id,
            open_transaction_count: info.open_transaction_count,
        }
    }

    /// A row per system session (is_user_process 0): one per session id of the running
    /// system tasks, with the first task's database and start; cpu_time is its tasks' threads'
    /// CPU and total_elapsed_time the time since the first started. Client columns are NULL,
    /// as SQL Server shows them for its system sessions; reads and logical_reads are 0 (a
    /// thread's read totals can be read on that thread only, and these threads report none).
    fn system_sessions(&self) -> Vec<SessionRow> {
        let mut by_session: BTreeMap<u16, Vec<engine::system_tasks::SystemTaskRow>> =
            BTreeMap::new();
        for task in self.server.instance.system_tasks.snapshot() {
            by_session.entry(task.identity.session_id).or_default().push(task);
        }
        let mut rows = Vec::new();
        for (session_id, tasks) in by_session {
            let first = &tasks[0];
            let cpu_ns: u64 = tasks
                .iter()
                .map(|t| engine::session::thread_cpu_ns_of(t.thread_id).unwrap_or(0))
                .sum();
            let elapsed_ms = first.started.elapsed().as_millis() as i64;
            let started = self.server.datetime_of(first.started);
            rows.push(SessionRow {
                session_id,
                login_time: started.clone(),
                host_name: Value::Null,
                program_name: Value::Null,
                host_process_id: Value::Null,
                client_version: Value::Null,
                client_interface_name: Value::Null,
                login_name: "sa".into(),
                status: "sleeping",
                cpu_time_ms: (cpu_ns / 1_000_000) as i64,
                scheduled_time_ms: elapsed_ms,
                elapsed_time_ms: elapsed_ms,
                endpoint_id: 0,
                last_request_start_time: started.clone(),
                last_request_end_time: started,
                reads: 0,
                logical_reads: 0,
                is_user_process: false,
                transaction_isolation_level: 2,
                lock_timeout_ms: -1,
                deadlock_priority: 0,
                row_count: 0,
                prev_error: 0,
                database_id: system_task_database(first),
                open_transaction_count: 0,
            });
        }
        rows
    }

    /// sys.dm_exec_connections: one row per session connected over TDS, from its LOGIN7, its
    /// socket and the packets counted as they were read and written (num_reads, num_writes).
    /// Deviations: endpoint 4 (SQL Server's default TCP endpoint) for every connection;
    /// node_affinity 0; no parent connection (MARS is not supported); most_recent_sql_handle is
    /// the session's last batch's, as sys.dm_exec_requests.sql_handle makes it.
    pub(crate) fn dm_exec_connections(&self) -> ViewRows {
        let cols = columns(&[
            "session_id",
            "most_recent_session_id",
            "connect_time",
            "net_transport",
            "protocol_type",
            "protocol_version",
            "endpoint_id",
            "encrypt_option",
            "auth_scheme",
            "node_affinity",
            "num_reads",
            "num_writes",
            "last_read",
            "last_write",
            "net_packet_size",
            "client_net_address",
            "client_tcp_port",
            "local_net_address",
            "local_tcp_port",
            "connection_id",
            "parent_connection_id",
            "most_recent_sql_handle",
        ]);
        let sessions = self.server.sessions.lock().clone();
        let mut rows = Vec::new();
        for (spid, info) in sessions {
            let Some(connection) = info.connection else { continue };
            let (reads, writes) = connection.packets();
            let (last_read, last_write) = connection.last_read_and_write();
            let encrypt = if connection.facts.encrypted { "TRUE" } else { "FALSE" };
            rows.push(vec![
                Value::Int(i32::from(spid)),
                Value::Int(i32::from(spid)),
                self.server.datetime_of(connection.connect_time),
                text("TCP"),
                text("TSQL"),
                Value::Int(connection.facts.protocol_version as i32),
                Value::Int(4),
                text(encrypt),
                text("SQL"),
                Value::SmallInt(0),
                int(reads),
                int(writes),
                self.server.datetime_of(last_read),
                self.server.datetime_of(last_write),
                Value::Int(connection.facts.packet_size as i32),
                Value::Text(connection.facts.client_address.ip().to_string()),
                Value::Int(i32::from(connection.facts.client_address.port())),
                Value::Text(connection.facts.local_address.ip().to_string()),
                Value::Int(i32::from(connection.facts.local_address.port())),
                Value::Guid(connection.facts.connection_id),
                Value::Null,
                Value::Bytes(sql_handle(&info.last_batch)),
            ]);
        }
        (cols, rows)
    }

    /// sys.dm_exec_requests: each running batch (its status from its task and its wait: see
    /// [`request_status`]) and each system task (background), with SQL Server 2022's columns.
    /// The blocking session, wait type, time and resource come from the waiting-tasks table;
    /// last_wait_type is the wait it is in, or else its session's last one (empty if none);
    /// transaction_id is the transaction its session has logged in, 0 if none. The calling
    /// session's own request shows its reads, logical reads, @@ROWCOUNT, @@ERROR and nesting
    /// level as they stand; another session's running request shows 0 for each (those counts
    /// are on its own thread). Deviations: statement_start_offset 0 and
    /// statement_end_offset -1 (the whole batch, as sysprocesses' stmt_start and stmt_end);
    /// no plans are cached (plan_handle, query_hash and query_plan_hash NULL); percent_complete
    /// and estimated_completion_time 0; writes and granted_query_memory 0 (no memory grants);
    /// dop 1; open_resultset_count 1; the session's SET options as sys.dm_exec_sessions shows
    /// them.
    pub(crate) fn dm_exec_requests(&self) -> ViewRows {
        let tasks: BTreeMap<u16, engine::scheduler::TaskRow> = self
            .server
            .instance
            .schedulers
            .tasks()
            .into_iter()
            .map(|t| (t.session_id, t))
            .collect();
        let waits: BTreeMap<u16, engine::waits::WaitingTaskRow> = self
            .server
            .instance
            .waiting_tasks
            .snapshot()
            .into_iter()
            .map(|t| (t.session_id, t))
            .collect();
        let transactions: BTreeMap<u16, u64> =
            self.logged_transactions().into_iter().map(|(_, t)| (t.spid, t.xact_id)).collect();
        let sessions = self.server.sessions.lock().clone();
        let mut rows = Vec::new();
        for (spid, info) in sessions {
            let Some(command) = info.command() else { continue };
            let Some(request) = info.request.clone() else { continue };
            let wait = waits.get(&spid);
            let task = tasks.get(&spid);
            let mut row = RequestRow {
                session_id: spid,
                start_time: self.server.datetime_of(request.started),
                status: request_status(task.map(|t| t.task_state), wait.is_some()),
                command,
                sql_handle: Value::Bytes(sql_handle(&info.last_batch)),
                database_id: info.database_id,
                connection_id: info
                    .connection
                    .as_ref()
                    .map_or(Value::Null, |c| Value::Guid(c.facts.connection_id)),
                blocking_session_id: wait.and_then(|w| w.blocking_session_id).unwrap_or(0),
                wait_type: wait.map_or(Value::Null, |w| text(w.wait_type)),
                wait_time_ms: wait.map_or(0, |w| w.wait_duration_ms),
                last_wait_type: wait
                    .map(|w| w.wait_type)
                    .or_else(|| self.server.instance.waits.last_wait_type(spid))
                    .unwrap_or(""),
                wait_resource: wait.map_or(String::new(), |w| self.wait_resource(w)),
                open_transaction_count: info.open_transaction_count,
                transaction_id: transactions.get(&spid).copied().unwrap_or(0),
                cpu_time_ms: request_cpu_ns(&request) / 1_000_000,
                elapsed_ms: request.started.elapsed().as_millis() as u64,
                scheduler_id: task.map_or(Value::Null, |t| Value::Int(t.scheduler_id as i32)),
                task_address: task.map_or(Value::Null, |_| task_address(spid)),
                reads: 0,
                logical_reads: 0,
                transaction_isolation_level: info.transaction_isolation_level,
                lock_timeout_ms: info.lock_timeout_ms,
                deadlock_priority: i32::from(info.deadlock_priority),
                row_count: 0,
                prev_error: 0,
                nest_level: 0,
                page_resource: page_resource(wait),
            };
            if spid == self.spid {
                self.own_request_counts(&mut row, &request);
            }
            rows.push(row.values());
        }
        rows.extend(self.system_requests().iter().map(RequestRow::values));
        rows.sort_by_key(|row| tsql_sort_key(&row[0]));
        (columns(&REQUEST_COLUMNS), rows)
    }

    /// The calling session's own running request: its database, reads and logical reads so
    /// far, and @@ROWCOUNT, @@ERROR and @@NESTLEVEL as they stand.
    fn own_request_counts(&self, row: &mut RequestRow, request: &crate::server::RunningRequest) {
        let reads = engine::iostats::thread_reads();
        row.database_id = self.db().database_id;
        row.reads = reads.reads.saturating_sub(request.reads_start.reads);
        row.logical_reads = reads.logical_reads.saturating_sub(request.reads_start.logical_reads);
        row.row_count = self.rowcount;
        row.prev_error = self.last_error;
        row.nest_level = self.nest_level as i32;
    }

    /// The system tasks' requests (status background), each with the wait it is in now.
    fn system_requests(&self) -> Vec<RequestRow> {
        let tasks = self.server.instance.system_tasks.snapshot();
        tasks
            .into_iter()
            .map(|task| {
                let cpu_ns = engine::session::thread_cpu_ns_of(task.thread_id).unwrap_or(0);
                let session_id = task.identity.session_id;
                let waiting = task.waiting;
                RequestRow {
                    session_id,
                    start_time: self.server.datetime_of(task.started),
                    status: "background",
                    command: task.identity.command.to_string(),
                    sql_handle: Value::Null,
                    database_id: system_task_database(&task),
                    connection_id: Value::Null,
                    blocking_session_id: 0,
                    wait_type: waiting.map_or(Value::Null, |(wait_type, _)| text(wait_type)),
                    wait_time_ms: waiting
                        .map_or(0, |(_, since)| since.elapsed().as_millis() as u64),
                    last_wait_type: waiting
                        .map(|(wait_type, _)| wait_type)
                        .or_else(|| self.server.instance.waits.last_wait_type(session_id))
                        .unwrap_or(""),
                    wait_resource: String::new(),
                    open_transaction_count: 0,
                    transaction_id: 0,
                    cpu_time_ms: cpu_ns / 1_000_000,
                    elapsed_ms: task.started.elapsed().as_millis() as u64,
                    scheduler_id: Value::Null,
                    task_address: Value::Null,
                    reads: 0,
                    logical_reads: 0,
                    transaction_isolation_level: 2,
                    lock_timeout_ms: -1,
                    deadlock_priority: 0,
                    row_count: 0,
                    prev_error: 0,
                    nest_level: 0,
                    page_resource: Value::Null,
                }
            })
            .collect()
    }

    /// sys.dm_exec_input_buffer(session_id, request_id): the text of a session's running or
    /// last batch, as DBCC INPUTBUFFER shows it ([`input_buffer_row`]). No row for a session
    /// that is not connected or a request_id other than 0 (a session runs one request at a
    /// time here) or NULL.
    pub(crate) fn dm_exec_input_buffer(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&["event_type", "parameters", "event_info"]);
        let spid = args.first().and_then(value::as_i64).and_then(|id| u16::try_from(id).ok());
        let request_ok = args.get(1).is_none_or(|r| matches!(value::as_i64(r), None | Some(0)));
        let batch = spid
            .filter(|_| request_ok)
            .and_then(|spid| self.server.sessions.lock().get(&spid).map(|i| i.last_batch.clone()));
        let rows = batch.map(|batch| input_buffer_row(&batch)).into_iter().collect();
        (cols, rows)
    }

    /// sys.dm_exec_sql_text(sql_handle): the text of the batch a handle names, while a
    /// session's running or last batch is that text (dm_exec_requests.sql_handle). Deviation:
    /// SQL Server keeps a handle's text as long as the batch's plan is cached; dbid and
    /// objectid are NULL (ad hoc batches), encrypted 0.
    pub(crate) fn dm_exec_sql_text(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&["dbid", "objectid", "number", "encrypted", "text"]);
        let Some(Value::Bytes(handle)) = args.first() else { return (cols, Vec::new()) };
        let sessions = self.server.sessions.lock();
        let found = sessions.values().find(|info| sql_handle(&info.last_batch) == *handle);
        let rows = found
            .map(|info| {
                vec![
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Bit(false),
                    Value::Text(info.last_batch.to_string()),
                ]
            })
            .into_iter()
            .collect();
        (cols, rows)
    }

    /// sys.dm_io_virtual_file_stats(database_id | NULL, file_id | NULL).
    pub(crate) fn dm_io_virtual_file_stats(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "file_id",
            "sample_ms",
            "num_of_reads",
            "num_of_bytes_read",
            "io_stall_read_ms",
            "num_of_writes",
            "num_of_bytes_written",
            "io_stall_write_ms",
            "io_stall",
            "size_on_disk_bytes",
            "file_handle",
            "io_stall_queued_read_ms",
            "io_stall_queued_write_ms",
        ]);
        let (want_db, want_file) = (arg_i64(args, 0), arg_i64(args, 1));
        let instance = &self.server.instance;
        let sample_ms = instance.started.elapsed().as_millis() as i64;
        let mut databases = self.server.databases();
        databases.sort_by_key(|d| d.database_id);
        let mut rows = Vec::new();
        for db in
            databases.iter().filter(|d| want_db.is_none_or(|id| id == i64::from(d.database_id)))
        {
            for file in db.database_files() {
                if want_file.is_some_and(|id| id != i64::from(file.file_id)) {
                    continue;
                }
                let io = instance.file_io.snapshot(&file.path);
                rows.push(vec![
                    Value::SmallInt(db.database_id as i16),
                    Value::SmallInt(file.file_id as i16),
                    Value::BigInt(sample_ms),
                    big(io.num_of_reads),
                    big(io.num_of_bytes_read),
                    big(io.io_stall_read_ms),
                    big(io.num_of_writes),
                    big(io.num_of_bytes_written),
                    big(io.io_stall_write_ms),
                    big(io.io_stall_read_ms + io.io_stall_write_ms),
                    big(u64::from(file.size_pages) * 8192),
                    instance.file_io.handle_of(&file.path).map_or(Value::Null, file_handle),
                    // No Resource Governor: no I/O is ever queued by it.
                    Value::BigInt(0),
                    Value::BigInt(0),
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.fn_virtualfilestats(database_id | NULL, file_id | NULL): sys.dm_io_virtual_file_stats'
    /// figures under the function's older names and order (TimeStamp is sample_ms, FileHandle
    /// the handle as a number).
    pub(crate) fn fn_virtualfilestats(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&[
            "DbId",
            "FileId",
            "TimeStamp",
            "NumberReads",
            "BytesRead",
            "IoStallReadMS",
            "NumberWrites",
            "BytesWritten",
            "IoStallWriteMS",
            "IoStallMS",
            "FileHandle",
            "BytesOnDisk",
        ]);
        let (_, rows) = self.dm_io_virtual_file_stats(args);
        let rows = rows
            .into_iter()
            .map(|row| {
                // file_handle's bytes as a bigint, as CAST(file_handle AS bigint) reads them.
                let handle = value::convert(&row[11], engine::record::SqlType::BigInt)
                    .unwrap_or(Value::Null);
                let mut out = row[..10].to_vec();
                out.push(handle);
                out.push(row[10].clone());
                out
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_io_pending_io_requests: each read and write a thread is inside now, with its
    /// file's handle and path, its offset and how long it has been pending. Deviations: one
    /// I/O is pending while its thread is in the call (io_pending 1); the request's "address"
    /// is its number in the instance, there are no completion or user-data addresses (NULL),
    /// and an I/O of a thread outside the schedulers (lazy
    /// writer, log writer, I/O threads) has no scheduler_address (NULL).
    pub(crate) fn dm_io_pending_io_requests(&self) -> ViewRows {
        let cols = columns(&[
            "io_completion_request_address",
            "io_type",
            "io_pending_ms_ticks",
            "io_pending",
            "io_completion_routine_address",
            "io_user_data_address",
            "scheduler_address",
            "io_handle",
            "io_offset",
            "io_handle_path",
        ]);
        let rows = self
            .server
            .instance
            .file_io
            .pending()
            .into_iter()
            .map(|io| {
                vec![
                    pointer_bytes(io.request_id),
                    text("disk"),
                    big(io.pending_ms),
                    Value::Int(1),
                    Value::Null,
                    Value::Null,
                    io.scheduler_id.map_or(Value::Null, scheduler_address),
                    file_handle(io.io_handle),
                    big(io.offset),
                    Value::Text(io.path.display().to_string()),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_db_log_space_usage: the current database's log. Deviation: there are no log
    /// backups, so log_space_in_bytes_since_last_backup is NULL (as sys.dm_db_log_stats'
    /// log_since_last_log_backup_mb).
    pub(crate) fn dm_db_log_space_usage(&self) -> ViewRows {
        let cols = columns(&[
            "database_id",
            "total_log_size_in_bytes",
            "used_log_space_in_bytes",
            "used_log_space_in_percent",
            "log_space_in_bytes_since_last_backup",
        ]);
        let db = self.db();
        let (size_mb, used_pct) = db.log().space();
        let total = (size_mb * 1024.0 * 1024.0).round() as i64;
        let used = (total as f64 * used_pct / 100.0).round() as i64;
        let row = vec![
            Value::SmallInt(db.database_id as i16),
            Value::BigInt(total),
            Value::BigInt(used),
            Value::Real(used_pct as f32),
            Value::Null,
        ];
        (cols, vec![row])
    }

    /// One row per data file of the current database; mixed extents are those holding an
    /// allocation unit's single pages or IAM pages.
    pub(crate) fn dm_db_file_space_usage(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "database_id",
            "file_id",
            "filegroup_id",
            "total_page_count",
            "allocated_extent_page_count",
            "unallocated_extent_page_count",
            "version_store_reserved_page_count",
            "user_object_reserved_page_count",
            "internal_object_reserved_page_count",
            "mixed_extent_page_count",
        ]);
        let db = self.db();
        let mut mixed: BTreeSet<PageId> = BTreeSet::new();
        let mut user_pages: BTreeMap<u16, i64> = BTreeMap::new();
        for (au_id, _) in db.allocation_units() {
            for page in db.unit_pages(au_id)? {
                if page.is_mixed {
                    mixed.insert(page.extent);
                } else {
                    *user_pages.entry(page.page.file_id).or_default() += 1;
                }
            }
        }
        let fg_ids: BTreeMap<String, u16> =
            db.filegroups().into_iter().map(|(id, name, ..)| (name, id)).collect();
        let rows = db
            .file_space()
            .into_iter()
            .map(|f| {
                let total = i64::from(f.total_extents) * 8;
                let free = i64::from(f.free_extents) * 8;
                let mixed_pages =
                    mixed.iter().filter(|e| e.file_id == f.file_id).count() as i64 * 8;
                vec![
                    Value::SmallInt(db.database_id as i16),
                    Value::SmallInt(f.file_id as i16),
                    Value::SmallInt(fg_ids.get(&f.filegroup).copied().unwrap_or(1) as i16),
                    Value::BigInt(total),
                    Value::BigInt(total - free),
                    Value::BigInt(free),
                    Value::BigInt(0),
                    Value::BigInt(user_pages.get(&f.file_id).copied().unwrap_or(0)),
                    Value::BigInt(0),
                    Value::BigInt(mixed_pages),
                ]
            })
            .collect();
        Ok((cols, rows))
    }

    /// sys.dm_os_sys_info: the machine and the buffer pool's memory. committed_target_kb is
    /// the pool's frames ('max server memory (MB)', capped at 80 % of the machine's memory),
    /// committed_kb the 8 KB buffers the pool has taken (all of them at startup under trace
    /// flag 834, whose sql_memory_model is LARGE_PAGES). physical_memory_kb is the machine's
    /// memory the instance detected at its start (/proc/meminfo's MemTotal, or a smaller cgroup
    /// limit; NULL without MemTotal). The CPUs, the process's CPU time and priority, and the
    /// hypervisor are as Linux reports them ([`engine::machine`]). Deviations: cpu_ticks is
    /// CLOCK_MONOTONIC in nanoseconds, not the CPU's time-stamp counter (reading it needs
    /// unsafe code); os_error_mode is 0 (a
    /// Windows setting); time_source is QUERY_PERFORMANCE_COUNTER's 0 for the monotonic
    /// clock, Linux's counterpart; max_workers_count is NULL (each connection has its own
    /// worker, with no configured limit) and deadlock_monitor_serial_number NULL (the waiting
    /// sessions search for deadlocks; there is no monitor task); process_physical_affinity is
    /// NULL; stack_size_in_bytes is the 2 MB of a Rust thread a connection runs on.
    pub(crate) fn dm_os_sys_info(&self) -> ViewRows {
        let cols = columns(&[
            "cpu_ticks",
            "ms_ticks",
            "cpu_count",
            "hyperthread_ratio",
            "physical_memory_kb",
            "virtual_memory_kb",
            "committed_kb",
            "committed_target_kb",
            "visible_target_kb",
            "stack_size_in_bytes",
            "os_quantum",
            "os_error_mode",
            "os_priority_class",
            "max_workers_count",
            "scheduler_count",
            "scheduler_total_count",
            "deadlock_monitor_serial_number",
            "sqlserver_start_time_ms_ticks",
            "sqlserver_start_time",
            "affinity_type",
            "affinity_type_desc",
            "process_kernel_time_ms",
            "process_user_time_ms",
            "time_source",
            "time_source_desc",
            "virtual_machine_type",
            "virtual_machine_type_desc",
            "softnuma_configuration",
            "softnuma_configuration_desc",
            "process_physical_affinity",
            "sql_memory_model",
            "sql_memory_model_desc",
            "socket_count",
            "cores_per_socket",
            "numa_node_count",
        ]);
        use engine::machine::{CpuTopology, ProcessTimes};
        let instance = &self.server.instance;
        let pool = &instance.buffer_pool;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let topology = CpuTopology::read().unwrap_or_else(|_| CpuTopology::parse(""));
        let times = ProcessTimes::read().unwrap_or_default();
        let ms_ticks = engine::machine::ms_since_boot();
        let up_ms = instance.started.elapsed().as_millis() as u64;
        let (model, model_desc) =
            if pool.in_large_pages() { (3, "LARGE_PAGES") } else { (1, "CONVENTIONAL") };
        let manual_affinity =
            instance.configuration.value_in_use(engine::configuration::AFFINITY_MASK) != 0;
        let (vm_type, vm_desc) = if topology.hypervisor { (1, "HYPERVISOR") } else { (0, "NONE") };
        let target_kb = big(pool.frame_count() as u64 * 8);
        let schedulers = Value::Int(instance.schedulers.count() as i32);
        let row = vec![
            big(ms_ticks.saturating_mul(1_000_000)),
            big(ms_ticks),
            Value::Int(cpus as i32),
            Value::Int(topology.logical_per_socket as i32),
            instance.physical_memory_mb.map_or(Value::Null, |mb| big(mb * 1024)),
            big(engine::process_memory::USER_ADDRESS_SPACE_KB),
            big(pool.committed_bytes() / 1024),
            target_kb.clone(),
            target_kb,
            Value::Int(2 * 1024 * 1024),
            big(engine::scheduler::QUANTUM.as_millis() as u64),
            Value::Int(0),
            Value::Int(times.priority_class()),
            Value::Null,
            schedulers.clone(),
            schedulers,
            Value::Null,
            big(ms_ticks.saturating_sub(up_ms)),
            crate::functions::current_time("GETDATE", instance.start_time),
            Value::Int(if manual_affinity { 1 } else { 2 }),
            text(if manual_affinity { "MANUAL" } else { "AUTO" }),
            big(times.kernel_ms),
            big(times.user_ms),
            Value::Int(0),
            text("QUERY_PERFORMANCE_COUNTER"),
            Value::Int(vm_type),
            text(vm_desc),
            Value::Int(0),
            text("OFF"),
            Value::Null,
            Value::Int(model),
            text(model_desc),
            Value::Int(topology.sockets as i32),
            Value::Int(topology.cores_per_socket as i32),
            Value::Int(engine::machine::numa_node_count() as i32),
        ];
        (cols, vec![row])
    }

    /// sys.dm_os_sys_memory: the machine's memory as Linux reports it, mapped as
    /// [`engine::process_memory::SystemMemory`] says: the signals are the kernel's reclaim
    /// watermarks (deviation: SQL Server reads Windows' memory resource notifications).
    pub(crate) fn dm_os_sys_memory(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "total_physical_memory_kb",
            "available_physical_memory_kb",
            "total_page_file_kb",
            "available_page_file_kb",
            "system_cache_kb",
            "kernel_paged_pool_kb",
            "kernel_nonpaged_pool_kb",
            "system_high_memory_signal_state",
            "system_low_memory_signal_state",
            "system_memory_state_desc",
        ]);
        let memory = engine::process_memory::SystemMemory::read().map_err(|e| {
            SqlError::new(50000, 16, 1, format!("Could not read the machine's memory: {e}"))
        })?;
        let state = match (memory.is_high(), memory.is_low()) {
            (true, _) => "Available physical memory is high",
            (_, true) => "Available physical memory is low",
            _ => "Physical memory usage is steady",
        };
        let row = vec![
            big(memory.total_kb),
            big(memory.available_kb),
            big(memory.commit_limit_kb),
            big(memory.commit_available_kb),
            big(memory.cache_kb),
            big(memory.kernel_reclaimable_kb),
            big(memory.kernel_unreclaimable_kb),
            Value::Bit(memory.is_high()),
            Value::Bit(memory.is_low()),
            text(state),
        ];
        Ok((cols, vec![row]))
    }

    /// sys.dm_os_process_memory: the process's memory as Linux reports it
    /// ([`engine::process_memory`]). The low-memory columns are 0: the engine does not listen
    /// for the system's memory notifications.
    pub(crate) fn dm_os_process_memory(&self) -> Result<ViewRows> {
        let cols = columns(&[
            "physical_memory_in_use_kb",
            "large_page_allocations_kb",
            "locked_page_allocations_kb",
            "total_virtual_address_space_kb",
            "virtual_address_space_reserved_kb",
            "virtual_address_space_committed_kb",
            "virtual_address_space_available_kb",
            "page_fault_count",
            "memory_utilization_percentage",
            "available_commit_limit_kb",
            "process_physical_memory_low",
            "process_virtual_memory_low",
        ]);
        use engine::process_memory::{ProcessMemory, USER_ADDRESS_SPACE_KB};
        let memory = ProcessMemory::read().map_err(|e| {
            SqlError::new(50000, 16, 1, format!("Could not read the process's memory: {e}"))
        })?;
        let row = vec![
            big(memory.resident_kb),
            big(memory.huge_pages_kb),
            big(memory.locked_kb),
            big(USER_ADDRESS_SPACE_KB),
            big(memory.virtual_size_kb),
            big(memory.committed_kb()),
            big(USER_ADDRESS_SPACE_KB.saturating_sub(memory.virtual_size_kb)),
            big(memory.page_faults),
            Value::Int(memory.utilization_percent() as i32),
            big(memory.available_commit_kb),
            Value::Bit(false),
            Value::Bit(false),
        ];
        Ok((cols, vec![row]))
    }

    /// sys.dm_os_memory_clerks: the buffer pool's clerk (MEMORYCLERK_SQLBUFFERPOOL), its
    /// pages_kb the buffers the pool has committed (sys.dm_os_sys_info.committed_kb). The
    /// engine's other memory (locks, the log cache, plans) has no clerk: it is not accounted.
    pub(crate) fn dm_os_memory_clerks(&self) -> ViewRows {
        let cols = columns(&[
            "memory_clerk_address",
            "type",
            "name",
            "memory_node_id",
            "pages_kb",
            "virtual_memory_reserved_kb",
            "virtual_memory_committed_kb",
            "awe_allocated_kb",
            "shared_memory_reserved_kb",
            "shared_memory_committed_kb",
            "page_size_in_bytes",
            "page_allocator_address",
            "host_address",
        ]);
        const BUFFER_POOL_CLERK_ADDRESS: u64 = 0x0000_0100_0001_0000;
        let pool = &self.server.instance.buffer_pool;
        let row = vec![
            pointer_bytes(BUFFER_POOL_CLERK_ADDRESS),
            text("MEMORYCLERK_SQLBUFFERPOOL"),
            text("Default"),
            Value::SmallInt(0),
            big(pool.committed_bytes() / 1024),
            big(0),
            big(0),
            big(0),
            big(0),
            big(0),
            big(8192),
            pointer_bytes(BUFFER_POOL_CLERK_ADDRESS + 0x40),
            pointer_bytes(0),
        ];
        (cols, vec![row])
    }

    /// sys.configurations: the server options the engine has ([`engine::configuration`]),
    /// with SQL Server's ids, names and ranges, configured values and values in use.
    pub(crate) fn sys_configurations(&self) -> ViewRows {
        let cols = columns(&[
            "configuration_id",
            "name",
            "value",
            "minimum",
            "maximum",
            "value_in_use",
            "description",
            "is_dynamic",
            "is_advanced",
        ]);
        let configuration = &self.server.instance.configuration;
        let mut options: Vec<&ConfigOption> = OPTIONS.iter().collect();
        options.sort_by_key(|o| o.configuration_id);
        let mut rows = Vec::with_capacity(options.len());
        for option in options {
            let id = option.configuration_id;
            rows.push(vec![
                Value::Int(id),
                text(option.name),
                Value::Int(configuration.value(id)),
                Value::Int(option.minimum),
                Value::Int(option.maximum),
                Value::Int(configuration.value_in_use(id)),
                text(option.description),
                Value::Bit(option.is_dynamic),
                Value::Bit(option.is_advanced),
            ]);
        }
        (cols, rows)
    }

    pub(crate) fn dm_server_services(&self) -> ViewRows {
        let cols = columns(&[
            "servicename",
            "startup_type",
            "startup_type_desc",
            "status",
            "status_desc",
            "process_id",
            "last_startup_time",
            "service_account",
            "filename",
            "is_clustered",
            "cluster_nodename",
            "instant_file_initialization_enabled",
        ]);
        let instance = &self.server.instance;
        let started = crate::functions::current_time("SYSDATETIME", instance.start_time);
        let row = vec![
            text("SQL Server (MSSQLSERVER)"),
            Value::Int(3),
            text("Manual"),
            Value::Int(4),
            text("Running"),
            Value::Int(std::process::id() as i32),
            started,
            text("extentdb"),
            Value::Text(
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            ),
            text("N"),
            Value::Null,
            text(if instance.ifi_enabled() { "Y" } else { "N" }),
        ];
        (cols, vec![row])
    }

    /// sys.dm_os_host_info: the Linux distribution the instance runs on
    /// ([`engine::machine::os_release`]), as SQL Server on Linux shows it: no service pack
    /// level, no Windows SKU, the us_english LCID.
    pub(crate) fn dm_os_host_info(&self) -> ViewRows {
        let cols = columns(&[
            "host_platform",
            "host_distribution",
            "host_release",
            "host_service_pack_level",
            "host_sku",
            "os_language_version",
        ]);
        let (distribution, release) = engine::machine::os_release();
        let row = vec![
            text("Linux"),
            Value::Text(distribution),
            Value::Text(release),
            text(""),
            Value::Null,
            Value::Int(1033),
        ];
        (cols, vec![row])
    }

    /// The allocation units a DMF's (object_id, index_id) arguments select in `db`:
    /// (object id, index id, unit id). NULL object: every table (and, with no object, the
    /// system tables too, as object ids 34, 41, 54 and 60).
    fn selected_units(
        &self,
        db: &Database,
        object_id: Option<i64>,
        index_id: Option<i64>,
    ) -> Result<Vec<(i32, i32, u64)>> {
        let catalog = db.catalog()?;
        let mut units = Vec::new();
        let mut tables = catalog.tables();
        tables.sort_by_key(|t| t.object_id);
        for table in tables {
            if object_id.is_some_and(|id| id != i64::from(table.object_id)) {
                continue;
            }
            for index in &table.indexes {
                if index_id.is_none_or(|id| id == i64::from(index.index_id)) {
                    units.push((table.object_id, index.index_id, index.au_id));
                }
            }
        }
        Ok(units)
    }

    /// sys.dm_db_index_operational_stats(database_id, object_id, index_id, partition_number):
    /// a row per selected heap or index with its page allocations since the database opened
    /// (leaf_allocation_count: a B-tree's leaf splits, a heap's new pages;
    /// nonleaf_allocation_count: splits above the leaf level) and the waits its pages and rows
    /// really caused:
    /// PAGELATCH_* and PAGEIOLATCH_* waits on its pages (the buffer pool's waits by page, each
    /// page given to the unit whose extents, single pages or IAM pages hold it now), and waits
    /// for key locks in it (the lock manager's, by unit). The counts run from the instance's
    /// start (or `bench insert`'s clearing of the page waits). Deviation: only these
    /// columns; SQL Server's row operation counts (leaf inserts, deletes, updates, scans,
    /// lookups, lock requests) are not kept.
    pub(crate) fn dm_db_index_operational_stats(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&[
            "database_id",
            "object_id",
            "index_id",
            "partition_number",
            "hobt_id",
            "leaf_allocation_count",
            "nonleaf_allocation_count",
            "row_lock_wait_count",
            "row_lock_wait_in_ms",
            "page_latch_wait_count",
            "page_latch_wait_in_ms",
            "page_io_latch_wait_count",
            "page_io_latch_wait_in_ms",
        ]);
        let Some(db) = self.dmf_database(args) else { return Ok((cols, Vec::new())) };
        let units = self.selected_units(&db, arg_i64(args, 1), arg_i64(args, 2))?;
        let owners = page_owners(&db, units.iter().map(|(.., au_id)| *au_id));
        // (latch waits, latch µs, I/O latch waits, I/O latch µs) by unit.
        let mut latches: BTreeMap<u64, (u64, u64, u64, u64)> = BTreeMap::new();
        let page_waits = self.server.instance.buffer_pool.page_waits();
        for wait in page_waits.iter().filter(|w| w.key.database_id == db.database_id) {
            let Some(au_id) = owners.owner(wait.key.page) else { continue };
            let cell = latches.entry(au_id).or_default();
            if wait.wait_type.starts_with("PAGEIOLATCH_") {
                cell.2 += wait.waiting_tasks_count;
                cell.3 += wait.wait_time_us;
            } else {
                cell.0 += wait.waiting_tasks_count;
                cell.1 += wait.wait_time_us;
            }
        }
        let locks: BTreeMap<u64, (u64, u64)> = self
            .server
            .instance
            .locks
            .row_lock_waits()
            .into_iter()
            .filter(|((database_id, _), _)| *database_id == db.database_id)
            .map(|((_, au_id), cell)| (au_id, cell))
            .collect();
        let partition = arg_i64(args, 3);
        if partition.is_some_and(|p| p != 1) {
            return Ok((cols, Vec::new()));
        }
        let rows = units
            .into_iter()
            .map(|(object_id, index_id, au_id)| {
                let (latch_n, latch_us, io_n, io_us) =
                    latches.get(&au_id).copied().unwrap_or_default();
                let (lock_n, lock_us) = locks.get(&au_id).copied().unwrap_or_default();
                let (leaf_pages, nonleaf_pages) = db.unit_page_allocations(au_id);
                vec![
                    Value::SmallInt(db.database_id as i16),
                    Value::Int(object_id),
                    Value::Int(index_id),
                    Value::Int(1),
                    Value::BigInt(au_id as i64),
                    big(leaf_pages),
                    big(nonleaf_pages),
                    big(lock_n),
                    big(lock_us / 1000),
                    big(latch_n),
                    big(latch_us / 1000),
                    big(io_n),
                    big(io_us / 1000),
                ]
            })
            .collect();
        Ok((cols, rows))
    }

    /// sys.dm_db_database_page_allocations(database_id, object_id, index_id, partition_id,
    /// 'LIMITED' | 'DETAILED'): one row per page the selected units own. DETAILED reads each
    /// allocated page's header (type, level, links, free space).
    pub(crate) fn dm_db_database_page_allocations(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&[
            "database_id",
            "object_id",
            "index_id",
            "partition_id",
            "rowset_id",
            "allocation_unit_id",
            "allocation_unit_type",
            "allocation_unit_type_desc",
            "extent_file_id",
            "extent_page_id",
            "allocated_page_iam_file_id",
            "allocated_page_iam_page_id",
            "allocated_page_file_id",
            "allocated_page_page_id",
            "is_allocated",
            "is_iam_page",
            "is_mixed_page_allocation",
            "page_free_space_percent",
            "page_type",
            "page_type_desc",
            "page_level",
            "next_page_file_id",
            "next_page_page_id",
            "previous_page_file_id",
            "previous_page_page_id",
            "is_page_compressed",
            "has_ghost_records",
        ]);
        let mode = args.get(4).map(value::display).unwrap_or_default().to_uppercase();
        let detailed = match mode.as_str() {
            "DETAILED" => true,
            "LIMITED" | "" => false,
            _ => return Err(incorrect_parameter(5)),
        };
        let Some(db) = self.dmf_database(args) else { return Ok((cols, Vec::new())) };
        let mut rows = Vec::new();
        for (object_id, index_id, au_id) in
            self.selected_units(&db, arg_i64(args, 1), arg_i64(args, 2))?
        {
            for page in db.unit_pages(au_id)? {
                let header = if detailed && page.is_allocated {
                    Some(PageHeader::read(&db.page_copy(page.page)?[..]))
                } else {
                    None
                };
                rows.push(page_allocation_row(
                    db.database_id,
                    object_id,
                    index_id,
                    au_id,
                    &page,
                    header,
                ));
            }
        }
        Ok((cols, rows))
    }

    /// sys.dm_db_index_physical_stats(database_id, object_id, index_id, partition_number,
    /// mode): per index, the leaf level (LIMITED) or every level (DETAILED, SAMPLED), from the
    /// page headers. Fragmentation follows SQL Server's definitions: for an index, the share of
    /// leaf pages whose next-page pointer is not the next leaf page in file order; for a heap,
    /// the share of extents not physically after the previous one.
    pub(crate) fn dm_db_index_physical_stats(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&[
            "database_id",
            "object_id",
            "index_id",
            "partition_number",
            "index_type_desc",
            "alloc_unit_type_desc",
            "index_depth",
            "index_level",
            "avg_fragmentation_in_percent",
            "fragment_count",
            "avg_fragment_size_in_pages",
            "page_count",
            "avg_page_space_used_in_percent",
            "record_count",
            "ghost_record_count",
        ]);
        let mode = args.get(4).map(value::display).unwrap_or_default().to_uppercase();
        let detailed = match mode.as_str() {
            "DETAILED" | "SAMPLED" => true,
            "LIMITED" | "DEFAULT" | "" => false,
            _ => return Err(incorrect_parameter(5)),
        };
        let Some(db) = self.dmf_database(args) else { return Ok((cols, Vec::new())) };
        let mut rows = Vec::new();
        for (object_id, index_id, au_id) in
            self.selected_units(&db, arg_i64(args, 1), arg_i64(args, 2))?
        {
            let mut levels: BTreeMap<u8, Vec<(PageId, PageHeader)>> = BTreeMap::new();
            for page in db.unit_pages(au_id)?.into_iter().filter(|p| p.is_allocated && !p.is_iam) {
                let header = PageHeader::read(&db.page_copy(page.page)?[..]);
                levels.entry(header.level).or_default().push((page.page, header));
            }
            let depth = levels.len().max(1) as u8;
            let kind = if index_id == 0 {
                "HEAP"
            } else if index_id == 1 {
                "CLUSTERED INDEX"
            } else {
                "NONCLUSTERED INDEX"
            };
            let shown: Vec<u8> = if detailed { levels.keys().copied().collect() } else { vec![0] };
            for level in shown {
                let pages = levels.get(&level).cloned().unwrap_or_default();
                let stats = LevelStats::of(&pages, index_id == 0);
                let leaf = level == 0;
                rows.push(vec![
                    Value::SmallInt(db.database_id as i16),
                    Value::Int(object_id),
                    Value::Int(index_id),
                    Value::Int(1),
                    text(kind),
                    text("IN_ROW_DATA"),
                    Value::TinyInt(if index_id == 0 { 1 } else { depth }),
                    Value::TinyInt(level),
                    if leaf { Value::Float(stats.fragmentation_pct) } else { Value::Float(0.0) },
                    if leaf { big(stats.fragments) } else { Value::Null },
                    if leaf && stats.fragments > 0 {
                        Value::Float(pages.len() as f64 / stats.fragments as f64)
                    } else {
                        Value::Null
                    },
                    big(pages.len() as u64),
                    if detailed { Value::Float(stats.space_used_pct) } else { Value::Null },
                    if detailed { big(stats.records) } else { Value::Null },
                    if detailed { big(stats.ghosts) } else { Value::Null },
                ]);
            }
        }
        Ok((cols, rows))
    }
}

/// 2561: a DMF's argument `number` is not one it takes (a mode other than LIMITED, SAMPLED or
/// DETAILED, a database, file or page that does not exist). The message table's text for it;
/// 2560 is its DBCC form ("... for this DBCC statement.").
pub(crate) fn incorrect_parameter(number: usize) -> SqlError {
    SqlError::new(2561, 16, 1, format!("Parameter {number} is incorrect for this statement."))
}

/// One level's page statistics.
struct LevelStats {
    fragmentation_pct: f64,
    fragments: u64,
    space_used_pct: f64,
    records: u64,
    ghosts: u64,
}

/// Bytes a page can hold for records and slots (8,192 - the 96-byte header).
const PAGE_BODY_BYTES: f64 = 8096.0;

impl LevelStats {
    fn of(pages: &[(PageId, PageHeader)], heap: bool) -> LevelStats {
        let mut sorted: Vec<PageId> = pages.iter().map(|(p, _)| *p).collect();
        sorted.sort();
        let next_in_file_order: BTreeMap<PageId, PageId> =
            sorted.windows(2).map(|w| (w[0], w[1])).collect();
        let mut out_of_order = 0u64;
        let mut fragments = 0u64;
        for (i, page) in sorted.iter().enumerate() {
            let follows = i > 0 && {
                let previous = sorted[i - 1];
                previous.file_id == page.file_id && previous.page_no + 1 == page.page_no
            };
            if !follows {
                fragments += 1;
            }
        }
        if heap {
            let mut extents: Vec<PageId> =
                sorted.iter().map(|p| PageId::new(p.file_id, p.page_no / 8 * 8)).collect();
            extents.dedup();
            for pair in extents.windows(2) {
                if pair[1].file_id != pair[0].file_id || pair[1].page_no != pair[0].page_no + 8 {
                    out_of_order += 1;
                }
            }
            let fragmentation_pct = percent(out_of_order, extents.len() as u64);
            return LevelStats { fragmentation_pct, fragments, ..LevelStats::space(pages) };
        }
        for (page, header) in pages {
            if header.next_page.is_null() {
                continue;
            }
            if next_in_file_order.get(page) != Some(&header.next_page) {
                out_of_order += 1;
            }
        }
        LevelStats {
            fragmentation_pct: percent(out_of_order, pages.len() as u64),
            fragments,
            ..LevelStats::space(pages)
        }
    }

    fn space(pages: &[(PageId, PageHeader)]) -> LevelStats {
        let used: f64 = pages.iter().map(|(_, h)| PAGE_BODY_BYTES - f64::from(h.free_count)).sum();
        let records: u64 = pages.iter().map(|(_, h)| u64::from(h.slot_count)).sum();
        let ghosts: u64 = pages.iter().map(|(_, h)| u64::from(h.ghost_record_count)).sum();
        let space_used_pct = if pages.is_empty() {
            0.0
        } else {
            100.0 * used / (PAGE_BODY_BYTES * pages.len() as f64)
        };
        LevelStats {
            fragmentation_pct: 0.0,
            fragments: 0,
            space_used_pct,
            records: records - ghosts,
            ghosts,
        }
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

fn page_allocation_row(
    database_id: u16,
    object_id: i32,
    index_id: i32,
    au_id: u64,
    page: &UnitPage,
    header: Option<PageHeader>,
) -> Vec<Value> {
    let file_or_null =
        |p: Option<PageId>| p.map_or(Value::Null, |p| Value::SmallInt(p.file_id as i16));
    let page_or_null = |p: Option<PageId>| p.map_or(Value::Null, |p| Value::Int(p.page_no as i32));
    let link = |p: PageId| if p.is_null() { None } else { Some(p) };
    let (free_pct, page_type, level, next, prev, ghosts) = match header {
        Some(h) => {
            let pct = 100.0 * f64::from(h.free_count) / PAGE_BODY_BYTES;
            let bucket = if pct > 50.0 {
                "50_PCT_FULL"
            } else if pct > 20.0 {
                "80_PCT_FULL"
            } else if pct > 5.0 {
                "95_PCT_FULL"
            } else {
                "100_PCT_FULL"
            };
            let bucket = if h.slot_count == 0 { "0_PCT_FULL" } else { bucket };
            (
                Value::Text(bucket.into()),
                Some(h.page_type),
                Value::TinyInt(h.level),
                link(h.next_page),
                link(h.prev_page),
                Value::Bit(h.ghost_record_count > 0),
            )
        }
        None => (Value::Null, None, Value::Null, None, None, Value::Null),
    };
    let detailed = page_type.is_some();
    vec![
        Value::SmallInt(database_id as i16),
        Value::Int(object_id),
        Value::Int(index_id),
        Value::BigInt(au_id as i64),
        Value::BigInt(au_id as i64),
        Value::BigInt(au_id as i64),
        Value::TinyInt(1),
        text("IN_ROW_DATA"),
        Value::SmallInt(page.extent.file_id as i16),
        Value::Int(page.extent.page_no as i32),
        file_or_null(page.iam_page),
        page_or_null(page.iam_page),
        Value::SmallInt(page.page.file_id as i16),
        Value::Int(page.page.page_no as i32),
        Value::Bit(page.is_allocated),
        Value::Bit(page.is_iam),
        Value::Bit(page.is_mixed),
        if detailed && !page.is_iam { free_pct } else { Value::Null },
        page_type.map_or(Value::Null, Value::TinyInt),
        page_type.map_or(Value::Null, |t| text(page_type_desc(t))),
        level,
        file_or_null(next),
        page_or_null(next),
        file_or_null(prev),
        page_or_null(prev),
        if detailed { Value::Bit(false) } else { Value::Null },
        ghosts,
    ]
}

/// The default trace's file, as sys.traces shows it: in the instance directory, with `\`
/// separators so that scripts which cut the folder off with CHARINDEX(N'\', ...) work as
/// written (deviation: extentdb keeps the default trace's events in memory, not in log.trc).
fn default_trace_path(dir: &std::path::Path) -> String {
    let shown = dir.join("log.trc").display().to_string();
    shown.replace('/', "\\")
}

/// Whether a path given to fn_trace_gettable names the default trace file (either
/// separator): its last component is log.trc or a rollover log_N.trc.
fn names_default_trace(path: &str) -> bool {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path).to_lowercase();
    let rollover = file
        .strip_prefix("log_")
        .and_then(|rest| rest.strip_suffix(".trc"))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    file == "log.trc" || rollover
}

impl Session {
    /// sys.traces: the default trace (id 1), running since the instance started. It is kept
    /// in memory, so the file columns say so: no size or file limit (NULL), no rollover.
    pub(crate) fn sys_traces(&self) -> ViewRows {
        let cols = columns(&[
            "id",
            "status",
            "path",
            "max_size",
            "stop_time",
            "max_files",
            "is_rowset",
            "is_rollover",
            "is_shutdown",
            "is_default",
            "start_time",
            "event_count",
        ]);
        let instance = &self.server.instance;
        let events: usize =
            self.server.databases().iter().map(|db| db.default_trace_growths().len()).sum();
        let row = vec![
            Value::Int(1),
            Value::Int(1),
            Value::Text(default_trace_path(instance.dir())),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Bit(false),
            Value::Bit(false),
            Value::Bit(false),
            Value::Bit(true),
            crate::functions::current_time("GETDATE", instance.start_time),
            big(events as u64),
        ];
        (cols, vec![row])
    }

    /// sys.fn_trace_gettable(path, number_files): the default trace's events, the file
    /// auto-grow events (EventClass 92 data, 93 log) of every open database, in time order.
    /// Any other path is error 567.
    pub(crate) fn fn_trace_gettable(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&[
            "EventClass",
            "EventSequence",
            "DatabaseID",
            "DatabaseName",
            "FileName",
            "StartTime",
            "EndTime",
            "Duration",
            "IntegerData",
            "SPID",
            "ApplicationName",
            "LoginName",
            "HostName",
            "ServerName",
            "IsSystem",
        ]);
        let path = args.first().map(value::display).unwrap_or_default();
        if !names_default_trace(&path) {
            return Err(SqlError::new(
                567,
                16,
                1,
                format!(
                    "File '{path}' either does not exist or is not a recognizable trace file. Or there was an error opening the file."
                ),
            ));
        }
        let mut events: Vec<engine::database::FileSizeChange> =
            self.server.databases().iter().flat_map(|db| db.default_trace_growths()).collect();
        events.sort_by_key(|e| e.start_time);
        let host = crate::session::server_name();
        let rows = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                vec![
                    Value::Int(i32::from(e.event_class.unwrap_or(0))),
                    Value::BigInt(i as i64 + 1),
                    Value::Int(i32::from(e.database_id)),
                    Value::Text(e.database_name),
                    Value::Text(e.file_name),
                    crate::functions::current_time("GETDATE", e.start_time),
                    crate::functions::current_time("GETDATE", e.end_time),
                    big(e.duration_us),
                    Value::Int(i32::try_from(e.integer_data).unwrap_or(i32::MAX)),
                    // A growth event does not record the session that caused it: SPID,
                    // ApplicationName and LoginName are NULL rather than guessed.
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Text(host.clone()),
                    Value::Text(host.clone()),
                    Value::Int(0),
                ]
            })
            .collect();
        Ok((cols, rows))
    }
}

/// text_size through concat_null_yields_null of sys.dm_exec_sessions and sys.dm_exec_requests:
/// the SET options every session runs with (no TEXTSIZE limit, [`crate::session::LANGUAGE`]
/// and its date settings, [`crate::session::ALWAYS_ON_OPTIONS`] ON, ANSI_DEFAULTS OFF), as DBCC
/// USEROPTIONS lists them.
fn fixed_set_options() -> Vec<Value> {
    let mut values = vec![
        Value::Int(i32::MAX),
        text(crate::session::LANGUAGE),
        text(crate::session::DATE_FORMAT),
        Value::SmallInt(i16::from(crate::session::DATE_FIRST)),
    ];
    let options = [
        "quoted_identifier",
        "arithabort",
        "ansi_null_dflt_on",
        "ansi_defaults",
        "ansi_warnings",
        "ansi_padding",
        "ansi_nulls",
        "concat_null_yields_null",
    ];
    values.extend(options.map(|o| Value::Bit(crate::session::ALWAYS_ON_OPTIONS.contains(&o))));
    values
}

/// sys.dm_exec_requests' columns, SQL Server 2022's, in its order.
const REQUEST_COLUMNS: [&str; 60] = [
    "session_id",
    "request_id",
    "start_time",
    "status",
    "command",
    "sql_handle",
    "statement_start_offset",
    "statement_end_offset",
    "plan_handle",
    "database_id",
    "user_id",
    "connection_id",
    "blocking_session_id",
    "wait_type",
    "wait_time",
    "last_wait_type",
    "wait_resource",
    "open_transaction_count",
    "open_resultset_count",
    "transaction_id",
    "context_info",
    "percent_complete",
    "estimated_completion_time",
    "cpu_time",
    "total_elapsed_time",
    "scheduler_id",
    "task_address",
    "reads",
    "writes",
    "logical_reads",
    "text_size",
    "language",
    "date_format",
    "date_first",
    "quoted_identifier",
    "arithabort",
    "ansi_null_dflt_on",
    "ansi_defaults",
    "ansi_warnings",
    "ansi_padding",
    "ansi_nulls",
    "concat_null_yields_null",
    "transaction_isolation_level",
    "lock_timeout",
    "deadlock_priority",
    "row_count",
    "prev_error",
    "nest_level",
    "granted_query_memory",
    "executing_managed_code",
    "group_id",
    "query_hash",
    "query_plan_hash",
    "statement_sql_handle",
    "statement_context_id",
    "dop",
    "parallel_worker_count",
    "external_script_request_id",
    "is_resumable",
    "page_resource",
];

/// What a sys.dm_exec_requests row says of its request; [`RequestRow::values`] lays it out.
struct RequestRow {
    session_id: u16,
    start_time: Value,
    status: &'static str,
    command: String,
    sql_handle: Value,
    database_id: u16,
    connection_id: Value,
    blocking_session_id: u16,
    wait_type: Value,
    wait_time_ms: u64,
    last_wait_type: &'static str,
    wait_resource: String,
    open_transaction_count: i32,
    transaction_id: u64,
    cpu_time_ms: u64,
    elapsed_ms: u64,
    scheduler_id: Value,
    task_address: Value,
    reads: u64,
    logical_reads: u64,
    transaction_isolation_level: i16,
    lock_timeout_ms: i32,
    deadlock_priority: i32,
    row_count: u64,
    prev_error: i32,
    nest_level: i32,
    page_resource: Value,
}

impl RequestRow {
    /// The row in [`REQUEST_COLUMNS`]' order.
    fn values(&self) -> Vec<Value> {
        let ms = |ms: u64| Value::Int(i32::try_from(ms).unwrap_or(i32::MAX));
        let off = || Value::Bit(false);
        let mut row = vec![
            Value::SmallInt(self.session_id as i16),
            Value::Int(0),
            self.start_time.clone(),
            text(self.status),
            Value::Text(self.command.clone()),
            self.sql_handle.clone(),
            Value::Int(0),
            Value::Int(-1),
            Value::Null, // plan_handle: no plan cache
            Value::SmallInt(self.database_id as i16),
            Value::Int(1),
            self.connection_id.clone(),
            Value::SmallInt(self.blocking_session_id as i16),
            self.wait_type.clone(),
            ms(self.wait_time_ms),
            text(self.last_wait_type),
            Value::Text(self.wait_resource.clone()),
            Value::Int(self.open_transaction_count),
            Value::Int(1),
            big(self.transaction_id),
            Value::Null, // context_info: not set
            Value::Real(0.0),
            big(0),
            ms(self.cpu_time_ms),
            ms(self.elapsed_ms),
            self.scheduler_id.clone(),
            self.task_address.clone(),
            big(self.reads),
            big(0),
            big(self.logical_reads),
        ];
        row.extend(fixed_set_options());
        row.extend([
            Value::SmallInt(self.transaction_isolation_level),
            Value::Int(self.lock_timeout_ms),
            Value::Int(self.deadlock_priority),
            big(self.row_count),
            Value::Int(self.prev_error),
            Value::Int(self.nest_level),
            Value::Int(0),
            off(),
            Value::Int(2),
            Value::Null, // query_hash
            Value::Null, // query_plan_hash
            Value::Null, // statement_sql_handle
            Value::Null, // statement_context_id
            Value::Int(1),
            Value::Int(0),
            Value::Null, // external_script_request_id
            off(),
            self.page_resource.clone(),
        ]);
        debug_assert_eq!(row.len(), REQUEST_COLUMNS.len());
        row
    }
}

/// sys.dm_exec_sessions' columns, in SQL Server's order.
const SESSION_COLUMNS: [&str; 50] = [
    "session_id",
    "login_time",
    "host_name",
    "program_name",
    "host_process_id",
    "client_version",
    "client_interface_name",
    "security_id",
    "login_name",
    "nt_domain",
    "nt_user_name",
    "status",
    "context_info",
    "cpu_time",
    "memory_usage",
    "total_scheduled_time",
    "total_elapsed_time",
    "endpoint_id",
    "last_request_start_time",
    "last_request_end_time",
    "reads",
    "writes",
    "logical_reads",
    "is_user_process",
    "text_size",
    "language",
    "date_format",
    "date_first",
    "quoted_identifier",
    "arithabort",
    "ansi_null_dflt_on",
    "ansi_defaults",
    "ansi_warnings",
    "ansi_padding",
    "ansi_nulls",
    "concat_null_yields_null",
    "transaction_isolation_level",
    "lock_timeout",
    "deadlock_priority",
    "row_count",
    "prev_error",
    "original_security_id",
    "original_login_name",
    "last_successful_logon",
    "last_unsuccessful_logon",
    "unsuccessful_logons",
    "group_id",
    "database_id",
    "authenticating_database_id",
    "open_transaction_count",
];

/// What a sys.dm_exec_sessions row says of its session; [`SessionRow::values`] lays it out.
struct SessionRow {
    session_id: u16,
    login_time: Value,
    host_name: Value,
    program_name: Value,
    host_process_id: Value,
    client_version: Value,
    client_interface_name: Value,
    login_name: String,
    status: &'static str,
    cpu_time_ms: i64,
    scheduled_time_ms: i64,
    elapsed_time_ms: i64,
    endpoint_id: i32,
    last_request_start_time: Value,
    last_request_end_time: Value,
    reads: u64,
    logical_reads: u64,
    is_user_process: bool,
    transaction_isolation_level: i16,
    lock_timeout_ms: i32,
    deadlock_priority: i32,
    row_count: u64,
    prev_error: i32,
    database_id: u16,
    open_transaction_count: i32,
}

impl SessionRow {
    /// The row in [`SESSION_COLUMNS`]' order.
    fn values(&self) -> Vec<Value> {
        let sid = || Value::Bytes(crate::sysdatabases::SA_SID.to_vec());
        let int_ms = |ms: i64| Value::Int(ms.min(i64::from(i32::MAX)) as i32);
        let mut row = vec![
            Value::SmallInt(self.session_id as i16),
            self.login_time.clone(),
            self.host_name.clone(),
            self.program_name.clone(),
            self.host_process_id.clone(),
            self.client_version.clone(),
            self.client_interface_name.clone(),
            sid(),
            Value::Text(self.login_name.clone()),
            Value::Null, // nt_domain: SQL authentication
            Value::Null, // nt_user_name
            text(self.status),
            Value::Null, // context_info: not set
            int_ms(self.cpu_time_ms),
            Value::Int(0),
            int_ms(self.scheduled_time_ms),
            int_ms(self.elapsed_time_ms),
            Value::Int(self.endpoint_id),
            self.last_request_start_time.clone(),
            self.last_request_end_time.clone(),
            big(self.reads),
            big(0),
            big(self.logical_reads),
            Value::Bit(self.is_user_process),
        ];
        row.extend(fixed_set_options());
        row.extend([
            Value::SmallInt(self.transaction_isolation_level),
            Value::Int(self.lock_timeout_ms),
            Value::Int(self.deadlock_priority),
            big(self.row_count),
            Value::Int(self.prev_error),
            sid(),
            Value::Text(self.login_name.clone()),
            Value::Null, // the logon statistics: common criteria compliance is off
            Value::Null,
            Value::Null,
            Value::Int(2),
            Value::SmallInt(self.database_id as i16),
            Value::Int(0),
            Value::Int(self.open_transaction_count),
        ]);
        debug_assert_eq!(row.len(), SESSION_COLUMNS.len());
        row
    }
}
