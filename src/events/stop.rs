//! `ralph-stop-loop-controller`: the Ralph loop at every Stop, and, when no
//! loop runs, task-step and todo continuation ([`crate::tasks::continuation`]).
//!
//! The binary has two registrations, told apart by an argument:
//! - plain: an ordinary Stop hook (and SubagentStop). It blocks the stop of
//!   a running loop with the follow-up prompt (JSON on exit 0), as Claude
//!   Code's block cap allows: 8 blocks in a row.
//! - `--rewake`, registered with `asyncRewake: true`, for Stop and
//!   StopFailure. Claude Code runs it in the background and lets the turn
//!   end; for a loop started with `--rewake` it evaluates the Stop and wakes
//!   the session with the follow-up: exit 2, the follow-up on stderr, the
//!   one place in this project where exit 2 is right
//!   ([`crate::hook::Hook::ASYNC_REWAKE`]). No block piles up, so the cap is
//!   never met. In plain `claude -p` the same exit 2 is an ordinary blocking
//!   Stop, so the loop still works there. For StopFailure (an API error
//!   ended the turn) it records the failure — a usage limit pauses the loop
//!   — and, when `loop.auto_resume` is on and the reset time is known,
//!   waits for the limit to reset and wakes the session to go on.
//!
//! Each registration leaves the other's loops alone. The hot path is "no
//! loop": one `stat` of `loop.json` and we are done, so a session without a
//! loop pays about the cost of starting a process.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::engine::loop_check::{self, Scope};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput, StopFailureInput, StopInput};
use crate::hook::transcript::{self, CapRow};
use crate::hook::{Hook, REWAKE_ARG};
use crate::ralph::budget::{BudgetConfig, PriceTable};
use crate::ralph::loop_ctl::{self, Evidence, IterationSpend, Ownership, StopDecision};
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::ralph::loops::{self, FailureEffect, LoopConfig, TurnFailure};
use crate::ralph::notify::{self, Channel};
use crate::ralph::{checks, hold, limits, promise, unrecorded, worktree};
use crate::tasks::continuation;

/// The binary's `main`: `--rewake` selects the `asyncRewake` registration.
pub fn main() -> ExitCode {
    if std::env::args().skip(1).any(|arg| arg == REWAKE_ARG) {
        crate::events::run::<StopRewake>()
    } else {
        crate::events::run::<StopLoopController>()
    }
}

pub struct StopLoopController;

impl Hook for StopLoopController {
    const NAME: &'static str = "ralph-stop-loop-controller";
    const EVENTS: &'static [EventName] = &[
        EventName::Stop,
        EventName::SubagentStop,
        EventName::StopFailure,
    ];
    const HELP: &'static str = "\
ralph-stop-loop-controller — Claude Code Stop (SubagentStop, StopFailure) hook

Reads one Stop hook JSON object on stdin. While a Ralph loop is RUNNING for
this session (`ralph-hooks loop start`), it evaluates the loop's completion
conditions (promise, check commands, LSP errors) and blocks the stop with a
follow-up prompt until they hold or a budget (iterations, tokens, time,
estimated cost) runs out. With no loop it continues open task steps and todo
items. SubagentStop: loops do not act on subagents. A loop started with
`--rewake` is left to the `--rewake` registration.

