//! Transactions: BEGIN TRAN, COMMIT, ROLLBACK and savepoints on a session's thread, with the
//! log records that make them durable and undoable (reference §5.5, §5.7). A session whose
//! requests run on different threads carries its open transaction between them ([`detach`],
//! [`attach`]).
//!
//! What it reproduces:
//! - A transaction is a chain of log records linked by Previous LSN: LOP_BEGIN_XACT, one
//!   logical record per row change (LOP_INSERT_ROWS, LOP_DELETE_ROWS, with the allocation unit
//!   and the row), then LOP_COMMIT_XACT or LOP_ABORT_XACT. A row change's logical record is
//!   appended in the same group as its page changes (one mini-transaction), so it exists exactly
//!   when the change does.
//! - LOP_BEGIN_XACT is written with the transaction's first change, not at BEGIN TRAN, as in
//!   SQL Server: a transaction that only reads writes no log record at all (no begin, commit
//!   or abort record), never holds the log's truncation back (log_reuse_wait_desc
//!   ACTIVE_TRANSACTION) and waits for no flush.
//! - Commit appends LOP_COMMIT_XACT and waits until the log is durable up to it (fdatasync,
//!   group commit; the wait is WRITELOG). With delayed durability it does not wait.
//! - Rollback (whole, or to a savepoint) undoes the row changes newest first by logical
//!   operations on the index (an insert is undone by deleting the key, a delete by inserting the
//!   row again). Each undo logs compensation records (CLRs): flag [`FLAG_CLR`] and an undo-next
//!   LSN, so an undo is never undone and a rollback cut short by a crash resumes where it was.
//! - Recovery undoes every transaction the log shows begun but not ended, the same way.
//! - Table variables are outside transactions ([`Database::keep_through_rollback`]): a
//!   rollback skips their units' changes, except those of the statement running when it comes
//!   ([`Database::begin_statement`]); a failed statement's own rollback undoes them too.
//!
//! Invariants:
//! 1. A mini-transaction carries at most one logical record of a transaction: a record's
//!    Previous LSN is the transaction's last LSN when the record is made, so a second record in
//!    the same group would point past the first, and recovery, which walks the chain backwards,
//!    would never undo the first. (A debug assertion where the record is made.)
//! 2. A loser's chain is whole from its last record back to its LOP_BEGIN_XACT in the records
//!    analysis read from MinLSN (log invariant 4); recovery's undo reports a missing link as
//!    9004 rather than ending the rollback there.
//!
//! Locks a transaction takes ([`lock`]): what its reads lock follows the thread's
//! [`ReadLocks`] (READ UNCOMMITTED none, READ COMMITTED a short S lock per row, REPEATABLE READ
//! S locks to the end), and a wait ends early by its session's [`WaitLimits`] (LOCK_TIMEOUT,
//! a cancel).
//!
//! Deviations: row operations made outside a transaction are logged and redone but never undone,
//! and take no locks (the T-SQL layer wraps every statement in a transaction, as SQL Server's
//! autocommit does);
//! a heap row deleted in a transaction stays as a ghost (its RID reserved) until the commit
//! empties its slot; if a crash comes between the commit and that, the ghost stays (invisible,
//! its space not reused) until the row's page is next rewritten.

use crate::btree::BTree;
use crate::database::Database;
use crate::error::{SqlError, SqlResult};
use crate::heap::{Heap, Rid};
use crate::lock::{Acquired, DeadlockReport, LockMode, LockOwner, LockResource, WaitLimits};
use crate::log::lsn::{LSN_BYTES, Lsn};
use crate::log::mtr;
use crate::log::record::{Context, LogRecord, Operation};
use crate::traceflags::{TF_DEADLOCK_TEXT, TF_DEADLOCK_XML};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

/// Flag bit of a compensation log record (the undo of a row change).
pub const FLAG_CLR: u16 = 0x0008;

/// An inserted row's key, encoded as an index entry, kept for the insert's undo: inline up to
/// 32 bytes (a uniqueidentifier key's entry is 29), on the heap beyond. A transaction keeps one
/// per row until it ends and then frees them all at once; as separate heap buffers, each took
/// about 430 instructions in malloc and free (the allocator's per-thread cache holds only a
/// few of a size, so most came from and went back to its slower bins).
pub type UndoKey = smallvec::SmallVec<[u8; 32]>;

/// A row change a transaction made, as its logical log record carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// A B-tree row inserted (undo: ghost its key); `record` holds the key only, encoded as
    /// an index entry.
    Insert { au_id: u64, record: UndoKey },
    /// A B-tree row deleted (undo: insert it again).
    Delete { au_id: u64, record: Vec<u8> },
    /// A heap row inserted at `rid` (undo: remove it).
    HeapInsert { au_id: u64, rid: [u8; 8] },
    /// A heap row deleted: the record at `target` (the row's own RID `rid`, or where its
    /// forwarding stub points) became a ghost until commit (undo: the original `record` back).
    HeapDelete { au_id: u64, rid: [u8; 8], target: [u8; 8], record: Vec<u8> },
    /// A heap row updated (undo: update it back to `record`, the old row).
    HeapUpdate { au_id: u64, rid: [u8; 8], record: Vec<u8> },
}

impl RowOp {
    fn operation(&self) -> (Operation, Context) {
        match self {
            RowOp::Insert { .. } => (Operation::InsertRows, Context::Clustered),
            RowOp::Delete { .. } => (Operation::DeleteRows, Context::Clustered),
            RowOp::HeapInsert { .. } => (Operation::InsertRows, Context::Heap),
            RowOp::HeapDelete { .. } => (Operation::DeleteRows, Context::Heap),
            RowOp::HeapUpdate { .. } => (Operation::ModifyRow, Context::Heap),
        }
    }

