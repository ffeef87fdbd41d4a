//! Schemas of the orchestrator's files (seeds 001 and 003), issue 5. Not built yet.

pub mod hook;
