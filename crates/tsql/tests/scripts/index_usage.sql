-- sys.dm_db_index_usage_stats: each statement's seeks, scans, lookups and changes, counted
-- once per index and statement however many rows it read (a nested-loop join's many seeks
-- are one), kept while the database is open.
SET NOCOUNT ON
CREATE DATABASE usage
GO
USE usage
CREATE TABLE t (id INT PRIMARY KEY, code INT, name VARCHAR(20), filler CHAR(400) NOT NULL DEFAULT 'f')
CREATE INDEX ix_code ON t (code)
CREATE INDEX ix_name ON t (name)
CREATE TABLE h (a INT, b INT)
GO
-- One INSERT statement of 300 rows is one change of each index.
WITH n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT t (id, code, name) SELECT i, i % 7, 'n' + CAST(i AS VARCHAR(10)) FROM n OPTION (MAXRECURSION 300)
INSERT h VALUES (1, 1), (2, 2), (3, 3)
GO
SELECT OBJECT_NAME(object_id) AS tab, index_id, user_seeks, user_scans, user_lookups, user_updates
FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID() ORDER BY object_id, index_id
GO
-- A seek of the clustered index; a seek of ix_code with lookups of the rows it found; two
-- scans (COUNT(*), and a LIKE no index can seek); a join whose inner side is sought once per
-- outer row, one seek for the statement.
SELECT name FROM t WHERE id = 5
SELECT COUNT(*) AS with_code_3 FROM t WHERE code = 3
SELECT COUNT(*) AS all_rows FROM t
SELECT COUNT(*) AS ending_in_7 FROM t WHERE name LIKE '%7'
SELECT COUNT(*) AS joined FROM h JOIN t ON t.id = h.a
-- Changes: an UPDATE changes its base index and the indexes keyed on the columns it sets; a
-- DELETE changes every index, even when it found no row; a seek that finds nothing has no
-- lookup.
UPDATE t SET code = 1 WHERE id = 9
UPDATE t SET name = 'x' WHERE id = 10
DELETE t WHERE code = 99
GO
SELECT OBJECT_NAME(object_id) AS tab, index_id, user_seeks, user_scans, user_lookups, user_updates,
  CASE WHEN last_user_seek IS NULL THEN 'no' ELSE 'yes' END AS seek_time,
  CASE WHEN last_user_lookup IS NULL THEN 'no' ELSE 'yes' END AS lookup_time,
  system_seeks, last_system_scan
FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID() ORDER BY object_id, index_id
GO
-- Temporary tables are tempdb's: not counted here. A dropped index's row goes.
CREATE TABLE #scratch (x INT PRIMARY KEY)
INSERT #scratch VALUES (1)
SELECT x FROM #scratch WHERE x = 1
SELECT COUNT(*) AS with_scratch_used FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID()
DROP TABLE #scratch
DROP INDEX ix_name ON t
SELECT COUNT(*) AS after_drop_index FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID()
GO
-- sys.dm_db_index_operational_stats' page allocations: a B-tree's splits (a root split's two
-- new pages count two), a heap's new pages. Each equals the leaf pages there now.
CREATE TABLE splits (id INT PRIMARY KEY, pad CHAR(2000) NOT NULL DEFAULT 'p')
CREATE TABLE heapy (pad CHAR(3000) NOT NULL)
DECLARE @i INT = 1
WHILE @i <= 40 BEGIN INSERT splits (id) VALUES (@i); INSERT heapy VALUES ('h'); SET @i += 1 END
SELECT OBJECT_NAME(object_id) AS tab, index_id, leaf_allocation_count, nonleaf_allocation_count
FROM sys.dm_db_index_operational_stats(DB_ID(), NULL, NULL, NULL)
WHERE OBJECT_NAME(object_id) IN ('splits', 'heapy') ORDER BY 1
SELECT OBJECT_NAME(object_id) AS tab, index_id, page_count AS leaf_pages
FROM sys.dm_db_index_physical_stats(DB_ID(), NULL, NULL, NULL, 'LIMITED')
WHERE OBJECT_NAME(object_id) IN ('splits', 'heapy') ORDER BY 1
GO
-- The counters are the open database's: taking it offline and back empties them.
USE master
ALTER DATABASE usage SET OFFLINE
ALTER DATABASE usage SET ONLINE
SELECT COUNT(*) AS after_reopen FROM sys.dm_db_index_usage_stats WHERE database_id = DB_ID('usage')
GO
