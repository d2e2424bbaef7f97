-- Seed 003: "Understanding SQL Server IO Size" (after Bob Ward's "Inside SQL Server IO").
--
-- What it shows: a table scan normally reads ahead, in reads of up to 512 KB of contiguous
-- pages; with trace flag 652 every page is a read of its own, 8 KB. Fewer, larger I/Os.
-- The seed watched perfmon (Avg. Disk Bytes/Transfer, Disk Transfers/sec); here the same
-- figures come from sys.dm_io_virtual_file_stats: reads, bytes read and bytes per read of
-- the data file during each cold scan (DBCC DROPCLEANBUFFERS empties the cache first).
--
-- What to look for: with TF 652, bytes per read = 8192; without it, far fewer reads of
-- tens to hundreds of KB each. SET STATISTICS IO shows the same from the scan's side: with
-- TF 652 every page is a physical read; without it they are read-ahead reads.
--
-- Scale: the seed scans TPC-H's CUSTOMER at scale 100 (15 million rows); this script
-- scans 20,000 rows of the same shape (about 25 MB).
USE [master];
GO
DROP DATABASE IF EXISTS TPCH100;
GO
CREATE DATABASE TPCH100 ON (NAME = tpch_data, FILENAME = 'tpch100.mdf', SIZE = 64MB)
  LOG ON (NAME = tpch_log, FILENAME = 'tpch100.ldf', SIZE = 64MB);
GO
USE TPCH100;
CREATE TABLE CUSTOMER (
    C_CUSTKEY int NOT NULL,
    C_NAME varchar(25) NOT NULL,
    C_ADDRESS varchar(40) NOT NULL,
    C_NATIONKEY int NOT NULL,
    C_PHONE char(15) NOT NULL,
    C_ACCTBAL decimal(15,2) NOT NULL,
    C_MKTSEGMENT char(10) NOT NULL,
    C_COMMENT char(1000) NOT NULL);
GO
SET NOCOUNT ON;
BEGIN TRAN;
DECLARE @k int = 1;
WHILE @k <= 20000
BEGIN
    INSERT CUSTOMER VALUES (@k, 'Customer#' + CAST(@k AS varchar(10)), 'an address', @k % 25,
        '25-989-741-2988', (@k % 10000) - 999.99, 'BUILDING', 'a comment');
    SET @k += 1;
END;
COMMIT;
SET NOCOUNT OFF;
CHECKPOINT;
GO
-- 1. Read-ahead off (TF 652), cold cache.
DBCC DROPCLEANBUFFERS;
DBCC TRACEON (652, -1);
DECLARE @reads bigint, @bytes bigint, @balance decimal(15,2);
SELECT @reads = num_of_reads, @bytes = num_of_bytes_read FROM sys.dm_io_virtual_file_stats (DB_ID (), 1);
SET STATISTICS IO ON; -- the scan's physical reads, one per page
SELECT @balance = MAX (C_ACCTBAL) FROM CUSTOMER OPTION (MAXDOP 1);
SET STATISTICS IO OFF;
SELECT 'TF 652 on (no read-ahead)' AS scan,
       num_of_reads - @reads AS reads,
       (num_of_bytes_read - @bytes) / 1024 AS kb_read,
       (num_of_bytes_read - @bytes) / NULLIF (num_of_reads - @reads, 0) AS bytes_per_read
FROM sys.dm_io_virtual_file_stats (DB_ID (), 1);
DBCC TRACEOFF (652, -1);
GO
-- 2. Read-ahead on, cold cache.
DBCC DROPCLEANBUFFERS;
DECLARE @reads bigint, @bytes bigint, @balance decimal(15,2);
SELECT @reads = num_of_reads, @bytes = num_of_bytes_read FROM sys.dm_io_virtual_file_stats (DB_ID (), 1);
SET STATISTICS IO ON; -- now the pages come as read-ahead reads
SELECT @balance = MAX (C_ACCTBAL) FROM CUSTOMER OPTION (MAXDOP 1);
SET STATISTICS IO OFF;
SELECT 'read-ahead' AS scan,
       num_of_reads - @reads AS reads,
       (num_of_bytes_read - @bytes) / 1024 AS kb_read,
       (num_of_bytes_read - @bytes) / NULLIF (num_of_reads - @reads, 0) AS bytes_per_read
FROM sys.dm_io_virtual_file_stats (DB_ID (), 1);
GO
USE [master];
GO
