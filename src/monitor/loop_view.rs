//! What the dashboard's Loop view needs to say of one loop, derived from
//! `loop.json` (or an archived loop) as plain JSON: each completion
//! condition with whether it held at the last Stop, and what failed then —
//! the checks' exit and output, the problems (file, line, message) the
//! project or touched-files condition recorded. Before the first Stop the
//! problems come from the check `loop start` ran, marked as such.
//!
//! Plain JSON in and out, so a loop file written by a newer version (an
//! unknown status, a new field) is shown as it is rather than refused.
//! Pure: the caller reads the file.

use serde_json::{Map, Value, json};

/// The history keys of the conditions, as [`crate::ralph::loop_ctl`]
/// records them in `failed`.
const PROMISE: &str = "promise";
use crate::ralph::loop_state::{PROJECT, TOUCHED};

/// One completion condition: its history key and its words (`code` in
/// backticks, which the page shows as code).
pub fn conditions(state: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(checks) = state.get("checks").and_then(Value::as_array) {
        for check in checks.iter().filter_map(Value::as_str) {
            out.push((format!("check:{check}"), format!("check `{check}` exits 0")));
        }
    }
    if let Some(promise) = state.get(PROMISE).and_then(Value::as_str) {
        out.push((
            PROMISE.to_string(),
            format!("the final message ends with `<promise>{promise}</promise>`"),
        ));
    }
    let no_warnings = state.get("no_warnings").and_then(Value::as_bool) == Some(true);
    let what = if no_warnings {
        "errors or warnings"
    } else {
        "errors"
    };
    if state.get(PROJECT).and_then(Value::as_bool) == Some(true) {
        let paths: Vec<&str> = state
            .get("paths")
            .and_then(Value::as_array)
            .map(|paths| paths.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let scope = if paths.is_empty() {
            "the project".to_string()
        } else {
            paths.join(", ")
        };
        out.push((
            PROJECT.to_string(),
            format!("no {what} in {scope} (language servers and ast-grep)"),
        ));
    }
    if state.get("diagnostics").and_then(Value::as_bool) == Some(true) {
        out.push((
            TOUCHED.to_string(),
            format!("no language-server {what} in touched files"),
        ));
    }
    out
}

/// Adds `conditions` (the words), `conditionStates` and `latest` to a
/// loop's JSON object.
///
/// - `conditionStates`: `[{key, text, state}]`, `state` being `holds`,
///   `failing` or `unknown` (no Stop evaluated the loop yet). A condition
///   the last Stop names as failed that the loop no longer lists is added.
/// - `latest`: what the last Stop found (`source: "stop"`), else what the
///   check at `loop start` found (`source: "start"`), else null: `failed`,
///   `checks` (`command`, `passed`, `status`, `tail`), `problems` (as
///   recorded: at most 100), `totals` (`errors`, `warnings` over every
///   file, recorded or not), `inconclusive`, `unchecked`.
pub fn annotate(state: &mut Value) {
    let conditions = conditions(state);
    let last = state
        .get("history")
        .and_then(Value::as_array)
        .and_then(|history| history.last())
        .cloned();
    let failed: Option<Vec<String>> = last.as_ref().map(|entry| {
        entry
            .get("failed")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    });
    let mut states: Vec<Value> = conditions
        .iter()
        .map(|(key, text)| {
            let state = match &failed {
                None => "unknown",
                Some(failed) if failed.contains(key) => "failing",
                Some(_) => "holds",
            };
            json!({"key": key, "text": text, "state": state})
        })
        .collect();
    for key in failed.iter().flatten() {
        if !conditions.iter().any(|(known, _)| known == key) {
            states.push(json!({"key": key, "text": key, "state": "failing"}));
        }
    }
    let latest = match &last {
        Some(entry) => latest_from_stop(entry, failed.unwrap_or_default()),
        None => state
            .get("start_record")
            .filter(|record| record.is_object())
            .map(|record| {
                let mut latest = Map::new();
                latest.insert("source".into(), json!("start"));
                add_record(&mut latest, record);
                Value::Object(latest)
            })
            .unwrap_or(Value::Null),
    };
    if let Some(object) = state.as_object_mut() {
        object.insert(
            "conditions".into(),
            json!(
                conditions
                    .into_iter()
                    .map(|(_, text)| text)
                    .collect::<Vec<_>>()
            ),
        );
        object.insert("conditionStates".into(), Value::Array(states));
        object.insert("latest".into(), latest);
    }
}

fn latest_from_stop(entry: &Value, failed: Vec<String>) -> Value {
    let mut latest = Map::new();
    latest.insert("source".into(), json!("stop"));
    for key in ["iteration", "at", "decision"] {
        if let Some(value) = entry.get(key) {
            latest.insert(key.into(), value.clone());
        }
    }
    latest.insert("failed".into(), json!(failed));
    let checks: Vec<Value> = entry
        .get("checks")
        .and_then(Value::as_array)
        .map(|runs| runs.iter().map(check_run).collect())
        .unwrap_or_default();
    latest.insert("checks".into(), Value::Array(checks));
    // The project condition and the touched-files one are never both set
    // by `loop start`; if both are, the project's record speaks for both.
    let conditions = entry.get("conditions");
    let record = [PROJECT, TOUCHED]
        .iter()
        .find_map(|key| conditions.and_then(|c| c.get(*key)));
    if let Some(record) = record {
        add_record(&mut latest, record);
    }
    Value::Object(latest)
}

/// A check run as the page shows it: did it pass, how it ended, its
/// output's last lines.
fn check_run(run: &Value) -> Value {
    let command = run.get("command").and_then(Value::as_str).unwrap_or("?");
    let exit = run.get("exit_code").and_then(Value::as_i64);
    let timed_out = run.get("timed_out").and_then(Value::as_bool) == Some(true);
    let status = match (timed_out, exit) {
        (true, _) => format!(
            "timed out after {} s",
            run.get("duration_ms").and_then(Value::as_u64).unwrap_or(0) / 1000
        ),
        (false, Some(code)) => format!("exit {code}"),
        (false, None) => "killed by a signal".to_string(),
    };
    json!({
        "command": command,
        "passed": exit == Some(0) && !timed_out,
        "status": status,
        "tail": run.get("tail").and_then(Value::as_str).unwrap_or_default(),
    })
}

/// A project check's record (see the engine's loop check): its
/// problems, their totals and the files that could not be checked.
fn add_record(latest: &mut Map<String, Value>, record: &Value) {
    let problems = record
        .get("problems")
        .cloned()
        .filter(Value::is_array)
        .unwrap_or_else(|| json!([]));
    let (mut errors, mut warnings) = (0, 0);
    if let Some(files) = record.get("files").and_then(Value::as_object) {
        for counts in files.values() {
            errors += counts.get("errors").and_then(Value::as_u64).unwrap_or(0);
            warnings += counts.get("warnings").and_then(Value::as_u64).unwrap_or(0);
        }
    }
    latest.insert("problems".into(), problems);
    latest.insert(
        "totals".into(),
        json!({"errors": errors, "warnings": warnings}),
    );
    for key in ["inconclusive", "unchecked"] {
        let list = record
            .get(key)
            .cloned()
            .filter(Value::is_array)
            .unwrap_or_else(|| json!([]));
        latest.insert(key.into(), list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_loop() -> Value {
        json!({
            "id": "loop_1", "status": "RUNNING", "goal": "fix it",
            "checks": ["pytest -q", "true"], "promise": "DONE", "project": true,
            "iteration": 2, "max_iterations": 10, "history": []
        })
    }

    #[test]
    fn before_the_first_stop_every_condition_is_unknown_and_the_start_check_is_shown() {
        let mut state = running_loop();
        state["start_record"] = json!({
            "files": {"app.py": {"errors": 2, "warnings": 1}, "lib.py": {"inconclusive": true}},
            "problems": [{"file": "app.py", "line": 3, "column": 1, "severity": "error", "message": "bad"}],
            "inconclusive": ["lib.py (pyright): timeout"]
        });
        annotate(&mut state);
        let states: Vec<(&str, &str)> = state["conditionStates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["key"].as_str().unwrap(), c["state"].as_str().unwrap()))
            .collect();
        assert_eq!(
            states,
            [
                ("check:pytest -q", "unknown"),
                ("check:true", "unknown"),
                ("promise", "unknown"),
                ("project", "unknown")
            ]
        );
        assert_eq!(state["latest"]["source"], "start");
        assert_eq!(state["latest"]["problems"][0]["file"], "app.py");
        assert_eq!(
            state["latest"]["totals"],
            json!({"errors": 2, "warnings": 1})
        );
        assert_eq!(
            state["latest"]["inconclusive"][0],
            "lib.py (pyright): timeout"
        );
        assert_eq!(
            state["conditions"][2],
            "the final message ends with `<promise>DONE</promise>`"
        );
    }

    #[test]
    fn the_last_stop_says_which_conditions_fail_and_what_failed() {
        let mut state = running_loop();
        state["history"] = json!([
            {"iteration": 1, "decision": "block", "failed": ["promise"], "checks": []},
            {"iteration": 2, "at": "2026-11-25T10:00:00Z", "decision": "block",
             "failed": ["check:pytest -q", "project", "check:gone"],
             "checks": [
                {"command": "pytest -q", "exit_code": 1, "timed_out": false, "duration_ms": 5, "tail": "1 failed"},
                {"command": "true", "exit_code": 0, "timed_out": false, "duration_ms": 1, "tail": ""}
             ],
             "conditions": {"project": {
                "files": {"a.py": {"errors": 1, "warnings": 0}},
                "problems": [{"file": "a.py", "line": 7, "column": 2, "severity": "error", "message": "<script>x</script>"}]
             }}}
        ]);
        annotate(&mut state);
        let states: Vec<(&str, &str)> = state["conditionStates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["key"].as_str().unwrap(), c["state"].as_str().unwrap()))
            .collect();
        assert_eq!(
            states,
            [
                ("check:pytest -q", "failing"),
                ("check:true", "holds"),
                ("promise", "holds"),
                ("project", "failing"),
                ("check:gone", "failing")
            ]
        );
        let latest = &state["latest"];
        assert_eq!(latest["source"], "stop");
        assert_eq!(latest["iteration"], 2);
        assert_eq!(
            latest["checks"][0],
            json!({"command": "pytest -q", "passed": false, "status": "exit 1", "tail": "1 failed"})
        );
        assert_eq!(latest["checks"][1]["passed"], true);
        assert_eq!(latest["problems"][0]["message"], "<script>x</script>");
        assert_eq!(latest["totals"]["errors"], 1);
    }

    #[test]
    fn a_loop_without_history_or_start_check_has_no_latest() {
        let mut state =
            json!({"id": "l", "status": "RUNNING", "diagnostics": true, "no_warnings": true});
        annotate(&mut state);
        assert_eq!(state["latest"], Value::Null);
        assert_eq!(
            state["conditions"],
            json!(["no language-server errors or warnings in touched files"])
        );
    }
}
