//! What the agent must not change, named once for both sides: the record
//! whose presence means sandbox mode is on, the protected paths, the paths
//! code the hooks run for the agent must find read-only, and whether a
//! folder is on a read-only mount (as inside Claude Code's sandbox). Uses
//! nothing of the hooks' context, so the context itself can ask.

use std::path::{Path, PathBuf};

/// What `install --sandbox` added to the settings, relative to the state
/// root; read back by `--uninstall` to remove exactly that.
pub const RECORD: &str = "sandbox.json";

/// The paths the agent must not change, relative to the project, besides
/// the state root: the hooks' config, the language-server config, the hook
/// registrations and the folders Claude Code loads skills, slash commands
/// and sub-agents from; and what Claude Code runs outside its own sandbox
/// from the project: the scripts in `.claude/hooks/` that registered hooks
/// name, and the MCP servers of `.mcp.json` (sandbox attacks T-1, T-2: the
/// file tools rewrote them). Directories end with `/`.
pub const PROTECTED: &[&str] = &[
    ".claude/ralph-hooks.json",
    ".lsp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/skills/",
    ".claude/commands/",
    ".claude/agents/",
    ".claude/hooks/",
    ".mcp.json",
];

/// What code the hooks run outside Claude Code's sandbox on the agent's
/// behalf (a loop's check, which runs the project's own code: a test suite,
/// a build) must find read-only, in either mode: the state root, every
/// protected path, and the whole `.git` (its config and hooks run commands
/// for every later `git`, the hooks' own included; a check has no business
/// there). The `.claude` folder as a whole too: a skill, slash command or
/// sub-agent folder that does not exist yet cannot be bound read-only, and
/// one the check made there would load in the next session, its hooks
/// running outside every sandbox (sandbox attack S-2).
pub fn supervision_paths(project: &Path, state_root: &Path) -> Vec<PathBuf> {
    std::iter::once(state_root.to_path_buf())
        .chain(std::iter::once(project.join(".claude")))
        .chain(
            PROTECTED
                .iter()
                .map(|p| project.join(p.trim_end_matches('/'))),
        )
        .chain(std::iter::once(project.join(".git")))
        .collect()
}

/// Whether `dir` is on a read-only mount here (`EROFS`), as inside Claude
/// Code's sandbox; a missing folder or a permission problem is not.
pub fn read_only(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string for the call's length.
    let result = unsafe { libc::access(path.as_ptr(), libc::W_OK) };
    result != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EROFS)
}
