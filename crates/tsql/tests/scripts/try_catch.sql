-- golden: mask-times
-- TRY/CATCH: errors go to the CATCH block with ERROR_NUMBER() and the rest; THROW raises and
-- re-raises; RAISERROR of severity 11+ is caught; errors inside CATCH reach the client.
CREATE TABLE t (id INT PRIMARY KEY)
INSERT t VALUES (1)
GO
BEGIN TRY
    INSERT t VALUES (1)
    SELECT 'not reached' AS x
END TRY
BEGIN CATCH
    SELECT ERROR_NUMBER() AS number, ERROR_SEVERITY() AS severity, ERROR_STATE() AS state,
           ERROR_LINE() AS line, ERROR_PROCEDURE() AS proc_name
    PRINT ERROR_MESSAGE()
END CATCH
SELECT ERROR_NUMBER() AS outside_catch, @@ERROR AS last_error
GO
BEGIN TRY
    SELECT CAST('abc' AS INT)
END TRY
BEGIN CATCH
    PRINT 'caught ' + CAST(ERROR_NUMBER() AS VARCHAR(10)) + ': ' + ERROR_MESSAGE()
END CATCH
PRINT 'the batch goes on after a caught conversion error'
GO
BEGIN TRY
    RAISERROR('custom %d', 16, 3, 42)
END TRY
BEGIN CATCH
    SELECT ERROR_NUMBER() AS number, ERROR_MESSAGE() AS message, ERROR_STATE() AS state
END CATCH
BEGIN TRY
    RAISERROR('only information', 10, 1)
    PRINT 'severity 10 is not an error'
END TRY
BEGIN CATCH
    PRINT 'not reached'
END CATCH
GO
-- A transaction in TRY, rolled back in CATCH.
BEGIN TRY
    BEGIN TRAN
    INSERT t VALUES (2)
    INSERT t VALUES (2)
    COMMIT
END TRY
BEGIN CATCH
    SELECT @@TRANCOUNT AS open_trans, XACT_STATE() AS xact_state
    IF @@TRANCOUNT > 0 ROLLBACK
END CATCH
SELECT COUNT(*) AS rows_now FROM t
GO
-- Under XACT_ABORT the error dooms the transaction: the CATCH block finds it open but
-- uncommittable (XACT_STATE() -1); a change or a COMMIT is 3930; ROLLBACK ends it.
SET XACT_ABORT ON
BEGIN TRY
    BEGIN TRAN
    INSERT t VALUES (3)
    INSERT t VALUES (3)
    COMMIT
END TRY
BEGIN CATCH
    SELECT @@TRANCOUNT AS open_trans, XACT_STATE() AS xact_state, ERROR_NUMBER() AS error
    SELECT COUNT(*) AS rows_readable FROM t
    BEGIN TRY
        INSERT t VALUES (4)
    END TRY
    BEGIN CATCH
        PRINT 'a change: ' + CAST(ERROR_NUMBER() AS VARCHAR(10))
    END CATCH
    BEGIN TRY
        COMMIT
    END TRY
    BEGIN CATCH
        PRINT 'COMMIT: ' + CAST(ERROR_NUMBER() AS VARCHAR(10))
    END CATCH
    ROLLBACK
END CATCH
SELECT @@TRANCOUNT AS open_trans, COUNT(*) AS rows_now FROM t
GO
-- A doomed transaction the CATCH block leaves open is rolled back at the end of the batch
-- (3998).
BEGIN TRY
    BEGIN TRAN
    INSERT t VALUES (5)
    INSERT t VALUES (5)
END TRY
BEGIN CATCH
    SELECT XACT_STATE() AS xact_state
END CATCH
GO
SELECT @@TRANCOUNT AS open_trans, COUNT(*) AS rows_now FROM t
GO
-- A table variable whose DECLARE the error skipped is there, empty, for the CATCH block of a
-- doomed transaction (table variables are outside transactions).
BEGIN TRY
    BEGIN TRAN
    INSERT t VALUES (6)
    INSERT t VALUES (6)
    DECLARE @notes TABLE (note varchar(20))
END TRY
BEGIN CATCH
    SELECT XACT_STATE() AS xact_state, COUNT(*) AS notes FROM @notes
    ROLLBACK
END CATCH
SET XACT_ABORT OFF
GO
-- Nested TRY, THROW to re-raise, and an error inside CATCH.
BEGIN TRY
    BEGIN TRY
        THROW 50001, 'inner failure', 7
    END TRY
    BEGIN CATCH
        PRINT 'inner catch: ' + ERROR_MESSAGE()
        THROW
    END CATCH
END TRY
BEGIN CATCH
    SELECT ERROR_NUMBER() AS outer_number, ERROR_STATE() AS outer_state
END CATCH
GO
BEGIN TRY
    SELECT 1 / 0
END TRY
BEGIN CATCH
    SELECT 1 / 0 AS in_catch
END CATCH
PRINT 'an error inside CATCH reaches the client; the batch goes on'
GO
THROW 50002, 'thrown outside TRY ends the batch', 1
PRINT 'not reached'
GO
THROW
GO
THROW 123, 'too small', 1
GO
-- An error in a procedure called from TRY is caught, with the procedure's name.
CREATE PROC Fails AS INSERT t VALUES (1)
GO
BEGIN TRY
    EXEC Fails
END TRY
BEGIN CATCH
    SELECT ERROR_NUMBER() AS number, ERROR_PROCEDURE() AS proc_name, ERROR_LINE() AS line
END CATCH
GO
-- A name error of the TRY block's own level is not caught (SQL Server raises it at compile).
BEGIN TRY
    SELECT * FROM NoSuchTable
END TRY
BEGIN CATCH
    PRINT 'not reached'
END CATCH
GO
-- RAISERROR above severity 18 needs WITH LOG (2754, and nothing raised); WITH LOG also writes
-- the error to the errorlog, at any severity.
RAISERROR('too severe', 19, 1)
GO
RAISERROR('written to the errorlog', 16, 5) WITH LOG
GO
RAISERROR('information, logged', 10, 2) WITH LOG
GO
EXEC xp_readerrorlog 0, 1, N'errorlog'
EXEC xp_readerrorlog 0, 1, N'logged'
GO
