//! What the exporter reports about itself (`telemetry/status.json`, written
//! by it alone), the lines `doctor`, `daemon status` and `telemetry status`
//! print, and stopping it.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::settings::{self, ENABLE_VAR, Switch, TelemetrySection};
use super::sources::{self, Signal};
use super::{files, start};
use crate::hook::config::Config;
use crate::hook::ctx::Ctx;
use crate::state::Versioned;

/// `telemetry/status.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    #[serde(default)]
    pub version: u64,
    pub pid: u32,
    pub started_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    /// False once the exporter has exited.
    pub running: bool,
    #[serde(default)]
    pub stopped_because: Option<String>,
    /// Why telemetry is on, as the exporter saw it.
    #[serde(default)]
    pub switch: String,
    /// Where each signal goes, as the exporter resolved it.
    #[serde(default)]
    pub signals: Vec<Signal>,
    /// Where the settings that matter came from (`KEY=value from …`).
    #[serde(default)]
    pub origins: Vec<String>,
    #[serde(default)]
    pub problems: Vec<String>,
    #[serde(default)]
    pub last_accepted: Option<Accepted>,
    #[serde(default)]
    pub last_failure: Option<Failure>,
    /// Events shipped since this exporter started.
    #[serde(default)]
    pub exported_events: u64,
    /// Events dropped past the backlog bound, since this exporter started.
    #[serde(default)]
    pub dropped_events: u64,
    /// Events never sent because they were logged while telemetry was off.
    #[serde(default)]
    pub skipped_events: u64,
    /// Bytes of `events.jsonl` waiting to be accepted.
    #[serde(default)]
    pub backlog_bytes: u64,
}

impl Versioned for Status {
    const VERSION: u64 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Accepted {
    pub at: DateTime<Utc>,
    pub events: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub at: DateTime<Utc>,
    pub error: String,
}

/// The exporter's last word, if it ever ran here.
pub fn read(ctx: &Ctx) -> Option<Status> {
    ctx.store()
        .read_json::<Status>(files::STATUS)
        .ok()
        .flatten()
}

/// What telemetry looks like from here: the switch (this environment, the
/// settings files, the config section) and the settings resolved the way
/// the exporter resolves them.
pub struct View {
    pub switch: Switch,
    pub resolved: sources::Resolved,
    pub problems: Vec<String>,
}

pub fn view(ctx: &Ctx) -> View {
    let (section, section_problem) = match TelemetrySection::from_config(ctx.config()) {
        Ok(section) => (section, None),
        Err(error) => (TelemetrySection::default(), Some(format!("{error:#}"))),
    };
    let config_name = Config::file_path(&ctx.project_root).display().to_string();
    let (found, problems) =
        sources::gather(&ctx.project_root, ctx.claude_pid, &section, &config_name);
    let resolved = sources::merge(&found);
    let switch = match section_problem {
        Some(problem) => Switch::Off(problem),
        None => {
            let enable = resolved
                .vars
                .get(ENABLE_VAR)
                .map(|setting| (setting.value.as_str(), format!("from {}", setting.source)));
            settings::decide(
                &section,
                enable
                    .as_ref()
                    .map(|(value, origin)| (*value, origin.as_str())),
            )
        }
    };
    View {
        switch,
        resolved,
        problems,
    }
}

fn ago(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - at).num_seconds().max(0);
    format!("{} ago", crate::ralph::budget::human_duration(seconds))
}

fn signal_line(signal: &Signal) -> String {
    let protocol = signal.protocol.map(|p| p.as_str()).unwrap_or("?");
    match &signal.problem {
        None => format!(
            "  {} → {} ({protocol})",
            signal.kind.as_str(),
            signal.endpoint
        ),
        Some(problem) => format!("  {}: not sent: {problem}", signal.kind.as_str()),
    }
}

