//! `ralph-stop-loop-controller`: the Ralph loop at every Stop, and, when no
//! loop runs, task-step and todo continuation ([`crate::tasks::continuation`]).
//!
//! The hot path is "no loop": one `stat` of `loop.json` and we are done, so a
//! session without a loop pays about the cost of starting a process.

use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use crate::engine::loop_check::{self, Scope};
use crate::engine::settings::Settings;
use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput, StopInput};
use crate::hook::transcript;
use crate::ralph::loop_ctl::{self, Evidence, Ownership, StopDecision};
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::ralph::{checks, loops, promise, worktree};
use crate::tasks::continuation;

pub struct StopLoopController;

impl Hook for StopLoopController {
    const NAME: &'static str = "ralph-stop-loop-controller";
    const EVENTS: &'static [EventName] = &[EventName::Stop, EventName::SubagentStop];
    const HELP: &'static str = "\
ralph-stop-loop-controller — Claude Code Stop (and SubagentStop) hook

Reads one Stop hook JSON object on stdin. While a Ralph loop is RUNNING for
this session (`ralph-hooks loop start`), it evaluates the loop's completion
conditions (promise, check commands, LSP errors) and blocks the stop with a
follow-up prompt until they hold or the budget runs out. With no loop it
continues open task steps and todo items. SubagentStop: loops do not act on
subagents.

Output: nothing (allow), or {\"decision\":\"block\",\"reason\":…}; exit 1 with one
stderr line on bad input or an internal fault (never blocks).
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        match input {
            HookInput::Stop(stop) => on_stop(ctx, &stop),
            // A loop is about the main agent's turn; a subagent ending must
            // not run the checks or use an iteration.
            HookInput::SubagentStop(_) => Ok(HookOutput::silent()),
            _ => Ok(HookOutput::silent()),
        }
    }
}

fn on_stop(ctx: &Ctx, stop: &StopInput) -> anyhow::Result<HookOutput> {
    // Fast path: no loop file at all.
    if !ctx.store().exists(LOOP_FILE) {
        return continuation::on_stop(ctx, stop);
    }
    let Some(state) = ctx.store().read_json::<LoopState>(LOOP_FILE)? else {
        return continuation::on_stop(ctx, stop);
    };
    // A PAUSED loop (the user said "stop") never blocks: the stop goes on
    // to continuation, which holds on its own until the user's next prompt.
    if !state.is_running() {
        ctx.debug(format_args!(
            "loop {} is {}, not running",
            state.id,
            state.status.as_str()
        ));
        return continuation::on_stop(ctx, stop);
    }
    let ownership = loop_ctl::ownership(&state, ctx.session_id.as_deref());
    if ownership == Ownership::Other {
        ctx.debug(format_args!(
            "loop {} belongs to session {:?}, not {:?}: the loop leaves this stop alone",
            state.id, state.session_id, ctx.session_id
        ));
        // Another session's loop is none of this session's business; its own
        // task steps and todos still are.
        return continuation::on_stop(ctx, stop);
    }
    let running = stop.running_background_tasks();
    if running > 0 {
        ctx.debug(format_args!(
            "{running} background task(s) still running: holding without an iteration"
        ));
        return Ok(HookOutput::silent());
    }

    // Evidence is gathered without the lock: checks may take minutes, and the
    // CLI must still be able to cancel meanwhile.
    let snapshot = worktree::snapshot(&ctx.project_root, &ctx.state_root);
    let (evidence, condition_ms) = gather_evidence(ctx, &state, stop, snapshot.as_ref())?;
    let outcome = stop_outcome(&state, &evidence, &condition_ms);

    let store = ctx.store();
    let locked = store.lock(LOOP_FILE)?;
    let Some(mut current) = locked.load_json::<LoopState>()? else {
        return Ok(HookOutput::silent());
    };
    if current.id != state.id || !current.is_running() {
        ctx.debug(format_args!(
            "loop changed while checking (now {} {}): no decision",
            current.id,
            current.status.as_str()
        ));
        return Ok(HookOutput::silent());
    }
    if ownership == Ownership::Claim {
        current.session_id = ctx.session_id.clone();
        ctx.debug(format_args!(
            "loop {} claimed by session {:?}",
            current.id, ctx.session_id
        ));
    }
    let (mut next, decision) = loop_ctl::decide(&current, &evidence, ctx.now());
    if snapshot.is_some() {
        next.worktree = snapshot;
    }
    locked.save_json(&next)?;
    drop(locked);

    let iteration = next.iteration;
    let output = match decision {
        StopDecision::Block {
            reason,
            system_message,
        } => {
            log_event(
                ctx,
                &next,
                "loop_iteration",
                with(
                    json!({"iteration": iteration, "failed": last_failed(&next)}),
                    &outcome,
                ),
            );
            HookOutput::block(reason).with_system_message(system_message)
        }
        StopDecision::Complete { system_message } => {
            loops::archive(ctx, &next)?;
            log_event(
                ctx,
                &next,
                "loop_completed",
                with(
                    json!({"iteration": iteration, "reason": next.completion_reason}),
                    &outcome,
                ),
            );
            HookOutput::silent().with_system_message(system_message)
        }
        StopDecision::Fail { system_message } => {
            loops::archive(ctx, &next)?;
            log_event(
                ctx,
                &next,
                "loop_failed",
                with(
                    json!({"iteration": iteration, "reason": next.completion_reason, "failed": last_failed(&next)}),
                    &outcome,
                ),
            );
            HookOutput::silent().with_system_message(system_message)
        }
    };
    Ok(output)
}

