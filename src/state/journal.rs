//! The writes ralph-hooks itself makes under the state root, recorded while
//! the guard watches it, so that the check after a Bash command
//! (`guards::effects`) can tell a change made by ralph-hooks — a step the
//! agent completed with the CLI, the post-tool hook recording a touched
//! file — from one made by anything else (`sed`, `python -c`, `rm`).
//!
//! The journal lives in the guard's watch folder, outside the project
//! (`$XDG_STATE_HOME/ralph-hooks/<hash of the state root>/`, else
//! `~/.local/state/…`), so `rm -rf .claude` cannot take it. It is written
//! only while that folder holds a snapshot (the guard makes one only while
//! a loop or a task continuation runs unattended): outside that, a write
//! costs one `stat`. Each record is one line appended with `O_APPEND`,
//! written before the rename that makes the content visible, so a reader
//! that sees the content also sees its record:
//!
//! ```text
//! <unix ms> <writer binary> <1 if inside Claude Code else 0> <content id or -> <path>
//! ```
//!
//! The path is relative to the state root, or absolute for a file outside
//! it that the guard put back. The content id is the length and FNV-1a
//! hash of the bytes ([`content_id`]); `-` records a removal.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::text::fnv1a;

/// The journal's file name in the watch folder.
pub const JOURNAL_FILE: &str = "journal";
/// Present while the guard watches: the last snapshot.
pub const BASE_FILE: &str = "base.json";

/// One record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub at_ms: u64,
    pub writer: String,
    /// Written by a process inside Claude Code (`CLAUDECODE=1`): a tool
    /// call's command, a hook, or a slash command's shell line.
    pub in_claude: bool,
    /// `None` for a removal.
    pub content: Option<String>,
    pub path: String,
}

/// The length and FNV-1a hash of some bytes: what the journal and the
/// guard's snapshots call a file's content.
pub fn content_id(bytes: &[u8]) -> String {
    format!("{}-{:016x}", bytes.len(), fnv1a(bytes))
}

/// The guard's watch folder for a state root: `$XDG_STATE_HOME` (when
/// absolute) or `$HOME/.local/state`, then `ralph-hooks/<hash>`, the hash
/// of the state root's canonical path. `None` without a usable home.
pub fn watch_dir(state_root: &Path) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".local").join("state"))
        })?;
    let hash = fnv1a(stable_root(state_root).as_os_str().as_bytes());
    Some(base.join("ralph-hooks").join(format!("{hash:016x}")))
}

/// The state root as it is named, links not resolved (only a relative
/// name is made absolute): the folder must stay the same when a command
/// swaps the state root, `.claude`, the project folder or any folder above
/// it for a link (the project moved away and a link to a copy without the
/// state put in its place: attack findings A35-3, RA-2). The hooks name the
/// project as Claude Code does (`CLAUDE_PROJECT_DIR`, resolved when the
/// session started), and the CLI resolves its own name for it the same way
/// (see `hook::ctx::cli_project_root`).
fn stable_root(state_root: &Path) -> PathBuf {
    if state_root.is_absolute() {
        return crate::util::paths::lexically_normal(state_root);
    }
    state_root
        .canonicalize()
        .unwrap_or_else(|_| state_root.to_path_buf())
}

/// Whether the guard watches the state root whose watch folder is `watch`.
pub fn watching(watch: &Path) -> bool {
    watch.join(BASE_FILE).is_file()
}

/// The writer this binary records: its own name, fixed when it was built
/// (each hook binary and the CLI set it first thing), so a command cannot
/// pass its own writes off as a hook's by renaming `argv[0]` or a copy of
/// the CLI (guard attack W-4: between hooks, a hook's own writes stand).
static WRITER_NAME: OnceLock<&'static str> = OnceLock::new();

/// Names the writer of this process's records (first call wins).
pub fn set_writer(name: &'static str) {
    let _ = WRITER_NAME.set(name);
}

