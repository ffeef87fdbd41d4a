//! The validated context every handler gets first: where the project and the
//! state live, what time it is, whether to explain ourselves, and the config.
//!
//! Built once from the environment and the hook input, so handlers never read
//! environment variables themselves and tests can set everything from outside.

use std::cell::{Cell, OnceCell};
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::hook::config::Config;
use crate::hook::protocol::Common;
use crate::state::Store;
use crate::state::events_log;

pub struct Ctx {
    /// `$CLAUDE_PROJECT_DIR`, else the input's `cwd`, else the process's cwd.
    pub project_root: PathBuf,
    /// `$RALPH_HOOKS_STATE_DIR`, else `<project>/.claude/orchestrator`.
    pub state_root: PathBuf,
    /// The session this call belongs to: the input's, else `$CLAUDE_CODE_SESSION_ID`.
    pub session_id: Option<String>,
    /// The hook input's `prompt_id`: the prompt this call belongs to.
    pub prompt_id: Option<String>,
    /// `$CLAUDE_PID` (the Claude Code process), recorded to tell live sessions apart.
    pub claude_pid: Option<u32>,
    /// Under a harness other than Claude Code, the names its own process
    /// runs under ([`crate::harness::Harness::process_names`]); empty for
    /// Claude Code and the CLI.
    pub harness_process_names: &'static [&'static str],
    pub debug: bool,
    now: DateTime<Utc>,
    config: OnceCell<Config>,
    store: Store,
    /// Where in `events.jsonl` the first event this process logged starts:
    /// the telemetry exporter's starting point when this process starts it.
    first_event_at: Cell<Option<u64>>,
}

impl Ctx {
    /// Context for a hook call.
    pub fn from_env(common: &Common) -> anyhow::Result<Ctx> {
        Ctx::from_env_for(common, true)
    }

    /// [`Ctx::from_env`] for Claude Code's payloads (`claude`) or another
    /// harness's. Claude Code names the project (`$CLAUDE_PROJECT_DIR`);
    /// the others do not, and their `cwd` is the folder a shell call runs
    /// in (Codex's `workdir`), maybe deep inside the project: the project
    /// is then the one that folder is in (see [`harness_project_root`]).
    pub fn from_env_for(common: &Common, claude: bool) -> anyhow::Result<Ctx> {
        let cwd = common.cwd.as_deref().filter(|cwd| !cwd.is_empty());
        let project_root = match env_nonempty("CLAUDE_PROJECT_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => match (&common.ralph_project_dir, cwd) {
                (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
                (_, Some(cwd)) if claude => PathBuf::from(cwd),
                (_, Some(cwd)) => harness_project_root(Path::new(cwd)),
                _ => std::env::current_dir().context("cannot determine the current directory")?,
            },
        };
        let session_id = common
            .session_id
            .clone()
            .or_else(|| env_nonempty("CLAUDE_CODE_SESSION_ID"));
        let mut ctx = Ctx::new(project_root, session_id)?;
        ctx.prompt_id = common.prompt_id.clone().filter(|id| !id.is_empty());
        Ok(ctx)
    }

    /// Context for the CLI: the project is `--project`, `$CLAUDE_PROJECT_DIR`
    /// or the current directory.
    pub fn for_cli(project: Option<&Path>) -> anyhow::Result<Ctx> {
        let (project_root, _) = cli_project_root(project)?;
        Ctx::new(project_root, env_nonempty("CLAUDE_CODE_SESSION_ID"))
    }

    /// Context for work the daemon does for a caller: the caller's project,
    /// the daemon's own state root, the caller's wish to be told why.
    pub fn for_daemon(
        project_root: PathBuf,
        state_root: PathBuf,
        debug: bool,
    ) -> anyhow::Result<Ctx> {
        let project_root = absolute(&project_root);
        anyhow::ensure!(
            project_root.is_dir(),
            "the project {} is not a directory",
            project_root.display()
        );
        refuse_shared_root(&state_root)?;
        refuse_project_root(&state_root, &project_root)?;
        let ctx = Ctx {
            store: Store::new(state_root.clone()),
            project_root,
            state_root,
            session_id: None,
            claude_pid: None,
            harness_process_names: &[],
            debug,
            prompt_id: None,
            now: now_from_env(),
            config: OnceCell::new(),
            first_event_at: Cell::new(None),
        };
        ctx.confine_servers();
        Ok(ctx)
    }

    /// In sandbox mode, out here (the state root writable: not inside
    /// Claude Code's sandbox, where a second bubblewrap cannot be built and
    /// is not needed), the language servers this process starts run
    /// walled in like a sandboxed Bash command: they run code the agent
    /// can write. One `stat` when sandbox mode is off.
    fn confine_servers(&self) {
        crate::util::confine::set_for_servers(server_confinement(
            &self.project_root,
            &self.state_root,
        ));
    }

