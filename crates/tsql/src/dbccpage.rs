//! DBCC commands that read pages and allocation maps (reference §10.4–§10.5, §8.5):
//! PAGE, IND, SHOWFILESTATS, DROPCLEANBUFFERS and CHECKALLOC.
//!
//! DBCC PAGE (db, file, page [, printopt]) [WITH TABLERESULTS] shapes its text like SQL
//! Server's: the page header in `name = value` columns, the allocation status of the page in
//! GAM, SGAM, PFS, DIFF and ML, then by print option: 0 nothing more; 1 each record's bytes and
//! the offset table; 2 the whole page's bytes; 3 each record's bytes and its columns. GAM,
//! SGAM, PFS, IAM, DIFF and ML pages show their contents as ranges. The text goes to the
//! client only under trace flag 3604 (session or global); WITH TABLERESULTS returns rows
//! (ParentObject, Object, Field, VALUE) instead.
//!
//! Deviations: no BUFFER section and no memory addresses (a dump's address is the offset in
//! the page); index records of printopt 3 are shown as text, not as a row set.

use crate::server::{Output, ResultSet};
use crate::session::Session;
use crate::sysviews::columns;
use engine::SqlError;
use engine::alloc::{self, pfs};
use engine::database::Database;
use engine::page::{PageBuf, PageHeader};
use engine::record::{self, Value};
use engine::units::PageId;

/// Trace flag 3604: DBCC output to the client.
pub const TF_DBCC_TO_CLIENT: u16 = 3604;

/// One line of DBCC PAGE: free text, or `name = value` fields laid out three to a line.
enum Line {
    Text(String),
    Fields(Vec<(String, String)>),
}

/// A section of DBCC PAGE's output, as WITH TABLERESULTS names it.
struct Section {
    parent: &'static str,
    object: String,
    lines: Vec<Line>,
}

fn field(name: &str, value: impl ToString) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// SQL Server's record type names (status byte A bits 1-3).
fn record_type_name(kind: u8) -> &'static str {
    match kind {
        0 => "PRIMARY_RECORD",
        1 => "FORWARDED_RECORD",
        2 => "FORWARDING_RECORD",
        3 => "INDEX_RECORD",
        4 => "BLOB_FRAGMENT",
        5 => "GHOST_INDEX_RECORD",
        6 => "GHOST_DATA_RECORD",
        _ => "GHOST_VERSION_RECORD",
    }
}

/// Lines of a memory dump: 20 bytes a line, in 4-byte groups, then the printable characters;
/// the address is the offset in the page.
fn memory_dump(bytes: &[u8], base: usize) -> Vec<Line> {
    let mut lines =
        vec![Line::Text(format!("Memory Dump @0x{base:016X}")), Line::Text(String::new())];
    for (n, chunk) in bytes.chunks(20).enumerate() {
        let mut hex = String::new();
        for (i, group) in chunk.chunks(4).enumerate() {
            if i > 0 {
                hex.push(' ');
            }
            for b in group {
                hex.push_str(&format!("{b:02x}"));
            }
        }
        let text: String = chunk
            .iter()
            .map(|b| if b.is_ascii_graphic() || *b == b' ' { *b as char } else { '.' })
            .collect();
        lines.push(Line::Text(format!("{:016X}:   {hex:<44} {text}", base + n * 20)));
    }
    lines.push(Line::Text(String::new()));
    lines
}

/// A range line of an allocation map: `(1:0)        - (1:312)      =     ALLOCATED`.
fn range_line(file_id: u16, first: u32, last: u32, state: &str) -> Line {
    let from = format!("({file_id}:{first})");
    let to = if first == last { String::new() } else { format!("({file_id}:{last})") };
    Line::Text(format!("{from:<13}- {to:<13}= {state}"))
}

/// Ranges of consecutive items with the same state: (first, last, state).
fn ranges(items: impl Iterator<Item = (u32, String)>) -> Vec<(u32, u32, String)> {
    let mut out: Vec<(u32, u32, String)> = Vec::new();
    for (at, state) in items {
        match out.last_mut() {
            Some(last) if last.2 == state => last.1 = at,
            _ => out.push((at, at, state)),
        }
    }
    out
}

