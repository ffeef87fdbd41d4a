//! Running a loop's check commands: `sh -c CMD` in the project root, with a
//! timeout, output captured to a file (stdout and stderr interleaved as the
//! command wrote them, and no pipe that could fill up and stall it).
//!
//! A check runs the project's own code (its tests, its build), which the
//! agent writes, from the Stop hook, outside Claude Code's sandbox: it runs
//! in [`crate::util::confine`]'s bubblewrap (the file system read-only but
//! the project and a private `/tmp`, the state and the protected paths
//! read-only, no network) in sandbox mode; in plain mode as it is, in a
//! PID namespace of its own where bubblewrap can make one (what it detached
//! ends with it); a protected file that did not exist and appears during
//! the check is moved aside after it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::util::confine::{self, Confinement};
use crate::util::process::GroupChild;
use crate::util::text::{escape_controls_in_prose, fnv1a, tail_lines_of};

/// Default time one check may take, as the issue asks.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// The time all of a loop's checks get in one Stop, together: under the
/// 1800 s Claude Code gives the Stop hook as installed, leaving time for
/// the diagnostics conditions. A check cut short by it fails (timed out).
pub const STOP_CHECKS_BUDGET: Duration = Duration::from_secs(1500);

/// [`STOP_CHECKS_BUDGET`], or less when `RALPH_HOOKS_STOP_CHECKS_SECS` says
/// so (a hook registered with a shorter timeout; the tests). Never more.
pub fn stop_checks_budget() -> Duration {
    std::env::var("RALPH_HOOKS_STOP_CHECKS_SECS")
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .map_or(STOP_CHECKS_BUDGET, |wanted| wanted.min(STOP_CHECKS_BUDGET))
}

/// At most this many lines of a failing check go into the follow-up prompt.
pub const TAIL_LINES: usize = 40;

/// The outcome of one check run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRun {
    pub command: String,
    /// The exit code; `None` when killed by a signal or the timeout.
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Hash of the output with digits masked, so timings and counters that
    /// change on every run do not make identical failures look different.
    pub output_hash: String,
    /// SHA-256 of the output as written (hex): what a completion receipt
    /// keeps instead of the output itself. Empty in runs recorded before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_sha256: String,
    /// The last [`TAIL_LINES`] lines of the output.
    pub tail: String,
    /// Whether it ran inside the confinement (the loop's state read-only
    /// to it); if not, whatever changed the loop meanwhile may be the check.
    /// Only for the Stop that ran it: not kept in the loop's history.
    #[serde(skip)]
    pub confined: bool,
}

/// How the tail of a check that never started begins.
const NOT_RUN: &str = "[ralph-hooks: not run";

impl CheckRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    pub fn describe_status(&self) -> String {
        // Refused before it started (walls that would not hold, no time
        // left): its tail says why; "killed by a signal" would not.
        if self.duration_ms == 0 && self.tail.starts_with(NOT_RUN) {
            return "not run".to_string();
        }
        match (self.timed_out, self.exit_code) {
            (true, _) => format!("timed out after {} s", self.duration_ms / 1000),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed by a signal".to_string(),
        }
    }
}

impl CheckRun {
    /// A check the Stop had no time left for: failed, saying why (it is
    /// not known to pass, so the loop does not end on it).
    pub fn not_run(command: &str, why: &str) -> CheckRun {
        CheckRun {
            command: command.to_string(),
            exit_code: None,
            timed_out: true,
            duration_ms: 0,
            output_hash: String::new(),
            output_sha256: String::new(),
            tail: format!("{NOT_RUN}: {why}]"),
            confined: false,
        }
    }
}

/// How walled in a check runs.
#[derive(Debug, Clone)]
pub enum Walls {
    /// As is: the CLI's own pipeline, run by the user.
    None,
    /// As is, but in a PID namespace of its own where bubblewrap can make
    /// one (as is where it cannot): a loop's check in plain mode, so that
    /// a process the check detached cannot act on the loop after the
    /// check (re-attack RA-4: a check left `setsid -f … loop cancel`
    /// behind, which cancelled the loop after the Stop).
    OwnPids,
    /// In the confinement or not at all (sandbox mode: the check would
    /// otherwise be the agent's door out of Claude Code's sandbox).
    Required(Confinement),
}

