//! The embedded server: an instance with its databases, and the sessions that run T-SQL on it.
//!
//! A data directory holds the instance (errorlog) and the databases. `master` is created in it
//! on first start; every database is listed in the registry file `databases` (one
//! `name<TAB>primary file path<TAB>database_id` per line, rewritten whole and renamed into
//! place through the engine's I/O seam: `engine::io::replace_file`), so that a restart opens
//! them all (SQL Server keeps this list in master's sys.databases; deviation). The registry's
//! write is what makes a CREATE or DROP DATABASE, or a SET OFFLINE or ONLINE, take effect: a
//! CREATE whose write fails is undone, files and all; a DROP whose write fails leaves the
//! database open and whole (its files go only once the registry no longer names it); a SET
//! OFFLINE or ONLINE whose write fails leaves the database open or closed, as it was.
//!
//! A database other than master that fails to open at startup (a damaged boot page or IAM
//! chain) is SUSPECT, as in SQL Server: its error and 3414 go to the errorlog, the instance
//! starts without it, USE gives error 926, sys.databases lists it with state 4 and the id the
//! registry kept for it (no new database takes that id), and DROP DATABASE removes its entry
//! (deviations: its files are kept; its options are NULL in sys.databases, since they live in
//! its own files).
//!
//! Output follows the TDS model that the server issue will send: result sets, informational
//! messages (PRINT, severity <= 10 RAISERROR), row counts ("(n rows affected)") and errors with
//! their number, level, state and line.

use crate::value::Result;
use engine::SqlError;
use engine::database::{Database, DatabaseSpec};
use engine::instance::{Instance, InstanceConfig};
use engine::io::{escape_line_field, unescape_line_field};
use engine::record::{SqlType, Value};
use engine::units::SizeSpec;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The registry of databases in a data directory.
const REGISTRY: &str = "databases";

/// A result set: column names and rows.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Each column's declared type where the query names one (empty or None: unknown; the
    /// TDS layer then takes the type from the values). Not sent back by the TDS client.
    pub types: Vec<Option<SqlType>>,
}

/// What a batch sends back, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Rows(ResultSet),
    /// PRINT, RAISERROR with severity 10 or less, and other informational messages.
    Message(String),
    /// "(n rows affected)" (not sent under SET NOCOUNT ON).
    RowCount(u64),
    /// An error, with the line of the batch it happened on.
    Error {
        error: SqlError,
        line: u64,
        /// The procedure it was raised in, if any.
        procedure: Option<String>,
    },
}

/// What sys.dm_exec_sessions and sys.dm_exec_requests show of a session: kept up to date by
/// the session as its batches start and end. Times are monotonic instants, shown as datetimes
/// of the instance's clock ([`Server::datetime_of`]) when a view reads them, so that a batch
/// does not read the wall clock twice.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub login_time: std::time::Instant,
    /// The client's host name, as its login sends it (None for an embedded session, which
    /// has no client of its own; the TDS server fills it from LOGIN7).
    pub host_name: Option<String>,
    pub program_name: String,
    /// The login the session authenticated as (sa for an embedded session).
    pub login_name: String,
    /// Its TDS connection (None for an embedded session): sys.dm_exec_connections.
    pub connection: Option<Arc<Connection>>,
    pub database_id: u16,
    /// The running batch: when it started (monotonic and as a datetime) and its command.
    pub request: Option<RunningRequest>,
    pub last_request_start_time: std::time::Instant,
    pub last_request_end_time: std::time::Instant,
    pub open_transaction_count: i32,
    /// The text of the running or last batch (DBCC INPUTBUFFER).
    pub last_batch: Arc<str>,
    /// What its finished requests used: CPU (their threads' own account), elapsed time, pages
    /// fetched from the buffer pool and pages read from disk (sys.dm_exec_sessions, updated
    /// as each request ends, as SQL Server updates it).
    pub used: RequestUse,
    /// @@ROWCOUNT and @@ERROR as its last request left them (sys.dm_exec_sessions' row_count
    /// and prev_error).
    pub row_count: u64,
    pub prev_error: i32,
    /// SET LOCK_TIMEOUT and SET DEADLOCK_PRIORITY as the session last set them.
    pub lock_timeout_ms: i32,
    pub deadlock_priority: i8,
    /// SET TRANSACTION ISOLATION LEVEL (1 READ UNCOMMITTED ... 5 SNAPSHOT).
    pub transaction_isolation_level: i16,
    /// What another session's KILL reaches it by.
    pub control: Arc<SessionControl>,
}

impl SessionInfo {
    /// The running request's command as sys.dm_exec_requests and sp_who show it:
    /// KILLED/ROLLBACK once the session is killed.
    pub fn command(&self) -> Option<String> {
        let request = self.request.as_ref()?;
        Some(if self.control.is_killed() {
            "KILLED/ROLLBACK".to_string()
        } else {
            request.command.clone()
        })
    }
}

