//! What the guard protects while the agent works unattended, and how a path
//! from a command or a tool call is matched against it.
//!
//! The protected set:
//! - the hooks' whole state root, except the orchestrator's `sessions/` and
//!   `knowledge/` (files the agent writes itself, checked against their
//!   schema instead);
//! - the hooks' config: `.claude/ralph-hooks.json`, `.lsp.json`;
//! - Claude Code's settings, where the hooks are registered and could be
//!   switched off (one `disableAllHooks` silences them all):
//!   `.claude/settings.json`, `.claude/settings.local.json`, the user's
//!   `~/.claude/settings.json` and, when Claude Code runs with
//!   `CLAUDE_CONFIG_DIR` (the hooks inherit its environment), the
//!   `settings.json` there, which is the one it reads; and the managed
//!   settings folder (`/etc/claude-code/` on Linux, `/Library/Application
//!   Support/ClaudeCode/` on macOS: `managed-settings.json` and the rest);
//! - the folders skills, slash commands and subagents load from, since a
//!   skill's `` !`…` `` line runs where no Bash hook sees it:
//!   `.claude/{skills,commands,agents}/` in the project, in `~/.claude/`
//!   and in `CLAUDE_CONFIG_DIR` (this includes the user's own controls,
//!   `/cancel-loop` and `/resume-loop`); the `hooks/` folder beside them,
//!   whose scripts registered hooks run; and the project's `.mcp.json`,
//!   whose servers Claude Code starts — both outside every sandbox;
//! - where the other agent harnesses register hooks ([`HARNESS_FILES`],
//!   [`HARNESS_FOLDERS`], `$CODEX_HOME`): under Codex, Gemini, Cursor or
//!   Copilot CLI one write there silences the hooks;
//! - the paths the user lists in `guard.protected` (a folder: all of it).
//!
//! A path hits the set when it is a protected path, lies inside a protected
//! folder, or contains one (`rm -rf .claude` takes the state root with it).
//! Paths are compared as written (after `~`, `$HOME`, `$PWD`, `$(pwd)` and
//! `$CLAUDE_PROJECT_DIR`, relative to where the command runs), with `..`
//! resolved, and with every symlink on the way followed — a final link that
//! dangles is resolved through its parent, so a link made before the file
//! exists still names it. Globs are expanded against the disk as the shell
//! would (`rm .claude/*`). A file with more than one hard link is compared
//! by device and inode with the protected files.

use crate::util::paths::lexically_normal;
use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::shell::Cwd;

/// Protected files reached through one folder, at most: bounds the walks
/// for hard links and for the effect check.
pub const MAX_FILES: usize = 5_000;
/// Glob matches looked at per pattern.
const MAX_GLOB_MATCHES: usize = 2_000;
/// Symlinks followed while resolving one path (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// State-root folders the agent writes itself (orchestrator files, checked
/// against their schema by the guard and the post-tool hook).
pub const AGENT_WRITTEN: &[&str] = &["sessions", "knowledge"];

/// Where Claude Code registers hooks and can be told to skip them.
pub const SETTINGS_FILES: &[&str] = &[".claude/settings.json", ".claude/settings.local.json"];
/// The folders (in `.claude/`, `~/.claude/`, `CLAUDE_CONFIG_DIR`) that
/// Claude Code loads skills, slash commands and subagents from; the user's
/// `/cancel-loop` and `/resume-loop` are in `commands/`.
pub const LOADED_FROM: &[&str] = &["skills", "commands", "agents"];
/// The folder (in `.claude/`, `~/.claude/`, `CLAUDE_CONFIG_DIR`) that
/// Claude Code's hook documentation puts hook scripts in: a registered
/// hook runs them outside every sandbox, so one rewritten there switches
/// the hooks off at its next run (sandbox attack T-2).
pub const HOOK_SCRIPTS: &str = "hooks";
/// The project's MCP server list: Claude Code starts each server in it at
/// the next session, outside every sandbox (sandbox attack T-1).
pub const MCP_FILE: &str = ".mcp.json";
/// Where the administrator's managed settings live (`managed-settings.json`,
/// its drop-in folder, `managed-mcp.json`): the whole folder is protected.
#[cfg(target_os = "macos")]
pub const MANAGED_DIRS: &[&str] = &["/Library/Application Support/ClaudeCode"];
#[cfg(not(target_os = "macos"))]
pub const MANAGED_DIRS: &[&str] = &["/etc/claude-code"];

