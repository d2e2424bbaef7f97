//! The startup options sqlservr takes on its command line, for `run`, `shell` and `serve`:
//! trace flags (`-T 1165`, repeatable), sqlservr's `-E` (here `--startup-e`, since sqlcmd's
//! `-E` means a trusted connection) and 'max server memory (MB)', which sizes the buffer
//! pool. The errorlog lists them under "Command Line Startup Parameters", as SQL Server's does.
//!
//! Deviation: SQL Server sets 'max server memory (MB)' with sp_configure and RECONFIGURE while
//! it runs; here it is a startup option.

use clap::Args;
use engine::instance::{DEFAULT_MAX_SERVER_MEMORY_MB, InstanceConfig};

#[derive(Args, Debug, Clone)]
pub struct StartupArgs {
    /// A startup trace flag (sqlservr -T); repeat it for more: -T 1165 -T 3004.
    #[arg(short = 'T', value_name = "FLAG")]
    pub trace_flags: Vec<u16>,
    /// sqlservr's -E: a file that gets an extent gets 64 in a row.
    #[arg(long)]
    pub startup_e: bool,
    /// 'max server memory (MB)': the buffer pool's size (at least 128, as in SQL Server).
    #[arg(
        long,
        default_value_t = DEFAULT_MAX_SERVER_MEMORY_MB,
        value_parser = clap::value_parser!(u32).range(128..),
    )]
    pub max_server_memory_mb: u32,
}

impl StartupArgs {
    /// Sets these options on an instance's configuration.
    pub fn apply(&self, config: &mut InstanceConfig) {
        config.startup_trace_flags = self.trace_flags.clone();
        config.startup_e = self.startup_e;
        config.max_server_memory_mb = self.max_server_memory_mb;
    }
}
