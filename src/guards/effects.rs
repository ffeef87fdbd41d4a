//! What a Bash command did, checked after it ran, while the agent works
//! unattended (a Ralph loop runs, or a task's continuation keeps it going).
//! The text reading ([`super::shell`]) cannot see a script written and run
//! in one command, `python -c`, `node -e`, `perl -e`, an alias, a Makefile
//! target, `git clean -fdx`, `git stash -u`; this check sees what they did:
//!
//! 1. **Before** (PreToolUse, after the rules let the command through): a
//!    snapshot of the protected set ([`super::protect`]) and of the
//!    remote-tracking refs, kept outside the project in the watch folder
//!    (`$XDG_STATE_HOME/ralph-hooks/<hash>/`, else `~/.local/state/…`; ours,
//!    mode 0700), so `rm -rf .claude` cannot take it too. Copies of the
//!    files are content-addressed and bounded ([`snapshot`]).
//! 2. **After** (PostToolUse on Bash, or PostToolUseFailure for a command
//!    that failed or was interrupted): the protected set again. A config or
//!    settings file that changed, appeared or vanished is put back. A state
//!    file is put back unless ralph-hooks itself wrote what is there now
//!    (its [`journal`]) — so `ralph-hooks task step complete` works and
//!    `sed -i` on a task file does not — and even then when the write ended
//!    or weakened the supervision, whoever it claims to be (the journal's
//!    writer name and `CLAUDECODE` flag are the command's to choose): the
//!    loop by its identity and terms ([`terms`]: `loop cancel` and `loop
//!    start` of an easy loop in its place), the task by its status and open
//!    steps (`task complete --force`, `task cancel`, steps dropped). An
//!    append-only log may only grow. Claude is told what changed and that it
//!    was undone, the user sees it too (names and commands with control
//!    characters escaped), and `events.jsonl` gets a `guard_event`. The loop
//!    goes on. A snapshot whose check never ran (the hook killed, not run)
//!    is checked at the next hook of any kind ([`make_up`]).
//! 3. **Pushes and publishes** ([`refs`], [`publish`]): a remote-tracking
//!    ref moved by a push, a ref written in a remote on this machine, git's
//!    push report or a registry upload in the command's output,
//!    pauses the loop (`paused_by: "guard"`) and the task continuation; the
//!    user is told exactly what went where. A push cannot be undone.
//!
//! Outside unattended work nothing is snapshotted and the watch folder is
//! removed; the check after a command then costs one `stat`.
//!
//! [`journal`]: crate::state::journal

pub mod background;
pub mod pending;
pub mod publish;
pub mod refs;
pub mod snapshot;
pub mod terms;
pub mod watcher;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::protect::{Kind, ProtectedSet};
use super::{GuardConfig, Supervision};
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookOutput, ToolInput};
use crate::ralph::loop_state::LOOP_FILE;
use crate::state::FileLock;
use crate::state::journal::{self, BASE_FILE, Record};
use crate::tasks::{self, TaskDoc};
use crate::util::private_dir;
use crate::util::text::{escape_controls, fnv1a};
use snapshot::{Blobs, Class, FileState, Manifest};

const NAME: &str = "ralph-hooks guard";
/// Open windows (a Bash call between its Pre and Post) live this long at
/// most: a call Claude Code never finished (denied by another hook, the
/// session killed) leaves one behind.
const STALE_WINDOW_MS: u64 = 6 * 3600 * 1000;
/// The journal is trimmed past this size.
const MAX_JOURNAL_BYTES: u64 = 1024 * 1024;
/// State-root files that are append-only logs.
const LOGS: &[&str] = &["events.jsonl", "daemon/daemon.log"];
/// The binary that writes for the user's prompt: a stop phrase pauses the
/// loop, and a `/cancel-loop` typed by the user follows.
const PROMPT_HOOK: &str = "ralph-user-prompt-submit";

/// One Bash call between its PreToolUse and PostToolUse.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Window {
    version: u64,
    started_ms: u64,
    command: String,
    manifest: Manifest,
    refs: refs::Refs,
    /// Tree roots and the folders above protected files (inside the project
    /// or home): whether each was a real folder.
    dirs: Vec<(String, bool)>,
    /// When a check made up for this call ran while it may still have been
    /// running (a hook of another call): pushes before that were told then.
    #[serde(default)]
    checked_ms: Option<u64>,
    /// The call's `tool_use_id`, for the check made up for it.
    #[serde(default)]
    tool_use_id: Option<String>,
    /// When the call began, in the clock ticks process start times are
    /// counted in: the processes it leaves behind started after this
    /// ([`background`]).
    #[serde(default)]
    started_ticks: Option<u64>,
    /// `run_in_background`: the call's shell itself is what it leaves.
    #[serde(default)]
    in_background: bool,
    /// The Claude Code process that runs the call (pid and start time),
    /// when Claude Code itself ran the hook before it.
    #[serde(default)]
    claude: Option<(u32, Option<u64>)>,
    /// The session's transcript, where the call's result is written when
    /// it ends.
    #[serde(default)]
    transcript_path: Option<String>,
    /// The project folder the snapshot was taken in (device, inode, birth
    /// time): one made anew at the same path is another project.
    #[serde(default)]
    project: Option<(u64, u64, u64)>,
}

/// The device, inode and birth time in nanoseconds (0 where the file
/// system keeps none) of `folder`, followed through a link. The birth
/// time tells a folder made anew apart when it gets the freed inode back,
/// as ext4 does at once.
fn folder_identity(folder: &Path) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(folder).ok()?;
    let born = metadata
        .created()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos() as u64);
    Some((metadata.dev(), metadata.ino(), born))
}

/// The window is of a project that is gone: its folder was made anew at
/// this path since the snapshot, and the Claude Code process that ran the
/// call has ended (re-attack RA-12: the old project's snapshot put its
/// loop back into the new one). While that process lives, a folder
/// swapped under the call is the call's doing and is put back (A35-3).
fn of_a_project_gone(ctx: &Ctx, window: &Window) -> bool {
    let Some(then) = window.project else {
        return false;
    };
    folder_identity(&ctx.project_root) != Some(then)
        && window
            .claude
            .is_some_and(|(pid, ticks)| !crate::ralph::turns::alive(pid, ticks))
}

