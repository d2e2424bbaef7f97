//! Mini-transactions: the unit in which page changes reach the log (docs/format/log-file.md).
//!
//! Every change to a page in the buffer pool happens inside a mini-transaction (mtr). While it
//! runs, each page it changes stays latched, even after the code that changed it drops its
//! guard: the guard's latch and pin move into the mtr's memo. At commit the mtr appends one log
//! record per page change, all at once and flagged as one group, stamps each changed page with
//! the group's last LSN, and only then releases the latches. So:
//! - no other session sees a change before its log records exist (they latch the page after);
//! - a page is never written before its log records are durable (write-back latches the page,
//!   then flushes the log up to its page LSN: the WAL rule);
//! - records of one page appear in the log in the order the changes were made;
//! - recovery replays a group only if the whole group reached the disk, so a page split is
//!   replayed whole or not at all.
//!
//! A page change is logged as the runs of bytes that differ, XOR-ed with their old value
//! ([`diff`]): applied once it redoes the change, applied again it undoes it. A page created by
//! [`crate::buffer::BufferPool::new_page`] is logged as a format record: redo starts from a
//! zeroed page. The page LSN (header bytes 40..50) and checksum (60..64) are not part of a diff.
//!
//! A record inserted into a page's contiguous free space (the hot path of every insert) is
//! logged logically instead, as SQL Server's LOP_INSERT_ROWS is: the slot and the record
//! ([`Redo::Insert`]); redo runs the same [`crate::datapage::insert`] on the page. That costs
//! neither the 8 KB before-image nor the diff, and logs the row once, without the slot-array
//! shift. The mtr keeps the few byte ranges the insert overwrote, to undo it if the mtr aborts.
//!
//! Each change is encoded once, as it is made, into the payload its log record will carry
//! ([`PayloadBuilder`], [`insert_payload`]; a large insert's record stays in its page until
//! commit, invariant 2); commit moves the payload into the record, and an abort decodes XOR
//! runs back from it. [`Redo`] is the decoded form recovery applies. Once the log has a
//! payload's bytes (and the mtr is over, for a before-image), its buffer goes back to a
//! per-thread list that the next change's payload is taken from ([`take_buffer`]).
//!
//! Invariant 1: applying a page change's redo to the page as it was before the change gives
//! the page as it was after it, byte for byte (free space included), so later XOR runs of the
//! same page apply to exactly the bytes they were computed on.
//!
//! Invariant 2: a large insert's record (from [`RECORD_FROM_PAGE_MIN_BYTES`] on) is not copied
//! into its payload when the insert is made: the change notes where the record lies in the
//! page ([`PageChange::record_at`]) and commit copies it from there straight into the log
//! block (one copy of the row fewer; a smaller record is copied at once, as the bookkeeping
//! would cost more than the copy). While the note stands, those bytes of the page are the
//! record as inserted: before any later change to the page in an open mtr of this thread, the
//! record is copied into the payload ([`complete_pending_records`]); no other session can
//! change the page, since the mtr keeps its UP or EX latch until commit.
//!
//! Allocation-map changes run in their own mtr, committed before the caller's continues (a
//! nested top action): latches on PFS, GAM, SGAM and IAM pages are not held while data pages
//! are latched afterwards, which keeps the latch order of [`crate::buffer`]. Such an mtr has
//! one change, so it opens no mtr state: the change's record is appended right after it is
//! made, while the page's latch is held (`PageGuard::logged_alone`). Deviation: if a
//! crash comes after an allocation's group but before the group that uses the page, the page
//! stays allocated to its object without being linked (SQL Server undoes it).
//!
//! A write outside any mtr is an mtr of its own.

use super::lsn::Lsn;
use crate::units::{PAGE_SIZE, PageId};
use std::cell::RefCell;

/// Byte ranges of the page header a diff leaves out: the page LSN and the checksum field.
const SKIPPED: [(usize, usize); 2] = [(40, 50), (60, 64)];
/// Runs closer than this are merged (fewer run headers).
const MERGE_GAP_BYTES: usize = 8;
/// A run of changed bytes: its offset in the page and the XOR of old and new bytes.
pub type Run = (u16, Vec<u8>);
pub type Runs = Vec<Run>;
/// Payload kinds of a page record.
pub const KIND_XOR: u8 = 1;
pub const KIND_FORMAT: u8 = 2;
pub const KIND_INSERT: u8 = 3;
pub const KIND_COMPACT: u8 = 4;

/// A page change as the log carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redo {
    /// XOR runs over the page.
    Xor(Runs),
    /// XOR runs over a zeroed page (a page made by `new_page`).
    Format(Runs),
    /// `record` inserted as `slot` into the page's contiguous free space, without compaction
    /// ([`crate::datapage::insert_ranges`] says when that holds).
    Insert { slot: u16, record: Vec<u8> },
    /// The page's records rewritten contiguously in slot order ([`crate::datapage::compact`]):
    /// no payload, where a diff would carry most of the page.
    Compact,
}

impl Redo {
    pub fn kind(&self) -> u8 {
        match self {
            Redo::Xor(_) => KIND_XOR,
            Redo::Format(_) => KIND_FORMAT,
            Redo::Insert { .. } => KIND_INSERT,
            Redo::Compact => KIND_COMPACT,
        }
    }

    /// Applies the change to the page as it was before it (invariant 1). An insert that does
    /// not fit where the log says it went means the page and the log disagree: Err.
    pub fn apply(&self, buf: &mut [u8; PAGE_SIZE]) -> Result<(), &'static str> {
        match self {
            Redo::Xor(runs) => apply_xor(buf, runs),
            Redo::Format(runs) => {
                buf.fill(0);
                apply_xor(buf, runs);
            }
            Redo::Insert { slot, record } => {
                if crate::datapage::insert_ranges(buf, *slot, record.len()).is_none() {
                    return Err("a logged insert does not fit its page's free space");
                }
                let placed = crate::datapage::insert(buf, *slot, record);
                assert!(placed, "insert_ranges said the record fits without compaction");
            }
            Redo::Compact => {
                crate::datapage::check(buf).map_err(|bad| bad.0)?;
                crate::datapage::compact(buf);
            }
        }
        Ok(())
    }
}

