//! The fault-injecting twin of the real backend.
//!
//! A [`FaultIo`] wraps any [`Io`] and consults one shared [`FaultPlan`] on every write, allocate
//! and sync. Tests arm the plan (`fail_write_after`, `fail_sync_after`, `tear_write_after`,
//! `enospc_after_bytes`) and read the counters. Failures are the errors the operating system
//! would return: EIO for a failed write or fsync, ENOSPC for a full disk.

use super::{Io, IoFile};
use parking_lot::Mutex;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// What the fault backend has seen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub writes: u64,
    pub bytes_written: u64,
    pub bytes_allocated: u64,
    pub syncs: u64,
    /// Directory syncs ([`Io::sync_dir`]).
    pub dir_syncs: u64,
}

/// The faults to inject. Each `*_after` count is the number of further operations of that kind
/// that succeed before the failure; a fault fires once and then disarms.
#[derive(Debug, Default)]
pub struct FaultPlan {
    pub counters: IoCounters,
    pub fail_write_after: Option<u64>,
    pub fail_sync_after: Option<u64>,
    /// (writes to let through, bytes of the failing write that reach the file)
    pub tear_write_after: Option<(u64, usize)>,
    /// Bytes that may still be written or allocated before ENOSPC.
    pub enospc_after_bytes: Option<u64>,
    /// When set, faults (and their countdowns) apply only to files whose path ends with this
    /// (for example ".mdf" to leave the log alone); counters still count every file.
    pub only_paths_ending: Option<String>,
    /// While set and closed, every page read of a targeted file waits for it to open: a read
    /// "in flight" that a test controls.
    pub read_gate: Option<Arc<IoGate>>,
    /// While set and closed, every sync of a targeted file waits for it to open: a sync "in
    /// flight" (a log flush, say) during which a test runs another session's work.
    pub sync_gate: Option<Arc<IoGate>>,
}

/// A gate that holds reads (or syncs) back until it opens.
#[derive(Debug, Default)]
pub struct IoGate {
    open: Mutex<bool>,
    cond: parking_lot::Condvar,
    waiting: std::sync::atomic::AtomicUsize,
}

impl IoGate {
    /// A closed gate.
    pub fn closed() -> Arc<IoGate> {
        Arc::new(IoGate::default())
    }

    pub fn open(&self) {
        *self.open.lock() = true;
        self.cond.notify_all();
    }

