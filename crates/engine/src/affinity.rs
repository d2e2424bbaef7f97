//! Processor affinity: which CPUs the engine's threads may run on ('affinity mask' and
//! 'affinity I/O mask', sp_configure options 1535 and 1536).
//!
//! What it reproduces: with 'affinity mask' 0 (the default) the operating system places and
//! moves every thread. A nonzero mask is a bitmap of CPUs (bit 0 is CPU 0): the schedulers
//! of those CPUs are online and each binds the workers that run on it to its CPU; the others
//! go offline and take no new worker ([`crate::scheduler`]). 'affinity I/O mask' binds the
//! threads that do the engine's disk I/O to its CPUs: the log writer and the lazy writer, as
//! SQL Server's I/O affinity tasks, and (a deviation) the checkpoint task. RECONFIGURE checks
//! the masks: a CPU the machine does not have is 5832, even WITH OVERRIDE; a CPU in both
//! masks is 5834 unless WITH OVERRIDE. Sources: Microsoft Docs, "affinity mask Server
//! Configuration Option" and "affinity Input-Output mask Server Configuration Option".
//!
//! Why a DBA sets them, and what this machine shows: a thread that moves between CPUs reloads
//! each one's caches, and a CPU that takes the disk's interrupts lends its time to their
//! completions. Seed 002's run took 1.14x less time (median of six) with its one inserting
//! session bound away from the CPU that takes the disk's interrupts and the I/O threads bound
//! to that one (docs/benchmarks.md).
//!
//! Deviations:
//! - SQL Server's checkpoint task stays on its scheduler and hands its writes to I/O threads
//!   on the I/O CPUs; here the checkpoint thread itself runs there (its work is its writes:
//!   page checksums and write calls).
//! - Only the first 32 CPUs can be named (no 'affinity64 mask'), and there is no
//!   `ALTER SERVER CONFIGURATION SET PROCESS AFFINITY`. On systems other than Linux the masks
//!   are checked and shown but bind nothing.
//! - Scheduler n belongs to the process's CPU n (modulo their count, with the `-P<n>`
//!   startup option's extra schedulers); a mask may name only CPUs the process may use.

use crate::error::SqlError;

/// The CPUs a mask names, lowest first (bit i is CPU i).
pub fn cpus_of_mask(mask: i32) -> Vec<usize> {
    (0..32).filter(|cpu| mask_names_cpu(mask, *cpu)).collect()
}

/// Whether `mask` names `cpu` (only CPUs 0-31 can be named).
pub fn mask_names_cpu(mask: i32, cpu: usize) -> bool {
    cpu < 32 && (mask as u32) & (1 << cpu) != 0
}

/// RECONFIGURE's check of the masks against the CPUs `available` to the process: 5832 for a
/// CPU that is not (WITH OVERRIDE or not), 5834 for a CPU in both masks unless WITH OVERRIDE.
pub fn check_masks(
    affinity_mask: i32,
    io_affinity_mask: i32,
    available: &[usize],
    with_override: bool,
) -> Result<(), SqlError> {
    let beyond = |mask: i32| cpus_of_mask(mask).iter().any(|cpu| !available.contains(cpu));
    if beyond(affinity_mask) || beyond(io_affinity_mask) {
        return Err(SqlError::new(
            5832,
            16,
            1,
            "The affinity mask specified does not match the CPU mask on this system.",
        ));
    }
    if affinity_mask & io_affinity_mask != 0 && !with_override {
        return Err(SqlError::new(
            5834,
            16,
            1,
            "The affinity mask specified conflicts with the IO affinity mask specified. Use the override option to force this configuration.",
        ));
    }
    Ok(())
}

/// Binds the calling thread to `cpus` (an empty list: every CPU of [`process_cpus`], the
/// operating system's choice again). False if the operating system refused or cannot bind,
/// or a CPU number is beyond what a CPU set holds; placement is never part of a result.
pub fn bind_current_thread(cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    {
        let mut set = rustix::thread::CpuSet::new();
        for cpu in if cpus.is_empty() { process_cpus() } else { cpus } {
            if *cpu >= rustix::thread::CpuSet::MAX_CPU {
                return false;
            }
            set.set(*cpu);
        }
        rustix::thread::sched_setaffinity(None, &set).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        false
    }
}

