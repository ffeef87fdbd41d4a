//! Warm language servers: a per-project daemon that keeps them
//! running between hook calls, so only the first check of a session pays
//! for a server's cold start.
//!
//! - [`remote`]: the hooks' side — find, start (single-flight), replace or
//!   give up on the daemon, and the pool [`Remote`](crate::lsp::pool::Remote)
//!   that sends it checks, falling back in-process on any failure.
//! - [`server`]: the daemon process; [`worker`]: one thread per server
//!   (reuse, restarts with a bound, idle shutdown, files closed, project
//!   checks run as batches that outlive their caller); [`checks`]: project
//!   checks with the daemon's servers ([`project_check`] is the callers'
//!   side).
//! - [`fresh`]: what changed on the disk since a server last looked;
//!   the files outside the walk it reads are [`crate::engine::deps`].
//! - [`wire`]: the JSON-lines protocol and its handshake; [`paths`]: socket
//!   and locks; [`record`]: `daemon.json`, `servers.json`, the log;
//!   [`procs`]: RSS and leftover process groups from /proc; [`heap`]:
//!   the allocator's freed memory given back;
//!   [`config`]: the `daemon` config section.
//!
//! Configuration and behaviour are described in docs/engine.md, "Warm
//! language servers (daemon)".
//!
//! Uses [`crate::engine`] (the project check it runs), [`crate::lsp`] and
//! the layers below; used by the diagnostics (its [`pool`]), the Stop hook
//! and the CLI ([`project_check`]), session start (pre-start) and
//! `ralph-hooks daemon`.

pub mod checks;
pub mod config;
pub mod detect;
pub mod fresh;
pub mod heap;
pub mod paths;
pub mod procs;
pub mod record;
pub mod remote;
pub mod server;
pub mod wire;
pub mod worker;

use std::time::{Duration, Instant};

use crate::engine::files::NoSuchPath;
use crate::engine::report::Report;
use crate::engine::run::Options;
use crate::hook::ctx::Ctx;
use crate::lsp::Pool;
use crate::lsp::servers::{Registry, Selection, find_binary, workspace_root};

/// The pool the diagnostics checks use: it asks the daemon first, unless
/// the daemon is turned off.
pub fn pool(ctx: &Ctx) -> Pool {
    if let Some(why) = remote::disabled_reason(ctx) {
        ctx.debug(format_args!("daemon: off ({why}); checking in-process"));
        return Pool::default();
    }
    let target = remote::Target::for_ctx(ctx);
    Pool::with_remote(Box::new(remote::DaemonRemote::new(target, ctx.debug)))
}

/// How much longer than a check's budget its caller waits for the daemon's
/// answer: the report is assembled (ast-grep, reading files with problems)
/// after the servers' time is up.
const CHECK_REPLY_SLACK: Duration = Duration::from_secs(10);
/// The wait for a check without a budget.
const UNBUDGETED_CHECK: Duration = Duration::from_secs(31 * 60);

/// A project check with the warm servers: asked of the daemon (started when
/// needed), so servers stay warm for the next check and a batch not done in
/// time goes on there. When the daemon is off or fails, `fallback` runs the
/// check — the CLI runs it in its own process; a hook, which must not carry
/// the check's code, runs `ralph-hooks check` as a child.
pub fn project_check(
    ctx: &Ctx,
    options: &Options,
    fallback: impl FnOnce() -> Result<Report, NoSuchPath>,
) -> Result<Report, NoSuchPath> {
    project_check_with_progress(ctx, options, None, fallback)
}

