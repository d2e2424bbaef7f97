//! Heaps: tables without a clustered index (reference §1.7, §2.5).
//!
//! - An insert looks for a page with room through the PFS fullness buckets of the heap's pages
//!   (the page it last used first), and allocates a new page only when none has room; every
//!   change keeps the page's PFS bucket up to date, so free space left by deletes is reused.
//! - A scan follows the IAM chain: single pages, then the unit's extents in file and page order.
//! - A row that grows past its page moves: its slot keeps a 9-byte forwarding stub (status 0x04
//!   and the new RID) and the moved row becomes a forwarded record; a row moved again updates
//!   the original stub, so stubs never chain. A scan returns a forwarded row once, at its stub.
//! - Deletes remove the record at once (heap deletes are not ghosted, reference §1.8).
//!
//! Latch order: a data page (EX) before its PFS page (UP), as the buffer pool's order requires.
//!
//! Deviation: the forwarded record carries no back-pointer column (SQL Server appends one with
//! the stub's RID); the caller always reaches a moved row through its original RID.

use crate::alloc::{self, pfs};
use crate::buffer::{PageGuard, PageKey};
use crate::database::Database;
use crate::datapage;
use crate::error::{SqlError, SqlResult};
use crate::latch::LatchMode;
use crate::page::PageType;
use crate::record::{self, Column, Layout, RecordType, Value};
use crate::units::{PAGES_PER_EXTENT, PageId};
use parking_lot::Mutex;

/// A row id: page and slot, as SQL Server's 8-byte RID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rid {
    pub page: PageId,
    pub slot: u16,
}

impl Rid {
    fn to_bytes(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..6].copy_from_slice(&self.page.to_bytes());
        out[6..].copy_from_slice(&self.slot.to_le_bytes());
        out
    }

    fn from_bytes(bytes: &[u8]) -> Rid {
        Rid {
            page: PageId::from_bytes(&bytes[..6]),
            slot: u16::from_le_bytes([bytes[6], bytes[7]]),
        }
    }
}

/// A heap: its allocation unit and row layout.
pub struct Heap {
    pub au_id: u64,
    pub name: String,
    columns: Vec<Column>,
    layout: Layout,
    /// The page the last insert used.
    last_page: Mutex<Option<PageId>>,
}

fn corrupt(database: &Database, page: PageId, what: &str) -> SqlError {
    SqlError::new(
        5250,
        16,
        2,
        format!(
            "Database error: data page {page} for database '{}' (database ID {}) is invalid ({what}). This error cannot be repaired. You must restore from backup.",
            database.name, database.database_id
        ),
    )
}

impl Heap {
    /// Creates a heap (its allocation unit) in a filegroup (DEFAULT if None).
    pub fn create(
        db: &Database,
        name: &str,
        columns: Vec<Column>,
        filegroup: Option<&str>,
    ) -> SqlResult<Heap> {
        let au_id = db.create_allocation_unit(name, filegroup)?;
        Ok(Heap::attach(au_id, name, columns))
    }

    /// A heap over an existing allocation unit.
    pub fn attach(au_id: u64, name: &str, columns: Vec<Column>) -> Heap {
        let layout = Layout::new(&columns);
        Heap { au_id, name: name.to_string(), columns, layout, last_page: Mutex::new(None) }
    }

    fn key(db: &Database, page: PageId) -> PageKey {
        PageKey::new(db.database_id, page)
    }

    /// Inserts a row and returns its RID.
    pub fn insert(&self, db: &Database, values: &[Value]) -> SqlResult<Rid> {
        let record = record::encode(&self.columns, &self.layout, values, RecordType::Primary)?;
        self.place(db, &record, None)
    }

    /// Puts a record on a page with room (not `avoid`), allocating a page if none has room.
    fn place(&self, db: &Database, record: &[u8], avoid: Option<PageId>) -> SqlResult<Rid> {
        let hint = *self.last_page.lock();
        let candidates = hint.into_iter().chain(self.pages_with_room(db, record.len())?);
        for page in candidates.filter(|p| Some(*p) != avoid) {
            let guard = db.buffer_pool().fetch(Self::key(db, page), LatchMode::Ex)?;
            if let Some(slot) = self.insert_on(db, &guard, record)? {
                *self.last_page.lock() = Some(page);
                return Ok(Rid { page, slot });
            }
        }
        let page = db.allocate_page(self.au_id)?;
        let guard = db.buffer_pool().new_page(Self::key(db, page))?;
        guard.write(|buf| {
            datapage::format(buf, page, PageType::Data, self.au_id, 0, self.layout.pminlen() as u16)
        })?;
        let slot = self
            .insert_on(db, &guard, record)?
            .expect("a record of at most 8,060 bytes fits an empty page");
        *self.last_page.lock() = Some(page);
        Ok(Rid { page, slot })
    }

