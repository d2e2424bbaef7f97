//! String built-ins beyond the basic ones of [`crate::functions`]: ASCII, UNICODE, CHAR,
//! NCHAR, STUFF, CONCAT_WS, STR, CHOOSE, PATINDEX, ISNUMERIC, QUOTENAME, PARSENAME and
//! TRANSLATE, with SQL Server's NULL rules and error numbers.
//!
//! Deviations: text is Unicode throughout, so CHAR and ASCII map 128-255 through code page
//! 1252 (the default collation's) and any other character is '?' (63) for ASCII; NCHAR of a
//! surrogate half (0xD800-0xDFFF) is NULL, since a lone half is not a character here.

use crate::functions::arg_count;
use crate::value::{self, Result, as_f64, as_i64, display};
use engine::SqlError;
use engine::record::{SqlType, Value};

/// Code page 1252's characters for bytes 128-159 (the rest of 128-255 is Latin-1); '\0' where
/// the code page has none.
const CP1252_HIGH: [char; 32] = [
    '€', '\0', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\0', 'Ž', '\0', '\0', '‘',
    '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\0', 'ž', 'Ÿ',
];

fn cp1252_char(byte: u8) -> Option<char> {
    match byte {
        128..=159 => Some(CP1252_HIGH[usize::from(byte - 128)]).filter(|c| *c != '\0'),
        _ => Some(char::from(byte)),
    }
}

fn cp1252_byte(c: char) -> u8 {
    match u32::from(c) {
        code @ (0..=127 | 160..=255) => code as u8,
        _ => CP1252_HIGH.iter().position(|h| *h == c).map_or(b'?', |at| 128 + at as u8),
    }
}

fn int_arg(function: &str, value: &Value) -> Result<Option<i64>> {
    if matches!(value, Value::Null) {
        return Ok(None);
    }
    let converted = value::convert(value, SqlType::BigInt).map_err(|_| {
        SqlError::new(
            8116,
            16,
            1,
            format!("Argument data type is invalid for argument 2 of {function} function."),
        )
    })?;
    Ok(as_i64(&converted))
}

/// Calls one of this module's functions (`upper` is the name in upper case). None if it is
/// not one.
pub fn call(upper: &str, args: &[Value]) -> Option<Result<Value>> {
    let nulls = args.iter().any(|a| matches!(a, Value::Null));
    let result = match upper {
        "ASCII" | "UNICODE" => arg_count(upper, args, 1, 1).map(|()| {
            let first = if nulls { None } else { display(&args[0]).chars().next() };
            match first {
                None => Value::Null,
                Some(c) if upper == "ASCII" => Value::Int(i32::from(cp1252_byte(c))),
                Some(c) => Value::Int(u32::from(c) as i32),
            }
        }),
        "CHAR" | "NCHAR" => arg_count(upper, args, 1, 1).and_then(|()| {
            let code = int_arg(upper, &args[0])?;
            let c = match code {
                Some(n @ 0..=255) if upper == "CHAR" => cp1252_char(n as u8),
                Some(n @ 0..=65_535) if upper == "NCHAR" => char::from_u32(n as u32),
                _ => None,
            };
            Ok(c.map_or(Value::Null, |c| Value::Text(c.to_string())))
        }),
        "STUFF" => arg_count(upper, args, 4, 4).and_then(|()| stuff(args)),
        "CONCAT_WS" => concat_ws(args),
        "STR" => arg_count(upper, args, 1, 3).and_then(|()| str_of(args)),
        "CHOOSE" => choose(args),
        "PATINDEX" => arg_count(upper, args, 2, 2).map(|()| {
            if nulls {
                Value::Null
            } else {
                Value::Int(patindex(&display(&args[0]), &display(&args[1])))
            }
        }),
        "ISNUMERIC" => {
            arg_count(upper, args, 1, 1).map(|()| Value::Int(i32::from(is_numeric(&args[0]))))
        }
        "QUOTENAME" => arg_count(upper, args, 1, 2).map(|()| {
            let quote = args.get(1).map_or(Some('['), |q| display(q).chars().next());
            match (nulls, quote) {
                (false, Some(quote)) => quotename(&display(&args[0]), quote),
                _ => Value::Null,
            }
        }),
        "PARSENAME" => arg_count(upper, args, 2, 2).and_then(|()| {
            if nulls {
                return Ok(Value::Null);
            }
            let part = int_arg(upper, &args[1])?.unwrap_or(0);
            Ok(parsename(&display(&args[0]), part).map_or(Value::Null, Value::Text))
        }),
        "TRANSLATE" => arg_count(upper, args, 3, 3).and_then(|()| translate(args)),
        _ => return None,
    };
    Some(result)
}

