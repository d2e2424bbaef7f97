//! Records: SQL Server's FixedVar row format (reference §1.6), the column types of the
//! buffer-pool issue, their storage sizes, and uniqueidentifier ordering.
//!
//! A data record, byte by byte:
//!
//! | part              | bytes              | content                                              |
//! |-------------------|--------------------|------------------------------------------------------|
//! | status A          | 1                  | bits 1-3 record type; 0x10 null bitmap; 0x20 var columns |
//! | status B          | 1                  | 0 (data records)                                     |
//! | fixed-end offset  | 2                  | 4 + fixed data length                                |
//! | fixed data        | n                  | fixed-length columns, in column order (bits packed)  |
//! | column count      | 2                  | columns in the null bitmap                           |
//! | null bitmap       | ceil(cols / 8)     | bit i = column i is NULL                             |
//! | var column count  | 2                  | present with 0x20; trailing NULL var columns omitted |
//! | var offset array  | 2 per var column   | END offset of each var column from the record start  |
//! | var data          | ...                |                                                      |
//!
//! Storage of each type (SQL Server's sizes): tinyint 1, smallint 2, int 4, bigint 8, bit one bit
//! in a shared byte (8 bit columns per byte), decimal(p) 5/9/13/17 (sign byte 1 = positive, then
//! the magnitude little-endian), float 8, real 4, money 8 (value x 10,000), char(n)/binary(n) n,
//! nchar(n) 2n (UTF-16LE), uniqueidentifier 16 (mixed-endian, as .NET stores a Guid), date 3
//! (days since 0001-01-01), time(p) 3/4/5 (units of 10^-p s since midnight), datetime 8 (1/300 s
//! since midnight, then days since 1900-01-01), datetime2(p) time(p) then date.
//!
//! Deviations: char/varchar hold UTF-8 bytes, not code-page bytes of a collation (lengths are
//! in bytes, as SQL Server's are); money is one little-endian i64 where SQL Server stores the
//! high 4 bytes first. Rows over 8,060 bytes are refused (error 511); row-overflow and MAX types
//! come later.
//!
//! uniqueidentifier order is SQL Server's: bytes 10-15 first, then 8-9, 6-7, 4-5, 0-3, each
//! group compared byte by byte as stored, so random GUIDs sort as they sort there.
//!
//! Character order is the default collation's in the two ways a user meets first
//! ([`compare_text`]): case-insensitive ('apple' = 'APPLE', so a unique key holds one of them
//! and a seek for one finds the other) and blind to trailing spaces ('a' = 'a  '). Deviation:
//! characters otherwise order by the code points of their lower case, which is not
//! SQL_Latin1_General_CP1_CI_AS's dictionary order (punctuation, accents, and 'a' before 'B'
//! only because lower case puts it there); there is one collation, accent-sensitive.
//!
//! Key comparison for the B-tree's binary searches: [`compare_record_key`] reads fixed-length
//! key columns in place and decodes the rest; [`KeyComparer`], worked out once per index whose
//! key columns are all integers, money or uniqueidentifiers, compares their stored bytes
//! without making a value. Invariant 1: both give the order of [`compare_keys`] on the decoded
//! key (tested against it with NULLs, prefixes and every such type).

use crate::error::{SqlError, SqlResult};
use std::cmp::Ordering;

/// Largest in-row record.
pub const MAX_RECORD_BYTES: usize = 8060;

/// Record types (bits 1-3 of status A).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    Primary = 0,
    Forwarded = 1,
    ForwardingStub = 2,
    Index = 3,
    GhostIndex = 5,
    GhostData = 6,
}

pub const STATUS_NULL_BITMAP: u8 = 0x10;
pub const STATUS_VAR_COLUMNS: u8 = 0x20;
/// A forwarded record carries, after its last byte, the 8-byte RID of its forwarding stub
/// (the back-pointer). Deviation: SQL Server stores it as a special last variable column.
pub const STATUS_BACK_POINTER: u8 = 0x80;
const BACK_POINTER_BYTES: usize = 8;

pub fn record_type(status_a: u8) -> u8 {
    (status_a & 0x0E) >> 1
}

/// A column type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Bit,
    Decimal { precision: u8, scale: u8 },
    Float,
    Real,
    Money,
    Char(u16),
    VarChar(u16),
    NChar(u16),
    NVarChar(u16),
    Binary(u16),
    VarBinary(u16),
    UniqueIdentifier,
    Date,
    Time(u8),
    DateTime,
    DateTime2(u8),
}

impl SqlType {
    /// Bytes in the fixed part, or None for a variable-length type. Bit is 0 here (packed).
    pub fn fixed_size(self) -> Option<usize> {
        use SqlType::*;
        Some(match self {
            TinyInt => 1,
            SmallInt => 2,
            Int | Real => 4,
            BigInt | Float | Money | DateTime => 8,
            Bit => 0,
            Decimal { precision, .. } => decimal_size(precision),
            Char(n) | Binary(n) => usize::from(n),
            NChar(n) => 2 * usize::from(n),
            UniqueIdentifier => 16,
            Date => 3,
            Time(p) => time_size(p),
            DateTime2(p) => time_size(p) + 3,
            VarChar(_) | NVarChar(_) | VarBinary(_) => return None,
        })
    }

    /// Largest stored size of a variable-length value.
    pub fn max_var_size(self) -> usize {
        match self {
            SqlType::VarChar(n) | SqlType::VarBinary(n) => usize::from(n),
            SqlType::NVarChar(n) => 2 * usize::from(n),
            other => other.fixed_size().unwrap_or(0),
        }
    }
}

fn decimal_size(precision: u8) -> usize {
    match precision {
        0..=9 => 5,
        10..=19 => 9,
        20..=28 => 13,
        _ => 17,
    }
}

fn time_size(precision: u8) -> usize {
    match precision {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    }
}

/// A column: its type and whether it may be NULL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub sql_type: SqlType,
    pub nullable: bool,
}

/// Encodes columns for a unit descriptor: u16 count, then per column a u8-length name, the
/// type (tag u8, length or precision u16, scale u8) and nullable u8.
pub fn encode_columns(columns: &[Column], out: &mut Vec<u8>) {
    out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
    for column in columns {
        let name = &column.name.as_bytes()[..column.name.len().min(255)];
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        let (tag, size, scale) = column.sql_type.code();
        out.push(tag);
        out.extend_from_slice(&size.to_le_bytes());
        out.push(scale);
        out.push(u8::from(column.nullable));
    }
}

/// Decodes what [`encode_columns`] wrote at `bytes[*at..]`, advancing `at`.
pub fn decode_columns_desc(bytes: &[u8], at: &mut usize) -> Option<Vec<Column>> {
    let count = u16::from_le_bytes([*bytes.get(*at)?, *bytes.get(*at + 1)?]);
    *at += 2;
    let mut columns = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let len = usize::from(*bytes.get(*at)?);
        let name = String::from_utf8(bytes.get(*at + 1..*at + 1 + len)?.to_vec()).ok()?;
        *at += 1 + len;
        let spec = bytes.get(*at..*at + 5)?;
        let sql_type =
            SqlType::from_code(spec[0], u16::from_le_bytes([spec[1], spec[2]]), spec[3])?;
        let nullable = spec[4] != 0;
        *at += 5;
        columns.push(Column { name, sql_type, nullable });
    }
    Some(columns)
}

impl SqlType {
    /// (tag, length or precision, scale) for descriptors.
    pub fn code(self) -> (u8, u16, u8) {
        use SqlType::*;
        match self {
            TinyInt => (1, 0, 0),
            SmallInt => (2, 0, 0),
            Int => (3, 0, 0),
            BigInt => (4, 0, 0),
            Bit => (5, 0, 0),
            Decimal { precision, scale } => (6, u16::from(precision), scale),
            Float => (7, 0, 0),
            Real => (8, 0, 0),
            Money => (9, 0, 0),
            Char(n) => (10, n, 0),
            VarChar(n) => (11, n, 0),
            NChar(n) => (12, n, 0),
            NVarChar(n) => (13, n, 0),
            Binary(n) => (14, n, 0),
            VarBinary(n) => (15, n, 0),
            UniqueIdentifier => (16, 0, 0),
            Date => (17, 0, 0),
            Time(s) => (18, 0, s),
            DateTime => (19, 0, 0),
            DateTime2(s) => (20, 0, s),
        }
    }

    pub fn from_code(tag: u8, size: u16, scale: u8) -> Option<SqlType> {
        use SqlType::*;
        Some(match tag {
            1 => TinyInt,
            2 => SmallInt,
            3 => Int,
            4 => BigInt,
            5 => Bit,
            6 => Decimal { precision: size as u8, scale },
            7 => Float,
            8 => Real,
            9 => Money,
            10 => Char(size),
            11 => VarChar(size),
            12 => NChar(size),
            13 => NVarChar(size),
            14 => Binary(size),
            15 => VarBinary(size),
            16 => UniqueIdentifier,
            17 => Date,
            18 => Time(scale),
            19 => DateTime,
            20 => DateTime2(scale),
            _ => return None,
        })
    }
}

impl Column {
    pub fn new(name: &str, sql_type: SqlType, nullable: bool) -> Column {
        Column { name: name.to_string(), sql_type, nullable }
    }
}

/// A value. Temporal values are kept in their storage units.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    TinyInt(u8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Bit(bool),
    /// The unscaled integer and the scale: 12.345 with scale 3 is 12345.
    Decimal(i128, u8),
    Float(f64),
    Real(f32),
    /// Money x 10,000.
    Money(i64),
    Text(String),
    Bytes(Vec<u8>),
    /// The 16 bytes as stored (mixed-endian).
    Guid([u8; 16]),
    /// Days since 0001-01-01.
    Date(u32),
    /// Units of 10^-precision seconds since midnight.
    Time(u64),
    /// Days since 1900-01-01 and 1/300 s since midnight.
    DateTime(i32, u32),
    /// Days since 0001-01-01 and units of 10^-precision seconds since midnight.
    DateTime2(u32, u64),
}

