//! Command state: the results of finished phases and the resume
//! states of interrupted multi-phase commands, both in `command-state/`
//! under the state root.
//!
//! - A phase result, `<phase>-<timestamp>.json`, holds `phase`, `timestamp`,
//!   `status`, `outputs`, `files_created` and `next_phase`; templates take
//!   their `{{VARS}}` from its outputs ([`crate::orchestrator::templates`]).
//! - A resume state, `<command>-<spec_id>-<timestamp>.json`, holds `command`,
//!   `spec_id`, `current_phase`, `completed_steps`, `pending_steps`,
//!   `timestamp`, `expiry` and `context`. `<command>` in the name is the part
//!   after the last `:` (`alfred:2-run` → `2-run`), as in
//!   `2-run-SPEC-XXX-*.json`.
//! - A state is valid for 30 days. An expired one is refused with a warning
//!   and invalidated (removed); session start removes files older than that
//!   and keeps at most 50.
//! - Writes go through the [`Store`](crate::state::Store): atomic, under the
//!   file's lock. A file we cannot parse is moved aside and reported; a save
//!   that fails leaves the previous state in place and says so.
//!
//! All time comes from `ctx.now()`, which `RALPH_HOOKS_NOW` pins in tests.

use std::fmt::Write as _;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hook::ctx::Ctx;
use crate::state::Versioned;
use crate::state::ids;

pub const DIR: &str = "command-state";
/// How long a resume state (and any command-state file) stays valid.
pub const EXPIRY_DAYS: i64 = 30;
/// How many files `command-state/` keeps at most (seed 000, Risk 2).
pub const MAX_FILES: usize = 50;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub phase: String,
    pub timestamp: DateTime<Utc>,
    /// `completed`, or `error` / `interrupted` when the phase stopped early.
    pub status: String,
    #[serde(default)]
    pub outputs: Map<String, Value>,
    #[serde(default)]
    pub files_created: Vec<String>,
    #[serde(default)]
    pub next_phase: Option<String>,
}

impl Versioned for PhaseResult {
    const VERSION: u64 = 1;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeState {
    pub command: String,
    pub spec_id: String,
    pub current_phase: String,
    #[serde(default)]
    pub completed_steps: Vec<String>,
    #[serde(default)]
    pub pending_steps: Vec<String>,
    pub timestamp: DateTime<Utc>,
    pub expiry: DateTime<Utc>,
    #[serde(default)]
    pub context: Map<String, Value>,
}

impl Versioned for ResumeState {
    const VERSION: u64 = 1;
}

impl ResumeState {
    /// The command's name in file names: after the last `:`.
    pub fn short_command(&self) -> &str {
        short_command(&self.command)
    }

    /// When it stops being valid: its `expiry`, and never later than 30 days
    /// after it was saved (a hand-edited expiry does not extend it).
    pub fn valid_until(&self) -> DateTime<Utc> {
        self.expiry
            .min(self.timestamp + Duration::days(EXPIRY_DAYS))
    }

    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        now > self.valid_until()
    }

    fn names(&self, command: &str) -> bool {
        self.command == command || self.short_command() == short_command(command)
    }
}

pub fn short_command(command: &str) -> &str {
    command.rsplit(':').next().unwrap_or(command)
}

/// The `YYYYMMDDTHHMMSSZ` stamp in file names.
fn stamp(time: DateTime<Utc>) -> String {
    time.format("%Y%m%dT%H%M%SZ").to_string()
}

pub fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// One file of `command-state/`, parsed.
#[derive(Debug, Clone)]
pub enum Entry {
    Phase(PhaseResult),
    Resume(ResumeState),
}

impl Entry {
    fn timestamp(&self) -> DateTime<Utc> {
        match self {
            Entry::Phase(phase) => phase.timestamp,
            Entry::Resume(state) => state.timestamp,
        }
    }
}

/// Reads every command-state file (oldest first), moving corrupt ones aside.
pub fn load_all(ctx: &Ctx) -> anyhow::Result<Vec<(String, Entry)>> {
    let mut entries = Vec::new();
    for name in ctx.store().list_dir(DIR)? {
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        // A directory is not a document and is left alone; anything else
        // under a `.json` name that is not a regular file (a FIFO, a link)
        // is damage: the store's reader refuses it and moves it aside.
        let relative = format!("{DIR}/{name}");
        if std::fs::symlink_metadata(ctx.store().path(&relative)).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        if let Some(entry) = load_entry(ctx, &relative)? {
            entries.push((relative, entry));
        }
    }
    entries.sort_by(|a, b| a.1.timestamp().cmp(&b.1.timestamp()).then(a.0.cmp(&b.0)));
    Ok(entries)
}

