//! Extent allocation across the files of a filegroup: round robin with proportional fill
//! (reference §3.5, seed 000), the `-E` startup option, the FGCB_PRP_FILL lock, and the growth
//! policy. The engine ([`crate::database`]) and the planner ([`crate::plan`]) both allocate
//! through [`allocate_extent`], so the planner's answers are the engine's behaviour.
//!
//! The mechanism:
//! - Each file has a **skip target** = free extents of the file with the most free extents,
//!   divided (integer division) by this file's free extents.
//! - The allocator visits the files in turn. A file whose skip countdown is 1 gets the extent;
//!   a file whose countdown is higher has it decremented by 1 and is passed over.
//! - Skip targets are recalculated when a file is added or removed, after every 8,192 extent
//!   allocations in the filegroup, and after a growth (see choices below).
//! - With `-E`, a file that gets an extent keeps getting them for 64 consecutive allocations.
//!
//! Choices where no public source settles the behaviour (reference §12.1–12.2), each tested:
//! 1. **The countdown resets after the file allocates.** A file keeps its skip target between
//!    recalculations and counts down from it again after each allocation, so a file with target
//!    N gets one extent for every N that a target-1 file gets. That is the proportion Microsoft
//!    documents ("twice the free space, two allocations for each one"); the literal reading
//!    (the countdown stays at 1) would give every file one extent per pass after a short delay.
//! 2. **A file with 0 free extents** gets skip target `most_free / 1` (the seed's last output
//!    prints `0 free extents and skip target of 74` beside a file with 74), and is passed over
//!    without counting down while it is full. If every file is full the target is 1.
//! 3. **A growth triggers a recalculation**, because growth changes exactly the numbers the
//!    targets come from; without it a grown file would keep a stale high target.
//! 4. **Visit order** is the filegroup's file list: the first file, then the other files newest
//!    first. That is the order SQL Server printed in the seed (files 1, 4, 3 after adding 3 then
//!    4). The first visit after a recalculation continues from where the round robin was.
//! 5. **Which file grows** (AUTOGROW_SINGLE_FILE): the first file that can grow, in visit order
//!    starting at the round-robin cursor. With AUTOGROW_ALL_FILES or TF 1117 every file that can
//!    grow grows.
//! 6. **m_cAllocs** is the allocation count at which the next recalculation is due (8,192). It
//!    is 0 before the first recalculation; SQL Server prints an uninitialised value there.
//!
//! The FGCB_PRP_FILL lock guards the skip-target state. It is a real lock: an acquirer that finds
//! it held counts a collision, spins, and backs off (yields) after each batch of spins; the
//! counts feed sys.dm_os_spinlock_stats. As seed 000 says, it is not taken while every skip target
//! is 1: then the next file comes from an atomic round-robin counter.
//!
//! Invariants:
//! 1. After a recalculation at least one file with free extents has skip target 1.
//! 2. Every skip countdown is between 1 and its file's skip target.
//! 3. `pick` returns only a file with free extents.

use crate::error::SqlResult;
use crate::spinlock::SpinMutex;
use crate::waits::SpinlockStats;
use parking_lot::MutexGuard;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// Extent allocations between two recalculations.
pub const RECALC_INTERVAL_ALLOCS: u32 = 8192;
/// Consecutive extents a file receives under `-E`.
pub const E_OPTION_RUN_EXTENTS: u32 = 64;
/// The spinlock's name in sys.dm_os_spinlock_stats.
pub const FGCB_PRP_FILL: &str = "FGCB_PRP_FILL";
/// Growth rounds one allocation may trigger before it gives up (each round adds >= 1 extent).
const MAX_GROWTH_ROUNDS: u32 = 64;
/// Times one allocation may find its chosen file emptied by another thread.
const MAX_LOST_RACES: u32 = 10_000;

/// One file's line of a recalculation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecalcFile {
    pub file_id: u16,
    pub name: String,
    pub free_extents: u32,
    pub skip_target: u32,
}

