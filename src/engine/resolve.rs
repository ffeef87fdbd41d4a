//! One file: which server (if any) handles it, and its diagnostics from
//! that server, converted, filtered by severity and sorted. Shared by the
//! project check, the post-edit report and `refs`/`rename`/`fix`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::model::{Diag, Severity, UnusedLevel};
use super::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::lsp::pool::Limits;
use crate::lsp::servers::{ServerDef, workspace_root};
use crate::lsp::{Launch, LspError, Pool};

/// Files larger than this are not sent to a server: they are reported as
/// not checked (the same limit as every source read, docs/architecture.md, "Reliability").
pub const MAX_FILE_BYTES: u64 = crate::util::fsread::limits::SOURCE;

/// What to do with one file.
#[derive(Clone)]
pub enum Resolved<'s> {
    /// No server claims this kind of file: say nothing.
    Unsupported,
    /// Configured away (outside the project, excluded).
    Skipped(&'static str),
    NotInstalled {
        language: String,
        tried: Vec<String>,
        hint: String,
    },
    Target(Box<Target<'s>>),
}

/// A file's server, ready to start.
#[derive(Clone)]
pub struct Target<'s> {
    pub server: &'s ServerDef,
    pub launch: Launch,
    pub language_id: String,
    /// Why this server (see [`crate::lsp::servers::Registry::select`]).
    pub reason: Option<String>,
}

pub fn resolve<'s>(ctx: &Ctx, settings: &'s Settings, path: &Path) -> Resolved<'s> {
    if let Err(why) = settings.allows(path) {
        return Resolved::Skipped(why);
    }
    select_server(ctx, settings, path)
}

/// Resolves the files of a project check, choosing the server once per
/// folder and extension: the choice (the project's configuration files,
/// the program's place, the workspace root) depends on nothing else, and
/// making it per file cost ~70 µs each (0.12 s of a warm check of 1,800
/// files).
#[derive(Default)]
pub struct Resolver<'s> {
    chosen: HashMap<(PathBuf, OsString), Resolved<'s>>,
    beside: HashMap<(PathBuf, OsString), Vec<Target<'s>>>,
}

impl<'s> Resolver<'s> {
    pub fn resolve(&mut self, ctx: &Ctx, settings: &'s Settings, path: &Path) -> Resolved<'s> {
        if let Err(why) = settings.allows(path) {
            return Resolved::Skipped(why);
        }
        let key = (
            path.parent().unwrap_or(Path::new("")).to_path_buf(),
            path.extension().unwrap_or_default().to_os_string(),
        );
        if let Some(resolved) = self.chosen.get(&key) {
            return resolved.clone();
        }
        let resolved = select_server(ctx, settings, path);
        self.chosen.insert(key, resolved.clone());
        resolved
    }

    /// [`linters`] for `path`, chosen once per folder and extension like
    /// the server.
    pub fn linters(
        &mut self,
        ctx: &Ctx,
        settings: &'s Settings,
        path: &Path,
        chosen: &ServerDef,
    ) -> Vec<Target<'s>> {
        let key = (
            path.parent().unwrap_or(Path::new("")).to_path_buf(),
            path.extension().unwrap_or_default().to_os_string(),
        );
        self.beside
            .entry(key)
            .or_insert_with(|| linters(ctx, settings, path, chosen))
            .clone()
    }
}

/// The linters that check `path` beside its server `chosen` (ruff beside
/// a Python type checker), each reported under its own name.
pub fn linters<'s>(
    ctx: &Ctx,
    settings: &'s Settings,
    path: &Path,
    chosen: &ServerDef,
) -> Vec<Target<'s>> {
    settings
        .registry
        .linters_beside(chosen, path, &ctx.project_root)
        .into_iter()
        .map(|beside| {
            let reason = format!("it lints beside {}", chosen.name);
            let root = workspace_root(beside.server, path, &ctx.project_root);
            let mut launch = beside
                .server
                .launch(beside.program, root, &ctx.project_root);
            launch.reason = Some(reason.clone());
            Target {
                server: beside.server,
                launch,
                language_id: beside.language_id,
                reason: Some(reason),
            }
        })
        .collect()
}

