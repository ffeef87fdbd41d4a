//! What an edit broke, told right after it: the per-edit feedback of the
//! PostToolUse hook.
//!
//! - [`after_edit`] (PostToolUse of Write/Edit/MultiEdit): the edited file's
//!   diagnostics from its real language server, each marked as introduced by
//!   this edit or already there; clean, issues found, inconclusive (timeout,
//!   crash — never reported as clean), warming up, unsupported (silent) or
//!   not installed (one notice per session). During a running loop the file
//!   is recorded in `touched_files` and an edit that introduced errors is
//!   blocked.
//! - [`after_bash`] (PostToolUse of Bash): the same for the files the
//!   command changed, in one message; silent when it changed none.
//! - [`doctor_lines`]: which server each language would use, and why.
//!
//! Modules: [`report`] (how a file's feedback reads), [`baseline`]
//! (`diagnostics.json`), [`lines`] and [`classify`] (introduced vs already
//! there, line-shift aware), [`ast_grep`] (the rules on the edited file).
//! Whole-project checks and loop conditions are [`crate::engine`]'s.
//!
//! Uses [`crate::engine`] (server choice, one file's check, the diagnostic
//! model), [`crate::daemon`], [`crate::lsp`], [`crate::ralph`] (the running
//! loop it blocks for) and the layers below; used by the PostToolUse handler
//! and `doctor`.

pub mod ast_grep;
pub mod baseline;
pub mod bash;
pub mod classify;
pub mod doctor;
pub mod edit;
pub mod lines;
pub mod report;

use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, ToolInput};

/// PostToolUse: the edited file's diagnostics (and a block, in a loop, when
/// the edit introduced errors).
pub fn after_edit(ctx: &Ctx, tool: &ToolInput) -> anyhow::Result<HookOutput> {
    edit::after_edit(ctx, tool)
}

/// PostToolUse of Bash: the diagnostics of the files the command changed
/// (silent when it changed none).
pub fn after_bash(ctx: &Ctx, tool: &ToolInput) -> anyhow::Result<HookOutput> {
    bash::after_bash(ctx, tool)
}

/// Lines for `ralph-hooks doctor`: per language, the server that would run.
pub fn doctor_lines(ctx: &Ctx) -> Vec<String> {
    doctor::doctor_lines(ctx)
}
