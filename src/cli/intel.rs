//! `ralph-hooks refs | rename | search | rewrite | fix` (issue 13): code
//! intelligence for the agent, run through Bash or by hand. The work is in
//! [`crate::intel`]; this file reads the arguments and prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::json;

use super::Args;
use crate::astgrep::Lang;
use crate::engine::files::{self, NoSuchPath};
use crate::engine::run::rule_set;
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::intel::refs::plural;
use crate::intel::session::Session;
use crate::intel::writer::{self, FileChange};
use crate::intel::{diff, fix, refs, rename, structural};
use crate::util::text::escape_controls;

/// How long one command may wait for its servers, start-up included
/// (pyright indexing a cold project takes seconds).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn run(ctx: &Ctx, command: &str, args: &mut Args) -> anyhow::Result<ExitCode> {
    match command {
        "refs" => refs_cmd(ctx, args),
        "rename" => rename_cmd(ctx, args),
        "search" => search_cmd(ctx, args),
        "rewrite" => rewrite_cmd(ctx, args),
        "fix" => fix_cmd(ctx, args),
        other => bail!("unknown command {other:?}"),
    }
}

fn timeout(args: &mut Args) -> anyhow::Result<Duration> {
    Ok(args
        .number::<u64>("--timeout")?
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs))
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

