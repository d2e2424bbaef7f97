//! Values at the T-SQL level: conversions between types (CAST, CONVERT, implicit conversion
//! on insert), arithmetic with SQL Server's result types, comparison under a case-insensitive
//! collation, and how sqlcmd shows a value.
//!
//! Deviations: strings compare case-insensitively and ignoring trailing spaces, as
//! SQL_Latin1_General_CP1_CI_AS does, but by Unicode lower case rather than that collation's
//! tables; float and real arithmetic is IEEE double; decimal arithmetic keeps at most 38
//! digits and the larger scale of its operands (SQL Server's precision/scale rules for
//! multiplication and division are approximated by scale 6 for division).

use engine::SqlError;
use engine::record::{SqlType, Value, compare_guid, guid_from_str, guid_to_string};
use std::cmp::Ordering;

pub type Result<T> = std::result::Result<T, SqlError>;

/// A value's SQL Server type name, as conversion errors name it.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::TinyInt(_) => "tinyint",
        Value::SmallInt(_) => "smallint",
        Value::Int(_) => "int",
        Value::BigInt(_) => "bigint",
        Value::Bit(_) => "bit",
        Value::Decimal(..) => "numeric",
        Value::Float(_) => "float",
        Value::Real(_) => "real",
        Value::Money(_) => "money",
        Value::Text(_) => "varchar",
        Value::Bytes(_) => "varbinary",
        Value::Guid(_) => "uniqueidentifier",
        Value::Date(_) => "date",
        Value::Time(_) => "time",
        Value::DateTime(..) => "datetime",
        Value::DateTime2(..) => "datetime2",
    }
}

/// The name of a column type, as SQL Server spells it in messages.
pub fn sql_type_name(sql_type: SqlType) -> String {
    match sql_type {
        SqlType::TinyInt => "tinyint".into(),
        SqlType::SmallInt => "smallint".into(),
        SqlType::Int => "int".into(),
        SqlType::BigInt => "bigint".into(),
        SqlType::Bit => "bit".into(),
        SqlType::Decimal { .. } => "numeric".into(),
        SqlType::Float => "float".into(),
        SqlType::Real => "real".into(),
        SqlType::Money => "money".into(),
        SqlType::Char(_) => "char".into(),
        SqlType::VarChar(_) => "varchar".into(),
        SqlType::NChar(_) => "nchar".into(),
        SqlType::NVarChar(_) => "nvarchar".into(),
        SqlType::Binary(_) => "binary".into(),
        SqlType::VarBinary(_) => "varbinary".into(),
        SqlType::UniqueIdentifier => "uniqueidentifier".into(),
        SqlType::Date => "date".into(),
        SqlType::Time(_) => "time".into(),
        SqlType::DateTime => "datetime".into(),
        SqlType::DateTime2(_) => "datetime2".into(),
    }
}

fn conversion_failed(value: &Value, to: SqlType) -> SqlError {
    let shown = display(value);
    let from = type_name(value);
    match to {
        SqlType::Decimal { .. } | SqlType::Money => SqlError::new(
            8114,
            16,
            5,
            format!("Error converting data type {from} to {}.", sql_type_name(to)),
        ),
        SqlType::UniqueIdentifier => SqlError::new(
            8169,
            16,
            2,
            "Conversion failed when converting from a character string to uniqueidentifier.",
        ),
        SqlType::Date | SqlType::DateTime | SqlType::DateTime2(_) | SqlType::Time(_) => {
            SqlError::new(
                241,
                16,
                1,
                "Conversion failed when converting date and/or time from character string.",
            )
        }
        _ => SqlError::new(
            245,
            16,
            1,
            format!(
                "Conversion failed when converting the {from} value '{shown}' to data type {}.",
                sql_type_name(to)
            ),
        ),
    }
}

pub(crate) fn overflow(to: &str) -> SqlError {
    SqlError::new(
        8115,
        16,
        2,
        format!("Arithmetic overflow error converting expression to data type {to}."),
    )
}

