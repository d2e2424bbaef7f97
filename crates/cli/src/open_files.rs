//! The process's limit on open files (RLIMIT_NOFILE), raised at startup from its soft value to
//! its hard one, as servers do (the Go runtime does it for every program).
//!
//! Why: a TDS connection holds three descriptors on the server's side (its socket, the handle
//! that closes it at shutdown, the one its ATTENTION watcher peeks at; five until the
//! thirty-fifth session) and two on a client's. With five, the soft limit most login sessions
//! start with (1,024) ran out near 200 connections, short of `serve`'s default of 256 and of
//! `bench tds`'s 200 idle ones, though the hard limit usually allows far more.
//!
//! A hard limit of "unlimited" is capped at 1,048,576, the kernel's default `nr_open`: the
//! kernel refuses a soft limit above `nr_open`. Nothing is raised where the call is refused.

/// The soft limit set when the hard one is unlimited.
const UNLIMITED_CAP: u64 = 1 << 20;

/// Raises the soft limit on open files to the hard limit; returns the soft limit now in force
/// (None where the platform has no such limit or says it is unlimited).
pub fn raise_soft_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        let wanted = limit.maximum.unwrap_or(UNLIMITED_CAP);
        if limit.current.is_some_and(|current| current < wanted) {
            let raised = Rlimit { current: Some(wanted), maximum: limit.maximum };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return Some(wanted);
            }
        }
        limit.current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A soft limit below the hard one is raised to it (or to the cap), and a second call
    /// changes nothing. (Moving a soft limit within the hard one needs no privileges; it is
    /// lowered by one first, so that there is something to raise.)
    #[cfg(unix)]
    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let before = getrlimit(Resource::Nofile);
        let top = before.maximum.unwrap_or(UNLIMITED_CAP);
        let lowered = Rlimit { current: Some(top - 1), maximum: before.maximum };
        setrlimit(Resource::Nofile, lowered).unwrap();
        assert_eq!(getrlimit(Resource::Nofile).current, Some(top - 1));
        let raised = raise_soft_limit();
        let limit = getrlimit(Resource::Nofile);
        assert_eq!(raised, limit.current);
        assert_eq!(limit.current, Some(limit.maximum.unwrap_or(UNLIMITED_CAP)));
        assert_eq!(raise_soft_limit(), raised);
    }
}