Output: nothing (allow), or {\"decision\":\"block\",\"reason\":…}; exit 1 with one
stderr line on bad input or an internal fault (never blocks).
With --rewake: the asyncRewake registration (Stop and StopFailure): see
`ralph-stop-loop-controller --rewake --help`.
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        match input {
            HookInput::Stop(stop) => {
                // A put-back that failed before (a full disk) is tried
                // again first: the loop's own state may be what it restores.
                let retried = crate::guards::effects::pending::retry(ctx);
                // A Stop that cannot judge or record a running loop blocks
                // from the loop as read: an exit 1 would let it stop.
                let mut held = false;
                let judged = on_stop(ctx, &stop, Mode::Blocking, &mut held);
                let output = unrecorded::or_block(ctx, judged);
                let output = crate::guards::effects::pending::at_stop(ctx, retried, output);
                // The turn ends when this Stop lets it, or when Claude Code
                // overrides this block (its cap): either way the session's
                // next prompt is at a turn's start. A Stop held for
                // background tasks does not end it: the task's notification
                // goes on with it (attack finding G12).
                if !held
                    && output
                        .as_ref()
                        .is_ok_and(|output| output.decision.is_none() || block_overridden(ctx))
                {
                    end_turn(ctx);
                }
                output
            }
            // A loop is about the main agent's turn; a subagent ending must
            // not run the checks or use an iteration. The main agent's
            // calls may still run: a check owed is made, the snapshot kept.
            HookInput::SubagentStop(_) => Ok(with_made_up(
                crate::guards::effects::make_up(ctx, None, false),
                HookOutput::silent(),
            )),
            HookInput::StopFailure(failure) => {
                crate::util::process::finish_despite_termination();
                // An API error is Claude Code's to report: the same payload
                // fed to the binary by the agent's command pauses nothing
                // and closes nothing.
                if crate::ralph::turns::forged(ctx) {
                    ctx.debug(format_args!(
                        "a StopFailure fed to the hook by a command of the agent's: ignored"
                    ));
                    return Ok(HookOutput::silent());
                }
                // The turn is over; the output is ignored, the put-back is not.
                let _ = crate::guards::effects::make_up_at_turn_end(ctx);
                end_turn(ctx);
                record_stop_failure(ctx, &failure)?;
                Ok(HookOutput::silent())
            }
            _ => Ok(HookOutput::silent()),
        }
    }
}

/// The session's turn ends here: a prompt without `source` after this is
/// at a turn's start (see [`crate::ralph::turns`]). A failure to record it
/// is said and changes nothing else.
fn end_turn(ctx: &Ctx) {
    if let Err(error) = crate::ralph::turns::end(ctx) {
        eprintln!("ralph-stop-loop-controller: cannot record the end of the turn: {error:#}");
    }
}

/// Whether the block just given is one Claude Code overrides: the loop's
/// blocks in a row now exceed the cap Claude Code honours, so the turn
/// ends all the same.
fn block_overridden(ctx: &Ctx) -> bool {
    let cap = block_cap();
    cap > 0
        && ctx
            .store()
            .read_json::<LoopState>(LOOP_FILE)
            .ok()
            .flatten()
            .is_some_and(|state| !state.rewake && state.consecutive_blocks > cap)
}

/// The `asyncRewake` registration: `ralph-stop-loop-controller --rewake`.
pub struct StopRewake;

impl Hook for StopRewake {
    const NAME: &'static str = "ralph-stop-loop-controller";
    const EVENTS: &'static [EventName] = &[EventName::Stop, EventName::StopFailure];
    const ASYNC_REWAKE: bool = true;
    const HELP: &'static str = "\
ralph-stop-loop-controller --rewake — the asyncRewake Stop and StopFailure hook

Registered with \"asyncRewake\": true. Claude Code runs it in the background
and lets the turn end. Stop: for a Ralph loop started with `--rewake`, it
evaluates the loop like the plain hook and, while a condition fails, wakes
the session with the follow-up prompt: exit 2 with the prompt on stderr (the
wake signal of an asyncRewake hook; in plain `claude -p` an ordinary blocking
Stop). Other loops and sessions without a loop: nothing.
StopFailure (an API error ended the turn): a usage limit pauses the running
loop (`paused_by: usage_limit`, with the reset time when known), another
error is recorded; no iteration is spent, the event is logged and the webhook
notified. With `loop.auto_resume` in .claude/ralph-hooks.json it waits for
the limit to reset and wakes the session (exit 2) to go on.

Otherwise exit 0; exit 1 with one stderr line on bad input or an internal
fault (never blocks).
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        match input {
            HookInput::Stop(stop) => on_stop(ctx, &stop, Mode::Rewake, &mut false),
            HookInput::StopFailure(_) => Ok(auto_resume(ctx).unwrap_or_else(HookOutput::silent)),
            _ => Ok(HookOutput::silent()),
        }
    }
}

/// Which registration is answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The ordinary Stop hook: blocks with JSON.
    Blocking,
    /// The `asyncRewake` hook: lets the turn end, wakes the session.
    Rewake,
}

