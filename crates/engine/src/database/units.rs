//! Allocation units and their IAM chains (reference §2.5–§2.6).
//!
//! An allocation unit owns uniform extents, recorded as bits in IAM pages (one IAM page per file
//! and GAM interval it uses, linked by m_nextPage/m_prevPage with increasing sequence numbers),
//! and, when MIXED_PAGE_ALLOCATION is ON, up to eight single pages from mixed extents, recorded
//! in the single-page slots of the first IAM page. IAM pages themselves are single pages from
//! mixed extents (PFS 0x70: IAM_PG MIXED_EXT ALLOCATED).
//!
//! Mixed pages: a free page of a mixed extent (SGAM 1) of the filegroup, else a new extent from
//! proportional fill turned into a mixed extent (GAM 1->0, SGAM 0->1).
//! Uniform pages: a free page (PFS) of one of the unit's extents, else a new extent.
//! Freeing the last used page of an extent gives the extent back (IAM bit 0, GAM 1).

use super::*;
use crate::alloc::{IamHeader, pfs};
use crate::page::{PageHeader, PageType};
use crate::units::{
    GAM_INTERVAL_EXTENTS, GAM_INTERVAL_PAGES, extent_of_page, first_page_of_extent,
};

/// Attempts at taking a uniform page before giving up (each attempt adds an extent).
const MAX_UNIFORM_ATTEMPTS: u32 = 1000;
/// Single-page slots in the first IAM page.
const SINGLE_PAGE_SLOTS: usize = 8;
/// The idInd part of allocation-unit ids extentdb hands out (as in SQL Server's examples).
const AU_ID_IND: u64 = 256;
/// Longest IAM chain followed when opening a database (a longer one is corruption).
const MAX_IAM_CHAIN: usize = 1 << 20;

#[derive(Clone, Debug)]
struct IamRef {
    page: PageId,
    file_id: u16,
    interval: u32,
}

impl AllocUnit {
    pub(super) fn iam_pages(&self) -> Vec<PageId> {
        self.iams.iter().map(|iam| iam.page).collect()
    }
}

pub(super) struct AllocUnit {
    au_id: u64,
    fg_id: u16,
    name: String,
    iams: Vec<IamRef>,
    extents: BTreeSet<PageId>,
    single_pages: Vec<PageId>,
    /// The allocation cache: the unit's current extents (at most as many as its filegroup has
    /// files), which allocations take pages from in turn.
    current: Vec<PageId>,
    /// Allocations made, to rotate over `current`.
    rotation: usize,
    /// A page was freed since the last full search for room.
    freed_since_scan: bool,
    /// Pages allocated at the leaf level (a heap's pages) and above it, since the database
    /// opened, for sys.dm_db_index_operational_stats ([`Database::allocate_page_at_level`]).
    page_allocations: [u64; 2],
}

/// What an allocation unit holds, for tests and (later) DBCC IND.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocUnitInfo {
    pub au_id: u64,
    pub name: String,
    pub fg_id: u16,
    pub iam_pages: Vec<PageId>,
    pub extents: Vec<PageId>,
    pub single_pages: Vec<PageId>,
}

/// One page an allocation unit owns, as sys.dm_db_database_page_allocations and DBCC IND
/// list them: an IAM page, a single page of a mixed extent, or a page of one of its uniform
/// extents (allocated or not, as PFS says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitPage {
    pub page: PageId,
    /// The IAM page that records it (None for an IAM page itself).
    pub iam_page: Option<PageId>,
    /// The first page of its extent.
    pub extent: PageId,
    pub is_iam: bool,
    pub is_mixed: bool,
    /// PFS's ALLOCATED bit.
    pub is_allocated: bool,
}

/// How the allocation maps see one page: DBCC PAGE's "Allocation Status".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationStatus {
    pub gam_page: PageId,
    /// The GAM bit is 0: the extent is allocated.
    pub gam_allocated: bool,
    pub sgam_page: PageId,
    /// The SGAM bit is 1: a mixed extent with a free page.
    pub sgam_allocated: bool,
    pub pfs_page: PageId,
    pub pfs_byte: u8,
    pub dcm_page: PageId,
    pub dcm_changed: bool,
    pub bcm_page: PageId,
    pub bcm_min_logged: bool,
}

fn missing_unit(au_id: u64) -> SqlError {
    SqlError::new(
        5204,
        16,
        1,
        format!("Could not find allocation unit ID {au_id}. Check sys.allocation_units."),
    )
}

fn chain_error(page: PageId, database: &str, database_id: u16) -> SqlError {
    SqlError::new(
        5250,
        16,
        1,
        format!(
            "Database error: IAM page {page} for database '{database}' (database ID {database_id}) is invalid. \
             This error cannot be repaired. You must restore from backup."
        ),
    )
}

