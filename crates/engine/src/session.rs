//! Sessions: what a connection is to the engine. A session has a session id (spid, from 51 up,
//! as SQL Server numbers user sessions) under which its waits, latches and errorlog lines are
//! recorded. A thread works for a session after [`Session::enter`]; the T-SQL and TDS issues
//! put statements, transactions and session trace flags here.

use crate::instance::{Instance, set_current_spid};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

/// The first user session id.
pub const FIRST_USER_SPID: u16 = 51;

/// Hands out session ids.
#[derive(Debug)]
pub struct SpidAllocator(AtomicU16);

impl Default for SpidAllocator {
    fn default() -> SpidAllocator {
        SpidAllocator(AtomicU16::new(FIRST_USER_SPID))
    }
}

impl SpidAllocator {
    pub fn next(&self) -> u16 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// A session.
pub struct Session {
    pub spid: u16,
    pub instance: Arc<Instance>,
}

impl Session {
    pub fn open(instance: &Arc<Instance>) -> Session {
        Session { spid: instance.spids.next(), instance: instance.clone() }
    }

    /// Makes the calling thread work for this session.
    pub fn enter(&self) {
        set_current_spid(self.spid);
    }
}
