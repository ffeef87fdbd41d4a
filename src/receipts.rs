//! Completion receipts: a finished loop leaves a machine-checkable record
//! (an in-toto Statement v1 with a test-result predicate) of what it
//! verified, on which git tree, and `ralph-hooks verify` re-runs it.
//!
//! - [`statement`]: the receipt's content, pure (loop in, JSON out, and
//!   back);
//! - [`tree`]: the git tree of the work as it is, through a temporary index;
//! - [`servers`]: the language servers' versions;
//! - [`envelope`]: DSSE envelopes signed with `ssh-keygen -Y`;
//! - [`record`]: writing `receipts/<id>.json` when a loop ends;
//! - [`verify`]: re-running a receipt in a temporary worktree.
//!
//! Uses [`crate::ralph`] (the loop, its check runner), [`crate::lsp`] (the
//! server registry), [`crate::hook`], [`crate::state`], [`crate::util`].
//! Used by the Stop hook and the CLI.

pub mod envelope;
pub mod record;
pub mod servers;
pub mod statement;
pub mod tree;
pub mod verify;
