//! RPC requests (MS-TDS 2.2.6.6): ALL_HEADERS, then the procedure (a u16 name length and its
//! UTF-16 name, or 0xFFFF and a ProcID), option flags u16, then parameters: name B_VARCHAR,
//! status u8 (0x01 OUTPUT), TYPE_INFO and the value.
//!
//! Parameter types decoded: INTN and INT1/2/4/8, BIT/BITN, FLT4/FLT8/FLTN, MONEY/MONEY4/MONEYN,
//! DECIMALN/NUMERICN, DATETIME/DATETIM4/DATETIMN, DATEN, TIMEN, DATETIME2N, GUIDN,
//! NVARCHAR/NCHAR/BIGVARCHAR/BIGCHAR (PLP for the (max) forms), NTEXT/TEXT, BIGVARBINARY/
//! BIGBINARY. Anything else is a protocol error (the connection closes).
//!
//! Deviation: one RPC per request (the batch separator 0xFF/0xFE is not followed).

use crate::{ProtocolError, from_utf16, malformed};
use engine::record::{SqlType, Value};

/// ProcIDs of the special procedures (MS-TDS 2.2.6.6).
pub const SP_EXECUTESQL: u16 = 10;
pub const SP_PREPARE: u16 = 11;
pub const SP_EXECUTE: u16 = 12;
pub const SP_PREPEXEC: u16 = 13;
pub const SP_UNPREPARE: u16 = 15;

/// The procedure an RPC names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Procedure {
    Id(u16),
    Name(String),
}

/// One decoded parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub output: bool,
    pub sql_type: SqlType,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rpc {
    pub procedure: Procedure,
    pub params: Vec<Param>,
}

/// A cursor over a message.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        let slice = self.bytes.get(self.at..self.at + n).ok_or_else(|| malformed("RPC"))?;
        self.at += n;
        Ok(slice)
    }
    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ProtocolError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, ProtocolError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, ProtocolError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// Decodes an RPC request message.
pub fn decode(payload: &[u8]) -> Result<Rpc, ProtocolError> {
    let body = crate::packet::after_all_headers(payload).ok_or_else(|| malformed("RPC headers"))?;
    let mut r = Reader { bytes: body, at: 0 };
    let name_len = r.u16()?;
    let procedure = if name_len == 0xFFFF {
        Procedure::Id(r.u16()?)
    } else {
        let bytes = r.take(2 * usize::from(name_len))?;
        Procedure::Name(from_utf16(bytes).ok_or_else(|| malformed("RPC name"))?)
    };
    let _options = r.u16()?;
    let mut params = Vec::new();
    while !r.done() {
        if matches!(r.bytes[r.at], 0xFF | 0xFE) {
            break; // another RPC in the same request: not followed (deviation above)
        }
        params.push(param(&mut r)?);
    }
    Ok(Rpc { procedure, params })
}

fn param(r: &mut Reader<'_>) -> Result<Param, ProtocolError> {
    let name_chars = usize::from(r.u8()?);
    let name =
        from_utf16(r.take(2 * name_chars)?).ok_or_else(|| malformed("RPC parameter name"))?;
    let status = r.u8()?;
    let (sql_type, value) = typed_value(r)?;
    Ok(Param { name, output: status & 0x01 != 0, sql_type, value })
}

/// A value with a byte length prefix (0 = NULL).
fn byte_len_value<'a>(r: &mut Reader<'a>) -> Result<Option<&'a [u8]>, ProtocolError> {
    let len = usize::from(r.u8()?);
    if len == 0 { Ok(None) } else { Ok(Some(r.take(len)?)) }
}

/// A partially length-prefixed value: u64 total (all ones = NULL), then u32-long chunks
/// ending with an empty one.
fn plp(r: &mut Reader<'_>) -> Result<Option<Vec<u8>>, ProtocolError> {
    if r.u64()? == u64::MAX {
        return Ok(None);
    }
    let mut data = Vec::new();
    loop {
        let chunk = r.u32()? as usize;
        if chunk == 0 {
            return Ok(Some(data));
        }
        data.extend_from_slice(r.take(chunk)?);
    }
}

