//! tiberius (a Rust TDS client) against `extentdb serve`: login, a batch with several result
//! sets, errors with their numbers, a rolled-back transaction, a failed login.

use std::time::Duration;
use tiberius::{AuthMethod, Client, Config, EncryptionLevel};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

const PASSWORD: &str = "Str0ng!Passw0rd";

/// A server on a free port in a temporary directory, run on its own thread.
fn start() -> (tempfile::TempDir, u16, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = tds::server::ServeConfig::new(dir.path());
    config.port = 0;
    config.sa_password = Some(PASSWORD.into());
    config.login_timeout = Duration::from_secs(5);
    let listener = tds::server::Listener::bind(config).unwrap();
    let port = listener.local_addr().port();
    let stop = listener.stop_flag();
    std::thread::spawn(move || listener.run().unwrap());
    (dir, port, stop)
}

async fn connect(port: u16, password: &str) -> tiberius::Result<Client<Compat<TcpStream>>> {
    connect_with(port, password, EncryptionLevel::NotSupported).await
}

async fn connect_with(
    port: u16,
    password: &str,
    encryption: EncryptionLevel,
) -> tiberius::Result<Client<Compat<TcpStream>>> {
    let mut config = Config::new();
    config.trust_cert();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", password));
    config.encryption(encryption);
    let tcp = TcpStream::connect(config.get_addr()).await?;
    tcp.set_nodelay(true)?;
    Client::connect(config, tcp.compat_write()).await
}

