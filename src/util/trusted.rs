//! Where the hooks find their own helper programs (`git`, `sh`, `bwrap`):
//! through `$PATH`, but only through its entries the agent cannot write.
//!
//! Claude Code's `PATH` is often the user's shell's after
//! `source .venv/bin/activate` (or direnv, or `npm run`), so it may name
//! folders inside the project: `.venv/bin`, `node_modules/.bin`, `./bin`.
//! The agent writes there (the sandbox leaves the project writable, and the
//! temp folders), and the hooks run outside Claude Code's sandbox: a `git`
//! planted in such a folder would run with the hooks' rights at the next
//! `git status`. So an entry that is relative, inside the project, inside
//! the process's working folder or inside a temp folder is skipped; what is
//! left are the system's and the user's own folders. A program found
//! only in untrusted folders is not found: the spawn fails, naming it.

use std::path::{Path, PathBuf};

/// Folders every process may write in, the agent's sandbox included.
const SHARED_WRITABLE: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// `name` resolved through the trusted entries of `$PATH` (see the module
/// doc), given the project the hooks serve (if known).
pub fn program(name: &str, project: Option<&Path>) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    find(name, &path, &untrusted_roots(project))
        .unwrap_or_else(|| Path::new("/nonexistent-outside-the-project").join(name))
}

/// The folders no helper may come from: the project, the working folder,
/// the temp folders (each as given and resolved through symlinks).
fn untrusted_roots(project: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = SHARED_WRITABLE.iter().map(PathBuf::from).collect();
    roots.push(std::env::temp_dir());
    roots.extend(project.map(Path::to_path_buf));
    roots.extend(std::env::current_dir().ok());
    let resolved: Vec<PathBuf> = roots
        .iter()
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .collect();
    roots.extend(resolved);
    roots.retain(|root| root != Path::new("/"));
    roots
}

/// The first executable `name` in a trusted entry of `path`.
fn find(name: &str, path: &std::ffi::OsStr, untrusted: &[PathBuf]) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|entry| entry.is_absolute())
        .filter(|entry| {
            let resolved = std::fs::canonicalize(entry).unwrap_or_else(|_| entry.clone());
            !untrusted
                .iter()
                .any(|root| entry.starts_with(root) || resolved.starts_with(root))
        })
        .map(|entry| entry.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `git` planted in the project's `.venv/bin` at the front of PATH is
    /// passed over for the system's.
    #[test]
    fn skips_entries_inside_the_project_and_temp() {
        let project = std::env::temp_dir().join(format!("ralph-trusted-{}", std::process::id()));
        let venv = project.join(".venv/bin");
        std::fs::create_dir_all(&venv).unwrap();
        let planted = venv.join("git");
        std::fs::write(&planted, "#!/bin/sh\nexit 0\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([venv.clone(), PathBuf::from("/usr/bin")]).unwrap();
        let found = find("git", &path, &untrusted_roots(Some(&project)));
        assert_eq!(found, Some(PathBuf::from("/usr/bin/git")));
        // Relative entries are skipped too.
        let relative = std::env::join_paths([PathBuf::from(".venv/bin")]).unwrap();
        assert_eq!(
            find("git", &relative, &untrusted_roots(Some(&project))),
            None
        );
        let _ = std::fs::remove_dir_all(&project);
    }
}
