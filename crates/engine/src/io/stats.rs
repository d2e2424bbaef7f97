//! Per-file I/O statistics, for sys.dm_io_virtual_file_stats (reference §6.5).
//!
//! [`StatsIo`] wraps the instance's backend: every file it opens is wrapped in a
//! [`CountedFile`] whose reads, writes and syncs add to the file's [`FileIoCounters`], kept in a
//! [`FileIoRegistry`] by path. A stall is the time the calling thread really spent in the
//! call: I/O in extentdb is synchronous, so the time a read takes is the time its requester
//! waited for it. Counters live as long as the instance (SQL Server's reset at service start).
//!
//! The same wrapper lists each read and write while it is in the kernel: the registry's
//! pending I/Os, for sys.dm_io_pending_io_requests (with the file's handle, the offset and the
//! time it has been pending), sys.dm_os_schedulers.pending_disk_io_count and
//! sys.dm_os_tasks.pending_io_count. Each file has a handle number of its own for as long as
//! the instance runs (dm_io_virtual_file_stats.file_handle, the pending I/O's io_handle).
//!
//! Deviations: a sync (fdatasync) adds its time to io_stall_write_ms but is not a write of its
//! own, and is not a pending I/O; SQL Server's writes are asynchronous and carry no separate
//! flush. A pending I/O is one a thread is inside: extentdb's I/O is synchronous, so each is
//! pending until the call returns (io_pending 1 throughout).

use super::{Io, IoFile};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One file's counters.
#[derive(Default, Debug)]
pub struct FileIoCounters {
    /// The file's handle number (file_handle, io_handle), unique in the instance.
    pub handle: u64,
    pub path: PathBuf,
    pub num_of_reads: AtomicU64,
    pub num_of_bytes_read: AtomicU64,
    pub io_stall_read_us: AtomicU64,
    pub num_of_writes: AtomicU64,
    pub num_of_bytes_written: AtomicU64,
    pub io_stall_write_us: AtomicU64,
}

/// A snapshot of one file's counters, in sys.dm_io_virtual_file_stats' units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileIoSnapshot {
    pub num_of_reads: u64,
    pub num_of_bytes_read: u64,
    pub io_stall_read_ms: u64,
    pub num_of_writes: u64,
    pub num_of_bytes_written: u64,
    pub io_stall_write_ms: u64,
}

impl FileIoCounters {
    fn add_read(&self, bytes: usize, started: Instant) {
        self.num_of_reads.fetch_add(1, Ordering::Relaxed);
        self.num_of_bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
        self.io_stall_read_us.fetch_add(elapsed_us(started), Ordering::Relaxed);
    }

