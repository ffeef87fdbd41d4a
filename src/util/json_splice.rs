//! Edits a JSON document's text in place: [`rewrite`] turns the text of one
//! value into the text of another while keeping every byte of what did not
//! change — the user's indentation, spacing, key order and line breaks. A
//! member or element that went away is cut out with its separator; one
//! that came is written in the style of its neighbours; a scalar that
//! changed is replaced where it stands.
//!
//! `install` and `--uninstall` write `.claude/settings.json` through it, so
//! a hand-formatted file keeps its formatting, and what install inserted is
//! cut out again by uninstall, leaving the bytes as they were.
//!
//! Strict JSON only (what `serde_json` reads); no comments.

use serde_json::Value;

/// A parsed value with where it stands in the text.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Scalar,
    /// Members as (key, where the key's opening quote is, value).
    Object(Vec<(String, usize, Node)>),
    Array(Vec<Node>),
}

/// One replacement of `text[start..end]`.
#[derive(Debug)]
struct Edit {
    start: usize,
    end: usize,
    with: String,
}

/// The text of `new`, made from `text` (the text of some JSON value) with
/// as few changes as possible. `None` when `text` is not one JSON value.
pub fn rewrite(text: &str, new: &Value) -> Option<String> {
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    parser.skip_ws();
    let root = parser.value(0)?;
    parser.skip_ws();
    if parser.at != text.len() {
        return None;
    }
    let style = Style::of(text);
    let mut edits = Vec::new();
    diff(text, &root, new, &style, &mut edits)?;
    edits.sort_by_key(|edit| edit.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for edit in &edits {
        if edit.start < at {
            return None;
        }
        out.push_str(&text[at..edit.start]);
        out.push_str(&edit.with);
        at = edit.end;
    }
    out.push_str(&text[at..]);
    // Never hand back text that does not say what was asked.
    (serde_json::from_str::<Value>(&out).ok()? == *new).then_some(out)
}

/// The first key that appears twice in one object of `text` (a JSON
/// document), as a path of keys (`hooks`, `hooks.stop`). `serde_json` keeps
/// the last of them; an edit made through [`rewrite`] would then change
/// both and lose what the first held. `None` when every object's keys are
/// distinct, or when `text` is not JSON.
pub fn duplicate_key(text: &str) -> Option<String> {
    let mut parser = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    parser.skip_ws();
    let root = parser.value(0)?;
    first_duplicate(&root, "")
}

fn first_duplicate(node: &Node, path: &str) -> Option<String> {
    let join = |key: &str| match path {
        "" => key.to_string(),
        _ => format!("{path}.{key}"),
    };
    match &node.kind {
        Kind::Scalar => None,
        Kind::Array(items) => items.iter().find_map(|item| first_duplicate(item, path)),
        Kind::Object(members) => {
            for (at, (key, _, _)) in members.iter().enumerate() {
                if members[..at].iter().any(|(other, _, _)| other == key) {
                    return Some(join(key));
                }
            }
            members
                .iter()
                .find_map(|(key, _, value)| first_duplicate(value, &join(key)))
        }
    }
}

/// How the file indents: one level's whitespace.
struct Style {
    unit: String,
}

impl Style {
    fn of(text: &str) -> Style {
        let unit = text
            .lines()
            .map(|line| &line[..line.len() - line.trim_start().len()])
            .filter(|indent| !indent.is_empty())
            .min_by_key(|indent| indent.len())
            .unwrap_or("  ")
            .to_string();
        Style { unit }
    }
}

fn parse_value(text: &str, node: &Node) -> Option<Value> {
    serde_json::from_str(&text[node.start..node.end]).ok()
}

/// The whitespace at the start of the line `at` is on.
fn line_indent(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start().len()]
}

/// `value` serialised for a place indented by `indent`: one line when the
/// container around it is written on one line.
fn render(value: &Value, indent: &str, style: &Style, multiline: bool) -> Option<String> {
    if !multiline {
        return serde_json::to_string(value)
            .ok()
            .map(|text| spaced_compact(&text));
    }
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(style.unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).ok()?;
    let text = String::from_utf8(out).ok()?;
    Some(text.replace('\n', &format!("\n{indent}")))
}

