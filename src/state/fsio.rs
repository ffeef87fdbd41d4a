//! File IO with the path in every error, and the atomic write. Reads go
//! through [`crate::util::fsread`] like every read in the crate.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::util::fsread::{self, Links, limits};

/// Reads a state file. The outer result is a failure to read at all
/// (permissions, IO); the inner `Err` is the one-line reason the file is
/// corrupt (not a regular file, a link, too large, not UTF-8), which the
/// store answers by moving it aside.
pub fn read_state(path: &Path) -> anyhow::Result<Result<Option<String>, String>> {
    match fsread::read_text(path, limits::STATE, Links::Refuse) {
        Ok(text) => Ok(Ok(text)),
        Err(error) if error.is_bad_file() => Ok(Err(error.reason())),
        Err(error) => Err(error.into()),
    }
}

/// Refuses `path` when one of the directories between `root` and it is a
/// symlink that resolves outside `root`. The last component is not looked
/// at: the atomic rename replaces a link there instead of following it, and
/// appends and locks open it with `O_NOFOLLOW`.
pub fn check_confined(root: &Path, path: &Path) -> anyhow::Result<()> {
    let Ok(relative) = path.strip_prefix(root) else {
        bail!(
            "{} is outside the state root {}",
            path.display(),
            root.display()
        );
    };
    let real_root = canonical_prefix(root);
    let components: Vec<Component> = relative.components().collect();
    let mut current = root.to_path_buf();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        let Component::Normal(name) = component else {
            bail!(
                "{} is not a plain path under the state root",
                path.display()
            );
        };
        current.push(name);
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let real = current.canonicalize().unwrap_or_default();
                if !real.starts_with(&real_root) {
                    bail!(
                        "refusing to write {}: {} is a symlink out of the state root (to {})",
                        path.display(),
                        current.display(),
                        real.display()
                    );
                }
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => break,
            Err(error) => {
                return Err(error).with_context(|| format!("cannot inspect {}", current.display()));
            }
        }
    }
    Ok(())
}

/// `path` with symlinks resolved as far as it exists, the rest appended.
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Replaces `path` with `bytes` so that a crash at any point leaves either
/// the old file or the new one: write a temp file beside it (rename works
/// only within one filesystem), fsync it, rename it over, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_atomic_mode(path, bytes, 0o666)
}

/// [`write_atomic`] with the new file's mode (`0o600` for private files;
/// the umask applies).
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .context("state path has no parent directory")?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = temp_beside(path)?;
    let result = (|| {
        let mut file = create_temp(&temp, mode)?;
        file.write_all(bytes)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        file.sync_all()
            .with_context(|| format!("cannot sync {}", temp.display()))?;
        fs::rename(&temp, path)
            .with_context(|| format!("cannot rename {} to {}", temp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
        return result;
    }
    // The rename is durable only once the directory entry is; failing to sync
    // a directory (some filesystems refuse) still leaves a whole file.
    if let Ok(dir_handle) = File::open(dir) {
        let _ = dir_handle.sync_all();
    }
    Ok(())
}

/// A name for a temp file beside `target`, unique to this writer:
/// `.<name>.tmp-<pid>-<nanos>` (see [`temp_writer_pid`]).
pub fn temp_beside(target: &Path) -> anyhow::Result<PathBuf> {
    let dir = target.parent().context("a file to write has no folder")?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Ok(dir.join(format!(".{name}.tmp-{}-{nanos}", std::process::id())))
}

/// Creates `temp` for writing: a new file (never an existing one, never
/// through a link) with `mode`.
pub fn create_temp(temp: &Path, mode: u32) -> anyhow::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(temp)
        .with_context(|| format!("cannot create {}", temp.display()))
}

/// The pid of the writer that owns a temp file name made by [`write_atomic`]
/// (`.<name>.tmp-<pid>-<nanos>`), or `None` for any other name.
pub fn temp_writer_pid(file_name: &str) -> Option<u32> {
    if !file_name.starts_with('.') {
        return None;
    }
    let (_, suffix) = file_name.rsplit_once(".tmp-")?;
    let (pid, nanos) = suffix.split_once('-')?;
    nanos.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// What [`append_line`] did.
pub enum Appended {
    /// Written; the offset in the file where the line starts.
    Done(u64),
    /// The file is a symlink (never followed) or not a regular file:
    /// nothing was written; the reason is given.
    Refused(&'static str),
}

/// Appends `line` and a newline. Callers hold the file's lock.
pub fn append_line(path: &Path, line: &str) -> anyhow::Result<Appended> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Look before opening: opening a FIFO for writing without a reader
    // fails (or, blocking, waits), a directory cannot be opened for append.
    if let Ok(metadata) = fs::symlink_metadata(path) {
        let kind = metadata.file_type();
        if kind.is_symlink() {
            return Ok(Appended::Refused(
                "it is a symlink, and state files are never links",
            ));
        }
        if !kind.is_file() {
            return Ok(Appended::Refused("it is not a regular file"));
        }
    }
    let mut file = match OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Ok(Appended::Refused(
                "it is a symlink, and state files are never links",
            ));
        }
        Err(error) if matches!(error.raw_os_error(), Some(libc::EISDIR) | Some(libc::ENXIO)) => {
            return Ok(Appended::Refused("it is not a regular file"));
        }
        Err(error) => {
            return Err(error).with_context(|| format!("cannot open {}", path.display()));
        }
    };
    // A FIFO or device here is not ours to write into either.
    let is_file = file.metadata().is_ok_and(|m| m.is_file());
    if !is_file {
        return Ok(Appended::Refused("it is not a regular file"));
    }
    let mut record = String::with_capacity(line.len() + 1);
    record.push_str(line);
    record.push('\n');
    // One write call per record, so even an unlocked reader sees whole lines
    // except possibly the last.
    file.write_all(record.as_bytes())
        .with_context(|| format!("cannot append to {}", path.display()))?;
    // With O_APPEND the position after the write is the end of our record,
    // wherever other writers' records went.
    let end = file
        .stream_position()
        .with_context(|| format!("cannot tell the end of {}", path.display()))?;
    Ok(Appended::Done(end.saturating_sub(record.len() as u64)))
}
