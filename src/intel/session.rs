//! The servers behind `refs`, `rename` and `fix`: which installed servers
//! handle a file, and requests to them — through the daemon's warm servers
//! when it can be used, else in-process servers that [`Session::close`]
//! shuts down, so no server outlives the command outside the daemon.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use serde_json::Value;

use crate::engine::resolve::MAX_FILE_BYTES;
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::lsp::servers::{ProjectIndex, Selection, find_binary, workspace_root};
use crate::lsp::{Launch, LspError, OpenFile, Pool, ServerDiagnostic};
use crate::util::fsread::{self, Links};

/// Directories never walked for project files.
const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "__pycache__",
    "dist",
    "build",
    "venv",
];
/// The most files opened to give a project-less TypeScript server the
/// whole picture.
const MAX_OPENED_FILES: usize = 300;

/// One installed server for a file.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub launch: Launch,
    pub language_id: String,
    /// The file extensions (with the dot) this server handles.
    pub extensions: Vec<String>,
    /// What it needs to know the files it was not given.
    pub project_index: Option<ProjectIndex>,
}

pub struct Session<'c> {
    pub ctx: &'c Ctx,
    pub settings: Settings,
    pool: Option<Pool>,
    pub deadline: Instant,
    /// Capabilities by server name, from the first answer of each.
    capabilities: HashMap<String, Value>,
    /// What the user should know about an answer's completeness, said once.
    notes: Vec<String>,
    /// Document symbols by (server, file), asked once per command: no file
    /// is written between the questions (a rename asks for the target file's
    /// symbols to find the name, then again to find a clash).
    pub(super) symbols: HashMap<(String, PathBuf), Option<serde_json::Value>>,
}

