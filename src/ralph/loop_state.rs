//! `loop.json`: the current (or last) Ralph loop, and its archive `loops/<id>.json`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hook::transcript::{Tokens, UsageCursor};
use crate::ralph::budget::{Budget, Spend, human_duration};
use crate::ralph::checks::CheckRun;
use crate::state::Versioned;

/// The history key of the touched-files condition (`--diagnostics=touched`).
pub const TOUCHED: &str = "diagnostics";

/// The history key of the project condition (a goal-only loop, or
/// `--diagnostics`).
pub const PROJECT: &str = "project";

pub const LOOP_FILE: &str = "loop.json";
pub const ARCHIVE_DIR: &str = "loops";
/// Finished loops' completion receipts, `receipts/<id>.json` (see
/// `crate::receipts`).
pub const RECEIPTS_DIR: &str = "receipts";

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
    /// Issue 11: "no errors in the whole project" (or under `paths`) is a
    /// condition: a loop started with only a goal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub project: bool,
    /// With `project`: the files or folders it covers (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// With `project`: the check's record at `loop start` (counts per file
    /// and severity, the problems), the first Stop's "previous iteration"
    /// and the completion summary's starting point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_record: Option<Value>,
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
    /// Why it ended: `conditions_met`, `max_iterations`, `stagnant`,
    /// `budget`, `no_progress`, `cancelled`.
    pub completion_reason: Option<String>,
    /// What the reason means here: which budget ran out and by how much,
    /// the iterations without progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_detail: Option<String>,
    /// Registered for `--rewake`: the Stop hook lets each turn end and wakes
    /// the session with the follow-up (an `asyncRewake` hook), so Claude
    /// Code's block cap is never met.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewake: bool,
    /// Tokens, time and estimated cost the loop may spend.
    #[serde(default, skip_serializing_if = "Budget::is_empty")]
    pub budget: Budget,
    /// What it spent so far (see [`crate::ralph::budget`]).
    #[serde(default, skip_serializing_if = "Spend::is_zero")]
    pub spend: Spend,
    /// Where the next Stop goes on counting the transcript's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cursor: Option<UsageCursor>,
    /// Budgets the user was already warned about at 80 %.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub budget_warned: BTreeSet<String>,
    /// Seconds the loop spent PAUSED, left out of its time budget.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paused_secs: u64,
    /// When it was last resumed (an iteration's time starts there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<DateTime<Utc>>,
    /// Turns Claude Code's block cap ended (seen in the transcript).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub capped: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_at: Option<DateTime<Utc>>,
    /// With `paused_by: "usage_limit"`: when the limit resets, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<DateTime<Utc>>,
    /// The limit or error text Claude Code showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_message: Option<String>,
    /// API failures that ended a turn (the newest [`KEEP_API_FAILURES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_failures: Vec<ApiFailure>,
    /// Things to tell the user at their next prompt or session start, once:
    /// what happened while no hook output could reach them (a StopFailure,
    /// a woken turn's end, a capped turn).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Our own count of Stop blocks in a row (Claude Code caps them at 8).
    #[serde(default)]
    pub consecutive_blocks: u32,
    /// Stops held for background tasks since a Stop last saw none running
    /// ([`crate::ralph::hold`]), and when the first of them was.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub held_stops: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_since: Option<DateTime<Utc>>,
    /// When the user paused the loop, while it is PAUSED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// Who paused it when it was not the user's stop phrase: `guard` (the
    /// agent pushed or published while the loop ran unattended) or
    /// `usage_limit` (a turn ended on the account's rate or usage limit;
    /// the user's next prompt resumes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_by: Option<String>,
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
    /// A RUNNING loop keeps a copy: a `loop.json` emptied or removed while
    /// the work is unattended comes back from it (attack finding G5).
    const KEEPS_COPY: bool = true;
    fn worth_a_copy(&self) -> bool {
        self.is_running()
    }
}

/// How many API failures a loop keeps.
pub const KEEP_API_FAILURES: usize = 10;

/// How many notices wait for the user at most (the newest are kept).
pub const KEEP_NOTICES: usize = 10;

/// An API error that ended a turn of the loop (StopFailure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiFailure {
    pub at: DateTime<Utc>,
    /// `rate_limit`, `server_error`, `overloaded`, …
    pub error: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<DateTime<Utc>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// Errors and warnings counted in a project check record (its `files`:
/// path → `{"errors": n, "warnings": m}`).
pub fn record_counts(record: &Value) -> (u64, u64) {
    let mut errors = 0;
    let mut warnings = 0;
    if let Some(files) = record.get("files").and_then(Value::as_object) {
        for counts in files.values() {
            errors += counts.get("errors").and_then(Value::as_u64).unwrap_or(0);
            warnings += counts.get("warnings").and_then(Value::as_u64).unwrap_or(0);
        }
    }
    (errors, warnings)
}

impl LoopState {
    /// Only a RUNNING loop blocks stops, diagnoses edits and guards commands.
    pub fn is_running(&self) -> bool {
        self.status == LoopStatus::Running
    }

    /// Paused because a turn hit the account's usage or rate limit.
    pub fn paused_by_usage_limit(&self) -> bool {
        self.status == LoopStatus::Paused && self.paused_by.as_deref() == Some("usage_limit")
    }

