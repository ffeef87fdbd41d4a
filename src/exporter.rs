//! The OpenTelemetry exporter, `ralph-hooks telemetry run`: one long-lived
//! process per project that ships `events.jsonl` to the collector the
//! standard `OTEL_*` variables name, in batches, from a cursor.
//!
//! Hooks never wait on it or on the network: they append to the log and,
//! when telemetry is on and no exporter runs, start this process detached
//! ([`crate::telemetry::start`]). It holds a life lock (one per project),
//! ships every `OTEL_LOGS_EXPORT_INTERVAL` what was appended, moves its
//! cursor only when the collector accepted the batch, retries with a
//! growing pause while the collector is away (keeping at most
//! `telemetry.max_backlog_bytes`, oldest dropped first and counted), ships
//! metrics every `OTEL_METRIC_EXPORT_INTERVAL`, and exits after
//! `telemetry.exit_idle_ms` without a new event, on SIGTERM/SIGINT/SIGHUP
//! (`ralph-hooks telemetry stop`, `daemon stop`), when telemetry is turned
//! off in the config, or when the project's state root is removed.
//!
//! - [`records`]: one event → its log record, spans and metric points, pure.
//! - [`cursor`]: the place in the log; reading whole lines.
//! - [`otlp`]: the OpenTelemetry crates: exporters and conversions.
//!
//! Uses [`crate::telemetry`], [`crate::hook`], [`crate::state`],
//! [`crate::util`]; only the CLI reaches it, so no hook binary links tokio,
//! tonic or the OpenTelemetry crates (`tests/layers.rs`).

pub mod cursor;
pub mod otlp;
pub mod records;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use chrono::Utc;
use serde_json::Value;

use crate::hook::config::Config;
use crate::hook::ctx::Ctx;
use crate::state::events_log::EVENTS_FILE;
use crate::state::{FileLock, Versioned};
use crate::telemetry::files;
use crate::telemetry::settings::{self, ENABLE_VAR, Switch, TelemetrySection};
use crate::telemetry::sources::{self, Resolved, Signal};
use crate::telemetry::start::StartRecord;
use crate::telemetry::status::{self, Accepted, Failure, Status};
use cursor::Cursor;
use records::{LogPlan, Mapped, SpanPlan};

/// How often the loop looks at the log, the signals and the clock.
const TICK: Duration = Duration::from_millis(100);
/// The longest pause between attempts while the collector is away.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// What a stopping exporter still spends on a last batch.
const FINAL_FLUSH: Duration = Duration::from_secs(2);

/// Runs the exporter until it has a reason to stop. Returns at once when
/// another exporter runs for this state root.
pub fn run(ctx: &Ctx) -> anyhow::Result<()> {
    let life_path = ctx.state_root.join(files::LIFE_LOCK);
    let Some(life) = FileLock::try_acquire(&life_path)? else {
        println!("an exporter already runs for {}", ctx.state_root.display());
        return Ok(());
    };
    let section =
        TelemetrySection::from_config(ctx.config()).unwrap_or_else(|_| TelemetrySection {
            enabled: Some(false),
            ..TelemetrySection::default()
        });
    let config_name = Config::file_path(&ctx.project_root).display().to_string();
    let (found, mut problems) =
        sources::gather(&ctx.project_root, ctx.claude_pid, &section, &config_name);
    let resolved = sources::merge(&found);
    let origin = resolved
        .vars
        .get(ENABLE_VAR)
        .map(|setting| (setting.value.clone(), format!("from {}", setting.source)));
    let switch = settings::decide(
        &section,
        origin
            .as_ref()
            .map(|(value, source)| (value.as_str(), source.as_str())),
    );
    let signals = resolved.signals();
    let mut status = Status {
        version: Status::VERSION,
        pid: std::process::id(),
        started_at: Some(Utc::now()),
        updated_at: Some(Utc::now()),
        running: true,
        switch: switch.why().to_string(),
        signals: signals.clone(),
        origins: status::origins_of(&resolved),
        ..Status::default()
    };
    if let Switch::Off(why) = &switch {
        status.running = false;
        status.stopped_because = Some(format!("telemetry is off ({why})"));
        save_status(ctx, &mut status);
        return Ok(());
    }
    use_as_environment(&resolved);
    // The CLI's handlers kill child groups and re-raise: the exporter has no
    // children and wants these signals as "stop gracefully" (tokio chains to
    // any handler it finds, so the old ones must go first).
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: signal(2) with SIG_DFL, before any thread exists.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the exporter's runtime")?;
    let info = otlp::ProjectInfo {
        name: ctx
            .project_root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
        root: ctx.project_root.display().to_string(),
        extra: resolved
            .get("OTEL_RESOURCE_ATTRIBUTES")
            .map(otlp::parse_resource_attributes)
            .unwrap_or_default(),
    };
    let exporter = Exporter {
        ctx,
        log_path: ctx.state_root.join(EVENTS_FILE),
        batch_interval: resolved.batch_interval(),
        metric_interval: resolved.metric_interval(),
        batch_size: resolved.batch_size(),
        max_backlog: section.max_backlog_bytes(),
        exit_idle: Duration::from_millis(section.exit_idle_ms()),
        signals,
    };
    let outcome = runtime.block_on(async {
        let resource = otlp::resource(&info);
        let (exporters, more) = otlp::Exporters::build(&exporter.signals, &resource);
        problems.extend(more);
        status.problems = problems;
        exporter.run(exporters, status, life).await
    });
    runtime.shutdown_timeout(Duration::from_millis(200));
    outcome
}

