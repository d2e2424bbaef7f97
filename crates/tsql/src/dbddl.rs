//! CREATE DATABASE and ALTER DATABASE: the front end's parser for file specifications,
//! filegroups and database options (reference §3.2, which sqlparser does not parse), and
//! their execution on the engine's database API.
//!
//! Accepted:
//! - `CREATE DATABASE db [ON [PRIMARY] <filespec> [,...] [, FILEGROUP fg [DEFAULT] <filespec>
//!   [,...]] [LOG ON <filespec> [,...]]] [COLLATE c] [WITH option [,...]]`;
//! - `ALTER DATABASE { db | CURRENT }` with `ADD FILE <filespec> [,...] [TO FILEGROUP fg]`,
//!   `ADD LOG FILE`, `REMOVE FILE`, `MODIFY FILE (NAME = f, SIZE | MAXSIZE | FILEGROWTH ...)`,
//!   `ADD FILEGROUP`, `REMOVE FILEGROUP`, `MODIFY FILEGROUP fg { DEFAULT | AUTOGROW_ALL_FILES |
//!   AUTOGROW_SINGLE_FILE }`, `SET RECOVERY { FULL | SIMPLE | BULK_LOGGED }`,
//!   `SET MIXED_PAGE_ALLOCATION { ON | OFF }`, `SET DELAYED_DURABILITY = { DISABLED | ALLOWED |
//!   FORCED }`, `SET TARGET_RECOVERY_TIME = 0 { SECONDS | MINUTES }`.
//!
//! Deviations (docs/deviations.md):
//! - A Windows path (`C:\Data\x.mdf`, or any name with a backslash) puts the file in the data
//!   directory under its last component, so the seeds' scripts run as written on Linux.
//! - BULK_LOGGED is kept as FULL (no minimally logged operations exist to differ).
//! - DELAYED_DURABILITY ALLOWED is the same as DISABLED: no statement asks for delayed
//!   durability yet. FORCED makes every commit delayed.
//! - `SET SINGLE_USER` and `SET OFFLINE` `WITH ROLLBACK IMMEDIATE | ROLLBACK AFTER n` end the
//!   database's other sessions as KILL does ([`crate::kill`]); SINGLE_USER does not keep the
//!   database to one user afterwards. Without a WITH clause SET OFFLINE fails at once (5070)
//!   where SQL Server waits for the other users to leave.
//! - `SET` options without storage meaning here (MULTI_USER, RESTRICTED_USER, AUTO_*,
//!   PAGE_VERIFY, ...) are accepted and have no effect: sys.databases shows the engine's
//!   fixed behaviour ([`crate::sysdatabases`]). READ_ONLY filegroups, NEWNAME and moving files with FILENAME are refused with 40517,
//!   as is a TARGET_RECOVERY_TIME above 0 (indirect checkpoints are not built).

use crate::front::{last_part, parse_word};
use engine::SqlError;
use engine::database::{Database, DatabaseSpec, FileChange, FileSpec, FilegroupSpec, MaxSize};
use engine::units::SizeSpec;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// ALTER DATABASE actions.
#[derive(Debug, PartialEq)]
pub enum AlterAction {
    AddFiles {
        files: Vec<FileSpec>,
        is_log: bool,
        filegroup: Option<String>,
    },
    RemoveFile(String),
    ModifyFile {
        name: String,
        changes: Vec<FileChange>,
    },
    AddFilegroup(String),
    RemoveFilegroup(String),
    DefaultFilegroup(String),
    AutogrowAllFiles {
        filegroup: String,
        all_files: bool,
    },
    Recovery {
        full: bool,
    },
    MixedPageAllocation(bool),
    DelayedDurability {
        forced: bool,
    },
    /// SET OFFLINE (false) or SET ONLINE (true): the server closes or opens the database
    /// ([`crate::server::Server::set_offline`], [`crate::server::Server::set_online`]).
    State {
        online: bool,
    },
    /// SET SINGLE_USER: with ROLLBACK, the database's other sessions are ended. Deviation: the
    /// database is not kept to one user afterwards.
    SingleUser,
    /// A SET option accepted without effect.
    Ignored,
    /// A valid action this engine does not do (error 40517 when it runs).
    Unsupported(String),
}