/// A session's TDS connection, as sys.dm_exec_connections shows it: what its LOGIN7 and its
/// socket said when it connected, and the packets it has read and written since.
#[derive(Debug)]
pub struct Connection {
    pub connect_time: std::time::Instant,
    pub facts: ConnectionFacts,
    packets_read: std::sync::atomic::AtomicU64,
    packets_written: std::sync::atomic::AtomicU64,
    /// Microseconds from connect_time to the last read and write.
    last_read_us: std::sync::atomic::AtomicU64,
    last_write_us: std::sync::atomic::AtomicU64,
}

/// A connection's fixed facts, from its socket and its LOGIN7.
#[derive(Clone, Debug)]
pub struct ConnectionFacts {
    pub client_address: std::net::SocketAddr,
    pub local_address: std::net::SocketAddr,
    /// TLS for the whole connection (not only for the login).
    pub encrypted: bool,
    pub packet_size: u32,
    /// LOGIN7's TDS version (protocol_version).
    pub protocol_version: u32,
    pub connection_id: [u8; 16],
    /// LOGIN7's client process id and library name.
    pub host_process_id: u32,
    pub client_interface_name: String,
}

impl Connection {
    /// A connection that connected at `connect_time`.
    pub fn new(facts: ConnectionFacts, connect_time: std::time::Instant) -> Connection {
        Connection {
            connect_time,
            facts,
            packets_read: Default::default(),
            packets_written: Default::default(),
            last_read_us: Default::default(),
            last_write_us: Default::default(),
        }
    }

    /// `packets` more were read (a request), or written (`written`: a reply).
    pub fn count_packets(&self, packets: u64, written: bool) {
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        let since = u64::try_from(self.connect_time.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (count, last) = if written {
            (&self.packets_written, &self.last_write_us)
        } else {
            (&self.packets_read, &self.last_read_us)
        };
        count.fetch_add(packets, relaxed);
        last.store(since, relaxed);
    }

    /// (packets read, packets written).
    pub fn packets(&self) -> (u64, u64) {
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        (self.packets_read.load(relaxed), self.packets_written.load(relaxed))
    }

    /// When the last packet was read and written (the connect time until then).
    pub fn last_read_and_write(&self) -> (std::time::Instant, std::time::Instant) {
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        let at = |us: &std::sync::atomic::AtomicU64| {
            self.connect_time + std::time::Duration::from_micros(us.load(relaxed))
        };
        (at(&self.last_read_us), at(&self.last_write_us))
    }
}

/// How a session is stopped from outside: its cancel flag (a client's ATTENTION, which ends
/// the running batch, a lock wait included) and KILL, which sets that flag, marks the session
/// killed (its batch ends with 596 and its transaction is rolled back) and ends its
/// connection (the TDS server's hook shuts the socket's reading side, so an idle connection's
/// read ends and the session is dropped, rolling its transaction back).
#[derive(Default)]
pub struct SessionControl {
    pub cancel: Arc<std::sync::atomic::AtomicBool>,
    killed: std::sync::atomic::AtomicBool,
    disconnect: parking_lot::Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for SessionControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionControl").field("killed", &self.is_killed()).finish()
    }
}

impl SessionControl {
    /// KILL: the session stops at its next check (between statements, in row loops and
    /// waits) and its connection is ended.
    pub fn kill(&self) {
        self.killed.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(disconnect) = self.disconnect.lock().as_ref() {
            disconnect();
        }
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a connection ends with the session (KILL then ends it at once).
    pub fn has_connection(&self) -> bool {
        self.disconnect.lock().is_some()
    }

    /// What ends the session's connection (the TDS server's: a shutdown of its socket).
    pub fn on_kill(&self, disconnect: Box<dyn Fn() + Send + Sync>) {
        *self.disconnect.lock() = Some(disconnect);
    }
}

/// CPU, time and page reads, of a request or summed over a session's requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestUse {
    pub cpu_time_ns: u64,
    pub elapsed_ns: u64,
    pub logical_reads: u64,
    pub reads: u64,
}

impl RequestUse {
    pub fn add(&mut self, other: RequestUse) {
        self.cpu_time_ns += other.cpu_time_ns;
        self.elapsed_ns += other.elapsed_ns;
        self.logical_reads += other.logical_reads;
        self.reads += other.reads;
    }
}

/// A batch that is running now.
#[derive(Clone, Debug)]
pub struct RunningRequest {
    pub started: std::time::Instant,
    /// The thread that runs it, and that thread's CPU time when it started
    /// (sys.dm_exec_requests.cpu_time reads the thread's account as it grows).
    pub thread_id: i32,
    pub cpu_start_ns: u64,
    /// The thread's page-read totals when it started.
    pub reads_start: engine::iostats::ReadTotals,
    /// The batch's first keyword, upper case (SELECT, INSERT, DBCC, ...).
    pub command: String,
}

