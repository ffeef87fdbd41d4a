//! The loop's project condition, evaluated at each Stop from a project
//! check's [`Report`]: "no errors in the project" (a goal-only loop, or
//! `--diagnostics`), under the loop's `--path`s, or in the files the loop
//! touched (`--diagnostics=touched`).
//!
//! - It holds when no checked file has errors (or warnings, for a loop
//!   started with `--no-warnings`) and every file could be checked: an
//!   inconclusive file (timeout, crash, the budget ran out before it was
//!   reached) never completes a loop.
//! - The report lists the remaining problems by priority (errors, then
//!   warnings), what was fixed or is new since the previous iteration, and
//!   per file how the counts moved.
//! - The record (kept in the loop's history) has counts per file and the
//!   problems themselves, which the next iteration compares against.
//!
//! Pure over the report: the check itself runs where the servers are (the
//! daemon, or a process of the caller's choosing).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::files::NoSuchPath;
use super::listing::{self, Caps};
use super::model::{Diag, Severity};
use super::report::{Report, Status};
use super::run::Options;
use super::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::loop_ctl::ConditionOutcome;
use crate::ralph::loop_state::LoopState;
use crate::util::text::fnv1a;

/// The history keys of the touched-files and the project conditions live
/// with the loop's state, where the dashboard reads them too.
pub use crate::ralph::loop_state::{PROJECT, TOUCHED};
/// Problems kept in the history record per iteration.
const MAX_RECORDED: usize = 100;
/// Lines of "fixed" and "new" listed in the report.
const MAX_CHANGE_LINES: usize = 5;
/// Problems listed when a loop ends FAILED (then "… and N more").
const REMAINING_CAPS: Caps = Caps {
    max_items: 10,
    max_chars: 2_000,
};

/// How one touched file fared.
#[derive(Debug, Clone)]
pub enum FileResult {
    Checked {
        server: String,
        diags: Vec<Diag>,
    },
    Inconclusive {
        server: String,
        reason: String,
    },
    /// Its server is not installed: it cannot count either way.
    Unchecked {
        reason: String,
    },
}

/// One remaining problem, as the history keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

impl Problem {
    fn from_diag(file: &str, diag: &Diag) -> Problem {
        Problem {
            file: file.to_string(),
            line: diag.line,
            column: diag.column,
            severity: diag.severity,
            source: diag.source.clone(),
            code: diag.code.clone(),
            message: diag.message.clone(),
        }
    }

    fn diag(&self) -> Diag {
        Diag {
            line: self.line,
            column: self.column,
            severity: self.severity,
            source: self.source.clone(),
            code: self.code.clone(),
            message: self.message.clone(),
        }
    }

    /// Identity across iterations: lines move as code is edited.
    fn same_problem(&self, other: &Problem) -> bool {
        self.file == other.file && self.diag().same_problem(&other.diag())
    }

    fn render(&self) -> String {
        self.diag().render(&self.file)
    }
}

/// The condition from the per-file results: pure, for tests.
pub fn evaluate(
    results: &[(String, FileResult)],
    previous: &[Problem],
    no_warnings: bool,
    caps: Caps,
) -> ConditionOutcome {
    let mut outcome = evaluate_in(
        "the files this loop touched still have",
        results,
        previous,
        no_warnings,
        caps,
    );
    outcome.name = TOUCHED.into();
    outcome
}

