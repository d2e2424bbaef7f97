//! Trace flags (reference §9). Flags set at startup (`-T`) or with DBCC TRACEON(n, -1) are
//! global. A session's own flags (DBCC TRACEON(n) without -1) are installed on the thread that
//! runs the session's work ([`set_session_flags`]), so they act on that session's work only;
//! flags that SQL Server honours only globally ([`GLOBAL_ONLY`]) ignore the session's set, as
//! SQL Server ignores them at session scope. Flags this crate acts on:
//!
//! | flag | effect here                                                                 |
//! |------|-----------------------------------------------------------------------------|
//! | 661  | turn the ghost-cleanup task off                                             |
//! | 834  | startup only: commit the buffer pool's memory at startup (large pages)      |
//! | 1117 | grow every file of a filegroup together (as AUTOGROW_ALL_FILES)             |
//! | 1165 | write proportional-fill recalculations (needs 3605 to reach the errorlog)   |
//! | 1204 | write each deadlock's participants and resources to the errorlog (text)     |
//! | 1211 | no lock escalation                                                          |
//! | 1222 | write each deadlock to the errorlog as deadlock-list / process-list lines   |
//! | 1224 | no lock escalation by lock count (the only kind extentdb has)               |
//! | 1806 | disable instant file initialisation                                         |
//! | 3004 | write file zeroing start/end (needs 3605 to reach the errorlog)             |
//! | 3605 | send trace output to the errorlog                                           |
//!
//! Deviation: SQL Server ignores TF 1117 from 2016 on; extentdb honours it, because the lab
//! reproduces older experiments too.

use parking_lot::RwLock;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Flags that act only when set globally (reference §9.1).
pub const GLOBAL_ONLY: [u16; 6] = [661, 1117, 1118, 1204, 1222, 1806];

thread_local! {
    static SESSION_FLAGS: RefCell<BTreeSet<u16>> = const { RefCell::new(BTreeSet::new()) };
}

/// Whether the caller's session set `flag` (tests).
#[cfg(test)]
pub(crate) fn session_flag_for_tests(flag: u16) -> bool {
    session_has(flag)
}

/// Swaps the thread's session-scope flags with a fiber's (see [`crate::fiber`]).
pub(crate) fn swap_fiber_flags(saved: &mut BTreeSet<u16>) {
    SESSION_FLAGS.with(|set| std::mem::swap(&mut *set.borrow_mut(), saved));
}

/// Makes `flags` the session-scope flags of the work this thread does from now on.
pub fn set_session_flags(flags: impl IntoIterator<Item = u16>) {
    SESSION_FLAGS.with(|set| *set.borrow_mut() = flags.into_iter().collect());
}

/// Whether the session running on this thread set `flag` for itself.
fn session_has(flag: u16) -> bool {
    !GLOBAL_ONLY.contains(&flag) && SESSION_FLAGS.with(|set| set.borrow().contains(&flag))
}

pub const TF_DISABLE_GHOST_CLEANUP: u16 = 661;
pub const TF_LARGE_PAGE_BUFFER_POOL: u16 = 834;
pub const TF_AUTOGROW_ALL_FILES: u16 = 1117;
pub const TF_PROPORTIONAL_FILL_TRACE: u16 = 1165;
pub const TF_DISABLE_IFI: u16 = 1806;
pub const TF_DEADLOCK_TEXT: u16 = 1204;
pub const TF_DEADLOCK_XML: u16 = 1222;
pub const TF_NO_LOCK_ESCALATION: u16 = 1211;
pub const TF_NO_LOCK_COUNT_ESCALATION: u16 = 1224;
pub const TF_FILE_ZEROING_TRACE: u16 = 3004;
pub const TF_TRACE_TO_ERRORLOG: u16 = 3605;

/// The set of global trace flags.
#[derive(Default)]
pub struct TraceFlags {
    on: RwLock<BTreeSet<u16>>,
}

impl TraceFlags {
    pub fn new(initial: &[u16]) -> TraceFlags {
        TraceFlags { on: RwLock::new(initial.iter().copied().collect()) }
    }

    pub fn on(&self, flag: u16) {
        self.on.write().insert(flag);
    }

    pub fn off(&self, flag: u16) {
        self.on.write().remove(&flag);
    }

    /// Whether `flag` is on globally or for the session running on this thread.
    pub fn is_on(&self, flag: u16) -> bool {
        self.on.read().contains(&flag) || session_has(flag)
    }

    /// Whether `flag` is on globally (DBCC TRACESTATUS's Global column).
    pub fn is_on_globally(&self, flag: u16) -> bool {
        self.on.read().contains(&flag)
    }

    /// True when `flag` is on and its output goes to the errorlog (TF 3605), each globally or
    /// for this thread's session.
    pub fn traces_to_errorlog(&self, flag: u16) -> bool {
        self.is_on(flag) && self.is_on(TF_TRACE_TO_ERRORLOG)
    }

    pub fn list(&self) -> Vec<u16> {
        self.on.read().iter().copied().collect()
    }
}
