//! Reading Claude Code's session transcript (JSONL, undocumented; see
//! `shared/reference/claude-code-hooks.md` §6) without reading all of it.
//!
//! Transcripts grow to many megabytes, so we read backwards from the end in
//! growing windows and stop as soon as we have what we need — or, for the
//! loop's token count, forward from where the previous Stop stopped
//! ([`usage_since`] and its [`UsageCursor`]).
//!
//! What we read, each seen in 2.1.330 transcripts:
//! - assistant entries' `message.usage` (one line per content block, each
//!   carrying the message's usage, so a message is counted once by its id);
//! - the block cap's row: `{"type":"system","subtype":"informational",
//!   "content":"A hook blocked the turn from ending 9 consecutive times—…"}`;
//! - a failed turn's row: an assistant entry with `isApiErrorMessage: true`,
//!   `apiErrorStatus`, `error` and, for a subscription's usage limit,
//!   `quotaLimits.resetsAt` (epoch seconds).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use chrono::{DateTime, TimeZone as _, Utc};
use serde::{Deserialize, Serialize};
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

/// Waits, at most `limit`, until the transcript holds, after byte `after`
/// (where the previous count stopped), an assistant message whose text is
/// `expected` (the Stop input's `last_assistant_message`: the transcript is
/// written asynchronously and may lag the hook, and the same words may end
/// several turns). `true` when it is there.
pub fn wait_for_last_text(
    path: &Path,
    after: u64,
    expected: &str,
    limit: std::time::Duration,
) -> bool {
    let deadline = std::time::Instant::now() + limit;
    let expected = expected.trim();
    loop {
        if text_after(path, after).is_some_and(|text| text.trim() == expected) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(15));
    }
}

/// The last assistant text in the whole lines after byte `after` (at most
/// [`MAX_SCAN_BYTES`] of them).
fn text_after(path: &Path, after: u64) -> Option<String> {
    let (mut file, len) = fsread::open_regular(path, Links::Follow).ok()??;
    let start = after.max(len.saturating_sub(MAX_SCAN_BYTES));
    if start >= len {
        return None;
    }
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.take(len - start).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .filter(|line| line.contains("\"assistant\""))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|record| assistant_text(&record))
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

/// Token counts of `message.usage`, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    /// `cache_creation_input_tokens`: prompt tokens written to the cache.
    #[serde(default)]
    pub cache_creation: u64,
    /// `cache_read_input_tokens`: prompt tokens read from the cache.
    #[serde(default)]
    pub cache_read: u64,
}

impl Tokens {
    /// Every token the API processed: input, output, cache writes and reads.
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_creation + self.cache_read
    }

    pub fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.output += other.output;
        self.cache_creation += other.cache_creation;
        self.cache_read += other.cache_read;
    }

    /// Field by field, the larger: a message's lines may carry its usage as
    /// it grew while streaming.
    fn max(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_creation: self.cache_creation.max(other.cache_creation),
            cache_read: self.cache_read.max(other.cache_read),
        }
    }

    fn minus(&self, other: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(other.input),
            output: self.output.saturating_sub(other.output),
            cache_creation: self.cache_creation.saturating_sub(other.cache_creation),
            cache_read: self.cache_read.saturating_sub(other.cache_read),
        }
    }

    fn of_usage(usage: &Value) -> Tokens {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        Tokens {
            input: field("input_tokens"),
            output: field("output_tokens"),
            cache_creation: field("cache_creation_input_tokens"),
            cache_read: field("cache_read_input_tokens"),
        }
    }
}

/// Where the previous count stopped: the transcript, the byte after the
/// last whole line read, and the last message counted (its lines may go on
/// past the cursor).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageCursor {
    pub path: String,
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_message: Option<String>,
    #[serde(default)]
    pub last_usage: Tokens,
}

/// What [`usage_since`] counted: tokens per model, and where to go on from.
#[derive(Debug, Clone, Default)]
pub struct UsageRead {
    pub by_model: BTreeMap<String, Tokens>,
    pub cursor: UsageCursor,
    /// The start of the loop lay further back than we search
    /// ([`MAX_USAGE_BACKTRACK`]): older turns were not counted.
    pub truncated: bool,
}

impl UsageRead {
    pub fn total(&self) -> Tokens {
        let mut total = Tokens::default();
        for tokens in self.by_model.values() {
            total.add(tokens);
        }
        total
    }
}

