//! `extentdb examples`: the seeds' experiments (examples/*.sql), run on the embedded engine,
//! each in its own directory under the data directory, with a heading that says what the
//! experiment shows. Seed 002's runs twice, with SQL Server 2019's and 2022's log rules.
//! The scripts are compiled in, so the command works from any directory. Seed 001's
//! experiment is a concurrent load, which one script cannot express: it is `bench insert`'s
//! load, 16 sessions on 1, 2, 4 and 8 data files ([`crate::bench_insert::seed001_example`]).
//!
//! Charts: each seed's figures are also drawn as SVG bar charts in the data directory's
//! `charts/`, from the result sets its script printed ([`crate::example_charts`]).

use clap::Args;
use engine::instance::InstanceConfig;
use engine::log::vlf::VlfRule;
use std::path::PathBuf;
use std::time::Instant;
use tsql::server::Server;
use tsql::session::Session;

/// One example: its name, what it reproduces, its script (None: seed 001's concurrent
/// load), and the log rules it runs under.
struct Example {
    name: &'static str,
    title: &'static str,
    script: Option<&'static str>,
    rules: &'static [VlfRule],
}

const EXAMPLES: [Example; 7] = [
    Example {
        name: "seed000",
        title: "proportional fill: skip targets (TF 1165) as files are added, and where the extents go",
        script: Some(include_str!("../../../examples/seed000_proportional_fill.sql")),
        rules: &[VlfRule::Sql2022],
    },
    Example {
        name: "seed001",
        title: "16 sessions insert random GUID keys into 1, 2, 4 and 8 data files: PFS latch waits",
        script: None,
        rules: &[VlfRule::Sql2022],
    },
    Example {
        name: "seed002",
        title: "log growth: zeroing waits, growth events and VLFs for 64 MB and 1 GB growths",
        script: Some(include_str!("../../../examples/seed002_log_growth.sql")),
        rules: &[VlfRule::Sql2019, VlfRule::Sql2022],
    },
    Example {
        name: "seed003",
        title: "read-ahead: I/O count and size of a cold scan with and without TF 652",
        script: Some(include_str!("../../../examples/seed003_read_ahead.sql")),
        rules: &[VlfRule::Sql2022],
    },
    Example {
        name: "seed004",
        title: "create/drop a table per transaction: allocations over 1 and 4 data files",
        script: Some(include_str!("../../../examples/seed004_create_drop.sql")),
        rules: &[VlfRule::Sql2022],
    },
    Example {
        name: "checkdb",
        title: "DBCC CHECKDB by DOP, full and WITH PHYSICAL_ONLY, warm",
        script: Some(include_str!("../../../examples/checkdb_dop.sql")),
        rules: &[VlfRule::Sql2022],
    },
    Example {
        name: "top_waits",
        title: "the standard top-waits query over this instance's waits",
        script: Some(include_str!("../../../examples/top_waits.sql")),
        rules: &[VlfRule::Sql2022],
    },
];

#[derive(Args, Debug)]
pub struct ExamplesArgs {
    /// The data directory; each example runs in a directory of its own under it.
    #[arg(long, default_value = crate::sql::DEFAULT_DIR)]
    pub dir: PathBuf,
    /// Run only these examples (seed000, seed001, seed002, seed003, seed004, checkdb,
    /// top_waits).
    pub only: Vec<String>,
    /// Rows seed001 inserts in each of its four runs, over its 16 sessions.
    #[arg(long, default_value_t = 160_000)]
    pub seed001_rows: u64,
    /// Stop at the first batch that raises an error and exit with 1.
    #[arg(short = 'b')]
    pub stop_on_error: bool,
    /// Delete each example's databases once it has run (its output and charts stay): on a
    /// small disk, seed 002 then needs one run's space (1.7 GB) rather than both rules' at once.
    #[arg(long)]
    pub drop_after: bool,
}

pub fn run(args: &ExamplesArgs) -> Result<(), String> {
    for name in &args.only {
        if !EXAMPLES.iter().any(|e| e.name == name) {
            return Err(format!("no example named {name}"));
        }
    }
    if cfg!(debug_assertions) {
        outln!("(debug build: build with --release for faster runs)");
    }
    let mut failed = Vec::new();
    let mut last_dir = None;
    let charts_dir = args.dir.join("charts");
    std::fs::create_dir_all(&charts_dir).map_err(|e| format!("{}: {e}", charts_dir.display()))?;
    for example in
        EXAMPLES.iter().filter(|e| args.only.is_empty() || args.only.iter().any(|n| n == e.name))
    {
        // The result sets of each rule's run, for the example's charts once all have run.
        let mut runs: Vec<crate::example_charts::ScriptRun> = Vec::new();
        for rule in example.rules {
            let label = if example.rules.len() > 1 {
                format!("{} (SQL Server {} rules)", example.name, rule.name())
            } else {
                example.name.to_string()
            };
            outln!("==== {label}: {}", example.title);
            outln!();
            let started = Instant::now();
            let dir = args.dir.join(match example.rules.len() {
                1 => example.name.to_string(),
                _ => format!("{}-{}", example.name, rule.name()),
            });
            last_dir = Some(dir.clone());
            let ok = match example.script {
                Some(script) => {
                    let (ok, sets) = run_script(script, *rule, &dir, args.stop_on_error)?;
                    runs.push((*rule, sets));
                    ok
                }
                None => {
                    let rows = args.seed001_rows;
                    let seed001 = crate::bench_insert::seed001_example(&dir, rows)?;
                    let written =
                        crate::example_charts::write_seed001(&seed001, rows, &charts_dir)?;
                    print_charts(&written);
                    true
                }
            };
            if args.drop_after && dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            if runs.len() == example.rules.len() {
                let written = crate::example_charts::write(example.name, &runs, &charts_dir)?;
                print_charts(&written);
            }
            outln!(
                "==== {label}: {:.1} s{}",
                started.elapsed().as_secs_f64(),
                if ok { "" } else { ", with errors" }
            );
            outln!();
            if !ok {
                failed.push(label);
                if args.stop_on_error {
                    break;
                }
            }
        }
    }
    match last_dir {
        Some(_) if args.drop_after => outln!(
            "The examples' databases were deleted as each example ended (--drop-after); the charts stay in {}.",
            charts_dir.display()
        ),
        Some(last_dir) => report_footprint(&args.dir, &last_dir),
        None => {}
    }
    if failed.is_empty() { Ok(()) } else { Err(format!("errors in: {}", failed.join(", "))) }
}

