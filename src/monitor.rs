//! `ralph-hooks monitor`: a local REST + WebSocket server and a live
//! dashboard for tasks, steps, loops and events.
//!
//! - [`data`]: what the endpoints answer, read through [`crate::tasks`] and
//!   [`crate::state`] (never a second parser of the task format).
//! - [`api`]: the routes, the bearer token for writes, the Host and Origin
//!   checks; `POST /api/tasks/update` goes through
//!   [`crate::tasks::actions`], the CLI's code path.
//! - [`live`]: file watching (`notify`, debounced; polling where inotify
//!   is unavailable) turned into `task_update`, `task_step_update`,
//!   `continuation_event` and `loop_event` messages on `/ws` and
//!   `/api/stream` (Server-Sent Events).
//! - [`loop_view`]: a loop's conditions with what held and what failed at
//!   its last Stop, for the Loop view.
//! - [`receipt`]: a loop's receipt file, served as plain text when it lies
//!   inside the project or its state.
//! - `page.html`: the dashboard, one self-contained page in the binary.
//!
//! The async runtime lives here only: the hook binaries never reach this
//! part, so they link none of it. Uses [`crate::tasks`], [`crate::ralph`],
//! [`crate::hook`], [`crate::state`]; used only by [`crate::cli`].

pub mod api;
pub mod data;
pub mod live;
pub mod loop_view;
pub mod receipt;

use tokio::sync::{broadcast, watch};

use self::data::TaskCache;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::hook::ctx::Ctx;
use crate::state::{Store, Versioned, ids};

/// What every handler shares.
pub struct AppState {
    pub agents: Vec<Agent>,
    pub token: String,
    pub local: SocketAddr,
    pub cache: TaskCache,
    /// Live events as JSON text, one message each.
    pub events: broadcast::Sender<String>,
    /// Becomes true on SIGINT/SIGTERM: open streams end.
    pub shutdown: watch::Sender<bool>,
}

impl AppState {
    pub fn new(agents: Vec<Agent>, token: String, local: SocketAddr) -> AppState {
        AppState {
            agents,
            token,
            local,
            cache: TaskCache::default(),
            events: broadcast::channel(1024).0,
            shutdown: watch::channel(false).0,
        }
    }

    pub fn agent(&self, id: &str) -> Option<&Agent> {
        self.agents.iter().find(|agent| agent.id == id)
    }
}

pub const DEFAULT_PORT: u16 = 3847;
/// Written to each agent's state root while the monitor runs (mode 0600:
/// it holds the token), read by `ralph-hooks status`.
pub const MONITOR_FILE: &str = "monitor.json";

/// One watched project: the seed's "agent".
#[derive(Debug, Clone)]
pub struct Agent {
    /// Unique among the agents, safe in a URL and as a path part.
    pub id: String,
    pub name: String,
    pub project_root: PathBuf,
}

impl Agent {
    /// A context for reading and writing this project's state; no session,
    /// so a change from the browser does not take a task over. Its store
    /// leaves damaged files where they are: the monitor only watches, and a
    /// file that looks damaged to it may be one an editor is saving.
    pub fn ctx(&self) -> Ctx {
        let mut ctx = match Ctx::for_cli(Some(&self.project_root)) {
            Ok(ctx) => ctx,
            Err(_) => unreachable!("for_cli with a project never fails"),
        };
        ctx.session_id = None;
        ctx.store().leave_damage_in_place();
        ctx
    }
}

/// `ralph-hooks monitor` options.
pub struct Options {
    pub port: u16,
    pub bind: IpAddr,
    /// `[NAME=]DIR`, in order; empty means the CLI's project.
    pub projects: Vec<String>,
    pub token: Option<String>,
    pub open: bool,
}

/// `monitor.json`: where a running monitor listens.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MonitorFile {
    #[serde(default)]
    pub version: u64,
    pub url: String,
    pub pid: u32,
    pub token: String,
}

impl Versioned for MonitorFile {
    const VERSION: u64 = 1;
}

/// The running monitor of this state root, if its process is alive.
pub fn running(store: &Store) -> Option<MonitorFile> {
    let file = store.read_json::<MonitorFile>(MONITOR_FILE).ok()??;
    // SAFETY: kill with signal 0 only checks that the pid exists.
    let alive = unsafe { libc::kill(file.pid as libc::pid_t, 0) } == 0;
    alive.then_some(file)
}

/// The agents from `--project [NAME=]DIR` values: names default to the
/// directory's name, are made id-safe and unique (`app`, `app-2`).
pub fn agents(default_project: &Path, projects: &[String]) -> anyhow::Result<Vec<Agent>> {
    let specs: Vec<(Option<String>, PathBuf)> = if projects.is_empty() {
        vec![(None, default_project.to_path_buf())]
    } else {
        projects
            .iter()
            .map(|spec| match spec.split_once('=') {
                Some((name, dir)) if !name.is_empty() && !name.contains('/') => {
                    (Some(name.to_string()), PathBuf::from(dir))
                }
                _ => (None, PathBuf::from(spec)),
            })
            .collect()
    };
    let mut agents: Vec<Agent> = Vec::new();
    for (name, dir) in specs {
        if !dir.is_dir() {
            bail!("--project {}: not a directory", dir.display());
        }
        let root = std::fs::canonicalize(&dir)
            .with_context(|| format!("cannot resolve {}", dir.display()))?;
        let name = name.unwrap_or_else(|| {
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "project".into())
        });
        let mut base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        base = base.trim_start_matches(['.', '_', '-']).replace("..", ".");
        if !ids::is_valid(&base) {
            base = "project".into();
        }
        let mut id = base.clone();
        let mut n = 1;
        while agents.iter().any(|a| a.id == id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        agents.push(Agent {
            id,
            name,
            project_root: root,
        });
    }
    Ok(agents)
}

