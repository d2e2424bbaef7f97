//! Crash recovery when a database opens (reference §5.7): redo from the last checkpoint.
//!
//! The log is read from the boot page's checkpoint LSN (the log's start if there was none) to
//! its end. Records come in groups (one per mini-transaction, [`crate::log::mtr`]); a group the
//! crash cut short is ignored, as is one followed by an abort marker. A page record of a
//! complete group is redone when the page's LSN is older than the group's last LSN: a format
//! record rebuilds the page from zeros, an XOR record applies its runs; the page then carries
//! the group's LSN. Pages past the size a file's header records are skipped (a growth that
//! never committed). Redo changes pages without logging: the log is not registered with the
//! buffer pool until recovery ends, and the database's open then takes a checkpoint.
//!
//! Phases: analysis reads from MinLSN (the oldest begin of the transactions open at the
//! checkpoint's begin record, log invariant 4) and builds the transaction table; redo replays
//! page changes from the checkpoint; undo rolls back every transaction that never ended, newest
//! change first, through the indexes' logical undo, logging compensation records
//! ([`crate::xact`]), and ends each with LOP_ABORT_XACT.

use super::*;
use crate::log::lsn::Lsn;
use crate::log::mtr;
use crate::log::record::FLAG_GROUP_ABORT;
use crate::log::record::FLAG_GROUP_CONTINUES;
use crate::log::record::{Context, Operation};

/// What recovery found and did, for undo, the errorlog and tests.
#[derive(Default)]
pub(super) struct RedoReport {
    /// Mini-transaction groups with at least one page change applied.
    pub groups_redone: u64,
    pub pages_changed: u64,
    pub analysis_ms: u64,
    pub redo_ms: u64,
    pub undo_ms: u64,
    /// Transactions that committed after the checkpoint (rolled forward).
    pub committed: u64,
    /// Transactions begun and never ended: xact id -> LSN of their last record.
    pub losers: BTreeMap<u64, Lsn>,
    /// The losers' records by LSN (their chains are walked backwards by undo).
    pub loser_records: BTreeMap<Lsn, LogRecord>,
}

/// Analysis and redo over the records the log's open read from MinLSN: finds the transactions
/// that never ended, and replays page changes from the checkpoint on.
pub(super) fn redo(
    instance: &Arc<Instance>,
    boot: &BootInfo,
    log: &LogManager,
    records: Vec<(Lsn, LogRecord)>,
    file_sizes: &BTreeMap<u16, u32>,
) -> SqlResult<RedoReport> {
    let started = Instant::now();
    let mut report = RedoReport::default();
    analyse(&records, boot.checkpoint_lsn, log, &mut report);
    report.analysis_ms = elapsed_ms(started);
    let redo_started = Instant::now();
    let mut group: Vec<(Lsn, LogRecord)> = Vec::new();
    let total = records.len().max(1);
    let mut progress = Progress::new(instance, &boot.name, boot.database_id);
    for (done, (lsn, record)) in records.into_iter().enumerate() {
        progress.note(done, total);
        if lsn < boot.checkpoint_lsn {
            continue;
        }
        if record.flags & FLAG_GROUP_ABORT != 0 {
            group.clear();
            continue;
        }
        let continues = record.flags & FLAG_GROUP_CONTINUES != 0;
        group.push((lsn, record));
        if continues {
            continue;
        }
        let changed = redo_group(instance, boot, &group, file_sizes)?;
        if changed > 0 {
            report.groups_redone += 1;
            report.pages_changed += changed;
        }
        group.clear();
    }
    report.redo_ms = elapsed_ms(redo_started);
    Ok(report)
}

/// Redo's progress lines in the errorlog: every 5 seconds of a long redo, as SQL Server writes
/// "Recovery of database 'X' (5) is N% complete (approximately M seconds remain). Phase 2 of 3."
struct Progress<'a> {
    instance: &'a Instance,
    name: &'a str,
    database_id: u16,
    started: Instant,
    last: Instant,
}

impl<'a> Progress<'a> {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(5);

    fn new(instance: &'a Instance, name: &'a str, database_id: u16) -> Self {
        let now = Instant::now();
        Progress { instance, name, database_id, started: now, last: now }
    }

    fn note(&mut self, done: usize, total: usize) {
        // Looking at the clock every 4,096 records keeps it off redo's path.
        if done == 0 || !done.is_multiple_of(4096) || self.last.elapsed() < Self::EVERY {
            return;
        }
        self.last = Instant::now();
        let pct = done * 100 / total;
        let elapsed = self.started.elapsed().as_secs_f64();
        let remain = (elapsed * (total - done) as f64 / done as f64).round() as u64;
        let (name, id) = (self.name, self.database_id);
        self.instance.errorlog.write(
            &crate::instance::current_process_info(),
            &format!(
                "Recovery of database '{name}' ({id}) is {pct}% complete (approximately {remain} \
                 seconds remain). Phase 2 of 3. This is an informational message only. No user \
                 action is required."
            ),
        );
    }
}

