//! `events.jsonl`: one JSON event per line, appended under a lock, read from
//! the end (the log grows without bound, so nothing reads it whole).
//!
//! Events follow seed 002 §15.5: `{type, agentId, timestamp, data: {event, …}}`,
//! with `taskId` or `loopId` naming what the event is about.

use std::io::{Read, Seek, SeekFrom};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::ctx::Ctx;

pub const EVENTS_FILE: &str = "events.jsonl";

/// Appends one event. `kind` is the envelope `type` (`loop_event`,
/// `task_step_update`, `continuation_event`), `data` must hold `event`.
pub fn append(ctx: &Ctx, kind: &str, subject: (&str, &str), data: Value) -> anyhow::Result<()> {
    let mut record = json!({
        "type": kind,
        "agentId": ctx.session_id.clone().unwrap_or_default(),
        "timestamp": ctx.now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": data,
    });
    record[subject.0] = Value::String(subject.1.to_string());
    let line = serde_json::to_string(&record).context("cannot encode event")?;
    ctx.store().append_line(EVENTS_FILE, &line)
}

/// The last `n` parsed events, oldest first, reading only the file's tail.
pub fn tail(ctx: &Ctx, n: usize) -> anyhow::Result<Vec<Value>> {
    let path = ctx.store().path(EVENTS_FILE);
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error).with_context(|| format!("cannot open {}", path.display())),
    };
    let len = file
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?
        .len();
    // Grow the window from the end until it holds n complete lines.
    let mut window: u64 = 16 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start))
            .with_context(|| format!("cannot seek {}", path.display()))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().collect();
        if start > 0 && !lines.is_empty() {
            lines.remove(0); // possibly cut in the middle
        }
        if lines.len() >= n || start == 0 {
            let skip = lines.len().saturating_sub(n);
            return Ok(lines[skip..]
                .iter()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect());
        }
        window *= 4;
    }
}
