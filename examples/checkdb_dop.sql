-- Seeds 000 and 001: "DBCC CHECKDB scalability and performance benchmarking on SSDs" (Paul
-- Randal).
--
-- What it shows: DBCC CHECKDB reads a database's pages in allocation order and checks them
-- in parallel; on fast storage, with no I/O waits, its speed comes from CPUs (a full check
-- gains from DOP 1 to 2), and WITH PHYSICAL_ONLY, which skips the logical checks that are
-- most of the CPU, is the largest gain of all. Here every page is in memory (warm), as on the
-- seed's SSDs: each configuration runs five times and the elapsed time is measured around it.
--
-- What to look for: full at DOP 2 faster than at DOP 1 (the CXPACKET wait is the command's
-- thread waiting for its workers); PHYSICAL_ONLY faster than full at any DOP. This machine
-- has 2 CPUs: the seed went to DOP 32.
--
-- Scale: the seed checked a 1 TB database; this script checks about 25 MB. `cargo run
-- --release -p extentdb -- bench checkdb` runs the same experiment on about 390 MB.
USE [master];
GO
DROP DATABASE IF EXISTS CheckMe;
GO
CREATE DATABASE CheckMe ON (NAME = checkme_data, FILENAME = 'checkme.mdf', SIZE = 64MB)
  LOG ON (NAME = checkme_log, FILENAME = 'checkme.ldf', SIZE = 64MB);
GO
USE CheckMe;
CREATE TABLE Orders (OrderId int PRIMARY KEY, Customer uniqueidentifier NOT NULL,
    Note char(200) NOT NULL);
CREATE INDEX IX_Orders_Customer ON Orders (Customer);
CREATE TABLE Events (EventId int NOT NULL, Note char(200) NOT NULL);
GO
SET NOCOUNT ON;
BEGIN TRAN;
DECLARE @k int = 1;
WHILE @k <= 50000
BEGIN
    INSERT Orders VALUES (@k, NEWID(), 'an order');
    INSERT Events VALUES (@k, 'an event');
    SET @k += 1;
END;
COMMIT;
CHECKPOINT;
GO
-- Warm the cache, and see that the database is sound.
DBCC CHECKDB (CheckMe);
GO
SET NOCOUNT ON;
DECLARE @run int, @start datetime2, @full1 int, @full2 int, @physical1 int, @physical2 int;
DECLARE @cx bigint = (SELECT waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'CXPACKET');
SET @run = 0; SET @start = SYSDATETIME();
WHILE @run < 5 BEGIN DBCC CHECKDB (CheckMe) WITH NO_INFOMSGS, MAXDOP = 1; SET @run += 1; END;
SET @full1 = DATEDIFF(millisecond, @start, SYSDATETIME());
SET @run = 0; SET @start = SYSDATETIME();
WHILE @run < 5 BEGIN DBCC CHECKDB (CheckMe) WITH NO_INFOMSGS, MAXDOP = 2; SET @run += 1; END;
SET @full2 = DATEDIFF(millisecond, @start, SYSDATETIME());
SET @run = 0; SET @start = SYSDATETIME();
WHILE @run < 5 BEGIN DBCC CHECKDB (CheckMe) WITH PHYSICAL_ONLY, NO_INFOMSGS, MAXDOP = 1; SET @run += 1; END;
SET @physical1 = DATEDIFF(millisecond, @start, SYSDATETIME());
SET @run = 0; SET @start = SYSDATETIME();
WHILE @run < 5 BEGIN DBCC CHECKDB (CheckMe) WITH PHYSICAL_ONLY, NO_INFOMSGS, MAXDOP = 2; SET @run += 1; END;
SET @physical2 = DATEDIFF(millisecond, @start, SYSDATETIME());
SELECT 'full' AS configuration, 1 AS maxdop, @full1 AS elapsed_ms
UNION ALL SELECT 'full', 2, @full2
UNION ALL SELECT 'PHYSICAL_ONLY', 1, @physical1
UNION ALL SELECT 'PHYSICAL_ONLY', 2, @physical2;
SELECT waiting_tasks_count - @cx AS cxpacket_waits FROM sys.dm_os_wait_stats WHERE wait_type = 'CXPACKET';
GO
