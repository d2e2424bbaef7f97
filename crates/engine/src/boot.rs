//! The boot page, page 9 of the primary file (reference §2.2): the database's identity, its
//! filegroups, its files and its allocation units.
//!
//! Body layout after the 96-byte header (see docs/format/boot-page.md); all strings are a u8
//! (names) or u16 (paths) byte length followed by UTF-8:
//!
//! | field                   | type                                                         |
//! |-------------------------|--------------------------------------------------------------|
//! | magic                   | `EXTBOOT1` (8 bytes)                                         |
//! | database_id             | u16                                                          |
//! | binding_id              | u64, copied into every file header                           |
//! | created_ms              | i64                                                          |
//! | flags                   | u8: 0x01 MIXED_PAGE_ALLOCATION ON, 0x02 RECOVERY FULL        |
//! | next_file_id, next_fg_id| u16, u16                                                     |
//! | next_au_seq             | u32                                                          |
//! | checkpoint LSN          | 10 bytes: where recovery's redo starts (null: the log's start) |
//! | MinLSN                  | 10 bytes: where recovery's analysis starts (the oldest open transaction's begin at the checkpoint's begin record, or that record) |
//! | name                    | u8 len + UTF-8                                               |
//! | filegroups              | u16 count, then {id u16, flags u8 (1 DEFAULT, 2 AUTOGROW_ALL_FILES, 4 READ_ONLY), name} |
//! | files                   | u16 count, then {file_id u16, type u8, path (u16 len + UTF-8)} |
//! | allocation units        | u16 count, then {au_id u64, fg_id u16, first IAM (6 bytes), name, descriptor (u16 len + bytes)} |
//!
//! Paths of files in the primary file's directory are stored relative to it, so a database
//! directory can be moved. Deviation: SQL Server keeps files, filegroups and allocation units
//! in system tables (sysfiles1, sysprufiles, sysallocunits); until extentdb has system tables
//! (the T-SQL issues) they live here, which bounds their number by one page. A database that
//! would overflow the page gets error 5033 with the limit reached.

use crate::page::{self, PageBuf, PageHeader, PageType};
use crate::units::{PAGE_SIZE, PageId};

