//! Data and log files: the file header page (page 0), the layout of a new file, and a data
//! file's allocation state (its PFS, GAM, SGAM, DCM, BCM and IAM pages, cached in memory).
//!
//! File header page body (after the 96-byte page header; see docs/format/file-header.md):
//!
//! | off | len | field                                              |
//! |-----|-----|----------------------------------------------------|
//! | 96  | 8   | magic `EXTENTDB`                                   |
//! | 104 | 2   | format version (1)                                 |
//! | 106 | 2   | file_id                                            |
//! | 108 | 1   | type: 0 ROWS, 1 LOG                                |
//! | 109 | 1   | flags: 0x01 primary file                           |
//! | 110 | 2   | data_space_id (filegroup id; 0 for a log)          |
//! | 112 | 4   | size in pages                                      |
//! | 116 | 4   | max_size in pages (i32; -1 unlimited)              |
//! | 120 | 4   | growth: pages, or percent when is_percent_growth   |
//! | 124 | 1   | is_percent_growth                                  |
//! | 125 | 1   | zero                                               |
//! | 126 | 2   | database_id                                        |
//! | 128 | 8   | database binding id (the same in every file)       |
//! | 136 | 8   | creation time, ms since 1970                       |
//! | 144 | 2   | logical name length in bytes                       |
//! | 146 | n   | logical name, UTF-8 (at most 512 bytes)            |
//!
//! Deviation: SQL Server's file header is a record of many more fields (LSNs, GUIDs, backup
//! state); extentdb stores what it uses. The page header around it is SQL Server's.
//! Deviation: a page is taken under its PFS page's UP latch, as before SQL Server 2019, whose
//! "concurrent PFS updates" take SH; the seeds measure the older contention.
//!
//! Layout of a new data file: every fixed page of [`crate::alloc::fixed_pages_in`] is formatted.
//! An extent that holds a fixed page is allocated in the GAM and is a mixed extent: its fixed
//! pages are ALLOCATED 100_PCT_FULL in PFS, its other pages are free single pages (SGAM 1).
//! Every other extent inside the file is free (GAM 1). Growth lays out the new range the same way.
//!
//! Invariants (besides alloc's):
//! 1. `free_extents` equals the number of GAM 1 bits among the extents inside `size_pages`.
//! 2. Only bits of extents inside `size_pages` are ever read; growth rewrites the bits of the
//!    new range, so bits past the end left by an interrupted growth are harmless.

use crate::alloc::{self, MapKind, pfs};
use crate::buffer::{BufferPool, PageGuard, PageKey};
use crate::error::{SqlError, SqlResult};
use crate::io::IoFile;
use crate::latch::LatchMode;
use crate::page::{self, PageBuf, PageHeader, PageType};
use crate::units::{
    GAM_INTERVAL_EXTENTS, GAM_INTERVAL_PAGES, PAGE_SIZE_U64, PAGES_PER_EXTENT, PageId,
    extent_of_page, extents_in_file, first_page_of_extent,
};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub const MAGIC: &[u8; 8] = b"EXTENTDB";
pub const FORMAT_VERSION: u16 = 1;
const MAX_NAME_BYTES: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    Rows = 0,
    Log = 1,
}

/// The content of a file header page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    pub file_id: u16,
    pub file_type: FileType,
    pub is_primary: bool,
    pub data_space_id: u16,
    pub size_pages: u32,
    /// -1 = unlimited.
    pub max_size_pages: i32,
    pub growth: u32,
    pub is_percent_growth: bool,
    pub database_id: u16,
    pub binding_id: u64,
    pub created_ms: i64,
    pub logical_name: String,
}

impl FileHeader {
    pub fn encode(&self) -> Box<PageBuf> {
        assert!(self.logical_name.len() <= MAX_NAME_BYTES, "names are validated before encoding");
        let mut buf = page::new_page_buf();
        let mut header =
            PageHeader::for_allocation_system(PageType::FileHeader, PageId::new(self.file_id, 0));
        let name = self.logical_name.as_bytes();
        let end = 146 + name.len();
        header.slot_count = 0;
        header.free_data = end as u16;
        header.free_count = (crate::units::PAGE_SIZE - end) as u16;
        header.write(&mut buf[..]);
        buf[96..104].copy_from_slice(MAGIC);
        buf[104..106].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        buf[106..108].copy_from_slice(&self.file_id.to_le_bytes());
        buf[108] = self.file_type as u8;
        buf[109] = u8::from(self.is_primary);
        buf[110..112].copy_from_slice(&self.data_space_id.to_le_bytes());
        buf[112..116].copy_from_slice(&self.size_pages.to_le_bytes());
        buf[116..120].copy_from_slice(&self.max_size_pages.to_le_bytes());
        buf[120..124].copy_from_slice(&self.growth.to_le_bytes());
        buf[124] = u8::from(self.is_percent_growth);
        buf[126..128].copy_from_slice(&self.database_id.to_le_bytes());
        buf[128..136].copy_from_slice(&self.binding_id.to_le_bytes());
        buf[136..144].copy_from_slice(&self.created_ms.to_le_bytes());
        buf[144..146].copy_from_slice(&(name.len() as u16).to_le_bytes());
        buf[146..end].copy_from_slice(name);
        page::seal(&mut buf);
        buf
    }

