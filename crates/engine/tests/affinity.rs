//! 'affinity mask' and 'affinity I/O mask' (crate::affinity): which CPUs the threads run on.
//! One test, alone in its binary, so that the threads it finds by name are its instance's.

#![cfg(target_os = "linux")]

mod common;

use engine::affinity::{current_thread_cpus, process_cpus};
use engine::configuration::{AFFINITY_IO_MASK, AFFINITY_MASK};
use std::collections::BTreeMap;

/// The CPUs each thread of this process may run on, by thread name (from /proc).
fn threads_cpus() -> BTreeMap<String, String> {
    let mut threads = BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let path = task.expect("a task").path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        threads.insert(comm.trim().to_string(), cpus);
    }
    threads
}

#[test]
fn masks_bind_workers_to_their_schedulers_cpu_and_the_io_threads_to_the_io_cpus() {
    let all = process_cpus().to_vec();
    let first = all[0];
    let lab = common::lab_with(|config| {
        config.affinity_mask = Some(1 << first);
        config.affinity_io_mask = Some(1 << first);
    });
    let instance = &lab.instance;
    assert_eq!(instance.configuration.value_in_use(AFFINITY_MASK), 1 << first);
    assert_eq!(instance.io_affinity_cpus, vec![first]);

    // The lazy writer started with the pool; the log writer and checkpoint with the database.
    let db = std::sync::Arc::new(lab.company());
    db.start_checkpoint_task();
    db.start_log_writer();
    let wanted = first.to_string();
    let mut found = BTreeMap::new();
    for _ in 0..200 {
        found = threads_cpus();
        let names = ["extentdb-lazywr", "extentdb-logwri", "extentdb-checkp"];
        if names.iter().all(|n| found.get(*n) == Some(&wanted)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for name in ["extentdb-lazywr", "extentdb-logwri", "extentdb-checkp"] {
        assert_eq!(found.get(name), Some(&wanted), "{name} on the I/O CPUs: {found:?}");
    }

    // A worker is bound to its scheduler's CPU while attached, and unbound after. Only the
    // first CPU's scheduler is online; any other is offline.
    std::thread::spawn({
        let schedulers = instance.schedulers.clone();
        let all = all.clone();
        move || {
            let worker = engine::scheduler::attach(&schedulers);
            assert_eq!(current_thread_cpus(), Some(vec![first]));
            let rows = schedulers.snapshot();
            let online: Vec<u32> =
                rows.iter().filter(|r| r.is_online).map(|r| r.scheduler_id).collect();
            assert!(online.iter().all(|id| all[*id as usize % all.len()] == first), "{rows:?}");
            let busy: Vec<u32> =
                rows.iter().filter(|r| r.current_workers_count > 0).map(|r| r.cpu_id).collect();
            assert_eq!(busy, vec![first as u32], "the worker is on the online scheduler");
            drop(worker);
            assert_eq!(current_thread_cpus(), Some(all), "unbound after the request");
        }
    })
    .join()
    .expect("the worker thread");

    // Back to 0: every scheduler online and nothing bound.
    instance.schedulers.set_affinity_mask(0);
    assert!(instance.schedulers.snapshot().iter().all(|r| r.is_online));

    // A fiber's page read starts the pool's I/O threads for fibers, on the I/O CPUs too (its
    // scheduler's thread is bound to nothing now, so they do not inherit a binding).
    db.checkpoint().unwrap();
    lab.instance.buffer_pool.discard(db.database_id, Some(1), 1);
    let pfs = engine::buffer::PageKey::new(db.database_id, engine::units::PageId::new(1, 1));
    let pool = instance.buffer_pool.clone();
    let read: Box<dyn FnOnce() + Send> = Box::new(move || {
        let guard = pool.fetch(pfs, engine::latch::LatchMode::Sh).expect("the PFS page");
        assert_eq!(guard.key(), pfs);
    });
    engine::fiber::run(&instance.schedulers, vec![read]);
    let found = threads_cpus();
    assert_eq!(found.get("extentdb-fiberi"), Some(&wanted), "fiber I/O on the I/O CPUs: {found:?}");

    std::thread::spawn({
        let schedulers = instance.schedulers.clone();
        move || {
            let _worker = engine::scheduler::attach(&schedulers);
            assert_eq!(current_thread_cpus(), Some(all), "mask 0 binds nothing");
        }
    })
    .join()
    .expect("the unbound worker");
    db.stop_checkpoint_task();
    drop(db);
    drop(lab);
    masks_naming_a_cpu_the_machine_lacks_are_not_used_and_the_errorlog_says_so();
}

/// Part of the test above (one instance at a time in this binary).
fn masks_naming_a_cpu_the_machine_lacks_are_not_used_and_the_errorlog_says_so() {
    let beyond = process_cpus().last().copied().unwrap_or(0) + 1;
    if beyond >= 32 {
        return; // every CPU a mask can name exists
    }
    let lab = common::lab_with(|config| config.affinity_io_mask = Some(1 << beyond));
    assert_eq!(lab.instance.configuration.value_in_use(AFFINITY_IO_MASK), 0);
    assert!(lab.instance.io_affinity_cpus.is_empty());
    let lines = lab.errorlog_texts();
    let at = lines.iter().position(|l| l == "Error: 5832, Severity: 16, State: 1.");
    let message = at.and_then(|at| lines.get(at + 1)).map(String::as_str);
    assert_eq!(
        message,
        Some("The affinity mask specified does not match the CPU mask on this system."),
        "{lines:?}"
    );
}
