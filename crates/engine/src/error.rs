//! SQL Server errors: message number, severity, state and text.
//!
//! Every failure the engine reports to a user is a [`SqlError`] carrying SQL Server's message
//! number, severity and text (texts from the sql-docs "Database engine events and errors" tables,
//! reference §1.10 and §3.6). Programmer errors are assertions instead; corruption read from disk
//! is always an error that names the page, never a panic.

use std::fmt;

/// One SQL Server error message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    pub number: i32,
    pub severity: u8,
    pub state: u8,
    pub message: String,
}

pub type SqlResult<T> = Result<T, SqlError>;

/// The number of [`SqlError::wait_cancelled`] (SQL Server's 3617 for a cancelled query).
pub const WAIT_CANCELLED: i32 = 3617;

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Msg {}, Level {}, State {}\n{}",
            self.number, self.severity, self.state, self.message
        )
    }
}

impl std::error::Error for SqlError {}

impl SqlError {
    pub fn new(number: i32, severity: u8, state: u8, message: impl Into<String>) -> SqlError {
        SqlError { number, severity, state, message: message.into() }
    }

    /// 823: the operating system reported an I/O error.
    pub fn os_io_error(err: &std::io::Error, is_write: bool, offset: u64, path: &str) -> SqlError {
        let op = if is_write { "write" } else { "read" };
        SqlError::new(
            823,
            24,
            2,
            format!(
                "The operating system returned error {}({}) to SQL Server during a {op} at offset \
                 {offset:#016x} in file '{path}'. Additional messages in the SQL Server error log \
                 and system event log may provide more detail. This is a severe system-level error \
                 condition that threatens database integrity and must be corrected immediately. \
                 Complete a full database consistency check (DBCC CHECKDB). This error can be caused \
                 by many factors; for more information, see SQL Server Books Online.",
                err.raw_os_error().unwrap_or(0),
                os_error_text(err)
            ),
        )
    }

    /// 824: a page read back from disk is not the page that was written.
    pub fn logical_io_error(
        detail: &str,
        page: crate::units::PageId,
        database_id: u16,
        path: &str,
    ) -> SqlError {
        let offset = u64::from(page.page_no) * crate::units::PAGE_SIZE_U64;
        SqlError::new(
            824,
            24,
            2,
            format!(
                "SQL Server detected a logical consistency-based I/O error: {detail}. It occurred \
                 during a read of page ({}:{}) in database ID {database_id} at offset {offset:#016x} \
                 in file '{path}'. Additional messages in the SQL Server error log or system event \
                 log may provide more detail. This is a severe error condition that threatens \
                 database integrity and must be corrected immediately. Complete a full database \
                 consistency check (DBCC CHECKDB). This error can be caused by many factors; for \
                 more information, see SQL Server Books Online.",
                page.file_id, page.page_no
            ),
        )
    }

    /// 8948: the PFS byte of an allocated page (one its owner uses) says `status`, without the
    /// allocated bit. DBCC CHECKALLOC reports it; freeing such a page refuses with it.
    pub fn pfs_wrong_type(
        page: crate::units::PageId,
        pfs_page: crate::units::PageId,
        status: u8,
    ) -> SqlError {
        let expected = status | crate::alloc::pfs::ALLOCATED;
        SqlError::new(
            8948,
            16,
            1,
            format!(
                "Database error: Page {page} is marked with the wrong type in PFS page \
                 {pfs_page}. PFS status 0x{status:x} expected 0x{expected:x}."
            ),
        )
    }

    /// 1105: the filegroup is full and no file could grow.
    pub fn filegroup_full(object: &str, database: &str, filegroup: &str) -> SqlError {
        SqlError::new(
            1105,
            17,
            2,
            format!(
                "Could not allocate space for object '{object}' in database '{database}' because \
                 the '{filegroup}' filegroup is full. Create disk space by deleting unneeded files, \
                 dropping objects in the filegroup, adding additional files to the filegroup, or \
                 setting autogrowth on for existing files in the filegroup."
            ),
        )
    }

    pub fn database_exists(name: &str) -> SqlError {
        SqlError::new(
            1801,
            16,
            3,
            format!("Database '{name}' already exists. Choose a different database name."),
        )
    }

    pub fn primary_too_small(min_mb: u32) -> SqlError {
        SqlError::new(
            1803,
            17,
            1,
            format!(
                "The CREATE DATABASE statement failed. The primary file must be at least {min_mb} \
                 MB to accommodate a copy of the model database."
            ),
        )
    }

    pub fn logical_name_in_use(name: &str) -> SqlError {
        SqlError::new(
            1828,
            16,
            3,
            format!("The logical file name \"{name}\" is already in use. Choose a different name."),
        )
    }

