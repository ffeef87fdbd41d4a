//! Child processes we own: each in its own process group, killed with all its
//! children on every exit path, and always reaped.
//!
//! Check commands and language servers both spawn helpers of their own
//! (`cargo test` runs test binaries, tsserver runs node); killing only the
//! direct child would leave those running, so we kill the whole group.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use wait_timeout::ChildExt;

/// A child that is killed (with its process group) and reaped when dropped,
/// unless it already exited.
pub struct GroupChild {
    child: Child,
    reaped: bool,
}

impl GroupChild {
    /// Spawns `command` as the leader of a new process group.
    pub fn spawn(command: &mut Command) -> std::io::Result<GroupChild> {
        command.process_group(0);
        Ok(GroupChild {
            child: command.spawn()?,
            reaped: false,
        })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Waits up to `timeout`; `None` when it is still running.
    pub fn wait_timeout(&mut self, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
        let status = self.child.wait_timeout(timeout)?;
        if status.is_some() {
            self.reaped = true;
            // The leader is gone, but helpers it started may still hold the
            // group; they are ours too.
            kill_group(self.child.id());
        }
        Ok(status)
    }

    /// Kills the whole group and reaps the leader.
    pub fn kill(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        if !self.reaped {
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
        }
    }
}

/// Sends SIGKILL to every process in the group led by `pid`.
pub fn kill_group(pid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals a process group; it has
        // no memory-safety preconditions. The group id is our own child's pid.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Whether a process with this pid exists (signal 0 probes without sending).
pub fn is_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks for existence and permission.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
