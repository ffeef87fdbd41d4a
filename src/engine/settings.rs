//! What the project configured: the `diagnostics` section (reporting,
//! blocking, timeouts) and the include/exclude globs of the `lsp` section,
//! with the server registry. A broken section is reported and replaced by
//! the defaults: a typo must not turn diagnostics into a fault.

use std::path::{Path, PathBuf};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::model::{Severity, UnusedLevel};
use crate::hook::ctx::Ctx;
use crate::lsp::servers::{Registry, ServerDef};

/// When an edit's diagnostics block (during a running loop only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOn {
    /// Errors this edit introduced.
    IntroducedErrors,
    /// Any error in the file, new or not.
    AnyErrors,
    Never,
}

/// The `diagnostics` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct DiagnosticsConfig {
    pub enabled: bool,
    /// An edit's check, server start included (seed AC-LSP-002: 5 s). A
    /// server's `startupTimeout` is its time to load the project in the
    /// daemon, not the edit's: an edit is never held longer than this.
    pub timeout_ms: u64,
    /// How much longer than `timeout_ms` an edit's check may wait for a
    /// server that is still starting (0 by default: the edit is told
    /// "warming up, checked on the next edit" at its deadline, and the
    /// server goes on starting in the daemon).
    pub warmup_wait_ms: u64,
    /// The least severe diagnostic reported; hints never by default.
    pub min_severity: Severity,
    /// Unused variables and imports (hints tagged `Unnecessary`):
    /// `warning` (default), `info`, `hint` or `off` (as sent); never blocking.
    pub unused: UnusedLevel,
    pub block_on: BlockOn,
    pub max_items: usize,
    pub max_chars: usize,
    pub ast_grep: bool,
    pub ast_grep_timeout_ms: u64,
    /// Total time the Stop hook spends re-checking a loop's files.
    pub loop_budget_ms: u64,
    /// Time a server gets to exit after `shutdown` before it is killed.
    /// 0 (the default) kills it at once: a one-shot hook has its answer,
    /// the server keeps nothing we need, and a polite pyright shutdown
    /// alone costs 40–70 ms on every edit.
    pub shutdown_grace_ms: u64,
}

impl Default for DiagnosticsConfig {
    fn default() -> DiagnosticsConfig {
        DiagnosticsConfig {
            enabled: true,
            timeout_ms: 5_000,
            warmup_wait_ms: 0,
            min_severity: Severity::Warning,
            unused: UnusedLevel::Warning,
            block_on: BlockOn::IntroducedErrors,
            max_items: 20,
            max_chars: 4_000,
            ast_grep: true,
            ast_grep_timeout_ms: 3_000,
            loop_budget_ms: 30_000,
            shutdown_grace_ms: 0,
        }
    }
}

/// The include/exclude part of the `lsp` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct LspFilterConfig {
    include: Vec<String>,
    exclude: Vec<String>,
}

/// Always excluded: dependencies, build output, VCS data (plus the state root).
const DEFAULT_EXCLUDES: &[&str] = &[
    "node_modules/**",
    "**/node_modules/**",
    "target/**",
    ".git/**",
    ".venv/**",
    "**/.venv/**",
];

/// Everything a diagnostics run needs from the configuration.
pub struct Settings {
    pub config: DiagnosticsConfig,
    pub registry: Registry,
    include: Option<GlobSet>,
    exclude: GlobSet,
    project_root: PathBuf,
    state_root: PathBuf,
}

impl Settings {
    pub fn load(ctx: &Ctx) -> Settings {
        let config = ctx
            .config()
            .section::<DiagnosticsConfig>("diagnostics")
            .unwrap_or_else(|error| {
                eprintln!("ralph-hooks: warning: using default diagnostics settings: {error:#}");
                DiagnosticsConfig::default()
            });
        let filter = ctx
            .config()
            .section::<LspFilterConfig>("lsp")
            .unwrap_or_else(|error| {
                eprintln!("ralph-hooks: warning: ignoring lsp include/exclude: {error:#}");
                LspFilterConfig::default()
            });
        let registry = Registry::load(&ctx.project_root, ctx.config());
        for warning in &registry.warnings {
            eprintln!("ralph-hooks: warning: {warning}");
        }
        let include = if filter.include.is_empty() {
            None
        } else {
            Some(build_globs(&filter.include))
        };
        let mut excludes: Vec<String> = DEFAULT_EXCLUDES.iter().map(|s| s.to_string()).collect();
        excludes.extend(filter.exclude);
        Settings {
            config,
            registry,
            include,
            exclude: build_globs(&excludes),
            project_root: ctx.project_root.clone(),
            state_root: ctx.state_root.clone(),
        }
    }

    /// `Err(why)` when the file is not to be checked.
    pub fn allows(&self, path: &Path) -> Result<(), &'static str> {
        // Compare as given, then canonical: the project may sit behind a
        // symlink (macOS /tmp, a linked checkout).
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let relative = match path.strip_prefix(&self.project_root) {
            Ok(relative) => relative.to_path_buf(),
            Err(_) => match canonical(path).strip_prefix(canonical(&self.project_root)) {
                Ok(relative) => relative.to_path_buf(),
                Err(_) => return Err("outside the project"),
            },
        };
        if path.starts_with(&self.state_root)
            || canonical(path).starts_with(canonical(&self.state_root))
        {
            return Err("inside the ralph-hooks state root");
        }
        let relative = relative.as_path();
        if self.exclude.is_match(relative) {
            return Err("excluded by a glob");
        }
        if let Some(include) = &self.include
            && !include.is_match(relative)
        {
            return Err("not matched by the include globs");
        }
        Ok(())
    }

    /// The deadline for one file's check, start-up included. The server
    /// is not asked: its `startupTimeout` is for loading the project in
    /// the daemon, and an edit is never held past this.
    pub fn file_timeout(&self, _server: &ServerDef) -> Duration {
        Duration::from_millis(self.config.timeout_ms.max(1))
    }

    /// How long the hook waits for a starting server on top of the check's
    /// own time.
    pub fn warmup_wait(&self) -> Duration {
        Duration::from_millis(self.config.warmup_wait_ms)
    }

    pub fn shutdown_grace(&self, server: &ServerDef) -> Duration {
        server
            .shutdown_timeout
            .unwrap_or(Duration::from_millis(self.config.shutdown_grace_ms))
    }
}

fn build_globs(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        match Glob::new(pattern) {
            Ok(glob) => {
                builder.add(glob);
            }
            Err(error) => eprintln!("ralph-hooks: warning: ignoring glob {pattern:?}: {error}"),
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}
