//! Code intelligence and fixes for the agent: `ralph-hooks refs`,
//! `rename`, `search`, `rewrite` and `fix`, run by Claude through Bash or by
//! the user by hand.
//!
//! - [`session`]: which servers handle a file, and requests to them through
//!   the daemon's warm servers (in-process, closed at the end, when the
//!   daemon cannot be used); says plainly when a server lacks a feature.
//! - [`position`]: 1-based `line:col` and symbol names to LSP positions;
//!   [`target`]: the symbol a command is about, document symbols,
//!   definitions.
//! - [`edits`]: text edits and workspace edits applied to file texts.
//! - [`refs`], [`rename`] (with its conflict check and [`names`], whether
//!   the new name is an identifier and no keyword), [`fix`] (ast-grep rule
//!   fixes, `source.fixAll`, quick fixes, never a broken file).
//! - [`structural`]: `search` and `rewrite`, ast-grep patterns over the
//!   project's files in parallel on [`crate::astgrep`]'s engine.
//! - [`writer`]: the all-or-nothing multi-file write with rollback that
//!   every command that writes goes through; [`diff`]: unified diffs.
//!
//! Uses [`crate::engine`] (server selection and settings, the project's
//! files and rules), [`crate::daemon`], [`crate::astgrep`], [`crate::lsp`],
//! [`crate::hook`], [`crate::state`] and [`crate::util`]; used by the CLI.
//! Never reads or writes under the hook state root.

pub mod diff;
pub mod edits;
pub mod fix;
pub mod names;
pub mod position;
pub mod refs;
pub mod rename;
pub mod session;
pub mod structural;
pub mod target;
pub mod writer;
