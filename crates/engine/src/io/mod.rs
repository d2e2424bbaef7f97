//! The one I/O seam. Every byte the engine reads or writes on disk goes through [`Io`] and
//! [`IoFile`]; no other module touches `std::fs` for database files, the errorlog or the
//! instance's own small files (the configuration, the database registry: [`replace_file`]).
//!
//! Backends:
//! - [`StdIo`]: the real one (pread/pwrite, `fallocate`, `fdatasync`).
//! - [`FaultIo`]: wraps another backend and injects failures on command: fail the Nth write,
//!   fail fsync, tear a write (only a prefix reaches the file), or run out of space (ENOSPC)
//!   after a byte budget. It also counts writes, bytes and syncs, which tests use to prove that
//!   instant file initialisation writes nothing.
//!
//! - [`StatsIo`]: wraps the instance's backend and counts each file's reads, writes and stall
//!   time for sys.dm_io_virtual_file_stats.
//!
//! Errors are the operating system's: a full disk is ENOSPC, a write past the process's
//! file-size limit is EFBIG, but only where the process catches or ignores SIGXFSZ, whose
//! default action ends it (the `extentdb` binary catches it; an embedding program chooses).
//!
//! Durability contract: a write is durable only after `sync_data` returns Ok on that file; a
//! file's existence (its creation or renaming) only after `sync_dir` returns Ok on its
//! directory ([`sync_parent_dirs`]: database creation and ADD FILE do it before the boot page
//! names the new files). Removing a file does not sync its directory: a removed file that a
//! crash brings back is named by nothing (DROP DATABASE syncs the directories after deleting a
//! database's files all the same, so that the name is free for a new database after a crash).

mod fault;
mod stats;
mod std_io;

pub use fault::{FaultIo, FaultPlan, IoCounters, IoGate};
pub use stats::{FileIoCounters, FileIoRegistry, FileIoSnapshot, PendingIoRow, StatsIo};
pub use std_io::StdIo;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Operations on paths.
pub trait Io: Send + Sync {
    /// Creates a new file; fails with `AlreadyExists` if the path exists (O_EXCL).
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn IoFile>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn IoFile>>;
    /// Opens a file for appending text (the errorlog), creating it if needed.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn IoFile>>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn exists(&self, path: &Path) -> bool;
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Reads a whole (small) file, such as an errorlog.
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
    /// Makes a directory's entries durable (fsync of the directory): a file created, renamed
    /// or removed in it survives a crash only once its directory is synced, whatever was
    /// synced of the file itself.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Opens a file, creating it if needed, and takes an exclusive lock on it (flock), held
    /// while the returned file is open and released by the operating system when the process
    /// ends, however it ends. None: another open of the file holds the lock (another process,
    /// or this one).
    fn lock_exclusive(&self, path: &Path) -> io::Result<Option<Box<dyn IoFile>>>;
    /// The volume (mounted file system) that holds `path`, and its space
    /// (sys.dm_os_volume_stats).
    fn volume(&self, path: &Path) -> io::Result<VolumeSpace>;
    /// The paths of the entries of directory `dir` (Extended Events' file reader matches
    /// them against a pattern).
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
}

/// A mounted file system as sys.dm_os_volume_stats shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeSpace {
    /// Where it is mounted (`/`, `/data`).
    pub mount_point: String,
    /// What is mounted there (the device, `/dev/vda1`).
    pub source: String,
    /// `ext4`, `xfs`, `tmpfs`...
    pub file_system_type: String,
    pub total_bytes: u64,
    /// Bytes an unprivileged process may still use (statvfs f_bavail).
    pub available_bytes: u64,
    pub read_only: bool,
}

/// Syncs the directory of each path, each directory once (the files of a new database, say).
pub fn sync_parent_dirs<'p>(
    io: &dyn Io,
    paths: impl IntoIterator<Item = &'p Path>,
) -> io::Result<()> {
    let mut synced: Vec<&Path> = Vec::new();
    for path in paths {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if !synced.contains(&dir) {
            io.sync_dir(dir)?;
            synced.push(dir);
        }
    }
    Ok(())
}

