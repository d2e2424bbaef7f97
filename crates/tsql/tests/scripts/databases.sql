-- CREATE DATABASE with file specs and filegroups (seed 000's layout: a 5 MB primary file and
-- secondary files), then every ALTER DATABASE action, read back from sys.database_files,
-- sys.filegroups and sys.databases; and the errors of bad specifications.
CREATE DATABASE PF ON PRIMARY
    (NAME = N'PF_data', FILENAME = N'C:\SQLData\PF_data.mdf', SIZE = 5MB, FILEGROWTH = 0),
    (NAME = N'PF_2', FILENAME = N'C:\SQLData\PF_2.ndf', SIZE = 5MB, MAXSIZE = 100MB, FILEGROWTH = 10%),
    FILEGROUP FG2 (NAME = PF_3, FILENAME = 'PF_3.ndf', SIZE = 1024KB)
LOG ON (NAME = PF_log, FILENAME = 'PF_log.ldf', SIZE = 8MB, FILEGROWTH = 64MB)
GO
USE PF
SELECT file_id, type_desc, data_space_id, name, size, max_size, growth, is_percent_growth
FROM sys.database_files
SELECT name, data_space_id, is_default, is_autogrow_all_files FROM sys.filegroups
GO
ALTER DATABASE PF ADD FILE (NAME = PF_4, FILENAME = 'PF_4.ndf', SIZE = 2MB) TO FILEGROUP FG2
ALTER DATABASE PF ADD LOG FILE (NAME = PF_log2, FILENAME = 'PF_log2.ldf', SIZE = 4MB)
ALTER DATABASE PF MODIFY FILE (NAME = PF_data, SIZE = 10MB)
ALTER DATABASE PF MODIFY FILE (NAME = PF_2, FILEGROWTH = 1MB, MAXSIZE = UNLIMITED)
ALTER DATABASE PF MODIFY FILEGROUP FG2 DEFAULT
ALTER DATABASE CURRENT MODIFY FILEGROUP FG2 AUTOGROW_ALL_FILES
ALTER DATABASE PF ADD FILEGROUP Empty
SELECT file_id, type_desc, data_space_id, name, size, max_size, growth, is_percent_growth
FROM sys.database_files
SELECT name, data_space_id, is_default, is_autogrow_all_files FROM sys.filegroups
GO
CREATE TABLE OnDefault (id INT)
INSERT OnDefault VALUES (1)
SELECT FILEPROPERTY('PF_3', 'SpaceUsed') + FILEPROPERTY('PF_4', 'SpaceUsed') AS fg2_pages_used
GO
ALTER DATABASE PF REMOVE FILE PF_log2
ALTER DATABASE PF REMOVE FILEGROUP Empty
ALTER DATABASE PF SET RECOVERY FULL
ALTER DATABASE PF SET MIXED_PAGE_ALLOCATION ON
ALTER DATABASE PF SET SINGLE_USER WITH ROLLBACK IMMEDIATE
ALTER DATABASE PF SET MULTI_USER
-- TARGET_RECOVERY_TIME 0 is how every database checkpoints here (automatic checkpoints).
ALTER DATABASE PF SET TARGET_RECOVERY_TIME = 0 SECONDS
SELECT name, recovery_model_desc, is_mixed_page_allocation_on, target_recovery_time_in_seconds
FROM sys.databases WHERE name = 'PF'
SELECT name FROM sys.database_files WHERE type_desc = 'LOG'
-- DATABASEPROPERTYEX: 'Version' is SQL Server 2022's internal database version (scripts test
-- it to see whether a database exists); NULL for a database that does not.
SELECT DATABASEPROPERTYEX('PF', 'Version') AS version, DATABASEPROPERTYEX('PF', 'Status') AS status,
    DATABASEPROPERTYEX('NoSuchDb', 'Version') AS missing
GO
-- Errors: each statement fails alone and leaves nothing behind.
ALTER DATABASE PF MODIFY FILE (NAME = PF_data, SIZE = 4MB)
ALTER DATABASE PF MODIFY FILE (NAME = Nope, SIZE = 40MB)
ALTER DATABASE PF ADD FILE (NAME = PF_5, FILENAME = 'PF_5.ndf', SIZE = 256KB)
ALTER DATABASE PF ADD FILE (NAME = PF_5, FILENAME = 'PF_5.ndf', SIZE = 5MB, MAXSIZE = 4MB)
ALTER DATABASE PF ADD FILE (NAME = PF_5, FILENAME = 'PF_5.ndf') TO FILEGROUP Nope
ALTER DATABASE PF ADD FILEGROUP FG2
ALTER DATABASE PF REMOVE FILEGROUP [PRIMARY]
ALTER DATABASE Nope SET RECOVERY SIMPLE
ALTER DATABASE PF MODIFY FILE (NAME = PF_2, NEWNAME = PF_two)
ALTER DATABASE PF MODIFY FILEGROUP FG2 READ_ONLY
-- Indirect checkpoints are not built.
ALTER DATABASE PF SET TARGET_RECOVERY_TIME = 60 SECONDS
-- A table's or an index's ON clause naming no filegroup is 1921 (ALTER DATABASE's is 5014).
CREATE TABLE on_nothing (id INT) ON Nope
CREATE TABLE on_primary (id INT PRIMARY KEY) ON [PRIMARY]
CREATE INDEX ix_nothing ON on_primary (id) ON [Nope]
SELECT COUNT(*) AS on_nothing_tables FROM sys.tables WHERE name = 'on_nothing'
DROP TABLE on_primary
GO
-- Sizes are whole numbers: a syntax error, so the batch does not run.
ALTER DATABASE PF MODIFY FILE (NAME = PF_2, SIZE = 1.5GB)
GO
SELECT COUNT(*) AS files FROM sys.database_files
GO
BEGIN TRAN
ALTER DATABASE PF SET RECOVERY SIMPLE
ROLLBACK
CREATE DATABASE PF
CREATE DATABASE Small ON (NAME = Small, FILENAME = 'Small.mdf', SIZE = 2MB)
CREATE DATABASE Sales
GO
USE Sales
SELECT file_id, name, REVERSE(LEFT(REVERSE(physical_name), CHARINDEX('/', REVERSE(physical_name)) - 1)) AS os_file_name, size
FROM sys.database_files
USE master
DROP DATABASE Sales
DROP DATABASE PF
SELECT name FROM sys.databases
GO
-- A physical name with a control character (a tab, a line break) is 5123 with Windows' OS error
-- 123, and nothing is made: such a database was SUSPECT at the next start (the registry of
-- databases keeps one tab-separated line per database).
CREATE DATABASE Tabbed ON (NAME = Tabbed, FILENAME = 'Tab	bed.mdf', SIZE = 8MB)
GO
CREATE DATABASE Broken ON (NAME = Broken, FILENAME = 'Broken.mdf') LOG ON (NAME = Broken_log, FILENAME = 'Broken
log.ldf')
GO
SELECT name FROM sys.databases WHERE name IN ('Tabbed', 'Broken')
GO
