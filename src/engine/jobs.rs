//! What a project check asks of a server and what it gets back: one
//! server's share of the files ([`ServerJob`]), its answers
//! ([`JobAnswer`]), and how far a check has come ([`Progress`]).

use std::time::Duration;

use crate::lsp::batch::{BatchFile, FileAnswer};
use crate::lsp::servers::BatchCli;
use crate::lsp::{Launch, LspError};

/// One server's share of a check.
#[derive(Debug, Clone)]
pub struct ServerJob {
    pub launch: Launch,
    /// The server's start-up time (`startupTimeout`), if configured.
    pub startup: Option<Duration>,
    /// How long the server may say nothing at all while files wait for it
    /// before it counts as hung: its start-up time, else the diagnostics
    /// `timeout_ms`.
    pub silence: Duration,
    /// The checker's own command line checks this job instead of its
    /// server ([`super::cli_batch`]).
    pub cli: Option<BatchCli>,
    pub files: Vec<BatchFile>,
}

/// A server's answers, one per file of its job, in the job's order.
#[derive(Debug)]
pub struct JobAnswer {
    pub answers: Vec<FileAnswer>,
    /// Why the server could not answer (it did not start, it crashed, it is
    /// still warming up); files without an answer carry this reason.
    pub failure: Option<LspError>,
}

/// How far a check has come, for people watching it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}