    pub fn database_missing(name: &str) -> SqlError {
        SqlError::new(
            5002,
            16,
            1,
            format!(
                "Database '{name}' does not exist. Verify the name in sys.databases and try the \
                 operation again."
            ),
        )
    }

    pub fn files_not_found() -> SqlError {
        SqlError::new(
            5009,
            16,
            9,
            "One or more files listed in the statement could not be found or could not be \
             initialized.",
        )
    }

    /// 1921: a table's or an index's ON clause names no filegroup of the database (CREATE
    /// TABLE, CREATE INDEX; DBCC CHECKFILEGROUP by name here).
    pub fn invalid_filegroup(filegroup: &str) -> SqlError {
        SqlError::new(1921, 16, 1, format!("Invalid filegroup '{filegroup}' specified."))
    }

    pub fn filegroup_missing(filegroup: &str, database: &str) -> SqlError {
        SqlError::new(
            5014,
            16,
            1,
            format!("The filegroup '{filegroup}' does not exist in database '{database}'."),
        )
    }

    pub fn primary_file_removal() -> SqlError {
        SqlError::new(
            5020,
            16,
            1,
            "The primary data or log file cannot be removed from a database.",
        )
    }

    pub fn only_file_in_default_filegroup(name: &str) -> SqlError {
        SqlError::new(
            5031,
            16,
            1,
            format!(
                "Cannot remove the file '{name}' because it is the only file in the DEFAULT \
                 filegroup."
            ),
        )
    }

    pub fn too_many_files(limit: u32) -> SqlError {
        SqlError::new(
            5033,
            16,
            1,
            format!("The maximum of {limit} files per database has been exceeded."),
        )
    }

    pub fn filegroup_exists(name: &str) -> SqlError {
        SqlError::new(
            5035,
            16,
            1,
            format!(
                "Filegroup '{name}' already exists in this database. Specify a different name or \
                 remove the conflicting filegroup if it is empty."
            ),
        )
    }

    pub fn modify_size_not_larger() -> SqlError {
        SqlError::new(
            5039,
            16,
            1,
            "MODIFY FILE failed. Specified size is less than or equal to current size.",
        )
    }

    pub fn modify_size_above_max() -> SqlError {
        SqlError::new(5040, 16, 1, "MODIFY FILE failed. Size is greater than MAXSIZE.")
    }

    pub fn modify_file_missing(name: &str) -> SqlError {
        SqlError::new(5041, 16, 1, format!("MODIFY FILE failed. File '{name}' does not exist."))
    }

    /// DBCC SHRINKFILE of a file the database does not have.
    pub fn file_not_found_in_database(file: &str, database: &str) -> SqlError {
        SqlError::new(
            8985,
            16,
            1,
            format!(
                "Could not locate file '{file}' for database '{database}' in sys.database_files. The file either does not exist, or was dropped."
            ),
        )
    }

    pub fn file_not_empty(name: &str) -> SqlError {
        SqlError::new(
            5042,
            16,
            1,
            format!("The file '{name}' cannot be removed because it is not empty."),
        )
    }

    pub fn filegroup_not_empty(name: &str) -> SqlError {
        SqlError::new(
            5042,
            16,
            8,
            format!("The filegroup '{name}' cannot be removed because it is not empty."),
        )
    }

    pub fn maxsize_below_size(name: &str) -> SqlError {
        SqlError::new(5103, 16, 1, format!("MAXSIZE cannot be less than SIZE for file '{name}'."))
    }

    pub fn create_file_os_error(err: &std::io::Error, path: &str) -> SqlError {
        SqlError::new(
            5123,
            16,
            1,
            format!(
                "CREATE FILE encountered operating system error {}({}) while attempting to open or \
                 create the physical file '{path}'.",
                err.raw_os_error().unwrap_or(0),
                os_error_text(err)
            ),
        )
    }

    /// 5123 for a physical name Windows would refuse (a control character in it): OS error 123,
    /// with Windows' text, as SQL Server reports it.
    pub fn invalid_file_name(path: &str) -> SqlError {
        SqlError::new(
            5123,
            16,
            1,
            format!(
                "CREATE FILE encountered operating system error 123(The filename, directory name, \
                 or volume label syntax is incorrect.) while attempting to open or create the \
                 physical file '{path}'."
            ),
        )
    }

    pub fn expand_file_os_error(err: &std::io::Error, path: &str) -> SqlError {
        SqlError::new(
            5149,
            16,
            1,
            format!(
                "MODIFY FILE encountered operating system error {}({}) while attempting to expand \
                 the physical file '{path}'.",
                err.raw_os_error().unwrap_or(0),
                os_error_text(err)
            ),
        )
    }

    pub fn growth_above_max(name: &str) -> SqlError {
        SqlError::new(
            5169,
            16,
            1,
            format!("FILEGROWTH cannot be greater than MAXSIZE for file '{name}'."),
        )
    }

