//! Talking to language servers: enough LSP to get a file's diagnostics and
//! to send the requests of `ralph-hooks refs/rename/fix`.
//!
//! - [`transport`]: the server's process and pipes (reader, writer and stderr
//!   threads; its own process group, killed on every exit path).
//! - [`client`]: initialize, open or change a document, answer the server's
//!   requests, wait for diagnostics by push or pull, shut down; and
//!   [`batch`]: many files' diagnostics at once, for project checks.
//! - [`settle`]: the pure rule for "these diagnostics are final".
//! - [`servers`]: which server handles a file (built-in defaults, `.lsp.json`,
//!   the `lsp` config section) and where its binary is.
//! - [`pool`]: clients kept per server and root, for reuse.
//! - [`uri`]: `file://` URIs, compared as decoded paths.
//! - [`environment`]: the caller's Python environment, carried with a
//!   server's launch.
//!
//! Measured server behaviour and the quirks this code works around are in
//! `shared/reference/language-servers.md`.
//!
//! Uses [`crate::hook`] (the `lsp` config section), [`crate::state`] and
//! [`crate::util`]; used by the daemon, the diagnostics and `doctor`.

pub mod client;
pub mod environment;
pub mod pool;
pub mod servers;
pub mod settle;
pub mod transport;
pub mod uri;

pub use client::batch;
pub use client::{
    CallAnswer, Client, CreatedOrDeleted, DiagnosticMode, Launch, LspError, OpenFile,
    PullCapability, ServerDiagnostic,
};
pub use pool::Pool;
