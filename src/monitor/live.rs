//! Live events: the state roots are watched (`notify`, debounced; polling
//! every 250 ms where inotify is unavailable or `RALPH_HOOKS_MONITOR_POLL=1`),
//! and each change is turned into messages by comparing before and after:
//!
//! - task files: `task_update` (`task_created`, `status_changed`,
//!   `progress_added`, `task_removed`) and `task_step_update`
//!   (`step_started`, `step_completed`, `step_skipped`, `step_added`,
//!   `steps_set`, `steps_reordered`, with `stepId` and `stepsProgress`);
//! - `events.jsonl`: the new `continuation_event` and `loop_event` records
//!   the hooks appended (self-driving, stop guard, loop iterations).
//!
//! Messages go to every `/ws` client and `/api/stream` (SSE) subscriber.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::Agent;
use super::AppState;
use super::data::Entry;
use crate::state::events_log::EVENTS_FILE;
use crate::tasks::{StepStatus, StepsProgress, TaskDoc};
use crate::util::fsread;

/// Changes closer together than this are read as one.
const DEBOUNCE: Duration = Duration::from_millis(30);
const POLL_EVERY: Duration = Duration::from_millis(250);
/// Even with inotify, look again now and then: a missed event (an editor
/// that replaces the directory) is caught late, never lost.
const RESCAN_EVERY: Duration = Duration::from_secs(5);

/// What the comparison needs of one task.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub status: String,
    pub steps: Vec<(String, StepStatus)>,
    pub progress: Vec<String>,
    pub steps_progress: StepsProgress,
}

impl Summary {
    pub fn of(doc: &TaskDoc) -> Summary {
        Summary {
            status: doc.field("Status").unwrap_or_default().to_string(),
            steps: doc
                .steps()
                .iter()
                .map(|s| (s.id.clone(), s.status))
                .collect(),
            progress: doc.progress.items().to_vec(),
            steps_progress: StepsProgress::of(doc.steps()),
        }
    }
}

fn now_stamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The messages that say how one task went from `before` to `after` (pure).
pub fn diff(
    agent: &str,
    task: &str,
    before: Option<&Summary>,
    after: Option<&Summary>,
    timestamp: &str,
) -> Vec<Value> {
    let task_update = |data: Value| json!({"type": "task_update", "agentId": agent, "taskId": task, "timestamp": timestamp, "data": data});
    let (before, after) = match (before, after) {
        (None, None) => return Vec::new(),
        (None, Some(after)) => {
            return vec![task_update(
                json!({"event": "task_created", "status": after.status}),
            )];
        }
        (Some(_), None) => return vec![task_update(json!({"event": "task_removed"}))],
        (Some(before), Some(after)) => (before, after),
    };
    let mut out = Vec::new();
    let step_update = |event: &str, step: Option<&str>| {
        let mut data = json!({"event": event});
        if let Some(step) = step {
            data["stepId"] = json!(step);
        }
        data["stepsProgress"] = json!(after.steps_progress);
        json!({"type": "task_step_update", "agentId": agent, "taskId": task, "timestamp": timestamp, "data": data})
    };
    // Sets and maps, not nested scans: a task may have 100,000 steps.
    let ids_before: Vec<&str> = before.steps.iter().map(|(id, _)| id.as_str()).collect();
    let ids_after: Vec<&str> = after.steps.iter().map(|(id, _)| id.as_str()).collect();
    let status_before: HashMap<&str, StepStatus> = before
        .steps
        .iter()
        .map(|(id, status)| (id.as_str(), *status))
        .collect();
    let set_after: std::collections::HashSet<&str> = ids_after.iter().copied().collect();
    let added: Vec<&str> = ids_after
        .iter()
        .copied()
        .filter(|id| !status_before.contains_key(id))
        .collect();
    let removed = ids_before.iter().any(|id| !set_after.contains(id));
    if removed || (ids_before.is_empty() && !ids_after.is_empty()) {
        out.push(step_update("steps_set", None));
    } else {
        let kept: Vec<&str> = ids_after
            .iter()
            .copied()
            .filter(|id| status_before.contains_key(id))
            .collect();
        if kept != ids_before {
            out.push(step_update("steps_reordered", None));
        }
        for id in &added {
            out.push(step_update("step_added", Some(id)));
        }
        for (id, status) in &after.steps {
            let old = status_before.get(id.as_str()).copied();
            if old.is_none_or(|old| old == *status) {
                continue;
            }
            let event = match status {
                StepStatus::Done => "step_completed",
                StepStatus::InProgress => "step_started",
                StepStatus::Skipped => "step_skipped",
                StepStatus::Pending => "step_reopened",
            };
            out.push(step_update(event, Some(id)));
        }
    }
    if before.status != after.status {
        out.push(task_update(
            json!({"event": "status_changed", "from": before.status, "to": after.status}),
        ));
    }
    if after.progress.len() > before.progress.len() && after.progress.starts_with(&before.progress)
    {
        for line in &after.progress[before.progress.len()..] {
            out.push(task_update(
                json!({"event": "progress_added", "progress": line}),
            ));
        }
    }
    out
}