const WINDOW_VERSION: u64 = 1;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The watch folder, created private: ours, mode 0700 (another user's
/// folder could feed us made-up snapshots).
fn prepare_watch(watch: &Path) -> anyhow::Result<()> {
    let parent = watch.parent().context("the watch folder has no parent")?;
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    private_dir::check(parent)?;
    std::fs::create_dir_all(watch.join("windows"))
        .with_context(|| format!("cannot create {}", watch.display()))?;
    private_dir::check(watch)
}

fn window_path(watch: &Path, tool: &ToolInput) -> PathBuf {
    let id = tool.tool_use_id.as_deref().unwrap_or("none");
    watch
        .join("windows")
        .join(format!("{:016x}.json", fnv1a(id.as_bytes())))
}

/// The open windows' files, oldest name first (none when the folder is
/// missing: no unattended work).
fn window_files(watch: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(watch.join("windows")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// What the user is told when a check owed for an earlier call fails.
fn owed_check_failed(error: &anyhow::Error) -> String {
    let line = shown(&format!(
        "cannot check what an earlier command did (its own check never ran): {error:#}"
    ));
    format!("{NAME}: {line}")
}

fn write_json(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_vec(value).context("cannot encode a snapshot")?;
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temp, text).with_context(|| format!("cannot write {}", temp.display()))?;
    std::fs::rename(&temp, path).with_context(|| format!("cannot write {}", path.display()))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The class of each protected path, and the config paths that do not
/// exist (their appearing counts too).
fn paths_to_watch(ctx: &Ctx, set: &ProtectedSet) -> Vec<(PathBuf, Class)> {
    paths_to_watch_of(ctx, set, &set.files())
}

/// [`paths_to_watch`] with the set's files already walked.
fn paths_to_watch_of(
    ctx: &Ctx,
    set: &ProtectedSet,
    files: &[(PathBuf, Kind)],
) -> Vec<(PathBuf, Class)> {
    let mut paths: Vec<(PathBuf, Class)> = Vec::new();
    for (path, kind) in files {
        if let Some(class) = class_of(ctx, path, *kind) {
            paths.push((path.clone(), class));
        }
    }
    for entry in set.entries.iter().filter(|entry| entry.watched) {
        if !entry.tree && !paths.iter().any(|(path, _)| *path == entry.path) {
            paths.push((entry.path.clone(), Class::Config));
        }
    }
    paths
}

/// The protected files as they are named now (the watcher waits on their
/// folders).
fn protected_paths(ctx: &Ctx) -> Vec<PathBuf> {
    let set = GuardConfig::load(&ctx.project_root).protected_set(ctx);
    paths_to_watch(ctx, &set)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// How a protected file is checked; `None` for what is not worth keeping:
/// lock sentinels, files moved aside as corrupt, writers' temp files.
fn class_of(ctx: &Ctx, path: &Path, kind: Kind) -> Option<Class> {
    // What the guard itself moved aside is not a new file to move aside
    // again (guard attack W-7: in a protected folder it was, until the
    // name grew too long).
    if path
        .file_name()
        .is_some_and(|name| name.to_string_lossy().contains(".undone-by-ralph-hooks-"))
    {
        return None;
    }
    let Ok(relative) = path.strip_prefix(&ctx.state_root) else {
        return Some(match kind {
            Kind::State => Class::State,
            Kind::Config => Class::Config,
        });
    };
    let relative = relative.to_string_lossy();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if relative.starts_with(".locks/")
        || name.contains(".corrupt-")
        || (name.starts_with('.') && name.contains(".tmp-"))
        || name.ends_with(".sock")
    {
        return None;
    }
    if LOGS.contains(&relative.as_ref()) {
        return Some(Class::Log);
    }
    Some(Class::State)
}

/// The folders whose being replaced (by a link, a file) would carry the
/// protected files away: the tree roots and the folders above each
/// protected path, inside the project or the home folder, the project
/// folder itself and the folders above it included (moved away, a link in
/// its place: attack findings A35-3, RA-2).
fn guarded_dirs(ctx: &Ctx, set: &ProtectedSet) -> Vec<(String, bool)> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for entry in &set.entries {
        let mut dir = if entry.tree {
            Some(entry.path.as_path())
        } else {
            entry.path.parent()
        };
        while let Some(here) = dir {
            let inside = here.starts_with(&ctx.project_root)
                || home
                    .as_deref()
                    .is_some_and(|home| here.starts_with(home) && here != home);
            if !inside {
                break;
            }
            dirs.insert(here.to_path_buf());
            dir = here.parent();
        }
    }
    // The folders above the project too: one of them moved away with a link
    // to a copy in its place carries the project off as well (re-attack
    // RA-2). Not the filesystem's root.
    for above in ctx.project_root.ancestors().skip(1) {
        if above.parent().is_some() {
            dirs.insert(above.to_path_buf());
        }
    }
    dirs.into_iter()
        .map(|dir| {
            let real = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
            (dir.to_string_lossy().into_owned(), real)
        })
        .collect()
}

/// Before a Bash command: the snapshot, while the agent works unattended.
/// Outside that, the watch folder is removed and nothing else happens.
/// A failure is said once per call on stderr and to the user, and never
/// stops the command.
/// The protected set and its files as they are now, walked once for a
/// Bash command's link separation and snapshot.
pub struct Protected {
    set: ProtectedSet,
    files: Vec<(PathBuf, Kind)>,
}

impl Protected {
    pub fn now(ctx: &Ctx, config: &GuardConfig) -> Protected {
        let set = config.protected_set(ctx);
        let files = set.files();
        Protected { set, files }
    }

    pub fn files(&self) -> &[(PathBuf, Kind)] {
        &self.files
    }
}

/// `protected`: the set while the agent works unattended (`None` when it
/// does not, and no snapshot is taken).
pub fn before_bash(
    ctx: &Ctx,
    tool: &ToolInput,
    protected: Option<&Protected>,
    supervision: &Supervision,
) -> Option<HookOutput> {
    let watch = journal::watch_dir(&ctx.state_root)?;
    let Some(protected) = protected.filter(|_| supervision.unattended()) else {
        // A put-back still pending keeps its copies (see [`pending`]).
        if watch.exists() && !watch.join(pending::FILE).exists() {
            let _ = std::fs::remove_dir_all(&watch);
        }
        return None;
    };
    match take_before(ctx, tool, protected, &watch) {
        Ok(()) => None,
        Err(error) => {
            let line = shown(&format!(
                "cannot take the snapshot before this command, so what it does is not checked: {error:#}"
            ));
            eprintln!("{NAME}: {line}");
            Some(HookOutput::silent().with_system_message(format!("{NAME}: {line}")))
        }
    }
}

fn take_before(
    ctx: &Ctx,
    tool: &ToolInput,
    protected: &Protected,
    watch: &Path,
) -> anyhow::Result<()> {
    prepare_watch(watch)?;
    let _lock = FileLock::acquire(&watch.join("lock"))?;
    let base_path = watch.join(BASE_FILE);
    let base: Option<Manifest> = read_json(&base_path);
    if base.is_none() {
        // Journaling starts now, before anything is read: a write of ours
        // landing while the snapshot is taken is recorded.
        write_json(&base_path, &Manifest::default())?;
    }
    let started_ms = now_ms();
    let set = &protected.set;
    let mut blobs = Blobs::new(watch.join("blobs"));
    let manifest = snapshot::take(
        &paths_to_watch_of(ctx, set, &protected.files),
        base.as_ref(),
        &mut blobs,
        started_ms,
    );
    let window = Window {
        version: WINDOW_VERSION,
        started_ms,
        command: cap(tool.input_str("command").unwrap_or_default(), 400),
        manifest: manifest.clone(),
        refs: refs::snapshot(&ctx.project_root),
        dirs: guarded_dirs(ctx, set),
        checked_ms: None,
        tool_use_id: tool.tool_use_id.clone(),
        started_ticks: background::now_ticks(),
        in_background: tool
            .tool_input
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        claude: match crate::ralph::turns::shape(ctx) {
            crate::ralph::turns::Caller::Claude { pid, start_ticks } => Some((pid, start_ticks)),
            _ => None,
        },
        transcript_path: tool.common.transcript_path.clone(),
        project: folder_identity(&ctx.project_root),
    };
    write_json(&window_path(watch, tool), &window)?;
    write_json(&base_path, &manifest)?;
    sweep(watch, started_ms);
    Ok(())
}

/// Removes windows left open too long, trims the journal to what the open
/// windows need.
fn sweep(watch: &Path, now: u64) {
    let Ok(entries) = std::fs::read_dir(watch.join("windows")) else {
        return;
    };
    let mut oldest = now;
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        match read_json::<Window>(&path) {
            Some(window) if now.saturating_sub(window.started_ms) < STALE_WINDOW_MS => {
                oldest = oldest.min(window.started_ms);
            }
            _ => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    journal::trim(watch, oldest.saturating_sub(1000), MAX_JOURNAL_BYTES);
}

/// What happened to one protected file.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: String,
    pub what: &'static str,
    /// Put back, or why not.
    pub restored: Result<(), String>,
    /// What the change did, when the guard can say (the loop replaced).
    pub note: Option<String>,
}

/// After a Bash command (PostToolUse, or PostToolUseFailure for one that
/// failed or was interrupted): compares, puts back, looks for pushes and
/// publishes. Silent when there is no snapshot for this call.
pub fn after_bash(ctx: &Ctx, tool: &ToolInput) -> HookOutput {
    let retried = pending::retry(ctx);
    let output = after_bash_checked(ctx, tool);
    match retried {
        Some(outcome) => outcome.annotate(ctx, output, EventName::PostToolUse),
        None => output,
    }
}

fn after_bash_checked(ctx: &Ctx, tool: &ToolInput) -> HookOutput {
    let Some(watch) = journal::watch_dir(&ctx.state_root) else {
        return HookOutput::silent();
    };
    let path = window_path(&watch, tool);
    if !path.exists() {
        ctx.debug(format_args!(
            "no open check for the call {:?}",
            tool.tool_use_id
        ));
        return HookOutput::silent();
    }
    let mut output_text: Vec<&str> = ["stdout", "stderr"]
        .iter()
        .filter_map(|key| tool.tool_response.get(*key).and_then(Value::as_str))
        .collect();
    // A failed call brings no `tool_response`; its `error` carries the output.
    output_text.extend(tool.error.as_deref());
    let output_text = output_text.join("\n");
    let event = match tool.error.is_some() || tool.is_interrupt.is_some() {
        true => EventName::PostToolUseFailure,
        false => EventName::PostToolUse,
    };
    // A post-tool payload for this very call that the call's own command
    // feeds the hook (the harness's process above it, the command's shell
    // in between) would close the check before the command goes on:
    // checked now and kept, so the harness's own hook after the call still
    // comes (re-attack finding RA-6).
    // Also fed from a process that detached from its call first (guard
    // attack P-1, C-1).
    let caller = crate::ralph::turns::caller_of(ctx, tool.tool_use_id.as_deref());
    let finish = match crate::ralph::turns::forged_as(ctx, caller) {
        true => Finish::Keep,
        false => Finish::Close,
    };
    ctx.debug(format_args!(
        "the check after this call: {}",
        match finish {
            Finish::Close => "closed (the harness's own hook)",
            Finish::Keep => "kept open (a hook fed by the agent's command)",
        }
    ));
    match check_after(ctx, &output_text, &watch, &path, finish, false) {
        Ok(Some(told)) => told.into_output(event),
        Ok(None) => HookOutput::silent(),
        Err(error) => {
            let line = shown(&format!("cannot check what this command did: {error:#}"));
            eprintln!("{NAME}: {line}");
            HookOutput::silent().with_system_message(format!("{NAME}: {line}"))
        }
    }
}

/// What a check found, for Claude and for the user.
#[derive(Debug, Clone, Default)]
pub struct Told {
    pub for_claude: Vec<String>,
    pub for_user: Vec<String>,
}

impl Told {
    /// As the answer of a hook that takes `additionalContext` for `event`.
    pub fn into_output(self, event: EventName) -> HookOutput {
        let mut output = HookOutput::silent();
        if !self.for_claude.is_empty() {
            output = HookOutput::context(event, self.for_claude.join("\n"));
        }
        if !self.for_user.is_empty() {
            output = output.with_system_message(self.for_user.join("\n"));
        }
        output
    }

    /// Added to `output`: the user's part to its `systemMessage`; Claude's
    /// to its `additionalContext` when `context` names the event it is
    /// answered for, else to the user's part too (Claude cannot be told).
    pub fn add_to(self, mut output: HookOutput, context: Option<EventName>) -> HookOutput {
        let mut for_user = self.for_user;
        match context {
            Some(event) if !self.for_claude.is_empty() => {
                let text = self.for_claude.join("\n");
                let specific = output.hook_specific_output.get_or_insert_with(|| {
                    crate::hook::protocol::HookSpecificOutput {
                        hook_event_name: event.as_str(),
                        ..Default::default()
                    }
                });
                specific.additional_context = Some(match specific.additional_context.take() {
                    Some(own) => format!("{text}\n{own}"),
                    None => text,
                });
            }
            _ => {}
        }
        if for_user.is_empty() {
            return output;
        }
        if let Some(own) = output.system_message.take() {
            for_user.push(own);
        }
        output.with_system_message(for_user.join("\n"))
    }
}

/// What becomes of the call's snapshot after its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// The call is over: removed.
    Close,
    /// The call may still run (a check made up from another call's hook):
    /// kept, so its own check after it still comes; pushes seen now are
    /// not told twice.
    Keep,
}

/// The checks owed for Bash calls whose check after never ran — its hook
/// killed (a timeout, the session ended), not run (an older client, a
/// failure no hook was registered for), or refused by another hook after
/// ours took the snapshot — run at the next hook of any kind, before it
/// decides anything. `own`: the calling hook's own tool call, left to its
/// own check. `over`: no call can still be running (the turn ended, a
/// prompt or a session started): every snapshot is closed; otherwise one
/// is checked and kept. Costs one `readdir` of the watch folder, which
/// exists only while the agent works unattended.
pub fn make_up(ctx: &Ctx, own: Option<&ToolInput>, over: bool) -> Option<Told> {
    let watch = journal::watch_dir(&ctx.state_root)?;
    let own = own.map(|tool| window_path(&watch, tool));
    let mut pending = window_files(&watch);
    pending.retain(|path| own.as_ref() != Some(path));
    if pending.is_empty() {
        return None;
    }
    let finish = if over { Finish::Close } else { Finish::Keep };
    ctx.debug(format_args!(
        "{} check(s) owed for other calls: {}",
        pending.len(),
        if over { "closed" } else { "kept" }
    ));
    let mut told = Told::default();
    for path in pending {
        match check_after(ctx, "", &watch, &path, finish, true) {
            Ok(Some(found)) => {
                told.for_claude.extend(found.for_claude);
                told.for_user.extend(found.for_user);
            }
            Ok(None) => {}
            Err(error) => {
                let line = owed_check_failed(&error);
                eprintln!("{line}");
                told.for_user.push(line);
            }
        }
    }
    (!told.for_claude.is_empty() || !told.for_user.is_empty()).then_some(told)
}

/// [`make_up`] at a Stop or StopFailure: the turn is over and every
/// snapshot is closed — unless a command of the agent's feeds this hook
/// (its Bash call is still running): then each is checked and kept, so the
/// call's own check after it still comes and what the command does after
/// the made-up Stop is put back (attack finding G8). Who runs the hook is
/// asked only when there is a snapshot to close.
pub fn make_up_at_turn_end(ctx: &Ctx) -> Option<Told> {
    let watch = journal::watch_dir(&ctx.state_root)?;
    if window_files(&watch).is_empty() {
        return None;
    }
    let over = !crate::ralph::turns::forged(ctx);
    make_up(ctx, None, over)
}

/// Before the user changes the loop or the task from a terminal (`loop
/// cancel`, `loop start`, `task cancel`, …): the checks owed for Bash calls
/// that are over — Claude Code wrote their result into the session's
/// transcript (the user refused the call at the permission prompt, another
/// hook denied it) or its process is gone — run now and close. Otherwise
/// the next hook would check such a call against a snapshot older than the
/// user's change and put the change back as if the call had made it
/// (attack finding F4). Nothing is done when the CLI runs under Claude Code
/// (a command of the agent's), for a call that may still run, or for a
/// harness whose transcript the hooks cannot read: those snapshots stay,
/// as before. Returns what the user is told.
pub fn settle_calls_over(ctx: &Ctx) -> Vec<String> {
    let Some(watch) = journal::watch_dir(&ctx.state_root) else {
        return Vec::new();
    };
    let open = window_files(&watch);
    if open.is_empty() || crate::ralph::turns::shape(ctx) != crate::ralph::turns::Caller::Outside {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for path in open {
        let Some(window) = read_json::<Window>(&path) else {
            continue;
        };
        let Some(claude) = window.claude else {
            continue;
        };
        if !crate::ralph::turns::call_over(
            claude,
            window.transcript_path.as_deref(),
            window.tool_use_id.as_deref(),
        ) {
            continue;
        }
        // A CLI inside Claude Code (the agent's command, whatever it did to
        // its environment or `turns.json`: re-attack RA-7), or one the call
        // left running detached from it (`setsid -f ralph-hooks loop
        // cancel` beside a result it wrote into the transcript, adopted by
        // init or a subreaper above Claude Code: RA-1), is not the user's.
        if !background::outside_the_call(claude, window.started_ticks) {
            continue;
        }
        match check_after(ctx, "", &watch, &path, Finish::Close, true) {
            Ok(Some(told)) => lines.extend(told.for_user),
            Ok(None) => {}
            Err(error) => lines.push(owed_check_failed(&error)),
        }
    }
    lines
}

fn check_after(
    ctx: &Ctx,
    output_text: &str,
    watch: &Path,
    window_file: &Path,
    finish: Finish,
    made_up: bool,
) -> anyhow::Result<Option<Told>> {
    let _lock = FileLock::acquire(&watch.join("lock"))?;
    let Some(mut window) = read_json::<Window>(window_file) else {
        let _ = std::fs::remove_file(window_file);
        return Ok(None);
    };
    if made_up && of_a_project_gone(ctx, &window) {
        let _ = std::fs::remove_file(window_file);
        let line = format!(
            "{NAME}: the check owed for `{}`, a command of a session that has ended, was \
             dropped: the project folder was made anew since, so what that command found \
             is not this project's and nothing was put back",
            shown(&window.command)
        );
        return Ok(Some(Told {
            for_claude: Vec::new(),
            for_user: vec![line],
        }));
    }
    // The snapshot goes only once the check is done: a hook killed half
    // way leaves it for the next hook to make up for.
    let records = journal::read_since(watch, window.started_ms.saturating_sub(5));
    repair_dirs(&window.dirs);
    let config = GuardConfig::load(&ctx.project_root);
    let set = config.protected_set(ctx);
    let mut paths = paths_to_watch(ctx, &set);
    for (key, state) in &window.manifest.files {
        let path = PathBuf::from(key);
        if !paths.iter().any(|(p, _)| *p == path) {
            paths.push((path, state.class));
        }
    }
    let mut blobs = Blobs::new(watch.join("blobs"));
    let base: Option<Manifest> = read_json(&watch.join(BASE_FILE));
    // Modes first: a file or folder made unreadable would read as changed
    // and could not be put back.
    let mut changes = snapshot::repair_dir_modes(&ctx.state_root);
    changes.extend(snapshot::restore_modes(&window.manifest));
    let mut now = snapshot::take(&paths, base.as_ref(), &mut blobs, now_ms());
    changes.extend(compare_and_restore(
        ctx, &window, &mut now, &records, &blobs,
    ));
    pending::record(watch, failed_put_backs(ctx, &window, &changes))?;
    write_json(&watch.join(BASE_FILE), &now)?;
    let now_manifest = now.clone();
    let live: Vec<Manifest> = open_windows(watch);
    let kept = pending::Pending::read(watch).manifest();
    let mut referenced: Vec<&Manifest> = live.iter().collect();
    referenced.push(&now);
    referenced.push(&kept);
    blobs.collect_garbage(&referenced);

    let since = window.checked_ms.unwrap_or(window.started_ms);
    let mut pushes = refs::pushes(&window.refs, &ctx.project_root, since);
    // git's own report, for a push that moved no ref this repository or a
    // remote on this machine shows (a tag, a remote elsewhere).
    for push in refs::pushes_in_output(output_text) {
        let told = pushes.iter().any(|seen| {
            seen.branch == push.branch
                && (seen.url.as_deref() == Some(push.remote.as_str()) || seen.remote == push.remote)
        });
        if !told {
            pushes.push(push);
        }
    }
    let publishes = publish::detect(output_text, "");
    let told = report(ctx, &window, &changes, &pushes, &publishes, made_up);
    match finish {
        Finish::Close => {
            // What the call left running may still write: noted, so the
            // hooks after it put such late writes back (see [`background`])
            // — while its session lasts. A check made up after Claude Code
            // ended (the user's terminal command closing a call it was
            // killed in) notes nothing and starts no watcher: what the user
            // does from a terminal then stands (re-attack X-3).
            let session_over = window
                .claude
                .is_some_and(|(pid, ticks)| !crate::ralph::turns::alive(pid, ticks));
            if !session_over
                && background::note_after_call(watch, window.started_ticks, window.in_background)
            {
                // Claude Code re-reads its settings a second after a write,
                // sooner than the next hook may come (attack finding A35-5).
                watcher::ensure(ctx, watch);
            }
            let _ = std::fs::remove_file(window_file);
        }
        Finish::Keep => {
            // From now on the call is judged against what is there now
            // (what was put back stays put back).
            window.manifest = now_manifest;
            window.refs = refs::snapshot(&ctx.project_root);
            window.checked_ms = Some(now_ms());
            write_json(window_file, &window)?;
        }
    }
    Ok(told)
}

/// The put-backs that failed and can be tried again (a copy was kept, or
/// the file was not there before), for [`pending`].
fn failed_put_backs(ctx: &Ctx, window: &Window, changes: &[Change]) -> Vec<pending::Entry> {
    changes
        .iter()
        .filter_map(|change| {
            let why = change.restored.as_ref().err()?;
            let before = window.manifest.files.get(&change.path)?;
            if before.exists()
                && !before.kept
                && !before
                    .content
                    .as_deref()
                    .is_some_and(|c| c.starts_with("link:"))
            {
                return None;
            }
            let relative = Path::new(&change.path)
                .strip_prefix(&ctx.state_root)
                .ok()
                .map(|r| r.to_string_lossy().into_owned());
            Some(pending::Entry {
                path: change.path.clone(),
                before: before.clone(),
                relative,
                command: cap(&window.command, 400),
                since_ms: window.started_ms,
                error: why.clone(),
            })
        })
        .collect()
}

fn open_windows(watch: &Path) -> Vec<Manifest> {
    window_files(watch)
        .iter()
        .filter_map(|path| read_json::<Window>(path))
        .map(|window| window.manifest)
        .collect()
}

/// Folders that were real folders before the command and are now a link or
/// a file: moved aside and made again, so what is put back lands in the
/// project, not where the link points.
fn repair_dirs(dirs: &[(String, bool)]) {
    for (dir, was_real) in dirs {
        if !was_real {
            continue;
        }
        let path = Path::new(dir);
        let Ok(metadata) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if metadata.is_dir() {
            continue;
        }
        let _ = std::fs::rename(path, aside_name(path, "moved-by-ralph-hooks"));
    }
}

fn aside_name(path: &Path, label: &str) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.{label}-{stamp}"))
}

/// Compares each file with the window's snapshot, puts back what must be,
/// and updates `now` to what is on disk afterwards.
fn compare_and_restore(
    ctx: &Ctx,
    window: &Window,
    now: &mut Manifest,
    records: &[Record],
    blobs: &Blobs,
) -> Vec<Change> {
    let user_spoke = records.iter().any(|r| r.writer == PROMPT_HOOK);
    let mut changes = Vec::new();
    let mut weakened_task = false;
    // The loop whose state was put back: its archive written in this
    // window (`loop cancel` copies it to `loops/<id>.json`) goes too.
    let mut restored_loop: Option<String> = None;
    let mut keys: Vec<String> = window.manifest.files.keys().cloned().collect();
    for key in now.files.keys() {
        if !keys.contains(key) {
            keys.push(key.clone());
        }
    }
    // The loop first (its archive follows it), task files before
    // `tasks/active.json`: whether a task was weakened decides whether the
    // pointer's change stands.
    let loop_key = ctx
        .state_root
        .join(LOOP_FILE)
        .to_string_lossy()
        .into_owned();
    keys.sort_by_key(|key| match key {
        key if *key == loop_key => 0,
        key if key.ends_with("tasks/active.json") => 2,
        _ => 1,
    });
    for key in keys {
        let path = PathBuf::from(&key);
        let class = now
            .files
            .get(&key)
            .or_else(|| window.manifest.files.get(&key))
            .map_or(Class::State, |f| f.class);
        let before = window
            .manifest
            .files
            .get(&key)
            .cloned()
            .unwrap_or_else(|| FileState::absent(class));
        let after = now
            .files
            .get(&key)
            .cloned()
            .unwrap_or_else(|| FileState::absent(class));
        if before.same_as(&after) {
            continue;
        }
        let relative = path
            .strip_prefix(&ctx.state_root)
            .map(|r| r.to_string_lossy().into_owned());
        let mut note = None;
        let undo = match before.class {
            Class::Config => !restored_by_guard(records, &key, &after),
            // A log may grow; the daemon trimming its own log is ours too.
            Class::Log => {
                !snapshot::only_appended(&path, &before, &after)
                    && ours(records, relative.as_deref().unwrap_or(&key), &after).is_none()
            }
            Class::State => {
                let relative = relative.clone().unwrap_or_else(|_| key.clone());
                // Who wrote it (`argv[0]`, `CLAUDECODE`) is the command's to
                // choose: a write of ralph-hooks' own is judged by what it
                // did, whoever it claims to be.
                match ours(records, &relative, &after) {
                    None => true,
                    Some(_) if relative == LOOP_FILE => {
                        note = loop_weakened(&before, &path, blobs, user_spoke);
                        note.is_some()
                    }
                    Some(_) if is_archive_of(&relative, restored_loop.as_deref()) => {
                        !before.exists()
                    }
                    Some(_) if !user_spoke => {
                        let weakens = weakens(&relative, &before, &path, blobs, weakened_task);
                        if weakens && relative.starts_with("tasks/task_") {
                            weakened_task = true;
                            note = Some("the task was ended or its open steps dropped".into());
                        }
                        weakens
                    }
                    Some(_) => false,
                }
            }
        };
        if !undo {
            continue;
        }
        let what = match (before.exists(), after.exists()) {
            (true, false) => "deleted",
            (false, true) => "created",
            _ => "changed",
        };
        let restored = put_back(ctx, &path, &before, relative.ok().as_deref(), blobs);
        if restored.is_ok() {
            now.files.insert(key.clone(), before.clone());
            if key == loop_key {
                restored_loop = loop_id(&path);
            }
        }
        changes.push(Change {
            path: key,
            what,
            restored,
            note,
        });
    }
    changes
}

/// What a write of the loop's state during the window did that it may not
/// ([`terms`]); `None` when it stands or the old state was not kept.
fn loop_weakened(
    before: &FileState,
    path: &Path,
    blobs: &Blobs,
    user_spoke: bool,
) -> Option<String> {
    let old = before
        .content
        .as_deref()
        .filter(|_| before.kept)
        .and_then(|id| blobs.get(id))?;
    let new = std::fs::read_to_string(path).ok();
    terms::weakened(&String::from_utf8_lossy(&old), new.as_deref(), user_spoke)
}

/// The id of the loop in the state file at `path`.
fn loop_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let state: Value = serde_json::from_str(&text).ok()?;
    state.get("id")?.as_str().map(str::to_string)
}

/// `loops/<id>.json` of the loop whose state was put back.
fn is_archive_of(relative: &str, loop_id: Option<&str>) -> bool {
    let Some(id) = loop_id else {
        return false;
    };
    relative
        .strip_prefix(crate::ralph::loop_state::ARCHIVE_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.strip_suffix(".json"))
        == Some(id)
}

/// The journal record of ralph-hooks writing exactly what is there now.
fn ours<'r>(records: &'r [Record], relative: &str, after: &FileState) -> Option<&'r Record> {
    let wanted = if after.exists() {
        after.content.as_deref()
    } else {
        None
    };
    records
        .iter()
        .rev()
        .find(|r| r.path == relative && r.content.as_deref() == wanted)
}

