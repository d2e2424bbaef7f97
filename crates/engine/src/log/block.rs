//! Log blocks: the unit of log I/O, 512 bytes to 60 KB (reference §5.1).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | flag bits: 0x40 valid |
//! | 2 | 2 | record count |
//! | 4 | 4 | FSeqNo of the VLF the block belongs to |
//! | 8 | 4 | block offset in the VLF, 512-byte units |
//! | 12 | 4 | block size, bytes (a multiple of 512) |
//! | 16 | 4 | bytes used by header and records |
//! | 20 | 4 | CRC-32C of the previous block of the log (0 for the log's first block) |
//! | 24 | 4 | CRC-32C of the whole block with this field zero |
//! | 28 | 4 | reserved (0) |
//! | 32 | n | records, each a multiple of 4 bytes |
//! | size - 2k | 2k | record offsets, slot i at size - 2(i + 1), as on data pages |
//!
//! Invariants:
//! 1. Blocks are written once and never rewritten; a flush closes the open block.
//! 2. A block is valid only if its checksum holds, its FSeqNo and offset are where it is read,
//!    and its previous-block checksum is that of the block before it. Stale blocks of an
//!    earlier pass over the VLF, torn blocks, and blocks left behind a torn one all fail this,
//!    so reading stops at the true end of the log.
//! 3. Blocks are chained (their checksums stamped) in log order, each exactly once, before
//!    they are written.

use super::record::LogRecord;

pub const BLOCK_HEADER_BYTES: usize = 32;
pub const SECTOR_BYTES: usize = 512;
pub const MAX_BLOCK_BYTES: usize = 60 * 1024;
/// The operating system's memory page: the CPU's stream prefetch stops at its boundaries.
const MEMORY_PAGE_BYTES: usize = 4096;
const FLAG_VALID: u16 = 0x40;

/// The open block: records appended, not yet written. The records are encoded in place,
/// behind room for the header, so sealing writes the header and the offsets around them
/// instead of copying them.
#[derive(Default)]
pub struct BlockBuilder {
    /// The block so far: [`BLOCK_HEADER_BYTES`] for the header, then the records (empty while
    /// the block holds none).
    block: Vec<u8>,
    offsets: Vec<u16>,
}

impl BlockBuilder {
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    pub fn record_count(&self) -> u16 {
        self.offsets.len() as u16
    }

    fn record_bytes(&self) -> usize {
        self.block.len().saturating_sub(BLOCK_HEADER_BYTES)
    }

    /// The block's size on disk if it held one more record of `len` bytes.
    pub fn size_with(&self, len: usize) -> usize {
        block_size(self.record_bytes() + len, self.offsets.len() + 1)
    }

    /// The block's size on disk as it is.
    pub fn size(&self) -> usize {
        block_size(self.record_bytes(), self.offsets.len())
    }

    /// Appends a record with `extra_flags` added to its own and `tail` after its payload
    /// ([`LogRecord::encode_into`]); returns its slot.
    pub fn push(&mut self, record: &LogRecord, extra_flags: u16, tail: &[u8]) -> u16 {
        if self.block.is_empty() {
            self.block.resize(BLOCK_HEADER_BYTES, 0);
        }
        let slot = self.offsets.len() as u16;
        self.offsets.push(self.block.len() as u16);
        let start = self.block.len();
        record.encode_into(&mut self.block, extra_flags, tail);
        // After a record of a memory page or more, the room the next one will most likely
        // take (as much as this one) is prefetched: a reused block's memory is cold, and such
        // records cross 4 KB pages, where the CPU's own stream prefetch starts over. Smaller
        // records are left to that stream prefetch (hinting them too measured slower with 16
        // sessions, whose appends take the log's lock).
        let len = self.block.len() - start;
        if len >= MEMORY_PAGE_BYTES {
            let ahead = len.min(self.block.capacity() - self.block.len());
            crate::prefetch::into_l2(self.block.as_ptr().wrapping_add(self.block.len()), ahead);
        }
        slot
    }

    /// The sealed bytes of the block, emptying the builder. Its checksums are stamped when it
    /// is written ([`stamp_checksums`]).
    pub fn seal(&mut self, fseqno: u32, block_offset: u32) -> Vec<u8> {
        self.seal_into(Vec::new(), fseqno, block_offset)
    }

