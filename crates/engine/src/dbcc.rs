//! DBCC CHECKDB's and CHECKTABLE's check of one allocation unit (reference §8.4).
//!
//! What it reproduces: SQL Server's fact-based check. The pages that the unit's IAM chain and
//! PFS say it owns are read in allocation order (file, then page), not by walking the tree,
//! with the unit's read-ahead, by up to MAXDOP workers at once, each worker a contiguous share
//! of the pages. Each page is checked on its own (its header, its structure, its keys) and
//! yields facts: its level, its neighbours, its children with their keys, its forwarding
//! pointers. Once every page is read, the facts are matched: every child an index page names
//! was seen, at the level below, within its parent's keys; every page but the root has one
//! parent; m_prevPage and m_nextPage agree along each level; every forwarding stub and
//! forwarded row point at each other; a heap page's PFS fullness is what its free space says.
//! The same pass hashes the records the logical check compares ([`Logical`]): the index
//! entries a table's rows call for, and the entries its nonclustered indexes hold.
//! A mismatch is SQL Server's error for it (the 2500 and 8900 messages), naming the unit as
//! `Object ID o, index ID i, partition ID p, alloc unit ID a (type In-row data)`. The B-tree
//! checks are the btree module's invariants seen from the pages: 1 is 2511 and 8934 across a
//! parent boundary, 2 is 8933 and 8934, 3 is 8931, 4 is 8935, 8936 and 8978.
//!
//! How a damaged page shows: the buffer pool refuses a page that fails its checks on read
//! (824); CHECKDB then reads the page's bytes from disk itself to say what is wrong (8909 for
//! a wrong page id, 8939 for a checksum, 8941-8943 and 8927 for a slot array or counts that do
//! not describe the records), with 8928 "could not be processed", and its neighbours then
//! report it missing (8980, 8976, 8978).
//!
//! Deviations: facts are matched in memory, not sorted through a worktable in tempdb, and a
//! unit is one batch (as with trace flag 2562). A checksum failure's 8939 gives the stored and
//! the computed checksum as its two values (SQL Server gives buffer status bits and an error
//! code). A header that names another unit is 2534 and 2533 only, without SQL Server's
//! cross-object linkage errors (8925, 8926, 8982). LOB and row-overflow units do not exist.

use crate::btree::{BTree, TreePageFacts};
use crate::database::Database;
use crate::datapage;
use crate::error::{SqlError, SqlResult};
use crate::heap::Rid;
use crate::page::{self, PageBuf, PageCorruption, PageHeader, PageType};
use crate::record::{self, RecordType, compare_keys};
use crate::units::{PAGE_HEADER_SIZE, PAGE_SIZE, PageId};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::time::Instant;

/// A worker scans at least this many pages (fewer pages are not worth a thread).
const MIN_PAGES_PER_WORKER: usize = 64;
/// The most workers one unit's scan uses, whatever MAXDOP says (SQL Server's limit is 64).
pub const MAX_WORKERS: usize = 64;

/// SQL Server's repair levels, least first (8958 names the least that repairs every error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RepairLevel {
    Rebuild,
    AllowDataLoss,
}

impl RepairLevel {
    pub fn name(self) -> &'static str {
        match self {
            RepairLevel::Rebuild => "repair_rebuild",
            RepairLevel::AllowDataLoss => "repair_allow_data_loss",
        }
    }
}

/// One error CHECKDB reports, and the repair level that would fix it.
#[derive(Clone, Debug)]
pub struct Finding {
    pub error: SqlError,
    pub repair: RepairLevel,
    /// A message that follows the error and belongs to it (8955 after 8951, 8956 after
    /// 8952): shown, not counted.
    pub detail: Option<SqlError>,
}

/// An allocation unit as CHECKDB's messages name it. The partition id is the unit's id, as
/// in sys.partitions here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitName {
    pub object_id: i32,
    pub index_id: i32,
    pub au_id: u64,
}

impl fmt::Display for UnitName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Object ID {}, index ID {}, partition ID {}, alloc unit ID {} (type In-row data)",
            self.object_id, self.index_id, self.au_id, self.au_id
        )
    }
}

/// How SQL Server names a unit it cannot identify (a page header of zeros, say).
const UNKNOWN_UNIT: &str =
    "Object ID 0, index ID -1, partition ID 0, alloc unit ID 0 (type Unknown)";

/// Every unit of the database by id, so that a page whose header names another unit can be
/// named.
pub type Owners = HashMap<u64, UnitName>;

fn owner_text(owners: &Owners, au_id: u64) -> String {
    owners.get(&au_id).map_or_else(|| UNKNOWN_UNIT.to_string(), ToString::to_string)
}

/// How a unit is checked.
#[derive(Clone, Copy)]
pub struct UnitOptions<'a> {
    /// The most workers that read its pages at once.
    pub maxdop: usize,
    /// WITH PHYSICAL_ONLY: each page's header, checksum and record structure only; no facts
    /// are gathered or matched (no key, link or forwarding checks).
    pub physical_only: bool,
    /// The unit's part in the logical check of the table's nonclustered indexes.
    pub logical: Logical<'a>,
}

