-- Batches and control flow: variables, IF/ELSE, WHILE with BREAK, BEGIN...END, GO n.
DECLARE @i INT = 0, @total INT = 0
WHILE @i < 10
BEGIN
    SET @i = @i + 1
    IF @i % 2 = 0 CONTINUE
    IF @i > 7 BREAK
    SET @total = @total + @i
END
IF @total = 16 PRINT 'sum of 1, 3, 5, 7 is 16' ELSE PRINT 'wrong'
SELECT @i AS i, @total AS total
GO
CREATE TABLE ticks (n INT IDENTITY(1,1), at INT)
GO
INSERT INTO ticks (at) VALUES (1)
GO 3
SELECT COUNT(*) AS inserted, MAX(n) AS last_identity FROM ticks
UPDATE ticks SET at = 2
INSERT INTO ticks (at) VALUES (9)
SELECT MAX(n) AS after_update_and_insert FROM ticks
SET NOCOUNT ON
SELECT @@ROWCOUNT AS rc
GO
INSERT INTO ticks (at) VALUES (10)
SELECT @@IDENTITY AS identity_value, SCOPE_IDENTITY() AS scope_identity
GO
-- SELECT @v (no =) reads the variable: a column without a name, also inside INSERT ... SELECT.
DECLARE @n int = 7;
SELECT @n, 'x' AS x;
CREATE TABLE var_rows (n int, tag varchar(5));
INSERT var_rows (n, tag) SELECT @n, 'y';
SELECT n, tag FROM var_rows;
GO
-- CREATE TABLE inside IF and BEGIN ... END keeps its clauses (bug: it panicked).
IF OBJECT_ID('nested_t') IS NULL CREATE TABLE nested_t (id int PRIMARY KEY NONCLUSTERED, g uniqueidentifier ROWGUIDCOL);
IF 1 = 1
BEGIN
    CREATE TABLE nested_u (id int NOT NULL, CONSTRAINT pk_u PRIMARY KEY CLUSTERED (id));
END
SELECT OBJECT_NAME(object_id) AS tbl, type_desc FROM sys.indexes WHERE OBJECT_NAME(object_id) LIKE 'nested%' ORDER BY tbl, index_id;
GO
-- WAITFOR DELAY really waits, as the WAITFOR wait type: a literal, a varchar variable and a
-- datetime variable (whose date must be 1900-01-01), each 50 ms.
DECLARE @before bigint = (SELECT COALESCE(MAX(waiting_tasks_count), 0) FROM sys.dm_os_wait_stats WHERE wait_type = 'WAITFOR');
DECLARE @started datetime2 = SYSDATETIME();
DECLARE @text varchar(12) = '00:00:00.050', @time datetime = '00:00:00.050';
WAITFOR DELAY '00:00:00.050';
WAITFOR DELAY @text;
WAITFOR DELAY @time;
SELECT waiting_tasks_count - @before AS waitfor_waits,
       CASE WHEN DATEDIFF(ms, @started, SYSDATETIME()) >= 150 THEN 'yes' ELSE 'no' END AS waited_150_ms
FROM sys.dm_os_wait_stats WHERE wait_type = 'WAITFOR';
GO
-- A literal that is not a time string is 148 when the batch is parsed: nothing of it runs.
SELECT 'not printed' AS x;
WAITFOR DELAY '24:00:00';
GO
WAITFOR TIME '12:61';
GO
-- In a variable it is found when the statement runs (the date part is not allowed).
DECLARE @day datetime = '2026-01-01 00:00:01';
SELECT 'printed' AS x;
WAITFOR DELAY @day;
GO
-- A DECLARE inside a loop is one declaration (the batch is compiled before it runs): run again,
-- it keeps the variable's value and assigns only its initial value; a table variable keeps its
-- rows. (It was 134 at the loop's second round.)
SET NOCOUNT ON;
DECLARE @round int = 0;
WHILE @round < 3
BEGIN
    DECLARE @kept int;
    DECLARE @reset int = 10;
    DECLARE @rows TABLE (round_no int);
    SET @kept = COALESCE(@kept, 0) + 1;
    SET @reset += 1;
    INSERT @rows VALUES (@round);
    SET @round += 1;
END
SELECT @kept AS kept, @reset AS reset, (SELECT COUNT(*) FROM @rows) AS table_rows;
SET NOCOUNT OFF;
GO
-- Two DECLAREs of one name anywhere in a batch are 134 at the second, before anything runs.
SELECT 'not printed' AS x;
WHILE 1 = 0
BEGIN
    DECLARE @twice int;
END
IF 1 = 0 DECLARE @TWICE varchar(10);
GO
-- A variable DECLAREd where the DECLARE does not run (a branch not taken, a loop not entered)
-- is declared all the same, as SQL Server declares variables when it compiles the batch: NULL
-- in what follows, the ELSE branch included. (It was 137.)
IF 1 = 0
BEGIN
    DECLARE @never int = 5;
END
ELSE
    SET @never = 7;
SELECT @never AS set_in_else;
IF 1 = 0
BEGIN
    DECLARE @skipped varchar(10) = 'x';
END
WHILE 1 = 0
BEGIN
    DECLARE @in_loop int;
END
SET @in_loop = 3;
SELECT @skipped AS skipped, @in_loop AS in_loop;
GO
-- A table variable too: made, empty, for what follows a DECLARE that did not run (it was 1087).
IF 1 = 0
    DECLARE @not_taken TABLE (a int);
ELSE
    INSERT @not_taken VALUES (1);
WHILE 1 = 0
BEGIN
    DECLARE @not_entered TABLE (b varchar(5) PRIMARY KEY);
END
INSERT @not_entered VALUES ('x'), ('y');
WHILE 1 = 1
BEGIN
    BREAK;
    DECLARE @after_break TABLE (c int);
END
SELECT (SELECT COUNT(*) FROM @not_taken) AS not_taken,
       (SELECT COUNT(*) FROM @not_entered) AS not_entered,
       (SELECT COUNT(*) FROM @after_break) AS after_break;
GO
-- The CATCH block sees the TRY block's DECLAREs that the error skipped.
BEGIN TRY
    RAISERROR('stop here', 16, 1);
    DECLARE @in_try int = 5;
    DECLARE @try_rows TABLE (a int);
END TRY
BEGIN CATCH
    INSERT @try_rows VALUES (ERROR_SEVERITY());
    SELECT @in_try AS in_try, a AS severity FROM @try_rows;
END CATCH
GO
