-- golden: mask-times
-- sp_configure lists the options; the advanced ones only once 'show advanced options' is 1
-- in use, which RECONFIGURE does.
EXEC sp_configure
GO
EXEC sp_configure 'max degree of parallelism'
GO
EXEC sp_configure 'show advanced options', 1
GO
EXEC sp_configure
GO
RECONFIGURE
EXEC sp_configure
GO
-- A name is matched whole, else as a part (LIKE '%name%'): several options are listed, but
-- only one can be set.
EXEC sp_configure 'MAX'
GO
EXEC sp_configure 'max', 2
GO
EXEC sp_configure 'degree', 2
GO
EXEC sp_configure 'max degree of parallelism', -1
GO
EXEC sp_configure 'no such option', 1
GO
-- A dynamic option is in use after RECONFIGURE; a static one (max server memory here) only
-- after a restart.
SELECT configuration_id, name, value, value_in_use, is_dynamic, is_advanced FROM sys.configurations
GO
EXEC sp_configure 'max server memory (MB)', 1024
RECONFIGURE
SELECT name, value, value_in_use FROM sys.configurations
GO
-- A recovery interval above 60 minutes needs WITH OVERRIDE; RECONFIGURE is not allowed in a
-- transaction.
EXEC sp_configure 'recovery interval (min)', 90
GO
RECONFIGURE
GO
RECONFIGURE WITH OVERRIDE
SELECT name, value, value_in_use FROM sys.configurations WHERE configuration_id = 101
GO
BEGIN TRAN
RECONFIGURE
GO
ROLLBACK
GO
RECONFIGURE WITH
GO
-- 'affinity mask' (dynamic) and 'affinity I/O mask' (static) may not name the same CPU
-- unless WITH OVERRIDE (5834). CPU 0 exists on every machine.
EXEC sp_configure 'recovery interval (min)', 0
RECONFIGURE
GO
EXEC sp_configure 'affinity mask', 1
EXEC sp_configure 'affinity I/O mask', 1
GO
RECONFIGURE
GO
SELECT name, value, value_in_use FROM sys.configurations WHERE configuration_id IN (1535, 1536)
GO
RECONFIGURE WITH OVERRIDE
SELECT name, value, value_in_use, is_dynamic FROM sys.configurations WHERE configuration_id IN (1535, 1536)
GO
-- The mask in use brings CPU 0's scheduler online, bound; a scheduler of another CPU goes
-- offline. Back to 0, every scheduler is online.
SELECT scheduler_id, cpu_id, status, is_online FROM sys.dm_os_schedulers WHERE scheduler_id = 0
GO
EXEC sp_configure 'affinity I/O mask', 0
EXEC sp_configure 'affinity mask', 0
RECONFIGURE
SELECT COUNT(*) AS offline FROM sys.dm_os_schedulers WHERE is_online = 0
GO
-- Each change is in the errorlog.
EXEC xp_readerrorlog 0, 1, N'Configuration option'
GO
