//! Clustered B-tree indexes (reference §1.4-§1.6): leaf pages (m_type 1, level 0) hold the rows
//! in key order; index pages (m_type 2, level >= 1) hold one entry per child: the child's
//! lowest key and its page id. Pages of a level are linked through m_prevPage / m_nextPage.
//!
//! Concurrency is latch coupling ("crabbing"):
//! - readers descend with SH latches, latching a child before releasing its parent, and scan
//!   forward along the leaf level the same way; backward scans release a page before latching
//!   its left neighbour, so no two sessions ever wait for each other in opposite directions;
//! - an insert first tries optimistically (SH down to the leaves' parent, EX on the leaf); if the
//!   leaf is full it tries again with the parent EX and splits the leaf under it when the parent
//!   has room for one more entry; only if the parent is full too does it start again from the
//!   root with EX latches, releasing the ancestors of any page that can take one more entry
//!   without splitting ("safe"), and split bottom-up. So the root is latched EX only when a
//!   split climbs that high;
//! - after a session split the last leaf for an ascending key, its next insert into the index
//!   latches that split's parent EX directly, without the root, when the parent still shows it
//!   is the last page of level 1 and the key is at or past its last entry
//!   ([`BTree::append_parent`]): the path of seed 002's identity key, which splits at every
//!   row;
//! - a delete, which keeps the tree's shape, descends as the optimistic insert does: SH down to
//!   the leaves' parent, EX on the leaf only.
//!
//! Latch order (no deadlocks): down the tree, then left to right along a level, then allocation
//! pages (a split allocates a page while holding its data pages), as the buffer pool requires.
//!
//! Splits: a middle split by bytes for keys that land inside a page, and the append-only split
//! for a key beyond the end of the rightmost leaf (the new page gets only the new row), so an
//! ascending key fills pages completely while random GUIDs leave them about half full.
//!
//! Deletes turn the row into a ghost (record type 6, m_ghostRecCnt, PFS ghost bit 0x08);
//! [`BTree::ghost_cleanup`] removes ghosts later, leaving at least one record per page.
//!
//! Deviations: the root page never moves: when it splits, its records move to two new pages and
//! it becomes their parent (SQL Server allocates a new root and updates the catalog), so the
//! root's page id identifies the index until the catalog exists. Index records use the data
//! record layout with record type 3 (SQL Server drops status byte B in index records).
//! A non-unique clustered index keeps a hidden uniquifier column as the last key column, stored
//! as a nullable varbinary(4) big-endian (NULL for 0, so the first row of a key stores nothing,
//! as in SQL Server, where it is a 4-byte int in the variable section). Nonclustered indexes are
//! trees of (index key, row locator) rows on index pages; keeping them in step with their table
//! is the caller's job until tables exist in the catalog (the T-SQL issue). An insert that
//! follows its session's ascending split skips the root (above): SQL Server's descent order is
//! undocumented, and every descent there is assumed to start at the root, so such an insert
//! here takes one SH latch on the root and one logical read fewer.
//!
//! Invariants (checked by [`BTree::check`]):
//! 1. Keys ascend within every page and across each level's page chain.
//! 2. Every key under an index entry is >= the entry's key and < the next entry's key.
//! 3. Every leaf is at level 0 and every child is one level below its parent.
//! 4. m_prevPage / m_nextPage agree at every level.
//! 5. No declared key is longer than [`MAX_CLUSTERED_KEY_BYTES`] (clustered) or
//!    [`MAX_NONCLUSTERED_KEY_BYTES`] (nonclustered), so an index page holds at least four
//!    entries and every level has fewer pages than the one below (the catalog checks it
//!    before a row goes in: `Table::check_key_lengths`).

use crate::buffer::{PageGuard, PageKey};
use crate::database::Database;
use crate::datapage;
use crate::error::{SqlError, SqlResult};
use crate::latch::LatchMode;
use crate::lock::{LockMode, LockResource};
use crate::page::{PageBuf, PageHeader, PageType};
use crate::record::{self, BadRecord, Column, Layout, RecordType, SqlType, Value, compare_keys};
use crate::units::{PAGE_HEADER_SIZE, PAGE_SIZE, PageId};
use crate::xact;
use smallvec::SmallVec;
use std::cmp::Ordering;

/// The latched ancestors a split may have to change, each with the slot of its entry for the
/// child below it (on the stack: an ascending insert's split keeps just the leaf's parent).
type LatchPath<'p> = SmallVec<[(PageGuard<'p>, u16); 4]>;

/// The longest key of a clustered index and of a nonclustered one (SQL Server 2016 on).
pub const MAX_CLUSTERED_KEY_BYTES: usize = 900;
pub const MAX_NONCLUSTERED_KEY_BYTES: usize = 1700;

/// Bytes a value takes in a record: a fixed type's size, a variable one's actual length.
pub fn stored_length(sql_type: SqlType, value: &Value) -> usize {
    if let Some(size) = sql_type.fixed_size() {
        return size.max(1);
    }
    match value {
        Value::Text(text) if matches!(sql_type, SqlType::NVarChar(_)) => {
            2 * text.encode_utf16().count()
        }
        Value::Text(text) => text.len(),
        Value::Bytes(bytes) => bytes.len(),
        _ => 0,
    }
}

/// How many times an insert may restart after finding a page changed under it.
const MAX_RESTARTS: u32 = 1000;