impl Session {
    /// DBCC PAGE: the sections of the page's dump.
    fn page_sections(
        &self,
        db: &Database,
        page: PageId,
        printopt: i64,
    ) -> Result<Vec<Section>, SqlError> {
        let buf = db.page_copy(page)?;
        let header = PageHeader::read(&buf[..]);
        let mut sections = vec![Section {
            parent: "PAGE:",
            object: String::new(),
            lines: vec![Line::Text(format!("PAGE: {page}"))],
        }];
        sections.push(Section {
            parent: "PAGE HEADER:",
            object: "Page @0x0000000000000000".into(),
            lines: self.header_lines(db, &header),
        });
        sections.push(Section {
            parent: "PAGE HEADER:",
            object: "Allocation Status".into(),
            lines: allocation_lines(db, page)?,
        });
        let is_allocation_page = matches!(header.page_type, 8 | 9 | 10 | 11 | 16 | 17);
        match printopt {
            0 => {}
            2 => {
                let mut lines = vec![Line::Text("DATA:".into())];
                lines.extend(memory_dump(&buf[..], 0));
                sections.push(Section { parent: "DATA:", object: "Memory Dump".into(), lines });
                if matches!(header.page_type, 1 | 2) {
                    sections.push(offset_table(&buf, &header));
                }
            }
            _ if is_allocation_page => sections.push(allocation_contents(db, page, &buf, &header)?),
            _ if header.page_type == 15 => sections.extend(file_header_section(&buf)),
            _ if matches!(header.page_type, 1 | 2) => {
                let interpret = printopt == 3;
                sections.extend(self.record_sections(db, &buf, &header, interpret));
                sections.push(offset_table(&buf, &header));
            }
            _ => {}
        }
        Ok(sections)
    }

    fn header_lines(&self, db: &Database, h: &PageHeader) -> Vec<Line> {
        let au_id = h.allocation_unit_id();
        let (object_id, index_id) = self.owner_of_unit(db, au_id);
        let fields = vec![
            field("m_pageId", h.page_id),
            field("m_headerVersion", h.header_version),
            field("m_type", h.page_type),
            field("m_typeFlagBits", format!("{:#x}", h.type_flag_bits)),
            field("m_level", h.level),
            field("m_flagBits", format!("{:#x}", h.flag_bits)),
            field("m_objId (AllocUnitId.idObj)", h.obj_id),
            field("m_indexId (AllocUnitId.idInd)", h.index_id),
            field("Metadata: AllocUnitId", au_id),
            field("Metadata: PartitionId", partition_of(object_id, au_id)),
            field("Metadata: IndexId", index_id),
            field("Metadata: ObjectId", object_id),
            field("m_prevPage", h.prev_page),
            field("m_nextPage", h.next_page),
            field("pminlen", h.pminlen),
            field("m_slotCnt", h.slot_count),
            field("m_freeCnt", h.free_count),
            field("m_freeData", h.free_data),
            field("m_reservedCnt", h.reserved_count),
            field("m_lsn", format!("({}:{}:{})", h.lsn.0, h.lsn.1, h.lsn.2)),
            field("m_xactReserved", h.xact_reserved),
            field("m_xdesId", format!("({}:{})", h.xdes_id.0, h.xdes_id.1)),
            field("m_ghostRecCnt", h.ghost_record_count),
            field("m_tornBits", h.torn_bits as i32),
            field("DB Frag ID", 1),
        ];
        vec![Line::Text("Page @0x0000000000000000".into()), Line::Fields(fields)]
    }

