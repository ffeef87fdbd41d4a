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
//! A tag push, or a push to a remote whose fetch refspec no longer maps its
//! branches, moves no remote-tracking ref. Two more signals see those:
//!
//! - **The remote's own refs, for a remote on this machine** (a path or a
//!   `file://` URL in `remote.<name>.url`): its ref folders' times are
//!   snapshotted the same way, and a ref file written there since the
//!   command started is a push, whatever the local refspecs say and however
//!   quiet the push was.
//! - **git's report in the command's output**: `To <url>` followed by one
//!   line per ref pushed (` * [new tag]  v1 -> v1`, `   a1..b2  main ->
//!   main`, and the `--porcelain` form), for any remote.
//!
//! Not seen: a push to a remote elsewhere (a network URL) whose report was
//! silenced (`-q`, output discarded) and that moved no remote-tracking ref;
//! a repository with `core.logAllRefUpdates=false`; the `reftable` ref
//! format; a push from another repository. Sandbox mode closes these (see
//! docs/guard-modes.md). A pre-push hook was weighed and left out: `--no-verify` or
//! `-c core.hooksPath=` skip it, and writing into the user's hooks folder
//! (or a tracked one such as husky's) is not ours to do.

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
    /// Remotes on this machine: name → their ref folders' times.
    #[serde(default)]
    pub local_remotes: BTreeMap<String, LocalRemote>,
}

/// A remote whose repository is on this machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LocalRemote {
    /// Its git folder.
    pub git_dir: String,
    /// Each folder under its `refs/` and its modification time.
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
        let url = self
            .url
            .as_deref()
            .map(|url| format!(" ({url})"))
            .unwrap_or_default();
        if let Some(tag) = self.branch.strip_prefix("tags/") {
            return format!("tag {tag} → {}{url}", self.remote);
        }
        if self.old.is_empty() {
            // Seen on the remote's side or in git's report: no old value.
            let new = match self.new.is_empty() {
                true => String::new(),
                false => format!(": now {}", short(&self.new)),
            };
            return format!("{} → {}{url}{new}", self.branch, self.remote);
        }
        let old = if self.old.chars().all(|c| c == '0') {
            "(new branch)".to_string()
        } else {
            short(&self.old)
        };
        format!(
            "{} → {}/{}{url}: {old} → {}",
            self.branch,
            self.remote,
            self.branch,
            short(&self.new)
        )
    }
}

/// The folders of the remote-tracking refs now, and of the refs of the
/// remotes on this machine.
pub fn snapshot(project_root: &Path) -> Refs {
    let Some(git_dir) = common_git_dir(project_root) else {
        return Refs::default();
    };
    let folders = folder_times(&git_dir, &git_dir.join("refs").join("remotes"));
    let mut local_remotes = BTreeMap::new();
    for (name, url) in remote_urls(&git_dir) {
        let Some(remote_dir) = local_git_dir(&git_dir, &url) else {
            continue;
        };
        // A remote that is this repository (`git remote add self .`): its
        // refs move with every commit.
        if remote_dir.canonicalize().ok() == git_dir.canonicalize().ok() {
            continue;
        }
        let folders = folder_times(&remote_dir, &remote_dir.join("refs"));
        local_remotes.insert(
            name,
            LocalRemote {
                git_dir: remote_dir.to_string_lossy().into_owned(),
                folders,
            },
        );
    }
    Refs {
        git_dir: Some(git_dir.to_string_lossy().into_owned()),
        folders,
        local_remotes,
    }
}

