//! sp_help: every object of the database, or one table's report in SQL Server's result sets.
//!
//! `EXEC sp_help` lists the objects (Name, Owner, Object_type) and then the user-defined
//! types (none here). `EXEC sp_help 'table'` gives, as SQL Server does: the object (Name,
//! Owner, Type, Created_datetime); its columns (Column_name, Type, Computed, Length, Prec,
//! Scale, Nullable, TrimTrailingBlanks, FixedLenNullInSource, Collation); its identity column;
//! its ROWGUIDCOL column; the filegroup its data is on; its indexes (as sp_helpindex); its
//! constraints (PRIMARY KEY, UNIQUE, DEFAULT); and the message that no foreign key references
//! it. A procedure gets the object's result set alone. An object the database does not have
//! is 15009.
//!
//! Deviations: a DEFAULT has no constraint object in extentdb, so its row names it
//! `DF__table__column` (SQL Server adds a hexadecimal suffix to a generated name); Prec and
//! Scale are shown for the numeric, date and time types, as sys.columns gives them.

use crate::server::{Output, ResultSet};
use crate::session::Session;
use crate::sysviews::{columns, text};
use crate::value;
use engine::SqlError;
use engine::catalog::{ColumnDef, IndexKind, Table};
use engine::record::{SqlType, Value};

fn rows_of(names: &[&str], rows: Vec<Vec<Value>>) -> Output {
    Output::Rows(ResultSet { columns: columns(names), rows, types: Vec::new() })
}

/// A char(5) field of sp_help's column report (Prec, Scale): the number, padded; blanks
/// for a type without one.
fn char5(value: Option<u8>) -> Value {
    let shown = value.map(|v| v.to_string()).unwrap_or_default();
    Value::Text(format!("{shown:<5}"))
}

fn has_precision(sql_type: SqlType) -> bool {
    use SqlType::*;
    matches!(
        sql_type,
        TinyInt
            | SmallInt
            | Int
            | BigInt
            | Decimal { .. }
            | Float
            | Real
            | Money
            | Date
            | Time(_)
            | DateTime2(_)
    )
}

fn column_row(def: &ColumnDef) -> Vec<Value> {
    let sql_type = def.column.sql_type;
    let (type_name, _, max_length, precision, scale) = crate::catalogviews::type_info(sql_type);
    let numeric = has_precision(sql_type);
    let padded_type = matches!(
        sql_type,
        SqlType::Char(_) | SqlType::VarChar(_) | SqlType::Binary(_) | SqlType::VarBinary(_)
    );
    let character = matches!(
        sql_type,
        SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_)
    );
    let yes_no = |b: bool| text(if b { "yes" } else { "no" });
    vec![
        Value::Text(def.column.name.clone()),
        text(type_name),
        text("no"),
        Value::Int(i32::from(max_length)),
        char5(numeric.then_some(precision)),
        char5(numeric.then_some(scale)),
        yes_no(def.column.nullable),
        if padded_type { text("no") } else { text("(n/a)") },
        if padded_type { yes_no(def.column.nullable) } else { text("(n/a)") },
        if character { text(engine::record::COLLATION_NAME) } else { Value::Null },
    ]
}

impl Session {
    /// sp_help [object].
    pub(crate) fn sp_help(
        &self,
        object: Option<&Value>,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let Some(name) = object.filter(|v| !matches!(v, Value::Null)).map(value::display) else {
            return self.sp_help_all(out);
        };
        let short = name.rsplit('.').next().unwrap_or(&name).trim_matches(['[', ']']).to_string();
        let db = self.db();
        let catalog = db.catalog()?;
        let created = catalog.created_dates(db)?;
        if let Some(table) = catalog.table(&self.catalog_name(&short)?) {
            let created = created.get(&table.object_id).cloned().unwrap_or(Value::Null);
            return self.sp_help_table(&table, created, out);
        }
        if let Some(module) = catalog.module(&short) {
            let created = created.get(&module.object_id).cloned().unwrap_or(Value::Null);
            let row = vec![
                Value::Text(module.name.clone()),
                text("dbo"),
                text("stored procedure"),
                created,
            ];
            out(rows_of(&["Name", "Owner", "Type", "Created_datetime"], vec![row]));
            return Ok(());
        }
        Err(SqlError::new(
            15009,
            16,
            1,
            format!(
                "The object '{name}' does not exist in database '{}' or is invalid for this operation.",
                db.name
            ),
        ))
    }