    fn new(project_root: PathBuf, session_id: Option<String>) -> anyhow::Result<Ctx> {
        let project_root = absolute(&project_root);
        let state_root = match env_nonempty("RALPH_HOOKS_STATE_DIR") {
            Some(dir) => absolute(Path::new(&dir)),
            None => project_root.join(".claude").join("orchestrator"),
        };
        refuse_shared_root(&state_root)?;
        refuse_project_root(&state_root, &project_root)?;
        let ctx = Ctx {
            store: Store::new(state_root.clone()),
            project_root,
            state_root,
            session_id,
            prompt_id: None,
            claude_pid: env_nonempty("CLAUDE_PID").and_then(|pid| pid.parse().ok()),
            harness_process_names: &[],
            debug: env_nonempty("RALPH_HOOKS_DEBUG").is_some_and(|v| v != "0"),
            now: now_from_env(),
            config: OnceCell::new(),
            first_event_at: Cell::new(None),
        };
        ctx.confine_servers();
        Ok(ctx)
    }

    /// The current time. `$RALPH_HOOKS_NOW` (RFC 3339) pins it, for tests.
    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    /// Appends one record to `events.jsonl`, stamped with this session, the
    /// prompt and the clock.
    pub fn log_event(
        &self,
        kind: &str,
        subject: (&str, &str),
        data: serde_json::Value,
    ) -> anyhow::Result<()> {
        let agent_id = self.session_id.clone().unwrap_or_default();
        let event = events_log::Event {
            kind,
            subject,
            agent_id: &agent_id,
            prompt_id: self.prompt_id.as_deref(),
            timestamp: self.now(),
            data,
        };
        let offset = events_log::append(self.store(), event)?;
        if self.first_event_at.get().is_none() {
            self.first_event_at.set(Some(offset));
        }
        Ok(())
    }

    /// Where the first event this process logged starts in `events.jsonl`;
    /// `None` when it logged none.
    pub fn first_event_at(&self) -> Option<u64> {
        self.first_event_at.get()
    }

    /// The state store; its warnings (corrupt files moved aside) are shown to
    /// the user by the hook runner.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The project config (`.claude/ralph-hooks.json`), loaded on first use.
    /// A broken config is reported on stderr and replaced by the defaults:
    /// a typo must never block the user's session.
    pub fn config(&self) -> &Config {
        self.config
            .get_or_init(|| match Config::load(&self.project_root) {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("ralph-hooks: warning: ignoring config: {error:#}");
                    Config::default()
                }
            })
    }

    /// Prints a `[DEBUG]` line on stderr when debugging is on.
    pub fn debug(&self, message: fmt::Arguments<'_>) {
        if self.debug {
            eprintln!("[DEBUG] {message}");
        }
    }

    /// Turns a path from the input into a display path relative to the project.
    pub fn display_path<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, str> {
        match path.strip_prefix(&self.project_root) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative.to_string_lossy(),
            _ => path.to_string_lossy(),
        }
    }
}

/// The CLI's project: `--project`, else `$CLAUDE_PROJECT_DIR` (set inside
/// Claude Code), else found from the current directory as git and cargo
/// find theirs ([`find_project_root`]), so `cd src && ralph-hooks task
/// start` uses the same state as the hooks. With the root found above the
/// current directory, also a line saying which root and why.
pub fn cli_project_root(project: Option<&Path>) -> anyhow::Result<(PathBuf, Option<String>)> {
    // Resolved, as Claude Code names the project (the guard keeps its
    // records by that name, links not resolved again: a user's
    // `--project ~/link` must find them; re-attack finding RA-8).
    if let Some(dir) = project {
        return Ok((resolved(dir)?, None));
    }
    if let Some(dir) = env_nonempty("CLAUDE_PROJECT_DIR") {
        return Ok((resolved(Path::new(&dir))?, None));
    }
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let home = env_nonempty("HOME").map(PathBuf::from);
    let (root, why) = find_project_root(&cwd, home.as_deref());
    let note = (root != cwd).then(|| {
        format!(
            "ralph-hooks: project root {} ({why}; --project DIR chooses another)",
            root.display()
        )
    });
    Ok((root, note))
}

