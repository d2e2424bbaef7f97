//! Built-in scalar functions (string, date, math, system) and the date and time arithmetic
//! behind them; the less common string functions are in [`crate::strings`].
//!
//! Deviation: DEGREES and RADIANS return float whatever their argument's type (SQL Server
//! keeps it: RADIANS(180) is 3), since an expression's declared type is not tracked here.
//!
//! Temporal values are kept at the T-SQL level with 7 fractional digits (100 ns units) for
//! time and datetime2, whatever their column's precision; [`to_storage`] and [`from_storage`]
//! rescale at the table's edge.

use crate::value::{self, Result, as_f64, as_i64, convert, display, overflow};
use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use engine::SqlError;
use engine::record::{SqlType, Value};

const TICKS_PER_SECOND: i128 = 10_000_000;
const TICKS_PER_DAY: i128 = 86_400 * TICKS_PER_SECOND;

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1, 1, 1).expect("valid")
}

fn epoch_1900() -> NaiveDate {
    NaiveDate::from_ymd_opt(1900, 1, 1).expect("valid")
}

/// A temporal value as 100 ns ticks since 0001-01-01 00:00.
pub fn ticks_of(value: &Value) -> Option<i128> {
    match value {
        Value::Date(days) => Some(i128::from(*days) * TICKS_PER_DAY),
        Value::Time(units) => Some(i128::from(*units)),
        Value::DateTime2(days, units) => {
            Some(i128::from(*days) * TICKS_PER_DAY + i128::from(*units))
        }
        Value::DateTime(days, three_hundredths) => {
            let base = (epoch_1900() - epoch()).num_days() as i128;
            let ticks = i128::from(*three_hundredths) * TICKS_PER_SECOND / 300;
            Some((base + i128::from(*days)) * TICKS_PER_DAY + ticks)
        }
        _ => None,
    }
}

/// A chrono date-time from a temporal value.
pub(crate) fn naive_of(value: &Value) -> Option<NaiveDateTime> {
    let ticks = ticks_of(value)?;
    let days = ticks.div_euclid(TICKS_PER_DAY);
    let rest = ticks.rem_euclid(TICKS_PER_DAY);
    let date = epoch() + Duration::days(days as i64);
    let time = NaiveTime::from_num_seconds_from_midnight_opt(
        (rest / TICKS_PER_SECOND) as u32,
        ((rest % TICKS_PER_SECOND) * 100) as u32,
    )?;
    Some(date.and_time(time))
}

/// A temporal value of the kind of `like` holding `at`.
fn temporal_like(like: &Value, at: NaiveDateTime) -> Value {
    let days = (at.date() - epoch()).num_days();
    let ticks = i128::from(at.time().num_seconds_from_midnight()) * TICKS_PER_SECOND
        + i128::from(at.time().nanosecond() / 100);
    match like {
        Value::Date(_) => Value::Date(days as u32),
        Value::Time(_) => Value::Time(ticks as u64),
        Value::DateTime(..) => {
            // Rounded to the nearest 1/300 s, as SQL Server stores a datetime (.123 is 37
            // ticks, shown .123; truncating made it 36, shown .120); 23:59:59.999 rounds into
            // the next day.
            let mut days_1900 = (at.date() - epoch_1900()).num_days() as i32;
            let ns = i128::from(at.time().num_seconds_from_midnight()) * 1_000_000_000
                + i128::from(at.time().nanosecond() % 1_000_000_000);
            let mut ticks = (ns * 300 + 500_000_000) / 1_000_000_000;
            if ticks >= 300 * 86_400 {
                days_1900 += 1;
                ticks -= 300 * 86_400;
            }
            Value::DateTime(days_1900, ticks as u32)
        }
        _ => Value::DateTime2(days as u32, ticks as u64),
    }
}

/// `at`, if the type of `like` can hold it (SQL Server's ranges: datetime from 1753-01-01,
/// date and datetime2 from 0001-01-01, all to 9999-12-31; a time holds any time of day).
fn within_range(like: &Value, at: NaiveDateTime) -> Option<NaiveDateTime> {
    let first_year = match like {
        Value::Time(_) => return Some(at),
        Value::DateTime(..) => 1753,
        _ => 1,
    };
    (first_year..=9999).contains(&at.year()).then_some(at)
}

/// Msg 517: a date or time moved past what its type holds.
fn date_overflow(like: &Value) -> SqlError {
    let type_name = match like {
        Value::Date(_) => "date",
        Value::Time(_) => "time",
        Value::DateTime(..) => "datetime",
        _ => "datetime2",
    };
    SqlError::new(
        517,
        16,
        1,
        format!("Adding a value to a '{type_name}' column caused an overflow."),
    )
}

/// `value + days` for datetime arithmetic; 517 past the type's range.
pub fn add_days(value: &Value, days: f64) -> Result<Value> {
    let at = naive_of(value).ok_or_else(|| invalid_arg("dateadd"))?;
    let shifted = Duration::try_milliseconds((days * 86_400_000.0).round() as i64)
        .and_then(|delta| at.checked_add_signed(delta))
        .and_then(|shifted| within_range(value, shifted))
        .ok_or_else(|| date_overflow(value))?;
    Ok(temporal_like(value, shifted))
}

