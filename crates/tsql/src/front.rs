//! The parser front end: sqlparser (MsSqlDialect, pinned, through [`crate::dialect`]) parses
//! most statements; this module parses what it cannot (reference rust-deps-and-style.md §A.1)
//! and keeps every sqlparser type behind [`Stmt`].
//!
//! Handled here:
//! - `CREATE [UNIQUE] [CLUSTERED | NONCLUSTERED] INDEX name ON table (columns) [ON filegroup]`;
//! - `PRIMARY KEY CLUSTERED | NONCLUSTERED` and `UNIQUE CLUSTERED | NONCLUSTERED` inside CREATE
//!   TABLE (the words are taken out of the token stream and remembered), `ROWGUIDCOL` (the
//!   same), and a trailing `ON [filegroup]` after CREATE TABLE;
//! - `CHECKPOINT`, `RECONFIGURE [WITH OVERRIDE]`, `SAVE TRAN[SACTION] name`;
//! - MERGE's own parse errors: no semicolon at its end (10714), and an action its clause does
//!   not allow (10711, 10712), which sqlparser would report as syntax errors;
//! - a table value constructor whose rows differ in width (10710, [`check_values_rows`]);
//! - WAITFOR's literal that is not a time string (148), found before the batch runs;
//! - `BEGIN TRAN[SACTION] name [WITH MARK]` (sqlparser reads only the unnamed form), and a
//!   name over 32 characters (103), found before the batch runs;
//! - a variable declared twice in a batch or procedure (134), and a USE in a procedure's body
//!   (154), found before the batch runs ([`check_declarations`]).
//!
//! Syntax errors are SQL Server's 102 ("Incorrect syntax near 'x'.") or 156 (near a keyword),
//! with the line; the whole batch then does not run, as in SQL Server.

use crate::dialect::TsqlDialect;
use engine::SqlError;
use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError, ParserOptions};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};
use std::ops::ControlFlow;

/// A parsed statement.
#[derive(Debug)]
pub enum Stmt {
    Sql(Box<Statement>),
    /// CREATE TABLE with what sqlparser does not keep: per PRIMARY KEY / UNIQUE in text order,
    /// CLUSTERED (true), NONCLUSTERED (false) or neither; ROWGUIDCOL columns; the filegroup.
    CreateTable {
        statement: Box<Statement>,
        clustering: Vec<Option<bool>>,
        rowguidcol: Vec<String>,
        filegroup: Option<String>,
    },
    CreateIndex {
        name: String,
        table: String,
        unique: bool,
        clustered: bool,
        columns: Vec<String>,
        filegroup: Option<String>,
    },
    Checkpoint,
    /// RECONFIGURE [WITH OVERRIDE].
    Reconfigure {
        with_override: bool,
    },
    SaveTran(String),
    /// BEGIN TRAN[SACTION] [name | @variable [WITH MARK ['description']]]: the name, if any.
    BeginTran(Option<String>),
    CreateDatabase(engine::database::DatabaseSpec),
    AlterDatabase(crate::dbddl::AlterDatabase),
    /// IF, WHILE and BEGIN...END are parsed here (sqlparser's WHILE block wants semicolons).
    If {
        condition: sqlparser::ast::Expr,
        then: Vec<Parsed>,
        otherwise: Vec<Parsed>,
    },
    While {
        condition: sqlparser::ast::Expr,
        body: Vec<Parsed>,
    },
    Block(Vec<Parsed>),
    Break,
    Continue,
    /// BEGIN TRY ... END TRY BEGIN CATCH ... END CATCH.
    TryCatch {
        try_body: Vec<Parsed>,
        catch_body: Vec<Parsed>,
    },
    /// CREATE [OR ALTER] PROC[EDURE] or ALTER PROC[EDURE]: the whole batch.
    CreateProcedure(Box<crate::procs::ProcedureDef>),
    /// DROP PROC[EDURE] [IF EXISTS] name [, name].
    DropProcedure {
        names: Vec<String>,
        if_exists: bool,
    },
    /// EXEC[UTE] procedure or EXEC[UTE] (string).
    Exec(Box<crate::procs::Exec>),
    /// SET STATISTICS {IO | TIME | PROFILE | XML} [, ...] {ON | OFF}.
    SetStatistics {
        options: Vec<String>,
        on: bool,
    },
    /// DECLARE ... CURSOR, OPEN, FETCH, CLOSE, DEALLOCATE.
    Cursor(Box<crate::cursor::CursorStmt>),
    /// INSERT [INTO] table [(columns)] EXEC[UTE] ...: the rows of the EXEC's result sets go
    /// into the table.
    InsertExec {
        table: String,
        columns: Vec<String>,
        exec: Box<crate::procs::Exec>,
    },
    /// `DELETE TOP (n) [PERCENT] ...` or `UPDATE TOP (n) [PERCENT] ...`: the DELETE or UPDATE
    /// changes only the first n (or n percent, rounded up) of the rows it matches, in no
    /// particular order, as in SQL Server.
    TopDml {
        top: sqlparser::ast::Top,
        statement: Box<Statement>,
    },
    /// THROW [number, message, state] (parsed here: sqlparser reads a following END as an
    /// argument).
    Throw(Option<Box<[sqlparser::ast::Expr; 3]>>),
    /// A statement with an `OPTION (...)` clause, which the token pre-pass took out.
    Hinted {
        hints: QueryHints,
        statement: Box<Stmt>,
    },
    /// `SET @v op= expr` (+=, -=, *=, /=, %=, &=, |=, ^=), as `SET @v = @v op (expr)`.
    SetVariable {
        name: String,
        value: sqlparser::ast::Expr,
    },
    /// DBCC command [(arguments)] [WITH options].
    Dbcc(Box<crate::dbcc::Dbcc>),
    /// ALTER INDEX ... REBUILD | REORGANIZE, ALTER TABLE ... REBUILD.
    AlterIndex(Box<crate::alterindex::AlterIndex>),
    /// KILL session_id [WITH STATUSONLY], KILL 'uow'.
    Kill(Box<crate::kill::Kill>),
    /// CREATE, ALTER or DROP EVENT SESSION.
    EventSession(Box<crate::xevents::EventSessionStatement>),
    /// ALTER TABLE table ALTER COLUMN column type [NULL | NOT NULL] (sqlparser reads
    /// PostgreSQL's form only). `nullable` is None when neither is given.
    AlterColumn {
        table: String,
        column: String,
        data_type: sqlparser::ast::DataType,
        nullable: Option<bool>,
    },
    /// ALTER TABLE table ADD column_def [, column_def ...]: T-SQL's list, which sqlparser
    /// reads only with ADD before each item.
    AddColumns {
        table: String,
        columns: Vec<sqlparser::ast::ColumnDef>,
    },
    /// SHUTDOWN [WITH NOWAIT].
    Shutdown {
        nowait: bool,
    },
    /// COMMIT [TRAN[SACTION]] [name] (the name is ignored, as in SQL Server).
    Commit,
    /// ROLLBACK [TRAN[SACTION]] [savepoint].
    Rollback(Option<String>),
}

/// Query hints of `OPTION (...)`. MAXDOP is kept for the DMVs; it changes nothing, as every
/// query runs on one thread (deviation). MAXRECURSION bounds recursive CTEs (0 = no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryHints {
    pub maxdop: Option<u32>,
    pub max_recursion: Option<u32>,
}

impl QueryHints {
    /// Reads `MAXDOP n, MAXRECURSION n, RECOMPILE, ...` (hints other than these two are
    /// accepted and have no effect).
    fn parse(text: &str) -> QueryHints {
        let mut hints = QueryHints::default();
        for hint in text.split(',') {
            let words: Vec<&str> = hint.split_whitespace().collect();
            let number = words.get(1).and_then(|n| n.parse().ok());
            match words.first().map(|w| w.to_ascii_uppercase()).as_deref() {
                Some("MAXDOP") => hints.maxdop = number,
                Some("MAXRECURSION") => hints.max_recursion = number,
                _ => {}
            }
        }
        hints
    }
}

/// What the token pre-pass writes for a removed `OPTION (...)`.
const OPTION_MARK: &str = "OPTION ";

/// A statement and the line it starts on (1-based, within its batch).
#[derive(Debug)]
pub struct Parsed {
    pub stmt: Stmt,
    pub line: u64,
}

pub(crate) fn is_word(token: &Token, keyword: &str) -> bool {
    matches!(token, Token::Word(Word { value, quote_style: None, .. }) if value.eq_ignore_ascii_case(keyword))
}

/// A token's text as a syntax error shows it.
fn token_text(token: &Token) -> String {
    match token {
        Token::Word(word) => word.value.clone(),
        Token::SingleQuotedString(s) | Token::NationalStringLiteral(s) => s.clone(),
        Token::EOF => String::new(),
        other => other.to_string(),
    }
}

/// Words sqlparser treats as keywords that T-SQL does not reserve: a syntax error near one is
/// 102 ("near 'LIMIT'"), not 156 ("near the keyword").
const NOT_TSQL_KEYWORDS: [&str; 1] = ["LIMIT"];

pub(crate) fn syntax_error(near: &Token, line: u64) -> (SqlError, u64) {
    let text = token_text(near);
    let is_keyword = matches!(near, Token::Word(w) if w.keyword != Keyword::NoKeyword && w.quote_style.is_none())
        && !NOT_TSQL_KEYWORDS.iter().any(|word| is_word(near, word));
    let error = if is_keyword {
        SqlError::new(
            156,
            15,
            1,
            format!("Incorrect syntax near the keyword '{}'.", text.to_uppercase()),
        )
    } else {
        SqlError::new(102, 15, 1, format!("Incorrect syntax near '{text}'."))
    };
    (error, line)
}

/// What a batch leaves open at its end: a string or quoted name (from its opening line, with
/// the text after the opening mark), or a block comment (from its opening line).
#[derive(Debug, PartialEq, Eq)]
enum Unclosed {
    Quote { line: u64, rest: String },
    Comment { line: u64 },
}

