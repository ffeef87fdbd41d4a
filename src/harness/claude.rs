//! Claude Code's hook command lines, which carry no `--harness`: Claude
//! Code's payloads pass through untouched, and a payload that is plainly
//! another harness's is handed to that harness's dialect — except Cursor's.
//!
//! Cursor runs the hooks of `.claude/settings.json` too (its "Third-party
//! skills" setting), mapping its events onto Claude Code's. Its payloads
//! then arrive here with its own fields (`conversation_id`,
//! `workspace_roots`, `cursor_version`) and its own tool names, and it reads
//! the answer by its own rules, which are not documented for these hooks.
//! A guessed answer could be a wrong one — and a project that also ran
//! `ralph-hooks install --harness cursor` would have every Stop counted
//! twice. So these binaries step aside: one line on stderr, exit 0, no
//! answer; `.cursor/hooks.json` is where Cursor is served.

use std::cell::Cell;

use serde_json::Value;

use crate::hook::protocol::{EventName, HookOutput};
use crate::hook::{Answer, Dialect, Reading};

use super::Harness;

/// Claude Code's dialect, unless the payload names another harness.
#[derive(Default)]
pub struct Detecting {
    /// The harness the payload turned out to be, once read.
    found: Cell<Option<Harness>>,
}

/// Which harness sent `payload`, as far as its fields tell; `None` for
/// Claude Code's own (and anything unrecognised).
///
/// One pass over the keys, comparing names (no hashing): this runs on every
/// Claude Code call, whose start-up it must not slow down.
pub fn detect(payload: &Value) -> Option<Harness> {
    let map = payload.as_object()?;
    let (mut cursor_fields, mut copilot_fields, mut snake_event) = (0, 0, false);
    let mut codex = false;
    let mut gemini = false;
    let mut copilot_mapped = false;
    for (key, value) in map {
        match key.as_str() {
            // Copilot CLI running `.claude/settings.json` hooks: Claude
            // Code's names, its own transcript and a timestamp.
            "transcript_path" => {
                copilot_mapped |= value
                    .as_str()
                    .is_some_and(|path| path.contains("/.copilot/session-state/"));
            }
            "timestamp" => {
                copilot_mapped |= std::env::var_os("CLAUDE_PROJECT_DIR").is_none();
            }
            "cursor_version" => return Some(Harness::Cursor),
            "conversation_id" | "workspace_roots" => cursor_fields += 1,
            "hookEventName" | "sessionId" | "toolName" | "toolArgs" => copilot_fields += 1,
            // Codex CLI's payloads are Claude Code's but for `turn_id`,
            // which every one of them carries.
            "turn_id" => codex = true,
            "hook_event_name" => {
                snake_event = true;
                gemini = value.as_str().is_some_and(super::gemini::is_gemini_event);
            }
            _ => {}
        }
    }
    if cursor_fields == 2 {
        Some(Harness::Cursor)
    } else if copilot_mapped && snake_event {
        // Told apart from Copilot's own payloads by the snake-case event.
        Some(Harness::Copilot)
    } else if gemini {
        Some(Harness::Gemini)
    } else if copilot_fields > 0 && !snake_event {
        Some(Harness::Copilot)
    } else if codex {
        Some(Harness::Codex)
    } else {
        None
    }
}

/// The one line a Cursor payload at a Claude Code hook gets.
pub const CURSOR_STEP_ASIDE: &str = "a Cursor payload (Cursor runs .claude/settings.json hooks when its third-party hooks are on): not answered here, since Cursor reads these answers by its own rules; `ralph-hooks install --harness cursor` serves Cursor from .cursor/hooks.json";

/// The one line a Copilot CLI payload in Claude Code's shape gets.
pub const COPILOT_STEP_ASIDE: &str = "a Copilot CLI payload (Copilot runs .claude/settings.json hooks too): not answered here, since these hooks would read Copilot's transcript as Claude Code's and count its stops twice beside .github/hooks; `ralph-hooks install --harness copilot` serves Copilot from .github/hooks";

impl Dialect for Detecting {
    fn read(&self, payload: Value, accepted: &[EventName]) -> Result<Reading, String> {
        match detect(&payload) {
            None | Some(Harness::Claude) => Ok(Reading::Inputs(vec![payload])),
            Some(Harness::Cursor) => Ok(Reading::StepAside(CURSOR_STEP_ASIDE.to_string())),
            Some(Harness::Copilot) if payload.get("hook_event_name").is_some() => {
                Ok(Reading::StepAside(COPILOT_STEP_ASIDE.to_string()))
            }
            Some(harness) => {
                self.found.set(Some(harness));
                harness.dialect(&[]).read(payload, accepted)
            }
        }
    }

    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        self.found.get()?.dialect(&[]).answer(event, output)
    }

    fn block_cap(&self) -> Option<u32> {
        self.found.get()?.dialect(&[]).block_cap()
    }

    fn process_names(&self) -> &'static [&'static str] {
        self.found
            .get()
            .map_or(&[], |harness| harness.process_names())
    }

    fn fault_code(&self) -> u8 {
        match self.found.get() {
            Some(harness) => harness.dialect(&[]).fault_code(),
            None => crate::hook::ClaudeCode.fault_code(),
        }
    }

    /// Claude Code's until the payload turned out to be another harness's.
    fn is_claude(&self) -> bool {
        self.found.get().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payloads_name_their_harness() {
        let claude = json!({"hook_event_name":"Stop","session_id":"s","stop_hook_active":false});
        assert_eq!(detect(&claude), None);
        let codex = json!({"hook_event_name":"Stop","session_id":"s","turn_id":"t"});
        assert_eq!(detect(&codex), Some(Harness::Codex));
        let gemini = json!({"hook_event_name":"AfterAgent","session_id":"s"});
        assert_eq!(detect(&gemini), Some(Harness::Gemini));
        let cursor =
            json!({"hook_event_name":"stop","conversation_id":"c","workspace_roots":["/p"]});
        assert_eq!(detect(&cursor), Some(Harness::Cursor));
        let cursor_mapped = json!({"hook_event_name":"Stop","cursor_version":"2.1.0"});
        assert_eq!(detect(&cursor_mapped), Some(Harness::Cursor));
        let copilot = json!({"hookEventName":"agentStop","sessionId":"s","cwd":"/p"});
        assert_eq!(detect(&copilot), Some(Harness::Copilot));
        let copilot_mapped = json!({"hook_event_name":"Stop","session_id":"s","stop_reason":"end_turn",
            "transcript_path":"/h/.copilot/session-state/s/events.jsonl","stop_hook_active":false});
        assert_eq!(detect(&copilot_mapped), Some(Harness::Copilot));
        let reading = Detecting::default()
            .read(copilot_mapped, &[EventName::Stop])
            .unwrap();
        assert!(matches!(reading, Reading::StepAside(_)));
    }
}
