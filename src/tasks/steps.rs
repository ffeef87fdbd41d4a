//! The step actions (`ralph-hooks task step …`), pure: a task document in, the same
//! document changed and the list of changes out (for `events.jsonl`). The
//! CLI does the locking and the writing.
//!
//! - set: replaces every step (ids start again at `s1`); the first starts.
//! - add: appends a pending step with the next free `sN`.
//! - start: the step in progress goes back to pending; this one starts.
//! - complete: done, a progress line `[sN] <content> — done`, and the next
//!   pending step starts when none is in progress.
//! - skip: skipped, with the reason in progress; the next step starts as above.
//! - reorder: a permutation of the existing ids, nothing more or less.
//!
//! Repeating an action that already holds (completing a done step) is a
//! no-op, not an error: agents retry, and a retry must not fail a turn.

use anyhow::bail;
use serde::Serialize;

use super::doc::{Step, StepStatus, TaskDoc, next_free_step_id, one_line};

/// What an action changed, one entry per `task_step_update` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    StepsSet,
    StepAdded(String),
    StepStarted(String),
    StepCompleted(String),
    StepSkipped(String),
    StepsReordered,
}

impl Change {
    /// The seed's event name (§15.5; `step_added` is ours).
    pub fn event(&self) -> &'static str {
        match self {
            Change::StepsSet => "steps_set",
            Change::StepAdded(_) => "step_added",
            Change::StepStarted(_) => "step_started",
            Change::StepCompleted(_) => "step_completed",
            Change::StepSkipped(_) => "step_skipped",
            Change::StepsReordered => "steps_reordered",
        }
    }

    pub fn step_id(&self) -> Option<&str> {
        match self {
            Change::StepAdded(id)
            | Change::StepStarted(id)
            | Change::StepCompleted(id)
            | Change::StepSkipped(id) => Some(id),
            Change::StepsSet | Change::StepsReordered => None,
        }
    }
}

/// The monitor's `stepsProgress` (seed 002 §15.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepsProgress {
    pub total: usize,
    pub done: usize,
    pub in_progress: usize,
    pub pending: usize,
    pub skipped: usize,
}

impl StepsProgress {
    pub fn of(steps: &[Step]) -> StepsProgress {
        let count = |status| steps.iter().filter(|s| s.status == status).count();
        StepsProgress {
            total: steps.len(),
            done: count(StepStatus::Done),
            in_progress: count(StepStatus::InProgress),
            pending: count(StepStatus::Pending),
            skipped: count(StepStatus::Skipped),
        }
    }

    pub fn open(&self) -> usize {
        self.in_progress + self.pending
    }

    pub fn closed(&self) -> usize {
        self.done + self.skipped
    }
}

/// One step action as the CLI takes it (`task step(s) <action> …`). The CLI
/// and the guard's chain reading ([`crate::guards`]) both build one and
/// [`apply`] it, so the guard's simulation is the CLI's own code path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepAction {
    Set(Vec<String>),
    Add(String),
    Start { id: String, note: Option<String> },
    Complete { id: String, note: Option<String> },
    Skip { id: String, note: Option<String> },
    Reorder(Vec<String>),
}

impl StepAction {
    /// `action` is the word after `step`/`steps`; `words` the positionals
    /// after it; `note` the `--note` value.
    pub fn parse(
        action: &str,
        words: Vec<String>,
        note: Option<String>,
    ) -> anyhow::Result<StepAction> {
        let needs_one_id = matches!(action, "start" | "complete" | "skip" | "done");
        if needs_one_id && words.len() != 1 {
            bail!(
                "`task step {action}` takes one step id, e.g. `ralph-hooks task step {action} s2`{}",
                if words.is_empty() {
                    ""
                } else {
                    " (to add a note use --note \"…\")"
                }
            );
        }
        if note.is_some() && !needs_one_id {
            bail!(
                "--note goes with `task step start|complete|skip`; log other notes with `ralph-hooks task progress`"
            );
        }
        let first = || words[0].clone();
        Ok(match action {
            "set" => StepAction::Set(words),
            "add" => StepAction::Add(words.join(" ")),
            "start" => StepAction::Start { id: first(), note },
            "complete" | "done" => StepAction::Complete { id: first(), note },
            "skip" => StepAction::Skip { id: first(), note },
            "reorder" => StepAction::Reorder(words),
            other => bail!(
                "unknown step action {other:?}: use `task steps set|reorder …` or `task step add|start|complete|skip …`"
            ),
        })
    }

