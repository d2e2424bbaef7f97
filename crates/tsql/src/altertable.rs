//! ALTER TABLE ... ADD columns, DROP COLUMN and ALTER COLUMN.
//!
//! What it reproduces: SQL Server's rules for which columns may be added and dropped, and
//! what existing rows hold afterwards.
//! - ADD: a nullable column is NULL in the existing rows, even with a DEFAULT (unless
//!   `WITH VALUES`, which sqlparser does not read); a NOT NULL column with a DEFAULT holds
//!   the default; an IDENTITY column numbers the existing rows from its seed; a NOT NULL
//!   column with neither is refused on a table that has rows (4901). A name the table has
//!   already is 2705.
//! - DROP COLUMN: a column that does not exist is 4924; one an index or a PRIMARY KEY or
//!   UNIQUE constraint uses is 5074 (naming the index) then 4922; the table's last column
//!   is 4923.
//! - ALTER COLUMN c type [NULL | NOT NULL]: every value is converted to the new type (245 and
//!   the other conversion errors, 2628 for a string that would be truncated, 515 for a NULL
//!   in a column made NOT NULL); without NULL or NOT NULL the column becomes nullable, as in
//!   SQL Server with its default ANSI_NULL_DFLT_ON. A column an index uses is 5074 then 4922;
//!   a missing one 4924.
//!
//! Deviation: SQL Server adds a nullable column, and drops any column, in its metadata alone
//! (instantly; a dropped column's bytes stay in the rows until a rebuild). extentdb rebuilds
//! the table in the statement's transaction instead ([`engine::catalog::Catalog::rebuild_table`]):
//! the rows are read, converted and inserted into new allocation units, fully logged, so the
//! statement takes time and log in proportion to the table, and its rows are held in memory
//! while it runs (SQL Server's ALTER COLUMN rewrites the rows too, in place). The columns one
//! statement adds or drops go in one rebuild, all or none. ADD with a PRIMARY KEY or UNIQUE
//! constraint, and ADD CONSTRAINT, are 40517.

use crate::front::last_part;
use crate::functions::to_storage;
use crate::query::shown_row;
use crate::query::{Env, sql_type_of};
use crate::session::{Failure, Flow, Session};
use crate::session::{check_length, null_not_allowed};
use crate::value::{Result, convert};
use engine::SqlError;
use engine::catalog::{ColumnDef, Table};
use engine::record::{SqlType, Value};
use sqlparser::ast::{AlterTable, AlterTableOperation, ColumnOption, DataType, Expr};
use std::sync::Arc;

/// An added column and what the existing rows get in it.
struct Added {
    def: ColumnDef,
    /// The DEFAULT, evaluated for each existing row when the column is NOT NULL.
    default: Option<Expr>,
}