/// `sh`, or `bwrap … sh` with the confinement; why not, when the walls are
/// required and cannot be built. The bool: whether it is confined.
fn shell(root: &Path, walls: &Walls) -> Result<(Command, bool), String> {
    // The shell itself comes from outside the project (see `util::trusted`);
    // what the check's text then runs is the check's business.
    let sh = crate::util::trusted::program("sh", Some(root));
    let confinement = match walls {
        Walls::None => return Ok((Command::new(sh), false)),
        Walls::OwnPids => {
            return Ok((
                confine::own_pids(&sh).unwrap_or_else(|| Command::new(&sh)),
                false,
            ));
        }
        Walls::Required(confinement) => confinement,
    };
    if let Some(link) = confinement.linked_entry() {
        return Err(format!(
            "sandbox mode runs a check only inside walls that hold: {}",
            Confinement::linked_entry_reason(&link)
        ));
    }
    match confine::bwrap() {
        Some(bwrap) => Ok((confinement.command(bwrap, &sh), true)),
        None => Err(
            "sandbox mode runs a check only inside bubblewrap, which cannot build a \
                     sandbox here (is `bwrap` installed, are user namespaces allowed?); \
                     `ralph-hooks doctor` says more"
                .to_string(),
        ),
    }
}

/// Moves a protected file or folder the check created to
/// `<path>.created-by-check-<seconds>` (`-<n>` added while that name is
/// taken), never over anything: a name the agent made first (a folder with
/// a file in it, which a plain rename cannot replace) only moves it to the
/// next name (sandbox attack S-2: a folder of the agent's at the one name
/// left a check's new skill in place).
fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut last = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
    for attempt in 0..1000u32 {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".created-by-check-{seconds}"));
        if attempt > 0 {
            name.push(format!("-{attempt}"));
        }
        let aside = PathBuf::from(name);
        match rename_no_replace(path, &aside) {
            Ok(()) => return Ok(aside),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => last = error,
            Err(error) => return Err(error),
        }
    }
    Err(last)
}

/// `rename(2)` that fails with `AlreadyExists` rather than replace `to`.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from_c = std::ffi::CString::new(from.as_os_str().as_bytes())?;
    let to_c = std::ffi::CString::new(to.as_os_str().as_bytes())?;
    // The system call itself: musl (the static builds) has no wrapper.
    // SAFETY: both are valid NUL-terminated strings for the call's length.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from_c.as_ptr(),
            libc::AT_FDCWD,
            to_c.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if result == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    match error.raw_os_error() {
        // A file system without the flag: look first (the check that could
        // race this has ended).
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            if to.symlink_metadata().is_ok() {
                Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists))
            } else {
                std::fs::rename(from, to)
            }
        }
        _ => Err(error),
    }
}

/// Changes to the environment a check inherits (`ralph-hooks verify` takes
/// the live session's variables away from a receipt's checks).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub remove: Vec<String>,
    pub set: Vec<(String, std::ffi::OsString)>,
}

/// Runs `command` in `root`, killing it (and everything it started) after
/// `timeout`, inside `walls`.
pub fn run(
    root: &Path,
    command: &str,
    timeout: Duration,
    walls: &Walls,
) -> anyhow::Result<CheckRun> {
    run_in(root, command, timeout, walls, &Environment::default())
}

