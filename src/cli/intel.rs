//! `ralph-hooks refs | rename | search | rewrite | fix`: code
//! intelligence for the agent, run through Bash or by hand. The work is in
//! [`crate::intel`]; this file reads the arguments and prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::json;

use super::color::Paint;
use super::parser::Offered;
use super::progress::{self, Progress};
use crate::astgrep::Lang;
use crate::engine::files::{self, NoSuchPath};
use crate::engine::run::rule_set;
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::intel::refs::plural;
use crate::intel::session::Session;
use crate::intel::writer;
use crate::intel::{diff, fix, position, refs, rename, structural};
use crate::lsp::uri;
use crate::util::text::{escape_controls, escape_controls_in_prose};

/// How long one command may wait for its servers, start-up included
/// (pyright indexing a cold project takes seconds).
const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The languages `--lang` knows (aliases work too: py, ts, js, rs).
const LANGS: &[&str] = &[
    "python",
    "typescript",
    "tsx",
    "javascript",
    "rust",
    "go",
    "c",
    "cpp",
    "bash",
];

pub const REFS_EXAMPLES: &str = "\
Examples:
  ralph-hooks refs app/models.py User          # a name: its first definition in the file
  ralph-hooks refs app/models.py 12:7 --json   # a position, 1-based";

pub const RENAME_EXAMPLES: &str = "\
Examples:
  ralph-hooks rename app/models.py User Account           # a diff per file, nothing written
  ralph-hooks rename app/models.py 12:7 Account --apply   # every file, all or nothing";

pub const SEARCH_EXAMPLES: &str = "\
Examples:
  ralph-hooks search 'console.log($MSG)' web/
  ralph-hooks search 'requests.get($$$ARGS)' --lang python --json";

pub const REWRITE_EXAMPLES: &str = "\
Examples:
  ralph-hooks rewrite 'console.log($MSG)' 'logger.debug($MSG)' web/   # a diff, nothing written
  ralph-hooks rewrite 'assertEquals($A, $B)' 'assertEqual($A, $B)' --lang python --apply";

pub const FIX_EXAMPLES: &str = "\
Examples:
  ralph-hooks fix                    # the whole project
  ralph-hooks fix app/ --dry-run     # the diff only";

