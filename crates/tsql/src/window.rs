//! Window functions: `f(...) OVER ([PARTITION BY ...] [ORDER BY ...] [ROWS ...])`.
//!
//! A SELECT's window functions are taken out of its select list (each is replaced by a
//! column `__window_N`), computed over the rows the SELECT produces after WHERE, GROUP BY and
//! HAVING, and added to those rows before the select list is evaluated, as SQL Server's
//! logical processing order puts them.
//!
//! Functions: ROW_NUMBER, RANK, DENSE_RANK, NTILE(n), LAG/LEAD(expr [, offset [, default]]),
//! FIRST_VALUE/LAST_VALUE, and the aggregates COUNT, COUNT_BIG, SUM, AVG, MIN, MAX. Frames:
//! without ORDER BY the whole partition; with ORDER BY, SQL Server's default RANGE BETWEEN
//! UNBOUNDED PRECEDING AND CURRENT ROW (peers included), or `ROWS BETWEEN UNBOUNDED PRECEDING
//! AND CURRENT ROW` / `ROWS UNBOUNDED PRECEDING`. Other frames are refused (40517).

use crate::query::{ColRef, Env, fold_aggregate};
use crate::session::Session;
use crate::value::{Result, sort_compare};
use engine::SqlError;
use engine::record::Value;
use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, WindowFrameBound,
    WindowFrameUnits, WindowType,
};
use std::cmp::Ordering;
use std::ops::ControlFlow;

/// The prefix of the columns that carry window function results.
pub const WINDOW_COLUMN: &str = "__window_";

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

/// Takes the window functions out of `exprs`, replacing each by its `__window_N` column.
pub fn extract(exprs: &mut [&mut Expr]) -> Vec<Function> {
    let mut found = Vec::new();
    for expr in exprs.iter_mut() {
        let _ = sqlparser::ast::visit_expressions_mut(&mut **expr, |e: &mut Expr| {
            if let Expr::Function(f) = e
                && f.over.is_some()
            {
                let name = format!("{WINDOW_COLUMN}{}", found.len());
                found.push(f.clone());
                *e = Expr::Identifier(Ident::new(name));
            }
            ControlFlow::<()>::Continue(())
        });
    }
    found
}

/// The window columns' references, to append to a scope's columns.
pub fn columns(count: usize) -> Vec<ColRef> {
    (0..count)
        .map(|i| ColRef {
            qualifier: String::new(),
            name: format!("{WINDOW_COLUMN}{i}"),
            sql_type: None,
        })
        .collect()
}

fn arguments(f: &Function) -> Vec<&FunctionArgExpr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(e) | FunctionArg::Named { arg: e, .. } => e,
                FunctionArg::ExprNamed { arg, .. } => arg,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether each row's frame ends at its last peer (RANGE) or at itself (ROWS).
fn frame_ends_at_peers(f: &Function) -> Result<bool> {
    let Some(WindowType::WindowSpec(spec)) = &f.over else { return Ok(true) };
    let Some(frame) = &spec.window_frame else { return Ok(true) };
    let unbounded_start = matches!(frame.start_bound, WindowFrameBound::Preceding(None));
    let current_end = matches!(frame.end_bound, None | Some(WindowFrameBound::CurrentRow));
    if !unbounded_start || !current_end {
        return Err(not_supported("window frame"));
    }
    Ok(matches!(frame.units, WindowFrameUnits::Range))
}