/// `dir` with its links resolved, or made absolute as it is when it does
/// not exist (yet).
fn resolved(dir: &Path) -> anyhow::Result<PathBuf> {
    if let Ok(real) = dir.canonicalize() {
        return Ok(real);
    }
    if dir.is_absolute() {
        return Ok(dir.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("cannot determine the current directory")?
        .join(dir))
}

/// The project that `dir` is in, and why: the nearest folder at or above
/// it with a `.claude/` folder (the home directory's is Claude Code's
/// user settings, not a project), not looking above the git work tree's
/// top; else that top; else `dir` itself.
pub fn find_project_root(dir: &Path, home: Option<&Path>) -> (PathBuf, &'static str) {
    let git_top = dir
        .ancestors()
        .find(|ancestor| ancestor.join(".git").exists());
    for ancestor in dir.ancestors() {
        if Some(ancestor) == home {
            break;
        }
        if ancestor.join(".claude").is_dir() {
            return (ancestor.to_path_buf(), "the nearest folder with .claude/");
        }
        if Some(ancestor) == git_top {
            return (ancestor.to_path_buf(), "the top of the git work tree");
        }
    }
    match git_top {
        // A home directory kept in git (dotfiles) is no project.
        Some(top) if Some(top) != home => (top.to_path_buf(), "the top of the git work tree"),
        _ => (dir.to_path_buf(), "the current directory"),
    }
}

/// The project a harness's shell call in `cwd` belongs to: the outermost
/// folder at or above it, below the home directory, that holds the hooks'
/// state (`.claude/orchestrator/`) — outermost, so a `.claude/` the agent
/// makes in a subfolder does not become a project of its own with no loop
/// in it; else the same from the hook process's own folder; else the
/// project `cwd` is in by [`find_project_root`] (the nearest `.claude/`,
/// the git work tree's top).
pub fn harness_project_root(cwd: &Path) -> PathBuf {
    let home = env_nonempty("HOME").map(PathBuf::from);
    let outermost_state = |dir: &Path| -> Option<PathBuf> {
        dir.ancestors()
            .take_while(|ancestor| Some(*ancestor) != home.as_deref())
            .filter(|ancestor| ancestor.join(".claude/orchestrator").is_dir())
            .last()
            .map(Path::to_path_buf)
    };
    if let Some(root) = outermost_state(cwd) {
        return root;
    }
    if let Ok(own) = std::env::current_dir()
        && let Some(root) = outermost_state(&own)
    {
        return root;
    }
    find_project_root(cwd, home.as_deref()).0
}

/// A state root of `/` or the home directory would scatter `loop.json`,
/// `tasks/` and lock files among the user's own files: refuse it.
fn refuse_shared_root(state_root: &Path) -> anyhow::Result<()> {
    let real = state_root
        .canonicalize()
        .unwrap_or_else(|_| state_root.to_path_buf());
    let home = env_nonempty("HOME").map(|home| {
        let home = PathBuf::from(home);
        home.canonicalize().unwrap_or(home)
    });
    if real.parent().is_none() || home.as_deref() == Some(real.as_path()) {
        anyhow::bail!(
            "refusing the state root {}: it is the filesystem root or the home directory; point RALPH_HOOKS_STATE_DIR at a directory of its own",
            state_root.display()
        );
    }
    Ok(())
}

/// A state root that is the project or a folder above it would get a
/// `.gitignore` with `*` (git would ignore the whole project) and be deleted
/// by `--purge`: refuse it.
fn refuse_project_root(state_root: &Path, project_root: &Path) -> anyhow::Result<()> {
    if let Some(reason) = crate::state::dedicated::contains_project(state_root, project_root) {
        anyhow::bail!(
            "refusing the state root {}: {reason}; point RALPH_HOOKS_STATE_DIR at a directory of its own",
            state_root.display()
        );
    }
    Ok(())
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The walls language servers start in for `project_root`: in sandbox
/// mode (its record in `state_root`), out here, the sandbox's; `None`
/// otherwise. The daemon asks again while it runs: a switch of mode
/// (`ralph-hooks install --sandbox` after plain) ends it, so its servers
/// are not left running, or started again, without walls (attack finding
/// G4).
pub fn server_confinement(
    project_root: &Path,
    state_root: &Path,
) -> Option<crate::util::confine::Confinement> {
    use crate::hook::supervision;
    (state_root.join(supervision::RECORD).is_file() && !supervision::read_only(state_root)).then(
        || crate::util::confine::Confinement {
            project: project_root.to_path_buf(),
            read_only: supervision::supervision_paths(project_root, state_root),
            writable: Vec::new(),
            network: false,
            // The home is read-only in there; caches go to the private /tmp.
            env: vec![("XDG_CACHE_HOME".into(), "/tmp/.cache".into())],
        },
    )
}

fn now_from_env() -> DateTime<Utc> {
    env_nonempty("RALPH_HOOKS_NOW")
        .and_then(|text| DateTime::parse_from_rfc3339(&text).ok())
        .map(|time| time.with_timezone(&Utc))
        .unwrap_or_else(Utc::now)
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ralph-ctx-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home/proj/src/deep")).unwrap();
        dir
    }

    #[test]
    fn the_project_root_is_found_as_git_and_cargo_find_theirs() {
        let dir = temp("root");
        let home = dir.join("home");
        let proj = home.join("proj");
        let deep = proj.join("src/deep");
        // Nothing marks a project: the directory itself.
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)).0, deep);
        // A git work tree: its top.
        std::fs::create_dir_all(proj.join(".git")).unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)).0, proj);
        // A .claude/ folder below the top wins.
        std::fs::create_dir_all(proj.join("src/.claude")).unwrap();
        let (root, why) = find_project_root(&deep, Some(&home));
        assert_eq!(root, proj.join("src"));
        assert!(why.contains(".claude"), "{why}");
        // A home kept in git is not a project.
        std::fs::remove_dir_all(proj.join(".git")).unwrap();
        std::fs::remove_dir_all(proj.join("src/.claude")).unwrap();
        std::fs::create_dir_all(home.join(".git")).unwrap();
        assert_eq!(find_project_root(&deep, Some(&home)).0, deep);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