/// Where the other agent harnesses register hooks and can be told to skip
/// them, in the project and in the home folder: Codex CLI's hook file and
/// its config (`[features] hooks = false`), Gemini CLI's settings (key
/// `hooks`, `hooksConfig`), Cursor's hook file.
pub const HARNESS_FILES: &[&str] = &[
    ".codex/hooks.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".cursor/hooks.json",
];
/// Folders whose every file registers hooks: Copilot CLI's, in the project
/// and (second) in the home folder.
pub const HARNESS_FOLDERS: [&str; 2] = [".github/hooks", ".copilot/hooks"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The state root: changes only through ralph-hooks.
    State,
    /// Config and settings: the user's to change.
    Config,
}

/// One protected path.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Absolute, with `..` resolved.
    pub path: PathBuf,
    /// A folder: everything under it is protected too.
    pub tree: bool,
    pub kind: Kind,
    /// Folders under a tree that are not protected.
    pub except: Vec<PathBuf>,
    /// Kept in the snapshots and put back after a change. `false` for a
    /// file Claude Code itself rewrites all along (`~/.claude.json`): a
    /// tool call or command that names it is denied, but a change is not
    /// put back (it would undo Claude Code's own writes).
    pub watched: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ProtectedSet {
    pub entries: Vec<Entry>,
    /// Each entry's forms ([`forms`]), resolved once: a command names many
    /// paths, and each is compared with every entry.
    entry_forms: std::cell::OnceCell<Vec<Vec<PathBuf>>>,
}

/// Where things are, for building and matching the set.
#[derive(Debug, Clone)]
pub struct Places {
    pub project_root: PathBuf,
    pub state_root: PathBuf,
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR` as Claude Code (and so the hook) was started
    /// with: the folder it reads the user's settings and skills from
    /// instead of `~/.claude`.
    pub config_dir: Option<PathBuf>,
    /// The managed settings folders ([`MANAGED_DIRS`]).
    pub managed: Vec<PathBuf>,
    /// `CODEX_HOME`, where Codex CLI reads its user config and hooks
    /// instead of `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `CLAUDE_PLUGIN_ROOT`, set when the hooks run as a Claude Code
    /// plugin: the folder their own registrations (`hooks/hooks.json`) are
    /// read from, which may be a folder of the user's (a marketplace added
    /// from a folder) rather than Claude Code's plugin cache.
    pub plugin_root: Option<PathBuf>,
}

impl Places {
    pub fn from_env(project_root: &Path, state_root: &Path) -> Places {
        let absolute = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        Places {
            project_root: project_root.to_path_buf(),
            state_root: state_root.to_path_buf(),
            home: absolute("HOME"),
            config_dir: absolute("CLAUDE_CONFIG_DIR"),
            managed: MANAGED_DIRS.iter().map(PathBuf::from).collect(),
            codex_home: absolute("CODEX_HOME"),
            plugin_root: absolute("CLAUDE_PLUGIN_ROOT"),
        }
    }
}

impl Places {
    /// Whether `path` lies in a folder Claude Code loads skills, slash
    /// commands or subagents from ([`LOADED_FROM`]).
    pub fn loads_commands(&self, path: &Path) -> bool {
        let path = lexically_normal(path);
        let bases = std::iter::once(self.project_root.join(".claude"))
            .chain(self.home.iter().map(|home| home.join(".claude")))
            .chain(self.config_dir.clone());
        bases
            .flat_map(|base| LOADED_FROM.iter().map(move |name| base.join(name)))
            .any(|dir| path.starts_with(lexically_normal(&dir)))
    }
}

