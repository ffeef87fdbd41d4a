//! The goal-only loop's condition (issue 11): "no errors in the project"
//! (or under the loop's `--path`s), from [`super::project`] — language
//! servers through the warm daemon plus ast-grep — within the loop budget.
//! The report and history record are [`super::loop_condition`]'s: remaining
//! problems by priority, what was fixed and what is new since the previous
//! iteration, counts per file and severity.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::loop_condition::{FileResult, Problem, evaluate_in};
use super::model::Severity;
use super::project::{self, NoSuchPath, Options, Report, Status};
use super::report::Caps;
use super::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::loop_ctl::ConditionOutcome;
use crate::ralph::loop_state::LoopState;

pub const NAME: &str = "project";

/// The check a loop runs: its paths, warnings and errors, the loop budget.
fn options(ctx: &Ctx, settings: &Settings, state: &LoopState) -> Options {
    Options {
        paths: state
            .paths
            .iter()
            .map(|p| ctx.project_root.join(p))
            .collect::<Vec<PathBuf>>(),
        min_severity: Severity::Warning,
        ast_grep: true,
        budget: Some(Duration::from_millis(settings.config.loop_budget_ms)),
    }
}

fn scope(state: &LoopState) -> String {
    if state.paths.is_empty() {
        "the project still has".into()
    } else {
        format!("{} still has", state.paths.join(", "))
    }
}

/// Stop: the condition over the whole project (or the loop's paths).
pub fn project_condition(ctx: &Ctx, state: &LoopState) -> ConditionOutcome {
    let settings = Settings::load(ctx);
    let caps = Caps {
        max_items: settings.config.max_items,
        max_chars: settings.config.max_chars,
    };
    let report = match project::check_project(ctx, &options(ctx, &settings, state)) {
        Ok(report) => report,
        Err(NoSuchPath(path)) => {
            return ConditionOutcome {
                name: NAME.into(),
                holds: false,
                inconclusive: true,
                report: format!(
                    "project check: the loop's path {path} no longer exists; cancel the loop and start it again with the right --path"
                ),
                fingerprint: format!("missing {path}"),
                record: json!({"missing_path": path}),
            };
        }
    };
    // The previous iteration: the last Stop's check, or the one made at
    // `loop start` (so the first Stop already says what was fixed).
    let previous_record = state
        .history
        .iter()
        .rev()
        .find_map(|entry| entry.conditions.get(NAME))
        .or(state.start_record.as_ref());
    let previous: Vec<Problem> = previous_record
        .and_then(|record| record.get("problems"))
        .and_then(|problems| serde_json::from_value(problems.clone()).ok())
        .unwrap_or_default();
    let mut outcome = outcome(&report, &scope(state), &previous, state.no_warnings, caps);
    if !outcome.holds
        && let Some(record) = previous_record
    {
        let by_file = per_file_changes(record, &outcome.record);
        if !by_file.is_empty() {
            outcome
                .report
                .push_str("\n  By file, since the previous check:\n");
            outcome.report.push_str(&by_file);
        }
    }
    outcome
}

