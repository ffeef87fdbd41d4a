//! Where the daemon of one state root lives: its socket, its record and log
//! (through the state store), and its two locks.
//!
//! The socket sits under the state root, so each project (and each test)
//! has its own daemon. A Unix socket path holds at most 107 bytes; a longer
//! one goes to the runtime dir (`$XDG_RUNTIME_DIR/ralph-hooks`, else
//! `/tmp/ralph-hooks-<uid>`, mode 0700 and ours), named by a hash of the
//! state root.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::util::text::fnv1a;

/// The daemon's record (pid, build, socket, servers), relative to the state root.
pub const RECORD: &str = "daemon/daemon.json";
/// The servers this project used, for pre-start.
pub const RECENT: &str = "daemon/servers.json";
/// What the daemon did: starts, restarts, shutdowns, evictions.
pub const LOG: &str = "daemon/daemon.log";

/// The longest socket path we bind: `sun_path` is 108 bytes with the NUL,
/// and a little margin costs nothing.
const MAX_SOCKET_PATH: usize = 100;

#[derive(Debug, Clone)]
pub struct Paths {
    pub state_root: PathBuf,
    pub socket: PathBuf,
    /// Held by the running daemon for its whole life: free means no daemon.
    pub life_lock: PathBuf,
    /// Held by a hook while it starts a daemon, so racing hooks start one.
    pub start_lock: PathBuf,
}

impl Paths {
    pub fn new(state_root: &Path) -> Paths {
        let locks = state_root.join(".locks");
        Paths {
            state_root: state_root.to_path_buf(),
            socket: socket_path(state_root),
            life_lock: locks.join("daemon%life.lock"),
            start_lock: locks.join("daemon%start.lock"),
        }
    }

    /// Whether the socket lives outside the state root (its path was too long).
    pub fn socket_in_runtime_dir(&self) -> bool {
        !self.socket.starts_with(&self.state_root)
    }
}

fn socket_path(state_root: &Path) -> PathBuf {
    let preferred = state_root.join("daemon").join("daemon.sock");
    if preferred.as_os_str().as_bytes().len() <= MAX_SOCKET_PATH {
        return preferred;
    }
    let hash = fnv1a(state_root.as_os_str().as_bytes());
    runtime_dir().join(format!("{hash:016x}.sock"))
}

/// `$XDG_RUNTIME_DIR/ralph-hooks`, else `<tmp>/ralph-hooks-<uid>`.
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && dir.is_absolute()
        && dir.is_dir()
    {
        return dir.join("ralph-hooks");
    }
    // SAFETY: getuid(2) cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("ralph-hooks-{uid}"))
}

/// Creates the socket's directory. In the shared runtime dir it must be ours
/// and private: another user's directory could hold a socket that feeds us
/// made-up diagnostics.
pub fn prepare_socket_dir(paths: &Paths) -> anyhow::Result<()> {
    let Some(dir) = paths.socket.parent() else {
        bail!(
            "the socket path {} has no directory",
            paths.socket.display()
        );
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if paths.socket_in_runtime_dir() {
        crate::util::private_dir::check(dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_state_roots_keep_the_socket_inside() {
        let paths = Paths::new(Path::new("/p/.claude/orchestrator"));
        assert_eq!(
            paths.socket,
            Path::new("/p/.claude/orchestrator/daemon/daemon.sock")
        );
        assert!(!paths.socket_in_runtime_dir());
    }

    #[test]
    fn long_state_roots_move_the_socket_to_the_runtime_dir() {
        let long = format!("/{}/.claude/orchestrator", "x".repeat(120));
        let paths = Paths::new(Path::new(&long));
        assert!(paths.socket_in_runtime_dir());
        assert_eq!(paths.socket.parent(), Some(runtime_dir().as_path()));
        let again = Paths::new(Path::new(&long));
        assert_eq!(paths.socket, again.socket, "the name is stable");
        let other = Paths::new(Path::new(&format!("{long}2")));
        assert_ne!(paths.socket, other.socket);
    }
}
