//! What a session is told at start about the orchestrator's work: where it
//! stands (`state.json`: request, task, subtask, phase, open gates), what the
//! project has learned (`knowledge.yaml`: patterns, decisions, pitfalls) and
//! which interrupted commands can be resumed (`command-state/`).
//!
//! Each part is independent: a missing file contributes nothing, an invalid
//! one a single line naming the file and its first problem, never a failure.
//! Session start is also when `command-state/` is tidied (30 days, 50 files).

use std::fmt::Write as _;

use crate::hook::ctx::Ctx;
use crate::orchestrator::resume;
use crate::orchestrator::schema::tree::{Node, Value};
use crate::orchestrator::schema::{self, project_hash};

/// At most this many decisions, pitfalls or resumable commands are listed.
const MAX_ITEMS: usize = 12;

pub fn session_context(ctx: &Ctx) -> anyhow::Result<Option<String>> {
    let hash = project_hash(&ctx.project_root);
    ctx.debug(format_args!(
        "orchestrator: projectHash of {} is {hash}",
        ctx.project_root.display()
    ));
    let parts = [
        part(ctx, "state", || state_part(ctx, &hash)),
        part(ctx, "knowledge", || knowledge_part(ctx, &hash)),
        part(ctx, "resumable commands", || resume_part(ctx)),
        part(ctx, "pipelines", || pipeline_part(ctx)),
    ];
    let text: Vec<String> = parts.into_iter().flatten().collect();
    Ok((!text.is_empty()).then(|| text.join("\n\n")))
}

fn part(
    ctx: &Ctx,
    name: &str,
    build: impl FnOnce() -> anyhow::Result<Option<String>>,
) -> Option<String> {
    build().unwrap_or_else(|error| {
        ctx.debug(format_args!("orchestrator {name} failed: {error:#}"));
        Some(format!(
            "(orchestrator {name} could not be read: {error:#})"
        ))
    })
}

/// Reads and validates one orchestrator file under the state root. `Err`
/// carries the one line that says why it is unusable.
fn load(ctx: &Ctx, relative: &str) -> anyhow::Result<Option<Result<Node, String>>> {
    let Some(text) = ctx.store().read_text(relative)? else {
        ctx.debug(format_args!("orchestrator: no {relative}"));
        return Ok(None);
    };
    let path = ctx.store().path(relative);
    let display = ctx.display_path(&path).into_owned();
    ctx.debug(format_args!("Loading context from {}", path.display()));
    let Some(role) = schema::recognize(&path, &ctx.state_root) else {
        anyhow::bail!(
            "{} is not recognised as an orchestrator file",
            path.display()
        );
    };
    let violations = schema::validate(&role, &text);
    if let Some(first) = violations.first() {
        let more = match violations.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Ok(Some(Err(format!(
            "ORCHESTRATOR: {display} is invalid, so it was not used: {}{more}. Run `ralph-hooks validate {}` and regenerate it following {}.",
            schema::format_violation(&display, first),
            path.display(),
            role.title()
        ))));
    }
    Ok(Some(schema::parse(role.kind, &text).map_err(|v| v.message)))
}

fn text_at<'n>(node: &'n Node, keys: &[&str]) -> &'n str {
    node.at(keys).and_then(Node::as_str).unwrap_or("?")
}