/// What a recalculation did: the content of the TF 1165 errorlog lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecalcReport {
    pub m_c_allocs_before: u32,
    pub m_c_allocs_after: u32,
    pub most_free_file_id: u16,
    pub files: Vec<RecalcFile>,
}

impl RecalcReport {
    /// The errorlog lines TF 1165 writes, in the seed's shape.
    pub fn errorlog_lines(&self, database: &str) -> Vec<String> {
        let mut lines = vec![
            format!(
                "Proportional Fill Recalculation Starting for DB {database} with m_cAllocs {}.",
                self.m_c_allocs_before
            ),
            format!(
                "Proportional Fill Recalculation Completed for DB {database} new m_cAllocs {}, \
                 most free file is file {}.",
                self.m_c_allocs_after, self.most_free_file_id
            ),
        ];
        for file in &self.files {
            lines.push(format!(
                "\tFile [{}] ({}) has {} free extents and skip target of {}.",
                file.name, file.file_id, file.free_extents, file.skip_target
            ));
        }
        lines
    }
}

/// The skip-target state of one filegroup (the part of SQL Server's FGCB that
/// FGCB_PRP_FILL protects). Slots are positions in the filegroup's file list.
#[derive(Clone, Debug, Default)]
pub struct ProportionalFill {
    skip_target: Vec<u32>,
    skip_countdown: Vec<u32>,
    cursor: usize,
    run_slot: usize,
    run_remaining: u32,
    m_c_allocs: u32,
    e_option: bool,
}

impl ProportionalFill {
    pub fn new(e_option: bool) -> ProportionalFill {
        ProportionalFill { e_option, ..ProportionalFill::default() }
    }

    pub fn skip_targets(&self) -> &[u32] {
        &self.skip_target
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Recomputes every skip target from the files' free extents (choices 2 and 6).
    pub fn recalculate(&mut self, free_extents: &[u32]) -> (u32, usize) {
        let before = self.m_c_allocs;
        let most_free = most_free_slot(free_extents);
        let max_free = free_extents.get(most_free).copied().unwrap_or(0);
        self.skip_target =
            free_extents.iter().map(|free| (max_free / (*free).max(1)).max(1)).collect();
        self.skip_countdown = self.skip_target.clone();
        if self.cursor >= free_extents.len() {
            self.cursor = 0;
        }
        self.run_remaining = 0;
        self.m_c_allocs = RECALC_INTERVAL_ALLOCS;
        debug_assert!(self.skip_target.iter().all(|t| *t >= 1), "invariant 2");
        (before, most_free)
    }

    /// True when every file has skip target 1, so the lock can be bypassed.
    pub fn all_targets_one(&self) -> bool {
        self.skip_target.iter().all(|t| *t == 1)
    }

    /// Chooses the file for the next extent: the round robin with skip countdowns, and the
    /// `-E` run. Returns None when no file has a free extent.
    pub fn pick(&mut self, free_extents: impl Fn(usize) -> u32) -> Option<usize> {
        let slots = self.skip_target.len();
        if slots == 0 || (0..slots).all(|slot| free_extents(slot) == 0) {
            return None;
        }
        if self.run_remaining > 0 && free_extents(self.run_slot) > 0 {
            self.run_remaining -= 1;
            return Some(self.run_slot);
        }
        let max_target = self.skip_target.iter().copied().max().unwrap_or(1) as usize;
        let visit_limit = slots * (max_target + 1);
        for _ in 0..visit_limit {
            let slot = self.cursor;
            self.cursor = (self.cursor + 1) % slots;
            if free_extents(slot) == 0 {
                continue;
            }
            if self.skip_countdown[slot] > 1 {
                self.skip_countdown[slot] -= 1;
                continue;
            }
            self.skip_countdown[slot] = self.skip_target[slot];
            if self.e_option {
                self.run_slot = slot;
                self.run_remaining = E_OPTION_RUN_EXTENTS - 1;
            }
            return Some(slot);
        }
        unreachable!("a file with free extents reaches countdown 1 within its skip target visits")
    }
}

/// The slot with the most free extents; the first one in visit order on a tie.
fn most_free_slot(free_extents: &[u32]) -> usize {
    let mut best = 0;
    for (slot, free) in free_extents.iter().enumerate() {
        if *free > free_extents[best] {
            best = slot;
        }
    }
    best
}

/// The FGCB_PRP_FILL lock with the state it guards, plus the lock-free round robin used while
/// every skip target is 1.
pub struct FillControl {
    state: SpinMutex<ProportionalFill>,
    all_targets_one: AtomicBool,
    round_robin: AtomicU64,
    allocs_since_recalc: AtomicU32,
    e_option: bool,
}

impl FillControl {
    pub fn new(e_option: bool, spinlocks: Arc<SpinlockStats>) -> FillControl {
        FillControl {
            state: SpinMutex::new(ProportionalFill::new(e_option), FGCB_PRP_FILL, &spinlocks),
            all_targets_one: AtomicBool::new(false),
            round_robin: AtomicU64::new(0),
            allocs_since_recalc: AtomicU32::new(0),
            e_option,
        }
    }

