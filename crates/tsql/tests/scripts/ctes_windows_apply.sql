-- Common table expressions (plain, several, recursive), window functions, CROSS/OUTER APPLY.
CREATE TABLE Sales (id INT IDENTITY PRIMARY KEY, region VARCHAR(10), rep VARCHAR(10), amount INT)
INSERT Sales (region, rep, amount) VALUES
    ('north', 'ann', 100), ('north', 'bob', 300), ('north', 'ann', 200),
    ('south', 'cid', 50), ('south', 'dee', 50), ('south', 'cid', 75), ('east', 'eve', 10)
GO
WITH ByRep AS (SELECT region, rep, SUM(amount) AS total FROM Sales GROUP BY region, rep),
     Big (who, howmuch) AS (SELECT rep, total FROM ByRep WHERE total >= 100)
SELECT who, howmuch FROM Big ORDER BY howmuch DESC
GO
-- A number generator: a recursive CTE.
WITH Numbers AS (
    SELECT 1 AS n
    UNION ALL
    SELECT n + 1 FROM Numbers WHERE n < 10
)
SELECT COUNT(*) AS how_many, SUM(n) AS total, MAX(n) AS highest FROM Numbers
GO
WITH Forever AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM Forever)
SELECT MAX(n) FROM Forever
GO
-- A column list names every column of its query: 8158 for more columns than names, 8159 for
-- fewer, in a CTE, a derived table or a VALUES table alike; a name with a type is 102.
WITH Two (a) AS (SELECT 1 AS x, 2 AS y) SELECT * FROM Two
GO
WITH One (a, b) AS (SELECT 1 AS x) SELECT * FROM One
GO
SELECT * FROM (SELECT 1 AS x, 2 AS y) AS d (a)
GO
SELECT * FROM (SELECT 1 AS x) AS d (a, b)
GO
SELECT * FROM (VALUES (1, 2), (3, 4)) AS v (a)
GO
SELECT * FROM (SELECT 1 AS x, 2 AS y) AS d (a b)
GO
SELECT a, b FROM (VALUES (1, 2), (3, 4)) AS v (a, b) ORDER BY a DESC
GO
-- Ranking, running totals and offsets.
SELECT region, rep, amount,
       ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC) AS rn,
       RANK() OVER (ORDER BY amount) AS rnk,
       DENSE_RANK() OVER (ORDER BY amount) AS dense,
       SUM(amount) OVER (PARTITION BY region ORDER BY id) AS running,
       SUM(amount) OVER (PARTITION BY region) AS region_total,
       COUNT(*) OVER () AS all_rows,
       LAG(amount) OVER (PARTITION BY region ORDER BY id) AS previous,
       LEAD(amount, 1, 0) OVER (PARTITION BY region ORDER BY id) AS next_or_0,
       NTILE(3) OVER (ORDER BY id) AS third
FROM Sales
ORDER BY id
GO
-- The top row of each group, and a window over grouped rows.
WITH Ranked AS (
    SELECT region, rep, amount, ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC, id) AS rn
    FROM Sales
)
SELECT region, rep, amount FROM Ranked WHERE rn = 1 ORDER BY region
SELECT region, SUM(amount) AS total,
       CAST(100.0 * SUM(amount) / SUM(SUM(amount)) OVER () AS DECIMAL(5,1)) AS pct
FROM Sales GROUP BY region ORDER BY total DESC
GO
SELECT ROW_NUMBER() OVER () FROM Sales
GO
SELECT rep FROM Sales WHERE ROW_NUMBER() OVER (ORDER BY id) = 1
GO
-- APPLY: a correlated derived table per row, and a table-valued function.
SELECT r.region, best.rep, best.amount
FROM (SELECT DISTINCT region FROM Sales) AS r
CROSS APPLY (SELECT TOP 1 rep, amount FROM Sales s WHERE s.region = r.region ORDER BY amount DESC) AS best
ORDER BY r.region
SELECT r.name, x.amount
FROM (SELECT 'north' AS name UNION ALL SELECT 'west') AS r
OUTER APPLY (SELECT SUM(amount) AS amount FROM Sales s WHERE s.region = r.name HAVING SUM(amount) > 0) AS x
ORDER BY r.name
GO
-- The DBA's VLF count per database.
CREATE DATABASE LogDemo ON (NAME = LogDemo, FILENAME = 'LogDemo.mdf', SIZE = 8MB)
    LOG ON (NAME = LogDemo_log, FILENAME = 'LogDemo_log.ldf', SIZE = 64MB)
GO
SELECT d.name, COUNT(*) AS vlfs, SUM(li.vlf_size_mb) AS log_mb, SUM(CAST(li.vlf_active AS INT)) AS active
FROM sys.databases AS d
CROSS APPLY sys.dm_db_log_info(d.database_id) AS li
GROUP BY d.name
ORDER BY d.name
GO
