//! `ralph-hooks task …`: tasks and their steps.
//!
//! ```text
//! task start <description> [--priority low|medium|high]
//! task steps set <step> <step>...        task steps reorder <step-id>...
//! task step add <text>                   task step start|complete|skip <step-id> [--note TEXT]
//! task progress <text>
//! task complete [--force] [--summary TEXT]
//! task block [--note TEXT]    task resume    task cancel [--note TEXT]
//! task status [--json]        task list [--json]
//! ```
//!
//! Every change is a locked read-modify-write of the task file, so parallel
//! calls (Claude runs several tool calls at once) lose nothing. The session
//! that changes a step takes the task over (see [`crate::tasks`]).

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::bail;
use serde_json::json;

use super::Args;
use crate::hook::ctx::Ctx;
use crate::tasks::actions::{self, StepAction, adopt};
use crate::tasks::{self, StepsProgress, TaskDoc, steps};

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let Some(action) = args.positional() else {
        bail!(
            "usage: ralph-hooks task start|steps|step|progress|complete|block|resume|cancel|status|list … (see `ralph-hooks --help`)"
        )
    };
    match action.as_str() {
        "start" => start(ctx, args),
        // "step" and "steps" both work for every step action: the
        // difference is easy to get wrong and never ambiguous.
        "steps" | "step" => step(ctx, args),
        "progress" => progress(ctx, args),
        "complete" => complete(ctx, args),
        "block" => set_status(ctx, args, tasks::BLOCKED),
        "resume" => set_status(ctx, args, tasks::IN_PROGRESS),
        "cancel" => cancel(ctx, args),
        "status" => status(ctx, args),
        "list" => list(ctx, args),
        other => bail!(
            "unknown task action {other:?}: use start, steps set|reorder, step add|start|complete|skip, progress, complete, block, resume, cancel, status or list"
        ),
    }
}

fn start(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let priority = args.value("--priority")?.unwrap_or_else(|| "medium".into());
    let description = args.rest().join(" ");
    args.finish()?;
    if !matches!(priority.as_str(), "low" | "medium" | "high") {
        bail!("--priority must be low, medium or high, not {priority:?}");
    }
    let doc = tasks::create(ctx, &description, &priority)?;
    println!(
        "Started task {} ({priority}): {}\nNext: break it into steps with `ralph-hooks task steps set \"first step\" \"second step\" …`.",
        doc.id,
        doc.description_text()
    );
    Ok(ExitCode::SUCCESS)
}

fn step(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let Some(action) = args.positional() else {
        bail!("usage: ralph-hooks task steps set|reorder … or task step add|start|complete|skip …")
    };
    let note = args.value("--note")?;
    let words = args.rest();
    args.finish()?;
    let action = StepAction::parse(&action, words, note)?;
    let active = tasks::require_active(ctx.store())?;
    let applied = actions::apply(ctx, &active.id, &action)?;
    println!("{}\n{}", applied.message, summary(&applied.doc));
    Ok(ExitCode::SUCCESS)
}

fn progress(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let text = args.rest().join(" ");
    args.finish()?;
    if text.trim().is_empty() {
        bail!("nothing to log: `ralph-hooks task progress \"what happened\"`");
    }
    let active = tasks::require_active(ctx.store())?;
    let doc = actions::add_progress(ctx, &active.id, &text)?;
    println!("Logged progress on task {}.", doc.id);
    Ok(ExitCode::SUCCESS)
}

/// How `task complete` ended.
enum Completion {
    Refused(String),
    Completed { forced: Vec<String> },
}

