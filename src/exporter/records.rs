//! One `events.jsonl` record → what is exported for it, pure: a log record
//! (the event's fields as attributes), the spans it closes (a loop, an
//! iteration, the checks of an iteration) and the metric points it adds.
//!
//! Attribute names: `session.id` (Claude Code's session), `prompt.id` (the
//! hook input's `prompt_id`), `event.name` (the event, as Claude Code names
//! its own), `ralph.event.type` (the record's `type`), and every field of
//! `data` as `<part>.<field in snake_case>` with `<part>` `ralph.loop`,
//! `ralph.task`, `ralph.continuation` or `ralph.guard` by the record's type
//! (`iteration` → `ralph.loop.iteration`); nested objects are joined with
//! dots (`stepsProgress.done` → `ralph.task.steps_progress.done`). The
//! subject is `ralph.loop.id`, `ralph.task.id` or `ralph.guard.tool_use_id`.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::util::text::fnv1a;

/// An attribute value, independent of the OpenTelemetry types.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Attr>),
    Map(Vec<(String, Attr)>),
}

pub type Attrs = Vec<(String, Attr)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
}

/// The log record of one event.
#[derive(Debug, Clone, PartialEq)]
pub struct LogPlan {
    /// `ralph.<event>`: the body, as Claude Code's bodies are
    /// `claude_code.<event>`.
    pub body: String,
    pub timestamp: SystemTime,
    pub level: Level,
    pub attrs: Attrs,
    /// The loop's trace and the span the event belongs to.
    pub trace: Option<(u128, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SpanEnd {
    Unset,
    Ok,
    Error(String),
}

/// A span, with ids derived from the loop id so that spans exported at
/// different times (and by different exporter processes) join one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanPlan {
    pub name: &'static str,
    pub trace_id: u128,
    pub span_id: u64,
    pub parent: Option<u64>,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attrs: Attrs,
    pub status: SpanEnd,
}

/// A metric measurement an event adds.
#[derive(Debug, Clone, PartialEq)]
pub enum Point {
    LoopStarted,
    LoopEnded {
        outcome: &'static str,
        reason: String,
        iterations: u64,
    },
    ProblemsFixed(u64),
    Check {
        kind: String,
        seconds: f64,
        files: Option<u64>,
    },
    GuardDenied {
        rule: String,
    },
    StepChanged {
        event: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub log: LogPlan,
    pub spans: Vec<SpanPlan>,
    pub points: Vec<Point>,
}

/// `maxIterations` → `max_iterations`.
pub fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (index, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if index > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn part_of(kind: &str) -> &'static str {
    match kind {
        "loop_event" => "ralph.loop",
        "task_update" | "task_step_update" => "ralph.task",
        "continuation_event" => "ralph.continuation",
        "guard_event" => "ralph.guard",
        _ => "ralph",
    }
}

fn scalar(value: &Value) -> Option<Attr> {
    match value {
        Value::String(text) => Some(Attr::Str(text.clone())),
        Value::Bool(flag) => Some(Attr::Bool(*flag)),
        Value::Number(number) => number
            .as_i64()
            .map(Attr::Int)
            .or_else(|| number.as_f64().map(Attr::Float)),
        _ => None,
    }
}

/// A JSON value as one attribute value (objects kept as maps).
fn any(value: &Value) -> Option<Attr> {
    match value {
        Value::Null => None,
        Value::Array(items) => Some(Attr::List(items.iter().filter_map(any).collect())),
        Value::Object(map) => Some(Attr::Map(
            map.iter()
                .filter_map(|(key, value)| Some((snake(key), any(value)?)))
                .collect(),
        )),
        other => scalar(other),
    }
}

/// Adds `value` under `key`, objects flattened with dots.
fn flatten(key: &str, value: &Value, attrs: &mut Attrs) {
    match value {
        Value::Object(map) => {
            for (field, inner) in map {
                flatten(&format!("{key}.{}", snake(field)), inner, attrs);
            }
        }
        other => {
            if let Some(attr) = any(other) {
                attrs.push((key.to_string(), attr));
            }
        }
    }
}

fn time_of(value: Option<&Value>) -> Option<SystemTime> {
    let text = value?.as_str()?;
    let time = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
    Some(SystemTime::from(time))
}

/// The trace of a loop: 128 bits from its id, never zero.
pub fn trace_id(loop_id: &str) -> u128 {
    let high = fnv1a(format!("ralph.loop.trace:{loop_id}").as_bytes()) as u128;
    let low = fnv1a(format!("ralph.loop.trace.low:{loop_id}").as_bytes()) as u128;
    (high << 64) | low | 1
}

/// A span id from its parts, never zero.
pub fn span_id(parts: &[&str]) -> u64 {
    fnv1a(parts.join("\u{1f}").as_bytes()) | 1
}

fn str_field<'a>(data: &'a Value, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str)
}

