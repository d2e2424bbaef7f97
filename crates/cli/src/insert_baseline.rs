//! `bench insert`'s in-process baseline: the same rows inserted into a bare in-memory B-tree,
//! timed in the same process just before and just after the load.
//!
//! Why: this VM runs the same work at very different speeds from one quarter of an hour to the
//! next (docs/benchmarks.md: 2.8 to 5 us of CPU for the same row of the same build), so a
//! rows/s figure alone does not say whether a build or the machine changed. The baseline does
//! the part of the load that any B-tree engine must do, and nothing else: it finds each row's
//! leaf, finds its place by binary search, moves the entries after it, and splits full leaves,
//! in 8 KB leaves of 142-byte entries (the load's record size) under one sorted index of
//! separators. As many threads as the sessions may have CPUs, each with a tree of its own and
//! its share of the rows, of the same key kind (random GUIDs from the same generator, or
//! ascending integers). No latch, lock, log, buffer pool, record format or commit: the ratio
//! `vs_baseline` (the load's rows/s over the baseline's) is what the engine's machinery costs
//! on top of the bare insert of the same data, measured in the same minutes.
//!
//! The leaves are allocated and written once before the clock starts, so the timed part
//! neither calls the allocator nor faults in memory. A first version on `std`'s `BTreeMap` ran
//! 3-21 % slower after the load than before it, in five runs of five; this one shows no such
//! skew, so that was the heap's state and its page faults, not the machine. The baseline runs
//! before the instance starts and after the load ends, never beside it.
//!
//! The trees share nothing, so the baseline does not see what makes this VM's slow minutes:
//! the time a cache line takes to go from one CPU to the other, which every shared line of the
//! load pays (a latch word, the log's append, a lock-table bucket, a scheduler's queue). It
//! is 55-110 ns a round trip here most of the time and 300-400 ns for seconds or minutes at a
//! time (the host placing the two vCPUs apart, as far as a guest can tell; docs/benchmarks.md,
//! thirty-third session). [`cpu_round_trip_ns`]
//! measures it with two threads bound to the CPUs and one line passed back and forth, before
//! and after the load, beside the baseline.

use crate::bench_insert::KeyKind;
use engine::rng::SplitMix64;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// An entry: the load's 142-byte record, its 16-byte key first.
const ENTRY_BYTES: usize = 142;
/// Entries a leaf holds: a page's 8,096 bytes below the header, at 142 bytes and a 2-byte slot
/// each, as the engine's leaves hold them.
const LEAF_ENTRIES: usize = 8096 / (ENTRY_BYTES + 2);

type Key = [u8; 16];
type Entry = [u8; ENTRY_BYTES];

#[derive(Clone)]
struct Leaf {
    len: usize,
    entries: [Entry; LEAF_ENTRIES],
}

/// One thread's tree: its leaves (all allocated up front) and the index of their first keys.
struct Tree {
    leaves: Vec<Leaf>,
    /// (lowest key of the leaf, leaf): sorted; the first entry's key is the lowest of all.
    index: Vec<(Key, usize)>,
}

impl Tree {
    /// A tree with room for `rows` entries even if every leaf were only half full, its memory
    /// written once so that no insert faults it in.
    fn with_room_for(rows: u64) -> Tree {
        let leaves_needed = (rows as usize).div_ceil(LEAF_ENTRIES / 2) + 1;
        let empty = Leaf { len: 0, entries: [[0xA5; ENTRY_BYTES]; LEAF_ENTRIES] };
        let mut leaves = vec![empty; leaves_needed];
        leaves.truncate(1);
        let mut index = Vec::with_capacity(leaves_needed);
        index.push(([0u8; 16], 0));
        Tree { leaves, index }
    }

    /// Empties the tree, keeping its leaves' memory.
    fn clear(&mut self) {
        self.leaves.truncate(1);
        self.leaves[0].len = 0;
        self.index.truncate(1);
    }

    fn len(&self) -> usize {
        self.leaves.iter().map(|leaf| leaf.len).sum()
    }

    fn insert(&mut self, entry: &Entry) {
        let key = key_of(entry);
        let at = self.index.partition_point(|(first, _)| *first <= key).max(1) - 1;
        let leaf_no = self.index[at].1;
        if self.leaves[leaf_no].len == LEAF_ENTRIES {
            self.split(at, key);
            return self.insert(entry);
        }
        let leaf = &mut self.leaves[leaf_no];
        let slot = leaf.entries[..leaf.len].partition_point(|e| key_of(e) < key);
        leaf.entries.copy_within(slot..leaf.len, slot + 1);
        leaf.entries[slot] = *entry;
        leaf.len += 1;
    }

