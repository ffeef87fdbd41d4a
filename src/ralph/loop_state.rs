//! `loop.json`: the current (or last) Ralph loop, and its archive `loops/<id>.json`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ralph::checks::CheckRun;
use crate::state::Versioned;

pub const LOOP_FILE: &str = "loop.json";
pub const ARCHIVE_DIR: &str = "loops";

/// Default budget, as the issue asks.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;

/// Iterations in a row with the same evidence that end a loop as stagnant.
pub const STAGNANT_AFTER: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LoopStatus {
    Running,
    /// The user said "stop" (issue 12): the loop keeps its iteration count
    /// but blocks no stop until `ralph-hooks loop resume`.
    Paused,
    Completed,
    Cancelled,
    Failed,
}

impl LoopStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopStatus::Running => "RUNNING",
            LoopStatus::Paused => "PAUSED",
            LoopStatus::Completed => "COMPLETED",
            LoopStatus::Cancelled => "CANCELLED",
            LoopStatus::Failed => "FAILED",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoopState {
    #[serde(default)]
    pub version: u64,
    pub id: String,
    pub status: LoopStatus,
    pub goal: String,
    /// The exact text Claude must end its last message with, inside `<promise>` tags.
    pub promise: Option<String>,
    /// Shell commands that must exit 0.
    pub checks: Vec<String>,
    pub check_timeout_secs: u64,
    /// "No LSP errors in the files the loop touched" is a condition.
    #[serde(default)]
    pub diagnostics: bool,
    /// With `diagnostics`: warnings count as failures too.
    #[serde(default)]
    pub no_warnings: bool,
    /// Failed iterations so far.
    pub iteration: u32,
    pub max_iterations: u32,
    /// The session that owns the loop; `None` until the first Stop claims it.
    pub session_id: Option<String>,
    pub project_root: String,
    pub started_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(default)]
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it ended: `conditions_met`, `max_iterations`, `stagnant`, `cancelled`.
    pub completion_reason: Option<String>,
    /// Our own count of Stop blocks in a row (Claude Code caps them at 8).
    #[serde(default)]
    pub consecutive_blocks: u32,
    /// When the user paused the loop, while it is PAUSED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// Work-tree snapshot taken at the last Stop, to tell what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<BTreeMap<String, String>>,
    /// Files the post-tool hook saw the loop edit (absolute paths).
    #[serde(default)]
    pub touched_files: BTreeSet<String>,
    pub history: Vec<HistoryEntry>,
}

impl Versioned for LoopState {
    const VERSION: u64 = 1;
}

impl LoopState {
    /// Only a RUNNING loop blocks stops, diagnoses edits and guards commands.
    pub fn is_running(&self) -> bool {
        self.status == LoopStatus::Running
    }

    /// Not finished: RUNNING or PAUSED. A new loop may not start while one
    /// is active, and `loop cancel` ends either.
    pub fn is_active(&self) -> bool {
        matches!(self.status, LoopStatus::Running | LoopStatus::Paused)
    }

    /// One line per completion condition, for prompts and status.
    pub fn condition_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for command in &self.checks {
            lines.push(format!("check `{command}` exits 0"));
        }
        if let Some(promise) = &self.promise {
            lines.push(format!(
                "your final message ends with <promise>{promise}</promise>"
            ));
        }
        if self.diagnostics {
            let what = if self.no_warnings {
                "errors or warnings"
            } else {
                "errors"
            };
            lines.push(format!(
                "no language-server {what} in the files the loop touched"
            ));
        }
        lines
    }
}

/// One Stop that the loop evaluated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HistoryEntry {
    pub iteration: u32,
    pub at: DateTime<Utc>,
    /// `block`, `complete`, `fail_max_iterations`, `fail_stagnant`.
    pub decision: String,
    /// Names of the conditions that failed: `promise`, `check:<cmd>`, `diagnostics`.
    pub failed: Vec<String>,
    pub fingerprint: String,
    #[serde(default)]
    pub checks: Vec<CheckRun>,
    #[serde(default)]
    pub files_changed: Vec<String>,
    #[serde(default)]
    pub stop_hook_active: bool,
    /// Per-condition records from other conditions (diagnostic counts per file).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub conditions: BTreeMap<String, Value>,
}