    /// Payload: au_id u64, undo-next LSN (CLRs; null otherwise), then for heaps the RID (and
    /// for a delete the target RID), then the record bytes. A CLR (`undo_next` given) leaves
    /// the record bytes out: it is never undone, and its redo is in its group's page records,
    /// so rolling back a row costs a short record whatever the row's size.
    fn payload(&self, undo_next: Option<Lsn>) -> Vec<u8> {
        let mut out = crate::log::mtr::take_buffer(64);
        out.extend_from_slice(&self.au_id().to_le_bytes());
        out.extend_from_slice(&undo_next.unwrap_or(Lsn::NULL).to_bytes());
        let row_image = undo_next.is_none();
        match self {
            RowOp::Insert { record, .. } => {
                if row_image {
                    out.extend_from_slice(record)
                }
            }
            RowOp::Delete { record, .. } => {
                if row_image {
                    out.extend_from_slice(record)
                }
            }
            RowOp::HeapInsert { rid, .. } => out.extend_from_slice(rid),
            RowOp::HeapDelete { rid, target, record, .. } => {
                out.extend_from_slice(rid);
                out.extend_from_slice(target);
                if row_image {
                    out.extend_from_slice(record);
                }
            }
            RowOp::HeapUpdate { rid, record, .. } => {
                out.extend_from_slice(rid);
                if row_image {
                    out.extend_from_slice(record);
                }
            }
        }
        out
    }

    /// The row change and undo-next LSN of a logical record.
    pub fn decode(record: &LogRecord) -> Option<(RowOp, Lsn)> {
        let payload = &record.payload;
        if payload.len() < 8 + LSN_BYTES {
            return None;
        }
        let au_id = u64::from_le_bytes(payload[0..8].try_into().ok()?);
        let undo_next = Lsn::from_bytes(&payload[8..8 + LSN_BYTES]);
        let rest = &payload[8 + LSN_BYTES..];
        let rid_at = |at: usize| -> Option<[u8; 8]> { rest.get(at..at + 8)?.try_into().ok() };
        let op = match (record.operation, record.context) {
            (Operation::InsertRows, Context::Heap) => RowOp::HeapInsert { au_id, rid: rid_at(0)? },
            (Operation::DeleteRows, Context::Heap) => RowOp::HeapDelete {
                au_id,
                rid: rid_at(0)?,
                target: rid_at(8)?,
                record: rest.get(16..)?.to_vec(),
            },
            (Operation::ModifyRow, Context::Heap) => {
                RowOp::HeapUpdate { au_id, rid: rid_at(0)?, record: rest.get(8..)?.to_vec() }
            }
            (Operation::InsertRows, _) => {
                RowOp::Insert { au_id, record: UndoKey::from_slice(rest) }
            }
            (Operation::DeleteRows, _) => RowOp::Delete { au_id, record: rest.to_vec() },
            _ => return None,
        };
        Some((op, undo_next))
    }

    /// Log bytes the undo of this change writes, at most: the compensation's page changes (a
    /// ghosted row and its PFS ghost bit; a re-inserted or restored row, with a page split at
    /// worst for a B-tree re-insert) and its CLR, which carries no row image.
    fn undo_log_bytes(&self) -> u64 {
        const PAGE_CHANGE_BYTES: u64 = 512;
        const CLR_BYTES: u64 = 64;
        match self {
            RowOp::Insert { .. } | RowOp::HeapInsert { .. } => PAGE_CHANGE_BYTES + CLR_BYTES,
            RowOp::HeapDelete { record, .. } => PAGE_CHANGE_BYTES + record.len() as u64 + CLR_BYTES,
            RowOp::Delete { record, .. } | RowOp::HeapUpdate { record, .. } => {
                3 * 8192 + record.len() as u64 + CLR_BYTES
            }
        }
    }

    fn au_id(&self) -> u64 {
        match self {
            RowOp::Insert { au_id, .. }
            | RowOp::Delete { au_id, .. }
            | RowOp::HeapInsert { au_id, .. }
            | RowOp::HeapDelete { au_id, .. }
            | RowOp::HeapUpdate { au_id, .. } => *au_id,
        }
    }
}

/// Where a statement began in its transaction ([`Database::begin_statement`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatementMark {
    /// The transaction the statement began in (one that ended inside the statement, and a
    /// new one begun there, leaves the new one's statement start alone).
    xact_id: u64,
    /// The transaction's undo list's length when the statement began.
    at: usize,
    /// The enclosing statement's start (a procedure's statement runs inside its EXEC).
    outer: Option<usize>,
}

/// Which changes to units outside transactions a rollback undoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UndoKept {
    /// All of them: a failed statement's own rollback.
    All,
    /// Only the running statement's: ROLLBACK, to a savepoint or whole, for any reason.
    RunningStatementOnly,
}

/// One undoable change of the open transaction.
struct UndoEntry {
    prev_lsn: Lsn,
    op: RowOp,
}

struct OpenXact {
    database_id: u16,
    xact_id: u64,
    /// Its LOP_BEGIN_XACT, once written: as in SQL Server, a transaction's begin record is
    /// written with its first change, so a transaction that only reads logs nothing, pins no
    /// log and needs no flush at its commit.
    begin_lsn: Option<Lsn>,
    /// Its newest record (the chain its next record points back to); NULL before the first.
    last_lsn: Lsn,
    undo: Vec<UndoEntry>,
    savepoints: Vec<(String, usize)>,
    /// @@TRANCOUNT: nested BEGIN TRAN counts up, COMMIT counts down, the outermost commits.
    depth: u32,
    /// Log space reserved for this transaction's rollback.
    reserved_bytes: u64,
    /// Locks this transaction already holds on objects (intent locks are taken once).
    object_locks: Vec<(LockResource, LockMode)>,
    /// Every resource it holds a lock on, each once: its lock list, which its end releases
    /// (kept here, with the transaction, rather than in the shared lock table).
    held_locks: Vec<LockResource>,
    /// Per object (index): X and U key locks taken there, and the count at which lock
    /// escalation is next tried.
    key_lock_counts: Vec<(LockResource, u32, u32)>,
    /// Heap rows deleted (ghosted) by this transaction, removed once it commits.
    on_commit: Vec<(u64, [u8; 8])>,
    /// The transaction ran DDL; these allocation units were created or dropped by it (the
    /// catalog drops those no table references once the transaction ends).
    ddl: Option<Vec<u64>>,
    /// Its name for DBCC OPENTRAN ([`name_current_transaction`]).
    name: Arc<str>,
    /// Uncommittable ([`doom_current`]): it logs nothing more but its rollback.
    doomed: bool,
    /// Where the statement running now began in `undo` ([`Database::begin_statement`]); None
    /// between statements. A rollback keeps the changes to units outside transactions made
    /// before it (all of them when None).
    statement_start: Option<usize>,
    /// What it has logged, shared with the log's open-transaction table once its begin record
    /// is written (sys.dm_tran_database_transactions).
    log_use: Option<Arc<crate::log::TransactionLogUse>>,
}

