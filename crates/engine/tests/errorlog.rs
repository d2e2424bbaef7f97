//! The instance's errorlog: startup lines, sp_cycle_errorlog, and error lines.

mod common;

use common::{lab, lab_with};

#[test]
fn startup_lines_and_cycling_like_sp_cycle_errorlog() {
    let lab = lab_with(|config| config.startup_trace_flags = vec![1117, 3605]);
    let first = lab.errorlog_texts();
    assert!(first[0].starts_with("extentdb "));
    assert!(first.contains(&"\t -T 1117".to_string()));
    let ifi = "Database Instant File Initialization: enabled. For security and performance considerations see the \
               topic 'Database Instant File Initialization' in SQL Server Books Online. This is an informational \
               message only. No user action is required.";
    assert!(first.contains(&ifi.to_string()));
    assert!(lab.instance.trace_flags.is_on(1117));
    lab.instance.cycle_errorlog().unwrap();
    let archived = lab.instance.errorlog.read(1).unwrap();
    assert!(archived.last().unwrap().text.starts_with("Attempting to cycle error log."));
    let current = lab.errorlog_texts();
    assert!(current[0].starts_with("extentdb "), "a new log starts with the banner");
    assert!(current.contains(&ifi.to_string()));
    assert_eq!(
        current.last().unwrap(),
        "The error log has been reinitialized. See the previous log for older entries."
    );
    let entry = &lab.instance.errorlog.read(0).unwrap()[0];
    assert_eq!(entry.process_info, "Server");
    assert_eq!(entry.log_date.len(), 23, "yyyy-mm-dd hh:mm:ss.mmm");
}

#[test]
fn errors_are_logged_as_two_lines_with_the_session() {
    let lab = lab();
    engine::instance::set_current_spid(56);
    let error = engine::SqlError::filegroup_full("dbo.T", "Company", "PRIMARY");
    lab.instance.errorlog.write_error(&engine::instance::current_process_info(), &error);
    let entries = lab.instance.errorlog.read(0).unwrap();
    let at = entries.iter().position(|e| e.text == "Error: 1105, Severity: 17, State: 2.").unwrap();
    assert_eq!(entries[at].process_info, "spid56");
    assert_eq!(entries[at + 1].text, error.message);
}