impl Session {
    /// ALTER TABLE ... ADD columns or DROP COLUMN columns: one rebuild of the table, in one
    /// transaction, so that the statement changes every column it names or none.
    pub(crate) fn alter_table(
        &mut self,
        alter: &AlterTable,
        line: u64,
        out: &mut dyn FnMut(crate::server::Output),
    ) -> std::result::Result<Flow, Failure> {
        let name = last_part(&alter.name);
        let stored = self.catalog_name(&name).map_err(|e| self.fail(e, line))?;
        let mut added = Vec::new();
        let mut dropped = Vec::new();
        for operation in &alter.operations {
            match operation {
                AlterTableOperation::AddColumn { column_keyword: false, column_def, .. } => {
                    added.push(added_column(column_def, &name).map_err(|e| self.fail(e, line))?);
                }
                AlterTableOperation::AddColumn { .. } => {
                    return Err(self.fail(near_column_keyword(), line));
                }
                AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                    dropped.extend(column_names.iter().map(|c| (c.value.clone(), *if_exists)));
                }
                other => {
                    let text = other.to_string();
                    let word = text.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                    let message = format!(
                        "Keyword or statement option 'ALTER TABLE {}' is not supported in this version of extentdb.",
                        word.to_uppercase()
                    );
                    return Err(self.fail(SqlError::new(40517, 16, 1, message), line));
                }
            }
        }
        if !added.is_empty() {
            self.atomic(line, |s| s.add_columns(&stored, added))?;
        }
        if !dropped.is_empty() {
            self.drop_columns(&stored, &dropped, line, out)?;
        }
        Ok(Flow::Next)
    }

    /// ALTER TABLE table ADD column_def [, column_def ...].
    pub(crate) fn add_columns_statement(
        &mut self,
        table_name: &str,
        definitions: &[sqlparser::ast::ColumnDef],
        line: u64,
    ) -> std::result::Result<Flow, Failure> {
        let stored = self.catalog_name(table_name).map_err(|e| self.fail(e, line))?;
        let mut added = Vec::new();
        for definition in definitions {
            added.push(added_column(definition, table_name).map_err(|e| self.fail(e, line))?);
        }
        self.atomic(line, |s| s.add_columns(&stored, added))?;
        Ok(Flow::Next)
    }

    /// ALTER TABLE table ALTER COLUMN column type [NULL | NOT NULL].
    pub(crate) fn alter_column(
        &mut self,
        table_name: &str,
        column: &str,
        data_type: &DataType,
        nullable: Option<bool>,
        line: u64,
        out: &mut dyn FnMut(crate::server::Output),
    ) -> std::result::Result<Flow, Failure> {
        let stored = self.catalog_name(table_name).map_err(|e| self.fail(e, line))?;
        let table = self.table_for_alter(&stored).map_err(|e| self.fail(e, line))?;
        let verb = "ALTER TABLE ALTER COLUMN";
        let position = self.column_to_change(&table, column, verb, line, out)?;
        let mut changed = table.columns[position].clone();
        changed.column.sql_type = sql_type_of(data_type).map_err(|e| self.fail(e, line))?;
        changed.column.nullable = changed.identity.is_none() && nullable.unwrap_or(true);
        let mut columns = table.columns.clone();
        columns[position] = changed.clone();
        check_row_size(&columns, &table.name).map_err(|e| self.fail(e, line))?;
        let old_to_new: Vec<Option<usize>> = (0..columns.len()).map(Some).collect();
        let database = self.db().name.clone();
        self.atomic(line, |s| {
            let mut convert_row = |mut row: Vec<Value>| -> Result<Vec<Value>> {
                let old = std::mem::replace(&mut row[position], Value::Null);
                let new = convert(&old, changed.column.sql_type)?;
                check_length(&new, &old, &changed, &table, &database)?;
                if matches!(new, Value::Null) && !changed.column.nullable {
                    let name = &changed.column.name;
                    return Err(null_not_allowed(name, &database, &table.name, "UPDATE"));
                }
                row[position] = new;
                Ok(row)
            };
            s.rebuild(&table, columns, &old_to_new, &mut convert_row)
        })?;
        Ok(Flow::Next)
    }

    /// The position of a column that DROP COLUMN or ALTER COLUMN may change: 4924 if the table
    /// has no such column, 5074 then 4922 if an index or constraint uses it.
    fn column_to_change(
        &self,
        table: &Table,
        column: &str,
        verb: &str,
        line: u64,
        out: &mut dyn FnMut(crate::server::Output),
    ) -> std::result::Result<usize, Failure> {
        let Some(position) = table.column_index(column) else {
            let message = format!(
                "{verb} failed because column '{column}' does not exist in table '{}'.",
                table.name
            );
            return Err(self.fail(SqlError::new(4924, 16, 1, message), line));
        };
        let dependent = table.indexes.iter().find(|i| i.key_columns.contains(&position));
        if let Some(index) = dependent {
            // A constraint's index is an "object" to SQL Server; a plain index is an index.
            let kind =
                if index.primary_key || index.is_unique_constraint() { "object" } else { "index" };
            let message = format!("The {kind} '{}' is dependent on column '{column}'.", index.name);
            let error = SqlError::new(5074, 16, 1, message);
            out(crate::server::Output::Error { error, line, procedure: None });
            let message =
                format!("{verb} {column} failed because one or more objects access this column.");
            return Err(self.fail(SqlError::new(4922, 16, 9, message), line));
        }
        Ok(position)
    }

    fn table_for_alter(&self, stored: &str) -> Result<Arc<Table>> {
        self.db().catalog()?.table(stored).ok_or_else(|| engine::catalog::invalid_object(stored))
    }

    /// ADD: 2705 for a name the table has (or the statement gives twice), 4901 for a NOT NULL
    /// column with nothing to fill the existing rows with; then one rebuild.
    fn add_columns(&mut self, stored: &str, added: Vec<Added>) -> Result<()> {
        let table = self.table_for_alter(stored)?;
        let has_rows = table.count_rows(self.db())? > 0;
        let mut columns = table.columns.clone();
        for add in &added {
            let name = &add.def.column.name;
            if columns.iter().any(|c| c.column.name.eq_ignore_ascii_case(name)) {
                return Err(SqlError::new(
                    2705,
                    16,
                    4,
                    format!(
                        "Column names in each table must be unique. Column name '{name}' in table '{}' is specified more than once.",
                        table.name
                    ),
                ));
            }
            let column = &add.def;
            let fills =
                column.identity.is_some() || (add.default.is_some() && !column.column.nullable);
            if has_rows && !column.column.nullable && !fills {
                return Err(SqlError::new(
                    4901,
                    16,
                    1,
                    format!(
                        "ALTER TABLE only allows columns to be added that can contain nulls, or have a DEFAULT definition specified, or the column being added is an identity or timestamp column, or alternatively if none of the previous conditions are satisfied the table must be empty to allow addition of this column. Column '{name}' cannot be added to non-empty table '{}' because it does not satisfy these conditions.",
                        table.name
                    ),
                ));
            }
            columns.push(add.def.clone());
        }
        check_row_size(&columns, &table.name)?;
        let old_to_new: Vec<Option<usize>> = (0..table.columns.len()).map(Some).collect();
        let mut next_identity: Vec<Option<i64>> =
            added.iter().map(|a| a.def.identity.map(|(seed, _)| seed)).collect();
        let database = self.db().name.clone();
        let mut convert_row = |mut row: Vec<Value>| -> Result<Vec<Value>> {
            for (add, next) in added.iter().zip(next_identity.iter_mut()) {
                let column = &add.def;
                let value = match (column.identity, &add.default) {
                    (Some((_, step)), _) => {
                        let value = next.expect("an identity column");
                        *next = Some(value + step);
                        Value::BigInt(value)
                    }
                    (None, Some(expr)) if !column.column.nullable => {
                        self.eval(expr, &Env::empty())?
                    }
                    _ => Value::Null,
                };
                let converted = convert(&value, column.column.sql_type)?;
                check_length(&converted, &value, column, &table, &database)?;
                row.push(converted);
            }
            Ok(row)
        };
        self.rebuild(&table, columns, &old_to_new, &mut convert_row)
    }

    /// Rebuilds the table with `columns` ([`engine::catalog::Catalog::rebuild_table`]).
    /// `convert` sees each row as queries see it, in the T-SQL level's units
    /// ([`crate::query::shown_row`]: time and datetime2 in 100 ns whatever their precision),
    /// and gives the new row in them; the row is stored in the new columns' units, as an
    /// INSERT stores it ([`crate::functions::to_storage`]).
    fn rebuild(
        &self,
        table: &Table,
        columns: Vec<ColumnDef>,
        old_to_new: &[Option<usize>],
        convert: &mut dyn FnMut(Vec<Value>) -> Result<Vec<Value>>,
    ) -> Result<()> {
        let types: Vec<SqlType> = columns.iter().map(|c| c.column.sql_type).collect();
        let mut in_storage_units = |row: Vec<Value>| -> Result<Vec<Value>> {
            let converted = convert(shown_row(table, row))?;
            Ok(converted.into_iter().zip(&types).map(|(v, t)| to_storage(v, *t)).collect())
        };
        let catalog = self.db().catalog()?;
        catalog.rebuild_table(self.db(), &table.name, columns, old_to_new, &mut in_storage_units)
    }

    /// DROP COLUMN: every named column checked first (4924, 5074 then 4922, 4923 when none
    /// would be left), then one rebuild without them.
    fn drop_columns(
        &mut self,
        stored: &str,
        dropped: &[(String, bool)],
        line: u64,
        out: &mut dyn FnMut(crate::server::Output),
    ) -> std::result::Result<(), Failure> {
        let table = self.table_for_alter(stored).map_err(|e| self.fail(e, line))?;
        let mut positions = Vec::new();
        for (column, if_exists) in dropped {
            if *if_exists && table.column_index(column).is_none() {
                continue;
            }
            let verb = "ALTER TABLE DROP COLUMN";
            let position = self.column_to_change(&table, column, verb, line, out)?;
            if !positions.contains(&position) {
                positions.push(position);
            }
            if positions.len() == table.columns.len() {
                let message = format!(
                    "ALTER TABLE DROP COLUMN failed because '{column}' is the only data column in table '{}'. A table must have at least one data column.",
                    table.name
                );
                return Err(self.fail(SqlError::new(4923, 16, 1, message), line));
            }
        }
        if positions.is_empty() {
            return Ok(());
        }
        let mut old_to_new = Vec::with_capacity(table.columns.len());
        let mut columns = Vec::new();
        for (position, column) in table.columns.iter().enumerate() {
            if positions.contains(&position) {
                old_to_new.push(None);
            } else {
                old_to_new.push(Some(columns.len()));
                columns.push(column.clone());
            }
        }
        self.atomic(line, |s| {
            let mut convert_row = |row: Vec<Value>| -> Result<Vec<Value>> {
                let kept = row.into_iter().enumerate().filter(|(i, _)| !positions.contains(i));
                Ok(kept.map(|(_, value)| value).collect())
            };
            s.rebuild(&table, columns, &old_to_new, &mut convert_row)
        })
    }
}

