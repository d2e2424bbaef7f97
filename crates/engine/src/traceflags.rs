//! Trace flags (reference §9). Flags set at startup (`-T`) or with DBCC TRACEON(n, -1) are
//! global; session-scope flags arrive with sessions in a later issue, so for now every flag is
//! global. Flags this crate acts on:
//!
//! | flag | effect here                                                                 |
//! |------|-----------------------------------------------------------------------------|
//! | 661  | turn the ghost-cleanup task off                                             |
//! | 1117 | grow every file of a filegroup together (as AUTOGROW_ALL_FILES)             |
//! | 1165 | write proportional-fill recalculations (needs 3605 to reach the errorlog)   |
//! | 1204 | write each deadlock's participants and resources to the errorlog (text)     |
//! | 1222 | write each deadlock to the errorlog as deadlock-list / process-list lines   |
//! | 1806 | disable instant file initialisation                                         |
//! | 3004 | write file zeroing start/end (needs 3605 to reach the errorlog)             |
//! | 3605 | send trace output to the errorlog                                           |
//!
//! Deviation: SQL Server ignores TF 1117 from 2016 on; extentdb honours it, because the lab
//! reproduces older experiments too.

use parking_lot::RwLock;
use std::collections::BTreeSet;

pub const TF_DISABLE_GHOST_CLEANUP: u16 = 661;
pub const TF_AUTOGROW_ALL_FILES: u16 = 1117;
pub const TF_PROPORTIONAL_FILL_TRACE: u16 = 1165;
pub const TF_DISABLE_IFI: u16 = 1806;
pub const TF_DEADLOCK_TEXT: u16 = 1204;
pub const TF_DEADLOCK_XML: u16 = 1222;
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

    pub fn is_on(&self, flag: u16) -> bool {
        self.on.read().contains(&flag)
    }

    /// True when `flag` is on and its output goes to the errorlog (TF 3605).
    pub fn traces_to_errorlog(&self, flag: u16) -> bool {
        let on = self.on.read();
        on.contains(&flag) && on.contains(&TF_TRACE_TO_ERRORLOG)
    }

    pub fn list(&self) -> Vec<u16> {
        self.on.read().iter().copied().collect()
    }
}