impl OpenXact {
    /// Its LOP_COMMIT_XACT or LOP_ABORT_XACT, the last link of its chain.
    fn end_record(&self, operation: Operation) -> LogRecord {
        let mut record = LogRecord::new(operation, Context::Null, self.xact_id, Vec::new());
        record.prev_lsn = self.last_lsn;
        record
    }

    /// A transaction whose records end at `last_lsn` (NULL: none written yet).
    fn new(database_id: u16, xact_id: u64, last_lsn: Lsn) -> OpenXact {
        OpenXact {
            database_id,
            xact_id,
            begin_lsn: (!last_lsn.is_null()).then_some(last_lsn),
            last_lsn,
            undo: Vec::new(),
            savepoints: Vec::new(),
            depth: 1,
            reserved_bytes: 0,
            object_locks: Vec::new(),
            held_locks: Vec::new(),
            key_lock_counts: Vec::new(),
            on_commit: Vec::new(),
            ddl: None,
            name: Arc::from(UNNAMED_TRANSACTION),
            doomed: false,
            statement_start: None,
            log_use: None,
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<OpenXact>> = const { RefCell::new(None) };
    /// Set while this thread undoes a change: records it logs are CLRs with this undo-next.
    static COMPENSATING: RefCell<Option<Lsn>> = const { RefCell::new(None) };
    /// What may end this thread's lock waits early ([`set_wait_limits`]).
    static WAIT_LIMITS: RefCell<WaitLimits> = RefCell::new(WaitLimits::default());
    /// How this thread's reads lock the rows they read ([`with_read_locks`]).
    static READ_LOCKS: std::cell::Cell<ReadLocks> = const { std::cell::Cell::new(ReadLocks::Released) };
}

/// A fiber's open transaction and undo state, kept off the thread while another fiber runs on
/// it (see [`crate::fiber`]).
#[derive(Default)]
pub(crate) struct FiberTransaction {
    current: Option<OpenXact>,
    compensating: Option<Lsn>,
}

/// Swaps the thread's open transaction and undo state with a fiber's.
pub(crate) fn swap_fiber_transaction(saved: &mut FiberTransaction) {
    CURRENT.with(|c| std::mem::swap(&mut *c.borrow_mut(), &mut saved.current));
    COMPENSATING.with(|c| std::mem::swap(&mut *c.borrow_mut(), &mut saved.compensating));
}

/// A session's open transaction taken off its thread between requests ([`detach`]), so that
/// its next request may run on another thread (a connection pool's, an async runtime's). Its
/// locks stay held: they belong to its id, not to a thread.
pub struct DetachedTransaction(OpenXact);

/// Takes the calling thread's open transaction, if it has one.
pub fn detach() -> Option<DetachedTransaction> {
    CURRENT.with(|c| c.borrow_mut().take()).map(DetachedTransaction)
}

/// Makes a detached transaction the calling thread's again. The thread must have none open
/// (a thread runs one session's request at a time).
pub fn attach(transaction: DetachedTransaction) {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        assert!(current.is_none(), "a thread runs one session's transaction at a time");
        *current = Some(transaction.0);
    });
}

/// 3930: a change, or a COMMIT, in a transaction that can only be rolled back.
pub fn uncommittable() -> SqlError {
    let text = "The current transaction cannot be committed and cannot support operations that \
                write to the log file. Roll back the transaction.";
    SqlError::new(3930, 16, 1, text)
}

/// Makes this thread's open transaction uncommittable, as SQL Server dooms one when an error
/// under XACT_ABORT ON is caught by a CATCH block: it stays open (XACT_STATE() -1) and keeps its
/// locks, every change it would log is 3930, and only its rollback ends it.
pub fn doom_current() {
    CURRENT.with(|c| {
        if let Some(xact) = c.borrow_mut().as_mut() {
            xact.doomed = true;
        }
    });
}

/// Whether this thread's open transaction is uncommittable ([`doom_current`]).
pub fn is_doomed() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|x| x.doomed))
}

/// Whether this thread is undoing a change (its log records may use the rollback reserve).
pub fn compensating() -> bool {
    COMPENSATING.with(|c| c.borrow().is_some())
}

/// The database of this thread's open transaction.
pub fn current_database() -> Option<u16> {
    CURRENT.with(|c| c.borrow().as_ref().map(|x| x.database_id))
}

/// The id of this thread's open transaction (its LOP_BEGIN_XACT's transaction id).
pub fn current_xact_id() -> Option<u64> {
    CURRENT.with(|c| c.borrow().as_ref().map(|x| x.xact_id))
}

/// Whether this thread has an open transaction in `database_id`.
pub fn is_open(database_id: u16) -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|x| x.database_id == database_id))
}

/// Called by an index inside the mini-transaction of a row change: adds the change's logical
/// record to that mini-transaction when a transaction (or an undo) is under way. The
/// transaction's first change writes its LOP_BEGIN_XACT first (as SQL Server does), which can
/// fail as any log append can (9002, 9001): the mini-transaction then aborts.
pub fn log_row_op(db: &Database, op: RowOp) -> SqlResult<()> {
    write_begin_if_first(db)?;
    let compensating = COMPENSATING.with(|c| *c.borrow());
    let record = CURRENT.with(|c| {
        let current = c.borrow();
        let xact = current.as_ref().filter(|x| x.database_id == db.database_id)?;
        if xact.doomed && compensating.is_none() {
            return Some(Err(uncommittable()));
        }
        let (operation, context) = op.operation();
        let mut record = LogRecord::new(operation, context, xact.xact_id, op.payload(compensating));
        record.prev_lsn = xact.last_lsn;
        if compensating.is_some() {
            record.flags |= FLAG_CLR;
        }
        Some(Ok(record))
    });
    if let Some(record) = record.transpose()? {
        mtr::with_top(|m| {
            // Checked in debug builds (every test, the crash soak in CI): a release build with
            // the check used about 2 % more CPU per row in the 16-session insert bench
            // (scripts/ab.py --together 6, 1 of 6), and this path runs once a row.
            debug_assert!(
                m.extra.is_empty(),
                "one logical record per mini-transaction (invariant 1)"
            );
            m.extra.push((record, op))
        });
    }
    Ok(())
}

