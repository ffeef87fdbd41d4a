//! GitHub Copilot CLI (`.github/hooks/*.json`, `version: 1`). A hook
//! registered under a camelCase event name (`agentStop`, `preToolUse`, …)
//! gets camelCase fields — `sessionId`, `cwd`, `toolName`, `toolArgs` (the
//! tool's arguments, often as a JSON string), `toolResult`, `prompt` — and
//! not always the event's name, so the install writes it on the command
//! line (`--event agentStop`). One registered under a PascalCase name gets
//! VS Code's snake_case fields, which are Claude Code's, and Claude Code's
//! answers.
//!
//! - `agentStop` / `subagentStop`: `decision: "block"` with a `reason`,
//!   which is queued as the next prompt (and goes through
//!   `userPromptSubmitted`: it is marked as not the user's). No cap on
//!   blocks in a row; the payload says `stop_hook_active` (snake_case, as
//!   Copilot CLI 1.0.102 sends it).
//! - `preToolUse`: `permissionDecision: "deny"` with
//!   `permissionDecisionReason`; never `allow` or `ask`.
//! - `postToolUseFailure` (a tool call that failed) closes the call's
//!   guard check as `postToolUse` does.
//! - `postToolUse`, `postToolUseFailure`, `sessionStart`, `userPromptSubmitted`:
//!   `additionalContext`, which the documentation does not promise the
//!   agent reads after a tool; the kernel's records are made either way.

use serde_json::{Map, Value, json};

use crate::hook::protocol::{EventName, HookOutput};
use crate::hook::{Answer, Dialect, Reading};

pub struct Copilot {
    /// The event from `--event`, for payloads that do not name theirs.
    pub event: Option<String>,
}

/// Copilot's tool names as Claude Code's.
fn tool_name(name: &str) -> &str {
    match name {
        "bash" | "shell" | "powershell" => "Bash",
        "create" | "write" => "Write",
        "edit" | "str_replace" | "str_replace_editor" | "apply_patch" => "Edit",
        "view" | "read" => "Read",
        other => other,
    }
}

impl Dialect for Copilot {
    fn process_names(&self) -> &'static [&'static str] {
        super::Harness::Copilot.process_names()
    }

    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        let mut map = super::object(payload);
        let named = super::text(&map, "hookEventName")
            .or_else(|| super::text(&map, "hook_event_name"))
            .map(str::to_string)
            .or_else(|| self.event.clone())
            .ok_or("a Copilot payload without its event: the hook needs `--event <name>`")?;
        let event = match named.as_str() {
            "agentStop" => "Stop",
            "subagentStop" => "SubagentStop",
            "sessionStart" => "SessionStart",
            "userPromptSubmitted" => "UserPromptSubmit",
            "preToolUse" => "PreToolUse",
            "postToolUse" => "PostToolUse",
            // A call that failed: its guard check closes here, not at a
            // later hook (a user's `loop cancel` between would be taken
            // for the call's).
            "postToolUseFailure" => "PostToolUseFailure",
            // PascalCase registrations speak Claude Code's dialect.
            pascal if crate::hook::protocol::EventName::parse(pascal).is_some() => {
                map.insert("hook_event_name".into(), json!(pascal));
                return Ok(Reading::Inputs(vec![Value::Object(map)]));
            }
            _ => return Ok(Reading::Inputs(Vec::new())),
        };
        map.remove("hookEventName");
        map.remove("transcriptPath");
        map.insert("hook_event_name".into(), json!(event));
        super::rename(&mut map, "sessionId", "session_id");
        if event == "UserPromptSubmit" {
            // agentStop's block reason comes back as a prompt.
            super::mark_our_follow_up(&mut map);
        }
        super::rename(&mut map, "stopHookActive", "stop_hook_active");
        if let Some(name) = super::text(&map, "toolName").map(tool_name) {
            let name = name.to_string();
            map.remove("toolName");
            map.insert("tool_name".into(), json!(name));
        }
        if let Some(args) = map.remove("toolArgs") {
            let args = match args {
                Value::String(raw) => serde_json::from_str(&raw).unwrap_or(Value::Null),
                other => other,
            };
            map.insert("tool_input".into(), super::with_file_path(args));
        }
        super::rename(&mut map, "toolResult", "tool_response");
        Ok(Reading::Inputs(vec![Value::Object(map)]))
    }

    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        // A PascalCase registration reads Claude Code's answers.
        if self
            .event
            .as_deref()
            .is_some_and(|name| name.starts_with(|c: char| c.is_ascii_uppercase()))
        {
            return None;
        }
        let mut answer = Map::new();
        match event {
            EventName::Stop | EventName::SubagentStop => {
                if output.decision.is_some()
                    && let Some(reason) = &output.reason
                {
                    answer.insert("decision".into(), json!("block"));
                    answer.insert("reason".into(), json!(reason));
                }
            }
            EventName::PreToolUse => {
                if let Some(reason) = super::deny_reason(output) {
                    answer.insert("permissionDecision".into(), json!("deny"));
                    answer.insert("permissionDecisionReason".into(), json!(reason));
                }
            }
            _ => {
                if let Some(text) = super::context_and_reason(output) {
                    answer.insert("additionalContext".into(), json!(text));
                }
            }
        }
        Some(super::json_answer(Value::Object(answer)))
    }

    fn block_cap(&self) -> Option<u32> {
        Some(0)
    }

    /// Copilot CLI denies a tool call whose preToolUse hook exits 1 ("hook
    /// errored"): a fault must fail open here, so it exits 0.
    fn fault_code(&self) -> u8 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_tool_call_reads_as_claude_codes() {
        let copilot = Copilot {
            event: Some("preToolUse".into()),
        };
        let payload = json!({"timestamp":1,"cwd":"/p","sessionId":"s","toolName":"bash","toolArgs":"{\"command\":\"git push\"}"});
        let Reading::Inputs(inputs) = copilot.read(payload, &[EventName::PreToolUse]).unwrap()
        else {
            panic!("stepped aside")
        };
        assert_eq!(inputs[0]["hook_event_name"], "PreToolUse");
        assert_eq!(inputs[0]["tool_name"], "Bash");
        assert_eq!(inputs[0]["tool_input"]["command"], "git push");
        assert_eq!(inputs[0]["session_id"], "s");
        let deny = copilot
            .answer(EventName::PreToolUse, &HookOutput::deny("no"))
            .unwrap();
        assert_eq!(
            deny.stdout.as_deref(),
            Some(r#"{"permissionDecision":"deny","permissionDecisionReason":"no"}"#)
        );
    }
}
