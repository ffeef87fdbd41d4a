//! Running a loop's check commands: `sh -c CMD` in the project root, with a
//! timeout, output captured to a file (stdout and stderr interleaved as the
//! command wrote them, and no pipe that could fill up and stall it).
//!
//! In sandbox mode a check runs the project's own code (its tests, its
//! build), which the agent writes, from the Stop hook, outside Claude
//! Code's sandbox: it runs in a bubblewrap of its own where the state and
//! the protected paths are read-only, and a protected file that did not
//! exist and appears during the check is moved aside after it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::util::process::GroupChild;
use crate::util::text::{fnv1a, tail_lines_of};

/// Default time one check may take, as the issue asks.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

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
    /// The last [`TAIL_LINES`] lines of the output.
    pub tail: String,
}

impl CheckRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    pub fn describe_status(&self) -> String {
        match (self.timed_out, self.exit_code) {
            (true, _) => format!("timed out after {} s", self.duration_ms / 1000),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed by a signal".to_string(),
        }
    }
}

/// `sh`, or in sandbox mode `bwrap … sh`: the whole system as it is, the
/// existing `read_only` paths bound read-only. Without bubblewrap (which
/// sandbox mode needs anyway, and `doctor` reports) the check runs as is.
fn confined_shell(read_only: &[PathBuf]) -> Command {
    let existing: Vec<&PathBuf> = read_only
        .iter()
        .filter(|path| path.symlink_metadata().is_ok())
        .collect();
    if existing.is_empty() {
        return Command::new("sh");
    }
    let Ok(bwrap) = which::which("bwrap") else {
        return Command::new("sh");
    };
    let mut command = Command::new(bwrap);
    command.args(["--dev-bind", "/", "/"]);
    for path in existing {
        command.arg("--ro-bind").arg(path).arg(path);
    }
    command.args(["--", "sh"]);
    command
}

/// `<path>.created-by-check-<seconds>`: where a protected file the check
/// created goes.
fn moved_aside_name(path: &Path) -> PathBuf {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".created-by-check-{seconds}"));
    PathBuf::from(name)
}

/// Runs `command` in `root`, killing it (and everything it started) after
/// `timeout`; `read_only`: the paths it must not change (sandbox mode).
pub fn run(
    root: &Path,
    command: &str,
    timeout: Duration,
    read_only: &[PathBuf],
) -> anyhow::Result<CheckRun> {
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
    let mut shell = confined_shell(read_only);
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
    let mut tail = tail_lines_of(&text, TAIL_LINES);
    for path in absent {
        if path.symlink_metadata().is_ok() {
            let aside = moved_aside_name(path);
            let what = match std::fs::rename(path, &aside) {
                Ok(()) => format!("moved aside to {}", aside.display()),
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
        tail,
    })
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
        let ok = run(&root, "echo fine", Duration::from_secs(10), &[]).unwrap();
        assert!(ok.passed());
        assert_eq!(ok.tail, "fine");
        let bad = run(
            &root,
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(10),
            &[],
        )
        .unwrap();
        assert_eq!(bad.exit_code, Some(3));
        assert_eq!(bad.tail, "out\nerr");
    }

    #[test]
    fn in_sandbox_mode_a_check_cannot_change_the_supervision() {
        if which::which("bwrap").is_err() {
            eprintln!("skipping: bwrap is not on PATH");
            return;
        }
        let root = std::env::temp_dir().join(format!("ralph-confined-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::write(root.join("state/loop.json"), "{}").unwrap();
        let read_only = [root.join("state"), root.join(".lsp.json")];
        let run = run(
            &root,
            "rm -f state/loop.json; echo '{}' > .lsp.json; echo work > out.txt; echo done",
            Duration::from_secs(30),
            &read_only,
        )
        .unwrap();
        assert!(run.tail.contains("done"), "{}", run.tail);
        assert!(
            root.join("state/loop.json").exists(),
            "the state is read-only"
        );
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
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let root = std::env::temp_dir();
        let started = Instant::now();
        let run = run(
            &root,
            "sleep 30 & sleep 30; echo never",
            Duration::from_millis(300),
            &[],
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
            &[],
        )
        .unwrap();
        let b = run(
            &root,
            "echo 'finished in 0.97s'; exit 1",
            Duration::from_secs(10),
            &[],
        )
        .unwrap();
        assert_eq!(a.output_hash, b.output_hash);
    }
}
