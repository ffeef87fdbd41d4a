//! Reading Claude Code's session transcript (JSONL, undocumented; see
//! `shared/reference/claude-code-hooks.md` §6) without reading all of it.
//!
//! Transcripts grow to many megabytes, so we read backwards from the end in
//! growing windows and stop as soon as we have what we need.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

use crate::util::fsread::{self, Links};

/// How much of the transcript's end we are willing to scan: enough for any
/// real last turn, bounded so a huge file cannot stall a hook.
const MAX_SCAN_BYTES: u64 = 8 * 1024 * 1024;

/// The last lines of a file, oldest first, within `max_bytes` of its end.
/// The first line is dropped when the window starts mid-line.
/// The path comes from hook input: a FIFO or a link to `/dev/zero` is
/// refused by the shared reader instead of blocking or reading forever.
pub fn tail_lines(path: &Path, max_bytes: u64) -> std::io::Result<Vec<String>> {
    let (mut file, len) = fsread::open_regular(path, Links::Follow)
        .map_err(std::io::Error::other)?
        .ok_or(std::io::ErrorKind::NotFound)?;
    let start = len.saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    // A file still being appended to may have grown since fstat.
    file.take(max_bytes).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if start > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    Ok(lines)
}

/// The text of the last assistant text block in the transcript, if any.
/// Each content block is its own line, so the last assistant line is often a
/// bare `tool_use`; we keep walking back to the last one with text.
pub fn last_assistant_text(path: &Path) -> Option<String> {
    let mut window = 64 * 1024;
    loop {
        let lines = tail_lines(path, window).ok()?;
        for line in lines.iter().rev() {
            if !line.contains("\"assistant\"") {
                continue;
            }
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let Some(text) = assistant_text(&record) {
                return Some(text);
            }
        }
        let len = std::fs::metadata(path).ok()?.len();
        if window >= len || window >= MAX_SCAN_BYTES {
            return None;
        }
        window *= 4;
    }
}

fn assistant_text(record: &Value) -> Option<String> {
    let message = record.get("message")?;
    let is_assistant = record.get("type").and_then(Value::as_str) == Some("assistant")
        || message.get("role").and_then(Value::as_str) == Some("assistant");
    if !is_assistant {
        return None;
    }
    match message.get("content")? {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|block| block.get("text").and_then(Value::as_str))
                .collect();
            if texts.is_empty() {
                None
            } else {
                Some(texts.join("\n"))
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_last_text_past_tool_use_lines() {
        let dir = std::env::temp_dir().join(format!("ralph-transcript-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let lines = [
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"first"}]}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"<promise>X</promise>"}]}}"#,
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","name":"Bash","input":{}}]}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"ok"}]}}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        assert_eq!(
            last_assistant_text(&path).as_deref(),
            Some("<promise>X</promise>")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