fn int_of(bytes: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match bytes.len() {
        1 => Value::TinyInt(bytes[0]),
        2 => Value::SmallInt(i16::from_le_bytes([bytes[0], bytes[1]])),
        4 => Value::Int(i32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
        8 => Value::BigInt(i64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
        _ => return Err(malformed("integer parameter")),
    })
}

fn int_type(len: u8) -> Result<SqlType, ProtocolError> {
    Ok(match len {
        1 => SqlType::TinyInt,
        2 => SqlType::SmallInt,
        4 => SqlType::Int,
        8 => SqlType::BigInt,
        _ => return Err(malformed("integer type")),
    })
}

fn float_of(bytes: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match bytes.len() {
        4 => Value::Real(f32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
        8 => Value::Float(f64::from_le_bytes(bytes.try_into().expect("8 bytes"))),
        _ => return Err(malformed("float parameter")),
    })
}

fn money_of(bytes: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match bytes.len() {
        4 => Value::Money(i64::from(i32::from_le_bytes(bytes.try_into().expect("4 bytes")))),
        8 => {
            let high = i64::from(i32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")));
            let low = i64::from(u32::from_le_bytes(bytes[4..].try_into().expect("4 bytes")));
            Value::Money((high << 32) | low)
        }
        _ => return Err(malformed("money parameter")),
    })
}

fn datetime_of(bytes: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match bytes.len() {
        4 => {
            let days = u16::from_le_bytes([bytes[0], bytes[1]]);
            let minutes = u16::from_le_bytes([bytes[2], bytes[3]]);
            Value::DateTime(i32::from(days), u32::from(minutes) * 60 * 300)
        }
        8 => Value::DateTime(
            i32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")),
            u32::from_le_bytes(bytes[4..].try_into().expect("4 bytes")),
        ),
        _ => return Err(malformed("datetime parameter")),
    })
}

