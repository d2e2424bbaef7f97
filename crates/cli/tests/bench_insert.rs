//! `extentdb bench insert --json` end to end: the command line of the issue, its JSON keys, and
//! a correct row count (the command verifies the index itself before it reports).

use std::process::Command;

/// One bench at a time: the reports count background work (checkpoints, page writes) that
/// a run's timing decides, and this binary's tests would otherwise run their loads side by
/// side on the machine's two CPUs.
static ONE_BENCH_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(args: &[&str]) -> serde_json::Value {
    let _alone = ONE_BENCH_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "insert"])
        .args(args)
        .args(["--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

#[test]
fn guid_and_identity_loads_report_rows_waits_and_latch_resources() {
    for key in ["guid", "identity"] {
        let report = run(&["--sessions", "4", "--files", "2", "--rows", "3000", "--key", key]);
        assert_eq!(report["rows"], 3000, "{report}");
        assert_eq!(report["key"], key);
        assert!(report["seconds"].as_f64().unwrap() > 0.0);
        assert!(report["rows_per_s"].as_f64().unwrap() > 0.0);
        // The process's CPU against the CPUs it may use over the run (Linux has /proc).
        let (cpu, seconds) =
            (report["cpu_seconds"].as_f64().unwrap(), report["seconds"].as_f64().unwrap());
        let cpus = report["cpus"].as_u64().unwrap();
        assert!(cpus >= 1, "{report}");
        let busy = report["cpu_busy_percent"].as_f64().unwrap();
        let expected = 100.0 * cpu / (seconds * cpus as f64);
        // (Not asserted above 0: the process's CPU time is counted in 10 ms ticks.)
        assert!((busy - expected).abs() < 1e-6 * expected.max(1.0), "{busy} against {expected}");
        assert!(report["size_on_disk_mb"].as_f64().unwrap() >= 16.0, "two files of at least 8 MB");
        assert_eq!(report["durable"], true, "each batch of 1,000 rows commits durably");
        assert_eq!(report["large_pages"], true, "-T834 by default");
        // Each session commits its 750 rows as one batch: four commits, whose flushes group
        // commit may share; the WAL rule may add a few for pages written early.
        let flushes = report["log_flushes"].as_u64().unwrap();
        assert!((1..=48).contains(&flushes), "{flushes} log flushes");
        assert!(report["log_mb_flushed"].as_f64().unwrap() > 0.0);
        for wait in report["waits"].as_array().unwrap() {
            for field in ["wait_type", "waiting_tasks_count", "wait_time_ms", "signal_wait_time_ms"]
            {
                assert!(wait.get(field).is_some(), "{field} in {wait}");
            }
        }
        for resource in report["latch_resources"].as_array().unwrap() {
            let text = resource["resource"].as_str().unwrap();
            assert_eq!(text.split(':').count(), 3, "db:file:page, got {text}");
            assert!(resource["page_type"].as_str().unwrap().ends_with("_PAGE"));
        }
    }
}

/// Fiber mode: the same loads to a correct index (the command checks it before it reports),
/// with the sessions' log waits counted as in thread mode.
#[test]
fn lightweight_pooling_runs_the_sessions_as_fibers_to_a_correct_index() {
    for key in ["guid", "identity"] {
        let args = ["--sessions", "16", "--files", "1", "--rows", "16000", "--key", key];
        let report = run(&[&args[..], &["--lightweight-pooling"]].concat());
        assert_eq!(report["rows"], 16000, "{report}");
        assert_eq!(report["lightweight_pooling"], true);
        let waits = report["waits"].as_array().unwrap();
        let count = |wait_type: &str| {
            waits
                .iter()
                .filter(|w| w["wait_type"] == wait_type)
                .map(|w| w["waiting_tasks_count"].as_u64().unwrap())
                .sum::<u64>()
        };
        // Each session commits once; the last commit at least waits for the log writer.
        assert!((1..=16).contains(&count("WRITELOG")), "{report}");
    }
    let threads = run(&["--sessions", "2", "--rows", "2000"]);
    assert_eq!(threads["lightweight_pooling"], false);
}

/// The report's schedulers (sys.dm_os_schedulers over the run): each session ran on one online
/// scheduler, and sessions that start together spread over them. Two thread-mode sessions
/// under 'affinity mask' 3 used to share scheduler 0: each chose before the other had joined,
/// and the CPU binding in between made that window wide.
#[test]
fn the_sessions_spread_over_the_online_schedulers() {
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let mask: &[&str] = if two_cpus { &["--affinity-mask", "3"] } else { &[] };
    for fibers in [false, true] {
        let mut args = vec!["--sessions", "2", "--files", "1", "--rows", "20000"];
        args.extend_from_slice(mask);
        if fibers {
            args.push("--lightweight-pooling");
        }
        let report = run(&args);
        let rows = report["schedulers"].as_array().unwrap();
        let sessions: Vec<u64> = rows.iter().map(|r| r["sessions"].as_u64().unwrap()).collect();
        assert_eq!(sessions.iter().sum::<u64>(), 2, "{report}");
        let (most, least) = (sessions.iter().max().unwrap(), sessions.iter().min().unwrap());
        assert!(most - least <= 1, "fibers {fibers}: sessions per scheduler {sessions:?}");
        for row in rows.iter().filter(|r| r["sessions"].as_u64().unwrap() > 0) {
            assert!(row["yield_count"].as_u64().unwrap() > 0, "a busy scheduler yields: {row}");
        }
    }
}

#[test]
fn no_large_pages_starts_the_pool_without_trace_flag_834() {
    let report = run(&["--sessions", "1", "--rows", "100", "--no-large-pages"]);
    assert_eq!(report["large_pages"], false, "{report}");
    assert_eq!(report["rows"], 100);
    // A load this small fills no 70 % of the log: no automatic checkpoint runs during it.
    assert_eq!(report["auto_checkpoints"], 0, "{report}");
    assert!(report["page_writes"].is_u64(), "{report}");
}

#[test]
fn the_log_is_presized_for_the_run_unless_told_otherwise() {
    // 40,000 rows log about 14 MB. The default log (64 MB here) holds that below the SIMPLE
    // log's 70 % mark: no automatic checkpoint runs during the load, and the log never grows.
    let rows = ["--sessions", "4", "--rows", "40000"];
    let presized = run(&rows);
    assert_eq!(presized["log_size_mb"], 64, "{presized}");
    assert_eq!(presized["log_end_size_mb"], 64.0, "{presized}");
    assert_eq!(presized["auto_checkpoints"], 0, "{presized}");
    assert_eq!(presized["page_writes"], 0, "{presized}");
    // An 8 MB log cannot hold the 28 MB that 80,000 rows log: it makes room by the checkpoints
    // that its 70 % mark asks for (which write pages and truncate it), or by growing when they
    // lag behind the sessions. Which one, and how far, is a matter of timing: the checkpoint
    // task queues for a scheduler behind the sessions, and in a debug build sharing the CPUs
    // it has written pages in most runs and none in some (CI, 2026-11-28, twice; the second
    // with 80,000 rows, one bench at a time). Either way the run completes, every row in it.
    let small = run(&["--sessions", "4", "--rows", "80000", "--log-size-mb", "8"]);
    assert_eq!(small["log_size_mb"], 8, "{small}");
    assert_eq!(small["rows"], 80_000, "{small}");
    assert!(small["log_mb_flushed"].as_f64().unwrap() > 8.0, "{small}");
    let checkpointed = small["auto_checkpoints"].as_u64().unwrap() > 0
        && small["page_writes"].as_u64().unwrap() > 0;
    let grew = small["log_end_size_mb"].as_f64().unwrap() > 8.0;
    assert!(checkpointed || grew, "the log neither checkpointed nor grew: {small}");
}

#[test]
fn bad_arguments_are_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "insert", "--sessions", "0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("at least 1"));
}

/// The standard top-waits query (examples/top_waits.sql) runs unmodified on the instance of a
/// `bench insert` load and lists the load's PAGELATCH or WRITELOG waits. On a machine with one
/// CPU, sixteen sessions share one scheduler and yield to each other at the end of every
/// quantum: SOS_SCHEDULER_YIELD alone can then make the query's top 95 %.
#[test]
fn the_top_waits_query_runs_after_a_load_and_lists_its_waits() {
    let one_cpu = std::thread::available_parallelism().is_ok_and(|n| n.get() == 1);
    let dir = tempfile::tempdir().unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/top_waits.sql");
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "insert", "--sessions", "16", "--files", "1", "--rows", "16000", "--dir"])
        .arg(dir.path())
        .arg("--sql")
        .arg(&script)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    // The query's result comes last, after the bench's own waits table (which has the same
    // first column name): its header's rest, the dashes, then the rows.
    let table = stdout.rsplit("WaitType").next().expect("the query's result");
    assert!(table.lines().nth(1).is_some_and(|l| l.starts_with("----")), "{table}");
    let listed: Vec<&str> =
        table.lines().skip(2).filter_map(|l| l.split_whitespace().next()).collect();
    let the_loads = |w: &&str| {
        w.starts_with("PAGELATCH_") || *w == "WRITELOG" || (one_cpu && *w == "SOS_SCHEDULER_YIELD")
    };
    assert!(listed.iter().any(the_loads), "{table}");
}

