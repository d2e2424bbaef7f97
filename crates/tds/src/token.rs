//! Response tokens (MS-TDS 2.2.7) and the typed values of rows (2.2.5).
//!
//! | token | byte | layout |
//! |---|---|---|
//! | ENVCHANGE | 0xE3 | length u16, type u8, new value, old value |
//! | LOGINACK | 0xAD | length u16, interface u8, TDS version (4 bytes, big-endian), program name B_VARCHAR, version (4 bytes) |
//! | ERROR / INFO | 0xAA / 0xAB | length u16, number i32, state u8, class u8, message US_VARCHAR, server B_VARCHAR, procedure B_VARCHAR, line i32 |
//! | COLMETADATA | 0x81 | count u16, then per column: user type u32, flags u16, TYPE_INFO, name B_VARCHAR |
//! | ROW | 0xD1 | each column's value as its TYPE_INFO says |
//! | DONE | 0xFD | status u16, current command u16, row count u64 |
//!
//! Column types: a column's type is chosen from its first non-NULL value (INTN, BITN, FLTN,
//! DECIMALN, MONEYN, NVARCHAR, BIGVARBINARY, GUIDN, DATEN, TIMEN, DATETIME2N, DATETIMN); a
//! column with no value is NVARCHAR. A later value of another type is sent converted to text
//! in a text column, or refused with an error row if the column is not text.

#![allow(clippy::big_endian_bytes, reason = "LOGINACK carries the TDS version big-endian")]

use crate::utf16;
use engine::record::{SqlType, Value};

pub const ENVCHANGE: u8 = 0xE3;
pub const LOGINACK: u8 = 0xAD;
pub const ERROR: u8 = 0xAA;
pub const INFO: u8 = 0xAB;
pub const COLMETADATA: u8 = 0x81;
pub const ROW: u8 = 0xD1;
pub const DONE: u8 = 0xFD;
pub const DONEPROC: u8 = 0xFE;
pub const DONEINPROC: u8 = 0xFF;
pub const RETURNSTATUS: u8 = 0x79;
pub const RETURNVALUE: u8 = 0xAC;
pub const DONE_FINAL: u16 = 0x00;
pub const DONE_MORE: u16 = 0x01;
pub const DONE_ERROR: u16 = 0x02;
pub const DONE_COUNT: u16 = 0x10;
pub const DONE_ATTN: u16 = 0x20;
pub const ENV_DATABASE: u8 = 1;
pub const ENV_LANGUAGE: u8 = 2;
pub const ENV_PACKET_SIZE: u8 = 4;
pub const ENV_COLLATION: u8 = 7;
pub const ENV_BEGIN_TRAN: u8 = 8;
pub const ENV_COMMIT_TRAN: u8 = 9;
pub const ENV_ROLLBACK_TRAN: u8 = 10;
/// SQL_Latin1_General_CP1_CI_AS.
pub const COLLATION: [u8; 5] = [0x09, 0x04, 0xD0, 0x00, 0x34];
/// The server's name in ERROR and INFO tokens.
pub const SERVER_NAME: &str = "extentdb";

fn b_varchar(out: &mut Vec<u8>, text: &str) {
    let bytes = utf16(text);
    out.push((bytes.len() / 2).min(255) as u8);
    out.extend_from_slice(&bytes[..bytes.len().min(510)]);
}

fn us_varchar(out: &mut Vec<u8>, text: &str) {
    let bytes = utf16(text);
    let chars = (bytes.len() / 2).min(usize::from(u16::MAX));
    out.extend_from_slice(&(chars as u16).to_le_bytes());
    out.extend_from_slice(&bytes[..chars * 2]);
}

