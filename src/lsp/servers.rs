//! Which language server handles a file, and where its binary is.
//!
//! Built-in defaults cover Python (pyright, then basedpyright, then ruff —
//! the first one installed), TypeScript/JavaScript
//! (typescript-language-server), C/C++ (clangd), Rust (rust-analyzer) and Go
//! (gopls). Projects add or change servers in the Claude Code `.lsp.json`
//! schema, in `<project>/.lsp.json` and in the `lsp` section of
//! `<project>/.claude/ralph-hooks.json` (that one wins):
//! - an entry under a new name is tried before the built-ins;
//! - an entry under a built-in's name changes that built-in in place (only
//!   the fields it gives), and `"disabled": true` turns it off;
//! - besides the Claude Code fields (`command`, `args`,
//!   `extensionToLanguage`, `env`, `initializationOptions`, `settings`,
//!   `startupTimeout`, `workspaceFolder`, `diagnostics`), an entry may set
//!   `rootMarkers`, `quietMs`, `awaitProgress`, `indexProgress`,
//!   `reopenWhenClean`,
//!   `diagnosticMode` (`push`|`pull`|`auto`), `createdOrDeleted`
//!   (`told`|`restartForQueries`|`restart`: how the daemon brings the
//!   server up to date with files created or deleted behind its back) and
//!   `installHint`.
//!
//! Binaries are looked up on PATH and in the project's `node_modules/.bin`
//! and `.venv/bin`, so project-local installs work without activation.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

pub use super::client::PullCapability;
use super::client::{CreatedOrDeleted, DiagnosticMode, Launch};
use crate::hook::config::Config;
use crate::util::fsread::{self, Links, limits};

/// One `.lsp.json` entry; every field optional so an entry can change one
/// field of a built-in.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfig {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub extension_to_language: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub initialization_options: Option<Value>,
    #[serde(default)]
    pub settings: Option<Value>,
    /// Milliseconds the server may need to start and answer a first file.
    #[serde(default)]
    pub startup_timeout: Option<u64>,
    /// Milliseconds it gets to exit after `shutdown`.
    #[serde(default)]
    pub shutdown_timeout: Option<u64>,
    /// The workspace root, relative to the project (default: nearest root marker).
    #[serde(default)]
    pub workspace_folder: Option<String>,
    /// `false`: this server is not used for diagnostics.
    #[serde(default)]
    pub diagnostics: Option<bool>,
    #[serde(default)]
    pub disabled: Option<bool>,
    #[serde(default)]
    pub root_markers: Option<Vec<String>>,
    #[serde(default)]
    pub quiet_ms: Option<u64>,
    #[serde(default)]
    pub await_progress: Option<String>,
    /// The progress title of the server's index of the whole project (see
    /// `Launch::index_progress`); empty: none.
    #[serde(default)]
    pub index_progress: Option<String>,
    #[serde(default)]
    pub reopen_when_clean: Option<bool>,
    #[serde(default)]
    pub diagnostic_mode: Option<String>,
    /// `told`, `restartForQueries` or `restart` (see [`CreatedOrDeleted`]).
    #[serde(default)]
    pub created_or_deleted: Option<String>,
    #[serde(default)]
    pub install_hint: Option<String>,
}

/// Where a server definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    BuiltIn,
    LspJson,
    Config,
}

/// A server the registry knows, with every field resolved.
#[derive(Debug, Clone)]
pub struct ServerDef {
    pub name: String,
    /// For people: "Python", "TypeScript/JavaScript".
    pub language: String,
    pub command: String,
    pub args: Vec<String>,
    /// `.py` → `python` (the LSP language id).
    pub extensions: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
    /// The Python environment of whoever asked for the check (see
    /// [`super::environment`]); `None`: this process's.
    pub caller_env: Option<BTreeMap<String, String>>,
    pub initialization_options: Option<Value>,
    pub settings: Option<Value>,
    pub startup_timeout: Option<Duration>,
    pub shutdown_timeout: Option<Duration>,
    pub workspace_folder: Option<String>,
    pub root_markers: Vec<String>,
    pub quiet: Duration,
    pub await_progress: Option<String>,
    /// See [`Launch::index_progress`].
    pub index_progress: Option<String>,
    pub reopen_when_clean: bool,
    /// See [`Launch::created_or_deleted`].
    pub created_or_deleted: CreatedOrDeleted,
    /// What the server needs to know the files it was not given (clangd's
    /// compilation database); `None` when it finds the project by itself.
    pub project_index: Option<ProjectIndex>,
    pub mode: DiagnosticMode,
    /// Declare pull diagnostics (`textDocument.diagnostic`) to this server,
    /// with dynamic registration where it registers pull itself (pyright).
    /// Not declared by default: it silently turns some servers pull-only.
    pub pull_capability: PullCapability,
    pub install_hint: String,
    pub enabled: bool,
    pub origin: Origin,
    /// One of ours (possibly changed by the project's configuration), as
    /// opposed to a server the project added under a name of its own.
    pub ours: bool,
    /// A linter that works beside the language's checker (ruff): `fix`
    /// asks it too, although the checker is the one chosen for the file.
    pub linter: bool,
    /// The checker's own command line, which a project check runs instead
    /// of asking the server about every file (see [`BatchCli`]).
    pub batch_cli: Option<BatchCli>,
}

