//! The all-or-nothing write of several files (rename, rewrite, fix): every
//! file is checked first (still what the preview was computed from, not in
//! the hook state), then each is replaced atomically; if any write fails,
//! the files already written get their old text back.
//!
//! Tests inject a failure with `RALPH_HOOKS_FAIL_WRITE=<file name>`: the
//! write of the file with that name fails as a full disk would. With
//! `RALPH_HOOKS_PAUSE_BEFORE_WRITE=<path>` the command says so on stderr and
//! waits (at most 30 s) for `<path>` to exist before its checks, so a test
//! can change a file behind its back.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::state::write_atomic;
use crate::util::fsread::{self, Links, limits};

/// The environment variable that makes one write fail, for tests.
pub const FAIL_WRITE_ENV: &str = "RALPH_HOOKS_FAIL_WRITE";
/// The environment variable that pauses before the checks, for tests.
pub const PAUSE_ENV: &str = "RALPH_HOOKS_PAUSE_BEFORE_WRITE";

/// One file's change: the text it had when the change was computed, and
/// the text it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: PathBuf,
    pub before: String,
    pub after: String,
}

/// Writes every change or none. `protected` is a directory nothing may be
/// written under (the hook state root). The error says what failed and
/// whether the rollback restored everything.
pub fn apply_all(changes: &[FileChange], protected: &Path) -> anyhow::Result<()> {
    let fail_on = std::env::var(FAIL_WRITE_ENV).ok();
    if let Some(go_on) = std::env::var_os(PAUSE_ENV) {
        eprintln!("ralph-hooks: pausing before writing ({PAUSE_ENV})");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !Path::new(&go_on).exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    apply_all_with(changes, protected, |path, bytes| {
        if let Some(name) = &fail_on
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == *name)
        {
            bail!(
                "cannot write {}: injected failure ({FAIL_WRITE_ENV})",
                path.display()
            );
        }
        write_keeping_mode(path, bytes)
    })
}

/// [`apply_all`] with the write itself given, so tests can fail any write.
pub fn apply_all_with(
    changes: &[FileChange],
    protected: &Path,
    mut write: impl FnMut(&Path, &[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let protected = fs::canonicalize(protected).unwrap_or_else(|_| protected.to_path_buf());
    for change in changes {
        let real = fs::canonicalize(&change.path)
            .with_context(|| format!("cannot find {}", change.path.display()))?;
        if real.starts_with(&protected) {
            bail!(
                "refusing to write {}: it is in the hook state ({})",
                change.path.display(),
                protected.display()
            );
        }
        let now = fsread::read_text(&change.path, limits::SOURCE, Links::Follow)?
            .with_context(|| format!("{} no longer exists", change.path.display()))?;
        if now != change.before {
            bail!(
                "{} changed since the preview was computed; nothing written",
                change.path.display()
            );
        }
    }
    let mut written: Vec<&FileChange> = Vec::new();
    for change in changes {
        if change.before == change.after {
            continue;
        }
        if let Err(error) = write(&change.path, change.after.as_bytes()) {
            let mut not_restored = Vec::new();
            for done in written.iter().rev() {
                if let Err(restore_error) = write_keeping_mode(&done.path, done.before.as_bytes()) {
                    not_restored.push(format!("{} ({restore_error:#})", done.path.display()));
                }
            }
            if not_restored.is_empty() {
                return Err(error.context(format!(
                    "nothing changed: {} file(s) already written were restored",
                    written.len()
                )));
            }
            return Err(error.context(format!(
                "the rollback failed for {}",
                not_restored.join(", ")
            )));
        }
        written.push(change);
    }
    Ok(())
}

/// An atomic replace that keeps the file's permission bits.
fn write_keeping_mode(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let permissions = fs::metadata(path).map(|m| m.permissions()).ok();
    write_atomic(path, bytes)?;
    if let Some(permissions) = permissions {
        fs::set_permissions(path, permissions)
            .with_context(|| format!("cannot set the permissions of {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-writer-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn change(dir: &Path, name: &str, before: &str, after: &str) -> FileChange {
        let path = dir.join(name);
        fs::write(&path, before).unwrap();
        FileChange {
            path,
            before: before.into(),
            after: after.into(),
        }
    }

    #[test]
    fn a_failed_write_restores_the_files_already_written() {
        let dir = temp_dir("rollback");
        let state = dir.join("state");
        let changes = vec![
            change(&dir, "a.ts", "a1", "a2"),
            change(&dir, "b.ts", "b1", "b2"),
            change(&dir, "c.ts", "c1", "c2"),
        ];
        let error = apply_all_with(&changes, &state, |path, bytes| {
            if path.ends_with("c.ts") {
                bail!("disk full");
            }
            fs::write(path, bytes)?;
            Ok(())
        })
        .unwrap_err();
        assert!(format!("{error:#}").contains("2 file(s) already written were restored"));
        for (name, text) in [("a.ts", "a1"), ("b.ts", "b1"), ("c.ts", "c1")] {
            assert_eq!(fs::read_to_string(dir.join(name)).unwrap(), text);
        }
        apply_all(&changes, &state).unwrap();
        assert_eq!(fs::read_to_string(dir.join("c.ts")).unwrap(), "c2");
    }

    #[test]
    fn a_file_changed_since_the_preview_or_in_the_state_is_not_written() {
        let dir = temp_dir("stale");
        let stale = change(&dir, "a.py", "old", "new");
        fs::write(&stale.path, "edited meanwhile").unwrap();
        let error = apply_all(std::slice::from_ref(&stale), &dir.join("state")).unwrap_err();
        assert!(error.to_string().contains("changed since the preview"));
        fs::create_dir(dir.join("state")).unwrap();
        let inside = change(&dir.join("state"), "loop.json", "{}", "{\"x\":1}");
        let error = apply_all(&[inside], &dir.join("state")).unwrap_err();
        assert!(error.to_string().contains("hook state"));
    }
}