fn u64_field(data: &Value, key: &str) -> Option<u64> {
    data.get(key).and_then(Value::as_u64)
}

/// Maps one record; `None` for a line that is not an event (no `type`, no
/// time).
pub fn map(record: &Value) -> Option<Mapped> {
    let kind = record.get("type")?.as_str()?;
    let timestamp_text = record.get("timestamp")?.as_str()?;
    let timestamp = time_of(record.get("timestamp"))?;
    let empty = Value::Object(Default::default());
    let data = record.get("data").unwrap_or(&empty);
    let event = str_field(data, "event").unwrap_or(kind).to_string();
    let part = part_of(kind);

    let mut attrs: Attrs = vec![
        ("event.name".into(), Attr::Str(event.clone())),
        (
            "event.timestamp".into(),
            Attr::Str(timestamp_text.to_string()),
        ),
        ("ralph.event.type".into(), Attr::Str(kind.to_string())),
    ];
    if let Some(session) = str_field(record, "agentId").filter(|s| !s.is_empty()) {
        attrs.push(("session.id".into(), Attr::Str(session.to_string())));
    }
    if let Some(prompt) = str_field(record, "promptId").filter(|s| !s.is_empty()) {
        attrs.push(("prompt.id".into(), Attr::Str(prompt.to_string())));
    }
    let mut loop_id = None;
    if let Some(object) = record.as_object() {
        for (key, value) in object {
            let name = match key.as_str() {
                "type" | "agentId" | "promptId" | "timestamp" | "data" => continue,
                "loopId" => {
                    loop_id = value.as_str().map(str::to_string);
                    "ralph.loop.id".to_string()
                }
                "taskId" => "ralph.task.id".to_string(),
                "toolUseId" => "ralph.guard.tool_use_id".to_string(),
                other => format!("{part}.{}", snake(other)),
            };
            if let Some(attr) = scalar(value).filter(|a| *a != Attr::Str(String::new())) {
                attrs.push((name, attr));
            }
        }
    }
    if let Some(fields) = data.as_object() {
        for (key, value) in fields {
            if key != "event" {
                flatten(&format!("{part}.{}", snake(key)), value, &mut attrs);
            }
        }
    }

    let level = match event.as_str() {
        "loop_failed" | "guard_denied" | "stop_guard_blocked" | "self_driving_stopped" => {
            Level::Warn
        }
        _ => Level::Info,
    };
    let mut spans = Vec::new();
    let mut points = Vec::new();
    let mut trace = None;
    let shared: Attrs = attrs
        .iter()
        .filter(|(key, _)| matches!(key.as_str(), "session.id" | "prompt.id" | "ralph.loop.id"))
        .cloned()
        .collect();

    if let Some(loop_id) = loop_id.as_deref() {
        let trace_id = trace_id(loop_id);
        let loop_span = span_id(&["loop", loop_id]);
        trace = Some((trace_id, loop_span));
        let stop_evaluation = matches!(
            event.as_str(),
            "loop_iteration" | "loop_completed" | "loop_failed"
        );
        if stop_evaluation {
            let iteration_span = span_id(&["iteration", loop_id, timestamp_text]);
            trace = Some((trace_id, iteration_span));
            if let Some(since) = time_of(data.get("since")).filter(|since| *since <= timestamp) {
                let mut span_attrs = shared.clone();
                span_attrs.push(("ralph.loop.decision".into(), Attr::Str(event.clone())));
                if let Some(iteration) = u64_field(data, "iteration") {
                    span_attrs.push(("ralph.loop.iteration".into(), Attr::Int(iteration as i64)));
                }
                if let Some(failed) = data.get("failed").and_then(any) {
                    span_attrs.push(("ralph.loop.failed".into(), failed));
                }
                spans.push(SpanPlan {
                    name: "ralph.loop.iteration",
                    trace_id,
                    span_id: iteration_span,
                    parent: Some(loop_span),
                    start: since,
                    end: timestamp,
                    attrs: span_attrs,
                    status: match event.as_str() {
                        "loop_completed" => SpanEnd::Ok,
                        "loop_failed" => SpanEnd::Error(
                            str_field(data, "reason").unwrap_or("failed").to_string(),
                        ),
                        _ => SpanEnd::Unset,
                    },
                });
                spans.extend(check_spans(
                    data,
                    trace_id,
                    iteration_span,
                    loop_id,
                    timestamp_text,
                    since,
                    timestamp,
                    &shared,
                ));
            }
            points.extend(check_points(data));
            if let Some(fixed) = u64_field(data, "problemsFixed").filter(|n| *n > 0) {
                points.push(Point::ProblemsFixed(fixed));
            }
        }
        let outcome = match event.as_str() {
            "loop_completed" => Some(("completed", SpanEnd::Ok)),
            "loop_failed" => Some((
                "failed",
                SpanEnd::Error(str_field(data, "reason").unwrap_or("failed").to_string()),
            )),
            "loop_cancelled" => Some(("cancelled", SpanEnd::Unset)),
            _ => None,
        };
        if event == "loop_started" {
            points.push(Point::LoopStarted);
        }
        if let Some((outcome, status)) = outcome {
            let reason = str_field(data, "reason").unwrap_or(outcome).to_string();
            let iterations = u64_field(data, "iteration").unwrap_or(0);
            points.push(Point::LoopEnded {
                outcome,
                reason: reason.clone(),
                iterations,
            });
            if let Some(started) = time_of(data.get("startedAt")).filter(|s| *s <= timestamp) {
                let mut span_attrs = shared.clone();
                span_attrs.retain(|(key, _)| key != "prompt.id");
                span_attrs.push(("ralph.loop.outcome".into(), Attr::Str(outcome.into())));
                span_attrs.push(("ralph.loop.reason".into(), Attr::Str(reason)));
                span_attrs.push(("ralph.loop.iterations".into(), Attr::Int(iterations as i64)));
                if let Some(goal) = str_field(data, "goal") {
                    span_attrs.push(("ralph.loop.goal".into(), Attr::Str(goal.into())));
                }
                spans.push(SpanPlan {
                    name: "ralph.loop",
                    trace_id,
                    span_id: loop_span,
                    parent: None,
                    start: started,
                    end: timestamp,
                    attrs: span_attrs,
                    status,
                });
            }
        }
    }
    match event.as_str() {
        "guard_denied" => points.push(Point::GuardDenied {
            rule: str_field(data, "rule").unwrap_or("unknown").to_string(),
        }),
        _ if kind == "task_step_update" => points.push(Point::StepChanged {
            event: event.clone(),
        }),
        _ => {}
    }

    Some(Mapped {
        log: LogPlan {
            body: format!("ralph.{event}"),
            timestamp,
            level,
            attrs,
            trace,
        },
        spans,
        points,
    })
}