    /// The object and index that own an allocation unit (0, 0 when none does; 99, 0 for the
    /// allocation system's own pages).
    pub(crate) fn owner_of_unit(&self, db: &Database, au_id: u64) -> (i32, i32) {
        if au_id == ALLOCATION_SYSTEM_UNIT_ID {
            return (engine::page::ALLOCATION_SYSTEM_OBJECT_ID as i32, 0);
        }
        let Ok(catalog) = db.catalog() else { return (0, 0) };
        for table in catalog.tables() {
            if let Some(index) = table.indexes.iter().find(|i| i.au_id == au_id) {
                return (table.object_id, index.index_id);
            }
        }
        let system = [
            ("sys.sysschobjs", engine::catalog::SYSSCHOBJS_ID),
            ("sys.syscolpars", engine::catalog::SYSCOLPARS_ID),
            ("sys.sysidxstats", engine::catalog::SYSIDXSTATS_ID),
            ("sys.sysobjvalues", engine::catalog::SYSOBJVALUES_ID),
        ];
        let name = db.allocation_units().into_iter().find(|(id, _)| *id == au_id).map(|(_, n)| n);
        match system.iter().find(|(n, _)| Some(*n) == name.as_deref()) {
            Some((_, id)) => (*id, 1),
            None => (0, 0),
        }
    }

    /// Each record: its slot, offset, length, type and bytes; with `interpret`, its columns.
    fn record_sections(
        &self,
        db: &Database,
        buf: &PageBuf,
        header: &PageHeader,
        interpret: bool,
    ) -> Vec<Section> {
        let columns = self.page_columns(db, header);
        let mut sections = Vec::new();
        for slot in 0..header.slot_count {
            if engine::datapage::is_empty_slot(buf, slot) {
                continue;
            }
            let offset = engine::page::slot_offset(&buf[..], slot) as usize;
            let Ok(bytes) = engine::datapage::record(buf, slot) else {
                sections.push(Section {
                    parent: "Slot",
                    object: format!("Slot {slot}"),
                    lines: vec![Line::Text(format!(
                        "Slot {slot}, Offset {offset:#x}: the record is damaged"
                    ))],
                });
                continue;
            };
            let status = bytes[0];
            let mut attributes = Vec::new();
            if status & 0x10 != 0 {
                attributes.push("NULL_BITMAP");
            }
            if status & 0x20 != 0 {
                attributes.push("VARIABLE_COLUMNS");
            }
            let title = if interpret {
                format!("Slot {slot} Offset {offset:#x} Length {}", bytes.len())
            } else {
                format!("Slot {slot}, Offset {offset:#x}, Length {}, DumpStyle BYTE", bytes.len())
            };
            let mut lines =
                vec![Line::Text(String::new()), Line::Text(title), Line::Text(String::new())];
            lines.push(Line::Fields(vec![
                field("Record Type", record_type_name(record::record_type(status))),
                field("Record Attributes", format!(" {}", attributes.join(" "))),
                field("Record Size", bytes.len()),
            ]));
            lines.push(Line::Text(String::new()));
            lines.extend(memory_dump(bytes, offset));
            if interpret && let Some(cols) = &columns {
                let layout = record::Layout::new(cols);
                match record::decode(cols, &layout, bytes) {
                    Ok(values) => {
                        for (i, (column, value)) in cols.iter().zip(values).enumerate() {
                            lines.push(Line::Text(format!("Slot {slot} Column {}", i + 1)));
                            lines.push(Line::Text(String::new()));
                            lines
                                .push(Line::Fields(vec![field(&column.name, shown_value(&value))]));
                            lines.push(Line::Text(String::new()));
                        }
                    }
                    Err(bad) => lines.push(Line::Text(format!(
                        "The record could not be interpreted: {}",
                        bad.0
                    ))),
                }
            }
            sections.push(Section {
                parent: "Slot",
                object: format!("Slot {slot} Offset {offset:#x} Length {}", bytes.len()),
                lines,
            });
        }
        sections
    }

    /// The columns of the page's records, if its unit belongs to a table.
    fn page_columns(&self, db: &Database, header: &PageHeader) -> Option<Vec<record::Column>> {
        let au_id = header.allocation_unit_id();
        let catalog = db.catalog().ok()?;
        catalog.tables().iter().find_map(|t| t.record_columns(au_id, header.level))
    }