/// Makes the resolved `OTEL_*` settings this process's environment, which
/// is where `opentelemetry-otlp` reads them (endpoints, headers, timeouts,
/// compression, temporality), exactly as Claude Code's exporter would.
fn use_as_environment(resolved: &Resolved) {
    let stale: Vec<String> = std::env::vars_os()
        .map(|(key, _)| key.to_string_lossy().into_owned())
        .filter(|key| key.starts_with("OTEL_"))
        .collect();
    // SAFETY: called before the runtime or any other thread exists: this
    // process is single-threaded here, so nothing reads the environment
    // while it changes.
    unsafe {
        for key in stale {
            std::env::remove_var(key);
        }
        for (key, setting) in &resolved.vars {
            if key.starts_with("OTEL_") {
                std::env::set_var(key, &setting.value);
            }
        }
    }
}

fn save_status(ctx: &Ctx, status: &mut Status) {
    // A removed project must stay removed: never recreate its state root.
    if !ctx.state_root.is_dir() {
        return;
    }
    status.updated_at = Some(Utc::now());
    if let Ok(locked) = ctx.store().lock(files::STATUS) {
        let _ = locked.save_json(status);
    }
}

struct Exporter<'a> {
    ctx: &'a Ctx,
    log_path: PathBuf,
    batch_interval: Duration,
    metric_interval: Duration,
    batch_size: usize,
    max_backlog: u64,
    exit_idle: Duration,
    signals: Vec<Signal>,
}

/// Where the exporter is in the log, in memory; saved as [`Cursor`].
struct Place {
    file: Option<(u64, u64)>,
    offset: u64,
    end: u64,
    /// Until the owed bytes are shipped, the stretch after `end` is not yet
    /// known to be skipped or shipped.
    gap_open: bool,
    /// A notice for the collector about events dropped past the bound.
    dropped_notice: Option<(u64, u64)>,
}