fn parse_datetime(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    const FORMATS: [&str; 6] = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y%m%d %H:%M:%S%.f",
        "%m/%d/%Y %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ];
    for format in FORMATS {
        if let Ok(at) = NaiveDateTime::parse_from_str(text, format) {
            return Some(at);
        }
    }
    for format in ["%Y-%m-%d", "%Y%m%d", "%m/%d/%Y"] {
        if let Ok(date) = NaiveDate::parse_from_str(text, format) {
            return Some(date.and_hms_opt(0, 0, 0).expect("midnight"));
        }
    }
    for format in ["%H:%M:%S%.f", "%H:%M"] {
        if let Ok(time) = NaiveTime::parse_from_str(text, format) {
            return Some(epoch_1900().and_time(time));
        }
    }
    None
}

/// Converts text or another temporal value to a temporal type.
pub fn convert_temporal(value: &Value, to: SqlType) -> Option<Value> {
    let at = match value {
        Value::Text(text) => parse_datetime(text)?,
        other => naive_of(other)?,
    };
    let like = match to {
        SqlType::Date => Value::Date(0),
        SqlType::Time(_) => Value::Time(0),
        SqlType::DateTime => Value::DateTime(0, 0),
        _ => Value::DateTime2(0, 0),
    };
    Some(temporal_like(&like, at))
}

/// A temporal value as SQL Server shows it.
pub fn format_temporal(value: &Value) -> String {
    let Some(at) = naive_of(value) else { return String::new() };
    match value {
        Value::Date(_) => at.format("%Y-%m-%d").to_string(),
        Value::Time(_) => format!("{}{}", at.format("%H:%M:%S"), seven_digit_fraction(at)),
        Value::DateTime(_, ticks) => {
            format!("{}.{:03}", at.format("%Y-%m-%d %H:%M:%S"), datetime_ms(*ticks) % 1000)
        }
        _ => format!("{}{}", at.format("%Y-%m-%d %H:%M:%S"), seven_digit_fraction(at)),
    }
}

/// A datetime's time of day in milliseconds from its 1/300 s ticks, rounded as SQL Server
/// shows it: the thousandths end in 0, 3 or 7 (2 ticks are 6.67 ms, shown .007).
fn datetime_ms(ticks: u32) -> u32 {
    (ticks * 10 + 1) / 3
}

/// `.fffffff`: the fraction of a second in 100 ns units (chrono has no 7-digit format; bug
/// fix: asking it for `%.7f` panicked on every time and datetime2 shown as text).
fn seven_digit_fraction(at: NaiveDateTime) -> String {
    format!(".{:07}", at.nanosecond() % 1_000_000_000 / 100)
}

fn units_factor(precision: u8) -> u64 {
    10u64.pow(u32::from(7 - precision.min(7)))
}

/// A value read from a column of type `sql_type`, in the T-SQL level's units.
pub fn from_storage(value: Value, sql_type: SqlType) -> Value {
    match (value, sql_type) {
        (Value::Time(units), SqlType::Time(p)) => Value::Time(units * units_factor(p)),
        (Value::DateTime2(days, units), SqlType::DateTime2(p)) => {
            Value::DateTime2(days, units * units_factor(p))
        }
        (Value::Text(text), SqlType::Char(_) | SqlType::NChar(_)) => Value::Text(text),
        (other, _) => other,
    }
}

/// A value converted for a column of type `sql_type`, in the column's units.
pub fn to_storage(value: Value, sql_type: SqlType) -> Value {
    match (value, sql_type) {
        (Value::Time(units), SqlType::Time(p)) => Value::Time(units / units_factor(p)),
        (Value::DateTime2(days, units), SqlType::DateTime2(p)) => {
            Value::DateTime2(days, units / units_factor(p))
        }
        (other, _) => other,
    }
}

fn invalid_arg(function: &str) -> SqlError {
    SqlError::new(
        8116,
        16,
        1,
        format!("Argument data type is invalid for argument 1 of {function} function."),
    )
}

pub(crate) fn arg_count(function: &str, args: &[Value], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        return Err(SqlError::new(
            174,
            15,
            1,
            format!("The {function} function requires {min} argument(s)."),
        ));
    }
    Ok(())
}

fn text_arg(value: &Value) -> String {
    display(value)
}

fn int_arg(value: &Value) -> Result<i64> {
    match value {
        Value::Text(_) => as_i64(&convert(value, SqlType::BigInt)?).ok_or_else(|| invalid_arg("")),
        other => as_i64(other)
            .or_else(|| as_f64(other).map(|f| f.trunc() as i64))
            .ok_or_else(|| invalid_arg("")),
    }
}

/// GETDATE() and SYSDATETIME() at `now` (the instance's clock, which tests can fix).
pub fn current_time(name: &str, now: NaiveDateTime) -> Value {
    let like = if name == "SYSDATETIME" { Value::DateTime2(0, 0) } else { Value::DateTime(0, 0) };
    temporal_like(&like, now)
}

