//! Task files with steps: `tasks/task_<id>.md` under the state
//! root, one per task, plus `tasks/active.json`, which names the task being
//! worked on so that the hooks read one small file and one task file, never
//! the whole folder.
//!
//! - [`doc`]: the markdown format, parsed and written without losing what a
//!   person added; [`steps`]: the step actions, pure.
//! - Here: which task is active, locked updates, the shapes others read (the
//!   checklist, the monitor's JSON, the stop-guard message),
//!   the `events.jsonl` records, and the session-start section.
//!
//! A task may name the Claude Code session working on it (`Session` in its
//! metadata): the Stop hook continues steps only for that session, and any
//! session that changes a step through the CLI takes the task over (after a
//! `/clear` the new session picks it up by working on it).
//!
//! Continuation lives here too: [`continuation`] blocks a Stop while the
//! active task has open steps (or Claude Code's own todo list has open
//! items, rebuilt by [`todos`] from the transcript) and no loop runs.
//!
//! Uses [`crate::hook`], [`crate::state`] and [`crate::util`]; used by the
//! event handlers, the guard and the CLI.

pub mod actions;
pub mod continuation;
pub mod doc;
pub mod steps;
pub mod todos;

use std::fmt::Write as _;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::hook::ctx::Ctx;
use crate::state::ids;
use crate::state::{Store, Versioned};

pub use doc::{Step, StepStatus, TaskDoc};
pub use steps::{Change, StepsProgress};

pub const TASKS_DIR: &str = "tasks";
pub const ACTIVE_FILE: &str = "tasks/active.json";

/// Task statuses (seed 002 `TaskStatus`). Only these four are written by
/// us; any other value a person writes is kept and shown as it is.
pub const IN_PROGRESS: &str = "in_progress";
pub const BLOCKED: &str = "blocked";
pub const COMPLETED: &str = "completed";
pub const CANCELLED: &str = "cancelled";

/// How many progress lines session start and status show.
const RECENT_PROGRESS: usize = 5;

/// `tasks/active.json`: which task the CLI commands and the hooks act on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ActivePointer {
    #[serde(default)]
    pub version: u64,
    /// `None` once the task is completed or cancelled.
    pub task_id: Option<String>,
}

impl Versioned for ActivePointer {
    const VERSION: u64 = 1;
}

/// The path of a task file under the state root, with the id checked first.
pub fn task_file(id: &str) -> anyhow::Result<String> {
    ids::check("task", id)?;
    Ok(format!("{TASKS_DIR}/{id}.md"))
}

/// Reads one task; `None` when its file does not exist, or was corrupt
/// (empty, not a task, not UTF-8) and has been moved aside with a warning.
/// A file an editor is saving in place (empty or half-written for a
/// moment) is read again until it settles, never moved aside meanwhile.
pub fn load(store: &Store, id: &str) -> anyhow::Result<Option<TaskDoc>> {
    let relative = task_file(id)?;
    let Some(text) = store.read_text_where(&relative, mangled)? else {
        return Ok(None);
    };
    Ok(Some(parse_as(&text, id)))
}

/// Why a task file's text is not a task, if it is not: every task we write
/// has a `Status`, so a file without one is damaged, not "no active task".
fn mangled(text: &str) -> Option<String> {
    if text.trim().is_empty() {
        return Some("it is empty".into());
    }
    if TaskDoc::parse(text, "task").field("Status").is_none() {
        return Some("it has no Status field, so it is not a task file".into());
    }
    None
}

/// The file name is the task's identity; a title that says otherwise is
/// rewritten on the next save rather than followed.
fn parse_as(text: &str, id: &str) -> TaskDoc {
    let mut doc = TaskDoc::parse(text, id);
    doc.id = id.to_string();
    doc
}