/// The numeric rank of a value for arithmetic (higher wins), SQL Server's precedence.
fn rank(value: &Value) -> u8 {
    match value {
        Value::Bit(_) => 1,
        Value::TinyInt(_) => 2,
        Value::SmallInt(_) => 3,
        Value::Int(_) => 4,
        Value::BigInt(_) => 5,
        Value::Decimal(..) => 6,
        Value::Money(_) => 7,
        Value::Real(_) => 8,
        Value::Float(_) => 9,
        _ => 0,
    }
}

/// The bitwise operators of T-SQL: `&`, `|`, `^` (`op`) on two integer values, or `~` on one
/// (`right` None). The result has the wider operand's type (bit < tinyint < smallint < int <
/// bigint); any other type is 402, as in SQL Server (which also takes binary operands: not
/// here).
pub fn bitwise(op: char, left: &Value, right: Option<&Value>) -> Result<Value> {
    if matches!(left, Value::Null) || matches!(right, Some(Value::Null)) {
        return Ok(Value::Null);
    }
    let incompatible = |a: &Value, b: &Value| {
        SqlError::new(
            402,
            16,
            1,
            format!(
                "The data types {} and {} are incompatible in the '{op}' operator.",
                type_name(a),
                type_name(b)
            ),
        )
    };
    let integer = |v: &Value| (1..=5).contains(&rank(v));
    let widest = match right {
        Some(r) if !integer(left) || !integer(r) => return Err(incompatible(left, r)),
        Some(r) if rank(r) > rank(left) => r,
        Some(_) => left,
        None if !integer(left) => {
            return Err(SqlError::new(
                8117,
                16,
                1,
                format!("Operand data type {} is invalid for '~' operator.", type_name(left)),
            ));
        }
        None => left,
    };
    let a = as_i64(left).expect("an integer");
    let b = right.and_then(as_i64).unwrap_or(0);
    let result = match op {
        '&' => a & b,
        '|' => a | b,
        '^' => a ^ b,
        _ => !a,
    };
    Ok(match widest {
        Value::Bit(_) => Value::Bit(result & 1 == 1),
        Value::TinyInt(_) => Value::TinyInt(result as u8),
        Value::SmallInt(_) => Value::SmallInt(result as i16),
        Value::Int(_) => Value::Int(result as i32),
        _ => Value::BigInt(result),
    })
}

/// An integer value as i64.
pub fn as_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Bit(b) => Some(i64::from(*b)),
        Value::TinyInt(v) => Some(i64::from(*v)),
        Value::SmallInt(v) => Some(i64::from(*v)),
        Value::Int(v) => Some(i64::from(*v)),
        Value::BigInt(v) => Some(*v),
        _ => None,
    }
}

/// A numeric value as f64.
pub fn as_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Decimal(v, scale) => Some(*v as f64 / 10f64.powi(i32::from(*scale))),
        Value::Money(v) => Some(*v as f64 / 10_000.0),
        Value::Real(v) => Some(f64::from(*v)),
        Value::Float(v) => Some(*v),
        other => as_i64(other).map(|v| v as f64),
    }
}

/// A numeric value as (unscaled, scale).
fn as_decimal(value: &Value) -> Option<(i128, u8)> {
    match value {
        Value::Decimal(v, scale) => Some((*v, *scale)),
        Value::Money(v) => Some((i128::from(*v), 4)),
        other => as_i64(other).map(|v| (i128::from(v), 0)),
    }
}

