//! Data and index pages: records behind a slot array, free-space accounting, ghost records and
//! compaction (reference §1.3, §1.5, §1.8).
//!
//! Layout: the 96-byte header, records from offset 96 upwards (the next one goes at
//! m_freeData), and the slot array growing down from the end (slot i at 8190 - 2i, holding the
//! record's offset). Deleting leaves a hole; m_freeCnt counts every free byte, holes included,
//! and an insert that does not fit in the contiguous space compacts the page first.
//!
//! Index pages keep slots in key order, so inserts and deletes shift the slots after them
//! ([`insert`], [`delete`]). Heap pages keep every row's slot number (its RID) stable: a delete
//! leaves an empty slot (offset 0) that a later insert reuses ([`remove_keeping_slots`],
//! [`insert_anywhere`]).
//!
//! Invariants (checked by [`check`], asserted in debug builds after every change):
//! 1. m_freeCnt = 8192 - 96 - (sum of record lengths) - 2 x m_slotCnt.
//! 2. Every non-empty slot points inside [96, m_freeData) and no two records overlap.
//! 3. m_freeData + 2 x m_slotCnt <= 8192.
//! 4. m_ghostRecCnt equals the number of records of a ghost type.

use crate::page::{self, PageBuf, PageHeader, PageType, slot_offset};
use crate::record::{self, BadRecord, RecordType};
use crate::units::{PAGE_HEADER_SIZE, PAGE_SIZE, PageId};

const BODY_BYTES: usize = PAGE_SIZE - PAGE_HEADER_SIZE;

/// Formats an empty data (level 0) or index page of an allocation unit.
pub fn format(
    buf: &mut PageBuf,
    page_id: PageId,
    page_type: PageType,
    au_id: u64,
    level: u8,
    pminlen: u16,
) {
    buf.fill(0);
    format_new(buf, page_id, page_type, au_id, level, pminlen);
}

/// Formats a page that [`crate::buffer::BufferPool::new_page`] has just zeroed: only the
/// header is written (no second 8 KB clear).
pub fn format_new(
    buf: &mut PageBuf,
    page_id: PageId,
    page_type: PageType,
    au_id: u64,
    level: u8,
    pminlen: u16,
) {
    debug_assert!(buf.iter().all(|b| *b == 0), "format_new takes a zeroed page");
    let mut header = PageHeader::new(page_type, page_id);
    header.set_allocation_unit_id(au_id);
    header.level = level;
    header.pminlen = pminlen;
    header.write(&mut buf[..]);
}

fn header(buf: &PageBuf) -> PageHeader {
    PageHeader::read(&buf[..])
}

pub fn slot_count(buf: &PageBuf) -> u16 {
    page::header_slot_count(&buf[..])
}

/// Free bytes (m_freeCnt), holes included.
pub fn free_bytes(buf: &PageBuf) -> usize {
    usize::from(page::header_free_count(&buf[..]))
}

/// Whether a record of `len` bytes fits (with its slot), possibly after compaction.
pub fn fits(buf: &PageBuf, len: usize) -> bool {
    free_bytes(buf) >= len + 2
}

fn contiguous_free(buf: &PageBuf) -> usize {
    let free_data = usize::from(page::header_free_data(&buf[..]));
    PAGE_SIZE.saturating_sub(free_data + 2 * usize::from(slot_count(buf)))
}

/// Whether `slot` is an empty heap slot (a deleted row whose RID may be reused).
pub fn is_empty_slot(buf: &PageBuf, slot: u16) -> bool {
    slot_entry(buf, slot) == Ok(0)
}

/// The slot array's entry for `slot`: its record's offset, 0 for an empty slot. An error when
/// the slot is beyond m_slotCnt or beyond what a page can hold (a corrupt m_slotCnt can claim
/// more slots than fit, whose entries would lie before the page).
fn slot_entry(buf: &PageBuf, slot: u16) -> Result<usize, BadRecord> {
    if slot >= slot_count(buf) {
        return Err(BadRecord("slot beyond m_slotCnt"));
    }
    if 2 * (usize::from(slot) + 1) > BODY_BYTES {
        return Err(BadRecord("m_slotCnt larger than a page can hold"));
    }
    Ok(usize::from(slot_offset(&buf[..], slot)))
}