/// [`evaluate`] for any scope; `scope` opens the report's first line, verb
/// included (e.g. "the project still has").
pub fn evaluate_in(
    scope: &str,
    results: &[(String, FileResult)],
    previous: &[Problem],
    no_warnings: bool,
    caps: Caps,
) -> ConditionOutcome {
    let mut problems: Vec<Problem> = Vec::new();
    let mut per_file = BTreeMap::new();
    let mut inconclusive = Vec::new();
    let mut unchecked = Vec::new();
    for (file, result) in results {
        match result {
            FileResult::Checked { diags, .. } => {
                let n_errors = diags
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .count();
                let n_warnings = diags
                    .iter()
                    .filter(|d| d.severity == Severity::Warning)
                    .count();
                per_file.insert(
                    file.clone(),
                    json!({"errors": n_errors, "warnings": n_warnings}),
                );
                problems.extend(
                    diags
                        .iter()
                        .filter(|d| d.severity <= Severity::Warning)
                        .map(|d| Problem::from_diag(file, d)),
                );
            }
            FileResult::Inconclusive { server, reason } => {
                per_file.insert(file.clone(), json!({"inconclusive": true}));
                inconclusive.push(format!("{file} ({server}): {reason}"));
            }
            FileResult::Unchecked { reason } => {
                per_file.insert(file.clone(), json!({"unchecked": true}));
                unchecked.push(format!("{file}: {reason}"));
            }
        }
    }
    problems.sort_by(|a, b| {
        (a.severity, &a.file, a.line, a.column).cmp(&(b.severity, &b.file, b.line, b.column))
    });
    let failing = |p: &&Problem| {
        p.severity == Severity::Error || (no_warnings && p.severity == Severity::Warning)
    };
    let n_failing = problems.iter().filter(failing).count();
    let holds = n_failing == 0 && inconclusive.is_empty();

    let fixed: Vec<&Problem> = previous
        .iter()
        .filter(|old| !problems.iter().any(|now| now.same_problem(old)))
        .collect();
    let new: Vec<&Problem> = if previous.is_empty() {
        Vec::new()
    } else {
        problems
            .iter()
            .filter(|now| !previous.iter().any(|old| old.same_problem(now)))
            .collect()
    };

    let report = if holds {
        String::new()
    } else {
        render_report(
            scope,
            &problems,
            n_failing,
            no_warnings,
            &fixed,
            &new,
            &inconclusive,
            &unchecked,
            caps,
        )
    };
    let mut fingerprint_text = String::new();
    for problem in &problems {
        let _ = writeln!(
            fingerprint_text,
            "{}|{:?}|{:?}|{:?}|{}",
            problem.file, problem.severity, problem.source, problem.code, problem.message
        );
    }
    for line in &inconclusive {
        let _ = writeln!(
            fingerprint_text,
            "inconclusive {}",
            line.split(':').next().unwrap_or("")
        );
    }
    let recorded: Vec<&Problem> = problems.iter().take(MAX_RECORDED).collect();
    let record = json!({
        "files": per_file,
        "problems": recorded,
        "inconclusive": inconclusive,
        "unchecked": unchecked,
        "fixed_since_previous": fixed.len(),
        "new_since_previous": new.len(),
    });
    ConditionOutcome {
        name: PROJECT.into(),
        holds,
        inconclusive: !inconclusive.is_empty(),
        report,
        fingerprint: format!("{:016x}", fnv1a(fingerprint_text.as_bytes())),
        record,
        remaining: if holds {
            String::new()
        } else {
            render_remaining(&problems, &inconclusive)
        },
        notes: Vec::new(),
    }
}

/// The problems still open, as `check` lists them, bounded: the first
/// [`REMAINING_CAPS`] and a count of the rest; then the files that could
/// not be checked. For the message of a loop that ends FAILED.
fn render_remaining(problems: &[Problem], inconclusive: &[String]) -> String {
    let mut text = String::new();
    if !problems.is_empty() {
        let diags: Vec<Diag> = problems.iter().map(Problem::diag).collect();
        let _ = writeln!(text, "{} remain:", listing::counts(&diags));
        let rendered: Vec<(&Diag, String)> = problems
            .iter()
            .zip(&diags)
            .map(|(problem, diag)| (diag, problem.render()))
            .collect();
        let mut used = Caps {
            max_items: 0,
            max_chars: 0,
        };
        for line in listing::capped_lines(&rendered, REMAINING_CAPS, &mut used).lines() {
            let _ = writeln!(text, "    {line}");
        }
    }
    if !inconclusive.is_empty() {
        let _ = writeln!(
            text,
            "{} file(s) could not be checked (never counted as clean):",
            inconclusive.len()
        );
        for line in inconclusive.iter().take(MAX_CHANGE_LINES) {
            let _ = writeln!(text, "    {line}");
        }
        if inconclusive.len() > MAX_CHANGE_LINES {
            let _ = writeln!(
                text,
                "    … and {} more",
                inconclusive.len() - MAX_CHANGE_LINES
            );
        }
    }
    text.trim_end().to_string()
}