/// Two numerics compared exactly, whatever their scales: at a common scale when both fit an
/// i128 there (10^37 at scale 38 does not), else whole parts first, then the fractions.
fn compare_decimal((x, sx): (i128, u8), (y, sy): (i128, u8)) -> Ordering {
    let scale = sx.max(sy);
    if let (Some(a), Some(b)) = (checked_rescale(x, sx, scale), checked_rescale(y, sy, scale)) {
        return a.cmp(&b);
    }
    let unit = |s: u8| 10i128.pow(u32::from(s));
    let (whole_x, whole_y) = (x / unit(sx), y / unit(sy));
    if whole_x != whole_y {
        return whole_x.cmp(&whole_y);
    }
    // Fractions are below 10^scale in magnitude: at scale 38 they still fit.
    let fraction = |v: i128, s: u8| (v % unit(s)) * 10i128.pow(u32::from(scale - s));
    fraction(x, sx).cmp(&fraction(y, sy))
}

/// `value` (at scale `from`) at scale `to`, rounded half away from zero; None if it does not
/// fit an i128.
fn checked_rescale(value: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        10i128.checked_pow(u32::from(to - from)).and_then(|factor| value.checked_mul(factor))
    } else {
        let Some(divisor) = 10i128.checked_pow(u32::from(from - to)) else { return Some(0) };
        let half = if value >= 0 { divisor / 2 } else { -divisor / 2 };
        Some(value.checked_add(half)? / divisor)
    }
}

/// The largest magnitude a numeric holds (38 digits), plus one.
const NUMERIC_LIMIT: i128 = 10i128.pow(38);

/// An arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

fn divide_by_zero() -> SqlError {
    SqlError::new(8134, 16, 1, "Divide by zero error encountered.")
}

/// `a op b` with SQL Server's result type (the operand of higher precedence; strings
/// concatenate with +).
pub fn arith(op: Arith, a: &Value, b: &Value) -> Result<Value> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Ok(Value::Null);
    }
    if let (Value::Text(x), Value::Text(y)) = (a, b)
        && op == Arith::Add
    {
        return Ok(Value::Text(format!("{x}{y}")));
    }
    if let (Value::DateTime(..) | Value::DateTime2(..) | Value::Date(_), _) = (a, b)
        && let (Some(days), Arith::Add | Arith::Sub) = (as_f64(b), op)
    {
        let sign = if op == Arith::Add { 1.0 } else { -1.0 };
        return crate::functions::add_days(a, sign * days);
    }
    let (a, b) = (numeric_operand(a)?, numeric_operand(b)?);
    let top = rank(&a).max(rank(&b));
    match top {
        0..=5 => {
            let (x, y) = (as_i64(&a).expect("integer"), as_i64(&b).expect("integer"));
            let result = match op {
                Arith::Add => x.checked_add(y),
                Arith::Sub => x.checked_sub(y),
                Arith::Mul => x.checked_mul(y),
                Arith::Div if y == 0 => return Err(divide_by_zero()),
                Arith::Div => x.checked_div(y),
                Arith::Mod if y == 0 => return Err(divide_by_zero()),
                Arith::Mod => x.checked_rem(y),
            };
            let result = result.ok_or_else(|| overflow("bigint"))?;
            if top == 5 {
                Ok(Value::BigInt(result))
            } else {
                i32::try_from(result).map(Value::Int).map_err(|_| overflow("int"))
            }
        }
        6 | 7 => {
            let ((x, sx), (y, sy)) = (as_decimal(&a).expect("num"), as_decimal(&b).expect("num"));
            let to_name = if top == 7 { "money" } else { "numeric" };
            let (value, scale) = decimal_arith(op, (x, sx), (y, sy))?;
            // Every step is checked: a result past 38 digits is 8115, as in SQL Server (it
            // wrapped around and gave a wrong number).
            let value =
                value.filter(|v| v.abs() < NUMERIC_LIMIT).ok_or_else(|| overflow(to_name))?;
            if top == 7 {
                let money = checked_rescale(value, scale, 4).and_then(|m| i64::try_from(m).ok());
                return money.map(Value::Money).ok_or_else(|| overflow("money"));
            }
            Ok(Value::Decimal(value, scale))
        }
        _ => {
            let (x, y) = (as_f64(&a).expect("num"), as_f64(&b).expect("num"));
            let result = match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div if y == 0.0 => return Err(divide_by_zero()),
                Arith::Div => x / y,
                Arith::Mod if y == 0.0 => return Err(divide_by_zero()),
                Arith::Mod => x % y,
            };
            if !result.is_finite() {
                return Err(overflow("float"));
            }
            Ok(Value::Float(result))
        }
    }
}

