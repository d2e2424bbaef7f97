//! Extended Events (XE): event sessions, the events the engine fires into them, and their
//! targets.
//!
//! This module owns the server's event sessions: their definitions (CREATE EVENT SESSION, kept
//! in the file `event_sessions` in the instance directory, as SQL Server keeps them in master),
//! which of them run (ALTER EVENT SESSION ... STATE = START), and the firing of events into the
//! running ones. It reproduces what seed 002 reads from an XE session: each
//! `sqlserver.database_file_size_change` (every data or log file growth, automatic or not), and
//! each `sqlos.wait_info_external` (a preemptive wait such as PREEMPTIVE_OS_WRITEFILEGATHER) or
//! `sqlos.wait_info` (any other wait), fired by the code that grew the file or recorded the
//! wait, with the time it really took.
//!
//! Firing costs one atomic load while no running session has the event (invariant 1). When one
//! has, the event's fields are built, each session's predicate is evaluated on them, the
//! session's actions are collected, and the event goes to each of its targets ([`target`]).
//!
//! Invariant 1: `enabled[e]` is the number of running sessions that have event `e`; it changes
//! only under the `running` lock, with the list.
//!
//! Deviations (docs/deviations.md): wait_info and wait_info_external fire when a wait ends
//! (opcode End) only, not when it begins; map keys are this engine's (see [`catalog`]); the
//! event_file target writes text, not XEL (see [`target`]); events reach their targets as they
//! fire, so MAX_DISPATCH_LATENCY and the retention modes are kept and shown but change nothing.

pub mod catalog;
pub mod predicate;
pub mod target;

use crate::clock::Clock;
use crate::error::{SqlError, SqlResult};
use crate::io::{Io, escape_line_field, unescape_line_field};
use catalog::{ActionObject, EVENTS, MapName, TargetObject};
use parking_lot::{Mutex, RwLock};
use predicate::Predicate;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The file the definitions are kept in, in the instance directory.
pub const DEFINITIONS_FILE: &str = "event_sessions";

/// One value of an event's field or action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    U64(u64),
    I64(i64),
    Bool(bool),
    Text(String),
    /// A well-formed XML fragment on one line (xml_deadlock_report's graph).
    Xml(String),
    Map(MapName, u32),
    Ptr(u64),
}

impl FieldValue {
    /// The value as a number, for comparisons (text has none).
    pub fn as_number(&self) -> Option<i128> {
        match self {
            FieldValue::U64(v) | FieldValue::Ptr(v) => Some(i128::from(*v)),
            FieldValue::I64(v) => Some(i128::from(*v)),
            FieldValue::Bool(v) => Some(i128::from(*v)),
            FieldValue::Map(_, key) => Some(i128::from(*key)),
            FieldValue::Text(_) | FieldValue::Xml(_) => None,
        }
    }

    /// `<value>..</value>` and, for a map, `<text>..</text>`, as SQL Server writes them.
    fn xml(&self) -> String {
        match self {
            FieldValue::U64(v) => format!("<value>{v}</value>"),
            FieldValue::I64(v) => format!("<value>{v}</value>"),
            FieldValue::Bool(v) => format!("<value>{v}</value>"),
            FieldValue::Ptr(v) => format!("<value>0x{v:016x}</value>"),
            FieldValue::Text(v) if v.is_empty() => "<value />".to_string(),
            FieldValue::Text(v) => format!("<value>{}</value>", escape_xml(v)),
            FieldValue::Xml(v) => format!("<value>{v}</value>"),
            FieldValue::Map(map, key) => {
                let text = escape_xml(map.text(*key).unwrap_or(""));
                if map.is_flags() {
                    format!("<value>0x{key:08x}</value><text>{text}</text>")
                } else {
                    format!("<value>{key}</value><text>{text}</text>")
                }
            }
        }
    }
}

/// `&`, `<`, `>`, `"`, `'` and line ends escaped for XML text or attributes (an event file
/// keeps one event per line, so no event's text holds a raw line end).
pub fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            other => out.push(other),
        }
    }
    out
}

/// One fired event, with its session's actions.
#[derive(Clone, Debug)]
pub struct EventRecord {
    pub event: usize,
    pub timestamp_utc: chrono::NaiveDateTime,
    pub fields: Vec<FieldValue>,
    pub actions: Vec<(&'static ActionObject, FieldValue)>,
}

impl EventRecord {
    /// The event as XML: `<event name=".." package=".." timestamp="..Z"><data name=".."><value>
    /// ..</value></data>..<action ..>..</action></event>`. The ring buffer's form also names
    /// each value's type, as SQL Server's ring buffer does.
    pub fn to_xml(&self, with_types: bool) -> String {
        let event = &EVENTS[self.event];
        let mut xml = format!(
            "<event name=\"{}\" package=\"{}\" timestamp=\"{}\">",
            event.name,
            event.package,
            self.timestamp_utc.format("%Y-%m-%dT%H:%M:%S%.3fZ")
        );
        for (field, value) in event.fields.iter().zip(&self.fields) {
            xml.push_str(&format!("<data name=\"{}\">", field.name));
            if with_types {
                let (type_name, package) = field.field_type.type_name();
                xml.push_str(&format!("<type name=\"{type_name}\" package=\"{package}\"></type>"));
            }
            xml.push_str(&value.xml());
            xml.push_str("</data>");
        }
        for (action, value) in &self.actions {
            xml.push_str(&format!(
                "<action name=\"{}\" package=\"{}\">",
                action.name, action.package
            ));
            if with_types {
                let (type_name, package) = action.field_type.type_name();
                xml.push_str(&format!("<type name=\"{type_name}\" package=\"{package}\"></type>"));
            }
            xml.push_str(&value.xml());
            xml.push_str("</action>");
        }
        xml.push_str("</event>");
        xml
    }
}

/// One event of a session definition.
#[derive(Clone, Debug)]
pub struct EventDef {
    /// Index in [`EVENTS`].
    pub event: usize,
    pub actions: Vec<&'static ActionObject>,
    pub predicate: Option<Predicate>,
}

/// One target of a session definition, with its SET attributes (names in lower case).
#[derive(Clone, Debug)]
pub struct TargetDef {
    pub target: &'static TargetObject,
    pub settings: Vec<(String, String)>,
}

impl TargetDef {
    pub fn setting(&self, name: &str) -> Option<String> {
        self.settings.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
    }

