//! Heaps: tables without a clustered index (reference §1.7, §2.5).
//!
//! - An insert looks for a page with room through the PFS fullness buckets of the heap's pages
//!   (the page it last used first), and allocates a new page only when none has room; every
//!   change keeps the page's PFS bucket up to date, so free space left by deletes is reused.
//! - A scan follows the IAM chain: single pages, then the unit's extents in file and page order.
//! - A row that grows past its page moves: its slot keeps a 9-byte forwarding stub (status 0x04
//!   and the new RID) and the moved row becomes a forwarded record; a row moved again updates
//!   the original stub, so stubs never chain. A scan returns a forwarded row once, at its stub.
//! - Deletes remove the record at once (heap deletes are not ghosted, reference §1.8), except
//!   in a transaction: the row becomes a ghost, X-locked, and its slot is emptied when the
//!   transaction commits, so that a rollback can put it back at the same RID.
//! - In a transaction, inserts, deletes and updates log their undo (LCX_HEAP records) and lock
//!   the row (X on its RID) and the heap (IX); an update logs the old row before it changes.
//!
//! Latch order: a data page (EX) before its PFS page (UP), as the buffer pool's order requires.
//! - A forwarded record carries the RID of its stub after its columns (the back-pointer,
//!   status bit 0x80), so the chain can be checked from either end.
//!
//! Deviation: SQL Server stores the back-pointer as a special last variable-length column;
//! extentdb appends the 8-byte RID after the record and flags it in status byte A.

use crate::alloc::{self, pfs};
use crate::buffer::{PageGuard, PageKey};
use crate::database::Database;
use crate::datapage;
use crate::error::{SqlError, SqlResult};
use crate::latch::LatchMode;
use crate::lock::{LockMode, LockResource};
use crate::page::PageType;
use crate::record::{self, Column, Layout, RecordType, Value};
use crate::units::{PAGES_PER_EXTENT, PageId};
use crate::xact;
use parking_lot::Mutex;

/// The first byte of a heap's unit descriptor.
pub const DESCRIPTOR_HEAP: u8 = 2;

/// A forwarded record with the RID of its forwarding stub after it (the back-pointer).
fn with_back_pointer(mut record: Vec<u8>, stub: Rid) -> Vec<u8> {
    record[0] |= record::STATUS_BACK_POINTER;
    record.extend_from_slice(&stub.to_bytes());
    record
}

fn is_ghost(status_a: u8) -> bool {
    record::record_type(status_a) == RecordType::GhostData as u8
}

/// A row id: page and slot, as SQL Server's 8-byte RID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rid {
    pub page: PageId,
    pub slot: u16,
}

impl Rid {
    pub fn to_bytes(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..6].copy_from_slice(&self.page.to_bytes());
        out[6..].copy_from_slice(&self.slot.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Rid {
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
    /// False after a PFS search found no page with room, until a delete or update of this
    /// heap may have made some: inserts then go straight to a new page instead of searching
    /// again (SQL Server keeps a similar hint of pages with free space). Space freed later by
    /// ghost cleanup is found at the next search after a delete.
    may_have_room: std::sync::atomic::AtomicBool,
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
        let heap = Heap::attach(au_id, name, columns);
        db.set_unit_descriptor(au_id, heap.descriptor())?;
        Ok(heap)
    }

    /// The heap's schema for its unit descriptor (kind 2, name, columns): recovery's undo.
    /// The columns of the heap's records.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub fn descriptor(&self) -> Vec<u8> {
        let mut out = vec![DESCRIPTOR_HEAP, self.name.len().min(255) as u8];
        out.extend_from_slice(&self.name.as_bytes()[..self.name.len().min(255)]);
        record::encode_columns(&self.columns, &mut out);
        out
    }

    /// The heap a descriptor describes (None if it is not a heap's).
    pub fn from_descriptor(au_id: u64, bytes: &[u8]) -> Option<Heap> {
        if bytes.first() != Some(&DESCRIPTOR_HEAP) {
            return None;
        }
        let len = usize::from(*bytes.get(1)?);
        let name = String::from_utf8(bytes.get(2..2 + len)?.to_vec()).ok()?;
        let mut at = 2 + len;
        let columns = record::decode_columns_desc(bytes, &mut at)?;
        Some(Heap::attach(au_id, &name, columns))
    }

    /// X on the row (RID) and IX on the heap, for a change in a transaction.
    fn lock_row(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        let object = LockResource::Object { database_id: db.database_id, au_id: self.au_id };
        xact::lock(db, object, LockMode::IX)?;
        let row = LockResource::Key {
            database_id: db.database_id,
            au_id: self.au_id,
            hash: u64::from_le_bytes(rid.to_bytes()) & 0xFFFF_FFFF_FFFF,
        };
        xact::lock(db, row, LockMode::X)
    }

