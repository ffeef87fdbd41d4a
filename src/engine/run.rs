//! A project check: every file under the given paths (or the project)
//! through its language server and the ast-grep rules, in one [`Report`].
//!
//! Files are grouped by server (one per language and workspace root); each
//! group goes to its server as one batch ([`crate::lsp::batch`]), all
//! servers at once and ast-grep beside them, so a check costs about what the
//! slowest checker needs for its files — not a round trip per file. Who
//! runs the servers is the caller's choice ([`Servers`]): the daemon's warm
//! workers, or [`LocalServers`] in this process. Files a server had not
//! answered when the time ran out are inconclusive ("not checked yet"),
//! never clean; a daemon goes on checking them for the next check.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use super::jobs::{JobAnswer, Progress, ServerJob};
pub use super::servers::{LocalServers, ScanCache, Servers};

use super::files::{self, NoSuchPath};
use super::model::{Diag, Severity, diag_from_finding, utf16_to_char_column};
use super::report::{FileReport, Item, Report, Status};
use super::resolve::{self, Resolved};
use super::settings::Settings;
use crate::astgrep::{FileScan, Finding, Lang, LoadOptions, RuleSet};
use crate::hook::ctx::Ctx;
use crate::lsp::batch::{BatchFile, FileAnswer};
use crate::lsp::{LspError, ServerDiagnostic};
use crate::util::fsread::{self, Links, limits};

/// A check with no budget still ends: a server that takes longer than this
/// for a whole project is reported, file by file, as not done.
const NO_BUDGET_LIMIT: Duration = Duration::from_secs(30 * 60);

/// A server with a start-up time gets at least this long of saying nothing
/// before a batch takes it for hung: loading a whole project on a loaded
/// machine (pyright on 2 busy cores) can be silent for longer than the
/// start-up time of a single file, and a check's budget bounds the wait
/// anyway.
const BATCH_SILENCE: Duration = Duration::from_secs(120);

/// What to check.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The Python environment of the caller, when the check runs in
    /// another process (the daemon): see `lsp::environment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_env: Option<std::collections::BTreeMap<String, String>>,
}

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

