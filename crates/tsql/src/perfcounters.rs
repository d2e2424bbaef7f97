//! sys.dm_os_performance_counters: SQL Server's performance objects (Buffer Manager, Memory
//! Manager, Access Methods, Databases, Locks, General Statistics, SQL Statistics), one row per
//! counter and instance, each read from the event counts the engine keeps
//! ([`engine::perfcounters`], the buffer pool, each database's log and the lock manager).
//!
//! As in SQL Server, object_name, counter_name and instance_name are nchar(128), so they come
//! padded with spaces (`WHERE counter_name = 'Page Splits/sec'` matches, since trailing spaces do
//! not count in a comparison; `LIKE '%/sec'` does not, there as here). A "/sec" counter
//! (cntr_type 272696576) is a running count since the instance started, or since the database
//! opened for the Databases object; its rate is the difference of two samples over their
//! interval. A point-in-time value has cntr_type 65792.
//!
//! Buffer cache hit ratio is a fraction: its cntr_value (cntr_type 537003264) is the lookups
//! that found their page in the pool, and "Buffer cache hit ratio base" (1073939712) is every
//! lookup, so the percentage is 100 * value / base. Page life expectancy comes from the buffer
//! pool's clock hand ([`engine::buffer`] explains it), and Buffer Node `000` repeats it for the
//! one memory node.
//!
//! Deviations: only the counters listed in [`Session::dm_os_performance_counters`] exist. The
//! hit ratio covers every lookup since the instance started, where SQL Server's covers the last
//! few thousand. The Locks object has only its `_Total` instance.

use crate::session::Session;
use crate::sysviews::{ViewRows, columns};
use engine::database::Database;
use engine::record::Value;
use std::sync::Arc;

/// PERF_COUNTER_BULK_COUNT: a cumulative count, read as a rate between two samples.
const BULK_COUNT: i32 = 272_696_576;
/// PERF_COUNTER_LARGE_RAWCOUNT: the value now.
const RAW_COUNT: i32 = 65_792;
/// PERF_LARGE_RAW_FRACTION: a numerator, read over the base counter that follows it.
const RAW_FRACTION: i32 = 537_003_264;
/// PERF_LARGE_RAW_BASE: the denominator of the fraction before it.
const RAW_BASE: i32 = 1_073_939_712;
/// Width of the nchar(128) name columns.
const NAME_CHARS: usize = 128;

/// One counter's row before padding.
struct Counter {
    object: &'static str,
    name: &'static str,
    instance: String,
    value: u64,
    cntr_type: i32,
}

fn counter(object: &'static str, name: &'static str, value: u64, cntr_type: i32) -> Counter {
    Counter { object, name, instance: String::new(), value, cntr_type }
}

fn padded(text: &str) -> Value {
    Value::Text(format!("{text:<NAME_CHARS$}"))
}

/// The Databases object's counters of one database, or their sum over all (`_Total`).
#[derive(Default)]
struct DatabaseCounts {
    data_size_kb: u64,
    log_size_kb: u64,
    log_used_kb: u64,
    active_transactions: u64,
    transactions: u64,
    log_flushes: u64,
    log_bytes_flushed: u64,
    log_growths: u64,
    log_shrinks: u64,
}

impl DatabaseCounts {
    fn of(db: &Database) -> DatabaseCounts {
        let data_pages: u64 =
            db.database_files().iter().filter(|f| !f.is_log).map(|f| u64::from(f.size_pages)).sum();
        let log = db.log();
        let (log_size_mb, used_pct) = log.space();
        let log_size_kb = (log_size_mb * 1024.0).round() as u64;
        let stats = log.stats();
        DatabaseCounts {
            data_size_kb: data_pages * 8,
            log_size_kb,
            log_used_kb: (log_size_kb as f64 * used_pct / 100.0).round() as u64,
            active_transactions: log.open_transaction_count() as u64,
            transactions: log.transactions_started(),
            log_flushes: stats.flushes,
            log_bytes_flushed: stats.bytes_flushed,
            log_growths: log.growths().len() as u64,
            log_shrinks: log.shrinks(),
        }
    }

