//! The machine and the process's CPU use as Linux reports them, for sys.dm_os_sys_info:
//! SQL Server reads these from Windows (GetLogicalProcessorInformation, GetProcessTimes,
//! CPUID's hypervisor bit); extentdb reads `/proc/cpuinfo`, `/sys/devices/system/node` and
//! `/proc/self/stat`.
//!
//! The mapping:
//! - cpu_count: the `processor` entries; socket_count: the distinct `physical id`s;
//!   cores_per_socket: `cpu cores`; hyperthread_ratio: `siblings` (logical CPUs a socket
//!   exposes), as SQL Server's is the logical CPUs per physical package;
//! - virtual_machine_type: the CPU's `hypervisor` flag (CPUID leaf 1, ECX bit 31, the bit
//!   SQL Server reads) gives HYPERVISOR, else NONE;
//! - numa_node_count: the `nodeN` directories (1 where the kernel has no NUMA support);
//! - sys.dm_os_host_info: host_distribution and host_release are `/etc/os-release`'s NAME and
//!   VERSION_ID;
//! - process_user_time_ms and process_kernel_time_ms: utime and stime of `/proc/self/stat`
//!   (fields 14 and 15, in clock ticks); os_priority_class: its nice value (field 19), below 0
//!   HIGH (128), else NORMAL (32).
//!
//! Deviation: an architecture whose cpuinfo has no `physical id`, `cpu cores` or `siblings`
//! (ARM) reads as one socket whose cores are its logical CPUs.

use std::io;

/// The CPUs as `/proc/cpuinfo` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    pub logical_cpus: u32,
    pub sockets: u32,
    pub cores_per_socket: u32,
    /// Logical CPUs per socket (`siblings`).
    pub logical_per_socket: u32,
    /// The CPU reports that it runs under a hypervisor.
    pub hypervisor: bool,
}

impl CpuTopology {
    /// Reads `/proc/cpuinfo`.
    pub fn read() -> io::Result<CpuTopology> {
        Ok(CpuTopology::parse(&std::fs::read_to_string("/proc/cpuinfo")?))
    }

    /// The topology that a `/proc/cpuinfo` text describes.
    pub fn parse(cpuinfo: &str) -> CpuTopology {
        let mut logical_cpus = 0;
        let mut sockets = std::collections::BTreeSet::new();
        let mut cores_per_socket = None;
        let mut logical_per_socket = None;
        let mut hypervisor = false;
        for line in cpuinfo.lines() {
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match key.trim() {
                "processor" => logical_cpus += 1,
                "physical id" => {
                    sockets.insert(value.to_string());
                }
                "cpu cores" => cores_per_socket = value.parse::<u32>().ok(),
                "siblings" => logical_per_socket = value.parse::<u32>().ok(),
                "flags" => hypervisor |= value.split_whitespace().any(|f| f == "hypervisor"),
                _ => {}
            }
        }
        let logical_cpus = logical_cpus.max(1);
        let sockets = (sockets.len() as u32).max(1);
        let logical_per_socket = logical_per_socket.unwrap_or(logical_cpus / sockets).max(1);
        CpuTopology {
            logical_cpus,
            sockets,
            cores_per_socket: cores_per_socket.unwrap_or(logical_per_socket).max(1),
            logical_per_socket,
            hypervisor,
        }
    }
}

/// The NUMA nodes the kernel lists (1 when it lists none).
pub fn numa_node_count() -> u32 {
    let Ok(entries) = std::fs::read_dir("/sys/devices/system/node") else { return 1 };
    let count = entries
        .filter_map(|e| e.ok())
        .filter(|e| is_node_name(&e.file_name().to_string_lossy()))
        .count();
    (count as u32).max(1)
}

/// `node0`, `node1`, ...
fn is_node_name(name: &str) -> bool {
    name.strip_prefix("node")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The process's CPU time and priority, from `/proc/self/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcessTimes {
    pub user_ms: u64,
    pub kernel_ms: u64,
    pub nice: i32,
}

impl ProcessTimes {
    /// Reads this process's figures now.
    pub fn read() -> io::Result<ProcessTimes> {
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        Ok(ProcessTimes::parse(&stat, rustix::param::clock_ticks_per_second()))
    }

    /// The figures of a `/proc/<pid>/stat` text whose times count `ticks_per_s`.
    pub fn parse(stat: &str, ticks_per_s: u64) -> ProcessTimes {
        // Fields are counted after the command name, which is in parentheses and may hold
        // spaces; the text after it starts with field 3.
        let Some((_, after_name)) = stat.rsplit_once(')') else { return ProcessTimes::default() };
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let field = |number: usize| fields.get(number - 3).and_then(|f| f.parse::<i64>().ok());
        let to_ms = |ticks: Option<i64>| {
            let ticks = ticks.unwrap_or(0).max(0) as u64;
            ticks * 1000 / ticks_per_s.max(1)
        };
        ProcessTimes {
            user_ms: to_ms(field(14)),
            kernel_ms: to_ms(field(15)),
            nice: field(19).unwrap_or(0) as i32,
        }
    }

