//! extentdb's storage engine.
//!
//! This crate owns everything below the SQL surface: data files and their fixed pages, the 96-byte
//! page header, the allocation maps (PFS, GAM, SGAM, IAM), filegroups with round-robin and
//! proportional-fill extent allocation, autogrowth with and without instant file initialisation,
//! the errorlog and trace flags. It has no async runtime, no SQL parser and no TLS, so that its
//! tests build in seconds.
//!
//! Map of the modules, bottom up:
//! - [`units`]: page, extent and interval constants, `PageId`, size parsing.
//! - [`io`]: the one I/O seam (`Io`/`IoFile`), the real backend and the fault-injecting twin.
//! - [`page`]: the 96-byte page header and page checksums (824 on mismatch).
//! - [`alloc`]: byte layouts of PFS, GAM/SGAM/DCM/BCM and IAM pages.
//! - [`file`]: the file header page (page 0), the layout of a new file, a data file's allocation state.
//! - [`filegroup`]: skip targets, the round robin, `-E`, the FGCB_PRP_FILL lock, growth policy.
//! - [`database`]: create/open/alter a database, allocate and free pages and extents, autogrow.
//! - [`log`]: log files and their VLFs, log blocks and records, LSNs, group-commit flushes,
//!   mini-transactions ([`log::mtr`]) that log every page change (write-ahead logging).
//! - [`catalog`]: tables, columns and indexes in system tables; a table's rows across its heap
//!   or clustered index and its nonclustered indexes.
//! - [`xact`]: transactions (commit, rollback, savepoints) with compensation records.
//! - [`lock`]: transaction locks on objects and keys, LCK_M_* waits, deadlock detection.
//! - [`errorlog`], [`traceflags`], [`waits`], [`clock`]: the instance's observable surfaces.
//! - [`buffer`], [`pool_memory`]: the buffer pool, its frames' memory (huge-page mappings).
//! - [`perfcounters`]: the event counts behind sys.dm_os_performance_counters.
//! - [`xevent`]: Extended Events sessions, the events the engine fires, their targets.
//! - [`plan`]: the what-if planner, which drives the filegroup code above without any I/O.

pub mod affinity;
pub mod alloc;
pub mod boot;
pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod clock;
pub mod configuration;
pub mod database;
pub mod datapage;
pub mod dbcc;
pub mod error;
pub mod errorlog;
pub mod fiber;
pub mod file;
pub mod filegroup;
pub mod heap;
pub mod index_usage;
pub mod instance;
pub mod io;
pub mod iostats;
pub mod latch;
pub mod lock;
pub mod log;
pub mod machine;
pub mod page;
pub mod perfcounters;
pub mod plan;
pub mod pool_memory;
pub mod prefetch;
pub mod process_memory;
pub mod readahead;
pub mod record;
pub mod rng;
pub mod scheduler;
pub mod session;
pub mod spinlock;
pub mod system_tasks;
pub mod traceflags;
pub mod units;
pub mod waits;
pub mod xact;
pub mod xevent;

pub use error::{SqlError, SqlResult};