/// Each folder under `top` (relative to `git_dir`) and its time: one
/// `stat` per folder, however many refs.
fn folder_times(git_dir: &Path, top: &Path) -> BTreeMap<String, i64> {
    let mut folders = BTreeMap::new();
    let mut pending = vec![top.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if folders.len() >= MAX_FOLDERS {
            break;
        }
        let Ok(metadata) = std::fs::metadata(&dir) else {
            continue;
        };
        if let Ok(relative) = dir.strip_prefix(git_dir) {
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
    folders
}

/// The git folder of a remote given by a path or a `file://` URL, when it
/// is a repository on this machine.
fn local_git_dir(git_dir: &Path, url: &str) -> Option<PathBuf> {
    let path = match url.strip_prefix("file://") {
        Some(rest) => PathBuf::from(rest),
        // `host:path` and `scheme://` are elsewhere.
        None if url.contains("://") => return None,
        None if !url.starts_with('/') && !url.starts_with('.') && url.contains(':') => {
            return None;
        }
        None => PathBuf::from(url),
    };
    // A relative URL is relative to the repository's work tree (or, bare,
    // to the git folder).
    let path = if path.is_absolute() {
        path
    } else {
        git_dir.parent().unwrap_or(git_dir).join(path)
    };
    if path.join("refs").is_dir() && path.join("HEAD").is_file() {
        return Some(path);
    }
    let dot_git = path.join(".git");
    (dot_git.join("refs").is_dir()).then_some(dot_git)
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
    for (remote, now) in &after.local_remotes {
        let Some(was) = before.local_remotes.get(remote) else {
            continue;
        };
        if was.git_dir != now.git_dir {
            continue;
        }
        for push in written_on_remote(remote, was, now, since_ns) {
            let same = |p: &Push| {
                p.remote == push.remote
                    && (p.branch == push.branch
                        || Some(p.branch.as_str()) == push.branch.strip_prefix("heads/"))
            };
            if !found.iter().any(same) {
                found.push(Push {
                    url: remote_url(&git_dir, remote),
                    ..push
                });
            }
        }
    }
    found
}

/// The refs written in a local remote's folders that changed: a branch as
/// `heads/…` is named by its branch, a tag as `tags/…`.
fn written_on_remote(
    remote: &str,
    was: &LocalRemote,
    now: &LocalRemote,
    since_ns: i64,
) -> Vec<Push> {
    let remote_dir = PathBuf::from(&now.git_dir);
    let mut found = Vec::new();
    for (folder, time) in &now.folders {
        if was.folders.get(folder) == Some(time) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(remote_dir.join(folder)) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if !metadata.is_file() || mtime_ns(&metadata) < since_ns {
                continue;
            }
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.ends_with(".lock") {
                continue;
            }
            let name = format!("{folder}/{file_name}");
            let Some(short) = name.strip_prefix("refs/") else {
                continue;
            };
            let new = std::fs::read_to_string(entry.path())
                .map(|text| text.trim().to_string())
                .unwrap_or_default();
            let branch = short.strip_prefix("heads/").unwrap_or(short).to_string();
            found.push(Push {
                remote: remote.to_string(),
                branch,
                old: String::new(),
                new,
                url: None,
            });
        }
    }
    found
}

/// The pushes git reported in a command's output: after a `To <url>`
/// line, one line per ref that moved (` * [new tag]  v1 -> v1`, `   a..b
/// main -> main`, ` + a...b main -> main (forced update)`, ` - [deleted]
/// old`), or the `--porcelain` form (`*\trefs/tags/v1:refs/tags/v1\t[new
/// tag]`). Rejected and up-to-date refs are no push.
pub fn pushes_in_output(text: &str) -> Vec<Push> {
    let mut found = Vec::new();
    let mut url: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("To ") {
            url = Some(rest.trim().to_string());
            continue;
        }
        let Some(to) = url.as_deref() else {
            continue;
        };
        let (flag, rest) = match line.split_once('\t') {
            // Porcelain: `<flag>\t<from>:<to>\t<summary>`.
            Some((flag, rest)) if flag.len() == 1 => {
                let refs = rest.split('\t').next().unwrap_or_default();
                let target = refs.rsplit(':').next().unwrap_or_default();
                (flag.chars().next(), target.to_string())
            }
            _ => {
                let mut chars = line.chars();
                if chars.next() != Some(' ') {
                    url = None;
                    continue;
                }
                let flag = chars.next();
                let rest = chars.as_str();
                let target = match rest.split_once(" -> ") {
                    Some((_, target)) => target.split_whitespace().next().unwrap_or_default(),
                    // ` - [deleted]         old`
                    None => rest.split_whitespace().last().unwrap_or_default(),
                };
                (flag, target.to_string())
            }
        };
        if !matches!(flag, Some(' ' | '+' | '*' | '-')) || rest.is_empty() {
            continue;
        }
        let short = rest.strip_prefix("refs/").unwrap_or(&rest);
        let tag = line.contains("[new tag]") || short.starts_with("tags/");
        let branch = match (tag, short.strip_prefix("heads/")) {
            (true, _) => format!("tags/{}", short.strip_prefix("tags/").unwrap_or(short)),
            (false, Some(branch)) => branch.to_string(),
            (false, None) => short.to_string(),
        };
        found.push(Push {
            remote: to.to_string(),
            branch,
            old: String::new(),
            new: String::new(),
            url: None,
        });
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

/// Each `remote.<name>.url` in the repository's config file.
fn remote_urls(git_dir: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(git_dir.join("config")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut remote: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            remote = line
                .strip_prefix("[remote \"")
                .and_then(|rest| rest.strip_suffix("\"]"))
                .map(str::to_string);
            continue;
        }
        if let Some(name) = &remote
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "url"
        {
            found.push((name.clone(), value.trim().to_string()));
        }
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gits_report_of_a_push_is_read() {
        let text = "Enumerating objects: 5, done.\nTo /tmp/r.git\n * [new tag]         v1 -> v1\n   1a2b3c4..5d6e7f8  main -> main\n + 1a2b3c4...5d6e7f8 dev -> dev (forced update)\n - [deleted]         old\n ! [rejected]        x -> x (fetch first)\n = [up to date]      y -> y\nerror: failed to push some refs\n";
        let found: Vec<String> = pushes_in_output(text).iter().map(Push::describe).collect();
        assert_eq!(
            found,
            [
                "tag v1 → /tmp/r.git",
                "main → /tmp/r.git",
                "dev → /tmp/r.git",
                "old → /tmp/r.git"
            ]
        );
        let porcelain = "To git@example.com:o/r.git\n*\trefs/tags/v2:refs/tags/v2\t[new tag]\n \trefs/heads/main:refs/heads/main\t1a..2b\n!\trefs/heads/x:refs/heads/x\t[rejected]\nDone\n";
        let found: Vec<String> = pushes_in_output(porcelain)
            .iter()
            .map(Push::describe)
            .collect();
        assert_eq!(
            found,
            [
                "tag v2 → git@example.com:o/r.git",
                "main → git@example.com:o/r.git"
            ]
        );
        // Not a report: no `To` line before, or prose after it.
        assert!(pushes_in_output(" * [new tag] v1 -> v1\n").is_empty());
        assert!(pushes_in_output("To do: ship it\nand more\n").is_empty());
    }
}
