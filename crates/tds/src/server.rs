//! `extentdb serve`: a TCP listener (127.0.0.1:1433 by default) over the embedded server of the
//! T-SQL layer. Each connection gets a thread and a T-SQL session: PRELOGIN, LOGIN7 checked
//! against the logins file, the login reply, then SQL batches until the client closes.
//!
//! Limits: at most `max_connections` connections (the next one gets error 17809 and is
//! closed), a login timeout, and a largest message (`max_message_bytes`). A malformed,
//! truncated or oversized message closes its connection with an errorlog line; the server and
//! the other sessions carry on.
//!
//! Errorlog lines: the listening address at start, every failed login (18456 with SQL Server's
//! state: 5 no such login, 8 wrong password), closed connections, and shutdown.
//!
//! A failed accept (the process out of file descriptors, say) leaves the client waiting in
//! the listen backlog: the listener tries again after [`ACCEPT_RETRY`], and the errorlog gets
//! the run of failures' first line and at most one a minute after it, with a count
//! ([`AcceptFailures`]), then a line when accepts work again. Retried at once and logged each
//! time, clients left in the backlog (one is enough) made the listener write 900,000 errorlog
//! lines (82 MB) in two seconds.
//!
//! SHUTDOWN from a session ends the listener after that session; the databases are
//! checkpointed and closed by the session's SHUTDOWN.
//!
//! Requests: SQL_BATCH, RPC ([`run_rpc`]), TRANSACTION_MANAGER ([`transaction_manager`]) and
//! ATTENTION. Transactions begun or ended by a request, in any of them, are announced with
//! ENVCHANGE 8/9/10. A connection that closes inside a transaction has it rolled back (its
//! session's drop). A reply that carried an error of severity 20 to 25 is fatal, as in SQL
//! Server: the server closes the connection after sending it.
//!
//! Deviations: BULK_LOAD gets error 40517 and the connection stays open; an ATTENTION stops
//! a batch between statements and inside row loops (a sort or aggregate over rows already
//! read finishes); over full TLS any record the client sends mid-request counts as its
//! ATTENTION ([`AttentionWatch`]).

use crate::logins::Logins;
use crate::packet::{self, DEFAULT_PACKET_SIZE, MAX_PACKET_SIZE, MIN_PACKET_SIZE};
use crate::rpc::{Param, Procedure, Rpc};
use crate::tls::Transport;
use crate::token::{self, DONE_ATTN, DONE_COUNT, DONE_ERROR, DONE_FINAL, DONE_MORE};
use crate::{ProtocolError, from_utf16, login, prelogin};
use engine::instance::InstanceConfig;
use engine::record::{SqlType, Value};
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tsql::server::{Output, Server};
use tsql::session::Session;

/// How a server is started.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub dir: std::path::PathBuf,
    pub address: String,
    pub port: u16,
    pub max_connections: usize,
    pub login_timeout: Duration,
    /// The largest request message (a batch's text and headers).
    pub max_message_bytes: usize,
    /// sa's password for the first start (from EXTENTDB_SA_PASSWORD).
    pub sa_password: Option<String>,
    /// TLS inside TDS: off (PRELOGIN answers NOT_SUP), or with a certificate.
    pub tls: TlsSetting,
    /// The instance's startup options (`-T` flags, `-E`, 'max server memory (MB)', the VLF
    /// rule); its data directory is `dir`.
    pub instance: InstanceConfig,
}

/// Where the TLS certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsSetting {
    Off,
    /// The data directory's pair, generated self-signed at first start.
    SelfSigned,
    /// PEM files: the certificate (chain) and its private key.
    Files {
        cert: std::path::PathBuf,
        key: std::path::PathBuf,
    },
}

impl ServeConfig {
    pub fn new(dir: impl Into<std::path::PathBuf>) -> ServeConfig {
        let dir = dir.into();
        ServeConfig {
            instance: InstanceConfig::new(&dir),
            dir,
            address: "127.0.0.1".into(),
            port: 1433,
            max_connections: 256,
            login_timeout: Duration::from_secs(15),
            max_message_bytes: 64 << 20,
            sa_password: None,
            tls: TlsSetting::SelfSigned,
        }
    }
}

/// A running listener.
pub struct Listener {
    listener: TcpListener,
    server: Arc<Server>,
    logins: Arc<Logins>,
    config: ServeConfig,
    stop: Arc<AtomicBool>,
    connections: Arc<AtomicUsize>,
    /// A handle on each open connection's socket, to close them at shutdown.
    open: Arc<parking_lot::Mutex<std::collections::BTreeMap<u64, TcpStream>>>,
    next_connection: u64,
    tls: Option<Arc<rustls::ServerConfig>>,
    accept_failures: AcceptFailures,
}

/// How long the listener waits after a failed accept before it tries again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// The least time between two errorlog lines about the same run of failed accepts.
const ACCEPT_FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// A run of failed accepts, and what the errorlog has been told of it.
#[derive(Default)]
struct AcceptFailures {
    /// Failed accepts since the last one that worked.
    failed: u64,
    /// Failed accepts since the last errorlog line.
    unlogged: u64,
    last_logged: Option<std::time::Instant>,
}

impl AcceptFailures {
    /// Counts a failed accept; returns the errorlog line due, if one is.
    fn failed(&mut self, error: &std::io::Error, now: std::time::Instant) -> Option<String> {
        self.failed += 1;
        let due =
            self.last_logged.is_none_or(|at| now.duration_since(at) >= ACCEPT_FAILURE_LOG_INTERVAL);
        if !due {
            self.unlogged += 1;
            return None;
        }
        self.last_logged = Some(now);
        Some(match std::mem::take(&mut self.unlogged) {
            0 => format!("TDS: accept failed: {error}"),
            more => {
                format!("TDS: accept failed: {error} ({more} more failures since the last line)")
            }
        })
    }