/// An instance and its open databases.
pub struct Server {
    /// The sessions that are connected, by session id.
    pub sessions: parking_lot::Mutex<BTreeMap<u16, SessionInfo>>,
    pub instance: Arc<Instance>,
    databases: RwLock<BTreeMap<String, Arc<Database>>>,
    /// Registered databases that are not open, by key: SUSPECT ones, which failed to open (a
    /// damaged IAM chain or boot page...; SQL Server marks such a database SUSPECT and starts
    /// without it), and OFFLINE ones (ALTER DATABASE ... SET OFFLINE). Kept in the registry:
    /// a restart tries a SUSPECT one again and leaves an OFFLINE one closed.
    closed: RwLock<BTreeMap<String, ClosedDatabase>>,
    /// Databases shut down because their log stopped (a failed log write or flush: 9001), by
    /// key. Each restarts, its recovery deciding what was durable, once no session holds it
    /// ([`Server::restart_databases_whose_log_failed`]).
    /// Lock order: `shut_down` before `databases` before `closed`.
    shut_down: parking_lot::Mutex<BTreeMap<String, Arc<Database>>>,
    /// Parsed batches by their text (the ad hoc plan cache's role).
    pub batch_cache: crate::cache::BatchCache,
    /// Whether shutting down releases the instance's data directory lock: not for a server
    /// attached to an instance its caller goes on using ([`Server::attach`]).
    releases_data_directory: bool,
}

/// What [`Server::take_unused`] found.
enum Taken {
    /// The database, off the list, for the caller alone.
    Alone(Box<Database>),
    /// A session holds it: it stays open.
    InUse,
    NotOpen,
}

/// A registered database that is not open: SUSPECT or OFFLINE.
#[derive(Clone, Debug)]
pub struct ClosedDatabase {
    pub name: String,
    /// The path of its primary data file.
    pub path: PathBuf,
    /// Its database_id, as the registry recorded it (None in a registry written before ids
    /// were recorded).
    pub database_id: Option<u16>,
    pub state: ClosedState,
}

/// Why a registered database is not open (sys.databases' state and state_desc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedState {
    /// It did not open: recovery or its files failed.
    Suspect,
    /// ALTER DATABASE ... SET OFFLINE closed it.
    Offline,
}

impl ClosedDatabase {
    /// The error of a USE of it: 926 (SUSPECT) or 942 (OFFLINE).
    fn cannot_open(&self) -> SqlError {
        let name = &self.name;
        match self.state {
            ClosedState::Suspect => SqlError::new(
                926,
                14,
                1,
                format!(
                    "Database '{name}' cannot be opened. It has been marked SUSPECT by recovery. \
                     See the SQL Server errorlog for more information."
                ),
            ),
            ClosedState::Offline => SqlError::new(
                942,
                14,
                4,
                format!("Database '{name}' cannot be opened because it is offline."),
            ),
        }
    }
}

impl ClosedState {
    /// sys.databases.state.
    pub fn number(self) -> u8 {
        match self {
            ClosedState::Suspect => 4,
            ClosedState::Offline => 6,
        }
    }

    /// sys.databases.state_desc, and DATABASEPROPERTYEX(name, 'Status').
    pub fn desc(self) -> &'static str {
        match self {
            ClosedState::Suspect => "SUSPECT",
            ClosedState::Offline => "OFFLINE",
        }
    }
}

/// One line of the database registry: a database's name, its primary file's path, its id and
/// whether it was set OFFLINE.
struct RegistryEntry {
    name: String,
    path: PathBuf,
    database_id: Option<u16>,
    offline: bool,
}

fn key(name: &str) -> String {
    name.to_lowercase()
}

/// Error 3414, which follows a database's recovery error in the errorlog when the database is
/// marked SUSPECT (text of SQL Server's documentation of MSSQLSERVER_3414).
fn recovery_gave_up(name: &str, database_id: u16) -> SqlError {
    SqlError::new(
        3414,
        21,
        1,
        format!(
            "An error occurred during recovery, preventing the database '{name}' (database ID \
             {database_id}) from restarting. Diagnose the recovery errors and fix them, or \
             restore from a known good backup. If errors are not corrected or expected, contact \
             Technical Support."
        ),
    )
}

/// 5011: ALTER DATABASE of a database that does not exist.
pub(crate) fn cannot_alter(name: &str) -> SqlError {
    SqlError::new(
        5011,
        14,
        5,
        format!(
            "User does not have permission to alter database '{name}', the database does not \
             exist, or the database is not in a state that allows access checks."
        ),
    )
}

/// 4060: the database a login asks for (TDS LOGIN7's database, sqlcmd's -d) is not there or
/// not open; the login fails.
pub fn login_database_unavailable(name: &str) -> SqlError {
    SqlError::new(
        4060,
        11,
        1,
        format!("Cannot open database \"{name}\" requested by the login. The login failed."),
    )
}

/// 5070: SET OFFLINE while sessions use the database (SQL Server follows it with 5069, which
/// the session adds).
fn database_in_use(name: &str) -> SqlError {
    SqlError::new(
        5070,
        16,
        1,
        format!(
            "Database state cannot be changed while other users are using the database '{name}'"
        ),
    )
}

/// A database's name and primary file as the registry writes them: tab-separated fields on one
/// line, so a backslash, tab, line feed or carriage return in either is escaped (`\\`, `\t`,
/// `\n`, `\r`). A delimited name may hold any of them (`CREATE DATABASE [a<TAB>b]`); unescaped,
/// such a database named no file at the next start.
fn registry_fields(name: &str, path: &Path) -> (String, String) {
    (escape_line_field(name), escape_line_field(&path.display().to_string()))
}