/// The record in `slot`.
pub fn record(buf: &PageBuf, slot: u16) -> Result<&[u8], BadRecord> {
    let prefix = record_prefix(buf, slot)?;
    let len = record::record_len(prefix)?;
    Ok(&prefix[..len])
}

/// The bytes from the start of the record in `slot` to m_freeData: the record and what follows
/// it, without parsing the record's length. Key comparisons of a binary search read only the
/// record's first bytes, so a probe touches the cache lines of its key, not of its whole row.
pub fn record_prefix(buf: &PageBuf, slot: u16) -> Result<&[u8], BadRecord> {
    let offset = slot_entry(buf, slot)?;
    prefix_at(buf, offset, usize::from(page::header_free_data(&buf[..])))
}

/// The bytes from `offset` (a slot's entry) to m_freeData (`free_data`), if the offset lies in
/// the record area (invariant 2) and m_freeData on the page.
fn prefix_at(buf: &PageBuf, offset: usize, free_data: usize) -> Result<&[u8], BadRecord> {
    if offset == 0 {
        return Err(BadRecord("empty slot"));
    }
    if offset < PAGE_HEADER_SIZE || offset >= free_data || free_data > PAGE_SIZE {
        return Err(BadRecord("slot offset outside the record area"));
    }
    Ok(&buf[offset..free_data])
}

/// A page's records as a binary search reads them: m_slotCnt and m_freeData are read and
/// checked once (invariant 3's bounds), so each probe reads its slot and checks only that the
/// offset lies in the record area (invariant 2). [`record_prefix`] does all of it at every
/// call; a descent makes about nine probes a row, and each now costs 37 fewer instructions.
pub struct RecordArea<'p> {
    buf: &'p PageBuf,
    slot_count: u16,
    free_data: usize,
}

impl<'p> RecordArea<'p> {
    /// The page's record area; an error if m_slotCnt claims more slots than a page holds or
    /// m_freeData lies past the page.
    pub fn of(buf: &'p PageBuf) -> Result<RecordArea<'p>, BadRecord> {
        let slot_count = slot_count(buf);
        if 2 * usize::from(slot_count) > BODY_BYTES {
            return Err(BadRecord("m_slotCnt larger than a page can hold"));
        }
        let free_data = usize::from(page::header_free_data(&buf[..]));
        if free_data > PAGE_SIZE {
            return Err(BadRecord("slot offset outside the record area"));
        }
        Ok(RecordArea { buf, slot_count, free_data })
    }

    pub fn slot_count(&self) -> u16 {
        self.slot_count
    }

    /// [`record_prefix`] of `slot`, with the same errors.
    pub fn prefix(&self, slot: u16) -> Result<&'p [u8], BadRecord> {
        if slot >= self.slot_count {
            return Err(BadRecord("slot beyond m_slotCnt"));
        }
        let offset = usize::from(slot_offset(&self.buf[..], slot));
        prefix_at(self.buf, offset, self.free_data)
    }

    /// Prefetches the first key bytes of the record in `slot`, if the slot exists: a binary
    /// search hints both of its possible next probes before it compares the current one, so
    /// that their cache misses overlap with this probe's instead of following it.
    pub fn touch(&self, slot: u16) {
        if slot < self.slot_count {
            let offset = usize::from(slot_offset(&self.buf[..], slot));
            crate::prefetch::into_l1(self.buf.as_ptr().wrapping_add(offset + 4), 1);
        }
    }
}

/// Cache lines in a page: a page with more records than this is touched line by line.
const PAGE_LINES: usize = PAGE_SIZE / 64;

