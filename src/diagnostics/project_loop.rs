//! The goal-only loop's condition (issue 11): "no errors in the project"
//! (or under the loop's `--path`s), from [`super::project`] — language
//! servers through the warm daemon plus ast-grep — within the loop budget.
//! The report and history record are [`super::loop_condition`]'s: remaining
//! problems by priority, what was fixed and what is new since the previous
//! iteration, counts per file and severity.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

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
    let previous: Vec<Problem> = state
        .history
        .last()
        .and_then(|entry| entry.conditions.get(NAME))
        .and_then(|record| record.get("problems"))
        .and_then(|problems| serde_json::from_value(problems.clone()).ok())
        .unwrap_or_default();
    outcome(&report, &scope(state), &previous, state.no_warnings, caps)
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
    let mut text = format!("Project check now: {}\n", report.summary_line());
    if outcome.holds {
        text.push_str("Nothing to fix: the loop completes at the next stop.");
    } else {
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
