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
    fn process_names(&self) -> &'static [&'static str] {
        super::Harness::Codex.process_names()
    }

    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        let mut map = super::object(payload);
        map.remove("transcript_path");
        if super::text(&map, "hook_event_name") == Some("UserPromptSubmit") {
            super::mark_our_follow_up(&mut map);
        }
        if super::text(&map, "tool_name") == Some("apply_patch") {
            // Taken out before the per-file copies: each would otherwise
            // carry the whole patch.
            let patch = map
                .remove("tool_input")
                .and_then(|input| {
                    input
                        .get("command")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_default();
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

/// The files an `apply_patch` patch touches, each once: the paths after
/// `*** Add File:`, `*** Update File:`, `*** Delete File:` and `*** Move
/// to:`, with the whitespace Codex's own parser accepts before a header
/// (an indented header still edits the file). Paths in hidden folders come
/// first (the hooks' state, settings and configuration live there), so a
/// patch of thousands of files is denied at once for the one that matters
/// rather than after the guard's time has run out; the rest keep their
/// order.
pub fn patch_files(patch: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut files: Vec<String> = Vec::new();
    for line in patch.lines() {
        let Some(rest) = line.trim().strip_prefix("*** ") else {
            continue;
        };
        let path = ["Add File:", "Update File:", "Delete File:", "Move to:"]
            .iter()
            .find_map(|marker| rest.strip_prefix(marker))
            .map(str::trim);
        if let Some(path) = path.filter(|path| !path.is_empty())
            && seen.insert(path)
        {
            files.push(path.to_string());
        }
    }
    let hidden = |path: &String| {
        !std::path::Path::new(path).components().any(|part| {
            part.as_os_str()
                .to_str()
                .is_some_and(|name| name.starts_with('.') && name != "." && name != "..")
        })
    };
    // Stable: hidden paths first, each group in the patch's order.
    files.sort_by_key(hidden);
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
    fn indented_headers_count_and_hidden_paths_come_first() {
        // Codex's parser applies a header with whitespace before it.
        let patch = "*** Begin Patch\n*** Add File: a.py\n+x\n\t*** Delete File: .claude/orchestrator/loop.json\n  *** Update File: src/b.py\n@@\n-a\n+b\n*** End Patch\n";
        assert_eq!(
            patch_files(patch),
            [".claude/orchestrator/loop.json", "a.py", "src/b.py"]
        );
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
