-- Seed 002: Aaron Bertrand, "Changing log growth strategy in SQL Server 2022" (Simple Talk).
--
-- What it shows: a log file's growth must be zeroed (the wait PREEMPTIVE_OS_WRITEFILEGATHER),
-- except that SQL Server 2022 uses instant file initialisation for automatic log growths of
-- 64 MB or less; and 2022 cuts each growth into fewer, larger VLFs.
--
-- The examples command runs this script twice, on an instance with SQL Server 2019's VLF and
-- log-IFI rules and on one with 2022's (`extentdb run --vlf-rule 2019|2022` chooses by hand).
--
-- What to look for, per database (64 MB and 1 GB log growth):
-- - PREEMPTIVE_OS_WRITEFILEGATHER: the time spent zeroing. Under 2022 the 64 MB database
--   waits nothing (its growths use IFI); the 1 GB one still zeroes every growth.
-- - the default trace's log growth events (EventClass 93) and their duration;
-- - the VLF count and average VLF size from sys.dm_db_log_info: fewer, larger VLFs in 2022.
-- - the seed's Extended Events session (log_size_changes): each growth's
--   database_file_size_change and each zeroing's wait_info_external, read back from its
--   event file with sys.fn_xe_file_target_read_file.
--
-- Scale: the seed inserts 500,000 rows of 4 KB into 8 GB data files; this script inserts
-- 20,000 rows (about 80 MB of log; 160 MB of data, a row a page) into 256 MB data files, so
-- it runs in seconds and the data files never grow.
USE [master];
GO
DROP DATABASE IF EXISTS ifi_64;
DROP DATABASE IF EXISTS ifi_1024;
GO
CREATE DATABASE ifi_64
 ON (name = N'ifi_data', filename = 'D:\data\ifi_64.mdf', size = 256MB, filegrowth = 2048MB)
 LOG ON (name = N'ifi_log', filename = 'D:\data\ifi_64.ldf', size = 32MB, filegrowth = 64MB);
CREATE DATABASE ifi_1024
 ON (name = N'ifi_data', filename = 'D:\data\ifi_1024.mdf', size = 256MB, filegrowth = 2048MB)
 LOG ON (name = N'ifi_log', filename = 'D:\data\ifi_1024.ldf', size = 32MB, filegrowth = 1024MB);
GO
-- The seed's Extended Events session (its ACTION names each wait's database).
IF EXISTS (SELECT * FROM sys.server_event_sessions WHERE name = N'log_size_changes')
  DROP EVENT SESSION [log_size_changes] ON SERVER;