/// Rebuilds every allocation unit from its IAM chain.
pub(super) fn load_units(
    pool: &BufferPool,
    boot: &BootInfo,
    files: &BTreeMap<u16, Arc<DataFile>>,
) -> SqlResult<BTreeMap<u64, Mutex<AllocUnit>>> {
    let mut units = BTreeMap::new();
    for entry in &boot.units {
        let mut unit = AllocUnit {
            au_id: entry.au_id,
            fg_id: entry.fg_id,
            name: entry.name.clone(),
            iams: Vec::new(),
            extents: BTreeSet::new(),
            single_pages: Vec::new(),
            current: Vec::new(),
            rotation: 0,
            freed_since_scan: true,
            page_allocations: [0; 2],
        };
        let mut next = entry.first_iam;
        while !next.is_null() {
            let bad = || chain_error(next, &boot.name, boot.database_id);
            if unit.iams.len() >= MAX_IAM_CHAIN {
                return Err(bad());
            }
            if !files.contains_key(&next.file_id) {
                return Err(bad());
            }
            let guard = pool.fetch(PageKey::new(boot.database_id, next), LatchMode::Sh)?;
            let page = guard.read(|buf| Box::new(*buf));
            drop(guard);
            let buf = &page;
            let header = PageHeader::read(&buf[..]);
            let iam = alloc::iam_header(buf);
            if header.page_type != PageType::Iam as u8
                || header.allocation_unit_id() != entry.au_id
                || iam.sequence as usize != unit.iams.len()
            {
                return Err(bad());
            }
            let interval = iam.start_page.page_no / GAM_INTERVAL_PAGES;
            let base = interval * GAM_INTERVAL_EXTENTS;
            let target = files.get(&iam.start_page.file_id).ok_or_else(bad)?;
            let total =
                extents_in_file(target.size_pages()).saturating_sub(base).min(GAM_INTERVAL_EXTENTS);
            let mut from = 0;
            while let Some(bit) = alloc::bitmap_find_set(buf, from, total) {
                unit.extents
                    .insert(PageId::new(iam.start_page.file_id, first_page_of_extent(base + bit)));
                from = bit + 1;
            }
            if unit.iams.is_empty() {
                unit.single_pages =
                    iam.single_page_slots.iter().copied().filter(|p| !p.is_null()).collect();
            }
            unit.iams.push(IamRef { page: next, file_id: iam.start_page.file_id, interval });
            next = header.next_page;
        }
        units.insert(entry.au_id, Mutex::new(unit));
    }
    Ok(units)
}

impl Database {
    /// Creates an allocation unit (the storage of one index or heap) in a filegroup (DEFAULT if
    /// None). It owns nothing until its first allocation creates its first IAM page.
    pub fn create_allocation_unit(&self, name: &str, filegroup: Option<&str>) -> SqlResult<u64> {
        let _autocommit = crate::log::mtr::autocommit();
        let mut inner = crate::fiber::write(&self.inner);
        let fg_id = match filegroup {
            // An ON clause naming no filegroup is 1921, where ALTER DATABASE says 5014.
            Some(fg) => {
                let found = self.filegroup_by_name(&inner, fg);
                found.map_err(|_| SqlError::invalid_filegroup(fg))?.id
            }
            None => self.default_filegroup(&inner).id,
        };
        if inner.filegroups[&fg_id].members.is_empty() {
            return Err(SqlError::new(
                1922,
                16,
                1,
                format!(
                    "Filegroup '{}' has no files assigned to it. Tables, indexes, and large object columns cannot \
                     be created on this filegroup. Use ALTER DATABASE to add one or more files to the filegroup.",
                    inner.filegroups[&fg_id].name
                ),
            ));
        }
        let mut boot = inner.boot.clone();
        let au_id = (AU_ID_IND << 48) | (u64::from(boot.next_au_seq) << 16);
        boot.next_au_seq += 1;
        boot.units.push(crate::boot::UnitEntry {
            au_id,
            fg_id,
            first_iam: PageId::NULL,
            name: name.to_string(),
            descriptor: Vec::new(),
        });
        self.save_boot(&mut inner, boot)?;
        let unit = AllocUnit {
            au_id,
            fg_id,
            name: name.to_string(),
            iams: Vec::new(),
            extents: BTreeSet::new(),
            single_pages: Vec::new(),
            current: Vec::new(),
            rotation: 0,
            freed_since_scan: false,
            page_allocations: [0; 2],
        };
        inner.units.insert(au_id, Mutex::new(unit));
        Ok(au_id)
    }

    /// Every allocation unit: its id and name.
    pub fn allocation_units(&self) -> Vec<(u64, String)> {
        let inner = crate::fiber::read(&self.inner);
        inner.boot.units.iter().map(|u| (u.au_id, u.name.clone())).collect()
    }

    /// What an allocation unit holds.
    pub fn allocation_unit(&self, au_id: u64) -> Option<AllocUnitInfo> {
        let inner = crate::fiber::read(&self.inner);
        let unit = crate::fiber::lock(inner.units.get(&au_id)?);
        Some(AllocUnitInfo {
            au_id,
            name: unit.name.clone(),
            fg_id: unit.fg_id,
            iam_pages: unit.iams.iter().map(|iam| iam.page).collect(),
            extents: unit.extents.iter().copied().collect(),
            single_pages: unit.single_pages.clone(),
        })
    }

    /// The name of the filegroup an allocation unit lives in.
    /// The id of the filegroup an allocation unit's pages are in.
    pub fn unit_filegroup_id(&self, au_id: u64) -> Option<u16> {
        let inner = crate::fiber::read(&self.inner);
        let fg_id = crate::fiber::lock(inner.units.get(&au_id)?).fg_id;
        Some(fg_id)
    }

    pub fn unit_filegroup_name(&self, au_id: u64) -> Option<String> {
        let inner = crate::fiber::read(&self.inner);
        let fg_id = crate::fiber::lock(inner.units.get(&au_id)?).fg_id;
        inner.filegroups.get(&fg_id).map(|fg| fg.name.clone())
    }