/// The logical check's first pass, as SQL Server's CHECKDB makes it: while a table's pages are
/// read, every live row of its heap or clustered index yields the leaf record each
/// nonclustered index must hold for it, and each is hashed into a sum per index; every live
/// leaf record of each nonclustered index is hashed into its own sum. Equal sums: the indexes
/// hold exactly the table's rows. Unequal: the caller's deep dive finds which rows
/// (`catalog::Table::index_row_mismatches`). The sums are order-free, so the workers' shares
/// simply add up.
#[derive(Clone, Copy)]
pub enum Logical<'a> {
    /// No logical check (PHYSICAL_ONLY, NOINDEX, no nonclustered index).
    Off,
    /// The unit is the table's heap or clustered index.
    Base(&'a dyn IndexEntries),
    /// The unit is a nonclustered index.
    Index,
}

/// What the logical check needs of a table: the leaf record each nonclustered index must
/// hold for a live record of its heap or clustered index.
pub trait IndexEntries: Sync {
    /// How many nonclustered indexes the table has.
    fn index_count(&self) -> usize;
    /// The records, one per nonclustered index in index order, for the base record at
    /// `rid` (a heap's forwarded record is known by its stub's RID); Err says why the record
    /// does not decode.
    fn entries_of(&self, rid: Rid, record: &[u8]) -> Result<Vec<Vec<u8>>, String>;
}

/// The hash a leaf record adds to its index's sum.
fn record_hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// What the unit holds.
pub enum Structure<'a> {
    Tree(&'a BTree),
    Heap,
}

/// The outcome of one unit's check.
#[derive(Debug, Default)]
pub struct UnitCheck {
    /// Rows on its leaves (or heap pages), ghosts and forwarded records not counted.
    pub rows: u64,
    /// Its leaf (or heap data) pages that were read and processed.
    pub data_pages: u64,
    pub findings: Vec<Finding>,
    /// The logical check's sums ([`Logical`]): one per nonclustered index for the table's
    /// base unit, one for a nonclustered index, none when the check is off.
    pub digests: Vec<u64>,
}

/// What one heap page says.
struct HeapPageFacts {
    live_rows: u64,
    /// Forwarding stubs: slot and the RID they point to.
    stubs: Vec<(u16, Rid)>,
    /// Forwarded records: slot and their back-pointer.
    forwarded: Vec<(u16, Rid)>,
    /// The PFS fullness bucket its free space calls for.
    fullness: u8,
}

enum PageFacts {
    Tree(TreePageFacts),
    Heap(HeapPageFacts),
    /// PHYSICAL_ONLY: the page passed its own checks; whether it is a leaf or heap page.
    Physical {
        data_page: bool,
    },
}

/// One worker's share of the scan.
#[derive(Default)]
struct Scan {
    facts: Vec<(PageId, PageFacts)>,
    findings: Vec<Finding>,
    digests: Vec<u64>,
}

impl Scan {
    fn new(logical: Logical<'_>) -> Scan {
        let sums = match logical {
            Logical::Off => 0,
            Logical::Base(entries) => entries.index_count(),
            Logical::Index => 1,
        };
        Scan { digests: vec![0; sums], ..Scan::default() }
    }

    fn add(&mut self, other: Scan) {
        self.facts.extend(other.facts);
        self.findings.extend(other.findings);
        for (sum, part) in self.digests.iter_mut().zip(other.digests) {
            *sum = sum.wrapping_add(part);
        }
    }
}

/// What every worker of one unit's scan shares.
struct Scanner<'a> {
    db: &'a Database,
    name: UnitName,
    structure: &'a Structure<'a>,
    owners: &'a Owners,
    options: UnitOptions<'a>,
    /// All the unit's pages the scan reads, sorted (each worker reads a share of them).
    unit_pages: &'a [PageId],
}

