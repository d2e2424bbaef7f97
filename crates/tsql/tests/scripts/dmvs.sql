-- DMVs and DMFs: their columns, and values checked by property where they vary.
CREATE DATABASE dm ON (NAME = dm_data, FILENAME = 'dm_data.mdf', SIZE = 4MB)
  LOG ON (NAME = dm_log, FILENAME = 'dm_log.ldf', SIZE = 1MB);
GO
USE dm;
CREATE TABLE t (id int NOT NULL PRIMARY KEY, filler char(2000) NOT NULL DEFAULT 'x');
GO
SET NOCOUNT ON;
DECLARE @i int = 1;
WHILE @i <= 40 BEGIN INSERT t (id) VALUES (@i); SET @i += 1; END;
SET NOCOUNT OFF;
GO
-- Every commit waited for its log flush: WRITELOG waits were recorded.
SELECT wait_type, CASE WHEN waiting_tasks_count >= 40 THEN '>= 40' END AS waits,
       CASE WHEN wait_time_ms >= signal_wait_time_ms AND max_wait_time_ms <= wait_time_ms THEN 'consistent' END AS times
FROM sys.dm_os_wait_stats WHERE wait_type = N'WRITELOG';
DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR);
SELECT COUNT(*) AS rows_after_clear FROM sys.dm_os_wait_stats WHERE waiting_tasks_count > 0 AND wait_type = N'WRITELOG';
-- Every wait type the engine can wait on has a row, with zeros until its first wait.
SELECT wait_type, waiting_tasks_count, wait_time_ms FROM sys.dm_os_wait_stats
WHERE wait_type IN (N'WRITELOG', N'PAGELATCH_UP', N'LCK_M_X', N'WAITFOR') ORDER BY wait_type;
SELECT COUNT(*) AS wait_types FROM sys.dm_os_wait_stats;
-- No one else is connected: nothing waits now, and this session is the one running request.
SELECT COUNT(*) AS waiting_now FROM sys.dm_os_waiting_tasks WHERE session_id > 50;
-- The system sessions' background requests: one lazy writer for the instance; a log writer,
-- checkpoint and ghost-cleanup task for each open database (master and dm here).
SELECT command, COUNT(*) AS tasks, MIN(status) AS status FROM sys.dm_exec_requests
WHERE session_id < 51 GROUP BY command ORDER BY command;
SELECT session_id, status, DB_NAME(database_id) AS db, is_user_process, open_transaction_count FROM sys.dm_exec_sessions;
-- An embedded session has no connection (host_process_id and client_interface_name NULL).
SELECT login_name, host_name, host_process_id, client_interface_name FROM sys.dm_exec_sessions
WHERE session_id = @@SPID;
SELECT COUNT(*) AS connections FROM sys.dm_exec_connections;
SELECT session_id, request_id, status, command, DB_NAME(database_id) AS db, blocking_session_id, wait_type
FROM sys.dm_exec_requests WHERE session_id = @@SPID;
SELECT latch_class FROM sys.dm_os_latch_stats WHERE waiting_requests_count < 0;
SELECT name FROM sys.dm_os_spinlock_stats WHERE name IN (N'FGCB_PRP_FILL', N'BUF_HASH') ORDER BY name;
-- One scheduler per CPU (or -P <n>): this batch's worker is the one attached, and it runs.
SELECT CASE WHEN COUNT(*) = (SELECT scheduler_count FROM sys.dm_os_sys_info) THEN 'one per scheduler' END AS scheduler_rows,
       SUM(current_workers_count) AS workers, SUM(CASE WHEN is_idle = 0 THEN 1 ELSE 0 END) AS busy,
       SUM(runnable_tasks_count) AS runnable, MIN(status) AS status, MIN(quantum_length_us) AS quantum_us
FROM sys.dm_os_schedulers;
SELECT t.task_state, t.exec_context_id, CASE WHEN t.scheduler_id = r.scheduler_id THEN 'same scheduler' END AS request_scheduler
FROM sys.dm_os_tasks AS t JOIN sys.dm_exec_requests AS r ON r.session_id = t.session_id
WHERE t.session_id = @@SPID;
-- File I/O: the data file was written by checkpoints; the log by every commit.
CHECKPOINT;
SELECT file_id, CASE WHEN num_of_writes > 0 THEN 'written' END AS writes,
       CASE WHEN num_of_bytes_written >= num_of_writes * 512 THEN 'bytes ok' END AS bytes,
       CASE WHEN io_stall = io_stall_read_ms + io_stall_write_ms THEN 'sum ok' END AS stall,
       size_on_disk_bytes
