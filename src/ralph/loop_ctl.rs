//! The Ralph loop's Stop decision, pure: state and evidence in, new state and
//! decision out. No disk, no processes, no clock of its own — the Stop handler
//! gathers the evidence and persists the result.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::hook::transcript::{Tokens, UsageCursor};
use crate::ralph::budget;
use crate::ralph::checks::CheckRun;
use crate::ralph::loop_state::{HistoryEntry, LoopState, LoopStatus, STAGNANT_AFTER};
use crate::util::text::{fnv1a, indent};

/// Claude Code force-ends a turn after this many Stop blocks in a row
/// (`CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`, v2.1.143+).
pub const CLAUDE_BLOCK_CAP: u32 = 8;

/// Which session's Stop this is, relative to the loop's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The loop belongs to this session.
    Mine,
    /// The loop has no session yet; this Stop claims it.
    Claim,
    /// Another session owns the loop: do nothing.
    Other,
}

pub fn ownership(state: &LoopState, session_id: Option<&str>) -> Ownership {
    match (&state.session_id, session_id) {
        (None, _) => Ownership::Claim,
        (Some(owner), Some(session)) if owner == session => Ownership::Mine,
        // A Stop without a session id cannot prove it is the owner.
        _ => Ownership::Other,
    }
}

/// A completion condition evaluated by someone other than this module (the
/// diagnostics condition): whether it holds, and what to say when it does not.
#[derive(Debug, Clone, Default)]
pub struct ConditionOutcome {
    /// Short name used in history: `diagnostics`.
    pub name: String,
    pub holds: bool,
    /// Could not be decided (server timeout or crash): never counts as holding.
    pub inconclusive: bool,
    /// Text for the follow-up prompt when it fails.
    pub report: String,
    /// Stable summary for stagnation detection.
    pub fingerprint: String,
    /// What to keep in the history entry.
    pub record: Value,
    /// The problems still open, bounded (the first few and a count of the
    /// rest), for the message of a loop that ends FAILED.
    pub remaining: String,
    /// Said in every Stop message whether the condition holds or not: a
    /// project ast-grep rule file that does not load.
    pub notes: Vec<String>,
}

/// Everything the Stop handler found out about this Stop.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// `Some(given)` when the loop has a promise.
    pub promise_given: Option<bool>,
    pub checks: Vec<CheckRun>,
    pub conditions: Vec<ConditionOutcome>,
    /// Files changed since the previous Stop, with their new content hash.
    pub files_changed: Vec<(String, String)>,
    pub stop_hook_active: bool,
    /// The block cap in force (from the environment, else [`CLAUDE_BLOCK_CAP`]).
    pub block_cap: u32,
    /// What the iteration spent, read from the transcript.
    pub spend: IterationSpend,
}

/// Tokens and estimated cost of one iteration (the transcript's entries
/// since the previous Stop).
#[derive(Debug, Clone, Default)]
pub struct IterationSpend {
    /// `None` when the transcript could not be read.
    pub tokens: Option<Tokens>,
    pub cost_usd: Option<f64>,
    /// Where the next count goes on.
    pub cursor: Option<UsageCursor>,
    /// The loop's start lay further back than the transcript was searched.
    pub truncated: bool,
}

/// What the Stop hook answers.
#[derive(Debug, Clone, PartialEq)]
pub enum StopDecision {
    /// Conditions hold: allow the stop and tell the user.
    Complete { system_message: String },
    /// Keep Claude working with this follow-up prompt.
    Block {
        reason: String,
        system_message: String,
    },
    /// The loop gave up: allow the stop and tell the user why.
    Fail { system_message: String },
}