/// Checks one allocation unit with up to `maxdop` workers. `owners` names every unit.
pub fn check_unit(
    db: &Database,
    name: UnitName,
    structure: &Structure<'_>,
    owners: &Owners,
    options: UnitOptions<'_>,
) -> SqlResult<UnitCheck> {
    let unit_pages = db.unit_pages(name.au_id)?;
    let mut findings = Vec::new();
    for iam in unit_pages.iter().filter(|p| p.is_iam) {
        check_iam_page(db, iam.page, name, &mut findings)?;
    }
    let mut pages: Vec<PageId> =
        unit_pages.iter().filter(|p| p.is_allocated && !p.is_iam).map(|p| p.page).collect();
    pages.sort_unstable();
    let workers =
        options.maxdop.clamp(1, MAX_WORKERS).min(pages.len().div_ceil(MIN_PAGES_PER_WORKER));
    let scanner = Scanner { db, name, structure, owners, options, unit_pages: &pages };
    let scan = scanner.scan_in_parallel(&pages, workers)?;
    findings.extend(scan.findings);
    let mut check = UnitCheck { digests: scan.digests, ..UnitCheck::default() };
    let facts: BTreeMap<PageId, PageFacts> = scan.facts.into_iter().collect();
    if options.physical_only {
        let data_pages =
            facts.values().filter(|f| matches!(f, PageFacts::Physical { data_page: true }));
        check.data_pages = data_pages.count() as u64;
        check.findings = findings;
        return Ok(check);
    }
    match structure {
        Structure::Tree(tree) => {
            let tree_facts: BTreeMap<PageId, &TreePageFacts> = facts
                .iter()
                .filter_map(|(page, f)| match f {
                    PageFacts::Tree(t) => Some((*page, t)),
                    _ => None,
                })
                .collect();
            check.rows = tree_facts.values().filter(|f| f.level == 0).map(|f| f.live_rows).sum();
            check.data_pages = tree_facts.values().filter(|f| f.level == 0).count() as u64;
            match_tree(name, tree.root, &tree_facts, &mut findings);
        }
        Structure::Heap => {
            let heap_facts: BTreeMap<PageId, &HeapPageFacts> = facts
                .iter()
                .filter_map(|(page, f)| match f {
                    PageFacts::Heap(h) => Some((*page, h)),
                    _ => None,
                })
                .collect();
            check.rows = heap_facts.values().map(|f| f.live_rows).sum();
            check.data_pages = heap_facts.len() as u64;
            match_heap(db, name, &heap_facts, &mut findings)?;
        }
    }
    check.findings = findings;
    Ok(check)
}

impl Scanner<'_> {
    /// Splits the pages into `workers` contiguous shares and scans them at once; the findings
    /// come back in page order whatever the number of workers. The caller's wait for its
    /// workers is recorded as CXPACKET.
    fn scan_in_parallel(&self, pages: &[PageId], workers: usize) -> SqlResult<Scan> {
        if workers <= 1 || pages.is_empty() {
            return self.scan_pages(pages);
        }
        let share = pages.len().div_ceil(workers);
        let started = Instant::now();
        // The worker's scheduler runs another worker while this one waits for its readers.
        let suspended = crate::scheduler::suspend();
        let scans: Vec<SqlResult<Scan>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pages
                .chunks(share)
                .map(|chunk| scope.spawn(move || self.scan_pages(chunk)))
                .collect();
            handles.into_iter().map(|h| h.join().expect("a CHECKDB worker panicked")).collect()
        });
        let signal = suspended.resume();
        self.db.instance().waits.record("CXPACKET", started.elapsed(), signal);
        let mut all = Scan::new(self.options.logical);
        for scan in scans {
            all.add(scan?);
        }
        Ok(all)
    }

    /// One worker: reads each page (with the unit's read-ahead), gathers its facts and adds
    /// its records to the logical check's sums.
    fn scan_pages(&self, pages: &[PageId]) -> SqlResult<Scan> {
        let (db, name) = (self.db, self.name);
        let mut scan = Scan::new(self.options.logical);
        // The unit's plan from the page list check_unit made (not the IAM and PFS read again).
        let mut read_ahead = crate::readahead::ReadAhead::for_pages(db, self.unit_pages);
        for &page in pages {
            if let Some(read_ahead) = &mut read_ahead {
                // A run that holds a damaged page fails as a whole; its pages are then read one
                // by one below, and the damaged one reported.
                let _ = read_ahead.before(db, page);
            }
            let facts = match read_for_check(db, page, name, self.owners, &mut scan.findings)? {
                Some(buf) => self.page_facts(page, &buf).and_then(|facts| {
                    self.add_to_digests(page, &buf, &mut scan.digests)?;
                    Ok(facts)
                }),
                None => Err(Vec::new()),
            };
            match facts {
                Ok(facts) => scan.facts.push((page, facts)),
                Err(found) => {
                    scan.findings.extend(found);
                    scan.findings.push(not_processed(name, page));
                }
            }
        }
        Ok(scan)
    }

    fn page_facts(&self, page: PageId, buf: &PageBuf) -> Result<PageFacts, Vec<Finding>> {
        let physical_only = self.options.physical_only;
        page_facts(self.db, page, buf, self.name, self.structure, self.owners, physical_only)
    }

    /// The logical check's pass over a page that passed its own checks: a leaf or heap page's
    /// live records into the sums ([`Logical`]). A base record that does not decode is 8944.
    fn add_to_digests(
        &self,
        page: PageId,
        buf: &PageBuf,
        digests: &mut [u64],
    ) -> Result<(), Vec<Finding>> {
        if matches!(self.options.logical, Logical::Off) || page::header_level(&buf[..]) != 0 {
            return Ok(());
        }
        let is_heap = matches!(self.structure, Structure::Heap);
        for slot in 0..datapage::slot_count(buf) {
            if datapage::is_empty_slot(buf, slot) {
                continue;
            }
            let Ok(bytes) = datapage::record(buf, slot) else { continue };
            let kind = record::record_type(bytes[0]);
            if is_ghost(bytes[0]) || kind == RecordType::ForwardingStub as u8 {
                continue;
            }
            match self.options.logical {
                Logical::Index => digests[0] = digests[0].wrapping_add(record_hash(bytes)),
                Logical::Base(entries) => {
                    let rid = if is_heap && kind == RecordType::Forwarded as u8 {
                        record::back_pointer(bytes)
                            .map_or(Rid { page, slot }, |b| Rid::from_bytes(&b))
                    } else {
                        Rid { page, slot }
                    };
                    let records = entries.entries_of(rid, bytes).map_err(|test| {
                        vec![undecodable_row(self.name, page, slot, &test, bytes.len(), buf)]
                    })?;
                    for (sum, entry) in digests.iter_mut().zip(&records) {
                        *sum = sum.wrapping_add(record_hash(entry));
                    }
                }
                Logical::Off => {}
            }
        }
        Ok(())
    }
}