    /// Decodes a verified header page; None if it is not an extentdb file header.
    pub fn decode(buf: &PageBuf) -> Option<FileHeader> {
        let le16 = |at: usize| u16::from_le_bytes([buf[at], buf[at + 1]]);
        let le32 = |at: usize| u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        let le64 = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        if buf[1] != PageType::FileHeader as u8
            || &buf[96..104] != MAGIC
            || le16(104) != FORMAT_VERSION
        {
            return None;
        }
        let name_len = usize::from(le16(144));
        if name_len > MAX_NAME_BYTES {
            return None;
        }
        let logical_name = String::from_utf8(buf[146..146 + name_len].to_vec()).ok()?;
        let file_type = if buf[108] == 1 { FileType::Log } else { FileType::Rows };
        Some(FileHeader {
            file_id: le16(106),
            file_type,
            is_primary: buf[109] & 1 != 0,
            data_space_id: le16(110),
            size_pages: le32(112),
            max_size_pages: le32(116) as i32,
            growth: le32(120),
            is_percent_growth: buf[124] != 0,
            database_id: le16(126),
            binding_id: le64(128),
            created_ms: le64(136) as i64,
            logical_name,
        })
    }
}

/// Reads and verifies one page of a file; corruption is error 824 naming the page.
pub fn read_page(
    file: &dyn IoFile,
    page_id: PageId,
    database_id: u16,
    path: &str,
) -> SqlResult<Box<PageBuf>> {
    let mut buf = page::new_page_buf();
    read_page_into(file, &mut buf, page_id, database_id, path)?;
    Ok(buf)
}

/// Reads and verifies one page into an existing buffer (a buffer-pool frame's).
pub fn read_page_into(
    file: &dyn IoFile,
    buf: &mut PageBuf,
    page_id: PageId,
    database_id: u16,
    path: &str,
) -> SqlResult<()> {
    let offset = u64::from(page_id.page_no) * PAGE_SIZE_U64;
    file.read_at(&mut buf[..], offset)
        .map_err(|err| SqlError::os_io_error(&err, false, offset, path))?;
    verify_read_page(buf, page_id, database_id, path)
}

/// [`read_page_into`] if the page is in the OS page cache, so that no wait for the device is
/// needed ([`IoFile::read_at_if_cached`]); None (nothing read) otherwise.
pub fn read_cached_page_into(
    file: &dyn IoFile,
    buf: &mut PageBuf,
    page_id: PageId,
    database_id: u16,
    path: &str,
) -> Option<SqlResult<()>> {
    let offset = u64::from(page_id.page_no) * PAGE_SIZE_U64;
    file.read_at_if_cached(&mut buf[..], offset)
        .then(|| verify_read_page(buf, page_id, database_id, path))
}

/// A page just read, checked (its id, checksum and header): 824 naming the page if it fails.
fn verify_read_page(buf: &PageBuf, page_id: PageId, database_id: u16, path: &str) -> SqlResult<()> {
    page::verify(buf, page_id)
        .map_err(|bad| SqlError::logical_io_error(&bad.detail(), page_id, database_id, path))
}

/// Seals and writes one page.
pub fn write_page(file: &dyn IoFile, buf: &mut PageBuf, page_no: u32, path: &str) -> SqlResult<()> {
    page::seal(buf);
    let offset = u64::from(page_no) * PAGE_SIZE_U64;
    file.write_at(&buf[..], offset).map_err(|err| SqlError::os_io_error(&err, true, offset, path))
}

