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
//! Only a hook Claude Code runs itself may end a turn ([`caller`]): the
//! hook binaries are on the agent's PATH, so a Bash command can feed one a
//! made-up Stop, SessionStart or interrupted PostToolUseFailure, and a turn
//! closed by it would make the "stop" the same command queues next count as
//! the user's (attack finding G2). Claude Code starts a hook as its direct
//! child, through `sh -c '<the registered command>'` or (exec form)
//! directly; a hook that a Bash call runs has the call's shell (and
//! whatever the command started) between it and Claude Code. A hook that
//! a command starts by replacing the call's own shell (`exec sh -c '…'`)
//! has the same shape as Claude Code's; it is told apart by the call still
//! running around it (`call_running_around` below):
//! Claude Code runs no Stop, SessionStart or prompt hook during a tool call.
//!
//! The other harnesses (Codex, Gemini, Cursor, Copilot CLI) name no
//! process of their own. There the process that starts the session's
//! first prompt hook is taken for the harness's when it runs under the
//! harness's name ([`harness_runner`]), and the turn is recorded with it:
//! from then on their hooks are told from a command's the same way.
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
    let pid = claude_pid()?;
    if !is_ancestor(pid) {
        return None;
    }
    Some((pid, start_ticks(pid)))
}

fn claude_pid() -> Option<u32> {
    std::env::var("CLAUDE_PID").ok()?.trim().parse().ok()
}

/// Who started this hook, as far as its process tree shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// Claude Code itself: the Claude Code process is the hook's parent, or
    /// the parent of the `sh -c` that runs only this hook.
    Claude { pid: u32, start_ticks: Option<u64> },
    /// A Claude Code process is an ancestor, with something else in
    /// between: a command of the agent's (a Bash call) feeds this hook.
    AgentCommand,
    /// No Claude Code process above it: a test, a hook run by hand.
    Outside,
}

/// Who started this hook. The Claude Code processes looked for are
/// `CLAUDE_PID` and those with a turn open in `turns.json`: a command that
/// unsets or changes the variable still has its Claude Code process above
/// it. Costs a few reads of `/proc` (and of `turns.json` when the
/// variable names no ancestor); call it only where the answer matters.
pub fn caller(ctx: &Ctx) -> Caller {
    caller_of(ctx, None)
}

/// [`caller`] for a hook about the tool call `own_call` (a
/// PostToolUseFailure): that call's own open snapshot does not count as a
/// call running around it.
pub fn caller_of(ctx: &Ctx, own_call: Option<&str>) -> Caller {
    let (chain, found) = shape_of(ctx);
    let Caller::Claude { pid, start_ticks } = found else {
        return found;
    };
    // Where Claude Code puts its own hooks — unless a Bash call of that
    // process is still running and began before the process below Claude
    // Code on this side was started: then the call's shell was replaced by
    // the hook (`exec`).
    let top = chain
        .iter()
        .position(|&p| p == pid)
        .and_then(|at| at.checked_sub(1))
        .map(|at| chain[at]);
    let forked = top.and_then(start_ticks_of);
    if call_running_around(ctx, (pid, start_ticks), forked, own_call) {
        return Caller::AgentCommand;
    }
    found
}

/// Under a harness other than Claude Code, the process that started this
/// hook, when it runs under one of the harness's own names: the parent, or
/// the parent of a shell that runs only this hook (Codex, Gemini and
/// Copilot CLI start their hooks as direct children). A hook that the
/// agent's command feeds has that command's shell there instead, which is
/// not taken; neither is a test's runner.
fn harness_runner(ctx: &Ctx) -> Option<(u32, Option<u64>)> {
    if ctx.harness_process_names.is_empty() {
        return None;
    }
    let chain = ancestors();
    let at = match chain.get(1) {
        Some(&pid) if runs_only_this_hook(pid) => 2,
        _ => 1,
    };
    let pid = *chain.get(at)?;
    (pid > 1 && runs_as(pid, ctx.harness_process_names)).then(|| (pid, start_ticks(pid)))
}