/// Loads one file: a resume state when it names a `command`, else a phase
/// result. Missing is `None`; corrupt is moved aside (reported) and `None`.
pub fn load_entry(ctx: &Ctx, relative: &str) -> anyhow::Result<Option<Entry>> {
    // The store reads it again while another program is writing it, and
    // moves it aside (re-checked under its lock) once it stays corrupt.
    let corrupt = |text: &str| match decode_entry(text) {
        Err(Problem::Corrupt(reason)) => Some(reason),
        _ => None,
    };
    let Some(text) = ctx.store().read_text_where(relative, corrupt)? else {
        return Ok(None);
    };
    match decode_entry(&text) {
        Ok(entry) => Ok(Some(entry)),
        Err(Problem::Newer(version)) => bail!(
            "{} has version {version}, newer than this ralph-hooks understands: upgrade ralph-hooks",
            ctx.store().path(relative).display()
        ),
        Err(Problem::Corrupt(_)) => Ok(None),
    }
}

enum Problem {
    Corrupt(String),
    Newer(u64),
}

/// Files written by hand after seed 000 carry no `version`; that is version 1.
fn decode_entry(text: &str) -> Result<Entry, Problem> {
    let value: Value =
        serde_json::from_str(text).map_err(|error| Problem::Corrupt(error.to_string()))?;
    if !value.is_object() {
        return Err(Problem::Corrupt("not a JSON object".into()));
    }
    if let Some(version) = value.get("version").and_then(Value::as_u64)
        && version > 1
    {
        return Err(Problem::Newer(version));
    }
    fn parse<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, Problem> {
        serde_json::from_value(value)
            .map_err(|error| Problem::Corrupt(format!("not a valid {what}: {error}")))
    }
    if value.get("command").is_some() {
        parse(value, "resume state").map(Entry::Resume)
    } else {
        parse(value, "phase result").map(Entry::Phase)
    }
}

// ---------------------------------------------------------------- saving

/// What a save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub relative: String,
    /// Older states of the same command and spec, now replaced.
    pub replaced: Vec<String>,
}

/// How a command-state document reaches its file: `(ctx, relative, text)`.
/// The real one writes through the Store; tests inject a failing one.
pub type Writer<'a> = &'a dyn Fn(&Ctx, &str, &str) -> anyhow::Result<()>;

/// The Store's atomic write under the file's lock.
pub fn store_writer(ctx: &Ctx, relative: &str, text: &str) -> anyhow::Result<()> {
    ctx.store().lock(relative)?.save_text(text)
}

/// The pretty JSON a document is saved as, with its `version` stamped.
fn encode<T: Serialize + Versioned>(value: &T) -> anyhow::Result<String> {
    let mut json = serde_json::to_value(value).context("cannot encode the command state")?;
    if let Some(object) = json.as_object_mut() {
        object.insert("version".into(), T::VERSION.into());
    }
    let mut text =
        serde_json::to_string_pretty(&json).context("cannot encode the command state")?;
    text.push('\n');
    Ok(text)
}

/// Where a save that failed keeps what it tried to save (seed 000 UB-5.1):
/// outside the state root, which may be what failed. In the shared temp
/// folder, so it is named for this user and must be theirs and private
/// (see [`crate::util::private_dir`]).
pub fn backup_dir() -> std::path::PathBuf {
    // SAFETY: getuid(2) cannot fail and has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("ralph-hooks-unsaved-{uid}"))
}

/// Keeps `text` in [`backup_dir`] and says where and how to retry; when even
/// that fails, the text itself goes into the message, so nothing is lost.
fn keep_unsaved(relative: &str, text: &str) -> String {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let backup = backup_dir().join(name);
    match write_private(&backup, text) {
        Ok(()) => format!(
            "what it tried to save is kept in {0}; once the state folder is writable, retry with `ralph-hooks resume retry {0}`",
            backup.display()
        ),
        Err(error) => format!(
            "a backup could not be written either ({error:#}); what it tried to save was: {}",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
    }
}

/// Writes `text` to `path` in a private folder, mode 0600, replacing it
/// atomically (a new temp file, never an existing one, then a rename).
fn write_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().context("a backup path has no folder")?;
    crate::util::private_dir::ensure(dir)?;
    crate::state::write_atomic_mode(path, text.as_bytes(), 0o600)
}