    /// Splits index entry `at`'s full leaf for `key`: its upper half moves to a new leaf, or,
    /// when `key` goes past the end of the last leaf (an ascending key), nothing moves and the
    /// new leaf starts empty, as the engine's and SQL Server's append splits do.
    fn split(&mut self, at: usize, key: Key) {
        let leaf_no = self.index[at].1;
        let new_no = self.leaves.len();
        assert!(new_no < self.leaves.capacity(), "room was made for every leaf up front");
        let old = &self.leaves[leaf_no];
        let appending = at + 1 == self.index.len() && key > key_of(&old.entries[old.len - 1]);
        let keep = if appending { LEAF_ENTRIES } else { LEAF_ENTRIES / 2 };
        let mut upper = old.clone();
        upper.entries.copy_within(keep..LEAF_ENTRIES, 0);
        upper.len = LEAF_ENTRIES - keep;
        self.leaves[leaf_no].len = keep;
        let first = if appending { key } else { key_of(&upper.entries[0]) };
        self.leaves.push(upper);
        self.index.insert(at + 1, (first, new_no));
    }
}

fn key_of(entry: &Entry) -> Key {
    entry[..16].try_into().expect("an entry starts with its key")
}

/// One timed run of the baseline.
pub struct BaselineRun {
    /// Entries the trees held at the end: every row, unless two random keys were equal.
    pub rows: u64,
    pub seconds: f64,
}

impl BaselineRun {
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

/// How many threads the baseline uses: one per CPU the load's sessions may run on (the CPUs
/// 'affinity mask' names, else all the process may use), and no more than the sessions.
pub fn thread_count(sessions: u32, affinity_mask: i32, process_cpus: usize) -> usize {
    let cpus = if affinity_mask == 0 { process_cpus } else { affinity_mask.count_ones() as usize };
    cpus.min(sessions as usize).max(1)
}

/// Times of one run of all the threads: the first one's start to the last one's end.
type Span = (Instant, Instant);

/// Inserts `rows` rows of `key`'s kind into one tree per thread (`threads` of them, each its
/// share of the rows), started together, `repetitions` times over (each tree emptied between
/// them, its memory kept), and gives the run of median speed: one run lasts about a tenth of a
/// second here, short enough for a moment's noise to move it by a fifth.
pub fn run(rows: u64, threads: usize, key: KeyKind, seed: u64, repetitions: usize) -> BaselineRun {
    assert!(threads >= 1 && repetitions >= 1, "at least one thread and one repetition");
    let start = std::sync::Barrier::new(threads + 1);
    let mut runs: Vec<BaselineRun> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|n| {
                let share = rows / threads as u64 + u64::from((n as u64) < rows % threads as u64);
                let first_id = first_identity(rows, threads, n);
                let seed = seed.wrapping_mul(1_000_003).wrapping_add(n as u64);
                let start = &start;
                scope.spawn(move || {
                    let entries = entries(share, key, seed, first_id);
                    let mut tree = Tree::with_room_for(share);
                    let mut done = Vec::with_capacity(repetitions);
                    for _ in 0..repetitions {
                        tree.clear();
                        start.wait();
                        let began = Instant::now();
                        for entry in &entries {
                            tree.insert(entry);
                        }
                        done.push((tree.len() as u64, (began, Instant::now())));
                    }
                    done
                })
            })
            .collect();
        for _ in 0..repetitions {
            start.wait();
        }
        let per_thread: Vec<Vec<(u64, Span)>> = workers
            .into_iter()
            .map(|worker| worker.join().expect("a baseline thread does not panic"))
            .collect();
        (0..repetitions).map(|r| combine(per_thread.iter().map(|runs| runs[r]))).collect()
    });
    runs.sort_by(|a, b| a.rows_per_s().total_cmp(&b.rows_per_s()));
    runs.swap_remove(repetitions / 2)
}

/// One repetition over all the threads: their entries, from the first start to the last end.
fn combine(threads: impl Iterator<Item = (u64, Span)>) -> BaselineRun {
    let mut held = 0;
    let mut span: Option<Span> = None;
    for (len, (began, ended)) in threads {
        held += len;
        span = Some(span.map_or((began, ended), |(b, e)| (b.min(began), e.max(ended))));
    }
    let (began, ended) = span.expect("at least one thread");
    BaselineRun { rows: held, seconds: ended.duration_since(began).as_secs_f64() }
}

