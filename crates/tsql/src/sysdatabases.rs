//! sys.databases: one row per database of the instance, with SQL Server 2022's columns in its
//! order, so that the scripts DBAs run against it (Glenn Berry's diagnostic queries, sp_Blitz's
//! checks, `SELECT name, recovery_model_desc ...`) find every column they name.
//!
//! Each value is what this engine does, read from the database where it is a setting the
//! engine keeps (recovery model, mixed page allocation, delayed durability, the log's reuse
//! wait, the creation date in the boot page) and otherwise the behaviour the engine always has.
//! Where that differs from a new SQL Server 2022 database, it is because the engine has no
//! such feature (docs/deviations.md):
//! - is_auto_create_stats_on and is_auto_update_stats_on are 0: there are no statistics;
//! - is_query_store_on, is_memory_optimized_enabled and is_temporal_history_retention_enabled
//!   are 0: there is no Query Store, no In-Memory OLTP or hybrid buffer pool, no temporal
//!   table cleanup;
//! - service_broker_guid is all zeros, as SQL Server shows it for master: there is no Service
//!   Broker;
//! - user_access is 0 (MULTI_USER): SET SINGLE_USER ends the other sessions but does not keep
//!   the database to one user afterwards;
//! - is_cleanly_shutdown is 0 for an open database (it is open, so not shut down) and NULL for
//!   a closed one.
//!
//! A SUSPECT or OFFLINE database shows its name, id and state, and NULL elsewhere: SQL Server
//! keeps its options in master, extentdb in the database's own files.

use crate::session::Session;
use crate::sysviews::{ViewRows, columns, text};
use engine::database::Database;
use engine::record::Value;

/// The compatibility level of every database: SQL Server 2022's (sp_helpdb shows it too).
pub const COMPATIBILITY_LEVEL: u8 = 160;

/// The sid of `sa`, the only login, which owns every database.
pub const SA_SID: [u8; 1] = [0x01];

/// sys.databases' columns, SQL Server 2022's, in its order.
const COLUMNS: [&str; 89] = [
    "name",
    "database_id",
    "source_database_id",
    "owner_sid",
    "create_date",
    "compatibility_level",
    "collation_name",
    "user_access",
    "user_access_desc",
    "is_read_only",
    "is_auto_close_on",
    "is_auto_shrink_on",
    "state",
    "state_desc",
    "is_in_standby",
    "is_cleanly_shutdown",
    "is_supplemental_logging_enabled",
    "snapshot_isolation_state",
    "snapshot_isolation_state_desc",
    "is_read_committed_snapshot_on",
    "recovery_model",
    "recovery_model_desc",
    "page_verify_option",
    "page_verify_option_desc",
    "is_auto_create_stats_on",
    "is_auto_create_stats_incremental_on",
    "is_auto_update_stats_on",
    "is_auto_update_stats_async_on",
    "is_ansi_null_default_on",
    "is_ansi_nulls_on",
    "is_ansi_padding_on",
    "is_ansi_warnings_on",
    "is_arithabort_on",
    "is_concat_null_yields_null_on",
    "is_numeric_roundabort_on",
    "is_quoted_identifier_on",
    "is_recursive_triggers_on",
    "is_cursor_close_on_commit_on",
    "is_local_cursor_default",
    "is_fulltext_enabled",
    "is_trustworthy_on",
    "is_db_chaining_on",
    "is_parameterization_forced",
    "is_master_key_encrypted_by_server",
    "is_query_store_on",
    "is_published",
    "is_subscribed",
    "is_merge_published",
    "is_distributor",
    "is_sync_with_backup",
    "service_broker_guid",
    "is_broker_enabled",
    "log_reuse_wait",
    "log_reuse_wait_desc",
    "is_date_correlation_on",
    "is_cdc_enabled",
    "is_encrypted",
    "is_honor_broker_priority_on",
    "replica_id",
    "group_database_id",
    "resource_pool_id",
    "default_language_lcid",
    "default_language_name",
    "default_fulltext_language_lcid",
    "default_fulltext_language_name",
    "is_nested_triggers_on",
    "is_transform_noise_words_on",
    "two_digit_year_cutoff",
    "containment",
    "containment_desc",
    "target_recovery_time_in_seconds",
    "delayed_durability",
    "delayed_durability_desc",
    "is_memory_optimized_elevate_to_snapshot_on",
    "is_federation_member",
    "is_remote_data_archive_enabled",
    "is_mixed_page_allocation_on",
    "is_temporal_history_retention_enabled",
    "catalog_collation_type",
    "catalog_collation_type_desc",
    "physical_database_name",
    "is_result_set_caching_on",
    "is_accelerated_database_recovery_on",
    "is_tempdb_spill_to_remote_store",
    "is_stale_page_detection_on",
    "is_memory_optimized_enabled",
    "is_data_retention_enabled",
    "is_ledger_on",
    "is_change_feed_enabled",
];

