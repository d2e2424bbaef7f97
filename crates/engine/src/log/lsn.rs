//! Log sequence numbers (reference §5.4).
//!
//! An LSN is VLF sequence number : log block offset : slot, compared part by part. The block
//! offset counts 512-byte units from the start of the VLF, so the first block of a VLF, which
//! starts after the VLF's 8 KB header, has offset 16 (0x10). The slot is the record's position in
//! its block, counting from 1 as in SQL Server's LSNs.

use std::fmt;

/// Bytes of an LSN on disk: seqno u32, block u32, slot u16, little-endian.
pub const LSN_BYTES: usize = 10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lsn {
    /// The VLF's sequence number (FSeqNo).
    pub seqno: u32,
    /// The block's offset in its VLF, in 512-byte units.
    pub block: u32,
    /// The record's slot in its block.
    pub slot: u16,
}

impl Lsn {
    /// The null LSN (0:0:0), before every record.
    pub const NULL: Lsn = Lsn { seqno: 0, block: 0, slot: 0 };

    pub fn new(seqno: u32, block: u32, slot: u16) -> Lsn {
        Lsn { seqno, block, slot }
    }

    pub fn is_null(&self) -> bool {
        *self == Lsn::NULL
    }

    pub fn to_bytes(self) -> [u8; LSN_BYTES] {
        let mut bytes = [0u8; LSN_BYTES];
        bytes[0..4].copy_from_slice(&self.seqno.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.block.to_le_bytes());
        bytes[8..10].copy_from_slice(&self.slot.to_le_bytes());
        bytes
    }

    pub fn from_bytes(bytes: &[u8]) -> Lsn {
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Lsn { seqno: u32_at(0), block: u32_at(4), slot: u16::from_le_bytes([bytes[8], bytes[9]]) }
    }

    /// fn_dblog's form: `0000001a:00000010:0001`.
    pub fn to_hex(self) -> String {
        format!("{:08x}:{:08x}:{:04x}", self.seqno, self.block, self.slot)
    }

    /// The catalog's numeric(25,0) form: seqno x 10^15 + block x 10^5 + slot (create_lsn,
    /// DBCC LOGINFO's CreateLSN).
    pub fn to_numeric(self) -> u128 {
        u128::from(self.seqno) * 1_000_000_000_000_000
            + u128::from(self.block) * 100_000
            + u128::from(self.slot)
    }
}

/// DBCC PAGE's form: `(26:16:1)`.
impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}:{}:{})", self.seqno, self.block, self.slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_order_part_by_part_and_print_in_sql_servers_forms() {
        let a = Lsn::new(32, 137, 15);
        assert!(Lsn::new(31, 9999, 9) < a && a < Lsn::new(32, 138, 0) && a < Lsn::new(32, 137, 16));
        assert_eq!(a.to_string(), "(32:137:15)");
        assert_eq!(a.to_hex(), "00000020:00000089:000f");
        assert_eq!(a.to_numeric(), 32_000_000_013_700_015);
        assert_eq!(Lsn::from_bytes(&a.to_bytes()), a);
    }
}