/// A config file the guard itself put back during this window (for a Bash
/// call running beside another).
fn restored_by_guard(records: &[Record], key: &str, after: &FileState) -> bool {
    after.exists() && ours(records, key, after).is_some()
}

/// Whether a write of ralph-hooks' own to a task file ended or weakened
/// the supervision: the active task closed or cancelled with steps open,
/// open steps dropped, or the pointer moved off a task that was weakened.
/// (The loop's state is judged by [`terms`].)
fn weakens(
    relative: &str,
    before: &FileState,
    path: &Path,
    blobs: &Blobs,
    task_weakened: bool,
) -> bool {
    let old = before
        .content
        .as_deref()
        .filter(|_| before.kept)
        .and_then(|id| blobs.get(id))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let new = std::fs::read_to_string(path).ok();
    if relative == "tasks/active.json" {
        return task_weakened;
    }
    if let Some(name) = relative
        .strip_prefix("tasks/")
        .and_then(|n| n.strip_suffix(".md"))
    {
        let (Some(old), Some(new)) = (old, new) else {
            return false;
        };
        let old = TaskDoc::parse(&old, name);
        let new = TaskDoc::parse(&new, name);
        let open_before: Vec<String> = tasks::steps::open_steps(&old)
            .iter()
            .map(|s| s.id.clone())
            .collect();
        if old.field("Status") != Some(tasks::IN_PROGRESS) || open_before.is_empty() {
            return false;
        }
        let status = new.field("Status").unwrap_or_default();
        let still_open = !tasks::steps::open_steps(&new).is_empty();
        let dropped = open_before
            .iter()
            .any(|id| !new.steps().iter().any(|step| &step.id == id));
        return status == tasks::CANCELLED || (status == tasks::COMPLETED && still_open) || dropped;
    }
    false
}

