//! The little schema language the orchestrator files are described in, and
//! the generic check that walks a parsed file against it.
//!
//! A schema is plain `const` data ([`Ty`], [`Field`]), so one description
//! drives both the check and the outline shown to an agent that must
//! regenerate a file ([`outline`]); they cannot drift apart. The storage
//! layout forbids fields beyond the schema, so every mapping with fixed
//! fields is closed.

use std::fmt::Write as _;

use super::tree::{Node, Pos, Value};

/// Id formats fixed by seed 001's path rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// `R1`, `R2`, …
    Request,
    /// `T1`, `T2`, …
    Task,
    /// `T1-S1`, `T1-S2`, … (the task id, `-S`, a number)
    Subtask,
    /// `md5(project_root)[:8]`: eight lowercase hex digits.
    Hash,
}

impl IdKind {
    pub fn matches(self, text: &str) -> bool {
        fn numbered(text: &str, prefix: char) -> bool {
            text.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }
        match self {
            IdKind::Request => numbered(text, 'R'),
            IdKind::Task => numbered(text, 'T'),
            IdKind::Subtask => text.split_once("-S").is_some_and(|(task, n)| {
                numbered(task, 'T') && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
            }),
            IdKind::Hash => {
                text.len() == 8
                    && text
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
        }
    }

    /// How the id is described in messages.
    pub fn describe(self) -> &'static str {
        match self {
            IdKind::Request => "a request id (R1, R2, ...)",
            IdKind::Task => "a task id (T1, T2, ...)",
            IdKind::Subtask => "a subtask id (T1-S1, T1-S2, ...)",
            IdKind::Hash => "a project hash (8 lowercase hex digits of md5(project_root))",
        }
    }

    fn placeholder(self) -> &'static str {
        match self {
            IdKind::Request => "R<n>",
            IdKind::Task => "T<n>",
            IdKind::Subtask => "T<n>-S<m>",
            IdKind::Hash => "<8 hex digits>",
        }
    }
}

/// What a value must be.
#[derive(Debug)]
pub enum Ty {
    /// Any string.
    Text,
    /// A non-negative integer.
    Count,
    Bool,
    /// An ISO 8601 date or date-time string (`2024-01-15`, `2024-01-15T10:00:00Z`).
    Timestamp,
    Id(IdKind),
    /// One of a fixed set of strings (the seeds' enums).
    OneOf(&'static [&'static str]),
    /// Exactly this integer (schema versions).
    Exactly(i64),
    OrNull(&'static Ty),
    List(&'static Ty),
    /// A list with at least one item.
    NonEmptyList(&'static Ty),
    /// A mapping with exactly these fields (closed: no others).
    Object(&'static [Field]),
    /// A mapping whose keys are free (or ids of one kind), every value one type.
    Map {
        key: Option<IdKind>,
        key_hint: &'static str,
        value: &'static Ty,
    },
    /// A string, or a mapping of names to strings (knowledge.yaml's `patterns`).
    TextOrTextMap,
}

#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
}

pub const fn required(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: true,
    }
}

pub const fn optional(name: &'static str, ty: Ty) -> Field {
    Field {
        name,
        ty,
        required: false,
    }
}

/// One broken rule, where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pos: Pos,
    pub message: String,
}

impl Violation {
    pub fn at(pos: Pos, path: &str, message: impl std::fmt::Display) -> Violation {
        Violation {
            pos,
            message: if path.is_empty() {
                message.to_string()
            } else {
                format!("{path}: {message}")
            },
        }
    }
}