/// 105: a string, a [name] or a "name" the batch never closes.
fn unclosed_quotation(rest: &str) -> SqlError {
    let text = format!("Unclosed quotation mark after the character string '{rest}'.");
    SqlError::new(105, 15, 1, text)
}

/// Scans a batch as SQL Server's lexer delimits it: 'strings', [names] and "names" (a doubled
/// closing mark stays inside), -- line comments and /* block comments */, which nest. Returns
/// what is still open at the end of the batch.
fn unclosed_delimiter(sql: &str) -> Option<Unclosed> {
    unclosed_delimiter_at(sql).map(|(unclosed, _)| unclosed)
}

/// [`unclosed_delimiter`], with the byte offset of the mark that opened it.
fn unclosed_delimiter_at(sql: &str) -> Option<(Unclosed, usize)> {
    let chars: Vec<char> = sql.chars().collect();
    let byte_offset = |at: usize| sql.char_indices().nth(at).map_or(sql.len(), |(i, _)| i);
    let mut line: u64 = 1;
    let mut at = 0;
    while at < chars.len() {
        let next = chars.get(at + 1).copied();
        match chars[at] {
            '\n' => line += 1,
            '-' if next == Some('-') => {
                while at + 1 < chars.len() && chars[at + 1] != '\n' {
                    at += 1;
                }
            }
            '/' if next == Some('*') => {
                let (opened, opened_at) = (line, at);
                let mut depth = 0;
                loop {
                    let pair = (chars.get(at).copied(), chars.get(at + 1).copied());
                    match pair {
                        (None, _) => {
                            let unclosed = Unclosed::Comment { line: opened };
                            return Some((unclosed, byte_offset(opened_at)));
                        }
                        (Some('/'), Some('*')) => (depth, at) = (depth + 1, at + 1),
                        (Some('*'), Some('/')) => (depth, at) = (depth - 1, at + 1),
                        (Some('\n'), _) => line += 1,
                        _ => {}
                    }
                    at += 1;
                    if depth == 0 {
                        break;
                    }
                }
                continue;
            }
            open @ ('\'' | '"' | '[') => {
                let close = if open == '[' { ']' } else { open };
                let (opened, start) = (line, at + 1);
                at += 1;
                loop {
                    match chars.get(at) {
                        None => {
                            let rest = chars[start..].iter().collect();
                            let unclosed = Unclosed::Quote { line: opened, rest };
                            return Some((unclosed, byte_offset(start - 1)));
                        }
                        Some(&c) if c == close && chars.get(at + 1) == Some(&close) => at += 1,
                        Some(&c) if c == close => break,
                        Some('\n') => line += 1,
                        Some(_) => {}
                    }
                    at += 1;
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Kept tokens, and the words taken out (position in the kept tokens, word).
type TokensAndRemoved = (Vec<TokenWithSpan>, Vec<(usize, String)>);

/// The tokens of a batch without whitespace and comments, with the clustering words and
/// ROWGUIDCOL taken out: (kept tokens, removed (position in kept, word)).
fn tokens_of(sql: &str) -> Result<TokensAndRemoved, (SqlError, u64)> {
    let dialect = TsqlDialect::default();
    let tokens =
        Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(
            |e| match unclosed_delimiter(sql) {
                Some(Unclosed::Quote { line, rest }) => (unclosed_quotation(&rest), line),
                Some(Unclosed::Comment { line }) => {
                    (SqlError::new(113, 15, 1, "Missing end comment mark '*/'."), line)
                }
                None => {
                    let text = format!("Incorrect syntax near '{}'.", e.message);
                    (SqlError::new(102, 15, 1, text), e.location.line)
                }
            },
        )?;
    let mut kept: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut removed = Vec::new();
    // An OPTION (...) clause being taken out: its text and parenthesis depth.
    let mut option: Option<(String, usize)> = None;
    for token in tokens {
        if matches!(token.token, Token::Whitespace(_)) {
            continue;
        }
        if let Some((text, depth)) = &mut option {
            match token.token {
                Token::LParen => *depth += 1,
                Token::RParen => *depth -= 1,
                _ => {}
            }
            if *depth == 0 {
                removed.push((kept.len(), format!("{OPTION_MARK}{}", text.trim())));
                option = None;
            } else if *depth > 1 || token.token != Token::LParen {
                text.push_str(&token.token.to_string());
                text.push(' ');
            }
            continue;
        }
        if is_word(&token.token, "OPTION") && !kept.is_empty() {
            option = Some((String::new(), 0));
            continue;
        }
        let previous = kept.last().map(|t| &t.token);
        let before_previous = kept.len().checked_sub(2).map(|i| &kept[i].token);
        let after_create = before_previous.is_some_and(|t| is_word(t, "CREATE"));
        let after_key =
            !after_create && previous.is_some_and(|p| is_word(p, "KEY") || is_word(p, "UNIQUE"));
        let clustering =
            is_word(&token.token, "CLUSTERED") || is_word(&token.token, "NONCLUSTERED");
        if (clustering && after_key) || is_word(&token.token, "ROWGUIDCOL") {
            removed.push((kept.len(), token_text(&token.token).to_uppercase()));
            continue;
        }
        kept.push(token);
    }
    insert_optional_delete_from(&mut kept, &mut removed);
    insert_with_before_bare_hint(&mut kept, &mut removed);
    expand_compound_assignments(&mut kept, &mut removed);
    fetch_quantity_as_placeholder(&mut kept, &mut removed);
    end_statement_before_cursor_fetch(&mut kept, &mut removed);
    drop_empty_grouping_set(&mut kept, &mut removed);
    Ok((kept, removed))
}

/// The table hints SQL Server takes without the WITH keyword, each alone in its parentheses
/// (the Table Hints page: "allowed with and without the WITH keyword ... the hints should be
/// specified alone"; a deprecated form that old scripts use, as in `FROM t (NOLOCK)`).
const BARE_TABLE_HINTS: [&str; 15] = [
    "NOLOCK",
    "READUNCOMMITTED",
    "UPDLOCK",
    "REPEATABLEREAD",
    "SERIALIZABLE",
    "READCOMMITTED",
    "TABLOCK",
    "TABLOCKX",
    "PAGLOCK",
    "ROWLOCK",
    "NOWAIT",
    "READPAST",
    "XLOCK",
    "SNAPSHOT",
    "NOEXPAND",
];

/// `table [[AS] alias] (HINT)`: a table hint without WITH, which sqlparser reads as a table
/// function's argument. WITH is put before the parenthesis when the name (and alias) follow
/// FROM, JOIN or a FROM list's comma (`INSERT INTO t (nowait)` is a column list, and SQL
/// Server refuses the form on an UPDATE's target).
fn insert_with_before_bare_hint(kept: &mut Vec<TokenWithSpan>, removed: &mut [(usize, String)]) {
    let mut at = 1;
    while at + 2 < kept.len() {
        let bare_hint = kept[at].token == Token::LParen
            && BARE_TABLE_HINTS.iter().any(|h| is_word(&kept[at + 1].token, h))
            && kept[at + 2].token == Token::RParen;
        let after_with = is_word(&kept[at - 1].token, "WITH");
        if !bare_hint || after_with || !follows_table_reference(kept, at) {
            at += 1;
            continue;
        }
        let with = Token::make_keyword("WITH");
        kept.insert(at, TokenWithSpan { token: with, span: kept[at].span });
        for (position, _) in removed.iter_mut().filter(|(p, _)| *p >= at) {
            *position += 1;
        }
        at += 4;
    }
}

/// Whether the tokens before `at` are a table reference: `name[.name...]`, then an optional
/// `[AS] alias`, after FROM, JOIN or a FROM list's comma.
fn follows_table_reference(kept: &[TokenWithSpan], at: usize) -> bool {
    let Some(start) = name_chain_start(kept, at) else { return false };
    if start >= 1 && opens_table_reference(kept, start - 1) {
        return true;
    }
    let alias_start = start;
    if alias_start + 1 != at {
        return false;
    }
    let mut name_end = alias_start;
    if name_end >= 1 && is_word(&kept[name_end - 1].token, "AS") {
        name_end -= 1;
    }
    let Some(start) = name_chain_start(kept, name_end) else { return false };
    start >= 1 && opens_table_reference(kept, start - 1)
}

/// Where the dotted name that ends just before `end` starts, if a word ends there.
fn name_chain_start(kept: &[TokenWithSpan], end: usize) -> Option<usize> {
    if end == 0 || !matches!(kept[end - 1].token, Token::Word(_)) {
        return None;
    }
    let mut start = end - 1;
    while start >= 2
        && kept[start - 1].token == Token::Period
        && matches!(kept[start - 2].token, Token::Word(_))
    {
        start -= 2;
    }
    Some(start)
}

/// Whether the token at `at` opens a table reference: FROM, JOIN, or a comma of a
/// FROM list (not of a select list: `SELECT a, COUNT(nowait)`).
fn opens_table_reference(kept: &[TokenWithSpan], at: usize) -> bool {
    let token = &kept[at].token;
    if is_word(token, "FROM") || is_word(token, "JOIN") {
        return true;
    }
    *token == Token::Comma && comma_in_from_list(kept, at)
}

/// Whether the comma at `at` separates a FROM list's items: FROM comes before it, at its
/// parenthesis depth, before any word that starts another clause.
fn comma_in_from_list(kept: &[TokenWithSpan], at: usize) -> bool {
    const OTHER_CLAUSES: [&str; 7] = ["SELECT", "WHERE", "SET", "VALUES", "HAVING", "BY", "INTO"];
    let mut depth = 0usize;
    for token in kept[..at].iter().rev().map(|t| &t.token) {
        match token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return false,
            Token::LParen => depth -= 1,
            _ if depth > 0 => {}
            _ if is_word(token, "FROM") => return true,
            _ if OTHER_CLAUSES.iter().any(|w| is_word(token, w)) => return false,
            _ => {}
        }
    }
    false
}

/// `GROUP BY ()`, the grand total's empty grouping set, which sqlparser does not parse: as its
/// only grouping it means what no GROUP BY means (one group of every row, even of none), so
/// its four tokens are taken out.
fn drop_empty_grouping_set(kept: &mut Vec<TokenWithSpan>, removed: &mut [(usize, String)]) {
    let mut at = 0;
    while at + 3 < kept.len() {
        let empty_set = is_word(&kept[at].token, "GROUP")
            && is_word(&kept[at + 1].token, "BY")
            && kept[at + 2].token == Token::LParen
            && kept[at + 3].token == Token::RParen
            && kept.get(at + 4).is_none_or(|t| t.token != Token::Comma);
        if !empty_set {
            at += 1;
            continue;
        }
        kept.drain(at..at + 4);
        for (position, _) in removed.iter_mut().filter(|(p, _)| *p > at) {
            *position = position.saturating_sub(4).max(at);
        }
    }
}

/// A cursor's FETCH starts a statement, but sqlparser would read it as the FETCH clause of a
/// query just before it (`SELECT @n = @n + 1 FETCH NEXT FROM c`): a semicolon goes before each
/// FETCH that does not follow OFFSET's ROW or ROWS.
fn end_statement_before_cursor_fetch(
    kept: &mut Vec<TokenWithSpan>,
    removed: &mut [(usize, String)],
) {
    let mut at = 1;
    while at < kept.len() {
        let previous = &kept[at - 1].token;
        let after_offset = is_word(previous, "ROWS") || is_word(previous, "ROW");
        if is_word(&kept[at].token, "FETCH") && !after_offset && *previous != Token::SemiColon {
            let end = TokenWithSpan { token: Token::SemiColon, span: kept[at].span };
            kept.insert(at, end);
            for (position, _) in removed.iter_mut().filter(|(p, _)| *p >= at) {
                *position += 1;
            }
            at += 1;
        }
        at += 1;
    }
}

/// The position after `TOP ( ... ) [PERCENT]` if that starts at `at`, else `at`.
fn after_top_clause(kept: &[TokenWithSpan], at: usize) -> usize {
    let opens = kept.get(at).is_some_and(|t| is_word(&t.token, "TOP"))
        && kept.get(at + 1).is_some_and(|t| t.token == Token::LParen);
    if !opens {
        return at;
    }
    let mut depth = 0usize;
    for (end, token) in kept.iter().enumerate().skip(at + 1) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            let percent = kept.get(end + 1).is_some_and(|t| is_word(&t.token, "PERCENT"));
            return end + 1 + usize::from(percent);
        }
    }
    at
}

/// `DELETE TOP (n) [PERCENT] ...` and `UPDATE TOP (n) [PERCENT] ...`: sqlparser reads no TOP
/// there, so the clause is read here and the rest by sqlparser. T-SQL requires the parentheses.
fn parse_top_dml(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    let start = parser.index();
    let keyword = parser.next_token();
    parser.next_token(); // TOP
    parser.expect_token(&Token::LParen)?;
    let quantity = parser.parse_expr()?;
    parser.expect_token(&Token::RParen)?;
    let percent = parse_word(parser, "PERCENT");
    let statement = if is_word(&keyword.token, "DELETE") {
        parser.parse_delete(keyword)?
    } else {
        parser.parse_update(keyword)?
    };
    refuse_order_or_limit(parser, start, &statement)?;
    let quantity = Some(sqlparser::ast::TopQuantity::Expr(quantity));
    let top = sqlparser::ast::Top { with_ties: false, percent, quantity };
    Ok(Stmt::TopDml { top, statement: Box::new(statement) })
}

/// MySQL's `ORDER BY` and `LIMIT` after a DELETE, and `LIMIT` after an UPDATE, which sqlparser
/// reads in every dialect: T-SQL has neither, so they are the syntax error SQL Server gives,
/// near the word (bug fix: `DELETE FROM t WHERE ... LIMIT 1` deleted every matching row).
fn refuse_order_or_limit(
    parser: &mut Parser<'_>,
    start: usize,
    statement: &Statement,
) -> Result<(), ParserError> {
    let tail = match statement {
        Statement::Delete(delete) => !delete.order_by.is_empty() || delete.limit.is_some(),
        Statement::Update(update) => !update.order_by.is_empty() || update.limit.is_some(),
        _ => false,
    };
    if !tail {
        return Ok(());
    }
    // Back to the statement's last ORDER or LIMIT: the syntax error is reported near it.
    while parser.index() > start {
        parser.prev_token();
        let token = &parser.peek_token().token;
        if is_word(token, "ORDER") || is_word(token, "LIMIT") {
            break;
        }
    }
    parser.expected("the end of the statement", parser.peek_token())
}

/// A query parsed from its text (a cursor's, in tests).
pub fn parse_query_text(sql: &str) -> Result<Box<sqlparser::ast::Query>, ParserError> {
    let dialect = TsqlDialect::default();
    Parser::new(&dialect).try_with_sql(sql)?.parse_query()
}

/// What a FETCH count that is not a number becomes: a placeholder holding its text.
const FETCH_MARK: &str = "FETCH ";

/// `OFFSET n ROWS FETCH NEXT @n ROWS ONLY`: T-SQL's FETCH count is any expression, sqlparser's
/// only a literal. Such a count's tokens become one placeholder holding their text, which
/// [`fetch_quantity`] parses back into the expression. Only a FETCH right after OFFSET's ROW or
/// ROWS is touched (a cursor's `FETCH NEXT FROM c` is not).
fn fetch_quantity_as_placeholder(kept: &mut Vec<TokenWithSpan>, removed: &mut [(usize, String)]) {
    let mut at = 1;
    while at + 2 < kept.len() {
        let after_offset =
            is_word(&kept[at - 1].token, "ROWS") || is_word(&kept[at - 1].token, "ROW");
        let direction =
            is_word(&kept[at + 1].token, "NEXT") || is_word(&kept[at + 1].token, "FIRST");
        if !(after_offset && is_word(&kept[at].token, "FETCH") && direction) {
            at += 1;
            continue;
        }
        let start = at + 2;
        let mut end = start;
        let mut depth = 0usize;
        while end < kept.len() {
            match &kept[end].token {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                t if depth == 0 && (is_word(t, "ROWS") || is_word(t, "ROW")) => break,
                _ => {}
            }
            end += 1;
        }
        let is_number = end == start + 1 && matches!(kept[start].token, Token::Number(..));
        if end == start || end == kept.len() || is_number {
            at = end;
            continue;
        }
        let text: Vec<String> = kept[start..end].iter().map(|t| t.token.to_string()).collect();
        let placeholder = TokenWithSpan {
            token: Token::Placeholder(format!("{FETCH_MARK}{}", text.join(" "))),
            span: kept[start].span,
        };
        let taken = end - start - 1;
        kept.splice(start..end, [placeholder]);
        for (position, _) in removed.iter_mut().filter(|(p, _)| *p >= end) {
            *position -= taken;
        }
        at = start + 1;
    }
}

/// The expression of a FETCH count that [`fetch_quantity_as_placeholder`] kept as text; None
/// for any other expression.
pub(crate) fn fetch_quantity(
    quantity: &sqlparser::ast::Expr,
) -> Option<Result<sqlparser::ast::Expr, SqlError>> {
    let sqlparser::ast::Expr::Value(value) = quantity else { return None };
    let sqlparser::ast::Value::Placeholder(text) = &value.value else { return None };
    let text = text.strip_prefix(FETCH_MARK)?;
    let dialect = TsqlDialect::default();
    let parsed = Parser::new(&dialect).try_with_sql(text).and_then(|mut p| p.parse_expr());
    Some(parsed.map_err(|_| SqlError::new(102, 15, 1, format!("Incorrect syntax near '{text}'."))))
}

/// Whether an OUTPUT clause starting at `from` (its first item) is followed by a FROM list
/// of the same DELETE (`DELETE x OUTPUT deleted.* FROM t AS x ...`): a FROM at nesting depth 0
/// before the statement's WHERE, its end, or the next statement's first word.
fn from_follows_output(kept: &[TokenWithSpan], from: usize) -> bool {
    const ENDS: [&str; 17] = [
        "WHERE", "OPTION", "SELECT", "INSERT", "UPDATE", "DELETE", "IF", "WHILE", "BEGIN", "END",
        "SET", "DECLARE", "EXEC", "EXECUTE", "PRINT", "RETURN", "GO",
    ];
    let mut depth = 0i32;
    for token in kept.iter().skip(from).map(|t| &t.token) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon | Token::EOF => return false,
            _ if depth == 0 && is_word(token, "FROM") => return true,
            _ if depth == 0 && ENDS.iter().any(|w| is_word(token, w)) => return false,
            _ => {}
        }
    }
    false
}