/// 8944: a row of the table whose columns do not decode. Its two values are the record's
/// length and the page's m_slotCnt.
fn undecodable_row(
    name: UnitName,
    page: PageId,
    slot: u16,
    test: &str,
    len: usize,
    buf: &PageBuf,
) -> Finding {
    finding(
        8944,
        format!(
            "Table error: {name}, page {page}, row {slot}. Test ({test}) failed. Values are {len} and {}.",
            datapage::slot_count(buf)
        ),
        repair_for(name, Some(0)),
    )
}

/// 8928: the page's other errors say why.
fn not_processed(name: UnitName, page: PageId) -> Finding {
    finding(
        8928,
        format!("{name}: Page {page} could not be processed. See other errors for details."),
        repair_for(name, None),
    )
}

fn finding(number: i32, message: String, repair: RepairLevel) -> Finding {
    Finding { error: SqlError::new(number, 16, 1, message), repair, detail: None }
}

/// A nonclustered index and the levels above the leaves can be rebuilt from the data; a
/// data page's damage loses data.
fn repair_for(name: UnitName, level: Option<u8>) -> RepairLevel {
    if name.index_id > 1 || level.is_some_and(|l| l > 0) {
        RepairLevel::Rebuild
    } else {
        RepairLevel::AllowDataLoss
    }
}

/// The page as the buffer pool has it; if the pool refuses it (824), its bytes on disk and
/// what is wrong with them, in `findings`, and None.
fn read_for_check(
    db: &Database,
    page: PageId,
    name: UnitName,
    owners: &Owners,
    findings: &mut Vec<Finding>,
) -> SqlResult<Option<Box<PageBuf>>> {
    match db.page_copy(page) {
        Ok(buf) => Ok(Some(buf)),
        Err(error) if error.number == 824 => {
            let raw = db.read_page_unverified(page)?;
            match page::verify(&raw, page) {
                Ok(()) => Ok(Some(raw)), // written again since the pool's read
                Err(corruption) => {
                    findings.extend(describe_corruption(page, &raw, &corruption, name, owners));
                    Ok(None)
                }
            }
        }
        Err(error) => {
            findings.push(finding(
                8939,
                format!(
                    "Table error: {name}, page {page}. Test (IS_OFF (BUF_IOERR, pBUF->bstat)) failed. Values are {} and {}.",
                    error.number, error.state
                ),
                repair_for(name, None),
            ));
            Ok(None)
        }
    }
}

/// What a page that failed the read checks has wrong with it.
fn describe_corruption(
    page: PageId,
    raw: &PageBuf,
    corruption: &PageCorruption,
    name: UnitName,
    owners: &Owners,
) -> Vec<Finding> {
    let repair = repair_for(name, Some(raw[3]));
    match corruption {
        PageCorruption::Checksum { expected, actual } => vec![finding(
            8939,
            format!(
                "Table error: {name}, page {page}. Test (IS_OFF (BUF_IOERR, pBUF->bstat)) failed. Values are {expected} and {actual}."
            ),
            repair,
        )],
        PageCorruption::WrongPageId { actual, .. } => {
            let header = PageHeader::read(&raw[..]);
            vec![wrong_page_id(page, *actual, owner_text(owners, header.allocation_unit_id()))]
        }
        PageCorruption::BadHeaderVersion(version) => vec![finding(
            8939,
            format!(
                "Table error: {name}, page {page}. Test (m_headerVersion == HEADER_7_0) failed. Values are {version} and 1."
            ),
            repair,
        )],
        PageCorruption::Audit(_) => audit_findings(page, raw, name, repair),
    }
}

/// 8909, naming the unit the header claims.
fn wrong_page_id(page: PageId, in_header: PageId, header_owner: String) -> Finding {
    finding(
        8909,
        format!(
            "Table error: {header_owner}, page ID {page} contains an incorrect page ID in its page header. The PageId in the page header = {in_header}."
        ),
        RepairLevel::AllowDataLoss,
    )
}

