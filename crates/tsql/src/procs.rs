//! Stored procedures, EXEC and dynamic SQL.
//!
//! - `CREATE [OR ALTER] PROC[EDURE] name [(] @p type [= default] [OUT[PUT]] [, ...] [)] AS
//!   body` must be the first statement of its batch (111) and takes the rest of the batch as its
//!   body. Its definition is the batch's text, kept in the catalog (sysschobjs type `P `,
//!   sysobjvalues), and parsed again when the procedure runs.
//! - `EXEC[UTE] [@status =] name [[@p =] value [OUTPUT] | DEFAULT] [, ...]`, and a bare
//!   procedure name as the first statement of a batch.
//! - `EXEC[UTE] (string expression)`: dynamic SQL, a batch of its own that cannot see the
//!   caller's variables.
//! - `sp_executesql @stmt [, N'@p type [OUTPUT], ...' [, values]]`: dynamic SQL with parameters
//!   (what client drivers send for parameterised queries).
//!
//! A procedure or dynamic batch runs one nesting level down (@@NESTLEVEL, at most 32: error
//! 217) with its own variables; errors inside it carry the procedure's name and its line, and
//! abort the caller's batch only if they abort batches anyway.
//!
//! Deviations: procedures are parsed when they run, not compiled when created, so a syntax
//! error in a body is found by CREATE PROCEDURE (as in SQL Server) but a missing table only
//! when the statement runs (also as in SQL Server, which resolves names late). There are no
//! numbered procedures, WITH RECOMPILE or EXECUTE AS (the options are accepted and ignored).

use crate::front::{Parsed, Stmt, is_word, last_part, parse_word};
use crate::query::sql_type_of;
use crate::server::Output;
use crate::session::{Failure, Flow, Session};
use crate::value::{self, convert};
use engine::SqlError;
use engine::record::{SqlType, Value};
use sqlparser::ast::{DataType, Expr};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use std::collections::BTreeMap;

/// The deepest nesting of procedures and dynamic SQL (SQL Server's limit).
pub const MAX_NEST_LEVEL: u32 = 32;

/// A procedure parameter.
#[derive(Debug)]
pub struct ProcParam {
    pub name: String,
    pub data_type: DataType,
    pub default: Option<Expr>,
    pub output: bool,
}

/// A parsed CREATE/ALTER PROCEDURE.
#[derive(Debug)]
pub struct ProcedureDef {
    pub name: String,
    /// ALTER PROCEDURE (the procedure must exist).
    pub alter: bool,
    /// CREATE OR ALTER PROCEDURE.
    pub or_alter: bool,
    pub params: Vec<ProcParam>,
    pub body: Vec<Parsed>,
    /// The batch's text.
    pub definition: String,
}

/// One argument of EXEC: `[@name =] value [OUTPUT]`; value None is DEFAULT.
#[derive(Debug)]
pub struct ExecArg {
    pub name: Option<String>,
    pub value: Option<Expr>,
    pub output: bool,
}

#[derive(Debug)]
pub enum ExecTarget {
    Procedure { name: String, args: Vec<ExecArg> },
    Dynamic(Box<Expr>),
}

/// An EXEC statement.
#[derive(Debug)]
pub struct Exec {
    /// `EXEC @status = proc`.
    pub status_variable: Option<String>,
    pub target: ExecTarget,
}

fn is_variable(token: &Token) -> bool {
    matches!(token, Token::Word(w) if w.value.starts_with('@'))
}

fn is_proc_word(token: &Token) -> bool {
    is_word(token, "PROC") || is_word(token, "PROCEDURE")
}

/// The index of the token starting a CREATE/ALTER PROCEDURE in the batch, if one does.
pub fn procedure_header_at(tokens: &[TokenWithSpan]) -> Option<usize> {
    let word = |i: usize, w: &str| tokens.get(i).is_some_and(|t| is_word(&t.token, w));
    let proc_at = |i: usize| tokens.get(i).is_some_and(|t| is_proc_word(&t.token));
    (0..tokens.len()).find(|&i| {
        (word(i, "CREATE")
            && (proc_at(i + 1) || (word(i + 1, "OR") && word(i + 2, "ALTER") && proc_at(i + 3))))
            || (word(i, "ALTER") && proc_at(i + 1) && (i == 0 || !word(i - 1, "OR")))
    })
}

/// Error 111.
pub fn not_first_in_batch() -> SqlError {
    SqlError::new(
        111,
        15,
        1,
        "'CREATE/ALTER PROCEDURE' must be the first statement in a query batch.",
    )
}

