//! DBCC CHECKDB, CHECKFILEGROUP and CHECKTABLE (reference §8): the allocation checks of
//! CHECKALLOC, then every table's units (the system tables first, then user tables by object
//! id), each checked by `engine::dbcc` with up to MAXDOP workers; the messages SQL Server
//! prints, in its order:
//!
//! ```text
//! DBCC results for 'db'.
//! DBCC results for 'sys.sysschobjs'.
//! There are 12 rows in 1 pages for object "sys.sysschobjs".
//! ... errors of a table, then 8990 for it when it has any ...
//! CHECKDB found 0 allocation errors and 0 consistency errors in database 'db'.
//! repair_allow_data_loss is the minimum repair level for the errors found by DBCC CHECKDB (db).
//! ```
//!
//! The logical check: each nonclustered index holds exactly one entry per row of the table.
//! Its first pass runs with the page scans (sums of hashed index records, `engine::dbcc::
//! Logical`); when a table's sums differ, the deep dive matches rows and entries one by one
//! (8951 with 8955 for a row without its entry, 8952 with 8956 for an entry without its row).
//! It is skipped when the table's pages had errors.
//!
//! CHECKFILEGROUP is the same check limited to one filegroup: its files' allocation, the
//! tables whose heap or clustered index is in it with their nonclustered indexes there (one in
//! another filegroup is skipped, as SQL Server documents), and the system tables for PRIMARY.
//!
//! Options: NO_INFOMSGS (only errors and, when there are errors, the summaries), PHYSICAL_ONLY
//! (page headers, checksums, record structure and allocation; no facts are matched and no
//! logical check runs; only the header and the summary are printed), MAXDOP = n (0: every
//! CPU; without it, sp_configure's 'max degree of parallelism', capped by the CPUs), NOINDEX
//! (nonclustered indexes are skipped), ALL_ERRORMSGS, TABLOCK, DATA_PURITY and
//! EXTENDED_LOGICAL_CHECKS (accepted; the checks they name either always run here or do not
//! exist). Trace flag 2528 turns parallel checking off. The errorlog gets 8957 when the
//! command ends.
//!
//! Deviations: no internal database snapshot. Each user table is checked under a shared table
//! lock, as WITH TABLOCK does in SQL Server (writers of that table wait; the lock ends with the
//! table's check, or with the session's transaction if one is open); the system tables are
//! read without a lock, and the allocation checks latch one map page at a time, so DDL and
//! allocations running meanwhile can show as errors: run it on a quiet database. There is no
//! Service Broker, indexed view or CHECKCATALOG phase, and no repair: the REPAIR_* options are
//! 40517, as are WITH TABLERESULTS and ESTIMATEONLY.

use crate::dbcc::Dbcc;
use crate::server::Output;
use crate::session::Session;
use engine::SqlError;
use engine::catalog::{IndexRowMismatch, Table};
use engine::configuration::MAX_DEGREE_OF_PARALLELISM;
use engine::database::Database;
use engine::dbcc::{self, Finding, Logical, Owners, RepairLevel, Structure, UnitName, UnitOptions};
use engine::lock::LockMode;
use engine::record::Value;
use std::sync::Arc;
use std::time::Instant;

/// Trace flag 2528: CHECKDB, CHECKFILEGROUP and CHECKTABLE check without parallelism.
pub const TF_NO_PARALLEL_CHECKS: u16 = 2528;

/// The WITH options that change what runs.
struct CheckOptions {
    /// NO_INFOMSGS: no informational message at all when nothing is found.
    no_infomsgs: bool,
    /// Per-object messages (`DBCC results for`, `There are n rows`): not with NO_INFOMSGS
    /// or PHYSICAL_ONLY, which prints only the header and the summary.
    object_info: bool,
    physical_only: bool,
    no_index: bool,
    maxdop: usize,
    /// The options as the errorlog's 8957 line shows them (`WITH no_infomsgs, maxdop = 2`).
    shown: String,
}