/// Says where the examples' databases stayed and how much disk they hold (seed 002's zeroed
/// 1 GB log growths and reserved data files make it several GB), so that a newcomer can look
/// at them again or free the space.
fn report_footprint(dir: &std::path::Path, example_dir: &std::path::Path) {
    let on_disk_bytes = allocated_bytes(dir);
    outln!(
        "The examples' databases stay in {} ({:.1} GB on disk): query one again with `extentdb shell --dir {}`, or delete the directory to free the space.",
        dir.display(),
        on_disk_bytes as f64 / (1u64 << 30) as f64,
        example_dir.display(),
    );
}

/// The disk space the files under `dir` hold (allocated blocks, as du counts them, so that
/// reserved but unwritten space counts and holes do not).
fn allocated_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total_bytes = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else { continue };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total_bytes += metadata.blocks() * 512;
            }
        }
    }
    total_bytes
}

/// Runs an example's script; returns whether it ran without error, and the result sets it
/// printed (for its charts).
fn run_script(
    script: &str,
    rule: VlfRule,
    dir: &std::path::Path,
    stop_on_error: bool,
) -> Result<(bool, Vec<tsql::server::ResultSet>), String> {
    let mut config = InstanceConfig::new(dir);
    config.vlf_rule = rule;
    let server = Server::start(config).map_err(|e| e.to_string())?;
    let mut session = Session::new(&server);
    let mut sets = Vec::new();
    let ok = tsql::sqlcmd::run_script_with(
        &mut session,
        script,
        stop_on_error,
        &mut |t| crate::write_stdout(t),
        &mut |output| {
            if let tsql::server::Output::Rows(set) = output {
                sets.push(set.clone());
            }
        },
    );
    drop(session);
    if !ok {
        print_errorlog_errors(&server.instance.errorlog);
    }
    server.shutdown().map_err(|e| e.to_string())?;
    Ok((ok, sets))
}

/// The errors the instance wrote to its errorlog (each an `Error:` line and its text): a
/// session's message often names only the consequence (9002), the errorlog the cause (the
/// operating system error of a failed growth).
fn print_errorlog_errors(errorlog: &engine::errorlog::ErrorLog) {
    let Ok(entries) = errorlog.read(0) else { return };
    let lines = errorlog_error_lines(&entries);
    if !lines.is_empty() {
        outln!("The errorlog's errors:");
    }
    for line in lines {
        outln!("{line}");
    }
}

/// Each `Error:` entry of an errorlog and the entry after it (the message text), dated.
fn errorlog_error_lines(entries: &[engine::errorlog::ErrorLogEntry]) -> Vec<String> {
    let mut lines = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if !entry.text.starts_with("Error: ") {
            continue;
        }
        lines.push(format!("{} {}", entry.log_date, entry.text));
        if let Some(next) = entries.get(index + 1) {
            lines.push(format!("{} {}", next.log_date, next.text));
        }
    }
    lines
}

fn print_charts(paths: &[std::path::PathBuf]) {
    for path in paths {
        outln!("chart: {}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::errorlog::parse_line;

    #[test]
    fn the_errorlog_errors_are_each_error_line_and_its_text() {
        let text = "\
2026-12-07 10:00:00.000 Server       SQL Server is starting.
2026-12-07 10:00:01.000 spid52       Error: 5149, Severity: 16, State: 3.
2026-12-07 10:00:01.000 spid52       MODIFY FILE encountered operating system error 28.
2026-12-07 10:00:01.000 spid52       Error: 9002, Severity: 17, State: 2.
2026-12-07 10:00:01.000 spid52       The transaction log for database 'x' is full.
2026-12-07 10:00:02.000 spid52       Recovery is complete.";
        let entries: Vec<_> = text.lines().filter_map(parse_line).collect();
        let lines = errorlog_error_lines(&entries);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines[0], "2026-12-07 10:00:01.000 Error: 5149, Severity: 16, State: 3.");
        assert!(lines[1].ends_with("operating system error 28."), "{}", lines[1]);
        assert!(lines[3].ends_with("is full."), "{}", lines[3]);
        assert!(errorlog_error_lines(&entries[..1]).is_empty());
    }
}