/// A date part name (DATEADD/DATEDIFF/DATEPART).
fn date_part(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "year" | "yy" | "yyyy" => "year",
        "quarter" | "qq" | "q" => "quarter",
        "month" | "mm" | "m" => "month",
        "dayofyear" | "dy" | "y" => "dayofyear",
        "day" | "dd" | "d" => "day",
        "week" | "wk" | "ww" => "week",
        "weekday" | "dw" => "weekday",
        "iso_week" | "isowk" | "isoww" => "iso_week",
        "hour" | "hh" => "hour",
        "minute" | "mi" | "n" => "minute",
        "second" | "ss" | "s" => "second",
        "millisecond" | "ms" => "millisecond",
        "microsecond" | "mcs" => "microsecond",
        "nanosecond" | "ns" => "nanosecond",
        _ => return None,
    })
}

fn bad_date_part(function: &str, part: &str) -> SqlError {
    SqlError::new(155, 15, 1, format!("'{part}' is not a recognized {function} option."))
}

fn temporal_arg(value: &Value) -> Result<Value> {
    match value {
        Value::Text(_) => convert(value, SqlType::DateTime),
        other if ticks_of(other).is_some() => Ok(other.clone()),
        _ => Err(invalid_arg("date")),
    }
}

fn date_add(part: &str, amount: i64, value: &Value) -> Result<Value> {
    let base = temporal_arg(value)?;
    let at = naive_of(&base).ok_or_else(|| invalid_arg("dateadd"))?;
    // Every step is checked: an amount as large as an int can take moves a date past any
    // calendar (DATEADD(day, 2147483647, ...) used to panic in the time arithmetic).
    let part = date_part(part).ok_or_else(|| bad_date_part("dateadd", part))?;
    let months = match part {
        "year" => Some(amount.checked_mul(12)),
        "quarter" => Some(amount.checked_mul(3)),
        "month" => Some(Some(amount)),
        _ => None,
    };
    let shifted = match months {
        Some(months) => months.and_then(|months| add_months(at, months)),
        None => time_span(part, amount).and_then(|span| at.checked_add_signed(span)),
    };
    let shifted = shifted
        .and_then(|shifted| within_range(&base, shifted))
        .ok_or_else(|| date_overflow(&base))?;
    Ok(temporal_like(&base, shifted))
}

/// `amount` of a day-or-shorter date part as a span; None past what a span holds.
fn time_span(part: &str, amount: i64) -> Option<Duration> {
    match part {
        "day" | "dayofyear" | "weekday" => Duration::try_days(amount),
        "week" => Duration::try_weeks(amount),
        "hour" => Duration::try_hours(amount),
        "minute" => Duration::try_minutes(amount),
        "second" => Duration::try_seconds(amount),
        "millisecond" => Duration::try_milliseconds(amount),
        "microsecond" => Some(Duration::microseconds(amount)),
        _ => Some(Duration::nanoseconds(amount)),
    }
}

fn add_months(at: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    if months >= 0 {
        at.checked_add_months(chrono::Months::new(u32::try_from(months).ok()?))
    } else {
        at.checked_sub_months(chrono::Months::new(u32::try_from(-months).ok()?))
    }
}

/// DATEDIFF counts boundaries crossed, as SQL Server does.
fn date_diff(part: &str, from: &Value, to: &Value) -> Result<Value> {
    let diff = date_diff_count(part, "datediff", from, to)?;
    i32::try_from(diff).map(Value::Int).map_err(|_| {
        SqlError::new(
            535,
            16,
            0,
            "The datediff function resulted in an overflow. The number of dateparts separating two date/time instances is too large. Try to use datediff with a less precise datepart.",
        )
    })
}

/// DATEDIFF's count of part boundaries crossed from `from` to `to`.
fn date_diff_count(part: &str, function: &str, from: &Value, to: &Value) -> Result<i64> {
    let (a, b) = (temporal_arg(from)?, temporal_arg(to)?);
    let (x, y) = (naive_of(&a).expect("temporal"), naive_of(&b).expect("temporal"));
    let ticks = |t: &NaiveDateTime| -> i128 {
        let days = (t.date() - epoch()).num_days() as i128;
        days * TICKS_PER_DAY
            + i128::from(t.time().num_seconds_from_midnight()) * TICKS_PER_SECOND
            + i128::from(t.time().nanosecond() / 100)
    };
    let per = |unit: i128| (ticks(&y).div_euclid(unit) - ticks(&x).div_euclid(unit)) as i64;
    let months = |t: &NaiveDateTime| i64::from(t.year()) * 12 + i64::from(t.month0());
    let diff = match date_part(part).ok_or_else(|| bad_date_part(function, part))? {
        "year" => i64::from(y.year() - x.year()),
        "quarter" => months(&y) / 3 - months(&x) / 3,
        "month" => months(&y) - months(&x),
        "day" | "dayofyear" | "weekday" => per(TICKS_PER_DAY),
        "week" => {
            let sunday_weeks =
                |t: &NaiveDateTime| ((t.date() - epoch()).num_days() + 1).div_euclid(7);
            sunday_weeks(&y) - sunday_weeks(&x)
        }
        "hour" => per(3600 * TICKS_PER_SECOND),
        "minute" => per(60 * TICKS_PER_SECOND),
        "second" => per(TICKS_PER_SECOND),
        "millisecond" => per(TICKS_PER_SECOND / 1000),
        "microsecond" => per(10),
        _ => per(1) * 100,
    };
    Ok(diff)
}