/// The checks of one Stop (`data.checks`, each with `kind`, `name`,
/// `durationMs`), as child spans of its iteration laid end to end so that
/// the last ends when the Stop decided.
#[allow(clippy::too_many_arguments)]
fn check_spans(
    data: &Value,
    trace_id: u128,
    parent: u64,
    loop_id: &str,
    stamp: &str,
    since: SystemTime,
    end: SystemTime,
    shared: &Attrs,
) -> Vec<SpanPlan> {
    let Some(checks) = data.get("checks").and_then(Value::as_array) else {
        return Vec::new();
    };
    let timed: Vec<(&Value, Duration)> = checks
        .iter()
        .filter_map(|check| {
            Some((
                check,
                Duration::from_millis(u64_field(check, "durationMs")?),
            ))
        })
        .collect();
    let total: Duration = timed.iter().map(|(_, d)| *d).sum();
    let mut start = end.checked_sub(total).unwrap_or(since).max(since);
    let mut spans = Vec::new();
    for (index, (check, duration)) in timed.into_iter().enumerate() {
        let mut attrs = shared.clone();
        if let Some(object) = check.as_object() {
            for (key, value) in object {
                flatten(&format!("ralph.check.{}", snake(key)), value, &mut attrs);
            }
        }
        let passed = check.get("passed").and_then(Value::as_bool);
        let finish = (start + duration).min(end);
        spans.push(SpanPlan {
            name: "ralph.check",
            trace_id,
            span_id: span_id(&["check", loop_id, stamp, &index.to_string()]),
            parent: Some(parent),
            start,
            end: finish,
            attrs,
            status: match passed {
                Some(true) => SpanEnd::Ok,
                Some(false) => SpanEnd::Error("failed".into()),
                None => SpanEnd::Unset,
            },
        });
        start = finish;
    }
    spans
}

