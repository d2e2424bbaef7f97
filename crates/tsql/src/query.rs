//! SELECT and expressions: FROM with joins (nested loops), WHERE, GROUP BY with aggregates,
//! HAVING, DISTINCT, ORDER BY, TOP (WITH TIES, PERCENT), OFFSET ... FETCH, UNION, EXCEPT and
//! INTERSECT (duplicates found by sorting, n log n), and the expression evaluator with
//! subqueries (correlated ones see the outer row through [`Env::outer`]).
//!
//! Access paths: a table is read through its clustered index or heap, or, when the WHERE
//! clause has `column = constant` on the leading key column of an index, through that index
//! (a seek, [`engine::catalog::Table::index_range`]).
//!
//! Deviations: no cost-based optimiser (joins are nested loops in FROM order); rows of a query
//! are materialised; column names of expressions without an alias are empty, as SQL Server
//! shows "(No column name)".

use crate::functions;
use crate::session::Session;
use crate::value::{self, Arith, Result, compare, convert, is_true, sort_compare};
use engine::SqlError;
use engine::catalog::{Table, invalid_object};
use engine::index_usage::IndexUse;
use engine::record::{SqlType, Value};
use sqlparser::ast::{
    BinaryOperator, Distinct, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    Join, JoinConstraint, JoinOperator, ObjectName, OrderByKind, Query, Select, SelectItem,
    SetExpr, TableFactor, TopQuantity, UnaryOperator, Value as AstValue,
};
use std::cmp::Ordering;
use std::sync::Arc;

/// A column visible in a scope: the table (or alias) it comes from and its name.
#[derive(Clone, Debug)]
pub struct ColRef {
    pub qualifier: String,
    pub name: String,
    /// The declared type, when the column comes from a table or a typed derived table.
    pub sql_type: Option<SqlType>,
}

/// The row an expression is evaluated against, and the rows of its group when grouped.
pub struct Env<'a> {
    pub cols: &'a [ColRef],
    pub row: &'a [Value],
    pub group: Option<&'a [Vec<Value>]>,
    pub outer: Option<&'a Env<'a>>,
}

impl Env<'_> {
    pub fn empty() -> Env<'static> {
        Env { cols: &[], row: &[], group: None, outer: None }
    }
}

/// The most rounds a recursive common table expression runs (SQL Server's default
/// MAXRECURSION).
pub const MAX_RECURSION: usize = 100;
/// MAXRECURSION 0 means no limit; rounds are still bounded, at this many.
pub const UNLIMITED_RECURSION_BOUND: usize = 100_000_000;

/// A common table expression's rows while the query that defines it runs.
#[derive(Clone)]
pub struct CteBinding {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Arc<Vec<Vec<Value>>>,
    /// Stands for a table of that name (UPDATE/DELETE ... FROM), whatever schema is written.
    pub shadows_table: bool,
}