/// `x op y` for numerics, at the larger of the operands' scales (at least 2 for a product
/// and 6 for a quotient). The value is None when a step overflows.
fn decimal_arith(
    op: Arith,
    (x, sx): (i128, u8),
    (y, sy): (i128, u8),
) -> Result<(Option<i128>, u8)> {
    let scale = sx.max(sy);
    let (Some(x), Some(y)) = (checked_rescale(x, sx, scale), checked_rescale(y, sy, scale)) else {
        return Ok((None, scale));
    };
    Ok(match op {
        Arith::Add => (x.checked_add(y), scale),
        Arith::Sub => (x.checked_sub(y), scale),
        Arith::Mul => {
            let out_scale = scale.max(2);
            (x.checked_mul(y).and_then(|p| checked_rescale(p, scale * 2, out_scale)), out_scale)
        }
        Arith::Div if y == 0 => return Err(divide_by_zero()),
        Arith::Div => {
            let out_scale = scale.max(6);
            (checked_rescale(x, 0, out_scale).and_then(|n| n.checked_div(y)), out_scale)
        }
        Arith::Mod if y == 0 => return Err(divide_by_zero()),
        Arith::Mod => (x.checked_rem(y), scale),
    })
}

/// A string operand of arithmetic is converted to a number, as SQL Server converts varchar to
/// the numeric side's type.
fn numeric_operand(value: &Value) -> Result<Value> {
    match value {
        Value::Text(text) => {
            let trimmed = text.trim();
            if let Ok(v) = trimmed.parse::<i32>() {
                Ok(Value::Int(v))
            } else if let Some(d) = parse_decimal(trimmed) {
                Ok(Value::Decimal(d.0, d.1))
            } else {
                Err(conversion_failed(value, SqlType::Int))
            }
        }
        other if rank(other) > 0 => Ok(other.clone()),
        other => Err(SqlError::new(
            8117,
            16,
            1,
            format!("Operand data type {} is invalid for this operator.", type_name(other)),
        )),
    }
}

/// "12.50" as (1250, 2).
pub fn parse_decimal(text: &str) -> Option<(i128, u8)> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole.chars().chain(fraction.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let all = format!("{whole}{fraction}");
    let value: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
    let scale = u8::try_from(fraction.len()).ok()?;
    Some((if negative { -value } else { value }, scale))
}

/// Compares two non-NULL values (None if they cannot be compared).
pub fn compare(a: &Value, b: &Value) -> Result<Ordering> {
    match (a, b) {
        (Value::Text(x), Value::Text(y)) => Ok(compare_text(x, y)),
        (Value::Guid(x), Value::Guid(y)) => Ok(compare_guid(x, y)),
        (Value::Bytes(x), Value::Bytes(y)) => Ok(x.cmp(y)),
        (Value::Text(_), Value::Guid(_)) => compare(&convert(a, SqlType::UniqueIdentifier)?, b),
        (Value::Guid(_), Value::Text(_)) => compare(a, &convert(b, SqlType::UniqueIdentifier)?),
        (Value::Text(_), other) | (other, Value::Text(_)) if is_temporal(other) => {
            let (x, y) = (temporal_of(a)?, temporal_of(b)?);
            Ok(x.cmp(&y))
        }
        _ if is_temporal(a) && is_temporal(b) => Ok(temporal_of(a)?.cmp(&temporal_of(b)?)),
        (Value::Text(_), _) => compare(&numeric_operand(a)?, b),
        (_, Value::Text(_)) => compare(a, &numeric_operand(b)?),
        _ => {
            if let (Some(x), Some(y)) = (as_i64(a), as_i64(b)) {
                return Ok(x.cmp(&y));
            }
            if let (Some(x), Some(y)) = (as_decimal(a), as_decimal(b)) {
                return Ok(compare_decimal(x, y));
            }
            match (as_f64(a), as_f64(b)) {
                (Some(x), Some(y)) => Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal)),
                _ => Err(SqlError::new(
                    402,
                    16,
                    1,
                    format!(
                        "The data types {} and {} are incompatible in the equal to operator.",
                        type_name(a),
                        type_name(b)
                    ),
                )),
            }
        }
    }
}