thread_local! {
    /// The allocation unit whose last insert on this thread split its last leaf for an
    /// ascending key (0: none, or the insert after it found room). The next insert into it
    /// starts with the attempt that latches the leaf's parent EX, skipping the SH descent that
    /// would find the leaf full again: seed 002's identity key fills each new page with one
    /// row. Its descent also compares the key with each index page's last entry before any
    /// binary search ([`BTree::level_and_entry`]). Random keys (middle splits) leave it unset,
    /// so their inserts still take the SH descent first. Which attempt comes first changes no
    /// outcome, only how many descents an insert makes; SQL Server's own order is not
    /// documented.
    static LAST_SPLIT_AU: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The level-1 page that took the entry of this thread's last ascending split of a leaf,
    /// with its index's allocation unit ((0, null): none, or that split's parent split too).
    /// The next insert into that index latches it directly ([`BTree::append_parent`]) instead
    /// of descending from the root, when the page still shows it is the leaves' parent for
    /// the key.
    static APPEND_PARENT: std::cell::Cell<(u64, PageId)> =
        const { std::cell::Cell::new((0, PageId::NULL)) };
    /// The buffer this thread encodes its inserted rows into, kept from row to row: an
    /// nchar(2048) row would otherwise be a 4 KB allocation and free each time.
    static ROW_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// The buffer this thread encodes index entries into: its inserts' undo keys before they
    /// are copied inline ([`BTree::undo_key`]), and a split's entry for the parent (handed
    /// back once the parent has it; a nested split's entry takes a buffer of its own).
    static ENTRY_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A clustered index.
pub struct BTree {
    pub au_id: u64,
    pub root: PageId,
    pub table: String,
    pub index_name: String,
    pub primary_key: bool,
    /// False: a non-unique clustered index, whose rows carry a hidden uniquifier column.
    pub unique: bool,
    /// m_type of the leaves: data pages for a clustered index, index pages for a nonclustered one.
    pub leaf_type: PageType,
    columns: Vec<Column>,
    layout: Layout,
    key_columns: Vec<usize>,
    entry_columns: Vec<Column>,
    entry_layout: Layout,
    /// The key columns' positions in an index entry (all but the child pointer).
    entry_key_columns: Vec<usize>,
    /// The largest index entry, for the "safe page" test.
    max_entry_bytes: usize,
    /// In-place comparers of a leaf record's key and of an index entry's key, where the key
    /// types allow ([`record::KeyComparer`]).
    leaf_comparer: Option<record::KeyComparer>,
    entry_comparer: Option<record::KeyComparer>,
    /// The table's first key column is NOT NULL: an index page's entries after the first
    /// (which stands for minus infinity, its key NULL) hold no NULL there.
    entry_keys_not_null: bool,
}

/// The first byte of a B-tree's unit descriptor.
pub const DESCRIPTOR_BTREE: u8 = 1;

/// Where a key falls in a leaf.
#[derive(Clone, Copy)]
enum LeafSlot {
    /// A live row with this key.
    Found(u16),
    /// A ghost with this key.
    Ghost(u16),
    /// No row with this key; it would go at this slot.
    Absent(u16),
}

fn bad_page(db: &Database, page: PageId, what: &str) -> SqlError {
    SqlError::new(
        5250,
        16,
        3,
        format!(
            "Database error: index page {page} for database '{}' (database ID {}) is invalid ({what}). This error cannot be repaired. You must restore from backup.",
            db.name, db.database_id
        ),
    )
}

impl BTree {
    /// Creates an empty unique clustered index on `key_columns` (positions in `columns`).
    pub fn create(
        db: &Database,
        table: &str,
        index_name: &str,
        columns: Vec<Column>,
        key_columns: Vec<usize>,
        primary_key: bool,
        filegroup: Option<&str>,
    ) -> SqlResult<BTree> {
        Self::create_with(db, table, index_name, filegroup, |au_id, root| {
            BTree::attach(au_id, root, table, index_name, columns, key_columns, primary_key)
        })
    }

    /// Creates an index: its allocation unit, an empty root leaf, and the unit's descriptor.
    fn create_with(
        db: &Database,
        table: &str,
        index_name: &str,
        filegroup: Option<&str>,
        attach: impl FnOnce(u64, PageId) -> BTree,
    ) -> SqlResult<BTree> {
        let au_id = db.create_allocation_unit(&format!("{table}.{index_name}"), filegroup)?;
        let root = db.allocate_page(au_id)?;
        let tree = attach(au_id, root);
        let guard = db.buffer_pool().new_page(PageKey::new(db.database_id, root))?;
        guard.write(|buf| {
            datapage::format(buf, root, tree.leaf_type, au_id, 0, tree.layout.pminlen() as u16)
        })?;
        db.set_unit_descriptor(au_id, tree.descriptor())?;
        Ok(tree)
    }

    /// Creates an empty nonclustered index. Its rows are the index key columns followed by the
    /// row locator: the clustered key of a clustered table, or the 8-byte RID of a heap (as a
    /// binary(8)). A unique index keys on the index columns alone (a duplicate is 2601); a
    /// non-unique one keys on the whole row, locator included, as SQL Server does. Its leaves
    /// are index pages (m_type 2).
    pub fn create_nonclustered(
        db: &Database,
        table: &str,
        index_name: &str,
        key_columns: Vec<Column>,
        locator_columns: Vec<Column>,
        unique: bool,
        filegroup: Option<&str>,
    ) -> SqlResult<BTree> {
        Self::create_with(db, table, index_name, filegroup, |au_id, root| {
            let (key, locator) = (key_columns, locator_columns);
            BTree::attach_nonclustered(au_id, root, table, index_name, key, locator, unique)
        })
    }

    /// An existing nonclustered index.
    pub fn attach_nonclustered(
        au_id: u64,
        root: PageId,
        table: &str,
        index_name: &str,
        key_columns: Vec<Column>,
        locator_columns: Vec<Column>,
        unique: bool,
    ) -> BTree {
        let keyed =
            if unique { key_columns.len() } else { key_columns.len() + locator_columns.len() };
        let columns: Vec<Column> = key_columns.into_iter().chain(locator_columns).collect();
        let mut tree =
            BTree::attach(au_id, root, table, index_name, columns, (0..keyed).collect(), false);
        tree.leaf_type = PageType::Index;
        tree
    }

    /// Creates an empty non-unique clustered index: rows with equal keys get a uniquifier
    /// (0 for the first, stored as nothing; 1, 2, ... for the duplicates), as SQL Server does.
    pub fn create_non_unique(
        db: &Database,
        table: &str,
        index_name: &str,
        columns: Vec<Column>,
        key_columns: Vec<usize>,
        filegroup: Option<&str>,
    ) -> SqlResult<BTree> {
        Self::create_with(db, table, index_name, filegroup, |au_id, root| {
            BTree::attach_non_unique(au_id, root, table, index_name, columns, key_columns)
        })
    }

    /// An existing non-unique clustered index.
    pub fn attach_non_unique(
        au_id: u64,
        root: PageId,
        table: &str,
        index_name: &str,
        mut columns: Vec<Column>,
        mut key_columns: Vec<usize>,
    ) -> BTree {
        columns.push(Column::new(UNIQUIFIER, SqlType::VarBinary(4), true));
        key_columns.push(columns.len() - 1);
        let mut tree = BTree::attach(au_id, root, table, index_name, columns, key_columns, false);
        tree.unique = false;
        tree
    }

    /// An existing unique index: its allocation unit and root page.
    pub fn attach(
        au_id: u64,
        root: PageId,
        table: &str,
        index_name: &str,
        columns: Vec<Column>,
        key_columns: Vec<usize>,
        primary_key: bool,
    ) -> BTree {
        let layout = Layout::new(&columns);
        let mut entry_columns: Vec<Column> =
            key_columns.iter().map(|i| columns[*i].clone()).collect();
        for column in &mut entry_columns {
            column.nullable = true;
        }
        entry_columns.push(Column::new("child", SqlType::Binary(6), false));
        let entry_layout = Layout::new(&entry_columns);
        let entry_key_columns: Vec<usize> = (0..entry_columns.len() - 1).collect();
        let key_bytes: usize = entry_columns
            .iter()
            .map(|c| c.sql_type.fixed_size().unwrap_or_else(|| c.sql_type.max_var_size() + 2))
            .sum();
        let max_entry_bytes = 4 + key_bytes + 2 + entry_columns.len().div_ceil(8) + 2;
        let leaf_comparer = record::KeyComparer::new(&columns, &layout, &key_columns);
        let entry_keys_not_null = key_columns.first().is_some_and(|i| !columns[*i].nullable);
        let entry_comparer =
            record::KeyComparer::new(&entry_columns, &entry_layout, &entry_key_columns);
        BTree {
            au_id,
            root,
            table: table.to_string(),
            index_name: index_name.to_string(),
            primary_key,
            unique: true,
            leaf_type: PageType::Data,
            columns,
            layout,
            key_columns,
            entry_columns,
            entry_layout,
            entry_key_columns,
            max_entry_bytes,
            leaf_comparer,
            entry_comparer,
            entry_keys_not_null,
        }
    }

    /// The index's schema, kept with its allocation unit in the boot page so that recovery can
    /// undo row changes without a catalog: kind 1, table, index name, flags (primary key,
    /// unique), leaf m_type, root page, columns, key column positions.
    pub fn descriptor(&self) -> Vec<u8> {
        let mut out = vec![DESCRIPTOR_BTREE];
        for name in [&self.table, &self.index_name] {
            out.push(name.len().min(255) as u8);
            out.extend_from_slice(&name.as_bytes()[..name.len().min(255)]);
        }
        out.push(u8::from(self.primary_key) | u8::from(self.unique) << 1);
        out.push(self.leaf_type as u8);
        out.extend_from_slice(&self.root.to_bytes());
        record::encode_columns(&self.columns, &mut out);
        out.extend_from_slice(&(self.key_columns.len() as u16).to_le_bytes());
        for key in &self.key_columns {
            out.extend_from_slice(&(*key as u16).to_le_bytes());
        }
        out
    }

    /// The index a descriptor describes (None if it is not a B-tree's).
    pub fn from_descriptor(au_id: u64, bytes: &[u8]) -> Option<BTree> {
        if bytes.first() != Some(&DESCRIPTOR_BTREE) {
            return None;
        }
        let mut at = 1;
        let mut names = Vec::new();
        for _ in 0..2 {
            let len = usize::from(*bytes.get(at)?);
            names.push(String::from_utf8(bytes.get(at + 1..at + 1 + len)?.to_vec()).ok()?);
            at += 1 + len;
        }
        let flags = *bytes.get(at)?;
        let leaf_type = if *bytes.get(at + 1)? == PageType::Index as u8 {
            PageType::Index
        } else {
            PageType::Data
        };
        let root = PageId::from_bytes(bytes.get(at + 2..at + 8)?);
        at += 8;
        let columns = record::decode_columns_desc(bytes, &mut at)?;
        let count = usize::from(u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]));
        at += 2;
        let mut key_columns = Vec::with_capacity(count);
        for i in 0..count {
            let b = bytes.get(at + 2 * i..at + 2 * i + 2)?;
            key_columns.push(usize::from(u16::from_le_bytes([b[0], b[1]])));
        }
        let mut tree =
            BTree::attach(au_id, root, &names[0], &names[1], columns, key_columns, flags & 1 != 0);
        tree.unique = flags & 2 != 0;
        tree.leaf_type = leaf_type;
        Some(tree)
    }

    fn key(db: &Database, page: PageId) -> PageKey {
        PageKey::new(db.database_id, page)
    }

    /// The key columns of a row, inline for keys of up to four columns (no allocation per
    /// insert).
    fn key_of(&self, values: &[Value]) -> SmallVec<[Value; 4]> {
        self.key_columns.iter().map(|i| values[*i].clone()).collect()
    }

    /// The key of a leaf row, decoding only the key columns.
    fn leaf_key(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<Vec<Value>> {
        record::decode_columns(&self.columns, &self.layout, bytes, &self.key_columns)
            .map_err(|bad| bad_page(db, page, bad.0))
    }

    /// A leaf record's key against a bound that may be a prefix of the key.
    fn compare_record_prefix(
        &self,
        db: &Database,
        page: PageId,
        bytes: &[u8],
        bound: &[Value],
    ) -> SqlResult<Ordering> {
        let wanted = &self.key_columns[..bound.len().min(self.key_columns.len())];
        record::compare_record_key(&self.columns, &self.layout, bytes, wanted, bound)
            .map_err(|bad| bad_page(db, page, bad.0))
    }

    fn row_of(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<Vec<Value>> {
        record::decode(&self.columns, &self.layout, bytes).map_err(|bad| bad_page(db, page, bad.0))
    }

    fn entry_of(
        &self,
        db: &Database,
        page: PageId,
        bytes: &[u8],
    ) -> SqlResult<(Vec<Value>, PageId)> {
        let mut values = record::decode(&self.entry_columns, &self.entry_layout, bytes)
            .map_err(|bad| bad_page(db, page, bad.0))?;
        let Some(Value::Bytes(child)) = values.pop() else {
            return Err(bad_page(db, page, "index entry without a child"));
        };
        Ok((values, PageId::from_bytes(&child)))
    }

    /// An index entry's child page, read in place (the pointer is the entry's last column,
    /// fixed-length and NOT NULL).
    fn child_of(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<PageId> {
        let child_column = self.entry_columns.len() - 1;
        record::fixed_column_bytes(&self.entry_columns, &self.entry_layout, bytes, child_column)
            .map(PageId::from_bytes)
            .map_err(|bad| bad_page(db, page, bad.0))
    }

    /// A split's entry for its parent, encoded into the thread's [`ENTRY_BUFFER`] (taken: the
    /// caller puts it back once the parent has the entry, as [`BTree::split`] and
    /// [`BTree::split_root`] do; a second entry made meanwhile gets a buffer of its own).
    fn encode_entry(&self, key: &[Value], child: PageId) -> SqlResult<Vec<u8>> {
        // Written straight from the key and the pointer (an insert's undo key goes through
        // the same encoder, [`BTree::undo_key`]).
        let mut entry = ENTRY_BUFFER.take();
        record::encode_index_entry_into(
            &self.entry_columns,
            &self.entry_layout,
            key,
            &child.to_bytes(),
            &mut entry,
        )?;
        Ok(entry)
    }

    /// The undo key of an insert: `key`'s index entry with a null child pointer, encoded in
    /// this thread's entry buffer and copied inline ([`xact::UndoKey`]).
    fn undo_key(&self, key: &[Value]) -> SqlResult<xact::UndoKey> {
        let mut entry = ENTRY_BUFFER.take();
        let encoded = record::encode_index_entry_into(
            &self.entry_columns,
            &self.entry_layout,
            key,
            &PageId::NULL.to_bytes(),
            &mut entry,
        );
        let undo_key = encoded.map(|()| xact::UndoKey::from_slice(&entry));
        ENTRY_BUFFER.set(entry);
        undo_key
    }

    /// The key of a record: a row on a leaf, an entry on an index page.
    fn record_key(
        &self,
        db: &Database,
        page: PageId,
        level: u8,
        bytes: &[u8],
    ) -> SqlResult<Vec<Value>> {
        if level == 0 { self.leaf_key(db, page, bytes) } else { self.entry_key(db, page, bytes) }
    }

    /// The key of an index entry, without its child pointer.
    fn entry_key(&self, db: &Database, page: PageId, bytes: &[u8]) -> SqlResult<Vec<Value>> {
        record::decode_columns(
            &self.entry_columns,
            &self.entry_layout,
            bytes,
            &self.entry_key_columns,
        )
        .map_err(|bad| bad_page(db, page, bad.0))
    }

    fn level(buf: &PageBuf) -> u8 {
        crate::page::header_level(&buf[..])
    }

    fn records<'b>(db: &Database, page: PageId, buf: &'b PageBuf) -> SqlResult<Vec<&'b [u8]>> {
        (0..datapage::slot_count(buf))
            .map(|slot| datapage::record(buf, slot).map_err(|bad| bad_page(db, page, bad.0)))
            .collect()
    }

    /// Locates a key on a leaf by binary search.
    fn find_in_leaf(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
        key: &[Value],
    ) -> SqlResult<LeafSlot> {
        datapage::touch_records(buf);
        self.search_leaf(buf, key).map_err(|bad| bad_page(db, page, bad.0))
    }

    /// [`BTree::find_in_leaf`]'s binary search, its errors naming no page yet: a page's
    /// corruption is turned into an error once, not at each probe.
    fn search_leaf(&self, buf: &PageBuf, key: &[Value]) -> Result<LeafSlot, BadRecord> {
        let records = datapage::RecordArea::of(buf)?;
        let prepared = self.leaf_comparer.as_ref().and_then(|c| c.prepare(key));
        let (mut low, mut high) = (0u16, records.slot_count());
        while low < high {
            let mid = (low + high) / 2;
            let bytes = records.prefix(mid)?;
            let order = match (&self.leaf_comparer, &prepared) {
                (Some(comparer), Some(prepared)) => comparer.compare_prepared(bytes, prepared)?,
                _ => self.compare_leaf_key(bytes, key)?,
            };
            match order {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => {
                    let ghost = is_ghost(bytes[0]);
                    return Ok(if ghost { LeafSlot::Ghost(mid) } else { LeafSlot::Found(mid) });
                }
            }
        }
        Ok(LeafSlot::Absent(low))
    }

    /// The entry of an index page whose subtree holds `key` (None: the leftmost, for scans);
    /// entry 0 stands for minus infinity.
    fn child_slot(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
        key: Option<&[Value]>,
        rightmost: bool,
    ) -> SqlResult<u16> {
        let count = datapage::slot_count(buf);
        if count == 0 {
            return Err(bad_page(db, page, "empty index page"));
        }
        let Some(key) = key else { return Ok(if rightmost { count - 1 } else { 0 }) };
        self.search_entries(buf, key).map_err(|bad| bad_page(db, page, bad.0))
    }

    /// [`BTree::child_slot`]'s binary search over a page of at least one entry, its errors
    /// naming no page yet (as [`BTree::search_leaf`]).
    fn search_entries(&self, buf: &PageBuf, key: &[Value]) -> Result<u16, BadRecord> {
        let records = datapage::RecordArea::of(buf)?;
        // The key is prepared once for the search's comparisons, where it can be.
        let prepared = self.entry_comparer.as_ref().and_then(|c| c.prepare(key));
        // Entry 0 is never compared: the entries searched hold the table's key values.
        let prepared =
            prepared.map(|p| if self.entry_keys_not_null { p.for_keys_not_null() } else { p });
        let (mut low, mut high) = (1u16, records.slot_count());
        while low < high {
            let mid = (low + high) / 2;
            records.touch((low + mid) / 2);
            records.touch((mid + 1 + high) / 2);
            let bytes = records.prefix(mid)?;
            let order = match (&self.entry_comparer, &prepared) {
                (Some(comparer), Some(prepared)) => comparer.compare_prepared(bytes, prepared)?,
                _ => self.compare_entry_key(bytes, key)?,
            };
            if order == Ordering::Greater {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Ok(low - 1)
    }

    /// The last entry of an index page if `key` sorts at or after its key (the slot that
    /// [`BTree::child_slot`] would find), else None.
    fn past_last_entry(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
        key: &[Value],
    ) -> SqlResult<Option<u16>> {
        let count = datapage::slot_count(buf);
        if count < 2 {
            return Ok(None); // entry 0 is minus infinity: nothing to compare with
        }
        let last = count - 1;
        Ok((self.compare_entry(db, page, buf, last, key)? != Ordering::Greater).then_some(last))
    }

    /// How the key of index entry `slot` compares with `key`.
    fn compare_entry(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
        slot: u16,
        key: &[Value],
    ) -> SqlResult<Ordering> {
        let bytes = datapage::record_prefix(buf, slot).map_err(|bad| bad_page(db, page, bad.0))?;
        self.compare_entry_key(bytes, key).map_err(|bad| bad_page(db, page, bad.0))
    }

    /// A leaf record's key against `key`: in place where the index has a comparer and the
    /// key's values are of its types, else by [`record::compare_record_key`].
    fn compare_leaf_key(&self, bytes: &[u8], key: &[Value]) -> Result<Ordering, BadRecord> {
        let comparer = self.leaf_comparer.as_ref();
        let (columns, layout) = (&self.columns, &self.layout);
        record::compare_record_key_with(comparer, columns, layout, bytes, &self.key_columns, key)
    }

    /// An index entry's key against `key`, as [`BTree::compare_leaf_key`] compares a row's.
    fn compare_entry_key(&self, bytes: &[u8], key: &[Value]) -> Result<Ordering, BadRecord> {
        let comparer = self.entry_comparer.as_ref();
        let (columns, layout) = (&self.entry_columns, &self.entry_layout);
        record::compare_record_key_with(
            comparer,
            columns,
            layout,
            bytes,
            &self.entry_key_columns,
            key,
        )
    }

    fn child_at(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: Option<&[Value]>,
        rightmost: bool,
    ) -> SqlResult<PageId> {
        self.child_entry(db, guard, key, rightmost).map(|(_, child)| child)
    }

    /// The slot of the entry [`BTree::child_slot`] finds, and the child page it points to.
    fn child_entry(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: Option<&[Value]>,
        rightmost: bool,
    ) -> SqlResult<(u16, PageId)> {
        let page = guard.key().page;
        guard.read(|buf| {
            let slot = self.child_slot(db, page, buf, key, rightmost)?;
            self.entry_at(db, page, buf, slot)
        })
    }

    /// Index entry `slot` and the child page it points to.
    fn entry_at(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
        slot: u16,
    ) -> SqlResult<(u16, PageId)> {
        let bytes = datapage::record(buf, slot).map_err(|bad| bad_page(db, page, bad.0))?;
        Ok((slot, self.child_of(db, page, bytes)?))
    }

    /// Descends with SH latch coupling to the leaf for `key` (leftmost or rightmost if None).
    fn leaf_for_read<'p>(
        &self,
        db: &'p Database,
        key: Option<&[Value]>,
        rightmost: bool,
    ) -> SqlResult<PageGuard<'p>> {
        let mut guard = db.buffer_pool().fetch(Self::key(db, self.root), LatchMode::Sh)?;
        while guard.read(Self::level) > 0 {
            let child = self.child_at(db, &guard, key, rightmost)?;
            guard = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Sh)?;
        }
        Ok(guard)
    }

    fn duplicate(&self, key: &[Value]) -> SqlError {
        let shown = record::format_key(key);
        if self.primary_key {
            SqlError::new(
                2627,
                14,
                1,
                format!(
                    "Violation of PRIMARY KEY constraint '{}'. Cannot insert duplicate key in object '{}'. The duplicate key value is {shown}.",
                    self.index_name, self.table
                ),
            )
        } else {
            SqlError::new(
                2601,
                14,
                1,
                format!(
                    "Cannot insert duplicate key row in object '{}' with unique index '{}'. The duplicate key value is {shown}.",
                    self.table, self.index_name
                ),
            )
        }
    }

    /// Inserts a row; a duplicate key is error 2627 (primary key) or 2601 (unique index). In a
    /// non-unique index the row gets the next uniquifier of its key instead.
    pub fn insert(&self, db: &Database, values: &[Value]) -> SqlResult<()> {
        if self.unique {
            return self.insert_row(db, values);
        }
        self.insert_stored(db, values).map(|_| ())
    }

    /// Inserts a row as [`BTree::insert`] does and returns it as stored: with its uniquifier
    /// last in a non-unique index (NULL for the first row of a key), so that a caller can find
    /// this very row again (a nonclustered index's row locator).
    pub fn insert_stored(&self, db: &Database, values: &[Value]) -> SqlResult<Vec<Value>> {
        if self.unique {
            return self.insert_row(db, values).map(|()| values.to_vec());
        }
        let user_key: Vec<Value> = self.key_columns[..self.key_columns.len() - 1]
            .iter()
            .map(|i| values[*i].clone())
            .collect();
        for _ in 0..MAX_RESTARTS {
            let taken = self.range_full(db, Some(&user_key), Some(&user_key), false, false)?;
            let next = taken
                .iter()
                .filter_map(|row| uniquifier_of(row.last()?))
                .max()
                .map_or(0, |u| u + 1);
            let mut full = values.to_vec();
            full.push(if next == 0 { Value::Null } else { Value::Bytes(uniquifier_bytes(next)) });
            match self.insert_row(db, &full) {
                // Another session took the same uniquifier first: count again.
                Err(error) if error.number == 2601 || error.number == 2627 => continue,
                Err(error) => return Err(error),
                Ok(()) => return Ok(full),
            }
        }
        panic!("insert into {} kept losing uniquifiers", self.index_name)
    }

    /// The key lock of `key` in this index.
    fn key_lock(&self, db: &Database, key: &[Value]) -> LockResource {
        LockResource::Key {
            database_id: db.database_id,
            au_id: self.au_id,
            hash: record::hash_values(key) & 0xFFFF_FFFF_FFFF,
        }
    }

    /// IX on the index and X on the key, for a change in a transaction (before any latch).
    fn lock_for_change(&self, db: &Database, key: &[Value]) -> SqlResult<()> {
        let object = LockResource::Object { database_id: db.database_id, au_id: self.au_id };
        xact::lock(db, object, LockMode::IX)?;
        xact::lock(db, self.key_lock(db, key), LockMode::X)
    }

    fn insert_row(&self, db: &Database, values: &[Value]) -> SqlResult<()> {
        // Between rows the session holds no latch: its quantum may end here.
        crate::scheduler::yield_point();
        let mut record = ROW_BUFFER.take();
        record::encode_into(&self.columns, &self.layout, values, self.leaf_kind(), &mut record)?;
        let inserted = self.insert_encoded(db, values, &record);
        ROW_BUFFER.set(record);
        inserted
    }

    /// [`BTree::insert_row`] once the row is encoded as `record`.
    fn insert_encoded(&self, db: &Database, values: &[Value], record: &[u8]) -> SqlResult<()> {
        let key = self.key_of(values);
        self.lock_for_change(db, &key)?;
        // The undo of an insert needs only the key: it is logged as an index entry (the row
        // itself is in the page changes, once, as in SQL Server's LOP_INSERT_ROWS).
        let mut undo_key = Some(self.undo_key(&key)?);
        let pool = db.buffer_pool();
        // The row's logical record joins the mini-transaction that placed it (once: the
        // attempt that placed the row is the last).
        let mut logged = |placed: bool| {
            if placed {
                let record = undo_key.take().expect("a row is placed once");
                let op = xact::RowOp::Insert { au_id: self.au_id, record };
                xact::log_row_op(db, op)?;
            }
            Ok(placed)
        };
        for _ in 0..MAX_RESTARTS {
            // Each attempt is one mini-transaction: a split is logged and replayed whole. After
            // a split in this index the session starts with the parent EX attempt (an ascending
            // key splits at every new page, so the SH attempt would only fail first).
            let split_expected = LAST_SPLIT_AU.with(|last| last.get() == self.au_id);
            if !split_expected
                && pool.in_mtr(|| {
                    self.insert_optimistic(db, &key, record, false).and_then(&mut logged)
                })?
            {
                return Ok(());
            }
            if pool
                .in_mtr(|| self.insert_optimistic(db, &key, record, true).and_then(&mut logged))?
            {
                return Ok(());
            }
            if pool.in_mtr(|| self.insert_pessimistic(db, &key, record).and_then(&mut logged))? {
                return Ok(());
            }
        }
        panic!("insert into {} restarted {MAX_RESTARTS} times", self.index_name)
    }

    /// Puts a record on a latched leaf if it fits: a new row, or a row replacing its own ghost.
    fn put_on_leaf(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: &[Value],
        record: &[u8],
    ) -> SqlResult<bool> {
        let page = guard.key().page;
        let slot = guard.read(|buf| self.find_in_leaf(db, page, buf, key))?;
        self.place_on_leaf(db, guard, key, slot, record)
    }

    /// Puts `record` where [`BTree::find_in_leaf`] found its key's place; false if the leaf
    /// is full.
    fn place_on_leaf(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: &[Value],
        slot: LeafSlot,
        record: &[u8],
    ) -> SqlResult<bool> {
        match slot {
            LeafSlot::Found(_) => Err(self.duplicate(key)),
            LeafSlot::Ghost(slot) => guard
                .write(|buf| datapage::replace(buf, slot, record))?
                .map_err(|bad| bad_page(db, guard.key().page, bad.0)),
            LeafSlot::Absent(slot) => guard.insert_record(slot, record),
        }
    }

    /// The place of `key` on a leaf, in one read of the page; None if the page is not a leaf
    /// (the tree changed shape under the descent).
    fn leaf_slot(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: &[Value],
    ) -> SqlResult<Option<LeafSlot>> {
        let page = guard.key().page;
        guard.read(|buf| {
            if Self::level(buf) != 0 {
                return Ok(None);
            }
            self.find_in_leaf(db, page, buf, key).map(Some)
        })
    }

    /// An index page's level and, unless it is a leaf, the entry for `key` on it: one read of
    /// the page. A descent reads each page once, since every read takes the frame's data lock,
    /// and the root's and level-1 pages' locks are shared by every inserting session.
    fn level_and_entry(
        &self,
        db: &Database,
        guard: &PageGuard<'_>,
        key: &[Value],
    ) -> SqlResult<(u8, Option<(u16, PageId)>)> {
        let page = guard.key().page;
        // After an ascending split in this index the key most likely belongs past the last
        // entry: one comparison instead of a binary search (the same slot either way).
        let appending = LAST_SPLIT_AU.with(|last| last.get() == self.au_id);
        guard.read(|buf| {
            let level = Self::level(buf);
            if level == 0 {
                return Ok((0, None));
            }
            let last = if appending { self.past_last_entry(db, page, buf, key)? } else { None };
            let slot = match last {
                Some(last) => last,
                None => self.child_slot(db, page, buf, Some(key), false)?,
            };
            Ok((level, Some(self.entry_at(db, page, buf, slot)?)))
        })
    }

    /// SH latches down to the leaves' parent, then EX on the leaf (`split_under_parent` false),
    /// or EX on the parent and the leaf, splitting the leaf if the parent has room for one more
    /// entry (`split_under_parent` true). False when the caller must go further: the leaf is
    /// full, the parent is full too, or the root is the leaf.
    fn insert_optimistic(
        &self,
        db: &Database,
        key: &[Value],
        record: &[u8],
        split_under_parent: bool,
    ) -> SqlResult<bool> {
        let parent_mode = if split_under_parent { LatchMode::Ex } else { LatchMode::Sh };
        let hinted = if split_under_parent { self.append_parent(db, key)? } else { None };
        let found = match hinted {
            Some(found) => Some(found),
            None => self.leaf_parent(db, key, parent_mode)?,
        };
        let Some((parent, slot, child)) = found else {
            return Ok(false);
        };
        let leaf = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Ex)?;
        let Some(leaf_slot) = self.leaf_slot(db, &leaf, key)? else { return Ok(false) };
        if !split_under_parent {
            drop(parent);
            return self.place_on_leaf(db, &leaf, key, leaf_slot, record);
        }
        if self.place_on_leaf(db, &leaf, key, leaf_slot, record)? {
            LAST_SPLIT_AU.with(|last| last.set(0));
            return Ok(true);
        }
        if !parent.read(|buf| datapage::fits(buf, self.max_entry_bytes)) {
            return Ok(false);
        }
        self.split_leaf(db, leaf, leaf_slot, key, record, smallvec::smallvec![(parent, slot)])?;
        Ok(true)
    }

    /// The level-1 page that took this thread's last ascending split's entry in this index
    /// ([`APPEND_PARENT`]), latched EX, and its last entry (slot, child), when `key` belongs
    /// there: the page is this index's, at level 1 and the last of its level, and its last
    /// entry's key (a real key: entry 0 is minus infinity) is at most `key`. Every key at or
    /// past an entry of the last page of a level belongs to that page, whatever the levels
    /// above it hold, so the descent from the root is skipped. None (the caller descends) when
    /// there is no such page, it is not in the buffer pool (no read is made for a hint), or it
    /// no longer answers all of these (another session split it, the root split, or the page
    /// went to another use; the hint is then dropped).
    fn append_parent<'p>(
        &self,
        db: &'p Database,
        key: &[Value],
    ) -> SqlResult<Option<(PageGuard<'p>, u16, PageId)>> {
        let (au_id, page) = APPEND_PARENT.with(std::cell::Cell::get);
        if au_id != self.au_id || page.is_null() {
            return Ok(None);
        }
        let Some(parent) = db.buffer_pool().fetch_if_cached(Self::key(db, page), LatchMode::Ex)?
        else {
            return Ok(None);
        };
        let entry = parent.read(|buf| {
            let header = PageHeader::read(&buf[..]);
            let still_the_parent = header.page_id == page
                && header.page_type == PageType::Index as u8
                && header.allocation_unit_id() == self.au_id
                && header.level == 1
                && header.next_page.is_null();
            if !still_the_parent {
                return Ok(None);
            }
            match self.past_last_entry(db, page, buf, key)? {
                Some(last) => self.entry_at(db, page, buf, last).map(Some),
                None => Ok(None),
            }
        })?;
        if entry.is_none() {
            // A stale hint is dropped: the session's next ascending split sets a new one.
            APPEND_PARENT.with(|cell| cell.set((0, PageId::NULL)));
        }
        Ok(entry.map(|(slot, child)| (parent, slot, child)))
    }

    /// The level-1 page whose subtree holds `key`, latched in `mode`, reached with SH coupling,
    /// and the entry (slot, child) for `key` on it; None if the root is a leaf or the tree
    /// changed shape under the descent. Each page is read once ([`BTree::level_and_entry`]).
    fn leaf_parent<'p>(
        &self,
        db: &'p Database,
        key: &[Value],
        mode: LatchMode,
    ) -> SqlResult<Option<(PageGuard<'p>, u16, PageId)>> {
        let root = db.buffer_pool().fetch(Self::key(db, self.root), LatchMode::Sh)?;
        let (root_level, entry) = self.level_and_entry(db, &root, key)?;
        let Some((slot, child)) = entry else { return Ok(None) };
        if root_level == 1 {
            if mode == LatchMode::Sh {
                return Ok(Some((root, slot, child)));
            }
            drop(root);
            let root = db.buffer_pool().fetch(Self::key(db, self.root), mode)?;
            return Ok(match self.level_and_entry(db, &root, key)? {
                (1, Some((slot, child))) => Some((root, slot, child)),
                _ => None,
            });
        }
        // SH coupling: each page stays latched until its child is.
        let (mut latched, mut level, mut child) = (root, root_level, child);
        loop {
            if level == 2 {
                let parent = db.buffer_pool().fetch(Self::key(db, child), mode)?;
                drop(latched);
                return Ok(match self.level_and_entry(db, &parent, key)? {
                    (1, Some((slot, child))) => Some((parent, slot, child)),
                    _ => None,
                });
            }
            let next = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Sh)?;
            let (next_level, entry) = self.level_and_entry(db, &next, key)?;
            let Some((_, next_child)) = entry else { return Ok(None) };
            drop(std::mem::replace(&mut latched, next));
            (level, child) = (next_level, next_child);
        }
    }

    /// Splits a full, EX-latched leaf to add `record` where `leaf_slot` (the leaf's search for
    /// `key`, made under the same latch: the leaf has not changed since) places it; `path`
    /// holds the latched ancestors.
    fn split_leaf<'p>(
        &self,
        db: &'p Database,
        leaf: PageGuard<'p>,
        leaf_slot: LeafSlot,
        key: &[Value],
        record: &[u8],
        mut path: LatchPath<'p>,
    ) -> SqlResult<()> {
        let page = leaf.key().page;
        let slot = match leaf_slot {
            LeafSlot::Absent(slot) => slot,
            LeafSlot::Ghost(slot) => {
                leaf.write(|buf| datapage::delete(buf, slot))?
                    .map_err(|bad| bad_page(db, page, bad.0))?;
                slot
            }
            LeafSlot::Found(_) => return Err(self.duplicate(key)),
        };
        self.split(db, leaf, slot, record, Some(key), &mut path)
    }

    /// EX latch coupling from the root, keeping the ancestors of unsafe pages, then a split.
    fn insert_pessimistic(&self, db: &Database, key: &[Value], record: &[u8]) -> SqlResult<bool> {
        let mut path = LatchPath::new();
        let mut current = db.buffer_pool().fetch(Self::key(db, self.root), LatchMode::Ex)?;
        loop {
            let level = current.read(Self::level);
            if level == 0 {
                break;
            }
            let (slot, child) = self.child_entry(db, &current, Some(key), false)?;
            let child_guard = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Ex)?;
            let child_level = child_guard.read(Self::level);
            let safe = child_guard.read(|buf| {
                if child_level == 0 {
                    datapage::fits(buf, record.len())
                } else {
                    datapage::fits(buf, self.max_entry_bytes)
                }
            });
            path.push((current, slot));
            if safe {
                path.clear();
            }
            current = child_guard;
        }
        if self.put_on_leaf(db, &current, key, record)? {
            return Ok(true);
        }
        let page = current.key().page;
        let slot = match current.read(|buf| self.find_in_leaf(db, page, buf, key))? {
            LeafSlot::Absent(slot) => slot,
            LeafSlot::Ghost(slot) => {
                current
                    .write(|buf| datapage::delete(buf, slot))?
                    .map_err(|bad| bad_page(db, page, bad.0))?;
                slot
            }
            LeafSlot::Found(_) => return Err(self.duplicate(key)),
        };
        self.split(db, current, slot, record, Some(key), &mut path)?;
        Ok(true)
    }

    /// Splits a full page to add `record` at `slot`, and adds the new page's entry to the parent
    /// (splitting it in turn if needed). `record_key` is `record`'s key when the caller has it
    /// (a row's insert): the parent's entry for a new page that starts with the new record is
    /// then encoded from that key, not decoded back from the record (seed 002's every row).
    fn split<'p>(
        &self,
        db: &'p Database,
        page: PageGuard<'p>,
        slot: u16,
        record: &[u8],
        record_key: Option<&[Value]>,
        path: &mut LatchPath<'p>,
    ) -> SqlResult<()> {
        db.instance().counters.count_page_split();
        let page_id = page.key().page;
        let header = page.read(|buf| PageHeader::read(&buf[..]));
        let old_count = usize::from(page.read(datapage::slot_count));
        let append =
            header.level == 0 && usize::from(slot) == old_count && header.next_page.is_null();
        let copy: Box<PageBuf>;
        let ascending = append && page_id != self.root;
        let halves = if ascending {
            // An ascending key: the new record alone moves; the page's records are not read.
            // The next insert into this index most likely splits the new last page in turn.
            LAST_SPLIT_AU.with(|last| last.set(self.au_id));
            Halves { moving: smallvec::smallvec![record], kept: old_count, new_on_left: false }
        } else {
            // One copy of the page; the records are read in place from it.
            copy = page.read(|buf| Box::new(*buf));
            let mut records = Self::records(db, page_id, &copy)?;
            records.insert(usize::from(slot), record);
            let at = if append { records.len() - 1 } else { split_point(&records) };
            if page_id == self.root {
                return self.split_root(db, &page, header, records, at);
            }
            // The new record joins the left half if it belongs there.
            let new_on_left = usize::from(slot) < at;
            let kept = if new_on_left { at - 1 } else { at };
            Halves { moving: SmallVec::from_vec(records.split_off(at)), kept, new_on_left }
        };
        let right_id = db.allocate_page_at_level(self.au_id, header.level)?;
        let right = db.buffer_pool().new_page(Self::key(db, right_id))?;
        let page_type = if header.level == 0 { self.leaf_type } else { PageType::Index };
        let format = |buf: &mut PageBuf| {
            datapage::format_new(
                buf,
                right_id,
                page_type,
                self.au_id,
                header.level,
                header.pminlen,
            );
            set_links(buf, page_id, header.next_page);
        };
        if let [only] = &halves.moving[..] {
            // An ascending key's split moves just the new record: the new page's header is its
            // format record and the record a logical insert, with no diff of the whole page.
            right.write_within(&[(0, PAGE_HEADER_SIZE)], format)?;
            let placed = right.insert_record(0, only)?;
            assert!(placed, "split halves fit their pages");
        } else {
            right.write(|buf| {
                format(buf);
                fill(buf, &halves.moving);
            })?;
        }
        // The left half stays in place: the moved records leave it as holes (a small change to
        // log). The header and the slot array's truncated tail change, nothing else.
        let kept = halves.kept;
        if kept == old_count {
            // Nothing moved (an ascending key's split): only the link to the new page changes,
            // and only its six bytes are saved and compared.
            page.write_within(&[crate::page::NEXT_PAGE_RANGE], |buf| {
                crate::page::set_next_page(&mut buf[..], right_id)
            })?;
        } else {
            let changed =
                [(0, PAGE_HEADER_SIZE), (PAGE_SIZE - 2 * old_count, PAGE_SIZE - 2 * kept)];
            page.write_within(&changed, |buf| {
                set_links(buf, header.prev_page, right_id);
                datapage::truncate(buf, kept as u16)
            })?
            .map_err(|bad| bad_page(db, page_id, bad.0))?;
        }
        if halves.new_on_left {
            let placed = page.insert_record(slot, record)?;
            assert!(placed, "split halves fit their pages");
        }
        if !header.next_page.is_null() {
            let next = db.buffer_pool().fetch(Self::key(db, header.next_page), LatchMode::Ex)?;
            next.write_within(&[crate::page::PREV_PAGE_RANGE], |buf| {
                crate::page::set_prev_page(&mut buf[..], right_id)
            })?;
        }
        let entry = match record_key {
            Some(key) if std::ptr::eq(halves.moving[0], record) => {
                self.encode_entry(key, right_id)?
            }
            _ => {
                let separator = self.record_key(db, right_id, header.level, halves.moving[0])?;
                self.encode_entry(&separator, right_id)?
            }
        };
        drop(right);
        drop(page);
        let (parent, child_slot) = path.pop().expect("the parent of an unsafe page stays latched");
        let placed = parent.insert_record(child_slot + 1, &entry)?;
        if ascending {
            let hint = if placed { (self.au_id, parent.key().page) } else { (0, PageId::NULL) };
            APPEND_PARENT.with(|cell| cell.set(hint));
        }
        let result = if placed {
            Ok(())
        } else {
            self.split(db, parent, child_slot + 1, &entry, None, path)
        };
        ENTRY_BUFFER.set(entry);
        result
    }

    /// The root keeps its page id: its records move to two new pages and it becomes their parent.
    fn split_root(
        &self,
        db: &Database,
        root: &PageGuard<'_>,
        header: PageHeader,
        records: Vec<&[u8]>,
        at: usize,
    ) -> SqlResult<()> {
        let page_type = if header.level == 0 { self.leaf_type } else { PageType::Index };
        let left_id = db.allocate_page_at_level(self.au_id, header.level)?;
        let right_id = db.allocate_page_at_level(self.au_id, header.level)?;
        for (id, part, prev, next) in [
            (left_id, &records[..at], PageId::NULL, right_id),
            (right_id, &records[at..], left_id, PageId::NULL),
        ] {
            let guard = db.buffer_pool().new_page(Self::key(db, id))?;
            guard.write(|buf| {
                datapage::format_new(buf, id, page_type, self.au_id, header.level, header.pminlen);
                set_links(buf, prev, next);
                fill(buf, part);
            })?;
        }
        let left_key = self.record_key(db, self.root, header.level, records[0])?;
        let right_key = self.record_key(db, self.root, header.level, records[at])?;
        let entries =
            [self.encode_entry(&left_key, left_id)?, self.encode_entry(&right_key, right_id)?];
        root.write(|buf| {
            datapage::format(
                buf,
                self.root,
                PageType::Index,
                self.au_id,
                header.level + 1,
                self.entry_layout.pminlen() as u16,
            );
            fill(buf, &[&entries[0][..], &entries[1][..]]);
        })?;
        let [left_entry, _] = entries;
        ENTRY_BUFFER.set(left_entry);
        Ok(())
    }

    /// The row with `key`, if any (the first of its duplicates in a non-unique index).
    ///
    /// In a transaction it reads committed data (READ COMMITTED): it takes an S lock on the
    /// key first, waiting for a transaction that changed the row, and releases it after reading.
    pub fn seek(&self, db: &Database, key: &[Value]) -> SqlResult<Option<Vec<Value>>> {
        if !self.unique {
            return Ok(self.range(db, Some(key), Some(key), false)?.into_iter().next());
        }
        let lock = self.key_lock(db, key);
        let object = LockResource::Object { database_id: db.database_id, au_id: self.au_id };
        xact::lock(db, object, LockMode::IS)?;
        let newly_locked = xact::lock_newly(db, lock, LockMode::S)?;
        let row = self.seek_latched(db, key);
        if newly_locked {
            xact::unlock(db, lock);
        }
        row
    }

    fn seek_latched(&self, db: &Database, key: &[Value]) -> SqlResult<Option<Vec<Value>>> {
        let leaf = self.leaf_for_read(db, Some(key), false)?;
        let page = leaf.key().page;
        leaf.read(|buf| match self.find_in_leaf(db, page, buf, key)? {
            LeafSlot::Found(slot) => {
                let bytes = datapage::record(buf, slot).map_err(|bad| bad_page(db, page, bad.0))?;
                self.row_of(db, page, bytes).map(Some)
            }
            _ => Ok(None),
        })
    }

    /// Rows with `from <= key <= to` (unbounded where None), in key order, or in reverse order
    /// when `descending`. Bounds may be a prefix of the key; rows come without the hidden
    /// uniquifier.
    pub fn range(
        &self,
        db: &Database,
        from: Option<&[Value]>,
        to: Option<&[Value]>,
        descending: bool,
    ) -> SqlResult<Vec<Vec<Value>>> {
        let committed_read =
            self.unique && xact::is_open(db.database_id) && xact::reads_take_locks();
        let mut rows = self.range_full(db, from, to, descending, committed_read)?;
        if !self.unique {
            for row in &mut rows {
                row.pop();
            }
            return Ok(rows);
        }
        if !committed_read {
            return Ok(rows);
        }
        // READ COMMITTED: each row is read again under a short S lock on its key, so a row
        // another transaction is changing is returned as committed (or not at all). Ghosts
        // are read again too: a row another transaction is rolling back is a ghost for a
        // moment (its undo ghosts the new version, then brings the old one back), and
        // skipping it then would lose a committed row.
        let mut committed = Vec::with_capacity(rows.len());
        for row in rows {
            if let Some(row) = self.seek(db, &self.key_of(&row))? {
                committed.push(row);
            }
        }
        Ok(committed)
    }

    /// Rows as stored (with the uniquifier of a non-unique index, as [`BTree::insert_stored`]
    /// returns them), `from <= key <= to` in key order; no READ COMMITTED re-reads.
    pub fn range_stored(
        &self,
        db: &Database,
        from: Option<&[Value]>,
        to: Option<&[Value]>,
    ) -> SqlResult<Vec<Vec<Value>>> {
        self.range_full(db, from, to, false, false)
    }

    /// The stored columns (a non-unique index's uniquifier last).
    /// The columns records have at `level`: the stored row at the leaves, the index entry
    /// (lowest key of the child, then `child`, its page id as 6 bytes) above them.
    pub fn record_columns(&self, level: u8) -> &[Column] {
        if level == 0 { &self.columns } else { &self.entry_columns }
    }

    pub fn stored_columns(&self) -> &[Column] {
        &self.columns
    }

    /// The key of a stored row (what [`BTree::delete`] takes).
    pub fn stored_key(&self, row: &[Value]) -> Vec<Value> {
        self.key_of(row).into_vec()
    }

    /// The scan behind [`BTree::range`]. Forward scans couple SH latches along the leaf level;
    /// backward scans release a leaf before latching its left neighbour (module header).
    fn range_full(
        &self,
        db: &Database,
        from: Option<&[Value]>,
        to: Option<&[Value]>,
        descending: bool,
        with_ghosts: bool,
    ) -> SqlResult<Vec<Vec<Value>>> {
        // A whole-index scan reads ahead; a range read does not (it may stop after a page).
        let mut read_ahead = if from.is_none() && to.is_none() {
            crate::readahead::ReadAhead::for_unit(db, self.au_id)?
        } else {
            None
        };
        let mut leaf = if descending {
            let upper = to.map(|t| self.upper_search_key(t));
            self.leaf_for_read(db, upper.as_deref(), to.is_none())?
        } else {
            self.leaf_for_read(db, from, false)?
        };
        // In scan order: rows before `near` are skipped, the first row past `far` ends the scan.
        let (near, far, before, past) = if descending {
            (to, from, Ordering::Greater, Ordering::Less)
        } else {
            (from, to, Ordering::Less, Ordering::Greater)
        };
        let mut rows = Vec::new();
        loop {
            let page = leaf.key().page;
            let (ended, header) = leaf.read(|buf| -> SqlResult<(bool, PageHeader)> {
                let header = PageHeader::read(&buf[..]);
                let count = datapage::slot_count(buf);
                for step in 0..count {
                    let slot = if descending { count - 1 - step } else { step };
                    let bytes =
                        datapage::record(buf, slot).map_err(|bad| bad_page(db, page, bad.0))?;
                    if is_ghost(bytes[0]) && !with_ghosts {
                        continue;
                    }
                    // Bounds are checked on the record's key, so only rows in range are decoded.
                    if let Some(n) = near
                        && self.compare_record_prefix(db, page, bytes, n)? == before
                    {
                        continue;
                    }
                    if let Some(f) = far
                        && self.compare_record_prefix(db, page, bytes, f)? == past
                    {
                        return Ok((true, header));
                    }
                    rows.push(self.row_of(db, page, bytes)?);
                }
                Ok((false, header))
            })?;
            let next = if descending { header.prev_page } else { header.next_page };
            if ended || next.is_null() {
                return Ok(rows);
            }
            if descending {
                drop(leaf);
            }
            if let Some(read_ahead) = &mut read_ahead {
                read_ahead.before(db, next)?;
            }
            leaf = db.buffer_pool().fetch(Self::key(db, next), LatchMode::Sh)?;
        }
    }

    /// The number of rows (leaf records that are not ghosts), counted leaf by leaf along the
    /// leaf chain without decoding a row: what COUNT(*) reads. No row locks are taken; the
    /// caller locks the table.
    pub fn count_rows(&self, db: &Database) -> SqlResult<u64> {
        let mut read_ahead = crate::readahead::ReadAhead::for_unit(db, self.au_id)?;
        let mut leaf = self.leaf_for_read(db, None, false)?;
        let mut count = 0u64;
        loop {
            let page = leaf.key().page;
            let (live, next) = leaf.read(|buf| {
                let mut live = 0u64;
                for slot in 0..datapage::slot_count(buf) {
                    let bytes =
                        datapage::record(buf, slot).map_err(|bad| bad_page(db, page, bad.0))?;
                    live += u64::from(!is_ghost(bytes[0]));
                }
                Ok::<_, SqlError>((live, PageHeader::read(&buf[..]).next_page))
            })?;
            count += live;
            if next.is_null() {
                return Ok(count);
            }
            if let Some(read_ahead) = &mut read_ahead {
                read_ahead.before(db, next)?;
            }
            leaf = db.buffer_pool().fetch(Self::key(db, next), LatchMode::Sh)?;
        }
    }

    /// Deletes the row with `key` by making it a ghost; false if there is none.
    pub fn delete(&self, db: &Database, key: &[Value]) -> SqlResult<bool> {
        crate::scheduler::yield_point();
        self.lock_for_change(db, key)?;
        db.buffer_pool().in_mtr(|| self.delete_in_mtr(db, key))
    }

    /// Undoes a transaction's insert of `record` (a compensation: deletes its key).
    pub(crate) fn undo_insert(&self, db: &Database, key_entry: &[u8]) -> SqlResult<()> {
        let key = self.entry_key(db, self.root, key_entry)?;
        self.delete(db, &key).map(|_| ())
    }

    /// Undoes a transaction's delete of `record` (a compensation: inserts it again, over its
    /// ghost if that is still there).
    pub(crate) fn undo_delete(&self, db: &Database, record: &[u8]) -> SqlResult<()> {
        let values = self.row_of(db, self.root, record)?;
        self.insert_row(db, &values)
    }

    fn delete_in_mtr(&self, db: &Database, key: &[Value]) -> SqlResult<bool> {
        let guard = self.leaf_for_change(db, key)?;
        let page = guard.key().page;
        let LeafSlot::Found(slot) = guard.read(|buf| self.find_in_leaf(db, page, buf, key))? else {
            return Ok(false);
        };
        let record = guard.read(|buf| datapage::record(buf, slot).map(<[u8]>::to_vec));
        let record = record.map_err(|bad| bad_page(db, page, bad.0))?;
        guard
            .write(|buf| datapage::make_ghost(buf, slot))?
            .map_err(|bad| bad_page(db, page, bad.0))?;
        xact::log_row_op(db, xact::RowOp::Delete { au_id: self.au_id, record })?;
        db.set_pfs_ghost_bit(page, true)?;
        db.note_ghost_page(page);
        Ok(true)
    }

    /// The leaf whose key range holds `key`, latched EX for a change that keeps the tree's
    /// shape (a delete ghosts its row). The index pages above it are latched SH, each until its
    /// child is, as SQL Server latches them for such a change: concurrent deletes and inserts
    /// do not queue on the root. A root that is itself a leaf is latched EX from the start.
    fn leaf_for_change<'p>(&self, db: &'p Database, key: &[Value]) -> SqlResult<PageGuard<'p>> {
        if let Some((parent, _, child)) = self.leaf_parent(db, key, LatchMode::Sh)? {
            let leaf = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Ex)?;
            drop(parent);
            return Ok(leaf);
        }
        // The root is a leaf, or it split under the look: EX coupling from the root.
        let mut guard = db.buffer_pool().fetch(Self::key(db, self.root), LatchMode::Ex)?;
        while guard.read(Self::level) > 0 {
            let child = self.child_at(db, &guard, Some(key), false)?;
            guard = db.buffer_pool().fetch(Self::key(db, child), LatchMode::Ex)?;
        }
        Ok(guard)
    }

    /// The ghost-cleanup task's work on this index at once: removes ghost rows from every leaf
    /// (keeping at least one record on a page) and clears the PFS ghost bit of pages left
    /// without ghosts. Returns how many ghosts it removed. The background task
    /// ([`Database::start_ghost_cleanup`]) does the same a few pages at a time.
    pub fn ghost_cleanup(&self, db: &Database) -> SqlResult<usize> {
        let mut removed = 0;
        let mut next = self.leaf_for_read(db, None, false)?.key().page;
        while !next.is_null() {
            removed += db.clean_page(next)? as usize;
            next = PageHeader::read(&db.page_copy(next)?[..]).next_page;
        }
        Ok(removed)
    }

    /// A leaf record's stored values (a non-unique index's uniquifier last).
    pub(crate) fn decode_leaf(&self, bytes: &[u8]) -> Result<Vec<Value>, record::BadRecord> {
        record::decode(&self.columns, &self.layout, bytes)
    }

    /// The leaf record an insert of these stored values writes (DBCC's logical check compares
    /// the records a table's rows call for with the ones its indexes hold).
    pub(crate) fn encode_leaf(&self, values: &[Value]) -> SqlResult<Vec<u8>> {
        record::encode(&self.columns, &self.layout, values, self.leaf_kind())
    }

    /// The record type of the leaf's rows: data rows, or a nonclustered index's entries.
    fn leaf_kind(&self) -> RecordType {
        if self.leaf_type == PageType::Index { RecordType::Index } else { RecordType::Primary }
    }

    /// Where the live row with this stored key is: its leaf page and slot (DBCC's messages
    /// name rows by their place).
    pub fn locate(&self, db: &Database, key: &[Value]) -> SqlResult<Option<(PageId, u16)>> {
        let leaf = self.leaf_for_read(db, Some(key), false)?;
        let page = leaf.key().page;
        leaf.read(|buf| match self.find_in_leaf(db, page, buf, key)? {
            LeafSlot::Found(slot) => Ok(Some((page, slot))),
            _ => Ok(None),
        })
    }

    /// Every page the index links: its root and each child of its index pages. Only the index
    /// pages are read, not the leaves (recovery's search for pages a crash left unlinked).
    pub(crate) fn linked_pages(
        &self,
        db: &Database,
    ) -> SqlResult<std::collections::BTreeSet<PageId>> {
        let mut linked = std::collections::BTreeSet::from([self.root]);
        let mut to_read = vec![self.root];
        while let Some(page) = to_read.pop() {
            let buf = db.page_copy(page)?;
            let level = Self::level(&buf);
            if level == 0 {
                continue;
            }
            for bytes in Self::records(db, page, &buf)? {
                let child = self.child_of(db, page, bytes)?;
                if linked.insert(child) && level > 1 {
                    to_read.push(child);
                }
            }
        }
        Ok(linked)
    }

    /// What DBCC CHECKDB learns from one page of this index, read on its own ([`crate::dbcc`]
    /// matches the facts of all pages afterwards). Keys out of order within the page are
    /// reported as the first pair of slots that break invariant 1.
    pub(crate) fn page_facts(
        &self,
        db: &Database,
        page: PageId,
        buf: &PageBuf,
    ) -> SqlResult<TreePageFacts> {
        let header = PageHeader::read(&buf[..]);
        let level = header.level;
        let mut facts = TreePageFacts {
            level,
            prev: header.prev_page,
            next: header.next_page,
            live_rows: 0,
            low_key: None,
            high_key: None,
            children: Vec::new(),
            out_of_order: None,
        };
        for (slot, bytes) in Self::records(db, page, buf)?.iter().enumerate() {
            let key = if level == 0 {
                facts.live_rows += u64::from(!is_ghost(bytes[0]));
                self.leaf_key(db, page, bytes)?
            } else {
                let (key, child) = self.entry_of(db, page, bytes)?;
                // Slot 0 of an index page stands for minus infinity (see check_subtree).
                facts.children.push((if slot == 0 { None } else { Some(key.clone()) }, child));
                if slot == 0 {
                    continue;
                }
                key
            };
            let after_previous =
                facts.high_key.as_ref().is_none_or(|p| compare_keys(p, &key) == Ordering::Less);
            if !after_previous && facts.out_of_order.is_none() {
                facts.out_of_order = Some((slot as u16 - 1, slot as u16));
            }
            if facts.low_key.is_none() {
                facts.low_key = Some(key.clone());
            }
            facts.high_key = Some(key);
        }
        Ok(facts)
    }

    /// Checks invariants 1-4; returns the number of live rows, or the first problem found.
    pub fn check(&self, db: &Database) -> Result<usize, String> {
        let mut rows = 0;
        self.check_subtree(db, self.root, None, None, None, &mut rows)
            .map_err(|e| e.to_string())?;
        self.check_links(db).map_err(|e| e.to_string())?;
        Ok(rows)
    }

    fn check_subtree(
        &self,
        db: &Database,
        page: PageId,
        low: Option<&[Value]>,
        high: Option<&[Value]>,
        expected_level: Option<u8>,
        rows: &mut usize,
    ) -> Result<(), SqlError> {
        let buf = db.page_copy(page)?;
        let level = Self::level(&buf);
        let fail = |what: String| Err(bad_page(db, page, &what));
        if expected_level.is_some_and(|l| l != level) {
            return fail(format!(
                "level {level} where {expected_level:?} was expected (invariant 3)"
            ));
        }
        let mut previous: Option<Vec<Value>> = None;
        for (slot, bytes) in Self::records(db, page, &buf)?.iter().enumerate() {
            // The first entry of an index page stands for minus infinity: its stored key is the
            // lowest key its child had when the entry was made, and means nothing after that.
            if level > 0 && slot == 0 {
                continue;
            }
            let key = self.record_key(db, page, level, bytes)?;
            if previous.as_ref().is_some_and(|p| compare_keys(p, &key) != Ordering::Less) {
                return fail("keys out of order (invariant 1)".into());
            }
            let below_low = low.is_some_and(|l| compare_keys(&key, l) == Ordering::Less);
            if below_low || high.is_some_and(|h| compare_keys(&key, h) != Ordering::Less) {
                return fail("key outside its parent's range (invariant 2)".into());
            }
            if level == 0 && !is_ghost(bytes[0]) {
                *rows += 1;
            }
            previous = Some(key);
        }
        if level == 0 {
            return Ok(());
        }
        let entries: Vec<(Vec<Value>, PageId)> = Self::records(db, page, &buf)?
            .iter()
            .map(|b| self.entry_of(db, page, b))
            .collect::<SqlResult<_>>()?;
        for (index, (key, child)) in entries.iter().enumerate() {
            let child_low = if index == 0 { low } else { Some(key.as_slice()) };
            let child_high = entries.get(index + 1).map_or(high, |(k, _)| Some(k.as_slice()));
            self.check_subtree(db, *child, child_low, child_high, Some(level - 1), rows)?;
        }
        Ok(())
    }

    /// Invariant 4 along every level.
    fn check_links(&self, db: &Database) -> Result<(), SqlError> {
        let mut leftmost = self.root;
        loop {
            let buf = db.page_copy(leftmost)?;
            let level = Self::level(&buf);
            let mut previous = PageId::NULL;
            let mut page = leftmost;
            while !page.is_null() {
                let current = db.page_copy(page)?;
                let header = PageHeader::read(&current[..]);
                if header.prev_page != previous || header.level != level {
                    return Err(bad_page(
                        db,
                        page,
                        "m_prevPage or level disagrees along the level (invariant 4)",
                    ));
                }
                previous = page;
                page = header.next_page;
            }
            if level == 0 {
                return Ok(());
            }
            let first = datapage::record(&buf, 0).map_err(|bad| bad_page(db, leftmost, bad.0))?;
            leftmost = self.entry_of(db, leftmost, first)?.1;
        }
    }
}

