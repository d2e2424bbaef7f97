//! Extended Events in T-SQL: CREATE, ALTER and DROP EVENT SESSION ... ON SERVER, the catalog
//! views of the definitions (sys.server_event_session*), the DMVs of what runs (sys.dm_xe_*),
//! and sys.fn_xe_file_target_read_file. The sessions, their events and targets are the
//! engine's ([`engine::xevent`]); this module parses the statements, checks names and
//! options with SQL Server's errors, and shows the sessions in SQL Server's columns.
//!
//! What it reproduces: seed 002's session runs as written (`ADD EVENT
//! sqlos.wait_info_external (WHERE ([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')), ADD EVENT
//! sqlserver.database_file_size_change ADD TARGET package0.event_file(SET filename =
//! N'ifi_log_size_changes')`), and its file is read back with sys.fn_xe_file_target_read_file,
//! one event's XML per row.
//!
//! Errors: 25623 (an unknown event, action or target), 25629 (an unknown attribute), 25642 (no
//! filename for event_file), 25631 (a session name taken), 15151 (no such session), 25704 and
//! 25705 (stopped or started already), 25701 (a temporary name), 25702 and 25703 (a session
//! option repeated or with a bad value), 25711-25713 (a bad predicate), 25718, 25719 and 25722
//! (the file reader's arguments), with the texts of SQL Server's message table.
//!
//! The batch and error events (sql_batch_starting, sql_batch_completed, error_reported) are
//! fired by the session ([`crate::session`]) as a batch starts, sends an error and ends.
//!
//! Deviations: only ON SERVER sessions (ON DATABASE is Azure SQL Database's); the events,
//! actions and targets the engine has ([`engine::xevent::catalog`]); sys.dm_xe_sessions shows
//! no buffers (events go to their targets as they fire); the event file is text (see
//! [`engine::xevent::target`]).

use crate::dmv::big;
use crate::front::{is_word, parse_word};
use crate::session::{Failure, Flow, Session};
use crate::sysviews::{ViewRows, columns, text};
use crate::value::Result;
use engine::SqlError;
use engine::record::Value;
use engine::xevent::catalog::{self, EVENTS};
use engine::xevent::predicate::Predicate;
use engine::xevent::{EventDef, SessionChange, SessionDef, SessionOptions, TargetDef};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// `[package.]name` as written.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectName {
    pub package: Option<String>,
    pub name: String,
}