/// The watcher's memory of one agent: each task's parsed entry (shared
/// with the cache, so an unchanged file is recognised by pointer) and its
/// summary.
#[derive(Default)]
struct Seen {
    tasks: HashMap<String, (Arc<Entry>, Summary)>,
    /// How far `events.jsonl` was read.
    events_offset: u64,
}

/// Stops the watcher thread when dropped.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts watching every agent's state root.
pub fn start(state: Arc<AppState>) -> Watcher {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("monitor-watch".into())
        .spawn(move || watch_loop(&state, &flag))
        .ok();
    Watcher { stop, thread }
}

fn watch_loop(state: &AppState, stop: &AtomicBool) {
    let (tx, rx) = mpsc::channel::<()>();
    let force_poll = std::env::var("RALPH_HOOKS_MONITOR_POLL").is_ok_and(|v| v == "1");
    let mut watcher = None;
    if !force_poll {
        let sender = tx.clone();
        let generation = state.cache.generation.clone();
        match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Reads are not changes: inotify reports every open and close,
            // and the scan that follows a change opens the files it reads,
            // which would wake the watcher again, forever.
            if event.as_ref().is_ok_and(|event| !is_change(&event.kind)) {
                return;
            }
            // At once, not after the debounce: a read that follows the
            // change must not be served the list from before it.
            generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            let _ = sender.send(());
        }) {
            Ok(mut w) => {
                let mut ok = true;
                for agent in &state.agents {
                    let root = agent.ctx().state_root.clone();
                    let _ = std::fs::create_dir_all(&root);
                    if let Err(error) =
                        notify::Watcher::watch(&mut w, &root, notify::RecursiveMode::Recursive)
                    {
                        eprintln!(
                            "ralph-hooks: monitor: cannot watch {} ({error}); polling every {} ms instead",
                            root.display(),
                            POLL_EVERY.as_millis()
                        );
                        ok = false;
                    }
                }
                if ok {
                    watcher = Some(w);
                    state
                        .cache
                        .generation_trusted
                        .store(true, std::sync::atomic::Ordering::Release);
                }
            }
            Err(error) => eprintln!(
                "ralph-hooks: monitor: file watching unavailable ({error}); polling every {} ms instead",
                POLL_EVERY.as_millis()
            ),
        }
    }
    let wait = if watcher.is_some() {
        RESCAN_EVERY
    } else {
        POLL_EVERY
    };
    let mut seen: Vec<Seen> = state.agents.iter().map(|_| Seen::default()).collect();
    // The first scan only learns the current state: clients got it by REST.
    for (agent, seen) in state.agents.iter().zip(&mut seen) {
        scan(state, agent, seen, false);
    }
    let mut idle_ticks = 0u32;
    while !stop.load(Ordering::Relaxed) {
        match rx.recv_timeout(wait.min(Duration::from_millis(250))) {
            Ok(()) => {
                std::thread::sleep(DEBOUNCE);
                while rx.try_recv().is_ok() {}
            }
            Err(mpsc::RecvTimeoutError::Timeout) if watcher.is_some() => {
                // With inotify, a timeout only checks the stop flag, except
                // for the occasional safety rescan.
                idle_ticks += 1;
                if u128::from(idle_ticks) * 250 < RESCAN_EVERY.as_millis() {
                    continue;
                }
                idle_ticks = 0;
                // The safety rescan must look at the files themselves.
                state.cache.invalidate();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for (agent, seen) in state.agents.iter().zip(&mut seen) {
            scan(state, agent, seen, true);
        }
    }
    drop(tx);
}

/// Whether an event can mean that a file's content or a folder changed:
/// everything but opening, reading and closing a file unwritten.
pub fn is_change(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        notify::EventKind::Access(_) => false,
        _ => true,
    }
}