    /// The pages an allocation unit owns, IAM pages first, then single pages, then the pages
    /// of its uniform extents in page order; each with its PFS ALLOCATED bit, read through the
    /// buffer pool.
    pub fn unit_pages(&self, au_id: u64) -> SqlResult<Vec<UnitPage>> {
        let inner = crate::fiber::read(&self.inner);
        let unit = crate::fiber::lock(inner.units.get(&au_id).ok_or_else(|| missing_unit(au_id))?);
        let first_iam = unit.iams.first().map(|iam| iam.page);
        let mut pages = Vec::new();
        for iam in &unit.iams {
            let extent = PageId::new(
                iam.page.file_id,
                first_page_of_extent(extent_of_page(iam.page.page_no)),
            );
            pages.push(UnitPage {
                page: iam.page,
                iam_page: None,
                extent,
                is_iam: true,
                is_mixed: true,
                is_allocated: true,
            });
        }
        for page in &unit.single_pages {
            let extent =
                PageId::new(page.file_id, first_page_of_extent(extent_of_page(page.page_no)));
            pages.push(UnitPage {
                page: *page,
                iam_page: first_iam,
                extent,
                is_iam: false,
                is_mixed: true,
                is_allocated: true,
            });
        }
        for extent in &unit.extents {
            let file = inner.data_files.get(&extent.file_id).ok_or_else(|| missing_unit(au_id))?;
            let interval = extent.page_no / GAM_INTERVAL_PAGES;
            let iam_page = unit
                .iams
                .iter()
                .find(|iam| iam.file_id == extent.file_id && iam.interval == interval)
                .map(|iam| iam.page);
            for page_no in extent.page_no..extent.page_no + crate::units::PAGES_PER_EXTENT {
                let byte = file.alloc.pfs(&self.pool, page_no)?;
                pages.push(UnitPage {
                    page: PageId::new(extent.file_id, page_no),
                    iam_page,
                    extent: *extent,
                    is_iam: false,
                    is_mixed: false,
                    is_allocated: byte & pfs::ALLOCATED != 0,
                });
            }
        }
        Ok(pages)
    }

    /// The PFS byte of every page of a data file, read through the buffer pool (DBCC
    /// CHECKALLOC's per-file statistics). None if there is no such data file.
    pub fn pfs_bytes(&self, file_id: u16) -> SqlResult<Option<Vec<u8>>> {
        let inner = crate::fiber::read(&self.inner);
        let Some(file) = inner.data_files.get(&file_id) else { return Ok(None) };
        let size = file.alloc.size_pages();
        let mut bytes = Vec::with_capacity(size as usize);
        for page_no in 0..size {
            bytes.push(file.alloc.pfs(&self.pool, page_no)?);
        }
        Ok(Some(bytes))
    }

    /// The GAM, SGAM, PFS, DCM and BCM entries for `page`, read through the buffer pool. None
    /// if the file does not exist or the page is past its end.
    pub fn allocation_status(&self, page: PageId) -> SqlResult<Option<AllocationStatus>> {
        use crate::alloc::{MapKind, map_page, pfs_page_for};
        let inner = crate::fiber::read(&self.inner);
        let Some(file) = inner.data_files.get(&page.file_id) else { return Ok(None) };
        let state = &file.alloc;
        if page.page_no >= state.size_pages() {
            return Ok(None);
        }
        let extent = extent_of_page(page.page_no);
        let interval = extent / GAM_INTERVAL_EXTENTS;
        let id = |no: u32| PageId::new(page.file_id, no);
        Ok(Some(AllocationStatus {
            gam_page: id(map_page(interval, MapKind::Gam)),
            gam_allocated: !state.map_bit(&self.pool, MapKind::Gam, extent)?,
            sgam_page: id(map_page(interval, MapKind::Sgam)),
            sgam_allocated: state.map_bit(&self.pool, MapKind::Sgam, extent)?,
            pfs_page: id(pfs_page_for(page.page_no)),
            pfs_byte: state.pfs(&self.pool, page.page_no)?,
            dcm_page: id(map_page(interval, MapKind::Dcm)),
            dcm_changed: state.map_bit(&self.pool, MapKind::Dcm, extent)?,
            bcm_page: id(map_page(interval, MapKind::Bcm)),
            bcm_min_logged: state.map_bit(&self.pool, MapKind::Bcm, extent)?,
        }))
    }

    fn with_unit<R>(
        &self,
        au_id: u64,
        f: impl FnOnce(&DbInner, &mut AllocUnit) -> SqlResult<R>,
    ) -> SqlResult<R> {
        let inner = crate::fiber::read(&self.inner);
        let unit = inner.units.get(&au_id).ok_or_else(|| {
            SqlError::new(
                5204,
                16,
                1,
                format!("Could not find allocation unit ID {au_id}. Check sys.allocation_units."),
            )
        })?;
        let mut unit = crate::fiber::lock(unit);
        f(&inner, &mut unit)
    }

    /// Allocates a uniform extent to the unit and returns its first page. Its pages stay free
    /// in PFS until [`Database::allocate_page`] uses them.
    pub fn allocate_extent(&self, au_id: u64) -> SqlResult<PageId> {
        let _autocommit = crate::log::mtr::autocommit();
        self.with_unit(au_id, |inner, unit| self.unit_extent(inner, unit))
    }

    fn unit_extent(&self, inner: &DbInner, unit: &mut AllocUnit) -> SqlResult<PageId> {
        let first = self.allocate_extent_in(inner, unit.fg_id, &unit.name)?;
        let interval = first.page_no / GAM_INTERVAL_PAGES;
        let iam = match self.ensure_iam(inner, unit, first.file_id, interval) {
            Ok(iam) => iam,
            Err(error) => {
                inner.data_files[&first.file_id]
                    .alloc
                    .release_extent(&self.pool, extent_of_page(first.page_no))?;
                return Err(error);
            }
        };
        self.set_iam_bit(&unit.iams[iam], extent_of_page(first.page_no), true)?;
        unit.extents.insert(first);
        self.instance.counters.count_extent_allocated();
        Ok(first)
    }

    /// Allocates one page to the unit: from a mixed extent for its first eight pages when
    /// MIXED_PAGE_ALLOCATION is ON, else from its uniform extents.
    ///
    /// The unit keeps an allocation cache: as many current extents as its filegroup has files;
    /// since proportional fill hands out new extents file by file, they lie in different files,
    /// and successive allocations take their page from them in turn. A session that finds its
    /// turn's extent full replaces it with a new extent, so the cache stays spread over the
    /// files instead of every session crowding onto the last extent with room. SQL Server's allocation cache is not documented
    /// (seed 001 names it); this is extentdb's version, chosen so that allocations of one index
    /// spread over the files' PFS pages as they do in seed 001, where PFS contention falls as
    /// data files are added.
    ///
    /// Uniform pages are taken under the PFS page's UP latch only; the unit's own mutex (an
    /// in-memory list of its extents, not a SQL Server structure) is held just long enough to
    /// read or update that list, so sessions allocating for one index really meet on the PFS
    /// page, as in SQL Server (seed 001).
    pub fn allocate_page(&self, au_id: u64) -> SqlResult<PageId> {
        let page = self.allocate_page_in_unit(au_id, None)?;
        self.instance.counters.count_pages_allocated(1);
        Ok(page)
    }