impl ProtectedSet {
    /// The set for this project; `user` is `guard.protected`.
    pub fn new(places: &Places, config_file: &Path, user: &[String]) -> ProtectedSet {
        let project = &places.project_root;
        let mut entries = vec![Entry {
            path: lexically_normal(&places.state_root),
            tree: true,
            kind: Kind::State,
            except: AGENT_WRITTEN
                .iter()
                .map(|name| lexically_normal(&places.state_root.join(name)))
                .collect(),
            watched: true,
        }];
        let file = |path: PathBuf| Entry {
            path: lexically_normal(&path),
            tree: false,
            kind: Kind::Config,
            except: Vec::new(),
            watched: true,
        };
        let tree = |path: PathBuf| Entry {
            path: lexically_normal(&path),
            tree: true,
            kind: Kind::Config,
            except: Vec::new(),
            watched: true,
        };
        entries.push(file(config_file.to_path_buf()));
        entries.push(file(project.join(".lsp.json")));
        for relative in SETTINGS_FILES {
            entries.push(file(project.join(relative)));
        }
        let user_dirs = places
            .home
            .iter()
            .map(|home| home.join(".claude"))
            .chain(places.config_dir.clone());
        for dir in std::iter::once(project.join(".claude")).chain(user_dirs.clone()) {
            for name in LOADED_FROM.iter().chain([&HOOK_SCRIPTS]) {
                entries.push(tree(dir.join(name)));
            }
        }
        entries.push(file(project.join(MCP_FILE)));
        for dir in user_dirs {
            entries.push(file(dir.join("settings.json")));
            // Installed plugins: their hook scripts and MCP servers run
            // outside every sandbox (re-check of the sixth round, N-2: a
            // plugin's hook script rewritten by the Write tool switched the
            // hooks off at its next run).
            entries.push(tree(dir.join("plugins")));
        }
        if let Some(root) = &places.plugin_root {
            entries.push(tree(root.clone()));
        }
        // Claude Code's own state file, which also lists MCP servers for
        // each project (`projects.<path>.mcpServers`), started at the next
        // session outside every sandbox (re-check N-1): `~/.claude.json`,
        // or `.claude.json` in `CLAUDE_CONFIG_DIR`. Claude Code rewrites it
        // itself all along, so it is named (denied) but not watched.
        let state_files = places
            .home
            .iter()
            .map(|home| home.join(".claude.json"))
            .chain(places.config_dir.iter().map(|dir| dir.join(".claude.json")));
        for path in state_files {
            entries.push(Entry {
                watched: false,
                ..file(path)
            });
        }
        for dir in &places.managed {
            entries.push(tree(dir.clone()));
        }
        // The other harnesses' registrations: under Codex, Gemini, Cursor or
        // Copilot CLI, one write there silences the hooks as
        // `disableAllHooks` does under Claude Code.
        // Only where that harness has its folder: without one it reads no
        // hooks there, and each entry costs the guard's path matching.
        let [project_hooks, user_hooks] = HARNESS_FOLDERS;
        let bases: Vec<&PathBuf> = std::iter::once(project).chain(places.home.iter()).collect();
        for relative in HARNESS_FILES {
            // A harness used anywhere (its folder in the project or the
            // home folder) is guarded in both: a project folder made later
            // would be read too.
            let used = bases
                .iter()
                .any(|base| base.join(relative).parent().is_some_and(Path::is_dir));
            if used {
                for base in &bases {
                    entries.push(file(base.join(relative)));
                }
            }
        }
        let hook_folders: Vec<PathBuf> = std::iter::once(project.join(project_hooks))
            .chain(places.home.iter().map(|home| home.join(user_hooks)))
            .collect();
        if hook_folders.iter().any(|folder| folder.is_dir()) {
            for folder in hook_folders {
                entries.push(tree(folder));
            }
        }
        if let Some(codex_home) = places.codex_home.as_ref().filter(|dir| dir.is_dir()) {
            entries.push(file(codex_home.join("hooks.json")));
            entries.push(file(codex_home.join("config.toml")));
        }
        for listed in user {
            let Some(expanded) = expand(listed, project, places) else {
                continue;
            };
            let path = lexically_normal(&project.join(expanded));
            let tree = listed.ends_with('/') || path.is_dir();
            entries.push(Entry {
                path,
                tree,
                kind: Kind::Config,
                except: Vec::new(),
                watched: true,
            });
        }
        ProtectedSet {
            entries,
            entry_forms: std::cell::OnceCell::new(),
        }
    }

    /// The entry `path` hits, and the protected path it reaches (the path
    /// itself when it lies inside a protected folder). Each form of the
    /// path (as written, links resolved) is compared with each form of the
    /// entry.
    pub fn hit(&self, path: &Path) -> Option<(&Entry, PathBuf)> {
        let forms = forms(path);
        let entry_forms = self
            .entry_forms
            .get_or_init(|| self.entries.iter().map(forms_of_entry).collect());
        for (at, entry) in self.entries.iter().enumerate() {
            let computed;
            let of_entry = match entry_forms.get(at) {
                Some(cached) if entry_forms.len() == self.entries.len() => cached,
                _ => {
                    computed = forms_of_entry(entry);
                    &computed
                }
            };
            for entry_form in of_entry {
                for form in &forms {
                    if let Some(reached) = hits(entry, entry_form, form) {
                        return Some((entry, reached));
                    }
                }
            }
        }
        None
    }