/// A folder on the way to `path`, a file of the project, that writing
/// through would leave the project: the project folder or a folder above
/// it that is a link (Claude Code names the project by its resolved path,
/// so one there is a swap), or a link inside the project that leads out of
/// it (`.claude` swapped for a link to the home folder's: re-attack
/// RA-11, where putting the project's settings back overwrote the user's).
/// Folders that do not exist are made again as real ones.
fn link_on_the_way(ctx: &Ctx, path: &Path) -> Option<PathBuf> {
    let root = ctx.project_root.as_path();
    if !path.starts_with(root) {
        return None;
    }
    for dir in path.ancestors().skip(1) {
        let Ok(metadata) = std::fs::symlink_metadata(dir) else {
            continue;
        };
        if !metadata.file_type().is_symlink() {
            continue;
        }
        if dir.starts_with(root)
            && dir != root
            && let (Ok(target), Ok(real_root)) = (dir.canonicalize(), root.canonicalize())
            && target.starts_with(&real_root)
        {
            continue;
        }
        return Some(dir.to_path_buf());
    }
    None
}

/// Puts `before` back at `path`: its bytes (or link), or, when it did not
/// exist, the new file moved aside (kept for the user to see). State files
/// go through the store's lock, so no hook's read-modify-write interleaves.
fn put_back(
    ctx: &Ctx,
    path: &Path,
    before: &FileState,
    relative: Option<&str>,
    blobs: &Blobs,
) -> Result<(), String> {
    let result = (|| -> anyhow::Result<()> {
        if let Some(link) = link_on_the_way(ctx, path) {
            bail!(
                "{} is a link now, and what it leads to is not written through it",
                escape_controls(&link.to_string_lossy())
            );
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let locked = match relative {
            Some(relative) => Some(ctx.store().lock(relative)?),
            None => None,
        };
        if !before.exists() {
            if std::fs::symlink_metadata(path).is_ok() {
                let aside = aside_name(path, "undone-by-ralph-hooks");
                std::fs::rename(path, &aside)
                    .with_context(|| format!("cannot move {} aside", path.display()))?;
            }
            return Ok(());
        }
        let content = before.content.as_deref().unwrap_or_default();
        if let Some(target) = content.strip_prefix("link:") {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
                std::fs::rename(path, aside_name(path, "undone-by-ralph-hooks"))?;
            } else {
                let _ = std::fs::remove_file(path);
            }
            std::os::unix::fs::symlink(target, path)
                .with_context(|| format!("cannot make the link {} again", path.display()))?;
            return Ok(());
        }
        if !before.kept {
            bail!(
                "no copy was kept (larger than {} MiB)",
                snapshot::MAX_KEPT_FILE / (1024 * 1024)
            );
        }
        let bytes = blobs
            .get(content)
            .context("its copy is missing from the watch folder")?;
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            std::fs::rename(path, aside_name(path, "undone-by-ralph-hooks"))?;
        }
        match &locked {
            Some(locked) => locked.save_bytes(&bytes)?,
            None => {
                journal::record(
                    journal::watch_dir(&ctx.state_root).as_deref(),
                    &path.to_string_lossy(),
                    Some(&bytes),
                );
                if let Err(error) = crate::state::write_atomic(path, &bytes) {
                    // The folder made unwritable (`chmod 555 .claude`, or
                    // immutable as root) while the file itself was written
                    // in place: it is put back in place too (guard attack
                    // W-6, W-10).
                    write_in_place(path, &bytes)
                        .map_err(|in_place| error.context(format!("nor in place: {in_place}")))?;
                }
            }
        }
        if let Some(sig) = &before.sig {
            let _ =
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(sig.mode & 0o7777));
        }
        Ok(())
    })();
    result.map_err(|error| format!("{error:#}"))
}