/// Whether process `pid` runs under one of `names`: its `comm`, or the
/// file name of one of its first three arguments (`node [flags] <script>`).
fn runs_as(pid: u32, names: &[&str]) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut candidates = vec![comm.trim().to_string()];
    candidates.extend(args.split(|&b| b == 0).take(3).map(|arg| {
        String::from_utf8_lossy(arg)
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string()
    }));
    named_as(&candidates, names)
}

fn named_as(candidates: &[String], names: &[&str]) -> bool {
    candidates.iter().any(|candidate| {
        let candidate = candidate.to_ascii_lowercase();
        names
            .iter()
            .any(|name| !name.is_empty() && candidate.starts_with(&name.to_ascii_lowercase()))
    })
}

fn start_ticks_of(pid: u32) -> Option<u64> {
    start_ticks(pid)
}

/// Who started this hook by the shape of its process tree alone (see
/// [`caller`]).
pub fn shape(ctx: &Ctx) -> Caller {
    shape_of(ctx).1
}

fn shape_of(ctx: &Ctx) -> (Vec<u32>, Caller) {
    let mut known: Vec<u32> = claude_pid().into_iter().collect();
    let chain = ancestors();
    if !chain.iter().any(|pid| known.contains(pid)) {
        let store = ctx.store();
        if store.exists(TURNS_FILE)
            && let Ok(Some(turns)) = store.read_json::<Turns>(TURNS_FILE)
        {
            known.extend(
                turns
                    .open
                    .values()
                    .filter(|turn| still_running(turn))
                    .map(|turn| turn.pid),
            );
        }
    }
    let found = classify(&chain, &known, &|pid| runs_only_this_hook(pid));
    (chain, found)
}

/// `chain`: this process first, then its ancestors. The nearest known
/// Claude Code process decides: right above the hook, or above a shell
/// that runs nothing but this hook, it is Claude Code's own hook.
fn classify(chain: &[u32], known: &[u32], hook_shell: &dyn Fn(u32) -> bool) -> Caller {
    let Some(at) = chain.iter().position(|pid| known.contains(pid)) else {
        return Caller::Outside;
    };
    let pid = chain[at];
    let own = match at {
        0 => false,
        1 => true,
        2 => hook_shell(chain[1]),
        _ => false,
    };
    if own {
        Caller::Claude {
            pid,
            start_ticks: start_ticks(pid),
        }
    } else {
        Caller::AgentCommand
    }
}

/// This process and its ancestors, nearest first (up to 64).
fn ancestors() -> Vec<u32> {
    let mut chain = vec![std::process::id()];
    #[cfg(target_os = "linux")]
    {
        let mut at = std::process::id();
        for _ in 0..64 {
            let Some(parent) = std::fs::read_to_string(format!("/proc/{at}/stat"))
                .ok()
                .and_then(|text| stat_field(&text, 1))
            else {
                break;
            };
            if parent == 0 || chain.contains(&(parent as u32)) {
                break;
            }
            chain.push(parent as u32);
            at = parent as u32;
        }
    }
    #[cfg(not(target_os = "linux"))]
    chain.push(std::os::unix::process::parent_id());
    chain
}

/// Whether `pid` is a shell Claude Code started for this hook: `sh -c` (or
/// bash, dash, zsh) with one simple command that names this binary — no
/// `;`, `&`, `|`, redirection, command substitution or second line, which
/// the Bash tool's own wrapper (`source …snapshot… && eval '…' < /dev/null
/// && pwd -P >| …`) always has.
fn runs_only_this_hook(pid: u32) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    let own_name = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()));
    let argv0_name = std::env::args_os().next().and_then(|arg| {
        std::path::Path::new(&arg)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    });
    shell_runs_only(&args, &[own_name, argv0_name])
}

fn shell_runs_only(args: &[String], names: &[Option<String>]) -> bool {
    let [shell, flag, command, ..] = args else {
        return false;
    };
    let shell = shell.rsplit('/').next().unwrap_or(shell);
    if !matches!(shell, "sh" | "bash" | "dash" | "zsh") || flag != "-c" {
        return false;
    }
    // Single-quoted text is taken literally by the shell: only what is
    // outside it can chain or redirect.
    let outside_quotes: String = command.split('\'').step_by(2).collect();
    if outside_quotes.contains([';', '&', '|', '<', '>', '`', '\n', '\r'])
        || outside_quotes.contains("$(")
    {
        return false;
    }
    names
        .iter()
        .flatten()
        .any(|name| !name.is_empty() && command.contains(name.as_str()))
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
    alive(turn.pid, turn.start_ticks)
}