/// `{"a":1,"b":[2]}` as `{"a": 1, "b": [2]}`: how people write one-line JSON.
fn spaced_compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        out.push(c);
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_string = true,
                ':' | ',' => out.push(' '),
                _ => {}
            }
        }
    }
    out
}

fn diff(text: &str, node: &Node, new: &Value, style: &Style, edits: &mut Vec<Edit>) -> Option<()> {
    if parse_value(text, node).as_ref() == Some(new) {
        return Some(());
    }
    match (&node.kind, new) {
        (Kind::Object(members), Value::Object(wanted)) => {
            let mut kept_any = false;
            let keep: Vec<bool> = members
                .iter()
                .map(|(key, _, _)| wanted.contains_key(key))
                .collect();
            for ((key, _, value), keep) in members.iter().zip(&keep) {
                if *keep {
                    kept_any = true;
                    diff(text, value, &wanted[key], style, edits)?;
                }
            }
            let spans: Vec<(usize, usize)> = members
                .iter()
                .map(|(_, key_start, value)| (*key_start, value.end))
                .collect();
            cut(text, node, &spans, &keep, edits);
            let added: Vec<(&String, &Value)> = wanted
                .iter()
                .filter(|(key, _)| !members.iter().any(|(have, _, _)| have == *key))
                .collect();
            if !added.is_empty() {
                let colon = members
                    .first()
                    .map(|(_, key_start, value)| {
                        let key_end = text[*key_start + 1..value.start]
                            .find('"')
                            .map(|i| key_start + 2 + i)
                            .unwrap_or(value.start);
                        text[key_end..value.start].to_string()
                    })
                    .unwrap_or_else(|| ": ".into());
                let items = added
                    .iter()
                    .map(|(key, value)| (format!("{}{colon}", Value::from(key.as_str())), *value))
                    .collect::<Vec<_>>();
                let last_kept = members
                    .iter()
                    .zip(&keep)
                    .rev()
                    .find(|(_, keep)| **keep)
                    .map(|((_, _, value), _)| value.end);
                append(
                    text, node, &spans, kept_any, last_kept, &items, style, edits,
                )?;
            }
            Some(())
        }
        (Kind::Array(elements), Value::Array(wanted)) => {
            let old: Vec<Option<Value>> = elements.iter().map(|e| parse_value(text, e)).collect();
            // Old elements kept as they are, in order (a longest common
            // subsequence); between two of them, old and new elements are
            // paired in order and edited, the rest cut or added. When that
            // would put a new element before a kept one (which cannot be
            // written in place), elements are paired by position instead:
            // each edited where it stands, the surplus cut or appended.
            let mark = edits.len();
            let pairs = common_subsequence(&old, wanted);
            if diff_array(text, node, elements, wanted, &pairs, style, edits).is_some() {
                return Some(());
            }
            edits.truncate(mark);
            diff_array(text, node, elements, wanted, &[], style, edits)
        }
        _ => {
            let indent = line_indent(text, node.start).to_string();
            let multiline = text[node.start..node.end].contains('\n')
                || !matches!(node.kind, Kind::Scalar)
                || new.is_object()
                || new.is_array();
            let multiline = multiline && !is_one_line_context(text, node);
            edits.push(Edit {
                start: node.start,
                end: node.end,
                with: render(new, &indent, style, multiline)?,
            });
            Some(())
        }
    }
}

