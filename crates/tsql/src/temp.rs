//! Temporary tables (`#name`) and table variables (`DECLARE @name TABLE (...)`): names that
//! belong to one session and one scope.
//!
//! What it reproduces: a `#name` table is seen only by the session that made it, so two
//! sessions each have their own `#t`; it is dropped when the procedure or dynamic batch that
//! made it returns, or when the session ends; a procedure sees its caller's `#name` tables and
//! may make its own of the same name, which hides the caller's until it returns. A table
//! variable lives until the end of its batch or procedure. `##name` tables are seen by every
//! session and are dropped when the session that made it ends. The stored name is SQL
//! Server's: the name padded with underscores to 116 characters and twelve hex digits (a
//! table variable's is `#` and eight hex digits).
//!
//! Deviations: SQL Server keeps these tables in tempdb; extentdb has no tempdb, so each is a
//! table of the database that was current when it was made, under its stored name (hidden
//! from that database's sys.tables and sys.objects). Using it from another database is 40517.
//! A table variable is outside transactions, as in SQL Server: it is made and dropped in a
//! transaction of its own while the session's steps aside, and a ROLLBACK keeps what earlier
//! statements did to it (`Database::keep_through_rollback`; a failed statement still loses
//! its own changes). Its changes are logged in the session's transaction, so one whose scope
//! ends while that transaction is open is dropped only once it ends: until then a crash
//! leaves the transaction for recovery to undo, which needs the variable's table.
//! Tables left by a process that ended without dropping them are dropped when the database is
//! next opened by a server, as SQL Server clears tempdb at startup.

use engine::database::Database;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How SQL Server pads a temporary table's name before its suffix.
const PADDED_LENGTH: usize = 116;

/// Makes every stored name of this process different (the start time keeps a new process
/// from reusing the names of tables an ended one left).
static NEXT_SUFFIX: AtomicU64 = AtomicU64::new(0);

fn next_suffix() -> u64 {
    let _ = NEXT_SUFFIX.compare_exchange(
        0,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64 & 0xFFFF_FFFF_FFFF),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    NEXT_SUFFIX.fetch_add(1, Ordering::Relaxed)
}

/// Whether `name` names a session's object rather than a table of the catalog.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with('#') || name.starts_with('@')
}

/// Whether a table of the catalog is a temporary table or a table variable (by its stored
/// name).
pub fn is_stored_temporary(name: &str) -> bool {
    name.starts_with('#')
}

/// The stored name for a new `#name` table or `@name` table variable.
pub fn stored_name(name: &str) -> String {
    let suffix = next_suffix();
    if name.starts_with('@') {
        return format!("#{:08X}", suffix as u32);
    }
    if name.starts_with("##") {
        return name.to_string();
    }
    let padding = PADDED_LENGTH.saturating_sub(name.chars().count());
    format!("{name}{}{:012X}", "_".repeat(padding), suffix & 0xFFFF_FFFF_FFFF)
}

/// One temporary table or table variable of a session.
pub struct TempObject {
    /// The name in the catalog.
    pub stored: String,
    /// The database it was made in.
    pub database: Arc<Database>,
    /// The nesting level (@@NESTLEVEL) of the scope that made it.
    pub nest_level: u32,
    /// A table variable (`@name`), whose units are outside transactions.
    pub variable: bool,
}

/// A session's temporary tables and table variables, by the name the session uses.
#[derive(Default)]
pub struct TempObjects {
    /// Lower-case name to its objects, innermost scope last.
    by_name: BTreeMap<String, Vec<TempObject>>,
    /// Table variables whose scope ended while the session's transaction was open in their
    /// database, nameless now: dropped once it ends ([`crate::session::drop_temporary`]).
    waiting_for_transaction_end: Vec<TempObject>,
}

impl TempObjects {
    /// The object a name means now (the innermost scope's).
    pub fn resolve(&self, name: &str) -> Option<&TempObject> {
        self.by_name.get(&name.to_lowercase()).and_then(|objects| objects.last())
    }

    /// Whether the scope at `nest_level` already made an object of this name.
    pub fn made_in_scope(&self, name: &str, nest_level: u32) -> bool {
        self.resolve(name).is_some_and(|o| o.nest_level == nest_level)
    }

    pub fn add(&mut self, name: &str, object: TempObject) {
        self.by_name.entry(name.to_lowercase()).or_default().push(object);
    }

    /// Forgets the object a name means now (it was dropped).
    pub fn remove(&mut self, name: &str) -> Option<TempObject> {
        let key = name.to_lowercase();
        let objects = self.by_name.get_mut(&key)?;
        let removed = objects.pop();
        if objects.is_empty() {
            self.by_name.remove(&key);
        }
        removed
    }

    /// Takes the objects the scopes deeper than `nest_level` made (a procedure or dynamic
    /// batch returned), and, if `variables_too`, the table variables of `nest_level` itself
    /// (its batch ended).
    pub fn take_scope(&mut self, nest_level: u32, variables_too: bool) -> Vec<TempObject> {
        let mut taken = Vec::new();
        for (name, objects) in self.by_name.iter_mut() {
            let variable = name.starts_with('@');
            let (gone, kept): (Vec<TempObject>, Vec<TempObject>) = std::mem::take(objects)
                .into_iter()
                .partition(|o| o.nest_level > nest_level || (variables_too && variable));
            *objects = kept;
            taken.extend(gone);
        }
        self.by_name.retain(|_, objects| !objects.is_empty());
        taken
    }

    /// Takes every object (the session ends), those waiting for their transaction too.
    pub fn take_all(&mut self) -> Vec<TempObject> {
        let mut all: Vec<TempObject> =
            std::mem::take(&mut self.by_name).into_values().flatten().collect();
        all.append(&mut self.waiting_for_transaction_end);
        all
    }

    /// Keeps table variables until the session's transaction ends.
    pub fn wait_for_transaction_end(&mut self, objects: Vec<TempObject>) {
        self.waiting_for_transaction_end.extend(objects);
    }

    /// Whether table variables wait for the session's transaction to end.
    pub fn any_waiting(&self) -> bool {
        !self.waiting_for_transaction_end.is_empty()
    }

    /// Takes the table variables that were waiting for the session's transaction to end.
    pub fn take_waiting(&mut self) -> Vec<TempObject> {
        std::mem::take(&mut self.waiting_for_transaction_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_follow_sql_servers_pattern() {
        let stored = stored_name("#t");
        assert_eq!(stored.len(), PADDED_LENGTH + 12);
        assert!(stored.starts_with("#t____"));
        assert!(stored[PADDED_LENGTH..].chars().all(|c| c.is_ascii_hexdigit()));
        let variable = stored_name("@t");
        assert_eq!(variable.len(), 9);
        assert!(variable.starts_with('#'));
        assert_eq!(stored_name("##global"), "##global");
        assert_ne!(stored_name("#t"), stored_name("#t"));
    }
}