    /// Undoes a transaction's change to this heap (a compensation).
    pub(crate) fn undo(&self, db: &Database, op: &xact::RowOp) -> SqlResult<()> {
        // Undoing an insert or an update can leave room on a page.
        self.may_have_room.store(true, std::sync::atomic::Ordering::Relaxed);
        match op {
            xact::RowOp::HeapInsert { rid, .. } => {
                let rid = Rid::from_bytes(rid);
                db.buffer_pool().in_mtr(|| {
                    xact::log_row_op(db, op.clone())?;
                    self.remove(db, rid)
                })
            }
            xact::RowOp::HeapDelete { target, record, .. } => {
                let target = Rid::from_bytes(target);
                db.buffer_pool().in_mtr(|| {
                    let guard =
                        db.buffer_pool().fetch(Self::key(db, target.page), LatchMode::Ex)?;
                    guard
                        .write(|buf| datapage::replace(buf, target.slot, record))?
                        .map_err(|bad| corrupt(db, target.page, bad.0))?;
                    xact::log_row_op(db, op.clone())?;
                    Ok(())
                })
            }
            xact::RowOp::HeapUpdate { rid, record, .. } => {
                let values = self.decode(db, Rid::from_bytes(rid).page, record)?;
                self.update_row(db, Rid::from_bytes(rid), &values)?;
                // Its CLR, so that a rollback cut short resumes after it.
                db.buffer_pool().in_mtr(|| {
                    xact::log_row_op(db, op.clone())?;
                    Ok(())
                })
            }
            _ => Err(SqlError::log_corrupt(&db.name, 4)),
        }
    }

    /// After a commit: empties the slot of a row the transaction ghosted (and of its forwarded
    /// record, if it had moved).
    pub(crate) fn remove_ghosted(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        let Some(bytes) = self.read_raw(db, rid)? else { return Ok(()) };
        if record::record_type(bytes[0]) == RecordType::ForwardingStub as u8 {
            let target = Rid::from_bytes(&bytes[1..9]);
            if self.read_raw(db, target)?.is_some() {
                self.remove(db, target)?;
            }
        }
        self.remove(db, rid)
    }

    /// A heap over an existing allocation unit.
    pub fn attach(au_id: u64, name: &str, columns: Vec<Column>) -> Heap {
        let layout = Layout::new(&columns);
        Heap {
            au_id,
            name: name.to_string(),
            columns,
            layout,
            last_page: Mutex::new(None),
            may_have_room: std::sync::atomic::AtomicBool::new(true),
        }
    }

    fn key(db: &Database, page: PageId) -> PageKey {
        PageKey::new(db.database_id, page)
    }

    /// Inserts a row and returns its RID.
    ///
    /// In a transaction the insert is undoable (LOP_INSERT_ROWS, LCX_HEAP) and the new row is
    /// X-locked until the transaction ends.
    pub fn insert(&self, db: &Database, values: &[Value]) -> SqlResult<Rid> {
        // Between rows the session holds no latch: its quantum may end here.
        crate::scheduler::yield_point();
        let record = record::encode(&self.columns, &self.layout, values, RecordType::Primary)?;
        if !xact::is_open(db.database_id) {
            return self.place(db, &record, None);
        }
        let object = LockResource::Object { database_id: db.database_id, au_id: self.au_id };
        xact::lock(db, object, LockMode::IX)?;
        let rid = db.buffer_pool().in_mtr(|| {
            let rid = self.place(db, &record, None)?;
            let op = xact::RowOp::HeapInsert { au_id: self.au_id, rid: rid.to_bytes() };
            xact::log_row_op(db, op)?;
            Ok(rid)
        })?;
        // A new RID: nobody else can hold its lock (deleted rows keep their slots until commit).
        self.lock_row(db, rid)?;
        Ok(rid)
    }

