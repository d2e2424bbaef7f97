//! `extentdb examples`: every seed experiment in examples/ runs clean (`-b`: any error fails
//! the run), and each shows its seed's phenomenon.

use std::process::Command;

fn examples(only: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    examples_in(dir.path(), only)
}

/// `extentdb examples -b` in `dir`, which may hold an earlier run's data.
fn examples_in(dir: &std::path::Path, only: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_extentdb"))
        .args(["examples", "-b", "--dir"])
        .arg(dir)
        .args(only)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// The line of `text` that starts with `prefix`, split into words.
fn row<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} row in\n{text}"));
    line.split_whitespace().collect()
}

#[test]
fn seed000_the_new_large_file_gets_skip_target_1_and_most_extents() {
    let dir = tempfile::tempdir().unwrap();
    let out = examples_in(dir.path(), &["seed000"]);
    assert!(
        out.contains("File [ThirdFile] (4) has 3996 free extents and skip target of 1."),
        "{out}"
    );
    let third: u32 = row(&out, "ThirdFile ")[1].parse().unwrap();
    let first: u32 = row(&out, "Company_data ")[1].parse().unwrap();
    assert!(third > 10 * first, "ThirdFile {third} extents, Company_data {first}");
    let svg = chart(dir.path(), "seed000_extents_per_file.svg");
    for text in ["ThirdFile", "Company_data", &format!("\n{third}\n"), &format!("\n{first}\n")] {
        assert!(svg.contains(text), "{text}");
    }
}

/// Seed 001's load runs on 1, 2, 4 and 8 files, each with its report in the seed's columns,
/// then the PFS latch waits side by side. (Whether PFS waits fall with more files is timing,
/// asserted with a latch-holding seam in the engine's tests, not here.)
#[test]
fn seed001_runs_its_load_on_one_to_eight_files_and_tabulates_pfs_waits() {
    let dir = tempfile::tempdir().unwrap();
    let out = examples_in(dir.path(), &["seed001", "--seed001-rows", "16000"]);
    for files in [1, 2, 4, 8] {
        let heading = format!("bench insert: 16 sessions, {files} file(s), key Guid: 16000 rows");
        assert!(out.contains(&heading), "{out}");
    }
    assert_eq!(out.matches("WaitType                    Wait_S").count(), 4, "{out}");
    let table = out.split("PfsWaitsPer1000Rows").nth(1).expect("the PFS table");
    for files in ["1", "2", "4", "8"] {
        let cells = row(table, &format!("{files} "));
        let rows_per_s: f64 = cells[1].parse().unwrap();
        let (waits, per_1000): (u64, f64) = (cells[2].parse().unwrap(), cells[3].parse().unwrap());
        assert!(rows_per_s > 0.0, "{cells:?}");
        assert!((waits as f64 * 1000.0 / 16000.0 - per_1000).abs() < 0.01, "{cells:?}");
    }
    // The same figures as charts: a bar per data-file count, its value above it.
    let pfs_chart = chart(dir.path(), "seed001_pfs_waits.svg");
    let rows_chart = chart(dir.path(), "seed001_rows_per_s.svg");
    for files in ["1", "2", "4", "8"] {
        let cells = row(table, &format!("{files} "));
        let per_1000: f64 = cells[3].parse().unwrap();
        let shown =
            if per_1000.fract() == 0.0 { format!("{per_1000:.0}") } else { cells[3].into() };
        assert!(pfs_chart.contains(&format!("\n{shown}\n")), "{files} files: {shown}");
        assert!(rows_chart.contains(&format!("\n{}\n", cells[1])), "{files} files: {}", cells[1]);
        let label = if files == "1" { "1 data file".into() } else { format!("{files} data files") };
        assert!(pfs_chart.contains(&label), "{label}");
    }
}

/// A chart the examples wrote (SVG), as text.
fn chart(dir: &std::path::Path, name: &str) -> String {
    let path = dir.join("charts").join(name);
    let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(svg.starts_with("<svg"), "{svg}");
    svg
}