impl Session {
    pub(crate) fn sys_databases(&self) -> ViewRows {
        let mut rows: Vec<(u16, Vec<Value>)> = self
            .server
            .databases()
            .iter()
            .map(|db| (db.database_id, self.database_row(db)))
            .collect();
        for closed in self.server.closed_database_entries() {
            let mut row = vec![Value::Null; COLUMNS.len()];
            row[0] = text(&closed.name);
            row[1] = closed.database_id.map_or(Value::Null, |id| Value::Int(i32::from(id)));
            row[12] = Value::TinyInt(closed.state.number());
            row[13] = text(closed.state.desc());
            rows.push((closed.database_id.unwrap_or(u16::MAX), row));
        }
        rows.sort_by_key(|(id, _)| *id);
        (columns(&COLUMNS), rows.into_iter().map(|(_, row)| row).collect())
    }

    /// An open database's row, in [`COLUMNS`]' order.
    fn database_row(&self, db: &Database) -> Vec<Value> {
        let is_master = db.name.eq_ignore_ascii_case("master");
        let full_recovery = db.recovery_model_desc() == "FULL";
        let reuse_wait = db.log().log_reuse_wait();
        let delayed = db.delayed_durability();
        let off = || Value::Bit(false);
        let mut row = vec![
            text(&db.name),
            Value::Int(i32::from(db.database_id)),
            Value::Null, // source_database_id: not a database snapshot
            Value::Bytes(SA_SID.to_vec()),
            crate::functions::current_time("GETDATE", db.create_date()),
            Value::TinyInt(COMPATIBILITY_LEVEL),
            text(engine::record::COLLATION_NAME),
            Value::TinyInt(0),
            text("MULTI_USER"),
            off(), // is_read_only: READ_ONLY is refused (40517)
            off(), // is_auto_close_on
            off(), // is_auto_shrink_on
            Value::TinyInt(0),
            text("ONLINE"),
            off(), // is_in_standby
            off(), // is_cleanly_shutdown: it is open
            off(), // is_supplemental_logging_enabled
            Value::TinyInt(0),
            text("OFF"), // no row versioning: snapshot isolation is not allowed
            off(),       // is_read_committed_snapshot_on
            Value::TinyInt(if full_recovery { 1 } else { 3 }),
            text(db.recovery_model_desc()),
            Value::TinyInt(2), // every page is written with a checksum and verified on read
            text("CHECKSUM"),
        ];
        // is_auto_create_stats_on ... is_auto_update_stats_async_on: no statistics; the ANSI
        // and cursor options: SQL Server's defaults for a new database (OFF).
        row.extend((0..15).map(|_| off()));
        row.extend([
            off(),                 // is_fulltext_enabled
            off(),                 // is_trustworthy_on
            Value::Bit(is_master), // is_db_chaining_on: on in master, as in SQL Server
            off(),                 // is_parameterization_forced
            off(),                 // is_master_key_encrypted_by_server
            off(),                 // is_query_store_on
        ]);
        row.extend((0..5).map(|_| off())); // replication: none
        row.extend([
            Value::Guid([0; 16]), // service_broker_guid: no Service Broker
            off(),                // is_broker_enabled
            Value::TinyInt(log_reuse_wait_number(reuse_wait)),
            text(reuse_wait.desc()),
            off(), // is_date_correlation_on
            off(), // is_cdc_enabled
            off(), // is_encrypted
            off(), // is_honor_broker_priority_on
        ]);
        // replica_id ... two_digit_year_cutoff: no availability group, no resource pool, not a
        // contained database.
        row.extend((0..10).map(|_| Value::Null));
        row.extend([
            Value::TinyInt(0),
            text("NONE"),
            Value::Int(0), // automatic checkpoints only (TARGET_RECOVERY_TIME above 0 is 40517)
            Value::Int(if delayed { 2 } else { 0 }),
            text(if delayed { "FORCED" } else { "DISABLED" }),
            off(), // is_memory_optimized_elevate_to_snapshot_on
            off(), // is_federation_member
            off(), // is_remote_data_archive_enabled
            Value::Bit(db.mixed_page_allocation()),
            off(), // is_temporal_history_retention_enabled: no temporal tables
            Value::Int(0),
            text("DATABASE_DEFAULT"),
            text(&db.name), // physical_database_name
        ]);
        row.extend((0..8).map(|_| off())); // result set caching ... change feed: none
        debug_assert_eq!(row.len(), COLUMNS.len());
        row
    }
}

