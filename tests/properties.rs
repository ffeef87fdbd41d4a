//! Property tests for the two parsers everything else trusts: hook stdin and
//! the promise matcher.

use proptest::prelude::*;
use ralph_hooks::hook::protocol::{EventName, HookInput, InputError, parse_input};
use ralph_hooks::ralph::promise::{final_promise, is_given, normalize_whitespace};

const ALL_EVENTS: &[EventName] = &[
    EventName::SessionStart,
    EventName::PreToolUse,
    EventName::PostToolUse,
    EventName::Stop,
    EventName::SubagentStop,
];

/// Prose that cannot open a code span or fence, or contain a promise tag.
fn prose() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 .,;:!?'\n-]{0,80}"
}

fn promise_text() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9 _.-]{0,30}"
        .prop_map(|s| s.trim().to_string())
        .prop_filter("non-empty", |s| !s.is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_input(&bytes, ALL_EVENTS);
    }

    #[test]
    fn any_json_that_is_not_an_object_is_refused(value in prop_oneof![
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        ".*".prop_map(|s| serde_json::json!(s)),
        proptest::collection::vec(any::<u8>(), 0..5).prop_map(|v| serde_json::json!(v)),
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(|b| serde_json::json!(b)),
    ]) {
        let bytes = serde_json::to_vec(&value).unwrap();
        prop_assert!(matches!(parse_input(&bytes, ALL_EVENTS), Err(InputError::NotObject(_))));
    }

    #[test]
    fn unknown_fields_are_ignored(
        extra in proptest::collection::btree_map("[a-z_]{1,12}", any::<i32>(), 0..8),
        active in any::<bool>(),
    ) {
        let mut object = serde_json::json!({"hook_event_name": "Stop", "session_id": "s", "stop_hook_active": active});
        for (key, value) in &extra {
            if object.get(key).is_none() {
                object[key] = serde_json::json!(value);
            }
        }
        let parsed = parse_input(&serde_json::to_vec(&object).unwrap(), &[EventName::Stop]);
        match parsed {
            Ok(HookInput::Stop(stop)) => prop_assert_eq!(stop.stop_hook_active, active),
            other => prop_assert!(false, "unexpected parse result {:?}", other.map(|i| i.event())),
        }
    }

    #[test]
    fn an_event_the_binary_does_not_take_is_refused(index in 0usize..5) {
        let event = ALL_EVENTS[index];
        let others: Vec<EventName> = ALL_EVENTS.iter().copied().filter(|e| *e != event).collect();
        let bytes = format!(r#"{{"hook_event_name":"{}"}}"#, event.as_str()).into_bytes();
        let is_wrong_event = matches!(parse_input(&bytes, &others), Err(InputError::WrongEvent { .. }));
        prop_assert!(is_wrong_event);
        prop_assert!(parse_input(&bytes, &[event]).is_ok());
    }

    #[test]
    fn a_final_promise_is_accepted(before in prose(), promise in promise_text(), trailing in "[ \n\t]{0,4}") {
        let message = format!("{before}\n<promise>{promise}</promise>{trailing}");
        prop_assert!(is_given(&message, &promise));
    }

    #[test]
    fn whitespace_inside_the_promise_does_not_matter(promise in promise_text(), pad in "[ \n\t]{1,3}") {
        let spaced = promise.replace(' ', &pad);
        let message = format!("<promise>{pad}{spaced}{pad}</promise>");
        prop_assert!(is_given(&message, &promise));
    }

    #[test]
    fn text_after_the_promise_rejects_it(before in prose(), promise in promise_text(), after in "[A-Za-z.]{1,20}") {
        let message = format!("{before}<promise>{promise}</promise> {after}");
        prop_assert!(!is_given(&message, &promise));
    }

    #[test]
    fn a_promise_inside_an_open_code_block_is_rejected(before in prose(), promise in promise_text()) {
        let fenced = format!("{before}\n```\n<promise>{promise}</promise>");
        prop_assert!(!is_given(&fenced, &promise));
        let inline = format!("{before} `<promise>{promise}</promise>");
        prop_assert!(!is_given(&inline, &promise));
    }

    #[test]
    fn a_different_promise_is_rejected(promise in promise_text(), other in promise_text()) {
        prop_assume!(normalize_whitespace(&promise) != normalize_whitespace(&other));
        let message = format!("<promise>{other}</promise>");
        prop_assert!(!is_given(&message, &promise));
    }

    #[test]
    fn normalisation_is_idempotent(text in ".{0,60}") {
        let once = normalize_whitespace(&text);
        prop_assert_eq!(normalize_whitespace(&once), once.clone());
    }

    #[test]
    fn the_matcher_never_panics(message in ".{0,200}") {
        let _ = final_promise(&message);
    }
}
