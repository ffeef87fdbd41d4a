//! Cursor (`.cursor/hooks.json`, `version: 1`). Every payload carries
//! `conversation_id` (the session), `generation_id`, `workspace_roots` (the
//! project is the first) and optionally `cursor_version`; event names are
//! camelCase.
//!
//! - `stop` (`status`, `loop_count`): a `followup_message` is sent as the
//!   next user message. Cursor caps these with the hook's `loop_limit`
//!   ([`LOOP_LIMIT`], written by the install); `loop_count` above 0 says
//!   the turn is a follow-up (Claude Code's `stop_hook_active`). A stop
//!   the user aborted, or one that ended on an error, is not continued.
//! - `preToolUse` and `beforeShellExecution`: `permission: "deny"` with
//!   `agent_message` (to the agent) and `user_message`. Silence is the
//!   only other answer: `allow` is never written.
//! - `postToolUseFailure` (a call that failed, timed out or was refused)
//!   closes the call's guard check as `postToolUse` does.
//! - `postToolUse` takes `additional_context`; `afterFileEdit` and
//!   `afterShellExecution` are fire-and-forget (the kernel still records
//!   what the edit or the command did; the agent hears nothing).
//! - `sessionStart` takes `additional_context`; `beforeSubmitPrompt` takes
//!   only `continue`, so a "stop" prompt pauses the loop but the agent is
//!   not told.

use serde_json::{Value, json};

use crate::hook::protocol::{EventName, HookOutput};
use crate::hook::{Answer, Dialect, Reading};

pub struct Cursor;

/// The `loop_limit` the install writes on the `stop` hook: the most
/// follow-ups Cursor sends in a row. The loop's own `--max-iterations`
/// ends it sooner when smaller.
pub const LOOP_LIMIT: u32 = 50;

/// Cursor's tool names as Claude Code's.
fn tool_name(name: &str) -> &str {
    match name {
        "Shell" | "run_terminal_cmd" | "Terminal" => "Bash",
        "Write" | "write" | "create_file" => "Write",
        "Edit" | "StrReplace" | "MultiEdit" | "edit_file" | "search_replace" | "Delete"
        | "delete_file" => "Edit",
        "read_file" => "Read",
        other => other,
    }
}

