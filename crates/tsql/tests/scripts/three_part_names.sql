-- Three-part names: a catalog view of another database (`db.sys.view`) reads that database's
-- catalog; a table of the current database may be named with it; a table of another
-- database is refused with 40517 (not built) rather than read from the current one, which
-- has a table of the same name here.
CREATE DATABASE LeftDb
CREATE DATABASE RightDb
GO
USE RightDb
CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(10))
CREATE TABLE only_right (a INT)
INSERT t VALUES (1, 'right'), (2, 'right')
GO
USE LeftDb
CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(10))
INSERT t VALUES (1, 'left')
GO
SELECT name FROM RightDb.sys.tables ORDER BY name
SELECT name FROM sys.tables ORDER BY name
SELECT name, type_desc FROM RightDb.sys.database_files ORDER BY file_id
SELECT t.name AS table_name, c.name AS column_name
FROM RightDb.sys.tables AS t JOIN RightDb.sys.columns AS c ON c.object_id = t.object_id
WHERE t.name = N't' ORDER BY c.column_id
SELECT id, note FROM LeftDb.dbo.t
GO
SELECT id, note FROM RightDb.dbo.t
GO
INSERT RightDb.dbo.t VALUES (3, 'from left')
GO
UPDATE RightDb.dbo.t SET note = 'changed'
GO
SELECT id, note FROM t
SELECT name FROM Nowhere.sys.tables
GO
USE master
DROP DATABASE LeftDb
DROP DATABASE RightDb
GO
