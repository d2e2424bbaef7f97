//! The catalog: tables and indexes kept in system tables, transactional DDL (a rolled-back
//! CREATE TABLE leaves neither rows nor units), nonclustered indexes kept in step with their
//! table, and tables that come back after a restart and after a crash.

mod common;

use common::{Lab, lab, size};
use engine::catalog::{ColumnDef, IndexSpec, RowLocator, TableSpec};
use engine::database::{Database, DatabaseSpec, FileSpec};
use engine::record::{SqlType, Value};

fn spec() -> DatabaseSpec {
    DatabaseSpec {
        name: "Shop".into(),
        primary: vec![FileSpec::new("shop_data", "shop.mdf").size(size("4MB"))],
        filegroups: Vec::new(),
        logs: vec![FileSpec::new("shop_log", "shop.ldf").size(size("4MB")).growth(size("4MB"))],
        mixed_page_allocation: false,
    }
}

fn orders_spec(clustered: bool) -> TableSpec {
    let mut id = ColumnDef::new("id", SqlType::Int, false);
    id.identity = Some((1, 1));
    let mut note = ColumnDef::new("note", SqlType::VarChar(40), true);
    note.default_sql = Some("'none'".into());
    TableSpec {
        name: "Orders".into(),
        columns: vec![id, ColumnDef::new("customer", SqlType::Int, false), note],
        indexes: vec![IndexSpec {
            name: "PK_Orders".into(),
            clustered,
            unique: true,
            primary_key: true,
            key_columns: vec![0],
            filegroup: None,
        }],
        filegroup: None,
    }
}

fn by_customer() -> IndexSpec {
    IndexSpec {
        name: "IX_customer".into(),
        clustered: false,
        unique: false,
        primary_key: false,
        key_columns: vec![1],
        filegroup: None,
    }
}

fn row(id: i32, customer: i32) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(customer), Value::Text(format!("order {id}"))]
}

fn ids(rows: &[(RowLocator, Vec<Value>)]) -> Vec<i32> {
    let mut ids: Vec<i32> = rows
        .iter()
        .map(|(_, r)| match r[0] {
            Value::Int(id) => id,
            ref other => panic!("{other:?}"),
        })
        .collect();
    ids.sort();
    ids
}

fn create(db: &Database, spec: &TableSpec) {
    db.begin_tran().unwrap();
    db.catalog().unwrap().create_table(db, spec).unwrap();
    db.commit_tran().unwrap();
}

fn dbo_units(db: &Database) -> usize {
    db.allocation_units().iter().filter(|(_, name)| name.starts_with("dbo.")).count()
}

#[test]
fn a_table_and_its_indexes_survive_a_restart() {
    let mut lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    create(&db, &orders_spec(true));
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    catalog.create_index(&db, "orders", &by_customer()).unwrap();
    let table = catalog.table("ORDERS").expect("names are case-insensitive");
    for id in 1..=50 {
        table.insert(&db, &row(id, id % 5)).unwrap();
    }
    db.commit_tran().unwrap();
    db.close().unwrap();
    lab.restart();

    let db = Database::open(&lab.instance, &lab.path("shop.mdf")).unwrap();
    let table = db.catalog().unwrap().table("Orders").expect("the table is in the catalog");
    assert_eq!(table.columns.len(), 3);
    assert_eq!(table.columns[0].identity, Some((1, 1)));
    assert_eq!(table.columns[2].default_sql.as_deref(), Some("'none'"));
    assert_eq!(table.indexes.len(), 2);
    assert_eq!(table.indexes[1].name, "IX_customer");
    assert_eq!(ids(&table.rows(&db).unwrap()), (1..=50).collect::<Vec<_>>());
    let key = [Value::Int(3)];
    let found = table.index_range(&db, 1, Some(&key), Some(&key)).unwrap();
    assert_eq!(ids(&found), vec![3, 8, 13, 18, 23, 28, 33, 38, 43, 48]);
    assert_eq!(table.next_identity(&db).unwrap(), Some(51), "identity goes on after the rows");
}