    /// Every watched protected regular file now (the trees walked,
    /// bounded), absolute and as written.
    pub fn files(&self) -> Vec<(PathBuf, Kind)> {
        let mut out = Vec::new();
        for entry in self.entries.iter().filter(|entry| entry.watched) {
            if entry.tree {
                walk(&entry.path, &entry.except, &mut out, entry.kind);
            } else if entry.path.symlink_metadata().is_ok() {
                out.push((entry.path.clone(), entry.kind));
            }
        }
        out
    }

    /// The protected file that `path` is a hard link of, if any: a file
    /// with more than one link compared by device and inode.
    pub fn hard_link_of(&self, path: &Path) -> Option<PathBuf> {
        let metadata = std::fs::symlink_metadata(path).ok()?;
        if !metadata.is_file() || metadata.nlink() < 2 {
            return None;
        }
        self.files().into_iter().map(|(file, _)| file).find(|file| {
            std::fs::symlink_metadata(file)
                .is_ok_and(|m| m.dev() == metadata.dev() && m.ino() == metadata.ino())
        })
    }
}

/// `reached` when `form` hits `entry` (given as `entry_form`).
fn hits(entry: &Entry, entry_form: &Path, form: &Path) -> Option<PathBuf> {
    // The path contains the protected one (or is it).
    if entry_form.starts_with(form) {
        return Some(entry_form.to_path_buf());
    }
    if entry.tree && form.starts_with(entry_form) {
        let relative = form.strip_prefix(entry_form).ok()?;
        let excepted = entry.except.iter().any(|except| {
            except
                .strip_prefix(&entry.path)
                .is_ok_and(|inner| relative.starts_with(inner))
        });
        if !excepted {
            return Some(form.to_path_buf());
        }
    }
    None
}

/// The entry's path as written and with its links resolved.
fn forms_of_entry(entry: &Entry) -> Vec<PathBuf> {
    forms(&entry.path)
}

/// A path as written (`..` resolved) and with symlinks followed.
pub fn forms(path: &Path) -> Vec<PathBuf> {
    let lexical = lexically_normal(path);
    let resolved = resolve_links(&lexical);
    if resolved == lexical {
        vec![lexical]
    } else {
        vec![lexical, resolved]
    }
}

fn walk(dir: &Path, except: &[PathBuf], out: &mut Vec<(PathBuf, Kind)>, kind: Kind) {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<_> = entries.filter_map(|e| e.ok()).collect();
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            if out.len() >= MAX_FILES {
                return;
            }
            let path = entry.path();
            if except.contains(&path) {
                continue;
            }
            let Ok(kind_of) = entry.file_type() else {
                continue;
            };
            if kind_of.is_dir() {
                pending.push(path);
            } else {
                out.push((path, kind));
            }
        }
    }
}

/// Expands what the guard can know in a path from a command: `~`, `$HOME`,
/// `$PWD`/`$(pwd)` (the command's directory, `cwd`), `$CLAUDE_PROJECT_DIR`,
/// `$CLAUDE_CONFIG_DIR` (when Claude Code has one).
/// `None` when another variable or substitution is in it.
pub fn expand(word: &str, cwd: &Path, places: &Places) -> Option<String> {
    let home = places
        .home
        .as_ref()
        .map(|h| h.to_string_lossy().into_owned());
    let mut text = word.to_string();
    if text == "~" || text.starts_with("~/") {
        text = format!("{}{}", home.clone()?, &text[1..]);
    }
    let cwd_text = cwd.to_string_lossy().into_owned();
    let project = places.project_root.to_string_lossy().into_owned();
    let config_dir = places
        .config_dir
        .as_ref()
        .map(|dir| dir.to_string_lossy().into_owned());
    for (pattern, value) in [
        ("${CLAUDE_CONFIG_DIR}", config_dir.clone()),
        ("$CLAUDE_CONFIG_DIR", config_dir),
        ("${HOME}", home.clone()),
        ("$HOME", home),
        ("${PWD}", Some(cwd_text.clone())),
        ("$PWD", Some(cwd_text.clone())),
        ("$(pwd)", Some(cwd_text.clone())),
        ("`pwd`", Some(cwd_text)),
        ("${CLAUDE_PROJECT_DIR}", Some(project.clone())),
        ("$CLAUDE_PROJECT_DIR", Some(project)),
    ] {
        if text.contains(pattern) {
            text = text.replace(pattern, &value?);
        }
    }
    if text.contains('$') || text.contains('`') {
        return None;
    }
    Some(text)
}

