-- Extended Events: seed 002's session (its log growth's zeroing wait and its file size
-- changes into an event file), read back with sys.fn_xe_file_target_read_file and xml's
-- value(); the catalog views and DMVs; SQL Server's errors for bad definitions.
CREATE DATABASE ifi_64
 ON (name = N'ifi_data', filename = 'ifi_64.mdf', size = 8MB, filegrowth = 8MB)
 LOG ON (name = N'ifi_log', filename = 'ifi_64.ldf', size = 8MB, filegrowth = 64MB);
GO
CREATE EVENT SESSION [log_size_changes] ON SERVER
   ADD EVENT sqlos.wait_info_external
     (WHERE ([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')),
   ADD EVENT sqlserver.database_file_size_change
   ADD TARGET package0.event_file(SET filename = N'ifi_log_size_changes');
GO
SELECT name, event_retention_mode_desc, max_dispatch_latency, max_memory, startup_state
FROM sys.server_event_sessions;
SELECT e.event_id, e.package, e.name, e.predicate
FROM sys.server_event_session_events AS e;
SELECT t.target_id, t.package, t.name, f.name AS field, f.value
FROM sys.server_event_session_targets AS t
JOIN sys.server_event_session_fields AS f ON f.object_id = t.target_id;
SELECT COUNT(*) AS running FROM sys.dm_xe_sessions;
GO
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = START;
GO
DECLARE @waits_before bigint = (SELECT waiting_tasks_count FROM sys.dm_os_wait_stats
  WHERE wait_type = N'PREEMPTIVE_OS_WRITEFILEGATHER');
-- Manual growths: the log's is zeroed (IFI is for autogrowths of 64 MB or less).
ALTER DATABASE ifi_64 MODIFY FILE (NAME = N'ifi_log', SIZE = 40MB);
ALTER DATABASE ifi_64 MODIFY FILE (NAME = N'ifi_data', SIZE = 16MB);
SELECT waiting_tasks_count - @waits_before AS zeroing_waits FROM sys.dm_os_wait_stats
  WHERE wait_type = N'PREEMPTIVE_OS_WRITEFILEGATHER';
GO
SELECT s.name, t.target_name, t.execution_count
FROM sys.dm_xe_sessions AS s
JOIN sys.dm_xe_session_targets AS t ON s.address = t.event_session_address;
SELECT object_name, COUNT(*) AS events
FROM sys.fn_xe_file_target_read_file(N'ifi_log_size_changes*.xel', NULL, NULL, NULL)
GROUP BY object_name ORDER BY object_name;
SELECT
  CAST(event_data AS XML).value('(event/data[@name="file_name"]/value)[1]', 'sysname') AS file_name,
  CAST(event_data AS XML).value('(event/data[@name="file_type"]/text)[1]', 'nvarchar(20)') AS file_type,
  CAST(event_data AS XML).value('(event/data[@name="is_automatic"]/value)[1]', 'bit') AS is_automatic,
  CAST(event_data AS XML).value('(event/data[@name="size_change_kb"]/value)[1]', 'bigint') AS size_change_kb,
  CAST(event_data AS XML).value('(event/data[@name="total_size_kb"]/value)[1]', 'bigint') AS total_size_kb,
  CAST(event_data AS XML).value('(event/data[@name="database_name"]/value)[1]', 'sysname') AS database_name
FROM sys.fn_xe_file_target_read_file(N'ifi_log_size_changes*.xel', NULL, NULL, NULL)
WHERE object_name = N'database_file_size_change';
SELECT DISTINCT
  CAST(event_data AS XML).value('(event/data[@name="wait_type"]/text)[1]', 'nvarchar(60)') AS wait_type,
  CAST(event_data AS XML).value('(event/data[@name="opcode"]/text)[1]', 'nvarchar(10)') AS opcode,
  CAST(event_data AS XML).exist('(event/data[@name="duration"]/value)[1]') AS has_duration
FROM sys.fn_xe_file_target_read_file(N'ifi_log_size_changes*.xel', NULL, NULL, NULL)
WHERE object_name = N'wait_info_external';
GO
-- Errors.
CREATE EVENT SESSION [log_size_changes] ON SERVER ADD EVENT sqlserver.database_file_size_change;
GO
CREATE EVENT SESSION bad ON SERVER ADD EVENT sqlserver.no_such_event;
GO
CREATE EVENT SESSION bad ON SERVER ADD EVENT sqlos.wait_info ADD TARGET package0.event_file;
GO
CREATE EVENT SESSION bad ON SERVER ADD EVENT sqlos.wait_info (WHERE [no_such_field] = 1);
GO
CREATE EVENT SESSION bad ON SERVER ADD EVENT sqlos.wait_info WITH (STARTUP_STATE = MAYBE);
GO
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = START;
GO
SELECT * FROM sys.fn_xe_file_target_read_file(N'ifi_log_size_changes*.xel', NULL, N'x.xel', NULL);
GO
SELECT * FROM sys.fn_xe_file_target_read_file(N'nothing_here*.xel', NULL, NULL, NULL);
GO
SELECT CAST(N'<a>' AS XML).value('(a)[1]', 'int');
GO
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = STOP;
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = STOP;
GO
-- A ring buffer and an event counter added to the stopped session, then the session dropped.
ALTER EVENT SESSION [log_size_changes] ON SERVER
  DROP TARGET package0.event_file
  ADD TARGET package0.ring_buffer (SET max_events_limit = 10),
  ADD TARGET package0.event_counter;
ALTER EVENT SESSION [log_size_changes] ON SERVER STATE = START;
ALTER DATABASE ifi_64 MODIFY FILE (NAME = N'ifi_data', SIZE = 24MB);
SELECT t.target_name, t.execution_count,
  CAST(t.target_data AS XML).value('(RingBufferTarget/@eventCount)[1]', 'int') AS ring_events,
  CAST(t.target_data AS XML).value('(//event[@name="database_file_size_change"]/data[@name="total_size_kb"]/value)[1]', 'bigint') AS ring_total_kb,
  CAST(t.target_data AS XML).value('(CounterTarget/Packages/Package/Event[@name="database_file_size_change"]/@count)[1]', 'int') AS counted
FROM sys.dm_xe_session_targets AS t ORDER BY t.target_name;
DROP EVENT SESSION [log_size_changes] ON SERVER;
SELECT COUNT(*) AS sessions FROM sys.server_event_sessions;
SELECT COUNT(*) AS running FROM sys.dm_xe_sessions;
GO
DROP EVENT SESSION [log_size_changes] ON SERVER;
GO
-- The database actions name the database the session is in when the event fires, even after
-- a USE in the same batch (bug fix: the batch's first database was named).
CREATE EVENT SESSION growth_db ON SERVER
  ADD EVENT sqlserver.database_file_size_change (ACTION (sqlserver.database_name, sqlserver.database_id))
  ADD TARGET package0.ring_buffer;
ALTER EVENT SESSION growth_db ON SERVER STATE = START;
GO
USE master;
GO
USE ifi_64;
SELECT DB_NAME(database_id) AS session_database FROM sys.dm_exec_sessions WHERE session_id = @@SPID;
ALTER DATABASE ifi_64 MODIFY FILE (NAME = N'ifi_data', SIZE = 32MB);
USE master;
SELECT CAST(target_data AS XML).value('(RingBufferTarget/event/action[@name="database_name"]/value)[1]', 'sysname') AS action_database_name,
  CAST(target_data AS XML).value('(RingBufferTarget/event/action[@name="database_id"]/value)[1]', 'int') - DB_ID(N'ifi_64') AS action_database_id_minus_ifi_64
FROM sys.dm_xe_session_targets;
DROP EVENT SESSION growth_db ON SERVER;
GO
-- Batches and errors: sql_batch_completed (rows counted under NOCOUNT too, the result) and
-- error_reported, filtered on the batch text with a LIKE comparator. The session starts in a
-- batch of its own, so that the batch defining it (which holds the pattern) is not captured.
CREATE EVENT SESSION batches ON SERVER
  ADD EVENT sqlserver.sql_batch_completed
    (WHERE [sqlserver].[like_i_sql_unicode_string]([batch_text], N'%INSERT dbo.xe_probe%')),
  ADD EVENT sqlserver.error_reported (ACTION (sqlserver.sql_text) WHERE [severity] > 10)
  ADD TARGET package0.ring_buffer;
USE ifi_64;
CREATE TABLE dbo.xe_probe (i int PRIMARY KEY);
GO
ALTER EVENT SESSION batches ON SERVER STATE = START;
GO
SET NOCOUNT ON; INSERT dbo.xe_probe VALUES (1), (2), (3); SET NOCOUNT OFF;
GO
INSERT dbo.xe_probe VALUES (1);
GO
DECLARE @ring nvarchar(max) = (SELECT target_data FROM sys.dm_xe_session_targets);
SELECT CAST(@ring AS XML).value('(RingBufferTarget/@eventCount)[1]', 'int') AS events,
  CAST(@ring AS XML).value('(//event[@name="sql_batch_completed"]/data[@name="row_count"]/value)[1]', 'int') AS first_batch_rows,
  CAST(@ring AS XML).value('(//event[@name="sql_batch_completed"]/data[@name="result"]/text)[1]', 'varchar(10)') AS first_result,
  CAST(@ring AS XML).value('(//event[@name="sql_batch_completed"]/data[@name="result"]/text)[2]', 'varchar(10)') AS second_result,
  CAST(@ring AS XML).value('(//event[@name="error_reported"]/data[@name="error_number"]/value)[1]', 'int') AS error_number,
  CAST(@ring AS XML).value('(//event[@name="error_reported"]/data[@name="destination"]/value)[1]', 'varchar(10)') AS destination,
  CAST(@ring AS XML).value('(//event[@name="error_reported"]/action[@name="sql_text"]/value)[1]', 'varchar(60)') AS sql_text;
-- The usual way to read a ring buffer: its events as rows with nodes(), fields with value().
SELECT q.e.value('(@name)[1]', 'sysname') AS event_name,
  q.e.value('(data[@name="row_count"]/value)[1]', 'int') AS row_count,
  e.value('(data[@name="result"]/text)[1]', 'varchar(10)') AS result,
  e.value('(data[@name="error_number"]/value)[1]', 'int') AS error_number,
  e.exist('action[@name="sql_text"]') AS has_sql_text
FROM (SELECT CAST(t.target_data AS XML) AS target_data
      FROM sys.dm_xe_session_targets AS t
      JOIN sys.dm_xe_sessions AS s ON s.address = t.event_session_address
      WHERE s.name = N'batches' AND t.target_name = N'ring_buffer') AS x
CROSS APPLY x.target_data.nodes('RingBufferTarget/event') AS q(e);
DROP EVENT SESSION batches ON SERVER;
GO
SELECT name, object_type FROM sys.dm_xe_objects WHERE object_type IN ('event', 'target') ORDER BY object_type, name;
SELECT map_key, map_value FROM sys.dm_xe_map_values WHERE name = 'database_file_type';
GO
