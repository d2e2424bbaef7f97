//! The crate's own client against the server: what a batch returns over TDS equals what the
//! same batch returns in process (result sets with their typed values, row counts, messages
//! and errors), so the token encoders and decoders agree.

use engine::instance::InstanceConfig;
use std::time::Duration;
use tds::server::ServeConfig;
use tsql::server::Server;
use tsql::session::Session;

/// A listener on a port of its own (sa's password `Str0ng!Passw0rd`), run on a thread.
struct Running {
    address: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl Running {
    /// Stops the listener and waits for it.
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap().unwrap();
    }
}

fn serve(dir: impl Into<std::path::PathBuf>, configure: impl FnOnce(&mut ServeConfig)) -> Running {
    let mut config = ServeConfig::new(dir);
    config.port = 0;
    config.sa_password = Some("Str0ng!Passw0rd".into());
    configure(&mut config);
    let listener = tds::server::Listener::bind(config).unwrap();
    let address = listener.local_addr().to_string();
    let stop = listener.stop_flag();
    let thread = std::thread::spawn(move || listener.run());
    Running { address, stop, thread }
}

/// The client reads values, not the declared types the server described them by.
fn without_declared_types(output: tsql::server::Output) -> tsql::server::Output {
    match output {
        tsql::server::Output::Rows(mut set) => {
            set.types.clear();
            tsql::server::Output::Rows(set)
        }
        other => other,
    }
}

#[test]
fn batches_over_tds_return_what_they_return_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path().join("served"), |c| {
        c.login_timeout = Duration::from_secs(5);
    });
    let address = server.address.clone();
    let mut client =
        tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let local_server = Server::start(InstanceConfig::new(dir.path().join("local"))).unwrap();
    let mut local = Session::new(&local_server);
    let batches = [
        "CREATE TABLE t (id int PRIMARY KEY, name nvarchar(20), amount decimal(9,2), at datetime, d date, t2 datetime2(3), g uniqueidentifier, b bit, f float, r real, m money, v varbinary(10), tiny tinyint, small smallint, big bigint)",
        "INSERT t VALUES (1, N'one', 1.25, '2024-01-02 03:04:05', '2024-01-02', '2024-01-02 03:04:05.123', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1, 1.5, 2.5, 3.25, 0x0102, 7, -3, 9000000000), (2, NULL, -0.5, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "SELECT * FROM t ORDER BY id; SELECT COUNT(*) AS n FROM t",
        "PRINT 'hello'; SELECT 1 AS one",
        "SELECT * FROM no_such_table",
        "UPDATE t SET name = N'uno' WHERE id = 1; SELECT name FROM t WHERE id = 1",
        "SET NOCOUNT ON; SELECT 2 AS two",
        "SELECT REPLICATE(N'x', 5000) AS long_text, CAST(NULL AS nvarchar(10)) AS none",
    ];
    for batch in batches {
        let remote = client.batch(batch).unwrap();
        let mut expected = Vec::new();
        local.execute(batch, &mut |o| expected.push(without_declared_types(o)));
        assert_eq!(remote, expected, "batch: {batch}");
    }
    // USE reaches the client as ENVCHANGE.
    client.batch("CREATE DATABASE other").unwrap();
    client.batch("USE other").unwrap();
    assert_eq!(client.database, "other");
    let Err(refused) = tds::client::Client::connect(&address, "sa", "wrong", "master") else {
        panic!("a refused login")
    };
    assert!(refused.contains("Msg 18456, Level 14, State 1"), "{refused}");
    // A login's database: taken when it is there, 4060 when it is not.
    let other = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "other").unwrap();
    assert_eq!(other.database, "other");
    drop(other);
    let Err(refused) = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "nowhere")
    else {
        panic!("a login to a database that is not there")
    };
    assert!(
        refused.contains(
            "Msg 4060, Level 11, State 1\nCannot open database \"nowhere\" requested by the \
             login. The login failed."
        ),
        "{refused}"
    );
    drop(client);
    server.stop();
}

