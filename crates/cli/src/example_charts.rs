//! The charts of `extentdb examples`: each seed's figures, taken from the result sets its
//! script printed (or, for seed 001, from its runs), drawn as SVG bar charts
//! ([`crate::charts`]) in the data directory's `charts/`. A chart shows what its seed shows:
//! where proportional fill put the extents (000), PFS waits falling as data files are added
//! (001), fewer VLFs and no zeroing for 2022's small log growths (002), read-ahead's few large
//! reads (003), allocations spread over four files (004).

use crate::bench_insert::Seed001Run;
use crate::charts::{BarChart, BarGroup};
use engine::log::vlf::VlfRule;
use std::path::{Path, PathBuf};
use tsql::server::ResultSet;

/// An example's result sets under one rule set (seed 002 runs under two).
pub type ScriptRun = (VlfRule, Vec<ResultSet>);

/// Writes `example`'s charts from its runs' result sets; returns their paths. An example
/// without charts has none, and a chart whose result sets are missing (its script failed
/// first) is not drawn.
pub fn write(example: &str, runs: &[ScriptRun], charts_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let charts = match example {
        "seed000" => seed000(runs),
        "seed002" => seed002(runs),
        "seed003" => seed003(runs),
        "seed004" => seed004(runs),
        _ => Vec::new(),
    };
    write_all(charts, charts_dir)
}

/// Seed 001's charts: PFS latch waits per 1,000 rows, and rows per second, by data files.
pub fn write_seed001(
    runs: &[Seed001Run],
    rows: u64,
    charts_dir: &Path,
) -> Result<Vec<PathBuf>, String> {
    let group = |run: &Seed001Run, value: f64| BarGroup {
        label: if run.files == 1 {
            "1 data file".into()
        } else {
            format!("{} data files", run.files)
        },
        values: vec![value],
    };
    let charts = vec![
        (
            "seed001_pfs_waits.svg",
            BarChart {
                title: "Seed 001: PFS page latch waits per 1,000 rows (16 sessions, GUID keys)",
                y_desc: "waits per 1,000 rows",
                series: vec!["PFS waits".into()],
                groups: runs.iter().map(|r| group(r, r.pfs_waits_per_1000_rows(rows))).collect(),
            },
        ),
        (
            "seed001_rows_per_s.svg",
            BarChart {
                title: "Seed 001: rows inserted per second (16 sessions, GUID keys)",
                y_desc: "rows/s",
                series: vec!["rows/s".into()],
                groups: runs.iter().map(|r| group(r, r.rows_per_s)).collect(),
            },
        ),
    ];
    write_all(charts, charts_dir)
}

fn write_all(charts: Vec<(&str, BarChart<'_>)>, charts_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for (file, chart) in charts {
        if chart.groups.is_empty() {
            continue;
        }
        let path = charts_dir.join(file);
        chart.write_svg(&path)?;
        written.push(path);
    }
    Ok(written)
}

/// Every result set whose columns start with `columns` (case-insensitive), in order.
fn result_sets<'r>(sets: &'r [ResultSet], columns: &[&str]) -> Vec<&'r ResultSet> {
    let starts_with = |set: &&ResultSet| {
        set.columns.len() >= columns.len()
            && set.columns.iter().zip(columns).all(|(have, want)| have.eq_ignore_ascii_case(want))
    };
    sets.iter().filter(starts_with).collect()
}

/// The last of [`result_sets`].
fn result_set<'r>(sets: &'r [ResultSet], columns: &[&str]) -> Option<&'r ResultSet> {
    result_sets(sets, columns).pop()
}

fn text(set: &ResultSet, row: usize, column: usize) -> String {
    tsql::value::display(&set.rows[row][column])
}

fn number(set: &ResultSet, row: usize, column: usize) -> f64 {
    text(set, row, column).parse().unwrap_or(0.0)
}

/// A one-series chart of a result set's rows: the label column and the value column.
fn rows_as_groups(set: &ResultSet, label: usize, value: usize) -> Vec<BarGroup> {
    (0..set.rows.len())
        .map(|row| BarGroup { label: text(set, row, label), values: vec![number(set, row, value)] })
        .collect()
}

/// Seed 000: the table's extents per data file (nearly all on the file with skip target 1).
fn seed000(runs: &[ScriptRun]) -> Vec<(&'static str, BarChart<'static>)> {
    let Some(set) = runs.first().and_then(|(_, sets)| result_set(sets, &["file_name", "extents"]))
    else {
        return Vec::new();
    };
    vec![(
        "seed000_extents_per_file.svg",
        BarChart {
            title: "Seed 000: where the table's extents went, by data file (proportional fill)",
            y_desc: "extents",
            series: vec!["extents".into()],
            groups: rows_as_groups(set, 0, 1),
        },
    )]
}

