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
use crate::error::{SqlError, SqlResult};
use crate::io::IoFile;
use crate::page::{self, PageBuf, PageHeader, PageType};
use crate::units::{
    GAM_INTERVAL_EXTENTS, GAM_INTERVAL_PAGES, PAGE_SIZE_U64, PAGES_PER_EXTENT, PageId,
    extent_of_page, extents_in_file, first_page_of_extent,
};
use std::collections::{BTreeSet, HashMap};

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
        let mut header = PageHeader::new(PageType::FileHeader, PageId::new(self.file_id, 0));
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
    let offset = u64::from(page_id.page_no) * PAGE_SIZE_U64;
    file.read_at(&mut buf[..], offset)
        .map_err(|err| SqlError::os_io_error(&err, false, offset, path))?;
    page::verify(&buf, page_id)
        .map_err(|bad| SqlError::logical_io_error(&bad.detail(), page_id, database_id, path))?;
    Ok(buf)
}

/// Seals and writes one page.
pub fn write_page(file: &dyn IoFile, buf: &mut PageBuf, page_no: u32, path: &str) -> SqlResult<()> {
    page::seal(buf);
    let offset = u64::from(page_no) * PAGE_SIZE_U64;
    file.write_at(&buf[..], offset).map_err(|err| SqlError::os_io_error(&err, true, offset, path))
}

/// The allocation state of one data file: its allocation pages, cached and written back on
/// [`FileAlloc::flush`]. Deviation until the buffer pool exists: these pages are cached here
/// rather than in a latched buffer pool, and are durable only after a flush.
pub struct FileAlloc {
    pub file_id: u16,
    pub database_id: u16,
    pub path: String,
    pub is_primary: bool,
    size_pages: u32,
    free_extents: u32,
    /// The lowest extent that may be free.
    gam_hint: u32,
    pages: HashMap<u32, Box<PageBuf>>,
    dirty: BTreeSet<u32>,
}

impl FileAlloc {
    /// The state of a file that is being created with `size_pages` pages: everything formatted
    /// in memory, all dirty.
    pub fn new_file(
        file_id: u16,
        database_id: u16,
        path: String,
        is_primary: bool,
        size_pages: u32,
    ) -> FileAlloc {
        let mut state = FileAlloc {
            file_id,
            database_id,
            path,
            is_primary,
            size_pages: 0,
            free_extents: 0,
            gam_hint: 0,
            pages: HashMap::new(),
            dirty: BTreeSet::new(),
        };
        state.lay_out_range(0, size_pages);
        state
    }

    /// Loads the state of an existing file from its allocation pages.
    pub fn open(
        file: &dyn IoFile,
        header: &FileHeader,
        database_id: u16,
        path: String,
    ) -> SqlResult<FileAlloc> {
        let mut state = FileAlloc {
            file_id: header.file_id,
            database_id,
            path,
            is_primary: header.is_primary,
            size_pages: header.size_pages,
            free_extents: 0,
            gam_hint: 0,
            pages: HashMap::new(),
            dirty: BTreeSet::new(),
        };
        for page_no in alloc::fixed_pages_in(0, header.size_pages, header.is_primary) {
            if page_no == 0 || page_no == alloc::BOOT_PAGE && header.is_primary {
                continue;
            }
            let page_id = PageId::new(header.file_id, page_no);
            let buf = read_page(file, page_id, database_id, &state.path)?;
            state.pages.insert(page_no, buf);
        }
        state.free_extents = state.count_free_extents();
        Ok(state)
    }

    pub fn size_pages(&self) -> u32 {
        self.size_pages
    }

    pub fn free_extents(&self) -> u32 {
        self.free_extents
    }

    /// Free extents counted from the GAM bits (invariant 1 recomputed).
    pub fn count_free_extents(&self) -> u32 {
        let total = extents_in_file(self.size_pages);
        let mut free = 0;
        let mut interval = 0;
        while interval * GAM_INTERVAL_EXTENTS < total {
            let in_interval = (total - interval * GAM_INTERVAL_EXTENTS).min(GAM_INTERVAL_EXTENTS);
            let gam = &self.pages[&alloc::map_page(interval, MapKind::Gam)];
            free += alloc::bitmap_count(gam, in_interval);
            interval += 1;
        }
        free
    }