/// Prefetches the first key byte of every record on the page and the first 256 bytes at
/// m_freeData (where an insert puts its record), so that their cache misses overlap. A leaf
/// that a random key lands on is mostly cold: a binary search over it took one cache miss
/// after another (a slot, then its record), about a tenth of `bench insert`'s CPU. A page of
/// more records than it has cache lines (narrow rows) is prefetched a line at a time up to
/// m_freeData instead, which reaches every record with fewer hints. Index pages, few and hot,
/// keep [`RecordArea::touch`]'s two probes ahead instead. (Until 2026-11-29 these were plain
/// loads: they overlapped each other's misses but held the CPU until the last arrived; as
/// prefetch hints, the search starts while they are in flight, 1.05x rows/s with one session.)
pub fn touch_records(buf: &PageBuf) {
    // At most BODY_BYTES / 2 slots fit below the header: a larger m_slotCnt is corrupt.
    let count = slot_count(buf).min((BODY_BYTES / 2) as u16);
    let free_data = usize::from(page::header_free_data(&buf[..])).min(PAGE_SIZE);
    // A hint never faults (crate::prefetch), so a corrupt slot's offset needs no check here;
    // the search that follows checks what it reads.
    let start = buf.as_ptr();
    if usize::from(count) <= PAGE_LINES {
        for slot in 0..count {
            let offset = usize::from(slot_offset(&buf[..], slot));
            crate::prefetch::into_l1(start.wrapping_add(offset + 4), 1);
        }
    } else {
        let records_bytes = free_data.saturating_sub(PAGE_HEADER_SIZE);
        crate::prefetch::into_l1(start.wrapping_add(PAGE_HEADER_SIZE), records_bytes);
    }
    crate::prefetch::into_l1(start.wrapping_add(free_data), (PAGE_SIZE - free_data).min(256));
}

fn set_slot(buf: &mut PageBuf, slot: u16, offset: u16) {
    let at = PAGE_SIZE - 2 * (usize::from(slot) + 1);
    buf[at..at + 2].copy_from_slice(&offset.to_le_bytes());
}

/// The byte ranges `[from, to)` that [`insert`] of a `len`-byte record as `slot` changes, if
/// it fits in the contiguous free space (no compaction): the header, the record's place at
/// m_freeData, and the slot array from the new last slot to `slot`. None if it would compact
/// the page, or not fit. The mtr logs such an insert logically ([`crate::log::mtr::Redo`]).
pub fn insert_ranges(buf: &PageBuf, slot: u16, len: usize) -> Option<[(usize, usize); 3]> {
    let count = slot_count(buf);
    if slot > count || contiguous_free(buf) < len + 2 {
        return None;
    }
    let free_data = usize::from(page::header_free_data(&buf[..]));
    let slots_from = PAGE_SIZE - 2 * (usize::from(count) + 1);
    let slots_to = PAGE_SIZE - 2 * usize::from(slot);
    Some([(0, PAGE_HEADER_SIZE), (free_data, free_data + len), (slots_from, slots_to)])
}

/// Inserts a record as slot `slot` (later slots move up by one). False if it does not fit.
pub fn insert(buf: &mut PageBuf, slot: u16, bytes: &[u8]) -> bool {
    let count = slot_count(buf);
    assert!(slot <= count, "inserting beyond the end of the slot array");
    if !fits(buf, bytes.len()) {
        return false;
    }
    if contiguous_free(buf) < bytes.len() + 2 {
        compact(buf);
    }
    // The four header fields an insert changes are read and written in place: decoding and
    // re-encoding the whole header took more instructions than the rest of the insert.
    let at = usize::from(page::header_free_data(&buf[..]));
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    // Slots `slot..count` move up by one: their entries, which sit below slot 0's at the end
    // of the page, move two bytes down.
    let (first_entry, slot_entry_end) =
        (PAGE_SIZE - 2 * usize::from(count), PAGE_SIZE - 2 * usize::from(slot));
    buf.copy_within(first_entry..slot_entry_end, first_entry - 2);
    set_slot(buf, slot, at as u16);
    let free_count = page::header_free_count(&buf[..]);
    page::set_header_slot_count(&mut buf[..], count + 1);
    page::set_header_free_data(&mut buf[..], (at + bytes.len()) as u16);
    page::set_header_free_count(&mut buf[..], free_count - (bytes.len() + 2) as u16);
    if is_ghost(bytes[0]) {
        let ghosts = page::header_ghost_record_count(&buf[..]);
        page::set_header_ghost_record_count(&mut buf[..], ghosts + 1);
    }
    debug_assert_eq!(check(buf), Ok(()), "datapage invariants after insert");
    true
}