/// Builds the transaction table: which transactions began and never ended, with their records.
fn analyse(records: &[(Lsn, LogRecord)], checkpoint: Lsn, log: &LogManager, out: &mut RedoReport) {
    let mut chains: BTreeMap<u64, Vec<(Lsn, LogRecord)>> = BTreeMap::new();
    let mut highest = 0;
    for (lsn, record) in records {
        if record.xact_id == 0 {
            continue;
        }
        highest = highest.max(record.xact_id);
        match record.operation {
            Operation::CommitXact | Operation::AbortXact => {
                chains.remove(&record.xact_id);
                if record.operation == Operation::CommitXact && *lsn >= checkpoint {
                    out.committed += 1;
                }
            }
            _ => chains.entry(record.xact_id).or_default().push((*lsn, record.clone())),
        }
    }
    log.continue_xact_ids_after(highest);
    for (xact_id, chain) in chains {
        // A transaction whose BEGIN is before MinLSN cannot be open (MinLSN covers them all).
        if chain.first().is_none_or(|(_, r)| r.operation != Operation::BeginXact) {
            continue;
        }
        out.losers.insert(xact_id, chain.last().expect("non-empty").0);
        out.loser_records.extend(chain);
    }
}

/// Undo: rolls back every loser by walking its chain backwards, logging CLRs, then ends it
/// with LOP_ABORT_XACT. Returns how many were rolled back.
pub(super) fn undo(db: &Database, report: &mut RedoReport) -> SqlResult<u64> {
    let started = Instant::now();
    let losers = std::mem::take(&mut report.losers);
    for (xact_id, last) in &losers {
        let mut chain_last = *last;
        let mut next = *last;
        loop {
            // A link missing before the BEGIN: the chain is broken (xact invariant 2).
            let Some(record) = report.loser_records.get(&next) else {
                return Err(SqlError::log_corrupt(&db.name, 5));
            };
            if record.operation == Operation::BeginXact {
                break;
            }
            match crate::xact::RowOp::decode(record) {
                Some((_, undo_next)) if record.flags & crate::xact::FLAG_CLR != 0 => {
                    next = undo_next;
                }
                Some((op, _)) => {
                    chain_last = db.compensate_as(*xact_id, chain_last, &op, record.prev_lsn)?;
                    next = record.prev_lsn;
                }
                None => next = record.prev_lsn,
            }
        }
        let mut abort = LogRecord::new(Operation::AbortXact, Context::Null, *xact_id, Vec::new());
        abort.prev_lsn = chain_last;
        db.log.append(&abort)?;
    }
    report.undo_ms = elapsed_ms(started);
    Ok(losers.len() as u64)
}

/// Redoes one complete group; returns how many page changes it applied.
fn redo_group(
    instance: &Arc<Instance>,
    boot: &BootInfo,
    group: &[(Lsn, LogRecord)],
    file_sizes: &BTreeMap<u16, u32>,
) -> SqlResult<u64> {
    let group_lsn = group.last().expect("a group has records").0;
    let mut changed = 0;
    // Whether each page takes this group, decided at its first record in the group: a group
    // may change a page several times (a format, then a row), and the page carries the group's
    // LSN only once the whole group is applied.
    let mut takes: BTreeMap<PageId, bool> = BTreeMap::new();
    for (record_lsn, record) in group {
        if record.flags & crate::log::record::FLAG_PAGE == 0 {
            continue; // checkpoint and transaction records: nothing to redo on a page
        }
        let Some((page, redo)) = mtr::decode_page_payload(&record.payload) else {
            return Err(SqlError::log_corrupt(&boot.name, 4));
        };
        if file_sizes.get(&page.file_id).is_none_or(|size| page.page_no >= *size) {
            continue;
        }
        let key = PageKey::new(boot.database_id, page);
        let pool = &instance.buffer_pool;
        let format = matches!(redo, mtr::Redo::Format(_));
        let guard = if format { pool.new_page(key)? } else { pool.fetch(key, LatchMode::Ex)? };
        let page_lsn = guard.read(|buf| Lsn::from_bytes(&buf[40..50]));
        let take = *takes.entry(page).or_insert(format || page_lsn < group_lsn);
        if !take {
            continue;
        }
        let page_type = guard.read(|buf| buf[1]);
        let applied = guard.write(|buf| {
            let applied = redo.apply(buf);
            if applied.is_ok() {
                buf[40..50].copy_from_slice(&group_lsn.to_bytes());
            }
            applied
        })?;
        if applied.is_err() {
            return Err(SqlError::redo_failed(&crate::error::RedoFailure {
                record_lsn: *record_lsn,
                xact_id: record.xact_id,
                page,
                page_lsn,
                page_type,
                op_code: record.operation as u8,
                context: record.context as u8,
                database: &boot.name,
                database_id: boot.database_id,
            }));
        }
        changed += 1;
    }
    Ok(changed)
}

