//! The database registry (the instance's list of databases, SQL Server's sys.databases rows in
//! master) on a disk that fills: it is written through the engine's I/O seam, and a CREATE or
//! DROP DATABASE, or an ALTER DATABASE SET OFFLINE or ONLINE, whose registry write fails leaves
//! everything as it was, files included.
//! Also: a server attached to an instance its caller goes on using leaves the instance's
//! directory lock alone when it shuts down.

mod common;

use common::{files_in, rows, run};
use engine::instance::{Instance, InstanceConfig};
use engine::io::{FaultIo, FaultPlan};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use tsql::server::Server;
use tsql::session::Session;

/// A server on a fault-injecting backend in `dir`.
fn server_on_faults(dir: &Path) -> (Arc<Mutex<FaultPlan>>, Arc<Server>) {
    let fault_io = FaultIo::new(engine::io::std_io());
    let plan = fault_io.plan();
    let io: Arc<dyn engine::io::Io> = Arc::new(fault_io);
    let instance =
        Instance::start_with(InstanceConfig::new(dir), io, engine::clock::system_clock())
            .expect("instance");
    (plan, Server::start_on(instance).expect("server"))
}

/// Shuts the server down and starts the instance again on the real backend, with a session.
fn restart(dir: &Path, server: Arc<Server>, session: Session) -> (Arc<Server>, Session) {
    drop(session);
    server.shutdown().expect("shutdown");
    drop(server);
    let server = Server::start(InstanceConfig::new(dir)).expect("restart");
    let session = Session::new(&server);
    (server, session)
}

/// The next write of the registry's new copy finds the disk full.
fn fill_the_disk_for_the_registry(plan: &Mutex<FaultPlan>) {
    let mut plan = plan.lock();
    plan.only_paths_ending = Some("databases.new".into());
    plan.enospc_after_bytes = Some(0);
}

/// Runs `sql`, which must fail with one error; its number and text.
fn one_error(session: &mut Session, sql: &str) -> (i32, String) {
    let mut found = Vec::new();
    session.execute(sql, &mut |output| {
        if let tsql::server::Output::Error { error, .. } = output {
            found.push((error.number, error.message));
        }
    });
    assert_eq!(found.len(), 1, "{sql}: {found:?}");
    found.remove(0)
}

fn names_of_files(dir: &Path, stem: &str) -> Vec<String> {
    let names = files_in(dir).into_iter().filter_map(|p| Some(p.file_name()?.to_str()?.to_owned()));
    names.filter(|name| name.starts_with(stem)).collect()
}

#[test]
fn a_create_database_whose_registry_cannot_be_written_leaves_no_database_and_no_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (plan, server) = server_on_faults(dir.path());
    let mut session = Session::new(&server);
    fill_the_disk_for_the_registry(&plan);

    let (number, message) = one_error(&mut session, "CREATE DATABASE sales");
    assert_eq!(number, 5123);
    assert!(message.contains("operating system error 28(No space left on device)"), "{message}");
    assert!(rows(&mut session, "SELECT name FROM sys.databases WHERE name = 'sales'").is_empty());
    assert_eq!(names_of_files(dir.path(), "sales"), Vec::<String>::new());
    assert_eq!(run(&mut session, "USE sales").0, [911]);

    // The disk has room again: the same name is free, and the database outlives a restart.
    plan.lock().enospc_after_bytes = None;
    assert_eq!(run(&mut session, "CREATE DATABASE sales").0, Vec::<i32>::new());
    let created = "SELECT CONVERT(varchar(23), create_date, 121) FROM sys.databases \
                   WHERE name = 'sales'";
    let created_before = rows(&mut session, created);
    let (server, mut session) = restart(dir.path(), server, session);
    assert_eq!(
        rows(&mut session, "SELECT name FROM sys.databases WHERE name = 'sales'"),
        [["sales"]]
    );
    // create_date is the boot page's: the same after the restart.
    assert_eq!(rows(&mut session, created), created_before);
    drop(session);
    server.shutdown().expect("shutdown");
}

#[test]
fn a_drop_database_whose_registry_cannot_be_written_leaves_the_database_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (plan, server) = server_on_faults(dir.path());
    let mut session = Session::new(&server);
    let setup = "CREATE DATABASE sales
