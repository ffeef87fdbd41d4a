//! Pushes seen after the fact, through the remote-tracking refs: a
//! successful `git push` to a named remote moves `refs/remotes/<remote>/…`
//! and writes a reflog line ending in `update by push`, however it was
//! started (a script, an alias, a make target, `python -c`).
//!
//! Git writes every ref update as a loose ref file, through a lock file
//! renamed into the ref's folder (packing happens only in `git pack-refs`
//! and `gc`), so a moved ref changes the modification time of its folder.
//! The snapshot is those folders' times under `refs/remotes/` (one `stat`
//! per folder, however many refs); after the command only a folder whose
//! time moved is looked into, for ref files written since, and the new
//! lines of their reflogs say whether it was a push or a fetch.
//!
//! Not seen: a push to a URL instead of a named remote (no remote-tracking
//! ref moves), a repository with `core.logAllRefUpdates=false` (no reflog to
//! tell a push from a fetch), the `reftable` ref format, and a push from
//! another repository.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Ref folders looked at, at most.
const MAX_FOLDERS: usize = 10_000;
/// How far up from the project a `.git` is looked for.
const MAX_UP: usize = 64;
/// The end of a reflog read for new lines.
const REFLOG_TAIL: u64 = 64 * 1024;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Refs {
    /// The repository's common git folder, when there is one.
    pub git_dir: Option<String>,
    /// Each folder under `refs/remotes/` (relative to the git folder) and
    /// its modification time in nanoseconds.
    pub folders: BTreeMap<String, i64>,
}

/// One push: what moved where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    pub remote: String,
    pub branch: String,
    pub old: String,
    pub new: String,
    pub url: Option<String>,
}

impl Push {
    pub fn describe(&self) -> String {
        let short = |sha: &str| sha.chars().take(9).collect::<String>();
        let old = if self.old.chars().all(|c| c == '0') {
            "(new branch)".to_string()
        } else {
            short(&self.old)
        };
        let url = self
            .url
            .as_deref()
            .map(|url| format!(" ({url})"))
            .unwrap_or_default();
        format!(
            "{} → {}/{}{url}: {old} → {}",
            self.branch,
            self.remote,
            self.branch,
            short(&self.new)
        )
    }
}

/// The folders of the remote-tracking refs now.
pub fn snapshot(project_root: &Path) -> Refs {
    let Some(git_dir) = common_git_dir(project_root) else {
        return Refs::default();
    };
    let mut folders = BTreeMap::new();
    let mut pending = vec![git_dir.join("refs").join("remotes")];
    while let Some(dir) = pending.pop() {
        if folders.len() >= MAX_FOLDERS {
            break;
        }
        let Ok(metadata) = std::fs::metadata(&dir) else {
            continue;
        };
        if let Ok(relative) = dir.strip_prefix(&git_dir) {
            folders.insert(relative.to_string_lossy().into_owned(), mtime_ns(&metadata));
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        // The entry's type comes with the listing: no `stat` per ref.
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    Refs {
        git_dir: Some(git_dir.to_string_lossy().into_owned()),
        folders,
    }
}

fn mtime_ns(metadata: &std::fs::Metadata) -> i64 {
    metadata.mtime() * 1_000_000_000 + metadata.mtime_nsec()
}

/// The pushes between `before` and now: ref files written since
/// `since_ms` in folders that changed, whose reflog has an `update by
/// push` line written since then.
pub fn pushes(before: &Refs, project_root: &Path, since_ms: u64) -> Vec<Push> {
    let Some(git_dir) = before.git_dir.as_deref().map(PathBuf::from) else {
        return Vec::new();
    };
    let after = snapshot(project_root);
    let since_ns = (since_ms as i64 - 1000) * 1_000_000;
    let since_secs = (since_ms / 1000) as i64;
    let mut found = Vec::new();
    for (folder, time) in &after.folders {
        if before.folders.get(folder) == Some(time) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(git_dir.join(folder)) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if !metadata.is_file() || mtime_ns(&metadata) < since_ns {
                continue;
            }
            let name = format!("{folder}/{}", entry.file_name().to_string_lossy());
            let Some(rest) = name.strip_prefix("refs/remotes/") else {
                continue;
            };
            let Some((remote, branch)) = rest.split_once('/') else {
                continue;
            };
            if branch == "HEAD" {
                continue;
            }
            for (old, new) in pushed_lines(&git_dir.join("logs").join(&name), since_secs) {
                found.push(Push {
                    remote: remote.to_string(),
                    branch: branch.to_string(),
                    old,
                    new,
                    url: remote_url(&git_dir, remote),
                });
            }
        }
    }
    found
}

/// `(old, new)` of each reflog line written at or after `since_secs` whose
/// message is `update by push`.
fn pushed_lines(reflog: &Path, since_secs: i64) -> Vec<(String, String)> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(reflog) else {
        return Vec::new();
    };
    let length = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(REFLOG_TAIL)));
    let mut text = String::new();
    if file.read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    text.lines()
        .filter_map(|line| {
            let (head, message) = line.split_once('\t')?;
            if !message.starts_with("update by push") {
                return None;
            }
            let mut words = head.split(' ');
            let old = words.next()?.to_string();
            let new = words.next()?.to_string();
            // `<name> <email> <seconds> <zone>`: the seconds are second to last.
            let seconds: i64 = head.rsplit(' ').nth(1)?.parse().ok()?;
            (seconds >= since_secs).then_some((old, new))
        })
        .collect()
}

/// `remote.<name>.url` from the repository's config file.
fn remote_url(git_dir: &Path, remote: &str) -> Option<String> {
    let text = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let header = format!("[remote \"{remote}\"]");
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == header;
            continue;
        }
        if inside
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "url"
        {
            return Some(value.trim().to_string());
        }
    }
    None
}

/// The common git folder of the repository holding `project_root`: a
/// `.git` folder, or the folder a `.git` file points at (and its
/// `commondir`, for a linked worktree). `None` outside a repository or
/// with the reftable ref format.
pub fn common_git_dir(project_root: &Path) -> Option<PathBuf> {
    let mut dir = Some(project_root);
    for _ in 0..MAX_UP {
        let here = dir?;
        let dot_git = here.join(".git");
        if let Ok(metadata) = std::fs::metadata(&dot_git) {
            let git_dir = if metadata.is_dir() {
                dot_git
            } else {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let pointed = text.trim().strip_prefix("gitdir:")?.trim().to_string();
                let pointed = here.join(pointed);
                match std::fs::read_to_string(pointed.join("commondir")) {
                    Ok(common) => pointed.join(common.trim()),
                    Err(_) => pointed,
                }
            };
            if git_dir.join("reftable").is_dir() {
                return None;
            }
            return Some(git_dir);
        }
        dir = here.parent();
    }
    None
}
