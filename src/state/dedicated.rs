//! Whether a folder is ours to fill and to delete as the state root.
//!
//! The state root is `<project>/.claude/orchestrator` unless
//! `RALPH_HOOKS_STATE_DIR` points elsewhere, and that variable can name
//! any folder: the project itself, a folder above it, a shared folder with
//! other files. Two things we do to the state root are only right for a
//! folder of our own: a `.gitignore` holding `*` (git then ignores every
//! file there) and `install --uninstall --purge` (which deletes the
//! folder). This module decides when a folder is ours: one named
//! `.claude/orchestrator`, or one that holds nothing but the names our
//! hooks and commands write.

use std::path::{Component, Path};

/// The names our hooks and commands create at the top of the state root.
/// A name missing here only makes a custom state root count as shared (the
/// `.gitignore` is not written, `--purge` refuses): never a deletion.
const OWN_NAMES: &[&str] = &[
    ".gitignore",
    ".locks",
    "install.json",
    "loop.json",
    "loops",
    "events.jsonl",
    "tasks",
    "daemon",
    "telemetry",
    "notify",
    "receipts",
    "command-state",
    "monitor.json",
    "sandbox.json",
    "bash-edits.json",
    "continuation.json",
    "turns.json",
    "diagnostics.json",
    "diagnostics",
    "guard-notice.txt",
    "sessions",
    "knowledge",
    "pending.json",
    "background.json",
    "journal",
    "base.json",
];

/// Whether `name` is one of ours: an own name, a damaged copy moved aside
/// (`loop.json.corrupt-…`), a write in progress (`.loop.json.tmp-…`) or a
/// running loop's kept copy (`.loop.json.kept`).
pub fn is_own_name(name: &str) -> bool {
    let base = name.split(".corrupt-").next().unwrap_or(name);
    let base = match base.strip_prefix('.') {
        Some(hidden) if hidden.contains(".tmp-") => hidden.split(".tmp-").next().unwrap_or(base),
        Some(hidden) if hidden.ends_with(".kept") => hidden.trim_end_matches(".kept"),
        _ => base,
    };
    OWN_NAMES.contains(&base)
}

/// Whether `root` is the default state folder, `<something>/.claude/orchestrator`.
fn named_ours(root: &Path) -> bool {
    let mut names = root
        .components()
        .rev()
        .filter(|c| !matches!(c, Component::CurDir));
    matches!(names.next(), Some(Component::Normal(n)) if n == "orchestrator")
        && matches!(names.next(), Some(Component::Normal(n)) if n == ".claude")
}

/// The entries of `root` that are not ours, sorted (none when `root` does
/// not exist).
pub fn foreign_entries(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut foreign: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !is_own_name(name))
        .collect();
    foreign.sort();
    foreign
}

/// Why `root` is not a folder of our own (`None` when it is): it holds a
/// git repository, or (unless it is named `.claude/orchestrator`) files
/// that are not ours.
pub fn not_ours(root: &Path) -> Option<String> {
    if root.join(".git").symlink_metadata().is_ok() {
        return Some(format!("{} holds a git repository (.git)", root.display()));
    }
    if named_ours(root) {
        return None;
    }
    let foreign = foreign_entries(root);
    if foreign.is_empty() {
        return None;
    }
    let shown: Vec<&str> = foreign.iter().take(3).map(String::as_str).collect();
    Some(format!(
        "{} holds files that are not ralph-hooks state ({}{})",
        root.display(),
        crate::util::text::escape_controls(&shown.join(", ")),
        if foreign.len() > 3 { ", …" } else { "" }
    ))
}

/// Why `state_root` may not serve `project` at all: it is the project
/// folder or a folder above it (the `.gitignore` with `*` would hide the
/// project from git, and `--purge` would delete it).
pub fn contains_project(state_root: &Path, project: &Path) -> Option<String> {
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let (root, project) = (real(state_root), real(project));
    if project == root {
        Some("it is the project folder itself".to_string())
    } else if project.starts_with(&root) {
        Some(format!("it holds the project {}", project.display()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(label: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("ralph-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn own_names_and_their_temporary_and_damaged_copies_are_ours() {
        for name in [
            "loop.json",
            ".locks",
            "loop.json.corrupt-20260101T000000Z",
            ".install.json.tmp-123-4",
        ] {
            assert!(is_own_name(name), "{name}");
        }
        for name in ["main.py", ".git", "docs", ".main.py.tmp-1", "x.corrupt-1"] {
            assert!(!is_own_name(name), "{name}");
        }
    }

    #[test]
    fn a_folder_with_other_files_or_a_repository_is_not_ours() {
        let dir = Scratch::new("dedicated-a");
        let root = dir.path();
        assert_eq!(not_ours(root), None, "an empty folder is ours to fill");
        std::fs::write(root.join("loop.json"), "{}").unwrap();
        assert_eq!(not_ours(root), None);
        std::fs::create_dir(root.join("docs")).unwrap();
        assert!(not_ours(root).unwrap().contains("(docs)"));
        let named = root.join("p/.claude/orchestrator");
        std::fs::create_dir_all(named.join("mine")).unwrap();
        assert_eq!(not_ours(&named), None, "the default folder is ours by name");
        std::fs::create_dir(named.join(".git")).unwrap();
        assert!(not_ours(&named).unwrap().contains(".git"));
    }

    #[test]
    fn the_project_and_its_ancestors_are_refused() {
        let dir = Scratch::new("dedicated-b");
        let project = dir.path().join("p");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        assert!(contains_project(&project, &project).is_some());
        assert!(contains_project(&project.join("."), &project).is_some());
        assert!(contains_project(dir.path(), &project).is_some());
        assert_eq!(
            contains_project(&project.join(".claude/orchestrator"), &project),
            None
        );
        assert_eq!(contains_project(&dir.path().join("q"), &project), None);
    }
}
