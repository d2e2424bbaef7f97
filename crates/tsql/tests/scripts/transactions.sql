-- Transactions: rollback, savepoints, nesting, @@TRANCOUNT, statement-level rollback and
-- XACT_ABORT.
CREATE TABLE acct (id INT PRIMARY KEY, balance INT NOT NULL)
INSERT INTO acct VALUES (1, 100), (2, 50)
GO
BEGIN TRAN
UPDATE acct SET balance = balance - 30 WHERE id = 1
SELECT @@TRANCOUNT AS depth
ROLLBACK
SELECT * FROM acct
GO
BEGIN TRAN
INSERT INTO acct VALUES (3, 10)
SAVE TRAN before_four
INSERT INTO acct VALUES (4, 20)
ROLLBACK TRAN before_four
BEGIN TRAN
SELECT @@TRANCOUNT AS nested
COMMIT
COMMIT
SELECT id FROM acct ORDER BY id
GO
BEGIN TRAN
INSERT INTO acct VALUES (5, 1)
INSERT INTO acct VALUES (5, 2)
INSERT INTO acct VALUES (6, 3)
COMMIT
SELECT id, balance FROM acct WHERE id >= 5
GO
SET XACT_ABORT ON
BEGIN TRAN
INSERT INTO acct VALUES (7, 1)
INSERT INTO acct VALUES (7, 2)
PRINT 'not printed'
GO
SELECT @@TRANCOUNT AS after_abort, COUNT(*) AS sevens FROM acct WHERE id = 7
GO
-- Under XACT_ABORT any statement's run-time error rolls the transaction back, not only a
-- failed INSERT's: here a ROLLBACK TRAN to a name that is no savepoint (6401) and a failed
-- conversion in SET. RAISERROR neither ends the batch nor rolls back; a name error (a compile
-- error in SQL Server) ends the batch and keeps the transaction.
BEGIN TRAN
INSERT INTO acct VALUES (8, 1)
ROLLBACK TRAN no_such_savepoint
PRINT 'not printed'
GO
SELECT @@TRANCOUNT AS after_6401, COUNT(*) AS eights FROM acct WHERE id = 8
GO
BEGIN TRAN
INSERT INTO acct VALUES (9, 1)
DECLARE @n int
SET @n = CONVERT(int, 'nine')
GO
SELECT @@TRANCOUNT AS after_245, COUNT(*) AS nines FROM acct WHERE id = 9
GO
BEGIN TRAN
INSERT INTO acct VALUES (10, 1)
RAISERROR ('raised, not aborting', 16, 1)
SELECT @@TRANCOUNT AS after_raiserror
SELECT id FROM no_such_table
GO
SELECT @@TRANCOUNT AS after_208, COUNT(*) AS tens FROM acct WHERE id = 10
COMMIT
GO
-- SET IMPLICIT_TRANSACTIONS ON: a statement outside a transaction opens one (JDBC's
-- setAutoCommit(false)); ROLLBACK undoes it.
CREATE TABLE implicit_t (id int PRIMARY KEY);
SET IMPLICIT_TRANSACTIONS ON;
INSERT implicit_t VALUES (1);
SELECT @@TRANCOUNT AS open_transactions;
ROLLBACK;
SET IMPLICIT_TRANSACTIONS OFF;
SELECT COUNT(*) AS rows_after_rollback, @@TRANCOUNT AS open_transactions FROM implicit_t;
GO
-- A transaction belongs to the session: after USE, ROLLBACK (to a savepoint too) and COMMIT
-- still reach it (they answered 3903/3902 in master and left it open, locks held).
CREATE DATABASE TxOther ON (NAME = txo, FILENAME = 'txo.mdf', SIZE = 8MB)
  LOG ON (NAME = txo_log, FILENAME = 'txo.ldf', SIZE = 1MB)
