//! What the REST endpoints answer, read through [`crate::tasks`] (the task
//! format has one parser) and [`crate::state`]. Task files are cached by
//! modification time and size, so a request over 1,000 tasks stats them all
//! but parses only the ones that changed.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::Agent;
use crate::hook::ctx::Ctx;
use crate::state::events_log::EVENTS_FILE;
use crate::state::ids;
use crate::tasks::{self, TaskDoc, steps};
use crate::util::fsread;

/// `loop.json` and the archive, as the Ralph loop writes them.
const LOOP_FILE: &str = crate::ralph::loop_state::LOOP_FILE;
const ARCHIVE_DIR: &str = crate::ralph::loop_state::ARCHIVE_DIR;
const RECEIPTS_DIR: &str = crate::ralph::loop_state::RECEIPTS_DIR;

/// The most events one `/api/events` page returns.
pub const MAX_EVENTS_PAGE: usize = 1000;
const DEFAULT_EVENTS_PAGE: usize = 100;

/// One parsed task and its monitor JSON, serialized once per change of
/// the file: a list request only joins the texts.
pub struct Entry {
    pub doc: TaskDoc,
    pub json: String,
}

/// One task file, as parsed at the stamp it had then.
struct Cached {
    stamp: (SystemTime, u64),
    entry: Result<Arc<Entry>, String>,
}

/// Parsed task files per agent, refreshed on every read.
#[derive(Default)]
pub struct TaskCache {
    agents: Mutex<HashMap<String, AgentCache>>,
    /// Bumped by the file watcher on every change it hears of, and by the
    /// monitor's own writes. While it is trusted (inotify watches every
    /// state root) and unchanged, a read reuses the last list without
    /// looking at the 1,000 files again.
    pub generation: Arc<AtomicU64>,
    pub generation_trusted: AtomicBool,
}

#[derive(Default)]
struct AgentCache {
    tasks: HashMap<String, Cached>,
    /// The last list and when it was read, see [`TaskCache::tasks`].
    last: Option<LastList>,
    /// Damaged task files the store moved aside (`<id>.md.corrupt-<stamp>`,
    /// kept in `tasks/` until a person deletes them), each with the warning
    /// that says why when this monitor saw the move.
    damaged: BTreeMap<String, String>,
}

struct LastList {
    generation: u64,
    /// The `tasks/` directory's mtime at the scan, and the scan's start.
    dir_mtime: Option<SystemTime>,
    scanned_at: SystemTime,
    list: TaskList,
}

/// A directory changed less than this before a scan is not trusted to
/// show the next change in its mtime (file times use a coarse clock).
const DIR_MTIME_MARGIN: std::time::Duration = std::time::Duration::from_millis(100);

/// How the store names a file it moved aside.
const ASIDE_MARK: &str = ".corrupt-";

/// An agent's tasks, in id order, plus the files that could not be read.
#[derive(Clone)]
pub struct TaskList {
    pub entries: Vec<Arc<Entry>>,
    pub problems: Vec<String>,
    /// The whole list's JSON text, made once per list (shared by the
    /// clones a reused list hands out).
    all_json: Arc<std::sync::OnceLock<axum::body::Bytes>>,
}

impl TaskList {
    pub fn docs(&self) -> impl Iterator<Item = &TaskDoc> {
        self.entries.iter().map(|entry| &entry.doc)
    }
}