/// A token with a u16 length prefix after its type byte.
fn with_length(token: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 3);
    out.push(token);
    out.extend_from_slice(&(body.len() as u16).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// ENVCHANGE with text values (database, language, packet size).
pub fn env_change(kind: u8, new: &str, old: &str) -> Vec<u8> {
    let mut body = vec![kind];
    b_varchar(&mut body, new);
    b_varchar(&mut body, old);
    with_length(ENVCHANGE, &body)
}

/// ENVCHANGE of the SQL collation (binary values).
pub fn env_collation() -> Vec<u8> {
    let mut body = vec![ENV_COLLATION, COLLATION.len() as u8];
    body.extend_from_slice(&COLLATION);
    body.push(0);
    with_length(ENVCHANGE, &body)
}

/// ENVCHANGE 8 (begin: new value the descriptor), 9 (commit) or 10 (rollback: old value the
/// descriptor), with 8-byte binary values.
pub fn env_transaction(kind: u8, descriptor: u64) -> Vec<u8> {
    let mut body = vec![kind];
    let bytes = descriptor.to_le_bytes();
    if kind == ENV_BEGIN_TRAN {
        body.push(8);
        body.extend_from_slice(&bytes);
        body.push(0);
    } else {
        body.push(0);
        body.push(8);
        body.extend_from_slice(&bytes);
    }
    with_length(ENVCHANGE, &body)
}

/// LOGINACK: TDS 7.4, "Microsoft SQL Server" version 16.0.1000 (SQL Server 2022).
pub fn login_ack() -> Vec<u8> {
    let mut body = vec![1];
    body.extend_from_slice(&0x7400_0004u32.to_be_bytes());
    b_varchar(&mut body, "Microsoft SQL Server");
    body.extend_from_slice(&[16, 0, 0x03, 0xE8]);
    with_length(LOGINACK, &body)
}

/// An ERROR (class > 10) or INFO token.
pub fn message(
    number: i32,
    state: u8,
    class: u8,
    text: &str,
    procedure: &str,
    line: u32,
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&number.to_le_bytes());
    body.push(state);
    body.push(class);
    us_varchar(&mut body, text);
    b_varchar(&mut body, SERVER_NAME);
    b_varchar(&mut body, procedure);
    body.extend_from_slice(&line.to_le_bytes());
    with_length(if class > 10 { ERROR } else { INFO }, &body)
}

pub fn done(status: u16, row_count: u64) -> Vec<u8> {
    done_token(DONE, status, row_count)
}

/// DONE, DONEPROC (0xFE, the end of an RPC) or DONEINPROC (0xFF, a statement inside one).
pub fn done_token(token: u8, status: u16, row_count: u64) -> Vec<u8> {
    let mut out = vec![token];
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&row_count.to_le_bytes());
    out
}

/// The wire type of a result column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    Int(u8),
    Bit,
    Float(u8),
    Decimal {
        precision: u8,
        scale: u8,
    },
    Money,
    NVarChar,
    /// NVARCHAR(MAX), sent as partially length-prefixed (PLP) data: for text longer than
    /// 4,000 characters.
    NVarCharMax,
    VarBinary,
    Guid,
    Date,
    Time(u8),
    DateTime2(u8),
    DateTime,
}

impl WireType {
    /// The type of a value (None for NULL).
    pub fn of(value: &Value) -> Option<WireType> {
        Some(match value {
            Value::Null => return None,
            Value::TinyInt(_) => WireType::Int(1),
            Value::SmallInt(_) => WireType::Int(2),
            Value::Int(_) => WireType::Int(4),
            Value::BigInt(_) => WireType::Int(8),
            Value::Bit(_) => WireType::Bit,
            Value::Float(_) => WireType::Float(8),
            Value::Real(_) => WireType::Float(4),
            Value::Decimal(_, scale) => WireType::Decimal { precision: 38, scale: *scale },
            Value::Money(_) => WireType::Money,
            Value::Text(_) => WireType::NVarChar,
            Value::Bytes(_) => WireType::VarBinary,
            Value::Guid(_) => WireType::Guid,
            Value::Date(_) => WireType::Date,
            Value::Time(_) => WireType::Time(7),
            Value::DateTime2(..) => WireType::DateTime2(7),
            Value::DateTime(..) => WireType::DateTime,
        })
    }

