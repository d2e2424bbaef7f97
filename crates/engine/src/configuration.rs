//! Server configuration options: what `sp_configure` sets, `RECONFIGURE` installs and
//! sys.configurations shows (configuration_id, name, value, minimum, maximum, value_in_use,
//! is_dynamic, is_advanced).
//!
//! Each option has a configured value (`value`, what sp_configure last set, kept across
//! restarts) and a value in use (`value_in_use`, what the engine runs with). RECONFIGURE
//! makes the configured value of a dynamic option the one in use; a static option takes its
//! configured value at the next start. Only options with an effect in extentdb are here:
//! - `affinity I/O mask` (1536, static) and `affinity mask` (1535): the CPUs of the I/O
//!   threads and of the schedulers ([`crate::affinity`]);
//! - `max degree of parallelism` (1539): the DOP of DBCC CHECKDB without WITH MAXDOP (0: one
//!   worker per CPU);
//! - `max server memory (MB)` (1544): the buffer pool's size;
//! - `recovery interval (min)` (101): how much log an automatic checkpoint waits for;
//! - `show advanced options` (518): whether sp_configure lists and accepts advanced options.
//!
//! Deviations:
//! - SQL Server keeps the options in master's CONFIG page (1:10, page type 14); extentdb keeps
//!   the configured values in a `configuration` file in the data directory (one `id TAB value`
//!   line per option that differs from its default, replaced atomically), read before the
//!   buffer pool starts.
//! - 'max server memory (MB)' is static here: the pool's frames are fixed when it starts, so
//!   a new value takes effect at the next start (SQL Server grows and shrinks the pool at
//!   RECONFIGURE). sys.configurations shows is_dynamic 0 for it. Its default is 512 MB (SQL
//!   Server's, 2147483647, lets the pool take nearly all the machine's memory). A startup
//!   option (`--max-server-memory-mb`) overrides the configured value for that run.
//!
//! Invariants:
//! 1. Every configured value lies within its option's minimum and maximum. So does every value
//!    in use except a startup override of the pool's size (the engine's tests run 1 MB pools).
//! 2. The file holds only configured values; a value in use is never written.

use crate::io::Io;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// One configuration option, as sys.configurations describes it.
#[derive(Debug)]
pub struct ConfigOption {
    pub configuration_id: i32,
    pub name: &'static str,
    pub minimum: i32,
    pub maximum: i32,
    pub default: i32,
    pub is_dynamic: bool,
    pub is_advanced: bool,
    pub description: &'static str,
}

pub const RECOVERY_INTERVAL_MIN: i32 = 101;
pub const AFFINITY_MASK: i32 = 1535;
pub const AFFINITY_IO_MASK: i32 = 1536;
pub const SHOW_ADVANCED_OPTIONS: i32 = 518;
pub const MAX_DEGREE_OF_PARALLELISM: i32 = 1539;
pub const MAX_SERVER_MEMORY_MB: i32 = 1544;
/// 'max server memory (MB)'s minimum (the buffer pool is never sized below it).
pub const MAX_SERVER_MEMORY_MINIMUM_MB: i32 = 128;

/// The options, in sp_configure's order (by name).
pub const OPTIONS: [ConfigOption; 6] = [
    ConfigOption {
        configuration_id: AFFINITY_IO_MASK,
        name: "affinity I/O mask",
        minimum: i32::MIN,
        maximum: i32::MAX,
        default: 0,
        is_dynamic: false,
        is_advanced: true,
        description: "affinity I/O mask",
    },
    ConfigOption {
        configuration_id: AFFINITY_MASK,
        name: "affinity mask",
        minimum: i32::MIN,
        maximum: i32::MAX,
        default: 0,
        is_dynamic: true,
        is_advanced: true,
        description: "affinity mask",
    },
    ConfigOption {
        configuration_id: MAX_DEGREE_OF_PARALLELISM,
        name: "max degree of parallelism",
        minimum: 0,
        maximum: 32767,
        default: 0,
        is_dynamic: true,
        is_advanced: true,
        description: "maximum degree of parallelism",
    },
    ConfigOption {
        configuration_id: MAX_SERVER_MEMORY_MB,
        name: "max server memory (MB)",
        minimum: MAX_SERVER_MEMORY_MINIMUM_MB,
        maximum: i32::MAX,
        default: crate::instance::DEFAULT_MAX_SERVER_MEMORY_MB as i32,
        is_dynamic: false,
        is_advanced: true,
        description: "Maximum size of server memory (MB)",
    },
    ConfigOption {
        configuration_id: RECOVERY_INTERVAL_MIN,
        name: "recovery interval (min)",
        minimum: 0,
        maximum: 32767,
        default: 0,
        is_dynamic: true,
        is_advanced: true,
        description: "Maximum recovery interval in minutes",
    },
    ConfigOption {
        configuration_id: SHOW_ADVANCED_OPTIONS,
        name: "show advanced options",
        minimum: 0,
        maximum: 1,
        default: 0,
        is_dynamic: true,
        is_advanced: false,
        description: "show advanced options",
    },
];

/// The file of configured values, in the data directory.
pub const CONFIGURATION_FILE: &str = "configuration";

/// The instance's options: configured values and values in use, indexed as [`OPTIONS`].
pub struct Configuration {
    io: Arc<dyn Io>,
    dir: PathBuf,
    /// Configured values; the lock also orders writers of the file.
    values: Mutex<[i32; OPTIONS.len()]>,
    in_use: [AtomicI32; OPTIONS.len()],
}

/// What [`Configuration::set`] changed: the old and new configured values.
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    pub old: i32,
    pub new: i32,
}