fn refs_cmd(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let timeout = timeout(args)?;
    let (Some(file), Some(spec)) = (args.positional(), args.positional()) else {
        bail!("usage: ralph-hooks refs <file> <symbol | line:col> [--json]");
    };
    args.finish()?;
    let file = existing_file(&file)?;
    refuse_state(ctx, &file)?;
    let mut session = Session::new(ctx, timeout);
    let found = refs::find(&mut session, &file, &spec);
    say_notes(session.close());
    let found = found?;
    if json {
        println!("{}", serde_json::to_string(&found)?);
    } else {
        // One write for the whole list: hundreds of references would
        // otherwise be hundreds of line-buffered writes.
        let mut text = String::new();
        for r in &found.references {
            let _ = writeln!(text, "{}:{}:{}  {}", r.path, r.line, r.column, r.text);
        }
        let _ = writeln!(text, "{}", found.summary());
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

fn rename_cmd(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let apply = args.flag("--apply");
    let timeout = timeout(args)?;
    let (Some(file), Some(spec), Some(new_name)) =
        (args.positional(), args.positional(), args.positional())
    else {
        bail!("usage: ralph-hooks rename <file> <symbol | line:col> <new-name> [--apply] [--json]");
    };
    args.finish()?;
    let file = existing_file(&file)?;
    refuse_state(ctx, &file)?;
    let mut session = Session::new(ctx, timeout);
    let result = rename_inner(&mut session, &file, &spec, &new_name, apply, json);
    say_notes(session.close());
    result
}

fn rename_inner(
    session: &mut Session<'_>,
    file: &Path,
    spec: &str,
    new_name: &str,
    apply: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let plan = rename::plan(session, file, spec, new_name)?;
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
    if apply {
        writer::apply_all(&plan.changes, bounds(session.ctx))?;
        problems = recheck(session, file, &plan.changes);
    }
    if json {
        let report = json!({
            "symbol": plan.symbol,
            "new_name": plan.new_name,
            "applied": apply,
            "edits": plan.edits,
            "files": files.iter().zip(&diffs).map(|(path, diff)| json!({"path": path, "diff": diff})).collect::<Vec<_>>(),
            "diagnostics": problems,
        });
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
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
            print!("{diff}");
        }
        println!("preview only; nothing written (add --apply to write)");
    } else if problems.is_empty() {
        println!("re-checked the touched files: no errors");
    } else {
        println!("re-checked the touched files:");
        for problem in &problems {
            println!("  {problem}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The errors and warnings of the written files, from their first server,
/// the renamed symbol's own file first: each check sends that file's new
/// text, so the files that use the symbol are checked after the file that
/// defines it is up to date in the server. (Sending every new text up
/// front and then checking would send each file's text twice, and
/// typescript-language-server publishes nothing for an unchanged text.)
fn recheck(session: &mut Session<'_>, first: &Path, changes: &[FileChange]) -> Vec<String> {
    let mut changes: Vec<&FileChange> = changes.iter().collect();
    changes.sort_by_key(|c| c.path != first);
    let mut problems = Vec::new();
    for change in changes {
        let display = session.display(&change.path);
        let Some(server) = session
            .servers_for(&change.path)
            .ok()
            .and_then(|s| s.into_iter().next())
        else {
            continue;
        };
        match session.diagnose(&server, &change.path, &change.after) {
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

fn lang_arg(args: &mut Args) -> anyhow::Result<Option<Lang>> {
    args.value("--lang")?
        .map(|name| name.parse::<Lang>().map_err(anyhow::Error::msg))
        .transpose()
}

fn search_cmd(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let lang = lang_arg(args)?;
    let Some(pattern) = args.positional() else {
        bail!("usage: ralph-hooks search <pattern> [--lang L] [PATH...] [--json]");
    };
    let paths: Vec<PathBuf> = args.rest().into_iter().map(PathBuf::from).collect();
    args.finish()?;
    let scope = structural::scope(ctx, &paths, lang)?;
    let (hits, skipped) = structural::search(ctx, &scope, &pattern)?;
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
        let first_line = hit.text.lines().next().unwrap_or("");
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

fn rewrite_cmd(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let apply = args.flag("--apply");
    let lang = lang_arg(args)?;
    let (Some(pattern), Some(replacement)) = (args.positional(), args.positional()) else {
        bail!(
            "usage: ralph-hooks rewrite <pattern> <replacement> [--lang L] [PATH...] [--apply] [--json]"
        );
    };
    let paths: Vec<PathBuf> = args.rest().into_iter().map(PathBuf::from).collect();
    args.finish()?;
    let scope = structural::scope(ctx, &paths, lang)?;
    let (rewritten, skipped) = structural::rewrite(ctx, &scope, &pattern, &replacement)?;
    for why in &skipped {
        eprintln!("ralph-hooks: skipped {}", escape_controls(why));
    }
    let total: usize = rewritten.iter().map(|r| r.replacements).sum();
    if apply && !rewritten.is_empty() {
        let changes: Vec<FileChange> = rewritten.iter().map(|r| r.change.clone()).collect();
        writer::apply_all(&changes, bounds(ctx))?;
    }
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
                r.display,
                r.replacements,
                plural(r.replacements, "replacement", "replacements")
            );
        }
    } else {
        for r in &rewritten {
            print!(
                "{}",
                diff::unified(&r.display, &r.change.before, &r.change.after)
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

fn fix_cmd(ctx: &Ctx, args: &mut Args) -> anyhow::Result<ExitCode> {
    let json = args.flag("--json");
    let dry_run = args.flag("--dry-run");
    let no_ast_grep = args.flag("--no-ast-grep");
    let timeout = timeout(args)?;
    let paths: Vec<PathBuf> = args.rest().into_iter().map(PathBuf::from).collect();
    args.finish()?;
    let settings = Settings::load(ctx);
    let rules = (!no_ast_grep && settings.config.ast_grep).then(|| rule_set(ctx));
    let mut files = match files::collect_files(ctx, &settings, rules.as_ref(), &paths) {
        Ok(files) => files,
        Err(NoSuchPath(path)) => bail!("no such file or directory: {path}"),
    };
    // A file named directly that nothing handles is still reported (why
    // nothing can fix it), not silently left out.
    for path in &paths {
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
    let reports: Vec<fix::FileFix> = files
        .iter()
        .map(|file| fix::fix_file(&mut session, rules.as_ref(), file))
        .collect();
    let changes: Vec<FileChange> = reports
        .iter()
        .filter(|r| r.changed())
        .filter_map(|r| r.change.clone())
        .collect();
    let written = if !dry_run && !changes.is_empty() {
        let result = writer::apply_all(&changes, bounds(ctx));
        if let Err(error) = result {
            say_notes(session.close());
            return Err(error);
        }
        true
    } else {
        false
    };
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
        for note in &r.notes {
            println!("{}: {note}", r.display);
        }
        if let Some(change) = r.change.as_ref().filter(|_| r.changed()) {
            print!(
                "{}",
                diff::unified(&r.display, &change.before, &change.after)
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
                println!("  {}: {line}", r.display);
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
                println!("  {line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Notes about an answer's completeness, on stderr.
fn say_notes(notes: Vec<String>) {
    for note in notes {
        eprintln!("ralph-hooks: note: {note}");
    }
}
