//! The real I/O backend: positional reads and writes on `std::fs::File`, `fallocate` and
//! `fdatasync` through rustix.
//!
//! Gathered writes ([`IoFile::write_gathered`], the log's and the buffer pool's) go unbuffered
//! when they can: through a second descriptor of the open file (reopened through /proc/self/fd)
//! with O_DIRECT, in one `pwritev` straight from the parts when each is sector-aligned (the
//! pool's frames are), else in one `pwrite` from a sector-aligned staging buffer. SQL Server
//! opens its files with FILE_FLAG_NO_BUFFERING for the same reason: the page cache's copy is
//! most of the cost of writing a log at disk speed. A write whose offset or length is not a
//! multiple of [`DIRECT_ALIGN_BYTES`], a file system without O_DIRECT (tmpfs) or a device that
//! refuses the alignment (EINVAL) falls back to buffered writes, for good on that file.
//! `fdatasync` acts on the file, not the descriptor, so one sync covers both paths.

use super::{Io, IoFile};
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The alignment of unbuffered writes: offset, length and buffer address (a 512-byte sector,
/// the unit of SQL Server's log blocks; the staging buffer is aligned to a 4 KB page).
pub const DIRECT_ALIGN_BYTES: usize = 512;
const STAGING_ALIGN_BYTES: usize = 4096;
/// The most parts one vectored write takes (Linux's IOV_MAX is 1,024; a gathered run of the
/// buffer pool has at most 128).
const MAX_GATHER_PARTS: usize = 1024;
/// Staging buffers kept per file: one per writer that can overlap (a session, the lazy
/// writer, the checkpoint, the log).
const MAX_SPARE_STAGING: usize = 4;

/// The real backend. It has no state: each call acts on the operating system.
pub struct StdIo;

struct StdFile {
    file: File,
    /// The O_DIRECT descriptor, opened at the first gathered write; None where refused.
    direct: OnceLock<Option<File>>,
    /// Set when the device refused an aligned unbuffered write (EINVAL): buffered from then on.
    direct_refused: AtomicBool,
    /// Staging buffers reused between writes, so that their pages are touched once: a write
    /// takes one (or makes one, when writers of this file overlap) and gives it back after.
    spare_staging: Mutex<Vec<Vec<u8>>>,
    direct_writes: AtomicU64,
}

impl StdFile {
    fn new(file: File) -> StdFile {
        StdFile {
            file,
            direct: OnceLock::new(),
            direct_refused: AtomicBool::new(false),
            spare_staging: Mutex::new(Vec::new()),
            direct_writes: AtomicU64::new(0),
        }
    }

    /// Writes through O_DIRECT; Ok(false) when this write or this file cannot.
    fn write_direct(&self, parts: &[&[u8]], offset: u64) -> io::Result<bool> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let aligned = |n: u64| n.is_multiple_of(DIRECT_ALIGN_BYTES as u64);
        if len == 0 || !aligned(offset) || !aligned(len as u64) {
            return Ok(false);
        }
        if self.direct_refused.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let Some(direct) = self.direct.get_or_init(|| open_direct(&self.file).ok()) else {
            return Ok(false);
        };
        if let [part] = parts
            && part.as_ptr().addr().is_multiple_of(STAGING_ALIGN_BYTES)
        {
            // Already aligned (a zeroing buffer is page-aligned): no staging copy.
            return self.finish_direct(direct.write_all_at(part, offset));
        }
        let part_aligned = |p: &&[u8]| {
            p.as_ptr().addr().is_multiple_of(DIRECT_ALIGN_BYTES) && aligned(p.len() as u64)
        };
        if parts.len() <= MAX_GATHER_PARTS && parts.iter().all(part_aligned) {
            // Every part is sector-aligned (the buffer pool's frames are): one vectored write
            // from the frames themselves, as WriteFileGather writes a gathered run.
            return self.finish_direct(write_vectored_all_at(direct, parts, offset));
        }
        let mut staging = self.spare_staging.lock().pop().unwrap_or_default();
        if staging.len() < len + STAGING_ALIGN_BYTES {
            staging = vec![0u8; len + STAGING_ALIGN_BYTES];
        }
        let start = staging.as_ptr().align_offset(STAGING_ALIGN_BYTES);
        let mut at = start;
        for part in parts {
            staging[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        let written = direct.write_all_at(&staging[start..start + len], offset);
        let mut spare = self.spare_staging.lock();
        if spare.len() < MAX_SPARE_STAGING {
            spare.push(staging);
        }
        drop(spare);
        self.finish_direct(written)
    }

    /// The outcome of an unbuffered write: Ok(false) when the device refused its alignment
    /// (EINVAL), after which this file writes buffered.
    fn finish_direct(&self, written: io::Result<()>) -> io::Result<bool> {
        match written {
            Ok(()) => {
                self.direct_writes.fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            Err(err) if err.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                self.direct_refused.store(true, Ordering::Relaxed);
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// Unbuffered writes done so far (tests).
    #[cfg(test)]
    fn direct_writes(&self) -> u64 {
        self.direct_writes.load(Ordering::Relaxed)
    }

    /// Whether this file's unbuffered path is closed (no O_DIRECT, or refused).
    #[cfg(test)]
    fn direct_unsupported(&self) -> bool {
        self.direct_refused.load(Ordering::Relaxed) || matches!(self.direct.get(), Some(None))
    }
}

/// Writes every byte of `parts` at `offset` with pwritev, resuming after a short write.
fn write_vectored_all_at(file: &File, parts: &[&[u8]], offset: u64) -> io::Result<()> {
    let mut at = offset;
    let (mut part, mut within) = (0, 0);
    while part < parts.len() {
        let mut slices = Vec::with_capacity(parts.len() - part);
        slices.push(io::IoSlice::new(&parts[part][within..]));
        slices.extend(parts[part + 1..].iter().map(|p| io::IoSlice::new(p)));
        let mut written = rustix::io::pwritev(file, &slices, at).map_err(io::Error::from)?;
        if written == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev wrote nothing"));
        }
        at += written as u64;
        while part < parts.len() && written >= parts[part].len() - within {
            written -= parts[part].len() - within;
            part += 1;
            within = 0;
        }
        within += written;
    }
    Ok(())
}

/// A second descriptor of the same open file with O_DIRECT, reopened through /proc/self/fd so
/// that it is this inode even if the path has since been renamed or reused.
fn open_direct(file: &File) -> io::Result<File> {
    let flags = rustix::fs::OFlags::DIRECT.bits();
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    OpenOptions::new().write(true).custom_flags(flags as i32).open(link)
}

/// The volume that holds `path`: statvfs for its space, and the longest mount point of
/// /proc/self/mountinfo that contains it for its name and file system type.
fn volume_of(path: &Path) -> io::Result<super::VolumeSpace> {
    let path = std::fs::canonicalize(path)?;
    let space = rustix::fs::statvfs(&path)?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut best: Option<(String, String, String)> = None;
    for line in mountinfo.lines() {
        // id parent major:minor root mount_point options [optional...] - fstype source super
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else { continue };
        let (Some(mount_point), Some(fs_type), Some(source)) =
            (fields.get(4), fields.get(dash + 1), fields.get(dash + 2))
        else {
            continue;
        };
        let mount_point = mount_point.replace("\\040", " ");
        let longer = best.as_ref().is_none_or(|(m, _, _)| mount_point.len() >= m.len());
        if path.starts_with(&mount_point) && longer {
            best = Some((mount_point, fs_type.to_string(), source.to_string()));
        }
    }
    let (mount_point, file_system_type, source) =
        best.unwrap_or_else(|| ("/".into(), String::new(), String::new()));
    Ok(super::VolumeSpace {
        mount_point,
        source,
        file_system_type,
        total_bytes: space.f_blocks * space.f_frsize,
        available_bytes: space.f_bavail * space.f_frsize,
        read_only: space.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
    })
}

impl Io for StdIo {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        Ok(Box::new(StdFile::new(file)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(StdFile::new(file)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).append(true).create(true).open(path)?;
        Ok(Box::new(StdFile::new(file)))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn volume(&self, path: &Path) -> io::Result<super::VolumeSpace> {
        volume_of(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock_exclusive(&self, path: &Path) -> io::Result<Option<Box<dyn IoFile>>> {
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(StdFile::new(file)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(err)) => Err(err),
        }
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        std::fs::read_dir(dir)?.map(|entry| entry.map(|e| e.path())).collect()
    }
}

impl IoFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    /// preadv2 with RWF_NOWAIT (Linux 4.14 and later): the kernel reads from its page cache
    /// and answers EAGAIN where it would have to wait for the device.
    #[cfg(target_os = "linux")]
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        let mut done = 0;
        while done < buf.len() {
            let mut slices = [io::IoSliceMut::new(&mut buf[done..])];
            let flags = rustix::io::ReadWriteFlags::NOWAIT;
            match rustix::io::preadv2(&self.file, &mut slices, offset + done as u64, flags) {
                Ok(0) => return false, // past the end: read_at reports it
                Ok(read) => done += read,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return false, // EAGAIN, no RWF_NOWAIT here, or a real error
            }
        }
        true
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn write_gathered(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        if self.write_direct(parts, offset)? {
            return Ok(());
        }
        let mut at = offset;
        for part in parts {
            self.file.write_all_at(part, at)?;
            at += part.len() as u64;
        }
        Ok(())
    }

    fn append(&self, buf: &[u8]) -> io::Result<()> {
        (&self.file).write_all(buf)
    }

    fn sync_data(&self) -> io::Result<()> {
        rustix::fs::fdatasync(&self.file).map_err(io::Error::from)
    }

    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let result =
            rustix::fs::fallocate(&self.file, rustix::fs::FallocateFlags::empty(), offset, len);
        match result {
            Ok(()) => Ok(()),
            // Some file systems have no fallocate; extending the length gives a sparse file,
            // which still reads back as zeros and writes nothing.
            Err(rustix::io::Errno::OPNOTSUPP) => {
                let end = offset + len;
                if self.size_bytes()? < end {
                    self.file.set_len(end)?;
                }
                Ok(())
            }
            Err(err) => Err(io::Error::from(err)),
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn size_bytes(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn drop_cached(&self) -> io::Result<()> {
        rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed)
            .map_err(io::Error::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_in(dir: &Path) -> StdFile {
        let path = dir.join("f.ldf");
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap();
        StdFile::new(file)
    }

    #[test]
    fn the_unbuffered_descriptor_writes_the_open_file_even_after_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        file.set_len(8192).unwrap();
        std::fs::rename(dir.path().join("f.ldf"), dir.path().join("moved.ldf")).unwrap();
        // A new file now has the old name: the writes must not go there.
        std::fs::write(dir.path().join("f.ldf"), b"another file").unwrap();
        file.write_gathered(&[&[0x7Eu8; 4096]], 4096).unwrap();
        let mut back = vec![0u8; 4096];
        file.read_at(&mut back, 4096).unwrap();
        assert!(back.iter().all(|b| *b == 0x7E));
        assert_eq!(std::fs::read(dir.path().join("f.ldf")).unwrap(), b"another file");
    }

    /// A read from the page cache without waiting gives the file's bytes (where the kernel
    /// cannot read without waiting, or has no RWF_NOWAIT, it says so and reads nothing).
    #[test]
    fn a_read_that_need_not_wait_gives_the_files_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        let bytes: Vec<u8> = (0..16384u32).map(|n| (n % 251) as u8).collect();
        file.write_at(&bytes, 0).unwrap();
        let mut back = vec![0u8; 8192];
        if file.read_at_if_cached(&mut back, 4096) {
            assert_eq!(back, bytes[4096..12288]);
        }
        let mut past_end = vec![0u8; 8192];
        assert!(!file.read_at_if_cached(&mut past_end, 12288), "a read past the end is left out");
    }

    /// Dropping a synced file's pages from the page cache loses nothing: the bytes read back
    /// (from the device).
    #[test]
    fn dropping_the_cached_pages_of_a_synced_file_keeps_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        file.write_at(&[0x6Bu8; 8192], 8192).unwrap();
        file.sync_data().unwrap();
        file.drop_cached().unwrap();
        let mut back = vec![0u8; 8192];
        file.read_at(&mut back, 8192).unwrap();
        assert!(back.iter().all(|b| *b == 0x6B));
    }

    #[test]
    fn gathered_writes_read_back_whether_unbuffered_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        file.set_len(64 * 1024).unwrap();
        let (a, b) = (vec![0xA1u8; 1536], vec![0xB2u8; 2560]);
        file.write_gathered(&[&a, &b], 8192).unwrap();
        // Not a multiple of a sector: buffered.
        file.write_gathered(&[&[0xC3u8; 100]], 20_000).unwrap();
        file.sync_data().unwrap();
        let mut back = vec![0u8; 4096];
        file.read_at(&mut back, 8192).unwrap();
        assert_eq!(&back[..1536], &a[..]);
        assert_eq!(&back[1536..], &b[..]);
        let mut tail = vec![0u8; 100];
        file.read_at(&mut tail, 20_000).unwrap();
        assert!(tail.iter().all(|b| *b == 0xC3));
        // Where the file system has O_DIRECT (not tmpfs), the aligned write went unbuffered.
        let unsupported = file.direct_unsupported();
        assert!(unsupported || file.direct_writes() == 1, "{} direct writes", file.direct_writes());
    }

    /// A single page-aligned part is written as it is (no staging copy), at an unaligned
    /// address through the staging buffer; both read back.
    #[test]
    fn an_aligned_part_and_an_unaligned_one_both_read_back() {
        #[repr(C, align(4096))]
        struct Aligned([u8; 8192]);
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        file.set_len(64 * 1024).unwrap();
        let aligned = Box::new(Aligned([0x5Du8; 8192]));
        file.write_gathered(&[&aligned.0[..]], 16_384).unwrap();
        let unaligned = vec![0x4Eu8; 8192 + 1];
        file.write_gathered(&[&unaligned[1..]], 32_768).unwrap();
        file.sync_data().unwrap();
        let mut back = vec![0u8; 8192];
        file.read_at(&mut back, 16_384).unwrap();
        assert!(back.iter().all(|b| *b == 0x5D));
        file.read_at(&mut back, 32_768).unwrap();
        assert!(back.iter().all(|b| *b == 0x4E));
        let unsupported = file.direct_unsupported();
        assert!(unsupported || file.direct_writes() == 2, "{} direct writes", file.direct_writes());
    }

    #[test]
    fn aligned_parts_in_separate_buffers_go_out_in_one_vectored_write() {
        #[repr(C, align(4096))]
        struct Aligned([u8; 8192]);
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path());
        file.set_len(128 * 1024).unwrap();
        // Three frames from three allocations, as a gathered run of the buffer pool is.
        let frames: Vec<Box<Aligned>> =
            (0..3u8).map(|n| Box::new(Aligned([0x10 + n; 8192]))).collect();
        let parts: Vec<&[u8]> = frames.iter().map(|f| &f.0[..]).collect();
        let writes_before = file.direct_writes();
        file.write_gathered(&parts, 40_960).unwrap();
        file.sync_data().unwrap();
        for n in 0..3u8 {
            let mut back = vec![0u8; 8192];
            file.read_at(&mut back, 40_960 + u64::from(n) * 8192).unwrap();
            assert!(back.iter().all(|b| *b == 0x10 + n), "frame {n} read back at its offset");
        }
        let unsupported = file.direct_unsupported();
        assert!(unsupported || file.direct_writes() == writes_before + 1);
    }

    #[test]
    fn a_vectored_write_of_uneven_parts_lands_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin");
        let file = File::create(&path).unwrap();
        let parts: Vec<Vec<u8>> = [1usize, 4096, 7, 0, 513]
            .iter()
            .enumerate()
            .map(|(n, len)| vec![n as u8 + 1; *len])
            .collect();
        let slices: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        write_vectored_all_at(&file, &slices, 100).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..100], &[0u8; 100][..]);
        assert_eq!(&bytes[100..], &parts.concat()[..]);
    }
}
