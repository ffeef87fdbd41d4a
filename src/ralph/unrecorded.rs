//! A Stop that cannot record the loop's state still answers for the loop.
//!
//! A hook that exits 1 lets Claude Code stop (a non-blocking error). When
//! the fault is one the agent can cause — a disk it filled, a state lock a
//! process it left running holds — "fail open" is an off switch for the
//! loop. So while a loop is readable and RUNNING for this session, a Stop
//! that cannot write its state (or cannot get its lock) blocks with the
//! loop's follow-up and says why nothing was recorded. A loop that cannot
//! be read at all (corrupt, unreadable) is still failed open: there is no
//! loop to answer for.

use crate::hook::ctx::Ctx;
use crate::hook::protocol::HookOutput;
use crate::ralph::loop_ctl::{self, Ownership};
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::util::text::escape_controls;

/// The RUNNING plain (not `--rewake`) loop this session answers for, read
/// without the lock; `None` when there is none or it cannot be read.
pub fn running_loop(ctx: &Ctx) -> Option<LoopState> {
    let state = ctx.store().read_json::<LoopState>(LOOP_FILE).ok()??;
    let ours = loop_ctl::ownership(&state, ctx.session_id.as_deref()) != Ownership::Other;
    (state.is_running() && ours && !state.rewake).then_some(state)
}

/// The block for `state` when this Stop could not be judged or recorded:
/// `follow_up` is the reason the loop computed, when it got that far.
pub fn block(state: &LoopState, follow_up: Option<String>, error: &anyhow::Error) -> HookOutput {
    let why = escape_controls(&format!("{error:#}")).into_owned();
    let follow_up = follow_up.unwrap_or_else(|| {
        format!(
            "The Ralph loop is still running (iteration {}/{}). Its goal: {}\n\
             Keep working on it until its completion conditions hold.",
            state.iteration,
            state.max_iterations,
            escape_controls(&state.goal)
        )
    });
    let reason = format!(
        "{follow_up}\n\nralph-hooks could not record the loop's state at this stop ({why}); \
         the loop goes on from what it could read."
    );
    HookOutput::block(crate::hook::protocol::cap_chars(reason)).with_system_message(format!(
        "ralph-hooks: the loop's state could not be recorded at this stop ({why}): \
         the stop is blocked from the loop as read. Free the disk or end the process \
         holding the lock."
    ))
}

/// A Stop's result, with an error turned into [`block`] while a loop runs.
pub fn or_block(ctx: &Ctx, result: anyhow::Result<HookOutput>) -> anyhow::Result<HookOutput> {
    match result {
        Ok(output) => Ok(output),
        Err(error) => match running_loop(ctx) {
            Some(state) => Ok(block(&state, None, &error)),
            None => Err(error),
        },
    }
}
