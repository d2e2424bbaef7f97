//! The targets an event session delivers its events to: `package0.ring_buffer` (the last
//! events in memory), `package0.event_file` (events appended to files in the errorlog's
//! directory) and `package0.event_counter` (a count per event).
//!
//! Deviation: SQL Server's event_file target writes XEL, a binary format of buffers that only
//! SQL Server's own readers decode. This one writes the event XML that
//! `sys.fn_xe_file_target_read_file` returns, one event per line after a header line
//! (docs/format/xel.md); the files keep SQL Server's names (`<name>_0_<FILETIME>.xel`), sizes
//! and rollover. Events are written as they fire rather than in buffers every
//! MAX_DISPATCH_LATENCY, and synced when the session stops.

use super::catalog::{EVENTS, TargetObject};
use super::{EventRecord, TargetDef};
use crate::io::{Io, IoFile};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first line of every event file this engine writes.
pub const EVENT_FILE_HEADER: &str = "<!-- extentdb event file, version 1: one event per line -->";

/// 100 ns intervals from 1601-01-01 to 1970-01-01 (a Windows FILETIME's epoch).
const FILETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;

pub enum TargetState {
    RingBuffer(RingBuffer),
    EventFile(EventFile),
    EventCounter(EventCounter),
}

impl TargetState {
    pub fn new(
        def: &TargetDef,
        io: &Arc<dyn Io>,
        dir: &Path,
        now_utc: chrono::NaiveDateTime,
    ) -> std::io::Result<TargetState> {
        Ok(match def.target.name {
            "ring_buffer" => TargetState::RingBuffer(RingBuffer {
                events: VecDeque::new(),
                memory_used_bytes: 0,
                max_memory_bytes: def.setting_u64("max_memory", 4096) * 1024,
                max_events: def.setting_u64("max_events_limit", 1000),
                processed: 0,
                dropped: 0,
            }),
            "event_file" => TargetState::EventFile(EventFile::open(def, io, dir, now_utc)?),
            _ => TargetState::EventCounter(EventCounter::default()),
        })
    }

    pub fn target(&self) -> &'static TargetObject {
        let name = match self {
            TargetState::RingBuffer(_) => "ring_buffer",
            TargetState::EventFile(_) => "event_file",
            TargetState::EventCounter(_) => "event_counter",
        };
        super::catalog::target(name).expect("a known target")
    }

    /// Takes one event; the bytes written, for sys.dm_xe_session_targets.bytes_written.
    pub fn deliver(&mut self, record: &EventRecord) -> u64 {
        match self {
            TargetState::RingBuffer(ring) => ring.push(record.to_xml(true)),
            TargetState::EventFile(file) => {
                file.append(&record.to_xml(false), record.timestamp_utc)
            }
            TargetState::EventCounter(counter) => {
                *counter.counts.entry(record.event).or_default() += 1;
                0
            }
        }
    }

    /// sys.dm_xe_session_targets.target_data.
    pub fn target_data(&self) -> String {
        match self {
            TargetState::RingBuffer(ring) => ring.target_data(),
            TargetState::EventFile(file) => file.target_data(),
            TargetState::EventCounter(counter) => counter.target_data(),
        }
    }

    /// Makes what was written durable (a session stopping).
    pub fn flush(&mut self) {
        if let TargetState::EventFile(file) = self {
            file.sync();
        }
    }
}

pub struct RingBuffer {
    events: VecDeque<String>,
    memory_used_bytes: u64,
    max_memory_bytes: u64,
    max_events: u64,
    processed: u64,
    dropped: u64,
}

impl RingBuffer {
    fn push(&mut self, xml: String) -> u64 {
        let size = xml.len() as u64;
        self.processed += 1;
        self.memory_used_bytes += size;
        self.events.push_back(xml);
        while self.events.len() as u64 > self.max_events.max(1)
            || (self.max_memory_bytes > 0
                && self.memory_used_bytes > self.max_memory_bytes
                && self.events.len() > 1)
        {
            let Some(oldest) = self.events.pop_front() else { break };
            self.memory_used_bytes -= oldest.len() as u64;
            self.dropped += 1;
        }
        size
    }

    fn target_data(&self) -> String {
        let mut xml = format!(
            "<RingBufferTarget truncated=\"0\" processingTime=\"0\" totalEventsProcessed=\"{}\" \
             eventCount=\"{}\" droppedCount=\"{}\" memoryUsed=\"{}\">",
            self.processed,
            self.events.len(),
            self.dropped,
            self.memory_used_bytes
        );
        for event in &self.events {
            xml.push_str(event);
        }
        xml.push_str("</RingBufferTarget>");
        xml
    }
}

#[derive(Default)]
pub struct EventCounter {
    counts: BTreeMap<usize, u64>,
}

