-- The OUTPUT clause: inserted.* after INSERT and UPDATE, deleted.* before UPDATE and DELETE,
-- as a result set or INTO a table or table variable, in the statement's transaction.
CREATE TABLE Orders (id INT IDENTITY PRIMARY KEY, item VARCHAR(10), qty INT DEFAULT 1)
CREATE TABLE Archive (id INT, item VARCHAR(10), qty INT)
GO
-- The identity and the default come back as stored.
INSERT Orders (item) OUTPUT inserted.id, inserted.item, inserted.qty VALUES ('bolt'), ('nut'), ('gear')
UPDATE Orders SET qty = qty * 10 OUTPUT inserted.id, deleted.qty AS before, inserted.qty AS after WHERE item <> 'nut'
GO
-- The archive pattern: each batch of deletes goes into another table in the same transaction.
DELETE TOP (2) FROM Orders OUTPUT deleted.* INTO Archive WHERE qty > 1
SELECT id, item, qty FROM Archive ORDER BY id
DECLARE @gone TABLE (id INT, item VARCHAR(10))
DELETE Orders OUTPUT deleted.id, deleted.item INTO @gone
SELECT id, item FROM @gone
SELECT COUNT(*) AS left_in_orders FROM Orders
GO
-- Expressions over the pseudo-tables; no row changed, no row out.
INSERT Orders (item, qty) OUTPUT UPPER(inserted.item) AS item, inserted.qty * 2 AS doubled VALUES ('pin', 4)
UPDATE Orders SET qty = 0 OUTPUT deleted.id WHERE 1 = 0
GO
-- UPDATE ... FROM through an alias, with no row joined and with one (regression: with none,
-- the target's alias was looked up as a table, 208).
CREATE TABLE Moves (id INT)
UPDATE o SET qty = 0 OUTPUT inserted.id FROM Orders AS o JOIN Moves AS m ON m.id = o.id
INSERT Moves SELECT id FROM Orders
UPDATE o SET qty = 5 OUTPUT deleted.qty AS was, inserted.qty AS now FROM Orders AS o JOIN Moves AS m ON m.id = o.id
GO
-- A pseudo-table the statement does not have is 4104, a column it does not have 207, even
-- when no row changes; the statement changes nothing.
INSERT Orders (item) OUTPUT deleted.item VALUES ('cog')
GO
DELETE FROM Orders OUTPUT inserted.id WHERE 1 = 0
GO
UPDATE Orders SET qty = 9 OUTPUT inserted.nosuch
GO
SELECT item, qty FROM Orders
GO
-- T-SQL's order for a DELETE through an alias or a join: the OUTPUT clause before the FROM
-- list (sqlparser reads it only after). Without a FROM list the target is the table itself.
CREATE TABLE stock (id int, qty int);
CREATE TABLE stock_archive (id int, qty int);
INSERT stock VALUES (1, 10), (2, 20), (3, 30), (4, 40);
GO
DELETE s OUTPUT deleted.id, deleted.qty FROM stock AS s WHERE s.id = 1;
DELETE s OUTPUT deleted.* INTO stock_archive FROM stock s WHERE s.id = 2;
DELETE stock OUTPUT deleted.id AS joined FROM stock JOIN stock_archive a ON a.id + 1 = stock.id;
DELETE stock OUTPUT deleted.qty WHERE id = 4;
SELECT (SELECT COUNT(*) FROM stock) AS left_in_stock, (SELECT qty FROM stock_archive) AS archived;
GO
-- Regression: inserted.* shows a time or datetime2 column as queries do (it came out in the
-- column's storage units, scaled wrong), and OUTPUT INTO stores it once, not twice scaled.
CREATE TABLE timed_rows (id int, t time(3), d datetime2(2));
CREATE TABLE timed_copy (id int, t time(3), d datetime2(2));
INSERT timed_rows OUTPUT inserted.t, inserted.d VALUES (1, '10:11:12.345', '2020-01-01 10:00:00.12');
UPDATE timed_rows SET id = 2 OUTPUT deleted.t AS before_t, inserted.t AS after_t;
UPDATE timed_rows SET id = 3 OUTPUT inserted.* INTO timed_copy;
GO
SELECT * FROM timed_copy;
GO