    /// How the command reads, for messages: `step complete s2`.
    pub fn describe(&self) -> String {
        match self {
            StepAction::Set(steps) => format!("steps set ({} steps)", steps.len()),
            StepAction::Add(text) => format!("step add {text:?}"),
            StepAction::Start { id, .. } => format!("step start {id}"),
            StepAction::Complete { id, .. } => format!("step complete {id}"),
            StepAction::Skip { id, .. } => format!("step skip {id}"),
            StepAction::Reorder(ids) => format!("steps reorder {}", ids.join(" ")),
        }
    }

    /// Whether it can leave more steps open than before (so a guard that is
    /// unsure it ran must assume it did).
    pub fn may_open_steps(&self) -> bool {
        matches!(
            self,
            StepAction::Set(_) | StepAction::Add(_) | StepAction::Start { .. }
        )
    }
}

/// Applies one action: the changes, and the line the CLI prints.
pub fn apply(doc: &mut TaskDoc, action: &StepAction) -> anyhow::Result<(Vec<Change>, String)> {
    Ok(match action {
        StepAction::Set(contents) => {
            let changes = set_steps(doc, contents)?;
            (changes, format!("Set {} steps.", doc.steps().len()))
        }
        StepAction::Add(content) => {
            let (id, changes) = add_step(doc, content)?;
            (changes, format!("Added step {id}."))
        }
        StepAction::Start { id, note } => {
            let changes = start_step(doc, id, note.as_deref())?;
            let message = if changes.is_empty() {
                format!("Step {id} is already in progress.")
            } else {
                format!("Started step {id}.")
            };
            (changes, message)
        }
        StepAction::Complete { id, note } => {
            let changes = complete_step(doc, id, note.as_deref())?;
            let message = if changes.is_empty() {
                format!("Step {id} was already done.")
            } else {
                format!("Step {id} done.")
            };
            (changes, message)
        }
        StepAction::Skip { id, note } => {
            let changes = skip_step(doc, id, note.as_deref())?;
            let message = if changes.is_empty() {
                format!("Step {id} was already skipped.")
            } else {
                format!("Skipped step {id}.")
            };
            (changes, message)
        }
        StepAction::Reorder(order) => {
            let changes = reorder_steps(doc, order)?;
            (changes, "Reordered the steps.".to_string())
        }
    })
}

/// Steps still pending or in progress, in order.
pub fn open_steps(doc: &TaskDoc) -> Vec<&Step> {
    doc.steps().iter().filter(|s| s.status.is_open()).collect()
}

/// The step in progress, if any.
pub fn current_step(doc: &TaskDoc) -> Option<&Step> {
    doc.steps()
        .iter()
        .find(|s| s.status == StepStatus::InProgress)
}

pub fn set_steps(doc: &mut TaskDoc, contents: &[String]) -> anyhow::Result<Vec<Change>> {
    if contents.is_empty() {
        bail!(
            "no steps given: list them, e.g. `ralph-hooks task steps set \"read the code\" \"fix the bug\" \"run the tests\"`"
        );
    }
    let mut steps = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let content = one_line(content);
        if content.is_empty() {
            bail!(
                "step {} is empty: give each step a short description",
                index + 1
            );
        }
        steps.push(Step {
            id: format!("s{}", index + 1),
            content,
            status: if index == 0 {
                StepStatus::InProgress
            } else {
                StepStatus::Pending
            },
            notes: Vec::new(),
        });
    }
    let n_steps = steps.len();
    doc.steps.replace_all(steps);
    doc.add_progress(&format!(
        "Steps set: {n_steps} step{}",
        if n_steps == 1 { "" } else { "s" }
    ));
    Ok(vec![Change::StepsSet])
}

pub fn add_step(doc: &mut TaskDoc, content: &str) -> anyhow::Result<(String, Vec<Change>)> {
    let content = one_line(content);
    if content.is_empty() {
        bail!(
            "the step is empty: say what the step is, e.g. `ralph-hooks task step add \"update the docs\"`"
        );
    }
    let id = next_free_step_id(doc.steps().iter().map(|s| s.id.as_str()));
    doc.steps.push(Step {
        id: id.clone(),
        content,
        status: StepStatus::Pending,
        notes: Vec::new(),
    });
    Ok((id.clone(), vec![Change::StepAdded(id)]))
}