/// A 64-bit FNV-1a hash of key values (for key locks): equal keys hash equally.
pub fn hash_values(values: &[Value]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01B3);
        }
    };
    for value in values {
        match value {
            Value::Null => feed(&[0]),
            Value::TinyInt(v) => feed(&[1, *v]),
            Value::SmallInt(v) => feed(&v.to_le_bytes()),
            Value::Int(v) => feed(&v.to_le_bytes()),
            Value::BigInt(v) | Value::Money(v) => feed(&v.to_le_bytes()),
            Value::Bit(v) => feed(&[2, u8::from(*v)]),
            Value::Decimal(v, s) => {
                feed(&v.to_le_bytes());
                feed(&[*s]);
            }
            Value::Float(v) => feed(&v.to_le_bytes()),
            Value::Real(v) => feed(&v.to_le_bytes()),
            Value::Text(v) => {
                // As the collation compares it: keys equal to it lock the same resource.
                let mut utf8 = [0u8; 4];
                for c in fold_text(v) {
                    feed(c.encode_utf8(&mut utf8).as_bytes());
                }
            }
            Value::Bytes(v) => feed(v),
            Value::Guid(v) => feed(v),
            Value::Date(v) => feed(&v.to_le_bytes()),
            Value::Time(v) => feed(&v.to_le_bytes()),
            Value::DateTime(d, t) => {
                feed(&d.to_le_bytes());
                feed(&t.to_le_bytes());
            }
            Value::DateTime2(d, t) => {
                feed(&d.to_le_bytes());
                feed(&t.to_le_bytes());
            }
        }
        feed(&[0xFF]);
    }
    hash
}

/// A uniqueidentifier's stored bytes from its text form ('55666BEE-B3A0-...').
pub fn guid_from_str(text: &str) -> Option<[u8; 16]> {
    uuid::Uuid::parse_str(text).ok().map(|u| u.to_bytes_le())
}

/// The text form of a uniqueidentifier's stored bytes.
pub fn guid_to_string(stored: &[u8; 16]) -> String {
    uuid::Uuid::from_bytes_le(*stored).hyphenated().to_string().to_ascii_uppercase()
}

/// The bytes of a uniqueidentifier, most significant first, as SQL Server orders them.
const GUID_ORDER: [usize; 16] = [10, 11, 12, 13, 14, 15, 8, 9, 6, 7, 4, 5, 0, 1, 2, 3];

