//! `extentdb plan`: describe a filegroup on the command line or in a TOML file, simulate N
//! extent allocations with the engine's allocator, and print skip targets, shares, growth
//! events and when the filegroup fills.
//!
//! File syntax: `--file name=data,size=5MB,free=44,growth=64MB,maxsize=1GB` (keys: name, size,
//! free or used extents, growth, maxsize). TOML: `[[file]]` tables with the same keys, plus
//! optional top-level `allocations`, `database`, `e_option`, `autogrow_all_files`.

use clap::Args;
use engine::database::resolve_growth;
use engine::plan::{PlanConfig, PlanFile, PlanReport, simulate};
use engine::units::{PAGES_PER_MB, SizeSpec, kb_to_pages};
use serde::Deserialize;

#[derive(Args)]
pub struct PlanArgs {
    /// A file of the filegroup: name=N,size=S[,free=F|used=U][,growth=G][,maxsize=M]. The first is the primary file.
    #[arg(long = "file")]
    files: Vec<String>,
    /// A TOML file describing the filegroup ([[file]] tables with the same keys).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Extent allocations to simulate.
    #[arg(long, default_value_t = 10_000)]
    allocations: u64,
    /// The -E startup option: 64 consecutive extents per file.
    #[arg(short = 'E', long = "e-option")]
    e_option: bool,
    /// AUTOGROW_ALL_FILES on the filegroup (or trace flag 1117).
    #[arg(long)]
    autogrow_all_files: bool,
    /// Print the trace flag 1165 errorlog lines of every recalculation.
    #[arg(long)]
    trace: bool,
    /// Database name shown in the trace lines.
    #[arg(long, default_value = "plan")]
    database: String,
    /// Recalculations listed in full (the first and last ones are shown).
    #[arg(long, default_value_t = 6)]
    show_recalculations: usize,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TomlPlan {
    allocations: Option<u64>,
    database: Option<String>,
    e_option: Option<bool>,
    autogrow_all_files: Option<bool>,
    #[serde(default)]
    file: Vec<TomlFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    name: String,
    size: String,
    free: Option<u32>,
    used: Option<u32>,
    growth: Option<String>,
    maxsize: Option<String>,
}

fn parse_size_pages(text: &str, what: &str) -> Result<u32, String> {
    match SizeSpec::parse(text) {
        Some(SizeSpec::Kb(kb)) => {
            u32::try_from(kb_to_pages(kb)).map_err(|_| format!("{what} {text} is too large"))
        }
        _ => Err(format!("{what} '{text}' is not a size such as 5MB, 512KB or 1GB")),
    }
}

fn to_plan_file(file: TomlFile) -> Result<PlanFile, String> {
    let size_pages = parse_size_pages(&file.size, "size")?;
    let max_size_pages = match file.maxsize.as_deref() {
        None => None,
        Some(text) if text.eq_ignore_ascii_case("unlimited") => None,
        Some(text) => Some(parse_size_pages(text, "maxsize")?),
    };
    // No growth given: the engine's default FILEGROWTH (64 MB); growth=0 turns autogrowth off.
    let growth_spec = match file.growth.as_deref() {
        None => None,
        Some(text) => Some(
            SizeSpec::parse(text)
                .ok_or_else(|| format!("growth '{text}' is not a size or percentage"))?,
        ),
    };
    let growth = resolve_growth(growth_spec, &file.name, max_size_pages).map_err(|e| e.message)?;
    let total_extents = size_pages / 8;
    let free_extents = match (file.free, file.used) {
        (Some(_), Some(_)) => {
            return Err(format!("file {}: give free= or used=, not both", file.name));
        }
        (Some(free), None) => Some(free),
        (None, Some(used)) => Some(total_extents.saturating_sub(used)),
        (None, None) => None,
    };
    if free_extents.is_some_and(|free| free > total_extents) {
        return Err(format!(
            "file {}: {} free extents do not fit in {total_extents} extents",
            file.name,
            free_extents.unwrap_or(0)
        ));
    }
    Ok(PlanFile { name: file.name, size_pages, free_extents, growth, max_size_pages })
}

/// Parses `name=data,size=5MB,free=44`.
fn parse_file_arg(arg: &str) -> Result<TomlFile, String> {
    let mut file = TomlFile {
        name: String::new(),
        size: String::new(),
        free: None,
        used: None,
        growth: None,
        maxsize: None,
    };
    for part in arg.split(',') {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' in --file {arg} is not key=value"))?;
        let value = value.trim().to_string();
        let number = |v: &str| {
            v.parse::<u32>().map_err(|_| format!("{key}={v} is not a whole number of extents"))
        };
        match key.trim() {
            "name" => file.name = value,
            "size" => file.size = value,
            "free" => file.free = Some(number(&value)?),
            "used" => file.used = Some(number(&value)?),
            "growth" | "filegrowth" => file.growth = Some(value),
            "maxsize" => file.maxsize = Some(value),
            other => {
                return Err(format!(
                    "unknown key '{other}' in --file {arg} (name, size, free, used, growth, maxsize)"
                ));
            }
        }
    }
    if file.name.is_empty() || file.size.is_empty() {
        return Err(format!("--file {arg} needs at least name= and size="));
    }
    Ok(file)
}

fn build_config(args: &PlanArgs) -> Result<PlanConfig, String> {
    let mut toml_plan = TomlPlan::default();
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml_plan = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut files = Vec::new();
    for file in toml_plan.file {
        files.push(to_plan_file(file)?);
    }
    for arg in &args.files {
        files.push(to_plan_file(parse_file_arg(arg)?)?);
    }
    if files.is_empty() {
        return Err("describe at least one file with --file or --config".into());
    }
    Ok(PlanConfig {
        database: toml_plan.database.unwrap_or_else(|| args.database.clone()),
        files,
        allocations: toml_plan.allocations.unwrap_or(args.allocations),
        e_option: args.e_option || toml_plan.e_option.unwrap_or(false),
        autogrow_all_files: args.autogrow_all_files
            || toml_plan.autogrow_all_files.unwrap_or(false),
    })
}

pub fn run(args: &PlanArgs) -> Result<(), String> {
    let config = build_config(args)?;
    let report = simulate(&config, false);
    out!("{}", render(&config, &report, args.show_recalculations));
    if args.trace {
        outln!("\nTrace flag 1165 errorlog lines:");
        for line in report.trace_lines(&config.database) {
            outln!("{line}");
        }
    }
    Ok(())
}

fn mb(pages: u32) -> String {
    let value = f64::from(pages) / f64::from(PAGES_PER_MB);
    if value.fract() == 0.0 { format!("{value:.0}") } else { format!("{value:.2}") }
}

/// The report as text.
pub fn render(config: &PlanConfig, report: &PlanReport, show_recalculations: usize) -> String {
    let mut out = String::new();
    let options = match (config.e_option, config.autogrow_all_files) {
        (true, true) => " with -E and AUTOGROW_ALL_FILES",
        (true, false) => " with -E",
        (false, true) => " with AUTOGROW_ALL_FILES",
        (false, false) => "",
    };
    out += &format!(
        "{} extent allocations requested in a filegroup of {} files{options}.\n\n",
        config.allocations,
        config.files.len()
    );
    let count = report.recalculations.len();
    out += &format!("Skip targets ({count} recalculation{}):\n", if count == 1 { "" } else { "s" });
    let total = report.recalculations.len();
    let head = show_recalculations.div_ceil(2);
    for (index, (at, recalc)) in report.recalculations.iter().enumerate() {
        if total > show_recalculations && index == head {
            out += &format!("  ... {} more ...\n", total - show_recalculations);
        }
        if total > show_recalculations
            && index >= head
            && index < total - (show_recalculations - head)
        {
            continue;
        }
        let files: Vec<String> = recalc
            .files
            .iter()
            .map(|f| {
                format!("[{}] ({}) {} free -> {}", f.name, f.file_id, f.free_extents, f.skip_target)
            })
            .collect();
        out += &format!("  after {at:>9} allocations: {}\n", files.join(", "));
    }
    out += "\nAllocations per file:\n";
    out += &format!(
        "  {:<7} {:<16} {:>10} {:>11} {:>10} {:>7} {:>13} {:>10}\n",
        "file_id",
        "name",
        "size_MB",
        "free_before",
        "allocated",
        "share",
        "size_after_MB",
        "free_after"
    );
    let allocated = report.allocated.max(1);
    for file in &report.files {
        let initial_size =
            config.files.iter().find(|f| f.name == file.name).map_or(0, |f| f.size_pages);
        let share = 100.0 * file.allocated_extents as f64 / allocated as f64;
        out += &format!(
            "  {:<7} {:<16} {:>10} {:>11} {:>10} {:>6.2}% {:>13} {:>10}\n",
            file.file_id,
            file.name,
            mb(initial_size),
            file.initial_free_extents,
            file.allocated_extents,
            share,
            mb(file.final_size_pages),
            file.final_free_extents
        );
    }
    out += &format!("\nGrowth events: {}\n", report.growths.len());
    for growth in &report.growths {
        out += &format!(
            "  after {:>9} allocations: [{}] ({}) grew from {} MB to {} MB\n",
            growth.at_allocation,
            growth.name,
            growth.file_id,
            mb(growth.old_size_pages),
            mb(growth.new_size_pages)
        );
    }
    match report.full_at {
        Some(done) => {
            out += &format!(
                "\nThe filegroup is full after {done} allocations: allocation {} would raise error 1105.\n",
                done + 1
            )
        }
        None => out += &format!("\nAll {} allocations fit.\n", report.allocated),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::filegroup::Growth;

    #[test]
    fn file_arguments_parse_like_the_readme_shows() {
        let file = to_plan_file(parse_file_arg("name=data,size=5MB,free=44").unwrap()).unwrap();
        assert_eq!(file.size_pages, 640);
        assert_eq!(file.growth, Growth::Pages(8192));
        let fixed = to_plan_file(parse_file_arg("name=data,size=5MB,growth=0").unwrap()).unwrap();
        assert_eq!(fixed.growth, Growth::None);
        assert_eq!(file.free_extents, Some(44));
        let used =
            to_plan_file(parse_file_arg("name=x,size=5MB,used=36,growth=10%,maxsize=1GB").unwrap())
                .unwrap();
        assert_eq!(used.free_extents, Some(44));
        assert_eq!(used.growth, Growth::Percent(10));
        assert_eq!(used.max_size_pages, Some(131_072));
        assert!(parse_file_arg("name=x").is_err());
        assert!(parse_file_arg("name=x,size=5MB,colour=red").is_err());
        assert!(to_plan_file(parse_file_arg("name=x,size=5MB,free=81").unwrap()).is_err());
    }
}