/// Msg 289: DATEFROMPARTS and its kin given a part out of range.
fn cannot_construct(type_name: &str) -> SqlError {
    SqlError::new(
        289,
        16,
        1,
        format!(
            "Cannot construct data type {type_name}, some of the arguments have values which are not valid."
        ),
    )
}

/// DATEFROMPARTS(year, month, day) and DATETIMEFROMPARTS(year, month, day, hour, minute,
/// seconds, milliseconds): NULL if any part is NULL, 289 if the parts make no valid value.
fn from_parts(function: &str, args: &[Value]) -> Result<Value> {
    let (type_name, like) = match function {
        "DATEFROMPARTS" => ("date", Value::Date(0)),
        _ => ("datetime", Value::DateTime(0, 0)),
    };
    let mut parts = Vec::with_capacity(args.len());
    for arg in args {
        match arg {
            Value::Null => return Ok(Value::Null),
            other => parts.push(int_arg(other)?),
        }
    }
    let part = |i: usize| parts.get(i).copied().unwrap_or(0);
    let u32_part = |i: usize| u32::try_from(part(i)).ok();
    let date = i32::try_from(part(0))
        .ok()
        .zip(u32_part(1).zip(u32_part(2)))
        .and_then(|(y, (m, d))| NaiveDate::from_ymd_opt(y, m, d));
    let time = u32_part(3).zip(u32_part(4)).zip(u32_part(5).zip(u32_part(6))).and_then(
        |((h, mi), (sec, ms))| {
            if ms > 999 { None } else { NaiveTime::from_hms_milli_opt(h, mi, sec, ms) }
        },
    );
    let at = date.zip(time).map(|(d, t)| d.and_time(t));
    at.and_then(|at| within_range(&like, at))
        .map(|at| temporal_like(&like, at))
        .ok_or_else(|| cannot_construct(type_name))
}

/// EOMONTH(date [, months to add]): the last day of that month, as a date.
fn end_of_month(args: &[Value]) -> Result<Value> {
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    let at = naive_of(&temporal_arg(&args[0])?).expect("temporal");
    let months = match args.get(1) {
        Some(n) => int_arg(n)?,
        None => 0,
    };
    let first = at.date().with_day(1).expect("day 1").and_hms_opt(0, 0, 0).expect("midnight");
    let next = add_months(first, months + 1).ok_or_else(|| date_overflow(&Value::Date(0)))?;
    let last = next - Duration::days(1);
    within_range(&Value::Date(0), last)
        .map(|last| temporal_like(&Value::Date(0), last))
        .ok_or_else(|| date_overflow(&Value::Date(0)))
}

/// ISDATE(text): 1 if the text converts to a datetime (1753-01-01 to 9999-12-31).
fn is_date(value: &Value) -> Value {
    let valid = match value {
        Value::Text(text) => {
            parse_datetime(text).and_then(|at| within_range(&Value::DateTime(0, 0), at)).is_some()
        }
        Value::Date(_) | Value::DateTime(..) | Value::DateTime2(..) => true,
        _ => false,
    };
    Value::Int(i32::from(valid))
}

/// The trigonometric and logarithm built-ins of one float argument (two for ATN2).
fn float_function(upper: &str, args: &[Value]) -> Result<Value> {
    let f = |i: usize| args.get(i).and_then(as_f64).unwrap_or(f64::NAN);
    let result = match upper {
        "LOG10" => f(0).log10(),
        "SIN" => f(0).sin(),
        "COS" => f(0).cos(),
        "TAN" => f(0).tan(),
        "COT" => 1.0 / f(0).tan(),
        "ASIN" => f(0).asin(),
        "ACOS" => f(0).acos(),
        "ATAN" => f(0).atan(),
        "ATN2" => f(0).atan2(f(1)),
        _ => return Err(invalid_arg(upper)),
    };
    finite(result)
}

/// SQL Server has no NaN or infinity to return: 3623 instead.
fn finite(result: f64) -> Result<Value> {
    if !result.is_finite() {
        return Err(SqlError::new(3623, 16, 1, "An invalid floating point operation occurred."));
    }
    Ok(Value::Float(result))
}

fn date_part_value(part: &str, value: &Value) -> Result<Value> {
    date_part_number(part, "datepart", value).map(Value::Int)
}

/// DATENAME: the month's and the weekday's English names (us_english), any other part as
/// DATEPART's number in text.
fn date_name(part: &str, value: &Value) -> Result<Value> {
    let at = naive_of(&temporal_arg(value)?).expect("temporal");
    let name = match date_part(part).ok_or_else(|| bad_date_part("datename", part))? {
        "month" => at.format("%B").to_string(),
        "weekday" => at.format("%A").to_string(),
        _ => date_part_number(part, "datename", value)?.to_string(),
    };
    Ok(Value::Text(name))
}