    /// [`BlockBuilder::seal`], leaving `spare` (a written block's buffer, whatever it holds)
    /// to the builder for the next block.
    pub fn seal_into(&mut self, mut spare: Vec<u8>, fseqno: u32, block_offset: u32) -> Vec<u8> {
        let size = self.size();
        let used = BLOCK_HEADER_BYTES + self.record_bytes();
        spare.clear();
        let mut buf = std::mem::replace(&mut self.block, spare);
        // Zeroes the gap between the records and the offsets (and the header of an empty block).
        buf.resize(size, 0);
        buf[0..2].copy_from_slice(&FLAG_VALID.to_le_bytes());
        buf[2..4].copy_from_slice(&self.record_count().to_le_bytes());
        buf[4..8].copy_from_slice(&fseqno.to_le_bytes());
        buf[8..12].copy_from_slice(&block_offset.to_le_bytes());
        buf[12..16].copy_from_slice(&(size as u32).to_le_bytes());
        buf[16..20].copy_from_slice(&(used as u32).to_le_bytes());
        buf[20..32].fill(0);
        for (slot, offset) in self.offsets.iter().enumerate() {
            let at = size - 2 * (slot + 1);
            buf[at..at + 2].copy_from_slice(&offset.to_le_bytes());
        }
        self.offsets.clear();
        buf
    }
}

/// Chains a sealed block to the block before it in the log: writes `prev_crc` (that block's
/// checksum) and the block's own checksum. Returns the checksum, the next block's predecessor.
/// Done by the writer as the block goes out (invariant 3), not by the appending session.
pub fn stamp_checksums(block: &mut [u8], prev_crc: u32) -> u32 {
    block[20..24].copy_from_slice(&prev_crc.to_le_bytes());
    block[24..28].fill(0);
    let crc = crc32c::crc32c(block);
    block[24..28].copy_from_slice(&crc.to_le_bytes());
    crc
}

fn block_size(record_bytes: usize, records: usize) -> usize {
    (BLOCK_HEADER_BYTES + record_bytes + 2 * records).next_multiple_of(SECTOR_BYTES)
}

/// The checksum a block carries (and the next block names as its predecessor).
pub fn block_crc(block: &[u8]) -> u32 {
    u32::from_le_bytes([block[24], block[25], block[26], block[27]])
}

/// What a block's header says, before its body is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub record_count: u16,
    pub fseqno: u32,
    pub block_offset: u32,
    pub size_bytes: usize,
    pub used_bytes: usize,
    pub prev_crc: u32,
    pub crc: u32,
}