/// SQL Server's uniqueidentifier comparison on stored bytes.
pub fn compare_guid(a: &[u8; 16], b: &[u8; 16]) -> Ordering {
    for index in GUID_ORDER {
        match a[index].cmp(&b[index]) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

fn row_too_big(size: usize) -> SqlError {
    SqlError::new(
        511,
        16,
        1,
        format!(
            "Cannot create a row of size {size} which is greater than the allowable maximum row size of {MAX_RECORD_BYTES}."
        ),
    )
}

fn type_mismatch(column: &Column, value: &Value) -> SqlError {
    SqlError::new(
        245,
        16,
        1,
        format!(
            "Conversion failed when converting the value {value:?} to data type of column '{}'.",
            column.name
        ),
    )
}

/// The byte position of each fixed column and the bit of each bit column in the fixed part.
#[derive(Clone, Debug)]
pub struct Layout {
    /// (offset in the fixed data, bit for bit columns) per column; None for variable columns.
    fixed: Vec<Option<(usize, u8)>>,
    fixed_len: usize,
    var_columns: Vec<usize>,
}

/// The size of the smallest record a table of `columns` can have: the status bytes and the
/// fixed part's length (4), the fixed columns, the column count (2) and the null bitmap, with
/// every variable-length column empty. Over [`MAX_RECORD_BYTES`] no row fits: SQL Server
/// refuses such a table (1701).
pub fn min_record_bytes(columns: &[Column]) -> usize {
    4 + Layout::new(columns).fixed_len + 2 + columns.len().div_ceil(8)
}

impl Layout {
    pub fn new(columns: &[Column]) -> Layout {
        let mut fixed = Vec::with_capacity(columns.len());
        let mut fixed_len = 0;
        let mut bit_byte: Option<(usize, u8)> = None;
        let mut var_columns = Vec::new();
        for (index, column) in columns.iter().enumerate() {
            match column.sql_type {
                SqlType::Bit => {
                    let (offset, bit) = match bit_byte {
                        Some((offset, bit)) if bit < 8 => (offset, bit),
                        _ => {
                            fixed_len += 1;
                            (fixed_len - 1, 0)
                        }
                    };
                    bit_byte = Some((offset, bit + 1));
                    fixed.push(Some((offset, bit)));
                }
                other => match other.fixed_size() {
                    Some(size) => {
                        fixed.push(Some((fixed_len, 0)));
                        fixed_len += size;
                    }
                    None => {
                        fixed.push(None);
                        var_columns.push(index);
                    }
                },
            }
        }
        Layout { fixed, fixed_len, var_columns }
    }

    /// pminlen: the fixed part including the 4-byte record header.
    pub fn pminlen(&self) -> usize {
        4 + self.fixed_len
    }
}

/// Encodes a data record (type `record_type`).
pub fn encode(
    columns: &[Column],
    layout: &Layout,
    values: &[Value],
    record_type: RecordType,
) -> SqlResult<Vec<u8>> {
    let mut record = Vec::with_capacity(encoded_capacity(layout));
    encode_into(columns, layout, values, record_type, &mut record)?;
    Ok(record)
}

/// An index entry: `key` in the first columns and `child` (a 6-byte page pointer) in the
/// last, which is binary(6) NOT NULL. The same bytes as [`encode`] of the key values and
/// `Value::Bytes(child)` with [`RecordType::Index`], written without making those values:
/// every insert encodes its undo key this way, and the generic path (the values cloned into
/// a new list, a second allocation, each value matched twice) cost about 970 instructions an
/// entry; this one saves about 510 per row of `bench insert` (callgrind). Keys with a NULL or
/// a variable-length column take the generic path.
pub fn encode_index_entry(
    columns: &[Column],
    layout: &Layout,
    key: &[Value],
    child: &[u8; 6],
) -> SqlResult<Vec<u8>> {
    let mut record = Vec::new();
    encode_index_entry_into(columns, layout, key, child, &mut record)?;
    Ok(record)
}

/// [`encode_index_entry`] into `record`, which is cleared first (a caller that encodes entry
/// after entry reuses one buffer).
pub fn encode_index_entry_into(
    columns: &[Column],
    layout: &Layout,
    key: &[Value],
    child: &[u8; 6],
    record: &mut Vec<u8>,
) -> SqlResult<()> {
    let child_index = columns.len() - 1;
    assert_eq!(key.len(), child_index, "a value per key column");
    assert_eq!(columns[child_index].sql_type, SqlType::Binary(6), "the child pointer column");
    if !layout.var_columns.is_empty() || key.iter().any(|value| matches!(value, Value::Null)) {
        let mut values: Vec<Value> = key.to_vec();
        values.push(Value::Bytes(child.to_vec()));
        return encode_into(columns, layout, &values, RecordType::Index, record);
    }
    let fixed_end = 4 + layout.fixed_len;
    let bitmap_at = fixed_end + 2;
    // Every column is fixed-length and not NULL: no variable part, a null bitmap of zeros.
    record.clear();
    record.resize(bitmap_at + columns.len().div_ceil(8), 0);
    record[0] = (RecordType::Index as u8) << 1 | STATUS_NULL_BITMAP;
    record[2..4].copy_from_slice(&(fixed_end as u16).to_le_bytes());
    record[fixed_end..bitmap_at].copy_from_slice(&(columns.len() as u16).to_le_bytes());
    for (index, value) in key.iter().enumerate() {
        let (offset, bit) = layout.fixed[index].expect("a fixed-length key column");
        encode_fixed(&columns[index], value, &mut record[4..fixed_end], offset, bit)?;
    }
    let (child_offset, _) = layout.fixed[child_index].expect("binary(6) is fixed-length");
    record[4 + child_offset..4 + child_offset + 6].copy_from_slice(child);
    Ok(())
}

/// The room a record of `layout` is first given: its fixed part and header, and 64 bytes for
/// its null bitmap and variable-length part (more is found as the record grows).
fn encoded_capacity(layout: &Layout) -> usize {
    64 + 4 + layout.fixed_len + 2
}

/// [`encode`] into `record`, which is cleared first: a caller that encodes row after row
/// reuses one buffer (an nchar(2048) row is a 4 KB allocation otherwise).
pub fn encode_into(
    columns: &[Column],
    layout: &Layout,
    values: &[Value],
    record_type: RecordType,
    record: &mut Vec<u8>,
) -> SqlResult<()> {
    assert_eq!(columns.len(), values.len(), "one value per column");
    // The header and fixed part, column count and null bitmap are written in place; the
    // variable-length values follow once their offsets are known.
    let fixed_end = 4 + layout.fixed_len;
    let bitmap_at = fixed_end + 2;
    record.clear();
    record.reserve(encoded_capacity(layout));
    record.resize(bitmap_at + columns.len().div_ceil(8), 0);
    record[2..4].copy_from_slice(&(fixed_end as u16).to_le_bytes());
    record[fixed_end..bitmap_at].copy_from_slice(&(columns.len() as u16).to_le_bytes());
    let mut var_values: Vec<Vec<u8>> = Vec::new();
    for (index, (column, value)) in columns.iter().zip(values).enumerate() {
        if matches!(value, Value::Null) {
            if !column.nullable {
                return Err(SqlError::new(
                    515,
                    16,
                    2,
                    format!(
                        "Cannot insert the value NULL into column '{}', table; column does not allow nulls. INSERT fails.",
                        column.name
                    ),
                ));
            }
            record[bitmap_at + index / 8] |= 1 << (index % 8);
            if layout.fixed[index].is_none() {
                var_values.push(Vec::new());
            }
            continue;
        }
        match layout.fixed[index] {
            Some((offset, bit)) => {
                encode_fixed(column, value, &mut record[4..fixed_end], offset, bit)?
            }
            None => var_values.push(encode_var(column, value)?),
        }
    }
    let var_count = layout
        .var_columns
        .iter()
        .rposition(|c| !matches!(values[*c], Value::Null))
        .map_or(0, |last| last + 1);
    let mut status_a = (record_type as u8) << 1 | STATUS_NULL_BITMAP;
    if var_count > 0 {
        status_a |= STATUS_VAR_COLUMNS;
    }
    record[0] = status_a;
    if var_count > 0 {
        record.extend_from_slice(&(var_count as u16).to_le_bytes());
        let mut end = record.len() + 2 * var_count;
        for value in &var_values[..var_count] {
            end += value.len();
            record.extend_from_slice(&(end as u16).to_le_bytes());
        }
        for value in &var_values[..var_count] {
            record.extend_from_slice(value);
        }
    }
    if record.len() > MAX_RECORD_BYTES {
        return Err(row_too_big(record.len()));
    }
    Ok(())
}

/// Fills an even-length slice with N' ' (0x0020 little-endian), a cache line at a time (four
/// 16-byte stores, where eight bytes at a time made 512 stores of an nchar(2048)): an
/// nchar(2048) holding one character is 4 KB of padding per row (seed 002's rows).
fn pad_utf16_spaces(bytes: &mut [u8]) {
    const SPACES: [u8; 64] = {
        let mut spaces = [0u8; 64];
        let mut at = 0;
        while at < 64 {
            spaces[at] = b' ';
            at += 2;
        }
        spaces
    };
    let mut lines = bytes.chunks_exact_mut(64);
    for line in &mut lines {
        line.copy_from_slice(&SPACES);
    }
    let tail = lines.into_remainder();
    let tail_len = tail.len();
    tail.copy_from_slice(&SPACES[..tail_len]);
}

// Inlined into both callers: out of line, the row encoder's calls cost seed 002 about 500
// instructions a row more (callgrind).
#[inline(always)]
fn encode_fixed(
    column: &Column,
    value: &Value,
    fixed: &mut [u8],
    offset: usize,
    bit: u8,
) -> SqlResult<()> {
    let size = column.sql_type.fixed_size().unwrap_or(0);
    let slot = &mut fixed[offset..offset + size.max(1)];
    match (column.sql_type, value) {
        (SqlType::TinyInt, Value::TinyInt(v)) => slot[0] = *v,
        (SqlType::SmallInt, Value::SmallInt(v)) => slot.copy_from_slice(&v.to_le_bytes()),
        (SqlType::Int, Value::Int(v)) => slot.copy_from_slice(&v.to_le_bytes()),
        (SqlType::BigInt, Value::BigInt(v)) | (SqlType::Money, Value::Money(v)) => {
            slot.copy_from_slice(&v.to_le_bytes())
        }
        (SqlType::Bit, Value::Bit(v)) => slot[0] = (slot[0] & !(1 << bit)) | (u8::from(*v) << bit),
        (SqlType::Decimal { .. }, Value::Decimal(v, _)) => {
            slot[0] = u8::from(*v >= 0);
            let magnitude = v.unsigned_abs().to_le_bytes();
            slot[1..].copy_from_slice(&magnitude[..size - 1]);
        }
        (SqlType::Float, Value::Float(v)) => slot.copy_from_slice(&v.to_le_bytes()),
        (SqlType::Real, Value::Real(v)) => slot.copy_from_slice(&v.to_le_bytes()),
        (SqlType::Char(n), Value::Text(text)) => {
            pad_into(slot, text.as_bytes(), usize::from(n), b' ', column, value)?
        }
        (SqlType::NChar(n), Value::Text(text)) => {
            // UTF-16LE straight into the slot, then padded with N' ' (0x0020).
            let size = 2 * usize::from(n);
            let mut at = 0;
            for unit in text.encode_utf16() {
                if at + 2 > size {
                    return Err(truncation(column, value));
                }
                slot[at..at + 2].copy_from_slice(&unit.to_le_bytes());
                at += 2;
            }
            pad_utf16_spaces(&mut slot[at..size]);
        }
        (SqlType::Binary(n), Value::Bytes(bytes)) => {
            pad_into(slot, bytes, usize::from(n), 0, column, value)?
        }
        (SqlType::UniqueIdentifier, Value::Guid(bytes)) => slot.copy_from_slice(bytes),
        (SqlType::Date, Value::Date(days)) => slot.copy_from_slice(&days.to_le_bytes()[..3]),
        (SqlType::Time(_), Value::Time(units)) => {
            slot.copy_from_slice(&units.to_le_bytes()[..size])
        }
        (SqlType::DateTime, Value::DateTime(days, ticks)) => {
            slot[..4].copy_from_slice(&ticks.to_le_bytes());
            slot[4..].copy_from_slice(&days.to_le_bytes());
        }
        (SqlType::DateTime2(_), Value::DateTime2(days, units)) => {
            let time_len = size - 3;
            slot[..time_len].copy_from_slice(&units.to_le_bytes()[..time_len]);
            slot[time_len..].copy_from_slice(&days.to_le_bytes()[..3]);
        }
        _ => return Err(type_mismatch(column, value)),
    }
    Ok(())
}

fn pad_into(
    slot: &mut [u8],
    bytes: &[u8],
    size: usize,
    pad: u8,
    column: &Column,
    value: &Value,
) -> SqlResult<()> {
    if bytes.len() > size {
        return Err(truncation(column, value));
    }
    slot[..bytes.len()].copy_from_slice(bytes);
    slot[bytes.len()..size].fill(pad);
    Ok(())
}

fn truncation(column: &Column, _value: &Value) -> SqlError {
    SqlError::new(
        2628,
        16,
        1,
        format!("String or binary data would be truncated in table, column '{}'.", column.name),
    )
}

fn encode_var(column: &Column, value: &Value) -> SqlResult<Vec<u8>> {
    let bytes = match (column.sql_type, value) {
        (SqlType::VarChar(_), Value::Text(text)) => text.as_bytes().to_vec(),
        (SqlType::NVarChar(_), Value::Text(text)) => {
            text.encode_utf16().flat_map(u16::to_le_bytes).collect()
        }
        (SqlType::VarBinary(_), Value::Bytes(bytes)) => bytes.clone(),
        _ => return Err(type_mismatch(column, value)),
    };
    if bytes.len() > column.sql_type.max_var_size() {
        return Err(truncation(column, value));
    }
    Ok(bytes)
}

/// Why a record could not be decoded (corruption: the caller names the page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRecord(pub &'static str);

fn u16_at(bytes: &[u8], at: usize) -> Result<usize, BadRecord> {
    let pair = bytes.get(at..at + 2).ok_or(BadRecord("record ends early"))?;
    Ok(usize::from(u16::from_le_bytes([pair[0], pair[1]])))
}

/// The length of the record that starts `bytes` (a data or index record with the FixedVar
/// layout, or a 9-byte forwarding stub).
pub fn record_len(bytes: &[u8]) -> Result<usize, BadRecord> {
    let status_a = *bytes.first().ok_or(BadRecord("empty record"))?;
    if record_type(status_a) == RecordType::ForwardingStub as u8 {
        return Ok(9);
    }
    let len = columns_len(bytes, status_a)?;
    if status_a & STATUS_BACK_POINTER == 0 {
        return Ok(len);
    }
    if len + BACK_POINTER_BYTES > bytes.len() {
        return Err(BadRecord("back-pointer beyond the record area"));
    }
    Ok(len + BACK_POINTER_BYTES)
}

/// The back-pointer of a forwarded record: its forwarding stub's RID bytes.
pub fn back_pointer(bytes: &[u8]) -> Option<[u8; 8]> {
    let status_a = *bytes.first()?;
    if status_a & STATUS_BACK_POINTER == 0 {
        return None;
    }
    let len = columns_len(bytes, status_a).ok()?;
    bytes.get(len..len + BACK_POINTER_BYTES)?.try_into().ok()
}

/// The length of a record's header, columns and column metadata (without a back-pointer).
fn columns_len(bytes: &[u8], status_a: u8) -> Result<usize, BadRecord> {
    let fixed_end = u16_at(bytes, 2)?;
    let columns = u16_at(bytes, fixed_end)?;
    let mut at = fixed_end + 2 + columns.div_ceil(8);
    if status_a & STATUS_VAR_COLUMNS == 0 {
        return if at <= bytes.len() { Ok(at) } else { Err(BadRecord("record ends early")) };
    }
    let var_count = u16_at(bytes, at)?;
    at += 2;
    if var_count == 0 {
        return Ok(at);
    }
    let end = u16_at(bytes, at + 2 * (var_count - 1))? & 0x7FFF;
    if end < at + 2 * var_count || end > bytes.len() {
        return Err(BadRecord("variable-column offsets out of range"));
    }
    Ok(end)
}

/// Decodes a data record into one value per column.
pub fn decode(columns: &[Column], layout: &Layout, record: &[u8]) -> Result<Vec<Value>, BadRecord> {
    decode_selected(columns, layout, record, None)
}

/// Decodes only the columns at `wanted` positions, in that order (a B-tree reads its key
/// columns this way on every comparison, without decoding the rest of the row).
pub fn decode_columns(
    columns: &[Column],
    layout: &Layout,
    record: &[u8],
    wanted: &[usize],
) -> Result<Vec<Value>, BadRecord> {
    // Inline for up to 32 columns: vec![false; n] is a calloc, which takes glibc's slow path.
    let mut mask: smallvec::SmallVec<[bool; 32]> = smallvec::smallvec![false; columns.len()];
    for index in wanted {
        mask[*index] = true;
    }
    let mut all = decode_selected(columns, layout, record, Some(&mask))?;
    Ok(wanted.iter().map(|index| std::mem::replace(&mut all[*index], Value::Null)).collect())
}

/// Compares the key columns `wanted` of a record with `key`, column by column, without
/// building a row: fixed-length columns are read in place (the binary searches' hot path);
/// a variable-length key column falls back to decoding the key.
pub fn compare_record_key(
    columns: &[Column],
    layout: &Layout,
    record: &[u8],
    wanted: &[usize],
    key: &[Value],
) -> Result<Ordering, BadRecord> {
    if wanted.iter().any(|index| layout.fixed[*index].is_none()) {
        let decoded = decode_columns(columns, layout, record, wanted)?;
        return Ok(compare_keys(&decoded, key));
    }
    // NOT NULL columns never have their null bit set: their keys are compared without reading
    // the null bitmap after the fixed part, so a probe of a binary search touches the record's
    // header and the key's bytes only.
    let nullable = wanted.iter().any(|index| columns[*index].nullable);
    let (fixed_end, null_bits) = if nullable {
        let (fixed_end, stored_columns, bitmap) = fixed_part(layout, record)?;
        (fixed_end, Some((stored_columns, bitmap)))
    } else {
        (fixed_end(layout, record)?, None)
    };
    for (position, index) in wanted.iter().enumerate() {
        let Some(bound) = key.get(position) else { break };
        let is_null = null_bits
            .is_some_and(|(stored_columns, bitmap)| null_bit_set(stored_columns, bitmap, *index));
        let (offset, bit) = layout.fixed[*index].expect("checked above");
        let value = if is_null {
            Value::Null
        } else {
            decode_fixed(&columns[*index], &record[4..fixed_end], offset, bit)
        };
        let order = compare_values(&value, bound);
        if order != Ordering::Equal {
            return Ok(order);
        }
    }
    Ok(wanted.len().cmp(&key.len()))
}

/// A key column type that [`KeyComparer`] compares in its stored bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InPlaceKind {
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Money,
    Guid,
}

impl InPlaceKind {
    fn of(sql_type: &SqlType) -> Option<InPlaceKind> {
        Some(match sql_type {
            SqlType::TinyInt => InPlaceKind::TinyInt,
            SqlType::SmallInt => InPlaceKind::SmallInt,
            SqlType::Int => InPlaceKind::Int,
            SqlType::BigInt => InPlaceKind::BigInt,
            SqlType::Money => InPlaceKind::Money,
            SqlType::UniqueIdentifier => InPlaceKind::Guid,
            _ => return None,
        })
    }

    /// How the stored bytes at the start of `stored` compare with `bound`; None if `bound` is
    /// not a value of this type (the caller compares the slow way).
    fn compare(self, stored: &[u8], bound: &Value) -> Option<Ordering> {
        let le8 = || i64::from_le_bytes(stored[..8].try_into().expect("8 bytes"));
        Some(match (self, bound) {
            (InPlaceKind::TinyInt, Value::TinyInt(y)) => stored[0].cmp(y),
            (InPlaceKind::SmallInt, Value::SmallInt(y)) => {
                i16::from_le_bytes([stored[0], stored[1]]).cmp(y)
            }
            (InPlaceKind::Int, Value::Int(y)) => {
                i32::from_le_bytes(stored[..4].try_into().expect("4 bytes")).cmp(y)
            }
            (InPlaceKind::BigInt, Value::BigInt(y)) | (InPlaceKind::Money, Value::Money(y)) => {
                le8().cmp(y)
            }
            (InPlaceKind::Guid, Value::Guid(y)) => {
                compare_guid(stored[..16].try_into().expect("16 bytes"), y)
            }
            (_, Value::Null) => Ordering::Greater,
            _ => return None,
        })
    }
}

/// One key column as [`KeyComparer`] reads it.
#[derive(Clone, Copy, Debug)]
struct InPlaceColumn {
    /// Offset in the record (the 4-byte header included).
    at: usize,
    kind: InPlaceKind,
    /// The column's position, for its null bit; None if it is NOT NULL.
    null_bit: Option<usize>,
}

/// Compares the key columns of a record with a key in the record's own bytes, without making
/// values: worked out once per index, for keys whose columns are all integers, money or
/// uniqueidentifiers (a descent of a B-tree compares 15-20 keys, and decoding each into a
/// [`Value`] took most of a descent's instructions). Gives the same order as
/// [`compare_record_key`], which is the fallback for every other key.
#[derive(Clone, Debug)]
pub struct KeyComparer {
    fixed_end: usize,
    columns: smallvec::SmallVec<[InPlaceColumn; 2]>,
    nullable: bool,
}

impl KeyComparer {
    /// The comparer of key columns `wanted`, if every one of them can be compared in place.
    pub fn new(columns: &[Column], layout: &Layout, wanted: &[usize]) -> Option<KeyComparer> {
        let mut in_place = smallvec::SmallVec::new();
        for index in wanted {
            let (offset, _) = layout.fixed[*index]?;
            let column = &columns[*index];
            in_place.push(InPlaceColumn {
                at: 4 + offset,
                kind: InPlaceKind::of(&column.sql_type)?,
                null_bit: column.nullable.then_some(*index),
            });
        }
        let nullable = in_place.iter().any(|c: &InPlaceColumn| c.null_bit.is_some());
        Some(KeyComparer { fixed_end: 4 + layout.fixed_len, columns: in_place, nullable })
    }

    /// How the record's key compares with `key` (a prefix of the key columns, or all of
    /// them), as invariant 1 requires; Ok(None) if `key` holds a value of another type than
    /// its column.
    pub fn compare(&self, record: &[u8], key: &[Value]) -> Result<Option<Ordering>, BadRecord> {
        let null_bits = if self.nullable {
            let (_, stored_columns, bitmap) = fixed_part_at(self.fixed_end, record)?;
            Some((stored_columns, bitmap))
        } else {
            fixed_end_at(self.fixed_end, record)?;
            None
        };
        for (column, bound) in self.columns.iter().zip(key) {
            let is_null = match (column.null_bit, null_bits) {
                (Some(index), Some((stored_columns, bitmap))) => {
                    null_bit_set(stored_columns, bitmap, index)
                }
                _ => false,
            };
            let order = if is_null {
                compare_values(&Value::Null, bound)
            } else {
                match column.kind.compare(&record[column.at..], bound) {
                    Some(order) => order,
                    None => return Ok(None),
                }
            };
            if order != Ordering::Equal {
                return Ok(Some(order));
            }
        }
        Ok(Some(self.columns.len().cmp(&key.len())))
    }
}

/// A one-value search key in the form [`KeyComparer::compare_prepared`] compares stored keys
/// with: the value's order as a number, so that each comparison of a binary search is a load
/// and an integer comparison (matching the column's kind and the key's value at every
/// comparison took it to about 77 instructions in `bench insert`; prepared, about 54).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreparedKey {
    at: usize,
    kind: InPlaceKind,
    /// The first column's position for its null bit; None if it is NOT NULL.
    null_bit: Option<usize>,
    order: i128,
    /// The answer when the first column is equal: a one-value key is a prefix of a longer
    /// index key (a uniquifier's, say), which sorts after it.
    tie: Ordering,
}