    /// Inserts on a latched page if it fits; updates the PFS bucket.
    fn insert_on(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        record: &[u8],
    ) -> SqlResult<Option<u16>> {
        let slot = guard.write(|buf| datapage::insert_anywhere(buf, record))?;
        if slot.is_some() {
            self.update_pfs(db, guard)?;
        }
        Ok(slot)
    }

    /// Writes a latched page's fullness bucket into its PFS byte (PFS UP, after the page).
    fn update_pfs(&self, db: &Database, guard: &PageGuard<'_>) -> SqlResult<()> {
        // A nested top action: the PFS latch is not kept while other data pages are latched.
        let _autocommit = crate::log::mtr::autocommit();
        let page = guard.key().page;
        let bucket = guard.read(datapage::pfs_fullness);
        let pfs_key = Self::key(db, PageId::new(page.file_id, alloc::pfs_page_for(page.page_no)));
        let pfs_guard = db.buffer_pool().fetch(pfs_key, LatchMode::Up)?;
        pfs_guard.write(|buf| {
            let byte = alloc::pfs_get(buf, page.page_no);
            alloc::pfs_set(buf, page.page_no, (byte & !pfs::FULLNESS_MASK) | bucket);
        })?;
        Ok(())
    }

    /// The heap's data pages, in IAM order.
    pub fn pages(&self, db: &Database) -> SqlResult<Vec<PageId>> {
        let unit = db.allocation_unit(self.au_id).ok_or_else(|| {
            SqlError::new(5204, 16, 1, format!("Could not find allocation unit ID {}.", self.au_id))
        })?;
        let iam: std::collections::BTreeSet<PageId> = unit.iam_pages.iter().copied().collect();
        let mut pages: Vec<PageId> = unit.single_pages.clone();
        for extent in unit.extents {
            for page_no in extent.page_no..extent.page_no + PAGES_PER_EXTENT {
                let page = PageId::new(extent.file_id, page_no);
                if !iam.contains(&page) && self.pfs_byte(db, page)? & pfs::ALLOCATED != 0 {
                    pages.push(page);
                }
            }
        }
        Ok(pages)
    }

    fn pfs_byte(&self, db: &Database, page: PageId) -> SqlResult<u8> {
        let key = Self::key(db, PageId::new(page.file_id, alloc::pfs_page_for(page.page_no)));
        let guard = db.buffer_pool().fetch(key, LatchMode::Sh)?;
        Ok(guard.read(|buf| alloc::pfs_get(buf, page.page_no)))
    }

    /// Pages whose PFS bucket promises room for a record of `len` bytes.
    fn pages_with_room(&self, db: &Database, len: usize) -> SqlResult<Vec<PageId>> {
        let mut found = Vec::new();
        for page in self.pages(db)? {
            let bucket = self.pfs_byte(db, page)? & pfs::FULLNESS_MASK;
            if datapage::guaranteed_free_bytes(bucket) >= len + 2 {
                found.push(page);
            }
        }
        Ok(found)
    }

    /// The row at `rid`, following a forwarding stub; None if the slot is empty.
    pub fn get(&self, db: &Database, rid: Rid) -> SqlResult<Option<Vec<Value>>> {
        let Some(bytes) = self.read_record(db, rid)? else { return Ok(None) };
        if record::record_type(bytes[0]) == RecordType::ForwardingStub as u8 {
            let target = Rid::from_bytes(&bytes[1..9]);
            let moved = self
                .read_record(db, target)?
                .ok_or_else(|| corrupt(db, target.page, "forwarding stub points nowhere"))?;
            return self.decode(db, target.page, &moved).map(Some);
        }
        self.decode(db, rid.page, &bytes).map(Some)
    }