/// [`run`] with `environment`'s changes.
pub fn run_in(
    root: &Path,
    command: &str,
    timeout: Duration,
    walls: &Walls,
    environment: &Environment,
) -> anyhow::Result<CheckRun> {
    let read_only: &[PathBuf] = match walls {
        Walls::None | Walls::OwnPids => &[],
        Walls::Required(c) => &c.read_only,
    };
    let (mut shell, confined) = match shell(root, walls) {
        Ok(shell) => shell,
        Err(why) => {
            return Ok(CheckRun {
                command: command.to_string(),
                exit_code: None,
                timed_out: false,
                duration_ms: 0,
                output_hash: String::new(),
                output_sha256: String::new(),
                tail: format!("{NOT_RUN}: {why}]"),
                confined: false,
            });
        }
    };
    let mut output = tempfile_in_tmp().context("cannot create a temp file for check output")?;
    let stdout = output
        .try_clone()
        .context("cannot share the check output file")?;
    let stderr = output
        .try_clone()
        .context("cannot share the check output file")?;
    let started = Instant::now();
    let absent: Vec<&PathBuf> = read_only
        .iter()
        .filter(|path| path.symlink_metadata().is_err())
        .collect();
    for key in &environment.remove {
        shell.env_remove(key);
    }
    for (key, value) in &environment.set {
        shell.env(key, value);
    }
    let mut child = GroupChild::spawn(
        shell
            .arg("-c")
            .arg(command)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr)),
    )
    .with_context(|| format!("cannot start check `{command}` in {}", root.display()))?;
    let status = child
        .wait_timeout(timeout)
        .with_context(|| format!("cannot wait for check `{command}`"))?;
    let timed_out = status.is_none();
    if timed_out {
        child.kill();
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    drop(child);

    output
        .seek(SeekFrom::Start(0))
        .context("cannot rewind check output")?;
    let mut bytes = Vec::new();
    output
        .read_to_end(&mut bytes)
        .context("cannot read check output")?;
    let text = String::from_utf8_lossy(&bytes);
    let masked: String = text
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    // The output is the project's code speaking (a check the agent may
    // have written): its control characters are escaped before the tail
    // reaches a Stop's reason, the session-start summary or a terminal
    // (attack finding A35-4).
    let mut tail = escape_controls_in_prose(&tail_lines_of(&text, TAIL_LINES)).into_owned();
    for path in absent {
        if path.symlink_metadata().is_ok() {
            let what = match move_aside(path) {
                Ok(aside) => format!(
                    "moved aside to {}",
                    crate::util::text::escape_controls(&aside.to_string_lossy())
                ),
                Err(error) => format!("could not be moved aside: {error}"),
            };
            tail.push_str(&format!(
                "\n[ralph-hooks: the check created {}, which only the user may; {what}]",
                crate::util::text::escape_controls(&path.to_string_lossy())
            ));
        }
    }
    if timed_out {
        tail.push_str(&format!(
            "\n[ralph-hooks: killed after the {} s timeout]",
            timeout.as_secs()
        ));
    }
    Ok(CheckRun {
        command: command.to_string(),
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        duration_ms,
        output_hash: format!("{:016x}", fnv1a(masked.as_bytes())),
        output_sha256: sha256_hex(&bytes),
        tail,
        confined,
    })
}

