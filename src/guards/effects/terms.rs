//! Whether a change to the loop's state during a Bash call ended or
//! weakened the loop, judged by the loop's identity and terms — never by
//! its status alone, nor by who says they wrote it.
//!
//! A `loop cancel` followed by a `loop start` of an easy loop leaves the
//! status RUNNING; a loop whose `session_id` moved to another session, or
//! whose iteration count jumped to its maximum, ends at the next Stop all
//! the same. And the writer's name and environment (`argv[0]`,
//! `CLAUDECODE`) are the command's to choose. So while a Bash call runs,
//! only what the hooks themselves change then may change: the files the
//! loop touched, the counters and notices a user's prompt resets or takes,
//! and a pause — by the guard (a push seen), or by the user's stop phrase
//! (a prompt recorded in the same window). Everything else — the id, the
//! goal, the promise, the checks, the budgets and what was spent, the
//! iteration count, the owning session, the status — is put back.
//!
//! Pure: the two states as JSON in, a verdict out.

use serde_json::{Map, Value};

/// Fields the hooks may change while a Bash call runs: the post-tool hook
/// of a call beside it records touched files; the user's prompt resets the
/// block count, records a capped turn and takes the notices.
const MAY_CHANGE: &[&str] = &[
    "touched_files",
    "updated_at",
    "consecutive_blocks",
    "notices",
    "capped",
    "capped_at",
];

/// Fields the user's prompt hook may change besides: it records a turn the
/// block cap ended in the history, and claims a loop no session owns yet.
const USER_MAY_CHANGE: &[&str] = &["history"];

/// Fields a pause writes.
const PAUSE_FIELDS: &[&str] = &["status", "paused_at", "paused_by"];
/// Fields a resume writes (the user's prompt resumes a loop a usage limit
/// paused).
const RESUME_FIELDS: &[&str] = &[
    "status",
    "paused_at",
    "paused_by",
    "paused_secs",
    "resumed_at",
    "resets_at",
    "limit_message",
];