    /// Acquires FGCB_PRP_FILL (a spinlock: collisions, spins and backoffs are counted).
    fn lock(&self) -> MutexGuard<'_, ProportionalFill> {
        self.state.lock()
    }

    /// A copy of the skip-target state (for tests and the planner's report).
    pub fn snapshot(&self) -> ProportionalFill {
        self.lock().clone()
    }

    /// Recalculates the skip targets and returns the report for TF 1165.
    pub fn recalculate<S: ExtentSpace + ?Sized>(&self, space: &S) -> RecalcReport {
        let mut state = self.lock();
        let free: Vec<u32> = (0..space.slot_count()).map(|slot| space.free_extents(slot)).collect();
        let (before, most_free) = state.recalculate(&free);
        self.allocs_since_recalc.store(0, Ordering::Relaxed);
        self.all_targets_one.store(state.all_targets_one(), Ordering::Release);
        let files = (0..free.len())
            .map(|slot| RecalcFile {
                file_id: space.file_id(slot),
                name: space.file_name(slot),
                free_extents: free[slot],
                skip_target: state.skip_target[slot],
            })
            .collect();
        let most_free_file_id = if free.is_empty() { 0 } else { space.file_id(most_free) };
        RecalcReport {
            m_c_allocs_before: before,
            m_c_allocs_after: state.m_c_allocs,
            most_free_file_id,
            files,
        }
    }

    /// Chooses the file for the next extent. While every skip target is 1 this needs no lock:
    /// the slot comes from an atomic counter (in runs of 64 under `-E`).
    fn pick<S: ExtentSpace + ?Sized>(&self, space: &S) -> Option<usize> {
        let slots = space.slot_count();
        if slots > 0 && self.all_targets_one.load(Ordering::Acquire) {
            let run = if self.e_option { u64::from(E_OPTION_RUN_EXTENTS) } else { 1 };
            let ticket = self.round_robin.fetch_add(1, Ordering::Relaxed);
            let slot = ((ticket / run) % slots as u64) as usize;
            if space.free_extents(slot) > 0 {
                return Some(slot);
            }
        }
        let mut state = self.lock();
        if state.skip_target.len() != slots {
            return None;
        }
        state.pick(|slot| space.free_extents(slot))
    }

    fn cursor(&self) -> usize {
        self.lock().cursor
    }

    /// Counts one allocation; true when a recalculation is due.
    fn note_allocation(&self) -> bool {
        let count = self.allocs_since_recalc.fetch_add(1, Ordering::Relaxed) + 1;
        count >= RECALC_INTERVAL_ALLOCS
    }
}

