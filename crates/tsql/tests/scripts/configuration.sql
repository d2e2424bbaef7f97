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
-- Each change is in the errorlog.
EXEC xp_readerrorlog 0, 1, N'Configuration option'
GO
