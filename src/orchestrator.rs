//! The orchestrator's files of seeds 000, 001 and 003: what multi-phase
//! commands leave behind for the next phase and the next session.
//!
//! - [`schema`]: the contract and storage files, recognised by path and
//!   validated with line and column (also inside the Pre/PostToolUse hooks);
//! - [`resume`]: command state, phase results and resumable commands;
//! - [`templates`]: `{{VARS}}` substitution and checked absolute paths;
//! - [`repo`]: the branch and commit a resume state is checked against;
//! - [`pipeline`]: the plan → run → sync pipeline of `/ralph` and its
//!   sub-agent prompts;
//! - [`context`]: what a session is told at start (state, knowledge,
//!   resumable work).
//!
//! Uses [`crate::hook`], [`crate::state`] and [`crate::util`]; used by the
//! event handlers, the guard and the CLI.

pub mod context;
pub mod pipeline;
pub mod repo;
pub mod resume;
pub mod schema;
pub mod templates;

pub use context::session_context;
