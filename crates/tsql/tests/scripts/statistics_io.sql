-- SET STATISTICS IO: each statement's page reads per table, from the buffer pool's real reads:
-- a cold scan's pages come as read-ahead reads, a warm one's as logical reads only, a seek
-- reads a few pages (a physical read for the page the cold cache lacked).
CREATE DATABASE io;
GO
USE io;
SET NOCOUNT ON;
CREATE TABLE c (k int NOT NULL, pad char(1000) NOT NULL);
DECLARE @k int = 1;
BEGIN TRAN;
WHILE @k <= 3000 BEGIN INSERT c VALUES (@k, 'x'); SET @k += 1; END;
COMMIT;
CREATE TABLE pk (id int PRIMARY KEY, v int);
INSERT pk VALUES (1, 1), (2, 2), (3, 3);
CHECKPOINT;
DBCC DROPCLEANBUFFERS;
GO
SET STATISTICS IO ON;
SELECT COUNT(*) AS n FROM c;
SELECT COUNT(*) AS n FROM c;
SELECT v FROM pk WHERE id = 2;
UPDATE pk SET v = 9 WHERE id = 3;
SET STATISTICS IO OFF;
SELECT COUNT(*) AS quiet FROM c;
GO
USE master;
GO
