//! What changed in the project between two loop iterations.
//!
//! We take a snapshot of the project's files with a signature of each one;
//! comparing two snapshots gives the files changed in between, whoever
//! changed them (an Edit, a Bash `sed`, a formatter). In a git work tree the
//! snapshot covers the files git reports as modified or untracked, with a
//! hash of their content (a clean file that changes becomes dirty, so it
//! shows up). Elsewhere it covers the files found by walking the project,
//! each signed by size and modification time, up to [`MAX_FILES`] files;
//! directories that hold tools' output or other people's code
//! ([`SKIPPED_DIRS`], and every hidden directory) are not walked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::UNIX_EPOCH;

use crate::util::fsread::{self, Links, limits};
use crate::util::text::fnv1a;

/// Path (relative to the project) to content signature.
pub type Snapshot = BTreeMap<String, String>;

/// Enough for any real working tree; past it we stop rather than stall.
pub const MAX_FILES: usize = 5_000;
/// Files larger than this are identified by size and mtime instead of content.
const MAX_HASHED_BYTES: u64 = 4 * 1024 * 1024;
/// Directories a walk outside git does not enter: dependencies, build
/// output and caches, which an agent's edit never is.
pub const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "__pycache__",
    "venv",
    "dist",
    "build",
];

/// The project's files at `root` as a snapshot, minus `exclude` (the state
/// root, whose own writes would otherwise look like progress): git's dirty
/// files in a git work tree, the walked files elsewhere.
pub fn snapshot(root: &Path, exclude: &Path) -> Option<Snapshot> {
    match git_paths(root, true) {
        Some(dirty) => Some(git_snapshot(root, exclude, &dirty)),
        None => Some(walk_snapshot(root, exclude)),
    }
}

fn git_snapshot(root: &Path, exclude: &Path, dirty: &[String]) -> Snapshot {
    let excluded_prefix = exclude
        .strip_prefix(root)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|prefix| !prefix.is_empty());
    let mut snapshot = Snapshot::new();
    for path in dirty.iter().take(MAX_FILES) {
        if excluded_prefix
            .as_deref()
            .is_some_and(|prefix| Path::new(path).starts_with(prefix))
        {
            continue;
        }
        snapshot.insert(path.clone(), content_hash(&root.join(path)));
    }
    snapshot
}

fn walk_snapshot(root: &Path, exclude: &Path) -> Snapshot {
    walk_files(root, exclude, MAX_FILES)
        .into_iter()
        .map(|(relative, meta)| {
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            (relative, format!("size{}-mtime{mtime}", meta.len()))
        })
        .collect()
}

/// The regular files under `root` (project-relative paths, sorted walk), at
/// most `max`, not entering hidden directories, [`SKIPPED_DIRS`] or
/// `exclude`. Symlinks are not followed.
pub fn walk_files(root: &Path, exclude: &Path, max: usize) -> Vec<(String, std::fs::Metadata)> {
    walk_files_and_links(root, exclude, max).0
}

/// [`walk_files`], and the links to folders it passed (not followed).
pub fn walk_files_and_links(
    root: &Path,
    exclude: &Path,
    max: usize,
) -> (Vec<(String, std::fs::Metadata)>, Vec<PathBuf>) {
    let mut found = Vec::new();
    let mut links = Vec::new();
    let mut pending: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|entry| entry.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if name.starts_with('.') || SKIPPED_DIRS.contains(&name.as_ref()) || path == exclude
                {
                    continue;
                }
                subdirs.push(path);
            } else if kind.is_symlink() && path.is_dir() {
                links.push(path);
            } else if kind.is_file() {
                if found.len() >= max {
                    return (found, links);
                }
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                let Ok(relative) = path.strip_prefix(root) else {
                    continue;
                };
                found.push((relative.to_string_lossy().into_owned(), meta));
            }
        }
        // Depth first, in name order.
        pending.extend(subdirs.into_iter().rev());
    }
    (found, links)
}

/// Project-relative paths of the files git sees changed or untracked,
/// deletions left out; `None` outside a git work tree (or without git).
/// Paths outside the project (when it is a folder inside a bigger work
/// tree) are left out.
pub fn git_dirty(root: &Path) -> Option<Vec<String>> {
    git_paths(root, false)
}

/// [`git_dirty`], with deleted files too when `deleted`.
fn git_paths(root: &Path, deleted: bool) -> Option<Vec<String>> {
    let entries = git_status_entries(root)?;
    // git prints paths relative to the top of the work tree.
    let top = git_top(root).unwrap_or_else(|| root.to_path_buf());
    let prefix = root
        .strip_prefix(&top)
        .ok()
        .map(Path::to_path_buf)
        .filter(|prefix| !prefix.as_os_str().is_empty());
    Some(
        entries
            .iter()
            .filter(|entry| deleted || (entry[0] != b'D' && entry[1] != b'D'))
            .take(MAX_FILES)
            .filter_map(|entry| {
                let path = PathBuf::from(String::from_utf8_lossy(&entry[3..]).into_owned());
                match &prefix {
                    Some(prefix) => path
                        .strip_prefix(prefix)
                        .ok()
                        .map(|p| p.to_string_lossy().into_owned()),
                    None => Some(path.to_string_lossy().into_owned()),
                }
            })
            .collect(),
    )
}

/// The work tree's top, when the project is a folder inside it. Found by
/// walking up to the `.git` entry (no second git process).
fn git_top(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// `git status --porcelain=v1 -z` entries (`XY path`, paths relative to the
/// top of the work tree), untracked files included, renames as add + delete;
/// `None` when `root` is not in a git work tree or git is missing.
fn git_status_entries(root: &Path) -> Option<Vec<Vec<u8>>> {
    let output = crate::util::git::command(root)
        .args([
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
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

/// Files whose signature differs between `before` and `after`, with their
/// content hash now (`reverted` when a file went back to its committed
/// content, or is gone). A walked file is signed by size and mtime; its
/// change is named by content, so the same content gives the same evidence.
pub fn changed(root: &Path, before: &Snapshot, after: &Snapshot) -> Vec<(String, String)> {
    let mut changes = Vec::new();
    for (path, hash) in after {
        if before.get(path) != Some(hash) {
            let hash = if hash.starts_with("size") {
                content_hash(&root.join(path))
            } else {
                hash.clone()
            };
            changes.push((path.clone(), hash));
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