/// A checker whose own command line checks a project better than its
/// server can be asked to: pyrefly's server has no reliable end-of-check
/// signal when it checks the workspace itself, and opening every file costs
/// it four times the memory and time of `pyrefly check`; ty's `ty check`
/// answers a cold project in half the time of a freshly started `ty server`
/// asked about every file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchCli {
    /// `pyrefly check --output-format json --min-severity warn FILE…`.
    Pyrefly,
    /// `ty check --output-format gitlab FILE…`.
    Ty,
    /// `ruff check --output-format json FILE…`: the linter beside the
    /// type checker; its command line lints a 2,000-file project in a
    /// fraction of the time a server takes to be asked about every file.
    Ruff,
}

impl BatchCli {
    /// Whether, once the server has checked the whole project, a re-check
    /// after changes is better asked of the server: ty's server re-checks
    /// incrementally (a fraction of `ty check`'s full run) and pulls give
    /// a definite answer per file; pyrefly's workspace pushes have no end
    /// signal, so its command line runs again.
    pub fn rechecks_on_server(self) -> bool {
        matches!(self, BatchCli::Ty)
    }
}

/// Files of which one must exist in the workspace for a server to see the
/// whole project, and how to make one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectIndex {
    pub files: Vec<String>,
    pub hint: String,
}

/// The quiet window for servers we know nothing about (reference §6.1).
const DEFAULT_QUIET: Duration = Duration::from_millis(150);

impl ServerDef {
    fn builtin(
        name: &str,
        language: &str,
        command: &str,
        args: &[&str],
        extensions: &[(&str, &str)],
        root_markers: &[&str],
        install_hint: &str,
    ) -> ServerDef {
        ServerDef {
            name: name.into(),
            language: language.into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            extensions: extensions
                .iter()
                .map(|(e, l)| (e.to_string(), l.to_string()))
                .collect(),
            env: BTreeMap::new(),
            caller_env: None,
            initialization_options: None,
            settings: None,
            startup_timeout: None,
            shutdown_timeout: None,
            workspace_folder: None,
            root_markers: root_markers.iter().map(|m| m.to_string()).collect(),
            quiet: DEFAULT_QUIET,
            await_progress: None,
            index_progress: None,
            reopen_when_clean: false,
            created_or_deleted: CreatedOrDeleted::Told,
            project_index: None,
            mode: DiagnosticMode::Push,
            pull_capability: PullCapability::Undeclared,
            install_hint: install_hint.into(),
            enabled: true,
            origin: Origin::BuiltIn,
            ours: true,
            linter: false,
            batch_cli: None,
        }
    }

    fn quiet_ms(mut self, ms: u64) -> ServerDef {
        self.quiet = Duration::from_millis(ms);
        self
    }

    fn on_created_or_deleted(mut self, how: CreatedOrDeleted) -> ServerDef {
        self.created_or_deleted = how;
        self
    }

    fn reopen_when_clean(mut self) -> ServerDef {
        self.reopen_when_clean = true;
        self
    }

    fn linter(mut self) -> ServerDef {
        self.linter = true;
        self
    }

    fn batch_cli(mut self, cli: BatchCli) -> ServerDef {
        self.batch_cli = Some(cli);
        self
    }

    /// Pulled: the client declares pull diagnostics and asks for them.
    fn pulled(mut self, capability: PullCapability) -> ServerDef {
        self.mode = DiagnosticMode::Pull;
        self.pull_capability = capability;
        self
    }

    fn initialization_options(mut self, options: Value) -> ServerDef {
        self.initialization_options = Some(options);
        self
    }

    fn project_index(mut self, files: &[&str], hint: &str, progress: &str) -> ServerDef {
        self.project_index = Some(ProjectIndex {
            files: files.iter().map(|f| f.to_string()).collect(),
            hint: hint.to_string(),
        });
        self.index_progress = Some(progress.to_string());
        self
    }

    fn apply(&mut self, config: &ServerConfig, origin: Origin) {
        // The command line answers a project check in the server's place
        // only for a server configured as it is: settings or options handed
        // to the server, or another program, are not what `ty check` or
        // `ruff check` would read (engine attack E-22/E-23: ruff's select
        // obeyed by the hook and not by `check`; a ty rule ignored warm and
        // reported cold).
        if config.command.is_some()
            || config.args.is_some()
            || config.env.is_some()
            || config.initialization_options.is_some()
            || config.settings.is_some()
        {
            self.batch_cli = None;
        }
        if let Some(command) = &config.command {
            self.command = command.clone();
        }
        if let Some(args) = &config.args {
            self.args = args.clone();
        }
        if let Some(extensions) = &config.extension_to_language {
            self.extensions = extensions
                .iter()
                .map(|(ext, lang)| (normalize_extension(ext), lang.clone()))
                .collect();
        }
        if let Some(env) = &config.env {
            self.env = env.clone();
        }
        if config.initialization_options.is_some() {
            self.initialization_options = config.initialization_options.clone();
        }
        if config.settings.is_some() {
            self.settings = config.settings.clone();
        }
        if let Some(ms) = config.startup_timeout {
            self.startup_timeout = Some(Duration::from_millis(ms));
        }
        if let Some(ms) = config.shutdown_timeout {
            self.shutdown_timeout = Some(Duration::from_millis(ms));
        }
        if config.workspace_folder.is_some() {
            self.workspace_folder = config.workspace_folder.clone();
        }
        if let Some(markers) = &config.root_markers {
            self.root_markers = markers.clone();
        }
        if let Some(ms) = config.quiet_ms {
            self.quiet = Duration::from_millis(ms);
        }
        if config.index_progress.is_some() {
            self.index_progress = config.index_progress.clone().filter(|t| !t.is_empty());
        }
        if config.await_progress.is_some() {
            self.await_progress = config.await_progress.clone().filter(|t| !t.is_empty());
        }
        if let Some(reopen) = config.reopen_when_clean {
            self.reopen_when_clean = reopen;
        }
        if let Some(how) = &config.created_or_deleted {
            self.created_or_deleted = match how.as_str() {
                "told" => CreatedOrDeleted::Told,
                "restartForQueries" => CreatedOrDeleted::RestartForQueries,
                // Anything else errs on the side of a right answer.
                _ => CreatedOrDeleted::Restart,
            };
        }
        if let Some(mode) = &config.diagnostic_mode {
            self.mode = match mode.as_str() {
                "pull" => DiagnosticMode::Pull,
                "push" => DiagnosticMode::Push,
                _ => DiagnosticMode::Auto,
            };
        }
        if let Some(hint) = &config.install_hint {
            self.install_hint = hint.clone();
        }
        if config.disabled == Some(true) || config.diagnostics == Some(false) {
            self.enabled = false;
        } else if config.disabled == Some(false) || config.diagnostics == Some(true) {
            self.enabled = true;
        }
        self.origin = origin;
    }