/// Round trips of a cache line between two CPUs per measurement, and measurements taken.
const ROUND_TRIPS: u32 = 50_000;
const ROUND_TRIP_MEASUREMENTS: usize = 3;
/// A measurement that takes longer than this gives up (the two threads sharing one CPU would
/// take a scheduler tick a round trip).
const ROUND_TRIP_LIMIT: Duration = Duration::from_secs(2);

/// A cache line of its own, so that nothing else the process writes shares it.
#[repr(align(64))]
struct Line(AtomicU32);

const PING: u32 = 1;
const PONG: u32 = 0;
const GIVE_UP: u32 = 2;

/// How long a cache line written on `cpus.0` takes to be read on `cpus.1` and answered, in ns
/// a round trip: the median of [`ROUND_TRIP_MEASUREMENTS`] measurements of [`ROUND_TRIPS`].
/// None if a thread could not be bound to its CPU or a measurement ran too long.
pub fn cpu_round_trip_ns(cpus: (usize, usize)) -> Option<f64> {
    let mut measured = Vec::with_capacity(ROUND_TRIP_MEASUREMENTS);
    for _ in 0..ROUND_TRIP_MEASUREMENTS {
        measured.push(one_round_trip_measurement(cpus)?);
    }
    measured.sort_by(f64::total_cmp);
    Some(measured[measured.len() / 2])
}

fn one_round_trip_measurement(cpus: (usize, usize)) -> Option<f64> {
    let line = Line(AtomicU32::new(PONG));
    std::thread::scope(|scope| {
        let line = &line;
        let answerer = scope.spawn(move || {
            if !engine::affinity::bind_current_thread(&[cpus.1]) {
                line.0.store(GIVE_UP, Ordering::Release);
                return;
            }
            for _ in 0..ROUND_TRIPS {
                // Loads while waiting, as the asker's: a read-modify-write in the loop would
                // pull the line away from the asker again and again, and time that instead.
                loop {
                    match line.0.load(Ordering::Acquire) {
                        PING => break,
                        GIVE_UP => return,
                        _ => std::hint::spin_loop(),
                    }
                }
                // Not a plain store: a GIVE_UP that the asker wrote meanwhile must stay.
                if line.0.compare_exchange(PING, PONG, Ordering::AcqRel, Ordering::Acquire).is_err()
                {
                    return;
                }
            }
        });
        let asker = scope.spawn(move || {
            if !engine::affinity::bind_current_thread(&[cpus.0]) {
                line.0.store(GIVE_UP, Ordering::Release);
                return None;
            }
            let started = Instant::now();
            for _ in 0..ROUND_TRIPS {
                if line.0.swap(PING, Ordering::AcqRel) == GIVE_UP {
                    return None;
                }
                let mut spins = 0u32;
                loop {
                    match line.0.load(Ordering::Acquire) {
                        PONG => break,
                        GIVE_UP => return None,
                        _ => std::hint::spin_loop(),
                    }
                    spins += 1;
                    if spins.is_multiple_of(4096) && started.elapsed() > ROUND_TRIP_LIMIT {
                        line.0.store(GIVE_UP, Ordering::Release);
                        return None;
                    }
                }
            }
            Some(started.elapsed().as_nanos() as f64 / f64::from(ROUND_TRIPS))
        });
        let ns = asker.join().expect("the asking thread does not panic");
        answerer.join().expect("the answering thread does not panic");
        ns
    })
}

/// The two CPUs whose line [`cpu_round_trip_ns`] measures for a load: the first two the
/// 'affinity mask' names, else the first two the process may use; None with fewer than two.
pub fn cpu_pair(affinity_mask: i32, process_cpus: &[usize]) -> Option<(usize, usize)> {
    let cpus = if affinity_mask == 0 {
        process_cpus.to_vec()
    } else {
        engine::affinity::cpus_of_mask(affinity_mask)
    };
    match cpus[..] {
        [first, second, ..] => Some((first, second)),
        _ => None,
    }
}

/// The first identity value of thread `n`'s share: the shares cover 1..=rows without overlap.
fn first_identity(rows: u64, threads: usize, n: usize) -> u64 {
    let (base, extra) = (rows / threads as u64, rows % threads as u64);
    let n = n as u64;
    1 + n * base + n.min(extra)
}

