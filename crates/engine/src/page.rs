//! The 8 KB page and its 96-byte header (reference §1.2), and page protection.
//!
//! Byte table (all integers little-endian; see docs/format/page-header.md):
//!
//! | off | len | field           | meaning                                          |
//! |-----|-----|-----------------|--------------------------------------------------|
//! | 0   | 1   | m_headerVersion | always 1                                         |
//! | 1   | 1   | m_type          | page type, [`PageType`]                          |
//! | 2   | 1   | m_typeFlagBits  | 0                                                |
//! | 3   | 1   | m_level         | B-tree level, 0 = leaf                           |
//! | 4   | 2   | m_flagBits      | 0x200 = checksum stored in m_tornBits            |
//! | 6   | 2   | m_indexId       | allocation-unit id, high part (idInd)            |
//! | 8   | 6   | m_prevPage      | page u32, file u16                               |
//! | 14  | 2   | pminlen         | fixed-part length of records                     |
//! | 16  | 6   | m_nextPage      | page u32, file u16                               |
//! | 22  | 2   | m_slotCnt       | slot-array entries                               |
//! | 24  | 4   | m_objId         | allocation-unit id, low part (idObj); 99 on the  |
//! |     |     |                 | allocation system's own pages                    |
//! | 28  | 2   | m_freeCnt       | free bytes                                       |
//! | 30  | 2   | m_freeData      | offset of the first free byte                    |
//! | 32  | 6   | m_pageId        | this page: page u32, file u16                    |
//! | 38  | 2   | m_reservedCnt   | 0 (no transactions yet)                          |
//! | 40  | 10  | m_lsn           | VLF seq u32, block u32, slot u16 (0 until the log exists) |
//! | 50  | 2   | m_xactReserved  | 0                                                |
//! | 52  | 6   | m_xdesId        | 0                                                |
//! | 58  | 2   | m_ghostRecCnt   | ghost records on the page                        |
//! | 60  | 4   | m_tornBits      | the page checksum                                |
//! | 64  | 32  | reserved        | zero                                             |
//!
//! Deviation: the checksum is CRC-32C (Castagnoli) over the whole page with bytes 60..64 taken
//! as zero, not SQL Server's XOR-and-rotate sector checksum (whose published form has never been
//! validated against a real page, reference §12.6). It is stored where SQL Server stores its
//! checksum and flagged with the same bit (0x200), so DBCC PAGE output keeps its shape.
//!
//! Invariants:
//! 1. Every page written by the engine is sealed (checksum computed) immediately before the write.
//! 2. Every page read from disk is verified before use: header version, checksum, and page id.
//!    A failure is error 824 naming db:file:page, never a panic.
//! 3. A page whose 96 header bytes are all zero is "never formatted" and carries no checksum.
//! 4. A page read from disk passes the structure audit before use ([`verify`]): a known m_type,
//!    and for data and index pages the slot array, m_freeData, m_freeCnt and m_ghostRecCnt
//!    agree with the records. A failure is error 824 "audit failure", as SQL Server reports a
//!    page that fails its basic integrity checks on read.

use crate::units::{PAGE_SIZE, PageId};

pub const HEADER_VERSION: u8 = 1;
/// The object id the storage engine stamps on the allocation system's own pages (the file
/// header, PFS, GAM, SGAM, DCM, BCM and boot pages; not IAM pages, which belong to their
/// allocation unit): m_objId 99, m_indexId 0, so DBCC PAGE shows `Metadata: AllocUnitId =
/// 6488064` and `Metadata: ObjectId = 99` (reference §1.2; Paul Randal, "The Curious Case of...
/// object ID 99", sqlskills.com, 2021).
pub const ALLOCATION_SYSTEM_OBJECT_ID: u32 = 99;
/// m_flagBits: a checksum is stored in m_tornBits.
pub const FLAG_CHECKSUM: u16 = 0x200;
const CHECKSUM_OFFSET: usize = 60;

/// An 8 KB page buffer.
pub type PageBuf = [u8; PAGE_SIZE];

/// Allocates a zeroed page buffer on the heap.
pub fn new_page_buf() -> Box<PageBuf> {
    Box::new([0u8; PAGE_SIZE])
}

/// m_type values (reference §1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    Unformatted = 0,
    Data = 1,
    Index = 2,
    TextMix = 3,
    TextTree = 4,
    Sort = 7,
    Gam = 8,
    Sgam = 9,
    Iam = 10,
    Pfs = 11,
    Boot = 13,
    FileHeader = 15,
    Dcm = 16,
    Bcm = 17,
}