    fn from_config(name: &str, config: &ServerConfig, origin: Origin) -> ServerDef {
        let mut def = ServerDef::builtin(name, "", name, &[], &[], &[], "");
        def.ours = false;
        def.mode = DiagnosticMode::Auto;
        def.apply(config, origin);
        let mut languages: Vec<&str> = def.extensions.values().map(String::as_str).collect();
        languages.sort_unstable();
        languages.dedup();
        def.language = if languages.is_empty() {
            name.to_string()
        } else {
            languages.join("/")
        };
        if def.install_hint.is_empty() {
            def.install_hint = format!("install `{}` or fix its entry in .lsp.json", def.command);
        }
        def
    }

    /// The start command for this server on `root`, with `program` resolved.
    pub fn launch(&self, program: PathBuf, root: PathBuf, project_root: &Path) -> Launch {
        let project = project_root.to_string_lossy();
        let expand = |text: &str| text.replace("${CLAUDE_PROJECT_DIR}", &project);
        let mut env: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), expand(v)))
            .collect();
        // What a Python checker resolves imports from is the caller's, not
        // whatever process started the daemon (see `environment`).
        // (A linter resolves no imports: ruff keeps one server for all.)
        if !self.linter
            && (self.extensions.contains_key(".py") || self.extensions.contains_key(".pyi"))
        {
            let given: BTreeMap<String, String> = env.iter().cloned().collect();
            env.extend(super::environment::python_caller_environment(
                &given,
                self.caller_env.as_ref(),
                &root,
            ));
        }
        // Only where the index has something to be built from (clangd
        // without a compilation database builds none).
        let index_progress = self.index_progress.clone().filter(|_| {
            self.project_index
                .as_ref()
                .is_none_or(|index| index.files.iter().any(|name| root.join(name).is_file()))
        });
        Launch {
            name: self.name.clone(),
            program,
            args: self.args.iter().map(|a| expand(a)).collect(),
            env,
            root,
            initialization_options: self.initialization_options.clone(),
            settings: self.settings.clone(),
            quiet: self.quiet,
            await_progress: self.await_progress.clone(),
            index_progress,
            reopen_when_clean: self.reopen_when_clean,
            mode: self.mode,
            pull_capability: self.pull_capability,
            extensions: self.extensions.keys().cloned().collect(),
            created_or_deleted: self.created_or_deleted,
            reason: None,
        }
    }
}

fn normalize_extension(extension: &str) -> String {
    if extension.starts_with('.') {
        extension.to_string()
    } else {
        format!(".{extension}")
    }
}

const TYPESCRIPT_EXTENSIONS: [(&str, &str); 8] = [
    (".ts", "typescript"),
    (".mts", "typescript"),
    (".cts", "typescript"),
    (".tsx", "typescriptreact"),
    (".js", "javascript"),
    (".mjs", "javascript"),
    (".cjs", "javascript"),
    (".jsx", "javascriptreact"),
];

