-- golden: mask-times
-- ALTER DATABASE ... SET OFFLINE and SET ONLINE: an OFFLINE database keeps its id and its
-- files, is listed with state 6, refuses USE with 942, and comes back whole with SET ONLINE
-- (which runs recovery). A database in use cannot change state (5070, then 5069).
CREATE DATABASE Shelf
GO
USE Shelf
CREATE TABLE books (id INT PRIMARY KEY, title VARCHAR(40))
INSERT books VALUES (1, 'Inside SQL Server'), (2, 'Storage Engine')
GO
-- This session is in Shelf: the database is in use.
ALTER DATABASE Shelf SET OFFLINE
GO
USE master
ALTER DATABASE Shelf SET OFFLINE WITH ROLLBACK IMMEDIATE
SELECT name, database_id, state, state_desc FROM sys.databases WHERE name = N'Shelf'
SELECT DB_ID(N'Shelf') AS id, DATABASEPROPERTYEX(N'Shelf', 'Status') AS status
GO
USE Shelf
GO
-- Setting it OFFLINE again changes nothing; CREATE DATABASE of its name is refused.
ALTER DATABASE Shelf SET OFFLINE
CREATE DATABASE Shelf
GO
ALTER DATABASE Shelf SET ONLINE
SELECT name, database_id, state, state_desc FROM sys.databases WHERE name = N'Shelf'
GO
USE Shelf
SELECT id, title FROM books ORDER BY id
GO
USE master
EXEC xp_readerrorlog 0, 1, N'Setting database option'
ALTER DATABASE Nowhere SET ONLINE
GO
ALTER DATABASE master SET OFFLINE
GO
-- An OFFLINE database can be dropped; its files stay on disk, as in SQL Server.
ALTER DATABASE Shelf SET OFFLINE
DROP DATABASE Shelf
SELECT COUNT(*) AS listed FROM sys.databases WHERE name = N'Shelf'
GO