    /// Reads (or syncs) waiting at the gate now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Acquire)
    }

    fn pass(&self) {
        let mut open = self.open.lock();
        self.waiting.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        while !*open {
            self.cond.wait(&mut open);
        }
        self.waiting.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// A backend that injects the faults of a shared [`FaultPlan`].
pub struct FaultIo {
    inner: Arc<dyn Io>,
    plan: Arc<Mutex<FaultPlan>>,
}

struct FaultFile {
    inner: Box<dyn IoFile>,
    plan: Arc<Mutex<FaultPlan>>,
    path: String,
}

impl FaultFile {
    /// Whether armed faults apply to this file.
    fn targeted(&self, plan: &FaultPlan) -> bool {
        plan.only_paths_ending.as_ref().is_none_or(|suffix| self.path.ends_with(suffix.as_str()))
    }
}

impl FaultIo {
    pub fn new(inner: Arc<dyn Io>) -> FaultIo {
        FaultIo { inner, plan: Arc::new(Mutex::new(FaultPlan::default())) }
    }

    /// The plan shared by every file this backend opens; lock it to arm faults or read counters.
    pub fn plan(&self) -> Arc<Mutex<FaultPlan>> {
        self.plan.clone()
    }

    fn wrap(&self, inner: Box<dyn IoFile>, path: &Path) -> Box<dyn IoFile> {
        Box::new(FaultFile { inner, plan: self.plan.clone(), path: path.display().to_string() })
    }
}

/// EIO, as the kernel reports a failed write or fsync.
fn eio() -> io::Error {
    io::Error::from_raw_os_error(5)
}

fn enospc() -> io::Error {
    io::Error::from_raw_os_error(28)
}

/// Counts down an armed fault; returns true when it fires.
fn fires(slot: &mut Option<u64>) -> bool {
    match slot {
        Some(0) => {
            *slot = None;
            true
        }
        Some(n) => {
            *n -= 1;
            false
        }
        None => false,
    }
}

/// Takes `len` bytes from the space budget; false when the disk is "full".
fn take_space(plan: &mut FaultPlan, len: u64) -> bool {
    match plan.enospc_after_bytes {
        Some(left) if left < len => false,
        Some(left) => {
            plan.enospc_after_bytes = Some(left - len);
            true
        }
        None => true,
    }
}

impl Io for FaultIo {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        Ok(self.wrap(self.inner.create_new(path)?, path))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        Ok(self.wrap(self.inner.open(path)?, path))
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn IoFile>> {
        // The errorlog is not subject to injected faults: tests inject faults into data files.
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
        self.plan.lock().counters.dir_syncs += 1;
        self.inner.sync_dir(dir)
    }
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.inner.read_to_string(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        self.inner.list_dir(dir)
    }
    /// The inner volume, with no more available than an armed full disk leaves.
    fn volume(&self, path: &Path) -> io::Result<super::VolumeSpace> {
        let mut volume = self.inner.volume(path)?;
        if let Some(left) = self.plan.lock().enospc_after_bytes {
            volume.available_bytes = volume.available_bytes.min(left);
        }
        Ok(volume)
    }
}

impl IoFile for FaultFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let gate = {
            let plan = self.plan.lock();
            plan.read_gate.clone().filter(|_| self.targeted(&plan))
        };
        if let Some(gate) = gate {
            gate.pass();
        }
        self.inner.read_at(buf, offset)
    }

    /// A read held by a gate is never read this way: it waits at the gate in `read_at`.
    fn read_at_if_cached(&self, buf: &mut [u8], offset: u64) -> bool {
        let gated = {
            let plan = self.plan.lock();
            plan.read_gate.is_some() && self.targeted(&plan)
        };
        if gated {
            return false;
        }
        self.inner.read_at_if_cached(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut plan = self.plan.lock();
        if !self.targeted(&plan) {
            plan.counters.writes += 1;
            plan.counters.bytes_written += buf.len() as u64;
            drop(plan);
            return self.inner.write_at(buf, offset);
        }
        if fires(&mut plan.fail_write_after) {
            return Err(eio());
        }
        if let Some((after, keep_bytes)) = plan.tear_write_after {
            if after == 0 {
                plan.tear_write_after = None;
                let keep = keep_bytes.min(buf.len());
                self.inner.write_at(&buf[..keep], offset)?;
                return Err(eio());
            }
            plan.tear_write_after = Some((after - 1, keep_bytes));
        }
        if !take_space(&mut plan, buf.len() as u64) {
            return Err(enospc());
        }
        plan.counters.writes += 1;
        plan.counters.bytes_written += buf.len() as u64;
        drop(plan);
        self.inner.write_at(buf, offset)
    }

    fn append(&self, buf: &[u8]) -> io::Result<()> {
        self.inner.append(buf)
    }

    fn sync_data(&self) -> io::Result<()> {
        let gate = {
            let plan = self.plan.lock();
            plan.sync_gate.clone().filter(|_| self.targeted(&plan))
        };
        if let Some(gate) = gate {
            gate.pass();
        }
        let mut plan = self.plan.lock();
        if self.targeted(&plan) && fires(&mut plan.fail_sync_after) {
            return Err(eio());
        }
        plan.counters.syncs += 1;
        drop(plan);
        self.inner.sync_data()
    }

    fn allocate(&self, offset: u64, len: u64) -> io::Result<()> {
        let mut plan = self.plan.lock();
        let current = self.inner.size_bytes()?;
        let growth = (offset + len).saturating_sub(current);
        if self.targeted(&plan) && !take_space(&mut plan, growth) {
            return Err(enospc());
        }
        plan.counters.bytes_allocated += growth;
        drop(plan);
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
