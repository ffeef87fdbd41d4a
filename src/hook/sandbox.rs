//! Sandbox mode (`ralph-hooks install --sandbox`), the parts both sides of
//! the sandbox wall need: the record install leaves in the state root (its
//! presence means sandbox mode is on), whether the state root is read-only
//! to this process (inside Claude Code's sandbox it is), and the inbox
//! through which the agent's CLI, read-only inside the sandbox, asks the
//! hooks outside it to make the changes the agent may make (task steps and
//! progress).
//!
//! The inbox is a folder the agent can write, so everything in it is
//! untrusted: a request is read without following links, size-limited, and
//! must be one of [`agent_safe`]'s argument shapes before a hook even
//! considers it; the hook then judges it with the guard's own policy, as if
//! the agent had typed it (see `events::sandbox`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::hook::ctx::Ctx;
use crate::hook::supervision::read_only;
pub use crate::hook::supervision::{PROTECTED, RECORD, supervision_paths};
use crate::util::fsread::{self, Links};

/// The inbox, relative to the project: writable inside the sandbox, never
/// trusted.
pub const INBOX: &str = ".claude/ralph-hooks-inbox";

/// The largest request file a hook reads.
const MAX_REQUEST_BYTES: u64 = 16 * 1024;
/// The most requests one hook applies; the rest wait for the next hook.
pub const MAX_REQUESTS_PER_HOOK: usize = 20;

/// Whether sandbox mode was installed in this project (its record exists).
pub fn installed(ctx: &Ctx) -> bool {
    ctx.state_root.join(RECORD).is_file()
}

/// Whether the state root is on a read-only mount here, as inside Claude
/// Code's sandbox. Only that answer counts: a missing root or a permission
/// problem is not the sandbox, and the caller goes its ordinary way.
pub fn state_read_only(ctx: &Ctx) -> bool {
    read_only(&ctx.state_root)
}

/// One request from inside the sandbox: the arguments of a `ralph-hooks`
/// command, after the program name and without global options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub args: Vec<String>,
    /// The session that asked (`$CLAUDE_CODE_SESSION_ID` inside the sandbox).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Whether `args` is a change the agent may ask for from inside the
/// sandbox: the task commands that record its own progress. Everything that
/// ends or weakens the supervision (cancel, force, resume, uninstall, loop
/// control) is the user's and never goes through the inbox; the hook judges
/// even these with the guard's policy before it applies one.
pub fn agent_safe(args: &[String]) -> bool {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    if words
        .iter()
        .any(|word| *word == "--project" || word.starts_with("--project=") || *word == "--force")
    {
        return false;
    }
    matches!(
        words.as_slice(),
        [
            "task",
            "step" | "steps",
            "start" | "complete" | "skip" | "add",
            _,
            ..
        ] | ["task", "progress", _, ..]
            | ["task", "block", ..]
            | ["task", "complete", ..]
    )
}

