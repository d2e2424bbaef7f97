//! The OUTPUT clause of INSERT, UPDATE and DELETE: the rows a statement changed, as the
//! pseudo-tables `inserted` (rows as they are after an INSERT or UPDATE) and `deleted` (rows as
//! they were before an UPDATE or DELETE), sent as a result set or put INTO a table, a temporary
//! table or a table variable, in the statement's own transaction.
//!
//! The DML functions name their target table to [`Session::note_output_table`] as they resolve
//! it, and hand each row they change to [`Session::capture_output`]; both keep them only while
//! an OUTPUT clause runs. The clause's select list is then evaluated over the rows with the
//! query layer's expressions. INSERT has only `inserted`, DELETE only `deleted` (naming the
//! other is 4104, as in SQL Server). MERGE has both, the source's columns, and `$action`
//! ([`crate::merge`] tags each changed row with them).
//!
//! Deviation: `OUTPUT ... INTO target (columns)` (a column list) is not parsed by sqlparser
//! and is a syntax error.

use crate::merge::MergeActionKind;
use crate::query::{ColRef, Env, table_columns};
use crate::server::{Output, ResultSet};
use crate::session::{Failure, Flow, Session};
use engine::SqlError;
use engine::catalog::Table;
use engine::record::Value;
use sqlparser::ast::{Expr, OutputClause, Statement};
use std::sync::Arc;

type Result<T> = std::result::Result<T, SqlError>;

/// Rows an OUTPUT clause is collecting.
#[derive(Default)]
pub(crate) struct OutputCapture {
    table: Option<Arc<Table>>,
    rows: Vec<ChangedRow>,
    /// A MERGE's source columns.
    source_cols: Vec<ColRef>,
}

/// One changed row: as it was (UPDATE, DELETE) and as it is (INSERT, UPDATE); for a MERGE,
/// what it did and the source row it did it for (none for NOT MATCHED BY SOURCE).
struct ChangedRow {
    deleted: Option<Vec<Value>>,
    inserted: Option<Vec<Value>>,
    action: Option<MergeActionKind>,
    source: Option<Vec<Value>>,
}

impl Session {
    /// Notes the table a DML statement changes (its pseudo-tables' columns), if an OUTPUT
    /// clause is collecting.
    pub(crate) fn note_output_table(&mut self, table: &Arc<Table>) {
        if let Some(capture) = &mut self.output_capture {
            capture.table.get_or_insert_with(|| table.clone());
        }
    }

    /// Notes a row a DML statement changed, if an OUTPUT clause is collecting them: `deleted`
    /// as queries see it, `inserted` as the table stores it (the row the statement wrote),
    /// which is kept as queries see it too ([`crate::query::shown_row`]; bug fix: a time or
    /// datetime2 column came out of `inserted` in its storage units, scaled wrong).
    pub(crate) fn capture_output(&mut self, deleted: Option<&[Value]>, inserted: Option<&[Value]>) {
        if let Some(capture) = &mut self.output_capture {
            let table = capture.table.as_ref().expect("the statement noted its table first");
            capture.rows.push(ChangedRow {
                deleted: deleted.map(<[Value]>::to_vec),
                inserted: inserted.map(|row| crate::query::shown_row(table, row.to_vec())),
                action: None,
                source: None,
            });
        }
    }

    /// Notes a MERGE's source columns, if an OUTPUT clause is collecting.
    pub(crate) fn set_output_source(&mut self, cols: Vec<ColRef>) {
        if let Some(capture) = &mut self.output_capture {
            capture.source_cols = cols;
        }
    }

    /// Tags the row a MERGE just changed with its `$action` and its source row.
    pub(crate) fn tag_output(&mut self, action: MergeActionKind, source: Option<&[Value]>) {
        if let Some(capture) = &mut self.output_capture
            && let Some(row) = capture.rows.last_mut()
        {
            row.action = Some(action);
            row.source = source.map(<[Value]>::to_vec);
        }
    }