impl EventCounter {
    fn target_data(&self) -> String {
        let mut xml = String::from("<CounterTarget truncated=\"0\"><Packages>");
        for package in super::catalog::PACKAGES.iter() {
            let events: Vec<_> = self
                .counts
                .iter()
                .filter(|(event, _)| EVENTS[**event].package == package.name)
                .collect();
            if events.is_empty() {
                continue;
            }
            xml.push_str(&format!("<Package name=\"{}\">", package.name));
            for (event, count) in events {
                xml.push_str(&format!(
                    "<Event name=\"{}\" count=\"{count}\" />",
                    EVENTS[*event].name
                ));
            }
            xml.push_str("</Package>");
        }
        xml.push_str("</Packages></CounterTarget>");
        xml
    }
}

pub struct EventFile {
    io: Arc<dyn Io>,
    /// `dir/name` without `.xel`: each file is `<base>_0_<FILETIME>.xel`.
    base: PathBuf,
    max_file_bytes: u64,
    max_rollover_files: u64,
    files: VecDeque<PathBuf>,
    file: Box<dyn IoFile>,
    size_bytes: u64,
    logged: u64,
    dropped: u64,
}

/// Where an event_file target's files go: a relative filename is in the errorlog's directory,
/// as SQL Server puts it in its LOG folder; `.xel` is dropped from the base name.
pub fn event_file_base(dir: &Path, filename: &str) -> PathBuf {
    let path = Path::new(filename);
    let path = if path.is_absolute() { path.to_path_buf() } else { dir.join(path) };
    match path.extension() {
        Some(ext) if ext.eq_ignore_ascii_case("xel") => path.with_extension(""),
        _ => path,
    }
}

impl EventFile {
    fn open(
        def: &TargetDef,
        io: &Arc<dyn Io>,
        dir: &Path,
        now_utc: chrono::NaiveDateTime,
    ) -> std::io::Result<EventFile> {
        let base = event_file_base(dir, &def.setting("filename").unwrap_or_default());
        let (path, file) = Self::create(io, &base, now_utc)?;
        Ok(EventFile {
            io: io.clone(),
            base,
            max_file_bytes: def.setting_u64("max_file_size", 1024).max(1) << 20,
            max_rollover_files: def.setting_u64("max_rollover_files", 5).max(1),
            files: VecDeque::from([path]),
            file,
            size_bytes: EVENT_FILE_HEADER.len() as u64 + 1,
            logged: 0,
            dropped: 0,
        })
    }

    /// A new file named for `now_utc`, a tick later if that name is taken.
    fn create(
        io: &Arc<dyn Io>,
        base: &Path,
        now_utc: chrono::NaiveDateTime,
    ) -> std::io::Result<(PathBuf, Box<dyn IoFile>)> {
        let mut ticks = now_utc.and_utc().timestamp_micros() * 10 + FILETIME_UNIX_EPOCH;
        let stem = base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        loop {
            let path = base.with_file_name(format!("{stem}_0_{ticks}.xel"));
            match io.create_new(&path) {
                Ok(file) => {
                    file.write_at(format!("{EVENT_FILE_HEADER}\n").as_bytes(), 0)?;
                    return Ok((path, file));
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => ticks += 1,
                Err(err) => return Err(err),
            }
        }
    }

    fn append(&mut self, xml: &str, now_utc: chrono::NaiveDateTime) -> u64 {
        let line = format!("{xml}\n");
        if self.size_bytes + line.len() as u64 > self.max_file_bytes
            && self.roll_over(now_utc).is_err()
        {
            self.dropped += 1;
            return 0;
        }
        if self.file.write_at(line.as_bytes(), self.size_bytes).is_err() {
            self.dropped += 1;
            return 0;
        }
        self.size_bytes += line.len() as u64;
        self.logged += 1;
        line.len() as u64
    }

    fn roll_over(&mut self, now_utc: chrono::NaiveDateTime) -> std::io::Result<()> {
        self.sync();
        let (path, file) = Self::create(&self.io, &self.base, now_utc)?;
        self.file = file;
        self.size_bytes = EVENT_FILE_HEADER.len() as u64 + 1;
        self.files.push_back(path);
        while self.files.len() as u64 > self.max_rollover_files {
            if let Some(oldest) = self.files.pop_front() {
                let _ = self.io.remove(&oldest);
            }
        }
        Ok(())
    }

    fn sync(&mut self) {
        let _ = self.file.sync_data();
    }

    fn target_data(&self) -> String {
        let current = self.files.back().map(|p| p.display().to_string()).unwrap_or_default();
        format!(
            "<EventFileTarget truncated=\"0\"><Buffers logged=\"{}\" dropped=\"{}\" /><File name=\"{}\" /></EventFileTarget>",
            self.logged,
            self.dropped,
            super::escape_xml(&current)
        )
    }
}
