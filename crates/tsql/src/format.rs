//! FORMAT(value, format [, culture]): .NET's formatting of numbers and dates, as SQL Server
//! calls it, for the en-US culture (the default; SQL Server's sessions default to the
//! language's culture, us_english here).
//!
//! Built:
//! - numbers: the standard formats N, F, D, C, P and X with an optional precision (N2, D5),
//!   and custom patterns of `0`, `#`, `,` and `.` with literal text around them (`#,##0.00`,
//!   `0000`, `$#,##0`); a `%` in a custom pattern multiplies by 100. Midpoints round away
//!   from zero, as .NET does for decimals;
//! - dates and times: the custom patterns (yyyy, yy, MMMM, MMM, MM, M, dddd, ddd, dd, d, HH,
//!   H, hh, h, mm, m, ss, s, fff, ff, f, tt, quoted 'text' and \x escapes) and the standard
//!   formats d, D, t, T, g, G, f, F, s, m, y, o and u.
//!
//! As in SQL Server, a format that cannot be applied returns NULL, a culture other than en-US
//! (or the invariant culture, '') is 9818, and a value that is neither a number nor a date or
//! time is 8116.
//!
//! Deviation: other cultures and the remaining .NET formats (E, R, exponent patterns, section
//! separators `;`) are not built; they return NULL or 9818.

use crate::value::{Result, as_f64};
use chrono::{Datelike, NaiveDateTime, Timelike};
use engine::SqlError;
use engine::record::Value;

/// FORMAT's result for `value` with `pattern` in `culture`.
pub fn format(value: &Value, pattern: &str, culture: Option<&str>) -> Result<Value> {
    if let Some(culture) = culture
        && !["", "en-US", "en-us"].contains(&culture)
    {
        return Err(SqlError::new(
            9818,
            16,
            1,
            format!(
                "The culture parameter '{culture}' provided in the function call is not supported."
            ),
        ));
    }
    let text = match value {
        Value::Null => return Ok(Value::Null),
        Value::Date(_) | Value::Time(_) | Value::DateTime(..) | Value::DateTime2(..) => {
            let at = crate::functions::naive_of(value).expect("a temporal value");
            format_date(at, pattern)
        }
        Value::Text(_) | Value::Bytes(_) | Value::Guid(_) => {
            return Err(SqlError::new(
                8116,
                16,
                1,
                "Argument data type varchar is invalid for argument 1 of format function.",
            ));
        }
        number => format_number(number, pattern),
    };
    Ok(text.map_or(Value::Null, Value::Text))
}

/// A number as an exact decimal: digits and scale (for rounding without binary error).
fn exact(value: &Value) -> Option<(i128, u32)> {
    match value {
        Value::TinyInt(v) => Some((i128::from(*v), 0)),
        Value::SmallInt(v) => Some((i128::from(*v), 0)),
        Value::Int(v) => Some((i128::from(*v), 0)),
        Value::BigInt(v) => Some((i128::from(*v), 0)),
        Value::Bit(v) => Some((i128::from(*v), 0)),
        Value::Decimal(v, scale) => Some((*v, u32::from(*scale))),
        Value::Money(v) => Some((i128::from(*v), 4)),
        Value::Float(_) | Value::Real(_) => {
            // .NET formats a double from its 15 significant digits.
            let f = as_f64(value)?;
            if !f.is_finite() {
                return None;
            }
            let text = format!("{:.*e}", 14, f);
            let (mantissa, exponent) = text.split_once('e')?;
            let exponent: i32 = exponent.parse().ok()?;
            let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let mut unscaled: i128 = digits.parse().ok()?;
            if f < 0.0 {
                unscaled = -unscaled;
            }
            let scale = 14 - exponent;
            if scale >= 0 {
                Some((unscaled, scale as u32))
            } else {
                Some((unscaled.checked_mul(10i128.checked_pow((-scale) as u32)?)?, 0))
            }
        }
        _ => None,
    }
}

/// `|unscaled| / 10^scale` rounded to `places`, away from zero: (integer digits, fraction
/// digits) as text, and whether it is negative.
fn rounded(unscaled: i128, scale: u32, places: u32) -> (String, String, bool) {
    let negative = unscaled < 0;
    let mut magnitude = unscaled.unsigned_abs();
    if scale > places {
        let divisor = 10u128.pow(scale - places);
        let (quotient, remainder) = (magnitude / divisor, magnitude % divisor);
        magnitude = quotient + u128::from(remainder * 2 >= divisor);
    } else {
        magnitude *= 10u128.pow(places - scale);
    }
    let text = format!("{magnitude:0>width$}", width = places as usize + 1);
    let (int, frac) = text.split_at(text.len() - places as usize);
    (int.to_string(), frac.to_string(), negative && magnitude != 0)
}