/// Whether process `pid`, started at `ticks` when that is known, still runs
/// (a pid taken by a later process does not count).
pub fn alive(pid: u32, ticks: Option<u64>) -> bool {
    #[cfg(target_os = "linux")]
    {
        match (ticks, start_ticks(pid)) {
            (Some(then), Some(now)) => then == now,
            (None, Some(_)) => true,
            (_, None) => false,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ticks;
        // SAFETY: signal 0 only asks whether the pid exists.
        unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
    }
}

/// Whether a tool call of the Claude Code process `claude` is over, as far
/// as the hooks can know: that process is gone, or the call's result
/// (`id`) is in the session's transcript — Claude Code writes one for a
/// call the user refused at the permission prompt or another hook denied,
/// whose PostToolUse never comes.
pub fn call_over(claude: (u32, Option<u64>), transcript: Option<&str>, id: Option<&str>) -> bool {
    if !alive(claude.0, claude.1) {
        return true;
    }
    match (transcript, id) {
        (Some(transcript), Some(id)) => result_written(std::path::Path::new(transcript), id),
        _ => false,
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
    let process = match caller(ctx) {
        Caller::Claude { pid, start_ticks } => Some((pid, start_ticks)),
        // A prompt fed to the hook by a command of the agent's comes in
        // the middle of the turn that runs the command, whatever the
        // record says (attack finding G2).
        Caller::AgentCommand => return Ok(true),
        // A process an earlier call left running (noted by the guard), or
        // one it started, feeds this hook after the session ended: its
        // "stop" is not the user's (guard attack W-12).
        Caller::Outside if under_a_left_process(ctx) => return Ok(true),
        // Another harness names no process of its own: the one that started
        // this hook is taken for it when it runs under the harness's name,
        // and its turn is then told apart the same way (attack findings
        // RA-6 and F12 of the harness round).
        Caller::Outside => harness_runner(ctx),
    };
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

/// Whether this hook was fed its payload by a command of the agent's rather
/// than run by Claude Code (or another harness): from inside a tool call
/// ([`Caller::AgentCommand`]), or from outside every Claude Code process
/// under a session whose turn is open in a process that runs: a command
/// that detached from its call (a double fork, `setsid`) before feeding
/// the hook (guard attack P-1, C-1 under Codex).
/// A hook run by hand or by a test names no live session.
pub fn forged(ctx: &Ctx) -> bool {
    forged_as(ctx, caller(ctx))
}

/// [`forged`] for a hook whose [`caller`] (or [`caller_of`]) is known.
pub fn forged_as(ctx: &Ctx, found: Caller) -> bool {
    ctx.debug(format_args!("who runs this hook: {found:?}"));
    match found {
        Caller::AgentCommand => true,
        Caller::Claude { .. } => false,
        Caller::Outside => names_a_live_session(ctx),
    }
}

/// Whether a process the guard noted as left running by one of the
/// agent's calls is this hook or one of its ancestors. One `stat` when
/// none is noted.
fn under_a_left_process(ctx: &Ctx) -> bool {
    let Some(watch) = crate::state::journal::watch_dir(&ctx.state_root) else {
        return false;
    };
    let Ok(bytes) = std::fs::read(watch.join(LEFT_RUNNING_FILE)) else {
        return false;
    };
    let Ok(left) = serde_json::from_slice::<LeftRunning>(&bytes) else {
        return false;
    };
    ancestors().into_iter().any(|pid| {
        left.procs
            .iter()
            .any(|proc| proc.pid == pid && start_ticks(pid) == Some(proc.start_ticks))
    })
}

/// The guard's record of the processes the agent's calls left running
/// (`background.json` in its watch folder, written by
/// `crate::guards::effects::background`): what this module reads of it.
const LEFT_RUNNING_FILE: &str = "background.json";

#[derive(Debug, Default, Deserialize)]
struct LeftRunning {
    #[serde(default)]
    procs: Vec<LeftProcess>,
}

#[derive(Debug, Deserialize)]
struct LeftProcess {
    pid: u32,
    start_ticks: u64,
}

fn names_a_live_session(ctx: &Ctx) -> bool {
    if under_a_left_process(ctx) {
        return true;
    }
    let Some(session) = ctx.session_id.as_deref() else {
        return false;
    };
    let store = ctx.store();
    store.exists(TURNS_FILE)
        && store
            .read_json::<Turns>(TURNS_FILE)
            .ok()
            .flatten()
            .is_some_and(|turns| turns.open.get(session).is_some_and(still_running))
}

/// Whether Claude Code runs this hook itself (see [`caller`]).
pub fn run_by_claude(ctx: &Ctx) -> bool {
    matches!(caller(ctx), Caller::Claude { .. })
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
    let Caller::Claude { pid, .. } = caller(ctx) else {
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
/// locking: nothing open, nothing written. Only a hook Claude Code runs
/// itself ends a turn ([`caller`]).
pub fn end(ctx: &Ctx) -> anyhow::Result<()> {
    end_unless_inside(ctx, None)
}

/// [`end`] at an interrupted tool call (PostToolUseFailure with
/// `is_interrupt`): `call`'s own snapshot, still open, is not a call
/// running around this hook.
pub fn end_after_interrupt(ctx: &Ctx, call: Option<&str>) -> anyhow::Result<()> {
    end_unless_inside(ctx, call)
}

fn end_unless_inside(ctx: &Ctx, own_call: Option<&str>) -> anyhow::Result<()> {
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
    // Only Claude Code's own hook ends a turn: the same payload fed to the
    // binary by the agent's command (a made-up Stop, interrupt or session
    // start) would make its next queued "stop" the user's.
    if !matches!(caller_of(ctx, own_call), Caller::Claude { .. }) {
        ctx.debug(format_args!(
            "not run by Claude Code itself: the turn of session {session:?} stays open"
        ));
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

/// What this module reads of an open Bash-call snapshot of the guard's
/// (`windows/*.json` in its watch folder, written by
/// [`crate::guards::effects`] at PreToolUse and removed by the check after
/// the call); unknown fields are ignored.
#[derive(Debug, Deserialize)]
struct CallWindow {
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    started_ticks: Option<u64>,
    #[serde(default)]
    claude: Option<(u32, Option<u64>)>,
    #[serde(default)]
    transcript_path: Option<String>,
}

/// Whether a Bash call of the Claude Code process `claude` is still
/// running and began before `forked_ticks` (when the process right below
/// Claude Code on this hook's side was started): then this hook runs inside
/// that call, whatever its process tree looks like — a command that
/// `exec`s its own shell into `sh -c '<hook>'` leaves the hook where Claude
/// Code puts its own. Claude Code runs no Stop, SessionStart or prompt
/// hook while a tool call runs. A call is still running while its snapshot
/// is open (no hook after it ran yet) and its result is not in the
/// session's transcript: a snapshot left open by a call that was refused or
/// whose hook was killed has its result there. `own_call`: the calling
/// hook's own tool call, over whatever the transcript says. Reads the
/// watch folder only while it exists (unattended work), and a transcript
/// only for a snapshot that is open.
fn call_running_around(
    ctx: &Ctx,
    claude: (u32, Option<u64>),
    forked_ticks: Option<u64>,
    own_call: Option<&str>,
) -> bool {
    let Some(watch) = crate::state::journal::watch_dir(&ctx.state_root) else {
        return false;
    };
    let Ok(entries) = std::fs::read_dir(watch.join("windows")) else {
        return false;
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|ext| ext == "json"))
        .filter_map(|e| {
            std::fs::read(e.path())
                .ok()
                .and_then(|bytes| serde_json::from_slice::<CallWindow>(&bytes).ok())
        })
        .any(|window| {
            let (Some(id), Some(transcript)) = (&window.tool_use_id, &window.transcript_path)
            else {
                return false;
            };
            window.claude == Some(claude)
                && own_call != Some(id.as_str())
                && match (window.started_ticks, forked_ticks) {
                    (Some(began), Some(forked)) => began <= forked,
                    _ => true,
                }
                && !result_written(std::path::Path::new(transcript), id)
        })
}

/// How much of a transcript's end is searched for a call's result.
const RESULT_SEARCH_BYTES: u64 = 32 * 1024 * 1024;

/// Whether the transcript holds the result of the tool call `id`.
fn result_written(transcript: &std::path::Path, id: &str) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = std::fs::File::open(transcript) else {
        return false;
    };
    let length = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = length.saturating_sub(RESULT_SEARCH_BYTES);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    if file
        .take(RESULT_SEARCH_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return false;
    }
    let needle = format!("\"tool_use_id\":\"{id}\"");
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harness_process_is_known_by_its_name_or_script() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        // Codex's native binary; Gemini CLI's script under node; Copilot's
        // binary whose main thread names the process `MainThread`.
        assert!(named_as(&names(&["codex", "codex", "exec"]), &["codex"]));
        assert!(named_as(
            &names(&["node", "node", "--max-old-space-size=12052", "gemini"]),
            &["gemini"]
        ));
        assert!(named_as(
            &names(&["MainThread", "copilot", "-p"]),
            &["copilot"]
        ));
        assert!(named_as(&names(&["Cursor Helper"]), &["cursor"]));
        // The agent's shell, a test's runner, Claude Code (no names).
        assert!(!named_as(&names(&["bash", "bash", "-c"]), &["codex"]));
        assert!(!named_as(
            &names(&["integration-3d1", "integration"]),
            &["gemini"]
        ));
        assert!(!named_as(&names(&["codex"]), &[]));
    }

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

    #[test]
    fn only_claude_codes_own_hook_is_claudes() {
        let shell = |pid: u32| pid == 20;
        // exec form: Claude Code's child.
        assert!(matches!(
            classify(&[30, 8, 1], &[8], &shell),
            Caller::Claude { pid: 8, .. }
        ));
        // shell form: `sh -c '<hook>'` between.
        assert!(matches!(
            classify(&[30, 20, 8, 1], &[8], &shell),
            Caller::Claude { pid: 8, .. }
        ));
        // The Bash tool's shell between, or more.
        assert_eq!(
            classify(&[30, 21, 8, 1], &[8], &shell),
            Caller::AgentCommand
        );
        assert_eq!(
            classify(&[30, 20, 21, 8, 1], &[8], &shell),
            Caller::AgentCommand
        );
        assert_eq!(classify(&[30, 20, 21, 1], &[8], &shell), Caller::Outside);
    }

    #[test]
    fn a_hook_shell_runs_one_simple_command_naming_the_hook() {
        let names = [Some("ralph-stop-loop-controller".to_string()), None];
        let args = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        assert!(shell_runs_only(
            &args(&["/bin/sh", "-c", "/opt/bin/ralph-stop-loop-controller"]),
            &names
        ));
        assert!(shell_runs_only(
            &args(&["sh", "-c", "'/a b;c/ralph-stop-loop-controller' --rewake"]),
            &names
        ));
        assert!(shell_runs_only(
            &args(&[
                "sh",
                "-c",
                "\"${CLAUDE_PLUGIN_ROOT}/bin/ralph-stop-loop-controller\" --rewake"
            ]),
            &names
        ));
        for command in [
            "source /h/.claude/shell-snapshots/s.sh && eval 'ralph-stop-loop-controller' < /dev/null && pwd -P >| /tmp/c",
            "ralph-stop-loop-controller < stop.json",
            "echo x | ralph-stop-loop-controller",
            "ralph-stop-loop-controller; true",
            "$(echo ralph-stop-loop-controller)",
            "/usr/bin/other-hook",
        ] {
            assert!(
                !shell_runs_only(&args(&["/bin/bash", "-c", command]), &names),
                "{command}"
            );
        }
        assert!(!shell_runs_only(
            &args(&["python3", "-c", "ralph-stop-loop-controller"]),
            &names
        ));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn claude_pid_counts_only_when_it_runs_this_process() {
        assert!(is_ancestor(std::os::unix::process::parent_id()));
        assert!(!is_ancestor(u32::MAX - 7));
    }
}