fn date_part_number(part: &str, function: &str, value: &Value) -> Result<i32> {
    let at = naive_of(&temporal_arg(value)?).expect("temporal");
    let n = match date_part(part).ok_or_else(|| bad_date_part(function, part))? {
        "year" => at.year(),
        "quarter" => (at.month0() / 3 + 1) as i32,
        "month" => at.month() as i32,
        "dayofyear" => at.ordinal() as i32,
        "day" => at.day() as i32,
        // Weeks start on Sunday (SET DATEFIRST 7), and week 1 holds January 1st.
        "week" => {
            let january_1st = at.date().with_ordinal(1).expect("day 1 of the year");
            let offset = january_1st.weekday().num_days_from_sunday();
            ((at.ordinal0() + offset) / 7 + 1) as i32
        }
        "iso_week" => at.iso_week().week() as i32,
        "weekday" => at.weekday().num_days_from_sunday() as i32 + 1,
        "hour" => at.hour() as i32,
        "minute" => at.minute() as i32,
        "second" => at.second() as i32,
        "millisecond" => (at.nanosecond() / 1_000_000) as i32,
        "microsecond" => (at.nanosecond() / 1000) as i32,
        _ => at.nanosecond() as i32,
    };
    Ok(n)
}

/// A character's uppercase when that is one character: SQL Server's UPPER keeps a string's
/// length (UPPER(N'ß') is N'ß', where Unicode's full mapping gives "SS").
fn upper_char(c: char) -> char {
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// A character's lowercase when that is one character (see [`upper_char`]).
fn lower_char(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// ROUND(value, digits[, function]): half away from zero, or toward zero when `truncate`.
fn round(value: &Value, digits: i64, truncate: bool) -> Result<Value> {
    match value {
        Value::Decimal(v, scale) => {
            let scale_i = i64::from(*scale);
            if digits >= scale_i {
                return Ok(value.clone());
            }
            let drop = u32::try_from(scale_i - digits).unwrap_or(38).min(38);
            let divisor = 10i128.pow(drop);
            let half = match (truncate, *v >= 0) {
                (true, _) => 0,
                (false, true) => divisor / 2,
                (false, false) => -divisor / 2,
            };
            // |v| < 10^38 and |half| <= 10^38 / 2: the sum fits an i128.
            Ok(Value::Decimal((v + half) / divisor * divisor, *scale))
        }
        Value::Float(_) | Value::Real(_) | Value::Money(_) => {
            let f = as_f64(value).expect("numeric");
            let factor = 10f64.powi(digits.clamp(-400, 400) as i32);
            let scaled = f * factor;
            let whole = if truncate { scaled.trunc() } else { scaled.round() };
            let rounded = whole / factor;
            // Digits far past the value's magnitude: 0 to the left, the value itself to the right.
            Ok(Value::Float(match (rounded.is_finite(), digits < 0) {
                (true, _) => rounded,
                (false, true) => 0.0,
                (false, false) => f,
            }))
        }
        other if as_i64(other).is_some() => {
            if digits >= 0 {
                return Ok(other.clone());
            }
            let v = as_i64(other).expect("integer");
            let Some(factor) = 10i64.checked_pow(u32::try_from(-digits).unwrap_or(19)) else {
                return Ok(Value::Int(0));
            };
            let half = if truncate { 0 } else { factor / 2 * v.signum() };
            let rounded = v.checked_add(half).ok_or_else(|| overflow("bigint"))? / factor * factor;
            convert(&Value::BigInt(rounded), SqlType::Int).or(Ok(Value::BigInt(rounded)))
        }
        _ => Err(invalid_arg("round")),
    }
}

/// Calls a built-in scalar function that needs no session state. None if `name` is not one.
pub fn call(name: &str, args: &[Value]) -> Option<Result<Value>> {
    let upper = name.to_ascii_uppercase();
    let nulls = args.iter().any(|a| matches!(a, Value::Null));
    let result = match upper.as_str() {
        "LEN" => arg_count(&upper, args, 1, 1).map(|()| {
            if nulls {
                Value::Null
            } else {
                Value::Int(text_arg(&args[0]).trim_end_matches(' ').chars().count() as i32)
            }
        }),
        "DATALENGTH" => arg_count(&upper, args, 1, 1).map(|()| datalength(&args[0])),
        "UPPER" | "LOWER" | "REVERSE" => arg_count(&upper, args, 1, 1).map(|()| {
            if nulls {
                return Value::Null;
            }
            let text = text_arg(&args[0]);
            Value::Text(match upper.as_str() {
                "UPPER" => text.chars().map(upper_char).collect(),
                "LOWER" => text.chars().map(lower_char).collect(),
                _ => text.chars().rev().collect(),
            })
        }),
        // LTRIM(text [, characters]), RTRIM and TRIM (TRIM([LEADING | TRAILING | BOTH]
        // [characters FROM] text) comes here with its characters second): spaces by default.
        "LTRIM" | "RTRIM" | "TRIM" => arg_count(&upper, args, 1, 2).map(|()| {
            if nulls {
                return Value::Null;
            }
            let text = text_arg(&args[0]);
            let characters: Vec<char> = match args.get(1) {
                Some(set) => text_arg(set).chars().collect(),
                None => vec![' '],
            };
            let trimmed = match upper.as_str() {
                "LTRIM" => text.trim_start_matches(&characters[..]),
                "RTRIM" => text.trim_end_matches(&characters[..]),
                _ => text.trim_matches(&characters[..]),
            };
            Value::Text(trimmed.to_string())
        }),
        "LEFT" | "RIGHT" => arg_count(&upper, args, 2, 2).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let text: Vec<char> = text_arg(&args[0]).chars().collect();
            let n = (int_arg(&args[1])?.max(0) as usize).min(text.len());
            let part = if upper == "LEFT" { &text[..n] } else { &text[text.len() - n..] };
            Ok(Value::Text(part.iter().collect()))
        }),
        "SUBSTRING" => arg_count(&upper, args, 3, 3).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let text: Vec<char> = text_arg(&args[0]).chars().collect();
            let start = int_arg(&args[1])?;
            let length = int_arg(&args[2])?;
            if length < 0 {
                return Err(SqlError::new(
                    537,
                    16,
                    3,
                    "Invalid length parameter passed to the LEFT or SUBSTRING function.",
                ));
            }
            let from = (start - 1).max(0) as usize;
            let to = ((start - 1 + length).max(0) as usize).min(text.len());
            Ok(Value::Text(if from >= to {
                String::new()
            } else {
                text[from..to].iter().collect()
            }))
        }),
        "REPLICATE" => arg_count(&upper, args, 2, 2).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let n = int_arg(&args[1])?;
            if n < 0 {
                return Ok(Value::Null);
            }
            // At most a varchar(max)'s 2^31 - 1 bytes (deviation: SQL Server also stops at 8,000
            // bytes when the string is not a max type, which values here do not record).
            let text = text_arg(&args[0]);
            let most = if text.is_empty() { 0 } else { i32::MAX as usize / text.len() };
            Ok(Value::Text(text.repeat((n as usize).min(most))))
        }),
        "REPLACE" => arg_count(&upper, args, 3, 3).map(|()| {
            if nulls {
                return Value::Null;
            }
            let (text, from, to) = (text_arg(&args[0]), text_arg(&args[1]), text_arg(&args[2]));
            Value::Text(if from.is_empty() { text } else { replace_ci(&text, &from, &to) })
        }),
        "CHARINDEX" => arg_count(&upper, args, 2, 3).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let needle = text_arg(&args[0]).to_lowercase();
            let hay: Vec<char> = text_arg(&args[1]).to_lowercase().chars().collect();
            let start = match args.get(2) {
                Some(s) => (int_arg(s)?.max(1) - 1) as usize,
                None => 0,
            };
            let needle: Vec<char> = needle.chars().collect();
            let found = (start..hay.len())
                .find(|i| hay[*i..].starts_with(&needle))
                .map_or(0, |i| i as i32 + 1);
            Ok(Value::Int(if needle.is_empty() { 0 } else { found }))
        }),
        "CONCAT" => Ok(Value::Text(
            args.iter().filter(|a| !matches!(a, Value::Null)).map(text_arg).collect(),
        )),
        // NULL for a negative count; at most 8,000 spaces (SQL Server's varchar limit for it).
        "SPACE" => arg_count(&upper, args, 1, 1).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let n = int_arg(&args[0])?;
            Ok(if n < 0 { Value::Null } else { Value::Text(" ".repeat(n.min(8000) as usize)) })
        }),
        // The absolute value of the smallest integer of a type does not fit it: 8115.
        "ABS" => arg_count(&upper, args, 1, 1).and_then(|()| match &args[0] {
            Value::Int(v) => v.checked_abs().map(Value::Int).ok_or_else(|| overflow("int")),
            Value::BigInt(v) => {
                v.checked_abs().map(Value::BigInt).ok_or_else(|| overflow("bigint"))
            }
            Value::SmallInt(v) => {
                v.checked_abs().map(Value::SmallInt).ok_or_else(|| overflow("smallint"))
            }
            Value::Decimal(v, s) => Ok(Value::Decimal(v.abs(), *s)),
            Value::Money(v) => v.checked_abs().map(Value::Money).ok_or_else(|| overflow("money")),
            Value::Null => Ok(Value::Null),
            other => Ok(Value::Float(as_f64(other).unwrap_or(0.0).abs())),
        }),
        "ROUND" => arg_count(&upper, args, 2, 3).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            // A third argument other than 0 truncates instead of rounding.
            let truncate = match args.get(2) {
                Some(function) => int_arg(function)? != 0,
                None => false,
            };
            round(&args[0], int_arg(&args[1])?, truncate)
        }),
        "FLOOR" | "CEILING" => arg_count(&upper, args, 1, 1).map(|()| match &args[0] {
            Value::Null => Value::Null,
            v if as_i64(v).is_some() => v.clone(),
            Value::Decimal(v, s) => {
                let d = 10i128.pow(u32::from(*s));
                let q = if upper == "FLOOR" { v.div_euclid(d) } else { -(-v).div_euclid(d) };
                Value::Decimal(q, 0)
            }
            other => {
                let f = as_f64(other).unwrap_or(0.0);
                Value::Float(if upper == "FLOOR" { f.floor() } else { f.ceil() })
            }
        }),
        "SQRT" | "SQUARE" | "POWER" | "LOG" | "EXP" => {
            let f = |i: usize| args.get(i).and_then(as_f64).unwrap_or(f64::NAN);
            arg_count(&upper, args, 1, 2).and_then(|()| {
                if nulls {
                    return Ok(Value::Null);
                }
                let result = match upper.as_str() {
                    "SQRT" => f(0).sqrt(),
                    "SQUARE" => f(0) * f(0),
                    "POWER" => f(0).powf(f(1)),
                    // LOG(x, base): the logarithm in that base.
                    "LOG" if args.len() == 2 => f(0).ln() / f(1).ln(),
                    "LOG" => f(0).ln(),
                    _ => f(0).exp(),
                };
                // SQRT(-1), LOG(0), EXP(1000): SQL Server has no NaN or infinity to return.
                if !result.is_finite() {
                    return Err(SqlError::new(
                        3623,
                        16,
                        1,
                        "An invalid floating point operation occurred.",
                    ));
                }
                Ok(Value::Float(result))
            })
        }
        "SIGN" => arg_count(&upper, args, 1, 1).map(|()| {
            as_f64(&args[0])
                .map_or(Value::Null, |f| Value::Int(f.signum() as i32 * i32::from(f != 0.0)))
        }),
        "ISNULL" => arg_count(&upper, args, 2, 2).map(|()| {
            if matches!(args[0], Value::Null) { args[1].clone() } else { args[0].clone() }
        }),
        "COALESCE" => {
            Ok(args.iter().find(|a| !matches!(a, Value::Null)).cloned().unwrap_or(Value::Null))
        }
        "NULLIF" => arg_count(&upper, args, 2, 2).and_then(|()| {
            if !nulls && value::compare(&args[0], &args[1])?.is_eq() {
                Ok(Value::Null)
            } else {
                Ok(args[0].clone())
            }
        }),
        "IIF" => arg_count(&upper, args, 3, 3)
            .map(|()| if value::is_true(&args[0]) { args[1].clone() } else { args[2].clone() }),
        "DATEADD" => arg_count(&upper, args, 3, 3).and_then(|()| {
            if matches!(args[1], Value::Null) || matches!(args[2], Value::Null) {
                return Ok(Value::Null);
            }
            date_add(&text_arg(&args[0]), int_arg(&args[1])?, &args[2])
        }),
        "DATEDIFF" => arg_count(&upper, args, 3, 3).and_then(|()| {
            if matches!(args[1], Value::Null) || matches!(args[2], Value::Null) {
                return Ok(Value::Null);
            }
            date_diff(&text_arg(&args[0]), &args[1], &args[2])
        }),
        "DATEPART" => arg_count(&upper, args, 2, 2).and_then(|()| {
            if matches!(args[1], Value::Null) {
                return Ok(Value::Null);
            }
            date_part_value(&text_arg(&args[0]), &args[1])
        }),
        "YEAR" | "MONTH" | "DAY" => arg_count(&upper, args, 1, 1).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            date_part_value(&upper, &args[0])
        }),
        "DATEDIFF_BIG" => arg_count(&upper, args, 3, 3).and_then(|()| {
            if matches!(args[1], Value::Null) || matches!(args[2], Value::Null) {
                return Ok(Value::Null);
            }
            date_diff_count(&text_arg(&args[0]), "datediff_big", &args[1], &args[2])
                .map(Value::BigInt)
        }),
        "DATENAME" => arg_count(&upper, args, 2, 2).and_then(|()| {
            if matches!(args[1], Value::Null) {
                return Ok(Value::Null);
            }
            date_name(&text_arg(&args[0]), &args[1])
        }),
        "DATEFROMPARTS" => arg_count(&upper, args, 3, 3).and_then(|()| from_parts(&upper, args)),
        "DATETIMEFROMPARTS" => {
            arg_count(&upper, args, 7, 7).and_then(|()| from_parts(&upper, args))
        }
        "EOMONTH" => arg_count(&upper, args, 1, 2).and_then(|()| end_of_month(args)),
        "FORMAT" => arg_count(&upper, args, 2, 3).and_then(|()| {
            if matches!(args[1], Value::Null) {
                return Ok(Value::Null);
            }
            let culture = args.get(2).map(display);
            crate::format::format(&args[0], &display(&args[1]), culture.as_deref())
        }),
        "ISDATE" => arg_count(&upper, args, 1, 1).map(|()| is_date(&args[0])),
        "PI" => arg_count(&upper, args, 0, 0).map(|()| Value::Float(std::f64::consts::PI)),
        "DEGREES" | "RADIANS" => arg_count(&upper, args, 1, 1).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let x = as_f64(&args[0]).ok_or_else(|| invalid_arg(&upper))?;
            finite(if upper == "DEGREES" { x.to_degrees() } else { x.to_radians() })
        }),
        "LOG10" | "SIN" | "COS" | "TAN" | "COT" | "ASIN" | "ACOS" | "ATAN" | "ATN2" => {
            let count = if upper == "ATN2" { 2 } else { 1 };
            arg_count(&upper, args, count, count)
                .and_then(|()| if nulls { Ok(Value::Null) } else { float_function(&upper, args) })
        }
        _ => return crate::strings::call(&upper, args),
    };
    Some(result)
}

