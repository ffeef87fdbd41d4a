//! The loop's "no errors in the files it touched" condition, evaluated at
//! each Stop: every touched file is checked fresh (servers started now, not
//! the cached baseline) within a total budget.
//!
//! - It holds when no checked file has errors (or warnings, for a loop
//!   started with `--no-warnings`) and every file could be checked: an
//!   inconclusive check never completes a loop.
//! - The report lists the remaining problems by priority (errors, then
//!   warnings) and what was fixed or is new since the previous iteration.
//! - The record (kept in the loop's history) has counts per file and the
//!   problems themselves, which the next iteration compares against.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::ast_grep;
use super::baseline::{self, FileEntry, content_hash};
use super::check::{self, Resolved};
use super::model::{Diag, Severity};
use super::report::{self, Caps};
use super::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::ralph::loop_ctl::ConditionOutcome;
use crate::ralph::loop_state::LoopState;
use crate::util::fsread::{self, Links, limits};
use crate::util::text::fnv1a;

pub const NAME: &str = "diagnostics";

/// Problems kept in the history record per iteration.
const MAX_RECORDED: usize = 100;
/// Lines of "fixed" and "new" listed in the report.
const MAX_CHANGE_LINES: usize = 5;

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

pub fn loop_condition(ctx: &Ctx, state: &LoopState) -> ConditionOutcome {
    let settings = Settings::load(ctx);
    let results = check_files(ctx, &settings, state);
    let previous: Vec<Problem> = state
        .history
        .last()
        .and_then(|entry| entry.conditions.get(NAME))
        .and_then(|record| record.get("problems"))
        .and_then(|problems| serde_json::from_value(problems.clone()).ok())
        .unwrap_or_default();
    evaluate(
        &results,
        &previous,
        state.no_warnings,
        Caps {
            max_items: settings.config.max_items,
            max_chars: settings.config.max_chars,
        },
    )
}

/// Checks every touched file that still exists, sharing servers between
/// files, within the loop budget; saves fresh results as the baseline.
fn check_files(ctx: &Ctx, settings: &Settings, state: &LoopState) -> Vec<(String, FileResult)> {
    let budget_end = Instant::now() + Duration::from_millis(settings.config.loop_budget_ms);
    let mut pool = crate::daemon::pool(ctx);
    let mut results = Vec::new();
    let mut fresh_entries = Vec::new();
    let mut grace = Duration::ZERO;
    for file in &state.touched_files {
        let path = PathBuf::from(file);
        let display = check::display_path(ctx, &path);
        if !path.is_file() {
            ctx.debug(format_args!("{display}: gone since the loop touched it"));
            continue;
        }
        let target = match check::resolve(ctx, settings, &path) {
            Resolved::Unsupported | Resolved::Skipped(_) => continue,
            Resolved::NotInstalled { language, hint, .. } => {
                results.push((
                    display,
                    FileResult::Unchecked {
                        reason: format!("no {language} language server installed ({hint})"),
                    },
                ));
                continue;
            }
            Resolved::Target(target) => target,
        };
        let server = target.server.name.clone();
        grace = grace.max(settings.shutdown_grace(target.server));
        let now = Instant::now();
        if now >= budget_end {
            results.push((
                display,
                FileResult::Inconclusive {
                    server,
                    reason: format!(
                        "not checked: the {:.0} s diagnostics budget of this Stop ran out",
                        settings.config.loop_budget_ms as f64 / 1000.0
                    ),
                },
            ));
            continue;
        }
        let deadline = (now + settings.file_timeout(target.server)).min(budget_end);
        let text = match fsread::read_text(&path, limits::SOURCE, Links::Follow) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(error) => {
                results.push((
                    display,
                    FileResult::Inconclusive {
                        server,
                        reason: format!("not read: {}", error.reason()),
                    },
                ));
                continue;
            }
        };
        let scan = if settings.config.ast_grep {
            ast_grep::start(&ctx.project_root, &path)
        } else {
            None
        };
        let started = Instant::now();
        let result = check::lsp_diagnostics(
            &mut pool,
            &target,
            &path,
            &text,
            settings.config.min_severity,
            deadline,
        );
        let findings = scan.and_then(|scan| {
            let ast_deadline = started + Duration::from_millis(settings.config.ast_grep_timeout_ms);
            match scan.and_then(|scan| scan.finish(ast_deadline)) {
                Ok(found) => Some(found),
                Err(why) => {
                    eprintln!("ralph-hooks: warning: ast-grep skipped for {display}: {why}");
                    None
                }
            }
        });
        ctx.debug(format_args!(
            "{display}: {server} answered in {} ms",
            started.elapsed().as_millis()
        ));
        match result {
            Ok(mut diags) => {
                diags.extend(findings.iter().flatten().cloned());
                check::sort_and_dedup(&mut diags);
                fresh_entries.push((
                    display.clone(),
                    FileEntry {
                        content_hash: content_hash(&text),
                        checked_at: ctx.now(),
                        server: server.clone(),
                        ast_grep: findings.is_some(),
                        diagnostics: diags.clone(),
                    },
                ));
                results.push((display, FileResult::Checked { server, diags }));
            }
            Err(error) if check::looks_not_installed(&error) => results.push((
                display,
                FileResult::Unchecked {
                    reason: format!(
                        "{server} is not really installed ({})",
                        target.server.install_hint
                    ),
                },
            )),
            Err(error) => results.push((
                display,
                FileResult::Inconclusive {
                    server,
                    reason: error.to_string(),
                },
            )),
        }
    }
    pool.close(grace);
    if let Err(error) = baseline::save_entries(ctx, fresh_entries) {
        eprintln!("ralph-hooks: warning: cannot save the diagnostics baseline: {error:#}");
    }
    results
}

/// The condition from the per-file results: pure, for tests.
pub fn evaluate(
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
        name: NAME.into(),
        holds,
        inconclusive: !inconclusive.is_empty(),
        report,
        fingerprint: format!("{:016x}", fnv1a(fingerprint_text.as_bytes())),
        record,
    }
}

#[allow(clippy::too_many_arguments)]
fn render_report(
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
            "diagnostics: the files this loop touched still have {} (the loop needs no {what}). Fix them, errors first:",
            report::counts(&diags)
        );
    } else if !problems.is_empty() {
        let _ = writeln!(
            text,
            "diagnostics: {} remain (allowed; fix them if cheap):",
            report::counts(&diags)
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
    for line in report::capped_lines(&rendered, caps, &mut used).lines() {
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