/// The turn is over: the checks still owed for its Bash calls (a post hook
/// killed, a failure no hook saw) run first, so what the loop is judged on
/// is what was put back — a loop cancelled and replaced by an easy one in
/// a call whose check never ran is the old loop again here.
/// `held`: set when the Stop was held for background tasks.
fn on_stop(ctx: &Ctx, stop: &StopInput, mode: Mode, held: &mut bool) -> anyhow::Result<HookOutput> {
    // Claude Code (or another harness) runs no Stop hook while a tool call
    // runs: a Stop fed to the binary by the agent's own command judges and
    // records nothing. Counted, a few of them in a row ended the loop as
    // stagnant or out of iterations within a second (harness attack
    // H-11). The checks owed for running calls are made and kept.
    if ctx.store().exists(LOOP_FILE) && crate::ralph::turns::forged(ctx) {
        ctx.debug(format_args!(
            "a Stop fed to the hook by a command of the agent's: nothing judged or recorded"
        ));
        let made_up = crate::guards::effects::make_up(ctx, None, false);
        return Ok(with_made_up(made_up, HookOutput::silent()));
    }
    let made_up = crate::guards::effects::make_up_at_turn_end(ctx);
    // Before the loop's checks run (project code, walled in sandbox mode):
    // no protected file keeps a second name they could write it through.
    if ctx.store().exists(LOOP_FILE) {
        for line in crate::guards::give_protected_files_own_inodes(ctx) {
            eprintln!("ralph-hooks guard: {line}");
        }
    }
    let output = judge_stop(ctx, stop, mode, held)?;
    Ok(with_made_up(made_up, output))
}

/// What a made-up check found, added to a Stop answer: for the user, and
/// for Claude in a block's reason (a Stop that lets the turn end tells
/// Claude nothing).
fn with_made_up(
    made_up: Option<crate::guards::effects::Told>,
    mut output: HookOutput,
) -> HookOutput {
    let Some(mut told) = made_up else {
        return output;
    };
    if let Some(reason) = output.reason.take() {
        told.for_claude.push(reason);
        output.reason = Some(crate::hook::protocol::cap_chars(
            told.for_claude.join("\n\n"),
        ));
    }
    told.for_claude.clear();
    told.add_to(output, None)
}

