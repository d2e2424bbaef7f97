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

/// COLMETADATA describes a column by its declared type, so an empty result or an all-NULL
/// column still says int or decimal(9,2) (bug: every such column was NVARCHAR, the type of
/// no value); a computed column without one still takes its values' type.
#[test]
fn result_columns_are_described_by_their_declared_types() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    run_batch(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, amount decimal(9,2) NULL, note varchar(10) NULL)",
    );
    let int4 = [0x26, 4];
    let decimal_9_2 = [0x6A, 17, 9, 2];
    let empty = run_batch(&mut s, "SELECT id, amount FROM t WHERE id = 0");
    assert_eq!(empty[0], 0x81, "{empty:02x?}");
    assert!(holds(&empty, &int4) && holds(&empty, &decimal_9_2), "{empty:02x?}");
    run_batch(&mut s, "INSERT t VALUES (1, NULL, NULL), (2, 3.5, 'x')");
    let nulls = run_batch(&mut s, "SELECT amount AS a FROM t WHERE id = 1");
    assert!(holds(&nulls, &decimal_9_2), "{nulls:02x?}");
    let from_derived = run_batch(&mut s, "SELECT d.amount FROM (SELECT amount FROM t) AS d");
    assert!(holds(&from_derived, &decimal_9_2), "{from_derived:02x?}");
    let cast = run_batch(&mut s, "SELECT CAST(NULL AS int) AS n");
    assert!(holds(&cast, &int4), "{cast:02x?}");
    let variable = run_batch(&mut s, "DECLARE @v bigint; SELECT @v AS v");
    assert!(holds(&variable, &[0x26, 8]), "{variable:02x?}");
    // Aggregates whose type does not depend on the values: an empty MAX is still decimal(9,2).
    let aggregates = run_batch(
        &mut s,
        "SELECT MAX(amount) AS m, COUNT(*) AS c, COUNT_BIG(*) AS b FROM t WHERE id = 0",
    );
    assert!(
        holds(&aggregates, &decimal_9_2) && holds(&aggregates, &[0x26, 8]),
        "{aggregates:02x?}"
    );
    // No declared type: the values' (an int), as before.
    let computed = run_batch(&mut s, "SELECT id + 1 AS next FROM t WHERE id = 1");
    assert!(holds(&computed, &int4), "{computed:02x?}");
}

/// The transaction ENVCHANGEs (type, descriptor) of a reply, in order: ENVCHANGE 8 carries
/// the descriptor as its new value, 9 and 10 as their old value.
fn transaction_changes(reply: &[u8]) -> Vec<(u8, u64)> {
    let mut out = Vec::new();
    for at in 0..reply.len().saturating_sub(13) {
        let t = &reply[at..at + 14];
        let descriptor = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap());
        match t {
            [0xE3, 11, 0, 8, 8, rest @ .., 0] => out.push((8, descriptor(rest))),
            [0xE3, 11, 0, kind @ (9 | 10), 0, 8, rest @ ..] => out.push((*kind, descriptor(rest))),
            _ => {}
        }
    }
    out
}

#[test]
fn transaction_manager_requests_begin_and_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    run_batch(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    let begin = tds::server::transaction_manager(&mut s, &tm(5)).unwrap();
    let began = transaction_changes(&begin);
    assert!(matches!(began[..], [(8, id)] if id > 0), "ENVCHANGE 8: {begin:02x?}");
    run_batch(&mut s, "INSERT t VALUES (1)");
    let rollback = tds::server::transaction_manager(&mut s, &tm(8)).unwrap();
    assert_eq!(transaction_changes(&rollback), vec![(10, began[0].1)], "{rollback:02x?}");
    let counted = run_batch(&mut s, "SELECT COUNT(*) FROM t");
    assert!(holds(&counted, &int_row(0)), "the insert was rolled back");
    assert!(tds::server::transaction_manager(&mut s, &tm(99)).is_err());
    assert!(tds::server::transaction_manager(&mut s, &[1, 2]).is_err());
    // COMMIT with no transaction: 3902 and no ENVCHANGE.
    let commit = tds::server::transaction_manager(&mut s, &tm(7)).unwrap();
    assert!(holds(&commit, &3902i32.to_le_bytes()) && transaction_changes(&commit).is_empty());
}

/// BEGIN/COMMIT/ROLLBACK TRAN typed in batches reach the client as ENVCHANGE 8/9/10 (what
/// drivers track the transaction descriptor by), in order, for the outermost transaction
/// only; a statement's own autocommit transaction is not announced; an implicit transaction
/// is.
#[test]
fn transactions_in_batches_send_their_envchanges() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(dir.path());
    run_batch(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    assert!(transaction_changes(&run_batch(&mut s, "INSERT t VALUES (1)")).is_empty());
    let batch = run_batch(
        &mut s,
        "BEGIN TRAN; INSERT t VALUES (2); BEGIN TRAN; COMMIT; COMMIT; BEGIN TRAN; INSERT t VALUES (3); ROLLBACK",
    );
    let changes = transaction_changes(&batch);
    assert!(
        matches!(changes[..], [(8, a), (9, b), (8, c), (10, d)] if a == b && c == d && a != c),
        "{changes:?}"
    );
    // The begin comes before the INSERT's row count (DONE with DONE_COUNT, 0xFD ... 0x10).
    let begin_at = batch.windows(5).position(|w| w == [0xE3, 11, 0, 8, 8]).unwrap();
    let done_at = batch.windows(3).position(|w| w == [0xFD, 0x11, 0]).unwrap();
    assert!(begin_at < done_at, "{batch:02x?}");
    let implicit = run_batch(&mut s, "SET IMPLICIT_TRANSACTIONS ON; INSERT t VALUES (4)");
    assert!(matches!(transaction_changes(&implicit)[..], [(8, _)]), "{implicit:02x?}");
    let ended = run_batch(&mut s, "COMMIT; SET IMPLICIT_TRANSACTIONS OFF");
    assert!(matches!(transaction_changes(&ended)[..], [(9, _)]), "{ended:02x?}");
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
