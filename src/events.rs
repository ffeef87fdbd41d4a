//! One file per hook binary: each is a unit struct implementing
//! [`crate::hook::Hook`] over plain functions.
//!
//! The top layer with [`crate::cli`]: it may use every feature part; nothing
//! but the mains in `bin/` uses it.

use std::process::ExitCode;

use crate::hook::Hook;

pub mod post_tool_use;
pub mod pre_tool_use;
pub mod sandbox;
pub mod session_start;
pub mod stop;
pub mod user_prompt_submit;

/// Runs hook `H` as a process (each binary's `main`) for the harness its
/// arguments or payload name ([`crate::harness::run`]): the hook contract of
/// [`crate::hook::run`], then, when the call logged an event and telemetry
/// is on, the exporter is started if it is not running (never waited for).
pub fn run<H: Hook>() -> ExitCode {
    crate::harness::run::<H>(crate::telemetry::after_events)
}