impl PreparedKey {
    /// This key, to compare with stored keys whose first column is known not to be NULL
    /// (the entries of an index page after its first, when the table's key column is NOT
    /// NULL): their null bitmap is not read.
    pub fn for_keys_not_null(self) -> PreparedKey {
        PreparedKey { null_bit: None, ..self }
    }
}

/// Where a stored value of `kind` sorts, as a number: integers and money by value, a
/// uniqueidentifier by its bytes in SQL Server's order ([`GUID_ORDER`]) read big-endian.
#[inline]
fn order_of(kind: InPlaceKind, stored: &[u8]) -> i128 {
    let bytes8 = |from: usize| -> [u8; 8] { stored[from..from + 8].try_into().expect("8 bytes") };
    match kind {
        InPlaceKind::TinyInt => i128::from(stored[0]),
        InPlaceKind::SmallInt => i128::from(i16::from_le_bytes([stored[0], stored[1]])),
        InPlaceKind::Int => {
            i128::from(i32::from_le_bytes(stored[..4].try_into().expect("4 bytes")))
        }
        InPlaceKind::BigInt | InPlaceKind::Money => i128::from(i64::from_le_bytes(bytes8(0))),
        InPlaceKind::Guid => {
            // Bytes 8..16 loaded little-endian and byte-swapped hold b8 b9 b10 .. b15 from
            // the top; rotated left by 16 bits: b10 .. b15 b8 b9, GUID_ORDER's first eight.
            let high = u64::from_le_bytes(bytes8(8)).swap_bytes().rotate_left(16);
            // Bytes 0..8 swapped: b0 b1 b2 b3 | b4 b5 b6 b7 from the top. GUID_ORDER's last
            // eight are b6 b7 b4 b5 | b0 b1 b2 b3: the low half with its 16-bit halves
            // exchanged goes on top, the high half below it.
            let swapped = u64::from_le_bytes(bytes8(0)).swap_bytes();
            let low = (u64::from((swapped as u32).rotate_left(16)) << 32) | (swapped >> 32);
            // Unsigned order: the top bit flipped, so that i128's order is the bytes' order.
            let unsigned = (u128::from(high) << 64) | u128::from(low);
            (unsigned ^ (1 << 127)) as i128
        }
    }
}

