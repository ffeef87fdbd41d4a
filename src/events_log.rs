//! `events.jsonl`: one JSON event per line, appended under a lock. The log
//! grows without bound, so no hook reads it; it is for people and monitors.
//!
//! Events follow seed 002 §15.5: `{type, agentId, timestamp, data: {event, …}}`,
//! with `taskId` or `loopId` naming what the event is about.

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
