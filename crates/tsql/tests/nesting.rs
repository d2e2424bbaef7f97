//! Deeply nested batches: up to the nesting limit they run, on any worker's stack (each test
//! runs its session on a thread with a 2 MB stack, a TDS connection thread's size, in a debug
//! build, whose frames are the largest); past it they are SQL Server's 191 before anything
//! runs. Before, a batch of a few hundred nested BEGINs overflowed the stack and ended the
//! process (the server, over TDS).

mod common;

use common::run;
use engine::instance::InstanceConfig;
use std::sync::Arc;
use tsql::nesting::MAX_STATEMENT_NESTING;
use tsql::server::Server;
use tsql::session::Session;

const NESTED_TOO_DEEPLY: &str = "Some part of your SQL statement is nested too deeply. Rewrite \
     the query or break it up into smaller queries.";

/// Runs `batches` in one session on a thread with a 2 MB stack; each batch's errors and output.
fn run_on_small_stack(server: &Arc<Server>, batches: Vec<String>) -> Vec<(Vec<i32>, String)> {
    let server = server.clone();
    let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        let mut session = Session::new(&server);
        batches.iter().map(|batch| run(&mut session, batch)).collect::<Vec<_>>()
    });
    worker.expect("thread").join().expect("no overflow")
}

fn nested_blocks(depth: u32, inner: &str) -> String {
    let depth = depth as usize;
    format!("{}{inner} {}", "BEGIN ".repeat(depth), "END ".repeat(depth))
}

#[test]
fn a_batch_nested_to_the_limit_runs_and_one_level_deeper_is_191() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let limit = MAX_STATEMENT_NESTING;
    let else_if_chain: String =
        (0..limit - 1).map(|i| format!("IF @v = {i} SELECT {i} AS branch ELSE ")).collect();
    let batches = vec![
        // limit - 1 blocks and the statement inside them: `limit` levels, the most that parse.
        nested_blocks(limit - 1, "SELECT 'deep' AS reached"),
        format!("DECLARE @v INT = {} {else_if_chain} SELECT 'none' AS branch", limit - 2),
        format!("WHILE 1 = 1 {}", nested_blocks(limit - 2, "BREAK")),
        format!("PRINT 'not run' {}", nested_blocks(limit, "SELECT 1 AS too_deep")),
        format!("PRINT 'not run' {}", nested_blocks(5_000, "SELECT 1 AS too_deep")),
        format!("{}SELECT 1 AS too_deep", "IF 1 = 1 ".repeat(5_000)),
        "SELECT 'still here' AS after".into(),
    ];
    let results = run_on_small_stack(&server, batches);
    assert_eq!(results[0].0, Vec::<i32>::new());
    assert!(results[0].1.contains("deep"), "{}", results[0].1);
    assert_eq!(results[1].0, Vec::<i32>::new());
    assert!(results[1].1.contains(&(limit - 2).to_string()), "{}", results[1].1);
    assert!(!results[1].1.contains("none"), "{}", results[1].1);
    assert_eq!(results[2].0, Vec::<i32>::new());
    for (errors, text) in &results[3..6] {
        assert_eq!(errors, &[191]);
        assert!(text.contains("Msg 191, Level 15, State 1, Line 1"), "{text}");
        assert!(text.contains(NESTED_TOO_DEEPLY), "{text}");
        assert!(!text.contains("not run"), "nothing of the batch ran: {text}");
    }
    assert!(results[6].1.contains("still here"), "{}", results[6].1);
    server.shutdown().expect("shutdown");
}

#[test]
fn procedures_nested_32_deep_each_with_deep_blocks_run_on_a_small_stack() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let body = nested_blocks(
        200,
        "IF @n > 1 BEGIN SET @n -= 1 EXEC deep @n END ELSE SELECT @@NESTLEVEL AS level",
    );
    let batches = vec![
        format!("CREATE PROCEDURE deep @n INT AS {body}"),
        "EXEC deep 32".into(),
        "EXEC deep 33".into(),
    ];
    let results = run_on_small_stack(&server, batches);
    assert_eq!(results[0].0, Vec::<i32>::new());
    assert_eq!(results[1].0, Vec::<i32>::new());
    assert!(results[1].1.contains("32"), "{}", results[1].1);
    assert_eq!(results[2].0, [217]);
    server.shutdown().expect("shutdown");
}

#[test]
fn subqueries_nested_32_deep_and_more_evaluate_on_a_small_stack() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(InstanceConfig::new(dir.path())).expect("server");
    let nested = |depth: usize, innermost: &str| {
        format!("SELECT {}{innermost}{} AS x", "(SELECT ".repeat(depth), ")".repeat(depth))
    };
    let batches = vec![
        "CREATE TABLE t (a INT PRIMARY KEY)".into(),
        "INSERT t VALUES (7), (8)".into(),
        nested(32, "MAX(a) FROM t"),
        nested(40, "MIN(a) FROM t"),
        format!("SELECT {}1{} AS x", "(".repeat(90), ")".repeat(90)),
        nested(60, "1"),
    ];
    let results = run_on_small_stack(&server, batches);
    assert_eq!(results[2].0, Vec::<i32>::new(), "{}", results[2].1);
    assert!(results[2].1.contains('8'), "{}", results[2].1);
    assert_eq!(results[3].0, Vec::<i32>::new(), "{}", results[3].1);
    assert!(results[3].1.contains('7'), "{}", results[3].1);
    assert_eq!(results[4].0, Vec::<i32>::new(), "{}", results[4].1);
    assert_eq!(results[5].0, [191]);
    server.shutdown().expect("shutdown");
}
