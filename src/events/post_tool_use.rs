//! `ralph-post-tool-lsp-diagnostic`: after a Write or Edit, tells Claude what
//! the file's language server says about it (and blocks, during a loop, when
//! the edit introduced errors); also flags orchestrator files that an edit
//! left out of schema. After a Bash command, first the guard's check of what
//! the command did to the protected files and the remote refs.

use crate::hook::Hook;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookInput, HookOutput};

pub struct PostToolLspDiagnostic;

impl Hook for PostToolLspDiagnostic {
    const NAME: &'static str = "ralph-post-tool-lsp-diagnostic";
    const EVENTS: &'static [EventName] = &[EventName::PostToolUse];
    const HELP: &'static str = "\
ralph-post-tool-lsp-diagnostic — Claude Code PostToolUse hook (Write|Edit|MultiEdit|Bash)

Reads one PostToolUse hook JSON object on stdin, runs the edited file's
language server and reports its diagnostics as additionalContext, marking
which ones this edit introduced. After a Bash command, the same for the
files it changed (one message; silent when it changed none). While a Ralph loop runs, an edit that
introduces errors is blocked with them as the reason. Orchestrator files
(state.json, contract YAMLs, knowledge.yaml) are validated against their schema.

Exit 1 with one stderr line on bad input or an internal fault (never blocks).
Config: <project>/.lsp.json and <project>/.claude/ralph-hooks.json (\"lsp\", \"diagnostics\").
";

    fn handle(ctx: &Ctx, input: HookInput) -> anyhow::Result<HookOutput> {
        let HookInput::PostToolUse(tool) = input else {
            return Ok(HookOutput::silent());
        };
        if let Some(output) = crate::orchestrator::schema::hook::check_edit(ctx, &tool) {
            return Ok(output);
        }
        if tool.tool_name == "Bash" {
            let effects = crate::guards::effects::after_bash(ctx, &tool);
            let output = crate::guards::effects::combined(
                effects,
                crate::diagnostics::after_bash(ctx, &tool),
            )?;
            // Sandbox mode: what the agent's CLI asked for from inside the
            // sandbox, applied after the check of the command's effects.
            let note = crate::events::sandbox::apply_inbox(ctx);
            return Ok(crate::events::sandbox::with_note(
                output,
                EventName::PostToolUse,
                note,
            ));
        }
        crate::diagnostics::after_edit(ctx, &tool)
    }
}
