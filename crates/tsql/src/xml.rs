//! The xml type's `value()`, `exist()` and `nodes()` methods, over the text of an xml value,
//! with the XPath subset the Extended Events scripts use:
//! `(event/data[@name="duration"]/value)[1]`, `(@timestamp)[1]`,
//! `(//EventFileTarget/File/@name)[1]`, `text()`, `*` and `.`.
//!
//! Each path step is a child step (`/`), a descendant step (`//`), an attribute (`@name`),
//! `text()`, `.` or `*`, with predicates `[@attr="v"]`, `[@attr]`, `[child="v"]` and `[n]`;
//! `(path)[n]` takes the path's n-th item. `value()` converts the first item's string value to
//! the SQL type named, as SQL Server's does; an empty sequence is NULL. The text is parsed with
//! roxmltree.
//!
//! `nodes(path)` (in `CROSS APPLY x.nodes('RingBufferTarget/event') AS q(e)`) gives a row per
//! element the path selects; each row's value is that element, on which `value()` and
//! `exist()` evaluate relative paths from the element, as SQL Server's context node does. The
//! row holds the element's text behind a marker ([`CONTEXT_MARK`]) that says so.
//!
//! Deviations: XQuery beyond that subset (functions, FLWOR, namespaces) is a syntax error
//! (2209); `query()` and `modify()` are not there (195); `value()` takes the
//! first item where SQL Server requires a path it can prove singleton (2389); xml is stored
//! and shown as its text (nvarchar), without a schema.

use crate::value::{Result, convert, parse_type_name};
use engine::SqlError;
use engine::record::Value;

/// 2209: a path this subset does not parse, in SQL Server's wording for an XQuery syntax error.
fn syntax_error(method: &str, path: &str) -> SqlError {
    SqlError::new(2209, 16, 1, format!("XQuery [{method}()]: Syntax error near '{path}'"))
}

/// 9400: the xml's text did not parse (the detail after "XML parsing:" is roxmltree's, not
/// SQL Server's line and character wording).
fn parse_error(detail: &str) -> SqlError {
    SqlError::new(9400, 16, 1, format!("XML parsing: {detail}"))
}

/// What starts a `nodes()` row's value: its element is the context node of the paths
/// evaluated on it (a processing instruction, which XML allows before the root element).
pub const CONTEXT_MARK: &str = "<?extentdb-context-node?>";

#[derive(Clone, Debug, PartialEq)]
enum Axis {
    Child,
    Descendant,
}

#[derive(Clone, Debug, PartialEq)]
enum Test {
    Name(String),
    Any,
    Attribute(String),
    Text,
    SelfNode,
}

#[derive(Clone, Debug, PartialEq)]
enum Filter {
    AttributeEquals(String, String),
    HasAttribute(String),
    ChildEquals(String, String),
    Position(usize),
}

#[derive(Clone, Debug, PartialEq)]
struct Step {
    axis: Axis,
    test: Test,
    filters: Vec<Filter>,
}

#[derive(Clone, Debug, PartialEq)]
struct Path {
    absolute: bool,
    steps: Vec<Step>,
    /// `(path)[n]`.
    position: Option<usize>,
}

/// One item a path selects.
#[derive(Clone, Copy)]
enum Item<'a, 'input> {
    Node(roxmltree::Node<'a, 'input>),
    Attribute(&'a str),
}

impl Item<'_, '_> {
    fn string_value(&self) -> String {
        match self {
            Item::Attribute(value) => (*value).to_string(),
            Item::Node(node) if node.is_text() => node.text().unwrap_or("").to_string(),
            Item::Node(node) => {
                node.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect()
            }
        }
    }
}

fn parse_path(method: &str, text: &str) -> Result<Path> {
    let text = text.trim();
    let error = || syntax_error(method, text);
    let (inner, position) = match text.strip_prefix('(') {
        Some(rest) => {
            let close = rest.rfind(')').ok_or_else(error)?;
            let tail = rest[close + 1..].trim();
            let position = match tail.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                Some(n) => Some(n.trim().parse::<usize>().map_err(|_| error())?),
                None if tail.is_empty() => None,
                None => return Err(error()),
            };
            (&rest[..close], position)
        }
        None => (text, None),
    };
    let mut path = parse_steps(inner).ok_or_else(error)?;
    path.position = position;
    Ok(path)
}

