-- The buffer pool's memory as DBAs read it: 'max server memory (MB)' in sys.configurations
-- (the golden instance runs with the default, 512 MB), and sys.dm_os_sys_info's target (the
-- pool's frames) and committed memory (the buffers the pool has taken so far).
SELECT configuration_id, name, value, minimum, maximum, value_in_use, is_dynamic, is_advanced
FROM sys.configurations
WHERE name = 'max server memory (MB)'
GO
SELECT committed_target_kb,
       CASE WHEN committed_kb > 0 AND committed_kb <= committed_target_kb THEN 'within target' ELSE 'outside' END AS committed,
       CASE WHEN committed_kb >= (SELECT COUNT(*) * 8 FROM sys.dm_os_buffer_descriptors)
            THEN 'a buffer for every cached page' ELSE 'fewer buffers than cached pages' END AS buffers,
       sql_memory_model_desc,
       CASE WHEN cpu_count >= 1 AND scheduler_count = cpu_count THEN 'one scheduler per CPU' END AS schedulers
FROM sys.dm_os_sys_info
GO
