//! One server inside the daemon: a thread that owns its [`Client`] and runs
//! the checks sent to it one after another (a client speaks to one server
//! over one pipe, so checks of the same server cannot overlap anyway).
//!
//! Between checks the thread keeps the server's messages flowing (its
//! requests answered, its death noticed), closes files not checked for a
//! while, and shuts the server down when it has been idle long enough —
//! then the thread ends and leaves the registry. A server that died is
//! started again by the next check, at most `max_restarts_per_minute`
//! times a minute; a changed configuration (fingerprint) restarts it.
//!
//! Warm-up: a server is *warming* from its start until its first
//! check answers (typescript-language-server loads the project then). While
//! warming it has its own time, the server's `startupTimeout` (30 s unless
//! configured), not the hook's: the check goes on after the hook stopped
//! waiting (the hook is told "warming up"), so the next check finds it warm.
//! A slow start is never a failure: it is not killed before its start-up
//! time is over and never counts toward the restart bound.
//!
//! Project checks arrive as batches ([`crate::lsp::batch`]): the worker adds
//! the files to the server's running batch, works on it in short steps
//! (answering other jobs in between, so an edit's check is not stuck behind
//! a project check), and answers each waiting caller when its files are
//! done or its deadline has come — with the files not reached yet marked as
//! pending. The batch goes on after every caller stopped waiting, for up to
//! [`BATCH_LIMIT`], so the next check finds the work done rather than
//! starting cold on the same files.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::config::DaemonConfig;
use super::fresh::{DiskChanges, DiskView};
use super::procs;
use serde_json::Value;

use super::wire::{CallOutcome, CallReply, DiagnoseReply, Outcome, WireError};
use crate::lsp::batch::{BatchFile, FileAnswer};
use crate::lsp::client::Client;
use crate::lsp::{CallAnswer, CreatedOrDeleted, Launch, LspError, OpenFile, ServerDiagnostic, uri};
use crate::util::fsread;

/// Servers are keyed by name and workspace root; the rest of the
/// configuration is the fingerprint.
pub type Key = (String, PathBuf);

/// How often an idle worker looks at its server.
const TICK: Duration = Duration::from_millis(200);
/// A server's start-up time (start, initialize, first check) unless its
/// `startupTimeout` says otherwise; pre-started servers get it too.
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
const MINUTE: Duration = Duration::from_secs(60);
/// How long a project check goes on after its last caller stopped waiting.
pub const BATCH_LIMIT: Duration = Duration::from_secs(10 * 60);
/// One step of a running batch: short, so other jobs wait at most this long.
const BATCH_STEP: Duration = Duration::from_millis(50);
/// How long a server that failed to start is left alone (checks are told
/// so at once) unless its configuration or binary changes.
pub const START_FAILURE_BACKOFF: Duration = Duration::from_secs(5 * 60);

pub struct DiagnoseJob {
    pub launch: Launch,
    pub fingerprint: String,
    pub path: PathBuf,
    pub text: String,
    pub language_id: String,
    /// When the hook stops waiting for the answer.
    pub deadline: Instant,
    /// The check's own time once the server is warm (capped by `deadline`).
    pub budget: Option<Duration>,
    /// The server's start-up time.
    pub startup: Duration,
}

/// One LSP request for `ralph-hooks refs/rename/fix`, with the files it
/// needs open.
pub struct CallJob {
    pub launch: Launch,
    pub fingerprint: String,
    pub open: Vec<OpenFile>,
    pub method: String,
    pub params: Value,
    pub deadline: Instant,
}

/// Files of a project check for this server.
pub struct BatchJob {
    pub launch: Launch,
    pub fingerprint: String,
    pub files: Vec<BatchFile>,
    /// When the caller stops waiting.
    pub deadline: Instant,
    /// The server's start-up time.
    pub startup: Duration,
    /// How long the server may be silent while files wait (then: hung).
    pub silence: Duration,
}

/// The answer to a [`BatchJob`], one per file in the job's order.
#[derive(Debug, Clone)]
pub struct BatchReply {
    pub answers: Vec<FileAnswer>,
    /// Why files without an answer have none (the server did not start,
    /// died, is still warming up).
    pub failure: Option<WireError>,
    /// The server was already running.
    pub warm: bool,
}

pub enum Job {
    Batch {
        job: Box<BatchJob>,
        reply: SyncSender<BatchReply>,
    },
    Diagnose {
        job: Box<DiagnoseJob>,
        reply: SyncSender<DiagnoseReply>,
    },
    Call {
        job: Box<CallJob>,
        reply: SyncSender<CallReply>,
    },
    Prestart {
        launch: Box<Launch>,
        fingerprint: String,
        startup: Duration,
    },
    Shutdown {
        reason: String,
        done: Sender<()>,
    },
}

/// The live workers by key. A worker that goes idle removes itself under
/// this lock, so no job can be sent to a worker that is going away.
pub struct Registry {
    pub workers: HashMap<Key, WorkerHandle>,
    pub stopping: bool,
}