/// The built-in servers, in preference order.
pub fn builtin_servers() -> Vec<ServerDef> {
    let python = [(".py", "python"), (".pyi", "python")];
    let python_roots = [
        "pyproject.toml",
        "pyrightconfig.json",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ];
    let mut rust_analyzer = ServerDef::builtin(
        "rust-analyzer",
        "Rust",
        "rust-analyzer",
        &[],
        &[(".rs", "rust")],
        &["Cargo.toml"],
        "rustup component add rust-analyzer",
    )
    .quiet_ms(300)
    // Like typescript-language-server, it publishes nothing for a clean
    // file that changes and stays clean.
    .reopen_when_clean();
    // Its rustc diagnostics come from `cargo check`, which only ends after
    // its "cargo check" progress does; cold it needs 3–6 s (reference §1).
    rust_analyzer.await_progress = Some("cargo check".into());
    rust_analyzer.startup_timeout = Some(Duration::from_secs(30));
    rust_analyzer.initialization_options = Some(rust_analyzer_memory_settings());
    let mut servers = vec![
        // pyright, basedpyright, ruff and clangd send one complete publish
        // for an open file, echoing its version (reference §3): the first
        // publish with our version is final, and any quiet window would only
        // add to every edit's wait.
        ServerDef::builtin(
            "pyright",
            "Python",
            "pyright-langserver",
            &["--stdio"],
            &python,
            &python_roots,
            "npm install -g pyright",
        )
        .quiet_ms(0)
        .pulled(PullCapability::Dynamic)
        // Told of a created file (didChangeWatchedFiles), pyright's checks
        // take it in, but it still left it out of `textDocument/references`
        // (tests/fresh.rs): the daemon restarts it before such a query
        // when files came or went, not before every check (a restart
        // costs a cold answer: benches/restart.rs).
        .on_created_or_deleted(CreatedOrDeleted::RestartForQueries),
        ServerDef::builtin(
            "basedpyright",
            "Python",
            "basedpyright-langserver",
            &["--stdio"],
            &python,
            &python_roots,
            "pip install basedpyright",
        )
        .quiet_ms(0)
        .pulled(PullCapability::Dynamic),
        // ty: pulled (it pushes only for open files when the client does not
        // pull), one answer per pull; a pull is final. A cold project check
        // runs `ty check` (see `BatchCli`): twice as fast as pulling every
        // file from a server that has just started.
        {
            let mut ty = ServerDef::builtin(
                "ty",
                "Python",
                "ty",
                &["server"],
                &python,
                &python_roots,
                "pip install ty",
            )
            .quiet_ms(0)
            .pulled(PullCapability::Declared);
            ty.batch_cli = Some(BatchCli::Ty);
            ty
        },
        // pyrefly pushes one complete, versioned publish per open file; a
        // project check runs its own command line (see `BatchCli`).
        {
            let mut pyrefly = ServerDef::builtin(
                "pyrefly",
                "Python",
                "pyrefly",
                &["lsp"],
                &python,
                &python_roots,
                "pip install pyrefly",
            )
            .quiet_ms(0);
            pyrefly.batch_cli = Some(BatchCli::Pyrefly);
            pyrefly
        },
        ServerDef::builtin(
            "ruff",
            "Python",
            "ruff",
            &["server"],
            &python,
            &python_roots,
            "pip install ruff",
        )
        .quiet_ms(0)
        .pulled(PullCapability::Declared)
        .linter()
        .batch_cli(BatchCli::Ruff),
        // It publishes `[]` first and the real list about 155 ms later, and
        // nothing at all when a clean document changes and stays clean.
        // tsserver never took in a file created beside an open one (its
        // import stayed unresolved, told or not, opened or not): the daemon
        // restarts it when files come or go.
        ServerDef::builtin(
            "typescript-language-server",
            "TypeScript/JavaScript",
            "typescript-language-server",
            &["--stdio"],
            &TYPESCRIPT_EXTENSIONS,
            &["tsconfig.json", "jsconfig.json", "package.json"],
            "npm install -g typescript-language-server typescript@5 (TypeScript 7 has no tsserver)",
        )
        .quiet_ms(300)
        .reopen_when_clean()
        .initialization_options(typescript_language_server_memory_options())
        .on_created_or_deleted(CreatedOrDeleted::Restart),
        // TypeScript 7's own server: pull only (it pushes nothing for .ts
        // files), answers are final. Chosen for a project whose TypeScript
        // is 7 or newer (see [`Registry::select`]).
        ServerDef::builtin(
            "tsgo",
            "TypeScript/JavaScript",
            "tsc",
            &["--lsp", "--stdio"],
            &TYPESCRIPT_EXTENSIONS,
            &["tsconfig.json", "jsconfig.json", "package.json"],
            "npm install --save-dev typescript@7 (its server is `tsc --lsp --stdio`)",
        )
        .quiet_ms(0)
        .pulled(PullCapability::Declared),
        ServerDef::builtin(
            "clangd",
            "C/C++",
            "clangd",
            &[],
            &[
                (".c", "c"),
                (".h", "c"),
                (".cc", "cpp"),
                (".cpp", "cpp"),
                (".cxx", "cpp"),
                (".c++", "cpp"),
                (".hh", "cpp"),
                (".hpp", "cpp"),
                (".hxx", "cpp"),
            ],
            &["compile_commands.json", "compile_flags.txt", ".clangd"],
            "apt-get install clangd",
        )
        .quiet_ms(0)
        .project_index(
            &[
                "compile_commands.json",
                "build/compile_commands.json",
                "compile_flags.txt",
            ],
            "generate one with `cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` or `bear -- make`",
            // clangd's background index of the compilation database.
            "indexing",
        ),
        rust_analyzer,
        ServerDef::builtin(
            "gopls",
            "Go",
            "gopls",
            &[],
            &[(".go", "go")],
            &["go.work", "go.mod"],
            "go install golang.org/x/tools/gopls@latest (or apt-get install gopls)",
        ),
    ];
    // Loading a project (and checking it the first time) may take a server
    // this long in the daemon; a server silent this long while files wait
    // for it is hung.
    for server in &mut servers {
        server.startup_timeout.get_or_insert(BUILTIN_STARTUP);
    }
    servers
}