/// What one Stop found, for its event: when the iteration began (the
/// previous Stop, else the loop's start) and when the loop did, each
/// condition's result and time (`checks`), and the problems fixed since the
/// previous check. The exporter turns these into spans and metrics.
fn stop_outcome(
    state: &LoopState,
    evidence: &Evidence,
    condition_ms: &[u64],
) -> serde_json::Map<String, serde_json::Value> {
    let stamp = |time: chrono::DateTime<chrono::Utc>| {
        time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let since = state
        .history
        .last()
        .map(|entry| entry.at)
        .unwrap_or(state.started_at);
    let mut checks = Vec::new();
    if let Some(given) = evidence.promise_given {
        checks.push(json!({"kind": "promise", "name": "promise", "passed": given}));
    }
    for run in &evidence.checks {
        checks.push(json!({"kind": "command", "name": run.command, "passed": run.passed(),
                           "exitCode": run.exit_code, "timedOut": run.timed_out, "durationMs": run.duration_ms}));
    }
    let mut fixed = 0;
    for (condition, ms) in evidence.conditions.iter().zip(condition_ms) {
        let record = &condition.record;
        let (errors, warnings) = crate::ralph::loop_state::record_counts(record);
        let files = record
            .get("checked_files")
            .and_then(serde_json::Value::as_u64)
            .or_else(|| {
                record
                    .get("files")
                    .and_then(|f| f.as_object())
                    .map(|f| f.len() as u64)
            });
        let fixed_here = record
            .get("fixed_since_previous")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        fixed += fixed_here;
        checks.push(
            json!({"kind": condition.name, "name": condition.name, "passed": condition.holds,
                           "inconclusive": condition.inconclusive, "durationMs": ms, "files": files,
                           "errors": errors, "warnings": warnings, "fixed": fixed_here}),
        );
    }
    let mut fields = serde_json::Map::new();
    fields.insert("since".into(), json!(stamp(since)));
    fields.insert("startedAt".into(), json!(stamp(state.started_at)));
    fields.insert("maxIterations".into(), json!(state.max_iterations));
    fields.insert("checks".into(), json!(checks));
    fields.insert("problemsFixed".into(), json!(fixed));
    fields
}

fn with(
    mut data: serde_json::Value,
    fields: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    if let Some(object) = data.as_object_mut() {
        for (key, value) in fields {
            object.insert(key.clone(), value.clone());
        }
    }
    data
}

fn last_failed(state: &LoopState) -> Vec<String> {
    state
        .history
        .last()
        .map(|entry| entry.failed.clone())
        .unwrap_or_default()
}

fn log_event(ctx: &Ctx, state: &LoopState, event: &str, mut data: serde_json::Value) {
    data["event"] = json!(event);
    // The decision is already saved; a full disk must not turn it into a fault.
    if let Err(error) = ctx.log_event("loop_event", ("loopId", &state.id), data) {
        eprintln!("ralph-stop-loop-controller: warning: cannot record {event}: {error:#}");
    }
}

fn gather_evidence(
    ctx: &Ctx,
    state: &LoopState,
    stop: &StopInput,
    snapshot: Option<&worktree::Snapshot>,
) -> anyhow::Result<(Evidence, Vec<u64>)> {
    let promise_given = state.promise.as_deref().map(|wanted| {
        let message = stop
            .last_assistant_message
            .clone()
            .filter(|text| !text.trim().is_empty())
            .or_else(|| {
                stop.common
                    .transcript_path
                    .as_deref()
                    .and_then(|p| transcript::last_assistant_text(p.as_ref()))
            })
            .unwrap_or_default();
        let given = promise::is_given(&message, wanted);
        ctx.debug(format_args!("promise {wanted:?} given: {given}"));
        given
    });
    let timeout = Duration::from_secs(state.check_timeout_secs.max(1));
    let mut runs = Vec::new();
    for command in &state.checks {
        let run = checks::run(&ctx.project_root, command, timeout)
            .with_context(|| format!("check `{command}` could not run"))?;
        ctx.debug(format_args!(
            "check `{command}`: {} in {} ms",
            run.describe_status(),
            run.duration_ms
        ));
        runs.push(run);
    }
    let mut conditions = Vec::new();
    // Each condition's time, for the loop's events (and so its traces).
    let mut condition_ms = Vec::new();
    let settings = Settings::load(ctx);
    for (wanted, scope) in [
        (state.diagnostics, Scope::Touched),
        (state.project, Scope::Project),
    ] {
        if !wanted {
            continue;
        }
        let started = std::time::Instant::now();
        // The check runs where the warm servers are (the daemon); without
        // one, in a child `ralph-hooks check`: this binary carries none of
        // the check's code (the ast-grep grammars alone would double its
        // size and start-up).
        let checked = loop_check::options(ctx, &settings, state, scope).map(|options| {
            crate::daemon::project_check(ctx, &options, || {
                crate::daemon::check_in_child(ctx, &options)
            })
        });
        conditions.push(loop_check::condition(
            state,
            scope,
            checked,
            loop_check::caps(&settings),
        ));
        condition_ms.push(started.elapsed().as_millis() as u64);
    }
    let files_changed = match (state.worktree.as_ref(), snapshot) {
        (Some(before), Some(after)) => worktree::changed(&ctx.project_root, before, after),
        // First Stop of the loop: everything dirty now counts as this
        // iteration's change only if we had a baseline; we did not.
        _ => Vec::new(),
    };
    let evidence = Evidence {
        promise_given,
        checks: runs,
        conditions,
        files_changed,
        stop_hook_active: stop.stop_hook_active,
        block_cap: block_cap(),
    };
    Ok((evidence, condition_ms))
}

/// Claude Code's own cap on consecutive Stop blocks, as configured for it.
fn block_cap() -> u32 {
    std::env::var("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(loop_ctl::CLAUDE_BLOCK_CAP)
}
