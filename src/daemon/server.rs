//! The daemon process (`ralph-hooks daemon`): one per state root, holding
//! warm language servers for the hooks.
//!
//! - It takes the life lock first (a second daemon waits, then leaves), then
//!   cleans up after a predecessor that was killed (its leftover servers,
//!   record and socket), binds the socket (private mode), and writes its
//!   record.
//! - Each connection gets a thread; each server a worker thread
//!   ([`super::worker`]). Checks of different servers run side by side.
//! - The main thread ticks: it stops on `stop`, a signal, or when its
//!   socket was removed or replaced (the project or state root is gone);
//!   it enforces the memory ceiling by shutting the least recently used
//!   server down; it exits when no server ran and no request came for
//!   `exit_idle_ms`; it re-reads its config section when the file changes.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use serde_json::json;

use super::config::DaemonConfig;
use super::paths::{self, Paths};
use super::procs;
use super::record::{self, DaemonRecord, ServerRecord};
use super::wire::{
    self, Conn, DiagnoseReply, HelloReply, Outcome, PROTOCOL, Request, ServerStatus, StatusReply,
    WireError,
};
use super::worker::{
    self, CallJob, DiagnoseJob, Host, Job, Key, Registry, ServerInfo, WorkerHandle,
};
use crate::hook::ctx::Ctx;
use crate::lsp::{Launch, LspError};
use crate::state::{FileLock, Store};

/// How often the main thread looks around.
const TICK: Duration = Duration::from_millis(200);
/// How often the memory ceiling is checked.
const MEMORY_CHECK: Duration = Duration::from_secs(1);
/// How long a new daemon waits for the previous one to let go of the lock.
const LIFE_LOCK_WAIT: Duration = Duration::from_secs(10);
/// Connections at once; more are refused (the hook falls back).
const MAX_CONNECTIONS: usize = 64;
/// A connection that sends nothing for this long is closed.
const CONNECTION_IDLE: Duration = Duration::from_secs(300);
/// How long a reply may take to write.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How much later than its deadline a check may answer (the worker notices
/// the deadline itself; this covers the hand-over).
const REPLY_SLACK: Duration = Duration::from_millis(100);
/// The log is trimmed above this size when a daemon starts.
const MAX_LOG_BYTES: u64 = 256 * 1024;

static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// Everything the daemon's threads share.
pub struct Shared {
    pub paths: Paths,
    pub project: PathBuf,
    pub build: String,
    started: Instant,
    started_at: String,
    config: Mutex<DaemonConfig>,
    registry: Mutex<Registry>,
    stop_reason: Mutex<Option<String>>,
    requests: AtomicU64,
    last_request: Mutex<Instant>,
    evictions: AtomicU64,
    connections: AtomicUsize,
    next_worker: AtomicU64,
}

impl Host for Shared {
    fn config(&self) -> DaemonConfig {
        Shared::config(self)
    }

    fn lock_registry(&self) -> MutexGuard<'_, Registry> {
        Shared::lock_registry(self)
    }

    fn log(&self, message: &str) {
        Shared::log(self, message)
    }

    fn write_record(&self) {
        Shared::write_record(self)
    }

    fn remember(&self, key: &Key) {
        Shared::remember(self, key)
    }

    fn state_root(&self) -> &Path {
        &self.paths.state_root
    }

    fn route(self: Arc<Self>, key: &Key, job: Job) -> Result<Arc<Mutex<ServerInfo>>, String> {
        Shared::route(&self, key, job)
    }
}

impl Shared {
    pub fn config(&self) -> DaemonConfig {
        self.config
            .lock()
            .map(|config| config.clone())
            .unwrap_or_default()
    }

