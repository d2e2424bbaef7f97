-- SET LOCK_TIMEOUT and @@LOCK_TIMEOUT, SET DEADLOCK_PRIORITY, and KILL's answers when it
-- cannot end a session. (Ending another session, a lock wait that times out and a deadlock's
-- victim need two sessions: see tests/concurrency.rs and the TDS tests.)
SELECT @@LOCK_TIMEOUT AS default_timeout;
SET LOCK_TIMEOUT 1500;
SELECT @@LOCK_TIMEOUT AS after_set;
DECLARE @none int = 0;
SET LOCK_TIMEOUT @none;
SELECT @@LOCK_TIMEOUT AS from_variable;
SET LOCK_TIMEOUT -1;
SELECT @@LOCK_TIMEOUT AS back_to_wait_forever;
GO
SET LOCK_TIMEOUT abc;
GO
-- A procedure's SET LOCK_TIMEOUT lasts until it returns.
CREATE PROCEDURE short_waits AS
BEGIN
    SET LOCK_TIMEOUT 10;
    SELECT @@LOCK_TIMEOUT AS inside_procedure;
END
GO
EXEC short_waits;
SELECT @@LOCK_TIMEOUT AS after_procedure;
GO
-- With no other session to wait for, a lock is granted at once whatever the timeout.
SET LOCK_TIMEOUT 0;
CREATE TABLE account (id int PRIMARY KEY, balance money);
INSERT account VALUES (1, 10.00);
UPDATE account SET balance = balance + 5 WHERE id = 1;
SELECT balance FROM account;
SET LOCK_TIMEOUT -1;
GO
SELECT lock_timeout, deadlock_priority FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
SET DEADLOCK_PRIORITY LOW;
SELECT deadlock_priority AS low FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
SET DEADLOCK_PRIORITY HIGH;
SELECT deadlock_priority AS high FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
DECLARE @p int = -10;
SET DEADLOCK_PRIORITY @p;
SELECT deadlock_priority AS from_variable FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
SET DEADLOCK_PRIORITY NORMAL;
SELECT deadlock_priority AS normal FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
GO
SET DEADLOCK_PRIORITY 11;
GO
SET DEADLOCK_PRIORITY MEDIUM;
GO
-- SET TRANSACTION ISOLATION LEVEL: READ UNCOMMITTED and NOLOCK read without shared locks;
-- SNAPSHOT needs row versions, which no database here allows (3952 at the first read).
SELECT transaction_isolation_level AS default_level FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED;
SELECT balance FROM account;
SELECT transaction_isolation_level AS read_uncommitted FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
SELECT balance FROM account WITH (NOLOCK);
-- The deprecated form without WITH: one hint alone, after the name or its alias.
SELECT a.balance FROM account a (NOLOCK) JOIN account AS b (READCOMMITTED) ON a.id = b.id;
SELECT a.balance FROM account AS a, account b (NOLOCK) WHERE a.id = b.id;
-- A column list, or a function's argument, of one column named as a hint is not a hint.
CREATE TABLE hint_words (nowait INT, rowlock INT);
INSERT INTO hint_words (nowait) VALUES (1);
INSERT hint_words (rowlock) VALUES (2);
SELECT COUNT(nowait) AS nowaits, COUNT(rowlock) AS rowlocks FROM hint_words;
DROP TABLE hint_words;
GO
CREATE PROCEDURE repeatable AS
BEGIN
    SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
    SELECT transaction_isolation_level AS inside_procedure FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
END
GO
EXEC repeatable;
SELECT transaction_isolation_level AS after_procedure FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
GO
SET TRANSACTION ISOLATION LEVEL SNAPSHOT;
SELECT balance FROM account;
GO
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
SELECT balance FROM account;
GO
KILL 0;
GO
KILL -3;
GO
KILL 4;
GO
KILL 999;
GO
KILL 999 WITH STATUSONLY;
GO
DECLARE @kill nvarchar(50) = N'KILL ' + CAST(@@SPID AS nvarchar(10));
EXEC (@kill);
GO
BEGIN TRAN;
KILL 999;
ROLLBACK;
GO
KILL 'D5E2A8F3-1234-4C1B-9E6B-0123456789AB';
GO
KILL 'D5E2A8F3-1234-4C1B-9E6B-0123456789AB' WITH STATUSONLY;
GO
KILL @@SPID;
GO
PRINT 'the session is still here';