/// Writes the LOP_BEGIN_XACT of this thread's transaction in `db` if it has none yet. It is
/// appended on its own, ahead of the mini-transaction that holds the first change, and
/// registers the transaction as open (its begin LSN pins the log from then on).
fn write_begin_if_first(db: &Database) -> SqlResult<()> {
    let unbegun = CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|x| x.database_id == db.database_id && x.begin_lsn.is_none())
            .map(|x| (x.xact_id, x.name.clone()))
    });
    let Some((xact_id, name)) = unbegun else { return Ok(()) };
    let begin = LogRecord::new(Operation::BeginXact, Context::Null, xact_id, Vec::new());
    let log_use = Arc::new(crate::log::TransactionLogUse::default());
    log_use.add(1, begin.encoded_len() as u64, 0);
    let lsn = db.log().append_transaction_begin(&begin, name, log_use.clone())?;
    CURRENT.with(|c| {
        if let Some(x) = c.borrow_mut().as_mut() {
            x.begin_lsn = Some(lsn);
            x.last_lsn = lsn;
            x.log_use = Some(log_use);
        }
    });
    Ok(())
}

/// The name DBCC OPENTRAN shows for a transaction BEGIN TRAN did not name.
pub const UNNAMED_TRANSACTION: &str = "user_transaction";

/// Names this thread's outermost transaction as DBCC OPENTRAN shows it: BEGIN TRAN's name,
/// or `implicit_transaction` for one SET IMPLICIT_TRANSACTIONS ON began (else
/// `user_transaction`). A nested BEGIN TRAN's name is not kept, as in SQL Server, where only
/// the outermost name is registered. Deviation: an autocommit statement's transaction is
/// `user_transaction` too (SQL Server names it after the statement).
pub fn name_current_transaction(name: &str) {
    CURRENT.with(|c| {
        if let Some(x) = c.borrow_mut().as_mut().filter(|x| x.depth == 1) {
            x.name = Arc::from(name);
        }
    });
}

/// Called by a heap when this thread's transaction ghosts a row: the row's slot is emptied
/// after the commit (until then the RID cannot be reused, so a rollback can restore it).
pub fn defer_heap_removal(database_id: u16, au_id: u64, rid: [u8; 8]) {
    CURRENT.with(|c| {
        if let Some(x) = c.borrow_mut().as_mut().filter(|x| x.database_id == database_id) {
            x.on_commit.push((au_id, rid));
        }
    });
}

/// Called by the catalog when this thread's transaction in `database_id` runs DDL that created
/// or dropped `units`.
pub fn note_ddl(database_id: u16, units: &[u64]) {
    CURRENT.with(|c| {
        if let Some(x) = c.borrow_mut().as_mut().filter(|x| x.database_id == database_id) {
            x.ddl.get_or_insert_with(Vec::new).extend_from_slice(units);
        }
    });
}

/// The log space the undo of these row changes will take (what their compensations will log),
/// if this thread's transaction made them; CLRs are never undone. The log reserves it as it
/// appends the group ([`crate::log::LogManager::append_group`]), so that the rollback can
/// always be logged, and [`logged`] adds it to the transaction's reservation.
pub fn undo_reservation(records: &[(LogRecord, RowOp)]) -> u64 {
    let in_xact = CURRENT.with(|c| c.borrow().is_some());
    if !in_xact {
        return 0;
    }
    records.iter().filter(|(r, _)| r.flags & FLAG_CLR == 0).map(|(_, op)| op.undo_log_bytes()).sum()
}

/// Called when a mini-transaction's group is in the log: the transaction's chain advances, its
/// row changes (not CLRs) join its undo list, and `undo_bytes` ([`undo_reservation`]) join its
/// reservation. `group` is the group's (record count, bytes), the page changes' included: the
/// transaction's log use.
pub fn logged(
    records: impl IntoIterator<Item = (LogRecord, RowOp)>,
    lsns: &[Lsn],
    undo_bytes: u64,
    group: (u64, u64),
) {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let Some(xact) = current.as_mut() else { return };
        xact.reserved_bytes += undo_bytes;
        if let Some(log_use) = &xact.log_use {
            log_use.add(group.0, group.1, undo_bytes);
        }
        for ((record, op), lsn) in records.into_iter().zip(lsns) {
            if record.flags & FLAG_CLR == 0 {
                xact.undo.push(UndoEntry { prev_lsn: record.prev_lsn, op });
            }
            xact.last_lsn = *lsn;
            crate::log::mtr::give_back_buffer(record.payload);
        }
    });
}

