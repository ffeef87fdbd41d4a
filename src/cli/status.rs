//! `ralph-hooks status [--json]`: the loop and the active task at a glance,
//! for a person (with a progress bar for the steps) or for programs.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::json;

use super::Args;
use crate::hook::ctx::Ctx;
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::tasks;
use crate::tasks::continuation;

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    args.finish()?;
    let store = ctx.store();
    let loop_state = store.read_json::<LoopState>(LOOP_FILE)?;
    let task = tasks::active(store)?;
    let counter = continuation::counter(ctx)?;
    if json {
        let value = json!({
            "loop": loop_state,
            "task": task.as_ref().map(|doc| tasks::monitor_json(store, doc)),
            "continuation": counter,
            "pipelines": crate::orchestrator::pipeline::views(ctx)?,
        });
        println!("{}", serde_json::to_string(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    match &loop_state {
        None => {
            let _ = writeln!(text, "Ralph loop: none");
        }
        Some(state) if state.is_running() => {
            let _ = writeln!(
                text,
                "Ralph loop {}: RUNNING, iteration {}/{} — {}",
                state.id, state.iteration, state.max_iterations, state.goal
            );
            if let Some(last) = state.history.last()
                && !last.failed.is_empty()
            {
                let _ = writeln!(text, "  still failing: {}", last.failed.join(", "));
            }
        }
        Some(state) => {
            let _ = writeln!(
                text,
                "Ralph loop: none running (last: {} {}{})",
                state.id,
                state.status.as_str(),
                state
                    .completion_reason
                    .as_deref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default()
            );
        }
    }
    match &task {
        None => {
            let _ = writeln!(
                text,
                "Task: none active (start one with `ralph-hooks task start \"…\"`)"
            );
        }
        Some(doc) => {
            let _ = write!(text, "{}", super::task::describe(doc));
        }
    }
    if let Some(counter) = &counter {
        let state = match &counter.stopped {
            Some(reason) => format!("stopped ({reason})"),
            None => format!("{} in a row", counter.consecutive),
        };
        let _ = writeln!(
            text,
            "Continuation ({} {}): {state}, last at {}",
            counter.source,
            counter.subject,
            counter.updated_at.to_rfc3339()
        );
    }
    for view in crate::orchestrator::pipeline::views(ctx)? {
        let _ = write!(text, "{}", crate::orchestrator::pipeline::describe(&view));
    }
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
