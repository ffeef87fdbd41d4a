//! A project check's result: every file with its status and problems, and
//! how it reads — the text report (`ralph-hooks check`), the `--json`
//! report, the exit code — the same wherever the check ran (the daemon sends
//! it over its socket as JSON).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::model::{Diag, Severity, one_line};
use crate::util::text::{escape_controls, escape_controls_in_prose};

/// One problem with its end and, when a rule or server offers one, a fix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub diag: Diag,
    pub end_line: u32,
    pub end_column: u32,
    pub note: Option<String>,
    pub fix: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum Status {
    Clean,
    Issues,
    Inconclusive(String),
    NoServer,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Issues => "issues",
            Status::Inconclusive(_) => "inconclusive",
            Status::NoServer => "no_server",
        }
    }
}

/// One file's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileReport {
    /// Relative to the project, `/` separators.
    pub path: String,
    pub absolute: PathBuf,
    pub language: String,
    pub server: Option<String>,
    /// Why this server checks this file (the project's configuration, its
    /// TypeScript version, the first one installed …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_reason: Option<String>,
    pub status: Status,
    pub items: Vec<Item>,
}

/// The whole check.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    pub files: Vec<FileReport>,
    /// Language → install hint, for languages with files but no server.
    pub no_server: BTreeMap<String, String>,
    /// Rule files that could not be used.
    pub rule_problems: Vec<String>,
    /// The server budget ran out before every file was checked.
    pub budget_ran_out: bool,
    /// Where the time went, for `--debug` and the benchmarks.
    #[serde(default)]
    pub timings: Timings,
}

