//! The other agent harnesses (Codex CLI, Gemini CLI, Cursor, GitHub Copilot
//! CLI) in front of the one kernel: the loop, the guard, the post-edit
//! diagnostics, task continuation and the session-start summary, which only
//! ever see Claude Code's payloads and answer in Claude Code's words.
//!
//! Each harness is a [`Dialect`] in its own file: it turns the harness's
//! payload into Claude Code-shaped inputs and the kernel's answer into the
//! harness's answer and exit code. Which one speaks is chosen from the
//! `--harness <name>` argument that `ralph-hooks install --harness` writes
//! on each hook command line, else from the payload ([`claude::Detecting`]).
//! With neither, the binaries are Claude Code's exactly as before: the
//! payload is parsed once, as it always was, and the answer printed as it
//! always was.

pub mod claude;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod gemini;

use std::process::ExitCode;

use serde_json::{Map, Value};

use crate::hook::ctx::Ctx;
use crate::hook::{Dialect, Hook};

/// The argument naming the harness: `--harness codex`.
pub const HARNESS_ARG: &str = "--harness";
/// The argument naming the event, for a harness whose payload does not
/// (Copilot CLI's camelCase payloads): `--event agentStop`.
pub const EVENT_ARG: &str = "--event";

/// An agent harness the hooks can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Copilot,
}

impl Harness {
    pub const ALL: [Harness; 5] = [
        Harness::Claude,
        Harness::Codex,
        Harness::Gemini,
        Harness::Cursor,
        Harness::Copilot,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Gemini => "gemini",
            Harness::Cursor => "cursor",
            Harness::Copilot => "copilot",
        }
    }

    /// The names the harness's own process runs under: its executable's
    /// file name, or the script node runs. The hooks learn which process
    /// is the harness's by them (Claude Code names its own in `CLAUDE_PID`),
    /// to tell the hooks it starts itself from a hook that the agent's
    /// command feeds. Matched case-blind, as a prefix.
    pub fn process_names(self) -> &'static [&'static str] {
        match self {
            Harness::Claude => &[],
            Harness::Codex => &["codex"],
            Harness::Gemini => &["gemini"],
            Harness::Cursor => &["cursor"],
            Harness::Copilot => &["copilot"],
        }
    }

    pub fn parse(name: &str) -> Option<Harness> {
        Harness::ALL
            .into_iter()
            .find(|harness| harness.name() == name)
    }

    /// The harness's dialect; `args` are the binary's arguments.
    pub fn dialect(self, args: &[String]) -> Box<dyn Dialect> {
        match self {
            Harness::Claude => Box::new(crate::hook::ClaudeCode),
            Harness::Codex => Box::new(codex::Codex),
            Harness::Gemini => Box::new(gemini::Gemini),
            Harness::Cursor => Box::new(cursor::Cursor),
            Harness::Copilot => Box::new(copilot::Copilot {
                event: arg_value(args, EVENT_ARG).map(str::to_string),
            }),
        }
    }
}

/// The value of `--name value` or `--name=value` among `args`.
pub fn arg_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next().map(String::as_str);
        }
        if let Some(value) = arg
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
        {
            return Some(value);
        }
    }
    None
}

/// Runs hook `H` as a process for the harness the arguments or the payload
/// name, then `after` (see [`crate::hook::run_then`]).
pub fn run<H: Hook>(after: fn(&Ctx)) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match arg_value(&args, HARNESS_ARG) {
        None => crate::hook::run_dialect::<H>(&args, &claude::Detecting::default(), after),
        Some(name) => match Harness::parse(name) {
            Some(harness) => crate::hook::run_dialect::<H>(&args, &*harness.dialect(&args), after),
            None => {
                eprintln!(
                    "{}: unknown harness {name:?} (known: claude, codex, gemini, cursor, copilot)",
                    H::NAME
                );
                ExitCode::from(1)
            }
        },
    }
}

/// The payload as a JSON object (the hook layer checked it is one).
fn object(payload: Value) -> Map<String, Value> {
    match payload {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A string field of `map`.
fn text<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// Moves `from` to `to` when `to` is not already there.
fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if !map.contains_key(to)
        && let Some(value) = map.remove(from)
    {
        map.insert(to.to_string(), value);
    }
}

/// `tool_input` with the file's path under `file_path`, whatever the
/// harness called it.
fn with_file_path(mut input: Value) -> Value {
    if let Some(object) = input.as_object_mut()
        && !object.contains_key("file_path")
    {
        for key in ["path", "filePath", "target_file", "absolute_path"] {
            if let Some(path) = object.get(key).cloned() {
                object.insert("file_path".into(), path);
                break;
            }
        }
    }
    input
}

/// The prompts our own Stop answers make: the loop's follow-up (possibly
/// after a note about an owed check), task continuation, a resumed loop.
const OUR_FOLLOW_UPS: [&str; 3] = [
    "[RALPH LOOP — iteration ",
    "[SELF-DRIVING ",
    "[ralph-hooks] ",
];

/// Marks a prompt that one of our Stop answers made as not the user's
/// (`source: "system"`). Claude Code never runs the prompt hook for a
/// Stop's continuation; Gemini, Cursor and Copilot submit it as the next
/// prompt, through that hook, with nothing else to tell it from the
/// user's — and only the user's prompts may lift a pause or reset the
/// loop's count of blocks in a row.
fn mark_our_follow_up(map: &mut Map<String, Value>) {
    let ours = text(map, "prompt").is_some_and(|prompt| {
        let prompt = prompt.trim_start();
        prompt.contains(OUR_FOLLOW_UPS[0])
            || OUR_FOLLOW_UPS[1..]
                .iter()
                .any(|marker| prompt.starts_with(marker))
    });
    if ours && !map.contains_key("source") {
        map.insert("source".into(), Value::String("system".into()));
    }
}

/// The kernel's answer as the text a harness should see: a block's reason
/// (a loop's follow-up) and the context, in that order.
fn context_and_reason(output: &crate::hook::protocol::HookOutput) -> Option<String> {
    let context = output
        .hook_specific_output
        .as_ref()
        .and_then(|specific| specific.additional_context.clone());
    match (context, output.reason.clone()) {
        (Some(context), Some(reason)) => Some(format!("{context}\n{reason}")),
        (context, reason) => context.or(reason),
    }
}

/// The deny reason of a PreToolUse answer.
fn deny_reason(output: &crate::hook::protocol::HookOutput) -> Option<String> {
    output
        .denies()
        .then(|| {
            output
                .hook_specific_output
                .as_ref()
                .and_then(|specific| specific.permission_decision_reason.clone())
        })
        .flatten()
}

/// A JSON answer on exit 0, or nothing when `value` has no field.
fn json_answer(value: Value) -> crate::hook::Answer {
    let empty = value.as_object().is_none_or(Map::is_empty);
    crate::hook::Answer {
        stdout: (!empty).then(|| value.to_string()),
        code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_argument_forms() {
        let args: Vec<String> = ["--harness", "codex"].map(String::from).to_vec();
        assert_eq!(arg_value(&args, HARNESS_ARG), Some("codex"));
        let args: Vec<String> = ["--rewake", "--harness=cursor"].map(String::from).to_vec();
        assert_eq!(arg_value(&args, HARNESS_ARG), Some("cursor"));
        assert_eq!(arg_value(&args, EVENT_ARG), None);
        for harness in Harness::ALL {
            assert_eq!(Harness::parse(harness.name()), Some(harness));
        }
    }
}
