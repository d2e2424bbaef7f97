//! WAITFOR DELAY and WAITFOR TIME: the session's thread really waits, and the wait is SQL
//! Server's WAITFOR wait type.
//!
//! - `WAITFOR DELAY 'hh:mm[:ss[.fff]]'` waits that long (less than 24 hours);
//!   `WAITFOR TIME 'hh:mm[:ss[.fff]]'` waits until that time of day on the instance's clock,
//!   tomorrow if it has passed today. Either takes a literal or a variable; a datetime value's
//!   date must be 1900-01-01 (no date), as in SQL Server.
//! - While it waits the session is in sys.dm_os_waiting_tasks (and sys.dm_exec_requests) with
//!   wait_type WAITFOR; when the wait ends its time is added to sys.dm_os_wait_stats' WAITFOR
//!   row. A client's attention (cancel) ends the wait at once, as it ends any statement.
//! - A time string that is not one is error 148: "Incorrect time syntax in time string '…'
//!   used with WAITFOR." (severity 15). Written as a literal, it is found when the batch is
//!   parsed, so nothing of the batch runs ([`literal_error`]); in a variable, when the
//!   statement runs.
//!
//! Deviations: the time string takes the 24-hour forms above and datetime's `hh:mm:ss:mmm`,
//! not the AM/PM forms; a NULL variable waits no time. The wait is slept in slices of
//! [`CANCEL_CHECK`], so an attention is seen within one slice. WAITFOR on a Service Broker
//! RECEIVE does not exist (no Service Broker).

use crate::session::{Failure, Flow, Session};
use crate::value;
use engine::SqlError;
use engine::record::Value;
use sqlparser::ast::{WaitForStatement, WaitForType};
use std::time::{Duration, Instant};

/// How often a waiting session looks for a cancel.
const CANCEL_CHECK: Duration = Duration::from_millis(10);

/// The wait type SQL Server gives a session in WAITFOR.
const WAITFOR_WAIT_TYPE: &str = "WAITFOR";

const SECONDS_PER_DAY: u64 = 24 * 60 * 60;

pub(crate) fn bad_time_string(text: &str) -> SqlError {
    SqlError::new(
        148,
        15,
        1,
        format!("Incorrect time syntax in time string '{text}' used with WAITFOR."),
    )
}