/// Whether a set expression reads the relation `name` (a recursive CTE's member).
fn names_relation(body: &SetExpr, name: &str) -> bool {
    let found = sqlparser::ast::visit_relations(body, |relation: &ObjectName| {
        if relation.0.len() == 1 && crate::front::last_part(relation).eq_ignore_ascii_case(name) {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    found.is_break()
}

/// Rows and the columns that name their values.
type Relation = (Vec<ColRef>, Vec<Vec<Value>>);

/// A join seeks into its right table once per left row only when that table has more pages
/// than this (one extent); a smaller one is read once.
const SEEK_JOIN_MIN_PAGES: usize = 8;

/// An index seek: the index's position in the table's list (0: its heap or clustered index)
/// and inclusive bounds on its leading key column.
struct SeekPlan {
    position: usize,
    from: Option<Value>,
    to: Option<Value>,
}

impl SeekPlan {
    fn is_point(&self) -> bool {
        self.from.is_some() && self.from == self.to
    }
}

/// What a query produced.
pub struct QueryResult {
    pub columns: Vec<String>,
    /// Each column's declared type where the select list names one (a table column, CAST,
    /// a variable), else None; the TDS layer describes an empty or all-NULL column by it.
    pub types: Vec<Option<SqlType>>,
    pub rows: Vec<Vec<Value>>,
    /// `SELECT @v = ...` assignments (variable, position) when the select assigns.
    pub assignments: Vec<String>,
}

fn invalid_column(name: &str) -> SqlError {
    SqlError::new(207, 16, 1, format!("Invalid column name '{name}'."))
}

fn unbound(parts: &str) -> SqlError {
    SqlError::new(4104, 16, 1, format!("The multi-part identifier \"{parts}\" could not be bound."))
}

/// 40517 for a clause the T-SQL layer does not build (for callers outside this module).
pub(crate) fn not_supported_option(what: &str) -> SqlError {
    not_supported(what)
}

fn not_supported(what: &str) -> SqlError {
    SqlError::new(
        40517,
        16,
        1,
        format!(
            "Keyword or statement option '{what}' is not supported in this version of extentdb."
        ),
    )
}

fn ident_text(ident: &sqlparser::ast::Ident) -> String {
    ident.value.clone()
}

fn is_aggregate(name: &str) -> bool {
    matches!(
        name.to_ascii_uppercase().as_str(),
        "COUNT" | "SUM" | "AVG" | "MIN" | "MAX" | "COUNT_BIG" | "STDEV" | "VAR" | "STRING_AGG"
    )
}

/// The parts of a dotted name, unquoted (`x.[event_data].value`: x, event_data, value).
fn name_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part {
            sqlparser::ast::ObjectNamePart::Identifier(ident) => ident.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The xml type's methods this engine has ([`crate::xml`]).
fn is_xml_method(name: &str) -> bool {
    name.eq_ignore_ascii_case("value") || name.eq_ignore_ascii_case("exist")
}

pub(crate) fn function_name(name: &ObjectName) -> String {
    crate::front::last_part(name)
}

/// True if the expression contains an aggregate (outside subqueries).
pub fn has_aggregate(expr: &Expr) -> bool {
    match expr {
        Expr::Function(f) => {
            if is_aggregate(&function_name(&f.name)) && f.over.is_none() {
                return true;
            }
            function_args(f)
                .iter()
                .any(|a| matches!(a, FunctionArgExpr::Expr(e) if has_aggregate(e)))
        }
        Expr::BinaryOp { left, right, .. } => has_aggregate(left) || has_aggregate(right),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::Cast { expr, .. } => {
            has_aggregate(expr)
        }
        Expr::Convert { expr, .. } | Expr::IsNull(expr) | Expr::IsNotNull(expr) => {
            has_aggregate(expr)
        }
        Expr::Case { operand, conditions, else_result, .. } => {
            operand.as_deref().is_some_and(has_aggregate)
                || conditions
                    .iter()
                    .any(|c| has_aggregate(&c.condition) || has_aggregate(&c.result))
                || else_result.as_deref().is_some_and(has_aggregate)
        }
        Expr::Between { expr, low, high, .. } => {
            has_aggregate(expr) || has_aggregate(low) || has_aggregate(high)
        }
        Expr::InList { expr, list, .. } => has_aggregate(expr) || list.iter().any(has_aggregate),
        Expr::Like { expr, pattern, .. } => has_aggregate(expr) || has_aggregate(pattern),
        _ => false,
    }
}

fn function_args(f: &sqlparser::ast::Function) -> Vec<FunctionArgExpr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(e) => e.clone(),
                FunctionArg::Named { arg, .. } | FunctionArg::ExprNamed { arg, .. } => arg.clone(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_distinct_call(f: &sqlparser::ast::Function) -> bool {
    matches!(&f.args, FunctionArguments::List(list) if matches!(list.duplicate_treatment, Some(sqlparser::ast::DuplicateTreatment::Distinct)))
}

/// A LIKE pattern match (% _ [set]), case-insensitive.
/// LIKE for callers outside this module (catalog procedures' name patterns).
pub(crate) fn like_pattern(text: &str, pattern: &str) -> bool {
    like(text, pattern)
}

fn like(text: &str, pattern: &str) -> bool {
    let t: Vec<char> = text.to_lowercase().chars().collect();
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    like_at(&t, &p)
}

fn like_at(t: &[char], p: &[char]) -> bool {
    let Some(first) = p.first() else { return t.is_empty() };
    match first {
        '%' => (0..=t.len()).any(|i| like_at(&t[i..], &p[1..])),
        '_' => !t.is_empty() && like_at(&t[1..], &p[1..]),
        '[' => {
            let Some(close) = p.iter().position(|c| *c == ']') else {
                return !t.is_empty() && t[0] == '[' && like_at(&t[1..], &p[1..]);
            };
            let set = &p[1..close];
            let (negate, set) = match set.first() {
                Some('^') => (true, &set[1..]),
                _ => (false, set),
            };
            let Some(c) = t.first() else { return false };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= *c && *c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == *c;
                    i += 1;
                }
            }
            hit != negate && like_at(&t[1..], &p[close + 1..])
        }
        c => !t.is_empty() && t[0] == *c && like_at(&t[1..], &p[1..]),
    }
}

/// A number literal: int, bigint, or numeric.
fn number_literal(text: &str) -> Result<Value> {
    if let Ok(v) = text.parse::<i32>() {
        return Ok(Value::Int(v));
    }
    if let Ok(v) = text.parse::<i64>() {
        return Ok(Value::BigInt(v));
    }
    if text.contains(['e', 'E']) {
        return text.parse::<f64>().map(Value::Float).map_err(|_| invalid_column(text));
    }
    value::parse_decimal(text)
        .map(|(v, s)| Value::Decimal(v, s))
        .ok_or_else(|| invalid_column(text))
}

/// The declared length of a character or binary type and its limit, when the length is over
/// it (8,000 bytes; 4,000 characters for nchar and nvarchar; MAX is not a length).
pub fn oversized_length(data_type: &sqlparser::ast::DataType) -> Option<(u64, u64)> {
    let (name, args) = type_name_and_args(data_type);
    length_over_limit(&name, &args)
}

/// [`oversized_length`] of a type already split into its name and its arguments' text.
fn length_over_limit(name: &str, args: &str) -> Option<(u64, u64)> {
    let size: u64 = args.split(',').next()?.trim().parse().ok()?;
    let most = match name.to_lowercase().as_str() {
        "char" | "character" | "varchar" | "binary" | "varbinary" => 8000,
        "nchar" | "nvarchar" => 4000,
        _ => return None,
    };
    (size > most).then_some((size, most))
}

/// A type's name and the text between its parentheses (empty without them).
fn type_name_and_args(data_type: &sqlparser::ast::DataType) -> (String, String) {
    let text = data_type.to_string();
    match text.split_once('(') {
        Some((name, rest)) => (name.trim().to_string(), rest.trim_end_matches(')').to_string()),
        None => (text.trim().to_string(), String::new()),
    }
}

/// 131 when a column definition's length exceeds its type's maximum (the error names the
/// column; a type's elsewhere names the type).
pub fn check_column_size(def: &sqlparser::ast::ColumnDef) -> Result<()> {
    let Some((size, most)) = oversized_length(&def.data_type) else { return Ok(()) };
    Err(SqlError::new(
        131,
        15,
        3,
        format!(
            "The size ({size}) given to the column '{}' exceeds the maximum allowed for any data type ({most}).",
            def.name.value
        ),
    ))
}

/// IDENTITY or IDENTITY(seed, increment) as sqlparser prints it: (seed, increment).
pub fn identity_seed_step(text: &str) -> (i64, i64) {
    let Some((_, args)) = text.split_once('(') else { return (1, 1) };
    let parts: Vec<i64> =
        args.trim_end_matches(')').split(',').filter_map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        [seed, step] => (seed, step),
        _ => (1, 1),
    }
}

/// The SQL type a DataType names.
pub fn sql_type_of(data_type: &sqlparser::ast::DataType) -> Result<SqlType> {
    let (name, args) = type_name_and_args(data_type);
    if let Some((size, most)) = length_over_limit(&name, &args) {
        return Err(SqlError::new(
            131,
            15,
            3,
            format!(
                "The size ({size}) given to the type '{}' exceeds the maximum allowed for any data type ({most}).",
                name.to_lowercase()
            ),
        ));
    }
    let args: Vec<u64> = args
        .split(',')
        .filter_map(|a| {
            let a = a.trim();
            if a.eq_ignore_ascii_case("max") { Some(8000) } else { a.parse().ok() }
        })
        .collect();
    value::parse_type_name(&name, &args).ok_or_else(|| {
        SqlError::new(
            2715,
            16,
            6,
            format!("Column, parameter, or variable #1: Cannot find data type {name}."),
        )
    })
}

impl Session {
    /// Evaluates an expression against a row.
    pub fn eval(&self, expr: &Expr, env: &Env<'_>) -> Result<Value> {
        match expr {
            Expr::Identifier(ident) => self.resolve(&[ident_text(ident)], env),
            Expr::CompoundIdentifier(parts) => {
                let parts: Vec<String> = parts.iter().map(ident_text).collect();
                self.resolve(&parts, env)
            }
            Expr::Value(v) if is_merge_action(&v.value) => {
                self.resolve(&[MERGE_ACTION.to_string()], env)
            }
            Expr::Value(v) => literal(&v.value),
            Expr::Nested(inner) => self.eval(inner, env),
            Expr::UnaryOp { op, expr } => {
                let v = self.eval(expr, env)?;
                match op {
                    UnaryOperator::Minus => {
                        value::arith(Arith::Sub, &Value::Int(0), &v).map(|r| match (&v, r) {
                            (Value::Decimal(_, s), Value::Decimal(x, _)) => Value::Decimal(x, *s),
                            (_, r) => r,
                        })
                    }
                    UnaryOperator::Plus => Ok(v),
                    UnaryOperator::BitwiseNot => value::bitwise('~', &v, None),
                    UnaryOperator::Not => Ok(match v {
                        Value::Null => Value::Null,
                        other => Value::Bit(!is_true(&other)),
                    }),
                    other => Err(not_supported(&other.to_string())),
                }
            }
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right, env),
            Expr::Trim { trim_where, trim_what, expr, trim_characters: None } => {
                let text = self.eval(expr, env)?;
                let characters = match trim_what {
                    Some(what) => self.eval(what, env)?,
                    None => Value::Text(" ".into()),
                };
                let side = match trim_where {
                    Some(sqlparser::ast::TrimWhereField::Leading) => "LTRIM",
                    Some(sqlparser::ast::TrimWhereField::Trailing) => "RTRIM",
                    _ => "TRIM",
                };
                functions::call(side, &[text, characters]).expect("a trim built-in")
            }
            Expr::IsNull(e) => Ok(Value::Bit(matches!(self.eval(e, env)?, Value::Null))),
            Expr::IsNotNull(e) => Ok(Value::Bit(!matches!(self.eval(e, env)?, Value::Null))),
            Expr::Between { expr, negated, low, high } => {
                let v = self.eval(expr, env)?;
                let (lo, hi) = (self.eval(low, env)?, self.eval(high, env)?);
                if [&v, &lo, &hi].iter().any(|x| matches!(x, Value::Null)) {
                    return Ok(Value::Null);
                }
                let inside =
                    compare(&v, &lo)? != Ordering::Less && compare(&v, &hi)? != Ordering::Greater;
                Ok(Value::Bit(inside != *negated))
            }
            Expr::InList { expr, list, negated } => {
                let v = self.eval(expr, env)?;
                let mut candidates = Vec::with_capacity(list.len());
                for item in list {
                    candidates.push(self.eval(item, env)?);
                }
                Ok(in_values(&v, &candidates, *negated)?)
            }
            Expr::InSubquery { expr, subquery, negated } => {
                let v = self.eval(expr, env)?;
                let result = self.run_query(subquery, Some(env))?;
                let candidates: Vec<Value> =
                    result.rows.into_iter().filter_map(|r| r.into_iter().next()).collect();
                Ok(in_values(&v, &candidates, *negated)?)
            }
            Expr::Exists { subquery, negated } => {
                let result = self.run_query(subquery, Some(env))?;
                Ok(Value::Bit(result.rows.is_empty() == *negated))
            }
            Expr::Subquery(query) => {
                let result = self.run_query(query, Some(env))?;
                if result.rows.len() > 1 {
                    return Err(SqlError::new(
                        512,
                        16,
                        1,
                        "Subquery returned more than 1 value. This is not permitted when the subquery follows =, !=, <, <= , >, >= or when the subquery is used as an expression.",
                    ));
                }
                Ok(result
                    .rows
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Value::Null))
            }
            Expr::Like { negated, expr, pattern, escape_char, .. } => {
                let (v, p) = (self.eval(expr, env)?, self.eval(pattern, env)?);
                if matches!(v, Value::Null) || matches!(p, Value::Null) {
                    return Ok(Value::Null);
                }
                let mut pattern = value::display(&p);
                if let Some(escape) = escape_char {
                    pattern = escaped_pattern(&pattern, &self.eval(escape, env)?)?;
                }
                Ok(Value::Bit(like(&value::display(&v), &pattern) != *negated))
            }
            Expr::Case { operand, conditions, else_result, .. } => {
                let subject = match operand {
                    Some(o) => Some(self.eval(o, env)?),
                    None => None,
                };
                for when in conditions {
                    let hit = match &subject {
                        Some(s) => {
                            let w = self.eval(&when.condition, env)?;
                            !matches!(s, Value::Null)
                                && !matches!(w, Value::Null)
                                && compare(s, &w)?.is_eq()
                        }
                        None => is_true(&self.eval(&when.condition, env)?),
                    };
                    if hit {
                        return self.eval(&when.result, env);
                    }
                }
                match else_result {
                    Some(e) => self.eval(e, env),
                    None => Ok(Value::Null),
                }
            }
            Expr::Cast { expr, data_type, kind, .. } => {
                let v = self.eval(expr, env)?;
                let to = sql_type_of(data_type)?;
                let converted = convert(&v, to);
                match kind {
                    sqlparser::ast::CastKind::TryCast | sqlparser::ast::CastKind::SafeCast => {
                        Ok(converted.unwrap_or(Value::Null))
                    }
                    _ => converted,
                }
            }
            Expr::Convert { is_try, expr, data_type, styles, .. } => {
                let v = self.eval(expr, env)?;
                let Some(data_type) = data_type else { return Err(not_supported("CONVERT")) };
                let to = sql_type_of(data_type)?;
                let converted = match styles.first() {
                    Some(style) => self.convert_with_style(&v, to, style, env),
                    None => convert(&v, to),
                };
                if *is_try { Ok(converted.unwrap_or(Value::Null)) } else { converted }
            }
            Expr::Function(f) => self.call(f, env),
            Expr::CompoundFieldAccess { root, access_chain } => {
                self.xml_method_on(root, access_chain, env)
            }
            Expr::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.eval(expr, env)?];
                for part in [substring_from, substring_for].into_iter().flatten() {
                    args.push(self.eval(part, env)?);
                }
                functions::call("SUBSTRING", &args).expect("SUBSTRING is built in")
            }
            Expr::TypedString(typed) => {
                let text = match &typed.value.value {
                    AstValue::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                convert(&Value::Text(text), sql_type_of(&typed.data_type)?)
            }
            other => Err(not_supported(&other.to_string())),
        }
    }

    fn binary(
        &self,
        left: &Expr,
        op: &BinaryOperator,
        right: &Expr,
        env: &Env<'_>,
    ) -> Result<Value> {
        match op {
            BinaryOperator::And => {
                let l = self.eval(left, env)?;
                if matches!(l, Value::Bit(false)) {
                    return Ok(Value::Bit(false));
                }
                let r = self.eval(right, env)?;
                Ok(match (l, r) {
                    (_, Value::Bit(false)) => Value::Bit(false),
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    _ => Value::Bit(true),
                })
            }
            BinaryOperator::Or => {
                let l = self.eval(left, env)?;
                if is_true(&l) {
                    return Ok(Value::Bit(true));
                }
                let r = self.eval(right, env)?;
                Ok(match (l, r) {
                    (_, r) if is_true(&r) => Value::Bit(true),
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    _ => Value::Bit(false),
                })
            }
            _ => {
                let (l, r) = (self.eval(left, env)?, self.eval(right, env)?);
                let arith = match op {
                    BinaryOperator::Plus => Some(Arith::Add),
                    BinaryOperator::Minus => Some(Arith::Sub),
                    BinaryOperator::Multiply => Some(Arith::Mul),
                    BinaryOperator::Divide => Some(Arith::Div),
                    BinaryOperator::Modulo => Some(Arith::Mod),
                    _ => None,
                };
                if let Some(a) = arith {
                    return value::arith(a, &l, &r);
                }
                let bitwise = match op {
                    BinaryOperator::BitwiseAnd => Some('&'),
                    BinaryOperator::BitwiseOr => Some('|'),
                    BinaryOperator::BitwiseXor => Some('^'),
                    _ => None,
                };
                if let Some(bitwise) = bitwise {
                    return value::bitwise(bitwise, &l, Some(&r));
                }
                if matches!(op, BinaryOperator::StringConcat) {
                    return value::arith(
                        Arith::Add,
                        &Value::Text(value::display(&l)),
                        &Value::Text(value::display(&r)),
                    );
                }
                if matches!(l, Value::Null) || matches!(r, Value::Null) {
                    return Ok(Value::Null);
                }
                let ordering = compare(&l, &r)?;
                let result = match op {
                    BinaryOperator::Eq => ordering.is_eq(),
                    BinaryOperator::NotEq => !ordering.is_eq(),
                    BinaryOperator::Lt => ordering.is_lt(),
                    BinaryOperator::LtEq => ordering.is_le(),
                    BinaryOperator::Gt => ordering.is_gt(),
                    BinaryOperator::GtEq => ordering.is_ge(),
                    other => return Err(not_supported(&other.to_string())),
                };
                Ok(Value::Bit(result))
            }
        }
    }

    /// A column or variable reference.
    fn resolve(&self, parts: &[String], env: &Env<'_>) -> Result<Value> {
        if parts.len() == 1 {
            let name = &parts[0];
            if name.starts_with("@@") {
                return self.system_variable(name);
            }
            if name.starts_with('@') {
                return self.variable(name);
            }
        }
        let mut scope = Some(env);
        while let Some(env) = scope {
            if let Some(position) = find_column(env.cols, parts)? {
                return Ok(env.row.get(position).cloned().unwrap_or(Value::Null));
            }
            scope = env.outer;
        }
        // A qualifier that names a table in scope makes the column the missing name (207, as in
        // SQL Server); one that names nothing is the unbound identifier (4104).
        let qualifier = parts.len().checked_sub(2).map(|at| &parts[at]);
        let mut scope = Some(env);
        let mut qualifier_known = false;
        while let Some(env) = scope {
            qualifier_known |= qualifier
                .is_some_and(|q| env.cols.iter().any(|c| c.qualifier.eq_ignore_ascii_case(q)));
            scope = env.outer;
        }
        if parts.len() == 1 || qualifier_known {
            Err(invalid_column(parts.last().expect("a name has a part")))
        } else {
            Err(unbound(&parts.join(".")))
        }
    }

    /// `column.value(path, type)` and `@variable.exist(path)`: an xml method called on a
    /// column or a variable ([`crate::xml`]); None if `f` is not one.
    fn xml_method(&self, f: &sqlparser::ast::Function, env: &Env<'_>) -> Option<Result<Value>> {
        // Most calls are one-part built-ins: they are told apart before anything is allocated.
        if f.name.0.len() < 2 || !is_xml_method(&function_name(&f.name)) {
            return None;
        }
        let parts = name_parts(&f.name);
        let (method, owner) = parts.split_last()?;
        Some(self.resolve(owner, env).and_then(|xml| self.call_xml_method(&xml, method, f, env)))
    }

    /// `CAST(x AS xml).value(...)`: the method on an expression. A CAST or CONVERT to xml is
    /// read as its operand's text, whatever its length (xml is nvarchar(4000) elsewhere).
    fn xml_method_on(
        &self,
        root: &Expr,
        access_chain: &[sqlparser::ast::AccessExpr],
        env: &Env<'_>,
    ) -> Result<Value> {
        let [sqlparser::ast::AccessExpr::Dot(Expr::Function(f))] = access_chain else {
            return Err(not_supported(&format!("{root}")));
        };
        let method = function_name(&f.name);
        if f.name.0.len() != 1 || !is_xml_method(&method) {
            return Err(not_supported(&format!("{root}.{f}")));
        }
        let xml = match root {
            Expr::Cast { expr, data_type, .. }
                if data_type.to_string().eq_ignore_ascii_case("xml") =>
            {
                self.eval(expr, env)?
            }
            other => self.eval(other, env)?,
        };
        self.call_xml_method(&xml, &method, f, env)
    }

    fn call_xml_method(
        &self,
        xml: &Value,
        method: &str,
        f: &sqlparser::ast::Function,
        env: &Env<'_>,
    ) -> Result<Value> {
        let mut args = Vec::new();
        for arg in function_args(f) {
            let FunctionArgExpr::Expr(e) = arg else { return Err(not_supported("*")) };
            args.push(crate::value::display(&self.eval(&e, env)?));
        }
        match (method.to_ascii_lowercase().as_str(), args.as_slice()) {
            ("value", [path, type_name]) => crate::xml::value(xml, path, type_name),
            ("exist", [path]) => crate::xml::exist(xml, path),
            _ => Err(SqlError::new(
                174,
                15,
                1,
                format!(
                    "The {method} function requires {} argument(s).",
                    if method.eq_ignore_ascii_case("value") { 2 } else { 1 }
                ),
            )),
        }
    }

    fn call(&self, f: &sqlparser::ast::Function, env: &Env<'_>) -> Result<Value> {
        if let Some(result) = self.xml_method(f, env) {
            return result;
        }
        let name = function_name(&f.name);
        if is_aggregate(&name) && f.over.is_none() {
            return self.aggregate(&name, f, env);
        }
        if f.over.is_some() {
            return Err(SqlError::new(
                4108,
                15,
                1,
                "Windowed functions can only appear in the SELECT or ORDER BY clauses.",
            ));
        }
        let raw = function_args(f);
        let upper = name.to_ascii_uppercase();
        if upper == "IDENTITY" {
            return Err(SqlError::new(
                177,
                15,
                1,
                "The IDENTITY function can only be used when the SELECT statement has an INTO clause.",
            ));
        }
        // Date parts are bare words, not columns.
        let first_is_word = matches!(
            upper.as_str(),
            "DATEADD" | "DATEDIFF" | "DATEDIFF_BIG" | "DATEPART" | "DATENAME"
        );
        let mut args = Vec::with_capacity(raw.len());
        for (i, arg) in raw.iter().enumerate() {
            match arg {
                FunctionArgExpr::Expr(Expr::Identifier(ident)) if i == 0 && first_is_word => {
                    args.push(Value::Text(ident.value.clone()))
                }
                FunctionArgExpr::Expr(e) => args.push(self.eval(e, env)?),
                _ => return Err(not_supported("*")),
            }
        }
        if let Some(result) = self.system_function(&upper, &args) {
            return result;
        }
        if upper == "ISNULL"
            && let [FunctionArgExpr::Expr(check), _] = raw.as_slice()
            && let [Value::Null, replacement] = args.as_slice()
            && let Some(declared) = self.declared_type(check, env.cols)
        {
            // ISNULL's type is its first argument's: the replacement is converted to it
            // (`ISNULL(@varchar3, 'abcdef')` is 'abc'), where COALESCE takes the wider type.
            return convert(replacement, declared);
        }
        if upper == "DATALENGTH"
            && let [FunctionArgExpr::Expr(arg)] = raw.as_slice()
            && let [value] = args.as_slice()
            && let Some(declared) = self.literal_or_declared_type(arg, env.cols)
        {
            return Ok(functions::datalength_of(value, declared));
        }
        if let Some(result) = functions::call(&upper, &args) {
            return result;
        }
        Err(SqlError::new(
            195,
            15,
            10,
            format!("'{name}' is not a recognized built-in function name."),
        ))
    }

    fn aggregate(&self, name: &str, f: &sqlparser::ast::Function, env: &Env<'_>) -> Result<Value> {
        let Some(group) = env.group else {
            return Err(SqlError::new(
                147,
                15,
                1,
                "An aggregate may not appear in the WHERE clause unless it is in a subquery contained in a HAVING clause or a select list, and the column being aggregated is an outer reference.",
            ));
        };
        let args = function_args(f);
        let upper = name.to_ascii_uppercase();
        let star = matches!(args.first(), Some(FunctionArgExpr::Wildcard) | None);
        if upper.starts_with("COUNT") && star {
            let n = group.len() as i64;
            return Ok(if upper == "COUNT_BIG" { Value::BigInt(n) } else { Value::Int(n as i32) });
        }
        let Some(FunctionArgExpr::Expr(arg)) = args.first() else {
            return Err(not_supported(name));
        };
        if upper == "STRING_AGG" {
            return self.string_agg(f, arg, &args, group, env);
        }
        let mut values = Vec::with_capacity(group.len());
        for row in group {
            let row_env = Env { cols: env.cols, row, group: None, outer: env.outer };
            let v = self.eval(arg, &row_env)?;
            if !matches!(v, Value::Null) {
                values.push(v);
            }
        }
        if is_distinct_call(f) {
            values.sort_by(sort_compare);
            values.dedup_by(|a, b| sort_compare(a, b).is_eq());
        }
        fold_aggregate(&upper, values)
    }

    /// Runs a query (a SELECT, possibly with set operations), with an outer row for
    /// correlated subqueries.
    pub fn run_query(&self, query: &Query, outer: Option<&Env<'_>>) -> Result<QueryResult> {
        let Some(with) = &query.with else { return self.run_query_body(query, outer) };
        let depth = self.ctes.borrow().len();
        let result = (|| {
            for cte in &with.cte_tables {
                let binding = self.run_cte(cte, outer)?;
                self.ctes.borrow_mut().push(binding);
            }
            self.run_query_body(query, outer)
        })();
        self.ctes.borrow_mut().truncate(depth);
        result
    }

    /// One common table expression's rows; a recursive one (`anchor UNION ALL recursive
    /// member` naming itself) runs its recursive member on the rows of the previous round
    /// until one adds none, at most [`MAX_RECURSION`] rounds (530), as SQL Server does.
    pub(crate) fn run_cte(
        &self,
        cte: &sqlparser::ast::Cte,
        outer: Option<&Env<'_>>,
    ) -> Result<CteBinding> {
        let name = cte.alias.name.value.clone();
        let named = |result: &QueryResult| aliased_columns(&cte.alias, &result.columns);
        let recursive = match cte.query.body.as_ref() {
            SetExpr::SetOperation {
                left,
                op: sqlparser::ast::SetOperator::Union,
                set_quantifier: sqlparser::ast::SetQuantifier::All,
                right,
            } if names_relation(right, &name) => Some((left, right)),
            _ => None,
        };
        let Some((anchor, member)) = recursive else {
            let result = self.run_query(&cte.query, outer)?;
            let columns = named(&result)?;
            return Ok(CteBinding {
                columns,
                name,
                rows: Arc::new(result.rows),
                shadows_table: false,
            });
        };
        let first = self.run_set_expr(anchor, outer)?;
        let columns = named(&first)?;
        let mut all = first.rows.clone();
        let mut working = first.rows;
        let limit = match self.hints.max_recursion {
            None => MAX_RECURSION,
            Some(0) => UNLIMITED_RECURSION_BOUND,
            Some(n) => n as usize,
        };
        for _ in 0..=limit {
            let binding = CteBinding {
                name: name.clone(),
                columns: columns.clone(),
                rows: Arc::new(working),
                shadows_table: false,
            };
            self.ctes.borrow_mut().push(binding);
            let round = self.run_set_expr(member, outer);
            self.ctes.borrow_mut().pop();
            let round = round?;
            if round.rows.is_empty() {
                return Ok(CteBinding { name, columns, rows: Arc::new(all), shadows_table: false });
            }
            all.extend(round.rows.iter().cloned());
            working = round.rows;
        }
        Err(SqlError::new(
            530,
            16,
            1,
            format!(
                "The statement terminated. The maximum recursion {limit} has been exhausted before statement completion."
            ),
        ))
    }

    fn run_query_body(&self, query: &Query, outer: Option<&Env<'_>>) -> Result<QueryResult> {
        let order_exprs = match &query.order_by {
            Some(order_by) => match &order_by.kind {
                OrderByKind::Expressions(exprs) => exprs.as_slice(),
                OrderByKind::All(_) => return Err(not_supported("ORDER BY ALL")),
            },
            None => &[],
        };
        let window = self.offset_fetch(query, outer)?;
        let mut result = self.run_ordered_body(query, outer, order_exprs)?;
        if let Some((offset, fetch)) = window {
            let skipped = usize::try_from(offset).unwrap_or(usize::MAX).min(result.rows.len());
            result.rows.drain(..skipped);
            result.rows.truncate(usize::try_from(fetch).unwrap_or(usize::MAX));
        }
        Ok(result)
    }

    /// `ORDER BY ... OFFSET n ROWS [FETCH {FIRST | NEXT} m ROWS ONLY]`: the rows to skip and
    /// the most to return, None without OFFSET. SQL Server's rules: OFFSET needs an ORDER BY,
    /// FETCH needs OFFSET, neither goes with TOP in the same query, the offset may be 0 but
    /// not negative, and a FETCH count must be at least 1.
    fn offset_fetch(&self, query: &Query, outer: Option<&Env<'_>>) -> Result<Option<(u64, u64)>> {
        use sqlparser::ast::LimitClause;
        let offset = match &query.limit_clause {
            None => None,
            Some(LimitClause::LimitOffset { limit: None, offset: Some(offset), limit_by })
                if limit_by.is_empty() =>
            {
                Some(&offset.value)
            }
            Some(LimitClause::LimitOffset { limit: Some(_), .. })
            | Some(LimitClause::OffsetCommaLimit { .. }) => {
                return Err(SqlError::new(102, 15, 1, "Incorrect syntax near 'LIMIT'."));
            }
            Some(_) => return Err(SqlError::new(102, 15, 1, "Incorrect syntax near 'OFFSET'.")),
        };
        let Some(offset) = offset else {
            return match &query.fetch {
                None => Ok(None),
                // FETCH without OFFSET (the front end ends the SELECT before a FETCH that does
                // not follow OFFSET, so this is a query parsed on its own).
                Some(_) => Err(SqlError::new(
                    153,
                    15,
                    2,
                    "Invalid usage of the option NEXT in the FETCH statement.",
                )),
            };
        };
        if query.order_by.is_none() {
            return Err(SqlError::new(102, 15, 1, "Incorrect syntax near 'OFFSET'."));
        }
        if let SetExpr::Select(select) = query.body.as_ref()
            && select.top.is_some()
        {
            return Err(SqlError::new(
                10741,
                15,
                2,
                "A TOP can not be used in the same query or sub-query as a OFFSET.",
            ));
        }
        let empty = Env::empty();
        let env = outer.unwrap_or(&empty);
        let count = |expr: &Expr| -> Result<Option<i64>> {
            let value = match crate::front::fetch_quantity(expr) {
                Some(parsed) => self.eval(&parsed?, env)?,
                None => self.eval(expr, env)?,
            };
            Ok(value::as_i64(&convert(&value, SqlType::BigInt)?))
        };
        let skip = match count(offset)? {
            Some(n) if n >= 0 => n as u64,
            _ => {
                return Err(SqlError::new(
                    10742,
                    15,
                    1,
                    "The offset specified in a OFFSET clause may not be negative.",
                ));
            }
        };
        let Some(fetch) = &query.fetch else { return Ok(Some((skip, u64::MAX))) };
        if fetch.with_ties || fetch.percent {
            let near = if fetch.percent { "PERCENT" } else { "WITH" };
            return Err(SqlError::new(102, 15, 1, format!("Incorrect syntax near '{near}'.")));
        }
        let most = match fetch.quantity.as_ref().map(count).transpose()?.flatten() {
            Some(n) if n >= 1 => n as u64,
            _ => {
                return Err(SqlError::new(
                    10744,
                    15,
                    1,
                    "The number of rows provided for a FETCH clause must be greater then zero.",
                ));
            }
        };
        Ok(Some((skip, most)))
    }

    /// The query's rows, ordered by its ORDER BY.
    fn run_ordered_body(
        &self,
        query: &Query,
        outer: Option<&Env<'_>>,
        order_exprs: &[sqlparser::ast::OrderByExpr],
    ) -> Result<QueryResult> {
        if let SetExpr::Select(select) = query.body.as_ref() {
            return self.run_select(select, outer, order_exprs);
        }
        let mut result = self.run_set_expr(&query.body, outer)?;
        if let Some(order_by) = &query.order_by
            && let OrderByKind::Expressions(exprs) = &order_by.kind
        {
            let env_cols: Vec<ColRef> = result
                .columns
                .iter()
                .map(|c| ColRef { qualifier: String::new(), name: c.clone(), sql_type: None })
                .collect();
            let mut keyed = Vec::with_capacity(result.rows.len());
            for row in std::mem::take(&mut result.rows) {
                let env = Env { cols: &env_cols, row: &row, group: None, outer };
                let mut keys = Vec::new();
                for e in exprs {
                    keys.push(self.order_key(&e.expr, &env, &row)?);
                }
                keyed.push((keys, row));
            }
            let descending: Vec<bool> = exprs
                .iter()
                .map(|e| matches!(e.options.sort, Some(sqlparser::ast::OrderBySort::Desc)))
                .collect();
            keyed.sort_by(|a, b| compare_keys(&a.0, &b.0, &descending));
            result.rows = keyed.into_iter().map(|(_, r)| r).collect();
        }
        Ok(result)
    }

    fn order_key(&self, expr: &Expr, env: &Env<'_>, row: &[Value]) -> Result<Value> {
        if let Expr::Value(v) = expr
            && let AstValue::Number(n, _) = &v.value
        {
            let position: usize = n.parse().unwrap_or(0);
            return row.get(position.wrapping_sub(1)).cloned().ok_or_else(|| {
                    SqlError::new(108, 16, 1, format!("The ORDER BY position number {n} is out of range of the number of items in the select list."))
                });
        }
        self.eval(expr, env)
    }

    fn run_set_expr(&self, body: &SetExpr, outer: Option<&Env<'_>>) -> Result<QueryResult> {
        match body {
            SetExpr::Select(select) => self.run_select(select, outer, &[]),
            SetExpr::Query(query) => self.run_query(query, outer),
            SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let mut l = self.run_set_expr(left, outer)?;
                let r = self.run_set_expr(right, outer)?;
                if l.columns.len() != r.columns.len() {
                    return Err(SqlError::new(
                        205,
                        16,
                        1,
                        "All queries combined using a UNION, INTERSECT or EXCEPT operator must have an equal number of expressions in their target lists.",
                    ));
                }
                let all = matches!(set_quantifier, sqlparser::ast::SetQuantifier::All);
                match op {
                    sqlparser::ast::SetOperator::Union => {
                        l.rows.extend(r.rows);
                        if !all {
                            dedup_rows(&mut l.rows);
                        }
                    }
                    sqlparser::ast::SetOperator::Except | sqlparser::ast::SetOperator::Minus => {
                        filter_by_presence(&mut l.rows, &r.rows, false);
                        dedup_rows(&mut l.rows);
                    }
                    sqlparser::ast::SetOperator::Intersect => {
                        filter_by_presence(&mut l.rows, &r.rows, true);
                        dedup_rows(&mut l.rows);
                    }
                }
                // A column keeps a declared type only where both sides declare the same.
                for (left, right) in l.types.iter_mut().zip(&r.types) {
                    if *left != *right {
                        *left = None;
                    }
                }
                Ok(l)
            }
            SetExpr::Values(values) => {
                let mut rows = Vec::new();
                for row in &values.rows {
                    let mut out = Vec::new();
                    for e in &row.content {
                        out.push(self.eval(e, outer.unwrap_or(&Env::empty()))?);
                    }
                    rows.push(out);
                }
                let width = rows.first().map_or(0, Vec::len);
                if rows.iter().any(|row| row.len() != width) {
                    let text = "The number of columns for each row in a table value constructor \
                                must be the same.";
                    // The front end refuses it when the batch compiles (crate::front).
                    return Err(SqlError::new(10710, 15, 1, text));
                }
                Ok(QueryResult {
                    columns: vec![String::new(); width],
                    types: vec![None; width],
                    rows,
                    assignments: Vec::new(),
                })
            }
            other => Err(not_supported(&other.to_string())),
        }
    }

    /// `x.nodes(path) AS t(c)` (CROSS APPLY's usual right side): a row per element of the
    /// xml column or variable `x` the path selects, in the one column `c` ([`crate::xml`]).
    /// None if the name is not a method call on a column or variable.
    fn xml_nodes(
        &self,
        name: &ObjectName,
        alias: Option<&sqlparser::ast::TableAlias>,
        args: Option<&sqlparser::ast::TableFunctionArgs>,
        outer: Option<&Env<'_>>,
    ) -> Option<Result<Relation>> {
        let args = args?;
        let parts = name_parts(name);
        let (method, owner) = parts.split_last()?;
        if owner.is_empty() || !method.eq_ignore_ascii_case("nodes") {
            return None;
        }
        let empty = Env::empty();
        let env = outer.unwrap_or(&empty);
        let rows = (|| {
            let xml = self.resolve(owner, env)?;
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(path))] = args.args.as_slice() else {
                return Err(SqlError::new(
                    174,
                    15,
                    1,
                    "The nodes function requires 1 argument(s).",
                ));
            };
            let path = crate::value::display(&self.eval(path, env)?);
            crate::xml::nodes(&xml, &path)
        })();
        let qualifier = alias.map_or_else(|| "nodes".to_string(), |a| a.name.value.clone());
        let column = alias
            .and_then(|a| a.columns.first())
            .map_or_else(|| "nodes".to_string(), |c| c.name.value.clone());
        let cols = vec![ColRef { qualifier, name: column, sql_type: None }];
        Some(rows.map(|rows| (cols, rows.into_iter().map(|v| vec![v]).collect())))
    }

    /// Rows of one FROM item (a table, a derived table), with their columns.
    pub(crate) fn table_factor(
        &self,
        factor: &TableFactor,
        outer: Option<&Env<'_>>,
        filter: Option<&Expr>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        match factor {
            TableFactor::Table { name, alias, args, with_hints, .. } => {
                if let Some(result) = self.xml_nodes(name, alias.as_ref(), args.as_ref(), outer) {
                    return result;
                }
                let table_name = crate::front::last_part(name);
                let qualifier = alias.as_ref().map_or(table_name.clone(), |a| a.name.value.clone());
                let cte = {
                    let ctes = self.ctes.borrow();
                    ctes.iter()
                        .rev()
                        .find(|c| {
                            (name.0.len() == 1 || c.shadows_table)
                                && c.name.eq_ignore_ascii_case(&table_name)
                        })
                        .cloned()
                };
                if let Some(cte) = cte {
                    let cols = cte
                        .columns
                        .iter()
                        .map(|name| ColRef {
                            qualifier: qualifier.clone(),
                            name: name.clone(),
                            sql_type: None,
                        })
                        .collect();
                    return Ok((cols, cte.rows.as_ref().clone()));
                }
                let mut arg_values = Vec::new();
                for arg in args.iter().flat_map(|a| &a.args) {
                    match arg {
                        // DEFAULT, as in sys.fn_trace_gettable(path, DEFAULT), is NULL here.
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(ident)))
                            if ident.quote_style.is_none()
                                && ident.value.eq_ignore_ascii_case("DEFAULT") =>
                        {
                            arg_values.push(Value::Null)
                        }
                        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                            arg_values.push(self.eval(e, outer.unwrap_or(&Env::empty()))?)
                        }
                        _ => return Err(not_supported(&arg.to_string())),
                    }
                }
                if crate::session::is_sys_schema(name)
                    && let Some(view) =
                        self.in_named_database(name, || self.system_view(&table_name, &arg_values))?
                {
                    let (names, rows) = view?;
                    let cols = names
                        .into_iter()
                        .map(|name| ColRef { qualifier: qualifier.clone(), name, sql_type: None })
                        .collect();
                    return Ok((cols, rows));
                }
                // 208 names the object as written (`sys.no_such_view`, `dbo.t`).
                let table = self.table(&table_name).map_err(|e| {
                    if e.number == 208 {
                        let written: Vec<String> = name
                            .0
                            .iter()
                            .map(|part| match part {
                                sqlparser::ast::ObjectNamePart::Identifier(i) => i.value.clone(),
                                other => other.to_string(),
                            })
                            .collect();
                        engine::catalog::invalid_object(&written.join("."))
                    } else {
                        e
                    }
                })?;
                let cols = table_columns(&table, &qualifier);
                let locks = self.read_locks(with_hints)?;
                let rows = engine::xact::with_read_locks(locks, || {
                    self.read_table(&table, &cols, filter, outer)
                })?;
                Ok((cols, rows))
            }
            TableFactor::Derived { subquery, alias, .. } => {
                let result = self.run_query(subquery, outer)?;
                let qualifier = alias.as_ref().map(|a| a.name.value.clone()).unwrap_or_default();
                let names = match alias {
                    Some(alias) => aliased_columns(alias, &result.columns)?,
                    None => result.columns.clone(),
                };
                let cols = names
                    .into_iter()
                    .zip(result.types.iter().copied().chain(std::iter::repeat(None)))
                    .map(|(name, sql_type)| ColRef { qualifier: qualifier.clone(), name, sql_type })
                    .collect();
                Ok((cols, result.rows))
            }
            other => Err(not_supported(&other.to_string())),
        }
    }

    /// A table's rows, through an index seek when `filter` bounds the leading key column of one
    /// of its indexes ([`Session::seek_plan`]); else a scan of its heap or clustered index. The
    /// caller applies the whole filter to the rows afterwards.
    fn read_table(
        &self,
        table: &Arc<Table>,
        cols: &[ColRef],
        filter: Option<&Expr>,
        outer: Option<&Env<'_>>,
    ) -> Result<Vec<Vec<Value>>> {
        let db = self.db();
        table.lock(db, engine::lock::LockMode::IS)?;
        let rows = self.candidate_rows(table, cols, filter, outer)?;
        Ok(rows.into_iter().map(|(_, r)| shown_row(table, r)).collect())
    }

    /// The stored rows `filter` may match, with their locators: an index seek's when the
    /// filter allows one ([`Session::seek_plan`]), else every row. A superset: the caller
    /// applies the whole filter. Only the rows read are locked, so an UPDATE or DELETE of one
    /// key does not wait for another transaction's lock on a different row.
    pub(crate) fn candidate_rows(
        &self,
        table: &Table,
        cols: &[ColRef],
        filter: Option<&Expr>,
        outer: Option<&Env<'_>>,
    ) -> Result<Vec<(engine::catalog::RowLocator, Vec<Value>)>> {
        let db = self.db();
        engine::iostats::note_scan(db.database_id, table.au_ids()[0]);
        let Some(seek) = filter.and_then(|f| self.seek_plan(table, cols, f, outer)) else {
            self.note_index_use(table, 0, IndexUse::Scan);
            return table.rows(db);
        };
        self.seek_rows(table, &seek)
    }

    /// The rows of an index seek, noted as a seek of its index and, through a nonclustered
    /// index, a lookup of the base rows when it found any (sys.dm_db_index_usage_stats).
    fn seek_rows(
        &self,
        table: &Table,
        seek: &SeekPlan,
    ) -> Result<Vec<(engine::catalog::RowLocator, Vec<Value>)>> {
        let db = self.db();
        let from = seek.from.clone().map(|v| [v]);
        let to = seek.to.clone().map(|v| [v]);
        let (from, to) = (from.as_ref().map(|k| &k[..]), to.as_ref().map(|k| &k[..]));
        self.note_index_use(table, seek.position, IndexUse::Seek);
        if seek.position == 0 {
            return table.base_range(db, from, to);
        }
        let rows = table.index_range(db, seek.position, from, to)?;
        if !rows.is_empty() {
            self.note_index_use(table, 0, IndexUse::Lookup);
        }
        Ok(rows)
    }

    /// The index seek that `filter`'s conjuncts allow: `column = constant` on the leading key
    /// column of an index (first choice), else bounds from `>`, `>=`, `<`, `<=` and BETWEEN on
    /// it. Bounds are inclusive, so the rows read are a superset of the matches; the constant
    /// is converted to the column's type, as the comparison would.
    fn seek_plan(
        &self,
        table: &Table,
        cols: &[ColRef],
        filter: &Expr,
        outer: Option<&Env<'_>>,
    ) -> Option<SeekPlan> {
        let mut best: Option<SeekPlan> = None;
        for conjunct in conjuncts(filter) {
            for (column, op, value) in self.bounds_of(table, cols, conjunct, outer) {
                let Some(position) =
                    table.indexes.iter().position(|i| i.key_columns.first() == Some(&column))
                else {
                    continue;
                };
                let plan = best.get_or_insert(SeekPlan { position, from: None, to: None });
                if plan.position != position {
                    if op != BinaryOperator::Eq || plan.is_point() {
                        continue;
                    }
                    *plan = SeekPlan { position, from: None, to: None };
                }
                match op {
                    BinaryOperator::Eq => {
                        plan.from = Some(value.clone());
                        plan.to = Some(value);
                    }
                    BinaryOperator::Gt | BinaryOperator::GtEq if !plan.is_point() => {
                        plan.from = Some(value)
                    }
                    BinaryOperator::Lt | BinaryOperator::LtEq if !plan.is_point() => {
                        plan.to = Some(value)
                    }
                    _ => {}
                }
            }
        }
        best
    }

    /// (column, operator with the column on the left, constant) of a conjunct that compares a
    /// column with a constant; BETWEEN gives two.
    fn bounds_of(
        &self,
        table: &Table,
        cols: &[ColRef],
        conjunct: &Expr,
        outer: Option<&Env<'_>>,
    ) -> Vec<(usize, BinaryOperator, Value)> {
        let column_of = |e: &Expr| -> Option<usize> {
            let parts = match e {
                Expr::Identifier(i) => vec![i.value.clone()],
                Expr::CompoundIdentifier(p) => p.iter().map(|i| i.value.clone()).collect(),
                _ => return None,
            };
            find_column(cols, &parts).ok().flatten()
        };
        // A constant, or (in a join) a column of the rows on the left, which `outer` holds.
        let constant = |column: usize, e: &Expr| -> Option<Value> {
            if references_columns(e) && (column_of(e).is_some() || !is_column_name(e)) {
                return None;
            }
            let value = self.eval(e, outer.unwrap_or(&Env::empty())).ok()?;
            if matches!(value, Value::Null) {
                return None;
            }
            let sql_type = table.columns[column].column.sql_type;
            Some(functions::to_storage(convert(&value, sql_type).ok()?, sql_type))
        };
        match conjunct {
            Expr::BinaryOp { left, op, right } => {
                let flipped = match op {
                    BinaryOperator::Eq => BinaryOperator::Eq,
                    BinaryOperator::Gt => BinaryOperator::Lt,
                    BinaryOperator::GtEq => BinaryOperator::LtEq,
                    BinaryOperator::Lt => BinaryOperator::Gt,
                    BinaryOperator::LtEq => BinaryOperator::GtEq,
                    _ => return Vec::new(),
                };
                if let Some(column) = column_of(left)
                    && let Some(value) = constant(column, right)
                {
                    return vec![(column, op.clone(), value)];
                }
                if let Some(column) = column_of(right)
                    && let Some(value) = constant(column, left)
                {
                    return vec![(column, flipped, value)];
                }
                Vec::new()
            }
            Expr::Between { expr, negated: false, low, high } => {
                let Some(column) = column_of(expr) else { return Vec::new() };
                let (Some(low), Some(high)) = (constant(column, low), constant(column, high))
                else {
                    return Vec::new();
                };
                vec![(column, BinaryOperator::GtEq, low), (column, BinaryOperator::LtEq, high)]
            }
            _ => Vec::new(),
        }
    }

    /// The rows of the FROM clause (all joins applied) and their columns.
    fn rows_of_from(
        &self,
        select: &Select,
        outer: Option<&Env<'_>>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        self.joined_rows(&select.from, select.selection.as_ref(), outer)
    }

    /// The rows of a FROM list (all joins applied, before WHERE) and their columns; `filter`
    /// (the WHERE clause) may choose an index seek when there is a single table.
    pub(crate) fn joined_rows(
        &self,
        from: &[sqlparser::ast::TableWithJoins],
        filter: Option<&Expr>,
        outer: Option<&Env<'_>>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        if from.is_empty() {
            return Ok((Vec::new(), vec![Vec::new()]));
        }
        let single = from.len() == 1 && from[0].joins.is_empty();
        let mut cols: Vec<ColRef> = Vec::new();
        let mut rows: Vec<Vec<Value>> = vec![Vec::new()];
        for item in from {
            let filter = if single { filter } else { None };
            let (c, r) = self.table_factor(&item.relation, outer, filter)?;
            (cols, rows) = self.cross(cols, rows, c, r)?;
            for join in &item.joins {
                (cols, rows) = self.join(cols, rows, join, outer)?;
            }
        }
        Ok((cols, rows))
    }

    /// CROSS APPLY and OUTER APPLY: the right side (a derived table or a table-valued
    /// function) is evaluated once per left row, which it can reference.
    fn apply(
        &self,
        cols: Vec<ColRef>,
        rows: Vec<Vec<Value>>,
        relation: &TableFactor,
        keep_left: bool,
        outer: Option<&Env<'_>>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        let mut right_cols: Option<Vec<ColRef>> = None;
        let mut out = Vec::new();
        let mut unmatched = Vec::new();
        for left in &rows {
            self.check_cancel()?;
            let env = Env { cols: &cols, row: left, group: None, outer };
            let (c, right_rows) = self.table_factor(relation, Some(&env), None)?;
            right_cols.get_or_insert(c);
            if right_rows.is_empty() && keep_left {
                unmatched.push(out.len());
                out.push(left.clone());
            }
            for right in right_rows {
                out.push(left.iter().cloned().chain(right).collect());
            }
        }
        let right_cols = match right_cols {
            Some(c) => c,
            None => self.apply_columns(&cols, relation, outer),
        };
        for index in unmatched {
            out[index].extend(std::iter::repeat_n(Value::Null, right_cols.len()));
        }
        Ok((cols.into_iter().chain(right_cols).collect(), out))
    }

    /// The right side's columns when no left row came to evaluate it for: evaluated for a
    /// left row of NULLs (its references to the left side are NULL), or, for a function that
    /// refuses NULL arguments (sys.dm_db_page_info), its fixed column list.
    fn apply_columns(
        &self,
        cols: &[ColRef],
        relation: &TableFactor,
        outer: Option<&Env<'_>>,
    ) -> Vec<ColRef> {
        let nulls = vec![Value::Null; cols.len()];
        let env = Env { cols, row: &nulls, group: None, outer };
        if let Ok((right_cols, _)) = self.table_factor(relation, Some(&env), None) {
            return right_cols;
        }
        let TableFactor::Table { name, alias, .. } = relation else { return Vec::new() };
        let function = crate::front::last_part(name);
        let qualifier = alias.as_ref().map_or(function.clone(), |a| a.name.value.clone());
        let fixed = crate::pageinfo::fixed_columns(&function)
            .filter(|_| crate::session::is_sys_schema(name));
        fixed
            .unwrap_or_default()
            .iter()
            .map(|name| ColRef {
                qualifier: qualifier.clone(),
                name: name.to_string(),
                sql_type: None,
            })
            .collect()
    }

    /// An index nested-loop join: for each left row, the right table's rows come from a seek
    /// that the ON clause allows with the left row's values (`ON r.key = l.col`, or a range);
    /// a left row whose values allow no seek reads the whole right table. None when the right
    /// side is not a table of the database.
    fn seek_join(
        &self,
        cols: &[ColRef],
        rows: &[Vec<Value>],
        relation: &TableFactor,
        on: &Expr,
        keep_left: bool,
        outer: Option<&Env<'_>>,
    ) -> Result<Option<Relation>> {
        let TableFactor::Table { name, alias, args: None, .. } = relation else { return Ok(None) };
        let table_name = crate::front::last_part(name);
        let is_cte = self.ctes.borrow().iter().any(|c| c.name.eq_ignore_ascii_case(&table_name));
        if crate::session::is_sys_schema(name) {
            return Ok(None);
        }
        let stored = self.catalog_name(&table_name)?;
        let Some(table) = self.db().catalog()?.table(&stored).filter(|_| !is_cte) else {
            return Ok(None);
        };
        // The choice a cost-based optimiser would make, roughly: a table of one extent or less
        // is cheaper to read once than to seek into once per left row.
        let pages = self
            .db()
            .allocation_unit(table.indexes[0].au_id)
            .map_or(0, |unit| unit.extents.len() * 8 + unit.single_pages.len());
        if pages <= SEEK_JOIN_MIN_PAGES {
            return Ok(None);
        }
        let qualifier = alias.as_ref().map_or(table_name.clone(), |a| a.name.value.clone());
        let right_cols = table_columns(&table, &qualifier);
        let all_cols: Vec<ColRef> = cols.iter().chain(&right_cols).cloned().collect();
        let db = self.db();
        table.lock(db, engine::lock::LockMode::IS)?;
        let mut scanned: Option<Vec<Vec<Value>>> = None;
        let mut out = Vec::new();
        for left in rows {
            self.check_cancel()?;
            let left_env = Env { cols, row: left, group: None, outer };
            let candidates = match self.seek_plan(&table, &right_cols, on, Some(&left_env)) {
                Some(seek) => {
                    let found = self.seek_rows(&table, &seek)?;
                    found.into_iter().map(|(_, r)| shown_row(&table, r)).collect()
                }
                None => match &scanned {
                    Some(all) => all.clone(),
                    None => {
                        self.note_index_use(&table, 0, IndexUse::Scan);
                        let all: Vec<Vec<Value>> = table
                            .rows(db)?
                            .into_iter()
                            .map(|(_, r)| shown_row(&table, r))
                            .collect();
                        scanned = Some(all.clone());
                        all
                    }
                },
            };
            let mut matched = false;
            for right in candidates {
                let combined: Vec<Value> = left.iter().cloned().chain(right).collect();
                let env = Env { cols: &all_cols, row: &combined, group: None, outer };
                if is_true(&self.eval(on, &env)?) {
                    matched = true;
                    out.push(combined);
                }
            }
            if !matched && keep_left {
                let nulls = std::iter::repeat_n(Value::Null, right_cols.len());
                out.push(left.iter().cloned().chain(nulls).collect());
            }
        }
        Ok(Some((all_cols, out)))
    }

    fn join(
        &self,
        cols: Vec<ColRef>,
        rows: Vec<Vec<Value>>,
        join: &Join,
        outer: Option<&Env<'_>>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        if let JoinOperator::CrossApply | JoinOperator::OuterApply = join.join_operator {
            let keep_left = matches!(join.join_operator, JoinOperator::OuterApply);
            return self.apply(cols, rows, &join.relation, keep_left, outer);
        }
        let seekable = match &join.join_operator {
            JoinOperator::Join(JoinConstraint::On(on))
            | JoinOperator::Inner(JoinConstraint::On(on)) => Some((on, false)),
            JoinOperator::Left(JoinConstraint::On(on))
            | JoinOperator::LeftOuter(JoinConstraint::On(on)) => Some((on, true)),
            _ => None,
        };
        if let Some((on, keep_left)) = seekable
            && let Some(joined) =
                self.seek_join(&cols, &rows, &join.relation, on, keep_left, outer)?
        {
            return Ok(joined);
        }
        let (right_cols, right_rows) = self.table_factor(&join.relation, outer, None)?;
        let (constraint, keep_left, keep_right) = match &join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, false, false),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, true, false),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, false, true),
            JoinOperator::FullOuter(c) => (c, true, true),
            JoinOperator::CrossJoin(_) => return self.cross(cols, rows, right_cols, right_rows),
            other => return Err(not_supported(&format!("{other:?}"))),
        };
        let on = match constraint {
            JoinConstraint::On(e) => Some(e),
            JoinConstraint::None => None,
            _ => return Err(not_supported("USING")),
        };
        let all_cols: Vec<ColRef> = cols.iter().chain(&right_cols).cloned().collect();
        let (left_width, right_width) = (cols.len(), right_cols.len());
        let mut out = Vec::new();
        let mut right_matched = vec![false; right_rows.len()];
        for left in &rows {
            self.check_cancel()?;
            let mut matched = false;
            for (j, right) in right_rows.iter().enumerate() {
                let combined: Vec<Value> = left.iter().chain(right).cloned().collect();
                let env = Env { cols: &all_cols, row: &combined, group: None, outer };
                let hit = match on {
                    Some(e) => is_true(&self.eval(e, &env)?),
                    None => true,
                };
                if hit {
                    matched = true;
                    right_matched[j] = true;
                    out.push(combined);
                }
            }
            if !matched && keep_left {
                out.push(
                    left.iter()
                        .cloned()
                        .chain(std::iter::repeat_n(Value::Null, right_width))
                        .collect(),
                );
            }
        }
        if keep_right {
            for (j, right) in right_rows.iter().enumerate() {
                if !right_matched[j] {
                    out.push(
                        std::iter::repeat_n(Value::Null, left_width)
                            .chain(right.iter().cloned())
                            .collect(),
                    );
                }
            }
        }
        Ok((all_cols, out))
    }

    /// The type a select-list expression declares, if it is one: a column with a declared
    /// type, a variable, CAST/CONVERT's target (in parentheses or not). None for the rest,
    /// whose type the TDS layer takes from the values.
    fn declared_type(&self, expr: &Expr, cols: &[ColRef]) -> Option<SqlType> {
        match expr {
            Expr::Identifier(i) if i.value.starts_with('@') => {
                self.variables.get(&i.value.to_lowercase()).map(|(t, _)| *t)
            }
            Expr::Identifier(i) => column_type(cols, std::slice::from_ref(&i.value)),
            Expr::CompoundIdentifier(p) => {
                column_type(cols, &p.iter().map(|i| i.value.clone()).collect::<Vec<_>>())
            }
            Expr::Nested(inner) => self.declared_type(inner, cols),
            Expr::Cast { data_type, .. } => sql_type_of(data_type).ok(),
            Expr::Function(f) => self.function_type(f, cols),
            _ => None,
        }
    }

    /// The type of a string literal ('a' is varchar, N'a' nvarchar, of their length) or the
    /// type `declared_type` finds.
    fn literal_or_declared_type(&self, expr: &Expr, cols: &[ColRef]) -> Option<SqlType> {
        let length = |s: &str| u16::try_from(s.chars().count()).unwrap_or(u16::MAX);
        match expr {
            Expr::Value(v) => match &v.value {
                AstValue::SingleQuotedString(s) => Some(SqlType::VarChar(length(s))),
                AstValue::NationalStringLiteral(s) => Some(SqlType::NVarChar(length(s))),
                _ => None,
            },
            _ => self.declared_type(expr, cols),
        }
    }

    /// STRING_AGG(expression, separator) [WITHIN GROUP (ORDER BY ...)]: the group's non-NULL
    /// values as text, joined by the separator, in the WITHIN GROUP order (else the group's);
    /// NULL when every value is NULL.
    fn string_agg(
        &self,
        f: &sqlparser::ast::Function,
        arg: &Expr,
        args: &[FunctionArgExpr],
        group: &[Vec<Value>],
        env: &Env<'_>,
    ) -> Result<Value> {
        let [_, FunctionArgExpr::Expr(separator)] = args else {
            return Err(SqlError::new(
                174,
                15,
                1,
                "The STRING_AGG function requires 2 argument(s).",
            ));
        };
        let separator = value::display(&self.eval(separator, env)?);
        let descending: Vec<bool> = f
            .within_group
            .iter()
            .map(|e| matches!(e.options.sort, Some(sqlparser::ast::OrderBySort::Desc)))
            .collect();
        let mut keyed = Vec::with_capacity(group.len());
        for row in group {
            let row_env = Env { cols: env.cols, row, group: None, outer: env.outer };
            let v = self.eval(arg, &row_env)?;
            if matches!(v, Value::Null) {
                continue;
            }
            let mut keys = Vec::with_capacity(f.within_group.len());
            for e in &f.within_group {
                keys.push(self.eval(&e.expr, &row_env)?);
            }
            keyed.push((keys, value::display(&v)));
        }
        if keyed.is_empty() {
            return Ok(Value::Null);
        }
        keyed.sort_by(|a, b| compare_keys(&a.0, &b.0, &descending));
        let parts: Vec<String> = keyed.into_iter().map(|(_, text)| text).collect();
        Ok(Value::Text(parts.join(&separator)))
    }

    /// The result type of the functions whose type SQL Server fixes without looking at
    /// values: COUNT is int, COUNT_BIG bigint, MIN and MAX their argument's type.
    fn function_type(&self, f: &sqlparser::ast::Function, cols: &[ColRef]) -> Option<SqlType> {
        match function_name(&f.name).to_ascii_uppercase().as_str() {
            "COUNT" => Some(SqlType::Int),
            "COUNT_BIG" => Some(SqlType::BigInt),
            "MIN" | "MAX" => match function_args(f).as_slice() {
                [FunctionArgExpr::Expr(arg)] => self.declared_type(arg, cols),
                _ => None,
            },
            _ => None,
        }
    }

    /// The cross product of two row sets (checking for a cancel once per left row).
    fn cross(
        &self,
        cols: Vec<ColRef>,
        rows: Vec<Vec<Value>>,
        right_cols: Vec<ColRef>,
        right_rows: Vec<Vec<Value>>,
    ) -> Result<(Vec<ColRef>, Vec<Vec<Value>>)> {
        let all_cols: Vec<ColRef> = cols.into_iter().chain(right_cols).collect();
        let mut out = Vec::with_capacity(rows.len() * right_rows.len());
        for left in &rows {
            self.check_cancel()?;
            for right in &right_rows {
                out.push(left.iter().chain(right).cloned().collect());
            }
        }
        Ok((all_cols, out))
    }

    fn run_select(
        &self,
        select: &Select,
        outer: Option<&Env<'_>>,
        order_by: &[sqlparser::ast::OrderByExpr],
    ) -> Result<QueryResult> {
        if let Some((name, count)) = self.count_star(select)? {
            let assignments = if name.starts_with('@') { vec![name.clone()] } else { Vec::new() };
            return Ok(QueryResult {
                columns: vec![name],
                types: vec![Some(SqlType::Int)],
                rows: vec![vec![count]],
                assignments,
            });
        }
        if order_by.is_empty()
            && let Some(result) = self.top_over_cross_joins(select, outer)?
        {
            return Ok(result);
        }
        let (cols, mut rows) = self.rows_of_from(select, outer)?;
        if rows.is_empty() {
            self.bind_select(select, order_by, &cols, outer)?;
        }
        if let Some(filter) = &select.selection {
            let mut kept = Vec::with_capacity(rows.len());
            for row in rows {
                self.check_cancel()?;
                let env = Env { cols: &cols, row: &row, group: None, outer };
                if is_true(&self.eval(filter, &env)?) {
                    kept.push(row);
                }
            }
            rows = kept;
        }
        let group_exprs: Vec<Expr> = match &select.group_by {
            GroupByExpr::Expressions(exprs, _) => exprs.clone(),
            GroupByExpr::All(_) => return Err(not_supported("GROUP BY ALL")),
        };
        let mut items = self.expand_items(&select.projection, &cols)?;
        let grouped = !group_exprs.is_empty()
            || items.iter().any(|(e, _)| has_aggregate(e))
            || select.having.as_ref().is_some_and(has_aggregate);
        let windows = {
            let mut exprs: Vec<&mut Expr> = items.iter_mut().map(|(e, _)| e).collect();
            crate::window::extract(&mut exprs)
        };
        let names: Vec<String> = items.iter().map(|(_, n)| n.clone()).collect();
        let types: Vec<Option<SqlType>> =
            items.iter().map(|(e, _)| self.declared_type(e, &cols)).collect();
        let descending: Vec<bool> = order_by
            .iter()
            .map(|e| matches!(e.options.sort, Some(sqlparser::ast::OrderBySort::Desc)))
            .collect();
        let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        let groups = if grouped {
            self.groups(&cols, rows, &group_exprs, outer)?
        } else {
            rows.into_iter().map(|r| vec![r]).collect()
        };
        let mut kept = Vec::with_capacity(groups.len());
        for (index, group) in groups.iter().enumerate() {
            let first = group.first().cloned().unwrap_or_else(|| vec![Value::Null; cols.len()]);
            let group_rows = if grouped { Some(group.as_slice()) } else { None };
            let env = Env { cols: &cols, row: &first, group: group_rows, outer };
            let passes = match &select.having {
                Some(having) => is_true(&self.eval(having, &env)?),
                None => true,
            };
            if passes {
                kept.push(index);
            }
        }
        let first_of = |index: usize| {
            groups[index].first().cloned().unwrap_or_else(|| vec![Value::Null; cols.len()])
        };
        let window_values = if windows.is_empty() {
            vec![Vec::new(); kept.len()]
        } else {
            let env_of = |k: usize, f: &mut dyn FnMut(&Env<'_>) -> Result<()>| -> Result<()> {
                let group = &groups[kept[k]];
                let group_rows = if grouped { Some(group.as_slice()) } else { None };
                let first = first_of(kept[k]);
                f(&Env { cols: &cols, row: &first, group: group_rows, outer })
            };
            self.window_values(&windows, kept.len(), &env_of)?
        };
        let mut scope = cols.clone();
        scope.extend(crate::window::columns(windows.len()));
        for (&index, window_row) in kept.iter().zip(window_values) {
            let group = &groups[index];
            let mut first = first_of(index);
            first.extend(window_row);
            let group_rows = if grouped { Some(group.as_slice()) } else { None };
            let env = Env { cols: &scope, row: &first, group: group_rows, outer };
            let mut out = Vec::with_capacity(items.len());
            for (e, _) in &items {
                out.push(self.eval(e, &env)?);
            }
            let mut keys = Vec::with_capacity(order_by.len());
            if !order_by.is_empty() {
                // ORDER BY names an output column (alias or position) first, else a source column.
                for e in order_by {
                    let output = match &e.expr {
                        Expr::Identifier(i) => {
                            names.iter().position(|n| n.eq_ignore_ascii_case(&i.value))
                        }
                        _ => None,
                    };
                    match output {
                        Some(position) => keys.push(out[position].clone()),
                        None => keys.push(self.order_key(&e.expr, &env, &out)?),
                    }
                }
            }
            keyed.push((keys, out));
        }
        if !order_by.is_empty() {
            keyed.sort_by(|a, b| compare_keys(&a.0, &b.0, &descending));
        }
        if matches!(select.distinct, Some(Distinct::Distinct)) {
            retain_first_occurrences(&mut keyed, |(_, row)| row);
        }
        if let Some(top) = &select.top {
            let end = self.top_end(top, &keyed, &descending, !order_by.is_empty(), outer)?;
            keyed.truncate(end);
        }
        let out_rows: Vec<Vec<Value>> = keyed.into_iter().map(|(_, r)| r).collect();
        let assignments: Vec<String> =
            names.iter().filter(|n| n.starts_with('@')).cloned().collect();
        if !assignments.is_empty() && assignments.len() != names.len() {
            return Err(SqlError::new(
                141,
                15,
                1,
                "A SELECT statement that assigns a value to a variable must not be combined with data-retrieval operations.",
            ));
        }
        Ok(QueryResult { columns: names, types, rows: out_rows, assignments })
    }

    /// CONVERT(type, value, style): a date or time to a character type in that style
    /// ([`functions::temporal_text`]); any other conversion ignores the style (deviation: the
    /// float, money and binary styles are not applied).
    fn convert_with_style(
        &self,
        value: &Value,
        to: SqlType,
        style: &Expr,
        env: &Env<'_>,
    ) -> Result<Value> {
        let to_text = matches!(
            to,
            SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
        );
        let style = value::as_i64(&self.eval(style, env)?);
        match (to_text, style) {
            (true, Some(style)) => match functions::temporal_text(value, style) {
                Some(text) => convert(&Value::Text(text?), to),
                None => convert(value, to),
            },
            _ => convert(value, to),
        }
    }

    /// How many of the ordered rows `keyed` a TOP clause keeps: n, or n percent rounded up
    /// (1031 outside 0-100), and WITH TIES the rows after that equal the last one in the ORDER
    /// BY's keys (1062 without an ORDER BY).
    fn top_end(
        &self,
        top: &sqlparser::ast::Top,
        keyed: &[(Vec<Value>, Vec<Value>)],
        descending: &[bool],
        ordered: bool,
        outer: Option<&Env<'_>>,
    ) -> Result<usize> {
        if top.with_ties && !ordered {
            return Err(SqlError::new(
                1062,
                15,
                1,
                "The TOP N WITH TIES clause is not allowed without a corresponding ORDER BY clause.",
            ));
        }
        let mut end = match (&top.quantity, top.percent) {
            (None, _) => keyed.len(),
            (Some(quantity), true) => {
                let percent = self.top_percent(quantity, outer)?;
                (keyed.len() as f64 * percent / 100.0).ceil() as usize
            }
            (Some(quantity), false) => {
                usize::try_from(self.top_count(quantity, outer)?).unwrap_or(usize::MAX)
            }
        };
        end = end.min(keyed.len());
        if top.with_ties && end > 0 {
            let last = &keyed[end - 1].0;
            while end < keyed.len() && compare_keys(&keyed[end].0, last, descending).is_eq() {
                end += 1;
            }
        }
        Ok(end)
    }

    /// SQL Server binds a statement's names when it compiles it, so a column that does not
    /// exist is 207 (or 4104) even when no row is read; here names are bound as rows are
    /// evaluated. Where there is no row, each expression is evaluated once over a row of
    /// NULLs (one group of it when `grouped`), and only those binding errors count (bug fix:
    /// `SELECT nosuch FROM t` on an empty table returned no error).
    pub(crate) fn bind_check<'e>(
        &self,
        exprs: impl IntoIterator<Item = &'e Expr>,
        cols: &[ColRef],
        outer: Option<&Env<'_>>,
        grouped: bool,
    ) -> Result<()> {
        let nulls = vec![Value::Null; cols.len()];
        let group = [nulls.clone()];
        let group = if grouped { Some(&group[..]) } else { None };
        let env = Env { cols, row: &nulls, group, outer };
        for expr in exprs {
            match self.eval(expr, &env) {
                Err(error) if error.number == 207 || error.number == 4104 => return Err(error),
                _ => {}
            }
        }
        Ok(())
    }

    /// [`Session::bind_check`] of a SELECT's WHERE, select list, GROUP BY, HAVING and ORDER BY
    /// (an ORDER BY item that names an output column is the column's).
    fn bind_select(
        &self,
        select: &Select,
        order_by: &[sqlparser::ast::OrderByExpr],
        cols: &[ColRef],
        outer: Option<&Env<'_>>,
    ) -> Result<()> {
        let items = self.expand_items(&select.projection, cols)?;
        let group_exprs: &[Expr] = match &select.group_by {
            GroupByExpr::Expressions(exprs, _) => exprs,
            GroupByExpr::All(_) => &[],
        };
        let grouped = !group_exprs.is_empty()
            || items.iter().any(|(e, _)| has_aggregate(e))
            || select.having.as_ref().is_some_and(has_aggregate);
        let is_output_name = |e: &Expr| matches!(e, Expr::Identifier(i) if items.iter().any(|(_, n)| n.eq_ignore_ascii_case(&i.value)));
        let order = order_by.iter().map(|o| &o.expr).filter(|e| !is_output_name(e));
        let exprs = select
            .selection
            .iter()
            .chain(items.iter().map(|(e, _)| e))
            .chain(group_exprs)
            .chain(select.having.iter())
            .chain(order);
        self.bind_check(exprs, cols, outer, grouped)
    }

    /// TOP (p) PERCENT's p, a float from 0 to 100 (1031 otherwise).
    pub(crate) fn top_percent(
        &self,
        quantity: &TopQuantity,
        outer: Option<&Env<'_>>,
    ) -> Result<f64> {
        let value = match quantity {
            TopQuantity::Constant(n) => *n as f64,
            TopQuantity::Expr(e) => {
                let v = convert(&self.eval(e, outer.unwrap_or(&Env::empty()))?, SqlType::Float)?;
                value::as_f64(&v).unwrap_or(f64::NAN)
            }
        };
        if !(0.0..=100.0).contains(&value) {
            return Err(SqlError::new(1031, 15, 1, "Percent values must be between 0 and 100."));
        }
        Ok(value)
    }

    /// The row count of a TOP clause: 1014 for a negative or NULL count, as in SQL Server.
    pub(crate) fn top_count(&self, quantity: &TopQuantity, outer: Option<&Env<'_>>) -> Result<u64> {
        let n = match quantity {
            TopQuantity::Constant(n) => return Ok(*n),
            TopQuantity::Expr(e) => {
                let n = convert(&self.eval(e, outer.unwrap_or(&Env::empty()))?, SqlType::BigInt)?;
                value::as_i64(&n)
            }
        };
        n.and_then(|n| u64::try_from(n).ok()).ok_or_else(|| {
            SqlError::new(1014, 15, 1, "A TOP or FETCH clause contains an invalid value.")
        })
    }

    /// `SELECT TOP (n) ... FROM a CROSS JOIN b [CROSS JOIN ...] [WHERE ...]` with no grouping,
    /// aggregate, window, DISTINCT or ORDER BY: the joined rows are made one at a time and the
    /// query stops at the n-th result, instead of materialising the whole product. This is
    /// the row-generator idiom (`sys.all_objects AS s1 CROSS JOIN sys.all_objects AS s2`),
    /// whose full product has millions of rows. None for any other query.
    fn top_over_cross_joins(
        &self,
        select: &Select,
        outer: Option<&Env<'_>>,
    ) -> Result<Option<QueryResult>> {
        let limit = match select.top.as_ref().and_then(|t| t.quantity.as_ref()) {
            Some(quantity) => self.top_count(quantity, outer)?,
            None => return Ok(None),
        };
        if select.top.as_ref().is_some_and(|t| t.percent || t.with_ties) {
            return Ok(None);
        }
        let only_cross = select.from.len() > 1
            || select.from.first().is_some_and(|f| {
                !f.joins.is_empty()
                    && f.joins.iter().all(|j| matches!(j.join_operator, JoinOperator::CrossJoin(_)))
            });
        let plain = only_cross
            && select.from.iter().all(|f| {
                f.joins.iter().all(|j| matches!(j.join_operator, JoinOperator::CrossJoin(_)))
            })
            && select.distinct.is_none()
            && select.having.is_none()
            && matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
            && !select.projection.iter().any(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    has_aggregate(e) || has_window(e)
                }
                _ => false,
            });
        if !plain {
            return Ok(None);
        }
        let mut cols: Vec<ColRef> = Vec::new();
        let mut factors = Vec::new();
        for item in &select.from {
            for relation in
                std::iter::once(&item.relation).chain(item.joins.iter().map(|j| &j.relation))
            {
                let (c, rows) = self.table_factor(relation, outer, None)?;
                cols.extend(c);
                factors.push(rows);
            }
        }
        let items = self.expand_items(&select.projection, &cols)?;
        let names: Vec<String> = items.iter().map(|(_, n)| n.clone()).collect();
        let types: Vec<Option<SqlType>> =
            items.iter().map(|(e, _)| self.declared_type(e, &cols)).collect();
        if names.iter().any(|n| n.starts_with('@')) {
            return Ok(None);
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut out_rows = Vec::new();
        let mut positions = vec![0usize; factors.len()];
        let mut row: Vec<Value> = Vec::with_capacity(cols.len());
        while out_rows.len() < limit && factors.iter().all(|f| !f.is_empty()) {
            self.check_cancel()?;
            row.clear();
            for (factor, &at) in factors.iter().zip(&positions) {
                row.extend(factor[at].iter().cloned());
            }
            let env = Env { cols: &cols, row: &row, group: None, outer };
            let passes = match &select.selection {
                Some(filter) => is_true(&self.eval(filter, &env)?),
                None => true,
            };
            if passes {
                let mut out = Vec::with_capacity(items.len());
                for (e, _) in &items {
                    out.push(self.eval(e, &env)?);
                }
                out_rows.push(out);
            }
            // The next combination: the last factor varies fastest (nested loops).
            let mut level = factors.len();
            loop {
                if level == 0 {
                    return Ok(Some(QueryResult {
                        columns: names,
                        types,
                        rows: out_rows,
                        assignments: Vec::new(),
                    }));
                }
                level -= 1;
                positions[level] += 1;
                if positions[level] < factors[level].len() {
                    break;
                }
                positions[level] = 0;
            }
        }
        Ok(Some(QueryResult { columns: names, types, rows: out_rows, assignments: Vec::new() }))
    }

    /// `SELECT COUNT(*) FROM table` (or COUNT_BIG, with an alias or `@v =`), and nothing else:
    /// the count read from the table's pages ([`Table::count_rows`]), without decoding rows,
    /// as SQL Server's plan for it reads the smallest index. None for any other query.
    fn count_star(&self, select: &Select) -> Result<Option<(String, Value)>> {
        let plain = select.selection.is_none()
            && select.having.is_none()
            && select.distinct.is_none()
            && select.top.is_none()
            && select.into.is_none()
            && matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
            && select.from.len() == 1
            && select.from[0].joins.is_empty()
            && select.projection.len() == 1;
        if !plain {
            return Ok(None);
        }
        let TableFactor::Table { name, args: None, with_hints, .. } = &select.from[0].relation
        else {
            return Ok(None);
        };
        let (expr, column) = match &select.projection[0] {
            SelectItem::UnnamedExpr(e) => (e, String::new()),
            SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
            _ => return Ok(None),
        };
        let Expr::Function(f) = expr else { return Ok(None) };
        let function = function_name(&f.name).to_ascii_uppercase();
        let star = matches!(function_args(f).as_slice(), [FunctionArgExpr::Wildcard]);
        let counting = (function == "COUNT" || function == "COUNT_BIG") && star;
        if !counting || f.over.is_some() || f.filter.is_some() || is_distinct_call(f) {
            return Ok(None);
        }
        let table_name = crate::front::last_part(name);
        let shadowed = self.ctes.borrow().iter().any(|c| c.name.eq_ignore_ascii_case(&table_name));
        if shadowed || crate::session::is_sys_schema(name) {
            return Ok(None);
        }
        let table = self.table(&table_name)?;
        engine::iostats::note_scan(self.db().database_id, table.au_ids()[0]);
        self.note_index_use(&table, 0, IndexUse::Scan);
        let locks = self.read_locks(with_hints)?;
        let count = engine::xact::with_read_locks(locks, || table.count_rows(self.db()))?;
        let value = if function == "COUNT_BIG" {
            Value::BigInt(count as i64)
        } else {
            Value::Int(i32::try_from(count).map_err(|_| {
                SqlError::new(
                    8115,
                    16,
                    2,
                    "Arithmetic overflow error converting expression to data type int.",
                )
            })?)
        };
        Ok(Some((column, value)))
    }

    /// The select list with `*` and `t.*` expanded: (expression, output name).
    pub(crate) fn expand_items(
        &self,
        projection: &[SelectItem],
        cols: &[ColRef],
    ) -> Result<Vec<(Expr, String)>> {
        let mut items = Vec::new();
        for item in projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    let name = match e {
                        // `SELECT @v` reads the variable: an unnamed column, not an assignment
                        // (bug fix: it was taken for `SELECT @v = ...`, error 141).
                        Expr::Identifier(i) if i.value.starts_with('@') => String::new(),
                        Expr::Identifier(i) => i.value.clone(),
                        Expr::CompoundIdentifier(p) => {
                            p.last().map(|i| i.value.clone()).unwrap_or_default()
                        }
                        Expr::Value(v) if is_merge_action(&v.value) => MERGE_ACTION.to_string(),
                        _ => String::new(),
                    };
                    items.push((e.clone(), name));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    items.push((expr.clone(), alias.value.clone()))
                }
                SelectItem::Wildcard(_) => {
                    if cols.is_empty() {
                        return Err(SqlError::new(
                            263,
                            16,
                            1,
                            "Must specify table to select from.",
                        ));
                    }
                    for c in cols {
                        items.push((column_expr(c), c.name.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    // `t.*` (an OUTPUT clause's `deleted.*` shows with its `.*`).
                    let qualifier = kind.to_string();
                    let qualifier = qualifier
                        .trim_end_matches(".*")
                        .rsplit('.')
                        .next()
                        .unwrap_or_default()
                        .trim_matches(['[', ']'])
                        .to_string();
                    let matching: Vec<&ColRef> = cols
                        .iter()
                        .filter(|c| c.qualifier.eq_ignore_ascii_case(&qualifier))
                        .collect();
                    if matching.is_empty() {
                        return Err(unbound(&qualifier));
                    }
                    for c in matching {
                        items.push((column_expr(c), c.name.clone()));
                    }
                }
                other => return Err(not_supported(&other.to_string())),
            }
        }
        Ok(items)
    }

    /// Rows grouped by the GROUP BY expressions (one group of all rows without them, even
    /// when there are no rows, as an aggregate without GROUP BY returns one row).
    fn groups(
        &self,
        cols: &[ColRef],
        rows: Vec<Vec<Value>>,
        exprs: &[Expr],
        outer: Option<&Env<'_>>,
    ) -> Result<Vec<Vec<Vec<Value>>>> {
        if exprs.is_empty() {
            return Ok(vec![rows]);
        }
        let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(rows.len());
        for row in rows {
            let env = Env { cols, row: &row, group: None, outer };
            let mut key = Vec::with_capacity(exprs.len());
            for e in exprs {
                key.push(self.eval(e, &env)?);
            }
            keyed.push((key, row));
        }
        let ascending = vec![false; exprs.len()];
        keyed.sort_by(|a, b| compare_keys(&a.0, &b.0, &ascending));
        let mut groups: Vec<Vec<Vec<Value>>> = Vec::new();
        let mut last_key: Option<Vec<Value>> = None;
        for (key, row) in keyed {
            let same = last_key.as_ref().is_some_and(|k| compare_keys(k, &key, &ascending).is_eq());
            if same {
                groups.last_mut().expect("a group").push(row);
            } else {
                groups.push(vec![row]);
                last_key = Some(key);
            }
        }
        Ok(groups)
    }

    /// A table of the current database by name, or 208.
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        // A read of a CTE never gets here (the FROM list looks CTEs up first): this is the
        // target of an INSERT, UPDATE or DELETE that a WITH clause precedes.
        if self.ctes.borrow().iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
            return Err(not_supported(&format!(
                "changing rows through the common table expression '{name}'"
            )));
        }
        let stored = self.catalog_name(name)?;
        self.db().catalog()?.table(&stored).ok_or_else(|| {
            if name.starts_with('@') {
                SqlError::new(1087, 15, 2, format!("Must declare the table variable \"{name}\"."))
            } else {
                invalid_object(name)
            }
        })
    }
}