/// The hook binaries: what they write between hooks is theirs to write.
pub const HOOK_WRITERS: &[&str] = &[
    "ralph-stop-loop-controller",
    "ralph-user-prompt-submit",
    "ralph-session-start",
    "ralph-post-tool-lsp-diagnostic",
    "ralph-pre-tool-stop-guard",
];

fn writer() -> &'static str {
    if let Some(name) = WRITER_NAME.get() {
        return name;
    }
    static WRITER: OnceLock<String> = OnceLock::new();
    WRITER.get_or_init(|| {
        std::env::args_os()
            .next()
            .map(|arg0| {
                Path::new(&arg0)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .filter(|name| !name.is_empty() && !name.contains(char::is_whitespace))
            .unwrap_or_else(|| "unknown".into())
    })
}

fn in_claude() -> bool {
    std::env::var("CLAUDECODE").is_ok_and(|value| value == "1")
}

/// Appends one record when the guard watches; best effort (a journal that
/// cannot be written only makes the guard stricter, never looser).
pub fn record(watch: Option<&Path>, path: &str, bytes: Option<&[u8]>) {
    let Some(watch) = watch else {
        return;
    };
    if !watching(watch) || path.contains('\n') {
        return;
    }
    let at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let content = bytes.map_or_else(|| "-".to_string(), content_id);
    let line = format!(
        "{at_ms} {} {} {content} {path}\n",
        writer(),
        u8::from(in_claude())
    );
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(watch.join(JOURNAL_FILE))
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// The records at or after `since_ms` (a damaged line is skipped).
pub fn read_since(watch: &Path, since_ms: u64) -> Vec<Record> {
    let Ok(text) = std::fs::read_to_string(watch.join(JOURNAL_FILE)) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(parse)
        .filter(|record| record.at_ms >= since_ms)
        .collect()
}

fn parse(line: &str) -> Option<Record> {
    let mut parts = line.splitn(5, ' ');
    let at_ms = parts.next()?.parse().ok()?;
    let writer = parts.next()?.to_string();
    let in_claude = parts.next()? == "1";
    let content = match parts.next()? {
        "-" => None,
        id => Some(id.to_string()),
    };
    let path = parts.next()?.to_string();
    Some(Record {
        at_ms,
        writer,
        in_claude,
        content,
        path,
    })
}

/// Drops the records before `keep_from_ms`, when the journal grew past
/// `max_bytes`. The caller holds the watch folder's lock.
pub fn trim(watch: &Path, keep_from_ms: u64, max_bytes: u64) {
    let path = watch.join(JOURNAL_FILE);
    if std::fs::metadata(&path).map_or(true, |m| m.len() <= max_bytes) {
        return;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let kept: String = text
        .lines()
        .filter(|line| parse(line).is_some_and(|r| r.at_ms >= keep_from_ms))
        .map(|line| format!("{line}\n"))
        .collect();
    let temp = watch.join(format!(".{JOURNAL_FILE}.tmp-{}", std::process::id()));
    if std::fs::write(&temp, kept).is_ok() {
        let _ = std::fs::rename(&temp, &path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_only_while_watching() {
        let watch = std::env::temp_dir().join(format!("ralph-journal-{}", std::process::id()));
        std::fs::create_dir_all(&watch).unwrap();
        record(Some(&watch), "loop.json", Some(b"{}"));
        assert!(
            read_since(&watch, 0).is_empty(),
            "not watching: nothing recorded"
        );
        std::fs::write(watch.join(BASE_FILE), "{}").unwrap();
        record(Some(&watch), "tasks/task_1.md", Some(b"x y"));
        record(Some(&watch), "loop.json", None);
        let records = read_since(&watch, 0);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].path, "tasks/task_1.md");
        assert_eq!(
            records[0].content.as_deref(),
            Some(content_id(b"x y").as_str())
        );
        assert_eq!(records[1].content, None);
        std::fs::remove_dir_all(&watch).unwrap();
    }
}
