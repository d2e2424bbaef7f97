//! The catalog: which tables and procedures a database has, their columns and their indexes,
//! kept in system tables that are B-trees like any other (SQL Server keeps its metadata in
//! system base tables such as sys.sysschobjs, sys.syscolpars, sys.sysidxstats and
//! sys.sysobjvalues).
//!
//! What it owns:
//! - four system tables, clustered B-trees created with the database (or when an older
//!   database is first used): `sysschobjs` (one row per table or procedure), `syscolpars` (one
//!   row per column), `sysidxstats` (one row per heap or index, with its allocation unit) and
//!   `sysobjvalues` (a procedure's definition text, in numbered chunks). Their
//!   rows are inserted and deleted in the DDL statement's transaction, so they are logged,
//!   redone after a crash and undone by a rollback like user rows;
//! - an in-memory cache of [`Table`]s, loaded from the system tables when the catalog is first
//!   used and reloaded after a transaction that ran DDL rolls back (wholly or to a savepoint);
//! - the life of a table's allocation units: created (outside the transaction, as every
//!   allocation is) before its catalog rows are inserted; dropped once the transaction that
//!   dropped the table commits, or once the transaction that created it rolls back. Units whose
//!   name says a table owns them (`dbo.` + name) but that no catalog row references, which a
//!   crash between the two steps can leave, are dropped when the catalog is loaded.
//!
//! Invariants:
//! 1. Every allocation unit a cached table names exists in the database.
//! 2. A table's first index is its heap (index_id 0) or clustered index (index_id 1); the
//!    others are nonclustered (index_id >= 2), each with one B-tree.
//! 3. DDL holds the catalog's DDL mutex from creating units to inserting their catalog rows,
//!    and the reconciliation that drops unreferenced units takes it too, so it never drops
//!    the units of a table being created.
//!
//! Deviations: there is one schema, `dbo`. The cache shows a table as soon as the DDL that made
//! it ran, before its transaction commits (SQL Server's schema locks would make other sessions
//! wait instead); DML and DROP TABLE do take object locks, so a table is not dropped under a
//! transaction that uses it. Object ids count up from [`FIRST_USER_OBJECT_ID`] (SQL Server's
//! look random). A column default is kept as its T-SQL text (SQL Server keeps it as a default
//! constraint object with the text in sys.default_constraints). The key columns of an index are
//! a varbinary in its sysidxstats row rather than rows of sysiscols.

use crate::btree::BTree;
use crate::database::Database;
use crate::error::{SqlError, SqlResult};
use crate::heap::{Heap, Rid};
use crate::lock::{LockMode, LockResource};
use crate::record::{Column, SqlType, Value};
use crate::units::PageId;
use crate::xact;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// sys.sysschobjs, sys.syscolpars and sys.sysidxstats: their object ids in SQL Server.
pub const SYSSCHOBJS_ID: i32 = 34;
pub const SYSCOLPARS_ID: i32 = 41;
pub const SYSIDXSTATS_ID: i32 = 54;
/// The first object id given to a user table.
pub const FIRST_USER_OBJECT_ID: i32 = 1_000_000;
/// The schema every table is in.
pub const DBO: &str = "dbo";
/// The longest column default kept (characters).
pub const MAX_DEFAULT_CHARS: u16 = 2000;

/// sys.sysobjvalues: a module's definition.
pub const SYSOBJVALUES_ID: i32 = 60;
/// Characters of a module's definition per sysobjvalues row (a long definition takes several
/// rows, numbered by `seq`).
pub const DEFINITION_CHUNK_CHARS: usize = 2000;

const SYSTEM_UNITS: [&str; 4] =
    ["sys.sysschobjs", "sys.syscolpars", "sys.sysidxstats", "sys.sysobjvalues"];

/// A module (a stored procedure): its name and its T-SQL definition, as
/// sys.sql_modules.definition shows it (the whole `CREATE PROCEDURE ...` text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub object_id: i32,
    pub name: String,
    /// sysschobjs.type: `P ` for a procedure.
    pub type_code: String,
    pub definition: String,
}

/// A column of a table: its name, type and nullability, and the table-level properties.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    pub column: Column,
    /// IDENTITY(seed, increment).
    pub identity: Option<(i64, i64)>,
    /// The DEFAULT expression, as T-SQL text.
    pub default_sql: Option<String>,
    pub rowguidcol: bool,
}

impl ColumnDef {
    pub fn new(name: &str, sql_type: SqlType, nullable: bool) -> ColumnDef {
        ColumnDef {
            column: Column::new(name, sql_type, nullable),
            identity: None,
            default_sql: None,
            rowguidcol: false,
        }
    }
}

/// sys.indexes.type: 0 heap, 1 clustered, 2 nonclustered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    Heap = 0,
    Clustered = 1,
    Nonclustered = 2,
}

impl IndexKind {
    fn from_code(code: u8) -> Option<IndexKind> {
        match code {
            0 => Some(IndexKind::Heap),
            1 => Some(IndexKind::Clustered),
            2 => Some(IndexKind::Nonclustered),
            _ => None,
        }
    }

    /// sys.indexes.type_desc.
    pub fn desc(self) -> &'static str {
        match self {
            IndexKind::Heap => "HEAP",
            IndexKind::Clustered => "CLUSTERED",
            IndexKind::Nonclustered => "NONCLUSTERED",
        }
    }
}

/// A heap or an index of a table, as sysidxstats holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDef {
    pub index_id: i32,
    /// Empty for a heap.
    pub name: String,
    pub kind: IndexKind,
    pub unique: bool,
    pub primary_key: bool,
    /// Positions in the table's columns.
    pub key_columns: Vec<usize>,
    pub au_id: u64,
}

impl IndexDef {
    /// Whether the index is a UNIQUE constraint's (sys.indexes.is_unique_constraint): extentdb
    /// names those `UQ__table__n`; an index made by CREATE UNIQUE INDEX is a plain index.
    pub fn is_unique_constraint(&self) -> bool {
        self.unique && !self.primary_key && self.name.starts_with("UQ")
    }
}

/// What CREATE TABLE or CREATE INDEX asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    pub name: String,
    pub clustered: bool,
    pub unique: bool,
    pub primary_key: bool,
    pub key_columns: Vec<usize>,
    pub filegroup: Option<String>,
}

/// CREATE TABLE.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSpec {
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// PRIMARY KEY and UNIQUE constraints; at most one clustered.
    pub indexes: Vec<IndexSpec>,
    pub filegroup: Option<String>,
}

/// Where a row is: its RID in a heap, its stored clustered key (uniquifier included).
#[derive(Clone, Debug, PartialEq)]
pub enum RowLocator {
    Rid(Rid),
    Key(Vec<Value>),
}

enum Storage {
    Heap(Heap),
    /// Boxed: a B-tree, with its in-place key comparers, is several times a heap's size.
    Clustered(Box<BTree>),
}

/// The logical check's view of a table ([`crate::dbcc::IndexEntries`]): a live record of the
/// heap or clustered index decoded, and the leaf record each nonclustered index must hold for
/// it encoded as an insert would encode it.
impl crate::dbcc::IndexEntries for Table {
    fn index_count(&self) -> usize {
        self.secondary.len()
    }

    fn entries_of(&self, rid: Rid, record: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let (row, locator) = match &self.base {
            Storage::Heap(heap) => {
                (heap.decode_record(record).map_err(|b| b.0.to_string())?, RowLocator::Rid(rid))
            }
            Storage::Clustered(tree) => {
                let mut stored = tree.decode_leaf(record).map_err(|b| b.0.to_string())?;
                let locator = RowLocator::Key(tree.stored_key(&stored));
                stored.truncate(self.columns.len());
                (stored, locator)
            }
        };
        self.nonclustered()
            .map(|(index, tree)| {
                tree.encode_leaf(&Self::secondary_entry(index, &row, &locator))
                    .map_err(|e| e.message)
            })
            .collect()
    }
}

