//! Helpers that know nothing about hooks, loops or tasks: [`text`] (hashes,
//! tails, truncation for prompts and reports), [`process`] (child process
//! groups we own and always reap, also when we are killed) and [`fsread`]
//! (the one function every file read goes through: type-checked, bounded),
//! [`git`] (git that runs none of the project's code), [`private_dir`]
//! (folders of this user only, in shared places), [`json_splice`] (a
//! JSON file's text edited in place, its formatting kept) and [`confine`] (a
//! bubblewrap around code the hooks run for the agent) and [`trusted`] (the
//! hooks' helper programs found only in folders the agent cannot write),
//! [`words`] (a line split into words as a shell quotes them), [`priority`]
//! (a thread that takes only idle cores), [`paths`] (`.` and `..` taken
//! out by the text). Every
//! other part may use them; they use nothing of this crate.

pub mod confine;
pub mod fsread;
pub mod git;
pub mod json_splice;
pub mod paths;
pub mod priority;
pub mod private_dir;
pub mod process;
pub mod text;
pub mod trusted;
pub mod words;
