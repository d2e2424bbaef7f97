-- Catalog views: sys.databases, sys.master_files, sys.data_spaces, sys.filegroups,
-- sys.schemas, sys.objects, sys.all_objects, sys.system_objects, sys.tables, sys.columns,
-- sys.types, sys.indexes, sys.partitions, sys.allocation_units and
-- sys.system_internals_allocation_units, over a database with two filegroups.
CREATE DATABASE cv ON PRIMARY (NAME = cv_data, FILENAME = 'cv_data.mdf', SIZE = 4MB),
  FILEGROUP fg2 (NAME = cv_fg2, FILENAME = 'cv_fg2.ndf', SIZE = 2MB)
  LOG ON (NAME = cv_log, FILENAME = 'cv_log.ldf', SIZE = 1MB, FILEGROWTH = 10%);
GO
USE cv;
CREATE TABLE dbo.orders (
    id int IDENTITY(1,1) NOT NULL PRIMARY KEY,
    customer nvarchar(40) NULL,
    amount decimal(12,2) NOT NULL DEFAULT 0,
    placed datetime2(3) NULL,
    token uniqueidentifier ROWGUIDCOL NOT NULL DEFAULT NEWID());
CREATE INDEX ix_customer ON dbo.orders (customer) ON fg2;
CREATE TABLE dbo.events (at datetime NOT NULL, what varchar(100) NULL) ON fg2;
GO
CREATE PROCEDURE dbo.add_order @customer nvarchar(40) AS
    INSERT dbo.orders (customer, amount) VALUES (@customer, 1);
GO
EXEC dbo.add_order N'ann';
EXEC dbo.add_order N'bob';
INSERT dbo.events VALUES ('2024-01-01', 'x');
GO
SELECT name, database_id, recovery_model_desc FROM sys.databases ORDER BY database_id;
SELECT database_id, file_id, type_desc, data_space_id, name, size, growth, is_percent_growth
FROM sys.master_files WHERE database_id = DB_ID() ORDER BY file_id;
SELECT name, data_space_id, type, type_desc, is_default FROM sys.data_spaces ORDER BY data_space_id;
SELECT name, schema_id FROM sys.schemas ORDER BY schema_id;
-- Every object of the database; create_date comes from sysschobjs (tables and procedures).
SELECT name, type, type_desc, schema_id, is_ms_shipped,
       CASE WHEN create_date IS NULL THEN 'no date' ELSE 'dated' END AS created
FROM sys.objects ORDER BY object_id;
SELECT o.name, s.name AS schema_name FROM sys.objects o JOIN sys.schemas s ON s.schema_id = o.schema_id
WHERE o.type = 'U' ORDER BY o.name;
-- sys.all_objects has enough rows for the row-generator idiom.
SELECT COUNT(*) AS all_objects, SUM(CASE WHEN is_ms_shipped = 1 THEN 1 ELSE 0 END) AS shipped FROM sys.all_objects;
SELECT COUNT(*) AS generated FROM (SELECT TOP (1000000) 1 AS one FROM sys.all_objects AS s1 CROSS JOIN sys.all_objects AS s2) AS g;
SELECT name, type FROM sys.system_objects WHERE name LIKE 'dm_os%' ORDER BY name;
SELECT name, max_column_id_used FROM sys.tables ORDER BY name;
SELECT c.name, c.column_id, t.name AS type_name, c.max_length, c.precision, c.scale,
       c.is_nullable, c.is_identity, c.is_rowguidcol
FROM sys.columns c JOIN sys.types t ON t.user_type_id = c.user_type_id
WHERE c.object_id = OBJECT_ID('dbo.orders') ORDER BY c.column_id;
SELECT name, system_type_id, max_length, precision, scale FROM sys.types ORDER BY system_type_id, name;
SELECT OBJECT_NAME(i.object_id) AS tbl, i.name, i.index_id, i.type_desc, i.is_unique,
       i.is_primary_key, ds.name AS filegroup
FROM sys.indexes i JOIN sys.data_spaces ds ON ds.data_space_id = i.data_space_id
ORDER BY tbl, i.index_id;
SELECT OBJECT_NAME(p.object_id) AS tbl, p.index_id, p.partition_number, p.rows
FROM sys.partitions p ORDER BY tbl, p.index_id;
-- One in-row unit per partition; its pages come from the IAM chain.
SELECT OBJECT_NAME(p.object_id) AS tbl, p.index_id, a.type_desc, a.total_pages, a.used_pages, a.data_pages
FROM sys.allocation_units a JOIN sys.partitions p ON p.hobt_id = a.container_id
ORDER BY tbl, p.index_id;
-- The system units exist too (sysschobjs and the others), so there are more units than partitions.
SELECT CASE WHEN (SELECT COUNT(*) FROM sys.allocation_units) > (SELECT COUNT(*) FROM sys.partitions)
            THEN 'system units listed' ELSE 'missing' END AS system_units;
SELECT OBJECT_NAME(p.object_id) AS tbl, p.index_id,
       CASE WHEN a.first_iam_page <> 0x000000000000 THEN 'has IAM' END AS iam,
       CASE WHEN a.root_page <> 0x000000000000 THEN 'has root' END AS root
FROM sys.system_internals_allocation_units a JOIN sys.partitions p ON p.hobt_id = a.container_id
ORDER BY tbl, p.index_id;
-- sys.database_files agrees with FILEPROPERTY and with sys.master_files.
SELECT f.name, f.size, CASE WHEN FILEPROPERTY(f.name, 'SpaceUsed') <= f.size THEN 'ok' END AS used_within_size,
       CASE WHEN m.size = f.size THEN 'same' END AS master_files
FROM sys.database_files f JOIN sys.master_files m ON m.database_id = DB_ID() AND m.file_id = f.file_id
ORDER BY f.file_id;
-- A time and a datetime2 shown as text (bug: the 7-digit fraction used to panic).
SELECT CONVERT(varchar(30), CAST('2024-01-02 03:04:05.1234567' AS datetime2), 121) AS dt2,
       CONVERT(varchar(20), CAST('03:04:05.5' AS time)) AS t;
-- SELECT TOP (0) ... INTO keeps the types the list declares (bug: the column became int).
SELECT TOP (0) ID = IDENTITY(int, 1, 1), name = CONVERT(nchar(20), N'x') INTO dbo.dummy;
INSERT dbo.dummy (name) VALUES (N'fits');
SELECT c.name, t.name AS type_name, c.max_length FROM sys.columns c JOIN sys.types t ON t.user_type_id = c.user_type_id
WHERE c.object_id = OBJECT_ID('dbo.dummy') ORDER BY c.column_id;
USE master;
GO
-- An unknown view or table is 208, named as written.
SELECT * FROM sys.no_such_view;
GO
SELECT * FROM dbo.[no_such_table];
GO
-- COUNT(*) of a catalog view named with brackets (regression: the COUNT shortcut took
-- [sys] for a user schema and answered 208).
SELECT COUNT(*) AS filegroups FROM [sys].[filegroups]
GO