    /// Puts a record on a page with room (not `avoid`), allocating a page if none has room.
    fn place(&self, db: &Database, record: &[u8], avoid: Option<PageId>) -> SqlResult<Rid> {
        // The page the last insert used first; the PFS search only when it is full (bug fix:
        // the search ran before every insert, so filling a heap took time quadratic in its
        // pages).
        let hint = *self.last_page.lock();
        if let Some(page) = hint.filter(|p| Some(*p) != avoid)
            && let Some(rid) = self.try_page(db, page, record)?
        {
            return Ok(rid);
        }
        let may_have_room = self.may_have_room.load(std::sync::atomic::Ordering::Relaxed);
        for page in if may_have_room { self.pages_with_room(db, record.len())? } else { Vec::new() }
        {
            if Some(page) == avoid || Some(page) == hint {
                continue;
            }
            if let Some(rid) = self.try_page(db, page, record)? {
                return Ok(rid);
            }
        }
        self.may_have_room.store(false, std::sync::atomic::Ordering::Relaxed);
        let page = db.allocate_page_at_level(self.au_id, 0)?;
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

    /// Inserts the record on `page` if it fits there, and makes it the next insert's hint.
    fn try_page(&self, db: &Database, page: PageId, record: &[u8]) -> SqlResult<Option<Rid>> {
        let guard = db.buffer_pool().fetch(Self::key(db, page), LatchMode::Ex)?;
        let Some(slot) = self.insert_on(db, &guard, record)? else { return Ok(None) };
        *self.last_page.lock() = Some(page);
        Ok(Some(Rid { page, slot }))
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
                .read_raw(db, target)?
                .ok_or_else(|| corrupt(db, target.page, "forwarding stub points nowhere"))?;
            if is_ghost(moved[0]) {
                return Ok(None); // deleted by a transaction not yet committed
            }
            return self.decode(db, target.page, &moved).map(Some);
        }
        self.decode(db, rid.page, &bytes).map(Some)
    }

    /// A primary or forwarded record's values.
    pub(crate) fn decode_record(&self, bytes: &[u8]) -> Result<Vec<Value>, record::BadRecord> {
        record::decode(&self.columns, &self.layout, bytes)
    }

