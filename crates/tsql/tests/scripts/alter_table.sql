-- ALTER TABLE ... ADD, DROP COLUMN and ALTER COLUMN: what the existing rows hold afterwards,
-- and SQL Server's errors. (extentdb rebuilds the table in the statement's transaction.)
CREATE TABLE orders (id int PRIMARY KEY, item varchar(10) NOT NULL, qty varchar(10) NULL);
INSERT orders VALUES (1, 'bolt', '12'), (2, 'nut', '345'), (3, 'washer', NULL);
CREATE INDEX ix_item ON orders (item);
GO
-- A nullable column is NULL in the existing rows, even with a DEFAULT; a NOT NULL column
-- with a DEFAULT holds it; an IDENTITY column numbers them from its seed.
ALTER TABLE orders ADD note varchar(20) NULL;
ALTER TABLE orders ADD status char(1) NOT NULL DEFAULT 'N';
ALTER TABLE orders ADD priority int NULL DEFAULT 3;
ALTER TABLE orders ADD seq int IDENTITY(100, 10);
SELECT * FROM orders;
GO
-- New rows get the defaults and the next identity value.
INSERT orders (id, item) VALUES (4, 'screw');
SELECT id, status, priority, seq FROM orders WHERE id = 4;
GO
-- Several columns in one statement; the second name is taken, so neither is added.
ALTER TABLE orders ADD a1 int NULL, qty int NULL;
GO
ALTER TABLE orders ADD a1 int NULL, a2 int NOT NULL DEFAULT 0;
SELECT id, a1, a2 FROM orders;
ALTER TABLE orders DROP COLUMN a1, a2;
GO
-- The index still finds its rows after the rebuild.
SELECT id FROM orders WHERE item = 'nut';
GO
ALTER TABLE orders ADD rush bit NOT NULL;
GO
ALTER TABLE orders ADD item int;
GO
ALTER TABLE orders ADD COLUMN extra int;
GO
-- DROP COLUMN: a column an index or constraint uses, a missing one, the last one.
ALTER TABLE orders DROP COLUMN id;
GO
ALTER TABLE orders DROP COLUMN item;
GO
ALTER TABLE orders DROP COLUMN missing;
GO
-- All or none: the second column is indexed, so the first stays too.
ALTER TABLE orders DROP COLUMN note, item;
GO
SELECT COUNT(*) AS columns_kept FROM sys.columns WHERE object_id = OBJECT_ID('orders');
ALTER TABLE orders DROP COLUMN IF EXISTS missing;
ALTER TABLE orders DROP COLUMN note, priority;
SELECT * FROM orders;
GO
CREATE TABLE single (only_one int);
GO
ALTER TABLE single DROP COLUMN only_one;
GO
-- ALTER COLUMN converts every value; without NULL or NOT NULL the column becomes nullable.
ALTER TABLE orders ALTER COLUMN qty int;
SELECT id, qty, qty * 2 AS doubled FROM orders;
SELECT c.name, t.name AS type, c.max_length, c.is_nullable
FROM sys.columns c JOIN sys.types t ON t.user_type_id = c.user_type_id
WHERE c.object_id = OBJECT_ID('orders') ORDER BY c.column_id;
GO
-- Errors leave the table as it was: a NULL in a column made NOT NULL (515), a value that does
-- not convert (245), a string that would be cut (2628), a column an index uses (5074, 4922).
ALTER TABLE orders ALTER COLUMN qty int NOT NULL;
GO
ALTER TABLE orders ALTER COLUMN status int;
GO
ALTER TABLE orders ALTER COLUMN item varchar(3) NOT NULL;
GO
DROP INDEX ix_item ON orders;
GO
ALTER TABLE orders ALTER COLUMN item varchar(3) NOT NULL;
GO
ALTER TABLE orders ALTER COLUMN id bigint;
GO
ALTER TABLE orders ALTER COLUMN nothing int;
GO
SELECT * FROM orders;
GO
-- An ALTER inside a transaction is undone by ROLLBACK.
BEGIN TRAN;
ALTER TABLE orders DROP COLUMN qty;
SELECT COUNT(*) AS columns_inside FROM sys.columns WHERE object_id = OBJECT_ID('orders');
ROLLBACK;
SELECT COUNT(*) AS columns_after FROM sys.columns WHERE object_id = OBJECT_ID('orders');
SELECT * FROM orders;
GO
-- A heap, with a column added and changed, and CHECKDB after all of it.
CREATE TABLE log_lines (line_no int, body char(5));
INSERT log_lines VALUES (1, 'a'), (2, 'b');
ALTER TABLE log_lines ADD logged datetime NULL;
ALTER TABLE log_lines ALTER COLUMN body varchar(50) NOT NULL;
ALTER TABLE log_lines DROP COLUMN line_no;
SELECT body + '|' AS body, logged FROM log_lines;
DBCC CHECKDB WITH NO_INFOMSGS;
GO
-- The idempotent-migration idiom: COL_LENGTH is NULL for a column the table lacks, so the
-- second ADD does not run. COL_NAME, TYPE_NAME and TYPE_ID read the catalog and sys.types.
IF COL_LENGTH('dbo.log_lines', 'source') IS NULL ALTER TABLE log_lines ADD source nvarchar(10) NULL;
IF COL_LENGTH('dbo.log_lines', 'source') IS NULL ALTER TABLE log_lines ADD source nvarchar(10) NULL;
SELECT COL_LENGTH('log_lines', 'source') AS source_len, COL_LENGTH('log_lines', 'body') AS body_len,
       COL_LENGTH('log_lines', 'missing') AS missing_len, COL_LENGTH('no_table', 'body') AS no_table,
       COL_NAME(OBJECT_ID('log_lines'), 1) AS first_column, COL_NAME(OBJECT_ID('log_lines'), 9) AS ninth;
SELECT TYPE_NAME(56) AS t56, TYPE_NAME(108) AS t108, TYPE_NAME(231) AS t231, TYPE_NAME(999) AS t999,
       TYPE_ID('int') AS int_id, TYPE_ID('NVARCHAR') AS nvarchar_id, TYPE_ID('no_type') AS no_type;
SELECT c.name, TYPE_NAME(c.system_type_id) AS type_name, c.max_length
FROM sys.columns c WHERE c.object_id = OBJECT_ID('log_lines') ORDER BY c.column_id;
GO
-- Regression: values go through the rebuild as queries see them and are stored in the new
-- column's units (a time(3) widened to time(7), a datetime2(0) DEFAULT for existing rows
-- kept their values; before, they came out scaled wrong), and a DEFAULT too long for its
-- column is 2628 as in an INSERT.
CREATE TABLE timed (id int, t time(3));
INSERT timed VALUES (1, '10:11:12.345');
ALTER TABLE timed ADD d datetime2(0) NOT NULL DEFAULT '2020-01-01 10:00:00';
ALTER TABLE timed ALTER COLUMN t time(7);
SELECT id, t, d FROM timed;
GO
ALTER TABLE timed ADD code varchar(2) NOT NULL DEFAULT 'abcdef';
GO