/// STUFF(text, start, length, replacement): NULL when start is outside the text (1 to its
/// length) or length is negative; a length past the end deletes to the end.
fn stuff(args: &[Value]) -> Result<Value> {
    if matches!(args[0], Value::Null) {
        return Ok(Value::Null);
    }
    let text: Vec<char> = display(&args[0]).chars().collect();
    let (Some(start), Some(length)) = (int_arg("stuff", &args[1])?, int_arg("stuff", &args[2])?)
    else {
        return Ok(Value::Null);
    };
    if start < 1 || start as usize > text.len() || length < 0 {
        return Ok(Value::Null);
    }
    let from = start as usize - 1;
    let to = (from + length as usize).min(text.len());
    let replacement = match &args[3] {
        Value::Null => String::new(),
        other => display(other),
    };
    let mut out: String = text[..from].iter().collect();
    out.push_str(&replacement);
    out.extend(&text[to..]);
    Ok(Value::Text(out))
}

/// CONCAT_WS(separator, a, b, ...): the non-NULL arguments joined by the separator.
fn concat_ws(args: &[Value]) -> Result<Value> {
    if args.len() < 3 || args.len() > 254 {
        return Err(SqlError::new(
            189,
            15,
            1,
            "The concat_ws function requires 3 to 254 arguments.",
        ));
    }
    let separator = match &args[0] {
        Value::Null => String::new(),
        other => display(other),
    };
    let parts: Vec<String> =
        args[1..].iter().filter(|a| !matches!(a, Value::Null)).map(display).collect();
    Ok(Value::Text(parts.join(&separator)))
}

/// STR(number [, length [, decimals]]): right-justified in `length` characters (10), rounded to
/// `decimals` places (0, at most 16). Fewer decimals are shown when the number needs the room;
/// a number whose integer part does not fit is shown as `length` asterisks.
fn str_of(args: &[Value]) -> Result<Value> {
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    let number = as_f64(&value::convert(&args[0], SqlType::Float)?).unwrap_or(0.0);
    let length = match args.get(1) {
        Some(v) => int_arg("str", v)?.unwrap_or(10),
        None => 10,
    };
    let decimals = match args.get(2) {
        Some(v) => int_arg("str", v)?.unwrap_or(0).clamp(0, 16),
        None => 0,
    };
    if !(1..=8000).contains(&length) {
        return Ok(Value::Null);
    }
    let length = length as usize;
    let mut places = decimals as usize;
    loop {
        // Halves round away from zero, as SQL Server's STR does (Rust's formatting would
        // round them to even).
        let scale = 10f64.powi(places as i32);
        let rounded = (number * scale).round() / scale;
        let text = format!("{rounded:.places$}");
        if text.len() <= length {
            return Ok(Value::Text(format!("{text:>length$}")));
        }
        if places == 0 {
            return Ok(Value::Text("*".repeat(length)));
        }
        places -= 1;
    }
}

/// CHOOSE(index, v1, v2, ...): the index-th value, NULL when the index is out of range.
fn choose(args: &[Value]) -> Result<Value> {
    if args.len() < 2 {
        return Err(SqlError::new(
            174,
            15,
            1,
            "The choose function requires 2 or more argument(s).",
        ));
    }
    let index = int_arg("choose", &args[0])?;
    Ok(match index {
        Some(i) if i >= 1 && (i as usize) < args.len() => args[i as usize].clone(),
        _ => Value::Null,
    })
}

/// PATINDEX('%pattern%', text): where the pattern first matches (1-based), 0 if nowhere. A
/// pattern without a leading % must match from the first character.
fn patindex(pattern: &str, text: &str) -> i32 {
    let chars: Vec<char> = text.chars().collect();
    let Some(rest) = pattern.strip_prefix('%') else {
        return i32::from(crate::query::like_pattern(text, pattern));
    };
    let rest = rest.trim_start_matches('%');
    if rest.is_empty() {
        return i32::from(!chars.is_empty());
    }
    for start in 0..chars.len() {
        let tail: String = chars[start..].iter().collect();
        if crate::query::like_pattern(&tail, rest) {
            return start as i32 + 1;
        }
    }
    0
}

/// ISNUMERIC: 1 for a numeric value, and for text that converts to some numeric type (int,
/// money, decimal or float): optional currency sign and sign, digits with thousands commas, a
/// decimal point, an exponent. A lone sign, currency sign, point or comma counts, as in SQL
/// Server.
fn is_numeric(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Text(text) => numeric_text(text),
        Value::Bytes(_) | Value::Guid(_) => false,
        Value::Date(_) | Value::Time(_) | Value::DateTime(..) | Value::DateTime2(..) => false,
        _ => true,
    }
}

fn numeric_text(text: &str) -> bool {
    let s = text.trim_matches([' ', '\t', '\r', '\n']);
    if s.is_empty() {
        return false;
    }
    let mut chars = s.chars().peekable();
    let mut took_sign = false;
    let mut took_currency = false;
    while let Some(c) = chars.peek().copied() {
        if (c == '+' || c == '-') && !took_sign {
            took_sign = true;
        } else if matches!(c, '$' | '£' | '¥' | '€') && !took_currency {
            took_currency = true;
        } else if c == ' ' && (took_sign || took_currency) {
        } else {
            break;
        }
        chars.next();
    }
    let rest: String = chars.collect();
    let (mantissa, exponent) = match rest.find(['e', 'E', 'd', 'D']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest.as_str(), None),
    };
    let mut points = 0;
    for c in mantissa.chars() {
        match c {
            '0'..='9' | ',' => {}
            '.' => points += 1,
            _ => return false,
        }
    }
    if points > 1 {
        return false;
    }
    match exponent {
        None => true,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            mantissa.chars().any(|c| c.is_ascii_digit())
                && !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
        }
    }
}