/// The runs of bytes in which `after` differs from `before`, as XOR deltas.
pub fn diff(before: &[u8; PAGE_SIZE], after: &[u8; PAGE_SIZE]) -> Runs {
    let mut runs: Runs = Vec::new();
    for_each_diff_run(before, after, |offset, delta| runs.push((offset, delta.to_vec())));
    runs
}

/// Calls `emit(offset, xor_delta)` for each run of [`diff`], in page order.
fn for_each_diff_run(
    before: &[u8; PAGE_SIZE],
    after: &[u8; PAGE_SIZE],
    emit: impl FnMut(u16, &[u8]),
) {
    let mut xor = [0u8; PAGE_SIZE];
    for (i, byte) in xor.iter_mut().enumerate() {
        *byte = before[i] ^ after[i];
    }
    for_each_page_run(&mut xor, emit);
}

/// [`for_each_run`] over a whole page of XOR deltas, the page LSN and checksum left out.
fn for_each_page_run(xor: &mut [u8; PAGE_SIZE], emit: impl FnMut(u16, &[u8])) {
    for (from, to) in SKIPPED {
        xor[from..to].fill(0);
    }
    for_each_run(xor, 0, emit);
}

/// Calls `emit(base + start, &xor[start..end])` for each run of non-zero bytes of `xor`: a run
/// starts at a non-zero byte and goes on while another comes within [`MERGE_GAP_BYTES`] of its
/// end. Runs never cross the end of `xor`.
fn for_each_run(xor: &[u8], base: usize, mut emit: impl FnMut(u16, &[u8])) {
    let mut at = next_changed(xor, 0);
    while at < xor.len() {
        let start = at;
        let end = run_end(xor, at + 1);
        emit((base + start) as u16, &xor[start..end]);
        at = next_changed(xor, end);
    }
}

/// The end of a run whose last changed byte so far is just before `end`: the run goes on
/// while a changed byte comes within [`MERGE_GAP_BYTES`] of its end. Reads a word at a time
/// (a 4 KB row is 512 steps, not 4,096).
fn run_end(xor: &[u8], mut end: usize) -> usize {
    const _: () = assert!(MERGE_GAP_BYTES == 8, "one word is one gap");
    while end + 8 <= xor.len() {
        let word = u64::from_le_bytes(xor[end..end + 8].try_into().expect("8 bytes"));
        if word == 0 {
            return end;
        }
        // Little-endian: the highest non-zero byte of the word is the last changed one.
        end += 8 - (word.leading_zeros() / 8) as usize;
    }
    let mut scan = end;
    while scan < xor.len() && scan - end < MERGE_GAP_BYTES {
        if xor[scan] != 0 {
            end = scan + 1;
        }
        scan += 1;
    }
    end
}

/// The first non-zero byte at or after `from` (`xor.len()` if none), skipping zero words.
fn next_changed(xor: &[u8], from: usize) -> usize {
    let mut at = from;
    while at < xor.len() && !at.is_multiple_of(8) && xor[at] == 0 {
        at += 1;
    }
    while at + 8 <= xor.len() && xor[at..at + 8] == [0u8; 8] {
        at += 8;
    }
    while at < xor.len() && xor[at] == 0 {
        at += 1;
    }
    at
}

/// [`diff`] of a change confined to the ranges `before` saved: only those bytes are compared
/// (the page LSN and checksum left out as in [`diff`]); runs never cross a range's end. The
/// engine builds these runs straight into a payload ([`PayloadBuilder::diff_within`]); this
/// list form is the tests' reference.
#[cfg(test)]
pub fn diff_within(before: &Saved, after: &[u8; PAGE_SIZE]) -> Runs {
    let mut runs: Runs = Vec::new();
    for_each_run_within(before, after, |offset, delta| runs.push((offset, delta.to_vec())));
    runs
}

/// Calls `emit(offset, xor_delta)` for each run of [`diff_within`], in the ranges' order.
fn for_each_run_within(before: &Saved, after: &[u8; PAGE_SIZE], mut emit: impl FnMut(u16, &[u8])) {
    // A range of a header, a PFS byte or a map byte fits on the stack; a larger one (an
    // insert's overwritten bytes, a page's slot array) goes to the heap. A SmallVec here cost
    // a few hundred instructions a call in capacity checks (seed 002, callgrind).
    let mut small = [0u8; 256];
    let mut large: Vec<u8> = Vec::new();
    let mut at_saved = 0;
    for (i, (offset, len)) in before.ranges.into_iter().enumerate() {
        let (start, len) = (usize::from(offset), usize::from(len));
        if len == 0 {
            continue; // a slot of the three that the change did not use
        }
        let old_bytes = if before.zeroed & (1 << i) != 0 {
            None
        } else {
            at_saved += len;
            Some(&before.bytes[at_saved - len..at_saved])
        };
        if len <= MERGE_GAP_BYTES && !overlaps_skipped(start, len) {
            emit_short_run(start, old_bytes, &after[start..start + len], &mut emit);
            continue;
        }
        let xor: &mut [u8] = if len <= small.len() {
            &mut small[..len]
        } else {
            large.clear();
            large.resize(len, 0);
            &mut large[..]
        };
        let new = &after[start..start + len];
        match old_bytes {
            None => xor.copy_from_slice(new),
            Some(old) => {
                // One pass over old and new bytes, a loop the compiler vectorizes.
                for ((x, o), n) in xor.iter_mut().zip(old).zip(new) {
                    *x = o ^ n;
                }
            }
        }
        for (from, to) in SKIPPED {
            let (from, to) = (from.max(start), to.min(start + len));
            if from < to {
                xor[from - start..to - start].fill(0);
            }
        }
        for_each_run(xor, start, &mut emit);
    }
}

/// Whether `[start, start + len)` meets a byte range a diff leaves out ([`SKIPPED`]).
fn overlaps_skipped(start: usize, len: usize) -> bool {
    SKIPPED.iter().any(|(from, to)| start < *to && *from < start + len)
}

