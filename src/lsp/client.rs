//! A synchronous LSP client for one server process: initialize, open or
//! change a document, wait for its diagnostics to settle, shut down.
//!
//! Every wait pumps the server's messages, so requests the server sends us
//! are answered while we wait — an unanswered `workspace/configuration` makes
//! pyright never publish, and an unanswered `window/workDoneProgress/create`
//! hangs gopls (`shared/reference/language-servers.md` §3). Every wait has a
//! deadline. A client keeps its documents and their versions, so a
//! long-lived process can hold it and re-check files with `didChange`
//! ([`super::Pool`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub mod batch;

use super::settle::{self, Settle, SettleState};
use super::transport::{Incoming, Transport};
use super::uri;
use crate::util::fsread;
use crate::util::text::fnv1a;

/// A file a request needs open in the server, with the text it has now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenFile {
    pub path: PathBuf,
    pub text: String,
    pub language_id: String,
}

/// A request's result or the server's refusal, with the server's
/// capabilities beside it so the caller can say what a server does not
/// support.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallAnswer {
    pub result: Value,
    /// The error message of an error response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    pub capabilities: Value,
    /// Why the answer may be incomplete: the server was still building its
    /// index of the project ([`Launch::index_progress`]) when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

/// How to start one server for one workspace root.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The server's name in the registry (`pyright`, or a `.lsp.json` key).
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The workspace root, sent as rootUri and the one workspace folder.
    pub root: PathBuf,
    pub initialization_options: Option<Value>,
    /// Answers to `workspace/configuration`, also sent with
    /// `workspace/didChangeConfiguration`.
    pub settings: Option<Value>,
    /// How long nothing new must arrive before diagnostics count as final.
    pub quiet: Duration,
    /// A work-done progress title (substring) that must run to its end after
    /// a change before diagnostics count: rust-analyzer's "cargo check".
    pub await_progress: Option<String>,
    /// The work-done progress title (substring) of the server's index of
    /// the whole project (clangd's "indexing"), set when the workspace has
    /// the file the index is built from: a question about the whole
    /// project (references, rename) waits for it to end.
    pub index_progress: Option<String>,
    /// The server publishes nothing when a document's diagnostics stay
    /// empty after a change (typescript-language-server and rust-analyzer
    /// skip an empty set that follows an empty set), so a change of a clean
    /// document is sent as a close and a fresh open, after which it always
    /// publishes.
    pub reopen_when_clean: bool,
    pub mode: DiagnosticMode,
    pub pull_capability: PullCapability,
    /// The file extensions it handles (`.py`): the files a long-lived
    /// holder watches on the disk for it (see `daemon::fresh`).
    pub extensions: Vec<String>,
    /// How it takes in files created or deleted behind its back: told
    /// through `workspace/didChangeWatchedFiles`, or only by a restart (for
    /// every answer, or only for project-wide queries).
    pub created_or_deleted: CreatedOrDeleted,
    /// Why this server handles the files it is launched for (the
    /// registry's choice), for `daemon status`; not part of its
    /// configuration.
    pub reason: Option<String>,
}

/// How a server takes in files created or deleted on the disk behind its
/// back (a long-lived holder tells it of them, see `daemon::fresh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedOrDeleted {
    /// `workspace/didChangeWatchedFiles` is enough.
    #[default]
    Told,
    /// Told, its diagnostics take them in (pyright invalidates its import
    /// resolution on a created file it includes), but its project-wide
    /// queries do not (pyright left a created file out of
    /// `textDocument/references`): restarted before a reference, rename or
    /// other request, not before a check. A project whose configuration
    /// narrows the server's files (`include`/`exclude`) restarts it before
    /// every answer: a created file it leaves out is never read, though an
    /// import may resolve to it.
    RestartForQueries,
    /// Nothing takes them in (typescript-language-server: an import of a
    /// file created later stays unresolved, told or not): restarted before
    /// the next answer.
    Restart,
}

/// What a client tells a server about pull diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullCapability {
    /// Nothing: the server pushes (or is pulled if it offers pull itself).
    #[default]
    Undeclared,
    /// `textDocument.diagnostic` declared (ruff, ty, TypeScript 7).
    Declared,
    /// Declared with `dynamicRegistration`: pyright then registers pull and
    /// stops pushing.
    Dynamic,
}

/// Push (`publishDiagnostics`) or pull (`textDocument/diagnostic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticMode {
    Push,
    Pull,
    /// Pull when the server advertises a `diagnosticProvider`, else push.
    Auto,
}

/// A time-out's detail when the server has not finished a first check since
/// it started: it is loading the project (or stuck there), not busy with
/// other work.
pub const FIRST_CHECK_PENDING: &str =
    " (it has not finished a first check since it started: still loading the project, or stuck)";

/// Why a server could not give an answer. Callers branch on it: a server
/// that cannot start may be "not installed", the rest is "inconclusive".
#[derive(Debug)]
pub enum LspError {
    Spawn {
        program: PathBuf,
        error: std::io::Error,
    },
    Timeout {
        waiting_for: String,
        after: Duration,
        detail: String,
    },
    Exited {
        during: String,
        detail: String,
    },
    Rejected {
        method: String,
        message: String,
    },
    /// The server is still starting (process start, initialize, first
    /// project load) and keeps starting in the daemon: not broken, and not
    /// clean either. The next check will find it warm.
    WarmingUp {
        server: String,
        waited: Duration,
        /// It has answered `initialize` and is loading the project (or
        /// stuck there): no longer starting.
        loading: bool,
    },
    /// The server did not come up: it did not answer `initialize` in time,
    /// exited before answering, or refused it. Not tried again for a while
    /// (the daemon's back-off), and never reported as clean.
    StartFailed {
        server: String,
        reason: String,
    },
}

impl fmt::Display for LspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LspError::Spawn { program, error } => {
                write!(f, "cannot start {}: {error}", program.display())
            }
            LspError::Timeout {
                waiting_for,
                after,
                detail,
            } => write!(
                f,
                "no result within {:.1} s while waiting for {waiting_for}{detail}",
                after.as_secs_f64()
            ),
            LspError::Exited { during, detail } => {
                write!(f, "the server exited during {during}{detail}")
            }
            LspError::Rejected { method, message } => {
                // Servers put tabs and line breaks in messages (gopls);
                // ours are one line.
                let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
                write!(f, "the server refused {method}: {message}")
            }
            LspError::WarmingUp {
                server,
                waited,
                loading: false,
            } => write!(
                f,
                "{server} is still warming up after {:.1} s (it keeps starting in the background)",
                waited.as_secs_f64()
            ),
            LspError::WarmingUp {
                server,
                loading: true,
                ..
            } => write!(
                f,
                "{server} is running but has not finished a first look at the project (still loading it, or stuck)"
            ),
            LspError::StartFailed { server, reason } => {
                write!(f, "{server} did not start: {reason}")
            }
        }
    }
}

