//! `ralph-hooks search` and `rewrite`: an ast-grep pattern (`$VAR`,
//! `$$$ARGS`) over the project's files, in-process and in parallel, on the
//! engine of [`crate::astgrep`]. A rewrite is a list of whole-file changes
//! that [`super::writer`] writes all or nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::bail;
use serde::Serialize;

use super::writer::FileChange;
use crate::astgrep::{self, Lang};
use crate::hook::ctx::Ctx;
use crate::util::fsread::{self, Links};

/// Folders never walked (dependencies, build output, VCS data).
const NEVER: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    "dist",
    "build",
];

/// The files a pattern runs over and the language each is parsed as.
#[derive(Debug, Clone)]
pub struct Scope {
    pub files: Vec<(PathBuf, Lang)>,
}

/// One match, 1-based, with its meta-variables' texts (`$$$ARGS` joined
/// with `, `).
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub text: String,
    pub vars: BTreeMap<String, String>,
}

/// One file's rewrite.
#[derive(Debug, Clone)]
pub struct Rewritten {
    pub display: String,
    pub change: FileChange,
    pub replacements: usize,
}

/// The files under `paths` (the project when empty) that the engine can
/// parse: as `lang` when given (only files of that language, unless a file
/// is named directly), else by extension. Hidden folders, dependencies and
/// the hook state root are never walked.
pub fn scope(ctx: &Ctx, paths: &[PathBuf], lang: Option<Lang>) -> anyhow::Result<Scope> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.project_root.clone());
    let mut roots = Vec::new();
    for path in paths {
        let absolute = if path.is_absolute() {
            path.clone()
        } else {
            cwd.join(path)
        };
        if !absolute.exists() {
            bail!("no such file or directory: {}", path.display());
        }
        roots.push(absolute);
    }
    if roots.is_empty() {
        roots.push(ctx.project_root.clone());
    }
    let state_root = std::fs::canonicalize(&ctx.state_root).unwrap_or(ctx.state_root.clone());
    let mut files = BTreeSet::new();
    for root in &roots {
        if root.is_file() {
            let real = std::fs::canonicalize(root).unwrap_or(root.clone());
            if real.starts_with(&state_root) {
                bail!("{} is in the hook state; not searched", root.display());
            }
            match lang.or_else(|| Lang::from_path(root)) {
                Some(file_lang) => {
                    files.insert((root.clone(), file_lang.name()));
                }
                None => bail!(
                    "{}: no ast-grep language for this file; give one with --lang",
                    root.display()
                ),
            }
            continue;
        }
        let state_root = state_root.clone();
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .filter_entry(move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let name = entry.file_name().to_string_lossy();
                !(is_dir && (NEVER.contains(&name.as_ref()) || entry.path() == state_root))
            })
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(file_lang) = Lang::from_path(entry.path()) else {
                continue;
            };
            if lang.is_none_or(|wanted| wanted == file_lang) {
                files.insert((entry.into_path(), file_lang.name()));
            }
        }
    }
    let files = files
        .into_iter()
        .filter_map(|(path, name)| Some((path, name.parse().ok()?)))
        .collect();
    Ok(Scope { files })
}

/// Told (files done, files in all) as the files are finished, from any
/// worker thread.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Runs `work` over every file of the scope on one thread per core; the
/// results come back in the scope's (sorted) order. A file that cannot be
/// read is reported in `skipped`.
fn par_map<T: Send>(
    scope: &Scope,
    progress: Progress<'_>,
    work: impl Fn(&Path, Lang, String) -> anyhow::Result<Option<T>> + Sync,
) -> (Vec<T>, Vec<String>) {
    let files = &scope.files;
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len().max(1));
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let mut slots: Vec<Option<Result<Option<T>, String>>> = Vec::new();
    slots.resize_with(files.len(), || None);
    std::thread::scope(|threads| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                threads.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some((path, lang)) = files.get(index) else {
                            break;
                        };
                        let result = match read_source(path) {
                            Ok(Some(text)) => work(path, *lang, text).map_err(|e| format!("{e:#}")),
                            Ok(None) => Ok(None),
                            Err(why) => Err(why),
                        };
                        done.push((index, result));
                        progress(finished.fetch_add(1, Ordering::Relaxed) + 1, files.len());
                    }
                    done
                })
            })
            .collect();
        for handle in handles {
            if let Ok(done) = handle.join() {
                for (index, result) in done {
                    slots[index] = Some(result);
                }
            }
        }
    });
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (slot, (path, _)) in slots.into_iter().zip(files) {
        match slot {
            Some(Ok(Some(value))) => out.push(value),
            Some(Ok(None)) => {}
            Some(Err(why)) => skipped.push(format!("{}: {why}", path.display())),
            None => skipped.push(format!(
                "{}: the parser failed on this file",
                path.display()
            )),
        }
    }
    (out, skipped)
}

