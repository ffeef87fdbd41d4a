//! After a Bash command: Claude changes files through the shell
//! too (`sed -i`, formatters, code generators, `git checkout`). When the
//! command changed files a language server handles, their diagnostics are
//! reported as for an edit — one message for all of them, each problem
//! marked introduced or already there — and a command that changed nothing
//! stays silent.
//!
//! What changed: PostToolUse runs only after the command, so there is no
//! snapshot from before it. Instead each run records (`bash-edits.json`)
//! when it ran and which files git saw dirty; the next run's candidates are
//! the files git sees dirty now plus those dirty last time (a `git checkout`
//! makes a file clean by changing it) and the files changed between the
//! HEAD of last time and HEAD now (a command that edits and commits leaves
//! the file clean before and after), whose modification or status-change
//! time is not older than the last run (the status-change time: `cp -p`,
//! `mv` and `tar x` give a new file an old modification time, but nothing
//! sets the status-change time back). A candidate whose content is exactly
//! what `diagnostics.json` last checked (an Edit already reported it, or an
//! earlier command) is not new. Without a record (the first command) the
//! window is the last [`FIRST_WINDOW`]. Outside a git work tree the
//! candidates are all the project's files, found by a bounded walk
//! (`worktree::walk_files`), and the same time test picks the command's.
//! A project too big for that walk is told once per session that its Bash
//! edits are not checked (and how to have them checked); the record's time
//! still moves on, so an edit missed then is never reported later as the
//! change of an unrelated command.
//!
//! Files in folders linked in from outside the project (`lib ->
//! ../common/lib`) are candidates too, by the same time test: git and the
//! walk see only the link. The links are those git tracks, ignores or
//! sees dirty (two `git ls-files`, again only when the dirty set or HEAD
//! changed), or those the walk passed; each linked folder is walked up to
//! 5,000 files.
//!
//! Cost of a command that changed nothing: one `git status`, one
//! `git rev-parse`, one `stat` per dirty file, one small read (a write only
//! when the dirty set or HEAD changed), and a `stat` per file in a linked
//! folder; outside git, one walk of the project instead.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::ast_grep;
use super::baseline::{self, content_hash};
use super::classify::{Classification, classify};
use super::edit::{
    LINTER_SHARE, baseline_entry, blocking_errors, failure_text, file_context, record_touched,
};
use super::lines::LineMap;
use super::report;
use crate::engine::listing::Caps;
use crate::engine::model::Diag;
use crate::engine::resolve::{self, Resolved};
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{Decision, EventName, HookOutput, ToolInput, cap_chars};
use crate::lsp::LspError;
use crate::lsp::pool::Limits;
use crate::ralph::worktree;
use crate::state::Versioned;
use crate::util::fsread::{self, Links, limits};

/// The state file: when the last Bash hook ran and what was dirty then.
pub const RECORD_FILE: &str = "bash-edits.json";
/// With no record, files changed this recently count as the command's.
pub const FIRST_WINDOW: Duration = Duration::from_secs(120);
/// Files checked after one command; the rest are named only.
const MAX_FILES: usize = 20;
/// Outside git, a walk of the project stops after this many files.
const MAX_WALKED: usize = worktree::MAX_FILES;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Record {
    #[serde(default)]
    pub version: u64,
    /// Milliseconds since the epoch when the last run started.
    pub at_ms: u64,
    /// Project-relative paths git saw dirty then.
    #[serde(default)]
    pub dirty: Vec<String>,
    /// The commit HEAD named then (absent outside git or before the first
    /// commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The session last told that its Bash edits are not checked (outside
    /// git, too many files to walk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untracked_told: Option<String>,
    /// Project-relative links git knows (tracked, ignored or dirty), found
    /// again when the dirty files or HEAD change: a link is added,
    /// removed or pointed elsewhere only through those. Each is asked
    /// whether it leads to a folder at every command: one that led
    /// nowhere when listed may since (re-attack RC-15).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folder_links: Vec<String>,
}