/// Decides one Stop of a running loop owned by this session.
pub fn decide(
    state: &LoopState,
    evidence: &Evidence,
    now: DateTime<Utc>,
) -> (LoopState, StopDecision) {
    let mut next = state.clone();
    next.updated_at = now;
    let failed = failed_conditions(state, evidence);
    let fingerprint = fingerprint(&failed, evidence);
    let progress = progress(state, evidence, &failed);
    let iteration_start = [state.history.last().map(|h| h.at), state.resumed_at]
        .into_iter()
        .flatten()
        .fold(state.started_at, DateTime::max);
    add_spend(&mut next, &evidence.spend);
    let entry = |iteration: u32, decision: &str| HistoryEntry {
        iteration,
        at: now,
        decision: decision.to_string(),
        failed: failed.clone(),
        fingerprint: fingerprint.clone(),
        checks: evidence.checks.clone(),
        files_changed: evidence
            .files_changed
            .iter()
            .map(|(path, _)| path.clone())
            .collect(),
        stop_hook_active: evidence.stop_hook_active,
        conditions: evidence
            .conditions
            .iter()
            .map(|c| (c.name.clone(), c.record.clone()))
            .collect::<BTreeMap<_, _>>(),
        tokens: evidence.spend.tokens,
        cost_usd: evidence.spend.cost_usd,
        duration_secs: Some((now - iteration_start).num_seconds().max(0) as u64),
        progress: Some(progress),
        capped_at: None,
    };

    if failed.is_empty() {
        next.history.push(entry(state.iteration, "complete"));
        finish(&mut next, LoopStatus::Completed, "conditions_met", now);
        let mut message = format!(
            "Ralph loop {} COMPLETED after {} failed iteration(s): {}",
            state.id,
            state.iteration,
            state.condition_lines().join("; ")
        );
        if state.project {
            // Goal-only loops end with a summary: iterations, problems
            // fixed, time taken.
            let latest = evidence
                .conditions
                .iter()
                .find(|c| c.name == "project")
                .map(|c| &c.record);
            let _ = write!(
                message,
                ". Summary: {}.",
                next.project_progress(latest, now)
            );
        }
        if !state.budget.is_empty() {
            let _ = write!(
                message,
                " Spent: {}.",
                budget::summary(&next.spend, next.active_secs(now))
            );
        }
        message.push_str(&notes(evidence));
        return (
            next,
            StopDecision::Complete {
                system_message: message,
            },
        );
    }

    next.iteration = state.iteration + 1;
    let repeats = 1 + state
        .history
        .iter()
        .rev()
        .take_while(|h| h.decision == "block" && h.fingerprint == fingerprint)
        .count();
    let summary = failing_summary(&failed, evidence);
    let budget_lines = budget::lines(&state.budget, &next.spend, next.active_secs(now));

    if let Some(line) = budget::exhausted(&budget_lines) {
        next.history.push(entry(next.iteration, "fail_budget"));
        finish(&mut next, LoopStatus::Failed, "budget", now);
        next.completion_detail = Some(line.describe_exhausted());
        let message = format!(
            "Ralph loop {} FAILED: budget — {}. Spent: {} over {} iteration(s). Still to do:\n{summary}",
            state.id,
            line.describe_exhausted(),
            budget::summary(&next.spend, next.active_secs(now)),
            next.iteration,
        );
        return (
            next,
            StopDecision::Fail {
                system_message: message + &notes(evidence),
            },
        );
    }
    if next.iteration >= state.max_iterations {
        next.history
            .push(entry(next.iteration, "fail_max_iterations"));
        finish(&mut next, LoopStatus::Failed, "max_iterations", now);
        let message = format!(
            "Ralph loop {} FAILED: max iterations exceeded ({}/{}). Still failing:\n{summary}",
            state.id, next.iteration, state.max_iterations
        );
        return (
            next,
            StopDecision::Fail {
                system_message: message + &notes(evidence),
            },
        );
    }
    if repeats >= STAGNANT_AFTER {
        next.history.push(entry(next.iteration, "fail_stagnant"));
        finish(&mut next, LoopStatus::Failed, "stagnant", now);
        let message = format!(
            "Ralph loop {} FAILED: stagnant — {STAGNANT_AFTER} iterations in a row changed nothing and failed the same way. Still failing:\n{summary}",
            state.id
        );
        return (
            next,
            StopDecision::Fail {
                system_message: message + &notes(evidence),
            },
        );
    }
    if let Some(stuck_after) = state.budget.stuck_after {
        let this = entry(next.iteration, "block");
        let run: Vec<&HistoryEntry> = std::iter::once(&this)
            .chain(state.history.iter().rev())
            .take_while(|h| h.decision == "block" && spent_without_progress(h))
            .collect();
        if run.len() as u32 >= stuck_after.max(1) {
            let mut tokens = Tokens::default();
            let mut cost = 0.0;
            for h in &run {
                tokens.add(&h.tokens.unwrap_or_default());
                cost += h.cost_usd.unwrap_or(0.0);
            }
            let spent = if cost > 0.0 {
                format!(
                    "{} tokens (~{}, estimate)",
                    budget::format_tokens(tokens.total()),
                    budget::format_usd(cost)
                )
            } else {
                format!("{} tokens", budget::format_tokens(tokens.total()))
            };
            let detail = format!(
                "{} iterations in a row fixed no problem and turned no condition green, while spending {spent}",
                run.len()
            );
            next.history.push(entry(next.iteration, "fail_no_progress"));
            finish(&mut next, LoopStatus::Failed, "no_progress", now);
            next.completion_detail = Some(detail.clone());
            let message = format!(
                "Ralph loop {} FAILED: no progress — {detail}. Still failing:\n{summary}",
                state.id
            );
            return (
                next,
                StopDecision::Fail {
                    system_message: message + &notes(evidence),
                },
            );
        }
    }

    next.consecutive_blocks = if evidence.stop_hook_active {
        state.consecutive_blocks + 1
    } else {
        1
    };
    next.history.push(entry(next.iteration, "block"));
    trim_old_tails(&mut next.history);
    let reason = follow_up_prompt(state, &next, evidence, &failed, repeats, &budget_lines);
    let mut system_message = format!(
        "Ralph loop iteration {}/{}: still failing — {}",
        next.iteration,
        state.max_iterations,
        failed.join(", ")
    );
    system_message.push_str(&notes(evidence));
    for line in budget::newly_near(&budget_lines, &state.budget_warned) {
        next.budget_warned.insert(line.kind.as_str().to_string());
        let _ = write!(system_message, "\nBudget warning — {}.", line.describe());
    }
    // A loop that wakes the session (`--rewake`) lets every turn end, so
    // Claude Code's count of blocks in a row never reaches its cap.
    if !state.rewake && evidence.block_cap > 0 && next.consecutive_blocks >= evidence.block_cap {
        let _ = write!(
            system_message,
            "\nClaude Code ends a turn after {} Stop blocks in a row. If it stops now, the loop is still RUNNING: send any message (\"continue\") to resume it, or run `ralph-hooks loop cancel`.",
            evidence.block_cap
        );
    }
    (
        next,
        StopDecision::Block {
            reason,
            system_message,
        },
    )
}

