//! Which files a project check looks at: walked the way ripgrep walks (the
//! `ignore` crate: `.gitignore`, `.ignore`, hidden files skipped), then the
//! configured include/exclude; `node_modules/`, `target/`, `.git/`,
//! virtual environments and the hooks' state root are never checked, even
//! when named. A file is checked when a configured server or an ast-grep
//! rule handles it.
//!
//! Only the project is checked: a named path outside it (`..`, a sibling, a
//! symlink out) is refused by the front ends ([`refuse_outside`]) and never
//! walked, and links inside are not followed. What cannot be checked — a
//! FIFO, socket or device under a source file's name, a folder that cannot
//! be read (permissions, a path longer than the system allows) — is
//! listed with its reason ([`NotChecked`]), never silently left out.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::resolve;
use super::settings::Settings;
use crate::astgrep::RuleSet;
use crate::hook::ctx::Ctx;
use crate::lsp::servers::Selection;

/// Folders never checked, whatever the ignore files say.
pub const NEVER: &[&str] = &[
    "node_modules",
    "target",
    ".git",
    ".venv",
    "venv",
    "__pycache__",
];

/// A path argument that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoSuchPath(pub String);

/// Something the check was asked to look at but could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotChecked {
    pub path: PathBuf,
    /// Why, in words ("a FIFO, not a regular file").
    pub reason: String,
}

/// The files to check, and what could not be looked at.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    pub files: Vec<PathBuf>,
    pub not_checked: Vec<NotChecked>,
}

/// Ignore files: an error reading one is not a file left unchecked.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".rgignore", "exclude"];

/// The files to check: every file under the paths (or the project) that a
/// configured server or a rule handles, sorted.
pub fn collect_files(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    paths: &[PathBuf],
) -> Result<Vec<PathBuf>, NoSuchPath> {
    collect(ctx, settings, rules, paths).map(|collected| collected.files)
}

/// Whether `a` and `b` name one file (device and inode, links followed).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// [`collect_files`], with what could not be checked.
pub fn collect(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    paths: &[PathBuf],
) -> Result<Collected, NoSuchPath> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    let mut collected = Collected::default();
    let mut roots = Vec::new();
    for path in paths {
        let absolute = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        if absolute.symlink_metadata().is_err() {
            return Err(NoSuchPath(path.display().to_string()));
        }
        // `sub/../a.py` is `a.py`, counted and shown once (attack AE-14),
        // unless a link on the way makes `..` lead elsewhere.
        let normal = crate::util::paths::lexically_normal(&absolute);
        let absolute = if normal != absolute && same_file(&normal, &absolute) {
            normal
        } else {
            absolute
        };
        // The front ends refuse these with a message; here they are never
        // walked, whoever asks.
        if let Some(why) = outside_project(ctx, &absolute) {
            collected.not_checked.push(NotChecked {
                path: absolute,
                reason: why,
            });
            continue;
        }
        roots.push(absolute);
    }
    if roots.is_empty() && paths.is_empty() {
        roots.push(ctx.project_root.clone());
    }
    let mut handles = Handles::default();
    let mut files = BTreeSet::new();
    for root in &roots {
        if root.is_file() {
            if handles.handled(ctx, settings, rules, root) {
                files.insert(root.clone());
            }
            continue;
        }
        let state_root = ctx.state_root.clone();
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .filter_entry(move |entry| {
                let name = entry.file_name().to_string_lossy();
                !(entry.file_type().is_some_and(|t| t.is_dir())
                    && (NEVER.contains(&name.as_ref()) || entry.path() == state_root))
            })
            .build();
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    if let Some(unreadable) = unreadable(&error) {
                        collected.not_checked.push(unreadable);
                    }
                    continue;
                }
            };
            let Some(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_file() {
                if handles.handled(ctx, settings, rules, entry.path()) {
                    files.insert(entry.into_path());
                }
            } else if let Some(kind) = crate::util::fsread::not_regular_kind(file_type)
                && !file_type.is_dir()
                && handles.handled(ctx, settings, rules, entry.path())
            {
                // A FIFO or socket under a source file's name: a checker
                // would refuse it (never wait on it); say so.
                collected.not_checked.push(NotChecked {
                    path: entry.into_path(),
                    reason: format!("{kind}, not a regular file"),
                });
            }
        }
    }
    collected.files = files.into_iter().collect();
    Ok(collected)
}

/// A walk error that means files went unchecked (a folder that cannot be
/// read), as a [`NotChecked`]; `None` for an ignore file's own trouble.
fn unreadable(error: &ignore::Error) -> Option<NotChecked> {
    let io = error.io_error()?;
    let path = walk_error_path(error)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if name.is_some_and(|name| IGNORE_FILES.contains(&name.as_str())) {
        return None;
    }
    // The walker wraps the system's error, so its number may be hidden;
    // the kind survives.
    let too_long = io.raw_os_error() == Some(libc::ENAMETOOLONG)
        || io.kind() == std::io::ErrorKind::InvalidFilename;
    let reason = if too_long {
        "its path is longer than the system allows".to_string()
    } else {
        format!("cannot be read: {io}")
    };
    Some(NotChecked { path, reason })
}

fn walk_error_path(error: &ignore::Error) -> Option<PathBuf> {
    match error {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            walk_error_path(err)
        }
        _ => None,
    }
}

/// Why `path` (absolute, existing) is not the project's to check, if it
/// is not: it resolves (through `..` and symlinks) outside the project.
pub fn outside_project(ctx: &Ctx, path: &Path) -> Option<String> {
    let root = ctx
        .project_root
        .canonicalize()
        .unwrap_or_else(|_| ctx.project_root.clone());
    let real = path.canonicalize().ok()?;
    if real.starts_with(&root) {
        return None;
    }
    Some(format!(
        "outside the project {} (it is {}); not checked",
        root.display(),
        real.display()
    ))
}

/// Refuses named paths outside the project, with one line naming the first.
pub fn refuse_outside(ctx: &Ctx, paths: &[PathBuf]) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    for path in paths {
        if let Some(why) = outside_project(ctx, &cwd.join(path)) {
            anyhow::bail!(
                "{}: {why}",
                crate::util::text::escape_controls(&path.to_string_lossy())
            );
        }
    }
    Ok(())
}

/// Whether some server claims a file, remembered per extension and folder:
/// finding a server binary searches `node_modules/.bin` up the tree and
/// PATH, too slow to repeat for each of thousands of files.
#[derive(Default)]
struct Handles {
    by_folder: HashMap<(String, PathBuf), bool>,
}

impl Handles {
    fn handled(
        &mut self,
        ctx: &Ctx,
        settings: &Settings,
        rules: Option<&RuleSet>,
        path: &Path,
    ) -> bool {
        // A file named directly is still never checked inside these folders.
        let relative = path.strip_prefix(&ctx.project_root).unwrap_or(path);
        if relative
            .components()
            .any(|c| NEVER.contains(&c.as_os_str().to_string_lossy().as_ref()))
        {
            return false;
        }
        if settings.allows(path).is_err() {
            return false;
        }
        if rules.is_some_and(|rules| rules.covers(path)) {
            return true;
        }
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = path.parent().unwrap_or(path).to_path_buf();
        *self
            .by_folder
            .entry((extension, folder))
            .or_insert_with(|| {
                !matches!(
                    settings.registry.select(path, &ctx.project_root),
                    Selection::Unsupported
                )
            })
    }
}

/// Project-relative with `/` separators, else as given.
pub fn relative(ctx: &Ctx, path: &Path) -> String {
    resolve::display_path(ctx, path).replace('\\', "/")
}