/// A table's columns as a scope sees them, under `qualifier` (its name or alias).
pub fn table_columns(table: &Table, qualifier: &str) -> Vec<ColRef> {
    table
        .columns
        .iter()
        .map(|c| ColRef {
            qualifier: qualifier.to_string(),
            name: c.column.name.clone(),
            sql_type: Some(c.column.sql_type),
        })
        .collect()
}

/// A row as the table stores it, in the T-SQL level's units ([`functions::from_storage`]).
pub fn shown_row(table: &Table, row: Vec<Value>) -> Vec<Value> {
    row.into_iter()
        .zip(&table.columns)
        .map(|(v, c)| functions::from_storage(v, c.column.sql_type))
        .collect()
}

fn column_expr(c: &ColRef) -> Expr {
    let ident = |s: &str| sqlparser::ast::Ident::with_quote('[', s);
    if c.qualifier.is_empty() {
        Expr::Identifier(ident(&c.name))
    } else {
        Expr::CompoundIdentifier(vec![ident(&c.qualifier), ident(&c.name)])
    }
}

/// Position of a column in a scope: 209 if ambiguous, None if absent.
fn find_column(cols: &[ColRef], parts: &[String]) -> Result<Option<usize>> {
    let (qualifier, name) = match parts {
        [name] => (None, name),
        [.., qualifier, name] => (Some(qualifier), name),
        [] => return Ok(None),
    };
    let mut found = None;
    for (i, c) in cols.iter().enumerate() {
        if !c.name.eq_ignore_ascii_case(name) {
            continue;
        }
        if qualifier.is_some_and(|q| !c.qualifier.eq_ignore_ascii_case(q)) {
            continue;
        }
        if found.is_some() {
            return Err(SqlError::new(209, 16, 1, format!("Ambiguous column name '{name}'.")));
        }
        found = Some(i);
    }
    Ok(found)
}

