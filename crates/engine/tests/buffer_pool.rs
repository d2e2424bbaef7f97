//! The buffer pool and its latches, on the real allocation path: sessions that allocate in the
//! same file really wait on its PFS page (PAGELATCH_UP), a page whose read is in flight makes a
//! second reader wait PAGEIOLATCH_SH, memory pressure evicts and reads pages back, the lazy
//! writer writes dirty pages, and no wait is recorded that was not waited.

mod common;

use common::{eventually, lab, lab_with};
use engine::buffer::PageKey;
use engine::database::Database;
use engine::datapage;
use engine::error::SqlError;
use engine::io::IoGate;
use engine::latch::LatchMode;
use engine::page::{PageHeader, PageType};
use engine::record::{Column, Layout, RecordType, SqlType, Value, encode};
use engine::units::{PAGE_HEADER_SIZE, PageId};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Formats `page` as a data page carrying `mark` at offset 200, through the pool.
fn write_data_page(lab: &common::Lab, database_id: u16, page: PageId, mark: u64) {
    let guard = lab.instance.buffer_pool.new_page(PageKey::new(database_id, page)).unwrap();
    guard
        .write(|buf| {
            PageHeader::new(PageType::Data, page).write(&mut buf[..]);
            buf[200..208].copy_from_slice(&mark.to_le_bytes());
        })
        .unwrap();
}

/// A data page carrying `mark`, written to disk and dropped from the pool, then corrupted there
/// (one byte changed, so its checksum fails): the page, its file and the changed byte's offset,
/// to repair it with.
fn corrupt_page_on_disk(
    lab: &common::Lab,
    db: &Database,
    mark: u64,
) -> (PageId, std::fs::File, u64) {
    use std::os::unix::fs::FileExt;
    let unit = db.create_allocation_unit("t", None).unwrap();
    let page = db.allocate_page(unit).unwrap();
    write_data_page(lab, db.database_id, page, mark);
    db.checkpoint().unwrap();
    lab.instance.buffer_pool.discard(db.database_id, Some(page.file_id), page.page_no);
    let raw = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(lab.path("Company_data.mdf"))
        .unwrap();
    let offset = u64::from(page.page_no) * 8192 + 4000;
    raw.write_all_at(&[0xFF], offset).unwrap();
    (page, raw, offset)
}

fn read_mark(lab: &common::Lab, database_id: u16, page: PageId) -> u64 {
    let guard =
        lab.instance.buffer_pool.fetch(PageKey::new(database_id, page), LatchMode::Sh).unwrap();
    guard.read(|buf| u64::from_le_bytes(buf[200..208].try_into().unwrap()))
}

#[test]
fn a_session_allocating_waits_on_the_pfs_page_another_session_holds() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let unit = db.create_allocation_unit("dbo.T", None).unwrap();
    lab.instance.waits.clear();
    engine::instance::set_current_spid(55);
    let pfs = lab
        .instance
        .buffer_pool
        .fetch(PageKey::new(db.database_id, PageId::new(1, 1)), LatchMode::Up)
        .unwrap();
    let allocator = {
        let db = db.clone();
        std::thread::spawn(move || {
            engine::instance::set_current_spid(60);
            db.allocate_page(unit).unwrap()
        })
    };
    eventually("session 60 waits on 5:1:1", || {
        lab.instance.waiting_tasks.snapshot().iter().any(|task| {
            task.session_id == 60
                && task.wait_type == "PAGELATCH_UP"
                && task.resource_description == "5:1:1"
        })
    });
    let task =
        lab.instance.waiting_tasks.snapshot().into_iter().find(|t| t.session_id == 60).unwrap();
    assert_eq!(task.blocking_session_id, Some(55));
    drop(pfs);
    allocator.join().unwrap();
    // (The lazy writer's LAZYWRITER_SLEEP, a system session's, may be listed meanwhile.)
    let user_waits =
        lab.instance.waiting_tasks.snapshot().into_iter().filter(|t| t.session_id >= 51);
    assert_eq!(user_waits.count(), 0, "the wait ended");
    let wait = lab.instance.waits.get("PAGELATCH_UP").expect("PAGELATCH_UP was waited");
    assert_eq!(wait.waiting_tasks_count, 1);
    let latch = lab.instance.latches.snapshot();
    assert_eq!(latch[0].latch_class, "BUFFER");
    assert_eq!(latch[0].waiting_requests_count, 1);
    let hottest = &lab.instance.buffer_pool.page_waits()[0];
    assert_eq!(
        (hottest.key.page_resource().description(), hottest.wait_type),
        ("5:1:1".to_string(), "PAGELATCH_UP")
    );
    assert!(db.check_allocation().is_empty());
}

