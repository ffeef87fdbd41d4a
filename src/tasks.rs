//! Task files with steps (seed 002), issue 4. Not built yet.

use crate::ctx::Ctx;

/// The active task's checklist for session start; `None` when there is none.
pub fn session_context(_ctx: &Ctx) -> anyhow::Result<Option<String>> {
    Ok(None)
}
