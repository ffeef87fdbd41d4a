//! `events.jsonl`: one JSON event per line, appended under a lock. The log
//! grows without bound, so no hook reads it; it is for people and monitors.
//!
//! Each event is `{type, agentId, timestamp, data: {event, …}}`,
//! with `taskId` or `loopId` naming what the event is about, and `promptId`
//! when a hook wrote it. The OpenTelemetry exporter reads the log with a
//! cursor; no hook does. Callers with a
//! hook context use [`Ctx::log_event`](crate::hook::ctx::Ctx::log_event),
//! which fills in the session and the clock.

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::Store;

pub const EVENTS_FILE: &str = "events.jsonl";

/// One record of the log.
pub struct Event<'a> {
    /// The envelope `type`: `loop_event`, `task_step_update`, `continuation_event`.
    pub kind: &'a str,
    /// The field naming what the event is about, and its value: `("taskId", id)`.
    pub subject: (&'a str, &'a str),
    /// The Claude Code session, empty when there is none.
    pub agent_id: &'a str,
    /// The hook input's `prompt_id` (the same id as `prompt.id` on Claude
    /// Code's own OpenTelemetry events); absent outside a hook.
    pub prompt_id: Option<&'a str>,
    pub timestamp: DateTime<Utc>,
    /// Must hold `event`.
    pub data: Value,
}

/// Appends one event; the offset in `events.jsonl` where it starts.
pub fn append(store: &Store, event: Event<'_>) -> anyhow::Result<u64> {
    let mut record = json!({
        "type": event.kind,
        "agentId": event.agent_id,
        "timestamp": event.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": event.data,
    });
    if let Some(prompt_id) = event.prompt_id.filter(|id| !id.is_empty()) {
        record["promptId"] = Value::String(prompt_id.to_string());
    }
    record[event.subject.0] = Value::String(event.subject.1.to_string());
    let line = serde_json::to_string(&record).context("cannot encode event")?;
    store.append_line(EVENTS_FILE, &line)
}