/// An array's elements edited into `wanted` with `pairs` (old index, new
/// index) kept as they are: `None` when that needs a new element before a
/// kept one.
#[allow(clippy::too_many_arguments)]
fn diff_array(
    text: &str,
    node: &Node,
    elements: &[Node],
    wanted: &[Value],
    pairs: &[(usize, usize)],
    style: &Style,
    edits: &mut Vec<Edit>,
) -> Option<()> {
    let mut keep = vec![false; elements.len()];
    let mut anchors: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let mut prev = (0usize, 0usize);
    for &(i, j) in pairs
        .iter()
        .chain(std::iter::once(&(elements.len(), wanted.len())))
    {
        let olds: Vec<usize> = (prev.0..i).collect();
        let news: Vec<usize> = (prev.1..j).collect();
        let paired = olds.len().min(news.len());
        for k in 0..paired {
            keep[olds[k]] = true;
            diff(text, &elements[olds[k]], &wanted[news[k]], style, edits)?;
        }
        for &extra in &news[paired..] {
            anchors.push((None, Some(extra)));
        }
        if i < elements.len() {
            keep[i] = true;
        }
        prev = (i + 1, j + 1);
    }
    let spans: Vec<(usize, usize)> = elements.iter().map(|e| (e.start, e.end)).collect();
    cut(text, node, &spans, &keep, edits);
    let added: Vec<usize> = anchors.iter().filter_map(|(_, new)| *new).collect();
    if !added.is_empty() {
        // Only appending is supported in place: new elements must
        // all come after every kept one.
        let kept_count = keep.iter().filter(|k| **k).count();
        if added.iter().any(|&j| j < kept_count) {
            return None;
        }
        let last_kept = elements
            .iter()
            .zip(&keep)
            .rev()
            .find(|(_, keep)| **keep)
            .map(|(element, _)| element.end);
        let items: Vec<(String, &Value)> =
            added.iter().map(|&j| (String::new(), &wanted[j])).collect();
        append(
            text,
            node,
            &spans,
            kept_count > 0,
            last_kept,
            &items,
            style,
            edits,
        )?;
    }
    Some(())
}

/// Whether the value sits on a line with other values (a one-line container).
fn is_one_line_context(text: &str, node: &Node) -> bool {
    let line_end = text[node.end..]
        .find('\n')
        .map_or(text.len(), |i| node.end + i);
    let after = text[node.end..line_end].trim();
    !(after.is_empty() || after == ",")
}

