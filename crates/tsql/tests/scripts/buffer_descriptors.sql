-- sys.dm_os_buffer_descriptors: a row per page in the buffer pool, read from its frame.
-- A table of three 2,000-byte rows (one data page), checkpointed; then a fourth row makes its
-- page modified; DBCC DROPCLEANBUFFERS empties the pool of clean pages, and a scan reads the
-- page back (read_microsec is the time that read took).
CREATE DATABASE Buffers
GO
USE Buffers
CREATE TABLE bd (id INT PRIMARY KEY, pad CHAR(2000))
INSERT bd VALUES (1, 'a'), (2, 'b'), (3, 'c')
CHECKPOINT
GO
SELECT d.page_type, d.page_level, d.row_count, d.free_space_in_bytes, d.is_modified, d.numa_node
FROM sys.dm_os_buffer_descriptors AS d
JOIN sys.allocation_units AS au ON au.allocation_unit_id = d.allocation_unit_id
JOIN sys.partitions AS p ON p.hobt_id = au.container_id
WHERE d.database_id = DB_ID() AND p.object_id = OBJECT_ID(N'bd')
ORDER BY d.page_type
INSERT bd VALUES (4, 'd')
SELECT d.page_type, d.row_count, d.is_modified
FROM sys.dm_os_buffer_descriptors AS d
JOIN sys.allocation_units AS au ON au.allocation_unit_id = d.allocation_unit_id
JOIN sys.partitions AS p ON p.hobt_id = au.container_id
WHERE d.database_id = DB_ID() AND p.object_id = OBJECT_ID(N'bd') AND d.page_type = N'DATA_PAGE'
GO
CHECKPOINT
DBCC DROPCLEANBUFFERS
SELECT COUNT(*) AS cached_pages_of_bd
FROM sys.dm_os_buffer_descriptors AS d
JOIN sys.allocation_units AS au ON au.allocation_unit_id = d.allocation_unit_id
JOIN sys.partitions AS p ON p.hobt_id = au.container_id
WHERE d.database_id = DB_ID() AND p.object_id = OBJECT_ID(N'bd')
SELECT COUNT(*) AS rows_in_bd FROM bd
SELECT d.page_type, d.row_count, d.is_modified,
       CASE WHEN d.read_microsec > 0 THEN N'read from disk' ELSE N'not read' END AS read
FROM sys.dm_os_buffer_descriptors AS d
JOIN sys.allocation_units AS au ON au.allocation_unit_id = d.allocation_unit_id
JOIN sys.partitions AS p ON p.hobt_id = au.container_id
WHERE d.database_id = DB_ID() AND p.object_id = OBJECT_ID(N'bd') AND d.page_type = N'DATA_PAGE'
-- Every page in the pool is a page of a database that exists.
SELECT COUNT(*) AS orphans FROM sys.dm_os_buffer_descriptors
WHERE DB_NAME(database_id) IS NULL
GO
USE master
DROP DATABASE Buffers
GO
