-- Seed 000: Paul Randal, "Investigating the proportional fill algorithm" (SQLskills).
--
-- What it shows: SQL Server spreads extent allocations over the files of a filegroup by
-- round robin, weighted by each file's free space. Trace flag 1165 (with 3605, to the
-- errorlog) prints each recalculation of the skip targets: the file with the most free
-- extents gets skip target 1, every other file floor(most free / its free), and a file is
-- used once every <skip target> passes.
--
-- What to look for:
-- 1. After CREATE DATABASE: one file, skip target 1.
-- 2. After adding a second small file: both skip targets are 1 (integer division).
-- 3. After adding a 250 MB file: it has skip target 1, the small files large ones (the seed
--    saw 90 and 50), so almost every new extent goes to the new file.
-- 4. The table with one row per page: where its extents went, per file. The seed inserts
--    70,000 rows (GO 70000) to pass 8,192 extent allocations and see a recalculation; this
--    script inserts 3,000 (about 375 extents) so that it runs in seconds. Raise the GO count
--    to 70000 to see the recalculation (it writes about 560 MB).
--
-- Differences from the seed: extentdb's primary file must be at least 3 MB (SQL Server 2014's
-- 5 MB works here too); the free-extent counts differ a little because extentdb's system
-- tables are smaller than model's.
DBCC TRACEON (1165, 3605);
EXEC sp_cycle_errorlog;
USE [master];
GO
IF DATABASEPROPERTYEX (N'Company', N'Version') > 0
BEGIN
    DROP DATABASE [Company];
END
GO
CREATE DATABASE [Company] ON PRIMARY (
    NAME = N'Company_data',
    FILENAME = N'D:\SQLskills\Company_data.mdf',
    SIZE = 5MB,
    FILEGROWTH = 1MB)
LOG ON (
    NAME = N'Company_log',
    FILENAME = N'D:\SQLskills\Company_log.ldf');
GO
EXEC xp_readerrorlog 0, 1, N'Proportional Fill';
EXEC xp_readerrorlog 0, 1, N'free extents';
GO
ALTER DATABASE [Company] ADD FILE (
    NAME = N'SecondFile',
    FILENAME = N'D:\SQLskills\SecondFile.ndf',
    SIZE = 5MB,
    FILEGROWTH = 1MB);
GO
EXEC xp_readerrorlog 0, 1, N'free extents';
GO
ALTER DATABASE [Company] ADD FILE (
    NAME = N'ThirdFile',
    FILENAME = N'D:\SQLskills\ThirdFile.ndf',
    SIZE = 250MB,
    FILEGROWTH = 1MB);
GO
EXEC xp_readerrorlog 0, 1, N'free extents';
GO
USE [Company];
GO
CREATE TABLE [BigRows] (
    [c1] INT IDENTITY,
    [c2] CHAR (8000) DEFAULT 'a');
GO
SET NOCOUNT ON;
GO
INSERT INTO [BigRows] DEFAULT VALUES;
GO 3000
SET NOCOUNT OFF;
GO
-- Where the table's extents went: nearly all to ThirdFile, the file with skip target 1.
SELECT FILE_NAME (extent_file_id) AS file_name, COUNT (DISTINCT extent_page_id) AS extents
FROM sys.dm_db_database_page_allocations (DB_ID (), OBJECT_ID (N'BigRows'), NULL, NULL, 'LIMITED')
WHERE is_iam_page = 0
GROUP BY extent_file_id
ORDER BY extent_file_id;
DBCC SHOWFILESTATS;
EXEC xp_readerrorlog 0, 1, N'Proportional Fill Recalculation Starting';
GO
USE [master];
DBCC TRACEOFF (1165, 3605);
GO