/// Which structure check a data or index page failed, as SQL Server words it: the header
/// against the page size (8939), a slot's offset (8941), records that overlap (8942), a record
/// that runs into free space (8943), m_freeCnt (8939), m_ghostRecCnt (8927).
fn audit_findings(
    page: PageId,
    buf: &PageBuf,
    name: UnitName,
    repair: RepairLevel,
) -> Vec<Finding> {
    let table_error = |number: i32, test: String| {
        vec![finding(number, format!("Table error: {name}, page {page}. {test}"), repair)]
    };
    let h = PageHeader::read(&buf[..]);
    if PageType::from_u8(h.page_type).is_none() {
        return vec![unexpected_type(page, name, h.page_type, repair)];
    }
    let free_data = usize::from(h.free_data);
    let slots = usize::from(h.slot_count);
    if free_data < PAGE_HEADER_SIZE || free_data + 2 * slots > PAGE_SIZE {
        return table_error(
            8939,
            format!(
                "Test (m_freeData >= PAGEHEADSIZE && m_freeData <= PAGESIZE - 2 * m_slotCnt) failed. Values are {free_data} and {slots}."
            ),
        );
    }
    let mut covered = vec![false; PAGE_SIZE];
    let (mut used, mut ghosts) = (0usize, 0u16);
    for slot in 0..h.slot_count {
        let offset = usize::from(page::slot_offset(&buf[..], slot));
        if offset == 0 {
            continue;
        }
        if offset < PAGE_HEADER_SIZE || offset >= free_data {
            return table_error(
                8941,
                format!(
                    "Test (sorted [i].offset >= PAGEHEADSIZE) failed. Slot {slot}, offset {offset:#x} is invalid."
                ),
            );
        }
        let Ok(len) = record::record_len(&buf[offset..free_data]) else {
            return table_error(
                8943,
                format!(
                    "Test (sorted[i].offset + sorted[i].size <= m_freeData) failed. Slot {slot}, row extends into free space at {free_data:#x}."
                ),
            );
        };
        if covered[offset..offset + len].iter().any(|c| *c) {
            return table_error(
                8942,
                format!(
                    "Test (sorted[i].offset >= max) failed. Slot {slot}, offset {offset:#x} overlaps with the prior row."
                ),
            );
        }
        covered[offset..offset + len].fill(true);
        used += len;
        ghosts += u16::from(is_ghost(buf[offset]));
    }
    let body = PAGE_SIZE - PAGE_HEADER_SIZE;
    let free_bytes = body as i64 - used as i64 - 2 * slots as i64;
    if i64::from(h.free_count) != free_bytes {
        return table_error(
            8939,
            format!(
                "Test (m_freeCnt == freeCnt) failed. Values are {} and {free_bytes}.",
                h.free_count
            ),
        );
    }
    if ghosts != h.ghost_record_count {
        return vec![finding(
            8927,
            format!(
                "{name}: The ghosted record count in the header ({}) does not match the number of ghosted records ({ghosts}) found on page {page}.",
                h.ghost_record_count
            ),
            repair,
        )];
    }
    // The read check failed for a reason this walk does not see: report it plainly.
    table_error(8939, "Test (page audit) failed. Values are 0 and 1.".to_string())
}

fn unexpected_type(page: PageId, name: UnitName, page_type: u8, repair: RepairLevel) -> Finding {
    finding(
        8938,
        format!("Table error: Page {page}, {name}. Unexpected page type {page_type}."),
        repair,
    )
}

fn is_ghost(status_a: u8) -> bool {
    let kind = record::record_type(status_a);
    kind == RecordType::GhostData as u8 || kind == RecordType::GhostIndex as u8
}

/// An IAM page of the unit: an IAM page's header naming this unit (8946 otherwise).
fn check_iam_page(
    db: &Database,
    page: PageId,
    name: UnitName,
    findings: &mut Vec<Finding>,
) -> SqlResult<()> {
    let owners = Owners::new();
    let Some(buf) = read_for_check(db, page, name, &owners, findings)? else {
        findings.push(not_processed(name, page));
        return Ok(());
    };
    let header = PageHeader::read(&buf[..]);
    let is_iam = header.page_type == PageType::Iam as u8;
    if !is_iam || header.page_id != page || header.allocation_unit_id() != name.au_id {
        findings.push(finding(
            8946,
            format!(
                "Table error: Allocation page {page} has invalid IAM_PAGE page header values. Type is {}. Check type, alloc unit ID and page ID on the page.",
                header.page_type
            ),
            RepairLevel::AllowDataLoss,
        ));
    }
    Ok(())
}

/// The page's own checks and its facts; Err with what is wrong if it cannot be processed.
fn page_facts(
    db: &Database,
    page: PageId,
    buf: &PageBuf,
    name: UnitName,
    structure: &Structure<'_>,
    owners: &Owners,
    physical_only: bool,
) -> Result<PageFacts, Vec<Finding>> {
    let header = PageHeader::read(&buf[..]);
    if header.page_id != page {
        let header_owner = owner_text(owners, header.allocation_unit_id());
        return Err(vec![wrong_page_id(page, header.page_id, header_owner)]);
    }
    let repair = repair_for(name, Some(header.level));
    if header.allocation_unit_id() != name.au_id {
        return Err(claimed_by_another(page, &header, name, owners));
    }
    let expected_type = match structure {
        Structure::Tree(tree) if header.level == 0 => tree.leaf_type,
        Structure::Tree(_) => PageType::Index,
        Structure::Heap => PageType::Data,
    };
    if header.page_type != expected_type as u8 {
        return Err(vec![unexpected_type(page, name, header.page_type, repair)]);
    }
    if datapage::check(buf).is_err() {
        return Err(audit_findings(page, buf, name, repair));
    }
    if physical_only {
        return Ok(PageFacts::Physical { data_page: header.level == 0 });
    }
    let undecodable = |error: SqlError| vec![Finding { error, repair, detail: None }];
    match structure {
        Structure::Tree(tree) => {
            tree.page_facts(db, page, buf).map(PageFacts::Tree).map_err(undecodable)
        }
        Structure::Heap => heap_page_facts(buf).map(PageFacts::Heap).map_err(|bad| {
            vec![finding(
                8939,
                format!(
                    "Table error: {name}, page {page}. Test ({}) failed. Values are 0 and 1.",
                    bad.0
                ),
                repair,
            )]
        }),
    }
}