/// The files of one filegroup as the allocator sees them. The engine implements it over GAM
/// pages; the planner over counters.
pub trait ExtentSpace {
    fn slot_count(&self) -> usize;
    fn file_id(&self, slot: usize) -> u16;
    fn file_name(&self, slot: usize) -> String;
    fn free_extents(&self, slot: usize) -> u32;
    /// Takes one free extent from the file (lowest first); None if it has none now.
    fn take_extent(&mut self, slot: usize) -> SqlResult<Option<u32>>;
    /// Grows the filegroup by the growth policy (choice 5), starting at `cursor`; false when no
    /// file can grow.
    fn grow(&mut self, cursor: usize) -> SqlResult<bool>;
}

/// Allocates one extent from the filegroup: picks a file, takes its lowest free extent, counts
/// the allocation, recalculates when due, and grows when every file is full. Returns the slot
/// and the extent's first page, or None when the filegroup is full and cannot grow (1105).
pub fn allocate_extent<S: ExtentSpace + ?Sized>(
    fill: &FillControl,
    space: &mut S,
    on_recalc: &mut dyn FnMut(&RecalcReport),
) -> SqlResult<Option<(usize, u32)>> {
    let mut growth_rounds = 0;
    let mut lost_races = 0;
    loop {
        let Some(slot) = fill.pick(space) else {
            growth_rounds += 1;
            if growth_rounds > MAX_GROWTH_ROUNDS || !space.grow(fill.cursor())? {
                return Ok(None);
            }
            on_recalc(&fill.recalculate(space));
            continue;
        };
        let Some(extent_page) = space.take_extent(slot)? else {
            lost_races += 1;
            assert!(lost_races < MAX_LOST_RACES, "allocation kept losing races for free extents");
            continue;
        };
        if fill.note_allocation() {
            on_recalc(&fill.recalculate(space));
        }
        return Ok(Some((slot, extent_page)));
    }
}

/// Grows files by the growth policy (choice 5): visits the files in visit order starting at
/// `cursor`, calling `try_grow` on each, and stops after the first that grows unless
/// `all_files` (AUTOGROW_ALL_FILES / TF 1117). Returns whether any file grew.
pub fn grow_by_policy(
    cursor: usize,
    slots: usize,
    all_files: bool,
    mut try_grow: impl FnMut(usize) -> bool,
) -> bool {
    let mut grew = false;
    for step in 0..slots {
        grew |= try_grow((cursor + step) % slots);
        if grew && !all_files {
            break;
        }
    }
    grew
}

/// A file's FILEGROWTH setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// FILEGROWTH = 0: no autogrowth.
    None,
    Pages(u32),
    Percent(u32),
}

/// The size in pages a file reaches in one growth step, or None if it cannot grow: no growth
/// set, or already at MAXSIZE. Percent growth is of the current size; growth is rounded to
/// whole extents (64 KB), at least one, and stops at MAXSIZE (a last, partial step is allowed).
pub fn grown_size_pages(
    size_pages: u32,
    growth: Growth,
    max_size_pages: Option<u32>,
) -> Option<u32> {
    let increment = match growth {
        Growth::None => return None,
        Growth::Pages(pages) => pages,
        Growth::Percent(pct) => (u64::from(size_pages) * u64::from(pct) / 100) as u32,
    };
    let increment = round_to_extents(increment).max(crate::units::PAGES_PER_EXTENT);
    let mut target = size_pages.saturating_add(increment);
    if let Some(max) = max_size_pages {
        target = target.min(max - max % crate::units::PAGES_PER_EXTENT);
    }
    (target > size_pages).then_some(target)
}