    pub fn lock_registry(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn store(&self) -> Store {
        Store::new(self.paths.state_root.clone())
    }

    pub fn log(&self, message: &str) {
        record::log(&self.store(), message);
    }

    pub fn remember(&self, key: &Key) {
        if let Err(error) = record::remember_server(&self.store(), &key.0, &key.1) {
            self.log(&format!(
                "cannot remember {} for pre-start: {error:#}",
                key.0
            ));
        }
    }

    fn base_record(&self) -> DaemonRecord {
        let pid = std::process::id();
        DaemonRecord {
            pid,
            start_time: procs::stat(pid).map_or(0, |p| p.start_time),
            build: self.build.clone(),
            socket: self.paths.socket.clone(),
            project: self.project.clone(),
            started_at: self.started_at.clone(),
            servers: Vec::new(),
        }
    }

    /// Rewrites `daemon.json` with the servers running now. The store lock
    /// is taken before the registry lock, never the other way round.
    pub fn write_record(&self) {
        let store = self.store();
        let Ok(locked) = store.lock(paths::RECORD) else {
            return;
        };
        let mut record = self.base_record();
        let pids: Vec<(String, PathBuf, u32)> = {
            let registry = self.lock_registry();
            registry
                .workers
                .values()
                .filter_map(|handle| {
                    let info = handle.info.lock().ok()?;
                    Some((info.name.clone(), info.root.clone(), info.pid?))
                })
                .collect()
        };
        record.servers = pids
            .into_iter()
            .map(|(name, root, pid)| ServerRecord {
                name,
                root,
                pid,
                start_time: procs::stat(pid).map_or(0, |p| p.start_time),
            })
            .collect();
        if let Err(error) = locked.save_json(&record) {
            drop(locked);
            self.log(&format!("cannot write the daemon record: {error:#}"));
        }
    }

    fn request_stop(&self, reason: &str) {
        if let Ok(mut stop) = self.stop_reason.lock()
            && stop.is_none()
        {
            *stop = Some(reason.to_string());
        }
    }

    fn stop_requested(&self) -> Option<String> {
        self.stop_reason.lock().ok().and_then(|stop| stop.clone())
    }

    fn note_request(&self) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut last) = self.last_request.lock() {
            *last = Instant::now();
        }
    }

    fn idle_for(&self) -> Duration {
        self.last_request
            .lock()
            .map(|last| last.elapsed())
            .unwrap_or_default()
    }

    /// Sends `job` to the worker of `key`, starting one when needed.
    /// Sends `job` to the worker of `key` (started if needed); returns what
    /// the worker shows of its server.
    fn route(self: &Arc<Shared>, key: &Key, job: Job) -> Result<Arc<Mutex<ServerInfo>>, String> {
        let mut registry = self.lock_registry();
        if registry.stopping {
            return Err("the daemon is stopping".into());
        }
        let job = match registry.workers.get(key) {
            Some(handle) => match handle.sender.send(job) {
                Ok(()) => return Ok(Arc::clone(&handle.info)),
                // The worker ended without leaving the registry (it
                // panicked): replace it.
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let id = self.next_worker.fetch_add(1, Ordering::SeqCst);
        let handle = worker::spawn(Arc::clone(self) as Arc<dyn Host>, key.clone(), id)
            .map_err(|error| format!("cannot start a worker thread: {error}"))?;
        handle
            .sender
            .send(job)
            .map_err(|_| "the new worker ended at once".to_string())?;
        let info = Arc::clone(&handle.info);
        registry.workers.insert(key.clone(), handle);
        Ok(info)
    }

    /// The worker of `key` when its server is warming up and a caller has
    /// already waited for it.
    fn warming_waited(&self, key: &Key) -> Option<Arc<Mutex<ServerInfo>>> {
        let registry = self.lock_registry();
        let handle = registry.workers.get(key)?;
        let waited = handle
            .info
            .lock()
            .is_ok_and(|info| info.starting && info.warming_waited);
        waited.then(|| Arc::clone(&handle.info))
    }

    fn status(&self) -> StatusReply {
        let table = procs::table();
        let pid = std::process::id();
        let config = self.config();
        let servers = {
            let registry = self.lock_registry();
            let mut servers: Vec<ServerStatus> = registry
                .workers
                .values()
                .filter_map(|handle| {
                    let info = handle.info.lock().ok()?;
                    Some(ServerStatus {
                        name: info.name.clone(),
                        root: info.root.clone(),
                        pid: info.pid,
                        rss_kib: info.pid.map_or(0, |p| procs::tree_rss_kib(&table, p)),
                        idle_ms: info.last_used.elapsed().as_millis() as u64,
                        requests: info.requests,
                        warm_requests: info.warm_requests,
                        restarts: info.restarts,
                        open_files: info.open_files,
                        busy: info.busy,
                        last_error: info.last_error.clone(),
                        warming: info.warming,
                        project_check: (info.batch_total > 0)
                            .then_some((info.batch_done, info.batch_total)),
                        command: info.command.clone(),
                        reason: info.reason.clone(),
                        knows_project: info.knows_project(None),
                    })
                })
                .collect();
            servers.sort_by(|a, b| (&a.name, &a.root).cmp(&(&b.name, &b.root)));
            servers
        };
        StatusReply {
            pid,
            build: self.build.clone(),
            project: self.project.clone(),
            socket: self.paths.socket.clone(),
            uptime_ms: self.started.elapsed().as_millis() as u64,
            idle_ms: self.idle_for().as_millis() as u64,
            requests: self.requests.load(Ordering::SeqCst),
            rss_kib: procs::rss_kib(&table, pid),
            tree_rss_kib: procs::tree_rss_kib(&table, pid),
            memory_limit_mb: config.memory_limit_mb,
            evictions: self.evictions.load(Ordering::SeqCst),
            servers,
        }
    }
}

/// Runs the daemon until it is stopped or idle; with `prestart`, first
/// starts the servers the project used before. Returns quietly when another
/// daemon holds the state root.
pub fn run(ctx: &Ctx, prestart: bool) -> anyhow::Result<()> {
    super::heap::limit_arenas();
    let paths = Paths::new(&ctx.state_root);
    let store = Store::new(ctx.state_root.clone());
    let Some(_life) = wait_for_life_lock(&paths)? else {
        record::log(&store, "another daemon runs for this state root; leaving");
        return Ok(());
    };
    record::trim_log(&store, MAX_LOG_BYTES);
    for note in record::clean_stale(&store, &paths) {
        record::log(&store, &format!("cleaned up: {note}"));
    }
    paths::prepare_socket_dir(&paths)?;
    let listener = bind_private(&paths.socket)?;
    let socket_identity = identity(&paths.socket)
        .with_context(|| format!("cannot stat {}", paths.socket.display()))?;
    let exe = std::env::current_exe().context("cannot find the daemon's own executable")?;
    let shared = Arc::new(Shared {
        paths: paths.clone(),
        project: ctx.project_root.clone(),
        build: wire::build_id(&exe),
        started: Instant::now(),
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        config: Mutex::new(DaemonConfig::load_from(&ctx.project_root)),
        registry: Mutex::new(Registry {
            workers: HashMap::new(),
            stopping: false,
        }),
        stop_reason: Mutex::new(None),
        requests: AtomicU64::new(0),
        last_request: Mutex::new(Instant::now()),
        evictions: AtomicU64::new(0),
        connections: AtomicUsize::new(0),
        next_worker: AtomicU64::new(0),
    });
    shared.write_record();
    shared.log(&format!(
        "started (build {}) for {} on {}",
        shared.build,
        ctx.project_root.display(),
        paths.socket.display()
    ));
    install_signal_handlers();
    let accepting = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("daemon-accept".into())
        .spawn(move || accept_loop(&listener, &accepting))
        .context("cannot start the accept thread")?;

    if prestart {
        prestart_servers(
            &shared,
            super::prestart_items(ctx, shared.config().prestart_detect),
        );
    }
    let reason = main_loop(&shared, socket_identity, ctx);
    shutdown(&shared, &reason, socket_identity);
    Ok(())
}

/// Hands each server to its worker to start without waiting for a request;
/// a refusal (restart bound, memory ceiling) is logged, not fatal.
fn prestart_servers(shared: &Arc<Shared>, items: Vec<wire::PrestartItem>) {
    shared.note_request();
    for item in items {
        let launch = Launch::from(&item.launch);
        let key = (launch.name.clone(), launch.root.clone());
        let job = Job::Prestart {
            launch: Box::new(launch),
            fingerprint: item.fingerprint,
            startup: item
                .startup_ms
                .map_or(worker::DEFAULT_STARTUP, Duration::from_millis),
        };
        if let Err(why) = shared.route(&key, job) {
            shared.log(&format!("pre-start of {} refused: {why}", key.0));
        }
    }
}

fn main_loop(shared: &Arc<Shared>, socket_identity: (u64, u64), ctx: &Ctx) -> String {
    let project = ctx.project_root.as_path();
    let config_path = crate::hook::config::Config::file_path(project);
    // Whether its servers start walled in was decided at its start, from
    // the mode then.
    let confined = crate::hook::ctx::server_confinement(project, &ctx.state_root).is_some();
    let mut config_stamp = modified(&config_path);
    let mut last_memory_check = Instant::now();
    let mut requests_seen = 0;
    let mut worked_before = false;
    loop {
        std::thread::sleep(TICK);
        if SIGNALLED.load(Ordering::SeqCst) {
            return "a signal".into();
        }
        if let Some(reason) = shared.stop_requested() {
            return reason;
        }
        if identity(&shared.paths.socket).ok() != Some(socket_identity) {
            return "its socket was removed or replaced".into();
        }
        if crate::hook::ctx::server_confinement(project, &ctx.state_root).is_some() != confined {
            return format!(
                "sandbox mode was switched {} since it started: its servers stop, and the next \
                 hook starts a daemon whose servers run {}",
                if confined { "off" } else { "on" },
                if confined { "as they are" } else { "walled in" }
            );
        }
        let stamp = modified(&config_path);
        if stamp != config_stamp {
            config_stamp = stamp;
            if let Ok(mut config) = shared.config.lock() {
                *config = DaemonConfig::load_from(project);
            }
        }
        if last_memory_check.elapsed() >= MEMORY_CHECK {
            last_memory_check = Instant::now();
            // What the work freed goes back before it is counted: while
            // requests come or run or servers check, and once after (each
            // trim walks the heap; an idle daemon does not).
            let requests = shared.requests.load(Ordering::SeqCst);
            let working = requests != requests_seen
                || shared.connections.load(Ordering::SeqCst) > 0
                || any_server_busy(shared);
            requests_seen = requests;
            if working || worked_before {
                super::heap::give_back();
            }
            worked_before = working;
            enforce_memory_ceiling(shared);
        }
        let exit_idle = shared.config().exit_idle();
        if shared.idle_for() >= exit_idle && no_live_servers(shared) {
            return format!(
                "no servers and no requests for {} s",
                exit_idle.as_secs_f64().round()
            );
        }
    }
}

fn live_server_count(shared: &Shared) -> usize {
    let registry = shared.lock_registry();
    registry
        .workers
        .values()
        .filter(|handle| handle.info.lock().is_ok_and(|info| info.pid.is_some()))
        .count()
}

fn any_server_busy(shared: &Shared) -> bool {
    let registry = shared.lock_registry();
    registry
        .workers
        .values()
        .any(|handle| handle.info.lock().is_ok_and(|info| info.busy))
}

fn no_live_servers(shared: &Shared) -> bool {
    let registry = shared.lock_registry();
    registry.workers.values().all(|handle| {
        handle
            .info
            .lock()
            .map(|info| info.pid.is_none() && !info.busy)
            .unwrap_or(true)
    })
}

/// Above the ceiling, the least recently used server that is not busy is
/// shut down — one per check, so the memory can settle; the last server is
/// kept (it is the one in use). A server that has checked the whole project
/// goes last: it took that server a pass over every file (37 s on ~1,800
/// files for ty) to become the one a re-check after changes asks, while
/// the others are back in a second; shutting it first turned every re-check
/// after a change into the checker's command line plus a new pass.
fn enforce_memory_ceiling(shared: &Arc<Shared>) {
    let limit_mb = shared.config().memory_limit_mb;
    // With fewer than two servers there is nothing to choose from: the one
    // left is the one in use. Skipping saves reading all of /proc.
    if limit_mb == 0 || live_server_count(shared) < 2 {
        return;
    }
    let table = procs::table();
    // The daemon and its servers, not a checker's command line it runs for
    // a project check: that ends with the check (`ty check` over ~1,800
    // files held 600 MB for a few seconds), while the server shut down for
    // it had taken a pass over every file to know the project.
    let server_pids: Vec<u32> = {
        let registry = shared.lock_registry();
        registry
            .workers
            .values()
            .filter_map(|handle| handle.info.lock().ok()?.pid)
            .collect()
    };
    let total_kib = procs::rss_kib(&table, std::process::id())
        + server_pids
            .iter()
            .map(|pid| procs::tree_rss_kib(&table, *pid))
            .sum::<u64>();
    if total_kib <= limit_mb * 1024 {
        return;
    }
    let victim = {
        let mut registry = shared.lock_registry();
        let live: Vec<(Key, Candidate, u32)> = registry
            .workers
            .iter()
            .filter_map(|(key, handle)| {
                let info = handle.info.lock().ok()?;
                let candidate = Candidate {
                    busy: info.busy,
                    knows_project: info.knows_project(None),
                    open_files: info.open_files,
                    last_used: info.last_used,
                };
                Some((key.clone(), candidate, info.pid?))
            })
            .collect();
        let candidates: Vec<Candidate> = live.iter().map(|(_, c, _)| *c).collect();
        let Some(index) = eviction_victim(&candidates) else {
            return;
        };
        let (key, _, pid) = live[index].clone();
        registry
            .workers
            .remove(&key)
            .map(|handle| (key, handle, pid))
    };
    if let Some((key, handle, pid)) = victim {
        shared.evictions.fetch_add(1, Ordering::SeqCst);
        let server_kib = procs::tree_rss_kib(&table, pid);
        let reason = format!(
            "memory ceiling: the daemon and its servers use {} MB, over {limit_mb} MB; {} is the least recently used ({} MB)",
            total_kib / 1024,
            key.0,
            server_kib / 1024
        );
        let (done, _ignored) = mpsc::channel();
        let _ = handle.sender.send(Job::Shutdown { reason, done });
    }
}

/// What the memory ceiling weighs of a running server.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    busy: bool,
    knows_project: bool,
    /// The documents it holds: what a server that knows the project would
    /// have to read and check again.
    open_files: usize,
    last_used: Instant,
}

