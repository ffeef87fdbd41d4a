//! The hook contract in one place: read stdin, parse, run the handler, print,
//! exit.
//!
//! Our contract with Claude Code (see `shared/interface.md`):
//! - exit 0, with JSON on stdout when there is a decision or context, and
//!   nothing otherwise;
//! - exit 1 with one stderr line starting with the binary's name on bad input
//!   or an internal fault, which Claude Code treats as a non-blocking error: the
//!   user's session always goes on (fail open);
//! - never exit 2, because exit 2 blocks regardless of what we meant —
//!   with one exception: a hook registered with `asyncRewake`
//!   ([`Hook::ASYNC_REWAKE`]). Claude Code runs such a hook in the
//!   background and lets the turn end; its exit 2 is the only way to wake
//!   the session again, with its stderr as the next instruction. There a
//!   `block` decision becomes exit 2 and the reason on stderr; in plain
//!   `claude -p`, where the hook is not backgrounded, the same exit 2 is an
//!   ordinary blocking Stop, so the answer means the same in both.
//!
//! Other agent harnesses speak the same protocol in other words: a
//! [`Dialect`] reads their payload as Claude Code's and says the handler's
//! answer in theirs, with the same exit-code rules (never 2, a fault is 1).
//! The dialects themselves are in `crate::harness`; Claude Code's own,
//! [`ClaudeCode`], passes both through untouched.
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
pub mod sandbox;
pub mod supervision;
pub mod transcript;

use std::io::{Read, Write};
use std::process::ExitCode;

use serde_json::Value;

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
    /// Registered with `asyncRewake: true`: a `block` decision is answered
    /// with exit 2 and the reason on stderr, the wake signal (see the
    /// module doc). Every other binary keeps exit 0 + JSON.
    const ASYNC_REWAKE: bool = false;

    /// Decides. Errors are internal faults: they fail open with exit 1.
    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput>;

    /// An input larger than [`protocol::MAX_INPUT_BYTES`] (a Write of a
    /// huge file): `head` is its start. A hook that can still say
    /// something true from the head answers (the post-edit hook: "too
    /// large to check"); by default it is bad input, exit 1.
    fn handle_oversized(_ctx: &Ctx, _head: &protocol::Head) -> Option<anyhow::Result<HookOutput>> {
        None
    }
}

/// The argument that selects a binary's `asyncRewake` registration
/// (`ralph-stop-loop-controller --rewake`).
pub const REWAKE_ARG: &str = "--rewake";

/// The exit code for an internal fault or bad input: non-blocking in Claude Code.
const EXIT_FAULT: u8 = 1;

/// How long the guard spends on one call's inputs before it denies the rest
/// (the install registers it with a 15 s timeout, which ends it unheard).
const MULTI_INPUT_BUDGET: std::time::Duration = std::time::Duration::from_secs(8);

/// The exit code that wakes a session from an `asyncRewake` hook. Used only
/// when [`Hook::ASYNC_REWAKE`] is set: anywhere else exit 2 would block
/// whatever we meant.
const EXIT_WAKE: u8 = 2;

/// Runs hook `H` as a process: the whole body of each per-event `main`.
pub fn run<H: Hook>() -> ExitCode {
    run_then::<H>(|_| {})
}

/// [`run`], then `after` with the call's context once the answer is out
/// (whatever it was): the front end's place for work that must not change
/// the answer, such as starting the telemetry exporter.
pub fn run_then<H: Hook>(after: fn(&Ctx)) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    run_dialect::<H>(&args, &ClaudeCode, after)
}

