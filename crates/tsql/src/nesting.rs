//! How deep a batch may nest, and the stack that nesting runs on.
//!
//! A batch nests IF, WHILE, BEGIN...END and TRY...CATCH inside one another, and procedures and
//! dynamic SQL nest batches (32 levels: error 217, in [`crate::procs`]). The parser and the
//! session each recurse once per level, so a deep enough batch would overflow its worker's
//! stack and end the process: a client could take the server down with `BEGIN` written 5,000
//! times (it did, from about 250 levels on a 2 MB connection thread).
//!
//! What it reproduces: SQL Server refuses a batch nested deeper than its parser takes with
//! error 191, "Some part of your SQL statement is nested too deeply. Rewrite the query or break
//! it up into smaller queries.", before any of it runs.
//!
//! How:
//! - The parser counts the statements it is inside; past [`MAX_STATEMENT_NESTING`] it stops
//!   with sqlparser's recursion error, which the front end reports as 191. sqlparser's own
//!   limit, [`MAX_PARSER_RECURSION`], gives the same error for nested expressions and
//!   subqueries.
//! - Each level of parsing and of running a block goes through [`with_stack_room`]: when less
//!   than [`STACK_RED_ZONE_BYTES`] is left on the stack, the level runs on a new stack segment
//!   of [`STACK_SEGMENT_BYTES`] (the `stacker` crate, which sqlparser uses for its own
//!   recursion). So nesting is bounded by the limit, never by the stack of the thread that
//!   runs the session (an 8 MB main thread, a 2 MB test or connection thread alike).
//!
//! Deviation: SQL Server's depth limit comes from its parser's stack and is not documented;
//! extentdb's is a count. Invariant 1: a batch that parses runs without overflowing the stack,
//! at any nesting it parsed with, up to 32 procedure levels deep.

use std::cell::Cell;

/// The deepest a statement may sit inside IF, WHILE, BEGIN...END and TRY...CATCH statements in
/// one batch (an ELSE IF chain nests one level per branch).
pub const MAX_STATEMENT_NESTING: u32 = 512;

/// sqlparser's recursion limit for a batch (its default is 50): a nested subquery takes about
/// two of it, and SQL Server takes 32 nested subqueries.
pub const MAX_PARSER_RECURSION: usize = 100;

/// Stack left below which a level moves to a new segment: enough for the deepest work done
/// between two levels (one statement's evaluation, in a debug build).
pub const STACK_RED_ZONE_BYTES: usize = 512 * 1024;

/// The size of a new stack segment.
pub const STACK_SEGMENT_BYTES: usize = 4 << 20;

/// Runs `f` with at least [`STACK_RED_ZONE_BYTES`] of stack (invariant 1).
pub fn with_stack_room<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(STACK_RED_ZONE_BYTES, STACK_SEGMENT_BYTES, f)
}

thread_local! {
    /// Statements the parser on this thread is inside. Parsing runs to its end on the thread
    /// that starts it (it never waits, so no other session's parse runs there meanwhile).
    static PARSE_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// One level of statement nesting in the parser; the level ends when it drops.
pub struct ParseLevel(());

impl ParseLevel {
    /// Enters a level; None past [`MAX_STATEMENT_NESTING`].
    pub fn enter() -> Option<ParseLevel> {
        let depth = PARSE_DEPTH.with(|d| d.get());
        if depth >= MAX_STATEMENT_NESTING {
            return None;
        }
        PARSE_DEPTH.with(|d| d.set(depth + 1));
        Some(ParseLevel(()))
    }
}

impl Drop for ParseLevel {
    fn drop(&mut self) {
        PARSE_DEPTH.with(|d| d.set(d.get() - 1));
    }
}