impl Database {
    /// BEGIN TRAN on this thread (the session's transaction); inside an open transaction it
    /// only counts up @@TRANCOUNT, as in SQL Server. It writes no log record: the begin record
    /// comes with the first change ([`log_row_op`]).
    pub fn begin_tran(&self) -> SqlResult<()> {
        let nested = CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            match current.as_mut() {
                Some(xact) if xact.database_id == self.database_id => {
                    xact.depth += 1;
                    Ok(true)
                }
                Some(_) => Err(SqlError::new(
                    50000,
                    16,
                    1,
                    "This session has a transaction open in another database.",
                )),
                None => Ok(false),
            }
        })?;
        if nested {
            return Ok(());
        }
        // No log record yet: the begin record comes with the first change.
        let xact_id = self.log().next_xact_id();
        CURRENT
            .with(|c| *c.borrow_mut() = Some(OpenXact::new(self.database_id, xact_id, Lsn::NULL)));
        Ok(())
    }

    /// @@TRANCOUNT of this session.
    pub fn trancount(&self) -> u32 {
        CURRENT.with(|c| c.borrow().as_ref().map_or(0, |x| x.depth))
    }

    /// COMMIT TRAN: the outermost one is durable when this returns (unless delayed durability
    /// is on); an inner one only counts down @@TRANCOUNT.
    pub fn commit_tran(&self) -> SqlResult<()> {
        let mut xact = self.take_open_xact(3902)?;
        if xact.doomed {
            // Uncommittable, at any depth: it stays open for its rollback.
            CURRENT.with(|c| *c.borrow_mut() = Some(xact));
            return Err(uncommittable());
        }
        if xact.depth > 1 {
            xact.depth -= 1;
            CURRENT.with(|c| *c.borrow_mut() = Some(xact));
            return Ok(());
        }
        // A transaction that changed nothing wrote nothing, not even its begin record: its
        // commit writes nothing either and waits for no flush (reads in autocommit cost no log).
        let flushed = match xact.begin_lsn {
            None => Ok(()),
            Some(_) => {
                let lsn = match self.log().append(&xact.end_record(Operation::CommitXact)) {
                    Ok(lsn) => lsn,
                    Err(error) => {
                        // Still open: it can roll back.
                        CURRENT.with(|c| *c.borrow_mut() = Some(xact));
                        return Err(error);
                    }
                };
                self.note_xact_end(xact.xact_id);
                self.log().release(xact.reserved_bytes);
                if self.delayed_durability() { Ok(()) } else { self.log().flush_to(lsn) }
            }
        };
        let removed = if flushed.is_ok() { self.remove_deleted_heap_rows(&xact) } else { Ok(()) };
        // Locks go once the commit is durable: nobody reads a change that a crash could undo.
        self.instance().locks.release_all(xact.xact_id, &xact.held_locks);
        flushed?;
        removed?;
        self.catalog_after_transaction(&xact, true)?;
        self.maybe_checkpoint()?;
        Ok(())
    }

    /// Lets the catalog settle a transaction that ran DDL (see [`crate::catalog`]).
    fn catalog_after_transaction(&self, xact: &OpenXact, committed: bool) -> SqlResult<()> {
        match (&xact.ddl, self.loaded_catalog()) {
            (Some(units), Some(catalog)) => catalog.after_transaction(self, units, committed),
            _ => Ok(()),
        }
    }

    /// SAVE TRAN name.
    pub fn save_tran(&self, name: &str) -> SqlResult<()> {
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            let xact = current.as_mut().ok_or_else(|| {
                SqlError::new(
                    628,
                    16,
                    0,
                    "Cannot issue SAVE TRANSACTION when there is no active transaction.",
                )
            })?;
            let at = xact.undo.len();
            xact.savepoints.push((name.to_string(), at));
            Ok(())
        })
    }

    /// ROLLBACK TRAN: undoes every change of the transaction and ends it.
    pub fn rollback_tran(&self) -> SqlResult<()> {
        let mut xact = self.take_open_xact(3903)?;
        let mut result = self.undo_entries(&mut xact, 0, UndoKept::RunningStatementOnly);
        if result.is_ok() {
            // Heap rows that kept changes deleted: their slots are emptied, as at a commit.
            result = self.remove_deleted_heap_rows(&xact);
        }
        // The abort record is part of the rollback: it may use the space set aside for
        // rollbacks, so a transaction that filled the log (9002) still ends. A transaction that
        // wrote no begin record writes no abort record either.
        let appended = match xact.begin_lsn {
            None => Ok(()),
            Some(_) => {
                let abort = xact.end_record(Operation::AbortXact);
                let appended = self.log().append_group(std::slice::from_ref(&abort), &[], true, 0);
                self.note_xact_end(xact.xact_id);
                self.log().release(xact.reserved_bytes);
                appended.map(|_| ())
            }
        };
        self.instance().locks.release_all(xact.xact_id, &xact.held_locks);
        self.log().write_cache_if_full();
        result?;
        appended?;
        self.catalog_after_transaction(&xact, false)
    }

    /// ROLLBACK TRAN name: undoes the changes made since SAVE TRAN name, and the transaction
    /// stays open; or, if no savepoint has the name and it is the name BEGIN TRAN gave the
    /// outermost transaction, rolls the whole transaction back. 6401 if it is neither.
    /// (Names are case-sensitive, as SQL Server's transaction and savepoint names are.)
    pub fn rollback_tran_to(&self, savepoint: &str) -> SqlResult<()> {
        let mut xact = self.take_open_xact(3903)?;
        let named_savepoint = xact.savepoints.iter().any(|(name, _)| name == savepoint);
        if !named_savepoint && &*xact.name == savepoint && savepoint != UNNAMED_TRANSACTION {
            CURRENT.with(|c| *c.borrow_mut() = Some(xact));
            return self.rollback_tran();
        }
        let Some(index) = xact.savepoints.iter().rposition(|(name, _)| name == savepoint) else {
            CURRENT.with(|c| *c.borrow_mut() = Some(xact));
            return Err(SqlError::new(
                6401,
                16,
                1,
                format!(
                    "Cannot roll back {savepoint}. No transaction or savepoint of that name was found."
                ),
            ));
        };
        let keep = xact.savepoints[index].1;
        xact.savepoints.truncate(index + 1);
        self.rollback_open_to(xact, keep, UndoKept::RunningStatementOnly)
    }

    /// A statement begins in this session's transaction: a statement that fails is rolled
    /// back to the mark ([`Database::rollback_statement`]), changes to units outside
    /// transactions included, and a rollback of the whole transaction while it runs undoes its
    /// changes to those units too. None outside a transaction. Statements nest (a procedure's
    /// inside its EXEC); each ends with [`Database::end_statement`].
    pub fn begin_statement(&self) -> Option<StatementMark> {
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            let x = current.as_mut().filter(|x| x.database_id == self.database_id)?;
            let mark =
                StatementMark { xact_id: x.xact_id, at: x.undo.len(), outer: x.statement_start };
            x.statement_start = Some(mark.at);
            Some(mark)
        })
    }

    /// The statement that `mark` began ended: its changes to units outside transactions are
    /// kept from now on by any rollback.
    pub fn end_statement(&self, mark: StatementMark) {
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            let same =
                |x: &&mut OpenXact| x.database_id == self.database_id && x.xact_id == mark.xact_id;
            if let Some(x) = current.as_mut().filter(same) {
                x.statement_start = mark.outer;
            }
        });
    }

    /// Undoes what the transaction did since `mark`, changes to units outside transactions
    /// included, and ends the statement; the transaction stays open (SQL Server's
    /// statement-level rollback of a failed statement).
    pub fn rollback_statement(&self, mark: StatementMark) -> SqlResult<()> {
        let mut xact = self.take_open_xact(3903)?;
        if xact.xact_id == mark.xact_id {
            xact.statement_start = mark.outer;
        }
        self.rollback_open_to(xact, mark.at, UndoKept::All)
    }

    fn rollback_open_to(&self, mut xact: OpenXact, keep: usize, kept: UndoKept) -> SqlResult<()> {
        let result = self.undo_entries(&mut xact, keep, kept);
        xact.savepoints.retain(|(_, at)| *at <= keep);
        let reload = xact.ddl.is_some() && result.is_ok();
        CURRENT.with(|c| *c.borrow_mut() = Some(xact));
        result?;
        match self.loaded_catalog() {
            Some(catalog) if reload => catalog.reload(self),
            _ => Ok(()),
        }
    }

    fn take_open_xact(&self, error: i32) -> SqlResult<OpenXact> {
        CURRENT.with(|c| {
            let mut current = c.borrow_mut();
            match current.take() {
                Some(xact) if xact.database_id == self.database_id => Ok(xact),
                other => {
                    *current = other;
                    Err(no_transaction(error))
                }
            }
        })
    }

    /// Empties the slots of the heap rows a committed transaction deleted (outside any
    /// transaction: redone, never undone).
    fn remove_deleted_heap_rows(&self, xact: &OpenXact) -> SqlResult<()> {
        for (au_id, rid) in &xact.on_commit {
            let descriptor =
                self.unit_descriptor(*au_id).ok_or_else(|| SqlError::log_corrupt(&self.name, 4))?;
            let heap = Heap::from_descriptor(*au_id, &descriptor)
                .ok_or_else(|| SqlError::log_corrupt(&self.name, 4))?;
            heap.remove_ghosted(self, Rid::from_bytes(rid))?;
        }
        Ok(())
    }

    /// Undoes `xact`'s changes after the first `keep`, newest first, logging CLRs. A change to
    /// a unit outside transactions ([`Database::keep_through_rollback`]) is undone only as
    /// `kept` says; one that is kept is dropped from the undo list without a CLR (a crash
    /// before the transaction's end record lets recovery undo it, which the unit's table,
    /// dropped at the next open, never shows).
    fn undo_entries(&self, xact: &mut OpenXact, keep: usize, kept: UndoKept) -> SqlResult<()> {
        let kept_below = match kept {
            UndoKept::All => 0,
            UndoKept::RunningStatementOnly => xact.statement_start.unwrap_or(usize::MAX),
        };
        let progress = xact.log_use.clone();
        if let Some(progress) = &progress {
            progress.rollback_began(Some(xact.undo.len().saturating_sub(keep) as u64));
        }
        let result = self.undo_entries_counted(xact, keep, kept_below, progress.as_deref());
        if let Some(progress) = &progress {
            progress.rollback_began(None);
        }
        result
    }

    /// [`Database::undo_entries`]'s loop; each entry undone is a step of `progress`.
    fn undo_entries_counted(
        &self,
        xact: &mut OpenXact,
        keep: usize,
        kept_below: usize,
        progress: Option<&crate::log::TransactionLogUse>,
    ) -> SqlResult<()> {
        while xact.undo.len() > keep {
            if let Some(progress) = progress {
                progress.rollback_step();
            }
            let entry = xact.undo.pop().expect("checked");
            if xact.undo.len() < kept_below && self.is_outside_transactions(entry.op.au_id()) {
                continue; // a heap delete's slot stays in on_commit, emptied at the end
            }
            if let RowOp::HeapDelete { au_id, rid, .. } = &entry.op {
                xact.on_commit.retain(|(a, r)| (a, r) != (au_id, rid));
            }
            xact.last_lsn =
                self.compensate_as(xact.xact_id, xact.last_lsn, &entry.op, entry.prev_lsn)?;
        }
        Ok(())
    }

    /// Performs the undo of one row change as a compensation (its records are CLRs whose
    /// undo-next is `undo_next`).
    pub(crate) fn compensate(&self, op: &RowOp, undo_next: Lsn) -> SqlResult<()> {
        let descriptor =
            self.unit_descriptor(op.au_id()).ok_or_else(|| SqlError::log_corrupt(&self.name, 4))?;
        let corrupt = || SqlError::log_corrupt(&self.name, 4);
        COMPENSATING.with(|c| *c.borrow_mut() = Some(undo_next));
        let result = match op {
            RowOp::Insert { record, .. } => BTree::from_descriptor(op.au_id(), &descriptor)
                .ok_or_else(corrupt)
                .and_then(|tree| tree.undo_insert(self, record)),
            RowOp::Delete { record, .. } => BTree::from_descriptor(op.au_id(), &descriptor)
                .ok_or_else(corrupt)
                .and_then(|tree| tree.undo_delete(self, record)),
            heap_op => Heap::from_descriptor(op.au_id(), &descriptor)
                .ok_or_else(corrupt)
                .and_then(|heap| heap.undo(self, heap_op)),
        };
        COMPENSATING.with(|c| *c.borrow_mut() = None);
        result
    }

    /// Undoes one change as the transaction `xact_id`, made current for the time being so that
    /// its CLRs join the chain that ends at `last_lsn` (rollback, and recovery's undo of a
    /// loser); returns the new last LSN of the transaction.
    pub(crate) fn compensate_as(
        &self,
        xact_id: u64,
        last_lsn: Lsn,
        op: &RowOp,
        undo_next: Lsn,
    ) -> SqlResult<Lsn> {
        let stand_in = OpenXact::new(self.database_id, xact_id, last_lsn);
        CURRENT.with(|c| *c.borrow_mut() = Some(stand_in));
        let result = self.compensate(op, undo_next);
        let after = CURRENT.with(|c| c.borrow_mut().take()).map_or(last_lsn, |x| x.last_lsn);
        result.map(|()| after)
    }
}