/// The run of a range no longer than [`MERGE_GAP_BYTES`] (a PFS extent's bytes, a map byte,
/// a page link), clear of [`SKIPPED`]: at most one, since no gap inside it is long enough to
/// end a run, so it goes from the first changed byte to the last. `old` None: the range was
/// zero. The same run [`for_each_run`] finds, without its scans.
fn emit_short_run(start: usize, old: Option<&[u8]>, new: &[u8], emit: &mut impl FnMut(u16, &[u8])) {
    let mut xor = [0u8; MERGE_GAP_BYTES];
    let xor = &mut xor[..new.len()];
    match old {
        None => xor.copy_from_slice(new),
        Some(old) => {
            for ((x, o), n) in xor.iter_mut().zip(old).zip(new) {
                *x = o ^ n;
            }
        }
    }
    let Some(first) = xor.iter().position(|byte| *byte != 0) else { return };
    let last = xor.iter().rposition(|byte| *byte != 0).expect("a changed byte");
    emit((start + first) as u16, &xor[first..=last]);
}

/// Builds a page record's payload (see [`encode_page_payload`]) while a change is made, so
/// the change is encoded once, in the form the log takes, with no runs list in between.
pub struct PayloadBuilder {
    payload: Vec<u8>,
    runs: u16,
}

impl PayloadBuilder {
    /// A payload of `kind` ([`KIND_XOR`] or [`KIND_FORMAT`]) for `page`, with no runs yet.
    pub fn runs(page: PageId, kind: u8) -> PayloadBuilder {
        debug_assert!(kind == KIND_XOR || kind == KIND_FORMAT);
        let mut payload = take_buffer(64);
        payload.extend_from_slice(&page.to_bytes());
        payload.push(kind);
        payload.extend_from_slice(&0u16.to_le_bytes());
        PayloadBuilder { payload, runs: 0 }
    }

    fn push_run(&mut self, offset: u16, delta: &[u8]) {
        self.payload.extend_from_slice(&offset.to_le_bytes());
        self.payload.extend_from_slice(&(delta.len() as u16).to_le_bytes());
        self.payload.extend_from_slice(delta);
        self.runs += 1;
    }

    /// Adds the runs of [`diff`] from a page of zeros: a new page's format record, whose
    /// runs are the page's own non-zero bytes. The same runs as `diff(&[0; PAGE_SIZE], after)`
    /// without the XOR pass, and the payload sized once for a page instead of grown by
    /// doubling (a split's new page carries about half a page of rows).
    pub fn from_zeros(mut self, after: &[u8; PAGE_SIZE]) -> PayloadBuilder {
        let mut image = *after;
        self.payload.reserve(PAGE_SIZE);
        for_each_page_run(&mut image, |offset, delta| self.push_run(offset, delta));
        self
    }

    /// Adds the runs of [`diff`].
    pub fn diff(mut self, before: &[u8; PAGE_SIZE], after: &[u8; PAGE_SIZE]) -> PayloadBuilder {
        for_each_diff_run(before, after, |offset, delta| self.push_run(offset, delta));
        self
    }

    /// Adds the runs of [`diff_within`].
    pub fn diff_within(mut self, before: &Saved, after: &[u8; PAGE_SIZE]) -> PayloadBuilder {
        for_each_run_within(before, after, |offset, delta| self.push_run(offset, delta));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// Drops a payload that is not logged (no byte changed): its buffer is kept for reuse.
    pub fn discard(self) {
        give_back_buffer(self.payload);
    }

    /// The payload, its run count filled in.
    pub fn finish(mut self) -> Vec<u8> {
        self.payload[7..9].copy_from_slice(&self.runs.to_le_bytes());
        self.payload
    }
}

/// The payload of [`Redo::Insert`]: `record` inserted as `slot` of `page`.
pub fn insert_payload(page: PageId, slot: u16, record: &[u8]) -> Vec<u8> {
    let mut out = take_buffer(INSERT_HEAD_BYTES + record.len());
    push_insert_head(&mut out, page, slot, record.len());
    out.extend_from_slice(record);
    out
}

/// [`insert_payload`] without the record: what an mtr keeps for an insert whose record it
/// reads from the page at commit ([`PageChange::record_at`]).
pub fn insert_payload_head(page: PageId, slot: u16, record_len: usize) -> Vec<u8> {
    let mut out = take_buffer(INSERT_HEAD_BYTES);
    push_insert_head(&mut out, page, slot, record_len);
    out
}

#[inline]
fn push_insert_head(out: &mut Vec<u8>, page: PageId, slot: u16, record_len: usize) {
    out.extend_from_slice(&page.to_bytes());
    out.push(KIND_INSERT);
    out.extend_from_slice(&slot.to_le_bytes());
    out.extend_from_slice(&(record_len as u16).to_le_bytes());
}

/// Records from this size on are read from their page at commit (invariant 2). Below it the
/// copy into the payload costs less than the bookkeeping: `bench insert`'s 142-byte rows took
/// about 3 % more CPU per row when every record was read from its page.
pub const RECORD_FROM_PAGE_MIN_BYTES: usize = 1024;

/// Bytes of an insert payload before its record: page id, kind, slot and record length.
const INSERT_HEAD_BYTES: usize = 11;

/// The kind of a page record's payload ([`KIND_XOR`], [`KIND_FORMAT`], ...).
pub fn payload_kind(payload: &[u8]) -> u8 {
    payload[6]
}

/// Undoes a change of this mtr on its page: XOR runs are applied again, an insert or a
/// compaction gets its saved bytes back.
pub fn undo(buf: &mut [u8; PAGE_SIZE], payload: &[u8], before: &Saved) {
    match payload_kind(payload) {
        KIND_XOR | KIND_FORMAT => {
            let runs = decode_runs(&payload[7..]).expect("this mtr encoded the payload");
            apply_xor(buf, &runs);
        }
        _ => before.restore(buf),
    }
}

/// XORs runs into a page: redo of a change, or its undo.
pub fn apply_xor(buf: &mut [u8; PAGE_SIZE], runs: &[Run]) {
    for (offset, delta) in runs {
        let start = usize::from(*offset);
        for (i, byte) in delta.iter().enumerate() {
            buf[start + i] ^= byte;
        }
    }
}

/// A page record's payload: page id, kind, then the runs (run count, then offset, length and
/// bytes of each), or for an insert the slot, the record's length and the record. The mtr
/// builds the same bytes as it goes ([`PayloadBuilder`], [`insert_payload`]).
pub fn encode_page_payload(page: PageId, redo: &Redo) -> Vec<u8> {
    match redo {
        Redo::Xor(runs) | Redo::Format(runs) => {
            let mut builder = PayloadBuilder::runs(page, redo.kind());
            for (offset, delta) in runs {
                builder.push_run(*offset, delta);
            }
            builder.finish()
        }
        Redo::Insert { slot, record } => insert_payload(page, *slot, record),
        Redo::Compact => {
            let mut out = page.to_bytes().to_vec();
            out.push(KIND_COMPACT);
            out
        }
    }
}

/// The page and change of a page record's payload.
pub fn decode_page_payload(payload: &[u8]) -> Option<(PageId, Redo)> {
    if payload.len() == 7 && payload[6] == KIND_COMPACT {
        return Some((PageId::from_bytes(&payload[0..6]), Redo::Compact));
    }
    if payload.len() < 9 {
        return None;
    }
    let page = PageId::from_bytes(&payload[0..6]);
    match payload[6] {
        KIND_XOR => decode_runs(&payload[7..]).map(|runs| (page, Redo::Xor(runs))),
        KIND_FORMAT => decode_runs(&payload[7..]).map(|runs| (page, Redo::Format(runs))),
        KIND_INSERT => {
            let slot = u16::from_le_bytes([payload[7], payload[8]]);
            let len = usize::from(u16::from_le_bytes(payload.get(9..11)?.try_into().ok()?));
            let record = payload.get(11..)?;
            let fits = len > 0 && len <= crate::record::MAX_RECORD_BYTES;
            (fits && record.len() == len)
                .then(|| (page, Redo::Insert { slot, record: record.to_vec() }))
        }
        _ => None,
    }
}

/// Run count, then the runs.
fn decode_runs(payload: &[u8]) -> Option<Runs> {
    let count = u16::from_le_bytes([payload[0], payload[1]]);
    let mut at = 2;
    let mut runs = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let head = payload.get(at..at + 4)?;
        let offset = u16::from_le_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_le_bytes([head[2], head[3]]));
        let delta = payload.get(at + 4..at + 4 + len)?.to_vec();
        if usize::from(offset) + len > PAGE_SIZE {
            return None;
        }
        runs.push((offset, delta));
        at += 4 + len;
    }
    (at == payload.len()).then_some(runs)
}

