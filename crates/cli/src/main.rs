//! `extentdb`: the command line. Subcommands:
//! - `plan`: the what-if planner for proportional fill (seed 000), no I/O;
//! - `bench storage`: the storage benchmarks of docs/benchmarks.md (release mode).

mod bench;
mod bench_insert;
mod plan;

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
    /// Run a benchmark (build with --release).
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args),
        Command::Bench(command) => bench::run(&command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