impl<'c> Session<'c> {
    pub fn new(ctx: &'c Ctx, timeout: Duration) -> Session<'c> {
        Session {
            ctx,
            settings: Settings::load(ctx),
            pool: Some(crate::daemon::pool(ctx)),
            deadline: Instant::now() + timeout,
            capabilities: HashMap::new(),
            notes: Vec::new(),
            symbols: HashMap::new(),
        }
    }

    /// Notes a limit of `server` on answers about the whole project: one
    /// that needs an index file (clangd's compilation database) and finds
    /// none knows only the files it was given.
    fn note_coverage(&mut self, server: &Server) {
        let Some(index) = &server.project_index else {
            return;
        };
        let workspace = &server.launch.root;
        if !index
            .files
            .iter()
            .any(|name| workspace.join(name).is_file())
        {
            let note = format!(
                "{} has no {} in {}: it knows only the files it was given, so uses in other files may be missing ({})",
                server.name,
                index.files.first().map_or("index file", String::as_str),
                self.display(workspace),
                index.hint
            );
            if !self.notes.contains(&note) {
                self.notes.push(note);
            }
        }
    }

    /// Tells the user something about an answer, once (on stderr, when the
    /// session closes).
    pub fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// The servers for `path`: the one the registry chooses for it (the
    /// same as for its diagnostics), then installed linters that work
    /// beside it (ruff). An error says that no server handles this kind of
    /// file, or how to install one.
    pub fn servers_for(&self, path: &Path) -> anyhow::Result<Vec<Server>> {
        let root = &self.ctx.project_root;
        let extension = path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let mut candidates = self.settings.registry.candidates(&extension);
        if candidates.is_empty() {
            candidates = self.settings.registry.candidates(&extension.to_lowercase());
        }
        let Some(first) = candidates.first().copied() else {
            bail!(
                "no language server handles {} files ({}); configure one in .lsp.json",
                if extension.is_empty() {
                    "extension-less"
                } else {
                    &extension
                },
                path.display()
            );
        };
        let search_roots = [path.parent().unwrap_or(root), root.as_path()];
        let chosen = match self.settings.registry.select(path, root) {
            Selection::Found { server, .. } => Some(server.name.clone()),
            _ => None,
        };
        candidates.retain(|server| Some(&server.name) == chosen.as_ref() || server.linter);
        candidates.sort_by_key(|server| Some(&server.name) != chosen.as_ref());
        let servers: Vec<Server> = candidates
            .iter()
            .filter_map(|server| {
                let program = find_binary(&server.command, root, &search_roots)?;
                let workspace = workspace_root(server, path, root);
                Some(Server {
                    name: server.name.clone(),
                    launch: server.launch(program, workspace, root),
                    language_id: server
                        .extensions
                        .get(&extension)
                        .or_else(|| server.extensions.get(&extension.to_lowercase()))
                        .cloned()
                        .unwrap_or_default(),
                    extensions: server.extensions.keys().cloned().collect(),
                    project_index: server.project_index.clone(),
                })
            })
            .collect();
        if servers.is_empty() {
            bail!(
                "no {} language server is installed (tried {}); {}",
                first.language,
                self.settings
                    .registry
                    .candidates(&extension)
                    .iter()
                    .map(|s| s.command.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                first.install_hint
            );
        }
        Ok(servers)
    }

    /// The language id `server` knows `path`'s kind of file by (a rename
    /// in a `.ts` file can touch `.tsx` files); the server's own for the
    /// file it was chosen for when the extension is not one of its.
    pub fn language_id(&self, server: &Server, path: &Path) -> String {
        let extension = path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        self.settings
            .registry
            .candidates(&extension)
            .into_iter()
            .find(|candidate| candidate.name == server.name)
            .and_then(|candidate| candidate.extensions.get(&extension).cloned())
            .unwrap_or_else(|| server.language_id.clone())
    }

    /// The file as the server should see it (its text on disk now).
    pub fn open_file(&self, server: &Server, path: &Path) -> anyhow::Result<OpenFile> {
        let text = read_text(path)?;
        Ok(OpenFile {
            path: path.to_path_buf(),
            text,
            language_id: server.language_id.clone(),
        })
    }

    /// The files a request about `path` needs open: the file itself, and
    /// for a TypeScript/JavaScript workspace without a tsconfig.json or
    /// jsconfig.json every file of its kind (up to 300), since such a
    /// server only knows the files it was given.
    pub fn files_for(&self, server: &Server, path: &Path) -> anyhow::Result<Vec<OpenFile>> {
        let mut files = vec![self.open_file(server, path)?];
        let workspace = &server.launch.root;
        let typescript = server.language_id.starts_with("typescript")
            || server.language_id.starts_with("javascript");
        if typescript
            && !workspace.join("tsconfig.json").exists()
            && !workspace.join("jsconfig.json").exists()
        {
            for other in project_files(workspace, &server.extensions, MAX_OPENED_FILES) {
                if other != path
                    && let Ok(file) = self.open_file(server, &other)
                {
                    files.push(file);
                }
            }
        }
        Ok(files)
    }

    /// One request; an error response becomes [`LspError::Rejected`].
    pub fn request(
        &mut self,
        server: &Server,
        open: &[OpenFile],
        method: &str,
        params: Value,
    ) -> Result<Value, LspError> {
        let pool = self.pool.get_or_insert_with(Pool::default);
        let answer = pool.call(&server.launch, open, method, params, self.deadline)?;
        self.capabilities
            .insert(server.name.clone(), answer.capabilities.clone());
        if let Some(why) = answer.partial {
            self.note(why);
        }
        match answer.refused {
            Some(message) => Err(LspError::Rejected {
                method: method.to_string(),
                message,
            }),
            None => Ok(answer.result),
        }
    }

    /// The server's capabilities once it answered something.
    pub fn capabilities(&self, server: &Server) -> Option<&Value> {
        self.capabilities.get(&server.name)
    }

    /// Whether `server` advertises `provider` (`renameProvider` …); `None`
    /// before it answered anything.
    pub fn supports(&self, server: &Server, provider: &str) -> Option<bool> {
        self.capabilities(server)
            .map(|caps| provides(caps.get(provider)))
    }

    pub fn diagnose(
        &mut self,
        server: &Server,
        path: &Path,
        text: &str,
    ) -> Result<Vec<ServerDiagnostic>, LspError> {
        let pool = self.pool.get_or_insert_with(Pool::default);
        pool.diagnose(
            &server.launch,
            path,
            text,
            &server.language_id,
            self.deadline,
        )
    }

    /// Shuts down the in-process servers, if any were started, and hands
    /// back the notes for the user.
    pub fn close(mut self) -> Vec<String> {
        if let Some(pool) = self.pool.take() {
            pool.close(Duration::from_millis(500));
        }
        std::mem::take(&mut self.notes)
    }

    /// The project-relative form of `path`, for output.
    pub fn display(&self, path: &Path) -> String {
        crate::engine::resolve::display_path(self.ctx, path)
    }
}

/// A project file's text, through the one bounded reader (at most 4 MiB:
/// what the diagnostics hand a server).
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    fsread::read_text(path, MAX_FILE_BYTES, Links::Follow)?
        .with_context(|| format!("{} does not exist", path.display()))
}

/// A file's text for showing where something is: not UTF-8, it is read
/// with each invalid sequence as U+FFFD, which is what a server that read
/// it from the disk counted its columns on (engine attack E-5: a use in a
/// Latin-1 file was shown at column 1 with no text). Empty when it cannot
/// be read.
pub fn read_text_lossy(path: &Path) -> String {
    match fsread::read_bytes(path, MAX_FILE_BYTES, Links::Follow) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    }
}

/// A capability value that means "yes": `true` or an options object.
pub fn provides(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Bool(true)) | Some(Value::Object(_)))
}

/// The plain statement that a server lacks a feature.
pub fn unsupported(server: &Server, what: &str, provider: &str) -> anyhow::Error {
    anyhow!(
        "{} does not support {what} (no {provider} in its capabilities)",
        server.name
    )
}

/// Files under `dir` whose extension is in `extensions`, skipping hidden
/// and build directories; at most `limit`, in a stable order.
pub fn project_files(dir: &Path, extensions: &[String], limit: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|entry| entry.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && path
                    .extension()
                    .is_some_and(|e| extensions.iter().any(|x| x[1..] == *e.to_string_lossy()))
            {
                found.push(path);
                if found.len() >= limit {
                    return found;
                }
            }
        }
    }
    found.sort();
    found
}

/// Runs `work` on the first server for `path` that supports `provider`
/// (known once it answered); when none does, the error names each server
/// and what it lacks.
pub fn with_server<T>(
    session: &mut Session<'_>,
    path: &Path,
    provider: &str,
    what: &str,
    mut work: impl FnMut(&mut Session<'_>, &Server, &[OpenFile]) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let servers = session.servers_for(path)?;
    let mut lacking = Vec::new();
    for server in &servers {
        session.note_coverage(server);
        let open = session.files_for(server, path)?;
        let result = work(session, server, &open);
        if session.supports(server, provider) == Some(false) {
            lacking.push(unsupported(server, what, provider).to_string());
            continue;
        }
        return result.with_context(|| format!("{} ({})", what, server.name));
    }
    bail!("{}", lacking.join("; "))
}