    fn add(&mut self, other: &DatabaseCounts) {
        self.data_size_kb += other.data_size_kb;
        self.log_size_kb += other.log_size_kb;
        self.log_used_kb += other.log_used_kb;
        self.active_transactions += other.active_transactions;
        self.transactions += other.transactions;
        self.log_flushes += other.log_flushes;
        self.log_bytes_flushed += other.log_bytes_flushed;
        self.log_growths += other.log_growths;
        self.log_shrinks += other.log_shrinks;
    }

    fn rows(&self, instance: &str, out: &mut Vec<Counter>) {
        const DB: &str = "SQLServer:Databases";
        let percent_log_used = (self.log_used_kb * 100).checked_div(self.log_size_kb).unwrap_or(0);
        let counters = [
            counter(DB, "Data File(s) Size (KB)", self.data_size_kb, RAW_COUNT),
            counter(DB, "Log File(s) Size (KB)", self.log_size_kb, RAW_COUNT),
            counter(DB, "Log File(s) Used Size (KB)", self.log_used_kb, RAW_COUNT),
            counter(DB, "Percent Log Used", percent_log_used, RAW_COUNT),
            counter(DB, "Active Transactions", self.active_transactions, RAW_COUNT),
            counter(DB, "Transactions/sec", self.transactions, BULK_COUNT),
            counter(DB, "Log Flushes/sec", self.log_flushes, BULK_COUNT),
            counter(DB, "Log Bytes Flushed/sec", self.log_bytes_flushed, BULK_COUNT),
            counter(DB, "Log Growths", self.log_growths, RAW_COUNT),
            counter(DB, "Log Shrinks", self.log_shrinks, RAW_COUNT),
        ];
        for mut row in counters {
            row.instance = instance.to_string();
            out.push(row);
        }
    }
}