    /// 1222: a lock request waited its session's LOCK_TIMEOUT. SQL Server's state is 51
    /// for a row or key lock and 56 for an object's (both seen in its replies).
    pub fn lock_timeout(state: u8) -> SqlError {
        SqlError::new(1222, 16, state, "Lock request time out period exceeded.")
    }

    /// A wait ended because its session was cancelled (a client's ATTENTION, or KILL). The
    /// T-SQL layer answers with the cancel's own error (3617, or 596 for a killed session).
    pub fn wait_cancelled() -> SqlError {
        SqlError::new(WAIT_CANCELLED, 25, 1, "The query was cancelled by the client (ATTENTION).")
    }

    /// 9002: the log is full and cannot grow; `reason` is log_reuse_wait_desc.
    pub fn log_full(database: &str, reason: &str) -> SqlError {
        SqlError::new(
            9002,
            17,
            2,
            format!("The transaction log for database '{database}' is full due to '{reason}'."),
        )
    }

    /// 9001: the database's log stopped after a failed write or flush (MSSQLSERVER_9001, state
    /// 4 as a session's commit reports it). Every later flush of that log returns it until the
    /// database restarts.
    pub fn log_not_available(database: &str) -> SqlError {
        SqlError::new(
            9001,
            21,
            4,
            format!(
                "The log for database '{database}' is not available. Check the operating system \
                 error log for related error messages. Resolve any errors and restart the database."
            ),
        )
    }

    /// 17053, written to the errorlog when a log write or flush fails (before the 9001 that
    /// sessions get): the operating system's error number and text.
    pub fn log_writer_os_error(err: &std::io::Error) -> SqlError {
        SqlError::new(
            17053,
            16,
            1,
            format!(
                "SQLServerLogMgr::LogWriter: Operating system error {}({}) encountered.",
                err.raw_os_error().unwrap_or(0),
                os_error_text(err)
            ),
        )
    }

    /// 3456: redo found a page that a log record does not fit (the page and the log disagree).
    /// Deviation: extentdb's records do not carry the page LSN they expect, so PrevPageLSN is
    /// printed as (0:0:0).
    pub fn redo_failed(failure: &RedoFailure<'_>) -> SqlError {
        let f = failure;
        SqlError::new(
            3456,
            16,
            1,
            format!(
                "Could not redo log record {}, for transaction ID (0:{}), on page ({}:{}), \
                 database '{}' (database ID {}). Page: LSN = {}, type = {}. Log: OpCode = {}, \
                 context {}, PrevPageLSN: (0:0:0). Restore from a backup of the database, or \
                 repair the database.",
                f.record_lsn,
                f.xact_id,
                f.page.file_id,
                f.page.page_no,
                f.database,
                f.database_id,
                f.page_lsn,
                f.page_type,
                f.op_code,
                f.context
            ),
        )
    }

    /// 9004: the log could not be read back. State 1: a VLF header is damaged; state 4: a
    /// log block failed its checks.
    pub fn log_corrupt(database: &str, state: u8) -> SqlError {
        SqlError::new(
            9004,
            21,
            state,
            format!(
                "An error occurred while processing the log for database '{database}'.  If \
                 possible, restore from backup. If a backup is not available, it might be \
                 necessary to rebuild the log."
            ),
        )
    }

    pub fn file_exists(path: &str) -> SqlError {
        SqlError::new(
            5170,
            16,
            1,
            format!(
                "Cannot create file '{path}' because it already exists. Change the file path or \
                 the file name, and retry the operation."
            ),
        )
    }

    pub fn file_mismatch() -> SqlError {
        SqlError::new(
            5173,
            16,
            1,
            "One or more files do not match the primary file of the database. If you are \
             attempting to attach a database, retry the operation with the correct files. If this \
             is an existing database, the file may be corrupted and should be restored from a \
             backup.",
        )
    }

    pub fn file_too_small() -> SqlError {
        SqlError::new(5174, 16, 1, "Each file size must be greater than or equal to 512 KB.")
    }

    pub fn file_size_limit() -> SqlError {
        SqlError::new(
            1842,
            16,
            1,
            "The file size, max size cannot be greater than 2147483647 in units of a page size. \
             The file growth cannot be greater than 2147483647 in units of both page size and \
             percentage.",
        )
    }
}

/// What error 3456 names: the log record that could not be redone and the page it names.
pub struct RedoFailure<'a> {
    pub record_lsn: crate::log::lsn::Lsn,
    pub xact_id: u64,
    pub page: crate::units::PageId,
    pub page_lsn: crate::log::lsn::Lsn,
    pub page_type: u8,
    pub op_code: u8,
    pub context: u8,
    pub database: &'a str,
    pub database_id: u16,
}

/// An OS error's text without the "(os error N)" that std appends (SQL Server prints the
/// number before the text in parentheses).
pub fn os_error_text(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
