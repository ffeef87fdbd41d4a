//! A Stop while background tasks still run: held, a bounded number of
//! times.
//!
//! Why hold at all: the agent that starts a long build with
//! `run_in_background` and stops to wait for it is not done, and not idle
//! either; Claude Code wakes the session when the task ends. Judging that
//! Stop would spend an iteration on work still running. Why bounded: a task
//! that never ends (`sleep infinity`, a watcher that respawns itself) made
//! every Stop hold, silently, for as long as it ran (attack finding G11):
//! "All done." went through and the loop never ran again.
//!
//! So a loop holds at most [`MAX_HELD_STOPS`] Stops, and none once
//! [`MAX_HOLD`] has passed since the first, counted until a Stop sees no
//! background task running. Each hold is said to the user. Past the bound
//! the Stop is judged like any other, and a block says why the tasks no
//! longer hold it. A hold is recorded in the loop's state first; one that
//! cannot be recorded is not a hold (the Stop is judged).
//!
//! A held Stop does not end the turn record ([`crate::ralph::turns`]): the
//! turn goes on when the task's notification wakes the session, and a
//! "stop" the task queues meanwhile through Claude Code's messaging socket
//! is not the user's (attack finding G12).

use chrono::{DateTime, Duration, Utc};

use crate::hook::ctx::Ctx;
use crate::hook::protocol::HookOutput;
use crate::ralph::loop_state::{LOOP_FILE, LoopState};

/// Stops held in a row at most.
pub const MAX_HELD_STOPS: u32 = 3;
/// No hold once this long has passed since the first.
pub const MAX_HOLD: Duration = Duration::minutes(30);

/// What a Stop with `running` background tasks does.
pub enum Hold {
    /// Held: let the turn end without an iteration, saying so.
    Held(HookOutput),
    /// Judged as usual; the text goes into a block's reason.
    Judge(String),
}

/// Whether the loop may hold one more Stop at `now`.
pub fn may_hold(state: &LoopState, now: DateTime<Utc>) -> bool {
    state.held_stops < MAX_HELD_STOPS
        && state
            .held_since
            .is_none_or(|since| now.signed_duration_since(since) < MAX_HOLD)
}

/// A Stop of `state`'s session with `running` background tasks.
pub fn at_stop(ctx: &Ctx, state: &LoopState, running: usize) -> Hold {
    let now = ctx.now();
    if !may_hold(state, now) {
        return Hold::Judge(past_bound(state, running));
    }
    match record(ctx, state, now) {
        Ok(Some(held)) => Hold::Held(HookOutput::silent().with_system_message(format!(
            "ralph-hooks: {running} background task(s) still running: the Ralph loop holds this \
             stop without an iteration (hold {held} of {MAX_HELD_STOPS}; after that, or {} \
             minutes after the first, a stop is judged as usual). The loop is still RUNNING \
             at iteration {}/{}.",
            MAX_HOLD.num_minutes(),
            state.iteration,
            state.max_iterations
        ))),
        Ok(None) => Hold::Judge(past_bound(state, running)),
        Err(error) => {
            ctx.debug(format_args!("cannot record the hold: {error:#}"));
            Hold::Judge(format!(
                "{running} background task(s) still run, and ralph-hooks could not record a \
                 hold for them: this stop is judged as usual."
            ))
        }
    }
}

/// Counts the hold in the loop's state; `None` when the loop changed
/// meanwhile or may not hold any more.
fn record(ctx: &Ctx, seen: &LoopState, now: DateTime<Utc>) -> anyhow::Result<Option<u32>> {
    let locked = ctx.store().lock(LOOP_FILE)?;
    let Some(mut state) = locked.load_json::<LoopState>()? else {
        return Ok(None);
    };
    if state.id != seen.id || !state.is_running() || !may_hold(&state, now) {
        return Ok(None);
    }
    state.held_stops += 1;
    state.held_since.get_or_insert(now);
    locked.save_json(&state)?;
    Ok(Some(state.held_stops))
}

fn past_bound(state: &LoopState, running: usize) -> String {
    let since = state
        .held_since
        .map(|since| format!(" since {}", since.format("%Y-%m-%d %H:%M UTC")))
        .unwrap_or_default();
    format!(
        "{running} background task(s) still run, but the loop has held {} stop(s) for \
         background tasks{since} and holds no more: wait for them within this turn, or stop \
         the ones you no longer need, and go on with the goal.",
        state.held_stops
    )
}

/// A Stop that saw no background task running ends the count.
pub fn reset(state: &mut LoopState) {
    state.held_stops = 0;
    state.held_since = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(held_stops: u32, held_since: Option<&str>) -> LoopState {
        let mut state: LoopState = serde_json::from_value(serde_json::json!({
            "version": 1, "id": "loop-1", "status": "RUNNING", "goal": "ship it",
            "promise": "DONE", "checks": [], "check_timeout_secs": 300,
            "iteration": 1, "max_iterations": 10, "session_id": "s",
            "project_root": "/p", "started_at": "2026-11-21T11:00:00Z",
            "updated_at": "2026-11-21T11:00:00Z", "history": []
        }))
        .unwrap();
        state.held_stops = held_stops;
        state.held_since = held_since.map(|at| at.parse().unwrap());
        state
    }

    #[test]
    fn a_hold_is_bounded_in_number_and_in_time() {
        let now: DateTime<Utc> = "2026-11-21T12:00:00Z".parse().unwrap();
        assert!(may_hold(&state(0, None), now));
        assert!(may_hold(&state(2, Some("2026-11-21T11:45:00Z")), now));
        assert!(!may_hold(&state(3, Some("2026-11-21T11:59:00Z")), now));
        assert!(!may_hold(&state(1, Some("2026-11-21T11:30:00Z")), now));
        let mut held = state(2, Some("2026-11-21T11:59:00Z"));
        reset(&mut held);
        assert!(may_hold(&held, now));
    }
}