#[allow(clippy::too_many_arguments)]
fn render_report(
    scope: &str,
    problems: &[Problem],
    n_failing: usize,
    no_warnings: bool,
    fixed: &[&Problem],
    new: &[&Problem],
    inconclusive: &[String],
    unchecked: &[String],
    caps: Caps,
) -> String {
    let mut text = String::new();
    let diags: Vec<Diag> = problems.iter().map(Problem::diag).collect();
    if n_failing > 0 {
        let what = if no_warnings {
            "errors and warnings"
        } else {
            "errors"
        };
        let _ = writeln!(
            text,
            "diagnostics: {scope} {} (the loop needs no {what}). Fix them, errors first:",
            listing::counts(&diags)
        );
    } else if !problems.is_empty() {
        let _ = writeln!(
            text,
            "diagnostics: {} remain (allowed; fix them if cheap):",
            listing::counts(&diags)
        );
    } else {
        let _ = writeln!(
            text,
            "diagnostics: inconclusive — {} file(s) could not be checked, and an unchecked file never counts as clean:",
            inconclusive.len()
        );
    }
    let rendered: Vec<(&Diag, String)> = problems
        .iter()
        .zip(&diags)
        .map(|(problem, diag)| (diag, problem.render()))
        .collect();
    let mut used = Caps {
        max_items: 0,
        max_chars: 0,
    };
    for line in listing::capped_lines(&rendered, caps, &mut used).lines() {
        let _ = writeln!(text, "    {line}");
    }
    let list = |title: &str, items: &[&Problem], text: &mut String| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(text, "  {title} ({}):", items.len());
        for problem in items.iter().take(MAX_CHANGE_LINES) {
            let _ = writeln!(text, "    {}", problem.render());
        }
        if items.len() > MAX_CHANGE_LINES {
            let _ = writeln!(text, "    … and {} more", items.len() - MAX_CHANGE_LINES);
        }
    };
    list("Fixed since the previous iteration", fixed, &mut text);
    list("New since the previous iteration", new, &mut text);
    if !inconclusive.is_empty() {
        if n_failing > 0 || !problems.is_empty() {
            let _ = writeln!(
                text,
                "  Inconclusive — could not be checked, so the loop cannot count them as clean:"
            );
        }
        for line in inconclusive {
            let _ = writeln!(text, "    {line}");
        }
    }
    if !unchecked.is_empty() {
        let _ = writeln!(text, "  Not checked (no server):");
        for line in unchecked {
            let _ = writeln!(text, "    {line}");
        }
    }
    text.trim_end().to_string()
}

/// What a loop's diagnostics condition covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The whole project, or the loop's `--path`s.
    Project,
    /// The files the loop touched.
    Touched,
}

impl Scope {
    fn key(self) -> &'static str {
        match self {
            Scope::Project => PROJECT,
            Scope::Touched => TOUCHED,
        }
    }
}