/// Seed 002: VLFs and log growth time for each growth setting, a series per version's rules.
fn seed002(runs: &[ScriptRun]) -> Vec<(&'static str, BarChart<'static>)> {
    let complete =
        |columns: &[&str]| runs.iter().all(|(_, sets)| result_set(sets, columns).is_some());
    if !complete(&["name", "VLFCount"]) || !complete(&["DatabaseName", "GrowthEvents"]) {
        return Vec::new();
    }
    let series: Vec<String> =
        runs.iter().map(|(rule, _)| format!("SQL Server {}", rule.name())).collect();
    // (database, chart label): the script's two databases.
    let databases = [("ifi_64", "64 MB log growth"), ("ifi_1024", "1 GB log growth")];
    let figure = |columns: &[&str], value: usize| -> Vec<BarGroup> {
        databases
            .iter()
            .map(|(database, label)| BarGroup {
                label: (*label).into(),
                values: runs
                    .iter()
                    .map(|(_, sets)| {
                        let Some(set) = result_set(sets, columns) else { return 0.0 };
                        let row = (0..set.rows.len()).find(|r| text(set, *r, 0) == *database);
                        row.map_or(0.0, |row| number(set, row, value))
                    })
                    .collect(),
            })
            .collect()
    };
    vec![
        (
            "seed002_vlfs.svg",
            BarChart {
                title: "Seed 002: VLFs after the load (log 32 MB at the start)",
                y_desc: "VLFs",
                series: series.clone(),
                groups: figure(&["name", "VLFCount"], 1),
            },
        ),
        (
            "seed002_log_growth_ms.svg",
            BarChart {
                title: "Seed 002: time spent growing the log (default trace, EventClass 93)",
                y_desc: "ms",
                series,
                groups: figure(&["DatabaseName", "GrowthEvents", "AverageDuration"], 3),
            },
        ),
    ]
}

/// Seed 003: reads and bytes per read of the cold scan with and without read-ahead.
fn seed003(runs: &[ScriptRun]) -> Vec<(&'static str, BarChart<'static>)> {
    let Some((_, sets)) = runs.first() else { return Vec::new() };
    let scans = result_sets(sets, &["scan", "reads", "kb_read", "bytes_per_read"]);
    let groups = |value: usize, scale: f64| -> Vec<BarGroup> {
        let group = |set: &ResultSet| BarGroup {
            label: text(set, 0, 0),
            values: vec![number(set, 0, value) / scale],
        };
        scans.iter().filter(|set| !set.rows.is_empty()).map(|set| group(set)).collect()
    };
    vec![
        (
            "seed003_reads.svg",
            BarChart {
                title: "Seed 003: reads for one cold scan of CUSTOMER",
                y_desc: "reads",
                series: vec!["reads".into()],
                groups: groups(1, 1.0),
            },
        ),
        (
            "seed003_kb_per_read.svg",
            BarChart {
                title: "Seed 003: size of each read (KB)",
                y_desc: "KB per read",
                series: vec!["KB per read".into()],
                groups: groups(3, 1024.0),
            },
        ),
    ]
}

/// Seed 004: the new tables' first pages per data file, for one file and for four.
fn seed004(runs: &[ScriptRun]) -> Vec<(&'static str, BarChart<'static>)> {
    let Some((_, sets)) = runs.first() else { return Vec::new() };
    let groups: Vec<BarGroup> = result_sets(sets, &["database_name", "data_file", "new_tables"])
        .into_iter()
        .flat_map(|set| rows_as_groups(set, 1, 2))
        .collect();
    vec![(
        "seed004_tables_per_file.svg",
        BarChart {
            title: "Seed 004: where 200 created tables were allocated, by data file",
            y_desc: "tables",
            series: vec!["tables".into()],
            groups,
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script that failed before its queries leaves no result sets: no chart, no error.
    #[test]
    fn missing_result_sets_draw_no_chart() {
        let dir = tempfile::tempdir().unwrap();
        for example in ["seed000", "seed002", "seed003", "seed004"] {
            let runs = vec![(VlfRule::Sql2019, Vec::new()), (VlfRule::Sql2022, Vec::new())];
            assert!(write(example, &runs, dir.path()).unwrap().is_empty(), "{example}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
