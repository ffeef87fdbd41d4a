//! `ralph-session-start`: puts the work back in front of Claude when a
//! session starts, resumes, is cleared, and above all after a compaction,
//! which drops everything the loop and the task told Claude before.
//!
//! Each feature contributes one section; a feature whose state is missing
//! contributes nothing, and one whose state is broken contributes one line
//! saying so, never a failure.

use std::fmt::Write as _;

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput, SessionStartInput};
use crate::ralph::budget;
use crate::ralph::loop_state::{LOOP_FILE, LoopState, LoopStatus};
use crate::ralph::loops;

pub struct SessionStart;

impl Hook for SessionStart {
    const NAME: &'static str = "ralph-session-start";
    const EVENTS: &'static [EventName] = &[EventName::SessionStart];
    const HELP: &'static str = "\
ralph-session-start — Claude Code SessionStart hook (all sources)

Reads one SessionStart hook JSON object on stdin and answers with
additionalContext describing the running Ralph loop (goal, iteration,
conditions, what failed last, how to finish or cancel), the active task's
checklist, the orchestrator's state and knowledge, and resumable commands.
Prints nothing when there is nothing to restore.

Exit 1 with one stderr line on bad input or an internal fault (never blocks).
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        // What changed while no hook ran (a background process of the last
        // session) is put back, and failed put-backs tried again, first.
        let retried = crate::guards::effects::pending::retry(ctx);
        let output = start_session(ctx, input)?;
        Ok(match retried {
            Some(outcome) => outcome.annotate(ctx, output, EventName::SessionStart),
            None => output,
        })
    }
}

fn start_session(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
    {
        let HookInput::SessionStart(start) = input else {
            return Ok(HookOutput::silent());
        };
        // A check owed for a command of the last session comes first, so
        // the state told below is what was put back.
        let made_up = crate::guards::effects::make_up(ctx, None, false);
        let output = on_start(ctx, &start)?;
        Ok(match made_up {
            Some(told) => told.add_to(output, Some(EventName::SessionStart)),
            None => output,
        })
    }
}

fn on_start(ctx: &Ctx, start: &SessionStartInput) -> anyhow::Result<HookOutput> {
    {
        let source = start.source.as_deref().unwrap_or("startup");
        // A new process (or a cleared conversation): no turn of this
        // session is open, whatever a killed process left behind.
        let ended =
            crate::ralph::turns::end(ctx).and_then(|()| crate::ralph::turns::end_process(ctx));
        if let Err(error) = ended {
            eprintln!("ralph-session-start: cannot record the session's start: {error:#}");
        }
        // Writers killed mid-write leave hidden temp files; a session start is
        // a quiet moment to remove them.
        if ctx.store().root().is_dir() {
            let swept = ctx.store().sweep_stale_temps();
            ctx.debug(format_args!(
                "removed {swept} stale temp file(s) of killed writers"
            ));
        }
        // Warm the servers this project used before; never waits on them.
        crate::daemon::prestart(ctx);
        // What happened while no hook could tell the user: a turn the block
        // cap ended, a usage limit, the end of a woken loop.
        let transcript = start
            .common
            .transcript_path
            .as_deref()
            .map(std::path::Path::new);
        let told = loops::on_session_start(ctx, transcript).unwrap_or_else(|error| {
            ctx.debug(format_args!("cannot read the loop's notices: {error:#}"));
            Vec::new()
        });
        let sections: Vec<String> = [
            section(ctx, "loop", || loop_context(ctx, source)),
            section(ctx, "task", || crate::tasks::session_context(ctx)),
            section(ctx, "orchestrator", || {
                crate::orchestrator::session_context(ctx)
            }),
        ]
        .into_iter()
        .flatten()
        .collect();
        let told = (!told.is_empty()).then(|| told.join("\n"));
        if sections.is_empty() {
            return Ok(match told {
                Some(message) => HookOutput::silent().with_system_message(message),
                None => HookOutput::silent(),
            });
        }
        let mut text = String::new();
        if source == "compact" {
            text.push_str("[ralph-hooks] The conversation was just compacted. This is the state of the work you were doing:\n\n");
        } else {
            text.push_str("[ralph-hooks] State of the work in this project:\n\n");
        }
        text.push_str(&sections.join("\n\n"));
        let output = HookOutput::context(EventName::SessionStart, text);
        Ok(match told {
            Some(message) => output.with_system_message(message),
            None => output,
        })
    }
}