/// The allocation state of one data file. The maps themselves are pages in the buffer pool,
/// changed under UP latches (buffer latch order: PFS, then SGAM, then GAM); this struct keeps
/// only the counters derived from them, as atomics.
pub struct FileAlloc {
    pub file_id: u16,
    pub database_id: u16,
    pub is_primary: bool,
    size_pages: AtomicU32,
    free_extents: AtomicU32,
    /// The lowest extent that may be free (a search hint; correctness does not depend on it).
    gam_hint: AtomicU32,
    /// Extents and pages freed so far: a shrink checks that none was freed since its
    /// checkpoint ([`crate::database::Database::shrink_file`]).
    frees: AtomicU64,
}

/// Pages of a new file's range and the free extents it adds, decided by [`FileAlloc::lay_out`].
struct RangeLayout {
    fixed: Vec<u32>,
    system_extents: BTreeSet<u32>,
}

impl FileAlloc {
    fn key(&self, page_no: u32) -> PageKey {
        PageKey::new(self.database_id, PageId::new(self.file_id, page_no))
    }

    fn latch<'p>(
        &self,
        pool: &'p BufferPool,
        page_no: u32,
        mode: LatchMode,
    ) -> SqlResult<PageGuard<'p>> {
        pool.fetch(self.key(page_no), mode)
    }

    /// A file that is being created with `size_pages` pages: every allocation page formatted in
    /// the buffer pool (dirty; [`BufferPool::flush`] makes them durable).
    pub fn new_file(
        pool: &BufferPool,
        file_id: u16,
        database_id: u16,
        is_primary: bool,
        size_pages: u32,
    ) -> SqlResult<FileAlloc> {
        let state = FileAlloc {
            file_id,
            database_id,
            is_primary,
            size_pages: AtomicU32::new(0),
            free_extents: AtomicU32::new(0),
            gam_hint: AtomicU32::new(0),
            frees: AtomicU64::new(0),
        };
        let added = state.lay_out(pool, 0, size_pages)?;
        state.size_pages.store(size_pages, Ordering::Release);
        state.free_extents.store(added, Ordering::Release);
        Ok(state)
    }

    /// The state of an existing file, counted from its GAM pages.
    pub fn open(pool: &BufferPool, header: &FileHeader, database_id: u16) -> SqlResult<FileAlloc> {
        let state = FileAlloc {
            file_id: header.file_id,
            database_id,
            is_primary: header.is_primary,
            size_pages: AtomicU32::new(header.size_pages),
            free_extents: AtomicU32::new(0),
            gam_hint: AtomicU32::new(0),
            frees: AtomicU64::new(0),
        };
        let free = state.count_free_extents(pool)?;
        state.free_extents.store(free, Ordering::Release);
        Ok(state)
    }

    pub fn size_pages(&self) -> u32 {
        self.size_pages.load(Ordering::Acquire)
    }

    pub fn free_extents(&self) -> u32 {
        self.free_extents.load(Ordering::Acquire)
    }

    /// Free extents counted from the GAM bits (invariant 1 recomputed).
    pub fn count_free_extents(&self, pool: &BufferPool) -> SqlResult<u32> {
        let total = extents_in_file(self.size_pages());
        let mut free = 0;
        let mut interval = 0;
        while interval * GAM_INTERVAL_EXTENTS < total {
            let in_interval = (total - interval * GAM_INTERVAL_EXTENTS).min(GAM_INTERVAL_EXTENTS);
            let gam = self.latch(pool, alloc::map_page(interval, MapKind::Gam), LatchMode::Sh)?;
            free += gam.read(|buf| alloc::bitmap_count(buf, in_interval));
            interval += 1;
        }
        Ok(free)
    }

    /// Formats the allocation pages of `[from_page, to_page)` and sets the map bits of its
    /// extents, as for a new file (module header). Returns the free extents it adds; the caller
    /// publishes them with the new size. `from_page` is a whole-extent boundary.
    fn lay_out(&self, pool: &BufferPool, from_page: u32, to_page: u32) -> SqlResult<u32> {
        assert_eq!(from_page % PAGES_PER_EXTENT, 0, "ranges start on an extent");
        let fixed = alloc::fixed_pages_in(from_page, to_page, self.is_primary);
        for page_no in &fixed {
            self.format_fixed_page(pool, *page_no)?;
        }
        let layout = RangeLayout {
            system_extents: fixed.iter().map(|p| extent_of_page(*p)).collect(),
            fixed,
        };
        for extent in &layout.system_extents {
            self.make_system_extent(pool, *extent, &layout.fixed)?;
        }
        let (first, end) = (extent_of_page(from_page), extents_in_file(to_page));
        let mut added = 0;
        let mut interval_start = first;
        while interval_start < end {
            let interval = interval_start / GAM_INTERVAL_EXTENTS;
            let interval_end = ((interval + 1) * GAM_INTERVAL_EXTENTS).min(end);
            let sgam = self.latch(pool, alloc::map_page(interval, MapKind::Sgam), LatchMode::Up)?;
            let gam = self.latch(pool, alloc::map_page(interval, MapKind::Gam), LatchMode::Up)?;
            for extent in interval_start..interval_end {
                let bit = extent % GAM_INTERVAL_EXTENTS;
                let is_system = layout.system_extents.contains(&extent);
                gam.write(|buf| alloc::bitmap_set(buf, bit, !is_system))?;
                if !is_system {
                    sgam.write(|buf| alloc::bitmap_set(buf, bit, false))?;
                    added += 1;
                }
            }
            interval_start = interval_end;
        }
        Ok(added)
    }

    fn format_fixed_page(&self, pool: &BufferPool, page_no: u32) -> SqlResult<()> {
        let page_id = PageId::new(self.file_id, page_no);
        let kind = MapKind::ALL
            .into_iter()
            .find(|kind| alloc::map_page(page_no / GAM_INTERVAL_PAGES, *kind) == page_no);
        if kind.is_none() && (page_no == 0 || page_no == alloc::BOOT_PAGE) {
            return Ok(());
        }
        let guard = pool.new_page(self.key(page_no))?;
        guard.write(|buf| match kind {
            Some(kind) => alloc::format_map_page(buf, page_id, kind.page_type()),
            None => alloc::format_pfs_page(buf, page_id),
        })?;
        Ok(())
    }

    /// A system extent: a mixed extent whose fixed pages are allocated and full, and whose other
    /// pages are free single pages (SGAM 1 while it has one).
    fn make_system_extent(&self, pool: &BufferPool, extent: u32, fixed: &[u32]) -> SqlResult<()> {
        let first = first_page_of_extent(extent);
        let pfs_page = self.latch(pool, alloc::pfs_page_for(first), LatchMode::Up)?;
        let mut has_free_page = false;
        for page_no in first..first + PAGES_PER_EXTENT {
            let byte = if fixed.contains(&page_no) {
                pfs::ALLOCATED | pfs::MIXED | pfs::PCT_100
            } else {
                has_free_page = true;
                pfs::MIXED
            };
            pfs_page.write(|buf| alloc::pfs_set(buf, page_no, byte))?;
        }
        self.set_map_bit(pool, MapKind::Sgam, extent, has_free_page)?;
        Ok(())
    }

    /// Sets one GAM-type map bit under an UP latch on its map page.
    fn set_map_bit(
        &self,
        pool: &BufferPool,
        kind: MapKind,
        extent: u32,
        value: bool,
    ) -> SqlResult<()> {
        let page =
            self.latch(pool, alloc::map_page(extent / GAM_INTERVAL_EXTENTS, kind), LatchMode::Up)?;
        let bit = extent % GAM_INTERVAL_EXTENTS;
        page.write_within(&[alloc::bitmap_byte_range(bit)], |buf| {
            alloc::bitmap_set(buf, bit, value)
        })?;
        Ok(())
    }

    /// One map bit, read under an SH latch.
    pub fn map_bit(&self, pool: &BufferPool, kind: MapKind, extent: u32) -> SqlResult<bool> {
        let page =
            self.latch(pool, alloc::map_page(extent / GAM_INTERVAL_EXTENTS, kind), LatchMode::Sh)?;
        Ok(page.read(|buf| alloc::bitmap_get(buf, extent % GAM_INTERVAL_EXTENTS)))
    }

    /// One page's PFS byte, read under an SH latch.
    pub fn pfs(&self, pool: &BufferPool, page_no: u32) -> SqlResult<u8> {
        let page = self.latch(pool, alloc::pfs_page_for(page_no), LatchMode::Sh)?;
        Ok(page.read(|buf| alloc::pfs_get(buf, page_no)))
    }

    /// Takes the lowest free extent at or after the hint, else below it (GAM 1 -> 0, under an UP
    /// latch on the GAM page), and returns its first page. None if no extent is free now.
    pub fn take_extent(&self, pool: &BufferPool) -> SqlResult<Option<u32>> {
        let total = extents_in_file(self.size_pages());
        let hint = self.gam_hint.load(Ordering::Relaxed).min(total);
        for (from, to) in [(hint, total), (0, hint)] {
            if let Some(extent) = self.take_extent_between(pool, from, to)? {
                self.gam_hint.store(extent + 1, Ordering::Relaxed);
                return Ok(Some(first_page_of_extent(extent)));
            }
        }
        Ok(None)
    }

    fn take_extent_between(&self, pool: &BufferPool, from: u32, to: u32) -> SqlResult<Option<u32>> {
        let mut extent = from;
        while extent < to && self.free_extents() > 0 {
            let interval = extent / GAM_INTERVAL_EXTENTS;
            let base = interval * GAM_INTERVAL_EXTENTS;
            let interval_end = (base + GAM_INTERVAL_EXTENTS).min(to);
            let gam = self.latch(pool, alloc::map_page(interval, MapKind::Gam), LatchMode::Up)?;
            // Only this session changes the GAM page under its UP latch: the bit found stays set.
            let found =
                gam.read(|buf| alloc::bitmap_find_set(buf, extent - base, interval_end - base));
            if let Some(bit) = found {
                let clear = |buf: &mut PageBuf| alloc::bitmap_set(buf, bit, false);
                gam.write_within(&[alloc::bitmap_byte_range(bit)], clear)?;
            }
            if let Some(found) = found.map(|bit| base + bit) {
                self.free_extents.fetch_sub(1, Ordering::AcqRel);
                return Ok(Some(found));
            }
            extent = interval_end;
        }
        Ok(None)
    }

    /// Returns an extent to the free pool: PFS allocated, mixed and IAM bits of its pages cleared
    /// (fullness kept, as SQL Server keeps it), then SGAM 0, then GAM 1 (latch order).
    pub fn release_extent(&self, pool: &BufferPool, extent: u32) -> SqlResult<()> {
        let first = first_page_of_extent(extent);
        let (interval, bit) = (extent / GAM_INTERVAL_EXTENTS, extent % GAM_INTERVAL_EXTENTS);
        let pfs_page = self.latch(pool, alloc::pfs_page_for(first), LatchMode::Up)?;
        pfs_page.write_within(&[alloc::pfs_extent_range(first)], |buf| {
            for page_no in first..first + PAGES_PER_EXTENT {
                let byte = alloc::pfs_get(buf, page_no) & !(pfs::ALLOCATED | pfs::MIXED | pfs::IAM);
                alloc::pfs_set(buf, page_no, byte);
            }
        })?;
        self.set_map_bit(pool, MapKind::Sgam, extent, false)?;
        let gam = self.latch(pool, alloc::map_page(interval, MapKind::Gam), LatchMode::Up)?;
        gam.write_within(&[alloc::bitmap_byte_range(bit)], |buf| {
            assert!(
                !alloc::bitmap_get(buf, bit),
                "alloc invariant 1: extent {extent} is already free"
            );
            alloc::bitmap_set(buf, bit, true);
        })?;
        self.free_extents.fetch_add(1, Ordering::AcqRel);
        self.gam_hint.fetch_min(extent, Ordering::Relaxed);
        self.frees.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Turns a just-taken extent into a mixed extent whose pages are all free, and takes its
    /// first page with `extra_bits` (PFS, then SGAM).
    pub fn make_mixed_and_take_first(
        &self,
        pool: &BufferPool,
        extent: u32,
        extra_bits: u8,
    ) -> SqlResult<u32> {
        let first = first_page_of_extent(extent);
        let pfs_page = self.latch(pool, alloc::pfs_page_for(first), LatchMode::Up)?;
        pfs_page.write_within(&[alloc::pfs_extent_range(first)], |buf| {
            for page_no in first..first + PAGES_PER_EXTENT {
                alloc::pfs_set(buf, page_no, pfs::MIXED);
            }
            alloc::pfs_set(buf, first, pfs::MIXED | pfs::ALLOCATED | extra_bits);
        })?;
        self.set_map_bit(pool, MapKind::Sgam, extent, true)?;
        Ok(first)
    }

    /// Takes a free single page from a mixed extent of this file (SGAM 1), if any.
    pub fn take_mixed_page(&self, pool: &BufferPool, extra_bits: u8) -> SqlResult<Option<u32>> {
        let total = extents_in_file(self.size_pages());
        let mut interval = 0;
        while interval * GAM_INTERVAL_EXTENTS < total {
            let base = interval * GAM_INTERVAL_EXTENTS;
            let end = (total - base).min(GAM_INTERVAL_EXTENTS);
            let candidates: Vec<u32> = {
                let sgam =
                    self.latch(pool, alloc::map_page(interval, MapKind::Sgam), LatchMode::Sh)?;
                sgam.read(|buf| {
                    let mut found = Vec::new();
                    let mut from = 0;
                    while let Some(bit) = alloc::bitmap_find_set(buf, from, end) {
                        found.push(base + bit);
                        from = bit + 1;
                    }
                    found
                })
            };
            for extent in candidates {
                if let Some(page_no) = self.take_page_in_extent(pool, extent, extra_bits)? {
                    return Ok(Some(page_no));
                }
            }
            interval += 1;
        }
        Ok(None)
    }

    /// Takes a free page of an extent (PFS UP), marking it allocated with `extra_bits`; for a
    /// mixed extent whose last free page it was, clears the SGAM bit (nested, latch order).
    /// Deviation: SQL Server 2019 and later update PFS pages under an SH latch in every
    /// database ("concurrent PFS updates"); extentdb keeps the UP latch of earlier versions,
    /// whose PFS contention the seeds measure (docs/deviations.md).
    /// A fixed page (PFS, GAM, boot page...) is never taken, even when a corrupt PFS byte calls
    /// it free: formatting it as a data page would destroy an allocation map (and the session
    /// would then wait for its own latch on it). DBCC CHECKALLOC reports the byte.
    pub fn take_page_in_extent(
        &self,
        pool: &BufferPool,
        extent: u32,
        extra_bits: u8,
    ) -> SqlResult<Option<u32>> {
        let first = first_page_of_extent(extent);
        let pfs_page = self.latch(pool, alloc::pfs_page_for(first), LatchMode::Up)?;
        let taken = pfs_page.write_within(&[alloc::pfs_extent_range(first)], |buf| {
            let page_no = (first..first + PAGES_PER_EXTENT).find(|p| {
                alloc::pfs_get(buf, *p) & pfs::ALLOCATED == 0
                    && !alloc::is_fixed_page(*p, self.is_primary)
            })?;
            let before = alloc::pfs_get(buf, page_no);
            alloc::pfs_set(buf, page_no, (before & pfs::MIXED) | pfs::ALLOCATED | extra_bits);
            let now_full = (first..first + PAGES_PER_EXTENT)
                .all(|p| alloc::pfs_get(buf, p) & pfs::ALLOCATED != 0);
            Some((page_no, before & pfs::MIXED != 0 && now_full))
        })?;
        let Some((page_no, mixed_now_full)) = taken else { return Ok(None) };
        pool.hold_pfs_latch();
        if mixed_now_full {
            self.set_map_bit(pool, MapKind::Sgam, extent, false)?;
        }
        Ok(Some(page_no))
    }

    /// Clears a page's PFS allocated bit (and IAM bit); for a mixed extent sets its SGAM bit.
    /// Returns true when its whole extent is now unused. A page whose PFS byte says it is not
    /// allocated (a corrupt PFS page: its owner still uses it) is error 8948, nothing changed.
    pub fn mark_page_free(&self, pool: &BufferPool, page_no: u32) -> SqlResult<bool> {
        let extent = extent_of_page(page_no);
        let first = first_page_of_extent(extent);
        let pfs_page_no = alloc::pfs_page_for(page_no);
        let pfs_page = self.latch(pool, pfs_page_no, LatchMode::Up)?;
        let status = pfs_page.read(|buf| alloc::pfs_get(buf, page_no));
        if status & pfs::ALLOCATED == 0 {
            let page = PageId::new(self.file_id, page_no);
            return Err(SqlError::pfs_wrong_type(
                page,
                PageId::new(self.file_id, pfs_page_no),
                status,
            ));
        }
        let (was_mixed, all_free) =
            pfs_page.write_within(&[alloc::pfs_extent_range(first)], |buf| {
                let before = alloc::pfs_get(buf, page_no);
                alloc::pfs_set(buf, page_no, before & !(pfs::ALLOCATED | pfs::IAM));
                let all_free = (first..first + PAGES_PER_EXTENT)
                    .all(|p| alloc::pfs_get(buf, p) & pfs::ALLOCATED == 0);
                (before & pfs::MIXED != 0, all_free)
            })?;
        if was_mixed {
            self.set_map_bit(pool, MapKind::Sgam, extent, true)?;
        }
        self.frees.fetch_add(1, Ordering::AcqRel);
        Ok(all_free)
    }

    /// How many extents and pages the file has freed since it was opened.
    pub fn frees(&self) -> u64 {
        self.frees.load(Ordering::Acquire)
    }

    /// The end, in pages, of the file's last extent in use, but at least `floor_pages`: what
    /// a shrink that moves no page can cut the file to. An extent is not in use when the GAM
    /// has it free, or when it holds fixed pages (a PFS, GAM, ... page) and no other page of it
    /// is allocated. Callers hold the database write lock: nothing allocates meanwhile.
    pub fn end_of_last_used_extent(&self, pool: &BufferPool, floor_pages: u32) -> SqlResult<u32> {
        let size = self.size_pages();
        let fixed: BTreeSet<u32> =
            alloc::fixed_pages_in(0, size, self.is_primary).into_iter().collect();
        let floor_extents = floor_pages.div_ceil(PAGES_PER_EXTENT);
        let mut end = extents_in_file(size);
        while end > floor_extents && !self.extent_in_use(pool, end - 1, &fixed)? {
            end -= 1;
        }
        Ok(end * PAGES_PER_EXTENT)
    }

    fn extent_in_use(
        &self,
        pool: &BufferPool,
        extent: u32,
        fixed: &BTreeSet<u32>,
    ) -> SqlResult<bool> {
        let first = first_page_of_extent(extent);
        let pages = first..first + PAGES_PER_EXTENT;
        if !pages.clone().any(|p| fixed.contains(&p)) {
            return Ok(!self.map_bit(pool, MapKind::Gam, extent)?);
        }
        for page_no in pages.filter(|p| !fixed.contains(p)) {
            if self.pfs(pool, page_no)? & pfs::ALLOCATED != 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Cuts the file's allocation state to `new_size_pages` (whole extents, none in use past
    /// it): returns the free extents that went, for [`FileAlloc::undo_shrink`]. Bits past the
    /// new size stay in the map pages and are never read (invariant 2); a growth lays the range
    /// out again.
    pub fn shrink_to(&self, pool: &BufferPool, new_size_pages: u32) -> SqlResult<u32> {
        let old_size = self.size_pages();
        assert!(new_size_pages < old_size && new_size_pages.is_multiple_of(PAGES_PER_EXTENT));
        let fixed: BTreeSet<u32> =
            alloc::fixed_pages_in(0, old_size, self.is_primary).into_iter().collect();
        let mut removed = 0;
        for extent in extents_in_file(new_size_pages)..extents_in_file(old_size) {
            let first = first_page_of_extent(extent);
            let is_system = (first..first + PAGES_PER_EXTENT).any(|p| fixed.contains(&p));
            if !is_system && self.map_bit(pool, MapKind::Gam, extent)? {
                removed += 1;
            }
        }
        self.size_pages.store(new_size_pages, Ordering::Release);
        self.free_extents.fetch_sub(removed, Ordering::AcqRel);
        Ok(removed)
    }

    /// Puts back what [`FileAlloc::shrink_to`] cut (its commit point failed).
    pub fn undo_shrink(&self, old_size_pages: u32, removed_free_extents: u32) {
        self.size_pages.store(old_size_pages, Ordering::Release);
        self.free_extents.fetch_add(removed_free_extents, Ordering::AcqRel);
    }

    /// The first page of an extent whose PFS allocated bit is clear.
    pub fn free_page_in_extent(&self, pool: &BufferPool, extent: u32) -> SqlResult<Option<u32>> {
        let first = first_page_of_extent(extent);
        let pfs_page = self.latch(pool, alloc::pfs_page_for(first), LatchMode::Sh)?;
        Ok(pfs_page.read(|buf| {
            (first..first + PAGES_PER_EXTENT)
                .find(|p| alloc::pfs_get(buf, *p) & pfs::ALLOCATED == 0)
        }))
    }

    /// True when every allocated page of the file is a fixed system page: the file holds no data.
    pub fn is_empty_of_data(&self, pool: &BufferPool) -> SqlResult<bool> {
        let size = self.size_pages();
        let fixed: BTreeSet<u32> =
            alloc::fixed_pages_in(0, size, self.is_primary).into_iter().collect();
        let system_extents: BTreeSet<u32> = fixed.iter().map(|p| extent_of_page(*p)).collect();
        for extent in 0..extents_in_file(size) {
            if system_extents.contains(&extent) {
                let first = first_page_of_extent(extent);
                for page_no in first..first + PAGES_PER_EXTENT {
                    if !fixed.contains(&page_no) && self.pfs(pool, page_no)? & pfs::ALLOCATED != 0 {
                        return Ok(false);
                    }
                }
            } else if !self.map_bit(pool, MapKind::Gam, extent)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Lays out `[size, new_size_pages)` in the buffer pool. The new extents become visible only
    /// when [`FileAlloc::publish_growth`] runs, after the growth is durable.
    pub fn prepare_growth(&self, pool: &BufferPool, new_size_pages: u32) -> SqlResult<u32> {
        let old_size = self.size_pages();
        assert!(new_size_pages > old_size, "growth only grows");
        assert_eq!(old_size % PAGES_PER_EXTENT, 0, "file sizes are whole extents");
        self.lay_out(pool, old_size, new_size_pages)
    }

    /// The allocation pages of the file up to `size_pages`: what a growth must make durable
    /// before its header commits it.
    pub fn allocation_pages(&self, size_pages: u32) -> Vec<PageId> {
        alloc::fixed_pages_in(0, size_pages, self.is_primary)
            .into_iter()
            .filter(|p| *p != 0 && !(self.is_primary && *p == alloc::BOOT_PAGE))
            .map(|p| PageId::new(self.file_id, p))
            .collect()
    }

    pub fn publish_growth(&self, new_size_pages: u32, added_free_extents: u32) {
        self.size_pages.store(new_size_pages, Ordering::Release);
        self.free_extents.fetch_add(added_free_extents, Ordering::AcqRel);
    }

    /// Undoes a prepared growth: drops the new range's cached pages. Bits the growth set past the
    /// size stay in the GAM/SGAM pages; they are never read (file invariant 2).
    pub fn abandon_growth(&self, pool: &BufferPool) {
        pool.discard(self.database_id, Some(self.file_id), self.size_pages());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pool with no files registered: these tests never read from or write to disk.
    pub(crate) fn test_pool() -> std::sync::Arc<BufferPool> {
        BufferPool::new(4096, crate::buffer::PoolStats::default())
    }

    #[test]
    fn new_files_have_the_seeds_free_extent_counts() {
        let pool = test_pool();
        let five_mb = FileAlloc::new_file(&pool, 3, 5, false, 640).unwrap();
        assert_eq!(five_mb.free_extents(), 79);
        let big = FileAlloc::new_file(&pool, 4, 5, false, 32_000).unwrap();
        assert_eq!(big.free_extents(), 3996);
        assert_eq!(big.count_free_extents(&pool).unwrap(), 3996);
        let primary = FileAlloc::new_file(&pool, 1, 5, true, 640).unwrap();
        assert_eq!(primary.free_extents(), 78);
        assert_eq!(primary.pfs(&pool, 1).unwrap(), 0x64);
        assert_eq!(primary.pfs(&pool, 4).unwrap(), 0x20);
        assert!(primary.map_bit(&pool, MapKind::Sgam, 0).unwrap());
    }

    #[test]
    fn extents_are_taken_lowest_first_and_released() {
        let pool = test_pool();
        let state = FileAlloc::new_file(&pool, 3, 5, false, 640).unwrap();
        assert_eq!(state.take_extent(&pool).unwrap(), Some(8));
        assert_eq!(state.take_extent(&pool).unwrap(), Some(16));
        state.release_extent(&pool, 1).unwrap();
        assert_eq!(state.free_extents(), 78);
        assert_eq!(state.count_free_extents(&pool).unwrap(), 78);
        assert_eq!(state.take_extent(&pool).unwrap(), Some(8));
        assert!(!state.is_empty_of_data(&pool).unwrap());
    }

    #[test]
    fn growth_lays_out_new_pfs_pages() {
        let pool = test_pool();
        let state = FileAlloc::new_file(&pool, 3, 5, false, 8000).unwrap();
        let before = state.free_extents();
        let added = state.prepare_growth(&pool, 8200).unwrap();
        assert_eq!(added, 25 - 1, "25 new extents, one holds PFS page 8088");
        assert_eq!(state.free_extents(), before, "nothing visible before the growth is published");
        state.publish_growth(8200, added);
        assert_eq!(state.pfs(&pool, 8088).unwrap(), 0x64);
        assert_eq!(state.count_free_extents(&pool).unwrap(), before + added);
    }

    #[test]
    fn header_round_trips() {
        let header = FileHeader {
            file_id: 3,
            file_type: FileType::Rows,
            is_primary: false,
            data_space_id: 2,
            size_pages: 640,
            max_size_pages: -1,
            growth: 8192,
            is_percent_growth: false,
            database_id: 5,
            binding_id: 0xDEAD_BEEF,
            created_ms: 1_475_581_113_830,
            logical_name: "SecondFile".into(),
        };
        let buf = header.encode();
        assert_eq!(page::verify(&buf, PageId::new(3, 0)), Ok(()));
        assert_eq!(FileHeader::decode(&buf), Some(header));
    }
}