/// Errors and warnings per file in a check record (checked files only).
fn file_counts(record: &Value) -> std::collections::BTreeMap<String, (u64, u64)> {
    record
        .get("files")
        .and_then(Value::as_object)
        .map(|files| {
            files
                .iter()
                .filter(|(_, c)| c.get("errors").is_some())
                .map(|(file, c)| {
                    let n = |key: &str| c.get(key).and_then(Value::as_u64).unwrap_or(0);
                    (file.clone(), (n("errors"), n("warnings")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// "2 errors, 1 warning" or "clean".
fn describe((errors, warnings): (u64, u64)) -> String {
    let mut parts = Vec::new();
    if errors > 0 {
        parts.push(format!(
            "{errors} error{}",
            if errors == 1 { "" } else { "s" }
        ));
    }
    if warnings > 0 {
        parts.push(format!(
            "{warnings} warning{}",
            if warnings == 1 { "" } else { "s" }
        ));
    }
    if parts.is_empty() {
        "clean".into()
    } else {
        parts.join(", ")
    }
}

/// One line per file whose counts changed between two check records:
/// "app/models.py: fixed — 2 errors → clean", "web/a.ts: new — 1 error".
pub fn per_file_changes(before: &Value, after: &Value) -> String {
    let before = file_counts(before);
    let after = file_counts(after);
    let files: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut text = String::new();
    for file in files {
        let old = before.get(file).copied().unwrap_or((0, 0));
        let new = after.get(file).copied().unwrap_or((0, 0));
        if old == new {
            continue;
        }
        let verdict = if new.0 == 0 && old.0 > 0 {
            "fixed"
        } else if old == (0, 0) {
            "new"
        } else if new.0 + new.1 < old.0 + old.1 {
            "better"
        } else {
            "worse"
        };
        let line = if old == (0, 0) {
            format!("    {file}: {verdict} — {}\n", describe(new))
        } else {
            format!(
                "    {file}: {verdict} — {} → {}\n",
                describe(old),
                describe(new)
            )
        };
        text.push_str(&line);
    }
    text.trim_end().to_string()
}

/// The outcome for a finished check: pure over the report, for tests.
pub fn outcome(
    report: &Report,
    scope: &str,
    previous: &[Problem],
    no_warnings: bool,
    caps: Caps,
) -> ConditionOutcome {
    let results = results(report);
    let mut outcome = evaluate_in(scope, &results, previous, no_warnings, caps);
    outcome.name = NAME.into();
    if let Some(record) = outcome.record.as_object_mut() {
        record.insert("checked_files".into(), json!(report.files.len()));
        record.insert("budget_ran_out".into(), json!(report.budget_ran_out));
    }
    outcome
}

/// Per-file results for the loop: files with problems, inconclusive files,
/// and one file per language without a server (clean files add nothing).
fn results(report: &Report) -> Vec<(String, FileResult)> {
    let mut seen_no_server = std::collections::BTreeSet::new();
    let mut results = Vec::new();
    for file in &report.files {
        let server = file.server.clone().unwrap_or_else(|| "ast-grep".into());
        match &file.status {
            Status::Inconclusive(reason) => results.push((
                file.path.clone(),
                FileResult::Inconclusive {
                    server: server.clone(),
                    reason: reason.clone(),
                },
            )),
            Status::NoServer if seen_no_server.insert(file.language.clone()) => {
                let hint = report
                    .no_server
                    .get(&file.language)
                    .cloned()
                    .unwrap_or_default();
                results.push((
                    file.path.clone(),
                    FileResult::Unchecked {
                        reason: format!(
                            "no {} language server installed ({hint}); other {} files are not checked either",
                            file.language, file.language
                        ),
                    },
                ));
            }
            _ => {}
        }
        if !file.items.is_empty() {
            results.push((
                file.path.clone(),
                FileResult::Checked {
                    server,
                    diags: file.items.iter().map(|i| i.diag.clone()).collect(),
                },
            ));
        }
    }
    results
}

/// `loop start`: the first feedback — what the project check finds now,
/// errors first, by file — so the agent knows where to begin.
pub fn first_feedback(ctx: &Ctx, state: &LoopState) -> String {
    let settings = Settings::load(ctx);
    let caps = Caps {
        max_items: settings.config.max_items,
        max_chars: settings.config.max_chars,
    };
    let options = options(ctx, &settings, state);
    let report = match project::check_project(ctx, &options) {
        Ok(report) => report,
        Err(NoSuchPath(path)) => {
            return format!("Project check: no such file or directory: {path}");
        }
    };
    let outcome = outcome(&report, &scope(state), &[], state.no_warnings, caps);
    if let Err(error) = crate::ralph::loops::record_start(ctx, &state.id, outcome.record.clone()) {
        eprintln!("ralph-hooks: warning: cannot keep the start check in the loop: {error:#}");
    }
    let mut text = format!("Project check now: {}\n", report.summary_line());
    if outcome.holds {
        text.push_str("Nothing to fix: the loop completes at the next stop.");
    } else {
        // Where to begin: files with errors first, then by path.
        let mut files: Vec<(String, (u64, u64))> =
            file_counts(&outcome.record).into_iter().collect();
        files.sort_by_key(|(file, (errors, _))| (*errors == 0, file.clone()));
        text.push_str("By file:\n");
        for (file, counts) in files {
            text.push_str(&format!("    {file}: {}\n", describe(counts)));
        }
        text.push_str(outcome.report.trim_end());
    }
    if report.budget_ran_out {
        text.push_str(&format!(
            "\nThe check ran out of its {:.0} s budget; the remaining files are checked at the next stop.",
            settings.config.loop_budget_ms as f64 / 1000.0
        ));
    }
    text
}