impl std::error::Error for LspError {}

/// One diagnostic as a server sent it, parsed leniently: a strange
/// `codeDescription` or unknown field must not lose the diagnostic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerDiagnostic {
    pub range: lsp_types::Range,
    /// 1 error, 2 warning, 3 information, 4 hint; absent means error.
    #[serde(default)]
    pub severity: Option<i64>,
    /// A string, or a number (TypeScript).
    #[serde(default)]
    pub code: Option<Value>,
    #[serde(default)]
    pub source: Option<String>,
    pub message: String,
    #[serde(default)]
    pub tags: Option<Vec<i64>>,
}

impl ServerDiagnostic {
    pub fn code_text(&self) -> Option<String> {
        match &self.code {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        }
    }
}

/// `ServerCancelled` (LSP 3.17): the server asks us to pull again.
const SERVER_CANCELLED: i32 = -32802;
/// `ContentModified`: the document changed under the request; pull again.
const CONTENT_MODIFIED: i32 = -32801;

/// The latest publish for one file.
#[derive(Debug, Clone)]
struct Publish {
    version: Option<i32>,
    diagnostics: Vec<ServerDiagnostic>,
    at: Instant,
}

/// A document's last answer: for which text, when, and at which of the
/// server's change counts (a result taken before a later change of another
/// file may no longer hold).
#[derive(Debug)]
struct SettledResult {
    text_hash: u64,
    at: Instant,
    epoch: u64,
    diagnostics: Vec<ServerDiagnostic>,
    /// The pull server's `resultId` for exactly these diagnostics: sent as
    /// `previousResultId` next time, so that a file a change did not touch
    /// comes back "unchanged" instead of in full (on ~1,800 files after one
    /// change, 20 diagnostics cross the pipe instead of 54,000).
    result_id: Option<String>,
}

/// The document whose diagnostics we are waiting for.
#[derive(Debug)]
struct ActiveCheck {
    key: PathBuf,
    uri: String,
    version: i32,
    sent_at: Instant,
    pull_request: Option<RequestId>,
    /// The server asked us to pull again (refresh, cancel, or a result given
    /// while it was still loading).
    pull_again: bool,
    pulled: Option<(Vec<ServerDiagnostic>, Instant)>,
    pulled_while_busy: bool,
    awaited_progress_done: bool,
    /// Publishes accepted for this change so far.
    n_accepted: u32,
}

/// The longest a request waits for a new server's first analysis.
const FIRST_ANALYSIS_BUDGET: Duration = Duration::from_secs(20);

/// How long after its start a server that builds an index of the project
/// may take to begin it (see [`Client::await_index`]).
const INDEX_GRACE: Duration = Duration::from_secs(3);

/// A server that has not answered `initialize` by then is not coming up:
/// it is stopped and reported as not started (seed AC-LSP-002: no answer
/// within 5 s is a timeout, and the rest goes on). Loading the project
/// afterwards has the server's own start-up time.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Client {
    launch: Launch,
    transport: Transport,
    root_uri: String,
    next_id: i32,
    capabilities: Value,
    pull: bool,
    documents: HashMap<PathBuf, i32>,
    /// The last settled result per open document, to answer a re-check of
    /// unchanged text without a round trip (see [`Client::diagnose`]).
    results: HashMap<PathBuf, SettledResult>,
    /// Counts the sends that changed a document's text on this server.
    changes: u64,
    /// `changes` just after the server was last told of files changed on
    /// the disk by someone else: a result kept from before is about files
    /// as they were, and is never reused.
    outside_epoch: u64,
    /// When a change was last sent (a text, files changed on the disk): a
    /// push server is quiet after it once nothing came for its quiet window.
    last_change_at: Option<Instant>,
    /// `changes` when the server was last let go quiet for an unchanged
    /// document's re-check.
    quiet_after: u64,
    /// Whether the server has finished an analysis since it started (a
    /// settled check, or the wait before its first request).
    analysed: bool,
    /// A hash of the text last sent for each open document, so a request
    /// that needs a file open sends it again only when it changed.
    sent_texts: HashMap<PathBuf, u64>,
    publishes: HashMap<PathBuf, Publish>,
    /// Open documents whose latest publish was empty (kept across changes,
    /// unlike `publishes`), for [`Launch::reopen_when_clean`].
    published_clean: HashSet<PathBuf>,
    /// Open work-done progress: token → title.
    progress: HashMap<String, String>,
    /// A progress of [`Launch::index_progress`] has begun since start.
    index_begun: bool,
    /// When the server was started.
    started_at: Instant,
    last_progress_end: Option<Instant>,
    responses: HashMap<RequestId, Response>,
    active: Option<ActiveCheck>,
    n_invalid: usize,
    last_invalid: Option<String>,
    exited: Option<String>,
    /// Cleared when a wait timed out: the server may be hung, so shutting it
    /// down politely would only waste the user's time.
    responsive: bool,
    /// Server requests answered, by method; tests and `--debug` read it.
    answered: Vec<String>,
    /// When the server last sent a message (slow vs hung).
    last_heard: Instant,
    pub last_used: Instant,
    /// The project check in progress ([`batch`]).
    batch: Option<batch::Batch>,
    /// Each file's text hash as last read from the disk by a batch: a file
    /// whose disk text moved since is a change for the server even when it
    /// was never open (it read the old text itself).
    seen_on_disk: HashMap<PathBuf, u64>,
    /// The last text sent for each file, kept after it is closed: opening
    /// it again with another text is a change for the server.
    known_texts: HashMap<PathBuf, u64>,
    /// Requests whose answers nobody waits for any more (a batch ended with
    /// pulls in flight): their responses are dropped, not kept.
    ignored_responses: HashSet<RequestId>,
    /// A pull registration's `identifier` (pyright registers pull
    /// dynamically), used when the capabilities name none.
    registered_pull_identifier: Option<String>,
}

