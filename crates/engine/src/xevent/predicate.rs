//! An event's predicate: the WHERE of `ADD EVENT ... (WHERE ...)`, parsed once when the session
//! is defined and evaluated each time the event fires, before anything is collected.
//!
//! Grammar (SQL Server's, less the parenthesised source form):
//!
//! ```text
//! expr    := term { OR term }
//! term    := factor { AND factor }
//! factor  := NOT factor | '(' expr ')' | leaf
//! leaf    := source op value | compare '(' source ',' value ')'
//! source  := field | package '.' name            -- a data field, or a global (action) source
//! compare := package '.' comparator               -- package0.greater_than_uint64, ...
//! value   := number | [N]'text' | '(' value ')'
//! ```
//!
//! A map field (wait_type, opcode, file_type) compares by key: a text value is turned into its
//! key when the predicate is parsed, so `[wait_type] = N'WRITELOG'` and `[wait_type] >=
//! N'PAGELATCH_DT'` work as in SQL Server (whose keys differ; see [`super::catalog`]). Text
//! fields compare without regard to case, as SQL Server's `_i_sql_unicode_string` comparators.

use super::FieldValue;
use super::catalog::{self, EventObject, FieldType};
use crate::error::{SqlError, SqlResult};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Like,
}

impl CmpOp {
    fn text(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Like => "LIKE",
        }
    }

    fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::Ne => ordering != Ordering::Equal,
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::Le => ordering != Ordering::Greater,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::Ge => ordering != Ordering::Less,
            CmpOp::Like => false,
        }
    }

    /// The operator a comparator function stands for: `equal_uint64` is `=`.
    fn of_comparator(name: &str) -> Option<CmpOp> {
        let name = name.to_ascii_lowercase();
        let prefixes = [
            ("not_equal_", CmpOp::Ne),
            ("greater_than_equal_", CmpOp::Ge),
            ("less_than_equal_", CmpOp::Le),
            ("greater_than_", CmpOp::Gt),
            ("less_than_", CmpOp::Lt),
            ("equal_", CmpOp::Eq),
            ("like_i_sql_unicode_string", CmpOp::Like),
        ];
        prefixes.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, op)| *op)
    }
}

/// Where a compared value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// One of the event's data fields (its index in the event's fields).
    Field(usize),
    /// A global source, an action's value: `sqlserver.session_id`.
    Global(&'static catalog::ActionObject),
}

