//! Log records: a fixed header and an operation's payload (docs/format/log-file.md).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | record length, bytes (header and payload; the next record starts at the next multiple of 4) |
//! | 2 | 1 | operation (`LOP_*`) |
//! | 3 | 1 | context (`LCX_*`) |
//! | 4 | 8 | transaction id (0 = none) |
//! | 12 | 10 | previous LSN of the same transaction (null for its first record) |
//! | 22 | 2 | flag bits |
//! | 24 | n | payload, then zero padding to a multiple of 4 |
//!
//! SQL Server's record layout is undocumented (reference §5.5); the fields are those fn_dblog
//! shows (Operation, Context, Transaction ID, Previous LSN, Flag Bits, Log Record Length).

use super::lsn::{LSN_BYTES, Lsn};

pub const RECORD_HEADER_BYTES: usize = 24;
/// Flag bit: more records of the same group follow (see [`super::mtr`]).
pub const FLAG_GROUP_CONTINUES: u16 = 0x0001;
/// Flag bit: the group before this record is incomplete and must be ignored.
pub const FLAG_GROUP_ABORT: u16 = 0x0002;
/// Flag bit: a page record (physical redo: [`super::mtr`] payload).
pub const FLAG_PAGE: u16 = 0x0004;

/// fn_dblog's Operation column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Operation {
    BeginXact = 1,
    CommitXact = 2,
    AbortXact = 3,
    InsertRows = 4,
    DeleteRows = 5,
    ModifyRow = 6,
    FormatPage = 7,
    SetBits = 8,
    ModifyHeader = 9,
    BeginCkpt = 10,
    XactCkpt = 11,
    EndCkpt = 12,
    FileGrowth = 13,
}

impl Operation {
    const ALL: [Operation; 13] = [
        Operation::BeginXact,
        Operation::CommitXact,
        Operation::AbortXact,
        Operation::InsertRows,
        Operation::DeleteRows,
        Operation::ModifyRow,
        Operation::FormatPage,
        Operation::SetBits,
        Operation::ModifyHeader,
        Operation::BeginCkpt,
        Operation::XactCkpt,
        Operation::EndCkpt,
        Operation::FileGrowth,
    ];

    pub fn from_code(code: u8) -> Option<Operation> {
        Operation::ALL.into_iter().find(|op| *op as u8 == code)
    }

    /// The name fn_dblog prints.
    pub fn name(self) -> &'static str {
        match self {
            Operation::BeginXact => "LOP_BEGIN_XACT",
            Operation::CommitXact => "LOP_COMMIT_XACT",
            Operation::AbortXact => "LOP_ABORT_XACT",
            Operation::InsertRows => "LOP_INSERT_ROWS",
            Operation::DeleteRows => "LOP_DELETE_ROWS",
            Operation::ModifyRow => "LOP_MODIFY_ROW",
            Operation::FormatPage => "LOP_FORMAT_PAGE",
            Operation::SetBits => "LOP_SET_BITS",
            Operation::ModifyHeader => "LOP_MODIFY_HEADER",
            Operation::BeginCkpt => "LOP_BEGIN_CKPT",
            Operation::XactCkpt => "LOP_XACT_CKPT",
            Operation::EndCkpt => "LOP_END_CKPT",
            Operation::FileGrowth => "LOP_FILE_GROWTH",
        }
    }
}

/// fn_dblog's Context column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Context {
    Null = 0,
    Heap = 1,
    Clustered = 2,
    IndexLeaf = 3,
    IndexInterior = 4,
    Pfs = 5,
    Gam = 6,
    Sgam = 7,
    Iam = 8,
    DiffMap = 9,
    FileHeader = 10,
    BootPage = 11,
}

impl Context {
    const ALL: [Context; 12] = [
        Context::Null,
        Context::Heap,
        Context::Clustered,
        Context::IndexLeaf,
        Context::IndexInterior,
        Context::Pfs,
        Context::Gam,
        Context::Sgam,
        Context::Iam,
        Context::DiffMap,
        Context::FileHeader,
        Context::BootPage,
    ];