    /// The column's type: its first non-NULL value's, else NVARCHAR.
    pub fn of_column(rows: &[Vec<Value>], column: usize) -> WireType {
        rows.iter().find_map(|r| r.get(column).and_then(WireType::of)).unwrap_or(WireType::NVarChar)
    }

    /// How a column of a declared type is sent. Deviations: char/varchar/nchar go as
    /// NVARCHAR and binary as VARBINARY (the values are Unicode text and bytes here), and
    /// time/datetime2 always with scale 7 (the values are in 100 ns units).
    pub fn of_declared(sql_type: SqlType) -> WireType {
        match sql_type {
            SqlType::TinyInt => WireType::Int(1),
            SqlType::SmallInt => WireType::Int(2),
            SqlType::Int => WireType::Int(4),
            SqlType::BigInt => WireType::Int(8),
            SqlType::Bit => WireType::Bit,
            SqlType::Decimal { precision, scale } => WireType::Decimal { precision, scale },
            SqlType::Float => WireType::Float(8),
            SqlType::Real => WireType::Float(4),
            SqlType::Money => WireType::Money,
            SqlType::Char(_) | SqlType::VarChar(_) | SqlType::NChar(_) | SqlType::NVarChar(_) => {
                WireType::NVarChar
            }
            SqlType::Binary(_) | SqlType::VarBinary(_) => WireType::VarBinary,
            SqlType::UniqueIdentifier => WireType::Guid,
            SqlType::Date => WireType::Date,
            SqlType::Time(_) => WireType::Time(7),
            SqlType::DateTime => WireType::DateTime,
            SqlType::DateTime2(_) => WireType::DateTime2(7),
        }
    }

    /// Whether `value` is sent as this type without conversion (NULL always is).
    fn carries(self, value: &Value) -> bool {
        match (self, WireType::of(value)) {
            (_, None) => true,
            (WireType::Decimal { scale, .. }, Some(WireType::Decimal { scale: s, .. })) => {
                scale == s
            }
            (wire, Some(of_value)) => wire == of_value,
        }
    }

    fn type_info(self, out: &mut Vec<u8>) {
        match self {
            WireType::Int(len) => out.extend_from_slice(&[0x26, len]),
            WireType::Bit => out.extend_from_slice(&[0x68, 1]),
            WireType::Float(len) => out.extend_from_slice(&[0x6D, len]),
            WireType::Decimal { precision, scale } => {
                out.extend_from_slice(&[0x6A, 17, precision, scale])
            }
            WireType::Money => out.extend_from_slice(&[0x6E, 8]),
            WireType::NVarChar => {
                out.push(0xE7);
                out.extend_from_slice(&8000u16.to_le_bytes());
                out.extend_from_slice(&COLLATION);
            }
            WireType::NVarCharMax => {
                out.push(0xE7);
                out.extend_from_slice(&0xFFFFu16.to_le_bytes());
                out.extend_from_slice(&COLLATION);
            }
            WireType::VarBinary => {
                out.push(0xA5);
                out.extend_from_slice(&8000u16.to_le_bytes());
            }
            WireType::Guid => out.extend_from_slice(&[0x24, 16]),
            WireType::Date => out.push(0x28),
            WireType::Time(scale) => out.extend_from_slice(&[0x29, scale]),
            WireType::DateTime2(scale) => out.extend_from_slice(&[0x2A, scale]),
            WireType::DateTime => out.extend_from_slice(&[0x6F, 8]),
        }
    }