/// What changed in the loop that may not have, or `None` when the change
/// stands. `user_spoke`: the user's prompt hook wrote in the same window
/// (only then may the loop become PAUSED with no `paused_by`).
pub fn weakened(old: &str, new: Option<&str>, user_spoke: bool) -> Option<String> {
    let old: Map<String, Value> = serde_json::from_str(old).ok()?;
    let status = |state: &Map<String, Value>| {
        state
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let old_status = status(&old);
    // Only an active loop is guarded: a finished one may be replaced.
    if !matches!(old_status.as_str(), "RUNNING" | "PAUSED") {
        return None;
    }
    let Some(new) = new else {
        return Some("the loop's state was removed".into());
    };
    let Ok(new) = serde_json::from_str::<Map<String, Value>>(new) else {
        return Some("the loop's state was replaced by something unreadable".into());
    };
    let id = |state: &Map<String, Value>| {
        state
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if id(&old) != id(&new) {
        return Some(format!(
            "loop {} was replaced by another loop ({})",
            id(&old),
            id(&new)
        ));
    }
    let new_status = status(&new);
    let paused_by = new.get("paused_by").and_then(Value::as_str);
    let pause_allowed = old_status == "RUNNING"
        && new_status == "PAUSED"
        && (paused_by == Some("guard") || (paused_by.is_none() && user_spoke));
    let resume_allowed = old_status == "PAUSED" && new_status == "RUNNING" && user_spoke;
    let mut changed: Vec<&str> = Vec::new();
    let keys = old
        .keys()
        .chain(new.keys().filter(|k| !old.contains_key(*k)));
    for key in keys {
        if old.get(key) == new.get(key) || MAY_CHANGE.contains(&key.as_str()) {
            continue;
        }
        if pause_allowed && PAUSE_FIELDS.contains(&key.as_str()) {
            continue;
        }
        if resume_allowed && RESUME_FIELDS.contains(&key.as_str()) {
            continue;
        }
        if user_spoke
            && (USER_MAY_CHANGE.contains(&key.as_str())
                || (key == "session_id" && old.get(key).is_none_or(Value::is_null)))
        {
            continue;
        }
        changed.push(key);
    }
    if changed.is_empty() {
        return None;
    }
    let what = if changed.contains(&"status") {
        format!("its status went from {old_status} to {new_status}")
    } else {
        format!("its terms changed ({})", changed.join(", "))
    };
    Some(format!("loop {}: {what}", id(&old)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(changes: Value) -> String {
        let mut base = json!({
            "id": "loop-a", "status": "RUNNING", "goal": "make the suite pass",
            "promise": "DONE", "checks": ["cargo test"], "iteration": 2,
            "max_iterations": 50, "session_id": "s1", "touched_files": [],
            "updated_at": "2026-11-21T11:00:00Z", "consecutive_blocks": 3,
        });
        for (key, value) in changes.as_object().unwrap() {
            base[key] = value.clone();
        }
        base.to_string()
    }

    #[test]
    fn a_cancel_and_an_easy_loop_in_its_place_is_weakening() {
        let old = state(json!({}));
        let easy = state(json!({"id": "loop-b", "goal": "x", "checks": ["true"]}));
        let why = weakened(&old, Some(&easy), false).unwrap();
        assert!(why.contains("replaced by another loop"), "{why}");
        // Even when the user's prompt hook wrote in the same window.
        assert!(weakened(&old, Some(&easy), true).is_some());
        let cancelled = state(json!({"status": "CANCELLED"}));
        assert!(
            weakened(&old, Some(&cancelled), true)
                .unwrap()
                .contains("CANCELLED")
        );
        assert!(weakened(&old, None, false).is_some());
        assert!(weakened(&old, Some("{"), false).is_some());
    }

    #[test]
    fn terms_are_judged_not_the_status() {
        let old = state(json!({}));
        for changes in [
            json!({"goal": "print hello"}),
            json!({"checks": []}),
            json!({"promise": "x"}),
            json!({"max_iterations": 1}),
            json!({"iteration": 50}),
            json!({"session_id": "another"}),
            json!({"budget": {"max_tokens": 1}}),
        ] {
            let new = state(changes.clone());
            let why = weakened(&old, Some(&new), true);
            assert!(why.is_some(), "{changes}");
            assert!(why.unwrap().contains("terms changed"), "{changes}");
        }
    }

    #[test]
    fn what_the_hooks_do_meanwhile_stands() {
        let old = state(json!({}));
        let touched =
            state(json!({"touched_files": ["/p/a.rs"], "updated_at": "2026-11-21T12:00:00Z"}));
        assert_eq!(weakened(&old, Some(&touched), false), None);
        let reset = state(json!({"consecutive_blocks": 0, "notices": []}));
        assert_eq!(weakened(&old, Some(&reset), false), None);
        let by_guard = state(json!({"status": "PAUSED", "paused_by": "guard", "paused_at": "t"}));
        assert_eq!(weakened(&old, Some(&by_guard), false), None);
        let by_user = state(json!({"status": "PAUSED", "paused_at": "t"}));
        assert_eq!(weakened(&old, Some(&by_user), true), None);
        // A pause with no prompt of the user's in the window is the agent's.
        assert!(weakened(&old, Some(&by_user), false).is_some());
        // The prompt hook records a capped turn and claims an unowned loop;
        // the agent may do neither.
        let unowned = state(json!({"session_id": null}));
        let claimed = state(json!({"history": [{"capped_at": "t"}]}));
        assert_eq!(weakened(&unowned, Some(&claimed), true), None);
        assert!(weakened(&unowned, Some(&claimed), false).is_some());
        let elsewhere = state(json!({"session_id": "another"}));
        assert!(weakened(&old, Some(&elsewhere), true).is_some());
        // So is a resume.
        let resumed = state(json!({}));
        assert!(weakened(&by_user, Some(&resumed), false).is_some());
        assert_eq!(weakened(&by_user, Some(&resumed), true), None);
        // A finished loop may be replaced (a new loop after the last one).
        let done = state(json!({"status": "COMPLETED"}));
        let next = state(json!({"id": "loop-b"}));
        assert_eq!(weakened(&done, Some(&next), false), None);
    }
}