/// A field of a line in one of the instance's own tab-separated text files (the database
/// registry, the Extended Events definitions): a backslash, tab, line feed or carriage return
/// is escaped (`\\`, `\t`, `\n`, `\r`), so a name holding one stays one field of one line.
pub fn escape_line_field(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\t' => escaped.push_str("\\t"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            _ => escaped.push(c),
        }
    }
    escaped
}

/// The inverse of [`escape_line_field`]; a backslash before any other character is kept as it
/// is (database registries written before the escaping had unescaped backslashes).
pub fn unescape_line_field(field: &str) -> String {
    let mut text = String::with_capacity(field.len());
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        let escaped = match (c, chars.peek()) {
            ('\\', Some('\\')) => Some('\\'),
            ('\\', Some('t')) => Some('\t'),
            ('\\', Some('n')) => Some('\n'),
            ('\\', Some('r')) => Some('\r'),
            _ => None,
        };
        match escaped {
            Some(unescaped) => {
                chars.next();
                text.push(unescaped);
            }
            None => text.push(c),
        }
    }
    text
}

/// Replaces a small file of the instance's own (the configuration, the database registry)
/// whole and durably: the bytes go to `<name>.new` beside it, which is synced and renamed over
/// `path`, and then the directory is synced. A crash at any point leaves the old file or the new
/// one, never a mix; a failure (a full disk, say) leaves the old one and returns the error.
pub fn replace_file(io: &dyn Io, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temporary_name = path.file_name().unwrap_or_default().to_os_string();
    temporary_name.push(".new");
    let temporary = path.with_file_name(temporary_name);
    if io.exists(&temporary) {
        io.remove(&temporary)?;
    }
    let file = io.create_new(&temporary)?;
    file.write_at(bytes, 0)?;
    file.sync_data()?;
    drop(file);
    io.rename(&temporary, path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    io.sync_dir(dir)
}

/// Operations on one open file.
pub trait IoFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Reads exactly `buf.len()` bytes at `offset` if no wait for the device is needed (the
    /// bytes are in the OS page cache) and says whether it did. False (the read would wait, the
    /// backend cannot tell, or it failed) leaves nothing in `buf` to rely on: the caller reads
    /// with [`IoFile::read_at`], which reports any error. A fiber reads this way first and
    /// hands only a read that would wait to an I/O thread. By default, false.
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        let _ = (buf, offset);
        false
    }
    /// Writes all of `buf` at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Writes `parts` back to back from `offset`, as one unbuffered write where the backend
    /// can: the log's block writes, which SQL Server issues on files opened with
    /// FILE_FLAG_NO_BUFFERING, so the bytes go to the device without a page-cache copy. The
    /// durability contract is unchanged (durable after `sync_data`). By default, `write_at` of
    /// each part in turn.
    fn write_gathered(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut at = offset;
        for part in parts {
            self.write_at(part, at)?;
            at += part.len() as u64;
        }
        Ok(())
    }
    /// Appends all of `buf` at the end of the file.
    fn append(&self, buf: &[u8]) -> io::Result<()>;
    /// Makes previous writes durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    /// Reserves disk space for `[offset, offset + len)` without writing it, extending the file
    /// if needed (fallocate mode 0). This is instant file initialisation.
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Sets the file length (used to undo a failed growth).
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn size_bytes(&self) -> io::Result<u64>;
    /// Drops the file's clean pages from the OS page cache (after a sync; advisory, as
    /// POSIX_FADV_DONTNEED): SQL Server's data files bypass that cache. By default, nothing.
    fn drop_cached(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The default backend.
pub fn std_io() -> Arc<dyn Io> {
    Arc::new(StdIo)
}
