//! MERGE target [AS alias] USING source ON condition WHEN ... ;
//!
//! The source (a table, a derived table or a VALUES list with an alias) is joined to the
//! target on the condition. Then, as SQL Server does:
//! - each target row matched by a source row takes the first `WHEN MATCHED [AND predicate]`
//!   clause whose predicate holds: `UPDATE SET ...` or `DELETE`;
//! - each source row that matched no target row takes the first `WHEN NOT MATCHED [BY
//!   TARGET] [AND predicate]` clause whose predicate holds: `INSERT [(columns)] VALUES (...)`;
//! - each target row that no source row matched takes the first `WHEN NOT MATCHED BY SOURCE
//!   [AND predicate]` clause whose predicate holds: `UPDATE SET ...` or `DELETE`.
//!
//! A target row that a MATCHED clause would change for two source rows is 8672, and nothing
//! is changed (the statement is atomic). An action a clause does not allow is 10711 or 10712,
//! and a MERGE not ended by a semicolon 10714 ([`crate::front`] finds both before it runs).
//! The row count is every row inserted, updated or deleted. OUTPUT sees `inserted`,
//! `deleted`, the source's columns and `$action` ('INSERT', 'UPDATE' or 'DELETE').
//!
//! The numbers and texts are SQL Server's message table's (the MicrosoftDocs sys.messages
//! include; before 2026-12-07 they were from memory and one off: 10710, 10711 and 10713).
//!
//! Deviations: the join is a nested loop over the target's rows for each source row (SQL
//! Server's optimizer picks a join; the results are the same, the cost for a large target is
//! not). The target is locked IX and its rows X as UPDATE, DELETE and INSERT lock them, not
//! with MERGE's range locks under SERIALIZABLE hints (HOLDLOCK is accepted and ignored).

use crate::query::{ColRef, Env, shown_row, table_columns};
use crate::session::{InsertTarget, MatchedRow, Session};
use crate::value::is_true;
use engine::SqlError;
use engine::catalog::Table;
use engine::record::Value;
use sqlparser::ast::{
    Expr, Merge, MergeAction, MergeClause, MergeClauseKind, MergeInsertKind, MergeUpdateKind,
    TableFactor,
};
use std::sync::Arc;

type Result<T> = std::result::Result<T, SqlError>;

/// What a MERGE did to one row, as `$action` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MergeActionKind {
    Insert,
    Update,
    Delete,
}

impl MergeActionKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            MergeActionKind::Insert => "INSERT",
            MergeActionKind::Update => "UPDATE",
            MergeActionKind::Delete => "DELETE",
        }
    }
}

/// The target's rows and columns, and the source's, as the clauses see them.
struct Sides {
    table: Arc<Table>,
    target: Vec<MatchedRow>,
    source_rows: Vec<Vec<Value>>,
    /// The target's columns (under its alias), then the source's.
    cols: Vec<ColRef>,
    target_width: usize,
}

impl Sides {
    /// A target row (or NULLs) beside a source row (or NULLs), as one row of `cols`.
    fn combined(&self, target: Option<usize>, source: Option<usize>) -> Vec<Value> {
        let source_width = self.cols.len() - self.target_width;
        let mut row = Vec::with_capacity(self.cols.len());
        match target {
            Some(t) => row.extend(self.target[t].shown.iter().cloned()),
            None => row.extend(std::iter::repeat_n(Value::Null, self.target_width)),
        }
        match source {
            Some(s) => row.extend(self.source_rows[s].iter().cloned()),
            None => row.extend(std::iter::repeat_n(Value::Null, source_width)),
        }
        row
    }
}

/// The ON condition's result: (target, source) pairs that joined, and the source rows that
/// joined no target row (indexes into [`Sides`]).
type Joined = (Vec<(usize, usize)>, Vec<usize>);

fn not_supported(what: &str) -> SqlError {
    SqlError::new(40517, 16, 1, format!("MERGE with {what} is not supported."))
}