/// Saves a resume state as a new file and then removes the older ones of
/// the same command and spec. If the write fails, they stay, what it tried
/// to save is kept as a backup, and the error says both and how to retry.
pub fn save_state(ctx: &Ctx, state: &ResumeState) -> anyhow::Result<Saved> {
    save_state_with(ctx, state, &store_writer)
}

pub fn save_state_with(ctx: &Ctx, state: &ResumeState, write: Writer) -> anyhow::Result<Saved> {
    ids::check("command", state.short_command())?;
    ids::check("spec", &state.spec_id)?;
    let relative = format!(
        "{DIR}/{}-{}-{}.json",
        state.short_command(),
        state.spec_id,
        stamp(state.timestamp)
    );
    let previous: Vec<String> = states(ctx)?
        .into_iter()
        .filter(|(name, old)| {
            *name != relative && old.names(&state.command) && old.spec_id == state.spec_id
        })
        .map(|(name, _)| name)
        .collect();
    let text = encode(state)?;
    if let Err(error) = write(ctx, &relative, &text) {
        let kept = if previous.is_empty() {
            "there was no previous state to keep".to_string()
        } else {
            format!("the previous state is kept in {}", previous.join(", "))
        };
        return Err(error.context(format!(
            "could not save the resume state of {} {} to {}; {kept}; {}",
            state.command,
            state.spec_id,
            relative,
            keep_unsaved(&relative, &text)
        )));
    }
    for old in &previous {
        ctx.store().lock(old)?.remove()?;
    }
    Ok(Saved {
        relative,
        replaced: previous,
    })
}

/// Saves a phase result as `<phase>-<timestamp>.json`; a failed write keeps
/// a backup and says how to retry, as [`save_state`] does.
pub fn save_phase(ctx: &Ctx, phase: &PhaseResult) -> anyhow::Result<String> {
    save_phase_with(ctx, phase, &store_writer)
}

pub fn save_phase_with(ctx: &Ctx, phase: &PhaseResult, write: Writer) -> anyhow::Result<String> {
    ids::check("phase", &phase.phase)?;
    let relative = format!("{DIR}/{}-{}.json", phase.phase, stamp(phase.timestamp));
    let text = encode(phase)?;
    if let Err(error) = write(ctx, &relative, &text) {
        return Err(error.context(format!(
            "could not save the phase result {relative}; {}",
            keep_unsaved(&relative, &text)
        )));
    }
    Ok(relative)
}

/// `resume retry <backup>`: saves a document a failed save kept, with its
/// own timestamp, and removes the backup once it is saved.
pub fn retry(ctx: &Ctx, backup: &std::path::Path) -> anyhow::Result<String> {
    // Any path can be named here (`/dev/zero`, a FIFO): the bounded reader.
    let text = match crate::util::fsread::read_text(
        backup,
        crate::util::fsread::limits::STATE,
        crate::util::fsread::Links::Follow,
    ) {
        Ok(Some(text)) => text,
        Ok(None) => bail!("there is no backup {}", backup.display()),
        Err(error) => bail!("not a backup: {error}"),
    };
    let entry = match decode_entry(&text) {
        Ok(entry) => entry,
        Err(Problem::Newer(version)) => bail!(
            "{} has version {version}, newer than this ralph-hooks understands: upgrade ralph-hooks",
            backup.display()
        ),
        Err(Problem::Corrupt(reason)) => {
            bail!("{} is not a command-state file: {reason}", backup.display())
        }
    };
    let relative = match &entry {
        Entry::Phase(phase) => save_phase(ctx, phase)?,
        Entry::Resume(state) => save_state(ctx, state)?.relative,
    };
    std::fs::remove_file(backup).with_context(|| {
        format!(
            "saved {relative}, but cannot remove the backup {}",
            backup.display()
        )
    })?;
    Ok(relative)
}