fn scan(state: &AppState, agent: &Agent, seen: &mut Seen, send: bool) {
    let list = state.cache.tasks(agent);
    let stamp = now_stamp();
    let mut now: HashMap<String, (Arc<Entry>, Summary)> = HashMap::new();
    let mut messages = Vec::new();
    for entry in &list.entries {
        let id = &entry.doc.id;
        let before = match seen.tasks.remove(id) {
            // The cache hands out the same entry while the file is
            // unchanged: nothing to compare (the safety rescan costs a
            // `stat` per file).
            Some((old, summary)) if Arc::ptr_eq(&old, entry) => {
                now.insert(id.clone(), (old, summary));
                continue;
            }
            before => before,
        };
        let after = Summary::of(&entry.doc);
        messages.extend(diff(
            &agent.id,
            id,
            before.as_ref().map(|(_, summary)| summary),
            Some(&after),
            &stamp,
        ));
        now.insert(id.clone(), (entry.clone(), after));
    }
    for (id, (_, before)) in &seen.tasks {
        messages.extend(diff(&agent.id, id, Some(before), None, &stamp));
    }
    seen.tasks = now;
    messages.extend(new_log_events(agent, seen));
    if send {
        for message in messages {
            let _ = state.events.send(message.to_string());
        }
    }
}

/// The `continuation_event` and `loop_event` records appended since the
/// last look. A log that shrank (rotated by hand) is read from the start.
fn new_log_events(agent: &Agent, seen: &mut Seen) -> Vec<Value> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let path = agent.ctx().store().path(EVENTS_FILE);
    // fsread: the log may have been replaced by a FIFO or a link.
    let Ok(Some((mut file, len))) = fsread::open_regular(&path, fsread::Links::Refuse) else {
        seen.events_offset = 0;
        return Vec::new();
    };
    if len < seen.events_offset {
        seen.events_offset = 0;
    }
    if len == seen.events_offset || file.seek(SeekFrom::Start(seen.events_offset)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    // Only whole lines: a writer may be half-way through the last one.
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
        return Vec::new();
    };
    seen.events_offset += end as u64 + 1;
    String::from_utf8_lossy(&bytes[..end])
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| {
            matches!(
                event.get("type").and_then(Value::as_str),
                Some("continuation_event" | "loop_event")
            )
        })
        .map(|event| super::data::rewrite_event(agent, event))
        .collect()
}

/// `GET /ws`: a hello with the agents, then one text message per event.
pub async fn websocket(State(state): State<Arc<AppState>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| serve_socket(state, socket))
}

