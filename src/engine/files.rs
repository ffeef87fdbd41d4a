//! Which files a project check looks at: walked the way ripgrep walks (the
//! `ignore` crate: `.gitignore`, `.ignore`, hidden files skipped), then the
//! configured include/exclude; `node_modules/`, `target/`, `.git/`,
//! virtual environments and the hooks' state root are never checked, even
//! when named. A file is checked when a configured server or an ast-grep
//! rule handles it.

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

/// The files to check: every file under the paths (or the project) that a
/// configured server or a rule handles, sorted.
pub fn collect_files(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    paths: &[PathBuf],
) -> Result<Vec<PathBuf>, NoSuchPath> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    let mut roots = Vec::new();
    for path in paths {
        let absolute = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        if !absolute.exists() {
            return Err(NoSuchPath(path.display().to_string()));
        }
        roots.push(absolute);
    }
    if roots.is_empty() {
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
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && handles.handled(ctx, settings, rules, entry.path())
            {
                files.insert(entry.into_path());
            }
        }
    }
    Ok(files.into_iter().collect())
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