/// Heap insert: puts the record in the first empty slot, or in a new last slot. Returns the
/// slot, or None if it does not fit.
pub fn insert_anywhere(buf: &mut PageBuf, bytes: &[u8]) -> Option<u16> {
    let h = header(buf);
    let Some(slot) = (0..h.slot_count).find(|slot| is_empty_slot(buf, *slot)) else {
        let slot = h.slot_count;
        return insert(buf, slot, bytes).then_some(slot);
    };
    if free_bytes(buf) < bytes.len() {
        return None;
    }
    if contiguous_free(buf) < bytes.len() {
        compact(buf);
    }
    let mut h = header(buf);
    let at = usize::from(h.free_data);
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    set_slot(buf, slot, at as u16);
    h.free_data += bytes.len() as u16;
    h.free_count -= bytes.len() as u16;
    if is_ghost(bytes[0]) {
        h.ghost_record_count += 1;
    }
    h.write(&mut buf[..]);
    debug_assert_eq!(check(buf), Ok(()), "datapage invariants after insert_anywhere");
    Some(slot)
}

/// Heap delete: frees the record's bytes and leaves its slot empty, so that the other rows keep
/// their RIDs. Trailing empty slots are dropped.
pub fn remove_keeping_slots(buf: &mut PageBuf, slot: u16) -> Result<(), BadRecord> {
    let (len, ghost) = {
        let bytes = record(buf, slot)?;
        (bytes.len(), is_ghost(bytes[0]))
    };
    set_slot(buf, slot, 0);
    let mut h = header(buf);
    h.free_count += len as u16;
    if ghost {
        h.ghost_record_count -= 1;
    }
    while h.slot_count > 0 && slot_offset(&buf[..], h.slot_count - 1) == 0 {
        h.slot_count -= 1;
        h.free_count += 2;
    }
    h.write(&mut buf[..]);
    debug_assert_eq!(check(buf), Ok(()), "datapage invariants after remove_keeping_slots");
    Ok(())
}

fn is_ghost(status_a: u8) -> bool {
    let kind = record::record_type(status_a);
    kind == RecordType::GhostData as u8 || kind == RecordType::GhostIndex as u8
}

/// Removes a record and its slot (later slots move down by one). Its bytes become a hole.
pub fn delete(buf: &mut PageBuf, slot: u16) -> Result<(), BadRecord> {
    let (len, ghost) = {
        let bytes = record(buf, slot)?;
        (bytes.len(), is_ghost(bytes[0]))
    };
    let mut h = header(buf);
    for moving in slot + 1..h.slot_count {
        let offset = slot_offset(&buf[..], moving);
        set_slot(buf, moving - 1, offset);
    }
    set_slot(buf, h.slot_count - 1, 0);
    h.slot_count -= 1;
    h.free_count += (len + 2) as u16;
    if ghost {
        h.ghost_record_count -= 1;
    }
    h.write(&mut buf[..]);
    debug_assert_eq!(check(buf), Ok(()), "datapage invariants after delete");
    Ok(())
}

/// Replaces the record in `slot`. False (and the page unchanged) if the new one does not fit.
pub fn replace(buf: &mut PageBuf, slot: u16, bytes: &[u8]) -> Result<bool, BadRecord> {
    let old = record(buf, slot)?.to_vec();
    if bytes.len() <= old.len() {
        let offset = usize::from(slot_offset(&buf[..], slot));
        buf[offset..offset + bytes.len()].copy_from_slice(bytes);
        let mut h = header(buf);
        h.free_count += (old.len() - bytes.len()) as u16;
        h.ghost_record_count =
            h.ghost_record_count + u16::from(is_ghost(bytes[0])) - u16::from(is_ghost(old[0]));
        h.write(&mut buf[..]);
        // The tail of the old record becomes a hole; record_len no longer reaches it.
        debug_assert_eq!(check(buf), Ok(()), "datapage invariants after replace");
        return Ok(true);
    }
    delete(buf, slot)?;
    if insert(buf, slot, bytes) {
        return Ok(true);
    }
    assert!(insert(buf, slot, &old), "the old record fits where it was");
    Ok(false)
}

