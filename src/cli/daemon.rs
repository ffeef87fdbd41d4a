//! `ralph-hooks daemon`: run the warm-server daemon (what the hooks start),
//! start it in the background, show its status, or stop it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const EXAMPLES: &str = "\
The hooks start the daemon themselves when they need it; it exits after 10 idle minutes.

Examples:
  ralph-hooks daemon start     # in the background, now
  ralph-hooks daemon status    # its servers, their memory and what they are doing
  ralph-hooks daemon stop";

#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub action: Option<DaemonCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum DaemonCommand {
    /// Run the daemon in the foreground (the default; what the hooks start)
    Run {
        /// Start the project's language servers at once
        #[arg(long, hide = true)]
        prestart: bool,
    },
    /// Start it in the background unless it runs
    Start,
    /// Its servers, their memory and what they are doing
    Status {
        /// As JSON
        #[arg(long)]
        json: bool,
    },
    /// Stop it (and the telemetry exporter)
    Stop,
}
use crate::daemon::paths::{self, Paths};
use crate::daemon::record::{self, DaemonRecord};
use crate::daemon::remote::{self, Target, Unavailable};
use crate::daemon::wire::{Request, StatusReply};
use crate::daemon::{procs, server};
use crate::hook::ctx::Ctx;
use crate::state::{FileLock, Store};

/// How long `stop` waits for the daemon to shut its servers down.
const STOP_WAIT: Duration = Duration::from_secs(15);