/// `parent.child`, or `child` at the top level.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Checks `node` against `ty`, appending every violation found.
pub fn check(node: &Node, ty: &Ty, path: &str, out: &mut Vec<Violation>) {
    match ty {
        Ty::Text => {
            if node.as_str().is_none() {
                out.push(wrong_type(node, path, "a string"));
            }
        }
        Ty::Count => match node.value {
            Value::Int(n) if n >= 0 => {}
            Value::Int(n) => out.push(Violation::at(
                node.pos,
                path,
                format!("expected a non-negative integer, got {n}"),
            )),
            _ => out.push(wrong_type(node, path, "a non-negative integer")),
        },
        Ty::Bool => {
            if !matches!(node.value, Value::Bool(_)) {
                out.push(wrong_type(node, path, "true or false"));
            }
        }
        Ty::Timestamp => match node.as_str() {
            Some(text) if is_iso8601(text) => {}
            Some(text) => out.push(Violation::at(
                node.pos,
                path,
                format!("{text:?} is not an ISO 8601 date-time (like 2024-01-15T10:00:00Z)"),
            )),
            None => out.push(wrong_type(node, path, "an ISO 8601 date-time string")),
        },
        Ty::Id(kind) => match node.as_str() {
            Some(text) if kind.matches(text) => {}
            Some(text) => out.push(Violation::at(
                node.pos,
                path,
                format!("{text:?} is not {}", kind.describe()),
            )),
            None => out.push(wrong_type(node, path, kind.describe())),
        },
        Ty::OneOf(choices) => match node.as_str() {
            Some(text) if choices.contains(&text) => {}
            Some(text) => out.push(Violation::at(
                node.pos,
                path,
                format!("{text:?} is not one of: {}", choices.join(", ")),
            )),
            None => out.push(wrong_type(
                node,
                path,
                &format!("one of: {}", choices.join(", ")),
            )),
        },
        Ty::Exactly(wanted) => {
            if node.as_int() != Some(*wanted) {
                out.push(Violation::at(
                    node.pos,
                    path,
                    format!("expected {wanted}, got {}", describe_value(node)),
                ));
            }
        }
        Ty::OrNull(inner) => {
            if !matches!(node.value, Value::Null) {
                check(node, inner, path, out);
            }
        }
        Ty::List(item) | Ty::NonEmptyList(item) => {
            let Value::Seq(items) = &node.value else {
                out.push(wrong_type(node, path, "a list"));
                return;
            };
            if items.is_empty() && matches!(ty, Ty::NonEmptyList(_)) {
                out.push(Violation::at(node.pos, path, "must list at least one item"));
            }
            for (index, child) in items.iter().enumerate() {
                check(child, item, &format!("{path}[{index}]"), out);
            }
        }
        Ty::Object(fields) => check_object(node, fields, path, out),
        Ty::Map { key, value, .. } => {
            let Value::Map(entries) = &node.value else {
                out.push(wrong_type(node, path, "a mapping"));
                return;
            };
            for entry in entries {
                let child_path = join(path, &entry.key);
                if let Some(kind) = key
                    && !kind.matches(&entry.key)
                {
                    out.push(Violation::at(
                        entry.key_pos,
                        &child_path,
                        format!("key {:?} is not {}", entry.key, kind.describe()),
                    ));
                }
                check(&entry.value, value, &child_path, out);
            }
        }
        Ty::TextOrTextMap => match &node.value {
            Value::Str(_) => {}
            Value::Map(entries) => {
                for entry in entries {
                    check(&entry.value, &Ty::Text, &join(path, &entry.key), out);
                }
            }
            _ => out.push(wrong_type(
                node,
                path,
                "a string or a mapping of names to strings",
            )),
        },
    }
}