/// How a read locks what it reads: the locking part of the transaction isolation level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadLocks {
    /// READ UNCOMMITTED (NOLOCK): no shared or intent-shared locks; a read sees rows that
    /// other transactions have changed and not committed, and waits for none of them.
    None,
    /// READ COMMITTED (the default): a shared lock on each row while it is read.
    #[default]
    Released,
    /// REPEATABLE READ: the shared locks are kept to the transaction's end, so a row read
    /// cannot change before it ends.
    Held,
}

/// Runs `read` with this thread's reads locking as `locks` says (the T-SQL layer wraps a
/// SELECT's read of a table in its isolation level or table hint).
pub fn with_read_locks<T>(locks: ReadLocks, read: impl FnOnce() -> T) -> T {
    let before = READ_LOCKS.with(|current| current.replace(locks));
    let result = read();
    READ_LOCKS.with(|current| current.set(before));
    result
}

/// Whether this thread's reads take shared locks (not under READ UNCOMMITTED).
pub fn reads_take_locks() -> bool {
    READ_LOCKS.with(std::cell::Cell::get) != ReadLocks::None
}

/// Sets what ends the lock waits of the requests this thread runs from now on: the T-SQL
/// session sets its LOCK_TIMEOUT and cancel flag before each request. Deviation: kept per
/// thread, not per fiber (fiber mode runs `bench insert`'s jobs, which set none).
pub fn set_wait_limits(limits: WaitLimits) {
    WAIT_LIMITS.with(|current| *current.borrow_mut() = limits);
}