impl Versioned for Record {
    const VERSION: u64 = 1;
}

pub fn after_bash(ctx: &Ctx, _tool: &ToolInput) -> anyhow::Result<HookOutput> {
    let now = SystemTime::now();
    let now_ms = millis(now);
    // Outside git there is no dirty list: the candidates are every file of
    // the project (bounded walk), and their mtimes say which are new.
    let git = worktree::git_dirty(&ctx.project_root);
    let previous = ctx
        .store()
        .read_json::<Record>(RECORD_FILE)
        .unwrap_or_else(|error| {
            ctx.debug(format_args!("cannot read {RECORD_FILE}: {error:#}"));
            None
        });
    let cutoff_ms = previous.as_ref().map_or(
        now_ms.saturating_sub(FIRST_WINDOW.as_millis() as u64),
        |r| r.at_ms,
    );
    let mut head = None;
    let mut too_many_files = false;
    let mut folder_links: Vec<String> = Vec::new();
    let mut links_walked: Vec<PathBuf> = Vec::new();
    let (dirty, mut recent): (Vec<String>, Vec<PathBuf>) = match git {
        Some(dirty) => {
            let mut candidates: BTreeSet<String> = dirty.iter().cloned().collect();
            head = head_commit(&ctx.project_root);
            folder_links = match &previous {
                Some(p) if p.dirty == dirty && p.head == head => p.folder_links.clone(),
                _ => git_folder_links(&ctx.project_root, &dirty),
            };
            if let Some(previous) = &previous {
                candidates.extend(previous.dirty.iter().cloned());
                match (&previous.head, &head) {
                    (Some(before), Some(after)) if before != after => {
                        candidates.extend(files_between(&ctx.project_root, before, after));
                    }
                    // The repository's first commit, made by the command.
                    (None, Some(after)) => {
                        candidates.extend(files_between(&ctx.project_root, "", after));
                    }
                    _ => {}
                }
            }
            let recent = candidates
                .iter()
                .map(|relative| ctx.project_root.join(relative))
                .filter(|path| changed_ms(path).is_some_and(|ms| ms >= cutoff_ms))
                .collect();
            (dirty, recent)
        }
        None => {
            ctx.debug(format_args!(
                "not a git work tree: looking for changed files by walking the project"
            ));
            // One more than the cap: exactly the cap is still all of them.
            let (walked, links) =
                worktree::walk_files_and_links(&ctx.project_root, &ctx.state_root, MAX_WALKED + 1);
            links_walked = links;
            too_many_files = walked.len() > MAX_WALKED;
            let recent = if too_many_files {
                // Part of the project only: a change elsewhere would be
                // missed, and reporting the part would suggest all was seen.
                Vec::new()
            } else {
                walked
                    .into_iter()
                    .filter(|(_, meta)| changed_time_ms(meta) >= cutoff_ms)
                    .map(|(relative, _)| ctx.project_root.join(relative))
                    .collect()
            };
            (Vec::new(), recent)
        }
    };
    // Files in folders linked in from outside the project (a shared
    // library, a vendored checkout): git and the walk see the link only, so
    // a command's edit there is found by the same time test over the
    // linked folders (re-attack RE-16: it went unreported).
    let links: Vec<PathBuf> = folder_links
        .iter()
        .map(|relative| ctx.project_root.join(relative))
        .filter(|link| link.is_dir())
        .chain(links_walked)
        .collect();
    if !links.is_empty() {
        let root = ctx
            .project_root
            .canonicalize()
            .unwrap_or_else(|_| ctx.project_root.clone());
        for (named, real) in crate::engine::deps::files_under_links(&root, &links, &|_| true) {
            if changed_ms(&real).is_some_and(|ms| ms >= cutoff_ms) && !recent.contains(&named) {
                recent.push(named);
            }
        }
    }
    let session = ctx.session_id.clone().unwrap_or_default();
    let tell_untracked = too_many_files
        && previous
            .as_ref()
            .is_none_or(|p| p.untracked_told.as_deref() != Some(session.as_str()));
    // Nothing recent, the same dirty files and HEAD: the record still says
    // all there is to know (moving its time on would exclude nothing), so
    // the quiet case costs no write and no fsync. Too many files to walk:
    // its time moves on all the same, so what this run could not see is
    // never taken later for a later command's change.
    let same = previous
        .as_ref()
        .is_some_and(|p| p.dirty == dirty && p.head == head && p.folder_links == folder_links);
    if !(recent.is_empty() && same && !too_many_files) {
        let untracked_told = if too_many_files {
            Some(session.clone())
        } else {
            None
        };
        let record = Record {
            version: Record::VERSION,
            at_ms: now_ms,
            dirty,
            head,
            untracked_told,
            folder_links,
        };
        if let Err(error) = save_record(ctx, &record) {
            eprintln!("ralph-hooks: warning: cannot save {RECORD_FILE}: {error:#}");
        }
    }
    if tell_untracked {
        return Ok(HookOutput::context(
            EventName::PostToolUse,
            format!(
                "ralph-hooks: files changed by Bash commands are not checked in this project \
                 (said once per session): it is not a git work tree and holds more than \
                 {MAX_WALKED} files, too many to walk after every command. To have them \
                 checked, make it a git work tree (`git init`), or run `ralph-hooks check` \
                 after changing files through the shell. Files changed with Write or Edit \
                 are checked as always."
            ),
        ));
    }
    if recent.is_empty() {
        ctx.debug(format_args!("Bash: no file changed"));
        return Ok(HookOutput::silent());
    }
    let settings = Settings::load(ctx);
    if !settings.config.enabled {
        return Ok(HookOutput::silent());
    }
    report_changed(ctx, &settings, &recent)
}

