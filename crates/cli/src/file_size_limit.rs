//! The process's limit on file size (RLIMIT_FSIZE, the shell's `ulimit -f`), met as an error
//! rather than a kill.
//!
//! A write, `fallocate` or `ftruncate` that would take a file past the limit makes the kernel
//! send SIGXFSZ, whose default action ends the process with a core dump: a load that autogrew a
//! file past `ulimit -f` died in the middle of a statement ("File size limit exceeded", exit
//! 153). Once the signal is caught, the same call fails with EFBIG (27, "File too large")
//! instead, and the engine answers it as it answers a full disk: an autogrowth that fails gives
//! 1105 (or 9002 for a log), MODIFY FILE gives 5149, a failed log write takes the log offline
//! (17053, 9001), and nothing committed is lost. PostgreSQL's postmaster and the JVM ignore
//! SIGXFSZ for the same reason.
//!
//! The signal is caught with a handler that only records that it came (signal-hook: the
//! workspace has no unsafe code for a `SIG_IGN`); either way the call returns EFBIG. An
//! embedding program chooses its own signal dispositions: the engine sets none.

use std::sync::atomic::AtomicBool;

/// Set when a write met the file-size limit (read by nothing yet: the errors say it).
static FILE_SIZE_LIMIT_MET: AtomicBool = AtomicBool::new(false);

/// Catches SIGXFSZ for the rest of the process, so that a write past RLIMIT_FSIZE fails with
/// EFBIG instead of ending the process. Returns false where the handler could not be set.
pub fn catch_file_size_signal() -> bool {
    #[cfg(unix)]
    {
        signal_hook::flag::register(signal_hook::consts::SIGXFSZ, &FILE_SIZE_LIMIT_MET).is_ok()
    }
    #[cfg(not(unix))]
    {
        false
    }
}