/// Turns the record in `slot` into a ghost (deleted, not yet removed by ghost cleanup).
pub fn make_ghost(buf: &mut PageBuf, slot: u16) -> Result<(), BadRecord> {
    let offset = {
        let bytes = record(buf, slot)?;
        if is_ghost(bytes[0]) {
            return Ok(());
        }
        usize::from(slot_offset(&buf[..], slot))
    };
    let kind = if record::record_type(buf[offset]) == RecordType::Index as u8 {
        RecordType::GhostIndex
    } else {
        RecordType::GhostData
    };
    buf[offset] = (buf[offset] & !0x0E) | ((kind as u8) << 1);
    let mut h = header(buf);
    h.ghost_record_count += 1;
    h.write(&mut buf[..]);
    Ok(())
}

/// The right part of a page split leaves the page: slots `from..` are removed and their
/// records become holes, while the records that stay do not move (SQL Server's
/// LOP_DELETE_SPLIT), so the change is the header and the slot array's tail.
pub fn truncate(buf: &mut PageBuf, from: u16) -> Result<(), BadRecord> {
    let mut h = header(buf);
    assert!(from <= h.slot_count, "truncating beyond the end of the slot array");
    for slot in (from..h.slot_count).rev() {
        let (len, ghost) = {
            let bytes = record(buf, slot)?;
            (bytes.len(), is_ghost(bytes[0]))
        };
        set_slot(buf, slot, 0);
        h.free_count += (len + 2) as u16;
        if ghost {
            h.ghost_record_count -= 1;
        }
    }
    h.slot_count = from;
    h.write(&mut buf[..]);
    debug_assert_eq!(check(buf), Ok(()), "datapage invariants after truncate");
    Ok(())
}

/// Rewrites the records contiguously in slot order, removing holes.
pub fn compact(buf: &mut PageBuf) {
    let h = header(buf);
    // The records are copied from a copy of the page: one 8 KB copy, not an allocation each.
    let old: PageBuf = *buf;
    let mut at = PAGE_HEADER_SIZE;
    for slot in 0..h.slot_count {
        if is_empty_slot(&old, slot) {
            continue;
        }
        let bytes = record(&old, slot).expect("a valid page compacts");
        buf[at..at + bytes.len()].copy_from_slice(bytes);
        set_slot(buf, slot, at as u16);
        at += bytes.len();
    }
    let slots_at = PAGE_SIZE - 2 * usize::from(h.slot_count);
    buf[at..slots_at].fill(0);
    let mut h = header(buf);
    h.free_data = at as u16;
    h.write(&mut buf[..]);
}

/// The PFS fullness bucket of a heap page: 0 empty, 1 up to 50 %, 2 up to 80 %, 3 up to 95 %,
/// 4 above 95 % used (reference §2.4).
pub fn pfs_fullness(buf: &PageBuf) -> u8 {
    let h = header(buf);
    if usize::from(h.free_count) + 2 * usize::from(h.slot_count) == BODY_BYTES {
        return 0;
    }
    let used_pct = (BODY_BYTES - usize::from(h.free_count)) * 100 / BODY_BYTES;
    match used_pct {
        0..=50 => 1,
        51..=80 => 2,
        81..=95 => 3,
        _ => 4,
    }
}

/// Free bytes that a page in a PFS fullness bucket is sure to have (what an insert may count
/// on without reading the page).
pub fn guaranteed_free_bytes(bucket: u8) -> usize {
    match bucket {
        0 => BODY_BYTES,
        1 => BODY_BYTES / 2,
        2 => BODY_BYTES * 20 / 100,
        3 => BODY_BYTES * 5 / 100,
        _ => 0,
    }
}

/// Sets the bits of bytes `[start, end)`; false if any was set already.
fn cover(covered: &mut [u64; PAGE_SIZE / 64], start: usize, end: usize) -> bool {
    let mut at = start;
    while at < end {
        let (word, bit) = (at / 64, at % 64);
        let bits = (end - at).min(64 - bit);
        let mask = if bits == 64 { u64::MAX } else { ((1u64 << bits) - 1) << bit };
        if covered[word] & mask != 0 {
            return false;
        }
        covered[word] |= mask;
        at += bits;
    }
    true
}