    fn decode(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<Vec<Value>> {
        record::decode(&self.columns, &self.layout, bytes).map_err(|bad| corrupt(db, page, bad.0))
    }

    fn read_record(&self, db: &Database, rid: Rid) -> SqlResult<Option<Vec<u8>>> {
        let guard = db.buffer_pool().fetch(Self::key(db, rid.page), LatchMode::Sh)?;
        guard.read(|buf| {
            if rid.slot >= datapage::slot_count(buf) || datapage::is_empty_slot(buf, rid.slot) {
                return Ok(None);
            }
            datapage::record(buf, rid.slot)
                .map(|r| Some(r.to_vec()))
                .map_err(|bad| corrupt(db, rid.page, bad.0))
        })
    }

    /// Every row, in IAM order: (RID, values). A forwarded row is returned at its stub's RID.
    pub fn scan(&self, db: &Database) -> SqlResult<Vec<(Rid, Vec<Value>)>> {
        let mut rows = Vec::new();
        for page in self.pages(db)? {
            let records: Vec<(u16, Vec<u8>)> = {
                let guard = db.buffer_pool().fetch(Self::key(db, page), LatchMode::Sh)?;
                guard
                    .read(|buf| {
                        (0..datapage::slot_count(buf))
                            .filter(|slot| !datapage::is_empty_slot(buf, *slot))
                            .map(|slot| datapage::record(buf, slot).map(|r| (slot, r.to_vec())))
                            .collect::<Result<Vec<_>, _>>()
                    })
                    .map_err(|bad| corrupt(db, page, bad.0))?
            };
            for (slot, bytes) in records {
                let rid = Rid { page, slot };
                match record::record_type(bytes[0]) {
                    t if t == RecordType::Forwarded as u8 => continue,
                    t if t == RecordType::ForwardingStub as u8 => {
                        if let Some(values) = self.get(db, rid)? {
                            rows.push((rid, values));
                        }
                    }
                    _ => rows.push((rid, self.decode(db, page, &bytes)?)),
                }
            }
        }
        Ok(rows)
    }

    /// Replaces the row at `rid`. If it no longer fits its page it moves, leaving a stub.
    pub fn update(&self, db: &Database, rid: Rid, values: &[Value]) -> SqlResult<()> {
        let current = self
            .read_record(db, rid)?
            .ok_or_else(|| corrupt(db, rid.page, "updating an empty slot"))?;
        let forwarded_to = (record::record_type(current[0]) == RecordType::ForwardingStub as u8)
            .then(|| Rid::from_bytes(&current[1..9]));
        let home = forwarded_to.unwrap_or(rid);
        let kind = if forwarded_to.is_some() { RecordType::Forwarded } else { RecordType::Primary };
        let record = record::encode(&self.columns, &self.layout, values, kind)?;
        let guard = db.buffer_pool().fetch(Self::key(db, home.page), LatchMode::Ex)?;
        let replaced = guard
            .write(|buf| datapage::replace(buf, home.slot, &record))?
            .map_err(|bad| corrupt(db, home.page, bad.0))?;
        if replaced {
            return self.update_pfs(db, &guard);
        }
        drop(guard);
        let moved = record::encode(&self.columns, &self.layout, values, RecordType::Forwarded)?;
        let target = self.place(db, &moved, Some(rid.page))?;
        if let Some(old) = forwarded_to {
            self.remove(db, old)?;
        }
        let mut stub = vec![(RecordType::ForwardingStub as u8) << 1];
        stub.extend_from_slice(&target.to_bytes());
        let guard = db.buffer_pool().fetch(Self::key(db, rid.page), LatchMode::Ex)?;
        let written = guard
            .write(|buf| datapage::replace(buf, rid.slot, &stub))?
            .map_err(|bad| corrupt(db, rid.page, bad.0))?;
        assert!(written, "a 9-byte stub fits where a row was");
        self.update_pfs(db, &guard)
    }

    /// Deletes the row at `rid` (and its forwarded record). The other rows keep their RIDs.
    pub fn delete(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        let current = self
            .read_record(db, rid)?
            .ok_or_else(|| corrupt(db, rid.page, "deleting an empty slot"))?;
        if record::record_type(current[0]) == RecordType::ForwardingStub as u8 {
            self.remove(db, Rid::from_bytes(&current[1..9]))?;
        }
        self.remove(db, rid)
    }

    /// Removes a record, keeping the RIDs of the page's other rows stable.
    fn remove(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        let guard = db.buffer_pool().fetch(Self::key(db, rid.page), LatchMode::Ex)?;
        guard
            .write(|buf| datapage::remove_keeping_slots(buf, rid.slot))?
            .map_err(|bad| corrupt(db, rid.page, bad.0))?;
        self.update_pfs(db, &guard)
    }
}
