-- DBCC PAGE, IND, SHOWFILESTATS, DROPCLEANBUFFERS and CHECKALLOC on a small table, and
-- their agreement with the allocation DMVs.
CREATE DATABASE pg ON (NAME = pg_data, FILENAME = 'pg_data.mdf', SIZE = 4MB)
  LOG ON (NAME = pg_log, FILENAME = 'pg_log.ldf', SIZE = 1MB);
GO
USE pg;
CREATE TABLE t (c1 int NOT NULL PRIMARY KEY, c2 varchar(20) NULL, c3 char(5) NOT NULL);
INSERT t VALUES (1, 'one', 'a'), (2, NULL, 'b');
GO
DBCC IND ('pg', 't', -1);
DBCC IND ('pg', 't', -2);
DBCC IND ('pg', 'no_such', -1);
-- Without trace flag 3604 DBCC PAGE sends nothing to the client.
DBCC PAGE ('pg', 1, 48, 3);
DBCC TRACEON (3604);
DBCC PAGE ('pg', 1, 48, 0);
DBCC PAGE ('pg', 1, 48, 1);
DBCC PAGE ('pg', 1, 48, 3);
-- The allocation system's own pages (PFS, GAM, SGAM; the file header and boot page too, in
-- page_info.sql) carry object id 99: m_objId 99, AllocUnitId 6488064, no partition. An IAM
-- page (1:11) carries its unit's id.
DBCC PAGE ('pg', 1, 1, 0);
DBCC PAGE ('pg', 1, 2, 3);
DBCC PAGE ('pg', 1, 3, 3);
DBCC PAGE ('pg', 1, 11, 3);
DBCC PAGE ('pg', 1, 48, 0) WITH TABLERESULTS;
DBCC PAGE ('pg', 1, 99999, 0);
DBCC TRACEOFF (3604);
DBCC SHOWFILESTATS;
DBCC CHECKALLOC;
DBCC CHECKALLOC ('pg') WITH NO_INFOMSGS;
GO
-- The DMVs agree with DBCC IND: the same allocated pages.
SELECT allocated_page_page_id, page_type, page_level
FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), NULL, NULL, 'DETAILED')
WHERE is_allocated = 1 ORDER BY allocated_page_page_id;
-- and sys.dm_db_file_space_usage agrees with SHOWFILESTATS (8 pages an extent).
SELECT allocated_extent_page_count / 8 AS used_extents, total_page_count / 8 AS total_extents
FROM sys.dm_db_file_space_usage;
DBCC DROPCLEANBUFFERS;
SELECT c1, c2, c3 FROM t ORDER BY c1;
USE master;
GO
