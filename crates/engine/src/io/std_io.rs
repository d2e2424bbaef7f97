//! The real I/O backend: positional reads and writes on `std::fs::File`, `fallocate` and
//! `fdatasync` through rustix.

use super::{Io, IoFile};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The real backend. It has no state: each call acts on the operating system.
pub struct StdIo;

struct StdFile {
    file: File,
}

impl Io for StdIo {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        Ok(Box::new(StdFile { file }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(StdFile { file }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        let file = OpenOptions::new().read(true).append(true).create(true).open(path)?;
        Ok(Box::new(StdFile { file }))
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

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }
}

impl IoFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
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
}