fn parse_steps(text: &str) -> Option<Path> {
    let mut rest = text.trim();
    let absolute = rest.starts_with('/');
    let mut steps = Vec::new();
    let mut axis = Axis::Child;
    loop {
        if let Some(r) = rest.strip_prefix("//") {
            axis = Axis::Descendant;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('/') {
            axis = Axis::Child;
            rest = r;
        }
        if rest.is_empty() {
            return (!steps.is_empty()).then_some(Path { absolute, steps, position: None });
        }
        let end = step_end(rest)?;
        let (step_text, after) = rest.split_at(end);
        steps.push(parse_step(axis.clone(), step_text)?);
        axis = Axis::Child;
        rest = after;
        if !rest.is_empty() && !rest.starts_with('/') {
            return None;
        }
    }
}

/// Where the step at the start of `text` ends: the next `/` outside brackets and quotes.
fn step_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth = depth.checked_sub(1)?,
            (None, '/') if depth == 0 => return Some(i),
            _ => {}
        }
    }
    (quote.is_none() && depth == 0).then_some(text.len())
}

fn parse_step(axis: Axis, text: &str) -> Option<Step> {
    let (head, mut filters_text) = match text.find('[') {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let head = head.trim();
    let test = match head {
        "." => Test::SelfNode,
        "*" => Test::Any,
        "text()" => Test::Text,
        _ if head.starts_with('@') => Test::Attribute(name(&head[1..])?),
        _ => Test::Name(name(head)?),
    };
    let mut filters = Vec::new();
    while !filters_text.is_empty() {
        let close = filters_text.find(']')?;
        filters.push(parse_filter(filters_text[1..close].trim())?);
        filters_text = filters_text[close + 1..].trim_start();
        if !filters_text.is_empty() && !filters_text.starts_with('[') {
            return None;
        }
    }
    Some(Step { axis, test, filters })
}

fn name(text: &str) -> Option<String> {
    let ok = !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || "_-.:".contains(c));
    ok.then(|| text.to_string())
}

fn parse_filter(text: &str) -> Option<Filter> {
    if let Ok(n) = text.parse::<usize>() {
        return (n > 0).then_some(Filter::Position(n));
    }
    let Some((left, right)) = text.split_once('=') else {
        return Some(Filter::HasAttribute(name(text.strip_prefix('@')?)?));
    };
    let right = right.trim();
    let literal = right
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))?
        .to_string();
    let left = left.trim();
    Some(match left.strip_prefix('@') {
        Some(attribute) => Filter::AttributeEquals(name(attribute)?, literal),
        None => Filter::ChildEquals(name(left)?, literal),
    })
}

fn matches_test<'a, 'input>(node: roxmltree::Node<'a, 'input>, test: &Test) -> bool {
    match test {
        Test::Name(name) => node.is_element() && node.tag_name().name() == name,
        Test::Any => node.is_element(),
        Test::Text => node.is_text(),
        Test::SelfNode | Test::Attribute(_) => false,
    }
}

fn passes(item: &Item<'_, '_>, filter: &Filter) -> bool {
    let Item::Node(node) = item else { return false };
    match filter {
        Filter::AttributeEquals(name, value) => {
            node.attribute(name.as_str()) == Some(value.as_str())
        }
        Filter::HasAttribute(name) => node.attribute(name.as_str()).is_some(),
        Filter::ChildEquals(name, value) => node.children().any(|c| {
            c.is_element() && c.tag_name().name() == name && Item::Node(c).string_value() == *value
        }),
        Filter::Position(_) => true,
    }
}

fn apply_step<'a, 'input>(context: &[Item<'a, 'input>], step: &Step) -> Vec<Item<'a, 'input>> {
    let mut out = Vec::new();
    for item in context {
        let Item::Node(node) = item else { continue };
        let mut selected: Vec<Item<'a, 'input>> = match &step.test {
            Test::SelfNode => vec![Item::Node(*node)],
            Test::Attribute(name) => {
                let holders: Vec<roxmltree::Node<'a, 'input>> = match step.axis {
                    Axis::Child => vec![*node],
                    Axis::Descendant => node.descendants().collect(),
                };
                holders
                    .iter()
                    .filter_map(|n| n.attribute(name.as_str()))
                    .map(Item::Attribute)
                    .collect()
            }
            test => {
                let candidates: Vec<roxmltree::Node<'a, 'input>> = match step.axis {
                    Axis::Child => node.children().collect(),
                    Axis::Descendant => node.descendants().skip(1).collect(),
                };
                candidates.into_iter().filter(|n| matches_test(*n, test)).map(Item::Node).collect()
            }
        };
        for filter in &step.filters {
            selected = match filter {
                Filter::Position(n) => selected.get(n - 1).copied().into_iter().collect(),
                other => selected.into_iter().filter(|i| passes(i, other)).collect(),
            };
        }
        out.extend(selected);
    }
    out
}