#[test]
fn seed002_2022_uses_ifi_for_64mb_log_growths_and_makes_fewer_vlfs() {
    let dir = tempfile::tempdir().unwrap();
    // --drop-after: each rule's run needs 1.7 GB (its 1 GB growth zeroed), and CI's disk may
    // not hold both at once (a 1 GB growth that found no room failed there with 5149 and 9002).
    let out = examples_in(dir.path(), &["seed002", "--drop-after"]);
    for rule in ["2019", "2022"] {
        assert!(!dir.path().join(format!("seed002-{rule}")).exists(), "{rule}'s databases stay");
    }
    assert!(out.contains("The examples' databases were deleted as each example ended"), "{out}");
    let runs: Vec<&str> = out.split("==== seed002 (SQL Server 2022 rules): log").collect();
    assert_eq!(runs.len(), 2, "{out}");
    let (sql2019, sql2022) = (runs[0], runs[1]);
    // 2019 zeroes the 64 MB growths; 2022 does not: its 64 MB database's zeroing row shows no
    // wait (sys.dm_os_wait_stats lists the type with zeros, as SQL Server does). The 1 GB
    // growth is zeroed under both rules.
    let zeroing_waits = |text: &str, database: &str| -> u64 {
        let columns = row(text, &format!("{database:<13} PREEMPTIVE_OS_WRITEFILEGATHER"));
        columns[2].parse().expect("waiting_tasks_count")
    };
    assert!(zeroing_waits(sql2019, "ifi_64") > 0, "{sql2019}");
    assert_eq!(zeroing_waits(sql2022, "ifi_64"), 0, "{sql2022}");
    assert!(zeroing_waits(sql2022, "ifi_1024") > 0, "{sql2022}");
    let vlfs = |text: &str| -> u32 {
        let table = text.split("VLFCount").nth(1).expect("the VLF query's result");
        row(table, "ifi_64 ")[1].parse().unwrap()
    };
    assert!(vlfs(sql2022) < vlfs(sql2019), "2022 makes fewer VLFs for the same growths");
    // The seed's Extended Events session sees the same: its wait_info_external events, read
    // from its event file per database (the database_name action), and one
    // database_file_size_change per growth.
    let xe_zeroing = |text: &str, database: &str| -> Option<u64> {
        let table = text.split("xe_zeroing_waits").nth(1).expect("the XE zeroing query's result");
        let table = table.split("rows affected").next().unwrap_or_default();
        table
            .lines()
            .find(|l| l.starts_with(&format!("{database} ")))
            .map(|line| line.split_whitespace().nth(1).expect("xe_zeroing_waits").parse().unwrap())
    };
    assert_eq!(xe_zeroing(sql2019, "ifi_64"), Some(zeroing_waits(sql2019, "ifi_64")), "{sql2019}");
    assert_eq!(xe_zeroing(sql2022, "ifi_64"), None, "no zeroing event under 2022: {sql2022}");
    assert_eq!(xe_zeroing(sql2022, "ifi_1024"), Some(zeroing_waits(sql2022, "ifi_1024")));
    let xe_growths = |text: &str, database: &str| -> u64 {
        let table = text.split("xe_growth_events").nth(1).expect("the XE growth query's result");
        row(table, &format!("{database} "))[1].parse().unwrap()
    };
    for (text, database) in [(sql2019, "ifi_64"), (sql2022, "ifi_64"), (sql2022, "ifi_1024")] {
        assert!(xe_growths(text, database) >= 1, "{database}: {text}");
    }
    // The VLF chart's bars carry the counts the script printed, one series per rule.
    let vlf_chart = chart(dir.path(), "seed002_vlfs.svg");
    for text in ["SQL Server 2019", "SQL Server 2022", "64 MB log growth", "1 GB log growth"] {
        assert!(vlf_chart.contains(text), "{text}");
    }
    for count in [vlfs(sql2019), vlfs(sql2022)] {
        assert!(vlf_chart.contains(&format!("\n{count}\n")), "{count} VLFs");
    }
    chart(dir.path(), "seed002_log_growth_ms.svg");
}