const MAGIC: &[u8; 8] = b"EXTBOOT1";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilegroupEntry {
    pub id: u16,
    pub name: String,
    pub is_default: bool,
    pub autogrow_all_files: bool,
    pub read_only: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    pub file_id: u16,
    pub is_log: bool,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitEntry {
    pub au_id: u64,
    pub fg_id: u16,
    pub first_iam: PageId,
    pub name: String,
    /// What the unit stores (a B-tree's or heap's schema), for recovery's logical undo; empty
    /// until the object registers it. Deviation: SQL Server keeps this in its catalog.
    pub descriptor: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootInfo {
    pub database_id: u16,
    pub binding_id: u64,
    pub created_ms: i64,
    pub mixed_page_allocation: bool,
    /// RECOVERY FULL (flag 0x02); SIMPLE otherwise.
    pub full_recovery: bool,
    pub next_file_id: u16,
    pub next_fg_id: u16,
    pub next_au_seq: u32,
    /// The LSN of the last checkpoint's begin record: recovery redoes from here.
    pub checkpoint_lsn: crate::log::lsn::Lsn,
    /// MinLSN at that checkpoint: the oldest begin of the transactions open at its begin record
    /// (log invariant 4), or the checkpoint's.
    pub min_lsn: crate::log::lsn::Lsn,
    pub name: String,
    pub filegroups: Vec<FilegroupEntry>,
    pub files: Vec<FileEntry>,
    pub units: Vec<UnitEntry>,
    /// dbi_dbccLastKnownGood: when DBCC CHECKDB last found no error, as milliseconds from
    /// 1970-01-01 of that local time; 0: never. Older boot pages end before it and read 0.
    pub last_known_good_ms: i64,
}

struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn name(&mut self, s: &str) {
        let bytes = &s.as_bytes()[..s.len().min(255)];
        self.u8(bytes.len() as u8);
        self.bytes.extend_from_slice(bytes);
    }
    fn path(&mut self, s: &str) {
        self.u16(s.len() as u16);
        self.bytes.extend_from_slice(s.as_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let slice = self.bytes.get(self.at..self.at + n)?;
        self.at += n;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn name(&mut self) -> Option<String> {
        let len = usize::from(self.u8()?);
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
    fn path(&mut self) -> Option<String> {
        let len = usize::from(self.u16()?);
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

/// Bytes available for the boot record.
pub const BOOT_BODY_BYTES: usize = PAGE_SIZE - crate::units::PAGE_HEADER_SIZE;

impl BootInfo {
    fn body(&self) -> Vec<u8> {
        let mut w = Writer { bytes: Vec::with_capacity(1024) };
        w.bytes.extend_from_slice(MAGIC);
        w.u16(self.database_id);
        w.u64(self.binding_id);
        w.u64(self.created_ms as u64);
        w.u8(u8::from(self.mixed_page_allocation) | u8::from(self.full_recovery) << 1);
        w.u16(self.next_file_id);
        w.u16(self.next_fg_id);
        w.u32(self.next_au_seq);
        w.bytes.extend_from_slice(&self.checkpoint_lsn.to_bytes());
        w.bytes.extend_from_slice(&self.min_lsn.to_bytes());
        w.name(&self.name);
        w.u16(self.filegroups.len() as u16);
        for fg in &self.filegroups {
            w.u16(fg.id);
            let flags = u8::from(fg.is_default)
                | u8::from(fg.autogrow_all_files) << 1
                | u8::from(fg.read_only) << 2;
            w.u8(flags);
            w.name(&fg.name);
        }
        w.u16(self.files.len() as u16);
        for file in &self.files {
            w.u16(file.file_id);
            w.u8(u8::from(file.is_log));
            w.path(&file.path);
        }
        w.u16(self.units.len() as u16);
        for unit in &self.units {
            w.u64(unit.au_id);
            w.u16(unit.fg_id);
            w.bytes.extend_from_slice(&unit.first_iam.to_bytes());
            w.name(&unit.name);
            w.u16(unit.descriptor.len() as u16);
            w.bytes.extend_from_slice(&unit.descriptor);
        }
        w.u64(self.last_known_good_ms as u64);
        w.bytes
    }

    /// True when the encoded record fits in the boot page.
    pub fn fits(&self) -> bool {
        self.body().len() <= BOOT_BODY_BYTES
    }

    /// Encodes the boot page (sealed). Callers check [`BootInfo::fits`] first.
    pub fn encode(&self) -> Box<PageBuf> {
        let body = self.body();
        assert!(body.len() <= BOOT_BODY_BYTES, "callers check fits() before encoding");
        let mut buf = page::new_page_buf();
        let mut header = PageHeader::for_allocation_system(
            PageType::Boot,
            PageId::new(1, crate::alloc::BOOT_PAGE),
        );
        header.free_data = (96 + body.len()) as u16;
        header.free_count = (PAGE_SIZE - 96 - body.len()) as u16;
        header.write(&mut buf[..]);
        buf[96..96 + body.len()].copy_from_slice(&body);
        page::seal(&mut buf);
        buf
    }

    /// Decodes a verified boot page; None if it is not an extentdb boot page.
    pub fn decode(buf: &PageBuf) -> Option<BootInfo> {
        let mut r = Reader { bytes: &buf[96..], at: 0 };
        if r.take(8)? != MAGIC {
            return None;
        }
        let database_id = r.u16()?;
        let binding_id = r.u64()?;
        let created_ms = r.u64()? as i64;
        let flags = r.u8()?;
        let mixed_page_allocation = flags & 1 != 0;
        let full_recovery = flags & 2 != 0;
        let next_file_id = r.u16()?;
        let next_fg_id = r.u16()?;
        let next_au_seq = r.u32()?;
        let checkpoint_lsn = crate::log::lsn::Lsn::from_bytes(r.take(10)?);
        let min_lsn = crate::log::lsn::Lsn::from_bytes(r.take(10)?);
        let name = r.name()?;
        let mut filegroups = Vec::new();
        for _ in 0..r.u16()? {
            let id = r.u16()?;
            let flags = r.u8()?;
            let name = r.name()?;
            let (is_default, autogrow_all_files, read_only) =
                (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
            filegroups.push(FilegroupEntry { id, name, is_default, autogrow_all_files, read_only });
        }
        let mut files = Vec::new();
        for _ in 0..r.u16()? {
            let file_id = r.u16()?;
            let is_log = r.u8()? != 0;
            files.push(FileEntry { file_id, is_log, path: r.path()? });
        }
        let mut units = Vec::new();
        for _ in 0..r.u16()? {
            let au_id = r.u64()?;
            let fg_id = r.u16()?;
            let first_iam = PageId::from_bytes(r.take(6)?);
            let name = r.name()?;
            let len = usize::from(r.u16()?);
            let descriptor = r.take(len)?.to_vec();
            units.push(UnitEntry { au_id, fg_id, first_iam, name, descriptor });
        }
        let last_known_good_ms = r.u64().unwrap_or(0) as i64;
        Some(BootInfo {
            database_id,
            binding_id,
            created_ms,
            mixed_page_allocation,
            full_recovery,
            next_file_id,
            next_fg_id,
            next_au_seq,
            checkpoint_lsn,
            min_lsn,
            name,
            filegroups,
            files,
            units,
            last_known_good_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_info_round_trips() {
        let boot = BootInfo {
            database_id: 5,
            binding_id: 42,
            created_ms: 1000,
            mixed_page_allocation: true,
            full_recovery: true,
            next_file_id: 5,
            next_fg_id: 3,
            next_au_seq: 2,
            checkpoint_lsn: crate::log::lsn::Lsn::new(3, 16, 2),
            min_lsn: crate::log::lsn::Lsn::new(2, 16, 0),
            name: "Company".into(),
            filegroups: vec![FilegroupEntry {
                id: 1,
                name: "PRIMARY".into(),
                is_default: true,
                autogrow_all_files: false,
                read_only: false,
            }],
            files: vec![FileEntry { file_id: 1, is_log: false, path: "Company_data.mdf".into() }],
            units: vec![UnitEntry {
                au_id: 1 << 16,
                fg_id: 1,
                first_iam: PageId::new(1, 10),
                name: "t".into(),
                descriptor: vec![1, 2, 3],
            }],
            last_known_good_ms: 1_795_000_000_000,
        };
        let buf = boot.encode();
        assert_eq!(page::verify(&buf, PageId::new(1, 9)), Ok(()));
        assert_eq!(BootInfo::decode(&buf), Some(boot));
    }
}
