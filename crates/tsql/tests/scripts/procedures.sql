-- Stored procedures: parameters with defaults, OUTPUT, RETURN status, nesting, errors inside
-- a procedure (they name it); EXEC (string) and sp_executesql; CREATE OR ALTER, DROP.
CREATE TABLE Log (id INT IDENTITY PRIMARY KEY, note VARCHAR(40))
GO
-- A procedure's definition is its whole batch.
CREATE PROCEDURE dbo.AddNote
    @note VARCHAR(40),
    @times INT = 1,
    @last INT = NULL OUTPUT
AS
BEGIN
    SET NOCOUNT ON
    DECLARE @i INT = 0
    WHILE @i < @times
    BEGIN
        INSERT Log (note) VALUES (@note)
        SET @i = @i + 1
    END
    SET @last = SCOPE_IDENTITY()
    RETURN @times
END
GO
DECLARE @rc INT, @id INT
EXEC @rc = AddNote 'first'
EXEC AddNote @note = 'second', @times = 2, @last = @id OUTPUT
SELECT @rc AS status, @id AS last_id, @@NESTLEVEL AS level
EXECUTE dbo.AddNote @times = 1, @note = 'third'
SELECT id, note FROM Log ORDER BY id
GO
AddNote 'bare call'
GO
CREATE PROC Inner_ @x INT AS
SELECT @x * 2 AS doubled, @@NESTLEVEL AS level
INSERT Log (note) VALUES (NULL, 'too many values')
SELECT 'after the error' AS still_running
GO
CREATE PROC Outer_ AS EXEC Inner_ 21
GO
EXEC Outer_
GO
-- Errors of the call itself.
EXEC AddNote
EXEC AddNote 'a', 1, NULL, 4
EXEC AddNote @nope = 1
EXEC NoSuchProc
GO
SELECT 1 AS x
CREATE PROC Late AS SELECT 1
GO
CREATE PROC AddNote AS SELECT 1
GO
CREATE OR ALTER PROC AddNote @note VARCHAR(40) AS SELECT 'altered: ' + @note AS result
GO
EXEC AddNote 'x'
SELECT OBJECT_ID('AddNote') - OBJECT_ID('Log') AS ids_apart
GO
ALTER PROC NoSuchProc AS SELECT 1
GO
-- Recursion stops at nesting level 32.
CREATE PROC Deep @n INT AS
IF @n % 10 = 0 PRINT 'level ' + CAST(@@NESTLEVEL AS VARCHAR(10))
EXEC Deep @n + 1
GO
EXEC Deep 1
SELECT 'not reached' AS x
GO
-- Dynamic SQL: its own batch and variables.
DECLARE @table SYSNAME = 'Log', @sql NVARCHAR(200)
SET @sql = N'SELECT COUNT(*) AS notes FROM ' + @table
EXEC (@sql)
EXEC ('SELECT @table')
EXEC ('SELECT 1 +')
SELECT 'the batch goes on' AS after_dynamic
GO
DECLARE @n INT
EXEC sp_executesql N'SELECT @c = COUNT(*) FROM Log WHERE id > @min', N'@min INT, @c INT OUTPUT', @min = 2, @c = @n OUTPUT
SELECT @n AS counted
GO
DROP PROCEDURE AddNote, Inner_
DROP PROC IF EXISTS AddNote
DROP PROC AddNote
EXEC Outer_
GO
-- A procedure that leaves @@TRANCOUNT changed is 266 (the transaction stays as it left it);
-- the batch goes on.
CREATE PROCEDURE OpensOne AS BEGIN TRAN
GO
CREATE PROCEDURE ClosesOne AS COMMIT
GO
EXEC OpensOne
SELECT @@TRANCOUNT AS after_opening
EXEC ClosesOne
SELECT @@TRANCOUNT AS after_closing
DROP PROCEDURE OpensOne, ClosesOne
GO
-- A body's DECLARE of a parameter's name is 134: at CREATE PROCEDURE, and for sp_executesql
-- when it is called (the caller's batch goes on).
CREATE PROCEDURE redeclares @p int AS
DECLARE @P int;
SELECT @p;
GO
SELECT COUNT(*) AS procedure_created FROM sys.objects WHERE name = 'redeclares';
GO
EXEC sp_executesql N'DECLARE @p int = 2; SELECT @p AS p', N'@p int', @p = 1;
SELECT 'the caller goes on' AS x;
GO
-- A USE inside EXEC (string) lasts until the end of the EXEC; in a procedure's body it is 154
-- when the procedure is created.
CREATE DATABASE exec_use;
GO
EXEC('USE exec_use; SELECT DB_NAME() AS inside_exec');
SELECT DB_NAME() AS after_exec;
GO
CREATE PROCEDURE uses_another AS
SELECT 1 AS one;
IF 1 = 1
    USE exec_use;
GO
DROP DATABASE exec_use;
GO
-- A CREATE or ALTER PROCEDURE's compile errors name the procedure being compiled (its name
-- without the schema); the procedure is not created.
CREATE PROCEDURE dbo.[broken body] @x INT AS
SELECT @x AS x
SELECT 1 +
GO
SELECT COUNT(*) AS broken_created FROM sys.objects WHERE name = 'broken body';
GO
CREATE PROC fine AS SELECT 1 AS one
GO
ALTER PROC fine AS
DECLARE @a INT;
DECLARE @A INT;
GO
EXEC fine
GO
-- A procedure's text left open names the procedure too (105 at the line the string opens).
-- The last batch of this script: an open string runs to the end of the script, GO included,
-- as sqlcmd's and SSMS's batch splitters read it.
CREATE PROCEDURE left_open AS
SELECT 'open
GO