impl PageType {
    pub fn from_u8(value: u8) -> Option<PageType> {
        use PageType::*;
        let all = [Unformatted, Data, Index, TextMix, TextTree, Sort, Gam, Sgam, Iam, Pfs, Boot];
        let more = [FileHeader, Dcm, Bcm];
        all.into_iter().chain(more).find(|t| *t as u8 == value)
    }
}

/// The decoded 96-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PageHeader {
    pub header_version: u8,
    pub page_type: u8,
    pub type_flag_bits: u8,
    pub level: u8,
    pub flag_bits: u16,
    pub index_id: u16,
    pub prev_page: PageId,
    pub pminlen: u16,
    pub next_page: PageId,
    pub slot_count: u16,
    pub obj_id: u32,
    pub free_count: u16,
    pub free_data: u16,
    pub page_id: PageId,
    pub reserved_count: u16,
    pub lsn: (u32, u32, u16),
    pub xact_reserved: u16,
    pub xdes_id: (u32, u16),
    pub ghost_record_count: u16,
    pub torn_bits: u32,
}

/// The header's m_prevPage field (`[from, to)`): what a split of the page after it changes.
pub const PREV_PAGE_RANGE: (usize, usize) = (8, 14);
/// The header's m_nextPage field (`[from, to)`): what an ascending key's split changes in the
/// page it appends after.
pub const NEXT_PAGE_RANGE: (usize, usize) = (16, 22);

/// Sets the header's m_prevPage.
pub fn set_prev_page(buf: &mut [u8], page: PageId) {
    buf[PREV_PAGE_RANGE.0..PREV_PAGE_RANGE.1].copy_from_slice(&page.to_bytes());
}

/// Sets the header's m_nextPage.
pub fn set_next_page(buf: &mut [u8], page: PageId) {
    buf[NEXT_PAGE_RANGE.0..NEXT_PAGE_RANGE.1].copy_from_slice(&page.to_bytes());
}

fn u16_at(buf: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([buf[off], buf[off + 1]])
}

fn u32_at(buf: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]])
}

fn put_u16(buf: &mut [u8], off: usize, value: u16) {
    buf[off..off + 2].copy_from_slice(&value.to_le_bytes());
}

fn put_u32(buf: &mut [u8], off: usize, value: u32) {
    buf[off..off + 4].copy_from_slice(&value.to_le_bytes());
}

impl PageHeader {
    /// A fresh header for a page of `page_type` at `page_id`, with an empty body.
    pub fn new(page_type: PageType, page_id: PageId) -> PageHeader {
        PageHeader {
            header_version: HEADER_VERSION,
            page_type: page_type as u8,
            page_id,
            free_data: crate::units::PAGE_HEADER_SIZE as u16,
            free_count: (PAGE_SIZE - crate::units::PAGE_HEADER_SIZE) as u16,
            ..PageHeader::default()
        }
    }

    /// A fresh header for one of the allocation system's own pages ([`ALLOCATION_SYSTEM_OBJECT_ID`]).
    pub fn for_allocation_system(page_type: PageType, page_id: PageId) -> PageHeader {
        PageHeader { obj_id: ALLOCATION_SYSTEM_OBJECT_ID, ..PageHeader::new(page_type, page_id) }
    }

    /// The allocation-unit id the header encodes: (idInd << 48) | (idObj << 16).
    pub fn allocation_unit_id(&self) -> u64 {
        (u64::from(self.index_id) << 48) | (u64::from(self.obj_id) << 16)
    }

    pub fn set_allocation_unit_id(&mut self, au_id: u64) {
        self.index_id = (au_id >> 48) as u16;
        self.obj_id = ((au_id >> 16) & 0xFFFF_FFFF) as u32;
    }

    pub fn read(buf: &[u8]) -> PageHeader {
        PageHeader {
            header_version: buf[0],
            page_type: buf[1],
            type_flag_bits: buf[2],
            level: buf[3],
            flag_bits: u16_at(buf, 4),
            index_id: u16_at(buf, 6),
            prev_page: PageId::from_bytes(&buf[PREV_PAGE_RANGE.0..PREV_PAGE_RANGE.1]),
            pminlen: u16_at(buf, 14),
            next_page: PageId::from_bytes(&buf[NEXT_PAGE_RANGE.0..NEXT_PAGE_RANGE.1]),
            slot_count: u16_at(buf, 22),
            obj_id: u32_at(buf, 24),
            free_count: u16_at(buf, 28),
            free_data: u16_at(buf, 30),
            page_id: PageId::from_bytes(&buf[32..38]),
            reserved_count: u16_at(buf, 38),
            lsn: (u32_at(buf, 40), u32_at(buf, 44), u16_at(buf, 48)),
            xact_reserved: u16_at(buf, 50),
            xdes_id: (u32_at(buf, 52), u16_at(buf, 56)),
            ghost_record_count: u16_at(buf, 58),
            torn_bits: u32_at(buf, 60),
        }
    }