impl TaskCache {
    /// Something changed on disk (or may have): the next read looks again.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Reads every task file of `agent` (only the changed ones are parsed
    /// again). A file that is unreadable, or not a task (no `Status`), is a
    /// problem, reported, never a failed request.
    pub fn tasks(&self, agent: &Agent) -> TaskList {
        // The last list is reused, without looking at every file, only when
        // (1) the watcher heard of no change since (inotify; read before the
        // scan, so a change during it makes the next read scan), and (2) the
        // `tasks/` directory's mtime is the same and was already old at the
        // scan: every writer of ours renames into that directory, so a write
        // whose inotify event is still on its way is seen here anyway.
        let generation = self.generation.load(Ordering::Acquire);
        let ctx = agent.ctx();
        let dir_mtime = std::fs::metadata(ctx.store().path(tasks::TASKS_DIR))
            .and_then(|m| m.modified())
            .ok();
        let scanned_at = SystemTime::now();
        if self.generation_trusted.load(Ordering::Acquire) {
            let all = self.agents.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(AgentCache {
                last: Some(last), ..
            }) = all.get(&agent.id)
                && last.generation == generation
                && last.dir_mtime.is_some()
                && last.dir_mtime == dir_mtime
                && last
                    .dir_mtime
                    .and_then(|m| m.checked_add(DIR_MTIME_MARGIN))
                    .is_some_and(|safe| last.scanned_at >= safe)
            {
                return last.list.clone();
            }
        }
        let store = ctx.store();
        let mut problems = Vec::new();
        let names = match store.list_dir(tasks::TASKS_DIR) {
            Ok(names) => names,
            Err(error) => {
                problems.push(format!("{error:#}"));
                Vec::new()
            }
        };
        let mut all = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        let AgentCache {
            tasks: cache,
            damaged,
            last,
        } = all.entry(agent.id.clone()).or_default();
        let mut seen = Vec::new();
        // Some file was invalid but still changing (see `state::QUIET`).
        let mut settling = false;
        for name in &names {
            let Some(id) = name.strip_suffix(".md") else {
                continue;
            };
            if !ids::is_valid(id) {
                continue;
            }
            let Ok(relative) = tasks::task_file(id) else {
                continue;
            };
            let path: PathBuf = store.path(&relative);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue; // removed between the listing and now
            };
            let stamp = (
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                meta.len(),
            );
            let fresh = cache.get(id).is_some_and(|c| c.stamp == stamp);
            if !fresh {
                let entry = match tasks::load(store, id) {
                    Ok(Some(doc)) if doc.field("Status").is_some() => {
                        let json = task_json_with(agent, store, &doc).to_string();
                        Ok(Arc::new(Entry { doc, json }))
                    }
                    Ok(Some(_)) => Err(format!(
                        "{}: not a task file (no Status in its Metadata)",
                        path.display()
                    )),
                    Ok(None) if path.symlink_metadata().is_err() => continue,
                    // Not a task right now, left in place (this store never
                    // moves anything). While it is still changing it is an
                    // editor's save half-way: the last good read stands, and
                    // the next change of the file is read again.
                    Ok(None) if crate::state::being_written(&path) => {
                        if cache.get(id).is_some_and(|c| c.entry.is_ok()) {
                            seen.push(id.to_string());
                        }
                        settling = true;
                        continue;
                    }
                    Ok(None) => Err(store
                        .take_warnings()
                        .pop()
                        .unwrap_or_else(|| format!("{}: not readable as a task", path.display()))),
                    Err(error) => Err(format!("{error:#}")),
                };
                cache.insert(id.to_string(), Cached { stamp, entry });
            }
            seen.push(id.to_string());
        }
        cache.retain(|id, _| seen.contains(id));
        // A damaged file is moved aside by the store (the project's rule for
        // corrupt state), so it is reported from its new name for as long as
        // it stays there, with the reason when this monitor saw the move.
        let warnings = store.take_warnings();
        let names = if warnings.is_empty() {
            names
        } else {
            store.list_dir(tasks::TASKS_DIR).unwrap_or(names)
        };
        let aside: Vec<&String> = names.iter().filter(|n| n.contains(ASIDE_MARK)).collect();
        damaged.retain(|name, _| aside.contains(&name));
        for name in aside {
            let message = warnings
                .iter()
                .find(|w| w.contains(name.as_str()))
                .cloned()
                .unwrap_or_else(|| {
                    format!(
                        "{}: a damaged task file, moved aside; read it, then delete it",
                        store
                            .path(&format!("{}/{name}", tasks::TASKS_DIR))
                            .display()
                    )
                });
            damaged.entry(name.clone()).or_insert(message);
        }
        problems.extend(damaged.values().cloned());
        let mut entries = Vec::new();
        for id in &seen {
            match &cache[id].entry {
                Ok(entry) => entries.push(entry.clone()),
                Err(problem) => problems.push(problem.clone()),
            }
        }
        let list = TaskList {
            entries,
            problems,
            all_json: Arc::default(),
        };
        // A file not settled yet is looked at again by the next read, not
        // served from this list until something else changes.
        *last = (!settling).then(|| LastList {
            generation,
            dir_mtime,
            scanned_at,
            list: list.clone(),
        });
        list
    }
}

