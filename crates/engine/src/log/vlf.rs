//! Virtual log files: how many a creation or growth makes (reference §5.2), and the VLF header
//! that lets the log be read back (docs/format/log-file.md).
//!
//! The rule, per instance ([`VlfRule`]):
//! - 2019 (2014 to 2019): a growth of less than 1/8 of the file's current size makes 1 VLF;
//!   otherwise under 64 MB makes 4, 64 MB to 1 GB makes 8, over 1 GB makes 16.
//! - 2022 (the default): as 2019, but in the "otherwise" branch a growth of 64 MB or less makes 1.
//!
//! Choices where no source settles the edge (reference §5.2, docs/deviations.md):
//! - "Less than 1/8" is strict: a growth of exactly 1/8 of the current size uses the formula, as
//!   Paul Randal's 1 GB + 512 MB worked example implies.
//! - Exactly 64 MB makes 8 VLFs under 2019 (the documentation's "from 64 MB up to 1 GB"), 1 under
//!   2022 ("less than or equal to 64 MB"); exactly 1 GB makes 8 under both.
//! - The current size is the log file's own size in bytes, header page included; the creation
//!   of a file has current size 0, so it always uses the formula (2022 rule included: a new
//!   32 MB log has 1 VLF).
//! - A growth that does not divide evenly is split in whole 8 KB pages; the last VLF takes the
//!   remainder.
//!
//! VLF header: the first 8 KB of every VLF (log blocks start after it, reference §5.1). Its
//! first 512 bytes hold the fields below, sealed with CRC-32C; the rest is zero.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `VLF1` |
//! | 4 | 4 | FSeqNo (0 = never used) |
//! | 8 | 1 | parity (0 never used, else 64 or 128; flips on each reuse) |
//! | 9 | 1 | reserved (0) |
//! | 10 | 2 | file id |
//! | 12 | 8 | start offset in the file, bytes |
//! | 20 | 8 | size, bytes (header included) |
//! | 28 | 10 | CreateLSN (0 for the VLFs made with the file) |
//! | 38 | 470 | zero |
//! | 508 | 4 | CRC-32C of bytes 0..508 |
//!
//! Invariants (owned here, asserted by [`VlfHeader::decode`] callers and the log's checks):
//! 1. The VLFs of a file tile `[8192, file size)` exactly, in start-offset order.
//! 2. A VLF is at least 72 KB: its 8 KB header and one largest (60 KB) block, so any record
//!    fits in any VLF. Log growths are at least that size (extentdb's rule; docs/deviations.md).

use super::lsn::{LSN_BYTES, Lsn};
use crate::units::PAGE_SIZE_U64;

/// The VLF rule an instance uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VlfRule {
    /// SQL Server 2014 to 2019.
    Sql2019,
    /// SQL Server 2022 and Azure SQL Database (the default).
    #[default]
    Sql2022,
}

impl VlfRule {
    pub fn parse(text: &str) -> Option<VlfRule> {
        match text {
            "2019" => Some(VlfRule::Sql2019),
            "2022" => Some(VlfRule::Sql2022),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            VlfRule::Sql2019 => "2019",
            VlfRule::Sql2022 => "2022",
        }
    }
}

const MB: u64 = 1024 * 1024;
/// Bytes of a VLF's header area; its first block starts here.
pub const VLF_HEADER_BYTES: u64 = 8192;
/// Bytes of the header's sealed part.
pub const VLF_HEADER_SEALED_BYTES: usize = 512;
/// The smallest VLF (invariant 2): its header and the largest block (60 KB), in whole pages.
pub const MIN_VLF_PAGES: u32 = 9;
pub const MIN_VLF_BYTES: u64 = MIN_VLF_PAGES as u64 * PAGE_SIZE_U64;
/// Where the first VLF of a log file starts: after the file header page.
pub const FIRST_VLF_OFFSET: u64 = 8192;
const MAGIC: &[u8; 4] = b"VLF1";

/// How many VLFs a creation (current size 0) or growth of `growth_bytes` makes.
pub fn vlf_count(rule: VlfRule, current_size_bytes: u64, growth_bytes: u64) -> u32 {
    if current_size_bytes > 0 && growth_bytes < current_size_bytes / 8 {
        return 1;
    }
    if rule == VlfRule::Sql2022 && growth_bytes <= 64 * MB {
        return 1;
    }
    if growth_bytes < 64 * MB {
        4
    } else if growth_bytes <= 1024 * MB {
        8
    } else {
        16
    }
}

