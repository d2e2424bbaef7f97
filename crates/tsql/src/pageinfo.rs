//! sys.dm_db_page_info and sys.fn_PageResCracker (SQL Server 2019): one page's header and
//! its allocation maps' bits as a row, and the page a request waits for taken apart, so that
//! a PAGELATCH wait can be followed to the page, its owner and its PFS, GAM and SGAM bits:
//!
//! ```sql
//! SELECT page_info.*
//! FROM sys.dm_exec_requests AS d
//! CROSS APPLY sys.fn_PageResCracker(d.page_resource) AS r
//! CROSS APPLY sys.dm_db_page_info(r.db_id, r.file_id, r.page_id, 'DETAILED') AS page_info;
//! ```
//!
//! The page is read through the buffer pool under a shared latch, as DBCC PAGE reads it
//! ([`crate::dbccpage`]); its allocation bits come from the maps' pages the same way.
//!
//! Columns: those of the SQL Server 2019 documentation (MicrosoftDocs sql-docs, 2020, after
//! the column list was corrected against the product), in its order. LIMITED leaves the
//! description columns NULL; DETAILED fills them.
//!
//! Deviations and inferences:
//! - The description texts are DBCC PAGE's words ("ALLOCATED", "CHANGED", "MIXED_EXT
//!   ALLOCATED 80_PCT_FULL"), which our sources give; SQL Server's own texts for this
//!   function are not in them. page_flag_bits_desc names the one flag the engine sets
//!   (HAS_CHECKSUM, 0x200).
//! - The documentation says a NULL argument is an error without its number: a NULL or
//!   unknown database, file or page is 2561 ("Parameter %d is incorrect for this
//!   statement."), and a page past the end of a data file, or in a log file, 2568, the
//!   storage engine's message for that case.
//! - has_version_records and is_encrypted are 0: the engine keeps no row versions and does not
//!   encrypt.

use crate::dbccpage::{allocated_text, changed_text, min_logged_text};
use crate::dmv::incorrect_parameter;
use crate::session::Session;
use crate::sysviews::{ViewRows, columns};
use crate::value::{self, Result};
use engine::SqlError;
use engine::alloc::pfs;
use engine::database::AllocationStatus;
use engine::page::{FLAG_CHECKSUM, PageHeader};
use engine::record::Value;
use engine::units::PageId;
use engine::waits::PageResource;

const PAGE_INFO_COLUMNS: [&str; 52] = [
    "database_id",
    "file_id",
    "page_id",
    "page_header_version",
    "page_type",
    "page_type_desc",
    "page_type_flag_bits",
    "page_type_flag_bits_desc",
    "page_flag_bits",
    "page_flag_bits_desc",
    "page_lsn",
    "page_level",
    "object_id",
    "index_id",
    "partition_id",
    "alloc_unit_id",
    "is_encrypted",
    "has_checksum",
    "checksum",
    "is_iam_pg",
    "is_mixed_ext",
    "has_ghost_records",
    "has_version_records",
    "pfs_page_id",
    "pfs_is_allocated",
    "pfs_alloc_percent",
    "pfs_status",
    "pfs_status_desc",
    "gam_page_id",
    "gam_status",
    "gam_status_desc",
    "sgam_page_id",
    "sgam_status",
    "sgam_status_desc",
    "diff_map_page_id",
    "diff_status",
    "diff_status_desc",
    "ml_map_page_id",
    "ml_status",
    "ml_status_desc",
    "prev_page_file_id",
    "prev_page_page_id",
    "next_page_file_id",
    "next_page_page_id",
    "fixed_length",
    "slot_count",
    "ghost_rec_count",
    "free_bytes",
    "free_data_offset",
    "reserved_bytes",
    "reserved_bytes_by_xdes_id",
    "xdes_id",
];

/// The columns of a system function whose arguments may not be NULL, for an APPLY whose left
/// side has no row to call it for.
pub(crate) fn fixed_columns(function: &str) -> Option<&'static [&'static str]> {
    function.eq_ignore_ascii_case("dm_db_page_info").then_some(&PAGE_INFO_COLUMNS[..])
}