    /// [`Database::allocate_page`] for a page of a B-tree's `level` that a page split adds (or
    /// a heap's new page, level 0): the unit counts it, under the lock the allocation holds
    /// anyway (sys.dm_db_index_operational_stats' leaf_ and nonleaf_allocation_count).
    pub fn allocate_page_at_level(&self, au_id: u64, level: u8) -> SqlResult<PageId> {
        let page = self.allocate_page_in_unit(au_id, Some(level))?;
        self.instance.counters.count_pages_allocated(1);
        Ok(page)
    }

    /// A unit's pages allocated by [`Database::allocate_page_at_level`] since the database
    /// opened: (leaf level, above it).
    pub fn unit_page_allocations(&self, au_id: u64) -> (u64, u64) {
        let inner = crate::fiber::read(&self.inner);
        let Some(unit) = inner.units.get(&au_id) else { return (0, 0) };
        let counts = crate::fiber::lock(unit).page_allocations;
        (counts[0], counts[1])
    }

    fn allocate_page_in_unit(&self, au_id: u64, level: Option<u8>) -> SqlResult<PageId> {
        let _autocommit = crate::log::mtr::autocommit();
        let inner = crate::fiber::read(&self.inner);
        let unit = inner.units.get(&au_id).ok_or_else(|| missing_unit(au_id))?;
        {
            let mut locked = crate::fiber::lock(unit);
            if let Some(level) = level {
                locked.page_allocations[usize::from(level > 0)] += 1;
            }
            let mixed = inner.boot.mixed_page_allocation
                && locked.extents.is_empty()
                && locked.single_pages.len() < SINGLE_PAGE_SLOTS;
            if mixed {
                return self.unit_mixed_page(&inner, &mut locked);
            }
        }
        self.unit_uniform_page(&inner, unit)
    }

    fn unit_uniform_page(&self, inner: &DbInner, unit: &Mutex<AllocUnit>) -> SqlResult<PageId> {
        if let Some(page) = self.unit_freed_page(inner, unit)? {
            return Ok(page);
        }
        let fg_id = crate::fiber::lock(unit).fg_id;
        let cache_extents = inner.filegroups.get(&fg_id).map_or(1, |fg| fg.members.len().max(1));
        for _ in 0..MAX_UNIFORM_ATTEMPTS {
            let choice = {
                let mut locked = crate::fiber::lock(unit);
                let len = locked.current.len();
                locked.rotation = locked.rotation.wrapping_add(1);
                (len > 0).then(|| locked.current[locked.rotation % len])
            };
            if let Some(extent) = choice {
                if let Some(page) = self.take_unit_page(inner, extent)? {
                    return Ok(page);
                }
                // Full: it leaves the cache, and this session refills the cache below rather
                // than joining the others on the extents still in it.
                crate::fiber::lock(unit).current.retain(|e| *e != extent);
            }
            let extent = {
                let mut locked = crate::fiber::lock(unit);
                if locked.current.len() >= cache_extents {
                    continue; // another session refilled the cache
                }
                let extent = self.unit_extent(inner, &mut locked)?;
                locked.current.push(extent);
                extent
            };
            // Other sessions may take pages of the new extent first; then try again.
            if let Some(page) = self.take_unit_page(inner, extent)? {
                return Ok(page);
            }
        }
        panic!("page allocation kept losing every new extent to other sessions")
    }

