//! OpenTelemetry export, the side every process may reach: the switch
//! (Claude Code's `CLAUDE_CODE_ENABLE_TELEMETRY`, or the `telemetry` config
//! section), where the OTLP settings come from, starting the exporter after a
//! process logged an event, stopping it, and what `doctor` and `daemon status`
//! say about it.
//!
//! The exporter itself — the OpenTelemetry crates and tokio — is
//! [`crate::exporter`], which only the CLI reaches: a hook appends to
//! `events.jsonl` as it always did and, when telemetry is on and no exporter
//! runs, starts one detached without waiting for it. Nothing here touches
//! the network.
//!
//! - [`settings`]: the `telemetry` section and the on/off decision.
//! - [`sources`]: the `OTEL_*` variables, gathered from the environments and
//!   Claude Code's settings files (Claude Code strips `OTEL_*` from a hook's
//!   environment), and what they say: signals, protocol, endpoint, intervals.
//! - [`start`]: the hooks' side, single-flight under a lock.
//! - [`status`]: the exporter's `status.json`, the status lines, `stop`.
//!
//! Uses [`crate::daemon`] (the `ralph-hooks` binary, `/proc`),
//! [`crate::hook`], [`crate::state`] and [`crate::util`]; used by the front
//! ends and by [`crate::exporter`].

pub mod settings;
pub mod sources;
pub mod start;
pub mod status;

use crate::hook::ctx::Ctx;

/// Files of the exporter, relative to the state root.
pub mod files {
    /// What the exporter is doing: its pid, where it sends, the last batch.
    pub const STATUS: &str = "telemetry/status.json";
    /// How far into `events.jsonl` the exporter has shipped.
    pub const CURSOR: &str = "telemetry/cursor.json";
    /// Where the processes that started an exporter logged their first
    /// event (its lock is also the start lock).
    pub const START: &str = "telemetry/start.json";
    /// Held by the running exporter for its whole life: free means none runs.
    pub const LIFE_LOCK: &str = ".locks/telemetry%life.lock";
}

/// After a hook or CLI command: when it logged an event and telemetry is
/// on, make sure an exporter runs. Never waits for it and never fails the
/// caller: what went wrong is a `[DEBUG]` line.
pub fn after_events(ctx: &Ctx) {
    let Some(first_event) = ctx.first_event_at() else {
        return;
    };
    match settings::switch_for(ctx) {
        settings::Switch::Off(why) => {
            ctx.debug(format_args!("telemetry: off ({why})"));
        }
        settings::Switch::On(why) => match start::ensure_running(ctx, first_event) {
            Ok(note) => ctx.debug(format_args!("telemetry: on ({why}); {note}")),
            Err(error) => ctx.debug(format_args!(
                "telemetry: on ({why}); cannot start the exporter: {error:#}"
            )),
        },
    }
}
