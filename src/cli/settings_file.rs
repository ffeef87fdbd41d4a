//! Replacing a user's settings file without changing what kind of file it
//! is: a symlinked `.claude/settings.json` (shared from a dotfiles folder)
//! stays a link and its target gets the new text; the file keeps its mode
//! (a private `0600` file stays private) and, where we may, its owner. The
//! write itself is atomic as everywhere else: a temp file beside the real
//! file, renamed over it.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::state::{create_temp, temp_beside};

/// The file `path` stands for: itself, or where its symlinks lead.
fn real_file(path: &Path) -> anyhow::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => fs::canonicalize(path)
            .with_context(|| format!("{} is a symlink to a missing file", path.display())),
        _ => Ok(path.to_path_buf()),
    }
}

/// Writes `bytes` as the new content of `path` (see the module doc).
pub fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let target = real_file(path)?;
    let Ok(old) = fs::metadata(&target) else {
        return crate::state::write_atomic(&target, bytes);
    };
    let temp = temp_beside(&target)?;
    let result = (|| {
        let mut file = create_temp(&temp, 0o600)?;
        // Not through the umask: the old file's bits exactly.
        file.set_permissions(fs::Permissions::from_mode(old.mode() & 0o7777))
            .with_context(|| format!("cannot set the mode of {}", temp.display()))?;
        // Only root may give a file away; anyone else keeps their own.
        let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
        file.write_all(bytes)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot sync {}", temp.display()))?;
        fs::rename(&temp, &target).with_context(|| format!("cannot replace {}", target.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
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
    fn a_link_stays_a_link_and_the_mode_stays() {
        let dir = Scratch::new("settings-file");
        let shared = dir.path().join("shared.json");
        fs::write(&shared, "{}").unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink("shared.json", &link).unwrap();
        write(&link, b"{\"a\": 1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&shared).unwrap(), "{\"a\": 1}");
        assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o7777, 0o640);
        let new = dir.path().join("new.json");
        write(&new, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&new).unwrap(), "{}");
    }
}
