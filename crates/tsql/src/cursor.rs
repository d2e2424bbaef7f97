//! Transact-SQL cursors: DECLARE name CURSOR ... FOR select, OPEN, FETCH ... [INTO @v, ...],
//! CLOSE, DEALLOCATE, @@FETCH_STATUS, @@CURSOR_ROWS and CURSOR_STATUS, with SQL Server's
//! errors (16905, 16911, 16915, 16916, 16917, 16924).
//!
//! What it reproduces: a cursor is GLOBAL (the connection's until DEALLOCATE, or the session's
//! end) unless declared LOCAL (deallocated when its batch or procedure ends); FORWARD_ONLY
//! cursors (the default, and FAST_FORWARD) fetch NEXT only; SCROLL, STATIC, KEYSET and
//! DYNAMIC ones also PRIOR, FIRST, LAST, ABSOLUTE n and RELATIVE n. A fetch past either end
//! sets @@FETCH_STATUS to -1 and leaves the variables as they were.
//!
//! Deviation: every cursor is STATIC: OPEN runs the query and keeps its rows, so a cursor does
//! not see changes made after it opened (SQL Server's DYNAMIC, KEYSET and FAST_FORWARD
//! cursors may), and @@CURSOR_ROWS is always the full count. FOR UPDATE and WHERE CURRENT OF
//! are not built (40517).

use crate::front::{is_word, parse_word};
use engine::SqlError;
use engine::record::Value;
use sqlparser::ast::{Expr, Query};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;
use std::collections::BTreeMap;

/// Where a FETCH moves.
#[derive(Debug, Clone)]
pub enum Direction {
    Next,
    Prior,
    First,
    Last,
    Absolute(Box<Expr>),
    Relative(Box<Expr>),
}

impl Direction {
    fn name(&self) -> &'static str {
        match self {
            Direction::Next => "next",
            Direction::Prior => "prior",
            Direction::First => "first",
            Direction::Last => "last",
            Direction::Absolute(_) => "absolute",
            Direction::Relative(_) => "relative",
        }
    }
}

/// A cursor statement, as the parser front end hands it over.
#[derive(Debug)]
pub enum CursorStmt {
    Declare { name: String, local: bool, scroll: bool, query: Box<Query> },
    Open(String),
    Fetch { name: String, direction: Direction, into: Vec<String> },
    Close(String),
    Deallocate(String),
}

/// How [`parse_fetch`] tells the front end that a direction is not followed by FROM (153).
pub const FETCH_OPTION_MARK: &str = "fetch option: ";

/// Error 153 for a FETCH direction without FROM.
pub fn invalid_fetch_option(error: &ParserError) -> Option<SqlError> {
    let ParserError::ParserError(text) = error else { return None };
    let option = text.strip_prefix(FETCH_OPTION_MARK)?.to_uppercase();
    let message = format!("Invalid usage of the option {option} in the FETCH statement.");
    Some(SqlError::new(153, 15, 2, message))
}

/// Whether the tokens ahead start a cursor statement.
pub fn starts(parser: &Parser<'_>) -> bool {
    let first = parser.peek_token().token;
    let second = parser.peek_nth_token(1).token;
    let names_cursor = matches!(&second, Token::Word(w) if !w.value.starts_with('@'));
    if is_word(&first, "DECLARE") && names_cursor {
        let mut at = 2;
        while ["INSENSITIVE", "SCROLL"].iter().any(|w| is_word(&parser.peek_nth_token(at).token, w))
        {
            at += 1;
        }
        return is_word(&parser.peek_nth_token(at).token, "CURSOR");
    }
    let cursor_verb = ["OPEN", "CLOSE", "DEALLOCATE"].iter().any(|w| is_word(&first, w));
    (cursor_verb && matches!(second, Token::Word(_))) || is_word(&first, "FETCH")
}

/// Parses a cursor statement ([`starts`] said it is one).
pub fn parse(parser: &mut Parser<'_>) -> Result<CursorStmt, ParserError> {
    let verb = parser.next_token().token.to_string().to_uppercase();
    match verb.as_str() {
        "DECLARE" => parse_declare(parser),
        "OPEN" => Ok(CursorStmt::Open(parse_name(parser)?)),
        "CLOSE" => Ok(CursorStmt::Close(parse_name(parser)?)),
        "DEALLOCATE" => Ok(CursorStmt::Deallocate(parse_name(parser)?)),
        _ => parse_fetch(parser),
    }
}

/// `[GLOBAL] name`.
fn parse_name(parser: &mut Parser<'_>) -> Result<String, ParserError> {
    parse_word(parser, "GLOBAL");
    Ok(parser.parse_identifier()?.value)
}

