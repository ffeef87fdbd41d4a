//! The hooks' side of the daemon: find it (or start it), check its build,
//! and send it checks — never waiting on a sick one.
//!
//! - Connecting and the `hello` handshake each get `connect_timeout_ms`. A
//!   daemon that accepts but does not answer is sick: the hook checks in its
//!   own process at once instead.
//! - No daemon: under the start lock (so racing hooks start one) the hook
//!   starts `ralph-hooks daemon` detached and waits up to
//!   `start_timeout_ms` for it to answer, its first handshake included (a
//!   daemon just started is slow on a busy machine, not sick).
//! - A daemon of another build is asked to stop and replaced.
//! - A check waits until its deadline; the daemon answers by then (with a
//!   timeout, if its server is hung). Any failure of the daemon itself
//!   (killed mid-request, garbage, refusal) falls back to the in-process
//!   cold check while time is left, and says so in `[DEBUG]`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::config::{self, DaemonConfig};
use super::paths::Paths;
use super::wire::{
    self, CallOutcome, CallReply, Conn, ConnError, DiagnoseReply, HelloReply, Outcome, Request,
};
use crate::hook::ctx::Ctx;
use crate::lsp::pool::{Answer, Limits, Remote};
use crate::lsp::{CallAnswer, Launch, LspError, OpenFile};
use crate::state::FileLock;

/// How much later than the check's deadline the hook waits for the reply.
const REPLY_GRACE: Duration = Duration::from_millis(300);

/// Where a daemon is, and how to start one.
#[derive(Debug, Clone)]
pub struct Target {
    pub paths: Paths,
    pub project_root: PathBuf,
    pub state_root: PathBuf,
    pub config: DaemonConfig,
    /// The `ralph-hooks` binary that runs the daemon.
    pub exe: Option<PathBuf>,
}

impl Target {
    pub fn for_ctx(ctx: &Ctx) -> Target {
        Target {
            paths: Paths::new(&ctx.state_root),
            project_root: ctx.project_root.clone(),
            state_root: ctx.state_root.clone(),
            config: DaemonConfig::load(ctx),
            exe: daemon_exe(),
        }
    }

    /// The build a daemon must be to be used: the build of the binary we
    /// would start.
    pub fn expected_build(&self) -> Option<String> {
        self.exe.as_deref().map(wire::build_id)
    }
}

/// Whether hooks should use the daemon, and why not.
pub fn disabled_reason(ctx: &Ctx) -> Option<&'static str> {
    if config::disabled_by_env() {
        return Some("RALPH_HOOKS_DAEMON=0");
    }
    if !DaemonConfig::load(ctx).enabled {
        return Some("\"daemon\": {\"enabled\": false}");
    }
    None
}

/// The `ralph-hooks` binary: `$RALPH_HOOKS_CLI`, else next to this
/// executable, else on PATH.
pub fn daemon_exe() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RALPH_HOOKS_CLI").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    if let Ok(current) = std::env::current_exe()
        && let Some(dir) = current.parent()
    {
        let sibling = dir.join("ralph-hooks");
        if sibling.is_file() {
            return Some(sibling);
        }
    }
    which::which("ralph-hooks").ok()
}

/// A daemon that answered `hello`.
pub struct Connected {
    pub conn: Conn,
    pub hello: HelloReply,
    /// What happened on the way ("started it", "replaced build X").
    pub note: Option<String>,
}

/// Why no daemon can be used now.
#[derive(Debug)]
pub struct Unavailable(pub String);

enum Attempt {
    Ready(Connected),
    /// Nobody listens (no socket, or a stale one).
    Absent(String),
    /// Somebody listens but does not answer in time: sick.
    Sick(String),
    /// A daemon of another build answered.
    OtherBuild(Conn, HelloReply),
}

fn attempt(target: &Target, build: Option<&str>) -> Attempt {
    attempt_within(target, build, target.config.connect_timeout())
}

/// [`attempt`] with `timeout` for connecting and for the handshake.
fn attempt_within(target: &Target, build: Option<&str>, timeout: Duration) -> Attempt {
    let mut conn = match Conn::connect(&target.paths.socket, timeout) {
        Ok(conn) => conn,
        Err(ConnError::Timeout(why)) => return Attempt::Sick(why),
        Err(error) => return Attempt::Absent(error.to_string()),
    };
    let hello = match conn.hello(build.unwrap_or("any"), Instant::now() + timeout) {
        Ok(hello) => hello,
        Err(ConnError::Timeout(_)) => {
            return Attempt::Sick(format!(
                "it accepted the connection but did not answer the handshake within {} ms",
                timeout.as_millis()
            ));
        }
        // Closed while shutting down, or garbage: treat as not there.
        Err(error) => return Attempt::Absent(format!("the handshake failed: {error}")),
    };
    match build {
        Some(build) if hello.build != build || hello.protocol != wire::PROTOCOL => {
            Attempt::OtherBuild(conn, hello)
        }
        _ => Attempt::Ready(Connected {
            conn,
            hello,
            note: None,
        }),
    }
}