    fn setting_u64(&self, name: &str, default: u64) -> u64 {
        self.setting(name).and_then(|v| v.trim().parse().ok()).unwrap_or(default)
    }
}

/// The WITH options of a session, as sys.server_event_sessions shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    pub max_memory_kb: u32,
    /// 'S' ALLOW_SINGLE_EVENT_LOSS, 'M' ALLOW_MULTIPLE_EVENT_LOSS, 'N' NO_EVENT_LOSS.
    pub event_retention_mode: char,
    /// 0 = INFINITE.
    pub max_dispatch_latency_s: u32,
    pub max_event_size_kb: u32,
    /// 'G' NONE, 'P' PER_NODE, 'C' PER_CPU.
    pub memory_partition_mode: char,
    pub track_causality: bool,
    pub startup_state: bool,
}

impl Default for SessionOptions {
    fn default() -> SessionOptions {
        SessionOptions {
            max_memory_kb: 4096,
            event_retention_mode: 'S',
            max_dispatch_latency_s: 30,
            max_event_size_kb: 0,
            memory_partition_mode: 'G',
            track_causality: false,
            startup_state: false,
        }
    }
}

impl SessionOptions {
    pub fn event_retention_mode_desc(&self) -> &'static str {
        match self.event_retention_mode {
            'M' => "ALLOW_MULTIPLE_EVENT_LOSS",
            'N' => "NO_EVENT_LOSS",
            _ => "ALLOW_SINGLE_EVENT_LOSS",
        }
    }

    pub fn memory_partition_mode_desc(&self) -> &'static str {
        match self.memory_partition_mode {
            'P' => "PER_NODE",
            'C' => "PER_CPU",
            _ => "NONE",
        }
    }
}

/// An event session's definition.
#[derive(Clone, Debug)]
pub struct SessionDef {
    pub event_session_id: i32,
    pub name: String,
    pub events: Vec<EventDef>,
    pub targets: Vec<TargetDef>,
    pub options: SessionOptions,
}

impl SessionDef {
    /// The object id of target `i` in sys.server_event_session_targets and _fields: the
    /// session's events are numbered from 1, then its targets.
    pub fn target_id(&self, i: usize) -> i32 {
        i32::try_from(self.events.len() + i + 1).unwrap_or(i32::MAX)
    }
}