#[derive(Debug, clap::Args)]
pub struct RefsArgs {
    /// The file the symbol is in
    pub file: String,
    /// A name (its first definition in the file) or a position line:col
    #[arg(value_name = "SYMBOL|LINE:COL")]
    pub symbol: String,
    /// The references as JSON
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the language server, start-up included
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

#[derive(Debug, clap::Args)]
pub struct RenameArgs {
    /// The file the symbol is in
    pub file: String,
    /// A name (its first definition in the file) or a position line:col
    #[arg(value_name = "SYMBOL|LINE:COL")]
    pub symbol: String,
    /// The new name
    pub new_name: String,
    /// Write every file (all or nothing), then re-check them
    #[arg(long)]
    pub apply: bool,
    /// The plan (and the re-check) as JSON
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the language server, start-up included
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// An ast-grep pattern: code with $VAR (one node) and $$$ARGS (any number)
    pub pattern: String,
    /// Files and folders to search (default: the project)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The language of the pattern (default: each file's, by extension)
    #[arg(long, value_name = "LANG", value_parser = Offered(LANGS))]
    pub lang: Option<String>,
    /// The matches as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RewriteArgs {
    /// An ast-grep pattern: code with $VAR (one node) and $$$ARGS (any number)
    pub pattern: String,
    /// What each match becomes; the pattern's $VARs may be used
    pub replacement: String,
    /// Files and folders to rewrite (default: the project)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The language of the pattern (default: each file's, by extension)
    #[arg(long, value_name = "LANG", value_parser = Offered(LANGS))]
    pub lang: Option<String>,
    /// Write the files (all or nothing); without it, a diff only
    #[arg(long)]
    pub apply: bool,
    /// The changes as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct FixArgs {
    /// Files and folders to fix (default: the project)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Show what would change; write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// What was fixed and what remains, as JSON
    #[arg(long)]
    pub json: bool,
    /// Leave out the ast-grep rules' fixes
    #[arg(long)]
    pub no_ast_grep: bool,
    /// Seconds to wait for the language servers, start-up included
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

/// A file argument: relative to the current directory, must exist.
fn existing_file(arg: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(arg);
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .context("cannot determine the current directory")?
            .join(path)
    };
    if !absolute.is_file() {
        bail!("no such file: {arg}");
    }
    Ok(absolute)
}

fn refuse_state(ctx: &Ctx, path: &Path) -> anyhow::Result<()> {
    let state = std::fs::canonicalize(&ctx.state_root).unwrap_or(ctx.state_root.clone());
    let real = std::fs::canonicalize(path).unwrap_or(path.to_path_buf());
    if real.starts_with(&state) {
        bail!(
            "{} is in the hook state ({}); these commands never touch it",
            path.display(),
            ctx.state_root.display()
        );
    }
    Ok(())
}

pub fn refs(ctx: &Ctx, args: &RefsArgs) -> anyhow::Result<ExitCode> {
    let (json, spec) = (args.json, &args.symbol);
    let timeout = Duration::from_secs(args.timeout);
    let file = existing_file(&args.file)?;
    refuse_state(ctx, &file)?;
    let mut session = Session::new(ctx, timeout);
    let found = refs::find(&mut session, &file, spec);
    say_notes(session.close());
    let found = found?;
    if json {
        println!("{}", serde_json::to_string(&found)?);
    } else {
        // One write for the whole list: hundreds of references would
        // otherwise be hundreds of line-buffered writes.
        let mut text = String::new();
        for r in &found.references {
            // A cloned repository's names and lines must not drive the
            // terminal (engine attack E-6).
            let _ = writeln!(
                text,
                "{}:{}:{}  {}",
                escape_controls(&r.path),
                r.line,
                r.column,
                // A tab is the line's layout (gofmt, Makefiles), not a hazard.
                escape_controls_in_prose(&r.text)
            );
        }
        let _ = writeln!(text, "{}", found.summary());
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn rename(ctx: &Ctx, args: &RenameArgs, paint: Paint) -> anyhow::Result<ExitCode> {
    let timeout = Duration::from_secs(args.timeout);
    let file = existing_file(&args.file)?;
    refuse_state(ctx, &file)?;
    let mut session = Session::new(ctx, timeout);
    let progress = Progress::start("renaming", progress::wanted(args.json));
    let result = rename_inner(&mut session, &file, args, paint, &progress);
    progress.finish();
    say_notes(session.close());
    result
}

fn rename_inner(
    session: &mut Session<'_>,
    file: &Path,
    args: &RenameArgs,
    paint: Paint,
    progress: &Progress,
) -> anyhow::Result<ExitCode> {
    let (apply, json) = (args.apply, args.json);
    let mut found: Option<rename::Plan> = None;
    let mut notes = Vec::new();
    let bounds = bounds(session.ctx);
    let target = uri::comparable(file);
    let at_position = position::parse_place(&args.symbol).is_some();
    let written = writer::compute_and_apply(
        bounds,
        apply,
        "rename",
        |stale| {
            // A position names a symbol only in the text it was given for:
            // once that file changed it may point at something else.
            if at_position && stale.iter().any(|p| uri::comparable(p) == target) {
                bail!(
                    "{} changed while the rename was computed, so {} may no longer be {:?}; nothing written, run it again",
                    session.display(file),
                    args.symbol,
                    found
                        .as_ref()
                        .map_or("the same symbol", |p| p.symbol.as_str())
                );
            }
            let plan = rename::plan(session, file, &args.symbol, &args.new_name)?;
            let changes = plan.changes.clone();
            found = Some(plan);
            Ok(changes)
        },
        |note| notes.push(note),
    );
    for note in notes {
        session.note(note);
    }
    written?;
    let plan = found.context("no rename was computed")?;
    let files: Vec<String> = plan
        .changes
        .iter()
        .map(|c| session.display(&c.path))
        .collect();
    let diffs: Vec<String> = plan
        .changes
        .iter()
        .zip(&files)
        .map(|(c, name)| diff::unified(name, &c.before, &c.after))
        .collect();
    let mut problems = Vec::new();
    let mut others = Vec::new();
    if apply {
        progress.stage("re-checking");
        others = still_mentioning(session, file, &plan);
        let mut checked: Vec<(PathBuf, Option<&str>)> = plan
            .changes
            .iter()
            .map(|c| (c.path.clone(), Some(c.after.as_str())))
            .collect();
        checked.extend(others.iter().map(|path| (path.clone(), None)));
        problems = recheck(session, file, &checked, progress);
    }
    let others: Vec<String> = others.iter().map(|p| session.display(p)).collect();
    if json {
        let report = json!({
            "symbol": plan.symbol,
            "new_name": plan.new_name,
            "applied": apply,
            "edits": plan.edits,
            "files": files.iter().zip(&diffs).map(|(path, diff)| json!({"path": path, "diff": diff})).collect::<Vec<_>>(),
            "diagnostics": problems,
            "also_checked": others,
        });
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    // The text that follows starts on a clean line.
    progress.finish();
    // From here on for a person's terminal: names and lines escaped.
    let files: Vec<String> = files
        .iter()
        .map(|f| escape_controls(f).into_owned())
        .collect();
    let others: Vec<String> = others
        .iter()
        .map(|f| escape_controls(f).into_owned())
        .collect();
    let diffs: Vec<String> = plan
        .changes
        .iter()
        .zip(&files)
        .map(|(c, name)| shown_diff(name, &c.before, &c.after))
        .collect();
    let problems: Vec<String> = problems
        .iter()
        .map(|p| escape_controls(p).into_owned())
        .collect();
    let verb = if apply { "renamed" } else { "would rename" };
    println!(
        "{verb} {:?} to {:?}: {} {} in {} {} ({})",
        plan.symbol,
        plan.new_name,
        plan.edits,
        plural(plan.edits, "edit", "edits"),
        files.len(),
        plural(files.len(), "file", "files"),
        files.join(", ")
    );
    if !apply {
        for diff in &diffs {
            print!("{}", paint.diff(diff));
        }
        println!("preview only; nothing written (add --apply to write)");
    } else {
        // Files the server left out that still use the old name are where
        // a rename from a stale view breaks code: they are re-checked too,
        // and named.
        let scope = match others.len() {
            0 => "the touched files".to_string(),
            n => format!(
                "the touched files and {n} other {} that still {} {:?} ({})",
                plural(n, "file", "files"),
                plural(n, "mentions", "mention"),
                plan.symbol,
                others.join(", ")
            ),
        };
        if problems.is_empty() {
            println!("re-checked {scope}: no errors");
        } else {
            println!("re-checked {scope}:");
            for problem in &problems {
                print!("{}", paint.problems(&format!("  {problem}\n")));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// At most this many files the rename did not touch are re-checked.
const MAX_OTHER_RECHECKS: usize = 20;
/// At most this many files are looked through for the old name.
const MAX_SCANNED: usize = 5_000;

/// Files of the renamed file's kind that the rename did not touch but that
/// still have the old name as a whole word: a server that did not know
/// them (created a moment ago, outside its view) left them out, and an
/// import of the old name there is now broken. The same name may of course
/// be another symbol's; the re-check tells.
fn still_mentioning(session: &Session<'_>, file: &Path, plan: &rename::Plan) -> Vec<PathBuf> {
    let Some(server) = session
        .servers_for(file)
        .ok()
        .and_then(|s| s.into_iter().next())
    else {
        return Vec::new();
    };
    let touched: Vec<PathBuf> = plan
        .changes
        .iter()
        .map(|c| uri::comparable(&c.path))
        .collect();
    crate::intel::session::project_files(&session.ctx.project_root, &server.extensions, MAX_SCANNED)
        .into_iter()
        .filter(|path| !touched.contains(&uri::comparable(path)))
        .filter(|path| {
            crate::intel::session::read_text(path)
                .is_ok_and(|text| position::find_word(&text, &plan.symbol).is_some())
        })
        .take(MAX_OTHER_RECHECKS)
        .collect()
}

/// The errors and warnings of the files as they are on disk now (each with
/// the text the rename wrote, if it wrote it), from their first server, the
/// renamed symbol's own file first: each check sends that file's text, so
/// the files that use the symbol are checked after the file that defines
/// it is up to date in the server. (Sending every new text up front and
/// then checking would send each file's text twice, and
/// typescript-language-server publishes nothing for an unchanged text.)
fn recheck(
    session: &mut Session<'_>,
    first: &Path,
    files: &[(PathBuf, Option<&str>)],
    progress: &Progress,
) -> Vec<String> {
    let mut files: Vec<&(PathBuf, Option<&str>)> = files.iter().collect();
    files.sort_by_key(|(path, _)| path != first);
    let mut problems = Vec::new();
    let total = files.len();
    for (done, (path, written)) in files.into_iter().enumerate() {
        progress.set(done, total);
        let display = session.display(path);
        let Some(server) = session
            .servers_for(path)
            .ok()
            .and_then(|s| s.into_iter().next())
        else {
            continue;
        };
        // What is on disk now is what gets checked: a file someone changed
        // after the write is not reported from the text we wrote.
        let now = match crate::intel::session::read_text(path) {
            Ok(now) => now,
            Err(error) => {
                problems.push(format!("{display}: not re-checked: {error:#}"));
                continue;
            }
        };
        if written.is_some_and(|written| now != written) {
            problems.push(format!(
                "{display}: changed by someone else after the rename wrote it; re-checked as it is now"
            ));
        }
        match session.diagnose(&server, path, &now) {
            Ok(diagnostics) => {
                for d in diagnostics.iter().filter(|d| d.severity.unwrap_or(1) <= 2) {
                    problems.push(format!(
                        "{display}:{}:{}: {}",
                        d.range.start.line + 1,
                        d.range.start.character + 1,
                        d.message.lines().next().unwrap_or("")
                    ));
                }
            }
            Err(error) => problems.push(format!("{display}: not re-checked: {error}")),
        }
    }
    problems
}

/// ", N skipped (see above)" when files could not be searched.
fn skipped_note(skipped: usize) -> String {
    match skipped {
        0 => String::new(),
        n => format!(", {n} skipped (see above)"),
    }
}

/// Where the code writers may write: the project, never the hook state.
fn bounds(ctx: &Ctx) -> writer::Bounds<'_> {
    writer::Bounds {
        project: &ctx.project_root,
        state: &ctx.state_root,
    }
}

fn lang_arg(lang: Option<&str>) -> anyhow::Result<Option<Lang>> {
    lang.map(|name| name.parse::<Lang>().map_err(anyhow::Error::msg))
        .transpose()
}

pub fn search(ctx: &Ctx, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let json = args.json;
    let lang = lang_arg(args.lang.as_deref())?;
    let pattern = &args.pattern;
    let scope = structural::scope(ctx, &args.paths, lang)?;
    let progress = Progress::start("searching", progress::wanted(json));
    let found = structural::search(ctx, &scope, pattern, &|done, total| {
        progress.set(done, total)
    });
    progress.finish();
    let (hits, skipped) = found?;
    for why in &skipped {
        eprintln!("ralph-hooks: skipped {}", escape_controls(why));
    }
    if json {
        // Serialized straight into one buffer: thousands of matches would
        // otherwise be built as a JSON tree first.
        #[derive(serde::Serialize)]
        struct Found<'a> {
            matches: &'a [structural::Hit],
            count: usize,
        }
        let mut text = serde_json::to_string(&Found {
            matches: &hits,
            count: hits.len(),
        })?;
        text.push('\n');
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = String::new();
    for hit in &hits {
        // The matched source may hold a string literal with ESC or BEL.
        let first_line = escape_controls(hit.text.lines().next().unwrap_or(""));
        let more = if hit.text.contains('\n') { " …" } else { "" };
        let _ = writeln!(
            text,
            "{}:{}:{}: {first_line}{more}",
            escape_controls(&hit.path),
            hit.line,
            hit.column
        );
    }
    print!("{text}");
    let files: std::collections::BTreeSet<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    println!(
        "{} {} in {} {} ({} searched{})",
        hits.len(),
        plural(hits.len(), "match", "matches"),
        files.len(),
        plural(files.len(), "file", "files"),
        scope.files.len() - skipped.len(),
        skipped_note(skipped.len())
    );
    Ok(ExitCode::SUCCESS)
}

pub fn rewrite(ctx: &Ctx, args: &RewriteArgs, paint: Paint) -> anyhow::Result<ExitCode> {
    let (json, apply) = (args.json, args.apply);
    let lang = lang_arg(args.lang.as_deref())?;
    let (pattern, replacement) = (&args.pattern, &args.replacement);
    let scope = structural::scope(ctx, &args.paths, lang)?;
    let progress = Progress::start("rewriting", progress::wanted(json));
    let mut found: Option<(Vec<structural::Rewritten>, Vec<String>)> = None;
    let mut notes = Vec::new();
    // Computed from the files as they are now; a file changed before the
    // write is rewritten again from its new text.
    let written = writer::compute_and_apply(
        bounds(ctx),
        apply,
        "rewrite",
        |_| {
            let (rewritten, skipped) =
                structural::rewrite(ctx, &scope, pattern, replacement, &|done, total| {
                    progress.set(done, total)
                })?;
            let changes = rewritten.iter().map(|r| r.change.clone()).collect();
            found = Some((rewritten, skipped));
            Ok(changes)
        },
        |note| notes.push(note),
    );
    progress.finish();
    say_notes(notes);
    written?;
    let (rewritten, skipped) = found.context("no rewrite was computed")?;
    for why in &skipped {
        eprintln!("ralph-hooks: skipped {}", escape_controls(why));
    }
    let total: usize = rewritten.iter().map(|r| r.replacements).sum();
    if json {
        let files: Vec<_> = rewritten
            .iter()
            .map(|r| {
                json!({
                    "path": r.display,
                    "replacements": r.replacements,
                    "diff": diff::unified(&r.display, &r.change.before, &r.change.after),
                })
            })
            .collect();
        println!(
            "{}",
            json!({"files": files, "count": total, "applied": apply && !rewritten.is_empty()})
        );
        return Ok(ExitCode::SUCCESS);
    }
    if rewritten.is_empty() {
        let searched = scope.files.len() - skipped.len();
        println!(
            "no match for {pattern:?} in {searched} {}{}; nothing to rewrite",
            plural(searched, "file", "files"),
            skipped_note(skipped.len())
        );
        return Ok(ExitCode::SUCCESS);
    }
    if apply {
        for r in &rewritten {
            println!(
                "rewrote {}: {} {}",
                escape_controls(&r.display),
                r.replacements,
                plural(r.replacements, "replacement", "replacements")
            );
        }
    } else {
        for r in &rewritten {
            print!(
                "{}",
                paint.diff(&shown_diff(
                    &escape_controls(&r.display),
                    &r.change.before,
                    &r.change.after
                ))
            );
        }
    }
    println!(
        "{} {total} {} in {} {}{}{}",
        if apply { "applied" } else { "would apply" },
        plural(total, "replacement", "replacements"),
        rewritten.len(),
        plural(rewritten.len(), "file", "files"),
        skipped_note(skipped.len()),
        if apply {
            ""
        } else {
            "; dry run, nothing written (add --apply to write)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

pub fn fix(ctx: &Ctx, args: &FixArgs, paint: Paint) -> anyhow::Result<ExitCode> {
    let (json, dry_run, no_ast_grep) = (args.json, args.dry_run, args.no_ast_grep);
    let timeout = Duration::from_secs(args.timeout);
    let paths = &args.paths;
    let settings = Settings::load(ctx);
    let rules = (!no_ast_grep && settings.config.ast_grep).then(|| rule_set(ctx));
    let mut files = match files::collect_files(ctx, &settings, rules.as_ref(), paths) {
        Ok(files) => files,
        Err(NoSuchPath(path)) => bail!("no such file or directory: {path}"),
    };
    // A file named directly that nothing handles is still reported (why
    // nothing can fix it), not silently left out.
    for path in paths {
        let absolute = std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or(path.clone());
        if absolute.is_file() && !files.contains(&absolute) {
            files.push(absolute);
        }
    }
    for file in &files {
        refuse_state(ctx, file)?;
    }
    let mut session = Session::new(ctx, timeout);
    let progress = Progress::start("fixing", progress::wanted(json));
    let mut reports: Vec<fix::FileFix> = Vec::new();
    let mut notes = Vec::new();
    // Each file is fixed from its text as it is now; one changed before the
    // write is fixed again from its new text (the others are kept).
    let written = writer::compute_and_apply(
        bounds(ctx),
        !dry_run,
        "fix",
        |stale| {
            if stale.is_empty() {
                reports = files
                    .iter()
                    .enumerate()
                    .map(|(done, file)| {
                        progress.set(done, files.len());
                        fix::fix_file(&mut session, rules.as_ref(), file)
                    })
                    .collect();
            } else {
                for report in reports.iter_mut().filter(|r| stale.contains(&r.path)) {
                    *report = fix::fix_file(&mut session, rules.as_ref(), &report.path.clone());
                }
            }
            Ok(reports
                .iter()
                .filter(|r| r.changed())
                .filter_map(|r| r.change.clone())
                .collect())
        },
        |note| notes.push(note),
    );
    progress.finish();
    say_notes(notes);
    let changes = match written {
        Ok(changes) => changes,
        Err(error) => {
            say_notes(session.close());
            return Err(error);
        }
    };
    let written = !dry_run && !changes.is_empty();
    say_notes(session.close());
    let fixed: usize = reports.iter().map(|r| r.fixed.len()).sum();
    let remaining: usize = reports.iter().map(|r| r.remaining.len()).sum();
    if json {
        let files: Vec<_> = reports
            .iter()
            .filter(|r| r.changed() || !r.remaining.is_empty() || !r.notes.is_empty())
            .map(|r| {
                let diff = r
                    .change
                    .as_ref()
                    .map(|c| diff::unified(&r.display, &c.before, &c.after))
                    .unwrap_or_default();
                json!({"path": r.display, "fixed": r.fixed, "remaining": r.remaining,
                       "notes": r.notes, "diff": diff})
            })
            .collect();
        println!(
            "{}",
            json!({"files": files, "fixed": fixed, "remaining": remaining,
                   "written": written, "dry_run": dry_run})
        );
        return Ok(ExitCode::SUCCESS);
    }
    for r in &reports {
        let display = escape_controls(&r.display);
        for note in &r.notes {
            println!("{display}: {}", escape_controls(note));
        }
        if let Some(change) = r.change.as_ref().filter(|_| r.changed()) {
            print!(
                "{}",
                paint.diff(&shown_diff(&display, &change.before, &change.after))
            );
        }
    }
    if fixed == 0 {
        println!("nothing to fix");
    } else {
        println!(
            "{} {fixed} {} in {} {}:",
            if written { "fixed" } else { "would fix" },
            plural(fixed, "problem", "problems"),
            changes.len(),
            plural(changes.len(), "file", "files")
        );
        for r in &reports {
            for line in &r.fixed {
                println!(
                    "  {}: {}",
                    escape_controls(&r.display),
                    escape_controls(line)
                );
            }
        }
        if dry_run {
            println!("dry run; nothing written");
        }
    }
    if remaining > 0 {
        println!(
            "{remaining} {}:",
            plural(remaining, "problem remains", "problems remain")
        );
        for r in &reports {
            for line in &r.remaining {
                let line = escape_controls(line);
                print!("{}", paint.problems(&format!("  {line}\n")));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Notes about an answer's completeness, on stderr.
fn say_notes(notes: Vec<String>) {
    for note in notes {
        eprintln!("ralph-hooks: note: {}", escape_controls(&note));
    }
}

/// A unified diff for a person's terminal: `name` already escaped, and the
/// lines' control characters (a repository's OSC title, clipboard or
/// screen-clearing sequences) escaped, its line breaks kept.
fn shown_diff(name: &str, before: &str, after: &str) -> String {
    // A CRLF file's line ends are not worth an escape on every line.
    let diff = diff::unified(name, before, after).replace("\r\n", "\n");
    escape_controls_in_prose(&diff).into_owned()
}
