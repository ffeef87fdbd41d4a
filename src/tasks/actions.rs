//! The step actions as one locked update, shared by `ralph-hooks task step …`
//! and the monitor's `POST /api/tasks/update`: one code path, so a step
//! changed from the browser is written, adopted and logged exactly as one
//! changed from the terminal.

use super::steps::{self, Change};
use super::{TaskDoc, update};
use crate::hook::ctx::Ctx;

/// One step action (seed 002 §2.3 and §16.6), with its note.
pub use super::steps::StepAction;

/// What the action did: the saved document, its changes (already logged to
/// `events.jsonl`) and the sentence the CLI prints.
pub struct Applied {
    pub doc: TaskDoc,
    pub changes: Vec<Change>,
    pub message: String,
}

/// Applies `action` to task `task_id` under its lock; the session that acts
/// takes the task over (see [`crate::tasks`]); each change is logged.
pub fn apply(ctx: &Ctx, task_id: &str, action: &StepAction) -> anyhow::Result<Applied> {
    let session = ctx.session_id.clone();
    let (doc, (changes, message)) = update(ctx, task_id, |doc| {
        let result = steps::apply(doc, action)?;
        adopt(doc, session.as_deref());
        Ok(result)
    })?;
    super::log_changes(ctx, &doc, &changes);
    Ok(Applied {
        doc,
        changes,
        message,
    })
}

/// The session working on the task takes it over (see [`crate::tasks`]).
pub fn adopt(doc: &mut TaskDoc, session: Option<&str>) {
    if let Some(session) = session
        && doc.field("Session") != Some(session)
    {
        doc.set_field("Session", session);
    }
}

/// Adds a progress line under the task's lock and logs `progress_added`:
/// `task progress` and the monitor's `{progress}` update.
pub fn add_progress(ctx: &Ctx, task_id: &str, text: &str) -> anyhow::Result<TaskDoc> {
    let session = ctx.session_id.clone();
    let (doc, ()) = update(ctx, task_id, |doc| {
        doc.add_progress(text);
        adopt(doc, session.as_deref());
        Ok(())
    })?;
    super::log(
        ctx,
        "task_update",
        &doc.id,
        serde_json::json!({"event": "progress_added", "progress": doc.progress.items().last()}),
    );
    Ok(doc)
}