#[test]
fn the_connection_limit_is_17809_and_a_silent_client_is_dropped_at_the_login_timeout() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |c| {
        c.max_connections = 2;
        c.login_timeout = Duration::from_millis(500);
    });
    let address = server.address.clone();
    let first = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let second = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let Err(third) = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master")
    else {
        panic!("a third connection over the limit of 2")
    };
    assert!(third.contains("Msg 17809"), "{third}");
    drop((first, second));
    std::thread::sleep(Duration::from_millis(200));
    // A client that says nothing is closed once the login timeout passes.
    let mut silent = std::net::TcpStream::connect(&address).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = std::time::Instant::now();
    let mut byte = [0u8; 1];
    assert_eq!(silent.read(&mut byte).unwrap_or(0), 0, "closed without an answer");
    assert!(started.elapsed() < Duration::from_secs(5), "closed at the login timeout");
    // Wrong passwords stay wrong after a right one was cached.
    let ok = tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master");
    assert!(ok.is_ok());
    drop(ok);
    assert!(tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd2", "master").is_err());
    server.stop();
}

#[test]
fn attention_stops_a_running_batch_and_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let mut client =
        tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    client.batch("CREATE TABLE progress (n int)").unwrap();
    let started = std::time::Instant::now();
    // About 100 million iterations: minutes of work unless the attention stops it.
    let outputs = client
        .batch_then_attention(
            "DECLARE @i bigint = 0; WHILE @i < 99000000 SET @i += 1; INSERT progress VALUES (1)",
            Duration::from_millis(300),
        )
        .unwrap();
    assert!(client.attention_acknowledged, "DONE_ATTN ends the reply: {outputs:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "stopped early: {:?}", started.elapsed());
    assert!(
        !outputs.iter().any(|o| matches!(o, tsql::server::Output::Error { .. })),
        "no error message: {outputs:?}"
    );
    // The statement after the loop never ran, and the connection goes on.
    let count = client.batch("SELECT COUNT(*) AS n FROM progress").unwrap();
    assert!(
        matches!(&count[0], tsql::server::Output::Rows(set) if set.rows[0][0] == engine::record::Value::Int(0)),
        "{count:?}"
    );
    // One long statement (a join of 2.5 * 10^7 pairs that match nothing) stops too, inside its
    // row loop, on a connection quiet for long enough that its watcher has parked.
    client
        .batch("DECLARE @i int = 0; WHILE @i < 5000 BEGIN INSERT progress VALUES (@i); SET @i += 1 END")
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let started = std::time::Instant::now();
    let outputs = client
        .batch_then_attention(
            "BEGIN TRAN; INSERT progress SELECT a.n FROM progress a JOIN progress b ON a.n + b.n < 0; INSERT progress VALUES (-1)",
            Duration::from_millis(300),
        )
        .unwrap();
    assert!(client.attention_acknowledged, "DONE_ATTN ends the reply: {outputs:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "stopped early: {:?}", started.elapsed());
    // The transaction stays open (as in SQL Server without XACT_ABORT); nothing after the
    // cancelled statement ran.
    let state =
        client.batch("SELECT @@TRANCOUNT AS t, COUNT(*) AS n FROM progress; ROLLBACK").unwrap();
    assert!(
        matches!(&state[0], tsql::server::Output::Rows(set)
            if set.rows[0] == vec![engine::record::Value::Int(1), engine::record::Value::Int(5000)]),
        "{state:?}"
    );
    drop(client);
    server.stop();
}

/// A client that disconnects inside a transaction: the server rolls the transaction back, as
/// SQL Server does when a connection closes, so its rows are gone, its locks are released and
/// the log is free to truncate past it (bug: the transaction stayed open, holding its locks,
/// and restart recovery counted one rolled-back transaction per such connection).
#[test]
fn a_connection_that_closes_inside_a_transaction_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let connect =
        || tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let mut first = connect();
    first.batch("CREATE TABLE t (id int PRIMARY KEY)").unwrap();
    first.batch("BEGIN TRAN; INSERT t VALUES (1), (2)").unwrap();
    drop(first);
    // The rows' exclusive locks are gone (the read waits for them otherwise: the test fails
    // after 20 s rather than hang) and so are the rows; the table takes the same keys again.
    let (sent, received) = std::sync::mpsc::channel();
    let address_again = address.clone();
    std::thread::spawn(move || {
        let mut second =
            tds::client::Client::connect(&address_again, "sa", "Str0ng!Passw0rd", "master")
                .unwrap();
        let count = second.batch("SELECT COUNT(*) AS n FROM t").unwrap();
        let insert = second.batch("INSERT t VALUES (1), (2)").unwrap();
        let _ = sent.send((count, insert));
    });
    let (count, insert) =
        received.recv_timeout(Duration::from_secs(20)).expect("the locks were released");
    assert!(
        matches!(&count[0], tsql::server::Output::Rows(set) if set.rows[0][0] == engine::record::Value::Int(0)),
        "{count:?}"
    );
    assert_eq!(insert, vec![tsql::server::Output::RowCount(2)]);
    server.stop();
}

