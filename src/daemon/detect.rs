//! Which languages a project contains, so session start can pre-start their
//! servers before the first edit: marker files at the root
//! (`pyproject.toml`, `tsconfig.json`, `Cargo.toml`, `go.mod`,
//! `compile_commands.json`, …), then source files in the root and the
//! folders just below it. Cheap on purpose — it runs in the session-start
//! hook: two directory levels, at most [`MAX_ENTRIES`] entries, no reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A marker file and the extension of the files its language server checks.
const MARKERS: &[(&str, &str)] = &[
    ("pyproject.toml", "py"),
    ("setup.py", "py"),
    ("setup.cfg", "py"),
    ("requirements.txt", "py"),
    ("tsconfig.json", "ts"),
    ("jsconfig.json", "js"),
    ("package.json", "js"),
    ("Cargo.toml", "rs"),
    ("go.mod", "go"),
    ("compile_commands.json", "c"),
    ("CMakeLists.txt", "cpp"),
];

/// Folders never looked into.
const SKIP: &[&str] = &[
    "node_modules",
    "target",
    "vendor",
    "dist",
    "build",
    "venv",
    "__pycache__",
];

/// Directory entries looked at, in all.
pub const MAX_ENTRIES: usize = 400;

/// One path per file extension the project contains: a real source file
/// when one is near the root (its folder decides the server's workspace
/// root), else a path beside the marker file.
pub fn language_probes(root: &Path) -> Vec<PathBuf> {
    let mut by_extension: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut budget = MAX_ENTRIES;
    let mut folders = Vec::new();
    scan_dir(root, &mut by_extension, &mut budget, Some(&mut folders));
    for folder in folders {
        if budget == 0 {
            break;
        }
        scan_dir(&folder, &mut by_extension, &mut budget, None);
    }
    for (marker, extension) in MARKERS {
        if !by_extension.contains_key(*extension) && root.join(marker).is_file() {
            by_extension.insert(
                extension.to_string(),
                root.join(format!("ralph-probe.{extension}")),
            );
        }
    }
    by_extension.into_values().collect()
}

fn scan_dir(
    dir: &Path,
    found: &mut BTreeMap<String, PathBuf>,
    budget: &mut usize,
    mut folders: Option<&mut Vec<PathBuf>>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if let Some(folders) = folders.as_deref_mut()
                && !SKIP.contains(&name.as_ref())
            {
                folders.push(entry.path());
            }
        } else if kind.is_file()
            && let Some((_, extension)) = name.rsplit_once('.')
            && !extension.is_empty()
        {
            found
                .entry(extension.to_string())
                .or_insert_with(|| entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_and_nearby_sources() {
        let dir = std::env::temp_dir().join(format!("ralph-detect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("node_modules/x")).unwrap();
        std::fs::write(dir.join("pyproject.toml"), "").unwrap();
        std::fs::write(dir.join("src/app.ts"), "").unwrap();
        std::fs::write(dir.join("node_modules/x/index.go"), "").unwrap();
        let probes = language_probes(&dir);
        assert!(probes.contains(&dir.join("src/app.ts")), "{probes:?}");
        assert!(probes.contains(&dir.join("ralph-probe.py")), "{probes:?}");
        assert!(
            !probes
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "go"))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