/// How far back from the end we look for the loop's start the first time a
/// transcript is counted (a loop started long into a session).
const MAX_USAGE_BACKTRACK: u64 = 64 * 1024 * 1024;

/// The tokens of this session's assistant messages in `path` since `since`
/// (the loop's start), from `cursor` on when it is for this file. Only
/// whole lines are read: a line still being written is counted next time.
/// API-error rows (`<synthetic>`) cost nothing and are skipped.
pub fn usage_since(
    path: &Path,
    cursor: Option<&UsageCursor>,
    since: DateTime<Utc>,
    session: Option<&str>,
) -> std::io::Result<UsageRead> {
    let (mut file, len) = fsread::open_regular(path, Links::Follow)
        .map_err(std::io::Error::other)?
        .ok_or(std::io::ErrorKind::NotFound)?;
    let path_text = path.to_string_lossy().into_owned();
    let mut truncated = false;
    let (start, carried) = match cursor {
        Some(cursor) if cursor.path == path_text && cursor.offset <= len => (
            cursor.offset,
            cursor
                .last_message
                .clone()
                .map(|id| (id, cursor.last_usage)),
        ),
        _ => {
            let (start, cut) = start_of_time(&mut file, len, since)?;
            truncated = cut;
            (start, None)
        }
    };
    file.seek(SeekFrom::Start(start))?;
    let mut reader = BufReader::new(file.take(len - start));
    let mut offset = start;
    // Per message id: its model and its largest usage, in order of appearance.
    let mut messages: Vec<(String, String, Tokens)> = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        offset += read as u64;
        let text = String::from_utf8_lossy(&line);
        if !text.contains("\"usage\"") || !text.contains("\"assistant\"") {
            continue;
        }
        let Ok(record) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if record.get("type").and_then(Value::as_str) != Some("assistant")
            || record.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
        {
            continue;
        }
        if let (Some(wanted), Some(seen)) =
            (session, record.get("sessionId").and_then(Value::as_str))
            && wanted != seen
        {
            continue;
        }
        if let Some(at) = timestamp(&record)
            && at < since
        {
            continue;
        }
        let Some(message) = record.get("message") else {
            continue;
        };
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        if model == "<synthetic>" {
            continue;
        }
        let Some(usage) = message.get("usage") else {
            continue;
        };
        let tokens = Tokens::of_usage(usage);
        let id = message
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("@{offset}"));
        match messages.iter_mut().find(|(seen, _, _)| *seen == id) {
            Some(entry) => entry.2 = entry.2.max(&tokens),
            None => messages.push((id, model.to_string(), tokens)),
        }
    }
    let mut by_model: BTreeMap<String, Tokens> = BTreeMap::new();
    for (id, model, tokens) in &messages {
        // The message the previous count ended on: only what it grew by.
        let new = match &carried {
            Some((carried_id, counted)) if carried_id == id => tokens.max(counted).minus(counted),
            _ => *tokens,
        };
        by_model.entry(model.clone()).or_default().add(&new);
    }
    let (last_message, last_usage) = match messages.last() {
        Some((id, _, tokens)) => {
            let counted = match &carried {
                Some((carried_id, counted)) if carried_id == id => tokens.max(counted),
                _ => *tokens,
            };
            (Some(id.clone()), counted)
        }
        None => carried.map_or((None, Tokens::default()), |(id, t)| (Some(id), t)),
    };
    Ok(UsageRead {
        by_model,
        cursor: UsageCursor {
            path: path_text,
            offset,
            last_message,
            last_usage,
        },
        truncated,
    })
}

/// The offset of a line at or before the first entry from `since` on: the
/// end of the file is searched in growing windows until one starts with an
/// older entry (or the file's start). True as the second value when the
/// search gave up at [`MAX_USAGE_BACKTRACK`].
fn start_of_time(
    file: &mut std::fs::File,
    len: u64,
    since: DateTime<Utc>,
) -> std::io::Result<(u64, bool)> {
    let mut window: u64 = 256 * 1024;
    loop {
        let start = len.saturating_sub(window);
        if start == 0 {
            return Ok((0, false));
        }
        file.seek(SeekFrom::Start(start))?;
        let mut reader = BufReader::new((&mut *file).take(window));
        let mut skipped = Vec::new();
        // The window starts mid-line: the first whole line follows.
        let first = reader.read_until(b'\n', &mut skipped)? as u64;
        let line_start = start + first;
        let mut line = Vec::new();
        let mut older = false;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            let Ok(record) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if let Some(at) = timestamp(&record) {
                older = at < since;
                break;
            }
        }
        if older {
            return Ok((line_start, false));
        }
        if window >= MAX_USAGE_BACKTRACK {
            return Ok((line_start, true));
        }
        window *= 4;
    }
}

