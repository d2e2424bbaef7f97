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
