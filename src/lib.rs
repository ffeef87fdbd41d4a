//! ralph-hooks: Claude Code hooks that keep a coding agent working until the
//! work is really done, and tell it right after each edit what the edit broke.
//!
//! The parts, lowest layer first; a part uses only the parts above it in
//! this list (docs/architecture.md has the picture):
//! - [`util`]: text helpers and child processes we own.
//! - [`state`]: every byte on disk goes through it (locks, atomic writes,
//!   corrupt files moved aside), with [`state::ids`] checking ids before they
//!   become paths and [`state::events_log`] (`events.jsonl`).
//! - [`hook`]: the hook contract — the wire format, the one function that
//!   owns stdin, stdout and the exit code, the per-call context and config.
//! - [`harness`]: the other agent harnesses' dialects (Codex CLI, Gemini
//!   CLI, Cursor, Copilot CLI) in front of the same handlers.
//! - [`lsp`]: just enough of a language-server client to get diagnostics.
//! - [`astgrep`]: the in-process ast-grep engine (rules, scans, patterns).
//! - The features, each a folder: [`ralph`] (the Ralph loop), [`tasks`]
//!   (task steps and their continuation at Stop), [`orchestrator`] (seeds
//!   000/001/003: contract files, resume, templates), [`daemon`] (warm
//!   language servers), [`diagnostics`] (LSP after edits and as a loop
//!   condition) and [`guards`] (the PreToolUse rules).
//! - [`receipts`]: a finished loop's completion receipt and `verify`.
//! - [`monitor`]: the local dashboard server (`ralph-hooks monitor`),
//!   reached only from the CLI, so the hook binaries link none of it.
//! - The front ends: [`events`] (one handler per hook binary) and [`cli`]
//!   (`ralph-hooks`). The mains in `bin/` only call into these.

pub mod astgrep;
pub mod cli;
pub mod daemon;
pub mod diagnostics;
pub mod engine;
pub mod events;
pub mod exporter;
pub mod guards;
pub mod harness;
pub mod hook;
pub mod intel;
pub mod lsp;
pub mod monitor;
pub mod orchestrator;
pub mod ralph;
pub mod receipts;
pub mod state;
pub mod tasks;
pub mod telemetry;
pub mod util;

pub use events::run;