impl ObjectName {
    fn text(&self) -> String {
        match &self.package {
            Some(package) => format!("{package}.{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// ADD EVENT name [( [SET ...] [ACTION (...)] [WHERE ...] )].
#[derive(Clone, Debug, PartialEq)]
pub struct EventSpec {
    pub name: ObjectName,
    pub set: Vec<(String, String)>,
    pub actions: Vec<ObjectName>,
    /// The WHERE clause's tokens as text, parsed by the engine's predicate parser.
    pub predicate: Option<String>,
}

/// ADD TARGET name [( SET attribute = value, ... )].
#[derive(Clone, Debug, PartialEq)]
pub struct TargetSpec {
    pub name: ObjectName,
    pub settings: Vec<(String, String)>,
}

/// The parts of CREATE or ALTER EVENT SESSION after the name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionBody {
    pub add_events: Vec<EventSpec>,
    pub drop_events: Vec<ObjectName>,
    pub add_targets: Vec<TargetSpec>,
    pub drop_targets: Vec<ObjectName>,
    /// WITH (NAME = value [unit], ...): upper-case name, value text, unit.
    pub options: Vec<(String, String, Option<String>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EventSessionStatement {
    Create { name: String, body: SessionBody },
    AlterState { name: String, start: bool },
    Alter { name: String, body: SessionBody },
    Drop { name: String },
}

/// Whether the next tokens start CREATE, ALTER or DROP EVENT SESSION.
pub fn starts(parser: &Parser<'_>) -> bool {
    let first = parser.peek_token().token;
    (is_word(&first, "CREATE") || is_word(&first, "ALTER") || is_word(&first, "DROP"))
        && is_word(&parser.peek_nth_token(1).token, "EVENT")
        && is_word(&parser.peek_nth_token(2).token, "SESSION")
}

pub fn parse(parser: &mut Parser<'_>) -> std::result::Result<EventSessionStatement, ParserError> {
    let verb = parser.next_token().token.to_string().to_uppercase();
    parser.next_token();
    parser.next_token();
    let name = parser.parse_identifier()?.value;
    if !parse_word(parser, "ON") {
        return parser.expected("ON", parser.peek_token());
    }
    if !parse_word(parser, "SERVER") {
        return parser.expected("SERVER", parser.peek_token());
    }
    match verb.as_str() {
        "DROP" => Ok(EventSessionStatement::Drop { name }),
        "ALTER" if parse_word(parser, "STATE") => {
            parser.expect_token(&Token::Eq)?;
            let start = if parse_word(parser, "START") {
                true
            } else if parse_word(parser, "STOP") {
                false
            } else {
                return parser.expected("START or STOP", parser.peek_token());
            };
            Ok(EventSessionStatement::AlterState { name, start })
        }
        "ALTER" => Ok(EventSessionStatement::Alter { name, body: parse_body(parser, true)? }),
        _ => Ok(EventSessionStatement::Create { name, body: parse_body(parser, false)? }),
    }
}

fn parse_body(
    parser: &mut Parser<'_>,
    alter: bool,
) -> std::result::Result<SessionBody, ParserError> {
    let mut body = SessionBody::default();
    loop {
        let adding = if parse_word(parser, "ADD") {
            true
        } else if alter && parse_word(parser, "DROP") {
            false
        } else {
            break;
        };
        if parse_word(parser, "EVENT") {
            if adding {
                body.add_events.push(parse_event(parser)?);
            } else {
                body.drop_events.push(parse_object_name(parser)?);
            }
        } else if parse_word(parser, "TARGET") {
            if adding {
                body.add_targets.push(parse_target(parser)?);
            } else {
                body.drop_targets.push(parse_object_name(parser)?);
            }
        } else {
            return parser.expected("EVENT or TARGET", parser.peek_token());
        }
        let _ = parser.consume_token(&Token::Comma);
    }
    if parse_word(parser, "WITH") {
        body.options = parse_options(parser)?;
    }
    if body == SessionBody::default() || (!alter && body.add_events.is_empty()) {
        return parser.expected("ADD EVENT", parser.peek_token());
    }
    Ok(body)
}

fn parse_object_name(parser: &mut Parser<'_>) -> std::result::Result<ObjectName, ParserError> {
    let mut parts = vec![parser.parse_identifier()?.value];
    while parser.consume_token(&Token::Period) {
        parts.push(parser.parse_identifier()?.value);
    }
    let name = parts.pop().unwrap_or_default();
    Ok(ObjectName { package: parts.pop(), name })
}

fn parse_event(parser: &mut Parser<'_>) -> std::result::Result<EventSpec, ParserError> {
    let name = parse_object_name(parser)?;
    let mut event = EventSpec { name, set: Vec::new(), actions: Vec::new(), predicate: None };
    if !parser.consume_token(&Token::LParen) {
        return Ok(event);
    }
    if parse_word(parser, "SET") {
        event.set = parse_settings(parser)?;
    }
    if parse_word(parser, "ACTION") {
        parser.expect_token(&Token::LParen)?;
        loop {
            event.actions.push(parse_object_name(parser)?);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        parser.expect_token(&Token::RParen)?;
    }
    if parse_word(parser, "WHERE") {
        event.predicate = Some(predicate_text(parser)?);
    }
    parser.expect_token(&Token::RParen)?;
    Ok(event)
}

/// The WHERE clause's tokens up to the event's closing parenthesis (not consumed), as text.
fn predicate_text(parser: &mut Parser<'_>) -> std::result::Result<String, ParserError> {
    let mut depth = 0usize;
    let mut words = Vec::new();
    loop {
        let token = parser.peek_token().token;
        match token {
            Token::EOF => return parser.expected(")", parser.peek_token()),
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::LParen => depth += 1,
            _ => {}
        }
        words.push(token.to_string());
        parser.next_token();
    }
    Ok(words.join(" "))
}

fn parse_target(parser: &mut Parser<'_>) -> std::result::Result<TargetSpec, ParserError> {
    let name = parse_object_name(parser)?;
    let mut settings = Vec::new();
    if parser.consume_token(&Token::LParen) {
        if !parse_word(parser, "SET") {
            return parser.expected("SET", parser.peek_token());
        }
        settings = parse_settings(parser)?;
        parser.expect_token(&Token::RParen)?;
    }
    Ok(TargetSpec { name, settings })
}

/// `name = value [, ...]`, a value being a string, a number (in parentheses or not) or a word.
fn parse_settings(
    parser: &mut Parser<'_>,
) -> std::result::Result<Vec<(String, String)>, ParserError> {
    let mut settings = Vec::new();
    loop {
        let name = parser.parse_identifier()?.value.to_lowercase();
        parser.expect_token(&Token::Eq)?;
        let value = setting_value(parser)?;
        settings.push((name, value));
        if !parser.consume_token(&Token::Comma) {
            return Ok(settings);
        }
    }
}

fn setting_value(parser: &mut Parser<'_>) -> std::result::Result<String, ParserError> {
    let token = parser.next_token();
    match token.token {
        Token::LParen => {
            let inner = setting_value(parser)?;
            parser.expect_token(&Token::RParen)?;
            Ok(inner)
        }
        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => Ok(s),
        Token::Number(n, _) => Ok(n),
        Token::Minus => Ok(format!("-{}", setting_value(parser)?)),
        Token::Word(word) => Ok(word.value),
        _ => {
            parser.prev_token();
            parser.expected("a value", parser.peek_token())
        }
    }
}

fn parse_options(
    parser: &mut Parser<'_>,
) -> std::result::Result<Vec<(String, String, Option<String>)>, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let mut options = Vec::new();
    loop {
        let name = parser.parse_identifier()?.value.to_uppercase();
        parser.expect_token(&Token::Eq)?;
        let value = setting_value(parser)?;
        let unit = match parser.peek_token().token {
            Token::Word(word)
                if ["KB", "MB", "SECONDS"].iter().any(|u| word.value.eq_ignore_ascii_case(u)) =>
            {
                parser.next_token();
                Some(word.value.to_uppercase())
            }
            _ => None,
        };
        options.push((name, value, unit));
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    Ok(options)
}

/// 25623: `kind` ("event", "action", "target") `name` is not known.
fn invalid_name(kind: &str, name: &ObjectName) -> SqlError {
    SqlError::new(
        25623,
        16,
        1,
        format!(
            "The {kind} name, \"{}\", is invalid, or the object could not be found",
            name.text()
        ),
    )
}

fn resolve_event(spec: &EventSpec) -> engine::SqlResult<EventDef> {
    let event = catalog::event_index(spec.name.package.as_deref(), &spec.name.name)
        .ok_or_else(|| invalid_name("event", &spec.name))?;
    let object = &EVENTS[event];
    if let Some((attribute, _)) = spec.set.first() {
        return Err(SqlError::new(
            25629,
            16,
            1,
            format!(
                "For event, \"{}.{}\", the customizable attribute, \"{attribute}\", does not exist.",
                object.package, object.name
            ),
        ));
    }
    let mut actions: Vec<&'static catalog::ActionObject> = Vec::new();
    for name in &spec.actions {
        let action = catalog::action(name.package.as_deref(), &name.name)
            .ok_or_else(|| invalid_name("action", name))?;
        if !actions.iter().any(|a| std::ptr::eq(*a, action)) {
            actions.push(action);
        }
    }
    let predicate =
        spec.predicate.as_deref().map(|text| Predicate::parse(object, text)).transpose()?;
    Ok(EventDef { event, actions, predicate })
}

fn resolve_target(spec: &TargetSpec) -> engine::SqlResult<TargetDef> {
    let target =
        catalog::target(&spec.name.name).ok_or_else(|| invalid_name("target", &spec.name))?;
    for (attribute, _) in &spec.settings {
        if !target.attributes.iter().any(|(name, _, _)| name.eq_ignore_ascii_case(attribute)) {
            return Err(SqlError::new(
                25629,
                16,
                1,
                format!(
                    "For target, \"package0.{}\", the customizable attribute, \"{attribute}\", does not exist.",
                    target.name
                ),
            ));
        }
    }
    let has_filename =
        spec.settings.iter().any(|(name, value)| name == "filename" && !value.is_empty());
    if target.name == "event_file" && !has_filename {
        return Err(SqlError::new(
            25642,
            16,
            1,
            "Mandatory customizable attributes are missing for target, \"package0.event_file\".",
        ));
    }
    Ok(TargetDef { target, settings: spec.settings.clone() })
}

/// Applies WITH options to `options`: 25702 for an option given twice, 25703 for a bad value.
fn apply_options(
    options: &mut SessionOptions,
    given: &[(String, String, Option<String>)],
) -> engine::SqlResult<()> {
    for (i, (name, value, unit)) in given.iter().enumerate() {
        if given[..i].iter().any(|(earlier, _, _)| earlier == name) {
            return Err(SqlError::new(
                25702,
                16,
                1,
                format!(
                    "The event session option, \"{name}\", is set more than once. Remove the duplicate session option and re-issue the statement."
                ),
            ));
        }
        let bad = || {
            SqlError::new(
                25703,
                16,
                1,
                format!(
                    "The event session option, \"{name}\", has an invalid value. Correct the value and re-issue the statement."
                ),
            )
        };
        let number = || value.parse::<u32>().map_err(|_| bad());
        let kb = || -> engine::SqlResult<u32> {
            let n = number()?;
            match unit.as_deref() {
                Some("MB") => n.checked_mul(1024).ok_or_else(bad),
                Some("KB") | None => Ok(n),
                _ => Err(bad()),
            }
        };
        let on_off = || match value.to_uppercase().as_str() {
            "ON" => Ok(true),
            "OFF" => Ok(false),
            _ => Err(bad()),
        };
        match name.as_str() {
            "MAX_MEMORY" => options.max_memory_kb = kb()?,
            "MAX_EVENT_SIZE" => options.max_event_size_kb = kb()?,
            "EVENT_RETENTION_MODE" => {
                options.event_retention_mode = match value.to_uppercase().as_str() {
                    "ALLOW_SINGLE_EVENT_LOSS" => 'S',
                    "ALLOW_MULTIPLE_EVENT_LOSS" => 'M',
                    "NO_EVENT_LOSS" => 'N',
                    _ => return Err(bad()),
                }
            }
            "MAX_DISPATCH_LATENCY" => {
                options.max_dispatch_latency_s =
                    if value.eq_ignore_ascii_case("INFINITE") { 0 } else { number()? }
            }
            "MEMORY_PARTITION_MODE" => {
                options.memory_partition_mode = match value.to_uppercase().as_str() {
                    "NONE" => 'G',
                    "PER_NODE" => 'P',
                    "PER_CPU" => 'C',
                    _ => return Err(bad()),
                }
            }
            "TRACK_CAUSALITY" => options.track_causality = on_off()?,
            "STARTUP_STATE" => options.startup_state = on_off()?,
            _ => return Err(bad()),
        }
    }
    Ok(())
}

fn create_definition(name: &str, body: &SessionBody) -> engine::SqlResult<SessionDef> {
    if name.starts_with('#') {
        return Err(SqlError::new(
            25701,
            15,
            1,
            format!(
                "Invalid event session name \"{name}\". Temporary event sessions are not allowed."
            ),
        ));
    }
    let mut events: Vec<EventDef> = Vec::new();
    for spec in &body.add_events {
        let event = resolve_event(spec)?;
        if events.iter().any(|e| e.event == event.event) {
            let object = &EVENTS[event.event];
            return Err(SqlError::new(
                25626,
                16,
                1,
                format!(
                    "The event, \"{}.{}\", was specified multiple times.",
                    object.package, object.name
                ),
            ));
        }
        events.push(event);
    }
    let targets =
        body.add_targets.iter().map(resolve_target).collect::<engine::SqlResult<Vec<_>>>()?;
    let mut options = SessionOptions::default();
    apply_options(&mut options, &body.options)?;
    Ok(SessionDef { event_session_id: 0, name: name.to_string(), events, targets, options })
}

fn alter_changes(
    current: &SessionDef,
    body: &SessionBody,
) -> engine::SqlResult<Vec<SessionChange>> {
    let mut changes = Vec::new();
    for name in &body.drop_events {
        let event = catalog::event_index(name.package.as_deref(), &name.name)
            .ok_or_else(|| invalid_name("event", name))?;
        changes.push(SessionChange::DropEvent(event));
    }
    for name in &body.drop_targets {
        let target = catalog::target(&name.name).ok_or_else(|| invalid_name("target", name))?;
        changes.push(SessionChange::DropTarget(target));
    }
    for spec in &body.add_events {
        changes.push(SessionChange::AddEvent(resolve_event(spec)?));
    }
    for spec in &body.add_targets {
        changes.push(SessionChange::AddTarget(resolve_target(spec)?));
    }
    if !body.options.is_empty() {
        let mut options = current.options;
        apply_options(&mut options, &body.options)?;
        changes.push(SessionChange::Options(options));
    }
    Ok(changes)
}

impl Session {
    pub(crate) fn event_session(
        &mut self,
        statement: &EventSessionStatement,
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let xe = self.server.instance.xevents.clone();
        let done = match statement {
            EventSessionStatement::Create { name, body } => {
                create_definition(name, body).and_then(|def| xe.create(def))
            }
            EventSessionStatement::AlterState { name, start: true } => xe.start(name),
            EventSessionStatement::AlterState { name, start: false } => xe.stop(name),
            EventSessionStatement::Alter { name, body } => xe
                .definition(name)
                .ok_or_else(|| {
                    SqlError::new(
                        15151,
                        16,
                        1,
                        format!("Cannot alter the event session '{name}', because it does not exist or you do not have permission."),
                    )
                })
                .and_then(|current| alter_changes(&current, body))
                .and_then(|changes| xe.alter(name, changes)),
            EventSessionStatement::Drop { name } => xe.drop_session(name),
        };
        done.map_err(|error| self.fail(error, line))?;
        Ok(Flow::Next)
    }

    /// sys.server_event_sessions.
    pub(crate) fn server_event_sessions(&self) -> ViewRows {
        let cols = columns(&[
            "event_session_id",
            "name",
            "event_retention_mode",
            "event_retention_mode_desc",
            "max_dispatch_latency",
            "max_memory",
            "max_event_size",
            "memory_partition_mode",
            "memory_partition_mode_desc",
            "track_causality",
            "startup_state",
            "has_long_running_target",
        ]);
        let rows = self
            .server
            .instance
            .xevents
            .definitions()
            .iter()
            .map(|def| {
                let o = &def.options;
                vec![
                    Value::Int(def.event_session_id),
                    Value::Text(def.name.clone()),
                    Value::Text(o.event_retention_mode.to_string()),
                    text(o.event_retention_mode_desc()),
                    Value::Int(
                        i32::try_from(u64::from(o.max_dispatch_latency_s) * 1000)
                            .unwrap_or(i32::MAX),
                    ),
                    Value::Int(i32::try_from(o.max_memory_kb).unwrap_or(i32::MAX)),
                    Value::Int(i32::try_from(o.max_event_size_kb).unwrap_or(i32::MAX)),
                    Value::Text(o.memory_partition_mode.to_string()),
                    text(o.memory_partition_mode_desc()),
                    Value::Bit(o.track_causality),
                    Value::Bit(o.startup_state),
                    Value::Bit(def.targets.iter().any(|t| t.target.name == "event_file")),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.server_event_session_events: one row per event of each definition (event_id
    /// numbers the session's events, then its targets, from 1).
    pub(crate) fn server_event_session_events(&self) -> ViewRows {
        let cols = columns(&[
            "event_session_id",
            "event_id",
            "name",
            "package",
            "module",
            "predicate",
            "predicate_xml",
        ]);
        let mut rows = Vec::new();
        for def in self.server.instance.xevents.definitions() {
            for (i, event) in def.events.iter().enumerate() {
                let object = &EVENTS[event.event];
                let predicate =
                    event.predicate.as_ref().map_or(Value::Null, |p| Value::Text(p.render(object)));
                rows.push(vec![
                    Value::Int(def.event_session_id),
                    Value::Int(i as i32 + 1),
                    text(object.name),
                    text(object.package),
                    text(catalog::MODULE_GUID),
                    predicate,
                    Value::Null,
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.server_event_session_actions.
    pub(crate) fn server_event_session_actions(&self) -> ViewRows {
        let cols = columns(&["event_session_id", "event_id", "name", "package", "module"]);
        let mut rows = Vec::new();
        for def in self.server.instance.xevents.definitions() {
            for (i, event) in def.events.iter().enumerate() {
                for action in &event.actions {
                    rows.push(vec![
                        Value::Int(def.event_session_id),
                        Value::Int(i as i32 + 1),
                        text(action.name),
                        text(action.package),
                        text(catalog::MODULE_GUID),
                    ]);
                }
            }
        }
        (cols, rows)
    }

    /// sys.server_event_session_targets (target_id follows the session's event ids).
    pub(crate) fn server_event_session_targets(&self) -> ViewRows {
        let cols = columns(&["event_session_id", "target_id", "name", "package", "module"]);
        let mut rows = Vec::new();
        for def in self.server.instance.xevents.definitions() {
            for (i, target) in def.targets.iter().enumerate() {
                rows.push(vec![
                    Value::Int(def.event_session_id),
                    Value::Int(def.target_id(i)),
                    text(target.target.name),
                    text("package0"),
                    text(catalog::MODULE_GUID),
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.server_event_session_fields: the targets' SET attributes.
    pub(crate) fn server_event_session_fields(&self) -> ViewRows {
        let cols = columns(&["event_session_id", "object_id", "name", "value"]);
        let mut rows = Vec::new();
        for def in self.server.instance.xevents.definitions() {
            for (i, target) in def.targets.iter().enumerate() {
                for (name, value) in &target.settings {
                    rows.push(vec![
                        Value::Int(def.event_session_id),
                        Value::Int(def.target_id(i)),
                        Value::Text(name.clone()),
                        Value::Text(value.clone()),
                    ]);
                }
            }
        }
        (cols, rows)
    }

    /// sys.dm_xe_sessions: the running sessions.
    pub(crate) fn dm_xe_sessions(&self) -> ViewRows {
        let cols = columns(&[
            "address",
            "name",
            "pending_buffers",
            "total_regular_buffers",
            "regular_buffer_size",
            "total_large_buffers",
            "large_buffer_size",
            "total_buffer_size",
            "buffer_policy_flags",
            "buffer_policy_desc",
            "flags",
            "flag_desc",
            "dropped_event_count",
            "dropped_buffer_count",
            "blocked_event_fire_time",
            "create_time",
            "largest_event_dropped_size",
            "session_source",
            "buffer_processed_count",
            "buffer_full_count",
            "total_bytes_generated",
        ]);
        let rows = self
            .server
            .instance
            .xevents
            .running()
            .iter()
            .map(|session| {
                let (policy_flags, policy) = match session.def.options.event_retention_mode {
                    'M' => (2, "drop_full_buffer"),
                    'N' => (0, "do_not_drop_event"),
                    _ => (1, "drop_event"),
                };
                vec![
                    address(session.address),
                    Value::Text(session.def.name.clone()),
                    Value::Int(0),
                    Value::Int(0),
                    Value::BigInt(0),
                    Value::Int(0),
                    Value::BigInt(0),
                    Value::BigInt(0),
                    Value::Int(policy_flags),
                    text(policy),
                    Value::Int(1),
                    text("flush_on_close"),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(0),
                    crate::functions::current_time("GETDATE", session.create_time),
                    Value::Int(0),
                    text("server"),
                    Value::BigInt(0),
                    Value::BigInt(0),
                    Value::BigInt(
                        i64::try_from(session.total_bytes_generated()).unwrap_or(i64::MAX),
                    ),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_xe_session_targets: each running session's targets, with their data as XML.
    pub(crate) fn dm_xe_session_targets(&self) -> ViewRows {
        let cols = columns(&[
            "event_session_address",
            "target_name",
            "target_package_guid",
            "execution_count",
            "execution_duration_ms",
            "target_data",
            "bytes_written",
        ]);
        let mut rows = Vec::new();
        for session in self.server.instance.xevents.running() {
            for target in session.target_snapshots() {
                rows.push(vec![
                    address(target.event_session_address),
                    text(target.target.name),
                    guid(package_guid("package0")),
                    big(target.execution_count),
                    big(target.execution_duration_ms),
                    Value::Text(target.target_data),
                    big(target.bytes_written),
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.dm_xe_session_events: each running session's events and predicates.
    pub(crate) fn dm_xe_session_events(&self) -> ViewRows {
        let cols = columns(&[
            "event_session_address",
            "event_name",
            "event_package_guid",
            "event_predicate",
        ]);
        let mut rows = Vec::new();
        for session in self.server.instance.xevents.running() {
            for event in &session.def.events {
                let object = &EVENTS[event.event];
                rows.push(vec![
                    address(session.address),
                    text(object.name),
                    guid(package_guid(object.package)),
                    event.predicate.as_ref().map_or(Value::Null, |p| Value::Text(p.render(object))),
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.dm_xe_packages.
    pub(crate) fn dm_xe_packages(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "guid",
            "description",
            "capabilities",
            "capabilities_desc",
            "module_guid",
            "module_address",
        ]);
        let rows = catalog::PACKAGES
            .iter()
            .map(|p| {
                vec![
                    text(p.name),
                    guid(p.guid),
                    text(p.description),
                    Value::Null,
                    Value::Null,
                    guid(catalog::MODULE_GUID),
                    address(0x7ff0_0000_0000),
                ]
            })
            .collect();
        (cols, rows)
    }

    /// sys.dm_xe_objects: the events, actions (also as predicate sources), targets and maps.
    pub(crate) fn dm_xe_objects(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "object_type",
            "package_guid",
            "description",
            "capabilities",
            "capabilities_desc",
            "type_name",
            "type_package_guid",
            "type_size",
        ]);
        let mut rows = Vec::new();
        let mut row = |name: &str,
                       kind: &str,
                       package: &str,
                       description: &str,
                       type_name: Option<(&str, &str)>| {
            rows.push(vec![
                text(name),
                text(kind),
                guid(package_guid(package)),
                text(description),
                Value::Null,
                Value::Null,
                type_name.map_or(Value::Null, |(t, _)| text(t)),
                type_name.map_or(Value::Null, |(_, p)| guid(package_guid(p))),
                Value::Null,
            ]);
        };
        for event in &EVENTS {
            row(event.name, "event", event.package, event.description, None);
        }
        for action in &catalog::ACTIONS {
            let type_name = action.field_type.type_name();
            row(action.name, "action", action.package, action.description, Some(type_name));
            row(action.name, "pred_source", action.package, action.description, Some(type_name));
        }
        for target in &catalog::TARGETS {
            row(target.name, "target", "package0", target.description, None);
        }
        for map in catalog::ALL_MAPS {
            row(map.name(), "map", map.package(), "", None);
        }
        (cols, rows)
    }

    /// sys.dm_xe_object_columns: the events' data columns and the targets' customizable ones.
    pub(crate) fn dm_xe_object_columns(&self) -> ViewRows {
        let cols = columns(&[
            "name",
            "column_id",
            "object_name",
            "object_package_guid",
            "type_name",
            "type_package_guid",
            "column_type",
            "column_value",
            "capabilities",
            "capabilities_desc",
            "description",
        ]);
        let mut rows = Vec::new();
        for event in &EVENTS {
            for (i, field) in event.fields.iter().enumerate() {
                let (type_name, type_package) = field.field_type.type_name();
                rows.push(vec![
                    text(field.name),
                    Value::Int(i as i32),
                    text(event.name),
                    guid(package_guid(event.package)),
                    text(type_name),
                    guid(package_guid(type_package)),
                    text("data"),
                    Value::Null,
                    Value::Int(0),
                    Value::Null,
                    text(field.description),
                ]);
            }
        }
        for target in &catalog::TARGETS {
            for (i, (name, type_name, default)) in target.attributes.iter().enumerate() {
                rows.push(vec![
                    text(name),
                    Value::Int(i as i32),
                    text(target.name),
                    guid(package_guid("package0")),
                    text(type_name),
                    guid(package_guid("package0")),
                    text("customizable"),
                    if default.is_empty() { Value::Null } else { text(default) },
                    Value::Int(0),
                    Value::Null,
                    Value::Null,
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.dm_xe_map_values.
    pub(crate) fn dm_xe_map_values(&self) -> ViewRows {
        let cols = columns(&["name", "object_package_guid", "map_key", "map_value"]);
        let mut rows = Vec::new();
        for map in catalog::ALL_MAPS {
            for (key, value) in map.values() {
                rows.push(vec![
                    text(map.name()),
                    guid(package_guid(map.package())),
                    Value::Int(key as i32),
                    text(value),
                ]);
            }
        }
        (cols, rows)
    }

    /// sys.fn_xe_file_target_read_file(path, mdpath, initial_file_name, initial_offset).
    pub(crate) fn fn_xe_file_target_read_file(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&[
            "module_guid",
            "package_guid",
            "object_name",
            "event_data",
            "file_name",
            "file_offset",
            "timestamp_utc",
        ]);
        let arg = |i: usize| args.get(i).filter(|v| !matches!(v, Value::Null));
        let path = arg(0).map(crate::value::display).unwrap_or_default();
        let initial = match (arg(2), arg(3)) {
            (None, None) => None,
            (Some(file), Some(offset)) => {
                let offset = crate::value::as_i64(offset).unwrap_or(0);
                Some((crate::value::display(file), offset))
            }
            _ => {
                return Err(SqlError::new(
                    25719,
                    16,
                    1,
                    "Initial file name and initial offset must be specified as a pair. Please correct the parameters and retry your query.",
                ));
            }
        };
        let events = self
            .server
            .instance
            .xevents
            .read_files(&path, initial.as_ref().map(|(file, offset)| (file.as_str(), *offset)))?;
        let rows = events
            .into_iter()
            .map(|e| {
                vec![
                    guid(catalog::MODULE_GUID),
                    guid(e.package_guid),
                    Value::Text(e.object_name),
                    Value::Text(e.event_data),
                    Value::Text(e.file_name),
                    Value::BigInt(e.file_offset),
                    e.timestamp_utc
                        .map_or(Value::Null, |t| crate::functions::current_time("SYSDATETIME", t)),
                ]
            })
            .collect();
        Ok((cols, rows))
    }
}

/// An address as varbinary(8).
fn address(address: u64) -> Value {
    crate::dmv::pointer_bytes(address)
}

fn package_guid(package: &str) -> &'static str {
    catalog::package(package).map_or("00000000-0000-0000-0000-000000000000", |p| p.guid)
}

fn guid(text: &str) -> Value {
    engine::record::guid_from_str(text).map_or(Value::Null, Value::Guid)
}

/// The actions the engine cannot see, from the server's sessions: their database, SQL text,
/// client and login.
pub(crate) struct ServerActions(pub std::sync::Weak<crate::server::Server>);

/// How long an action waits for the server's session list or database list. An event can
/// fire on a thread that holds one of them (a wait recorded under it); the action is then
/// left out rather than the thread deadlocked.
const ACTION_LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

impl engine::xevent::ActionProvider for ServerActions {
    fn value(
        &self,
        spid: u16,
        action: &catalog::ActionObject,
    ) -> Option<engine::xevent::FieldValue> {
        use engine::xevent::FieldValue;
        let server = self.0.upgrade()?;
        let sessions = server.sessions.try_lock_for(ACTION_LOCK_PATIENCE)?;
        let info = sessions.get(&spid)?;
        Some(match action.name {
            "database_id" => FieldValue::U64(u64::from(info.database_id)),
            "database_name" => {
                let database_id = info.database_id;
                drop(sessions);
                FieldValue::Text(server.database_name_within(database_id, ACTION_LOCK_PATIENCE)?)
            }
            "sql_text" => FieldValue::Text(info.last_batch.to_string()),
            "client_app_name" => FieldValue::Text(info.program_name.clone()),
            "client_hostname" => FieldValue::Text(info.host_name.clone().unwrap_or_default()),
            "username" => FieldValue::Text(info.login_name.clone()),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(sql: &str) -> EventSessionStatement {
        let dialect = crate::dialect::TsqlDialect::default();
        let mut parser = Parser::new(&dialect).try_with_sql(sql).unwrap();
        assert!(starts(&parser));
        parse(&mut parser).unwrap()
    }

    #[test]
    fn the_seeds_session_parses_with_its_predicate_and_file() {
        let sql = "CREATE EVENT SESSION [log_size_changes] ON SERVER
            ADD EVENT sqlos.wait_info_external (WHERE ([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')),
            ADD EVENT sqlserver.database_file_size_change
            ADD TARGET package0.event_file(SET filename = N'ifi_log_size_changes')";
        let EventSessionStatement::Create { name, body } = parse_text(sql) else { panic!() };
        assert_eq!(name, "log_size_changes");
        assert_eq!(body.add_events.len(), 2);
        assert_eq!(
            body.add_events[0].predicate.as_deref(),
            Some("( [wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER' )")
        );
        assert_eq!(
            body.add_targets[0].settings,
            [("filename".to_string(), "ifi_log_size_changes".to_string())]
        );
        let def = create_definition(&name, &body).unwrap();
        assert_eq!(def.events.len(), 2);
    }

    #[test]
    fn actions_options_and_alter_forms_parse() {
        let sql = "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info(ACTION(sqlserver.session_id, sqlserver.sql_text) WHERE duration > 0 AND opcode = 1)
            ADD TARGET package0.ring_buffer(SET max_memory = (1000))
            WITH (MAX_MEMORY = 4 MB, MAX_DISPATCH_LATENCY = 5 SECONDS, STARTUP_STATE = ON)";
        let EventSessionStatement::Create { name, body } = parse_text(sql) else { panic!() };
        let def = create_definition(&name, &body).unwrap();
        assert_eq!(def.events[0].actions.len(), 2);
        assert_eq!(
            (
                def.options.max_memory_kb,
                def.options.max_dispatch_latency_s,
                def.options.startup_state
            ),
            (4096, 5, true)
        );
        assert_eq!(
            parse_text("ALTER EVENT SESSION s ON SERVER STATE = START"),
            EventSessionStatement::AlterState { name: "s".into(), start: true }
        );
        let EventSessionStatement::Alter { body, .. } = parse_text(
            "ALTER EVENT SESSION s ON SERVER DROP EVENT sqlos.wait_info ADD TARGET package0.event_counter",
        ) else {
            panic!()
        };
        assert_eq!((body.drop_events.len(), body.add_targets.len()), (1, 1));
    }

    #[test]
    fn bad_names_and_options_get_sql_servers_errors() {
        let make = |sql: &str| {
            let EventSessionStatement::Create { name, body } = parse_text(sql) else { panic!() };
            create_definition(&name, &body).unwrap_err().number
        };
        assert_eq!(
            make("CREATE EVENT SESSION s ON SERVER ADD EVENT sqlserver.no_such_event"),
            25623
        );
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info(ACTION(sqlserver.nope))"
            ),
            25623
        );
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info ADD TARGET package0.event_file"
            ),
            25642
        );
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info ADD TARGET package0.ring_buffer(SET nope = 1)"
            ),
            25629
        );
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info WITH (STARTUP_STATE = ON, STARTUP_STATE = OFF)"
            ),
            25702
        );
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info WITH (EVENT_RETENTION_MODE = SOMETIMES)"
            ),
            25703
        );
        assert_eq!(make("CREATE EVENT SESSION [#t] ON SERVER ADD EVENT sqlos.wait_info"), 25701);
        assert_eq!(
            make(
                "CREATE EVENT SESSION s ON SERVER ADD EVENT sqlos.wait_info, ADD EVENT sqlos.wait_info"
            ),
            25626
        );
    }
}