/// CREATE [OR ALTER] | ALTER PROC[EDURE] name params [WITH ...] AS (the body is parsed by the
/// caller).
pub fn parse_create_procedure(parser: &mut Parser<'_>) -> Result<ProcedureDef, ParserError> {
    let alter = parse_word(parser, "ALTER");
    let mut or_alter = false;
    if !alter {
        parse_word(parser, "CREATE");
        or_alter = parse_word(parser, "OR") && parse_word(parser, "ALTER");
    }
    if !(parse_word(parser, "PROC") || parse_word(parser, "PROCEDURE")) {
        return parser.expected("PROCEDURE", parser.peek_token());
    }
    let name = last_part(&parser.parse_object_name(false)?);
    let parenthesised = parser.consume_token(&Token::LParen);
    let mut params = Vec::new();
    while is_variable(&parser.peek_token().token) {
        let param_name = parser.parse_identifier()?.value;
        let _ = parser.parse_keyword(Keyword::AS);
        let data_type = parser.parse_data_type()?;
        parse_word(parser, "VARYING");
        let default =
            if parser.consume_token(&Token::Eq) { Some(parser.parse_expr()?) } else { None };
        let output = parse_word(parser, "OUT") || parse_word(parser, "OUTPUT");
        parse_word(parser, "READONLY");
        params.push(ProcParam { name: param_name, data_type, default, output });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    if parenthesised {
        parser.expect_token(&Token::RParen)?;
    }
    if parse_word(parser, "WITH") {
        while !matches!(parser.peek_token().token, Token::EOF) && !parser.peek_keyword(Keyword::AS)
        {
            parser.next_token();
        }
    }
    parser.expect_keyword_is(Keyword::AS)?;
    Ok(ProcedureDef { name, alter, or_alter, params, body: Vec::new(), definition: String::new() })
}

/// A batch's first statement that is a procedure's name (`sp_who`, `dbo.p 1, 2`).
pub fn is_bare_procedure_call(parser: &Parser<'_>) -> bool {
    let Token::Word(word) = parser.peek_token().token else { return false };
    let reserved =
        crate::dialect::RESERVED_WORDS.iter().any(|r| r.eq_ignore_ascii_case(&word.value));
    let plain = word.keyword == Keyword::NoKeyword || word.quote_style.is_some();
    if !plain || reserved || word.value.starts_with('@') {
        return false;
    }
    matches!(
        parser.peek_nth_token(1).token,
        Token::EOF
            | Token::SemiColon
            | Token::Period
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::NationalStringLiteral(_)
    ) || is_variable(&parser.peek_nth_token(1).token)
}

/// Whether the next token can start an EXEC argument (rather than the next statement).
fn starts_argument(token: &Token) -> bool {
    match token {
        Token::Number(..)
        | Token::SingleQuotedString(_)
        | Token::NationalStringLiteral(_)
        | Token::Minus
        | Token::LParen => true,
        Token::Word(w) => {
            w.value.starts_with('@')
                || w.quote_style.is_some()
                || w.keyword == Keyword::NoKeyword
                || matches!(w.keyword, Keyword::DEFAULT | Keyword::NULL)
        }
        _ => false,
    }
}

/// After EXEC[UTE]: a procedure call or `( string )`.
pub fn parse_exec(parser: &mut Parser<'_>) -> Result<Exec, ParserError> {
    if parser.consume_token(&Token::LParen) {
        let text = parser.parse_expr()?;
        parser.expect_token(&Token::RParen)?;
        return Ok(Exec { status_variable: None, target: ExecTarget::Dynamic(Box::new(text)) });
    }
    let mut status_variable = None;
    if is_variable(&parser.peek_token().token) && parser.peek_nth_token(1).token == Token::Eq {
        status_variable = Some(parser.parse_identifier()?.value);
        parser.next_token();
    }
    let name = last_part(&parser.parse_object_name(false)?);
    let mut args = Vec::new();
    if starts_argument(&parser.peek_token().token) {
        loop {
            args.push(parse_exec_arg(parser)?);
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    Ok(Exec { status_variable, target: ExecTarget::Procedure { name, args } })
}

fn parse_exec_arg(parser: &mut Parser<'_>) -> Result<ExecArg, ParserError> {
    let mut name = None;
    if is_variable(&parser.peek_token().token) && parser.peek_nth_token(1).token == Token::Eq {
        name = Some(parser.parse_identifier()?.value);
        parser.next_token();
    }
    if parser.parse_keyword(Keyword::DEFAULT) {
        return Ok(ExecArg { name, value: None, output: false });
    }
    let value = match parser.peek_token().token {
        // An unquoted word is a string (`EXEC sp_help Orders`).
        Token::Word(w) if !w.value.starts_with('@') && w.keyword == Keyword::NoKeyword => {
            parser.next_token();
            Expr::value(sqlparser::ast::Value::SingleQuotedString(w.value))
        }
        _ => parser.parse_expr()?,
    };
    let output = parse_word(parser, "OUT") || parse_word(parser, "OUTPUT");
    Ok(ExecArg { name, value: Some(value), output })
}

/// After DROP PROC[EDURE].
pub fn parse_drop_procedure(parser: &mut Parser<'_>) -> Result<Stmt, ParserError> {
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let mut names = vec![last_part(&parser.parse_object_name(false)?)];
    while parser.consume_token(&Token::Comma) {
        names.push(last_part(&parser.parse_object_name(false)?));
    }
    Ok(Stmt::DropProcedure { names, if_exists })
}

/// `@p type [OUTPUT], ...` of sp_executesql.
fn parse_param_declarations(text: &str) -> Result<Vec<ProcParam>, SqlError> {
    let mut params = Vec::new();
    if text.trim().is_empty() {
        return Ok(params);
    }
    let dialect = crate::dialect::TsqlDialect::default();
    let syntax =
        |e: ParserError| SqlError::new(102, 15, 1, format!("Incorrect syntax near '{e}'."));
    let mut parser = Parser::new(&dialect).try_with_sql(text).map_err(syntax)?;
    loop {
        let name = parser.parse_identifier().map_err(syntax)?.value;
        let data_type = parser.parse_data_type().map_err(syntax)?;
        let output = parse_word(&mut parser, "OUT") || parse_word(&mut parser, "OUTPUT");
        params.push(ProcParam { name, data_type, default: None, output });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    Ok(params)
}

fn could_not_find(name: &str) -> SqlError {
    SqlError::new(2812, 16, 62, format!("Could not find stored procedure '{name}'."))
}

/// The values of a call's parameters, in the callee's scope, and which caller variable each
/// OUTPUT parameter goes back to.
struct Bound {
    variables: BTreeMap<String, (SqlType, Value)>,
    outputs: Vec<(String, String)>,
}

impl Session {
    /// CREATE [OR ALTER] / ALTER PROCEDURE.
    pub(crate) fn run_create_procedure(
        &mut self,
        def: &ProcedureDef,
        line: u64,
    ) -> Result<Flow, Failure> {
        let name = def.name.clone();
        let definition = def.definition.clone();
        let (alter, or_alter) = (def.alter, def.or_alter);
        self.atomic(line, |s| {
            let catalog = s.db().catalog()?;
            let exists = catalog.module(&name).is_some();
            if alter && !exists {
                return Err(engine::catalog::invalid_object(&name));
            }
            if exists && (alter || or_alter) {
                return catalog.alter_module(s.db(), &name, &definition);
            }
            catalog.create_module(s.db(), &name, &definition)
        })?;
        Ok(Flow::Next)
    }

    pub(crate) fn run_drop_procedure(
        &mut self,
        names: &[String],
        if_exists: bool,
        line: u64,
    ) -> Result<Flow, Failure> {
        for name in names {
            let catalog = self.db().catalog().map_err(|e| self.fail(e, line))?;
            if if_exists && catalog.module(name).is_none() {
                continue;
            }
            self.atomic(line, |s| s.db().catalog()?.drop_module(s.db(), name))?;
        }
        Ok(Flow::Next)
    }

    pub(crate) fn run_exec(
        &mut self,
        exec: &Exec,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<Flow, Failure> {
        let status = match &exec.target {
            ExecTarget::Dynamic(expr) => {
                let text = value::display(&self.eval_stmt(expr, line)?);
                self.run_dynamic(
                    &text,
                    Bound { variables: BTreeMap::new(), outputs: Vec::new() },
                    line,
                    out,
                )?;
                0
            }
            ExecTarget::Procedure { name, args } if name.eq_ignore_ascii_case("sp_executesql") => {
                self.sp_executesql(args, line, out)?;
                0
            }
            ExecTarget::Procedure { name, args } => {
                match self.run_system_procedure(name, args, line, out) {
                    Some(status) => status?,
                    None => self.call_procedure(name, args, line, out)?,
                }
            }
        };
        if let Some(variable) = &exec.status_variable {
            self.set_variable(variable, Value::Int(status)).map_err(|e| self.fail(e, line))?;
        }
        Ok(Flow::Next)
    }

    fn call_procedure(
        &mut self,
        name: &str,
        args: &[ExecArg],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<i32, Failure> {
        let catalog = self.db().catalog().map_err(|e| self.fail(e, line))?;
        let module = catalog.module(name).ok_or_else(|| self.fail(could_not_find(name), line))?;
        let parsed = crate::front::parse_batch(&module.definition)
            .map_err(|(error, error_line)| self.fail(error, error_line))?;
        let Some(Parsed { stmt: Stmt::CreateProcedure(def), .. }) = parsed.first() else {
            return Err(self.fail(could_not_find(name), line));
        };
        let bound = self.bind_arguments(&module.name, &def.params, args, line)?;
        let before = self.db().trancount();
        let status = self.run_nested(Some(module.name.clone()), &def.body, bound, line, out)?;
        // A procedure that leaves @@TRANCOUNT changed is error 266, as in SQL Server (the
        // transaction stays as the procedure left it).
        let after = self.db().trancount();
        if after != before {
            let text = format!(
                "Transaction count after EXECUTE indicates a mismatching number of BEGIN and COMMIT statements. Previous count = {before}, current count = {after}."
            );
            return Err(self.fail(SqlError::new(266, 16, 2, text), line));
        }
        Ok(status)
    }

    /// The callee's variables: each parameter from its argument (by position, then by name),
    /// else its default, else error 201.
    fn bind_arguments(
        &mut self,
        procedure: &str,
        params: &[ProcParam],
        args: &[ExecArg],
        line: u64,
    ) -> Result<Bound, Failure> {
        if args.len() > params.len() {
            return Err(self.fail(
                SqlError::new(
                    8144,
                    16,
                    2,
                    format!("Procedure or function {procedure} has too many arguments specified."),
                ),
                line,
            ));
        }
        let mut given: Vec<Option<&ExecArg>> = vec![None; params.len()];
        for (position, arg) in args.iter().enumerate() {
            let index = match &arg.name {
                None => position,
                Some(arg_name) => params
                    .iter()
                    .position(|p| p.name.eq_ignore_ascii_case(arg_name))
                    .ok_or_else(|| {
                        self.fail(
                            SqlError::new(
                                8145,
                                16,
                                2,
                                format!("{arg_name} is not a parameter for procedure {procedure}."),
                            ),
                            line,
                        )
                    })?,
            };
            given[index] = Some(arg);
        }
        let mut bound = Bound { variables: BTreeMap::new(), outputs: Vec::new() };
        for (param, arg) in params.iter().zip(given) {
            let sql_type = sql_type_of(&param.data_type).map_err(|e| self.fail(e, line))?;
            let value = match arg.and_then(|a| a.value.as_ref()) {
                Some(expr) => self.eval_stmt(expr, line)?,
                None => match &param.default {
                    Some(default) => self.eval_stmt(default, line)?,
                    None => return Err(self.fail(SqlError::new(201, 16, 4, format!("Procedure or function '{procedure}' expects parameter '{}', which was not supplied.", param.name)), line)),
                },
            };
            let value = convert(&value, sql_type).map_err(|e| self.fail(e, line))?;
            bound.variables.insert(param.name.to_lowercase(), (sql_type, value));
            if let Some(ExecArg { value: Some(Expr::Identifier(target)), output: true, .. }) = arg
                && param.output
            {
                bound.outputs.push((param.name.clone(), target.value.clone()));
            }
        }
        Ok(bound)
    }

    fn sp_executesql(
        &mut self,
        args: &[ExecArg],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), Failure> {
        let text_of = |s: &mut Session, arg: Option<&ExecArg>| -> Result<String, Failure> {
            match arg.and_then(|a| a.value.as_ref()) {
                Some(expr) => Ok(value::display(&s.eval_stmt(expr, line)?)),
                None => Ok(String::new()),
            }
        };
        let statement = text_of(self, args.first())?;
        let declarations = text_of(self, args.get(1))?;
        let params = parse_param_declarations(&declarations).map_err(|e| self.fail(e, line))?;
        let values: Vec<ExecArg> = args
            .iter()
            .skip(2)
            .map(|a| ExecArg { name: a.name.clone(), value: a.value.clone(), output: a.output })
            .collect();
        let bound = self.bind_arguments("sp_executesql", &params, &values, line)?;
        self.run_dynamic(&statement, bound, line, out)?;
        Ok(())
    }

    fn run_dynamic(
        &mut self,
        text: &str,
        bound: Bound,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<i32, Failure> {
        // Its DECLAREs against sp_executesql's parameters too, which come with the call.
        let parameters = bound.variables.keys().map(String::as_str);
        let compiled = crate::front::parse_batch(text).and_then(|parsed| {
            crate::front::check_declarations(&parsed, parameters).map(|()| parsed)
        });
        let parsed = match compiled {
            Ok(parsed) => parsed,
            Err((error, error_line)) => {
                let mut failure = self.fail(error, error_line);
                failure.abort_batch = false;
                return Err(failure);
            }
        };
        self.run_nested(None, &parsed, bound, line, out)
    }

    /// Runs a procedure body or a dynamic batch one nesting level down, with its own variables;
    /// OUTPUT parameters go back to the caller's variables. Returns the RETURN status.
    fn run_nested(
        &mut self,
        module: Option<String>,
        body: &[Parsed],
        bound: Bound,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<i32, Failure> {
        if self.nest_level >= MAX_NEST_LEVEL {
            return Err(self.fail(SqlError::new(217, 16, 1, format!("Maximum stored procedure, function, trigger, or view nesting level exceeded (limit {MAX_NEST_LEVEL}).")), line));
        }
        let caller_variables = std::mem::replace(&mut self.variables, bound.variables);
        // A USE inside EXEC (string) lasts until the end of the EXEC, as SQL Server documents.
        let caller_database = self.db.clone();
        let caller_options = self.set_options();
        self.nest_level += 1;
        self.module_stack.push(module);
        self.return_status = 0;
        let result = self.run_parsed_block(body, out).map_err(|mut failure| {
            // A compile error (a name or syntax error) ends its own scope, not the caller's.
            if crate::session::is_compile_error(failure.error.number)
                && failure.nest_level == self.nest_level
            {
                failure.abort_batch = self.set_options().1;
            }
            failure
        });
        let status = self.return_status;
        let outputs: Vec<(String, Value)> = bound
            .outputs
            .iter()
            .filter_map(|(param, target)| {
                self.variables.get(&param.to_lowercase()).map(|(_, v)| (target.clone(), v.clone()))
            })
            .collect();
        self.module_stack.pop();
        self.nest_level -= 1;
        // The scope's temporary tables and table variables end with it.
        let level = self.nest_level;
        self.cursors.end_scope(level + 1);
        let ended = self.temp_objects_mut().take_scope(level, false);
        let waiting = crate::session::drop_temporary(ended);
        self.temp_objects_mut().wait_for_transaction_end(waiting);
        self.variables = caller_variables;
        self.db = caller_database;
        self.restore_set_options(caller_options);
        result?;
        for (target, value) in outputs {
            self.set_variable(&target, value).map_err(|e| self.fail(e, line))?;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::parse_batch;

    #[test]
    fn create_procedure_takes_the_batch() {
        let sql = "-- a comment\nCREATE PROCEDURE dbo.p @a INT, @b VARCHAR(10) = 'x' OUTPUT AS\nSELECT @a\nSELECT @b";
        let parsed = parse_batch(sql).unwrap();
        assert_eq!(parsed.len(), 1);
        let Stmt::CreateProcedure(def) = &parsed[0].stmt else { panic!() };
        assert_eq!(def.name, "p");
        assert_eq!(def.params.len(), 2);
        assert!(def.params[1].output && def.params[1].default.is_some());
        assert_eq!(def.body.len(), 2);
        assert_eq!(def.definition, sql);
        let (error, line) = parse_batch("SELECT 1\nCREATE PROC q AS SELECT 2").unwrap_err();
        assert_eq!((error.number, line), (111, 2));
    }

    #[test]
    fn exec_forms() {
        let parsed =
            parse_batch("EXEC @rc = p 1, @b = @v OUTPUT\nEXEC ('SELECT ' + '1')\nSELECT 3")
                .unwrap();
        assert_eq!(parsed.len(), 3);
        let Stmt::Exec(exec) = &parsed[0].stmt else { panic!() };
        assert_eq!(exec.status_variable.as_deref(), Some("@rc"));
        let ExecTarget::Procedure { name, args } = &exec.target else { panic!() };
        assert_eq!(name, "p");
        assert_eq!(args.len(), 2);
        assert!(args[1].output && args[1].name.as_deref() == Some("@b"));
        assert!(
            matches!(&parsed[1].stmt, Stmt::Exec(e) if matches!(e.target, ExecTarget::Dynamic(_)))
        );
        let bare = parse_batch("sp_who").unwrap();
        assert!(matches!(&bare[0].stmt, Stmt::Exec(_)));
        assert!(matches!(parse_batch("CHECKPOINT").unwrap()[0].stmt, Stmt::Checkpoint));
    }
}