/// The items `path` selects in `xml`.
fn select<'a, 'input>(
    document: &'a roxmltree::Document<'input>,
    path: &Path,
    context_node: bool,
) -> Vec<Item<'a, 'input>> {
    // A relative path starts at the context: the document node of an xml value, the element
    // of a nodes() row. An absolute one starts at the document node.
    let start =
        if context_node && !path.absolute { document.root_element() } else { document.root() };
    let mut items = vec![Item::Node(start)];
    for step in &path.steps {
        items = apply_step(&items, step);
    }
    match path.position {
        Some(n) => items.get(n.saturating_sub(1)).copied().into_iter().collect(),
        None => items,
    }
}

fn document(xml: &str) -> Result<roxmltree::Document<'_>> {
    roxmltree::Document::parse(xml).map_err(|e| parse_error(&e.to_string()))
}

/// A type name as value() takes it: `bigint`, `nvarchar(max)`, `decimal(18,3)`.
fn type_of(text: &str) -> Result<engine::record::SqlType> {
    let text = text.trim();
    let (name, args) = match text.split_once('(') {
        Some((name, rest)) => {
            let args: Vec<u64> = rest
                .trim_end_matches(')')
                .split(',')
                .map(|a| {
                    if a.trim().eq_ignore_ascii_case("max") {
                        0
                    } else {
                        a.trim().parse().unwrap_or(0)
                    }
                })
                .collect();
            (name.trim(), args)
        }
        None => (text, Vec::new()),
    };
    parse_type_name(name, &args).ok_or_else(|| {
        SqlError::new(
            2000,
            16,
            1,
            format!("Column, parameter, or variable: cannot find data type {text}."),
        )
    })
}

/// `xml.value(path, type)`: NULL for a NULL xml or an empty sequence.
pub fn value(xml: &Value, path: &str, type_name: &str) -> Result<Value> {
    let path = parse_path("value", path)?;
    let to = type_of(type_name)?;
    let Value::Text(text) = xml else { return Ok(Value::Null) };
    let document = document(text)?;
    let context_node = text.starts_with(CONTEXT_MARK);
    let Some(item) = select(&document, &path, context_node).into_iter().next() else {
        return Ok(Value::Null);
    };
    let mut string = item.string_value();
    if matches!(
        to,
        engine::record::SqlType::DateTime2(_)
            | engine::record::SqlType::DateTime
            | engine::record::SqlType::Date
    ) {
        // xs:dateTime's form: 2023-05-15T10:30:23.123Z.
        string = string.trim_end_matches('Z').replacen('T', " ", 1);
    }
    if matches!(to, engine::record::SqlType::Bit) {
        string = match string.as_str() {
            "true" => "1".into(),
            "false" => "0".into(),
            other => other.into(),
        };
    }
    convert(&Value::Text(string), to)
}

/// `xml.exist(path)`: 1 if the path selects anything, 0 if not, NULL for a NULL xml.
pub fn exist(xml: &Value, path: &str) -> Result<Value> {
    let path = parse_path("exist", path)?;
    let Value::Text(text) = xml else { return Ok(Value::Null) };
    let document = document(text)?;
    let context_node = text.starts_with(CONTEXT_MARK);
    Ok(Value::Bit(!select(&document, &path, context_node).is_empty()))
}