    /// DBCC PAGE.
    pub(crate) fn dbcc_page(
        &self,
        args: &[Value],
        table_results: bool,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.dbcc_database(args.first())?;
        let number = |i: usize| args.get(i).and_then(crate::value::as_i64);
        let (Some(file_id), Some(page_no)) = (number(1), number(2)) else {
            return Err(SqlError::new(
                2526,
                16,
                3,
                "Incorrect DBCC statement. Check the documentation for the correct DBCC syntax and options.",
            ));
        };
        let printopt = number(3).unwrap_or(0);
        let page = PageId::new(file_id as u16, page_no as u32);
        let size = db
            .database_files()
            .into_iter()
            .find(|f| !f.is_log && i64::from(f.file_id) == file_id)
            .map(|f| f.size_pages);
        if size.is_none_or(|s| page_no < 0 || page_no >= i64::from(s)) {
            return Err(SqlError::new(
                8968,
                16,
                1,
                format!(
                    "Table error: DBCC PAGE page {page} (object ID 0, index ID 0, partition ID 0, alloc unit ID 0 (type Unknown)) is out of the range of this database."
                ),
            ));
        }
        let sections = self.page_sections(&db, page, printopt)?;
        if table_results {
            out(Output::Rows(table_rows(&sections)));
            return Ok(());
        }
        let to_client = self.session_trace_flags.contains(&TF_DBCC_TO_CLIENT)
            || self.server.instance.trace_flags.is_on(TF_DBCC_TO_CLIENT);
        if to_client {
            for section in &sections {
                for line in render(&section.lines) {
                    out(Output::Message(line));
                }
            }
        }
        Ok(())
    }

    /// The database a DBCC argument names (by name or id); the current one when absent or 0.
    pub(crate) fn dbcc_database(
        &self,
        arg: Option<&Value>,
    ) -> Result<std::sync::Arc<Database>, SqlError> {
        let not_found = |name: &str| {
            SqlError::new(
                2520,
                16,
                1,
                format!(
                    "Could not find database '{name}'. The database either does not exist, or was dropped before a statement tried to use it. Verify if the database exists by querying the sys.databases catalog view."
                ),
            )
        };
        let id_not_found = |id: i64| {
            SqlError::new(
                2521,
                16,
                1,
                format!(
                    "Could not find database ID {id}. The database ID either does not exist, or the database was dropped before a statement tried to use it. Verify if the database ID exists by querying the sys.databases catalog view."
                ),
            )
        };
        let current = &self.db().name;
        match arg {
            None | Some(Value::Null) => {
                self.server.database(current).ok_or_else(|| not_found(current))
            }
            // OFFLINE or SUSPECT: the error USE gives (942, 926); not there at all: 2520.
            Some(Value::Text(name)) => match self.server.open_database(name) {
                Err(error) if error.number == 911 => Err(not_found(name)),
                result => result,
            },
            Some(other) => {
                let text = crate::value::display(other);
                let id = crate::value::as_i64(other).ok_or_else(|| not_found(&text))?;
                if id == 0 {
                    return self.server.database(current).ok_or_else(|| not_found(current));
                }
                self.server.database_by_id(id).ok_or_else(|| id_not_found(id))
            }
        }
    }