// ---------------------------------------------------------------- reading

/// Every resume state, oldest first.
pub fn states(ctx: &Ctx) -> anyhow::Result<Vec<(String, ResumeState)>> {
    Ok(load_all(ctx)?
        .into_iter()
        .filter_map(|(name, entry)| match entry {
            Entry::Resume(state) => Some((name, state)),
            Entry::Phase(_) => None,
        })
        .collect())
}

/// The latest phase result of `phase`.
pub fn latest_phase(ctx: &Ctx, phase: &str) -> anyhow::Result<Option<(String, PhaseResult)>> {
    Ok(load_all(ctx)?
        .into_iter()
        .filter_map(|(name, entry)| match entry {
            Entry::Phase(result) if result.phase == phase => Some((name, result)),
            _ => None,
        })
        .next_back())
}

/// Removes an expired state, saying what happened; the text is the warning.
fn invalidate(ctx: &Ctx, relative: &str, state: &ResumeState) -> anyhow::Result<String> {
    ctx.store().lock(relative)?.remove()?;
    Ok(format!(
        "the saved state of {} {} expired on {} (saved {}; states are valid for {EXPIRY_DAYS} days), so it was invalidated: restart the command from the beginning",
        state.command,
        state.spec_id,
        rfc3339(state.valid_until()),
        rfc3339(state.timestamp)
    ))
}

/// The resume states that can still be resumed, and warnings for the
/// expired ones, which were invalidated on the way.
#[derive(Debug, Default)]
pub struct Resumable {
    pub live: Vec<(String, ResumeState)>,
    pub invalidated: Vec<String>,
}

pub fn resumable(ctx: &Ctx) -> anyhow::Result<Resumable> {
    let mut resumable = Resumable::default();
    for (relative, state) in states(ctx)? {
        if state.is_expired(ctx.now()) {
            resumable
                .invalidated
                .push(invalidate(ctx, &relative, &state)?);
        } else {
            resumable.live.push((relative, state));
        }
    }
    Ok(resumable)
}

/// Session-start housekeeping: removes files older than 30 days (and
/// expired states), then the oldest until at most 50 remain. Returns how
/// many were removed. Touches nothing when `command-state/` does not exist.
pub fn cleanup(ctx: &Ctx) -> anyhow::Result<usize> {
    if !ctx.store().exists(DIR) {
        return Ok(0);
    }
    let cutoff = ctx.now() - Duration::days(EXPIRY_DAYS);
    let mut kept = Vec::new();
    let mut n_removed = 0;
    for (relative, entry) in load_all(ctx)? {
        let stale = match &entry {
            Entry::Resume(state) => state.is_expired(ctx.now()),
            Entry::Phase(phase) => phase.timestamp < cutoff,
        };
        if stale {
            ctx.debug(format_args!(
                "command-state: removing {relative} (older than {EXPIRY_DAYS} days)"
            ));
            ctx.store().lock(&relative)?.remove()?;
            n_removed += 1;
        } else {
            kept.push(relative);
        }
    }
    // `load_all` sorts oldest first, so the surplus is at the front.
    let surplus = kept.len().saturating_sub(MAX_FILES);
    for relative in &kept[..surplus] {
        ctx.debug(format_args!(
            "command-state: removing {relative} (more than {MAX_FILES} files)"
        ));
        ctx.store().lock(relative)?.remove()?;
        n_removed += 1;
    }
    Ok(n_removed)
}

// ---------------------------------------------------------------- the prompt

/// How to continue a command.
#[derive(Debug, Clone, Default)]
pub struct ShowOptions {
    /// Start again from this step (done steps before it are skipped).
    pub from: Option<String>,
    /// Ignore the saved progress and start from the first step.
    pub restart: bool,
}

