//! The transaction log: VLFs made by creation and growth under the 2019 and 2022 rules, log
//! growth zeroing and its 2022 exception, VLF reuse with FSeqNo and parity, 9002, group commit
//! with WRITELOG, and reading the log back after a crash or a torn write.

mod common;

use common::{Lab, eventually, lab_with, size};
use engine::database::{Database, DatabaseSpec, FileChange, FileSpec};
use engine::log::lsn::Lsn;
use engine::log::record::{Context, LogRecord, Operation};
use engine::log::vlf::VlfRule;
use engine::log::{LOG_BUFFERS, LOG_WRITER_BATCH_BLOCKS, ReuseWait};
use std::sync::Arc;

const MB: u64 = 1024 * 1024;

fn lab_for(rule: VlfRule) -> Lab {
    lab_with(|config| config.vlf_rule = rule)
}

/// A database whose one log file is `log_size` and grows by `log_growth`.
fn db_with_log(lab: &Lab, log_size: &str, log_growth: &str) -> Database {
    let spec = DatabaseSpec {
        name: "Ifi".into(),
        primary: vec![FileSpec::new("ifi_data", "ifi.mdf").size(size("3MB"))],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("ifi_log", "ifi.ldf").size(size(log_size)).growth(size(log_growth)),
        ],
        mixed_page_allocation: false,
    };
    Database::create(&lab.instance, &spec).unwrap()
}

fn vlf_sizes_mb(db: &Database) -> Vec<f64> {
    db.log().log_info().iter().map(|row| row.vlf_size_mb).collect()
}

fn record(bytes: usize) -> LogRecord {
    LogRecord::new(Operation::InsertRows, Context::Clustered, 1, vec![0x5A; bytes])
}

/// Appends records of `bytes` until the log has made `growths` growths (or fails).
fn fill_until_growths(db: &Database, growths: usize) -> engine::SqlResult<()> {
    while db.log().growths().len() < growths {
        db.log().append(&record(30_000))?;
    }
    Ok(())
}

#[test]
fn creation_and_manual_growth_make_the_vlfs_of_each_rule() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "32MB", "64MB");
    // 32 MB less the 8 KB header: under 64 MB, 4 VLFs of 1,023 pages; the last takes the
    // remainder (1,026 pages).
    assert_eq!(vlf_sizes_mb(&db), vec![7.99, 7.99, 7.99, 8.02]);
    db.modify_file("ifi_log", FileChange::Size(size("96MB"))).unwrap();
    // 64 MB exactly: 8 VLFs under 2019.
    assert_eq!(vlf_sizes_mb(&db)[4..], [8.0; 8]);
    db.modify_file("ifi_log", FileChange::Size(size("104MB"))).unwrap();
    // 8 MB is less than 1/8 of 96 MB: 1 VLF.
    assert_eq!(vlf_sizes_mb(&db)[12..], [8.0]);
    assert_eq!(db.log().log_info().len(), 13);

    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "32MB", "64MB");
    assert_eq!(vlf_sizes_mb(&db), vec![31.99]);
    db.modify_file("ifi_log", FileChange::Size(size("96MB"))).unwrap();
    assert_eq!(vlf_sizes_mb(&db), vec![31.99, 64.0]);
    db.modify_file("ifi_log", FileChange::Size(size("200MB"))).unwrap();
    // 104 MB is over 64 MB and over 1/8: 8 VLFs of 13 MB.
    assert_eq!(vlf_sizes_mb(&db)[2..], [13.0; 8]);
}

#[test]
fn a_new_log_starts_in_its_first_vlf_with_fseqno_1() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "4MB", "1MB");
    let rows = db.log().dbcc_loginfo();
    assert_eq!(rows.len(), 4);
    assert_eq!(
        (rows[0].fseqno, rows[0].status, rows[0].parity, rows[0].start_offset),
        (1, 2, 64, 8192)
    );
    for row in &rows[1..] {
        assert_eq!((row.fseqno, row.status, row.parity, row.create_lsn), (0, 0, 0, 0));
    }
    let info = db.log().log_info();
    assert_eq!((info[0].vlf_status, info[0].vlf_active), (2, true));
    assert_eq!((info[1].vlf_status, info[1].vlf_active), (1, false));
}

