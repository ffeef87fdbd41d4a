//! Sandbox mode's two ways across the wall, both run by hooks, which Claude
//! Code runs outside its sandbox:
//!
//! - [`apply_inbox`]: the agent's CLI, inside the sandbox, cannot write the
//!   state; for the changes the agent may make (its task steps and
//!   progress) it leaves a request in the inbox ([`crate::hook::sandbox`]).
//!   The hook after the Bash call judges each request
//!   with the guard's PreToolUse policy, as if the agent had typed
//!   `ralph-hooks …` itself, and runs the allowed ones with the CLI; the
//!   agent is told what was applied and what was refused.
//! - [`user_command`]: a slash command's `` !`…` `` line runs inside the
//!   sandbox too, so in sandbox mode `/ralph-loop`, `/cancel-loop` and
//!   `/resume-loop` are carried out by the UserPromptSubmit hook from the
//!   user's own prompt; their command files only show the result.

use std::fmt::Write as _;
use std::process::Command;

use serde_json::json;

use crate::hook::ctx::Ctx;
use crate::hook::protocol::{
    Common, EventName, HookOutput, PermissionDecision, ToolInput, cap_chars,
};
use crate::hook::sandbox::{self, Taken};
use crate::util::text::escape_controls;

/// The longest CLI output passed on, per request.
const MAX_SHOWN: usize = 2_000;

/// Applies the inbox's requests; what to tell the agent, if anything.
pub fn apply_inbox(ctx: &Ctx) -> Option<String> {
    let taken = sandbox::take(&ctx.project_root);
    if taken.is_empty() {
        return None;
    }
    let mut text = String::from(
        "[ralph-hooks] Requests your `ralph-hooks` commands left from inside Claude Code's sandbox (the state is read-only there):",
    );
    for item in taken {
        match item {
            Taken::Refused(reason) => {
                let _ = write!(text, "\n- refused: {reason}");
            }
            Taken::Request(request) => {
                let shown = escape_controls(&request.args.join(" ")).into_owned();
                match judge(ctx, &request.args) {
                    Some(reason) => {
                        ctx.debug(format_args!("inbox: refused `{shown}`: {reason}"));
                        let _ = write!(text, "\n- refused `ralph-hooks {shown}`: {reason}");
                    }
                    None => {
                        let (ok, output) = run_cli(ctx, &request.args, false);
                        let _ = write!(
                            text,
                            "\n- {} `ralph-hooks {shown}`: {}",
                            if ok { "applied" } else { "failed" },
                            output
                        );
                    }
                }
            }
        }
    }
    Some(text)
}

/// `output` with a note added in front of its context for Claude.
pub fn with_note(output: HookOutput, event: EventName, note: Option<String>) -> HookOutput {
    let Some(note) = note else {
        return output;
    };
    let mut output = output;
    match output.hook_specific_output.as_mut() {
        Some(specific) => {
            let joined = match specific.additional_context.take() {
                Some(existing) if !existing.is_empty() => format!("{note}\n\n{existing}"),
                _ => note,
            };
            specific.additional_context = Some(cap_chars(joined));
            output
        }
        None => {
            let context = HookOutput::context(event, note);
            HookOutput {
                hook_specific_output: context.hook_specific_output,
                ..output
            }
        }
    }
}

/// The guard's reason to refuse `args` as a Bash call of the agent's, if it
/// has one.
fn judge(ctx: &Ctx, args: &[String]) -> Option<String> {
    let command = std::iter::once("ralph-hooks".to_string())
        .chain(args.iter().map(|arg| quote(arg)))
        .collect::<Vec<_>>()
        .join(" ");
    let tool = ToolInput {
        common: Common {
            session_id: ctx.session_id.clone(),
            ..Common::default()
        },
        tool_name: "Bash".into(),
        tool_input: json!({"command": command}),
        tool_response: serde_json::Value::Null,
        tool_use_id: None,
        error: None,
        is_interrupt: None,
    };
    let output = crate::guards::check(ctx, &tool)?;
    let specific = output.hook_specific_output?;
    (specific.permission_decision == Some(PermissionDecision::Deny)).then(|| {
        specific
            .permission_decision_reason
            .unwrap_or_else(|| "the guard refused it".into())
    })
}