/// Which of the running servers the memory ceiling shuts down: none of
/// fewer than two, never a busy one; those that have not checked the whole
/// project before those that have, and of those the one that knows fewer
/// files (a nested root's 2 files before the project's 1,800); then the
/// least recently used. A server that knows its project is not shut down
/// while another is busy: that one may be cheaper to lose once it is done
/// (the nested roots' servers a check had just started were busy when the
/// project's ty, idle between two checks, was shut down for them).
fn eviction_victim(servers: &[Candidate]) -> Option<usize> {
    if servers.len() < 2 {
        return None;
    }
    let (index, victim) = servers
        .iter()
        .enumerate()
        .filter(|(_, server)| !server.busy)
        .min_by_key(|(_, server)| {
            let rebuild = if server.knows_project {
                server.open_files
            } else {
                0
            };
            (server.knows_project, rebuild, server.last_used)
        })?;
    if victim.knows_project && servers.iter().any(|server| server.busy) {
        return None;
    }
    Some(index)
}

fn shutdown(shared: &Arc<Shared>, reason: &str, socket_identity: (u64, u64)) {
    shared.log(&format!("stopping: {reason}"));
    // New connections must fail fast rather than queue on a closing daemon.
    if identity(&shared.paths.socket).ok() == Some(socket_identity) {
        let _ = std::fs::remove_file(&shared.paths.socket);
    }
    let handles: Vec<WorkerHandle> = {
        let mut registry = shared.lock_registry();
        registry.stopping = true;
        registry.workers.drain().map(|(_, handle)| handle).collect()
    };
    let (done, finished) = mpsc::channel();
    for handle in &handles {
        let _ = handle.sender.send(Job::Shutdown {
            reason: format!("the daemon is stopping ({reason})"),
            done: done.clone(),
        });
    }
    // A worker finishes the check it is running (bounded by that check's
    // deadline) before it shuts its server down.
    let wait_until = Instant::now() + shared.config().shutdown_grace() + Duration::from_secs(10);
    let mut n_done = 0;
    while n_done < handles.len() {
        let left = wait_until.saturating_duration_since(Instant::now());
        if left.is_zero() || finished.recv_timeout(left).is_err() {
            break;
        }
        n_done += 1;
    }
    // Whatever did not finish is killed: threads do not outlive the process,
    // and a server must not outlive its daemon.
    for handle in &handles {
        if let Ok(info) = handle.info.lock()
            && let Some(pid) = info.pid
        {
            crate::util::process::kill_group(pid);
        }
    }
    let store = shared.store();
    if let Ok(locked) = store.lock(paths::RECORD)
        && let Ok(Some(record)) = locked.load_json::<DaemonRecord>()
        && record.pid == std::process::id()
    {
        let _ = locked.remove();
    }
    shared.log("stopped");
}