/// The bytes a change overwrote, kept to undo it if its mtr aborts (or to diff it against):
/// up to three ranges `(offset, length)` and their old bytes back to back (one allocation). A
/// range that was all zeros (a new page's free space, say) keeps no bytes, only its bit in
/// `zeroed`: an insert into a new page copies its record once less.
#[derive(Default)]
pub struct Saved {
    ranges: [(u16, u16); 3],
    zeroed: u8,
    bytes: Vec<u8>,
}

/// Ranges at least this long are checked for zeros before they are copied.
const ZERO_CHECK_BYTES: usize = 256;

impl Saved {
    /// Keeps the bytes of `ranges` (`[from, to)`, at most three).
    pub fn of(buf: &[u8; PAGE_SIZE], ranges: &[(usize, usize)]) -> Saved {
        Saved::of_zero_from(buf, ranges, PAGE_SIZE)
    }

    /// [`Saved::of`] for a page whose bytes from `zero_from` on are known to be zero (a new
    /// page's body, after its header was formatted): a range starting there is neither read
    /// nor copied, and [`Saved::restore`] zeroes it.
    pub fn of_zero_from(
        buf: &[u8; PAGE_SIZE],
        ranges: &[(usize, usize)],
        zero_from: usize,
    ) -> Saved {
        assert!(ranges.len() <= 3, "at most three saved ranges");
        let mut saved = Saved::default();
        let mut kept = 0;
        for (i, (from, to)) in ranges.iter().enumerate() {
            saved.ranges[i] = (*from as u16, (to - from) as u16);
            let zero =
                *from >= zero_from || (to - from >= ZERO_CHECK_BYTES && is_zero(&buf[*from..*to]));
            if zero {
                saved.zeroed |= 1 << i;
            } else {
                kept += to - from;
            }
        }
        // Nothing kept (a new page's body, zero ranges): no buffer to take or hand back.
        if kept > 0 {
            saved.bytes = take_buffer(kept);
        }
        for (i, (from, to)) in ranges.iter().enumerate() {
            if saved.zeroed & (1 << i) == 0 {
                saved.bytes.extend_from_slice(&buf[*from..*to]);
            }
        }
        saved
    }

    /// The buffer that held the saved bytes, to hand back ([`give_back_buffer`]) once they
    /// are no longer needed.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Writes the saved bytes back: the undo of the change.
    pub fn restore(&self, buf: &mut [u8; PAGE_SIZE]) {
        let mut at = 0;
        for (i, (offset, len)) in self.ranges.into_iter().enumerate() {
            let (start, len) = (usize::from(offset), usize::from(len));
            if self.zeroed & (1 << i) != 0 {
                buf[start..start + len].fill(0);
            } else {
                buf[start..start + len].copy_from_slice(&self.bytes[at..at + len]);
                at += len;
            }
        }
    }
}

/// Whether every byte is zero: eight words OR-ed together per 64-byte step, one branch a
/// step. (The byte-wise fold over `chunks(64)` it replaced ran a byte at a time: Saved::of
/// took a third fewer instructions in seed 002 with this one.)
fn is_zero(bytes: &[u8]) -> bool {
    let mut steps = bytes.chunks_exact(64);
    for step in &mut steps {
        let mut any = 0u64;
        for word in step.chunks_exact(8) {
            any |= u64::from_le_bytes(word.try_into().expect("8 bytes"));
        }
        if any != 0 {
            return false;
        }
    }
    steps.remainder().iter().all(|byte| *byte == 0)
}

/// One page change made in an mtr, waiting for its commit.
pub struct PageChange {
    pub database_id: u16,
    pub page: PageId,
    /// The page record's payload ([`encode_page_payload`]'s bytes), built as the change was
    /// made; commit moves it into the log record.
    pub payload: Vec<u8>,
    /// For an insert or a compaction: the bytes it overwrote (its undo if the mtr aborts).
    pub before: Saved,
    /// m_type of the page after the change (for the record's context).
    pub page_type: u8,
    /// The buffer frame holding the page (latched by this session until commit).
    pub frame: usize,
    /// For an insert: where its record lies in the page (offset, length) while `payload` holds
    /// only [`insert_payload_head`]. Commit appends the record to the log record straight from
    /// the page, so a row is not copied into the payload first (invariant 2).
    pub record_at: Option<(u16, u16)>,
}

