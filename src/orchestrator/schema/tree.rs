//! A parsed orchestrator file that remembers where every key and value stood.
//!
//! serde_yaml and serde_json report positions only for syntax errors; a
//! schema violation ("`execution.result` is not one of pass, fail") must point
//! at the offending key or value too. So both formats are read into one small
//! tree of [`Node`]s, each with its line and column: YAML through the
//! `saphyr-parser` event stream (which carries spans), JSON through a strict
//! RFC 8259 reader of our own that counts lines as it goes.
//!
//! Lines and columns are 1-based, columns counted in characters, as editors
//! and `file:line:col` consumers expect.

use saphyr_parser::{Event, Parser, ScalarStyle};

/// Deepest nesting accepted. Orchestrator files nest five levels at most; the
/// limit keeps a hostile file from exhausting the stack when a tree is dropped.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

impl Pos {
    pub const START: Pos = Pos { line: 1, col: 1 };
}

#[derive(Debug, Clone)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// One `key: value` of a mapping, in file order.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub key_pos: Pos,
    pub value: Node,
}

/// Why a file could not be read as YAML or JSON at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub message: String,
}

impl Node {
    /// What the value is, for "expected X, got Y" messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self.value {
            Value::Int(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The entry for `key` in a mapping.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries().iter().find(|entry| entry.key == key)
    }

    /// The value under `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    /// Follows a chain of keys.
    pub fn at(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(self, |node, key| node.get(key))
    }
}

// ---------------------------------------------------------------- YAML

/// Reads one YAML document. An empty file is a `Null` root.
pub fn parse_yaml(text: &str) -> Result<Node, SyntaxError> {
    let mut builder = Builder::default();
    let mut n_documents = 0;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|error| SyntaxError {
            pos: Pos {
                line: error.marker().line(),
                col: error.marker().col() + 1,
            },
            message: error.info().to_string(),
        })?;
        let pos = Pos {
            line: span.start.line(),
            col: span.start.col() + 1,
        };
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            Event::DocumentStart(_) => {
                n_documents += 1;
                if n_documents > 1 {
                    return Err(SyntaxError {
                        pos,
                        message:
                            "a second YAML document (---): an orchestrator file holds exactly one"
                                .into(),
                    });
                }
            }
            Event::Alias(_) => {
                return Err(SyntaxError {
                    pos,
                    message: "YAML aliases (*name) are not allowed in orchestrator files: write the value out".into(),
                });
            }
            Event::Scalar(text, style, _anchor, tag) => {
                let value = resolve_scalar(&text, style, tag.as_deref(), pos)?;
                builder.finish_node(Node { pos, value }, Some(text.into_owned()))?;
            }
            Event::SequenceStart(_, ref tag) | Event::MappingStart(_, ref tag) => {
                if let Some(tag) = tag {
                    return Err(SyntaxError {
                        pos,
                        message: format!("YAML tag {tag} is not allowed in orchestrator files"),
                    });
                }
                let frame = if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq {
                        pos,
                        items: Vec::new(),
                    }
                } else {
                    Frame::Map {
                        pos,
                        entries: Vec::new(),
                        key: None,
                    }
                };
                if builder.stack.len() >= MAX_DEPTH {
                    return Err(SyntaxError {
                        pos,
                        message: format!("nested deeper than {MAX_DEPTH} levels"),
                    });
                }
                builder.stack.push(frame);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match builder.stack.pop() {
                    Some(Frame::Seq { pos, items }) => Node {
                        pos,
                        value: Value::Seq(items),
                    },
                    Some(Frame::Map { pos, entries, .. }) => Node {
                        pos,
                        value: Value::Map(entries),
                    },
                    None => {
                        return Err(SyntaxError {
                            pos,
                            message: "unbalanced end of a collection".into(),
                        });
                    }
                };
                builder.finish_node(node, None)?;
            }
        }
    }
    Ok(builder.root.unwrap_or(Node {
        pos: Pos::START,
        value: Value::Null,
    }))
}

