//! The errorlog: a text file `ERRORLOG` in the instance directory, in SQL Server's line format,
//! with archives `ERRORLOG.1` .. `ERRORLOG.6` made by cycling (sp_cycle_errorlog).
//!
//! Line format (reference §10.1, with the three fractional digits that xp_readerrorlog shows and
//! the issue asks for): `2016-10-04 11:38:33.830 spid56       message`: the timestamp, a space,
//! the ProcessInfo left-aligned in 12 characters, a space, the text. An error is two lines:
//! `Error: 1105, Severity: 17, State: 2.` then the message text.
//!
//! All writes go through the [`Io`] seam and are appended whole, one line per call.

use crate::clock::Clock;
use crate::error::SqlError;
use crate::io::{Io, IoFile};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Archives kept by cycling, as SQL Server's default of six.
pub const ARCHIVES_KEPT: u32 = 6;
const FILE_NAME: &str = "ERRORLOG";

/// One parsed errorlog line: the columns of xp_readerrorlog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorLogEntry {
    pub log_date: String,
    pub process_info: String,
    pub text: String,
}

pub struct ErrorLog {
    dir: PathBuf,
    io: Arc<dyn Io>,
    clock: Arc<dyn Clock>,
    file: Mutex<Option<Box<dyn IoFile>>>,
}

impl ErrorLog {
    /// Opens (appending to) `dir/ERRORLOG`.
    pub fn open(dir: &Path, io: Arc<dyn Io>, clock: Arc<dyn Clock>) -> std::io::Result<ErrorLog> {
        io.create_dir_all(dir)?;
        let file = io.open_append(&dir.join(FILE_NAME))?;
        Ok(ErrorLog { dir: dir.to_path_buf(), io, clock, file: Mutex::new(Some(file)) })
    }

    pub fn path(&self, log_no: u32) -> PathBuf {
        if log_no == 0 {
            self.dir.join(FILE_NAME)
        } else {
            self.dir.join(format!("{FILE_NAME}.{log_no}"))
        }
    }

    /// Formats one line without writing it.
    pub fn format_line(&self, process_info: &str, text: &str) -> String {
        let stamp = self.clock.now_local().format("%Y-%m-%d %H:%M:%S%.3f");
        format!("{stamp} {process_info:<12} {text}\n")
    }

    /// Appends one line. A failure to write the errorlog is not fatal to the engine; it is
    /// reported on stderr, as SQL Server reports errorlog failures to the event log.
    pub fn write(&self, process_info: &str, text: &str) {
        let line = self.format_line(process_info, text);
        let guard = self.file.lock();
        if let Some(file) = guard.as_ref()
            && let Err(err) = file.append(line.as_bytes())
        {
            eprintln!("extentdb: cannot write the errorlog: {err}");
        }
    }

    /// Writes an error as SQL Server does: the `Error:` line, then the text.
    pub fn write_error(&self, process_info: &str, error: &SqlError) {
        let head = format!(
            "Error: {}, Severity: {}, State: {}.",
            error.number, error.severity, error.state
        );
        self.write(process_info, &head);
        self.write(process_info, &error.message);
    }

    /// sp_cycle_errorlog: closes ERRORLOG, shifts the archives (dropping the oldest beyond
    /// [`ARCHIVES_KEPT`]) and starts a new ERRORLOG.
    pub fn cycle(&self, process_info: &str, banner: &[String]) -> std::io::Result<()> {
        self.write(
            process_info,
            "Attempting to cycle error log. This is an informational message only; no user action \
             is required.",
        );
        let mut guard = self.file.lock();
        *guard = None;
        let oldest = self.path(ARCHIVES_KEPT);
        if self.io.exists(&oldest) {
            self.io.remove(&oldest)?;
        }
        for log_no in (0..ARCHIVES_KEPT).rev() {
            let from = self.path(log_no);
            if self.io.exists(&from) {
                self.io.rename(&from, &self.path(log_no + 1))?;
            }
        }
        *guard = Some(self.io.open_append(&self.path(0))?);
        drop(guard);
        for line in banner {
            self.write("Server", line);
        }
        self.write(
            process_info,
            "The error log has been reinitialized. See the previous log for older entries.",
        );
        Ok(())
    }

    /// xp_readerrorlog: the entries of log `log_no` (0 = current).
    pub fn read(&self, log_no: u32) -> std::io::Result<Vec<ErrorLogEntry>> {
        let text = self.io.read_to_string(&self.path(log_no))?;
        Ok(text.lines().filter_map(parse_line).collect())
    }
}

/// Parses one errorlog line; None for a line that is not in the format.
pub fn parse_line(line: &str) -> Option<ErrorLogEntry> {
    const DATE_LEN: usize = 23;
    const TEXT_AT: usize = DATE_LEN + 1 + 12 + 1;
    if line.len() < TEXT_AT || !line.is_char_boundary(TEXT_AT) {
        return None;
    }
    Some(ErrorLogEntry {
        log_date: line[..DATE_LEN].to_string(),
        process_info: line[DATE_LEN + 1..TEXT_AT - 1].trim_end().to_string(),
        text: line[TEXT_AT..].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use chrono::NaiveDate;

    fn fixed() -> Arc<dyn Clock> {
        let at = NaiveDate::from_ymd_opt(2016, 10, 4).unwrap().and_hms_milli_opt(11, 38, 33, 830);
        Arc::new(FixedClock(at.unwrap()))
    }

    #[test]
    fn lines_have_sql_servers_shape_and_parse_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), crate::io::std_io(), fixed()).unwrap();
        log.write(
            "spid56",
            "Proportional Fill Recalculation Starting for DB Company with m_cAllocs 0.",
        );
        log.write_error("spid56", &SqlError::file_too_small());
        let raw = std::fs::read_to_string(log.path(0)).unwrap();
        let first = raw.lines().next().unwrap();
        assert_eq!(
            first,
            "2016-10-04 11:38:33.830 spid56       Proportional Fill Recalculation Starting for DB \
             Company with m_cAllocs 0."
        );
        let entries = log.read(0).unwrap();
        assert_eq!(entries[1].text, "Error: 5174, Severity: 16, State: 1.");
        assert_eq!(entries[2].process_info, "spid56");
        assert_eq!(entries[2].text, "Each file size must be greater than or equal to 512 KB.");
    }

    #[test]
    fn cycling_keeps_six_archives() {
        let dir = tempfile::tempdir().unwrap();
        let log = ErrorLog::open(dir.path(), crate::io::std_io(), fixed()).unwrap();
        for round in 0..8 {
            log.write("spid51", &format!("round {round}"));
            log.cycle("spid51", &[]).unwrap();
        }
        assert!(log.path(6).exists());
        assert!(!dir.path().join("ERRORLOG.7").exists());
        let newest_archive = log.read(1).unwrap();
        assert!(newest_archive.iter().any(|e| e.text == "round 7"));
        let current = log.read(0).unwrap();
        assert_eq!(current.len(), 1);
        assert!(current[0].text.starts_with("The error log has been reinitialized"));
    }
}