/// Finds the state of `command` (and `spec`), refusing an expired one.
pub fn find(ctx: &Ctx, command: &str, spec: Option<&str>) -> anyhow::Result<(String, ResumeState)> {
    let mut matching: Vec<(String, ResumeState)> = states(ctx)?
        .into_iter()
        .filter(|(_, state)| state.names(command) && spec.is_none_or(|s| state.spec_id == s))
        .collect();
    let what = match spec {
        Some(spec) => format!("{command} {spec}"),
        None => command.to_string(),
    };
    if matching.is_empty() {
        bail!(
            "no saved state for {what} in {}: nothing to resume, run the command from the start",
            ctx.store().path(DIR).display()
        );
    }
    let mut specs: Vec<&str> = matching.iter().map(|(_, s)| s.spec_id.as_str()).collect();
    specs.sort_unstable();
    specs.dedup();
    if specs.len() > 1 {
        bail!(
            "{command} has saved states for several specs ({}): name one, e.g. `ralph-hooks resume show {command} {}`",
            specs.join(", "),
            specs[0]
        );
    }
    let (relative, state) = matching.pop().expect("not empty");
    if state.is_expired(ctx.now()) {
        bail!("{}", invalidate(ctx, &relative, &state)?);
    }
    Ok((relative, state))
}

