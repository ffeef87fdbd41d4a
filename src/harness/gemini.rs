//! Gemini CLI (`.gemini/settings.json`, `hooks`). Its events have their own
//! names — BeforeAgent (a prompt), BeforeTool, AfterTool, AfterAgent (the
//! agent's turn is over) — with snake_case fields, and its tools are
//! `run_shell_command`, `write_file`, `replace`, … .
//!
//! - AfterAgent is the Stop: `decision: "deny"` with a `reason` rejects the
//!   turn's response and sends the reason as the next prompt (the loop's
//!   follow-up); `stop_hook_active` says the turn was such a retry;
//!   `prompt_response` is the turn's last text. No cap on retries in a row.
//! - BeforeTool denies with `decision: "deny"` and a `reason` (given to the
//!   agent as the tool's error).
//! - AfterTool, SessionStart and BeforeAgent take
//!   `hookSpecificOutput.additionalContext`; a loop's block after an edit
//!   (errors the edit introduced) goes there too.
//! - `transcript_path` is Gemini's own file, not a Claude Code transcript:
//!   it is dropped.

use serde_json::{Value, json};

use crate::hook::protocol::{EventName, HookOutput};
use crate::hook::{Answer, Dialect, Reading};

pub struct Gemini;

/// Gemini's event names that Claude Code does not use.
pub fn is_gemini_event(name: &str) -> bool {
    matches!(
        name,
        "BeforeAgent"
            | "AfterAgent"
            | "BeforeTool"
            | "AfterTool"
            | "BeforeModel"
            | "AfterModel"
            | "BeforeToolSelection"
            | "PreCompress"
    )
}

/// Gemini's tool names as Claude Code's.
fn tool_name(name: &str) -> &str {
    match name {
        "run_shell_command" => "Bash",
        "write_file" => "Write",
        "replace" | "edit" => "Edit",
        "read_file" => "Read",
        other => other,
    }
}

impl Dialect for Gemini {
    fn process_names(&self) -> &'static [&'static str] {
        super::Harness::Gemini.process_names()
    }

    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        let mut map = super::object(payload);
        map.remove("transcript_path");
        let event = match super::text(&map, "hook_event_name") {
            Some("AfterAgent") => "Stop",
            Some("BeforeAgent") => "UserPromptSubmit",
            Some("BeforeTool") => "PreToolUse",
            Some("AfterTool") => "PostToolUse",
            Some("SessionStart") => "SessionStart",
            // SessionEnd, model and compression events: nothing to do.
            _ => return Ok(Reading::Inputs(Vec::new())),
        };
        map.insert("hook_event_name".into(), json!(event));
        if event == "UserPromptSubmit" {
            super::mark_our_follow_up(&mut map);
        }
        if event == "Stop" {
            super::rename(&mut map, "prompt_response", "last_assistant_message");
            // The original prompt is not a prompt the kernel should read.
            map.remove("prompt");
        }
        if let Some(name) = super::text(&map, "tool_name").map(tool_name) {
            let name = name.to_string();
            map.insert("tool_name".into(), json!(name));
            if let Some(input) = map.remove("tool_input") {
                // `run_shell_command`'s `dir_path`: where the command runs
                // (its relative paths), inside the session's project.
                let dir = input
                    .get("dir_path")
                    .and_then(Value::as_str)
                    .filter(|dir| !dir.is_empty())
                    .map(str::to_string);
                if let (Some(dir), Some(cwd)) = (dir, super::text(&map, "cwd")) {
                    let cwd = cwd.to_string();
                    map.insert("ralph_project_dir".into(), json!(cwd));
                    let ran_in = std::path::Path::new(&cwd).join(dir);
                    map.insert("cwd".into(), json!(ran_in.to_string_lossy()));
                }
                map.insert("tool_input".into(), super::with_file_path(input));
            }
        }
        Ok(Reading::Inputs(vec![Value::Object(map)]))
    }

    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        let mut answer = serde_json::Map::new();
        if let Some(message) = &output.system_message {
            answer.insert("systemMessage".into(), json!(message));
        }
        match event {
            EventName::Stop | EventName::SubagentStop => {
                if output.decision.is_some()
                    && let Some(reason) = &output.reason
                {
                    answer.insert("decision".into(), json!("deny"));
                    answer.insert("reason".into(), json!(reason));
                }
            }
            EventName::PreToolUse => {
                if let Some(reason) = super::deny_reason(output) {
                    answer.insert("decision".into(), json!("deny"));
                    answer.insert("reason".into(), json!(reason));
                }
            }
            _ => {
                let name = match event {
                    EventName::PostToolUse | EventName::PostToolUseFailure => "AfterTool",
                    EventName::UserPromptSubmit => "BeforeAgent",
                    _ => "SessionStart",
                };
                if let Some(text) = super::context_and_reason(output) {
                    answer.insert(
                        "hookSpecificOutput".into(),
                        json!({"hookEventName": name, "additionalContext": text}),
                    );
                }
            }
        }
        Some(super::json_answer(Value::Object(answer)))
    }

    fn block_cap(&self) -> Option<u32> {
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_agent_reads_as_a_stop_and_answers_deny() {
        let payload = json!({"hook_event_name":"AfterAgent","session_id":"s","cwd":"/p","prompt":"do it","prompt_response":"done","stop_hook_active":true,"transcript_path":"/t.json"});
        let Reading::Inputs(inputs) = Gemini.read(payload, &[EventName::Stop]).unwrap() else {
            panic!("stepped aside")
        };
        assert_eq!(inputs[0]["hook_event_name"], "Stop");
        assert_eq!(inputs[0]["last_assistant_message"], "done");
        assert!(inputs[0].get("transcript_path").is_none());
        let answer = Gemini
            .answer(EventName::Stop, &HookOutput::block("go on"))
            .unwrap();
        assert_eq!(
            answer.stdout.as_deref(),
            Some(r#"{"decision":"deny","reason":"go on"}"#)
        );
    }
}
