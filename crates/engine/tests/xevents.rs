//! Extended Events sessions on a real instance: seed 002's session (database_file_size_change
//! and PREEMPTIVE_OS_WRITEFILEGATHER's wait_info_external into an event file), a ring buffer of
//! waits, and the sessions' life cycle across a restart.

mod common;

use common::*;
use engine::database::FileChange;
use engine::xevent::catalog::{self, EVENTS};
use engine::xevent::predicate::Predicate;
use engine::xevent::{EventDef, SessionDef, SessionOptions, TargetDef};

fn event(package: &str, name: &str, predicate: Option<&str>) -> EventDef {
    let event = catalog::event_index(Some(package), name).expect("a known event");
    EventDef {
        event,
        actions: vec![catalog::action(Some("sqlserver"), "session_id").unwrap()],
        predicate: predicate.map(|text| Predicate::parse(&EVENTS[event], text).expect("parses")),
    }
}

fn session(
    name: &str,
    events: Vec<EventDef>,
    target: &str,
    settings: &[(&str, &str)],
) -> SessionDef {
    SessionDef {
        event_session_id: 0,
        name: name.into(),
        events,
        targets: vec![TargetDef {
            target: catalog::target(target).expect("a known target"),
            settings: settings.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        }],
        options: SessionOptions::default(),
    }
}

fn seed_002_session() -> SessionDef {
    session(
        "log_size_changes",
        vec![
            event(
                "sqlos",
                "wait_info_external",
                Some("([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')"),
            ),
            event("sqlserver", "database_file_size_change", None),
        ],
        "event_file",
        &[("filename", "ifi_log_size_changes")],
    )
}

/// The `<data name="..."><value>` of an event's XML.
fn data_value(xml: &str, name: &str) -> String {
    let marker = format!("<data name=\"{name}\"><value>");
    let start = xml.find(&marker).unwrap_or_else(|| panic!("{name} in {xml}")) + marker.len();
    let end = xml[start..].find('<').unwrap() + start;
    xml[start..end].to_string()
}

#[test]
fn seed_002s_session_records_each_growth_and_its_zeroing_wait_in_its_file() {
    let lab = lab();
    let db = lab.company();
    let xe = &lab.instance.xevents;
    xe.create(seed_002_session()).unwrap();
    xe.start("log_size_changes").unwrap();
    let zeroing_before = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER").unwrap();
    // A manual 100 MB log growth is zeroed (IFI is for autogrowths of 64 MB or less).
    db.modify_file("Company_log", FileChange::Size(size("101MB"))).unwrap();
    db.modify_file("Company_data", FileChange::Size(size("8MB"))).unwrap();
    let zeroing = lab.instance.waits.get("PREEMPTIVE_OS_WRITEFILEGATHER").unwrap();
    xe.stop("log_size_changes").unwrap();

    let events = xe.read_files("ifi_log_size_changes*.xel", None).unwrap();
    let growths: Vec<_> =
        events.iter().filter(|e| e.object_name == "database_file_size_change").collect();
    let waits: Vec<_> = events.iter().filter(|e| e.object_name == "wait_info_external").collect();
    assert_eq!(growths.len(), 2, "{events:#?}");
    let log = &growths[0].event_data;
    assert_eq!(data_value(log, "file_type"), "1");
    assert_eq!(data_value(log, "size_change_kb"), "102400");
    assert_eq!(data_value(log, "total_size_kb"), "103424");
    assert_eq!(data_value(log, "is_automatic"), "false");
    assert_eq!(data_value(log, "file_name"), "Company_log");
    assert_eq!(data_value(log, "database_name"), "Company");
    assert_eq!(data_value(&growths[1].event_data, "file_type"), "0");
    assert_eq!(data_value(&growths[1].event_data, "size_change_kb"), "3072");
    // One event per wait recorded, with the time recorded (the wait statistics count the same
    // waits, in ms summed from microseconds, so the events' ms sum to no more).
    let recorded = zeroing.waiting_tasks_count - zeroing_before.waiting_tasks_count;
    assert!(recorded >= 1);
    assert_eq!(waits.len() as u64, recorded, "{waits:#?}");
    let event_ms: u64 =
        waits.iter().map(|e| data_value(&e.event_data, "duration").parse::<u64>().unwrap()).sum();
    assert!(event_ms <= zeroing.wait_time_ms - zeroing_before.wait_time_ms + recorded);
    for wait in &waits {
        assert!(wait.event_data.contains("<text>PREEMPTIVE_OS_WRITEFILEGATHER</text>"));
        assert!(
            wait.file_name.ends_with(".xel") && wait.file_name.contains("ifi_log_size_changes_0_")
        );
    }
    // Offsets rise through the file; reading on from one skips it and those before it.
    let first = &events[0];
    let rest = xe
        .read_files("ifi_log_size_changes*.xel", Some((&first.file_name, first.file_offset)))
        .unwrap();
    assert_eq!(rest.len(), events.len() - 1);
    assert_eq!(rest[0], events[1]);
}

#[test]
fn without_a_running_session_nothing_is_written() {
    let lab = lab();
    let db = lab.company();
    let xe = &lab.instance.xevents;
    xe.create(seed_002_session()).unwrap();
    assert!(!xe.is_enabled(catalog::DATABASE_FILE_SIZE_CHANGE), "defined, not started");
    db.modify_file("Company_data", FileChange::Size(size("8MB"))).unwrap();
    xe.start("log_size_changes").unwrap();
    xe.stop("log_size_changes").unwrap();
    let events = xe.read_files("ifi_log_size_changes*.xel", None).unwrap();
    assert!(events.is_empty(), "{events:#?}");
}