impl Dialect for Cursor {
    fn process_names(&self) -> &'static [&'static str] {
        super::Harness::Cursor.process_names()
    }

    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        let mut map = super::object(payload);
        map.remove("transcript_path");
        super::rename(&mut map, "conversation_id", "session_id");
        // The project is the first workspace root; a shell call's `cwd`
        // (a folder inside it, where no loop lives) stays where the
        // command runs, for its relative paths.
        if let Some(root) = map
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .filter(|root| root.as_str().is_some_and(|root| !root.is_empty()))
            .cloned()
        {
            if super::text(&map, "cwd").is_none_or(str::is_empty) {
                map.insert("cwd".into(), root.clone());
            }
            map.insert("ralph_project_dir".into(), root);
        }
        let event = super::text(&map, "hook_event_name").unwrap_or_default();
        let (name, tool) = match event {
            "stop" => {
                let status = super::text(&map, "status").unwrap_or("completed");
                if status != "completed" {
                    return Ok(Reading::Inputs(Vec::new()));
                }
                let follow_up = map.get("loop_count").and_then(Value::as_u64).unwrap_or(0) > 0;
                map.insert("stop_hook_active".into(), json!(follow_up));
                ("Stop", None)
            }
            "sessionStart" => ("SessionStart", None),
            "beforeSubmitPrompt" => {
                // The stop's `followup_message` comes back as a prompt.
                super::mark_our_follow_up(&mut map);
                ("UserPromptSubmit", None)
            }
            "beforeShellExecution" => ("PreToolUse", Some("Bash")),
            "afterShellExecution" => ("PostToolUse", Some("Bash")),
            "afterFileEdit" => ("PostToolUse", Some("Edit")),
            "preToolUse" => ("PreToolUse", None),
            "postToolUse" => ("PostToolUse", None),
            // A call that failed or was refused (`failure_type`): its guard
            // check closes here, not at a later hook.
            "postToolUseFailure" => ("PostToolUseFailure", None),
            _ => return Ok(Reading::Inputs(Vec::new())),
        };
        map.insert("hook_event_name".into(), json!(name));
        match tool {
            Some("Bash") => {
                let command = map.get("command").cloned().unwrap_or(json!(""));
                map.insert("tool_name".into(), json!("Bash"));
                map.insert("tool_input".into(), json!({"command": command}));
                if let Some(output) = map.remove("output") {
                    map.insert("tool_response".into(), json!({"stdout": output}));
                }
            }
            Some(_) => {
                let path = map.get("file_path").cloned().unwrap_or(Value::Null);
                map.insert("tool_name".into(), json!("Edit"));
                map.insert("tool_input".into(), json!({"file_path": path}));
            }
            None => {
                if let Some(name) = super::text(&map, "tool_name").map(tool_name) {
                    let name = name.to_string();
                    map.insert("tool_name".into(), json!(name));
                }
                // Some versions send the tool's input as a JSON string.
                if let Some(Value::String(raw)) = map.get("tool_input") {
                    let parsed = serde_json::from_str::<Value>(raw).unwrap_or(Value::Null);
                    map.insert("tool_input".into(), parsed);
                }
                if let Some(input) = map.remove("tool_input") {
                    map.insert("tool_input".into(), super::with_file_path(input));
                }
                super::rename(&mut map, "tool_output", "tool_response");
            }
        }
        Ok(Reading::Inputs(vec![Value::Object(map)]))
    }

    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        let mut answer = serde_json::Map::new();
        match event {
            EventName::Stop | EventName::SubagentStop => {
                if output.decision.is_some()
                    && let Some(reason) = &output.reason
                {
                    answer.insert("followup_message".into(), json!(reason));
                }
            }
            EventName::PreToolUse => {
                if let Some(reason) = super::deny_reason(output) {
                    answer.insert("permission".into(), json!("deny"));
                    let for_user = output.system_message.clone().unwrap_or(reason.clone());
                    answer.insert("agent_message".into(), json!(reason));
                    answer.insert("user_message".into(), json!(for_user));
                }
            }
            // beforeSubmitPrompt reads only `continue`, and the kernel
            // never refuses a prompt.
            EventName::UserPromptSubmit => {}
            _ => {
                if let Some(text) = super::context_and_reason(output) {
                    answer.insert("additional_context".into(), json!(text));
                }
            }
        }
        Some(super::json_answer(Value::Object(answer)))
    }

    fn block_cap(&self) -> Option<u32> {
        Some(LOOP_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_follow_up_and_a_deny() {
        let payload = json!({"hook_event_name":"stop","conversation_id":"c1","generation_id":"g","workspace_roots":["/p"],"status":"completed","loop_count":2});
        let Reading::Inputs(inputs) = Cursor.read(payload, &[EventName::Stop]).unwrap() else {
            panic!("stepped aside")
        };
        assert_eq!(inputs[0]["session_id"], "c1");
        assert_eq!(inputs[0]["cwd"], "/p");
        assert_eq!(inputs[0]["stop_hook_active"], true);
        let answer = Cursor
            .answer(EventName::Stop, &HookOutput::block("go on"))
            .unwrap();
        assert_eq!(
            answer.stdout.as_deref(),
            Some(r#"{"followup_message":"go on"}"#)
        );
        let deny = Cursor
            .answer(EventName::PreToolUse, &HookOutput::deny("no"))
            .unwrap();
        assert_eq!(
            deny.stdout.as_deref(),
            Some(r#"{"permission":"deny","agent_message":"no","user_message":"no"}"#)
        );
        let aborted = json!({"hook_event_name":"stop","conversation_id":"c1","workspace_roots":["/p"],"status":"aborted"});
        assert!(
            matches!(Cursor.read(aborted, &[EventName::Stop]).unwrap(), Reading::Inputs(v) if v.is_empty())
        );
    }
}