/// A random token from the kernel (128 bits, hex).
fn new_token() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the monitor token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `monitor.json` (0600) in every agent's state root; the record of
/// another monitor still running there, per agent, to put back at exit.
fn write_monitor_files(
    agents: &[Agent],
    file: &MonitorFile,
) -> anyhow::Result<Vec<Option<MonitorFile>>> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut previous = Vec::new();
    for agent in agents {
        let ctx = agent.ctx();
        previous.push(running(ctx.store()).filter(|other| other.pid != file.pid));
        let locked = ctx.store().lock(MONITOR_FILE)?;
        locked.save_json(file)?;
        let path = ctx.store().path(MONITOR_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", path.display()))?;
    }
    Ok(previous)
}

/// Takes this monitor's record out of every agent's state root: the other
/// monitor's record it replaced comes back while that one still runs (its
/// token must stay findable), else the file goes.
fn remove_monitor_files(agents: &[Agent], previous: &[Option<MonitorFile>]) {
    for (index, agent) in agents.iter().enumerate() {
        let ctx = agent.ctx();
        if let Ok(locked) = ctx.store().lock(MONITOR_FILE)
            && let Ok(Some(file)) = locked.load_json::<MonitorFile>()
            && file.pid == std::process::id()
        {
            let alive = |other: &&MonitorFile| {
                // SAFETY: signal 0 only checks that the pid exists.
                unsafe { libc::kill(other.pid as libc::pid_t, 0) == 0 }
            };
            match previous.get(index).and_then(Option::as_ref).filter(alive) {
                Some(other) => {
                    use std::os::unix::fs::PermissionsExt as _;
                    if locked.save_json(other).is_ok() {
                        let private = std::fs::Permissions::from_mode(0o600);
                        let _ = std::fs::set_permissions(ctx.store().path(MONITOR_FILE), private);
                    }
                }
                None => {
                    let _ = locked.remove();
                }
            }
        }
    }
}

/// Runs the monitor until SIGINT, SIGTERM or SIGHUP.
pub fn run(ctx: &Ctx, options: Options) -> anyhow::Result<()> {
    let agents = agents(&ctx.project_root, &options.projects)?;
    let token = match options.token {
        Some(token) if token.trim().is_empty() => bail!("--token is empty"),
        Some(token) => token,
        None => new_token()?,
    };
    if !options.bind.is_loopback() {
        eprintln!(
            "ralph-hooks: warning: the monitor listens on {}, reachable from other machines; anyone who can reach it can read your tasks (writes still need the token)",
            options.bind
        );
    }
    // Memory: each thread that allocates gets its own glibc arena, which
    // keeps the pages of a large response; two arenas and a few blocking
    // threads hold the idle RSS near what the data needs.
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only tunes the allocator; called before any thread
    // of the runtime exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .context("cannot start the monitor's runtime")?;
    runtime.block_on(async move {
        let address = SocketAddr::new(options.bind, options.port);
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address}"))?;
        let local = listener.local_addr().context("no local address")?;
        let host = match local.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let base = format!("http://{host}:{}/", local.port());
        let state = Arc::new(AppState::new(agents.clone(), token.clone(), local));
        let previous = write_monitor_files(
            &agents,
            &MonitorFile {
                version: MonitorFile::VERSION,
                url: base.clone(),
                pid: std::process::id(),
                token: token.clone(),
            },
        )?;
        // Handlers first: a signal that arrives as soon as the URL is out
        // must stop the server gracefully, not kill it.
        let signals = Signals::install()?;
        let watcher = live::start(state.clone());
        let names: Vec<String> = agents
            .iter()
            .map(|a| format!("{} ({})", a.id, a.project_root.display()))
            .collect();
        // Not println!: a closed stdout (the terminal went away) must not
        // bring the server down.
        use std::io::Write as _;
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "Monitor: {base}#token={token}");
        let _ = writeln!(stdout, "Watching: {}", names.join(", "));
        let _ = stdout.flush();
        if options.open {
            let _ = std::process::Command::new("xdg-open")
                .arg(format!("{base}#token={token}"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
        let shutdown = state.shutdown.clone();
        let served = axum::serve(listener, api::router(state.clone()))
            .with_graceful_shutdown(async move {
                signals.wait().await;
                // Ends the WebSocket and SSE streams, which would otherwise
                // keep the graceful shutdown waiting forever.
                let _ = shutdown.send(true);
            })
            .await;
        drop(watcher);
        remove_monitor_files(&agents, &previous);
        eprintln!("ralph-hooks: monitor stopped");
        served.context("the monitor's server failed")
    })
}

/// SIGINT, SIGTERM and SIGHUP (the terminal closed), registered before the
/// server starts.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        // The CLI's start-up handler (`util::process::kill_children_on_signal`)
        // ends the process on these signals, and tokio's handler chains to
        // the one it finds: put the default back first, so a signal only
        // wakes the graceful shutdown. The monitor starts no children to
        // clean up (`--open`'s browser is not ours to kill).
        for number in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: resetting a disposition to SIG_DFL before any other
            // thread of ours cares about it.
            unsafe { libc::signal(number, libc::SIG_DFL) };
        }
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            hangup: signal(SignalKind::hangup()).context("cannot handle SIGHUP")?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}
