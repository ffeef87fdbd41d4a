//! `ralph-user-prompt-submit`: the user stays in charge.
//!
//! When the user's prompt is a stop phrase ([`crate::ralph::stop_phrases`]),
//! the RUNNING loop of this session (or one no session has claimed yet)
//! becomes PAUSED — it blocks no stop until `ralph-hooks loop resume` — and
//! task-step and todo continuation hold for this session until the user's
//! next prompt that is not a stop phrase. Claude is told, as context, that
//! the user paused the work. Any prompt of the user's starts the loop's
//! consecutive-block count again, runs a loop a usage limit paused again,
//! records a turn Claude Code's block cap ended, and shows what waited for
//! the user (a limit, an API error, the end of a woken loop).
//!
//! Only the user's prompts count: `source` `user`, and not a
//! `<task-notification>` (the turn an `asyncRewake` hook woke). A prompt
//! from `sdk`, `system`, `loop_wakeup`, `schedule_wakeup` or `poll_event`
//! says nothing about what the user wants.
//!
//! A missing `source` is not proof that a person typed the prompt (2.1.330
//! sent none at all; 2.1.332 sends none in `claude -p`), so the transcript
//! is asked ([`prompt_not_the_users`]). At the time this hook runs, the
//! prompt's own row is not written yet (seen with 2.1.332 in `-p`: the
//! row, `promptSource: "sdk"`, `turnOrigin: "sdk"`, lands after the hook),
//! so the evidence is what came before: a prompt the agent itself
//! scheduled to come back (`ScheduleWakeup`, `CronCreate`: their `prompt`)
//! is not the user's, nor is one whose row, if it is already there, is
//! `isMeta` or names another origin. Without such evidence the prompt is
//! taken as the user's: in `claude -p` the user's own prompt carries no
//! sign at all, and their "stop" must keep working.
//!
//! A prompt without `source` that arrives while this session's turn is
//! still open in the same Claude Code process ([`crate::ralph::turns`]) is
//! not the user's either: the agent's own Bash command can queue one
//! through Claude Code's messaging socket (`CLAUDE_CODE_MESSAGING_SOCKET`,
//! 2.1.332), and its payload is the same as a typed one's (2.1.332 sends
//! `source` to no command hook). When such a prompt asks to stop, the user
//! is told it was not taken and what stops the loop instead.
//!
//! This hook never blocks or rewrites the prompt. An ordinary prompt with no
//! loop and no paused continuation costs the config read and two `stat`s
//! and writes nothing.

use std::fmt::Write as _;
use std::path::Path;

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput, UserPromptInput};
use crate::hook::transcript;
use crate::ralph::loops::{self, PromptEffect, PromptOutcome};
use crate::ralph::notify::{self, Channel};
use crate::ralph::stop_phrases::{self, ControlConfig};
use crate::tasks::{self, continuation};

pub struct UserPromptSubmit;

impl Hook for UserPromptSubmit {
    const NAME: &'static str = "ralph-user-prompt-submit";
    const EVENTS: &'static [EventName] = &[EventName::UserPromptSubmit];
    const HELP: &'static str = "\
ralph-user-prompt-submit — Claude Code UserPromptSubmit hook

Reads one UserPromptSubmit hook JSON object on stdin. When the user's prompt
is a stop phrase (\"stop\", \"pause\", \"that's enough\", \"/cancel-loop\", \"그만\", …;
`control.stop_phrases` in .claude/ralph-hooks.json), the running Ralph loop of
this session becomes PAUSED (`ralph-hooks loop resume` restarts it) and task
and todo continuation hold until the next ordinary prompt; Claude is told so
through additionalContext. Any prompt of the user's resets the loop's count
of Stop blocks in a row and resumes a loop a usage limit paused. Prompts that
are not the user's (`source` other than `user`, a <task-notification>) change
nothing. Never blocks or changes the prompt.

Output: nothing, or {\"hookSpecificOutput\":{\"additionalContext\":…}}; exit 1
with one stderr line on bad input or an internal fault (never blocks).
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        let HookInput::UserPromptSubmit(input) = input else {
            return Ok(HookOutput::silent());
        };
        // A put-back that failed before (a full disk) is tried again first,
        // then a check owed for an earlier command of the agent's.
        let retried = crate::guards::effects::pending::retry(ctx);
        let made_up = crate::guards::effects::make_up(ctx, None, false);
        let output = on_prompt(ctx, &input)?;
        let output = match made_up {
            Some(told) => told.add_to(output, Some(EventName::UserPromptSubmit)),
            None => output,
        };
        Ok(match retried {
            Some(outcome) => outcome.annotate(ctx, output, EventName::UserPromptSubmit),
            None => output,
        })
    }
}

