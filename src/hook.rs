//! The hook contract in one place: read stdin, parse, run the handler, print,
//! exit.
//!
//! Our contract with Claude Code (see `shared/interface.md`):
//! - exit 0, with JSON on stdout when there is a decision or context, and
//!   nothing otherwise;
//! - exit 1 with one stderr line starting with the binary's name on bad input
//!   or an internal fault, which Claude Code treats as a non-blocking error: the
//!   user's session always goes on (fail open);
//! - never exit 2, because exit 2 blocks regardless of what we meant.
//!
//! The part also holds what every handler is given: [`protocol`] (the wire
//! types, tolerant of unknown and missing fields), [`ctx`] (project root,
//! state root, clock, config, built once per call), [`config`]
//! (`.claude/ralph-hooks.json`) and [`transcript`] (reading Claude Code's
//! transcript tail). It uses only [`crate::state`] and [`crate::util`];
//! every feature part and both front ends ([`crate::events`],
//! [`crate::cli`]) use it.

pub mod config;
pub mod ctx;
pub mod protocol;
pub mod transcript;

use std::io::{Read, Write};
use std::process::ExitCode;

use crate::hook::ctx::Ctx;
use protocol::{EventName, HookInput, HookOutput};

/// One hook binary: which events it takes and what it does with one.
pub trait Hook {
    /// The binary's name, used as the prefix of every stderr line.
    const NAME: &'static str;
    /// Events this binary accepts; any other is bad input.
    const EVENTS: &'static [EventName];
    /// Text for `--help`.
    const HELP: &'static str;

    /// Decides. Errors are internal faults: they fail open with exit 1.
    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput>;
}

/// The exit code for an internal fault or bad input: non-blocking in Claude Code.
const EXIT_FAULT: u8 = 1;

/// Runs hook `H` as a process: the whole body of each per-event `main`.
pub fn run<H: Hook>() -> ExitCode {
    run_then::<H>(|_| {})
}

/// [`run`], then `after` with the call's context once the answer is out
/// (whatever it was): the front end's place for work that must not change
/// the answer, such as starting the telemetry exporter.
pub fn run_then<H: Hook>(after: fn(&Ctx)) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "--help" || arg == "-h") {
        print!("{}", H::HELP);
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|arg| arg == "--version" || arg == "-V") {
        println!("{} {}", H::NAME, env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }

    // A hook killed by Claude Code's timeout must not leave its check or
    // language server running.
    crate::util::process::kill_children_on_signal(true);
    let mut bytes = Vec::new();
    // Read one byte past the limit so "exactly the limit" and "more" differ.
    let limit = protocol::MAX_INPUT_BYTES as u64 + 1;
    if let Err(error) = std::io::stdin().lock().take(limit).read_to_end(&mut bytes) {
        return fault::<H>(&format!("cannot read stdin: {error}"));
    }
    let input = match protocol::parse_input(&bytes, H::EVENTS) {
        Ok(input) => input,
        Err(error) => return fault::<H>(&error.to_string()),
    };
    let ctx = match Ctx::from_env(input.common()) {
        Ok(ctx) => ctx,
        Err(error) => return fault::<H>(&format!("{error:#}")),
    };
    ctx.debug(format_args!(
        "{} handling {} (session {:?})",
        H::NAME,
        input.event().as_str(),
        input.common().session_id
    ));
    let code = match H::handle(&ctx, input) {
        Ok(output) => emit::<H>(&with_store_warnings(output, ctx.store().take_warnings())),
        Err(error) => fault::<H>(&format!("{error:#}")),
    };
    after(&ctx);
    code
}

/// Tells the user about state files that were found corrupt and moved aside.
fn with_store_warnings(mut output: HookOutput, warnings: Vec<String>) -> HookOutput {
    if warnings.is_empty() {
        return output;
    }
    let mut message = output.system_message.take().unwrap_or_default();
    for warning in warnings {
        if !message.is_empty() {
            message.push('\n');
        }
        message.push_str("ralph-hooks: ");
        message.push_str(&warning);
    }
    output.system_message = Some(message);
    output
}

fn emit<H: Hook>(output: &HookOutput) -> ExitCode {
    if output.is_silent() {
        return ExitCode::SUCCESS;
    }
    let json = match serde_json::to_string(output) {
        Ok(json) => json,
        Err(error) => return fault::<H>(&format!("cannot encode output: {error}")),
    };
    let mut stdout = std::io::stdout().lock();
    // A closed stdout means Claude Code stopped listening; nothing to save.
    let _ = writeln!(stdout, "{json}").and_then(|()| stdout.flush());
    ExitCode::SUCCESS
}

/// Reports a fault as one stderr line and exits non-blocking.
fn fault<H: Hook>(message: &str) -> ExitCode {
    let one_line = message.replace(['\n', '\r'], " ");
    eprintln!("{}: {one_line}", H::NAME);
    ExitCode::from(EXIT_FAULT)
}