    /// DBCC IND (db, table, index_id | -1 | -2): every page of the table's units (-1 all
    /// indexes, -2 IAM pages only), from their IAM chains and page headers.
    pub(crate) fn dbcc_ind(
        &self,
        args: &[Value],
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.dbcc_database(args.first())?;
        let name = args.get(1).map(crate::value::display).unwrap_or_default();
        let short = name.rsplit('.').next().unwrap_or(&name).trim_matches(['[', ']']).to_string();
        let catalog = db.catalog()?;
        let table = match args.get(1).and_then(crate::value::as_i64) {
            Some(object_id) if !matches!(args.get(1), Some(Value::Text(_))) => catalog.table_by_id(object_id as i32),
            _ => catalog.table(&self.catalog_name(&short)?),
        }
        .ok_or_else(|| SqlError::new(2501, 16, 45, format!("Cannot find a table or object with the name \"{name}\". Check the system catalog.")))?;
        let wanted = args.get(2).and_then(crate::value::as_i64).unwrap_or(-1);
        let mut rows = Vec::new();
        for index in &table.indexes {
            if wanted >= 0 && i64::from(index.index_id) != wanted {
                continue;
            }
            for page in db.unit_pages(index.au_id)? {
                if !page.is_allocated || (wanted == -2 && !page.is_iam) {
                    continue;
                }
                let header = PageHeader::read(&db.page_copy(page.page)?[..]);
                let (iam_file, iam_page) = match page.iam_page {
                    Some(iam) => {
                        (Value::SmallInt(iam.file_id as i16), Value::Int(iam.page_no as i32))
                    }
                    None => (Value::Null, Value::Null),
                };
                rows.push(vec![
                    Value::SmallInt(page.page.file_id as i16),
                    Value::Int(page.page.page_no as i32),
                    iam_file,
                    iam_page,
                    Value::Int(table.object_id),
                    Value::Int(index.index_id),
                    Value::Int(1),
                    Value::BigInt(index.au_id as i64),
                    Value::Text("In-row data".into()),
                    Value::TinyInt(header.page_type),
                    if page.is_iam { Value::Null } else { Value::TinyInt(header.level) },
                    Value::SmallInt(header.next_page.file_id as i16),
                    Value::Int(header.next_page.page_no as i32),
                    Value::SmallInt(header.prev_page.file_id as i16),
                    Value::Int(header.prev_page.page_no as i32),
                ]);
            }
        }
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "PageFID",
                "PagePID",
                "IAMFID",
                "IAMPID",
                "ObjectID",
                "IndexID",
                "PartitionNumber",
                "PartitionID",
                "iam_chain_type",
                "PageType",
                "IndexLevel",
                "NextPageFID",
                "NextPagePID",
                "PrevPageFID",
                "PrevPagePID",
            ]),
            rows,
            types: Vec::new(),
        }));
        Ok(())
    }

    /// DBCC SHOWFILESTATS: the current database's data files, extents from the GAM.
    pub(crate) fn dbcc_showfilestats(&self, out: &mut dyn FnMut(Output)) {
        let db = self.db();
        let paths: std::collections::BTreeMap<u16, String> = db
            .database_files()
            .into_iter()
            .map(|f| (f.file_id, f.path.display().to_string()))
            .collect();
        let fg_ids: std::collections::BTreeMap<String, u16> =
            db.filegroups().into_iter().map(|(id, name, ..)| (name, id)).collect();
        let rows = db
            .file_space()
            .into_iter()
            .map(|f| {
                vec![
                    Value::Int(i32::from(f.file_id)),
                    Value::Int(i32::from(fg_ids.get(&f.filegroup).copied().unwrap_or(1))),
                    Value::BigInt(i64::from(f.total_extents)),
                    Value::BigInt(i64::from(f.total_extents - f.free_extents)),
                    Value::Text(f.logical_name.clone()),
                    Value::Text(paths.get(&f.file_id).cloned().unwrap_or_default()),
                ]
            })
            .collect();
        out(Output::Rows(ResultSet {
            columns: columns(&[
                "Fileid",
                "FileGroup",
                "TotalExtents",
                "UsedExtents",
                "Name",
                "FileName",
            ]),
            rows,
            types: Vec::new(),
        }));
    }

    /// DBCC CHECKALLOC [(db)]: every allocation invariant; errors as SQL Server's messages,
    /// then per-file extent statistics (8983) and the summary (8989).
    pub(crate) fn dbcc_checkalloc(
        &mut self,
        args: &[Value],
        no_infomsgs: bool,
        line: u64,
        out: &mut dyn FnMut(Output),
    ) -> Result<(), SqlError> {
        let db = self.dbcc_database(args.first())?;
        if !no_infomsgs {
            out(Output::Message(format!("DBCC results for '{}'.", db.name)));
        }
        let errors = db.check_allocation();
        for error in &errors {
            out(Output::Error { error: error.clone(), line, procedure: None });
        }
        if let Some(last) = errors.last() {
            self.note_error(last.number);
        }
        if !no_infomsgs {
            for file in db.database_files().into_iter().filter(|f| !f.is_log) {
                let Some(bytes) = db.pfs_bytes(file.file_id)? else { continue };
                out(Output::Message(file_statistics(file.file_id, &bytes)));
            }
            out(Output::Message(format!(
                "CHECKALLOC found {} allocation errors and 0 consistency errors in database '{}'.",
                errors.len(),
                db.name
            )));
        }
        Ok(())
    }
}

