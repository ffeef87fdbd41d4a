//! Starting the exporter from a hook or a CLI command, as the daemon is
//! started: detached (its own session, stdio on `/dev/null`), single-flight
//! under a lock, never waited for.
//!
//! Each process that logged an event while telemetry is on and found no
//! exporter running records where its first event starts (the earliest of
//! them wins) in `telemetry/start.json`, under that file's lock, and starts
//! one unless one was just started. The exporter ships from there: what was
//! logged while no exporter ran and before that offset was logged while
//! telemetry was off, and is never sent.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::files;
use crate::hook::ctx::Ctx;
use crate::state::{FileLock, Versioned};

/// How long a just-started exporter may take to take its life lock before
/// another process starts one again.
const START_GRACE_SECS: i64 = 10;

/// `telemetry/start.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StartRecord {
    #[serde(default)]
    pub version: u64,
    /// The earliest first event of the processes that found no exporter,
    /// not yet taken by one.
    #[serde(default)]
    pub from: Option<u64>,
    #[serde(default)]
    pub spawned_pid: Option<u32>,
    #[serde(default)]
    pub spawned_at: Option<DateTime<Utc>>,
}

impl Versioned for StartRecord {
    const VERSION: u64 = 1;
}

/// Whether an exporter holds the state root's life lock. Probing takes the
/// lock for an instant; no lock file means none ever ran, and nothing is
/// created to find that out.
pub fn exporter_running(state_root: &Path) -> bool {
    let life = state_root.join(files::LIFE_LOCK);
    life.exists() && matches!(FileLock::try_acquire(&life), Ok(None))
}

/// Makes sure an exporter runs for this state root; says what it did.
pub fn ensure_running(ctx: &Ctx, first_event: u64) -> anyhow::Result<String> {
    if exporter_running(&ctx.state_root) {
        return Ok("the exporter runs".into());
    }
    let locked = ctx.store().lock(files::START)?;
    let mut record = locked.load_json::<StartRecord>()?.unwrap_or_default();
    record.version = StartRecord::VERSION;
    record.from = Some(
        record
            .from
            .map_or(first_event, |from| from.min(first_event)),
    );
    let now = Utc::now();
    let just_started = match (record.spawned_pid, record.spawned_at) {
        (Some(pid), Some(at)) => {
            (now - at).num_seconds() < START_GRACE_SECS
                && Path::new(&format!("/proc/{pid}")).exists()
        }
        _ => false,
    };
    let note = if exporter_running(&ctx.state_root) {
        "the exporter runs".to_string()
    } else if just_started {
        "an exporter is starting".to_string()
    } else {
        let pid = spawn(ctx)?;
        record.spawned_pid = Some(pid);
        record.spawned_at = Some(now);
        format!("started exporter {pid}")
    };
    locked.save_json(&record)?;
    Ok(note)
}

/// Starts `ralph-hooks telemetry run` detached. Its environment is ours: it
/// finds Claude Code's through `$CLAUDE_PID`.
fn spawn(ctx: &Ctx) -> anyhow::Result<u32> {
    let exe = crate::daemon::remote::daemon_exe()
        .ok_or_else(|| anyhow::anyhow!("no ralph-hooks binary next to this one or on PATH"))?;
    let mut command = Command::new(&exe);
    command
        .arg("--project")
        .arg(&ctx.project_root)
        .args(["telemetry", "run"])
        .env("RALPH_HOOKS_STATE_DIR", &ctx.state_root)
        .current_dir(&ctx.project_root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec. Its own session
    // keeps the exporter out of the hook's process group, which Claude Code
    // may kill, and away from the hook's terminal.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = command
        .spawn()
        .map_err(|error| anyhow::anyhow!("cannot run {}: {error}", exe.display()))?;
    Ok(child.id())
}
