//! Hard links to protected files, undone before a command can use them.
//!
//! Why: a file's other name is the same file. In sandbox mode Claude Code
//! makes the protected *paths* read-only inside the sandbox, but a hard
//! link to `.claude/settings.local.json` made before the loop started (in
//! an attended session, or by the user's own dotfile tool) stays writable
//! under its other name, and one `{"disableAllHooks": true}` written there
//! silences every hook (sandbox attack S-1). No new link can be made from
//! inside the sandbox (a link across mounts fails with `EXDEV`), so giving
//! each protected file an inode of its own before every Bash command closes
//! the door; in plain mode it also closes a link a command made for a later
//! Write.
//!
//! A protected file with more than one name is replaced by a copy of
//! itself (same bytes, mode and, as root, owner) through an atomic rename:
//! the protected name gets a new inode, the other name keeps the old one,
//! and nothing written through it reaches the protected file again. Lock
//! files are left alone: a lock held on the old inode would no longer
//! exclude anyone on the new one.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Gives every file of `paths` that has more than one name a file of its
/// own. Returns one line per file it found linked, saying what it did.
pub fn separate(paths: &[PathBuf]) -> Vec<String> {
    let mut lines = Vec::new();
    for path in paths {
        let Ok(metadata) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if !metadata.is_file() || metadata.nlink() < 2 || is_lock(path) {
            continue;
        }
        let shown = crate::util::text::escape_controls(&path.to_string_lossy()).into_owned();
        lines.push(match own_copy(path, &metadata) {
            Ok(()) => format!(
                "{shown} had {} names (a hard link), through which a command could change it; \
                 it now has a file of its own (the other names keep the old one)",
                metadata.nlink()
            ),
            Err(error) => format!(
                "{shown} has {} names (a hard link), through which a command can change it, \
                 and could not be given a file of its own: {error}",
                metadata.nlink()
            ),
        });
    }
    lines
}

fn is_lock(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == ".locks")
        || path.extension().is_some_and(|ext| ext == "lock")
}

/// Copies `path` beside itself and renames the copy over it.
fn own_copy(path: &Path, metadata: &std::fs::Metadata) -> std::io::Result<()> {
    let bytes = std::fs::read(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp: PathBuf = dir.join(format!(".{name}.tmp-unlink-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        // As root the copy is root's until given back; as anyone else it
        // is already the owner's (only root can give a file away).
        if metadata.uid() != own_uid() || metadata.gid() != own_gid() {
            let _ = std::os::unix::fs::fchown(&file, Some(metadata.uid()), Some(metadata.gid()));
        }
        file.set_permissions(std::fs::Permissions::from_mode(metadata.mode() & 0o7777))?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn own_uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

fn own_gid() -> u32 {
    // SAFETY: getgid cannot fail and touches no memory.
    unsafe { libc::getgid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_file_gets_its_own_and_keeps_its_bytes_and_mode() {
        let dir = std::env::temp_dir().join(format!("links-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".locks")).unwrap();
        let protected = dir.join("settings.local.json");
        let other = dir.join("notes.txt");
        std::fs::write(&protected, "{\"a\": 1}\n").unwrap();
        std::fs::set_permissions(&protected, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::hard_link(&protected, &other).unwrap();
        let lock = dir.join(".locks/loop.json.lock");
        std::fs::write(&lock, "").unwrap();
        std::fs::hard_link(&lock, dir.join("lock-too")).unwrap();
        let alone = dir.join("alone.json");
        std::fs::write(&alone, "{}").unwrap();

        let lines = separate(&[protected.clone(), lock.clone(), alone.clone()]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("a file of its own"), "{lines:?}");
        std::fs::write(&other, "{\"disableAllHooks\": true}").unwrap();
        assert_eq!(std::fs::read_to_string(&protected).unwrap(), "{\"a\": 1}\n");
        let metadata = std::fs::metadata(&protected).unwrap();
        assert_eq!(metadata.mode() & 0o7777, 0o640);
        assert_eq!(metadata.nlink(), 1);
        assert_eq!(
            std::fs::metadata(&lock).unwrap().nlink(),
            2,
            "a lock is left"
        );
        assert!(
            separate(std::slice::from_ref(&protected)).is_empty(),
            "once is enough"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