/// typescript-language-server's start options, chosen for memory (seed 004
/// AC-PERF-002: five servers within 500 MB). By default it runs three
/// Node processes beside itself: a syntax-only tsserver, the semantic
/// tsserver and, under that, the typings installer that fetches `@types`
/// packages from npm for plain JavaScript. On a small TypeScript 5 project
/// that was 455 MB; with one tsserver that answers everything and no
/// installer it is about 215 MB (`cargo bench --bench memory`). Diagnostics,
/// references, renames and code actions all come from the semantic server
/// either way; the syntax server only answers editor requests sooner while
/// the project loads, which a hook never asks. Types downloaded behind the
/// project's back would make a check depend on the network, not on what is
/// on disk.
fn typescript_language_server_memory_options() -> Value {
    serde_json::json!({
        "disableAutomaticTypingAcquisition": true,
        "tsserver": { "useSyntaxServer": "never" },
    })
}

/// rust-analyzer's settings, chosen for memory. Most of its memory on a small
/// crate is the standard library: with the sysroot loaded it holds the item
/// trees and name maps of `core`, `alloc` and `std` (about 480 MB resident
/// for a one-file crate, 325 MB of it item trees by its own
/// `analysis-stats`), against about 60 MB without. The errors the hooks
/// report for Rust are rustc's own, from the `cargo check` rust-analyzer runs
/// after each save (the compiler loads the standard library itself, in a
/// process that ends); rust-analyzer's own analysis of the workspace stays,
/// and where a type comes from `std` it is unknown to it, which it reports
/// nothing about. Cache priming (indexing every crate at start) is off too:
/// it only makes a first completion sooner. Trading the sysroot back is one
/// line in `.lsp.json`: `"rust-analyzer": {"initializationOptions": {}}`.
fn rust_analyzer_memory_settings() -> Value {
    serde_json::json!({
        "cargo": { "sysroot": null },
        "cachePriming": { "enable": false },
    })
}

/// The built-in servers' start-up time (see [`ServerDef::startup_timeout`]).
pub const BUILTIN_STARTUP: Duration = Duration::from_secs(30);

/// The servers in the order they are tried, plus problems found in the
/// config files (reported, never fatal).
#[derive(Debug, Clone)]
pub struct Registry {
    pub servers: Vec<ServerDef>,
    pub warnings: Vec<String>,
}

/// What the registry says about one file.
#[derive(Debug)]
pub enum Selection<'r> {
    /// No server claims the extension.
    Unsupported,
    /// Servers claim it, but none is installed.
    NotInstalled {
        language: String,
        tried: Vec<String>,
        hint: String,
    },
    Found {
        server: &'r ServerDef,
        program: PathBuf,
        language_id: String,
        /// Why this server: the project's configuration, its TypeScript
        /// version, or the first one installed.
        reason: String,
    },
}

impl Registry {
    pub fn builtin() -> Registry {
        Registry {
            servers: builtin_servers(),
            warnings: Vec::new(),
        }
    }

    /// Servers started from here on run in `caller`'s Python environment
    /// (see [`super::environment`]), not this process's: the daemon checks
    /// for a caller that may have another one.
    pub fn use_caller_environment(&mut self, caller: &BTreeMap<String, String>) {
        for server in &mut self.servers {
            server.caller_env = Some(caller.clone());
        }
    }

    /// Built-ins, then `<project>/.lsp.json`, then the config's `lsp`
    /// section (its `servers` object, or server entries at its top level).
    pub fn load(project_root: &Path, config: &Config) -> Registry {
        let mut registry = Registry::builtin();
        let lsp_json = project_root.join(".lsp.json");
        match fsread::read_text(&lsp_json, limits::CONFIG, Links::Follow) {
            Ok(None) => {}
            Ok(Some(text)) => match serde_json::from_str::<Value>(&text) {
                Ok(value) => {
                    registry.merge(&value, Origin::LspJson, &lsp_json.display().to_string())
                }
                Err(error) => registry
                    .warnings
                    .push(format!("ignoring {}: {error}", lsp_json.display())),
            },
            Err(error) => registry.warnings.push(error.to_string()),
        }
        if let Some(section) = config.raw("lsp") {
            let servers = section
                .get("servers")
                .cloned()
                .unwrap_or_else(|| servers_at_top_level(section));
            registry.merge(
                &servers,
                Origin::Config,
                "the \"lsp\" section of .claude/ralph-hooks.json",
            );
        }
        registry
    }

    fn merge(&mut self, servers: &Value, origin: Origin, from: &str) {
        let Some(entries) = servers.as_object() else {
            self.warnings.push(format!(
                "ignoring {from}: expected an object of servers by name"
            ));
            return;
        };
        let mut new_servers = Vec::new();
        for (name, entry) in entries {
            let config: ServerConfig = match serde_json::from_value(entry.clone()) {
                Ok(config) => config,
                Err(error) => {
                    self.warnings
                        .push(format!("ignoring server {name:?} in {from}: {error}"));
                    continue;
                }
            };
            if let Some(existing) = self.servers.iter_mut().find(|s| s.name == *name) {
                existing.apply(&config, origin);
                continue;
            }
            if config.command.is_none() || config.extension_to_language.is_none() {
                self.warnings.push(format!(
                    "ignoring server {name:?} in {from}: it needs \"command\" and \"extensionToLanguage\""
                ));
                continue;
            }
            // The name reaches Claude's context, `doctor` and `daemon
            // status`: a repository's `.lsp.json` must not put a terminal
            // escape there (engine attack E-17).
            let name = crate::util::text::escape_controls(name);
            new_servers.push(ServerDef::from_config(&name, &config, origin));
        }
        // Servers the project names itself come before the built-ins, in
        // the order written; later sources come first.
        new_servers.append(&mut self.servers);
        self.servers = new_servers;
    }

