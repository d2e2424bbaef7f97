//! ALTER TABLE survives a restart: the rebuilt table's catalog rows, allocation units and
//! rows are what the server reads back, and the old units are gone from the database.

mod common;

use common::{rows, run};
use engine::instance::InstanceConfig;
use tsql::server::Server;
use tsql::session::Session;

#[test]
fn an_altered_table_reads_back_after_a_restart_and_its_old_units_are_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let units_before;
    {
        let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
        let mut session = Session::new(&server);
        let setup = "CREATE TABLE t (id int PRIMARY KEY, name varchar(20), qty varchar(5))\n\
                     CREATE INDEX ix_name ON t (name)\n\
                     INSERT t VALUES (1, 'one', '10'), (2, 'two', '20'), (3, 'three', NULL)";
        let (errors, text) = run(&mut session, setup);
        assert!(errors.is_empty(), "{text}");
        units_before =
            rows(&mut session, "SELECT COUNT(*) FROM sys.allocation_units")[0][0].clone();
        let alter = "ALTER TABLE t ADD added int NOT NULL DEFAULT 7\n\
                     ALTER TABLE t ALTER COLUMN qty int\n\
                     ALTER TABLE t DROP COLUMN added";
        let (errors, text) = run(&mut session, alter);
        assert!(errors.is_empty(), "{text}");
        server.shutdown().expect("shutdown");
    }
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server restarts");
    let mut session = Session::new(&server);
    let columns = rows(
        &mut session,
        "SELECT c.name, y.name FROM sys.columns c JOIN sys.types y ON y.user_type_id = c.user_type_id \
         WHERE c.object_id = OBJECT_ID('t') ORDER BY c.column_id",
    );
    let columns: Vec<(String, String)> =
        columns.into_iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let expected = [("id", "int"), ("name", "varchar"), ("qty", "int")];
    let expected: Vec<(String, String)> =
        expected.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    assert_eq!(columns, expected);
    let data = rows(&mut session, "SELECT id, name, qty * 2 FROM t ORDER BY id");
    assert_eq!(data, [["1", "one", "20"], ["2", "two", "40"], ["3", "three", "NULL"]]);
    let by_index = rows(&mut session, "SELECT id FROM t WHERE name = 'two'");
    assert_eq!(by_index, [["2"]]);
    // Each rebuild made new units and left the old ones to the commit: the database holds as
    // many units as before the three statements.
    let units_after = rows(&mut session, "SELECT COUNT(*) FROM sys.allocation_units")[0][0].clone();
    assert_eq!(units_after, units_before);
    let (errors, text) = run(&mut session, "DBCC CHECKDB WITH NO_INFOMSGS");
    assert!(errors.is_empty() && text.trim().is_empty(), "{text}");
}
