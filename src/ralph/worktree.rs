//! What changed in the project between two loop iterations.
//!
//! We take a snapshot of the files git reports as modified or untracked, with
//! a hash of each one's content; comparing two snapshots gives the files
//! changed in between, whoever changed them (an Edit, a Bash `sed`, a
//! formatter). Without git there is no snapshot and the loop relies on the
//! files the post-tool hook saw being edited.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::fsread::{self, Links, limits};
use crate::util::text::fnv1a;

/// Path (relative to the project) to content hash.
pub type Snapshot = BTreeMap<String, String>;

/// Enough for any real working tree; past it we stop hashing rather than stall.
const MAX_FILES: usize = 5_000;
/// Files larger than this are identified by size and mtime instead of content.
const MAX_HASHED_BYTES: u64 = 4 * 1024 * 1024;

/// The dirty files of the git work tree at `root`, minus `exclude` (the state
/// root, whose own writes would otherwise look like progress). `None` when
/// `root` is not in a git work tree or git is missing.
pub fn snapshot(root: &Path, exclude: &Path) -> Option<Snapshot> {
    let entries = git_status_entries(root)?;
    let excluded_prefix = exclude
        .strip_prefix(root)
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let mut snapshot = Snapshot::new();
    for entry in entries.iter().take(MAX_FILES) {
        let path = String::from_utf8_lossy(&entry[3..]).into_owned();
        if excluded_prefix
            .as_deref()
            .is_some_and(|prefix| !prefix.is_empty() && path.starts_with(prefix))
        {
            continue;
        }
        snapshot.insert(path.clone(), content_hash(&root.join(&path)));
    }
    Some(snapshot)
}

/// `git status --porcelain=v1 -z` entries (`XY path`, paths relative to the
/// top of the work tree), untracked files included, renames as add + delete;
/// `None` when `root` is not in a git work tree or git is missing. Shared by
/// the loop's snapshots and the Bash PostToolUse hook.
pub fn git_status_entries(root: &Path) -> Option<Vec<Vec<u8>>> {
    let output = Command::new("git")
        .args([
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(
        output
            .stdout
            .split(|b| *b == 0)
            .filter(|entry| entry.len() > 3)
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

fn content_hash(path: &Path) -> String {
    match std::fs::metadata(path) {
        Err(_) => "deleted".to_string(),
        Ok(meta) if meta.len() > MAX_HASHED_BYTES => {
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            format!(
                "size{}-mtime{}",
                meta.len(),
                mtime.map(|d| d.as_nanos()).unwrap_or(0)
            )
        }
        Ok(_) => match fsread::read_bytes(path, limits::SOURCE, Links::Follow) {
            Ok(Some(bytes)) => format!("{:016x}", fnv1a(&bytes)),
            Ok(None) | Err(_) => "unreadable".to_string(),
        },
    }
}

/// Files whose hash differs between `before` and `after`, with their new
/// hash (`reverted` when a file went back to its committed content).
pub fn changed(before: &Snapshot, after: &Snapshot) -> Vec<(String, String)> {
    let mut changes = Vec::new();
    for (path, hash) in after {
        if before.get(path) != Some(hash) {
            changes.push((path.clone(), hash.clone()));
        }
    }
    for path in before.keys() {
        if !after.contains_key(path) {
            changes.push((path.clone(), "reverted".to_string()));
        }
    }
    changes.sort();
    changes
}