    /// Enabled servers that claim `extension` (with its dot), in order.
    pub fn candidates(&self, extension: &str) -> Vec<&ServerDef> {
        self.servers
            .iter()
            .filter(|s| s.enabled && s.extensions.contains_key(extension))
            .collect()
    }

    /// Which server handles `file`, and why:
    /// 1. a server the project added under a name of its own (`.lsp.json`,
    ///    the `lsp` config section), the first one installed;
    /// 2. the server the project asks for: Python — `ty.toml` or
    ///    `[tool.ty]` → ty, `pyrefly.toml` or `[tool.pyrefly]` → pyrefly,
    ///    `pyrightconfig.json` or `[tool.pyright]` → pyright,
    ///    `[tool.basedpyright]` → basedpyright (the nearest configuration
    ///    above the file); TypeScript — the project's own `typescript`
    ///    package: 7 or newer → its server (`tsc --lsp --stdio`), older →
    ///    typescript-language-server, which uses it;
    /// 3. else the first one installed, in registry order (for Python:
    ///    pyright, basedpyright, ty, pyrefly, ruff); TypeScript 7's server
    ///    only where the `tsc` found is TypeScript 7 or newer.
    pub fn select(&self, file: &Path, project_root: &Path) -> Selection<'_> {
        let Some(extension) = file
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
        else {
            return Selection::Unsupported;
        };
        let mut candidates = self.candidates(&extension);
        let mut extension = extension;
        if candidates.is_empty() {
            extension = extension.to_lowercase();
            candidates = self.candidates(&extension);
        }
        if candidates.is_empty() {
            return Selection::Unsupported;
        }
        let search_roots = [file.parent().unwrap_or(project_root), project_root];
        let found =
            |server: &'_ ServerDef| find_binary(&server.command, project_root, &search_roots);
        let chosen = |server, program, reason: String| Selection::Found {
            language_id: language_id_of(server, &extension),
            server,
            program,
            reason,
        };
        for server in candidates.iter().filter(|s| !s.ours) {
            if let Some(program) = found(server) {
                let from = match server.origin {
                    Origin::Config => "the lsp section of .claude/ralph-hooks.json",
                    _ => ".lsp.json",
                };
                return chosen(server, program, format!("it is configured in {from}"));
            }
        }
        let mut note = String::new();
        if let Some(wanted) = project_choice(file, project_root, &extension) {
            match candidates.iter().find(|s| s.name == wanted.server) {
                Some(server) => match wanted.program.clone().or_else(|| found(server)) {
                    Some(program) => return chosen(server, program, wanted.why),
                    None => {
                        note = format!(
                            "{}, but {} is not installed ({}); ",
                            wanted.why, server.command, server.install_hint
                        );
                    }
                },
                None => {
                    note = format!("{}, but {} is turned off; ", wanted.why, wanted.server);
                }
            }
        }
        let builtins: Vec<&ServerDef> = candidates.iter().copied().filter(|s| s.ours).collect();
        let order = builtins
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        for server in &builtins {
            let Some(program) = found(server) else {
                continue;
            };
            if server.name == "tsgo" && typescript_at(&program).is_none_or(|v| v.major < 7) {
                // A `tsc` of TypeScript 6 or older has no `--lsp`.
                continue;
            }
            let reason = if builtins.len() == 1 {
                format!("{note}it is the built-in server for {}", server.language)
            } else {
                format!("{note}it is the first installed of {order}")
            };
            return chosen(server, program, reason);
        }
        let first = candidates[0];
        Selection::NotInstalled {
            language: first.language.clone(),
            tried: candidates.iter().map(|s| s.command.clone()).collect(),
            hint: first.install_hint.clone(),
        }
    }
}

/// A linter that runs beside a file's chosen server (see
/// [`Registry::linters_beside`]).
#[derive(Debug)]
pub struct Beside<'r> {
    pub server: &'r ServerDef,
    pub program: PathBuf,
    pub language_id: String,
}

impl Registry {
    /// The linters (ruff) that check `file` beside its chosen server
    /// `chosen`: ours, turned on, installed, and not the chosen server
    /// itself. A project turns one off with `"ruff": {"disabled": true}`
    /// in `.lsp.json` (or the `lsp` config section).
    pub fn linters_beside(
        &self,
        chosen: &ServerDef,
        file: &Path,
        project_root: &Path,
    ) -> Vec<Beside<'_>> {
        let Some(extension) = file
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
        else {
            return Vec::new();
        };
        let search_roots = [file.parent().unwrap_or(project_root), project_root];
        let mut candidates = self.candidates(&extension);
        let mut extension = extension;
        if candidates.is_empty() {
            extension = extension.to_lowercase();
            candidates = self.candidates(&extension);
        }
        candidates
            .into_iter()
            .filter(|server| server.linter && server.ours && server.name != chosen.name)
            .filter_map(|server| {
                let program = find_binary(&server.command, project_root, &search_roots)?;
                Some(Beside {
                    server,
                    program,
                    language_id: language_id_of(server, &extension),
                })
            })
            .collect()
    }
}

fn language_id_of(server: &ServerDef, extension: &str) -> String {
    server
        .extensions
        .get(extension)
        .or_else(|| server.extensions.get(&extension.to_lowercase()))
        .cloned()
        .unwrap_or_default()
}