/// Severity 20 and above is fatal in SQL Server: the client gets the error, then the server
/// terminates the connection, and its open transaction is rolled back. Severity 16 leaves the
/// connection open.
#[test]
fn a_fatal_error_ends_the_connection_and_rolls_back_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let connect =
        || tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let mut client = connect();
    client.batch("CREATE TABLE t (id int PRIMARY KEY)").unwrap();
    let ordinary = client.batch("RAISERROR('not fatal', 16, 1)").unwrap();
    assert!(
        matches!(&ordinary[..], [tsql::server::Output::Error { error, .. }] if error.severity == 16),
        "{ordinary:?}"
    );
    let fatal = client
        .batch("BEGIN TRAN; INSERT t VALUES (1); RAISERROR('fatal', 20, 1) WITH LOG")
        .unwrap();
    let error = fatal.iter().find_map(|o| match o {
        tsql::server::Output::Error { error, .. } => Some(error.clone()),
        _ => None,
    });
    assert_eq!(error.map(|e| (e.number, e.severity, e.message)), Some((50000, 20, "fatal".into())));
    assert!(client.batch("SELECT 1 AS one").is_err(), "the connection stayed open");
    let mut again = connect();
    let count = again.batch("SELECT COUNT(*) AS n FROM t").unwrap();
    assert!(
        matches!(&count[0], tsql::server::Output::Rows(set) if set.rows[0][0] == engine::record::Value::Int(0)),
        "{count:?}"
    );
    assert_eq!(
        again.batch("INSERT t VALUES (1)").unwrap(),
        vec![tsql::server::Output::RowCount(1)]
    );
    server.stop();
}

/// The first error number of a reply.
fn first_error(reply: &[tsql::server::Output]) -> Option<i32> {
    reply.iter().find_map(|o| match o {
        tsql::server::Output::Error { error, .. } => Some(error.number),
        _ => None,
    })
}

/// KILL of an idle connection that holds locks in an open transaction: its connection ends at
/// once (its next request fails) and its transaction is rolled back, so the killer's update of
/// the locked row goes through; sp_who no longer lists it.
#[test]
fn kill_ends_an_idle_connection_and_rolls_back_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let connect =
        || tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let mut victim = connect();
    victim.batch("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT t VALUES (1, 0)").unwrap();
    victim.batch("BEGIN TRAN; UPDATE t SET v = 99 WHERE id = 1").unwrap();
    let spid = match &victim.batch("SELECT @@SPID").unwrap()[0] {
        tsql::server::Output::Rows(set) => set.rows[0][0].clone(),
        other => panic!("{other:?}"),
    };
    let spid = tsql::value::display(&spid);
    let mut killer = connect();
    assert_eq!(first_error(&killer.batch(&format!("KILL {spid}")).unwrap()), None);
    // The update waits for the victim's lock until its rollback releases it (the test fails
    // after 20 s rather than hang).
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let reply = killer.batch("UPDATE t SET v = v + 1 WHERE id = 1; SELECT v FROM t").unwrap();
        let _ = sent.send(reply);
    });
    let reply = received.recv_timeout(Duration::from_secs(20)).expect("the lock was released");
    let value = reply.iter().find_map(|o| match o {
        tsql::server::Output::Rows(set) => Some(set.rows[0][0].clone()),
        _ => None,
    });
    assert_eq!(value, Some(engine::record::Value::Int(1)), "the victim's update was undone");
    assert!(victim.batch("SELECT 1 AS one").is_err(), "the killed connection stayed open");
    // The session leaves the registry once its drop has rolled back (just after the locks go).
    let mut observer = connect();
    let started = std::time::Instant::now();
    loop {
        let who = observer.batch(&format!("EXEC sp_who {spid}")).unwrap();
        if matches!(&who[0], tsql::server::Output::Rows(set) if set.rows.is_empty()) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "still listed: {who:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop();
}

