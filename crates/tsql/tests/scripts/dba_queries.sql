-- golden: mask-times
-- The columns DBA scripts read (Glenn Berry's diagnostic queries, sp_Blitz's checks): every
-- column of sys.databases, sys.dm_exec_sessions and sys.dm_os_sys_info is there, in SQL
-- Server 2022's order, and each value is the engine's.
SELECT TOP (0) * FROM sys.databases;
SELECT TOP (0) * FROM sys.dm_exec_sessions;
SELECT TOP (0) * FROM sys.dm_os_sys_info;
SELECT TOP (0) * FROM sys.dm_io_virtual_file_stats(NULL, NULL);
SELECT TOP (0) * FROM sys.dm_db_log_space_usage;
SELECT TOP (0) * FROM sys.dm_exec_requests;
GO
CREATE DATABASE shop;
ALTER DATABASE shop SET RECOVERY FULL;
ALTER DATABASE shop SET DELAYED_DURABILITY = FORCED;
ALTER DATABASE shop SET MIXED_PAGE_ALLOCATION ON;
GO
-- Each database's settings as the engine keeps them; the owner is sa (sid 0x01).
SELECT name, database_id, SUSER_SNAME(owner_sid) AS owner, compatibility_level, collation_name,
       user_access_desc, state, state_desc, recovery_model, recovery_model_desc,
       page_verify_option, page_verify_option_desc, snapshot_isolation_state_desc,
       is_read_committed_snapshot_on, is_auto_create_stats_on, is_db_chaining_on,
       log_reuse_wait, log_reuse_wait_desc, delayed_durability, delayed_durability_desc,
       is_mixed_page_allocation_on, containment_desc, target_recovery_time_in_seconds,
       physical_database_name, is_accelerated_database_recovery_on,
       CASE WHEN create_date BETWEEN DATEADD(day, -1, GETDATE()) AND GETDATE() THEN 'just now' END AS created
FROM sys.databases ORDER BY database_id;
GO
-- Glenn Berry's "Recovery model, log reuse wait description, log file size, log usage size
-- and compatibility level for all databases on instance", as he writes it.
SELECT db.[name] AS [Database Name], SUSER_SNAME(db.owner_sid) AS [Database Owner], db.recovery_model_desc AS [Recovery Model],
db.state_desc, db.containment_desc, db.log_reuse_wait_desc AS [Log Reuse Wait Description],
CONVERT(DECIMAL(18,2), ls.cntr_value/1024.0) AS [Log Size (MB)],
db.[compatibility_level] AS [DB Compatibility Level], db.page_verify_option_desc AS [Page Verify Option],
db.is_auto_create_stats_on, db.is_auto_update_stats_on, db.is_auto_update_stats_async_on, db.is_parameterization_forced,
db.snapshot_isolation_state_desc, db.is_read_committed_snapshot_on, db.is_auto_close_on, db.is_auto_shrink_on,
db.target_recovery_time_in_seconds, db.is_cdc_enabled, db.is_published, db.is_distributor,
db.group_database_id, db.replica_id, db.is_memory_optimized_elevate_to_snapshot_on,
db.delayed_durability_desc, db.is_query_store_on, db.is_temporal_history_retention_enabled,
db.is_accelerated_database_recovery_on, db.is_master_key_encrypted_by_server, db.is_encrypted
FROM sys.databases AS db WITH (NOLOCK)
INNER JOIN sys.dm_os_performance_counters AS lu WITH (NOLOCK)
ON db.name = lu.instance_name
INNER JOIN sys.dm_os_performance_counters AS ls WITH (NOLOCK)
ON db.name = ls.instance_name
WHERE lu.counter_name LIKE N'Log File(s) Used Size (KB)%'
AND ls.counter_name LIKE N'Log File(s) Size (KB)%'
AND ls.cntr_value > 0
ORDER BY db.[name] OPTION (RECOMPILE);
GO
-- In SIMPLE recovery an open transaction holds the log: the reuse wait says so (4), and
-- nothing once it commits and a checkpoint runs (0). FULL recovery waits for a log backup (2,
-- above: there are no log backups).
CREATE DATABASE till;
GO
USE till;
CREATE TABLE t (id int PRIMARY KEY);
BEGIN TRANSACTION;
INSERT INTO t VALUES (1);
CHECKPOINT;
SELECT name, log_reuse_wait, log_reuse_wait_desc FROM sys.databases WHERE name = 'till';
COMMIT;
CHECKPOINT;
SELECT name, log_reuse_wait, log_reuse_wait_desc FROM sys.databases WHERE name = 'till';
USE master;
GO
-- The logins' sids.
SELECT SUSER_SNAME(0x01) AS sa_by_sid, SUSER_SNAME(0x02) AS unknown_sid, SUSER_SID() AS my_sid,
       SUSER_SID('sa') AS sa_sid, SUSER_SID('nobody') AS nobody_sid, SUSER_NAME(1) AS principal_1,
       SUSER_NAME(2) AS principal_2;