/// Binds the calling I/O thread (lazy writer, log writer, checkpoint) to the 'affinity I/O
/// mask' CPUs in use; an empty list leaves it where the OS places it.
pub fn bind_io_thread(io_cpus: &[usize]) {
    if !io_cpus.is_empty() {
        bind_current_thread(io_cpus);
    }
}

/// The CPUs the calling thread may run on (None where that cannot be read).
pub fn current_thread_cpus() -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        let set = rustix::thread::sched_getaffinity(None).ok()?;
        Some((0..rustix::thread::CpuSet::MAX_CPU).filter(|cpu| set.is_set(*cpu)).collect())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The CPUs the process may run on, as the first caller's thread could (an instance asks at
/// its start, before it binds any thread; a bound thread's own view would be its binding).
pub fn process_cpus() -> &'static [usize] {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CPUS.get_or_init(|| {
        current_thread_cpus()
            .filter(|cpus| !cpus.is_empty())
            .unwrap_or_else(|| (0..fallback_cpu_count()).collect())
    })
}

fn fallback_cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_names_its_cpus_lowest_first() {
        assert_eq!(cpus_of_mask(0), Vec::<usize>::new());
        assert_eq!(cpus_of_mask(38), vec![1, 2, 5], "0x26, Microsoft Docs' example");
        assert_eq!(cpus_of_mask(-1).len(), 32, "every bit of the int");
        assert!(mask_names_cpu(-1, 31) && !mask_names_cpu(2, 0) && mask_names_cpu(2, 1));
        assert!(!mask_names_cpu(-1, 32), "CPU 32 and above cannot be named");
    }

    #[test]
    fn reconfigure_refuses_a_missing_cpu_always_and_an_overlap_without_override() {
        assert!(check_masks(1, 2, &[0, 1], false).is_ok());
        assert!(check_masks(0, 0, &[0], false).is_ok());
        let missing = check_masks(4, 0, &[0, 1], true).expect_err("CPU 2 of 2");
        assert_eq!((missing.number, missing.severity, missing.state), (5832, 16, 1));
        assert!(check_masks(4, 8, &[2, 3], false).is_ok(), "CPUs 2 and 3 of a cpuset");
        let missing_io = check_masks(4, 16, &[2, 3], false).expect_err("the I/O mask too");
        assert_eq!(missing_io.number, 5832, "CPU 4 is not the process's");
        let overlap = check_masks(3, 2, &[0, 1], false).expect_err("CPU 1 in both");
        assert_eq!(overlap.number, 5834);
        assert!(overlap.message.ends_with("Use the override option to force this configuration."));
        assert!(check_masks(3, 2, &[0, 1], true).is_ok(), "WITH OVERRIDE takes the overlap");
        let unavailable = check_masks(1, 0, &[2, 3], true).expect_err("CPU 0 not ours");
        assert_eq!(unavailable.number, 5832, "a CPU outside the process's set");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_bound_thread_runs_only_on_its_cpus_and_unbinding_gives_them_all_back() {
        let all = process_cpus().to_vec();
        std::thread::spawn(move || {
            assert!(bind_current_thread(&[all[0]]));
            assert_eq!(current_thread_cpus(), Some(vec![all[0]]));
            assert_eq!(rustix::thread::sched_getcpu(), all[0]);
            assert!(bind_current_thread(&[]));
            assert_eq!(current_thread_cpus(), Some(all.clone()), "every CPU back");
            // A CPU the machine lacks, and one past what a CPU set can name: refused, the
            // binding unchanged (the second used to panic inside the CPU set).
            assert!(!bind_current_thread(&[1000]));
            assert!(!bind_current_thread(&[rustix::thread::CpuSet::MAX_CPU + 1]));
            assert_eq!(current_thread_cpus(), Some(all), "still every CPU");
        })
        .join()
        .expect("the bound thread");
    }
}