/// Compares for ORDER BY, GROUP BY and DISTINCT: NULL first, incomparable values by type.
pub fn sort_compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => compare(a, b).unwrap_or_else(|_| type_name(a).cmp(type_name(b))),
    }
}

/// Case-insensitive comparison ignoring trailing spaces (module header): the engine's, so an
/// expression and an index agree.
pub fn compare_text(a: &str, b: &str) -> Ordering {
    engine::record::compare_text(a, b)
}

fn is_temporal(value: &Value) -> bool {
    matches!(value, Value::Date(_) | Value::DateTime(..) | Value::DateTime2(..) | Value::Time(_))
}

/// A temporal value as 100 ns ticks since 0001-01-01 (text is parsed as datetime2).
fn temporal_of(value: &Value) -> Result<i128> {
    let value = match value {
        Value::Text(_) => convert(value, SqlType::DateTime2(7))?,
        other => other.clone(),
    };
    crate::functions::ticks_of(&value)
        .ok_or_else(|| conversion_failed(&value, SqlType::DateTime2(7)))
}

/// Converts a value to a column type (CAST, CONVERT and the implicit conversion of INSERT and
/// UPDATE). Errors: 245, 8114, 8115, 8169, 241.
pub fn convert(value: &Value, to: SqlType) -> Result<Value> {
    if matches!(value, Value::Null) {
        return Ok(Value::Null);
    }
    match to {
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt => {
            convert_integer(value, to)
        }
        SqlType::Bit => match value {
            Value::Text(t) if t.trim().eq_ignore_ascii_case("true") => Ok(Value::Bit(true)),
            Value::Text(t) if t.trim().eq_ignore_ascii_case("false") => Ok(Value::Bit(false)),
            other => {
                let number = as_f64(&numeric_operand(other)?).unwrap_or(0.0);
                Ok(Value::Bit(number != 0.0))
            }
        },
        SqlType::Decimal { precision, scale } => {
            let (v, s) = match value {
                Value::Float(_) | Value::Real(_) => {
                    let f = as_f64(value).expect("float");
                    ((f * 10f64.powi(i32::from(scale))).round() as i128, scale)
                }
                Value::Text(t) => parse_decimal(t).ok_or_else(|| conversion_failed(value, to))?,
                other => as_decimal(other).ok_or_else(|| conversion_failed(value, to))?,
            };
            let v = checked_rescale(v, s, scale).unwrap_or(i128::MAX);
            if v.unsigned_abs() >= 10u128.pow(u32::from(precision)) {
                return Err(SqlError::new(
                    8115,
                    16,
                    8,
                    "Arithmetic overflow error converting numeric to data type numeric.",
                ));
            }
            Ok(Value::Decimal(v, scale))
        }
        SqlType::Money => {
            let as_dec = convert(value, SqlType::Decimal { precision: 19, scale: 4 })?;
            let Value::Decimal(v, _) = as_dec else { unreachable!("decimal") };
            Ok(Value::Money(v as i64))
        }
        SqlType::Float | SqlType::Real => {
            let f = match value {
                Value::Text(t) => {
                    t.trim().parse::<f64>().map_err(|_| conversion_failed(value, to))?
                }
                other => as_f64(other).ok_or_else(|| conversion_failed(value, to))?,
            };
            Ok(if to == SqlType::Real { Value::Real(f as f32) } else { Value::Float(f) })
        }
        SqlType::Char(n) | SqlType::VarChar(n) | SqlType::NChar(n) | SqlType::NVarChar(n) => {
            let mut text = display(value);
            if let (Value::Bytes(bytes), SqlType::Char(_) | SqlType::VarChar(_)) = (value, to) {
                text = bytes.iter().map(|b| char::from(*b)).collect();
            }
            let limit = usize::from(n);
            if n > 0 && text.chars().count() > limit {
                text = too_long_for_string(value, to, text, limit)?;
            }
            if matches!(to, SqlType::Char(_) | SqlType::NChar(_)) {
                let len = text.chars().count();
                text.extend(std::iter::repeat_n(' ', limit.saturating_sub(len)));
            }
            Ok(Value::Text(text))
        }
        SqlType::Binary(n) | SqlType::VarBinary(n) => {
            let mut bytes = match value {
                Value::Bytes(b) => b.clone(),
                Value::Text(t) => t.as_bytes().to_vec(),
                Value::Guid(g) => g.to_vec(),
                other => match as_i64(other) {
                    Some(v) => {
                        let width = integer_width(other);
                        (0..width).rev().map(|i| (v >> (8 * i)) as u8).collect()
                    }
                    None => return Err(conversion_failed(value, to)),
                },
            };
            bytes.truncate(usize::from(n));
            if let SqlType::Binary(n) = to {
                bytes.resize(usize::from(n), 0);
            }
            Ok(Value::Bytes(bytes))
        }
        SqlType::UniqueIdentifier => match value {
            Value::Guid(_) => Ok(value.clone()),
            Value::Text(t) => {
                guid_from_str(t.trim()).map(Value::Guid).ok_or_else(|| conversion_failed(value, to))
            }
            Value::Bytes(b) if b.len() == 16 => {
                Ok(Value::Guid(b.as_slice().try_into().expect("16 bytes")))
            }
            _ => Err(conversion_failed(value, to)),
        },
        SqlType::Date | SqlType::DateTime | SqlType::DateTime2(_) | SqlType::Time(_) => {
            crate::functions::convert_temporal(value, to)
                .ok_or_else(|| conversion_failed(value, to))
        }
    }
}