/// Writes a request into the inbox; the path of the file.
pub fn submit(project: &Path, request: &Request) -> anyhow::Result<PathBuf> {
    let dir = project.join(INBOX);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        // Requests are never project files.
        let _ = std::fs::write(&ignore, "*\n");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let name = format!("{:020}-{:010}.json", now.as_nanos(), std::process::id());
    let path = dir.join(name);
    let text = serde_json::to_string(request).context("cannot encode the request")?;
    crate::state::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

/// A request taken out of the inbox: applied or refused, never again.
#[derive(Debug)]
pub enum Taken {
    Request(Request),
    /// Not a request we accept (a link, too large, not JSON, not
    /// agent-safe): why, with the file's name escaped.
    Refused(String),
}

/// Takes up to [`MAX_REQUESTS_PER_HOOK`] requests, oldest first, removing
/// each file before it is returned, so a request is applied at most once.
/// No inbox, no work: one `stat` when there is nothing.
pub fn take(project: &Path) -> Vec<Taken> {
    match Inbox::open(project) {
        Some(inbox) => inbox.take_all(),
        None => Vec::new(),
    }
}

/// The inbox folder, held open. Every read and removal goes through the
/// folder that was opened, never through its path again: the path is the
/// agent's to change, and a process of the agent's that swapped it for a
/// link to the state root or `.claude` while a hook took requests made the
/// hook (outside the sandbox) delete protected files there (attack finding
/// A35-1).
struct Inbox {
    /// Where the opened folder is reached from now on: its descriptor's
    /// entry under `/proc/self/fd` on Linux, which stays on that folder
    /// whatever happens to its name.
    dir: PathBuf,
    /// Keeps the descriptor open.
    _handle: Option<std::fs::File>,
}

impl Inbox {
    /// Opens the inbox when it is a real folder (not a link to one).
    fn open(project: &Path) -> Option<Inbox> {
        let path = project.join(INBOX);
        if !std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_dir()) {
            return None;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            use std::os::unix::io::AsRawFd as _;
            let handle = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(&path)
                .ok()?;
            let dir = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
            // Without /proc the folder cannot be held: no requests taken.
            if !dir.is_dir() {
                return None;
            }
            Some(Inbox {
                dir,
                _handle: Some(handle),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Some(Inbox {
                dir: path,
                _handle: None,
            })
        }
    }

    fn take_all(&self) -> Vec<Taken> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| name.ends_with(".json"))
            .collect();
        names.sort();
        names.truncate(MAX_REQUESTS_PER_HOOK);
        let mut taken = Vec::new();
        for name in names {
            let path = self.dir.join(&name);
            let read = fsread::read_text(&path, MAX_REQUEST_BYTES, Links::Refuse);
            if std::fs::remove_file(&path).is_err() {
                // Another hook took it first.
                continue;
            }
            let shown = crate::util::text::escape_controls(&name).into_owned();
            let request = match read {
                Ok(Some(text)) => serde_json::from_str::<Request>(&text)
                    .map_err(|error| format!("{shown}: not a request ({error})")),
                Ok(None) => continue,
                Err(error) => Err(format!(
                    "{shown}: {}",
                    crate::util::text::escape_controls(&error.to_string())
                )),
            };
            taken.push(match request {
                Ok(request) if agent_safe(&request.args) => Taken::Request(request),
                Ok(request) => Taken::Refused(format!(
                    "{shown}: `ralph-hooks {}` is not a change the agent may ask for",
                    crate::util::text::escape_controls(&request.args.join(" "))
                )),
                Err(reason) => Taken::Refused(reason),
            });
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // See: attack finding A35-1: the inbox swapped for a link to the state
    // root while a hook took requests; the hook removed `sandbox.json`
    // there. Once opened, the folder is held: the swap reaches nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_inbox_swapped_for_a_link_while_taken_reaches_nothing_else() {
        let root = std::env::temp_dir().join(format!("ralph-inbox-swap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let inbox = root.join(INBOX);
        std::fs::create_dir_all(&inbox).unwrap();
        let request = r#"{"args":["task","progress","half"]}"#;
        std::fs::write(inbox.join("00.json"), request).unwrap();
        let victim = root.join(".claude/orchestrator");
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::write(victim.join("sandbox.json"), "{}").unwrap();
        std::fs::write(victim.join("00.json"), "{}").unwrap();

        let opened = Inbox::open(&root).unwrap();
        // The agent's process swaps the folder for a link to the state root.
        std::fs::rename(&inbox, root.join(".claude/moved-inbox")).unwrap();
        std::os::unix::fs::symlink(&victim, &inbox).unwrap();
        let taken = opened.take_all();

        assert!(victim.join("sandbox.json").exists(), "sandbox.json removed");
        assert!(victim.join("00.json").exists(), "a state file removed");
        assert!(matches!(taken.as_slice(), [Taken::Request(r)] if r.args[0] == "task"));
        assert!(!root.join(".claude/moved-inbox/00.json").exists());
        // A link in the inbox's place is not opened at all.
        assert!(Inbox::open(&root).is_none());
        let _ = std::fs::remove_dir_all(&root);
    }

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn only_the_agents_own_progress_is_agent_safe() {
        for ok in [
            "task step complete s1",
            "task steps start s2",
            "task step skip s3 --note gone",
            "task step add more",
            "task progress halfway",
            "task block --note need-a-key",
            "task complete --summary done",
        ] {
            assert!(agent_safe(&args(ok)), "{ok}");
        }
        for refused in [
            "loop cancel",
            "loop start easy",
            "loop resume",
            "task cancel",
            "task complete --force",
            "task steps set a b",
            "task step complete",
            "install --uninstall",
            "task step complete s1 --project /elsewhere",
            "task step complete s1 --project=/elsewhere",
            "",
        ] {
            assert!(!agent_safe(&args(refused)), "{refused}");
        }
    }

    #[test]
    fn requests_are_taken_once_oldest_first_and_links_refused() {
        let dir = std::env::temp_dir().join(format!("ralph-inbox-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let first = Request {
            args: args("task step complete s1"),
            session_id: None,
        };
        submit(&dir, &first).unwrap();
        submit(
            &dir,
            &Request {
                args: args("loop cancel"),
                session_id: None,
            },
        )
        .unwrap();
        let inbox = dir.join(INBOX);
        std::os::unix::fs::symlink("/etc/passwd", inbox.join("zzzz.json")).unwrap();
        std::fs::write(inbox.join("zzzzz.json"), "not json").unwrap();
        let taken = take(&dir);
        assert_eq!(taken.len(), 4, "{taken:?}");
        assert!(matches!(&taken[0], Taken::Request(r) if *r == first));
        assert!(matches!(&taken[1], Taken::Refused(why) if why.contains("loop cancel")));
        assert!(
            matches!(&taken[2], Taken::Refused(why) if why.contains("link")),
            "{taken:?}"
        );
        assert!(matches!(&taken[3], Taken::Refused(why) if why.contains("not a request")));
        assert!(take(&dir).is_empty(), "taken once");
        // An inbox that is a link is no inbox: nothing behind it is removed.
        let elsewhere = dir.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("loop.json"), "{}").unwrap();
        std::fs::remove_dir_all(&inbox).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &inbox).unwrap();
        assert!(take(&dir).is_empty());
        assert!(elsewhere.join("loop.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
