//! Advisory file locks with std's `File::lock`, the only place it is called.
//!
//! `flock` locks belong to an open file, not to a process: a thread that
//! opens and locks a file it already holds waits for itself forever (a
//! self-deadlock). So each thread keeps the list of
//! lock files it holds, and taking one twice is an error at once, never a
//! wait. Code that needs a lock it may already hold asks [`held_here`]
//! first and works under the held one (see `Store::move_aside`).
//!
//! Taking a lock never waits on anything but the lock, and not forever:
//! - the lock file is opened non-blocking and without following a link, so
//!   a FIFO there cannot hold the `open` until a reader comes;
//! - anything at the path that is not a regular file (a FIFO, a directory,
//!   a socket, a symlink) is moved aside as damaged state, under the lock
//!   of the folder that holds it, and a fresh lock file is made;
//! - a lock file (or its folder) whose mode keeps us from opening it for
//!   writing (`chmod 0444`, seen from an ordinary user: root ignores modes)
//!   gets its owner's read-write (folder: read-write-search) bits back when
//!   it is ours, and is otherwise moved aside like any damaged entry: we own
//!   the state root, and a lock nobody can open would fail every hook open
//!   and refuse the user's own `loop cancel`;
//! - a lock another process holds is waited for at most [`WAIT`]: holders
//!   keep one for a read-modify-write (milliseconds), so longer means a
//!   stuck or stopped process, and the caller gets an error naming the lock
//!   instead of hanging the user's session.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The longest a lock is waited for.
pub const WAIT: Duration = Duration::from_secs(10);

/// The longest pause between two tries while another process holds a lock.
const MAX_PAUSE: Duration = Duration::from_millis(10);

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
    /// What was at the lock path and moved aside before the lock was made.
    repaired: Option<String>,
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

/// Opens (creating) a lock file. A symlink, FIFO, directory, socket or
/// device at the path is moved aside first (see the module doc), so a lock
/// never blocks in `open`, never creates or truncates a file outside the
/// state root, and a damaged `.locks/` entry cannot switch the hooks off.
/// Also returns the warning when something was moved aside.
fn open_lock_file(path: &Path) -> anyhow::Result<(File, Option<String>)> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut repaired = None;
    let mut modes_repaired = false;
    // Twice is enough for anything but a process replacing the entry in a
    // loop, which gets an error.
    for _ in 0..3 {
        let opened = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path);
        let refused = match opened {
            Ok(file) => match file.metadata() {
                Ok(metadata) if metadata.is_file() => return Ok((file, repaired)),
                Ok(metadata) => crate::util::fsread::not_regular_kind(metadata.file_type())
                    .unwrap_or("not a regular file"),
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot inspect lock file {}", path.display()));
                }
            },
            // O_NOFOLLOW on a link, a directory, a socket or a FIFO without
            // a reader: what is there is not a lock file.
            Err(error) => match error.raw_os_error() {
                Some(libc::ELOOP) => "a symlink",
                Some(libc::EISDIR) => "a directory",
                Some(libc::ENXIO) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
                    match fs::symlink_metadata(path) {
                        Ok(metadata) => crate::util::fsread::not_regular_kind(metadata.file_type())
                            .unwrap_or("not a regular file"),
                        Err(_) => "not a regular file",
                    }
                }
                Some(libc::EACCES) | Some(libc::EPERM) if !modes_repaired => {
                    modes_repaired = true;
                    if let Some(message) = repair_modes(path) {
                        repaired = Some(message);
                    }
                    continue;
                }
                Some(libc::EACCES) | Some(libc::EPERM) => "a file we may not open for writing",
                _ => {
                    return Err(error)
                        .with_context(|| format!("cannot open lock file {}", path.display()));
                }
            },
        };
        if let Some(moved) = move_aside_under_folder_lock(path, refused)? {
            repaired = Some(moved);
        }
    }
    bail!(
        "cannot open lock file {}: something keeps putting a non-file there",
        path.display()
    )
}

/// Gives a lock file and its folder that are ours their owner's bits back
/// (file: read-write; folder: read-write-search), when a mode change took
/// them away; says what was repaired. What is not ours, or cannot be
/// changed, is left for the caller (a lock file is then moved aside).
fn repair_modes(path: &Path) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = unsafe { libc::geteuid() };
    let mut done = Vec::new();
    let mut repair = |target: &Path, wanted: u32| {
        let Ok(metadata) = fs::symlink_metadata(target) else {
            return;
        };
        let mode = metadata.mode() & 0o7777;
        if metadata.uid() != uid || metadata.file_type().is_symlink() || mode & wanted == wanted {
            return;
        }
        let fixed = mode | wanted;
        if fs::set_permissions(target, fs::Permissions::from_mode(fixed)).is_ok() {
            done.push(format!(
                "{} had mode {mode:04o}, set back to {fixed:04o}",
                target.display()
            ));
        }
    };
    if let Some(dir) = path.parent() {
        repair(dir, 0o700);
    }
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        repair(path, 0o600);
    }
    if done.is_empty() {
        return None;
    }
    let message = format!("lock {}: {}", path.display(), done.join("; "));
    eprintln!("ralph-hooks: warning: {message}");
    Some(message)
}