/// One thread's rows, made before the clock starts: c1 as the load makes it, and c2 differing
/// from row to row as the load's datetime does. An identity key is stored big-endian, so that
/// its bytes sort as its values.
#[allow(clippy::big_endian_bytes, reason = "an integer key whose byte order is its order")]
fn entries(share: u64, key: KeyKind, seed: u64, first_id: u64) -> Vec<Entry> {
    let mut rng = SplitMix64::new(seed);
    let mut entries = Vec::with_capacity(share as usize);
    for i in 0..share {
        let mut entry = [b'a'; ENTRY_BYTES];
        match key {
            KeyKind::Guid => entry[..16].copy_from_slice(&rng.guid()),
            KeyKind::Identity => {
                entry[..16].fill(0);
                entry[..8].copy_from_slice(&(first_id + i).to_be_bytes());
            }
        }
        entry[16..24].copy_from_slice(&i.to_le_bytes());
        entries.push(entry);
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row lands in a tree in each repetition, whatever the split over threads, for both key kinds (the
    /// identity shares cover 1..=rows exactly once, so no two threads' keys collide and none
    /// is left out).
    #[test]
    fn every_row_is_inserted_once_over_the_threads() {
        for (rows, threads) in [(1, 1), (1000, 1), (1001, 2), (1003, 4), (5, 8)] {
            for key in [KeyKind::Guid, KeyKind::Identity] {
                let run = run(rows, threads, key, 7, 3);
                assert_eq!(run.rows, rows, "{rows} rows on {threads} threads, {key:?}");
                assert!(run.seconds > 0.0);
            }
        }
        let starts: Vec<u64> = (0..4).map(|n| first_identity(1003, 4, n)).collect();
        assert_eq!(starts, [1, 252, 503, 754], "shares of 251, 251, 251 and 250");
    }

    /// The tree keeps its entries in key order across splits, each with its own bytes, for
    /// random and ascending keys.
    #[test]
    fn a_tree_holds_its_entries_in_key_order() {
        for key in [KeyKind::Guid, KeyKind::Identity] {
            let rows = entries(5000, key, 3, 1);
            let mut tree = Tree::with_room_for(5000);
            // A second fill of the emptied tree must give the same tree.
            for _ in 0..2 {
                tree.clear();
                for entry in &rows {
                    tree.insert(entry);
                }
            }
            let mut walked = Vec::new();
            for (_, leaf_no) in &tree.index {
                let leaf = &tree.leaves[*leaf_no];
                walked.extend_from_slice(&leaf.entries[..leaf.len]);
            }
            let mut expected = rows.clone();
            expected.sort_by_key(key_of);
            assert!(walked == expected, "{key:?}: the leaves in index order are the sorted rows");
            assert!(tree.index.len() > 50, "5,000 rows split into many leaves");
        }
    }

    /// The line really goes between the CPUs: a round trip takes some time, and binding to a
    /// CPU the process does not have gives up. (Its length is not asserted: a test must not
    /// time the machine.)
    #[test]
    fn a_round_trip_between_two_cpus_is_measured_or_refused() {
        let cpus = engine::affinity::process_cpus();
        if let Some(pair) = cpu_pair(0, cpus) {
            let ns = cpu_round_trip_ns(pair).expect("two of the process's CPUs bind");
            assert!(ns > 0.0);
        }
        assert_eq!(cpu_round_trip_ns((0, 1000)), None, "no such CPU");
        // Both threads on one CPU: a round trip takes a time slice, and the measurement gives
        // up after ROUND_TRIP_LIMIT, both threads ending (a GIVE_UP overwritten would hang).
        let one = cpus[0];
        assert_eq!(cpu_round_trip_ns((one, one)), None, "one CPU for both threads");
        assert_eq!(cpu_round_trip_ns((100_000, 0)), None, "past what a CPU set names");
        assert_eq!(cpu_pair(0b1, cpus), None, "one CPU: nothing to measure");
        assert_eq!(cpu_pair(0b110, &[0, 1, 2]), Some((1, 2)), "the mask's CPUs");
    }

    #[test]
    fn the_threads_are_the_sessions_cpus() {
        assert_eq!(thread_count(16, 0, 2), 2, "all the process's CPUs");
        assert_eq!(thread_count(16, 0b1, 2), 1, "one CPU in the mask");
        assert_eq!(thread_count(16, 0b11, 2), 2);
        assert_eq!(thread_count(1, 0b11, 2), 1, "no more threads than sessions");
    }
}
