//! Advisory file locks with std's `File::lock`, the only place it is called.
//!
//! `flock` locks belong to an open file, not to a process: a thread that
//! opens and locks a file it already holds waits for itself forever (a
//! self-deadlock). So each thread keeps the list of
//! lock files it holds, and taking one twice is an error at once, never a
//! wait. Code that needs a lock it may already hold asks [`held_here`]
//! first and works under the held one (see `Store::move_aside`).

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

thread_local! {
    /// Lock files this thread holds. Other threads wait for them as usual.
    static HELD: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread holds the lock on `path`.
pub fn held_here(path: &Path) -> bool {
    HELD.with(|held| held.borrow().iter().any(|p| p == path))
}

/// An exclusive lock on a sentinel file, released when dropped (closing the
/// file releases the lock, also when the process dies).
pub struct FileLock {
    _file: File,
    path: PathBuf,
}

impl Drop for FileLock {
    fn drop(&mut self) {
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(index) = held.iter().position(|p| *p == self.path) {
                held.swap_remove(index);
            }
        });
    }
}

/// Opens (creating) a lock file; a symlink there is refused, so a lock
/// never creates or truncates a file outside the state root.
fn open_lock_file(path: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("cannot open lock file {}", path.display()))
}

impl FileLock {
    pub fn acquire(path: &Path) -> anyhow::Result<FileLock> {
        if held_here(path) {
            bail!(
                "internal error: {} is already locked by this thread; taking it again would wait forever",
                path.display()
            );
        }
        let file = open_lock_file(path)?;
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
        Ok(FileLock::held(file, path))
    }

    fn held(file: File, path: &Path) -> FileLock {
        HELD.with(|held| held.borrow_mut().push(path.to_path_buf()));
        FileLock {
            _file: file,
            path: path.to_path_buf(),
        }
    }

    /// The lock if nobody holds it, else `None` at once (the daemon's
    /// "am I the only one" lock; a free lock also proves a daemon is gone).
    pub fn try_acquire(path: &Path) -> anyhow::Result<Option<FileLock>> {
        if held_here(path) {
            return Ok(None);
        }
        let file = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock::held(file, path))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error))
                if error.kind() == std::io::ErrorKind::Unsupported =>
            {
                Ok(Some(FileLock::held(file, path)))
            }
            Err(std::fs::TryLockError::Error(error)) => {
                Err(error).with_context(|| format!("cannot lock {}", path.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taking_a_held_lock_again_fails_at_once() {
        let path = std::env::temp_dir().join(format!("ralph-lock-twice-{}", std::process::id()));
        let first = FileLock::acquire(&path).unwrap();
        assert!(held_here(&path));
        let error = FileLock::acquire(&path)
            .err()
            .expect("second take must fail");
        assert!(format!("{error:#}").contains("already locked"), "{error:#}");
        drop(first);
        assert!(!held_here(&path));
        drop(FileLock::acquire(&path).unwrap());
        let _ = fs::remove_file(path);
    }
}
