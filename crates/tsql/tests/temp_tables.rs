//! Temporary tables and table variables across sessions and restarts: each session has its
//! own `#t`, a session's `#t` goes when the session ends, and one left by a process that ended
//! without dropping it goes when the server next starts. (One session's scoping rules are in
//! the golden script temp_tables.sql.)

mod common;

use common::{rows, run};
use engine::instance::InstanceConfig;
use tsql::server::Server;
use tsql::session::Session;

fn user_tables(session: &mut Session) -> Vec<Vec<String>> {
    rows(session, "SELECT COUNT(*) FROM sys.tables")
}

fn catalog_tables(server: &Server) -> Vec<String> {
    let db = server.database("master").expect("master");
    db.catalog().expect("catalog").tables().iter().map(|t| t.name.clone()).collect()
}

#[test]
fn each_session_has_its_own_temporary_table_of_a_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut first = Session::new(&server);
    let mut second = Session::new(&server);
    for (session, value) in [(&mut first, 1), (&mut second, 2)] {
        let (errors, _) =
            run(session, &format!("CREATE TABLE #t (a INT)\nINSERT #t VALUES ({value})"));
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert_eq!(rows(&mut first, "SELECT a FROM #t"), vec![vec!["1".to_string()]]);
    assert_eq!(rows(&mut second, "SELECT a FROM #t"), vec![vec!["2".to_string()]]);
    // Neither shows in the database's own views.
    assert_eq!(user_tables(&mut first), vec![vec!["0".to_string()]]);
    assert_eq!(catalog_tables(&server).len(), 2, "two stored tables");

    drop(second);
    assert_eq!(catalog_tables(&server).len(), 1, "the ended session's #t is dropped");
    assert_eq!(rows(&mut first, "SELECT a FROM #t"), vec![vec!["1".to_string()]]);
    let mut third = Session::new(&server);
    let (errors, _) = run(&mut third, "SELECT a FROM #t");
    assert_eq!(errors, vec![208], "another session's #t is not visible");
    drop(first);
    drop(third);
    assert!(catalog_tables(&server).is_empty());
}

#[test]
fn a_global_temporary_table_is_shared_until_its_session_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut owner = Session::new(&server);
    let mut other = Session::new(&server);
    let (errors, _) = run(&mut owner, "CREATE TABLE ##shared (a INT)\nINSERT ##shared VALUES (7)");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(rows(&mut other, "SELECT a FROM ##shared"), vec![vec!["7".to_string()]]);
    let (errors, _) = run(&mut other, "CREATE TABLE ##shared (b INT)");
    assert_eq!(errors, vec![2714]);
    drop(owner);
    let (errors, _) = run(&mut other, "SELECT a FROM ##shared");
    assert_eq!(errors, vec![208]);
}

#[test]
fn tables_a_killed_process_left_are_dropped_at_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        let (errors, _) = run(
            &mut session,
            "CREATE TABLE #left (a INT)\nDECLARE @v TABLE (b INT)\nCREATE TABLE kept (c INT)",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(catalog_tables(&server).len(), 2, "#left and kept (the batch ended @v)");
        // The process ends without the session's end running (as a kill would).
        std::mem::forget(session);
        server.shutdown().expect("shutdown");
    }
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    assert_eq!(catalog_tables(&server), vec!["kept".to_string()]);
    let mut session = Session::new(&server);
    let (errors, _) = run(&mut session, "CREATE TABLE #left (a INT)");
    assert!(errors.is_empty(), "{errors:?}");
}

/// A table variable whose batch ended inside a transaction that a crash leaves open: the
/// transaction's log holds the variable's rows, so recovery must find the variable's table to
/// undo them. It is dropped only once the transaction ends (here, never: the process ends),
/// and the next start recovers the database and drops it. (Dropped at the batch's end, the
/// table was gone when recovery undid its row: 9004, and the database SUSPECT.)
#[test]
fn a_table_variable_of_a_transaction_left_open_by_a_crash_is_recovered_then_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        let (errors, _) = run(
            &mut session,
            "CREATE TABLE kept (c INT)\nBEGIN TRAN\nINSERT kept VALUES (1)\n\
             DECLARE @v TABLE (b INT)\nINSERT @v VALUES (1), (2)",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (errors, _) = run(&mut session, "INSERT kept VALUES (2)");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(catalog_tables(&server).len(), 2, "kept, and @v until its transaction ends");
        std::mem::forget(session);
        server.shutdown().expect("shutdown");
    }
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    assert_eq!(catalog_tables(&server), vec!["kept".to_string()]);
    let mut session = Session::new(&server);
    assert_eq!(
        common::rows(&mut session, "SELECT COUNT(*) FROM kept"),
        vec![vec!["0".to_string()]]
    );
    let (errors, _) = run(&mut session, "DBCC CHECKDB WITH NO_INFOMSGS");
    assert!(errors.is_empty(), "{errors:?}");
}

/// The same transaction, ended by the session: the variable goes once it ends.
#[test]
fn a_table_variable_whose_batch_ends_in_a_transaction_goes_when_the_transaction_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let (errors, _) =
        run(&mut session, "BEGIN TRAN\nDECLARE @v TABLE (b INT)\nINSERT @v VALUES (1)");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(catalog_tables(&server).len(), 1, "until the transaction ends");
    let (errors, _) = run(&mut session, "ROLLBACK");
    assert!(errors.is_empty(), "{errors:?}");
    assert!(catalog_tables(&server).is_empty());
}
