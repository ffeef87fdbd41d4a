//! `ralph-hooks loop start|status|cancel`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::bail;

use super::Args;
use crate::hook::ctx::Ctx;
use crate::ralph::checks;
use crate::ralph::loop_state::{DEFAULT_MAX_ITERATIONS, LOOP_FILE, LoopState};
use crate::ralph::loops::{self, StartRequest};

pub fn run(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let Some(action) = args.positional() else {
        bail!("usage: ralph-hooks loop start|status|cancel")
    };
    match action.as_str() {
        "start" => start(ctx, args),
        "status" => status(ctx, args),
        "cancel" => cancel(ctx, args),
        other => bail!("unknown loop action {other:?}: use start, status or cancel"),
    }
}

fn start(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let checks = args.values("--check")?;
    if checks.iter().any(|check| check.trim().is_empty()) {
        // `sh -c ""` exits 0 at once: the loop would "pass" without a check.
        anyhow::bail!(
            "--check needs a command, e.g. --check \"cargo test\"; an empty one would pass at once"
        );
    }
    let promise = args.value("--promise")?;
    let max_iterations = args
        .number("--max-iterations")?
        .unwrap_or(DEFAULT_MAX_ITERATIONS);
    let check_timeout_secs = args
        .number("--check-timeout")?
        .unwrap_or(checks::DEFAULT_TIMEOUT.as_secs());
    let explicit_diagnostics = args.flag("--diagnostics");
    let no_diagnostics = args.flag("--no-diagnostics");
    let no_warnings = args.flag("--no-warnings");
    let goal = args.rest().join(" ");
    args.finish()?;
    if explicit_diagnostics && no_diagnostics {
        bail!("--diagnostics and --no-diagnostics contradict each other: give one");
    }
    // "No LSP errors in the touched files" guards every loop unless turned
    // off; on its own it is a condition only when asked for explicitly.
    let diagnostics = !no_diagnostics;
    let has_condition = promise.is_some() || !checks.is_empty() || explicit_diagnostics;
    if !has_condition {
        bail!(
            "a loop needs at least one completion condition: --promise TEXT, --check CMD or --diagnostics; without one it could never finish"
        );
    }
    let state = loops::start(
        ctx,
        StartRequest {
            goal,
            promise,
            checks,
            check_timeout_secs,
            max_iterations,
            diagnostics,
            no_warnings,
        },
    )?;
    let mut text = format!(
        "Started Ralph loop {} (max {} iterations).\nGoal: {}\nIt ends when all of these hold:\n",
        state.id, state.max_iterations, state.goal
    );
    for line in state.condition_lines() {
        let _ = writeln!(text, "- {line}");
    }
    match &state.session_id {
        Some(session) => {
            let _ = writeln!(text, "Bound to session {session}.");
        }
        None => {
            let _ = writeln!(
                text,
                "Not bound to a session yet: the first Claude Code session that stops claims it."
            );
        }
    }
    let _ = write!(text, "Cancel with `ralph-hooks loop cancel`.");
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn status(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    args.finish()?;
    let state = ctx.store().read_json::<LoopState>(LOOP_FILE)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "loop": state }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    match state {
        None => println!("No Ralph loop in {}.", ctx.state_root.display()),
        Some(state) => print!("{}", describe(&state)),
    }
    Ok(ExitCode::SUCCESS)
}

/// A person's view of a loop.
pub fn describe(state: &LoopState) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "Ralph loop {} — {}", state.id, state.status.as_str());
    let _ = writeln!(text, "  goal:       {}", state.goal);
    let _ = writeln!(
        text,
        "  iteration:  {}/{}",
        state.iteration, state.max_iterations
    );
    let _ = writeln!(
        text,
        "  session:    {}",
        state.session_id.as_deref().unwrap_or("(not claimed yet)")
    );
    let _ = writeln!(text, "  started:    {}", state.started_at.to_rfc3339());
    if let Some(reason) = &state.completion_reason {
        let _ = writeln!(
            text,
            "  ended:      {} ({reason})",
            state.ended_at.map(|t| t.to_rfc3339()).unwrap_or_default()
        );
    }
    let _ = writeln!(text, "  conditions:");
    for line in state.condition_lines() {
        let _ = writeln!(text, "    - {line}");
    }
    if !state.history.is_empty() {
        let _ = writeln!(text, "  history:");
        for entry in &state.history {
            let failed = if entry.failed.is_empty() {
                "all conditions held".to_string()
            } else {
                entry.failed.join(", ")
            };
            let _ = writeln!(
                text,
                "    #{:<3} {} {:<20} {failed}",
                entry.iteration,
                entry.at.format("%Y-%m-%d %H:%M:%S"),
                entry.decision
            );
        }
    }
    text
}

fn cancel(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    args.finish()?;
    match loops::cancel(ctx)? {
        None => println!("No active loop to cancel."),
        Some(state) => println!(
            "Cancelled Ralph loop {} at iteration {}/{}. History kept in {}/loops/{}.json. Start a new one with `ralph-hooks loop start`.",
            state.id,
            state.iteration,
            state.max_iterations,
            ctx.state_root.display(),
            state.id
        ),
    }
    Ok(ExitCode::SUCCESS)
}