fn select_server<'s>(ctx: &Ctx, settings: &'s Settings, path: &Path) -> Resolved<'s> {
    match settings.registry.select(path, &ctx.project_root) {
        crate::lsp::servers::Selection::Unsupported => Resolved::Unsupported,
        crate::lsp::servers::Selection::NotInstalled {
            language,
            tried,
            hint,
        } => Resolved::NotInstalled {
            language,
            tried,
            hint,
        },
        crate::lsp::servers::Selection::Found {
            server,
            program,
            language_id,
            reason,
        } => {
            let root = workspace_root(server, path, &ctx.project_root);
            let mut launch = server.launch(program, root, &ctx.project_root);
            launch.reason = Some(reason.clone());
            Resolved::Target(Box::new(Target {
                launch,
                server,
                language_id,
                reason: Some(reason),
            }))
        }
    }
}

/// The server's diagnostics for `path` holding `text`, at or above
/// `min_severity`, errors first.
pub fn lsp_diagnostics(
    pool: &mut Pool,
    target: &Target<'_>,
    path: &Path,
    text: &str,
    min_severity: Severity,
    unused: UnusedLevel,
    deadline: Instant,
) -> Result<Vec<Diag>, LspError> {
    lsp_diagnostics_within(
        pool,
        target,
        path,
        text,
        min_severity,
        unused,
        &Limits::until(deadline),
    )
    .0
}

/// [`lsp_diagnostics`] under [`Limits`]; also how long the server's
/// warm-up took of it.
pub fn lsp_diagnostics_within(
    pool: &mut Pool,
    target: &Target<'_>,
    path: &Path,
    text: &str,
    min_severity: Severity,
    unused: UnusedLevel,
    limits: &Limits,
) -> (Result<Vec<Diag>, LspError>, Duration) {
    let answer = pool.diagnose_within(&target.launch, path, text, &target.language_id, limits);
    let found = match answer.result {
        Ok(found) => found,
        Err(error) => return (Err(error), answer.warmup),
    };
    let mut diags: Vec<Diag> = found
        .iter()
        .map(|d| Diag::from_server_as(d, text, unused))
        .filter(|d| d.severity <= min_severity)
        .collect();
    sort_and_dedup(&mut diags);
    (Ok(diags), answer.warmup)
}

pub fn sort_and_dedup(diags: &mut Vec<Diag>) {
    diags.sort_by(|a, b| {
        a.priority_key()
            .cmp(&b.priority_key())
            .then_with(|| a.message.cmp(&b.message))
    });
    diags.dedup();
}

/// A failure that means "this server is not really installed": the file
/// vanished between lookup and start, or a rustup proxy without its
/// component (`~/.cargo/bin/rust-analyzer` exists even then).
pub fn looks_not_installed(error: &LspError) -> bool {
    match error {
        LspError::Spawn { error, .. } => error.kind() == std::io::ErrorKind::NotFound,
        LspError::Exited { detail, .. } => {
            let detail = detail.to_lowercase();
            detail.contains("unknown binary")
                || detail.contains("is not installed")
                || detail.contains("not installed for the toolchain")
        }
        _ => false,
    }
}

/// The absolute path of the edited file from a tool input.
pub fn absolute(ctx: &Ctx, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_root.join(path)
    }
}

/// The key and display form of a file: project-relative when inside it.
pub fn display_path(ctx: &Ctx, path: &Path) -> String {
    if let Ok(relative) = path.strip_prefix(&ctx.project_root) {
        return relative.to_string_lossy().into_owned();
    }
    if let (Ok(root), Ok(file)) = (ctx.project_root.canonicalize(), path.canonicalize())
        && let Ok(relative) = file.strip_prefix(root)
    {
        return relative.to_string_lossy().into_owned();
    }
    path.to_string_lossy().into_owned()
}
