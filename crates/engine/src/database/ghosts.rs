//! The ghost-cleanup task (reference §1.8): deletes in indexes leave ghost records; a background
//! task removes them later, a few pages per run, leaving at least one record on a page so that
//! the page is not deallocated. Trace flag 661 turns the task off.
//!
//! The database keeps the set of pages that received ghosts (SQL Server flags the database as
//! "has ghosts" and scans for them); each run takes up to [`GHOST_PAGES_PER_RUN`] of them.
//! SQL Server runs the task every 5 seconds, and so does the T-SQL server, which starts it for
//! every database; [`Database::start_ghost_cleanup`] takes the interval so that engine tests
//! need not wait that long.

use super::*;
use crate::datapage;
use crate::record::{self, RecordType};
use std::sync::Weak;
use std::time::Duration;

/// Pages one run of the task cleans at most (SQL Server 2012+: 10).
pub const GHOST_PAGES_PER_RUN: usize = 10;
/// SQL Server's interval between runs.
pub const GHOST_CLEANUP_INTERVAL: Duration = Duration::from_secs(5);

/// What the task has done (for tests and diagnostics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GhostCleanupStats {
    pub runs: u64,
    pub runs_skipped_by_tf661: u64,
    pub ghosts_removed: u64,
}

impl Database {
    /// Records that `page` holds ghost records.
    pub fn note_ghost_page(&self, page: PageId) {
        self.ghost_pages.lock().insert(page);
    }

    pub fn ghost_cleanup_stats(&self) -> GhostCleanupStats {
        *self.ghost_stats.lock()
    }

    /// One run of the task: removes the ghosts of up to `max_pages` pages. Returns how many
    /// ghosts it removed; does nothing while trace flag 661 is on.
    pub fn ghost_cleanup_run(&self, max_pages: usize) -> SqlResult<u64> {
        if self.instance.trace_flags.is_on(crate::traceflags::TF_DISABLE_GHOST_CLEANUP) {
            let mut stats = self.ghost_stats.lock();
            stats.runs_skipped_by_tf661 += 1;
            return Ok(0);
        }
        let pages: Vec<PageId> = {
            let mut ghost_pages = self.ghost_pages.lock();
            let taken: Vec<PageId> = ghost_pages.iter().take(max_pages).copied().collect();
            for page in &taken {
                ghost_pages.remove(page);
            }
            taken
        };
        let mut removed = 0;
        for page in pages {
            removed += self.clean_page(page)?;
        }
        let mut stats = self.ghost_stats.lock();
        stats.runs += 1;
        stats.ghosts_removed += removed;
        Ok(removed)
    }

    /// Removes a page's ghost records (keeping one record) and clears its PFS ghost bit when
    /// none is left.
    pub fn clean_page(&self, page: PageId) -> SqlResult<u64> {
        let guard = self.pool.fetch(PageKey::new(self.database_id, page), LatchMode::Ex)?;
        let bad = |what: &'static str| {
            SqlError::new(
                5250,
                16,
                4,
                format!(
                    "Database error: page {page} for database '{}' (database ID {}) is invalid ({what}).",
                    self.name, self.database_id
                ),
            )
        };
        let (removed, left) = guard.write(|buf| -> SqlResult<(u64, u16)> {
            let mut removed = 0;
            let mut slot = datapage::slot_count(buf);
            while slot > 0 && datapage::slot_count(buf) > 1 {
                slot -= 1;
                let status = datapage::record(buf, slot).map_err(|b| bad(b.0))?[0];
                let kind = record::record_type(status);
                if kind == RecordType::GhostData as u8 || kind == RecordType::GhostIndex as u8 {
                    datapage::delete(buf, slot).map_err(|b| bad(b.0))?;
                    removed += 1;
                }
            }
            Ok((removed, crate::page::PageHeader::read(&buf[..]).ghost_record_count))
        })??;
        if left == 0 {
            self.set_pfs_ghost_bit(page, false)?;
        } else {
            self.note_ghost_page(page);
        }
        Ok(removed)
    }

    /// Sets or clears a page's PFS "has ghost records" bit (0x08), under the PFS page's UP latch.
    pub fn set_pfs_ghost_bit(&self, page: PageId, on: bool) -> SqlResult<()> {
        let _autocommit = crate::log::mtr::autocommit();
        let pfs_id = PageId::new(page.file_id, alloc::pfs_page_for(page.page_no));
        let pfs_page = self.pool.fetch(PageKey::new(self.database_id, pfs_id), LatchMode::Up)?;
        pfs_page.write(|buf| {
            let byte = alloc::pfs_get(buf, page.page_no);
            let ghost = crate::alloc::pfs::GHOST;
            alloc::pfs_set(buf, page.page_no, if on { byte | ghost } else { byte & !ghost });
        })?;
        Ok(())
    }

    /// Starts the background task: a run every `interval` until the database is dropped or
    /// the task stopped ([`Database::stop_background_tasks`]).
    pub fn start_ghost_cleanup(self: &Arc<Self>, interval: Duration) {
        let weak: Weak<Database> = Arc::downgrade(self);
        let task = Arc::clone(&self.ghost_task);
        // Its sleep between runs has no wait type (crate::system_tasks' deviations).
        let identity = crate::system_tasks::TaskIdentity {
            session_id: GHOST_CLEANUP_SPID,
            command: "GHOST CLEANUP",
            database_id: self.database_id,
            queue_wait: None,
        };
        let listed = (self.instance.system_tasks.clone(), identity);
        self.ghost_task.start("extentdb-ghostcleanup", TaskScheduler::Regular, listed, move || {
            crate::instance::set_current_spid(GHOST_CLEANUP_SPID);
            loop {
                task.take_request(Some(interval));
                if task.stopped() {
                    return;
                }
                let Some(db) = weak.upgrade() else { return };
                if db.closed.load(Ordering::Acquire) {
                    return;
                }
                if let Err(error) = db.ghost_cleanup_run(GHOST_PAGES_PER_RUN) {
                    db.instance.errorlog.write_error(&current_process_info(), &error);
                }
            }
        });
    }
}

/// The session id the ghost-cleanup task runs as (a system session, below 51).
pub const GHOST_CLEANUP_SPID: u16 = 20;