/// The PFS fullness buckets as pfs_alloc_percent reports them.
const PFS_ALLOC_PERCENT: [i32; 5] = [0, 50, 80, 95, 100];

/// 2568: the page is not in a data file of the database.
fn page_out_of_range(page: PageId) -> SqlError {
    SqlError::new(
        2568,
        16,
        1,
        format!("Page {page} is out of range for this database or is in a log file."),
    )
}

/// The owner and identity columns of a page, from its header and the catalog.
struct PageOwner {
    object_id: i32,
    index_id: i32,
    partition_id: i64,
    alloc_unit_id: i64,
}

impl Session {
    /// sys.dm_db_page_info(database_id, file_id, page_id, mode): the page's header and its
    /// allocation status, one row.
    pub(crate) fn dm_db_page_info(&self, args: &[Value]) -> Result<ViewRows> {
        let cols = columns(&PAGE_INFO_COLUMNS);
        let argument = |i: usize| args.get(i).and_then(value::as_i64);
        let database_id = argument(0).ok_or_else(|| incorrect_parameter(1))?;
        let file_id = argument(1)
            .and_then(|id| u16::try_from(id).ok())
            .ok_or_else(|| incorrect_parameter(2))?;
        let page_no = argument(2)
            .and_then(|no| u32::try_from(no).ok())
            .ok_or_else(|| incorrect_parameter(3))?;
        let detailed = match args.get(3) {
            None | Some(Value::Null) => false,
            Some(mode) => match value::display(mode).to_uppercase().as_str() {
                "LIMITED" | "DEFAULT" => false,
                "DETAILED" => true,
                _ => return Err(incorrect_parameter(4)),
            },
        };
        let db = self.server.database_by_id(database_id).ok_or_else(|| incorrect_parameter(1))?;
        let page = PageId::new(file_id, page_no);
        let status = db.allocation_status(page)?.ok_or_else(|| page_out_of_range(page))?;
        let header = PageHeader::read(&db.page_copy(page)?[..]);
        let au_id = header.allocation_unit_id();
        let (object_id, index_id) = self.owner_of_unit(&db, au_id);
        let owner = PageOwner {
            object_id,
            index_id,
            partition_id: crate::dbccpage::partition_of(object_id, au_id) as i64,
            alloc_unit_id: au_id as i64,
        };
        let row = page_info_row(db.database_id, page, &header, &owner, &status, detailed);
        Ok((cols, vec![row]))
    }

    /// sys.fn_PageResCracker(page_resource): the database, file and page a page_resource
    /// names; no row for NULL or for a value that is not 8 bytes.
    pub(crate) fn fn_page_res_cracker(&self, args: &[Value]) -> ViewRows {
        let cols = columns(&["db_id", "file_id", "page_id"]);
        let page = match args.first() {
            Some(Value::Bytes(bytes)) => PageResource::from_bytes(bytes),
            _ => None,
        };
        let rows = page
            .map(|p| {
                vec![
                    Value::Int(i32::from(p.database_id)),
                    Value::Int(i32::from(p.file_id)),
                    Value::Int(p.page_id as i32),
                ]
            })
            .into_iter()
            .collect();
        (cols, rows)
    }
}

/// A hex text as the flag columns show it: `0x200`.
fn hex(bits: u32) -> Value {
    Value::Text(format!("{bits:#x}"))
}

/// A description column: its text in DETAILED mode, NULL in LIMITED.
fn described(detailed: bool, words: &str) -> Value {
    if detailed { Value::Text(words.to_string()) } else { Value::Null }
}

fn page_flag_words(flag_bits: u16) -> &'static str {
    if flag_bits & FLAG_CHECKSUM != 0 { "HAS_CHECKSUM" } else { "" }
}