GO
-- The session's SET options, as DBCC USEROPTIONS shows them, and what its last batch left.
SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3;
GO
SELECT security_id, login_name, original_login_name, nt_domain, nt_user_name, status,
       is_user_process, text_size, language, date_format, date_first, quoted_identifier,
       arithabort, ansi_null_dflt_on, ansi_defaults, ansi_warnings, ansi_padding, ansi_nulls,
       concat_null_yields_null, transaction_isolation_level, lock_timeout, deadlock_priority,
       row_count, prev_error, group_id, DB_NAME(database_id) AS db, authenticating_database_id,
       endpoint_id, client_version, unsuccessful_logons
FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
GO
SELECT 1 / 0;
GO
SELECT row_count, prev_error FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
GO
-- The request that reads sys.dm_exec_requests sees itself as it stands: @@ROWCOUNT (0 after
-- the failed division) and @@ERROR (8134) so far, at nesting level 0 (the batch itself), with
-- the whole batch as its statement (offsets 0 and -1) and no plan; its last wait is the
-- session's last (which one depends on timing: the commits' WRITELOG, a quantum's end...).
SELECT 1 AS n UNION ALL SELECT 2;
SELECT 1 / 0;
SELECT status, command, statement_start_offset, statement_end_offset, plan_handle, user_id,
       open_resultset_count, percent_complete, CASE WHEN task_address IS NOT NULL THEN 'a task' END AS task,
       CASE WHEN LEN(last_wait_type) > 0 THEN 'waited before' END AS last_wait_type, row_count, prev_error, nest_level, granted_query_memory, group_id, dop,
       is_resumable, language, date_first, transaction_isolation_level
