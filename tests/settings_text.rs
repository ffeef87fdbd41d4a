//! `util::json_splice` on arbitrary JSON in arbitrary formatting: the text
//! it writes always says the value asked for, and what it added it takes
//! out again to the byte (how install and `--uninstall` edit a user's
//! `.claude/settings.json`).

use proptest::prelude::*;
use ralph_hooks::util::json_splice::rewrite;
use serde_json::{Map, Value};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        "[a-z \"\\\\é]{0,8}".prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-e]{1,2}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The value written as people write JSON: pretty with some indent, or on one line.
fn format(value: &Value, style: u8) -> String {
    let indent: &[u8] = match style % 4 {
        0 => b"  ",
        1 => b"    ",
        2 => b"\t",
        _ => return format!("{}\n", serde_json::to_string(value).unwrap()),
    };
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).unwrap();
    out.push(b'\n');
    String::from_utf8(out).unwrap()
}

/// Appends `added` somewhere inside `value` (as install does: a new key at
/// the end of an object, a new element at the end of an array), choosing
/// the container by `path`.
fn append(value: &mut Value, path: &[usize], added: Value) {
    let (first, rest) = match path.split_first() {
        Some(split) => split,
        None => (&0, &[][..]),
    };
    let child_count = match value {
        Value::Object(map) => map.len(),
        Value::Array(items) => items.len(),
        _ => 0,
    };
    let descend = !rest.is_empty() && child_count > 0 && first % 2 == 0;
    match value {
        Value::Object(map) if descend => {
            let key = map.keys().nth(first % child_count).unwrap().clone();
            let child = map.get_mut(&key).unwrap();
            if child.is_object() || child.is_array() {
                return append(child, rest, added);
            }
            map.insert(format!("zz{}", map.len()), added);
        }
        Value::Array(items) if descend => {
            let child = &mut items[first % child_count];
            if child.is_object() || child.is_array() {
                return append(child, rest, added);
            }
            items.push(added);
        }
        Value::Object(map) => {
            map.insert(format!("zz{}", map.len()), added);
        }
        Value::Array(items) => items.push(added),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn what_is_added_comes_out_to_the_byte(
        base in proptest::collection::btree_map("[a-e]{1,2}", value(), 0..4),
        style in any::<u8>(),
        edits in proptest::collection::vec((proptest::collection::vec(any::<usize>(), 0..4), value()), 1..4),
    ) {
        let before = Value::Object(base.into_iter().collect());
        let text = format(&before, style);
        prop_assert_eq!(rewrite(&text, &before), Some(text.clone()));
        let mut after = before.clone();
        for (path, added) in edits {
            append(&mut after, &path, added);
        }
        let written = rewrite(&text, &after).expect("appending is always possible in place");
        prop_assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), after.clone());
        let back = rewrite(&written, &before).expect("cutting is always possible in place");
        prop_assert_eq!(back, text);
    }

    #[test]
    fn any_edit_says_what_was_asked_or_is_refused(a in value(), b in value(), style in any::<u8>()) {
        let text = format(&a, style);
        if let Some(written) = rewrite(&text, &b) {
            prop_assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), b);
        }
    }
}

/// The property's body for one input (the cases the property test found).
fn round_trip_case(base: Value, style: u8, edits: Vec<(Vec<usize>, Value)>) {
    let text = format(&base, style);
    assert_eq!(rewrite(&text, &base), Some(text.clone()));
    let mut after = base.clone();
    for (path, added) in edits {
        append(&mut after, &path, added);
    }
    let written = rewrite(&text, &after).expect("appending is always possible in place");
    assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), after);
    let back = rewrite(&written, &base).expect("cutting is always possible in place");
    assert_eq!(back, text);
}

// Found by the property above on CI (a random seed).
#[test]
fn found_cases_come_out_to_the_byte() {
    round_trip_case(
        serde_json::json!({"a": [[], [], null]}),
        0,
        vec![(
            vec![6227351675079414012, 15033674484535505142, 0],
            Value::Null,
        )],
    );
    round_trip_case(
        serde_json::json!({"a": null, "b": null, "c": [[]]}),
        0,
        vec![
            (vec![12014471549944711748, 0], serde_json::json!([])),
            (vec![], Value::Null),
            (
                vec![3010726139229599486, 16037510243149483232, 0],
                Value::Null,
            ),
        ],
    );
}