/// Connects to a running daemon of our build, without starting one.
pub fn connect_ready(target: &Target, build: &str) -> Option<Connected> {
    match attempt(target, Some(build)) {
        Attempt::Ready(connected) => Some(connected),
        _ => None,
    }
}

/// Starts a daemon that pre-starts the project's servers by itself, unless
/// one runs or is being started; never waits for it (SessionStart must not).
pub fn spawn_for_prestart(target: &Target) -> Result<Option<u32>, Unavailable> {
    let Ok(Some(_start_lock)) = FileLock::try_acquire(&target.paths.start_lock) else {
        return Ok(None);
    };
    if !life_lock_free(&target.paths) {
        return Ok(None);
    }
    spawn_daemon(target, true)
        .map(|child| Some(child.id()))
        .map_err(|error| Unavailable(format!("cannot start the daemon: {error:#}")))
}

/// Connects to the running daemon of any build, without starting one
/// (`daemon status` and `daemon stop`).
pub fn connect_existing(target: &Target) -> Result<Connected, Unavailable> {
    match attempt(target, None) {
        Attempt::Ready(connected) => Ok(connected),
        Attempt::Absent(why) | Attempt::Sick(why) => Err(Unavailable(why)),
        Attempt::OtherBuild(conn, hello) => Ok(Connected {
            conn,
            hello,
            note: None,
        }),
    }
}

/// Connects to a daemon of our build, starting (or replacing) one as needed.
pub fn connect_or_start(target: &Target) -> Result<Connected, Unavailable> {
    let Some(build) = target.expected_build() else {
        return Err(Unavailable(
            "no ralph-hooks binary next to this hook or on PATH to run the daemon".into(),
        ));
    };
    let mut note = None;
    match attempt(target, Some(&build)) {
        Attempt::Ready(connected) => return Ok(connected),
        Attempt::Sick(why) => {
            return Err(Unavailable(format!("the daemon is not answering: {why}")));
        }
        Attempt::OtherBuild(mut conn, hello) => {
            let _ = conn.call::<serde_json::Value>(
                &Request::Stop {
                    reason: format!("replaced by build {build}"),
                },
                Instant::now() + target.config.connect_timeout(),
            );
            note = Some(format!(
                "replaced daemon {} of build {} by build {build}",
                hello.pid, hello.build
            ));
        }
        Attempt::Absent(_) => {}
    }
    start(target, &build, note)
}