/// What ALTER EVENT SESSION changes.
#[derive(Clone, Debug)]
pub enum SessionChange {
    AddEvent(EventDef),
    DropEvent(usize),
    AddTarget(TargetDef),
    DropTarget(&'static TargetObject),
    Options(SessionOptions),
}

/// Values of the actions the engine cannot see (the session's SQL text, its database, its
/// client); the T-SQL layer installs one ([`XEvents::set_action_provider`]).
pub trait ActionProvider: Send + Sync {
    fn value(&self, spid: u16, action: &ActionObject) -> Option<FieldValue>;
}

/// One target of a running session, with what sys.dm_xe_session_targets counts of it.
struct RunningTarget {
    state: Mutex<target::TargetState>,
    executions: AtomicU64,
    /// Time spent delivering events to it, as measured around each delivery.
    execution_us: AtomicU64,
    bytes_written: AtomicU64,
}

impl RunningTarget {
    fn new(state: target::TargetState) -> RunningTarget {
        RunningTarget {
            state: Mutex::new(state),
            executions: AtomicU64::new(0),
            execution_us: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    /// The target `previous` ran, state and counts, for a session's new definition (ALTER);
    /// `previous` is left with an empty counter, as the old session is about to go.
    fn taken_over(previous: &RunningTarget) -> RunningTarget {
        let empty = target::TargetState::EventCounter(Default::default());
        let state = std::mem::replace(&mut *previous.state.lock(), empty);
        let count = |counter: &AtomicU64| AtomicU64::new(counter.load(Ordering::Relaxed));
        RunningTarget {
            state: Mutex::new(state),
            executions: count(&previous.executions),
            execution_us: count(&previous.execution_us),
            bytes_written: count(&previous.bytes_written),
        }
    }

    fn deliver(&self, record: &EventRecord) -> u64 {
        let started = std::time::Instant::now();
        let bytes = self.state.lock().deliver(record);
        let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.executions.fetch_add(1, Ordering::Relaxed);
        self.execution_us.fetch_add(elapsed_us, Ordering::Relaxed);
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        bytes
    }
}

/// A running session.
pub struct RunningSession {
    pub def: Arc<SessionDef>,
    /// sys.dm_xe_sessions.address.
    pub address: u64,
    /// When it started (local time).
    pub create_time: chrono::NaiveDateTime,
    targets: Vec<RunningTarget>,
    bytes_generated: AtomicU64,
}

/// One row of sys.dm_xe_session_targets.
#[derive(Clone, Debug)]
pub struct TargetSnapshot {
    pub event_session_address: u64,
    pub target: &'static TargetObject,
    pub execution_count: u64,
    pub execution_duration_ms: u64,
    pub target_data: String,
    pub bytes_written: u64,
}

impl RunningSession {
    pub fn target_snapshots(&self) -> Vec<TargetSnapshot> {
        self.targets
            .iter()
            .map(|target| {
                let state = target.state.lock();
                TargetSnapshot {
                    event_session_address: self.address,
                    target: state.target(),
                    execution_count: target.executions.load(Ordering::Relaxed),
                    execution_duration_ms: target.execution_us.load(Ordering::Relaxed) / 1000,
                    target_data: state.target_data(),
                    bytes_written: target.bytes_written.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    pub fn total_bytes_generated(&self) -> u64 {
        self.bytes_generated.load(Ordering::Relaxed)
    }

    fn deliver(&self, record: &EventRecord) {
        for target in &self.targets {
            let bytes = target.deliver(record);
            self.bytes_generated.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    fn stop(&self) {
        for target in &self.targets {
            target.state.lock().flush();
        }
    }
}

/// The instance's event sessions.
pub struct XEvents {
    io: Arc<dyn Io>,
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    definitions: Mutex<BTreeMap<String, Arc<SessionDef>>>,
    running: RwLock<Vec<Arc<RunningSession>>>,
    /// Invariant 1.
    enabled: [AtomicUsize; EVENTS.len()],
    next_address: AtomicU64,
    provider: OnceLock<Arc<dyn ActionProvider>>,
}

fn key(name: &str) -> String {
    name.to_lowercase()
}

impl XEvents {
    /// The sessions defined in `dir`'s definitions file (none if it does not exist). A line
    /// that no longer parses (an event or action this build does not have) is skipped.
    pub fn load(io: Arc<dyn Io>, dir: &Path, clock: Arc<dyn Clock>) -> XEvents {
        let xe = XEvents {
            io,
            dir: dir.to_path_buf(),
            clock,
            definitions: Mutex::new(BTreeMap::new()),
            running: RwLock::new(Vec::new()),
            enabled: std::array::from_fn(|_| AtomicUsize::new(0)),
            next_address: AtomicU64::new(0x0000_0400_0000_0000),
            provider: OnceLock::new(),
        };
        if let Ok(text) = xe.io.read_to_string(&dir.join(DEFINITIONS_FILE)) {
            let mut definitions = xe.definitions.lock();
            for def in parse_definitions(&text) {
                definitions.insert(key(&def.name), Arc::new(def));
            }
        }
        xe
    }

    pub fn set_action_provider(&self, provider: Arc<dyn ActionProvider>) {
        let _ = self.provider.set(provider);
    }

    /// Starts the sessions whose STARTUP_STATE is ON (at instance startup).
    pub fn start_startup_sessions(&self) -> Vec<SqlError> {
        let names: Vec<String> = self
            .definitions
            .lock()
            .values()
            .filter(|def| def.options.startup_state)
            .map(|def| def.name.clone())
            .collect();
        names.iter().filter_map(|name| self.start(name).err()).collect()
    }

    /// The definitions, by event_session_id.
    pub fn definitions(&self) -> Vec<Arc<SessionDef>> {
        let mut defs: Vec<_> = self.definitions.lock().values().cloned().collect();
        defs.sort_by_key(|def| def.event_session_id);
        defs
    }

    pub fn definition(&self, name: &str) -> Option<Arc<SessionDef>> {
        self.definitions.lock().get(&key(name)).cloned()
    }

    /// The running sessions, in the order they started.
    pub fn running(&self) -> Vec<Arc<RunningSession>> {
        self.running.read().clone()
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.running.read().iter().any(|s| s.def.name.eq_ignore_ascii_case(name))
    }

    /// CREATE EVENT SESSION: 25631 if the name is taken.
    pub fn create(&self, mut def: SessionDef) -> SqlResult<()> {
        let mut definitions = self.definitions.lock();
        if definitions.contains_key(&key(&def.name)) {
            return Err(SqlError::new(
                25631,
                16,
                1,
                format!(
                    "The event session, \"{}\", already exists.  Choose a unique name for the event session.",
                    def.name
                ),
            ));
        }
        def.event_session_id =
            definitions.values().map(|d| d.event_session_id).max().unwrap_or(65535) + 1;
        let name = def.name.clone();
        definitions.insert(key(&def.name), Arc::new(def));
        if let Err(err) = self.save(&definitions) {
            definitions.remove(&key(&name));
            return Err(SqlError::new(
                25602,
                17,
                1,
                format!(
                    "The event session, \"{name}\", encountered a configuration error during initialization. Object cannot be added to the event session. {err}"
                ),
            ));
        }
        Ok(())
    }

    /// DROP EVENT SESSION: stops it first if it runs; 15151 if there is none.
    pub fn drop_session(&self, name: &str) -> SqlResult<()> {
        let mut definitions = self.definitions.lock();
        let Some(def) = definitions.remove(&key(name)) else {
            return Err(not_found("drop", name));
        };
        if let Err(err) = self.save(&definitions) {
            definitions.insert(key(name), def);
            return Err(engine_failed(&err));
        }
        drop(definitions);
        self.stop_running(name);
        Ok(())
    }

    /// ALTER EVENT SESSION ... STATE = START: 25705 if it runs already.
    pub fn start(&self, name: &str) -> SqlResult<()> {
        let def = self.definition(name).ok_or_else(|| not_found("alter", name))?;
        let mut running = self.running.write();
        if running.iter().any(|s| s.def.name.eq_ignore_ascii_case(name)) {
            return Err(SqlError::new(25705, 16, 1, "The event session has already been started."));
        }
        let session = self.open_session(def, None)?;
        self.enable(&session.def, 1);
        running.push(Arc::new(session));
        Ok(())
    }

    /// ALTER EVENT SESSION ... STATE = STOP: 25704 if it is not running.
    pub fn stop(&self, name: &str) -> SqlResult<()> {
        self.definition(name).ok_or_else(|| not_found("alter", name))?;
        if self.stop_running(name) {
            Ok(())
        } else {
            Err(SqlError::new(25704, 16, 1, "The event session has already been stopped."))
        }
    }

    /// ALTER EVENT SESSION's ADD/DROP EVENT, ADD/DROP TARGET and WITH. A running session takes
    /// the new definition at once (its new targets opened before anything is saved); targets
    /// it keeps keep their events.
    pub fn alter(&self, name: &str, changes: Vec<SessionChange>) -> SqlResult<()> {
        let mut definitions = self.definitions.lock();
        let old = definitions.get(&key(name)).cloned().ok_or_else(|| not_found("alter", name))?;
        let mut def = (*old).clone();
        for change in changes {
            apply_change(&mut def, change)?;
        }
        let def = Arc::new(def);
        let mut running = self.running.write();
        let at = running.iter().position(|s| s.def.name.eq_ignore_ascii_case(name));
        let session = match at {
            Some(at) => Some(self.open_session(def.clone(), Some(&running[at]))?),
            None => None,
        };
        definitions.insert(key(name), def);
        if let Err(err) = self.save(&definitions) {
            definitions.insert(key(name), old);
            return Err(engine_failed(&err));
        }
        if let (Some(at), Some(session)) = (at, session) {
            self.enable(&running[at].def, -1);
            self.enable(&session.def, 1);
            running[at] = Arc::new(session);
        }
        Ok(())
    }

    fn stop_running(&self, name: &str) -> bool {
        let mut running = self.running.write();
        let Some(at) = running.iter().position(|s| s.def.name.eq_ignore_ascii_case(name)) else {
            return false;
        };
        let session = running.remove(at);
        self.enable(&session.def, -1);
        drop(running);
        session.stop();
        true
    }

    /// Counts a session's events in or out of `enabled` (invariant 1; the caller holds the
    /// `running` lock).
    fn enable(&self, def: &SessionDef, delta: isize) {
        let mut events: Vec<usize> = def.events.iter().map(|e| e.event).collect();
        events.sort_unstable();
        events.dedup();
        for event in events {
            if delta > 0 {
                self.enabled[event].fetch_add(1, Ordering::Relaxed);
            } else {
                let before = self.enabled[event].fetch_sub(1, Ordering::Relaxed);
                assert!(before > 0, "invariant 1: a session counted in was counted out");
            }
        }
    }

    /// A running session's state for `def`: its targets opened (an event_file's first file
    /// created), or taken over from `previous` where it has the same target.
    fn open_session(
        &self,
        def: Arc<SessionDef>,
        previous: Option<&Arc<RunningSession>>,
    ) -> SqlResult<RunningSession> {
        let now = self.clock.now_utc();
        let mut targets = Vec::new();
        for target_def in &def.targets {
            let kept = previous.and_then(|p| {
                p.def.targets.iter().position(|t| std::ptr::eq(t.target, target_def.target))
            });
            let running = match kept {
                Some(at) => {
                    let previous = previous.expect("kept from a previous session");
                    RunningTarget::taken_over(&previous.targets[at])
                }
                None => {
                    let state = target::TargetState::new(target_def, &self.io, &self.dir, now)
                        .map_err(|err| target_failed(target_def.target, &err))?;
                    RunningTarget::new(state)
                }
            };
            targets.push(running);
        }
        let address = previous
            .map_or_else(|| self.next_address.fetch_add(0x1000, Ordering::Relaxed), |p| p.address);
        Ok(RunningSession {
            def,
            address,
            create_time: previous.map_or_else(|| self.clock.now_local(), |p| p.create_time),
            targets,
            bytes_generated: AtomicU64::new(previous.map_or(0, |p| p.total_bytes_generated())),
        })
    }

    fn save(&self, definitions: &BTreeMap<String, Arc<SessionDef>>) -> std::io::Result<()> {
        let mut defs: Vec<_> = definitions.values().collect();
        defs.sort_by_key(|def| def.event_session_id);
        let text: String = defs.iter().map(|def| render_definition(def)).collect();
        crate::io::replace_file(self.io.as_ref(), &self.dir.join(DEFINITIONS_FILE), text.as_bytes())
    }

    /// Whether any running session has `event` (one atomic load: the firing code's check).
    #[inline]
    pub fn is_enabled(&self, event: usize) -> bool {
        self.enabled[event].load(Ordering::Relaxed) > 0
    }

    /// Fires `event` for session `spid` with the fields `fields` builds (in the event's field
    /// order), called only if a running session has the event.
    pub fn fire(&self, spid: u16, event: usize, fields: impl FnOnce() -> Vec<FieldValue>) {
        if !self.is_enabled(event) {
            return;
        }
        self.fire_enabled(spid, event, fields());
    }

    fn fire_enabled(&self, spid: u16, event: usize, fields: Vec<FieldValue>) {
        debug_assert_eq!(fields.len(), EVENTS[event].fields.len());
        let sessions = self.running();
        let timestamp_utc = self.clock.now_utc();
        for session in sessions {
            for event_def in session.def.events.iter().filter(|e| e.event == event) {
                let values = Firing { fields: &fields, spid, xe: self };
                if event_def.predicate.as_ref().is_some_and(|p| !p.holds(&values)) {
                    continue;
                }
                let actions = event_def
                    .actions
                    .iter()
                    .filter_map(|action| self.action_value(spid, action).map(|v| (*action, v)))
                    .collect();
                let record = EventRecord { event, timestamp_utc, fields: fields.clone(), actions };
                session.deliver(&record);
            }
        }
    }

    fn action_value(&self, spid: u16, action: &ActionObject) -> Option<FieldValue> {
        match (action.package, action.name) {
            ("sqlserver", "session_id") => Some(FieldValue::U64(u64::from(spid))),
            ("package0", "collect_system_time") => Some(FieldValue::Text(
                self.clock.now_utc().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            )),
            _ => self.provider.get().and_then(|p| p.value(spid, action)),
        }
    }

    /// A wait that ended (recorded in the wait statistics): wait_info_external for a
    /// preemptive wait, wait_info for any other.
    pub fn wait_completed(
        &self,
        spid: u16,
        wait_type: &str,
        waited: std::time::Duration,
        signal: std::time::Duration,
    ) {
        let external = wait_type.starts_with("PREEMPTIVE_");
        let event = if external { catalog::WAIT_INFO_EXTERNAL } else { catalog::WAIT_INFO };
        if !self.is_enabled(event) {
            return;
        }
        let key = MapName::WaitTypes.key(wait_type).unwrap_or(u32::MAX);
        let duration_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        let signal_ms = u64::try_from(signal.as_millis()).unwrap_or(u64::MAX);
        self.fire(spid, event, || {
            let mut fields = vec![
                FieldValue::Map(MapName::WaitTypes, key),
                FieldValue::Map(MapName::EventOpcode, 1),
                FieldValue::U64(duration_ms),
            ];
            if !external {
                fields.push(FieldValue::U64(signal_ms));
            }
            fields.push(FieldValue::Ptr(0));
            fields
        });
    }

    /// A data or log file changed size (database_file_size_change).
    pub fn file_size_changed(&self, change: &crate::database::FileSizeChange) {
        self.fire(crate::instance::current_spid(), catalog::DATABASE_FILE_SIZE_CHANGE, || {
            vec![
                FieldValue::U64(change.duration_us),
                FieldValue::U64(u64::from(change.database_id)),
                FieldValue::U64(u64::from(change.file_id)),
                FieldValue::Map(MapName::DatabaseFileType, u32::from(change.file_type == "log")),
                FieldValue::Bool(change.is_automatic),
                FieldValue::U64(u64::try_from(change.total_size_kb).unwrap_or(0)),
                FieldValue::I64(change.size_change_kb),
                FieldValue::Text(change.file_name.clone()),
                FieldValue::Text(change.database_name.clone()),
            ]
        });
    }

    /// A deadlock was resolved (xml_deadlock_report), on the thread that found it.
    pub fn deadlock_found(&self, report: &crate::lock::DeadlockReport) {
        self.fire(crate::instance::current_spid(), catalog::XML_DEADLOCK_REPORT, || {
            vec![FieldValue::Xml(deadlock_graph(report))]
        });
    }

    /// The directory relative event file names are in (the errorlog's).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// sys.fn_xe_file_target_read_file(path, mdpath, initial_file_name, initial_offset): the
    /// events of every file `pattern` matches (`*` and `?` in its file name; relative to the
    /// errorlog's directory), in file-name order; from `initial` on, if given (the event at
    /// that file and offset and those before it are skipped, as in SQL Server).
    pub fn read_files(
        &self,
        pattern: &str,
        initial: Option<(&str, i64)>,
    ) -> SqlResult<Vec<FileEvent>> {
        let full = {
            let path = Path::new(pattern);
            if path.is_absolute() { path.to_path_buf() } else { self.dir.join(path) }
        };
        let dir = full.parent().map(Path::to_path_buf).unwrap_or_else(|| self.dir.clone());
        let name_pattern =
            full.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut files: Vec<PathBuf> = self
            .io
            .list_dir(&dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    wildcard(&name_pattern.to_lowercase(), &n.to_string_lossy().to_lowercase())
                })
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(SqlError::new(
                25718,
                16,
                1,
                format!(
                    "The log file name \"{pattern}\" is invalid.  Verify that the file exists and that the SQL Server service account has access to it."
                ),
            ));
        }
        let mut events = Vec::new();
        for file in files {
            events.extend(self.read_file(&file)?);
        }
        let Some((initial_file, initial_offset)) = initial else {
            return Ok(events);
        };
        let same_file = |event: &FileEvent| {
            event.file_name.eq_ignore_ascii_case(initial_file)
                || event.file_name.ends_with(initial_file)
        };
        let Some(at) = events.iter().position(|e| same_file(e) && e.file_offset >= initial_offset)
        else {
            return Err(SqlError::new(
                25722,
                16,
                1,
                format!(
                    "The offset {initial_offset} is invalid for log file \"{initial_file}\". Specify an offset that exists in the log file and retry your query."
                ),
            ));
        };
        Ok(events.split_off(at + 1))
    }

    /// The events of one event file, with their offsets.
    fn read_file(&self, file: &Path) -> SqlResult<Vec<FileEvent>> {
        let name = file.display().to_string();
        let text = self.io.read_to_string(file).map_err(|err| {
            SqlError::new(25717, 16, 1, format!("The operating system returned error {err} while reading from the file '{name}'."))
        })?;
        let mut events = Vec::new();
        let mut offset = 0i64;
        for line in text.split_inclusive('\n') {
            let at = offset;
            offset += line.len() as i64;
            let line = line.trim_end_matches('\n');
            if line.is_empty() || line == target::EVENT_FILE_HEADER {
                continue;
            }
            if let Some(event) = FileEvent::parse(line, &name, at) {
                events.push(event);
            }
        }
        Ok(events)
    }
}

/// A deadlock as SQL Server's deadlock graph: the victim, each process in the cycle (its
/// session, priority, log used, transaction and the resource it waits for), and each
/// resource with its waiter and its owner (the next process of the cycle, which holds it).
/// Deviation: no execution stacks, input buffers, or object and index names (the engine
/// knows a lock by its allocation unit).
pub fn deadlock_graph(report: &crate::lock::DeadlockReport) -> String {
    use crate::lock::LockResource;
    let mut xml = format!(
        "<deadlock><victim-list><victimProcess id=\"process{}\" /></victim-list><process-list>",
        report.victim_spid
    );
    for ((spid, xact_id, resource, mode), (priority, log_used)) in
        report.nodes.iter().zip(&report.priorities_and_costs)
    {
        let database_id = match resource {
            LockResource::Object { database_id, .. } | LockResource::Key { database_id, .. } => {
                database_id
            }
        };
        xml.push_str(&format!(
            "<process id=\"process{spid}\" taskpriority=\"{priority}\" logused=\"{log_used}\" \
             waitresource=\"{}\" lockMode=\"{}\" status=\"suspended\" spid=\"{spid}\" \
             priority=\"{priority}\" xactid=\"{xact_id}\" currentdb=\"{database_id}\" />",
            escape_xml(&resource.wait_resource()),
            mode.name()
        ));
    }
    xml.push_str("</process-list><resource-list>");
    let count = report.nodes.len();
    for (i, (spid, _, resource, mode)) in report.nodes.iter().enumerate() {
        let (owner_spid, _, _, _) = report.nodes[(i + 1) % count];
        let (element, attributes) = match resource {
            LockResource::Key { database_id, au_id, .. } => (
                "keylock",
                format!("hobtid=\"{au_id}\" dbid=\"{database_id}\" associatedObjectId=\"{au_id}\""),
            ),
            LockResource::Object { database_id, au_id } => (
                "objectlock",
                format!(
                    "lockPartition=\"0\" objid=\"{au_id}\" subresource=\"FULL\" dbid=\"{database_id}\" associatedObjectId=\"{au_id}\""
                ),
            ),
        };
        xml.push_str(&format!(
            "<{element} {attributes}><owner-list><owner id=\"process{owner_spid}\" /></owner-list>\
             <waiter-list><waiter id=\"process{spid}\" mode=\"{}\" requestType=\"wait\" /></waiter-list></{element}>",
            mode.name()
        ));
    }
    xml.push_str("</resource-list></deadlock>");
    xml
}

/// One row of sys.fn_xe_file_target_read_file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileEvent {
    pub package_guid: &'static str,
    pub object_name: String,
    pub event_data: String,
    pub file_name: String,
    pub file_offset: i64,
    pub timestamp_utc: Option<chrono::NaiveDateTime>,
}

impl FileEvent {
    fn parse(line: &str, file_name: &str, offset: i64) -> Option<FileEvent> {
        let name = attribute(line, "name")?;
        let package = attribute(line, "package")?;
        let timestamp = attribute(line, "timestamp").and_then(|t| {
            chrono::NaiveDateTime::parse_from_str(t.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
        });
        Some(FileEvent {
            package_guid: catalog::package(&package)
                .map_or("00000000-0000-0000-0000-000000000000", |p| p.guid),
            object_name: name,
            event_data: line.to_string(),
            file_name: file_name.to_string(),
            file_offset: offset,
            timestamp_utc: timestamp,
        })
    }
}

/// The value of the first `name="..."` attribute in `xml`.
fn attribute(xml: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = xml.find(&marker)? + marker.len();
    let end = xml[start..].find('"')? + start;
    Some(xml[start..end].to_string())
}

/// `*` and `?` wildcards (both sides already lower case).
fn wildcard(pattern: &str, name: &str) -> bool {
    wildcard_match(pattern, name, '*', '?')
}

/// Whether `text` matches `pattern`, in which `many` stands for any run of characters and `one`
/// for any one character (`*` and `?` in a file pattern, `%` and `_` in a predicate's LIKE).
fn wildcard_match(pattern: &str, text: &str, many: char, one: char) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    matches_from(&pattern, &text, many, one)
}

fn matches_from(pattern: &[char], text: &[char], many: char, one: char) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((&c, rest)) if c == many => {
            (0..=text.len()).any(|skip| matches_from(rest, &text[skip..], many, one))
        }
        Some((&c, rest)) if c == one => {
            !text.is_empty() && matches_from(rest, &text[1..], many, one)
        }
        Some((c, rest)) => text.first() == Some(c) && matches_from(rest, &text[1..], many, one),
    }
}

struct Firing<'a> {
    fields: &'a [FieldValue],
    spid: u16,
    xe: &'a XEvents,
}

impl predicate::Values for Firing<'_> {
    fn field(&self, index: usize) -> Option<&FieldValue> {
        self.fields.get(index)
    }

    fn global(&self, action: &ActionObject) -> Option<FieldValue> {
        self.xe.action_value(self.spid, action)
    }
}

/// 25602: a target could not start (an event file that could not be created).
fn target_failed(target: &TargetObject, err: &std::io::Error) -> SqlError {
    SqlError::new(
        25602,
        17,
        1,
        format!(
            "The target, \"{}.{}\", encountered a configuration error during initialization.  \
             Object cannot be added to the event session. {err}",
            catalog::MODULE_GUID,
            target.name
        ),
    )
}

/// 25699: the definitions could not be saved (the change is undone).
fn engine_failed(err: &std::io::Error) -> SqlError {
    SqlError::new(
        25699,
        17,
        1,
        format!(
            "The Extended Event engine failed unexpectedly while performing an operation. {err}"
        ),
    )
}

/// 15151: no session of that name.
fn not_found(verb: &str, name: &str) -> SqlError {
    SqlError::new(
        15151,
        16,
        1,
        format!(
            "Cannot {verb} the event session '{name}', because it does not exist or you do not have permission."
        ),
    )
}

fn apply_change(def: &mut SessionDef, change: SessionChange) -> SqlResult<()> {
    match change {
        SessionChange::AddEvent(event) => {
            if def.events.iter().any(|e| e.event == event.event) {
                let object = &EVENTS[event.event];
                return Err(SqlError::new(
                    25625,
                    16,
                    1,
                    format!(
                        "The event, \"{}.{}\", already exists in the event session. Object cannot be added to the event session.",
                        object.package, object.name
                    ),
                ));
            }
            def.events.push(event);
        }
        SessionChange::DropEvent(event) => {
            let before = def.events.len();
            def.events.retain(|e| e.event != event);
            if def.events.len() == before {
                let object = &EVENTS[event];
                return Err(SqlError::new(
                    25653,
                    16,
                    1,
                    format!(
                        "The event, \"{}.{}\", does not exist in the event session. Object cannot be dropped from the event session.",
                        object.package, object.name
                    ),
                ));
            }
        }
        SessionChange::AddTarget(target) => {
            if def.targets.iter().any(|t| std::ptr::eq(t.target, target.target)) {
                return Err(SqlError::new(
                    25625,
                    16,
                    1,
                    format!(
                        "The target, \"package0.{}\", already exists in the event session. Object cannot be added to the event session.",
                        target.target.name
                    ),
                ));
            }
            def.targets.push(target);
        }
        SessionChange::DropTarget(target) => {
            let before = def.targets.len();
            def.targets.retain(|t| !std::ptr::eq(t.target, target));
            if def.targets.len() == before {
                return Err(SqlError::new(
                    25653,
                    16,
                    1,
                    format!(
                        "The target, \"package0.{}\", does not exist in the event session. Object cannot be dropped from the event session.",
                        target.name
                    ),
                ));
            }
        }
        SessionChange::Options(options) => def.options = options,
    }
    Ok(())
}

/// A definition as lines of the definitions file (docs/format/xel.md):
/// `session`, then an `event` line per event and a `target` line per target.
fn render_definition(def: &SessionDef) -> String {
    let o = &def.options;
    let mut text = format!(
        "session\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        def.event_session_id,
        escape_line_field(&def.name),
        o.max_memory_kb,
        o.event_retention_mode,
        o.max_dispatch_latency_s,
        o.max_event_size_kb,
        o.memory_partition_mode,
        u8::from(o.track_causality),
        u8::from(o.startup_state)
    );
    for event in &def.events {
        let object = &EVENTS[event.event];
        let actions: Vec<String> =
            event.actions.iter().map(|a| format!("{}.{}", a.package, a.name)).collect();
        let predicate = event.predicate.as_ref().map(|p| p.render(object)).unwrap_or_default();
        text.push_str(&format!(
            "event\t{}\t{}\t{}\t{}\n",
            object.package,
            object.name,
            actions.join(","),
            escape_line_field(&predicate)
        ));
    }
    for target in &def.targets {
        text.push_str(&format!("target\tpackage0\t{}", target.target.name));
        for (name, value) in &target.settings {
            text.push_str(&format!("\t{}={}", escape_line_field(name), escape_line_field(value)));
        }
        text.push('\n');
    }
    text
}

fn parse_definitions(text: &str) -> Vec<SessionDef> {
    let mut defs: Vec<SessionDef> = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.first().copied() {
            Some("session") if fields.len() == 10 => {
                let number = |i: usize| fields[i].parse::<u32>().unwrap_or(0);
                let flag = |i: usize| fields[i] == "1";
                let mode = |i: usize, default: char| fields[i].chars().next().unwrap_or(default);
                defs.push(SessionDef {
                    event_session_id: fields[1].parse().unwrap_or(65536),
                    name: unescape_line_field(fields[2]),
                    events: Vec::new(),
                    targets: Vec::new(),
                    options: SessionOptions {
                        max_memory_kb: number(3),
                        event_retention_mode: mode(4, 'S'),
                        max_dispatch_latency_s: number(5),
                        max_event_size_kb: number(6),
                        memory_partition_mode: mode(7, 'G'),
                        track_causality: flag(8),
                        startup_state: flag(9),
                    },
                });
            }
            Some("event") if fields.len() == 5 => {
                let Some(def) = defs.last_mut() else { continue };
                let Some(event) = catalog::event_index(Some(fields[1]), fields[2]) else {
                    continue;
                };
                let actions = fields[3]
                    .split(',')
                    .filter(|a| !a.is_empty())
                    .filter_map(|a| {
                        a.split_once('.').and_then(|(p, n)| catalog::action(Some(p), n))
                    })
                    .collect();
                let predicate_text = unescape_line_field(fields[4]);
                let predicate = if predicate_text.is_empty() {
                    None
                } else {
                    Predicate::parse(&EVENTS[event], &predicate_text).ok()
                };
                def.events.push(EventDef { event, actions, predicate });
            }
            Some("target") if fields.len() >= 3 => {
                let Some(def) = defs.last_mut() else { continue };
                let Some(target) = catalog::target(fields[2]) else { continue };
                let settings = fields[3..]
                    .iter()
                    .filter_map(|s| s.split_once('='))
                    .map(|(n, v)| (unescape_line_field(n), unescape_line_field(v)))
                    .collect();
                def.targets.push(TargetDef { target, settings });
            }
            _ => {}
        }
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_in_a_file_pattern() {
        assert!(wildcard("ifi_log*.xel", "ifi_log_0_133000000000000000.xel"));
        assert!(wildcard("a?c", "abc"));
        assert!(!wildcard("ifi*.xel", "ifi_0_1.trc"));
    }

    #[test]
    fn a_definition_reads_back_as_it_was_written() {
        let event = catalog::event_index(Some("sqlos"), "wait_info").unwrap();
        let def = SessionDef {
            event_session_id: 65536,
            name: "tab\tname".into(),
            events: vec![EventDef {
                event,
                actions: vec![catalog::action(Some("sqlserver"), "sql_text").unwrap()],
                predicate: Some(
                    Predicate::parse(&EVENTS[event], "duration > 5 AND [wait_type] = N'WRITELOG'")
                        .unwrap(),
                ),
            }],
            targets: vec![TargetDef {
                target: catalog::target("event_file").unwrap(),
                settings: vec![("filename".into(), "a\tb.xel".into())],
            }],
            options: SessionOptions {
                startup_state: true,
                max_memory_kb: 8192,
                ..SessionOptions::default()
            },
        };
        let back = parse_definitions(&render_definition(&def));
        assert_eq!(back.len(), 1);
        let back = &back[0];
        assert_eq!((back.event_session_id, back.name.as_str()), (65536, "tab\tname"));
        assert_eq!(back.options, def.options);
        assert_eq!(back.events[0].predicate, def.events[0].predicate);
        assert_eq!(back.events[0].actions, def.events[0].actions);
        assert_eq!(back.targets[0].settings, def.targets[0].settings);
    }

    #[test]
    fn an_event_renders_as_sql_servers_event_xml() {
        let record = EventRecord {
            event: catalog::DATABASE_FILE_SIZE_CHANGE,
            timestamp_utc: chrono::NaiveDate::from_ymd_opt(2023, 5, 15)
                .unwrap()
                .and_hms_milli_opt(10, 30, 23, 5)
                .unwrap(),
            fields: vec![
                FieldValue::U64(3000),
                FieldValue::U64(5),
                FieldValue::U64(2),
                FieldValue::Map(MapName::DatabaseFileType, 1),
                FieldValue::Bool(true),
                FieldValue::U64(98304),
                FieldValue::I64(65536),
                FieldValue::Text("ifi_log".into()),
                FieldValue::Text("a<b".into()),
            ],
            actions: vec![(
                catalog::action(Some("sqlserver"), "session_id").unwrap(),
                FieldValue::U64(53),
            )],
        };
        let xml = record.to_xml(false);
        assert!(xml.starts_with("<event name=\"database_file_size_change\" package=\"sqlserver\" timestamp=\"2023-05-15T10:30:23.005Z\">"));
        assert!(
            xml.contains("<data name=\"file_type\"><value>1</value><text>Log file</text></data>")
        );
        assert!(xml.contains("<data name=\"is_automatic\"><value>true</value></data>"));
        assert!(xml.contains("<data name=\"database_name\"><value>a&lt;b</value></data>"));
        assert!(xml.ends_with(
            "<action name=\"session_id\" package=\"sqlserver\"><value>53</value></action></event>"
        ));
        assert!(
            record
                .to_xml(true)
                .contains("<type name=\"int64\" package=\"package0\"></type><value>65536</value>")
        );
    }
}