#[test]
fn without_contention_no_latch_wait_is_recorded() {
    let lab = lab();
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    lab.instance.waits.clear();
    for _ in 0..300 {
        db.allocate_page(unit).unwrap();
    }
    let waits = lab.instance.waits.snapshot();
    assert!(waits.iter().all(|w| !w.wait_type.starts_with("PAGELATCH")), "{waits:?}");
    assert!(
        waits.iter().all(|w| !w.wait_type.starts_with("PAGEIOLATCH")),
        "every page was cached: {waits:?}"
    );
    assert!(lab.instance.latches.snapshot().is_empty());
    // The page table's buckets are BUF_HASH spinlocks: one is taken on every page access that
    // the thread's frame hints do not serve (the allocation pages, latched UP, are hinted after
    // their first lookup), none is contended here.
    assert!(lab.instance.spinlocks.acquires("BUF_HASH") > 0);
    assert_eq!(lab.instance.spinlocks.get("BUF_HASH").unwrap().collisions, 0);
}

/// A session finds a page it latched shared before through its frame hint, without the page
/// table (no BUF_HASH acquisition). Once the page has left the pool and its old frame holds
/// another page, the stale hint is not trusted: the page is read back from disk.
#[test]
fn a_frame_hint_skips_the_page_table_and_a_stale_one_is_not_trusted() {
    let lab = lab();
    let db = lab.company();
    let pool = &lab.instance.buffer_pool;
    let (a, b) = (PageId::new(1, 200), PageId::new(1, 201));
    write_data_page(&lab, db.database_id, a, 11);
    write_data_page(&lab, db.database_id, b, 22);
    pool.flush(db.database_id, None).unwrap();
    assert_eq!(read_mark(&lab, db.database_id, a), 11);
    let before = lab.instance.spinlocks.acquires("BUF_HASH");
    assert_eq!(read_mark(&lab, db.database_id, a), 11);
    assert_eq!(lab.instance.spinlocks.acquires("BUF_HASH"), before, "found through the hint");
    // b leaves the pool, then a: a's frame is on top of the free list, and b's read takes it.
    pool.discard(db.database_id, Some(1), 201);
    pool.discard(db.database_id, Some(1), 200);
    assert_eq!(read_mark(&lab, db.database_id, b), 22);
    assert_eq!(read_mark(&lab, db.database_id, a), 11, "a is read again, not b's frame");
    assert_eq!(read_mark(&lab, db.database_id, b), 22);
}

/// Write-back gathers consecutive dirty pages of a file into one write, as SQL Server's gather
/// write does: at most 128 pages (1 MB), and a clean page ends a run. Each page lands at its
/// own offset.
#[test]
fn write_back_gathers_consecutive_dirty_pages_into_writes_of_up_to_128_pages() {
    let lab = lab();
    let db = lab.company();
    let pool = &lab.instance.buffer_pool;
    pool.flush(db.database_id, None).unwrap();
    // Pages 200..=327 (128 pages), page 328 left alone, then 329..=338 (10 pages).
    let dirtied: Vec<u32> = (200..=327).chain(329..=338).collect();
    for page_no in &dirtied {
        write_data_page(&lab, db.database_id, PageId::new(1, *page_no), u64::from(*page_no) * 31);
    }
    let data_file = lab.path("Company_data.mdf");
    let before = lab.instance.file_io.snapshot(&data_file);
    let writes_before = pool.counters().page_writes;
    pool.flush(db.database_id, None).unwrap();
    let after = lab.instance.file_io.snapshot(&data_file);
    assert_eq!(after.num_of_writes - before.num_of_writes, 2, "one write per run");
    assert_eq!(after.num_of_bytes_written - before.num_of_bytes_written, 138 * 8192);
    assert_eq!(pool.counters().page_writes - writes_before, 138);
    assert_eq!(engine::buffer::GATHER_WRITE_PAGES, 128);
    // Read back from disk: each page went to its own offset.
    pool.drop_clean_buffers();
    for page_no in &dirtied {
        let mark = read_mark(&lab, db.database_id, PageId::new(1, *page_no));
        assert_eq!(mark, u64::from(*page_no) * 31, "page 1:{page_no} read back");
    }
}

