-- Temporary tables (#name) and table variables (@name): scoped to the session, the procedure
-- or dynamic batch that made them, or the batch (table variables). Two sessions and restarts
-- are in tests/temp_tables.rs.
CREATE TABLE #x (a int PRIMARY KEY, b varchar(10));
INSERT #x VALUES (1, 'one'), (2, 'two');
SELECT * FROM #x ORDER BY a;
SELECT COUNT(*) AS user_tables FROM sys.tables;
SELECT CASE WHEN OBJECT_ID('tempdb..#x') IS NOT NULL THEN 'exists' END AS temp_table;
GO
CREATE TABLE #x (a int);
GO
CREATE INDEX ix_b ON #x (b);
UPDATE #x SET b = 'uno' WHERE a = 1;
SELECT a, b FROM #x ORDER BY a;
GO
CREATE PROCEDURE makes AS
BEGIN
    CREATE TABLE #x (z int);
    INSERT #x VALUES (42);
    SELECT z FROM #x;
END;
GO
EXEC makes;
SELECT a FROM #x ORDER BY a;
GO
CREATE PROCEDURE reads AS SELECT COUNT(*) AS caller_rows FROM #x;
GO
EXEC reads;
GO
DECLARE @t TABLE (id int PRIMARY KEY, name sysname);
INSERT @t VALUES (1, N'a'), (2, N'b');
INSERT INTO @t (id, name) SELECT a + 10, b FROM #x;
UPDATE @t SET name = N'z' WHERE id = 1;
DELETE FROM @t WHERE id = 2;
SELECT t.id, t.name FROM @t AS t ORDER BY t.id;
GO
SELECT * FROM @t;
GO
DECLARE @t TABLE (a int);
DECLARE @t int;
GO
CREATE TABLE #vlfs (RecoveryUnitID int, FileID int, FileSize bigint, StartOffset bigint, FSeqNo bigint, [Status] bigint, Parity bigint, CreateLSN numeric(38));
INSERT INTO #vlfs EXEC ('DBCC LOGINFO');
SELECT COUNT(*) AS vlf_count FROM #vlfs;
GO
DROP TABLE #x;
SELECT * FROM #x;
GO
DROP TABLE IF EXISTS #x;
DROP TABLE #nope;
GO
EXEC ('CREATE TABLE #inner (a int); INSERT #inner VALUES (1); SELECT a AS inner_a FROM #inner');
SELECT * FROM #inner;
GO
