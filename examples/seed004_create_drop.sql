-- Seed 004: Linchi Shea, "How Many Data Files Should I Create for a User Database?"
--
-- What it shows: a workload that creates and drops a table in every transaction allocates
-- and frees pages all the time, so it works the allocation pages (PFS, GAM, SGAM, IAM) hard;
-- with one data file every session meets on the same PFS page, with four files the
-- allocations rotate over four PFS pages, and under load four files kept their throughput
-- while one file fell off.
--
-- This script runs the seed's transaction (dynamic SQL: CREATE TABLE, INSERT, DROP TABLE)
-- in a database with one data file and in one with four, and shows where each new table's
-- pages were allocated: always in file 1 in the first database, spread over the four files
-- in the second. That spread is what relieves the PFS contention of the seed's 600 users.
-- The concurrent measurement itself is `extentdb bench insert --sessions N --files F`
-- (seed 001's load), whose PAGELATCH_UP waits on PFS pages fall as files are added.
--
-- Scale: 200 transactions per database.
USE [master];
GO
DROP DATABASE IF EXISTS files1;
DROP DATABASE IF EXISTS files4;
GO
CREATE DATABASE files1 ON PRIMARY (NAME = f1_data, FILENAME = 'files1.mdf', SIZE = 64MB)
  LOG ON (NAME = f1_log, FILENAME = 'files1.ldf', SIZE = 64MB);
CREATE DATABASE files4 ON PRIMARY
  (NAME = f4_data1, FILENAME = 'files4_1.mdf', SIZE = 16MB),
  (NAME = f4_data2, FILENAME = 'files4_2.ndf', SIZE = 16MB),
  (NAME = f4_data3, FILENAME = 'files4_3.ndf', SIZE = 16MB),
  (NAME = f4_data4, FILENAME = 'files4_4.ndf', SIZE = 16MB)
  LOG ON (NAME = f4_log, FILENAME = 'files4.ldf', SIZE = 64MB);
GO
USE files1;
CREATE TABLE dbo.placements (n int NOT NULL, file_id int NOT NULL);
GO
USE files4;
CREATE TABLE dbo.placements (n int NOT NULL, file_id int NOT NULL);
GO
-- The seed's transaction, 200 times in each database; before the DROP, the file of the new
-- table's data page is recorded.
CREATE PROCEDURE dbo.create_insert_drop @n int AS
BEGIN
    SET NOCOUNT ON;
    declare @tb varchar(36),
    @create_sql varchar(100),
    @drop_sql varchar(100),
    @insert_sql varchar(100)
    select @tb = cast(newid() as varchar(36))
    set @create_sql = 'CREATE TABLE [' + @tb + '] (c char(1000) not null)'
    set @insert_sql = 'INSERT [' + @tb + '] values(''aaaaaaaaaaaaa'')'
    set @drop_sql = 'DROP TABLE [' + @tb + ']'
    EXEC (@create_sql)
    EXEC (@insert_sql)
    INSERT dbo.placements (n, file_id)
    SELECT @n, allocated_page_file_id
    FROM sys.dm_db_database_page_allocations (DB_ID (), OBJECT_ID (@tb), NULL, NULL, 'DETAILED')
    WHERE is_allocated = 1 AND page_type = 1;
    EXEC (@drop_sql)
END
GO
USE files1;
GO
CREATE PROCEDURE dbo.create_insert_drop @n int AS
BEGIN
    SET NOCOUNT ON;
    declare @tb varchar(36),
    @create_sql varchar(100),
    @drop_sql varchar(100),
    @insert_sql varchar(100)
    select @tb = cast(newid() as varchar(36))
    set @create_sql = 'CREATE TABLE [' + @tb + '] (c char(1000) not null)'
    set @insert_sql = 'INSERT [' + @tb + '] values(''aaaaaaaaaaaaa'')'
    set @drop_sql = 'DROP TABLE [' + @tb + ']'
    EXEC (@create_sql)
    EXEC (@insert_sql)
    INSERT dbo.placements (n, file_id)
    SELECT @n, allocated_page_file_id
    FROM sys.dm_db_database_page_allocations (DB_ID (), OBJECT_ID (@tb), NULL, NULL, 'DETAILED')
    WHERE is_allocated = 1 AND page_type = 1;
    EXEC (@drop_sql)
END
GO
SET NOCOUNT ON;
DECLARE @n int = 1;
WHILE @n <= 200 BEGIN EXEC dbo.create_insert_drop @n; SET @n += 1; END;
SET NOCOUNT OFF;
SELECT DB_NAME () AS database_name, FILE_NAME (file_id) AS data_file, COUNT (*) AS new_tables
FROM dbo.placements GROUP BY file_id ORDER BY file_id;
GO
USE files4;
SET NOCOUNT ON;
DECLARE @n int = 1;
WHILE @n <= 200 BEGIN EXEC dbo.create_insert_drop @n; SET @n += 1; END;
SET NOCOUNT OFF;
SELECT DB_NAME () AS database_name, FILE_NAME (file_id) AS data_file, COUNT (*) AS new_tables
FROM dbo.placements GROUP BY file_id ORDER BY file_id;
-- Nothing is left behind: every dropped table's pages went back (one table remains).
SELECT COUNT (*) AS tables_left FROM sys.tables;
DBCC CHECKALLOC WITH NO_INFOMSGS;
GO
USE [master];
GO
