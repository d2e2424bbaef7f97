-- MERGE: matched rows take the first WHEN MATCHED clause whose AND holds, unmatched source
-- rows the first WHEN NOT MATCHED [BY TARGET], unmatched target rows the first WHEN NOT
-- MATCHED BY SOURCE; OUTPUT sees inserted, deleted, the source and $action.
CREATE TABLE stock (id INT PRIMARY KEY, qty INT NOT NULL, note VARCHAR(10) NULL);
INSERT stock VALUES (1, 10, 'a'), (2, 20, 'b'), (4, 40, 'd'), (5, 0, 'e');
GO
MERGE stock AS t
USING (VALUES (1, 5), (2, -20), (3, 30)) AS s (id, delta)
ON t.id = s.id
WHEN MATCHED AND t.qty + s.delta <= 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET qty = t.qty + s.delta, note = 'changed'
WHEN NOT MATCHED BY TARGET THEN INSERT (id, qty, note) VALUES (s.id, s.delta, 'new')
WHEN NOT MATCHED BY SOURCE AND t.qty = 0 THEN DELETE
OUTPUT $action, inserted.id AS new_id, deleted.id AS old_id, deleted.qty AS old_qty, inserted.qty AS new_qty, s.delta;
SELECT @@ROWCOUNT AS merged;
SELECT * FROM stock;
GO
-- A table as the source, no alias on the target; the row count without OUTPUT.
CREATE TABLE incoming (id INT, qty INT);
INSERT incoming VALUES (1, 100), (6, 60);
MERGE INTO stock USING incoming ON stock.id = incoming.id
WHEN MATCHED THEN UPDATE SET qty = incoming.qty
WHEN NOT MATCHED THEN INSERT VALUES (incoming.id, incoming.qty, NULL);
SELECT * FROM stock;
GO
-- A target row matched by two source rows is 8672, and the statement changes nothing.
INSERT incoming VALUES (1, 7);
MERGE stock USING incoming ON stock.id = incoming.id
WHEN MATCHED THEN UPDATE SET qty = incoming.qty
WHEN NOT MATCHED THEN INSERT VALUES (incoming.id, incoming.qty, 'x');
GO
SELECT * FROM stock;
GO
-- An insert-only MERGE over a derived table (as EF Core batches inserts): ON 1 = 0 matches
-- nothing; an identity column is filled, and OUTPUT returns it beside a source column.
CREATE TABLE orders (id INT IDENTITY(100, 1) PRIMARY KEY, item VARCHAR(20));
MERGE orders USING (SELECT 'pen' AS item, 0 AS position UNION ALL SELECT 'ink', 1) AS i (item, position) ON 1 = 0
WHEN NOT MATCHED THEN INSERT (item) VALUES (i.item)
OUTPUT inserted.id, i.position;
GO
-- Inside a transaction, ROLLBACK undoes it.
BEGIN TRAN;
MERGE stock USING (SELECT 2 AS id) s ON stock.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE;
SELECT COUNT(*) AS inside FROM stock;
ROLLBACK;
SELECT COUNT(*) AS after_rollback FROM stock;
GO
-- MERGE must end with a semicolon.
MERGE stock USING incoming ON stock.id = incoming.id WHEN MATCHED THEN DELETE
GO
-- An action its clause does not allow is refused before the statement runs.
MERGE stock USING incoming ON stock.id = incoming.id WHEN MATCHED THEN INSERT VALUES (1, 1, 'x');
GO
MERGE stock USING incoming ON stock.id = incoming.id WHEN NOT MATCHED AND incoming.qty > 0 THEN DELETE;
GO
MERGE stock USING incoming ON stock.id = incoming.id WHEN NOT MATCHED BY SOURCE THEN INSERT VALUES (1, 1, 'x');
GO
-- A source whose column list does not name each of its columns is 8158 (it panicked: the
-- source's rows were wider than its columns).
MERGE stock USING (SELECT 2 AS id, 5 AS qty) AS s (id) ON stock.id = s.id WHEN MATCHED THEN DELETE;
GO
-- A VALUES source whose rows differ in width is 10709 (it panicked too).
MERGE stock USING (VALUES (1, 5), (2)) AS s (id, delta) ON stock.id = s.id WHEN MATCHED THEN DELETE;
GO
SELECT * FROM (VALUES (1, 2), (3)) AS v (a, b)
GO
