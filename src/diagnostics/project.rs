//! Every problem in the project (or under given paths) in one report:
//! `ralph-hooks check` and the goal-only loop's condition (issue 11).
//!
//! - Files: walked the way ripgrep does (the `ignore` crate: `.gitignore`,
//!   `.ignore`, hidden files skipped), then the configured include/exclude;
//!   `node_modules/`, `target/`, `.git/`, `.venv/` and the state root are
//!   never checked. A file is in the report when a configured server or an
//!   ast-grep rule handles it.
//! - Language servers: through the warm daemon when it runs (one server per
//!   language and root, kept warm across files and runs), else in-process;
//!   a file whose server timed out or crashed is inconclusive, never clean;
//!   a language whose server is not installed is listed once with its hint.
//! - ast-grep: the in-process engine ([`crate::astgrep`]) over all files in
//!   parallel, built-in rules plus the project's `sgconfig.yml` rules.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ast_grep::one_line;
use super::check::{self, Resolved};
use super::model::{Diag, Severity, utf16_to_char_column};
use super::settings::Settings;
use crate::astgrep::{Finding, Lang, LoadOptions, RuleSet};
use crate::hook::ctx::Ctx;
use crate::lsp::Pool;
use crate::util::fsread::{self, Links, limits};

/// Folders never checked, whatever the ignore files say.
const NEVER: &[&str] = &[
    "node_modules",
    "target",
    ".git",
    ".venv",
    "venv",
    "__pycache__",
];

/// What to check.
#[derive(Clone, Debug)]
pub struct Options {
    /// Files or folders (absolute or relative to the current directory);
    /// empty means the whole project.
    pub paths: Vec<PathBuf>,
    /// Report problems at or above this severity.
    pub min_severity: Severity,
    /// Run the ast-grep rules (on top of `diagnostics.ast_grep`).
    pub ast_grep: bool,
    /// Total time for the language servers; files left when it runs out
    /// are inconclusive.
    pub budget: Option<Duration>,
}

/// One problem with its end and, when a rule or server offers one, a fix.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub diag: Diag,
    pub end_line: u32,
    pub end_column: u32,
    pub note: Option<String>,
    pub fix: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug)]
pub struct FileReport {
    /// Relative to the project, `/` separators.
    pub path: String,
    pub absolute: PathBuf,
    pub language: String,
    pub server: Option<String>,
    pub status: Status,
    pub items: Vec<Item>,
}

/// The whole check.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub files: Vec<FileReport>,
    /// Language → install hint, for languages with files but no server.
    pub no_server: BTreeMap<String, String>,
    /// Rule files that could not be used.
    pub rule_problems: Vec<String>,
    /// The server budget ran out before every file was checked.
    pub budget_ran_out: bool,
}

/// A path argument that does not exist.
#[derive(Debug)]
pub struct NoSuchPath(pub String);

/// The `check` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
struct CheckConfig {
    ast_grep: AstGrepConfig,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default)]
struct AstGrepConfig {
    /// `check.ast_grep.builtin: false` turns the built-in rules off.
    builtin: bool,
}

impl Default for AstGrepConfig {
    fn default() -> Self {
        AstGrepConfig { builtin: true }
    }
}

/// The project's ast-grep rules: built-in ones (unless
/// `check.ast_grep.builtin` is false) plus its `sgconfig.yml` rules.
pub fn rule_set(ctx: &Ctx) -> RuleSet {
    let config = ctx
        .config()
        .section::<CheckConfig>("check")
        .unwrap_or_else(|error| {
            eprintln!("ralph-hooks: warning: using default check settings: {error:#}");
            CheckConfig::default()
        });
    RuleSet::load(
        &ctx.project_root,
        &LoadOptions {
            builtin: config.ast_grep.builtin,
        },
    )
}

/// Checks the project (or `options.paths`).
pub fn check_project(ctx: &Ctx, options: &Options) -> Result<Report, NoSuchPath> {
    let settings = Settings::load(ctx);
    let rules = (options.ast_grep && settings.config.ast_grep).then(|| rule_set(ctx));
    let files = collect_files(ctx, &settings, rules.as_ref(), &options.paths)?;
    let mut pool = crate::daemon::pool(ctx);
    let report = check_files(ctx, &settings, rules.as_ref(), &files, options, &mut pool);
    pool.close(Duration::from_millis(settings.config.shutdown_grace_ms));
    Ok(report)
}