/// SHA-256 of `bytes`, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(bytes);
    let mut text = String::with_capacity(64);
    for byte in digest {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// An anonymous temp file: created and unlinked at once, so nothing is left
/// behind even if we are killed.
fn tempfile_in_tmp() -> std::io::Result<File> {
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = dir.join(format!(
            "ralph-check-{}-{nanos}-{attempt}",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
    Err(std::io::Error::other("no free temp file name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passing_and_failing_checks() {
        let root = std::env::temp_dir();
        let ok = run(&root, "echo fine", Duration::from_secs(10), &Walls::None).unwrap();
        assert!(ok.passed());
        assert_eq!(ok.tail, "fine");
        let bad = run(
            &root,
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(10),
            &Walls::None,
        )
        .unwrap();
        assert_eq!(bad.exit_code, Some(3));
        assert_eq!(bad.tail, "out\nerr");
    }

    // See: attack finding A35-4: a check's ESC, OSC and bidi bytes reached
    // the Stop's reason as they were.
    #[test]
    fn a_checks_control_characters_are_escaped_in_its_tail() {
        let root = std::env::temp_dir();
        let run = run(
            &root,
            r"printf '\033]0;OWNED\007\033[2J red\342\200\256x\rback\nnext\n'; exit 1",
            Duration::from_secs(10),
            &Walls::None,
        )
        .unwrap();
        assert!(!run.tail.contains('\u{1b}'), "{:?}", run.tail);
        assert!(!run.tail.contains('\u{7}'), "{:?}", run.tail);
        assert!(!run.tail.contains('\r'), "{:?}", run.tail);
        assert!(!run.tail.contains('\u{202e}'), "{:?}", run.tail);
        assert!(run.tail.contains("\nnext"), "{:?}", run.tail);
    }

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// A fresh folder for a confined test, not under `/tmp` (which the
    /// check sees as its own tmpfs).
    fn fresh_base(label: &str) -> std::path::PathBuf {
        let base = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("{label}-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        base
    }

    /// The walls sandbox mode builds for a project at `root`.
    fn sandbox_walls(root: &Path) -> Walls {
        Walls::Required(Confinement {
            project: root.to_path_buf(),
            read_only: crate::hook::sandbox::supervision_paths(
                root,
                &root.join(".claude/orchestrator"),
            ),
            ..Confinement::default()
        })
    }

    #[test]
    fn a_confined_check_changes_the_project_and_nothing_else() {
        let Some(_) = confine::bwrap() else {
            eprintln!("skipping: bubblewrap cannot build a sandbox here");
            return;
        };
        // Not under /tmp, which the check sees as its own tmpfs: a write
        // outside the project must meet the read-only file system.
        let base = fresh_base("confine");
        let root = base.join("project");
        let outside = base.join("home");
        std::fs::create_dir_all(root.join(".claude/orchestrator")).unwrap();
        std::fs::create_dir_all(outside.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/orchestrator/loop.json"), "{}").unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(root.join("app.py"), "x = 1\n").unwrap();
        std::fs::write(
            root.join("test_app.py"),
            "import unittest, app\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(app.x, 1)\n",
        )
        .unwrap();
        git(&base, &["init", "-q", "--bare", "origin.git"]);
        git(&root, &["init", "-q"]);
        git(&root, &["add", "app.py"]);
        git(&root, &["commit", "-q", "-m", "one"]);
        git(
            &root,
            &[
                "remote",
                "add",
                "origin",
                &base.join("origin.git").to_string_lossy(),
            ],
        );
        let etc_probe = format!("/etc/ralph-hooks-confine-probe-{}", std::process::id());
        let script = format!(
            "rm -f .claude/orchestrator/loop.json; echo '{{\"disableAllHooks\":true}}' > .claude/settings.json; \
             echo '{{\"disableAllHooks\":true}}' > {home}/.claude/settings.json; echo x > {etc}; \
             git config core.fsmonitor ./x.sh; mkdir -p .git/hooks; echo x > .git/hooks/pre-commit; \
             echo '{{}}' > .lsp.json; \
             git -c user.name=a -c user.email=a@b push -q origin HEAD:refs/heads/from-check; \
             echo tmp > /tmp/scratch && cat /tmp/scratch; \
             python3 -m unittest -q test_app 2>&1 | tail -1; echo work > out.txt; echo done",
            home = outside.display(),
            etc = etc_probe,
        );
        let walls = sandbox_walls(&root);
        let run = run(&root, &script, Duration::from_secs(60), &walls).unwrap();
        let etc_written = Path::new(&etc_probe).exists();
        let _ = std::fs::remove_file(&etc_probe);
        assert!(run.confined);
        assert!(run.tail.contains("done"), "{}", run.tail);
        assert!(
            run.tail.contains("tmp"),
            "a private /tmp is writable: {}",
            run.tail
        );
        assert!(
            run.tail.contains("OK"),
            "a python unittest runs: {}",
            run.tail
        );
        assert!(
            root.join(".claude/orchestrator/loop.json").exists(),
            "the state is read-only"
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
            "{}"
        );
        assert!(
            !outside.join(".claude/settings.json").exists(),
            "the home is read-only"
        );
        assert!(!etc_written, "/etc is read-only");
        let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        assert!(!config.contains("fsmonitor"), "{config}");
        assert!(!root.join(".git/hooks/pre-commit").exists());
        let pushed = Command::new("git")
            .args([
                "--git-dir",
                &base.join("origin.git").to_string_lossy(),
                "branch",
                "--list",
            ])
            .output()
            .unwrap();
        assert!(pushed.stdout.is_empty(), "nothing was pushed: {pushed:?}");
        assert!(
            !root.join(".lsp.json").exists(),
            "a created protected file is moved aside"
        );
        assert!(run.tail.contains("the check created"), "{}", run.tail);
        assert_eq!(
            std::fs::read_to_string(root.join("out.txt")).unwrap(),
            "work\n",
            "the project is writable"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    // See: sandbox attack S-2: with no `.claude/skills` yet, a check made
    // one (with a skill whose hooks run outside every sandbox in the next
    // session), and the move-aside failed on a folder the agent had made
    // at the aside name first.
    #[test]
    fn a_confined_check_adds_no_skill_whatever_names_were_taken_first() {
        let Some(_) = confine::bwrap() else {
            eprintln!("skipping: bubblewrap cannot build a sandbox here");
            return;
        };
        let base = fresh_base("confine-skill");
        let root = base.join("project");
        std::fs::create_dir_all(root.join(".claude/orchestrator")).unwrap();
        // The agent's folders at every aside name of the next minute.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        for second in now..now + 60 {
            let taken = root.join(format!(".lsp.json.created-by-check-{second}"));
            std::fs::create_dir_all(&taken).unwrap();
            std::fs::write(taken.join("keep"), "").unwrap();
        }
        let walls = sandbox_walls(&root);
        let script = "mkdir -p .claude/skills/evil .claude/agents && \
             echo x > .claude/skills/evil/SKILL.md && echo x > .claude/agents/evil.md; \
             echo '{}' > .lsp.json; echo '{\"mcpServers\": {}}' > .mcp.json; echo done";
        let run = run(&root, script, Duration::from_secs(60), &walls).unwrap();
        assert!(run.tail.contains("done"), "{}", run.tail);
        // Not made at all (not only moved aside): `.claude` is read-only.
        let made: Vec<_> = std::fs::read_dir(root.join(".claude"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .filter(|name| name != "orchestrator")
            .collect();
        assert!(made.is_empty(), "{made:?}: {}", run.tail);
        // Nor an MCP server list, whose servers Claude Code starts outside
        // every sandbox at the next session (sandbox attack T-1).
        for made in [".lsp.json", ".mcp.json"] {
            assert!(
                !root.join(made).exists(),
                "the created {made} stayed: {}",
                run.tail
            );
        }
        assert!(run.tail.contains("moved aside to"), "{}", run.tail);
        std::fs::remove_dir_all(&base).unwrap();
    }

    // See: sandbox attack N-1: `.claude` a link to a folder elsewhere; the
    // walls bound that folder read-only, but the check removed the link
    // and made a `.claude` of its own: no loop, no hooks.
    #[test]
    fn a_confined_check_is_not_run_where_the_supervision_is_behind_a_link() {
        let base = fresh_base("confine-link");
        let root = base.join("project");
        let elsewhere = base.join("config");
        std::fs::create_dir_all(elsewhere.join("orchestrator")).unwrap();
        std::fs::write(elsewhere.join("orchestrator/loop.json"), "{}").unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join(".claude")).unwrap();
        let walls = sandbox_walls(&root);
        let run = run(
            &root,
            "rm .claude && mkdir .claude && echo swapped > .claude/settings.json",
            Duration::from_secs(60),
            &walls,
        )
        .unwrap();
        assert!(!run.passed());
        assert_eq!(run.describe_status(), "not run");
        assert!(run.tail.contains("not run"), "{}", run.tail);
        assert!(run.tail.contains("symbolic link"), "{}", run.tail);
        assert!(
            root.join(".claude")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link was replaced"
        );
        // The re-check's N-3: `.git` a file naming a git folder in the
        // project, whose config and hooks the walls do not cover.
        std::fs::remove_file(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join(".claude/orchestrator")).unwrap();
        std::fs::create_dir_all(root.join("gitreal/hooks")).unwrap();
        std::fs::write(root.join(".git"), "gitdir: gitreal\n").unwrap();
        refused(
            &root,
            &walls,
            "gitreal/hooks/pre-commit",
            "names a git folder",
        );
        // The third re-check: a real `.git` whose `commondir` is elsewhere
        // in the project (git reads config and hooks from there).
        std::fs::remove_file(root.join(".git")).unwrap();
        let status = Command::new("git")
            .args(["init", "-q", "--bare", "gitreal"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/commondir"), "../gitreal\n").unwrap();
        refused(
            &root,
            &walls,
            "gitreal/hooks/pre-commit",
            "names a git folder",
        );
        // The fourth check: a real `.git` whose hooks are a link into the
        // project.
        std::fs::remove_dir_all(root.join(".git")).unwrap();
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::remove_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::os::unix::fs::symlink(root.join("tools"), root.join(".git/hooks")).unwrap();
        refused(
            &root,
            &walls,
            "tools/post-commit",
            "is a link into the project",
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// A check that writes `target` under `walls` is not run, for `why`.
    fn refused(root: &Path, walls: &Walls, target: &str, why: &str) {
        let run = super::run(
            root,
            &format!("echo x > {target}"),
            Duration::from_secs(60),
            walls,
        )
        .unwrap();
        assert!(run.tail.contains(why), "{}", run.tail);
        assert!(!root.join(target).exists(), "{target} was written");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let root = std::env::temp_dir();
        let started = Instant::now();
        let run = run(
            &root,
            "sleep 30 & sleep 30; echo never",
            Duration::from_millis(300),
            &Walls::None,
        )
        .unwrap();
        assert!(run.timed_out);
        assert!(!run.passed());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn digits_do_not_change_the_hash() {
        let root = std::env::temp_dir();
        let a = run(
            &root,
            "echo 'finished in 0.12s'; exit 1",
            Duration::from_secs(10),
            &Walls::None,
        )
        .unwrap();
        let b = run(
            &root,
            "echo 'finished in 0.97s'; exit 1",
            Duration::from_secs(10),
            &Walls::None,
        )
        .unwrap();
        assert_eq!(a.output_hash, b.output_hash);
    }
}