pub fn run(ctx: &Ctx, args: &DaemonArgs) -> anyhow::Result<ExitCode> {
    let action = args
        .action
        .as_ref()
        .unwrap_or(&DaemonCommand::Run { prestart: false });
    let target = Target::for_ctx(ctx);
    match *action {
        DaemonCommand::Run { prestart } => {
            // Started by a hook, the daemon's stderr goes nowhere: a reason
            // it could not run belongs in its log.
            if let Err(error) = server::run(ctx, prestart) {
                record::log(
                    &Store::new(ctx.state_root.clone()),
                    &format!("could not run: {error:#}"),
                );
                return Err(error);
            }
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Start => start(&target),
        DaemonCommand::Status { json } => {
            let code = status(&target, json)?;
            if !json {
                crate::telemetry::status::lines(ctx)
                    .iter()
                    .for_each(|l| println!("{l}"));
            }
            Ok(code)
        }
        DaemonCommand::Stop => {
            for line in stop_all(ctx)? {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn start(target: &Target) -> anyhow::Result<ExitCode> {
    match remote::connect_or_start(target) {
        Ok(connected) => {
            if let Some(note) = &connected.note {
                println!("{note}");
            }
            println!(
                "daemon running, pid {}, socket {}",
                connected.hello.pid,
                target.paths.socket.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(Unavailable(why)) => anyhow::bail!("cannot start the daemon: {why}"),
    }
}

fn status(target: &Target, json: bool) -> anyhow::Result<ExitCode> {
    let reply = remote::connect_existing(target).and_then(|mut connected| {
        connected
            .conn
            .call::<StatusReply>(&Request::Status, Instant::now() + Duration::from_secs(5))
            .map_err(|error| Unavailable(error.to_string()))
    });
    match reply {
        Ok(status) => {
            if json {
                println!("{}", serde_json::json!({"running": true, "status": status}));
            } else {
                print!("{}", render_status(&status));
            }
        }
        Err(Unavailable(why)) => {
            if json {
                println!("{}", serde_json::json!({"running": false, "reason": why}));
            } else {
                println!("daemon: not running");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The daemon's state for `ralph-hooks doctor`, without ever starting one.
pub fn doctor_lines(ctx: &Ctx) -> Vec<String> {
    let target = Target::for_ctx(ctx);
    let reply = remote::connect_existing(&target).and_then(|mut connected| {
        connected
            .conn
            .call::<StatusReply>(&Request::Status, Instant::now() + Duration::from_secs(2))
            .map_err(|error| Unavailable(error.to_string()))
    });
    match reply {
        Ok(status) => render_status(&status).lines().map(str::to_string).collect(),
        Err(Unavailable(why)) => vec![format!(
            "not running: {why}; the post-edit hook starts it when a language server is first needed"
        )],
    }
}

pub fn render_status(status: &StatusReply) -> String {
    let mut text = format!(
        "daemon: running, pid {}, build {}, up {}, idle {}, {} requests\nsocket: {}\n",
        status.pid,
        status.build,
        duration(status.uptime_ms),
        duration(status.idle_ms),
        status.requests,
        status.socket.display()
    );
    let ceiling = if status.memory_limit_mb == 0 {
        "no ceiling".to_string()
    } else {
        format!("ceiling {} MB", status.memory_limit_mb)
    };
    text.push_str(&format!(
        "memory: {} for the daemon and its servers (daemon alone {}), {ceiling}, {} eviction(s)\n",
        megabytes(status.tree_rss_kib),
        megabytes(status.rss_kib),
        status.evictions
    ));
    if status.servers.is_empty() {
        text.push_str("servers: none running\n");
        return text;
    }
    text.push_str("servers:\n");
    // Names, commands and errors come from a repository's `.lsp.json` and
    // from the servers: escaped for the terminal (engine attack E-17).
    let shown = |text: &str| crate::util::text::escape_controls(text).into_owned();
    for server in &status.servers {
        let pid = server
            .pid
            .map_or_else(|| "not running".to_string(), |pid| format!("pid {pid}"));
        let state = match (server.warming, server.project_check) {
            (true, _) => ", warming up",
            (false, Some(_)) => ", checking the project",
            (false, None) if server.busy => ", busy",
            _ => "",
        };
        text.push_str(&format!(
            "  {} {pid}, RSS {}, idle {}, {} requests ({} warm), {} restart(s), {} open file(s){state}, root {}\n",
            shown(&server.name),
            megabytes(server.rss_kib),
            duration(server.idle_ms),
            server.requests,
            server.warm_requests,
            server.restarts,
            server.open_files,
            shown(&server.root.display().to_string())
        ));
        if !server.command.is_empty() {
            text.push_str(&format!("    command: {}\n", shown(&server.command)));
        }
        if let Some(reason) = &server.reason {
            text.push_str(&format!("    chosen because {}\n", shown(reason)));
        }
        if server.knows_project {
            text.push_str("    knows the whole project: project checks after changes ask it\n");
        }
        if let Some((done, total)) = server.project_check {
            text.push_str(&format!(
                "    project check: {done} of {total} file(s) answered\n"
            ));
        }
        if let Some(error) = &server.last_error {
            text.push_str(&format!("    last error: {}\n", shown(error)));
        }
    }
    text
}

/// Stops the telemetry exporter and the daemon of this state root (what
/// `daemon stop` and `install --uninstall` do); what happened, line by line.
pub fn stop_all(ctx: &Ctx) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    if let Some(pid) = crate::telemetry::status::stop(ctx)? {
        lines.push(format!("stopped telemetry exporter {pid}"));
    }
    lines.extend(stop(ctx, &Target::for_ctx(ctx)));
    Ok(lines)
}

fn stop(ctx: &Ctx, target: &Target) -> Vec<String> {
    let store = Store::new(ctx.state_root.clone());
    let mut lines = Vec::new();
    match remote::connect_existing(target) {
        Ok(mut connected) => {
            let pid = connected.hello.pid;
            let _ = connected.conn.call::<Value>(
                &Request::Stop {
                    reason: "ralph-hooks daemon stop".into(),
                },
                Instant::now() + Duration::from_secs(2),
            );
            if wait_for_exit(&target.paths, STOP_WAIT) {
                lines.push(format!("stopped daemon {pid}"));
            } else {
                kill_recorded_daemon(&store);
                lines.push(format!(
                    "daemon {pid} did not stop within {} s; killed it",
                    STOP_WAIT.as_secs()
                ));
            }
        }
        Err(Unavailable(why)) => {
            if remote::life_lock_free(&target.paths) {
                lines.push("no daemon running".into());
            } else {
                // Alive but not answering: hung, or stopped by a signal.
                let pid = kill_recorded_daemon(&store);
                wait_for_exit(&target.paths, Duration::from_secs(3));
                lines.push(format!(
                    "daemon {} was not answering ({why}); killed it",
                    pid.map_or_else(|| "?".into(), |p| p.to_string())
                ));
            }
        }
    }
    // Cleaning under the life lock: no daemon can start meanwhile and have
    // its fresh servers taken for leftovers.
    if target.paths.life_lock.exists()
        && let Ok(Some(_life)) = FileLock::try_acquire(&target.paths.life_lock)
    {
        for note in record::clean_stale(&store, &target.paths) {
            lines.push(format!("cleaned up: {note}"));
        }
    }
    lines
}

/// Waits until no daemon holds the life lock.
fn wait_for_exit(paths: &Paths, timeout: Duration) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if remote::life_lock_free(paths) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM, then SIGKILL, to the daemon in the record, when the record's
/// start time proves the pid is still that daemon.
fn kill_recorded_daemon(store: &Store) -> Option<u32> {
    let record = store.read_json::<DaemonRecord>(paths::RECORD).ok()??;
    let alive = procs::stat(record.pid).is_some_and(|p| p.start_time == record.start_time);
    if !alive {
        return Some(record.pid);
    }
    let pid = libc::pid_t::try_from(record.pid).ok()?;
    // SAFETY: kill(2) on a pid whose identity we checked by start time.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until && crate::util::process::is_alive(record.pid) {
        if procs::stat(record.pid).is_some_and(|p| p.zombie) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if procs::stat(record.pid).is_some_and(|p| p.start_time == record.start_time && !p.zombie) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    Some(record.pid)
}

fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

fn megabytes(kib: u64) -> String {
    format!("{:.1} MB", kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::wire::ServerStatus;

    #[test]
    fn status_reads_as_a_table_of_servers() {
        let status = StatusReply {
            pid: 10,
            build: "0.1.0+p1+ab".into(),
            uptime_ms: 125_000,
            idle_ms: 3_000,
            requests: 4,
            rss_kib: 5 * 1024,
            tree_rss_kib: 200 * 1024,
            memory_limit_mb: 1024,
            servers: vec![ServerStatus {
                name: "pyright".into(),
                root: "/p".into(),
                pid: Some(11),
                rss_kib: 190 * 1024,
                idle_ms: 3_000,
                requests: 4,
                warm_requests: 3,
                ..ServerStatus::default()
            }],
            ..StatusReply::default()
        };
        let text = render_status(&status);
        assert!(
            text.contains("pid 10, build 0.1.0+p1+ab, up 2m05s, idle 3s, 4 requests"),
            "{text}"
        );
        assert!(text.contains("memory: 200.0 MB for the daemon and its servers (daemon alone 5.0 MB), ceiling 1024 MB"), "{text}");
        assert!(text.contains("  pyright pid 11, RSS 190.0 MB, idle 3s, 4 requests (3 warm), 0 restart(s), 0 open file(s), root /p"), "{text}");
    }
}
