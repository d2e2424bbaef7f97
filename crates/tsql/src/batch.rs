//! Batches: a script is split at `GO` lines, as sqlcmd and SSMS do (`GO` is not T-SQL; the
//! client sends each batch separately). `GO n` sends the batch n times, as in seed 000's
//! `GO 70000`.
//!
//! Rules (sqlcmd's):
//! - `GO` separates only when it stands alone on its line: leading and trailing blanks are
//!   allowed, then an optional count, then an optional `--` comment; the word is case-blind.
//! - A `GO` line inside a block comment (`/* … */`, which nests in T-SQL) or inside a string
//!   literal or a delimited identifier that spans lines is part of the batch, not a separator.
//! - Empty batches (only blanks and comments) are not sent; one that ends inside a block
//!   comment is, so that the server answers it (113, "Missing end comment mark '*/'.").
//! - The batch's first line number is kept, for error messages (`Msg 102, Level 15, State 1,
//!   Line 3`, counted from the batch's first line).

/// A batch and how many times to run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub text: String,
    /// `GO n`: the batch runs n times (1 for a plain `GO` or the end of the script).
    pub repeat: u64,
    /// 1-based line of the script where the batch starts.
    pub first_line: usize,
}

/// An error in a `GO` line, with sqlcmd's wording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchError {
    pub line: usize,
    pub message: String,
}

/// Lexical state carried from one line to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carry {
    Code,
    /// Inside block comments, this deep.
    Comment(u32),
    /// Inside a string literal ('…').
    Literal,
    /// Inside a delimited identifier ([…] or "…"), closed by this character.
    Delimited(char),
}

/// Splits `script` into batches.
pub fn split(script: &str) -> Result<Vec<Batch>, BatchError> {
    let mut batches = Vec::new();
    let mut current = String::new();
    let mut first_line = 1;
    let mut carry = Carry::Code;
    for (index, line) in script.lines().enumerate() {
        let number = index + 1;
        if carry == Carry::Code
            && let Some(count) = go_line(line, number)?
        {
            push(&mut batches, &mut current, count, first_line);
            first_line = number + 1;
            continue;
        }
        if current.is_empty() {
            first_line = number;
        }
        current.push_str(line);
        current.push('\n');
        carry = scan(line, carry);
    }
    push(&mut batches, &mut current, 1, first_line);
    Ok(batches)
}

fn push(batches: &mut Vec<Batch>, current: &mut String, repeat: u64, first_line: usize) {
    let text = std::mem::take(current);
    if has_code(&text) && repeat > 0 {
        batches.push(Batch { text, repeat, first_line });
    }
}

/// Some(count) if `line` is a GO line.
fn go_line(line: &str, number: usize) -> Result<Option<u64>, BatchError> {
    let code = line.split("--").next().unwrap_or("").trim();
    let mut words = code.split_whitespace();
    let Some(first) = words.next() else { return Ok(None) };
    if !first.eq_ignore_ascii_case("go") {
        return Ok(None);
    }
    let count = match words.next() {
        None => 1,
        Some(word) => word.parse::<u64>().map_err(|_| BatchError {
            line: number,
            message: format!(
                "Sqlcmd: Error: Syntax error at line {number} near command 'GO' in file '(script)'."
            ),
        })?,
    };
    if words.next().is_some() {
        return Err(BatchError {
            line: number,
            message: format!(
                "Sqlcmd: Error: Syntax error at line {number} near command 'GO' in file '(script)'."
            ),
        });
    }
    Ok(Some(count))
}