CREATE DATABASE archive
GO
ALTER DATABASE archive SET OFFLINE
USE sales
CREATE TABLE t (id INT PRIMARY KEY)
INSERT t VALUES (1), (2), (3)
USE master";
    for batch in setup.split("GO\n") {
        assert_eq!(run(&mut session, batch).0, Vec::<i32>::new(), "{batch}");
    }
    let sales_files = names_of_files(dir.path(), "sales");
    assert_eq!(sales_files.len(), 2, "{sales_files:?}");
    fill_the_disk_for_the_registry(&plan);

    assert_eq!(one_error(&mut session, "DROP DATABASE sales").0, 5123);
    assert_eq!(rows(&mut session, "USE sales SELECT COUNT(*) FROM t USE master"), [["3"]]);
    assert_eq!(names_of_files(dir.path(), "sales"), sales_files);
    // An OFFLINE database is only its registry entry: it stays listed.
    plan.lock().enospc_after_bytes = Some(0);
    assert_eq!(one_error(&mut session, "DROP DATABASE archive").0, 5123);
    let state = rows(&mut session, "SELECT state_desc FROM sys.databases WHERE name = 'archive'");
    assert_eq!(state, [["OFFLINE"]]);

    // Its system tasks run again: a checkpoint, then a restart finds both as they were.
    assert_eq!(run(&mut session, "USE sales CHECKPOINT USE master").0, Vec::<i32>::new());
    let (server, mut session) = restart(dir.path(), server, session);
    assert_eq!(rows(&mut session, "USE sales SELECT COUNT(*) FROM t USE master"), [["3"]]);
    let state = rows(&mut session, "SELECT state_desc FROM sys.databases WHERE name = 'archive'");
    assert_eq!(state, [["OFFLINE"]]);

    // With room on the disk, DROP DATABASE deletes the files.
    assert_eq!(run(&mut session, "DROP DATABASE sales").0, Vec::<i32>::new());
    assert_eq!(names_of_files(dir.path(), "sales"), Vec::<String>::new());
    drop(session);
    server.shutdown().expect("shutdown");
}

#[test]
fn set_offline_and_set_online_take_effect_only_once_the_registry_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (plan, server) = server_on_faults(dir.path());
    let mut session = Session::new(&server);
    let setup = "CREATE DATABASE sales
USE sales
CREATE TABLE t (id INT PRIMARY KEY)
INSERT t VALUES (1), (2)
USE master";
    assert_eq!(run(&mut session, setup).0, Vec::<i32>::new());
    let state_of_sales = "SELECT state_desc FROM sys.databases WHERE name = 'sales'";

    fill_the_disk_for_the_registry(&plan);
    let errors = run(&mut session, "ALTER DATABASE sales SET OFFLINE").0;
    assert_eq!(errors.first(), Some(&5123), "{errors:?}");
    assert_eq!(rows(&mut session, state_of_sales), [["ONLINE"]]);
    assert_eq!(rows(&mut session, "USE sales SELECT COUNT(*) FROM t USE master"), [["2"]]);

    plan.lock().enospc_after_bytes = None;
    assert_eq!(run(&mut session, "ALTER DATABASE sales SET OFFLINE").0, Vec::<i32>::new());
    plan.lock().enospc_after_bytes = Some(0);
    let errors = run(&mut session, "ALTER DATABASE sales SET ONLINE").0;
    assert_eq!(errors.first(), Some(&5123), "{errors:?}");
    assert_eq!(rows(&mut session, state_of_sales), [["OFFLINE"]]);
    assert_eq!(run(&mut session, "USE sales").0, [942]);

    // A restart finds it as the registry last said: OFFLINE; SET ONLINE then opens it whole.
    plan.lock().enospc_after_bytes = None;
    let (server, mut session) = restart(dir.path(), server, session);
    assert_eq!(rows(&mut session, state_of_sales), [["OFFLINE"]]);
    assert_eq!(run(&mut session, "ALTER DATABASE sales SET ONLINE").0, Vec::<i32>::new());
    assert_eq!(rows(&mut session, "USE sales SELECT COUNT(*) FROM t USE master"), [["2"]]);
    drop(session);
    server.shutdown().expect("shutdown");
}

#[test]
fn a_server_attached_to_a_running_instance_leaves_its_directory_lock_with_the_instance() {
    let dir = tempfile::tempdir().expect("temp dir");
    let instance = Instance::start(InstanceConfig::new(dir.path())).expect("instance");
    let server = Server::attach(&instance).expect("server");
    server.shutdown().expect("shutdown");
    drop(server);
    // The instance still runs, so a second one on its directory is refused.
    let second = Instance::start(InstanceConfig::new(dir.path()));
    let error = second.err().expect("the directory is still locked");
    assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy, "{error}");
    instance.release_data_directory();
    drop(instance);
    let third = Instance::start(InstanceConfig::new(dir.path())).expect("released at the end");
    third.release_data_directory();
}
