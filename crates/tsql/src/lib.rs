//! extentdb's T-SQL language layer (the T-SQL issue). It grows in stages; what is here now:
//! - [`batch`]: splitting a script into batches at `GO [n]` lines, as sqlcmd does.

pub mod batch;
