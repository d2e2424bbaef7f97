//! Trace flag 834: the buffer pool's memory is committed when the instance starts, as SQL
//! Server's large-page buffer pool is, and the errorlog says so. Without it the pool's memory
//! becomes resident only as frames are first used.
//!
//! The one test of this binary (its own process), so that the resident set it measures is the
//! pool's alone.

mod common;

use common::lab_with;

/// VmRSS of this process, in KB.
fn resident_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    line.split_whitespace().nth(1).expect("a number").parse().expect("KB")
}

#[test]
fn trace_flag_834_commits_the_pool_at_startup_and_says_so() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return; // no procfs to measure with
    }
    let before = resident_kb();
    let lazy = lab_with(|config| config.max_server_memory_mb = Some(256));
    let after_lazy = resident_kb();
    assert!(
        after_lazy < before + 64 * 1024,
        "without TF 834 the 256 MB pool is not resident at startup: {before} -> {after_lazy} KB"
    );
    assert!(!lazy.errorlog_texts().iter().any(|t| t.contains("large page")));
    drop(lazy); // its buffers, still untouched, wait for the next pool

    let committed = lab_with(|config| {
        config.max_server_memory_mb = Some(256);
        config.startup_trace_flags.push(834);
    });
    let after_committed = resident_kb();
    assert!(
        after_committed >= after_lazy + 240 * 1024,
        "with TF 834 the 256 MB pool is resident at startup: {after_lazy} -> {after_committed} KB"
    );
    let texts = committed.errorlog_texts();
    for line in [
        "Using large pages in the memory manager.",
        "Using large pages for buffer pool.",
        "256 MB of large page memory allocated.",
    ] {
        assert!(texts.iter().any(|t| t == line), "{line:?} in {texts:?}");
    }
}
