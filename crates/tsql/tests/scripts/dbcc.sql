-- DBCC commands built so far: trace flags at session and instance scope, SQLPERF, LOGINFO,
-- FREEPROCCACHE; any other command is 2526 until it is built.
DBCC TRACEON (3604)
DBCC TRACEON (1165, 3605, -1)
DBCC TRACESTATUS
DBCC TRACEOFF (3605, -1) WITH NO_INFOMSGS
DBCC TRACESTATUS (1165, 3605, 3604)
DBCC TRACEOFF (1165, -1)
DBCC TRACEOFF (3604)
DBCC TRACESTATUS () WITH NO_INFOMSGS
GO
CREATE DATABASE Logs ON (NAME = Logs, FILENAME = 'Logs.mdf', SIZE = 8MB)
    LOG ON (NAME = Logs_log, FILENAME = 'Logs_log.ldf', SIZE = 8MB, FILEGROWTH = 8MB)
GO
DBCC LOGINFO ('Logs') WITH NO_INFOMSGS
SELECT [Database Name] FROM (SELECT 'x' AS [Database Name]) AS t
DBCC SQLPERF (LOGSPACE) WITH NO_INFOMSGS
DBCC SQLPERF ('sys.dm_os_wait_stats', CLEAR)
DBCC FREEPROCCACHE
DBCC NOSUCHTHING
DBCC SQLPERF ('sys.nothing', CLEAR)
GO
-- DBCC OPENTRAN: no open transaction; a transaction that has changed nothing has written no
-- begin record, so it is not listed either; an unknown database is 2520. (The report of an
-- open transaction, whose LSN and start time vary, is checked in system_surfaces.rs.)
DBCC OPENTRAN;
GO
BEGIN TRAN;
DBCC OPENTRAN WITH NO_INFOMSGS;
COMMIT;
GO
-- WITH TABLERESULTS and nothing open: the message, no rows.
DBCC OPENTRAN WITH TABLERESULTS;
GO
DBCC OPENTRAN('no_such_database');
GO
-- DBCC INPUTBUFFER: the session's batch as it was sent; a session that is not connected is
-- 7940.
SELECT 1 AS one;
DBCC INPUTBUFFER(@@SPID) WITH NO_INFOMSGS;
GO
DBCC INPUTBUFFER(32000);
GO
-- DBCC USEROPTIONS: the session's SET options (lock_timeout, XACT_ABORT, NOCOUNT,
-- IMPLICIT_TRANSACTIONS and the isolation level as set), and how the engine always behaves.
DBCC USEROPTIONS;
SET LOCK_TIMEOUT 500;
SET XACT_ABORT ON;
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
DBCC USEROPTIONS WITH NO_INFOMSGS;
SET LOCK_TIMEOUT -1;
SET XACT_ABORT OFF;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SELECT @@LANGUAGE AS language, @@DATEFIRST AS datefirst;
GO