/// sys.databases.log_reuse_wait: SQL Server's number for each reuse wait the log reports.
fn log_reuse_wait_number(wait: engine::log::ReuseWait) -> u8 {
    use engine::log::ReuseWait;
    match wait {
        ReuseWait::Nothing => 0,
        ReuseWait::Checkpoint => 1,
        ReuseWait::LogBackup => 2,
        ReuseWait::ActiveTransaction => 4,
    }
}

/// DATABASEPROPERTYEX's Is... properties and UserAccess, by the sys.databases column each
/// reads: the two agree by construction.
const PROPERTY_COLUMNS: [(&str, &str); 25] = [
    ("IsAnsiNullDefault", "is_ansi_null_default_on"),
    ("IsAnsiNullsEnabled", "is_ansi_nulls_on"),
    ("IsAnsiPaddingEnabled", "is_ansi_padding_on"),
    ("IsAnsiWarningsEnabled", "is_ansi_warnings_on"),
    ("IsArithmeticAbortEnabled", "is_arithabort_on"),
    ("IsAutoClose", "is_auto_close_on"),
    ("IsAutoCreateStatistics", "is_auto_create_stats_on"),
    ("IsAutoCreateStatisticsIncremental", "is_auto_create_stats_incremental_on"),
    ("IsAutoShrink", "is_auto_shrink_on"),
    ("IsAutoUpdateStatistics", "is_auto_update_stats_on"),
    ("IsCloseCursorsOnCommitEnabled", "is_cursor_close_on_commit_on"),
    ("IsFulltextEnabled", "is_fulltext_enabled"),
    ("IsInStandBy", "is_in_standby"),
    ("IsLocalCursorsDefault", "is_local_cursor_default"),
    ("IsMemoryOptimizedElevateToSnapshotEnabled", "is_memory_optimized_elevate_to_snapshot_on"),
    ("IsMergePublished", "is_merge_published"),
    ("IsNullConcat", "is_concat_null_yields_null_on"),
    ("IsNumericRoundAbortEnabled", "is_numeric_roundabort_on"),
    ("IsParameterizationForced", "is_parameterization_forced"),
    ("IsPublished", "is_published"),
    ("IsQuotedIdentifiersEnabled", "is_quoted_identifier_on"),
    ("IsRecursiveTriggersEnabled", "is_recursive_triggers_on"),
    ("IsSubscribed", "is_subscribed"),
    ("IsSyncWithBackup", "is_sync_with_backup"),
    ("UserAccess", "user_access_desc"),
];

impl Session {
    /// DATABASEPROPERTYEX(db, property) for a property that sys.databases also shows: that
    /// column's value for `db` (an Is... property as an int, as DATABASEPROPERTYEX returns
    /// it). None for any other property.
    pub(crate) fn database_option(&self, db: &Database, property: &str) -> Option<Value> {
        let (_, column) =
            PROPERTY_COLUMNS.iter().find(|(name, _)| name.eq_ignore_ascii_case(property))?;
        let at = COLUMNS.iter().position(|c| c == column)?;
        Some(match self.database_row(db).swap_remove(at) {
            Value::Bit(on) => Value::Int(i32::from(on)),
            other => other,
        })
    }
}
