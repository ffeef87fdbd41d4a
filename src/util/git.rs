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
//! Drivers have names the config chooses (`filter.<name>.clean`, which
//! `git status` runs for every changed file `.gitattributes` maps to it;
//! `diff.<name>.textconv`, `merge.<name>.driver`), so no fixed `-c` list can
//! name them: the repository's config is asked for every such key first
//! (reading config runs nothing) and each one found is emptied on the
//! command line, which git treats as "no driver".

use std::path::Path;
use std::process::Command;

/// Settings given with `-c`: they override every config file.
const SAFE_SETTINGS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "submodule.recurse=false",
    // Empty, so a `git diff` run without `--no-ext-diff` fails rather than
    // run the config's program; callers that diff pass `--no-ext-diff`.
    "diff.external=",
    "core.pager=cat",
    "safe.directory=*",
    "core.attributesFile=/dev/null",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
];

/// Keys of the repository's config that name a program git would run on
/// the project's files: filter, diff and merge drivers, under any name.
const DRIVER_KEYS: &str =
    r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$";

/// The driver keys the repository's config (with its includes) sets, as
/// git spells them. A repository git cannot read gives none: the command
/// that follows fails on its own.
fn configured_drivers(root: &Path) -> Vec<String> {
    let mut query = bare(root);
    query.args([
        "config",
        "--null",
        "--name-only",
        "--get-regexp",
        DRIVER_KEYS,
    ]);
    let Ok(output) = query.stdin(std::process::Stdio::null()).output() else {
        return Vec::new();
    };
    output
        .stdout
        .split(|&byte| byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// The `-c` settings that switch each configured driver off. An empty
/// filter command is no filter (the file passes through; a filter marked
/// required would otherwise make git fail); an empty diff or merge program
/// makes the command that wanted it fail, which the hooks never ask for.
fn drivers_switched_off(names: &[String]) -> Vec<String> {
    let mut settings = Vec::new();
    for name in names {
        settings.push(format!("{name}="));
        if let Some(filter) = name.strip_prefix("filter.")
            && let Some((driver, _)) = filter.rsplit_once('.')
        {
            let required = format!("filter.{driver}.required=false");
            if !settings.contains(&required) {
                settings.push(required);
            }
        }
    }
    settings
}

/// `git -C root` with the settings above, no global or system config, no
/// prompts, no optional index writes.
pub fn command(root: &Path) -> Command {
    let drivers = drivers_switched_off(&configured_drivers(root));
    let mut command = bare(root);
    for setting in drivers {
        command.arg("-c").arg(setting);
    }
    command
}

/// `git -C root` with [`SAFE_SETTINGS`] and the environment cleaned, before
/// the drivers are known.
fn bare(root: &Path) -> Command {
    let mut command = Command::new(super::trusted::program("git", Some(root)));
    command.arg("-C").arg(root);
    for setting in SAFE_SETTINGS {
        command.arg("-c").arg(setting);
    }
    command
        .env("GIT_ATTR_NOSYSTEM", "1")
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

    /// A clean filter named in `.git/config` (through an include, under a
    /// made-up name with a dot in it) and mapped by `.gitattributes`:
    /// `git status` through [`command`] never runs it, and still sees the
    /// change.
    #[test]
    fn status_runs_no_filter_driver() {
        let dir = std::env::temp_dir().join(format!("ralph-git-filter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output();
            assert!(ok.is_ok_and(|o| o.status.success()), "git {args:?}");
        };
        run(&["init", "-q"]);
        std::fs::write(dir.join("a.py"), "print(1)\n").unwrap();
        run(&["add", "a.py"]);
        run(&["commit", "-q", "-m", "a"]);
        let marker = dir.join("ran");
        let script = dir.join("driver.sh");
        std::fs::write(&script, format!("touch '{}'\ncat\n", marker.display())).unwrap();
        std::fs::write(
            dir.join("extra.cfg"),
            format!(
                "[filter \"x.y\"]\n\tclean = sh {script}\n\trequired = true\n[diff \"t\"]\n\ttextconv = sh {script}\n",
                script = script.display()
            ),
        )
        .unwrap();
        run(&["config", "include.path", "../extra.cfg"]);
        std::fs::write(dir.join(".gitattributes"), "*.py filter=x.y diff=t\n").unwrap();
        std::fs::write(dir.join("a.py"), "print(2)\n").unwrap();
        let output = command(&dir)
            .args(["status", "--porcelain=v1", "--ignore-submodules=all"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("a.py"),
            "{output:?}"
        );
        // An emptied textconv makes `git diff` fail instead of running it.
        let _ = command(&dir)
            .args(["diff", "--no-ext-diff", "--textconv"])
            .output();
        assert!(
            !marker.exists(),
            "git ran the configured filter or textconv"
        );
        // The same status without the settings does run it: the test can fail.
        let _ = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["status", "--porcelain=v1"])
            .output();
        assert!(
            marker.exists(),
            "plain git status should have run the filter"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