/// A record that does not fit (a full leaf, before its split) changes nothing: the page is not
/// made dirty and nothing is logged.
#[test]
fn an_insert_that_does_not_fit_leaves_a_clean_page_clean() {
    let lab = lab();
    let db = lab.company();
    let pool = &lab.instance.buffer_pool;
    let page = PageId::new(1, 300);
    write_data_page(&lab, db.database_id, page, 7);
    pool.flush(db.database_id, None).unwrap();
    let records_before = db.log().stats().records_appended;
    let guard = pool.fetch(PageKey::new(db.database_id, page), LatchMode::Ex).unwrap();
    assert_eq!(guard.insert_record(0, &[0x10u8; 8100]), Ok(false));
    drop(guard);
    assert_eq!(db.log().stats().records_appended, records_before, "nothing logged");
    let writes_before = pool.counters().page_writes;
    pool.flush(db.database_id, None).unwrap();
    assert_eq!(pool.counters().page_writes, writes_before, "the page stayed clean");
}

/// A new page starts all zero whichever way its frame was freed: by the lazy writer, by the
/// clock of a session that needed a frame, or by a discard.
#[test]
fn a_new_page_starts_zeroed_in_any_reused_frame() {
    let lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let db = lab.company();
    let pool = &lab.instance.buffer_pool;
    let key = |page_no: u32| PageKey::new(db.database_id, PageId::new(1, page_no));
    let fill_page = |page_no: u32| {
        let guard = pool.new_page(key(page_no)).unwrap();
        guard.write(|buf| buf[96..].fill(0xEE)).unwrap();
    };
    // Three pool's worth of pages full of 0xEE: frames are freed and reused many times over.
    for page_no in 100..500 {
        fill_page(page_no);
    }
    pool.discard(db.database_id, Some(1), 450);
    for page_no in 500..600 {
        let guard = pool.new_page(key(page_no)).unwrap();
        assert!(guard.read(|buf| buf.iter().all(|b| *b == 0)), "page 1:{page_no} starts zeroed");
    }
}

#[test]
fn memory_pressure_evicts_dirty_pages_and_reads_them_back() {
    let lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    assert_eq!(lab.instance.buffer_pool.frame_count(), 128);
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<PageId> = (0..400).map(|_| db.allocate_page(unit).unwrap()).collect();
    for (n, page) in pages.iter().enumerate() {
        write_data_page(&lab, db.database_id, *page, n as u64 * 7919);
    }
    let after_writes = lab.instance.buffer_pool.counters();
    assert!(
        after_writes.page_writes >= 400 - 128,
        "dirty pages were written to make room: {after_writes:?}"
    );
    lab.instance.waits.clear();
    for (n, page) in pages.iter().enumerate() {
        assert_eq!(
            read_mark(&lab, db.database_id, *page),
            n as u64 * 7919,
            "page {page} read back"
        );
    }
    let counters = lab.instance.buffer_pool.counters();
    assert!(counters.page_reads > after_writes.page_reads, "{counters:?}");
    assert!(counters.evictions > 0);
    // Regression: every read used to allocate a fresh buffer (RSS far above max server memory).
    assert!(counters.buffers_allocated <= 128, "one buffer per frame: {counters:?}");
    let io_wait =
        lab.instance.waits.get("PAGEIOLATCH_SH").expect("reads from disk are PAGEIOLATCH_SH waits");
    assert_eq!(io_wait.waiting_tasks_count, counters.page_reads - after_writes.page_reads);
    assert!(db.check_allocation().is_empty(), "{:?}", db.check_allocation());
}