/// How one agent harness speaks the hook protocol: what its payload says in
/// Claude Code's words, and how Claude Code's answer is said back to it.
/// The handlers (the kernel) only ever see Claude Code's shape; the
/// adapters live in `crate::harness`.
pub trait Dialect {
    /// The payload (one JSON object) as zero or more Claude Code-shaped
    /// inputs for `accepted` events, each handled in turn: a Codex patch
    /// that edits three files is three edits. `Err` is bad input.
    fn read(&self, payload: Value, accepted: &[EventName]) -> Result<Reading, String>;
    /// The answer for the harness; `None` prints Claude Code's own.
    fn answer(&self, event: EventName, output: &HookOutput) -> Option<Answer> {
        let _ = (event, output);
        None
    }
    /// The harness's cap on Stop blocks in a row, when it is not Claude
    /// Code's (`Some(0)`: it has none).
    fn block_cap(&self) -> Option<u32> {
        None
    }
    /// Whether payloads are Claude Code's unless they say otherwise, so an
    /// oversized one (which cannot be parsed to tell) is answered from its
    /// head as Claude Code's.
    fn is_claude(&self) -> bool {
        false
    }
    /// The names the harness's own process runs under
    /// ([`crate::harness::Harness::process_names`]); none for Claude Code.
    fn process_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// The exit code of an internal fault: 1, which Claude Code and most
    /// harnesses take as non-blocking. Copilot CLI takes it as a deny, so
    /// its dialect fails open with 0 (the one-line reason still goes to
    /// stderr).
    fn fault_code(&self) -> u8 {
        EXIT_FAULT
    }
}

/// What a [`Dialect`] made of a payload.
pub enum Reading {
    /// Claude Code-shaped inputs for the handler, in order.
    Inputs(Vec<Value>),
    /// Not ours to answer: one line on stderr, exit 0, nothing on stdout.
    StepAside(String),
}

/// A harness's answer: what goes to stdout (nothing when `None`) and the
/// exit code (never 2: see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub stdout: Option<String>,
    pub code: u8,
}

/// Claude Code's own dialect: the payload as it is, the answer as it is.
pub struct ClaudeCode;

impl Dialect for ClaudeCode {
    fn read(&self, payload: Value, _accepted: &[EventName]) -> Result<Reading, String> {
        Ok(Reading::Inputs(vec![payload]))
    }

    fn is_claude(&self) -> bool {
        true
    }
}

/// The Stop block cap the running dialect declared, if not Claude Code's.
static HARNESS_BLOCK_CAP: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// The cap on Stop blocks in a row of the harness this process answers,
/// when it is not Claude Code (whose cap the Stop hook knows itself).
pub fn harness_block_cap() -> Option<u32> {
    HARNESS_BLOCK_CAP.get().copied()
}

/// [`run_then`] for a harness's [`Dialect`]; `args` are the binary's
/// arguments.
pub fn run_dialect<H: Hook>(args: &[String], dialect: &dyn Dialect, after: fn(&Ctx)) -> ExitCode {
    crate::state::journal::set_writer(H::NAME);
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
        return fault_in::<H>(dialect, &format!("cannot read stdin: {error}"));
    }
    let payload = match protocol::parse_object(&bytes) {
        Ok(payload) => payload,
        // An oversized payload is answered from its head.
        Err(error @ protocol::InputError::TooLarge { .. }) => {
            return oversized::<H>(dialect, &bytes, &error.to_string());
        }
        Err(error) => return fault_in::<H>(dialect, &error.to_string()),
    };
    let values = match dialect.read(payload, H::EVENTS) {
        Ok(Reading::Inputs(values)) => values,
        Ok(Reading::StepAside(why)) => {
            eprintln!("{}: {}", H::NAME, why.replace(['\n', '\r'], " "));
            return ExitCode::SUCCESS;
        }
        Err(error) => return fault_in::<H>(dialect, &error),
    };
    if let Some(cap) = dialect.block_cap() {
        let _ = HARNESS_BLOCK_CAP.set(cap);
    }
    // Every input is checked before any is handled: bad input changes nothing.
    let mut inputs = Vec::with_capacity(values.len());
    for value in values {
        match protocol::input_from_value(value, H::EVENTS) {
            Ok(input) => inputs.push(input),
            Err(error) => return fault_in::<H>(dialect, &error.to_string()),
        }
    }
    let Some(first) = inputs.first() else {
        // Nothing in the payload for the kernel (a Codex patch naming no file).
        return ExitCode::SUCCESS;
    };
    let event = first.event();
    let mut ctx = match Ctx::from_env_for(first.common(), dialect.is_claude()) {
        Ok(ctx) => ctx,
        Err(error) => return fault_in::<H>(dialect, &format!("{error:#}")),
    };
    ctx.harness_process_names = dialect.process_names();
    let mut answered: Option<HookOutput> = None;
    let total = inputs.len();
    let began = std::time::Instant::now();
    for (done, input) in inputs.into_iter().enumerate() {
        // A payload of many inputs (a patch of thousands of files) that the
        // guard cannot finish before the harness's timeout would run
        // unchecked past it: denied, saying why, rather than let through.
        if done > 0 && event == EventName::PreToolUse && began.elapsed() >= MULTI_INPUT_BUDGET {
            let reason = format!(
                "ralph-hooks guard: this call names {total} files and {done} were checked in {} s, the guard's time for one call; the rest cannot be checked before the harness gives up on the hook. Split it into smaller calls.",
                MULTI_INPUT_BUDGET.as_secs()
            );
            answered = Some(HookOutput::deny(reason));
            break;
        }
        ctx.debug(format_args!(
            "{} handling {} (session {:?})",
            H::NAME,
            input.event().as_str(),
            input.common().session_id
        ));
        match H::handle(&ctx, input) {
            Ok(output) => {
                let denied = output.denies();
                answered = Some(match answered {
                    Some(before) => before.merged_with(output),
                    None => output,
                });
                if denied {
                    break;
                }
            }
            Err(error) => {
                let code = fault_in::<H>(dialect, &format!("{error:#}"));
                after(&ctx);
                return code;
            }
        }
    }
    let output = with_store_warnings(answered.unwrap_or_default(), ctx.store().take_warnings())
        .with_prose_escaped();
    let code = match dialect.answer(event, &output) {
        None => emit::<H>(&output),
        Some(answer) => write_answer(&answer),
    };
    // State this call wrote stays out of git, also in a project where
    // `ralph-hooks install` never ran (the plugin route): once the folder
    // has its `.gitignore`, this is one `stat`.
    if ctx.state_root.is_dir() {
        let _ = ctx.store().ignore_in_git();
    }
    after(&ctx);
    code
}