    /// Notes an accept that worked; returns the line that ends a run of failures, if any.
    fn succeeded(&mut self) -> Option<String> {
        if self.failed == 0 {
            return None;
        }
        let line =
            format!("TDS: accepting connections again after {} failed accepts.", self.failed);
        *self = AcceptFailures::default();
        Some(line)
    }
}

fn error_text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// The errorlog's record of an address the server cannot listen on: 26023 when another
/// process has the port, else 26024 with the error number (Linux's errno here, where SQL Server
/// prints a Windows error).
fn listen_failure(address: &str, port: u16, error: &std::io::Error) -> engine::SqlError {
    if error.kind() == std::io::ErrorKind::AddrInUse {
        let text = format!(
            "Server TCP provider failed to listen on [ {address} <ipv4> {port}]. Tcp port is \
             already in use."
        );
        return engine::SqlError::new(26023, 16, 1, text);
    }
    let number = error.raw_os_error().unwrap_or(0);
    let text = format!(
        "Server failed to listen on {address} <ipv4> {port}. Error: {number:#x}. To proceed, \
         notify your system administrator."
    );
    engine::SqlError::new(26024, 16, 1, text)
}

impl Listener {
    /// Starts the instance (creating it on first start, with `sa`) and binds the address.
    pub fn bind(config: ServeConfig) -> Result<Listener, String> {
        std::fs::create_dir_all(&config.dir).map_err(error_text)?;
        let logins = Logins::open_or_create(&config.dir, config.sa_password.as_deref())
            .map_err(error_text)?;
        let tls = match &config.tls {
            TlsSetting::Off => None,
            TlsSetting::SelfSigned => Some(crate::tls::server_config(&config.dir, None, None)?),
            TlsSetting::Files { cert, key } => {
                Some(crate::tls::server_config(&config.dir, Some(cert), Some(key))?)
            }
        };
        let instance = InstanceConfig { dir: config.dir.clone(), ..config.instance.clone() };
        let server = Server::start(instance).map_err(error_text)?;
        let listener = match TcpListener::bind((config.address.as_str(), config.port)) {
            Ok(listener) => listener,
            Err(e) => {
                let error = listen_failure(&config.address, config.port, &e);
                server.instance.errorlog.write_error("Server", &error);
                let _ = server.shutdown();
                return Err(format!(
                    "TDS: could not listen on {}:{}: {e}",
                    config.address, config.port
                ));
            }
        };
        listener.set_nonblocking(true).map_err(error_text)?;
        let local = listener.local_addr().map_err(error_text)?;
        server.instance.errorlog.write(
            "Server",
            &format!("Server is listening on [ {} <ipv4> {}].", local.ip(), local.port()),
        );
        Ok(Listener {
            listener,
            server,
            logins: Arc::new(logins),
            config,
            stop: Arc::new(AtomicBool::new(false)),
            connections: Arc::new(AtomicUsize::new(0)),
            open: Arc::new(parking_lot::Mutex::new(std::collections::BTreeMap::new())),
            next_connection: 0,
            tls,
            accept_failures: AcceptFailures::default(),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// A flag that stops [`Listener::run`] when set.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Accepts connections until a session runs SHUTDOWN or the stop flag is set, then closes
    /// the databases.
    pub fn run(mut self) -> Result<(), String> {
        while !self.stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if let Some(line) = self.accept_failures.succeeded() {
                        self.log(&line);
                    }
                    self.start_connection(stream, peer)
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    if let Some(line) = self.accept_failures.failed(&e, std::time::Instant::now()) {
                        self.log(&line);
                    }
                    // A client gone before its accept costs no wait; a lack of descriptors
                    // or memory lasts, and is not tried again at once.
                    let transient = matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted
                    );
                    if !transient {
                        std::thread::sleep(ACCEPT_RETRY);
                    }
                }
            }
        }
        // Idle connections are closed; a running batch finishes first.
        for stream in self.open.lock().values() {
            let _ = stream.shutdown(Shutdown::Read);
        }
        while self.connections.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.log("SQL Server is terminating because of a system shutdown. This is an informational message only. No user action is required.");
        self.server.shutdown().map_err(error_text)
    }

    fn log(&self, text: &str) {
        self.server.instance.errorlog.write("Server", text);
    }

    fn start_connection(&mut self, mut stream: TcpStream, peer: SocketAddr) {
        let count = self.connections.fetch_add(1, Ordering::AcqRel) + 1;
        if count > self.config.max_connections {
            self.connections.fetch_sub(1, Ordering::AcqRel);
            let error = token::message(
                17809,
                1,
                20,
                &format!(
                    "Could not connect because the maximum number of '{}' user connections has already been reached. The system administrator can use sp_configure to increase the maximum value. The connection has been closed.",
                    self.config.max_connections
                ),
                "",
                0,
            );
            let mut reply = error;
            reply.extend(token::done(DONE_ERROR, 0));
            // The client hears the refusal as its login's answer: PRELOGIN is answered (no
            // TLS), LOGIN7 gets the error, then the connection closes. A short-lived thread, so
            // that a slow client does not hold up the listener.
            let _ = std::thread::Builder::new().name("tds-refuse".into()).spawn(move || {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let limit = 64 * 1024;
                if let Ok(Some((packet::PRELOGIN, _))) =
                    packet::read_message(&mut stream, MAX_PACKET_SIZE, limit)
                {
                    let answer = prelogin::encode_response(prelogin::ENCRYPT_NOT_SUP);
                    let tabular = packet::TABULAR_RESULT;
                    let _ = packet::write_message(
                        &mut stream,
                        tabular,
                        &answer,
                        DEFAULT_PACKET_SIZE,
                        0,
                    );
                    let _ = packet::read_message(&mut stream, MAX_PACKET_SIZE, limit);
                }
                let _ = packet::write_message(
                    &mut stream,
                    packet::TABULAR_RESULT,
                    &reply,
                    DEFAULT_PACKET_SIZE,
                    0,
                );
                let _ = stream.shutdown(Shutdown::Both);
            });
            self.log(&format!(
                "TDS: connection from {peer} refused: {} connections",
                self.config.max_connections
            ));
            return;
        }
        let connection = Connection {
            server: self.server.clone(),
            logins: self.logins.clone(),
            config: self.config.clone(),
            stop: self.stop.clone(),
            peer,
            packet_size: DEFAULT_PACKET_SIZE,
            spid: 0,
            tls: self.tls.clone(),
            connected: std::time::Instant::now(),
            counted: Default::default(),
            stats: None,
        };
        let connections = self.connections.clone();
        self.next_connection += 1;
        let id = self.next_connection;
        if let Ok(handle) = stream.try_clone() {
            self.open.lock().insert(id, handle);
        }
        let open = self.open.clone();
        let errorlog_server = self.server.clone();
        let spawned = std::thread::Builder::new().name(format!("tds-{peer}")).spawn(move || {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_nodelay(true);
            // An internal error (a panic) ends this connection only: the client sees the
            // connection close (through the shutdown handle in `open`), the errorlog says why,
            // the server and other sessions go on.
            let served =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| connection.serve(stream)));
            if let Err(panic) = served {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                errorlog_server.instance.errorlog.write(
                    "Server",
                    &format!("TDS: connection from {peer} closed by an internal error: {what}"),
                );
                if let Some(socket) = open.lock().get(&id) {
                    let _ = socket.shutdown(Shutdown::Both);
                }
            }
            open.lock().remove(&id);
            connections.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            self.open.lock().remove(&id);
            self.connections.fetch_sub(1, Ordering::AcqRel);
            self.log(&format!("TDS: no thread for the connection from {peer}"));
        }
    }
}