FROM sys.dm_io_virtual_file_stats(DB_ID(), NULL) ORDER BY file_id;
SELECT COUNT(*) AS files_of_file_2 FROM sys.dm_io_virtual_file_stats(DB_ID(), 2);
-- Reads after DROPCLEANBUFFERS come from the data file.
DECLARE @before bigint = (SELECT num_of_reads FROM sys.dm_io_virtual_file_stats(DB_ID(), 1));
DBCC DROPCLEANBUFFERS WITH NO_INFOMSGS;
SELECT COUNT(*) AS n FROM t;
SELECT CASE WHEN num_of_reads > @before THEN 'read from disk' END AS after_drop
FROM sys.dm_io_virtual_file_stats(DB_ID(), 1);
SELECT DB_NAME(database_id) AS db, total_log_size_in_bytes,
       CASE WHEN used_log_space_in_bytes <= total_log_size_in_bytes THEN 'ok' END AS used
FROM sys.dm_db_log_space_usage;
SELECT file_id, total_page_count, allocated_extent_page_count + unallocated_extent_page_count AS pages,
       CASE WHEN user_object_reserved_page_count >= 16 THEN 'user pages' END AS user_pages
FROM sys.dm_db_file_space_usage;
SELECT instant_file_initialization_enabled FROM sys.dm_server_services;
-- The pages of t: one IAM page, the root and ten leaves, linked in order.
SELECT allocated_page_page_id AS page, is_iam_page, page_type_desc, page_level,
       previous_page_page_id AS prev_page, next_page_page_id AS next_page
FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), NULL, NULL, 'DETAILED')
WHERE is_allocated = 1 ORDER BY page;
SELECT COUNT(*) AS uniform_extent_pages, SUM(CASE WHEN is_allocated = 1 THEN 1 ELSE 0 END) AS allocated
FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), 1, NULL, 'LIMITED') WHERE is_iam_page = 0;
SELECT index_type_desc, index_depth, index_level, avg_fragmentation_in_percent, fragment_count, page_count,
       record_count
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('t'), NULL, NULL, 'DETAILED') ORDER BY index_level;
SELECT page_count, avg_page_space_used_in_percent FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('t'), 1, NULL, 'LIMITED');
SELECT * FROM sys.dm_db_index_physical_stats(DB_ID(), NULL, NULL, NULL, 'FAST');
SELECT * FROM sys.dm_db_database_page_allocations(DB_ID(), NULL, NULL, NULL, 'FAST');
GO
-- The log's VLFs from its real layout.
SELECT file_id, vlf_sequence_number, vlf_active, vlf_status FROM sys.dm_db_log_info(DB_ID()) ORDER BY vlf_begin_offset;
-- NULL and DEFAULT mean the current database, as DB_ID() does.
SELECT (SELECT COUNT(*) FROM sys.dm_db_log_info(NULL)) AS with_null,
       (SELECT COUNT(*) FROM sys.dm_db_log_info(DEFAULT)) AS with_default,
       (SELECT COUNT(*) FROM sys.dm_db_log_info(DB_ID())) AS with_db_id;
USE master;
GO
-- sys.dm_tran_locks and sp_lock: the session's transaction holds IX on the table (and on its
-- nonclustered index's unit, a HOBT lock) and X on each key it changed, until it ends.
CREATE TABLE locked (id int PRIMARY KEY, v int);
CREATE INDEX ix_v ON locked (v);
BEGIN TRAN;
INSERT locked VALUES (1, 1), (2, 2);
SELECT resource_type, request_mode, request_status, request_type, request_owner_type,
       COUNT(*) AS requests
FROM sys.dm_tran_locks WHERE request_session_id = @@SPID
GROUP BY resource_type, request_mode, request_status, request_type, request_owner_type
ORDER BY resource_type;
CREATE TABLE #sp_lock (spid smallint, dbid smallint, ObjId int, IndId smallint, Type nchar(4),
    Resource nchar(32), Mode nvarchar(8), Status nvarchar(5));