/// 2534 for the unit the header names (when it is a unit of the database) and 2533 for this
/// one, which owns the page but did not see it.
fn claimed_by_another(
    page: PageId,
    header: &PageHeader,
    name: UnitName,
    owners: &Owners,
) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(other) = owners.get(&header.allocation_unit_id()) {
        found.push(finding(
            2534,
            format!(
                "Table error: page {page}, whose header indicates that it is allocated to {}, is allocated by another object.",
                other.to_string().replacen("Object ID", "object ID", 1)
            ),
            RepairLevel::AllowDataLoss,
        ));
    }
    found.push(finding(
        2533,
        format!(
            "Table error: page {page} allocated to {} was not seen. The page may be invalid or may have an incorrect alloc unit ID in its header.",
            name.to_string().replacen("Object ID", "object ID", 1)
        ),
        RepairLevel::AllowDataLoss,
    ));
    found
}

fn heap_page_facts(buf: &PageBuf) -> Result<HeapPageFacts, record::BadRecord> {
    let mut facts = HeapPageFacts {
        live_rows: 0,
        stubs: Vec::new(),
        forwarded: Vec::new(),
        fullness: datapage::pfs_fullness(buf),
    };
    for slot in 0..datapage::slot_count(buf) {
        if datapage::is_empty_slot(buf, slot) {
            continue;
        }
        let bytes = datapage::record(buf, slot)?;
        let kind = record::record_type(bytes[0]);
        if kind == RecordType::ForwardingStub as u8 {
            let target = bytes.get(1..9).ok_or(record::BadRecord("forwarding stub too short"))?;
            facts.stubs.push((slot, Rid::from_bytes(target)));
            facts.live_rows += 1;
        } else if kind == RecordType::Forwarded as u8 {
            let back = record::back_pointer(bytes)
                .map_or(Rid { page: PageId::NULL, slot: 0 }, |b| Rid::from_bytes(&b));
            facts.forwarded.push((slot, back));
        } else if kind != RecordType::GhostData as u8 {
            facts.live_rows += 1;
        }
    }
    Ok(facts)
}

/// The heap's facts matched: forwarding stubs and forwarded rows (8993, 8994, 8971), and each
/// page's PFS fullness (8914).
fn match_heap(
    db: &Database,
    name: UnitName,
    facts: &BTreeMap<PageId, &HeapPageFacts>,
    findings: &mut Vec<Finding>,
) -> SqlResult<()> {
    let mut forwarded: HashMap<Rid, Rid> = HashMap::new();
    for (page, f) in facts {
        for (slot, back) in &f.forwarded {
            forwarded.insert(Rid { page: *page, slot: *slot }, *back);
        }
    }
    let object = name.object_id;
    let mut pointed_at = BTreeSet::new();
    for (page, f) in facts {
        for (slot, target) in &f.stubs {
            let stub = Rid { page: *page, slot: *slot };
            pointed_at.insert(*target);
            match forwarded.get(target) {
                None => findings.push(finding(
                    8993,
                    format!(
                        "Object ID {object}, forwarding row page {page}, slot {slot} points to page {}, slot {}. Did not encounter forwarded row. Possible allocation error.",
                        target.page, target.slot
                    ),
                    RepairLevel::AllowDataLoss,
                )),
                Some(back) if *back != stub => findings.push(finding(
                    8971,
                    format!(
                        "Forwarded row mismatch: Object ID {object}, partition ID {au}, alloc unit ID {au} (type In-row data) page {page}, slot {slot} points to forwarded row page {}, slot {}; the forwarded row points back to page {}, slot {}",
                        target.page, target.slot, back.page, back.slot, au = name.au_id
                    ),
                    RepairLevel::AllowDataLoss,
                )),
                Some(_) => {}
            }
        }
    }
    for (at, back) in &forwarded {
        if !pointed_at.contains(at) {
            findings.push(finding(
                8994,
                format!(
                    "Object ID {object}, forwarded row page {}, slot {} should be pointed to by forwarding row page {}, slot {}. Did not encounter forwarding row. Possible allocation error.",
                    at.page, at.slot, back.page, back.slot
                ),
                RepairLevel::AllowDataLoss,
            ));
        }
    }
    check_pfs_fullness(db, name, facts, findings)
}