    fn add_write(&self, bytes: usize, started: Instant) {
        self.num_of_writes.fetch_add(1, Ordering::Relaxed);
        self.num_of_bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
        self.io_stall_write_us.fetch_add(elapsed_us(started), Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> FileIoSnapshot {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        FileIoSnapshot {
            num_of_reads: load(&self.num_of_reads),
            num_of_bytes_read: load(&self.num_of_bytes_read),
            io_stall_read_ms: load(&self.io_stall_read_us) / 1000,
            num_of_writes: load(&self.num_of_writes),
            num_of_bytes_written: load(&self.num_of_bytes_written),
            io_stall_write_ms: load(&self.io_stall_write_us) / 1000,
        }
    }
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// An I/O in flight.
struct PendingIo {
    file: Arc<FileIoCounters>,
    offset: u64,
    started: Instant,
    scheduler_id: Option<usize>,
    session_id: u16,
}

/// One row of sys.dm_io_pending_io_requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingIoRow {
    /// The I/O's number in the instance, unique while it is pending.
    pub request_id: u64,
    pub io_handle: u64,
    pub path: PathBuf,
    pub offset: u64,
    pub pending_ms: u64,
    /// The scheduler of the worker that issued it; None for a thread outside the schedulers
    /// (the lazy writer, the log writer, an I/O thread).
    pub scheduler_id: Option<usize>,
    pub session_id: u16,
}

/// The counters of every file the instance opened, by path, and the I/Os in flight.
#[derive(Default)]
pub struct FileIoRegistry {
    files: Mutex<BTreeMap<PathBuf, Arc<FileIoCounters>>>,
    pending: Mutex<BTreeMap<u64, PendingIo>>,
    next_io: AtomicU64,
}

impl FileIoRegistry {
    fn counters_for(&self, path: &Path) -> Arc<FileIoCounters> {
        let mut files = self.files.lock();
        let handle = files.len() as u64 + 1;
        let counters = files.entry(path.to_path_buf()).or_insert_with(|| {
            Arc::new(FileIoCounters { handle, path: path.to_path_buf(), ..Default::default() })
        });
        counters.clone()
    }

    /// The file's counters (zeros if it was never opened).
    pub fn snapshot(&self, path: &Path) -> FileIoSnapshot {
        self.files.lock().get(path).map(|c| c.snapshot()).unwrap_or_default()
    }

    /// The file's handle number; None if the instance never opened it.
    pub fn handle_of(&self, path: &Path) -> Option<u64> {
        self.files.lock().get(path).map(|c| c.handle)
    }

    /// The I/Os in flight now, oldest first.
    pub fn pending(&self) -> Vec<PendingIoRow> {
        self.pending
            .lock()
            .iter()
            .map(|(id, io)| PendingIoRow {
                request_id: *id,
                io_handle: io.file.handle,
                path: io.file.path.clone(),
                offset: io.offset,
                pending_ms: u64::try_from(io.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                scheduler_id: io.scheduler_id,
                session_id: io.session_id,
            })
            .collect()
    }

    /// Lists an I/O that started at `started` (the moment its stall is timed from) as pending
    /// until the guard drops.
    fn begin(&self, file: &Arc<FileIoCounters>, offset: u64, started: Instant) -> PendingGuard<'_> {
        let id = self.next_io.fetch_add(1, Ordering::Relaxed);
        let io = PendingIo {
            file: file.clone(),
            offset,
            started,
            scheduler_id: crate::scheduler::current_scheduler_id(),
            session_id: crate::instance::current_spid(),
        };
        self.pending.lock().insert(id, io);
        PendingGuard { registry: self, id }
    }
}

/// Takes its I/O off the pending list when dropped.
struct PendingGuard<'a> {
    registry: &'a FileIoRegistry,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.registry.pending.lock().remove(&self.id);
    }
}

/// The backend decorator that counts.
pub struct StatsIo {
    inner: Arc<dyn Io>,
    registry: Arc<FileIoRegistry>,
}

impl StatsIo {
    pub fn new(inner: Arc<dyn Io>, registry: Arc<FileIoRegistry>) -> StatsIo {
        StatsIo { inner, registry }
    }

    fn wrap(&self, path: &Path, file: Box<dyn IoFile>) -> Box<dyn IoFile> {
        let counters = self.registry.counters_for(path);
        Box::new(CountedFile { inner: file, counters, registry: self.registry.clone() })
    }
}

