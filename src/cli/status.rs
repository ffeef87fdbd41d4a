//! `ralph-hooks status [--json]`: the loop and the active task at a glance,
//! for a person (with a progress bar for the steps) or for programs.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::json;

pub const EXAMPLES: &str = "\
Examples:
  ralph-hooks status
  ralph-hooks status --json | jq .loop.status";

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Everything as one JSON object: loop, task, continuation, pipelines, monitor
    #[arg(long)]
    pub json: bool,
}
use crate::hook::ctx::Ctx;
use crate::ralph::loop_state::{LOOP_FILE, LoopState, LoopStatus};
use crate::tasks;
use crate::tasks::continuation;

pub fn run(ctx: &Ctx, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let store = ctx.store();
    let loop_state = store.read_json::<LoopState>(LOOP_FILE)?;
    let task = tasks::active(store)?;
    let counter = continuation::counter(ctx)?;
    let monitor = crate::monitor::running(store);
    if json {
        let spend = loop_state.as_ref().map(|state| {
            crate::ralph::budget::view(&state.budget, &state.spend, state.active_secs(ctx.now()))
        });
        let mut value = json!({
            "loop": loop_state,
            "spend": spend,
            "task": task.as_ref().map(|doc| tasks::monitor_json(store, doc)),
            "continuation": counter,
            "pipelines": crate::orchestrator::pipeline::views(ctx)?,
        });
        // Only while one runs: the document stays as it was without one.
        if let Some(m) = &monitor {
            value["monitor"] = json!({"url": m.url, "pid": m.pid});
        }
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
            // A loop with no budget and no tokens counted has nothing to say here.
            if !state.budget.is_empty() || !state.spend.is_zero() {
                let _ = writeln!(
                    text,
                    "  spent: {}",
                    crate::ralph::loops::spend_summary(state, ctx.now())
                );
            }
        }
        Some(state) if state.paused_by_usage_limit() => {
            let _ = writeln!(
                text,
                "Ralph loop {}: PAUSED by a usage limit, iteration {}/{} — {}\n  {}{}\n  your next message in Claude Code resumes it (or `ralph-hooks loop resume`)",
                state.id,
                state.iteration,
                state.max_iterations,
                state.goal,
                state.limit_message.as_deref().unwrap_or("usage limit"),
                state
                    .resets_at
                    .map(|at| format!(" (resets {})", at.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default()
            );
        }
        Some(state) if state.status == LoopStatus::Paused => {
            let _ = writeln!(
                text,
                "Ralph loop {}: PAUSED by the user, iteration {}/{} — {}\n  resume with `ralph-hooks loop resume`, end with `ralph-hooks loop cancel`",
                state.id, state.iteration, state.max_iterations, state.goal
            );
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
    if continuation::paused_by_user(ctx)? {
        let _ = writeln!(
            text,
            "Continuation: paused by the user's stop phrase until their next message"
        );
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
            counter.updated_at.format(super::loop_cmd::TIME)
        );
    }
    if let Some(monitor) = &monitor {
        let _ = writeln!(
            text,
            "Monitor: {} (pid {}; the token is in {})",
            monitor.url,
            monitor.pid,
            store.path(crate::monitor::MONITOR_FILE).display()
        );
    }
    for view in crate::orchestrator::pipeline::views(ctx)? {
        let _ = write!(text, "{}", crate::orchestrator::pipeline::describe(&view));
    }
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