fn timestamp(record: &Value) -> Option<DateTime<Utc>> {
    let text = record.get("timestamp")?.as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

/// How Claude Code's block-cap row begins.
pub const CAP_ROW_PREFIX: &str = "A hook blocked the turn from ending";

/// How far back the cap and API-error rows are looked for: they end the
/// previous turn, so they sit near the end.
const ROW_SCAN_BYTES: u64 = 1024 * 1024;

/// A row Claude Code wrote when its block cap ended a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct CapRow {
    pub at: DateTime<Utc>,
    pub text: String,
}

/// The newest block-cap row written after `after`, if any.
pub fn cap_row_after(path: &Path, after: DateTime<Utc>) -> Option<CapRow> {
    let lines = tail_lines(path, ROW_SCAN_BYTES).ok()?;
    for line in lines.iter().rev() {
        if !line.contains(CAP_ROW_PREFIX) {
            continue;
        }
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let text = record.get("content").and_then(Value::as_str).unwrap_or("");
        if record.get("type").and_then(Value::as_str) != Some("system")
            || !text.starts_with(CAP_ROW_PREFIX)
        {
            continue;
        }
        let at = timestamp(&record)?;
        return (at > after).then(|| CapRow {
            at,
            text: text.to_string(),
        });
    }
    None
}

/// The row of a turn an API error ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiErrorRow {
    pub at: Option<DateTime<Utc>>,
    pub status: Option<u64>,
    /// `rate_limit`, `server_error`, …
    pub error: Option<String>,
    pub text: String,
    /// `quotaLimits.resetsAt`: when a subscription's usage limit resets.
    pub resets_at: Option<DateTime<Utc>>,
    /// `quotaLimits.rateLimitType`: `five_hour`, `seven_day`, …
    pub limit_type: Option<String>,
}

/// The newest API-error row in the transcript.
pub fn last_api_error(path: &Path) -> Option<ApiErrorRow> {
    let lines = tail_lines(path, ROW_SCAN_BYTES).ok()?;
    for line in lines.iter().rev() {
        if !line.contains("isApiErrorMessage") {
            continue;
        }
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if record.get("isApiErrorMessage").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let quota = record.get("quotaLimits");
        return Some(ApiErrorRow {
            at: timestamp(&record),
            status: record.get("apiErrorStatus").and_then(Value::as_u64),
            error: record
                .get("error")
                .and_then(Value::as_str)
                .map(str::to_string),
            text: assistant_text(&record).unwrap_or_default(),
            resets_at: quota
                .and_then(|q| q.get("resetsAt"))
                .and_then(Value::as_i64)
                .and_then(|secs| Utc.timestamp_opt(secs, 0).single()),
            limit_type: quota
                .and_then(|q| q.get("rateLimitType"))
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
    None
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

    #[test]
    fn waits_for_the_last_message_after_the_counted_offset() {
        let dir =
            std::env::temp_dir().join(format!("ralph-transcript-wait-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let turn = |text: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}}}"#
            ) + "\n"
        };
        // The previous turn ended with the same words: counted already.
        std::fs::write(&path, turn("done")).unwrap();
        let counted = std::fs::metadata(&path).unwrap().len();
        let short = std::time::Duration::from_millis(60);
        assert!(!wait_for_last_text(&path, counted, "done", short));
        // The hook runs while the writer is late: it waits, then sees it.
        let writer = {
            let path = path.clone();
            let line = turn("done");
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                std::io::Write::write_all(&mut file, line.as_bytes()).unwrap();
            })
        };
        assert!(wait_for_last_text(
            &path,
            counted,
            " done ",
            std::time::Duration::from_secs(5)
        ));
        writer.join().unwrap();
        // Another turn's text is not this one's.
        assert!(!wait_for_last_text(&path, counted, "other", short));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
