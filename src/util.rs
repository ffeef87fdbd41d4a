//! Helpers that know nothing about hooks, loops or tasks: [`text`] (hashes,
//! tails, truncation for prompts and reports) and [`process`] (child process
//! groups we own and always reap). Every other part may use them; they use
//! nothing of this crate.

pub mod process;
pub mod text;