/// The monitor's task object (seed 002 §15.2–15.4), from [`tasks::monitor_json`].
pub fn task_json(agent: &Agent, doc: &TaskDoc) -> Value {
    task_json_with(agent, agent.ctx().store(), doc)
}

fn task_json_with(agent: &Agent, store: &crate::state::Store, doc: &TaskDoc) -> Value {
    let mut value = tasks::monitor_json(store, doc);
    // The seed's agent is the project here; the session stays visible.
    if let Some(session) = value.get("agentId").cloned() {
        value["sessionId"] = session;
    }
    value["agentId"] = json!(agent.id);
    if let Some(step) = steps::current_step(doc) {
        value["currentStep"] = json!({"id": step.id, "content": step.content});
    }
    for (field, key) in [
        ("Blocked Reason", "blockedReason"),
        ("Context", "context"),
        ("Source", "source"),
        ("Created By", "createdBy"),
        ("Assignee", "assignee"),
        ("Estimated Effort", "estimatedEffort"),
        ("Start Date", "startDate"),
        ("Due Date", "dueDate"),
        ("Completed", "completed"),
    ] {
        if let Some(text) = doc.field(field) {
            value[key] = json!(text);
        }
    }
    if doc.field("Status") == Some(tasks::BLOCKED) && value.get("blockedReason").is_none() {
        // `task block --note` records the reason as the last progress line.
        if let Some(last) = doc.progress.items().last() {
            value["blockedReason"] = json!(last);
        }
    }
    value
}

/// Which tasks a list endpoint shows.
#[derive(Clone, Copy)]
pub enum Filter {
    All,
    Blocked,
    /// Completed or cancelled, most recent first.
    History,
    /// Written but not started: a status that is none of ours (a planner's
    /// `pending`, `planned`, `todo`, …).
    Plans,
}

/// The JSON array text of an agent's tasks that pass `filter`.
pub fn task_list(cache: &TaskCache, agent: &Agent, filter: Filter) -> axum::body::Bytes {
    let list = cache.tasks(agent);
    if matches!(filter, Filter::All) {
        return list
            .all_json
            .get_or_init(|| {
                join(&list.entries.iter().map(|e| e.as_ref()).collect::<Vec<_>>()).into()
            })
            .clone();
    }
    let mut entries: Vec<&Entry> = list
        .entries
        .iter()
        .map(|entry| entry.as_ref())
        .filter(|entry| {
            let status = entry.doc.field("Status").unwrap_or_default();
            match filter {
                Filter::All => true,
                Filter::Blocked => status == tasks::BLOCKED,
                Filter::History => matches!(status, tasks::COMPLETED | tasks::CANCELLED),
                Filter::Plans => !matches!(
                    status,
                    tasks::IN_PROGRESS | tasks::BLOCKED | tasks::COMPLETED | tasks::CANCELLED
                ),
            }
        })
        .collect();
    if matches!(filter, Filter::History) {
        entries.sort_by(|a, b| b.doc.last_activity().cmp(&a.doc.last_activity()));
    }
    join(&entries).into()
}

fn join(entries: &[&Entry]) -> String {
    let mut text =
        String::with_capacity(2 + entries.iter().map(|e| e.json.len() + 1).sum::<usize>());
    text.push('[');
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&entry.json);
    }
    text.push(']');
    text
}

/// The active task (`tasks/active.json`, as the hooks see it), or null.
pub fn current(agent: &Agent) -> anyhow::Result<Value> {
    let ctx = agent.ctx();
    Ok(match tasks::active(ctx.store())? {
        Some(doc) => task_json(agent, &doc),
        None => Value::Null,
    })
}

/// `loop.json` as written, with its conditions spelled out and what failed
/// at the last Stop ([`super::loop_view`]). Read as plain
/// JSON, so a status this version does not know (a newer `PAUSED`) is shown
/// as it is rather than refused.
pub fn current_loop(agent: &Agent) -> anyhow::Result<Value> {
    let ctx = agent.ctx();
    Ok(read_loop(&ctx, LOOP_FILE)?.unwrap_or(Value::Null))
}

