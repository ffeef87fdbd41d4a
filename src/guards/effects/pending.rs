//! Put-backs that failed, kept until they succeed. A command that deletes
//! the hooks' state and then fills the disk leaves the put-back failing
//! (`No space left on device`); the copy it needs would otherwise be
//! collected with the snapshot, and nothing would try again. So each failed
//! put-back is recorded in the watch folder (`pending.json`, with the
//! snapshot's reading of the file and its kept copy), and every later hook
//! of any kind tries again first ([`retry`]), telling Claude and the user
//! what is still missing and what came back.
//!
//! An entry is dropped once the file is as the snapshot saw it, or when
//! ralph-hooks itself wrote the path since with other content (the user's
//! `loop cancel` from a terminal, a stop phrase): that write is newer than
//! what the entry would put back. The watch folder is not removed while an
//! entry is pending, even when the work is no longer unattended.
//!
//! The same entry point first puts back what changed between hooks
//! ([`check_late`]: a background process writing after a Bash call's check).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::snapshot::{self, Blobs, Class, FileState, Manifest};
use super::{Change, PROMPT_HOOK};
use crate::guards::{GuardConfig, Supervision};
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookOutput};
use crate::state::FileLock;
use crate::state::journal;
use crate::state::journal::BASE_FILE;

/// The record, in the watch folder.
pub const FILE: &str = "pending.json";

/// One file whose put-back failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Absolute.
    pub path: String,
    /// What the snapshot saw (a kept copy's id, or absent).
    pub before: FileState,
    /// The path under the state root, for a state file.
    pub relative: Option<String>,
    /// The command that changed it.
    pub command: String,
    /// When the put-back first failed.
    pub since_ms: u64,
    /// Why the last try failed.
    pub error: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pending {
    pub entries: Vec<Entry>,
}

impl Pending {
    pub fn read(watch: &Path) -> Pending {
        super::read_json(&watch.join(FILE)).unwrap_or_default()
    }

    /// The snapshot readings the entries need, for the blob collector.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            taken_ms: 0,
            files: self
                .entries
                .iter()
                .map(|entry| (entry.path.clone(), entry.before.clone()))
                .collect(),
        }
    }

    /// Saves the record, or removes it when nothing is pending.
    fn save(&self, watch: &Path) -> anyhow::Result<()> {
        let path = watch.join(FILE);
        if self.entries.is_empty() {
            match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error.into()),
            }
        } else {
            super::write_json(&path, self)
        }
    }
}

/// Adds failed put-backs (the caller holds the watch folder's lock). An
/// entry for a path already pending keeps its older reading: that is what
/// the file was before the first command.
pub fn record(watch: &Path, failed: Vec<Entry>) -> anyhow::Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let mut pending = Pending::read(watch);
    for entry in failed {
        if !pending.entries.iter().any(|e| e.path == entry.path) {
            pending.entries.push(entry);
        }
    }
    pending.save(watch)
}

/// What a retry did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub restored: Vec<String>,
    /// Changed since the guard's last look, outside any checked command,
    /// and put back now.
    pub late: Vec<String>,
    /// Path and why it still fails.
    pub failing: Vec<(String, String)>,
}