#[test]
fn seed003_read_ahead_reads_in_far_fewer_larger_ios() {
    let dir = tempfile::tempdir().unwrap();
    let out = examples_in(dir.path(), &["seed003"]);
    let off = row(&out, "TF 652 on");
    let on = row(&out, "read-ahead ");
    let (reads_off, per_read_off): (u64, u64) =
        (off[off.len() - 3].parse().unwrap(), off[off.len() - 1].parse().unwrap());
    let (reads_on, per_read_on): (u64, u64) = (on[1].parse().unwrap(), on[3].parse().unwrap());
    assert_eq!(per_read_off, 8192, "one page a read under TF 652");
    assert!(reads_on * 10 < reads_off, "{reads_on} reads against {reads_off}");
    assert!(per_read_on > 128 * 1024, "read-ahead I/Os of {per_read_on} bytes");
    let reads = chart(dir.path(), "seed003_reads.svg");
    assert!(reads.contains(&format!("\n{reads_off}\n")), "{reads_off} reads");
    assert!(reads.contains(&format!("\n{reads_on}\n")), "{reads_on} reads");
    let kb_per_read = chart(dir.path(), "seed003_kb_per_read.svg");
    assert!(kb_per_read.contains("\n8\n"), "8 KB a read under TF 652");
    assert!(kb_per_read.contains("TF 652 on (no read-ahead)"));
}

#[test]
fn seed004_allocations_rotate_over_four_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = examples_in(dir.path(), &["seed004"]);
    assert_eq!(row(&out, "files1 ")[2], "200", "{out}");
    for file in ["f4_data1", "f4_data2", "f4_data3", "f4_data4"] {
        let count: u32 = row(&out, &format!("files4        {file}"))[2].parse().unwrap();
        assert!((40..=60).contains(&count), "{file}: {count} of 200");
    }
    let svg = chart(dir.path(), "seed004_tables_per_file.svg");
    for file in ["f1_data", "f4_data1", "f4_data2", "f4_data3", "f4_data4"] {
        assert!(svg.contains(file), "{file}");
    }
    assert!(svg.contains("\n200\n"));
}

/// Seeds 000 and 001's CHECKDB experiment: the database checks clean, then each
/// configuration's elapsed time, and CXPACKET waits from the parallel runs. (Which one is
/// faster is timing, recorded by `bench checkdb` in docs/benchmarks.md, not asserted here.)
#[test]
fn checkdb_checks_clean_and_times_each_configuration_and_dop() {
    let out = examples(&["checkdb"]);
    assert!(
        out.contains(
            "CHECKDB found 0 allocation errors and 0 consistency errors in database 'CheckMe'."
        ),
        "{out}"
    );
    assert!(out.contains("There are 50000 rows in"), "{out}");
    for (configuration, dop) in
        [("full", "1"), ("full", "2"), ("PHYSICAL_ONLY", "1"), ("PHYSICAL_ONLY", "2")]
    {
        let found = out.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() == 3 && words[0] == configuration && words[1] == dop
        });
        assert!(found, "no {configuration} {dop} row in\n{out}");
    }
    let cx: u64 = out
        .lines()
        .skip_while(|l| !l.starts_with("cxpacket_waits"))
        .nth(2)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no cxpacket_waits in\n{out}"));
    assert!(cx >= 10, "{out}");
}

#[test]
fn every_example_runs_clean() {
    let out = examples(&["top_waits"]);
    assert!(out.contains("WaitType"), "{out}");
}

/// The run ends by saying where the databases stayed and what they hold on disk, and the
/// directory it names for the shell is one an example used.
#[test]
fn the_run_ends_with_where_the_databases_are_and_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let out = examples_in(dir.path(), &["seed003"]);
    let last = out.lines().last().unwrap();
    let shown = format!("The examples' databases stay in {} (", dir.path().display());
    assert!(last.starts_with(&shown), "{last}");
    let gb: f64 = last[shown.len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(gb > 0.0, "{last}");
    let example_dir = dir.path().join("seed003");
    assert!(last.contains(&format!("--dir {}`", example_dir.display())), "{last}");
    assert!(example_dir.join("ERRORLOG").exists());
}

/// The main job runs again in the same data directory (its default, `extentdb-data`): each
/// example starts over. Regression: seed000 found its database still there (its script's
/// DATABASEPROPERTYEX(..., 'Version') was NULL), and top_waits divided by zero on an instance
/// whose only waits were under 1 ms.
#[test]
fn examples_run_again_in_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    let only = ["seed000", "seed001", "--seed001-rows", "4000", "top_waits"];
    examples_in(dir.path(), &only);
    let again = examples_in(dir.path(), &only);
    assert!(!again.contains("Msg "), "{again}");
}