/// The files to check: every file under the paths (or the project) that a
/// configured server or a rule handles.
pub fn collect_files(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    paths: &[PathBuf],
) -> Result<Vec<PathBuf>, NoSuchPath> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    let mut roots = Vec::new();
    for path in paths {
        let absolute = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        if !absolute.exists() {
            return Err(NoSuchPath(path.display().to_string()));
        }
        roots.push(absolute);
    }
    if roots.is_empty() {
        roots.push(ctx.project_root.clone());
    }
    let state_root = ctx.state_root.clone();
    let mut files = BTreeSet::new();
    for root in &roots {
        if root.is_file() {
            if handled(ctx, settings, rules, root) {
                files.insert(root.clone());
            }
            continue;
        }
        let state_root = state_root.clone();
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .filter_entry(move |entry| {
                let name = entry.file_name().to_string_lossy();
                !(entry.file_type().is_some_and(|t| t.is_dir())
                    && (NEVER.contains(&name.as_ref()) || entry.path() == state_root))
            })
            .build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && handled(ctx, settings, rules, entry.path())
            {
                files.insert(entry.into_path());
            }
        }
    }
    Ok(files.into_iter().collect())
}

fn handled(ctx: &Ctx, settings: &Settings, rules: Option<&RuleSet>, path: &Path) -> bool {
    // A file named directly is still never checked inside these folders.
    let relative = path.strip_prefix(&ctx.project_root).unwrap_or(path);
    if relative
        .components()
        .any(|c| NEVER.contains(&c.as_os_str().to_string_lossy().as_ref()))
    {
        return false;
    }
    if settings.allows(path).is_err() {
        return false;
    }
    let lsp = !matches!(
        settings.registry.select(path, &ctx.project_root),
        crate::lsp::servers::Selection::Unsupported
    );
    lsp || rules.is_some_and(|rules| rules.covers(path))
}

/// Checks the given files: ast-grep over all of them in parallel, then each
/// through its language server.
pub fn check_files(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    files: &[PathBuf],
    options: &Options,
    pool: &mut Pool,
) -> Report {
    let mut report = Report {
        rule_problems: rules.map(|r| r.problems().to_vec()).unwrap_or_default(),
        ..Report::default()
    };
    let mut findings: BTreeMap<PathBuf, Vec<Finding>> = BTreeMap::new();
    if let Some(rules) = rules {
        for scan in rules.scan_files(files) {
            if let Some(why) = &scan.skipped {
                ctx.debug(format_args!(
                    "ast-grep: {} skipped: {why}",
                    scan.path.display()
                ));
            }
            findings.insert(scan.path, scan.findings);
        }
    }
    let budget_end = options.budget.map(|budget| Instant::now() + budget);
    for path in files {
        let display = relative(ctx, path);
        let mut items: Vec<Item> = findings
            .remove(path)
            .unwrap_or_default()
            .iter()
            .map(item_from_finding)
            .collect();
        let ast_language = Lang::from_path(path).map(|l| l.name());
        let (language, server, status) = match check::resolve(ctx, settings, path) {
            Resolved::Unsupported | Resolved::Skipped(_) => {
                (ast_language.unwrap_or_default(), None, None)
            }
            Resolved::NotInstalled { language, hint, .. } => {
                report.no_server.entry(language.clone()).or_insert(hint);
                (language, None, Some(Status::NoServer))
            }
            Resolved::Target(target) => {
                let server = target.server.name.clone();
                let language = target.language_id.clone();
                let status = if budget_end.is_some_and(|end| Instant::now() >= end) {
                    report.budget_ran_out = true;
                    Some(Status::Inconclusive(
                        "not checked: the time budget ran out".into(),
                    ))
                } else {
                    match lsp_items(ctx, settings, pool, &target, path, budget_end) {
                        Ok(found) => {
                            items.extend(found);
                            None
                        }
                        Err(why) => Some(why),
                    }
                };
                (language, Some(server), status)
            }
        };
        items.retain(|item| item.diag.severity <= options.min_severity);
        items.sort_by(|a, b| {
            a.diag
                .priority_key()
                .cmp(&b.diag.priority_key())
                .then_with(|| a.diag.message.cmp(&b.diag.message))
        });
        items.dedup_by(|a, b| a.diag == b.diag);
        let status = status.unwrap_or(if items.is_empty() {
            Status::Clean
        } else {
            Status::Issues
        });
        report.files.push(FileReport {
            path: display,
            absolute: path.clone(),
            language,
            server,
            status,
            items,
        });
    }
    report
}

