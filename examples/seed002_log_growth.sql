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