/// `DELETE t WHERE ...`: T-SQL's FROM after DELETE is optional, sqlparser's is not. Where a
/// DELETE (not `ON DELETE` or MERGE's `THEN DELETE`), or its `TOP (n) [PERCENT]`, is followed
/// by an object name and no FROM, the FROM is put in; `DELETE alias FROM table ...` keeps its
/// own.
fn insert_optional_delete_from(kept: &mut Vec<TokenWithSpan>, removed: &mut [(usize, String)]) {
    let mut at = 0;
    while at + 1 < kept.len() {
        // Not `ON DELETE` (a foreign key's action) nor `THEN DELETE` (a MERGE's).
        let is_statement_delete = is_word(&kept[at].token, "DELETE")
            && (at == 0
                || !(is_word(&kept[at - 1].token, "ON") || is_word(&kept[at - 1].token, "THEN")));
        if is_statement_delete {
            at = after_top_clause(kept, at + 1) - 1;
        }
        let Some(target) = kept.get(at + 1).map(|t| &t.token) else { break };
        let names_target = matches!(target, Token::Word(_))
            && !["FROM", "TOP", "CASCADE", "NO", "SET", "ON"].iter().any(|w| is_word(target, w));
        if !(is_statement_delete && names_target) {
            at += 1;
            continue;
        }
        let mut end = at + 1;
        while end + 2 < kept.len()
            && kept[end + 1].token == Token::Period
            && matches!(kept[end + 2].token, Token::Word(_))
        {
            end += 2;
        }
        let output_then_from = kept.get(end + 1).is_some_and(|t| is_word(&t.token, "OUTPUT"))
            && from_follows_output(kept, end + 2);
        if output_then_from || kept.get(end + 1).is_some_and(|t| is_word(&t.token, "FROM")) {
            at = end + 1;
            continue;
        }
        let from = TokenWithSpan { token: Token::make_keyword("FROM"), span: kept[at + 1].span };
        kept.insert(at + 1, from);
        for (position, _) in removed.iter_mut().filter(|(p, _)| *p > at) {
            *position += 1;
        }
        at = end + 2;
    }
}