fn wait_for_life_lock(paths: &Paths) -> anyhow::Result<Option<FileLock>> {
    let until = Instant::now() + LIFE_LOCK_WAIT;
    loop {
        if let Some(lock) = FileLock::try_acquire(&paths.life_lock)? {
            return Ok(Some(lock));
        }
        // A daemon that answers is the one to use; nothing to wait for.
        if Instant::now() >= until || UnixStream::connect(&paths.socket).is_ok() {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Binds with a private umask, so no other user can connect even for an
/// instant. Any socket file there is stale: we hold the life lock.
fn bind_private(socket: &Path) -> anyhow::Result<UnixListener> {
    match std::fs::remove_file(socket) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error).with_context(|| format!("cannot remove {}", socket.display()));
        }
    }
    // SAFETY: umask(2) only swaps the process's file mode mask; the daemon
    // has started no thread yet that could create a file meanwhile.
    let previous = unsafe { libc::umask(0o077) };
    let bound = UnixListener::bind(socket);
    // SAFETY: as above, restoring the mask we replaced.
    unsafe { libc::umask(previous) };
    bound.with_context(|| format!("cannot listen on {}", socket.display()))
}

fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    let metadata = std::fs::symlink_metadata(path)?;
    Ok((metadata.dev(), metadata.ino()))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int);
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; signal(2) has no other preconditions.
        unsafe {
            libc::signal(signal, handler as libc::sighandler_t);
        }
    }
}