/// Rounds a page count to the nearest whole extent (FILEGROWTH "is rounded to the nearest 64 KB").
pub fn round_to_extents(pages: u32) -> u32 {
    let per = crate::units::PAGES_PER_EXTENT;
    (pages + per / 2) / per * per
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_000_skip_targets() {
        let mut fill = ProportionalFill::new(false);
        fill.recalculate(&[44, 79]);
        assert_eq!(fill.skip_targets(), &[1, 1]);
        fill.recalculate(&[44, 3995, 79]);
        assert_eq!(fill.skip_targets(), &[90, 1, 50]);
        fill.recalculate(&[0, 0, 74]);
        assert_eq!(fill.skip_targets(), &[74, 74, 1]);
        fill.recalculate(&[0, 0]);
        assert_eq!(fill.skip_targets(), &[1, 1]);
    }

    #[test]
    fn shares_follow_the_skip_targets_because_countdowns_reset() {
        let mut fill = ProportionalFill::new(false);
        fill.recalculate(&[100, 300, 600]);
        assert_eq!(fill.skip_targets(), &[6, 2, 1]);
        let mut counts = [0u32; 3];
        for _ in 0..9000 {
            counts[fill.pick(|_| 1).unwrap()] += 1;
        }
        // Every six passes: one extent from the target-6 file, three from the target-2 file and
        // six from the target-1 file, so 9,000 extents split 900 : 2,700 : 5,400.
        assert_eq!(counts, [900, 2700, 5400]);
    }

    #[test]
    fn full_files_are_passed_over_without_counting_down() {
        let mut fill = ProportionalFill::new(false);
        fill.recalculate(&[10, 10]);
        let picks: Vec<usize> =
            (0..4).map(|_| fill.pick(|slot| if slot == 0 { 0 } else { 5 }).unwrap()).collect();
        assert_eq!(picks, vec![1, 1, 1, 1]);
        assert_eq!(fill.pick(|_| 0), None);
    }

    #[test]
    fn e_option_gives_runs_of_64() {
        let mut fill = ProportionalFill::new(true);
        fill.recalculate(&[500, 500, 500]);
        let picks: Vec<usize> = (0..192).map(|_| fill.pick(|_| 1).unwrap()).collect();
        assert!(picks[..64].iter().all(|s| *s == 0));
        assert!(picks[64..128].iter().all(|s| *s == 1));
        assert!(picks[128..].iter().all(|s| *s == 2));
    }

    #[test]
    fn a_held_fgcb_prp_fill_lock_counts_collisions_spins_and_backoffs() {
        let stats = Arc::new(SpinlockStats::default());
        let fill = Arc::new(FillControl::new(false, stats.clone()));
        let held = fill.state.lock_uncounted();
        let waiter = {
            let fill = fill.clone();
            std::thread::spawn(move || fill.snapshot().cursor())
        };
        // Release only once the waiter has really spun and backed off at least once.
        while stats.get(FGCB_PRP_FILL).is_none_or(|row| row.backoffs == 0) {
            std::thread::yield_now();
        }
        drop(held);
        waiter.join().unwrap();
        let row = stats.get(FGCB_PRP_FILL).unwrap();
        assert_eq!(row.collisions, 1);
        assert!(row.spins >= crate::spinlock::SPINS_PER_BACKOFF);
        assert!(row.backoffs >= 1);
        assert_eq!(stats.acquires(FGCB_PRP_FILL), 1);
    }

    #[test]
    fn growth_rounds_to_extents_and_stops_at_maxsize() {
        assert_eq!(grown_size_pages(640, Growth::Pages(128), None), Some(768));
        assert_eq!(grown_size_pages(640, Growth::Percent(10), None), Some(704));
        assert_eq!(grown_size_pages(640, Growth::Percent(1), None), Some(648));
        assert_eq!(grown_size_pages(640, Growth::Pages(8192), Some(1000)), Some(1000));
        assert_eq!(grown_size_pages(1000, Growth::Pages(128), Some(1000)), None);
        assert_eq!(grown_size_pages(640, Growth::None, None), None);
        assert_eq!(round_to_extents(3), 0);
        assert_eq!(round_to_extents(4), 8);
    }
}