fn judge_stop(
    ctx: &Ctx,
    stop: &StopInput,
    mode: Mode,
    held: &mut bool,
) -> anyhow::Result<HookOutput> {
    // What a Stop without a loop of ours does: the plain hook drives task
    // steps and todos; the rewake hook leaves that to it.
    let no_loop = |ctx: &Ctx| match mode {
        Mode::Blocking => continuation::on_stop(ctx, stop),
        Mode::Rewake => Ok(HookOutput::silent()),
    };
    // Fast path: no loop file at all.
    if !ctx.store().exists(LOOP_FILE) {
        return no_loop(ctx);
    }
    let Some(state) = ctx.store().read_json::<LoopState>(LOOP_FILE)? else {
        return no_loop(ctx);
    };
    // A PAUSED loop (the user said "stop") never blocks: the stop goes on
    // to continuation, which holds on its own until the user's next prompt.
    if !state.is_running() {
        ctx.debug(format_args!(
            "loop {} is {}, not running",
            state.id,
            state.status.as_str()
        ));
        return no_loop(ctx);
    }
    let mut ownership = loop_ctl::ownership(&state, ctx.session_id.as_deref());
    // A Stop under a session id other than the one whose turn is open in
    // this Claude Code process is made up: it claims nothing (attack
    // finding G7).
    if ownership == Ownership::Claim && crate::ralph::turns::foreign_session(ctx) {
        ownership = Ownership::Other;
    }
    if ownership == Ownership::Other {
        ctx.debug(format_args!(
            "loop {} belongs to session {:?}, not {:?}: the loop leaves this stop alone",
            state.id, state.session_id, ctx.session_id
        ));
        // Another session's loop is none of this session's business; its own
        // task steps and todos still are.
        return no_loop(ctx);
    }
    if state.rewake != (mode == Mode::Rewake) {
        // Both registrations see every Stop; the loop's own mode says which
        // one answers. The loop still owns this session's stops, so no
        // continuation either.
        ctx.debug(format_args!(
            "loop {} is for the {} registration",
            state.id,
            if state.rewake { "--rewake" } else { "plain" }
        ));
        return Ok(HookOutput::silent());
    }
    let running = stop.running_background_tasks();
    let mut background_note = None;
    if running > 0 {
        match hold::at_stop(ctx, &state, running) {
            hold::Hold::Held(output) => {
                ctx.debug(format_args!(
                    "{running} background task(s) still running: holding without an iteration"
                ));
                *held = true;
                return Ok(output);
            }
            hold::Hold::Judge(note) => background_note = Some(note),
        }
    }
    // A limit notice as the turn's last message (should a client send a
    // Stop for it): the turn did no work, so it spends no iteration.
    if let Some(text) = stop.last_assistant_message.as_deref()
        && limits::is_limit_notice(text)
    {
        let failure = TurnFailure {
            error: "rate_limit".into(),
            message: text.trim().to_string(),
            resets_at: reset_time(ctx, stop.common.transcript_path.as_deref(), text),
        };
        record_failure(ctx, &failure)?;
        return Ok(HookOutput::silent());
    }
    let transcript_path = stop
        .common
        .transcript_path
        .as_deref()
        .map(std::path::Path::new);
    // The turn before this one ended at Claude Code's block cap: its row
    // is in the transcript (no hook input says so).
    let cap_row = match transcript_path {
        Some(path) if !stop.stop_hook_active && state.consecutive_blocks > 0 => {
            transcript::cap_row_after(path, loops::cap_search_start(&state))
        }
        _ => None,
    };

    // Evidence is gathered without the lock: checks may take minutes, and the
    // CLI must still be able to cancel meanwhile.
    if let (Some(path), Some(last)) = (transcript_path, stop.last_assistant_message.as_deref())
        && !state.budget.is_empty()
    {
        // Claude Code may run the hook before the turn's last message (and
        // its usage) is in the transcript: wait a moment for it, so each
        // iteration is charged what it spent and the 80 % warning comes at
        // the Stop that crossed it. Late lines are counted next time anyway.
        let counted_to = state
            .usage_cursor
            .as_ref()
            .filter(|cursor| std::path::Path::new(&cursor.path) == path)
            .map_or(0, |cursor| cursor.offset);
        transcript::wait_for_last_text(path, counted_to, last, TRANSCRIPT_CATCH_UP);
    }
    let spend = iteration_spend(ctx, &state, transcript_path);
    let snapshot = worktree::snapshot(&ctx.project_root, &ctx.state_root);
    let (mut evidence, condition_ms) = gather_evidence(ctx, &state, stop, snapshot.as_ref())?;
    evidence.spend = spend;
    let outcome = stop_outcome(&state, &evidence, &condition_ms);

    let store = ctx.store();
    // The lock held (by a process the agent left running) or the file
    // unreadable now: the decision is made from the loop as read before.
    let unrecordable = |error: anyhow::Error| -> anyhow::Result<HookOutput> {
        if mode == Mode::Rewake {
            return Err(error);
        }
        let mut claimed = state.clone();
        if ownership == Ownership::Claim {
            claimed.session_id = ctx.session_id.clone();
        }
        match loop_ctl::decide(&claimed, &evidence, ctx.now()).1 {
            StopDecision::Block { reason, .. } => {
                Ok(unrecorded::block(&state, Some(reason), &error))
            }
            _ => Err(error),
        }
    };
    let locked = match store.lock(LOOP_FILE) {
        Ok(locked) => locked,
        Err(error) => return unrecordable(error),
    };
    let loaded = match locked.load_json::<LoopState>() {
        Ok(loaded) => loaded,
        Err(error) => return unrecordable(error),
    };
    // A check that ran outside the confinement could write the loop's
    // state (`ralph-hooks loop cancel` in the test script): the loop this
    // Stop judges is the one it held before the checks, put back if they
    // changed its terms.
    let unconfined = evidence.checks.iter().any(|run| !run.confined);
    let mut restored_after_check = false;
    let mut current = match loaded {
        Some(current) if unconfined && terms_changed(&state, &current) => {
            restored_after_check = true;
            state.clone()
        }
        Some(current) => current,
        None if unconfined => {
            restored_after_check = true;
            state.clone()
        }
        None => return Ok(HookOutput::silent()),
    };
    // For a rewake loop, another Stop that decided meanwhile (a woken turn's
    // Stop overtaking a slow check in the background) has the newer
    // evidence: its decision stands. Plain Stops each count, as before.
    let overtaken = mode == Mode::Rewake
        && (current.history.len() != state.history.len() || current.iteration != state.iteration);
    if current.id != state.id || !current.is_running() || overtaken {
        ctx.debug(format_args!(
            "loop changed while checking (now {} {}, iteration {}): no decision",
            current.id,
            current.status.as_str(),
            current.iteration
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
    let capped = cap_row
        .as_ref()
        .map(|row: &CapRow| loops::record_cap(ctx, &mut current, row));
    let (mut next, decision) = loop_ctl::decide(&current, &evidence, ctx.now());
    if snapshot.is_some() {
        next.worktree = snapshot;
    }
    if running == 0 {
        hold::reset(&mut next);
    }
    let finished = !matches!(decision, StopDecision::Block { .. });
    if mode == Mode::Rewake && finished {
        // A woken session shows nothing a background hook prints: the user
        // hears of the end at their next prompt (and by notification).
        let message = match &decision {
            StopDecision::Complete { system_message } | StopDecision::Fail { system_message } => {
                system_message.clone()
            }
            StopDecision::Block { .. } => String::new(),
        };
        next.push_notice(format!("ralph-hooks: {message}"));
    }
    if let Err(error) = locked.save_json(&next) {
        drop(locked);
        // A full disk: the block computed still stands, said unrecorded.
        return match decision {
            StopDecision::Block { reason, .. } if mode == Mode::Blocking => {
                Ok(unrecorded::block(&current, Some(reason), &error))
            }
            _ => Err(error),
        };
    }
    drop(locked);
    let restored_note = restored_after_check.then(|| {
        log_event(
            ctx,
            &next,
            "protected_restored",
            json!({"files": [LOOP_FILE], "by": "check"}),
        );
        "ralph-hooks: the loop's state changed while its check ran outside any sandbox \
         (no usable bubblewrap here) and was put back: the loop goes on. If you changed it \
         yourself meanwhile, do it again now."
            .to_string()
    });

    let channel = Channel::OutputAndWebhook;
    let mut output = match decision {
        StopDecision::Block {
            reason,
            system_message,
        } => {
            log_event(
                ctx,
                &next,
                "loop_iteration",
                with(
                    json!({"iteration": next.iteration, "failed": last_failed(&next)}),
                    &outcome,
                ),
            );
            let reason = match &background_note {
                Some(note) => crate::hook::protocol::cap_chars(format!("{reason}\n\n{note}")),
                None => reason,
            };
            let mut output = HookOutput::block(reason).with_system_message(system_message);
            for kind in next.budget_warned.difference(&state.budget_warned) {
                let _ = ctx.log_event(
                    "loop_event",
                    ("loopId", &next.id),
                    json!({"event": "loop_budget_warning", "budget": kind, "iteration": next.iteration}),
                );
                let sequence = notify::notify(
                    ctx,
                    notify::Event::BudgetWarning,
                    &next,
                    &format!("80 % of the {kind} budget is used"),
                    channel,
                );
                output = output.with_terminal_sequence(sequence);
            }
            output
        }
        StopDecision::Complete { system_message } => {
            loops::archive(ctx, &next)?;
            let system_message = with_receipt(ctx, &next, system_message, mode);
            log_event(
                ctx,
                &next,
                "loop_completed",
                with(
                    json!({"iteration": next.iteration, "reason": next.completion_reason}),
                    &outcome,
                ),
            );
            let sequence = notify::notify(
                ctx,
                notify::Event::Completed,
                &next,
                &system_message,
                channel,
            );
            HookOutput::silent()
                .with_system_message(system_message)
                .with_terminal_sequence(sequence)
        }
        StopDecision::Fail { system_message } => {
            loops::archive(ctx, &next)?;
            let system_message = with_receipt(ctx, &next, system_message, mode);
            log_event(
                ctx,
                &next,
                "loop_failed",
                with(
                    json!({"iteration": next.iteration, "reason": next.completion_reason,
                           "detail": next.completion_detail, "failed": last_failed(&next)}),
                    &outcome,
                ),
            );
            let sequence =
                notify::notify(ctx, notify::Event::Failed, &next, &system_message, channel);
            HookOutput::silent()
                .with_system_message(system_message)
                .with_terminal_sequence(sequence)
        }
    };
    if let Some(note) = restored_note {
        output = output.append_system_message(&note);
    }
    if let Some(message) = capped {
        let sequence = notify::notify(ctx, notify::Event::Capped, &next, &message, channel);
        let after = output.system_message.take();
        output = output
            .with_system_message(message)
            .with_terminal_sequence(sequence);
        if let Some(after) = after {
            output = output.append_system_message(&after);
        }
    }
    Ok(output)
}

/// Writes the finished loop's completion receipt (after its state is
/// saved) and names it at the end of `message`, which the user and the
/// notification get; a woken session's user hears of it at their next
/// prompt, beside the end (a notice). A receipt that cannot be written is
/// said on stderr; the loop's end stands.
fn with_receipt(ctx: &Ctx, state: &LoopState, message: String, mode: Mode) -> String {
    let Some(sentence) =
        crate::receipts::record::write_and_name(ctx, state, StopLoopController::NAME)
    else {
        return message;
    };
    if mode == Mode::Rewake
        && let Err(error) = loops::add_notice(ctx, &state.id, format!("ralph-hooks: {sentence}"))
    {
        eprintln!(
            "{}: warning: cannot queue the receipt's notice: {error:#}",
            StopLoopController::NAME
        );
    }
    format!("{message}\n{sentence}")
}

/// Whether `after` is another loop than `before`, or the same on other
/// terms: its identity, status, goal, conditions, iteration limit or
/// budgets. Not the iteration count: parallel Stops each count one while
/// this one's check runs, and putting the loop back would lose theirs.
fn terms_changed(before: &LoopState, after: &LoopState) -> bool {
    let terms = |state: &LoopState| {
        json!([
            state.id,
            state.status.as_str(),
            state.goal,
            state.promise,
            state.checks,
            state.check_timeout_secs,
            state.diagnostics,
            state.no_warnings,
            state.project,
            state.paths,
            state.max_iterations,
            state.rewake,
            serde_json::to_value(&state.budget).unwrap_or_default(),
        ])
    };
    terms(before) != terms(after)
}

/// How long a Stop of a loop with a budget waits for the transcript to
/// hold the turn's last message.
const TRANSCRIPT_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(500);

/// The tokens and estimated cost of this iteration: the session's
/// transcript entries since the previous count (or the loop's start).
fn iteration_spend(
    ctx: &Ctx,
    state: &LoopState,
    transcript_path: Option<&std::path::Path>,
) -> IterationSpend {
    let Some(path) = transcript_path else {
        return IterationSpend::default();
    };
    let since = state.started_at;
    match transcript::usage_since(
        path,
        state.usage_cursor.as_ref(),
        since,
        ctx.session_id.as_deref(),
    ) {
        Ok(read) => {
            let config = ctx
                .config()
                .section::<BudgetConfig>("budget")
                .unwrap_or_else(|error| {
                    eprintln!(
                        "ralph-stop-loop-controller: warning: using the built-in prices: {error:#}"
                    );
                    BudgetConfig::default()
                });
            let cost = PriceTable::new(&config).cost(&read.by_model);
            let tokens = read.total();
            ctx.debug(format_args!(
                "iteration spent {} tokens (~${cost:.4}) by {} model(s)",
                tokens.total(),
                read.by_model.len()
            ));
            IterationSpend {
                tokens: Some(tokens),
                cost_usd: Some(cost),
                cursor: Some(read.cursor),
                truncated: read.truncated,
            }
        }
        Err(error) => {
            ctx.debug(format_args!(
                "cannot count tokens in {}: {error}",
                path.display()
            ));
            IterationSpend::default()
        }
    }
}

/// StopFailure: an API error ended the turn. Records it in the running
/// loop (a usage limit pauses it) and notifies.
fn record_stop_failure(ctx: &Ctx, input: &StopFailureInput) -> anyhow::Result<()> {
    let text = input
        .last_assistant_message
        .clone()
        .filter(|text| !text.trim().is_empty());
    let row = input
        .common
        .transcript_path
        .as_deref()
        .and_then(|path| transcript::last_api_error(std::path::Path::new(path)));
    let message = text
        .or_else(|| row.as_ref().map(|row| row.text.clone()))
        .unwrap_or_default();
    let error = input
        .error
        .clone()
        .or_else(|| row.as_ref().and_then(|row| row.error.clone()))
        .unwrap_or_else(|| "unknown".into());
    let resets_at = row
        .as_ref()
        .and_then(|row| row.resets_at)
        .or_else(|| limits::resets_at_from_text(&message, ctx.now()));
    let failure = TurnFailure {
        error,
        message,
        resets_at,
    };
    record_failure(ctx, &failure)?;
    Ok(())
}

/// The reset time of a limit notice: the transcript's row, else the text.
fn reset_time(ctx: &Ctx, transcript_path: Option<&str>, text: &str) -> Option<DateTime<Utc>> {
    transcript_path
        .and_then(|path| transcript::last_api_error(std::path::Path::new(path)))
        .and_then(|row| row.resets_at)
        .or_else(|| limits::resets_at_from_text(text, ctx.now()))
}

/// Records a failed turn and notifies; the loop when a limit paused it.
fn record_failure(ctx: &Ctx, failure: &TurnFailure) -> anyhow::Result<Option<LoopState>> {
    let effect = loops::on_turn_failure(ctx, failure)?;
    let (event, state) = match effect {
        FailureEffect::None => {
            ctx.debug(format_args!(
                "API failure {:?} with no running loop of this session: nothing to record",
                failure.error
            ));
            return Ok(None);
        }
        FailureEffect::Paused(state) => (notify::Event::UsageLimit, state),
        FailureEffect::Recorded(state) => (notify::Event::ApiFailure, state),
    };
    notify::notify(ctx, event, &state, &failure.message, Channel::WebhookOnly);
    Ok((event == notify::Event::UsageLimit).then_some(*state))
}

/// How long the auto-resume may wait: under the StopFailure registration's
/// timeout (six hours), after which Claude Code kills the hook.
const MAX_AUTO_RESUME_WAIT: Duration = Duration::from_secs(6 * 3600 - 5 * 60);

/// How often a waiting auto-resume looks whether the user resumed or
/// cancelled the loop meanwhile.
const AUTO_RESUME_POLL: Duration = Duration::from_secs(15);

/// How long the auto-resume hook waits for the ordinary StopFailure hook,
/// which runs beside it, to record the pause.
const PAUSE_RECORD_WAIT: Duration = Duration::from_secs(10);

/// The loop the ordinary StopFailure hook paused for a usage limit, once
/// it has: that hook runs at the same time as this one.
fn paused_by_limit(ctx: &Ctx) -> Option<LoopState> {
    let started = std::time::Instant::now();
    loop {
        let state = ctx.store().read_json::<LoopState>(LOOP_FILE).ok().flatten();
        if let Some(state) = state
            && state.paused_by_usage_limit()
            && loop_ctl::ownership(&state, ctx.session_id.as_deref()) != Ownership::Other
        {
            return Some(state);
        }
        if started.elapsed() >= PAUSE_RECORD_WAIT {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The `--rewake` StopFailure registration, with `loop.auto_resume`: waits
/// until the limit resets (plus a margin), then resumes the loop and
/// returns the wake-up (exit 2 from this asyncRewake hook wakes the
/// session); `None` when it is off, no loop was paused by a limit, the
/// reset time is unknown or too far, or the loop changed meanwhile.
fn auto_resume(ctx: &Ctx) -> Option<HookOutput> {
    let config = LoopConfig::load(ctx);
    if !config.auto_resume {
        return None;
    }
    let paused = &paused_by_limit(ctx)?;
    let (Some(resets_at), Some(paused_at)) = (paused.resets_at, paused.paused_at) else {
        ctx.debug(format_args!(
            "auto-resume: the limit's reset time is unknown; the user's next prompt resumes the loop"
        ));
        return None;
    };
    let deadline = resets_at + chrono::Duration::seconds(config.auto_resume_margin_secs() as i64);
    let wait = (deadline - Utc::now()).to_std().unwrap_or_default();
    if wait > MAX_AUTO_RESUME_WAIT {
        ctx.debug(format_args!(
            "auto-resume: the limit resets in {} s, past what this hook may wait",
            wait.as_secs()
        ));
        return None;
    }
    loop {
        let left = (deadline - Utc::now()).to_std().unwrap_or_default();
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(AUTO_RESUME_POLL));
        let still = ctx
            .store()
            .read_json::<LoopState>(LOOP_FILE)
            .ok()
            .flatten()
            .is_some_and(|state| {
                state.id == paused.id
                    && state.paused_by_usage_limit()
                    && state.paused_at == Some(paused_at)
            });
        if !still {
            ctx.debug(format_args!(
                "auto-resume: loop {} was resumed, cancelled or replaced meanwhile",
                paused.id
            ));
            return None;
        }
    }
    let resumed = loops::resume_after_limit(ctx, &paused.id, paused_at).ok()??;
    let mut text = format!(
        "[ralph-hooks] The usage limit has reset (it was: {}). The Ralph loop {} is RUNNING again at iteration {}/{}.\nGoal: {}\nKeep working on the goal until all of these hold:\n",
        paused.limit_message.as_deref().unwrap_or("a usage limit"),
        resumed.id,
        resumed.iteration,
        resumed.max_iterations,
        resumed.goal
    );
    for line in resumed.condition_lines() {
        text.push_str(&format!("- {line}\n"));
    }
    Some(HookOutput::block(text.trim_end().to_string()))
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
        let mut check = json!({"kind": condition.name, "name": condition.name, "passed": condition.holds,
                           "inconclusive": condition.inconclusive, "durationMs": ms, "files": files,
                           "errors": errors, "warnings": warnings, "fixed": fixed_here});
        // A rule file that does not load, in the events log too.
        if !condition.notes.is_empty() {
            check["ruleProblems"] = json!(condition.notes);
        }
        checks.push(check);
    }
    let mut fields = serde_json::Map::new();
    fields.insert("since".into(), json!(stamp(since)));
    fields.insert("startedAt".into(), json!(stamp(state.started_at)));
    fields.insert("maxIterations".into(), json!(state.max_iterations));
    fields.insert("checks".into(), json!(checks));
    fields.insert("problemsFixed".into(), json!(fixed));
    if let Some(tokens) = evidence.spend.tokens {
        fields.insert("tokens".into(), json!(tokens.total()));
        fields.insert(
            "costUsd".into(),
            json!(evidence.spend.cost_usd.unwrap_or(0.0)),
        );
    }
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
    // The project's code the check runs (the agent writes it) cannot change
    // the supervision from out here either: see `checks::Walls`.
    let walls = crate::ralph::loops::LoopConfig::load(ctx).check_walls(ctx);
    // All checks together end before Claude Code's timeout for this hook
    // would cancel it: a cancelled Stop hook has no answer, and the
    // session stops with the loop still RUNNING (attack finding A35-6: a
    // check the agent made hang, with a long `--check-timeout`). What has
    // no time left fails as not run.
    let budget = checks::stop_checks_budget();
    let checks_end = std::time::Instant::now() + budget;
    for command in &state.checks {
        let left = checks_end.saturating_duration_since(std::time::Instant::now());
        if left < Duration::from_secs(1) {
            runs.push(checks::CheckRun::not_run(
                command,
                &format!(
                    "the Stop hook's time for checks ({} s, under Claude Code's timeout for the hook) was spent by the checks before it",
                    budget.as_secs()
                ),
            ));
            continue;
        }
        let run = checks::run(&ctx.project_root, command, timeout.min(left), &walls)
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
        spend: IterationSpend::default(),
    };
    Ok((evidence, condition_ms))
}

/// Claude Code's own cap on consecutive Stop blocks, as configured for it.
fn block_cap() -> u32 {
    // Another harness's own rule (none for Codex, Cursor's `loop_limit`).
    if let Some(cap) = crate::hook::harness_block_cap() {
        return cap;
    }
    std::env::var("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(loop_ctl::CLAUDE_BLOCK_CAP)
}