    pub fn write(&self, buf: &mut [u8]) {
        buf[0] = self.header_version;
        buf[1] = self.page_type;
        buf[2] = self.type_flag_bits;
        buf[3] = self.level;
        put_u16(buf, 4, self.flag_bits);
        put_u16(buf, 6, self.index_id);
        set_prev_page(buf, self.prev_page);
        put_u16(buf, 14, self.pminlen);
        set_next_page(buf, self.next_page);
        put_u16(buf, 22, self.slot_count);
        put_u32(buf, 24, self.obj_id);
        put_u16(buf, 28, self.free_count);
        put_u16(buf, 30, self.free_data);
        buf[32..38].copy_from_slice(&self.page_id.to_bytes());
        put_u16(buf, 38, self.reserved_count);
        put_u32(buf, 40, self.lsn.0);
        put_u32(buf, 44, self.lsn.1);
        put_u16(buf, 48, self.lsn.2);
        put_u16(buf, 50, self.xact_reserved);
        put_u32(buf, 52, self.xdes_id.0);
        put_u16(buf, 56, self.xdes_id.1);
        put_u16(buf, 58, self.ghost_record_count);
        put_u32(buf, 60, self.torn_bits);
        buf[64..96].fill(0);
    }
}

/// Appends a slot-array entry for a record at `record_offset` and returns its slot number.
/// Slot i lives at bytes 8190-2i..8192-2i (reference §1.5).
pub fn push_slot(buf: &mut [u8], record_offset: u16) -> u16 {
    let slot = u16_at(buf, 22);
    let at = PAGE_SIZE - 2 * (usize::from(slot) + 1);
    put_u16(buf, at, record_offset);
    put_u16(buf, 22, slot + 1);
    slot
}

/// m_slotCnt, read without decoding the whole header (a hot path of every search).
pub fn header_slot_count(buf: &[u8]) -> u16 {
    u16_at(buf, 22)
}

/// m_level, read without decoding the whole header (every step of a B-tree descent).
pub fn header_level(buf: &[u8]) -> u8 {
    buf[3]
}

/// m_freeCnt, read without decoding the whole header.
pub fn header_free_count(buf: &[u8]) -> u16 {
    u16_at(buf, 28)
}

/// m_freeData, read without decoding the whole header.
pub fn header_free_data(buf: &[u8]) -> u16 {
    u16_at(buf, 30)
}

/// Writes m_slotCnt in place.
pub fn set_header_slot_count(buf: &mut [u8], value: u16) {
    put_u16(buf, 22, value);
}

/// Writes m_freeCnt in place.
pub fn set_header_free_count(buf: &mut [u8], value: u16) {
    put_u16(buf, 28, value);
}

/// Writes m_freeData in place.
pub fn set_header_free_data(buf: &mut [u8], value: u16) {
    put_u16(buf, 30, value);
}

/// m_ghostRecCnt, read without decoding the whole header.
pub fn header_ghost_record_count(buf: &[u8]) -> u16 {
    u16_at(buf, 58)
}

/// Writes m_ghostRecCnt in place.
pub fn set_header_ghost_record_count(buf: &mut [u8], value: u16) {
    put_u16(buf, 58, value);
}

/// The record offset stored in slot `slot`.
pub fn slot_offset(buf: &[u8], slot: u16) -> u16 {
    u16_at(buf, PAGE_SIZE - 2 * (usize::from(slot) + 1))
}

fn compute_checksum(buf: &PageBuf) -> u32 {
    let crc = crc32c::crc32c(&buf[..CHECKSUM_OFFSET]);
    let crc = crc32c::crc32c_append(crc, &[0u8; 4]);
    crc32c::crc32c_append(crc, &buf[CHECKSUM_OFFSET + 4..])
}

/// Computes the checksum and stores it in m_tornBits, setting flag 0x200 (invariant 1).
pub fn seal(buf: &mut PageBuf) {
    let flags = u16_at(buf, 4) | FLAG_CHECKSUM;
    put_u16(buf, 4, flags);
    let sum = compute_checksum(buf);
    put_u32(buf, CHECKSUM_OFFSET, sum);
}