    /// After a page of the unit was freed: the first free page of any of its extents.
    fn unit_freed_page(
        &self,
        inner: &DbInner,
        unit: &Mutex<AllocUnit>,
    ) -> SqlResult<Option<PageId>> {
        let extents: Vec<PageId> = {
            let mut locked = crate::fiber::lock(unit);
            if !locked.freed_since_scan {
                return Ok(None);
            }
            locked.freed_since_scan = false;
            locked.extents.iter().copied().collect()
        };
        for extent in extents {
            if let Some(page) = self.take_unit_page(inner, extent)? {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }

    fn unit_mixed_page(&self, inner: &DbInner, unit: &mut AllocUnit) -> SqlResult<PageId> {
        let page = self.allocate_mixed_page(inner, unit.fg_id, 0, &unit.name)?;
        if unit.iams.is_empty()
            && let Err(error) =
                self.ensure_iam(inner, unit, page.file_id, page.page_no / GAM_INTERVAL_PAGES)
        {
            self.free_single_page(inner, page)?;
            return Err(error);
        }
        unit.single_pages.push(page);
        self.write_single_page_slots(unit)?;
        Ok(page)
    }

    /// A free page of one of the unit's extents, taken under its PFS page's UP latch.
    fn take_unit_page(&self, inner: &DbInner, extent: PageId) -> SqlResult<Option<PageId>> {
        let file = &inner.data_files[&extent.file_id];
        let page_no =
            file.alloc.take_page_in_extent(&self.pool, extent_of_page(extent.page_no), 0)?;
        Ok(page_no.map(|p| PageId::new(extent.file_id, p)))
    }

    /// A single page from a mixed extent of the filegroup, marked allocated with `extra_bits`.
    fn allocate_mixed_page(
        &self,
        inner: &DbInner,
        fg_id: u16,
        extra_bits: u8,
        object: &str,
    ) -> SqlResult<PageId> {
        for file in &inner.filegroups[&fg_id].members {
            if let Some(page_no) = file.alloc.take_mixed_page(&self.pool, extra_bits)? {
                return Ok(PageId::new(file.file_id, page_no));
            }
        }
        let first = self.allocate_extent_in(inner, fg_id, object)?;
        self.instance.counters.count_extent_allocated();
        let file = &inner.data_files[&first.file_id];
        file.alloc.make_mixed_and_take_first(
            &self.pool,
            extent_of_page(first.page_no),
            extra_bits,
        )?;
        Ok(first)
    }

    /// Frees a single page of a mixed extent, giving the extent back if it is now unused.
    fn free_single_page(&self, inner: &DbInner, page: PageId) -> SqlResult<()> {
        let file = &inner.data_files[&page.file_id];
        if file.alloc.mark_page_free(&self.pool, page.page_no)? {
            file.alloc.release_extent(&self.pool, extent_of_page(page.page_no))?;
            self.instance.counters.count_extent_deallocated();
        }
        Ok(())
    }

    /// The IAM page of the unit for (file, GAM interval), created and linked if missing.
    fn ensure_iam(
        &self,
        inner: &DbInner,
        unit: &mut AllocUnit,
        file_id: u16,
        interval: u32,
    ) -> SqlResult<usize> {
        if let Some(index) =
            unit.iams.iter().position(|iam| iam.file_id == file_id && iam.interval == interval)
        {
            return Ok(index);
        }
        let page = self.allocate_mixed_page(inner, unit.fg_id, pfs::IAM, &unit.name)?;
        let iam_header = IamHeader {
            sequence: unit.iams.len() as u32,
            start_page: PageId::new(file_id, interval * GAM_INTERVAL_PAGES),
            single_page_slots: [PageId::NULL; SINGLE_PAGE_SLOTS],
        };
        let previous = unit.iams.last().map_or(PageId::NULL, |iam| iam.page);
        let guard = self.pool.new_page(PageKey::new(self.database_id, page))?;
        guard.write(|buf| {
            alloc::format_map_page(buf, page, PageType::Iam);
            let mut header = PageHeader::read(&buf[..]);
            header.set_allocation_unit_id(unit.au_id);
            header.prev_page = previous;
            header.write(&mut buf[..]);
            alloc::set_iam_header(buf, &iam_header);
        })?;
        drop(guard);
        if previous.is_null() {
            self.persist_first_iam(inner, unit.au_id, page)?;
        }
        if !previous.is_null() {
            self.edit_page(previous, |buf| crate::page::set_next_page(&mut buf[..], page))?;
        }
        unit.iams.push(IamRef { page, file_id, interval });
        Ok(unit.iams.len() - 1)
    }

    /// Changes a page under an UP latch (IAM pages are latched alone: latch order 2).
    fn edit_page(
        &self,
        page: PageId,
        edit: impl FnOnce(&mut crate::page::PageBuf),
    ) -> SqlResult<()> {
        let guard = self.pool.fetch(PageKey::new(self.database_id, page), LatchMode::Up)?;
        guard.write(edit)
    }

    fn set_iam_bit(&self, iam: &IamRef, extent: u32, value: bool) -> SqlResult<()> {
        assert_eq!(
            extent / GAM_INTERVAL_EXTENTS,
            iam.interval,
            "the IAM page covers the extent's interval"
        );
        let bit = extent % GAM_INTERVAL_EXTENTS;
        let guard = self.pool.fetch(PageKey::new(self.database_id, iam.page), LatchMode::Up)?;
        guard.write_within(&[alloc::bitmap_byte_range(bit)], |buf| {
            alloc::bitmap_set(buf, bit, value)
        })
    }

    fn write_single_page_slots(&self, unit: &AllocUnit) -> SqlResult<()> {
        let Some(first) = unit.iams.first() else { return Ok(()) };
        self.edit_page(first.page, |buf| {
            let mut header = alloc::iam_header(buf);
            header.single_page_slots = [PageId::NULL; SINGLE_PAGE_SLOTS];
            header.single_page_slots[..unit.single_pages.len()].copy_from_slice(&unit.single_pages);
            alloc::set_iam_header(buf, &header);
        })
    }

    /// Frees one page of the unit. The extent goes back to the filegroup when its last used
    /// page is freed.
    pub fn free_page(&self, au_id: u64, page: PageId) -> SqlResult<()> {
        self.free_page_of_unit(au_id, page)?;
        self.instance.counters.count_page_deallocated();
        Ok(())
    }

    fn free_page_of_unit(&self, au_id: u64, page: PageId) -> SqlResult<()> {
        let _autocommit = crate::log::mtr::autocommit();
        self.with_unit(au_id, |inner, unit| {
            if let Some(index) = unit.single_pages.iter().position(|p| *p == page) {
                unit.single_pages.remove(index);
                self.write_single_page_slots(unit)?;
                return self.free_single_page(inner, page);
            }
            let extent =
                PageId::new(page.file_id, first_page_of_extent(extent_of_page(page.page_no)));
            assert!(
                unit.extents.contains(&extent),
                "page {page} does not belong to allocation unit {au_id}"
            );
            let now_unused =
                inner.data_files[&page.file_id].alloc.mark_page_free(&self.pool, page.page_no)?;
            unit.freed_since_scan = true;
            if now_unused {
                self.unit_release_extent(inner, unit, extent)?;
            }
            Ok(())
        })
    }

    /// Gives a uniform extent of the unit back to the filegroup, with any pages it still used.
    pub fn free_extent(&self, au_id: u64, extent_first_page: PageId) -> SqlResult<()> {
        let _autocommit = crate::log::mtr::autocommit();
        self.with_unit(au_id, |inner, unit| {
            assert!(
                unit.extents.contains(&extent_first_page),
                "extent {extent_first_page} does not belong to unit {au_id}"
            );
            self.unit_release_extent(inner, unit, extent_first_page)
        })
    }

    fn unit_release_extent(
        &self,
        inner: &DbInner,
        unit: &mut AllocUnit,
        extent: PageId,
    ) -> SqlResult<()> {
        let extent_no = extent_of_page(extent.page_no);
        let iam = unit
            .iams
            .iter()
            .find(|iam| {
                iam.file_id == extent.file_id && iam.interval == extent_no / GAM_INTERVAL_EXTENTS
            })
            .expect("an owned extent has an IAM page")
            .clone();
        self.set_iam_bit(&iam, extent_no, false)?;
        inner.data_files[&extent.file_id].alloc.release_extent(&self.pool, extent_no)?;
        self.instance.counters.count_extent_deallocated();
        unit.extents.remove(&extent);
        unit.current.retain(|e| *e != extent);
        Ok(())
    }

    /// Drops an allocation unit: every page, extent and IAM page goes back to the filegroup.
    pub fn drop_allocation_unit(&self, au_id: u64) -> SqlResult<()> {
        let _autocommit = crate::log::mtr::autocommit();
        self.with_unit(au_id, |inner, unit| {
            for page in std::mem::take(&mut unit.single_pages) {
                self.free_single_page(inner, page)?;
            }
            for extent in unit.extents.clone() {
                self.unit_release_extent(inner, unit, extent)?;
            }
            for iam in std::mem::take(&mut unit.iams) {
                self.free_single_page(inner, iam.page)?;
            }
            Ok(())
        })?;
        let mut inner = crate::fiber::write(&self.inner);
        inner.units.remove(&au_id);
        self.first_iams.lock().remove(&au_id);
        let mut boot = inner.boot.clone();
        boot.units.retain(|entry| entry.au_id != au_id);
        self.save_boot(&mut inner, boot)
    }

    /// Brings each unit's first IAM page in `boot` up to date with the units in memory.
    pub(super) fn fill_first_iams(&self, boot: &mut BootInfo) {
        let first_iams = self.first_iams.lock();
        for entry in &mut boot.units {
            entry.first_iam = first_iams.get(&entry.au_id).copied().unwrap_or(PageId::NULL);
        }
    }

    /// Records a unit's new first IAM page in the boot page at once (the boot page is not
    /// logged): after the log holds the IAM page's format, so that recovery can rebuild it.
    fn persist_first_iam(&self, inner: &DbInner, au_id: u64, page: PageId) -> SqlResult<()> {
        let mut first_iams = self.first_iams.lock();
        first_iams.insert(au_id, page);
        let mut boot = inner.boot.clone();
        for entry in &mut boot.units {
            entry.first_iam = first_iams.get(&entry.au_id).copied().unwrap_or(PageId::NULL);
        }
        self.log.flush_all()?;
        Self::write_boot(&inner.data_files[&1], &boot)
    }

    /// Records what a unit stores (its object's schema) in the boot page, for recovery.
    pub fn set_unit_descriptor(&self, au_id: u64, descriptor: Vec<u8>) -> SqlResult<()> {
        let mut inner = crate::fiber::write(&self.inner);
        let mut boot = inner.boot.clone();
        let entry =
            boot.units.iter_mut().find(|u| u.au_id == au_id).ok_or_else(|| missing_unit(au_id))?;
        entry.descriptor = descriptor;
        self.save_boot(&mut inner, boot)
    }

    /// The descriptor a unit's object registered, if any.
    pub fn unit_descriptor(&self, au_id: u64) -> Option<Vec<u8>> {
        let inner = crate::fiber::read(&self.inner);
        let entry = inner.boot.units.iter().find(|u| u.au_id == au_id)?;
        (!entry.descriptor.is_empty()).then(|| entry.descriptor.clone())
    }

    /// After redo: frees what a crash left allocated to nobody. An allocation is logged as
    /// several nested top actions (the extent in GAM, then the IAM page and bit, then the page),
    /// so the durable log can end between them: an extent allocated in GAM that no IAM page
    /// owns, or a page of a mixed extent that no unit uses. Both go back to free space, through
    /// logged changes. Returns (extents freed, pages freed). Deviation: SQL Server undoes the
    /// allocation with the transaction that made it.
    pub(super) fn free_orphaned_allocations(&self) -> SqlResult<(u32, u32)> {
        let _autocommit = crate::log::mtr::autocommit();
        let inner = crate::fiber::read(&self.inner);
        let mut owned = BTreeSet::new();
        let mut used_single = BTreeSet::new();
        for unit in inner.units.values() {
            let unit = crate::fiber::lock(unit);
            owned.extend(unit.extents.iter().copied());
            used_single.extend(unit.single_pages.iter().copied());
            used_single.extend(unit.iams.iter().map(|iam| iam.page));
        }
        let (mut extents, mut pages) = (0, 0);
        for file in inner.data_files.values() {
            let state = &file.alloc;
            let fixed: BTreeSet<u32> =
                alloc::fixed_pages_in(0, state.size_pages(), state.is_primary)
                    .into_iter()
                    .collect();
            for extent in 0..extents_in_file(state.size_pages()) {
                let first = first_page_of_extent(extent);
                if state.map_bit(&self.pool, crate::alloc::MapKind::Gam, extent)? {
                    continue; // free in GAM
                }
                let mixed = state.pfs(&self.pool, first)? & pfs::MIXED != 0;
                if !mixed {
                    if !owned.contains(&PageId::new(file.file_id, first)) {
                        state.release_extent(&self.pool, extent)?;
                        extents += 1;
                    }
                    continue;
                }
                for page_no in first..first + crate::units::PAGES_PER_EXTENT {
                    let allocated = state.pfs(&self.pool, page_no)? & pfs::ALLOCATED != 0;
                    let page = PageId::new(file.file_id, page_no);
                    if allocated && !fixed.contains(&page_no) && !used_single.contains(&page) {
                        self.free_single_page(&inner, page)?;
                        pages += 1;
                    }
                }
            }
        }
        Ok((extents, pages))
    }

    /// After redo and undo: frees the pages that a crash left allocated to a unit but unused.
    /// A page is allocated in its own nested top action before the change that uses it (a
    /// split links a new B-tree page; a heap formats its new page), and freed in one after the
    /// change that stops using it, so the durable log can end between the two. Candidates are
    /// a B-tree's pages that no index page of its unit links (only index pages are read, not
    /// the leaves) and a heap's pages of PFS fullness 0; of those, only a page whose header
    /// does not make it one of the unit's pages (never formatted, or left over from an earlier
    /// owner) is freed. So damage never costs data here: a unit whose index pages cannot be
    /// read is left alone, and an unlinked page that is the unit's stays for CHECKDB to report
    /// (8977). Units without a descriptor are left alone. Returns how many pages were freed.
    /// Deviation: SQL Server undoes the allocation with the system transaction that made it.
    ///
    /// After a crash (`after_crash`: redo or undo ran), a heap's pages are all read instead
    /// ([`Database::settle_heap_pages`]): a heap insert's PFS fullness change is a nested top
    /// action, so it can reach the durable log while the row (or a new page's format) that it
    /// followed did not.
    pub(super) fn free_unused_pages(&self, after_crash: bool) -> SqlResult<u32> {
        let _autocommit = crate::log::mtr::autocommit();
        let mut freed = 0;
        for (au_id, _) in self.allocation_units() {
            let Some(descriptor) = self.unit_descriptor(au_id) else { continue };
            let owned: Vec<UnitPage> = self
                .unit_pages(au_id)?
                .into_iter()
                .filter(|p| p.is_allocated && !p.is_iam)
                .collect();
            let candidates: Vec<PageId> =
                if let Some(tree) = crate::btree::BTree::from_descriptor(au_id, &descriptor) {
                    let Ok(linked) = tree.linked_pages(self) else { continue };
                    owned.iter().map(|p| p.page).filter(|p| !linked.contains(p)).collect()
                } else if descriptor.first() == Some(&crate::heap::DESCRIPTOR_HEAP) {
                    if after_crash {
                        freed += self.settle_heap_pages(au_id, &owned)?;
                        continue;
                    }
                    self.empty_pages(&owned)?
                } else {
                    continue;
                };
            for page in candidates {
                if !self.is_page_of_unit(page, au_id) {
                    self.free_page(au_id, page)?;
                    freed += 1;
                }
            }
        }
        Ok(freed)
    }

    /// After a crash, each page of a heap: freed if its header does not make it the unit's
    /// (allocated, but its format never reached the durable log), else given the PFS fullness
    /// bucket its free space calls for (the bucket's change may be durable without the row
    /// change it described; CHECKDB's 8914). Returns how many pages were freed. Deviation:
    /// SQL Server logs a heap page's PFS change with the change to the page.
    fn settle_heap_pages(&self, au_id: u64, owned: &[UnitPage]) -> SqlResult<u32> {
        let mut freed = 0;
        for unit_page in owned {
            let page = unit_page.page;
            // One read: a page that cannot be read is left as it is (damage frees nothing).
            let Ok(buf) = self.page_copy(page) else { continue };
            let header = PageHeader::read(&buf[..]);
            if header.page_id != page || header.allocation_unit_id() != au_id {
                self.free_page(au_id, page)?;
                freed += 1;
                continue;
            }
            let bucket = crate::datapage::pfs_fullness(&buf);
            let pfs_id = PageId::new(page.file_id, crate::alloc::pfs_page_for(page.page_no));
            let pfs_key = PageKey::new(self.database_id, pfs_id);
            let pfs_page = self.pool.fetch(pfs_key, LatchMode::Up)?;
            let byte = pfs_page.read(|buf| crate::alloc::pfs_get(buf, page.page_no));
            if byte & pfs::FULLNESS_MASK != bucket {
                let settled = (byte & !pfs::FULLNESS_MASK) | bucket;
                pfs_page.write(|buf| crate::alloc::pfs_set(buf, page.page_no, settled))?;
            }
        }
        Ok(freed)
    }

    /// The pages whose PFS fullness is 0.
    fn empty_pages(&self, owned: &[UnitPage]) -> SqlResult<Vec<PageId>> {
        let mut empty = Vec::new();
        for unit_page in owned {
            let Some(status) = self.allocation_status(unit_page.page)? else { continue };
            if status.pfs_byte & pfs::FULLNESS_MASK == 0 {
                empty.push(unit_page.page);
            }
        }
        Ok(empty)
    }

    /// Whether the page's header makes it a page of the unit (a page that cannot be read is
    /// taken to be one: nothing is freed on damage's word).
    fn is_page_of_unit(&self, page: PageId, au_id: u64) -> bool {
        let Ok(buf) = self.page_copy(page) else { return true };
        let header = PageHeader::read(&buf[..]);
        header.page_id == page && header.allocation_unit_id() == au_id
    }

    /// Checks every allocation invariant across all maps and units, as DBCC CHECKALLOC does;
    /// returns one error per problem, with SQL Server's number and text where it has one
    /// (empty when consistent). Run it on a quiet database: pages are latched one at a time,
    /// so concurrent allocations can show as transient problems.
    pub fn check_allocation(&self) -> Vec<SqlError> {
        self.check_allocation_of(None)
    }

    /// [`Database::check_allocation`] of one filegroup's files (DBCC CHECKFILEGROUP's
    /// CHECKALLOC), or of every data file when `fg_id` is None. Every unit's claims are read,
    /// so an extent of the filegroup claimed from another is still seen as claimed.
    pub fn check_allocation_of(&self, fg_id: Option<u16>) -> Vec<SqlError> {
        let inner = crate::fiber::read(&self.inner);
        let mut owners: BTreeMap<PageId, u32> = BTreeMap::new();
        let mut single_pages = BTreeSet::new();
        let mut iam_pages = BTreeSet::new();
        for unit in inner.units.values() {
            let unit = crate::fiber::lock(unit);
            for extent in &unit.extents {
                *owners.entry(*extent).or_default() += 1;
            }
            single_pages.extend(unit.single_pages.iter().copied());
            iam_pages.extend(unit.iams.iter().map(|iam| iam.page));
        }
        let claims = Claims { owners, single_pages, iam_pages, database_id: self.database_id };
        let mut problems = Vec::new();
        for file in inner.data_files.values().filter(|f| fg_id.is_none_or(|fg| f.fg_id == fg)) {
            if let Err(error) = check_file(&self.pool, &file.alloc, &claims, &mut problems) {
                problems.push(error);
            }
        }
        problems
    }
}

/// What the allocation units claim: extents, single pages and IAM pages.
struct Claims {
    owners: BTreeMap<PageId, u32>,
    single_pages: BTreeSet<PageId>,
    iam_pages: BTreeSet<PageId>,
    database_id: u16,
}

fn allocation_error(number: i32, message: String) -> SqlError {
    SqlError::new(number, 16, 1, message)
}

/// 8939, SQL Server's error for an internal test that failed, for the invariants that have no
/// error of their own (an allocation page belongs to no object: object ID 0, index ID -1).
fn failed_test(page: PageId, test: &str, actual: i64, expected: i64) -> SqlError {
    allocation_error(
        8939,
        format!(
            "Table error: Object ID 0, index ID -1, partition ID 0, alloc unit ID 0 (type Unknown), page {page}. Test ({test}) failed. Values are {actual} and {expected}."
        ),
    )
}

fn check_file(
    pool: &BufferPool,
    state: &FileAlloc,
    claims: &Claims,
    problems: &mut Vec<SqlError>,
) -> SqlResult<()> {
    use crate::alloc::{MapKind, map_page, pfs_page_for};
    let file_id = state.file_id;
    let database_id = claims.database_id;
    let counted = state.count_free_extents(pool)?;
    if counted != state.free_extents() {
        problems.push(failed_test(
            PageId::new(file_id, 2),
            "cached free extent count == GAM free extent count",
            i64::from(state.free_extents()),
            i64::from(counted),
        ));
    }
    let fixed: BTreeSet<u32> =
        alloc::fixed_pages_in(0, state.size_pages(), state.is_primary).into_iter().collect();
    for extent in 0..extents_in_file(state.size_pages()) {
        let first = first_page_of_extent(extent);
        let id = PageId::new(file_id, first);
        let gam_free = state.map_bit(pool, MapKind::Gam, extent)?;
        let sgam = state.map_bit(pool, MapKind::Sgam, extent)?;
        let bytes: Vec<u8> =
            (first..first + 8).map(|p| state.pfs(pool, p)).collect::<SqlResult<_>>()?;
        let mixed = bytes[0] & pfs::MIXED != 0;
        let has_free_page = bytes.iter().any(|b| b & pfs::ALLOCATED == 0);
        let used_pages = bytes.iter().filter(|b| *b & pfs::ALLOCATED != 0).count();
        let owned = claims.owners.get(&id).copied().unwrap_or(0);
        let owners = owned + u32::from(mixed);
        let interval = extent / crate::units::GAM_INTERVAL_EXTENTS;
        let gam = PageId::new(file_id, map_page(interval, MapKind::Gam));
        let sgam_page = PageId::new(file_id, map_page(interval, MapKind::Sgam));
        let pfs_page = PageId::new(file_id, pfs_page_for(first));
        if gam_free && sgam {
            problems.push(allocation_error(8903, format!(
                "Extent {id} in database ID {database_id} is allocated in both GAM {gam} and SGAM {sgam_page}."
            )));
        } else if gam_free && (owners > 0 || used_pages > 0) {
            // In use, but free in the GAM: the GAM bit fails the test (1 = free, 0 expected).
            problems.push(failed_test(
                gam,
                &format!("extent {id} is owned or has allocated pages but is free in the GAM"),
                1,
                0,
            ));
        }
        if !gam_free && owners == 0 {
            problems.push(allocation_error(8905, format!(
                "Extent {id} in database ID {database_id} is marked allocated in the GAM, but no SGAM or IAM has allocated it."
            )));
        }
        if !gam_free && owners > 1 {
            problems.push(allocation_error(8904, format!(
                "Extent {id} in database ID {database_id} is allocated by more than one allocation object."
            )));
        }
        if sgam && !gam_free && (!mixed || !has_free_page) {
            problems.push(allocation_error(8903, format!(
                "Extent {id} in database ID {database_id} is allocated in both GAM {gam} and SGAM {sgam_page}."
            )));
        }
        if mixed && !sgam && has_free_page {
            problems.push(failed_test(
                sgam_page,
                "SGAM bit of a mixed extent with a free page",
                0,
                1,
            ));
        }
        for (offset, byte) in bytes.iter().enumerate() {
            let page = first + offset as u32;
            let allocated = byte & pfs::ALLOCATED != 0;
            let page_id = PageId::new(file_id, page);
            let accounted = fixed.contains(&page)
                || claims.single_pages.contains(&page_id)
                || claims.iam_pages.contains(&page_id);
            if mixed && allocated && !accounted {
                problems.push(allocation_error(8906, format!(
                    "Page {page_id} in database ID {database_id} is allocated in the SGAM {sgam_page} and PFS {pfs_page}, but was not allocated in any IAM. PFS flags '{}'.",
                    crate::alloc::pfs::describe(*byte)
                )));
            }
            if mixed && !allocated && accounted {
                problems.push(SqlError::pfs_wrong_type(page_id, pfs_page, *byte));
            }
        }
    }
    Ok(())
}