/// What a worker needs from the daemon that runs it. The daemon's server
/// implements it; the worker never sees the server's own types, so the
/// dependency runs one way (server → worker).
pub trait Host: Send + Sync {
    /// The current `daemon` config section.
    fn config(&self) -> DaemonConfig;
    fn lock_registry(&self) -> MutexGuard<'_, Registry>;
    /// One line in the daemon's log.
    fn log(&self, message: &str);
    /// A server started, stopped or changed: rewrite the daemon record.
    fn write_record(&self);
    /// Remember the server for pre-start in later sessions.
    fn remember(&self, key: &Key);
    /// Marks this daemon's server processes, for finding leftovers.
    fn state_root(&self) -> &Path;
    /// Sends `job` to the worker of `key` (started if needed); what the
    /// worker shows of its server.
    fn route(self: Arc<Self>, key: &Key, job: Job) -> Result<Arc<Mutex<ServerInfo>>, String>;
}

/// What `daemon status` and the memory ceiling see of a worker.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub root: PathBuf,
    pub pid: Option<u32>,
    pub last_used: Instant,
    pub requests: u64,
    pub warm_requests: u64,
    pub restarts: u64,
    pub open_files: usize,
    pub busy: bool,
    /// Started but not yet through its first check.
    pub warming: bool,
    /// Its process is starting and has not answered `initialize` yet: the
    /// only time an edit is told "warming up". A server that did answer
    /// and then says nothing about a file has timed out for that file.
    pub starting: bool,
    /// A caller already waited for this warm-up and was told "warming up":
    /// later callers are told at once, not made to wait again.
    pub warming_waited: bool,
    pub last_error: Option<String>,
    /// The running project check: files answered of those asked.
    pub batch_done: usize,
    pub batch_total: usize,
    /// How the server is started, for `daemon status`.
    pub command: String,
    /// Why it runs (the registry's choice), when the caller said.
    pub reason: Option<String>,
    /// The whole project's check this server does in the background once
    /// the checker's command line has checked the project (see
    /// `daemon::checks`): when done, re-checks after changes come here.
    pub project_pass: ProjectPass,
}

/// Where a server stands with the whole project's check that makes it the
/// one to ask after changes (a command-line checker's server: ty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProjectPass {
    #[default]
    NotRun,
    Running,
    /// Done by server process `pid`, with the project's configuration
    /// files as `configs` stamps them.
    Done {
        pid: u32,
        configs: u64,
    },
}

impl ServerInfo {
    /// This very server process has checked the whole project under the
    /// configuration stamped `configs`.
    pub fn knows_project(&self, configs: Option<u64>) -> bool {
        match self.project_pass {
            ProjectPass::Done { pid, configs: seen } => {
                self.pid == Some(pid) && configs.is_none_or(|now| now == seen)
            }
            _ => false,
        }
    }
}

pub struct WorkerHandle {
    /// Tells this worker from a later one for the same key.
    pub id: u64,
    pub sender: Sender<Job>,
    pub info: Arc<Mutex<ServerInfo>>,
}

/// Starts a worker thread for `key`.
pub fn spawn(host: Arc<dyn Host>, key: Key, id: u64) -> std::io::Result<WorkerHandle> {
    let (sender, receiver) = mpsc::channel();
    let info = Arc::new(Mutex::new(ServerInfo {
        name: key.0.clone(),
        root: key.1.clone(),
        pid: None,
        last_used: Instant::now(),
        requests: 0,
        warm_requests: 0,
        restarts: 0,
        open_files: 0,
        busy: false,
        warming: false,
        starting: false,
        warming_waited: false,
        last_error: None,
        batch_done: 0,
        batch_total: 0,
        command: String::new(),
        reason: None,
        project_pass: ProjectPass::NotRun,
    }));
    let worker = Worker {
        id,
        key: key.clone(),
        host,
        info: Arc::clone(&info),
        receiver,
        client: None,
        fingerprint: String::new(),
        files: HashMap::new(),
        disk: None,
        failures: VecDeque::new(),
        ever_started: false,
        warming_until: None,
        asked_unanswered_since: None,
        last_used: Instant::now(),
        waiters: Vec::new(),
        batch_alone_since: None,
        start_failure: None,
        told_of_files: false,
        c_stale_for_others: None,
        narrowed_files: false,
        batch_silence: DEFAULT_STARTUP,
    };
    std::thread::Builder::new()
        .name(format!("server-{}", key.0))
        .spawn(move || worker.run())?;
    Ok(WorkerHandle { id, sender, info })
}

struct Worker {
    id: u64,
    key: Key,
    host: Arc<dyn Host>,
    info: Arc<Mutex<ServerInfo>>,
    receiver: Receiver<Job>,
    client: Option<Client>,
    fingerprint: String,
    /// Open files (compared form), when each was last checked, and whether
    /// a project check opened it (such files stay open as long as the
    /// server, so the next check of the project is answered warm).
    files: HashMap<PathBuf, (Instant, bool)>,
    /// The server's files on the disk as it was last told of them (see
    /// [`super::fresh`]): set when the server starts, walked again before
    /// every job.
    disk: Option<DiskView>,
    /// When the server crashed or hung, within the last minute.
    failures: VecDeque<Instant>,
    ever_started: bool,
    /// Set while the server is warming: the end of its start-up time.
    warming_until: Option<Instant>,
    /// When the first request still unanswered since the server last said
    /// anything was sent: silence counts from there, not from idle time.
    asked_unanswered_since: Option<Instant>,
    last_used: Instant,
    /// Callers waiting for files of the running batch.
    waiters: Vec<Waiter>,
    /// Since when the running batch has had no caller.
    batch_alone_since: Option<Instant>,
    /// The server did not start: when, why, and for which configuration.
    start_failure: Option<(Instant, WireError, String)>,
    /// How long the running batch's server may be silent (see [`BatchJob`]).
    batch_silence: Duration,
    /// Files came, went or changed on the disk since the server started
    /// and it was only told (see [`CreatedOrDeleted::RestartForQueries`]):
    /// the next query restarts it.
    told_of_files: bool,
    /// The project's configuration narrows which files the server reads
    /// (read when it starts; a change of it restarts the server).
    narrowed_files: bool,
    /// A C/C++ file changed by an edit whose own check did not restart the
    /// server: a check of other files (which may include it) restarts it.
    c_stale_for_others: Option<PathBuf>,
}