fn check_pfs_fullness(
    db: &Database,
    name: UnitName,
    facts: &BTreeMap<PageId, &HeapPageFacts>,
    findings: &mut Vec<Finding>,
) -> SqlResult<()> {
    const BUCKETS: [&str; 5] =
        ["0_PCT_FULL", "50_PCT_FULL", "80_PCT_FULL", "95_PCT_FULL", "100_PCT_FULL"];
    let bucket_name = |b: u8| BUCKETS[usize::from(b).min(4)];
    for (page, f) in facts {
        let Some(status) = db.allocation_status(*page)? else { continue };
        let actual = status.pfs_byte & crate::alloc::pfs::FULLNESS_MASK;
        if actual != f.fullness {
            findings.push(Finding {
                error: SqlError::new(
                    8914,
                    10,
                    1,
                    format!(
                        "Incorrect PFS free space information for page {page} in {}. Expected value {}, actual value {}.",
                        name.to_string().replacen("Object ID", "object ID", 1),
                        bucket_name(f.fullness),
                        bucket_name(actual)
                    ),
                ),
                repair: RepairLevel::AllowDataLoss,
                detail: None,
            });
        }
    }
    Ok(())
}

/// The index's facts matched (module header): parents and children (8980, 8931, 8933, 8934,
/// 8937, 8977), neighbours (8935, 8936, 8976, 8978, 8981) and keys within a page (2511).
fn match_tree(
    name: UnitName,
    root: PageId,
    facts: &BTreeMap<PageId, &TreePageFacts>,
    findings: &mut Vec<Finding>,
) {
    let table_error = |number: i32, level: Option<u8>, text: String| {
        finding(number, format!("Table error: {name}. {text}"), repair_for(name, level))
    };
    // Keys within each page.
    for (page, f) in facts {
        if let Some((a, b)) = f.out_of_order {
            findings.push(table_error(
                2511,
                Some(f.level),
                format!("Keys out of order on page {page}, slots {a} and {b}."),
            ));
        }
    }
    let parents = parent_references(name, facts, findings);
    for (page, f) in facts {
        for (slot, (key, child)) in f.children.iter().enumerate() {
            let previous_child = if slot == 0 { PageId::NULL } else { f.children[slot - 1].1 };
            let Some(c) = facts.get(child) else {
                findings.push(table_error(8980, Some(f.level), format!(
                    "Index node page {page}, slot {slot} refers to child page {child} and previous child {previous_child}, but they were not encountered."
                )));
                continue;
            };
            if c.level + 1 != f.level {
                findings.push(finding(8931, format!(
                    "Table error: {name} B-tree level mismatch, page {child}. Level {} does not match level {} from parent {page}.",
                    c.level, f.level - 1
                ), repair_for(name, Some(c.level))));
                continue;
            }
            if let (Some(key), Some(low)) = (key, &c.low_key)
                && compare_keys(low, key) == Ordering::Less
            {
                findings.push(table_error(8933, Some(c.level), format!(
                    "The low key value on page {child} (level {}) is not >= the key value in the parent {page} slot {slot}.",
                    c.level
                )));
            }
            if let (Some((Some(next_key), next_child)), Some(high)) =
                (f.children.get(slot + 1), &c.high_key)
                && compare_keys(high, next_key) != Ordering::Less
            {
                findings.push(table_error(8934, Some(c.level), format!(
                    "The high key value on page {child} (level {}) is not less than the low key value in the parent {page}, slot {} of the next page {next_child}.",
                    c.level,
                    slot + 1
                )));
            }
            let expected_previous = if slot > 0 {
                Some(previous_child)
            } else if f.prev.is_null() {
                Some(PageId::NULL)
            } else {
                facts.get(&f.prev).and_then(|p| p.children.last()).map(|(_, last)| *last)
            };
            if let Some(expected) = expected_previous
                && c.prev != expected
            {
                findings.push(table_error(8935, Some(c.level), format!(
                    "The previous link {} on page {child} does not match the previous page {expected} that the parent {page}, slot {slot} expects for this page.",
                    c.prev
                )));
            }
        }
    }
    match_neighbours(name, facts, &parents, findings);
    for (page, f) in facts {
        if *page != root && !parents.contains_key(page) {
            findings.push(table_error(
                8977,
                Some(f.level),
                format!("Parent node for page {page} was not encountered."),
            ));
        }
    }
}

/// Each child's one parent entry (page and slot); a second one is 8937.
fn parent_references(
    name: UnitName,
    facts: &BTreeMap<PageId, &TreePageFacts>,
    findings: &mut Vec<Finding>,
) -> HashMap<PageId, (PageId, usize)> {
    let mut parents: HashMap<PageId, (PageId, usize)> = HashMap::new();
    for (page, f) in facts {
        for (slot, (_, child)) in f.children.iter().enumerate() {
            if let Some((first, first_slot)) = parents.get(child) {
                findings.push(finding(8937, format!(
                    "Table error: {name}. B-tree page {child} has two parent nodes {first}, slot {first_slot} and {page}, slot {slot}."
                ), repair_for(name, Some(f.level))));
                continue;
            }
            parents.insert(*child, (*page, slot));
        }
    }
    parents
}