/// Checks the project (or `options.paths`) with `servers`.
pub fn check_project(
    ctx: &Ctx,
    options: &Options,
    servers: &mut dyn Servers,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, NoSuchPath> {
    let started = Instant::now();
    let mut settings = Settings::load(ctx);
    if let Some(caller) = &options.caller_env {
        settings.registry.use_caller_environment(caller);
    }
    let rules = (options.ast_grep && settings.config.ast_grep).then(|| rule_set(ctx));
    let collected = files::collect(ctx, &settings, rules.as_ref(), &options.paths)?;
    let walk_ms = started.elapsed().as_millis() as u64;
    let mut report = check_files(
        ctx,
        &settings,
        rules.as_ref(),
        &collected.files,
        options,
        servers,
        progress,
    );
    // What could not be looked at counts as unchecked, never as clean.
    for skipped in collected.not_checked {
        report.files.push(FileReport {
            path: files::relative(ctx, &skipped.path),
            absolute: skipped.path,
            language: String::new(),
            server: None,
            server_reason: None,
            status: Status::Inconclusive(skipped.reason),
            items: Vec::new(),
        });
    }
    report.timings.walk_ms = walk_ms;
    report.timings.total_ms = started.elapsed().as_millis() as u64;
    ctx.debug(format_args!("check: timings {:?}", report.timings));
    Ok(report)
}

/// Where one file goes.
enum Plan {
    /// No server: ast-grep only (or nothing).
    RulesOnly {
        language: String,
    },
    NoServer {
        language: String,
    },
    TooLarge {
        language: String,
        server: String,
    },
    /// (job, index in the job), and the same for each linter beside the
    /// file's server.
    Server {
        job: usize,
        index: usize,
        beside: Vec<(usize, usize)>,
    },
}

/// Checks the given files: the servers' batches and ast-grep at once.
pub fn check_files(
    ctx: &Ctx,
    settings: &Settings,
    rules: Option<&RuleSet>,
    files: &[PathBuf],
    options: &Options,
    servers: &mut dyn Servers,
    progress: &mut dyn FnMut(Progress),
) -> Report {
    let started = Instant::now();
    let deadline = started + options.budget.unwrap_or(NO_BUDGET_LIMIT);
    let mut report = Report {
        rule_problems: rules.map(|r| r.problems().to_vec()).unwrap_or_default(),
        ..Report::default()
    };
    let mut jobs: Vec<ServerJob> = Vec::new();
    let mut job_meta: Vec<(String, String, Option<String>)> = Vec::new();
    let mut job_index: HashMap<(String, PathBuf), usize> = HashMap::new();
    let mut plans = Vec::with_capacity(files.len());
    let mut resolver = resolve::Resolver::default();
    for path in files {
        let ast_language = Lang::from_path(path).map(|l| l.name().to_string());
        let plan = match resolver.resolve(ctx, settings, path) {
            Resolved::Unsupported | Resolved::Skipped(_) => Plan::RulesOnly {
                language: ast_language.unwrap_or_default(),
            },
            Resolved::NotInstalled { language, hint, .. } => {
                report.no_server.entry(language.clone()).or_insert(hint);
                Plan::NoServer { language }
            }
            Resolved::Target(target) => {
                let language = target.language_id.clone();
                let too_large = path
                    .metadata()
                    .is_ok_and(|m| m.len() > resolve::MAX_FILE_BYTES);
                if too_large {
                    Plan::TooLarge {
                        language,
                        server: target.server.name.clone(),
                    }
                } else {
                    let mut add = |target: &resolve::Target<'_>| {
                        let key = (target.launch.name.clone(), target.launch.root.clone());
                        let job = *job_index.entry(key).or_insert_with(|| {
                            jobs.push(ServerJob {
                                launch: target.launch.clone(),
                                startup: target.server.startup_timeout,
                                silence: target.server.startup_timeout.map_or_else(
                                    || settings.file_timeout(target.server),
                                    |startup| startup.max(BATCH_SILENCE),
                                ),
                                cli: target.server.batch_cli,
                                files: Vec::new(),
                            });
                            job_meta.push((
                                target.server.name.clone(),
                                target.language_id.clone(),
                                target.reason.clone(),
                            ));
                            jobs.len() - 1
                        });
                        jobs[job].files.push(BatchFile {
                            path: path.clone(),
                            language_id: target.language_id.clone(),
                        });
                        (job, jobs[job].files.len() - 1)
                    };
                    let (job, index) = add(&target);
                    // Linters beside the checker (ruff) get the file too,
                    // each as its own job, reported under its own name.
                    let beside = resolver
                        .linters(ctx, settings, path, target.server)
                        .iter()
                        .map(&mut add)
                        .collect();
                    Plan::Server { job, index, beside }
                }
            }
        };
        plans.push(plan);
    }
    report.timings.resolve_ms = started.elapsed().as_millis() as u64;
    for (job, (name, _, _)) in jobs.iter().zip(&job_meta) {
        ctx.debug(format_args!(
            "check: {} file(s) for {name} (root {})",
            job.files.len(),
            job.launch.root.display()
        ));
    }

    // ast-grep on its own threads while the servers work, at the lowest
    // priority: a checker that runs its own CLI (ty, ruff) already uses
    // every core, and rules competing with it made the whole check cost
    // a third more CPU than the two run one after the other (ty's idle
    // workers spin while they wait). At low priority the rules take the
    // cores a server leaves idle (pyright's single thread, a server's
    // start-up). Once the servers are done, the files not scanned yet are
    // scanned here at the usual priority: on a machine busy with other
    // work the low-priority threads could otherwise wait for seconds.
    let servers_started = Instant::now();
    let mut not_scanned: BTreeMap<PathBuf, String> = BTreeMap::new();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut findings, answers, servers_ms, ast_grep_ms) = std::thread::scope(|scope| {
        let cache = servers.scan_cache();
        let stop = &stop;
        let background = rules.map(|rules| {
            let cache = cache.clone();
            scope.spawn(move || {
                crate::util::priority::lower_this_thread();
                match &cache {
                    Some(cache) => cache.scan_until(rules, files, stop),
                    None => rules.scan_files_until(files, stop).0,
                }
            })
        });
        let answers = if jobs.is_empty() {
            Vec::new()
        } else {
            servers.check(jobs.clone(), deadline, progress)
        };
        let servers_ms = servers_started.elapsed().as_millis() as u64;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut partial: Vec<Option<FileScan>> = background
            .and_then(|handle| handle.join().ok())
            .unwrap_or_else(|| vec![None; if rules.is_some() { files.len() } else { 0 }]);
        if let Some(rules) = rules {
            let rest: Vec<(usize, PathBuf)> = partial
                .iter()
                .enumerate()
                .filter(|(_, scan)| scan.is_none())
                .map(|(index, _)| (index, files[index].clone()))
                .collect();
            if !rest.is_empty() {
                let paths: Vec<PathBuf> = rest.iter().map(|(_, path)| path.clone()).collect();
                let scanned = match &cache {
                    Some(cache) => cache.scan(rules, &paths),
                    None => rules.scan_files(&paths),
                };
                for ((index, _), scan) in rest.into_iter().zip(scanned) {
                    partial[index] = Some(scan);
                }
            }
        }
        let scanned: Vec<FileScan> = partial.into_iter().flatten().collect();
        let ast_grep_ms = servers_started.elapsed().as_millis() as u64;
        let findings: BTreeMap<PathBuf, Vec<Finding>> = scanned
            .into_iter()
            .map(|scan| {
                if let Some(why) = &scan.skipped {
                    ctx.debug(format_args!(
                        "ast-grep: {} skipped: {why}",
                        scan.path.display()
                    ));
                    not_scanned.insert(scan.path.clone(), why.clone());
                }
                (scan.path, scan.findings)
            })
            .collect();
        (findings, answers, servers_ms, ast_grep_ms)
    });
    report.timings.servers_ms = servers_ms;
    report.timings.ast_grep_ms = ast_grep_ms;

    for (path, plan) in files.iter().zip(plans) {
        let mut items: Vec<Item> = findings
            .remove(path)
            .unwrap_or_default()
            .iter()
            .map(item_from_finding)
            .collect();
        let (language, server, server_reason, status) = match plan {
            Plan::RulesOnly { language } => (language, None, None, None),
            Plan::NoServer { language } => (language, None, None, Some(Status::NoServer)),
            Plan::TooLarge { language, server } => (
                language,
                Some(server),
                None,
                Some(Status::Inconclusive(format!(
                    "larger than {} MiB, not checked",
                    resolve::MAX_FILE_BYTES / (1024 * 1024)
                ))),
            ),
            Plan::Server { job, index, beside } => {
                let (name, language, reason) = job_meta[job].clone();
                let mut status = answer_status(
                    path,
                    answers.get(job).map(|a| (&a.answers[index], &a.failure)),
                    settings,
                    &mut items,
                    &mut report.budget_ran_out,
                );
                let mut servers = name;
                for (linter_job, linter_index) in beside {
                    let linter = &job_meta[linter_job].0;
                    servers = format!("{servers} + {linter}");
                    let linter_status = answer_status(
                        path,
                        answers
                            .get(linter_job)
                            .map(|a| (&a.answers[linter_index], &a.failure)),
                        settings,
                        &mut items,
                        &mut report.budget_ran_out,
                    );
                    // A linter that could not answer leaves the file
                    // inconclusive too, its reason named; a missing linter
                    // binary is no reason (it was found a moment ago).
                    status = match (status, linter_status) {
                        (None, Some(Status::Inconclusive(why))) => {
                            Some(Status::Inconclusive(format!("{linter}: {why}")))
                        }
                        (status, _) => status,
                    };
                }
                (language, Some(servers), reason, status)
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
        // Rules that did not run on the file leave it unproven, whatever
        // the server said.
        let status = match (status, not_scanned.get(path)) {
            (None | Some(Status::NoServer), Some(why)) => {
                Some(Status::Inconclusive(format!("ast-grep: {why}")))
            }
            (status, _) => status,
        };
        let status = status.unwrap_or(if items.is_empty() {
            Status::Clean
        } else {
            Status::Issues
        });
        report.files.push(FileReport {
            path: files::relative(ctx, path),
            absolute: path.clone(),
            language,
            server,
            server_reason,
            status,
            items,
        });
    }
    report
}

/// One server's answer for a file: its diagnostics go into `items`; the
/// file's status when the server gave none (`None`: it answered).
fn answer_status(
    path: &Path,
    answer: Option<(&FileAnswer, &Option<LspError>)>,
    settings: &Settings,
    items: &mut Vec<Item>,
    budget_ran_out: &mut bool,
) -> Option<Status> {
    match answer {
        Some((FileAnswer::Diagnostics(found), _)) => {
            items.extend(server_items(path, found, settings));
            None
        }
        Some((FileAnswer::Failed(why), _)) => Some(Status::Inconclusive(why.clone())),
        Some((
            FileAnswer::Pending,
            Some(LspError::WarmingUp {
                server, loading, ..
            }),
        )) => {
            *budget_ran_out = true;
            Some(Status::Inconclusive(if *loading {
                format!(
                    "not checked yet: {server} is running but has not finished a first look at the project — still loading it, or stuck (it goes on in the daemon; the next check gets it)"
                )
            } else {
                format!(
                    "not checked yet: {server} is still starting (it goes on in the daemon; the next check gets it)"
                )
            }))
        }
        Some((FileAnswer::Pending, Some(failure))) => {
            if resolve::looks_not_installed(failure) {
                Some(Status::NoServer)
            } else {
                Some(Status::Inconclusive(failure.to_string()))
            }
        }
        Some((FileAnswer::Pending, None)) | None => {
            *budget_ran_out = true;
            Some(Status::Inconclusive(
                "not checked yet: the time ran out before the server got to it (a warm daemon goes on checking it for the next check)"
                    .into(),
            ))
        }
    }
}

/// A server's diagnostics for one file, with characters counted from its
/// text (servers count UTF-16 units).
fn server_items(path: &Path, found: &[ServerDiagnostic], settings: &Settings) -> Vec<Item> {
    if found.is_empty() {
        return Vec::new();
    }
    let text = fsread::read_text(path, limits::SOURCE, Links::Follow)
        .ok()
        .flatten()
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    found
        .iter()
        .map(|d| {
            let diag = Diag::from_server_lines(d, &lines, settings.config.unused);
            let end = d.range.end;
            let end_text = lines.get(end.line as usize).copied().unwrap_or_default();
            Item {
                diag,
                end_line: end.line.saturating_add(1),
                end_column: utf16_to_char_column(end_text, end.character).saturating_add(1),
                note: None,
                fix: None,
            }
        })
        .collect()
}

fn item_from_finding(finding: &Finding) -> Item {
    Item {
        diag: diag_from_finding(finding),
        end_line: finding.end_line,
        end_column: finding.end_column,
        note: finding.note.clone(),
        fix: finding.fix.as_ref().map(|fix| fix.replacement.clone()),
    }
}