#[test]
fn a_rolled_back_create_table_leaves_nothing() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    let table = catalog.create_table(&db, &orders_spec(false)).unwrap();
    table.insert(&db, &row(1, 1)).unwrap();
    assert!(catalog.table("Orders").is_some());
    assert_eq!(dbo_units(&db), 2, "a heap and its primary key's nonclustered index");
    db.rollback_tran().unwrap();
    assert!(catalog.table("Orders").is_none());
    assert_eq!(dbo_units(&db), 0, "the rollback dropped the table's units");
    assert!(db.check_allocation().is_empty());
}

#[test]
fn drop_table_frees_its_units_only_at_commit() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    create(&db, &orders_spec(true));
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    catalog.drop_table(&db, "Orders").unwrap();
    assert!(catalog.table("Orders").is_none());
    assert_eq!(dbo_units(&db), 1, "kept until the commit");
    db.rollback_tran().unwrap();
    assert!(catalog.table("Orders").is_some(), "the rollback brings the table back");
    db.begin_tran().unwrap();
    catalog.drop_table(&db, "Orders").unwrap();
    db.commit_tran().unwrap();
    assert_eq!(dbo_units(&db), 0);
    let error = {
        db.begin_tran().unwrap();
        let e = catalog.drop_table(&db, "Orders").unwrap_err();
        db.rollback_tran().unwrap();
        e
    };
    assert_eq!((error.number, error.severity, error.state), (3701, 11, 5));
}

#[test]
fn nonclustered_indexes_follow_updates_and_deletes_of_a_heap() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    create(&db, &orders_spec(false));
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    catalog.create_index(&db, "Orders", &by_customer()).unwrap();
    let table = catalog.table("Orders").unwrap();
    assert!(table.is_heap());
    for id in 1..=20 {
        table.insert(&db, &row(id, 1)).unwrap();
    }
    for (locator, old) in table.rows(&db).unwrap() {
        if let Value::Int(id) = old[0] {
            if id % 2 == 0 {
                table.delete(&db, &locator, &old).unwrap();
            } else {
                table.update(&db, &locator, &old, &row(id, 2)).unwrap();
            }
        }
    }
    db.commit_tran().unwrap();
    let one = [Value::Int(1)];
    let two = [Value::Int(2)];
    assert!(table.index_range(&db, 2, Some(&one), Some(&one)).unwrap().is_empty());
    assert_eq!(ids(&table.index_range(&db, 2, Some(&two), Some(&two)).unwrap()).len(), 10);
    let pk = [Value::Int(7)];
    assert_eq!(ids(&table.index_range(&db, 1, Some(&pk), Some(&pk)).unwrap()), vec![7]);
    let duplicate = {
        db.begin_tran().unwrap();
        let e = table.insert(&db, &row(7, 9)).unwrap_err();
        db.rollback_tran().unwrap();
        e
    };
    assert_eq!(duplicate.number, 2627, "the nonclustered primary key is unique");
}

#[test]
fn a_clustered_index_on_a_heap_rebuilds_the_table() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let mut heap_spec = orders_spec(false);
    heap_spec.indexes.clear();
    create(&db, &heap_spec);
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    catalog.create_index(&db, "Orders", &by_customer()).unwrap();
    let table = catalog.table("Orders").unwrap();
    for id in [5, 3, 9, 1] {
        table.insert(&db, &row(id, id)).unwrap();
    }
    let clustered = IndexSpec { name: "CIX".into(), clustered: true, ..by_customer() };
    catalog.create_index(&db, "Orders", &clustered).unwrap();
    db.commit_tran().unwrap();
    let table = catalog.table("Orders").unwrap();
    assert!(!table.is_heap());
    assert_eq!(dbo_units(&db), 2, "the heap's unit went at commit");
    let in_order: Vec<i32> = table
        .rows(&db)
        .unwrap()
        .iter()
        .map(|(_, r)| if let Value::Int(id) = r[0] { id } else { 0 })
        .collect();
    assert_eq!(in_order, vec![1, 3, 5, 9], "rows come in clustered key order");
    let nine = [Value::Int(9)];
    assert_eq!(ids(&table.index_range(&db, 1, Some(&nine), Some(&nine)).unwrap()), vec![9]);
    assert!(db.check_allocation().is_empty());
}

