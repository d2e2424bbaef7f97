-- sys.dm_os_performance_counters: counters are cumulative counts of real events; a reader
-- takes the difference of two samples. Each section reads a counter, does one thing, and
-- shows how far the counter moved.
CREATE DATABASE Perf ON PRIMARY (NAME = perf_data, FILENAME = 'perf.mdf', SIZE = 4MB)
LOG ON (NAME = perf_log, FILENAME = 'perf.ldf', SIZE = 2MB, FILEGROWTH = 1MB);
GO
USE Perf;
GO
-- The objects and counters there are, and their types (272696576: a count read as a rate;
-- 65792: a value now). Names are nchar(128), padded with spaces as in SQL Server.
SELECT RTRIM(object_name) AS object_name, RTRIM(counter_name) AS counter_name, cntr_type,
       LEN(counter_name) AS len, LEN(counter_name + 'x') - 1 AS padded_len
FROM sys.dm_os_performance_counters
WHERE RTRIM(instance_name) IN ('', 'Perf', '_Total')
  AND NOT (object_name = 'SQLServer:Databases' AND instance_name = '_Total');
GO
-- A padded name matches a literal with =, not a LIKE without the trailing spaces.
SELECT COUNT(*) AS equal_matches FROM sys.dm_os_performance_counters
WHERE counter_name = 'Page Splits/sec';
SELECT COUNT(*) AS like_matches FROM sys.dm_os_performance_counters
WHERE counter_name LIKE '%Splits/sec';
GO
-- 100 rows of 3,000 bytes in ascending key order: two rows a page, so a root split, then a new
-- last page every other row (SQL Server counts those end-of-index allocations as splits too).
CREATE TABLE wide (id int PRIMARY KEY, pad char(3000) NOT NULL);
GO
SET NOCOUNT ON;
DECLARE @splits bigint, @pages bigint, @extents bigint;
SELECT @splits = cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Page Splits/sec';
SELECT @pages = cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Pages Allocated/sec';
SELECT @extents = cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Extents Allocated/sec';
DECLARE @i int = 0;
WHILE @i < 100 BEGIN INSERT wide VALUES (@i, 'x'); SET @i += 1; END;
SELECT (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Page Splits/sec') - @splits AS page_splits,
       (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Pages Allocated/sec') - @pages AS pages_allocated,
       (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Extents Allocated/sec') - @extents AS extents_allocated;
GO
-- DROP TABLE gives its pages and extents back.
DECLARE @extents bigint;
SELECT @extents = cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Extent Deallocations/sec';
DROP TABLE wide;
SELECT (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Extent Deallocations/sec') - @extents AS extents_deallocated;
GO
-- Three explicit transactions, each a durable commit: at least three log flushes more for this
-- database, and five transactions: the three, and the two SELECTs after the first sample, each
-- an autocommit transaction (SQL Server counts those too).
CREATE TABLE small (id int PRIMARY KEY);
GO
DECLARE @xacts bigint, @flushes bigint;
SELECT @xacts = cntr_value FROM sys.dm_os_performance_counters
WHERE counter_name = 'Transactions/sec' AND instance_name = 'Perf';
SELECT @flushes = cntr_value FROM sys.dm_os_performance_counters
WHERE counter_name = 'Log Flushes/sec' AND instance_name = 'Perf';
BEGIN TRAN; INSERT small VALUES (1); COMMIT;
BEGIN TRAN; INSERT small VALUES (2); COMMIT;
BEGIN TRAN; INSERT small VALUES (3); COMMIT;
SELECT (SELECT cntr_value FROM sys.dm_os_performance_counters
        WHERE counter_name = 'Transactions/sec' AND instance_name = 'Perf') - @xacts AS transactions,
       CASE WHEN (SELECT cntr_value FROM sys.dm_os_performance_counters
                  WHERE counter_name = 'Log Flushes/sec' AND instance_name = 'Perf') - @flushes >= 3
            THEN 'yes' ELSE 'no' END AS flushed_each_commit;
GO
-- An open transaction is active until it ends.
BEGIN TRAN;
INSERT small VALUES (4);
SELECT cntr_value AS active_in_transaction FROM sys.dm_os_performance_counters
WHERE counter_name = 'Active Transactions' AND instance_name = 'Perf';
COMMIT;
SELECT cntr_value AS active_after_commit FROM sys.dm_os_performance_counters
WHERE counter_name = 'Active Transactions' AND instance_name = 'Perf';
GO
-- The log's size and growths follow ALTER DATABASE; a shrink that removes VLFs counts (the
-- log keeps two VLFs: of the three, the last one goes).
ALTER DATABASE Perf MODIFY FILE (NAME = perf_log, SIZE = 4MB);
ALTER DATABASE Perf MODIFY FILE (NAME = perf_log, SIZE = 6MB);
GO
SELECT RTRIM(counter_name) AS counter_name, cntr_value FROM sys.dm_os_performance_counters
WHERE instance_name = 'Perf' AND counter_name IN ('Log File(s) Size (KB)', 'Log Growths', 'Log Shrinks', 'Data File(s) Size (KB)');
GO
CHECKPOINT;
DBCC SHRINKFILE (perf_log, 2) WITH NO_INFOMSGS;
GO
SELECT RTRIM(counter_name) AS counter_name, cntr_value FROM sys.dm_os_performance_counters
WHERE instance_name = 'Perf' AND counter_name IN ('Log File(s) Size (KB)', 'Log Shrinks');
GO
-- Every batch is a batch request: this one and the next are two.
SELECT cntr_value AS batches FROM sys.dm_os_performance_counters WHERE counter_name = 'Batch Requests/sec';
GO
SELECT cntr_value AS batches FROM sys.dm_os_performance_counters WHERE counter_name = 'Batch Requests/sec';
GO
-- Buffer cache hit ratio is a fraction of two counters: the lookups that found their page in
-- the pool, over every lookup (Buffer cache hit ratio base). A table read cold, then warm: the
-- cold read's misses are the pages it read from disk itself (pages read ahead are hits, as in
-- SQL Server); the warm read misses none.
CREATE TABLE cached (id int PRIMARY KEY, pad char(2000) NOT NULL);
GO
DECLARE @i int = 0;
WHILE @i < 200 BEGIN INSERT cached VALUES (@i, 'x'); SET @i += 1; END;
CHECKPOINT;
DBCC DROPCLEANBUFFERS WITH NO_INFOMSGS;
GO
CREATE TABLE #samples (read_kind varchar(10), hits bigint, lookups bigint, page_reads bigint);
GO
INSERT #samples SELECT 'before',
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio base'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Page reads/sec');
SELECT COUNT(*) AS cold_rows FROM cached;
INSERT #samples SELECT 'cold',
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio base'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Page reads/sec');
SELECT COUNT(*) AS warm_rows FROM cached;
INSERT #samples SELECT 'warm',
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Buffer cache hit ratio base'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Page reads/sec');
GO
SELECT s.read_kind, s.lookups - p.lookups AS lookups, (s.lookups - p.lookups) - (s.hits - p.hits) AS misses,
       CASE WHEN s.page_reads > p.page_reads THEN 'yes' ELSE 'no' END AS read_from_disk
