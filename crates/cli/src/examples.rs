//! `extentdb examples`: the seeds' experiments (examples/*.sql), run on the embedded engine,
//! each in its own directory under the data directory, with a heading that says what the
//! experiment shows. Seed 002's runs twice, with SQL Server 2019's and 2022's log rules.
//! The scripts are compiled in, so the command works from any directory. Seed 001's
//! experiment is a concurrent load, which one script cannot express: it is `bench insert`'s
//! load, 16 sessions on 1, 2, 4 and 8 data files ([`crate::bench_insert::seed001_example`]).
//!
//! Charts: seed 001's and seed 002's figures are also drawn as SVG bar charts in the data
//! directory's `charts/` ([`crate::charts`]): PFS latch waits per 1,000 rows and rows per
//! second by data files; VLFs and log growth time by growth setting, one series per SQL
//! Server version's rules. Seed 002's come from a query run after its script (not printed).

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

const EXAMPLES: [Example; 6] = [
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
    /// Run only these examples (seed000, seed001, seed002, seed003, seed004, top_waits).
    pub only: Vec<String>,
    /// Rows seed001 inserts in each of its four runs, over its 16 sessions.
    #[arg(long, default_value_t = 160_000)]
    pub seed001_rows: u64,
    /// Stop at the first batch that raises an error and exit with 1.
    #[arg(short = 'b')]
    pub stop_on_error: bool,
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
    // Seed 002's figures under each rule, for its charts once both have run.
    let mut seed002_runs = Vec::new();
    for example in
        EXAMPLES.iter().filter(|e| args.only.is_empty() || args.only.iter().any(|n| n == e.name))
    {
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
            let chart_query = (example.name == "seed002").then_some(SEED002_CHART_QUERY);
            let ok = match example.script {
                Some(script) => {
                    let (ok, rows) =
                        run_script(script, *rule, &dir, args.stop_on_error, chart_query)?;
                    if chart_query.is_some() {
                        seed002_runs.push((*rule, rows));
                    }
                    ok
                }
                None => crate::bench_insert::seed001_example(&dir, args.seed001_rows, &charts_dir)
                    .map(|()| true)?,
            };
            if chart_query.is_some() && seed002_runs.len() == example.rules.len() {
                seed002_charts(&seed002_runs, &charts_dir)?;
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
    if let Some(last_dir) = last_dir {
        report_footprint(&args.dir, &last_dir);
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

/// Runs an example's script; then, if given, `chart_query` (not printed), whose rows (each
/// value as sqlcmd shows it) feed the example's charts.
fn run_script(
    script: &str,
    rule: VlfRule,
    dir: &std::path::Path,
    stop_on_error: bool,
    chart_query: Option<&str>,
) -> Result<(bool, Vec<Vec<String>>), String> {
    let mut config = InstanceConfig::new(dir);
    config.vlf_rule = rule;
    let server = Server::start(config).map_err(|e| e.to_string())?;
    let mut session = Session::new(&server);
    let ok = tsql::sqlcmd::run_script(&mut session, script, stop_on_error, &mut |t| {
        crate::write_stdout(t)
    });
    let mut rows = Vec::new();
    if let Some(query) = chart_query {
        session.execute(query, &mut |output| {
            if let tsql::server::Output::Rows(set) = output {
                let shown = |row: &Vec<engine::record::Value>| {
                    row.iter().map(tsql::value::display).collect::<Vec<String>>()
                };
                rows = set.rows.iter().map(shown).collect();
            }
        });
    }
    drop(session);
    server.shutdown().map_err(|e| e.to_string())?;
    Ok((ok, rows))
}

/// Seed 002's figures per database (ifi_1024, ifi_64): its VLF count and the time its log
/// growths took, from the default trace (EventClass 93), as the script's own queries read
/// them.
const SEED002_CHART_QUERY: &str = "
SELECT d.name, COUNT(li.database_id) AS vlfs,
       (SELECT COALESCE(SUM(t.Duration / 1000.0), 0)
        FROM sys.fn_trace_gettable(
               (SELECT REVERSE(SUBSTRING(REVERSE([path]), CHARINDEX(N'\\', REVERSE([path])), 260)) + N'log.trc'
                FROM sys.traces WHERE is_default = 1), DEFAULT) AS t
        WHERE t.EventClass = 93 AND t.DatabaseName = d.name) AS growth_ms
FROM sys.databases AS d
CROSS APPLY sys.dm_db_log_info(d.database_id) AS li
WHERE d.name LIKE N'ifi%'
GROUP BY d.name
ORDER BY d.name";

/// Seed 002's charts: VLFs, and the time log growths took, for each growth setting under
/// SQL Server 2019's and 2022's rules.
fn seed002_charts(
    runs: &[(VlfRule, Vec<Vec<String>>)],
    charts_dir: &std::path::Path,
) -> Result<(), String> {
    let series: Vec<String> =
        runs.iter().map(|(rule, _)| format!("SQL Server {}", rule.name())).collect();
    let series: Vec<&str> = series.iter().map(String::as_str).collect();
    let value = |rows: &[Vec<String>], database: &str, column: usize| -> f64 {
        let row = rows.iter().find(|row| row[0] == database);
        row.and_then(|row| row[column].parse().ok()).unwrap_or(0.0)
    };
    let groups = |column: usize| -> Vec<crate::charts::BarGroup> {
        [("ifi_64", "64 MB log growth"), ("ifi_1024", "1 GB log growth")]
            .into_iter()
            .map(|(database, label)| crate::charts::BarGroup {
                label: label.into(),
                values: runs.iter().map(|(_, rows)| value(rows, database, column)).collect(),
            })
            .collect()
    };
    let charts = [
        (
            "seed002_vlfs.svg",
            crate::charts::BarChart {
                title: "Seed 002: VLFs after the load (log 32 MB at the start)",
                y_desc: "VLFs",
                series: &series,
                groups: groups(1),
            },
        ),
        (
            "seed002_log_growth_ms.svg",
            crate::charts::BarChart {
                title: "Seed 002: time spent growing the log (default trace, EventClass 93)",
                y_desc: "ms",
                series: &series,
                groups: groups(2),
            },
        ),
    ];
    for (file, chart) in charts {
        let path = charts_dir.join(file);
        chart.write_svg(&path)?;
        outln!("chart: {}", path.display());
    }
    Ok(())
}