async fn serve_socket(state: Arc<AppState>, mut socket: WebSocket) {
    let mut events = state.events.subscribe();
    let mut shutdown = state.shutdown.subscribe();
    let agents: Vec<&str> = state.agents.iter().map(|a| a.id.as_str()).collect();
    let hello = json!({"type": "hello", "agents": agents, "timestamp": now_stamp()});
    if socket
        .send(Message::Text(hello.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(text) => {
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                // A slow client missed some: tell it to reload.
                Err(RecvError::Lagged(n)) => {
                    let note = json!({"type": "lagged", "missed": n});
                    if socket.send(Message::Text(note.to_string().into())).await.is_err() {
                        return;
                    }
                }
                Err(RecvError::Closed) => return,
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
            _ = shutdown.changed() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        }
    }
}

/// `GET /api/stream`: the same events as Server-Sent Events.
pub async fn sse(State(state): State<Arc<AppState>>) -> Response {
    let events = state.events.subscribe();
    let shutdown = state.shutdown.subscribe();
    let stream = futures_util::stream::unfold(
        (events, shutdown),
        |(mut events, mut shutdown)| async move {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(text) => {
                        let item = SseEvent::default().data(text);
                        Some((Ok::<_, std::convert::Infallible>(item), (events, shutdown)))
                    }
                    Err(RecvError::Lagged(n)) => {
                        let item = SseEvent::default().data(json!({"type": "lagged", "missed": n}).to_string());
                        Some((Ok(item), (events, shutdown)))
                    }
                    Err(RecvError::Closed) => None,
                },
                _ = shutdown.changed() => None,
            }
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::TaskDoc;

    fn summary(steps: &str, status: &str, progress: &[&str]) -> Summary {
        let progress: String = progress.iter().map(|p| format!("- {p}\n")).collect();
        let text = format!(
            "# Task: t\n\n## Metadata\n- **Status:** {status}\n\n## Description\nd\n\n## Steps\n{steps}\n## Progress\n{progress}"
        );
        Summary::of(&TaskDoc::parse(&text, "t"))
    }

    fn events(before: Option<&Summary>, after: Option<&Summary>) -> Vec<(String, String, Value)> {
        diff("agent", "task_t", before, after, "2026-01-01T00:00:00.000Z")
            .into_iter()
            .map(|m| {
                (
                    m["type"].as_str().unwrap().to_string(),
                    m["data"]["event"].as_str().unwrap().to_string(),
                    m["data"]["stepId"].clone(),
                )
            })
            .collect()
    }

    #[test]
    fn one_write_that_completes_a_step_and_starts_the_next_says_both() {
        let before = summary("- [>] (s1) a\n- [ ] (s2) b\n", "in_progress", &["x"]);
        let after = summary(
            "- [x] (s1) a\n- [>] (s2) b\n",
            "in_progress",
            &["x", "[s1] a — done"],
        );
        assert_eq!(
            events(Some(&before), Some(&after)),
            [
                (
                    "task_step_update".into(),
                    "step_completed".into(),
                    json!("s1")
                ),
                (
                    "task_step_update".into(),
                    "step_started".into(),
                    json!("s2")
                ),
                ("task_update".into(), "progress_added".into(), Value::Null),
            ]
        );
        let message = &diff("agent", "task_t", Some(&before), Some(&after), "now")[0];
        assert_eq!(
            message["data"]["stepsProgress"],
            json!({"total": 2, "done": 1, "inProgress": 1, "pending": 0, "skipped": 0})
        );
    }

    #[test]
    fn reorders_sets_skips_and_status() {
        let two = summary("- [ ] (s1) a\n- [ ] (s2) b\n", "in_progress", &[]);
        let swapped = summary("- [ ] (s2) b\n- [ ] (s1) a\n", "in_progress", &[]);
        assert_eq!(
            events(Some(&two), Some(&swapped)),
            [(
                "task_step_update".into(),
                "steps_reordered".into(),
                Value::Null
            )]
        );
        let replaced = summary("- [ ] (s1) new\n", "in_progress", &[]);
        assert_eq!(
            events(Some(&two), Some(&replaced)),
            [("task_step_update".into(), "steps_set".into(), Value::Null)]
        );
        let skipped = summary("- [-] (s1) a\n- [ ] (s2) b\n", "blocked", &[]);
        assert_eq!(
            events(Some(&two), Some(&skipped)),
            [
                (
                    "task_step_update".into(),
                    "step_skipped".into(),
                    json!("s1")
                ),
                ("task_update".into(), "status_changed".into(), Value::Null),
            ]
        );
        assert_eq!(
            events(None, Some(&two)),
            [("task_update".into(), "task_created".into(), Value::Null)]
        );
        assert!(
            events(Some(&two), Some(&two)).is_empty(),
            "no change, no event"
        );
    }
}