/// The operator of a compound assignment (`+=`, `-=`, `*=`, `/=`, `%=`, `&=`, `|=`, `^=`),
/// which the tokenizer leaves as the operator followed by `=`.
fn is_compound_operator(token: &Token) -> bool {
    matches!(
        token,
        Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::Mod
            | Token::Ampersand
            | Token::Pipe
            | Token::Caret
    )
}

/// Words that end an assignment's expression when met outside parentheses and CASE: a clause
/// of the UPDATE, or the next statement (T-SQL needs no semicolon between statements).
const ASSIGNMENT_ENDS: [&str; 29] = [
    "WHERE",
    "FROM",
    "OUTPUT",
    "OPTION",
    "WHEN",
    "ELSE",
    "END",
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "SET",
    "IF",
    "WHILE",
    "BEGIN",
    "DECLARE",
    "EXEC",
    "EXECUTE",
    "PRINT",
    "RETURN",
    "COMMIT",
    "ROLLBACK",
    "CREATE",
    "DROP",
    "ALTER",
    "TRUNCATE",
    "USE",
    "RAISERROR",
];

/// `column op= expr` in an UPDATE's (or MERGE's) SET list becomes `column = column op (expr)`,
/// as T-SQL means it (sqlparser reads only `=`). A column is a word, or `qualifier.word`, after
/// SET or a comma; a variable's `SET @v op= expr` is parse_compound_set's.
fn expand_compound_assignments(kept: &mut Vec<TokenWithSpan>, removed: &mut [(usize, String)]) {
    let mut at = 0;
    while at + 2 < kept.len() {
        if !(is_compound_operator(&kept[at].token) && kept[at + 1].token == Token::Eq) {
            at += 1;
            continue;
        }
        // The column before the operator: `word` or `word.word...`.
        let mut start = at;
        while start >= 1
            && matches!(&kept[start - 1].token, Token::Word(w) if !w.value.starts_with('@'))
        {
            start -= 1;
            if start >= 2 && kept[start - 1].token == Token::Period {
                start -= 1;
            } else {
                break;
            }
        }
        let after_set_or_comma = start >= 1
            && start < at
            && (kept[start - 1].token == Token::Comma || is_word(&kept[start - 1].token, "SET"));
        if !after_set_or_comma || kept[start].token == Token::Period {
            at += 1;
            continue;
        }
        let end = assignment_end(kept, at + 2);
        let column: Vec<TokenWithSpan> = kept[start..at].to_vec();
        let span = kept[at].span;
        let operator = kept[at].clone();
        let equals = kept[at + 1].clone();
        let mut expanded = vec![equals];
        expanded.extend(column);
        expanded.push(operator);
        expanded.push(TokenWithSpan { token: Token::LParen, span });
        expanded.extend(kept[at + 2..end].iter().cloned());
        expanded.push(TokenWithSpan { token: Token::RParen, span });
        let added = expanded.len() - (end - at);
        kept.splice(at..end, expanded);
        for (position, _) in removed.iter_mut().filter(|(p, _)| *p > at) {
            *position += added;
        }
        at = end + added;
    }
}

/// Where the expression that starts at `from` ends: at a comma, semicolon or closing
/// parenthesis outside its own parentheses, or at one of [`ASSIGNMENT_ENDS`] outside them and
/// outside CASE ... END.
fn assignment_end(kept: &[TokenWithSpan], from: usize) -> usize {
    let (mut depth, mut cases) = (0usize, 0usize);
    let mut at = from;
    while at < kept.len() {
        let token = &kept[at].token;
        match token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return at,
            Token::RParen => depth -= 1,
            Token::Comma | Token::SemiColon | Token::EOF if depth == 0 => return at,
            _ if depth == 0 && is_word(token, "CASE") => cases += 1,
            _ if depth == 0 && cases > 0 && is_word(token, "END") => cases -= 1,
            _ if depth == 0
                && cases == 0
                && at > from
                && ASSIGNMENT_ENDS.iter().any(|w| is_word(token, w)) =>
            {
                return at;
            }
            _ => {}
        }
        at += 1;
    }
    at
}

/// Parses a batch into statements (a syntax error anywhere fails the whole batch).
pub fn parse_batch(sql: &str) -> Result<Vec<Parsed>, (SqlError, u64)> {
    let (tokens, removed) = tokens_of(sql)?;
    if let Some(at) = crate::procs::procedure_header_at(&tokens) {
        if at > 0 {
            return Err((crate::procs::not_first_in_batch(), tokens[at].span.start.line));
        }
        let parsed = parse_tokens(tokens, &removed, true)?;
        check_declarations(&parsed, [])?;
        check_values_rows(&parsed)?;
        return Ok(parsed.into_iter().map(|p| with_definition(p, sql)).collect());
    }
    let parsed = parse_tokens(tokens, &removed, false)?;
    check_declarations(&parsed, [])?;
    check_values_rows(&parsed)?;
    Ok(parsed)
}