/// A value whose text does not fit a string type of `limit` characters, as SQL Server's CAST
/// treats it: an integer becomes `*` in char and varchar and is error 8115 in nchar and
/// nvarchar; a decimal, money or float is 8115 in any of them; anything else (a string, a
/// date) is cut to the limit.
fn too_long_for_string(value: &Value, to: SqlType, text: String, limit: usize) -> Result<String> {
    let unicode = matches!(to, SqlType::NChar(_) | SqlType::NVarChar(_));
    let target = sql_type_name(to);
    let overflow = |what: &str| {
        let message = format!("Arithmetic overflow error converting {what} to data type {target}.");
        Err(SqlError::new(8115, 16, 2, message))
    };
    match value {
        Value::TinyInt(_) | Value::SmallInt(_) | Value::Int(_) | Value::BigInt(_) if unicode => {
            overflow("expression")
        }
        Value::TinyInt(_) | Value::SmallInt(_) | Value::Int(_) | Value::BigInt(_) => {
            Ok("*".to_string())
        }
        Value::Decimal(..) => overflow("numeric"),
        Value::Money(_) => overflow("money"),
        Value::Float(_) | Value::Real(_) => overflow("float"),
        _ => Ok(text.chars().take(limit).collect()),
    }
}

fn integer_width(value: &Value) -> usize {
    match value {
        Value::Bit(_) | Value::TinyInt(_) => 1,
        Value::SmallInt(_) => 2,
        Value::Int(_) => 4,
        _ => 8,
    }
}