FROM sys.dm_exec_requests WHERE session_id = @@SPID;
GO
-- System sessions have no client and no login sid of their own but sa's.
SELECT TOP (1) is_user_process, host_name, program_name, client_version, endpoint_id
FROM sys.dm_exec_sessions WHERE is_user_process = 0;
GO
-- Glenn Berry's "Hardware information from SQL Server", with the values checked against each
-- other rather than shown (they are this machine's).
SELECT CASE WHEN cpu_count >= 1 AND hyperthread_ratio >= 1 THEN 'ok' END AS cpus,
       CASE WHEN socket_count * cores_per_socket >= 1 AND numa_node_count >= 1 THEN 'ok' END AS topology,
       CASE WHEN scheduler_count = scheduler_total_count THEN 'ok' END AS schedulers,
       CASE WHEN visible_target_kb = committed_target_kb THEN 'ok' END AS visible_target,
       CASE WHEN ms_ticks >= sqlserver_start_time_ms_ticks THEN 'ok' END AS ticks,
       CASE WHEN DATEDIFF(second, sqlserver_start_time, GETDATE()) BETWEEN 0 AND 3600 THEN 'ok' END AS up_time,
       CASE WHEN process_user_time_ms + process_kernel_time_ms > 0 THEN 'ok' END AS process_cpu,
       CASE WHEN virtual_machine_type_desc IN ('NONE', 'HYPERVISOR') THEN 'ok' END AS vm,
       affinity_type_desc, os_quantum, os_priority_class, time_source_desc,
       softnuma_configuration_desc, sql_memory_model_desc, max_workers_count
FROM sys.dm_os_sys_info WITH (NOLOCK) OPTION (RECOMPILE);
GO
-- The Memory Manager's counters are the buffer pool's, as sys.dm_os_sys_info shows it: the
-- target is its frames, the total what it has committed, split into database pages and free
-- memory (one read of the view: the pool may commit more between two); no query takes a
-- memory grant.
SELECT CASE WHEN SUM(CASE WHEN counter_name = 'Target Server Memory (KB)' THEN cntr_value END)
                 = (SELECT committed_target_kb FROM sys.dm_os_sys_info) THEN 'ok' END AS target_is_the_frames,
       CASE WHEN SUM(CASE WHEN counter_name = 'Total Server Memory (KB)' THEN cntr_value END)
                 BETWEEN 8 AND (SELECT committed_target_kb FROM sys.dm_os_sys_info) THEN 'ok' END AS total_within_target,
       CASE WHEN SUM(CASE WHEN counter_name IN ('Database Cache Memory (KB)', 'Free Memory (KB)') THEN cntr_value END)
                 = SUM(CASE WHEN counter_name = 'Total Server Memory (KB)' THEN cntr_value END)
            THEN 'ok' END AS cache_plus_free_is_total,
       SUM(CASE WHEN counter_name LIKE 'Memory Grants%' THEN cntr_value END) AS grants,
       COUNT(*) AS counters
FROM sys.dm_os_performance_counters WHERE object_name LIKE N'%Memory Manager%';
GO
-- Glenn Berry's "Server properties".
SELECT SERVERPROPERTY('MachineName') AS [MachineName], SERVERPROPERTY('ServerName') AS [ServerName],
SERVERPROPERTY('Edition') AS [Edition], SERVERPROPERTY('EngineEdition') AS [EngineEdition],
SERVERPROPERTY('ProductLevel') AS [ProductLevel], SERVERPROPERTY('ProductVersion') AS [ProductVersion],
SERVERPROPERTY('ProductMajorVersion') AS [ProductMajorVersion], SERVERPROPERTY('ProductMinorVersion') AS [ProductMinorVersion],
SERVERPROPERTY('ProductBuild') AS [ProductBuild], SERVERPROPERTY('ProductUpdateLevel') AS [ProductUpdateLevel],
SERVERPROPERTY('IsClustered') AS [IsClustered], SERVERPROPERTY('IsHadrEnabled') AS [IsHadrEnabled],
SERVERPROPERTY('IsFullTextInstalled') AS [IsFullTextInstalled], SERVERPROPERTY('IsIntegratedSecurityOnly') AS [IsIntegratedSecurityOnly],
SERVERPROPERTY('Collation') AS [Collation], SERVERPROPERTY('CollationID') AS [CollationID],
SERVERPROPERTY('SqlCharSetName') AS [SqlCharSetName], SERVERPROPERTY('SqlSortOrderName') AS [SqlSortOrderName],
SERVERPROPERTY('LCID') AS [LCID], SERVERPROPERTY('InstanceName') AS [InstanceName],
SERVERPROPERTY('InstanceDefaultDataPath') AS [InstanceDefaultDataPath],
SERVERPROPERTY('InstanceDefaultLogPath') AS [InstanceDefaultLogPath],
SERVERPROPERTY('ErrorLogFileName') AS [ErrorLogFileName],
CASE WHEN SERVERPROPERTY('ProcessID') > 0 THEN 'ok' END AS [ProcessID],
SERVERPROPERTY('NoSuchProperty') AS [NoSuchProperty];
GO
-- Glenn Berry's "Log space usage for current database" and the file statistics' Resource
-- Governor columns (there is no Resource Governor: nothing is ever queued).
USE shop;
SELECT DB_NAME(lsu.database_id) AS [Database Name], db.recovery_model_desc AS [Recovery Model],
CAST(lsu.total_log_size_in_bytes/1048576.0 AS DECIMAL(10, 2)) AS [Total Log Space (MB)],
CAST(lsu.log_space_in_bytes_since_last_backup/1048576.0 AS DECIMAL(10, 2)) AS [Used Log Space Since Last Backup (MB)],
db.log_reuse_wait_desc
FROM sys.dm_db_log_space_usage AS lsu WITH (NOLOCK)
INNER JOIN sys.databases AS db WITH (NOLOCK)
ON lsu.database_id = db.database_id
OPTION (RECOMPILE);
SELECT file_id, io_stall_queued_read_ms, io_stall_queued_write_ms
FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL) ORDER BY file_id;
GO
-- DATABASEPROPERTYEX reads the same settings as sys.databases.
SELECT DATABASEPROPERTYEX(N'shop', N'Recovery') AS recovery, DATABASEPROPERTYEX(N'shop', N'UserAccess') AS user_access,
       DATABASEPROPERTYEX(N'shop', N'IsAutoShrink') AS auto_shrink, DATABASEPROPERTYEX(N'shop', N'IsAutoCreateStatistics') AS auto_create_stats,
       DATABASEPROPERTYEX(N'shop', N'IsAnsiNullsEnabled') AS ansi_nulls, DATABASEPROPERTYEX(N'shop', N'IsTornPageDetectionEnabled') AS torn_page,
       DATABASEPROPERTYEX(N'shop', N'LCID') AS lcid, DATABASEPROPERTYEX(N'shop', N'NoSuchProperty') AS no_such;
SELECT COUNT(*) AS disagreements FROM sys.databases AS d
WHERE DATABASEPROPERTYEX(d.name, 'IsAutoClose') <> d.is_auto_close_on
   OR DATABASEPROPERTYEX(d.name, 'IsAutoUpdateStatistics') <> d.is_auto_update_stats_on
   OR DATABASEPROPERTYEX(d.name, 'IsQuotedIdentifiersEnabled') <> d.is_quoted_identifier_on
   OR DATABASEPROPERTYEX(d.name, 'UserAccess') <> d.user_access_desc;
GO
-- Glenn Berry's "Host information" and "SQL Server Services information": the Linux host.
SELECT host_platform, CASE WHEN LEN(host_distribution) > 0 THEN 'named' END AS host_distribution,
       host_service_pack_level, host_sku, os_language_version
FROM sys.dm_os_host_info WITH (NOLOCK) OPTION (RECOMPILE);
SELECT servicename, startup_type, startup_type_desc, status, status_desc, is_clustered, cluster_nodename,
       CASE WHEN process_id = SERVERPROPERTY('ProcessID') THEN 'this process' END AS process
FROM sys.dm_server_services WITH (NOLOCK) OPTION (RECOMPILE);
GO