/// Runs one section builder; an error becomes one line, not a failure.
fn section(
    ctx: &Ctx,
    name: &str,
    build: impl FnOnce() -> anyhow::Result<Option<String>>,
) -> Option<String> {
    match build() {
        Ok(text) => text,
        Err(error) => {
            ctx.debug(format_args!(
                "session-start section {name} failed: {error:#}"
            ));
            Some(format!("({name} state could not be read: {error:#})"))
        }
    }
}

/// The running loop, for this session or not yet claimed by any.
pub fn loop_context(ctx: &Ctx, source: &str) -> anyhow::Result<Option<String>> {
    if !ctx.store().exists(LOOP_FILE) {
        return Ok(None);
    }
    let Some(state) = ctx.store().read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(None);
    };
    if !state.is_active() {
        return Ok(None);
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "RALPH LOOP {} ({}): {}",
        state.status.as_str(),
        state.id,
        state.goal
    );
    if let (Some(owner), Some(session)) = (&state.session_id, &ctx.session_id)
        && owner != session
    {
        let _ = writeln!(
            text,
            "It belongs to another session ({owner}); its stops are not controlled here, and it is not yours to end."
        );
        return Ok(Some(text.trim_end().to_string()));
    }
    if state.paused_by_usage_limit() {
        let resets = state
            .resets_at
            .map(|at| format!(", which resets at {}", at.format("%Y-%m-%d %H:%M UTC")))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "A usage limit paused it at iteration {}/{} (\"{}\"{resets}): it does not block your stops. The user's next message resumes it.",
            state.iteration,
            state.max_iterations,
            state.limit_message.as_deref().unwrap_or("usage limit")
        );
        return Ok(Some(text.trim_end().to_string()));
    }
    if state.status == LoopStatus::Paused {
        let _ = writeln!(
            text,
            "The user paused it at iteration {}/{}: it does not block your stops. Do not resume it yourself: only the user does.",
            state.iteration, state.max_iterations
        );
        return Ok(Some(text.trim_end().to_string()));
    }
    let _ = writeln!(
        text,
        "Iteration {}/{} (failed iterations so far / budget).",
        state.iteration, state.max_iterations
    );
    let _ = writeln!(text, "You cannot end your turn until all of these hold:");
    for line in state.condition_lines() {
        let _ = writeln!(text, "- {line}");
    }
    let budget_lines = budget::lines(&state.budget, &state.spend, state.active_secs(ctx.now()));
    if !budget_lines.is_empty() {
        let _ = writeln!(text, "Budget (the loop ends as FAILED when one runs out):");
        let _ = write!(text, "{}", budget::prompt_lines(&budget_lines));
    }
    if let Some(last) = state.history.last() {
        let _ = writeln!(
            text,
            "Last check ({}): still failing — {}",
            last.at.format("%Y-%m-%d %H:%M:%SZ"),
            last.failed.join(", ")
        );
        for run in last.checks.iter().filter(|r| !r.passed()) {
            let tail: Vec<&str> = run
                .tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if !tail.is_empty() {
                let _ = writeln!(
                    text,
                    "  `{}` ended with:\n{}",
                    run.command,
                    crate::util::text::indent(&tail.join("\n"), "    ")
                );
            }
        }
    }
    if let Some(promise) = &state.promise {
        let _ = writeln!(
            text,
            "To finish: when it is completely true, end your final message with exactly <promise>{promise}</promise>."
        );
    } else {
        let _ = writeln!(
            text,
            "To finish: make the conditions hold; the loop checks them each time you stop."
        );
    }
    let _ = writeln!(
        text,
        "Only the user ends the loop early; if you believe it should end, say so in your reply."
    );
    if source == "compact" {
        let _ = writeln!(text, "Continue the loop's work now.");
    }
    Ok(Some(text.trim_end().to_string()))
}