/// The header at the start of `bytes` if it could be a block of VLF `fseqno` at
/// `block_offset`; its size tells how many bytes to read for [`check_block`].
pub fn read_header(bytes: &[u8], fseqno: u32, block_offset: u32) -> Option<BlockHeader> {
    if bytes.len() < BLOCK_HEADER_BYTES {
        return None;
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let header = BlockHeader {
        record_count: u16::from_le_bytes([bytes[2], bytes[3]]),
        fseqno: u32_at(4),
        block_offset: u32_at(8),
        size_bytes: u32_at(12) as usize,
        used_bytes: u32_at(16) as usize,
        prev_crc: u32_at(20),
        crc: u32_at(24),
    };
    let flags = u16::from_le_bytes([bytes[0], bytes[1]]);
    let plausible = flags == FLAG_VALID
        && header.fseqno == fseqno
        && header.block_offset == block_offset
        && header.size_bytes >= SECTOR_BYTES
        && header.size_bytes <= MAX_BLOCK_BYTES
        && header.size_bytes.is_multiple_of(SECTOR_BYTES)
        && header.used_bytes >= BLOCK_HEADER_BYTES
        && header.used_bytes + 2 * usize::from(header.record_count) <= header.size_bytes;
    plausible.then_some(header)
}

/// The records of a whole block whose header [`read_header`] accepted, if its checksum and
/// chain hold (invariant 2).
pub fn check_block(block: &[u8], header: &BlockHeader, prev_crc: u32) -> Option<Vec<LogRecord>> {
    if block.len() != header.size_bytes || header.prev_crc != prev_crc {
        return None;
    }
    let mut copy = block.to_vec();
    copy[24..28].fill(0);
    if crc32c::crc32c(&copy) != header.crc {
        return None;
    }
    let mut records = Vec::with_capacity(usize::from(header.record_count));
    for slot in 0..usize::from(header.record_count) {
        let at = header.size_bytes - 2 * (slot + 1);
        let start = usize::from(u16::from_le_bytes([block[at], block[at + 1]]));
        let len = usize::from(u16::from_le_bytes([*block.get(start)?, *block.get(start + 1)?]));
        if start < BLOCK_HEADER_BYTES || start + len > header.used_bytes {
            return None;
        }
        records.push(LogRecord::decode(&block[start..start + len]).ok()?);
    }
    Some(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::{Context, Operation};

    fn record(n: u8) -> LogRecord {
        LogRecord::new(Operation::InsertRows, Context::Heap, 7, vec![n; usize::from(n)])
    }

    /// A written block's buffer is sealed into again: nothing of its old bytes may remain
    /// (the padding and the slot area must read as a fresh block's).
    #[test]
    fn a_block_sealed_into_a_used_buffer_is_the_block_sealed_into_a_new_one() {
        let (mut fresh, mut reused) = (BlockBuilder::default(), BlockBuilder::default());
        for builder in [&mut fresh, &mut reused] {
            builder.push(&record(3), 0, &[]);
            builder.push(&record(41), 0, &[]);
        }
        let used = vec![0xEE; 4096];
        let (mut reused, mut fresh) = (reused.seal_into(used, 5, 16), fresh.seal(5, 16));
        assert_eq!(stamp_checksums(&mut reused, 7), stamp_checksums(&mut fresh, 7));
        assert_eq!(reused, fresh);
    }

    #[test]
    fn a_sealed_block_reads_back_and_rejects_a_wrong_place_chain_or_bit() {
        let mut builder = BlockBuilder::default();
        assert_eq!(builder.push(&record(3), 0, &[]), 0);
        assert_eq!(builder.push(&record(40), 0, &[]), 1);
        let mut block = builder.seal(5, 16);
        let crc = stamp_checksums(&mut block, 0xABCD);
        assert_eq!(block_crc(&block), crc);
        assert_eq!(block.len(), 512);
        assert!(builder.is_empty());
        let header = read_header(&block, 5, 16).unwrap();
        assert_eq!(check_block(&block, &header, 0xABCD), Some(vec![record(3), record(40)]));
        assert!(read_header(&block, 6, 16).is_none(), "a block of another pass over the VLF");
        assert!(read_header(&block, 5, 17).is_none());
        assert!(check_block(&block, &header, 1).is_none(), "a block behind a torn one");
        let mut torn = block.clone();
        torn[100] ^= 0x10;
        assert!(check_block(&torn, &header, 0xABCD).is_none());
    }

    /// A record pushed with a tail (an insert's record read from its page) is on disk as the
    /// record whose payload ends with the tail: one record, read back whole.
    #[test]
    fn a_record_with_a_tail_reads_back_as_one_payload() {
        let mut builder = BlockBuilder::default();
        let head = LogRecord::new(Operation::InsertRows, Context::Heap, 1, vec![7; 11]);
        let tail = [9u8; 37];
        builder.push(&head, 0, &tail);
        let mut block = builder.seal(5, 16);
        let crc = stamp_checksums(&mut block, 0xABCD);
        assert_eq!(block_crc(&block), crc);
        let header = read_header(&block, 5, 16).unwrap();
        let whole = [vec![7; 11], vec![9; 37]].concat();
        let expected = LogRecord::new(Operation::InsertRows, Context::Heap, 1, whole);
        assert_eq!(check_block(&block, &header, 0xABCD), Some(vec![expected]));
    }

    #[test]
    fn blocks_round_up_to_sectors() {
        let mut builder = BlockBuilder::default();
        let big = LogRecord::new(Operation::InsertRows, Context::Heap, 1, vec![1; 600]);
        assert_eq!(builder.size_with(big.encoded_len()), 1024);
        builder.push(&big, 0, &[]);
        assert_eq!(builder.size(), 1024);
    }
}