    fn decode(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<Vec<Value>> {
        record::decode(&self.columns, &self.layout, bytes).map_err(|bad| corrupt(db, page, bad.0))
    }

    /// The record at `rid`; None if the slot is empty or holds a row deleted by a transaction
    /// (a ghost until it commits).
    fn read_record(&self, db: &Database, rid: Rid) -> SqlResult<Option<Vec<u8>>> {
        let record = self.read_raw(db, rid)?;
        Ok(record.filter(|bytes| !is_ghost(bytes[0])))
    }

    fn read_raw(&self, db: &Database, rid: Rid) -> SqlResult<Option<Vec<u8>>> {
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

    /// For a row that moved: where it lives now and the back-pointer its forwarded record
    /// carries (the stub's RID, so `rid` itself when the chain is sound). None if it never moved.
    pub fn forwarded(&self, db: &Database, rid: Rid) -> SqlResult<Option<(Rid, Rid)>> {
        let Some(bytes) = self.read_raw(db, rid)? else { return Ok(None) };
        if record::record_type(bytes[0]) != RecordType::ForwardingStub as u8 {
            return Ok(None);
        }
        let target = Rid::from_bytes(&bytes[1..9]);
        let moved = self
            .read_raw(db, target)?
            .ok_or_else(|| corrupt(db, target.page, "forwarding stub points nowhere"))?;
        let back = record::back_pointer(&moved)
            .ok_or_else(|| corrupt(db, target.page, "forwarded record without a back-pointer"))?;
        Ok(Some((target, Rid::from_bytes(&back))))
    }

    /// The number of rows, page by page in IAM order, without decoding a row: primary records
    /// and forwarding stubs (a moved row counts once, at its stub), not forwarded records or
    /// ghosts. No row locks are taken; the caller locks the table.
    pub fn count_rows(&self, db: &Database) -> SqlResult<u64> {
        let mut count = 0u64;
        let mut read_ahead = crate::readahead::ReadAhead::for_unit(db, self.au_id)?;
        for page in self.pages(db)? {
            if let Some(read_ahead) = &mut read_ahead {
                read_ahead.before(db, page)?;
            }
            let guard = db.buffer_pool().fetch(Self::key(db, page), LatchMode::Sh)?;
            let live = guard
                .read(|buf| {
                    let mut live = 0u64;
                    for slot in 0..datapage::slot_count(buf) {
                        if datapage::is_empty_slot(buf, slot) {
                            continue;
                        }
                        let kind = record::record_type(datapage::record(buf, slot)?[0]);
                        let counted = kind != RecordType::Forwarded as u8
                            && kind != RecordType::GhostData as u8;
                        live += u64::from(counted);
                    }
                    Ok(live)
                })
                .map_err(|bad: record::BadRecord| corrupt(db, page, bad.0))?;
            count += live;
        }
        Ok(count)
    }

    /// Every row, in IAM order: (RID, values). A forwarded row is returned at its stub's RID.
    pub fn scan(&self, db: &Database) -> SqlResult<Vec<(Rid, Vec<Value>)>> {
        let mut rows = Vec::new();
        let mut read_ahead = crate::readahead::ReadAhead::for_unit(db, self.au_id)?;
        for page in self.pages(db)? {
            if let Some(read_ahead) = &mut read_ahead {
                read_ahead.before(db, page)?;
            }
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
                    t if t == RecordType::Forwarded as u8 || t == RecordType::GhostData as u8 => {
                        continue;
                    }
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
    ///
    /// In a transaction the row is X-locked and the old row is logged first (LOP_MODIFY_ROW,
    /// LCX_HEAP), so that the undo (updating the row back) is possible whatever part of the
    /// change reached the log.
    pub fn update(&self, db: &Database, rid: Rid, values: &[Value]) -> SqlResult<()> {
        crate::scheduler::yield_point();
        self.may_have_room.store(true, std::sync::atomic::Ordering::Relaxed);
        if xact::is_open(db.database_id) && !xact::compensating() {
            self.lock_row(db, rid)?;
            let old = self
                .get(db, rid)?
                .ok_or_else(|| corrupt(db, rid.page, "updating an empty slot"))?;
            let old = record::encode(&self.columns, &self.layout, &old, RecordType::Primary)?;
            let op =
                xact::RowOp::HeapUpdate { au_id: self.au_id, rid: rid.to_bytes(), record: old };
            db.buffer_pool().in_mtr(|| {
                xact::log_row_op(db, op)?;
                Ok(())
            })?;
        }
        self.update_row(db, rid, values)
    }

    fn update_row(&self, db: &Database, rid: Rid, values: &[Value]) -> SqlResult<()> {
        let current = self
            .read_record(db, rid)?
            .ok_or_else(|| corrupt(db, rid.page, "updating an empty slot"))?;
        let forwarded_to = (record::record_type(current[0]) == RecordType::ForwardingStub as u8)
            .then(|| Rid::from_bytes(&current[1..9]));
        let home = forwarded_to.unwrap_or(rid);
        let kind = if forwarded_to.is_some() { RecordType::Forwarded } else { RecordType::Primary };
        let mut record = record::encode(&self.columns, &self.layout, values, kind)?;
        if forwarded_to.is_some() {
            record = with_back_pointer(record, rid);
        }
        let guard = db.buffer_pool().fetch(Self::key(db, home.page), LatchMode::Ex)?;
        let replaced = guard
            .write(|buf| datapage::replace(buf, home.slot, &record))?
            .map_err(|bad| corrupt(db, home.page, bad.0))?;
        if replaced {
            return self.update_pfs(db, &guard);
        }
        drop(guard);
        let moved = with_back_pointer(
            record::encode(&self.columns, &self.layout, values, RecordType::Forwarded)?,
            rid,
        );
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
    ///
    /// In a transaction the row is X-locked and becomes a ghost (LOP_DELETE_ROWS, LCX_HEAP):
    /// its slot stays taken until the commit empties it, so a rollback can put it back.
    pub fn delete(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        crate::scheduler::yield_point();
        self.may_have_room.store(true, std::sync::atomic::Ordering::Relaxed);
        if xact::is_open(db.database_id) && !xact::compensating() {
            return self.delete_in_transaction(db, rid);
        }
        let current = self
            .read_record(db, rid)?
            .ok_or_else(|| corrupt(db, rid.page, "deleting an empty slot"))?;
        if record::record_type(current[0]) == RecordType::ForwardingStub as u8 {
            self.remove(db, Rid::from_bytes(&current[1..9]))?;
        }
        self.remove(db, rid)
    }

    fn delete_in_transaction(&self, db: &Database, rid: Rid) -> SqlResult<()> {
        self.lock_row(db, rid)?;
        let current = self
            .read_record(db, rid)?
            .ok_or_else(|| corrupt(db, rid.page, "deleting an empty slot"))?;
        let target = if record::record_type(current[0]) == RecordType::ForwardingStub as u8 {
            Rid::from_bytes(&current[1..9])
        } else {
            rid
        };
        db.buffer_pool().in_mtr(|| {
            let guard = db.buffer_pool().fetch(Self::key(db, target.page), LatchMode::Ex)?;
            let original = guard
                .read(|buf| datapage::record(buf, target.slot).map(<[u8]>::to_vec))
                .map_err(|bad| corrupt(db, target.page, bad.0))?;
            guard
                .write(|buf| datapage::make_ghost(buf, target.slot))?
                .map_err(|bad| corrupt(db, target.page, bad.0))?;
            let op = xact::RowOp::HeapDelete {
                au_id: self.au_id,
                rid: rid.to_bytes(),
                target: target.to_bytes(),
                record: original,
            };
            xact::log_row_op(db, op)?;
            Ok(())
        })?;
        xact::defer_heap_removal(db.database_id, self.au_id, rid.to_bytes());
        Ok(())
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