fn index_of(configuration_id: i32) -> usize {
    OPTIONS
        .iter()
        .position(|o| o.configuration_id == configuration_id)
        .expect("a known configuration_id")
}

impl Configuration {
    /// Reads the configured values from `dir` (defaults where the file is missing or does not
    /// name an option; a line that does not parse, or an out-of-range value, is ignored so
    /// that the instance still starts). Every value in use starts as its configured value.
    pub fn load(io: Arc<dyn Io>, dir: &Path) -> Configuration {
        let mut values = OPTIONS.map(|o| o.default);
        if let Ok(text) = io.read_to_string(&dir.join(CONFIGURATION_FILE)) {
            for line in text.lines() {
                let mut fields = line.split('\t');
                let id = fields.next().and_then(|f| f.trim().parse::<i32>().ok());
                let value = fields.next().and_then(|f| f.trim().parse::<i32>().ok());
                let (Some(id), Some(value)) = (id, value) else { continue };
                let Some(i) = OPTIONS.iter().position(|o| o.configuration_id == id) else {
                    continue;
                };
                if (OPTIONS[i].minimum..=OPTIONS[i].maximum).contains(&value) {
                    values[i] = value;
                }
            }
        }
        Configuration {
            io,
            dir: dir.to_path_buf(),
            in_use: values.map(AtomicI32::new),
            values: Mutex::new(values),
        }
    }

    /// The configured value (sys.configurations.value).
    pub fn value(&self, configuration_id: i32) -> i32 {
        self.values.lock()[index_of(configuration_id)]
    }

    /// The value in use (sys.configurations.value_in_use).
    pub fn value_in_use(&self, configuration_id: i32) -> i32 {
        self.in_use[index_of(configuration_id)].load(Ordering::Relaxed)
    }

    /// Sets the value in use without configuring it: a startup option's override.
    pub fn override_in_use(&self, configuration_id: i32, value: i32) {
        self.in_use[index_of(configuration_id)].store(value, Ordering::Relaxed);
    }

    /// Configures a value and writes the file before returning (sp_configure). The caller
    /// has checked the range; the value in use changes only at RECONFIGURE or a restart.
    pub fn set(&self, configuration_id: i32, value: i32) -> std::io::Result<Change> {
        let i = index_of(configuration_id);
        assert!(
            (OPTIONS[i].minimum..=OPTIONS[i].maximum).contains(&value),
            "configuration invariant 1: {} out of range",
            OPTIONS[i].name
        );
        let mut values = self.values.lock();
        let mut next = *values;
        next[i] = value;
        self.save(&next)?;
        let old = std::mem::replace(&mut values[i], value);
        Ok(Change { old, new: value })
    }

    /// RECONFIGURE: every dynamic option's configured value goes into use.
    pub fn reconfigure(&self) {
        let values = self.values.lock();
        for (i, option) in OPTIONS.iter().enumerate() {
            if option.is_dynamic {
                self.in_use[i].store(values[i], Ordering::Relaxed);
            }
        }
    }

    /// Writes the configured values that differ from their defaults: a new file, synced, then
    /// renamed over the old one and the directory synced (configuration invariant 2).
    fn save(&self, values: &[i32; OPTIONS.len()]) -> std::io::Result<()> {
        let mut text = String::new();
        for (option, value) in OPTIONS.iter().zip(values) {
            if *value != option.default {
                text.push_str(&format!("{}\t{value}\n", option.configuration_id));
            }
        }
        crate::io::replace_file(
            self.io.as_ref(),
            &self.dir.join(CONFIGURATION_FILE),
            text.as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_value_survives_a_restart_and_goes_into_use_at_reconfigure() {
        let dir = tempfile::tempdir().expect("temp dir");
        let io = crate::io::std_io();
        let config = Configuration::load(io.clone(), dir.path());
        assert_eq!(config.value(MAX_DEGREE_OF_PARALLELISM), 0);
        let change = config.set(MAX_DEGREE_OF_PARALLELISM, 4).expect("saved");
        assert_eq!(change, Change { old: 0, new: 4 });
        assert_eq!(config.value_in_use(MAX_DEGREE_OF_PARALLELISM), 0);
        config.set(MAX_SERVER_MEMORY_MB, 1024).expect("saved");
        config.reconfigure();
        assert_eq!(config.value_in_use(MAX_DEGREE_OF_PARALLELISM), 4);
        assert_eq!(config.value_in_use(MAX_SERVER_MEMORY_MB), 512, "static until a restart");
        let restarted = Configuration::load(io, dir.path());
        assert_eq!(restarted.value(MAX_DEGREE_OF_PARALLELISM), 4);
        assert_eq!(restarted.value_in_use(MAX_SERVER_MEMORY_MB), 1024);
        assert_eq!(restarted.value(SHOW_ADVANCED_OPTIONS), 0);
    }

    #[test]
    fn a_damaged_file_leaves_the_defaults() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "1539\tx\nnot a line\n1544\t5\n99999\t1\n518\t1\n";
        std::fs::write(dir.path().join(CONFIGURATION_FILE), text).expect("written");
        let config = Configuration::load(crate::io::std_io(), dir.path());
        assert_eq!(config.value(MAX_DEGREE_OF_PARALLELISM), 0);
        assert_eq!(config.value(MAX_SERVER_MEMORY_MB), 512, "5 is below the minimum");
        assert_eq!(config.value(SHOW_ADVANCED_OPTIONS), 1);
    }

    #[test]
    fn the_options_are_listed_by_name() {
        let names: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }
}