fn convert_integer(value: &Value, to: SqlType) -> Result<Value> {
    if let Value::Bytes(bytes) = value {
        return Ok(integer_from_binary(bytes, to));
    }
    let wide: i64 = match value {
        Value::Text(t) => {
            let t = t.trim();
            match t.parse::<i64>() {
                Ok(v) => v,
                Err(_) => return Err(conversion_failed(value, to)),
            }
        }
        Value::Decimal(v, scale) => {
            i64::try_from(*v / 10i128.pow(u32::from(*scale))).map_err(|_| overflow("int"))?
        }
        Value::Money(v) => *v / 10_000,
        Value::Float(_) | Value::Real(_) => {
            let f = as_f64(value).expect("float").trunc();
            if f.abs() > 9.2e18 {
                return Err(overflow(&sql_type_name(to)));
            }
            f as i64
        }
        other => as_i64(other).ok_or_else(|| conversion_failed(value, to))?,
    };
    let fail = || overflow(&sql_type_name(to));
    Ok(match to {
        SqlType::TinyInt => Value::TinyInt(u8::try_from(wide).map_err(|_| fail())?),
        SqlType::SmallInt => Value::SmallInt(i16::try_from(wide).map_err(|_| fail())?),
        SqlType::Int => Value::Int(i32::try_from(wide).map_err(|_| fail())?),
        _ => Value::BigInt(wide),
    })
}

/// A binary value converted to an integer type, as SQL Server converts one: its bytes read
/// most significant first, the rightmost bytes kept when there are more than the type holds
/// and zeros put on the left when fewer (CAST(0x0000000000000101 AS int) is 257, CAST(0xFFFF
/// AS smallint) -1); never an overflow (SQL Server 2000 Books Online, "Converting binary and
/// varbinary Data": other types convert to binary padded or truncated on the left).
fn integer_from_binary(bytes: &[u8], to: SqlType) -> Value {
    let width = match to {
        SqlType::TinyInt => 1,
        SqlType::SmallInt => 2,
        SqlType::Int => 4,
        _ => 8,
    };
    let kept = &bytes[bytes.len().saturating_sub(width)..];
    let mut unsigned: u64 = 0;
    for byte in kept {
        unsigned = (unsigned << 8) | u64::from(*byte);
    }
    match to {
        SqlType::TinyInt => Value::TinyInt(unsigned as u8),
        SqlType::SmallInt => Value::SmallInt(unsigned as u16 as i16),
        SqlType::Int => Value::Int(unsigned as u32 as i32),
        _ => Value::BigInt(unsigned as i64),
    }
}

/// A value as sqlcmd shows it.
pub fn display(value: &Value) -> String {
    match value {
        Value::Null => "NULL".into(),
        Value::Bit(b) => if *b { "1" } else { "0" }.into(),
        Value::TinyInt(v) => v.to_string(),
        Value::SmallInt(v) => v.to_string(),
        Value::Int(v) => v.to_string(),
        Value::BigInt(v) => v.to_string(),
        Value::Decimal(v, scale) => format_decimal(*v, *scale),
        Value::Money(v) => format_decimal(i128::from(*v), 4),
        Value::Float(v) => format_float(*v),
        // A real shows the shortest text that reads back as the same 32-bit value.
        Value::Real(v) if *v == v.trunc() && v.abs() < 1e7 => format!("{v:.0}"),
        Value::Real(v) => format!("{v}"),
        Value::Text(t) => t.clone(),
        Value::Bytes(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
            format!("0x{hex}")
        }
        Value::Guid(g) => guid_to_string(g),
        temporal => crate::functions::format_temporal(temporal),
    }
}

fn format_float(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v}") }
}

fn format_decimal(v: i128, scale: u8) -> String {
    if scale == 0 {
        return v.to_string();
    }
    let negative = v < 0;
    let digits = v.unsigned_abs().to_string();
    let scale = usize::from(scale);
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{}{whole}.{fraction}", if negative { "-" } else { "" })
}