/// Rewrites the regular file at `path` where it stands (same inode).
fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// What Claude and the user are told, and what is logged.
fn report(
    ctx: &Ctx,
    window: &Window,
    changes: &[Change],
    pushes: &[refs::Push],
    publishes: &[String],
    made_up: bool,
) -> Option<Told> {
    if changes.is_empty() && pushes.is_empty() && publishes.is_empty() {
        return None;
    }
    let mut for_claude: Vec<String> = Vec::new();
    let mut for_user: Vec<String> = Vec::new();
    if !changes.is_empty() {
        let listed: Vec<String> = changes
            .iter()
            .map(|change| {
                let path = shown(&ctx.display_path(Path::new(&change.path)));
                let note = match &change.note {
                    Some(note) => format!(" — {}", shown(note)),
                    None => String::new(),
                };
                match &change.restored {
                    Ok(()) => format!("{path} ({}, put back){note}", change.what),
                    Err(why) => format!(
                        "{path} ({}, could NOT be put back: {}){note}",
                        change.what,
                        shown(why)
                    ),
                }
            })
            .collect();
        let outcome = if changes.iter().all(|change| change.restored.is_ok()) {
            "They were restored."
        } else {
            "Those marked NOT put back are still changed or missing; the hooks try again at every later hook. If the disk is full, free space in your own files (build output, temp files)."
        };
        for_claude.push(format!(
            "ralph-hooks guard: your last command changed files that supervise this work: {}. {outcome} While a Ralph loop or a task continuation runs unattended, the hooks' state, their config and Claude Code's settings are not yours to change; carry on with the work itself.",
            listed.join("; ")
        ));
        let mut told = format!(
            "ralph-hooks guard: a Bash command (`{}`) changed {}.",
            shown(&cap(&window.command, 200)),
            listed.join("; ")
        );
        if changes.iter().any(|change| change.note.is_some()) {
            // A change from the user's own terminal while the agent's
            // command ran looks the same as the agent's.
            told.push_str(
                " If you changed the loop or the task from your own terminal meanwhile, do it again now.",
            );
        }
        for_user.push(told);
        let files: Vec<Value> = changes
            .iter()
            .map(|change| {
                json!({"path": ctx.display_path(Path::new(&change.path)), "change": change.what,
                       "restored": change.restored.is_ok()})
            })
            .collect();
        let _ = ctx.log_event(
            "guard_event",
            ("command", &cap(&window.command, 400)),
            json!({"event": "protected_restored", "files": files}),
        );
    }
    if !pushes.is_empty() || !publishes.is_empty() {
        let mut seen: Vec<String> = pushes
            .iter()
            .map(|push| format!("pushed {}", shown(&push.describe())))
            .collect();
        seen.extend(
            publishes
                .iter()
                .map(|what| format!("published {}", shown(what))),
        );
        let what = seen.join("; ");
        let paused = pause(ctx, &what);
        for_user.push(format!(
            "ralph-hooks guard: while the work ran unattended, the agent {what}. A push or a publish cannot be undone. {paused}"
        ));
        for_claude.push(format!(
            "ralph-hooks guard: you {what} while the work ran unattended. Publishing is the user's decision. {paused} Stop here and tell the user exactly what you published and why."
        ));
        let _ = ctx.log_event(
            "guard_event",
            ("command", &cap(&window.command, 400)),
            json!({"event": "publish_detected", "pushes": pushes.iter().map(|p| json!({
                "remote": p.remote, "branch": p.branch, "old": p.old, "new": p.new, "url": p.url})).collect::<Vec<_>>(),
                "publishes": publishes}),
        );
    }
    if made_up {
        // Told at another call's hook: say which command it was about.
        for line in &mut for_claude {
            line.push_str(&format!(
                " (This was found for an earlier command, `{}`, whose own check did not run.)",
                shown(&cap(&window.command, 200))
            ));
        }
    }
    Some(Told {
        for_claude,
        for_user,
    })
}