fn group_thousands(int: &str) -> String {
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn join(int: &str, frac: &str) -> String {
    if frac.is_empty() { int.to_string() } else { format!("{int}.{frac}") }
}

fn format_number(value: &Value, pattern: &str) -> Option<String> {
    let (unscaled, scale) = exact(value)?;
    let mut chars = pattern.chars();
    let kind = chars.next()?.to_ascii_uppercase();
    let rest = chars.as_str();
    let standard =
        "NFDCPX".contains(kind) && rest.len() <= 2 && rest.chars().all(|c| c.is_ascii_digit());
    if !standard {
        return format_custom_number(unscaled, scale, pattern);
    }
    let precision: Option<u32> = rest.parse().ok();
    let sign = |negative: bool| if negative { "-" } else { "" };
    Some(match kind {
        'N' | 'F' => {
            let (int, frac, negative) = rounded(unscaled, scale, precision.unwrap_or(2));
            let int = if kind == 'N' { group_thousands(&int) } else { int };
            format!("{}{}", sign(negative), join(&int, &frac))
        }
        'D' => {
            if scale > 0 && unscaled % 10i128.pow(scale) != 0 || !is_integer(value) {
                return None;
            }
            let width = precision.unwrap_or(0) as usize;
            format!("{}{:0>width$}", sign(unscaled < 0), unscaled.unsigned_abs())
        }
        'C' => {
            let (int, frac, negative) = rounded(unscaled, scale, precision.unwrap_or(2));
            let amount = format!("${}", join(&group_thousands(&int), &frac));
            if negative { format!("({amount})") } else { amount }
        }
        'P' => {
            let (int, frac, negative) = rounded(unscaled * 100, scale, precision.unwrap_or(2));
            format!("{}{} %", sign(negative), join(&group_thousands(&int), &frac))
        }
        'X' => {
            if !is_integer(value) {
                return None;
            }
            let width = precision.unwrap_or(0) as usize;
            let bits = match value {
                Value::TinyInt(v) => format!("{v:X}"),
                Value::SmallInt(v) => format!("{v:X}"),
                Value::Int(v) => format!("{v:X}"),
                Value::BigInt(v) => format!("{v:X}"),
                _ => format!("{unscaled:X}"),
            };
            let bits = if kind == pattern.chars().next()? { bits } else { bits.to_lowercase() };
            format!("{bits:0>width$}")
        }
        _ => return None,
    })
}

fn is_integer(value: &Value) -> bool {
    matches!(
        value,
        Value::TinyInt(_) | Value::SmallInt(_) | Value::Int(_) | Value::BigInt(_) | Value::Bit(_)
    )
}

/// A custom numeric pattern: literal text, then the digits part (`0`, `#`, `,`, `.`), then
/// literal text; `%` in the pattern multiplies by 100.
fn format_custom_number(unscaled: i128, scale: u32, pattern: &str) -> Option<String> {
    let is_digit_char = |c: char| matches!(c, '0' | '#' | ',' | '.');
    let start = pattern.find(is_digit_char)?;
    let end = pattern.rfind(is_digit_char)? + 1;
    let (prefix, digits, suffix) = (&pattern[..start], &pattern[start..end], &pattern[end..]);
    if !digits.chars().all(is_digit_char) || pattern.contains(';') {
        return None;
    }
    let unscaled = if pattern.contains('%') { unscaled.checked_mul(100)? } else { unscaled };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    let places = frac_part.chars().filter(|c| *c == '0' || *c == '#').count() as u32;
    let required_places = frac_part.chars().filter(|c| *c == '0').count();
    let (int, frac, negative) = rounded(unscaled, scale, places);
    let mut frac = frac;
    while frac.len() > required_places && frac.ends_with('0') {
        frac.pop();
    }
    let min_int = int_part.chars().filter(|c| *c == '0').count();
    let int = int.trim_start_matches('0');
    let int = format!("{int:0>min_int$}");
    let int = if int_part.contains(',') { group_thousands(&int) } else { int };
    let sign = if negative { "-" } else { "" };
    Some(format!("{sign}{prefix}{}{suffix}", join(&int, &frac)))
}

fn format_date(at: NaiveDateTime, pattern: &str) -> Option<String> {
    let standard = match pattern {
        "d" => Some("M/d/yyyy"),
        "D" => Some("dddd, MMMM d, yyyy"),
        "t" => Some("h:mm tt"),
        "T" => Some("h:mm:ss tt"),
        "g" => Some("M/d/yyyy h:mm tt"),
        "G" => Some("M/d/yyyy h:mm:ss tt"),
        "f" => Some("dddd, MMMM d, yyyy h:mm tt"),
        "F" => Some("dddd, MMMM d, yyyy h:mm:ss tt"),
        "s" => Some("yyyy-MM-ddTHH:mm:ss"),
        "m" | "M" => Some("MMMM d"),
        "y" | "Y" => Some("MMMM yyyy"),
        "o" | "O" => Some("yyyy-MM-ddTHH:mm:ss.fffffff"),
        "u" => Some("yyyy-MM-dd HH:mm:ssZ"),
        _ if pattern.chars().count() == 1 => return None,
        _ => None,
    };
    Some(custom_date(at, standard.unwrap_or(pattern)))
}

/// .NET's custom date and time format: runs of a pattern letter are fields, quoted text and
/// `\`-escaped characters are literal, and anything else is copied.
fn custom_date(at: NaiveDateTime, pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            let close =
                chars[i + 1..].iter().position(|d| *d == c).map_or(chars.len(), |p| i + 1 + p);
            out.extend(&chars[i + 1..close.min(chars.len())]);
            i = close + 1;
            continue;
        }
        if c == '\\' {
            if let Some(next) = chars.get(i + 1) {
                out.push(*next);
            }
            i += 2;
            continue;
        }
        let run = chars[i..].iter().take_while(|d| **d == c).count();
        out.push_str(&date_field(at, c, run).unwrap_or_else(|| chars[i..i + run].iter().collect()));
        i += run;
    }
    out
}