#[test]
fn a_second_reader_of_a_page_being_read_waits_pageiolatch_sh() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let unit = db.create_allocation_unit("t", None).unwrap();
    let page = db.allocate_page(unit).unwrap();
    write_data_page(&lab, db.database_id, page, 42);
    db.checkpoint().unwrap();
    lab.instance.buffer_pool.discard(db.database_id, Some(page.file_id), page.page_no);
    let gate = IoGate::closed();
    lab.faults.lock().read_gate = Some(gate.clone());
    lab.instance.waits.clear();
    let key = PageKey::new(db.database_id, page);
    let first = {
        let pool = lab.instance.buffer_pool.clone();
        std::thread::spawn(move || {
            engine::instance::set_current_spid(70);
            pool.fetch(key, LatchMode::Sh).unwrap().read(|buf| buf[200])
        })
    };
    eventually("the first read is in flight", || {
        gate.waiting() == 1 && lab.instance.buffer_pool.is_io_in_progress(key)
    });
    let second = {
        let pool = lab.instance.buffer_pool.clone();
        std::thread::spawn(move || {
            engine::instance::set_current_spid(71);
            pool.fetch(key, LatchMode::Sh).unwrap().read(|buf| buf[200])
        })
    };
    let resource = key.page_resource().description();
    eventually("session 71 waits on the read in flight", || {
        lab.instance.waiting_tasks.snapshot().iter().any(|t| {
            t.session_id == 71
                && t.wait_type == "PAGEIOLATCH_SH"
                && t.resource_description == resource
        })
    });
    let tasks = lab.instance.waiting_tasks.snapshot();
    assert!(
        tasks.iter().any(|t| t.session_id == 70 && t.wait_type == "PAGEIOLATCH_SH"),
        "{tasks:?}"
    );
    assert_eq!(tasks.iter().find(|t| t.session_id == 71).unwrap().blocking_session_id, Some(70));
    assert_eq!(tasks.iter().find(|t| t.session_id == 71).unwrap().page, Some(key.page_resource()));
    gate.open();
    assert_eq!(first.join().unwrap(), 42);
    assert_eq!(second.join().unwrap(), 42);
    assert_eq!(lab.instance.waits.get("PAGEIOLATCH_SH").unwrap().waiting_tasks_count, 2);
    assert_eq!(lab.instance.buffer_pool.counters().page_reads, 1, "one read served both sessions");
}

/// A session waiting for a read that fails does not use the frame the failed read gave back:
/// it reads the page itself and gets its own 824, and both frames return to the free list.
#[test]
fn a_reader_waiting_on_a_read_that_fails_reads_again_and_gets_824() {
    use std::os::unix::fs::FileExt;
    let lab = lab();
    let db = Arc::new(lab.company());
    let (page, raw, offset) = corrupt_page_on_disk(&lab, &db, 42);
    let free_before = lab.instance.buffer_pool.free_frames();
    let gate = IoGate::closed();
    lab.faults.lock().read_gate = Some(gate.clone());
    let key = PageKey::new(db.database_id, page);
    let reader = |spid: u16| {
        let pool = lab.instance.buffer_pool.clone();
        std::thread::spawn(move || {
            engine::instance::set_current_spid(spid);
            pool.fetch(key, LatchMode::Sh).map(|guard| guard.read(|buf| buf[200])).err()
        })
    };
    let first = reader(70);
    eventually("the first read is in flight", || {
        gate.waiting() == 1 && lab.instance.buffer_pool.is_io_in_progress(key)
    });
    let second = reader(71);
    eventually("session 71 waits on the read in flight", || {
        lab.instance.waiting_tasks.snapshot().iter().any(|t| t.session_id == 71)
    });
    gate.open();
    for (spid, session) in [(70, first), (71, second)] {
        let error = session.join().unwrap().expect("the page is corrupt");
        assert_eq!(error.number, 824, "session {spid}: {}", error.message);
    }
    assert_eq!(lab.instance.buffer_pool.free_frames(), free_before, "no frame is kept");
    raw.write_all_at(&[0x00], offset).unwrap();
    assert_eq!(read_mark(&lab, db.database_id, page), 42, "the page reads once repaired");
}

#[test]
fn the_lazy_writer_writes_dirty_pages_when_free_frames_run_low() {
    let lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<PageId> = (0..200).map(|_| db.allocate_page(unit).unwrap()).collect();
    for page in &pages {
        write_data_page(&lab, db.database_id, *page, 1);
    }
    eventually("the lazy writer wrote pages", || {
        lab.instance.buffer_pool.counters().lazy_writer_writes > 0
    });
    eventually("the lazy writer restored free frames", || {
        lab.instance.buffer_pool.free_frames() >= 8
    });
}