pub fn start_step(doc: &mut TaskDoc, id: &str, note: Option<&str>) -> anyhow::Result<Vec<Change>> {
    let index = find(doc, id)?;
    if doc.steps()[index].status == StepStatus::InProgress {
        return Ok(Vec::new());
    }
    for step in doc.steps.items_mut() {
        if step.status == StepStatus::InProgress {
            step.status = StepStatus::Pending;
        }
    }
    let step = &mut doc.steps.items_mut()[index];
    step.status = StepStatus::InProgress;
    let mut line = format!("[{}] {} — started", step.id, step.content);
    if let Some(note) = note.map(one_line).filter(|n| !n.is_empty()) {
        line.push_str(": ");
        line.push_str(&note);
    }
    doc.add_progress(&line);
    Ok(vec![Change::StepStarted(id.to_string())])
}

pub fn complete_step(
    doc: &mut TaskDoc,
    id: &str,
    note: Option<&str>,
) -> anyhow::Result<Vec<Change>> {
    close_step(doc, id, StepStatus::Done, note)
}

pub fn skip_step(doc: &mut TaskDoc, id: &str, note: Option<&str>) -> anyhow::Result<Vec<Change>> {
    close_step(doc, id, StepStatus::Skipped, note)
}

fn close_step(
    doc: &mut TaskDoc,
    id: &str,
    status: StepStatus,
    note: Option<&str>,
) -> anyhow::Result<Vec<Change>> {
    let index = find(doc, id)?;
    if doc.steps()[index].status == status {
        return Ok(Vec::new());
    }
    let step = &mut doc.steps.items_mut()[index];
    step.status = status;
    let word = if status == StepStatus::Done {
        "done"
    } else {
        "skipped"
    };
    let mut line = format!("[{}] {} — {word}", step.id, step.content);
    if let Some(note) = note.map(one_line).filter(|n| !n.is_empty()) {
        line.push_str(": ");
        line.push_str(&note);
    }
    doc.add_progress(&line);
    let mut changes = vec![if status == StepStatus::Done {
        Change::StepCompleted(id.to_string())
    } else {
        Change::StepSkipped(id.to_string())
    }];
    if current_step(doc).is_none()
        && let Some(next) = next_pending(doc, index)
    {
        doc.steps.items_mut()[next].status = StepStatus::InProgress;
        changes.push(Change::StepStarted(doc.steps()[next].id.clone()));
    }
    Ok(changes)
}

/// The first pending step after `index`, else the first pending one at all.
fn next_pending(doc: &TaskDoc, index: usize) -> Option<usize> {
    let steps = doc.steps();
    (index + 1..steps.len())
        .chain(0..index)
        .find(|&i| steps[i].status == StepStatus::Pending)
}

pub fn reorder_steps(doc: &mut TaskDoc, order: &[String]) -> anyhow::Result<Vec<Change>> {
    let existing: Vec<&str> = doc.steps().iter().map(|s| s.id.as_str()).collect();
    if existing.is_empty() {
        bail!("{}", no_steps_message(doc));
    }
    let mut problems = Vec::new();
    let missing: Vec<&str> = existing
        .iter()
        .copied()
        .filter(|id| !order.iter().any(|o| o == id))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("missing {}", missing.join(", ")));
    }
    let unknown: Vec<&str> = order
        .iter()
        .map(String::as_str)
        .filter(|id| !existing.contains(id))
        .collect();
    if !unknown.is_empty() {
        problems.push(format!("unknown {}", unknown.join(", ")));
    }
    let mut repeated: Vec<&str> = Vec::new();
    for (index, id) in order.iter().enumerate() {
        if order[..index].contains(id) && !repeated.contains(&id.as_str()) {
            repeated.push(id);
        }
    }
    if !repeated.is_empty() {
        problems.push(format!("repeated {}", repeated.join(", ")));
    }
    if !problems.is_empty() {
        bail!(
            "reorder needs every step id exactly once ({}): the steps are {} — e.g. `ralph-hooks task steps reorder {}`",
            problems.join("; "),
            existing.join(", "),
            existing.join(" ")
        );
    }
    doc.steps.reorder(|steps| {
        steps.sort_by_key(|step| order.iter().position(|id| *id == step.id));
    });
    Ok(vec![Change::StepsReordered])
}