/// The active task's id: what `tasks/active.json` names. Without that file
/// (tasks written by another tool, or by hand) the most recently active
/// `in_progress` task in the folder is taken.
pub fn active_id(store: &Store) -> anyhow::Result<Option<String>> {
    if store.exists(ACTIVE_FILE) {
        let id = store
            .read_json::<ActivePointer>(ACTIVE_FILE)?
            .and_then(|pointer| pointer.task_id);
        if let Some(bad) = id.as_deref().filter(|id| !ids::is_valid(id)) {
            // An id that cannot be a file name is damage like any other: it
            // must not lock every task command until someone edits JSON.
            store.move_aside(
                ACTIVE_FILE,
                &format!("task_id {bad:?} is not a valid task id"),
            )?;
            return Ok(None);
        }
        return Ok(id);
    }
    let mut best: Option<(String, String)> = None;
    for name in store.list_dir(TASKS_DIR)? {
        let Some(id) = name.strip_suffix(".md") else {
            continue;
        };
        if !id.starts_with("task_") || !ids::is_valid(id) {
            continue;
        }
        let Some(doc) = load(store, id)? else {
            continue;
        };
        if doc.field("Status") != Some(IN_PROGRESS) {
            continue;
        }
        let stamp = doc.last_activity().unwrap_or_default().to_string();
        if best.as_ref().is_none_or(|(_, s)| stamp >= *s) {
            best = Some((id.to_string(), stamp));
        }
    }
    Ok(best.map(|(id, _)| id))
}

/// The active task: in progress or blocked. A task whose file was removed or
/// marked finished by hand is not active.
pub fn active(store: &Store) -> anyhow::Result<Option<TaskDoc>> {
    let Some(id) = active_id(store)? else {
        return Ok(None);
    };
    Ok(load(store, &id)?.filter(is_active))
}

pub fn is_active(doc: &TaskDoc) -> bool {
    matches!(doc.field("Status"), Some(IN_PROGRESS) | Some(BLOCKED))
}

/// The active task or an error that says how to start one.
pub fn require_active(store: &Store) -> anyhow::Result<TaskDoc> {
    active(store)?
        .context("no active task: start one with `ralph-hooks task start \"<what you are doing>\"`")
}

/// A timestamp as the seed writes them: `2026-02-13T12:00:00.000Z`.
pub fn stamp(ctx: &Ctx) -> String {
    ctx.now()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Creates a task and makes it the active one. Refuses while another task
/// is active, naming it and the ways to finish it.
pub fn create(ctx: &Ctx, description: &str, priority: &str) -> anyhow::Result<TaskDoc> {
    let description = description.trim();
    if description.is_empty() {
        bail!(
            "the description is empty: say what the task is, e.g. `ralph-hooks task start \"add OAuth login\"`"
        );
    }
    let store = ctx.store();
    let pointer_lock = store.lock(ACTIVE_FILE)?;
    if let Some(current) = active(store)? {
        let open = steps::open_steps(&current).len();
        bail!(
            "task {} is still {} ({:?}, {open} open step{}): one task at a time — finish it with `ralph-hooks task complete`, or drop it with `ralph-hooks task cancel --note \"why\"`",
            current.id,
            current.field("Status").unwrap_or_default(),
            current.description_text(),
            if open == 1 { "" } else { "s" }
        );
    }
    // Ids come from the pinned clock, with a counter on a clash, so tests
    // and people both get stable, sortable names.
    let base = format!("task_{}", ctx.now().format("%Y%m%dT%H%M%SZ"));
    let mut id = base.clone();
    let mut n = 1;
    while store.exists(&task_file(&id)?) {
        n += 1;
        id = format!("{base}-{n}");
    }
    let now = stamp(ctx);
    let mut doc = TaskDoc::new(&id);
    doc.set_field("Status", IN_PROGRESS);
    doc.set_field("Priority", priority);
    doc.set_field("Created", &now);
    if let Some(session) = &ctx.session_id {
        doc.set_field("Session", session);
    }
    doc.set_description(description);
    doc.add_progress("Task started");
    doc.set_last_activity(&now);
    let relative = task_file(&id)?;
    let task_lock = store.lock(&relative)?;
    task_lock.save_text(&doc.render())?;
    drop(task_lock);
    pointer_lock.save_json(&ActivePointer {
        version: ActivePointer::VERSION,
        task_id: Some(id.clone()),
    })?;
    drop(pointer_lock);
    log(
        ctx,
        "task_update",
        &id,
        json!({"event": "task_started", "description": doc.description_text(), "priority": priority}),
    );
    Ok(doc)
}

/// A locked read-modify-write of one task file. `change` sees the current
/// file; what it returns is passed through; the file is written only when the
/// document changed, with Last Activity set to now.
pub fn update<R>(
    ctx: &Ctx,
    id: &str,
    change: impl FnOnce(&mut TaskDoc) -> anyhow::Result<R>,
) -> anyhow::Result<(TaskDoc, R)> {
    let relative = task_file(id)?;
    let store = ctx.store();
    let locked = store.lock(&relative)?;
    let text = locked.load_text_where(mangled)?.with_context(|| {
        format!(
            "task file {} is gone (or was damaged and moved aside)",
            locked.path().display()
        )
    })?;
    let before = parse_as(&text, id);
    let mut doc = before.clone();
    let result = change(&mut doc)?;
    if doc != before {
        doc.set_last_activity(&stamp(ctx));
        locked.save_text(&doc.render())?;
    }
    Ok((doc, result))
}

/// Clears `tasks/active.json` if it still names `id`.
pub fn clear_active(ctx: &Ctx, id: &str) -> anyhow::Result<()> {
    let locked = ctx.store().lock(ACTIVE_FILE)?;
    let current = locked.load_json::<ActivePointer>()?;
    let points_here = current
        .as_ref()
        .is_none_or(|pointer| pointer.task_id.as_deref() == Some(id));
    if points_here {
        locked.save_json(&ActivePointer {
            version: ActivePointer::VERSION,
            task_id: None,
        })?;
    }
    Ok(())
}

/// Records one event in `events.jsonl`. The change is already saved, so a
/// failure to log is a warning, never a failed command.
pub fn log(ctx: &Ctx, kind: &str, task_id: &str, data: Value) {
    if let Err(error) = ctx.log_event(kind, ("taskId", task_id), data) {
        eprintln!("ralph-hooks: warning: cannot record a {kind} event: {error:#}");
    }
}

/// One `task_step_update` event per change (seed 002 §15.5).
pub fn log_changes(ctx: &Ctx, doc: &TaskDoc, changes: &[Change]) {
    let progress = StepsProgress::of(doc.steps());
    for change in changes {
        let mut data = json!({"event": change.event()});
        if let Some(step_id) = change.step_id() {
            data["stepId"] = json!(step_id);
        }
        data["stepsProgress"] = json!(progress);
        log(ctx, "task_step_update", &doc.id, data);
    }
}

/// The seed's continuation marker for a step.
pub fn marker(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Done => "✅",
        StepStatus::InProgress => "▶",
        StepStatus::Skipped => "⏭",
        StepStatus::Pending => "□",
    }
}