/// [`project_check`], telling `progress` (files answered, files in all) as
/// the daemon's servers answer.
pub fn project_check_with_progress(
    ctx: &Ctx,
    options: &Options,
    mut progress: Option<&mut dyn FnMut(usize, usize)>,
    fallback: impl FnOnce() -> Result<Report, NoSuchPath>,
) -> Result<Report, NoSuchPath> {
    let started = Instant::now();
    if let Some(why) = remote::disabled_reason(ctx) {
        ctx.debug(format_args!("daemon: off ({why}); checking without it"));
        return fallback();
    }
    let target = remote::Target::for_ctx(ctx);
    let mut connected = match remote::connect_or_start(&target) {
        Ok(connected) => connected,
        Err(remote::Unavailable(why)) => {
            ctx.debug(format_args!("daemon: not used: {why}; checking without it"));
            return fallback();
        }
    };
    if let Some(note) = &connected.note {
        ctx.debug(format_args!("{note}"));
    }
    let wait = options.budget.unwrap_or(UNBUDGETED_CHECK) + CHECK_REPLY_SLACK;
    let request = wire::Request::Check {
        project: ctx.project_root.clone(),
        options: for_the_daemon(options),
        debug: ctx.debug,
        progress: progress.is_some(),
    };
    let mut ignore = |_: usize, _: usize| {};
    let progress: &mut dyn FnMut(usize, usize) = match progress.as_mut() {
        Some(progress) => *progress,
        None => &mut ignore,
    };
    match connected.conn.call_with_progress::<wire::CheckReply>(
        &request,
        Instant::now() + wait,
        progress,
    ) {
        Ok(wire::CheckReply::Report { report, elapsed_ms }) => {
            ctx.debug(format_args!(
                "daemon {}: project check of {} file(s) in {elapsed_ms} ms ({} ms here): {:?}",
                connected.hello.pid,
                report.files.len(),
                started.elapsed().as_millis(),
                report.timings
            ));
            Ok(*report)
        }
        Ok(wire::CheckReply::NoSuchPath { path }) => Err(NoSuchPath(path)),
        Err(error) => {
            ctx.debug(format_args!(
                "daemon {}: the project check failed ({error}); checking without it",
                connected.hello.pid
            ));
            fallback()
        }
    }
}

/// The daemon runs elsewhere: paths are sent absolute, from this process's
/// current directory, with this process's Python environment (see
/// `lsp::environment`).
fn for_the_daemon(options: &Options) -> Options {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut options = options.clone();
    options.caller_env = Some(crate::lsp::environment::caller_variables());
    for path in &mut options.paths {
        if !path.is_absolute() {
            *path = cwd.join(&*path);
        }
    }
    options
}

/// A hook's fallback: `ralph-hooks check` in a child process (with the
/// daemon off, so it checks in its own process), its report read back.
pub fn check_in_child(ctx: &Ctx, options: &Options) -> Result<Report, NoSuchPath> {
    let not_run = |why: String| {
        let mut report = Report::default();
        report
            .rule_problems
            .push(format!("the project check could not run: {why}"));
        report.budget_ran_out = true;
        report
    };
    let Some(exe) = remote::daemon_exe() else {
        return Ok(not_run("no ralph-hooks binary found".into()));
    };
    let mut command = std::process::Command::new(&exe);
    command
        .arg("--project")
        .arg(&ctx.project_root)
        .arg("check")
        .arg("--report-json")
        .arg("--min-severity")
        .arg(options.min_severity.word())
        .env("RALPH_HOOKS_DAEMON", "0")
        .stdin(std::process::Stdio::null());
    if !options.ast_grep {
        command.arg("--no-ast-grep");
    }
    if let Some(budget) = options.budget {
        command
            .arg("--budget")
            .arg(format!("{:.3}", budget.as_secs_f64()));
    }
    for path in &for_the_daemon(options).paths {
        command.arg(path);
    }
    let wait = options.budget.unwrap_or(UNBUDGETED_CHECK) + CHECK_REPLY_SLACK;
    let stdout = match run_for_stdout(&mut command, wait) {
        Ok(stdout) => stdout,
        Err(why) => return Ok(not_run(format!("{}: {why}", exe.display()))),
    };
    match serde_json::from_slice::<wire::CheckReply>(&stdout) {
        Ok(wire::CheckReply::Report { report, .. }) => Ok(*report),
        Ok(wire::CheckReply::NoSuchPath { path }) => Err(NoSuchPath(path)),
        Err(error) => Ok(not_run(format!(
            "`{} check` answered no report ({error})",
            exe.display()
        ))),
    }
}

/// Runs `command` in its own process group (killed with us), its stdout
/// read on a thread (so a full pipe cannot stall it), for at most `wait`.
fn run_for_stdout(command: &mut std::process::Command, wait: Duration) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let mut child = crate::util::process::GroupChild::spawn(command).map_err(|e| e.to_string())?;
    let mut stdout = child.child_mut().stdout.take().ok_or("no stdout pipe")?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    match child.wait_timeout(wait) {
        Ok(Some(_)) => reader.join().map_err(|_| "its output was lost".to_string()),
        Ok(None) => {
            child.kill();
            Err(format!("no report within {} s", wait.as_secs()))
        }
        Err(error) => Err(error.to_string()),
    }
}