#[test]
fn under_2022_a_64_mb_autogrowth_writes_no_zeros_and_records_no_writefilegather() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "1MB", "64MB");
    let zero_waits_before = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER");
    let written_before = lab.faults.lock().counters.bytes_written;
    fill_until_growths(&db, 1).unwrap();
    let growth = &db.log().growths()[0];
    assert!(growth.is_automatic && !growth.zeroed);
    assert_eq!(growth.new_size_pages - growth.old_size_pages, 64 * 128);
    assert_eq!(growth.vlfs_added, 1);
    assert_eq!(lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER"), zero_waits_before);
    let written = lab.faults.lock().counters.bytes_written - written_before;
    assert!(written < 2 * MB, "{written} bytes written: log blocks and headers only");
}

#[test]
fn under_2019_the_same_autogrowth_is_zeroed() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "1MB", "64MB");
    let written_before = lab.faults.lock().counters.bytes_written;
    fill_until_growths(&db, 1).unwrap();
    let growth = &db.log().growths()[0];
    assert!(growth.is_automatic && growth.zeroed);
    assert_eq!(growth.vlfs_added, 8);
    let zeroing = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER").unwrap();
    assert!(zeroing.waiting_tasks_count >= 2, "creation and growth both zero the log");
    let written = lab.faults.lock().counters.bytes_written - written_before;
    assert!(written >= 64 * MB, "{written} bytes written");
}

#[test]
fn a_1_gb_growth_writes_zeros_on_disk_and_records_the_wait() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "1MB", "1GB");
    // Stale bytes where the growth will go: zeroing must overwrite them.
    let path = db.file_path(2).unwrap();
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.seek(SeekFrom::Start(512 * MB)).unwrap();
        file.write_all(&[0xEE; 8192]).unwrap();
    }
    let waits_before = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER").unwrap();
    fill_until_growths(&db, 1).unwrap();
    let growth = &db.log().growths()[0];
    assert!(growth.zeroed, "a growth over 64 MB is zeroed under 2022 too");
    assert_eq!(growth.vlfs_added, 8, "exactly 1 GB: 8 VLFs (reference §5.2)");
    let waits = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER").unwrap();
    assert_eq!(waits.waiting_tasks_count, waits_before.waiting_tasks_count + 1);
    assert!(waits.wait_time_ms > waits_before.wait_time_ms || waits.wait_time_ms > 0);
    // Only the stale range is read back (not the whole 1 GB file into memory).
    let file = std::fs::File::open(&path).unwrap();
    assert_eq!(file.metadata().unwrap().len(), MB + 1024 * MB);
    let mut stale = [0xAAu8; 8192];
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut stale, 512 * MB).unwrap();
    assert!(stale.iter().all(|b| *b == 0), "the stale bytes were zeroed");
}

#[test]
fn vlfs_are_reused_after_truncation_with_the_next_fseqno_and_flipped_parity() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "1MB", "0");
    // Four VLFs of about 254 KB; fill three of them.
    let mut last = Lsn::NULL;
    while last.seqno < 4 {
        last = db.log().append(&record(20_000)).unwrap();
    }
    db.log().flush_to(last).unwrap();
    db.log().truncate(Lsn::new(4, 0, 0), ReuseWait::Nothing);
    let before: Vec<u32> = db.log().dbcc_loginfo().iter().map(|r| r.fseqno).collect();
    assert_eq!(before, vec![1, 2, 3, 4]);
    while last.seqno < 6 {
        last = db.log().append(&record(20_000)).unwrap();
    }
    db.log().flush_to(last).unwrap();
    let rows = db.log().dbcc_loginfo();
    let seen: Vec<(u32, u8, u8)> = rows.iter().map(|r| (r.fseqno, r.status, r.parity)).collect();
    assert_eq!(seen, vec![(5, 2, 128), (6, 2, 128), (3, 0, 64), (4, 2, 64)]);
    assert!(db.log().growths().is_empty(), "reuse, not growth");
}