fn parse_declare(parser: &mut Parser<'_>) -> Result<CursorStmt, ParserError> {
    let name = parser.parse_identifier()?.value;
    let (mut local, mut scroll) = (false, false);
    loop {
        let token = parser.next_token().token;
        let word = token.to_string().to_uppercase();
        match word.as_str() {
            "CURSOR" | "INSENSITIVE" | "GLOBAL" | "FORWARD_ONLY" | "FAST_FORWARD" | "READ_ONLY"
            | "SCROLL_LOCKS" | "OPTIMISTIC" | "TYPE_WARNING" => {}
            "LOCAL" => local = true,
            "SCROLL" | "STATIC" | "KEYSET" | "DYNAMIC" => scroll = true,
            "FOR" => break,
            _ => return parser.expected("FOR", parser.peek_token()),
        }
    }
    let query = parser.parse_query()?;
    if parse_word(parser, "FOR") {
        return Err(ParserError::ParserError("unsupported: FOR UPDATE".into()));
    }
    Ok(CursorStmt::Declare { name, local, scroll, query })
}

fn parse_fetch(parser: &mut Parser<'_>) -> Result<CursorStmt, ParserError> {
    let mut direction = Direction::Next;
    let mut explicit = true;
    if parse_word(parser, "NEXT") {
    } else if parse_word(parser, "PRIOR") {
        direction = Direction::Prior;
    } else if parse_word(parser, "FIRST") {
        direction = Direction::First;
    } else if parse_word(parser, "LAST") {
        direction = Direction::Last;
    } else if parse_word(parser, "ABSOLUTE") {
        direction = Direction::Absolute(Box::new(parser.parse_expr()?));
    } else if parse_word(parser, "RELATIVE") {
        direction = Direction::Relative(Box::new(parser.parse_expr()?));
    } else {
        explicit = false;
    }
    if explicit && !parse_word(parser, "FROM") {
        // `ORDER BY a FETCH NEXT 1 ROWS ONLY` (FETCH without OFFSET) ends the SELECT and
        // reads as a cursor's FETCH here too, as in SQL Server.
        return Err(ParserError::ParserError(format!("{FETCH_OPTION_MARK}{}", direction.name())));
    }
    parse_word(parser, "FROM");
    let name = parse_name(parser)?;
    let mut into = Vec::new();
    if parse_word(parser, "INTO") {
        loop {
            into.push(parser.parse_identifier()?.value);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    Ok(CursorStmt::Fetch { name, direction, into })
}

/// One declared cursor.
pub struct Cursor {
    pub query: Box<Query>,
    pub local: bool,
    pub scroll: bool,
    /// The @@NESTLEVEL of the scope that declared it (a LOCAL cursor ends with it).
    pub nest_level: u32,
    /// The rows while open.
    pub rows: Option<Vec<Vec<Value>>>,
    /// The query's column names (a FETCH without INTO sends its row under them).
    pub columns: Vec<String>,
    /// Before the first row (0), on row n (1-based), or past the last (rows + 1).
    pub position: usize,
}

/// A session's cursors and its last fetch's status.
pub struct Cursors {
    by_name: BTreeMap<String, Cursor>,
    /// @@FETCH_STATUS.
    pub fetch_status: i32,
    /// @@CURSOR_ROWS: the rows of the cursor opened last.
    pub cursor_rows: i64,
}

impl Default for Cursors {
    /// No cursor; @@FETCH_STATUS -1 until a fetch.
    fn default() -> Self {
        Cursors { by_name: BTreeMap::new(), fetch_status: -1, cursor_rows: 0 }
    }
}

fn cursor_error(number: i32, message: String) -> SqlError {
    SqlError::new(number, 16, 1, message)
}

fn does_not_exist(name: &str) -> SqlError {
    cursor_error(16916, format!("A cursor with the name '{name}' does not exist."))
}

fn not_open() -> SqlError {
    SqlError::new(16917, 16, 2, "Cursor is not open.")
}

impl Cursors {
    pub fn declare(&mut self, name: &str, cursor: Cursor) -> Result<(), SqlError> {
        let key = name.to_lowercase();
        if self.by_name.contains_key(&key) {
            return Err(cursor_error(
                16915,
                format!("A cursor with the name '{name}' already exists."),
            ));
        }
        self.by_name.insert(key, cursor);
        Ok(())
    }

    pub fn get_mut(&mut self, name: &str) -> Result<&mut Cursor, SqlError> {
        self.by_name.get_mut(&name.to_lowercase()).ok_or_else(|| does_not_exist(name))
    }

    /// The query OPEN runs: 16916 for no such cursor, 16905 if it is open.
    pub fn query_to_open(&mut self, name: &str) -> Result<Box<Query>, SqlError> {
        let cursor = self.get_mut(name)?;
        if cursor.rows.is_some() {
            return Err(cursor_error(16905, "The cursor is already open.".into()));
        }
        Ok(cursor.query.clone())
    }

    /// OPEN: the cursor keeps its query's result ([`Cursors::query_to_open`] first).
    pub fn open(
        &mut self,
        name: &str,
        columns: Vec<String>,
        rows: Vec<Vec<Value>>,
    ) -> Result<(), SqlError> {
        let cursor = self.get_mut(name)?;
        let count = rows.len() as i64;
        cursor.columns = columns;
        cursor.rows = Some(rows);
        cursor.position = 0;
        self.cursor_rows = count;
        Ok(())
    }

    /// FETCH: the row the cursor moves to, None past either end (@@FETCH_STATUS -1).
    /// `offset` is ABSOLUTE's or RELATIVE's n.
    pub fn fetch(
        &mut self,
        name: &str,
        direction: &Direction,
        offset: i64,
    ) -> Result<Option<Vec<Value>>, SqlError> {
        let cursor = self.get_mut(name)?;
        if !cursor.scroll && !matches!(direction, Direction::Next) {
            return Err(cursor_error(
                16911,
                format!(
                    "fetch: The fetch type {} cannot be used with forward only cursors.",
                    direction.name()
                ),
            ));
        }
        let Some(rows) = &cursor.rows else { return Err(not_open()) };
        let count = rows.len() as i64;
        let current = cursor.position as i64;
        let target = match direction {
            Direction::Next => current + 1,
            Direction::Prior => current - 1,
            Direction::First => 1,
            Direction::Last => count,
            Direction::Absolute(_) if offset < 0 => count + 1 + offset,
            Direction::Absolute(_) => offset,
            Direction::Relative(_) => current + offset,
        };
        let clamped = target.clamp(0, count + 1);
        cursor.position = clamped as usize;
        let row = if (1..=count).contains(&clamped) {
            Some(rows[clamped as usize - 1].clone())
        } else {
            None
        };
        self.fetch_status = if row.is_some() { 0 } else { -1 };
        Ok(row)
    }

    pub fn close(&mut self, name: &str) -> Result<(), SqlError> {
        let cursor = self.get_mut(name)?;
        if cursor.rows.take().is_none() {
            return Err(not_open());
        }
        Ok(())
    }

    pub fn deallocate(&mut self, name: &str) -> Result<(), SqlError> {
        self.by_name.remove(&name.to_lowercase()).map(|_| ()).ok_or_else(|| does_not_exist(name))
    }

    /// Deallocates the LOCAL cursors of scopes at or deeper than `nest_level` (their batch or
    /// procedure ended).
    pub fn end_scope(&mut self, nest_level: u32) {
        self.by_name.retain(|_, c| !(c.local && c.nest_level >= nest_level));
    }

    /// CURSOR_STATUS('local' | 'global', name): 1 open with rows, 0 open and empty, -1
    /// closed, -3 no such cursor.
    pub fn status(&self, scope: &str, name: &str) -> i16 {
        let Some(cursor) = self.by_name.get(&name.to_lowercase()) else { return -3 };
        if cursor.local != scope.eq_ignore_ascii_case("local") {
            return -3;
        }
        match &cursor.rows {
            Some(rows) if rows.is_empty() => 0,
            Some(_) => 1,
            None => -1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(scroll: bool) -> Cursor {
        let query = crate::front::parse_query_text("SELECT 1").expect("query");
        let columns = Vec::new();
        Cursor { query, local: false, scroll, nest_level: 0, rows: None, columns, position: 0 }
    }

    fn row(n: i32) -> Vec<Value> {
        vec![Value::Int(n)]
    }

    #[test]
    fn fetches_move_through_the_rows_and_stop_past_the_ends() {
        let mut cursors = Cursors::default();
        cursors.declare("c", cursor(true)).expect("declare");
        cursors.open("c", Vec::new(), vec![row(1), row(2), row(3)]).expect("open");
        assert_eq!(cursors.fetch("c", &Direction::Last, 0).expect("last"), Some(row(3)));
        assert_eq!(cursors.fetch("c", &Direction::Next, 0).expect("next"), None);
        assert_eq!(cursors.fetch_status, -1);
        assert_eq!(cursors.fetch("c", &Direction::Prior, 0).expect("prior"), Some(row(3)));
        let absolute = Direction::Absolute(Box::new(Expr::Identifier("n".into())));
        assert_eq!(cursors.fetch("c", &absolute, -3).expect("absolute"), Some(row(1)));
        let relative = Direction::Relative(Box::new(Expr::Identifier("n".into())));
        assert_eq!(cursors.fetch("c", &relative, 1).expect("relative"), Some(row(2)));
        assert_eq!(cursors.fetch_status, 0);
    }

    #[test]
    fn forward_only_cursors_fetch_next_only() {
        let mut cursors = Cursors::default();
        cursors.declare("c", cursor(false)).expect("declare");
        assert_eq!(cursors.fetch("c", &Direction::Next, 0).unwrap_err().number, 16917);
        cursors.open("c", Vec::new(), vec![row(1)]).expect("open");
        assert_eq!(cursors.fetch("c", &Direction::Prior, 0).unwrap_err().number, 16911);
        assert_eq!(cursors.query_to_open("c").unwrap_err().number, 16905);
        assert_eq!(cursors.declare("C", cursor(false)).unwrap_err().number, 16915);
        cursors.close("c").expect("close");
        assert_eq!(cursors.close("c").unwrap_err().number, 16917);
        cursors.deallocate("c").expect("deallocate");
        assert_eq!(cursors.deallocate("c").unwrap_err().number, 16916);
    }
}