impl Io for StatsIo {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = self.inner.create_new(path)?;
        Ok(self.wrap(path, file))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = self.inner.open(path)?;
        Ok(self.wrap(path, file))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        self.inner.open_append(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn lock_exclusive(&self, path: &Path) -> io::Result<Option<Box<dyn IoFile>>> {
        self.inner.lock_exclusive(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn volume(&self, path: &Path) -> io::Result<super::VolumeSpace> {
        self.inner.volume(path)
    }
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.inner.read_to_string(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        self.inner.list_dir(dir)
    }
}

/// A file whose calls add to its counters, each read and write pending while it runs.
struct CountedFile {
    inner: Box<dyn IoFile>,
    counters: Arc<FileIoCounters>,
    registry: Arc<FileIoRegistry>,
}

impl IoFile for CountedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let started = Instant::now();
        let pending = self.registry.begin(&self.counters, offset, started);
        let result = self.inner.read_at(buf, offset);
        drop(pending);
        self.counters.add_read(buf.len(), started);
        result
    }
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        let started = Instant::now();
        let read = self.inner.read_at_if_cached(buf, offset);
        if read {
            self.counters.add_read(buf.len(), started);
        }
        read
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let started = Instant::now();
        let pending = self.registry.begin(&self.counters, offset, started);
        let result = self.inner.write_at(buf, offset);
        drop(pending);
        self.counters.add_write(buf.len(), started);
        result
    }
    fn write_gathered(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        let started = Instant::now();
        let pending = self.registry.begin(&self.counters, offset, started);
        let result = self.inner.write_gathered(parts, offset);
        drop(pending);
        self.counters.add_write(parts.iter().map(|p| p.len()).sum(), started);
        result
    }
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        let started = Instant::now();
        let result = self.inner.append(buf);
        self.counters.add_write(buf.len(), started);
        result
    }
    fn sync_data(&self) -> io::Result<()> {
        let started = Instant::now();
        let result = self.inner.sync_data();
        self.counters.io_stall_write_us.fetch_add(elapsed_us(started), Ordering::Relaxed);
        result
    }
    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        self.inner.allocate(offset, len)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn size_bytes(&self) -> io::Result<u64> {
        self.inner.size_bytes()
    }
    fn drop_cached(&self) -> io::Result<()> {
        self.inner.drop_cached()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_are_counted_per_path() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(FileIoRegistry::default());
        let io = StatsIo::new(crate::io::std_io(), registry.clone());
        let path = dir.path().join("a.mdf");
        let file = io.create_new(&path).unwrap();
        file.write_at(&[7u8; 8192], 0).unwrap();
        file.write_at(&[8u8; 8192], 8192).unwrap();
        let mut buf = [0u8; 8192];
        file.read_at(&mut buf, 8192).unwrap();
        assert_eq!(buf[0], 8);
        let stats = registry.snapshot(&path);
        assert_eq!((stats.num_of_writes, stats.num_of_bytes_written), (2, 16384));
        assert_eq!((stats.num_of_reads, stats.num_of_bytes_read), (1, 8192));
        assert_eq!(registry.snapshot(&dir.path().join("other.ndf")), FileIoSnapshot::default());
    }

    /// A read is pending while its thread is in it: listed with its file's handle, path and
    /// offset, and gone once it returns. Each file has a handle of its own.
    #[test]
    fn a_read_is_pending_while_it_runs() {
        use crate::io::{FaultIo, IoGate};
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(FileIoRegistry::default());
        let faults = FaultIo::new(crate::io::std_io());
        let plan = faults.plan();
        let io = Arc::new(StatsIo::new(Arc::new(faults), registry.clone()));
        let path = dir.path().join("a.mdf");
        let file = io.create_new(&path).unwrap();
        file.write_at(&[7u8; 16384], 0).unwrap();
        let other = dir.path().join("b.ndf");
        io.create_new(&other).unwrap();
        let (handle, other_handle) = (registry.handle_of(&path), registry.handle_of(&other));
        assert!(handle.is_some() && other_handle.is_some() && handle != other_handle);
        assert!(registry.pending().is_empty(), "a finished write is not pending");
        let gate = IoGate::closed();
        plan.lock().read_gate = Some(gate.clone());
        let reader = std::thread::spawn(move || {
            crate::instance::set_current_spid(77);
            let mut buf = [0u8; 8192];
            file.read_at(&mut buf, 8192).unwrap();
            buf[0]
        });
        while gate.waiting() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let pending = registry.pending();
        assert_eq!(pending.len(), 1, "{pending:?}");
        let row = &pending[0];
        assert_eq!((row.io_handle, &row.path, row.offset), (handle.unwrap(), &path, 8192));
        assert_eq!((row.session_id, row.scheduler_id), (77, None));
        gate.open();
        assert_eq!(reader.join().unwrap(), 7);
        assert!(registry.pending().is_empty());
    }
}