impl Session {
    /// Runs a MERGE; returns the rows it inserted, updated and deleted.
    pub(crate) fn merge(&mut self, merge: &Merge) -> Result<u64> {
        let sides = self.merge_sides(merge)?;
        let (matched_pairs, unmatched_sources) = self.merge_join(&sides, &merge.on)?;
        let mut changed_targets = vec![false; sides.target.len()];
        let mut count = 0;
        let clauses_of = |kind: fn(&MergeClauseKind) -> bool| -> Vec<&MergeClause> {
            merge.clauses.iter().filter(|c| kind(&c.clause_kind)).collect()
        };
        let matched = clauses_of(|k| matches!(k, MergeClauseKind::Matched));
        let not_matched = clauses_of(|k| {
            matches!(k, MergeClauseKind::NotMatched | MergeClauseKind::NotMatchedByTarget)
        });
        let by_source = clauses_of(|k| matches!(k, MergeClauseKind::NotMatchedBySource));
        for &(t, s) in &matched_pairs {
            self.check_cancel()?;
            let row = sides.combined(Some(t), Some(s));
            let Some(clause) = self.first_clause(&matched, &sides.cols, &row)? else {
                continue;
            };
            if std::mem::replace(&mut changed_targets[t], true) {
                return Err(SqlError::new(
                    8672,
                    16,
                    1,
                    "The MERGE statement attempted to UPDATE or DELETE the same row more than once. This happens when a target row matches more than one source row. A MERGE statement cannot UPDATE/DELETE the same row of the target table multiple times. Refine the ON clause to ensure a target row matches at most one source row, or use the GROUP BY clause to group the source rows.",
                ));
            }
            let action = self.change_target(&sides, clause, t, &row)?;
            self.tag_output(action, Some(&sides.source_rows[s]));
            count += 1;
        }
        // Each INSERT clause's table, column places and defaults, prepared once, when first used.
        let mut insert_targets: Vec<Option<InsertTarget>> =
            not_matched.iter().map(|_| None).collect();
        for &s in &unmatched_sources {
            self.check_cancel()?;
            let row = sides.combined(None, Some(s));
            let Some(clause) = self.first_clause(&not_matched, &sides.cols, &row)? else {
                continue;
            };
            let at = not_matched.iter().position(|c| std::ptr::eq(*c, clause)).expect("listed");
            if insert_targets[at].is_none() {
                insert_targets[at] = Some(self.merge_insert_target(&sides, clause)?);
            }
            let target = insert_targets[at].as_ref().expect("prepared above");
            self.merge_insert(&sides, clause, target, &row)?;
            self.tag_output(MergeActionKind::Insert, Some(&sides.source_rows[s]));
            count += 1;
        }
        if !by_source.is_empty() {
            let mut matched_targets = vec![false; sides.target.len()];
            for &(t, _) in &matched_pairs {
                matched_targets[t] = true;
            }
            for t in (0..sides.target.len()).filter(|t| !matched_targets[*t]) {
                self.check_cancel()?;
                let row = sides.combined(Some(t), None);
                let Some(clause) = self.first_clause(&by_source, &sides.cols, &row)? else {
                    continue;
                };
                let action = self.change_target(&sides, clause, t, &row)?;
                self.tag_output(action, None);
                count += 1;
            }
        }
        Ok(count)
    }

    /// The target (locked IX, its rows read) and the source's rows.
    fn merge_sides(&mut self, merge: &Merge) -> Result<Sides> {
        let TableFactor::Table { name, alias, .. } = &merge.table else {
            return Err(not_supported("a target that is not a table"));
        };
        let table = self.table(&crate::front::last_part(name))?;
        self.note_output_table(&table);
        table.lock(self.db(), engine::lock::LockMode::IX)?;
        let qualifier = alias.as_ref().map_or_else(|| table.name.clone(), |a| a.name.value.clone());
        let mut cols = table_columns(&table, &qualifier);
        let target_width = cols.len();
        let mut target = Vec::new();
        self.note_index_use(&table, 0, engine::index_usage::IndexUse::Scan);
        for (locator, stored) in table.rows(self.db())? {
            let shown = shown_row(&table, stored.clone());
            target.push(MatchedRow { locator, stored, shown });
        }
        let (source_cols, source_rows) = self.table_factor(&merge.source, None, None)?;
        cols.extend(source_cols);
        self.set_output_source(cols[target_width..].to_vec());
        Ok(Sides { table, target, source_rows, cols, target_width })
    }