fn on_prompt(ctx: &Ctx, input: &UserPromptInput) -> anyhow::Result<HookOutput> {
    // Whatever sent it, a turn starts (or goes on) now.
    let mid_turn = match crate::ralph::turns::begin(ctx) {
        Ok(open) => open,
        Err(error) => {
            eprintln!(
                "{}: cannot record the turn: {error:#}",
                UserPromptSubmit::NAME
            );
            false
        }
    };
    // The first prompt of a real Claude Code session claims a loop started
    // from the terminal: left unclaimed until the first Stop, a payload
    // made up under another session id could claim or pause it (attack
    // findings G1, G7).
    if !mid_turn
        && crate::ralph::turns::run_by_claude(ctx)
        && let Err(error) = loops::claim(ctx)
    {
        eprintln!(
            "{}: cannot claim the loop: {error:#}",
            UserPromptSubmit::NAME
        );
    }
    {
        if input.source.is_none() && mid_turn {
            ctx.debug(format_args!(
                "a prompt without a source in the middle of an open turn (the agent's own command can queue one through Claude Code's messaging socket): it neither stops, resumes nor resets anything"
            ));
            return Ok(mid_turn_answer(ctx, input));
        }
        if !input.is_from_user() {
            ctx.debug(format_args!(
                "a prompt that is not the user's (source {:?}): it neither stops, resumes nor resets anything",
                input.source
            ));
            return Ok(HookOutput::silent());
        }
        if input.source.is_none()
            && let Some(why) = prompt_not_the_users(input)
        {
            ctx.debug(format_args!(
                "a prompt without a source that is not the user's ({why}): it neither stops, resumes nor resets anything"
            ));
            return Ok(HookOutput::silent());
        }
        let config = match ctx.config().section::<ControlConfig>("control") {
            Ok(config) => config,
            Err(error) => {
                // Better to hear the user with the default phrases than not
                // at all because of a typo.
                eprintln!(
                    "{}: using the default stop phrases: {error:#}",
                    UserPromptSubmit::NAME
                );
                ControlConfig::default()
            }
        };
        let transcript = input.common.transcript_path.as_deref().map(Path::new);
        let output = if stop_phrases::is_stop_request(&input.prompt, &config.stop_phrases) {
            on_stop_request(ctx, transcript)?
        } else {
            on_ordinary_prompt(ctx, transcript)?
        };
        // Sandbox mode: the user's /ralph-loop, /cancel-loop, /resume-loop,
        // whose `!` lines cannot write the state inside the sandbox.
        Ok(
            match crate::events::sandbox::user_command(ctx, &input.prompt) {
                Some((context, user_message)) => crate::events::sandbox::with_note(
                    output,
                    EventName::UserPromptSubmit,
                    Some(context),
                )
                .append_system_message(&user_message),
                None => output,
            },
        )
    }
}

/// A prompt that arrived while Claude's turn was still running changes
/// nothing; when it asks to stop, the user is told (and Claude is not) why
/// it was not taken and what stops the loop instead: the agent's own
/// command can queue such a prompt, and so can a person typing while
/// Claude works, and the hook cannot tell which.
fn mid_turn_answer(ctx: &Ctx, input: &UserPromptInput) -> HookOutput {
    let config = ctx
        .config()
        .section::<ControlConfig>("control")
        .unwrap_or_default();
    if !stop_phrases::is_stop_request(&input.prompt, &config.stop_phrases) {
        return HookOutput::silent();
    }
    let running = ctx
        .store()
        .read_json::<crate::ralph::loop_state::LoopState>(crate::ralph::loop_state::LOOP_FILE)
        .ok()
        .flatten()
        .is_some_and(|state| state.is_running());
    if !running {
        return HookOutput::silent();
    }
    HookOutput::silent().with_system_message(
        "ralph-hooks: a stop request arrived while the agent's turn was still running (typed ahead, or queued by a command of the agent's), so the loop keeps RUNNING: ralph-hooks cannot tell the two apart. If it was yours, run `ralph-hooks loop pause` in a terminal, or say stop again after this turn ends.".to_string(),
    )
}

