//! The what-if planner behind `extentdb plan`: it simulates N extent allocations in one
//! filegroup with the engine's own allocator ([`crate::filegroup::allocate_extent`], the same
//! skip targets, round robin, `-E` runs, recalculation points and growth policy), over files
//! described by their size, free extents, growth and maxsize. It does no I/O: each file is a
//! counter of free extents instead of a GAM page, which is the only difference from the engine.
//!
//! A file given without free or used extents is a new, empty file, laid out as the engine lays
//! out a new file ([`crate::alloc::free_extents_in_range`]). The first file is the primary file
//! (file id 1); the others get ids 3, 4, ... in order, as SQL Server numbers them (2 is the log).

use crate::alloc;
use crate::error::SqlResult;
use crate::filegroup::{self, ExtentSpace, FillControl, Growth, RecalcReport};
use crate::units::{PAGES_PER_EXTENT, extents_in_file};
use crate::waits::SpinlockStats;
use std::sync::Arc;

/// One file of the planned filegroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanFile {
    pub name: String,
    pub size_pages: u32,
    /// Free extents now; None = a new, empty file.
    pub free_extents: Option<u32>,
    pub growth: Growth,
    pub max_size_pages: Option<u32>,
}

/// The question: these files, this many allocations.
#[derive(Clone, Debug)]
pub struct PlanConfig {
    pub database: String,
    pub files: Vec<PlanFile>,
    pub allocations: u64,
    pub e_option: bool,
    pub autogrow_all_files: bool,
}

/// A growth that happened during the simulation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanGrowth {
    /// Extent allocations completed before the growth.
    pub at_allocation: u64,
    pub file_id: u16,
    pub name: String,
    pub old_size_pages: u32,
    pub new_size_pages: u32,
}

/// One file's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanFileOutcome {
    pub file_id: u16,
    pub name: String,
    pub initial_free_extents: u32,
    pub allocated_extents: u64,
    pub final_size_pages: u32,
    pub final_free_extents: u32,
}

/// The answer.
#[derive(Clone, Debug)]
pub struct PlanReport {
    pub allocated: u64,
    /// (allocations completed before it, the recalculation)
    pub recalculations: Vec<(u64, RecalcReport)>,
    pub growths: Vec<PlanGrowth>,
    pub files: Vec<PlanFileOutcome>,
    /// Allocations completed when the filegroup was full and could not grow (1105), if it was.
    pub full_at: Option<u64>,
    /// File ids of each allocation, in order, when requested (tests and small runs).
    pub sequence: Vec<u16>,
}

impl PlanReport {
    /// TF 1165 errorlog lines of every recalculation.
    pub fn trace_lines(&self, database: &str) -> Vec<String> {
        self.recalculations.iter().flat_map(|(_, report)| report.errorlog_lines(database)).collect()
    }
}

struct SimFile {
    file_id: u16,
    name: String,
    size_pages: u32,
    free_extents: u32,
    growth: Growth,
    max_size_pages: Option<u32>,
    allocated: u64,
    is_primary: bool,
}

/// Files in visit order (the engine's: first file, then newest first).
struct SimSpace {
    files: Vec<SimFile>,
    allocated: u64,
    all_files: bool,
    growths: Vec<PlanGrowth>,
}

