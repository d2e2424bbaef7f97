-- golden: mask-times
-- System procedures, the errorlog, and the default trace's growth events.
-- Seed 000's opening: session-scope TF 1165 + 3605, a cycled errorlog, a new database.
DBCC TRACEON (1165, 3605);
DBCC TRACESTATUS;
EXEC sp_cycle_errorlog;
CREATE DATABASE sp ON (NAME = sp_data, FILENAME = 'sp_data.mdf', SIZE = 3MB)
  LOG ON (NAME = sp_log, FILENAME = 'sp_log.ldf', SIZE = 1MB, FILEGROWTH = 1MB);
GO
EXEC xp_readerrorlog 0, 1, N'Proportional Fill';
EXEC sp_readerrorlog 0, 1, N'sp_data';
EXEC xp_readerrorlog 0, 1, N'error log', N'reinitialized';
EXEC xp_readerrorlog 1, 1, N'cycle';
EXEC xp_readerrorlog 99;
GO
USE sp;
CREATE TABLE t (id int NOT NULL PRIMARY KEY, filler char(1500) NOT NULL DEFAULT 'x');
CREATE INDEX ix ON t (filler);
GO
BEGIN TRAN;
DECLARE @i int = 1;
SET NOCOUNT ON;
WHILE @i <= 150 BEGIN INSERT t (id) VALUES (@i); SET @i += 1; END;
SET NOCOUNT OFF;
COMMIT;
GO
EXEC sp_helpfile;
EXEC sp_helpfile N'sp_data';
EXEC sp_helpdb N'sp';
EXEC sp_spaceused N't';
EXEC sp_spaceused;
EXEC sp_who;
EXEC sp_who 51;
EXEC sp_spaceused N'no_such_table';
EXEC sp_helpdb N'no_such_db';
GO
-- sp_helpfilegroup: every filegroup with its file count; with a name, its files too.
ALTER DATABASE sp ADD FILEGROUP archive;
ALTER DATABASE sp ADD FILE (NAME = sp_arch1, FILENAME = 'sp_arch1.ndf', SIZE = 1MB, MAXSIZE = 8MB, FILEGROWTH = 1MB),
  (NAME = sp_arch2, FILENAME = 'sp_arch2.ndf', SIZE = 2MB, FILEGROWTH = 10%) TO FILEGROUP archive;
GO
EXEC sp_helpfilegroup;
EXEC sp_helpfilegroup @filegroupname = N'archive';
EXEC sp_helpfilegroup N'no_such_filegroup';
GO
-- sys.traces and sys.fn_trace_gettable: seed 002's query, as written.
SELECT id, is_default, is_rollover, max_files FROM sys.traces;
SELECT t.DatabaseName,
       GrowthEvents    = COUNT(*),
       TotalPages      = SUM(t.IntegerData)
FROM
(
  SELECT [path] = REVERSE(SUBSTRING(p, CHARINDEX(N'\', p), 260)) + N'log.trc'
  FROM (SELECT REVERSE([path]) FROM sys.traces WHERE is_default = 1) AS s(p)
) AS p
CROSS APPLY sys.fn_trace_gettable(p.[path], DEFAULT) AS t
WHERE t.EventClass = 93
GROUP BY t.DatabaseName;
SELECT COUNT(*) AS log_growths FROM sys.fn_trace_gettable(N'log.trc', DEFAULT) WHERE EventClass = 93 AND Duration >= 0;
SELECT * FROM sys.fn_trace_gettable(N'other.trc', DEFAULT);
GO
USE master;
DBCC TRACEOFF (1165, 3605);
DBCC TRACESTATUS;
GO
-- sp_columns: the ODBC catalog call (FreeTDS SQLColumns sends it as an RPC).
USE sp;
EXEC sp_columns N't';
EXEC sp_columns N't', NULL, NULL, N'fill%';
USE master;
GO
-- sp_helpindex: each index with its description, filegroup and keys.
CREATE DATABASE hi;
GO
USE hi;
ALTER DATABASE hi ADD FILEGROUP SECONDARY;
ALTER DATABASE hi ADD FILE (NAME = hi2, FILENAME = 'hi2.ndf', SIZE = 4MB) TO FILEGROUP SECONDARY;
CREATE TABLE t (id int PRIMARY KEY, code char(4) NOT NULL UNIQUE, note varchar(20));
CREATE INDEX ix_note ON t (note, code) ON [SECONDARY];
CREATE TABLE h (a int);
EXEC sp_helpindex 't';
EXEC sp_helpindex 'h';
EXEC sp_helpindex 'nope';
USE master;
GO
-- sp_help: a table's report (object, columns, identity, ROWGUIDCOL, filegroup, indexes,
-- constraints), a heap with none of them, a procedure, every object, and an unknown name.
CREATE TABLE help_orders (id int IDENTITY(1,1) PRIMARY KEY, code char(4) NOT NULL UNIQUE,
    note varchar(20) NULL DEFAULT 'none', price decimal(9,2), placed datetime2,
    u uniqueidentifier ROWGUIDCOL);
CREATE INDEX ix_note ON help_orders (note);
CREATE TABLE help_heap (x int);
GO
CREATE PROCEDURE help_proc AS SELECT 1;
GO
EXEC sp_help 'help_orders';
GO
EXEC sp_help help_heap;
GO
EXEC sp_help 'help_proc';
GO
EXEC sp_help;
GO
EXEC sp_help 'no_such_object';
GO
