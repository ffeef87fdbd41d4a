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
    if !config_may_name_drivers(root) {
        return Vec::new();
    }
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

/// Whether the repository's config may set a driver key: false only when
/// its one config file (`.git/config`, no worktree config) has no
/// `filter`, `diff`, `merge` or `include`/`includeIf` section, read here
/// without starting git (a process per hook call otherwise). Anything less
/// plain — a `.git` file (a linked worktree, a submodule), an unreadable
/// config, a section header this does not recognise as harmless — asks git.
fn config_may_name_drivers(root: &Path) -> bool {
    let Some(dot_git) = plain_git_dir(root) else {
        return true;
    };
    if dot_git.join("config.worktree").exists() {
        return true;
    }
    match std::fs::read(dot_git.join("config")) {
        Ok(text) => names_driver_sections(&String::from_utf8_lossy(&text)),
        Err(_) => true,
    }
}

/// The `.git` folder of the repository `root` is in, when it is one git
/// itself would take (`HEAD`, `objects/`, `refs/`) and plain enough to
/// read without git: `None` for a `.git` file (a linked worktree, a
/// submodule), an empty or partial `.git` folder (git passes over it for
/// the one above) or no repository.
fn plain_git_dir(root: &Path) -> Option<std::path::PathBuf> {
    let dot_git = root
        .ancestors()
        .map(|dir| dir.join(".git"))
        .find(|dot_git| dot_git.exists())?;
    let plain = dot_git.is_dir()
        && dot_git.join("HEAD").is_file()
        && dot_git.join("objects").is_dir()
        && dot_git.join("refs").is_dir();
    plain.then_some(dot_git)
}

/// Whether config `text` may have a section that can set or pull in a
/// driver. git's parser is not line-based (two headers on a line, a bare
/// CR between them, a BOM before the first), so this does not parse: any
/// mention of `filter`, `diff`, `include`, `textconv` or `driver`, in any
/// case, or a `[` followed by `merge` (a `merge = …` key of a branch is
/// harmless), counts.
fn names_driver_sections(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if ["filter", "diff", "include", "textconv", "driver"]
        .iter()
        .any(|word| lower.contains(word))
    {
        return true;
    }
    lower.match_indices('[').any(|(at, _)| {
        lower[at + 1..]
            .trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
            .starts_with("merge")
    })
}