/// One client connection.
struct Connection {
    server: Arc<Server>,
    logins: Arc<Logins>,
    config: ServeConfig,
    stop: Arc<AtomicBool>,
    peer: SocketAddr,
    packet_size: usize,
    /// The session id each packet's header carries, from the login's answer on (0 before it,
    /// as SQL Server's PRELOGIN answer has).
    spid: u16,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// When the connection was accepted (sys.dm_exec_connections.connect_time).
    connected: std::time::Instant,
    /// Packets read and written before the login made `stats`.
    counted: std::cell::Cell<(u64, u64)>,
    /// What sys.dm_exec_connections shows of it, from the login on.
    stats: Option<Arc<tsql::server::Connection>>,
}

impl Connection {
    fn log(&self, text: &str) {
        self.server.instance.errorlog.write("Logon", text);
    }

    fn serve(mut self, stream: TcpStream) {
        let _ = stream.set_read_timeout(Some(self.config.login_timeout));
        let (session, mut transport) = match self.login(Transport::Plain(stream)) {
            Ok(Some(logged_in)) => logged_in,
            Ok(None) => return,
            Err(error) => {
                self.log(&format!("TDS: connection from {} closed: {error}", self.peer));
                return;
            }
        };
        let _ = transport.tcp().set_read_timeout(None);
        if let Err(error) = self.requests(&mut transport, session) {
            self.server
                .instance
                .errorlog
                .write("Server", &format!("TDS: connection from {} closed: {error}", self.peer));
        }
        let _ = transport.tcp().shutdown(Shutdown::Both);
    }

    fn read(
        &self,
        stream: &mut impl std::io::Read,
        max: usize,
    ) -> Result<Option<(u8, Vec<u8>)>, ProtocolError> {
        let message =
            packet::read_message_whole(stream, MAX_PACKET_SIZE.max(self.packet_size), max)?;
        Ok(message.map(|m| {
            self.count_packets(m.packets, false);
            (m.packet_type, m.payload)
        }))
    }

    fn send(&self, stream: &mut impl Write, payload: &[u8]) -> Result<(), ProtocolError> {
        packet::write_message(stream, packet::TABULAR_RESULT, payload, self.packet_size, self.spid)
            .map_err(|e| ProtocolError(format!("write: {e}")))?;
        self.count_packets(packet::packets_for(payload.len(), self.packet_size), true);
        Ok(())
    }

    /// Counts packets read or written (`written`) for sys.dm_exec_connections.
    fn count_packets(&self, packets: u64, written: bool) {
        match &self.stats {
            Some(stats) => stats.count_packets(packets, written),
            None => {
                let (read, wrote) = self.counted.get();
                let counted =
                    if written { (read, wrote + packets) } else { (read + packets, wrote) };
                self.counted.set(counted);
            }
        }
    }

    /// The connection's facts for sys.dm_exec_connections, the session's client for
    /// sys.dm_exec_sessions (LOGIN7's names), from the login on.
    fn describe_client(&mut self, session: &Session, login: &login::Login7, stream: &Transport) {
        use rand_core::RngCore;
        let mut connection_id = [0u8; 16];
        rand_core::OsRng.fill_bytes(&mut connection_id);
        let facts = tsql::server::ConnectionFacts {
            client_address: self.peer,
            local_address: stream.tcp().local_addr().unwrap_or(self.peer),
            encrypted: matches!(stream, Transport::Tls(_)),
            packet_size: self.packet_size as u32,
            protocol_version: login.tds_version,
            connection_id,
            host_process_id: login.client_pid,
            client_interface_name: login.interface_name.clone(),
        };
        let stats = Arc::new(tsql::server::Connection::new(facts, self.connected));
        let (read, written) = self.counted.get();
        stats.count_packets(read, false);
        stats.count_packets(written, true);
        session.set_client(&login.user_name, &login.host_name, &login.app_name, stats.clone());
        self.stats = Some(stats);
    }