    /// The (target, source) pairs the ON condition joins, in source order, and the source rows
    /// that joined none.
    fn merge_join(&self, sides: &Sides, on: &Expr) -> Result<Joined> {
        let mut pairs = Vec::new();
        let mut unmatched = Vec::new();
        // One row buffer: each target row's values replace the last one's beside the source row.
        let mut row = sides.combined(None, None);
        for s in 0..sides.source_rows.len() {
            self.check_cancel()?;
            row[sides.target_width..].clone_from_slice(&sides.source_rows[s]);
            let mut any = false;
            for t in 0..sides.target.len() {
                row[..sides.target_width].clone_from_slice(&sides.target[t].shown);
                let env = Env { cols: &sides.cols, row: &row, group: None, outer: None };
                if is_true(&self.eval(on, &env)?) {
                    pairs.push((t, s));
                    any = true;
                }
            }
            if !any {
                unmatched.push(s);
            }
        }
        Ok((pairs, unmatched))
    }

    /// The first clause whose predicate (if any) holds for `row`.
    fn first_clause<'c>(
        &self,
        clauses: &[&'c MergeClause],
        cols: &[ColRef],
        row: &[Value],
    ) -> Result<Option<&'c MergeClause>> {
        let env = Env { cols, row, group: None, outer: None };
        for clause in clauses {
            match &clause.predicate {
                Some(predicate) if !is_true(&self.eval(predicate, &env)?) => continue,
                _ => return Ok(Some(clause)),
            }
        }
        Ok(None)
    }

    /// A MATCHED or NOT MATCHED BY SOURCE clause's UPDATE or DELETE of target row `t`.
    fn change_target(
        &mut self,
        sides: &Sides,
        clause: &MergeClause,
        t: usize,
        row: &[Value],
    ) -> Result<MergeActionKind> {
        let MatchedRow { locator, stored, shown } = &sides.target[t];
        let table = &sides.table;
        match &clause.action {
            MergeAction::Delete { .. } => {
                self.note_table_change(table, None);
                table.delete(self.db(), locator, stored)?;
                self.capture_output(Some(shown), None);
                Ok(MergeActionKind::Delete)
            }
            MergeAction::Update(update) => {
                let MergeUpdateKind::Set(assignments) = &update.kind else {
                    return Err(not_supported("UPDATE *"));
                };
                let targets = Self::update_targets(table, assignments)?;
                self.note_update_targets(table, &targets);
                let env = Env { cols: &sides.cols, row, group: None, outer: None };
                let mut given: Vec<Option<Value>> = shown.iter().cloned().map(Some).collect();
                for (p, e) in &targets {
                    given[*p] = Some(self.eval(e, &env)?);
                }
                let new = self.complete_row(table, given, &[], "UPDATE")?;
                table.update(self.db(), locator, stored, &new)?;
                self.capture_output(Some(shown), Some(&new));
                Ok(MergeActionKind::Update)
            }
            // The front end refuses it (10712) before the statement runs.
            MergeAction::Insert(_) => Err(not_supported("INSERT in this clause")),
            MergeAction::DoNothing { .. } => Err(not_supported("DO NOTHING")),
        }
    }

    /// A NOT MATCHED clause's INSERT target: the table, the places of the columns it names
    /// and the table's defaults.
    fn merge_insert_target(&mut self, sides: &Sides, clause: &MergeClause) -> Result<InsertTarget> {
        // The front end refuses UPDATE and DELETE here (10711) before the statement runs.
        let MergeAction::Insert(insert) = &clause.action else {
            return Err(not_supported("UPDATE or DELETE in this clause"));
        };
        let columns: Vec<String> = insert.columns.iter().map(crate::front::last_part).collect();
        self.insert_target(&sides.table.name, &columns)
    }

    /// A NOT MATCHED clause's INSERT, its values evaluated over the source row.
    fn merge_insert(
        &mut self,
        sides: &Sides,
        clause: &MergeClause,
        target: &InsertTarget,
        row: &[Value],
    ) -> Result<()> {
        let MergeAction::Insert(insert) = &clause.action else {
            return Err(not_supported("UPDATE or DELETE in this clause"));
        };
        let env = Env { cols: &sides.cols, row, group: None, outer: None };
        let values = match &insert.kind {
            MergeInsertKind::Values(values) => {
                let [one] = values.rows.as_slice() else {
                    return Err(not_supported("several VALUES rows in one INSERT"));
                };
                let mut out = Vec::with_capacity(one.content.len());
                for e in &one.content {
                    out.push(self.eval(e, &env)?);
                }
                out
            }
            MergeInsertKind::Row | MergeInsertKind::Wildcard => {
                return Err(not_supported("INSERT ROW or INSERT *"));
            }
        };
        self.insert_rows(target, vec![values], true)?;
        Ok(())
    }
}