fn date_field(at: NaiveDateTime, letter: char, run: usize) -> Option<String> {
    let hour12 = match at.hour() % 12 {
        0 => 12,
        h => h,
    };
    Some(match (letter, run) {
        ('y', 1) => format!("{}", at.year() % 100),
        ('y', 2) => format!("{:02}", at.year() % 100),
        ('y', n) => format!("{:0n$}", at.year()),
        ('M', 1) => at.month().to_string(),
        ('M', 2) => format!("{:02}", at.month()),
        ('M', 3) => at.format("%b").to_string(),
        ('M', _) => at.format("%B").to_string(),
        ('d', 1) => at.day().to_string(),
        ('d', 2) => format!("{:02}", at.day()),
        ('d', 3) => at.format("%a").to_string(),
        ('d', _) => at.format("%A").to_string(),
        ('H', 1) => at.hour().to_string(),
        ('H', _) => format!("{:02}", at.hour()),
        ('h', 1) => hour12.to_string(),
        ('h', _) => format!("{hour12:02}"),
        ('m', 1) => at.minute().to_string(),
        ('m', _) => format!("{:02}", at.minute()),
        ('s', 1) => at.second().to_string(),
        ('s', _) => format!("{:02}", at.second()),
        ('f', n) if n <= 7 => {
            let fraction = format!("{:09}", at.nanosecond());
            fraction[..n].to_string()
        }
        ('t', 1) => (if at.hour() < 12 { "A" } else { "P" }).to_string(),
        ('t', _) => (if at.hour() < 12 { "AM" } else { "PM" }).to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(value: Value, pattern: &str) -> Option<String> {
        match format(&value, pattern, None).unwrap() {
            Value::Text(text) => Some(text),
            _ => None,
        }
    }

    #[test]
    fn numbers_take_dotnets_standard_and_custom_formats() {
        assert_eq!(number(Value::Decimal(1234567891, 3), "N2").as_deref(), Some("1,234,567.89"));
        assert_eq!(
            number(Value::Decimal(2345, 3), "N2").as_deref(),
            Some("2.35"),
            "away from zero"
        );
        assert_eq!(number(Value::Int(-1234), "N0").as_deref(), Some("-1,234"));
        assert_eq!(number(Value::Int(42), "D5").as_deref(), Some("00042"));
        assert_eq!(number(Value::Money(-12_345_000), "C").as_deref(), Some("($1,234.50)"));
        assert_eq!(number(Value::Float(0.1234), "P1").as_deref(), Some("12.3 %"));
        assert_eq!(number(Value::Int(255), "X4").as_deref(), Some("00FF"));
        assert_eq!(number(Value::Int(255), "x").as_deref(), Some("ff"));
        assert_eq!(
            number(Value::Decimal(123456789, 2), "#,##0.00").as_deref(),
            Some("1,234,567.89")
        );
        assert_eq!(number(Value::Int(7), "0000").as_deref(), Some("0007"));
        assert_eq!(number(Value::Float(3.5), "$#,##0").as_deref(), Some("$4"));
        assert_eq!(number(Value::Float(1.5), "0.##").as_deref(), Some("1.5"));
        assert_eq!(number(Value::Decimal(15, 1), "D"), None, "D is for integers");
    }

    #[test]
    fn dates_take_custom_and_standard_patterns() {
        let at = NaiveDateTime::parse_from_str("2024-03-05 14:07:09.123", "%Y-%m-%d %H:%M:%S%.3f")
            .unwrap();
        assert_eq!(custom_date(at, "yyyy-MM-dd HH:mm:ss.fff"), "2024-03-05 14:07:09.123");
        assert_eq!(custom_date(at, "dd/MM/yy h:mm tt"), "05/03/24 2:07 PM");
        assert_eq!(custom_date(at, "dddd, MMMM d"), "Tuesday, March 5");
        assert_eq!(custom_date(at, "MMM yyyy 'Q'"), "Mar 2024 Q");
        assert_eq!(format_date(at, "d").as_deref(), Some("3/5/2024"));
        assert_eq!(format_date(at, "D").as_deref(), Some("Tuesday, March 5, 2024"));
        assert_eq!(format_date(at, "q"), None);
    }
}