#[test]
fn a_corrupt_page_read_through_the_pool_is_824_and_the_pool_recovers() {
    use std::os::unix::fs::FileExt;
    let lab = lab();
    let db = lab.company();
    let (page, raw, offset) = corrupt_page_on_disk(&lab, &db, 9);
    let key = PageKey::new(db.database_id, page);
    let error = lab.instance.buffer_pool.fetch(key, LatchMode::Sh).err().expect("824");
    assert_eq!(error.number, 824);
    assert!(
        error.message.contains(&format!("page ({}:{})", page.file_id, page.page_no)),
        "{}",
        error.message
    );
    raw.write_all_at(&[0x00], offset).unwrap();
    assert_eq!(read_mark(&lab, db.database_id, page), 9, "the same page reads fine once repaired");
}

/// Latch invariant 4 through the pool: a fetch of a page this thread holds in a mode that
/// blocks the request is error 845 at once (it would wait for ever), and the page stays usable.
/// Only a corrupt allocation map leads a session there.
#[test]
fn fetching_a_page_this_thread_holds_in_a_blocking_mode_is_845_not_a_hang() {
    let lab = lab();
    let db = lab.company();
    let pool = &lab.instance.buffer_pool;
    let key = PageKey::new(db.database_id, PageId::new(1, 1));
    let held = pool.fetch(key, LatchMode::Up).unwrap();
    let error = pool.fetch(key, LatchMode::Ex).err().expect("EX behind this thread's own UP");
    assert_eq!((error.number, error.severity), (845, 17));
    assert_eq!(
        error.message,
        "Time-out occurred while waiting for buffer latch type 4 for page (1:1), database ID 5."
    );
    let shared = pool.fetch(key, LatchMode::Sh).expect("SH is compatible with UP");
    drop(shared);
    drop(held);
    drop(pool.fetch(key, LatchMode::Ex).expect("free again"));
}

/// A page this session's open mtr holds is in use: allocating it as a new page (what a PFS byte
/// that calls it free leads to) is error 845, and its bytes are not zeroed under the mtr.
#[test]
fn a_new_page_that_this_sessions_mtr_holds_is_845_and_keeps_its_bytes() {
    let lab = lab();
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let page = db.allocate_page(unit).unwrap();
    write_data_page(&lab, db.database_id, page, 0xC0FFEE);
    let pool = &lab.instance.buffer_pool;
    let key = PageKey::new(db.database_id, page);
    let outcome = pool.in_mtr(|| {
        let guard = pool.fetch(key, LatchMode::Ex)?;
        guard.write(|buf| buf[300] = 7)?;
        drop(guard); // the mtr keeps the page latched until it ends
        pool.new_page(key).map(drop)
    });
    let error = outcome.expect_err("the page is held by this session's mtr");
    assert_eq!(error.number, 845, "{error}");
    assert_eq!(read_mark(&lab, db.database_id, page), 0xC0FFEE, "the page was not zeroed");
}

/// Freeing a page whose PFS byte already says free (a corrupt PFS page: the page's owner still
/// uses it) is error 8948 naming both pages, and changes nothing; it used to panic.
#[test]
fn freeing_a_page_the_pfs_calls_free_is_8948_not_a_panic() {
    let lab = lab();
    let db = lab.company();
    db.set_mixed_page_allocation(false).unwrap();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let first = db.allocate_page(unit).unwrap();
    let second = db.allocate_page(unit).unwrap();
    db.free_page(unit, first).unwrap();
    let error = db.free_page(unit, first).expect_err("the PFS byte says free already");
    assert_eq!((error.number, error.severity), (8948, 16));
    assert_eq!(
        error.message,
        format!(
            "Database error: Page {first} is marked with the wrong type in PFS page (1:1). PFS \
             status 0x0 expected 0x40."
        )
    );
    db.free_page(unit, second).expect("the other page is freed as before");
}