/// One page of an index as DBCC CHECKDB sees it ([`BTree::page_facts`]).
pub(crate) struct TreePageFacts {
    pub level: u8,
    pub prev: PageId,
    pub next: PageId,
    /// Rows on a leaf that are not ghosts.
    pub live_rows: u64,
    /// The first and last key that bound the page: a leaf's first and last row, an index
    /// page's entries from slot 1 on.
    pub low_key: Option<Vec<Value>>,
    pub high_key: Option<Vec<Value>>,
    /// An index page's entries in slot order: key (None for slot 0) and child page.
    pub children: Vec<(Option<Vec<Value>>, PageId)>,
    /// The first two neighbouring slots whose keys are not ascending (invariant 1).
    pub out_of_order: Option<(u16, u16)>,
}

/// Whether a record's status byte marks a ghost (data or index).
fn is_ghost(status_a: u8) -> bool {
    let kind = record::record_type(status_a);
    kind == RecordType::GhostData as u8 || kind == RecordType::GhostIndex as u8
}

/// The hidden column of a non-unique clustered index.
pub const UNIQUIFIER: &str = "UNIQUIFIER";

/// A stored uniquifier: 4 bytes big-endian, so that byte order is numeric order (the one place
/// the crate writes big-endian on purpose).
#[allow(clippy::big_endian_bytes)]
fn uniquifier_bytes(value: u32) -> Vec<u8> {
    value.to_be_bytes().to_vec()
}

