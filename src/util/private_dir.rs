//! Folders only this user may use, in places others can write to (`/tmp`):
//! made with mode 0700, and refused when what is there is a symlink, not a
//! folder, or another user's. A folder in a shared place that someone else
//! made could be read, filled or swapped by them.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context as _, bail};

/// Makes `dir` (its parent must exist) or checks the one there: ours, a
/// real folder, no access for anyone else (tightened to 0700 if looser).
pub fn ensure(dir: &Path) -> anyhow::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot create {}", dir.display()));
        }
    }
    check(dir)
}

/// Checks the folder at `dir` (tightened to 0700 if looser): ours, a real
/// folder, not a link (refused, never followed).
pub fn check(dir: &Path) -> anyhow::Result<()> {
    let metadata = std::fs::symlink_metadata(dir)
        .with_context(|| format!("cannot inspect {}", dir.display()))?;
    if metadata.file_type().is_symlink() {
        bail!(
            "{} is a symlink; refusing to use it (another user may have made it)",
            dir.display()
        );
    }
    if !metadata.is_dir() {
        bail!("{} is not a folder; refusing to use it", dir.display());
    }
    // SAFETY: getuid(2) cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    if metadata.uid() != uid {
        bail!(
            "{} belongs to another user (uid {}); refusing to use it",
            dir.display(),
            metadata.uid()
        );
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_private_and_links_or_files_refused() {
        let base = std::env::temp_dir().join(format!("ralph-private-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = base.join("mine");
        ensure(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        ensure(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(format!("{:#}", ensure(&link).unwrap_err()).contains("symlink"));
        let file = base.join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(format!("{:#}", ensure(&file).unwrap_err()).contains("not a folder"));
        std::fs::remove_dir_all(base).unwrap();
    }
}
