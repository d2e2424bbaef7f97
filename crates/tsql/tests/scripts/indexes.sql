-- Indexes: nonclustered and clustered indexes kept in step with their table, unique
-- indexes (2601), seeks by key, and a clustered index built on a heap.
CREATE TABLE items (id INT NOT NULL, code CHAR(4) NOT NULL, qty INT)
INSERT INTO items VALUES (3, 'C003', 30), (1, 'A001', 10), (2, 'B002', 20)
CREATE UNIQUE NONCLUSTERED INDEX ix_code ON items (code)
INSERT INTO items VALUES (4, 'A001', 40)
GO
SELECT id, qty FROM items WHERE code = 'B002'
UPDATE items SET code = 'Z002' WHERE id = 2
SELECT id FROM items WHERE code = 'Z002'
SELECT COUNT(*) AS old_code FROM items WHERE code = 'B002'
CREATE CLUSTERED INDEX cix_id ON items (id)
SELECT id, code FROM items
CREATE INDEX ix_code ON items (qty)
DELETE FROM items WHERE code = 'C003'
SELECT id, code FROM items WHERE id = 3
SELECT OBJECT_NAME(OBJECT_ID('items')) AS name
GO
-- Index key limits: 900 bytes clustered, 1,700 nonclustered (1944 at CREATE, 1946 at INSERT).
CREATE TABLE wide (id int NOT NULL PRIMARY KEY, filler char(4000) NOT NULL DEFAULT 'x');
CREATE INDEX ix_wide ON wide (filler);
CREATE TABLE big_key (k char(1000) NOT NULL PRIMARY KEY);
CREATE TABLE var_key (k varchar(2000) NOT NULL PRIMARY KEY, n nvarchar(1000) NULL);
CREATE INDEX ix_n ON var_key (n);
INSERT var_key VALUES (REPLICATE('a', 901), NULL);
INSERT var_key VALUES (REPLICATE('a', 900), REPLICATE(N'n', 851));
INSERT var_key VALUES (REPLICATE('b', 900), REPLICATE(N'n', 800));
SELECT LEN(k) AS k_len, LEN(n) AS n_len FROM var_key;
GO
-- ALTER INDEX ... REBUILD builds an index again from its table's rows, in key order, into new
-- pages: keys inserted out of order left it fragmented; rebuilt, its pages are full and in
-- order. A ROLLBACK gives the old pages back.
SET NOCOUNT ON;
CREATE TABLE scattered (id int CONSTRAINT PK_scattered PRIMARY KEY, pad char(400) NOT NULL DEFAULT 'x', n int);
CREATE INDEX ix_n ON scattered (n);
DECLARE @i int = 0;
WHILE @i < 3000
BEGIN
    INSERT scattered (id, n) VALUES ((@i * 7919) % 3001, (@i * 31) % 97);
    SET @i += 1;
END;
SET NOCOUNT OFF;
SELECT index_id, page_count, CAST(avg_fragmentation_in_percent AS int) AS fragmentation
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('scattered'), NULL, NULL, 'LIMITED')
ORDER BY index_id;
ALTER INDEX ix_n ON scattered REBUILD WITH (ONLINE = OFF, MAXDOP = 1);
SELECT index_id, page_count, CAST(avg_fragmentation_in_percent AS int) AS fragmentation
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('scattered'), NULL, NULL, 'LIMITED')
ORDER BY index_id;
BEGIN TRAN;
ALTER INDEX ALL ON scattered REBUILD;
SELECT index_id, page_count, CAST(avg_fragmentation_in_percent AS int) AS fragmentation
FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('scattered'), NULL, NULL, 'LIMITED')
ORDER BY index_id;
ROLLBACK;
SELECT index_id, page_count FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID('scattered'), NULL, NULL, 'LIMITED')
ORDER BY index_id;
ALTER TABLE scattered REBUILD;
ALTER INDEX PK_scattered ON scattered REORGANIZE;
SELECT COUNT(*) AS rows_left, SUM(CAST(n AS bigint)) AS n_total FROM scattered;
DBCC CHECKTABLE ('scattered') WITH NO_INFOMSGS;
GO
ALTER INDEX missing ON scattered REBUILD;
GO
ALTER INDEX ALL ON missing REBUILD;
GO
ALTER INDEX ix_n ON scattered REBUILD WITH (FILLFACTOR = 80);
GO
ALTER INDEX ix_n ON scattered DISABLE;
GO
DROP TABLE scattered;
GO