/// The declared type of the column `parts` names in `cols`, if it names one that has one.
fn column_type(cols: &[ColRef], parts: &[String]) -> Option<SqlType> {
    find_column(cols, parts).ok().flatten().and_then(|i| cols[i].sql_type)
}

/// Whether an expression is just a column name (`c` or `t.c`, not a variable).
fn is_column_name(expr: &Expr) -> bool {
    match expr {
        Expr::Identifier(i) => !i.value.starts_with('@'),
        Expr::CompoundIdentifier(_) => true,
        _ => false,
    }
}

fn references_columns(expr: &Expr) -> bool {
    match expr {
        Expr::Identifier(i) => !i.value.starts_with('@'),
        Expr::CompoundIdentifier(_) | Expr::Subquery(_) => true,
        Expr::BinaryOp { left, right, .. } => references_columns(left) || references_columns(right),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::Cast { expr, .. } => {
            references_columns(expr)
        }
        Expr::Value(_) => false,
        Expr::Function(_) => true,
        _ => true,
    }
}

fn conjuncts(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

/// Whether an expression holds a window function (a call with OVER).
fn has_window(expr: &Expr) -> bool {
    let found = sqlparser::ast::visit_expressions(expr, |e: &Expr| {
        if let Expr::Function(f) = e
            && f.over.is_some()
        {
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found.is_break()
}

fn in_values(v: &Value, candidates: &[Value], negated: bool) -> Result<Value> {
    if matches!(v, Value::Null) {
        return Ok(Value::Null);
    }
    let mut saw_null = false;
    for c in candidates {
        if matches!(c, Value::Null) {
            saw_null = true;
            continue;
        }
        if compare(v, c)?.is_eq() {
            return Ok(Value::Bit(!negated));
        }
    }
    Ok(if saw_null { Value::Null } else { Value::Bit(negated) })
}

fn compare_keys(a: &[Value], b: &[Value], descending: &[bool]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let mut o = sort_compare(x, y);
        if descending.get(i).copied().unwrap_or(false) {
            o = o.reverse();
        }
        if !o.is_eq() {
            return o;
        }
    }
    Ordering::Equal
}

/// Rows in the order [`sort_compare`] gives their values, column by column.
fn compare_rows(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let order = sort_compare(x, y);
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// For each row, whether no earlier row equals it: a sort of the rows' indexes, so DISTINCT
/// and UNION cost n log n comparisons, not n squared.
fn first_occurrences(rows: &[&[Value]]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| compare_rows(rows[a], rows[b]).then(a.cmp(&b)));
    let mut first = vec![false; rows.len()];
    for (i, &index) in order.iter().enumerate() {
        first[index] = i == 0 || !compare_rows(rows[order[i - 1]], rows[index]).is_eq();
    }
    first
}

/// Removes each item whose row (`row_of`) equals an earlier item's, keeping the order of the
/// rest.
fn retain_first_occurrences<T>(items: &mut Vec<T>, row_of: impl Fn(&T) -> &[Value]) {
    let rows: Vec<&[Value]> = items.iter().map(&row_of).collect();
    let first = first_occurrences(&rows);
    let mut keep = first.into_iter();
    items.retain(|_| keep.next().unwrap_or(true));
}

fn dedup_rows(rows: &mut Vec<Vec<Value>>) {
    retain_first_occurrences(rows, Vec::as_slice);
}

/// Keeps the rows of `rows` that `other` has (INTERSECT, `keep_matches`) or lacks (EXCEPT),
/// looking each up in a sorted copy of `other`.
fn filter_by_presence(rows: &mut Vec<Vec<Value>>, other: &[Vec<Value>], keep_matches: bool) {
    let mut sorted: Vec<&[Value]> = other.iter().map(Vec::as_slice).collect();
    sorted.sort_by(|a, b| compare_rows(a, b));
    rows.retain(|row| sorted.binary_search_by(|o| compare_rows(o, row)).is_ok() == keep_matches);
}

/// MERGE's OUTPUT pseudocolumn, `$action`: a column of that name in the OUTPUT's rows.
pub(crate) const MERGE_ACTION: &str = "$action";

/// Whether a value is `$action`, which sqlparser reads as a placeholder.
fn is_merge_action(v: &AstValue) -> bool {
    matches!(v, AstValue::Placeholder(p) if p.eq_ignore_ascii_case(MERGE_ACTION))
}

/// A literal.
pub fn literal(v: &AstValue) -> Result<Value> {
    match v {
        AstValue::Number(n, _) => number_literal(n),
        AstValue::SingleQuotedString(s) | AstValue::NationalStringLiteral(s) => {
            Ok(Value::Text(s.clone()))
        }
        AstValue::Null => Ok(Value::Null),
        AstValue::Boolean(b) => Ok(Value::Bit(*b)),
        AstValue::HexStringLiteral(h) => {
            let bytes = (0..h.len() / 2)
                .filter_map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
                .collect();
            Ok(Value::Bytes(bytes))
        }
        other => Err(not_supported(&other.to_string())),
    }
}

/// An aggregate (COUNT, COUNT_BIG, MIN, MAX, SUM, AVG) of non-NULL values.
pub(crate) fn fold_aggregate(upper: &str, values: Vec<Value>) -> Result<Value> {
    match upper {
        "COUNT" => Ok(Value::Int(values.len() as i32)),
        "COUNT_BIG" => Ok(Value::BigInt(values.len() as i64)),
        "MIN" | "MAX" => {
            let want = if upper == "MIN" { Ordering::Less } else { Ordering::Greater };
            let mut best: Option<Value> = None;
            for v in values {
                best = match best {
                    Some(b) if compare(&v, &b)? != want => Some(b),
                    _ => Some(v),
                };
            }
            Ok(best.unwrap_or(Value::Null))
        }
        "SUM" | "AVG" => {
            if values.is_empty() {
                return Ok(Value::Null);
            }
            // Added up as bigint; SQL Server's result type is int for tinyint, smallint
            // and int arguments (8115 if the result does not fit), else the argument's.
            let small_ints = values
                .iter()
                .all(|v| matches!(v, Value::TinyInt(_) | Value::SmallInt(_) | Value::Int(_)));
            let widen = |v: &Value| match value::as_i64(v) {
                Some(x) if small_ints => Value::BigInt(x),
                _ => v.clone(),
            };
            let mut total = widen(&values[0]);
            for v in &values[1..] {
                total = value::arith(Arith::Add, &total, &widen(v))?;
            }
            let result = if upper == "AVG" {
                value::arith(Arith::Div, &total, &Value::BigInt(values.len() as i64))?
            } else {
                total
            };
            if small_ints { convert(&result, SqlType::Int) } else { Ok(result) }
        }
        other => Err(not_supported(other)),
    }
}

/// A LIKE pattern with ESCAPE: each escaped character becomes a one-character class (`!%` is
/// `[%]`), which matches it literally. The escape must be one character (SQL Server's 506).
fn escaped_pattern(pattern: &str, escape: &Value) -> Result<String> {
    let text = value::display(escape);
    let mut chars = text.chars();
    let (Some(escape), None) = (chars.next(), chars.next()) else {
        return Err(SqlError::new(
            506,
            16,
            1,
            format!("The invalid escape character \"{text}\" was specified in a LIKE predicate."),
        ));
    };
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern.chars();
    while let Some(c) = rest.next() {
        if c != escape {
            out.push(c);
            continue;
        }
        match rest.next() {
            // `]` outside a class is already literal; `[]]` would not be.
            Some(']') => out.push(']'),
            Some(literal) => {
                out.push('[');
                out.push(literal);
                out.push(']');
            }
            // A trailing escape character stands for itself.
            None => out.push(c),
        }
    }
    Ok(out)
}

/// The column names a derived table or common table expression shows: its alias's column list
/// when it has one, which must name every column of the query (`columns`), as SQL Server
/// requires: 8158 when the query has more columns than names, 8159 when it has fewer. A name
/// followed by a type (`AS t (a int)`, which sqlparser takes for other dialects) is T-SQL's
/// syntax error near the type.
pub(crate) fn aliased_columns(
    alias: &sqlparser::ast::TableAlias,
    columns: &[String],
) -> Result<Vec<String>> {
    if alias.columns.is_empty() {
        return Ok(columns.to_vec());
    }
    if let Some(data_type) = alias.columns.iter().find_map(|c| c.data_type.as_ref()) {
        let near = data_type.to_string();
        return Err(SqlError::new(102, 15, 1, format!("Incorrect syntax near '{near}'.")));
    }
    let name = &alias.name.value;
    let more_or_fewer = match alias.columns.len().cmp(&columns.len()) {
        std::cmp::Ordering::Less => (8158, "more"),
        std::cmp::Ordering::Greater => (8159, "fewer"),
        std::cmp::Ordering::Equal => {
            return Ok(alias.columns.iter().map(|c| c.name.value.clone()).collect());
        }
    };
    let (number, comparison) = more_or_fewer;
    let text = format!("'{name}' has {comparison} columns than were specified in the column list.");
    Err(SqlError::new(number, 16, 1, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_arguments_are_seed_and_increment() {
        assert_eq!(identity_seed_step("IDENTITY"), (1, 1));
        assert_eq!(identity_seed_step("IDENTITY(100, 5)"), (100, 5));
        assert_eq!(identity_seed_step("IDENTITY(-1,-1)"), (-1, -1));
    }

    /// The seek chosen for a WHERE clause: (index position, from, to).
    fn plan(sql_where: &str) -> Option<(usize, Option<Value>, Option<Value>)> {
        let dir = tempfile::tempdir().unwrap();
        let server =
            crate::server::Server::start(engine::instance::InstanceConfig::new(dir.path()))
                .unwrap();
        let mut session = Session::new(&server);
        let setup =
            "CREATE TABLE t (id INT PRIMARY KEY, b INT, c VARCHAR(9))\nCREATE INDEX ix_b ON t (b)";
        assert!(session.execute(setup, &mut |_| {}));
        let parsed =
            crate::front::parse_batch(&format!("SELECT * FROM t WHERE {sql_where}")).unwrap();
        let crate::front::Stmt::Sql(statement) = &parsed[0].stmt else { panic!() };
        let sqlparser::ast::Statement::Query(query) = statement.as_ref() else { panic!() };
        let SetExpr::Select(select) = query.body.as_ref() else { panic!() };
        let table = session.table("t").unwrap();
        let cols = table_columns(&table, "t");
        let found = session.seek_plan(&table, &cols, select.selection.as_ref().unwrap(), None);
        found.map(|p| (p.position, p.from, p.to))
    }

    #[test]
    fn seeks_come_from_equalities_ranges_and_between() {
        let int = |n| Some(Value::Int(n));
        assert_eq!(plan("id = 5"), Some((0, int(5), int(5))));
        assert_eq!(plan("5 < id AND id <= 9"), Some((0, int(5), int(9))));
        assert_eq!(plan("b BETWEEN 2 AND 4"), Some((1, int(2), int(4))));
        assert_eq!(plan("b > 2 AND id = 7"), Some((0, int(7), int(7))), "equality wins");
        assert_eq!(plan("c = 'x'"), None, "no index on c");
        assert_eq!(plan("id = b"), None, "not a constant");
        assert_eq!(plan("id > 1 OR b = 2"), None, "not a conjunct");
    }

    #[test]
    fn like_patterns() {
        assert!(like("Hello", "h%"));
        assert!(like("abc", "a_c"));
        assert!(like("b", "[a-c]"));
        assert!(!like("d", "[a-c]"));
        assert!(like("d", "[^a-c]"));
        assert!(!like("abc", "ab"));
    }
}