fn find(doc: &TaskDoc, id: &str) -> anyhow::Result<usize> {
    if doc.steps().is_empty() {
        bail!("{}", no_steps_message(doc));
    }
    match doc.steps().iter().position(|s| s.id == id) {
        Some(index) => Ok(index),
        None => bail!(
            "no step {id:?} in task {}: its steps are {} (see `ralph-hooks task status`)",
            doc.id,
            doc.steps()
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn no_steps_message(doc: &TaskDoc) -> String {
    format!(
        "task {} has no steps yet: set them with `ralph-hooks task steps set \"first step\" \"second step\" …`",
        doc.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc_with(steps: &[&str]) -> TaskDoc {
        let mut doc = TaskDoc::new("task_t");
        let contents: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
        set_steps(&mut doc, &contents).unwrap();
        doc
    }

    fn statuses(doc: &TaskDoc) -> String {
        doc.steps()
            .iter()
            .map(|s| format!("{}{}", s.id, s.status.marker()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn set_starts_the_first_step() {
        let doc = doc_with(&["a", "b", "c"]);
        assert_eq!(statuses(&doc), "s1> s2  s3 ");
    }

    #[test]
    fn complete_starts_the_next_pending_step_and_logs() {
        let mut doc = doc_with(&["a", "b", "c"]);
        let changes = complete_step(&mut doc, "s1", Some("found it\nin auth.rs")).unwrap();
        assert_eq!(
            changes,
            vec![
                Change::StepCompleted("s1".into()),
                Change::StepStarted("s2".into())
            ]
        );
        assert_eq!(statuses(&doc), "s1x s2> s3 ");
        assert_eq!(
            doc.progress.items().last().unwrap(),
            "[s1] a — done: found it in auth.rs"
        );
        assert!(complete_step(&mut doc, "s1", None).unwrap().is_empty());
    }

    #[test]
    fn completing_another_step_keeps_the_current_one() {
        let mut doc = doc_with(&["a", "b", "c"]);
        complete_step(&mut doc, "s3", None).unwrap();
        assert_eq!(statuses(&doc), "s1> s2  s3x");
    }

    #[test]
    fn start_puts_the_current_step_back() {
        let mut doc = doc_with(&["a", "b", "c"]);
        start_step(&mut doc, "s3", None).unwrap();
        assert_eq!(statuses(&doc), "s1  s2  s3>");
        complete_step(&mut doc, "s3", None).unwrap();
        assert_eq!(statuses(&doc), "s1> s2  s3x");
    }

    #[test]
    fn skip_logs_the_reason_and_moves_on() {
        let mut doc = doc_with(&["a", "b"]);
        skip_step(&mut doc, "s1", Some("phase 2")).unwrap();
        assert_eq!(statuses(&doc), "s1- s2>");
        assert_eq!(
            doc.progress.items().last().unwrap(),
            "[s1] a — skipped: phase 2"
        );
    }

    #[test]
    fn add_takes_the_next_free_id() {
        let mut doc = doc_with(&["a", "b"]);
        let (id, _) = add_step(&mut doc, "c").unwrap();
        assert_eq!(id, "s3");
        assert_eq!(statuses(&doc), "s1> s2  s3 ");
    }

    #[test]
    fn reorder_must_be_a_permutation() {
        let mut doc = doc_with(&["a", "b", "c"]);
        let order = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let error = reorder_steps(&mut doc, &order(&["s1", "s3", "s3", "s9"])).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("missing s2"), "{message}");
        assert!(message.contains("unknown s9"), "{message}");
        assert!(message.contains("repeated s3"), "{message}");
        reorder_steps(&mut doc, &order(&["s3", "s1", "s2"])).unwrap();
        assert_eq!(statuses(&doc), "s3  s1> s2 ");
    }

    #[test]
    fn unknown_step_names_the_existing_ones() {
        let mut doc = doc_with(&["a", "b"]);
        let message = complete_step(&mut doc, "s7", None).unwrap_err().to_string();
        assert!(message.contains("s1, s2"), "{message}");
        let mut empty = TaskDoc::new("t");
        let message = complete_step(&mut empty, "s1", None)
            .unwrap_err()
            .to_string();
        assert!(message.contains("task steps set"), "{message}");
    }
}