/// One object's outcome.
struct ObjectCheck {
    name: String,
    object_id: i32,
    rows: u64,
    pages: u64,
    findings: Vec<Finding>,
}

/// What CHECKDB and CHECKTABLE print after the objects: their word for themselves and what
/// they checked, as 8958 names it (`db` or `db.dbo.t`).
struct Command<'a> {
    word: &'static str,
    target: String,
    db: &'a Database,
}

/// The PRIMARY filegroup's id, where the system tables are.
const PRIMARY_FILEGROUP_ID: u16 = 1;

/// CHECKFILEGROUP's filegroup: by name, by id, or PRIMARY for none or 0. An id that is no
/// filegroup's is 8932; a name that is none's is 1921 (SQL Server's number for a name here is
/// not in our sources: 1921 is what CREATE TABLE and CREATE INDEX ... ON give for one).
fn filegroup_to_check(db: &Database, arg: Option<&Value>) -> Result<u16, SqlError> {
    let filegroups = db.filegroups();
    match arg {
        None | Some(Value::Null) => Ok(PRIMARY_FILEGROUP_ID),
        Some(Value::Text(name)) => {
            let found = filegroups.iter().find(|fg| fg.1.eq_ignore_ascii_case(name));
            found.map(|fg| fg.0).ok_or_else(|| SqlError::invalid_filegroup(name))
        }
        Some(other) => {
            let id = crate::value::as_i64(other).ok_or_else(incorrect)?;
            if id == 0 {
                return Ok(PRIMARY_FILEGROUP_ID);
            }
            let found = filegroups.iter().find(|fg| i64::from(fg.0) == id).map(|fg| fg.0);
            found.ok_or_else(|| {
                SqlError::new(
                    8932,
                    16,
                    1,
                    format!(
                        "Could not find filegroup ID {id} in sys.filegroups for database '{}'.",
                        db.name
                    ),
                )
            })
        }
    }
}

fn not_supported(what: &str) -> SqlError {
    crate::dbddl::unsupported_error(what)
}

fn incorrect() -> SqlError {
    SqlError::new(
        2526,
        16,
        3,
        "Incorrect DBCC statement. Check the documentation for the correct DBCC syntax and options.",
    )
}

impl Session {
    /// DBCC CHECKDB [(db | id | 0 [, NOINDEX])] [WITH options].
    pub(crate) fn dbcc_checkdb(
        &mut self,
        dbcc: &Dbcc,
        args: &[Value],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let options = self.check_options(dbcc, args.get(1))?;
        let db = self.dbcc_database(args.first())?;
        let started = Instant::now();
        let (allocation_errors, objects) =
            self.check_scope(&db, &options, None, "CHECKDB", line, out)?;
        let command = Command { word: "CHECKDB", target: db.name.clone(), db: &db };
        let errors = self.summarize(&command, allocation_errors, &objects, &options, started, out);
        if errors == 0 {
            db.set_last_known_good(self.server.instance.clock.now_local())?;
        }
        Ok(())
    }

    /// DBCC CHECKFILEGROUP [(filegroup | filegroup_id | 0 [, NOINDEX])] [WITH options]: the
    /// allocation checks of the filegroup's files, then every table whose heap or clustered
    /// index is in it (with its nonclustered indexes in the same filegroup), and the system
    /// tables when it is PRIMARY, where they are.
    pub(crate) fn dbcc_checkfilegroup(
        &mut self,
        dbcc: &Dbcc,
        args: &[Value],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let options = self.check_options(dbcc, args.get(1))?;
        let db = self.dbcc_database(None)?;
        let fg_id = filegroup_to_check(&db, args.first())?;
        let started = Instant::now();
        let (allocation_errors, objects) =
            self.check_scope(&db, &options, Some(fg_id), "CHECKFILEGROUP", line, out)?;
        let command = Command { word: "CHECKFILEGROUP", target: db.name.clone(), db: &db };
        self.summarize(&command, allocation_errors, &objects, &options, started, out);
        Ok(())
    }