/// The lines for `doctor`, `daemon status` and `telemetry status`.
pub fn lines(ctx: &Ctx) -> Vec<String> {
    let now = Utc::now();
    let view = view(ctx);
    let running = start::exporter_running(&ctx.state_root);
    let status = read(ctx);
    let mut lines = Vec::new();
    match &view.switch {
        Switch::On(why) => lines.push(format!("telemetry: on ({why})")),
        Switch::Off(why) => lines.push(format!("telemetry: off ({why}); nothing is sent")),
    }
    // The running exporter's view wins: it read Claude Code's environment,
    // which a shell may not have.
    let (signals, origins) = match &status {
        Some(status) if running => (status.signals.clone(), status.origins.clone()),
        _ => (view.resolved.signals(), origins_of(&view.resolved)),
    };
    if view.switch.is_on() || running {
        if signals.is_empty() {
            lines.push(
                "  no OTLP exporter configured (OTEL_LOGS_EXPORTER, OTEL_METRICS_EXPORTER or OTEL_TRACES_EXPORTER=otlp): nothing is sent".into(),
            );
        }
        lines.extend(signals.iter().map(signal_line));
        for origin in origins {
            lines.push(format!("  {origin}"));
        }
    }
    for problem in &view.problems {
        lines.push(format!("  problem: {problem}"));
    }
    match (&status, running) {
        (Some(status), true) => {
            let up = status
                .started_at
                .map(|at| format!(", up {}", ago(at, now).trim_end_matches(" ago")))
                .unwrap_or_default();
            lines.push(format!("exporter: running, pid {}{up}", status.pid));
        }
        (None, true) => lines.push("exporter: running (starting)".into()),
        (Some(status), false) => {
            let because = status
                .stopped_because
                .clone()
                .unwrap_or_else(|| "ended without a word (killed?)".into());
            let when = status
                .updated_at
                .map(|at| format!(" {}", ago(at, now)))
                .unwrap_or_default();
            lines.push(format!(
                "exporter: not running (pid {} stopped{when}: {because})",
                status.pid
            ));
        }
        (None, false) => lines.push("exporter: has not run in this project".into()),
    }
    if let Some(status) = &status {
        match &status.last_accepted {
            Some(batch) => lines.push(format!(
                "  last batch accepted {} ({} event(s)); {} sent by this exporter",
                ago(batch.at, now),
                batch.events,
                status.exported_events
            )),
            None => lines.push("  no batch accepted yet".into()),
        }
        if let Some(failure) = &status.last_failure {
            let newer = status
                .last_accepted
                .as_ref()
                .is_none_or(|batch| batch.at <= failure.at);
            if newer {
                lines.push(format!(
                    "  last export failed {}: {} ({} bytes of events waiting)",
                    ago(failure.at, now),
                    failure.error,
                    status.backlog_bytes
                ));
            }
        }
        if status.dropped_events > 0 {
            lines.push(format!(
                "  {} event(s) dropped past the backlog bound",
                status.dropped_events
            ));
        }
        for problem in &status.problems {
            lines.push(format!("  problem: {problem}"));
        }
    }
    lines
}

/// `KEY=value from …` for the settings that decide where data goes.
pub fn origins_of(resolved: &sources::Resolved) -> Vec<String> {
    resolved
        .vars
        .keys()
        .filter(|key| {
            key.ends_with("_EXPORTER") || key.contains("ENDPOINT") || key.ends_with("PROTOCOL")
        })
        .filter_map(|key| resolved.origin(key))
        .collect()
}

/// Stops the running exporter (SIGTERM: it ships what it can within a
/// second or two, saves its cursor and exits; SIGKILL after 5 s). `None`
/// when none runs.
pub fn stop(ctx: &Ctx) -> anyhow::Result<Option<u32>> {
    if !start::exporter_running(&ctx.state_root) {
        return Ok(None);
    }
    let Some(status) = read(ctx) else {
        anyhow::bail!("an exporter holds the lock but wrote no status; cannot tell its pid");
    };
    let pid = status.pid;
    let is_exporter = crate::daemon::procs::cmdline(pid)
        .is_some_and(|line| line.contains("telemetry") && line.contains("run"));
    if !is_exporter {
        anyhow::bail!("pid {pid} in {} is not the exporter", files::STATUS);
    }
    // SAFETY: kill(2) with a pid we just checked is our exporter.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while start::exporter_running(&ctx.state_root) {
        if Instant::now() >= deadline {
            // SAFETY: as above.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Some(pid))
}
