-- sys.dm_db_log_stats: the log's summary, which agrees with sys.dm_db_log_info's VLFs and
-- DBCC SQLPERF(LOGSPACE); the log since the last checkpoint falls to nothing at CHECKPOINT,
-- and in SIMPLE recovery a checkpoint frees the VLFs before MinLSN (fewer active VLFs).
CREATE DATABASE LogStats ON (NAME = ls_data, FILENAME = 'ls.mdf', SIZE = 8MB)
LOG ON (NAME = ls_log, FILENAME = 'ls.ldf', SIZE = 1MB, FILEGROWTH = 1MB)
GO
SELECT recovery_model, total_vlf_count, active_vlf_count, total_log_size_mb,
       log_truncation_holdup_reason, log_backup_time, log_backup_lsn
FROM sys.dm_db_log_stats(DB_ID(N'LogStats'))
GO
USE LogStats
SET NOCOUNT ON
CREATE TABLE t (id INT PRIMARY KEY, pad CHAR(4000))
-- One transaction of 300 rows of 4 KB: the 1 MB log cannot truncate, so it grows.
BEGIN TRAN
DECLARE @i INT = 0
WHILE @i < 300
BEGIN
  INSERT t VALUES (@i, 'x')
  SET @i += 1
END
COMMIT
SET NOCOUNT OFF
GO
-- The same VLFs as sys.dm_db_log_info, the same size as its files.
SELECT CASE WHEN s.total_vlf_count = (SELECT COUNT(*) FROM sys.dm_db_log_info(DB_ID()))
            THEN 'agrees' ELSE 'differs' END AS total_vlfs,
       CASE WHEN s.active_vlf_count = (SELECT COUNT(*) FROM sys.dm_db_log_info(DB_ID()) WHERE vlf_active = 1)
            THEN 'agrees' ELSE 'differs' END AS active_vlfs,
       CASE WHEN s.current_vlf_sequence_number = (SELECT MAX(vlf_sequence_number) FROM sys.dm_db_log_info(DB_ID()))
            THEN 'agrees' ELSE 'differs' END AS current_vlf,
       CASE WHEN s.total_log_size_mb = (SELECT SUM(size) * 8 / 1024.0 FROM sys.database_files WHERE type = 1)
            THEN 'agrees' ELSE 'differs' END AS total_size,
       s.total_vlf_count, s.total_log_size_mb,
       CASE WHEN s.log_min_lsn <= s.log_end_lsn AND s.log_recovery_lsn <= s.log_end_lsn
            THEN 'ordered' ELSE 'out of order' END AS lsns
FROM sys.dm_db_log_stats(NULL) AS s
GO
SELECT CASE WHEN log_since_last_checkpoint_mb > 1 THEN 'over 1 MB' ELSE 'little' END AS since_checkpoint,
       active_vlf_count AS active_before_checkpoint
FROM sys.dm_db_log_stats(DEFAULT)
CHECKPOINT
SELECT CASE WHEN log_since_last_checkpoint_mb < 0.1 THEN 'near 0' ELSE 'large' END AS since_checkpoint,
       active_vlf_count AS active_after_checkpoint
FROM sys.dm_db_log_stats(DEFAULT)
GO
-- Read from inside the database, in a transaction that has only read: it wrote no log record
-- (its begin record would come with its first change), so it holds nothing back.
BEGIN TRAN
SELECT COUNT(*) AS rows_read FROM t
SELECT log_truncation_holdup_reason AS holdup_inside FROM sys.dm_db_log_stats(DB_ID())
SELECT log_reuse_wait_desc FROM sys.databases WHERE name = DB_NAME()
COMMIT
GO
USE master
SELECT log_truncation_holdup_reason FROM sys.dm_db_log_stats(DB_ID(N'LogStats'))
SELECT COUNT(*) AS other_database_rows FROM sys.dm_db_log_stats(DB_ID(N'LogStats'))
SELECT COUNT(*) AS no_such_database_rows FROM sys.dm_db_log_stats(32000)
DROP DATABASE LogStats
GO
