//! The daemon's protocol: JSON lines over its Unix socket, one request and
//! one reply per line, several requests per connection.
//!
//! A connection opens with `hello` (protocol number and build id both ways);
//! a hook that finds another build asks that daemon to `stop` and starts its
//! own. `hello`, `status` and `stop` keep their shape across builds, so any
//! build can replace or stop any other. Every reply is an object with `ok`;
//! `ok: false` carries `error`.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::report::Report;
use crate::engine::run::Options;
use crate::lsp::{
    CallAnswer, CreatedOrDeleted, DiagnosticMode, Launch, LspError, OpenFile, PullCapability,
    ServerDiagnostic,
};
use crate::util::text::fnv1a;

/// Bumped when a request or reply changes shape.
pub const PROTOCOL: u32 = 4;

/// The longest line either side accepts (a 4 MiB file, JSON-escaped, fits).
pub const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Hello {
        protocol: u32,
        build: String,
    },
    /// One file's diagnostics from the server `launch` describes.
    Diagnose {
        launch: Box<LaunchSpec>,
        /// Identifies the server's whole configuration and binary: a
        /// different fingerprint for the same (server, root) restarts it.
        fingerprint: String,
        path: PathBuf,
        text: String,
        language_id: String,
        /// Milliseconds left until the hook's deadline, start-up included.
        deadline_ms: u64,
        /// The check's own time, counted from when the server is warm
        /// (start-up and the first project load not included); the
        /// deadline above still caps it. Absent: the deadline alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_ms: Option<u64>,
        /// How long the server may take to start and load the project
        /// before it counts as hung (its `startupTimeout`). It keeps
        /// starting in the daemon after the hook stopped waiting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        startup_ms: Option<u64>,
    },
    /// One LSP request (references, rename, code actions …) to the server
    /// `launch` describes, with `open` opened or updated first.
    Call {
        launch: Box<LaunchSpec>,
        fingerprint: String,
        open: Vec<OpenFile>,
        method: String,
        params: Value,
        deadline_ms: u64,
    },
    /// A project check ([`crate::engine::run`]) with this daemon's warm
    /// servers: the whole project, or `options.paths` (absolute).
    Check {
        project: PathBuf,
        options: Options,
        #[serde(default)]
        debug: bool,
        /// Send `{"progress": {"done": n, "total": m}}` lines while the
        /// check runs, before its reply.
        #[serde(default)]
        progress: bool,
    },
    /// Start these servers now, without waiting for them.
    Prestart {
        servers: Vec<PrestartItem>,
    },
    Status,
    Stop {
        reason: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrestartItem {
    pub launch: LaunchSpec,
    pub fingerprint: String,
    /// The server's start-up time (`startupTimeout`); absent: the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HelloReply {
    pub protocol: u32,
    pub build: String,
    pub pid: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiagnoseReply {
    pub outcome: Outcome,
    /// The server was already running with this configuration.
    pub warm: bool,
    pub server_pid: Option<u32>,
    /// Time spent in the daemon.
    pub elapsed_ms: u64,
    /// Of that, time spent waiting for the server to warm up (start-up
    /// and its first check): not part of the check's own budget.
    #[serde(default)]
    pub warmup_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckReply {
    Report {
        report: Box<Report>,
        elapsed_ms: u64,
    },
    /// A path to check does not exist.
    NoSuchPath { path: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallReply {
    pub outcome: CallOutcome,
    pub warm: bool,
    pub server_pid: Option<u32>,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallOutcome {
    Answer { answer: CallAnswer },
    Failed { error: WireError },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    Diagnostics { items: Vec<ServerDiagnostic> },
    Failed { error: WireError },
}

/// [`LspError`] on the wire, so the hook reports exactly what an in-process
/// check would have.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireError {
    Spawn {
        program: PathBuf,
        message: String,
        os_error: Option<i32>,
        #[serde(default)]
        not_found: bool,
    },
    Timeout {
        waiting_for: String,
        after_ms: u64,
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
    WarmingUp {
        server: String,
        waited_ms: u64,
        #[serde(default)]
        loading: bool,
    },
    StartFailed {
        server: String,
        reason: String,
    },
}

impl From<&LspError> for WireError {
    fn from(error: &LspError) -> WireError {
        match error {
            LspError::Spawn { program, error } => WireError::Spawn {
                program: program.clone(),
                message: error.to_string(),
                os_error: error.raw_os_error(),
                not_found: error.kind() == io::ErrorKind::NotFound,
            },
            LspError::Timeout {
                waiting_for,
                after,
                detail,
            } => WireError::Timeout {
                waiting_for: waiting_for.clone(),
                after_ms: after.as_millis() as u64,
                detail: detail.clone(),
            },
            LspError::Exited { during, detail } => WireError::Exited {
                during: during.clone(),
                detail: detail.clone(),
            },
            LspError::Rejected { method, message } => WireError::Rejected {
                method: method.clone(),
                message: message.clone(),
            },
            LspError::WarmingUp {
                server,
                waited,
                loading,
            } => WireError::WarmingUp {
                server: server.clone(),
                waited_ms: waited.as_millis() as u64,
                loading: *loading,
            },
            LspError::StartFailed { server, reason } => WireError::StartFailed {
                server: server.clone(),
                reason: reason.clone(),
            },
        }
    }
}

impl From<WireError> for LspError {
    fn from(error: WireError) -> LspError {
        match error {
            WireError::Spawn {
                program,
                message,
                os_error,
                not_found,
            } => LspError::Spawn {
                program,
                error: match os_error {
                    Some(code) => io::Error::from_raw_os_error(code),
                    None if not_found => io::Error::new(io::ErrorKind::NotFound, message),
                    None => io::Error::other(message),
                },
            },
            WireError::Timeout {
                waiting_for,
                after_ms,
                detail,
            } => LspError::Timeout {
                waiting_for,
                after: Duration::from_millis(after_ms),
                detail,
            },
            WireError::Exited { during, detail } => LspError::Exited { during, detail },
            WireError::Rejected { method, message } => LspError::Rejected { method, message },
            WireError::WarmingUp {
                server,
                waited_ms,
                loading,
            } => LspError::WarmingUp {
                server,
                waited: Duration::from_millis(waited_ms),
                loading,
            },
            WireError::StartFailed { server, reason } => LspError::StartFailed { server, reason },
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusReply {
    pub pid: u32,
    pub build: String,
    pub project: PathBuf,
    pub socket: PathBuf,
    pub uptime_ms: u64,
    /// Since the last request of any kind.
    pub idle_ms: u64,
    pub requests: u64,
    /// The daemon process alone.
    pub rss_kib: u64,
    /// The daemon and every process below it (servers and their helpers).
    pub tree_rss_kib: u64,
    pub memory_limit_mb: u64,
    /// Servers shut down because the tree was over the ceiling.
    pub evictions: u64,
    pub servers: Vec<ServerStatus>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerStatus {
    pub name: String,
    pub root: PathBuf,
    /// `None` while no process runs (after a crash, before a restart).
    pub pid: Option<u32>,
    pub rss_kib: u64,
    pub idle_ms: u64,
    pub requests: u64,
    pub warm_requests: u64,
    pub restarts: u64,
    pub open_files: usize,
    pub busy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Starting, or loading the project for its first check.
    #[serde(default)]
    pub warming: bool,
    /// A project check in progress: files answered of those asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_check: Option<(usize, usize)>,
    /// How the server is started (`tsc --lsp --stdio`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// It has checked the whole project in the background: a project check
    /// after changes asks it instead of the checker's command line.
    #[serde(default)]
    pub knows_project: bool,
    /// Why it runs for its files (the registry's choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// [`Launch`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub root: PathBuf,
    pub initialization_options: Option<Value>,
    pub settings: Option<Value>,
    pub quiet_ms: u64,
    pub await_progress: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_progress: Option<String>,
    #[serde(default)]
    pub reopen_when_clean: bool,
    /// `push`, `pull` or `auto`.
    pub mode: String,
    #[serde(default)]
    pub pull_capability: PullCapability,
    #[serde(default)]
    pub extensions: Vec<String>,
    #[serde(default)]
    pub created_or_deleted: CreatedOrDeleted,
    /// Why the server was chosen (see [`Launch::reason`]); not part of
    /// the fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&Launch> for LaunchSpec {
    fn from(launch: &Launch) -> LaunchSpec {
        LaunchSpec {
            name: launch.name.clone(),
            program: launch.program.clone(),
            args: launch.args.clone(),
            env: launch.env.clone(),
            root: launch.root.clone(),
            initialization_options: launch.initialization_options.clone(),
            settings: launch.settings.clone(),
            quiet_ms: launch.quiet.as_millis() as u64,
            await_progress: launch.await_progress.clone(),
            index_progress: launch.index_progress.clone(),
            reopen_when_clean: launch.reopen_when_clean,
            mode: match launch.mode {
                DiagnosticMode::Push => "push",
                DiagnosticMode::Pull => "pull",
                DiagnosticMode::Auto => "auto",
            }
            .to_string(),
            pull_capability: launch.pull_capability,
            extensions: launch.extensions.clone(),
            created_or_deleted: launch.created_or_deleted,
            reason: launch.reason.clone(),
        }
    }
}

impl From<&LaunchSpec> for Launch {
    fn from(spec: &LaunchSpec) -> Launch {
        Launch {
            name: spec.name.clone(),
            program: spec.program.clone(),
            args: spec.args.clone(),
            env: spec.env.clone(),
            root: spec.root.clone(),
            initialization_options: spec.initialization_options.clone(),
            settings: spec.settings.clone(),
            quiet: Duration::from_millis(spec.quiet_ms),
            await_progress: spec.await_progress.clone(),
            index_progress: spec.index_progress.clone(),
            reopen_when_clean: spec.reopen_when_clean,
            mode: match spec.mode.as_str() {
                "pull" => DiagnosticMode::Pull,
                "auto" => DiagnosticMode::Auto,
                _ => DiagnosticMode::Push,
            },
            pull_capability: spec.pull_capability,
            extensions: spec.extensions.clone(),
            created_or_deleted: spec.created_or_deleted,
            reason: spec.reason.clone(),
        }
    }
}

/// The configuration fingerprint of a launch: every field, plus the size and
/// modification time of the server binary, so an upgraded server restarts.
pub fn fingerprint(launch: &Launch) -> String {
    let mut spec = LaunchSpec::from(launch);
    spec.reason = None;
    spec.env = crate::lsp::environment::identity(&spec.env);
    let mut identity = serde_json::to_string(&spec).unwrap_or_default();
    identity.push('\n');
    identity.push_str(&file_identity(&launch.program));
    format!("{:016x}", fnv1a(identity.as_bytes()))
}

/// Size and modification time of a file (symlinks followed), or "missing".
pub fn file_identity(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(metadata) => {
            let modified = metadata
                .modified()
                .ok()
                .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_nanos());
            format!("{}:{}:{modified}", metadata.ino(), metadata.len())
        }
        Err(_) => "missing".into(),
    }
}

/// The build id of the `ralph-hooks` binary at `exe`: package version,
/// protocol, and the file's identity. A daemon started from an older binary
/// at the same path reports an older id than a hook computes now.
pub fn build_id(exe: &Path) -> String {
    format!(
        "{}+p{PROTOCOL}+{:08x}",
        env!("CARGO_PKG_VERSION"),
        fnv1a(file_identity(exe).as_bytes()) as u32
    )
}

/// One connection, from either end: line-based JSON with deadlines.
pub struct Conn {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// Why a connection failed; a timeout means someone is there but sick.
#[derive(Debug)]
pub enum ConnError {
    Timeout(String),
    Closed(String),
    Other(String),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Timeout(why) | ConnError::Closed(why) | ConnError::Other(why) => {
                f.write_str(why)
            }
        }
    }
}

impl Conn {
    pub fn new(stream: UnixStream) -> io::Result<Conn> {
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Connects within `timeout`. A Unix connect normally returns at once,
    /// but blocks on a full backlog; it runs on a helper thread so a stuck
    /// one is abandoned (it ends with the process).
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Conn, ConnError> {
        // The common "no daemon yet" needs no thread.
        if std::fs::symlink_metadata(socket).is_err() {
            return Err(ConnError::Closed("no daemon listening (no socket)".into()));
        }
        let (sender, receiver) = mpsc::sync_channel(1);
        let path = socket.to_path_buf();
        std::thread::Builder::new()
            .name("daemon-connect".into())
            .spawn(move || {
                let _ = sender.send(UnixStream::connect(&path));
            })
            .map_err(|error| ConnError::Other(format!("cannot start a thread: {error}")))?;
        match receiver.recv_timeout(timeout) {
            Ok(Ok(stream)) => {
                Conn::new(stream).map_err(|error| ConnError::Other(error.to_string()))
            }
            Ok(Err(error)) => Err(match error.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                    ConnError::Closed(format!("no daemon listening ({error})"))
                }
                _ => ConnError::Other(format!("cannot connect to {}: {error}", socket.display())),
            }),
            Err(_) => Err(ConnError::Timeout(format!(
                "connecting took longer than {} ms",
                timeout.as_millis()
            ))),
        }
    }

    /// Writes one value as a line, within `deadline`.
    pub fn send<T: Serialize>(&mut self, value: &T, deadline: Instant) -> Result<(), ConnError> {
        let line = serde_json::to_vec(value)
            .map_err(|error| ConnError::Other(format!("cannot encode a request: {error}")))?;
        self.send_line(line, deadline)
    }

    /// Writes one encoded JSON value as a line, within `deadline`.
    pub fn send_line(&mut self, mut line: Vec<u8>, deadline: Instant) -> Result<(), ConnError> {
        line.push(b'\n');
        let timeout = remaining(deadline)?;
        self.writer
            .set_write_timeout(Some(timeout))
            .map_err(|error| ConnError::Other(error.to_string()))?;
        self.writer
            .write_all(&line)
            .map_err(|error| match error.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                    ConnError::Timeout("the other side stopped reading".into())
                }
                _ => ConnError::Closed(format!("the connection broke while writing: {error}")),
            })
    }

    /// Reads one line as JSON, within `deadline`; `Ok(None)` at a clean end.
    pub fn receive_value(&mut self, deadline: Instant) -> Result<Option<Value>, ConnError> {
        let Some(line) = self.receive_line(deadline)? else {
            return Ok(None);
        };
        serde_json::from_slice(&line)
            .map(Some)
            .map_err(|error| ConnError::Other(format!("not a JSON line: {error}")))
    }

    /// Reads one line, within `deadline`; `Ok(None)` at a clean end.
    fn receive_line(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>, ConnError> {
        let mut line = Vec::new();
        loop {
            let timeout = remaining(deadline)?;
            self.reader
                .get_ref()
                .set_read_timeout(Some(timeout))
                .map_err(|error| ConnError::Other(error.to_string()))?;
            let budget = MAX_LINE_BYTES.saturating_sub(line.len() as u64);
            match self
                .reader
                .by_ref()
                .take(budget)
                .read_until(b'\n', &mut line)
            {
                Ok(0) => {
                    if line.is_empty() {
                        return Ok(None);
                    }
                    return Err(ConnError::Closed(
                        "the connection closed in the middle of a message".into(),
                    ));
                }
                Ok(_) if line.ends_with(b"\n") => break,
                Ok(_) if line.len() as u64 >= MAX_LINE_BYTES => {
                    return Err(ConnError::Other("a message over the size limit".into()));
                }
                Ok(_) => continue,
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    return Err(ConnError::Closed(format!(
                        "the connection broke while reading: {error}"
                    )));
                }
            }
        }
        Ok(Some(line))
    }

    /// Reads a reply: `ok: false` becomes an error carrying its `error`.
    pub fn receive_reply<T: DeserializeOwned>(
        &mut self,
        deadline: Instant,
    ) -> Result<T, ConnError> {
        let line = self
            .receive_line(deadline)?
            .ok_or_else(|| ConnError::Closed("the daemon closed the connection".into()))?;
        reply_from_line(&line)
    }

    /// Sends a request and reads its reply, handing the progress lines that
    /// come before it to `progress`.
    pub fn call_with_progress<T: DeserializeOwned>(
        &mut self,
        request: &Request,
        deadline: Instant,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<T, ConnError> {
        self.send(request, deadline)?;
        loop {
            let line = self
                .receive_line(deadline)?
                .ok_or_else(|| ConnError::Closed("the daemon closed the connection".into()))?;
            let head: ReplyHead = serde_json::from_slice(&line)
                .map_err(|error| ConnError::Other(format!("not a JSON line: {error}")))?;
            if let Some(step) = head.progress {
                progress(step.done, step.total);
                continue;
            }
            return reply_from_head(head, &line);
        }
    }

    /// Sends a request and reads its reply.
    pub fn call<T: DeserializeOwned>(
        &mut self,
        request: &Request,
        deadline: Instant,
    ) -> Result<T, ConnError> {
        self.send(request, deadline)?;
        self.receive_reply(deadline)
    }

    /// `hello` both ways.
    pub fn hello(&mut self, build: &str, deadline: Instant) -> Result<HelloReply, ConnError> {
        self.call(
            &Request::Hello {
                protocol: PROTOCOL,
                build: build.to_string(),
            },
            deadline,
        )
    }
}

/// What a line is, read without building the rest of it: a progress
/// step, or a reply that is `ok` or says why not.
#[derive(Deserialize)]
struct ReplyHead {
    #[serde(default)]
    ok: Option<bool>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    progress: Option<ProgressStep>,
}

#[derive(Deserialize)]
struct ProgressStep {
    #[serde(default)]
    done: usize,
    #[serde(default)]
    total: usize,
}

fn reply_from_line<T: DeserializeOwned>(line: &[u8]) -> Result<T, ConnError> {
    let head: ReplyHead = serde_json::from_slice(line)
        .map_err(|error| ConnError::Other(format!("not a JSON line: {error}")))?;
    reply_from_head(head, line)
}

/// The reply's content, decoded straight from the line (a project check's
/// report holds tens of thousands of diagnostics: no JSON tree first), or
/// the daemon's refusal.
fn reply_from_head<T: DeserializeOwned>(head: ReplyHead, line: &[u8]) -> Result<T, ConnError> {
    if head.ok != Some(true) {
        let why = head.error.as_deref().unwrap_or("no reason given");
        return Err(ConnError::Other(format!("the daemon refused: {why}")));
    }
    serde_json::from_slice(line)
        .map_err(|error| ConnError::Other(format!("an unexpected reply: {error}")))
}

/// `value` encoded with `"ok": true` among its fields, without building a
/// JSON tree (see [`ok_reply`]).
pub fn ok_reply_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(mut bytes) if bytes.starts_with(b"{") => {
            let fields = if bytes.len() > 2 {
                "\"ok\":true,"
            } else {
                "\"ok\":true"
            };
            bytes.splice(1..1, fields.bytes());
            bytes
        }
        _ => serde_json::to_vec(&ok_reply(value)).unwrap_or_else(|_| b"{\"ok\":true}".to_vec()),
    }
}

/// A reply object: `{"ok": true, ..fields of value}`.
pub fn ok_reply<T: Serialize>(value: &T) -> Value {
    let mut reply = serde_json::to_value(value).unwrap_or(Value::Null);
    match reply.as_object_mut() {
        Some(object) => {
            object.insert("ok".into(), Value::Bool(true));
            reply
        }
        None => serde_json::json!({"ok": true}),
    }
}

pub fn error_reply(message: &str) -> Value {
    serde_json::json!({"ok": false, "error": message})
}

fn remaining(deadline: Instant) -> Result<Duration, ConnError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ConnError::Timeout("no answer before the deadline".into()));
    }
    Ok(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_round_trips_and_fingerprints_follow_the_config() {
        let launch = Launch {
            name: "fake".into(),
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into()],
            env: vec![("A".into(), "1".into())],
            root: PathBuf::from("/p"),
            initialization_options: None,
            settings: Some(serde_json::json!({"x": 1})),
            quiet: Duration::from_millis(50),
            await_progress: None,
            index_progress: Some("indexing".into()),
            reopen_when_clean: true,
            mode: DiagnosticMode::Auto,
            pull_capability: PullCapability::Declared,
            extensions: vec![".fake".into()],
            created_or_deleted: CreatedOrDeleted::RestartForQueries,
            reason: Some("because".into()),
        };
        let spec = LaunchSpec::from(&launch);
        let back = Launch::from(&spec);
        assert_eq!(LaunchSpec::from(&back), spec);
        let mut changed = launch.clone();
        changed.settings = Some(serde_json::json!({"x": 2}));
        assert_ne!(fingerprint(&launch), fingerprint(&changed));
        assert_eq!(fingerprint(&launch), fingerprint(&back));
    }

    #[test]
    fn errors_keep_their_kind_across_the_wire() {
        let error = LspError::Spawn {
            program: PathBuf::from("/nope"),
            error: io::Error::from(io::ErrorKind::NotFound),
        };
        let wire = WireError::from(&error);
        let json = serde_json::to_string(&wire).unwrap();
        let back: LspError = serde_json::from_str::<WireError>(&json).unwrap().into();
        match back {
            LspError::Spawn { error, .. } => assert_eq!(error.kind(), io::ErrorKind::NotFound),
            other => panic!("{other:?}"),
        }
        let timeout = LspError::Timeout {
            waiting_for: "the first diagnostics".into(),
            after: Duration::from_millis(1500),
            detail: String::new(),
        };
        let back: LspError = WireError::from(&timeout).into();
        assert_eq!(back.to_string(), timeout.to_string());
    }

    #[test]
    fn requests_are_tagged_by_op() {
        let json = serde_json::to_value(Request::Stop {
            reason: "test".into(),
        })
        .unwrap();
        assert_eq!(json, serde_json::json!({"op": "stop", "reason": "test"}));
        let reply = ok_reply(&HelloReply {
            protocol: 1,
            build: "b".into(),
            pid: 3,
        });
        assert_eq!(reply["ok"], true);
        assert_eq!(reply["pid"], 3);
    }
}