fn server_code(error: &tiberius::error::Error) -> Option<u32> {
    match error {
        tiberius::error::Error::Server(token) => Some(token.code()),
        _ => None,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn tiberius_runs_batches_and_gets_errors_and_results() {
    let (_dir, port, stop) = start();
    let mut client = connect(port, PASSWORD).await.expect("login");
    let row = client
        .simple_query("SELECT 42 AS answer, N'forty-two' AS name, CAST(1.50 AS decimal(5,2)) AS d, CAST(NULL AS int) AS n")
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .expect("one row");
    assert_eq!(row.get::<i32, _>("answer"), Some(42));
    assert_eq!(row.get::<&str, _>("name"), Some("forty-two"));
    // A column of NULLs only is described by its declared type (CAST's int), not as text.
    assert_eq!(row.try_get::<i32, _>("n").unwrap(), None);
    assert!(row.try_get::<&str, _>("n").is_err(), "n is an int column");
    let d = row.get::<tiberius::numeric::Numeric, _>("d").expect("a decimal");
    assert_eq!((d.value(), d.scale()), (150, 2));
    let setup = "CREATE TABLE t (id int PRIMARY KEY, v nvarchar(20), at datetime2, g uniqueidentifier, b bit, big bigint, f float)\n\
        INSERT t VALUES (1, N'one', '2024-01-02 03:04:05.5', NEWID(), 1, 9000000000, 2.5), (2, NULL, NULL, NULL, 0, -1, NULL)";
    client.simple_query(setup).await.unwrap().into_results().await.unwrap();
    let sets = client
        .simple_query(
            "SELECT id, v, at, g, b, big, f FROM t ORDER BY id; SELECT COUNT(*) AS n FROM t",
        )
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
    assert_eq!(sets.len(), 2, "two result sets");
    assert_eq!(sets[0].len(), 2);
    assert_eq!(sets[0][0].get::<&str, _>("v"), Some("one"));
    assert_eq!(sets[0][0].get::<bool, _>("b"), Some(true));
    assert_eq!(sets[0][0].get::<i64, _>("big"), Some(9_000_000_000));
    assert_eq!(sets[0][0].get::<f64, _>("f"), Some(2.5));
    assert!(sets[0][0].get::<tiberius::Uuid, _>("g").is_some());
    assert_eq!(sets[0][1].get::<&str, _>("v"), None);
    assert_eq!(sets[1][0].get::<i32, _>("n"), Some(2));
    // An error carries SQL Server's number.
    let Err(error) = client.simple_query("SELECT * FROM no_such_table").await else {
        panic!("208 expected")
    };
    assert_eq!(server_code(&error), Some(208), "{error}");
    // A transaction that rolls back leaves nothing.
    client
        .simple_query("BEGIN TRAN; INSERT t (id, v, b, big) VALUES (3, N'three', 0, 0); ROLLBACK")
        .await
        .unwrap()
        .into_results()
        .await
        .unwrap();
    let n = client
        .simple_query("SELECT COUNT(*) FROM t")
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.get::<i32, _>(0), Some(2));
    // Parameterised queries (tiberius sends sp_executesql with @P1, @P2 ...).
    let row = client
        .query(
            "SELECT @P1 + 1 AS n, @P2 AS s, @P3 AS missing",
            &[&41i32, &"abc", &Option::<i32>::None],
        )
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .expect("a row");
    assert_eq!(row.get::<i32, _>("n"), Some(42));
    assert_eq!(row.get::<&str, _>("s"), Some("abc"));
    let inserted = client
        .execute(
            "INSERT t (id, v, b, big) VALUES (@P1, @P2, @P3, @P4)",
            &[&10i32, &"ten", &true, &10i64],
        )
        .await
        .unwrap();
    assert_eq!(inserted.total(), 1);
    let ten = client
        .query("SELECT v FROM t WHERE id = @P1", &[&10i32])
        .await
        .unwrap()
        .into_row()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ten.get::<&str, _>("v"), Some("ten"));
    let Err(error) = client.query("SELECT * FROM t WHERE nope = @P1", &[&1i32]).await else {
        panic!("207 expected")
    };
    assert_eq!(server_code(&error), Some(207), "{error}");
    // USE changes the database (ENVCHANGE); the next batch runs there.
    client.simple_query("CREATE DATABASE other").await.unwrap().into_results().await.unwrap();
    client.simple_query("USE other").await.unwrap().into_results().await.unwrap();
    let db =
        client.simple_query("SELECT DB_NAME()").await.unwrap().into_row().await.unwrap().unwrap();
    assert_eq!(db.get::<&str, _>(0), Some("other"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[tokio::test(flavor = "current_thread")]
async fn a_wrong_password_is_18456_and_is_in_the_errorlog() {
    let (dir, port, stop) = start();
    let Err(error) = connect(port, "Wrong!Passw0rd").await else { panic!("a refused login") };
    assert_eq!(server_code(&error), Some(18456), "{error}");
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    assert!(errorlog.contains("Error: 18456, Severity: 14, State: 8."), "{errorlog}");
    assert!(errorlog.contains("Login failed for user 'sa'. Reason: Password did not match that for the login provided. [CLIENT: 127.0.0.1]"), "{errorlog}");
    assert!(errorlog.contains("Server is listening on [ 127.0.0.1 <ipv4>"), "{errorlog}");
    // The server carries on: the right password still works.
    let mut client = connect(port, PASSWORD).await.expect("login");
    let one = client.simple_query("SELECT 1").await.unwrap().into_row().await.unwrap().unwrap();
    assert_eq!(one.get::<i32, _>(0), Some(1));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_and_truncated_input_closes_one_connection_only() {
    use std::io::{Read, Write};
    let (dir, port, stop) = start();
    let cases: [&[u8]; 3] = [
        b"GET / HTTP/1.0\r\n\r\n",
        &[0x12, 0x01, 0x00, 0x04, 0, 0, 0, 0],
        &[0x12, 0x01, 0x00, 0x40, 0, 0, 1, 0, 0xFF],
    ];
    for bytes in cases {
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        raw.write_all(bytes).unwrap();
        raw.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = raw.read_to_end(&mut rest);
        assert!(rest.is_empty(), "no answer to garbage: {rest:?}");
    }
    let mut client = connect(port, PASSWORD).await.expect("the server carries on");
    let one = client.simple_query("SELECT 1").await.unwrap().into_row().await.unwrap().unwrap();
    assert_eq!(one.get::<i32, _>(0), Some(1));
    let errorlog = std::fs::read_to_string(dir.path().join("ERRORLOG")).unwrap();
    assert!(errorlog.matches("TDS: connection from 127.0.0.1").count() >= 3, "{errorlog}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// TLS inside TDS: full encryption (Required) and login-only (Off), with the self-signed
/// certificate the server made at its first start.
#[tokio::test(flavor = "current_thread")]
async fn tiberius_over_tls_full_and_login_only() {
    let (dir, port, stop) = start();
    assert!(dir.path().join("tds_cert.pem").exists() && dir.path().join("tds_key.pem").exists());
    for level in [EncryptionLevel::Required, EncryptionLevel::On, EncryptionLevel::Off] {
        let mut client =
            connect_with(port, PASSWORD, level).await.unwrap_or_else(|e| panic!("{level:?}: {e}"));
        let row = client
            .query("SELECT @P1 * 2 AS doubled, REPLICATE('x', 5000) AS long_text", &[&21i32])
            .await
            .unwrap()
            .into_row()
            .await
            .unwrap()
            .expect("a row");
        assert_eq!(row.get::<i32, _>("doubled"), Some(42), "{level:?}");
        assert_eq!(
            row.get::<&str, _>("long_text").map(str::len),
            Some(5000),
            "{level:?}: a reply of several packets"
        );
        let Err(error) = client.simple_query("SELECT * FROM nope").await else { panic!("208") };
        assert_eq!(server_code(&error), Some(208));
    }
    let Err(error) = connect_with(port, "Wrong!Passw0rd", EncryptionLevel::Required).await else {
        panic!("a refused login over TLS")
    };
    assert_eq!(server_code(&error), Some(18456), "{error}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}
