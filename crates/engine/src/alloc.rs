//! Allocation pages: PFS, GAM, SGAM, DCM, BCM and IAM (reference §2.2–§2.5), their fixed
//! positions in every data file, and their byte layouts.
//!
//! Positions (every data file):
//! - page 0 file header; page 1 PFS, then a PFS page every 8,088 pages (8088, 16176, ...);
//! - pages 2, 3 GAM and SGAM, then again at every multiple of 511,232 (and +1);
//! - pages 6, 7 DCM and BCM, then at 511,232·k + 6 and + 7; page 9 the boot page, primary only.
//!
//! Layout of a GAM-type page (GAM, SGAM, DCM, BCM, IAM), as OrcaMDF reads it:
//!
//! | off  | len  | content                                                        |
//! |------|------|----------------------------------------------------------------|
//! | 0    | 96   | page header, m_slotCnt = 2                                     |
//! | 96   | 94   | slot 0: header record (4-byte record header + 90 bytes)        |
//! | 190  | 7992 | slot 1: bitmap record (4-byte record header + 7,988 bytes)     |
//! | 8182 | 6    | free                                                           |
//! | 8188 | 4    | slot array: slot 1 = 190, slot 0 = 96                          |
//!
//! Bit k of the bitmap (LSB first in each byte) is the k-th extent of the interval. GAM 1 = free;
//! SGAM 1 = mixed extent with a free page; IAM 1 = extent belongs to the allocation unit.
//! The IAM header record's 90 bytes: 0 sequence u32, 14 status u16, 28 object id i32,
//! 32 index id i16, 34 page count u8, 36 start page (6), 42..90 eight single-page slots (6 each).
//!
//! Layout of a PFS page: header (96), one record: 4-byte record header + 8,088 bytes, one byte per
//! page of the interval; byte for page p at offset 100 + (p - interval start); slot 0 = 96.
//!
//! Invariants (owned here, asserted by the database module):
//! 1. A GAM bit is 1 only for an extent wholly inside the file that no allocation unit owns.
//! 2. An extent is never both GAM-free (1) and SGAM-mixed-with-free-page (1).
//! 3. A page's PFS allocated bit (0x40) is set only if its extent's GAM bit is 0.

use crate::page::{PageBuf, PageHeader, PageType, push_slot};
use crate::units::{GAM_BITMAP_BYTES, GAM_INTERVAL_PAGES, PAGE_SIZE, PFS_INTERVAL_PAGES, PageId};

/// Bytes of the record header that precedes a fixed-length record body.
const RECORD_HEADER: usize = 4;
/// Offset of slot 0's record in a GAM-type page.
const GAM_HEADER_RECORD_AT: usize = 96;
/// Bytes of the IAM/GAM header record body.
const GAM_HEADER_BODY: usize = 90;
/// pminlen of a GAM-type page: 90, as DBCC PAGE shows a GAM page's (sqlskills.com, "The
/// Curious Case of... object ID 99"); the header record's body without its record header. IAM
/// pages share the layout and take the same value. A PFS page's pminlen is 0, as DBCC PAGE
/// shows it (SQL Server storage engine blog, 2006, page (1:1)).
const GAM_PAGE_PMINLEN: u16 = GAM_HEADER_BODY as u16;
/// Offset of slot 1's record (the bitmap record) in a GAM-type page.
const GAM_BITMAP_RECORD_AT: usize = GAM_HEADER_RECORD_AT + RECORD_HEADER + GAM_HEADER_BODY;
/// Offset of the first bitmap byte.
pub const GAM_BITMAP_AT: usize = GAM_BITMAP_RECORD_AT + RECORD_HEADER;
/// Offset of the PFS byte for the first page of the interval.
pub const PFS_BYTES_AT: usize = 96 + RECORD_HEADER;

const _: () = assert!(GAM_BITMAP_AT == 194);
const _: () = assert!(GAM_BITMAP_AT + GAM_BITMAP_BYTES + 4 <= PAGE_SIZE);
const _: () = assert!(PFS_BYTES_AT + PFS_INTERVAL_PAGES as usize + 2 <= PAGE_SIZE);