/// A uniquifier's value: NULL is 0.
#[allow(clippy::big_endian_bytes)]
fn uniquifier_of(value: &Value) -> Option<u32> {
    match value {
        Value::Null => Some(0),
        Value::Bytes(bytes) => Some(u32::from_be_bytes(bytes.as_slice().try_into().ok()?)),
        _ => None,
    }
}

/// Compares a key with a bound that may be a prefix of it (only the bound's columns count).
impl BTree {
    /// The search key for "at or before the last row with this prefix": for a non-unique index
    /// a user key followed by the largest uniquifier.
    fn upper_search_key(&self, bound: &[Value]) -> Vec<Value> {
        let mut key = bound.to_vec();
        if !self.unique && key.len() + 1 == self.key_columns.len() {
            key.push(Value::Bytes(vec![0xFF; 4]));
        }
        key
    }
}

fn set_links(buf: &mut PageBuf, prev: PageId, next: PageId) {
    crate::page::set_prev_page(&mut buf[..], prev);
    crate::page::set_next_page(&mut buf[..], next);
}

fn fill(buf: &mut PageBuf, records: &[&[u8]]) {
    for (slot, bytes) in records.iter().enumerate() {
        assert!(datapage::insert(buf, slot as u16, bytes), "split halves fit their pages");
    }
}

/// How a split divides a full page's records and the new one.
struct Halves<'r> {
    /// The records of the new right page, in key order (one, inline, for an ascending key's
    /// split: no allocation a row).
    moving: SmallVec<[&'r [u8]; 1]>,
    /// How many of its records (its first slots) the left page keeps.
    kept: usize,
    /// Whether the new record goes on the left page (at its slot), not in `moving`.
    new_on_left: bool,
}

/// The split position that balances the two halves by bytes, with both halves fitting a page.
fn split_point(records: &[&[u8]]) -> usize {
    let body = PAGE_SIZE - PAGE_HEADER_SIZE;
    let sizes: Vec<usize> = records.iter().map(|r| r.len() + 2).collect();
    let total: usize = sizes.iter().sum();
    let mut best = (usize::MAX, 1);
    let mut left = 0;
    for at in 1..records.len() {
        left += sizes[at - 1];
        let right = total - left;
        if left <= body && right <= body {
            best = best.min((left.abs_diff(right), at));
        }
    }
    assert!(
        best.0 != usize::MAX,
        "two pages hold any page's records plus one row of at most 8,060 bytes"
    );
    best.1
}
