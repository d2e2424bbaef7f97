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
//! Phases: analysis finds the redo start and the end of the log (the log's open), redo replays,
//! and undo has nothing to do until user transactions exist (deviation: transactions are the
//! next part of the log issue, so there is no loser to roll back yet).

use super::*;
use crate::log::lsn::Lsn;
use crate::log::mtr;
use crate::log::record::FLAG_GROUP_ABORT;
use crate::log::record::FLAG_GROUP_CONTINUES;

/// What redo did, for the errorlog and tests.
pub(super) struct RedoReport {
    /// Mini-transaction groups with at least one page change applied.
    pub groups_redone: u64,
    pub pages_changed: u64,
    pub analysis_ms: u64,
    pub redo_ms: u64,
}

/// Replays the log from the checkpoint; None when there was nothing after it to replay.
pub(super) fn redo(
    instance: &Arc<Instance>,
    boot: &BootInfo,
    log: &LogManager,
    file_sizes: &BTreeMap<u16, u32>,
) -> SqlResult<Option<RedoReport>> {
    let started = Instant::now();
    let records = log.read_from(boot.checkpoint_lsn)?;
    let analysis_ms = elapsed_ms(started);
    let redo_started = Instant::now();
    let mut report = RedoReport { groups_redone: 0, pages_changed: 0, analysis_ms, redo_ms: 0 };
    let mut group: Vec<(Lsn, LogRecord)> = Vec::new();
    for (lsn, record) in records {
        if record.flags & FLAG_GROUP_ABORT != 0 {
            group.clear();
            continue;
        }
        let continues = record.flags & FLAG_GROUP_CONTINUES != 0;
        group.push((lsn, record));
        if continues {
            continue;
        }
        let changed = redo_group(instance, boot.database_id, &group, file_sizes)?;
        if changed > 0 {
            report.groups_redone += 1;
            report.pages_changed += changed;
        }
        group.clear();
    }
    report.redo_ms = elapsed_ms(redo_started);
    Ok((report.groups_redone > 0).then_some(report))
}

/// Redoes one complete group; returns how many page changes it applied.
fn redo_group(
    instance: &Arc<Instance>,
    database_id: u16,
    group: &[(Lsn, LogRecord)],
    file_sizes: &BTreeMap<u16, u32>,
) -> SqlResult<u64> {
    let group_lsn = group.last().expect("a group has records").0;
    let mut changed = 0;
    for (_, record) in group {
        let Some((page, kind, runs)) = mtr::decode_page_payload(&record.payload) else {
            continue; // not a page record (begin/end checkpoint, transaction records)
        };
        if file_sizes.get(&page.file_id).is_none_or(|size| page.page_no >= *size) {
            continue;
        }
        let key = PageKey::new(database_id, page);
        let pool = &instance.buffer_pool;
        let guard = if kind == mtr::KIND_FORMAT {
            pool.new_page(key)?
        } else {
            pool.fetch(key, LatchMode::Ex)?
        };
        let page_lsn = guard.read(|buf| Lsn::from_bytes(&buf[40..50]));
        if kind != mtr::KIND_FORMAT && page_lsn >= group_lsn {
            continue;
        }
        guard.write(|buf| {
            mtr::apply_xor(buf, &runs);
            buf[40..50].copy_from_slice(&group_lsn.to_bytes());
        })?;
        changed += 1;
    }
    Ok(changed)
}

/// The errorlog lines of a recovery that redid work (reference §5.7).
pub(super) fn report(db: &Database, report: &RedoReport) {
    let info = crate::instance::current_process_info();
    let errorlog = &db.instance.errorlog;
    let (name, id) = (&db.name, db.database_id);
    errorlog.write(
        &info,
        &format!(
            "Recovery of database '{name}' ({id}) is 100% complete (approximately 0 seconds \
             remain). Phase 2 of 3. This is an informational message only. No user action is \
             required."
        ),
    );
    let seconds = (report.analysis_ms + report.redo_ms) / 1000;
    errorlog.write(
        &info,
        &format!(
            "Recovery completed for database {name} (database ID {id}) in {seconds} second(s) \
             (analysis {} ms, redo {} ms, undo 0 ms.) This is an informational message only. \
             No user action is required.",
            report.analysis_ms, report.redo_ms
        ),
    );
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}