impl Client {
    /// Starts the server and runs the initialize handshake, all before `deadline`.
    pub fn start(launch: &Launch, deadline: Instant) -> Result<Client, LspError> {
        let mut command =
            crate::util::confine::server_command(&launch.program).map_err(|error| {
                LspError::Spawn {
                    program: launch.program.clone(),
                    error,
                }
            })?;
        command.args(&launch.args).current_dir(&launch.root);
        super::environment::apply(&mut command, &launch.env);
        let transport = Transport::spawn(&mut command).map_err(|error| LspError::Spawn {
            program: launch.program.clone(),
            error,
        })?;
        // The root as the documents are named, canonical: a project
        // opened through a link (`/tmp` on macOS) was a workspace that
        // held none of its own documents to ty, which then said nothing
        // about them, read as clean (re-attack RC-7).
        let root_uri = uri::from_path(&uri::comparable(&launch.root));
        let mut client = Client {
            launch: launch.clone(),
            transport,
            root_uri,
            next_id: 0,
            capabilities: Value::Null,
            pull: false,
            documents: HashMap::new(),
            results: HashMap::new(),
            changes: 0,
            outside_epoch: 0,
            last_change_at: None,
            quiet_after: 0,
            analysed: false,
            sent_texts: HashMap::new(),
            publishes: HashMap::new(),
            published_clean: HashSet::new(),
            progress: HashMap::new(),
            index_begun: false,
            started_at: Instant::now(),
            last_progress_end: None,
            responses: HashMap::new(),
            active: None,
            n_invalid: 0,
            last_invalid: None,
            exited: None,
            responsive: true,
            answered: Vec::new(),
            last_heard: Instant::now(),
            last_used: Instant::now(),
            batch: None,
            seen_on_disk: HashMap::new(),
            known_texts: HashMap::new(),
            ignored_responses: HashSet::new(),
            registered_pull_identifier: None,
        };
        let id = client.request("initialize", client.initialize_params());
        let asked = Instant::now();
        let initialize_deadline = deadline.min(asked + INITIALIZE_TIMEOUT);
        let failed = |reason: String| LspError::StartFailed {
            server: launch.name.clone(),
            reason,
        };
        let response =
            match client.wait_response(&id, initialize_deadline, "the initialize response") {
                Ok(response) => response,
                // Our own deadline came first: the caller stopped waiting, the
                // server may be fine (a hook with little time left).
                Err(error @ LspError::Timeout { .. })
                    if initialize_deadline < asked + INITIALIZE_TIMEOUT =>
                {
                    return Err(error);
                }
                Err(LspError::Timeout { .. }) => {
                    return Err(failed(format!(
                        "no answer to initialize within {:.0} s{}",
                        INITIALIZE_TIMEOUT.as_secs_f64(),
                        client.detail()
                    )));
                }
                Err(LspError::Exited { detail, .. }) => {
                    return Err(failed(format!(
                        "it exited before answering initialize{detail}"
                    )));
                }
                Err(error) => return Err(error),
            };
        if let Some(error) = response.error {
            let message = error
                .message
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            return Err(failed(format!("it refused initialize: {message}")));
        }
        let result = response.result.unwrap_or(Value::Null);
        client.capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        client.pull = match launch.mode {
            DiagnosticMode::Push => false,
            DiagnosticMode::Pull => true,
            DiagnosticMode::Auto => client
                .capabilities
                .get("diagnosticProvider")
                .is_some_and(|provider| !provider.is_null() && *provider != Value::Bool(false)),
        };
        client.notify("initialized", json!({}));
        if let Some(settings) = &launch.settings {
            client.notify(
                "workspace/didChangeConfiguration",
                json!({ "settings": settings }),
            );
        }
        Ok(client)
    }

    pub fn name(&self) -> &str {
        &self.launch.name
    }

    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    pub fn pid(&self) -> u32 {
        self.transport.pid()
    }

    /// Whether diagnostics are pulled rather than waited for.
    pub fn uses_pull(&self) -> bool {
        self.pull
    }

    /// Whether the server is still there and answering.
    pub fn is_healthy(&self) -> bool {
        self.exited.is_none() && self.responsive
    }

    /// When the server last said anything.
    pub fn last_heard(&self) -> Instant {
        self.last_heard
    }

    /// Keeps a server whose answer came too late for one caller but which
    /// is alive and talking: slow is not hung. Its late answer is taken in
    /// by the next pump.
    pub fn keep_after_timeout(&mut self) {
        self.active = None;
        self.responsive = self.exited.is_none();
    }

    /// The server requests answered so far, by method, in order.
    pub fn answered_requests(&self) -> &[String] {
        &self.answered
    }

