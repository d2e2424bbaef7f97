//! CPU time used, read from Linux's /proc: the benchmarks report it beside wall time because
//! this machine's wall times vary by 20-50 % from run to run (other tenants, memory first
//! touched), while the CPU a run costs varies much less (docs/benchmarks.md). None where
//! /proc does not have the file (another OS): the benchmarks then leave the column out.

/// Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

/// User plus system CPU seconds of the whole process, exited threads included (10 ms steps).
pub fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu_s(&stat)
}

/// CPU seconds of the calling thread (nanosecond steps, from the scheduler's own account).
pub fn thread_cpu_s() -> Option<f64> {
    engine::session::thread_cpu_ns().map(|ns| ns as f64 / 1e9)
}

/// utime + stime (fields 14 and 15) of a /proc/<pid>/stat line. The command name (field 2)
/// may hold spaces and parentheses, so the fields are counted from its last ')'.
fn parse_stat_cpu_s(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // after_name starts at field 3 (state): utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_times_are_read_after_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (ext db) (x)) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 \
                    19 0 1000 2000000 3000 18446744073709551615";
        assert_eq!(parse_stat_cpu_s(line), Some(3.25));
        assert_eq!(parse_stat_cpu_s("4242 (cut) S 1"), None);
    }

    #[test]
    fn the_threads_cpu_time_grows_while_it_computes() {
        let Some(before) = thread_cpu_s() else { return };
        let mut x = 1u64;
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = thread_cpu_s().expect("read once, read again");
        assert!(after > before, "{before} -> {after}");
        assert!(process_cpu_s().is_some_and(|s| s >= 0.0));
    }
}