/// The server a project asks for, and where it says so.
struct ProjectChoice {
    server: &'static str,
    why: String,
    /// The binary the choice comes with (the project's own TypeScript 7
    /// `tsc`: a `tsc` found on PATH may be another version).
    program: Option<PathBuf>,
}

/// The project's own choice of server for `file` (see [`Registry::select`]):
/// the nearest configuration between the file's folder and the project root.
fn project_choice(file: &Path, project_root: &Path, extension: &str) -> Option<ProjectChoice> {
    let python = matches!(extension, ".py" | ".pyi");
    let typescript = TYPESCRIPT_EXTENSIONS.iter().any(|(e, _)| *e == extension);
    if !python && !typescript {
        return None;
    }
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.starts_with(project_root) {
            break;
        }
        let shown = |name: &str| {
            let path = current.join(name);
            path.strip_prefix(project_root)
                .unwrap_or(&path)
                .display()
                .to_string()
        };
        if python {
            for (name, server) in [
                ("ty.toml", "ty"),
                ("pyrefly.toml", "pyrefly"),
                ("pyrightconfig.json", "pyright"),
            ] {
                if current.join(name).is_file() {
                    return Some(ProjectChoice {
                        server,
                        why: format!("{} configures {server}", shown(name)),
                        program: None,
                    });
                }
            }
            if let Some(server) = pyproject_checker(&current.join("pyproject.toml")) {
                return Some(ProjectChoice {
                    server,
                    why: format!("{} has [tool.{server}]", shown("pyproject.toml")),
                    program: None,
                });
            }
        }
        if typescript {
            let package = current.join("node_modules/typescript/package.json");
            if let Some(version) = package_version(&package) {
                let place = shown("node_modules/typescript");
                return Some(if version.major >= 7 {
                    ProjectChoice {
                        server: "tsgo",
                        why: format!(
                            "the project's TypeScript is {} ({place}): its own server, tsc --lsp",
                            version.text
                        ),
                        program: Some(current.join("node_modules/typescript/bin/tsc"))
                            .filter(|tsc| tsc.is_file()),
                    }
                } else {
                    ProjectChoice {
                        server: "typescript-language-server",
                        why: format!(
                            "the project's TypeScript is {} ({place}), served by typescript-language-server",
                            version.text
                        ),
                        program: None,
                    }
                });
            }
        }
        if current == project_root {
            break;
        }
        dir = current.parent();
    }
    None
}

/// The type checker a `pyproject.toml` configures: the first
/// `[tool.ty]`, `[tool.pyrefly]`, `[tool.pyright]` or `[tool.basedpyright]`
/// table (or one of its sub-tables) in the file.
fn pyproject_checker(path: &Path) -> Option<&'static str> {
    let text = fsread::read_text(path, limits::CONFIG, Links::Follow).ok()??;
    for line in text.lines() {
        let line = line.trim();
        let Some(table) = line.strip_prefix("[tool.") else {
            continue;
        };
        for server in ["ty", "pyrefly", "pyright", "basedpyright"] {
            if let Some(rest) = table.strip_prefix(server)
                && (rest.starts_with(']') || rest.starts_with('.'))
            {
                return Some(server);
            }
        }
    }
    None
}

/// A package's version, as text and its major number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageVersion {
    pub text: String,
    pub major: u64,
}

fn package_version(package_json: &Path) -> Option<PackageVersion> {
    let text = fsread::read_text(package_json, limits::CONFIG, Links::Follow).ok()??;
    let value: Value = serde_json::from_str(&text).ok()?;
    let version = value.get("version")?.as_str()?.to_string();
    let major = version.split('.').next()?.parse().ok()?;
    Some(PackageVersion {
        text: version,
        major,
    })
}

/// The TypeScript version a `tsc` binary belongs to: the `typescript`
/// package above the file it resolves to (`node_modules/.bin/tsc` is a link
/// into `node_modules/typescript/bin/`).
pub fn typescript_at(program: &Path) -> Option<PackageVersion> {
    let real = program.canonicalize().ok()?;
    real.ancestors().skip(1).take(4).find_map(|dir| {
        let package = dir.join("package.json");
        let text = fsread::read_text(&package, limits::CONFIG, Links::Follow).ok()??;
        let value: Value = serde_json::from_str(&text).ok()?;
        if value.get("name")?.as_str()? != "typescript" {
            return None;
        }
        package_version(&package)
    })
}

