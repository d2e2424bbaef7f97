//! Storage benchmarks (placeholder until written).
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCommand {}

pub fn run(command: &BenchCommand) -> Result<(), String> {
    match *command {}
}