/// Checks invariants 1-4.
pub fn check(buf: &PageBuf) -> Result<(), BadRecord> {
    let h = header(buf);
    if usize::from(h.free_data) + 2 * usize::from(h.slot_count) > PAGE_SIZE
        || usize::from(h.free_data) < PAGE_HEADER_SIZE
    {
        return Err(BadRecord("m_freeData and the slot array overlap"));
    }
    // One bit per byte of the page: a record whose bytes are already covered overlaps another.
    // (It runs on every page read from disk, so no allocation and no sort.)
    let mut covered = [0u64; PAGE_SIZE / 64];
    let mut used = 0;
    let mut ghosts = 0;
    // The slot array lies within the page (checked above), so each entry is read directly:
    // what [`record`] checks per slot, without its per-slot header reads.
    let free_data = usize::from(h.free_data);
    for slot in 0..h.slot_count {
        let start = usize::from(slot_offset(&buf[..], slot));
        if start == 0 {
            continue; // an empty heap slot
        }
        if start < PAGE_HEADER_SIZE || start >= free_data {
            return Err(BadRecord("slot offset outside the record area"));
        }
        let len = record::record_len(&buf[start..free_data])?;
        if !cover(&mut covered, start, start + len) {
            return Err(BadRecord("records overlap"));
        }
        used += len;
        ghosts += u16::from(is_ghost(buf[start]));
    }
    let slots_bytes = 2 * usize::from(h.slot_count);
    if used + slots_bytes > BODY_BYTES
        || usize::from(h.free_count) != BODY_BYTES - used - slots_bytes
    {
        return Err(BadRecord("m_freeCnt does not match the records"));
    }
    if ghosts != h.ghost_record_count {
        return Err(BadRecord("m_ghostRecCnt does not match the records"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Column, Layout, SqlType, Value, encode};
    use proptest::prelude::*;

    fn page() -> Box<PageBuf> {
        let mut buf = crate::page::new_page_buf();
        format(&mut buf, PageId::new(1, 100), PageType::Data, 72_057_594_045_792_256, 0, 12);
        buf
    }

    fn row(n: i32, text_len: usize) -> Vec<u8> {
        let columns = vec![
            Column::new("a", SqlType::Int, false),
            Column::new("b", SqlType::VarChar(8000), false),
        ];
        let layout = Layout::new(&columns);
        encode(
            &columns,
            &layout,
            &[Value::Int(n), Value::Text("x".repeat(text_len))],
            RecordType::Primary,
        )
        .unwrap()
    }

    /// A binary search's probes ([`RecordArea::prefix`]) read what [`record_prefix`] reads,
    /// and refuse what it refuses, on a sound page and on each kind of bad slot.
    #[test]
    fn the_record_area_reads_each_slot_as_record_prefix_does() {
        let mut buf = page();
        for n in 0..5 {
            assert!(insert(&mut buf, n, &row(n as i32, 10 + n as usize)));
        }
        let records = RecordArea::of(&buf).unwrap();
        assert_eq!(records.slot_count(), 5);
        for slot in 0..7 {
            assert_eq!(records.prefix(slot), record_prefix(&buf, slot), "slot {slot}");
            records.touch(slot);
        }
        let slot_at = |slot: usize| PAGE_SIZE - 2 * (slot + 1);
        let free_data = usize::from(page::header_free_data(&buf[..]));
        for (offset, why) in
            [(0u16, "empty slot"), (40, "in the header"), (free_data as u16, "at m_freeData")]
        {
            let mut bad = buf.clone();
            bad[slot_at(2)..slot_at(2) + 2].copy_from_slice(&offset.to_le_bytes());
            let records = RecordArea::of(&bad).unwrap();
            assert!(records.prefix(2).is_err(), "{why}");
            assert_eq!(records.prefix(2), record_prefix(&bad, 2), "{why}");
            assert!(records.prefix(1).is_ok(), "{why}: the other slots still read");
        }
        let mut past = buf.clone();
        past[30..32].copy_from_slice(&(PAGE_SIZE as u16 + 1).to_le_bytes()); // m_freeData
        assert!(RecordArea::of(&past).is_err(), "m_freeData past the page");
    }

    #[test]
    fn a_slot_count_beyond_the_page_is_an_error_not_a_panic() {
        let mut buf = page();
        assert!(insert(&mut buf, 0, &row(1, 10)));
        buf[22..24].copy_from_slice(&60_000u16.to_le_bytes()); // m_slotCnt
        touch_records(&buf);
        buf[30..32].copy_from_slice(&u16::MAX.to_le_bytes()); // m_freeData past the page
        touch_records(&buf);
        assert!(RecordArea::of(&buf).is_err(), "m_slotCnt past the page");
        for slot in [0, 4_000, 4_047, 4_048, 5_000, 59_999] {
            if slot >= 4_048 {
                assert!(record_prefix(&buf, slot).is_err(), "slot {slot}");
                assert!(!is_empty_slot(&buf, slot), "slot {slot}");
            }
        }
        assert!(check(&buf).is_err());
    }

    #[test]
    fn check_finds_overlapping_records_and_a_wrong_free_count() {
        let mut buf = page();
        for n in 0..3 {
            assert!(insert(&mut buf, n, &row(i32::from(n), 40)));
        }
        assert_eq!(check(&buf), Ok(()));
        // Slot 2 made to point inside slot 1's record (a corruption a checksum can hide).
        let mut overlapping = buf.clone();
        let inside = slot_offset(&overlapping[..], 1) + 4;
        set_slot(&mut overlapping, 2, inside);
        assert!(check(&overlapping).is_err());
        // Two slots naming the same record.
        let mut shared = buf.clone();
        let first = slot_offset(&shared[..], 0);
        set_slot(&mut shared, 1, first);
        assert_eq!(check(&shared), Err(BadRecord("records overlap")));
        let mut miscounted = buf.clone();
        let free = page::header_free_count(&miscounted[..]);
        page::set_header_free_count(&mut miscounted[..], free + 1);
        assert_eq!(check(&miscounted), Err(BadRecord("m_freeCnt does not match the records")));
    }

    #[test]
    fn touching_a_page_with_slots_or_m_free_data_past_its_end_does_not_panic() {
        let mut buf = page();
        assert!(insert(&mut buf, 0, &row(1, 10)));
        assert!(insert(&mut buf, 1, &row(2, 10)));
        set_slot(&mut buf, 1, u16::MAX); // a slot pointing past the page
        touch_records(&buf);
        buf[30..32].copy_from_slice(&u16::MAX.to_le_bytes()); // m_freeData past the page
        touch_records(&buf);
        for count in [PAGE_LINES as u16, PAGE_LINES as u16 + 1, u16::MAX] {
            buf[22..24].copy_from_slice(&count.to_le_bytes()); // m_slotCnt
            touch_records(&buf);
        }
    }

    #[test]
    fn the_dbcc_demo_arithmetic_holds() {
        // reference §1.3: two records of 2445 bytes -> m_freeData 4986, m_freeCnt 3202.
        let mut buf = page();
        let record = row(1, 2445 - 4 - 4 - 2 - 1 - 2 - 2);
        assert_eq!(record.len(), 2445);
        assert!(insert(&mut buf, 0, &record));
        assert!(insert(&mut buf, 1, &record));
        let h = PageHeader::read(&buf[..]);
        assert_eq!((h.free_data, h.free_count, h.slot_count), (4986, 3202, 2));
        assert_eq!(slot_offset(&buf[..], 1), 2541);
        assert_eq!(pfs_fullness(&buf), 2, "60 % used: the 51-80 % bucket");
    }

    #[test]
    fn inserting_in_the_middle_keeps_slot_order_and_a_full_page_compacts() {
        let mut buf = page();
        assert!(insert(&mut buf, 0, &row(1, 10)));
        assert!(insert(&mut buf, 1, &row(3, 10)));
        assert!(insert(&mut buf, 1, &row(2, 10)));
        let first_int = |buf: &PageBuf, slot| {
            i32::from_le_bytes(record(buf, slot).unwrap()[4..8].try_into().unwrap())
        };
        assert_eq!((first_int(&buf, 0), first_int(&buf, 1), first_int(&buf, 2)), (1, 2, 3));
        let mut big = page();
        let mut n = 0;
        loop {
            let next = slot_count(&big);
            if !insert(&mut big, next, &row(n, 1000)) {
                break;
            }
            n += 1;
        }
        assert_eq!(n, 7, "seven 1,015-byte rows fit in 8,096 bytes");
        delete(&mut big, 2).unwrap();
        delete(&mut big, 4).unwrap();
        assert!(insert(&mut big, 0, &row(99, 1800)), "fits after compaction of the holes");
        assert_eq!(check(&big), Ok(()));
    }

    #[test]
    fn ghosts_are_counted_and_replace_keeps_the_page_valid() {
        let mut buf = page();
        for n in 0..5 {
            assert!(insert(&mut buf, n, &row(i32::from(n), 20)));
        }
        make_ghost(&mut buf, 1).unwrap();
        make_ghost(&mut buf, 1).unwrap();
        assert_eq!(PageHeader::read(&buf[..]).ghost_record_count, 1);
        assert_eq!(record::record_type(record(&buf, 1).unwrap()[0]), RecordType::GhostData as u8);
        assert_eq!(replace(&mut buf, 3, &row(30, 500)), Ok(true));
        assert_eq!(replace(&mut buf, 3, &row(31, 5)), Ok(true));
        assert_eq!(replace(&mut buf, 0, &row(0, 8000)), Ok(false), "too big: nothing changes");
        delete(&mut buf, 1).unwrap();
        assert_eq!(PageHeader::read(&buf[..]).ghost_record_count, 0);
        assert_eq!(check(&buf), Ok(()));
    }

    #[test]
    fn heap_deletes_keep_rids_stable_and_reuse_empty_slots() {
        let mut buf = page();
        for n in 0..4 {
            assert_eq!(insert_anywhere(&mut buf, &row(n, 100)), Some(n as u16));
        }
        remove_keeping_slots(&mut buf, 1).unwrap();
        assert!(is_empty_slot(&buf, 1));
        assert_eq!(record(&buf, 2).unwrap()[4], 2, "row 2 keeps slot 2");
        assert_eq!(insert_anywhere(&mut buf, &row(9, 50)), Some(1), "the empty slot is reused");
        remove_keeping_slots(&mut buf, 3).unwrap();
        remove_keeping_slots(&mut buf, 2).unwrap();
        assert_eq!(slot_count(&buf), 2, "trailing empty slots are dropped");
        compact(&mut buf);
        assert_eq!(check(&buf), Ok(()));
        remove_keeping_slots(&mut buf, 0).unwrap();
        remove_keeping_slots(&mut buf, 1).unwrap();
        assert_eq!((slot_count(&buf), pfs_fullness(&buf)), (0, 0));
    }

    proptest! {
        #[test]
        fn random_changes_keep_every_invariant_and_every_record(ops in proptest::collection::vec((0u8..3, 0u16..40, 0usize..900), 1..200)) {
            let mut buf = page();
            let mut model: Vec<Vec<u8>> = Vec::new();
            for (n, (op, at, len)) in ops.into_iter().enumerate() {
                let slot = if model.is_empty() { 0 } else { at % (model.len() as u16 + 1) };
                match op {
                    0 => {
                        let bytes = row(n as i32, len);
                        if insert(&mut buf, slot, &bytes) {
                            model.insert(usize::from(slot), bytes);
                        } else {
                            prop_assert!(!fits(&buf, bytes.len()));
                        }
                    }
                    1 if !model.is_empty() => {
                        let slot = slot.min(model.len() as u16 - 1);
                        delete(&mut buf, slot).unwrap();
                        model.remove(usize::from(slot));
                    }
                    _ if !model.is_empty() => {
                        let slot = slot.min(model.len() as u16 - 1);
                        let bytes = row(n as i32, len);
                        if replace(&mut buf, slot, &bytes).unwrap() {
                            model[usize::from(slot)] = bytes;
                        }
                    }
                    _ => {}
                }
                prop_assert_eq!(check(&buf), Ok(()));
            }
            prop_assert_eq!(usize::from(slot_count(&buf)), model.len());
            for (slot, bytes) in model.iter().enumerate() {
                prop_assert_eq!(record(&buf, slot as u16).unwrap(), &bytes[..]);
            }
        }
    }
}