    /// What the server said it can do in its initialize result.
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Makes sure `file` is open with its current text: `didOpen` the first
    /// time, a whole-text `didChange` when the text differs from what the
    /// server has, nothing otherwise. No waiting for diagnostics.
    pub fn sync_document(&mut self, file: &OpenFile) {
        let key = uri::comparable(&file.path);
        let hash = fnv1a(file.text.as_bytes());
        if self.sent_texts.get(&key) == Some(&hash) {
            return;
        }
        let document_uri = uri::from_path(&key);
        let version = self.documents.get(&key).map_or(1, |v| v + 1);
        if version == 1 {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": document_uri, "languageId": file.language_id, "version": version, "text": file.text}}),
            );
        } else {
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": document_uri, "version": version}, "contentChanges": [{"text": file.text}]}),
            );
        }
        self.documents.insert(key.clone(), version);
        self.sent_texts.insert(key.clone(), hash);
        self.publishes.remove(&key);
        // The server now has a text no settled check was about: the next
        // check of this document must send its text, not reuse a result.
        self.results.remove(&key);
        self.changes += 1;
        self.last_change_at = Some(Instant::now());
    }

    /// Brings every open document other than `given` up to date with the
    /// disk (a file deleted there is closed): a request about references or
    /// a rename reads across all open files, and an earlier hook check or
    /// command may have opened one whose text has changed since.
    fn refresh_from_disk(&mut self, given: &[OpenFile]) {
        let given: Vec<PathBuf> = given.iter().map(|f| uri::comparable(&f.path)).collect();
        let open: Vec<PathBuf> = self
            .documents
            .keys()
            .filter(|key| !given.contains(key))
            .cloned()
            .collect();
        for key in open {
            match fsread::read_text(&key, fsread::limits::SOURCE, fsread::Links::Follow) {
                Ok(Some(text)) => self.sync_document(&OpenFile {
                    path: key,
                    text,
                    // Only a first open sends it; these are open already.
                    language_id: String::new(),
                }),
                Ok(None) => {
                    self.close_document(&key);
                }
                Err(_) => {}
            }
        }
    }

    /// Opens `files`, sends one request and waits for its result (answering
    /// the server's own requests meanwhile). An error response is an answer
    /// too ([`CallAnswer::refused`]): the server is fine.
    pub fn call(
        &mut self,
        files: &[OpenFile],
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<CallAnswer, LspError> {
        self.last_used = Instant::now();
        self.refresh_from_disk(files);
        self.await_first_analysis(files, deadline)?;
        for file in files {
            self.sync_document(file);
        }
        let id = self.request(method, params);
        let response = self.wait_response(&id, deadline, &format!("the {method} result"))?;
        self.last_used = Instant::now();
        Ok(CallAnswer {
            result: response.result.unwrap_or(Value::Null),
            refused: response.error.map(|error| error.message),
            capabilities: self.capabilities.clone(),
            partial: self.indexing().then(|| {
                format!(
                    "{} was still indexing the project when it answered (it took longer than the wait allows): uses in files it had not indexed yet may be missing; ask again in a moment",
                    self.launch.name
                )
            }),
        })
    }

    /// Lets a server that has not analysed anything yet finish its first
    /// analysis of the request's file before it is asked about the project.
    /// A server answers at once after start-up, but from what it knows by
    /// then: pyright fills in its list of workspace files on a timer, and
    /// `references` asked before that finds only the open file. The wait
    /// is a check of the first file (its diagnostics settled), given at
    /// most three quarters of the time left and never more than
    /// [`FIRST_ANALYSIS_BUDGET`]; a server slower than that (or one that
    /// publishes nothing for a clean file) is asked anyway. Only a server
    /// that died is an error.
    fn await_first_analysis(
        &mut self,
        files: &[OpenFile],
        deadline: Instant,
    ) -> Result<(), LspError> {
        let now = Instant::now();
        let budget =
            now + (deadline.saturating_duration_since(now) * 3 / 4).min(FIRST_ANALYSIS_BUDGET);
        if !self.analysed {
            self.analysed = true;
            let Some(file) = files.first() else {
                return Ok(());
            };
            match self.diagnose(&file.path, &file.text, &file.language_id, budget) {
                Err(error @ LspError::Exited { .. }) => return Err(error),
                Ok(_) | Err(_) => {
                    // A slow first analysis does not make the server unusable.
                    self.responsive = self.exited.is_none();
                }
            }
        }
        self.await_index(budget);
        Ok(())
    }

    /// Whether the server's index of the project is being built.
    fn indexing(&self) -> bool {
        self.launch.index_progress.as_ref().is_some_and(|wanted| {
            self.progress
                .values()
                .any(|title| title_matches(title, wanted))
        })
    }

    /// Waits, until `budget`, for the server's index of the whole project
    /// ([`Launch::index_progress`]) to be built: clangd answers references
    /// in files that are not open from its background index, and one asked
    /// before that index took in a file finds no use there (a loaded
    /// machine: 1 of 4 places). The index starts after the first file is
    /// opened, sometimes after its diagnostics: a server that has not
    /// begun one is given [`INDEX_GRACE`] to begin.
    fn await_index(&mut self, budget: Instant) {
        if self.launch.index_progress.is_none() {
            return;
        }
        let grace = self.started_at + INDEX_GRACE;
        loop {
            let indexing = self.indexing();
            let now = Instant::now();
            if now >= budget
                || self.exited.is_some()
                || (!indexing && (self.index_begun || now >= grace))
            {
                return;
            }
            self.pump((now + Duration::from_millis(50)).min(budget));
        }
    }

    /// Handles what the server sent while nobody was waiting (answering its
    /// requests) without blocking, and notices if it died. A long-lived
    /// holder (the daemon) calls it between checks and just before one, so
    /// nothing stale is taken as the answer to the next change.
    pub fn pump_idle(&mut self) {
        self.pump(Instant::now());
    }

    /// Sends `didClose` for `path` when it is open; the next check of it
    /// opens it again (version 1).
    pub fn close_document(&mut self, path: &Path) -> bool {
        let key = uri::comparable(path);
        self.results.remove(&key);
        if self.documents.remove(&key).is_none() {
            return false;
        }
        self.publishes.remove(&key);
        self.published_clean.remove(&key);
        self.sent_texts.remove(&key);
        self.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": uri::from_path(&key)}}),
        );
        true
    }

    /// Whether `path` is open on this server.
    pub fn is_open(&self, path: &Path) -> bool {
        self.documents.contains_key(&uri::comparable(path))
    }

    /// Tells the server that files were created, changed or deleted on the
    /// disk by someone else (`workspace/didChangeWatchedFiles`): a server
    /// reads the files it was not given from the disk once and keeps what
    /// it read (pyright, ty), and an open of a new file does not change
    /// which modules exist. Every kept result may depend on them (a type
    /// checker's answer for one file depends on the files it imports), so
    /// none is reused after this: each is asked again (the files of a
    /// running batch too). Open documents are the caller's to bring
    /// up to date ([`Client::sync_document`], [`Client::close_document`]).
    pub fn files_changed_on_disk(
        &mut self,
        created: &[PathBuf],
        changed: &[PathBuf],
        deleted: &[PathBuf],
    ) {
        const CREATED: u8 = 1;
        const CHANGED: u8 = 2;
        const DELETED: u8 = 3;
        let changes: Vec<Value> = created
            .iter()
            .map(|path| (path, CREATED))
            .chain(changed.iter().map(|path| (path, CHANGED)))
            .chain(deleted.iter().map(|path| (path, DELETED)))
            .map(|(path, kind)| json!({"uri": uri::from_path(path), "type": kind}))
            .collect();
        if changes.is_empty() {
            return;
        }
        self.changes += 1;
        self.last_change_at = Some(Instant::now());
        self.outside_epoch = self.changes;
        self.notify(
            "workspace/didChangeWatchedFiles",
            json!({ "changes": changes }),
        );
        // A running project check's answers so far are about the old files.
        self.batch_outside_change();
    }

    /// Closes a clean document so that its new text goes out as a fresh
    /// open, which such a server always answers with a publish. It answers
    /// the close itself with an empty publish at once; that one is taken
    /// here, so it cannot pass for the result of the open that follows.
    fn close_for_reopen(&mut self, key: &Path, deadline: Instant) {
        const CLOSE_PUBLISH_WAIT: Duration = Duration::from_millis(500);
        self.close_document(key);
        let until = (Instant::now() + CLOSE_PUBLISH_WAIT).min(deadline);
        while !self.publishes.contains_key(key) && self.exited.is_none() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            self.pump(until);
        }
        self.publishes.remove(key);
    }

    /// Opens `path` with `text` (or sends the whole new text when it is
    /// already open) and waits for its diagnostics to settle.
    pub fn diagnose(
        &mut self,
        path: &Path,
        text: &str,
        language_id: &str,
        deadline: Instant,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        let answer = self.diagnose_text(path, text, language_id, deadline);
        // A server that could not read its configuration may answer with
        // nothing at all (pyrefly): that is no "clean" (attack AF-1).
        match self.transport.config_error() {
            Some(line) if answer.is_ok() => Err(LspError::Rejected {
                method: "its configuration".into(),
                message: crate::util::text::escape_controls(&line).into_owned(),
            }),
            _ => answer,
        }
    }

    fn diagnose_text(
        &mut self,
        path: &Path,
        text: &str,
        language_id: &str,
        deadline: Instant,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        self.last_used = Instant::now();
        let key = uri::comparable(path);
        let document_uri = uri::from_path(&key);
        // The same text again (a project check re-checking a file that has
        // not changed) is not sent again: the server already has it and
        // re-publishes on its own what other changes affect. Sending it would
        // not do: typescript-language-server publishes nothing for a change
        // that changes nothing in a clean file (the check would wait out its
        // deadline), and its version-less publishes for the other open files,
        // computed from older texts, would race with their next checks. So:
        // once other texts changed on this server, let it go quiet (once per
        // change), then answer with its latest publish for the document.
        let text_hash = fnv1a(text.as_bytes());
        self.pump(Instant::now());
        // A server that is pulled publishes nothing on its own when another
        // document changed: its kept answer holds only while no other text
        // was sent since (re-attack RD-7: after an edit of `m.py`, the
        // answer for `c.py`, which imports it, was the one from before).
        if let Some(last) = self.results.get(&key)
            && last.text_hash == text_hash
            && last.epoch >= self.outside_epoch
            && (!self.pull || last.epoch >= self.changes)
            && self.exited.is_none()
        {
            let last_at = last.at;
            if self.quiet_after != self.changes {
                self.wait_quiet(deadline);
                self.quiet_after = self.changes;
            }
            let newer = self
                .publishes
                .get(&key)
                .filter(|p| p.at > last_at)
                .map(|p| p.diagnostics.clone());
            let last = self.results.get_mut(&key).expect("looked up above");
            if let Some(diagnostics) = newer {
                last.diagnostics = diagnostics;
                last.at = Instant::now();
            }
            self.last_used = Instant::now();
            return Ok(last.diagnostics.clone());
        }
        self.changes += 1;
        self.last_change_at = Some(Instant::now());
        self.results.remove(&key);
        if self.launch.reopen_when_clean
            && self.documents.contains_key(&key)
            && self.published_clean.contains(&key)
        {
            self.close_for_reopen(&key, deadline);
        }
        let version = self.documents.get(&key).map_or(1, |v| v + 1);
        if version == 1 {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": document_uri, "languageId": language_id, "version": version, "text": text}}),
            );
        } else {
            // A whole-text change works with every server, incremental-sync
            // ones included (reference §6.9).
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": document_uri, "version": version}, "contentChanges": [{"text": text}]}),
            );
        }
        self.documents.insert(key.clone(), version);
        self.sent_texts.insert(key.clone(), text_hash);
        self.publishes.remove(&key);
        let sent_at = Instant::now();

        // rust-analyzer refreshes its cargo-check diagnostics only on save.
        if self.supports_save() {
            let mut params = json!({"textDocument": {"uri": document_uri}});
            if self.save_includes_text() {
                params["text"] = json!(text);
            }
            self.notify("textDocument/didSave", params);
        }
        let key_for_result = key.clone();
        self.active = Some(ActiveCheck {
            key,
            uri: document_uri,
            version,
            sent_at,
            pull_request: None,
            pull_again: self.pull,
            pulled: None,
            pulled_while_busy: false,
            awaited_progress_done: false,
            n_accepted: 0,
        });
        let result = self.wait_settled(deadline, sent_at);
        self.active = None;
        if let Ok(diagnostics) = &result {
            self.analysed = true;
            // Settling waited out the quiet window for this document; when
            // no other document was published meanwhile either, the whole
            // server is quiet after every change so far, and the next
            // unchanged re-check need not wait for it again.
            if self.is_quiet_now() {
                self.quiet_after = self.changes;
            }
            self.results.insert(
                key_for_result,
                SettledResult {
                    text_hash,
                    at: Instant::now(),
                    epoch: self.changes,
                    diagnostics: diagnostics.clone(),
                    result_id: None,
                },
            );
        }
        if result.is_err() {
            self.responsive = false;
        }
        self.last_used = Instant::now();
        result
    }

    fn wait_settled(
        &mut self,
        deadline: Instant,
        started: Instant,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        loop {
            self.send_pull_if_needed();
            if let Some(why) = &self.exited {
                return Err(LspError::Exited {
                    during: "the diagnostics wait".into(),
                    detail: format!("{why}{}", self.detail()),
                });
            }
            let now = Instant::now();
            let state = self.settle_state();
            let wake = match settle::decide(&state, self.launch.quiet, now) {
                Settle::Done => return Ok(self.settled_diagnostics()),
                Settle::WaitUntil(until) => until.min(deadline),
                Settle::WaitForMessage => deadline,
            };
            if now >= deadline {
                return Err(LspError::Timeout {
                    waiting_for: self.waiting_for(&state),
                    after: deadline.saturating_duration_since(started),
                    detail: self.detail(),
                });
            }
            self.pump(wake);
        }
    }

    /// Pumps until the server has been quiet (no publish, no open progress)
    /// for its quiet window, or until `deadline`.
    /// No progress open and nothing published for the quiet window.
    fn is_quiet_now(&self) -> bool {
        let now = Instant::now();
        self.progress.is_empty()
            && self
                .publishes
                .values()
                .map(|p| p.at)
                .chain(self.last_progress_end)
                .all(|at| at + self.launch.quiet <= now)
    }

    fn wait_quiet(&mut self, deadline: Instant) {
        let started = Instant::now();
        loop {
            let last_activity = self
                .publishes
                .values()
                .map(|p| p.at)
                .chain(self.last_progress_end)
                .chain([started])
                .max()
                .unwrap_or(started);
            let until = (last_activity + self.launch.quiet).min(deadline);
            let now = Instant::now();
            if now >= deadline || (now >= until && self.progress.is_empty()) {
                return;
            }
            self.pump(until.max(now + Duration::from_millis(10)).min(deadline));
            if self.exited.is_some() {
                return;
            }
        }
    }

    fn settle_state(&self) -> SettleState {
        let Some(check) = &self.active else {
            return SettleState::default();
        };
        let accepted = self
            .publishes
            .get(&check.key)
            .filter(|publish| accepts(publish, check));
        let last_push = accepted.map(|publish| publish.at);
        // A first, empty, version-less publish is how typescript-language-
        // server says "nothing yet" (reference §3): it earns a longer wait.
        let provisional = !self.pull
            && check.n_accepted == 1
            && accepted.is_some_and(|p| p.version.is_none() && p.diagnostics.is_empty());
        let awaited_pending = self.launch.await_progress.is_some()
            && (!check.awaited_progress_done || self.awaited_progress_open());
        SettleState {
            pull: self.pull,
            last_push,
            last_pull: check.pulled.as_ref().map(|(_, at)| *at),
            pull_in_flight: check.pull_request.is_some() || check.pull_again,
            open_progress: self.progress.len(),
            last_progress_end: self.last_progress_end.filter(|end| *end >= check.sent_at),
            awaited_progress_pending: awaited_pending,
            provisional,
        }
    }

    fn settled_diagnostics(&self) -> Vec<ServerDiagnostic> {
        let Some(check) = &self.active else {
            return Vec::new();
        };
        let mut diagnostics = Vec::new();
        if let Some((pulled, _)) = &check.pulled {
            diagnostics.extend(pulled.iter().cloned());
        }
        if let Some(publish) = self
            .publishes
            .get(&check.key)
            .filter(|publish| accepts(publish, check))
        {
            for diagnostic in &publish.diagnostics {
                if !diagnostics.contains(diagnostic) {
                    diagnostics.push(diagnostic.clone());
                }
            }
        }
        diagnostics
    }

    fn waiting_for(&self, state: &SettleState) -> String {
        let mut what = if state.pull {
            "the pulled diagnostics".to_string()
        } else if state.last_push.is_none() {
            "the first diagnostics".to_string()
        } else {
            "the diagnostics to settle".to_string()
        };
        if !self.progress.is_empty() {
            let mut titles: Vec<&str> = self.progress.values().map(String::as_str).collect();
            titles.sort_unstable();
            what.push_str(&format!(" (server still busy: {})", titles.join(", ")));
        } else if state.awaited_progress_pending
            && let Some(title) = &self.launch.await_progress
        {
            what.push_str(&format!(" (\"{title}\" has not finished)"));
        }
        what
    }

    /// Extra facts for error messages: junk on stdout, the end of stderr.
    fn detail(&self) -> String {
        let mut detail = String::new();
        if self.n_invalid > 0 {
            detail.push_str(&format!(
                "; it wrote {} invalid message(s) on stdout (last: {})",
                self.n_invalid,
                self.last_invalid.as_deref().unwrap_or("?")
            ));
        }
        let stderr = self.transport.stderr_tail();
        if let Some(last) = stderr.lines().rev().find(|l| !l.trim().is_empty()) {
            let last: String = last.chars().take(200).collect();
            detail.push_str(&format!("; stderr: {last}"));
        }
        detail
    }

    fn send_pull_if_needed(&mut self) {
        let busy = !self.progress.is_empty();
        let Some(check) = &mut self.active else {
            return;
        };
        if !self.pull || check.pull_request.is_some() {
            return;
        }
        // A pull answered while the server was still loading is provisional
        // (rust-analyzer answers `[]` then): pull again once it is idle.
        if check.pulled_while_busy && !busy {
            check.pulled_while_busy = false;
            check.pull_again = true;
        }
        if !check.pull_again {
            return;
        }
        check.pull_again = false;
        let mut params = json!({"textDocument": {"uri": check.uri}});
        // No null fields: tsgo rejects `"identifier": null` (reference §4).
        if let Some(identifier) = self
            .capabilities
            .pointer("/diagnosticProvider/identifier")
            .and_then(Value::as_str)
        {
            params["identifier"] = json!(identifier);
        }
        let id = self.request("textDocument/diagnostic", params);
        if let Some(check) = &mut self.active {
            check.pull_request = Some(id);
        }
    }

    fn awaited_progress_open(&self) -> bool {
        let Some(wanted) = &self.launch.await_progress else {
            return false;
        };
        self.progress
            .values()
            .any(|title| title_matches(title, wanted))
    }

    fn supports_save(&self) -> bool {
        match self.capabilities.get("textDocumentSync") {
            Some(Value::Object(sync)) => match sync.get("save") {
                Some(Value::Bool(save)) => *save,
                Some(Value::Object(_)) => true,
                _ => false,
            },
            _ => false,
        }
    }

    fn save_includes_text(&self) -> bool {
        self.capabilities
            .pointer("/textDocumentSync/save/includeText")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn initialize_params(&self) -> Value {
        let root_name = self
            .launch
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        let mut params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "ralph-hooks", "version": env!("CARGO_PKG_VERSION")},
            "rootPath": uri::comparable(&self.launch.root).to_string_lossy(),
            "rootUri": self.root_uri,
            "workspaceFolders": [{"uri": self.root_uri, "name": root_name}],
            // Not declared on purpose: `textDocument.diagnostic`. Declaring it
            // turns ruff, ty and (with dynamic registration) pyright into
            // pull-only servers (reference §3, §6.3); we pull only where a
            // server advertises it or is configured to.
            "capabilities": {
                "workspace": {
                    "configuration": true,
                    "workspaceFolders": true,
                    "workspaceEdit": {"documentChanges": true},
                    "didChangeConfiguration": {"dynamicRegistration": false}
                },
                "window": {"workDoneProgress": true},
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false, "didSave": true},
                    "publishDiagnostics": {
                        "relatedInformation": true,
                        "versionSupport": true,
                        "tagSupport": {"valueSet": [1, 2]},
                        "codeDescriptionSupport": true
                    },
                    // For `ralph-hooks refs/rename/fix` (issue 13).
                    "references": {"dynamicRegistration": false},
                    "definition": {"dynamicRegistration": false},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "rename": {"dynamicRegistration": false, "prepareSupport": true},
                    "codeAction": {
                        "dynamicRegistration": false,
                        "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                            "", "quickfix", "refactor", "source", "source.organizeImports", "source.fixAll"
                        ]}},
                        "isPreferredSupport": true,
                        "dataSupport": true,
                        "resolveSupport": {"properties": ["edit"]}
                    }
                },
                "general": {"positionEncodings": ["utf-16"]}
            },
            "trace": "off"
        });
        match self.launch.pull_capability {
            PullCapability::Undeclared => {}
            PullCapability::Declared | PullCapability::Dynamic => {
                params["capabilities"]["textDocument"]["diagnostic"] = json!({
                    "dynamicRegistration":
                        self.launch.pull_capability == PullCapability::Dynamic,
                    "relatedDocumentSupport": false
                });
                params["capabilities"]["workspace"]["diagnostics"] =
                    json!({"refreshSupport": true});
            }
        }
        if let Some(options) = &self.launch.initialization_options {
            params["initializationOptions"] = options.clone();
        }
        params
    }

    fn request(&mut self, method: &str, params: Value) -> RequestId {
        let id = RequestId::from(self.next_id);
        self.next_id += 1;
        self.transport.send(Message::Request(Request::new(
            id.clone(),
            method.to_string(),
            params,
        )));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.transport.send(Message::Notification(Notification::new(
            method.to_string(),
            params,
        )));
    }

    fn wait_response(
        &mut self,
        id: &RequestId,
        deadline: Instant,
        what: &str,
    ) -> Result<Response, LspError> {
        let started = Instant::now();
        loop {
            if let Some(response) = self.responses.remove(id) {
                return Ok(response);
            }
            if let Some(why) = &self.exited {
                return Err(LspError::Exited {
                    during: format!("the wait for {what}"),
                    detail: format!("{why}{}", self.detail()),
                });
            }
            if Instant::now() >= deadline {
                self.responsive = false;
                return Err(LspError::Timeout {
                    waiting_for: what.to_string(),
                    after: deadline.saturating_duration_since(started),
                    detail: self.detail(),
                });
            }
            self.pump(deadline);
        }
    }

    /// Handles everything that arrives until `until` or the first message,
    /// whichever comes first (then drains what is already queued).
    fn pump(&mut self, until: Instant) {
        // Drain in bounded batches so a flooding server cannot keep us from
        // looking at the deadline.
        const MAX_BATCH: usize = 256;
        // A dead server is noticed within this even if its stdout stays open.
        const EXIT_POLL: Duration = Duration::from_millis(100);
        self.check_exit();
        let first_until = until.min(Instant::now() + EXIT_POLL);
        for index in 0..MAX_BATCH {
            let wait_until = if index == 0 {
                first_until
            } else {
                Instant::now()
            };
            match self.transport.recv_until(wait_until) {
                None => return,
                Some(Incoming::Message(message)) => {
                    self.last_heard = Instant::now();
                    self.handle(message)
                }
                Some(Incoming::Invalid(why)) => {
                    self.n_invalid += 1;
                    self.last_invalid = Some(why);
                }
                Some(Incoming::Closed(why)) => {
                    if self.exited.is_none() {
                        self.exited = Some(format!(" ({why})"));
                    }
                    return;
                }
            }
        }
    }

    fn check_exit(&mut self) {
        if self.exited.is_none()
            && let Some(status) = self.transport.poll_exit()
        {
            self.exited = Some(format!(" ({status})"));
        }
    }

    fn handle(&mut self, message: Message) {
        match message {
            Message::Request(request) => self.answer(request),
            Message::Response(response) => self.take_response(response),
            Message::Notification(notification) => self.on_notification(notification),
        }
    }

    fn take_response(&mut self, response: Response) {
        if self.ignored_responses.remove(&response.id) {
            return;
        }
        if self.batch.is_some() {
            let result = match &response.error {
                Some(error) => Err((
                    error.code,
                    error.message.clone(),
                    error
                        .data
                        .as_ref()
                        .and_then(|d| d.get("retriggerRequest"))
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                )),
                None => Ok(response.result.clone().unwrap_or(Value::Null)),
            };
            if self.batch_pull_answered(&response.id, result) {
                return;
            }
        }
        let pull_id = self
            .active
            .as_ref()
            .and_then(|check| check.pull_request.clone());
        if pull_id.as_ref() != Some(&response.id) {
            self.responses.insert(response.id.clone(), response);
            return;
        }
        let busy = !self.progress.is_empty();
        let Some(check) = &mut self.active else {
            return;
        };
        check.pull_request = None;
        if let Some(error) = &response.error {
            let retrigger = error
                .data
                .as_ref()
                .and_then(|d| d.get("retriggerRequest"))
                .and_then(Value::as_bool)
                .unwrap_or(true);
            if (error.code == SERVER_CANCELLED || error.code == CONTENT_MODIFIED) && retrigger {
                check.pull_again = true;
            } else {
                // The server cannot pull after all: fall back to its pushes.
                self.pull = false;
            }
            return;
        }
        let result = response.result.unwrap_or(Value::Null);
        let items = match result.get("kind").and_then(Value::as_str) {
            // We never send a previousResultId, so "unchanged" means the
            // previous full result stands.
            Some("unchanged") => check
                .pulled
                .as_ref()
                .map(|(items, _)| items.clone())
                .unwrap_or_default(),
            _ => parse_diagnostics(result.get("items")),
        };
        check.pulled = Some((items, Instant::now()));
        check.pulled_while_busy = busy;
    }

    fn on_notification(&mut self, notification: Notification) {
        match notification.method.as_str() {
            "textDocument/publishDiagnostics" => {
                let params = notification.params;
                let Some(path) = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .and_then(uri::to_path)
                else {
                    return;
                };
                let key = uri::comparable(&path);
                let version = params
                    .get("version")
                    .and_then(Value::as_i64)
                    .and_then(|v| i32::try_from(v).ok());
                // A publish for an older version than the one we sent is
                // stale; it must not replace a newer one.
                if let (Some(published), Some(current)) = (version, self.documents.get(&key))
                    && published < *current
                {
                    return;
                }
                let publish = Publish {
                    version,
                    diagnostics: parse_diagnostics(params.get("diagnostics")),
                    at: Instant::now(),
                };
                if let Some(check) = &mut self.active
                    && check.key == key
                    && accepts(&publish, check)
                {
                    check.n_accepted += 1;
                }
                if publish.diagnostics.is_empty() {
                    self.published_clean.insert(key.clone());
                } else {
                    self.published_clean.remove(&key);
                }
                self.publishes.insert(key, publish);
            }
            "$/progress" => {
                let params = notification.params;
                let token = match params.get("token") {
                    Some(Value::String(token)) => token.clone(),
                    Some(other) => other.to_string(),
                    None => return,
                };
                let value = params.get("value").cloned().unwrap_or(Value::Null);
                match value.get("kind").and_then(Value::as_str) {
                    Some("begin") => {
                        let title = value
                            .get("title")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        if let Some(wanted) = &self.launch.index_progress
                            && title_matches(&title, wanted)
                        {
                            self.index_begun = true;
                        }
                        self.progress.insert(token, title);
                    }
                    Some("end") => {
                        let title = self.progress.remove(&token);
                        let now = Instant::now();
                        self.last_progress_end = Some(now);
                        let awaited = matches!(
                            (&title, &self.launch.await_progress),
                            (Some(title), Some(wanted)) if title_matches(title, wanted)
                        );
                        if awaited {
                            if let Some(check) = &mut self.active {
                                check.awaited_progress_done = true;
                            }
                            self.batch_progress_ended();
                        }
                    }
                    _ => {}
                }
            }
            // Logs, telemetry and status notifications carry nothing we need.
            _ => {}
        }
    }

    /// A dynamic registration of pull diagnostics (pyright registers it
    /// when the client declares `textDocument.diagnostic.dynamicRegistration`
    /// and then stops pushing): from now on this server is pulled.
    fn take_registrations(&mut self, params: &Value) {
        let registrations = params
            .get("registrations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for registration in registrations {
            if registration.get("method").and_then(Value::as_str) != Some("textDocument/diagnostic")
            {
                continue;
            }
            if self.launch.mode != DiagnosticMode::Push {
                self.pull = true;
            }
            self.registered_pull_identifier = registration
                .pointer("/registerOptions/identifier")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }

    /// The `identifier` to send with pulls: the server's own, if it named one.
    fn pull_identifier(&self) -> Option<String> {
        self.capabilities
            .pointer("/diagnosticProvider/identifier")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| self.registered_pull_identifier.clone())
    }

    /// Drops the answer to `id` when it comes: nobody waits for it.
    fn forget_response(&mut self, id: RequestId) {
        if self.responses.remove(&id).is_none() {
            self.ignored_responses.insert(id);
        }
    }

    /// Gives the server `text` as the document's content: `didOpen` the
    /// first time, else a whole-text `didChange` (or, for a server that says
    /// nothing about a clean document that stays clean, a close and a fresh
    /// open), then `didSave` where the server wants it. Counts as a change
    /// of the server's view unless it is the first open of the text the
    /// server would have read from the disk anyway.
    fn send_text(&mut self, key: &Path, text: &str, language_id: &str) {
        let document_uri = uri::from_path(key);
        let hash = fnv1a(text.as_bytes());
        if self.launch.reopen_when_clean
            && self.documents.contains_key(key)
            && self.published_clean.contains(key)
        {
            self.close_document(key);
        }
        let version = self.documents.get(key).map_or(1, |v| v + 1);
        if version == 1 {
            self.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": document_uri, "languageId": language_id, "version": version, "text": text}}),
            );
        } else {
            self.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": document_uri, "version": version}, "contentChanges": [{"text": text}]}),
            );
        }
        let known = self
            .known_texts
            .insert(key.to_path_buf(), hash)
            .or_else(|| self.seen_on_disk.get(key).copied());
        if known.is_some_and(|known| known != hash) {
            self.changes += 1;
        }
        self.last_change_at = Some(Instant::now());
        self.documents.insert(key.to_path_buf(), version);
        self.sent_texts.insert(key.to_path_buf(), hash);
        self.publishes.remove(key);
        if self.supports_save() {
            let mut params = json!({"textDocument": {"uri": document_uri}});
            if self.save_includes_text() {
                params["text"] = json!(text);
            }
            self.notify("textDocument/didSave", params);
        }
    }

    /// Answers a request from the server. Every request gets an answer:
    /// servers block on some of them.
    fn answer(&mut self, request: Request) {
        let Request { id, method, params } = request;
        let result: Result<Value, (i32, String)> = match method.as_str() {
            "workspace/configuration" => Ok(self.configuration_answer(&params)),
            "window/workDoneProgress/create"
            | "client/unregisterCapability"
            | "window/showMessageRequest"
            | "workspace/semanticTokens/refresh"
            | "workspace/inlayHint/refresh"
            | "workspace/inlineValue/refresh"
            | "workspace/codeLens/refresh"
            | "workspace/foldingRange/refresh" => Ok(Value::Null),
            "workspace/diagnostic/refresh" => {
                if self.pull
                    && let Some(check) = &mut self.active
                {
                    check.pull_again = true;
                }
                if self.pull {
                    self.batch_refresh();
                }
                Ok(Value::Null)
            }
            "client/registerCapability" => {
                self.take_registrations(&params);
                Ok(Value::Null)
            }
            "workspace/workspaceFolders" => {
                let name = self
                    .launch
                    .root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Ok(json!([{"uri": self.root_uri, "name": name}]))
            }
            "workspace/applyEdit" => Ok(json!({"applied": false})),
            "window/showDocument" => Ok(json!({"success": false})),
            other => Err((
                ErrorCode::MethodNotFound as i32,
                format!("ralph-hooks does not handle {other}"),
            )),
        };
        let response = match result {
            Ok(value) => Response::new_ok(id, value),
            Err((code, message)) => Response::new_err(id, code, message),
        };
        // Bounded: a long-lived client answers requests for hours.
        if self.answered.len() >= 1024 {
            self.answered.drain(..512);
        }
        self.answered.push(method);
        self.transport.send(Message::Response(response));
    }

    /// One value per requested item: the configured settings at the item's
    /// dotted section, or null (which every server measured accepts).
    fn configuration_answer(&self, params: &Value) -> Value {
        let items = params
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let answers: Vec<Value> = items
            .iter()
            .map(|item| {
                let Some(settings) = &self.launch.settings else {
                    return Value::Null;
                };
                match item.get("section").and_then(Value::as_str) {
                    None | Some("") => settings.clone(),
                    Some(section) => section
                        .split('.')
                        .try_fold(settings, |value, key| value.get(key))
                        .cloned()
                        .unwrap_or(Value::Null),
                }
            })
            .collect();
        Value::Array(answers)
    }

    /// Ends the server: `shutdown`, `exit`, stdin closed, a short wait, then
    /// the whole process group killed. A server that already failed to
    /// answer is killed at once.
    pub fn shutdown(mut self, grace: Duration) {
        if self.is_healthy() && !grace.is_zero() {
            let deadline = Instant::now() + grace;
            // No params at all: tsgo rejects `"params": null` (reference §3).
            let id = RequestId::from(self.next_id);
            self.next_id += 1;
            self.transport.send(Message::Request(Request {
                id: id.clone(),
                method: "shutdown".into(),
                params: Value::Null,
            }));
            if self
                .wait_response(&id, deadline, "the shutdown response")
                .is_ok()
            {
                self.notify("exit", Value::Null);
            }
            self.transport.close_stdin();
            self.transport
                .wait_exit(deadline.saturating_duration_since(Instant::now()));
        }
        self.transport.kill();
    }
}