/// 8983: File n. Extents, used pages, reserved pages, mixed extents, mixed pages.
fn file_statistics(file_id: u16, pfs_bytes: &[u8]) -> String {
    let (mut extents, mut used, mut reserved, mut mixed_extents, mut mixed_pages) = (0, 0, 0, 0, 0);
    for extent in pfs_bytes.chunks(8) {
        let allocated = extent.iter().filter(|b| *b & pfs::ALLOCATED != 0).count();
        let mixed = extent[0] & pfs::MIXED != 0;
        used += allocated;
        if mixed {
            mixed_extents += 1;
            mixed_pages += allocated;
        }
        if allocated > 0 || mixed {
            extents += 1;
            reserved += extent.len();
        }
    }
    format!(
        "File {file_id}. Extents {extents}, used pages {used}, reserved pages {reserved}, mixed extents {mixed_extents}, mixed pages {mixed_pages}."
    )
}

fn shown_value(value: &Value) -> String {
    match value {
        Value::Null => "[NULL]".to_string(),
        other => crate::value::display(other),
    }
}

/// A GAM or SGAM bit as the allocation status shows it (DBCC PAGE, sys.dm_db_page_info).
pub(crate) fn allocated_text(on: bool) -> &'static str {
    if on { "ALLOCATED" } else { "NOT ALLOCATED" }
}

/// A DIFF map bit as the allocation status shows it.
pub(crate) fn changed_text(on: bool) -> &'static str {
    if on { "CHANGED" } else { "NOT CHANGED" }
}

/// An ML map bit as the allocation status shows it.
pub(crate) fn min_logged_text(on: bool) -> &'static str {
    if on { "MIN_LOGGED" } else { "NOT MIN_LOGGED" }
}

/// The allocation maps' view of the page.
fn allocation_lines(db: &Database, page: PageId) -> Result<Vec<Line>, SqlError> {
    let Some(s) = db.allocation_status(page)? else { return Ok(Vec::new()) };
    Ok(vec![
        Line::Text("Allocation Status".into()),
        Line::Text(String::new()),
        Line::Fields(vec![
            field(&format!("GAM {}", s.gam_page), allocated_text(s.gam_allocated)),
            field(&format!("SGAM {}", s.sgam_page), allocated_text(s.sgam_allocated)),
            field(&format!("PFS {}", s.pfs_page), pfs::describe(s.pfs_byte)),
            field(&format!("DIFF {}", s.dcm_page), changed_text(s.dcm_changed)),
            field(&format!("ML {}", s.bcm_page), min_logged_text(s.bcm_min_logged)),
        ]),
        Line::Text(String::new()),
    ])
}