/// A row's evaluation scope: `env_of(row, f)` calls `f` with the scope of result row `row`
/// (its values and, when grouped, its group's rows).
pub type RowScopes<'a> = &'a dyn Fn(usize, &mut dyn FnMut(&Env<'_>) -> Result<()>) -> Result<()>;

/// What one row brings to one window function.
struct RowInput {
    partition: Vec<Value>,
    order: Vec<Value>,
    args: Vec<Value>,
}

impl Session {
    /// The value of every window function for every row: `[row][function]`.
    pub fn window_values(
        &self,
        functions: &[Function],
        row_count: usize,
        env_of: RowScopes<'_>,
    ) -> Result<Vec<Vec<Value>>> {
        let mut out = vec![Vec::with_capacity(functions.len()); row_count];
        for f in functions {
            let values = self.one_window_function(f, row_count, env_of)?;
            for (row, value) in out.iter_mut().zip(values) {
                row.push(value);
            }
        }
        Ok(out)
    }

    fn one_window_function(
        &self,
        f: &Function,
        row_count: usize,
        env_of: RowScopes<'_>,
    ) -> Result<Vec<Value>> {
        let Some(WindowType::WindowSpec(spec)) = &f.over else {
            return Err(not_supported("named window"));
        };
        let descending: Vec<bool> = spec
            .order_by
            .iter()
            .map(|o| matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc)))
            .collect();
        let mut inputs = Vec::with_capacity(row_count);
        for row in 0..row_count {
            let mut input = RowInput { partition: Vec::new(), order: Vec::new(), args: Vec::new() };
            env_of(row, &mut |env| {
                for e in &spec.partition_by {
                    input.partition.push(self.eval(e, env)?);
                }
                for o in &spec.order_by {
                    input.order.push(self.eval(&o.expr, env)?);
                }
                for a in arguments(f) {
                    input.args.push(match a {
                        FunctionArgExpr::Expr(e) => self.eval(e, env)?,
                        _ => Value::Int(1), // COUNT(*)
                    });
                }
                Ok(())
            })?;
            inputs.push(input);
        }
        let mut order: Vec<usize> = (0..row_count).collect();
        order.sort_by(|&a, &b| {
            compare_values(&inputs[a].partition, &inputs[b].partition, &[])
                .then_with(|| compare_values(&inputs[a].order, &inputs[b].order, &descending))
                .then(a.cmp(&b))
        });
        let name = crate::query::function_name(&f.name).to_uppercase();
        let ranking = ["ROW_NUMBER", "RANK", "DENSE_RANK", "NTILE", "LAG", "LEAD"];
        if spec.order_by.is_empty() && ranking.contains(&name.as_str()) {
            return Err(SqlError::new(
                4112,
                15,
                1,
                format!("The function '{name}' must have an OVER clause with ORDER BY."),
            ));
        }
        let star = matches!(arguments(f).first(), Some(FunctionArgExpr::Wildcard) | None);
        let ends_at_peers = frame_ends_at_peers(f)?;
        let mut result = vec![Value::Null; row_count];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len()
                && compare_values(
                    &inputs[order[start]].partition,
                    &inputs[order[end]].partition,
                    &[],
                )
                .is_eq()
            {
                end += 1;
            }
            let partition = &order[start..end];
            let values =
                self.partition_values(&name, star, ends_at_peers, partition, &inputs, &descending)?;
            for (&row, value) in partition.iter().zip(values) {
                result[row] = value;
            }
            start = end;
        }
        Ok(result)
    }

    /// The function's value for each row of one partition (rows in window order).
    fn partition_values(
        &self,
        name: &str,
        star: bool,
        ends_at_peers: bool,
        rows: &[usize],
        inputs: &[RowInput],
        descending: &[bool],
    ) -> Result<Vec<Value>> {
        let peers = |a: usize, b: usize| {
            compare_values(&inputs[rows[a]].order, &inputs[rows[b]].order, descending).is_eq()
        };
        let arg = |i: usize, n: usize| inputs[rows[i]].args.get(n).cloned().unwrap_or(Value::Null);
        let count = rows.len();
        let mut out = Vec::with_capacity(count);
        match name {
            "ROW_NUMBER" => out.extend((1..=count).map(|n| Value::BigInt(n as i64))),
            "RANK" | "DENSE_RANK" => {
                let (mut rank, mut dense) = (0i64, 0i64);
                for i in 0..count {
                    if i == 0 || !peers(i - 1, i) {
                        rank = i as i64 + 1;
                        dense += 1;
                    }
                    out.push(Value::BigInt(if name == "RANK" { rank } else { dense }));
                }
            }
            "NTILE" => {
                let buckets = crate::value::as_i64(&arg(0, 0)).unwrap_or(1).max(1) as usize;
                let (size, larger) = (count / buckets, count % buckets);
                for i in 0..count {
                    // The first `larger` buckets have one row more.
                    let bucket = if i < larger * (size + 1) {
                        i / (size + 1)
                    } else {
                        larger + (i - larger * (size + 1)) / size.max(1)
                    };
                    out.push(Value::BigInt(bucket as i64 + 1));
                }
            }
            "LAG" | "LEAD" => {
                for i in 0..count {
                    let offset =
                        inputs[rows[i]].args.get(1).and_then(crate::value::as_i64).unwrap_or(1);
                    let target = if name == "LAG" { i as i64 - offset } else { i as i64 + offset };
                    let value = if (0..count as i64).contains(&target) {
                        arg(target as usize, 0)
                    } else {
                        arg(i, 2)
                    };
                    out.push(value);
                }
            }
            "FIRST_VALUE" => out.extend((0..count).map(|_| arg(0, 0))),
            "LAST_VALUE" => {
                for i in 0..count {
                    out.push(arg(self.frame_end(i, count, ends_at_peers, &peers), 0));
                }
            }
            "COUNT" | "COUNT_BIG" | "SUM" | "AVG" | "MIN" | "MAX" => {
                for i in 0..count {
                    let last = if descending.is_empty() {
                        count - 1
                    } else {
                        self.frame_end(i, count, ends_at_peers, &peers)
                    };
                    let frame: Vec<Value> = (0..=last)
                        .map(|j| if star { Value::Int(1) } else { arg(j, 0) })
                        .filter(|v| !matches!(v, Value::Null))
                        .collect();
                    out.push(fold_aggregate(name, frame)?);
                }
            }
            other => return Err(not_supported(&format!("{other} OVER"))),
        }
        Ok(out)
    }

    /// The last row of row `i`'s frame: its last peer (RANGE) or itself (ROWS).
    fn frame_end(
        &self,
        i: usize,
        count: usize,
        ends_at_peers: bool,
        peers: &dyn Fn(usize, usize) -> bool,
    ) -> usize {
        let mut last = i;
        while ends_at_peers && last + 1 < count && peers(i, last + 1) {
            last += 1;
        }
        last
    }
}

fn compare_values(a: &[Value], b: &[Value], descending: &[bool]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ordering = sort_compare(x, y);
        let ordering =
            if descending.get(i).copied().unwrap_or(false) { ordering.reverse() } else { ordering };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
