//! Advisory file locks with std's `File::lock`, the only place it is called.

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use anyhow::Context as _;

/// An exclusive lock on a sentinel file, released when dropped (closing the
/// file releases the lock, also when the process dies).
pub struct FileLock {
    _file: File,
}

impl FileLock {
    pub fn acquire(path: &Path) -> anyhow::Result<FileLock> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        match file.lock() {
            Ok(()) => {}
            // Filesystems without locks (some network mounts) must not stop
            // the hooks: say so and carry on unlocked, as cargo does.
            Err(error) if error.kind() == std::io::ErrorKind::Unsupported => {
                eprintln!(
                    "ralph-hooks: warning: locking unsupported for {}; continuing unlocked",
                    path.display()
                );
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
        Ok(FileLock { _file: file })
    }

    /// The lock if nobody holds it, else `None` at once (the daemon's
    /// "am I the only one" lock; a free lock also proves a daemon is gone).
    pub fn try_acquire(path: &Path) -> anyhow::Result<Option<FileLock>> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error))
                if error.kind() == std::io::ErrorKind::Unsupported =>
            {
                Ok(Some(FileLock { _file: file }))
            }
            Err(std::fs::TryLockError::Error(error)) => {
                Err(error).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }
}