/// `ALTER DATABASE target action`; `target` None is CURRENT.
#[derive(Debug, PartialEq)]
pub struct AlterDatabase {
    pub target: Option<String>,
    pub action: AlterAction,
    /// `WITH ROLLBACK ... | NO_WAIT` of a SET option.
    pub termination: Termination,
}

/// How SET OFFLINE or SET SINGLE_USER treats the database's other sessions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Termination {
    /// No WITH clause: SQL Server waits for them to leave (here: fails at once, 5070).
    #[default]
    Wait,
    /// WITH NO_WAIT: fail at once if they are there.
    NoWait,
    /// WITH ROLLBACK IMMEDIATE (0) or ROLLBACK AFTER n SECONDS: after that many seconds the
    /// other sessions in the database are killed, their transactions rolled back.
    RollbackAfter(u64),
}

pub(crate) fn unsupported(what: &str) -> ParserError {
    ParserError::ParserError(format!("unsupported: {what}"))
}

/// The text a `unsupported` parser error carries, if it is one.
pub fn unsupported_option(error: &ParserError) -> Option<String> {
    match error {
        ParserError::ParserError(text) => text.strip_prefix("unsupported: ").map(str::to_string),
        _ => None,
    }
}

/// The error for an option this engine refuses (SQL Server's message for an option an
/// edition lacks).
pub fn unsupported_error(option: &str) -> SqlError {
    SqlError::new(
        40517,
        16,
        1,
        format!(
            "Keyword or statement option '{option}' is not supported in this version of extentdb."
        ),
    )
}

/// A Windows path keeps only its file name (see the module header).
fn local_file_name(path: &str) -> String {
    match path.rsplit_once('\\') {
        Some((_, name)) => name.to_string(),
        None => path.to_string(),
    }
}

/// An identifier, or a string (`NAME = N'x'`).
fn parse_name(parser: &mut Parser<'_>) -> Result<String, ParserError> {
    match parser.peek_token().token {
        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => {
            parser.next_token();
            Ok(s)
        }
        _ => Ok(parser.parse_identifier()?.value),
    }
}

fn parse_string(parser: &mut Parser<'_>) -> Result<String, ParserError> {
    match parser.next_token().token {
        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => Ok(s),
        other => parser.expected("a string", sqlparser::tokenizer::TokenWithSpan::wrap(other)),
    }
}

/// `n [KB | MB | GB | TB | %]`; whole numbers only.
fn parse_size(parser: &mut Parser<'_>, percent_allowed: bool) -> Result<SizeSpec, ParserError> {
    let token = parser.next_token();
    let Token::Number(digits, _) = &token.token else {
        return parser.expected("a size", token);
    };
    if !digits.chars().all(|c| c.is_ascii_digit()) {
        parser.prev_token(); // the error is near the number
        return parser.expected("a whole number", token);
    }
    let mut text = digits.clone();
    if percent_allowed && parser.consume_token(&Token::Mod) {
        text.push('%');
    } else {
        for unit in ["KB", "MB", "GB", "TB"] {
            if parse_word(parser, unit) {
                text.push_str(unit);
                break;
            }
        }
    }
    match SizeSpec::parse(&text) {
        Some(size) => Ok(size),
        None => parser.expected("a size", token),
    }
}

/// `( NAME = n, FILENAME = 'p', SIZE = s, MAXSIZE = m | UNLIMITED, FILEGROWTH = g )`.
fn parse_filespec(parser: &mut Parser<'_>) -> Result<FileSpec, ParserError> {
    Ok(parse_filespec_in_order(parser)?.0)
}