fn state_part(ctx: &Ctx, hash: &str) -> anyhow::Result<Option<String>> {
    let relative = format!("sessions/{hash}/state.json");
    let root = match load(ctx, &relative)? {
        None => return Ok(None),
        Some(Err(line)) => return Ok(Some(line)),
        Some(Ok(root)) => root,
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "ORCHESTRATOR STATE ({}):",
        ctx.display_path(&ctx.store().path(&relative))
    );
    let _ = writeln!(
        text,
        "Request {} ({}, phase {}): {}",
        text_at(&root, &["request", "id"]),
        text_at(&root, &["request", "status"]),
        text_at(&root, &["request", "global_phase"]),
        text_at(&root, &["request", "original_request"]),
    );
    let tasks = root.get("tasks");
    let order = |node: &Node, list: &str, map: Option<&Node>| -> String {
        node.get(list)
            .map(Node::as_seq)
            .unwrap_or(&[])
            .iter()
            .filter_map(Node::as_str)
            .map(|id| match map.and_then(|m| m.get(id)) {
                Some(item) => format!("{id} {}", text_at(item, &["status"])),
                None => format!("{id} not started"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(text, "Tasks: {}", order(&root, "task_order", tasks));
    let current_task_id = root.at(&["request", "current_task"]).and_then(Node::as_str);
    let current_task = current_task_id.and_then(|id| tasks.and_then(|t| t.get(id)));
    match (current_task_id, current_task) {
        (Some(task_id), Some(task)) => {
            let _ = writeln!(
                text,
                "Current task {task_id} \"{}\" ({}); subtasks: {}",
                text_at(task, &["name"]),
                text_at(task, &["status"]),
                order(task, "subtask_order", task.get("subtasks"))
            );
            let subtask_id = task.get("current_subtask").and_then(Node::as_str);
            let subtask = subtask_id.and_then(|id| task.at(&["subtasks", id]));
            if let (Some(subtask_id), Some(subtask)) = (subtask_id, subtask) {
                let _ = writeln!(
                    text,
                    "Current subtask {subtask_id} \"{}\" ({}, phase {})",
                    text_at(subtask, &["name"]),
                    text_at(subtask, &["status"]),
                    text_at(subtask, &["phase"])
                );
                let open: Vec<String> = subtask
                    .get("gates")
                    .map(Node::entries)
                    .unwrap_or(&[])
                    .iter()
                    .filter(|gate| gate.value.as_str() != Some("passed"))
                    .map(|gate| format!("{} {}", gate.key, gate.value.as_str().unwrap_or("?")))
                    .collect();
                if open.is_empty() {
                    let _ = writeln!(text, "Gates: all passed");
                } else {
                    let _ = writeln!(text, "Open gates: {}", open.join(", "));
                }
            }
        }
        _ => {
            let _ = writeln!(text, "No task in progress.");
        }
    }
    Ok(Some(text.trim_end().to_string()))
}

fn knowledge_part(ctx: &Ctx, hash: &str) -> anyhow::Result<Option<String>> {
    let relative = format!("knowledge/{hash}/knowledge.yaml");
    let root = match load(ctx, &relative)? {
        None => return Ok(None),
        Some(Err(line)) => return Ok(Some(line)),
        Some(Ok(root)) => root,
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "PROJECT KNOWLEDGE ({}):",
        ctx.display_path(&ctx.store().path(&relative))
    );
    let patterns: Vec<String> = root
        .get("patterns")
        .map(Node::entries)
        .unwrap_or(&[])
        .iter()
        .map(|entry| match &entry.value.value {
            Value::Map(inner) => format!(
                "{}: {}",
                entry.key,
                inner
                    .iter()
                    .map(|e| format!("{} {}", e.key, e.value.as_str().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => format!("{}: {}", entry.key, entry.value.as_str().unwrap_or("?")),
        })
        .collect();
    if !patterns.is_empty() {
        let _ = writeln!(text, "Patterns: {}", patterns.join("; "));
    }
    let list = |text: &mut String, title: &str, items: &[Node], line: &dyn Fn(&Node) -> String| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(text, "{title}:");
        for item in items.iter().take(MAX_ITEMS) {
            let _ = writeln!(text, "- {}", line(item));
        }
        if items.len() > MAX_ITEMS {
            let _ = writeln!(text, "- (+{} more in the file)", items.len() - MAX_ITEMS);
        }
    };
    let decisions = root.get("decisions").map(Node::as_seq).unwrap_or(&[]);
    list(&mut text, "Decisions", decisions, &|d| {
        format!(
            "{} {}: {} ({})",
            text_at(d, &["id"]),
            text_at(d, &["topic"]),
            text_at(d, &["decision"]),
            text_at(d, &["rationale"])
        )
    });
    let pitfalls = root.get("pitfalls").map(Node::as_seq).unwrap_or(&[]);
    list(&mut text, "Pitfalls", pitfalls, &|p| {
        format!(
            "{} {} ({})",
            text_at(p, &["id"]),
            text_at(p, &["description"]),
            text_at(p, &["reason"])
        )
    });
    Ok(Some(text.trim_end().to_string()))
}

fn resume_part(ctx: &Ctx) -> anyhow::Result<Option<String>> {
    let n_removed = resume::cleanup(ctx)?;
    if n_removed > 0 {
        ctx.debug(format_args!(
            "command-state: removed {n_removed} old file(s)"
        ));
    }
    if !ctx.store().exists(resume::DIR) {
        return Ok(None);
    }
    // Pipelines have their own part, with their phases.
    let states: Vec<_> = resume::resumable(ctx)?
        .live
        .into_iter()
        .filter(|(_, state)| state.short_command() != crate::orchestrator::pipeline::COMMAND)
        .collect();
    if states.is_empty() {
        return Ok(None);
    }
    let mut text = String::from(
        "RESUMABLE COMMANDS (print the prompt that continues one with `ralph-hooks resume show <command> <spec-id>`):\n",
    );
    // Newest first: the one just interrupted is the likeliest to matter.
    for (_, state) in states.iter().rev().take(MAX_ITEMS) {
        let _ = writeln!(text, "- {}", resume::describe(state));
    }
    if states.len() > MAX_ITEMS {
        let _ = writeln!(
            text,
            "- (+{} more: `ralph-hooks resume list`)",
            states.len() - MAX_ITEMS
        );
    }
    Ok(Some(text.trim_end().to_string()))
}

/// Pipelines not yet done: where each stands and what is next.
fn pipeline_part(ctx: &Ctx) -> anyhow::Result<Option<String>> {
    if !ctx.store().exists(resume::DIR) {
        return Ok(None);
    }
    let open: Vec<String> = crate::orchestrator::pipeline::views(ctx)?
        .iter()
        .filter(|view| view.current_phase != crate::orchestrator::pipeline::DONE)
        .map(crate::orchestrator::pipeline::describe)
        .collect();
    if open.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "RALPH PIPELINES (`ralph-hooks pipeline status`; continue one with /ralph-resume <SPEC-ID>):\n{}",
        open.join("").trim_end()
    )))
}