    /// Formats the allocation pages of `[from_page, to_page)` and sets the map bits of its
    /// extents, as for a new file (module header). `from_page` is a whole-extent boundary.
    fn lay_out_range(&mut self, from_page: u32, to_page: u32) {
        assert_eq!(from_page % PAGES_PER_EXTENT, 0, "ranges start on an extent");
        let fixed = alloc::fixed_pages_in(from_page, to_page, self.is_primary);
        for page_no in &fixed {
            self.format_fixed_page(*page_no);
        }
        self.size_pages = to_page;
        let system_extents: BTreeSet<u32> = fixed.iter().map(|p| extent_of_page(*p)).collect();
        for extent in extent_of_page(from_page)..extents_in_file(to_page) {
            let is_system = system_extents.contains(&extent);
            self.set_map_bit(MapKind::Gam, extent, !is_system);
            self.set_map_bit(MapKind::Sgam, extent, false);
            if is_system {
                self.make_system_extent(extent, &fixed);
            } else {
                self.free_extents += 1;
            }
        }
    }

    fn format_fixed_page(&mut self, page_no: u32) {
        let page_id = PageId::new(self.file_id, page_no);
        let mut buf = page::new_page_buf();
        let kind = MapKind::ALL
            .into_iter()
            .find(|kind| alloc::map_page(page_no / GAM_INTERVAL_PAGES, *kind) == page_no);
        match kind {
            Some(kind) => alloc::format_map_page(&mut buf, page_id, kind.page_type()),
            None if page_no == 0 || page_no == alloc::BOOT_PAGE => return,
            None => alloc::format_pfs_page(&mut buf, page_id),
        }
        self.pages.insert(page_no, buf);
        self.dirty.insert(page_no);
    }

    /// A system extent: a mixed extent whose fixed pages are allocated and full.
    fn make_system_extent(&mut self, extent: u32, fixed: &[u32]) {
        let first = first_page_of_extent(extent);
        let mut has_free_page = false;
        for page_no in first..first + PAGES_PER_EXTENT {
            let byte = if fixed.contains(&page_no) {
                pfs::ALLOCATED | pfs::MIXED | pfs::PCT_100
            } else {
                has_free_page |= page_no < self.size_pages;
                pfs::MIXED
            };
            self.set_pfs(page_no, byte);
        }
        self.set_map_bit(MapKind::Sgam, extent, has_free_page);
    }

    fn map_page_mut(&mut self, kind: MapKind, extent: u32) -> &mut PageBuf {
        let page_no = alloc::map_page(extent / GAM_INTERVAL_EXTENTS, kind);
        self.dirty.insert(page_no);
        self.pages
            .get_mut(&page_no)
            .expect("map pages of every interval inside the file are loaded")
    }

    pub fn map_bit(&self, kind: MapKind, extent: u32) -> bool {
        let page_no = alloc::map_page(extent / GAM_INTERVAL_EXTENTS, kind);
        alloc::bitmap_get(&self.pages[&page_no], extent % GAM_INTERVAL_EXTENTS)
    }

    fn set_map_bit(&mut self, kind: MapKind, extent: u32, value: bool) {
        let buf = self.map_page_mut(kind, extent);
        alloc::bitmap_set(buf, extent % GAM_INTERVAL_EXTENTS, value);
    }

    pub fn pfs(&self, page_no: u32) -> u8 {
        alloc::pfs_get(&self.pages[&alloc::pfs_page_for(page_no)], page_no)
    }

    pub fn set_pfs(&mut self, page_no: u32, value: u8) {
        let pfs_page = alloc::pfs_page_for(page_no);
        self.dirty.insert(pfs_page);
        let buf = self.pages.get_mut(&pfs_page).expect("PFS pages inside the file are loaded");
        alloc::pfs_set(buf, page_no, value);
    }

    /// Takes the lowest free extent (GAM 1 -> 0) and returns its first page.
    pub fn take_extent(&mut self) -> Option<u32> {
        if self.free_extents == 0 {
            return None;
        }
        let total = extents_in_file(self.size_pages);
        let mut extent = self.gam_hint;
        while extent < total {
            let interval = extent / GAM_INTERVAL_EXTENTS;
            let interval_end = ((interval + 1) * GAM_INTERVAL_EXTENTS).min(total);
            let gam = &self.pages[&alloc::map_page(interval, MapKind::Gam)];
            let base = interval * GAM_INTERVAL_EXTENTS;
            if let Some(bit) = alloc::bitmap_find_set(gam, extent - base, interval_end - base) {
                let found = base + bit;
                self.set_map_bit(MapKind::Gam, found, false);
                self.free_extents -= 1;
                self.gam_hint = found + 1;
                return Some(first_page_of_extent(found));
            }
            extent = interval_end;
        }
        unreachable!("invariant 1: free_extents > 0 but no GAM bit is set")
    }

