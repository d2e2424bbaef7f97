//! Growing a data file (autogrowth and ALTER DATABASE MODIFY FILE), in the order the module
//! header of `database` gives, with roll-back on any I/O error.

use super::*;

impl Database {
    /// Grows a data file to `new_size_pages`. On error nothing changes, in memory or in the
    /// file's recorded size; the OS file is truncated back (best effort).
    pub(super) fn grow_file(
        &self,
        file: &DataFile,
        new_size_pages: u32,
        is_automatic: bool,
    ) -> SqlResult<()> {
        let started = Instant::now();
        let start_time = self.instance.clock.now_local();
        let old_size_pages = file.size_pages();
        assert!(new_size_pages > old_size_pages, "callers grow, never shrink");
        let handle = file.io();
        let extended = Self::extend_data_file(
            &self.instance,
            handle,
            &file.path,
            old_size_pages,
            new_size_pages,
        );
        let zeroed = match extended {
            Ok(zeroed) => zeroed,
            Err(err) => {
                let _ = handle.set_len(u64::from(old_size_pages) * PAGE_SIZE_U64);
                return Err(SqlError::expand_file_os_error(&err, &file.path_text()));
            }
        };
        let durable = file.alloc.prepare_growth(&self.pool, new_size_pages).and_then(|added| {
            self.pool
                .flush_pages(self.database_id, &file.alloc.allocation_pages(new_size_pages))?;
            Self::write_file_header(file, self.database_id, self.binding_id, new_size_pages)?;
            Ok(added)
        });
        let added = match durable {
            Ok(added) => added,
            Err(error) => {
                // Pages of the old range whose write failed stay dirty and are written again.
                file.alloc.abandon_growth(&self.pool);
                let _ = handle.set_len(u64::from(old_size_pages) * PAGE_SIZE_U64);
                return Err(error);
            }
        };
        file.alloc.publish_growth(new_size_pages, added);
        let growth = GrowthEvent {
            file_id: file.file_id,
            logical_name: file.logical_name.clone(),
            old_size_pages,
            new_size_pages,
            duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            is_automatic,
            zeroed,
            start_time,
        };
        self.growth_events.lock().push(growth.clone());
        if self.instance.xevents.is_enabled(crate::xevent::catalog::DATABASE_FILE_SIZE_CHANGE) {
            self.instance.xevents.file_size_changed(&self.size_change("data", growth));
        }
        Ok(())
    }

    /// ALTER DATABASE MODIFY FILE (one property per statement, as in SQL Server).
    pub fn modify_file(&self, logical_name: &str, change: FileChange) -> SqlResult<()> {
        let inner = crate::fiber::read(&self.inner);
        let found = inner
            .data_files
            .values()
            .find(|f| f.logical_name.eq_ignore_ascii_case(logical_name))
            .cloned();
        let Some(file) = found else {
            drop(inner);
            return self.modify_log_file(logical_name, change);
        };
        let settings = *file.settings.lock();
        match change {
            FileChange::Size(size) => {
                let kb = size.kb().ok_or_else(SqlError::modify_size_not_larger)?;
                let pages = crate::units::kb_to_pages(kb);
                let pages = u32::try_from(pages.div_ceil(8) * 8)
                    .map_err(|_| SqlError::file_size_limit())?;
                if pages <= file.size_pages() {
                    return Err(SqlError::modify_size_not_larger());
                }
                if settings.max_size_pages.is_some_and(|max| pages > max) {
                    return Err(SqlError::modify_size_above_max());
                }
                let _one_growth_at_a_time = crate::fiber::lock(&self.growth_lock);
                self.grow_file(&file, pages, false)?;
                self.recalculate(&inner, file.fg_id);
                Ok(())
            }
            FileChange::Growth(growth) => {
                let growth =
                    resolve_growth(Some(growth), &file.logical_name, settings.max_size_pages)?;
                self.store_settings(&file, FileSettings { growth, ..settings })
            }
            FileChange::MaxSize(max) => {
                let max_size_pages = checked_max_size(max, file.size_pages(), &file.logical_name)?;
                self.store_settings(&file, FileSettings { max_size_pages, ..settings })
            }
        }
    }

    /// MODIFY FILE on a log file: SIZE grows it (zeroed, with new VLFs), FILEGROWTH and
    /// MAXSIZE change its header.
    fn modify_log_file(&self, logical_name: &str, change: FileChange) -> SqlResult<()> {
        let file_id = self
            .log
            .file_id_by_name(logical_name)
            .ok_or_else(|| SqlError::modify_file_missing(logical_name))?;
        if let FileChange::Size(size) = change {
            let (size_pages, max_size_pages) =
                self.log.with_file(file_id, |f| (f.size_pages, f.max_size_pages)).expect("found");
            let pages = checked_new_size(size, size_pages, max_size_pages)?;
            return self.log.grow_manually(file_id, pages);
        }
        let (database_id, binding_id) = (self.database_id, self.binding_id);
        self.log
            .with_file(file_id, |log| {
                let mut changed = (log.growth, log.max_size_pages);
                match change {
                    FileChange::Growth(growth) => {
                        changed.0 =
                            resolve_growth(Some(growth), &log.logical_name, log.max_size_pages)?
                    }
                    FileChange::MaxSize(max) => {
                        changed.1 = checked_max_size(max, log.size_pages, &log.logical_name)?
                    }
                    FileChange::Size(_) => unreachable!("handled above"),
                }
                let previous = (log.growth, log.max_size_pages);
                (log.growth, log.max_size_pages) = changed;
                let header = log.header(log.size_pages, database_id, binding_id);
                let written = create::write_header_page(log.io(), &header, &log.path);
                if written.is_err() {
                    (log.growth, log.max_size_pages) = previous;
                }
                written
            })
            .expect("found")
    }

    fn store_settings(&self, file: &DataFile, settings: FileSettings) -> SqlResult<()> {
        let previous = std::mem::replace(&mut *file.settings.lock(), settings);
        let written =
            Self::write_file_header(file, self.database_id, self.binding_id, file.size_pages());
        if written.is_err() {
            *file.settings.lock() = previous;
        }
        written
    }
}

/// Validates a new SIZE for MODIFY FILE: larger than now (5039), not above MAXSIZE (5040).
fn checked_new_size(
    size: SizeSpec,
    current_pages: u32,
    max_size_pages: Option<u32>,
) -> SqlResult<u32> {
    let kb = size.kb().ok_or_else(SqlError::modify_size_not_larger)?;
    let pages = crate::units::kb_to_pages(kb).div_ceil(8) * 8;
    let pages = u32::try_from(pages).map_err(|_| SqlError::file_size_limit())?;
    if pages <= current_pages {
        return Err(SqlError::modify_size_not_larger());
    }
    if max_size_pages.is_some_and(|max| pages > max) {
        return Err(SqlError::modify_size_above_max());
    }
    Ok(pages)
}

/// Validates a new MAXSIZE: not below the current size (5103).
fn checked_max_size(max: MaxSize, current_pages: u32, name: &str) -> SqlResult<Option<u32>> {
    let max_size_pages = match max {
        MaxSize::Unlimited => None,
        MaxSize::Kb(kb) => Some(
            u32::try_from(crate::units::kb_to_pages(kb))
                .map_err(|_| SqlError::file_size_limit())?
                / 8
                * 8,
        ),
    };
    if max_size_pages.is_some_and(|max| max < current_pages) {
        return Err(SqlError::maxsize_below_size(name));
    }
    Ok(max_size_pages)
}
