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

use crate::hook::ctx::Ctx;
use crate::tasks::actions::{self, StepAction, adopt};
use crate::tasks::{self, StepsProgress, TaskDoc, steps};

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks task start \"add OAuth login\" --priority high
  ralph-hooks task steps set \"read the auth code\" \"add the Google strategy\" \"add the callback\"
  ralph-hooks task step complete s1 --note \"JWT middleware is in src/auth.rs\"
  ralph-hooks task complete --summary \"OAuth login works\"";

#[derive(Debug, clap::Subcommand)]
pub enum TaskCommand {
    /// Start a task (one is active at a time)
    Start {
        /// What the task is, in words
        #[arg(value_name = "DESCRIPTION")]
        description: Vec<String>,
        /// How urgent it is
        #[arg(long, default_value = "medium", value_parser = ["low", "medium", "high"])]
        priority: String,
    },
    /// Set, add, start, complete, skip or reorder the active task's steps
    #[command(subcommand, visible_alias = "steps", after_help = STEP_EXAMPLES)]
    Step(StepCommand),
    /// Log a line of progress on the active task
    Progress {
        /// What happened
        #[arg(value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Complete the active task; refused while steps are open unless --force
    Complete {
        /// Complete it even with open steps (a warning is logged)
        #[arg(long)]
        force: bool,
        /// What was done
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        summary: Option<String>,
        /// The summary, as words instead of --summary
        #[arg(value_name = "SUMMARY")]
        words: Vec<String>,
    },
    /// Mark the active task blocked: stops are no longer continued until resumed
    Block {
        /// Why (what decision is needed)
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
    /// A blocked task is in progress again
    Resume,
    /// Cancel the active task (its file stays)
    Cancel {
        /// Why
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
    /// The active task: checklist, progress bar, recent progress
    Status {
        /// The task as JSON (the monitor's shape)
        #[arg(long)]
        json: bool,
    },
    /// Every task, the active one marked *
    List {
        /// The tasks as JSON
        #[arg(long)]
        json: bool,
    },
}

const STEP_EXAMPLES: &str = "\
`task step` and `task steps` are the same command.

Examples:
  ralph-hooks task steps set \"read the code\" \"write the fix\" \"add a test\"
  ralph-hooks task step add \"update the docs\"
  ralph-hooks task step complete s2 --note \"done in parser.rs\"
  ralph-hooks task steps reorder s1 s3 s2 s4";

#[derive(Debug, clap::Subcommand)]
pub enum StepCommand {
    /// Replace every step; ids restart at s1 and the first is in progress
    Set {
        /// The steps, in order
        #[arg(value_name = "STEP")]
        steps: Vec<String>,
    },
    /// Append a pending step with the next free id
    Add {
        /// The step
        #[arg(value_name = "TEXT")]
        text: Vec<String>,
    },
    /// Start a step; the one in progress goes back to pending
    Start(OneStep),
    /// Mark a step done; the next pending one starts when none is in progress
    #[command(visible_alias = "done")]
    Complete(OneStep),
    /// Skip a step, with a note why
    Skip(OneStep),
    /// Put the steps in a new order: every id exactly once
    Reorder {
        /// Every step id, in the new order
        #[arg(value_name = "STEP_ID")]
        ids: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
pub struct OneStep {
    /// The step's id (s1, s2, …)
    #[arg(value_name = "STEP_ID")]
    id: String,
    /// Kept to say that one id is taken: `complete s1 s2` is refused.
    #[arg(hide = true)]
    more: Vec<String>,
    /// A line for the progress log
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    note: Option<String>,
}

pub fn run(ctx: &Ctx, command: TaskCommand) -> anyhow::Result<ExitCode> {
    if matches!(
        command,
        TaskCommand::Start { .. }
            | TaskCommand::Complete { .. }
            | TaskCommand::Block { .. }
            | TaskCommand::Resume
            | TaskCommand::Cancel { .. }
    ) {
        super::loop_cmd::settle_calls_over(ctx);
    }
    match command {
        TaskCommand::Start {
            description,
            priority,
        } => start(ctx, description, &priority),
        TaskCommand::Step(action) => step(ctx, action),
        TaskCommand::Progress { text } => progress(ctx, text),
        TaskCommand::Complete {
            force,
            summary,
            words,
        } => complete(ctx, force, summary, words),
        TaskCommand::Block { note } => set_status(ctx, note, tasks::BLOCKED),
        TaskCommand::Resume => set_status(ctx, None, tasks::IN_PROGRESS),
        TaskCommand::Cancel { note } => cancel(ctx, note),
        TaskCommand::Status { json } => status(ctx, json),
        TaskCommand::List { json } => list(ctx, json),
    }
}

fn start(ctx: &Ctx, description: Vec<String>, priority: &str) -> anyhow::Result<ExitCode> {
    let doc = tasks::create(ctx, &description.join(" "), priority)?;
    println!(
        "Started task {} ({priority}): {}\nNext: break it into steps with `ralph-hooks task steps set \"first step\" \"second step\" …`.",
        doc.id,
        doc.description_text()
    );
    Ok(ExitCode::SUCCESS)
}

fn step(ctx: &Ctx, command: StepCommand) -> anyhow::Result<ExitCode> {
    // The same reading as the guard's simulation of the command.
    let one = |name: &str, step: OneStep| {
        let words = std::iter::once(step.id).chain(step.more).collect();
        StepAction::parse(name, words, step.note)
    };
    let action = match command {
        StepCommand::Set { steps } => StepAction::parse("set", steps, None)?,
        StepCommand::Add { text } => StepAction::parse("add", text, None)?,
        StepCommand::Start(step) => one("start", step)?,
        StepCommand::Complete(step) => one("complete", step)?,
        StepCommand::Skip(step) => one("skip", step)?,
        StepCommand::Reorder { ids } => StepAction::parse("reorder", ids, None)?,
    };
    let active = tasks::require_active(ctx.store())?;
    let applied = actions::apply(ctx, &active.id, &action)?;
    println!("{}\n{}", applied.message, summary(&applied.doc));
    Ok(ExitCode::SUCCESS)
}

fn progress(ctx: &Ctx, words: Vec<String>) -> anyhow::Result<ExitCode> {
    let text = words.join(" ");
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

fn complete(
    ctx: &Ctx,
    force: bool,
    summary: Option<String>,
    extra: Vec<String>,
) -> anyhow::Result<ExitCode> {
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
fn set_status(ctx: &Ctx, note: Option<String>, status: &str) -> anyhow::Result<ExitCode> {
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

fn cancel(ctx: &Ctx, note: Option<String>) -> anyhow::Result<ExitCode> {
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

fn status(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
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

fn list(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
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