/// A caller of the running batch.
struct Waiter {
    files: Vec<PathBuf>,
    deadline: Instant,
    warm: bool,
    reply: SyncSender<BatchReply>,
}

#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Exit,
}

impl Worker {
    fn run(mut self) {
        loop {
            let wait = if self.batch_running() {
                Duration::from_millis(5)
            } else {
                TICK
            };
            match self.receiver.recv_timeout(wait) {
                Ok(job) => {
                    if self.handle(job) == Flow::Exit {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.stop_server("the daemon is stopping");
                    return;
                }
            }
            if self.batch_running() {
                self.step_batch();
                continue;
            }
            self.maintain();
            let idle_limit = self.host.config().server_idle();
            if self.last_used.elapsed() >= idle_limit {
                // Leave the registry under its lock, so no check can be
                // sent to a worker that is going away.
                let mut registry = self.host.lock_registry();
                if let Ok(job) = self.receiver.try_recv() {
                    drop(registry);
                    if self.handle(job) == Flow::Exit {
                        return;
                    }
                    continue;
                }
                if registry
                    .workers
                    .get(&self.key)
                    .is_some_and(|handle| handle.id == self.id)
                {
                    registry.workers.remove(&self.key);
                }
                drop(registry);
                self.stop_server(&format!(
                    "idle for {} s",
                    self.last_used.elapsed().as_secs()
                ));
                return;
            }
        }
    }

    fn handle(&mut self, job: Job) -> Flow {
        match job {
            Job::Batch { job, reply } => {
                self.batch(*job, reply);
                Flow::Continue
            }
            Job::Diagnose { job, reply } => {
                let answer = self.diagnose(&job);
                // The connection may have given up waiting; that is fine.
                let _ = reply.send(answer);
                Flow::Continue
            }
            Job::Call { job, reply } => {
                let answer = self.call(&job);
                let _ = reply.send(answer);
                Flow::Continue
            }
            Job::Prestart {
                launch,
                fingerprint,
                startup,
            } => {
                self.last_used = Instant::now();
                if self.client.is_none()
                    && self.failures.is_empty()
                    && let Err(error) = self.start(&launch, &fingerprint, startup)
                {
                    self.host
                        .log(&format!("pre-start of {} failed: {error}", self.key.0));
                }
                Flow::Continue
            }
            Job::Shutdown { reason, done } => {
                self.answer_waiters(true);
                self.stop_server(&reason);
                let _ = done.send(());
                Flow::Exit
            }
        }
    }

    fn diagnose(&mut self, job: &DiagnoseJob) -> DiagnoseReply {
        let started = Instant::now();
        self.last_used = started;
        self.update_info(|info| info.busy = true);
        let (result, warm, warmup) = self.check(job);
        let server_pid = self.served(warm, result.as_ref().err());
        DiagnoseReply {
            outcome: match result {
                Ok(items) => Outcome::Diagnostics { items },
                Err(error) => Outcome::Failed {
                    error: (&error).into(),
                },
            },
            warm,
            server_pid,
            elapsed_ms: started.elapsed().as_millis() as u64,
            warmup_ms: warmup.as_millis() as u64,
        }
    }

    /// One request for `refs`, `rename` or `fix` (issue 13), the server
    /// started first when needed.
    fn call(&mut self, job: &CallJob) -> CallReply {
        let started = Instant::now();
        self.last_used = started;
        self.update_info(|info| info.busy = true);
        let (result, warm) = self.call_on_server(job);
        let server_pid = self.served(warm, result.as_ref().err());
        CallReply {
            outcome: match result {
                Ok(answer) => CallOutcome::Answer { answer },
                Err(error) => CallOutcome::Failed {
                    error: (&error).into(),
                },
            },
            warm,
            server_pid,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }

    fn batch_running(&self) -> bool {
        self.client.as_ref().is_some_and(Client::batch_running)
    }

    /// A project check's files: into the server's running batch (started
    /// first when needed); the caller is answered by [`Worker::step_batch`].
    fn batch(&mut self, job: BatchJob, reply: SyncSender<BatchReply>) {
        self.last_used = Instant::now();
        self.update_info(|info| info.busy = true);
        let failed = |error: &LspError| BatchReply {
            answers: vec![FileAnswer::Pending; job.files.len()],
            failure: Some(WireError::from(error)),
            warm: false,
        };
        if let Some(error) = self.recent_start_failure(&job.fingerprint) {
            let _ = reply.send(failed(&error));
            return;
        }
        let warm =
            match self.ready_and_current(&job.launch, &job.fingerprint, job.startup, &[], false) {
                Ok(warm) => warm,
                Err(error) => {
                    let _ = reply.send(failed(&error));
                    self.served(false, Some(&error));
                    return;
                }
            };
        if let Some(until) = self.warming_until {
            self.warming_until = Some(until.max(Instant::now() + job.startup));
        }
        self.batch_silence = job.silence;
        let client = self.client.as_mut().expect("ready above");
        client.batch_add(&job.files);
        self.batch_alone_since = None;
        self.waiters.push(Waiter {
            files: job.files.iter().map(|f| f.path.clone()).collect(),
            deadline: job.deadline,
            warm,
            reply,
        });
        let now = Instant::now();
        for file in &job.files {
            self.files.insert(uri::comparable(&file.path), (now, true));
        }
        self.step_batch();
    }

    /// One short step of the running batch; answers the callers whose files
    /// are done or whose deadline came, and ends the batch when it is done
    /// or has run alone for [`BATCH_LIMIT`].
    fn step_batch(&mut self) {
        let Some(client) = &mut self.client else {
            return;
        };
        self.last_used = Instant::now();
        let until = self
            .waiters
            .iter()
            .map(|w| w.deadline)
            .min()
            .unwrap_or(Instant::now() + BATCH_STEP)
            .min(Instant::now() + BATCH_STEP);
        if let Err(error) = client.batch_step(until, self.batch_silence) {
            let wire = WireError::from(&error);
            for waiter in std::mem::take(&mut self.waiters) {
                let _ = waiter
                    .reply
                    .send(self.batch_reply(&waiter, Some(wire.clone())));
            }
            self.fail(&error);
            self.batch_alone_since = None;
            self.served(false, Some(&error));
            return;
        }
        let done = client.batch_done();
        let progress = client.batch_progress();
        if done && self.warming_until.take().is_some() {
            self.update_info(|info| {
                info.warming = false;
                info.warming_waited = false;
            });
        }
        self.update_info(|info| {
            info.batch_done = progress.done;
            info.batch_total = progress.total;
        });
        self.answer_waiters(false);
        if self.waiters.is_empty() {
            let alone = *self.batch_alone_since.get_or_insert_with(Instant::now);
            if done || alone.elapsed() >= BATCH_LIMIT {
                if !done {
                    self.host.log(&format!(
                        "{}: a project check ran {} s after its last caller and was ended ({} of {} files)",
                        self.key.0,
                        BATCH_LIMIT.as_secs(),
                        progress.done,
                        progress.total
                    ));
                }
                if let Some(client) = &mut self.client {
                    client.batch_end();
                }
                self.batch_alone_since = None;
                self.update_info(|info| {
                    info.busy = false;
                    info.batch_done = 0;
                    info.batch_total = 0;
                });
            }
        }
    }

    /// Answers the callers whose files are all answered, or whose deadline
    /// came (every caller when `all`).
    fn answer_waiters(&mut self, all: bool) {
        let now = Instant::now();
        let waiters = std::mem::take(&mut self.waiters);
        let mut answered_any = false;
        let mut any_warm = false;
        for waiter in waiters {
            let complete = self.client.as_ref().is_some_and(|client| {
                waiter
                    .files
                    .iter()
                    .all(|path| !matches!(client.batch_answer(path), FileAnswer::Pending))
            });
            if all || complete || now >= waiter.deadline {
                any_warm |= waiter.warm;
                let failure = (!complete && self.warming_until.is_some()).then(|| {
                    WireError::from(&LspError::WarmingUp {
                        server: self.key.0.clone(),
                        waited: Duration::ZERO,
                        // The server answered `initialize` (this worker
                        // has its client): it is loading the project.
                        loading: self.client.is_some(),
                    })
                });
                let _ = waiter.reply.send(self.batch_reply(&waiter, failure));
                answered_any = true;
            } else {
                self.waiters.push(waiter);
            }
        }
        if answered_any {
            self.served(any_warm, None);
            if self.batch_running() {
                self.update_info(|info| info.busy = true);
            }
        }
    }

    fn batch_reply(&self, waiter: &Waiter, failure: Option<WireError>) -> BatchReply {
        let answers = match &self.client {
            Some(client) => waiter
                .files
                .iter()
                .map(|p| client.batch_answer(p))
                .collect(),
            None => vec![FileAnswer::Pending; waiter.files.len()],
        };
        BatchReply {
            answers,
            failure,
            warm: waiter.warm,
        }
    }

    /// The error to answer at once when the server failed to start a short
    /// while ago with this very configuration (a new one is tried anew).
    fn recent_start_failure(&self, fingerprint: &str) -> Option<LspError> {
        let (at, error, failed_fingerprint) = self.start_failure.as_ref()?;
        (failed_fingerprint == fingerprint && at.elapsed() < START_FAILURE_BACKOFF)
            .then(|| LspError::from(error.clone()))
    }

    /// Keeps the counters `daemon status` shows after a request; the
    /// server's pid.
    fn served(&mut self, warm: bool, error: Option<&LspError>) -> Option<u32> {
        self.last_used = Instant::now();
        let server_pid = self.client.as_ref().map(Client::pid);
        let error_text = error.map(ToString::to_string);
        let open_files = self.files.len();
        self.update_info(|info| {
            info.busy = false;
            info.requests += 1;
            if warm {
                info.warm_requests += 1;
            }
            info.last_used = Instant::now();
            info.pid = server_pid;
            info.open_files = open_files;
            if let Some(error) = error_text {
                info.last_error = Some(error);
            }
        });
        server_pid
    }

    /// A client for `launch` before a job: takes in what the server said
    /// meanwhile (so nothing stale counts as the answer to this job, and a
    /// death is noticed), restarts it when its configuration changed, and
    /// starts it when there is none. `Ok(true)` when it was already running.
    fn ready_client(
        &mut self,
        launch: &Launch,
        fingerprint: &str,
        startup: Duration,
    ) -> Result<bool, LspError> {
        self.maintain();
        if self.client.is_some() && self.fingerprint != fingerprint {
            self.host.log(&format!(
                "the configuration of {} changed (its settings, its binary, or the caller's Python environment): restarting it",
                self.key.0
            ));
            self.drop_client(self.host.config().shutdown_grace());
        }
        let warm = self.client.is_some();
        if !warm {
            self.start(launch, fingerprint, startup)?;
        }
        Ok(warm)
    }

    /// [`Worker::ready_client`], then the server brought up to date with
    /// the disk ([`Worker::catch_up_with_disk`]): restarted when a
    /// configuration file changed. `given` are the job's own files, which
    /// the job sends itself.
    fn ready_and_current(
        &mut self,
        launch: &Launch,
        fingerprint: &str,
        startup: Duration,
        given: &[PathBuf],
        query: bool,
    ) -> Result<bool, LspError> {
        let warm = self.ready_client(launch, fingerprint, startup)?;
        if !warm {
            return Ok(false);
        }
        let changes = self.catch_up_with_disk(given);
        let files_came_or_went = !changes.created.is_empty() || !changes.deleted.is_empty();
        // A project-wide question (refs, rename) is answered from the text
        // pyright read of files it was not given, which a change on the
        // disk (a shell edit, a symlink pointed elsewhere) leaves stale
        // whatever it was told: any change since the start counts.
        self.told_of_files |= files_came_or_went || !changes.changed.is_empty();
        let restart_for_files = match launch.created_or_deleted {
            CreatedOrDeleted::Told => false,
            CreatedOrDeleted::Restart => files_came_or_went,
            CreatedOrDeleted::RestartForQueries if self.narrowed_files => files_came_or_went,
            // A namespace package that came or went is not taken in by a
            // server that needs restarting for queries (pyright), told or
            // not (engine attack E-9).
            CreatedOrDeleted::RestartForQueries => {
                (query && self.told_of_files) || !changes.bare_folders.is_empty()
            }
        };
        // A C/C++ file changed is news for every translation unit that
        // includes it, except the one file a single-file job (the edit's
        // check) sends itself: then only a later check of other files
        // needs a fresh server.
        // (A header's own check is no such edit: nothing checks a header
        // alone, and a check after it may be answered from kept results.)
        let own_edit = given.len() == 1
            && changes.c_files.iter().all(|path| {
                uri::comparable(path) == uri::comparable(&given[0])
                    && super::fresh::is_c_source(path)
            });
        let only_that_file = |edited: &PathBuf| {
            given.len() == 1 && uri::comparable(&given[0]) == uri::comparable(edited)
        };
        let restart_for_includes = if changes.c_files.is_empty() {
            // Any job but that file's own check again (a project check
            // names no files of its own).
            self.c_stale_for_others
                .as_ref()
                .is_some_and(|edited| !only_that_file(edited))
        } else if own_edit {
            self.c_stale_for_others = Some(given[0].clone());
            false
        } else {
            true
        };
        if changes.configs.is_empty() && !restart_for_files && !restart_for_includes {
            return Ok(true);
        }
        if changes.configs.is_empty() && restart_for_includes {
            self.c_stale_for_others = None;
            let names = if changes.c_files.is_empty() {
                "by an edit checked earlier".to_string()
            } else {
                relative_names(&changes.c_files, &self.key.1).join(", ")
            };
            self.host.log(&format!(
                "{}: a C/C++ file that others may include changed on the disk ({names}), and they are answered from what it read before: restarting it",
                self.key.0,
            ));
            self.drop_client(self.host.config().shutdown_grace());
            self.start(launch, fingerprint, startup)?;
            return Ok(false);
        }
        if changes.configs.is_empty() {
            let what = if changes.bare_folders.is_empty() {
                "files were created or deleted".to_string()
            } else {
                let names = relative_names(&changes.bare_folders, &self.key.1);
                let more = names.len().saturating_sub(3);
                let mut shown = names.into_iter().take(3).collect::<Vec<_>>().join(", ");
                if more > 0 {
                    shown.push_str(&format!(", {more} more"));
                }
                format!("a folder with no source file came or went ({shown})")
            };
            self.host.log(&format!(
                "{}: {what} on the disk, which it does not take in {}: restarting it",
                self.key.0,
                if query {
                    "for this request"
                } else {
                    "while running"
                }
            ));
            self.drop_client(self.host.config().shutdown_grace());
            self.start(launch, fingerprint, startup)?;
            return Ok(false);
        }
        self.host.log(&format!(
            "{}: its configuration changed on the disk ({}): restarting it",
            self.key.0,
            relative_names(&changes.configs, &self.key.1).join(", ")
        ));
        self.drop_client(self.host.config().shutdown_grace());
        self.start(launch, fingerprint, startup)?;
        Ok(false)
    }

    /// Tells the running server what changed on the disk since it last
    /// looked — by the Edit tools, a shell command, `git checkout`, another
    /// program, while the daemon was idle: open documents get their new
    /// text (or are closed when deleted), and every created, changed or
    /// deleted file goes out as `workspace/didChangeWatchedFiles`, after
    /// which no kept result is reused. The job's own files (`given`) are
    /// sent by the job, and a change to them alone is not news. What
    /// changed is returned: the caller restarts the server for a
    /// configuration change.
    fn catch_up_with_disk(&mut self, given: &[PathBuf]) -> DiskChanges {
        let (Some(disk), Some(client)) = (&mut self.disk, &mut self.client) else {
            return DiskChanges::default();
        };
        let walked_at = Instant::now();
        let mut changes = disk.refresh();
        let touched: Vec<&PathBuf> = changes
            .created
            .iter()
            .chain(&changes.changed)
            .chain(&changes.deleted)
            .collect();
        changes.c_files = disk.c_files(&touched);
        // The job's own files go to the server with the job: not news.
        let given: Vec<PathBuf> = given.iter().map(|path| uri::comparable(path)).collect();
        changes.changed.retain(|path| !given.contains(path));
        if changes.is_empty() {
            return changes;
        }
        self.host.log(&format!(
            "{}: {} on the disk since it last looked ({}; {} files walked in {} ms); telling it",
            self.key.0,
            changes.summary(),
            changes.examples(&self.key.1, 3),
            disk.len(),
            walked_at.elapsed().as_millis()
        ));
        if !changes.configs.is_empty() {
            return changes;
        }
        for path in &changes.changed {
            if !client.is_open(path) {
                continue;
            }
            match fsread::read_text(path, fsread::limits::SOURCE, fsread::Links::Follow) {
                Ok(Some(text)) => client.sync_document(&OpenFile {
                    path: path.clone(),
                    text,
                    // Only a first open sends it; this one is open.
                    language_id: String::new(),
                }),
                // Gone, or no longer text: the server reads the disk itself.
                _ => {
                    client.close_document(path);
                    self.files.remove(path);
                }
            }
        }
        for path in &changes.deleted {
            if client.close_document(path) {
                self.files.remove(path);
            }
        }
        client.files_changed_on_disk(&changes.created, &changes.changed, &changes.deleted);
        let open_files = self.files.len();
        self.update_info(|info| info.open_files = open_files);
        changes
    }

    /// The request itself; the bool says whether a running server served
    /// it. A refusal (an error response) is an answer from a healthy server.
    fn call_on_server(&mut self, job: &CallJob) -> (Result<CallAnswer, LspError>, bool) {
        if Instant::now() >= job.deadline {
            let error = LspError::Timeout {
                waiting_for: "its turn (another request to this server was still running)".into(),
                after: Duration::ZERO,
                detail: String::new(),
            };
            return (Err(error), false);
        }
        let time_left = || job.deadline.saturating_duration_since(Instant::now());
        if let Some(error) = self.recent_start_failure(&job.fingerprint) {
            return (Err(error), false);
        }
        let given: Vec<PathBuf> = job.open.iter().map(|file| file.path.clone()).collect();
        let warm = match self.ready_and_current(
            &job.launch,
            &job.fingerprint,
            time_left(),
            &given,
            true,
        ) {
            Ok(warm) => warm,
            Err(error) => return (Err(error), false),
        };
        let asked = Instant::now();
        let mut result = self.run_call(job);
        if let Err(LspError::Timeout { .. }) = &result
            && self.keep_slow_server(asked)
        {
            return (result, warm);
        }
        if let Err(error) = &result
            && !matches!(error, LspError::Rejected { .. })
        {
            let crashed = matches!(error, LspError::Exited { .. });
            self.fail(error);
            // As for a check: a warm server that died under the request is
            // started again at once (within the restart bound).
            if warm
                && crashed
                && Instant::now() < job.deadline
                && self
                    .start(&job.launch, &job.fingerprint, time_left())
                    .is_ok()
            {
                result = self.run_call(job);
                if let Err(error) = &result {
                    self.fail(error);
                }
            }
        }
        (result, warm)
    }

    fn run_call(&mut self, job: &CallJob) -> Result<CallAnswer, LspError> {
        let Some(client) = &mut self.client else {
            return Err(LspError::Exited {
                during: "the start".into(),
                detail: String::new(),
            });
        };
        let result = client.call(&job.open, &job.method, job.params.clone(), job.deadline);
        let now = Instant::now();
        for file in &job.open {
            let project = self
                .files
                .get(&uri::comparable(&file.path))
                .is_some_and(|f| f.1);
            self.files
                .insert(uri::comparable(&file.path), (now, project));
        }
        result
    }

    /// The check itself; the bool says whether a running server served it,
    /// the duration how much of the check was the server's warm-up.
    fn check(
        &mut self,
        job: &DiagnoseJob,
    ) -> (Result<Vec<ServerDiagnostic>, LspError>, bool, Duration) {
        let began = Instant::now();
        if began >= job.deadline {
            return (
                Err(LspError::Timeout {
                    waiting_for: "its turn (another check of this server was still running)".into(),
                    after: Duration::ZERO,
                    detail: String::new(),
                }),
                false,
                Duration::ZERO,
            );
        }
        if let Some(error) = self.recent_start_failure(&job.fingerprint) {
            return (Err(error), false, Duration::ZERO);
        }
        let warm = match self.ready_and_current(
            &job.launch,
            &job.fingerprint,
            job.startup,
            std::slice::from_ref(&job.path),
            false,
        ) {
            Ok(warm) => warm,
            Err(error) => return (Err(error), false, began.elapsed()),
        };
        if let Some(until) = self.warming_until {
            // A pre-started server loads the project at its first check: its
            // start-up time counts from there too.
            self.warming_until = Some(until.max(began + job.startup));
        }
        let warming = self.warming_until.is_some();
        let mut result = self.run_check(job, self.check_deadline(job));
        let warmup = if warming {
            began.elapsed()
        } else {
            Duration::ZERO
        };
        if let Err(error) = &result {
            if warming && matches!(error, LspError::Timeout { .. }) {
                // Not even its start-up time was enough: stop it, but a
                // slow start is not a crash and never restart-limits it.
                self.host.log(&format!(
                    "{} did not warm up within its start-up time ({} s) and was stopped: {error}",
                    self.key.0,
                    job.startup.as_secs()
                ));
                self.update_info(|info| info.last_error = Some(error.to_string()));
                self.drop_client(Duration::ZERO);
                return (result, warm, warmup);
            }
            if matches!(error, LspError::Timeout { .. }) && self.keep_slow_server(began) {
                return (result, warm, warmup);
            }
            let crashed = matches!(error, LspError::Exited { .. });
            self.fail(error);
            // A warm server that died under this check is started again at
            // once (within the restart bound): a crash costs one cold start,
            // not an answer.
            if warm
                && crashed
                && Instant::now() < job.deadline
                && self
                    .start(&job.launch, &job.fingerprint, job.startup)
                    .is_ok()
            {
                result = self.run_check(job, self.check_deadline(job));
                if let Err(error) = &result {
                    self.fail(error);
                }
            }
        }
        (result, warm, warmup)
    }

    /// After a check ran out of time: a server that still talks is only
    /// slow for its caller's deadline (a hook has 5 s; a whole-project
    /// re-analysis may take longer) and is kept, its late answer taken in
    /// later; one that has said nothing for the configured `hung_after_ms`
    /// since it was first asked (over one check or several) is hung.
    /// `true` when kept.
    fn keep_slow_server(&mut self, asked: Instant) -> bool {
        let Some(client) = &mut self.client else {
            return false;
        };
        let heard = client.last_heard();
        let waiting_since = match self.asked_unanswered_since {
            Some(since) if since > heard => since,
            _ => asked.max(heard),
        };
        self.asked_unanswered_since = Some(waiting_since);
        if waiting_since.elapsed() >= self.host.config().hung_after() {
            return false;
        }
        client.keep_after_timeout();
        self.host.log(&format!(
            "{}: a check ran out of its caller's time; the server is busy, not hung, and stays",
            self.key.0
        ));
        true
    }

    /// A warming server's check runs to the end of its start-up time (the
    /// hook may have stopped waiting; the next check finds it warm); a warm
    /// one's to the hook's deadline, or its budget from now if sooner.
    fn check_deadline(&self, job: &DiagnoseJob) -> Instant {
        match self.warming_until {
            Some(until) => until.max(job.deadline),
            None => job.budget.map_or(job.deadline, |budget| {
                job.deadline.min(Instant::now() + budget)
            }),
        }
    }

    fn run_check(
        &mut self,
        job: &DiagnoseJob,
        deadline: Instant,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        let Some(client) = &mut self.client else {
            return Err(LspError::Exited {
                during: "the start".into(),
                detail: String::new(),
            });
        };
        let result = client.diagnose(&job.path, &job.text, &job.language_id, deadline);
        if result.is_ok() {
            let key = uri::comparable(&job.path);
            let project = self.files.get(&key).is_some_and(|f| f.1);
            self.files.insert(key, (Instant::now(), project));
            if self.warming_until.take().is_some() {
                self.update_info(|info| {
                    info.warming = false;
                    info.warming_waited = false;
                });
            }
        }
        result
    }

    /// Starts the server unless it failed too often in the last minute;
    /// it has `startup` to start and answer its first check.
    fn start(
        &mut self,
        launch: &Launch,
        fingerprint: &str,
        startup: Duration,
    ) -> Result<(), LspError> {
        self.c_stale_for_others = None;
        let deadline = Instant::now() + startup;
        while self
            .failures
            .front()
            .is_some_and(|at| at.elapsed() >= MINUTE)
        {
            self.failures.pop_front();
        }
        let limit = self.host.config().max_restarts_per_minute.max(1) as usize;
        if self.failures.len() >= limit
            && let Some(oldest) = self.failures.front()
        {
            let wait = MINUTE.saturating_sub(oldest.elapsed());
            return Err(LspError::Exited {
                during: "earlier checks".into(),
                detail: format!(
                    " ({} crashes or hangs within a minute; the ralph-hooks daemon starts it again in {} s)",
                    self.failures.len(),
                    wait.as_secs().max(1)
                ),
            });
        }
        // The marker lets a later daemon find this server's processes if
        // this daemon is killed before it could record them.
        let mut launch = launch.clone();
        launch.env.push((
            procs::MARKER.to_string(),
            self.host.state_root().to_string_lossy().into_owned(),
        ));
        // The disk as the server will find it: what changes after this walk
        // is news to it (see `catch_up_with_disk`).
        let mut disk = DiskView::new(
            &launch.root,
            &launch.extensions,
            &[self.host.state_root().to_path_buf()],
        )
        .for_launch(&launch);
        disk.refresh();
        // Starting counts as warming: a check that stops waiting meanwhile
        // is told so (the start goes on).
        self.update_info(|info| {
            info.warming = true;
            info.starting = true;
        });
        let started = Client::start(&launch, deadline);
        self.update_info(|info| info.starting = false);
        let client = match started {
            Ok(client) => client,
            Err(error) => {
                self.update_info(|info| {
                    info.warming = false;
                    info.warming_waited = false;
                });
                if matches!(error, LspError::StartFailed { .. }) {
                    self.start_failure = Some((
                        Instant::now(),
                        WireError::from(&error),
                        fingerprint.to_string(),
                    ));
                }
                // Not installed is not a crash, nor is a slow start (it had
                // its whole start-up time), nor one that did not start (it
                // is left alone for a while instead); everything else counts.
                if matches!(
                    error,
                    LspError::Spawn { .. }
                        | LspError::Timeout { .. }
                        | LspError::StartFailed { .. }
                ) {
                    self.update_info(|info| info.last_error = Some(error.to_string()));
                } else {
                    self.record_failure(&error.to_string());
                }
                self.host
                    .log(&format!("could not start {}: {error}", self.key.0));
                return Err(error);
            }
        };
        self.start_failure = None;
        self.disk = Some(disk);
        self.told_of_files = false;
        self.narrowed_files = launch.created_or_deleted == CreatedOrDeleted::RestartForQueries
            && super::fresh::narrows_python_files(&launch.root);
        let pid = client.pid();
        let restart = self.ever_started;
        self.ever_started = true;
        self.client = Some(client);
        self.fingerprint = fingerprint.to_string();
        self.warming_until = Some(deadline);
        let command = std::iter::once(launch.program.display().to_string())
            .chain(launch.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let reason = launch.reason.clone();
        self.update_info(|info| {
            info.warming = true;
            info.pid = Some(pid);
            info.command = command;
            if reason.is_some() {
                info.reason = reason;
            }
            if restart {
                info.restarts += 1;
            }
        });
        self.host.log(&format!(
            "{} {} (pid {pid}) for {}",
            if restart { "restarted" } else { "started" },
            self.key.0,
            self.key.1.display()
        ));
        self.host.write_record();
        self.host.remember(&self.key);
        Ok(())
    }

    /// A check failed: the server is killed (a hung one would only hang the
    /// next check too) and the failure counts toward the restart bound.
    fn fail(&mut self, error: &LspError) {
        let pid = self.client.as_ref().map(Client::pid);
        self.record_failure(&error.to_string());
        self.host.log(&format!(
            "{} (pid {}) failed a check and was stopped: {error}",
            self.key.0,
            pid.map_or_else(|| "?".into(), |p| p.to_string())
        ));
        self.drop_client(Duration::ZERO);
    }

    fn record_failure(&mut self, why: &str) {
        self.failures.push_back(Instant::now());
        let why = why.to_string();
        self.update_info(|info| info.last_error = Some(why));
    }

    /// Between checks: pump the server, notice its death, close old files.
    fn maintain(&mut self) {
        let Some(client) = &mut self.client else {
            return;
        };
        client.pump_idle();
        if !client.is_healthy() {
            let pid = client.pid();
            self.record_failure(&format!("the server (pid {pid}) exited"));
            self.host.log(&format!(
                "{} (pid {pid}) exited between checks; the next check starts it again",
                self.key.0
            ));
            self.drop_client(Duration::ZERO);
            return;
        }
        let config = self.host.config();
        let (file_idle, server_idle) = (config.file_idle(), config.server_idle());
        let stale: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|(_, (at, project))| {
                at.elapsed() >= if *project { server_idle } else { file_idle }
            })
            .map(|(key, _)| key.clone())
            .collect();
        if !stale.is_empty() {
            for key in &stale {
                client.close_document(key);
                self.files.remove(key);
            }
            let open_files = self.files.len();
            self.update_info(|info| info.open_files = open_files);
        }
    }

    fn stop_server(&mut self, reason: &str) {
        if let Some(client) = &self.client {
            self.host.log(&format!(
                "shut down {} (pid {}): {reason}",
                self.key.0,
                client.pid()
            ));
            self.drop_client(self.host.config().shutdown_grace());
        }
    }

    fn drop_client(&mut self, grace: Duration) {
        if let Some(client) = self.client.take() {
            client.shutdown(grace);
        }
        self.files.clear();
        self.disk = None;
        self.warming_until = None;
        self.update_info(|info| {
            {
                info.warming = false;
                info.warming_waited = false;
            };
            info.pid = None;
            info.open_files = 0;
        });
        self.host.write_record();
    }

    fn update_info(&self, change: impl FnOnce(&mut ServerInfo)) {
        if let Ok(mut info) = self.info.lock() {
            change(&mut info);
        }
    }
}

/// `paths` relative to `root`, for the log.
fn relative_names(paths: &[PathBuf], root: &Path) -> Vec<String> {
    paths
        .iter()
        .map(|path| {
            path.strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect()
}
