//! The project engine: every problem in a project (or under given paths)
//! from the real language servers and the ast-grep rules, at the speed of
//! the checkers' own command lines — `ralph-hooks check`, a loop's first
//! feedback and each of its Stops, `fix`, the pipeline.
//!
//! - [`files`]: which files a check looks at (walked like ripgrep).
//! - [`resolve`]: which server handles a file (the registry's choice, see
//!   [`crate::lsp::servers::Registry::select`]) and one file's diagnostics.
//! - [`run`]: the check itself — files grouped by server, each group sent
//!   to its server as one batch ([`crate::lsp::batch`]), all servers and
//!   ast-grep at once; [`jobs`]: what is asked of a server and answered.
//! - [`servers`]: whoever runs the servers — the daemon's warm workers, or
//!   [`servers::LocalServers`] in this process.
//! - [`cli_batch`]: a checker's own command line for a whole batch, where
//!   its server cannot be asked well (pyrefly).
//! - [`deps`]: the files outside the walked workspace a server reads
//!   (`extends`, JSON modules, `node_modules`, extra search paths), so a
//!   warm server or a kept result notices their change.
//! - [`report`]: the result, its text and JSON forms and the exit code.
//! - [`loop_check`]: a loop's condition from a report (pure).
//! - [`model`], [`listing`], [`settings`]: what a diagnostic is, how lists
//!   of them read, and the `diagnostics`/`lsp` configuration.
//!
//! Uses [`crate::lsp`], [`crate::astgrep`], [`crate::ralph`] (the loop's
//! state) and the layers below; used by the daemon (which runs checks for
//! the hooks and the CLI), the per-edit [`crate::diagnostics`], `intel` and
//! the front ends.

pub mod cli_batch;
pub mod deps;
pub mod files;
pub mod jobs;
pub mod listing;
pub mod loop_check;
pub mod model;
pub mod report;
pub mod resolve;
pub mod run;
pub mod servers;
pub mod settings;
