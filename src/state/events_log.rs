//! `events.jsonl`: one JSON event per line, appended under a lock. The log
//! grows without bound, so no hook reads it; it is for people and monitors.
//!
//! Events follow seed 002 §15.5: `{type, agentId, timestamp, data: {event, …}}`,
//! with `taskId` or `loopId` naming what the event is about. Callers with a
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
    pub timestamp: DateTime<Utc>,
    /// Must hold `event`.
    pub data: Value,
}

/// Appends one event.
pub fn append(store: &Store, event: Event<'_>) -> anyhow::Result<()> {
    let mut record = json!({
        "type": event.kind,
        "agentId": event.agent_id,
        "timestamp": event.timestamp.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "data": event.data,
    });
    record[event.subject.0] = Value::String(event.subject.1.to_string());
    let line = serde_json::to_string(&record).context("cannot encode event")?;
    store.append_line(EVENTS_FILE, &line)
}