/// Adds one iteration's spend to the loop's.
fn add_spend(next: &mut LoopState, spend: &IterationSpend) {
    match spend.tokens {
        Some(tokens) => next.spend.tokens.add(&tokens),
        None => next.spend.incomplete = true,
    }
    next.spend.cost_usd += spend.cost_usd.unwrap_or(0.0);
    next.spend.incomplete |= spend.truncated;
    if let Some(cursor) = &spend.cursor {
        next.usage_cursor = Some(cursor.clone());
    }
}

/// Problems fixed (the conditions' `fixed_since_previous`) plus conditions
/// failing at the previous Stop that hold now.
fn progress(state: &LoopState, evidence: &Evidence, failed: &[String]) -> u64 {
    let fixed: u64 = evidence
        .conditions
        .iter()
        .filter_map(|c| c.record.get("fixed_since_previous").and_then(Value::as_u64))
        .sum();
    let turned_green = state
        .history
        .last()
        .map(|previous| {
            previous
                .failed
                .iter()
                .filter(|name| !failed.contains(name))
                .count() as u64
        })
        .unwrap_or(0);
    fixed + turned_green
}

/// An iteration that fixed nothing and turned nothing green while spending
/// tokens (one whose tokens could not be read counts as spending).
fn spent_without_progress(entry: &HistoryEntry) -> bool {
    entry.progress == Some(0) && entry.tokens.is_none_or(|tokens| tokens.total() > 0)
}

/// Marks the loop finished.
pub fn finish(state: &mut LoopState, status: LoopStatus, reason: &str, now: DateTime<Utc>) {
    state.status = status;
    state.completion_reason = Some(reason.to_string());
    state.ended_at = Some(now);
    state.updated_at = now;
    state.consecutive_blocks = 0;
}

