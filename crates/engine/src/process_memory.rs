//! The process's memory as the operating system reports it, for sys.dm_os_process_memory
//! (and the machine's, for sys.dm_os_sys_memory: [`SystemMemory`]):
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

/// The machine's memory as Linux reports it, for sys.dm_os_sys_memory (`/proc/meminfo` and
/// `/proc/zoneinfo`), in KB.
///
/// The mapping: total and available physical memory are MemTotal and MemAvailable; the page
/// file's total is the commit limit (CommitLimit, as Windows reports its commit limit) and its
/// available part what is not committed (CommitLimit less Committed_AS); the system cache is
/// the page cache (Cached plus Buffers); the kernel's paged and nonpaged pools are its
/// reclaimable and unreclaimable slab (SReclaimable, SUnreclaim), the memory the kernel can and
/// cannot give back. The low and high memory signals are the kernel's own thresholds for
/// reclaim: free pages at or below the zones' low watermarks is low (kswapd is woken), above
/// their high watermarks is high, in between neither (SQL Server reads Windows' memory resource
/// notifications, whose thresholds are Windows' own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemMemory {
    pub total_kb: u64,
    pub available_kb: u64,
    pub commit_limit_kb: u64,
    pub commit_available_kb: u64,
    pub cache_kb: u64,
    pub kernel_reclaimable_kb: u64,
    pub kernel_unreclaimable_kb: u64,
    pub free_pages: u64,
    pub low_watermark_pages: u64,
    pub high_watermark_pages: u64,
}

impl SystemMemory {
    /// Reads the machine's figures now.
    pub fn read() -> io::Result<SystemMemory> {
        let meminfo = std::fs::read_to_string("/proc/meminfo")?;
        // zoneinfo is missing in some containers: no signal is then raised.
        let zoneinfo = std::fs::read_to_string("/proc/zoneinfo").unwrap_or_default();
        Ok(SystemMemory::parse(&meminfo, &zoneinfo))
    }

    /// The figures from the two files' texts.
    pub fn parse(meminfo: &str, zoneinfo: &str) -> SystemMemory {
        let commit_limit_kb = kb_field(meminfo, "CommitLimit:");
        let (free_pages, low_watermark_pages, high_watermark_pages) = zone_pages(zoneinfo);
        SystemMemory {
            total_kb: kb_field(meminfo, "MemTotal:"),
            available_kb: kb_field(meminfo, "MemAvailable:"),
            commit_limit_kb,
            commit_available_kb: commit_limit_kb.saturating_sub(kb_field(meminfo, "Committed_AS:")),
            cache_kb: kb_field(meminfo, "Cached:") + kb_field(meminfo, "Buffers:"),
            kernel_reclaimable_kb: kb_field(meminfo, "SReclaimable:"),
            kernel_unreclaimable_kb: kb_field(meminfo, "SUnreclaim:"),
            free_pages,
            low_watermark_pages,
            high_watermark_pages,
        }
    }

    /// The kernel would reclaim memory now: free pages at or below the low watermarks.
    pub fn is_low(&self) -> bool {
        self.low_watermark_pages > 0 && self.free_pages <= self.low_watermark_pages
    }

    /// Free pages above the high watermarks, where the kernel stops reclaiming.
    pub fn is_high(&self) -> bool {
        self.high_watermark_pages > 0 && self.free_pages > self.high_watermark_pages
    }
}

/// The zones' free pages and their low and high watermarks, summed over `/proc/zoneinfo`.
fn zone_pages(zoneinfo: &str) -> (u64, u64, u64) {
    let (mut free, mut low, mut high) = (0, 0, 0);
    for line in zoneinfo.lines() {
        let mut words = line.split_whitespace();
        let (Some(first), Some(second)) = (words.next(), words.next()) else { continue };
        let number = |word: Option<&str>| word.and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
        match (first, second) {
            ("pages", "free") => free += number(words.next()),
            ("low", value) => low += number(Some(value)),
            ("high", value) => high += number(Some(value)),
            _ => {}
        }
    }
    (free, low, high)
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

    const ZONEINFO: &str = "Node 0, zone      DMA\n  pages free     3840\n        min      10\n\
        low      13\n        high     16\n        spanned  4095\nNode 0, zone   Normal\n\
  pages free     2000\n        min      1000\n        low      1500\n        high     2500\n\
        protection: (0, 0, 0)\n";

    #[test]
    fn system_memory_is_meminfos_fields_and_the_zones_watermarks() {
        let meminfo = "MemTotal:  24000000 kB\nMemFree: 900 kB\nMemAvailable:  20000000 kB\n\
                       Buffers:  8000 kB\nCached:  800000 kB\nSReclaimable:  300000 kB\n\
                       SUnreclaim:  50000 kB\nCommitLimit:  12000000 kB\n\
                       Committed_AS:   2000000 kB\n";
        let memory = SystemMemory::parse(meminfo, ZONEINFO);
        assert_eq!(memory.total_kb, 24_000_000);
        assert_eq!(memory.available_kb, 20_000_000);
        assert_eq!((memory.commit_limit_kb, memory.commit_available_kb), (12_000_000, 10_000_000));
        assert_eq!(memory.cache_kb, 808_000, "Cached, not SwapCached, plus Buffers");
        assert_eq!(
            (memory.kernel_reclaimable_kb, memory.kernel_unreclaimable_kb),
            (300_000, 50_000)
        );
        assert_eq!(
            (memory.free_pages, memory.low_watermark_pages, memory.high_watermark_pages),
            (5_840, 1_513, 2_516),
            "the zones' sums; min and protection are not watermarks counted"
        );
        assert!(memory.is_high() && !memory.is_low());
    }

    #[test]
    fn the_signals_follow_free_pages_past_the_watermarks() {
        let at = |free: u64| SystemMemory {
            free_pages: free,
            low_watermark_pages: 100,
            high_watermark_pages: 300,
            ..SystemMemory::default()
        };
        assert!(at(100).is_low() && !at(100).is_high());
        assert!(!at(200).is_low() && !at(200).is_high(), "between the marks: steady");
        assert!(!at(301).is_low() && at(301).is_high());
        assert!(!SystemMemory::default().is_low() && !SystemMemory::default().is_high());
    }

    #[test]
    fn this_process_has_resident_memory_and_faults() {
        let memory = ProcessMemory::read().expect("/proc");
        assert!(memory.resident_kb > 0 && memory.virtual_size_kb >= memory.resident_kb);
        assert!(memory.page_faults > 0);
    }
}