/// A file specification and its options' names in the order written.
fn parse_filespec_in_order(
    parser: &mut Parser<'_>,
) -> Result<(FileSpec, Vec<String>), ParserError> {
    parser.expect_token(&Token::LParen)?;
    let mut spec = FileSpec::new("", "");
    let mut order = Vec::new();
    loop {
        let option = parser.parse_identifier()?.value.to_uppercase();
        parser.expect_token(&Token::Eq)?;
        match option.as_str() {
            "NAME" => spec.name = parse_name(parser)?,
            "FILENAME" => spec.filename = local_file_name(&parse_string(parser)?).into(),
            "SIZE" => spec.size = Some(parse_size(parser, false)?),
            "MAXSIZE" => {
                spec.max_size = Some(if parse_word(parser, "UNLIMITED") {
                    MaxSize::Unlimited
                } else {
                    let size = parse_size(parser, false)?;
                    MaxSize::Kb(size.kb().unwrap_or(0))
                });
            }
            "FILEGROWTH" => spec.growth = Some(parse_size(parser, true)?),
            "NEWNAME" => {
                parse_name(parser)?;
            }
            _ => return parser.expected("a file option", parser.peek_token()),
        }
        order.push(option);
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    if spec.name.is_empty() {
        return parser.expected("NAME", parser.peek_token());
    }
    Ok((spec, order))
}

fn parse_filespecs(parser: &mut Parser<'_>) -> Result<Vec<FileSpec>, ParserError> {
    let mut files = vec![parse_filespec(parser)?];
    while parser.peek_token().token == Token::Comma
        && parser.peek_nth_token(1).token == Token::LParen
    {
        parser.next_token();
        files.push(parse_filespec(parser)?);
    }
    Ok(files)
}

/// A file without FILENAME gets `<logical name>.<ext>` in the data directory.
fn default_file_names(files: &mut [FileSpec], first_ext: &str, other_ext: &str) {
    for (index, file) in files.iter_mut().enumerate() {
        if file.filename.as_os_str().is_empty() {
            let ext = if index == 0 { first_ext } else { other_ext };
            file.filename = format!("{}.{ext}", file.name).into();
        }
    }
}

/// After `CREATE DATABASE`: the rest of the statement.
pub fn parse_create(parser: &mut Parser<'_>) -> Result<DatabaseSpec, ParserError> {
    let name = last_part(&parser.parse_object_name(false)?);
    let mut spec = DatabaseSpec {
        name: name.clone(),
        primary: Vec::new(),
        filegroups: Vec::new(),
        logs: Vec::new(),
        mixed_page_allocation: false,
    };
    if parse_word(parser, "CONTAINMENT") {
        parser.expect_token(&Token::Eq)?;
        if !parse_word(parser, "NONE") {
            return Err(unsupported("CONTAINMENT"));
        }
    }
    if parser.parse_keyword(sqlparser::keywords::Keyword::ON) {
        parse_word(parser, "PRIMARY");
        spec.primary = parse_filespecs(parser)?;
        while parser.consume_token(&Token::Comma) {
            if !parse_word(parser, "FILEGROUP") {
                return parser.expected("FILEGROUP", parser.peek_token());
            }
            let fg_name = parse_name(parser)?;
            let is_default = parse_word(parser, "DEFAULT");
            let files = parse_filespecs(parser)?;
            spec.filegroups.push(FilegroupSpec { name: fg_name, is_default, files });
        }
    }
    if parse_word(parser, "LOG") {
        parser.expect_keyword_is(sqlparser::keywords::Keyword::ON)?;
        spec.logs = parse_filespecs(parser)?;
    }
    if parse_word(parser, "COLLATE") {
        parser.parse_identifier()?;
    }
    if parse_word(parser, "WITH") {
        skip_options(parser);
    }
    if spec.primary.is_empty() {
        spec.primary = vec![FileSpec::new(&name, "")];
        if spec.logs.is_empty() {
            spec.logs = vec![FileSpec::new(&format!("{name}_log"), "")];
        }
    }
    default_file_names(&mut spec.primary, "mdf", "ndf");
    for fg in &mut spec.filegroups {
        default_file_names(&mut fg.files, "ndf", "ndf");
    }
    default_file_names(&mut spec.logs, "ldf", "ldf");
    Ok(spec)
}

/// Skips `option [= value] [, ...]` up to the end of the statement.
fn skip_options(parser: &mut Parser<'_>) {
    loop {
        match parser.peek_token().token {
            Token::EOF | Token::SemiColon => return,
            Token::Word(w) if parser.index() > 0 && is_statement_start(&w.value) => return,
            _ => {}
        }
        parser.next_token();
        match parser.peek_token().token {
            Token::Eq | Token::Comma => {
                parser.next_token();
                parser.next_token();
            }
            _ => return,
        }
    }
}

fn is_statement_start(word: &str) -> bool {
    ["SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP", "USE", "GO", "EXEC"]
        .iter()
        .any(|w| w.eq_ignore_ascii_case(word))
}

/// After `ALTER DATABASE`: the rest of the statement.
pub fn parse_alter(parser: &mut Parser<'_>) -> Result<AlterDatabase, ParserError> {
    let target = if parse_word(parser, "CURRENT") {
        None
    } else {
        Some(last_part(&parser.parse_object_name(false)?))
    };
    let action = if parse_word(parser, "ADD") {
        parse_add(parser)?
    } else if parse_word(parser, "REMOVE") {
        if parse_word(parser, "FILE") {
            AlterAction::RemoveFile(parse_name(parser)?)
        } else if parse_word(parser, "FILEGROUP") {
            AlterAction::RemoveFilegroup(parse_name(parser)?)
        } else {
            return parser.expected("FILE or FILEGROUP", parser.peek_token());
        }
    } else if parse_word(parser, "MODIFY") {
        parse_modify(parser)?
    } else if parser.parse_keyword(sqlparser::keywords::Keyword::SET) {
        parse_set_option(parser)?
    } else {
        return parser.expected("an ALTER DATABASE action", parser.peek_token());
    };
    let termination =
        if parse_word(parser, "WITH") { parse_termination(parser)? } else { Termination::Wait };
    Ok(AlterDatabase { target, action, termination })
}

fn parse_add(parser: &mut Parser<'_>) -> Result<AlterAction, ParserError> {
    if parse_word(parser, "FILEGROUP") {
        let name = parse_name(parser)?;
        if parse_word(parser, "CONTAINS") {
            parser.next_token(); // FILESTREAM or MEMORY_OPTIMIZED_DATA
            return Ok(AlterAction::Unsupported("CONTAINS".into()));
        }
        return Ok(AlterAction::AddFilegroup(name));
    }
    let is_log = parse_word(parser, "LOG");
    if !parse_word(parser, "FILE") {
        return parser.expected("FILE", parser.peek_token());
    }
    let mut files = parse_filespecs(parser)?;
    default_file_names(&mut files, if is_log { "ldf" } else { "ndf" }, "ndf");
    let mut filegroup = None;
    if !is_log && parser.parse_keyword(sqlparser::keywords::Keyword::TO) {
        if !parse_word(parser, "FILEGROUP") {
            return parser.expected("FILEGROUP", parser.peek_token());
        }
        filegroup = Some(parse_name(parser)?);
    }
    Ok(AlterAction::AddFiles { files, is_log, filegroup })
}

fn parse_modify(parser: &mut Parser<'_>) -> Result<AlterAction, ParserError> {
    if parse_word(parser, "FILEGROUP") {
        let filegroup = parse_name(parser)?;
        return if parse_word(parser, "DEFAULT") {
            Ok(AlterAction::DefaultFilegroup(filegroup))
        } else if parse_word(parser, "AUTOGROW_ALL_FILES") {
            Ok(AlterAction::AutogrowAllFiles { filegroup, all_files: true })
        } else if parse_word(parser, "AUTOGROW_SINGLE_FILE") {
            Ok(AlterAction::AutogrowAllFiles { filegroup, all_files: false })
        } else {
            let word = parser.next_token().token.to_string().to_uppercase();
            Ok(AlterAction::Unsupported(word))
        };
    }
    if !parse_word(parser, "FILE") {
        return parser.expected("FILE or FILEGROUP", parser.peek_token());
    }
    let (spec, order) = parse_filespec_in_order(parser)?;
    if let Some(option) = order.iter().find(|o| *o == "NEWNAME" || *o == "FILENAME") {
        return Ok(AlterAction::Unsupported(option.clone()));
    }
    let mut changes = Vec::new();
    for option in &order {
        match option.as_str() {
            "SIZE" => changes.push(FileChange::Size(spec.size.expect("parsed SIZE"))),
            "MAXSIZE" => changes.push(FileChange::MaxSize(spec.max_size.expect("parsed MAXSIZE"))),
            "FILEGROWTH" => changes.push(FileChange::Growth(spec.growth.expect("parsed growth"))),
            _ => {}
        }
    }
    Ok(AlterAction::ModifyFile { name: spec.name, changes })
}

fn parse_on_off(parser: &mut Parser<'_>) -> Result<bool, ParserError> {
    if parser.parse_keyword(sqlparser::keywords::Keyword::ON) {
        Ok(true)
    } else if parse_word(parser, "OFF") {
        Ok(false)
    } else {
        parser.expected("ON or OFF", parser.peek_token())
    }
}

fn parse_set_option(parser: &mut Parser<'_>) -> Result<AlterAction, ParserError> {
    let action = if parse_word(parser, "RECOVERY") {
        if parse_word(parser, "FULL") || parse_word(parser, "BULK_LOGGED") {
            AlterAction::Recovery { full: true }
        } else if parse_word(parser, "SIMPLE") {
            AlterAction::Recovery { full: false }
        } else {
            return parser.expected("FULL, BULK_LOGGED or SIMPLE", parser.peek_token());
        }
    } else if parse_word(parser, "OFFLINE") {
        AlterAction::State { online: false }
    } else if parse_word(parser, "ONLINE") {
        AlterAction::State { online: true }
    } else if parse_word(parser, "MIXED_PAGE_ALLOCATION") {
        AlterAction::MixedPageAllocation(parse_on_off(parser)?)
    } else if parse_word(parser, "TARGET_RECOVERY_TIME") {
        parse_target_recovery_time(parser)?
    } else if parse_word(parser, "DELAYED_DURABILITY") {
        parser.expect_token(&Token::Eq)?;
        if parse_word(parser, "FORCED") {
            AlterAction::DelayedDurability { forced: true }
        } else if parse_word(parser, "DISABLED") || parse_word(parser, "ALLOWED") {
            AlterAction::DelayedDurability { forced: false }
        } else {
            return parser.expected("DISABLED, ALLOWED or FORCED", parser.peek_token());
        }
    } else {
        skip_set_option(parser)?
    };
    Ok(action)
}

/// `TARGET_RECOVERY_TIME = n { SECONDS | MINUTES }`. 0 is what every database here does
/// (automatic checkpoints, as SQL Server's databases before 2016); indirect checkpoints, any
/// other value, are not built (40517 when the statement runs).
fn parse_target_recovery_time(parser: &mut Parser<'_>) -> Result<AlterAction, ParserError> {
    parser.expect_token(&Token::Eq)?;
    let amount = parser.parse_literal_uint()?;
    if !parse_word(parser, "SECONDS") && !parse_word(parser, "MINUTES") {
        return parser.expected("SECONDS or MINUTES", parser.peek_token());
    }
    Ok(if amount == 0 {
        AlterAction::Ignored
    } else {
        AlterAction::Unsupported("TARGET_RECOVERY_TIME".into())
    })
}

/// `ROLLBACK IMMEDIATE | ROLLBACK AFTER n [SECONDS] | NO_WAIT` after `SET ... WITH`.
fn parse_termination(parser: &mut Parser<'_>) -> Result<Termination, ParserError> {
    if parse_word(parser, "NO_WAIT") {
        return Ok(Termination::NoWait);
    }
    if !parse_word(parser, "ROLLBACK") {
        return parser.expected("ROLLBACK or NO_WAIT", parser.peek_token());
    }
    if parse_word(parser, "IMMEDIATE") {
        return Ok(Termination::RollbackAfter(0));
    }
    if !parse_word(parser, "AFTER") {
        return parser.expected("IMMEDIATE or AFTER", parser.peek_token());
    }
    let seconds = parser.parse_literal_uint()?;
    parse_word(parser, "SECONDS");
    Ok(Termination::RollbackAfter(seconds))
}

/// An option with no storage meaning: `WORD [= value | ON | OFF | value]`.
fn skip_set_option(parser: &mut Parser<'_>) -> Result<AlterAction, ParserError> {
    let option = parser.parse_identifier()?.value.to_uppercase();
    const NO_VALUE: [&str; 5] =
        ["SINGLE_USER", "MULTI_USER", "RESTRICTED_USER", "READ_WRITE", "READ_ONLY"];
    if NO_VALUE.contains(&option.as_str()) {
        if option == "READ_ONLY" {
            return Ok(AlterAction::Unsupported(option));
        }
        if option == "SINGLE_USER" {
            return Ok(AlterAction::SingleUser);
        }
        return Ok(AlterAction::Ignored);
    }
    let _ = parser.consume_token(&Token::Eq);
    parser.next_token();
    Ok(AlterAction::Ignored)
}

/// Runs an ALTER DATABASE action on `db`.
pub fn alter(db: &Database, action: &AlterAction) -> Result<(), SqlError> {
    match action {
        AlterAction::AddFiles { files, is_log: true, .. } => db.add_log_files(files),
        AlterAction::AddFiles { files, is_log: false, filegroup } => {
            db.add_files(files, filegroup.as_deref())
        }
        AlterAction::RemoveFile(name) => db.remove_file(name),
        AlterAction::ModifyFile { name, changes } => {
            for change in changes {
                db.modify_file(name, *change)?;
            }
            Ok(())
        }
        AlterAction::AddFilegroup(name) => db.add_filegroup(name),
        AlterAction::RemoveFilegroup(name) => db.remove_filegroup(name),
        AlterAction::DefaultFilegroup(name) => db.set_default_filegroup(name),
        AlterAction::AutogrowAllFiles { filegroup, all_files } => {
            db.set_autogrow_all_files(filegroup, *all_files)
        }
        AlterAction::Recovery { full } => db.set_recovery_full(*full),
        AlterAction::MixedPageAllocation(on) => db.set_mixed_page_allocation(*on),
        AlterAction::DelayedDurability { forced } => {
            db.set_delayed_durability(*forced);
            Ok(())
        }
        AlterAction::State { .. } => unreachable!("the server changes a database's state"),
        AlterAction::Ignored | AlterAction::SingleUser => Ok(()),
        AlterAction::Unsupported(option) => Err(unsupported_error(option)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::{Parsed, Stmt, parse_batch};
    use std::path::PathBuf;

    fn one(sql: &str) -> Stmt {
        let mut parsed: Vec<Parsed> = parse_batch(sql).unwrap();
        assert_eq!(parsed.len(), 1, "{sql}");
        parsed.remove(0).stmt
    }

    #[test]
    fn create_database_with_filegroups_and_windows_paths() {
        let sql = "CREATE DATABASE PF ON PRIMARY \
            (NAME = N'PF_data', FILENAME = N'C:\\SQL\\PF_data.mdf', SIZE = 5MB, FILEGROWTH = 0), \
            (NAME = PF2, FILENAME = 'PF2.ndf', SIZE = 5120KB, MAXSIZE = 1GB, FILEGROWTH = 10%), \
            FILEGROUP FG2 DEFAULT (NAME = PF3, FILENAME = 'PF3.ndf') \
            LOG ON (NAME = PF_log, FILENAME = 'D:\\Logs\\PF_log.ldf', SIZE = 64MB, MAXSIZE = UNLIMITED)";
        let Stmt::CreateDatabase(spec) = one(sql) else { panic!() };
        assert_eq!(spec.name, "PF");
        assert_eq!(spec.primary.len(), 2);
        assert_eq!(spec.primary[0].filename, PathBuf::from("PF_data.mdf"));
        assert_eq!(spec.primary[0].size, Some(SizeSpec::Kb(5 * 1024)));
        assert_eq!(spec.primary[0].growth, Some(SizeSpec::Kb(0)));
        assert_eq!(spec.primary[1].max_size, Some(MaxSize::Kb(1024 * 1024)));
        assert_eq!(spec.primary[1].growth, Some(SizeSpec::Percent(10)));
        assert_eq!(spec.filegroups[0].name, "FG2");
        assert!(spec.filegroups[0].is_default);
        assert_eq!(spec.logs[0].filename, PathBuf::from("PF_log.ldf"));
        assert_eq!(spec.logs[0].max_size, Some(MaxSize::Unlimited));
    }

    #[test]
    fn plain_create_database_names_files_as_sql_server_does() {
        let Stmt::CreateDatabase(spec) = one("CREATE DATABASE Sales") else { panic!() };
        assert_eq!(spec.primary[0].name, "Sales");
        assert_eq!(spec.primary[0].filename, PathBuf::from("Sales.mdf"));
        assert_eq!(spec.logs[0].name, "Sales_log");
        assert_eq!(spec.logs[0].filename, PathBuf::from("Sales_log.ldf"));
    }

    #[test]
    fn alter_database_actions() {
        let cases: Vec<(&str, AlterAction)> = vec![
            (
                "ALTER DATABASE d ADD FILE (NAME = f3, FILENAME = 'f3.ndf', SIZE = 8MB) TO FILEGROUP [FG2]",
                AlterAction::AddFiles {
                    files: vec![FileSpec::new("f3", "f3.ndf").size(SizeSpec::Kb(8192))],
                    is_log: false,
                    filegroup: Some("FG2".into()),
                },
            ),
            (
                "ALTER DATABASE d MODIFY FILE (NAME = f3, FILEGROWTH = 1MB, SIZE = 20MB)",
                AlterAction::ModifyFile {
                    name: "f3".into(),
                    changes: vec![
                        FileChange::Growth(SizeSpec::Kb(1024)),
                        FileChange::Size(SizeSpec::Kb(20 * 1024)),
                    ],
                },
            ),
            (
                "ALTER DATABASE d MODIFY FILEGROUP [PRIMARY] AUTOGROW_ALL_FILES",
                AlterAction::AutogrowAllFiles { filegroup: "PRIMARY".into(), all_files: true },
            ),
            ("ALTER DATABASE d SET RECOVERY SIMPLE", AlterAction::Recovery { full: false }),
            (
                "ALTER DATABASE d SET MIXED_PAGE_ALLOCATION ON",
                AlterAction::MixedPageAllocation(true),
            ),
            ("ALTER DATABASE d SET SINGLE_USER WITH ROLLBACK IMMEDIATE", AlterAction::SingleUser),
            (
                "ALTER DATABASE d SET OFFLINE WITH ROLLBACK IMMEDIATE",
                AlterAction::State { online: false },
            ),
            ("ALTER DATABASE d SET ONLINE", AlterAction::State { online: true }),
            ("ALTER DATABASE d SET TARGET_RECOVERY_TIME = 0 SECONDS", AlterAction::Ignored),
            (
                "ALTER DATABASE d SET TARGET_RECOVERY_TIME = 1 MINUTES",
                AlterAction::Unsupported("TARGET_RECOVERY_TIME".into()),
            ),
            ("ALTER DATABASE d SET MULTI_USER WITH ROLLBACK AFTER 5 SECONDS", AlterAction::Ignored),
            ("ALTER DATABASE d REMOVE FILE f3", AlterAction::RemoveFile("f3".into())),
        ];
        for (sql, expected) in cases {
            let Stmt::AlterDatabase(alter) = one(sql) else { panic!("{sql}") };
            assert_eq!(alter.action, expected, "{sql}");
        }
        let terminations = [
            ("ALTER DATABASE d SET OFFLINE", Termination::Wait),
            ("ALTER DATABASE d SET OFFLINE WITH NO_WAIT", Termination::NoWait),
            (
                "ALTER DATABASE d SET SINGLE_USER WITH ROLLBACK IMMEDIATE",
                Termination::RollbackAfter(0),
            ),
            (
                "ALTER DATABASE d SET OFFLINE WITH ROLLBACK AFTER 5 SECONDS",
                Termination::RollbackAfter(5),
            ),
        ];
        for (sql, expected) in terminations {
            let Stmt::AlterDatabase(alter) = one(sql) else { panic!("{sql}") };
            assert_eq!(alter.termination, expected, "{sql}");
        }
    }

    #[test]
    fn set_options_do_not_swallow_the_next_statement() {
        let sql = "ALTER DATABASE d SET SINGLE_USER WITH ROLLBACK IMMEDIATE\nPRINT 'x'";
        assert_eq!(parse_batch(sql).unwrap().len(), 2);
        // Regression: OFFLINE, taken for an option with a value, swallowed PRINT.
        let sql = "ALTER DATABASE d SET OFFLINE\nPRINT 'x'";
        assert_eq!(parse_batch(sql).unwrap().len(), 2);
    }

    #[test]
    fn decimal_sizes_are_syntax_errors() {
        let (error, _) =
            parse_batch("ALTER DATABASE d MODIFY FILE (NAME = f, SIZE = 1.5GB)").unwrap_err();
        assert_eq!(error.number, 102);
    }
}