/// The sizes in bytes of the VLFs that cover `growth_bytes` (a whole number of pages), fewer
/// than the rule's count when that would make VLFs under [`MIN_VLF_BYTES`].
pub fn vlf_sizes(rule: VlfRule, current_size_bytes: u64, growth_bytes: u64) -> Vec<u64> {
    assert_eq!(growth_bytes % PAGE_SIZE_U64, 0, "log growth is a whole number of pages");
    let pages = growth_bytes / PAGE_SIZE_U64;
    let min_pages = MIN_VLF_BYTES / PAGE_SIZE_U64;
    let wanted = u64::from(vlf_count(rule, current_size_bytes, growth_bytes));
    let count = wanted.min(pages / min_pages).max(1);
    let each = pages / count;
    let mut sizes = vec![each * PAGE_SIZE_U64; count as usize];
    if let Some(last) = sizes.last_mut() {
        *last += (pages - each * count) * PAGE_SIZE_U64;
    }
    sizes
}

/// A VLF's header, as written at its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlfHeader {
    pub fseqno: u32,
    pub parity: u8,
    pub file_id: u16,
    pub start_offset: u64,
    pub size_bytes: u64,
    pub create_lsn: Lsn,
}

impl VlfHeader {
    pub fn encode(&self) -> [u8; VLF_HEADER_SEALED_BYTES] {
        let mut buf = [0u8; VLF_HEADER_SEALED_BYTES];
        buf[0..4].copy_from_slice(MAGIC);
        buf[4..8].copy_from_slice(&self.fseqno.to_le_bytes());
        buf[8] = self.parity;
        buf[10..12].copy_from_slice(&self.file_id.to_le_bytes());
        buf[12..20].copy_from_slice(&self.start_offset.to_le_bytes());
        buf[20..28].copy_from_slice(&self.size_bytes.to_le_bytes());
        buf[28..28 + LSN_BYTES].copy_from_slice(&self.create_lsn.to_bytes());
        let crc = crc32c::crc32c(&buf[..508]);
        buf[508..512].copy_from_slice(&crc.to_le_bytes());
        buf
    }

    /// The header in `buf`, or why it is not a valid VLF header.
    pub fn decode(buf: &[u8]) -> Result<VlfHeader, &'static str> {
        if buf.len() < VLF_HEADER_SEALED_BYTES || &buf[0..4] != MAGIC {
            return Err("no VLF header");
        }
        let stored = u32::from_le_bytes([buf[508], buf[509], buf[510], buf[511]]);
        if crc32c::crc32c(&buf[..508]) != stored {
            return Err("VLF header checksum mismatch");
        }
        let u64_at = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&buf[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        Ok(VlfHeader {
            fseqno: u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]),
            parity: buf[8],
            file_id: u16::from_le_bytes([buf[10], buf[11]]),
            start_offset: u64_at(12),
            size_bytes: u64_at(20),
            create_lsn: Lsn::from_bytes(&buf[28..28 + LSN_BYTES]),
        })
    }
}

/// The parity a VLF gets when it is (re)used: 64 the first time, then alternating.
pub fn next_parity(parity: u8) -> u8 {
    if parity == 64 { 128 } else { 64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_1_8_rule_is_strict_and_the_64_mb_edge_depends_on_the_rule() {
        let gb = 1024 * MB;
        // 512 MB at 4 GB is exactly 1/8: the formula (8 VLFs), as Paul Randal's example implies.
        assert_eq!(vlf_count(VlfRule::Sql2019, 4 * gb, 512 * MB), 8);
        assert_eq!(vlf_count(VlfRule::Sql2019, 4 * gb + 8192, 512 * MB), 1);
        assert_eq!(vlf_count(VlfRule::Sql2019, 0, 64 * MB), 8);
        assert_eq!(vlf_count(VlfRule::Sql2022, 0, 64 * MB), 1);
        assert_eq!(vlf_count(VlfRule::Sql2022, 0, 64 * MB + 8192), 8);
        assert_eq!(vlf_count(VlfRule::Sql2019, 0, gb), 8);
        assert_eq!(vlf_count(VlfRule::Sql2019, 0, gb + 8192), 16);
        assert_eq!(vlf_count(VlfRule::Sql2019, 0, 32 * MB), 4);
    }

    #[test]
    fn uneven_growths_leave_the_remainder_to_the_last_vlf() {
        let sizes = vlf_sizes(VlfRule::Sql2019, 0, 1000 * 1024);
        assert_eq!(sizes, vec![253_952, 253_952, 253_952, 262_144]);
        assert_eq!(sizes.iter().sum::<u64>(), 1000 * 1024);
        // Too small for four 72 KB VLFs: as many as fit.
        assert_eq!(vlf_sizes(VlfRule::Sql2019, 0, 160 * 1024), vec![81920, 81920]);
    }

    #[test]
    fn headers_round_trip_and_a_flipped_bit_is_detected() {
        let header = VlfHeader {
            fseqno: 37,
            parity: 128,
            file_id: 2,
            start_offset: 8192,
            size_bytes: 2 * MB,
            create_lsn: Lsn::new(36, 16, 1),
        };
        let mut bytes = header.encode();
        assert_eq!(VlfHeader::decode(&bytes), Ok(header));
        bytes[5] ^= 1;
        assert_eq!(VlfHeader::decode(&bytes), Err("VLF header checksum mismatch"));
    }
}