/// The contents of a GAM, SGAM, DIFF, ML, PFS or IAM page, as ranges.
fn allocation_contents(
    db: &Database,
    page: PageId,
    buf: &PageBuf,
    header: &PageHeader,
) -> Result<Section, SqlError> {
    let size = db
        .database_files()
        .into_iter()
        .find(|f| f.file_id == page.file_id)
        .map_or(0, |f| f.size_pages);
    let file = page.file_id;
    let extents_in = |start_page: u32| {
        let first_extent = start_page / 8;
        let last_extent = (size / 8).min(first_extent + engine::units::GAM_INTERVAL_EXTENTS);
        (first_extent..last_extent).map(move |e| (e, e - first_extent))
    };
    let interval_start =
        page.page_no / engine::units::GAM_INTERVAL_PAGES * engine::units::GAM_INTERVAL_PAGES;
    let (title, mut lines) = match header.page_type {
        8 | 9 | 16 | 17 => {
            let kind = match header.page_type {
                8 => "GAM",
                9 => "SGAM",
                16 => "DIFF_MAP",
                _ => "ML_MAP",
            };
            let states = extents_in(interval_start).map(|(extent, bit)| {
                let set = alloc::bitmap_get(buf, bit);
                let state = match header.page_type {
                    8 => {
                        if set {
                            "NOT ALLOCATED"
                        } else {
                            "    ALLOCATED"
                        }
                    }
                    9 => {
                        if set {
                            "    ALLOCATED"
                        } else {
                            "NOT ALLOCATED"
                        }
                    }
                    16 => {
                        if set {
                            "    CHANGED"
                        } else {
                            "NOT CHANGED"
                        }
                    }
                    _ => {
                        if set {
                            "    MIN_LOGGED"
                        } else {
                            "NOT MIN_LOGGED"
                        }
                    }
                };
                (extent * 8, state.to_string())
            });
            let lines: Vec<Line> =
                ranges(states).into_iter().map(|(a, b, s)| range_line(file, a, b, &s)).collect();
            (format!("{kind}: Extent Alloc Status @0x0000000000000000"), lines)
        }
        11 => {
            let start = if page.page_no == 1 { 0 } else { page.page_no };
            let end = size.min(start + engine::units::PFS_INTERVAL_PAGES);
            let states = (start..end).map(|p| (p, pfs_words(alloc::pfs_get(buf, p))));
            let lines: Vec<Line> =
                ranges(states).into_iter().map(|(a, b, s)| range_line(file, a, b, &s)).collect();
            ("PFS: Page Alloc Status @0x0000000000000000".to_string(), lines)
        }
        _ => {
            let iam = alloc::iam_header(buf);
            let mut lines = vec![
                Line::Text("IAM: Header @0x0000000000000000".into()),
                Line::Text(String::new()),
                Line::Fields(vec![
                    field("sequenceNumber", iam.sequence),
                    field("start_pg", iam.start_page),
                ]),
                Line::Text(String::new()),
                Line::Text("IAM: Single Page Allocations @0x0000000000000000".into()),
                Line::Text(String::new()),
            ];
            for (i, slot) in iam.single_page_slots.iter().enumerate() {
                lines.push(Line::Text(format!("Slot {i} = {slot}")));
            }
            lines.push(Line::Text(String::new()));
            lines.push(Line::Text("IAM: Extent Alloc Status Slot 1 @0x0000000000000000".into()));
            lines.push(Line::Text(String::new()));
            let file = iam.start_page.file_id;
            let start = iam.start_page.page_no;
            let states = extents_in(start).map(|(extent, bit)| {
                let state =
                    if alloc::bitmap_get(buf, bit) { "    ALLOCATED" } else { "NOT ALLOCATED" };
                (extent * 8, state.to_string())
            });
            lines.extend(ranges(states).into_iter().map(|(a, b, s)| range_line(file, a, b, &s)));
            return Ok(Section {
                parent: "IAM: Extent Alloc Status",
                object: "Slot 1".into(),
                lines,
            });
        }
    };
    lines.insert(0, Line::Text(String::new()));
    lines.insert(0, Line::Text(title.clone()));
    Ok(Section { parent: "Allocation Map", object: title, lines })
}

/// A file header page's fields (printopt 1 and 3), as sys.database_files shows them.
fn file_header_section(buf: &PageBuf) -> Option<Section> {
    let h = engine::file::FileHeader::decode(buf)?;
    let lines = vec![
        Line::Text("File Header @0x0000000000000000".into()),
        Line::Text(String::new()),
        Line::Fields(vec![
            field("FileId", h.file_id),
            field("FileGroupId", h.data_space_id),
            field("LogicalName", &h.logical_name),
            field("Type", h.file_type as u8),
            field("Primary", u8::from(h.is_primary)),
            field("Size", h.size_pages),
            field("MaxSize", h.max_size_pages),
            field("Growth", h.growth),
            field("IsPercentGrowth", u8::from(h.is_percent_growth)),
            field("DatabaseId", h.database_id),
            field("BindingId", h.binding_id),
        ]),
        Line::Text(String::new()),
    ];
    Some(Section { parent: "File Header", object: "File Header".into(), lines })
}

