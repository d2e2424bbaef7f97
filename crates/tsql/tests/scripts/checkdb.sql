-- DBCC CHECKDB and CHECKTABLE on a sound database: the system tables, then user tables by
-- object id, each with its row and data-page counts; the summaries; the options that change
-- what is printed; and SQL Server's answers to what is not built or not there. (Damage and
-- its errors are in tests/checkdb.rs, which changes pages on disk.)
SET NOCOUNT ON
CREATE DATABASE Shop
GO
USE Shop
CREATE TABLE Orders (OrderId INT PRIMARY KEY, Customer VARCHAR(40), Amount DECIMAL(10, 2))
CREATE INDEX IX_Orders_Customer ON Orders (Customer)
CREATE TABLE AuditTrail (At INT, Note CHAR(200))
DECLARE @i INT = 1
WHILE @i <= 500
BEGIN
  INSERT Orders VALUES (@i, 'customer ' + CAST(@i % 37 AS VARCHAR(10)), @i * 1.25)
  INSERT AuditTrail VALUES (@i, 'order ' + CAST(@i AS VARCHAR(10)))
  SET @i += 1
END
DELETE Orders WHERE OrderId % 10 = 0
GO
DBCC CHECKDB
GO
-- Nothing found and NO_INFOMSGS: nothing printed at all.
DBCC CHECKDB (Shop) WITH NO_INFOMSGS
-- PHYSICAL_ONLY: the header and the summary only.
DBCC CHECKDB (0) WITH PHYSICAL_ONLY, MAXDOP = 1
DBCC CHECKTABLE ('Orders')
DBCC CHECKTABLE ('dbo.AuditTrail', NOINDEX) WITH ALL_ERRORMSGS
GO
DBCC CHECKDB (Shop, REPAIR_REBUILD)
GO
DBCC CHECKDB WITH ESTIMATEONLY
GO
DBCC CHECKDB WITH NO_SUCH_OPTION
GO
DBCC CHECKTABLE ('Missing')
GO
DBCC CHECKDB ('NoSuchDatabase')
GO
DBCC CHECKDB (999)
GO
DBCC CHECKTABLE
GO
DBCC CHECKDB (Shop) WITH PHYSICAL_ONLY, DATA_PURITY
GO
-- DBCC CHECKFILEGROUP: the allocation checks of the filegroup's files, then the tables whose
-- heap or clustered index is in it, each with its nonclustered indexes in the same filegroup
-- (an index in another filegroup is not checked: its CHECKFILEGROUP checks neither it nor its
-- table); the system tables with PRIMARY, where they are.
ALTER DATABASE Shop ADD FILEGROUP Archive
ALTER DATABASE Shop ADD FILE (NAME = Archive1, FILENAME = 'Shop_Archive1.ndf', SIZE = 2MB) TO FILEGROUP Archive
GO
CREATE TABLE OldOrders (OrderId INT PRIMARY KEY, Customer VARCHAR(40)) ON Archive
CREATE INDEX IX_OldOrders_Customer ON OldOrders (Customer) ON [PRIMARY]
CREATE INDEX IX_Orders_Amount ON Orders (Amount) ON Archive
INSERT OldOrders SELECT OrderId, Customer FROM Orders WHERE OrderId < 100
GO
DBCC CHECKFILEGROUP (Archive)
DBCC CHECKFILEGROUP (2, NOINDEX) WITH NO_INFOMSGS
DBCC CHECKFILEGROUP (0) WITH PHYSICAL_ONLY
GO
DBCC CHECKFILEGROUP ('NoSuchFilegroup')
GO
DBCC CHECKFILEGROUP (9)
GO
ALTER DATABASE Shop SET OFFLINE
GO
USE master
ALTER DATABASE Shop SET OFFLINE
DBCC CHECKDB (Shop)
GO
