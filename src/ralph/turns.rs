//! Which sessions have a turn open, and in which Claude Code process:
//! `turns.json` in the state root.
//!
//! Why: Claude Code 2.1.332 exports its messaging socket to the Bash tool
//! (`CLAUDE_CODE_MESSAGING_SOCKET`), and a line the agent's own command
//! writes there comes back as a queued prompt in the middle of the agent's
//! turn. Its UserPromptSubmit payload is the same as the user's: 2.1.332
//! sends no `source` to command hooks at all (the field is compiled out;
//! only in-process callbacks see who sent a prompt), the session id is the
//! session's, `prompt_id` is a fresh one, and the prompt's transcript row
//! is written after the hook. What tells them apart is when it comes: a
//! queued prompt arrives while the turn is still running in the same
//! process; the user's `claude -p "stop"` or `claude -p --continue
//! "stop"` is a new process, and a prompt typed interactively comes after
//! the turn ended.
//!
//! A turn opens at a UserPromptSubmit of the Claude Code process that runs
//! the hook (`CLAUDE_PID`, with its start time, so a reused pid is another
//! process). It closes when a Stop lets the session stop, when a Stop is
//! blocked for the time Claude Code overrides (its block cap: the turn
//! ends anyway), at a StopFailure (an API error ended it) and at a
//! SessionStart (a new process, or `/clear`). It is also over once the
//! process that opened it is gone: a `claude -p` killed mid-turn or ended
//! by the cap leaves a record whose process no longer runs, and the next
//! `claude -p --continue "stop"` is at a turn's start.
//!
//! What it cannot see: an interactive turn the user interrupted (Esc) ends
//! without any hook, so the prompt typed after it still counts as mid-turn;
//! the prompt hook then tells the user their stop was not taken and how to
//! stop the loop instead ([`crate::events::user_prompt_submit`]). A hook
//! not run by Claude Code (no `CLAUDE_PID`: a test, a hook binary fed by
//! hand) opens no turn, and is judged by the record of the one that is.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::hook::ctx::Ctx;
use crate::state::Versioned;

pub const TURNS_FILE: &str = "turns.json";

/// Sessions not heard from for this long are forgotten.
const FORGET_AFTER_DAYS: i64 = 7;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Turns {
    #[serde(default)]
    pub version: u64,
    /// Session id → its open turn.
    #[serde(default)]
    pub open: BTreeMap<String, Turn>,
}

/// One open turn: when it began and the Claude Code process running it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    pub since: DateTime<Utc>,
    pub pid: u32,
    /// The process's start time (`/proc/<pid>/stat`), where known.
    #[serde(default)]
    pub start_ticks: Option<u64>,
}

impl Versioned for Turns {
    const VERSION: u64 = 1;
}

/// The Claude Code process that runs this hook: `CLAUDE_PID`, when it is
/// an ancestor of this hook (a command of the agent's could set the
/// variable to anything), with its start time.
fn claude_process() -> Option<(u32, Option<u64>)> {
    let pid: u32 = std::env::var("CLAUDE_PID").ok()?.trim().parse().ok()?;
    if !is_ancestor(pid) {
        return None;
    }
    Some((pid, start_ticks(pid)))
}

#[cfg(target_os = "linux")]
fn is_ancestor(pid: u32) -> bool {
    let mut at = std::process::id();
    for _ in 0..64 {
        let Some(parent) = std::fs::read_to_string(format!("/proc/{at}/stat"))
            .ok()
            .and_then(|text| stat_field(&text, 1))
        else {
            return false;
        };
        if parent == u64::from(pid) {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        at = parent as u32;
    }
    false
}

#[cfg(not(target_os = "linux"))]
fn is_ancestor(pid: u32) -> bool {
    // No cheap way to walk the tree: our own parent (exec-form hooks) or
    // its parent (shell form) is as far as the standard library sees; take
    // the variable as it is.
    let _ = pid;
    true
}

/// A field of `/proc/<pid>/stat` counted after the command name (0 =
/// state, 1 = ppid, 19 = start time).
fn stat_field(text: &str, index: usize) -> Option<u64> {
    let close = text.rfind(')')?;
    text.get(close + 1..)?
        .split_whitespace()
        .nth(index)?
        .parse()
        .ok()
}

fn start_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_field(&text, 19)
}