#[test]
fn lookups_count_every_fetch_on_every_thread_and_misses_only_the_reads_from_disk() {
    let lab = lab();
    let db = Arc::new(lab.company());
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<PageId> = (0..20).map(|_| db.allocate_page(unit).unwrap()).collect();
    for (n, page) in pages.iter().enumerate() {
        write_data_page(&lab, db.database_id, *page, n as u64);
    }
    db.checkpoint().unwrap();
    for page in &pages {
        lab.instance.buffer_pool.discard(db.database_id, Some(page.file_id), page.page_no);
    }
    let before = lab.instance.buffer_pool.counters();
    // Four threads read the twenty pages three times each: the first read of a page misses
    // (whichever thread gets there first reads it), every other read finds it cached.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..3 {
                    for (n, page) in pages.iter().enumerate() {
                        assert_eq!(read_mark(&lab, db.database_id, *page), n as u64);
                    }
                }
            });
        }
    });
    let after = lab.instance.buffer_pool.counters();
    assert_eq!(after.page_lookups - before.page_lookups, 4 * 3 * 20, "{after:?}");
    assert_eq!(after.lookup_misses - before.lookup_misses, 20, "{after:?}");
    assert_eq!(after.page_reads - before.page_reads, 20, "{after:?}");
    // A thread that ended leaves its count behind.
    assert_eq!(lab.instance.buffer_pool.counters().page_lookups, after.page_lookups);
    assert_eq!(after.free_list_stalls, 0, "a 512 MB pool never ran out of free frames");
}

#[test]
fn page_life_expectancy_is_the_clock_hands_sweep_and_grows_without_pressure() {
    let started = Instant::now();
    let lab = lab_with(|config| config.max_server_memory_mb = Some(1));
    let pool = &lab.instance.buffer_pool;
    // No sweep yet: every page has stayed since the pool started.
    assert_eq!(pool.counters().clock_sweeps, 0);
    let later = Instant::now() + Duration::from_secs(30);
    assert!(pool.page_life_expectancy(later) >= Duration::from_secs(30));
    assert!(pool.page_life_expectancy(later) <= later.duration_since(started));
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pages: Vec<PageId> = (0..400).map(|_| db.allocate_page(unit).unwrap()).collect();
    for (n, page) in pages.iter().enumerate() {
        write_data_page(&lab, db.database_id, *page, n as u64);
    }
    // 400 pages through 128 frames, read back twice: the hand sweeps the frames again and again.
    let sweeps_before = pool.counters().clock_sweeps;
    for _ in 0..2 {
        for (n, page) in pages.iter().enumerate() {
            assert_eq!(read_mark(&lab, db.database_id, *page), n as u64);
        }
    }
    let counters = pool.counters();
    assert!(counters.clock_sweeps >= sweeps_before + 2, "{counters:?}");
    assert!(counters.free_list_stalls > 0, "frames were taken by eviction: {counters:?}");
    assert!(counters.lookup_misses >= 400, "{counters:?}");
    // The life expectancy is now one sweep, shorter than the pool has existed...
    let now = Instant::now();
    assert!(pool.page_life_expectancy(now) < now.duration_since(started), "{counters:?}");
    // ...and with no more pressure the hand stops, and its current sweep grows a second a second.
    // The lazy writer, woken by the reads, may still end a sweep after `asked` was taken: the
    // sweep then started at most `asked.elapsed()` after it.
    let asked = Instant::now();
    let expectancy = pool.page_life_expectancy(asked + Duration::from_secs(100));
    assert!(expectancy + asked.elapsed() >= Duration::from_secs(100), "{expectancy:?}");
}

/// An insert into a new page whose header alone is formatted keeps only the header for its
/// undo: the body is known to be zero and is neither read nor copied. An abort still gives the
/// page back as it was before the mtr, zero throughout (a header saved as zeros would leave
/// the format's bytes behind), and the same insert committed keeps its row.
#[test]
fn an_aborted_insert_into_a_new_page_leaves_it_zero_and_a_committed_one_keeps_its_row() {
    let lab = lab();
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let page = db.allocate_page(unit).unwrap();
    let pool = &lab.instance.buffer_pool;
    let key = PageKey::new(db.database_id, page);
    let columns = [Column::new("c", SqlType::Binary(400), false)];
    let bytes: Vec<u8> = (0..400u32).map(|n| (n % 251) as u8 + 1).collect();
    let values = [Value::Bytes(bytes)];
    let record = encode(&columns, &Layout::new(&columns), &values, RecordType::Primary).unwrap();
    let insert = |fail: bool| {
        pool.in_mtr(|| {
            let guard = pool.new_page(key)?;
            guard.write_within(&[(0, PAGE_HEADER_SIZE)], |buf| {
                datapage::format_new(buf, page, PageType::Data, unit, 0, 4)
            })?;
            assert!(guard.insert_record(0, &record)?, "400 bytes fit a new page");
            if fail { Err(SqlError::new(50000, 16, 1, "abort the mtr")) } else { Ok(()) }
        })
    };
    insert(true).expect_err("the mtr aborts");
    let bytes = pool.fetch(key, LatchMode::Sh).unwrap().read(|buf| *buf);
    let stray = bytes.iter().position(|b| *b != 0);
    assert_eq!(stray, None, "the aborted mtr left a byte behind");
    insert(false).expect("the mtr commits");
    let bytes = pool.fetch(key, LatchMode::Sh).unwrap().read(|buf| *buf);
    assert_eq!(datapage::slot_count(&bytes), 1);
    assert_eq!(&bytes[PAGE_HEADER_SIZE..PAGE_HEADER_SIZE + record.len()], &record[..]);
}