/// The checklist, one `<marker> (sN) content` line per step.
pub fn checklist(doc: &TaskDoc) -> String {
    doc.steps()
        .iter()
        .map(|step| format!("{} ({}) {}", marker(step.status), step.id, step.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `task complete` answers while steps are open, and what the
/// pre-tool guard gives as its deny reason: the open steps and the three
/// ways out. `None` when nothing is open.
pub fn stop_guard_message(doc: &TaskDoc) -> Option<String> {
    let open = steps::open_steps(doc);
    if open.is_empty() {
        return None;
    }
    let mut text = format!(
        "STOP GUARD: task {} ({:?}) still has {} open step{}:\n",
        doc.id,
        doc.description_text(),
        open.len(),
        if open.len() == 1 { "" } else { "s" }
    );
    for step in &open {
        let state = if step.status == StepStatus::InProgress {
            "in progress"
        } else {
            "pending"
        };
        let _ = writeln!(
            text,
            "  {} ({}) {} [{state}]",
            marker(step.status),
            step.id,
            step.content
        );
    }
    let first = &open[0].id;
    let _ = write!(
        text,
        "Do not complete the task yet. Either:\n\
         1. finish each open step and mark it done: `ralph-hooks task step complete {first}`\n\
         2. skip a step that is blocked or no longer needed: `ralph-hooks task step skip {first} --note \"why\"`\n\
         3. only if the user wants the task closed anyway: `ralph-hooks task complete --force`"
    );
    Some(text)
}

/// Records a refused completion: the `stop_guard_blocked` event (seed 002
/// §15.5). `source` says who refused: `cli` or `pre_tool_use`.
pub fn log_stop_guard(ctx: &Ctx, doc: &TaskDoc, source: &str) {
    let open: Vec<&str> = steps::open_steps(doc)
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    log(
        ctx,
        "continuation_event",
        &doc.id,
        json!({"event": "stop_guard_blocked", "remainingSteps": open.len(), "openSteps": open, "source": source}),
    );
}

/// The task as the monitor shows it (seed 002 §15.2–15.4): `steps` and
/// `stepsProgress` only when there are steps.
pub fn monitor_json(store: &Store, doc: &TaskDoc) -> Value {
    let mut value = json!({
        "id": doc.id,
        "status": doc.field("Status").unwrap_or_default(),
        "priority": doc.field("Priority").unwrap_or_default(),
        "description": doc.description_text(),
        "created": doc.field("Created").unwrap_or_default(),
        "lastActivity": doc.last_activity().unwrap_or_default(),
        "progress": doc.progress.items(),
    });
    if let Some(session) = doc.field("Session") {
        value["agentId"] = json!(session);
    }
    if let Ok(relative) = task_file(&doc.id) {
        value["file"] = json!(store.path(&relative).to_string_lossy());
    }
    if !doc.steps().is_empty() {
        let steps: Vec<Value> = doc
            .steps()
            .iter()
            .enumerate()
            .map(|(index, step)| {
                json!({"id": step.id, "content": step.content, "status": step.status.as_str(), "order": index + 1})
            })
            .collect();
        value["steps"] = json!(steps);
        value["stepsProgress"] = json!(StepsProgress::of(doc.steps()));
    }
    value
}

/// `[######..............] 3/10 steps done (1 skipped)`: done and skipped
/// both fill the bar, as in the seed's dashboard.
pub fn progress_bar(progress: &StepsProgress) -> String {
    const WIDTH: usize = 20;
    let filled = (progress.closed() * WIDTH)
        .checked_div(progress.total)
        .unwrap_or(0);
    let mut text = format!(
        "[{}{}] {}/{} steps done",
        "#".repeat(filled),
        ".".repeat(WIDTH - filled),
        progress.done,
        progress.total
    );
    if progress.skipped > 0 {
        let _ = write!(text, " ({} skipped)", progress.skipped);
    }
    text
}

/// The active task's section for session start: description, checklist,
/// current step, last progress lines, and how to go on.
pub fn session_context(ctx: &Ctx) -> anyhow::Result<Option<String>> {
    let Some(doc) = active(ctx.store())? else {
        return Ok(None);
    };
    let status = doc.field("Status").unwrap_or_default();
    let mut text = format!("ACTIVE TASK {} ({status})", doc.id);
    if let Some(priority) = doc.field("Priority") {
        let _ = write!(text, ", priority {priority}");
    }
    let _ = writeln!(text, ": {}", doc.description_text());
    if let (Some(owner), Some(session)) = (doc.field("Session"), &ctx.session_id)
        && owner != session
    {
        let _ = writeln!(
            text,
            "It was started in another session ({owner}). If you carry on with it, updating a step makes it yours."
        );
    }
    if !doc.steps().is_empty() {
        let progress = StepsProgress::of(doc.steps());
        let _ = writeln!(text, "Checklist {}:", progress_bar(&progress));
        let _ = writeln!(
            text,
            "{}",
            crate::util::text::indent(&checklist(&doc), "  ")
        );
        match steps::current_step(&doc) {
            Some(step) => {
                let _ = writeln!(text, "Current step: ({}) {}", step.id, step.content);
            }
            None if progress.open() > 0 => {
                let _ = writeln!(text, "No step is in progress: start the next pending one.");
            }
            None => {
                let _ = writeln!(
                    text,
                    "Every step is done or skipped: finish with `ralph-hooks task complete --summary \"…\"`."
                );
            }
        }
    }
    let recent = doc.progress.items();
    if !recent.is_empty() {
        let _ = writeln!(text, "Last progress:");
        for line in &recent[recent.len().saturating_sub(RECENT_PROGRESS)..] {
            let _ = writeln!(text, "  - {line}");
        }
    }
    if status == BLOCKED {
        let _ = writeln!(
            text,
            "The task is blocked (see the last progress line). Resume it with `ralph-hooks task resume` when the user says so."
        );
    } else if !doc.steps().is_empty() {
        let _ = writeln!(
            text,
            "Mark each step when it is really done (`ralph-hooks task step complete <id>`), skip one that is blocked (`ralph-hooks task step skip <id> --note \"why\"`), and do not run `ralph-hooks task complete` while steps are open."
        );
    }
    Ok(Some(text.trim_end().to_string()))
}
