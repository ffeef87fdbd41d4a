//! Running clients, one per (server, workspace root), reused across files.
//!
//! A hook call checks one file, or a loop's touched files at a Stop, and
//! closes the pool when done; a long-lived process (the daemon of issue 6)
//! can keep a pool and call [`Pool::diagnose`] again and again, which sends
//! `didChange` to a warm server instead of starting a new one. A client that
//! failed (crashed, timed out) is dropped — killed with its process group —
//! so the next call starts the server afresh.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::{CallAnswer, Client, Launch, LspError, OpenFile, ServerDiagnostic};

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
        deadline: Instant,
    ) -> Option<Result<Vec<ServerDiagnostic>, LspError>>;

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
        if let Some(remote) = &mut self.remote
            && let Some(result) = remote.diagnose(launch, path, text, language_id, deadline)
        {
            return result;
        }
        let reused = self.position(launch);
        let index = match reused {
            Some(index) => index,
            None => self.start(launch, deadline)?,
        };
        let mut result = self.clients[index].diagnose(path, text, language_id, deadline);
        if result.is_err() {
            let broken = self.clients.swap_remove(index);
            broken.shutdown(Duration::ZERO);
            // A warm server that died since its last use is restarted once
            // (a crash must not cost more than one answer).
            if reused.is_some()
                && matches!(result, Err(LspError::Exited { .. }))
                && Instant::now() < deadline
            {
                let index = self.start(launch, deadline)?;
                result = self.clients[index].diagnose(path, text, language_id, deadline);
                if result.is_err() {
                    let broken = self.clients.swap_remove(index);
                    broken.shutdown(Duration::ZERO);
                }
            }
        }
        result
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