/// Checks the changed files a server handles whose content is not the one
/// last checked; one message for all. Each file is checked as an edit
/// would check it: its server, the linters beside it (ruff beside a Python
/// type checker) and the ast-grep rules, each reported under its own name;
/// a server that does not answer (still starting, timed out) is named with
/// why, and the others' findings are reported all the same.
fn report_changed(ctx: &Ctx, settings: &Settings, paths: &[PathBuf]) -> anyhow::Result<HookOutput> {
    let mut sections = Vec::new();
    let mut blocking: Vec<(String, String, Vec<Diag>, bool)> = Vec::new();
    let mut entries = Vec::new();
    let mut pool = crate::daemon::pool(ctx);
    let caps = Caps {
        max_items: settings.config.max_items,
        max_chars: settings.config.max_chars,
    };
    let mut checked = 0;
    let mut left_out = Vec::new();
    let mut running_loop = None;
    for path in paths {
        // Shown to Claude: a newline in a file name must not start a line.
        let display =
            crate::util::text::escape_controls(&resolve::display_path(ctx, path)).into_owned();
        let Resolved::Target(target) = resolve::resolve(ctx, settings, path) else {
            continue;
        };
        let text = match fsread::read_text(path, limits::SOURCE, Links::Follow) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            // Too large or unreadable is not clean: touched, and said
            // (engine attack E-24: an 18 MB file written by a command was
            // passed over in silence, and a touched loop COMPLETED).
            Err(error) => {
                let why = match error {
                    fsread::ReadError::TooLarge { .. } => format!(
                        "larger than {} MiB, not checked",
                        limits::SOURCE / (1024 * 1024)
                    ),
                    other => format!("cannot read it: {}", other.reason()),
                };
                sections.push(report::inconclusive(&display, &target.server.name, &why));
                if let Some(in_loop) = record_touched(ctx, path) {
                    running_loop = Some(in_loop);
                }
                continue;
            }
        };
        let stored = baseline::load_entry(ctx, &display);
        if stored
            .as_ref()
            .is_some_and(|entry| entry.content_hash == content_hash(&text))
        {
            ctx.debug(format_args!("{display}: unchanged since its last check"));
            continue;
        }
        if checked == MAX_FILES {
            left_out.push(display);
            continue;
        }
        checked += 1;
        let Some(file) = check_file(ctx, settings, &mut pool, &target, path, &text, &display)
        else {
            continue;
        };
        // The text before the command is unknown: compare with the last
        // result for this file, line for line.
        let before = stored.as_ref().map(|entry| {
            entry
                .diagnostics
                .iter()
                .filter(|d| {
                    file.ast_grep.is_some()
                        || !entry.ast_grep
                        || d.source.as_deref() != Some("ast-grep")
                })
                .cloned()
                .collect::<Vec<_>>()
        });
        let mut after = file.lsp.clone();
        after.extend(file.ast_grep.iter().flatten().cloned());
        let classification = classify(before.as_deref(), &after, &LineMap::identity());
        let servers_label = file.answered_by.join(" + ");
        if file.failures.is_empty() {
            sections.push(file_context(
                &display,
                &servers_label,
                &classification,
                &file.extras,
                settings.config.min_severity,
                caps,
            ));
            entries.push((
                display.clone(),
                baseline_entry(ctx, &text, &servers_label, file.ast_grep.is_some(), after),
            ));
        } else {
            // A partial result is not kept as the file's baseline: the next
            // check would take the silent server's problems for new ones.
            sections.push(partial_section(&display, &file, &classification, caps));
        }
        let in_loop = record_touched(ctx, path);
        if in_loop.is_some() {
            running_loop = in_loop;
        }
        if let Some((errors, introduced)) =
            blocking_errors(&classification, settings.config.block_on)
        {
            let reported_by = if file.answered_by.is_empty() {
                "the ast-grep rules".to_string()
            } else {
                servers_label
            };
            blocking.push((display, reported_by, errors, introduced));
        }
    }
    pool.close(Duration::from_millis(settings.config.shutdown_grace_ms));
    if let Err(error) = baseline::save_entries(ctx, entries) {
        eprintln!("ralph-hooks: warning: cannot save the diagnostics baseline: {error:#}");
    }
    if sections.is_empty() {
        return Ok(HookOutput::silent());
    }
    let mut text = format!(
        "This Bash command changed {} file{} a language server checks:\n\n",
        sections.len() + left_out.len(),
        if sections.len() + left_out.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    text.push_str(&sections.join("\n\n"));
    if !left_out.is_empty() {
        text.push_str(&format!(
            "\n\nNot checked now ({} more): {}",
            left_out.len(),
            left_out.join(", ")
        ));
    }
    let mut output = HookOutput::context(EventName::PostToolUse, cap_chars(text));
    if running_loop.is_some_and(|state| state.diagnostics)
        && let Some((display, server, errors, introduced)) = blocking.first()
    {
        let refs: Vec<&Diag> = errors.iter().collect();
        output.decision = Some(Decision::Block);
        output.reason = Some(cap_chars(report::block_reason(
            display,
            server,
            &refs,
            *introduced,
            caps,
        )));
    }
    Ok(output)
}

