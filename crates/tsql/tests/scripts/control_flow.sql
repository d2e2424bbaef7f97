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
