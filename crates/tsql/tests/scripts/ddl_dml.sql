-- CREATE TABLE with IDENTITY, defaults, NOT NULL and a clustered primary key; INSERT forms;
-- UPDATE, DELETE, TRUNCATE; DROP TABLE [IF EXISTS].
CREATE TABLE dbo.Orders (
    id INT IDENTITY(1,1) PRIMARY KEY,
    customer NVARCHAR(20) NOT NULL,
    amount DECIMAL(10,2) DEFAULT 0,
    placed DATE DEFAULT '2024-01-02'
)
INSERT INTO Orders (customer, amount) VALUES ('alice', 10.5), ('bob', 20), ('alice', 3.25)
INSERT Orders (customer) VALUES ('carol')
SELECT * FROM Orders
GO
UPDATE Orders SET amount = amount * 2 WHERE customer = 'alice'
SELECT id, customer, amount FROM Orders WHERE amount > 10 ORDER BY amount DESC
DELETE FROM Orders WHERE id = 2
SELECT COUNT(*) AS remaining FROM Orders
GO
CREATE TABLE Archive (id INT, customer NVARCHAR(20))
INSERT INTO Archive (id, customer) SELECT id, customer FROM Orders WHERE customer = 'alice'
SELECT * FROM Archive ORDER BY id
TRUNCATE TABLE Archive
SELECT COUNT(*) AS after_truncate FROM Archive
GO
SELECT id, customer INTO Copy FROM Orders WHERE id < 4
SELECT * FROM Copy ORDER BY id
DROP TABLE Copy
DROP TABLE IF EXISTS Copy
DROP TABLE Copy
GO
-- SELECT ... INTO with IDENTITY(type, seed, increment): the new table numbers its rows.
CREATE TABLE Src (name VARCHAR(10))
INSERT Src VALUES ('a'), ('b'), ('c')
SELECT IDENTITY(INT, 100, 10) AS id, name INTO Numbered FROM Src
SELECT id, name FROM Numbered ORDER BY id
INSERT Numbered (name) VALUES ('d')
SELECT MAX(id) AS next_was FROM Numbered
SELECT IDENTITY(INT, 1, 1) AS id FROM Src
GO
-- Tables no row could fit, columns longer than any type, and a repeated column name are
-- refused as SQL Server refuses them (they were created).
CREATE TABLE too_wide (id INT PRIMARY KEY, a CHAR(5000), b CHAR(3100))
GO
CREATE TABLE too_long (x CHAR(8001))
GO
CREATE TABLE too_long_n (x NVARCHAR(4001))
GO
CREATE TABLE twice (a INT, A INT)
GO
CREATE TABLE max_ok (id INT PRIMARY KEY, v VARCHAR(MAX), n NVARCHAR(MAX), c CHAR(8000))
SELECT CAST('x' AS VARCHAR(9000)) AS too_long_type
GO
SELECT name FROM sys.tables WHERE name IN ('too_wide', 'too_long', 'too_long_n', 'twice', 'max_ok')
DROP TABLE max_ok
GO