/// The lexical state after `line`, starting in `carry`.
fn scan(line: &str, mut carry: Carry) -> Carry {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match carry {
            Carry::Code => match (c, next) {
                ('-', Some('-')) => return Carry::Code,
                ('/', Some('*')) => {
                    carry = Carry::Comment(1);
                    i += 1;
                }
                ('\'', _) => carry = Carry::Literal,
                ('[', _) => carry = Carry::Delimited(']'),
                ('"', _) => carry = Carry::Delimited('"'),
                _ => {}
            },
            Carry::Comment(depth) => match (c, next) {
                ('*', Some('/')) => {
                    carry = if depth == 1 { Carry::Code } else { Carry::Comment(depth - 1) };
                    i += 1;
                }
                ('/', Some('*')) => {
                    carry = Carry::Comment(depth + 1);
                    i += 1;
                }
                _ => {}
            },
            Carry::Literal => {
                if c == '\'' {
                    if next == Some('\'') {
                        i += 1; // an escaped quote
                    } else {
                        carry = Carry::Code;
                    }
                }
            }
            Carry::Delimited(close) => {
                if c == close {
                    if next == Some(close) {
                        i += 1;
                    } else {
                        carry = Carry::Code;
                    }
                }
            }
        }
        i += 1;
    }
    carry
}

/// Whether a batch holds anything but blanks and comments.
fn has_code(text: &str) -> bool {
    let mut carry = Carry::Code;
    for line in text.lines() {
        let mut visible = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let (c, next) = (chars[i], chars.get(i + 1).copied());
            match carry {
                Carry::Comment(depth) => {
                    if c == '*' && next == Some('/') {
                        carry = if depth == 1 { Carry::Code } else { Carry::Comment(depth - 1) };
                        i += 1;
                    } else if c == '/' && next == Some('*') {
                        carry = Carry::Comment(depth + 1);
                        i += 1;
                    }
                }
                _ if c == '-' && next == Some('-') => break,
                _ if c == '/' && next == Some('*') => {
                    carry = Carry::Comment(1);
                    i += 1;
                }
                _ => visible.push(c),
            }
            i += 1;
        }
        if !visible.trim().is_empty() {
            return true;
        }
    }
    // A comment left open is sent: the server answers it with 113.
    matches!(carry, Carry::Comment(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(script: &str) -> Vec<(String, u64, usize)> {
        split(script).unwrap().into_iter().map(|b| (b.text, b.repeat, b.first_line)).collect()
    }

    #[test]
    fn go_and_go_n_split_and_repeat_batches() {
        let script = "CREATE TABLE t (c int)\ngo\nINSERT t VALUES (1)\n  GO 70000  \nSELECT 1";
        assert_eq!(
            texts(script),
            vec![
                ("CREATE TABLE t (c int)\n".to_string(), 1, 1),
                ("INSERT t VALUES (1)\n".to_string(), 70000, 3),
                ("SELECT 1\n".to_string(), 1, 5),
            ]
        );
    }

    #[test]
    fn go_inside_comments_literals_and_identifiers_is_part_of_the_batch() {
        let script = "SELECT 'a\nGO\nb'\n/* outer /* inner\nGO\n*/ still comment\nGO\n*/\nSELECT [x\nGO\ny]\nGO";
        let batches = texts(script);
        assert_eq!(batches.len(), 1, "{batches:?}");
        assert!(batches[0].0.contains("GO\nb'"));
    }

    #[test]
    fn a_go_line_may_carry_a_comment_and_empty_batches_are_not_sent() {
        assert_eq!(
            texts("-- header\nGO\n\nSELECT 2\nGO -- done\n/* nothing */\nGO"),
            vec![("\nSELECT 2\n".to_string(), 1, 3)]
        );
        assert!(texts("GO 0\n").is_empty());
        // A comment never closed is sent, for the server's 113.
        assert_eq!(
            texts("/* open /* inner */\nGO\n"),
            vec![("/* open /* inner */\nGO\n".to_string(), 1, 1)]
        );
        assert_eq!(texts("SELECT 1\nGO 0\nSELECT 2"), vec![("SELECT 2\n".to_string(), 1, 3)]);
    }

    #[test]
    fn a_bad_count_is_sqlcmds_syntax_error() {
        let error = split("SELECT 1\nGO x\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert_eq!(
            error.message,
            "Sqlcmd: Error: Syntax error at line 2 near command 'GO' in file '(script)'."
        );
        assert!(split("GOTO label").unwrap().len() == 1, "GOTO is not GO");
    }
}