/// PFS byte bits (reference §2.4).
pub mod pfs {
    pub const FULLNESS_MASK: u8 = 0x07;
    pub const EMPTY: u8 = 0;
    pub const PCT_50: u8 = 1;
    pub const PCT_80: u8 = 2;
    pub const PCT_95: u8 = 3;
    pub const PCT_100: u8 = 4;
    pub const GHOST: u8 = 0x08;
    pub const IAM: u8 = 0x10;
    pub const MIXED: u8 = 0x20;
    pub const ALLOCATED: u8 = 0x40;

    /// DBCC PAGE's rendering of a PFS byte, e.g. `0x62 MIXED_EXT ALLOCATED  80_PCT_FULL`
    /// (two spaces before the fullness, as DBCC PAGE prints it).
    pub fn describe(byte: u8) -> String {
        let (flags, fullness) = words(byte);
        format!("{byte:#04x} {}  {fullness}", flags.join(" "))
    }

    /// The words of a PFS byte: its flags (`IAM_PG`, `MIXED_EXT`, `ALLOCATED` or
    /// `NOT ALLOCATED`, `HAS_GHOST`) and its fullness (`80_PCT_FULL`).
    pub fn words(byte: u8) -> (Vec<&'static str>, &'static str) {
        let mut flags = Vec::new();
        if byte & IAM != 0 {
            flags.push("IAM_PG");
        }
        if byte & MIXED != 0 {
            flags.push("MIXED_EXT");
        }
        flags.push(if byte & ALLOCATED != 0 { "ALLOCATED" } else { "NOT ALLOCATED" });
        if byte & GHOST != 0 {
            flags.push("HAS_GHOST");
        }
        let fullness = ["0_PCT_FULL", "50_PCT_FULL", "80_PCT_FULL", "95_PCT_FULL", "100_PCT_FULL"];
        (flags, fullness[usize::from(byte & FULLNESS_MASK).min(4)])
    }
}

/// The PFS page that covers `page_no`.
pub fn pfs_page_for(page_no: u32) -> u32 {
    let interval = page_no / PFS_INTERVAL_PAGES;
    if interval == 0 { 1 } else { interval * PFS_INTERVAL_PAGES }
}

/// The first page covered by the PFS page that covers `page_no`.
pub fn pfs_interval_start(page_no: u32) -> u32 {
    page_no / PFS_INTERVAL_PAGES * PFS_INTERVAL_PAGES
}

/// The GAM interval (0-based) holding `page_no`.
pub fn gam_interval_of(page_no: u32) -> u32 {
    page_no / GAM_INTERVAL_PAGES
}

/// Page number of a GAM-type map for a GAM interval. `offset` is 0 GAM, 1 SGAM, 6 DCM, 7 BCM
/// relative to the first GAM of the file at page 2 (interval 0 has them at 2, 3, 6, 7).
pub fn map_page(interval: u32, kind: MapKind) -> u32 {
    let (first, later) = match kind {
        MapKind::Gam => (2, 0),
        MapKind::Sgam => (3, 1),
        MapKind::Dcm => (6, 6),
        MapKind::Bcm => (7, 7),
    };
    if interval == 0 { first } else { interval * GAM_INTERVAL_PAGES + later }
}

/// The four per-interval maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    Gam,
    Sgam,
    Dcm,
    Bcm,
}

impl MapKind {
    pub const ALL: [MapKind; 4] = [MapKind::Gam, MapKind::Sgam, MapKind::Dcm, MapKind::Bcm];

    pub fn page_type(self) -> PageType {
        match self {
            MapKind::Gam => PageType::Gam,
            MapKind::Sgam => PageType::Sgam,
            MapKind::Dcm => PageType::Dcm,
            MapKind::Bcm => PageType::Bcm,
        }
    }
}