/// An operating system error of the instance's own files (its directory, the database
/// registry) as 5123: what was being done, on which path, and the error as SQL Server prints
/// one ("operating system error 13(Permission denied)").
fn io_error(context: &str, path: &std::path::Path, error: std::io::Error) -> SqlError {
    let os_error = match error.raw_os_error() {
        Some(number) => {
            format!("operating system error {number}({})", engine::error::os_error_text(&error))
        }
        None => error.to_string(),
    };
    SqlError::new(5123, 16, 1, format!("{context} \"{}\": {os_error}", path.display()))
}

impl Server {
    /// Starts the instance in `config.dir`, opens every registered database and creates
    /// `master` if there is none.
    pub fn start(config: InstanceConfig) -> Result<Arc<Server>> {
        // The instance checks the directory's path, then makes it (nothing for a path it refuses).
        let dir = config.dir.clone();
        let instance =
            Instance::start(config).map_err(|e| io_error("Instance start in", &dir, e))?;
        Server::start_on(instance)
    }

    /// A server over an instance started on its own (a fault-injecting backend's, say), which it
    /// takes over: its registered databases are opened and `master` is created in its directory
    /// if there is none, and shutting down releases the instance's directory lock.
    pub fn start_on(instance: Arc<Instance>) -> Result<Arc<Server>> {
        Server::open_registered(instance, true)
    }

    /// A server over an instance its caller goes on using (a benchmark's, whose waits and files
    /// a T-SQL script then reads), opened as [`Server::start_on`] opens one; shutting it down
    /// closes its databases and leaves the instance's directory lock with the caller.
    pub fn attach(instance: &Arc<Instance>) -> Result<Arc<Server>> {
        Server::open_registered(instance.clone(), false)
    }

    fn open_registered(
        instance: Arc<Instance>,
        releases_data_directory: bool,
    ) -> Result<Arc<Server>> {
        let server = Arc::new(Server {
            instance,
            databases: RwLock::new(BTreeMap::new()),
            closed: RwLock::new(BTreeMap::new()),
            shut_down: parking_lot::Mutex::new(BTreeMap::new()),
            sessions: parking_lot::Mutex::new(BTreeMap::new()),
            batch_cache: crate::cache::BatchCache::default(),
            releases_data_directory,
        });
        let actions = crate::xevents::ServerActions(Arc::downgrade(&server));
        server.instance.xevents.set_action_provider(Arc::new(actions));
        let registry = server.registry()?;
        let ids_missing = registry.iter().any(|entry| entry.database_id.is_none());
        for entry in &registry {
            if let Some(id) = entry.database_id {
                server.instance.note_database_id(id);
            }
        }
        for RegistryEntry { name, path, database_id, offline } in registry {
            if offline {
                let state = ClosedState::Offline;
                let entry = ClosedDatabase { name, path, database_id, state };
                server.closed.write().insert(key(&entry.name), entry);
                continue;
            }
            match Database::open(&server.instance, &path) {
                Ok(db) => server.bring_online(db),
                // Without master there is no instance; any other database that does not open
                // is SUSPECT and the instance starts.
                Err(error) if key(&name) != "master" => {
                    let state = ClosedState::Suspect;
                    let suspect = ClosedDatabase { name, path, database_id, state };
                    server.mark_suspect(suspect, &error, "spid9s");
                }
                Err(error) => return Err(error),
            }
        }
        let opened: Vec<Arc<Database>> = server.databases.read().values().cloned().collect();
        for db in opened {
            drop_leftover_temporary_tables(&db);
        }
        if server.database("master").is_none() {
            let spec = DatabaseSpec::simple("master", SizeSpec::parse("4MB").expect("a size"));
            server.create_database(&spec)?;
        } else if ids_missing {
            server.save_registry()?; // an older registry: record the ids of those that opened
        }
        Ok(server)
    }

    /// A monotonic instant as a datetime of the instance's clock: its start time plus the time
    /// since it started.
    pub fn datetime_of(&self, at: std::time::Instant) -> Value {
        let instance = &self.instance;
        let since = at.saturating_duration_since(instance.started);
        let since = chrono::Duration::from_std(since).unwrap_or_else(|_| chrono::Duration::zero());
        crate::functions::current_time("GETDATE", instance.start_time + since)
    }

    fn registry_path(&self) -> PathBuf {
        self.instance.dir().join(REGISTRY)
    }

