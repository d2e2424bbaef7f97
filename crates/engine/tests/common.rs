//! Shared helpers for the engine's integration tests: an instance in a temporary directory,
//! optionally on the fault-injecting backend, and small readers of its errorlog.

#![allow(dead_code)]

use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::instance::{Instance, InstanceConfig};
use engine::io::{FaultIo, FaultPlan, Io};
use engine::units::SizeSpec;
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;

pub struct Lab {
    pub dir: tempfile::TempDir,
    pub instance: Arc<Instance>,
    pub faults: Arc<Mutex<FaultPlan>>,
}

pub fn size(text: &str) -> SizeSpec {
    SizeSpec::parse(text).expect("a valid size")
}

/// An instance on the fault backend (no fault armed) in a fresh directory.
pub fn lab_with(configure: impl FnOnce(&mut InstanceConfig)) -> Lab {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = InstanceConfig::new(dir.path());
    configure(&mut config);
    let fault_io = FaultIo::new(engine::io::std_io());
    let faults = fault_io.plan();
    let io: Arc<dyn Io> = Arc::new(fault_io);
    let instance =
        Instance::start_with(config, io, engine::clock::system_clock()).expect("instance starts");
    Lab { dir, instance, faults }
}

pub fn lab() -> Lab {
    lab_with(|_| {})
}

impl Lab {
    /// Restarts the instance on the same directory (a new process, as after a restart).
    pub fn restart(&mut self) {
        // The old process is gone: so is its lock on the data directory.
        self.instance.release_data_directory();
        let config = self.instance.config.clone();
        let fault_io = FaultIo::new(engine::io::std_io());
        self.faults = fault_io.plan();
        let io: Arc<dyn Io> = Arc::new(fault_io);
        self.instance = Instance::start_with(config, io, engine::clock::system_clock())
            .expect("instance restarts");
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    /// Seed 000's database: a 5 MB primary file and a log.
    pub fn company(&self) -> Database {
        let spec = DatabaseSpec {
            name: "Company".into(),
            primary: vec![FileSpec::new("Company_data", "Company_data.mdf").size(size("5MB"))],
            filegroups: Vec::new(),
            logs: vec![FileSpec::new("Company_log", "Company_log.ldf").size(size("1MB"))],
            mixed_page_allocation: false,
        };
        Database::create(&self.instance, &spec).expect("Company is created")
    }

    pub fn errorlog_texts(&self) -> Vec<String> {
        self.instance
            .errorlog
            .read(0)
            .expect("errorlog readable")
            .into_iter()
            .map(|e| e.text)
            .collect()
    }

    /// Files in the instance directory (names), sorted.
    /// The files in the data directory, but for the errorlogs and the instance's lock file.
    pub fn files_on_disk(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("ERRORLOG") && n != engine::instance::LOCK_FILE_NAME)
            .collect();
        names.sort();
        names
    }
}

/// Counts of (file id -> extents) among the given extent first pages.
pub fn per_file(extents: &[engine::units::PageId]) -> std::collections::BTreeMap<u16, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for extent in extents {
        *counts.entry(extent.file_id).or_insert(0) += 1;
    }
    counts
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// A seeded generator (the engine's SplitMix64): tests that use randomness print their seed,
/// and `EXTENTDB_SEED=n` replays one.
pub struct Rng(engine::rng::SplitMix64);

impl Rng {
    pub fn from_env(test: &str) -> Rng {
        let seed =
            std::env::var("EXTENTDB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0001);
        eprintln!("{test}: seed {seed} (replay with EXTENTDB_SEED={seed})");
        Rng::seeded(seed)
    }

    pub fn seeded(seed: u64) -> Rng {
        Rng(engine::rng::SplitMix64::new(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    pub fn guid(&mut self) -> [u8; 16] {
        self.0.guid()
    }
}

/// Polls `condition` for up to ten seconds (a bound, not a timing assertion).
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