    /// PRELOGIN (with the TLS handshake it asks for), LOGIN7 and the login reply; None when
    /// the login failed (already answered).
    fn login(
        &mut self,
        mut stream: Transport,
    ) -> Result<Option<(Session, Transport)>, ProtocolError> {
        const LOGIN_MESSAGE_MAX: usize = 64 * 1024;
        let Some((kind, payload)) = self.read(&mut stream, LOGIN_MESSAGE_MAX)? else {
            return Ok(None);
        };
        if kind != packet::PRELOGIN {
            return Err(ProtocolError(format!("expected PRELOGIN, got packet type {kind:#04x}")));
        }
        let asked = prelogin::decode(&payload)?;
        let answer = match (&self.tls, asked.encryption) {
            (Some(_), Some(prelogin::ENCRYPT_OFF)) => prelogin::ENCRYPT_OFF,
            (Some(_), Some(prelogin::ENCRYPT_ON | prelogin::ENCRYPT_REQ)) => prelogin::ENCRYPT_ON,
            _ => prelogin::ENCRYPT_NOT_SUP,
        };
        self.send(&mut stream, &prelogin::encode_response(answer))?;
        if let (Some(config), prelogin::ENCRYPT_OFF | prelogin::ENCRYPT_ON) = (&self.tls, answer) {
            let mut tcp = stream.into_plain();
            let connection = crate::tls::handshake(&mut tcp, config)?;
            stream = Transport::Tls(Box::new(rustls::StreamOwned::new(connection, tcp)));
        }
        let Some((kind, payload)) = self.read(&mut stream, LOGIN_MESSAGE_MAX)? else {
            return Ok(None);
        };
        if kind != packet::LOGIN7 {
            return Err(ProtocolError(format!("expected LOGIN7, got packet type {kind:#04x}")));
        }
        if answer == prelogin::ENCRYPT_OFF {
            // Login-only TLS: both sides drop TLS after LOGIN7.
            stream = Transport::Plain(stream.into_plain());
        }
        let login = login::decode(&payload)?;
        if !self.logins.authenticate(&login.user_name, &login.password) {
            let (state, reason) = if self.logins.exists(&login.user_name) {
                (8, "Password did not match that for the login provided.")
            } else {
                (5, "Could not find a login matching the name provided.")
            };
            let errorlog = &self.server.instance.errorlog;
            errorlog.write("Logon", &format!("Error: 18456, Severity: 14, State: {state}."));
            errorlog.write(
                "Logon",
                &format!(
                    "Login failed for user '{}'. Reason: {reason} [CLIENT: {}]",
                    login.user_name,
                    self.peer.ip()
                ),
            );
            let mut reply = token::message(
                18456,
                1,
                14,
                &format!("Login failed for user '{}'.", login.user_name),
                "",
                1,
            );
            reply.extend(token::done(DONE_ERROR, 0));
            self.send(&mut stream, &reply)?;
            return Ok(None);
        }
        let requested = login.packet_size as usize;
        self.packet_size = if requested == 0 {
            DEFAULT_PACKET_SIZE
        } else {
            requested.clamp(MIN_PACKET_SIZE, MAX_PACKET_SIZE)
        };
        let mut session = Session::new(&self.server);
        self.spid = session.spid;
        self.describe_client(&session, &login, &stream);
        if !login.database.is_empty() && !login.database.eq_ignore_ascii_case("master") {
            if self.server.database(&login.database).is_none() {
                let error = tsql::server::login_database_unavailable(&login.database);
                let mut reply = token::message(
                    error.number,
                    error.state,
                    error.severity,
                    &error.message,
                    "",
                    1,
                );
                reply.extend(token::done(DONE_ERROR, 0));
                self.send(&mut stream, &reply)?;
                return Ok(None);
            }
            session.execute(&format!("USE [{}]", login.database.replace(']', "]]")), &mut |_| {});
        }
        let mut reply = token::env_change(token::ENV_DATABASE, &session.database_name(), "master");
        reply.extend(token::env_collation());
        reply.extend(token::env_change(token::ENV_LANGUAGE, "us_english", ""));
        reply.extend(token::env_change(
            token::ENV_PACKET_SIZE,
            &self.packet_size.to_string(),
            "4096",
        ));
        reply.extend(token::login_ack());
        reply.extend(token::done(DONE_FINAL, 0));
        self.send(&mut stream, &reply)?;
        Ok(Some((session, stream)))
    }

    /// The requests of a logged-in connection, until the client closes or SHUTDOWN runs.
    fn requests(&self, stream: &mut Transport, mut session: Session) -> Result<(), ProtocolError> {
        let mut prepared = Prepared::default();
        let watch = AttentionWatch::start(stream, session.cancel_handle());
        // KILL from another session ends this connection: a read waiting for the next request
        // returns at once, and a running request stops at its next check (596).
        // (The watcher's handle of the socket serves: a connection holds few descriptors.)
        if let Some(socket) = watch.as_ref().map(|w| w.socket.clone()) {
            session.on_kill(Box::new(move || {
                let _ = socket.shutdown(Shutdown::Read);
            }));
        }
        // Buffered reads: a small request takes one read call, not two (header, then body).
        // Only bytes the client sent before the request are buffered, so the watcher still
        // sees an ATTENTION that comes while the request runs.
        let mut stream = std::io::BufReader::with_capacity(REQUEST_BUFFER_BYTES, stream);
        loop {
            let Some((kind, payload)) = self.read(&mut stream, self.config.max_message_bytes)?
            else {
                return Ok(());
            };
            let reply = match kind {
                packet::SQL_BATCH => {
                    let text = batch_text(&payload)?;
                    watching_attention(watch.as_ref(), &mut session, |s| run_batch(s, &text))
                }
                packet::RPC => {
                    let rpc = crate::rpc::decode(&payload)?;
                    let prepared = &mut prepared;
                    watching_attention(watch.as_ref(), &mut session, |s| run_rpc(s, prepared, rpc))
                }
                packet::ATTENTION => token::done(DONE_ATTN, 0),
                packet::TRANSACTION_MANAGER => transaction_manager(&mut session, &payload)?,
                0x07 => {
                    let mut reply = token::message(
                        40517,
                        1,
                        16,
                        &format!("TDS request type {kind:#04x} is not supported yet."),
                        "",
                        1,
                    );
                    reply.extend(token::done(DONE_ERROR, 0));
                    reply
                }
                other => return Err(ProtocolError(format!("unexpected packet type {other:#04x}"))),
            };
            self.send(stream.get_mut(), &reply)?;
            if session.is_shut_down() {
                self.stop.store(true, Ordering::Relaxed);
                let _ = stream.get_mut().flush();
                return Ok(());
            }
            if session.fatal_error_sent() || session.is_killed() {
                // Severity 20 and above (596 for a KILL among them), or a KILL that came after
                // the request's last check: SQL Server terminates the connection once the
                // client has the reply. Dropping the session rolls its open transaction back.
                let _ = stream.get_mut().flush();
                return Ok(());
            }
        }
    }
}