INSERT #sp_lock EXEC sp_lock @@SPID;
SELECT OBJECT_NAME(ObjId) AS object_name, IndId, Type, Mode, Status, COUNT(*) AS locks
FROM #sp_lock WHERE ObjId = OBJECT_ID('locked')
GROUP BY ObjId, IndId, Type, Mode, Status ORDER BY IndId, Type;
DROP TABLE #sp_lock;
ROLLBACK;
SELECT COUNT(*) AS locks_after_rollback FROM sys.dm_tran_locks WHERE request_session_id = @@SPID;
GO
-- sys.dm_db_partition_stats: each index's leaf pages, used and reserved pages (from its IAM
-- chain and PFS) and rows.
SET NOCOUNT ON;
DECLARE @i int = 3;
WHILE @i <= 2000 BEGIN INSERT locked VALUES (@i, @i % 10); SET @i += 1; END;
SET NOCOUNT OFF;
SELECT index_id, in_row_data_page_count AS leaf_pages, used_page_count, reserved_page_count,
       row_count, lob_used_page_count
FROM sys.dm_db_partition_stats WHERE object_id = OBJECT_ID('locked') ORDER BY index_id;
DROP TABLE locked;
GO
-- sys.dm_os_volume_stats: the file system that holds each file (its mount point and type
-- depend on the machine; its sizes are the file system's own).
SELECT f.name,
       CASE WHEN v.volume_mount_point LIKE '/%' THEN 'mounted' END AS volume,
       CASE WHEN v.total_bytes > 0 AND v.available_bytes <= v.total_bytes THEN 'ok' END AS space
FROM sys.database_files AS f CROSS APPLY sys.dm_os_volume_stats(DB_ID(), f.file_id) AS v
ORDER BY f.file_id;
SELECT COUNT(*) AS no_such_file FROM sys.dm_os_volume_stats(DB_ID(), 999);
GO
-- sys.dm_exec_sql_text(sql_handle): the text of a request's batch, by the handle
-- sys.dm_exec_requests shows.
SELECT t.text, t.encrypted
FROM sys.dm_exec_requests AS r CROSS APPLY sys.dm_exec_sql_text(r.sql_handle) AS t
WHERE r.session_id = @@SPID;
SELECT COUNT(*) AS unknown_handle FROM sys.dm_exec_sql_text(0x0200000000);
GO
-- sys.dm_exec_input_buffer(session_id, request_id): the session's batch, as DBCC INPUTBUFFER
-- shows it; no row for a session that is not connected or a request it is not running.
SELECT event_type, parameters, LEFT(event_info, 24) AS event_info
FROM sys.dm_exec_input_buffer(@@SPID, 0);
SELECT COUNT(*) AS no_such_request FROM sys.dm_exec_input_buffer(@@SPID, 1);
SELECT COUNT(*) AS no_such_session FROM sys.dm_exec_input_buffer(999, NULL);
SELECT s.session_id - @@SPID AS same_session, LEFT(ib.event_info, 24) AS event_info
FROM sys.dm_exec_sessions AS s CROSS APPLY sys.dm_exec_input_buffer(s.session_id, NULL) AS ib
WHERE s.session_id = @@SPID;
GO
-- fn_virtualfilestats (with or without sys.): dm_io_virtual_file_stats' figures under the
-- older names, its handle a bigint.
SELECT f.DbId, f.FileId, f.BytesOnDisk,
       CASE WHEN f.FileHandle = CAST(v.file_handle AS bigint) THEN 'same handle' END AS handle,
       CASE WHEN f.TimeStamp >= 0 AND f.IoStallMS = f.IoStallReadMS + f.IoStallWriteMS THEN 'ok' END AS stalls
FROM fn_virtualfilestats(DB_ID(), NULL) AS f
JOIN sys.dm_io_virtual_file_stats(DB_ID(), NULL) AS v ON v.file_id = f.FileId
ORDER BY f.FileId;
SELECT DbId, FileId FROM sys.fn_virtualfilestats(DB_ID(), 2);
-- A binary value converts to an integer type by its rightmost bytes, most significant first.
SELECT CAST(0x0000000000000101 AS int) AS i, CAST(0xFFFF AS smallint) AS s,
       CAST(0x01FF AS tinyint) AS t, CAST(0x80 AS bigint) AS b, CONVERT(int, 0x00000100) AS c;
GO
