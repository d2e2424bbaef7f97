//! ALTER INDEX { name | ALL } ON table { REBUILD | REORGANIZE } [WITH (options)] and ALTER
//! TABLE table REBUILD: an index built again from its table's rows, in new pages, which takes
//! away its fragmentation (sys.dm_db_index_physical_stats shows the difference).
//!
//! What it reproduces:
//! - REBUILD of a nonclustered index builds that index again into a new allocation unit in its
//!   filegroup; of the clustered index (or ALL, or ALTER TABLE ... REBUILD), the table.
//!   ALTER INDEX ALL on a heap rebuilds its nonclustered indexes and leaves the heap; ALTER
//!   TABLE ... REBUILD rebuilds a heap too. It runs in the statement's transaction under an
//!   X lock on the table: a ROLLBACK gives the old pages back.
//! - A missing table is 1088, a missing index 7999; DISABLE and SET are 40517, as are the
//!   options that would change the pages (FILLFACTOR, PAD_INDEX, DATA_COMPRESSION...).
//!
//! Deviations: the rebuild is offline whatever ONLINE says (SQL Server's offline rebuild
//! holds the same X lock; an online one lets changes through meanwhile); rebuilding the
//! clustered index rebuilds the nonclustered ones too ([`engine::catalog::Catalog::rebuild_table`];
//! SQL Server keeps them, their keys unchanged); REORGANIZE is a rebuild, where SQL Server
//! compacts and reorders the leaf pages in place, page by page; the options that only tune
//! the work (ONLINE, MAXDOP, SORT_IN_TEMPDB, STATISTICS_NORECOMPUTE, ALLOW_ROW_LOCKS,
//! ALLOW_PAGE_LOCKS, LOB_COMPACTION, PARTITION = ALL) are accepted and change nothing.

use crate::front::{is_word, last_part, parse_word};
use crate::session::{Failure, Flow, Session};
use crate::value::Result;
use engine::SqlError;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// Options accepted and without effect here (module header).
const TUNING_OPTIONS: [&str; 8] = [
    "ONLINE",
    "MAXDOP",
    "SORT_IN_TEMPDB",
    "STATISTICS_NORECOMPUTE",
    "ALLOW_ROW_LOCKS",
    "ALLOW_PAGE_LOCKS",
    "LOB_COMPACTION",
    "PARTITION",
];

/// A parsed ALTER INDEX, or ALTER TABLE ... REBUILD.
#[derive(Clone, Debug, PartialEq)]
pub struct AlterIndex {
    /// The index; None for ALL.
    pub index: Option<String>,
    pub table: String,
    /// ALTER TABLE ... REBUILD: the heap too.
    pub whole_table: bool,
    /// REBUILD, REORGANIZE, DISABLE or SET, in upper case.
    pub action: String,
    /// Option names in upper case, with their values as written.
    pub options: Vec<(String, String)>,
}

/// Whether the next tokens start ALTER INDEX, or ALTER TABLE name REBUILD.
pub fn starts(parser: &Parser<'_>) -> bool {
    let word_at = |n: usize, word: &str| is_word(&parser.peek_nth_token(n).token, word);
    if word_at(0, "ALTER") && word_at(1, "INDEX") {
        return true;
    }
    crate::front::alter_table_action_at(parser).is_some_and(|at| word_at(at, "REBUILD"))
}

pub fn parse(parser: &mut Parser<'_>) -> std::result::Result<AlterIndex, ParserError> {
    parser.next_token(); // ALTER
    if parse_word(parser, "TABLE") {
        let table = last_part(&parser.parse_object_name(false)?);
        parser.next_token(); // REBUILD
        let options = parse_options(parser, false)?;
        let action = "REBUILD".to_string();
        return Ok(AlterIndex { index: None, table, whole_table: true, action, options });
    }
    parser.next_token(); // INDEX
    let index =
        if parse_word(parser, "ALL") { None } else { Some(parser.parse_identifier()?.value) };
    if !parse_word(parser, "ON") {
        return parser.expected("ON", parser.peek_token());
    }
    let table = last_part(&parser.parse_object_name(false)?);
    let action = parser.next_token().token.to_string().to_uppercase();
    if !["REBUILD", "REORGANIZE", "DISABLE", "SET"].contains(&action.as_str()) {
        parser.prev_token();
        return parser.expected("REBUILD, REORGANIZE, DISABLE or SET", parser.peek_token());
    }
    let options = parse_options(parser, action == "SET")?;
    Ok(AlterIndex { index, table, whole_table: false, action, options })
}

/// `[PARTITION = n | ALL] [WITH (name = value, ...)]`, or SET's `(name = value, ...)`.
fn parse_options(
    parser: &mut Parser<'_>,
    bare_list: bool,
) -> std::result::Result<Vec<(String, String)>, ParserError> {
    let mut options = Vec::new();
    if parse_word(parser, "PARTITION") {
        parser.expect_token(&Token::Eq)?;
        options.push(("PARTITION".to_string(), parser.next_token().token.to_string()));
    }
    if !bare_list && !parse_word(parser, "WITH") {
        return Ok(options);
    }
    parser.expect_token(&Token::LParen)?;
    loop {
        let name = parser.parse_identifier()?.value.to_uppercase();
        parser.expect_token(&Token::Eq)?;
        options.push((name, parser.next_token().token.to_string()));
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    Ok(options)
}

impl Session {
    pub(crate) fn alter_index(
        &mut self,
        statement: &AlterIndex,
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        self.atomic(line, |s| s.rebuild_indexes(statement))?;
        Ok(Flow::Next)
    }

    fn rebuild_indexes(&mut self, statement: &AlterIndex) -> Result<()> {
        if statement.action == "DISABLE" || statement.action == "SET" {
            let what = format!("ALTER INDEX {}", statement.action);
            return Err(crate::query::not_supported_option(&what));
        }
        if let Some((name, _)) =
            statement.options.iter().find(|(name, _)| !TUNING_OPTIONS.contains(&name.as_str()))
        {
            return Err(crate::query::not_supported_option(name));
        }
        let stored = self.catalog_name(&statement.table)?;
        let catalog = self.db().catalog()?;
        let table = catalog.table(&stored).ok_or_else(|| no_such_object(&statement.table))?;
        let positions: Vec<usize> = match &statement.index {
            Some(name) => {
                let found = table.indexes.iter().position(|i| i.name.eq_ignore_ascii_case(name));
                vec![found.ok_or_else(|| no_such_index(name, &statement.table))?]
            }
            // The clustered index's rebuild builds the nonclustered ones too.
            None if statement.whole_table || !table.is_heap() => vec![0],
            None => (1..table.indexes.len()).collect(),
        };
        for position in positions {
            catalog.rebuild_index(self.db(), &stored, position)?;
        }
        Ok(())
    }
}

/// 1088: ALTER INDEX on a table that does not exist.
fn no_such_object(name: &str) -> SqlError {
    let text = format!(
        "Cannot find the object \"{name}\" because it does not exist or you do not have permissions."
    );
    SqlError::new(1088, 16, 12, text)
}

/// 7999: ALTER INDEX naming an index the table does not have.
fn no_such_index(index: &str, table: &str) -> SqlError {
    SqlError::new(
        7999,
        16,
        9,
        format!("Could not find any index named '{index}' for table '{table}'."),
    )
}