impl KeyComparer {
    /// `key` prepared for [`KeyComparer::compare_prepared`], when `key` is one value (not
    /// NULL) of the type of the index's first key column; None otherwise (compare with
    /// [`KeyComparer::compare`] or the slow way).
    pub fn prepare(&self, key: &[Value]) -> Option<PreparedKey> {
        let (Some(column), [value]) = (self.columns.first(), key) else { return None };
        let mut stored = [0u8; 16];
        match (column.kind, value) {
            (InPlaceKind::TinyInt, Value::TinyInt(v)) => stored[0] = *v,
            (InPlaceKind::SmallInt, Value::SmallInt(v)) => {
                stored[..2].copy_from_slice(&v.to_le_bytes())
            }
            (InPlaceKind::Int, Value::Int(v)) => stored[..4].copy_from_slice(&v.to_le_bytes()),
            (InPlaceKind::BigInt, Value::BigInt(v)) | (InPlaceKind::Money, Value::Money(v)) => {
                stored[..8].copy_from_slice(&v.to_le_bytes())
            }
            (InPlaceKind::Guid, Value::Guid(v)) => stored = *v,
            _ => return None,
        }
        Some(PreparedKey {
            at: column.at,
            kind: column.kind,
            null_bit: column.null_bit,
            order: order_of(column.kind, &stored),
            tie: self.columns.len().cmp(&1),
        })
    }

    /// How the record's key compares with a prepared key: the same answer as
    /// [`KeyComparer::compare`] gives for the key it was prepared from.
    #[inline]
    pub fn compare_prepared(
        &self,
        record: &[u8],
        key: &PreparedKey,
    ) -> Result<Ordering, BadRecord> {
        match key.null_bit {
            Some(index) => {
                let (_, stored_columns, bitmap) = fixed_part_at(self.fixed_end, record)?;
                // A NULL sorts before every value (an index page's first entry: minus infinity).
                if null_bit_set(stored_columns, bitmap, index) {
                    return Ok(Ordering::Less);
                }
            }
            None => {
                fixed_end_at(self.fixed_end, record)?;
            }
        }
        Ok(order_of(key.kind, &record[key.at..]).cmp(&key.order).then(key.tie))
    }
}

/// [`compare_record_key`], in place through `comparer` where it can compare `key` (the
/// index's [`KeyComparer`], if it has one).
pub fn compare_record_key_with(
    comparer: Option<&KeyComparer>,
    columns: &[Column],
    layout: &Layout,
    record: &[u8],
    wanted: &[usize],
    key: &[Value],
) -> Result<Ordering, BadRecord> {
    if let Some(comparer) = comparer
        && let Some(order) = comparer.compare(record, key)?
    {
        return Ok(order);
    }
    compare_record_key(columns, layout, record, wanted, key)
}

/// Whether column `index`'s bit is set in a record's null bitmap (columns past the stored
/// count are not null).
fn null_bit_set(stored_columns: usize, bitmap: &[u8], index: usize) -> bool {
    index < stored_columns && bitmap[index / 8] & (1 << (index % 8)) != 0
}

/// The stored bytes of fixed-length column `index` (NOT NULL, not bit), read in place: an
/// index entry's child page pointer is read this way at every level of a descent.
pub fn fixed_column_bytes<'r>(
    columns: &[Column],
    layout: &Layout,
    record: &'r [u8],
    index: usize,
) -> Result<&'r [u8], BadRecord> {
    fixed_end(layout, record)?;
    let (offset, _) = layout.fixed[index].ok_or(BadRecord("not a fixed-length column"))?;
    let size = columns[index].sql_type.fixed_size().unwrap_or(0);
    Ok(&record[4 + offset..4 + offset + size])
}

/// [`fixed_column_bytes`], to write: a B-tree fills an index entry's child pointer in place.
pub fn fixed_column_bytes_mut<'r>(
    columns: &[Column],
    layout: &Layout,
    record: &'r mut [u8],
    index: usize,
) -> Result<&'r mut [u8], BadRecord> {
    fixed_end(layout, record)?;
    let (offset, _) = layout.fixed[index].ok_or(BadRecord("not a fixed-length column"))?;
    let size = columns[index].sql_type.fixed_size().unwrap_or(0);
    Ok(&mut record[4 + offset..4 + offset + size])
}

/// The end of a record's fixed part, checked against the table's layout and the record's bytes.
fn fixed_end(layout: &Layout, record: &[u8]) -> Result<usize, BadRecord> {
    fixed_end_at(4 + layout.fixed_len, record)
}

/// [`fixed_end`], against the fixed part's end the table's layout gives (`expected`).
fn fixed_end_at(expected: usize, record: &[u8]) -> Result<usize, BadRecord> {
    let fixed_end = u16_at(record, 2)?;
    if fixed_end != expected || record.len() < fixed_end {
        return Err(BadRecord("fixed-length part does not match the table"));
    }
    Ok(fixed_end)
}

/// The end of a record's fixed part, its stored column count and its null bitmap, checked
/// against the table's layout.
fn fixed_part<'r>(
    layout: &Layout,
    record: &'r [u8],
) -> Result<(usize, usize, &'r [u8]), BadRecord> {
    fixed_part_at(4 + layout.fixed_len, record)
}

/// [`fixed_part`], against the fixed part's end the table's layout gives (`expected`).
fn fixed_part_at(expected: usize, record: &[u8]) -> Result<(usize, usize, &[u8]), BadRecord> {
    let fixed_end = fixed_end_at(expected, record)?;
    let stored_columns = u16_at(record, fixed_end)?;
    let bitmap_at = fixed_end + 2;
    let bitmap = record
        .get(bitmap_at..bitmap_at + stored_columns.div_ceil(8))
        .ok_or(BadRecord("null bitmap"))?;
    Ok((fixed_end, stored_columns, bitmap))
}

/// Decodes every column, or only those whose `wanted` flag is set (the others come back NULL).
fn decode_selected(
    columns: &[Column],
    layout: &Layout,
    record: &[u8],
    wanted: Option<&[bool]>,
) -> Result<Vec<Value>, BadRecord> {
    let (fixed_end, stored_columns, bitmap) = fixed_part(layout, record)?;
    let mut at = fixed_end + 2 + bitmap.len();
    let (var_count, var_offsets_at) = if record[0] & STATUS_VAR_COLUMNS != 0 {
        let count = u16_at(record, at)?;
        at += 2;
        (count, at)
    } else {
        (0, at)
    };
    let var_data_at = var_offsets_at + 2 * var_count;
    let mut values = Vec::with_capacity(columns.len());
    let mut var_index = 0;
    for (index, column) in columns.iter().enumerate() {
        let skipped = wanted.is_some_and(|w| !w[index]);
        let is_null = skipped || null_bit_set(stored_columns, bitmap, index);
        match layout.fixed[index] {
            Some((offset, bit)) => {
                let value = if is_null {
                    Value::Null
                } else {
                    decode_fixed(column, &record[4..fixed_end], offset, bit)
                };
                values.push(value);
            }
            None => {
                let value = if is_null || var_index >= var_count {
                    Value::Null
                } else {
                    let start = if var_index == 0 {
                        var_data_at
                    } else {
                        u16_at(record, var_offsets_at + 2 * (var_index - 1))? & 0x7FFF
                    };
                    let end = u16_at(record, var_offsets_at + 2 * var_index)? & 0x7FFF;
                    let bytes =
                        record.get(start..end).ok_or(BadRecord("variable column out of range"))?;
                    decode_var(column, bytes)
                };
                var_index += 1;
                values.push(value);
            }
        }
    }
    Ok(values)
}

fn decode_fixed(column: &Column, fixed: &[u8], offset: usize, bit: u8) -> Value {
    let size = column.sql_type.fixed_size().unwrap_or(0);
    let slot = &fixed[offset..offset + size.max(1)];
    // Fixed-size reads (not one copy of a variable length), so that the compiler inlines them:
    // a binary search decodes a key column at every probe.
    let bytes4 = || -> [u8; 4] { slot[..4].try_into().expect("a 4-byte column") };
    let bytes8 = || -> [u8; 8] { slot[..8].try_into().expect("an 8-byte column") };
    match column.sql_type {
        SqlType::TinyInt => Value::TinyInt(slot[0]),
        SqlType::SmallInt => Value::SmallInt(i16::from_le_bytes([slot[0], slot[1]])),
        SqlType::Int => Value::Int(i32::from_le_bytes(bytes4())),
        SqlType::BigInt => Value::BigInt(i64::from_le_bytes(bytes8())),
        SqlType::Money => Value::Money(i64::from_le_bytes(bytes8())),
        SqlType::Bit => Value::Bit(slot[0] & (1 << bit) != 0),
        SqlType::Decimal { scale, .. } => {
            let mut magnitude = [0u8; 16];
            magnitude[..size - 1].copy_from_slice(&slot[1..]);
            let value = u128::from_le_bytes(magnitude) as i128;
            Value::Decimal(if slot[0] == 1 { value } else { -value }, scale)
        }
        SqlType::Float => Value::Float(f64::from_le_bytes(bytes8())),
        SqlType::Real => Value::Real(f32::from_le_bytes(bytes4())),
        SqlType::Char(_) => Value::Text(String::from_utf8_lossy(slot).into_owned()),
        SqlType::NChar(_) => Value::Text(utf16_text(slot)),
        SqlType::Binary(_) => Value::Bytes(slot.to_vec()),
        SqlType::UniqueIdentifier => Value::Guid(slot[..16].try_into().expect("16 bytes")),
        SqlType::Date => Value::Date(u32::from_le_bytes([slot[0], slot[1], slot[2], 0])),
        SqlType::Time(_) => {
            let mut units = [0u8; 8];
            units[..size].copy_from_slice(slot);
            Value::Time(u64::from_le_bytes(units))
        }
        SqlType::DateTime => Value::DateTime(
            i32::from_le_bytes(slot[4..8].try_into().expect("4")),
            u32::from_le_bytes(slot[..4].try_into().expect("4")),
        ),
        SqlType::DateTime2(_) => {
            let time_len = size - 3;
            let mut units = [0u8; 8];
            units[..time_len].copy_from_slice(&slot[..time_len]);
            let days =
                u32::from_le_bytes([slot[time_len], slot[time_len + 1], slot[time_len + 2], 0]);
            Value::DateTime2(days, u64::from_le_bytes(units))
        }
        SqlType::VarChar(_) | SqlType::NVarChar(_) | SqlType::VarBinary(_) => Value::Null,
    }
}