#[test]
fn affinity_masks_are_checked_as_reconfigure_does_and_a_bound_run_completes() {
    let report =
        run(&["--sessions", "2", "--files", "1", "--rows", "2000", "--affinity-mask", "1"]);
    assert_eq!(report["rows"], 2000, "{report}");
    let _alone = ONE_BENCH_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["bench", "insert", "--rows", "100", "--affinity-mask", "1"])
        .args(["--affinity-io-mask", "1", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Msg 5834, Level 16"), "{stderr}");
}

/// The in-process baseline (the same rows into a bare in-memory B-tree, before and after the
/// load): its threads are the sessions' CPUs, its rate is the mean of its two runs, and
/// `vs_baseline` is the load's rate over it; with two CPUs a cache line's round trip between
/// them is measured too. `--no-baseline` leaves all of it out.
#[test]
fn the_report_has_an_in_process_baseline_unless_told_not_to() {
    let two_cpus = std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
    let mask: &[&str] = if two_cpus { &["--affinity-mask", "3"] } else { &[] };
    let mut args = vec!["--sessions", "4", "--rows", "4000"];
    args.extend_from_slice(mask);
    let report = run(&args);
    let baseline = &report["baseline"];
    assert_eq!(baseline["threads"], if two_cpus { 2 } else { 1 }, "{report}");
    let (before, after) = (
        baseline["before_rows_per_s"].as_f64().unwrap(),
        baseline["after_rows_per_s"].as_f64().unwrap(),
    );
    assert!(before > 0.0 && after > 0.0, "{report}");
    let mean = baseline["rows_per_s"].as_f64().unwrap();
    assert!((mean - (before + after) / 2.0).abs() <= 1e-9 * mean, "{report}");
    let ratio = report["vs_baseline"].as_f64().unwrap();
    let expected = report["rows_per_s"].as_f64().unwrap() / mean;
    assert!((ratio - expected).abs() <= 1e-9 * expected, "{ratio} against {expected}");
    if two_cpus {
        assert_eq!(baseline["cpu_pair"], serde_json::json!([0, 1]), "{report}");
        for field in ["round_trip_before_ns", "round_trip_after_ns"] {
            assert!(baseline[field].as_f64().unwrap() > 0.0, "{field}: {report}");
        }
    }
    // One session: one baseline thread, and no second CPU to measure a round trip to.
    let one = run(&["--sessions", "1", "--rows", "1000"]);
    assert_eq!(one["baseline"]["threads"], 1, "{one}");
    assert!(one["baseline"]["round_trip_before_ns"].is_null(), "{one}");
    let without = run(&["--sessions", "2", "--rows", "1000", "--no-baseline"]);
    assert!(without["baseline"].is_null() && without["vs_baseline"].is_null(), "{without}");
}