/// Little-endian unsigned integer of up to 8 bytes.
fn le_uint(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

/// Time units of scale `scale` as 100 ns units (the T-SQL layer's unit).
fn time_units(bytes: &[u8], scale: u8) -> u64 {
    le_uint(bytes) * 10u64.pow(u32::from(7 - scale.min(7)))
}

fn text_of(bytes: &[u8], unicode: bool) -> Result<Value, ProtocolError> {
    if unicode {
        from_utf16(bytes).map(Value::Text).ok_or_else(|| malformed("nvarchar parameter"))
    } else {
        Ok(Value::Text(bytes.iter().map(|b| char::from(*b)).collect()))
    }
}

fn or_null(value: Option<Result<Value, ProtocolError>>) -> Result<Value, ProtocolError> {
    value.unwrap_or(Ok(Value::Null))
}

/// TYPE_INFO and the value after it.
fn typed_value(r: &mut Reader<'_>) -> Result<(SqlType, Value), ProtocolError> {
    let type_id = r.u8()?;
    Ok(match type_id {
        0x30 | 0x34 | 0x38 | 0x7F => {
            let len = match type_id {
                0x30 => 1,
                0x34 => 2,
                0x38 => 4,
                _ => 8,
            };
            (int_type(len)?, int_of(r.take(usize::from(len))?)?)
        }
        0x32 => (SqlType::Bit, Value::Bit(r.u8()? != 0)),
        0x3B => (SqlType::Real, float_of(r.take(4)?)?),
        0x3E => (SqlType::Float, float_of(r.take(8)?)?),
        0x3C => (SqlType::Money, money_of(r.take(8)?)?),
        0x7A => (SqlType::Money, money_of(r.take(4)?)?),
        0x3D => (SqlType::DateTime, datetime_of(r.take(8)?)?),
        0x3A => (SqlType::DateTime, datetime_of(r.take(4)?)?),
        0x26 => {
            let len = r.u8()?;
            (int_type(len)?, or_null(byte_len_value(r)?.map(int_of))?)
        }
        0x68 => {
            r.u8()?;
            (SqlType::Bit, byte_len_value(r)?.map_or(Value::Null, |b| Value::Bit(b[0] != 0)))
        }
        0x6D => {
            let len = r.u8()?;
            let sql_type = if len == 4 { SqlType::Real } else { SqlType::Float };
            (sql_type, or_null(byte_len_value(r)?.map(float_of))?)
        }
        0x6E => {
            r.u8()?;
            (SqlType::Money, or_null(byte_len_value(r)?.map(money_of))?)
        }
        0x6F => {
            r.u8()?;
            (SqlType::DateTime, or_null(byte_len_value(r)?.map(datetime_of))?)
        }
        0x6A | 0x6C => {
            let (_len, precision, scale) = (r.u8()?, r.u8()?, r.u8()?);
            let value = match byte_len_value(r)? {
                None => Value::Null,
                Some(bytes) => {
                    let magnitude =
                        bytes[1..].iter().rev().fold(0i128, |acc, b| (acc << 8) | i128::from(*b));
                    Value::Decimal(if bytes[0] == 0 { -magnitude } else { magnitude }, scale)
                }
            };
            (SqlType::Decimal { precision: precision.clamp(1, 38), scale }, value)
        }
        0x24 => {
            r.u8()?;
            let value = match byte_len_value(r)? {
                None => Value::Null,
                Some(bytes) => Value::Guid(
                    bytes.try_into().map_err(|_| malformed("uniqueidentifier parameter"))?,
                ),
            };
            (SqlType::UniqueIdentifier, value)
        }
        0x28 => (
            SqlType::Date,
            byte_len_value(r)?.map_or(Value::Null, |b| Value::Date(le_uint(b) as u32)),
        ),
        0x29 => {
            let scale = r.u8()?;
            (
                SqlType::Time(7),
                byte_len_value(r)?.map_or(Value::Null, |b| Value::Time(time_units(b, scale))),
            )
        }
        0x2A => {
            let scale = r.u8()?;
            let value = match byte_len_value(r)? {
                None => Value::Null,
                Some(bytes) if bytes.len() > 3 => {
                    let (time, date) = bytes.split_at(bytes.len() - 3);
                    Value::DateTime2(le_uint(date) as u32, time_units(time, scale))
                }
                Some(_) => return Err(malformed("datetime2 parameter")),
            };
            (SqlType::DateTime2(7), value)
        }
        0xE7 | 0xEF | 0xA7 | 0xAF => {
            let max_len = r.u16()?;
            r.take(5)?; // collation
            let unicode = matches!(type_id, 0xE7 | 0xEF);
            let chars = if unicode { max_len / 2 } else { max_len };
            let sql_type = if unicode {
                SqlType::NVarChar(chars.clamp(1, 4000))
            } else {
                SqlType::VarChar(chars.clamp(1, 8000))
            };
            let bytes = if max_len == 0xFFFF {
                plp(r)?
            } else {
                let len = r.u16()?;
                if len == 0xFFFF { None } else { Some(r.take(usize::from(len))?.to_vec()) }
            };
            let sql_type = match sql_type {
                _ if max_len == 0xFFFF && unicode => SqlType::NVarChar(4000),
                _ if max_len == 0xFFFF => SqlType::VarChar(8000),
                other => other,
            };
            (sql_type, or_null(bytes.map(|b| text_of(&b, unicode)))?)
        }
        0x63 | 0x23 => {
            let _max_len = r.u32()?;
            r.take(5)?; // collation
            let len = r.u32()?;
            let unicode = type_id == 0x63;
            let value = if len == u32::MAX {
                Value::Null
            } else {
                text_of(r.take(len as usize)?, unicode)?
            };
            (if unicode { SqlType::NVarChar(4000) } else { SqlType::VarChar(8000) }, value)
        }
        0xA5 | 0xAD => {
            let max_len = r.u16()?;
            let bytes = if max_len == 0xFFFF {
                plp(r)?
            } else {
                let len = r.u16()?;
                if len == 0xFFFF { None } else { Some(r.take(usize::from(len))?.to_vec()) }
            };
            (SqlType::VarBinary(max_len.clamp(1, 8000)), bytes.map_or(Value::Null, Value::Bytes))
        }
        other => {
            return Err(ProtocolError(format!("RPC parameter type {other:#04x} is not supported")));
        }
    })
}

/// Encodes an RPC as a client would (tests and fuzz seeds): ProcID or name, then parameters
/// given as (name, output, TYPE_INFO and value bytes).
pub fn encode(procedure: &Procedure, params: &[(&str, bool, Vec<u8>)]) -> Vec<u8> {
    let mut out = crate::packet::ALL_HEADERS.to_vec();
    match procedure {
        Procedure::Id(id) => {
            out.extend_from_slice(&0xFFFFu16.to_le_bytes());
            out.extend_from_slice(&id.to_le_bytes());
        }
        Procedure::Name(name) => {
            out.extend_from_slice(&(name.encode_utf16().count() as u16).to_le_bytes());
            out.extend(crate::utf16(name));
        }
    }
    out.extend_from_slice(&0u16.to_le_bytes());
    for (name, output, typed) in params {
        out.push(name.encode_utf16().count() as u8);
        out.extend(crate::utf16(name));
        out.push(u8::from(*output));
        out.extend_from_slice(typed);
    }
    out
}

/// NVARCHAR(4000) TYPE_INFO and value of `text` (tests).
pub fn nvarchar_param(text: &str) -> Vec<u8> {
    let bytes = crate::utf16(text);
    let mut out = vec![0xE7];
    out.extend_from_slice(&8000u16.to_le_bytes());
    out.extend_from_slice(&crate::token::COLLATION);
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend(bytes);
    out
}

/// INTN(4) TYPE_INFO and value (tests).
pub fn int_param(value: Option<i32>) -> Vec<u8> {
    match value {
        Some(v) => {
            let mut out = vec![0x26, 4, 4];
            out.extend_from_slice(&v.to_le_bytes());
            out
        }
        None => vec![0x26, 4, 0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sp_executesql_with_parameters_decodes() {
        let bytes = encode(
            &Procedure::Id(SP_EXECUTESQL),
            &[
                ("", false, nvarchar_param("SELECT @P1 + 1")),
                ("", false, nvarchar_param("@P1 int")),
                ("@P1", false, int_param(Some(41))),
                ("@out", true, int_param(None)),
            ],
        );
        let rpc = decode(&bytes).unwrap();
        assert_eq!(rpc.procedure, Procedure::Id(SP_EXECUTESQL));
        assert_eq!(rpc.params[0].value, Value::Text("SELECT @P1 + 1".into()));
        assert_eq!(rpc.params[2].value, Value::Int(41));
        assert_eq!(rpc.params[2].name, "@P1");
        assert!(rpc.params[3].output && rpc.params[3].value == Value::Null);
    }

    #[test]
    fn truncated_and_unknown_parameters_are_errors() {
        let bytes = encode(&Procedure::Name("p".into()), &[("@a", false, int_param(Some(1)))]);
        for cut in 1..bytes.len() {
            let _ = decode(&bytes[..cut]); // never panics
        }
        assert!(decode(&bytes[..bytes.len() - 2]).is_err());
        let unknown = encode(&Procedure::Id(10), &[("", false, vec![0xF1, 0])]);
        assert!(decode(&unknown).is_err());
    }
}