    /// sys.dm_os_sys_info.os_priority_class: Windows' HIGH_PRIORITY_CLASS (128) for a process
    /// raised above the normal priority, else NORMAL_PRIORITY_CLASS (32).
    pub fn priority_class(&self) -> i32 {
        if self.nice < 0 { 128 } else { 32 }
    }
}

/// The distribution's name and version as `/etc/os-release` gives them (NAME, VERSION_ID):
/// sys.dm_os_host_info's host_distribution and host_release, as SQL Server on Linux shows them
/// ("Ubuntu", "16.04"). Empty where the file or a field is missing.
pub fn os_release() -> (String, String) {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    parse_os_release(&text)
}

/// NAME and VERSION_ID of an os-release text, their quotes taken off.
pub fn parse_os_release(text: &str) -> (String, String) {
    let field = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .map(|value| value.trim().trim_matches(['"', '\'']).to_string())
            .unwrap_or_default()
    };
    (field("NAME"), field("VERSION_ID"))
}

/// Milliseconds since the machine started (CLOCK_MONOTONIC, which Linux counts from boot).
pub fn ms_since_boot() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    now.tv_sec as u64 * 1000 + now.tv_nsec as u64 / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_SOCKETS: &str = "processor\t: 0\nphysical id\t: 0\nsiblings\t: 4\ncpu cores\t: 2\n\
        flags\t\t: fpu sse2 hypervisor\n\nprocessor\t: 1\nphysical id\t: 0\nsiblings\t: 4\n\
        cpu cores\t: 2\n\nprocessor\t: 2\nphysical id\t: 0\n\nprocessor\t: 3\nphysical id\t: 0\n\n\
        processor\t: 4\nphysical id\t: 1\n\nprocessor\t: 5\nphysical id\t: 1\n\n\
        processor\t: 6\nphysical id\t: 1\n\nprocessor\t: 7\nphysical id\t: 1\n";

    #[test]
    fn the_topology_is_cpuinfos_fields() {
        let cpus = CpuTopology::parse(TWO_SOCKETS);
        assert_eq!(cpus.logical_cpus, 8);
        assert_eq!(cpus.sockets, 2);
        assert_eq!(cpus.cores_per_socket, 2);
        assert_eq!(cpus.logical_per_socket, 4, "hyperthread_ratio is siblings");
        assert!(cpus.hypervisor);
    }

    #[test]
    fn cpuinfo_without_topology_fields_is_one_socket_of_its_cpus() {
        let cpus = CpuTopology::parse("processor\t: 0\nBogoMIPS\t: 50\n\nprocessor\t: 1\n");
        let expected = CpuTopology {
            logical_cpus: 2,
            sockets: 1,
            cores_per_socket: 2,
            logical_per_socket: 2,
            hypervisor: false,
        };
        assert_eq!(cpus, expected);
    }

    #[test]
    fn process_times_are_stat_fields_14_15_and_19() {
        let stat = "4242 (extent db) S 1 4242 4242 0 -1 4194560 1500 0 25 0 250 40 0 0 20 -5 9";
        let times = ProcessTimes::parse(stat, 100);
        assert_eq!(times, ProcessTimes { user_ms: 2_500, kernel_ms: 400, nice: -5 });
        assert_eq!(times.priority_class(), 128);
        assert_eq!(ProcessTimes::parse("", 100), ProcessTimes::default());
    }

    #[test]
    fn the_distribution_is_os_releases_name_and_version_id() {
        let text = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n\
                    VERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\n";
        assert_eq!(parse_os_release(text), ("Debian GNU/Linux".into(), "12".into()));
        assert_eq!(parse_os_release("NAME=Alpine\n"), ("Alpine".into(), String::new()));
    }

    #[test]
    fn node_directories_are_counted_by_name() {
        assert!(is_node_name("node0") && is_node_name("node12"));
        assert!(!is_node_name("node") && !is_node_name("nodes") && !is_node_name("online"));
        assert!(numa_node_count() >= 1);
    }

    #[test]
    fn this_machine_has_a_cpu_and_has_been_up() {
        let cpus = CpuTopology::read().expect("/proc/cpuinfo");
        assert!(cpus.logical_cpus >= 1 && cpus.logical_per_socket >= 1);
        assert!(ms_since_boot() > 0);
        let times = ProcessTimes::read().expect("/proc/self/stat");
        assert!(times.priority_class() == 32 || times.priority_class() == 128);
    }
}
