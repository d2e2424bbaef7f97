//! The T-SQL front end's cost (issue 5 goal: parse, bind and plan of a simple statement
//! <= 20 us median). `cargo bench -p extentdb-tsql --bench frontend`.
//!
//! - `parse`: the front end alone (tokens, sqlparser, our own statements) on a point query
//!   and on seed 001's INSERT.
//! - `execute`: the whole statement through a session, which adds what binding and planning
//!   are here (name resolution against the catalog, the choice of an index seek) and the
//!   execution itself: the point query seeks one row of a 1,000-row clustered table. This is
//!   an upper bound for parse + bind + plan. Run once with the same text (the batch cache
//!   holds its parse) and once with a new text each time (parsed every run).

use criterion::{Criterion, criterion_group, criterion_main};
use engine::instance::InstanceConfig;
use std::hint::black_box;
use tsql::server::Server;
use tsql::session::Session;

const POINT_QUERY: &str = "SELECT c1, c2 FROM dbo.t WHERE id = 500";
const SEED_INSERT: &str = "INSERT INTO MyBigTable (c1, c2, c3) VALUES (NEWID(), GETDATE(), 'a')";

fn parse(c: &mut Criterion) {
    c.bench_function("parse point query", |b| {
        b.iter(|| tsql::front::parse_batch(black_box(POINT_QUERY)).expect("parses"))
    });
    c.bench_function("parse seed 001 insert", |b| {
        b.iter(|| tsql::front::parse_batch(black_box(SEED_INSERT)).expect("parses"))
    });
}

fn execute(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let mut session = Session::new(&server);
    let setup = "SET NOCOUNT ON\nCREATE TABLE t (id INT PRIMARY KEY, c1 INT, c2 VARCHAR(20))\n\
                 DECLARE @i INT = 0\nWHILE @i < 1000 BEGIN INSERT t VALUES (@i, @i * 2, 'row') SET @i += 1 END";
    assert!(session.execute(setup, &mut |_| {}), "setup runs");
    c.bench_function("execute point query (parse + bind + plan + seek)", |b| {
        b.iter(|| {
            let mut rows = 0;
            session.execute(black_box(POINT_QUERY), &mut |out| {
                if let tsql::server::Output::Rows(set) = out {
                    rows = set.rows.len();
                }
            });
            assert_eq!(rows, 1);
        })
    });
    let mut n = 0u64;
    c.bench_function("execute point query, new text each run (parse not cached)", |b| {
        b.iter(|| {
            n += 1;
            let sql = format!("SELECT c1, c2 FROM dbo.t WHERE id = {} -- {n}", n % 1000);
            let mut rows = 0;
            session.execute(black_box(&sql), &mut |out| {
                if let tsql::server::Output::Rows(set) = out {
                    rows = set.rows.len();
                }
            });
            assert_eq!(rows, 1);
        })
    });
    drop(session);
    server.shutdown().expect("shutdown");
}

criterion_group!(benches, parse, execute);
criterion_main!(benches);
