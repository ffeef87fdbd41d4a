//! LSP diagnostics after edits and as a loop completion condition (issue 3).
//!
//! - [`after_edit`] (PostToolUse of Write/Edit/MultiEdit): the edited file's
//!   diagnostics from its real language server, each marked as introduced by
//!   this edit or already there; clean, issues found, inconclusive (timeout,
//!   crash — never reported as clean), unsupported (silent) or not installed
//!   (one notice per session). During a running loop the file is recorded in
//!   `touched_files` and an edit that introduced errors is blocked.
//! - [`loop_condition`] (Stop): no errors left in the files the loop touched,
//!   checked fresh; inconclusive never completes a loop.
//! - [`doctor_lines`]: which server each language would use.
//!
//! Modules: [`settings`] (config), [`check`] (one file through its server),
//! [`model`] and [`report`] (what a diagnostic is and how it reads),
//! [`baseline`] (`diagnostics.json`), [`lines`] and [`classify`]
//! (introduced vs already there, line-shift aware), [`ast_grep`].
//!
//! Uses [`crate::daemon`], [`crate::lsp`], [`crate::ralph`] (the running
//! loop it blocks for) and the layers below; used by the PostToolUse and
//! Stop handlers and `doctor`.

pub mod ast_grep;
pub mod baseline;
pub mod check;
pub mod classify;
pub mod doctor;
pub mod edit;
pub mod lines;
pub mod loop_condition;
pub mod model;
pub mod project;
pub mod report;
pub mod settings;

use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, ToolInput};
use crate::ralph::loop_ctl::ConditionOutcome;
use crate::ralph::loop_state::LoopState;

/// PostToolUse: the edited file's diagnostics (and a block, in a loop, when
/// the edit introduced errors).
pub fn after_edit(ctx: &Ctx, tool: &ToolInput) -> anyhow::Result<HookOutput> {
    edit::after_edit(ctx, tool)
}

/// Stop: the loop's diagnostics condition over the files it touched.
pub fn loop_condition(ctx: &Ctx, state: &LoopState) -> ConditionOutcome {
    loop_condition::loop_condition(ctx, state)
}

/// Lines for `ralph-hooks doctor`: per language, the server that would run.
pub fn doctor_lines(ctx: &Ctx) -> Vec<String> {
    doctor::doctor_lines(ctx)
}