/// What every checker said about one file the command changed.
struct FileResult {
    /// The diagnostics of the servers that answered.
    lsp: Vec<Diag>,
    /// The servers that answered, the file's own server first.
    answered_by: Vec<String>,
    /// One line per server that did not answer, saying why.
    failures: Vec<String>,
    /// The ast-grep findings, when the rules ran.
    ast_grep: Option<Vec<Diag>>,
    extras: ast_grep::Extras,
}

/// Asks the file's server, the linters beside it and the ast-grep rules
/// about `text`, as the post-edit check does; `None` when there is nothing
/// to say (a server that did not start and was already reported, with no
/// one else to speak for the file).
fn check_file(
    ctx: &Ctx,
    settings: &Settings,
    pool: &mut crate::lsp::pool::Pool,
    target: &resolve::Target<'_>,
    path: &Path,
    text: &str,
    display: &str,
) -> Option<FileResult> {
    let server_name = target.server.name.clone();
    let min_severity = settings.config.min_severity;
    let unused = settings.config.unused;
    let started = Instant::now();
    let timeout = settings.file_timeout(target.server);
    let deadline = started + settings.warmup_wait() + timeout;
    let scan = if settings.config.ast_grep {
        ast_grep::start(ctx, path)
    } else {
        None
    };
    // Linters first, each within its share: they answer in milliseconds,
    // and a checker that takes the whole deadline must not cost theirs.
    let mut linter_results = Vec::new();
    for linter in resolve::linters(ctx, settings, path, target.server) {
        let limits = Limits {
            deadline: (Instant::now() + timeout.mul_f64(LINTER_SHARE)).min(deadline),
            budget: None,
            startup: linter.server.startup_timeout,
        };
        let (after, _) = resolve::lsp_diagnostics_within(
            pool,
            &linter,
            path,
            text,
            min_severity,
            unused,
            &limits,
        );
        linter_results.push((linter.server.name.clone(), after));
    }
    let limits = Limits {
        deadline,
        budget: Some(timeout),
        startup: target.server.startup_timeout,
    };
    let (result, _) =
        resolve::lsp_diagnostics_within(pool, target, path, text, min_severity, unused, &limits);
    let (ast_grep, extras) = match scan.map(|scan| {
        scan.and_then(|scan| {
            scan.finish_with_extras(
                started + Duration::from_millis(settings.config.ast_grep_timeout_ms),
            )
        })
    }) {
        Some(Ok((diags, extras))) => (Some(diags), extras),
        Some(Err(why)) => {
            eprintln!("ralph-hooks: warning: ast-grep skipped for {display}: {why}");
            (None, ast_grep::Extras::default())
        }
        None => (None, ast_grep::Extras::default()),
    };
    let mut file = FileResult {
        lsp: Vec::new(),
        answered_by: Vec::new(),
        failures: Vec::new(),
        ast_grep,
        extras,
    };
    let mut silent_start_failure = false;
    match result {
        Ok(diags) => {
            file.lsp.extend(diags);
            file.answered_by.push(server_name.clone());
        }
        Err(error @ LspError::StartFailed { .. }) => {
            // Said once per session; later commands name it only when
            // others' findings need the warning that this is not all.
            match super::edit::not_started(ctx, display, &server_name, &error)
                .ok()
                .and_then(|output| output.hook_specific_output)
                .and_then(|specific| specific.additional_context)
            {
                Some(notice) => file.failures.push(notice),
                None => {
                    silent_start_failure = true;
                    file.failures.push(report::inconclusive(
                        display,
                        &server_name,
                        "the server did not start (said earlier in this session)",
                    ));
                }
            }
        }
        Err(error) => file.failures.push(failure_text(
            ctx,
            display,
            &server_name,
            &error,
            started.elapsed(),
        )),
    }
    for (name, after) in linter_results {
        match after {
            Ok(diags) => {
                file.lsp.extend(diags);
                file.answered_by.push(name);
            }
            Err(error) if resolve::looks_not_installed(&error) => ctx.debug(format_args!(
                "{display}: {name} is not installed after all: {error}"
            )),
            Err(error) => {
                file.failures
                    .push(failure_text(ctx, display, &name, &error, started.elapsed()))
            }
        }
    }
    resolve::sort_and_dedup(&mut file.lsp);
    if silent_start_failure && file.answered_by.is_empty() && file.ast_grep.is_none() {
        return None;
    }
    Some(file)
}

