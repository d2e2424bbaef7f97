//! The wall clock seam. Errorlog timestamps and file creation times come from a [`Clock`], so
//! that golden tests can pin them; elapsed times of real waits use the monotonic clock directly,
//! because a wait time must be time that really passed.

use chrono::NaiveDateTime;
use std::sync::Arc;

pub trait Clock: Send + Sync {
    /// Local wall-clock time, as SQL Server writes it in the errorlog.
    fn now_local(&self) -> NaiveDateTime;

    /// The same instant in UTC (GETUTCDATE). A fixed clock reads the same for both.
    fn now_utc(&self) -> NaiveDateTime {
        self.now_local()
    }
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_local(&self) -> NaiveDateTime {
        chrono::Local::now().naive_local()
    }

    fn now_utc(&self) -> NaiveDateTime {
        chrono::Utc::now().naive_utc()
    }
}

/// A clock that always reads the same instant (tests).
pub struct FixedClock(pub NaiveDateTime);

impl Clock for FixedClock {
    fn now_local(&self) -> NaiveDateTime {
        self.0
    }
}

pub fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}