/// Every fixed system page (file header, PFS, GAM, SGAM, DCM, BCM, boot) of a file of
/// `size_pages` pages that lies in `[from_page, size_pages)`, ascending.
pub fn fixed_pages_in(from_page: u32, size_pages: u32, is_primary: bool) -> Vec<u32> {
    let mut pages = Vec::new();
    let mut pfs = if from_page <= 1 {
        1
    } else {
        from_page.div_ceil(PFS_INTERVAL_PAGES) * PFS_INTERVAL_PAGES
    };
    while pfs < size_pages {
        if pfs >= from_page {
            pages.push(pfs);
        }
        pfs = if pfs == 1 { PFS_INTERVAL_PAGES } else { pfs + PFS_INTERVAL_PAGES };
    }
    let last_interval = size_pages.saturating_sub(1) / GAM_INTERVAL_PAGES;
    for interval in 0..=last_interval {
        for kind in MapKind::ALL {
            let page = map_page(interval, kind);
            if page >= from_page && page < size_pages {
                pages.push(page);
            }
        }
    }
    if from_page == 0 && size_pages > 0 {
        pages.push(0);
    }
    if is_primary && (from_page..size_pages).contains(&BOOT_PAGE) {
        pages.push(BOOT_PAGE);
    }
    pages.sort_unstable();
    pages.dedup();
    pages
}

/// Whether `page_no` is a fixed system page of its file (file header, PFS, GAM, SGAM, DCM,
/// BCM, and the boot page of the primary file): [`fixed_pages_in`] as a test on one page.
pub fn is_fixed_page(page_no: u32, is_primary: bool) -> bool {
    if page_no == 0 || pfs_page_for(page_no) == page_no || (is_primary && page_no == BOOT_PAGE) {
        return true;
    }
    let interval = page_no / GAM_INTERVAL_PAGES;
    MapKind::ALL.into_iter().any(|kind| map_page(interval, kind) == page_no)
}

/// Free extents that laying out `[from_page, to_page)` creates: the whole extents of the range
/// that hold no fixed page. This is how a new file (from 0) or a growth is laid out.
pub fn free_extents_in_range(from_page: u32, to_page: u32, is_primary: bool) -> u32 {
    let fixed = fixed_pages_in(from_page, to_page, is_primary);
    let mut system_extents: Vec<u32> =
        fixed.iter().map(|p| p / crate::units::PAGES_PER_EXTENT).collect();
    system_extents.dedup();
    let first = from_page / crate::units::PAGES_PER_EXTENT;
    let end = to_page / crate::units::PAGES_PER_EXTENT;
    let system_inside = system_extents.iter().filter(|e| (first..end).contains(*e)).count() as u32;
    end.saturating_sub(first) - system_inside
}

/// The boot page's position in the primary file.
pub const BOOT_PAGE: u32 = 9;

/// Formats an empty GAM-type page (all bits 0) with its two records.
pub fn format_map_page(buf: &mut PageBuf, page_id: PageId, page_type: PageType) {
    buf.fill(0);
    // IAM pages belong to their allocation unit (its caller stamps the unit's id); the maps of
    // the file belong to the allocation system (object 99).
    let mut header = if page_type == PageType::Iam {
        PageHeader::new(page_type, page_id)
    } else {
        PageHeader::for_allocation_system(page_type, page_id)
    };
    header.pminlen = GAM_PAGE_PMINLEN;
    header.write(&mut buf[..]);
    write_fixed_record_header(buf, GAM_HEADER_RECORD_AT, GAM_HEADER_BODY);
    write_fixed_record_header(buf, GAM_BITMAP_RECORD_AT, GAM_BITMAP_BYTES);
    push_slot(&mut buf[..], GAM_HEADER_RECORD_AT as u16);
    push_slot(&mut buf[..], GAM_BITMAP_RECORD_AT as u16);
    finish_layout(buf, GAM_BITMAP_AT + GAM_BITMAP_BYTES);
}

/// Formats an empty PFS page: every page byte 0 (not allocated, empty).
pub fn format_pfs_page(buf: &mut PageBuf, page_id: PageId) {
    buf.fill(0);
    let mut header = PageHeader::for_allocation_system(PageType::Pfs, page_id);
    header.pminlen = 0;
    header.write(&mut buf[..]);
    write_fixed_record_header(buf, 96, PFS_INTERVAL_PAGES as usize);
    push_slot(&mut buf[..], 96);
    finish_layout(buf, PFS_BYTES_AT + PFS_INTERVAL_PAGES as usize);
}

/// Writes a FixedVar record header for a record with `body_len` fixed bytes and no columns
/// table: status A 0x00 (primary record), status B 0, fixed-end offset.
fn write_fixed_record_header(buf: &mut PageBuf, at: usize, body_len: usize) {
    buf[at] = 0;
    buf[at + 1] = 0;
    let fixed_end = (RECORD_HEADER + body_len) as u16;
    buf[at + 2..at + 4].copy_from_slice(&fixed_end.to_le_bytes());
}