#[test]
fn a_full_log_that_cannot_grow_fails_with_9002_naming_the_reuse_wait() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "1MB", "0");
    db.log().truncate(Lsn::new(1, 0, 0), ReuseWait::ActiveTransaction);
    let error = loop {
        if let Err(error) = db.log().append(&record(20_000)) {
            break error;
        }
    };
    assert_eq!((error.number, error.severity, error.state), (9002, 17, 2));
    assert_eq!(
        error.message,
        "The transaction log for database 'Ifi' is full due to 'ACTIVE_TRANSACTION'."
    );
    assert!(lab.errorlog_texts().iter().any(|line| line.contains("is full due to")));
}

/// The log cache holds 128 sealed blocks (SQL Server's 128 log buffers of 60 KB per
/// database): the append that seals one more writes them, waiting as LOGBUFFER, with no
/// commit; the cache's buffers are then sealed into again.
#[test]
fn a_full_log_cache_is_written_by_the_appender_which_waits_on_logbuffer() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "64MB", "64MB");
    lab.instance.waits.clear();
    let flushes_before = db.log().stats().flushes;
    // One 50 KB record per block: each append seals the block before it.
    let mut lsns = Vec::new();
    for _ in 0..LOG_BUFFERS {
        lsns.push(db.log().append(&record(50_000)).unwrap());
    }
    assert!(lab.instance.waits.get("LOGBUFFER").is_none(), "127 sealed blocks fit the cache");
    assert!(db.log().flushed_lsn() < lsns[0]);
    lsns.push(db.log().append(&record(50_000)).unwrap());
    let logbuffer = lab.instance.waits.get("LOGBUFFER").expect("the appender waited");
    assert_eq!(logbuffer.waiting_tasks_count, 1);
    assert!(lab.instance.waits.get("WRITELOG").is_none(), "no commit waited");
    assert_eq!(db.log().flushed_lsn(), *lsns.last().unwrap(), "the cache is durable");
    assert_eq!(db.log().stats().flushes, flushes_before + 1);
    // A second round fills the cache again from the written blocks' buffers (the write
    // sealed the open block too, so it takes one more append).
    for _ in 0..=LOG_BUFFERS {
        lsns.push(db.log().append(&record(50_000)).unwrap());
    }
    assert_eq!(lab.instance.waits.get("LOGBUFFER").unwrap().waiting_tasks_count, 2);
    let durable = db.log().read_durable().unwrap();
    let ours = durable.iter().filter(|(lsn, _)| lsns.contains(lsn)).count();
    assert_eq!(ours, lsns.len(), "every record of both rounds reads back from disk");
}

/// With the log writer started (as the server starts it), sealed blocks are written as they
/// accumulate, by the writer and not by the appending session: no session waits, and the open
/// block stays open for the next records.
#[test]
fn the_log_writer_writes_sealed_blocks_while_the_session_appends() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = Arc::new(db_with_log(&lab, "64MB", "64MB"));
    db.start_log_writer();
    lab.instance.waits.clear();
    // One 50 KB record per block: each append seals the block before it.
    let mut lsns = Vec::new();
    for _ in 0..=LOG_WRITER_BATCH_BLOCKS {
        lsns.push(db.log().append(&record(50_000)).unwrap());
    }
    let last_sealed = lsns[LOG_WRITER_BATCH_BLOCKS - 1];
    eventually("the log writer writes the batch", || db.log().flushed_lsn() >= last_sealed);
    assert_eq!(db.log().flushed_lsn(), last_sealed, "the open block is not sealed early");
    assert!(lab.instance.waits.get("LOGBUFFER").is_none(), "no session waited");
    assert!(lab.instance.waits.get("WRITELOG").is_none(), "no session waited");
    let durable = db.log().read_durable().unwrap();
    let ours = durable.iter().filter(|(lsn, _)| lsns.contains(lsn)).count();
    assert_eq!(ours, LOG_WRITER_BATCH_BLOCKS, "the sealed blocks read back from disk");
    // A commit's flush still seals and writes the open block.
    db.log().flush_to(*lsns.last().unwrap()).unwrap();
    assert_eq!(db.log().flushed_lsn(), *lsns.last().unwrap());
}