/// The errorlog lines of a recovery that redid or undid work (reference §5.7), in SQL Server's
/// order. Deviation: they are written when recovery ends (each phase at 100 %), not as
/// progress while it runs.
pub(super) fn report(db: &Database, report: &RedoReport, rolled_back: u64) {
    if report.groups_redone == 0 && rolled_back == 0 {
        return;
    }
    let info = crate::instance::current_process_info();
    let errorlog = &db.instance.errorlog;
    let (name, id) = (&db.name, db.database_id);
    let tail = "This is an informational message only. No user action is required.";
    errorlog.write(
        &info,
        &format!(
            "Analysis of database '{name}' ({id}) is 100% complete (approximately 0 seconds \
             remain). Phase 1 of 3. {tail}"
        ),
    );
    for phase in [2, 3] {
        errorlog.write(
            &info,
            &format!(
                "Recovery of database '{name}' ({id}) is 100% complete (approximately 0 seconds \
                 remain). Phase {phase} of 3. {tail}"
            ),
        );
    }
    errorlog.write(
        &info,
        &format!(
            "{} transactions rolled forward in database '{name}' ({id}:0). This is an \
             informational message only. No user action is required.",
            report.committed
        ),
    );
    errorlog.write(
        &info,
        &format!(
            "{rolled_back} transactions rolled back in database '{name}' ({id}:0). This is an \
             informational message only. No user action is required."
        ),
    );
    errorlog.write(
        &info,
        &format!("Recovery is writing a checkpoint in database '{name}' ({id}). {tail}"),
    );
    let seconds = (report.analysis_ms + report.redo_ms + report.undo_ms) / 1000;
    errorlog.write(
        &info,
        &format!(
            "Recovery completed for database {name} (database ID {id}) in {seconds} second(s) \
             (analysis {} ms, redo {} ms, undo {} ms.) This is an informational message only. \
             No user action is required.",
            report.analysis_ms, report.redo_ms, report.undo_ms
        ),
    );
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::{DatabaseSpec, FileSpec};
    use crate::instance::InstanceConfig;

    /// Xact invariant 2: a loser whose chain breaks before its BEGIN is 9004, not a rollback
    /// that quietly stops at the gap (leaving the older changes in place).
    #[test]
    fn a_loser_whose_chain_breaks_before_its_begin_is_9004() {
        let dir = tempfile::tempdir().unwrap();
        let instance = Instance::start(InstanceConfig::new(dir.path())).unwrap();
        let spec = DatabaseSpec {
            name: "Chain".into(),
            primary: vec![FileSpec::new("chain_data", "chain.mdf")],
            filegroups: Vec::new(),
            logs: vec![FileSpec::new("chain_log", "chain.ldf")],
            mixed_page_allocation: false,
        };
        let db = Database::create(&instance, &spec).unwrap();
        let (begin, missing, last) = (Lsn::new(5, 0, 1), Lsn::new(5, 0, 2), Lsn::new(5, 0, 3));
        let mut report =
            RedoReport { losers: BTreeMap::from([(7, last)]), ..RedoReport::default() };
        let mut first = LogRecord::new(Operation::BeginXact, Context::Null, 7, Vec::new());
        first.prev_lsn = Lsn::NULL;
        // A record of the transaction that is no row change, whose predecessor was never read.
        let mut record = LogRecord::new(Operation::BeginCkpt, Context::Null, 7, Vec::new());
        record.prev_lsn = missing;
        report.loser_records.insert(begin, first);
        report.loser_records.insert(last, record.clone());
        let error = undo(&db, &mut report).expect_err("a broken chain is an error");
        assert_eq!((error.number, error.severity, error.state), (9004, 21, 5), "{error}");
        // With the link there, the walk reaches the BEGIN and ends the transaction.
        let mut linked = record;
        linked.prev_lsn = begin;
        report.losers = BTreeMap::from([(7, last)]);
        report.loser_records.insert(last, linked);
        assert_eq!(undo(&db, &mut report).unwrap(), 1);
        db.close().unwrap();
    }
}