fn accept_loop(listener: &UnixListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of file descriptors, most likely: let some close.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        if shared.connections.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            continue;
        }
        shared.connections.fetch_add(1, Ordering::SeqCst);
        let serving = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("daemon-conn".into())
            .spawn(move || {
                serve(&serving, stream);
                serving.connections.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn serve(shared: &Arc<Shared>, stream: UnixStream) {
    let Ok(mut conn) = Conn::new(stream) else {
        return;
    };
    loop {
        let value = match conn.receive_value(Instant::now() + CONNECTION_IDLE) {
            Ok(Some(value)) => value,
            _ => return,
        };
        let request: Request = match serde_json::from_value(value) {
            Ok(request) => request,
            Err(error) => {
                let reply = wire::error_reply(&format!("unknown request: {error}"));
                if conn.send(&reply, Instant::now() + WRITE_TIMEOUT).is_err() {
                    return;
                }
                continue;
            }
        };
        let mut stop_after = None;
        let reply = match request {
            Request::Hello { .. } => wire::ok_reply(&HelloReply {
                protocol: PROTOCOL,
                build: shared.build.clone(),
                pid: std::process::id(),
            }),
            Request::Diagnose {
                launch,
                fingerprint,
                path,
                text,
                language_id,
                deadline_ms,
                budget_ms,
                startup_ms,
            } => {
                shared.note_request();
                let received = Instant::now();
                let deadline = received + Duration::from_millis(deadline_ms);
                let launch = Launch::from(launch.as_ref());
                let key = (launch.name.clone(), launch.root.clone());
                // A server whose warm-up a caller already waited for is not
                // waited for again: this edit is told at once.
                if let Some(info) = shared.warming_waited(&key) {
                    let reply = late_reply(&key.0, &info, received, 0);
                    let sent = conn.send(&wire::ok_reply(&reply), Instant::now() + WRITE_TIMEOUT);
                    if sent.is_err() {
                        return;
                    }
                    continue;
                }
                let (reply, answer) = mpsc::sync_channel(1);
                let job = Job::Diagnose {
                    job: Box::new(DiagnoseJob {
                        launch,
                        fingerprint,
                        path,
                        text,
                        language_id,
                        deadline,
                        budget: budget_ms.map(Duration::from_millis),
                        startup: startup_ms.map_or(worker::DEFAULT_STARTUP, Duration::from_millis),
                    }),
                    reply,
                };
                match shared.route(&key, job) {
                    Ok(info) => {
                        let wait = deadline.saturating_duration_since(Instant::now()) + REPLY_SLACK;
                        match answer.recv_timeout(wait) {
                            Ok(reply) => wire::ok_reply(&reply),
                            Err(_) => {
                                wire::ok_reply(&late_reply(&key.0, &info, received, deadline_ms))
                            }
                        }
                    }
                    Err(why) => wire::error_reply(&why),
                }
            }
            Request::Call {
                launch,
                fingerprint,
                open,
                method,
                params,
                deadline_ms,
            } => {
                shared.note_request();
                let deadline = Instant::now() + Duration::from_millis(deadline_ms);
                let launch = Launch::from(launch.as_ref());
                let key = (launch.name.clone(), launch.root.clone());
                let (reply, answer) = mpsc::sync_channel(1);
                let job = Job::Call {
                    job: Box::new(CallJob {
                        launch,
                        fingerprint,
                        open,
                        method,
                        params,
                        deadline,
                    }),
                    reply,
                };
                match shared.route(&key, job) {
                    Ok(_) => {
                        let wait = deadline.saturating_duration_since(Instant::now()) + REPLY_SLACK;
                        match answer.recv_timeout(wait) {
                            Ok(reply) => wire::ok_reply(&reply),
                            Err(_) => wire::ok_reply(&wire::CallReply {
                                outcome: wire::CallOutcome::Failed {
                                    error: late_error(deadline_ms),
                                },
                                warm: false,
                                server_pid: None,
                                elapsed_ms: deadline_ms,
                            }),
                        }
                    }
                    Err(why) => wire::error_reply(&why),
                }
            }
            Request::Check {
                project,
                options,
                debug,
                progress,
            } => {
                shared.note_request();
                // Progress lines go out as the check runs; a caller that
                // went away only ends them.
                let mut last_sent = (usize::MAX, usize::MAX);
                let mut report_progress = |done: usize, total: usize| {
                    if progress && (done, total) != last_sent {
                        last_sent = (done, total);
                        let line = json!({"progress": {"done": done, "total": total}});
                        let _ = conn.send(&line, Instant::now() + WRITE_TIMEOUT);
                    }
                };
                // A report of tens of thousands of diagnostics goes out
                // as encoded, not through a JSON tree.
                let report = super::checks::check(
                    Arc::clone(shared) as Arc<dyn Host>,
                    &project,
                    &options,
                    debug,
                    &mut report_progress,
                );
                // Stopped while it ran (`daemon stop` from another
                // terminal): its servers were shut down under it, so its
                // files would read "not checked yet, it goes on in the
                // daemon", which is gone. The caller checks without it
                // instead (attack AE-13).
                if shared.lock_registry().stopping {
                    let _ = conn.send(
                        &wire::error_reply("the daemon stopped during this check"),
                        Instant::now() + WRITE_TIMEOUT,
                    );
                    return;
                }
                let reply = wire::ok_reply_bytes(&report);
                if conn
                    .send_line(reply, Instant::now() + WRITE_TIMEOUT)
                    .is_err()
                {
                    return;
                }
                continue;
            }
            Request::Prestart { servers } => {
                prestart_servers(shared, servers);
                json!({"ok": true})
            }
            Request::Status => wire::ok_reply(&shared.status()),
            Request::Stop { reason } => {
                stop_after = Some(reason);
                json!({"ok": true, "pid": std::process::id()})
            }
        };
        let sent = conn.send(&reply, Instant::now() + WRITE_TIMEOUT);
        if let Some(reason) = stop_after {
            shared.request_stop(&format!("asked to stop ({reason})"));
            return;
        }
        if sent.is_err() {
            return;
        }
    }
}

/// The answer when the server's worker did not answer in time: "warming
/// up" while the server's process is still starting (it goes on starting);
/// once it has answered `initialize`, a time-out for this file — however
/// long it has been running, a server that says nothing about a file within
/// the edit's time has not checked it (seed 004 AC-LSP-002).
fn late_reply(
    name: &str,
    info: &Mutex<ServerInfo>,
    received: Instant,
    deadline_ms: u64,
) -> DiagnoseReply {
    let (starting, first_check) = info
        .lock()
        .map(|mut info| {
            if info.starting {
                info.warming_waited = true;
            }
            (info.starting, info.warming)
        })
        .unwrap_or((false, false));
    let error = if starting {
        LspError::WarmingUp {
            server: name.to_string(),
            waited: received.elapsed(),
            loading: false,
        }
    } else {
        LspError::Timeout {
            waiting_for: format!("{name} to answer for this file"),
            after: Duration::from_millis(deadline_ms),
            // Through `initialize`, a server loads the project before its
            // first answer: say so rather than blame it as stuck.
            detail: if first_check {
                crate::lsp::client::FIRST_CHECK_PENDING.to_string()
            } else {
                String::new()
            },
        }
    };
    DiagnoseReply {
        outcome: Outcome::Failed {
            error: WireError::from(&error),
        },
        warm: false,
        server_pid: None,
        elapsed_ms: deadline_ms,
        warmup_ms: 0,
    }
}

fn late_error(deadline_ms: u64) -> WireError {
    WireError::from(&LspError::Timeout {
        waiting_for: "the daemon's server".into(),
        after: Duration::from_millis(deadline_ms),
        detail: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(busy: bool, knows_project: bool, used_secs_ago: u64) -> Candidate {
        Candidate {
            busy,
            knows_project,
            open_files: 10,
            last_used: Instant::now() - Duration::from_secs(used_secs_ago),
        }
    }

    #[test]
    fn the_least_recently_used_idle_server_goes() {
        let servers = [server(false, false, 5), server(false, false, 50)];
        assert_eq!(eviction_victim(&servers), Some(1));
        let servers = [server(false, false, 5), server(true, false, 50)];
        assert_eq!(eviction_victim(&servers), Some(0));
    }

    #[test]
    fn a_server_that_knows_the_project_goes_last() {
        // The big ty that checked ~1,800 files was used a moment before the
        // small ones a check started for nested roots.
        let servers = [
            server(false, true, 60),
            server(false, false, 1),
            server(false, false, 2),
        ];
        assert_eq!(eviction_victim(&servers), Some(2));
        // ... and not while another is busy (it may be the cheaper loss).
        let servers = [server(false, true, 60), server(true, false, 1)];
        assert_eq!(eviction_victim(&servers), None);
        let servers = [server(false, true, 60), server(false, false, 1)];
        assert_eq!(eviction_victim(&servers), Some(1));
        // Of those that know their project, the one with fewer files (a
        // nested root's), however recently used.
        let mut big = server(false, true, 60);
        big.open_files = 1_767;
        let mut nested = server(false, true, 1);
        nested.open_files = 2;
        assert_eq!(eviction_victim(&[big, nested]), Some(1));
    }

    #[test]
    fn the_only_server_stays() {
        assert_eq!(eviction_victim(&[server(false, false, 99)]), None);
        assert_eq!(eviction_victim(&[]), None);
        let all_busy = [server(true, false, 9), server(true, true, 9)];
        assert_eq!(eviction_victim(&all_busy), None);
    }
}