/// A log that streams (batches sealed one after another) wakes its writer once: the writer
/// then looks for the next batches itself while they keep coming, so the appender makes no
/// wake-up call per batch. Once the writer has gone back to sleep, the next batch wakes it
/// again: no batch waits unwritten, whichever state the writer is in.
#[test]
fn a_streaming_log_wakes_its_writer_once_and_a_sleeping_writer_again() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = Arc::new(db_with_log(&lab, "64MB", "64MB"));
    // A second of looks (5,000 of 200 us) before it sleeps: the appends below come much
    // faster than that on any machine, so the count of wake-ups does not depend on timing.
    db.log().set_writer_idle_polls(5_000);
    db.start_log_writer();
    let wait_written =
        |lsn| eventually("the log writer writes the batch", || db.log().flushed_lsn() >= lsn);
    // One 50 KB record per block: each append seals the block before it. Six batches, each
    // written before the next is appended.
    let batches = 6;
    db.log().append(&record(50_000)).unwrap();
    for _ in 0..batches {
        let mut lsns = Vec::new();
        for _ in 0..LOG_WRITER_BATCH_BLOCKS {
            lsns.push(db.log().append(&record(50_000)).unwrap());
        }
        // The batch's last sealed block holds the record before the last.
        wait_written(lsns[LOG_WRITER_BATCH_BLOCKS - 2]);
    }
    assert_eq!(db.log().writer_wakes(), 1, "one wake-up for {batches} batches");
    // The writer goes back to sleep after one empty look; the next batch wakes it.
    db.log().set_writer_idle_polls(1);
    eventually("the log writer goes back to sleep", || !db.log().writer_is_polling());
    let mut more = Vec::new();
    for _ in 0..LOG_WRITER_BATCH_BLOCKS {
        more.push(db.log().append(&record(50_000)).unwrap());
    }
    wait_written(more[LOG_WRITER_BATCH_BLOCKS - 2]);
    assert_eq!(db.log().writer_wakes(), 2, "a sleeping writer is woken");
    assert!(lab.instance.waits.get("LOGBUFFER").is_none(), "no session wrote the log itself");
}

/// A failed write of a full log cache does not fail the append that triggered it (its
/// records are in the cache); it stops the log, and the next commit's flush reports it.
#[test]
fn a_failed_write_of_the_log_cache_fails_the_next_flush() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "64MB", "64MB");
    lab.faults.lock().only_paths_ending = Some(".ldf".into());
    lab.faults.lock().fail_write_after = Some(0);
    for _ in 0..=LOG_BUFFERS {
        db.log().append(&record(50_000)).unwrap();
    }
    assert_eq!(lab.instance.waits.get("LOGBUFFER").unwrap().waiting_tasks_count, 1);
    let end = db.log().end_lsn();
    assert!(db.log().flushed_lsn() < end, "nothing was made durable");
    let error = db.log().flush_to(end).unwrap_err();
    assert_eq!(db.log().flush_to(end).unwrap_err(), error, "the log stays stopped");
}

