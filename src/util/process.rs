//! Child processes we own: each in its own process group, killed with all its
//! children on every exit path, and always reaped.
//!
//! Check commands and language servers both spawn helpers of their own
//! (`cargo test` runs test binaries, tsserver runs node); killing only the
//! direct child would leave those running, so we kill the whole group.
//!
//! Dropping a [`GroupChild`] covers every normal exit path, but not a hook
//! that is killed itself: Claude Code's timeout sends SIGTERM, a user's
//! Ctrl-C SIGINT, a closed terminal SIGHUP. [`kill_children_on_signal`]
//! covers those: every live group is kept in a fixed table that a signal
//! handler can read (atomics only, no allocation, no lock), and the handler
//! kills each group and then lets the signal end the process as it would
//! have. SIGKILL cannot be caught, so children that must not outlive us
//! also get `PR_SET_PDEATHSIG` (see [`kill_children_on_signal`]).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use wait_timeout::ChildExt;

/// A child that is killed (with its process group) and reaped when dropped,
/// unless it already exited.
pub struct GroupChild {
    child: Child,
    reaped: bool,
}

impl GroupChild {
    /// Spawns `command` as the leader of a new process group, registered
    /// for the signal handler (see the module doc).
    pub fn spawn(command: &mut Command) -> std::io::Result<GroupChild> {
        command.process_group(0);
        // The child starts with no signal blocked: the spawn below holds
        // SIGTERM, SIGINT and SIGHUP back for an instant, and a mask is
        // kept across exec (re-attack RE-17: every server the daemon
        // started, and its children, could not be stopped with `kill`).
        // SAFETY: sigemptyset(3) on a local set and sigprocmask(2), both
        // async-signal-safe, between fork and exec.
        unsafe {
            command.pre_exec(|| {
                let mut empty: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut empty);
                libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
                Ok(())
            });
        }
        if TIE_CHILDREN.load(Ordering::Relaxed) {
            // SAFETY: getpid(2) before the fork; in the child, between fork
            // and exec, only prctl(2), getppid(2) and _exit(2), which are
            // async-signal-safe and touch no memory of the parent.
            let parent = unsafe { libc::getpid() };
            unsafe {
                command.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                    // The parent may have died before prctl took effect.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        // A signal between spawn and registration would miss this child:
        // hold the three signals back for that instant.
        let blocked = SignalsBlocked::new();
        let child = command.spawn()?;
        register(child.id());
        drop(blocked);
        Ok(GroupChild {
            child,
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
            unregister(self.child.id());
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
        unregister(self.child.id());
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
        }
    }
}

/// The `ralph-hooks` CLI: `$RALPH_HOOKS_CLI`, else next to this
/// executable (where `cargo install` and a build directory put it), else on
/// PATH. Hooks start it in the background for work they must not wait for.
pub fn cli_binary() -> Option<std::path::PathBuf> {
    if let Some(path) = std::env::var_os("RALPH_HOOKS_CLI").filter(|p| !p.is_empty()) {
        return Some(std::path::PathBuf::from(path));
    }
    if let Ok(current) = std::env::current_exe()
        && let Some(dir) = current.parent()
    {
        let sibling = dir.join("ralph-hooks");
        if sibling.is_file() {
            return Some(sibling);
        }
    }
    which::which("ralph-hooks").ok()
}

/// Starts `command` detached: its own session (out of the hook's process
/// group, which Claude Code may kill, and away from any terminal), stdio on
/// `/dev/null`, never waited for. Returns its pid.
pub fn spawn_detached(command: &mut Command) -> std::io::Result<u32> {
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    Ok(command.spawn()?.id())
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

/// Live process groups, for the signal handler. Zero is a free slot. More
/// groups than slots is not expected (a hook runs one check or a few
/// servers); one that finds no slot is still killed on every normal path.
const SLOTS: usize = 64;
static GROUPS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];
/// Whether children get `PR_SET_PDEATHSIG`.
static TIE_CHILDREN: AtomicBool = AtomicBool::new(false);
const FATAL_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

fn register(pid: u32) {
    let Ok(pid) = i32::try_from(pid) else {
        return;
    };
    for slot in &GROUPS {
        if slot
            .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

fn unregister(pid: u32) {
    let Ok(pid) = i32::try_from(pid) else {
        return;
    };
    for slot in &GROUPS {
        let _ = slot.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// For a hook whose output nobody reads and whose whole job is a short
/// state write (StopFailure: `claude -p` exits right after a failed turn
/// and ends the hooks still running): SIGTERM, SIGINT and SIGHUP no longer
/// end this process, so the write is never cut in half. Its work is bounded
/// (a lock is waited for at most 10 s); children it starts are detached.
pub fn finish_despite_termination() {
    for signal in FATAL_SIGNALS {
        // SAFETY: signal(2) with SIG_IGN, no handler runs.
        unsafe {
            libc::signal(signal, libc::SIG_IGN);
        }
    }
}

/// Makes SIGTERM, SIGINT and SIGHUP kill every process group we started
/// before they end this process (with the signal's usual status). Call it
/// first thing in a binary that starts children; a signal its caller set
/// to be ignored (`nohup`) stays ignored.
///
/// With `tie_children`, each child also gets `PR_SET_PDEATHSIG` (SIGKILL),
/// so it dies with us even when we are SIGKILLed. That signal follows the
/// thread that spawned the child, so only short-lived processes that spawn
/// from their main thread (the hooks) ask for it, never the daemon.
pub fn kill_children_on_signal(tie_children: bool) {
    TIE_CHILDREN.store(tie_children, Ordering::Relaxed);
    for signal in FATAL_SIGNALS {
        // SAFETY: sigaction(2) with a zeroed, then filled, struct; the
        // handler only calls async-signal-safe functions.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(signal: libc::c_int) {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 1 {
            // SAFETY: kill(2) is async-signal-safe.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
    // SAFETY: signal(2) and raise(3) are async-signal-safe. The raised
    // signal is blocked while this handler runs and is delivered, with the
    // default action (terminate), as soon as it returns.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Kills every live process group we started (what the signal handler
/// does), for a thread that handles the fatal signals itself.
pub fn kill_all_groups() {
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 1 {
            // SAFETY: kill(2) with a negative pid signals a process group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// Blocks SIGTERM, SIGINT and SIGHUP in this thread (and the threads it
/// starts later; children get an empty mask from `Command`) and hands
/// each one, when it comes, to `on_signal` on a thread of its own, which
/// must end the process. For a command that has something to undo before
/// it dies (verify's temporary worktree); the signals' handler is not the
/// place for that (it may only call async-signal-safe functions).
pub fn handle_fatal_signals(on_signal: fn(libc::c_int)) {
    // SAFETY: sigset operations on a local, initialised set; the mask is
    // this thread's.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in FATAL_SIGNALS {
            let mut old: libc::sigaction = std::mem::zeroed();
            // A signal our caller set to be ignored (`nohup`) stays so.
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_IGN
            {
                libc::sigaddset(&mut set, signal);
            }
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            loop {
                let mut signal: libc::c_int = 0;
                // SAFETY: sigwait(3) on the set blocked above.
                if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
                    on_signal(signal);
                }
            }
        });
    if spawned.is_err() {
        // No thread: the handler installed at start-up takes them again.
        // SAFETY: unblocks the same set on this thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// Blocks the fatal signals on this thread until dropped.
struct SignalsBlocked {
    old: libc::sigset_t,
}

impl SignalsBlocked {
    fn new() -> SignalsBlocked {
        // SAFETY: sigset operations on local, initialised sets.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in FATAL_SIGNALS {
                libc::sigaddset(&mut set, signal);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            SignalsBlocked { old }
        }
    }
}

impl Drop for SignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}