enum Stop {
    Signal(&'static str),
    Idle,
    Off(String),
    Gone,
}

impl Exporter<'_> {
    async fn run(
        &self,
        exporters: otlp::Exporters,
        mut status: Status,
        life: FileLock,
    ) -> anyhow::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
        let mut hangup = signal(SignalKind::hangup()).context("cannot watch SIGHUP")?;
        let mut life = Some(life);
        let mut place = self.load_place();
        let mut next_batch = Instant::now() + TICK;
        let mut next_metrics = Instant::now() + self.metric_interval;
        let mut backoff = self.batch_interval;
        let mut last_size = cursor::probe(&self.log_path).map(|(_, size)| size);
        let mut last_growth = Instant::now();
        if exporters.is_empty() && !status.problems.is_empty() {
            status.last_failure = Some(Failure {
                at: Utc::now(),
                error: status.problems.join("; "),
            });
        }
        save_status(self.ctx, &mut status);
        let stop = loop {
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = terminate.recv() => break Stop::Signal("SIGTERM"),
                _ = interrupt.recv() => break Stop::Signal("SIGINT"),
                _ = hangup.recv() => break Stop::Signal("SIGHUP"),
            }
            if !self.ctx.state_root.is_dir() {
                break Stop::Gone;
            }
            if let Some(why) = self.turned_off() {
                break Stop::Off(why);
            }
            let size = cursor::probe(&self.log_path).map(|(_, size)| size);
            if size != last_size {
                last_size = size;
                last_growth = Instant::now();
            }
            let now = Instant::now();
            if !exporters.is_empty() && now >= next_batch {
                match self.ship_once(&exporters, &mut place, &mut status).await {
                    Ok(full) => {
                        backoff = self.batch_interval;
                        next_batch = if full { now } else { now + self.batch_interval };
                    }
                    Err(error) => {
                        status.last_failure = Some(Failure {
                            at: Utc::now(),
                            error,
                        });
                        save_status(self.ctx, &mut status);
                        next_batch = now + backoff;
                        backoff = (backoff * 2).min(MAX_BACKOFF.max(self.batch_interval));
                    }
                }
            }
            if let Some(metrics) = &exporters.metrics
                && now >= next_metrics
            {
                next_metrics = now + self.metric_interval;
                if let Err(error) = metrics.ship().await {
                    status.last_failure = Some(Failure {
                        at: Utc::now(),
                        error,
                    });
                    save_status(self.ctx, &mut status);
                }
            }
            if now.duration_since(last_growth) >= self.exit_idle {
                // Leave, unless an event came in while letting go of the
                // lock: its writer saw the lock held and counts on us.
                place.end = place.end.max(last_size.unwrap_or(0));
                self.save_place(&place);
                drop(life.take());
                let size_now = cursor::probe(&self.log_path).map(|(_, size)| size);
                if size_now == last_size {
                    break Stop::Idle;
                }
                match FileLock::try_acquire(&self.ctx.state_root.join(files::LIFE_LOCK)) {
                    Ok(Some(lock)) => {
                        life = Some(lock);
                        last_growth = Instant::now();
                    }
                    _ => break Stop::Idle,
                }
            }
        };
        let because = match &stop {
            Stop::Signal(name) => format!("stopped ({name})"),
            Stop::Idle => format!("idle for {} s", self.exit_idle.as_secs()),
            Stop::Off(why) => format!("telemetry turned off ({why})"),
            Stop::Gone => "the state root was removed".into(),
        };
        if let Stop::Signal(_) = stop
            && !exporters.is_empty()
        {
            // One last batch, within a bound: a stopping exporter must not
            // hang on a collector that is away.
            let _ = tokio::time::timeout(FINAL_FLUSH, async {
                if self
                    .ship_once(&exporters, &mut place, &mut status)
                    .await
                    .is_ok()
                    && let Some(metrics) = &exporters.metrics
                {
                    let _ = metrics.ship().await;
                }
            })
            .await;
        }
        if let Some(metrics) = &exporters.metrics {
            metrics.shutdown();
        }
        if !matches!(stop, Stop::Gone) {
            if !matches!(stop, Stop::Off(_)) {
                place.end = place
                    .end
                    .max(cursor::probe(&self.log_path).map(|(_, s)| s).unwrap_or(0));
            }
            self.save_place(&place);
            status.running = false;
            status.stopped_because = Some(because);
            save_status(self.ctx, &mut status);
        }
        drop(life);
        Ok(())
    }

    /// The per-project switch, re-read every tick: `"enabled": false` stops
    /// the exporter before anything more is sent.
    fn turned_off(&self) -> Option<String> {
        let config = Config::load(&self.ctx.project_root).ok()?;
        match TelemetrySection::from_config(&config) {
            Ok(section) if section.enabled == Some(false) => {
                Some("\"telemetry\": {\"enabled\": false}".into())
            }
            Ok(_) => None,
            Err(error) => Some(format!("{error:#}")),
        }
    }

    fn load_place(&self) -> Place {
        let saved = self
            .ctx
            .store()
            .read_json::<Cursor>(files::CURSOR)
            .ok()
            .flatten();
        let now = cursor::probe(&self.log_path);
        match (saved, now) {
            (Some(saved), Some((file, size)))
                if saved.file == Some(file) && saved.offset <= size =>
            {
                Place {
                    file: Some(file),
                    offset: saved.offset,
                    end: saved.end.clamp(saved.offset, size),
                    gap_open: true,
                    dropped_notice: None,
                }
            }
            // No cursor, or another log than the cursor's: nothing in it was
            // seen by an exporter.
            (_, file) => Place {
                file: file.map(|(id, _)| id),
                offset: 0,
                end: 0,
                gap_open: true,
                dropped_notice: None,
            },
        }
    }

    fn save_place(&self, place: &Place) {
        if !self.ctx.state_root.is_dir() {
            return;
        }
        let saved = Cursor {
            version: Cursor::VERSION,
            file: place.file,
            offset: place.offset,
            end: place.end.max(place.offset),
        };
        if let Ok(locked) = self.ctx.store().lock(files::CURSOR) {
            let _ = locked.save_json(&saved);
        }
    }

    /// Where the processes that started exporters logged their first event
    /// (taken: the next exporter starts from its own starter's).
    fn take_start(&self) -> Option<u64> {
        let locked = self.ctx.store().lock(files::START).ok()?;
        let mut record = locked.load_json::<StartRecord>().ok()??;
        let from = record.from.take()?;
        let _ = locked.save_json(&record);
        Some(from)
    }

    /// Reads, maps and ships one batch. `Ok(true)` when the batch was full
    /// (more is waiting), `Err` with the reason the collector refused it.
    async fn ship_once(
        &self,
        exporters: &otlp::Exporters,
        place: &mut Place,
        status: &mut Status,
    ) -> Result<bool, String> {
        let Some((file, size)) = cursor::probe(&self.log_path) else {
            return Ok(false);
        };
        if place.file != Some(file) || size < place.offset {
            // The log was replaced or cut while we ran: all of it is new.
            *place = Place {
                file: Some(file),
                offset: 0,
                end: 0,
                gap_open: place.gap_open,
                dropped_notice: place.dropped_notice.take(),
            };
        }
        let io =
            |error: std::io::Error| format!("cannot read {}: {error}", self.log_path.display());
        if place.gap_open && place.offset >= place.end {
            // What was logged after the last exporter and before the event
            // that started this one was logged while telemetry was off.
            let from = self
                .take_start()
                .unwrap_or(size)
                .min(size)
                .max(place.offset);
            let skipped = cursor::count_lines(&self.log_path, place.offset, from).map_err(io)?;
            status.skipped_events += skipped;
            place.offset = from;
            place.gap_open = false;
        }
        if !place.gap_open {
            place.end = place.end.max(size);
        }
        let limit = if place.gap_open { place.end } else { size };
        if let Some(at) =
            cursor::trim_to_bound(&self.log_path, place.offset, limit, self.max_backlog)
                .map_err(io)?
        {
            let dropped = cursor::count_lines(&self.log_path, place.offset, at).map_err(io)?;
            let (events, bytes) = place.dropped_notice.unwrap_or((0, 0));
            place.dropped_notice = Some((events + dropped, bytes + (at - place.offset)));
            status.dropped_events += dropped;
            place.offset = at;
        }
        status.backlog_bytes = limit.saturating_sub(place.offset);
        let lines =
            cursor::read_lines(&self.log_path, place.offset, limit, self.batch_size).map_err(io)?;
        if lines.lines.is_empty() && place.dropped_notice.is_none() {
            return Ok(false);
        }
        let mapped: Vec<Mapped> = lines
            .lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter_map(|record| records::map(&record))
            .collect();
        let mut logs: Vec<LogPlan> = mapped.iter().map(|m| m.log.clone()).collect();
        if let Some((events, bytes)) = place.dropped_notice {
            logs.push(dropped_notice(events, bytes));
        }
        let spans: Vec<SpanPlan> = mapped.iter().flat_map(|m| m.spans.clone()).collect();
        exporters.ship(&logs, &spans).await?;
        if let Some(metrics) = &exporters.metrics {
            for point in mapped.iter().flat_map(|m| m.points.iter()) {
                metrics.record(point);
            }
        }
        let full = lines.lines.len() >= self.batch_size;
        place.offset = lines.next;
        place.dropped_notice = None;
        status.exported_events += mapped.len() as u64;
        status.backlog_bytes = limit.saturating_sub(place.offset);
        status.last_accepted = Some(Accepted {
            at: Utc::now(),
            events: mapped.len() as u64,
        });
        self.save_place(place);
        save_status(self.ctx, status);
        Ok(full)
    }
}

/// The record that tells the backend some events never made it.
fn dropped_notice(events: u64, bytes: u64) -> LogPlan {
    LogPlan {
        body: "ralph.telemetry_dropped".into(),
        timestamp: std::time::SystemTime::now(),
        level: records::Level::Warn,
        attrs: vec![
            (
                "event.name".into(),
                records::Attr::Str("telemetry_dropped".into()),
            ),
            (
                "ralph.telemetry.dropped_events".into(),
                records::Attr::Int(events as i64),
            ),
            (
                "ralph.telemetry.dropped_bytes".into(),
                records::Attr::Int(bytes as i64),
            ),
        ],
        trace: None,
    }
}
