//! The dialect the front end parses with: sqlparser's MsSqlDialect, unchanged, except that
//! T-SQL's reserved words cannot be implicit aliases and the bitwise operators take T-SQL's
//! precedence ([`TsqlDialect::prec_value`]).
//!
//! MsSqlDialect already refuses statement words such as INSERT or DROP as aliases; it lets
//! `USE`, `BEGIN`, `COMMIT`, `CHECKPOINT` and the like through, so `SELECT * FROM t` followed
//! by `USE master` on the next line read `USE` as `t`'s alias. SQL Server reserves these words
//! (they need brackets to be names), and so does this dialect. Every other behaviour is
//! MsSqlDialect's: each method MsSqlDialect overrides is passed to it, and `dialect()` answers
//! as MsSqlDialect so that sqlparser's dialect checks see no difference. The crate version is
//! pinned (=0.63.0), so the list of overrides cannot drift.

use sqlparser::ast::{GranteesType, Statement};
use sqlparser::dialect::{Dialect, MsSqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// T-SQL reserved words that sqlparser does not reserve for aliases.
pub(crate) const RESERVED_WORDS: [&str; 24] = [
    "USE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVE",
    "CHECKPOINT",
    "BREAK",
    "CONTINUE",
    "GOTO",
    "WAITFOR",
    "DBCC",
    "SHUTDOWN",
    "OPEN",
    "CLOSE",
    "FETCH",
    "DEALLOCATE",
    "GRANT",
    "REVOKE",
    "DENY",
    "BACKUP",
    "RESTORE",
    "KILL",
    "RECONFIGURE",
    "END",
];

#[derive(Debug, Default)]
pub struct TsqlDialect {
    inner: MsSqlDialect,
}

/// The word the alias validator is looking at (the token just consumed), if it is reserved
/// and was not written as `AS word` or `[word]`.
fn is_reserved_alias(explicit: bool, parser: &Parser<'_>) -> bool {
    if explicit {
        return false;
    }
    match &parser.get_current_token().token {
        Token::Word(word) if word.quote_style.is_none() => {
            RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(&word.value))
        }
        _ => false,
    }
}

impl Dialect for TsqlDialect {
    fn dialect(&self) -> std::any::TypeId {
        self.inner.dialect()
    }
    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        self.inner.is_delimited_identifier_start(ch)
    }
    fn is_identifier_start(&self, ch: char) -> bool {
        self.inner.is_identifier_start(ch)
    }
    fn is_identifier_part(&self, ch: char) -> bool {
        self.inner.is_identifier_part(ch)
    }
    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        self.inner.identifier_quote_style(identifier)
    }
    fn convert_type_before_value(&self) -> bool {
        self.inner.convert_type_before_value()
    }
    fn supports_outer_join_operator(&self) -> bool {
        self.inner.supports_outer_join_operator()
    }
    fn supports_dollar_as_money_prefix(&self) -> bool {
        self.inner.supports_dollar_as_money_prefix()
    }
    fn supports_connect_by(&self) -> bool {
        self.inner.supports_connect_by()
    }
    fn supports_eq_alias_assignment(&self) -> bool {
        self.inner.supports_eq_alias_assignment()
    }
    fn supports_try_convert(&self) -> bool {
        self.inner.supports_try_convert()
    }
    fn supports_boolean_literals(&self) -> bool {
        self.inner.supports_boolean_literals()
    }
    fn supports_named_fn_args_with_colon_operator(&self) -> bool {
        self.inner.supports_named_fn_args_with_colon_operator()
    }
    fn supports_named_fn_args_with_expr_name(&self) -> bool {
        self.inner.supports_named_fn_args_with_expr_name()
    }
    fn supports_named_fn_args_with_rarrow_operator(&self) -> bool {
        self.inner.supports_named_fn_args_with_rarrow_operator()
    }
    fn supports_start_transaction_modifier(&self) -> bool {
        self.inner.supports_start_transaction_modifier()
    }
    fn supports_end_transaction_modifier(&self) -> bool {
        self.inner.supports_end_transaction_modifier()
    }
    fn supports_set_stmt_without_operator(&self) -> bool {
        self.inner.supports_set_stmt_without_operator()
    }
    fn supports_table_versioning(&self) -> bool {
        self.inner.supports_table_versioning()
    }
    fn supports_nested_comments(&self) -> bool {
        self.inner.supports_nested_comments()
    }
    fn supports_object_name_double_dot_notation(&self) -> bool {
        self.inner.supports_object_name_double_dot_notation()
    }
    /// T-SQL's `ALTER TABLE t DROP COLUMN a, b`.
    fn supports_comma_separated_drop_column_list(&self) -> bool {
        true
    }
    fn get_reserved_grantees_types(&self) -> &[GranteesType] {
        self.inner.get_reserved_grantees_types()
    }
    fn is_select_item_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        !is_reserved_alias(explicit, parser)
            && self.inner.is_select_item_alias(explicit, kw, parser)
    }
    fn is_table_factor_alias(&self, explicit: bool, kw: &Keyword, parser: &mut Parser) -> bool {
        !is_reserved_alias(explicit, parser)
            && self.inner.is_table_factor_alias(explicit, kw, parser)
    }
    fn parse_statement(&self, parser: &mut Parser) -> Option<Result<Statement, ParserError>> {
        self.inner.parse_statement(parser)
    }
    fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>> {
        self.inner.get_next_precedence(parser)
    }
    /// T-SQL's precedence: the bitwise `&`, `^` and `|` share level 3 with `+` and `-`, and
    /// operators of one level go left to right (`6 | 1 + 2` is 9), where sqlparser ranks the
    /// bitwise ones below `+` and each other (which made it 7).
    fn prec_value(&self, prec: Precedence) -> u8 {
        match prec {
            Precedence::Ampersand | Precedence::Caret | Precedence::Pipe => {
                self.inner.prec_value(Precedence::PlusMinus)
            }
            other => self.inner.prec_value(other),
        }
    }
}