/// Pauses the loop (and this session's task continuation); says what was done.
fn pause(ctx: &Ctx, what: &str) -> String {
    let mut done = Vec::new();
    match crate::ralph::loops::pause_by_guard(ctx, what) {
        Ok(Some(state)) => done.push(format!(
            "The Ralph loop {} is PAUSED (by the guard); `ralph-hooks loop resume` continues it.",
            state.id
        )),
        Ok(None) => {}
        Err(error) => done.push(shown(&format!("The loop could not be paused: {error:#}."))),
    }
    if tasks::active(ctx.store()).ok().flatten().is_some() {
        match tasks::continuation::pause_for_user(ctx) {
            Ok(()) => done.push("Task continuation is paused until the user's next prompt.".into()),
            Err(error) => done.push(shown(&format!(
                "Task continuation could not be paused: {error:#}."
            ))),
        }
    }
    done.join(" ")
}

/// Text from the disk, a command or a tool as it may appear in a message:
/// a control character (a newline forging a line, an ESC sequence reaching
/// the user's terminal) is written as an escape.
fn shown(text: &str) -> String {
    escape_controls(text).into_owned()
}

fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// The effect check's output and the diagnostics' as one PostToolUse
/// answer. A diagnostics fault does not hide what the check did: it is
/// said on stderr and the check's output stands.
pub fn combined(
    first: HookOutput,
    second: anyhow::Result<HookOutput>,
) -> anyhow::Result<HookOutput> {
    if first.is_silent() {
        return second;
    }
    let second = match second {
        Ok(second) => second,
        Err(error) => {
            eprintln!("ralph-post-tool-lsp-diagnostic: {error:#}");
            return Ok(first);
        }
    };
    Ok(merge(first, second))
}