    /// sp_help with no argument: the database's objects, then its user-defined types.
    fn sp_help_all(&self, out: &mut dyn FnMut(Output)) -> Result<(), SqlError> {
        let catalog = self.db().catalog()?;
        let mut rows = Vec::new();
        let mut tables = catalog.tables();
        tables.retain(|t| !crate::temp::is_stored_temporary(&t.name));
        tables.sort_by_key(|t| t.name.to_lowercase());
        for table in tables {
            rows.push(vec![Value::Text(table.name.clone()), text("dbo"), text("user table")]);
        }
        let mut modules = catalog.modules();
        modules.sort_by_key(|m| m.name.to_lowercase());
        for module in modules {
            rows.push(vec![
                Value::Text(module.name.clone()),
                text("dbo"),
                text("stored procedure"),
            ]);
        }
        out(rows_of(&["Name", "Owner", "Object_type"], rows));
        let types = [
            "User_type",
            "Storage_type",
            "Length",
            "Prec",
            "Scale",
            "Nullable",
            "Default_name",
            "Rule_name",
            "Collation",
        ];
        out(rows_of(&types, Vec::new()));
        Ok(())
    }

    fn sp_help_table(
        &self,
        table: &Table,
        created: Value,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let object =
            vec![Value::Text(table.name.clone()), text("dbo"), text("user table"), created];
        out(rows_of(&["Name", "Owner", "Type", "Created_datetime"], vec![object]));
        let column_names = [
            "Column_name",
            "Type",
            "Computed",
            "Length",
            "Prec",
            "Scale",
            "Nullable",
            "TrimTrailingBlanks",
            "FixedLenNullInSource",
            "Collation",
        ];
        out(rows_of(&column_names, table.columns.iter().map(column_row).collect()));
        let identity = match table.columns.iter().find(|c| c.identity.is_some()) {
            Some(c) => {
                let (seed, step) = c.identity.expect("found by it");
                vec![
                    Value::Text(c.column.name.clone()),
                    Value::BigInt(seed),
                    Value::BigInt(step),
                    Value::Int(0),
                ]
            }
            None => {
                vec![text("No identity column defined."), Value::Null, Value::Null, Value::Null]
            }
        };
        out(rows_of(&["Identity", "Seed", "Increment", "Not For Replication"], vec![identity]));
        let rowguid = table.columns.iter().find(|c| c.rowguidcol).map(|c| c.column.name.clone());
        let rowguid = rowguid.unwrap_or_else(|| "No rowguidcol column defined.".into());
        out(rows_of(&["RowGuidCol"], vec![vec![Value::Text(rowguid)]]));
        let filegroup = self.db().unit_filegroup_name(table.indexes[0].au_id);
        let filegroup = filegroup.unwrap_or_else(|| "PRIMARY".into());
        out(rows_of(&["Data_located_on_filegroup"], vec![vec![Value::Text(filegroup)]]));
        self.sp_helpindex(Some(&Value::Text(table.name.clone())), out)?;
        let constraints = constraint_rows(table);
        if constraints.is_empty() {
            out(Output::Message(format!(
                "No constraints are defined on object '{}', or you do not have permissions.",
                table.qualified_name()
            )));
        } else {
            let names = [
                "constraint_type",
                "constraint_name",
                "delete_action",
                "update_action",
                "status_enabled",
                "status_for_replication",
                "constraint_keys",
            ];
            out(rows_of(&names, constraints));
        }
        out(Output::Message(format!(
            "No foreign keys reference table '{}', or you do not have permissions.",
            table.qualified_name()
        )));
        Ok(())
    }
}

/// sp_help's constraint rows: PRIMARY KEY and UNIQUE constraints (from their indexes), then
/// each column's DEFAULT.
fn constraint_rows(table: &Table) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    let na = || text("(n/a)");
    for index in &table.indexes {
        if !index.primary_key && !index.is_unique_constraint() {
            continue;
        }
        let kind = if index.primary_key { "PRIMARY KEY" } else { "UNIQUE" };
        let clustering =
            if index.kind == IndexKind::Clustered { "clustered" } else { "non-clustered" };
        let keys: Vec<&str> =
            index.key_columns.iter().map(|k| table.columns[*k].column.name.as_str()).collect();
        rows.push(vec![
            Value::Text(format!("{kind} ({clustering})")),
            Value::Text(index.name.clone()),
            na(),
            na(),
            na(),
            na(),
            Value::Text(keys.join(", ")),
        ]);
    }
    for column in &table.columns {
        let Some(default) = &column.default_sql else { continue };
        rows.push(vec![
            Value::Text(format!("DEFAULT on column {}", column.column.name)),
            Value::Text(format!("DF__{}__{}", table.name, column.column.name)),
            na(),
            na(),
            na(),
            na(),
            Value::Text(format!("({default})")),
        ]);
    }
    rows
}
