-- UPDATE ... FROM and DELETE ... FROM with joins, SET IDENTITY_INSERT, SET @v += n,
-- OPTION (MAXDOP n, MAXRECURSION n).
CREATE TABLE Stock (id INT IDENTITY PRIMARY KEY, item VARCHAR(10), qty INT)
CREATE TABLE Moves (item VARCHAR(10), delta INT)
INSERT Stock (item, qty) VALUES ('bolt', 10), ('nut', 20), ('gear', 5)
INSERT Moves VALUES ('bolt', 5), ('nut', -3), ('nut', -100), ('cog', 1)
GO
UPDATE s SET qty = s.qty + m.delta
FROM Stock AS s JOIN Moves AS m ON m.item = s.item
WHERE m.delta > -50
SELECT item, qty FROM Stock ORDER BY id
UPDATE Stock SET qty = 0 FROM Stock JOIN Moves ON Moves.item = Stock.item AND Moves.delta = 1
SELECT @@ROWCOUNT AS none_matched
GO
DELETE s FROM Stock s JOIN Moves m ON m.item = s.item WHERE m.delta < 0
SELECT item, qty FROM Stock ORDER BY id
GO
-- IDENTITY_INSERT: explicit identity values, then the identity goes on above them.
SET IDENTITY_INSERT Stock ON
INSERT Stock (id, item, qty) VALUES (100, 'washer', 1)
INSERT Stock (item, qty) VALUES ('spring', 2)
INSERT Stock VALUES (101, 'pin', 3)
SET IDENTITY_INSERT dbo.Stock OFF
INSERT Stock (item, qty) VALUES ('spring', 2)
INSERT Stock (id, item, qty) VALUES (200, 'rivet', 1)
SELECT id, item FROM Stock WHERE id >= 100 ORDER BY id
SELECT @@IDENTITY AS last_identity
GO
SET IDENTITY_INSERT Moves ON
SET IDENTITY_INSERT Stock ON
CREATE TABLE Other (id INT IDENTITY, x INT)
SET IDENTITY_INSERT Other ON
SET IDENTITY_INSERT Stock OFF
SET IDENTITY_INSERT Other ON
GO
DECLARE @n INT = 10, @s VARCHAR(20) = 'a'
SET @n += 5
SET @n *= 2
SET @n -= 1
SET @n %= 7
SET @s += 'bc'
SELECT @n AS n, @s AS s
GO
SELECT COUNT(*) AS n FROM Stock OPTION (MAXDOP 1)
WITH Numbers AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM Numbers WHERE n < 500)
SELECT MAX(n) AS highest FROM Numbers OPTION (MAXRECURSION 1000)
WITH Numbers AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM Numbers WHERE n < 500)
SELECT MAX(n) AS highest FROM Numbers OPTION (MAXRECURSION 10)
GO
-- FROM is optional after DELETE; an alias before FROM still names the joined table.
CREATE TABLE Bin (id INT PRIMARY KEY, tag VARCHAR(10))
INSERT Bin VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')
DELETE Bin WHERE id = 1
DELETE dbo.Bin WHERE tag = 'b'
DELETE b FROM Bin b WHERE b.id = 3
SELECT id, tag FROM Bin
GO
-- DELETE TOP (n) and UPDATE TOP (n): at most n of the matching rows (which ones is not
-- defined, so the checks count them); PERCENT rounds up; the batch-delete loop ends.
CREATE TABLE Batch (id INT PRIMARY KEY, v INT)
INSERT Batch VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60), (7, 70)
DELETE TOP (2) FROM Batch WHERE v > 10
SELECT @@ROWCOUNT AS deleted, COUNT(*) AS left_over, SUM(CASE WHEN v = 10 THEN 1 ELSE 0 END) AS kept_10 FROM Batch
UPDATE TOP (1) Batch SET v = -1 WHERE v > 0
SELECT @@ROWCOUNT AS updated, COUNT(*) AS negative FROM Batch WHERE v = -1
DELETE TOP (1) Batch WHERE v = -1
SELECT COUNT(*) AS after_bare_delete FROM Batch
DELETE TOP (50) PERCENT FROM Batch
SELECT @@ROWCOUNT AS half_rounded_up, COUNT(*) AS left_over FROM Batch
UPDATE TOP (0) Batch SET v = 0
SELECT @@ROWCOUNT AS none
DECLARE @chunk INT = 1, @rounds INT = 0
WHILE 1 = 1
BEGIN
    DELETE TOP (@chunk) FROM Batch
    IF @@ROWCOUNT = 0 BREAK
    SET @rounds += 1
END
SELECT @rounds AS rounds, COUNT(*) AS empty FROM Batch
GO
DELETE TOP (-1) FROM Batch
GO
UPDATE TOP (101) PERCENT Batch SET v = 0
GO
DELETE TOP 1 FROM Batch
GO
-- MySQL's LIMIT and ORDER BY on DELETE and UPDATE are syntax errors in T-SQL (they used to be
-- ignored: LIMIT 1 deleted every matching row); LIMIT stays a usable column name.
CREATE TABLE Lim (id INT PRIMARY KEY, limit INT)
INSERT Lim VALUES (1, 1), (2, 2), (3, 3)
GO
DELETE FROM Lim WHERE id > 0 LIMIT 1
GO
DELETE FROM Lim ORDER BY id
GO
UPDATE Lim SET limit = 0 LIMIT 1
GO
DELETE FROM Lim WHERE limit = 3
SELECT COUNT(*) AS n, MAX(limit) AS highest FROM Lim
GO
-- Compound assignments in an UPDATE's SET list (and MERGE's): column op= expr means
-- column = column op (expr), so `-= 3 - 1` subtracts 2.
CREATE TABLE counters (id int PRIMARY KEY, hits int, flags int, label varchar(20));
INSERT counters VALUES (1, 10, 1, 'a'), (2, 20, 2, 'b');
UPDATE counters SET hits += 5, flags |= 4 WHERE id = 1;
UPDATE c SET c.hits -= 3 - 1, label += CASE WHEN hits > 15 THEN '!' ELSE '?' END FROM counters AS c WHERE c.id = 2
UPDATE counters SET hits *= 2, flags ^= 1
SELECT id, hits, flags, label FROM counters ORDER BY id;
MERGE counters AS t USING (SELECT 1 AS id) AS s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET hits %= 7;
SELECT hits FROM counters WHERE id = 1;
GO