fn on_ordinary_prompt(ctx: &Ctx, transcript: Option<&Path>) -> anyhow::Result<HookOutput> {
    let outcome = loops::on_user_prompt(ctx, false, transcript)?;
    if matches!(outcome.effect, PromptEffect::CounterReset) {
        ctx.debug(format_args!(
            "the user spoke: the loop's consecutive-block count starts again"
        ));
    }
    if continuation::lift_user_pause(ctx)? {
        ctx.debug(format_args!(
            "an ordinary prompt after a stop phrase: continuation may go on again"
        ));
    }
    let mut output = HookOutput::silent();
    if let PromptEffect::ResumedAfterLimit(state) = &outcome.effect {
        output = HookOutput::context(
            EventName::UserPromptSubmit,
            format!(
                "[ralph-hooks] The Ralph loop {} (goal: {}) is RUNNING again at iteration {}/{}: a usage limit had paused it, and the user's message resumes it. Keep working on its goal; the loop checks its conditions when you stop.",
                state.id, state.goal, state.iteration, state.max_iterations
            ),
        )
        .with_system_message(format!(
            "ralph-hooks: loop {} resumed at iteration {}/{} (a usage limit had paused it).",
            state.id, state.iteration, state.max_iterations
        ));
    }
    Ok(tell_user(ctx, output, &outcome))
}

/// Adds what waited for the user (notices, a capped turn) to the output.
fn tell_user(ctx: &Ctx, mut output: HookOutput, outcome: &PromptOutcome) -> HookOutput {
    let mut lines: Vec<String> = outcome.notices.clone();
    if let Some(capped) = &outcome.capped {
        lines.push(capped.clone());
        if let Some(state) = ctx
            .store()
            .read_json::<crate::ralph::loop_state::LoopState>(crate::ralph::loop_state::LOOP_FILE)
            .ok()
            .flatten()
        {
            // The user is at the keyboard: a desktop notification would
            // only interrupt them; the webhook keeps the record.
            notify::notify(
                ctx,
                notify::Event::Capped,
                &state,
                capped,
                Channel::WebhookOnly,
            );
        }
    }
    if lines.is_empty() {
        return output;
    }
    let after = output.system_message.take();
    output = output.with_system_message(lines.join("\n"));
    if let Some(after) = after {
        output = output.append_system_message(&after);
    }
    output
}

fn on_stop_request(ctx: &Ctx, transcript: Option<&Path>) -> anyhow::Result<HookOutput> {
    let outcome = loops::on_user_prompt(ctx, true, transcript)?;
    continuation::pause_for_user(ctx)?;
    let open_task = open_task_of_this_session(ctx);
    ctx.debug(format_args!(
        "stop phrase: loop {:?}, open task {open_task:?}",
        outcome.effect
    ));
    let mut text = String::from("[ralph-hooks] The user asked to stop.");
    let mut user_message = None;
    match &outcome.effect {
        PromptEffect::Paused(state) | PromptEffect::AlreadyPaused(state) => {
            let _ = write!(
                text,
                " The Ralph loop {} (goal: {}) is PAUSED by the user at iteration {}/{}: it no longer blocks your stops.",
                state.id, state.goal, state.iteration, state.max_iterations
            );
            user_message = Some(format!(
                "ralph-hooks: loop {} paused at iteration {}/{}. Resume it with /resume-loop (or `ralph-hooks loop resume`); end it with /cancel-loop.",
                state.id, state.iteration, state.max_iterations
            ));
        }
        PromptEffect::None | PromptEffect::CounterReset | PromptEffect::ResumedAfterLimit(_) => {}
    }
    if let Some(task) = &open_task {
        let _ = write!(
            text,
            " Continuation of task {task}'s open steps is paused until the user's next message."
        );
    }
    if user_message.is_none() && open_task.is_none() {
        // Nothing of ours was driving this session; the pause of todo
        // continuation is recorded, and there is nothing to tell Claude.
        return Ok(tell_user(ctx, HookOutput::silent(), &outcome));
    }
    text.push_str(
        " Stop the work now: do not start anything new, answer the user briefly and end your turn. Do not resume the loop or the steps yourself; the user will say when.",
    );
    let output = HookOutput::context(EventName::UserPromptSubmit, text);
    let output = match user_message {
        Some(message) => output.with_system_message(message),
        None => output,
    };
    Ok(tell_user(ctx, output, &outcome))
}

