//! Orchestrator state, knowledge and resumable commands at session start (issue 5). Not built yet.

use crate::ctx::Ctx;

pub fn session_context(_ctx: &Ctx) -> anyhow::Result<Option<String>> {
    Ok(None)
}
