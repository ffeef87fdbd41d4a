//! Running clients, one per (server, workspace root), reused across files.
//!
//! A hook call checks one file, or a loop's touched files at a Stop, and
//! closes the pool when done; a long-lived process (the daemon)
//! can keep a pool and call [`Pool::diagnose`] again and again, which sends
//! `didChange` to a warm server instead of starting a new one. A client that
//! failed (crashed, timed out) is dropped — killed with its process group —
//! so the next call starts the server afresh.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::{CallAnswer, Client, Launch, LspError, OpenFile, ServerDiagnostic};

/// How long one check may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// When the caller stops waiting, start-up included.
    pub deadline: Instant,
    /// The check's own time, counted from when the server is warm (so a
    /// server's start-up is not taken out of it); capped by `deadline`.
    pub budget: Option<Duration>,
    /// The server's start-up time (`startupTimeout`): in the daemon a
    /// server keeps starting for that long after the caller stopped waiting.
    pub startup: Option<Duration>,
}

impl Limits {
    pub fn until(deadline: Instant) -> Limits {
        Limits {
            deadline,
            budget: None,
            startup: None,
        }
    }

    /// The deadline of a check on a server that is ready now.
    fn deadline_from_now(&self) -> Instant {
        self.budget.map_or(self.deadline, |budget| {
            self.deadline.min(Instant::now() + budget)
        })
    }
}

/// A check's answer and how much of its time went to warming the server up.
pub struct Answer {
    pub result: Result<Vec<ServerDiagnostic>, LspError>,
    pub warmup: Duration,
}

/// Somewhere else that may hold a warm server: the daemon (issue 6). A pool
/// with a remote asks it first and starts servers itself only when the
/// remote answers `None` (not available).
pub trait Remote {
    fn diagnose(
        &mut self,
        launch: &Launch,
        path: &Path,
        text: &str,
        language_id: &str,
        limits: &Limits,
    ) -> Option<Answer>;

    /// One request with `files` open first (references, rename, code
    /// actions). `None` when the remote cannot serve it.
    fn call(
        &mut self,
        _launch: &Launch,
        _files: &[OpenFile],
        _method: &str,
        _params: &Value,
        _deadline: Instant,
    ) -> Option<Result<CallAnswer, LspError>> {
        None
    }
}

#[derive(Default)]
pub struct Pool {
    clients: Vec<Client>,
    remote: Option<Box<dyn Remote>>,
}

impl Pool {
    /// A pool that asks `remote` first and falls back to its own servers.
    pub fn with_remote(remote: Box<dyn Remote>) -> Pool {
        Pool {
            clients: Vec::new(),
            remote: Some(remote),
        }
    }

    /// The diagnostics of `path` with content `text`, from the server
    /// `launch` describes, started if needed; all before `deadline`.
    pub fn diagnose(
        &mut self,
        launch: &Launch,
        path: &Path,
        text: &str,
        language_id: &str,
        deadline: Instant,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        self.diagnose_within(launch, path, text, language_id, &Limits::until(deadline))
            .result
    }

    /// [`Pool::diagnose`] with a budget that does not count the server's
    /// start-up (see [`Limits`]).
    pub fn diagnose_within(
        &mut self,
        launch: &Launch,
        path: &Path,
        text: &str,
        language_id: &str,
        limits: &Limits,
    ) -> Answer {
        if let Some(remote) = &mut self.remote
            && let Some(answer) = remote.diagnose(launch, path, text, language_id, limits)
        {
            return answer;
        }
        let (result, warmup) = self.diagnose_here(launch, path, text, language_id, limits);
        Answer { result, warmup }
    }

    /// In this process; the duration is the server's start, when it had to
    /// be started.
    fn diagnose_here(
        &mut self,
        launch: &Launch,
        path: &Path,
        text: &str,
        language_id: &str,
        limits: &Limits,
    ) -> (Result<Vec<ServerDiagnostic>, LspError>, Duration) {
        let deadline = limits.deadline;
        let began = Instant::now();
        let reused = self.position(launch);
        let index = match reused {
            Some(index) => index,
            None => match self.start(launch, deadline) {
                Ok(index) => index,
                Err(error) => return (Err(error), began.elapsed()),
            },
        };
        // A server just started is warming up: its first check (the
        // project load) may use the whole deadline. A warm one gets its
        // budget from now.
        let check_deadline = if reused.is_some() {
            limits.deadline_from_now()
        } else {
            deadline
        };
        let mut result = self.clients[index].diagnose(path, text, language_id, check_deadline);
        let warmup = if reused.is_some() {
            Duration::ZERO
        } else {
            began.elapsed()
        };
        if result.is_err() {
            let broken = self.clients.swap_remove(index);
            broken.shutdown(Duration::ZERO);
            // A warm server that died since its last use is restarted once
            // (a crash must not cost more than one answer).
            if reused.is_some()
                && matches!(result, Err(LspError::Exited { .. }))
                && Instant::now() < deadline
            {
                let index = match self.start(launch, deadline) {
                    Ok(index) => index,
                    Err(error) => return (Err(error), warmup),
                };
                result = self.clients[index].diagnose(path, text, language_id, deadline);
                if result.is_err() {
                    let broken = self.clients.swap_remove(index);
                    broken.shutdown(Duration::ZERO);
                }
            }
        }
        (result, warmup)
    }

    /// Sends one request to the server `launch` describes, with `files`
    /// open, started if needed; the remote first, like [`Pool::diagnose`].
    pub fn call(
        &mut self,
        launch: &Launch,
        files: &[OpenFile],
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<CallAnswer, LspError> {
        if let Some(remote) = &mut self.remote
            && let Some(result) = remote.call(launch, files, method, &params, deadline)
        {
            return result;
        }
        let index = match self.position(launch) {
            Some(index) => index,
            None => self.start(launch, deadline)?,
        };
        let result = self.clients[index].call(files, method, params, deadline);
        if result.is_err() {
            let broken = self.clients.swap_remove(index);
            broken.shutdown(Duration::ZERO);
        }
        result
    }

    fn start(&mut self, launch: &Launch, deadline: Instant) -> Result<usize, LspError> {
        self.clients.push(Client::start(launch, deadline)?);
        Ok(self.clients.len() - 1)
    }

    fn position(&self, launch: &Launch) -> Option<usize> {
        self.clients.iter().position(|client| {
            client.is_healthy()
                && client.launch().name == launch.name
                && client.launch().root == launch.root
        })
    }

    /// Process ids of the running servers (for tests and `--debug`).
    pub fn pids(&self) -> Vec<u32> {
        self.clients.iter().map(Client::pid).collect()
    }

    /// Shuts down clients unused for `idle` (for a long-lived holder).
    pub fn close_idle(&mut self, idle: Duration, grace: Duration) {
        let now = Instant::now();
        let (stale, fresh): (Vec<Client>, Vec<Client>) = std::mem::take(&mut self.clients)
            .into_iter()
            .partition(|client| now.duration_since(client.last_used) >= idle);
        self.clients = fresh;
        for client in stale {
            client.shutdown(grace);
        }
    }

    /// Shuts every server down, each given `grace` to exit by itself.
    pub fn close(mut self, grace: Duration) {
        for client in std::mem::take(&mut self.clients) {
            client.shutdown(grace);
        }
    }
}