enum Frame {
    Seq {
        pos: Pos,
        items: Vec<Node>,
    },
    Map {
        pos: Pos,
        entries: Vec<Entry>,
        key: Option<(String, Pos)>,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Node>,
}

impl Builder {
    /// Places a finished node: as the root, a list item, a key or a value.
    /// `raw` is a scalar's text as written, which is what a key means.
    fn finish_node(&mut self, node: Node, raw: Option<String>) -> Result<(), SyntaxError> {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    let Some(name) = raw else {
                        return Err(SyntaxError {
                            pos: node.pos,
                            message: "a mapping key must be a plain name, not a list or mapping"
                                .into(),
                        });
                    };
                    if let Some(first) = entries.iter().find(|entry| entry.key == name) {
                        return Err(SyntaxError {
                            pos: node.pos,
                            message: format!(
                                "duplicate key {name:?} (first at line {})",
                                first.key_pos.line
                            ),
                        });
                    }
                    *key = Some((name, node.pos));
                }
                Some((name, key_pos)) => entries.push(Entry {
                    key: name,
                    key_pos,
                    value: node,
                }),
            },
        }
        Ok(())
    }
}

/// Gives a scalar its type the way YAML 1.2's core schema (and serde_yaml)
/// does: only plain scalars can be null, booleans or numbers.
fn resolve_scalar(
    text: &str,
    style: ScalarStyle,
    tag: Option<&saphyr_parser::Tag>,
    pos: Pos,
) -> Result<Value, SyntaxError> {
    if let Some(tag) = tag {
        let core = tag.is_yaml_core_schema();
        return match (core, tag.suffix.as_str()) {
            (true, "str") | (false, "") => Ok(Value::Str(text.to_string())),
            (true, "int" | "float" | "bool" | "null") => Ok(resolve_plain(text)),
            _ => Err(SyntaxError {
                pos,
                message: format!("YAML tag {tag} is not allowed in orchestrator files"),
            }),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Value::Str(text.to_string()));
    }
    Ok(resolve_plain(text))
}

fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if let Some(n) = parse_yaml_int(text) {
        return Value::Int(n);
    }
    if let Some(x) = parse_yaml_float(text) {
        return Value::Float(x);
    }
    Value::Str(text.to_string())
}

