//! The loop is the user's to end. While the agent works unattended, the
//! CLI commands that end or weaken the supervision are denied from Claude's
//! Bash tool — `loop cancel`, `loop resume` of a paused loop, `task complete
//! --force` and `task cancel` with steps open, `task steps set` that would
//! drop open steps, `install --uninstall` — and so are the `/cancel-loop`
//! and `/resume-loop` slash commands called through the Skill tool.
//!
//! The user's own ways keep working: a slash command the user types runs
//! its `!` shell line without any PreToolUse hook (seen with Claude Code
//! 2.1.330: only UserPromptSubmit and UserPromptExpansion fire), and a
//! terminal is no tool call at all. The reasons never name those ways: the
//! agent is told to keep working and to tell the user what it thinks.
//!
//! Pure: the commands and the supervision state in, a decision out.

use serde_json::Value;

use super::Supervision;
use super::shell::{self, Command};
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, ToolInput};
use crate::tasks::{self, TaskDoc};

/// Denies a ralph-hooks call that would end or weaken the supervision.
pub fn bash(ctx: &Ctx, commands: &[Command], supervision: &Supervision) -> Option<HookOutput> {
    for command in commands {
        let Some(args) = shell::ralph_hooks_args(&command.words) else {
            continue;
        };
        if args.iter().any(|a| a == "--help" || a == "-h") || names_other_project(ctx, args) {
            continue;
        }
        let positionals = shell::ralph_hooks_positionals(args);
        let flag = |name: &str| args.iter().any(|a| a == name);
        let reason = match positionals.as_slice() {
            ["loop", "cancel", ..] => supervision.loop_running().map(|state| {
                format!(
                    "The Ralph loop {} ({:?}) runs unattended, and ending it is the user's decision, not yours. Keep working toward its goal. If you believe it should end — the goal is wrong, cannot be reached, or is met in a way its checks cannot see — say so plainly in your reply.",
                    state.id, state.goal
                )
            }),
            ["loop", "pause", ..] => supervision.loop_running().map(|state| {
                format!(
                    "The Ralph loop {} ({:?}) runs unattended, and pausing it is the user's decision, not yours. Keep working toward its goal; if you are stuck, say so plainly in your reply.",
                    state.id, state.goal
                )
            }),
            ["loop", "resume", ..] => supervision.loop_paused().map(|state| {
                format!(
                    "The Ralph loop {} is paused, and it stays paused until the user resumes it. Tell the user where the work stands and what is left, and wait for them.",
                    state.id
                )
            }),
            ["task", "complete", ..] if flag("--force") => {
                task_write_refused(supervision, TaskWrite::ForceComplete)
            }
            ["task", "cancel", ..] => task_write_refused(supervision, TaskWrite::Cancel),
            ["task", "steps" | "step", "set", ..] => {
                task_write_refused(supervision, TaskWrite::SetSteps)
            }
            ["install", ..] if flag("--uninstall") && supervision.unattended() => Some(
                "Uninstalling the hooks would switch off the supervision of this unattended work; that is the user's decision.".to_string(),
            ),
            _ => None,
        };
        if let Some(reason) = reason {
            return Some(HookOutput::deny(reason));
        }
    }
    None
}

/// The hook binaries. Claude Code runs them; a command of the agent's that
/// runs one feeds it a payload of its own making (attack finding F10: a
/// forged StopFailure "rate_limit" pauses the loop, a forged SessionStart
/// or Stop ends the turn so that a queued "stop" counts).
pub const HOOK_BINARIES: &[&str] = &[
    "ralph-stop-loop-controller",
    "ralph-user-prompt-submit",
    "ralph-session-start",
    "ralph-pre-tool-stop-guard",
    "ralph-post-tool-lsp-diagnostic",
];

/// While the agent works unattended, denies a command that runs a hook
/// binary (`… | ralph-stop-loop-controller`, `exec -a x ralph-session-start`)
/// or whose text carries a hook payload beside a hook binary's name (an
/// interpreter one-liner). `--help` and `--version` pass. A name built at
/// run time passes this reading: in plain mode that is a known gap
/// (docs/guard.md); in sandbox mode the hook runs inside the sandbox and
/// cannot write the state.
pub fn hook_binary(
    text: &str,
    commands: &[Command],
    supervision: &Supervision,
) -> Option<HookOutput> {
    if !supervision.unattended() {
        return None;
    }
    let runs_one = commands.iter().any(|command| {
        let words = shell::command_part(&command.words);
        let Some(first) = words.first() else {
            return false;
        };
        let name = shell::basename(first);
        let name = name.strip_suffix(".exe").unwrap_or(name);
        HOOK_BINARIES.contains(&name)
            && !words[1..]
                .iter()
                .any(|w| w == "--help" || w == "-h" || w == "--version" || w == "-V")
    });
    let payload =
        text.contains("hook_event_name") && HOOK_BINARIES.iter().any(|b| text.contains(b));
    (runs_one || payload).then(|| {
        HookOutput::deny(
            "Hook binaries are Claude Code's to run: a payload fed to one by hand would speak for Claude Code while this work runs unattended. Keep working on the task itself.",
        )
    })
}

