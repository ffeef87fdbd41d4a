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

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::snapshot::{Blobs, FileState, Manifest};
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookOutput};
use crate::state::FileLock;
use crate::state::journal;

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
    /// Path and why it still fails.
    pub failing: Vec<(String, String)>,
}

impl Outcome {
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.failing.is_empty()
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
        let restored = (!self.restored.is_empty()).then(|| {
            format!(
                "ralph-hooks guard: put back at last (an earlier put-back had failed): {}.",
                self.restored
                    .iter()
                    .map(|p| show(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
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
pub fn retry(ctx: &Ctx) -> Option<Outcome> {
    let watch = journal::watch_dir(&ctx.state_root)?;
    if !watch.join(FILE).exists() {
        return None;
    }
    match retry_locked(ctx, &watch) {
        Ok(outcome) => Some(outcome).filter(|o| !o.is_empty()),
        Err(error) => {
            eprintln!("ralph-hooks guard: cannot retry the pending put-backs: {error:#}");
            None
        }
    }
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
