//! `ralph-post-tool-lsp-diagnostic`: after a Write or Edit, tells Claude what
//! the file's language server says about it (and blocks, during a loop, when
//! the edit introduced errors); also flags orchestrator files that an edit
//! left out of schema. After a Bash command — also one that failed or was
//! interrupted (PostToolUseFailure) — first the guard's check of what the
//! command did to the protected files and the remote refs, and before all
//! that the checks still owed for earlier commands whose hook never ran.

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, Head, HookInput, HookOutput, ToolInput};

pub struct PostToolLspDiagnostic;

impl Hook for PostToolLspDiagnostic {
    const NAME: &'static str = "ralph-post-tool-lsp-diagnostic";
    const EVENTS: &'static [EventName] = &[EventName::PostToolUse, EventName::PostToolUseFailure];
    const HELP: &'static str = "\
ralph-post-tool-lsp-diagnostic — Claude Code PostToolUse hook (Write|Edit|MultiEdit|Bash)
and PostToolUseFailure hook (Bash)

Reads one PostToolUse (or PostToolUseFailure) hook JSON object on stdin, runs the edited file's
language server and reports its diagnostics as additionalContext, marking
which ones this edit introduced. After a Bash command, the same for the
files it changed (one message; silent when it changed none), also when the
command failed or was interrupted (PostToolUseFailure: context only). While a Ralph loop runs, an edit that
introduces errors is blocked with them as the reason. Orchestrator files
(state.json, contract YAMLs, knowledge.yaml) are validated against their schema.

Exit 1 with one stderr line on bad input or an internal fault (never blocks).
Config: <project>/.lsp.json and <project>/.claude/ralph-hooks.json (\"lsp\", \"diagnostics\").
";

    /// A Write or Edit whose input is over the limit (a file of many MiB):
    /// Claude is told the file was not checked, and a loop keeps it among
    /// its touched files so its Stop checks it from disk.
    fn handle_oversized(ctx: &Ctx, head: &Head) -> Option<anyhow::Result<HookOutput>> {
        if head.hook_event_name.as_deref() != Some("PostToolUse") {
            return None;
        }
        if !matches!(
            head.tool_name.as_deref(),
            Some("Write" | "Edit" | "MultiEdit")
        ) {
            return None;
        }
        let file_path = head.file_path.as_deref()?;
        Some(crate::diagnostics::edit::after_oversized_edit(
            ctx, file_path,
        ))
    }

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        let (tool, event) = match input {
            HookInput::PostToolUse(tool) => (tool, EventName::PostToolUse),
            HookInput::PostToolUseFailure(tool) => (tool, EventName::PostToolUseFailure),
            _ => return Ok(HookOutput::silent()),
        };
        if event == EventName::PostToolUseFailure
            && tool.is_interrupt.as_ref().and_then(|v| v.as_bool()) == Some(true)
        {
            // The user interrupted the turn (Esc during a tool call): it is
            // over without a Stop, and their next prompt starts one.
            if let Err(error) =
                crate::ralph::turns::end_after_interrupt(ctx, tool.tool_use_id.as_deref())
            {
                eprintln!(
                    "ralph-post-tool-lsp-diagnostic: cannot record the end of the turn: {error:#}"
                );
            }
        }
        let made_up = crate::guards::effects::make_up(ctx, Some(&tool), false);
        let output = answer(ctx, &tool, event)?;
        let output = match event {
            EventName::PostToolUseFailure => only_context(output),
            _ => output,
        };
        Ok(match made_up {
            Some(told) => told.add_to(output, Some(event)),
            None => output,
        })
    }
}

fn answer(ctx: &Ctx, tool: &ToolInput, event: EventName) -> anyhow::Result<HookOutput> {
    if event == EventName::PostToolUse
        && let Some(output) = crate::orchestrator::schema::hook::check_edit(ctx, tool)
    {
        return Ok(output);
    }
    if tool.tool_name == "Bash" {
        let effects = crate::guards::effects::after_bash(ctx, tool);
        let output =
            crate::guards::effects::combined(effects, crate::diagnostics::after_bash(ctx, tool))?;
        // Sandbox mode: what the agent's CLI asked for from inside the
        // sandbox, applied after the check of the command's effects.
        let note = crate::events::sandbox::apply_inbox(ctx);
        return Ok(crate::events::sandbox::with_note(output, event, note));
    }
    if event == EventName::PostToolUse {
        // A late write of a background process is put back before the
        // edit's checks read any state (the Bash path does it in after_bash).
        let retried = crate::guards::effects::pending::retry(ctx);
        let output = crate::diagnostics::after_edit(ctx, tool)?;
        return Ok(match retried {
            Some(outcome) => outcome.annotate(ctx, output, EventName::PostToolUse),
            None => output,
        });
    }
    Ok(HookOutput::silent())
}

/// PostToolUseFailure honours `additionalContext` only: a block's reason
/// becomes context, and the event is named as the one answered.
fn only_context(mut output: HookOutput) -> HookOutput {
    let reason = output.reason.take();
    output.decision = None;
    if output.is_silent() && reason.is_none() {
        return output;
    }
    let context = output
        .hook_specific_output
        .as_ref()
        .and_then(|specific| specific.additional_context.clone());
    let text = match (context, reason) {
        (Some(context), Some(reason)) => Some(format!("{context}\n{reason}")),
        (context, reason) => context.or(reason),
    };
    output.hook_specific_output = text.map(|text| crate::hook::protocol::HookSpecificOutput {
        hook_event_name: EventName::PostToolUseFailure.as_str(),
        additional_context: Some(text),
        ..Default::default()
    });
    output
}