/// Sets m_freeData and m_freeCnt after the records have been laid out.
fn finish_layout(buf: &mut PageBuf, free_data: usize) {
    let mut header = PageHeader::read(&buf[..]);
    header.free_data = free_data as u16;
    let slots = usize::from(header.slot_count) * 2;
    header.free_count = (PAGE_SIZE - free_data - slots) as u16;
    header.write(&mut buf[..]);
}

pub fn bitmap_get(buf: &PageBuf, bit: u32) -> bool {
    let byte = GAM_BITMAP_AT + (bit / 8) as usize;
    buf[byte] & (1 << (bit % 8)) != 0
}

pub fn bitmap_set(buf: &mut PageBuf, bit: u32, value: bool) {
    let byte = GAM_BITMAP_AT + (bit / 8) as usize;
    let mask = 1u8 << (bit % 8);
    if value {
        buf[byte] |= mask;
    } else {
        buf[byte] &= !mask;
    }
}

/// The first bit set to 1 in `[from, to)`, skipping zero bytes quickly.
pub fn bitmap_find_set(buf: &PageBuf, from: u32, to: u32) -> Option<u32> {
    let mut bit = from;
    while bit < to {
        if bit.is_multiple_of(8) && buf[GAM_BITMAP_AT + (bit / 8) as usize] == 0 {
            bit += 8;
            continue;
        }
        if bitmap_get(buf, bit) {
            return Some(bit);
        }
        bit += 1;
    }
    None
}

/// Number of 1 bits in `[0, to)`.
pub fn bitmap_count(buf: &PageBuf, to: u32) -> u32 {
    let full_bytes = (to / 8) as usize;
    let mut count: u32 =
        buf[GAM_BITMAP_AT..GAM_BITMAP_AT + full_bytes].iter().map(|b| b.count_ones()).sum();
    for bit in (to / 8 * 8)..to {
        count += u32::from(bitmap_get(buf, bit));
    }
    count
}

pub fn pfs_get(buf: &PageBuf, page_no: u32) -> u8 {
    buf[PFS_BYTES_AT + (page_no - pfs_interval_start(page_no)) as usize]
}

/// The bytes of a PFS page that hold the PFS bytes of an extent's pages (`first` is its
/// first page): what an allocation changes, for [`crate::buffer::PageGuard::write_within`].
pub fn pfs_extent_range(first: u32) -> (usize, usize) {
    let at = PFS_BYTES_AT + (first - pfs_interval_start(first)) as usize;
    (at, at + crate::units::PAGES_PER_EXTENT as usize)
}

/// The byte of a GAM, SGAM or IAM page that holds map bit `bit`.
pub fn bitmap_byte_range(bit: u32) -> (usize, usize) {
    let at = GAM_BITMAP_AT + (bit / 8) as usize;
    (at, at + 1)
}

pub fn pfs_set(buf: &mut PageBuf, page_no: u32, value: u8) {
    buf[PFS_BYTES_AT + (page_no - pfs_interval_start(page_no)) as usize] = value;
}

/// The IAM header record, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IamHeader {
    pub sequence: u32,
    pub start_page: PageId,
    pub single_page_slots: [PageId; 8],
}

const IAM_BODY_AT: usize = GAM_HEADER_RECORD_AT + RECORD_HEADER;

pub fn iam_header(buf: &PageBuf) -> IamHeader {
    let body = &buf[IAM_BODY_AT..IAM_BODY_AT + GAM_HEADER_BODY];
    let sequence = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
    let start_page = PageId::from_bytes(&body[36..42]);
    let mut single_page_slots = [PageId::NULL; 8];
    for (i, slot) in single_page_slots.iter_mut().enumerate() {
        *slot = PageId::from_bytes(&body[42 + 6 * i..48 + 6 * i]);
    }
    IamHeader { sequence, start_page, single_page_slots }
}