#[test]
fn concurrent_commits_share_flushes_and_wait_on_writelog() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = Arc::new(db_with_log(&lab, "8MB", "8MB"));
    let flushes_before = db.log().stats().flushes;
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..50u64 {
                    let commit = LogRecord::new(
                        Operation::CommitXact,
                        Context::Null,
                        n * 1000 + i,
                        Vec::new(),
                    );
                    let lsn = db.log().append(&commit).unwrap();
                    db.log().flush_to(lsn).unwrap();
                    assert!(db.log().flushed_lsn() >= lsn);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let flushes = db.log().stats().flushes - flushes_before;
    let writelog = lab.instance.waits.get("WRITELOG").unwrap();
    eprintln!("400 commits: {flushes} flushes, {} WRITELOG waits", writelog.waiting_tasks_count);
    assert!(flushes <= 400, "never more flushes than commits");
    assert!(writelog.waiting_tasks_count >= flushes.min(400));
    let durable = db.log().read_durable().unwrap();
    let commits = durable.iter().filter(|(_, r)| r.operation == Operation::CommitXact).count();
    assert_eq!(commits, 400, "every acknowledged commit is in the log on disk");
}

#[test]
fn after_a_crash_the_log_continues_after_its_last_durable_record() {
    let mut lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "1MB", "1MB");
    let mut durable = Lsn::NULL;
    for _ in 0..30 {
        durable = db.log().append(&record(3_000)).unwrap();
    }
    db.log().flush_to(durable).unwrap();
    db.log().append(&record(3_000)).unwrap(); // never flushed
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("ifi.mdf")).unwrap();
    let records = db.log().read_durable().unwrap();
    let inserts: Vec<Lsn> = records
        .iter()
        .filter(|(_, r)| r.operation == Operation::InsertRows)
        .map(|(lsn, _)| *lsn)
        .collect();
    assert_eq!(inserts.len(), 30);
    assert_eq!(*inserts.last().unwrap(), durable);
    // The open wrote a record of its own after them.
    assert!(db.log().end_lsn() > durable);
}

#[test]
fn a_torn_log_write_ends_the_log_and_stale_blocks_behind_it_are_never_read() {
    let mut lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "1MB", "1MB");
    let first = db.log().append(&record(3_000)).unwrap();
    db.log().flush_to(first).unwrap();
    // The next flush's block write is torn after 700 bytes: the flush fails, and so does
    // every later one with 9001 (the log stops until the database restarts).
    lab.faults.lock().tear_write_after = Some((0, 700));
    let torn = db.log().append(&record(3_000)).unwrap();
    let error = db.log().flush_to(torn).unwrap_err();
    assert_eq!(error.number, 9001);
    assert_eq!(db.log().flush_to(torn).unwrap_err().number, 9001);
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("ifi.mdf")).unwrap();
    let inserts = db
        .log()
        .read_durable()
        .unwrap()
        .into_iter()
        .filter(|(_, r)| r.operation == Operation::InsertRows)
        .count();
    assert_eq!(inserts, 1, "only the record whose flush completed");
    // Write over the torn block, crash again: the log reads back the new timeline only.
    let next = db.log().append(&record(100)).unwrap();
    db.log().flush_to(next).unwrap();
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("ifi.mdf")).unwrap();
    let sizes: Vec<usize> = db
        .log()
        .read_durable()
        .unwrap()
        .into_iter()
        .filter(|(_, r)| r.operation == Operation::InsertRows)
        .map(|(_, r)| r.payload.len())
        .collect();
    assert_eq!(sizes, vec![3_000, 100]);
}

#[test]
fn log_space_reports_size_and_use_like_sqlperf_logspace() {
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "8MB", "8MB");
    let (size_mb, used_before) = db.log().space();
    assert_eq!(size_mb, 8.0);
    let mut lsn = Lsn::NULL;
    for _ in 0..100 {
        lsn = db.log().append(&record(10_000)).unwrap();
    }
    db.log().flush_to(lsn).unwrap();
    let (_, used_after) = db.log().space();
    assert!(used_after > used_before + 10.0, "{used_before}% -> {used_after}%");
}

