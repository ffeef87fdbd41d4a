//! `git` as the hooks run it: read-only questions (status, rev-parse,
//! merge-base) that must run none of the project's code.
//!
//! git runs programs named in its configuration: `core.fsmonitor` on every
//! `git status`, submodules' own configuration, hooks, `~/.gitconfig`'s
//! settings. The hooks run outside Claude Code's sandbox, so a config the
//! agent could write (its own nested repository, `~/.gitconfig` through the
//! Write tool, `.git/config` without the sandbox) would otherwise run the
//! agent's code with the hooks' rights. Here git reads only the repository's
//! own config, with the program-running keys switched off on the command
//! line (which wins over every config file), and never enters submodules.
//! Filter drivers in `.git/config` are not switched off by name; in sandbox
//! mode Claude Code keeps `.git/config` read-only to the agent.

use std::path::Path;
use std::process::Command;

/// Settings given with `-c`: they override every config file.
const SAFE_SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "submodule.recurse=false",
    "diff.external=",
    "core.pager=cat",
    "safe.directory=*",
];

/// `git -C root` with the settings above, no global or system config, no
/// prompts, no optional index writes.
pub fn command(root: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(root);
    for setting in SAFE_SETTINGS {
        command.arg("-c").arg(setting);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_EXTERNAL_DIFF");
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose config names an fsmonitor program: `git status`
    /// through [`command`] never runs it.
    #[test]
    fn status_runs_no_configured_program() {
        let dir = std::env::temp_dir().join(format!("ralph-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let run = |args: &[&str]| {
            let ok = Command::new("git").arg("-C").arg(&dir).args(args).output();
            assert!(ok.is_ok_and(|o| o.status.success()), "git {args:?}");
        };
        run(&["init", "-q"]);
        let marker = dir.join("ran");
        let script = dir.join("fsm.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        run(&["config", "core.fsmonitor", script.to_str().unwrap()]);
        std::fs::write(dir.join("a.txt"), "a").unwrap();
        let output = command(&dir)
            .args(["status", "--porcelain=v1", "--ignore-submodules=all"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(!marker.exists(), "git ran the configured fsmonitor");
        // The same status without the settings does run it: the test can fail.
        let _ = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["status", "--porcelain=v1"])
            .output();
        assert!(
            marker.exists(),
            "plain git status should have run the fsmonitor"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