    pub fn from_code(code: u8) -> Option<Context> {
        Context::ALL.into_iter().find(|c| *c as u8 == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            Context::Null => "LCX_NULL",
            Context::Heap => "LCX_HEAP",
            Context::Clustered => "LCX_CLUSTERED",
            Context::IndexLeaf => "LCX_INDEX_LEAF",
            Context::IndexInterior => "LCX_INDEX_INTERIOR",
            Context::Pfs => "LCX_PFS",
            Context::Gam => "LCX_GAM",
            Context::Sgam => "LCX_SGAM",
            Context::Iam => "LCX_IAM",
            Context::DiffMap => "LCX_DIFF_MAP",
            Context::FileHeader => "LCX_FILE_HEADER",
            Context::BootPage => "LCX_BOOT_PAGE",
        }
    }
}

/// A log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub operation: Operation,
    pub context: Context,
    pub xact_id: u64,
    pub prev_lsn: Lsn,
    pub flags: u16,
    pub payload: Vec<u8>,
}

/// The largest payload: a record must fit in a 60 KB block with the block's header and slot.
pub const MAX_PAYLOAD_BYTES: usize = 60 * 1024 - 64 - RECORD_HEADER_BYTES;

impl LogRecord {
    pub fn new(operation: Operation, context: Context, xact_id: u64, payload: Vec<u8>) -> Self {
        LogRecord { operation, context, xact_id, prev_lsn: Lsn::NULL, flags: 0, payload }
    }

    /// Bytes on disk, padding included.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len_with(0)
    }

    /// Bytes on disk with `tail_len` more bytes of payload ([`LogRecord::encode_into`]).
    pub fn encoded_len_with(&self, tail_len: usize) -> usize {
        (RECORD_HEADER_BYTES + self.payload.len() + tail_len).next_multiple_of(4)
    }

    /// Encodes the record with `tail` appended to its payload: an insert's record read from
    /// its page at commit (mtr invariant 2). Decoding gives back one payload.
    pub fn encode_into(&self, out: &mut Vec<u8>, extra_flags: u16, tail: &[u8]) {
        let payload_len = self.payload.len() + tail.len();
        assert!(payload_len <= MAX_PAYLOAD_BYTES, "log record payload over the limit");
        let len = self.encoded_len_with(tail.len());
        let record_len = RECORD_HEADER_BYTES + payload_len;
        // The header is put together first and appended at once: a block's records are many
        // and small (a PFS byte's, a link's), and each append checks the vector's room.
        let mut header = [0u8; RECORD_HEADER_BYTES];
        header[0..2].copy_from_slice(&(record_len as u16).to_le_bytes());
        header[2] = self.operation as u8;
        header[3] = self.context as u8;
        header[4..12].copy_from_slice(&self.xact_id.to_le_bytes());
        header[12..12 + LSN_BYTES].copy_from_slice(&self.prev_lsn.to_bytes());
        header[22..24].copy_from_slice(&(self.flags | extra_flags).to_le_bytes());
        out.reserve(len);
        out.extend_from_slice(&header);
        out.extend_from_slice(&self.payload);
        out.extend_from_slice(tail);
        out.resize(out.len() + len - record_len, 0);
    }

    /// The record that is exactly `bytes` (its length field says how long it is).
    pub fn decode(bytes: &[u8]) -> Result<LogRecord, &'static str> {
        if bytes.len() < RECORD_HEADER_BYTES {
            return Err("log record shorter than its header");
        }
        let len = usize::from(u16::from_le_bytes([bytes[0], bytes[1]]));
        if len != bytes.len() {
            return Err("log record length does not match its slot");
        }
        let operation = Operation::from_code(bytes[2]).ok_or("unknown log operation")?;
        let context = Context::from_code(bytes[3]).ok_or("unknown log context")?;
        let mut xact = [0u8; 8];
        xact.copy_from_slice(&bytes[4..12]);
        let payload = bytes[RECORD_HEADER_BYTES..].to_vec();
        Ok(LogRecord {
            operation,
            context,
            xact_id: u64::from_le_bytes(xact),
            prev_lsn: Lsn::from_bytes(&bytes[12..12 + LSN_BYTES]),
            flags: u16::from_le_bytes([bytes[22], bytes[23]]),
            payload,
        })
    }
}