/// Takes a transaction lock for this session's open transaction in `db` (none outside a
/// transaction: the engine API's non-transactional operations take no locks). A wait is
/// recorded as LCK_M_<mode> and shown in the waiting tasks; a deadlock victim's transaction is
/// rolled back and the caller gets 1205. Never called while a page latch is held.
pub fn lock(db: &Database, resource: LockResource, mode: LockMode) -> SqlResult<()> {
    lock_newly(db, resource, mode).map(drop)
}

/// Takes a lock as [`lock`] does, and says whether the transaction holds the resource newly
/// (it held it in no mode before). A read that releases its lock after reading (READ
/// COMMITTED) releases it only then: a key the transaction holds X on (a row it inserted)
/// keeps its X lock.
pub fn lock_newly(db: &Database, resource: LockResource, mode: LockMode) -> SqlResult<bool> {
    if matches!(mode, LockMode::S | LockMode::IS) && !reads_take_locks() {
        return Ok(false); // READ UNCOMMITTED
    }
    if COMPENSATING.with(|c| c.borrow().is_some()) {
        return Ok(false); // an undo touches only what its transaction already holds
    }
    let (LockResource::Object { au_id, .. } | LockResource::Key { au_id, .. }) = resource;
    if db.is_outside_transactions(au_id) {
        return Ok(false); // a table variable: its session alone reaches it
    }
    // One look at the transaction: who asks, and whether an object lock covers the request.
    let asking = CURRENT.with(|c| {
        let current = c.borrow();
        let x = current.as_ref().filter(|x| x.database_id == db.database_id)?;
        let owner = LockOwner {
            xact_id: x.xact_id,
            spid: crate::instance::current_spid(),
            cost: x.reserved_bytes,
            deadlock_priority: 0, // the lock manager takes it from WAIT_LIMITS if it waits
        };
        Some((owner, held_through_object(x, resource, mode)))
    });
    let Some((owner, covered)) = asking else { return Ok(false) };
    if covered {
        return Ok(false);
    }
    let is_object = matches!(resource, LockResource::Object { .. });
    let instance = db.instance();
    let mut registration = None;
    let mut suspended = None;
    let mut wait_began = None;
    let mut on_wait = |blocker: Option<u16>| {
        wait_began = Some(std::time::Instant::now());
        // The worker's scheduler runs another worker while this one waits for the lock.
        suspended = Some(crate::scheduler::suspend());
        registration = Some(instance.waiting_tasks.begin_lock(
            owner.spid,
            mode.wait_type(),
            blocker,
            resource,
        ));
    };
    let mut on_deadlock = |report: &DeadlockReport| write_deadlock(instance, report);
    let limits = || WAIT_LIMITS.with(|limits| limits.borrow().clone());
    let acquired =
        instance.locks.acquire(owner, resource, mode, &limits, &mut on_wait, &mut on_deadlock);
    drop(registration);
    let signal = suspended.map_or(Duration::ZERO, crate::scheduler::Suspended::resume);
    let newly_held = acquired.as_ref().is_ok_and(Acquired::newly_held);
    match acquired {
        Ok(Acquired::AfterWait { waited, .. }) => {
            instance.waits.record(mode.wait_type(), waited + signal, signal);
        }
        Ok(Acquired::AlreadyHeld | Acquired::Granted { .. }) => {}
        Err(error) => {
            // A wait that ended without the lock was waited all the same.
            if let Some(began) = wait_began {
                instance.waits.record(mode.wait_type(), began.elapsed() + signal, signal);
            }
            // A deadlock victim's transaction is rolled back, as SQL Server does before it
            // answers; a lock timeout or a cancel ends only the statement (its caller's part).
            if error.number == 1205 {
                let _ = db.rollback_tran();
            }
            return Err(error);
        }
    }
    // Escalation counts the key locks the transaction holds, not requests for one it has.
    let counted_against = match resource {
        LockResource::Key { database_id, au_id, .. }
            if newly_held && matches!(mode, LockMode::X | LockMode::U) =>
        {
            Some(LockResource::Object { database_id, au_id })
        }
        _ => None,
    };
    if !newly_held && !is_object {
        return Ok(false);
    }
    // One more look at the transaction: its lock list, its object locks, its key-lock count.
    let due = CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let x = current.as_mut()?;
        if newly_held {
            x.held_locks.push(resource);
        }
        if is_object {
            x.object_locks.push((resource, mode));
        }
        counted_against.and_then(|object| count_key_lock(x, object))
    });
    if let (Some(at), Some(object)) = (due, counted_against) {
        try_escalation(db, owner, object, at);
    }
    Ok(newly_held)
}

/// Key locks one transaction holds in one index before it tries to escalate (SQL Server's
/// 5,000 locks on one object).
pub const LOCK_ESCALATION_THRESHOLD: u32 = 5_000;
/// Further key locks before an escalation that was refused is tried again.
const LOCK_ESCALATION_RETRY: u32 = 1_250;

/// Whether the transaction already holds a lock on `resource`'s object that covers `mode` on
/// the resource: the object itself, or an escalated object lock over a key.
fn held_through_object(x: &OpenXact, resource: LockResource, mode: LockMode) -> bool {
    let holds = |object: LockResource, needed: LockMode, intent_covers: bool| {
        x.object_locks.iter().any(|(r, m)| {
            let intent = matches!(m, LockMode::IS | LockMode::IX);
            *r == object && m.combine(needed) == *m && (intent_covers || !intent)
        })
    };
    match resource {
        LockResource::Object { .. } => holds(resource, mode, true),
        // An intent lock on the object does not cover its keys; S, U, SIX or X does.
        LockResource::Key { database_id, au_id, .. } => {
            let object = LockResource::Object { database_id, au_id };
            let needed = if mode == LockMode::S { LockMode::S } else { LockMode::X };
            holds(object, needed, false)
        }
    }
}