/// `ADD COLUMN c ...` is T-SQL's 156 (SQL Server's ADD takes no COLUMN keyword).
fn near_column_keyword() -> SqlError {
    SqlError::new(156, 15, 1, "Incorrect syntax near the keyword 'COLUMN'.")
}

/// The column an ADD item defines, and the DEFAULT the existing rows may get.
fn added_column(def: &sqlparser::ast::ColumnDef, table: &str) -> Result<Added> {
    crate::query::check_column_size(def)?;
    let mut column = ColumnDef::new(&def.name.value, sql_type_of(&def.data_type)?, true);
    let mut default = None;
    for option in &def.options {
        match &option.option {
            ColumnOption::NotNull => column.column.nullable = false,
            ColumnOption::Null => column.column.nullable = true,
            ColumnOption::Default(expr) => {
                column.default_sql = Some(expr.to_string());
                default = Some(expr.clone());
            }
            ColumnOption::Identity(identity) => {
                column.identity = Some(crate::query::identity_seed_step(&identity.to_string()));
                column.column.nullable = false;
            }
            other => {
                let message = format!(
                    "Keyword or statement option '{}' in ALTER TABLE {table} ADD is not supported in this version of extentdb.",
                    other.to_string().to_uppercase()
                );
                return Err(SqlError::new(40517, 16, 1, message));
            }
        }
    }
    Ok(Added { def: column, default })
}

/// 1701 when the smallest row of the new column list would not fit a page.
fn check_row_size(columns: &[ColumnDef], table: &str) -> Result<()> {
    let plain: Vec<engine::record::Column> = columns.iter().map(|c| c.column.clone()).collect();
    let min_row_bytes = engine::record::min_record_bytes(&plain);
    if min_row_bytes <= engine::record::MAX_RECORD_BYTES {
        return Ok(());
    }
    let fixed_bytes: usize = plain.iter().filter_map(|c| c.sql_type.fixed_size()).sum();
    let overhead = min_row_bytes.saturating_sub(fixed_bytes);
    Err(SqlError::new(
        1701,
        16,
        1,
        format!(
            "Creating or altering table '{table}' failed because the minimum row size would be {min_row_bytes}, including {overhead} bytes of internal overhead. This exceeds the maximum allowable table row size of 8060 bytes."
        ),
    ))
}