fn check_points(data: &Value) -> Vec<Point> {
    let Some(checks) = data.get("checks").and_then(Value::as_array) else {
        return Vec::new();
    };
    checks
        .iter()
        .filter_map(|check| {
            let ms = u64_field(check, "durationMs")?;
            Some(Point::Check {
                kind: str_field(check, "kind").unwrap_or("command").to_string(),
                seconds: ms as f64 / 1000.0,
                files: u64_field(check, "files"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attr<'a>(mapped: &'a Mapped, key: &str) -> Option<&'a Attr> {
        mapped
            .log
            .attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    #[test]
    fn an_iteration_carries_the_loop_session_prompt_and_its_fields() {
        let record = json!({"type": "loop_event", "agentId": "sess-1", "promptId": "p-9",
            "timestamp": "2026-11-24T10:00:05.000Z", "loopId": "L1",
            "data": {"event": "loop_iteration", "iteration": 2, "maxIterations": 10,
                     "failed": ["check:cargo test"], "since": "2026-11-24T10:00:00.000Z",
                     "checks": [{"kind": "command", "name": "cargo test", "passed": false, "durationMs": 1500},
                                {"kind": "project", "name": "project", "passed": true, "durationMs": 500, "files": 12}],
                     "problemsFixed": 3}});
        let mapped = map(&record).unwrap();
        assert_eq!(mapped.log.body, "ralph.loop_iteration");
        assert_eq!(
            attr(&mapped, "session.id"),
            Some(&Attr::Str("sess-1".into()))
        );
        assert_eq!(attr(&mapped, "prompt.id"), Some(&Attr::Str("p-9".into())));
        assert_eq!(
            attr(&mapped, "ralph.loop.id"),
            Some(&Attr::Str("L1".into()))
        );
        assert_eq!(attr(&mapped, "ralph.loop.iteration"), Some(&Attr::Int(2)));
        assert_eq!(
            attr(&mapped, "ralph.loop.max_iterations"),
            Some(&Attr::Int(10))
        );
        assert_eq!(
            attr(&mapped, "event.name"),
            Some(&Attr::Str("loop_iteration".into()))
        );
        let names: Vec<&str> = mapped.spans.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["ralph.loop.iteration", "ralph.check", "ralph.check"]
        );
        let iteration = &mapped.spans[0];
        assert_eq!(iteration.parent, Some(span_id(&["loop", "L1"])));
        assert_eq!(iteration.trace_id, trace_id("L1"));
        assert_eq!(
            mapped.spans[2].end, iteration.end,
            "the checks end when the Stop decided"
        );
        assert_eq!(mapped.log.trace, Some((trace_id("L1"), iteration.span_id)));
        assert!(mapped.points.contains(&Point::ProblemsFixed(3)));
        assert!(mapped.points.contains(&Point::Check {
            kind: "project".into(),
            seconds: 0.5,
            files: Some(12)
        }));
    }

    #[test]
    fn a_finished_loop_closes_its_span_and_counts_its_outcome() {
        let record = json!({"type": "loop_event", "agentId": "s", "timestamp": "2026-11-24T10:05:00Z",
            "loopId": "L1", "data": {"event": "loop_failed", "iteration": 10, "reason": "max_iterations",
            "startedAt": "2026-11-24T10:00:00Z"}});
        let mapped = map(&record).unwrap();
        assert_eq!(mapped.log.level, Level::Warn);
        let span = mapped
            .spans
            .iter()
            .find(|s| s.name == "ralph.loop")
            .unwrap();
        assert_eq!(span.span_id, span_id(&["loop", "L1"]));
        assert_eq!(span.status, SpanEnd::Error("max_iterations".into()));
        assert!(mapped.points.contains(&Point::LoopEnded {
            outcome: "failed",
            reason: "max_iterations".into(),
            iterations: 10
        }));
    }

    #[test]
    fn task_and_guard_events_use_their_own_namespace() {
        let step = map(
            &json!({"type": "task_step_update", "agentId": "", "timestamp": "2026-11-24T10:00:00Z",
            "taskId": "task_1", "data": {"event": "step_completed", "stepId": "s2",
            "stepsProgress": {"total": 3, "done": 2}}}),
        )
        .unwrap();
        assert_eq!(
            attr(&step, "ralph.task.id"),
            Some(&Attr::Str("task_1".into()))
        );
        assert_eq!(
            attr(&step, "ralph.task.step_id"),
            Some(&Attr::Str("s2".into()))
        );
        assert_eq!(
            attr(&step, "ralph.task.steps_progress.done"),
            Some(&Attr::Int(2))
        );
        assert_eq!(
            attr(&step, "session.id"),
            None,
            "an empty session is no session"
        );
        assert!(step.spans.is_empty());
        let guard = map(&json!({"type": "guard_event", "agentId": "s", "timestamp": "2026-11-24T10:00:00Z",
            "toolUseId": "tu1", "data": {"event": "guard_denied", "rule": "loop_commands", "tool": "Bash"}})).unwrap();
        assert_eq!(
            attr(&guard, "ralph.guard.rule"),
            Some(&Attr::Str("loop_commands".into()))
        );
        assert_eq!(
            guard.points,
            vec![Point::GuardDenied {
                rule: "loop_commands".into()
            }]
        );
    }

    #[test]
    fn lines_that_are_not_events_map_to_nothing() {
        assert!(map(&json!({"hello": 1})).is_none());
        assert!(map(&json!({"type": "x", "timestamp": "not a time"})).is_none());
        assert_eq!(snake("maxIterations"), "max_iterations");
        assert_ne!(trace_id("a"), trace_id("b"));
    }
}
