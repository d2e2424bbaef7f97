//! extentdb's T-SQL layer: batches (`GO [n]`), the parser front end over sqlparser
//! (MsSqlDialect), and a session that runs statements on the embedded engine.
//!
//! Map of the modules:
//! - [`alterindex`]: ALTER INDEX ... REBUILD | REORGANIZE and ALTER TABLE ... REBUILD.
//! - [`altertable`]: ALTER TABLE ... ADD and DROP COLUMN (a rebuild of the table).
//! - [`batch`]: the sqlcmd-style batch splitter.
//! - [`cache`]: parsed batches kept by their text.
//! - [`front`]: parsing, with what sqlparser lacks (CREATE INDEX kinds, filegroups, CHECKPOINT,
//!   SAVE TRAN), and SQL Server's syntax errors 102 and 156.
//! - [`dbcc`]: DBCC's parse and the commands built so far.
//! - [`dbddl`]: CREATE DATABASE and ALTER DATABASE (file specs, filegroups, options).
//! - [`dialect`]: MsSqlDialect with T-SQL's reserved words kept out of aliases.
//! - [`kill`]: KILL, which ends another session (596, its transaction rolled back).
//! - [`procs`]: stored procedures, EXEC, dynamic SQL and sp_executesql.
//! - [`nesting`]: how deep a batch may nest (191), and stack room for each level.
//! - [`server`]: the instance, its databases and the registry of them in the data directory.
//! - [`session`]: statements, variables, transactions and SQL Server's error behaviour.
//! - [`query`]: SELECT and expression evaluation.
//! - [`value`], [`functions`]: conversions, arithmetic, comparison and the built-in functions.
//! - [`sysviews`]: the system views built so far (sys.databases, sys.database_files,
//!   sys.filegroups).
//! - [`perfcounters`]: sys.dm_os_performance_counters, from the engine's event counts.
//! - [`window`]: window functions (OVER).
//! - [`sphelp`]: the sp_help procedure.
//! - [`sqlcmd`]: output formatted as sqlcmd prints it.

pub mod alterindex;
pub mod altertable;
pub mod batch;
pub mod cache;
pub mod catalogviews;
pub mod checkdb;
pub mod configure;
pub mod cursor;
pub mod dbcc;
pub mod dbccpage;
pub mod dbddl;
pub mod dialect;
pub mod dmv;
pub mod format;
pub mod front;
pub mod functions;
pub mod kill;
pub mod merge;
pub mod nesting;
pub mod output;
pub mod pageinfo;
pub mod perfcounters;
pub mod procs;
pub mod query;
pub mod server;
pub mod session;
pub mod sphelp;
pub mod sqlcmd;
pub mod strings;
pub mod sysdatabases;
pub mod sysprocesses;
pub mod sysprocs;
pub mod sysviews;
pub mod temp;
pub mod value;
pub mod waitfor;
pub mod window;
pub mod xevents;
pub mod xml;
