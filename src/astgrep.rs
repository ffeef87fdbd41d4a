//! The in-process ast-grep engine: structural rules and pattern
//! search over source files with the ast-grep crates, so no separate
//! `ast-grep` binary has to be installed.
//!
//! - [`lang`]: which language a file is, from its extension, limited to the
//!   grammars compiled into this binary.
//! - [`rules`]: the rule set: the built-in rules shipped in the binary
//!   (`src/astgrep/rules/*.yml`) plus the project's `sgconfig.yml` rules,
//!   which win on id clashes. Loading never fails: a broken rule file is
//!   reported once in [`rules::RuleSet::problems`] and the rest still runs.
//! - [`scan`]: a rule set over one text or many files (in parallel),
//!   returning [`scan::Finding`]s with 1-based ranges, the rule's id,
//!   severity, message, note and fix.
//! - [`pattern`]: a pattern (`$VAR`, `$$$ARGS`) over one text, returning the
//!   matches and their meta-variables' texts, and a pattern plus replacement
//!   template returning text edits (used by `search` and `rewrite`).
//!
//! Uses only [`crate::util`]; used by `diagnostics` (post-edit findings,
//! `ralph-hooks check`) and `cli`.

pub mod lang;
pub mod pattern;
pub mod rules;
pub mod scan;

pub use lang::Lang;
pub use pattern::{
    Match, Rewriter, Searcher, TextEdit, apply_edits, rewrite, search, syntax_error,
};
pub use rules::{LoadOptions, RuleSet};
pub use scan::{FileScan, Finding, Fix, Level};