#[test]
fn a_ring_buffer_keeps_the_last_events_and_counts_the_dropped() {
    let lab = lab();
    let db = lab.company();
    let xe = &lab.instance.xevents;
    let def = session(
        "growths",
        vec![event(
            "sqlserver",
            "database_file_size_change",
            Some("[file_type] = N'Data file' AND [size_change_kb] > 0"),
        )],
        "ring_buffer",
        &[("max_events_limit", "2")],
    );
    xe.create(def).unwrap();
    xe.start("growths").unwrap();
    for mb in [6, 7, 8] {
        db.modify_file("Company_data", FileChange::Size(size(&format!("{mb}MB")))).unwrap();
    }
    db.modify_file("Company_log", FileChange::Size(size("2MB"))).unwrap();
    let running = xe.running();
    let target = &running[0].target_snapshots()[0];
    assert_eq!(target.target.name, "ring_buffer");
    assert_eq!(target.execution_count, 3, "the log's growth is filtered out");
    let data = &target.target_data;
    assert!(data.starts_with("<RingBufferTarget truncated=\"0\" processingTime=\"0\" totalEventsProcessed=\"3\" eventCount=\"2\" droppedCount=\"1\""), "{data}");
    assert!(data.contains("<value>7168</value>") && data.contains("<value>8192</value>"), "{data}");
    assert!(!data.contains("<value>6144</value>"), "the oldest was dropped");
}

#[test]
fn sessions_keep_their_definition_and_startup_state_across_a_restart() {
    let mut lab = lab();
    let xe = lab.instance.xevents.clone();
    let mut def = seed_002_session();
    def.options.startup_state = true;
    xe.create(def).unwrap();
    assert_eq!(xe.create(seed_002_session()).unwrap_err().number, 25631);
    xe.create(session(
        "other",
        vec![event("sqlos", "wait_info", Some("duration > 10"))],
        "event_counter",
        &[],
    ))
    .unwrap();
    xe.start("other").unwrap();
    assert_eq!(xe.start("other").unwrap_err().number, 25705);
    xe.stop("other").unwrap();
    assert_eq!(xe.stop("other").unwrap_err().number, 25704);
    assert_eq!(xe.drop_session("missing").unwrap_err().number, 15151);
    drop(xe);
    lab.restart();
    let xe = &lab.instance.xevents;
    let names: Vec<String> = xe.definitions().iter().map(|d| d.name.clone()).collect();
    assert_eq!(names, ["log_size_changes", "other"]);
    assert_eq!(xe.definitions()[0].event_session_id + 1, xe.definitions()[1].event_session_id);
    assert!(xe.is_running("log_size_changes"), "STARTUP_STATE = ON");
    assert!(!xe.is_running("other"));
    let other = xe.definition("other").unwrap();
    assert_eq!(
        other.events[0].predicate.as_ref().unwrap().render(&EVENTS[other.events[0].event]),
        "[duration]>(10)"
    );
    xe.drop_session("log_size_changes").unwrap();
    assert!(!xe.is_running("log_size_changes"), "a dropped session stops");
    assert!(!xe.is_enabled(catalog::DATABASE_FILE_SIZE_CHANGE));
}

#[test]
fn wait_info_events_are_the_waits_recorded() {
    let lab = lab();
    let xe = &lab.instance.xevents;
    xe.create(session(
        "waits",
        vec![event("sqlos", "wait_info", Some("[wait_type] = N'WAITFOR'"))],
        "event_counter",
        &[],
    ))
    .unwrap();
    xe.start("waits").unwrap();
    let waits = &lab.instance.waits;
    waits.record("WAITFOR", std::time::Duration::from_millis(3), std::time::Duration::ZERO);
    waits.record("WRITELOG", std::time::Duration::from_millis(1), std::time::Duration::ZERO);
    waits.record("WAITFOR", std::time::Duration::from_millis(2), std::time::Duration::ZERO);
    let target = &xe.running()[0].target_snapshots()[0];
    assert_eq!(
        target.target_data,
        "<CounterTarget truncated=\"0\"><Packages><Package name=\"sqlos\"><Event name=\"wait_info\" count=\"2\" /></Package></Packages></CounterTarget>"
    );
}

#[test]
fn altering_a_running_session_keeps_its_targets_events() {
    let lab = lab();
    let db = lab.company();
    let xe = &lab.instance.xevents;
    xe.create(session(
        "growths",
        vec![event("sqlserver", "database_file_size_change", None)],
        "ring_buffer",
        &[],
    ))
    .unwrap();
    xe.start("growths").unwrap();
    db.modify_file("Company_data", FileChange::Size(size("6MB"))).unwrap();
    let add = engine::xevent::SessionChange::AddEvent(event(
        "sqlos",
        "wait_info",
        Some("[wait_type] = N'WAITFOR'"),
    ));
    xe.alter("growths", vec![add]).unwrap();
    assert!(xe.is_enabled(catalog::WAIT_INFO), "the added event fires at once");
    lab.instance.waits.record(
        "WAITFOR",
        std::time::Duration::from_millis(1),
        std::time::Duration::ZERO,
    );
    let target = &xe.running()[0].target_snapshots()[0];
    let data = &target.target_data;
    assert!(data.contains("totalEventsProcessed=\"2\" eventCount=\"2\""), "{data}");
    assert_eq!(target.execution_count, 2, "the target's counts go with it (bug fix: reset to 0)");
    let drop_event = engine::xevent::SessionChange::DropEvent(catalog::WAIT_INFO);
    xe.alter("growths", vec![drop_event.clone()]).unwrap();
    assert!(!xe.is_enabled(catalog::WAIT_INFO));
    assert_eq!(xe.alter("growths", vec![drop_event]).unwrap_err().number, 25653);
}