/// Single-quotes a word for the guard's shell reader when it needs it.
fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Runs the CLI outside the sandbox on this project and state root, as this
/// session; whether it succeeded and its output, escaped and cut. `user`:
/// the user's own command (not marked as run from inside Claude Code).
fn run_cli(ctx: &Ctx, args: &[String], user: bool) -> (bool, String) {
    let Some(cli) = crate::util::process::cli_binary() else {
        return (false, "the ralph-hooks CLI was not found".into());
    };
    let mut command = Command::new(&cli);
    command
        .args(args)
        .env("CLAUDE_PROJECT_DIR", &ctx.project_root)
        .env("RALPH_HOOKS_STATE_DIR", &ctx.state_root)
        .env("NO_COLOR", "1")
        .current_dir(&ctx.project_root)
        .stdin(std::process::Stdio::null());
    match &ctx.session_id {
        Some(session) => command.env("CLAUDE_CODE_SESSION_ID", session),
        None => command.env_remove("CLAUDE_CODE_SESSION_ID"),
    };
    if user {
        command.env_remove("CLAUDECODE");
    }
    match command.output() {
        Ok(output) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&output.stderr);
            if !stderr.trim().is_empty() {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&stderr);
            }
            let mut text: String = text.trim().chars().take(MAX_SHOWN).collect();
            if text.is_empty() {
                text = "done".into();
            }
            // Newlines stay (the output is several lines); other control
            // characters never reach Claude or the terminal.
            let text = text
                .lines()
                .map(|line| escape_controls(line).into_owned())
                .collect::<Vec<_>>()
                .join("\n");
            (output.status.success(), text)
        }
        Err(error) => (false, format!("cannot run {}: {error}", cli.display())),
    }
}

/// The user's slash commands that sandbox mode carries out from the prompt,
/// with the CLI arguments each stands for.
const USER_COMMANDS: &[(&str, &[&str])] = &[
    ("/ralph-loop", &["loop", "start"]),
    ("/cancel-loop", &["loop", "cancel"]),
    ("/resume-loop", &["loop", "resume"]),
];

/// In sandbox mode, carries out the user's `/ralph-loop`, `/cancel-loop` or
/// `/resume-loop` typed as the prompt; the result for Claude's context and
/// for the user. `None`: not one of them, or sandbox mode is off (the
/// command file's own line does it then).
pub fn user_command(ctx: &Ctx, prompt: &str) -> Option<(String, String)> {
    let prompt = prompt.trim();
    let (name, cli_args) = USER_COMMANDS.iter().find(|(name, _)| {
        prompt
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
    })?;
    if !sandbox::installed(ctx) {
        return None;
    }
    let rest = prompt[name.len()..].trim();
    let mut args: Vec<String> = cli_args.iter().map(|a| a.to_string()).collect();
    args.extend(split_words(rest));
    let (ok, output) = run_cli(ctx, &args, true);
    ctx.debug(format_args!(
        "sandbox mode: the user's {name} ran `ralph-hooks {}` outside the sandbox (ok: {ok})",
        args.join(" ")
    ));
    let context = format!(
        "[ralph-hooks] The user's {name} was carried out by the ralph-hooks prompt hook, outside Claude Code's sandbox (`ralph-hooks {}`){}:\n{output}",
        escape_controls(&args.join(" ")),
        if ok { "" } else { " and FAILED" }
    );
    let user_message = format!(
        "ralph-hooks: {name}: {}",
        output.lines().next().unwrap_or("done")
    );
    Some((context, user_message))
}

/// The words of the user's arguments as a shell splits them, and nothing
/// else: no expansion, no second command (the command file's `$ARGUMENTS`
/// line quoted the same way).
fn split_words(text: &str) -> Vec<String> {
    crate::util::words::split(text, crate::util::words::Until::ALL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_arguments_split_as_a_shell_would_without_running_anything() {
        assert_eq!(
            split_words(r#""E2E-GOAL: say the word" --promise WORD --max-iterations 4"#),
            [
                "E2E-GOAL: say the word",
                "--promise",
                "WORD",
                "--max-iterations",
                "4"
            ]
        );
        assert_eq!(
            split_words(r#"fix 'it''s' "a \"b\" \n" c\ d $(rm -rf x); ls"#),
            [
                "fix",
                "its",
                "a \"b\" \\n",
                "c d",
                "$(rm",
                "-rf",
                "x);",
                "ls"
            ]
        );
        assert_eq!(split_words("  "), Vec::<String>::new());
        assert_eq!(split_words("''"), [""]);
    }

    #[test]
    fn quoting_keeps_words_whole() {
        assert_eq!(quote("s1"), "s1");
        assert_eq!(quote("two words"), "'two words'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