/// The archived loops, newest first.
pub fn archived_loops(agent: &Agent) -> anyhow::Result<Value> {
    let ctx = agent.ctx();
    let mut loops = Vec::new();
    for name in ctx.store().list_dir(ARCHIVE_DIR)?.into_iter().rev() {
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if !ids::is_valid(id) {
            continue;
        }
        if let Some(value) = read_loop(&ctx, &format!("{ARCHIVE_DIR}/{name}"))? {
            loops.push(value);
        }
    }
    Ok(Value::Array(loops))
}

/// A loop's completion receipt (`receipts/<id>.json`), when it has one.
pub fn receipt(agent: &Agent, id: &str) -> anyhow::Result<Option<Value>> {
    ids::check("loop", id)?;
    let ctx = agent.ctx();
    let Some(text) = ctx
        .store()
        .read_text(&format!("{RECEIPTS_DIR}/{id}.json"))?
    else {
        return Ok(None);
    };
    Ok(Some(serde_json::from_str(&text)?))
}

fn read_loop(ctx: &Ctx, relative: &str) -> anyhow::Result<Option<Value>> {
    let Some(text) = ctx.store().read_text(relative)? else {
        return Ok(None);
    };
    let Ok(mut value) = serde_json::from_str::<Value>(&text) else {
        return Ok(Some(
            json!({"error": format!("{} is not valid JSON", ctx.store().path(relative).display())}),
        ));
    };
    // A finished loop's receipt: where it is, for the page's link (a
    // `receipt` the loop's state already names stands).
    let receipt = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| ids::is_valid(id))
        .map(|id| format!("{RECEIPTS_DIR}/{id}.json"))
        .filter(|relative| ctx.store().exists(relative))
        .map(|relative| ctx.store().path(&relative).to_string_lossy().into_owned());
    if let Some(object) = value.as_object_mut() {
        object.remove("worktree"); // a snapshot of every file: noise here
        if let Some(receipt) = receipt
            && !object.contains_key("receipt")
        {
            object.insert("receipt".into(), json!(receipt));
        }
    }
    super::loop_view::annotate(&mut value);
    Ok(Some(value))
}

/// Per agent: the current task, its steps done/total, the loop's state.
pub fn team_state(cache: &TaskCache, agents: &[Agent]) -> Value {
    let mut out = Vec::new();
    for agent in agents {
        let current = current(agent).unwrap_or(Value::Null);
        let list = cache.tasks(agent);
        let (mut done, mut total) = (0, 0);
        for doc in list.docs().filter(|doc| tasks::is_active(doc)) {
            let progress = tasks::StepsProgress::of(doc.steps());
            done += progress.done;
            total += progress.total;
        }
        let loop_state = current_loop(agent).unwrap_or(Value::Null);
        let loop_summary = if loop_state.is_null() {
            Value::Null
        } else {
            json!({
                "id": loop_state.get("id"),
                "status": loop_state.get("status"),
                "goal": loop_state.get("goal"),
                "iteration": loop_state.get("iteration"),
                "maxIterations": loop_state.get("max_iterations"),
                "spend": loop_state.get("spend"),
                "budget": loop_state.get("budget"),
                "reason": loop_state.get("completion_reason"),
                "pausedBy": loop_state.get("paused_by"),
            })
        };
        out.push(json!({
            "agentId": agent.id,
            "name": agent.name,
            "currentTask": current,
            "steps": {"done": done, "total": total},
            "activeTasks": list.docs().filter(|doc| tasks::is_active(doc)).count(),
            "loop": loop_summary,
            "problems": list.problems,
        }));
    }
    Value::Array(out)
}

/// The agents with their counts and any unreadable files.
pub fn agents(cache: &TaskCache, agents: &[Agent]) -> Value {
    Value::Array(
        agents
            .iter()
            .map(|agent| {
                let list = cache.tasks(agent);
                json!({
                    "id": agent.id,
                    "name": agent.name,
                    "projectRoot": agent.project_root.to_string_lossy(),
                    "stateRoot": agent.ctx().state_root.to_string_lossy(),
                    "taskCount": list.entries.len(),
                    "problems": list.problems,
                })
            })
            .collect(),
    )
}

/// The log is never moved aside for its size (it grows without bound, see
/// [`crate::state::events_log`]): past this, only its end is read.
pub const MAX_LOG_READ: u64 = 16 * 1024 * 1024;

