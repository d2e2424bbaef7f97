-- sys.dm_db_page_info and sys.fn_PageResCracker (SQL Server 2019): a page's header and its
-- allocation bits, for a data page, an index page, an IAM page and the allocation maps.
CREATE DATABASE pinfo ON (NAME = pinfo_data, FILENAME = 'pinfo_data.mdf', SIZE = 4MB)
  LOG ON (NAME = pinfo_log, FILENAME = 'pinfo_log.ldf', SIZE = 1MB);
GO
USE pinfo;
CREATE TABLE t (id int NOT NULL PRIMARY KEY, pad char(2000) NOT NULL);
INSERT t SELECT TOP (12) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)), 'x' FROM sys.all_objects;
GO
-- Every page of t, through the page allocations DMF, then the page's own row.
SELECT pa.allocated_page_page_id, pi.page_type, pi.page_type_desc, pi.page_level,
       OBJECT_NAME(pi.object_id) AS object_name, pi.index_id, pi.is_iam_pg, pi.slot_count,
       pi.free_bytes, pi.pfs_is_allocated, pi.pfs_alloc_percent, pi.is_mixed_ext,
       pi.prev_page_page_id, pi.next_page_page_id
FROM sys.dm_db_database_page_allocations(DB_ID(), OBJECT_ID('t'), NULL, NULL, 'LIMITED') AS pa
CROSS APPLY sys.dm_db_page_info(DB_ID(), pa.allocated_page_file_id, pa.allocated_page_page_id, 'DETAILED') AS pi
WHERE pa.is_allocated = 1
ORDER BY pa.allocated_page_page_id;
-- The allocation maps: PFS (1:1), GAM (1:2), SGAM (1:3), DIFF (1:6), ML (1:7).
SELECT page_id, page_type, page_type_desc, object_id, pfs_page_id, pfs_status, pfs_status_desc,
       gam_page_id, gam_status, gam_status_desc, sgam_page_id, sgam_status_desc,
       diff_map_page_id, ml_map_page_id, ml_status_desc
FROM sys.dm_db_page_info(DB_ID(), 1, 1, 'DETAILED')
UNION ALL SELECT page_id, page_type, page_type_desc, object_id, pfs_page_id, pfs_status,
       pfs_status_desc, gam_page_id, gam_status, gam_status_desc, sgam_page_id, sgam_status_desc,
       diff_map_page_id, ml_map_page_id, ml_status_desc
FROM sys.dm_db_page_info(DB_ID(), 1, 2, 'DETAILED')
UNION ALL SELECT page_id, page_type, page_type_desc, object_id, pfs_page_id, pfs_status,
       pfs_status_desc, gam_page_id, gam_status, gam_status_desc, sgam_page_id, sgam_status_desc,
       diff_map_page_id, ml_map_page_id, ml_status_desc
FROM sys.dm_db_page_info(DB_ID(), 1, 3, 'DETAILED');
-- Their owner is the allocation system (object 99, allocation unit 6488064), with no
-- partition; OBJECT_NAME(99) is NULL, as no catalog object has that id.
SELECT page_id, object_id, index_id, partition_id, alloc_unit_id, OBJECT_NAME(object_id) AS name
FROM sys.dm_db_page_info(DB_ID(), 1, 0, 'LIMITED')
UNION ALL SELECT page_id, object_id, index_id, partition_id, alloc_unit_id, OBJECT_NAME(object_id)
FROM sys.dm_db_page_info(DB_ID(), 1, 1, 'LIMITED')
UNION ALL SELECT page_id, object_id, index_id, partition_id, alloc_unit_id, OBJECT_NAME(object_id)
FROM sys.dm_db_page_info(DB_ID(), 1, 9, 'LIMITED');
-- LIMITED (the default) leaves the description columns NULL.
SELECT page_type, page_type_desc, pfs_status, pfs_status_desc, gam_status_desc,
       page_flag_bits, page_flag_bits_desc, has_checksum
FROM sys.dm_db_page_info(DB_ID(), 1, 1, DEFAULT);
-- A page past the end of the file and a page of the log file: 2568.
SELECT page_id FROM sys.dm_db_page_info(DB_ID(), 1, 99999, 'LIMITED');
SELECT page_id FROM sys.dm_db_page_info(DB_ID(), 2, 0, 'LIMITED');
-- NULL arguments, an unknown database and an unknown mode: 2561.
SELECT page_id FROM sys.dm_db_page_info(NULL, 1, 1, 'LIMITED');
SELECT page_id FROM sys.dm_db_page_info(DB_ID(), NULL, 1, 'LIMITED');
SELECT page_id FROM sys.dm_db_page_info(DB_ID(), 1, NULL, 'LIMITED');
SELECT page_id FROM sys.dm_db_page_info(32000, 1, 1, 'LIMITED');
SELECT page_id FROM sys.dm_db_page_info(DB_ID(), 1, 1, 'FULL');
GO
-- fn_PageResCracker: page 336 of file 1 in database 6; NULL gives no row.
SELECT db_id, file_id, page_id FROM sys.fn_PageResCracker(0x5001000001000600);
SELECT db_id, file_id, page_id FROM sys.fn_PageResCracker(NULL);
-- The documented chain, with no request waiting on a page: no rows, and its columns.
SELECT page_info.page_id, page_info.object_id
FROM sys.dm_exec_requests AS d
CROSS APPLY sys.fn_PageResCracker(d.page_resource) AS r
CROSS APPLY sys.dm_db_page_info(r.db_id, r.file_id, r.page_id, 'LIMITED') AS page_info;
-- An APPLY whose left side has no row keeps its right side's columns.
SELECT z.y FROM (SELECT 1 AS x WHERE 1 = 0) AS d CROSS APPLY (SELECT d.x AS y) AS z;
USE master;
DROP DATABASE pinfo;
GO