/// The directories a command may run in: where the Bash tool is, and after
/// the `cd`s before it (both, since a `cd` inside a subshell does not last).
pub fn run_dirs(base: &Path, cwd: &Cwd, places: &Places) -> Vec<PathBuf> {
    let mut dirs = vec![base.to_path_buf()];
    if cwd.cds.is_empty() {
        return dirs;
    }
    let mut dir = base.to_path_buf();
    for cd in &cwd.cds {
        let Some(expanded) = expand(cd, &dir, places) else {
            return dirs;
        };
        dir = lexically_normal(&dir.join(expanded));
    }
    if !dirs.contains(&dir) {
        dirs.push(dir);
    }
    dirs
}

/// The concrete paths a word from a command names, from each directory it
/// may run in: globs and braces expanded against the disk.
pub fn paths_of(word: &str, dirs: &[PathBuf], places: &Places) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
        let Some(expanded) = expand(word, dir, places) else {
            continue;
        };
        for alternative in expand_braces(&expanded) {
            let absolute = lexically_normal(&dir.join(&alternative));
            if has_glob(&alternative) {
                out.extend(glob(&absolute));
            } else {
                out.push(absolute);
            }
        }
    }
    out.dedup();
    out
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// `a{b,c}d` → `abd`, `acd` (nested too); text without a brace pair stays.
fn expand_braces(text: &str) -> Vec<String> {
    let Some(open) = text.find('{') else {
        return vec![text.to_string()];
    };
    let mut depth = 0;
    let mut close = None;
    let mut commas = Vec::new();
    for (at, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + at);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + at),
            _ => {}
        }
    }
    let (Some(close), false) = (close, commas.is_empty()) else {
        return vec![text.to_string()];
    };
    let (before, after) = (&text[..open], &text[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(&commas);
    bounds.push(close);
    let mut out = Vec::new();
    for pair in bounds.windows(2) {
        let part = &text[pair[0] + 1..pair[1]];
        for tail in expand_braces(after) {
            out.extend(expand_braces(&format!("{before}{part}{tail}")));
        }
    }
    out
}

/// The existing paths a glob matches, as the shell expands it: `*` and `?`
/// do not match a leading dot.
fn glob(pattern: &Path) -> Vec<PathBuf> {
    let mut matches = vec![PathBuf::from("/")];
    for component in pattern.components() {
        let Component::Normal(part) = component else {
            continue;
        };
        let part = part.to_string_lossy();
        let mut next = Vec::new();
        for base in &matches {
            if !has_glob(&part) {
                let candidate = base.join(part.as_ref());
                if candidate.symlink_metadata().is_ok() {
                    next.push(candidate);
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.filter_map(|e| e.ok()) {
                let name = entry.file_name().to_string_lossy().into_owned();
                if fnmatch(&part, &name) {
                    next.push(base.join(name));
                    if next.len() >= MAX_GLOB_MATCHES {
                        break;
                    }
                }
            }
        }
        matches = next;
        if matches.is_empty() {
            break;
        }
    }
    matches
}

/// Shell pattern matching of one path component: `*`, `?`, `[…]` (with
/// `!`/`^` and ranges); a leading `.` must be matched literally.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    matches_from(&pattern, &name)
}

fn matches_from(pattern: &[char], name: &[char]) -> bool {
    let Some((&first, rest)) = pattern.split_first() else {
        return name.is_empty();
    };
    match first {
        '*' => (0..=name.len()).any(|skip| matches_from(rest, &name[skip..])),
        '?' => !name.is_empty() && matches_from(rest, &name[1..]),
        '[' => {
            let Some(close) = rest.iter().skip(1).position(|c| *c == ']').map(|at| at + 1) else {
                return name.first() == Some(&'[') && matches_from(rest, &name[1..]);
            };
            let Some(&c) = name.first() else {
                return false;
            };
            let mut set = &rest[..close];
            let negated = matches!(set.first(), Some('!' | '^'));
            if negated {
                set = &set[1..];
            }
            let mut found = false;
            let mut at = 0;
            while at < set.len() {
                if at + 2 < set.len() && set[at + 1] == '-' {
                    found |= set[at] <= c && c <= set[at + 2];
                    at += 3;
                } else {
                    found |= set[at] == c;
                    at += 1;
                }
            }
            found != negated && matches_from(&rest[close + 1..], &name[1..])
        }
        literal => name.first() == Some(&literal) && matches_from(rest, &name[1..]),
    }
}

/// `path` with every symlink on the way followed, as the kernel would; the
/// part past the first component that does not exist is kept as written,
/// so a dangling final link still names its target.
pub fn resolve_links(path: &Path) -> PathBuf {
    let mut pending: VecDeque<PathBuf> = path
        .components()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut resolved = PathBuf::new();
    let mut hops = 0;
    while let Some(component) = pending.pop_front() {
        let name = component.as_os_str();
        if name == "/" {
            resolved = PathBuf::from("/");
            continue;
        }
        if name == "." {
            continue;
        }
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(name);
        let Ok(metadata) = candidate.symlink_metadata() else {
            // Missing: the rest is kept as written.
            resolved = candidate;
            for rest in pending {
                resolved = lexically_normal(&resolved.join(rest));
            }
            return resolved;
        };
        if !metadata.file_type().is_symlink() {
            resolved = candidate;
            continue;
        }
        hops += 1;
        let Ok(target) = std::fs::read_link(&candidate) else {
            resolved = candidate;
            continue;
        };
        if hops > MAX_LINKS {
            resolved = candidate;
            continue;
        }
        let mut spliced: VecDeque<PathBuf> = target
            .components()
            .map(|c| PathBuf::from(c.as_os_str()))
            .collect();
        spliced.extend(pending);
        pending = spliced;
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ralph-protect-{label}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn patterns_match_as_the_shell_does() {
        assert!(fnmatch("*", "ralph-hooks.json"));
        assert!(!fnmatch("*", ".claude"));
        assert!(fnmatch(".*", ".claude"));
        assert!(fnmatch(".c[a-z]aude", ".claude"));
        assert!(fnmatch("[!x]oop.json", "loop.json"));
        assert!(fnmatch("l??p.*", "loop.json"));
        assert!(!fnmatch("l?p.*", "loop.json"));
    }

    #[test]
    fn braces_expand() {
        assert_eq!(expand_braces("a{b,c}d"), vec!["abd", "acd"]);
        assert_eq!(
            expand_braces(".claude/{x,{y,z}}"),
            vec![".claude/x", ".claude/y", ".claude/z"]
        );
        assert_eq!(expand_braces("no{brace"), vec!["no{brace"]);
    }

    #[test]
    fn dangling_links_resolve_through_their_parent() {
        let dir = temp("dangling");
        std::fs::create_dir_all(dir.join(".claude")).unwrap();
        std::os::unix::fs::symlink(".claude/ralph-hooks.json", dir.join("notes.json")).unwrap();
        assert_eq!(
            resolve_links(&dir.join("notes.json")),
            dir.join(".claude/ralph-hooks.json")
        );
        std::os::unix::fs::symlink(dir.join(".claude"), dir.join("c")).unwrap();
        assert_eq!(
            resolve_links(&dir.join("c/../x")),
            dir.join("x"),
            "`..` after a link is the link target's parent"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parents_and_members_of_protected_paths_hit() {
        let dir = temp("hits");
        let places = Places {
            project_root: dir.clone(),
            state_root: dir.join(".claude/orchestrator"),
            home: None,
            config_dir: None,
            managed: Vec::new(),
            codex_home: None,
            plugin_root: None,
        };
        let set = ProtectedSet::new(
            &places,
            &dir.join(".claude/ralph-hooks.json"),
            &["secrets/".into()],
        );
        for hit in [
            ".claude",
            ".claude/orchestrator",
            ".claude/orchestrator/loop.json",
            ".claude/orchestrator/daemon/daemon.json",
            ".lsp.json",
            ".claude/settings.local.json",
            "secrets/a",
            ".",
        ] {
            assert!(set.hit(&dir.join(hit)).is_some(), "{hit}");
        }
        for miss in [
            ".claude/notes.md",
            ".claude/orchestrator/sessions/abc/state.json",
            "src/main.rs",
            "notes.json",
        ] {
            assert!(set.hit(&dir.join(miss)).is_none(), "{miss}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_settings_and_skill_folders_claude_code_reads_hit() {
        let dir = temp("config-dir");
        let places = Places {
            project_root: dir.join("project"),
            state_root: dir.join("project/.claude/orchestrator"),
            home: Some(dir.join("home")),
            config_dir: Some(dir.join("config")),
            managed: vec![dir.join("etc/claude-code")],
            codex_home: Some(dir.join("codex-home")),
            plugin_root: Some(dir.join("marketplace/ralph-hooks")),
        };
        // The harnesses in use: each has a folder in the project or home.
        for used in [
            "project/.codex",
            "home/.gemini",
            "project/.cursor",
            "home/.copilot/hooks",
            "codex-home",
        ] {
            std::fs::create_dir_all(dir.join(used)).unwrap();
        }
        let set = ProtectedSet::new(&places, &dir.join("project/.claude/ralph-hooks.json"), &[]);
        for hit in [
            "config/settings.json",
            "config/skills/evil/SKILL.md",
            "config/commands/x.md",
            "config/agents/a.md",
            "home/.claude/settings.json",
            "home/.claude/skills/evil/SKILL.md",
            "home/.claude/commands/x.md",
            "project/.claude/skills/evil/SKILL.md",
            "project/.claude/commands/x.md",
            "project/.claude/agents/helper.md",
            "etc/claude-code/managed-settings.json",
            "etc/claude-code/managed-settings.d/10-off.json",
            // The other harnesses' registrations (attack finding H-1).
            "project/.codex/hooks.json",
            "project/.codex/config.toml",
            "project/.codex",
            "project/.gemini/settings.json",
            "project/.cursor/hooks.json",
            "project/.github/hooks/ralph-hooks.json",
            "project/.github/hooks/zz-new.json",
            "home/.codex/hooks.json",
            "home/.gemini/settings.json",
            "home/.cursor/hooks.json",
            "home/.copilot/hooks/a.json",
            "codex-home/hooks.json",
            "codex-home/config.toml",
            // What runs outside every sandbox: hook scripts, MCP servers,
            // installed plugins, the folder our own plugin runs from.
            "project/.claude/hooks/fmt.sh",
            "project/.mcp.json",
            "home/.claude/hooks/u.sh",
            "config/hooks/u.sh",
            "home/.claude/plugins/cache/m/p/1.0.0/hooks/hooks.json",
            "config/plugins/cache/m/p/1.0.0/hooks/h.sh",
            "home/.claude.json",
            "config/.claude.json",
            "marketplace/ralph-hooks/hooks/hooks.json",
        ] {
            assert!(set.hit(&dir.join(hit)).is_some(), "{hit}");
        }
        for miss in [
            "config/projects/x.jsonl",
            "home/.claude/todos/a.json",
            "project/.github/workflows/ci.yml",
            "project/.gemini/notes.md",
            "home/.codex/sessions/x.jsonl",
        ] {
            assert!(set.hit(&dir.join(miss)).is_none(), "{miss}");
        }
        assert_eq!(
            expand("$CLAUDE_CONFIG_DIR/settings.json", &dir, &places).as_deref(),
            Some(dir.join("config/settings.json").to_str().unwrap())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn globs_expand_against_the_disk() {
        let dir = temp("glob");
        std::fs::create_dir_all(dir.join(".claude/orchestrator")).unwrap();
        std::fs::write(dir.join(".claude/ralph-hooks.json"), "{}").unwrap();
        let places = Places {
            project_root: dir.clone(),
            state_root: dir.join(".claude/orchestrator"),
            home: None,
            config_dir: None,
            managed: Vec::new(),
            codex_home: None,
            plugin_root: None,
        };
        let found = paths_of(".claude/*", std::slice::from_ref(&dir), &places);
        assert!(
            found.contains(&dir.join(".claude/ralph-hooks.json")),
            "{found:?}"
        );
        assert!(
            found.contains(&dir.join(".claude/orchestrator")),
            "{found:?}"
        );
        assert!(
            paths_of("*", std::slice::from_ref(&dir), &places).is_empty(),
            "* skips dot files"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