    /// The registered databases: one line each, `name TAB path [TAB database_id [TAB
    /// OFFLINE]]` (the id is what keeps a closed database's id its own; older registries lack
    /// it), the name and path escaped ([`registry_fields`]).
    fn registry(&self) -> Result<Vec<RegistryEntry>> {
        let text = match self.instance.io.read_to_string(&self.registry_path()) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("read the database registry", &self.registry_path(), e)),
        };
        let mut entries = Vec::new();
        for line in text.lines() {
            let mut fields = line.split('\t');
            let (Some(name), Some(path)) = (fields.next(), fields.next()) else { continue };
            let (name, path) = (unescape_line_field(name), unescape_line_field(path));
            let database_id = fields.next().and_then(|id| id.parse().ok());
            let offline = fields.next() == Some("OFFLINE");
            entries.push(RegistryEntry { name, path: PathBuf::from(path), database_id, offline });
        }
        Ok(entries)
    }

    fn save_registry(&self) -> Result<()> {
        let shut_down = self.shut_down.lock();
        self.write_registry(&shut_down)
    }

    /// Writes the registry; the caller holds `shut_down`. Lock order: shut_down, then
    /// databases, then closed (a restart, SET OFFLINE and SET ONLINE move a database between
    /// them while they hold shut_down). Holding shut_down to the end also keeps two sessions
    /// from writing the temporary file at once.
    fn write_registry(&self, shut_down: &BTreeMap<String, Arc<Database>>) -> Result<()> {
        let databases = self.databases.read();
        let mut text = String::new();
        for db in databases.values().chain(shut_down.values()) {
            let path = db.file_path(1).unwrap_or_default();
            let (name, path) = registry_fields(&db.name, &path);
            text.push_str(&format!("{name}\t{path}\t{}\n", db.database_id));
        }
        for closed in self.closed.read().values() {
            let id = closed.database_id.map(|id| id.to_string()).unwrap_or_default();
            let (name, path) = registry_fields(&closed.name, &closed.path);
            let line = match closed.state {
                // The id field stays (empty if unknown), so that OFFLINE is the fourth field.
                ClosedState::Offline => format!("{name}\t{path}\t{id}\tOFFLINE\n"),
                ClosedState::Suspect if id.is_empty() => format!("{name}\t{path}\n"),
                ClosedState::Suspect => format!("{name}\t{path}\t{id}\n"),
            };
            text.push_str(&line);
        }
        let path = self.registry_path();
        engine::io::replace_file(self.instance.io.as_ref(), &path, text.as_bytes())
            .map_err(|e| io_error("write the database registry", &path, e))
    }

    /// An open database by name (case-insensitive).
    pub fn database(&self, name: &str) -> Option<Arc<Database>> {
        self.databases.read().get(&key(name)).cloned()
    }

    /// An open database by name; error 926 for a SUSPECT one, 942 for an OFFLINE one, 9001 for
    /// one shut down after its log failed that sessions still hold, 911 for one that does not
    /// exist.
    pub fn open_database(&self, name: &str) -> Result<Arc<Database>> {
        if let Some(db) = self.database(name) {
            return Ok(db);
        }
        if self.shut_down.lock().contains_key(&key(name)) {
            self.restart_released_databases();
            if let Some(db) = self.database(name) {
                return Ok(db);
            }
            if let Some(db) = self.shut_down.lock().get(&key(name)) {
                return Err(SqlError::log_not_available(&db.name));
            }
        }
        if let Some(closed) = self.closed.read().get(&key(name)) {
            return Err(closed.cannot_open());
        }
        Err(SqlError::new(
            911,
            16,
            1,
            format!(
                "Database '{name}' does not exist. Make sure that the name is entered correctly."
            ),
        ))
    }

    /// Why `name` (any case) is registered but not open: SUSPECT or OFFLINE; None if it is
    /// open or not registered.
    pub fn closed_state(&self, name: &str) -> Option<ClosedState> {
        self.closed.read().get(&key(name)).map(|closed| closed.state)
    }

    /// The databases marked SUSPECT, by name.
    pub fn suspect_databases(&self) -> Vec<String> {
        let closed = self.closed.read();
        let suspect = closed.values().filter(|closed| closed.state == ClosedState::Suspect);
        suspect.map(|closed| closed.name.clone()).collect()
    }

    /// A database's id by name (DB_ID): an open database's, or a SUSPECT one's.
    pub fn database_id_of(&self, name: &str) -> Option<u16> {
        match self.database(name) {
            Some(db) => Some(db.database_id),
            None => self.closed.read().get(&key(name)).and_then(|s| s.database_id),
        }
    }

    /// A database's name by id (DB_NAME): an open database's, or a SUSPECT one's.
    pub fn database_name_of(&self, database_id: i64) -> Option<String> {
        if let Some(db) = self.database_by_id(database_id) {
            return Some(db.name.clone());
        }
        let closed = self.closed.read();
        let found = closed.values().find(|s| s.database_id.map(i64::from) == Some(database_id));
        found.map(|s| s.name.clone())
    }

    /// The registered databases that are not open, SUSPECT or OFFLINE (sys.databases lists them).
    pub fn closed_database_entries(&self) -> Vec<ClosedDatabase> {
        self.closed.read().values().cloned().collect()
    }

    /// The open database with this database_id (what DB_ID() returns), if any.
    pub fn database_by_id(&self, database_id: i64) -> Option<Arc<Database>> {
        self.databases.read().values().find(|d| i64::from(d.database_id) == database_id).cloned()
    }

    /// The name of the open database with this id, waiting at most `patience` for the list
    /// (None if it is not open, or if the list stayed locked: an Extended Events action can
    /// be collected on a thread that holds it).
    pub fn database_name_within(
        &self,
        database_id: u16,
        patience: std::time::Duration,
    ) -> Option<String> {
        let databases = self.databases.try_read_for(patience)?;
        databases.values().find(|d| d.database_id == database_id).map(|d| d.name.clone())
    }

    /// Every open database.
    pub fn databases(&self) -> Vec<Arc<Database>> {
        self.databases.read().values().cloned().collect()
    }

    /// CREATE DATABASE.
    pub fn create_database(&self, spec: &DatabaseSpec) -> Result<Arc<Database>> {
        if self.database(&spec.name).is_some()
            || self.closed.read().contains_key(&key(&spec.name))
            || self.shut_down.lock().contains_key(&key(&spec.name))
        {
            return Err(SqlError::new(
                1801,
                16,
                3,
                format!(
                    "Database '{}' already exists. Choose a different database name.",
                    spec.name
                ),
            ));
        }
        let db = Arc::new(Database::create(&self.instance, spec)?);
        start_system_tasks(&db);
        if let Err(error) = db.catalog() {
            discard_new_database(&self.instance, db);
            return Err(error);
        }
        let shut_down = self.shut_down.lock();
        self.databases.write().insert(key(&spec.name), db.clone());
        if let Err(error) = self.write_registry(&shut_down) {
            // Not registered, it would be gone at the next start with its files left behind:
            // the creation is undone instead, as SQL Server undoes a CREATE DATABASE that fails.
            self.databases.write().remove(&key(&spec.name));
            drop(shut_down);
            discard_new_database(&self.instance, db);
            return Err(error);
        }
        Ok(db)
    }

    /// Shuts down every open database whose log has stopped (a failed log write or flush,
    /// which sessions get as 9001), as SQL Server does: the errorlog says so (3422), and each
    /// restarts as soon as no session holds it. A session that received the 9001 lets go of
    /// the database at once; any other finds it shut down at its next batch.
    pub fn restart_databases_whose_log_failed(&self) {
        let failed: Vec<String> = self
            .databases
            .read()
            .iter()
            .filter(|(_, db)| !db.log().is_available())
            .map(|(key, _)| key.clone())
            .collect();
        for key in failed {
            let Some(db) = self.databases.write().remove(&key) else { continue };
            db.stop_background_tasks();
            self.instance.errorlog.write(
                &engine::instance::current_process_info(),
                &format!(
                    "Database {} was shutdown due to error 9001 in routine \
                     'XdesRMFull::CommitInternal'. Restart for non-snapshot databases will be \
                     attempted after all connections to the database are aborted.",
                    db.name
                ),
            );
            self.shut_down.lock().insert(key, db);
        }
        self.restart_released_databases();
    }

    /// Restarts each shut-down database that no session holds any more: its in-memory state
    /// is dropped without a write (its log cannot take one), and it opens again, running
    /// recovery, or is marked SUSPECT (with 3414) if it cannot.
    fn restart_released_databases(&self) {
        let mut shut_down = self.shut_down.lock();
        let released: Vec<String> = shut_down
            .iter()
            .filter(|(_, db)| Arc::strong_count(db) == 1)
            .map(|(key, _)| key.clone())
            .collect();
        for key in released {
            let db = shut_down.remove(&key).expect("listed above");
            let (name, database_id) = (db.name.clone(), db.database_id);
            let path = db.file_path(1).unwrap_or_default();
            match Arc::try_unwrap(db) {
                Ok(db) => db.crash(),
                Err(db) => {
                    // A session took it again meanwhile.
                    shut_down.insert(key, db);
                    continue;
                }
            }
            match Database::open(&self.instance, &path) {
                Ok(db) => self.bring_online(db),
                Err(error) => {
                    let (database_id, state) = (Some(database_id), ClosedState::Suspect);
                    let suspect = ClosedDatabase { name, path, database_id, state };
                    self.mark_suspect(suspect, &error, &engine::instance::current_process_info());
                }
            }
        }
    }

    /// ALTER DATABASE name SET OFFLINE: checkpoints and closes the database, which stays
    /// registered as OFFLINE (sys.databases state 6, 942 on USE) until SET ONLINE. 5070 while a
    /// session, this one included, has it as its current database. A SUSPECT database becomes
    /// OFFLINE.
    pub fn set_offline(&self, name: &str) -> Result<()> {
        if key(name) == "master" {
            let text = "Option 'OFFLINE' cannot be set in database 'master'.";
            return Err(SqlError::new(5058, 16, 1, text));
        }
        let shut_down = self.shut_down.lock();
        let already_closed = self.closed.read().get(&key(name)).map(|c| (c.state, c.name.clone()));
        if let Some((state, shown_name)) = already_closed {
            if state == ClosedState::Offline {
                return Ok(()); // nothing changes
            }
            self.set_closed_state(name, ClosedState::Offline);
            if let Err(error) = self.write_registry(&shut_down) {
                self.set_closed_state(name, state);
                return Err(error);
            }
            self.log_option_set(&shown_name, "OFFLINE");
            return Ok(());
        }
        let db = match self.take_unused(name) {
            Taken::Alone(db) => *db,
            Taken::InUse => return Err(database_in_use(name)),
            Taken::NotOpen => return Err(cannot_alter(name)),
        };
        let entry = ClosedDatabase {
            name: db.name.clone(),
            path: db.file_path(1).unwrap_or_default(),
            database_id: Some(db.database_id),
            state: ClosedState::Offline,
        };
        let shown_name = entry.name.clone();
        self.closed.write().insert(key(name), entry);
        // The registry says OFFLINE before the database closes: one that cannot be written (a
        // full disk) leaves the database open, as it was.
        if let Err(error) = self.write_registry(&shut_down) {
            self.closed.write().remove(&key(name));
            self.bring_online(db);
            return Err(error);
        }
        self.log_option_set(&shown_name, "OFFLINE");
        // A checkpoint that fails leaves the database OFFLINE all the same: its log holds
        // every commit, and SET ONLINE runs recovery.
        db.close()
    }

    /// Sets the state of a registered database that is not open.
    fn set_closed_state(&self, name: &str, state: ClosedState) {
        if let Some(closed) = self.closed.write().get_mut(&key(name)) {
            closed.state = state;
        }
    }

    /// ALTER DATABASE name SET ONLINE: opens an OFFLINE or SUSPECT database again, running
    /// recovery. One that does not open is SUSPECT (its error and 3414 go to the errorlog)
    /// and the statement fails with its error. Nothing to do for an open database.
    pub fn set_online(&self, name: &str) -> Result<()> {
        let shut_down = self.shut_down.lock();
        if self.database(name).is_some() {
            return Ok(());
        }
        let Some(closed) = self.closed.read().get(&key(name)).cloned() else {
            return Err(cannot_alter(name));
        };
        match Database::open(&self.instance, &closed.path) {
            Ok(db) => {
                self.bring_online(db);
                self.closed.write().remove(&key(name));
                if let Err(error) = self.write_registry(&shut_down) {
                    // Still OFFLINE (or SUSPECT) on disk: so it stays, closed again.
                    self.close_again(name, closed);
                    return Err(error);
                }
                self.log_option_set(&closed.name, "ONLINE");
                Ok(())
            }
            Err(error) => {
                let suspect = ClosedDatabase { state: ClosedState::Suspect, ..closed };
                self.mark_suspect(suspect, &error, &engine::instance::current_process_info());
                self.write_registry(&shut_down)?;
                Err(error)
            }
        }
    }

    /// Undoes a SET ONLINE whose registry write failed: the database closes again (a session
    /// that found it open in the meantime keeps it open until the next start) and is listed
    /// as it was.
    fn close_again(&self, name: &str, closed: ClosedDatabase) {
        if let Taken::Alone(db) = self.take_unused(name) {
            let _ = db.close();
            self.closed.write().insert(key(name), closed);
        }
    }

    /// Takes an open database off the list for the caller alone, its system tasks stopped (they
    /// hold the database while they work). A database some session still holds stays open, as
    /// it was.
    fn take_unused(&self, name: &str) -> Taken {
        let Some(db) = self.databases.write().remove(&key(name)) else { return Taken::NotOpen };
        db.stop_background_tasks();
        match Arc::try_unwrap(db) {
            Ok(db) => Taken::Alone(Box::new(db)),
            Err(db) => {
                start_system_tasks(&db);
                self.databases.write().insert(key(name), db);
                Taken::InUse
            }
        }
    }

    /// A database that has just opened: its system tasks start and sessions can use it.
    fn bring_online(&self, db: Database) {
        let db = Arc::new(db);
        start_system_tasks(&db);
        self.databases.write().insert(key(&db.name), db);
    }

    /// A database that did not open is SUSPECT: its error goes to the errorlog, with 3414 when
    /// its id is known, and it stays registered with its id.
    fn mark_suspect(&self, suspect: ClosedDatabase, error: &SqlError, process_info: &str) {
        let errorlog = &self.instance.errorlog;
        errorlog.write_error(process_info, error);
        if let Some(database_id) = suspect.database_id {
            errorlog.write_error(process_info, &recovery_gave_up(&suspect.name, database_id));
        }
        self.closed.write().insert(key(&suspect.name), suspect);
    }

    /// The errorlog line of a database state change (message 5084), naming the database as
    /// it was created.
    fn log_option_set(&self, name: &str, option: &str) {
        self.instance.errorlog.write(
            &engine::instance::current_process_info(),
            &format!("Setting database option {option} to ON for database '{name}'."),
        );
    }

    /// DROP DATABASE: forgets it and deletes its files.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        let closed = self.closed.write().remove(&key(name));
        if let Some(closed) = closed {
            // Its files stay where they are (a SUSPECT one's could not be opened, and SQL Server
            // leaves an OFFLINE one's on disk too); only its entry goes.
            let saved = self.save_registry();
            if saved.is_err() {
                self.closed.write().insert(key(name), closed);
            }
            return saved;
        }
        let db = match self.take_unused(name) {
            Taken::Alone(db) => *db,
            Taken::InUse => {
                let text =
                    format!("Cannot drop database \"{name}\" because it is currently in use.");
                return Err(SqlError::new(3702, 16, 4, text));
            }
            Taken::NotOpen => {
                let text = format!(
                    "Cannot drop the database '{name}', because it does not exist or you do not have permission."
                );
                return Err(SqlError::new(3701, 11, 1, text));
            }
        };
        // The registry forgets it before its files go: a registry that cannot be written (a
        // full disk) leaves the database as it was, open and whole.
        if let Err(error) = self.save_registry() {
            self.bring_online(db);
            return Err(error);
        }
        // Dropped: nothing of it is written any more (no checkpoint), its files just go.
        let paths = database_file_paths(&db);
        db.crash();
        remove_database_files(&self.instance, &paths);
        Ok(())
    }

    /// Closes every database (checkpointing each). A database that does not close cleanly (a
    /// checkpoint that fails: a full log, a failed write) stops nothing: the others close, the
    /// directory lock goes, and the first such error is returned; its log holds every commit,
    /// and recovery runs at the next start.
    pub fn shutdown(&self) -> Result<()> {
        let databases: Vec<Arc<Database>> =
            std::mem::take(&mut *self.databases.write()).into_values().collect();
        let mut first_error = None;
        for db in databases {
            db.stop_background_tasks();
            if let Ok(db) = Arc::try_unwrap(db) {
                first_error = first_error.or(db.close().err());
            }
        }
        if self.releases_data_directory {
            self.instance.release_data_directory();
        }
        first_error.map_or(Ok(()), Err)
    }

    /// SHUTDOWN from a session (which holds its current database): every database is
    /// checkpointed, unless `nowait`, and forgotten; the log makes committed work durable either
    /// way, and a NOWAIT shutdown leaves it to recovery at the next start, as in SQL Server. As
    /// in [`Server::shutdown`], one database's failure stops none of the others.
    pub fn shutdown_from_session(&self, nowait: bool) -> Result<()> {
        let databases: Vec<Arc<Database>> =
            std::mem::take(&mut *self.databases.write()).into_values().collect();
        let mut first_error = None;
        for db in databases {
            db.stop_background_tasks();
            let closed = if nowait {
                db.log().flush_all()
            } else {
                match Arc::try_unwrap(db) {
                    Ok(db) => db.close(),
                    Err(db) => db.checkpoint(),
                }
            };
            first_error = first_error.or(closed.err());
        }
        if self.releases_data_directory {
            self.instance.release_data_directory();
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        self.instance.dir()
    }
}