fn complete(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let force = args.flag("--force");
    let summary = args.value("--summary")?;
    let extra = args.rest();
    args.finish()?;
    // `task complete "summary text"` is a common slip; take it as the summary.
    let summary = match (summary, extra.is_empty()) {
        (Some(_), false) => {
            bail!("give the summary once, either as --summary TEXT or as the argument")
        }
        (Some(summary), true) => Some(summary),
        (None, false) => Some(extra.join(" ")),
        (None, true) => None,
    };
    let active = tasks::require_active(ctx.store())?;
    let now = tasks::stamp(ctx);
    let (doc, completion) = tasks::update(ctx, &active.id, |doc| {
        let open: Vec<String> = steps::open_steps(doc)
            .iter()
            .map(|s| s.id.clone())
            .collect();
        if !open.is_empty() && !force {
            let message = tasks::stop_guard_message(doc).unwrap_or_default();
            doc.add_progress(&format!(
                "⚠ task complete blocked by the stop guard: {} step{} remaining ({})",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                open.join(", ")
            ));
            return Ok(Completion::Refused(message));
        }
        if !open.is_empty() {
            doc.add_progress(&format!(
                "⚠ Force completed with {} step{} remaining: {}",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                open.join(", ")
            ));
        }
        match &summary {
            Some(summary) => doc.add_progress(&format!("Task completed: {summary}")),
            None => doc.add_progress("Task completed"),
        }
        doc.set_field("Status", tasks::COMPLETED);
        doc.set_field("Completed", &now);
        Ok(Completion::Completed { forced: open })
    })?;
    match completion {
        Completion::Refused(message) => {
            tasks::log_stop_guard(ctx, &doc, "cli");
            eprintln!("ralph-hooks: {message}");
            Ok(ExitCode::from(1))
        }
        Completion::Completed { forced } => {
            tasks::clear_active(ctx, &doc.id)?;
            tasks::log(
                ctx,
                "task_update",
                &doc.id,
                json!({"event": "task_completed", "forced": !forced.is_empty(), "openSteps": forced,
                       "stepsProgress": StepsProgress::of(doc.steps())}),
            );
            if forced.is_empty() {
                println!("Completed task {}: {}", doc.id, doc.description_text());
            } else {
                println!(
                    "Completed task {} with {} open step{} ({}); the warning is in its progress log.",
                    doc.id,
                    forced.len(),
                    if forced.len() == 1 { "" } else { "s" },
                    forced.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `task block` and `task resume`: the task stays active, but continuation
/// leaves a blocked task alone until it is resumed.
fn set_status(ctx: &Ctx, args: &mut Args, status: &str) -> anyhow::Result<ExitCode> {
    let note = args.value("--note")?;
    args.finish()?;
    if status == tasks::IN_PROGRESS && note.is_some() {
        bail!("--note goes with `task block`; log other notes with `ralph-hooks task progress`");
    }
    let active = tasks::require_active(ctx.store())?;
    let session = ctx.session_id.clone();
    let (doc, changed) = tasks::update(ctx, &active.id, |doc| {
        if doc.field("Status") == Some(status) {
            return Ok(false);
        }
        doc.set_field("Status", status);
        let line = match (status, &note) {
            (tasks::BLOCKED, Some(note)) => format!("Blocked: {note}"),
            (tasks::BLOCKED, None) => "Blocked".to_string(),
            _ => "Resumed".to_string(),
        };
        doc.add_progress(&line);
        adopt(doc, session.as_deref());
        Ok(true)
    })?;
    if changed {
        let event = if status == tasks::BLOCKED {
            "task_blocked"
        } else {
            "task_resumed"
        };
        tasks::log(
            ctx,
            "task_update",
            &doc.id,
            json!({"event": event, "note": note}),
        );
    }
    let text = if status == tasks::BLOCKED {
        "is blocked: stops are no longer continued until `ralph-hooks task resume`"
    } else {
        "is in progress again"
    };
    println!("Task {} {text}.", doc.id);
    Ok(ExitCode::SUCCESS)
}

fn cancel(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let note = args.value("--note")?;
    args.finish()?;
    let active = tasks::require_active(ctx.store())?;
    let (doc, ()) = tasks::update(ctx, &active.id, |doc| {
        doc.set_field("Status", tasks::CANCELLED);
        doc.add_progress(&match &note {
            Some(note) => format!("Task cancelled: {note}"),
            None => "Task cancelled".to_string(),
        });
        Ok(())
    })?;
    tasks::clear_active(ctx, &doc.id)?;
    tasks::log(
        ctx,
        "task_update",
        &doc.id,
        json!({"event": "task_cancelled", "note": note, "stepsProgress": StepsProgress::of(doc.steps())}),
    );
    println!(
        "Cancelled task {}. Its file stays in {}.",
        doc.id,
        ctx.state_root.join(tasks::TASKS_DIR).display()
    );
    Ok(ExitCode::SUCCESS)
}

fn status(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    args.finish()?;
    let doc = tasks::active(ctx.store())?;
    if json {
        let task = doc
            .as_ref()
            .map(|doc| tasks::monitor_json(ctx.store(), doc));
        println!("{}", serde_json::to_string(&json!({ "task": task }))?);
        return Ok(ExitCode::SUCCESS);
    }
    match doc {
        None => println!(
            "No active task. Start one with `ralph-hooks task start \"<what you are doing>\"`."
        ),
        Some(doc) => print!("{}", describe(&doc)),
    }
    Ok(ExitCode::SUCCESS)
}

fn list(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    args.finish()?;
    let store = ctx.store();
    let active_id = tasks::active(store)?.map(|doc| doc.id);
    let mut docs = Vec::new();
    for name in store.list_dir(tasks::TASKS_DIR)? {
        let Some(id) = name.strip_suffix(".md") else {
            continue;
        };
        if !crate::state::ids::is_valid(id) {
            continue;
        }
        if let Some(doc) = tasks::load(store, id)? {
            docs.push(doc);
        }
    }
    if json {
        let items: Vec<_> = docs
            .iter()
            .map(|doc| tasks::monitor_json(store, doc))
            .collect();
        println!(
            "{}",
            serde_json::to_string(&json!({"active": active_id, "tasks": items}))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if docs.is_empty() {
        println!("No tasks in {}.", store.path(tasks::TASKS_DIR).display());
        return Ok(ExitCode::SUCCESS);
    }
    for doc in &docs {
        let progress = StepsProgress::of(doc.steps());
        let mark = if active_id.as_deref() == Some(doc.id.as_str()) {
            "*"
        } else {
            " "
        };
        println!(
            "{mark} {:<28} {:<12} {:>7}  {}",
            doc.id,
            doc.field("Status").unwrap_or_default(),
            if progress.total > 0 {
                format!("{}/{}", progress.closed(), progress.total)
            } else {
                "-".into()
            },
            doc.description_text().lines().next().unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A person's view of a task: header, progress bar, checklist, recent log.
pub fn describe(doc: &TaskDoc) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "Task {} — {} (priority {})",
        doc.id,
        doc.field("Status").unwrap_or_default(),
        doc.field("Priority").unwrap_or("-")
    );
    for line in doc.description_text().lines() {
        let _ = writeln!(text, "  {line}");
    }
    if let Some(session) = doc.field("Session") {
        let _ = writeln!(text, "  session:       {session}");
    }
    let _ = writeln!(
        text,
        "  created:       {}",
        doc.field("Created").unwrap_or("-")
    );
    let _ = writeln!(
        text,
        "  last activity: {}",
        doc.last_activity().unwrap_or("-")
    );
    if doc.steps().is_empty() {
        let _ = writeln!(
            text,
            "  no steps yet: `ralph-hooks task steps set \"first\" \"second\" …`"
        );
    } else {
        let _ = writeln!(
            text,
            "  {}",
            tasks::progress_bar(&StepsProgress::of(doc.steps()))
        );
        let _ = writeln!(
            text,
            "{}",
            crate::util::text::indent(&tasks::checklist(doc), "    ")
        );
    }
    let recent = doc.progress.items();
    if !recent.is_empty() {
        let _ = writeln!(text, "  last progress:");
        for line in &recent[recent.len().saturating_sub(5)..] {
            let _ = writeln!(text, "    - {line}");
        }
    }
    text
}

/// After a step command: the bar, the checklist, and what comes next.
fn summary(doc: &TaskDoc) -> String {
    let progress = StepsProgress::of(doc.steps());
    let mut text = format!(
        "{}\n{}",
        tasks::progress_bar(&progress),
        tasks::checklist(doc)
    );
    match steps::current_step(doc) {
        Some(step) => {
            let _ = write!(text, "\nNow: ({}) {}", step.id, step.content);
        }
        None if progress.open() > 0 => {
            let _ = write!(
                text,
                "\nNo step is in progress: start one with `ralph-hooks task step start <id>`."
            );
        }
        None if progress.total > 0 => {
            let _ = write!(
                text,
                "\nEvery step is done or skipped: finish with `ralph-hooks task complete --summary \"…\"`."
            );
        }
        None => {}
    }
    text
}