/// Counts a key lock against its object; the count's index when it reaches the threshold at
/// which lock escalation is next tried.
fn count_key_lock(x: &mut OpenXact, object: LockResource) -> Option<usize> {
    let at = match x.key_lock_counts.iter().position(|(r, _, _)| *r == object) {
        Some(at) => at,
        None => {
            x.key_lock_counts.push((object, 0, LOCK_ESCALATION_THRESHOLD));
            x.key_lock_counts.len() - 1
        }
    };
    let entry = &mut x.key_lock_counts[at];
    entry.1 += 1;
    (entry.1 >= entry.2).then_some(at)
}

/// Tries lock escalation on `object` (its key-lock count `at` reached its threshold).
fn try_escalation(db: &Database, owner: LockOwner, object: LockResource, at: usize) {
    let instance = db.instance();
    let flags = &instance.trace_flags;
    let disabled = flags.is_on(crate::traceflags::TF_NO_LOCK_ESCALATION)
        || flags.is_on(crate::traceflags::TF_NO_LOCK_COUNT_ESCALATION);
    let escalation =
        if disabled { None } else { instance.locks.try_acquire(owner, object, LockMode::X) };
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let Some(x) = current.as_mut() else { return };
        let Some(granted) = escalation else {
            x.key_lock_counts[at].2 += LOCK_ESCALATION_RETRY;
            return;
        };
        if granted.newly_held() {
            x.held_locks.push(object);
        }
        if let LockResource::Object { database_id, au_id } = object {
            let held = &mut x.held_locks;
            instance.locks.release_keys_after_escalation(owner.xact_id, database_id, au_id, held);
        }
        x.key_lock_counts[at].2 = u32::MAX;
        x.object_locks.push((object, LockMode::X));
    });
}

/// Releases an S lock taken for a read (READ COMMITTED keeps none after the row is read;
/// REPEATABLE READ keeps it to the transaction's end).
pub fn unlock(db: &Database, resource: LockResource) {
    if READ_LOCKS.with(std::cell::Cell::get) == ReadLocks::Held {
        return; // REPEATABLE READ: the transaction's end releases it
    }
    let xact_id = CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let x = current.as_mut().filter(|x| x.database_id == db.database_id)?;
        // From the end: a lock released early is usually the one just taken.
        let at = x.held_locks.iter().rposition(|r| *r == resource)?;
        x.held_locks.swap_remove(at);
        Some(x.xact_id)
    });
    if let Some(xact_id) = xact_id {
        db.instance().locks.release(xact_id, resource);
    }
}

/// The errorlog lines of a deadlock under TF 1204 (text) and TF 1222 (list format).
/// The deadlock is also an xml_deadlock_report event for the XE sessions that have it.
fn write_deadlock(instance: &crate::instance::Instance, report: &DeadlockReport) {
    instance.xevents.deadlock_found(report);
    let info = "spid4s";
    let flags = &instance.trace_flags;
    if flags.is_on(TF_DEADLOCK_TEXT) {
        instance.errorlog.write(info, "Deadlock encountered .... Printing deadlock information");
        for (n, (spid, _, resource, mode)) in report.nodes.iter().enumerate() {
            instance.errorlog.write(info, &format!("Node:{}", n + 1));
            instance.errorlog.write(
                info,
                &format!(
                    "{} Requested by: SPID: {spid} Mode: {}",
                    resource.description(),
                    mode.name()
                ),
            );
        }
        instance
            .errorlog
            .write(info, &format!("Victim Resource Owner: SPID: {}", report.victim_spid));
    }
    if flags.is_on(TF_DEADLOCK_XML) {
        instance.errorlog.write(info, "deadlock-list");
        instance.errorlog.write(info, &format!(" deadlock victim=process{}", report.victim_spid));
        instance.errorlog.write(info, "  process-list");
        for ((spid, xact_id, _, _), (priority, log_used)) in
            report.nodes.iter().zip(&report.priorities_and_costs)
        {
            instance.errorlog.write(
                info,
                &format!(
                    "   process id=process{spid} spid={spid} priority={priority} \
                     logused={log_used} xactid={xact_id} lockMode=waiting"
                ),
            );
        }
        instance.errorlog.write(info, "  resource-list");
        for (spid, _, resource, mode) in &report.nodes {
            instance.errorlog.write(
                info,
                &format!(
                    "   {} waiter id=process{spid} mode={}",
                    resource.description(),
                    mode.name()
                ),
            );
        }
    }
}

/// 3902 (COMMIT) / 3903 (ROLLBACK) without BEGIN TRANSACTION.
fn no_transaction(number: i32) -> SqlError {
    let text = if number == 3902 {
        "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION."
    } else {
        "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION."
    };
    SqlError::new(number, 16, 1, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An insert's logical record as the log carries it, decoded back.
    fn through_the_log(op: &RowOp) -> RowOp {
        let (operation, context) = op.operation();
        let record = LogRecord::new(operation, context, 0, op.payload(None));
        let (decoded, undo_next) = RowOp::decode(&record).expect("an insert's record decodes");
        assert_eq!(undo_next, Lsn::NULL);
        decoded
    }

    #[test]
    fn an_undo_key_stays_inline_up_to_32_bytes_and_round_trips_either_way() {
        // A uniqueidentifier key's entry: 4-byte header, 16-byte key, 6-byte child pointer,
        // column count, null bitmap.
        let guid_entry: Vec<u8> = (0..29).collect();
        let long_entry: Vec<u8> = (0..=255).cycle().take(211).collect();
        for (entry, inline) in [(&guid_entry, true), (&long_entry, false)] {
            let op =
                RowOp::Insert { au_id: 72_057_594_043_039_744, record: UndoKey::from_slice(entry) };
            let RowOp::Insert { record, .. } = &op else { unreachable!() };
            assert_eq!(!record.spilled(), inline, "{} bytes", entry.len());
            let decoded = through_the_log(&op);
            assert_eq!(decoded, op);
            let RowOp::Insert { record, .. } = decoded else { panic!("{decoded:?}") };
            assert_eq!(&record[..], &entry[..]);
        }
    }
}