fn start(target: &Target, build: &str, note: Option<String>) -> Result<Connected, Unavailable> {
    let deadline = Instant::now() + target.config.start_timeout();
    let mut pause = Duration::from_millis(2);
    // Racing hooks: one holds the start lock and starts the daemon; the
    // others wait for it to answer.
    let _start_lock = loop {
        match FileLock::try_acquire(&target.paths.start_lock) {
            Ok(Some(lock)) => break lock,
            Ok(None) => {}
            Err(error) => {
                return Err(Unavailable(format!(
                    "cannot take the start lock: {error:#}"
                )));
            }
        }
        if let Attempt::Ready(connected) = attempt(target, Some(build)) {
            return Ok(with_note(connected, note));
        }
        if Instant::now() >= deadline {
            return Err(Unavailable(
                "another hook is starting the daemon and it did not come up in time".into(),
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let mut spawned: Option<std::process::Child> = None;
    loop {
        // A daemon we just started is setting itself up (threads, config,
        // its first accept) and, on a busy machine, may take longer than
        // `connect_timeout_ms` to answer its first handshake: that is slow,
        // not sick, and this hook pays for the start anyway. So it gets the
        // rest of the start budget; a running daemon keeps the short wait.
        let timeout = if spawned.is_some() {
            deadline
                .saturating_duration_since(Instant::now())
                .max(target.config.connect_timeout())
        } else {
            target.config.connect_timeout()
        };
        match attempt_within(target, Some(build), timeout) {
            Attempt::Ready(connected) => {
                let started = spawned
                    .as_ref()
                    .map(|child| format!("started daemon {}", child.id()));
                let note = match (note, started) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b),
                };
                return Ok(with_note(connected, note));
            }
            Attempt::Sick(why) if spawned.is_some() => {
                return Err(Unavailable(format!(
                    "the daemon just started is not answering: {why}"
                )));
            }
            _ => {}
        }
        // A daemon that exited without answering cannot start here (its
        // reason is in daemon.log); waiting longer would not help.
        if let Some(child) = &mut spawned
            && let Ok(Some(status)) = child.try_wait()
        {
            return Err(Unavailable(format!(
                "daemon {} exited at once ({status}); see daemon/daemon.log",
                child.id()
            )));
        }
        // Start one only when no daemon holds the life lock (a replaced one
        // may still be shutting down its servers).
        if spawned.is_none() && life_lock_free(&target.paths) {
            spawned = Some(
                spawn_daemon(target, false)
                    .map_err(|error| Unavailable(format!("cannot start the daemon: {error:#}")))?,
            );
        }
        if Instant::now() >= deadline {
            return Err(Unavailable(match &spawned {
                Some(child) => format!(
                    "daemon {} did not answer within {} ms of being started",
                    child.id(),
                    target.config.start_timeout_ms
                ),
                None => "a daemon holds the state root but does not answer".into(),
            }));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn with_note(mut connected: Connected, note: Option<String>) -> Connected {
    connected.note = note;
    connected
}

/// Whether no daemon holds the state root (probing takes the lock for an
/// instant; a daemon starting meanwhile waits for it). No lock file means no
/// daemon ever ran here, and nothing is created to find that out.
pub fn life_lock_free(paths: &Paths) -> bool {
    !paths.life_lock.exists() || matches!(FileLock::try_acquire(&paths.life_lock), Ok(Some(_)))
}

/// Whether the next daemon this process starts is announced on stderr: the
/// CLI says so once (a person should know a process stays behind); a
/// hook's stderr belongs to Claude Code and stays quiet.
static ANNOUNCE_START: AtomicBool = AtomicBool::new(false);

/// Say on stderr, once, when this process starts a daemon.
pub fn announce_start() {
    ANNOUNCE_START.store(true, Ordering::Relaxed);
}

/// Starts `ralph-hooks daemon` detached: its own session, no terminal, all
/// three streams on /dev/null (a daemon holding the hook's stdout would make
/// Claude Code wait for it). With `prestart` it starts the servers the
/// project used before. The child is not waited for unless it exits at once:
/// the hook ends long before the daemon, which init (or the session's
/// subreaper) then reaps.
pub fn spawn_daemon(target: &Target, prestart: bool) -> anyhow::Result<std::process::Child> {
    let exe = target
        .exe
        .as_deref()
        .ok_or_else(|| anyhow::anyhow!("no ralph-hooks binary"))?;
    // The daemon's files (socket, record, log, locks) go into the state
    // folder: git must not see them, also in a project never installed into.
    if let Err(error) = crate::state::Store::new(target.state_root.clone()).ignore_in_git() {
        eprintln!("ralph-hooks: warning: {error:#}");
    }
    let mut command = Command::new(exe);
    command
        .arg("--project")
        .arg(&target.project_root)
        .args(["daemon", "run"])
        .args(prestart.then_some("--prestart"))
        .env("RALPH_HOOKS_STATE_DIR", &target.state_root)
        .current_dir(&target.project_root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    // A binary being installed right now is "busy" for an instant (a
    // writer's descriptor, or one a concurrent fork inherited).
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Ok(child) => {
                if ANNOUNCE_START.swap(false, Ordering::Relaxed) {
                    eprintln!(
                        "ralph-hooks: started the daemon that keeps language servers warm (pid {}, {}); `ralph-hooks daemon stop` stops it",
                        child.id(),
                        target.project_root.display()
                    );
                }
                return Ok(child);
            }
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 10 =>
            {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => anyhow::bail!("cannot run {}: {error}", exe.display()),
        }
    }
}

/// The pool's remote: checks go to the daemon while it works; after its
/// first failure this hook call checks in-process.
pub struct DaemonRemote {
    target: Target,
    debug: bool,
    connected: Option<Connected>,
    failed: bool,
}

impl DaemonRemote {
    pub fn new(target: Target, debug: bool) -> DaemonRemote {
        DaemonRemote {
            target,
            debug,
            connected: None,
            failed: false,
        }
    }

    fn debug(&self, message: std::fmt::Arguments<'_>) {
        if self.debug {
            eprintln!("[DEBUG] daemon: {message}");
        }
    }

    fn give_up<T>(&mut self, why: &str, deadline: Instant) -> Option<Result<T, LspError>> {
        self.failed = true;
        self.connected = None;
        if Instant::now() >= deadline {
            self.debug(format_args!(
                "{why}; no time is left to check in-process either"
            ));
            return Some(Err(LspError::Timeout {
                waiting_for: "the ralph-hooks daemon".into(),
                after: Duration::ZERO,
                detail: format!(" ({why})"),
            }));
        }
        self.debug(format_args!(
            "{why}; falling back to an in-process check (cold server start)"
        ));
        None
    }
}

impl DaemonRemote {
    /// Connects (starting a daemon when needed) unless connected already;
    /// the reason when no daemon can be used.
    fn ensure_connected(&mut self) -> Result<(), String> {
        if self.connected.is_some() {
            return Ok(());
        }
        match connect_or_start(&self.target) {
            Ok(connected) => {
                if let Some(note) = &connected.note {
                    self.debug(format_args!("{note}"));
                }
                self.connected = Some(connected);
                Ok(())
            }
            Err(Unavailable(why)) => Err(format!("not used: {why}")),
        }
    }
}

impl Remote for DaemonRemote {
    fn call(
        &mut self,
        launch: &Launch,
        files: &[OpenFile],
        method: &str,
        params: &serde_json::Value,
        deadline: Instant,
    ) -> Option<Result<CallAnswer, LspError>> {
        if self.failed {
            return None;
        }
        let started = Instant::now();
        if let Err(why) = self.ensure_connected() {
            return self.give_up(&why, deadline);
        }
        let connected = self.connected.as_mut()?;
        let daemon_pid = connected.hello.pid;
        let request = Request::Call {
            launch: Box::new(launch.into()),
            fingerprint: wire::fingerprint(launch),
            open: files.to_vec(),
            method: method.to_string(),
            params: params.clone(),
            deadline_ms: deadline
                .saturating_duration_since(Instant::now())
                .as_millis() as u64,
        };
        let reply: CallReply = match connected.conn.call(&request, deadline + REPLY_GRACE) {
            Ok(reply) => reply,
            Err(error) => {
                return self.give_up(
                    &format!("daemon {daemon_pid} failed during {method}: {error}"),
                    deadline,
                );
            }
        };
        let state = if reply.warm { "warm" } else { "cold start" };
        self.debug(format_args!(
            "{} answered {method} ({state}) in {} ms, {} in the daemon (daemon pid {daemon_pid})",
            launch.name,
            started.elapsed().as_millis(),
            reply.elapsed_ms
        ));
        Some(match reply.outcome {
            CallOutcome::Answer { answer } => Ok(answer),
            CallOutcome::Failed { error } => Err(LspError::from(error)),
        })
    }

    fn diagnose(
        &mut self,
        launch: &Launch,
        path: &Path,
        text: &str,
        language_id: &str,
        limits: &Limits,
    ) -> Option<Answer> {
        let deadline = limits.deadline;
        if self.failed {
            return None;
        }
        let started = Instant::now();
        if self.connected.is_none() {
            match connect_or_start(&self.target) {
                Ok(connected) => {
                    if let Some(note) = &connected.note {
                        self.debug(format_args!("{note}"));
                    }
                    self.connected = Some(connected);
                }
                Err(Unavailable(why)) => {
                    return self
                        .give_up(&format!("not used: {why}"), deadline)
                        .map(no_warmup);
                }
            }
        }
        let connected = self.connected.as_mut()?;
        let daemon_pid = connected.hello.pid;
        let request = Request::Diagnose {
            launch: Box::new(launch.into()),
            fingerprint: wire::fingerprint(launch),
            path: path.to_path_buf(),
            text: text.to_string(),
            language_id: language_id.to_string(),
            deadline_ms: deadline
                .saturating_duration_since(Instant::now())
                .as_millis() as u64,
            budget_ms: limits.budget.map(|b| b.as_millis() as u64),
            startup_ms: limits.startup.map(|s| s.as_millis() as u64),
        };
        let reply: DiagnoseReply = match connected.conn.call(&request, deadline + REPLY_GRACE) {
            Ok(reply) => reply,
            Err(error) => {
                return self
                    .give_up(
                        &format!("daemon {daemon_pid} failed during the check: {error}"),
                        deadline,
                    )
                    .map(no_warmup);
            }
        };
        let warmup = Duration::from_millis(reply.warmup_ms);
        let state = if reply.warm { "warm" } else { "cold start" };
        let server = reply.server_pid.map_or_else(
            || "no server running".to_string(),
            |pid| format!("server pid {pid}"),
        );
        match reply.outcome {
            Outcome::Diagnostics { items } => {
                self.debug(format_args!(
                    "{} answered ({state}) in {} ms, {} in the daemon ({server}, daemon pid {daemon_pid})",
                    launch.name,
                    started.elapsed().as_millis(),
                    reply.elapsed_ms
                ));
                Some(Answer {
                    result: Ok(items),
                    warmup,
                })
            }
            Outcome::Failed { error } => {
                let error = LspError::from(error);
                self.debug(format_args!(
                    "{} failed in the daemon ({state}) after {} ms: {error}",
                    launch.name, reply.elapsed_ms
                ));
                Some(Answer {
                    result: Err(error),
                    warmup,
                })
            }
        }
    }
}

/// A check the daemon did not make: no warm-up time spent on it.
fn no_warmup(result: Result<Vec<crate::lsp::ServerDiagnostic>, LspError>) -> Answer {
    Answer {
        result,
        warmup: Duration::ZERO,
    }
}
