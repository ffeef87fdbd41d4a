//! What the CLI does inside Claude Code's sandbox (sandbox mode), where the
//! state root is read-only: reading commands work as anywhere; the changes
//! the agent may make (its task steps and progress) are left in the inbox
//! for the hook after the Bash call to judge and apply
//! ([`crate::hook::sandbox`]); the rest (ending or starting a loop, closing
//! a task by force, uninstalling) is the user's, and the CLI says so.

use std::ffi::OsString;
use std::process::ExitCode;

use super::parser::Command;
use crate::hook::ctx::Ctx;
use crate::hook::sandbox::{self, Request};

/// Whether `command` changes the supervision state.
fn writes_state(command: &Command) -> bool {
    match command {
        Command::Task(action) => !matches!(
            action,
            super::task::TaskCommand::Status { .. } | super::task::TaskCommand::List { .. }
        ),
        Command::Loop(action) => !matches!(
            action,
            super::loop_cmd::LoopCommand::Status { .. }
                | super::loop_cmd::LoopCommand::Receipt { .. }
        ),
        Command::Install(_) => true,
        _ => false,
    }
}

/// Handles `command` when the state root is read-only here; `None` when the
/// CLI goes its ordinary way.
pub fn gate(ctx: &Ctx, command: &Command, raw_args: &[OsString]) -> Option<ExitCode> {
    if !writes_state(command) || !sandbox::state_read_only(ctx) {
        return None;
    }
    let args = without_global_options(raw_args);
    let shown = crate::util::text::escape_controls(&args.join(" ")).into_owned();
    if !sandbox::agent_safe(&args) {
        eprintln!(
            "ralph-hooks: the state in {} is read-only inside Claude Code's sandbox, and `ralph-hooks {shown}` is the user's to run (from their terminal or their slash command), not something a command in the sandbox can do.",
            ctx.state_root.display()
        );
        return Some(ExitCode::from(1));
    }
    let request = Request {
        args,
        session_id: ctx.session_id.clone(),
    };
    match sandbox::submit(&ctx.project_root, &request) {
        Ok(_) => {
            println!(
                "Queued `ralph-hooks {shown}`: the state is read-only inside Claude Code's sandbox, so the ralph-hooks hook that runs after this command applies it and tells you the result."
            );
            Some(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("ralph-hooks: cannot queue `ralph-hooks {shown}`: {error:#}");
            Some(ExitCode::from(1))
        }
    }
}

/// The command's own words: global options (`--project`, `--debug`,
/// `--color`) left out, as the hook runs it on this project anyway.
fn without_global_options(raw: &[OsString]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = raw.iter().map(|w| w.to_string_lossy().into_owned());
    while let Some(word) = words.next() {
        match word.as_str() {
            "--debug" => {}
            "--project" | "--color" => {
                words.next();
            }
            w if w.starts_with("--project=") || w.starts_with("--color=") => {}
            _ => out.push(word),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_options_are_left_out() {
        let raw: Vec<OsString> = [
            "--project",
            "/p",
            "task",
            "--debug",
            "step",
            "complete",
            "s1",
            "--color=never",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert_eq!(
            without_global_options(&raw),
            ["task", "step", "complete", "s1"]
        );
    }
}