#[test]
fn paul_randals_1_gb_plus_512_mb_growths_example_counts_455_vlfs_under_2019() {
    // Log created at 1 GB, autogrowth 512 MB up to 200 GB (reference §5.2), computed with the
    // rule itself: growths at 1, 1.5, ... 4 GB use the formula (8 each), later ones make 1.
    let gb = 1024 * MB;
    let mut size_bytes = gb;
    let mut vlfs = engine::log::vlf::vlf_sizes(VlfRule::Sql2019, 0, gb - 8192).len();
    while size_bytes < 200 * gb {
        vlfs += engine::log::vlf::vlf_sizes(VlfRule::Sql2019, size_bytes, 512 * MB).len();
        size_bytes += 512 * MB;
    }
    assert_eq!(vlfs, 8 + 7 * 8 + 391);
}

#[test]
fn several_log_files_are_used_in_sequence_and_the_log_wraps_across_them() {
    let lab = lab_for(VlfRule::Sql2019);
    let spec = DatabaseSpec {
        name: "TwoLogs".into(),
        primary: vec![FileSpec::new("two_data", "two.mdf").size(size("3MB"))],
        filegroups: Vec::new(),
        logs: vec![
            FileSpec::new("two_log1", "two1.ldf").size(size("1MB")).growth(size("0")),
            FileSpec::new("two_log2", "two2.ldf").size(size("1MB")).growth(size("0")),
        ],
        mixed_page_allocation: false,
    };
    let db = Database::create(&lab.instance, &spec).unwrap();
    let files_used = |db: &Database| {
        let mut used: Vec<(u32, u16)> = db
            .log()
            .dbcc_loginfo()
            .iter()
            .filter(|r| r.fseqno > 0)
            .map(|r| (r.fseqno, r.file_id))
            .collect();
        used.sort();
        used
    };
    // Fill the first file's VLFs: the log continues in the second file.
    let mut last = Lsn::NULL;
    while files_used(&db).iter().all(|(_, file)| *file == 2) {
        last = db.log().append(&record(20_000)).unwrap();
        db.log().truncate(Lsn::new(last.seqno, 0, 0), ReuseWait::Nothing);
    }
    let used = files_used(&db);
    assert_eq!(used.last().unwrap().1, 3, "the log moved on to file 3: {used:?}");
    // Keep going with truncation: after the second file it wraps back into the first.
    while files_used(&db).iter().filter(|(_, file)| *file == 2).all(|(seq, _)| *seq < 9) {
        last = db.log().append(&record(20_000)).unwrap();
        db.log().truncate(Lsn::new(last.seqno, 0, 0), ReuseWait::Nothing);
    }
    db.log().flush_to(last).unwrap();
    assert!(db.log().dbcc_loginfo().iter().any(|r| r.file_id == 2 && r.parity == 128));
    assert!(db.log_files().iter().all(|f| f.2 == 128), "no file grew");
}

#[test]
fn sqlperf_logspace_and_log_reuse_wait_desc_follow_an_open_transaction() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "2MB", "2MB");
    let (name, size_mb, used_before, status) = db.sqlperf_logspace();
    assert_eq!((name.as_str(), size_mb, status), ("Ifi", 2.0, 0));
    assert_eq!(db.log_reuse_wait_desc(), "NOTHING");
    let columns = vec![engine::record::Column::new("id", engine::record::SqlType::Int, false)];
    let tree =
        engine::btree::BTree::create(&db, "dbo.t", "PK_t", columns, vec![0], true, None).unwrap();
    db.begin_tran().unwrap();
    // A transaction pins the log from its first change (its begin record is written then),
    // as the log moves into later VLFs.
    tree.insert(&db, &[engine::record::Value::Int(1)]).unwrap();
    while db.log().dbcc_loginfo().iter().filter(|r| r.status == 2).count() < 2 {
        db.log().append(&record(20_000)).unwrap();
    }
    db.checkpoint().unwrap();
    assert_eq!(db.log_reuse_wait_desc(), "ACTIVE_TRANSACTION");
    let (_, _, used_during, _) = db.sqlperf_logspace();
    assert!(used_during > used_before, "{used_before}% -> {used_during}%");
    db.commit_tran().unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.log_reuse_wait_desc(), "NOTHING");
}