impl ExtentSpace for SimSpace {
    fn slot_count(&self) -> usize {
        self.files.len()
    }
    fn file_id(&self, slot: usize) -> u16 {
        self.files[slot].file_id
    }
    fn file_name(&self, slot: usize) -> String {
        self.files[slot].name.clone()
    }
    fn free_extents(&self, slot: usize) -> u32 {
        self.files[slot].free_extents
    }
    fn take_extent(&mut self, slot: usize) -> SqlResult<Option<u32>> {
        let file = &mut self.files[slot];
        if file.free_extents == 0 {
            return Ok(None);
        }
        file.free_extents -= 1;
        file.allocated += 1;
        Ok(Some(0))
    }
    fn grow(&mut self, cursor: usize) -> SqlResult<bool> {
        let slots = self.files.len();
        let (files, growths, allocated) = (&mut self.files, &mut self.growths, self.allocated);
        Ok(filegroup::grow_by_policy(cursor, slots, self.all_files, |slot| {
            let file = &mut files[slot];
            let Some(new_size) =
                filegroup::grown_size_pages(file.size_pages, file.growth, file.max_size_pages)
            else {
                return false;
            };
            file.free_extents +=
                alloc::free_extents_in_range(file.size_pages, new_size, file.is_primary);
            growths.push(PlanGrowth {
                at_allocation: allocated,
                file_id: file.file_id,
                name: file.name.clone(),
                old_size_pages: file.size_pages,
                new_size_pages: new_size,
            });
            file.size_pages = new_size;
            true
        }))
    }
}

/// Free extents of a new file of `size_pages` pages, laid out as the engine lays it out.
pub fn new_file_free_extents(size_pages: u32, is_primary: bool) -> u32 {
    alloc::free_extents_in_range(0, size_pages - size_pages % PAGES_PER_EXTENT, is_primary)
}