impl PageChange {
    /// The payload the log record carries: with the record copied from `buf` (the page as
    /// this change left it) if the change still reads it from the page.
    pub fn complete_payload(&mut self, buf: &[u8; PAGE_SIZE]) {
        complete_payload(&mut self.payload, &mut self.record_at, buf);
    }
}

/// Appends to an insert's `payload` its record, read from the page `buf` where `record_at`
/// says it lies, if the payload still lacks it (invariant 2); `record_at` is then None.
pub fn complete_payload(
    payload: &mut Vec<u8>,
    record_at: &mut Option<(u16, u16)>,
    buf: &[u8; PAGE_SIZE],
) {
    if let Some((offset, len)) = record_at.take() {
        let (from, len) = (usize::from(offset), usize::from(len));
        payload.extend_from_slice(&buf[from..from + len]);
    }
}

/// A page kept latched by an mtr after its guard was dropped.
pub struct HeldPage {
    pub frame: usize,
    pub mode: crate::latch::LatchMode,
    pub spid: u16,
}

#[derive(Default)]
pub struct MtrState {
    pub changes: Vec<PageChange>,
    /// Logical records of a transaction's row change, appended last in the group.
    pub extra: Vec<(super::record::LogRecord, crate::xact::RowOp)>,
    pub held: Vec<HeldPage>,
    /// An autocommit scope: each change inside commits on its own (nested top actions).
    pub autocommit: bool,
}

/// Committed mtr states kept per thread for their lists' capacity (a row insert would
/// otherwise allocate its three lists again each time).
const SPARE_STATES: usize = 4;

/// Payload and before-image buffers kept per thread for its next changes: a seed 002 row
/// made about ten heap allocations and frees of them, some 1,400 instructions a row.
const SPARE_BUFFERS: usize = 32;
/// A buffer larger than a page (a compaction's before-image is the page) is not kept.
const SPARE_BUFFER_MAX_BYTES: usize = PAGE_SIZE + 64;