/// One file's part when a server did not answer: why, then what the
/// others found (never "clean").
fn partial_section(
    display: &str,
    file: &FileResult,
    classification: &Classification,
    caps: Caps,
) -> String {
    let mut answered = file.answered_by.clone();
    if file.ast_grep.is_some() {
        answered.push("the ast-grep rules".into());
    }
    let mut text = file.failures.join("\n");
    if !answered.is_empty() {
        text.push('\n');
        text.push_str(&report::partial_context(
            display,
            &answered.join(" and "),
            &classification.items,
            caps,
        ));
        let shown: Vec<&Diag> = classification.items.iter().map(|c| &c.diag).collect();
        let extras = ast_grep::render_extras(&shown, &file.extras);
        if !extras.is_empty() {
            text.push('\n');
            text.push_str(&extras);
        }
    }
    text
}

fn save_record(ctx: &Ctx, record: &Record) -> anyhow::Result<()> {
    let locked = ctx.store().lock(RECORD_FILE)?;
    locked.save_json(record)
}

/// When a file last changed: the later of its modification and
/// status-change times (a file copied with `cp -p` or moved with `mv` keeps
/// an old modification time; its status-change time is when it arrived).
fn changed_ms(path: &Path) -> Option<u64> {
    let metadata = path.metadata().ok()?;
    if !metadata.is_file() {
        return None;
    }
    Some(changed_time_ms(&metadata))
}

