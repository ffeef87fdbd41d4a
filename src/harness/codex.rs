//! OpenAI Codex CLI (`.codex/hooks.json`). Its payloads are Claude Code's
//! names and fields, plus `turn_id` and `model`; its answers are Claude
//! Code's, read strictly: every field it does not know makes the output
//! invalid, and Stop takes only `decision`, `reason` and the universal
//! fields (`hookSpecificOutput` there is rejected).
//!
//! - `transcript_path` names Codex's own rollout file, not a Claude Code
//!   transcript: it is dropped, so nothing reads it as one (the loop judges
//!   a promise from `last_assistant_message`, which Codex sends).
//! - `apply_patch` carries the whole patch in `tool_input.command`: it is
//!   read as one edit per file the patch adds, updates, deletes or moves,
//!   so the guard and the diagnostics see each file.
//! - Codex has no cap on Stop blocks in a row; `stop_hook_active` says a
//!   turn is a Stop hook's continuation, as in Claude Code.

use serde_json::{Value, json};

use crate::hook::protocol::{EventName, HookOutput};
use crate::hook::{Answer, Dialect, Reading};

pub struct Codex;

impl Dialect for Codex {
    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        let mut map = super::object(payload);
        map.remove("transcript_path");
        if super::text(&map, "hook_event_name") == Some("UserPromptSubmit") {
            super::mark_our_follow_up(&mut map);
        }
        if super::text(&map, "tool_name") == Some("apply_patch") {
            let patch = map
                .get("tool_input")
                .and_then(|input| input.get("command"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let edits = patch_files(&patch)
                .into_iter()
                .map(|file| {
                    let mut edit = map.clone();
                    edit.insert("tool_name".into(), json!("Edit"));
                    edit.insert("tool_input".into(), json!({"file_path": file}));
                    Value::Object(edit)
                })
                .collect();
            return Ok(Reading::Inputs(edits));
        }
        Ok(Reading::Inputs(vec![Value::Object(map)]))
    }

    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        let mut value = serde_json::to_value(output).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            // Not in Codex's output schema, which refuses unknown fields.
            map.remove("terminalSequence");
            if matches!(event, EventName::Stop | EventName::SubagentStop) {
                map.remove("hookSpecificOutput");
            }
        }
        Some(super::json_answer(value))
    }

    fn block_cap(&self) -> Option<u32> {
        Some(0)
    }
}

/// The files an `apply_patch` patch touches, in order, each once: the
/// paths after `*** Add File:`, `*** Update File:`, `*** Delete File:`
/// and `*** Move to:`.
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for line in patch.lines() {
        let Some(rest) = line.trim_end().strip_prefix("*** ") else {
            continue;
        };
        let path = ["Add File:", "Update File:", "Delete File:", "Move to:"]
            .iter()
            .find_map(|marker| rest.strip_prefix(marker))
            .map(str::trim);
        if let Some(path) = path.filter(|path| !path.is_empty())
            && !files.iter().any(|known| known == path)
        {
            files.push(path.to_string());
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_each_file_once() {
        let patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: b.py\n+print(1)\n*** Update File: src/a.py\n*** Move to: src/c.py\n*** End Patch\n";
        assert_eq!(patch_files(patch), ["src/a.py", "b.py", "src/c.py"]);
        assert!(patch_files("echo hi").is_empty());
    }

    #[test]
    fn stop_answers_carry_only_what_codex_reads() {
        let output = HookOutput::block("go on")
            .with_system_message("m")
            .with_terminal_sequence(Some("\u{7}".into()));
        let answer = Codex.answer(EventName::Stop, &output).unwrap();
        assert_eq!(
            answer.stdout.as_deref(),
            Some(r#"{"decision":"block","reason":"go on","systemMessage":"m"}"#)
        );
        assert_eq!(
            Codex
                .answer(EventName::Stop, &HookOutput::silent())
                .unwrap()
                .stdout,
            None
        );
    }
}