fn replace_ci(text: &str, from: &str, to: &str) -> String {
    let lower_text = text.to_lowercase();
    let lower_from = from.to_lowercase();
    if lower_text.len() != text.len() {
        return text.replace(from, to);
    }
    let mut out = String::new();
    let mut at = 0;
    while let Some(found) = lower_text[at..].find(&lower_from) {
        out.push_str(&text[at..at + found]);
        out.push_str(to);
        at += found + from.len();
    }
    out.push_str(&text[at..]);
    out
}

/// DATALENGTH of a value whose type is not known (an expression the binder does not type):
/// text is taken as varchar, one byte per character (SQL Server's single-byte code pages);
/// a decimal as precision 18.
fn datalength(value: &Value) -> Value {
    let bytes = match value {
        Value::Null => return Value::Null,
        Value::Text(t) => t.chars().count(),
        Value::Bytes(b) => b.len(),
        Value::Bit(_) | Value::TinyInt(_) => 1,
        Value::SmallInt(_) => 2,
        Value::Int(_) | Value::Real(_) => 4,
        Value::Date(_) => 3,
        Value::Time(_) => 5,
        Value::Guid(_) => 16,
        Value::Decimal(..) => 9,
        Value::BigInt(_)
        | Value::Float(_)
        | Value::Money(_)
        | Value::DateTime(..)
        | Value::DateTime2(..) => 8,
    };
    Value::Int(i32::try_from(bytes).unwrap_or(i32::MAX))
}