fn changed_time_ms(metadata: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let ctime_ms = (metadata.ctime().max(0) as u64)
        .saturating_mul(1000)
        .saturating_add(metadata.ctime_nsec().max(0) as u64 / 1_000_000);
    metadata.modified().map_or(0, millis).max(ctime_ms)
}

/// The project-relative links among the files git tracks, the ones it
/// ignores and the `dirty` ones (a link not yet added), wherever they
/// lead now: two `git ls-files`.
fn git_folder_links(root: &Path, dirty: &[String]) -> Vec<String> {
    let mut links: Vec<String> = dirty
        .iter()
        .filter(|relative| is_link(&root.join(relative)))
        .cloned()
        .collect();
    let list = |args: &[&str]| crate::util::git::nul_list(root, args).unwrap_or_default();
    // Tracked: "<mode> <object> <stage>\t<path>"; a link's mode is 120000.
    let tracked = list(&["ls-files", "-s", "-z"])
        .into_iter()
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            meta.starts_with("120000 ").then(|| path.to_string())
        });
    // Ignored, an ignored folder not entered (a machine's own link kept
    // out of the repository; re-attack RC-8).
    let ignored = list(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ]);
    for path in tracked.chain(ignored) {
        if is_link(&root.join(&path)) && !links.contains(&path) {
            links.push(path);
        }
    }
    links.sort();
    links
}

fn is_link(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
}

/// The commit HEAD names, `None` before the first commit.
fn head_commit(root: &Path) -> Option<String> {
    if let Some(head) = crate::util::git::read_head(root) {
        return head;
    }
    let output = crate::util::git::command(root)
        .args(["rev-parse", "-q", "--verify", "HEAD"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let head = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !head.is_empty()).then_some(head)
}

/// Project-relative paths of the files that differ between two commits
/// (a commit, amend, rebase or reset done by the command).
/// `before` empty: the files of the root commit `after`.
fn files_between(root: &Path, before: &str, after: &str) -> Vec<String> {
    let is_commit = |id: &str| id.len() >= 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if !(before.is_empty() || is_commit(before)) || !is_commit(after) {
        return Vec::new();
    }
    let mut command = crate::util::git::command(root);
    if before.is_empty() {
        command.args([
            "diff-tree",
            "--root",
            "-r",
            "--no-commit-id",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--name-only",
            "-z",
            "--relative",
            after,
            "--",
        ]);
    } else {
        command.args([
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--name-only",
            "-z",
            "--relative",
            before,
            after,
            "--",
        ]);
    }
    let Ok(output) = command
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    if !output.status.success() {
        return Vec::new();
    }
    output
        .stdout
        .split(|b| *b == 0)
        .filter(|path| !path.is_empty())
        .take(worktree::MAX_FILES)
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect()
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
