//! One file per hook binary: each is a unit struct implementing
//! [`crate::hook::Hook`] over plain functions.
//!
//! The top layer with [`crate::cli`]: it may use every feature part; nothing
//! but the mains in `bin/` uses it.

pub mod post_tool_use;
pub mod pre_tool_use;
pub mod session_start;
pub mod stop;
pub mod user_prompt_submit;