/// Why a page read from disk was rejected (the inner text of error 824).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageCorruption {
    Checksum {
        expected: u32,
        actual: u32,
    },
    WrongPageId {
        expected: PageId,
        actual: PageId,
    },
    BadHeaderVersion(u8),
    /// A data or index page whose header and slot array do not describe its records (the
    /// reason: which of [`crate::datapage`]'s invariants failed), or an unknown m_type.
    Audit(&'static str),
}

impl PageCorruption {
    /// The `%ls` fragment of message 824 (reference §1.10).
    pub fn detail(&self) -> String {
        match self {
            PageCorruption::Checksum { expected, actual } => {
                format!("incorrect checksum (expected: {expected:#010x}; actual: {actual:#010x})")
            }
            PageCorruption::WrongPageId { expected, actual } => format!(
                "incorrect pageid (expected {}:{}; actual {}:{})",
                expected.file_id, expected.page_no, actual.file_id, actual.page_no
            ),
            PageCorruption::BadHeaderVersion(_) | PageCorruption::Audit(_) => {
                "audit failure (a page read from disk failed to pass basic integrity checks)"
                    .to_string()
            }
        }
    }
}

/// True when the header is all zero: the page was never formatted (invariant 3).
pub fn is_unformatted(buf: &PageBuf) -> bool {
    buf[..crate::units::PAGE_HEADER_SIZE].iter().all(|b| *b == 0)
}

/// Verifies a page read from disk (invariant 2).
pub fn verify(buf: &PageBuf, expected: PageId) -> Result<(), PageCorruption> {
    if is_unformatted(buf) {
        return Ok(());
    }
    if buf[0] != HEADER_VERSION {
        return Err(PageCorruption::BadHeaderVersion(buf[0]));
    }
    if u16_at(buf, 4) & FLAG_CHECKSUM != 0 {
        let stored = u32_at(buf, CHECKSUM_OFFSET);
        let actual = compute_checksum(buf);
        if stored != actual {
            return Err(PageCorruption::Checksum { expected: stored, actual });
        }
    }
    let actual_id = PageId::from_bytes(&buf[32..38]);
    if actual_id != expected {
        return Err(PageCorruption::WrongPageId { expected, actual: actual_id });
    }
    audit(buf)
}

/// The structure check of a page read from disk (invariant 4): its m_type is known, and a data
/// or index page satisfies [`crate::datapage`]'s invariants 1-4. The code that changes a page
/// in memory relies on them (a compaction trusts that records do not overlap); a page that
/// breaks them on disk, with a checksum that matches, is corruption it must not act on.
fn audit(buf: &PageBuf) -> Result<(), PageCorruption> {
    match PageType::from_u8(buf[1]) {
        None => Err(PageCorruption::Audit("unknown m_type")),
        Some(PageType::Data | PageType::Index) => {
            crate::datapage::check(buf).map_err(|bad| PageCorruption::Audit(bad.0))
        }
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_encodes_the_allocation_unit_id() {
        let mut header = PageHeader::new(PageType::Data, PageId::new(1, 287));
        header.set_allocation_unit_id(72_057_594_045_792_256);
        assert_eq!(header.index_id, 256);
        assert_eq!(header.obj_id, 120);
        header.prev_page = PageId::new(1, 286);
        header.lsn = (32, 137, 15);
        let mut buf = new_page_buf();
        header.write(&mut buf[..]);
        assert_eq!(PageHeader::read(&buf[..]), header);
        assert_eq!(header.allocation_unit_id(), 72_057_594_045_792_256);
    }

    #[test]
    fn a_flipped_byte_fails_the_checksum_and_a_moved_page_fails_the_page_id() {
        let mut buf = new_page_buf();
        PageHeader::new(PageType::Data, PageId::new(1, 9)).write(&mut buf[..]);
        buf[5000] = 0xAB;
        seal(&mut buf);
        assert_eq!(verify(&buf, PageId::new(1, 9)), Ok(()));
        let mut flipped = buf.clone();
        flipped[5000] ^= 0x01;
        assert!(matches!(
            verify(&flipped, PageId::new(1, 9)),
            Err(PageCorruption::Checksum { .. })
        ));
        assert!(matches!(
            verify(&buf, PageId::new(1, 10)),
            Err(PageCorruption::WrongPageId { .. })
        ));
    }

    #[test]
    fn slots_grow_backwards_from_the_page_end() {
        let mut buf = new_page_buf();
        assert_eq!(push_slot(&mut buf[..], 96), 0);
        assert_eq!(push_slot(&mut buf[..], 190), 1);
        assert_eq!(u16_at(&buf[..], 8190), 96);
        assert_eq!(u16_at(&buf[..], 8188), 190);
        assert_eq!(slot_offset(&buf[..], 1), 190);
    }
}