/// The prompt that continues `state`: what is done (skip it), where to
/// start, what follows, and the saved context.
pub fn continuation_prompt(state: &ResumeState, options: &ShowOptions) -> anyhow::Result<String> {
    let all_steps: Vec<&String> = state
        .completed_steps
        .iter()
        .chain(&state.pending_steps)
        .collect();
    let start = if options.restart {
        0
    } else if let Some(step) = &options.from {
        all_steps.iter().position(|s| *s == step).with_context(|| {
            format!(
                "step {step:?} is not one of the saved steps of {} {}: {}",
                state.command,
                state.spec_id,
                all_steps
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?
    } else {
        state.completed_steps.len()
    };
    let (done, todo) = all_steps.split_at(start);
    let mut text = String::new();
    if options.restart {
        let _ = writeln!(
            text,
            "Restart `{}` for {} from the beginning; the saved progress is ignored (--restart).",
            state.command, state.spec_id
        );
    } else {
        let _ = writeln!(
            text,
            "Resume `{}` for {} from its saved state (saved {}, valid until {}).",
            state.command,
            state.spec_id,
            rfc3339(state.timestamp),
            rfc3339(state.valid_until())
        );
    }
    let _ = writeln!(text, "Phase at the interruption: {}.", state.current_phase);
    // Steps before the start are skipped, but only the completed ones are
    // "done": `--from` past a pending step must not claim it was done.
    let (completed, never_done): (Vec<&&String>, Vec<&&String>) = done
        .iter()
        .partition(|step| state.completed_steps.contains(step));
    if !completed.is_empty() {
        let _ = writeln!(
            text,
            "Already completed, skip these steps and do not redo them:"
        );
        for step in completed {
            let _ = writeln!(text, "- {step}");
        }
    }
    if !never_done.is_empty() {
        let _ = writeln!(
            text,
            "Never completed, but before the --from step, so skipped as asked (they are NOT done; do them later if they are needed):"
        );
        for step in never_done {
            let _ = writeln!(text, "- {step}");
        }
    }
    match todo.first() {
        None => {
            let _ = writeln!(
                text,
                "Every saved step is completed: nothing is left to resume."
            );
        }
        Some(first) => {
            let how = if options.from.is_some() && !options.restart {
                " (--from)"
            } else {
                ""
            };
            let _ = writeln!(
                text,
                "Continue with step `{first}`{how}, then the remaining steps in this order:"
            );
            for (index, step) in todo.iter().enumerate() {
                let _ = writeln!(text, "{}. {step}", index + 1);
            }
        }
    }
    if !state.context.is_empty() {
        let _ = writeln!(text, "Saved context:");
        for (key, value) in &state.context {
            let shown = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let _ = writeln!(text, "- {key}: {shown}");
        }
    }
    let _ = write!(
        text,
        "After each step, record the progress: `ralph-hooks resume save {} {} --phase <phase> --completed <step,...> --pending <step,...>`.",
        state.command, state.spec_id
    );
    Ok(text)
}

/// One line per resumable command, for `resume list` and session start.
pub fn describe(state: &ResumeState) -> String {
    let total = state.completed_steps.len() + state.pending_steps.len();
    let next = state
        .pending_steps
        .first()
        .map(|step| format!(", next {step}"))
        .unwrap_or_default();
    format!(
        "{} {}: phase {}, {}/{} steps done{next}; saved {}, valid until {}",
        state.command,
        state.spec_id,
        state.current_phase,
        state.completed_steps.len(),
        total,
        rfc3339(state.timestamp),
        rfc3339(state.valid_until())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ResumeState {
        ResumeState {
            command: "alfred:2-run".into(),
            spec_id: "SPEC-AUTH-001".into(),
            current_phase: "implementation".into(),
            completed_steps: vec!["spec_validation".into(), "test_setup".into()],
            pending_steps: vec!["code_implementation".into(), "integration_test".into()],
            timestamp: "2025-11-12T10:30:00Z".parse().unwrap(),
            expiry: "2025-12-12T10:30:00Z".parse().unwrap(),
            context: Map::new(),
        }
    }

    #[test]
    fn the_seed_example_parses_without_a_version() {
        let text = r#"{
  "command": "alfred:2-run",
  "spec_id": "SPEC-AUTH-001",
  "current_phase": "implementation",
  "completed_steps": ["spec_validation", "test_setup"],
  "pending_steps": ["code_implementation", "integration_test"],
  "timestamp": "2025-11-12T10:30:00Z",
  "expiry": "2025-12-12T10:30:00Z",
  "context": {"branch": "feature/SPEC-AUTH-001", "last_commit": "abc123", "files_modified": ["/abs/path/to/auth.py"]}
}"#;
        let Ok(Entry::Resume(parsed)) = decode_entry(text) else {
            panic!("not a resume state")
        };
        assert_eq!(parsed.short_command(), "2-run");
        assert_eq!(parsed.context["last_commit"], "abc123");
        let phase = r#"{"phase": "0-project", "timestamp": "2025-11-12T10:30:00Z", "status": "completed",
  "outputs": {"project_name": "MyProject"}, "files_created": [], "next_phase": "1-plan"}"#;
        assert!(
            matches!(decode_entry(phase), Ok(Entry::Phase(p)) if p.next_phase.as_deref() == Some("1-plan"))
        );
    }

    #[test]
    fn expiry_is_thirty_days_at_most() {
        let mut state = state();
        let day_29 = "2025-12-11T10:30:00Z".parse().unwrap();
        let day_30_and_a_second = "2025-12-12T10:30:01Z".parse().unwrap();
        assert!(!state.is_expired(day_29));
        assert!(state.is_expired(day_30_and_a_second));
        state.expiry = "2030-01-01T00:00:00Z".parse().unwrap();
        assert!(
            state.is_expired(day_30_and_a_second),
            "a later expiry must not extend it"
        );
    }

    #[test]
    fn the_prompt_skips_completed_steps() {
        let text = continuation_prompt(&state(), &ShowOptions::default()).unwrap();
        assert!(
            text.contains(
                "skip these steps and do not redo them:\n- spec_validation\n- test_setup\n"
            ),
            "{text}"
        );
        assert!(text.contains("Continue with step `code_implementation`, then the remaining steps in this order:\n1. code_implementation\n2. integration_test\n"), "{text}");
    }

    #[test]
    fn from_and_restart_move_the_start() {
        let from = ShowOptions {
            from: Some("test_setup".into()),
            restart: false,
        };
        let text = continuation_prompt(&state(), &from).unwrap();
        assert!(
            text.contains(
                "do not redo them:\n- spec_validation\nContinue with step `test_setup` (--from)"
            ),
            "{text}"
        );
        let restart = ShowOptions {
            from: None,
            restart: true,
        };
        let text = continuation_prompt(&state(), &restart).unwrap();
        assert!(!text.contains("skip these"), "{text}");
        assert!(
            text.contains(
                "1. spec_validation\n2. test_setup\n3. code_implementation\n4. integration_test"
            ),
            "{text}"
        );
        let unknown = ShowOptions {
            from: Some("deploy".into()),
            restart: false,
        };
        let error = continuation_prompt(&state(), &unknown).unwrap_err();
        assert_eq!(
            error.to_string(),
            "step \"deploy\" is not one of the saved steps of alfred:2-run SPEC-AUTH-001: spec_validation, test_setup, code_implementation, integration_test"
        );
    }

    /// A fresh project folder under the system temp dir, removed on drop.
    struct Project(std::path::PathBuf);

    impl Project {
        fn new(label: &str) -> Project {
            let dir = std::env::temp_dir().join(format!(
                "ralph-hooks-unit-{label}-{}-{}",
                std::process::id(),
                chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Project(dir)
        }

        fn ctx(&self) -> Ctx {
            Ctx::for_cli(Some(&self.0)).unwrap()
        }
    }

    impl Drop for Project {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn failing_write(_: &Ctx, _: &str, _: &str) -> anyhow::Result<()> {
        bail!("injected write failure: no space left on device")
    }

    /// The backup path a failure message names (`… kept in PATH; …`).
    fn backup_named_in(message: &str) -> std::path::PathBuf {
        let after = message
            .split("what it tried to save is kept in ")
            .nth(1)
            .unwrap_or_else(|| panic!("no backup named in: {message}"));
        std::path::PathBuf::from(after.split(';').next().unwrap())
    }

    #[test]
    fn a_failed_phase_save_keeps_a_backup_and_says_how_to_retry() {
        let project = Project::new("failed-phase-save");
        let ctx = project.ctx();
        let mut result = PhaseResult {
            phase: format!("unit-failed-save-{}", std::process::id()),
            timestamp: "2025-11-12T10:30:00Z".parse().unwrap(),
            status: "completed".into(),
            outputs: Map::new(),
            files_created: vec![],
            next_phase: Some("1-plan".into()),
        };
        result
            .outputs
            .insert("project_name".into(), Value::String("MyProject".into()));
        let error = save_phase_with(&ctx, &result, &failing_write).unwrap_err();
        let message = format!("{error:#}");
        assert!(
            message.contains("injected write failure: no space left on device"),
            "{message}"
        );
        assert!(
            message.contains("retry with `ralph-hooks resume retry "),
            "{message}"
        );
        assert!(load_all(&ctx).unwrap().is_empty(), "nothing was saved");
        let backup = backup_named_in(&message);
        let kept = std::fs::read_to_string(&backup).unwrap();
        let Ok(Entry::Phase(kept)) = decode_entry(&kept) else {
            panic!("the backup is not the phase result: {kept}")
        };
        assert_eq!(
            kept, result,
            "the backup holds what the save tried to write"
        );

        let relative = retry(&ctx, &backup).unwrap();
        assert!(!backup.exists(), "the backup is removed once saved");
        assert_eq!(
            latest_phase(&ctx, &result.phase).unwrap().unwrap(),
            (relative, result)
        );
    }

    #[test]
    fn a_failed_state_save_keeps_the_previous_state_and_a_backup() {
        let project = Project::new("failed-state-save");
        let ctx = project.ctx();
        let mut first = state();
        first.spec_id = format!("SPEC-UNIT-{}", std::process::id());
        save_state(&ctx, &first).unwrap();
        let mut second = first.clone();
        second.timestamp = "2025-11-13T08:00:00Z".parse().unwrap();
        second.current_phase = "verification".into();
        let message = format!(
            "{:#}",
            save_state_with(&ctx, &second, &failing_write).unwrap_err()
        );
        assert!(
            message.contains("the previous state is kept in command-state/2-run-"),
            "{message}"
        );
        let backup = backup_named_in(&message);
        let Ok(Entry::Resume(kept)) = decode_entry(&std::fs::read_to_string(&backup).unwrap())
        else {
            panic!("the backup is not the resume state")
        };
        assert_eq!(kept, second);
        assert_eq!(states(&ctx).unwrap().len(), 1, "the previous state stays");
        retry(&ctx, &backup).unwrap();
        let now = states(&ctx).unwrap();
        assert_eq!(now.len(), 1, "the retried save replaced the previous state");
        assert_eq!(now[0].1.current_phase, "verification");
    }

    #[test]
    fn from_past_a_pending_step_never_calls_it_completed() {
        // Completed: spec_validation, test_setup. Pending: code_implementation,
        // integration_test. `--from integration_test` skips code_implementation,
        // which was never done.
        let from = ShowOptions {
            from: Some("integration_test".into()),
            restart: false,
        };
        let text = continuation_prompt(&state(), &from).unwrap();
        let completed = text
            .split("do not redo them:\n")
            .nth(1)
            .and_then(|rest| rest.split("Never completed").next())
            .unwrap();
        assert_eq!(completed, "- spec_validation\n- test_setup\n", "{text}");
        assert!(
            text.contains("(they are NOT done; do them later if they are needed):\n- code_implementation\nContinue with step `integration_test` (--from)"),
            "{text}"
        );
    }
}