/// An insert's record goes from its page to the log at commit (mtr invariant 2). A later
/// change in the same mtr that overwrites the record first copies it into the insert's
/// payload: the log carries the record as inserted, and the page's records replayed over a
/// zero page give the page as it is. Without the copy, the insert would log the overwritten
/// bytes and the replay would apply the overwrite twice.
#[test]
fn an_insert_overwritten_in_its_own_mtr_logs_the_record_as_inserted() {
    let lab = lab();
    let db = lab.company();
    let unit = db.create_allocation_unit("t", None).unwrap();
    let pool = &lab.instance.buffer_pool;
    let columns = [Column::new("c", SqlType::Binary(1500), false)];
    let bytes: Vec<u8> = (0..1500u32).map(|n| (n % 251) as u8 + 1).collect();
    let record =
        encode(&columns, &Layout::new(&columns), &[Value::Bytes(bytes)], RecordType::Primary)
            .unwrap();
    assert!(record.len() >= engine::log::mtr::RECORD_FROM_PAGE_MIN_BYTES, "read from its page");
    let second = PAGE_HEADER_SIZE + record.len();
    let page_of = |overwrite: bool| {
        let page = db.allocate_page(unit).unwrap();
        let key = PageKey::new(db.database_id, page);
        pool.in_mtr(|| {
            let guard = pool.new_page(key)?;
            guard.write_within(&[(0, PAGE_HEADER_SIZE)], |buf| {
                datapage::format_new(buf, page, PageType::Data, unit, 0, 4)
            })?;
            assert!(guard.insert_record(0, &record)?);
            assert!(guard.insert_record(1, &record)?, "a second insert into the same page");
            drop(guard); // the mtr keeps the page latched
            if overwrite {
                // The second record, still read from the page, through another guard of the
                // page, as a later step of an operation would change it.
                let again = pool.fetch(key, LatchMode::Ex)?;
                again.write(|buf| buf[second + 10..second + 50].fill(0xEE))?;
            }
            Ok(())
        })
        .unwrap();
        db.log().flush_all().unwrap();
        (page, pool.fetch(key, LatchMode::Sh).unwrap().read(|buf| *buf))
    };
    for overwrite in [false, true] {
        let (page, now) = page_of(overwrite);
        let mut replayed = [0u8; engine::units::PAGE_SIZE];
        let mut inserted = Vec::new();
        for (_, logged) in db.log().read_durable().unwrap() {
            if logged.flags & engine::log::record::FLAG_PAGE == 0 {
                continue;
            }
            let Some((id, redo)) = engine::log::mtr::decode_page_payload(&logged.payload) else {
                continue;
            };
            if id != page {
                continue;
            }
            if let engine::log::mtr::Redo::Insert { record, .. } = &redo {
                inserted.push(record.clone());
            }
            redo.apply(&mut replayed).unwrap();
        }
        assert_eq!(inserted, vec![record.clone(), record.clone()], "overwrite {overwrite}");
        // The page LSN and checksum are stamped outside the records.
        replayed[40..50].copy_from_slice(&now[40..50]);
        replayed[60..64].copy_from_slice(&now[60..64]);
        assert!(replayed == now, "the page's records give the page back (overwrite {overwrite})");
        assert_eq!(now[second + 10] == 0xEE, overwrite);
    }
}