    /// What CHECKDB (`filegroup` None) and CHECKFILEGROUP check, reported as it goes: the
    /// header, the allocation checks (of the filegroup's files), the system tables (which are
    /// in PRIMARY), then the user tables whose data is in the filegroup, by object id, and the
    /// allocation errors no object owns. Returns the allocation error count and the objects.
    fn check_scope(
        &mut self,
        db: &Arc<Database>,
        options: &CheckOptions,
        filegroup: Option<u16>,
        word: &str,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(usize, Vec<ObjectCheck>), SqlError> {
        if !options.no_infomsgs {
            out(Output::Message(format!("DBCC results for '{}'.", db.name)));
        }
        let allocation_errors = db.check_allocation_of(filegroup);
        for error in &allocation_errors {
            self.emit(error.clone(), line, out);
        }
        let catalog = db.catalog()?;
        let owners = owners_of(&catalog);
        let mut objects = Vec::new();
        if filegroup.is_none_or(|fg| fg == PRIMARY_FILEGROUP_ID) {
            for (object_id, name, tree) in catalog.system_tables() {
                let unit = UnitName { object_id, index_id: 1, au_id: tree.au_id };
                let check =
                    dbcc::check_unit(db, unit, &Structure::Tree(tree), &owners, options.unit())?;
                let check = ObjectCheck {
                    name: name.to_string(),
                    object_id,
                    rows: check.rows,
                    pages: check.data_pages,
                    findings: check.findings,
                };
                self.report_object(&check, options, word, line, out);
                objects.push(check);
            }
        }
        let mut tables = catalog.tables();
        if let Some(fg_id) = filegroup {
            tables.retain(|t| db.unit_filegroup_id(t.indexes[0].au_id) == Some(fg_id));
        }
        tables.sort_by_key(|t| t.object_id);
        for table in tables {
            let check = self.check_table(db, &table, &owners, options, filegroup)?;
            self.report_object(&check, options, word, line, out);
            objects.push(check);
        }
        if !allocation_errors.is_empty() {
            out(Output::Message(format!(
                "{word} found {} allocation errors and 0 consistency errors not associated with any single object.",
                allocation_errors.len()
            )));
        }
        Ok((allocation_errors.len(), objects))
    }

    /// DBCC CHECKTABLE ('table' [, NOINDEX | index_id]) [WITH options].
    pub(crate) fn dbcc_checktable(
        &mut self,
        dbcc: &Dbcc,
        args: &[Value],
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let Some(Value::Text(name)) = args.first() else {
            return Err(SqlError::new(
                2583,
                16,
                1,
                "An incorrect number of parameters was given to the DBCC statement.",
            ));
        };
        let options = self.check_options(dbcc, args.get(1))?;
        let db = self.dbcc_database(None)?;
        let short = name.rsplit('.').next().unwrap_or(name).trim_matches(['[', ']']);
        let catalog = db.catalog()?;
        let table = catalog.table(&self.catalog_name(short)?).ok_or_else(|| {
            SqlError::new(2501, 16, 45, format!("Cannot find a table or object with the name \"{name}\". Check the system catalog."))
        })?;
        let started = Instant::now();
        let owners = owners_of(&catalog);
        let check = self.check_table(&db, &table, &owners, &options, None)?;
        self.report_object(&check, &options, "CHECKTABLE", line, out);
        let target = format!("{}.{}", db.name, table.qualified_name());
        let command = Command { word: "CHECKTABLE", target, db: &db };
        self.summarize(&command, 0, std::slice::from_ref(&check), &options, started, out);
        Ok(())
    }

    /// The WITH options and the second argument (NOINDEX, a repair option).
    fn check_options(&self, dbcc: &Dbcc, second: Option<&Value>) -> Result<CheckOptions, SqlError> {
        let mut no_index = false;
        match second.map(crate::value::display).map(|s| s.to_uppercase()) {
            None => {}
            Some(word) if word == "NOINDEX" => no_index = true,
            Some(word) if word.starts_with("REPAIR_") => return Err(not_supported(&word)),
            Some(word) if word.parse::<i64>().is_ok() => {} // CHECKTABLE's index id
            Some(_) => return Err(incorrect()),
        }
        let mut shown = Vec::new();
        for option in &dbcc.options {
            match option.as_str() {
                "NO_INFOMSGS"
                | "ALL_ERRORMSGS"
                | "TABLOCK"
                | "DATA_PURITY"
                | "PHYSICAL_ONLY"
                | "EXTENDED_LOGICAL_CHECKS"
                | "MAXDOP" => {}
                "TABLERESULTS" | "ESTIMATEONLY" => return Err(not_supported(option)),
                _ => return Err(incorrect()),
            }
            if option != "MAXDOP" {
                shown.push(option.to_lowercase());
            }
        }
        let physical_only = dbcc.has_option("PHYSICAL_ONLY");
        if physical_only && dbcc.has_option("DATA_PURITY") {
            return Err(SqlError::new(
                2559,
                16,
                1,
                "The 'PHYSICAL_ONLY' and 'DATA_PURITY' options are not allowed on the same statement.",
            ));
        }
        // Without WITH MAXDOP, 'max degree of parallelism' in use, capped by the CPUs (0: one
        // worker per CPU).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let configured = self.server.instance.configuration.value_in_use(MAX_DEGREE_OF_PARALLELISM);
        let mut maxdop = match usize::try_from(configured) {
            Ok(0) | Err(_) => cpus,
            Ok(configured) => configured.min(cpus),
        };
        if let Some((_, value)) = dbcc.option_values.iter().find(|(name, _)| name == "MAXDOP") {
            let asked: usize = value.parse().map_err(|_| incorrect())?;
            shown.push(format!("maxdop = {asked}"));
            maxdop = if asked > 0 { asked } else { cpus };
        }
        let flags = &self.server.instance.trace_flags;
        if flags.is_on(TF_NO_PARALLEL_CHECKS)
            || self.session_trace_flags.contains(&TF_NO_PARALLEL_CHECKS)
        {
            maxdop = 1;
        }
        Ok(CheckOptions {
            no_infomsgs: dbcc.has_option("NO_INFOMSGS"),
            object_info: !physical_only && !dbcc.has_option("NO_INFOMSGS"),
            physical_only,
            no_index,
            maxdop,
            shown: if shown.is_empty() {
                String::new()
            } else {
                format!(" WITH {}", shown.join(", "))
            },
        })
    }

    /// One table's units, under a shared table lock (TABLOCK's; no internal snapshot). With
    /// a filegroup (CHECKFILEGROUP's), only the nonclustered indexes in it are checked.
    fn check_table(
        &self,
        db: &Arc<Database>,
        table: &Table,
        owners: &Owners,
        options: &CheckOptions,
        filegroup: Option<u16>,
    ) -> Result<ObjectCheck, SqlError> {
        // Outside a transaction the lock needs one of its own, which ends (writing nothing:
        // it changed nothing) once the table is checked; inside one it is the transaction's.
        let own_transaction = db.trancount() == 0;
        if own_transaction {
            db.begin_tran()?;
        }
        let checked = table
            .lock(db, LockMode::S)
            .and_then(|()| Self::check_units(db, table, owners, options, filegroup));
        if own_transaction {
            db.commit_tran()?;
        }
        checked
    }

    fn check_units(
        db: &Arc<Database>,
        table: &Table,
        owners: &Owners,
        options: &CheckOptions,
        filegroup: Option<u16>,
    ) -> Result<ObjectCheck, SqlError> {
        let mut object = ObjectCheck {
            name: table.qualified_name(),
            object_id: table.object_id,
            rows: 0,
            pages: 0,
            findings: Vec::new(),
        };
        let targets = table.check_targets();
        // Which units are checked: the base always; a nonclustered index unless NOINDEX, or
        // when it is in another filegroup than the one checked.
        let checked: Vec<bool> = targets
            .iter()
            .enumerate()
            .map(|(position, (unit, _))| {
                let in_scope =
                    filegroup.is_none_or(|fg| db.unit_filegroup_id(unit.au_id) == Some(fg));
                position == 0 || (!options.no_index && in_scope)
            })
            .collect();
        // The logical check's first pass runs with the page scans ([`Logical`]); the deep
        // dive only when its sums disagree, and only on indexes whose pages are sound (SQL
        // Server skips it too when their structure is damaged).
        let any_index = checked.iter().skip(1).any(|c| *c);
        let logical_on = any_index && !options.physical_only;
        let (mut expected, mut actual) = (Vec::new(), Vec::new());
        for (position, (unit, structure)) in targets.into_iter().enumerate() {
            if !checked[position] {
                continue;
            }
            let logical = match (logical_on, position) {
                (false, _) => Logical::Off,
                (true, 0) => Logical::Base(table),
                (true, _) => Logical::Index,
            };
            let unit_options = UnitOptions { logical, ..options.unit() };
            let check = dbcc::check_unit(db, unit, &structure, owners, unit_options)?;
            if position == 0 {
                object.rows = check.rows;
                object.pages = check.data_pages;
                // The base's sums are one per nonclustered index: keep those checked.
                let indexes_checked = checked.iter().skip(1);
                let sums = check.digests.into_iter().zip(indexes_checked);
                expected = sums.filter(|(_, c)| **c).map(|(sum, _)| sum).collect();
            } else {
                actual.extend(check.digests);
            }
            object.findings.extend(check.findings);
        }
        if logical_on && object.findings.is_empty() && expected != actual {
            let index_ids = Self::checked_index_ids(table, &checked);
            for mismatch in table.index_row_mismatches(db)? {
                if index_ids.contains(&mismatch.index_id) {
                    object.findings.push(index_row_finding(table, &mismatch));
                }
            }
        }
        Ok(object)
    }

    /// The index ids of the nonclustered indexes checked (`checked` is by check target).
    fn checked_index_ids(table: &Table, checked: &[bool]) -> Vec<i32> {
        let indexes = table.indexes.iter().zip(checked).skip(1);
        indexes.filter(|(_, c)| **c).map(|(index, _)| index.index_id).collect()
    }

    /// An error as a message of the batch (it does not stop the command).
    fn emit(&mut self, error: SqlError, line: u64, out: &mut dyn FnMut(Output)) {
        if error.severity > 10 {
            self.note_error(error.number);
        }
        out(Output::Error { error, line, procedure: None });
    }

    fn report_object(
        &mut self,
        object: &ObjectCheck,
        options: &CheckOptions,
        word: &str,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) {
        if options.object_info {
            out(Output::Message(format!("DBCC results for '{}'.", object.name)));
            out(Output::Message(format!(
                "There are {} rows in {} pages for object \"{}\".",
                object.rows, object.pages, object.name
            )));
        }
        for finding in &object.findings {
            self.emit(finding.error.clone(), line, out);
            if let Some(detail) = &finding.detail {
                self.emit(detail.clone(), line, out);
            }
        }
        if !object.findings.is_empty() {
            out(Output::Message(format!(
                "{word} found 0 allocation errors and {} consistency errors in table '{}' (object ID {}).",
                object.findings.len(),
                object.name,
                object.object_id
            )));
        }
    }

    /// 8989 (or CHECKTABLE's 8990), 8958 when anything was found, and the errorlog's 8957;
    /// returns how many errors were found.
    fn summarize(
        &mut self,
        command: &Command<'_>,
        allocation_errors: usize,
        objects: &[ObjectCheck],
        options: &CheckOptions,
        started: Instant,
        out: &mut dyn FnMut(Output),
    ) -> usize {
        let consistency_errors: usize = objects.iter().map(|o| o.findings.len()).sum();
        let errors = allocation_errors + consistency_errors;
        let whole_database = command.word != "CHECKTABLE";
        if whole_database && (errors > 0 || !options.no_infomsgs) {
            out(Output::Message(format!(
                "{} found {allocation_errors} allocation errors and {consistency_errors} consistency errors in database '{}'.",
                command.word, command.db.name
            )));
        }
        let repair = objects
            .iter()
            .flat_map(|o| o.findings.iter().map(|f| f.repair))
            .chain((allocation_errors > 0).then_some(RepairLevel::AllowDataLoss))
            .max();
        if let Some(repair) = repair {
            out(Output::Message(format!(
                "{} is the minimum repair level for the errors found by DBCC {} ({}).",
                repair.name(),
                command.word,
                command.target
            )));
        }
        let seconds = started.elapsed().as_secs();
        self.server.instance.errorlog.write(
            &engine::instance::current_process_info(),
            &format!(
                "DBCC {} ({}){} executed by sa found {errors} errors and repaired 0 errors. Elapsed time: {} hours {} minutes {} seconds. ",
                command.word,
                command.target,
                options.shown,
                seconds / 3600,
                seconds / 60 % 60,
                seconds % 60
            ),
        );
        errors
    }
}

impl CheckOptions {
    fn unit(&self) -> UnitOptions<'static> {
        UnitOptions {
            maxdop: self.maxdop,
            physical_only: self.physical_only,
            logical: Logical::Off,
        }
    }
}