/// m_nextPage and m_prevPage along each level, and key order across a parent boundary.
fn match_neighbours(
    name: UnitName,
    facts: &BTreeMap<PageId, &TreePageFacts>,
    parents: &HashMap<PageId, (PageId, usize)>,
    findings: &mut Vec<Finding>,
) {
    let table_error = |number: i32, level: u8, text: String| {
        finding(number, format!("Table error: {name}. {text}"), repair_for(name, Some(level)))
    };
    for (page, f) in facts {
        if f.next.is_null() {
            continue;
        }
        let Some(n) = facts.get(&f.next) else {
            let next = f.next;
            findings.push(match parents.get(&next) {
                Some((parent, _)) => table_error(8976, f.level, format!(
                    "Page {next} was not seen in the scan although its parent {parent} and previous {page} refer to it. Check any previous errors."
                )),
                None => table_error(8981, f.level, format!(
                    "The next pointer of {page} refers to page {next}. Neither {next} nor its parent were encountered. Possible bad chain linkage."
                )),
            });
            continue;
        };
        if n.prev != *page {
            findings.push(table_error(
                8936,
                f.level,
                format!(
                    "B-tree chain linkage mismatch. {page}->next = {}, but {}->Prev = {}.",
                    f.next, f.next, n.prev
                ),
            ));
        }
        let different_parents = parents.get(page).map(|p| p.0) != parents.get(&f.next).map(|p| p.0);
        if let (true, Some(high), Some(low), Some((parent, slot))) =
            (different_parents, &f.high_key, &n.low_key, parents.get(&f.next))
            && compare_keys(high, low) != Ordering::Less
        {
            findings.push(table_error(8934, f.level, format!(
                "The high key value on page {page} (level {}) is not less than the low key value in the parent {parent}, slot {slot} of the next page {}.",
                f.level, f.next
            )));
        }
    }
    for (page, f) in facts {
        let previous_refers =
            !f.prev.is_null() && facts.get(&f.prev).is_some_and(|p| p.next == *page);
        if !f.prev.is_null() && !previous_refers {
            findings.push(table_error(8978, f.level, format!(
                "Page {page} is missing a reference from previous page {}. Possible chain linkage problem.",
                f.prev
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_named_as_sql_server_names_it() {
        let name = UnitName { object_id: 1_000_003, index_id: 1, au_id: 72_057_594_046_906_368 };
        assert_eq!(
            name.to_string(),
            "Object ID 1000003, index ID 1, partition ID 72057594046906368, alloc unit ID 72057594046906368 (type In-row data)"
        );
    }

    #[test]
    fn nonclustered_and_upper_levels_need_only_a_rebuild() {
        let clustered = UnitName { object_id: 5, index_id: 1, au_id: 9 };
        let nonclustered = UnitName { index_id: 2, ..clustered };
        assert_eq!(repair_for(clustered, Some(0)), RepairLevel::AllowDataLoss);
        assert_eq!(repair_for(clustered, Some(1)), RepairLevel::Rebuild);
        assert_eq!(repair_for(nonclustered, Some(0)), RepairLevel::Rebuild);
        assert!(RepairLevel::Rebuild < RepairLevel::AllowDataLoss);
    }

    #[test]
    fn an_overlapping_record_is_8942_and_a_wrong_ghost_count_8927() {
        use crate::record::{Column, Layout, SqlType, Value, encode};
        let columns = vec![Column::new("a", SqlType::Int, false)];
        let layout = Layout::new(&columns);
        let mut buf = page::new_page_buf();
        let header = PageHeader::new(PageType::Data, PageId::new(1, 80));
        header.write(&mut buf[..]);
        for value in [1, 2] {
            let record = encode(&columns, &layout, &[Value::Int(value)], RecordType::Primary)
                .expect("encodes");
            let slot = datapage::slot_count(&buf);
            assert!(datapage::insert(&mut buf, slot, &record));
        }
        let name = UnitName { object_id: 7, index_id: 0, au_id: 11 };
        let page_id = PageId::new(1, 80);
        let mut wrong_ghosts = buf.clone();
        page::set_header_ghost_record_count(&mut wrong_ghosts[..], 1);
        let found = audit_findings(page_id, &wrong_ghosts, name, RepairLevel::AllowDataLoss);
        assert_eq!(found[0].error.number, 8927, "{:?}", found[0].error.message);
        assert!(
            found[0]
                .error
                .message
                .contains("header (1) does not match the number of ghosted records (0)")
        );
        // Slot 1 pointed at slot 0's record.
        let first = page::slot_offset(&buf[..], 0);
        let mut overlapping = buf.clone();
        let at = PAGE_SIZE - 4;
        overlapping[at..at + 2].copy_from_slice(&first.to_le_bytes());
        let found = audit_findings(page_id, &overlapping, name, RepairLevel::AllowDataLoss);
        assert_eq!(found[0].error.number, 8942, "{:?}", found[0].error.message);
        assert!(
            found[0].error.message.contains("Slot 1, offset 0x60 overlaps with the prior row.")
        );
    }
}