    /// Returns an extent to the free pool: GAM 1, SGAM 0, and the PFS allocated and mixed bits
    /// of its pages cleared (fullness bits are kept, as SQL Server keeps them).
    pub fn release_extent(&mut self, extent: u32) {
        assert!(!self.map_bit(MapKind::Gam, extent), "alloc invariant 1: extent already free");
        let first = first_page_of_extent(extent);
        for page_no in first..first + PAGES_PER_EXTENT {
            let byte = self.pfs(page_no) & !(pfs::ALLOCATED | pfs::MIXED | pfs::IAM);
            self.set_pfs(page_no, byte);
        }
        self.set_map_bit(MapKind::Sgam, extent, false);
        self.set_map_bit(MapKind::Gam, extent, true);
        self.free_extents += 1;
        self.gam_hint = self.gam_hint.min(extent);
    }

    /// Turns a just-taken extent into a mixed extent with every page free.
    pub fn make_mixed(&mut self, extent: u32) {
        let first = first_page_of_extent(extent);
        for page_no in first..first + PAGES_PER_EXTENT {
            self.set_pfs(page_no, pfs::MIXED);
        }
        self.set_map_bit(MapKind::Sgam, extent, true);
    }

    /// A free page in a mixed extent of this file (SGAM 1), if any.
    pub fn find_mixed_free_page(&self) -> Option<u32> {
        let total = extents_in_file(self.size_pages);
        let mut interval = 0;
        while interval * GAM_INTERVAL_EXTENTS < total {
            let base = interval * GAM_INTERVAL_EXTENTS;
            let end = (total - base).min(GAM_INTERVAL_EXTENTS);
            let sgam = &self.pages[&alloc::map_page(interval, MapKind::Sgam)];
            let mut from = 0;
            while let Some(bit) = alloc::bitmap_find_set(sgam, from, end) {
                if let Some(page_no) = self.free_page_in_extent(base + bit) {
                    return Some(page_no);
                }
                from = bit + 1;
            }
            interval += 1;
        }
        None
    }

    /// The first page of an extent whose PFS allocated bit is clear.
    pub fn free_page_in_extent(&self, extent: u32) -> Option<u32> {
        let first = first_page_of_extent(extent);
        (first..first + PAGES_PER_EXTENT)
            .find(|p| *p < self.size_pages && self.pfs(*p) & pfs::ALLOCATED == 0)
    }

    /// Marks a page allocated in PFS; for a page of a mixed extent, clears the extent's SGAM bit
    /// when that was its last free page.
    pub fn mark_page_allocated(&mut self, page_no: u32, extra_bits: u8) {
        let before = self.pfs(page_no);
        assert_eq!(before & pfs::ALLOCATED, 0, "page allocated twice");
        self.set_pfs(page_no, (before & pfs::MIXED) | pfs::ALLOCATED | extra_bits);
        let extent = extent_of_page(page_no);
        if before & pfs::MIXED != 0 && self.free_page_in_extent(extent).is_none() {
            self.set_map_bit(MapKind::Sgam, extent, false);
        }
    }

    /// Clears a page's PFS allocated bit. Returns true when its whole extent is now unused.
    pub fn mark_page_free(&mut self, page_no: u32) -> bool {
        let before = self.pfs(page_no);
        assert_ne!(before & pfs::ALLOCATED, 0, "freeing a page that is not allocated");
        self.set_pfs(page_no, before & !(pfs::ALLOCATED | pfs::IAM));
        let extent = extent_of_page(page_no);
        if before & pfs::MIXED != 0 {
            self.set_map_bit(MapKind::Sgam, extent, true);
        }
        let first = first_page_of_extent(extent);
        (first..first + PAGES_PER_EXTENT).all(|p| self.pfs(p) & pfs::ALLOCATED == 0)
    }

    /// True when every allocated page of the file is a fixed system page: the file holds no data.
    pub fn is_empty_of_data(&self) -> bool {
        let fixed: BTreeSet<u32> =
            alloc::fixed_pages_in(0, self.size_pages, self.is_primary).into_iter().collect();
        let system_extents: BTreeSet<u32> = fixed.iter().map(|p| extent_of_page(*p)).collect();
        for extent in 0..extents_in_file(self.size_pages) {
            if system_extents.contains(&extent) {
                let first = first_page_of_extent(extent);
                let used = (first..first + PAGES_PER_EXTENT).any(|p| {
                    !fixed.contains(&p) && p < self.size_pages && self.pfs(p) & pfs::ALLOCATED != 0
                });
                if used {
                    return false;
                }
            } else if !self.map_bit(MapKind::Gam, extent) {
                return false;
            }
        }
        true
    }