/// The active task with open steps that continuation would drive in this
/// session, if any; an unreadable task is not worth failing the prompt for.
fn open_task_of_this_session(ctx: &Ctx) -> Option<String> {
    let doc = tasks::active(ctx.store()).ok().flatten()?;
    if doc.field("Status") != Some(tasks::IN_PROGRESS) || tasks::steps::open_steps(&doc).is_empty()
    {
        return None;
    }
    if let (Some(owner), Some(session)) = (doc.field("Session"), ctx.session_id.as_deref())
        && owner != session
    {
        return None;
    }
    Some(doc.id)
}

/// How much of the transcript's end is searched for the agent's schedules.
const SCHEDULE_SCAN_BYTES: u64 = 4 * 1024 * 1024;

/// Tools with which the agent makes a prompt come back later, by the input
/// field that holds the prompt.
const SCHEDULING_TOOLS: &[&str] = &["ScheduleWakeup", "CronCreate"];

/// Origins a prompt's transcript row may name that are not a person's.
const NOT_A_PERSON: &[&str] = &[
    "system",
    "loop_wakeup",
    "schedule_wakeup",
    "poll_event",
    "task_notification",
    "hook",
];

/// Why a prompt with no `source` is not the user's, from the transcript as
/// it is now; `None` when nothing says so. An unreadable transcript says
/// nothing (the user's "stop" must not be lost to a read error).
pub fn prompt_not_the_users(input: &UserPromptInput) -> Option<String> {
    let path = input.common.transcript_path.as_deref()?;
    let lines = transcript::tail_lines(Path::new(path), SCHEDULE_SCAN_BYTES).ok()?;
    let wanted = normalized(&input.prompt);
    for line in lines.iter().rev() {
        let Ok(row) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(id), Some(row_id)) = (
            input.common.prompt_id.as_deref(),
            row.get("promptId").and_then(|v| v.as_str()),
        ) && id == row_id
            && row.get("type").and_then(|v| v.as_str()) == Some("user")
            && row_text(&row).is_some_and(|text| normalized(&text) == wanted)
        {
            if row.get("isMeta").and_then(|v| v.as_bool()) == Some(true) {
                return Some("its transcript row is a meta row".into());
            }
            for key in ["promptSource", "turnOrigin", "origin"] {
                if let Some(origin) = row.get(key).and_then(|v| v.as_str())
                    && NOT_A_PERSON.contains(&origin)
                {
                    return Some(format!("its transcript row says {key} {origin:?}"));
                }
            }
        }
        if row.get("type").and_then(|v| v.as_str()) != Some("assistant") {
            continue;
        }
        let Some(content) = row.pointer("/message/content").and_then(|v| v.as_array()) else {
            continue;
        };
        for block in content {
            let name = block
                .get("name")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            if block.get("type").and_then(|v| v.as_str()) != Some("tool_use")
                || !SCHEDULING_TOOLS.contains(&name)
            {
                continue;
            }
            let scheduled = block.pointer("/input/prompt").and_then(|v| v.as_str());
            if scheduled.is_some_and(|text| normalized(text) == wanted) {
                return Some(format!("the agent scheduled this prompt with {name}"));
            }
        }
    }
    None
}

/// A transcript row's text: a string content, or its text blocks joined.
fn row_text(row: &serde_json::Value) -> Option<String> {
    let content = row.pointer("/message/content")?;
    if let Some(text) = content.as_str() {
        return Some(text.to_string());
    }
    let parts: Vec<&str> = content
        .as_array()?
        .iter()
        .filter_map(|block| block.get("text").and_then(|v| v.as_str()))
        .collect();
    Some(parts.join("\n"))
}

/// Whitespace collapsed and case folded: how a stop phrase is compared.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