/// SessionStart: start the daemon and the servers this project used before
/// or whose languages it contains ([`detect`]), without waiting for either.
/// Nothing happens when neither finds a server, or when pre-start or the
/// daemon is off.
pub fn prestart(ctx: &Ctx) {
    let started = Instant::now();
    if let Some(why) = remote::disabled_reason(ctx) {
        ctx.debug(format_args!("daemon: no pre-start ({why})"));
        return;
    }
    let config = config::DaemonConfig::load(ctx);
    if !config.prestart {
        ctx.debug(format_args!(
            "daemon: no pre-start (\"daemon\": {{\"prestart\": false}})"
        ));
        return;
    }
    let servers = prestart_items(ctx, config.prestart_detect);
    if servers.is_empty() {
        ctx.debug(format_args!(
            "daemon: no pre-start (no server used here yet and no language detected)"
        ));
        return;
    }
    let names: Vec<String> = servers.iter().map(|s| s.launch.name.clone()).collect();
    let names = names.join(", ");
    let target = remote::Target::for_ctx(ctx);
    let Some(build) = target.expected_build() else {
        ctx.debug(format_args!("daemon: no pre-start (no ralph-hooks binary)"));
        return;
    };
    if let Some(mut connected) = remote::connect_ready(&target, &build) {
        let sent = connected.conn.call::<serde_json::Value>(
            &wire::Request::Prestart { servers },
            Instant::now() + config.connect_timeout(),
        );
        match sent {
            Ok(_) => ctx.debug(format_args!(
                "daemon: pre-starting {names} in daemon {} ({} ms)",
                connected.hello.pid,
                started.elapsed().as_millis()
            )),
            Err(error) => ctx.debug(format_args!("daemon: no pre-start: {error}")),
        }
        return;
    }
    match remote::spawn_for_prestart(&target) {
        Ok(Some(pid)) => ctx.debug(format_args!(
            "daemon: started daemon {pid}, pre-starting {names} ({} ms)",
            started.elapsed().as_millis()
        )),
        Ok(None) => ctx.debug(format_args!(
            "daemon: no pre-start (a daemon is starting or not answering)"
        )),
        Err(remote::Unavailable(why)) => ctx.debug(format_args!("daemon: no pre-start: {why}")),
    }
}

/// The servers to pre-start: those this project used, started the way the
/// current configuration says (the record only says which ones), and with
/// `detect` those of the languages the project contains.
pub fn prestart_items(ctx: &Ctx, detect: bool) -> Vec<wire::PrestartItem> {
    let recent = record::recent_servers(ctx.store());
    let probes = if detect {
        detect::language_probes(&ctx.project_root)
    } else {
        Vec::new()
    };
    if recent.is_empty() && probes.is_empty() {
        return Vec::new();
    }
    // Only the server registry matters here (the include/exclude globs and
    // the diagnostics section are for checks).
    let registry = Registry::load(&ctx.project_root, ctx.config());
    for warning in &registry.warnings {
        eprintln!("ralph-hooks: warning: {warning}");
    }
    let mut items: Vec<wire::PrestartItem> = recent
        .iter()
        .filter_map(|used| {
            let server = registry
                .servers
                .iter()
                .find(|server| server.enabled && server.name == used.name)?;
            let program = find_binary(&server.command, &ctx.project_root, &[used.root.as_path()])?;
            let launch = server.launch(program, used.root.clone(), &ctx.project_root);
            Some(wire::PrestartItem {
                fingerprint: wire::fingerprint(&launch),
                launch: (&launch).into(),
                startup_ms: server.startup_timeout.map(|d| d.as_millis() as u64),
            })
        })
        .collect();
    for probe in probes {
        let Selection::Found {
            server, program, ..
        } = registry.select(&probe, &ctx.project_root)
        else {
            continue;
        };
        let root = workspace_root(server, &probe, &ctx.project_root);
        if items
            .iter()
            .any(|item| item.launch.name == server.name && item.launch.root == root)
        {
            continue;
        }
        let launch = server.launch(program, root, &ctx.project_root);
        items.push(wire::PrestartItem {
            fingerprint: wire::fingerprint(&launch),
            launch: (&launch).into(),
            startup_ms: server.startup_timeout.map(|d| d.as_millis() as u64),
        });
    }
    items
}
