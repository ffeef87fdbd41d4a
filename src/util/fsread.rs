//! The one way ralph-hooks reads a file it did not just create: state,
//! config, `.lsp.json`, orchestrator files, the edited file, the transcript.
//!
//! A path from a repository or from hook input can name anything: a FIFO
//! (`open` blocks forever), a symlink to `/dev/zero` (an endless read), a
//! directory, a 10 GiB log. So every read here
//! 1. opens non-blocking (a FIFO opens at once instead of waiting for a
//!    writer), close-on-exec, and — for state files — without following a
//!    final symlink;
//! 2. checks the type of the open descriptor with `fstat` (not the path,
//!    which could be swapped in between) and refuses anything that is not a
//!    regular file, with a one-line reason;
//! 3. reads through a size limit chosen for the file's purpose ([`limits`]).
//!
//! A missing file is `Ok(None)`. Everything else that stops a read is a
//! [`ReadError`] whose `Display` is one line naming the path; callers that
//! own the file (the state store) treat the refusals as corruption and move
//! the file aside, callers that do not (config, the edited file) say why and
//! carry on without it.
//!
//! ```no_run
//! use ralph_hooks::util::fsread::{self, Links, limits};
//! # fn f(path: &std::path::Path) -> Result<(), fsread::ReadError> {
//! if let Some(text) = fsread::read_text(path, limits::CONFIG, Links::Follow)? {
//!     println!("{text}");
//! }
//! # Ok(()) }
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Size limits by purpose. Past its limit a file is refused, never read
/// partly (a partial JSON document would only parse as corrupt anyway).
pub mod limits {
    /// Our own state files (`loop.json`, task files, …): a few KiB in life.
    pub const STATE: u64 = 4 * 1024 * 1024;
    /// `.claude/ralph-hooks.json`, `.lsp.json`, `settings.json`, `package.json`.
    pub const CONFIG: u64 = 4 * 1024 * 1024;
    /// Orchestrator contract files, templates, context files.
    pub const DOCUMENT: u64 = 16 * 1024 * 1024;
    /// A source file handed to a language server after an edit.
    pub const SOURCE: u64 = 16 * 1024 * 1024;
}

/// Whether a final symlink is followed. Directories above it always are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Config and source files: a repository may link them, and the target
    /// is type-checked like any file.
    Follow,
    /// State files: ralph-hooks never writes a link, so one is corruption.
    Refuse,
}

/// Why a file was not read. Each variant's `Display` is one line.
#[derive(Debug)]
pub enum ReadError {
    /// Not a regular file (`kind` is "a FIFO", "a directory", …).
    NotRegular { path: PathBuf, kind: &'static str },
    /// A symlink where [`Links::Refuse`] was asked for.
    Link { path: PathBuf },
    /// Larger than the limit for its purpose.
    TooLarge { path: PathBuf, limit: u64 },
    /// Not valid UTF-8 (only from [`read_text`]).
    NotUtf8 { path: PathBuf, valid_up_to: usize },
    /// Any other failure of open/fstat/read (permissions, IO errors).
    Io { path: PathBuf, error: io::Error },
}

impl ReadError {
    /// True when the file's content or type is wrong (as opposed to the
    /// system failing to read it): the state store moves such files aside.
    pub fn is_bad_file(&self) -> bool {
        !matches!(self, ReadError::Io { .. })
    }

    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotRegular { path, .. }
            | ReadError::Link { path }
            | ReadError::TooLarge { path, .. }
            | ReadError::NotUtf8 { path, .. }
            | ReadError::Io { path, .. } => path,
        }
    }

    /// The reason without the path, for messages that name the path already.
    pub fn reason(&self) -> String {
        match self {
            ReadError::NotRegular { kind, .. } => format!("it is {kind}, not a regular file"),
            ReadError::Link { .. } => "it is a symlink, and this file is never a link".into(),
            ReadError::TooLarge { limit, .. } => {
                format!("it is larger than {} KiB", limit / 1024)
            }
            ReadError::NotUtf8 { valid_up_to, .. } => {
                format!("it is not valid UTF-8 (first bad byte at offset {valid_up_to})")
            }
            ReadError::Io { error, .. } => error.to_string(),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read {}: {}",
            self.path().display(),
            self.reason().replace(['\n', '\r'], " ")
        )
    }
}

impl std::error::Error for ReadError {}