    /// A value in this column's encoding; a value of another kind is converted to text for
    /// a text column, or None.
    fn encode(self, value: &Value, out: &mut Vec<u8>) -> Option<()> {
        if matches!(value, Value::Null) {
            match self {
                WireType::NVarCharMax => out.extend_from_slice(&u64::MAX.to_le_bytes()),
                WireType::NVarChar | WireType::VarBinary => {
                    out.extend_from_slice(&0xFFFFu16.to_le_bytes())
                }
                _ => out.push(0),
            }
            return Some(());
        }
        match (self, value) {
            (WireType::Int(1), Value::TinyInt(v)) => out.extend_from_slice(&[1, *v]),
            (WireType::Int(2), Value::SmallInt(v)) => sized(out, &v.to_le_bytes()),
            (WireType::Int(4), Value::Int(v)) => sized(out, &v.to_le_bytes()),
            (WireType::Int(8), Value::BigInt(v)) => sized(out, &v.to_le_bytes()),
            (WireType::Bit, Value::Bit(v)) => out.extend_from_slice(&[1, u8::from(*v)]),
            (WireType::Float(8), Value::Float(v)) => sized(out, &v.to_le_bytes()),
            (WireType::Float(4), Value::Real(v)) => sized(out, &v.to_le_bytes()),
            (WireType::Decimal { scale, .. }, Value::Decimal(unscaled, s)) if scale == *s => {
                out.push(17);
                out.push(u8::from(*unscaled >= 0));
                out.extend_from_slice(&unscaled.unsigned_abs().to_le_bytes());
            }
            (WireType::Money, Value::Money(v)) => {
                out.push(8);
                out.extend_from_slice(&((*v >> 32) as i32).to_le_bytes());
                out.extend_from_slice(&(*v as u32).to_le_bytes());
            }
            (WireType::VarBinary, Value::Bytes(bytes)) => {
                out.extend_from_slice(&(bytes.len().min(8000) as u16).to_le_bytes());
                out.extend_from_slice(&bytes[..bytes.len().min(8000)]);
            }
            (WireType::Guid, Value::Guid(bytes)) => sized(out, bytes),
            (WireType::Date, Value::Date(days)) => sized(out, &days.to_le_bytes()[..3]),
            (WireType::Time(_), Value::Time(units)) => sized(out, &units.to_le_bytes()[..5]),
            (WireType::DateTime2(_), Value::DateTime2(days, units)) => {
                let mut bytes = units.to_le_bytes()[..5].to_vec();
                bytes.extend_from_slice(&days.to_le_bytes()[..3]);
                sized(out, &bytes);
            }
            (WireType::DateTime, Value::DateTime(days, ticks)) => {
                let mut bytes = days.to_le_bytes().to_vec();
                bytes.extend_from_slice(&ticks.to_le_bytes());
                sized(out, &bytes);
            }
            (WireType::NVarCharMax, other) => {
                let text = utf16(&tsql::value::display(other));
                out.extend_from_slice(&(text.len() as u64).to_le_bytes());
                if !text.is_empty() {
                    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                    out.extend_from_slice(&text);
                }
                out.extend_from_slice(&0u32.to_le_bytes());
            }
            (WireType::NVarChar, other) => {
                let text = utf16(&tsql::value::display(other));
                let len = text.len().min(8000);
                out.extend_from_slice(&(len as u16).to_le_bytes());
                out.extend_from_slice(&text[..len]);
            }
            _ => return None,
        }
        Some(())
    }
}

fn sized(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(bytes.len() as u8);
    out.extend_from_slice(bytes);
}

/// RETURNSTATUS: a procedure's RETURN value.
pub fn return_status(status: i32) -> Vec<u8> {
    let mut out = vec![RETURNSTATUS];
    out.extend_from_slice(&status.to_le_bytes());
    out
}

/// RETURNVALUE: an OUTPUT parameter's value after the call (a NULL is sent as an INTN NULL).
pub fn return_value(ordinal: u16, name: &str, value: &Value) -> Vec<u8> {
    let wire = WireType::of(value).unwrap_or(WireType::Int(4));
    let mut out = vec![RETURNVALUE];
    out.extend_from_slice(&ordinal.to_le_bytes());
    b_varchar(&mut out, name);
    out.push(0x01);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0x0001u16.to_le_bytes());
    wire.type_info(&mut out);
    wire.encode(value, &mut out).expect("a value fits the type made from it");
    out
}

