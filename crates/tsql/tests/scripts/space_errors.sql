-- A full filegroup (1105) and a full log (9002) through T-SQL, caught with TRY/CATCH.
CREATE DATABASE Tiny ON (NAME = Tiny, FILENAME = 'Tiny.mdf', SIZE = 3MB, FILEGROWTH = 0)
    LOG ON (NAME = Tiny_log, FILENAME = 'Tiny_log.ldf', SIZE = 16MB, FILEGROWTH = 16MB)
GO
USE Tiny
CREATE TABLE Filler (id INT IDENTITY PRIMARY KEY, pad CHAR(4000) DEFAULT 'x')
SET NOCOUNT ON
DECLARE @i INT = 0
WHILE @i < 2000
BEGIN
    BEGIN TRY
        INSERT Filler DEFAULT VALUES
    END TRY
    BEGIN CATCH
        PRINT CAST(ERROR_NUMBER() AS VARCHAR(10)) + ' (severity ' + CAST(ERROR_SEVERITY() AS VARCHAR(10)) + '): ' + ERROR_MESSAGE()
        BREAK
    END CATCH
    SET @i += 1
END
SELECT COUNT(*) AS rows_in, FILEPROPERTY('Tiny', 'SpaceUsed') AS pages_used FROM Filler
GO
CREATE DATABASE SmallLog ON (NAME = SmallLog, FILENAME = 'SmallLog.mdf', SIZE = 64MB)
    LOG ON (NAME = SmallLog_log, FILENAME = 'SmallLog_log.ldf', SIZE = 2MB, FILEGROWTH = 0)
GO
USE SmallLog
CREATE TABLE Big (id INT IDENTITY PRIMARY KEY, pad CHAR(4000) DEFAULT 'x')
SET NOCOUNT ON
BEGIN TRAN
DECLARE @i INT = 0
WHILE @i < 5000
BEGIN
    BEGIN TRY
        INSERT Big DEFAULT VALUES
    END TRY
    BEGIN CATCH
        PRINT CAST(ERROR_NUMBER() AS VARCHAR(10)) + ': ' + ERROR_MESSAGE()
        BREAK
    END CATCH
    SET @i += 1
END
SELECT log_reuse_wait_desc FROM sys.databases WHERE name = 'SmallLog'
ROLLBACK
SELECT COUNT(*) AS after_rollback FROM Big
GO