/// A table row without its entry in a nonclustered index, or an entry without its row
/// ([`Table::index_row_mismatches`]; DBCC's 8951 and 8952).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexRowMismatch {
    /// True: the data row has no index row (8951); false: the index row has no data row.
    pub missing_index_row: bool,
    pub index_name: String,
    pub index_id: i32,
    /// The data row's page and slot (8951), or the index row's (8952), when found.
    pub location: Option<(PageId, u16)>,
    /// The data row's identity: its clustered key columns, or its RID, by name.
    pub identity: Vec<(String, Value)>,
    /// The index row's values: its key columns, then the row locator, by name.
    pub index_values: Vec<(String, Value)>,
}

/// A RID as DBCC shows it: `(file:page:slot)`.
fn rid_text(rid: Rid) -> Value {
    Value::Text(format!("({}:{}:{})", rid.page.file_id, rid.page.page_no, rid.slot))
}

/// A table: its definition and the heap or B-trees that hold its rows.
pub struct Table {
    pub object_id: i32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// The heap or clustered index first, then the nonclustered indexes (invariant 2).
    pub indexes: Vec<IndexDef>,
    base: Storage,
    secondary: Vec<BTree>,
    /// The next identity value, read from the table when first needed.
    identity_next: Mutex<Option<i64>>,
}

fn name_key(name: &str) -> String {
    name.to_lowercase()
}

fn already_exists(name: &str) -> SqlError {
    SqlError::new(
        2714,
        16,
        6,
        format!("There is already an object named '{name}' in the database."),
    )
}

/// Error 1944 when an index's key cannot fit SQL Server's limit even with its variable-length
/// columns empty (its fixed-length columns alone exceed it). A key that may exceed it fails
/// at insert (1946); SQL Server also warns (1945) at CREATE INDEX, which extentdb does not.
fn check_key_size(columns: &[ColumnDef], spec: &IndexSpec) -> SqlResult<()> {
    let fixed: usize = spec
        .key_columns
        .iter()
        .filter_map(|i| columns.get(*i)?.column.sql_type.fixed_size())
        .map(|size| size.max(1))
        .sum();
    let limit = if spec.clustered {
        crate::btree::MAX_CLUSTERED_KEY_BYTES
    } else {
        crate::btree::MAX_NONCLUSTERED_KEY_BYTES
    };
    if fixed > limit {
        return Err(SqlError::new(
            1944,
            16,
            1,
            format!(
                "Index '{}' was not created. This index has a key length of at least {fixed} bytes. The maximum permissible key length is {limit} bytes.",
                spec.name
            ),
        ));
    }
    Ok(())
}

/// 211, SQL Server's error for metadata it cannot read; what was wrong goes to the errorlog.
fn catalog_corrupt(db: &Database, what: &str) -> SqlError {
    let detail = format!("The catalog of database '{}' is inconsistent: {what}.", db.name);
    db.instance().errorlog.write(&crate::instance::current_process_info(), &detail);
    SqlError::new(211, 23, 1, "Possible schema corruption. Run DBCC CHECKCATALOG.")
}