/// A change to the active task that ends or weakens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskWrite {
    /// `task complete --force` with steps open.
    ForceComplete,
    /// `task cancel`.
    Cancel,
    /// `task steps set` (the monitor's `set_steps`): replaces the steps,
    /// open ones included.
    SetSteps,
}

/// Why the agent may not make `write` now, or `None`: the one policy for
/// every way the agent can reach the task — its CLI through the Bash tool
/// ([`bash`]) and the monitor's write API, whose token the agent can read
/// from `monitor.json` (`ralph-hooks monitor`).
pub fn task_write_refused(supervision: &Supervision, write: TaskWrite) -> Option<String> {
    let (doc, open) = open_task(supervision)?;
    Some(match write {
        TaskWrite::ForceComplete => format!(
            "Task {} still has open steps ({open}), and closing it anyway is the user's decision while the work runs unattended. Finish the open steps; skip one that no longer applies with a note saying why (`ralph-hooks task step skip <id> --note \"why\"`).",
            doc.id
        ),
        TaskWrite::Cancel => format!(
            "Cancelling task {} would end the work the user set up to run unattended; that is their decision. If you cannot go on without them, block the task (`ralph-hooks task block --note \"what you need\"`) and ask.",
            doc.id
        ),
        TaskWrite::SetSteps => format!(
            "Setting new steps would drop the open steps of task {} ({open}). Finish them, skip the ones that no longer apply with a note (`ralph-hooks task step skip <id> --note \"why\"`), or add steps with `ralph-hooks task step add \"…\"`.",
            doc.id
        ),
    })
}

/// The active task and its open step ids, while the agent works
/// unattended and steps are open.
fn open_task(supervision: &Supervision) -> Option<(&TaskDoc, String)> {
    if !supervision.unattended() {
        return None;
    }
    let doc = supervision.task.as_ref()?;
    let open: Vec<String> = tasks::steps::open_steps(doc)
        .iter()
        .map(|step| step.id.clone())
        .collect();
    if open.is_empty() {
        return None;
    }
    Some((doc, open.join(", ")))
}

/// `--project DIR` naming another project than this one.
fn names_other_project(ctx: &Ctx, args: &[String]) -> bool {
    let project = args.iter().enumerate().find_map(|(at, word)| {
        word.strip_prefix("--project=")
            .map(str::to_string)
            .or_else(|| {
                (word == "--project")
                    .then(|| args.get(at + 1).cloned())
                    .flatten()
            })
    });
    let Some(project) = project else {
        return false;
    };
    let path = ctx.project_root.join(project);
    crate::util::paths::lexically_normal(&path)
        != crate::util::paths::lexically_normal(&ctx.project_root)
}

/// `/cancel-loop` and `/resume-loop` called by the agent through the Skill
/// (or older SlashCommand) tool: their `!` line would run with no Bash hook.
pub fn skill(tool: &ToolInput, supervision: &Supervision) -> Option<HookOutput> {
    let raw = tool
        .tool_input
        .get("skill")
        .or_else(|| tool.tool_input.get("command"))
        .and_then(Value::as_str)?;
    let first = raw.trim().trim_start_matches('/');
    let first = first.split_whitespace().next().unwrap_or_default();
    let name = first.rsplit(':').next().unwrap_or(first);
    let reason = match name {
        "cancel-loop" => supervision.loop_running().map(|state| {
            format!(
                "That command ends the Ralph loop {} ({:?}), and while it runs unattended that is the user's decision, not yours. Keep working toward its goal; if you believe it should end, say so plainly in your reply.",
                state.id, state.goal
            )
        }),
        "resume-loop" => supervision.loop_paused().map(|state| {
            format!(
                "The Ralph loop {} is paused, and it stays paused until the user resumes it. Tell the user where the work stands and wait for them.",
                state.id
            )
        }),
        _ => None,
    }?;
    Some(HookOutput::deny(reason))
}

/// The stop-guard message without its third way out (`task complete
/// --force`), which the guard denies itself while the work runs unattended.
pub fn without_force_hint(message: &str) -> String {
    match message.find("\n3. ") {
        Some(at) => format!(
            "{}\nIf the user wants the task closed with steps open, tell them so; that is their call.",
            &message[..at]
        ),
        None => message.to_string(),
    }
}