fn utf16_text(bytes: &[u8]) -> String {
    let units: Vec<u16> =
        bytes.chunks_exact(2).map(|pair| u16::from_le_bytes([pair[0], pair[1]])).collect();
    String::from_utf16_lossy(&units)
}

fn decode_var(column: &Column, bytes: &[u8]) -> Value {
    match column.sql_type {
        SqlType::VarChar(_) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
        SqlType::NVarChar(_) => Value::Text(utf16_text(bytes)),
        _ => Value::Bytes(bytes.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_001_columns() -> Vec<Column> {
        vec![
            Column::new("c1", SqlType::UniqueIdentifier, false),
            Column::new("c2", SqlType::DateTime, false),
            Column::new("c3", SqlType::Char(111), false),
        ]
    }

    #[test]
    fn comparing_a_record_key_in_place_agrees_with_decoding_it() {
        let columns = vec![
            Column::new("a", SqlType::Int, true),
            Column::new("g", SqlType::UniqueIdentifier, false),
            Column::new("v", SqlType::VarChar(20), true),
        ];
        let layout = Layout::new(&columns);
        let mut rng = crate::rng::SplitMix64::new(7);
        for _ in 0..500 {
            let a = if rng.next_u64().is_multiple_of(5) {
                Value::Null
            } else {
                Value::Int((rng.next_u64() % 7) as i32)
            };
            let g = Value::Guid(rng.guid());
            let row = vec![a, g, Value::Text("x".into())];
            let record = encode(&columns, &layout, &row, RecordType::Primary).unwrap();
            let random = [
                Value::Int((rng.next_u64() % 7) as i32),
                Value::Guid(rng.guid()),
                Value::Text(if rng.next_u64().is_multiple_of(2) { "x" } else { "y" }.into()),
            ];
            for wanted in [vec![0], vec![0, 1], vec![1], vec![0, 2]] {
                let exact: Vec<Value> = wanted.iter().map(|i| row[*i].clone()).collect();
                let other: Vec<Value> = wanted.iter().map(|i| random[*i].clone()).collect();
                let keys = [exact, other.clone(), other[..1].to_vec(), vec![]];
                for key in &keys {
                    let decoded = decode_columns(&columns, &layout, &record, &wanted).unwrap();
                    assert_eq!(
                        compare_record_key(&columns, &layout, &record, &wanted, key).unwrap(),
                        compare_keys(&decoded, key),
                        "{wanted:?} {key:?} {row:?}"
                    );
                }
            }
        }
    }

    /// Invariant 1: the in-place comparer gives the order of decoding and comparing values,
    /// NULLs and key prefixes included; a key it cannot compare in place (a character column,
    /// or a value of another type) is left to the slow path.
    #[test]
    fn a_key_comparer_agrees_with_comparing_decoded_values() {
        let columns = vec![
            Column::new("i", SqlType::Int, true),
            Column::new("g", SqlType::UniqueIdentifier, false),
            Column::new("b", SqlType::BigInt, false),
            Column::new("s", SqlType::SmallInt, true),
            Column::new("t", SqlType::TinyInt, false),
            Column::new("m", SqlType::Money, false),
            Column::new("c", SqlType::Char(3), false),
        ];
        let layout = Layout::new(&columns);
        assert!(KeyComparer::new(&columns, &layout, &[0, 6]).is_none(), "char is not in place");
        let seed = 11;
        let mut rng = crate::rng::SplitMix64::new(seed);
        let small = |rng: &mut crate::rng::SplitMix64| (rng.next_u64() % 5) as i64 - 2;
        for _ in 0..400 {
            let mut row_and_key = [0, 1].map(|_| {
                let nullable = |rng: &mut crate::rng::SplitMix64, v: Value| {
                    if rng.next_u64().is_multiple_of(4) { Value::Null } else { v }
                };
                let i = Value::Int(small(&mut rng) as i32);
                let s = Value::SmallInt(small(&mut rng) as i16);
                vec![
                    nullable(&mut rng, i),
                    Value::Guid(if rng.next_u64().is_multiple_of(2) {
                        [7; 16]
                    } else {
                        rng.guid()
                    }),
                    Value::BigInt(small(&mut rng) * (i64::MAX / 2)),
                    nullable(&mut rng, s),
                    Value::TinyInt((rng.next_u64() % 3) as u8),
                    Value::Money(small(&mut rng)),
                    Value::Text("abc".into()),
                ]
            });
            let key_row = row_and_key[1].clone();
            let row = &mut row_and_key[0];
            let record = encode(&columns, &layout, row, RecordType::Primary).unwrap();
            for wanted in [vec![0, 1, 2], vec![3, 4, 5], vec![1], vec![2, 0], vec![5, 4, 3, 1]] {
                let comparer = KeyComparer::new(&columns, &layout, &wanted).expect("in place");
                let exact: Vec<Value> = wanted.iter().map(|i| row[*i].clone()).collect();
                let other: Vec<Value> = wanted.iter().map(|i| key_row[*i].clone()).collect();
                for key in [exact, other.clone(), other[..1].to_vec(), vec![]] {
                    let slow = compare_record_key(&columns, &layout, &record, &wanted, &key);
                    assert_eq!(
                        comparer.compare(&record, &key).unwrap(),
                        Some(slow.unwrap()),
                        "seed {seed}: {wanted:?} {key:?} {row:?}"
                    );
                }
            }
            let mistyped = [Value::Int(1)];
            assert_eq!(
                KeyComparer::new(&columns, &layout, &[2]).unwrap().compare(&record, &mistyped),
                Ok(None),
                "an int compared with a bigint column goes the slow way"
            );
        }
        let comparer = KeyComparer::new(&columns, &layout, &[0]).unwrap();
        assert!(comparer.compare(&[0, 0, 9, 0], &[Value::Int(1)]).is_err(), "a short record");
    }

    /// A prepared one-value key compares every stored value as the unprepared key does:
    /// integers of each width at and around their extremes (signs included), money,
    /// uniqueidentifiers that differ in each byte (SQL Server's byte order), and a prefix of a
    /// two-column key; a NULL in a nullable first column sorts first. A key of two values,
    /// NULL, or a value of another type is not prepared.
    #[test]
    fn a_prepared_key_compares_as_the_key_it_was_prepared_from() {
        let columns = vec![
            Column::new("t", SqlType::TinyInt, false),
            Column::new("s", SqlType::SmallInt, false),
            Column::new("i", SqlType::Int, false),
            Column::new("b", SqlType::BigInt, false),
            Column::new("m", SqlType::Money, false),
            Column::new("g", SqlType::UniqueIdentifier, false),
            Column::new("n", SqlType::Int, true),
        ];
        let layout = Layout::new(&columns);
        let seed = 24;
        let mut rng = crate::rng::SplitMix64::new(seed);
        let wide = [i64::MIN, i64::MIN + 1, -256, -129, -1, 0, 1, 127, 128, 255, 256, i64::MAX];
        let mut rows = Vec::new();
        for _ in 0..300 {
            let pick = |rng: &mut crate::rng::SplitMix64| {
                if rng.next_u64().is_multiple_of(2) {
                    wide[(rng.next_u64() % wide.len() as u64) as usize]
                } else {
                    rng.next_u64() as i64
                }
            };
            let mut guid = [0x80; 16];
            guid[(rng.next_u64() % 16) as usize] = (rng.next_u64() % 256) as u8;
            let guid = if rng.next_u64().is_multiple_of(2) { guid } else { rng.guid() };
            rows.push(vec![
                Value::TinyInt(pick(&mut rng) as u8),
                Value::SmallInt(pick(&mut rng) as i16),
                Value::Int(pick(&mut rng) as i32),
                Value::BigInt(pick(&mut rng)),
                Value::Money(pick(&mut rng)),
                Value::Guid(guid),
                Value::Int(1),
            ]);
        }
        let records: Vec<Vec<u8>> = rows
            .iter()
            .map(|row| encode(&columns, &layout, row, RecordType::Primary).unwrap())
            .collect();
        let mut null_row = rows[0].clone();
        null_row[6] = Value::Null;
        let null_record = encode(&columns, &layout, &null_row, RecordType::Primary).unwrap();
        for column in 0..6 {
            let comparer = KeyComparer::new(&columns, &layout, &[column]).unwrap();
            for key_row in rows.iter().take(60) {
                let key = [key_row[column].clone()];
                let prepared = comparer.prepare(&key).expect("a one-column NOT NULL key");
                for (record, row) in records.iter().zip(&rows) {
                    assert_eq!(
                        Ok(comparer.compare_prepared(record, &prepared).unwrap()),
                        comparer.compare(record, &key).map(|order| order.unwrap()),
                        "seed {seed}: column {column}, key {key:?}, row {:?}",
                        row[column]
                    );
                }
            }
        }
        let guid = KeyComparer::new(&columns, &layout, &[5]).unwrap();
        assert!(guid.prepare(&[Value::Int(1)]).is_none(), "a value of another type");
        assert!(guid.prepare(&[Value::Null]).is_none(), "NULL");
        let two = KeyComparer::new(&columns, &layout, &[2, 5]).unwrap();
        assert!(two.prepare(&[Value::Int(1), Value::Guid([0; 16])]).is_none(), "two values");
        // A one-value key against a two-column index key: a prefix, as compare takes it.
        for key_row in rows.iter().take(60) {
            let key = [key_row[2].clone()];
            let prepared = two.prepare(&key).expect("a prefix of a NOT NULL first column");
            for record in &records {
                assert_eq!(
                    Ok(two.compare_prepared(record, &prepared).unwrap()),
                    two.compare(record, &key).map(|order| order.unwrap()),
                    "seed {seed}: prefix key {key:?}"
                );
            }
        }
        let nullable = KeyComparer::new(&columns, &layout, &[6, 2]).unwrap();
        for (null, record) in [(true, &null_record), (false, &records[0])] {
            for key in [[Value::Int(i32::MIN)], [Value::Int(1)], [Value::Int(i32::MAX)]] {
                let prepared = nullable.prepare(&key).expect("a nullable column is prepared");
                let expected = nullable.compare(record, &key).map(|order| order.unwrap());
                assert_eq!(
                    Ok(nullable.compare_prepared(record, &prepared).unwrap()),
                    expected,
                    "null {null}, key {key:?}"
                );
                if !null {
                    let not_null = prepared.for_keys_not_null();
                    let order = nullable.compare_prepared(record, &not_null);
                    assert_eq!(Ok(order.unwrap()), expected, "known not null, key {key:?}");
                }
            }
        }
        let int_key = KeyComparer::new(&columns, &layout, &[2]).unwrap();
        let prepared = int_key.prepare(&[Value::Int(1)]).unwrap();
        assert!(int_key.compare_prepared(&[0, 0, 9, 0], &prepared).is_err(), "a short record");
    }

    /// An index entry's child pointer read in place is the value `decode` gives; a variable
    /// column or a record shorter than the table's fixed part is an error, not a panic.
    #[test]
    fn a_fixed_column_read_in_place_agrees_with_decoding_it() {
        let columns = vec![
            Column::new("k", SqlType::VarChar(20), true),
            Column::new("n", SqlType::Int, true),
            Column::new("child", SqlType::Binary(6), false),
        ];
        let layout = Layout::new(&columns);
        let child = vec![0x10, 0x27, 0, 0, 3, 0];
        let row = vec![Value::Text("key".into()), Value::Null, Value::Bytes(child.clone())];
        let record = encode(&columns, &layout, &row, RecordType::Index).unwrap();
        assert_eq!(fixed_column_bytes(&columns, &layout, &record, 2), Ok(&child[..]));
        assert_eq!(decode(&columns, &layout, &record).unwrap()[2], Value::Bytes(child));
        assert!(fixed_column_bytes(&columns, &layout, &record, 0).is_err(), "variable column");
        assert!(fixed_column_bytes(&columns, &layout, &record[..8], 2).is_err(), "cut short");
    }

    #[test]
    fn seed_001s_row_is_141_bytes_like_sql_servers() {
        let columns = seed_001_columns();
        let layout = Layout::new(&columns);
        let guid = guid_from_str("55666BEE-B3A0-4BF5-81A7-86FF976E763F").unwrap();
        let values =
            vec![Value::Guid(guid), Value::DateTime(42_000, 1_234_567), Value::Text("a".into())];
        let record = encode(&columns, &layout, &values, RecordType::Primary).unwrap();
        // 4 header + 16 + 8 + 111 fixed + 2 column count + 1 null bitmap = 142 bytes.
        assert_eq!(record.len(), 142);
        assert_eq!(layout.pminlen(), 139);
        assert_eq!(record[0], 0x10, "a primary record with a null bitmap and no variable columns");
        assert_eq!(record_len(&record), Ok(142));
        let decoded = decode(&columns, &layout, &record).unwrap();
        assert_eq!(decoded[0], values[0]);
        assert_eq!(decoded[1], values[1]);
        assert_eq!(decoded[2], Value::Text(format!("a{}", " ".repeat(110))));
    }

    #[test]
    fn every_type_round_trips_with_nulls_and_variable_columns() {
        let columns = vec![
            Column::new("a", SqlType::TinyInt, false),
            Column::new("b", SqlType::SmallInt, true),
            Column::new("c", SqlType::Int, false),
            Column::new("d", SqlType::BigInt, true),
            Column::new("e", SqlType::Bit, false),
            Column::new("f", SqlType::Bit, true),
            Column::new("g", SqlType::Decimal { precision: 18, scale: 4 }, false),
            Column::new("h", SqlType::Float, false),
            Column::new("i", SqlType::Real, false),
            Column::new("j", SqlType::Money, false),
            Column::new("k", SqlType::VarChar(50), true),
            Column::new("l", SqlType::NVarChar(20), true),
            Column::new("m", SqlType::NChar(3), false),
            Column::new("n", SqlType::Binary(4), false),
            Column::new("o", SqlType::VarBinary(10), true),
            Column::new("p", SqlType::Date, false),
            Column::new("q", SqlType::Time(7), false),
            Column::new("r", SqlType::DateTime2(3), false),
            Column::new("s", SqlType::VarChar(5), true),
        ];
        let layout = Layout::new(&columns);
        let values = vec![
            Value::TinyInt(255),
            Value::Null,
            Value::Int(-7),
            Value::BigInt(1 << 40),
            Value::Bit(true),
            Value::Bit(false),
            Value::Decimal(-123_456_789, 4),
            Value::Float(2.5),
            Value::Real(-0.25),
            Value::Money(12_3400),
            Value::Text("hello".into()),
            Value::Null,
            Value::Text("ab ".into()),
            Value::Bytes(vec![1, 2, 3, 4]),
            Value::Bytes(vec![9; 10]),
            Value::Date(738_000),
            Value::Time(863_999_999_999),
            Value::DateTime2(738_001, 86_399_999),
            Value::Null,
        ];
        let record = encode(&columns, &layout, &values, RecordType::Primary).unwrap();
        assert_eq!(record[0] & STATUS_VAR_COLUMNS, STATUS_VAR_COLUMNS);
        assert_eq!(record_len(&record), Ok(record.len()));
        assert_eq!(decode(&columns, &layout, &record).unwrap(), values);
        // Two bit columns share one byte; the trailing NULL var column is not stored.
        let var_count_at = 4 + layout.fixed_len + 2 + columns.len().div_ceil(8);
        assert_eq!(
            u16_at(&record, var_count_at),
            Ok(3),
            "k, l, o stored; s (trailing NULL) omitted"
        );
    }

    /// The wanted-columns mask is inline up to 32 columns and on the heap beyond: both decode
    /// the columns asked for, in the order asked.
    #[test]
    fn selected_columns_decode_in_the_order_asked_beyond_32_columns() {
        for count in [3usize, 40] {
            let columns: Vec<Column> =
                (0..count).map(|i| Column::new(&format!("c{i}"), SqlType::Int, false)).collect();
            let layout = Layout::new(&columns);
            let values: Vec<Value> = (0..count).map(|i| Value::Int(i as i32 * 10)).collect();
            let record = encode(&columns, &layout, &values, RecordType::Primary).unwrap();
            let wanted = [count - 1, 0, count / 2];
            let decoded = decode_columns(&columns, &layout, &record, &wanted).unwrap();
            let expected: Vec<Value> = wanted.iter().map(|i| Value::Int(*i as i32 * 10)).collect();
            assert_eq!(decoded, expected, "{count} columns");
        }
    }

    #[test]
    fn nchar_is_utf16le_padded_with_spaces_and_too_long_a_value_is_truncation() {
        let columns = vec![Column::new("n", SqlType::NChar(4), false)];
        let layout = Layout::new(&columns);
        let record =
            encode(&columns, &layout, &[Value::Text("aé".into())], RecordType::Primary).unwrap();
        assert_eq!(&record[4..12], &[b'a', 0, 0xE9, 0, b' ', 0, b' ', 0]);
        let decoded = decode(&columns, &layout, &record).unwrap();
        assert_eq!(decoded, vec![Value::Text("aé  ".into())]);
        let too_long =
            encode(&columns, &layout, &[Value::Text("abcde".into())], RecordType::Primary);
        assert_eq!(too_long.unwrap_err().number, 2628);
    }

    #[test]
    fn errors_for_null_truncation_and_oversized_rows() {
        let columns = vec![
            Column::new("a", SqlType::Int, false),
            Column::new("b", SqlType::Char(5000), true),
            Column::new("c", SqlType::VarChar(4000), true),
        ];
        let layout = Layout::new(&columns);
        let null = encode(
            &columns,
            &layout,
            &[Value::Null, Value::Null, Value::Null],
            RecordType::Primary,
        )
        .unwrap_err();
        assert_eq!(null.number, 515);
        let long = encode(
            &columns,
            &layout,
            &[Value::Int(1), Value::Text("x".repeat(5001)), Value::Null],
            RecordType::Primary,
        )
        .unwrap_err();
        assert_eq!(long.number, 2628);
        let big = encode(
            &columns,
            &layout,
            &[Value::Int(1), Value::Null, Value::Text("y".repeat(3100))],
            RecordType::Primary,
        )
        .unwrap_err();
        assert_eq!((big.number, big.severity), (511, 16));
    }

    #[test]
    fn guids_sort_as_sql_server_sorts_them() {
        // Ascending order as SQL Server returns it for ORDER BY on uniqueidentifier: the last
        // group decides first, the first group last; the first three groups are stored
        // little-endian, so their rightmost byte in the text decides first.
        let ascending = [
            "01000000-0000-0000-0000-000000000000",
            "10000000-0000-0000-0000-000000000000",
            "00010000-0000-0000-0000-000000000000",
            "00000001-0000-0000-0000-000000000000",
            "00000000-0100-0000-0000-000000000000",
            "00000000-0001-0000-0000-000000000000",
            "00000000-0000-0100-0000-000000000000",
            "00000000-0000-0001-0000-000000000000",
            "00000000-0000-0000-0001-000000000000",
            "00000000-0000-0000-0100-000000000000",
            "00000000-0000-0000-0000-000000000001",
            "00000000-0000-0000-0000-010000000000",
        ];
        let guids: Vec<[u8; 16]> = ascending.iter().map(|s| guid_from_str(s).unwrap()).collect();
        for pair in guids.windows(2) {
            assert_eq!(
                compare_guid(&pair[0], &pair[1]),
                Ordering::Less,
                "{} < {}",
                guid_to_string(&pair[0]),
                guid_to_string(&pair[1])
            );
        }
        // The documented example: @g2 is greater although '55666BEE' < '8DD5BCA5'.
        let g1 = guid_from_str("55666BEE-B3A0-4BF5-81A7-86FF976E763F").unwrap();
        let g2 = guid_from_str("8DD5BCA5-6ABE-4F73-B4B7-393AE6BBB849").unwrap();
        assert_eq!(compare_guid(&g1, &g2), Ordering::Greater);
        assert_eq!(guid_to_string(&g1), "55666BEE-B3A0-4BF5-81A7-86FF976E763F");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn value_for(sql_type: SqlType) -> BoxedStrategy<Value> {
        match sql_type {
            SqlType::Int => any::<i32>().prop_map(Value::Int).boxed(),
            SqlType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
            SqlType::Bit => any::<bool>().prop_map(Value::Bit).boxed(),
            SqlType::VarChar(_) => "[a-z]{0,40}".prop_map(Value::Text).boxed(),
            SqlType::NVarChar(_) => "[a-zé€]{0,20}".prop_map(Value::Text).boxed(),
            SqlType::UniqueIdentifier => any::<[u8; 16]>().prop_map(Value::Guid).boxed(),
            SqlType::Decimal { scale, .. } => (-999_999_999_999i128..999_999_999_999)
                .prop_map(move |v| Value::Decimal(v, scale))
                .boxed(),
            _ => unreachable!("only the types below are generated"),
        }
    }

    fn row() -> impl Strategy<Value = (Vec<Column>, Vec<Value>)> {
        let types = prop_oneof![
            Just(SqlType::Int),
            Just(SqlType::BigInt),
            Just(SqlType::Bit),
            Just(SqlType::VarChar(40)),
            Just(SqlType::NVarChar(20)),
            Just(SqlType::UniqueIdentifier),
            Just(SqlType::Decimal { precision: 28, scale: 2 }),
        ];
        proptest::collection::vec((types, any::<bool>()), 1..12).prop_flat_map(|specs| {
            let columns: Vec<Column> = specs
                .iter()
                .enumerate()
                .map(|(i, (t, null))| Column::new(&format!("c{i}"), *t, *null))
                .collect();
            let values: Vec<BoxedStrategy<Value>> = specs
                .iter()
                .map(|(t, nullable)| {
                    if *nullable {
                        prop_oneof![Just(Value::Null), value_for(*t)].boxed()
                    } else {
                        value_for(*t)
                    }
                })
                .collect();
            (Just(columns), values)
        })
    }

    #[test]
    fn strings_compare_case_insensitively_and_blind_to_trailing_spaces() {
        assert_eq!(compare_text("apple", "APPLE"), Ordering::Equal);
        assert_eq!(compare_text("a  ", "A"), Ordering::Equal);
        assert_eq!(compare_text("apple", "Banana"), Ordering::Less);
        assert_eq!(compare_text("Zebra", "apple"), Ordering::Greater);
        assert_eq!(compare_text("ÉCOLE", "école"), Ordering::Equal);
        assert_eq!(compare_text(" a", "a"), Ordering::Less, "leading spaces count");
        let key = |text: &str| hash_values(&[Value::Text(text.into())]);
        assert_eq!(key("Apple  "), key("aPPLE"), "equal keys lock one resource");
        assert_ne!(key("apple"), key("apples"));
    }

    proptest! {
        /// The ASCII path orders as the characters' path does, and strings that compare equal
        /// hash alike (their key locks are one resource).
        #[test]
        fn string_order_and_key_hash_agree(a in "[a-cA-C é]{0,6}", b in "[a-cA-C é]{0,6}") {
            let by_chars = fold_text(&a).cmp(fold_text(&b));
            prop_assert_eq!(compare_text(&a, &b), by_chars);
            if compare_text(&a, &b) == Ordering::Equal {
                let hash = |t: &str| hash_values(&[Value::Text(t.into())]);
                prop_assert_eq!(hash(&a), hash(&b));
            }
        }

        #[test]
        fn records_round_trip((columns, values) in row()) {
            let layout = Layout::new(&columns);
            let record = encode(&columns, &layout, &values, RecordType::Primary).unwrap();
            prop_assert_eq!(record_len(&record), Ok(record.len()));
            prop_assert_eq!(decode(&columns, &layout, &record).unwrap(), values);
        }

        /// The direct encoding of an index entry is the generic encoding of its key and child
        /// pointer, byte for byte, whatever the key columns (bits sharing a byte, NULLs and
        /// variable-length columns, which take the generic path).
        #[test]
        fn index_entries_encode_as_their_values_do(
            (key_columns, key) in row(),
            child in any::<[u8; 6]>(),
        ) {
            let mut columns = key_columns;
            columns.push(Column::new("child", SqlType::Binary(6), false));
            let layout = Layout::new(&columns);
            let mut values = key.clone();
            values.push(Value::Bytes(child.to_vec()));
            let generic = encode(&columns, &layout, &values, RecordType::Index).unwrap();
            let direct = encode_index_entry(&columns, &layout, &key, &child).unwrap();
            prop_assert_eq!(direct, generic);
        }

        #[test]
        fn guid_order_is_a_total_order(a in any::<[u8; 16]>(), b in any::<[u8; 16]>()) {
            prop_assert_eq!(compare_guid(&a, &b), compare_guid(&b, &a).reverse());
            prop_assert_eq!(compare_guid(&a, &b) == Ordering::Equal, a == b);
        }
    }
}

/// SQL Server's ordering of two values of one column type: NULL first, numbers by value,
/// uniqueidentifier by [`compare_guid`], strings by [`compare_text`], binaries byte by byte,
/// dates and times by time.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    use Value::*;
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Null, _) => Ordering::Less,
        (_, Null) => Ordering::Greater,
        (TinyInt(x), TinyInt(y)) => x.cmp(y),
        (SmallInt(x), SmallInt(y)) => x.cmp(y),
        (Int(x), Int(y)) => x.cmp(y),
        (BigInt(x), BigInt(y)) | (Money(x), Money(y)) => x.cmp(y),
        (Bit(x), Bit(y)) => x.cmp(y),
        (Decimal(x, _), Decimal(y, _)) => x.cmp(y),
        (Float(x), Float(y)) => x.total_cmp(y),
        (Real(x), Real(y)) => x.total_cmp(y),
        (Text(x), Text(y)) => compare_text(x, y),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Guid(x), Guid(y)) => compare_guid(x, y),
        (Date(x), Date(y)) => x.cmp(y),
        (Time(x), Time(y)) => x.cmp(y),
        (DateTime(dx, tx), DateTime(dy, ty)) => (dx, tx).cmp(&(dy, ty)),
        (DateTime2(dx, tx), DateTime2(dy, ty)) => (dx, tx).cmp(&(dy, ty)),
        _ => panic!("comparing values of different types: {a:?} and {b:?}"),
    }
}

