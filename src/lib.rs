//! ralph-hooks: Claude Code hooks that keep a coding agent working until the
//! work is really done, and tell it right after each edit what the edit broke.
//!
//! Reading order:
//! - [`protocol`]: the hook wire format; [`hook`]: the one function that owns
//!   stdin, stdout and the exit code; [`ctx`]: paths, clock, config.
//! - [`state`]: every byte on disk goes through it (locks, atomic writes,
//!   corrupt files moved aside); [`ids`] checks ids before they become paths;
//!   [`events_log`] is `events.jsonl`.
//! - The Ralph loop: [`loop_state`] (`loop.json`), [`loop_ctl`] (the pure Stop
//!   decision), [`loops`] (start, cancel, archive), with [`checks`],
//!   [`promise`], [`transcript`] and [`worktree`] gathering the evidence.
//! - [`events`]: one handler per hook binary. [`cli`]: `ralph-hooks`.
//! - Features: [`diagnostics`] (LSP after edits), [`tasks`], [`guards`] and
//!   [`continuation`] (task steps; [`todos`] reads Claude Code's own list),
//!   [`schema`] and [`orchestrator`] (contract files, knowledge, resume),
//!   with [`resume`] and [`templates`] (seed 000's command state, prompt
//!   templates and checked paths).

pub mod checks;
pub mod cli;
pub mod config;
pub mod continuation;
pub mod ctx;
pub mod daemon;
pub mod diagnostics;
pub mod events;
pub mod events_log;
pub mod guards;
pub mod hook;
pub mod ids;
pub mod loop_ctl;
pub mod loop_state;
pub mod loops;
pub mod lsp;
pub mod orchestrator;
pub mod process;
pub mod promise;
pub mod protocol;
pub mod resume;
pub mod schema;
pub mod state;
pub mod tasks;
pub mod templates;
pub mod text;
pub mod todos;
pub mod transcript;
pub mod worktree;

pub use hook::run;