fn page_info_row(
    database_id: u16,
    page: PageId,
    h: &PageHeader,
    owner: &PageOwner,
    s: &AllocationStatus,
    detailed: bool,
) -> Vec<Value> {
    let has_checksum = h.flag_bits & FLAG_CHECKSUM != 0;
    let fullness = usize::from(s.pfs_byte & pfs::FULLNESS_MASK).min(4);
    vec![
        Value::Int(i32::from(database_id)),
        Value::Int(i32::from(page.file_id)),
        Value::Int(page.page_no as i32),
        Value::Int(i32::from(h.header_version)),
        Value::Int(i32::from(h.page_type)),
        described(detailed, crate::dmv::page_type_desc(h.page_type)),
        hex(u32::from(h.type_flag_bits)),
        described(detailed, ""),
        hex(u32::from(h.flag_bits)),
        described(detailed, page_flag_words(h.flag_bits)),
        Value::Text(format!("{}:{}:{}", h.lsn.0, h.lsn.1, h.lsn.2)),
        Value::Int(i32::from(h.level)),
        Value::Int(owner.object_id),
        Value::Int(owner.index_id),
        Value::BigInt(owner.partition_id),
        Value::BigInt(owner.alloc_unit_id),
        Value::Bit(false),
        Value::Bit(has_checksum),
        Value::Int(if has_checksum { h.torn_bits as i32 } else { 0 }),
        Value::Bit(h.page_type == 10),
        Value::Bit(s.pfs_byte & pfs::MIXED != 0),
        Value::Bit(h.ghost_record_count > 0),
        Value::Bit(false),
        Value::Int(s.pfs_page.page_no as i32),
        Value::Bit(s.pfs_byte & pfs::ALLOCATED != 0),
        Value::Int(PFS_ALLOC_PERCENT[fullness]),
        Value::Text(format!("{:#04x}", s.pfs_byte)),
        described(detailed, &pfs_words(s.pfs_byte)),
        Value::Int(s.gam_page.page_no as i32),
        Value::Bit(s.gam_allocated),
        described(detailed, allocated_text(s.gam_allocated)),
        Value::Int(s.sgam_page.page_no as i32),
        Value::Bit(s.sgam_allocated),
        described(detailed, allocated_text(s.sgam_allocated)),
        Value::Int(s.dcm_page.page_no as i32),
        Value::Bit(s.dcm_changed),
        described(detailed, changed_text(s.dcm_changed)),
        Value::Int(s.bcm_page.page_no as i32),
        Value::Bit(s.bcm_min_logged),
        described(detailed, min_logged_text(s.bcm_min_logged)),
        Value::SmallInt(h.prev_page.file_id as i16),
        Value::Int(h.prev_page.page_no as i32),
        Value::SmallInt(h.next_page.file_id as i16),
        Value::Int(h.next_page.page_no as i32),
        Value::SmallInt(h.pminlen as i16),
        Value::SmallInt(h.slot_count as i16),
        Value::SmallInt(h.ghost_record_count as i16),
        Value::SmallInt(h.free_count as i16),
        Value::Int(i32::from(h.free_data)),
        Value::SmallInt(h.reserved_count as i16),
        Value::SmallInt(h.xact_reserved as i16),
        Value::Text(format!("({}:{})", h.xdes_id.0, h.xdes_id.1)),
    ]
}

/// pfs_status_desc: DBCC PAGE's words for the PFS byte, without its hex value.
fn pfs_words(byte: u8) -> String {
    let (flags, fullness) = pfs::words(byte);
    format!("{} {fullness}", flags.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysviews::text;

    #[test]
    fn the_pfs_description_is_dbcc_pages_words_without_the_byte() {
        let byte = pfs::MIXED | pfs::ALLOCATED | pfs::PCT_80;
        assert_eq!(pfs_words(byte), "MIXED_EXT ALLOCATED 80_PCT_FULL");
        assert_eq!(pfs_words(0), "NOT ALLOCATED 0_PCT_FULL");
    }

    #[test]
    fn limited_mode_leaves_the_descriptions_null() {
        assert_eq!(described(false, "x"), Value::Null);
        assert_eq!(described(true, "x"), text("x"));
    }
}