/// A publish counts for our change when it carries our version, or no
/// version and arrived after we sent the change (typescript-language-server
/// never sends one).
fn accepts(publish: &Publish, check: &ActiveCheck) -> bool {
    match publish.version {
        Some(version) => version == check.version,
        None => publish.at >= check.sent_at,
    }
}

fn title_matches(title: &str, wanted: &str) -> bool {
    title.to_lowercase().contains(&wanted.to_lowercase())
}

/// Parses each diagnostic on its own, so one odd item cannot hide the rest.
fn parse_diagnostics(items: Option<&Value>) -> Vec<ServerDiagnostic> {
    items
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| serde_json::from_value(item.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_diagnostic_parsing_keeps_good_items() {
        let items = json!([
            {"range": {"start": {"line": 3, "character": 14}, "end": {"line": 3, "character": 23}},
             "severity": 1, "code": 2322, "source": "typescript", "message": "m",
             "codeDescription": {"href": "not a uri at all"}},
            {"message": "no range"},
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
             "code": "E1", "message": "n", "brand_new": true}
        ]);
        let parsed = parse_diagnostics(Some(&items));
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].code_text().as_deref(), Some("2322"));
        assert_eq!(parsed[1].code_text().as_deref(), Some("E1"));
        assert_eq!(parsed[1].severity, None);
    }

    #[test]
    fn publishes_are_accepted_by_version_or_time() {
        let sent_at = Instant::now();
        let check = ActiveCheck {
            key: PathBuf::from("/a"),
            uri: "file:///a".into(),
            version: 2,
            sent_at,
            pull_request: None,
            pull_again: false,
            pulled: None,
            pulled_while_busy: false,
            awaited_progress_done: false,
            n_accepted: 0,
        };
        let publish = |version, at| Publish {
            version,
            diagnostics: vec![],
            at,
        };
        assert!(accepts(&publish(Some(2), sent_at), &check));
        assert!(!accepts(
            &publish(Some(1), sent_at + Duration::from_secs(1)),
            &check
        ));
        assert!(accepts(
            &publish(None, sent_at + Duration::from_millis(1)),
            &check
        ));
        assert!(!accepts(
            &publish(None, sent_at - Duration::from_millis(1)),
            &check
        ));
    }
}