/// A SQL_BATCH's text, after its ALL_HEADERS (a u32 total length that includes itself).
pub fn batch_text(payload: &[u8]) -> Result<String, ProtocolError> {
    let bad = || ProtocolError("malformed SQL_BATCH".into());
    // A batch without ALL_HEADERS (TDS 7.1 clients) starts with its text; ALL_HEADERS with
    // a transaction descriptor take at least 18 bytes.
    let has_headers = packet::all_headers_len(payload).is_some_and(|len| len >= 18);
    let text = match packet::after_all_headers(payload) {
        Some(rest) if has_headers => rest,
        _ => payload,
    };
    from_utf16(text).ok_or_else(bad)
}

/// Runs a batch and returns its tokens: each result set, row count, message and error as SQL
/// Server sends them, an ENVCHANGE when the batch changed the database, then the final DONE.
pub fn run_batch(session: &mut Session, text: &str) -> Vec<u8> {
    let (mut tokens, failed) = statement_tokens(session, text, Vec::new(), token::DONE);
    tokens.extend(token::done(if failed { DONE_ERROR } else { DONE_FINAL }, 0));
    tokens
}

/// The tokens of a batch's statements (`done` ends each: DONE, or DONEINPROC inside an RPC)
/// and whether it raised an error; the caller adds the final DONE or DONEPROC.
fn statement_tokens(
    session: &mut Session,
    text: &str,
    variables: Vec<(String, SqlType, Value)>,
    done: u8,
) -> (Vec<u8>, bool) {
    let database_before = session.database_name();
    let transactions = session.transaction_events();
    let mut tokens = Vec::new();
    let mut result_open = false;
    let mut failed = false;
    session.execute_with_variables(text, variables, &mut |output| {
        // Transactions that began or ended before this output came.
        transaction_tokens(&transactions, &mut tokens);
        match output {
            Output::Rows(set) => {
                if result_open {
                    tokens.extend(token::done_token(done, DONE_MORE, 0));
                }
                tokens.extend(token::result_set(&set.columns, &set.types, &set.rows));
                result_open = true;
            }
            Output::RowCount(n) => {
                tokens.extend(token::done_token(done, DONE_MORE | DONE_COUNT, n));
                result_open = false;
            }
            Output::Message(text) => tokens.extend(token::message(0, 1, 0, &text, "", 1)),
            Output::Error { error, line, procedure } => {
                failed = true;
                tokens.extend(token::message(
                    error.number,
                    error.state,
                    error.severity,
                    &error.message,
                    procedure.as_deref().unwrap_or(""),
                    line as u32,
                ));
            }
        }
    });
    transaction_tokens(&transactions, &mut tokens);
    if result_open {
        tokens.extend(token::done_token(done, DONE_MORE, 0));
    }
    let database_after = session.database_name();
    if database_after != database_before {
        tokens.extend(token::env_change(token::ENV_DATABASE, &database_after, &database_before));
    }
    (tokens, failed)
}

/// ENVCHANGE 8 (begin), 9 (commit) and 10 (rollback) for the session's transaction changes
/// since the last call, with the transaction's id as the 8-byte descriptor, as SQL Server
/// sends them for BEGIN/COMMIT/ROLLBACK TRAN in a batch, an implicit transaction's start, and
/// TRANSACTION_MANAGER requests.
fn transaction_tokens(
    events: &parking_lot::Mutex<Vec<tsql::session::TransactionEvent>>,
    tokens: &mut Vec<u8>,
) {
    use tsql::session::TransactionEvent;
    for event in events.lock().drain(..) {
        tokens.extend(match event {
            TransactionEvent::Began(id) => token::env_transaction(token::ENV_BEGIN_TRAN, id),
            TransactionEvent::Committed(id) => token::env_transaction(token::ENV_COMMIT_TRAN, id),
            TransactionEvent::RolledBack(id) => {
                token::env_transaction(token::ENV_ROLLBACK_TRAN, id)
            }
        });
    }
}