impl Table {
    /// The column positions that hold `name` (case-insensitive), if any.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.column.name.eq_ignore_ascii_case(name))
    }

    /// `dbo.name`, as errors name the table.
    pub fn qualified_name(&self) -> String {
        format!("{DBO}.{}", self.name)
    }

    /// The allocation units of the table.
    pub fn au_ids(&self) -> Vec<u64> {
        self.indexes.iter().map(|i| i.au_id).collect()
    }

    /// True if the table is a heap.
    pub fn is_heap(&self) -> bool {
        matches!(self.base, Storage::Heap(_))
    }

    /// Takes the table's object lock for this session's transaction. The table's object is
    /// its heap or clustered index: every read and change of the table goes through that unit
    /// (a nonclustered seek fetches its rows there), so one lock covers the table.
    pub fn lock(&self, db: &Database, mode: LockMode) -> SqlResult<()> {
        let resource =
            LockResource::Object { database_id: db.database_id, au_id: self.indexes[0].au_id };
        xact::lock(db, resource, mode)
    }

    /// COUNT(*): the table's rows, counted in its heap or clustered index without decoding
    /// them, under a shared lock on the table (so only committed rows are counted, as READ
    /// COMMITTED needs; the lock is the transaction's, so an explicit transaction keeps it).
    pub fn count_rows(&self, db: &Database) -> SqlResult<u64> {
        self.lock(db, LockMode::S)?;
        db.instance().counters.count_full_scan();
        match &self.base {
            Storage::Heap(heap) => heap.count_rows(db),
            Storage::Clustered(tree) => tree.count_rows(db),
        }
    }

    /// The rows in the table's heap or clustered index now, counted without a lock, as
    /// sys.partitions.rows shows them (SQL Server's figure is metadata, not a locked count).
    pub fn stored_row_count(&self, db: &Database) -> SqlResult<u64> {
        match &self.base {
            Storage::Heap(heap) => heap.count_rows(db),
            Storage::Clustered(tree) => tree.count_rows(db),
        }
    }

    /// The columns of the records on a page of one of the table's units, at the page's
    /// level (for DBCC PAGE's record interpretation). None if the unit is not the table's.
    pub fn record_columns(&self, au_id: u64, level: u8) -> Option<Vec<Column>> {
        match &self.base {
            Storage::Heap(heap) if heap.au_id == au_id => return Some(heap.columns().to_vec()),
            Storage::Clustered(tree) if tree.au_id == au_id => {
                return Some(tree.record_columns(level).to_vec());
            }
            _ => {}
        }
        let tree = self.secondary.iter().find(|t| t.au_id == au_id)?;
        Some(tree.record_columns(level).to_vec())
    }

    /// Each of the table's allocation units with what it holds, as DBCC CHECKTABLE checks
    /// them: the heap or clustered index first, then the nonclustered indexes.
    pub fn check_targets(&self) -> Vec<(crate::dbcc::UnitName, crate::dbcc::Structure<'_>)> {
        let name = |index: &IndexDef| crate::dbcc::UnitName {
            object_id: self.object_id,
            index_id: index.index_id,
            au_id: index.au_id,
        };
        let base = match &self.base {
            Storage::Heap(_) => crate::dbcc::Structure::Heap,
            Storage::Clustered(tree) => crate::dbcc::Structure::Tree(tree),
        };
        let mut targets = vec![(name(&self.indexes[0]), base)];
        for (index, tree) in self.nonclustered() {
            targets.push((name(index), crate::dbcc::Structure::Tree(tree)));
        }
        targets
    }

    /// DBCC CHECKTABLE's logical check of the nonclustered indexes: every row of the table
    /// has its entry in each of them, and every entry is a row's (8951, 8952). The table is
    /// read in full and each index in key order; both are sorted and merged. The caller holds
    /// the table's lock.
    pub fn index_row_mismatches(&self, db: &Database) -> SqlResult<Vec<IndexRowMismatch>> {
        let rows = self.base_range(db, None, None)?;
        let mut found = Vec::new();
        for (index, tree) in self.nonclustered() {
            let mut expected: Vec<(Vec<Value>, usize)> = rows
                .iter()
                .enumerate()
                .map(|(at, (locator, row))| (Self::secondary_entry(index, row, locator), at))
                .collect();
            expected.sort_by(|a, b| crate::record::compare_keys(&a.0, &b.0));
            let actual = tree.range_stored(db, None, None)?;
            let (mut e, mut a) = (0, 0);
            while e < expected.len() || a < actual.len() {
                let order = match (expected.get(e), actual.get(a)) {
                    (Some((want, _)), Some(have)) => crate::record::compare_keys(want, have),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    _ => std::cmp::Ordering::Greater,
                };
                match order {
                    std::cmp::Ordering::Equal => (e, a) = (e + 1, a + 1),
                    std::cmp::Ordering::Less => {
                        let (entry, at) = &expected[e];
                        let (locator, _) = &rows[*at];
                        found.push(self.mismatch(db, index, entry, locator, true)?);
                        e += 1;
                    }
                    std::cmp::Ordering::Greater => {
                        let entry = &actual[a];
                        let locator = self.locator_of(index, entry);
                        let mut mismatch = self.mismatch(db, index, entry, &locator, false)?;
                        mismatch.location = tree.locate(db, &tree.stored_key(entry))?;
                        found.push(mismatch);
                        a += 1;
                    }
                }
            }
        }
        Ok(found)
    }

    /// The row locator at the end of an index entry.
    fn locator_of(&self, index: &IndexDef, entry: &[Value]) -> RowLocator {
        let key_count = index.key_columns.len();
        match &self.base {
            Storage::Heap(_) => RowLocator::Rid(rid_of(&entry[key_count])),
            Storage::Clustered(_) => RowLocator::Key(entry[key_count..].to_vec()),
        }
    }

    /// An entry of `index` named as DBCC names it: the data row's identity, the entry's values
    /// and (for a missing index row) where the data row is.
    fn mismatch(
        &self,
        db: &Database,
        index: &IndexDef,
        entry: &[Value],
        locator: &RowLocator,
        missing_index_row: bool,
    ) -> SqlResult<IndexRowMismatch> {
        let identity: Vec<(String, Value)> = match (locator, &self.base) {
            (RowLocator::Rid(rid), _) => vec![("RID".to_string(), rid_text(*rid))],
            (RowLocator::Key(key), Storage::Clustered(tree)) => tree
                .stored_columns()
                .iter()
                .map(|c| c.name.clone())
                .zip(key.iter().cloned())
                .collect(),
            (RowLocator::Key(_), Storage::Heap(_)) => Vec::new(),
        };
        let mut index_values: Vec<(String, Value)> = index
            .key_columns
            .iter()
            .map(|c| self.columns[*c].column.name.clone())
            .zip(entry.iter().cloned())
            .collect();
        index_values.extend(identity.iter().cloned());
        let location = match (locator, &self.base) {
            _ if !missing_index_row => None,
            (RowLocator::Rid(rid), _) => Some((rid.page, rid.slot)),
            (RowLocator::Key(key), Storage::Clustered(tree)) => tree.locate(db, key)?,
            (RowLocator::Key(_), Storage::Heap(_)) => None,
        };
        Ok(IndexRowMismatch {
            missing_index_row,
            index_name: index.name.clone(),
            index_id: index.index_id,
            location,
            identity,
            index_values,
        })
    }

    /// SQL Server's index key limits (btree invariant 5): the declared key of each index of
    /// `row` is at most 900 bytes (clustered) or 1,700 (nonclustered), else error 1946 and
    /// nothing is written. (Bug fix: keys of about 4,000 bytes let one entry fit an index
    /// page, so each level had as many pages as the one below and the tree grew a level per
    /// row.)
    fn check_key_lengths(&self, row: &[Value]) -> SqlResult<()> {
        for index in self.indexes.iter().filter(|i| i.kind != IndexKind::Heap) {
            let length: usize = index
                .key_columns
                .iter()
                .map(|&i| crate::btree::stored_length(self.columns[i].column.sql_type, &row[i]))
                .sum();
            let (limit, kind) = if index.kind == IndexKind::Clustered {
                (crate::btree::MAX_CLUSTERED_KEY_BYTES, "clustered")
            } else {
                (crate::btree::MAX_NONCLUSTERED_KEY_BYTES, "nonclustered")
            };
            if length > limit {
                return Err(SqlError::new(
                    1946,
                    16,
                    3,
                    format!(
                        "Operation failed. The index entry of length {length} bytes for the index '{}' exceeds the maximum length of {limit} bytes for {kind} indexes.",
                        index.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The next identity value (None if the table has no identity column).
    pub fn next_identity(&self, db: &Database) -> SqlResult<Option<i64>> {
        let Some(position) = self.columns.iter().position(|c| c.identity.is_some()) else {
            return Ok(None);
        };
        let (seed, step) = self.columns[position].identity.expect("found");
        let mut next = self.identity_next.lock();
        if next.is_none() {
            *next = Some(self.identity_start(db, position, seed, step)?);
        }
        let value = next.expect("set");
        *next = Some(value + step);
        Ok(Some(value))
    }

    /// Where identity values go on from, read from the rows (seed for an empty table).
    fn identity_start(
        &self,
        db: &Database,
        position: usize,
        seed: i64,
        step: i64,
    ) -> SqlResult<i64> {
        let mut last: Option<i64> = None;
        for (_, row) in self.rows(db)? {
            let Some(value) = integer_of(&row[position]) else { continue };
            last = Some(match last {
                Some(l) if (step > 0) == (l > value) => l,
                _ => value,
            });
        }
        Ok(last.map_or(seed, |l| l + step))
    }

    /// Tells the identity counter that a row was inserted with an explicit value (SET
    /// IDENTITY_INSERT ON): it goes on from the highest.
    pub fn note_identity_value(&self, value: i64) {
        let Some(column) = self.columns.iter().find(|c| c.identity.is_some()) else { return };
        let step = column.identity.expect("found").1;
        let mut next = self.identity_next.lock();
        if let Some(n) = *next
            && ((step > 0 && value >= n) || (step < 0 && value <= n))
        {
            *next = Some(value + step);
        }
    }

    /// Inserts a row (one value per column, already of the columns' types) into the heap or
    /// clustered index and every nonclustered index.
    pub fn insert(&self, db: &Database, row: &[Value]) -> SqlResult<RowLocator> {
        self.check_key_lengths(row)?;
        let locator = match &self.base {
            Storage::Heap(heap) => RowLocator::Rid(heap.insert(db, row)?),
            Storage::Clustered(tree) => {
                let stored = tree.insert_stored(db, row)?;
                RowLocator::Key(tree.stored_key(&stored))
            }
        };
        for (index, tree) in self.nonclustered() {
            tree.insert(db, &Self::secondary_entry(index, row, &locator))?;
        }
        Ok(locator)
    }

    /// Inserts a row into the heap or clustered index only (a rebuild fills the nonclustered
    /// indexes afterwards, each in its key order: [`Table::fill_secondary`]).
    fn insert_base(&self, db: &Database, row: &[Value]) -> SqlResult<RowLocator> {
        self.check_key_lengths(row)?;
        Ok(match &self.base {
            Storage::Heap(heap) => RowLocator::Rid(heap.insert(db, row)?),
            Storage::Clustered(tree) => {
                let stored = tree.insert_stored(db, row)?;
                RowLocator::Key(tree.stored_key(&stored))
            }
        })
    }

    /// Fills the nonclustered index at `position` among them with the entries of `rows`,
    /// sorted by their key first, as SQL Server sorts an index it builds: its pages then fill
    /// in key order, one after the other, rather than splitting at random.
    fn fill_secondary(
        &self,
        db: &Database,
        position: usize,
        rows: &[(RowLocator, Vec<Value>)],
    ) -> SqlResult<()> {
        let (index, tree) = self.nonclustered().nth(position).expect("a nonclustered index");
        let mut entries: Vec<Vec<Value>> =
            rows.iter().map(|(locator, row)| Self::secondary_entry(index, row, locator)).collect();
        entries.sort_by(|a, b| crate::record::compare_keys(a, b));
        for entry in &entries {
            tree.insert(db, entry)?;
        }
        Ok(())
    }

    /// Inserts `rows` into the heap or clustered index, then fills each nonclustered index in
    /// its key order (a rebuild).
    fn fill(&self, db: &Database, rows: Vec<Vec<Value>>) -> SqlResult<()> {
        let mut placed = Vec::with_capacity(rows.len());
        for row in rows {
            placed.push((self.insert_base(db, &row)?, row));
        }
        for position in 0..self.secondary.len() {
            self.fill_secondary(db, position, &placed)?;
        }
        Ok(())
    }

    /// The nonclustered indexes with their definitions (invariant 2: `indexes[1..]`).
    fn nonclustered(&self) -> impl Iterator<Item = (&IndexDef, &BTree)> {
        self.indexes[1..].iter().zip(&self.secondary)
    }

    /// A nonclustered index's entry for a row: its key columns, then the row locator.
    fn secondary_entry(index: &IndexDef, row: &[Value], locator: &RowLocator) -> Vec<Value> {
        let mut entry: Vec<Value> = index.key_columns.iter().map(|c| row[*c].clone()).collect();
        match locator {
            RowLocator::Rid(rid) => entry.push(Value::Bytes(rid.to_bytes().to_vec())),
            RowLocator::Key(key) => entry.extend(key.iter().cloned()),
        }
        entry
    }

    /// Every row with its locator: a heap in allocation order, a clustered index in key order.
    /// In a transaction, rows of a unique clustered index are read committed (key S locks).
    pub fn rows(&self, db: &Database) -> SqlResult<Vec<(RowLocator, Vec<Value>)>> {
        self.base_range(db, None, None)
    }

    /// Rows whose clustered key is within [from, to] (prefixes of the key; None unbounded).
    /// A heap has no key: every row.
    pub fn base_range(
        &self,
        db: &Database,
        from: Option<&[Value]>,
        to: Option<&[Value]>,
    ) -> SqlResult<Vec<(RowLocator, Vec<Value>)>> {
        let count = self.columns.len();
        count_range_start(db, !self.is_heap() && (from.is_some() || to.is_some()));
        match &self.base {
            Storage::Heap(heap) => Ok(heap
                .scan(db)?
                .into_iter()
                .map(|(rid, row)| (RowLocator::Rid(rid), row))
                .collect()),
            Storage::Clustered(tree) if tree.unique => Ok(tree
                .range(db, from, to, false)?
                .into_iter()
                .map(|row| (RowLocator::Key(tree.stored_key(&row)), row))
                .collect()),
            Storage::Clustered(tree) => Ok(tree
                .range_stored(db, from, to)?
                .into_iter()
                .map(|mut row| {
                    let locator = RowLocator::Key(tree.stored_key(&row));
                    row.truncate(count);
                    (locator, row)
                })
                .collect()),
        }
    }

    /// Rows found through nonclustered index `index_position` (its position in `indexes`)
    /// whose index key is within [from, to], each fetched from the heap or clustered index.
    pub fn index_range(
        &self,
        db: &Database,
        index_position: usize,
        from: Option<&[Value]>,
        to: Option<&[Value]>,
    ) -> SqlResult<Vec<(RowLocator, Vec<Value>)>> {
        assert!(index_position >= 1, "invariant 2: position 0 is the base");
        let index = &self.indexes[index_position];
        let tree = &self.secondary[index_position - 1];
        let key_count = index.key_columns.len();
        let mut rows = Vec::new();
        count_range_start(db, from.is_some() || to.is_some());
        for entry in tree.range_stored(db, from, to)? {
            let locator = match &self.base {
                Storage::Heap(_) => RowLocator::Rid(rid_of(&entry[key_count])),
                Storage::Clustered(_) => RowLocator::Key(entry[key_count..].to_vec()),
            };
            if let Some(row) = self.fetch(db, &locator)? {
                rows.push((locator, row));
            }
        }
        Ok(rows)
    }

    /// The row at a locator, if it is there. A lookup by clustered key counts as an index
    /// search (Access Methods); a RID lookup does not.
    pub fn fetch(&self, db: &Database, locator: &RowLocator) -> SqlResult<Option<Vec<Value>>> {
        let count = self.columns.len();
        if matches!(locator, RowLocator::Key(_)) {
            db.instance().counters.count_index_search();
        }
        match (&self.base, locator) {
            (Storage::Heap(heap), RowLocator::Rid(rid)) => heap.get(db, *rid),
            (Storage::Clustered(tree), RowLocator::Key(key)) if tree.unique => tree.seek(db, key),
            (Storage::Clustered(tree), RowLocator::Key(key)) => {
                let mut rows = tree.range_stored(db, Some(key), Some(key))?;
                Ok(rows.pop().map(|mut row| {
                    row.truncate(count);
                    row
                }))
            }
            _ => panic!("a locator of the wrong kind for table {}", self.name),
        }
    }

    /// Deletes the row `row` at `locator` from every index.
    pub fn delete(&self, db: &Database, locator: &RowLocator, row: &[Value]) -> SqlResult<()> {
        for (index, tree) in self.nonclustered() {
            let entry = Self::secondary_entry(index, row, locator);
            tree.delete(db, &tree.stored_key(&entry))?;
        }
        match (&self.base, locator) {
            (Storage::Heap(heap), RowLocator::Rid(rid)) => heap.delete(db, *rid),
            (Storage::Clustered(tree), RowLocator::Key(key)) => tree.delete(db, key).map(|_| ()),
            _ => panic!("a locator of the wrong kind for table {}", self.name),
        }
    }

    /// Replaces row `old` at `locator` by `new`. A heap row is updated in place (its RID
    /// stays, forwarded if it grew out of its page); a clustered row is deleted and inserted
    /// again (deviation: SQL Server updates in place when the key does not change).
    pub fn update(
        &self,
        db: &Database,
        locator: &RowLocator,
        old: &[Value],
        new: &[Value],
    ) -> SqlResult<()> {
        self.check_key_lengths(new)?;
        match (&self.base, locator) {
            (Storage::Heap(heap), RowLocator::Rid(rid)) => {
                heap.update(db, *rid, new)?;
                for (index, tree) in self.nonclustered() {
                    let old_entry = Self::secondary_entry(index, old, locator);
                    let new_entry = Self::secondary_entry(index, new, locator);
                    if old_entry != new_entry {
                        tree.delete(db, &tree.stored_key(&old_entry))?;
                        tree.insert(db, &new_entry)?;
                    }
                }
                Ok(())
            }
            _ => {
                self.delete(db, locator, old)?;
                self.insert(db, new).map(|_| ())
            }
        }
    }
}

fn integer_of(value: &Value) -> Option<i64> {
    match value {
        Value::TinyInt(v) => Some(i64::from(*v)),
        Value::SmallInt(v) => Some(i64::from(*v)),
        Value::Int(v) => Some(i64::from(*v)),
        Value::BigInt(v) => Some(*v),
        Value::Decimal(v, 0) => i64::try_from(*v).ok(),
        _ => None,
    }
}

fn rid_of(value: &Value) -> Rid {
    match value {
        Value::Bytes(bytes) if bytes.len() == 8 => Rid::from_bytes(bytes),
        other => panic!("a heap locator must be a binary(8), not {other:?}"),
    }
}

/// The catalog of one database (module header).
pub struct Catalog {
    objects: BTree,
    columns: BTree,
    indexes: BTree,
    values: BTree,
    tables: RwLock<BTreeMap<String, Arc<Table>>>,
    modules: RwLock<BTreeMap<String, Arc<Module>>>,
    /// Invariant 3.
    ddl: Mutex<()>,
}

fn sysschobjs_columns() -> Vec<Column> {
    vec![
        Column::new("id", SqlType::Int, false),
        Column::new("name", SqlType::NVarChar(128), false),
        Column::new("nsid", SqlType::Int, false),
        Column::new("type", SqlType::Char(2), false),
        Column::new("created", SqlType::DateTime, false),
    ]
}

fn syscolpars_columns() -> Vec<Column> {
    vec![
        Column::new("id", SqlType::Int, false),
        Column::new("colid", SqlType::Int, false),
        Column::new("name", SqlType::NVarChar(128), false),
        Column::new("type_tag", SqlType::TinyInt, false),
        Column::new("length", SqlType::SmallInt, false),
        Column::new("scale", SqlType::TinyInt, false),
        Column::new("is_nullable", SqlType::Bit, false),
        Column::new("is_rowguidcol", SqlType::Bit, false),
        Column::new("ident_seed", SqlType::BigInt, true),
        Column::new("ident_incr", SqlType::BigInt, true),
        Column::new("default_sql", SqlType::NVarChar(MAX_DEFAULT_CHARS), true),
    ]
}

fn sysidxstats_columns() -> Vec<Column> {
    vec![
        Column::new("id", SqlType::Int, false),
        Column::new("indid", SqlType::Int, false),
        Column::new("name", SqlType::NVarChar(128), false),
        Column::new("type", SqlType::TinyInt, false),
        Column::new("is_unique", SqlType::Bit, false),
        Column::new("is_primary_key", SqlType::Bit, false),
        Column::new("au_id", SqlType::BigInt, false),
        Column::new("keys", SqlType::VarBinary(64), false),
    ]
}

fn sysobjvalues_columns() -> Vec<Column> {
    vec![
        Column::new("id", SqlType::Int, false),
        Column::new("seq", SqlType::Int, false),
        Column::new("value", SqlType::NVarChar(DEFINITION_CHUNK_CHARS as u16), false),
    ]
}

/// A system table's B-tree, found by its unit's name, or created (with its unit).
fn system_table(
    db: &Database,
    units: &[(u64, String)],
    name: &str,
    columns: Vec<Column>,
    key_columns: Vec<usize>,
) -> SqlResult<BTree> {
    if let Some((au_id, _)) = units.iter().find(|(_, n)| n == name) {
        let descriptor = db.unit_descriptor(*au_id).ok_or_else(|| catalog_corrupt(db, name))?;
        return BTree::from_descriptor(*au_id, &descriptor)
            .ok_or_else(|| catalog_corrupt(db, name));
    }
    let index = name.trim_start_matches("sys.");
    BTree::create(db, "sys", index, columns, key_columns, true, Some("PRIMARY"))
}

fn bool_of(value: &Value) -> bool {
    matches!(value, Value::Bit(true))
}

fn text_of(value: &Value) -> String {
    match value {
        Value::Text(text) => text.trim_end().to_string(),
        _ => String::new(),
    }
}

fn int_of(value: &Value) -> i64 {
    integer_of(value).unwrap_or(0)
}

/// The datetime of now, as sysschobjs.created stores it.
fn datetime_now(db: &Database) -> Value {
    let now = db.instance().clock.now_local();
    let epoch = chrono::NaiveDate::from_ymd_opt(1900, 1, 1).expect("valid").and_hms_opt(0, 0, 0);
    let since = now - epoch.expect("valid");
    let days = since.num_days() as i32;
    let ms_of_day = (since - chrono::Duration::days(i64::from(days))).num_milliseconds();
    Value::DateTime(days, (ms_of_day * 3 / 10) as u32)
}

impl Catalog {
    /// Opens (or first creates) the system tables and loads every table.
    pub(crate) fn load(db: &Database) -> SqlResult<Catalog> {
        let units = db.allocation_units();
        let catalog = Catalog {
            objects: system_table(db, &units, SYSTEM_UNITS[0], sysschobjs_columns(), vec![0])?,
            columns: system_table(db, &units, SYSTEM_UNITS[1], syscolpars_columns(), vec![0, 1])?,
            indexes: system_table(db, &units, SYSTEM_UNITS[2], sysidxstats_columns(), vec![0, 1])?,
            values: system_table(db, &units, SYSTEM_UNITS[3], sysobjvalues_columns(), vec![0, 1])?,
            tables: RwLock::new(BTreeMap::new()),
            modules: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(()),
        };
        catalog.reload(db)?;
        let orphans: Vec<u64> = units.iter().map(|(au_id, _)| *au_id).collect();
        catalog.drop_unreferenced(db, &orphans)?;
        Ok(catalog)
    }

    /// Reads every table from the system tables (without locks: what the pages hold now).
    pub(crate) fn reload(&self, db: &Database) -> SqlResult<()> {
        let mut columns: BTreeMap<i64, Vec<ColumnDef>> = BTreeMap::new();
        for row in self.columns.range_stored(db, None, None)? {
            let corrupt = || catalog_corrupt(db, "syscolpars");
            let sql_type = SqlType::from_code(
                int_of(&row[3]) as u8,
                int_of(&row[4]) as u16,
                int_of(&row[5]) as u8,
            )
            .ok_or_else(corrupt)?;
            let mut def = ColumnDef::new(&text_of(&row[2]), sql_type, bool_of(&row[6]));
            def.rowguidcol = bool_of(&row[7]);
            if let (Some(seed), Some(step)) = (integer_of(&row[8]), integer_of(&row[9])) {
                def.identity = Some((seed, step));
            }
            if let Value::Text(text) = &row[10] {
                def.default_sql = Some(text.clone());
            }
            columns.entry(int_of(&row[0])).or_default().push(def);
        }
        let mut indexes: BTreeMap<i64, Vec<IndexDef>> = BTreeMap::new();
        for row in self.indexes.range_stored(db, None, None)? {
            let kind = IndexKind::from_code(int_of(&row[3]) as u8)
                .ok_or_else(|| catalog_corrupt(db, "sysidxstats"))?;
            let Value::Bytes(keys) = &row[7] else {
                return Err(catalog_corrupt(db, "sysidxstats"));
            };
            indexes.entry(int_of(&row[0])).or_default().push(IndexDef {
                index_id: int_of(&row[1]) as i32,
                name: text_of(&row[2]),
                kind,
                unique: bool_of(&row[4]),
                primary_key: bool_of(&row[5]),
                key_columns: keys
                    .chunks_exact(2)
                    .map(|pair| usize::from(u16::from_le_bytes([pair[0], pair[1]])))
                    .collect(),
                au_id: int_of(&row[6]) as u64,
            });
        }
        let mut definitions: BTreeMap<i64, String> = BTreeMap::new();
        for row in self.values.range_stored(db, None, None)? {
            let Value::Text(chunk) = &row[2] else {
                return Err(catalog_corrupt(db, "sysobjvalues"));
            };
            definitions.entry(int_of(&row[0])).or_default().push_str(chunk);
        }
        let mut tables = BTreeMap::new();
        let mut modules = BTreeMap::new();
        for row in self.objects.range_stored(db, None, None)? {
            let object_id = int_of(&row[0]);
            let name = text_of(&row[1]);
            let type_code = match &row[3] {
                Value::Text(code) => code.clone(),
                _ => return Err(catalog_corrupt(db, "sysschobjs")),
            };
            if type_code.trim_end() != "U" {
                let definition = definitions.remove(&object_id).unwrap_or_default();
                let module = Module { object_id: object_id as i32, name, type_code, definition };
                modules.insert(name_key(&module.name), Arc::new(module));
                continue;
            }
            let table = build_table(
                db,
                object_id as i32,
                &name,
                columns.remove(&object_id).unwrap_or_default(),
                indexes.remove(&object_id).unwrap_or_default(),
            )?;
            tables.insert(name_key(&name), Arc::new(table));
        }
        *self.tables.write() = tables;
        *self.modules.write() = modules;
        Ok(())
    }

    /// sysschobjs.created of every object (tables and procedures), by object id: what
    /// sys.objects shows as create_date (and modify_date, which extentdb does not track apart).
    pub fn created_dates(&self, db: &Database) -> SqlResult<BTreeMap<i32, Value>> {
        let mut dates = BTreeMap::new();
        for row in self.objects.range_stored(db, None, None)? {
            dates.insert(int_of(&row[0]) as i32, row[4].clone());
        }
        Ok(dates)
    }

    /// The module (procedure) called `name`, if any.
    pub fn module(&self, name: &str) -> Option<Arc<Module>> {
        self.modules.read().get(&name_key(name)).cloned()
    }

    /// Every module, by name.
    pub fn modules(&self) -> Vec<Arc<Module>> {
        self.modules.read().values().cloned().collect()
    }

    fn name_taken(&self, name: &str) -> bool {
        self.table(name).is_some() || self.module(name).is_some()
    }

    /// CREATE PROCEDURE, in the session's transaction: a sysschobjs row of type `P ` and the
    /// definition in sysobjvalues rows of [`DEFINITION_CHUNK_CHARS`] characters.
    pub fn create_module(&self, db: &Database, name: &str, definition: &str) -> SqlResult<()> {
        let _ddl = self.ddl.lock();
        if self.name_taken(name) {
            return Err(already_exists(name));
        }
        let object_id = self.next_object_id();
        self.insert_module_rows(db, object_id, name, definition)
    }

    /// ALTER PROCEDURE: a new definition under the same object id.
    pub fn alter_module(&self, db: &Database, name: &str, definition: &str) -> SqlResult<()> {
        let _ddl = self.ddl.lock();
        let module = self.module(name).ok_or_else(|| invalid_object(name))?;
        self.delete_module_rows(db, &module)?;
        self.insert_module_rows(db, module.object_id, &module.name, definition)
    }

    fn insert_module_rows(
        &self,
        db: &Database,
        object_id: i32,
        name: &str,
        definition: &str,
    ) -> SqlResult<()> {
        xact::note_ddl(db.database_id, &[]);
        let object_row = vec![
            Value::Int(object_id),
            Value::Text(name.to_string()),
            Value::Int(1),
            Value::Text("P ".to_string()),
            datetime_now(db),
        ];
        self.objects.insert(db, &object_row)?;
        let chars: Vec<char> = definition.chars().collect();
        for (seq, chunk) in chars.chunks(DEFINITION_CHUNK_CHARS).enumerate() {
            let text: String = chunk.iter().collect();
            let row = [Value::Int(object_id), Value::Int(seq as i32), Value::Text(text)];
            self.values.insert(db, &row)?;
        }
        let module = Module {
            object_id,
            name: name.to_string(),
            type_code: "P ".to_string(),
            definition: definition.to_string(),
        };
        self.modules.write().insert(name_key(name), Arc::new(module));
        Ok(())
    }

    fn delete_module_rows(&self, db: &Database, module: &Module) -> SqlResult<()> {
        xact::note_ddl(db.database_id, &[]);
        self.objects.delete(db, &[Value::Int(module.object_id)])?;
        let chunks = module.definition.chars().count().div_ceil(DEFINITION_CHUNK_CHARS);
        for seq in 0..chunks {
            self.values.delete(db, &[Value::Int(module.object_id), Value::Int(seq as i32)])?;
        }
        self.modules.write().remove(&name_key(&module.name));
        Ok(())
    }

    /// DROP PROCEDURE, in the session's transaction (3701 if there is none).
    pub fn drop_module(&self, db: &Database, name: &str) -> SqlResult<()> {
        let _ddl = self.ddl.lock();
        let module = self.module(name).ok_or_else(|| {
            SqlError::new(
                3701,
                11,
                5,
                format!(
                    "Cannot drop the procedure '{name}', because it does not exist or you do not have permission."
                ),
            )
        })?;
        self.delete_module_rows(db, &module)
    }

    /// The table called `name` (case-insensitive), if any.
    pub fn table(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.read().get(&name_key(name)).cloned()
    }

    /// The system tables, as DBCC CHECKDB names and checks them: object id, name, B-tree.
    pub fn system_tables(&self) -> [(i32, &'static str, &BTree); 4] {
        [
            (SYSSCHOBJS_ID, "sys.sysschobjs", &self.objects),
            (SYSCOLPARS_ID, "sys.syscolpars", &self.columns),
            (SYSIDXSTATS_ID, "sys.sysidxstats", &self.indexes),
            (SYSOBJVALUES_ID, "sys.sysobjvalues", &self.values),
        ]
    }

    /// The table with this object id.
    pub fn table_by_id(&self, object_id: i32) -> Option<Arc<Table>> {
        self.tables.read().values().find(|t| t.object_id == object_id).cloned()
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.read().values().cloned().collect()
    }

    fn next_object_id(&self) -> i32 {
        let tables = self.tables.read();
        let modules = self.modules.read();
        let table_ids = tables.values().map(|t| t.object_id + 1);
        let module_ids = modules.values().map(|m| m.object_id + 1);
        table_ids.chain(module_ids).max().unwrap_or(FIRST_USER_OBJECT_ID)
    }

    /// Drops the units among `candidates` that belong to tables (by name) but that no table
    /// references (after a commit, a rollback, or a crash).
    fn drop_unreferenced(&self, db: &Database, candidates: &[u64]) -> SqlResult<()> {
        let _ddl = self.ddl.lock();
        let referenced: BTreeSet<u64> =
            self.tables.read().values().flat_map(|t| t.au_ids()).collect();
        let units: BTreeMap<u64, String> = db.allocation_units().into_iter().collect();
        let candidates: BTreeSet<&u64> = candidates.iter().collect();
        for au_id in candidates {
            let Some(name) = units.get(au_id) else { continue };
            if name.starts_with(&format!("{DBO}.")) && !referenced.contains(au_id) {
                db.drop_allocation_unit(*au_id)?;
            }
        }
        Ok(())
    }

    /// Called when a transaction that ran DDL ends: the cache is read again after a rollback,
    /// and the units the transaction created or dropped that no table references now go.
    pub(crate) fn after_transaction(
        &self,
        db: &Database,
        units: &[u64],
        committed: bool,
    ) -> SqlResult<()> {
        if !committed {
            self.reload(db)?;
        }
        self.drop_unreferenced(db, units)
    }

    /// CREATE TABLE, in the session's transaction.
    pub fn create_table(&self, db: &Database, spec: &TableSpec) -> SqlResult<Arc<Table>> {
        let _ddl = self.ddl.lock();
        if self.name_taken(&spec.name) {
            return Err(already_exists(&spec.name));
        }
        for index in &spec.indexes {
            check_key_size(&spec.columns, index)?;
        }
        let object_id = self.next_object_id();
        let mut columns = spec.columns.clone();
        let clustered = spec.indexes.iter().find(|i| i.clustered);
        // A PRIMARY KEY makes its columns NOT NULL; any other index, clustered or not, keeps
        // NULLs (a unique one admits one NULL, as SQL Server's does).
        for index in spec.indexes.iter().filter(|i| i.primary_key) {
            for key in &index.key_columns {
                columns[*key].column.nullable = false;
            }
        }
        let plain: Vec<Column> = columns.iter().map(|c| c.column.clone()).collect();
        let table_name = format!("{DBO}.{}", spec.name);
        let mut indexes = Vec::new();
        let mut created = Vec::new();
        let result = (|| {
            let base = create_base(db, &table_name, &plain, clustered, spec.filegroup.as_deref())?;
            created.push(base.au_id);
            indexes.push(base);
            for index in spec.indexes.iter().filter(|i| !i.clustered) {
                let index_id = indexes.len() as i32 + 1;
                let def = create_secondary(db, &table_name, &plain, &indexes[0], index, index_id)?;
                created.push(def.au_id);
                indexes.push(def);
            }
            self.insert_table_rows(db, object_id, &spec.name, &columns, &indexes)
        })();
        xact::note_ddl(db.database_id, &created);
        result?;
        let table = Arc::new(build_table(db, object_id, &spec.name, columns, indexes)?);
        self.tables.write().insert(name_key(&spec.name), table.clone());
        Ok(table)
    }

    fn insert_table_rows(
        &self,
        db: &Database,
        object_id: i32,
        name: &str,
        columns: &[ColumnDef],
        indexes: &[IndexDef],
    ) -> SqlResult<()> {
        let object_row = vec![
            Value::Int(object_id),
            Value::Text(name.to_string()),
            Value::Int(1),
            Value::Text("U ".to_string()),
            datetime_now(db),
        ];
        self.objects.insert(db, &object_row)?;
        for (position, column) in columns.iter().enumerate() {
            self.columns.insert(db, &column_row(object_id, position, column))?;
        }
        for index in indexes {
            self.indexes.insert(db, &index_row(object_id, index))?;
        }
        Ok(())
    }

    /// DROP TABLE, in the session's transaction: its catalog rows go now, its units when the
    /// transaction commits.
    pub fn drop_table(&self, db: &Database, name: &str) -> SqlResult<()> {
        let table = self.table(name).ok_or_else(|| {
            SqlError::new(
                3701,
                11,
                5,
                format!(
                    "Cannot drop the table '{name}', because it does not exist or you do not have permission."
                ),
            )
        })?;
        table.lock(db, LockMode::X)?;
        let _ddl = self.ddl.lock();
        self.delete_table_rows(db, &table)?;
        xact::note_ddl(db.database_id, &table.au_ids());
        self.tables.write().remove(&name_key(&table.name));
        Ok(())
    }

    fn delete_table_rows(&self, db: &Database, table: &Table) -> SqlResult<()> {
        self.objects.delete(db, &[Value::Int(table.object_id)])?;
        for position in 0..table.columns.len() {
            self.columns.delete(db, &[Value::Int(table.object_id), Value::Int(position as i32)])?;
        }
        for index in &table.indexes {
            self.indexes.delete(db, &[Value::Int(table.object_id), Value::Int(index.index_id)])?;
        }
        Ok(())
    }

    /// CREATE INDEX, in the session's transaction. A nonclustered index is built from the
    /// table's rows; a clustered index on a heap rebuilds the table (its rows move from the
    /// heap into the new B-tree, and every nonclustered index is built again, keyed to the
    /// clustered key), as SQL Server does.
    pub fn create_index(&self, db: &Database, table_name: &str, spec: &IndexSpec) -> SqlResult<()> {
        let table = self.table(table_name).ok_or_else(|| invalid_object(table_name))?;
        table.lock(db, LockMode::X)?;
        let _ddl = self.ddl.lock();
        check_key_size(&table.columns, spec)?;
        if table.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&spec.name)) {
            return Err(SqlError::new(
                1913,
                16,
                1,
                format!(
                    "The operation failed because an index or statistics with name '{}' already exists on table '{}'.",
                    spec.name,
                    table.qualified_name()
                ),
            ));
        }
        if spec.clustered && !table.is_heap() {
            return Err(SqlError::new(
                1902,
                16,
                3,
                format!(
                    "Cannot create more than one clustered index on table '{}'. Drop the existing clustered index '{}' before creating another.",
                    table.qualified_name(),
                    table.indexes[0].name
                ),
            ));
        }
        let rows = table.rows(db)?;
        let columns = table.columns.clone();
        let plain: Vec<Column> = columns.iter().map(|c| c.column.clone()).collect();
        let table_name = table.qualified_name();
        let mut created = Vec::new();
        let result = (|| {
            let mut indexes = Vec::new();
            if spec.clustered {
                let base =
                    create_base(db, &table_name, &plain, Some(spec), spec.filegroup.as_deref())?;
                created.push(base.au_id);
                indexes.push(base);
                for old in &table.indexes[1..] {
                    let again = IndexSpec {
                        name: old.name.clone(),
                        clustered: false,
                        unique: old.unique,
                        primary_key: old.primary_key,
                        key_columns: old.key_columns.clone(),
                        filegroup: None,
                    };
                    let def = create_secondary(
                        db,
                        &table_name,
                        &plain,
                        &indexes[0],
                        &again,
                        old.index_id,
                    )?;
                    created.push(def.au_id);
                    indexes.push(def);
                }
            } else {
                indexes = table.indexes.clone();
                let index_id = indexes.iter().map(|i| i.index_id).max().unwrap_or(1).max(1) + 1;
                let def = create_secondary(db, &table_name, &plain, &indexes[0], spec, index_id)?;
                created.push(def.au_id);
                indexes.push(def);
            }
            let rebuilt = build_table(db, table.object_id, &table.name, columns.clone(), indexes)?;
            if spec.clustered {
                rebuilt.fill(db, rows.into_iter().map(|(_, row)| row).collect())?;
            } else {
                rebuilt.fill_secondary(db, rebuilt.secondary.len() - 1, &rows)?;
            }
            self.delete_table_rows(db, &table)?;
            self.insert_table_rows(db, table.object_id, &table.name, &columns, &rebuilt.indexes)?;
            Ok(rebuilt)
        })();
        let mut units = created;
        if spec.clustered {
            units.extend(table.au_ids());
        }
        xact::note_ddl(db.database_id, &units);
        let rebuilt = result?;
        self.tables.write().insert(name_key(&table.name), Arc::new(rebuilt));
        Ok(())
    }

    /// ALTER TABLE ... ADD / DROP COLUMN, in the session's transaction: the table is built
    /// again with `columns`, as SQL Server rebuilds a table for a change it cannot make in
    /// its metadata alone. `old_to_new` gives each old column's position among `columns`
    /// (None: dropped; no index may use a dropped column, which the caller checks: 5074).
    /// Every row goes through `convert` (the old row in, the new row out), into new
    /// allocation units for the heap or clustered index and each nonclustered index, each in
    /// the filegroup of the unit it replaces; the old units go when the transaction commits,
    /// the new ones if it rolls back. The object id and index ids stay.
    pub fn rebuild_table(
        &self,
        db: &Database,
        table_name: &str,
        columns: Vec<ColumnDef>,
        old_to_new: &[Option<usize>],
        convert: &mut dyn FnMut(Vec<Value>) -> SqlResult<Vec<Value>>,
    ) -> SqlResult<()> {
        let table = self.table(table_name).ok_or_else(|| invalid_object(table_name))?;
        assert_eq!(old_to_new.len(), table.columns.len(), "one position per old column");
        table.lock(db, LockMode::X)?;
        let _ddl = self.ddl.lock();
        let rows = table.rows(db)?;
        let plain: Vec<Column> = columns.iter().map(|c| c.column.clone()).collect();
        let qualified = table.qualified_name();
        let mut created = Vec::new();
        let result = (|| {
            let specs: Vec<IndexSpec> = table
                .indexes
                .iter()
                .map(|old| IndexSpec {
                    name: old.name.clone(),
                    clustered: old.kind == IndexKind::Clustered,
                    unique: old.unique,
                    primary_key: old.primary_key,
                    key_columns: old
                        .key_columns
                        .iter()
                        .map(|k| old_to_new[*k].expect("an index on a dropped column (5074)"))
                        .collect(),
                    filegroup: db.unit_filegroup_name(old.au_id),
                })
                .collect();
            let clustered = specs.first().filter(|s| s.clustered);
            let heap_filegroup = specs[0].filegroup.as_deref();
            let mut indexes = vec![create_base(db, &qualified, &plain, clustered, heap_filegroup)?];
            created.push(indexes[0].au_id);
            for (old, spec) in table.indexes[1..].iter().zip(&specs[1..]) {
                let def =
                    create_secondary(db, &qualified, &plain, &indexes[0], spec, old.index_id)?;
                created.push(def.au_id);
                indexes.push(def);
            }
            let rebuilt = build_table(db, table.object_id, &table.name, columns.clone(), indexes)?;
            let mut converted = Vec::with_capacity(rows.len());
            for (_, row) in rows {
                converted.push(convert(row)?);
            }
            rebuilt.fill(db, converted)?;
            self.delete_table_rows(db, &table)?;
            self.insert_table_rows(db, table.object_id, &table.name, &columns, &rebuilt.indexes)?;
            Ok(rebuilt)
        })();
        let mut units = created;
        units.extend(table.au_ids());
        xact::note_ddl(db.database_id, &units);
        let rebuilt = result?;
        self.tables.write().insert(name_key(&table.name), Arc::new(rebuilt));
        Ok(())
    }

    /// ALTER INDEX ... REBUILD of one index, in the session's transaction: the heap or
    /// clustered index (position 0) rebuilds the table ([`Catalog::rebuild_table`], which
    /// builds its nonclustered indexes again too); a nonclustered index is built again from
    /// the table's rows into a new allocation unit in its filegroup. The old units go when the
    /// transaction commits, the new ones if it rolls back; names and index ids stay.
    pub fn rebuild_index(&self, db: &Database, table_name: &str, position: usize) -> SqlResult<()> {
        let table = self.table(table_name).ok_or_else(|| invalid_object(table_name))?;
        assert!(position < table.indexes.len(), "an index of the table");
        if position == 0 {
            let unchanged: Vec<Option<usize>> = (0..table.columns.len()).map(Some).collect();
            return self.rebuild_table(db, table_name, table.columns.clone(), &unchanged, &mut Ok);
        }
        table.lock(db, LockMode::X)?;
        let _ddl = self.ddl.lock();
        let rows = table.rows(db)?;
        let plain: Vec<Column> = table.columns.iter().map(|c| c.column.clone()).collect();
        let old = &table.indexes[position];
        let spec = IndexSpec {
            name: old.name.clone(),
            clustered: false,
            unique: old.unique,
            primary_key: old.primary_key,
            key_columns: old.key_columns.clone(),
            filegroup: db.unit_filegroup_name(old.au_id),
        };
        let mut created = Vec::new();
        let result = (|| {
            let mut indexes = table.indexes.clone();
            let qualified = table.qualified_name();
            let def = create_secondary(db, &qualified, &plain, &indexes[0], &spec, old.index_id)?;
            created.push(def.au_id);
            indexes[position] = def;
            let rebuilt =
                build_table(db, table.object_id, &table.name, table.columns.clone(), indexes)?;
            rebuilt.fill_secondary(db, position - 1, &rows)?;
            self.delete_table_rows(db, &table)?;
            self.insert_table_rows(
                db,
                table.object_id,
                &table.name,
                &table.columns,
                &rebuilt.indexes,
            )?;
            Ok(rebuilt)
        })();
        created.push(old.au_id);
        xact::note_ddl(db.database_id, &created);
        let rebuilt = result?;
        self.tables.write().insert(name_key(&table.name), Arc::new(rebuilt));
        Ok(())
    }

    /// DROP INDEX table.index (a nonclustered index; a clustered one is 3723-like refused).
    pub fn drop_index(&self, db: &Database, table_name: &str, index_name: &str) -> SqlResult<()> {
        let table = self.table(table_name).ok_or_else(|| invalid_object(table_name))?;
        let Some(position) =
            table.indexes.iter().position(|i| i.name.eq_ignore_ascii_case(index_name))
        else {
            return Err(SqlError::new(
                3701,
                11,
                7,
                format!(
                    "Cannot drop the index '{table_name}.{index_name}', because it does not exist or you do not have permission."
                ),
            ));
        };
        if position == 0 {
            return Err(SqlError::new(
                50000,
                16,
                1,
                "Dropping a clustered index is not supported yet: drop and create the table.",
            ));
        }
        table.lock(db, LockMode::X)?;
        let _ddl = self.ddl.lock();
        let index = &table.indexes[position];
        self.indexes.delete(db, &[Value::Int(table.object_id), Value::Int(index.index_id)])?;
        xact::note_ddl(db.database_id, &[index.au_id]);
        let mut indexes = table.indexes.clone();
        indexes.remove(position);
        let rebuilt =
            build_table(db, table.object_id, &table.name, table.columns.clone(), indexes)?;
        self.tables.write().insert(name_key(&table.name), Arc::new(rebuilt));
        Ok(())
    }
}

/// 208.
pub fn invalid_object(name: &str) -> SqlError {
    SqlError::new(208, 16, 1, format!("Invalid object name '{name}'."))
}

fn column_row(object_id: i32, position: usize, column: &ColumnDef) -> Vec<Value> {
    let (tag, size, scale) = column.column.sql_type.code();
    let (seed, step) = match column.identity {
        Some((seed, step)) => (Value::BigInt(seed), Value::BigInt(step)),
        None => (Value::Null, Value::Null),
    };
    vec![
        Value::Int(object_id),
        Value::Int(position as i32),
        Value::Text(column.column.name.clone()),
        Value::TinyInt(tag),
        Value::SmallInt(size as i16),
        Value::TinyInt(scale),
        Value::Bit(column.column.nullable),
        Value::Bit(column.rowguidcol),
        seed,
        step,
        column.default_sql.clone().map_or(Value::Null, Value::Text),
    ]
}

fn index_row(object_id: i32, index: &IndexDef) -> Vec<Value> {
    let keys: Vec<u8> = index.key_columns.iter().flat_map(|k| (*k as u16).to_le_bytes()).collect();
    vec![
        Value::Int(object_id),
        Value::Int(index.index_id),
        Value::Text(index.name.clone()),
        Value::TinyInt(index.kind as u8),
        Value::Bit(index.unique),
        Value::Bit(index.primary_key),
        Value::BigInt(index.au_id as i64),
        Value::Bytes(keys),
    ]
}

/// Creates the heap or the clustered index of a table.
fn create_base(
    db: &Database,
    table_name: &str,
    columns: &[Column],
    clustered: Option<&IndexSpec>,
    filegroup: Option<&str>,
) -> SqlResult<IndexDef> {
    let Some(spec) = clustered else {
        let heap = Heap::create(db, table_name, columns.to_vec(), filegroup)?;
        return Ok(IndexDef {
            index_id: 0,
            name: String::new(),
            kind: IndexKind::Heap,
            unique: false,
            primary_key: false,
            key_columns: Vec::new(),
            au_id: heap.au_id,
        });
    };
    let filegroup = spec.filegroup.as_deref().or(filegroup);
    let (name, keys) = (&spec.name, spec.key_columns.clone());
    let tree = if spec.unique {
        BTree::create(db, table_name, name, columns.to_vec(), keys, spec.primary_key, filegroup)?
    } else {
        BTree::create_non_unique(db, table_name, name, columns.to_vec(), keys, filegroup)?
    };
    Ok(IndexDef {
        index_id: 1,
        name: spec.name.clone(),
        kind: IndexKind::Clustered,
        unique: spec.unique,
        primary_key: spec.primary_key,
        key_columns: spec.key_columns.clone(),
        au_id: tree.au_id,
    })
}

/// The row-locator columns that nonclustered indexes of a table with base `base` carry.
fn locator_columns(columns: &[Column], base: &IndexDef) -> Vec<Column> {
    if base.kind == IndexKind::Heap {
        return vec![Column::new("RID", SqlType::Binary(8), false)];
    }
    let mut locator: Vec<Column> = base.key_columns.iter().map(|k| columns[*k].clone()).collect();
    if !base.unique {
        locator.push(Column::new(crate::btree::UNIQUIFIER, SqlType::VarBinary(4), true));
    }
    locator
}

fn create_secondary(
    db: &Database,
    table_name: &str,
    columns: &[Column],
    base: &IndexDef,
    spec: &IndexSpec,
    index_id: i32,
) -> SqlResult<IndexDef> {
    let keys: Vec<Column> = spec.key_columns.iter().map(|k| columns[*k].clone()).collect();
    let locator = locator_columns(columns, base);
    let tree = BTree::create_nonclustered(
        db,
        table_name,
        &spec.name,
        keys,
        locator,
        spec.unique,
        spec.filegroup.as_deref(),
    )?;
    Ok(IndexDef {
        index_id,
        name: spec.name.clone(),
        kind: IndexKind::Nonclustered,
        unique: spec.unique,
        primary_key: spec.primary_key,
        key_columns: spec.key_columns.clone(),
        au_id: tree.au_id,
    })
}

/// A table from its catalog rows: its storage opened from the units' descriptors.
fn build_table(
    db: &Database,
    object_id: i32,
    name: &str,
    columns: Vec<ColumnDef>,
    mut indexes: Vec<IndexDef>,
) -> SqlResult<Table> {
    indexes.sort_by_key(|i| i.index_id);
    let corrupt = || catalog_corrupt(db, &format!("table {name}"));
    let first = indexes.first().ok_or_else(corrupt)?;
    let descriptor = |au_id: u64| db.unit_descriptor(au_id).ok_or_else(corrupt);
    let base = match first.kind {
        IndexKind::Heap => Storage::Heap(
            Heap::from_descriptor(first.au_id, &descriptor(first.au_id)?).ok_or_else(corrupt)?,
        ),
        IndexKind::Clustered => Storage::Clustered(Box::new(
            BTree::from_descriptor(first.au_id, &descriptor(first.au_id)?).ok_or_else(corrupt)?,
        )),
        IndexKind::Nonclustered => return Err(corrupt()),
    };
    let mut secondary = Vec::new();
    for index in &indexes[1..] {
        if index.kind != IndexKind::Nonclustered {
            return Err(corrupt());
        }
        let mut tree =
            BTree::from_descriptor(index.au_id, &descriptor(index.au_id)?).ok_or_else(corrupt)?;
        // The descriptor knows nonclustered indexes as unique or not; the catalog knows which
        // one enforces the primary key (2627 rather than 2601).
        tree.primary_key = index.primary_key;
        secondary.push(tree);
    }
    Ok(Table {
        object_id,
        name: name.to_string(),
        columns,
        indexes,
        base,
        secondary,
        identity_next: Mutex::new(None),
    })
}

/// Access Methods: a scan or seek starts. A key bound makes it an index search (a seek that
/// starts a range scan); without one it is a full scan.
fn count_range_start(db: &Database, bounded: bool) {
    if bounded {
        db.instance().counters.count_index_search();
    } else {
        db.instance().counters.count_full_scan();
    }
}