/// A column type from a T-SQL type name and its arguments (`varchar`, [50]).
pub fn parse_type_name(name: &str, args: &[u64]) -> Option<SqlType> {
    let size = |default: u64| -> u16 { args.first().copied().unwrap_or(default).min(8000) as u16 };
    Some(match name.to_ascii_lowercase().as_str() {
        "tinyint" => SqlType::TinyInt,
        "smallint" => SqlType::SmallInt,
        "int" | "integer" => SqlType::Int,
        "bigint" => SqlType::BigInt,
        "bit" => SqlType::Bit,
        "decimal" | "numeric" | "dec" => SqlType::Decimal {
            precision: args.first().copied().unwrap_or(18).min(38) as u8,
            scale: args.get(1).copied().unwrap_or(0).min(38) as u8,
        },
        "float" => SqlType::Float,
        "real" => SqlType::Real,
        "money" => SqlType::Money,
        "char" | "character" => SqlType::Char(size(1)),
        "varchar" => SqlType::VarChar(size(1)),
        "nchar" => SqlType::NChar(size(1)),
        "nvarchar" => SqlType::NVarChar(size(1)),
        "binary" => SqlType::Binary(size(1)),
        "varbinary" => SqlType::VarBinary(size(1)),
        "uniqueidentifier" => SqlType::UniqueIdentifier,
        "date" => SqlType::Date,
        "time" => SqlType::Time(args.first().copied().unwrap_or(7).min(7) as u8),
        "datetime" | "smalldatetime" => SqlType::DateTime,
        "datetime2" => SqlType::DateTime2(args.first().copied().unwrap_or(7).min(7) as u8),
        "sysname" => SqlType::NVarChar(128),
        // Deviation: xml is its text, as nvarchar(4000): no parsing, schema or methods (enough
        // for DBA scripts that CAST a URL to xml to make it clickable).
        "xml" => SqlType::NVarChar(4000),
        _ => return None,
    })
}

/// True for a predicate's result that counts as true (NULL and false do not).
pub fn is_true(value: &Value) -> bool {
    match value {
        Value::Bit(b) => *b,
        Value::Null => false,
        other => as_f64(other).is_some_and(|v| v != 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_keeps_int_and_reports_overflow() {
        assert_eq!(arith(Arith::Add, &Value::Int(2), &Value::Int(3)).unwrap(), Value::Int(5));
        assert_eq!(arith(Arith::Div, &Value::Int(7), &Value::Int(2)).unwrap(), Value::Int(3));
        let e = arith(Arith::Mul, &Value::Int(i32::MAX), &Value::Int(2)).unwrap_err();
        assert_eq!(e.number, 8115);
        assert_eq!(arith(Arith::Div, &Value::Int(1), &Value::Int(0)).unwrap_err().number, 8134);
    }

    #[test]
    fn decimals_add_at_the_larger_scale() {
        let a = Value::Decimal(125, 2);
        let b = Value::Decimal(5, 1);
        assert_eq!(display(&arith(Arith::Add, &a, &b).unwrap()), "1.75");
        assert_eq!(
            display(
                &convert(
                    &Value::Text("3.14159".into()),
                    SqlType::Decimal { precision: 5, scale: 2 }
                )
                .unwrap()
            ),
            "3.14"
        );
    }

    #[test]
    fn conversions_fail_with_sql_server_numbers() {
        let e = convert(&Value::Text("abc".into()), SqlType::Int).unwrap_err();
        assert_eq!(
            (e.number, e.message.as_str()),
            (245, "Conversion failed when converting the varchar value 'abc' to data type int.")
        );
        assert_eq!(convert(&Value::Int(300), SqlType::TinyInt).unwrap_err().number, 8115);
    }

    #[test]
    fn text_compares_case_insensitively_ignoring_trailing_spaces() {
        assert_eq!(compare_text("abc  ", "ABC"), Ordering::Equal);
        assert_eq!(compare_text("a", "B"), Ordering::Less);
    }
}