impl Outcome {
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.failing.is_empty() && self.late.is_empty()
    }

    /// Whether the hooks' own state (not only a config file) is still
    /// missing or changed.
    pub fn state_still_failing(&self, ctx: &Ctx) -> bool {
        self.failing
            .iter()
            .any(|(path, _)| Path::new(path).starts_with(&ctx.state_root))
    }

    fn lines(&self, ctx: &Ctx) -> (Option<String>, Option<String>) {
        let show = |path: &str| {
            crate::util::text::escape_controls(&ctx.display_path(Path::new(path))).into_owned()
        };
        let mut said = Vec::new();
        if !self.late.is_empty() {
            said.push(format!(
                "ralph-hooks guard: files that supervise this work were changed outside any checked command (a process left running in the background?) and were put back: {}.",
                self.late.iter().map(|p| show(p)).collect::<Vec<_>>().join(", ")
            ));
        }
        if !self.restored.is_empty() {
            said.push(format!(
                "ralph-hooks guard: put back at last (an earlier put-back had failed): {}.",
                self.restored
                    .iter()
                    .map(|p| show(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let restored = (!said.is_empty()).then(|| said.join("\n"));
        let failing = (!self.failing.is_empty()).then(|| {
            format!(
                "ralph-hooks guard: files that supervise this work are still changed or missing and could NOT be put back: {}. Tried again at every hook; free disk space (or fix what the error names) so they can be restored.",
                self.failing
                    .iter()
                    .map(|(p, why)| format!("{} ({})", show(p), crate::util::text::escape_controls(why)))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        });
        (restored, failing)
    }

    /// The user is told both; Claude (as context, where the event takes
    /// it) is told what is still missing and not to touch it.
    pub fn annotate(&self, ctx: &Ctx, mut output: HookOutput, event: EventName) -> HookOutput {
        if self.is_empty() {
            return output;
        }
        let (restored, failing) = self.lines(ctx);
        for line in restored.iter().chain(failing.iter()) {
            output = output.append_system_message(line);
        }
        let Some(failing) = failing else {
            return output;
        };
        let for_claude = format!(
            "{failing} Do not change or delete the hooks' state, their config or Claude Code's settings; if the disk is full, free space in your own files (build output, temp files) so the hooks can restore them."
        );
        let takes_context = matches!(
            event,
            EventName::PostToolUse
                | EventName::UserPromptSubmit
                | EventName::SessionStart
                | EventName::PreToolUse
        );
        if !takes_context {
            return output;
        }
        match output.hook_specific_output.as_mut() {
            Some(specific) if specific.permission_decision.is_some() => {}
            Some(specific) => {
                let joined = match specific.additional_context.take() {
                    Some(own) => format!("{own}\n{for_claude}"),
                    None => for_claude,
                };
                specific.additional_context = Some(joined);
            }
            None => {
                let message = output.system_message.take();
                output = HookOutput::context(event, for_claude);
                output.system_message = message;
            }
        }
        output
    }
}

/// Tries every pending put-back again; `None` when nothing is pending
/// (the cost then is one `stat`). A failure to read or lock the record is
/// said on stderr and leaves it for the next hook.
///
/// First, changes that landed since the guard's last look (a background
/// process writing after a Bash call's check) are put back
/// ([`check_late`]); what fails there becomes pending and is reported
/// with the rest.
pub fn retry(ctx: &Ctx) -> Option<Outcome> {
    let mut late = check_late(ctx).map(|o| o.restored).unwrap_or_default();
    let watch = journal::watch_dir(&ctx.state_root)?;
    // What the watcher put back since the last hook is told now.
    for path in took_from_watcher(&watch) {
        if !late.contains(&path) {
            late.push(path);
        }
    }
    let mut outcome = if watch.join(FILE).exists() {
        match retry_locked(ctx, &watch) {
            Ok(outcome) => outcome,
            Err(error) => {
                eprintln!("ralph-hooks guard: cannot retry the pending put-backs: {error:#}");
                Outcome::default()
            }
        }
    } else {
        Outcome::default()
    };
    outcome.late = late;
    Some(outcome).filter(|o| !o.is_empty())
}

/// What the watcher put back, for the next hook to tell.
const TOLD: &str = "watcher-told.json";

/// Keeps `paths` (put back by the watcher, with no hook running) for the
/// next hook to tell Claude and the user.
pub fn tell_at_next_hook(watch: &Path, paths: Vec<String>) {
    let Ok(_lock) = FileLock::acquire(&watch.join("lock")) else {
        return;
    };
    let mut told: Vec<String> = super::read_json(&watch.join(TOLD)).unwrap_or_default();
    for path in paths {
        if !told.contains(&path) {
            told.push(path);
        }
    }
    let _ = super::write_json(&watch.join(TOLD), &told);
}

/// The watcher's record of what it put back (one `stat` when there is
/// none), taken under the watch folder's lock.
fn took_from_watcher(watch: &Path) -> Vec<String> {
    let path = watch.join(TOLD);
    if !path.exists() {
        return Vec::new();
    }
    let Ok(_lock) = FileLock::acquire(&watch.join("lock")) else {
        return Vec::new();
    };
    let told: Vec<String> = super::read_json(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    told
}

fn retry_locked(ctx: &Ctx, watch: &Path) -> anyhow::Result<Outcome> {
    let _lock = FileLock::acquire(&watch.join("lock"))?;
    let mut pending = Pending::read(watch);
    let blobs = Blobs::new(watch.join("blobs"));
    let mut outcome = Outcome::default();
    let mut kept = Vec::new();
    for mut entry in std::mem::take(&mut pending.entries) {
        let path = PathBuf::from(&entry.path);
        if written_by_us_since(watch, &entry) || already_back(&path, &entry.before) {
            continue;
        }
        match super::put_back(ctx, &path, &entry.before, entry.relative.as_deref(), &blobs) {
            Ok(()) => outcome.restored.push(entry.path.clone()),
            Err(why) => {
                entry.error = why.clone();
                outcome.failing.push((entry.path.clone(), why));
                kept.push(entry);
            }
        }
    }
    pending.entries = kept;
    pending.save(watch)?;
    if !outcome.restored.is_empty() {
        let _ = ctx.log_event(
            "guard_event",
            ("command", &outcome.restored.join(" ")),
            serde_json::json!({"event": "pending_restored", "files": outcome.restored}),
        );
    }
    Ok(outcome)
}

/// ralph-hooks wrote the path since the put-back first failed, with other
/// content than the put-back would (the guard's own failed tries write the
/// same content and do not count).
fn written_by_us_since(watch: &Path, entry: &Entry) -> bool {
    let name = entry.relative.as_deref().unwrap_or(&entry.path);
    journal::read_since(watch, entry.since_ms)
        .iter()
        .any(|record| record.path == name && record.content != entry.before.content)
}

/// The file is as the snapshot saw it (by content), or gone as it was.
fn already_back(path: &Path, before: &FileState) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return !before.exists() && std::fs::symlink_metadata(path).is_err();
    };
    before.content.as_deref() == Some(journal::content_id(&bytes).as_str())
}

/// At Stop: what the retry did goes to the user; while the hooks' own
/// state is still missing or changed, a stop the loop would let through is
/// blocked instead (the loop may be invisible because its state is the
/// file that could not be put back), with the reason telling Claude to
/// free space — also when the Stop's own work failed (on a full disk it
/// cannot write either; its error goes to the user). Claude Code's block
/// cap bounds this like any block.
pub fn at_stop(
    ctx: &Ctx,
    outcome: Option<Outcome>,
    output: anyhow::Result<HookOutput>,
) -> anyhow::Result<HookOutput> {
    let Some(outcome) = outcome else {
        return output;
    };
    let (restored, failing) = outcome.lines(ctx);
    let still_failing = outcome.state_still_failing(ctx);
    let mut output = match output {
        Ok(output) => output,
        Err(error) if still_failing => HookOutput::silent()
            .with_system_message(format!("ralph-stop-loop-controller: {error:#}")),
        Err(error) => return Err(error),
    };
    if still_failing
        && output.decision.is_none()
        && let Some(failing) = &failing
    {
        let said = output.system_message.take();
        output = HookOutput::block(format!(
            "{failing} Do not stop yet: free disk space in your own files (build output, temp files, what your last commands wrote) so the hooks can restore their state, then carry on with the work."
        ));
        output.system_message = said;
    }
    for line in restored.iter().chain(failing.iter()) {
        output = output.append_system_message(line);
    }
    Ok(output)
}

// ---- Changes between hooks ----
//
// Changes to the protected set that land between the Bash checks: a
// detached process (`setsid sh -c 'sleep 2; …'`) writes after the Bash
// call's check has run, or while no Bash call is open at all. The
// before/after bracket of a Bash call cannot see those, and the next
// call's snapshot would take them as the new normal.
//
// Such a write comes from a process an earlier call left running; the
// check after each call notes those ([`super::background`]). While one of
// them was alive at the guard's last look, every hook, before it reads any
// state, compares the protected set with the last snapshot (`base.json`;
// an unchanged `lstat` signature costs one `stat`, only a changed file is
// read and hashed). Without such a process it costs one `stat` of the
// record and a change between hooks stands: the user's own edit from a
// terminal, or the loop ended by hand, is not undone. While a Bash call is
// open nothing is done here: that call's own check sees everything since
// its snapshot and names the command.
//
// What changed outside ralph-hooks' own journaled writes is put back the
// way the check after a command does it: a state file (a `loop.json`
// overwritten with `{}` is put back from its copy, before a reader could
// call it corrupt and move it aside), a log that did not only grow, and —
// while the work is still unattended once the state is back — a config or
// settings file (a late `{"disableAllHooks": true}` in
// `.claude/settings.local.json`). A put-back that fails joins the pending
// ones. The base then becomes what is on disk, and the processes that
// had ended before the look began are forgotten.

/// Records this much older than the base still count as ours (a hook's
/// record lands just before its write).
const JOURNAL_SLACK_MS: u64 = 2000;

/// Compares and puts back; `None` when no process an earlier call left
/// running was alive at the last look (one `stat`) or nothing changed. A fault is said on stderr and changes
/// nothing.
fn check_late(ctx: &Ctx) -> Option<Outcome> {
    compare_between_hooks(ctx, false)
}

/// [`check_late`], also while a Bash call is open when `during_a_call`.
fn compare_between_hooks(ctx: &Ctx, during_a_call: bool) -> Option<Outcome> {
    let watch = journal::watch_dir(&ctx.state_root)?;
    if !watch.join(super::background::FILE).exists()
        || !watch.join(BASE_FILE).exists()
        || (!during_a_call && bash_call_open(&watch))
    {
        return None;
    }
    match check_locked(ctx, &watch) {
        Ok(outcome) => Some(outcome).filter(|o| !o.is_empty()),
        Err(error) => {
            eprintln!(
                "ralph-hooks guard: cannot compare the protected files with the last snapshot: {error:#}"
            );
            None
        }
    }
}

/// [`check_late`] for the watcher ([`super::watcher`]): also while a Bash
/// call is open — a write that switches the hooks off would take effect
/// before that call's own check. What it put back is in `late`.
pub fn put_back_now(ctx: &Ctx) -> Option<Outcome> {
    compare_between_hooks(ctx, true).map(|outcome| Outcome {
        late: outcome.restored,
        restored: Vec::new(),
        failing: outcome.failing,
    })
}

/// A Bash call is between its Pre and its Post: its own check compares
/// against the snapshot taken before it, and says which command did what.
/// A late write landing meanwhile is caught there too.
fn bash_call_open(watch: &Path) -> bool {
    let now = super::now_ms();
    super::window_files(watch).iter().any(|path| {
        super::read_json::<super::Window>(path)
            .is_some_and(|w| now.saturating_sub(w.started_ms) < super::STALE_WINDOW_MS)
    })
}

fn check_locked(ctx: &Ctx, watch: &Path) -> anyhow::Result<Outcome> {
    let _lock = FileLock::acquire(&watch.join("lock"))?;
    let Some(base) = super::read_json::<Manifest>(&watch.join(BASE_FILE)) else {
        return Ok(Outcome::default());
    };
    let started = super::now_ms();
    // Only a process that had ended before this look began wrote all it
    // wrote before it: one that ends while the look runs may have written
    // after the snapshot, and stays noted for the next look.
    let ended_before = super::background::ended(watch);
    let records = journal::read_since(watch, base.taken_ms.saturating_sub(JOURNAL_SLACK_MS));
    let config = GuardConfig::load(&ctx.project_root);
    let set = config.protected_set(ctx);
    let mut paths = super::paths_to_watch(ctx, &set);
    for (key, state) in &base.files {
        let path = PathBuf::from(key);
        if !paths.iter().any(|(p, _)| *p == path) {
            paths.push((path, state.class));
        }
    }
    let mut blobs = Blobs::new(watch.join("blobs"));
    let mut now = snapshot::take(&paths, Some(&base), &mut blobs, started);
    let user_spoke = records.iter().any(|r| r.writer == PROMPT_HOOK);
    let mut changes: Vec<Change> = Vec::new();
    let mut failed: Vec<Entry> = Vec::new();
    // State and logs first: whether the work is still unattended is read
    // from the state as it is once put back.
    let mut config_changed: Vec<(String, FileState)> = Vec::new();
    let keys: Vec<String> = now.files.keys().cloned().collect();
    for key in keys {
        let before = base
            .files
            .get(&key)
            .cloned()
            .unwrap_or_else(|| FileState::absent(now.files[&key].class));
        let after = now.files[&key].clone();
        if before.same_as(&after) {
            // An empty file where there was none (or the other way round)
            // is no change, but the base keeps what it had: a late write
            // creates its file empty before it fills it, and a look
            // between the two must not make the empty file the state the
            // filled one is put back to (it stood, empty, where the hooks
            // had none).
            if before.exists() != after.exists() {
                now.files.insert(key.clone(), before);
            }
            continue;
        }
        let path = PathBuf::from(&key);
        let relative = path
            .strip_prefix(&ctx.state_root)
            .ok()
            .map(|r| r.to_string_lossy().into_owned());
        let undo = match before.class {
            Class::Config => {
                if !super::restored_by_guard(&records, &key, &after) {
                    config_changed.push((key.clone(), before));
                }
                continue;
            }
            Class::Log => {
                !snapshot::only_appended(&path, &before, &after)
                    && super::ours(&records, relative.as_deref().unwrap_or(&key), &after).is_none()
            }
            Class::State => {
                let name = relative.clone().unwrap_or_else(|| key.clone());
                // Judged as the check after a Bash command judges it: by what
                // the write did (the loop's terms), not by who it claims to
                // be — but for a hook binary's own writes (its name is built
                // in, not taken from `argv[0]`).
                match super::ours(&records, &name, &after) {
                    None => true,
                    // Between hooks, the hooks' own writes are theirs to
                    // make: a Stop counts an iteration, ends the loop, a
                    // prompt pauses it (guard attack W-4: they were put
                    // back). A hook fed by the agent's command writes
                    // nothing (see `crate::ralph::turns::forged`).
                    Some(record) if journal::HOOK_WRITERS.contains(&record.writer.as_str()) => {
                        false
                    }
                    Some(_) if name == crate::ralph::loop_state::LOOP_FILE => {
                        super::loop_weakened(&before, &path, &blobs, user_spoke).is_some()
                    }
                    Some(_) if !user_spoke => super::weakens(&name, &before, &path, &blobs, false),
                    Some(_) => false,
                }
            }
        };
        if undo {
            put_back(
                ctx,
                &key,
                &before,
                relative,
                &blobs,
                &mut now,
                &mut changes,
                &mut failed,
                started,
            );
        }
    }
    if !config_changed.is_empty() {
        let unattended = Supervision::read(ctx)
            .map(|s| s.unattended())
            .unwrap_or(true);
        if unattended {
            for (key, before) in config_changed {
                put_back(
                    ctx,
                    &key,
                    &before,
                    None,
                    &blobs,
                    &mut now,
                    &mut changes,
                    &mut failed,
                    started,
                );
            }
        }
    }
    record(watch, failed)?;
    super::write_json(&watch.join(BASE_FILE), &now)?;
    // A process that has ended wrote what it wrote before this look.
    super::background::forget(watch, &ended_before);
    let mut outcome = Outcome::default();
    for change in &changes {
        match &change.restored {
            Ok(()) => outcome.restored.push(change.path.clone()),
            Err(why) => outcome.failing.push((change.path.clone(), why.clone())),
        }
    }
    if !changes.is_empty() {
        let files: Vec<serde_json::Value> = changes
            .iter()
            .map(|change| {
                serde_json::json!({"path": ctx.display_path(Path::new(&change.path)),
                    "change": change.what, "restored": change.restored.is_ok()})
            })
            .collect();
        let _ = ctx.log_event(
            "guard_event",
            ("command", "(between hooks)"),
            serde_json::json!({"event": "protected_restored", "late": true, "files": files}),
        );
    }
    Ok(outcome)
}

#[allow(clippy::too_many_arguments)]
fn put_back(
    ctx: &Ctx,
    key: &str,
    before: &FileState,
    relative: Option<String>,
    blobs: &Blobs,
    now: &mut Manifest,
    changes: &mut Vec<Change>,
    failed: &mut Vec<Entry>,
    started: u64,
) {
    let path = Path::new(key);
    let after_exists = now.files.get(key).is_some_and(|f| f.exists());
    let what = match (before.exists(), after_exists) {
        (true, false) => "deleted",
        (false, true) => "created",
        _ => "changed",
    };
    let restored = super::put_back(ctx, path, before, relative.as_deref(), blobs);
    match &restored {
        Ok(()) => {
            now.files.insert(key.to_string(), before.clone());
        }
        Err(why) if !before.exists() || before.kept => failed.push(Entry {
            path: key.to_string(),
            before: before.clone(),
            relative: relative.clone(),
            command: "(a change between hooks)".into(),
            since_ms: started,
            error: why.clone(),
        }),
        Err(_) => {}
    }
    changes.push(Change {
        path: key.to_string(),
        what,
        restored,
        note: None,
    });
}