fn failed_conditions(state: &LoopState, evidence: &Evidence) -> Vec<String> {
    let mut failed = Vec::new();
    for run in &evidence.checks {
        if !run.passed() {
            failed.push(format!("check:{}", run.command));
        }
    }
    if state.promise.is_some() && evidence.promise_given != Some(true) {
        failed.push("promise".to_string());
    }
    for condition in &evidence.conditions {
        if !condition.holds || condition.inconclusive {
            failed.push(condition.name.clone());
        }
    }
    failed
}

/// Stable digest of the evidence: which conditions failed, how each check
/// ended and what it printed (digits masked), other conditions' summaries,
/// and the content of the files that changed.
fn fingerprint(failed: &[String], evidence: &Evidence) -> String {
    let mut text = failed.join("\n");
    for run in &evidence.checks {
        let _ = write!(
            text,
            "\n{}|{:?}|{}|{}",
            run.command, run.exit_code, run.timed_out, run.output_hash
        );
    }
    for condition in &evidence.conditions {
        let _ = write!(text, "\n{}|{}", condition.name, condition.fingerprint);
    }
    for (path, hash) in &evidence.files_changed {
        let _ = write!(text, "\n{path}={hash}");
    }
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// Only the latest entries keep check output; older ones keep the hash.
fn trim_old_tails(history: &mut [HistoryEntry]) {
    const KEEP_TAILS: usize = 3;
    let keep_from = history.len().saturating_sub(KEEP_TAILS);
    for entry in &mut history[..keep_from] {
        for run in &mut entry.checks {
            run.tail.clear();
        }
    }
}

fn failing_summary(failed: &[String], evidence: &Evidence) -> String {
    let mut lines = Vec::new();
    for name in failed {
        if let Some(command) = name.strip_prefix("check:") {
            let status = evidence
                .checks
                .iter()
                .find(|r| r.command == command)
                .map(CheckRun::describe_status);
            lines.push(format!(
                "- check `{command}` ({})",
                status.unwrap_or_default()
            ));
        } else if name == "promise" {
            lines.push("- the promise was not given".to_string());
        } else {
            let remaining = evidence
                .conditions
                .iter()
                .find(|c| &c.name == name)
                .map(|c| c.remaining.trim())
                .filter(|text| !text.is_empty());
            match remaining {
                Some(text) => lines.push(format!("- {name}: {text}")),
                None => lines.push(format!("- {name}")),
            }
        }
    }
    lines.join("\n")
}

/// The conditions' notes (a rule file that does not load), one per line,
/// for every Stop message.
fn notes(evidence: &Evidence) -> String {
    let mut text = String::new();
    for note in evidence.conditions.iter().flat_map(|c| &c.notes) {
        let _ = write!(text, "\nNote — {note}");
    }
    text
}

fn follow_up_prompt(
    state: &LoopState,
    next: &LoopState,
    evidence: &Evidence,
    failed: &[String],
    repeats: usize,
    budget_lines: &[budget::Line],
) -> String {
    let mut prompt = String::new();
    let _ = writeln!(
        prompt,
        "[RALPH LOOP — iteration {}/{}] The loop is not finished.",
        next.iteration, state.max_iterations
    );
    let _ = writeln!(prompt, "Goal: {}", state.goal);
    let _ = writeln!(prompt, "\nStill failing:");
    for run in evidence.checks.iter().filter(|r| !r.passed()) {
        let _ = writeln!(
            prompt,
            "- check `{}` failed ({}). Last lines of its output:",
            run.command,
            run.describe_status()
        );
        if run.tail.is_empty() {
            let _ = writeln!(prompt, "    (no output)");
        } else {
            let _ = writeln!(prompt, "{}", indent(&run.tail, "    "));
        }
    }
    if failed.iter().any(|f| f == "promise") {
        let promise = state.promise.as_deref().unwrap_or_default();
        let _ = writeln!(
            prompt,
            "- the promise was not given: your final message did not end with <promise>{promise}</promise>."
        );
    }
    for condition in evidence
        .conditions
        .iter()
        .filter(|c| !c.holds || c.inconclusive)
    {
        let _ = writeln!(prompt, "- {}", condition.report.trim_end());
    }

    let _ = writeln!(prompt, "\nSince the previous iteration:");
    let previous = state.history.last();
    let mut any_change = false;
    if !evidence.files_changed.is_empty() {
        any_change = true;
        let names: Vec<&str> = evidence
            .files_changed
            .iter()
            .map(|(p, _)| p.as_str())
            .take(20)
            .collect();
        let more = evidence.files_changed.len().saturating_sub(names.len());
        let suffix = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(prompt, "- files changed: {}{suffix}", names.join(", "));
    }
    if let Some(previous) = previous {
        let now_passing: Vec<&str> = previous
            .failed
            .iter()
            .filter(|f| !failed.contains(f))
            .map(String::as_str)
            .collect();
        let newly_failing: Vec<&str> = failed
            .iter()
            .filter(|f| !previous.failed.contains(f))
            .map(String::as_str)
            .collect();
        if !now_passing.is_empty() {
            any_change = true;
            let _ = writeln!(prompt, "- now passing: {}", now_passing.join(", "));
        }
        if !newly_failing.is_empty() {
            any_change = true;
            let _ = writeln!(prompt, "- newly failing: {}", newly_failing.join(", "));
        }
    }
    if !any_change {
        if previous.is_none() {
            let _ = writeln!(prompt, "- this is the first check of the loop.");
        } else if repeats == 1 {
            // The evidence differs from last time (what a condition reports,
            // a check's output) though no file change was found: saying
            // "nothing changed" would contradict the report above.
            let _ = writeln!(
                prompt,
                "- what the failing conditions report changed (see above); the same conditions still fail."
            );
        } else {
            let _ = writeln!(
                prompt,
                "- nothing: no file changed and the same conditions fail ({repeats} time(s) in a row). Try a different approach; after {STAGNANT_AFTER} the loop ends as stagnant."
            );
        }
    }

    if !budget_lines.is_empty() {
        let _ = writeln!(
            prompt,
            "\nBudget (the loop ends as FAILED when one runs out):"
        );
        let _ = write!(prompt, "{}", budget::prompt_lines(budget_lines));
    }

    let _ = writeln!(
        prompt,
        "\nHow to finish: keep working on the goal until all of these hold:"
    );
    for line in state.condition_lines() {
        let _ = writeln!(prompt, "- {line}");
    }
    if let Some(promise) = &state.promise {
        let _ = writeln!(
            prompt,
            "Only when it is completely true, end your final message with exactly: <promise>{promise}</promise>"
        );
    }
    let _ = write!(
        prompt,
        "The loop checks again when you stop. {} iteration(s) left before it fails.",
        state.max_iterations.saturating_sub(next.iteration)
    );
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(promise: Option<&str>, max: u32) -> LoopState {
        let at = DateTime::parse_from_rfc3339("2026-11-21T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        LoopState {
            version: 1,
            id: "loop-test".into(),
            status: LoopStatus::Running,
            goal: "make it pass".into(),
            promise: promise.map(str::to_string),
            checks: vec!["cargo test".into()],
            check_timeout_secs: 300,
            diagnostics: false,
            no_warnings: false,
            project: false,
            paths: Vec::new(),
            start_record: None,
            iteration: 0,
            max_iterations: max,
            session_id: Some("s".into()),
            project_root: "/p".into(),
            started_at: at,
            updated_at: at,
            ended_at: None,
            completion_reason: None,
            consecutive_blocks: 0,
            held_stops: 0,
            held_since: None,
            paused_at: None,
            paused_by: None,
            worktree: None,
            touched_files: Default::default(),
            history: vec![],
            completion_detail: None,
            rewake: false,
            budget: Default::default(),
            spend: Default::default(),
            usage_cursor: None,
            budget_warned: Default::default(),
            paused_secs: 0,
            resumed_at: None,
            capped: 0,
            capped_at: None,
            resets_at: None,
            limit_message: None,
            api_failures: Vec::new(),
            notices: Vec::new(),
        }
    }

    fn check(code: i32, hash: &str) -> CheckRun {
        CheckRun {
            command: "cargo test".into(),
            exit_code: Some(code),
            timed_out: false,
            duration_ms: 5,
            output_hash: hash.into(),
            output_sha256: String::new(),
            tail: "test result: FAILED".into(),
            confined: true,
        }
    }

    fn evidence(code: i32, hash: &str, promise_given: Option<bool>) -> Evidence {
        Evidence {
            promise_given,
            checks: vec![check(code, hash)],
            block_cap: 8,
            ..Evidence::default()
        }
    }

    #[test]
    fn failing_check_blocks_with_tail_and_budget() {
        let (next, decision) = decide(&state(None, 10), &evidence(101, "a", None), Utc::now());
        let StopDecision::Block { reason, .. } = decision else {
            panic!("{decision:?}")
        };
        assert_eq!(next.iteration, 1);
        assert!(reason.contains("iteration 1/10"), "{reason}");
        assert!(reason.contains("test result: FAILED"), "{reason}");
        assert!(reason.contains("Goal: make it pass"), "{reason}");
    }

    #[test]
    fn all_conditions_hold_completes() {
        let (next, decision) = decide(
            &state(Some("DONE"), 10),
            &evidence(0, "a", Some(true)),
            Utc::now(),
        );
        assert!(matches!(decision, StopDecision::Complete { .. }));
        assert_eq!(next.status, LoopStatus::Completed);
        assert_eq!(next.completion_reason.as_deref(), Some("conditions_met"));
    }

    #[test]
    fn promise_without_passing_check_is_not_enough() {
        let (_, decision) = decide(
            &state(Some("DONE"), 10),
            &evidence(1, "a", Some(true)),
            Utc::now(),
        );
        assert!(matches!(decision, StopDecision::Block { .. }));
    }

    #[test]
    fn budget_runs_out_at_max() {
        let mut s = state(None, 3);
        s.iteration = 2;
        let (next, decision) = decide(&s, &evidence(1, "x", None), Utc::now());
        let StopDecision::Fail { system_message } = decision else {
            panic!()
        };
        assert!(
            system_message.contains("max iterations exceeded"),
            "{system_message}"
        );
        assert_eq!(next.completion_reason.as_deref(), Some("max_iterations"));
    }

    #[test]
    fn same_evidence_three_times_is_stagnant() {
        let mut s = state(None, 10);
        let mut outcomes = Vec::new();
        for _ in 0..3 {
            let (next, decision) = decide(&s, &evidence(1, "same", None), Utc::now());
            outcomes.push(decision);
            s = next;
        }
        assert!(matches!(outcomes[0], StopDecision::Block { .. }));
        assert!(matches!(outcomes[1], StopDecision::Block { .. }));
        assert!(matches!(outcomes[2], StopDecision::Fail { .. }));
        assert_eq!(s.completion_reason.as_deref(), Some("stagnant"));
    }

    #[test]
    fn changed_files_are_progress() {
        let mut s = state(None, 10);
        for round in 0..5 {
            let mut e = evidence(1, "same", None);
            e.files_changed = vec![("src/lib.rs".into(), format!("h{round}"))];
            let (next, decision) = decide(&s, &e, Utc::now());
            assert!(
                matches!(decision, StopDecision::Block { .. }),
                "round {round}"
            );
            s = next;
        }
    }

    #[test]
    fn a_changed_report_without_a_changed_file_is_not_called_nothing() {
        let s = state(None, 10);
        let (s, _) = decide(&s, &evidence(1, "first", None), Utc::now());
        let (_, decision) = decide(&s, &evidence(1, "second", None), Utc::now());
        let StopDecision::Block { reason, .. } = decision else {
            panic!("{decision:?}")
        };
        assert!(!reason.contains("no file changed"), "{reason}");
        assert!(
            reason.contains("what the failing conditions report changed"),
            "{reason}"
        );
    }

    #[test]
    fn ownership_rules() {
        let mut s = state(None, 10);
        assert_eq!(ownership(&s, Some("s")), Ownership::Mine);
        assert_eq!(ownership(&s, Some("t")), Ownership::Other);
        assert_eq!(ownership(&s, None), Ownership::Other);
        s.session_id = None;
        assert_eq!(ownership(&s, Some("t")), Ownership::Claim);
    }
}