/// The check a loop runs for `scope`: its files, warnings and errors, the
/// loop budget. `None` when there is nothing to check (no file touched yet,
/// or every touched file is gone).
pub fn options(ctx: &Ctx, settings: &Settings, state: &LoopState, scope: Scope) -> Option<Options> {
    let paths: Vec<PathBuf> = match scope {
        Scope::Project => state
            .paths
            .iter()
            .map(|p| ctx.project_root.join(p))
            .collect(),
        Scope::Touched => {
            let touched: Vec<PathBuf> = state
                .touched_files
                .iter()
                .map(|file| ctx.project_root.join(file))
                .filter(|path| path.is_file())
                // A file reached through a folder link out of the project
                // is never read by a project check (`files::collect`
                // refuses it): the edit's own check reported it, and it is
                // not the loop's to hold inconclusive for ever (re-attack
                // RE-16).
                .filter(|path| crate::engine::files::outside_project(ctx, path).is_none())
                .collect();
            if touched.is_empty() {
                return None;
            }
            touched
        }
    };
    Some(Options {
        paths,
        min_severity: Severity::Warning,
        ast_grep: true,
        budget: Some(Duration::from_millis(settings.config.loop_budget_ms)),
        caller_env: None,
    })
}

fn scope_words(state: &LoopState, scope: Scope) -> String {
    match scope {
        Scope::Touched => "the files this loop touched still have".into(),
        Scope::Project if state.paths.is_empty() => "the project still has".into(),
        Scope::Project => format!("{} still has", state.paths.join(", ")),
    }
}

/// Caps for the follow-up prompt's lists, from the diagnostics settings.
pub fn caps(settings: &Settings) -> Caps {
    Caps {
        max_items: settings.config.max_items,
        max_chars: settings.config.max_chars,
    }
}