/// Moves what is at `path` aside (`<name>.corrupt-<UTC time>`) when it is
/// still not a regular file, under the lock of its folder: two processes
/// repairing the same path must not move aside the fresh lock file one of
/// them just made (and may hold).
fn move_aside_under_folder_lock(path: &Path, kind: &str) -> anyhow::Result<Option<String>> {
    let dir = path.parent().context("a lock file has no folder")?;
    let folder = File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    lock_within(&folder, dir, WAIT)?;
    let unopenable = || {
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(path)
            .is_err_and(|e| matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)))
    };
    let still_bad =
        fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file() || unopenable());
    if !still_bad {
        return Ok(None);
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = path.with_file_name(format!("{name}.corrupt-{stamp}"));
    fs::rename(path, &aside).with_context(|| {
        format!(
            "cannot move {} ({kind}, not a lock file) aside to {}",
            path.display(),
            aside.display()
        )
    })?;
    let message = format!(
        "lock file {} was {kind}, not a regular file; moved it to {} and made a new one",
        path.display(),
        aside.display()
    );
    eprintln!("ralph-hooks: warning: {message}");
    Ok(Some(message))
}

/// Takes `file`'s exclusive lock, waiting at most `wait` for another
/// process to let go of it.
fn lock_within(file: &File, path: &Path, wait: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                if Instant::now() >= deadline {
                    bail!(
                        "cannot lock {}: another process has held it for {} s (a stuck or stopped hook or command?); try again once it has finished",
                        path.display(),
                        wait.as_secs()
                    );
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            // Filesystems without locks (some network mounts) must not stop
            // the hooks: say so and carry on unlocked, as cargo does.
            Err(std::fs::TryLockError::Error(error))
                if error.kind() == std::io::ErrorKind::Unsupported =>
            {
                eprintln!(
                    "ralph-hooks: warning: locking unsupported for {}; continuing unlocked",
                    path.display()
                );
                return Ok(());
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(error).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
    }
}

impl FileLock {
    /// The lock, waiting at most [`WAIT`] for another process to release it.
    pub fn acquire(path: &Path) -> anyhow::Result<FileLock> {
        FileLock::acquire_within(path, WAIT)
    }

    pub fn acquire_within(path: &Path, wait: Duration) -> anyhow::Result<FileLock> {
        if held_here(path) {
            bail!(
                "internal error: {} is already locked by this thread; taking it again would wait forever",
                path.display()
            );
        }
        let (file, repaired) = open_lock_file(path)?;
        lock_within(&file, path, wait)?;
        Ok(FileLock::held(file, path, repaired))
    }

    fn held(file: File, path: &Path, repaired: Option<String>) -> FileLock {
        HELD.with(|held| held.borrow_mut().push(path.to_path_buf()));
        FileLock {
            _file: file,
            path: path.to_path_buf(),
            repaired,
        }
    }

    /// The warning when a damaged entry at the lock path was moved aside.
    pub fn repaired(&self) -> Option<&str> {
        self.repaired.as_deref()
    }

    /// The lock if nobody holds it, else `None` at once (the daemon's
    /// "am I the only one" lock; a free lock also proves a daemon is gone).
    pub fn try_acquire(path: &Path) -> anyhow::Result<Option<FileLock>> {
        if held_here(path) {
            return Ok(None);
        }
        let (file, repaired) = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock::held(file, path, repaired))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error))
                if error.kind() == std::io::ErrorKind::Unsupported =>
            {
                Ok(Some(FileLock::held(file, path, repaired)))
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

    fn mkfifo(path: &Path) {
        let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn anything_but_a_file_at_the_lock_path_is_moved_aside() {
        let dir = std::env::temp_dir().join(format!("ralph-lock-kinds-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let outside = dir.join("outside");
        fs::write(&outside, "keep").unwrap();
        type Maker<'a> = Box<dyn Fn(&Path) + 'a>;
        let makers: Vec<(&str, Maker)> = vec![
            ("a FIFO", Box::new(mkfifo)),
            (
                "a directory",
                Box::new(|p: &Path| fs::create_dir_all(p.join("x")).unwrap()),
            ),
            (
                "a socket",
                Box::new(|p: &Path| {
                    std::mem::forget(std::os::unix::net::UnixListener::bind(p).unwrap())
                }),
            ),
            (
                "a symlink",
                Box::new(|p: &Path| std::os::unix::fs::symlink(&outside, p).unwrap()),
            ),
        ];
        for (kind, make) in makers {
            let path = dir.join(format!("{}.lock", kind.replace(' ', "-")));
            make(&path);
            let started = Instant::now();
            let lock = FileLock::acquire(&path).unwrap();
            assert!(started.elapsed() < Duration::from_secs(2), "{kind}");
            assert!(
                lock.repaired().is_some_and(|m| m.contains(kind)),
                "{kind}: {:?}",
                lock.repaired()
            );
            assert!(fs::symlink_metadata(&path).unwrap().is_file(), "{kind}");
            drop(lock);
            let again = FileLock::acquire(&path).unwrap();
            assert!(again.repaired().is_none(), "{kind}: a good lock file stays");
        }
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_lock_held_elsewhere_is_waited_for_within_a_bound() {
        let path = std::env::temp_dir().join(format!("ralph-lock-bound-{}", std::process::id()));
        // Another open file description holds it, as another process would.
        let (other, _) = open_lock_file(&path).unwrap();
        other.lock().unwrap();
        let started = Instant::now();
        let error = FileLock::acquire_within(&path, Duration::from_millis(300))
            .err()
            .expect("a held lock is not taken");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            format!("{error:#}").contains("another process has held it"),
            "{error:#}"
        );
        drop(other);
        drop(FileLock::acquire_within(&path, Duration::from_millis(300)).unwrap());
        let _ = fs::remove_file(path);
    }
}
