//! The Ralph loop: a goal plus completion conditions, checked at every Stop;
//! while a condition fails the stop is blocked with a follow-up prompt.
//!
//! - [`loop_state`]: `loop.json` and its archive `loops/<id>.json`;
//! - [`loop_ctl`]: the Stop decision, pure (state and evidence in, decision out);
//! - [`loops`]: start, pause, resume, cancel and archive, each a locked
//!   read-modify-write;
//! - [`stop_phrases`]: whether a user's prompt asks the loop to stop (pure);
//! - [`budget`]: tokens, time and estimated cost a loop may spend (pure);
//! - [`limits`]: usage-limit notices and their reset times (pure);
//! - [`notify`]: desktop notifications and the webhook;
//! - the evidence the Stop handler gathers: [`checks`] (check commands),
//!   [`promise`] (the `<promise>` in the last message) and [`worktree`]
//!   (what changed between iterations).
//!
//! Uses [`crate::hook`], [`crate::state`] and [`crate::util`]. Used by the
//! Stop and session-start handlers, the guard, the diagnostics loop
//! condition and the CLI; it knows nothing of them.

pub mod budget;
pub mod checks;
pub mod hold;
pub mod limits;
pub mod loop_ctl;
pub mod loop_state;
pub mod loops;
pub mod notify;
pub mod promise;
pub mod stop_phrases;
pub mod turns;
pub mod unrecorded;
pub mod worktree;