/// A source file's text; one too large is an error with its reason, so
/// the caller says it was skipped (never "0 matches" over it).
pub fn read_source(path: &Path) -> Result<Option<String>, String> {
    match fsread::read_text(path, astgrep::scan::MAX_FILE_BYTES, Links::Follow) {
        Ok(Some(text)) => Ok(Some(text)),
        Ok(None) => Err("it no longer exists".into()),
        Err(fsread::ReadError::TooLarge { .. }) => Err(format!(
            "larger than {} MiB, not searched",
            astgrep::scan::MAX_FILE_BYTES / (1024 * 1024)
        )),
        Err(error) => Err(error.reason()),
    }
}

/// The pattern (and replacement) compiled once for each language of the
/// scope, before any file is read. A language in which it is not valid
/// code is left out (a JavaScript pattern need not parse as C); when it is
/// valid in none, the parser's reason is the error.
fn compile_per_lang<T>(
    scope: &Scope,
    compile: impl Fn(Lang) -> Result<T, String>,
) -> anyhow::Result<Vec<(Lang, T)>> {
    let mut langs: Vec<Lang> = Vec::new();
    for (_, lang) in &scope.files {
        if !langs.contains(lang) {
            langs.push(*lang);
        }
    }
    let mut compiled = Vec::new();
    let mut first_error = None;
    for lang in &langs {
        match compile(*lang) {
            Ok(engine) => compiled.push((*lang, engine)),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    if !langs.is_empty() && compiled.is_empty() {
        bail!("{}", first_error.unwrap_or_default());
    }
    Ok(compiled)
}

fn engine_for<T>(compiled: &[(Lang, T)], lang: Lang) -> Option<&T> {
    compiled
        .iter()
        .find(|(known, _)| *known == lang)
        .map(|(_, engine)| engine)
}

pub fn search(
    ctx: &Ctx,
    scope: &Scope,
    pattern: &str,
    progress: Progress<'_>,
) -> anyhow::Result<(Vec<Hit>, Vec<String>)> {
    let searchers = compile_per_lang(scope, |lang| astgrep::Searcher::new(pattern, lang))?;
    let root = ctx.project_root.as_path();
    let (per_file, skipped) = par_map(scope, progress, |path, lang, text| {
        let Some(searcher) = engine_for(&searchers, lang) else {
            return Ok(None);
        };
        let found = searcher.find(&text);
        if found.is_empty() {
            return Ok(None);
        }
        let display = display(root, path);
        Ok(Some(
            found
                .into_iter()
                .map(|m| {
                    let mut vars = m.vars;
                    for (name, texts) in m.multi_vars {
                        vars.insert(name, texts.join(", "));
                    }
                    Hit {
                        path: display.clone(),
                        line: m.line,
                        column: m.column,
                        end_line: m.end_line,
                        end_column: m.end_column,
                        text: m.text,
                        vars,
                    }
                })
                .collect::<Vec<_>>(),
        ))
    });
    Ok((per_file.into_iter().flatten().collect(), skipped))
}

pub fn rewrite(
    ctx: &Ctx,
    scope: &Scope,
    pattern: &str,
    replacement: &str,
    progress: Progress<'_>,
) -> anyhow::Result<(Vec<Rewritten>, Vec<String>)> {
    let rewriters = compile_per_lang(scope, |lang| {
        astgrep::Rewriter::new(pattern, replacement, lang)
    })?;
    let root = ctx.project_root.as_path();
    let (changed, skipped) = par_map(scope, progress, |path, lang, text| {
        let Some(rewriter) = engine_for(&rewriters, lang) else {
            return Ok(None);
        };
        let edits = rewriter.edits(&text);
        if edits.is_empty() {
            return Ok(None);
        }
        let after = astgrep::apply_edits(&text, &edits);
        if after == text {
            return Ok(None);
        }
        Ok(Some(Rewritten {
            display: display(root, path),
            replacements: edits.len(),
            change: FileChange {
                path: path.to_path_buf(),
                before: text,
                after,
            },
        }))
    });
    Ok((changed, skipped))
}

/// `path` relative to the project when inside it.
pub fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