/// One file through its server; `Err(status)` when it could not be checked.
fn lsp_items(
    ctx: &Ctx,
    settings: &Settings,
    pool: &mut Pool,
    target: &check::Target<'_>,
    path: &Path,
    budget_end: Option<Instant>,
) -> Result<Vec<Item>, Status> {
    let text = match fsread::read_text(path, limits::SOURCE, Links::Follow) {
        Ok(Some(text)) => text,
        Ok(None) => return Err(Status::Inconclusive("it vanished while checking".into())),
        Err(error) => {
            return Err(Status::Inconclusive(format!(
                "cannot read it: {}",
                error.reason()
            )));
        }
    };
    // As after an edit: a server still starting gets the warm-up wait on
    // top, and the file's own time counts from when it is warm.
    let timeout = settings.file_timeout(target.server);
    let mut deadline = Instant::now() + settings.warmup_wait() + timeout;
    if let Some(end) = budget_end {
        deadline = deadline.min(end);
    }
    let limits = crate::lsp::pool::Limits {
        deadline,
        budget: Some(timeout),
        startup: target.server.startup_timeout,
    };
    let started = Instant::now();
    let found = pool
        .diagnose_within(&target.launch, path, &text, &target.language_id, &limits)
        .result;
    ctx.debug(format_args!(
        "{}: {} answered in {} ms",
        path.display(),
        target.server.name,
        started.elapsed().as_millis()
    ));
    match found {
        Ok(found) => Ok(found
            .iter()
            .map(|d| {
                let diag = Diag::from_server_as(d, &text, settings.config.unused);
                let end = d.range.end;
                let end_text = text.lines().nth(end.line as usize).unwrap_or_default();
                Item {
                    diag,
                    end_line: end.line.saturating_add(1),
                    end_column: utf16_to_char_column(end_text, end.character).saturating_add(1),
                    note: None,
                    fix: None,
                }
            })
            .collect()),
        Err(error) if check::looks_not_installed(&error) => Err(Status::NoServer),
        Err(error) => Err(Status::Inconclusive(error.to_string())),
    }
}

fn item_from_finding(finding: &Finding) -> Item {
    Item {
        diag: super::ast_grep::diag_from_finding(finding),
        end_line: finding.end_line,
        end_column: finding.end_column,
        note: finding.note.clone(),
        fix: finding.fix.as_ref().map(|fix| fix.replacement.clone()),
    }
}

/// Project-relative with `/` separators, else as given.
pub fn relative(ctx: &Ctx, path: &Path) -> String {
    check::display_path(ctx, path).replace('\\', "/")
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

    /// 0 no errors, 1 errors, 2 no errors but something was not checked.
    pub fn exit_code(&self) -> u8 {
        if self.count(Severity::Error) > 0 {
            1
        } else if self.inconclusive() > 0 {
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
        format!(
            "Checked {} {}: {problems} ({} inconclusive, {n_no_server} {} without a server)",
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
                    let _ = writeln!(text, "    note: {line}");
                }
            }
            if let Some(fix) = &item.fix {
                let _ = writeln!(text, "    fix: {}", one_line(fix));
            }
        }
        for file in &self.files {
            if let Status::Inconclusive(why) = &file.status {
                let _ = writeln!(
                    text,
                    "{}: inconclusive ({}): {why}",
                    file.path,
                    file.server.as_deref().unwrap_or("?")
                );
            }
        }
        for (language, hint) in &self.no_server {
            let _ = writeln!(text, "{language}: no language server installed ({hint})");
        }
        for problem in &self.rule_problems {
            let _ = writeln!(text, "ast-grep: {problem}");
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

    /// The `--json` report.
    pub fn to_json(&self) -> Value {
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
        let files: Vec<Value> = self
            .files
            .iter()
            .map(|file| {
                let diagnostics: Vec<Value> = file
                    .items
                    .iter()
                    .map(|item| {
                        let mut value = json!({
                            "line": item.diag.line,
                            "column": item.diag.column,
                            "end_line": item.end_line,
                            "end_column": item.end_column,
                            "severity": item.diag.severity.word(),
                            "source": item.diag.source,
                            "code": item.diag.code,
                            "message": item.diag.message,
                        });
                        if let Some(fix) = &item.fix {
                            value["fix"] = json!(fix);
                        }
                        if let Some(note) = &item.note {
                            value["note"] = json!(note);
                        }
                        value
                    })
                    .collect();
                let mut value = json!({
                    "path": file.path,
                    "language": file.language,
                    "server": file.server,
                    "status": file.status.word(),
                    "diagnostics": diagnostics,
                });
                if let Status::Inconclusive(why) = &file.status {
                    value["reason"] = json!(why);
                }
                value
            })
            .collect();
        json!({
            "summary": {
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
            },
            "files": files,
            "rule_problems": self.rule_problems,
        })
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