/// The collation [`compare_text`] stands in for, as DATABASEPROPERTYEX, SERVERPROPERTY and
/// sp_help name it.
pub const COLLATION_NAME: &str = "SQL_Latin1_General_CP1_CI_AS";

/// The collation's order of two strings (module header): case-insensitive, trailing spaces
/// ignored. Equal strings have equal [`fold_text`] sequences, so key-lock hashes agree.
pub fn compare_text(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_end_matches(' '), b.trim_end_matches(' '));
    if a.is_ascii() && b.is_ascii() {
        // The same order as the characters' path below, without decoding them.
        let a_folded = a.bytes().map(|byte| byte.to_ascii_lowercase());
        return a_folded.cmp(b.bytes().map(|byte| byte.to_ascii_lowercase()));
    }
    fold_text(a).cmp(fold_text(b))
}

/// A string as the collation compares it, trailing spaces left out: its characters in lower
/// case.
pub fn fold_text(text: &str) -> impl Iterator<Item = char> + '_ {
    text.trim_end_matches(' ').chars().flat_map(char::to_lowercase)
}

/// Compares two keys column by column.
pub fn compare_keys(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match compare_values(x, y) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

/// A key as SQL Server prints it in 2627/2601 messages: `(v1, v2)`.
pub fn format_key(key: &[Value]) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|v| match v {
            Value::Null => "<NULL>".to_string(),
            Value::Int(n) => n.to_string(),
            Value::BigInt(n) => n.to_string(),
            Value::SmallInt(n) => n.to_string(),
            Value::TinyInt(n) => n.to_string(),
            Value::Text(s) => s.trim_end_matches(' ').to_string(),
            Value::Guid(g) => guid_to_string(g).to_ascii_lowercase(),
            other => format!("{other:?}"),
        })
        .collect();
    format!("({})", parts.join(", "))
}