    /// Seconds the loop has been active: since its start (or until its
    /// end), less the time it spent paused.
    pub fn active_secs(&self, now: DateTime<Utc>) -> i64 {
        let end = self.ended_at.unwrap_or(now);
        let mut paused = self.paused_secs as i64;
        if self.status == LoopStatus::Paused
            && let Some(since) = self.paused_at
        {
            paused += (end - since).num_seconds().max(0);
        }
        ((end - self.started_at).num_seconds() - paused).max(0)
    }

    /// Queues a notice for the user's next prompt or session start.
    pub fn push_notice(&mut self, text: String) {
        self.notices.push(text);
        let excess = self.notices.len().saturating_sub(KEEP_NOTICES);
        self.notices.drain(..excess);
    }

    /// Records an API failure, keeping the newest few.
    pub fn push_api_failure(&mut self, failure: ApiFailure) {
        self.api_failures.push(failure);
        let excess = self.api_failures.len().saturating_sub(KEEP_API_FAILURES);
        self.api_failures.drain(..excess);
    }

    /// A goal-only loop's progress from its start check to `latest` (the
    /// newest project check record): iterations, problems fixed, time.
    pub fn project_progress(&self, latest: Option<&Value>, now: DateTime<Utc>) -> String {
        let elapsed = human_duration((now - self.started_at).num_seconds());
        let iterations = self.history.len().max(self.iteration as usize);
        let now_counts = latest.map(record_counts);
        let start_counts = self.start_record.as_ref().map(record_counts);
        let counts = match (start_counts, now_counts) {
            (Some((e0, w0)), Some((e1, w1))) => format!(
                "{} problem(s) fixed (errors {e0} → {e1}, warnings {w0} → {w1})",
                e0.saturating_sub(e1) + w0.saturating_sub(w1)
            ),
            (None, Some((e1, w1))) => format!("{e1} error(s) and {w1} warning(s) now"),
            (Some((e0, w0)), None) => {
                format!("{e0} error(s) and {w0} warning(s) at the start, not checked since")
            }
            (None, None) => "no project check recorded".into(),
        };
        format!("{iterations} iteration(s), {counts}, {elapsed}")
    }

    /// The command that starts this loop again, for `loop cancel`.
    pub fn restart_command(&self) -> String {
        // Double quotes read best; text a shell would expand or unquote
        // inside them (`$`, a backtick, `!`, a backslash, `"`) gets single quotes,
        // so a pasted restart line runs nothing of the goal's.
        let quote = |text: &str| {
            if text.contains(['$', '`', '!', '\\', '"']) {
                format!("'{}'", text.replace('\'', "'\\''"))
            } else {
                format!("\"{text}\"")
            }
        };
        let mut command = format!("ralph-hooks loop start {}", quote(&self.goal));
        for path in &self.paths {
            command.push_str(&format!(" --path {}", quote(path)));
        }
        for check in &self.checks {
            command.push_str(&format!(" --check {}", quote(check)));
        }
        if let Some(promise) = &self.promise {
            command.push_str(&format!(" --promise {}", quote(promise)));
        }
        let other_condition = self.promise.is_some() || !self.checks.is_empty();
        if self.project && self.paths.is_empty() && other_condition {
            command.push_str(" --diagnostics");
        } else if self.diagnostics && !other_condition {
            command.push_str(" --diagnostics=touched");
        } else if !self.diagnostics && !self.project {
            command.push_str(" --no-diagnostics");
        }
        if self.no_warnings {
            command.push_str(" --no-warnings");
        }
        if self.max_iterations != DEFAULT_MAX_ITERATIONS {
            command.push_str(&format!(" --max-iterations {}", self.max_iterations));
        }
        if !self.checks.is_empty()
            && self.check_timeout_secs != crate::ralph::checks::DEFAULT_TIMEOUT.as_secs()
        {
            command.push_str(&format!(" --check-timeout {}", self.check_timeout_secs));
        }
        if let Some(tokens) = self.budget.max_tokens {
            command.push_str(&format!(" --max-tokens {tokens}"));
        }
        if let Some(secs) = self.budget.max_secs {
            command.push_str(&format!(" --max-time {secs}s"));
        }
        if let Some(cost) = self.budget.max_cost_usd {
            command.push_str(&format!(" --max-cost {cost}"));
        }
        if self.budget.stuck_after.is_some() {
            command.push_str(" --stop-when-stuck");
        }
        if self.rewake {
            command.push_str(" --rewake");
        }
        command
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
        if self.project {
            let what = if self.no_warnings {
                "errors or warnings"
            } else {
                "errors"
            };
            let scope = if self.paths.is_empty() {
                "the project".to_string()
            } else {
                self.paths.join(", ")
            };
            lines.push(format!(
                "no {what} in {scope} (language servers and ast-grep, `ralph-hooks check`)"
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
    /// Tokens the iteration spent (this session's transcript entries since
    /// the previous Stop); absent when the transcript could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// Its estimated cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Seconds since the previous Stop (or the start, or the resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<u64>,
    /// Problems fixed plus conditions turned green since the previous
    /// iteration: `--stop-when-stuck` looks for a run of zeros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<u64>,
    /// Claude Code's block cap ended the turn after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped_at: Option<DateTime<Utc>>,
}