thread_local! {
    static STACK: RefCell<Vec<MtrState>> = const { RefCell::new(Vec::new()) };
    static SPARE: RefCell<Vec<MtrState>> = const { RefCell::new(Vec::new()) };
    static SPARE_BUFFER_LIST: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// Whether an open mtr of this thread may hold an insert whose record is still read from
    /// its page (invariant 2): set with such a change, cleared once no mtr is open. Most page
    /// changes then skip the search of [`complete_pending_records`].
    static PENDING_RECORDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A fiber's open mini-transactions, kept off the thread while another fiber runs on it (see
/// [`crate::fiber`]). The spare states and buffers stay with the thread: they hold nothing.
#[derive(Default)]
pub(crate) struct FiberMtrs {
    stack: Vec<MtrState>,
    pending_records: bool,
}

/// Swaps the thread's open mini-transactions with a fiber's.
pub(crate) fn swap_fiber_mtrs(saved: &mut FiberMtrs) {
    STACK.with(|s| std::mem::swap(&mut *s.borrow_mut(), &mut saved.stack));
    saved.pending_records = PENDING_RECORDS.with(|p| p.replace(saved.pending_records));
}

/// An empty buffer for a payload or a before-image, with room for `capacity` bytes: one a
/// finished change handed back ([`give_back_buffer`]) if this thread has one.
pub fn take_buffer(capacity: usize) -> Vec<u8> {
    let mut buffer = SPARE_BUFFER_LIST.with(|s| s.borrow_mut().pop()).unwrap_or_default();
    buffer.reserve(capacity);
    buffer
}

/// Keeps a payload or before-image buffer whose bytes are no longer needed (the log has
/// taken them, or the mtr is over) for this thread's next [`take_buffer`].
pub fn give_back_buffer(mut buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > SPARE_BUFFER_MAX_BYTES {
        return;
    }
    buffer.clear();
    SPARE_BUFFER_LIST.with(|s| {
        let mut spare = s.borrow_mut();
        if spare.len() < SPARE_BUFFERS {
            spare.push(buffer);
        }
    });
}

/// Notes that a change whose record is read from its page at commit joined an open mtr.
pub fn note_pending_record() {
    PENDING_RECORDS.set(true);
}

/// Opens an mtr on this thread (nested mtrs are independent: each commits on its own).
pub fn begin() {
    let state = SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default();
    STACK.with(|s| s.borrow_mut().push(state));
}

/// Hands back a finished mtr's state: its lists are emptied and kept for the next mtr.
pub fn recycle(mut state: MtrState) {
    if none_open() {
        PENDING_RECORDS.set(false);
    }
    for change in state.changes.drain(..) {
        give_back_buffer(change.payload);
        give_back_buffer(change.before.into_bytes());
    }
    state.extra.clear();
    state.held.clear();
    state.autocommit = false;
    SPARE.with(|s| {
        let mut spare = s.borrow_mut();
        if spare.len() < SPARE_STATES {
            spare.push(state);
        }
    });
}

/// Whether no mtr at all (nor autocommit scope) is open on this thread: it holds no page
/// latch kept by an mtr.
pub fn none_open() -> bool {
    STACK.with(|s| s.borrow().is_empty())
}

/// Whether an mtr that groups changes is open on this thread (an autocommit scope is not).
pub fn active() -> bool {
    STACK.with(|s| s.borrow().last().is_some_and(|m| !m.autocommit))
}

/// A scope in which every page change is an mtr of its own, even inside an open mtr: used by
/// allocation, so that PFS, GAM, SGAM and IAM latches are never kept while the caller goes on
/// to latch data pages (latch order, [`crate::buffer`]).
pub struct AutocommitScope(());

pub fn autocommit() -> AutocommitScope {
    STACK.with(|s| s.borrow_mut().push(MtrState { autocommit: true, ..MtrState::default() }));
    AutocommitScope(())
}

impl Drop for AutocommitScope {
    fn drop(&mut self) {
        let state = STACK.with(|s| s.borrow_mut().pop().expect("the scope's level"));
        assert!(state.autocommit && state.changes.is_empty(), "autocommit scopes hold no changes");
    }
}

/// Runs `f` on the innermost open mtr, if any.
pub fn with_top<R>(f: impl FnOnce(&mut MtrState) -> R) -> Option<R> {
    STACK.with(|s| s.borrow_mut().last_mut().map(f))
}

/// If an open mtr of this thread changed `frame`, it keeps the page's latch and pin (true).
pub fn keep_if_changed(frame: usize, mode: crate::latch::LatchMode, spid: u16) -> bool {
    STACK.with(|s| {
        let mut stack = s.borrow_mut();
        let level = stack.iter_mut().rev().find(|m| m.changes.iter().any(|c| c.frame == frame));
        match level {
            Some(m) => {
                m.held.push(HeldPage { frame, mode, spid });
                true
            }
            None => false,
        }
    })
}

/// Before a change to the page in `frame` (whose bytes are `buf`): an insert of an open mtr
/// of this thread that still reads its record from the page copies it now, since the change
/// may move or overwrite it (invariant 2).
pub fn complete_pending_records(frame: usize, buf: &[u8; PAGE_SIZE]) {
    if !PENDING_RECORDS.get() {
        return;
    }
    STACK.with(|s| {
        for m in s.borrow_mut().iter_mut() {
            for change in m.changes.iter_mut().filter(|c| c.frame == frame) {
                change.complete_payload(buf);
            }
        }
    })
}

/// The latch mode in which an open mtr of this thread holds `frame`, if it does.
pub fn held_mode(frame: usize) -> Option<crate::latch::LatchMode> {
    STACK.with(|s| {
        s.borrow().iter().flat_map(|m| m.held.iter()).find(|h| h.frame == frame).map(|h| h.mode)
    })
}

/// Closes the innermost mtr and hands over what it collected.
pub fn take_top() -> MtrState {
    STACK.with(|s| s.borrow_mut().pop().expect("an mtr is open"))
}

/// The LSN recovery compares a page with: the last LSN of the group that changed it.
pub type GroupLsn = Lsn;

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer handed back is the next one taken on this thread, empty whatever it held; a
    /// buffer larger than a page is not kept, and at most SPARE_BUFFERS are.
    #[test]
    fn a_buffer_handed_back_is_taken_again_empty_and_the_spares_are_bounded() {
        // Earlier tests on this thread (one test thread) may have left spares: start empty.
        SPARE_BUFFER_LIST.with(|s| s.borrow_mut().clear());
        let mut payload = take_buffer(100);
        payload.extend_from_slice(&[0xAB; 100]);
        let address = payload.as_ptr();
        give_back_buffer(payload);
        let again = take_buffer(50);
        assert_eq!(again.as_ptr(), address, "the same allocation");
        assert!(again.is_empty(), "its old bytes are gone");
        assert!(again.capacity() >= 100);
        give_back_buffer(vec![0u8; SPARE_BUFFER_MAX_BYTES + 1]);
        assert_eq!(take_buffer(0).capacity(), 0, "a larger buffer was not kept");
        for _ in 0..SPARE_BUFFERS + 10 {
            give_back_buffer(Vec::with_capacity(64));
        }
        let kept = SPARE_BUFFER_LIST.with(|s| s.borrow().len());
        assert_eq!(kept, SPARE_BUFFERS);
    }

    /// The runs as the first version found them, one byte at a time: a run goes on while a
    /// changed byte comes within MERGE_GAP_BYTES of its end.
    fn byte_by_byte_runs(before: &[u8; PAGE_SIZE], after: &[u8; PAGE_SIZE]) -> Runs {
        let changed = |i: usize| {
            before[i] != after[i] && !SKIPPED.iter().any(|(from, to)| i >= *from && i < *to)
        };
        let mut runs = Vec::new();
        let mut at = 0;
        while at < PAGE_SIZE {
            if !changed(at) {
                at += 1;
                continue;
            }
            let (start, mut end, mut scan) = (at, at + 1, at + 1);
            while scan < PAGE_SIZE && scan - end < MERGE_GAP_BYTES {
                if changed(scan) {
                    end = scan + 1;
                }
                scan += 1;
            }
            let delta = (start..end).map(|i| if changed(i) { before[i] ^ after[i] } else { 0 });
            runs.push((start as u16, delta.collect()));
            at = end;
        }
        runs
    }

    fn record_bytes(redo: &Redo) -> Vec<u8> {
        match redo {
            Redo::Insert { record, .. } => record.clone(),
            _ => panic!("an insert"),
        }
    }

    #[test]
    fn random_changes_are_redone_exactly_by_their_diff() {
        let mut rng = crate::rng::SplitMix64::new(11);
        for _ in 0..300 {
            let mut before = [0u8; PAGE_SIZE];
            for byte in before.iter_mut() {
                *byte = (rng.next_u64() % 4) as u8;
            }
            let mut after = before;
            for _ in 0..(rng.next_u64() % 40) {
                let at = (rng.next_u64() % PAGE_SIZE as u64) as usize;
                let len = (rng.next_u64() % 64) as usize;
                for byte in after[at..(at + len).min(PAGE_SIZE)].iter_mut() {
                    *byte = byte.wrapping_add(1 + (rng.next_u64() % 3) as u8);
                }
            }
            let runs = diff(&before, &after);
            assert_eq!(runs, byte_by_byte_runs(&before, &after), "word-wise runs end alike");
            let mut redone = before;
            apply_xor(&mut redone, &runs);
            for i in 0..PAGE_SIZE {
                let skipped = SKIPPED.iter().any(|(from, to)| i >= *from && i < *to);
                let expected = if skipped { before[i] } else { after[i] };
                assert_eq!(redone[i], expected, "byte {i}");
            }
            assert!(runs.iter().all(|(_, d)| !d.is_empty() && d[0] != 0), "runs start on a change");
        }
    }

    /// A new page's format payload from its bytes alone is the payload of its diff from a page
    /// of zeros, byte for byte (the page LSN and checksum left out), and redoes the page.
    #[test]
    fn a_format_from_zeros_is_the_diff_from_a_zero_page() {
        let mut rng = crate::rng::SplitMix64::new(12);
        let page = PageId::new(1, 77);
        for _ in 0..100 {
            let mut after = [0u8; PAGE_SIZE];
            for _ in 0..(rng.next_u64() % 30) {
                let at = (rng.next_u64() % PAGE_SIZE as u64) as usize;
                let len = (rng.next_u64() % 300) as usize;
                for byte in after[at..(at + len).min(PAGE_SIZE)].iter_mut() {
                    *byte = (rng.next_u64() % 3) as u8;
                }
            }
            let zeros = [0u8; PAGE_SIZE];
            let fast = PayloadBuilder::runs(page, KIND_FORMAT).from_zeros(&after).finish();
            let slow = PayloadBuilder::runs(page, KIND_FORMAT).diff(&zeros, &after).finish();
            assert_eq!(fast, slow);
            let runs = diff(&zeros, &after);
            let mut from_zero = [0u8; PAGE_SIZE];
            apply_xor(&mut from_zero, &runs);
            for i in 0..PAGE_SIZE {
                let skipped = SKIPPED.iter().any(|(from, to)| i >= *from && i < *to);
                assert_eq!(from_zero[i], if skipped { 0 } else { after[i] }, "byte {i}");
            }
        }
    }

    /// A change confined to saved ranges: the runs found there redo it exactly (the page LSN
    /// and checksum left out), undo it, and are the runs the whole-page diff finds when no
    /// two ranges come within a merge gap of each other.
    #[test]
    fn runs_within_saved_ranges_redo_and_undo_the_change_like_the_whole_page_diff() {
        let mut rng = crate::rng::SplitMix64::new(12);
        for _ in 0..300 {
            let mut before = [0u8; PAGE_SIZE];
            for byte in before.iter_mut() {
                *byte = (rng.next_u64() % 4) as u8;
            }
            let header = (0, 96);
            let middle = (1000 + (rng.next_u64() % 3000) as usize, 0);
            let middle = (middle.0, middle.0 + (rng.next_u64() % 200) as usize);
            let tail = (PAGE_SIZE - 1 - (rng.next_u64() % 300) as usize, PAGE_SIZE);
            let ranges = [header, middle, tail];
            let saved = Saved::of(&before, &ranges);
            let mut after = before;
            for (from, to) in ranges {
                for _ in 0..(rng.next_u64() % 6) {
                    if to > from {
                        let at = from + (rng.next_u64() % (to - from) as u64) as usize;
                        after[at] = after[at].wrapping_add(1 + (rng.next_u64() % 3) as u8);
                    }
                }
            }
            let runs = diff_within(&saved, &after);
            assert_eq!(runs, diff(&before, &after));
            let mut redone = before;
            apply_xor(&mut redone, &runs);
            for i in 0..PAGE_SIZE {
                let skipped = SKIPPED.iter().any(|(from, to)| i >= *from && i < *to);
                assert_eq!(redone[i], if skipped { before[i] } else { after[i] }, "byte {i}");
            }
            apply_xor(&mut redone, &runs);
            assert_eq!(redone, before, "the runs are their own undo");
            let mut undone = after;
            saved.restore(&mut undone);
            assert_eq!(undone, before, "the saved ranges undo it too");
        }
    }

    /// Ranges of up to a merge gap (a PFS extent's bytes, a link) take the short path, unless
    /// they meet the page LSN or checksum: the runs are still those of the whole-page diff,
    /// for old bytes kept or known zero, one range or three, anywhere in the page.
    #[test]
    fn short_ranges_give_the_runs_of_the_whole_page_diff() {
        let mut rng = crate::rng::SplitMix64::new(14);
        for round in 0..2000 {
            let mut before = [0u8; PAGE_SIZE];
            let zero_body = round % 3 == 0;
            if !zero_body {
                for byte in before.iter_mut() {
                    *byte = (rng.next_u64() % 3) as u8;
                }
            }
            let mut ranges = Vec::new();
            for _ in 0..1 + rng.next_u64() % 3 {
                // Near the header's skipped bytes half the time, anywhere otherwise.
                let from = if rng.next_u64().is_multiple_of(2) {
                    30 + (rng.next_u64() % 40) as usize
                } else {
                    (rng.next_u64() % (PAGE_SIZE as u64 - 8)) as usize
                };
                let len = 1 + (rng.next_u64() % MERGE_GAP_BYTES as u64) as usize;
                // Runs never cross a range's end, where the whole-page diff would merge runs
                // of ranges closer than a merge gap: ranges stay further apart.
                let apart = |(f, t): &(usize, usize)| {
                    from + len + MERGE_GAP_BYTES <= *f || from >= *t + MERGE_GAP_BYTES
                };
                if ranges.iter().all(apart) {
                    ranges.push((from, from + len));
                }
            }
            ranges.sort();
            let zero_from = if zero_body { 0 } else { PAGE_SIZE };
            let saved = Saved::of_zero_from(&before, &ranges, zero_from);
            let mut after = before;
            for (from, to) in &ranges {
                for _ in 0..rng.next_u64() % 4 {
                    let at = from + (rng.next_u64() % (to - from) as u64) as usize;
                    after[at] = after[at].wrapping_add(1 + (rng.next_u64() % 3) as u8);
                }
            }
            assert_eq!(diff_within(&saved, &after), diff(&before, &after), "ranges {ranges:?}");
        }
    }

    /// The payload built as a change is made is byte for byte the one encoded from its runs,
    /// and undoing it from the payload gives the page before.
    #[test]
    fn a_built_payload_is_the_encoded_runs_and_undoes_its_change() {
        let mut rng = crate::rng::SplitMix64::new(13);
        let page = PageId::new(2, 4242);
        for round in 0..200 {
            let mut before = [0u8; PAGE_SIZE];
            for byte in before.iter_mut() {
                *byte = (rng.next_u64() % 3) as u8;
            }
            let ranges = [(0, 96), (2000, 2000 + (rng.next_u64() % 400) as usize), (8000, 8192)];
            let saved = Saved::of(&before, &ranges);
            let mut after = before;
            for (from, to) in ranges {
                for _ in 0..(rng.next_u64() % 5) {
                    if to > from {
                        let at = from + (rng.next_u64() % (to - from) as u64) as usize;
                        after[at] = after[at].wrapping_add(1);
                    }
                }
            }
            let kind = if round % 2 == 0 { KIND_XOR } else { KIND_FORMAT };
            let whole = PayloadBuilder::runs(page, kind).diff(&before, &after).finish();
            let runs = diff(&before, &after);
            let redo = if kind == KIND_XOR { Redo::Xor(runs) } else { Redo::Format(runs) };
            assert_eq!(whole, encode_page_payload(page, &redo));
            let within = PayloadBuilder::runs(page, KIND_XOR).diff_within(&saved, &after);
            assert_eq!(within.is_empty(), before == after);
            let within = within.finish();
            assert_eq!(within, encode_page_payload(page, &Redo::Xor(diff_within(&saved, &after))));
            let mut undone = after;
            undo(&mut undone, &within, &Saved::default());
            for i in 0..PAGE_SIZE {
                let skipped = SKIPPED.iter().any(|(from, to)| i >= *from && i < *to);
                assert_eq!(undone[i], if skipped { after[i] } else { before[i] }, "byte {i}");
            }
        }
    }

    /// A saved range that was all zeros keeps no bytes, restores as zeros, and diffs like any
    /// other range; a short range is copied even when zero.
    #[test]
    fn a_zero_range_is_saved_without_its_bytes() {
        let mut page = [0u8; PAGE_SIZE];
        page[..96].fill(7);
        let ranges = [(0, 96), (96, 96 + 4107), (PAGE_SIZE - 2, PAGE_SIZE)];
        let saved = Saved::of(&page, &ranges);
        assert_eq!(saved.zeroed, 0b010, "only the long zero range");
        assert_eq!(saved.bytes.len(), 96 + 2, "its bytes are not kept");
        let before = page;
        page[96..96 + 4107].fill(0x41);
        page[PAGE_SIZE - 2] = 0x60;
        page[3] = 9;
        let runs = diff_within(&saved, &page);
        assert_eq!(runs, diff(&before, &page));
        assert_eq!(
            runs.len(),
            3,
            "{:?}",
            runs.iter().map(|(o, d)| (o, d.len())).collect::<Vec<_>>()
        );
        saved.restore(&mut page);
        assert_eq!(page, before);
    }

    /// One non-zero byte anywhere, in a 64-byte step or in the tail after the last step, makes
    /// a range not zero.
    #[test]
    fn one_non_zero_byte_anywhere_makes_a_range_not_zero() {
        for len in [0, 1, 63, 64, 65, 256, 4107] {
            let mut bytes = vec![0u8; len];
            assert!(is_zero(&bytes), "{len} zeros");
            for at in 0..len {
                bytes[at] = 0x80;
                assert!(!is_zero(&bytes), "length {len}, byte {at} set");
                bytes[at] = 0;
            }
        }
    }

    #[test]
    fn a_diff_redoes_and_undoes_a_change_and_leaves_the_lsn_and_checksum_out() {
        let mut before = [0u8; PAGE_SIZE];
        before[100] = 7;
        let mut after = before;
        after[100] = 9;
        after[103] = 1;
        after[5000..5010].fill(0xAB);
        after[42] = 0xFF; // page LSN: not logged
        after[61] = 0xFF; // checksum: not logged
        let runs = diff(&before, &after);
        assert_eq!(runs.len(), 2, "{runs:?}");
        let mut redo = before;
        apply_xor(&mut redo, &runs);
        assert_eq!(redo[100..104], after[100..104]);
        assert_eq!(redo[5000..5010], after[5000..5010]);
        assert_eq!((redo[42], redo[61]), (0, 0));
        apply_xor(&mut redo, &runs);
        assert_eq!(redo, before, "applying the runs again undoes them");
        let redo = Redo::Xor(runs);
        let payload = encode_page_payload(PageId::new(3, 77), &redo);
        assert_eq!(decode_page_payload(&payload), Some((PageId::new(3, 77), redo)));
    }

    /// Invariant 1 for inserts: redoing a logged insert on the page before it gives the page
    /// after it byte for byte, and the saved ranges restore the page before it.
    #[test]
    fn a_logged_insert_redoes_exactly_and_its_saved_ranges_undo_it() {
        let mut rng = crate::rng::SplitMix64::new(5);
        let mut page = [0u8; PAGE_SIZE];
        let id = PageId::new(1, 9);
        crate::datapage::format(&mut page, id, crate::page::PageType::Data, 7, 0, 8);
        let columns =
            [crate::record::Column::new("c", crate::record::SqlType::VarBinary(200), false)];
        let layout = crate::record::Layout::new(&columns);
        for _ in 0..40 {
            let count = crate::datapage::slot_count(&page);
            let slot = (rng.next_u64() % (u64::from(count) + 1)) as u16;
            let len = 1 + (rng.next_u64() % 120) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            let record = crate::record::encode(
                &columns,
                &layout,
                &[crate::record::Value::Bytes(bytes)],
                crate::record::RecordType::Primary,
            )
            .expect("encodes");
            let Some(ranges) = crate::datapage::insert_ranges(&page, slot, record.len()) else {
                break;
            };
            let before_page = page;
            let before = Saved::of(&page, &ranges);
            assert!(crate::datapage::insert(&mut page, slot, &record));
            let redo = Redo::Insert { slot, record };
            let payload = encode_page_payload(id, &redo);
            let (_, decoded) = decode_page_payload(&payload).expect("decodes");
            let mut redone = before_page;
            decoded.apply(&mut redone).expect("fits");
            assert_eq!(redone, page, "redo gives the same bytes");
            assert_eq!(payload, insert_payload(id, slot, &record_bytes(&redo)), "built alike");
            let mut undone = page;
            undo(&mut undone, &payload, &before);
            assert_eq!(undone, before_page, "the saved ranges undo it");
        }
        assert!(crate::datapage::slot_count(&page) > 20, "the page filled");
        let full = page;
        let beyond =
            Redo::Insert { slot: crate::datapage::slot_count(&page) + 1, record: vec![0x10; 9] };
        assert!(beyond.apply(&mut page).is_err(), "a slot beyond the array: the page disagrees");
        let too_big = Redo::Insert { slot: 0, record: vec![0x10; 8000] };
        assert!(too_big.apply(&mut page).is_err(), "no room: the page disagrees");
        assert_eq!(page, full, "a redo that does not fit leaves the page alone");
    }
}
