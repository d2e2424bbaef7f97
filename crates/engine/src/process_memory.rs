//! The process's memory as the operating system reports it, for sys.dm_os_process_memory:
//! SQL Server reads these figures from Windows; extentdb reads Linux's (`/proc/self/status`,
//! `/proc/self/stat`, `/proc/self/smaps_rollup`, `/proc/meminfo`).
//!
//! The mapping, column by column (each is a figure the kernel keeps, none is computed by the
//! engine):
//! - physical_memory_in_use_kb: VmRSS, the resident set (Windows' working set);
//! - large_page_allocations_kb: AnonHugePages, memory backed by transparent huge pages (the
//!   buffer pool's under trace flag 834, [`crate::pool_memory`]);
//! - locked_page_allocations_kb: VmLck;
//! - virtual_address_space_reserved_kb: VmSize; committed: VmRSS + VmSwap (what is mapped to
//!   memory or to swap); available: the user address space less VmSize;
//! - page_fault_count: minor and major faults (`/proc/self/stat` fields 10 and 12);
//! - memory_utilization_percentage: the resident share of the committed memory;
//! - available_commit_limit_kb: CommitLimit less Committed_AS (system-wide, as Windows' commit
//!   limit is).
//!
//! Deviation: the user address space is x86-64's 47-bit one (128 TB) on every platform, where
//! Linux may give more (57-bit paging) or less.

use std::io;

/// The user-mode address space of an x86-64 Linux process: 2^47 bytes.
pub const USER_ADDRESS_SPACE_KB: u64 = 1 << 37;

/// One reading of the process's memory, in KB (faults as a count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    pub resident_kb: u64,
    pub huge_pages_kb: u64,
    pub locked_kb: u64,
    pub virtual_size_kb: u64,
    pub swapped_kb: u64,
    pub page_faults: u64,
    /// CommitLimit less Committed_AS; 0 when the system is over its limit.
    pub available_commit_kb: u64,
}

impl ProcessMemory {
    /// Reads this process's figures now.
    pub fn read() -> io::Result<ProcessMemory> {
        let status = std::fs::read_to_string("/proc/self/status")?;
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        // smaps_rollup is missing on old kernels: no huge pages are then reported.
        let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo")?;
        Ok(ProcessMemory::parse(&status, &stat, &rollup, &meminfo))
    }

    /// The figures from the four files' texts.
    pub fn parse(status: &str, stat: &str, rollup: &str, meminfo: &str) -> ProcessMemory {
        let commit_limit = kb_field(meminfo, "CommitLimit:");
        let committed = kb_field(meminfo, "Committed_AS:");
        ProcessMemory {
            resident_kb: kb_field(status, "VmRSS:"),
            huge_pages_kb: kb_field(rollup, "AnonHugePages:"),
            locked_kb: kb_field(status, "VmLck:"),
            virtual_size_kb: kb_field(status, "VmSize:"),
            swapped_kb: kb_field(status, "VmSwap:"),
            page_faults: page_faults(stat),
            available_commit_kb: commit_limit.saturating_sub(committed),
        }
    }

    /// Resident plus swapped: the memory the process has committed.
    pub fn committed_kb(&self) -> u64 {
        self.resident_kb + self.swapped_kb
    }

    /// The resident share of the committed memory, in whole percent (100 with nothing
    /// committed).
    pub fn utilization_percent(&self) -> u32 {
        match self.committed_kb() {
            0 => 100,
            committed => (self.resident_kb * 100 / committed) as u32,
        }
    }
}

/// The value of a `Name:   1234 kB` line; 0 when the line is missing.
fn kb_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap_or(0)
}

/// minflt + majflt of `/proc/self/stat`: fields 10 and 12, counted after the command name,
/// which is in parentheses and may hold spaces.
fn page_faults(stat: &str) -> u64 {
    let Some((_, after_name)) = stat.rsplit_once(')') else { return 0 };
    // after_name starts with field 3 (state).
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| fields.get(number - 3).and_then(|f| f.parse::<u64>().ok());
    field(10).unwrap_or(0) + field(12).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\textentdb\nVmSize:\t  204800 kB\nVmLck:\t       0 kB\n\
                          VmRSS:\t   51200 kB\nVmSwap:\t   12800 kB\n";
    const STAT: &str = "4242 (extent db) S 1 4242 4242 0 -1 4194560 1500 0 25 0 7 3 0 0 20 0 9";
    const ROLLUP: &str = "Rss:               51200 kB\nAnonHugePages:     40960 kB\n";
    const MEMINFO: &str =
        "MemTotal:  24000000 kB\nCommitLimit:  12000000 kB\nCommitted_AS:   2000000 kB\n";

    #[test]
    fn the_figures_are_the_kernels_fields() {
        let memory = ProcessMemory::parse(STATUS, STAT, ROLLUP, MEMINFO);
        assert_eq!(memory.resident_kb, 51_200);
        assert_eq!(memory.huge_pages_kb, 40_960);
        assert_eq!(memory.virtual_size_kb, 204_800);
        assert_eq!(memory.page_faults, 1_525, "minflt 1500 + majflt 25, past a name with a space");
        assert_eq!(memory.available_commit_kb, 10_000_000);
        assert_eq!(memory.committed_kb(), 64_000);
        assert_eq!(memory.utilization_percent(), 80);
    }

    #[test]
    fn missing_fields_are_zero_and_an_empty_commit_is_fully_resident() {
        let memory = ProcessMemory::parse("", "", "", "");
        assert_eq!(memory, ProcessMemory::default());
        assert_eq!(memory.utilization_percent(), 100);
    }

    #[test]
    fn this_process_has_resident_memory_and_faults() {
        let memory = ProcessMemory::read().expect("/proc");
        assert!(memory.resident_kb > 0 && memory.virtual_size_kb >= memory.resident_kb);
        assert!(memory.page_faults > 0);
    }
}
