//! Read-ahead for scans (reference §6.3): a scan of a heap or a B-tree reads the unit's pages
//! in runs of up to 64 contiguous pages (512 KB) of one file, each run in a single I/O, a run
//! ahead of the page the scan is on; trace flag 652 turns it off, and then every page is one
//! 8 KB read. The runs come from the allocation unit's IAM pages and PFS (which pages it
//! owns), sorted by file and page, as SQL Server builds a disk-ordered list from the IAM.
//!
//! Deviations: the read runs on the scanning thread before the scan reads the run's first
//! page, not on an I/O completion port while the scan goes on, so there is no overlap of I/O
//! and work; B-tree scans plan from the IAM too (SQL Server uses the level above the leaves);
//! a unit of fewer than 16 pages is not read ahead, for heaps and indexes alike.

use crate::database::Database;
use crate::error::SqlResult;
use crate::units::PageId;
use std::collections::HashMap;

/// Trace flag 652: no read-ahead.
pub const TF_DISABLE_READ_AHEAD: u16 = 652;
/// The largest read-ahead I/O, in pages (512 KB).
pub const MAX_RUN_PAGES: u32 = 64;
/// Units smaller than this are not read ahead.
pub const MIN_UNIT_PAGES: usize = 16;

/// A run of contiguous pages of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    first: PageId,
    count: u32,
}

/// The read-ahead of one scan.
pub struct ReadAhead {
    runs: Vec<Run>,
    issued: Vec<bool>,
    run_of_page: HashMap<PageId, usize>,
}

/// Cuts sorted pages into runs of consecutive pages of one file, at most [`MAX_RUN_PAGES`]
/// long.
fn runs_of(sorted: &[PageId]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for page in sorted {
        match runs.last_mut() {
            Some(run)
                if run.first.file_id == page.file_id
                    && run.first.page_no + run.count == page.page_no
                    && run.count < MAX_RUN_PAGES =>
            {
                run.count += 1
            }
            _ => runs.push(Run { first: *page, count: 1 }),
        }
    }
    runs
}

impl ReadAhead {
    /// The read-ahead plan of a scan of allocation unit `au_id`; None when TF 652 is on or
    /// the unit is too small.
    pub fn for_unit(db: &Database, au_id: u64) -> SqlResult<Option<ReadAhead>> {
        if db.instance().trace_flags.is_on(TF_DISABLE_READ_AHEAD) {
            return Ok(None);
        }
        let mut pages: Vec<PageId> = db
            .unit_pages(au_id)?
            .into_iter()
            .filter(|p| p.is_allocated && !p.is_iam)
            .map(|p| p.page)
            .collect();
        pages.sort();
        Ok(ReadAhead::for_pages(db, &pages))
    }

    /// The plan for a unit whose allocated pages (IAM pages left out) the caller has already
    /// listed, sorted; the same rules as [`ReadAhead::for_unit`].
    pub fn for_pages(db: &Database, sorted: &[PageId]) -> Option<ReadAhead> {
        let disabled = db.instance().trace_flags.is_on(TF_DISABLE_READ_AHEAD);
        (!disabled && sorted.len() >= MIN_UNIT_PAGES).then(|| ReadAhead::of_pages(sorted))
    }

    fn of_pages(sorted: &[PageId]) -> ReadAhead {
        let runs = runs_of(sorted);
        let mut run_of_page = HashMap::with_capacity(sorted.len());
        for (index, run) in runs.iter().enumerate() {
            for n in 0..run.count {
                run_of_page.insert(PageId::new(run.first.file_id, run.first.page_no + n), index);
            }
        }
        ReadAhead { issued: vec![false; runs.len()], runs, run_of_page }
    }

    /// Called before the scan reads `page`: reads the run that holds it and the next run, if
    /// they were not read yet.
    pub fn before(&mut self, db: &Database, page: PageId) -> SqlResult<()> {
        let Some(&index) = self.run_of_page.get(&page) else { return Ok(()) };
        for run_index in index..(index + 2).min(self.runs.len()) {
            if !self.issued[run_index] {
                self.issued[run_index] = true;
                let run = self.runs[run_index];
                db.buffer_pool().read_ahead(db.database_id, run.first, run.count)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_break_at_gaps_files_and_64_pages() {
        let mut pages: Vec<PageId> = (0..70).map(|n| PageId::new(1, 100 + n)).collect();
        pages.push(PageId::new(1, 300));
        pages.push(PageId::new(3, 301));
        let runs = runs_of(&pages);
        let shape: Vec<(u16, u32, u32)> =
            runs.iter().map(|r| (r.first.file_id, r.first.page_no, r.count)).collect();
        assert_eq!(shape, vec![(1, 100, 64), (1, 164, 6), (1, 300, 1), (3, 301, 1)]);
    }
}