    /// Runs an INSERT, UPDATE or DELETE (`top` for DELETE/UPDATE TOP) with its OUTPUT clause,
    /// all in one statement transaction: the changed rows go out as a result set before the
    /// row count, or into the INTO target.
    pub(crate) fn run_with_output(
        &mut self,
        statement: &Statement,
        top: Option<&sqlparser::ast::Top>,
        output: &OutputClause,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> std::result::Result<Flow, Failure> {
        let OutputClause::Output { select_items, into_table, .. } = output else {
            let error = crate::query::not_supported_option("RETURNING");
            return Err(self.fail(error, line));
        };
        let (count, result) = self.atomic(line, |s| {
            s.output_capture = Some(OutputCapture::default());
            let changed = match statement {
                Statement::Insert(insert) => s.insert(insert),
                Statement::Update(update) => s.update(update, top),
                Statement::Delete(delete) => s.delete(delete, top),
                Statement::Merge(merge) => s.merge(merge),
                _ => unreachable!("OUTPUT belongs to INSERT, UPDATE, DELETE and MERGE"),
            };
            let capture = s.output_capture.take().unwrap_or_default();
            let count = changed?;
            let (names, rows) = s.output_rows(statement, select_items, capture)?;
            match into_table.as_ref().and_then(|into| into.targets.first()) {
                Some(target) => {
                    s.output_into(target, rows)?;
                    Ok((count, None))
                }
                None => Ok((count, Some(ResultSet { columns: names, rows, types: Vec::new() }))),
            }
        })?;
        if let Some(result) = result {
            out(Output::Rows(result));
        }
        self.rows_affected(count, out);
        Ok(Flow::Next)
    }

    /// The OUTPUT select list over the captured rows: (column names, rows).
    fn output_rows(
        &self,
        statement: &Statement,
        select_items: &[sqlparser::ast::SelectItem],
        capture: OutputCapture,
    ) -> Result<(Vec<String>, Vec<Vec<Value>>)> {
        let table = capture.table.expect("the statement resolved its table before it ran");
        let has_inserted = !matches!(statement, Statement::Delete(_));
        let has_deleted = !matches!(statement, Statement::Insert(_));
        let mut cols: Vec<ColRef> = Vec::new();
        if has_inserted {
            cols.extend(table_columns(&table, "inserted"));
        }
        if has_deleted {
            cols.extend(table_columns(&table, "deleted"));
        }
        let is_merge = matches!(statement, Statement::Merge(_));
        let source_width = capture.source_cols.len();
        if is_merge {
            cols.extend(capture.source_cols.iter().cloned());
            let name = crate::query::MERGE_ACTION.to_string();
            cols.push(ColRef { qualifier: String::new(), name, sql_type: None });
        }
        let items = self.expand_items(select_items, &cols)?;
        self.bind_check(items.iter().map(|(expr, _)| expr), &cols, None, false)?;
        let width = table.columns.len();
        let mut rows = Vec::with_capacity(capture.rows.len());
        for ChangedRow { deleted, inserted, action, source } in capture.rows {
            let mut row = Vec::with_capacity(cols.len());
            if has_inserted {
                row.extend(inserted.unwrap_or_else(|| vec![Value::Null; width]));
            }
            if has_deleted {
                row.extend(deleted.unwrap_or_else(|| vec![Value::Null; width]));
            }
            if is_merge {
                row.extend(source.unwrap_or_else(|| vec![Value::Null; source_width]));
                row.push(action.map_or(Value::Null, |a| Value::Text(a.name().into())));
            }
            let env = Env { cols: &cols, row: &row, group: None, outer: None };
            let mut values = Vec::with_capacity(items.len());
            for (expr, _) in &items {
                values.push(self.eval(expr, &env)?);
            }
            rows.push(values);
        }
        Ok((items.into_iter().map(|(_, name)| name).collect(), rows))
    }

    /// OUTPUT ... INTO target: the rows go into the table (or table variable) as an INSERT
    /// without a column list would put them.
    fn output_into(&mut self, target: &Expr, rows: Vec<Vec<Value>>) -> Result<()> {
        let name = match target {
            Expr::Identifier(ident) => ident.value.clone(),
            Expr::CompoundIdentifier(parts) => {
                parts.last().map(|ident| ident.value.clone()).unwrap_or_default()
            }
            other => {
                return Err(SqlError::new(102, 15, 1, format!("Incorrect syntax near '{other}'.")));
            }
        };
        let target = self.insert_target(&name, &[])?;
        self.insert_rows(&target, rows, true).map(|_| ())
    }
}
