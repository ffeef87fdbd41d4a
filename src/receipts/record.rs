//! Writing a finished loop's receipt: `receipts/<loop-id>.json` under the
//! state root, an unsigned in-toto statement. Called where a loop ends (the
//! Stop hook for COMPLETED and FAILED, `loop cancel` for CANCELLED), after
//! the loop's state is saved. Signing is left to `loop receipt`, run by the
//! user: a hook cannot ask for a key's passphrase.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::statement::{self, Facts};
use super::{servers, tree};
use crate::hook::ctx::Ctx;
use crate::ralph::loop_state::{LoopState, RECEIPTS_DIR};
use crate::state::ids;

/// `receipts/<id>.json`, relative to the state root.
pub fn relative_path(id: &str) -> anyhow::Result<String> {
    ids::check("loop", id).context("refusing a receipt path for an unsafe loop id")?;
    Ok(format!("{RECEIPTS_DIR}/{id}.json"))
}

/// The state root relative to the project root, when it is inside it: what
/// the tree leaves out.
pub fn excluded_paths(project_root: &Path, state_root: &Path) -> Vec<String> {
    match state_root.strip_prefix(project_root) {
        Ok(relative) if !relative.as_os_str().is_empty() => {
            vec![relative.to_string_lossy().into_owned()]
        }
        _ => Vec::new(),
    }
}

/// The facts around a finished loop: its tree now, the servers' versions.
pub fn facts(ctx: &Ctx, state: &LoopState) -> Facts {
    let excluded = excluded_paths(&ctx.project_root, &ctx.state_root);
    let (tree, tree_note, prefix) = match tree::of_work(&ctx.project_root, &excluded) {
        Ok(hashed) => (Some(hashed.tree.clone()), None, hashed.prefix.clone()),
        Err(error) => (None, Some(format!("{error:#}")), String::new()),
    };
    let names = statement::servers_used(state);
    let servers = if names.is_empty() {
        Default::default()
    } else {
        servers::versions(&ctx.project_root, ctx.config(), &names)
    };
    Facts {
        tree,
        tree_note,
        prefix,
        excluded,
        name: ctx
            .project_root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "project".into()),
        servers,
        tool_version: env!("CARGO_PKG_VERSION").into(),
    }
}

/// Writes the receipt of a finished loop; its path.
pub fn write(ctx: &Ctx, state: &LoopState) -> anyhow::Result<PathBuf> {
    let relative = relative_path(&state.id)?;
    let statement = statement::build(state, &facts(ctx, state));
    let text = serde_json::to_string_pretty(&statement)?;
    ctx.store()
        .lock(&relative)?
        .save_text(&format!("{text}\n"))?;
    Ok(ctx.store().path(&relative))
}

/// [`write`] for a hook or a command that must go on without it: the
/// sentence naming the receipt for the loop's end message, or (on a fault,
/// said on stderr) nothing.
pub fn write_and_name(ctx: &Ctx, state: &LoopState, who: &str) -> Option<String> {
    match write(ctx, state) {
        // The project's path may hold anything a folder name can (an
        // escape sequence, a newline that forges a line of the message).
        Ok(path) => Some(format!(
            "Receipt: {} (`ralph-hooks loop receipt {}` exports it, `ralph-hooks verify` re-runs it).",
            crate::util::text::escape_controls(&path.to_string_lossy()),
            state.id
        )),
        Err(error) => {
            eprintln!("{who}: warning: cannot write the loop's receipt: {error:#}");
            None
        }
    }
}