/// Milliseconds spent in each part of a check.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Finding the files.
    pub walk_ms: u64,
    /// Choosing each file's server.
    pub resolve_ms: u64,
    /// The language servers, all at once.
    pub servers_ms: u64,
    /// The ast-grep rules (beside the servers).
    pub ast_grep_ms: u64,
    pub total_ms: u64,
}
impl Report {
    pub fn count(&self, severity: Severity) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.items)
            .filter(|i| i.diag.severity == severity)
            .count()
    }

    pub fn inconclusive(&self) -> usize {
        self.files
            .iter()
            .filter(|f| matches!(f.status, Status::Inconclusive(_)))
            .count()
    }

    /// 0 no errors, 1 errors, 2 no errors but something was not checked
    /// (an inconclusive file, files of a language with no server, or a
    /// project rule file that did not load: its rules checked nothing).
    pub fn exit_code(&self) -> u8 {
        if self.count(Severity::Error) > 0 {
            1
        } else if self.inconclusive() > 0
            || !self.no_server.is_empty()
            || !self.rule_problems.is_empty()
        {
            2
        } else {
            0
        }
    }

    /// `Checked 7 files: 5 errors, 1 warning in 5 files (0 inconclusive, 1 language without a server)`.
    pub fn summary_line(&self) -> String {
        let mut counts = Vec::new();
        for (severity, one, many) in [
            (Severity::Error, "error", "errors"),
            (Severity::Warning, "warning", "warnings"),
            (Severity::Info, "info", "info"),
            (Severity::Hint, "hint", "hints"),
        ] {
            let n = self.count(severity);
            if n > 0 {
                counts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        }
        let with_issues = self.files.iter().filter(|f| !f.items.is_empty()).count();
        let problems = if counts.is_empty() {
            "no problems".to_string()
        } else {
            format!(
                "{} in {with_issues} {}",
                counts.join(", "),
                plural(with_issues, "file")
            )
        };
        let n_no_server = self.no_server.len();
        let rules = match self.rule_problems.len() {
            0 => String::new(),
            n => format!(", {n} {} not loaded", plural(n, "rule")),
        };
        format!(
            "Checked {} {}: {problems} ({} inconclusive, {n_no_server} {} without a server{rules})",
            self.files.len(),
            plural(self.files.len(), "file"),
            self.inconclusive(),
            plural(n_no_server, "language"),
        )
    }

    /// The text report: every problem (errors first, then by path), the
    /// files that could not be checked, then the summary line.
    pub fn render_text(&self) -> String {
        let mut all: Vec<(&FileReport, &Item)> = self
            .files
            .iter()
            .flat_map(|f| f.items.iter().map(move |i| (f, i)))
            .collect();
        all.sort_by(|(fa, a), (fb, b)| {
            (a.diag.severity, &fa.path, a.diag.line, a.diag.column).cmp(&(
                b.diag.severity,
                &fb.path,
                b.diag.line,
                b.diag.column,
            ))
        });
        let mut text = String::new();
        // A rule's note is shown with its first finding only.
        let mut noted = BTreeSet::new();
        for (file, item) in all {
            let _ = writeln!(text, "{}", item.diag.render(&file.path));
            if let Some(note) = &item.note
                && noted.insert(item.diag.code.clone())
            {
                for line in note.lines() {
                    let _ = writeln!(text, "    note: {}", escape_controls_in_prose(line));
                }
            }
            if let Some(fix) = &item.fix {
                let _ = writeln!(text, "    fix: {}", one_line(fix));
            }
        }
        for file in &self.files {
            if let Status::Inconclusive(why) = &file.status {
                let path = escape_controls(&file.path);
                let _ = match &file.server {
                    Some(server) => writeln!(text, "{path}: inconclusive ({server}): {why}"),
                    None => writeln!(text, "{path}: not checked: {why}"),
                };
            }
        }
        for (language, hint) in &self.no_server {
            let _ = writeln!(text, "{language}: no language server installed ({hint})");
        }
        for problem in &self.rule_problems {
            // A rule file's name and id are the repository's text.
            let _ = writeln!(text, "ast-grep: {}", escape_controls(problem));
        }
        if self.budget_ran_out {
            let _ = writeln!(
                text,
                "The time budget ran out: the files marked inconclusive were not checked."
            );
        }
        let _ = writeln!(text, "{}", self.summary_line());
        text
    }

    /// The `--json` report, as the text `check --json` prints.
    pub fn to_json_string(&self) -> serde_json::Result<String> {
        serde_json::to_string(&self.json_view())
    }

    /// The `--json` report as borrowed views, not a JSON tree: a report can
    /// hold tens of thousands of diagnostics.
    fn json_view(&self) -> JsonReport<'_> {
        let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
        for item in self.files.iter().flat_map(|f| &f.items) {
            *by_source
                .entry(item.diag.source.clone().unwrap_or_else(|| "unknown".into()))
                .or_default() += 1;
        }
        let count_status = |word: &str| {
            self.files
                .iter()
                .filter(|f| f.status.word() == word)
                .count()
        };
        let files: Vec<JsonFile<'_>> = self
            .files
            .iter()
            .map(|file| JsonFile {
                path: &file.path,
                language: &file.language,
                server: file.server.as_deref(),
                status: file.status.word(),
                diagnostics: file
                    .items
                    .iter()
                    .map(|item| JsonDiagnostic {
                        line: item.diag.line,
                        column: item.diag.column,
                        end_line: item.end_line,
                        end_column: item.end_column,
                        severity: item.diag.severity.word(),
                        source: item.diag.source.as_deref().map(escape_controls_in_prose),
                        code: item.diag.code.as_deref().map(escape_controls_in_prose),
                        message: escape_controls_in_prose(&item.diag.message),
                        fix: item.fix.as_deref().map(escape_controls_in_prose),
                        note: item.note.as_deref().map(escape_controls_in_prose),
                    })
                    .collect(),
                server_reason: file.server_reason.as_deref(),
                reason: match &file.status {
                    Status::Inconclusive(why) => Some(why),
                    _ => None,
                },
            })
            .collect();
        JsonReport {
            summary: json!({
                "files": self.files.len(),
                "clean": count_status("clean"),
                "with_issues": self.files.iter().filter(|f| !f.items.is_empty()).count(),
                "inconclusive": self.inconclusive(),
                "no_server": self.no_server.len(),
                "errors": self.count(Severity::Error),
                "warnings": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
                "hints": self.count(Severity::Hint),
                "by_source": by_source,
            }),
            files,
            rule_problems: &self.rule_problems,
        }
    }
}

/// `check --json`: its fields in this order.
#[derive(Serialize)]
struct JsonReport<'a> {
    summary: Value,
    files: Vec<JsonFile<'a>>,
    rule_problems: &'a [String],
}

#[derive(Serialize)]
struct JsonFile<'a> {
    path: &'a str,
    language: &'a str,
    server: Option<&'a str>,
    status: &'static str,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a String>,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    severity: &'static str,
    // The server's and the rules' text, control characters escaped (a
    // reader of the JSON shows it to Claude or a terminal).
    source: Option<Cow<'a, str>>,
    code: Option<Cow<'a, str>>,
    message: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<Cow<'a, str>>,
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