/// A PFS byte as a range line shows it: `    ALLOCATED   0_PCT_FULL IAM Page Mixed Ext`.
fn pfs_words(byte: u8) -> String {
    let fullness = ["0_PCT_FULL", "50_PCT_FULL", "80_PCT_FULL", "95_PCT_FULL", "100_PCT_FULL"];
    let mut text = format!(
        "{}{:>13}",
        if byte & pfs::ALLOCATED != 0 { "    ALLOCATED" } else { "NOT ALLOCATED" },
        fullness[usize::from(byte & pfs::FULLNESS_MASK).min(4)]
    );
    if byte & pfs::GHOST != 0 {
        text.push_str(" Has Ghost");
    }
    if byte & pfs::IAM != 0 {
        text.push_str(" IAM Page");
    }
    if byte & pfs::MIXED != 0 {
        text.push_str(" Mixed Ext");
    }
    text
}

/// The slot array, last slot first, as `Row - Offset` lines.
fn offset_table(buf: &PageBuf, header: &PageHeader) -> Section {
    let mut lines = vec![
        Line::Text("OFFSET TABLE:".into()),
        Line::Text(String::new()),
        Line::Text("Row - Offset".into()),
    ];
    for slot in (0..header.slot_count).rev() {
        let offset = engine::page::slot_offset(&buf[..], slot);
        lines.push(Line::Text(format!("{slot} ({slot:#x}) - {offset} ({offset:#x})")));
    }
    lines.push(Line::Text(String::new()));
    Section { parent: "OFFSET TABLE:", object: String::new(), lines }
}

/// Text lines: fields three to a line, each in a 36-character column.
fn render(lines: &[Line]) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        match line {
            Line::Text(text) => out.push(text.clone()),
            Line::Fields(fields) => {
                for chunk in fields.chunks(3) {
                    let text: String = chunk
                        .iter()
                        .map(|(n, v)| {
                            let item = format!("{n} = {v}");
                            let width = 36.max(item.len() + 1);
                            format!("{item:<width$}")
                        })
                        .collect();
                    out.push(text.trim_end().to_string());
                }
            }
        }
    }
    out
}

/// WITH TABLERESULTS: (ParentObject, Object, Field, VALUE) per field; text lines become rows
/// with the text as the field.
fn table_rows(sections: &[Section]) -> ResultSet {
    let mut rows = Vec::new();
    for section in sections {
        for line in &section.lines {
            let pairs: Vec<(String, String)> = match line {
                Line::Fields(fields) => fields.clone(),
                Line::Text(text) if text.is_empty() => continue,
                Line::Text(text) => vec![(text.clone(), String::new())],
            };
            for (name, value) in pairs {
                rows.push(vec![
                    Value::Text(section.parent.to_string()),
                    Value::Text(section.object.clone()),
                    Value::Text(name),
                    Value::Text(value),
                ]);
            }
        }
    }
    ResultSet {
        columns: columns(&["ParentObject", "Object", "Field", "VALUE"]),
        rows,
        types: Vec::new(),
    }
}

/// The allocation unit of the allocation system's own pages (object 99, index 0).
const ALLOCATION_SYSTEM_UNIT_ID: u64 = (engine::page::ALLOCATION_SYSTEM_OBJECT_ID as u64) << 16;

/// `Metadata: PartitionId` (and sys.dm_db_page_info.partition_id) for a page whose allocation
/// unit `au_id` belongs to `object_id`: the unit's own id (a partition has one in-row unit), or
/// 0 for a page no object owns and for the allocation system's pages, which have no partition.
pub(crate) fn partition_of(object_id: i32, au_id: u64) -> u64 {
    if object_id == 0 || au_id == ALLOCATION_SYSTEM_UNIT_ID { 0 } else { au_id }
}
