//! `ralph-user-prompt-submit`: the user stays in charge (issue 12).
//!
//! When the user's prompt is a stop phrase ([`crate::ralph::stop_phrases`]),
//! the RUNNING loop of this session (or one no session has claimed yet)
//! becomes PAUSED — it blocks no stop until `ralph-hooks loop resume` — and
//! task-step and todo continuation hold for this session until the user's
//! next prompt that is not a stop phrase. Claude is told, as context, that
//! the user paused the work. Any prompt starts the loop's consecutive-block
//! count again.
//!
//! This hook never blocks or rewrites the prompt. An ordinary prompt with no
//! loop and no paused continuation costs the config read and two `stat`s
//! and writes nothing.

use std::fmt::Write as _;

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput};
use crate::ralph::loops::{self, PromptEffect};
use crate::ralph::stop_phrases::{self, ControlConfig};
use crate::tasks::{self, continuation};

pub struct UserPromptSubmit;

impl Hook for UserPromptSubmit {
    const NAME: &'static str = "ralph-user-prompt-submit";
    const EVENTS: &'static [EventName] = &[EventName::UserPromptSubmit];
    const HELP: &'static str = "\
ralph-user-prompt-submit — Claude Code UserPromptSubmit hook

Reads one UserPromptSubmit hook JSON object on stdin. When the prompt is a
stop phrase (\"stop\", \"pause\", \"that's enough\", \"/cancel-loop\", \"그만\", …;
`control.stop_phrases` in .claude/ralph-hooks.json), the running Ralph loop of
this session becomes PAUSED (`ralph-hooks loop resume` restarts it) and task
and todo continuation hold until the next ordinary prompt; Claude is told so
through additionalContext. Any prompt resets the loop's count of Stop blocks
in a row. Never blocks or changes the prompt.

Output: nothing, or {\"hookSpecificOutput\":{\"additionalContext\":…}}; exit 1
with one stderr line on bad input or an internal fault (never blocks).
Env: CLAUDE_PROJECT_DIR, RALPH_HOOKS_STATE_DIR, RALPH_HOOKS_DEBUG=1.
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        let HookInput::UserPromptSubmit(input) = input else {
            return Ok(HookOutput::silent());
        };
        let config = match ctx.config().section::<ControlConfig>("control") {
            Ok(config) => config,
            Err(error) => {
                // Better to hear the user with the default phrases than not
                // at all because of a typo.
                eprintln!("{}: using the default stop phrases: {error:#}", Self::NAME);
                ControlConfig::default()
            }
        };
        if stop_phrases::is_stop_request(&input.prompt, &config.stop_phrases) {
            on_stop_request(ctx)
        } else {
            on_ordinary_prompt(ctx)
        }
    }
}

fn on_ordinary_prompt(ctx: &Ctx) -> anyhow::Result<HookOutput> {
    if matches!(
        loops::on_user_prompt(ctx, false)?,
        PromptEffect::CounterReset
    ) {
        ctx.debug(format_args!(
            "the user spoke: the loop's consecutive-block count starts again"
        ));
    }
    if continuation::lift_user_pause(ctx)? {
        ctx.debug(format_args!(
            "an ordinary prompt after a stop phrase: continuation may go on again"
        ));
    }
    Ok(HookOutput::silent())
}

fn on_stop_request(ctx: &Ctx) -> anyhow::Result<HookOutput> {
    let effect = loops::on_user_prompt(ctx, true)?;
    continuation::pause_for_user(ctx)?;
    let open_task = open_task_of_this_session(ctx);
    ctx.debug(format_args!(
        "stop phrase: loop {effect:?}, open task {open_task:?}"
    ));
    let mut text = String::from("[ralph-hooks] The user asked to stop.");
    let mut user_message = None;
    match &effect {
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
        PromptEffect::None | PromptEffect::CounterReset => {}
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
        return Ok(HookOutput::silent());
    }
    text.push_str(
        " Stop the work now: do not start anything new, answer the user briefly and end your turn. Do not resume the loop or the steps yourself; the user will say when.",
    );
    let output = HookOutput::context(EventName::UserPromptSubmit, text);
    Ok(match user_message {
        Some(message) => output.with_system_message(message),
        None => output,
    })
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