#[test]
fn an_uncommitted_create_table_is_gone_after_a_crash() {
    let mut lab: Lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    create(&db, &orders_spec(true));
    let catalog = db.catalog().unwrap();
    db.begin_tran().unwrap();
    let mut other = orders_spec(true);
    other.name = "Pending".into();
    other.indexes[0].name = "PK_Pending".into();
    catalog.create_table(&db, &other).unwrap();
    db.log().flush_all().unwrap();
    db.crash();
    lab.restart();
    let db = Database::open(&lab.instance, &lab.path("shop.mdf")).unwrap();
    let catalog = db.catalog().unwrap();
    assert!(catalog.table("Orders").is_some());
    assert!(catalog.table("Pending").is_none(), "recovery undid the catalog rows");
    assert_eq!(dbo_units(&db), 1, "and loading the catalog dropped the orphaned unit");
}

/// A procedure's definition (longer than one sysobjvalues chunk) survives a restart; ALTER
/// keeps its object id; a rolled-back CREATE or DROP leaves things as they were.
#[test]
fn procedures_are_kept_with_their_definitions() {
    let mut lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    create(&db, &orders_spec(true));
    let catalog = db.catalog().unwrap();
    let long_body: String = (0..600).map(|i| format!("PRINT {i}\n")).collect();
    let definition = format!("CREATE PROC Report AS\n{long_body}");
    assert!(definition.chars().count() > 2 * engine::catalog::DEFINITION_CHUNK_CHARS);
    db.begin_tran().unwrap();
    catalog.create_module(&db, "Report", &definition).unwrap();
    db.commit_tran().unwrap();
    let object_id = catalog.module("report").expect("created").object_id;
    assert_eq!(catalog.create_module(&db, "orders", "x").unwrap_err().number, 2714);

    db.begin_tran().unwrap();
    catalog.create_module(&db, "Gone", "CREATE PROC Gone AS SELECT 1").unwrap();
    catalog.drop_module(&db, "Report").unwrap();
    db.rollback_tran().unwrap();
    assert!(catalog.module("Gone").is_none(), "a rolled-back CREATE PROC leaves nothing");
    assert_eq!(catalog.module("Report").expect("the DROP rolled back").definition, definition);

    db.begin_tran().unwrap();
    catalog.alter_module(&db, "Report", "CREATE PROC Report AS SELECT 2").unwrap();
    db.commit_tran().unwrap();
    db.close().unwrap();
    lab.restart();

    let db = Database::open(&lab.instance, &lab.path("shop.mdf")).unwrap();
    let catalog = db.catalog().unwrap();
    let module = catalog.module("Report").expect("the procedure is in the catalog");
    assert_eq!(module.object_id, object_id, "ALTER keeps the object id");
    assert_eq!(module.definition, "CREATE PROC Report AS SELECT 2");
    assert!(catalog.table("Orders").is_some());
}

/// COUNT(*)'s count, read from the pages without decoding rows, equals the rows a scan
/// decodes: for a heap with moved (forwarded) rows and deleted rows, and for a clustered index
/// with ghosts and several leaves.
#[test]
fn counted_rows_match_scanned_rows() {
    let lab = lab();
    let db = Database::create(&lab.instance, &spec()).unwrap();
    let mut heap_spec = orders_spec(false);
    heap_spec.name = "HeapOrders".into();
    heap_spec.indexes.clear();
    create(&db, &heap_spec);
    create(&db, &orders_spec(true));
    let catalog = db.catalog().unwrap();
    for name in ["HeapOrders", "Orders"] {
        let table = catalog.table(name).unwrap();
        db.begin_tran().unwrap();
        for id in 1..=2000 {
            table.insert(&db, &row(id, id % 7)).unwrap();
        }
        db.commit_tran().unwrap();
        db.begin_tran().unwrap();
        for (locator, old) in table.rows(&db).unwrap() {
            let Value::Int(id) = old[0] else { panic!() };
            if id % 3 == 0 {
                table.delete(&db, &locator, &old).unwrap();
            } else if id % 5 == 0 {
                let mut longer = old.clone();
                longer[2] = Value::Text("x".repeat(40));
                table.update(&db, &locator, &old, &longer).unwrap();
            }
        }
        db.commit_tran().unwrap();
        db.begin_tran().unwrap();
        let counted = table.count_rows(&db).unwrap();
        let scanned = table.rows(&db).unwrap().len() as u64;
        db.commit_tran().unwrap();
        assert_eq!(counted, scanned, "{name}");
        assert_eq!(counted, 2000 - 666, "{name}");
    }
}