fn merge(first: HookOutput, second: HookOutput) -> HookOutput {
    if second.is_silent() {
        return first;
    }
    let join = |a: Option<String>, b: Option<String>| match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    };
    let mut out = second.clone();
    out.system_message = join(first.system_message, second.system_message);
    out.reason = join(first.reason, second.reason);
    out.decision = first.decision.or(second.decision);
    let context = join(
        first
            .hook_specific_output
            .as_ref()
            .and_then(|h| h.additional_context.clone()),
        second
            .hook_specific_output
            .as_ref()
            .and_then(|h| h.additional_context.clone()),
    );
    if let Some(context) = context {
        let mut specific = out
            .hook_specific_output
            .take()
            .or(first.hook_specific_output)
            .unwrap_or_default();
        specific.hook_event_name = EventName::PostToolUse.as_str();
        specific.additional_context = Some(context);
        out.hook_specific_output = Some(specific);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // See: re-attack finding RA-11: `.claude` swapped for a link to the home
    // folder's by a background process; putting the project's settings back
    // wrote through the link over the user's own.
    #[test]
    fn a_link_out_of_the_project_on_the_way_is_not_written_through() {
        let base = std::env::temp_dir().join(format!("ralph-link-way-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let project = base.join("proj");
        let home_claude = base.join("home/.claude");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::create_dir_all(&home_claude).unwrap();
        let ctx = Ctx::for_cli(Some(&project)).unwrap();
        let settings = project.join(".claude/settings.json");
        assert_eq!(link_on_the_way(&ctx, &settings), None);

        std::fs::rename(project.join(".claude"), project.join(".claude-old")).unwrap();
        std::os::unix::fs::symlink(&home_claude, project.join(".claude")).unwrap();
        assert_eq!(
            link_on_the_way(&ctx, &settings),
            Some(project.join(".claude"))
        );
        let before = FileState::absent(Class::Config);
        let blobs = Blobs::new(base.join("blobs"));
        assert!(put_back(&ctx, &settings, &before, None, &blobs).is_err());

        // A link that stays inside the project is written through.
        std::fs::remove_file(project.join(".claude")).unwrap();
        std::os::unix::fs::symlink(project.join(".claude-old"), project.join(".claude")).unwrap();
        assert_eq!(link_on_the_way(&ctx, &settings), None);

        // The project folder itself a link now.
        std::fs::remove_file(project.join(".claude")).unwrap();
        std::fs::rename(&project, base.join("proj-old")).unwrap();
        std::os::unix::fs::symlink(base.join("home"), &project).unwrap();
        assert_eq!(link_on_the_way(&ctx, &settings), Some(project.clone()));
        let _ = std::fs::remove_dir_all(&base);
    }
}