pub fn set_iam_header(buf: &mut PageBuf, header: &IamHeader) {
    let body = &mut buf[IAM_BODY_AT..IAM_BODY_AT + GAM_HEADER_BODY];
    body[0..4].copy_from_slice(&header.sequence.to_le_bytes());
    let used = header.single_page_slots.iter().filter(|p| !p.is_null()).count();
    body[34] = used as u8;
    body[36..42].copy_from_slice(&header.start_page.to_bytes());
    for (i, slot) in header.single_page_slots.iter().enumerate() {
        body[42 + 6 * i..48 + 6 * i].copy_from_slice(&slot.to_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_pages_follow_sql_servers_positions() {
        assert_eq!(fixed_pages_in(0, 640, false), vec![0, 1, 2, 3, 6, 7]);
        assert_eq!(fixed_pages_in(0, 640, true), vec![0, 1, 2, 3, 6, 7, 9]);
        assert_eq!(fixed_pages_in(0, 32_000, false), vec![0, 1, 2, 3, 6, 7, 8088, 16176, 24264]);
        assert_eq!(fixed_pages_in(8000, 17_000, false), vec![8088, 16176]);
        let big = fixed_pages_in(511_000, 511_300, false);
        assert_eq!(big, vec![511_232, 511_233, 511_238, 511_239]);
        assert_eq!(pfs_page_for(8087), 1);
        assert_eq!(pfs_page_for(8088), 8088);
        assert_eq!(map_page(1, MapKind::Sgam), 511_233);
    }

    #[test]
    fn is_fixed_page_agrees_with_fixed_pages_in() {
        for primary in [false, true] {
            let fixed = fixed_pages_in(0, 1_100_000, primary);
            let tested: Vec<u32> =
                (0..1_100_000).filter(|page| is_fixed_page(*page, primary)).collect();
            assert_eq!(tested, fixed, "primary {primary}");
        }
    }

    #[test]
    fn map_pages_hold_a_bitmap_of_63904_extents() {
        let mut buf = crate::page::new_page_buf();
        format_map_page(&mut buf, PageId::new(1, 2), PageType::Gam);
        assert_eq!(crate::page::slot_offset(&buf[..], 1) as usize, GAM_BITMAP_AT - 4);
        bitmap_set(&mut buf, 63_903, true);
        bitmap_set(&mut buf, 17, true);
        assert_eq!(bitmap_find_set(&buf, 0, 63_904), Some(17));
        assert_eq!(bitmap_find_set(&buf, 18, 63_904), Some(63_903));
        assert_eq!(bitmap_count(&buf, 63_904), 2);
        assert_eq!(bitmap_count(&buf, 63_903), 1);
        let header = PageHeader::read(&buf[..]);
        assert_eq!(header.free_count, 6);
    }

    #[test]
    fn the_allocation_system_owns_its_maps_but_not_iam_pages() {
        let mut buf = crate::page::new_page_buf();
        for (page_type, owner) in [
            (PageType::Gam, crate::page::ALLOCATION_SYSTEM_OBJECT_ID),
            (PageType::Sgam, crate::page::ALLOCATION_SYSTEM_OBJECT_ID),
            (PageType::Dcm, crate::page::ALLOCATION_SYSTEM_OBJECT_ID),
            (PageType::Iam, 0),
        ] {
            format_map_page(&mut buf, PageId::new(1, 6), page_type);
            let header = PageHeader::read(&buf[..]);
            assert_eq!((header.obj_id, header.index_id, header.pminlen), (owner, 0, 90));
        }
        format_pfs_page(&mut buf, PageId::new(1, 1));
        let header = PageHeader::read(&buf[..]);
        assert_eq!((header.obj_id, header.pminlen), (99, 0));
        assert_eq!(header.allocation_unit_id(), 6_488_064);
    }

    #[test]
    fn pfs_bytes_are_per_page_and_describe_like_dbcc_page() {
        let mut buf = crate::page::new_page_buf();
        format_pfs_page(&mut buf, PageId::new(1, 8088));
        pfs_set(&mut buf, 8090, pfs::ALLOCATED | pfs::MIXED | pfs::PCT_80);
        assert_eq!(pfs_get(&buf, 8090), 0x62);
        assert_eq!(buf[PFS_BYTES_AT + 2], 0x62);
        assert_eq!(pfs::describe(0x62), "0x62 MIXED_EXT ALLOCATED  80_PCT_FULL");
    }
}