/// QUOTENAME(name, quote): the name delimited, its closing delimiter doubled; NULL for a name
/// over 128 characters or a quote character SQL Server does not take.
fn quotename(name: &str, quote: char) -> Value {
    let (open, close) = match quote {
        '[' | ']' => ('[', ']'),
        '"' => ('"', '"'),
        '\'' => ('\'', '\''),
        '(' | ')' => ('(', ')'),
        '<' | '>' => ('<', '>'),
        '{' | '}' => ('{', '}'),
        '`' => ('`', '`'),
        _ => return Value::Null,
    };
    if name.chars().count() > 128 {
        return Value::Null;
    }
    let doubled = name.replace(close, &format!("{close}{close}"));
    Value::Text(format!("{open}{doubled}{close}"))
}

/// PARSENAME(name, part): part 1 is the object, 2 the schema, 3 the database, 4 the server.
/// Delimited parts ([x] or "x") lose their delimiters; NULL for an absent or empty part, a
/// part number outside 1-4, or a name of more than four parts.
fn parsename(name: &str, part: i64) -> Option<String> {
    if !(1..=4).contains(&part) {
        return None;
    }
    let parts = split_name(name)?;
    if parts.len() > 4 {
        return None;
    }
    let at = parts.len().checked_sub(part as usize)?;
    parts.into_iter().nth(at).filter(|p| !p.is_empty())
}

fn split_name(name: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = name.chars().collect();
    let mut parts = vec![String::new()];
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let close = match c {
            '[' => Some(']'),
            '"' => Some('"'),
            _ => None,
        };
        if let Some(close) = close {
            at += 1;
            loop {
                let d = *chars.get(at)?;
                at += 1;
                if d != close {
                    parts.last_mut()?.push(d);
                } else if chars.get(at) == Some(&close) {
                    parts.last_mut()?.push(d);
                    at += 1;
                } else {
                    break;
                }
            }
            continue;
        }
        if c == '.' {
            parts.push(String::new());
        } else {
            parts.last_mut()?.push(c);
        }
        at += 1;
    }
    Some(parts)
}

/// TRANSLATE(text, characters, translations): each character of the second argument replaced
/// by the one at the same place in the third (error 9828 when they differ in length).
fn translate(args: &[Value]) -> Result<Value> {
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Ok(Value::Null);
    }
    let from: Vec<char> = display(&args[1]).chars().collect();
    let to: Vec<char> = display(&args[2]).chars().collect();
    if from.len() != to.len() {
        return Err(SqlError::new(
            9828,
            16,
            1,
            "The second and third arguments of the TRANSLATE built-in function must contain an equal number of characters.",
        ));
    }
    let text = display(&args[0]);
    let out =
        text.chars().map(|c| from.iter().position(|f| *f == c).map_or(c, |at| to[at])).collect();
    Ok(Value::Text(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn isnumeric_follows_sql_servers_conversions() {
        for yes in ["12.5", " 12 ", "$", "-", "+1", "1e5", "1,000", ".", "$-1.5", "1E-3"] {
            assert!(numeric_text(yes), "{yes:?} is numeric");
        }
        for no in ["", "abc", "1.2.3", "1e", "e5", "12a", "--1"] {
            assert!(!numeric_text(no), "{no:?} is not numeric");
        }
    }

    #[test]
    fn parsename_reads_delimited_parts_from_the_right() {
        assert_eq!(parsename("srv.db.[dbo].[my.table]", 1).as_deref(), Some("my.table"));
        assert_eq!(parsename("srv.db.[dbo].[my.table]", 2).as_deref(), Some("dbo"));
        assert_eq!(parsename("srv.db.[dbo].[my.table]", 4).as_deref(), Some("srv"));
        assert_eq!(parsename("dbo.t", 3), None);
        assert_eq!(parsename("a.b.c.d.e", 1), None);
        assert_eq!(parsename("a..c", 2), None);
        assert_eq!(parsename("[a]]b]", 1).as_deref(), Some("a]b"));
    }

    #[test]
    fn str_gives_up_decimals_before_asterisks() {
        let call = |n: f64, len: i32, dec: i32| {
            str_of(&[Value::Float(n), Value::Int(len), Value::Int(dec)]).expect("str")
        };
        assert_eq!(call(123.456, 8, 2), text("  123.46"));
        assert_eq!(call(123.456, 5, 2), text("123.5"));
        assert_eq!(call(1234.5, 3, 0), text("***"));
        assert_eq!(str_of(&[Value::Float(-2.5)]).expect("str"), text("        -3"));
    }

    #[test]
    fn patindex_finds_the_first_match() {
        assert_eq!(patindex("%[0-9]%", "abc1d2"), 4);
        assert_eq!(patindex("%xyz%", "abc"), 0);
        assert_eq!(patindex("ab%", "abc"), 1);
        assert_eq!(patindex("b%", "abc"), 0);
    }
}
