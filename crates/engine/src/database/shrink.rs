//! DBCC SHRINKFILE: a file gives back the unused space at its end.
//!
//! - A log file loses VLFs from its end while they are inactive ([`LogManager::shrink_file`]):
//!   the target is rounded up to a VLF boundary, an active VLF in the way stops it (9008), and
//!   the log keeps two VLFs (9006). This is how a log with too many VLFs is fixed: shrink it,
//!   then grow it again in larger steps (seed 002).
//! - A data file is cut after its last extent in use, and no lower than its target.
//!
//! Deviations: a data file's pages are never moved, so a target below the last extent in use
//! stops there, as SQL Server's TRUNCATEONLY does (SQL Server moves the pages past the target
//! down, then cuts); EMPTYFILE is not built. Without a target a file shrinks as far as it can,
//! where SQL Server shrinks to the size the file was created with or last set to (extentdb
//! does not keep that size). A data file never goes below 512 KB, the smallest file CREATE
//! DATABASE takes, nor a primary file below model's 3 MB.
//!
//! Crash safety of a data file's shrink: the file's header, written and synced with the new
//! size, is the commit point, and the OS file is truncated after it. Recovery redoes no page
//! past a file's recorded size. A checkpoint just before the cut, with no extent or page of
//! the file freed between it and the cut, means no log record that recovery could redo names a
//! page of the cut range: a later growth over the range starts its pages afresh.

use super::*;
use crate::log::{MIN_LOG_VLFS, ShrinkStop};

/// The smallest data file a shrink leaves: 512 KB (error 5174's limit at CREATE DATABASE), and
/// for the primary file the size of model's (error 1803's), as the database cannot be smaller
/// than model.
const MIN_SHRUNK_DATA_FILE_PAGES: u32 = 64;
const MIN_SHRUNK_PRIMARY_FILE_PAGES: u32 = MODEL_PRIMARY_SIZE_MB * 128;
/// How many times a data file's shrink checkpoints again after pages were freed meanwhile.
const SHRINK_ATTEMPTS: u32 = 3;

/// DBCC SHRINKFILE's result row (DbId is the database's), in 8 KB pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileShrink {
    pub file_id: u16,
    /// The file's size now.
    pub current_pages: u32,
    /// The smallest size the file can be shrunk to now (SQL Server: its created size).
    pub minimum_pages: u32,
    /// Pages in use: a data file's allocated extents; a log file's pages up to its last VLF
    /// that must stay.
    pub used_pages: u32,
    /// What a shrink could bring the file down to.
    pub estimated_pages: u32,
    /// SQL Server's informational message when a log file stayed above its target.
    pub notice: Option<String>,
}

impl Database {
    /// DBCC SHRINKFILE (file, target): `target_pages` None shrinks as far as the file allows.
    /// 8985 if the database has no such file.
    pub fn shrink_file(&self, file_id: u16, target_pages: Option<u32>) -> SqlResult<FileShrink> {
        let data_file = crate::fiber::read(&self.inner).data_files.get(&file_id).cloned();
        match data_file {
            Some(file) => self.shrink_data_file(&file, target_pages),
            None if self.log.files().iter().any(|(id, _, _)| *id == file_id) => {
                self.shrink_log_file(file_id, target_pages)
            }
            None => Err(SqlError::file_not_found_in_database(&file_id.to_string(), &self.name)),
        }
    }

    fn shrink_log_file(&self, file_id: u16, target_pages: Option<u32>) -> SqlResult<FileShrink> {
        let shrink = self.log.shrink_file(file_id, target_pages.unwrap_or(0))?;
        let name = self.log.with_file(file_id, |f| f.logical_name.clone()).unwrap_or_default();
        let notice = shrink.stopped_by.map(|stop| match stop {
            ShrinkStop::ActiveVlf => format!(
                "Cannot shrink log file {file_id} ({name}) because the logical log file located at the end of the file is in use."
            ),
            ShrinkStop::VlfMinimum => format!(
                "Cannot shrink log file {file_id} ({name}) because total number of logical log files cannot be fewer than {MIN_LOG_VLFS}."
            ),
        });
        Ok(FileShrink {
            file_id,
            current_pages: shrink.size_pages,
            minimum_pages: shrink.minimum_pages,
            used_pages: shrink.minimum_pages,
            estimated_pages: shrink.minimum_pages,
            notice,
        })
    }

    fn shrink_data_file(
        &self,
        file: &DataFile,
        target_pages: Option<u32>,
    ) -> SqlResult<FileShrink> {
        for _ in 0..SHRINK_ATTEMPTS {
            let frees = file.alloc.frees();
            self.checkpoint()?;
            let inner = crate::fiber::write(&self.inner);
            if file.alloc.frees() != frees {
                continue; // a page freed since the checkpoint may have log records after it
            }
            let old_size = file.size_pages();
            let floor = if file.is_primary {
                MIN_SHRUNK_PRIMARY_FILE_PAGES
            } else {
                MIN_SHRUNK_DATA_FILE_PAGES
            };
            let floor = floor.min(old_size);
            let minimum = file.alloc.end_of_last_used_extent(&self.pool, floor)?;
            let wanted = target_pages.map_or(minimum, |pages| pages.div_ceil(8).saturating_mul(8));
            let new_size = wanted.max(minimum).min(old_size);
            let used_pages = (extents_in_file(old_size) - file.free_extents()) * 8;
            let outcome = |current_pages| FileShrink {
                file_id: file.file_id,
                current_pages,
                minimum_pages: minimum,
                used_pages,
                estimated_pages: minimum,
                notice: None,
            };
            if new_size == old_size {
                return Ok(outcome(old_size));
            }
            let removed = file.alloc.shrink_to(&self.pool, new_size)?;
            let header = Self::write_file_header(file, self.database_id, self.binding_id, new_size);
            if let Err(error) = header {
                file.alloc.undo_shrink(old_size, removed);
                return Err(error);
            }
            drop(inner);
            self.pool.discard(self.database_id, Some(file.file_id), new_size);
            let new_bytes = u64::from(new_size) * PAGE_SIZE_U64;
            file.io()
                .set_len(new_bytes)
                .and_then(|()| file.io().sync_data())
                .map_err(|err| SqlError::os_io_error(&err, true, new_bytes, &file.path_text()))?;
            return Ok(outcome(new_size));
        }
        // Pages kept being freed: the file stays as it is this time.
        let size = file.size_pages();
        Ok(FileShrink {
            file_id: file.file_id,
            current_pages: size,
            minimum_pages: size,
            used_pages: (extents_in_file(size) - file.free_extents()) * 8,
            estimated_pages: size,
            notice: None,
        })
    }
}
