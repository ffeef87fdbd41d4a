//! `ralph-pre-tool-stop-guard`: PreToolUse rules. Each rule either denies the
//! call with a reason that says what to do instead, or stays silent; none
//! ever answers `allow`, so the user's own permission prompts stay in charge.
//! PreSkillShellCommand (a skill's `` !`…` `` line) gets the Bash rules
//! ([`crate::guards::check_skill_shell`]).

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, Head, HookInput, HookOutput, ToolInput};

pub struct PreToolStopGuard;

impl Hook for PreToolStopGuard {
    const NAME: &'static str = "ralph-pre-tool-stop-guard";
    const EVENTS: &'static [EventName] = &[EventName::PreToolUse, EventName::PreSkillShellCommand];
    const HELP: &'static str = "\
ralph-pre-tool-stop-guard — Claude Code PreToolUse and PreSkillShellCommand hook

Reads one PreToolUse (or PreSkillShellCommand: a skill's or slash command's
!`…` line the agent called; the user's own are left alone) hook JSON object
on stdin and denies (never allows):
completing a task while steps are open, risky commands while a Ralph loop runs
unattended, direct edits of ralph-hooks' own state files, sub-agent prompts
with unsubstituted {{PLACEHOLDERS}}, and orchestrator contract files that break
their schema. Otherwise it prints nothing and the call goes on as usual.

Exit 1 with one stderr line on bad input or an internal fault (never blocks);
an input over 8 MiB is denied while a loop or task runs unattended.
Config: <project>/.claude/ralph-hooks.json, section \"guard\".
";

    /// A call whose input is over the 8 MiB the hooks read (a Write of a
    /// huge file, a patch padded with one beside a small edit of the
    /// loop's state) cannot be checked. While the agent works unattended it
    /// is refused, saying why; otherwise it passes, with the reason on
    /// stderr, as any input the hooks cannot read.
    fn handle_oversized(ctx: &Ctx, _head: &Head) -> Option<anyhow::Result<HookOutput>> {
        let supervision = crate::guards::Supervision::read(ctx).ok()?;
        if !supervision.unattended() {
            return None;
        }
        Some(Ok(HookOutput::deny(format!(
            "ralph-hooks guard: this call's input is larger than {} MiB, more than the guard reads, so what it writes cannot be checked while the work runs unattended. Write big files in parts, or from a script run with Bash.",
            crate::hook::protocol::MAX_INPUT_BYTES / (1024 * 1024)
        ))))
    }

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        // A put-back that failed before (a full disk) is tried again before
        // any rule reads the state.
        let retried = crate::guards::effects::pending::retry(ctx);
        let event = input.event();
        let output = match input {
            HookInput::PreToolUse(tool) => {
                // A check owed for an earlier command comes first: the rules
                // and this call's snapshot then see what was put back.
                let made_up = crate::guards::effects::make_up(ctx, Some(&tool), false);
                let output = decide(ctx, &tool)?;
                match made_up {
                    Some(told) => told.add_to(output, Some(EventName::PreToolUse)),
                    None => output,
                }
            }
            HookInput::PreSkillShellCommand(line) => {
                crate::guards::check_skill_shell(ctx, &line).unwrap_or_default()
            }
            _ => HookOutput::silent(),
        };
        Ok(match retried {
            Some(outcome) => outcome.annotate(ctx, output, event),
            None => output,
        })
    }
}

fn decide(ctx: &Ctx, tool: &ToolInput) -> anyhow::Result<HookOutput> {
    // A guard answer is either a deny, or only a note for the user that
    // a rule could not be evaluated; a note must not hide the schema check.
    let guard = crate::guards::check(ctx, tool).unwrap_or_default();
    if guard.hook_specific_output.is_some() {
        return Ok(guard);
    }
    if let Some(mut output) = crate::orchestrator::schema::hook::check_write(ctx, tool) {
        if let Some(note) = guard.system_message {
            let message = match output.system_message.take() {
                Some(own) => format!("{own}\n{note}"),
                None => note,
            };
            output.system_message = Some(message);
        }
        return Ok(output);
    }
    Ok(guard)
}