/// 8951 and its 8955 (a data row without its index row), or 8952 and its 8956 (an index row
/// without its data row).
fn index_row_finding(table: &Table, mismatch: &IndexRowMismatch) -> Finding {
    let named = |values: &[(String, Value)]| {
        let parts: Vec<String> = values
            .iter()
            .map(|(name, value)| format!("{name} = {}", crate::value::display(value)))
            .collect();
        parts.join(" and ")
    };
    let (identity, values) = (named(&mismatch.identity), named(&mismatch.index_values));
    let (page, slot) = mismatch.location.unwrap_or((engine::units::PageId::NULL, 0));
    let place = format!("({}:{}:{slot})", page.file_id, page.page_no);
    let (table_name, table_id) = (table.qualified_name(), table.object_id);
    let (index, index_id) = (&mismatch.index_name, mismatch.index_id);
    let (error, detail) = if mismatch.missing_index_row {
        (
            SqlError::new(
                8951,
                16,
                1,
                format!(
                    "Table error: table '{table_name}' (ID {table_id}). Data row does not have a matching index row in the index '{index}' (ID {index_id}). Possible missing or invalid keys for the index row matching:"
                ),
            ),
            SqlError::new(
                8955,
                16,
                1,
                format!(
                    "Data row {place} identified by ({identity}) with index values '{values}'."
                ),
            ),
        )
    } else {
        (
            SqlError::new(
                8952,
                16,
                1,
                format!(
                    "Table error: table '{table_name}' (ID {table_id}). Index row in index '{index}' (ID {index_id}) does not match any data row. Possible extra or invalid keys for:"
                ),
            ),
            SqlError::new(
                8956,
                16,
                1,
                format!(
                    "Index row {place} with values ({values}) pointing to the data row identified by ({identity})."
                ),
            ),
        )
    };
    Finding { error, repair: RepairLevel::Rebuild, detail: Some(detail) }
}

/// Every unit of the database, named (system tables and user tables).
fn owners_of(catalog: &engine::catalog::Catalog) -> Owners {
    let mut owners = Owners::new();
    for (object_id, _, tree) in catalog.system_tables() {
        owners.insert(tree.au_id, UnitName { object_id, index_id: 1, au_id: tree.au_id });
    }
    for table in catalog.tables() {
        for (unit, _) in table.check_targets() {
            owners.insert(unit.au_id, unit);
        }
    }
    owners
}
