//! The guard's watcher: while a process that a Bash call left running is
//! alive, what it writes into the protected files is put back at once,
//! not at the next hook.
//!
//! Why: Claude Code re-reads its settings about a second after a write. A
//! process the agent left behind (`setsid -f sh -c 'sleep 2; …'`) that
//! writes `{"disableAllHooks": true}` after its call's check switched the
//! hooks off before any hook ran again, and with them the check between
//! hooks that would have put it back (attack finding A35-5). The watcher
//! is `ralph-hooks guard-watch`, started detached by the check after a
//! call that left processes behind ([`ensure`]). It waits on the folders of
//! the protected files (inotify on Linux, through `notify`) and, at each
//! change, runs the same comparison the next hook would
//! ([`super::pending::put_back_now`]), also while a Bash call is open. What
//! it put back is told at the next hook, with the late writes it finds
//! ([`super::pending::tell_at_next_hook`]).
//!
//! One watcher per watch folder (`watcher.lock`); it ends when no process
//! noted as left behind is alive (a fresh process one of them handed its
//! work to counts: [`super::background::adopt_handoffs`]), when the
//! Claude Code process whose hook started it is gone (the session is
//! over; what the user does from a terminal then stands), or when the
//! watch folder is gone (the work is no longer unattended).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::hook::ctx::Ctx;
use crate::state::FileLock;
use crate::state::journal;

/// Held by the running watcher for its life.
const LOCK: &str = "watcher.lock";
/// The harness process the watcher lives no longer than (`pid:start`).
const WHILE_ENV: &str = "RALPH_HOOKS_WATCH_WHILE";
/// How often the watcher looks whether a noted process is still alive.
const TICK: Duration = Duration::from_millis(500);
/// How often it compares the files when inotify is not to be had: well
/// within the second Claude Code waits before it reads its settings.
const POLL_TICK: Duration = Duration::from_millis(200);

/// Starts the watcher when none runs for this watch folder. Called by the
/// check after a call that left processes running; a failure to start it
/// is said on stderr (the check between hooks still runs at the next hook).
pub fn ensure(ctx: &Ctx, watch: &Path) {
    match FileLock::try_acquire(&watch.join(LOCK)) {
        Ok(Some(lock)) => drop(lock),
        // One runs (or the lock cannot be taken: nothing better to do).
        Ok(None) | Err(_) => return,
    }
    // Only the CLI beside this binary: one found on PATH could be a file
    // the agent planted in the project.
    let Some(exe) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("ralph-hooks")))
        .filter(|exe| exe.is_file())
    else {
        ctx.debug(format_args!(
            "no ralph-hooks binary beside this one: no watcher for late writes"
        ));
        return;
    };
    let mut command = Command::new(&exe);
    command
        .arg("--project")
        .arg(&ctx.project_root)
        .arg("guard-watch")
        .env("RALPH_HOOKS_STATE_DIR", &ctx.state_root)
        .current_dir(&ctx.project_root);
    // It ends with the session: once Claude Code (or the harness) is gone,
    // what the user does from a terminal stands (guard attack W-8).
    if let crate::ralph::turns::Caller::Claude { pid, start_ticks } =
        crate::ralph::turns::shape(ctx)
    {
        command.env(
            WHILE_ENV,
            format!(
                "{pid}:{}",
                start_ticks.map_or(String::new(), |t| t.to_string())
            ),
        );
    }
    if let Err(error) = crate::util::process::spawn_detached(&mut command) {
        eprintln!(
            "ralph-hooks guard: cannot start the watcher for late writes ({}): {error}",
            exe.display()
        );
    }
}