/// Prints a harness's answer; exit 2 is never written (see the module doc).
fn write_answer(answer: &Answer) -> ExitCode {
    if let Some(text) = &answer.stdout {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
    }
    ExitCode::from(if answer.code == EXIT_WAKE {
        EXIT_FAULT
    } else {
        answer.code
    })
}

/// An input too large to parse: the hook answers from its head when it
/// can (in the harness's own words), else it is a fault as before.
fn oversized<H: Hook>(dialect: &dyn Dialect, bytes: &[u8], why: &str) -> ExitCode {
    let head = protocol::Head::of(bytes);
    let Ok(mut ctx) = Ctx::from_env_for(&head.common, dialect.is_claude()) else {
        return fault_in::<H>(dialect, why);
    };
    ctx.harness_process_names = dialect.process_names();
    match H::handle_oversized(&ctx, &head) {
        Some(Ok(output)) => {
            let output = output.with_prose_escaped();
            // The event is the hook's own (its payload could not be read to
            // say which): the guard's is PreToolUse, the edit hook's
            // PostToolUse.
            let event = H::EVENTS.first().copied().unwrap_or(EventName::PreToolUse);
            match dialect.answer(event, &output) {
                None => emit::<H>(&output),
                Some(answer) => write_answer(&answer),
            }
        }
        Some(Err(error)) => fault_in::<H>(dialect, &format!("{why}; {error:#}")),
        None => fault_in::<H>(dialect, why),
    }
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
    if H::ASYNC_REWAKE
        && output.decision == Some(protocol::Decision::Block)
        && let Some(reason) = &output.reason
    {
        // Exit 2 with the reason on stderr and nothing on stdout: Claude
        // Code reads stderr as the woken turn's instruction, and JSON beside
        // exit 2 is not portable.
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{reason}").and_then(|()| stderr.flush());
        return ExitCode::from(EXIT_WAKE);
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
/// [`fault`], with the exit code `dialect` gives faults.
fn fault_in<H: Hook>(dialect: &dyn Dialect, message: &str) -> ExitCode {
    let code = fault::<H>(message);
    match dialect.fault_code() {
        EXIT_FAULT => code,
        other => ExitCode::from(other),
    }
}

fn fault<H: Hook>(message: &str) -> ExitCode {
    let one_line = message.replace(['\n', '\r'], " ");
    eprintln!("{}: {one_line}", H::NAME);
    ExitCode::from(EXIT_FAULT)
}
