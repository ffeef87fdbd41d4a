//! LSP diagnostics after edits and as a loop condition (issue 3). Not built
//! yet: edits get no report and the diagnostics condition always holds.

use crate::ctx::Ctx;
use crate::loop_ctl::ConditionOutcome;
use crate::loop_state::LoopState;
use crate::protocol::{HookOutput, ToolInput};

pub fn after_edit(_ctx: &Ctx, _tool: &ToolInput) -> anyhow::Result<HookOutput> {
    Ok(HookOutput::silent())
}

pub fn loop_condition(_ctx: &Ctx, _state: &LoopState) -> ConditionOutcome {
    ConditionOutcome {
        name: "diagnostics".into(),
        holds: true,
        ..ConditionOutcome::default()
    }
}

/// Lines for `ralph-hooks doctor`: per language, the server that would run.
pub fn doctor_lines(_ctx: &Ctx) -> Vec<String> {
    vec![
        "language servers: not checked yet (diagnostics are not built in this version)".to_string(),
    ]
}