/// KILL of a connection whose request is blocked on a lock: the request ends with 596
/// (severity 21), then the connection closes, and the transaction is rolled back.
#[test]
fn kill_ends_a_running_request_with_596() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let connect =
        || tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let mut holder = connect();
    holder
        .batch("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT t VALUES (1, 0), (2, 0)")
        .unwrap();
    holder.batch("BEGIN TRAN; UPDATE t SET v = 5 WHERE id = 1").unwrap();
    let mut victim = connect();
    let spid = match &victim.batch("SELECT @@SPID").unwrap()[0] {
        tsql::server::Output::Rows(set) => tsql::value::display(&set.rows[0][0]),
        other => panic!("{other:?}"),
    };
    let blocked = std::thread::spawn(move || {
        let reply = victim
            .batch("BEGIN TRAN; UPDATE t SET v = 7 WHERE id = 2; UPDATE t SET v = 7 WHERE id = 1");
        let after = victim.batch("SELECT 1 AS one");
        (reply, after.is_err())
    });
    let mut killer = connect();
    let started = std::time::Instant::now();
    loop {
        let reply = killer
            .batch(&format!("SELECT command FROM sys.dm_exec_requests WHERE session_id = {spid} AND wait_type LIKE 'LCK%'"))
            .unwrap();
        if matches!(&reply[0], tsql::server::Output::Rows(set) if !set.rows.is_empty()) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the victim never waited");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(first_error(&killer.batch(&format!("KILL {spid}")).unwrap()), None);
    let (reply, closed) = blocked.join().unwrap();
    let reply = reply.expect("the reply before the connection closed");
    let error = reply.iter().find_map(|o| match o {
        tsql::server::Output::Error { error, .. } => Some((error.number, error.severity)),
        _ => None,
    });
    assert_eq!(error, Some((596, 21)), "{reply:?}");
    assert!(closed, "the killed connection stayed open");
    holder.batch("COMMIT").unwrap();
    let rows = killer.batch("SELECT v FROM t ORDER BY id").unwrap();
    assert!(
        matches!(&rows[0], tsql::server::Output::Rows(set)
            if set.rows == vec![vec![engine::record::Value::Int(5)], vec![engine::record::Value::Int(0)]]),
        "the victim's first update was rolled back: {rows:?}"
    );
    server.stop();
}

/// ALTER DATABASE ... SET OFFLINE WITH ROLLBACK IMMEDIATE, the DBA's way to clear a database
/// of its users: a connection using the database, idle inside a transaction, is ended and its
/// transaction rolled back, and the database goes offline. Without the WITH clause the same
/// statement fails with 5070 and 5069 while the connection is there.
#[test]
fn set_offline_with_rollback_immediate_ends_the_databases_connections() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let connect = |database: &str| {
        tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", database).unwrap()
    };
    let mut admin = connect("master");
    admin.batch("CREATE DATABASE shop").unwrap();
    let mut user = connect("shop");
    user.batch("CREATE TABLE orders (id int PRIMARY KEY); INSERT orders VALUES (1)").unwrap();
    user.batch("BEGIN TRAN; INSERT orders VALUES (2)").unwrap();
    let refused = admin.batch("ALTER DATABASE shop SET OFFLINE").unwrap();
    let numbers: Vec<i32> = refused
        .iter()
        .filter_map(|o| match o {
            tsql::server::Output::Error { error, .. } => Some(error.number),
            _ => None,
        })
        .collect();
    assert_eq!(numbers, vec![5070, 5069]);
    let reply = admin.batch("ALTER DATABASE shop SET OFFLINE WITH ROLLBACK IMMEDIATE").unwrap();
    assert_eq!(first_error(&reply), None, "{reply:?}");
    assert!(user.batch("SELECT 1 AS one").is_err(), "the user's connection stayed open");
    let state = admin.batch("SELECT state_desc FROM sys.databases WHERE name = 'shop'").unwrap();
    assert!(
        matches!(&state[0], tsql::server::Output::Rows(set)
            if set.rows == vec![vec![engine::record::Value::Text("OFFLINE".into())]]),
        "{state:?}"
    );
    admin.batch("ALTER DATABASE shop SET ONLINE").unwrap();
    let rows = admin.batch("USE shop; SELECT COUNT(*) FROM orders").unwrap();
    let count = rows.iter().find_map(|o| match o {
        tsql::server::Output::Rows(set) => Some(set.rows.clone()),
        _ => None,
    });
    assert_eq!(
        count,
        Some(vec![vec![engine::record::Value::Int(1)]]),
        "the open transaction's row was rolled back"
    );
    server.stop();
}