/// The background tasks SQL Server runs for every database: automatic checkpoints, the log
/// writer, and ghost cleanup every 5 seconds (trace flag 661 turns its runs off).
/// Drops the temporary tables and table variables a process left when it ended without
/// dropping them (killed, or crashed): SQL Server clears tempdb at startup ([`crate::temp`]).
fn drop_leftover_temporary_tables(db: &Arc<Database>) {
    let Ok(catalog) = db.catalog() else { return };
    for table in catalog.tables() {
        if !crate::temp::is_stored_temporary(&table.name) || db.begin_tran().is_err() {
            continue;
        }
        match catalog.drop_table(db, &table.name) {
            Ok(()) => {
                let _ = db.commit_tran();
            }
            Err(_) => {
                let _ = db.rollback_tran();
            }
        }
    }
}

/// The paths of a database's data and log files.
fn database_file_paths(db: &Database) -> Vec<PathBuf> {
    let data_ids = db.file_space().into_iter().map(|f| f.file_id);
    let log_ids = db.log_files().into_iter().map(|(file_id, _, _)| file_id);
    data_ids.chain(log_ids).filter_map(|file_id| db.file_path(file_id)).collect()
}

/// Deletes a dropped database's files, and syncs their directories so that a crash does not
/// bring them back (a file left behind would refuse the next CREATE DATABASE of that name with
/// 5170). A file that cannot be deleted stays, as SQL Server leaves one it cannot delete.
fn remove_database_files(instance: &Instance, paths: &[PathBuf]) {
    let io = instance.io.as_ref();
    for path in paths {
        let _ = io.remove(path);
    }
    let _ = engine::io::sync_parent_dirs(io, paths.iter().map(PathBuf::as_path));
}

/// Undoes a CREATE DATABASE that failed after its files were made: the database is dropped
/// without a write (nothing of it is worth keeping) and its files deleted. A session that
/// found it in the moment it was listed may still hold it: then its files stay, unregistered.
fn discard_new_database(instance: &Instance, db: Arc<Database>) {
    db.stop_background_tasks();
    let paths = database_file_paths(&db);
    if let Ok(db) = Arc::try_unwrap(db) {
        db.crash();
        remove_database_files(instance, &paths);
    }
}

fn start_system_tasks(db: &Arc<Database>) {
    db.start_checkpoint_task();
    db.start_log_writer();
    db.start_ghost_cleanup(engine::database::GHOST_CLEANUP_INTERVAL);
}