/// The last [`MAX_LOG_READ`] bytes of `events.jsonl`, from a line start;
/// `None` when there is no log. A FIFO or link there is refused, not read.
fn read_log_tail(path: &std::path::Path) -> anyhow::Result<Option<String>> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Some((mut file, len)) = fsread::open_regular(path, fsread::Links::Refuse)? else {
        return Ok(None);
    };
    let start = len.saturating_sub(MAX_LOG_READ);
    file.seek(SeekFrom::Start(start))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_LOG_READ)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if start > 0 {
        // Cut inside a line: drop its end.
        let first = bytes
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |i| i + 1);
        bytes.drain(..first);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// One `events.jsonl` record as the monitor sends it: `agentId` is the
/// monitor's agent, the session that wrote it is `sessionId`.
pub fn rewrite_event(agent: &Agent, mut event: Value) -> Value {
    if let Some(object) = event.as_object_mut() {
        if let Some(session) = object.remove("agentId")
            && session.as_str().is_some_and(|s| !s.is_empty())
        {
            object.insert("sessionId".into(), session);
        }
        object.insert("agentId".into(), json!(agent.id));
    }
    event
}

/// `GET /api/events?since=&limit=`: every agent's `events.jsonl`, oldest
/// first. Without `since`, the last `limit`; with it (an RFC 3339 stamp,
/// exclusive), the first `limit` after it, and `more` when the page is full.
pub fn events(agents: &[Agent], since: Option<&str>, limit: Option<usize>) -> Value {
    let limit = limit
        .unwrap_or(DEFAULT_EVENTS_PAGE)
        .clamp(1, MAX_EVENTS_PAGE);
    let mut all = Vec::new();
    let mut problems = Vec::new();
    for agent in agents {
        let ctx = agent.ctx();
        match read_log_tail(&ctx.store().path(EVENTS_FILE)) {
            Ok(Some(text)) => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    // A record is an object; a `null` or an array would
                    // stop the page's script.
                    match serde_json::from_str::<Value>(line) {
                        Ok(event) if event.is_object() => all.push(rewrite_event(agent, event)),
                        _ => problems.push(format!(
                            "{}: a line that is not a JSON object was left out",
                            ctx.store().path(EVENTS_FILE).display()
                        )),
                    }
                }
            }
            Ok(None) => {}
            Err(error) => problems.push(format!("{error:#}")),
        }
    }
    let stamp = |event: &Value| {
        event
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    // Stable: events of one file keep their order at equal stamps.
    all.sort_by_key(stamp);
    problems.dedup();
    let (page, more) = match since {
        Some(since) => {
            let after: Vec<Value> = all
                .into_iter()
                .filter(|e| stamp(e).as_str() > since)
                .collect();
            let more = after.len() > limit;
            (after.into_iter().take(limit).collect::<Vec<_>>(), more)
        }
        None => {
            let more = all.len() > limit;
            let skip = all.len().saturating_sub(limit);
            (all.into_iter().skip(skip).collect(), more)
        }
    };
    json!({"events": page, "more": more, "problems": problems})
}

/// The events the page asks for on load.
pub const PAGE_EVENTS: usize = 200;

/// Everything the page shows, read now, for the page to paint with before
/// any request of its own: the answers of `/api/agents`, each agent's
/// tasks, loop and archived loops, `/api/team-state` and the last
/// [`PAGE_EVENTS`] events, in those endpoints' shapes. An agent whose loop
/// cannot be read gets null there (its endpoint says why).
pub fn snapshot(cache: &TaskCache, agents: &[Agent]) -> Value {
    let mut tasks = serde_json::Map::new();
    let mut loops = serde_json::Map::new();
    let mut archived = serde_json::Map::new();
    for agent in agents {
        let list = task_list(cache, agent, Filter::All);
        tasks.insert(
            agent.id.clone(),
            serde_json::from_slice(&list).unwrap_or_else(|_| json!([])),
        );
        loops.insert(agent.id.clone(), current_loop(agent).unwrap_or(Value::Null));
        archived.insert(
            agent.id.clone(),
            archived_loops(agent).unwrap_or_else(|_| json!([])),
        );
    }
    json!({
        "agents": self::agents(cache, agents),
        "tasks": tasks,
        "loops": loops,
        "archived": archived,
        "team": team_state(cache, agents),
        "events": events(agents, None, Some(PAGE_EVENTS))["events"].take(),
    })
}