/// DATALENGTH of a value of a known type: the bytes SQL Server stores for it. Unicode types
/// take two bytes per UTF-16 code unit, char and varchar one per character, fixed types their
/// size in the record (a decimal by its precision, time and datetime2 by theirs).
pub fn datalength_of(value: &Value, sql_type: SqlType) -> Value {
    let bytes = match (value, sql_type) {
        (Value::Null, _) => return Value::Null,
        (Value::Text(t), SqlType::NChar(_) | SqlType::NVarChar(_)) => 2 * t.encode_utf16().count(),
        (Value::Text(t), _) => t.chars().count(),
        (Value::Bytes(b), _) => b.len(),
        (_, SqlType::Bit) => 1,
        (_, fixed) => match fixed.fixed_size() {
            Some(size) => size,
            None => return datalength(value),
        },
    };
    Value::Int(i32::try_from(bytes).unwrap_or(i32::MAX))
}

/// CONVERT(char type, date or time, style): the text of `value` in SQL Server's `style` (the
/// common ones: 1-5, 10-12 and 101-105, 110-112 dates, 8/108 times, 20/120 and 21/121 ODBC,
/// 23, 126 ISO 8601; 0/100 and unknown styles are 281). None if `value` is not a date or time.
pub fn temporal_text(value: &Value, style: i64) -> Option<Result<String>> {
    if !matches!(
        value,
        Value::Date(_) | Value::Time(_) | Value::DateTime(..) | Value::DateTime2(..)
    ) {
        return None;
    }
    let at = naive_of(value)?;
    let (year4, year2) = (format!("{:04}", at.year()), format!("{:02}", at.year() % 100));
    let year = if style >= 100 { &year4 } else { &year2 };
    let (month, day) = (format!("{:02}", at.month()), format!("{:02}", at.day()));
    let time = format!("{:02}:{:02}:{:02}", at.hour(), at.minute(), at.second());
    // Fractions as the type keeps them: 3 digits for datetime, 7 for datetime2 and time.
    let fraction = match value {
        Value::DateTime(_, ticks) => format!(".{:03}", datetime_ms(*ticks) % 1000),
        _ => format!(".{:07}", at.nanosecond() / 100),
    };
    let text = match style {
        1 | 101 => format!("{month}/{day}/{year}"),
        2 | 102 => format!("{year}.{month}.{day}"),
        3 | 103 => format!("{day}/{month}/{year}"),
        4 | 104 => format!("{day}.{month}.{year}"),
        5 | 105 => format!("{day}-{month}-{year}"),
        10 | 110 => format!("{month}-{day}-{year}"),
        11 | 111 => format!("{year}/{month}/{day}"),
        12 | 112 => format!("{year}{month}{day}"),
        8 | 108 => time,
        20 | 120 => format!("{year4}-{month}-{day} {time}"),
        21 | 121 => format!("{year4}-{month}-{day} {time}{fraction}"),
        23 => format!("{year4}-{month}-{day}"),
        126 if at.nanosecond() == 0 => format!("{year4}-{month}-{day}T{time}"),
        126 => format!("{year4}-{month}-{day}T{time}{fraction}"),
        _ => {
            let from = value::type_name(value);
            return Some(Err(SqlError::new(
                281,
                16,
                1,
                format!(
                    "{style} is not a valid style number when converting from {from} to a character string."
                ),
            )));
        }
    };
    Some(Ok(text))
}