/// Whether the process that opened `turn` still runs.
fn still_running(turn: &Turn) -> bool {
    #[cfg(target_os = "linux")]
    {
        match (turn.start_ticks, start_ticks(turn.pid)) {
            (Some(then), Some(now)) => then == now,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: signal 0 only asks whether the pid exists.
        unsafe { libc::kill(turn.pid as libc::pid_t, 0) == 0 }
    }
}

/// Notes that this session's turn goes on or starts; returns whether one
/// was open already (the prompt arrived mid-turn). Without a session id,
/// or in a project where ralph-hooks keeps no state yet (nothing to
/// supervise, and an ordinary prompt must not create the state root),
/// nothing is known: `false`. A hook not run by Claude Code opens nothing.
pub fn begin(ctx: &Ctx) -> anyhow::Result<bool> {
    let Some(session) = ctx.session_id.clone() else {
        return Ok(false);
    };
    if !ctx.store().root().is_dir() {
        return Ok(false);
    }
    let process = claude_process();
    let locked = ctx.store().lock(TURNS_FILE)?;
    let mut turns = locked.load_json::<Turns>()?.unwrap_or_default();
    if turns.open.get(&session).is_some_and(still_running) {
        return Ok(true);
    }
    let Some((pid, start_ticks)) = process else {
        return Ok(false);
    };
    // Another session's turn is open in this very process: one Claude Code
    // process runs one session at a time, so a prompt under another id is
    // a payload the agent's command made up (attack finding G1). It is
    // mid-turn, and opens nothing.
    if other_session_in(&turns, &session, pid, start_ticks) {
        return Ok(true);
    }
    let now = ctx.now();
    turns.open.retain(|_, turn| {
        now.signed_duration_since(turn.since) < chrono::Duration::days(FORGET_AFTER_DAYS)
    });
    turns.version = Turns::VERSION;
    turns.open.insert(
        session,
        Turn {
            since: now,
            pid,
            start_ticks,
        },
    );
    locked.save_json(&turns)?;
    Ok(false)
}

/// Whether a session other than `session` has a turn open in the Claude
/// Code process `pid` (the same process: same start time).
fn other_session_in(turns: &Turns, session: &str, pid: u32, start_ticks: Option<u64>) -> bool {
    turns.open.iter().any(|(other, turn)| {
        other != session
            && turn.pid == pid
            && (turn.start_ticks.is_none()
                || start_ticks.is_none()
                || turn.start_ticks == start_ticks)
            && still_running(turn)
    })
}

/// Whether this hook runs in a Claude Code process (a `CLAUDE_PID` that is
/// its ancestor).
pub fn run_by_claude() -> bool {
    claude_process().is_some()
}

/// Whether this hook's session id is not the session whose turn is open in
/// the Claude Code process that runs it: a made-up payload from the agent's
/// command (attack finding G7). It must not claim a loop. Read without the
/// lock; `false` when nothing is known.
pub fn foreign_session(ctx: &Ctx) -> bool {
    let (Some(session), Some((pid, start_ticks))) = (ctx.session_id.as_deref(), claude_process())
    else {
        return false;
    };
    let store = ctx.store();
    if !store.exists(TURNS_FILE) {
        return false;
    }
    let Ok(Some(turns)) = store.read_json::<Turns>(TURNS_FILE) else {
        return false;
    };
    !turns.open.get(session).is_some_and(still_running)
        && other_session_in(&turns, session, pid, start_ticks)
}

/// A new session starts in this Claude Code process (startup, `/clear`,
/// `/resume`): every turn the process had open is over, whichever session
/// it was, so the new session's prompts are not taken for another's.
pub fn end_process(ctx: &Ctx) -> anyhow::Result<()> {
    let Some((pid, _)) = claude_process() else {
        return Ok(());
    };
    let store = ctx.store();
    if !store.exists(TURNS_FILE) {
        return Ok(());
    }
    let locked = store.lock(TURNS_FILE)?;
    let Some(mut turns) = locked.load_json::<Turns>()? else {
        return Ok(());
    };
    let before = turns.open.len();
    turns.open.retain(|_, turn| turn.pid != pid);
    if turns.open.len() != before {
        locked.save_json(&turns)?;
    }
    Ok(())
}

/// The session's turn ended (a Stop let it end or was overridden, an API
/// error ended it, a new process started the session). Reads before
/// locking: nothing open, nothing written.
pub fn end(ctx: &Ctx) -> anyhow::Result<()> {
    let Some(session) = ctx.session_id.as_deref() else {
        return Ok(());
    };
    let store = ctx.store();
    if !store.exists(TURNS_FILE) {
        return Ok(());
    }
    let open = store
        .read_json::<Turns>(TURNS_FILE)?
        .is_some_and(|turns| turns.open.contains_key(session));
    if !open {
        return Ok(());
    }
    let locked = store.lock(TURNS_FILE)?;
    let Some(mut turns) = locked.load_json::<Turns>()? else {
        return Ok(());
    };
    if turns.open.remove(session).is_some() {
        locked.save_json(&turns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let line = "7 (a) b) c) S 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5555 0";
        assert_eq!(stat_field(line, 1), Some(3));
        assert_eq!(stat_field(line, 19), Some(5555));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_turn_of_a_process_that_is_gone_is_over() {
        let me = std::process::id();
        let mine = Turn {
            since: Utc::now(),
            pid: me,
            start_ticks: start_ticks(me),
        };
        assert!(still_running(&mine));
        let reused = Turn {
            start_ticks: mine.start_ticks.map(|t| t + 1),
            ..mine.clone()
        };
        assert!(!still_running(&reused));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Turn {
            since: Utc::now(),
            pid,
            start_ticks: Some(1),
        };
        assert!(!still_running(&gone));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn claude_pid_counts_only_when_it_runs_this_process() {
        assert!(is_ancestor(std::os::unix::process::parent_id()));
        assert!(!is_ancestor(u32::MAX - 7));
    }
}