/// One to `max_digits` ASCII digits as a number.
fn digits(text: &str, max_digits: usize) -> Option<u64> {
    if text.is_empty() || text.len() > max_digits || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A time of day written `hh:mm`, `hh:mm:ss`, `hh:mm:ss.fffffff` (up to seven digits) or
/// `hh:mm:ss:mmm`, optionally after the date 1900-01-01: the time since midnight.
pub(crate) fn parse_time_of_day(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if let Some(after_date) = rest.strip_prefix("1900-01-01") {
        rest = after_date.trim_start();
    }
    let (clock, fraction) = match rest.split_once('.') {
        Some((clock, fraction)) => (clock, Some(fraction)),
        None => (rest, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let (hours, minutes) = (digits(parts.first()?, 2)?, digits(parts.get(1)?, 2)?);
    let seconds = match parts.get(2) {
        Some(part) => digits(part, 2)?,
        None => 0,
    };
    if hours > 23 || minutes > 59 || seconds > 59 {
        return None;
    }
    let mut nanos: u64 = 0;
    match (parts.len(), fraction) {
        (2, None) | (3, None) => {}
        (3, Some(fraction)) => {
            let value = digits(fraction, 7)?;
            nanos = value * 10u64.pow(9 - fraction.len() as u32);
        }
        // datetime's milliseconds after a colon: hh:mm:ss:mmm.
        (4, None) => nanos = digits(parts[3], 3)? * 1_000_000,
        _ => return None,
    }
    let whole_seconds = hours * 3600 + minutes * 60 + seconds;
    Some(Duration::from_secs(whole_seconds) + Duration::from_nanos(nanos))
}

/// The text of a WAITFOR's literal time string that is not a time (error 148 at parse time);
/// None for a good literal or a variable.
pub(crate) fn literal_error(waitfor: &WaitForStatement) -> Option<String> {
    let sqlparser::ast::Expr::Value(literal) = &waitfor.expr else { return None };
    match &literal.value {
        sqlparser::ast::Value::SingleQuotedString(text)
        | sqlparser::ast::Value::NationalStringLiteral(text) => {
            parse_time_of_day(text).is_none().then(|| text.clone())
        }
        _ => None,
    }
}

/// How long WAITFOR TIME waits at `now` (a time since midnight) for `target`: until the next
/// time the clock shows it, so tomorrow if it has passed today.
fn until_time_of_day(now: Duration, target: Duration) -> Duration {
    let day = Duration::from_secs(SECONDS_PER_DAY);
    if target > now { target - now } else { day - (now - target) }
}

impl Session {
    /// WAITFOR DELAY / TIME.
    pub(crate) fn run_waitfor(
        &mut self,
        waitfor: &WaitForStatement,
        line: u64,
    ) -> Result<Flow, Failure> {
        let value = self.eval_stmt(&waitfor.expr, line)?;
        if matches!(value, Value::Null) {
            return Ok(Flow::Next);
        }
        let text = value::display(&value);
        let Some(time) = parse_time_of_day(&text) else {
            return Err(self.fail(bad_time_string(&text), line));
        };
        let wait = match waitfor.wait_type {
            WaitForType::Delay => time,
            WaitForType::Time => {
                let now = self.server.instance.clock.now_local().time();
                let since_midnight = now - chrono::NaiveTime::MIN;
                until_time_of_day(since_midnight.to_std().unwrap_or_default(), time)
            }
        };
        self.wait_for(wait).map_err(|e| self.fail(e, line))?;
        Ok(Flow::Next)
    }

    /// Sleeps for `wait` as a WAITFOR wait, ending early on a cancel (error 3617).
    fn wait_for(&self, wait: Duration) -> Result<(), SqlError> {
        let instance = &self.server.instance;
        let started = Instant::now();
        let deadline = started + wait;
        let registration =
            instance.waiting_tasks.begin(self.spid, WAITFOR_WAIT_TYPE, None, String::new());
        let mut cancelled = Ok(());
        // The worker's scheduler runs another worker while this one waits.
        let suspended = engine::scheduler::suspend();
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            cancelled = self.check_cancel();
            if cancelled.is_err() {
                break;
            }
            std::thread::sleep((deadline - now).min(CANCEL_CHECK));
        }
        drop(registration);
        let signal = suspended.resume();
        instance.waits.record(WAITFOR_WAIT_TYPE, started.elapsed(), signal);
        cancelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> Option<u128> {
        parse_time_of_day(text).map(|d| d.as_millis())
    }

    #[test]
    fn time_strings_in_the_forms_sql_server_takes() {
        assert_eq!(ms("00:00:05"), Some(5_000));
        assert_eq!(ms("00:01"), Some(60_000));
        assert_eq!(ms("1:02:03"), Some(3_723_000));
        assert_eq!(ms("00:00:00.2"), Some(200));
        assert_eq!(ms("00:00:01.250"), Some(1_250));
        assert_eq!(ms("00:00:00.0500000"), Some(50));
        assert_eq!(ms("00:00:02:500"), Some(2_500));
        assert_eq!(ms("1900-01-01 00:00:05.000"), Some(5_000));
        assert_eq!(ms(" 23:59:59 "), Some(86_399_000));
    }

    #[test]
    fn time_strings_that_are_not_times_are_refused() {
        for bad in [
            "",
            "5",
            "24:00:00",
            "00:60",
            "00:00:60",
            "2026-01-01 00:00:05",
            "00:00:05.12345678",
            "a:b",
            "00:00:05 PM",
            "-1:00",
            "00:00.5",
            "00:00:01:2:3",
        ] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_time_that_has_passed_today_is_waited_for_until_tomorrow() {
        let hour = |h: u64| Duration::from_secs(h * 3600);
        assert_eq!(until_time_of_day(hour(10), hour(12)), hour(2));
        assert_eq!(until_time_of_day(hour(12), hour(10)), hour(22));
        assert_eq!(until_time_of_day(hour(12), hour(12)), hour(24));
    }

    #[test]
    fn error_148_has_sql_servers_number_severity_and_text() {
        let error = bad_time_string("25:00");
        assert_eq!((error.number, error.severity, error.state), (148, 15, 1));
        assert_eq!(
            error.message,
            "Incorrect time syntax in time string '25:00' used with WAITFOR."
        );
    }
}