impl Session {
    /// sys.dm_os_performance_counters.
    pub(crate) fn dm_os_performance_counters(&self) -> ViewRows {
        let cols =
            columns(&["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"]);
        let mut counters = self.instance_counters();
        self.database_counters(&mut counters);
        self.lock_counters(&mut counters);
        let rows = counters
            .into_iter()
            .map(|c| {
                vec![
                    padded(c.object),
                    padded(c.name),
                    padded(&c.instance),
                    Value::BigInt(c.value as i64),
                    Value::Int(c.cntr_type),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// Buffer Manager, Buffer Node, Access Methods, General Statistics and SQL Statistics.
    fn instance_counters(&self) -> Vec<Counter> {
        const ACCESS: &str = "SQLServer:Access Methods";
        let instance = &self.server.instance;
        let counts = instance.counters.read();
        let user_connections = self.server.sessions.lock().len() as u64;
        let mut rows = self.buffer_counters();
        rows.extend(self.memory_manager_counters());
        rows.extend([
            counter(ACCESS, "Page Splits/sec", counts.page_splits, BULK_COUNT),
            counter(ACCESS, "Pages Allocated/sec", counts.pages_allocated, BULK_COUNT),
            counter(ACCESS, "Extents Allocated/sec", counts.extents_allocated, BULK_COUNT),
            counter(ACCESS, "Page Deallocations/sec", counts.page_deallocations, BULK_COUNT),
            counter(ACCESS, "Extent Deallocations/sec", counts.extent_deallocations, BULK_COUNT),
            counter(ACCESS, "Full Scans/sec", counts.full_scans, BULK_COUNT),
            counter(ACCESS, "Index Searches/sec", counts.index_searches, BULK_COUNT),
            counter(
                "SQLServer:General Statistics",
                "User Connections",
                user_connections,
                RAW_COUNT,
            ),
            counter(
                "SQLServer:SQL Statistics",
                "Batch Requests/sec",
                counts.batch_requests,
                BULK_COUNT,
            ),
        ]);
        rows
    }

    /// Buffer Manager, then Buffer Node `000` (the one memory node: its counters are the
    /// pool's, and no lookup is served by another node).
    fn buffer_counters(&self) -> Vec<Counter> {
        const BUFFER: &str = "SQLServer:Buffer Manager";
        const NODE: &str = "SQLServer:Buffer Node";
        let pool = &self.server.instance.buffer_pool;
        let buffer = pool.counters();
        let hits = buffer.page_lookups.saturating_sub(buffer.lookup_misses);
        let life_s = pool.page_life_expectancy(std::time::Instant::now()).as_secs();
        let database_pages = pool.cached_pages() as u64;
        let mut rows = vec![
            counter(BUFFER, "Buffer cache hit ratio", hits, RAW_FRACTION),
            counter(BUFFER, "Buffer cache hit ratio base", buffer.page_lookups, RAW_BASE),
            counter(BUFFER, "Page lookups/sec", buffer.page_lookups, BULK_COUNT),
            counter(BUFFER, "Free list stalls/sec", buffer.free_list_stalls, BULK_COUNT),
            counter(BUFFER, "Page reads/sec", buffer.page_reads, BULK_COUNT),
            counter(BUFFER, "Page writes/sec", buffer.page_writes, BULK_COUNT),
            counter(BUFFER, "Readahead pages/sec", pool.read_ahead_pages(), BULK_COUNT),
            counter(BUFFER, "Lazy writes/sec", buffer.lazy_writer_writes, BULK_COUNT),
            counter(BUFFER, "Checkpoint pages/sec", buffer.checkpoint_pages, BULK_COUNT),
            counter(BUFFER, "Database pages", database_pages, RAW_COUNT),
            counter(BUFFER, "Target pages", pool.frame_count() as u64, RAW_COUNT),
            counter(BUFFER, "Page life expectancy", life_s, RAW_COUNT),
        ];
        let node = [
            counter(NODE, "Database pages", database_pages, RAW_COUNT),
            counter(NODE, "Page life expectancy", life_s, RAW_COUNT),
            counter(NODE, "Local node page lookups/sec", buffer.page_lookups, BULK_COUNT),
            counter(NODE, "Remote node page lookups/sec", 0, BULK_COUNT),
        ];
        for mut row in node {
            row.instance = "000".to_string();
            rows.push(row);
        }
        rows
    }

    /// Memory Manager: the buffer pool is the memory the engine manages, so the target is its
    /// frames (sys.dm_os_sys_info.committed_target_kb), the total what it has committed
    /// (committed_kb), the database cache its pages that hold a database page and the free
    /// memory the rest. Queries take no memory grants (no operator reserves workspace
    /// memory), so none is ever outstanding or pending.
    fn memory_manager_counters(&self) -> Vec<Counter> {
        const MEMORY: &str = "SQLServer:Memory Manager";
        let pool = &self.server.instance.buffer_pool;
        let total_kb = pool.committed_bytes() / 1024;
        let cache_kb = (pool.cached_pages() as u64 * 8).min(total_kb);
        vec![
            counter(MEMORY, "Target Server Memory (KB)", pool.frame_count() as u64 * 8, RAW_COUNT),
            counter(MEMORY, "Total Server Memory (KB)", total_kb, RAW_COUNT),
            counter(MEMORY, "Database Cache Memory (KB)", cache_kb, RAW_COUNT),
            counter(MEMORY, "Free Memory (KB)", total_kb - cache_kb, RAW_COUNT),
            counter(MEMORY, "Memory Grants Outstanding", 0, RAW_COUNT),
            counter(MEMORY, "Memory Grants Pending", 0, RAW_COUNT),
        ]
    }

    /// The Databases object: one instance per open database, then `_Total`.
    fn database_counters(&self, out: &mut Vec<Counter>) {
        let mut databases: Vec<Arc<Database>> = self.server.databases();
        databases.sort_by(|a, b| a.name.cmp(&b.name));
        let mut total = DatabaseCounts::default();
        for db in &databases {
            let counts = DatabaseCounts::of(db);
            counts.rows(&db.name, out);
            total.add(&counts);
        }
        total.rows("_Total", out);
    }

    /// The Locks object's `_Total`: requests, waits and their time, and deadlocks, each
    /// counted by the lock manager as it happens.
    fn lock_counters(&self, out: &mut Vec<Counter>) {
        const LOCKS: &str = "SQLServer:Locks";
        let instance = &self.server.instance;
        let (waits, wait_ms) = instance.locks.waits();
        let counters = [
            counter(LOCKS, "Lock Requests/sec", instance.locks.requests(), BULK_COUNT),
            counter(LOCKS, "Lock Waits/sec", waits, BULK_COUNT),
            counter(LOCKS, "Lock Wait Time (ms)", wait_ms, BULK_COUNT),
            counter(LOCKS, "Number of Deadlocks/sec", instance.locks.deadlocks(), BULK_COUNT),
        ];
        for mut row in counters {
            row.instance = "_Total".into();
            out.push(row);
        }
    }
}