GO
USE TxOther
CREATE TABLE moved (id INT PRIMARY KEY)
BEGIN TRAN
INSERT moved VALUES (1)
SAVE TRAN before_two
INSERT moved VALUES (2)
USE master
SELECT @@TRANCOUNT AS depth_in_master, DB_NAME() AS current_db
ROLLBACK TRAN before_two
SELECT @@TRANCOUNT AS depth_after_savepoint
ROLLBACK
SELECT @@TRANCOUNT AS depth_after_rollback
USE TxOther
SELECT COUNT(*) AS rows_after_rollback FROM moved
BEGIN TRAN
INSERT moved VALUES (3)
USE master
COMMIT
SELECT @@TRANCOUNT AS depth_after_commit
USE TxOther
SELECT id AS committed_id FROM moved
USE master
DROP DATABASE TxOther
GO
-- Named transactions: BEGIN TRAN name (sqlparser read only the unnamed form, and a name was
-- a syntax error). ROLLBACK TRAN with the outermost transaction's name ends it; a nested
-- BEGIN TRAN's name is not a transaction's (6401); COMMIT TRAN's name is not checked.
SET XACT_ABORT OFF;
CREATE TABLE named_t (id int);
GO
BEGIN TRAN outer_tran;
INSERT named_t VALUES (1);
BEGIN TRANSACTION inner_tran;
SELECT @@TRANCOUNT AS nested_depth;
ROLLBACK TRAN inner_tran;
SELECT @@TRANCOUNT AS depth_after_6401;
ROLLBACK TRAN outer_tran;
SELECT @@TRANCOUNT AS depth_after_rollback, COUNT(*) AS rows_kept FROM named_t;
GO
BEGIN TRAN kept;
INSERT named_t VALUES (2);
COMMIT TRAN any_name_at_all;
SELECT COUNT(*) AS rows_committed FROM named_t;
GO
-- WITH MARK (for restoring to a mark) is read and kept nowhere; a WITH after an unnamed
-- BEGIN TRAN starts the next statement's CTE.
BEGIN TRAN marked WITH MARK 'before the change';
COMMIT;
BEGIN TRAN;
WITH c AS (SELECT 1 AS x) SELECT x FROM c;
COMMIT;
GO
-- A written name over 32 characters is refused before the batch runs.
BEGIN TRAN abcdefghijabcdefghijabcdefghijabc;
SELECT 'not run' AS x;
GO
-- What an open transaction has logged (sys.dm_tran_database_transactions): records, bytes
-- and the log reserved for its rollback grow with each change; the transaction is listed,
-- with its session, from its first change until it ends.
CREATE TABLE logged_rows (id int PRIMARY KEY, pad char(1000));
BEGIN TRAN demo;
SELECT COUNT(*) AS listed_before_a_change FROM sys.dm_tran_database_transactions
WHERE database_id = DB_ID();
INSERT logged_rows VALUES (1, 'a');
SELECT database_transaction_log_record_count AS records,
       database_transaction_log_bytes_used AS bytes_used,
       database_transaction_log_bytes_reserved AS bytes_reserved,
       database_transaction_state AS state
FROM sys.dm_tran_database_transactions WHERE database_id = DB_ID();
INSERT logged_rows VALUES (2, 'b'), (3, 'c');
SELECT database_transaction_log_record_count AS records,
       database_transaction_log_bytes_used AS bytes_used,
       database_transaction_log_bytes_reserved AS bytes_reserved
FROM sys.dm_tran_database_transactions WHERE database_id = DB_ID();
SELECT a.name, a.transaction_state, s.session_id - @@SPID AS this_session,
       s.open_transaction_count
FROM sys.dm_tran_active_transactions AS a
JOIN sys.dm_tran_session_transactions AS s ON s.transaction_id = a.transaction_id;
COMMIT;
SELECT COUNT(*) AS listed_after_commit FROM sys.dm_tran_database_transactions;
DROP TABLE logged_rows;
GO