/// COLMETADATA for columns of these types and names.
pub fn col_metadata(columns: &[(String, WireType)]) -> Vec<u8> {
    let mut out = vec![COLMETADATA];
    out.extend_from_slice(&(columns.len() as u16).to_le_bytes());
    for (name, wire) in columns {
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0x0001u16.to_le_bytes()); // nullable
        wire.type_info(&mut out);
        b_varchar(&mut out, name);
    }
    out
}

/// A ROW; None if a value does not fit its column's type.
pub fn row(types: &[WireType], values: &[Value]) -> Option<Vec<u8>> {
    let mut out = vec![ROW];
    for (wire, value) in types.iter().zip(values) {
        wire.encode(value, &mut out)?;
    }
    Some(out)
}

/// A result set: COLMETADATA, then its rows. A column's type is its declared type (`declared`,
/// where the query names one) when every value is of it, so an empty or all-NULL column is
/// still described as `int` or `decimal(9,2)`; else its first non-NULL value's; a column whose
/// values change type is sent as NVARCHAR text.
pub fn result_set(
    columns: &[String],
    declared: &[Option<SqlType>],
    rows: &[Vec<Value>],
) -> Vec<u8> {
    let mut types: Vec<WireType> = Vec::with_capacity(columns.len());
    for c in 0..columns.len() {
        let by_declaration = declared.get(c).copied().flatten().map(WireType::of_declared);
        types.push(match by_declaration {
            Some(wire) if rows.iter().all(|r| r.get(c).is_none_or(|v| wire.carries(v))) => wire,
            _ => WireType::of_column(rows, c),
        });
    }
    for (c, wire) in types.iter_mut().enumerate() {
        let mixed = rows.iter().any(|r| r.get(c).is_some_and(|v| !wire.carries(v)));
        if mixed {
            *wire = WireType::NVarChar;
        }
        // Text longer than NVARCHAR(4000) holds goes as NVARCHAR(MAX), never cut (bug fix:
        // it was cut at 4,000 characters).
        let long = *wire == WireType::NVarChar
            && rows.iter().any(|r| match r.get(c) {
                Some(Value::Null) | None => false,
                Some(Value::Text(t)) => t.encode_utf16().count() > 4000,
                Some(other) => tsql::value::display(other).len() > 4000,
            });
        if long {
            *wire = WireType::NVarCharMax;
        }
    }
    let named: Vec<(String, WireType)> =
        columns.iter().cloned().zip(types.iter().copied()).collect();
    let mut out = col_metadata(&named);
    for values in rows {
        out.extend(
            row(&types, values).expect("every value fits its column after the NVARCHAR fallback"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_and_messages_have_their_layout() {
        assert_eq!(done(DONE_COUNT, 3), vec![0xFD, 0x10, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
        let error = message(208, 1, 16, "Invalid object name 't'.", "", 1);
        assert_eq!(error[0], ERROR);
        assert_eq!(u16::from_le_bytes([error[1], error[2]]) as usize, error.len() - 3);
        assert_eq!(i32::from_le_bytes([error[3], error[4], error[5], error[6]]), 208);
        assert_eq!(message(0, 1, 0, "hi", "", 1)[0], INFO);
    }

    #[test]
    fn values_encode_by_type_and_mixed_columns_fall_back_to_text() {
        let mut out = Vec::new();
        WireType::Int(4).encode(&Value::Int(42), &mut out).unwrap();
        assert_eq!(out, vec![4, 42, 0, 0, 0]);
        out.clear();
        WireType::Decimal { precision: 38, scale: 2 }
            .encode(&Value::Decimal(-150, 2), &mut out)
            .unwrap();
        assert_eq!(&out[..4], &[17, 0, 150, 0]);
        assert!(WireType::Int(4).encode(&Value::Text("x".into()), &mut Vec::new()).is_none());
        let rows = vec![vec![Value::Int(1)], vec![Value::Text("a".into())]];
        let set = result_set(&["c".into()], &[None], &rows);
        assert_eq!(set[0], COLMETADATA);
        assert_eq!(set[9], 0xE7, "the mixed column is NVARCHAR");
    }
}