/// Opens `path` for reading if it is a regular file, with its length.
/// `Ok(None)` when it does not exist. For readers that seek (the transcript
/// tail); everyone else uses [`read_bytes`] or [`read_text`].
pub fn open_regular(path: &Path, links: Links) -> Result<Option<(File, u64)>, ReadError> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        // O_NOFOLLOW on a final symlink fails with ELOOP.
        Err(error) if links == Links::Refuse && error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::Link {
                path: path.to_path_buf(),
            });
        }
        // Some kinds fail in `open` itself, before the descriptor could be
        // checked: a Unix socket (ENXIO), a device without a driver (ENXIO,
        // ENODEV). Look at what is there, so they are refused as what they
        // are rather than passed off as an IO failure.
        Err(error) => {
            let seen = match links {
                Links::Follow => std::fs::metadata(path),
                Links::Refuse => std::fs::symlink_metadata(path),
            };
            // The sandbox's null device sits on a `nodev` mount: open(2)
            // fails (EACCES) before the check after it could see it.
            if links == Links::Follow && seen.as_ref().is_ok_and(is_null_device) {
                return Ok(None);
            }
            if let Ok(metadata) = seen
                && let Some(kind) = not_regular_kind(metadata.file_type())
            {
                return Err(ReadError::NotRegular {
                    path: path.to_path_buf(),
                    kind,
                });
            }
            return Err(ReadError::Io {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    let metadata = file.metadata().map_err(|error| ReadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    // Claude Code's sandbox masks a write-protected path that does not exist
    // (`.lsp.json`, `.claude/ralph-hooks.json`) with the null device: for a
    // config file that means "none", not a fault to warn about.
    if links == Links::Follow && is_null_device(&metadata) {
        return Ok(None);
    }
    if let Some(kind) = not_regular_kind(metadata.file_type()) {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok(Some((file, metadata.len())))
}

/// Whether `metadata` is the null device's (character device 1:3).
fn is_null_device(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    metadata.file_type().is_char_device()
        && libc::major(metadata.rdev()) == 1
        && libc::minor(metadata.rdev()) == 3
}

/// What a file that is not a regular file is, in words; `None` for a
/// regular file (and for a symlink, which is reported as a link).
pub fn not_regular_kind(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() || file_type.is_symlink() {
        None
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        Some("a special file")
    }
}

/// Reads a whole regular file of at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64, links: Links) -> Result<Option<Vec<u8>>, ReadError> {
    let Some((file, len)) = open_regular(path, links)? else {
        return Ok(None);
    };
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if len > limit {
        return Err(too_large());
    }
    // The length can change under us (a file being appended to): read one
    // byte past the limit so growth past it is still refused.
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| ReadError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// [`read_bytes`], then UTF-8: invalid UTF-8 is a [`ReadError::NotUtf8`].
pub fn read_text(path: &Path, limit: u64, links: Links) -> Result<Option<String>, ReadError> {
    let Some(bytes) = read_bytes(path, limit, links)? else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|error| ReadError::NotUtf8 {
            path: path.to_path_buf(),
            valid_up_to: error.utf8_error().valid_up_to(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-fsread-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn regular_missing_and_limits() {
        let dir = temp_dir("regular");
        let file = dir.join("a.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(
            read_text(&file, 10, Links::Refuse).unwrap().as_deref(),
            Some("{}")
        );
        assert!(
            read_text(&dir.join("missing"), 10, Links::Refuse)
                .unwrap()
                .is_none()
        );
        let error = read_bytes(&file, 1, Links::Follow).unwrap_err();
        assert!(matches!(error, ReadError::TooLarge { .. }), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn fifo_dev_zero_directory_and_links_are_refused_at_once() {
        let dir = temp_dir("special");
        let fifo = dir.join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let zero = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let link = dir.join("link");
        std::fs::write(dir.join("target"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("target"), &link).unwrap();

        let kind = |path: &Path, links| match read_bytes(path, 1 << 20, links) {
            Err(ReadError::NotRegular { kind, .. }) => kind.to_string(),
            Err(ReadError::Link { .. }) => "link".into(),
            other => format!("{other:?}"),
        };
        assert_eq!(kind(&fifo, Links::Follow), "a FIFO");
        // A socket fails in open(2) itself (ENXIO): still named as a socket.
        let socket = dir.join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(kind(&socket, Links::Follow), "a socket");
        assert_eq!(kind(&socket, Links::Refuse), "a socket");
        assert_eq!(kind(&zero, Links::Follow), "a character device");
        assert_eq!(kind(&zero, Links::Refuse), "link");
        assert_eq!(kind(&dir, Links::Follow), "a directory");
        assert_eq!(kind(&link, Links::Refuse), "link");
        assert_eq!(
            read_text(&link, 10, Links::Follow).unwrap().as_deref(),
            Some("x")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_null_device_reads_as_no_config_file() {
        // What Claude Code's sandbox mounts over a protected path that does
        // not exist: no file for a config reader, still refused for state.
        assert_eq!(
            read_text(Path::new("/dev/null"), 10, Links::Follow).unwrap(),
            None
        );
        assert!(matches!(
            read_text(Path::new("/dev/null"), 10, Links::Refuse),
            Err(ReadError::NotRegular { .. })
        ));
    }

    #[test]
    fn invalid_utf8_is_its_own_error() {
        let dir = temp_dir("utf8");
        let file = dir.join("bad");
        std::fs::write(&file, b"ok\xff").unwrap();
        let error = read_text(&file, 10, Links::Refuse).unwrap_err();
        assert!(
            matches!(error, ReadError::NotUtf8 { valid_up_to: 2, .. }),
            "{error}"
        );
        assert!(error.is_bad_file());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