/// The rows of a reply's first result set.
fn first_rows(reply: &[tsql::server::Output]) -> Vec<Vec<engine::record::Value>> {
    reply
        .iter()
        .find_map(|o| match o {
            tsql::server::Output::Rows(set) => Some(set.rows.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// What a connection's LOGIN7 and socket said reaches sys.dm_exec_sessions (with the TDS
/// version's major number as client_version),
/// sys.dm_exec_connections and HOST_NAME(), APP_NAME() and SUSER_SNAME(); num_reads and
/// num_writes count the packets as they go (one each way for a small batch).
#[test]
fn a_connection_shows_its_client_in_the_session_and_connection_views() {
    use engine::record::Value;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    let mut client =
        tds::client::Client::connect(&address, "sa", "Str0ng!Passw0rd", "master").unwrap();
    let session = first_rows(
        &client
            .batch(
                "SELECT host_process_id, client_interface_name, program_name, login_name, \
         HOST_NAME(), APP_NAME(), SUSER_SNAME(), client_version, endpoint_id \
         FROM sys.dm_exec_sessions WHERE session_id = @@SPID",
            )
            .unwrap(),
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    assert_eq!(
        session,
        vec![vec![
            Value::Int(std::process::id() as i32),
            Value::Text(tds::client::INTERFACE_NAME.into()),
            Value::Text("extentdb".into()),
            Value::Text("sa".into()),
            Value::Text(host.trim().into()),
            Value::Text("extentdb".into()),
            Value::Text("sa".into()),
            // TDS 7.4 (0x74000004): client version 7; the default TCP endpoint.
            Value::Int(7),
            Value::Int(4),
        ]]
    );
    let query = "SELECT net_transport, protocol_type, protocol_version, encrypt_option, \
                 auth_scheme, net_packet_size, client_net_address, local_tcp_port, num_reads, \
                 num_writes FROM sys.dm_exec_connections WHERE session_id = @@SPID";
    let first = first_rows(&client.batch(query).unwrap());
    let second = first_rows(&client.batch(query).unwrap());
    let port = address.rsplit(':').next().unwrap().parse::<i32>().unwrap();
    assert_eq!(
        first[0][..8],
        [
            Value::Text("TCP".into()),
            Value::Text("TSQL".into()),
            Value::Int(0x7400_0004),
            Value::Text("FALSE".into()),
            Value::Text("SQL".into()),
            Value::Int(4096),
            Value::Text("127.0.0.1".into()),
            Value::Int(port),
        ]
    );
    let counts = |row: &[Value]| {
        (tsql::value::as_i64(&row[8]).unwrap(), tsql::value::as_i64(&row[9]).unwrap())
    };
    let (reads, writes) = counts(&first[0]);
    // Read: PRELOGIN, LOGIN7 and two batches, this one included; written: the PRELOGIN and
    // login replies and the first batch's (this batch's reply is not sent yet).
    assert_eq!((reads, writes), (4, 3));
    assert_eq!(counts(&second[0]), (reads + 1, writes + 1), "one packet each way per batch");
    // Each reply's packet header carries the session id, as SQL Server's do.
    let spid = first_rows(&client.batch("SELECT @@SPID").unwrap());
    assert_eq!(spid, vec![vec![Value::SmallInt(client.server_spid as i16)]]);
    assert!(client.server_spid >= 51, "{}", client.server_spid);
    server.stop();
}

/// Packet sizes from 512 to 32,767 bytes: the server grants what LOGIN7 asks for, and a
/// request and a reply longer than one packet are split into packets and gathered back
/// whole, at either end of the range.
#[test]
fn messages_split_and_gather_at_every_packet_size() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), |_| {});
    let address = server.address.clone();
    // 3,000 characters of literal (6,000 bytes of UTF-16: 12 packets of 512), echoed back
    // as a 3,000-character value and its length.
    let text: String = (0..3000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let batch = format!("SELECT N'{text}' AS t, LEN(N'{text}') AS n");
    for packet_size in [512, 4096, 32767] {
        let mut client = tds::client::Client::connect_with_packet_size(
            &address,
            "sa",
            "Str0ng!Passw0rd",
            "master",
            packet_size,
        )
        .unwrap();
        assert_eq!(client.packet_size(), packet_size, "granted by ENVCHANGE 4");
        let outputs = client.batch(&batch).unwrap();
        let tsql::server::Output::Rows(set) = &outputs[0] else { panic!("{outputs:?}") };
        assert_eq!(
            set.rows[0],
            vec![engine::record::Value::Text(text.clone()), engine::record::Value::Int(3000)],
            "packet size {packet_size}"
        );
    }
    server.stop();
}