/// `xml.nodes(path)`: a value per element the path selects (none for a NULL xml), each its
/// element's text behind [`CONTEXT_MARK`].
pub fn nodes(xml: &Value, path: &str) -> Result<Vec<Value>> {
    let path = parse_path("nodes", path)?;
    let Value::Text(text) = xml else { return Ok(Vec::new()) };
    let document = document(text)?;
    let context_node = text.starts_with(CONTEXT_MARK);
    let rows = select(&document, &path, context_node)
        .into_iter()
        .filter_map(|item| match item {
            Item::Node(node) if node.is_element() => {
                Some(Value::Text(format!("{CONTEXT_MARK}{}", &text[node.range()])))
            }
            _ => None,
        })
        .collect();
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = r#"<event name="database_file_size_change" package="sqlserver" timestamp="2023-05-15T10:30:23.005Z"><data name="duration"><value>3000</value></data><data name="file_type"><value>1</value><text>Log file</text></data><data name="is_automatic"><value>true</value></data><data name="file_name"><value>ifi_log</value></data><action name="session_id" package="sqlserver"><value>53</value></action></event>"#;

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn values_come_from_the_paths_event_scripts_use() {
        let xml = text(EVENT);
        assert_eq!(
            value(&xml, r#"(event/data[@name="duration"]/value)[1]"#, "bigint").unwrap(),
            Value::BigInt(3000)
        );
        assert_eq!(
            value(&xml, "(/event/data[@name='file_type']/text)[1]", "nvarchar(20)").unwrap(),
            text("Log file")
        );
        assert_eq!(
            value(&xml, "(event/@name)[1]", "varchar(60)").unwrap(),
            text("database_file_size_change")
        );
        assert_eq!(
            value(&xml, "(event/action[@name=\"session_id\"]/value)[1]", "int").unwrap(),
            Value::Int(53)
        );
        assert_eq!(
            value(&xml, "(event/data[@name=\"is_automatic\"]/value)[1]", "bit").unwrap(),
            Value::Bit(true)
        );
        assert_eq!(
            value(&xml, "(//data[@name=\"file_name\"]/value/text())[1]", "sysname").unwrap(),
            text("ifi_log")
        );
        assert_eq!(
            value(&xml, "(event/data[@name=\"missing\"]/value)[1]", "int").unwrap(),
            Value::Null
        );
        let at = value(&xml, "(event/@timestamp)[1]", "datetime2").unwrap();
        assert_eq!(crate::value::display(&at), "2023-05-15 10:30:23.0050000");
    }

    #[test]
    fn positions_descendants_and_exist() {
        let ring = text(
            r#"<RingBufferTarget eventCount="2"><event name="a"><data name="d"><value>1</value></data></event><event name="b"><data name="d"><value>2</value></data></event></RingBufferTarget>"#,
        );
        assert_eq!(
            value(&ring, "(RingBufferTarget/event/data/value)[2]", "int").unwrap(),
            Value::Int(2)
        );
        assert_eq!(
            value(&ring, "(RingBufferTarget/@eventCount)[1]", "int").unwrap(),
            Value::Int(2)
        );
        assert_eq!(
            value(&ring, "(//event[@name=\"b\"]/data/value)[1]", "int").unwrap(),
            Value::Int(2)
        );
        assert_eq!(exist(&ring, "//event[@name=\"b\"]").unwrap(), Value::Bit(true));
        assert_eq!(exist(&ring, "//event[@name=\"c\"]").unwrap(), Value::Bit(false));
        assert_eq!(value(&Value::Null, "(a)[1]", "int").unwrap(), Value::Null);
    }

    #[test]
    fn nodes_rows_are_the_context_of_relative_paths() {
        let ring = text(
            r#"<RingBufferTarget><event name="a"><data name="d"><value>1</value></data></event><event name="b"><data name="d"><value>2 &lt; 3</value></data></event></RingBufferTarget>"#,
        );
        let rows = nodes(&ring, "RingBufferTarget/event").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(value(&rows[0], "(@name)[1]", "varchar(10)").unwrap(), text("a"));
        assert_eq!(
            value(&rows[1], "(data[@name=\"d\"]/value)[1]", "varchar(10)").unwrap(),
            text("2 < 3")
        );
        assert_eq!(
            value(&rows[1], "(/event/@name)[1]", "varchar(10)").unwrap(),
            text("b"),
            "absolute paths start at the document"
        );
        assert_eq!(exist(&rows[0], "data").unwrap(), Value::Bit(true));
        assert_eq!(nodes(&rows[1], "data").unwrap().len(), 1, "nodes() of a nodes() row");
        assert!(nodes(&Value::Null, "a").unwrap().is_empty());
    }

    #[test]
    fn bad_paths_and_bad_xml_are_errors() {
        assert_eq!(value(&text(EVENT), "(event/data[@name=)[1]", "int").unwrap_err().number, 2209);
        assert_eq!(value(&text("<a>"), "(a)[1]", "int").unwrap_err().number, 9400);
        assert_eq!(value(&text(EVENT), "(event)[1]", "notatype").unwrap_err().number, 2000);
    }
}
