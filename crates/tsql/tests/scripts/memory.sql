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
-- The process's memory as the operating system reports it: the resident set holds the pool's
-- committed buffers, the address space reserved holds the resident set, and the process has
-- faulted its memory in.
SELECT CASE WHEN physical_memory_in_use_kb >= (SELECT committed_kb FROM sys.dm_os_sys_info)
            THEN 'resident >= pool committed' ELSE 'resident < pool committed' END AS resident,
       CASE WHEN virtual_address_space_reserved_kb >= physical_memory_in_use_kb
            THEN 'reserved >= resident' ELSE 'reserved < resident' END AS reserved,
       CASE WHEN virtual_address_space_committed_kb >= physical_memory_in_use_kb
            THEN 'committed >= resident' ELSE 'committed < resident' END AS committed,
       total_virtual_address_space_kb,
       CASE WHEN virtual_address_space_available_kb + virtual_address_space_reserved_kb
                 = total_virtual_address_space_kb THEN 'available + reserved = total' END AS available,
       CASE WHEN page_fault_count > 0 THEN 'faults counted' END AS faults,
       CASE WHEN memory_utilization_percentage BETWEEN 1 AND 100 THEN 'a percentage' END AS utilization,
       locked_page_allocations_kb, process_physical_memory_low, process_virtual_memory_low
FROM sys.dm_os_process_memory
GO
-- The buffer pool's memory clerk holds what the pool committed, as the top-clerks query sees it.
SELECT TOP (10) type, name, page_size_in_bytes,
       CASE WHEN SUM(pages_kb) = (SELECT committed_kb FROM sys.dm_os_sys_info)
            THEN 'the pool''s committed memory' END AS pages
FROM sys.dm_os_memory_clerks
GROUP BY type, name, page_size_in_bytes
ORDER BY SUM(pages_kb) DESC
GO
-- Glenn Berry's "Good basic information about OS memory amounts and state": the machine's
-- memory, each figure checked against another rather than shown (they are this machine's).
SELECT CASE WHEN total_physical_memory_kb > 0 THEN 'the machine''s' END AS [Physical Memory (MB)],
       CASE WHEN available_physical_memory_kb BETWEEN 1 AND total_physical_memory_kb THEN 'part of it' END AS [Available Memory (MB)],
       CASE WHEN available_page_file_kb <= total_page_file_kb THEN 'part of the commit limit' END AS [Available Page File (MB)],
       CASE WHEN system_cache_kb >= 0 AND kernel_paged_pool_kb >= 0 AND kernel_nonpaged_pool_kb >= 0 THEN 'read' END AS [System Cache (MB)],
       CASE WHEN system_memory_state_desc IN (N'Available physical memory is high', N'Available physical memory is low',
                                              N'Physical memory usage is steady')
             AND NOT (system_high_memory_signal_state = 1 AND system_low_memory_signal_state = 1)
            THEN 'one state' END AS [System Memory State]
FROM sys.dm_os_sys_memory WITH (NOLOCK) OPTION (RECOMPILE);
GO