/// Runs the simulation. `record_sequence` keeps the file id of every allocation.
pub fn simulate(config: &PlanConfig, record_sequence: bool) -> PlanReport {
    let mut files: Vec<SimFile> = config
        .files
        .iter()
        .enumerate()
        .map(|(index, file)| {
            let is_primary = index == 0;
            let file_id = if is_primary { 1 } else { index as u16 + 2 };
            let size_pages = file.size_pages - file.size_pages % PAGES_PER_EXTENT;
            let free =
                file.free_extents.unwrap_or_else(|| new_file_free_extents(size_pages, is_primary));
            SimFile {
                file_id,
                name: file.name.clone(),
                size_pages,
                free_extents: free.min(extents_in_file(size_pages)),
                growth: file.growth,
                max_size_pages: file.max_size_pages,
                allocated: 0,
                is_primary,
            }
        })
        .collect();
    let initial: Vec<(u16, u32)> = files.iter().map(|f| (f.file_id, f.free_extents)).collect();
    files.sort_by_key(|f| f.file_id);
    if files.len() > 1 {
        files[1..].reverse();
    }
    let mut space =
        SimSpace { files, allocated: 0, all_files: config.autogrow_all_files, growths: Vec::new() };
    let fill = FillControl::new(config.e_option, Arc::new(SpinlockStats::default()));
    let mut recalculations = vec![(0, fill.recalculate(&space))];
    let mut sequence = Vec::new();
    let mut full_at = None;
    for done in 0..config.allocations {
        space.allocated = done;
        let mut reports = Vec::new();
        let picked = filegroup::allocate_extent(&fill, &mut space, &mut |report| {
            reports.push(report.clone())
        })
        .expect("the simulated space has no I/O errors");
        recalculations.extend(reports.into_iter().map(|report| (done, report)));
        let Some((slot, _)) = picked else {
            full_at = Some(done);
            break;
        };
        if record_sequence {
            sequence.push(space.files[slot].file_id);
        }
    }
    let allocated = space.files.iter().map(|f| f.allocated).sum();
    let mut outcomes: Vec<PlanFileOutcome> = space
        .files
        .iter()
        .map(|f| PlanFileOutcome {
            file_id: f.file_id,
            name: f.name.clone(),
            initial_free_extents: initial
                .iter()
                .find(|(id, _)| *id == f.file_id)
                .map_or(0, |(_, free)| *free),
            allocated_extents: f.allocated,
            final_size_pages: f.size_pages,
            final_free_extents: f.free_extents,
        })
        .collect();
    outcomes.sort_by_key(|o| o.file_id);
    PlanReport {
        allocated,
        recalculations,
        growths: space.growths,
        files: outcomes,
        full_at,
        sequence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::FileAlloc;

    fn file(name: &str, size_mb: u32, free: Option<u32>) -> PlanFile {
        PlanFile {
            name: name.into(),
            size_pages: size_mb * 128,
            free_extents: free,
            growth: Growth::None,
            max_size_pages: None,
        }
    }

    #[test]
    fn new_file_layout_matches_the_engines() {
        for (size, primary) in
            [(640, false), (640, true), (32_000, false), (600_000, false), (8096, true)]
        {
            let pool = crate::file::tests::test_pool();
            let engine = FileAlloc::new_file(&pool, 3, 5, primary, size).unwrap().free_extents();
            assert_eq!(
                new_file_free_extents(size, primary),
                engine,
                "size {size} primary {primary}"
            );
        }
    }

    #[test]
    fn seed_000_third_file_takes_almost_everything() {
        let config = PlanConfig {
            database: "Company".into(),
            files: vec![
                file("data", 5, Some(44)),
                file("second", 5, None),
                file("third", 250, None),
            ],
            allocations: 10_000,
            e_option: false,
            autogrow_all_files: false,
        };
        let report = simulate(&config, false);
        let first = &report.recalculations[0].1;
        let targets: Vec<(u16, u32, u32)> =
            first.files.iter().map(|f| (f.file_id, f.free_extents, f.skip_target)).collect();
        assert_eq!(targets, vec![(1, 44, 90), (4, 3996, 1), (3, 79, 50)]);
        assert_eq!(first.most_free_file_id, 4);
        // 4,119 free extents in all: the filegroup fills (no growth) before 10,000 allocations.
        assert_eq!(report.full_at, Some(44 + 79 + 3996));
        assert_eq!(report.allocated, 4119);
    }

    #[test]
    fn seed_000_reported_free_extents_give_the_reported_skip_targets() {
        let config = PlanConfig {
            database: "Company".into(),
            files: vec![
                file("Company_data", 5, Some(44)),
                file("SecondFile", 5, Some(79)),
                file("ThirdFile", 250, Some(3995)),
            ],
            allocations: 0,
            e_option: false,
            autogrow_all_files: false,
        };
        let report = simulate(&config, false);
        assert_eq!(
            report.trace_lines("Company"),
            vec![
                "Proportional Fill Recalculation Starting for DB Company with m_cAllocs 0.",
                "Proportional Fill Recalculation Completed for DB Company new m_cAllocs 8192, most free file is file 4.",
                "\tFile [Company_data] (1) has 44 free extents and skip target of 90.",
                "\tFile [ThirdFile] (4) has 3995 free extents and skip target of 1.",
                "\tFile [SecondFile] (3) has 79 free extents and skip target of 50.",
            ]
        );
    }

    #[test]
    fn e_option_and_growth_in_the_planner() {
        let mut grow = file("a", 5, None);
        grow.growth = Growth::Pages(128);
        let config = PlanConfig {
            database: "db".into(),
            files: vec![grow, file("b", 5, None)],
            allocations: 300,
            e_option: true,
            autogrow_all_files: false,
        };
        let report = simulate(&config, true);
        assert!(report.sequence[..64].iter().all(|id| *id == 1), "a run of 64 from the first file");
        assert!(report.sequence[64..128].iter().all(|id| *id == 3));
        assert_eq!(report.full_at, None);
        assert!(
            report
                .growths
                .iter()
                .all(|g| g.file_id == 1 && g.new_size_pages - g.old_size_pages == 128)
        );
        assert!(!report.growths.is_empty());
    }

    #[test]
    fn recalculation_every_8192_allocations() {
        let config = PlanConfig {
            database: "db".into(),
            files: vec![file("a", 1024, None), file("b", 1024, None)],
            allocations: 20_000,
            e_option: false,
            autogrow_all_files: false,
        };
        let report = simulate(&config, false);
        let points: Vec<u64> = report.recalculations.iter().map(|(at, _)| *at).collect();
        assert_eq!(points, vec![0, 8191, 16383]);
        assert_eq!(report.recalculations[1].1.m_c_allocs_before, 8192);
    }
}