fn servers_at_top_level(section: &Value) -> Value {
    let Some(object) = section.as_object() else {
        return Value::Object(Default::default());
    };
    Value::Object(
        object
            .iter()
            .filter(|(key, value)| {
                !matches!(key.as_str(), "include" | "exclude") && value.is_object()
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Finds a server binary: a path with a slash is taken relative to the
/// project; a bare name is looked up in `node_modules/.bin` and `.venv/bin`
/// of each search root (nearest first), then on PATH.
pub fn find_binary(command: &str, project_root: &Path, search_roots: &[&Path]) -> Option<PathBuf> {
    let command = command.replace("${CLAUDE_PROJECT_DIR}", &project_root.to_string_lossy());
    if command.contains('/') {
        let path = project_root.join(&command);
        return is_executable(&path).then_some(path);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in search_roots {
        // Walk up to the project root so a monorepo package's own
        // node_modules is found before the top-level one.
        let mut dir = Some(*root);
        while let Some(current) = dir {
            for local in ["node_modules/.bin", ".venv/bin"] {
                let candidate = current.join(local);
                if !dirs.contains(&candidate) {
                    dirs.push(candidate);
                }
            }
            if current == project_root || !current.starts_with(project_root) {
                break;
            }
            dir = current.parent();
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let joined = std::env::join_paths(dirs).ok()?;
    which::which_in(&command, Some(joined), project_root).ok()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The workspace root for `file`: the configured folder, else the nearest
/// directory (up to the project root) holding one of the server's markers,
/// else the project root.
pub fn workspace_root(server: &ServerDef, file: &Path, project_root: &Path) -> PathBuf {
    if let Some(folder) = &server.workspace_folder {
        return project_root.join(folder);
    }
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.starts_with(project_root) {
            break;
        }
        if server
            .root_markers
            .iter()
            .any(|marker| current.join(marker).exists())
        {
            return current.to_path_buf();
        }
        if current == project_root {
            break;
        }
        dir = current.parent();
    }
    project_root.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_prefers_pyright_then_basedpyright_ty_pyrefly_ruff() {
        let registry = Registry::builtin();
        let names: Vec<&str> = registry
            .candidates(".py")
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["pyright", "basedpyright", "ty", "pyrefly", "ruff"]);
        assert!(registry.candidates(".md").is_empty());
    }

    #[test]
    fn new_servers_come_first_and_builtins_change_in_place() {
        let mut registry = Registry::builtin();
        registry.merge(
            &json!({
                "mypy-lsp": {"command": "mypy-lsp", "extensionToLanguage": {".py": "python"}},
                "ruff": {"settings": {"lineLength": 100}},
                "pyright": {"disabled": true},
                "broken": {"args": []}
            }),
            Origin::LspJson,
            ".lsp.json",
        );
        let names: Vec<&str> = registry
            .candidates(".py")
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["mypy-lsp", "basedpyright", "ty", "pyrefly", "ruff"]);
        let ruff = registry.servers.iter().find(|s| s.name == "ruff").unwrap();
        assert_eq!(ruff.settings, Some(json!({"lineLength": 100})));
        assert_eq!(ruff.command, "ruff");
        assert_eq!(registry.warnings.len(), 1, "{:?}", registry.warnings);
        let added = &registry.servers[0];
        assert_eq!(added.mode, DiagnosticMode::Auto);
        assert_eq!(added.language, "python");
        assert!(!added.ours);
    }

    fn temp_project(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-servers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn the_project_chooses_its_python_checker() {
        let dir = temp_project("python");
        let file = dir.join("pkg/a.py");
        let choice = |dir: &Path| project_choice(&file, dir, ".py").map(|c| (c.server, c.why));
        assert_eq!(choice(&dir), None);
        std::fs::write(
            dir.join("pyproject.toml"),
            "[project]\nname = \"x\"\n\n[tool.ruff]\nline-length = 100\n\n[tool.pyrefly.errors]\nx = true\n",
        )
        .unwrap();
        assert_eq!(
            choice(&dir),
            Some(("pyrefly", "pyproject.toml has [tool.pyrefly]".into()))
        );
        // The nearest configuration wins.
        std::fs::write(dir.join("pkg/ty.toml"), "").unwrap();
        assert_eq!(
            choice(&dir),
            Some(("ty", "pkg/ty.toml configures ty".into()))
        );
        std::fs::remove_file(dir.join("pkg/ty.toml")).unwrap();
        std::fs::write(dir.join("pyrightconfig.json"), "{}").unwrap();
        assert_eq!(
            choice(&dir),
            Some(("pyright", "pyrightconfig.json configures pyright".into()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_projects_typescript_version_chooses_its_server() {
        let dir = temp_project("typescript");
        let file = dir.join("pkg/a.ts");
        let package = dir.join("node_modules/typescript");
        std::fs::create_dir_all(&package).unwrap();
        let write_version = |version: &str| {
            std::fs::write(
                package.join("package.json"),
                format!("{{\"name\": \"typescript\", \"version\": \"{version}\"}}"),
            )
            .unwrap();
        };
        write_version("7.0.2");
        let choice = project_choice(&file, &dir, ".ts").unwrap();
        assert_eq!(choice.server, "tsgo");
        assert!(choice.why.contains("7.0.2"), "{}", choice.why);
        write_version("5.9.3");
        let choice = project_choice(&file, &dir, ".ts").unwrap();
        assert_eq!(choice.server, "typescript-language-server");
        // A `tsc` resolves to its package's version.
        std::fs::create_dir_all(package.join("bin")).unwrap();
        std::fs::write(package.join("bin/tsc"), "").unwrap();
        assert_eq!(
            typescript_at(&package.join("bin/tsc")).map(|v| v.major),
            Some(5)
        );
        // TypeScript 7's server is the project's own `tsc`, whatever `tsc`
        // PATH holds (a global TypeScript 5 has no `--lsp`), even with no
        // `node_modules/.bin` link.
        write_version("7.0.2");
        let choice = project_choice(&file, &dir, ".ts").unwrap();
        assert_eq!(choice.program, Some(package.join("bin/tsc")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn top_level_servers_in_the_config_section() {
        let section = json!({"include": ["src/**"], "fake": {"command": "x", "extensionToLanguage": {"fk": "fake"}}});
        let servers = servers_at_top_level(&section);
        assert_eq!(servers.as_object().unwrap().len(), 1);
        let mut registry = Registry::builtin();
        registry.merge(&servers, Origin::Config, "config");
        assert_eq!(registry.candidates(".fk").len(), 1);
    }
}