/// A Stop's condition from its check (`None`: nothing to check, which
/// holds).
pub fn condition(
    state: &LoopState,
    scope: Scope,
    checked: Option<Result<Report, NoSuchPath>>,
    caps: Caps,
) -> ConditionOutcome {
    let key = scope.key();
    let report = match checked {
        None => {
            return ConditionOutcome {
                name: key.into(),
                holds: true,
                inconclusive: false,
                report: String::new(),
                fingerprint: "nothing to check".into(),
                record: json!({"files": {}, "problems": []}),
                ..ConditionOutcome::default()
            };
        }
        Some(Ok(report)) => report,
        Some(Err(NoSuchPath(path))) => {
            return ConditionOutcome {
                name: key.into(),
                holds: false,
                inconclusive: true,
                report: format!(
                    "project check: the loop's path {path} no longer exists; cancel the loop and start it again with the right --path"
                ),
                fingerprint: format!("missing {path}"),
                record: json!({"missing_path": path}),
                ..ConditionOutcome::default()
            };
        }
    };
    // The previous iteration: the last Stop's check, or the one made at
    // `loop start` (so the first Stop already says what was fixed).
    let previous_record = state
        .history
        .iter()
        .rev()
        .find_map(|entry| entry.conditions.get(key))
        .or(state
            .start_record
            .as_ref()
            .filter(|_| scope == Scope::Project));
    let previous: Vec<Problem> = previous_record
        .and_then(|record| record.get("problems"))
        .and_then(|problems| serde_json::from_value(problems.clone()).ok())
        .unwrap_or_default();
    let mut outcome = outcome(
        &report,
        &scope_words(state, scope),
        &previous,
        state.no_warnings,
        caps,
        scope == Scope::Touched,
    );
    outcome.name = key.into();
    // The follow-up prompt says it too (`loop start` already has).
    if !outcome.report.is_empty() && !outcome.notes.is_empty() {
        outcome.report.push_str("\n  ast-grep rules not loaded:");
        for note in &outcome.notes {
            outcome.report.push_str("\n    ");
            outcome.report.push_str(note);
        }
    }
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
/// `every_file` records clean files too (a few touched files; a project's
/// thousands of clean files would only bloat the history).
pub fn outcome(
    report: &Report,
    scope: &str,
    previous: &[Problem],
    no_warnings: bool,
    caps: Caps,
    every_file: bool,
) -> ConditionOutcome {
    let results = results(report, every_file);
    let mut outcome = evaluate_in(scope, &results, previous, no_warnings, caps);
    outcome.name = PROJECT.into();
    if let Some(record) = outcome.record.as_object_mut() {
        record.insert("checked_files".into(), json!(report.files.len()));
        record.insert("budget_ran_out".into(), json!(report.budget_ran_out));
        // Which servers answered: a completion receipt names them (and
        // their versions), and `verify` asks the same ones.
        let servers: std::collections::BTreeSet<&str> = report
            .files
            .iter()
            .filter(|file| matches!(file.status, Status::Clean | Status::Issues))
            .filter_map(|file| file.server.as_deref())
            .collect();
        record.insert("servers".into(), json!(servers));
    }
    // A project rule file that does not load is said at every Stop (and
    // kept in the record, so the events log has it), holding or not.
    if !report.rule_problems.is_empty() {
        outcome.notes = rule_notes(&report.rule_problems);
        if let Some(record) = outcome.record.as_object_mut() {
            record.insert("rule_problems".into(), json!(outcome.notes));
        }
        // The rules that did not load checked nothing: the condition is
        // not known to hold, as `check` exits 2 for it (re-attack RE-5: a
        // loop COMPLETED "no errors" over what the rule finds).
        if outcome.holds {
            outcome.holds = false;
            outcome.inconclusive = true;
            outcome.report = format!(
                "A project ast-grep rule did not load, so it checked nothing: fix it (or remove it) so the rules can run.\n{}",
                outcome.notes.join("\n")
            );
            outcome.fingerprint = format!("rules not loaded: {}", outcome.notes.join("; "));
        }
    }
    outcome
}

/// The ast-grep rule files that did not load, one line each, safe to show
/// (their text comes from files and parsers).
pub fn rule_notes(problems: &[String]) -> Vec<String> {
    problems
        .iter()
        .map(|problem| {
            let line = problem.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("ast-grep: {}", crate::util::text::escape_controls(&line))
        })
        .collect()
}

/// Per-file results for the loop: files with problems, inconclusive files,
/// and one file per language without a server; clean files only with
/// `every_file`.
fn results(report: &Report, every_file: bool) -> Vec<(String, FileResult)> {
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
        let checked = matches!(file.status, Status::Clean | Status::Issues);
        if !file.items.is_empty() || (every_file && checked) {
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
/// errors first, by file — so the agent knows where to begin; and the record
/// the first Stop compares against.
pub fn first_feedback(
    state: &LoopState,
    checked: Result<Report, NoSuchPath>,
    caps: Caps,
    budget: Option<Duration>,
) -> (String, Option<Value>) {
    let report = match checked {
        Ok(report) => report,
        Err(NoSuchPath(path)) => {
            return (
                format!("Project check: no such file or directory: {path}"),
                None,
            );
        }
    };
    let outcome = outcome(
        &report,
        &scope_words(state, Scope::Project),
        &[],
        state.no_warnings,
        caps,
        false,
    );
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
        let not_yet = report
            .files
            .iter()
            .filter(|f| matches!(&f.status, Status::Inconclusive(why) if why.starts_with("not checked yet")))
            .count();
        text.push_str(&format!(
            "\nThe check ran out of its {} budget: {not_yet} file(s) not checked yet. The daemon's servers go on checking them, and the next stop gets the rest.",
            budget.map_or_else(|| "time".into(), |b| format!("{:.0} s", b.as_secs_f64()))
        ));
    }
    (text, Some(outcome.record))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Caps = Caps {
        max_items: 20,
        max_chars: 4_000,
    };

    fn diag(line: u32, severity: Severity, message: &str) -> Diag {
        Diag {
            line,
            column: 1,
            severity,
            source: Some("Pyright".into()),
            code: None,
            message: message.into(),
        }
    }

    fn checked(file: &str, diags: Vec<Diag>) -> (String, FileResult) {
        (
            file.into(),
            FileResult::Checked {
                server: "pyright".into(),
                diags,
            },
        )
    }

    #[test]
    fn errors_fail_warnings_pass_unless_no_warnings() {
        let results = vec![checked("a.py", vec![diag(1, Severity::Warning, "w")])];
        assert!(evaluate(&results, &[], false, CAPS).holds);
        let strict = evaluate(&results, &[], true, CAPS);
        assert!(!strict.holds);
        assert!(
            strict.report.contains("a.py:1:1 warning [Pyright] w"),
            "{}",
            strict.report
        );

        let results = vec![checked(
            "a.py",
            vec![
                diag(4, Severity::Error, "bad"),
                diag(1, Severity::Warning, "w"),
            ],
        )];
        let outcome = evaluate(&results, &[], false, CAPS);
        assert!(!outcome.holds);
        assert!(!outcome.inconclusive);
        let error_at = outcome.report.find("error [Pyright] bad").unwrap();
        let warning_at = outcome.report.find("warning [Pyright] w").unwrap();
        assert!(error_at < warning_at, "errors first:\n{}", outcome.report);
        assert_eq!(
            outcome.record["files"]["a.py"],
            json!({"errors": 1, "warnings": 1})
        );
    }

    #[test]
    fn inconclusive_never_holds() {
        let results = vec![
            checked("a.py", vec![]),
            (
                "b.py".into(),
                FileResult::Inconclusive {
                    server: "pyright".into(),
                    reason: "no result within 5.0 s".into(),
                },
            ),
        ];
        let outcome = evaluate(&results, &[], false, CAPS);
        assert!(!outcome.holds);
        assert!(outcome.inconclusive);
        assert!(
            outcome
                .report
                .starts_with("diagnostics: inconclusive — 1 file(s) could not be checked"),
            "{}",
            outcome.report
        );
        assert!(
            outcome.report.contains("b.py (pyright): no result"),
            "{}",
            outcome.report
        );
    }

    #[test]
    fn fixed_and_new_since_the_previous_iteration() {
        let previous = vec![
            Problem::from_diag("a.py", &diag(4, Severity::Error, "old one")),
            Problem::from_diag("a.py", &diag(9, Severity::Error, "stays")),
        ];
        // "stays" moved from line 9 to 7: the same problem, not new.
        let results = vec![checked(
            "a.py",
            vec![
                diag(7, Severity::Error, "stays"),
                diag(2, Severity::Error, "fresh"),
            ],
        )];
        let outcome = evaluate(&results, &previous, false, CAPS);
        assert!(
            outcome.report.contains(
                "Fixed since the previous iteration (1):\n    a.py:4:1 error [Pyright] old one"
            ),
            "{}",
            outcome.report
        );
        assert!(
            outcome.report.contains(
                "New since the previous iteration (1):\n    a.py:2:1 error [Pyright] fresh"
            ),
            "{}",
            outcome.report
        );
        assert_eq!(outcome.record["fixed_since_previous"], 1);
    }

    #[test]
    fn unchecked_files_do_not_block_and_nothing_touched_holds() {
        let results = vec![(
            "main.go".to_string(),
            FileResult::Unchecked {
                reason: "no Go language server installed".into(),
            },
        )];
        assert!(evaluate(&results, &[], false, CAPS).holds);
        assert!(evaluate(&[], &[], false, CAPS).holds);
    }

    #[test]
    fn fingerprint_ignores_line_moves() {
        let a = evaluate(
            &[checked("a.py", vec![diag(3, Severity::Error, "e")])],
            &[],
            false,
            CAPS,
        );
        let b = evaluate(
            &[checked("a.py", vec![diag(5, Severity::Error, "e")])],
            &[],
            false,
            CAPS,
        );
        assert_eq!(a.fingerprint, b.fingerprint);
    }
}