#[test]
fn trace_flag_3004_writes_the_zeroing_of_a_log_growth_to_the_errorlog() {
    let lab = lab_with(|config| config.startup_trace_flags = vec![3004, 3605]);
    let db = db_with_log(&lab, "1MB", "1MB");
    db.modify_file("ifi_log", FileChange::Size(size("2MB"))).unwrap();
    let path = db.file_path(2).unwrap().display().to_string();
    let texts = lab.errorlog_texts();
    assert!(
        texts.contains(&format!("Zeroing {path} from page 128 to 256 (0x100000 to 0x200000)")),
        "{texts:?}"
    );
    assert!(texts.contains(&format!("Zeroing completed on {path}")));
}

/// Grows the log file in steps of one smallest VLF until the log has `vlfs` VLFs.
fn grow_to_vlfs(db: &Database, vlfs: usize) {
    let log = db.database_files().into_iter().find(|f| f.is_log).expect("a log file");
    let mut size_pages = log.size_pages;
    while db.log().vlf_count() < vlfs {
        // Asked for one page more, the log grows by its smallest VLF (VLF invariant 2).
        db.log().grow_manually(log.file_id, size_pages + 1).unwrap();
        size_pages += engine::log::vlf::MIN_VLF_PAGES;
    }
}

#[test]
fn a_database_starting_with_more_than_10000_vlfs_gets_9017_in_the_errorlog() {
    let mut lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "1MB", "1MB");
    let warned = |lab: &Lab| {
        lab.errorlog_texts().iter().any(|t| {
            t.starts_with("Database Ifi has more than 10000 virtual log files which is excessive.")
        })
    };
    // Each step is under 1/8 of the log: one VLF of the smallest size.
    grow_to_vlfs(&db, 10_000);
    assert_eq!(db.log().vlf_count(), 10_000);
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("ifi.mdf")).unwrap();
    assert!(!warned(&lab), "10,000 VLFs are not more than 10,000");
    grow_to_vlfs(&db, 10_001);
    db.close().unwrap();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("ifi.mdf")).unwrap();
    assert!(warned(&lab), "{:?}", lab.errorlog_texts());
    assert_eq!(db.log().vlf_count(), 10_001, "the count is the log's layout read back");
}

/// Bytes of the VLFs DBCC LOGINFO shows as reusable (status 0), less their headers.
fn reusable_vlf_bytes(db: &Database) -> u64 {
    let rows = db.log().dbcc_loginfo();
    rows.iter().filter(|row| row.status == 0).map(|row| row.file_size - 8192).sum()
}

/// Appends a record as a row change does: only if the log keeps its undo reserve after it.
fn append_within_reserve(db: &Database, bytes: usize) -> Lsn {
    db.log().append_group(&[record(bytes)], &[], false, 0).unwrap()[0]
}