    /// Extends the file's maps to `new_size_pages` (in memory; see [`FileAlloc::flush`]).
    pub fn grow_to(&mut self, new_size_pages: u32) {
        assert!(new_size_pages > self.size_pages, "growth only grows");
        let old_size = self.size_pages;
        let partial_tail = old_size % PAGES_PER_EXTENT;
        assert_eq!(partial_tail, 0, "file sizes are whole extents");
        self.lay_out_range(old_size, new_size_pages);
    }

    /// Undoes an in-memory growth that could not be made durable.
    pub fn shrink_back(&mut self, old_size_pages: u32) {
        self.pages.retain(|page_no, _| *page_no < old_size_pages);
        self.dirty.retain(|page_no| *page_no < old_size_pages);
        self.size_pages = old_size_pages;
        self.free_extents = self.count_free_extents();
        self.gam_hint = 0;
    }

    /// Loads a page that is not a fixed allocation page (an IAM page) into the cache.
    pub fn load_page(&mut self, file: &dyn IoFile, page_no: u32) -> SqlResult<()> {
        if !self.pages.contains_key(&page_no) {
            let page_id = PageId::new(self.file_id, page_no);
            let buf = read_page(file, page_id, self.database_id, &self.path)?;
            self.pages.insert(page_no, buf);
        }
        Ok(())
    }

    /// A cached page (an allocation or IAM page).
    pub fn page(&self, page_no: u32) -> &PageBuf {
        &self.pages[&page_no]
    }

    pub fn page_mut(&mut self, page_no: u32) -> &mut PageBuf {
        self.dirty.insert(page_no);
        self.pages.get_mut(&page_no).expect("page was loaded")
    }

    /// Adds a newly formatted page (an IAM page) to the cache.
    pub fn insert_page(&mut self, page_no: u32, buf: Box<PageBuf>) {
        self.pages.insert(page_no, buf);
        self.dirty.insert(page_no);
    }

    /// Drops a page from the cache (an IAM page that was freed).
    pub fn forget_page(&mut self, page_no: u32) {
        self.pages.remove(&page_no);
        self.dirty.remove(&page_no);
    }

    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Writes every dirty page (sealed) and makes them durable. On failure the pages stay dirty.
    pub fn flush(&mut self, file: &dyn IoFile) -> SqlResult<()> {
        for page_no in self.dirty.iter().copied().collect::<Vec<_>>() {
            let buf = self.pages.get_mut(&page_no).expect("dirty pages are cached");
            write_page(file, buf, page_no, &self.path)?;
            self.dirty.remove(&page_no);
        }
        file.sync_data().map_err(|err| SqlError::os_io_error(&err, true, 0, &self.path))
    }

    /// Marks every cached page dirty again (after a failed flush whose writes may be lost).
    pub fn mark_all_dirty(&mut self) {
        self.dirty = self.pages.keys().copied().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_files_have_the_seeds_free_extent_counts() {
        let five_mb = FileAlloc::new_file(3, 5, "f".into(), false, 640);
        assert_eq!(five_mb.free_extents(), 79);
        let big = FileAlloc::new_file(4, 5, "f".into(), false, 32_000);
        assert_eq!(big.free_extents(), 3996);
        assert_eq!(big.count_free_extents(), 3996);
        let primary = FileAlloc::new_file(1, 5, "f".into(), true, 640);
        assert_eq!(primary.free_extents(), 78);
        assert_eq!(primary.pfs(1), 0x64);
        assert_eq!(primary.pfs(4), 0x20);
        assert!(primary.map_bit(MapKind::Sgam, 0));
    }

    #[test]
    fn extents_are_taken_lowest_first_and_released() {
        let mut state = FileAlloc::new_file(3, 5, "f".into(), false, 640);
        assert_eq!(state.take_extent(), Some(8));
        assert_eq!(state.take_extent(), Some(16));
        state.release_extent(1);
        assert_eq!(state.free_extents(), 78);
        assert_eq!(state.count_free_extents(), 78);
        assert_eq!(state.take_extent(), Some(8));
        assert!(!state.is_empty_of_data());
    }

    #[test]
    fn growth_lays_out_new_pfs_pages() {
        let mut state = FileAlloc::new_file(3, 5, "f".into(), false, 8000);
        let before = state.free_extents();
        state.grow_to(8200);
        assert_eq!(state.pfs(8088), 0x64);
        assert_eq!(state.free_extents(), before + 25 - 1);
        assert_eq!(state.count_free_extents(), state.free_extents());
        state.shrink_back(8000);
        assert_eq!(state.free_extents(), before);
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