/// Pairs of (old index, new index) of equal elements, in order, as many as can be.
fn common_subsequence(old: &[Option<Value>], new: &[Value]) -> Vec<(usize, usize)> {
    let (n, m) = (old.len(), new.len());
    let mut table = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] = if old[i].as_ref() == Some(&new[j]) {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut pairs) = (0, 0, Vec::new());
    while i < n && j < m {
        if old[i].as_ref() == Some(&new[j]) {
            pairs.push((i, j));
            i += 1;
            j += 1;
        } else if table[i + 1][j + 1] == table[i][j] {
            // Passing both costs no pair: they stand at the same place and
            // are edited one into the other. Passing only one could pair
            // the other with a later equal element and leave a new one to
            // go in before a kept one, which cannot be written in place.
            i += 1;
            j += 1;
        } else if table[i + 1][j] >= table[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    pairs
}

/// Cuts the items (members or elements, by their spans) not kept, each run
/// with the separator that joined it to the rest.
fn cut(text: &str, node: &Node, spans: &[(usize, usize)], keep: &[bool], edits: &mut Vec<Edit>) {
    let n = spans.len();
    if keep.iter().all(|k| !k) && n > 0 {
        // Everything goes: `[ ... ]` becomes `[]`.
        edits.push(Edit {
            start: node.start + 1,
            end: node.end - 1,
            with: String::new(),
        });
        return;
    }
    let _ = text;
    let mut i = 0;
    while i < n {
        if keep[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < n && !keep[j + 1] {
            j += 1;
        }
        let (start, end) = if j + 1 < n {
            // Up to the next kept item: the run and the separator after it.
            (spans[i].0, spans[j + 1].0)
        } else {
            // The last items: from the end of the kept one before them.
            (spans[i - 1].1, spans[j].1)
        };
        edits.push(Edit {
            start,
            end,
            with: String::new(),
        });
        i = j + 1;
    }
}

/// Appends `items` (a prefix such as `"key": `, and a value) after the last
/// kept item, or into the emptied container, in the container's style.
#[allow(clippy::too_many_arguments)]
fn append(
    text: &str,
    node: &Node,
    spans: &[(usize, usize)],
    kept_any: bool,
    last_kept: Option<usize>,
    items: &[(String, &Value)],
    style: &Style,
    edits: &mut Vec<Edit>,
) -> Option<()> {
    // The separator between items: after the first comma, else the space
    // before the first item, else a new line one level deeper.
    let outer = line_indent(text, node.start).to_string();
    let sep = if spans.len() >= 2 {
        let between = &text[spans[0].1..spans[1].0];
        between.trim_start().trim_start_matches(',').to_string()
    } else if let Some(first) = spans.first() {
        let before = &text[node.start + 1..first.0];
        if before.contains('\n') {
            before.to_string()
        } else {
            " ".into()
        }
    } else {
        format!("\n{outer}{}", style.unit)
    };
    let multiline = sep.contains('\n');
    let indent = sep.rsplit('\n').next().unwrap_or("").to_string();
    let mut inserted = String::new();
    for (k, (prefix, value)) in items.iter().enumerate() {
        if kept_any || k > 0 {
            inserted.push(',');
        }
        if kept_any || k > 0 || multiline {
            inserted.push_str(&sep);
        }
        inserted.push_str(prefix);
        inserted.push_str(&render(value, &indent, style, multiline)?);
    }
    match last_kept {
        Some(at) if kept_any => edits.push(Edit {
            start: at,
            end: at,
            with: inserted,
        }),
        _ => {
            // An empty (or emptied) container: its inside is rewritten.
            if multiline {
                inserted.push('\n');
                inserted.push_str(&outer);
            }
            edits.retain(|edit| !(edit.start == node.start + 1 && edit.end == node.end - 1));
            edits.push(Edit {
                start: node.start + 1,
                end: node.end - 1,
                with: inserted,
            });
        }
    }
    Some(())
}

/// A strict JSON parser that keeps where each value stands.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > 128 {
            return None;
        }
        let start = self.at;
        match *self.text.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                self.skip_ws();
                if self.text.get(self.at) == Some(&b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_ws();
                        let key_start = self.at;
                        self.string()?;
                        let key: String =
                            serde_json::from_slice(&self.text[key_start..self.at]).ok()?;
                        self.skip_ws();
                        if self.text.get(self.at) != Some(&b':') {
                            return None;
                        }
                        self.at += 1;
                        self.skip_ws();
                        let value = self.value(depth + 1)?;
                        members.push((key, key_start, value));
                        self.skip_ws();
                        match self.text.get(self.at)? {
                            b',' => self.at += 1,
                            b'}' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                Some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Object(members),
                })
            }
            b'[' => {
                self.at += 1;
                let mut elements = Vec::new();
                self.skip_ws();
                if self.text.get(self.at) == Some(&b']') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_ws();
                        elements.push(self.value(depth + 1)?);
                        self.skip_ws();
                        match self.text.get(self.at)? {
                            b',' => self.at += 1,
                            b']' => {
                                self.at += 1;
                                break;
                            }
                            _ => return None,
                        }
                    }
                }
                Some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Array(elements),
                })
            }
            b'"' => {
                self.string()?;
                Some(self.scalar(start))
            }
            _ => {
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
                {
                    self.at += 1;
                }
                (self.at > start).then(|| self.scalar(start))
            }
        }
    }

    fn scalar(&self, start: usize) -> Node {
        Node {
            start,
            end: self.at,
            kind: Kind::Scalar,
        }
    }

    /// Past one string literal (checked later by serde_json).
    fn string(&mut self) -> Option<()> {
        if self.text.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        loop {
            match *self.text.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_twice_in_one_object_is_found() {
        assert_eq!(
            duplicate_key(r#"{"version":1,"hooks":{"stop":[]},"hooks":{}}"#).as_deref(),
            Some("hooks")
        );
        assert_eq!(
            duplicate_key(r#"{"hooks":{"stop":[{"a":1,"a":2}]}}"#).as_deref(),
            Some("hooks.stop.a")
        );
        assert_eq!(duplicate_key(r#"{"a":{"x":1},"b":{"x":1}}"#), None);
        assert_eq!(duplicate_key("not json"), None);
    }
    use serde_json::json;

    fn round_trip(text: &str, edit: impl Fn(&mut Value)) -> String {
        let before: Value = serde_json::from_str(text).unwrap();
        let mut after = before.clone();
        edit(&mut after);
        let changed = rewrite(text, &after).expect("rewritable");
        assert_eq!(serde_json::from_str::<Value>(&changed).unwrap(), after);
        let back = rewrite(&changed, &before).expect("rewritable back");
        assert_eq!(back, text, "after:\n{changed}");
        changed
    }

    #[test]
    fn unchanged_text_stays_byte_for_byte() {
        let text = "{ \"a\" :1,\n\n   \"b\": [ 1,2 ] }\n";
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(rewrite(text, &value).unwrap(), text);
    }

    #[test]
    fn added_members_and_elements_come_out_again_exactly() {
        let text = "{\n    \"model\": \"x\",\n    \"hooks\": {\n        \"Stop\": [\n            {\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}\n        ]\n    },\n    \"permissions\": { \"allow\": [\"Bash(ls)\"] }\n}\n";
        let changed = round_trip(text, |v| {
            v["hooks"]["Stop"][0]["hooks"]
                .as_array_mut()
                .unwrap()
                .push(json!({"type": "command", "command": "ours"}));
            v["hooks"]["PreToolUse"] = json!([{"matcher": "Bash", "hooks": [{"command": "g"}]}]);
            v["permissions"]["allow"]
                .as_array_mut()
                .unwrap()
                .push(json!("Bash(x)"));
            v["statusLine"] = json!({"type": "command"});
        });
        // The user's lines are all still there, as written.
        assert!(changed.contains("    \"model\": \"x\",\n"), "{changed}");
        assert!(
            changed.contains("\"allow\": [\"Bash(ls)\", \"Bash(x)\"]"),
            "{changed}"
        );
        assert!(
            changed.contains("\n        \"PreToolUse\": [\n            {\n"),
            "{changed}"
        );
    }

    #[test]
    fn tabs_one_line_files_and_empty_containers() {
        round_trip("{\n\t\"a\": 1\n}", |v| v["b"] = json!({"c": [1, 2]}));
        round_trip("{\"a\": 1}", |v| v["b"] = json!([true]));
        round_trip("{\"a\": []}", |v| v["a"] = json!([{"x": 1}]));
        round_trip("{}\n", |v| v["hooks"] = json!({"Stop": []}));
        assert_eq!(
            rewrite("{\"a\": [1, 2, 3, 4]}", &json!({"a": [1, 3]})).unwrap(),
            "{\"a\": [1, 3]}"
        );
        // An element put between two others: the elements after it are
        // edited by position and the last one appended.
        assert_eq!(
            rewrite("[1, 3]", &json!([1, 2, 3])).as_deref(),
            Some("[1, 2, 3]")
        );
        round_trip("{\"a\": true, \"b\": 2}", |v| v["a"] = json!(false));
    }

    // Found by tests/settings_text.rs: an element changed in place next to
    // an equal one (`[[], [], null]` with `null` added to the first) was
    // paired with its neighbour, and the edit refused both ways.
    #[test]
    fn an_element_edited_beside_an_equal_one_goes_both_ways() {
        let before = "{\n  \"a\": [\n    [],\n    [],\n    null\n  ]\n}\n";
        let value: Value = serde_json::from_str(before).unwrap();
        let mut after = value.clone();
        after["a"][0] = serde_json::json!([null]);
        let written = rewrite(before, &after).expect("added in place");
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), after);
        assert_eq!(rewrite(&written, &value).as_deref(), Some(before));
    }

    #[test]
    fn removing_runs_at_the_start_middle_and_end() {
        let text = "[\n  1,\n  2,\n  3,\n  4,\n  5\n]";
        for wanted in [json!([3, 4, 5]), json!([1, 5]), json!([1, 2]), json!([])] {
            let out = rewrite(text, &wanted).unwrap();
            assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), wanted);
        }
        assert_eq!(rewrite(text, &json!([1, 2])).unwrap(), "[\n  1,\n  2\n]");
        assert_eq!(
            rewrite(text, &json!([3, 4, 5])).unwrap(),
            "[\n  3,\n  4,\n  5\n]"
        );
    }

    #[test]
    fn not_json_is_refused() {
        assert!(rewrite("{\"a\": 1,}", &json!({})).is_none());
        assert!(rewrite("{\"a\": 1} x", &json!({})).is_none());
        assert!(rewrite("", &json!({})).is_none());
    }
}