GO
CREATE EVENT SESSION [log_size_changes] ON SERVER
  ADD EVENT sqlos.wait_info_external
    (ACTION (sqlserver.database_name)
     WHERE ([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')),
  ADD EVENT sqlserver.database_file_size_change
  ADD TARGET package0.event_file(SET filename = N'ifi_log_size_changes');
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = START;
GO
-- The workload, as the seed runs it, in each database.
USE ifi_64;
DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR);
DROP TABLE IF EXISTS dbo.dummy;
SELECT TOP (0) ID = IDENTITY(int,1,1),
 name = CONVERT(nchar(2048), N'x') INTO dbo.dummy;
CREATE UNIQUE CLUSTERED INDEX CIX_dummy ON dbo.dummy(ID);
INSERT dbo.dummy(name) SELECT TOP (20000) N'x'
  FROM sys.all_objects AS s1
  CROSS JOIN sys.all_objects AS s2;
SELECT DB_NAME() AS database_name, wait_type, waiting_tasks_count, wait_time_ms
  FROM sys.dm_os_wait_stats
  WHERE wait_type = N'PREEMPTIVE_OS_WRITEFILEGATHER';
GO
USE ifi_1024;
DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR);
DROP TABLE IF EXISTS dbo.dummy;
SELECT TOP (0) ID = IDENTITY(int,1,1),
 name = CONVERT(nchar(2048), N'x') INTO dbo.dummy;
CREATE UNIQUE CLUSTERED INDEX CIX_dummy ON dbo.dummy(ID);
INSERT dbo.dummy(name) SELECT TOP (20000) N'x'
  FROM sys.all_objects AS s1
  CROSS JOIN sys.all_objects AS s2;
SELECT DB_NAME() AS database_name, wait_type, waiting_tasks_count, wait_time_ms
  FROM sys.dm_os_wait_stats
  WHERE wait_type = N'PREEMPTIVE_OS_WRITEFILEGATHER';
GO
USE [master];
GO
-- The default trace's log growths, with the seed's query as written.
SELECT t.DatabaseName,
       GrowthEvents    = COUNT(*),
       AverageDuration = AVG(t.Duration/1000.0),
       TotalDuration   = SUM(t.Duration/1000.0)
FROM
(
  SELECT [path] = REVERSE(SUBSTRING(p, CHARINDEX(N'\', p), 260)) + N'log.trc'
  FROM (SELECT REVERSE([path]) FROM sys.traces WHERE is_default = 1) AS s(p)
) AS p
CROSS APPLY sys.fn_trace_gettable(p.[path], DEFAULT) AS t
WHERE t.EventClass = 93
  AND t.DatabaseName LIKE N'ifi%'
GROUP BY t.DatabaseName;
-- The VLFs, with the seed's query as written.
SELECT d.name,
       VLFCount  = COUNT(li.database_id),
       AvgSizeMB = AVG(li.vlf_size_mb)
FROM sys.databases AS d
CROSS APPLY sys.dm_db_log_info(d.database_id) AS li
WHERE d.name LIKE N'ifi%'
GROUP BY d.name;
-- The final log sizes.
SELECT DB_NAME(database_id) AS database_name, name, size * 8 / 1024 AS size_mb
FROM sys.master_files WHERE type_desc = N'LOG' AND DB_NAME(database_id) LIKE N'ifi%';
GO
-- The Extended Events session's file (this run's: its name is in the target's data).
DECLARE @file nvarchar(260) = (
  SELECT CAST(t.target_data AS xml).value('(EventFileTarget/File/@name)[1]', 'nvarchar(260)')
  FROM sys.dm_xe_session_targets AS t
  JOIN sys.dm_xe_sessions AS s ON s.address = t.event_session_address
  WHERE s.name = N'log_size_changes' AND t.target_name = N'event_file');
SELECT xe_database = e.database_name, xe_growth_events = COUNT(*),
       xe_growth_ms = SUM(e.duration_us) / 1000.0, xe_final_log_mb = MAX(e.total_size_kb) / 1024
FROM (
  SELECT CAST(event_data AS xml).value('(event/data[@name="database_name"]/value)[1]', 'sysname'),
         CAST(event_data AS xml).value('(event/data[@name="duration"]/value)[1]', 'bigint'),
         CAST(event_data AS xml).value('(event/data[@name="total_size_kb"]/value)[1]', 'bigint')
  FROM sys.fn_xe_file_target_read_file(@file, NULL, NULL, NULL)
  WHERE object_name = N'database_file_size_change'
) AS e(database_name, duration_us, total_size_kb)
WHERE e.database_name LIKE N'ifi%'
GROUP BY e.database_name;
SELECT xe_database = w.database_name, xe_zeroing_waits = COUNT(*), xe_zeroing_ms = SUM(w.duration_ms)
FROM (
  SELECT CAST(event_data AS xml).value('(event/action[@name="database_name"]/value)[1]', 'sysname'),
         CAST(event_data AS xml).value('(event/data[@name="duration"]/value)[1]', 'bigint')
  FROM sys.fn_xe_file_target_read_file(@file, NULL, NULL, NULL)
  WHERE object_name = N'wait_info_external'
) AS w(database_name, duration_ms)
WHERE w.database_name LIKE N'ifi%'
GROUP BY w.database_name;
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = STOP;
GO
