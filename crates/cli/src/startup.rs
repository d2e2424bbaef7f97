//! The startup options sqlservr takes on its command line, for `run`, `shell` and `serve`:
//! trace flags (`-T 1165`, repeatable), sqlservr's `-E` (here `--startup-e`, since sqlcmd's
//! `-E` means a trusted connection), sqlservr's `-P<n>` (here `--schedulers n`, since sqlcmd's
//! `-P` is the password: n schedulers, SQL Server's undocumented option for experiments;
//! default one per CPU) and 'max server memory (MB)', which sizes the
//! buffer pool. The errorlog lists them under "Command Line Startup Parameters", as SQL
//! Server's does.
//!
//! 'max server memory (MB)' is also an sp_configure option, configured in the data directory
//! and used from the next start; the startup option overrides it for one run. Deviation: SQL
//! Server has no such startup option, and applies the sp_configure value at RECONFIGURE.

use clap::Args;
use engine::instance::InstanceConfig;

#[derive(Args, Debug, Clone)]
pub struct StartupArgs {
    /// A startup trace flag (sqlservr -T); repeat it for more: -T 1165 -T 3004.
    #[arg(short = 'T', value_name = "FLAG")]
    pub trace_flags: Vec<u16>,
    /// sqlservr's -E: a file that gets an extent gets 64 in a row.
    #[arg(long)]
    pub startup_e: bool,
    /// 'max server memory (MB)': the buffer pool's size for this run (at least 128, as in SQL
    /// Server). Without it, the value sp_configure configured (default 512).
    #[arg(long, value_parser = clap::value_parser!(u32).range(128..))]
    pub max_server_memory_mb: Option<u32>,
    /// sqlservr's -P<n> (here `--schedulers`, since sqlcmd's -P is the password): n
    /// schedulers, so that at most n sessions run at once (default: one per CPU of this
    /// machine). A 2-CPU machine given 16 behaves as a 16-scheduler server.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub schedulers: Option<u16>,
}

impl StartupArgs {
    /// Sets these options on an instance's configuration.
    pub fn apply(&self, config: &mut InstanceConfig) {
        config.startup_trace_flags = self.trace_flags.clone();
        config.startup_e = self.startup_e;
        config.max_server_memory_mb = self.max_server_memory_mb;
        config.schedulers = self.schedulers.map(usize::from);
    }
}