fn check_object(node: &Node, fields: &[Field], path: &str, out: &mut Vec<Violation>) {
    let Value::Map(entries) = &node.value else {
        let what = if path.is_empty() {
            "a mapping at the top level"
        } else {
            "a mapping"
        };
        out.push(wrong_type(node, path, what));
        return;
    };
    for entry in entries {
        let child_path = join(path, &entry.key);
        match fields.iter().find(|field| field.name == entry.key) {
            Some(field) => check(&entry.value, &field.ty, &child_path, out),
            None => out.push(Violation::at(
                entry.key_pos,
                &child_path,
                format!(
                    "unknown field (the schema allows only {})",
                    fields
                        .iter()
                        .map(|field| field.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
    for field in fields.iter().filter(|field| field.required) {
        if !entries.iter().any(|entry| entry.key == field.name) {
            out.push(Violation::at(
                node.pos,
                path,
                format!("missing required field {:?}", field.name),
            ));
        }
    }
}

fn wrong_type(node: &Node, path: &str, expected: &str) -> Violation {
    Violation::at(
        node.pos,
        path,
        format!("expected {expected}, got {}", describe_value(node)),
    )
}

/// `a string ("two")`, `an integer (3)`, `a list`, `null`.
pub fn describe_value(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Int(n) => format!("an integer ({n})"),
        Value::Float(x) => format!("a number ({x})"),
        Value::Str(text) => {
            let short: String = text.chars().take(40).collect();
            if short.len() < text.len() {
                format!("a string ({short:?}…)")
            } else {
                format!("a string ({text:?})")
            }
        }
        Value::Seq(_) | Value::Map(_) => node.type_name().to_string(),
    }
}

/// ISO 8601 as the seeds write it: a date, or a date-time with an optional
/// fraction and zone (`2024-01-15T10:00:00`, `2024-01-15T10:00:00Z`).
pub fn is_iso8601(text: &str) -> bool {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    DateTime::parse_from_rfc3339(text).is_ok()
        || NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
        || NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").is_ok()
        || NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok_and(|_| text.len() == 10)
}

// ---------------------------------------------------------------- outline

/// A YAML-shaped outline of a schema: every field with the values it takes,
/// optional ones marked. Shown to agents so they can regenerate a file.
pub fn outline(fields: &[Field]) -> String {
    let mut out = String::new();
    outline_fields(fields, 0, &mut out, false);
    out
}

fn outline_fields(fields: &[Field], indent: usize, out: &mut String, first_in_item: bool) {
    for (index, field) in fields.iter().enumerate() {
        let pad = if first_in_item && index == 0 {
            String::new()
        } else {
            " ".repeat(indent)
        };
        let note = if field.required { "" } else { "  # optional" };
        match inline_hint(&field.ty) {
            Some(hint) => {
                let _ = writeln!(out, "{pad}{}: {hint}{note}", field.name);
            }
            None => {
                let _ = writeln!(out, "{pad}{}:{note}", field.name);
                outline_block(&field.ty, indent + 2, out);
            }
        }
    }
}

fn outline_block(ty: &Ty, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match ty {
        Ty::Object(fields) => outline_fields(fields, indent, out, false),
        Ty::List(item) | Ty::NonEmptyList(item) => match (inline_hint(item), item) {
            (Some(hint), _) => {
                let _ = writeln!(out, "{pad}- {hint}");
            }
            (None, Ty::Object(fields)) => {
                let _ = write!(out, "{pad}- ");
                outline_fields(fields, indent + 2, out, true);
            }
            (None, other) => {
                let _ = writeln!(out, "{pad}-");
                outline_block(other, indent + 2, out);
            }
        },
        Ty::Map {
            key_hint, value, ..
        } => match inline_hint(value) {
            Some(hint) => {
                let _ = writeln!(out, "{pad}{key_hint}: {hint}");
            }
            None => {
                let _ = writeln!(out, "{pad}{key_hint}:");
                outline_block(value, indent + 2, out);
            }
        },
        Ty::OrNull(inner) => outline_block(inner, indent, out),
        _ => {}
    }
}

/// The one-line description of a scalar type; `None` for blocks.
fn inline_hint(ty: &Ty) -> Option<String> {
    Some(match ty {
        Ty::Text => "<text>".to_string(),
        Ty::Count => "<integer >= 0>".to_string(),
        Ty::Bool => "true | false".to_string(),
        Ty::Timestamp => "<ISO 8601 date-time>".to_string(),
        Ty::Id(kind) => kind.placeholder().to_string(),
        Ty::OneOf(choices) => choices.join(" | "),
        Ty::Exactly(n) => n.to_string(),
        Ty::OrNull(inner) => format!("{} | null", inline_hint(inner)?),
        Ty::List(item) => match inline_hint(item) {
            Some(hint) => format!("[{hint}, ...]"),
            None => return None,
        },
        Ty::NonEmptyList(item) => match inline_hint(item) {
            Some(hint) => format!("[{hint}, ...]  # at least one"),
            None => return None,
        },
        Ty::TextOrTextMap => "<text> | {<name>: <text>, ...}".to_string(),
        Ty::Object(_) | Ty::Map { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::orchestrator::schema::tree::parse_yaml;

    const ITEM: &[Field] = &[
        required("id", Ty::Id(IdKind::Task)),
        optional("note", Ty::Text),
    ];
    const DOC: &[Field] = &[
        required("version", Ty::Exactly(1)),
        required("state", Ty::OneOf(&["a", "b"])),
        required("items", Ty::List(&Ty::Object(ITEM))),
        optional("when", Ty::Timestamp),
    ];

    fn violations(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        check(&parse_yaml(text).unwrap(), &Ty::Object(DOC), "", &mut out);
        out.iter()
            .map(|v| format!("{}:{}: {}", v.pos.line, v.pos.col, v.message))
            .collect()
    }

    #[test]
    fn a_valid_document_has_no_violations() {
        assert!(violations("version: 1\nstate: a\nitems:\n  - id: T1\n").is_empty());
    }

    #[test]
    fn each_rule_reports_where_and_what() {
        assert_eq!(
            violations("version: 2\nstate: c\nitems:\n  - id: X1\n    extra: 1\nwhen: soon\n"),
            [
                "1:10: version: expected 1, got an integer (2)",
                "2:8: state: \"c\" is not one of: a, b",
                "4:9: items[0].id: \"X1\" is not a task id (T1, T2, ...)",
                "5:5: items[0].extra: unknown field (the schema allows only id, note)",
                "6:7: when: \"soon\" is not an ISO 8601 date-time (like 2024-01-15T10:00:00Z)",
            ]
        );
        assert_eq!(
            violations("version: 1\nitems: {}\n"),
            [
                "2:8: items: expected a list, got a mapping",
                "1:1: missing required field \"state\"",
            ]
        );
        assert_eq!(
            violations("- 1\n"),
            ["1:1: expected a mapping at the top level, got a list"]
        );
    }

    #[test]
    fn ids_follow_seed_001() {
        assert!(IdKind::Subtask.matches("T1-S2"));
        assert!(IdKind::Subtask.matches("T12-S30"));
        assert!(!IdKind::Subtask.matches("T1-S"));
        assert!(!IdKind::Subtask.matches("T1-Sx"));
        assert!(!IdKind::Subtask.matches("T1-S-1"));
        assert!(IdKind::Request.matches("R7"));
        assert!(!IdKind::Request.matches("R"));
        assert!(IdKind::Hash.matches("a1b2c3d4"));
        assert!(!IdKind::Hash.matches("A1B2C3D4"));
    }

    #[test]
    fn timestamps_accept_the_seeds_forms() {
        for ok in [
            "2024-01-15",
            "2024-01-15T10:00:00",
            "2024-01-15T10:00:00Z",
            "2024-01-15T10:00:00.5+09:00",
        ] {
            assert!(is_iso8601(ok), "{ok}");
        }
        for bad in [
            "yesterday",
            "2024-13-01",
            "2024-01-15T25:00:00",
            "15/01/2024",
        ] {
            assert!(!is_iso8601(bad), "{bad}");
        }
    }

    #[test]
    fn outline_lists_every_field() {
        assert_eq!(
            outline(DOC),
            "version: 1\nstate: a | b\nitems:\n  - id: T<n>\n    note: <text>  # optional\nwhen: <ISO 8601 date-time>  # optional\n"
        );
    }
}