/// An open transaction whose undo reserve is larger than a VLF makes every append ask what
/// the other VLFs hold. The answer is remembered between appends (`LogState::other_free_bytes`;
/// debug builds compare it with a fresh walk at every use), so it must follow each thing that
/// changes it: entering a VLF, truncation (MinLSN) and growth. Truncated often enough, the
/// log never grows; left alone, it grows before the reserve would be eaten.
#[test]
fn a_reserve_larger_than_a_vlf_grows_the_log_only_when_the_free_vlfs_cannot_hold_it() {
    let lab = lab_for(VlfRule::Sql2019);
    let db = db_with_log(&lab, "1MB", "1MB");
    // Four VLFs of about 248 KB; 300 KB set aside, as a long transaction's undo would be.
    let reserve = 300 * 1024;
    db.log().append_group(&[record(100)], &[], false, reserve).unwrap();
    let mut last = Lsn::NULL;
    for n in 0..150 {
        last = append_within_reserve(&db, 20_000);
        if n % 5 == 4 {
            // At most the current VLF and the one before stay active: two free VLFs hold
            // about 480 KB, more than the reserve and a record.
            db.log().flush_to(last).unwrap();
            db.log().truncate(Lsn::new(last.seqno.saturating_sub(1), 0, 0), ReuseWait::Nothing);
        }
    }
    assert!(last.seqno > 8, "the appends went round the four VLFs: {last:?}");
    assert!(db.log().growths().is_empty(), "truncation kept room for the reserve");
    // No more truncation: the log must grow whenever the VLFs left cannot take the reserve.
    // The reserve lies in the reusable VLFs and the rest of the current one (at most a VLF).
    for _ in 0..60 {
        append_within_reserve(&db, 20_000);
        let rows = db.log().dbcc_loginfo();
        let largest_vlf = rows.iter().map(|row| row.file_size).max().unwrap();
        let room = reusable_vlf_bytes(&db) + largest_vlf;
        let layout: Vec<(u32, u8)> = rows.iter().map(|row| (row.fseqno, row.status)).collect();
        assert!(room >= reserve, "an append ate into the reserve: {layout:?}");
    }
    assert!(!db.log().growths().is_empty(), "the log grew to keep the reserve");
}

/// An allocation's PFS change is a group of its own (a nested top action, appended as the
/// change is made): its LOP_SET_BITS record ends its group, and the PFS page carries that
/// record's LSN, so the page is not written before the record is durable (WAL).
#[test]
fn an_allocation_logs_its_pfs_change_alone_and_stamps_the_pfs_page_with_it() {
    use engine::alloc::{self, pfs};
    use engine::log::record::FLAG_GROUP_CONTINUES;
    use engine::units::PageId;
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "4MB", "4MB");
    let unit = db.create_allocation_unit("t", None).unwrap();
    for _ in 0..10 {
        let page = db.allocate_page(unit).unwrap();
        db.log().flush_all().unwrap();
        let rows = db.log().fn_dblog().unwrap();
        let last = rows
            .iter()
            .rev()
            .find(|row| row.page_id.as_deref() == Some("0001:00000001"))
            .expect("the allocation logged its PFS change");
        assert_eq!((last.operation, last.context), ("LOP_SET_BITS", "LCX_PFS"));
        assert_eq!(last.flag_bits & FLAG_GROUP_CONTINUES, 0, "the record ends its group");
        let pfs_page = db.page_copy(PageId::new(1, 1)).unwrap();
        assert_eq!(Lsn::from_bytes(&pfs_page[40..50]).to_hex(), last.current_lsn);
        assert_ne!(alloc::pfs_get(&pfs_page, page.page_no) & pfs::ALLOCATED, 0);
    }
}

/// An allocation whose map change the full log refuses fails with 9002 and leaves every
/// allocation map as it was: the change is undone before the page's latch is released.
#[test]
fn an_allocation_refused_by_a_full_log_changes_no_allocation_map() {
    use engine::units::PageId;
    let lab = lab_for(VlfRule::Sql2022);
    let db = db_with_log(&lab, "1MB", "0");
    let unit = db.create_allocation_unit("t", None).unwrap();
    db.allocate_page(unit).unwrap(); // the unit's extent has free pages left
    db.log().truncate(Lsn::new(1, 0, 0), ReuseWait::ActiveTransaction);
    while db.log().append(&record(20_000)).is_ok() {}
    // The smallest records to the last bytes: a PFS record is larger than what is left.
    while db.log().append(&record(1)).is_ok() {}
    let maps = |db: &Database| -> Vec<Vec<u8>> {
        (0..4).map(|page_no| db.page_copy(PageId::new(1, page_no)).unwrap().to_vec()).collect()
    };
    let before = maps(&db);
    let error = db.allocate_page(unit).unwrap_err();
    assert_eq!((error.number, error.severity, error.state), (9002, 17, 2));
    assert!(maps(&db) == before, "a refused allocation changed an allocation map");
}
