//! Units and identifiers shared by every module: pages, extents, allocation intervals, page ids
//! and the size syntax of file specifications (`5MB`, `64KB`, `10%`).
//!
//! The constants are SQL Server's (reference §2.7). Relationships between them are asserted at
//! compile time below so that a typo cannot silently change the on-disk layout.

use std::fmt;

/// Bytes in a page. SQL Server's page is 8 KB [D MS-PE].
pub const PAGE_SIZE: usize = 8192;
/// Bytes in a page as u64, for file offsets.
pub const PAGE_SIZE_U64: u64 = PAGE_SIZE as u64;
/// Bytes of the page header.
pub const PAGE_HEADER_SIZE: usize = 96;
/// Pages in an extent.
pub const PAGES_PER_EXTENT: u32 = 8;
/// Pages covered by one PFS page; PFS pages sit at page 1 and at every multiple of this.
pub const PFS_INTERVAL_PAGES: u32 = 8088;
/// Extents covered by one GAM, SGAM, DCM, BCM or IAM page.
pub const GAM_INTERVAL_EXTENTS: u32 = 63_904;
/// Pages covered by one GAM-type page; GAM pages sit at page 2 and at every multiple of this.
pub const GAM_INTERVAL_PAGES: u32 = GAM_INTERVAL_EXTENTS * PAGES_PER_EXTENT;
/// Bytes of a GAM-type bitmap.
pub const GAM_BITMAP_BYTES: usize = (GAM_INTERVAL_EXTENTS / 8) as usize;
/// Pages in one MB.
pub const PAGES_PER_MB: u32 = 128;

const _: () = assert!(GAM_INTERVAL_PAGES == 511_232);
const _: () = assert!(GAM_BITMAP_BYTES == 7988);
const _: () = assert!(PAGE_SIZE == PAGES_PER_MB as usize * 64);

/// A page address: file id and page number, printed `(file:page)` as DBCC PAGE does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct PageId {
    pub file_id: u16,
    pub page_no: u32,
}

impl PageId {
    pub const NULL: PageId = PageId { file_id: 0, page_no: 0 };

    pub fn new(file_id: u16, page_no: u32) -> PageId {
        PageId { file_id, page_no }
    }

    /// The 6-byte on-disk form: page number (u32 LE) then file id (u16 LE).
    pub fn to_bytes(self) -> [u8; 6] {
        let mut out = [0u8; 6];
        out[..4].copy_from_slice(&self.page_no.to_le_bytes());
        out[4..].copy_from_slice(&self.file_id.to_le_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> PageId {
        let page_no = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let file_id = u16::from_le_bytes([bytes[4], bytes[5]]);
        PageId { file_id, page_no }
    }

    pub fn is_null(self) -> bool {
        self == PageId::NULL
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}:{})", self.file_id, self.page_no)
    }
}

/// The extent (0-based, in the file) that holds a page.
pub fn extent_of_page(page_no: u32) -> u32 {
    page_no / PAGES_PER_EXTENT
}

/// The first page of an extent.
pub fn first_page_of_extent(extent: u32) -> u32 {
    extent * PAGES_PER_EXTENT
}

/// Whole extents in a file of `size_pages` pages. A trailing partial extent is not usable.
pub fn extents_in_file(size_pages: u32) -> u32 {
    size_pages / PAGES_PER_EXTENT
}

/// A size written in a file specification: `SIZE`, `MAXSIZE` and `FILEGROWTH` values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SizeSpec {
    Kb(u64),
    Percent(u32),
}

impl SizeSpec {
    /// Parses `5MB`, `512KB`, `1GB`, `2TB`, `10%` or a bare number (MB, SQL Server's default unit).
    /// Only whole numbers are allowed, as in SQL Server (1.5 MB must be written 1536 KB).
    pub fn parse(text: &str) -> Option<SizeSpec> {
        let text = text.trim();
        let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        if digits_end == 0 {
            return None;
        }
        let number: u64 = text[..digits_end].parse().ok()?;
        let unit = text[digits_end..].trim().to_ascii_uppercase();
        let kb = match unit.as_str() {
            "" | "MB" => number.checked_mul(1024)?,
            "KB" => number,
            "GB" => number.checked_mul(1024 * 1024)?,
            "TB" => number.checked_mul(1024 * 1024 * 1024)?,
            "%" => return Some(SizeSpec::Percent(u32::try_from(number).ok()?)),
            _ => return None,
        };
        Some(SizeSpec::Kb(kb))
    }

    /// The size in KB, or None for a percentage.
    pub fn kb(self) -> Option<u64> {
        match self {
            SizeSpec::Kb(kb) => Some(kb),
            SizeSpec::Percent(_) => None,
        }
    }
}

/// Pages in `kb` kilobytes, rounded down to whole pages.
pub fn kb_to_pages(kb: u64) -> u64 {
    kb / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_spec_parses_units_like_sql_server() {
        assert_eq!(SizeSpec::parse("5MB"), Some(SizeSpec::Kb(5120)));
        assert_eq!(SizeSpec::parse("5"), Some(SizeSpec::Kb(5120)));
        assert_eq!(SizeSpec::parse("512 KB"), Some(SizeSpec::Kb(512)));
        assert_eq!(SizeSpec::parse("1gb"), Some(SizeSpec::Kb(1024 * 1024)));
        assert_eq!(SizeSpec::parse("10%"), Some(SizeSpec::Percent(10)));
        assert_eq!(SizeSpec::parse("1.5MB"), None);
        assert_eq!(SizeSpec::parse("MB"), None);
        assert_eq!(SizeSpec::parse("5XB"), None);
    }

    #[test]
    fn page_id_round_trips_through_six_bytes() {
        let id = PageId::new(3, 511_233);
        assert_eq!(PageId::from_bytes(&id.to_bytes()), id);
        assert_eq!(id.to_string(), "(3:511233)");
    }
}