/// A table value constructor whose rows have different numbers of values (`VALUES (1, 2),
/// (3)`) is 10710 when the batch compiles, whatever the statement around it: nothing in the
/// batch runs.
fn check_values_rows(body: &[Parsed]) -> Result<(), (SqlError, u64)> {
    use sqlparser::ast::Visit;
    struct RaggedValues;
    impl sqlparser::ast::Visitor for RaggedValues {
        type Break = ();
        fn pre_visit_query(&mut self, query: &sqlparser::ast::Query) -> ControlFlow<()> {
            if has_ragged_values(&query.body) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    visit_statements(body, &mut |parsed: &Parsed| {
        let Stmt::Sql(statement) = &parsed.stmt else { return Ok(()) };
        if statement.visit(&mut RaggedValues).is_break() {
            let text =
                "The number of columns for each row in a table value constructor must be the same.";
            return Err((SqlError::new(10710, 15, 1, text), parsed.line));
        }
        Ok(())
    })
}

fn has_ragged_values(body: &sqlparser::ast::SetExpr) -> bool {
    use sqlparser::ast::SetExpr;
    match body {
        SetExpr::Values(values) => {
            let width = values.rows.first().map_or(0, |row| row.content.len());
            values.rows.iter().any(|row| row.content.len() != width)
        }
        SetExpr::SetOperation { left, right, .. } => {
            has_ragged_values(left) || has_ragged_values(right)
        }
        _ => false,
    }
}

/// The procedure a CREATE or ALTER PROCEDURE batch defines (the last part of its name), which
/// SQL Server names in the batch's compile errors ("Procedure p, Line 4"), since it is
/// compiling that procedure ("Msg 102, Level 15, State 1, Procedure sp_BlitzWho, Line 1148",
/// BrentOzarULTD/SQL-Server-First-Responder-Kit pull request 2914). None for another batch, a
/// header that is not the batch's first statement (111), or a header that does not parse (a
/// CREATE OR ALTER that SQL Server 2012 cannot parse gets no procedure name there either).
pub fn defined_procedure(sql: &str) -> Option<String> {
    // A batch left open (105, 113) still names its procedure: its text before the opening.
    let closed = match unclosed_delimiter_at(sql) {
        Some((_, opened_at)) => &sql[..opened_at],
        None => sql,
    };
    let (tokens, _) = tokens_of(closed).ok()?;
    let header_at = crate::procs::procedure_header_at(&tokens)?;
    if header_at != 0 {
        return None;
    }
    let name_at =
        tokens.iter().position(|t| is_word(&t.token, "PROC") || is_word(&t.token, "PROCEDURE"))?;
    let dialect = TsqlDialect::default();
    let mut parser =
        Parser::new(&dialect).with_tokens_with_locations(tokens[name_at + 1..].to_vec());
    parser.parse_object_name(false).ok().map(|name| last_part(&name))
}

/// A CREATE PROCEDURE keeps the batch's text as its definition, as SQL Server does.
fn with_definition(mut parsed: Parsed, sql: &str) -> Parsed {
    if let Stmt::CreateProcedure(def) = &mut parsed.stmt {
        def.definition = sql.to_string();
    }
    parsed
}

fn parse_tokens(
    tokens: Vec<TokenWithSpan>,
    removed: &[(usize, String)],
    procedure: bool,
) -> Result<Vec<Parsed>, (SqlError, u64)> {
    let dialect = TsqlDialect::default();
    let options = ParserOptions::new().with_trailing_commas(false);
    let mut options = options;
    options.require_semicolon_stmt_delimiter = false;
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(crate::nesting::MAX_PARSER_RECURSION)
        .with_options(options)
        .with_tokens_with_locations(tokens.clone());
    BATCH_TOKENS.with(|context| *context.borrow_mut() = Some((tokens.clone(), removed.to_vec())));
    let mut out = Vec::new();
    if procedure {
        let line = parser.peek_token().span.start.line;
        let def = crate::procs::parse_create_procedure(&mut parser)
            .map_err(|e| parse_failure(&mut parser, e, line))?;
        let mut def = def;
        def.body = parse_rest(&mut parser, removed)?;
        out.push(Parsed { stmt: Stmt::CreateProcedure(Box::new(def)), line });
        return Ok(out);
    }
    out.extend(parse_rest(&mut parser, removed)?);
    Ok(out)
}

/// 134: a variable declared twice in one batch or procedure.
fn already_declared(name: &str) -> SqlError {
    SqlError::new(
        134,
        15,
        1,
        format!(
            "The variable name '{name}' has already been declared. Variable names must be unique \
             within a query batch or stored procedure."
        ),
    )
}

/// The compile-time check of a batch's or a procedure's DECLAREs, as SQL Server compiles a
/// batch before running any of it: a variable name declared twice (in any block, branch or
/// loop), or declared again after `declared` (a procedure's parameters, sp_executesql's), is
/// error 134 at the second declaration's line. One DECLARE inside a loop is one declaration,
/// however often the loop runs it. Names compare without case. A CREATE PROCEDURE's body is
/// checked against its parameters, and for USE (154).
pub fn check_declarations<'n>(
    body: &[Parsed],
    declared: impl IntoIterator<Item = &'n str>,
) -> Result<(), (SqlError, u64)> {
    let mut names: std::collections::HashSet<String> =
        declared.into_iter().map(str::to_lowercase).collect();
    visit_statements(body, &mut |parsed| match &parsed.stmt {
        Stmt::Sql(statement) => match statement.as_ref() {
            Statement::Declare { stmts } => {
                for name in stmts.iter().flat_map(|declare| &declare.names) {
                    let is_variable = name.value.starts_with('@');
                    if is_variable && !names.insert(name.value.to_lowercase()) {
                        return Err((already_declared(&name.value), parsed.line));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        },
        Stmt::CreateProcedure(def) => check_procedure_body(def),
        _ => Ok(()),
    })
}

/// A procedure body's compile-time checks: its DECLAREs against its parameters, and no USE.
fn check_procedure_body(def: &crate::procs::ProcedureDef) -> Result<(), (SqlError, u64)> {
    check_declarations(&def.body, def.params.iter().map(|param| param.name.as_str()))?;
    visit_statements(&def.body, &mut |parsed| match &parsed.stmt {
        Stmt::Sql(statement) if matches!(statement.as_ref(), Statement::Use(_)) => {
            let text =
                "a USE database statement is not allowed in a procedure, function or trigger.";
            Err((SqlError::new(154, 15, 1, text), parsed.line))
        }
        _ => Ok(()),
    })
}

/// Calls `visit` on each statement of `body` in text order, and on those inside its blocks,
/// branches, loops and TRY/CATCH (not inside a CREATE PROCEDURE's body); stops at the first
/// error. Each level has its stack room (nesting invariant 1).
pub(crate) fn visit_statements<E>(
    body: &[Parsed],
    visit: &mut impl FnMut(&Parsed) -> Result<(), E>,
) -> Result<(), E> {
    crate::nesting::with_stack_room(|| visit_statements_here(body, visit))
}

fn visit_statements_here<E>(
    body: &[Parsed],
    visit: &mut impl FnMut(&Parsed) -> Result<(), E>,
) -> Result<(), E> {
    for parsed in body {
        visit(parsed)?;
        match &parsed.stmt {
            Stmt::If { then, otherwise, .. } => {
                visit_statements(then, visit)?;
                visit_statements(otherwise, visit)?;
            }
            Stmt::While { body, .. } | Stmt::Block(body) => visit_statements(body, visit)?,
            Stmt::TryCatch { try_body, catch_body } => {
                visit_statements(try_body, visit)?;
                visit_statements(catch_body, visit)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The statements from the parser's position to the end of the batch.
fn parse_rest(
    parser: &mut Parser<'_>,
    removed: &[(usize, String)],
) -> Result<Vec<Parsed>, (SqlError, u64)> {
    let mut out = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        let next = parser.peek_token();
        if next.token == Token::EOF {
            return Ok(out);
        }
        let line = next.span.start.line;
        let start = parser.index();
        let stmt = parse_one(parser).map_err(|e| parse_failure(parser, e, line))?;
        let end = parser.index();
        let hints = removed
            .iter()
            .filter(|(at, word)| *at > start && *at <= end && word.starts_with(OPTION_MARK))
            .map(|(_, word)| QueryHints::parse(&word[OPTION_MARK.len()..]))
            .next_back();
        let stmt = match hints {
            Some(hints) => Stmt::Hinted { hints, statement: Box::new(stmt) },
            None => stmt,
        };
        out.push(Parsed { stmt, line });
    }
}

/// The parse error of a MERGE that no semicolon ends (10714).
const MERGE_WITHOUT_SEMICOLON: &str = "MERGE without a semicolon";
/// The start of the parse error of a BEGIN TRAN name over 32 characters (103), followed by
/// the name.
const TRANSACTION_NAME_TOO_LONG: &str = "transaction name too long: ";
/// The start of the parse error of a WAITFOR whose literal is not a time (148), followed by
/// the literal.
const WAITFOR_BAD_TIME: &str = "WAITFOR bad time string: ";
/// The start of the parse error of a MERGE clause whose action its kind does not allow:
/// followed by `number|action|clause` (10711, 10712).
const MERGE_ACTION_NOT_ALLOWED: &str = "MERGE action not allowed: ";

/// A MERGE's `WHEN ... THEN action` clauses, read ahead from its first token: an action that
/// the clause's kind does not allow (INSERT under MATCHED or NOT MATCHED BY SOURCE, UPDATE or
/// DELETE under NOT MATCHED [BY TARGET]) is SQL Server's 10712 or 10711, where sqlparser
/// would give a syntax error.
fn check_merge_actions(parser: &Parser<'_>) -> Result<(), ParserError> {
    let word = |n: usize, w: &str| is_word(&parser.peek_nth_token(n).token, w);
    let mut n = 0;
    let mut depth = 0i32;
    loop {
        match parser.peek_nth_token(n).token {
            Token::EOF => return Ok(()),
            Token::SemiColon if depth == 0 => return Ok(()),
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        n += 1;
        if depth != 0 || !word(n - 1, "WHEN") {
            continue;
        }
        let clause = if word(n, "MATCHED") {
            "WHEN MATCHED"
        } else if word(n, "NOT") && word(n + 1, "MATCHED") {
            if word(n + 2, "BY") && word(n + 3, "SOURCE") {
                "WHEN NOT MATCHED BY SOURCE"
            } else {
                "WHEN NOT MATCHED"
            }
        } else {
            continue;
        };
        let mut then = n;
        while !word(then, "THEN") && parser.peek_nth_token(then).token != Token::EOF {
            then += 1;
        }
        let action = ["INSERT", "UPDATE", "DELETE"].into_iter().find(|a| word(then + 1, a));
        let refused = match (clause, action) {
            ("WHEN NOT MATCHED", Some(action @ ("UPDATE" | "DELETE"))) => Some((10711, action)),
            ("WHEN MATCHED" | "WHEN NOT MATCHED BY SOURCE", Some("INSERT")) => {
                Some((10712, "INSERT"))
            }
            _ => None,
        };
        if let Some((number, action)) = refused {
            let text = format!("{MERGE_ACTION_NOT_ALLOWED}{number}|{action}|{clause}");
            return Err(ParserError::ParserError(text));
        }
        n = then;
    }
}

/// SQL Server's error for a MERGE action that its clause does not allow.
fn merge_action_error(error: &ParserError) -> Option<SqlError> {
    let ParserError::ParserError(text) = error else { return None };
    let rest = text.strip_prefix(MERGE_ACTION_NOT_ALLOWED)?;
    let mut parts = rest.split('|');
    let number = parts.next()?.parse().ok()?;
    let (action, clause) = (parts.next()?, parts.next()?);
    let text = format!(
        "An action of type '{action}' is not allowed in the '{clause}' clause of a MERGE statement."
    );
    Some(SqlError::new(number, 15, 1, text))
}

fn parse_failure(parser: &mut Parser<'_>, error: ParserError, line: u64) -> (SqlError, u64) {
    if let Some(option) = crate::dbddl::unsupported_option(&error) {
        return (crate::dbddl::unsupported_error(&option), line);
    }
    if let Some(fetch) = crate::cursor::invalid_fetch_option(&error) {
        let near = parser.peek_token().span.start.line;
        return (fetch, if near > 0 { near } else { line });
    }
    if let Some(refused) = merge_action_error(&error) {
        return (refused, line);
    }
    if let ParserError::ParserError(text) = &error
        && let Some(name) = text.strip_prefix(TRANSACTION_NAME_TOO_LONG)
    {
        return (crate::session::transaction_name_too_long(name), line);
    }
    if let ParserError::ParserError(text) = &error
        && let Some(literal) = text.strip_prefix(WAITFOR_BAD_TIME)
    {
        return (crate::waitfor::bad_time_string(literal), line);
    }
    if error == ParserError::ParserError(MERGE_WITHOUT_SEMICOLON.into()) {
        let text = "A MERGE statement must be terminated by a semi-colon (;).";
        return (SqlError::new(10714, 15, 1, text), line);
    }
    if error == ParserError::RecursionLimitExceeded {
        let text = "Some part of your SQL statement is nested too deeply. Rewrite the query or break it up into smaller queries.";
        return (SqlError::new(191, 15, 1, text), line);
    }
    let mut near = parser.peek_token();
    // At the end of the batch, the error is near its last token.
    let mut steps = 0;
    while near.token == Token::EOF && parser.index() > 0 && steps < 3 {
        parser.prev_token();
        near = parser.peek_token();
        steps += 1;
    }
    let line = if near.span.start.line > 0 { near.span.start.line } else { line };
    syntax_error(&near.token, line)
}

/// The transaction or savepoint name after BEGIN, COMMIT or ROLLBACK TRAN, if the next token
/// is one: an identifier (or @variable) that is neither a keyword nor a T-SQL reserved word,
/// so that the next statement (`BEGIN TRAN` then `RECONFIGURE` on the next line) is not taken
/// for a name (bug fix: it was).
fn parse_transaction_name(parser: &mut Parser<'_>) -> Option<String> {
    let Token::Word(word) = parser.peek_token().token else { return None };
    let reserved =
        crate::dialect::RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(&word.value));
    let bare = word.quote_style.is_none();
    if bare && (word.keyword != Keyword::NoKeyword || reserved) {
        return None;
    }
    parser.next_token();
    Some(word.value)
}

/// BEGIN TRAN[SACTION] [name | @variable [WITH MARK ['description']]]. sqlparser reads only
/// the unnamed form. A mark (for restoring to it) is read and not kept: there are no log
/// restores.
fn parse_begin_tran(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token();
    parser.next_token();
    let name = parse_transaction_name(parser);
    if let Some(written) = name.as_deref().filter(|n| !n.starts_with('@'))
        && written.chars().count() > crate::session::MAX_TRANSACTION_NAME_CHARS
    {
        return Err(ParserError::ParserError(format!("{TRANSACTION_NAME_TOO_LONG}{written}")));
    }
    let marked = name.is_some()
        && is_word(&parser.peek_token().token, "WITH")
        && is_word(&parser.peek_nth_token(1).token, "MARK");
    if marked {
        parser.next_token();
        parser.next_token();
        if let Token::SingleQuotedString(_) | Token::NationalStringLiteral(_) =
            parser.peek_token().token
        {
            parser.next_token();
        }
    }
    Ok(Stmt::BeginTran(name))
}

/// One statement with its line, or a BEGIN...END block (for IF and WHILE bodies).
fn parse_body(parser: &mut Parser<'_>) -> Result<Vec<Parsed>, ParserError> {
    while parser.consume_token(&Token::SemiColon) {}
    let line = parser.peek_token().span.start.line;
    let stmt = parse_one(parser)?;
    Ok(match stmt {
        Stmt::Block(statements) => statements,
        other => vec![Parsed { stmt: other, line }],
    })
}

/// Statements up to `END <word>` (TRY or CATCH), which it consumes.
fn parse_until_end(parser: &mut Parser<'_>, word: &str) -> Result<Vec<Parsed>, ParserError> {
    let mut statements = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if is_word(&parser.peek_token().token, "END")
            && is_word(&parser.peek_nth_token(1).token, word)
        {
            parser.next_token();
            parser.next_token();
            return Ok(statements);
        }
        if parser.peek_token().token == Token::EOF {
            return parser.expected(&format!("END {word}"), parser.peek_token());
        }
        let line = parser.peek_token().span.start.line;
        statements.push(Parsed { stmt: parse_one(parser)?, line });
    }
}

fn parse_try_catch(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token(); // BEGIN
    parser.next_token(); // TRY
    let try_body = parse_until_end(parser, "TRY")?;
    while parser.consume_token(&Token::SemiColon) {}
    if !(parse_word(parser, "BEGIN") && parse_word(parser, "CATCH")) {
        return parser.expected("BEGIN CATCH", parser.peek_token());
    }
    let catch_body = parse_until_end(parser, "CATCH")?;
    Ok(Stmt::TryCatch { try_body, catch_body })
}

fn is_block_begin(parser: &Parser<'_>) -> bool {
    let next = parser.peek_nth_token(1).token;
    is_word(&parser.peek_token().token, "BEGIN")
        && !(is_word(&next, "TRAN")
            || is_word(&next, "TRANSACTION")
            || is_word(&next, "DISTRIBUTED")
            || is_word(&next, "TRY")
            || is_word(&next, "CATCH"))
}

/// Where the action of an `ALTER TABLE name ...` starts (the token after the name of one or
/// more parts), if the next tokens are ALTER TABLE.
/// Whether the next tokens are `UPDATE STATISTICS name`, not an UPDATE of a table called
/// statistics (`UPDATE statistics SET ...`, `UPDATE [statistics] ...`).
fn update_statistics_follows(parser: &Parser<'_>) -> bool {
    let Token::Word(second) = parser.peek_nth_token(1).token else { return false };
    let third = parser.peek_nth_token(2).token;
    let dml = ["SET", "AS", "WITH", "FROM", "OUTPUT"].iter().any(|w| is_word(&third, w));
    is_word(&parser.peek_token().token, "UPDATE")
        && second.quote_style.is_none()
        && second.value.eq_ignore_ascii_case("STATISTICS")
        && matches!(third, Token::Word(_))
        && !dml
}

pub(crate) fn alter_table_action_at(parser: &Parser<'_>) -> Option<usize> {
    let word_at = |n: usize, word: &str| is_word(&parser.peek_nth_token(n).token, word);
    if !word_at(0, "ALTER") || !word_at(1, "TABLE") {
        return None;
    }
    Some(past_object_name(parser, 2))
}

/// The position after an object name of one or more parts (`a`, `dbo.a`) starting at `at`
/// (`at` itself if no name starts there).
fn past_object_name(parser: &Parser<'_>, mut at: usize) -> usize {
    while matches!(parser.peek_nth_token(at).token, Token::Word(_)) {
        at += 1;
        if parser.peek_nth_token(at).token != Token::Period {
            break;
        }
        at += 1;
    }
    at
}

/// Whether the next tokens are `DELETE target OUTPUT` (target of one or more parts): T-SQL's
/// order for an OUTPUT clause before a FROM list, which sqlparser reads only after it.
fn delete_output_before_from(parser: &Parser<'_>) -> bool {
    if !is_word(&parser.peek_nth_token(0).token, "DELETE")
        || is_word(&parser.peek_nth_token(1).token, "FROM")
    {
        return false;
    }
    let at = past_object_name(parser, 1);
    at > 1 && is_word(&parser.peek_nth_token(at).token, "OUTPUT")
}

/// DELETE target OUTPUT items [INTO table] FROM table_source [, ...] [WHERE condition].
fn parse_delete_output_before_from(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    use sqlparser::ast::helpers::attached_token::AttachedToken;
    let delete_token = parser.next_token();
    let tables = vec![parser.parse_object_name(false)?];
    let output_token = parser.next_token();
    let select_items = parser.parse_projection()?;
    let into_table = if parse_word(parser, "INTO") {
        let targets = vec![parser.parse_expr()?];
        Some(sqlparser::ast::SelectInto {
            temporary: false,
            unlogged: false,
            table: false,
            targets,
        })
    } else {
        None
    };
    if !parse_word(parser, "FROM") {
        return parser.expected("FROM", parser.peek_token());
    }
    let from = parser.parse_comma_separated(Parser::parse_table_and_joins)?;
    let selection = if parse_word(parser, "WHERE") { Some(parser.parse_expr()?) } else { None };
    let output = sqlparser::ast::OutputClause::Output {
        output_token: AttachedToken(output_token),
        select_items,
        into_table,
    };
    let delete = sqlparser::ast::Delete {
        delete_token: AttachedToken(delete_token),
        optimizer_hints: Vec::new(),
        tables,
        from: sqlparser::ast::FromTable::WithFromKeyword(from),
        using: None,
        selection,
        returning: None,
        output: Some(output),
        order_by: Vec::new(),
        limit: None,
    };
    Ok(Stmt::Sql(Box::new(Statement::Delete(delete))))
}

/// Whether the next tokens are `ALTER TABLE name ALTER COLUMN`.
fn alter_column_follows(parser: &Parser<'_>) -> bool {
    let word_at = |n: usize, word: &str| is_word(&parser.peek_nth_token(n).token, word);
    alter_table_action_at(parser)
        .is_some_and(|at| word_at(at, "ALTER") && word_at(at + 1, "COLUMN"))
}

/// Whether the next tokens are `ALTER TABLE name ADD` followed by a column definition (not
/// a constraint, nor the COLUMN keyword, which are left to sqlparser and its errors).
fn add_columns_follows(parser: &Parser<'_>) -> bool {
    let word_at = |n: usize, word: &str| is_word(&parser.peek_nth_token(n).token, word);
    let Some(at) = alter_table_action_at(parser) else { return false };
    let not_a_column =
        ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "COLUMN", "DEFAULT", "INDEX"];
    word_at(at, "ADD")
        && matches!(parser.peek_nth_token(at + 1).token, Token::Word(_))
        && !not_a_column.iter().any(|word| word_at(at + 1, word))
}

/// ALTER TABLE name ADD column_def [, column_def ...].
fn parse_add_columns(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token();
    parser.next_token();
    let table = last_part(&parser.parse_object_name(false)?);
    parser.next_token();
    let columns = parser.parse_comma_separated(Parser::parse_column_def)?;
    Ok(Stmt::AddColumns { table, columns })
}

/// ALTER TABLE name ALTER COLUMN column type [COLLATE name] [NULL | NOT NULL].
fn parse_alter_column(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token();
    parser.next_token();
    let table = last_part(&parser.parse_object_name(false)?);
    parser.next_token();
    parser.next_token();
    let column = parser.parse_identifier()?.value;
    let data_type = parser.parse_data_type()?;
    if parse_word(parser, "COLLATE") {
        parser.parse_identifier()?;
    }
    let nullable = if parse_word(parser, "NULL") {
        Some(true)
    } else if parse_word(parser, "NOT") {
        if !parse_word(parser, "NULL") {
            return parser.expected("NULL", parser.peek_token());
        }
        Some(false)
    } else {
        None
    };
    Ok(Stmt::AlterColumn { table, column, data_type, nullable })
}

fn parse_one(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    let Some(_level) = crate::nesting::ParseLevel::enter() else {
        return Err(ParserError::RecursionLimitExceeded);
    };
    crate::nesting::with_stack_room(|| parse_one_here(parser))
}

/// One statement, at a nesting level [`parse_one`] has entered.
fn parse_one_here(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    let first = parser.peek_token().token;
    if is_word(&first, "IF") {
        parser.next_token();
        let condition = parser.parse_expr()?;
        let then = parse_body(parser)?;
        while parser.consume_token(&Token::SemiColon) {}
        let otherwise = if parse_word(parser, "ELSE") { parse_body(parser)? } else { Vec::new() };
        return Ok(Stmt::If { condition, then, otherwise });
    }
    if is_word(&first, "WHILE") {
        parser.next_token();
        let condition = parser.parse_expr()?;
        let body = parse_body(parser)?;
        return Ok(Stmt::While { condition, body });
    }
    if is_word(&first, "BEGIN") && is_word(&parser.peek_nth_token(1).token, "TRY") {
        return parse_try_catch(parser);
    }
    if crate::dbcc::starts(parser) {
        parser.next_token();
        return Ok(Stmt::Dbcc(Box::new(crate::dbcc::parse(parser)?)));
    }
    if crate::cursor::starts(parser) {
        return Ok(Stmt::Cursor(Box::new(crate::cursor::parse(parser)?)));
    }
    if update_statistics_follows(parser) {
        // There are no statistics objects (no cost-based optimizer) to update.
        return Err(crate::dbddl::unsupported("UPDATE STATISTICS"));
    }
    if crate::kill::starts(parser) {
        return Ok(Stmt::Kill(Box::new(crate::kill::parse(parser)?)));
    }
    if crate::xevents::starts(parser) {
        return Ok(Stmt::EventSession(Box::new(crate::xevents::parse(parser)?)));
    }
    if crate::alterindex::starts(parser) {
        return Ok(Stmt::AlterIndex(Box::new(crate::alterindex::parse(parser)?)));
    }
    if alter_column_follows(parser) {
        return parse_alter_column(parser);
    }
    if add_columns_follows(parser) {
        return parse_add_columns(parser);
    }
    if delete_output_before_from(parser) {
        return parse_delete_output_before_from(parser);
    }
    if is_word(&first, "SHUTDOWN") {
        parser.next_token();
        let nowait = parse_word(parser, "WITH") && parse_word(parser, "NOWAIT");
        return Ok(Stmt::Shutdown { nowait });
    }
    if is_word(&first, "SET") && is_word(&parser.peek_nth_token(1).token, "STATISTICS") {
        parser.next_token();
        parser.next_token();
        let mut options = Vec::new();
        loop {
            let option = parser.parse_identifier()?.value.to_uppercase();
            if !["IO", "TIME", "PROFILE", "XML"].contains(&option.as_str()) {
                parser.prev_token();
                return parser.expected("IO, TIME, PROFILE or XML", parser.peek_token());
            }
            options.push(option);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        let on = match parser.next_token().token.to_string().to_uppercase().as_str() {
            "ON" => true,
            "OFF" => false,
            _ => {
                parser.prev_token();
                return parser.expected("ON or OFF", parser.peek_token());
            }
        };
        return Ok(Stmt::SetStatistics { options, on });
    }
    if is_word(&first, "SET")
        && let Some(stmt) = parse_compound_set(parser)?
    {
        return Ok(stmt);
    }
    if is_word(&first, "THROW") {
        parser.next_token();
        let has_arguments =
            matches!(parser.peek_token().token, Token::Number(..) | Token::Minus | Token::LParen)
                || matches!(&parser.peek_token().token, Token::Word(w) if w.value.starts_with('@'));
        if !has_arguments {
            return Ok(Stmt::Throw(None));
        }
        let number = parser.parse_expr()?;
        parser.expect_token(&Token::Comma)?;
        let message = parser.parse_expr()?;
        parser.expect_token(&Token::Comma)?;
        let state = parser.parse_expr()?;
        return Ok(Stmt::Throw(Some(Box::new([number, message, state]))));
    }
    if is_word(&first, "EXEC") || is_word(&first, "EXECUTE") {
        parser.next_token();
        return Ok(Stmt::Exec(Box::new(crate::procs::parse_exec(parser)?)));
    }
    if is_word(&first, "INSERT") && is_insert_exec(parser) {
        return parse_insert_exec(parser);
    }
    if (is_word(&first, "DELETE") || is_word(&first, "UPDATE"))
        && is_word(&parser.peek_nth_token(1).token, "TOP")
    {
        return parse_top_dml(parser);
    }
    if parser.index() == 0 && crate::procs::is_bare_procedure_call(parser) {
        return Ok(Stmt::Exec(Box::new(crate::procs::parse_exec(parser)?)));
    }
    if is_word(&first, "DROP")
        && (is_word(&parser.peek_nth_token(1).token, "PROC")
            || is_word(&parser.peek_nth_token(1).token, "PROCEDURE"))
    {
        parser.next_token();
        parser.next_token();
        return crate::procs::parse_drop_procedure(parser);
    }
    if is_word(&first, "BEGIN")
        && (is_word(&parser.peek_nth_token(1).token, "TRAN")
            || is_word(&parser.peek_nth_token(1).token, "TRANSACTION"))
    {
        return parse_begin_tran(parser);
    }
    if is_block_begin(parser) {
        parser.next_token();
        let mut statements = Vec::new();
        loop {
            while parser.consume_token(&Token::SemiColon) {}
            if parse_word(parser, "END") {
                return Ok(Stmt::Block(statements));
            }
            if parser.peek_token().token == Token::EOF {
                return parser.expected("END", parser.peek_token());
            }
            let line = parser.peek_token().span.start.line;
            statements.push(Parsed { stmt: parse_one(parser)?, line });
        }
    }
    if is_word(&first, "COMMIT") || is_word(&first, "ROLLBACK") {
        let commit = is_word(&first, "COMMIT");
        parser.next_token();
        let _ = parser.parse_keyword(Keyword::TRANSACTION)
            || parse_word(parser, "TRAN")
            || parse_word(parser, "WORK");
        let name = parse_transaction_name(parser);
        return Ok(if commit { Stmt::Commit } else { Stmt::Rollback(name) });
    }
    if is_word(&first, "BREAK") {
        parser.next_token();
        return Ok(Stmt::Break);
    }
    if is_word(&first, "CONTINUE") {
        parser.next_token();
        return Ok(Stmt::Continue);
    }
    if is_word(&first, "CHECKPOINT") {
        parser.next_token();
        return Ok(Stmt::Checkpoint);
    }
    if is_word(&first, "RECONFIGURE") {
        parser.next_token();
        let with_override = parser.parse_keyword(Keyword::WITH);
        if with_override && !parse_word(parser, "OVERRIDE") {
            return parser.expected("OVERRIDE", parser.peek_token());
        }
        return Ok(Stmt::Reconfigure { with_override });
    }
    if is_word(&first, "SAVE") {
        parser.next_token();
        if !(parser.parse_keyword(Keyword::TRANSACTION) || parse_word(parser, "TRAN")) {
            return parser.expected("TRAN", parser.peek_token());
        }
        let name = parser.parse_identifier()?.value;
        return Ok(Stmt::SaveTran(name));
    }
    let second = parser.peek_nth_token(1).token;
    if (is_word(&first, "CREATE") || is_word(&first, "ALTER")) && is_word(&second, "DATABASE") {
        parser.next_token();
        parser.next_token();
        return Ok(if is_word(&first, "CREATE") {
            Stmt::CreateDatabase(crate::dbddl::parse_create(parser)?)
        } else {
            Stmt::AlterDatabase(crate::dbddl::parse_alter(parser)?)
        });
    }
    if is_word(&first, "CREATE") && is_create_index(parser) {
        return parse_create_index(parser);
    }
    if is_word(&first, "MERGE") {
        check_merge_actions(parser)?;
    }
    let start = parser.index();
    let statement = Box::new(parser.parse_statement()?);
    refuse_order_or_limit(parser, start, &statement)?;
    if let Statement::WaitFor(waitfor) = &*statement
        && let Some(text) = crate::waitfor::literal_error(waitfor)
    {
        return Err(ParserError::ParserError(format!("{WAITFOR_BAD_TIME}{text}")));
    }
    if matches!(*statement, Statement::Merge(_)) && parser.peek_token().token != Token::SemiColon {
        return Err(ParserError::ParserError(MERGE_WITHOUT_SEMICOLON.into()));
    }
    if !matches!(*statement, Statement::CreateTable(_)) {
        return Ok(Stmt::Sql(statement));
    }
    // CREATE TABLE anywhere (a batch, an IF or WHILE body, a block, a procedure) gets the
    // clauses sqlparser does not keep (bug fix: inside IF it reached the executor unwrapped
    // and panicked).
    let end = parser.index();
    BATCH_TOKENS.with(|context| {
        let context = context.borrow();
        let (tokens, removed) =
            context.as_ref().expect("parse_with_tokens sets the batch's tokens");
        create_table_extras(
            parser,
            statement,
            &tokens[start..end.min(tokens.len())],
            removed,
            start,
        )
    })
}

/// The tokens of a batch and the words taken out of it (with their token positions).
type BatchTokens = (Vec<TokenWithSpan>, Vec<(usize, String)>);

thread_local! {
    /// The batch being parsed, for the CREATE TABLE clauses that need its tokens.
    static BATCH_TOKENS: std::cell::RefCell<Option<BatchTokens>> =
        const { std::cell::RefCell::new(None) };
}

/// `SET @v op= expr`, if that is what follows. `SET @v` followed by anything but `=` or a
/// compound operator is a syntax error near that token, as in SQL Server (it was taken for a
/// SET option and ignored: `SET @i MAX= 1` changed nothing and raised nothing).
fn parse_compound_set(parser: &mut Parser<'_>) -> Result<Option<Stmt>, ParserError> {
    use sqlparser::ast::{BinaryOperator, Expr, Ident};
    let Token::Word(variable) = parser.peek_nth_token(1).token else { return Ok(None) };
    if !variable.value.starts_with('@') || parser.peek_nth_token(2).token == Token::Eq {
        return Ok(None);
    }
    let op = match parser.peek_nth_token(2).token {
        Token::Plus => Some(BinaryOperator::Plus),
        Token::Minus => Some(BinaryOperator::Minus),
        Token::Mul => Some(BinaryOperator::Multiply),
        Token::Div => Some(BinaryOperator::Divide),
        Token::Mod => Some(BinaryOperator::Modulo),
        Token::Ampersand => Some(BinaryOperator::BitwiseAnd),
        Token::Pipe => Some(BinaryOperator::BitwiseOr),
        Token::Caret => Some(BinaryOperator::BitwiseXor),
        _ => None,
    };
    let compound = parser.peek_nth_token(3).token == Token::Eq;
    let Some(op) = op.filter(|_| compound) else {
        // Reported near the token after the variable.
        parser.next_token();
        parser.next_token();
        return Err(ParserError::ParserError(format!("SET {} needs =", variable.value)));
    };
    for _ in 0..4 {
        parser.next_token();
    }
    let right = parser.parse_expr()?;
    let value = Expr::BinaryOp {
        left: Box::new(Expr::Identifier(Ident::new(variable.value.clone()))),
        op,
        right: Box::new(Expr::Nested(Box::new(right))),
    };
    Ok(Some(Stmt::SetVariable { name: variable.value, value }))
}

/// Whether the INSERT ahead is `INSERT [INTO] name [(columns)] EXEC[UTE]` (looked at without
/// consuming anything).
fn is_insert_exec(parser: &Parser<'_>) -> bool {
    let mut at = 1;
    if is_word(&parser.peek_nth_token(at).token, "INTO") {
        at += 1;
    }
    if !matches!(parser.peek_nth_token(at).token, Token::Word(_)) {
        return false;
    }
    at += 1;
    while parser.peek_nth_token(at).token == Token::Period {
        at += 2;
    }
    if parser.peek_nth_token(at).token == Token::LParen {
        while !matches!(parser.peek_nth_token(at).token, Token::RParen | Token::EOF) {
            at += 1;
        }
        at += 1;
    }
    let after = parser.peek_nth_token(at).token;
    is_word(&after, "EXEC") || is_word(&after, "EXECUTE")
}

fn parse_insert_exec(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token();
    parse_word(parser, "INTO");
    let table = last_part(&parser.parse_object_name(false)?);
    let columns = if parser.peek_token().token == Token::LParen {
        parser.parse_parenthesized_column_list(sqlparser::parser::IsOptional::Mandatory, false)?
    } else {
        Vec::new()
    };
    parser.next_token();
    let exec = crate::procs::parse_exec(parser)?;
    let columns = columns.into_iter().map(|c| c.value).collect();
    Ok(Stmt::InsertExec { table, columns, exec: Box::new(exec) })
}

pub(crate) fn parse_word(parser: &mut Parser<'_>, word: &str) -> bool {
    if is_word(&parser.peek_token().token, word) {
        parser.next_token();
        true
    } else {
        false
    }
}

fn is_create_index(parser: &Parser<'_>) -> bool {
    for n in 1..4 {
        let token = parser.peek_nth_token(n).token;
        if is_word(&token, "INDEX") {
            return true;
        }
        if !(is_word(&token, "UNIQUE")
            || is_word(&token, "CLUSTERED")
            || is_word(&token, "NONCLUSTERED"))
        {
            return false;
        }
    }
    false
}

fn parse_create_index(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    parser.next_token(); // CREATE
    let mut unique = false;
    let mut clustered = false;
    loop {
        if parse_word(parser, "UNIQUE") {
            unique = true;
        } else if parse_word(parser, "CLUSTERED") {
            clustered = true;
        } else if parse_word(parser, "NONCLUSTERED") {
            clustered = false;
        } else {
            break;
        }
    }
    if !parse_word(parser, "INDEX") {
        return parser.expected("INDEX", parser.peek_token());
    }
    let name = parser.parse_identifier()?.value;
    parser.expect_keyword_is(Keyword::ON)?;
    let table = last_part(&parser.parse_object_name(false)?);
    parser.expect_token(&Token::LParen)?;
    let mut columns = Vec::new();
    loop {
        columns.push(parser.parse_identifier()?.value);
        let _ = parser.parse_keyword(Keyword::ASC) || parser.parse_keyword(Keyword::DESC);
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(&Token::RParen)?;
    let filegroup = parse_on_filegroup(parser)?;
    Ok(Stmt::CreateIndex { name, table, unique, clustered, columns, filegroup })
}

/// `ON [filegroup]` if it follows.
fn parse_on_filegroup(parser: &mut Parser<'_>) -> Result<Option<String>, ParserError> {
    if parser.parse_keyword(Keyword::ON) {
        return Ok(Some(parser.parse_identifier()?.value));
    }
    Ok(None)
}

/// The last part of a multi-part name (`dbo.t` is `t`).
pub fn last_part(name: &sqlparser::ast::ObjectName) -> String {
    name.0
        .last()
        .map(|part| part.to_string().trim_matches(['[', ']', '"']).to_string())
        .unwrap_or_default()
}

fn create_table_extras(
    parser: &mut Parser<'_>,
    statement: Box<Statement>,
    tokens: &[TokenWithSpan],
    removed: &[(usize, String)],
    start: usize,
) -> Result<Stmt, ParserError> {
    let end = start + tokens.len();
    let mut clustering = Vec::new();
    let mut rowguidcol = Vec::new();
    for (offset, token) in tokens.iter().enumerate() {
        let position = start + offset;
        let is_constraint = is_word(&token.token, "UNIQUE")
            || (is_word(&token.token, "KEY")
                && offset > 0
                && is_word(&tokens[offset - 1].token, "PRIMARY"));
        if is_constraint {
            let word = removed.iter().find(|(at, _)| *at == position + 1).map(|(_, w)| w.as_str());
            clustering.push(word.map(|w| w == "CLUSTERED"));
        }
    }
    for (at, word) in removed {
        if word == "ROWGUIDCOL" && *at > start && *at <= end {
            // The column is the nearest identifier after the last comma or '(' before it.
            let mut i = at - start;
            while i > 0 && !matches!(tokens[i - 1].token, Token::Comma | Token::LParen) {
                i -= 1;
            }
            if let Some(t) = tokens.get(i) {
                rowguidcol.push(token_text(&t.token));
            }
        }
    }
    let filegroup = parse_on_filegroup(parser)?;
    Ok(Stmt::CreateTable { statement, clustering, rowguidcol, filegroup })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_batch_leaves_open_is_found_where_it_opens() {
        let quote = |line, rest: &str| Some(Unclosed::Quote { line, rest: rest.to_string() });
        assert_eq!(unclosed_delimiter("SELECT 'abc"), quote(1, "abc"));
        assert_eq!(unclosed_delimiter("SELECT 'it''s'\nSELECT [a]]b\nc"), quote(2, "a]]b\nc"));
        assert_eq!(unclosed_delimiter("SELECT \"x"), quote(1, "x"));
        // Marks inside comments and strings do not open anything.
        assert_eq!(unclosed_delimiter("SELECT 1 -- it's\nSELECT '/*' /* ' */"), None);
        assert_eq!(unclosed_delimiter("SELECT 'it''s' AS [a]]b]"), None);
        // Block comments nest, as SQL Server's do.
        assert_eq!(unclosed_delimiter("/* a /* b */ c */ SELECT 1"), None);
        assert_eq!(
            unclosed_delimiter("SELECT 1\n/* a /* b */ c\n"),
            Some(Unclosed::Comment { line: 2 })
        );
        assert_eq!(unclosed_delimiter("/*/"), Some(Unclosed::Comment { line: 1 }));
        // Through parse_batch: SQL Server's numbers and texts.
        let (error, line) = parse_batch("SELECT 1\nSELECT 'abc").unwrap_err();
        assert_eq!((error.number, error.severity, error.state, line), (105, 15, 1, 2));
        assert_eq!(error.message, "Unclosed quotation mark after the character string 'abc'.");
        let (error, line) = parse_batch("SELECT 1 /* open").unwrap_err();
        assert_eq!((error.number, line), (113, 1));
        assert_eq!(error.message, "Missing end comment mark '*/'.");
        // The procedure a batch defines, left open or not; none for other batches.
        let defined = |sql| defined_procedure(sql);
        assert_eq!(defined("CREATE PROC dbo.[p q] AS SELECT 'open"), Some("p q".to_string()));
        assert_eq!(defined("ALTER PROCEDURE p AS SELECT 1 +"), Some("p".to_string()));
        assert_eq!(defined("SELECT 1\nCREATE PROC p AS SELECT 1"), None);
        assert_eq!(defined("SELECT 'CREATE PROC p AS"), None);
    }

    #[test]
    fn statements_need_no_semicolons_and_carry_their_lines() {
        let parsed = parse_batch("SELECT 1\nSELECT 2;\n\nCHECKPOINT").unwrap();
        assert_eq!(parsed.iter().map(|p| p.line).collect::<Vec<_>>(), vec![1, 2, 4]);
        assert!(matches!(parsed[2].stmt, Stmt::Checkpoint));
    }

    #[test]
    fn create_index_and_table_clauses_sqlparser_lacks() {
        let sql = "CREATE TABLE t (id INT PRIMARY KEY NONCLUSTERED, g UNIQUEIDENTIFIER ROWGUIDCOL, UNIQUE CLUSTERED (g)) ON [SECONDARY]\n\
                   CREATE UNIQUE CLUSTERED INDEX cix ON dbo.t (g DESC) ON [PRIMARY]";
        let parsed = parse_batch(sql).unwrap();
        match &parsed[0].stmt {
            Stmt::CreateTable { clustering, rowguidcol, filegroup, .. } => {
                assert_eq!(clustering, &vec![Some(false), Some(true)]);
                assert_eq!(rowguidcol, &vec!["g".to_string()]);
                assert_eq!(filegroup.as_deref(), Some("SECONDARY"));
            }
            other => panic!("{other:?}"),
        }
        match &parsed[1].stmt {
            Stmt::CreateIndex { name, table, unique, clustered, columns, filegroup } => {
                assert_eq!(
                    (name.as_str(), table.as_str(), *unique, *clustered),
                    ("cix", "t", true, true)
                );
                assert_eq!(columns, &vec!["g".to_string()]);
                assert_eq!(filegroup.as_deref(), Some("PRIMARY"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reserved_words_on_the_next_line_are_not_aliases() {
        let parsed = parse_batch("SELECT * FROM t\nUSE master\nSELECT 1 x\nCHECKPOINT").unwrap();
        assert_eq!(parsed.len(), 4);
        assert!(matches!(parsed[3].stmt, Stmt::Checkpoint));
        // Bracketed or after AS, a reserved word is a name.
        assert_eq!(parse_batch("SELECT * FROM t AS [use]").unwrap().len(), 1);
    }

    #[test]
    fn syntax_errors_are_102_or_156_with_the_line() {
        let (error, line) = parse_batch("SELECT 1\nSELECT * FROM t WHERE").unwrap_err();
        assert_eq!((error.number, line), (156, 2));
        assert_eq!(error.message, "Incorrect syntax near the keyword 'WHERE'.");
        let (error, _) = parse_batch("SELECT (1").unwrap_err();
        assert_eq!(error.number, 102);
    }
}