/// A literal the source is compared with (a map text already turned into its key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    Number(i128),
    Text(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Predicate {
    Compare { source: Source, op: CmpOp, value: Literal },
    And(Box<Predicate>, Box<Predicate>),
    Or(Box<Predicate>, Box<Predicate>),
    Not(Box<Predicate>),
}

/// What a predicate reads when it is evaluated.
pub trait Values {
    fn field(&self, index: usize) -> Option<&FieldValue>;
    fn global(&self, action: &catalog::ActionObject) -> Option<FieldValue>;
}

impl Predicate {
    /// Parses `text` as the predicate of `event`. Errors are SQL Server's for a bad predicate.
    pub fn parse(event: &'static EventObject, text: &str) -> SqlResult<Predicate> {
        let tokens = tokenize(text)?;
        let mut parser = Parser { tokens, at: 0, event };
        let predicate = parser.expr()?;
        if parser.at != parser.tokens.len() {
            return Err(parse_error());
        }
        Ok(predicate)
    }

    pub fn holds(&self, values: &dyn Values) -> bool {
        match self {
            Predicate::And(a, b) => a.holds(values) && b.holds(values),
            Predicate::Or(a, b) => a.holds(values) || b.holds(values),
            Predicate::Not(a) => !a.holds(values),
            Predicate::Compare { source, op, value } => {
                let found = match source {
                    Source::Field(index) => values.field(*index).cloned(),
                    Source::Global(action) => values.global(action),
                };
                found.is_some_and(|found| compare(&found, *op, value))
            }
        }
    }

    /// The predicate as sys.server_event_session_events.predicate shows it; parsing it again
    /// gives the same predicate (the definition is kept in this form).
    pub fn render(&self, event: &EventObject) -> String {
        match self {
            Predicate::And(a, b) => format!("({} AND {})", a.render(event), b.render(event)),
            Predicate::Or(a, b) => format!("({} OR {})", a.render(event), b.render(event)),
            Predicate::Not(a) => format!("(NOT {})", a.render(event)),
            Predicate::Compare { source, op, value } => {
                let (source, map) = match source {
                    Source::Field(index) => {
                        let field = &event.fields[*index];
                        let map = match field.field_type {
                            FieldType::Map(map) => Some(map),
                            _ => None,
                        };
                        (format!("[{}]", field.name), map)
                    }
                    Source::Global(action) => {
                        (format!("[{}].[{}]", action.package, action.name), None)
                    }
                };
                let value = match (value, map) {
                    (Literal::Number(key), Some(map)) => {
                        let text = u32::try_from(*key).ok().and_then(|key| map.text(key));
                        text.map_or_else(|| format!("({key})"), quote)
                    }
                    (Literal::Number(number), None) => format!("({number})"),
                    (Literal::Text(text), _) => quote(text),
                };
                if *op == CmpOp::Like {
                    format!("[sqlserver].[like_i_sql_unicode_string]({source},{value})")
                } else {
                    format!("{source}{}{value}", op.text())
                }
            }
        }
    }
}

fn quote(text: &str) -> String {
    format!("N'{}'", text.replace('\'', "''"))
}

fn compare(found: &FieldValue, op: CmpOp, value: &Literal) -> bool {
    if op == CmpOp::Like {
        let (FieldValue::Text(text), Literal::Text(pattern)) = (found, value) else {
            return false;
        };
        return like(&text.to_lowercase(), &pattern.to_lowercase());
    }
    let ordering = match (found, value) {
        (FieldValue::Text(text), Literal::Text(want)) => {
            Some(text.to_lowercase().cmp(&want.to_lowercase()))
        }
        (FieldValue::Text(_), Literal::Number(_)) => None,
        (found, Literal::Number(want)) => found.as_number().map(|n| n.cmp(want)),
        (found, Literal::Text(want)) => {
            let want = match want.to_ascii_lowercase().as_str() {
                "true" => Some(1),
                "false" => Some(0),
                other => other.parse::<i128>().ok(),
            };
            found.as_number().zip(want).map(|(n, want)| n.cmp(&want))
        }
    };
    ordering.is_some_and(|ordering| op.holds(ordering))
}

/// LIKE with `%` and `_` (both already lower case).
fn like(text: &str, pattern: &str) -> bool {
    super::wildcard_match(pattern, text, '%', '_')
}

/// 25711: the predicate does not parse.
fn parse_error() -> SqlError {
    SqlError::new(25711, 16, 1, "Failed to parse an event predicate.")
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Name(String),
    Number(i128),
    Text(String),
    Op(CmpOp),
    Open,
    Close,
    Comma,
    Dot,
}

fn tokenize(text: &str) -> SqlResult<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
        } else if c == '[' {
            let end = chars[at..].iter().position(|&c| c == ']').ok_or_else(parse_error)? + at;
            tokens.push(Token::Name(chars[at + 1..end].iter().collect()));
            at = end + 1;
        } else if c == '\'' || ((c == 'N' || c == 'n') && chars.get(at + 1) == Some(&'\'')) {
            at += if c == '\'' { 1 } else { 2 };
            let mut value = String::new();
            loop {
                match chars.get(at) {
                    None => return Err(parse_error()),
                    Some('\'') if chars.get(at + 1) == Some(&'\'') => {
                        value.push('\'');
                        at += 2;
                    }
                    Some('\'') => {
                        at += 1;
                        break;
                    }
                    Some(&other) => {
                        value.push(other);
                        at += 1;
                    }
                }
            }
            tokens.push(Token::Text(value));
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(at + 1).is_some_and(char::is_ascii_digit))
        {
            let start = at;
            at += 1;
            while chars.get(at).is_some_and(char::is_ascii_digit) {
                at += 1;
            }
            let digits: String = chars[start..at].iter().collect();
            tokens.push(Token::Number(digits.parse().map_err(|_| parse_error())?));
        } else if c.is_alphabetic() || c == '_' {
            let start = at;
            while chars.get(at).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
                at += 1;
            }
            tokens.push(Token::Name(chars[start..at].iter().collect()));
        } else {
            let next = chars.get(at + 1).copied();
            let (token, width) = match (c, next) {
                ('<', Some('>')) | ('!', Some('=')) => (Token::Op(CmpOp::Ne), 2),
                ('<', Some('=')) => (Token::Op(CmpOp::Le), 2),
                ('>', Some('=')) => (Token::Op(CmpOp::Ge), 2),
                ('<', _) => (Token::Op(CmpOp::Lt), 1),
                ('>', _) => (Token::Op(CmpOp::Gt), 1),
                ('=', _) => (Token::Op(CmpOp::Eq), 1),
                ('(', _) => (Token::Open, 1),
                (')', _) => (Token::Close, 1),
                (',', _) => (Token::Comma, 1),
                ('.', _) => (Token::Dot, 1),
                _ => return Err(parse_error()),
            };
            tokens.push(token);
            at += width;
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    event: &'static EventObject,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> SqlResult<Token> {
        let token = self.tokens.get(self.at).cloned().ok_or_else(parse_error)?;
        self.at += 1;
        Ok(token)
    }

    fn keyword(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Token::Name(name)) if name.eq_ignore_ascii_case(word)) {
            self.at += 1;
            return true;
        }
        false
    }

    fn expect(&mut self, token: &Token) -> SqlResult<()> {
        if self.next()? == *token { Ok(()) } else { Err(parse_error()) }
    }

    fn expr(&mut self) -> SqlResult<Predicate> {
        let mut left = self.term()?;
        while self.keyword("OR") {
            left = Predicate::Or(Box::new(left), Box::new(self.term()?));
        }
        Ok(left)
    }

    fn term(&mut self) -> SqlResult<Predicate> {
        let mut left = self.factor()?;
        while self.keyword("AND") {
            left = Predicate::And(Box::new(left), Box::new(self.factor()?));
        }
        Ok(left)
    }

    fn factor(&mut self) -> SqlResult<Predicate> {
        if self.keyword("NOT") {
            return Ok(Predicate::Not(Box::new(self.factor()?)));
        }
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let inner = self.expr()?;
            self.expect(&Token::Close)?;
            return Ok(inner);
        }
        self.leaf()
    }

    /// A dotted name: one part (a field) or two or three (module guid, package, name).
    fn dotted(&mut self) -> SqlResult<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            match self.next()? {
                Token::Name(name) => parts.push(name),
                _ => return Err(parse_error()),
            }
            if self.peek() != Some(&Token::Dot) {
                return Ok(parts);
            }
            self.at += 1;
        }
    }

    fn leaf(&mut self) -> SqlResult<Predicate> {
        let name = self.dotted()?;
        if self.peek() == Some(&Token::Open) {
            let comparator = name.last().cloned().unwrap_or_default();
            let op = CmpOp::of_comparator(&comparator).ok_or_else(|| {
                SqlError::new(
                    25706,
                    16,
                    1,
                    format!("The pred_compare, \"{comparator}\", could not be found."),
                )
            })?;
            self.at += 1;
            let source_name = self.dotted()?;
            let source = self.source(&source_name)?;
            self.expect(&Token::Comma)?;
            let value = self.value(&source)?;
            self.expect(&Token::Close)?;
            return Ok(Predicate::Compare { source, op, value });
        }
        let source = self.source(&name)?;
        let op = match self.next()? {
            Token::Op(op) => op,
            _ => {
                return Err(SqlError::new(
                    25712,
                    16,
                    1,
                    "An invalid comparison operator was specified for an event predicate.",
                ));
            }
        };
        let value = self.value(&source)?;
        Ok(Predicate::Compare { source, op, value })
    }

    fn source(&self, name: &[String]) -> SqlResult<Source> {
        let not_found = |text: &str| {
            SqlError::new(
                25706,
                16,
                1,
                format!("The event attribute or predicate source, \"{text}\", could not be found."),
            )
        };
        match name {
            [field] => self
                .event
                .fields
                .iter()
                .position(|f| f.name.eq_ignore_ascii_case(field))
                .map(Source::Field)
                .ok_or_else(|| not_found(field)),
            [.., package, action] => catalog::action(Some(package), action)
                .map(Source::Global)
                .ok_or_else(|| not_found(&format!("{package}.{action}"))),
            [] => Err(parse_error()),
        }
    }

    fn value(&mut self, source: &Source) -> SqlResult<Literal> {
        let literal = match self.next()? {
            Token::Open => {
                let inner = self.value(source)?;
                self.expect(&Token::Close)?;
                return Ok(inner);
            }
            Token::Number(number) => Literal::Number(number),
            Token::Text(text) => Literal::Text(text),
            _ => return Err(parse_error()),
        };
        let Source::Field(index) = source else {
            return Ok(literal);
        };
        let field = &self.event.fields[*index];
        let FieldType::Map(map) = field.field_type else {
            return Ok(literal);
        };
        match literal {
            Literal::Text(text) => map.key(&text).map(|key| Literal::Number(i128::from(key))).ok_or_else(|| {
                SqlError::new(
                    25713,
                    16,
                    1,
                    format!(
                        "The value specified for event attribute or predicate source, \"{}\", event, \"{}\", is invalid.",
                        field.name, self.event.name
                    ),
                )
            }),
            number => Ok(number),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xevent::catalog::{EVENTS, WAIT_INFO, WAIT_INFO_EXTERNAL};

    struct Fixed(Vec<FieldValue>, u32);

    impl Values for Fixed {
        fn field(&self, index: usize) -> Option<&FieldValue> {
            self.0.get(index)
        }
        fn global(&self, action: &catalog::ActionObject) -> Option<FieldValue> {
            (action.name == "session_id").then_some(FieldValue::U64(u64::from(self.1)))
        }
    }

    fn wait(name: &str, duration_ms: u64, spid: u32) -> Fixed {
        let key = catalog::MapName::WaitTypes.key(name).expect("a wait type");
        Fixed(
            vec![
                FieldValue::Map(catalog::MapName::WaitTypes, key),
                FieldValue::Map(catalog::MapName::EventOpcode, 1),
                FieldValue::U64(duration_ms),
                FieldValue::U64(0),
                FieldValue::Ptr(0),
            ],
            spid,
        )
    }

    #[test]
    fn the_seeds_predicate_selects_its_wait_type_only() {
        let event = &EVENTS[WAIT_INFO_EXTERNAL];
        let p =
            Predicate::parse(event, "([wait_type] = N'PREEMPTIVE_OS_WRITEFILEGATHER')").unwrap();
        assert!(p.holds(&wait("PREEMPTIVE_OS_WRITEFILEGATHER", 5, 51)));
        assert!(!p.holds(&wait("WRITELOG", 5, 51)));
        assert_eq!(p.render(event), "[wait_type]=N'PREEMPTIVE_OS_WRITEFILEGATHER'");
    }

    #[test]
    fn and_or_not_globals_and_comparators_combine() {
        let event = &EVENTS[WAIT_INFO];
        let text = "sqlserver.session_id = 53 AND (duration > 10 OR NOT [package0].[less_than_uint64]([duration],(5)))";
        let p = Predicate::parse(event, text).unwrap();
        assert!(p.holds(&wait("WRITELOG", 11, 53)));
        assert!(p.holds(&wait("WRITELOG", 5, 53)), "not less than 5");
        assert!(!p.holds(&wait("WRITELOG", 4, 53)));
        assert!(!p.holds(&wait("WRITELOG", 11, 54)), "another session");
        let again = Predicate::parse(event, &p.render(event)).unwrap();
        assert_eq!(again, p, "the rendering parses back to the same predicate");
    }

    #[test]
    fn map_ranges_compare_by_key() {
        let event = &EVENTS[WAIT_INFO];
        let p = Predicate::parse(
            event,
            "[wait_type] >= N'PAGELATCH_DT' AND [wait_type] <= N'PAGELATCH_UP'",
        )
        .unwrap();
        assert!(p.holds(&wait("PAGELATCH_SH", 1, 1)));
        assert!(!p.holds(&wait("PAGEIOLATCH_SH", 1, 1)));
    }

    #[test]
    fn bad_predicates_get_sql_servers_errors() {
        let event = &EVENTS[WAIT_INFO];
        assert_eq!(Predicate::parse(event, "[no_such_field] = 1").unwrap_err().number, 25706);
        assert_eq!(
            Predicate::parse(event, "[wait_type] = N'NOT_A_WAIT'").unwrap_err().number,
            25713
        );
        assert_eq!(Predicate::parse(event, "[duration] = ").unwrap_err().number, 25711);
        assert_eq!(Predicate::parse(event, "[duration] 5").unwrap_err().number, 25712);
    }

    #[test]
    fn like_matches_percent_and_underscore() {
        assert!(like("select 1", "sel%"));
        assert!(like("abc", "a_c"));
        assert!(!like("abc", "a_d%"));
    }
}
