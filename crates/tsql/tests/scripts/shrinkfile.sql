-- DBCC SHRINKFILE. A log file loses inactive VLFs from its end: the active log at the end stops
-- it (9008) until the log wraps round to the file's start; the log keeps two VLFs (9006). Then
-- a growth in one large step leaves few VLFs: the usual fix for a log grown in small steps.
CREATE DATABASE Shrinks ON (NAME = sh_data, FILENAME = 'sh.mdf', SIZE = 8MB)
LOG ON (NAME = sh_log, FILENAME = 'sh.ldf', SIZE = 1MB, FILEGROWTH = 1MB)
GO
ALTER DATABASE Shrinks SET RECOVERY SIMPLE
GO
USE Shrinks
SET NOCOUNT ON
CREATE TABLE t (id INT IDENTITY PRIMARY KEY, pad CHAR(4000) NOT NULL DEFAULT 'x')
-- One transaction: the 1 MB log cannot truncate, so it grows in 1 MB steps.
BEGIN TRAN
DECLARE @i INT = 0
WHILE @i < 600 BEGIN INSERT t DEFAULT VALUES; SET @i += 1 END
COMMIT
SET NOCOUNT OFF
SELECT COUNT(*) AS vlfs, SUM(vlf_size_mb) AS log_mb FROM sys.dm_db_log_info(DB_ID())
GO
-- The current VLF is the last one: nothing after it can go.
CHECKPOINT
DBCC SHRINKFILE (sh_log, 1)
GO
-- Fill the rest of the current VLF so that the log moves to the first one, which the
-- checkpoint made reusable; the next checkpoint frees the rest.
SET NOCOUNT ON
DECLARE @start INT = (SELECT MAX(vlf_sequence_number) FROM sys.dm_db_log_info(DB_ID()))
WHILE (SELECT MAX(vlf_sequence_number) FROM sys.dm_db_log_info(DB_ID())) = @start
    INSERT t DEFAULT VALUES
SET NOCOUNT OFF
CHECKPOINT
SELECT vlf_begin_offset, vlf_active FROM sys.dm_db_log_info(DB_ID()) WHERE vlf_active = 1
DBCC SHRINKFILE (sh_log, 1)
SELECT COUNT(*) AS vlfs, SUM(vlf_size_mb) AS log_mb FROM sys.dm_db_log_info(DB_ID())
SELECT name, size FROM sys.database_files WHERE type = 1
GO
-- At two VLFs the log stops (9006); a growth in one 64 MB step adds one VLF (2022 rule).
DBCC SHRINKFILE (2, 0) WITH NO_INFOMSGS
ALTER DATABASE Shrinks MODIFY FILE (NAME = sh_log, SIZE = 64MB)
SELECT COUNT(*) AS vlfs, SUM(vlf_size_mb) AS log_mb FROM sys.dm_db_log_info(DB_ID())
GO
-- A data file is cut after its last extent in use, never below the target; TRUNCATEONLY
-- ignores the target; NOTRUNCATE cuts nothing (no page moves here).
DBCC SHRINKFILE (sh_data, 100) WITH NO_INFOMSGS
DBCC SHRINKFILE (sh_data, 2147483647) WITH NO_INFOMSGS
DBCC SHRINKFILE (sh_data, 6, NOTRUNCATE) WITH NO_INFOMSGS
DBCC SHRINKFILE (sh_data, 6) WITH NO_INFOMSGS
DROP TABLE t
DBCC SHRINKFILE (sh_data, 5, TRUNCATEONLY)
SELECT name, size FROM sys.database_files WHERE type = 0
GO
-- The file grows again when it needs room, and the data is whole.
CREATE TABLE u (id INT PRIMARY KEY, pad CHAR(4000))
SET NOCOUNT ON
DECLARE @i INT = 0
WHILE @i < 200 BEGIN INSERT u VALUES (@i, 'y'); SET @i += 1 END
SET NOCOUNT OFF
SELECT COUNT(*) AS rows_in_u FROM u
DBCC CHECKDB WITH NO_INFOMSGS
GO
DBCC SHRINKFILE (nosuch)
GO
DBCC SHRINKFILE (7)
GO
DBCC SHRINKFILE (sh_data, EMPTYFILE)
GO
DBCC SHRINKFILE (sh_data, -1)
GO
-- DBCC SHRINKDATABASE: each file shrunk to leave target_percent of it free (a row for each file
-- that shrank); NOTRUNCATE shrinks nothing here; TRUNCATEONLY as far as each file goes.
ALTER DATABASE Shrinks MODIFY FILE (NAME = sh_data, SIZE = 12MB)
GO
SELECT name, size FROM sys.database_files ORDER BY file_id
DBCC SHRINKDATABASE (Shrinks, 10, NOTRUNCATE)
DBCC SHRINKDATABASE (0, 50)
SELECT name, size FROM sys.database_files ORDER BY file_id
DBCC SHRINKDATABASE (Shrinks, TRUNCATEONLY) WITH NO_INFOMSGS
SELECT name, size FROM sys.database_files ORDER BY file_id
SELECT COUNT(*) AS rows_in_u FROM u
GO
DBCC SHRINKDATABASE (Shrinks, 101)
GO
DBCC SHRINKDATABASE (NoSuchDatabase)
GO
USE master
DROP DATABASE Shrinks
GO