/// The watcher's life (`ralph-hooks guard-watch`); returns when it ends.
pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let Some(watch) = journal::watch_dir(&ctx.state_root) else {
        return Ok(());
    };
    let Some(_lock) = FileLock::try_acquire(&watch.join(LOCK))? else {
        return Ok(());
    };
    let (sender, changes) = std::sync::mpsc::channel::<()>();
    // Without inotify (the user's limit of instances reached: Claude Code
    // and its language servers hold many) the files are looked at every
    // short tick instead.
    let Ok(mut watcher) =
        notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if event.is_ok_and(|event| !event.kind.is_access()) {
                let _ = sender.send(());
            }
        })
    else {
        return poll(ctx, &watch);
    };
    let mut watched: Vec<PathBuf> = Vec::new();
    watch_folders(ctx, &mut watcher, &mut watched);
    if watched.is_empty() {
        return poll(ctx, &watch);
    }
    // Whatever landed between the call's check and now.
    put_back(ctx, &watch);
    loop {
        match changes.recv_timeout(TICK) {
            Ok(()) => {
                while changes.try_recv().is_ok() {}
                put_back(ctx, &watch);
                // A folder made since (`.claude/` itself) is watched too.
                watch_folders(ctx, &mut watcher, &mut watched);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return poll(ctx, &watch),
        }
        if !watch.is_dir() || !session_alive() {
            break;
        }
        if !any_alive(&watch) && !last_look(ctx, &watch) {
            break;
        }
    }
    Ok(())
}

/// The watcher without inotify: the same comparison every [`POLL_TICK`].
fn poll(ctx: &Ctx, watch: &Path) -> anyhow::Result<()> {
    loop {
        put_back(ctx, watch);
        std::thread::sleep(POLL_TICK);
        if !watch.is_dir() || !session_alive() {
            return Ok(());
        }
        if !any_alive(watch) && !last_look(ctx, watch) {
            return Ok(());
        }
    }
}

/// Watches the folder of each protected file, or the nearest one above it
/// that exists; `watched` keeps those already watched.
fn watch_folders(ctx: &Ctx, watcher: &mut impl notify::Watcher, watched: &mut Vec<PathBuf>) {
    for path in super::protected_paths(ctx) {
        let Some(folder) = path.ancestors().skip(1).find(|dir| dir.is_dir()) else {
            continue;
        };
        if watched.iter().any(|seen| seen == folder) {
            continue;
        }
        if watcher
            .watch(folder, notify::RecursiveMode::NonRecursive)
            .is_ok()
        {
            watched.push(folder.to_path_buf());
        }
    }
}

/// No noted process is alive: what the last of them wrote just before it
/// ended may have landed after the previous look began (the file created
/// at that look, filled after it, the process gone before the next event
/// was read), so one more look, then the ended ones are forgotten.
/// Returns whether one is alive after all (a fresh heir adopted).
fn last_look(ctx: &Ctx, watch: &Path) -> bool {
    put_back(ctx, watch);
    match FileLock::acquire(&watch.join("lock")) {
        Ok(_lock) => super::background::settle(watch),
        Err(_) => false,
    }
}

fn put_back(ctx: &Ctx, watch: &Path) {
    let Some(outcome) = super::pending::put_back_now(ctx) else {
        return;
    };
    if !outcome.late.is_empty() {
        super::pending::tell_at_next_hook(watch, outcome.late);
    }
}

/// Whether the Claude Code (or harness) process whose hook started the
/// watcher still runs; `true` when none was named.
fn session_alive() -> bool {
    let Some(named) = std::env::var(WHILE_ENV).ok() else {
        return true;
    };
    let mut parts = named.split(':');
    let Some(pid) = parts.next().and_then(|p| p.parse::<u32>().ok()) else {
        return true;
    };
    let ticks = parts.next().and_then(|t| t.parse::<u64>().ok());
    crate::ralph::turns::alive(pid, ticks)
}

/// Whether a process noted as left behind by a call is still alive; a
/// fresh process one of them handed its work to is noted now.
fn any_alive(watch: &Path) -> bool {
    match FileLock::acquire(&watch.join("lock")) {
        Ok(_lock) => super::background::adopt_handoffs(watch),
        Err(_) => super::background::read(watch)
            .procs
            .iter()
            .any(super::background::alive),
    }
}