fn parse_yaml_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (radix, digits) = if let Some(hex) = digits.strip_prefix("0x") {
        (16, hex)
    } else if let Some(octal) = digits.strip_prefix("0o") {
        (8, octal)
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i64::from_str_radix(digits, radix).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

fn parse_yaml_float(text: &str) -> Option<f64> {
    let unsigned = text.trim_start_matches(['-', '+']);
    if text.len() - unsigned.len() > 1 {
        return None;
    }
    match unsigned {
        ".inf" | ".Inf" | ".INF" => {
            return Some(if text.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        ".nan" | ".NaN" | ".NAN" if unsigned.len() == text.len() => return Some(f64::NAN),
        _ => {}
    }
    // [0-9]*(\.[0-9]*)?([eE][-+]?[0-9]+)? with at least one digit before the exponent.
    let bytes = unsigned.as_bytes();
    let mut index = 0;
    let mut n_digits = 0;
    while index < bytes.len() && bytes[index].is_ascii_digit() {
        index += 1;
        n_digits += 1;
    }
    if index < bytes.len() && bytes[index] == b'.' {
        index += 1;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
            n_digits += 1;
        }
    }
    if n_digits == 0 {
        return None;
    }
    if index < bytes.len() && matches!(bytes[index], b'e' | b'E') {
        index += 1;
        if index < bytes.len() && matches!(bytes[index], b'+' | b'-') {
            index += 1;
        }
        let exponent_start = index;
        while index < bytes.len() && bytes[index].is_ascii_digit() {
            index += 1;
        }
        if index == exponent_start {
            return None;
        }
    }
    if index != bytes.len() {
        return None;
    }
    text.parse().ok()
}

// ---------------------------------------------------------------- JSON

/// Reads one JSON value (RFC 8259), rejecting duplicate keys.
pub fn parse_json(text: &str) -> Result<Node, SyntaxError> {
    let mut reader = JsonReader {
        text,
        bytes: text.as_bytes(),
        index: 0,
        line: 1,
        col: 1,
    };
    reader.skip_whitespace();
    if reader.index == reader.bytes.len() {
        return Err(reader.error("the file is empty: expected a JSON object"));
    }
    let node = reader.value(0)?;
    reader.skip_whitespace();
    if reader.index != reader.bytes.len() {
        return Err(reader.error("trailing characters after the JSON value"));
    }
    Ok(node)
}

struct JsonReader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    index: usize,
    line: usize,
    col: usize,
}

impl JsonReader<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos: self.pos(),
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.index).copied()
    }

    /// Moves past one byte, counting lines and (character) columns.
    fn bump(&mut self) {
        let byte = self.bytes[self.index];
        self.index += 1;
        if byte == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if byte & 0xC0 != 0x80 {
            self.col += 1;
        }
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }

    fn expect_byte(&mut self, wanted: u8, what: &str) -> Result<(), SyntaxError> {
        self.skip_whitespace();
        if self.peek() == Some(wanted) {
            self.bump();
            Ok(())
        } else {
            Err(self.error(format!("expected {what}")))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        self.skip_whitespace();
        let pos = self.pos();
        if depth >= MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let value = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::Str(self.string()?),
            Some(b't') => self.literal("true", Value::Bool(true))?,
            Some(b'f') => self.literal("false", Value::Bool(false))?,
            Some(b'n') => self.literal("null", Value::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a JSON value")),
            None => return Err(self.error("unexpected end of file: expected a JSON value")),
        };
        Ok(Node { pos, value })
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, SyntaxError> {
        if self.bytes[self.index..].starts_with(word.as_bytes()) {
            for _ in 0..word.len() {
                self.bump();
            }
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump(); // {
        let mut entries: Vec<Entry> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.bump();
            return Ok(Value::Map(entries));
        }
        loop {
            self.skip_whitespace();
            let key_pos = self.pos();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            if let Some(first) = entries.iter().find(|entry| entry.key == key) {
                return Err(SyntaxError {
                    pos: key_pos,
                    message: format!(
                        "duplicate key {key:?} (first at line {})",
                        first.key_pos.line
                    ),
                });
            }
            self.expect_byte(b':', "`:` after the key")?;
            let value = self.value(depth + 1)?;
            entries.push(Entry {
                key,
                key_pos,
                value,
            });
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b'}') => {
                    self.bump();
                    return Ok(Value::Map(entries));
                }
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump(); // [
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.bump();
            return Ok(Value::Seq(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b']') => {
                    self.bump();
                    return Ok(Value::Seq(items));
                }
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        self.bump(); // opening quote
        let mut out = String::new();
        loop {
            let start = self.index;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.bump();
            }
            out.push_str(&self.text[start..self.index]);
            match self.peek() {
                Some(b'"') => {
                    self.bump();
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.bump();
                    let escaped = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.bump();
                            out.push(self.unicode_escape()?);
                            continue;
                        }
                        _ => return Err(self.error("invalid escape in a string")),
                    };
                    self.bump();
                    out.push(escaped);
                }
                Some(_) => return Err(self.error("control character in a string: escape it")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    /// The `XXXX` after `\u`, joining a surrogate pair when one follows.
    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let high = self.hex4()?;
        if (0xD800..0xDC00).contains(&high) {
            if self.bytes[self.index..].starts_with(b"\\u") {
                self.bump();
                self.bump();
                let low = self.hex4()?;
                if (0xDC00..0xE000).contains(&low) {
                    let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                    return char::from_u32(code)
                        .ok_or_else(|| self.error("invalid unicode escape"));
                }
            }
            return Err(self.error("unpaired surrogate in a unicode escape"));
        }
        char::from_u32(high).ok_or_else(|| self.error("invalid unicode escape"))
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self
            .text
            .get(self.index..self.index + 4)
            .filter(|digits| digits.chars().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after \\u"))?;
        let code = u32::from_str_radix(digits, 16).map_err(|_| self.error("invalid \\u escape"))?;
        for _ in 0..4 {
            self.bump();
        }
        Ok(code)
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.index;
        if self.peek() == Some(b'-') {
            self.bump();
        }
        match self.peek() {
            Some(b'0') => self.bump(),
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.bump();
                }
            }
            _ => return Err(self.error("invalid number")),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.bump();
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number: digits must follow the decimal point"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.bump();
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integral = false;
            self.bump();
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.bump();
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number: digits must follow the exponent"));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.bump();
            }
        }
        let literal = &self.text[start..self.index];
        if integral && let Ok(n) = literal.parse::<i64>() {
            return Ok(Value::Int(n));
        }
        literal
            .parse::<f64>()
            .map(Value::Float)
            .map_err(|_| self.error("invalid number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: usize, col: usize) -> Pos {
        Pos { line, col }
    }

    #[test]
    fn yaml_keys_and_values_carry_positions() {
        let root = parse_yaml("version: 1\nexecution:\n  result: \"pass\"\nlist:\n  - a\n  - 2\n")
            .unwrap();
        assert_eq!(root.entry("version").unwrap().key_pos, pos(1, 1));
        assert_eq!(root.get("version").unwrap().as_int(), Some(1));
        let result = root.at(&["execution", "result"]).unwrap();
        assert_eq!(result.pos, pos(3, 11));
        assert_eq!(result.as_str(), Some("pass"));
        let items = root.get("list").unwrap().as_seq();
        assert_eq!(items[1].pos, pos(6, 5));
        assert_eq!(items[1].as_int(), Some(2));
    }

    #[test]
    fn yaml_scalars_resolve_like_the_core_schema() {
        let root = parse_yaml(
            "a: ~\nb: true\nc: 0x1F\nd: 1.5e3\ne: 2024-01-15T10:00:00\nf: '12'\ng: .inf\nh: T1-S2\n",
        )
        .unwrap();
        assert!(matches!(root.get("a").unwrap().value, Value::Null));
        assert!(matches!(root.get("b").unwrap().value, Value::Bool(true)));
        assert_eq!(root.get("c").unwrap().as_int(), Some(31));
        assert!(matches!(root.get("d").unwrap().value, Value::Float(x) if x == 1500.0));
        assert_eq!(root.get("e").unwrap().as_str(), Some("2024-01-15T10:00:00"));
        assert_eq!(root.get("f").unwrap().as_str(), Some("12"));
        assert!(matches!(root.get("g").unwrap().value, Value::Float(x) if x.is_infinite()));
        assert_eq!(root.get("h").unwrap().as_str(), Some("T1-S2"));
    }

    #[test]
    fn yaml_syntax_errors_have_positions() {
        let error = parse_yaml("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(error.pos.line >= 1, "{error:?}");
        let error = parse_yaml("a: 1\na: 2\n").unwrap_err();
        assert_eq!(error.pos, pos(2, 1));
        assert_eq!(error.message, "duplicate key \"a\" (first at line 1)");
        let error = parse_yaml("a: &x 1\nb: *x\n").unwrap_err();
        assert_eq!(error.pos, pos(2, 4));
        let error = parse_yaml("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(error.message.contains("second YAML document"), "{error:?}");
    }

    #[test]
    fn yaml_nesting_is_bounded() {
        let deep = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
        let error = parse_yaml(&deep).unwrap_err();
        assert!(error.message.contains("nested deeper"), "{error:?}");
    }

    #[test]
    fn empty_yaml_is_null() {
        assert!(matches!(parse_yaml("").unwrap().value, Value::Null));
        assert!(matches!(
            parse_yaml("# only a comment\n").unwrap().value,
            Value::Null
        ));
    }

    #[test]
    fn json_values_carry_positions() {
        let root = parse_json("{\n  \"version\": 2,\n  \"request\": {\"id\": \"R1\", \"x\": [1.5, null, \"é\\u00e9\\ud83d\\ude00\"]}\n}").unwrap();
        assert_eq!(root.entry("version").unwrap().key_pos, pos(2, 3));
        assert_eq!(root.get("version").unwrap().pos, pos(2, 14));
        let id = root.at(&["request", "id"]).unwrap();
        assert_eq!(id.pos, pos(3, 21));
        let x = root.at(&["request", "x"]).unwrap().as_seq();
        assert!(matches!(x[0].value, Value::Float(v) if v == 1.5));
        assert_eq!(x[2].as_str(), Some("éé😀"));
    }

    #[test]
    fn json_errors_have_positions() {
        let cases = [
            ("{\"a\": 1,}", pos(1, 9), "expected a string key"),
            ("{\"a\": 1 \"b\": 2}", pos(1, 9), "expected `,` or `}`"),
            ("{\"a\": 01}", pos(1, 8), "expected `,` or `}`"),
            (
                "{\"a\": 1}\n{}",
                pos(2, 1),
                "trailing characters after the JSON value",
            ),
            (
                "{\"a\": 1, \"a\": 2}",
                pos(1, 10),
                "duplicate key \"a\" (first at line 1)",
            ),
            ("", pos(1, 1), "the file is empty: expected a JSON object"),
            (
                "{\"a\": \"x\ny\"}",
                pos(1, 9),
                "control character in a string: escape it",
            ),
            ("{\"a\": tru}", pos(1, 7), "expected a JSON value"),
        ];
        for (text, want_pos, want_message) in cases {
            let error = parse_json(text).unwrap_err();
            assert_eq!(
                (error.pos, error.message.as_str()),
                (want_pos, want_message),
                "{text:?}"
            );
        }
    }
}
