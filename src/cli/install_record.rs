//! How `install` found the project, kept for `--uninstall`
//! ([`super::uninstall`]): `install.json` in the state root, written by the
//! first install and kept by later ones.

use serde::{Deserialize, Serialize};

use crate::hook::ctx::Ctx;

/// The record of how install found the project, relative to the state root.
pub const INSTALL_RECORD: &str = "install.json";

/// How the project was before the first install.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallRecord {
    /// `.claude/` did not exist.
    #[serde(default)]
    pub claude_dir_created: bool,
    /// `.claude/commands/` did not exist.
    #[serde(default)]
    pub commands_dir_created: bool,
    /// The state folder did not exist.
    #[serde(default)]
    pub state_root_created: bool,
    /// `.claude/settings.json` did not exist.
    #[serde(default)]
    pub settings_created: bool,
    /// The settings file's text before install; absent when there was no
    /// file, or it already held our handlers (an install older than this
    /// record).
    #[serde(default)]
    pub settings_before: Option<String>,
}

impl crate::state::Versioned for InstallRecord {
    const VERSION: u64 = 1;
}

/// How the project looks before install writes anything, unless an
/// earlier install recorded it already (`None` then: that record stands).
/// `settings` is the settings file's text (`None`: no file), `holds_ours`
/// whether it registers our handlers or status line already.
pub fn before_install(
    ctx: &Ctx,
    settings: Option<&str>,
    holds_ours: bool,
) -> Option<InstallRecord> {
    if ctx.store().exists(INSTALL_RECORD) {
        return None;
    }
    let claude = ctx.project_root.join(".claude");
    Some(InstallRecord {
        claude_dir_created: !claude.exists(),
        commands_dir_created: !claude.join("commands").exists(),
        state_root_created: !ctx.state_root.exists(),
        settings_created: settings.is_none(),
        settings_before: settings.filter(|_| !holds_ours).map(str::to_string),
    })
}

/// Keeps the record of the first install (after install created the state folder).
pub fn save(ctx: &Ctx, record: &InstallRecord) -> anyhow::Result<()> {
    ctx.store().lock(INSTALL_RECORD)?.save_json(record)
}