/// The commit HEAD names, read from the files of a plain repository
/// without starting git: `Some(None)` before the first commit, `None` when
/// the repository is not plain enough to read this way (a `.git` file, the
/// reftable format, anything unexpected) and git must be asked.
pub fn read_head(root: &Path) -> Option<Option<String>> {
    let dot_git = plain_git_dir(root)?;
    if dot_git.join("reftable").exists() {
        return None;
    }
    let is_id =
        |text: &str| matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit());
    let head = std::fs::read_to_string(dot_git.join("HEAD")).ok()?;
    let head = head.trim_end();
    if is_id(head) {
        return Some(Some(head.to_string()));
    }
    let name = head.strip_prefix("ref: ")?.trim();
    if !name.starts_with("refs/heads/") || name.contains("..") {
        return None;
    }
    match std::fs::read_to_string(dot_git.join(name)) {
        Ok(id) if is_id(id.trim_end()) => return Some(Some(id.trim_end().to_string())),
        Ok(_) => return None,
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return None,
        Err(_) => {}
    }
    match std::fs::read_to_string(dot_git.join("packed-refs")) {
        Ok(packed) => {
            for line in packed.lines() {
                if let Some((id, line_name)) = line.split_once(' ')
                    && line_name == name
                {
                    return is_id(id).then(|| Some(id.to_string()));
                }
            }
            Some(None)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some(None),
        Err(_) => None,
    }
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

/// The NUL-separated entries `git <args>` prints (`-z` output), or `None`
/// when it fails or cannot run.
pub fn nul_list(root: &Path, args: &[&str]) -> Option<Vec<String>> {
    let output = command(root)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    output.status.success().then(|| {
        output
            .stdout
            .split(|b| *b == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect()
    })
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

    /// A fresh folder for a test repository, `label` naming it.
    fn fresh_dir(label: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-git-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `git ARGS` in `dir` as a user with a name and no signing; its
    /// output, after asserting it succeeded.
    fn git_in(dir: &Path, args: &[&str]) -> String {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgSign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// A filter defined in `.git/config` in spellings git reads and a
    /// line-by-line reading would miss: two headers on one line, a bare CR
    /// between them, a BOM first. `git status` through [`command`] runs
    /// none of them.
    #[test]
    fn status_runs_no_filter_however_the_config_spells_it() {
        for (n, spelling) in [
            "[user] [filter \"evil\"]\n",
            "\u{feff}[filter \"evil\"]\n",
            "[user]\r[filter \"evil\"]\r",
        ]
        .iter()
        .enumerate()
        {
            let dir = fresh_dir(&format!("spell-{n}"));
            let git = |args: &[&str]| git_in(&dir, args);
            git(&["init", "-q"]);
            std::fs::write(dir.join("a.py"), "print(1)\n").unwrap();
            std::fs::write(dir.join(".gitattributes"), "*.py filter=evil\n").unwrap();
            git(&["add", "-A"]);
            git(&["commit", "-q", "-m", "a"]);
            let marker = dir.join("ran");
            let script = dir.join("driver.sh");
            std::fs::write(&script, format!("touch '{}'\ncat\n", marker.display())).unwrap();
            let config = dir.join(".git/config");
            let mut text = std::fs::read_to_string(&config).unwrap();
            let clean = format!("{spelling}\tclean = sh {}\n", script.display());
            if spelling.starts_with('\u{feff}') {
                text = format!("{clean}{text}");
            } else {
                text.push_str(&clean);
            }
            std::fs::write(&config, text).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(1100));
            std::fs::write(dir.join("a.py"), "print(1)\n").unwrap();
            let _ = command(&dir)
                .args(["status", "--porcelain=v1"])
                .output()
                .unwrap();
            assert!(!marker.exists(), "spelling {n}: the filter ran");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn head_read_from_the_files_agrees_with_git() {
        let dir = fresh_dir("head");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let git = |args: &[&str]| git_in(&dir, args);
        git(&["init", "-q", "-b", "main"]);
        assert_eq!(read_head(&dir), Some(None), "before the first commit");
        std::fs::write(dir.join("a"), "1").unwrap();
        git(&["add", "a"]);
        git(&["commit", "-q", "-m", "one"]);
        let one = git(&["rev-parse", "HEAD"]);
        assert_eq!(read_head(&dir.join("sub")), Some(Some(one.clone())));
        git(&["pack-refs", "--all"]);
        assert_eq!(read_head(&dir), Some(Some(one.clone())), "packed");
        git(&["checkout", "-q", "--detach"]);
        assert_eq!(read_head(&dir), Some(Some(one)), "detached");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn driver_sections_are_recognised_in_any_spelling() {
        let plain = "[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = x\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(!names_driver_sections(plain));
        for risky in [
            "[filter \"lfs\"]\n\tclean = x",
            "  [FILTER \"a\"] clean = x",
            "[diff.x]\ntextconv = y",
            "[ merge \"m\"]\ndriver = z",
            "[include]\npath = other",
            "[includeIf \"gitdir:/\"]\npath = other",
            "[user] [filter \"evil\"]\n\tclean = x",
            "\u{feff}[filter \"evil\"]\n\tclean = x",
            "[user]\r[filter \"evil\"]\r\tclean = x",
            "[user]\r[ merge \"m\"]",
        ] {
            assert!(names_driver_sections(risky), "{risky}");
        }
    }

    /// A repository whose config names an fsmonitor program: `git status`
    /// through [`command`] never runs it.
    #[test]
    fn status_runs_no_configured_program() {
        let dir = fresh_dir("program");
        let run = |args: &[&str]| {
            git_in(&dir, args);
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
        let dir = fresh_dir("filter");
        let run = |args: &[&str]| {
            git_in(&dir, args);
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
