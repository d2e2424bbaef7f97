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
-- Table variables are outside transactions: a ROLLBACK (whole, or to a savepoint) keeps what
-- the statements before it did to them, and one DECLAREd inside the transaction stays. A
-- statement that fails loses its own changes to them. A #temp table made in the transaction
-- is undone with it.
CREATE TABLE Orders (id int PRIMARY KEY, amount int);
DECLARE @audit TABLE (id int PRIMARY KEY, note varchar(20));
DECLARE @heap TABLE (id int, note varchar(20));
BEGIN TRAN;
INSERT Orders OUTPUT inserted.id, 'inserted' INTO @audit VALUES (1, 10), (2, 20);
INSERT @heap VALUES (1, 'one'), (2, 'two'), (3, 'three');
UPDATE @heap SET note = 'TWO' WHERE id = 2;
DELETE @heap WHERE id = 3;
CREATE TABLE #undone (a int);
SAVE TRAN before_three;
INSERT @audit VALUES (3, 'after savepoint');
ROLLBACK TRAN before_three;
BEGIN TRY
    INSERT @audit VALUES (4, 'goes'), (1, 'duplicate');
END TRY
BEGIN CATCH
    PRINT 'failed statement: ' + CAST(ERROR_NUMBER() AS varchar(10));
END CATCH;
DECLARE @made_inside TABLE (x int);
INSERT @made_inside VALUES (42);
ROLLBACK;
SELECT COUNT(*) AS orders_left FROM Orders;
SELECT id, note FROM @audit ORDER BY id;
SELECT id, note FROM @heap ORDER BY id;
SELECT x FROM @made_inside;
SELECT OBJECT_ID('tempdb..#undone') AS temp_table_left;
GO
-- Under XACT_ABORT: the CATCH block rolls the doomed transaction back; the table variable
-- keeps the row of the statement that ran before the error.
SET XACT_ABORT ON;
DECLARE @steps TABLE (step int PRIMARY KEY);
BEGIN TRAN;
INSERT @steps VALUES (1);
BEGIN TRY
    INSERT @steps VALUES (2), (1);
END TRY
BEGIN CATCH
    SELECT XACT_STATE() AS xact_state;
    ROLLBACK;
END CATCH;
SELECT step FROM @steps;
SET XACT_ABORT OFF;
GO
-- A table variable whose batch ends inside a transaction is dropped once the transaction
-- ends (its log holds the variable's rows, which recovery may have to undo), outside it:
-- neither a ROLLBACK nor a COMMIT in the next batch brings it back or fails.
BEGIN TRAN;
DECLARE @batch TABLE (a int);
INSERT @batch VALUES (1);
GO
ROLLBACK;
SELECT @@TRANCOUNT AS open_trans;
GO
BEGIN TRAN;
DECLARE @heap_rows TABLE (a int);
INSERT @heap_rows VALUES (1), (2);
DELETE @heap_rows WHERE a = 1;
GO
COMMIT;
SELECT @@TRANCOUNT AS open_trans;
DBCC CHECKDB WITH NO_INFOMSGS;
GO
DROP TABLE Orders;
GO
