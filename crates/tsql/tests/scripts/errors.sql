-- SQL Server's errors: numbers, levels, states and lines; which errors end the batch.
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL)
INSERT INTO t VALUES (1, 'one')
INSERT INTO t VALUES (1, 'again')
INSERT INTO t VALUES (2, NULL)
INSERT INTO t VALUES (3, 'toolong')
SELECT 1 / 0 AS boom
PRINT 'statement errors do not end the batch'
GO
SELECT * FROM missing
PRINT 'not printed: 208 ends the batch'
GO
SELECT nocolumn FROM t
GO
SELECT CAST('abc' AS INT)
PRINT 'not printed: 245 ends the batch'
GO
SELECT * FROM t WHERE
GO
CREATE TABLE t (x INT)
GO
DROP TABLE nothere
GO
PRINT @undeclared
GO
COMMIT
GO
CREATE TABLE big (v INT)
INSERT INTO big VALUES (2147483647), (1)
SELECT SUM(v) AS total FROM big
SELECT SUM(CAST(v AS BIGINT)) AS total, AVG(v) AS average FROM big
GO
-- SET @variable must be followed by = or a compound operator and =: anything else is a
-- syntax error near that token, and the batch does not run (the PRINT is not printed).
DECLARE @i INT = 5
SET @i bogus = 1
PRINT 'not printed: a syntax error stops the whole batch'
GO
DECLARE @i INT = 5
SET @i += 1
SET @i *= 2
SELECT @i AS twelve
GO
-- @@ERROR is the last statement's: 0 after one that succeeded (bug fix: it kept the last
-- error until another error replaced it); IF clears it when it tests its condition; a
-- RAISERROR of severity 10 or less leaves 0.
SELECT 1 / 0
SELECT 1 AS one
SELECT @@ERROR AS after_success
GO
SELECT 1 / 0
SELECT @@ERROR AS right_after, @@ERROR AS same_statement
SELECT @@ERROR AS next_statement
GO
SELECT 1 / 0
IF @@ERROR <> 0 PRINT 'inside IF @@ERROR is ' + CAST(@@ERROR AS VARCHAR(10))
RAISERROR ('informational', 10, 1)
SELECT @@ERROR AS after_informational
GO
RAISERROR ('informational, WITH SETERROR', 10, 1) WITH SETERROR
SELECT @@ERROR AS after_seterror
GO
-- Names are bound even when no row is read: a missing column of an empty table is still 207
-- (also with its table's name as qualifier) in the select list, WHERE, GROUP BY, ORDER BY, an
-- aggregate, and an UPDATE's or DELETE's WHERE; valid statements on the empty table still run.
CREATE TABLE EmptyOne (id INT)
GO
SELECT nosuch FROM EmptyOne
GO
SELECT EmptyOne.nosuch FROM EmptyOne
GO
SELECT id FROM EmptyOne WHERE nosuch = 1
GO
SELECT COUNT(*) FROM EmptyOne GROUP BY nosuch
GO
SELECT id FROM EmptyOne ORDER BY nosuch
GO
SELECT SUM(nosuch) FROM EmptyOne
GO
DELETE FROM EmptyOne WHERE nosuch = 1
GO
UPDATE EmptyOne SET id = 1 WHERE nosuch = 2
GO
SELECT id AS x FROM EmptyOne ORDER BY x
SELECT COUNT(*) AS n, MAX(id) AS highest FROM EmptyOne
SELECT id FROM EmptyOne WHERE id IN (SELECT id FROM EmptyOne)
GO
-- A batch that leaves a string, a quoted name or a comment open: 105 and 113, at the line
-- where it opens (dynamic SQL here, so that the script's own batches stay closed).
EXEC ('SELECT 1 AS one
SELECT ''it''''s'' AS closed, ''open')
EXEC ('SELECT [open')
EXEC ('SELECT 1 /* an /* inner */ comment left open')
SELECT 'the batch goes on' AS after_unclosed
GO
-- They are compile errors: XACT_ABORT ON does not roll the transaction back for them.
SET XACT_ABORT ON
BEGIN TRAN
EXEC ('SELECT ''open')
SELECT @@TRANCOUNT AS trancount_after_105
ROLLBACK
SET XACT_ABORT OFF
GO
-- UPDATE STATISTICS: there are no statistics objects to update (40517); a table called
-- statistics is updated as any other.
UPDATE STATISTICS dbo.anything WITH FULLSCAN;
GO
CREATE TABLE statistics (a int);
INSERT statistics VALUES (0);
UPDATE statistics SET a = 1;
SELECT a FROM statistics;
DROP TABLE statistics;
GO
-- Rows of a table value constructor that differ in width: 10710 when the batch compiles, so
-- nothing in the batch runs (not the PRINT before it); rows of one width that do not fit the
-- column list are 110 / 109 / 213 when the statement runs.
CREATE TABLE tvc (a int, b int);
GO
PRINT 'not printed';
INSERT tvc VALUES (1, 2), (3);
GO
SELECT * FROM (VALUES (1, 2), (3, 4, 5)) AS v (a, b);
GO
PRINT 'printed';
INSERT tvc (a) VALUES (1, 2), (3, 4);
INSERT tvc VALUES (1), (2);
SELECT COUNT(*) AS tvc_rows FROM tvc;
DROP TABLE tvc;
GO
-- A statement that fails affects no rows: @@ROWCOUNT is 0 after it, not the count of the
-- statement before (a duplicate key, then a division by zero).
CREATE TABLE once (id int PRIMARY KEY);
INSERT INTO once VALUES (1), (2);
INSERT INTO once VALUES (1);
SELECT @@ROWCOUNT AS rows_after_2627, @@ERROR AS error_after;
SELECT 1 AS n UNION ALL SELECT 2;
SELECT 1 / 0;
SELECT @@ROWCOUNT AS rows_after_8134;
DROP TABLE once;
GO
-- The script's last batch leaves a comment open: it is sent, and the answer is 113.
SELECT 'not run' AS x /* a comment never closed
GO