/// The ATTENTION watcher of one connection: a thread that peeks at the socket once
/// a request has run for [`ATTENTION_ARM_DELAY`]. When an ATTENTION header is there, it sets
/// the session's cancel flag, which stops the batch (between statements and inside row
/// loops). It never consumes a byte: after the request's reply, the connection reads the
/// ATTENTION like any message and answers it with DONE_ATTN, exactly as when the ATTENTION
/// comes after the request ended (a race every client handles: it reads until DONE_ATTN).
///
/// Cost: the connection thread never waits for the watcher and never wakes it for a request.
/// While requests come, the watcher ticks every [`ATTENTION_ARM_DELAY`] and notices a
/// request that was already running at its previous tick (so it watches after 10-20 ms).
/// After [`ATTENTION_PARK_TICKS`] quiet ticks it parks; only the first request after that
/// wakes it. A first version that was woken at each request's start and end cost a third of
/// the `SELECT 1` rate, and one that consumed the ATTENTION made each long request wait up to
/// 5 ms for the watcher to leave the socket (docs/benchmarks.md).
///
/// Over TLS (full encryption) the bytes are encrypted, and the TLS state belongs to the
/// connection thread, so the watcher cannot read the packet type: it takes any TLS
/// application-data or alert record that arrives while a request runs as the ATTENTION (TDS
/// lets a client send nothing else in the middle of a request without MARS; an alert means
/// the client is going away, which cancels too). The connection decrypts and answers it after
/// the reply, as over plain TCP.
pub struct AttentionWatch {
    shared: Arc<WatchShared>,
    /// The connection's socket, one descriptor shared with the watcher thread (which peeks
    /// at it): a descriptor each cost a connection one more of the process's open files.
    socket: Arc<TcpStream>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The read buffer of a logged-in connection (most requests fit in one read).
const REQUEST_BUFFER_BYTES: usize = 4096;

/// How long a request runs before the watcher starts to look at the socket (also its tick).
pub const ATTENTION_ARM_DELAY: Duration = Duration::from_millis(10);
/// Quiet ticks (no request running) after which the watcher parks until the next request.
const ATTENTION_PARK_TICKS: u32 = 100;
/// How long the watcher waits for bytes at a time: how soon a watcher with nothing to see
/// notices that its request ended (the connection does not wait for it).
const ATTENTION_POLL: Duration = Duration::from_millis(100);

struct WatchShared {
    state: std::sync::Mutex<WatchState>,
    changed: std::sync::Condvar,
}

struct WatchState {
    phase: WatchPhase,
    /// Requests started on the connection; tells one long request from two short ones.
    requests: u64,
    /// The watcher sleeps until a request starts (the connection thread must wake it).
    parked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WatchPhase {
    Idle,
    Running,
    Watching,
    Closed,
}

impl WatchShared {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(
        &self,
        guard: std::sync::MutexGuard<'a, WatchState>,
    ) -> std::sync::MutexGuard<'a, WatchState> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Whether request number `request` is still the one being watched.
    fn watching(&self, request: u64) -> bool {
        let state = self.lock();
        state.phase == WatchPhase::Watching && state.requests == request
    }
}

impl AttentionWatch {
    /// A watcher for a connection (None if its socket cannot be shared).
    fn start(stream: &Transport, cancel: Arc<AtomicBool>) -> Option<AttentionWatch> {
        let framing = match stream {
            Transport::Plain(_) => Framing::Tds,
            Transport::Tls(_) => Framing::Tls,
        };
        let socket = Arc::new(stream.tcp().try_clone().ok()?);
        let peek = socket.clone();
        let shared = Arc::new(WatchShared {
            state: std::sync::Mutex::new(WatchState {
                phase: WatchPhase::Idle,
                requests: 0,
                parked: false,
            }),
            changed: std::sync::Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("tds-attention".into())
                .spawn(move || watch_loop(&shared, &peek, framing, &cancel))
                .ok()?
        };
        Some(AttentionWatch { shared, socket, thread: Some(thread) })
    }

    /// Runs `request` under the watcher.
    fn around<T>(&self, request: impl FnOnce() -> T) -> T {
        let wake = {
            let mut state = self.shared.lock();
            state.requests += 1;
            state.phase = WatchPhase::Running;
            state.parked
        };
        if wake {
            self.shared.changed.notify_all();
        }
        let result = request();
        let was_watching = {
            let mut state = self.shared.lock();
            let was_watching = state.phase == WatchPhase::Watching;
            state.phase = WatchPhase::Idle;
            was_watching
        };
        if was_watching {
            self.shared.changed.notify_all();
        }
        result
    }
}

impl Drop for AttentionWatch {
    fn drop(&mut self) {
        self.shared.lock().phase = WatchPhase::Closed;
        self.shared.changed.notify_all();
        // The connection is ending: this also ends a peek the watcher is blocked in.
        let _ = self.socket.shutdown(Shutdown::Both);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the watcher's socket carries: TDS packets, or TLS records around them.
#[derive(Clone, Copy)]
enum Framing {
    Tds,
    Tls,
}

impl Framing {
    /// Whether the first bytes waiting on the socket (at least a header's worth) are the
    /// client's ATTENTION: a TDS packet of that type, or a TLS record (application data or
    /// an alert) sent in the middle of a request.
    fn is_attention(self, header: &[u8]) -> bool {
        const TLS_ALERT: u8 = 21;
        const TLS_APPLICATION_DATA: u8 = 23;
        match self {
            Framing::Tds => header[0] == packet::ATTENTION,
            Framing::Tls => matches!(header[0], TLS_ALERT | TLS_APPLICATION_DATA),
        }
    }

    /// Bytes to peek before deciding: the TDS header, or the TLS record header.
    fn header_len(self) -> usize {
        match self {
            Framing::Tds => packet::HEADER_LEN,
            Framing::Tls => 5,
        }
    }
}

fn watch_loop(shared: &WatchShared, socket: &TcpStream, framing: Framing, cancel: &AtomicBool) {
    let mut state = shared.lock();
    // The request that was running at the previous tick, if any.
    let mut running_at_tick = None;
    let mut quiet_ticks = 0u32;
    loop {
        if quiet_ticks >= ATTENTION_PARK_TICKS {
            state.parked = true;
            while state.phase == WatchPhase::Idle {
                state = shared.wait(state);
            }
            state.parked = false;
            quiet_ticks = 0;
            running_at_tick = (state.phase == WatchPhase::Running).then_some(state.requests);
        }
        state = shared
            .changed
            .wait_timeout(state, ATTENTION_ARM_DELAY)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        match state.phase {
            WatchPhase::Closed => return,
            WatchPhase::Running if running_at_tick == Some(state.requests) => {
                let request = state.requests;
                state.phase = WatchPhase::Watching;
                drop(state);
                peek_for_attention(shared, socket, framing, request, cancel);
                state = shared.lock();
                // Leave the socket alone until this request ends.
                while state.phase == WatchPhase::Watching && state.requests == request {
                    state = shared.wait(state);
                }
                if state.phase == WatchPhase::Closed {
                    return;
                }
                running_at_tick = None;
            }
            WatchPhase::Running => {
                running_at_tick = Some(state.requests);
                quiet_ticks = 0;
            }
            WatchPhase::Idle | WatchPhase::Watching => {
                running_at_tick = None;
                quiet_ticks += 1;
            }
        }
    }
}

/// Peeks at the socket while request number `request` is watched, until an ATTENTION header
/// is there (then the session is cancelled, if the request is still running) or other bytes
/// or the end of the stream are. It waits with poll(2) and peeks with MSG_PEEK|MSG_DONTWAIT:
/// a read timeout or O_NONBLOCK would be shared with the connection's own reads, which
/// use the same socket.
fn peek_for_attention(
    shared: &WatchShared,
    socket: &TcpStream,
    framing: Framing,
    request: u64,
    cancel: &AtomicBool,
) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    use rustix::net::RecvFlags;
    let poll_timeout = Timespec { tv_sec: 0, tv_nsec: ATTENTION_POLL.as_nanos() as i64 };
    let mut buffer = [0u8; packet::HEADER_LEN];
    let header = &mut buffer[..framing.header_len()];
    while shared.watching(request) {
        let mut fds = [PollFd::new(socket, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&poll_timeout)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let peeked = rustix::net::recv(socket, &mut *header, RecvFlags::PEEK | RecvFlags::DONTWAIT)
            .map(|(n, _)| n);
        match peeked {
            Ok(n) if n >= 1 && !framing.is_attention(header) => return,
            Ok(n) if n >= header.len() => {
                // Under the lock, so a request that has just ended is never cancelled.
                let state = shared.lock();
                if state.phase == WatchPhase::Watching && state.requests == request {
                    cancel.store(true, Ordering::Relaxed);
                }
                return;
            }
            Ok(0) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
    }
}

/// Runs a request under the connection's ATTENTION watcher, if it has one.
fn watching_attention(
    watch: Option<&AttentionWatch>,
    session: &mut Session,
    run: impl FnOnce(&mut Session) -> Vec<u8>,
) -> Vec<u8> {
    match watch {
        Some(watch) => watch.around(|| run(session)),
        None => run(session),
    }
}

/// TRANSACTION_MANAGER (MS-TDS 2.2.6.9): after ALL_HEADERS, a u16 request type: 5 begin,
/// 7 commit, 8 rollback (their names and flags are ignored). Each runs as BEGIN/COMMIT/
/// ROLLBACK TRAN in the session and is answered, like the same statement in a batch, with
/// ENVCHANGE 8, 9 or 10 carrying the transaction's 8-byte descriptor, then DONE.
pub fn transaction_manager(
    session: &mut Session,
    payload: &[u8],
) -> Result<Vec<u8>, ProtocolError> {
    let bad = || ProtocolError("malformed TRANSACTION_MANAGER request".into());
    let kind = packet::after_all_headers(payload).and_then(|rest| rest.get(..2)).ok_or_else(bad)?;
    let statement = match u16::from_le_bytes([kind[0], kind[1]]) {
        5 => "BEGIN TRAN",
        7 => "COMMIT TRAN",
        8 => "ROLLBACK TRAN",
        other => {
            return Err(ProtocolError(format!(
                "transaction manager request {other} is not supported"
            )));
        }
    };
    let (mut tokens, failed) = statement_tokens(session, statement, Vec::new(), token::DONE);
    tokens.extend(token::done(if failed { DONE_ERROR } else { DONE_FINAL }, 0));
    Ok(tokens)
}

/// Statements prepared with sp_prepare or sp_prepexec on one connection: handle ->
/// (parameter declarations, statement).
#[derive(Default)]
pub struct Prepared {
    statements: std::collections::BTreeMap<i32, (Value, Value)>,
    next_handle: i32,
}

impl Prepared {
    fn add(&mut self, declarations: Value, statement: Value) -> i32 {
        self.next_handle += 1;
        self.statements.insert(self.next_handle, (declarations, statement));
        self.next_handle
    }
}

fn handle_of(param: Option<&Param>) -> Option<i32> {
    param.and_then(|p| tsql::value::as_i64(&p.value)).map(|h| h as i32)
}

/// The lower-case name of the procedure an RPC calls (special ProcIDs by their names).
fn procedure_name(procedure: &Procedure) -> String {
    use crate::rpc::{SP_EXECUTE, SP_EXECUTESQL, SP_PREPARE, SP_PREPEXEC, SP_UNPREPARE};
    match procedure {
        Procedure::Id(SP_EXECUTESQL) => "sp_executesql".into(),
        Procedure::Id(SP_PREPARE) => "sp_prepare".into(),
        Procedure::Id(SP_EXECUTE) => "sp_execute".into(),
        Procedure::Id(SP_PREPEXEC) => "sp_prepexec".into(),
        Procedure::Id(SP_UNPREPARE) => "sp_unprepare".into(),
        Procedure::Id(other) => format!("procedure id {other}"),
        Procedure::Name(name) => {
            name.rsplit('.').next().unwrap_or(name).trim_matches(['[', ']']).to_lowercase()
        }
    }
}

/// Runs an RPC: sp_executesql, the prepared-statement procedures (sp_prepare, sp_execute,
/// sp_prepexec, sp_unprepare), sp_tables, the ODBC catalog call sp_datatype_info[_100] (no
/// rows), or any other procedure by name with its parameters. Statements end with
/// DONEINPROC; then RETURNSTATUS, a RETURNVALUE per OUTPUT parameter, and DONEPROC.
pub fn run_rpc(session: &mut Session, prepared: &mut Prepared, rpc: Rpc) -> Vec<u8> {
    let name = procedure_name(&rpc.procedure);
    let mut params = rpc.params;
    let mut handle_out: Option<(String, i32)> = None;
    let (procedure, args): (String, Vec<Param>) = match name.as_str() {
        "sp_prepare" | "sp_prepexec" if params.len() >= 3 => {
            let handle = prepared.add(params[1].value.clone(), params[2].value.clone());
            handle_out = Some((params[0].name.clone(), handle));
            if name == "sp_prepare" {
                return proc_end(Vec::new(), false, 0, handle_out, &[]);
            }
            params.remove(0);
            params.swap(0, 1);
            ("sp_executesql".into(), params)
        }
        "sp_execute" => {
            let found =
                handle_of(params.first()).and_then(|h| prepared.statements.get(&h).cloned());
            let Some((declarations, statement)) = found else {
                return rpc_error(8179, "Could not find prepared statement with handle.");
            };
            let mut args = vec![text_param(statement), text_param(declarations)];
            args.extend(params.into_iter().skip(1));
            ("sp_executesql".into(), args)
        }
        "sp_unprepare" => {
            if let Some(handle) = handle_of(params.first()) {
                prepared.statements.remove(&handle);
            }
            return proc_end(Vec::new(), false, 0, None, &[]);
        }
        "sp_datatype_info_100" | "sp_datatype_info" => {
            return proc_end(Vec::new(), false, 0, None, &[]);
        }
        "sp_tables" => {
            let text = "SELECT DB_NAME() AS TABLE_QUALIFIER, SCHEMA_NAME(schema_id) AS TABLE_OWNER, \
                name AS TABLE_NAME, 'TABLE' AS TABLE_TYPE, CAST(NULL AS varchar(254)) AS REMARKS \
                FROM sys.tables ORDER BY name";
            let (tokens, failed) = statement_tokens(session, text, Vec::new(), token::DONEINPROC);
            return proc_end(tokens, failed, 0, None, &[]);
        }
        _ => (name.clone(), params),
    };
    call_procedure(session, &procedure, args, handle_out)
}

fn text_param(value: Value) -> Param {
    Param { name: String::new(), output: false, sql_type: SqlType::NVarChar(4000), value }
}

fn rpc_error(number: i32, text: &str) -> Vec<u8> {
    let mut tokens = token::message(number, 1, 16, text, "", 1);
    tokens.extend(token::done_token(token::DONEPROC, DONE_ERROR, 0));
    tokens
}

/// `EXEC @status = procedure @__rpc0, @name = @__rpc1 OUTPUT, ...` with the parameters as the
/// batch's variables; OUTPUT values are read back after it.
fn call_procedure(
    session: &mut Session,
    procedure: &str,
    args: Vec<Param>,
    handle_out: Option<(String, i32)>,
) -> Vec<u8> {
    let executesql = procedure.eq_ignore_ascii_case("sp_executesql");
    let mut variables = vec![("@__rpc_status".to_string(), SqlType::Int, Value::Null)];
    let mut call = Vec::new();
    for (i, param) in args.iter().enumerate() {
        let variable = format!("@__rpc{i}");
        variables.push((variable.clone(), param.sql_type, param.value.clone()));
        // sp_executesql's statement and declarations go by position (clients name them
        // @statement/@params, stmt/params or nothing).
        let named = param.name.starts_with('@') && !(executesql && i < 2);
        let prefix = if named { format!("{} = ", param.name) } else { String::new() };
        call.push(format!("{prefix}{variable}{}", if param.output { " OUTPUT" } else { "" }));
    }
    let text =
        format!("EXEC @__rpc_status = [{}] {}", procedure.replace(']', "]]"), call.join(", "));
    let (tokens, failed) = statement_tokens(session, &text, variables, token::DONEINPROC);
    let status = session
        .variable_after_batch("@__rpc_status")
        .and_then(|v| tsql::value::as_i64(&v))
        .unwrap_or(0) as i32;
    let outputs: Vec<(u16, String, Value)> = args
        .iter()
        .enumerate()
        .filter(|(_, p)| p.output)
        .map(|(i, p)| {
            let value = session.variable_after_batch(&format!("@__rpc{i}")).unwrap_or(Value::Null);
            (i as u16, p.name.clone(), value)
        })
        .collect();
    proc_end(tokens, failed, status, handle_out, &outputs)
}

/// RETURNSTATUS, the RETURNVALUEs (a prepared handle first) and DONEPROC after `tokens`.
fn proc_end(
    mut tokens: Vec<u8>,
    failed: bool,
    status: i32,
    handle: Option<(String, i32)>,
    outputs: &[(u16, String, Value)],
) -> Vec<u8> {
    tokens.extend(token::return_status(status));
    if let Some((name, handle)) = handle {
        tokens.extend(token::return_value(0, &name, &Value::Int(handle)));
    }
    for (ordinal, name, value) in outputs {
        tokens.extend(token::return_value(*ordinal, name, value));
    }
    let status = if failed { DONE_ERROR } else { DONE_FINAL };
    tokens.extend(token::done_token(token::DONEPROC, status, 0));
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A run of failed accepts is one errorlog line, then one a minute with the count of those
    /// not logged, and a line when an accept works again; the next run starts afresh.
    #[test]
    fn a_run_of_failed_accepts_is_logged_once_a_minute_with_a_count() {
        let mut failures = AcceptFailures::default();
        let error = std::io::Error::from_raw_os_error(24);
        let start = Instant::now();
        assert_eq!(failures.succeeded(), None, "no run of failures to end");
        let first = failures.failed(&error, start).expect("a run's first failure is logged");
        assert!(first.starts_with("TDS: accept failed: Too many open files"), "{first}");
        for tenth in 1..600 {
            let at = start + Duration::from_millis(100 * tenth);
            assert_eq!(failures.failed(&error, at), None, "logged again {tenth} tries later");
        }
        let minute = failures.failed(&error, start + Duration::from_secs(60)).unwrap();
        assert!(minute.ends_with("(599 more failures since the last line)"), "{minute}");
        assert_eq!(
            failures.succeeded().as_deref(),
            Some("TDS: accepting connections again after 601 failed accepts.")
        );
        let again = failures.failed(&error, start + Duration::from_secs(61)).unwrap();
        assert!(!again.contains("more failures"), "{again}");
    }
}
