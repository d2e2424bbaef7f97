//! RPC requests run in-process (no socket): sp_prepexec / sp_execute / sp_unprepare with the
//! handle in RETURNVALUE, a procedure's OUTPUT parameter and RETURN status, sp_tables, and
//! TRANSACTION_MANAGER-free error paths.

use engine::instance::InstanceConfig;
use tds::rpc::{self, Procedure, int_param, nvarchar_param};
use tds::server::{Prepared, run_batch, run_rpc};
use tsql::server::Server;
use tsql::session::Session;

fn session(dir: &std::path::Path) -> Session {
    let server = Server::start(InstanceConfig::new(dir)).unwrap();
    Session::new(&server)
}

fn call(
    session: &mut Session,
    prepared: &mut Prepared,
    procedure: Procedure,
    params: &[(&str, bool, Vec<u8>)],
) -> Vec<u8> {
    let rpc = rpc::decode(&rpc::encode(&procedure, params)).unwrap();
    run_rpc(session, prepared, rpc)
}

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A ROW token with one INTN(4) value.
fn int_row(value: i32) -> Vec<u8> {
    let mut row = vec![0xD1, 4];
    row.extend_from_slice(&value.to_le_bytes());
    row
}

/// A RETURNVALUE's INTN(4) value bytes at its end.
fn return_value_int(value: i32) -> Vec<u8> {
    let mut tail = vec![0x26, 4, 4];
    tail.extend_from_slice(&value.to_le_bytes());
    tail
}

#[test]
fn prepared_statements_run_by_handle_until_unprepared() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let mut prepared = Prepared::default();
    let reply = call(
        &mut s,
        &mut prepared,
        Procedure::Id(rpc::SP_PREPEXEC),
        &[
            ("@handle", true, int_param(None)),
            ("", false, nvarchar_param("@P1 int")),
            ("", false, nvarchar_param("SELECT @P1 * 2 AS doubled")),
            ("@P1", false, int_param(Some(21))),
        ],
    );
    assert!(holds(&reply, &int_row(42)), "the row 42 in {reply:02x?}");
    assert!(holds(&reply, &[0x79, 0, 0, 0, 0]), "RETURNSTATUS 0");
    assert!(
        reply.contains(&0xAC) && holds(&reply, &return_value_int(1)),
        "handle 1 in RETURNVALUE"
    );
    assert_eq!(reply[reply.len() - 13], 0xFE, "DONEPROC ends the reply");
    let again = call(
        &mut s,
        &mut prepared,
        Procedure::Id(rpc::SP_EXECUTE),
        &[("", false, int_param(Some(1))), ("@P1", false, int_param(Some(50)))],
    );
    assert!(holds(&again, &int_row(100)), "{again:02x?}");
    call(
        &mut s,
        &mut prepared,
        Procedure::Id(rpc::SP_UNPREPARE),
        &[("", false, int_param(Some(1)))],
    );
    let gone = call(
        &mut s,
        &mut prepared,
        Procedure::Id(rpc::SP_EXECUTE),
        &[("", false, int_param(Some(1)))],
    );
    assert!(holds(&gone, &8179i32.to_le_bytes()), "error 8179 for an unprepared handle");
}

#[test]
fn a_procedure_by_name_returns_its_output_parameter_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let mut prepared = Prepared::default();
    let created = run_batch(
        &mut s,
        "CREATE PROCEDURE add_one @x int, @y int OUTPUT AS BEGIN SET @y = @x + 1; RETURN 7 END",
    );
    assert!(!holds(&created, &[0xAA]), "created without an error token");
    let reply = call(
        &mut s,
        &mut prepared,
        Procedure::Name("dbo.add_one".into()),
        &[("@x", false, int_param(Some(9))), ("@y", true, int_param(None))],
    );
    assert!(holds(&reply, &[0x79, 7, 0, 0, 0]), "RETURNSTATUS 7 in {reply:02x?}");
    assert!(holds(&reply, &return_value_int(10)), "@y = 10 in RETURNVALUE");
    let tables = call(&mut s, &mut prepared, Procedure::Name("sp_tables".into()), &[]);
    assert_eq!(tables[0], 0x81, "sp_tables answers with a result set");
    assert!(holds(&tables, &tds::utf16("TABLE_QUALIFIER")));
    let missing = call(&mut s, &mut prepared, Procedure::Name("no_such_proc".into()), &[]);
    assert!(holds(&missing, &2812i32.to_le_bytes()), "2812 for a missing procedure");
}

/// A TRANSACTION_MANAGER request: ALL_HEADERS (22 bytes), then the request type.
fn tm(kind: u16) -> Vec<u8> {
    let mut out = tds::packet::ALL_HEADERS.to_vec();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

#[test]
fn transaction_manager_requests_begin_and_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let mut count = 0;
    run_batch(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    let begin = tds::server::transaction_manager(&mut s, &mut count, &tm(5)).unwrap();
    assert!(
        holds(&begin, &[0xE3, 11, 0, 8, 8, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
        "ENVCHANGE 8 with descriptor 1: {begin:02x?}"
    );
    run_batch(&mut s, "INSERT t VALUES (1)");
    let rollback = tds::server::transaction_manager(&mut s, &mut count, &tm(8)).unwrap();
    assert!(holds(&rollback, &[0xE3, 11, 0, 10, 0, 8, 1]), "ENVCHANGE 10: {rollback:02x?}");
    let counted = run_batch(&mut s, "SELECT COUNT(*) FROM t");
    assert!(holds(&counted, &int_row(0)), "the insert was rolled back");
    assert!(tds::server::transaction_manager(&mut s, &mut count, &tm(99)).is_err());
    assert!(tds::server::transaction_manager(&mut s, &mut count, &[1, 2]).is_err());
}

#[test]
fn sp_columns_by_name_lists_a_tables_columns() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    let mut prepared = Prepared::default();
    run_batch(&mut s, "CREATE TABLE people (id int PRIMARY KEY, name nvarchar(40) NULL)");
    let reply = call(
        &mut s,
        &mut prepared,
        Procedure::Name("sp_columns".into()),
        &[("@table_name", false, nvarchar_param("people"))],
    );
    assert_eq!(reply[0], 0x81, "a result set: {reply:02x?}");
    assert!(holds(&reply, &tds::utf16("COLUMN_NAME")) && holds(&reply, &tds::utf16("name")));
    assert!(holds(&reply, &tds::utf16("nvarchar")));
}