FROM #samples s JOIN #samples p
  ON (s.read_kind = 'cold' AND p.read_kind = 'before') OR (s.read_kind = 'warm' AND p.read_kind = 'cold');
GO
-- Page life expectancy (seconds) is the buffer pool's, so Buffer Manager and Buffer Node 000
-- agree; a 512 MB pool under this script never ran out of free frames.
SELECT COUNT(DISTINCT cntr_value) AS life_expectancy_values, MIN(cntr_type) AS cntr_type
FROM sys.dm_os_performance_counters WHERE counter_name = 'Page life expectancy';
SELECT RTRIM(object_name) AS object_name, RTRIM(counter_name) AS counter_name,
       RTRIM(instance_name) AS instance_name, cntr_type
FROM sys.dm_os_performance_counters WHERE object_name = 'SQLServer:Buffer Node';
SELECT cntr_value AS free_list_stalls FROM sys.dm_os_performance_counters
WHERE counter_name = 'Free list stalls/sec';
GO
-- Full Scans/sec counts unrestricted scans; Index Searches/sec counts seeks that start a range
-- and single-row lookups by clustered key: a nonclustered seek that looks its row up in the
-- clustered index is two.
CREATE TABLE searched (id int PRIMARY KEY, v int);
CREATE INDEX ix_searched_v ON searched (v);
GO
DECLARE @i int = 0;
WHILE @i < 50 BEGIN INSERT searched VALUES (@i, @i * 2); SET @i += 1; END;
GO
CREATE TABLE #access (seq int, step varchar(20), scans bigint, searches bigint);
GO
INSERT #access SELECT 0, 'before', (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Full Scans/sec'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Index Searches/sec');
SELECT COUNT(*) AS counted FROM searched;
INSERT #access SELECT 1, 'COUNT(*)', (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Full Scans/sec'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Index Searches/sec');
SELECT v FROM searched WHERE id = 7;
INSERT #access SELECT 2, 'clustered seek', (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Full Scans/sec'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Index Searches/sec');
SELECT id FROM searched WHERE v = 14;
INSERT #access SELECT 3, 'nonclustered seek', (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Full Scans/sec'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Index Searches/sec');
SELECT SUM(v) AS total FROM searched WHERE v + 1 > 0;
INSERT #access SELECT 4, 'scan', (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Full Scans/sec'),
    (SELECT cntr_value FROM sys.dm_os_performance_counters WHERE counter_name = 'Index Searches/sec');
GO
SELECT a.step, a.scans - b.scans AS full_scans, a.searches - b.searches AS index_searches
FROM #access a JOIN #access b ON b.seq = a.seq - 1
ORDER BY a.seq;
GO
