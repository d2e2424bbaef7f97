//! `extentdb`: the command line. Subcommands:
//! - `plan`: the what-if planner for proportional fill (seed 000), no I/O;
//! - `log`: seed 002's log growth on a real log (VLFs, zeroing, growth events);
//! - `bench ...`: the benchmarks of docs/benchmarks.md (release mode);
//! - `examples`: the seeds' experiments as T-SQL scripts (examples/);
//! - `run`, `shell`: T-SQL on the embedded engine.

/// Writes to standard output; a closed pipe (`extentdb ... | head`) ends the program quietly
/// with success instead of a panic.
pub fn write_stdout(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("extentdb: cannot write the output: {err}");
        std::process::exit(1);
    }
}

/// `println!` through [`write_stdout`].
macro_rules! outln {
    () => { $crate::write_stdout("\n") };
    ($($arg:tt)*) => { $crate::write_stdout(&format!("{}\n", format_args!($($arg)*))) };
}

/// `print!` through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::write_stdout(&format!($($arg)*)) };
}

mod bench;
mod bench_checkdb;
mod bench_insert;
mod bench_recovery;
mod bench_seed002;
mod bench_tds;
mod bench_tsql;
mod charts;
mod cpu_time;
mod crash_load;
mod example_charts;
mod examples;
mod file_size_limit;
mod insert_baseline;
mod log_growth;
mod open_files;
mod plan;
mod script_file;
mod serve;
mod sessions;
mod sql;
mod startup;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "extentdb",
    version,
    about = "A storage engine after SQL Server's: pages, extents, filegroups, proportional fill"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate extent allocations in a filegroup with the engine's proportional-fill allocator.
    Plan(plan::PlanArgs),
    /// Grow a real log by autogrowth and show its VLFs, zeroing waits and growth events (seed 002).
    Log(log_growth::LogArgs),
    /// The child process of the crash tests: a transactional load, run until killed.
    #[command(hide = true)]
    CrashLoad(crash_load::CrashLoadArgs),
    /// Run the seeds' experiments (examples/*.sql) and show what each seed shows.
    Examples(examples::ExamplesArgs),
    /// Run T-SQL scripts on the embedded engine, as `sqlcmd -i` does.
    Run(sql::RunArgs),
    /// Serve SQL Server clients over TDS (sa's password from EXTENTDB_SA_PASSWORD at first start).
    Serve(serve::ServeArgs),
    /// An interactive T-SQL shell on the embedded engine (sqlcmd's GO, :r, -Q and -b).
    Shell(sql::ShellArgs),
    /// Run a benchmark (build with --release).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Servers and benchmarks hold many sockets and files (see the module's header).
    open_files::raise_soft_limit();
    // A write past `ulimit -f` is an error the engine answers, not a kill (see the module).
    file_size_limit::catch_file_size_signal();
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args),
        Command::Log(args) => log_growth::run(&args),
        Command::CrashLoad(args) => crash_load::run(&args),
        Command::Bench(command) => bench::run(&command),
        Command::Run(args) => sql::run(&args),
        Command::Examples(args) => examples::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Shell(args) => sql::shell(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("{message}");
            }
            ExitCode::FAILURE
        }
    }
}
