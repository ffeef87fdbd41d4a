//! ast-grep rule findings merged into a file's diagnostics (source
//! `ast-grep`, code the rule id), from the in-process engine
//! ([`crate::astgrep`]): the built-in rules (unless
//! `check.ast_grep.builtin` is false) plus the project's `sgconfig.yml`
//! rules. No separate tool is needed. It runs on its own thread beside the
//! language server and gets its own timeout; a file it cannot scan is
//! skipped with a warning, never a fault.
//!
//! A rule's `note` and `fix` go to Claude with the finding ([`Extras`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Instant;

use crate::astgrep::Finding;
use crate::engine::model::{Diag, diag_from_finding, one_line};
use crate::hook::ctx::Ctx;
use crate::util::fsread::{self, Links, limits};

/// A scan running on its own thread.
pub struct Scan {
    receiver: Receiver<Result<Vec<Finding>, String>>,
    /// The project's rule files that did not load.
    rule_problems: Vec<String>,
}

/// What a finding says beyond its diagnostic line: the rule's note (once per
/// rule) and the fix at each finding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// Rule id → note.
    pub notes: BTreeMap<String, String>,
    /// (line, column, rule id) → the replacement text.
    pub fixes: BTreeMap<(u32, u32, String), String>,
    /// The project's rule files that did not load: Claude is told, so a
    /// "clean" is not read as "the project's rules found nothing" (engine
    /// attack E-8).
    pub rule_problems: Vec<String>,
}

/// The project's sgconfig.yml, if any.
pub fn config_file(project_root: &Path) -> Option<PathBuf> {
    ["sgconfig.yml", "sgconfig.yaml"]
        .iter()
        .map(|name| project_root.join(name))
        .find(|path| path.is_file())
}

/// Starts scanning `file` with the project's rules; `None` when no rule
/// covers its language.
pub fn start(ctx: &Ctx, file: &Path) -> Option<Result<Scan, String>> {
    let rules = crate::engine::run::rule_set(ctx);
    for problem in rules.problems() {
        eprintln!(
            "ralph-hooks: warning: ast-grep: {}",
            crate::util::text::escape_controls(problem)
        );
    }
    let rule_problems = rules.problems().to_vec();
    if !rules.covers(file) {
        if rule_problems.is_empty() {
            return None;
        }
        // A rule that did not load may have been this language's.
        let (sender, receiver) = mpsc::channel();
        let _ = sender.send(Ok(Vec::new()));
        return Some(Ok(Scan {
            receiver,
            rule_problems,
        }));
    }
    let file = file.to_path_buf();
    let (sender, receiver) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("ast-grep".into())
        .spawn(move || {
            let result = match fsread::read_text(&file, limits::SOURCE, Links::Follow) {
                Ok(Some(text)) => match crate::astgrep::scan::parse_hazard(&file, &text) {
                    Some(why) => Err(why),
                    None => Ok(rules.scan_source(&file, &text)),
                },
                Ok(None) => Ok(Vec::new()),
                Err(error) => Err(error.to_string()),
            };
            let _ = sender.send(result);
        });
    Some(
        spawned
            .map(|_| Scan {
                receiver,
                rule_problems,
            })
            .map_err(|error| format!("cannot start the ast-grep thread: {error}")),
    )
}

impl Scan {
    /// Waits until `deadline` for the findings.
    pub fn finish(self, deadline: Instant) -> Result<Vec<Diag>, String> {
        self.finish_with_extras(deadline).map(|(diags, _)| diags)
    }

    /// The findings as diagnostics, and their notes and fixes.
    pub fn finish_with_extras(self, deadline: Instant) -> Result<(Vec<Diag>, Extras), String> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let findings = match self.receiver.recv_timeout(timeout) {
            Ok(result) => result?,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "the scan did not finish within {:.1} s",
                    timeout.as_secs_f64()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => return Err("the scan failed".into()),
        };
        let (diags, mut extras) = convert(&findings);
        extras.rule_problems = self.rule_problems;
        Ok((diags, extras))
    }
}

/// Findings as diagnostics plus their extras.
pub fn convert(findings: &[Finding]) -> (Vec<Diag>, Extras) {
    let mut extras = Extras::default();
    let diags = findings
        .iter()
        .map(|finding| {
            let diag = diag_from_finding(finding);
            if let Some(note) = &finding.note {
                extras
                    .notes
                    .entry(finding.rule_id.clone())
                    .or_insert_with(|| note.trim().to_string());
            }
            if let Some(fix) = &finding.fix {
                extras.fixes.insert(
                    (diag.line, diag.column, finding.rule_id.clone()),
                    fix.replacement.clone(),
                );
            }
            diag
        })
        .collect();
    (diags, extras)
}

/// The lines Claude reads under the findings: each shown rule's note (once)
/// and each shown finding's fix.
pub fn render_extras(shown: &[&Diag], extras: &Extras) -> String {
    let mut notes = Vec::new();
    let mut fixes = Vec::new();
    for diag in shown {
        let Some(rule) = diag.code.as_deref() else {
            continue;
        };
        if diag.source.as_deref() != Some("ast-grep") {
            continue;
        }
        if let Some(note) = extras.notes.get(rule)
            && !notes.iter().any(|(r, _): &(&str, &String)| *r == rule)
        {
            notes.push((rule, note));
        }
        if let Some(fix) = extras
            .fixes
            .get(&(diag.line, diag.column, rule.to_string()))
        {
            fixes.push(format!(
                "- fix for line {} ({rule}): {}",
                diag.line,
                one_line(fix)
            ));
        }
    }
    if notes.is_empty() && fixes.is_empty() && extras.rule_problems.is_empty() {
        return String::new();
    }
    let mut text = String::from("ast-grep rules:");
    for problem in &extras.rule_problems {
        text.push_str(&format!(
            "\n- a project rule did not load, so it checked nothing: {}",
            one_line(problem)
        ));
    }
    for (rule, note) in notes {
        text.push_str(&format!("\n- note ({rule}): {}", one_line(note)));
    }
    for fix in fixes {
        text.push('\n');
        text.push_str(&fix);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::astgrep::{Fix, Level};

    fn finding(line: u32, rule: &str, note: Option<&str>, fix: Option<&str>) -> Finding {
        Finding {
            path: PathBuf::from("a.js"),
            line,
            column: 1,
            end_line: line,
            end_column: 10,
            rule_id: rule.into(),
            severity: Level::Warning,
            message: "Use const".into(),
            note: note.map(str::to_string),
            fix: fix.map(|r| Fix {
                start_byte: 0,
                end_byte: 1,
                replacement: r.into(),
            }),
        }
    }

    #[test]
    fn notes_once_per_rule_and_a_fix_per_finding() {
        let findings = vec![
            finding(
                1,
                "convert-var-to-const",
                Some("var is function-scoped"),
                Some("const a = 1"),
            ),
            finding(
                2,
                "convert-var-to-const",
                Some("var is function-scoped"),
                Some("const b = 2"),
            ),
        ];
        let (diags, extras) = convert(&findings);
        let shown: Vec<&Diag> = diags.iter().collect();
        assert_eq!(
            render_extras(&shown, &extras),
            "ast-grep rules:\n- note (convert-var-to-const): var is function-scoped\n- fix for line 1 (convert-var-to-const): const a = 1\n- fix for line 2 (convert-var-to-const): const b = 2"
        );
        assert_eq!(render_extras(&[], &extras), "");
    }
}
