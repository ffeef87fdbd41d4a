//! Files a server reads that the workspace walk does not see, so that the
//! warm daemon notices when a shell command changes them: a cold server
//! reads them afresh, a warm one must be restarted to (see `fresh`).
//!
//! - a `tsconfig.json` reaches other files through `extends` (a shared
//!   `../tsconfig.base.json`, `configs/base.json`, `@tsconfig/node20`);
//! - with `resolveJsonModule`, TypeScript type-checks the JSON files it
//!   imports (the walk otherwise skips JSON);
//! - dependencies under `node_modules/` (skipped by the walk: they are
//!   many, and read-only in spirit) change with `npm install`; each
//!   package's manifest and its typings entry are stamped, and the
//!   installer's own record (`node_modules/.package-lock.json`);
//! - a Python checker's extra search paths (pyright `extraPaths`, ty
//!   `extra-paths`, pyrefly `search-path`) may lie outside the project, and
//!   a virtual environment's `site-packages` changes with `pip install`.
//!
//! Each of these is a *dependency*: its change restarts the server, like a
//! configuration file's. What is not covered: a file deep inside a
//! package under `node_modules/` or `site-packages/` edited in place (an
//! installer replaces packages, it does not edit them), and `node_modules`
//! folders below the workspace root.

use std::path::{Path, PathBuf};

use crate::util::paths::lexically_normal;

/// How many files an extra search path outside the project may hold before
/// the walk stops looking (a whole home folder named by mistake).
const MAX_EXTRA_FILES: usize = 5_000;

/// How many entries of the project itself [`python_project`] looks at.
const MAX_PROJECT_FILES: usize = 50_000;

/// How many `extends` a chain may take (TypeScript's own limit is about
/// the same order; a cycle stops here too).
const MAX_EXTENDS: usize = 16;

/// The extensions that make a view a JavaScript/TypeScript server's.
const SCRIPT_EXTENSIONS: &[&str] = &[".ts", ".tsx", ".mts", ".cts", ".js", ".jsx"];

/// What a server of `extensions` at `root` reads besides the walked files,
/// given the configuration files the walk found: the files to stamp.
/// `json_files` are the walk's JSON files, counted only where a
/// TypeScript configuration resolves JSON modules.
/// `settings` is what the daemon itself hands the server (its `.lsp.json`
/// settings and initialization options, as JSON): search paths named
/// there count as in a configuration file at the root. `search` is where
/// it looks for modules besides: its virtual environment, `PYTHONPATH`.
pub fn dependencies(
    root: &Path,
    extensions: &[String],
    configs: &[PathBuf],
    json_files: &[PathBuf],
    settings: &str,
    search: &crate::lsp::environment::PythonSearch,
) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if reads_scripts(extensions) {
        let mut json_modules = false;
        for config in configs {
            let name = config.file_name().unwrap_or_default().to_string_lossy();
            let is_ts_config = (name.starts_with("tsconfig") || name.starts_with("jsconfig"))
                && name.ends_with(".json");
            if !is_ts_config {
                continue;
            }
            let mut chain = Vec::new();
            extends_chain(config, &mut chain);
            for file in std::iter::once(config).chain(&chain) {
                let Ok(text) = std::fs::read_to_string(file) else {
                    continue;
                };
                json_modules |= text.contains("resolveJsonModule");
                for dir in mapped_dirs(file, &text) {
                    if !dir.starts_with(root) {
                        source_tree(&dir, SCRIPT_SOURCES, MAX_EXTRA_FILES, &mut found);
                    }
                }
            }
            found.extend(chain);
        }
        if json_modules {
            found.extend(json_files.iter().cloned());
        }
        node_packages(&root.join("node_modules"), &mut found);
    }
    if extensions.iter().any(|e| e == ".py" || e == ".pyi") {
        // Search paths given in `.lsp.json` (pyright's
        // `python.analysis.extraPaths`, the way its settings are shown)
        // are relative to the workspace root (engine attack E-18).
        let given = (root.join(".lsp.json"), settings.to_string());
        let read = configs
            .iter()
            .filter_map(|config| Some((config.clone(), std::fs::read_to_string(config).ok()?)));
        let given_at = given.0.clone();
        for (config, text) in read.chain(std::iter::once(given)) {
            let Some(dir) = config.parent() else { continue };
            // A path as the checker reads it, from `dir`: pyright expands
            // `~` and `${workspaceFolder}` in its settings, not in its
            // configuration files (re-attack RC-6).
            let named = |listed: &str| {
                let listed = if config == given_at {
                    expand_setting_path(listed, root)
                } else {
                    listed.to_string()
                };
                lexically_normal(&dir.join(listed))
            };
            // pyright's `stubPath` is a search path too (engine attack
            // E-11: stubs outside the project or in a hidden folder).
            let stub_paths = string_values(&text, "stubPath");
            for listed in search_paths(&text).into_iter().chain(stub_paths) {
                let path = named(&listed);
                if !path.starts_with(root) || walk_skips(root, &path) {
                    python_files(&path, MAX_EXTRA_FILES, &mut found);
                }
            }
            // pyright's `venvPath` and `venv`, in its configuration or in
            // the settings `.lsp.json` gives it: the environment they name,
            // or every one under `venvPath` (re-attack RD-9).
            for folder in string_values(&text, "venvPath") {
                let folder = named(&folder);
                let named = string_values(&text, "venv");
                if named.is_empty() {
                    found.push(folder.clone());
                    for venv in virtualenvs_in(&folder) {
                        site_packages(&venv, &mut found);
                    }
                }
                for name in named {
                    site_packages(&folder.join(name), &mut found);
                }
            }
            // ty's `[environment] python`: the environment (or
            // interpreter) it resolves packages from (attack AE-3).
            // Only a value that reads as a path: `python = "^3.9"` (poetry)
            // and `requires-python = ">=3.9"` are versions.
            let paths = string_values(&text, "python")
                .into_iter()
                .filter(|value| value.contains('/') || value.starts_with(['.', '~']));
            for path in paths {
                environment_named(&named(&path), root, search, &mut found);
            }
            // A pyright configuration it `extends` is configuration too
            // (E-2: a shared base made strict, the warm server kept the old
            // strictness).
            // One not there yet too: making it is news (attack AE-6).
            for base in string_values(&text, "extends") {
                found.push(lexically_normal(&dir.join(base)));
            }
        }
        // ruff reads what its configurations `extend` (attack AE-2: the
        // warm ruff server kept a shared base's old rules).
        let ruff_configs: Vec<PathBuf> = configs
            .iter()
            .cloned()
            .chain(
                python_configs_outside(root)
                    .into_iter()
                    .filter(|path| path.is_file()),
            )
            .collect();
        found.extend(ruff_extends(&ruff_configs));
        for venv in [".venv", "venv", "env"] {
            site_packages(&root.join(venv), &mut found);
        }
        // The environment the server runs in (its caller's, see
        // `lsp::environment`): an activated virtualenv or conda
        // environment outside the project (engine attack E-19).
        for venv in &search.environments {
            site_packages(venv, &mut found);
        }
        // The interpreter the caller's `PATH` finds, when it is not a
        // virtualenv's: its own and the user's `site-packages`
        // (re-attack RC-14: `pip install --user` was not seen warm).
        interpreter_sites(search, root, &mut found);
        // An interpreter named in the settings (`python.pythonPath`): its
        // virtual environment's packages (re-attack RC-16).
        for interpreter in string_values(settings, "pythonPath") {
            let interpreter = PathBuf::from(expand_setting_path(&interpreter, root));
            environment_named(
                &lexically_normal(&root.join(interpreter)),
                root,
                search,
                &mut found,
            );
        }
        // `PYTHONPATH` folders are search paths like `extraPaths`
        // (re-attack RC-2: a module changed there, warm kept the old).
        for folder in &search.paths {
            let folder = lexically_normal(&root.join(folder));
            if !folder.starts_with(root) || walk_skips(root, &folder) {
                python_files(&folder, MAX_EXTRA_FILES, &mut found);
            }
        }
        // Editable installs: a `.pth` file in site-packages names folders
        // (often outside the project) whose modules import as installed.
        let sites: Vec<PathBuf> = found
            .iter()
            .filter(|path| path.ends_with("site-packages"))
            .cloned()
            .collect();
        for site in sites {
            editable_paths(&site, &mut found);
        }
    }
    native_dependencies(root, extensions, configs, &mut found);
    found.sort();
    found.dedup();
    found
}

/// Sources outside the project that Go, Rust and C/C++ builds read (engine
/// attack E-21): a `go.mod` `replace` or `go.work` `use` of a local folder,
/// a Cargo `path` dependency, a C include folder (`-I`, `-isystem`) named
/// in `compile_flags.txt` or `compile_commands.json`.
fn native_dependencies(
    root: &Path,
    extensions: &[String],
    configs: &[PathBuf],
    found: &mut Vec<PathBuf>,
) {
    let handles = |wanted: &[&str]| extensions.iter().any(|e| wanted.contains(&e.as_str()));
    for config in configs {
        let Some(dir) = config.parent() else { continue };
        let name = config.file_name().unwrap_or_default().to_string_lossy();
        let (folders, sources): (Vec<String>, &[&str]) = match name.as_ref() {
            "go.mod" | "go.work" if handles(&[".go"]) => (go_local_folders(config), &[".go"]),
            "Cargo.toml" if handles(&[".rs"]) => {
                found.extend(build_script_inputs(config));
                (
                    std::fs::read_to_string(config)
                        .map(|text| string_values(&text, "path"))
                        .unwrap_or_default(),
                    &[".rs", ".toml"],
                )
            }
            "compile_flags.txt" | "compile_commands.json" if handles(&[".c", ".cpp", ".h"]) => {
                (include_folders(config), C_SOURCES)
            }
            _ => continue,
        };
        for folder in folders {
            let path = lexically_normal(&dir.join(folder));
            if !path.starts_with(root) || walk_skips(root, &path) {
                source_tree(&path, sources, MAX_EXTRA_FILES, found);
            }
        }
    }
}

/// The files a package's build script says it reads
/// (`cargo:rerun-if-changed=PATH`, written out in its source), relative to
/// the package: a change there makes cargo run the script again, and what
/// it generates can change every answer (a `.proto`, a data table); the
/// project walk sees only `.rs` and `.toml` files. A folder counts with
/// its files and folders; a missing path too, so that making it is news.
fn build_script_inputs(manifest: &Path) -> Vec<PathBuf> {
    const MARK: &str = "rerun-if-changed=";
    let Some(package) = manifest.parent() else {
        return Vec::new();
    };
    let script = std::fs::read_to_string(manifest)
        .ok()
        .and_then(|text| string_values(&text, "build").into_iter().next())
        .unwrap_or_else(|| "build.rs".to_string());
    let Ok(source) = std::fs::read_to_string(package.join(script)) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut rest = source.as_str();
    while let Some(at) = rest.find(MARK) {
        rest = &rest[at + MARK.len()..];
        // The literal part: up to the string's end or a format argument.
        let path: String = rest
            .chars()
            .take_while(|c| !matches!(c, '"' | '{' | '\\' | '\n'))
            .collect();
        if path.is_empty() || path == "build.rs" {
            continue;
        }
        let path = lexically_normal(&package.join(path));
        if path.is_dir() {
            found.push(path.clone());
            source_tree(&path, &[""], MAX_EXTRA_FILES, &mut found);
        } else {
            found.push(path);
        }
    }
    found
}

/// Header and source extensions of C and C++.
const C_SOURCES: &[&str] = &[
    ".h", ".hh", ".hpp", ".hxx", ".inc", ".c", ".cc", ".cpp", ".cxx",
];

/// The local folders a `go.mod` `replace` (`=> ../x`) or a `go.work` `use`
/// names: those written as `./`, `../` or absolute paths.
fn go_local_folders(config: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    let local =
        |word: &str| word.starts_with("./") || word.starts_with("../") || word.starts_with('/');
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default();
        if let Some((_, target)) = line.split_once("=>") {
            if let Some(word) = target.split_whitespace().next().filter(|w| local(w)) {
                found.push(word.to_string());
            }
            continue;
        }
        found.extend(
            line.split_whitespace()
                .filter(|word| local(word))
                .map(str::to_string),
        );
    }
    found
}

/// The include folders (`-I`, `-isystem`, attached or as the next
/// argument) in `compile_flags.txt` or in `compile_commands.json`'s
/// commands, relative to the file's folder or the entry's `directory`.
fn include_folders(config: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    let from_args = |args: Vec<String>, base: Option<&str>| -> Vec<String> {
        let mut found = Vec::new();
        let mut take_next = false;
        for arg in args {
            let value = if take_next {
                take_next = false;
                Some(arg.as_str())
            } else if arg == "-I" || arg == "-isystem" || arg == "-iquote" {
                take_next = true;
                None
            } else {
                arg.strip_prefix("-isystem")
                    .or_else(|| arg.strip_prefix("-iquote"))
                    .or_else(|| arg.strip_prefix("-I"))
            };
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                found.push(match base {
                    Some(base) => Path::new(base).join(value).display().to_string(),
                    None => value.to_string(),
                });
            }
        }
        found
    };
    if config.extension().is_some_and(|ext| ext == "txt") {
        return from_args(text.lines().map(|l| l.trim().to_string()).collect(), None);
    }
    let Ok(serde_json::Value::Array(entries)) = serde_json::from_str::<serde_json::Value>(&text)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .flat_map(|entry| {
            let args: Vec<String> = match entry["arguments"].as_array() {
                Some(list) => list
                    .iter()
                    .filter_map(|a| a.as_str().map(str::to_string))
                    .collect(),
                None => entry["command"]
                    .as_str()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
            };
            from_args(args, entry["directory"].as_str())
        })
        .collect()
}

/// Whether the view's server reads JavaScript or TypeScript.
pub fn reads_scripts(extensions: &[String]) -> bool {
    extensions
        .iter()
        .any(|e| SCRIPT_EXTENSIONS.contains(&e.as_str()))
}

/// The files `config` extends, transitively, that exist.
fn extends_chain(config: &Path, chain: &mut Vec<PathBuf>) {
    let mut pending = vec![config.to_path_buf()];
    while let Some(file) = pending.pop() {
        if chain.len() >= MAX_EXTENDS {
            return;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&strip_jsonc(&text)) else {
            continue;
        };
        let names: Vec<&str> = match value.get("extends") {
            Some(serde_json::Value::String(one)) => vec![one.as_str()],
            Some(serde_json::Value::Array(many)) => {
                many.iter().filter_map(serde_json::Value::as_str).collect()
            }
            _ => continue,
        };
        let dir = file.parent().unwrap_or(Path::new("/"));
        for name in names {
            match resolve_extends(dir, name) {
                Ok(base) if base != config && !chain.contains(&base) => {
                    chain.push(base.clone());
                    pending.push(base);
                }
                Ok(_) => {}
                // Not there yet (a shared file made later): where it would
                // be is watched, so making it is news (attack AE-6). A
                // package not installed yet is the `node_modules` watch's.
                Err(candidates) => {
                    for candidate in candidates {
                        if !chain.contains(&candidate) {
                            chain.push(candidate);
                        }
                    }
                }
            }
        }
    }
}

/// Where TypeScript finds `extends: name` from a configuration in `dir`:
/// a path relative to it (".json" added when missing), else a package in
/// a `node_modules` folder of `dir` or above (its `tsconfig.json`, or the
/// file named after the package). Not found: the paths a relative name
/// would be at (none for a package).
fn resolve_extends(dir: &Path, name: &str) -> Result<PathBuf, Vec<PathBuf>> {
    let json_named = |path: &Path| {
        let mut named = path.as_os_str().to_os_string();
        named.push(".json");
        PathBuf::from(named)
    };
    let with_json = |path: PathBuf| -> Option<PathBuf> {
        if path.is_file() {
            return Some(path);
        }
        let named = json_named(&path);
        named.is_file().then_some(named)
    };
    if name.starts_with("./") || name.starts_with("../") || Path::new(name).is_absolute() {
        let path = lexically_normal(&dir.join(name));
        return with_json(path.clone()).ok_or_else(|| vec![json_named(&path), path]);
    }
    for ancestor in dir.ancestors() {
        let package = ancestor.join("node_modules").join(name);
        if package.is_dir() {
            let config = package.join("tsconfig.json");
            if config.is_file() {
                return Ok(config);
            }
        } else if let Some(file) = with_json(package) {
            return Ok(file);
        }
    }
    Err(Vec::new())
}

/// JSON with comments and trailing commas (what `tsconfig.json` allows)
/// as plain JSON: comments become spaces, a comma before `}` or `]` goes.
pub fn strip_jsonc(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            let end = i + utf8_len(c);
            out.push_str(&text[i..end.min(text.len())]);
            if c == b'\\' && i + 1 < bytes.len() {
                let next = i + 1 + utf8_len(bytes[i + 1]);
                out.push_str(&text[i + 1..next.min(text.len())]);
                i = next;
                continue;
            }
            in_string = c != b'"';
            i = end;
            continue;
        }
        match (c, bytes.get(i + 1).copied()) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(bytes.len());
                out.push(' ');
            }
            (b',', _) => {
                let rest = text[i + 1..].trim_start();
                let rest = strip_leading_comments(rest);
                if !(rest.starts_with('}') || rest.starts_with(']')) {
                    out.push(',');
                }
                i += 1;
            }
            _ => {
                in_string = c == b'"';
                let end = i + utf8_len(c);
                out.push_str(&text[i..end.min(text.len())]);
                i = end;
            }
        }
    }
    out
}

/// `text` without the comments and whitespace it starts with.
fn strip_leading_comments(mut text: &str) -> &str {
    loop {
        if let Some(rest) = text.strip_prefix("//") {
            text = rest.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(rest) = text.strip_prefix("/*") {
            text = rest.split_once("*/").map_or("", |(_, after)| after);
        } else {
            return text;
        }
        text = text.trim_start();
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// A path from a server's settings as pyright reads it: `~` and
/// `${userHome}` are the home folder, `${workspaceFolder}` the root.
fn expand_setting_path(path: &str, root: &Path) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let path = path
        .replace("${workspaceFolder}", &root.to_string_lossy())
        .replace("${userHome}", &home);
    match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => path,
    }
}

/// The strings listed under a Python checker's search-path keys, in JSON
/// (`"extraPaths": ["../lib"]`) or TOML (`extraPaths = ["../lib"]`,
/// `extra-paths = [...]`, `search-path = [...]`), wherever they appear.
fn search_paths(text: &str) -> Vec<String> {
    const KEYS: &[&str] = &["extraPaths", "extra-paths", "search-path", "search_path"];
    let mut found = Vec::new();
    for key in KEYS {
        let mut rest = text;
        while let Some(at) = rest.find(key) {
            rest = &rest[at + key.len()..];
            let after = rest.trim_start_matches(['"', '\'', ' ', '\t']);
            let Some(after) = after.strip_prefix([':', '=']) else {
                continue;
            };
            let after = after.trim_start();
            let Some(list) = after.strip_prefix('[') else {
                continue;
            };
            let list = list.split(']').next().unwrap_or_default();
            found.extend(quoted_strings(list));
        }
    }
    found
}

/// The string values of `key` in JSON (`"stubPath": "x"`) or TOML
/// (`stubPath = "x"`), wherever it appears.
fn string_values(text: &str, key: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        rest = &rest[at + key.len()..];
        let after = rest.trim_start_matches(['"', '\'', ' ', '\t']);
        let Some(after) = after.strip_prefix([':', '=']) else {
            continue;
        };
        let after = after.trim_start();
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let value: String = after[1..].chars().take_while(|&c| c != quote).collect();
        if !value.is_empty() {
            found.push(value);
        }
    }
    found
}

/// The contents of the `"..."` and `'...'` strings in `text`.
fn quoted_strings(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            let value: String = chars.by_ref().take_while(|&d| d != c).collect();
            found.push(value);
        }
    }
    found
}

/// What a kept result of a Python checker's command line is stamped with
/// beside the files it covered, found in one walk of the project.
#[derive(Debug, Default)]
pub struct PythonProject {
    /// Every Python file a checker may import, git-ignored ones included
    /// (generated code is routinely git-ignored and imported), and those
    /// under folder links that lead out (re-attack RE-12: a kept `ty check`
    /// result outlived an edit there).
    pub sources: Vec<PathBuf>,
    /// The configuration files named `config_names` anywhere under the
    /// root, hidden ones included (`.ruff.toml`): ruff and ty take the
    /// closest above each file.
    pub configs: Vec<PathBuf>,
    /// The folders that could be imported (see [`is_python_identifier`]):
    /// one with no Python file is a namespace package all the same (PEP
    /// 420), whose coming or going changes what an import resolves to
    /// (engine attack E-9).
    pub folders: Vec<PathBuf>,
    /// The folders of folders linked in from outside (stamped by their
    /// times: what is made or removed in them).
    pub linked_folders: Vec<PathBuf>,
}

/// [`PythonProject`] for `root`: one walk (hidden folders, `node_modules`
/// and virtual environments skipped, links not followed), up to
/// [`MAX_PROJECT_FILES`] entries.
pub fn python_project(root: &Path, config_names: &[&str]) -> PythonProject {
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && entry.depth() > 0
                && (name.starts_with('.') || super::files::NEVER.contains(&name.as_ref())))
        })
        .build();
    let python = |name: &str| name.ends_with(".py") || name.ends_with(".pyi");
    let mut project = PythonProject::default();
    let mut links = Vec::new();
    for entry in walker.flatten().take(MAX_PROJECT_FILES) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_some_and(|t| t.is_file());
        if is_file && config_names.contains(&name.as_str()) {
            project.configs.push(entry.into_path());
            continue;
        }
        if name.starts_with('.') {
            continue;
        }
        if entry.depth() > 0
            && entry.file_type().is_some_and(|t| t.is_dir())
            && is_python_identifier(&name)
        {
            project.folders.push(entry.into_path());
            continue;
        }
        let is_link = entry.file_type().is_some_and(|t| t.is_symlink());
        if is_link && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
            links.push(entry.into_path());
        } else if python(&name) {
            project.sources.push(entry.into_path());
        }
    }
    // The folders of folders linked in, up to each link's target: one
    // made or removed there (a namespace package) moves their times
    // (re-attack RD-4; a kept `ty check` result outlived it).
    let targets: std::collections::BTreeSet<PathBuf> = links
        .iter()
        .filter_map(|link| link.canonicalize().ok())
        .collect();
    let mut linked_folders = targets.clone();
    for (_, real) in files_under_links(root, &links, &python) {
        for folder in real.ancestors().skip(1) {
            if targets.contains(folder) || !linked_folders.insert(folder.to_path_buf()) {
                break;
            }
        }
        project.sources.push(real);
    }
    project.linked_folders = linked_folders.into_iter().collect();
    project
}

/// Whether a folder named `name` can be imported as a Python module
/// (`pkg`, `_x2`; not `build-1`, `.cache` or `2x`).
pub fn is_python_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// The Python checkers' configuration files outside the project that they
/// read: in every folder above it (a monorepo's root) and the user's own
/// (`~/.config/ruff`, `~/.config/ty`); missing ones too, so that creating
/// one is a change.
pub fn python_configs_outside(root: &Path) -> Vec<PathBuf> {
    const NAMES: &[&str] = &[
        "pyproject.toml",
        "ty.toml",
        "ruff.toml",
        ".ruff.toml",
        "pyrefly.toml",
        // Which Python a version manager's shim runs (re-attack RC-1).
        ".python-version",
        ".tool-versions",
    ];
    let mut found = Vec::new();
    for folder in root.ancestors().skip(1) {
        found.extend(NAMES.iter().map(|name| folder.join(name)));
    }
    let user_config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")));
    if let Some(dir) = user_config {
        for name in [
            "ruff/ruff.toml",
            "ruff/.ruff.toml",
            "ruff/pyproject.toml",
            "ty/ty.toml",
        ] {
            found.push(dir.join(name));
        }
    }
    // pyenv's global choice, which its shim runs where no
    // `.python-version` says otherwise.
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pyenv")));
    if let Some(dir) = pyenv_root {
        found.push(dir.join("version"));
    }
    found
}

/// How many source files one folder link that leads out of the project
/// may add (a link to a home folder by mistake).
const MAX_LINKED_FILES: usize = 5_000;

/// How many linked folders are followed out of the project, nested ones
/// included.
const MAX_LINKED_FOLDERS: usize = 32;

/// The files `wanted` under folder links that lead out of `root`, and
/// under the folder links inside those: each as (its path through the
/// link, which is how a server names it; where it is). A target inside
/// the root is walked as itself already; each target is walked once (a
/// link cycle ends); at most [`MAX_LINKED_FILES`] files a link, so one big
/// linked tree does not starve a small one, and [`MAX_LINKED_FOLDERS`]
/// folders (engine attack E-1, re-attack RE-1, RE-2, RE-12).
pub fn files_under_links(
    root: &Path,
    links: &[PathBuf],
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<(PathBuf, PathBuf)> {
    let mut found = Vec::new();
    let mut queue: std::collections::VecDeque<PathBuf> = links.iter().cloned().collect();
    let mut seen: Vec<PathBuf> = Vec::new();
    // Links of the project whose target lies in one walked already: their
    // files are named through them too (re-attack RC-11: `alib -> /ext`,
    // `blib -> /ext/sub` named every file through `alib` only).
    let mut within_walked: Vec<(PathBuf, PathBuf)> = Vec::new();
    while let Some(link) = queue.pop_front() {
        let Ok(target) = link.canonicalize() else {
            continue;
        };
        if seen.iter().any(|done| target.starts_with(done)) && links.contains(&link) {
            within_walked.push((link, target));
            continue;
        }
        // A target inside the root is walked as itself, unless the walk
        // skips it (`lib -> .vendor/lib`; re-attack RC-12).
        if (target.starts_with(root) && !walk_skips(root, &target))
            || root.starts_with(&target)
            || seen.iter().any(|done| target.starts_with(done))
            || seen.len() >= MAX_LINKED_FOLDERS
        {
            continue;
        }
        seen.push(target.clone());
        let mut left = MAX_LINKED_FILES;
        // Walked from its target (a walk does not enter a root that is a
        // link), each file named under the link.
        let walker = ignore::WalkBuilder::new(&target)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(|entry| {
                !(entry.file_type().is_some_and(|t| t.is_dir())
                    && super::files::NEVER.contains(&entry.file_name().to_string_lossy().as_ref()))
            })
            .build();
        for entry in walker.flatten() {
            if left == 0 {
                break;
            }
            let Ok(inside) = entry.path().strip_prefix(&target) else {
                continue;
            };
            let is_link = entry.file_type().is_some_and(|t| t.is_symlink());
            if is_link && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir()) {
                queue.push_back(link.join(inside));
                continue;
            }
            let is_file = is_link || entry.file_type().is_some_and(|t| t.is_file());
            if !is_file || !wanted(&entry.file_name().to_string_lossy()) {
                continue;
            }
            left -= 1;
            found.push((link.join(inside), entry.into_path()));
        }
    }
    let mut aliases = Vec::new();
    for (link, target) in &within_walked {
        for (_, real) in &found {
            if let Ok(inside) = real.strip_prefix(target) {
                aliases.push((link.join(inside), real.clone()));
            }
        }
    }
    found.extend(aliases);
    found
}

/// The Python files under `dir` (see [`source_files`]), and its folders:
/// a folder's times move when an entry is made or removed in it, so a
/// module or namespace package (a folder with no file) that came or went
/// there is news too (re-attack RC-5).
fn python_files(dir: &Path, limit: usize, found: &mut Vec<PathBuf>) {
    let before = found.len();
    source_files(dir, &[".py", ".pyi"], limit, found);
    let folders: std::collections::BTreeSet<PathBuf> = found[before..]
        .iter()
        .filter_map(|file| file.parent())
        .flat_map(|folder| folder.ancestors().take_while(|a| a.starts_with(dir)))
        .map(Path::to_path_buf)
        // The folder itself, even before it exists: a search folder made
        // after the server started is news too (re-attack RD-3).
        .chain(std::iter::once(dir.to_path_buf()))
        .collect();
    found.extend(folders);
}

/// [`source_files`], and every folder the walk went through, `dir` itself
/// even before it exists: a folder's times move when an entry is made or
/// removed in it, so a file created there (which a `paths` mapping, an
/// include folder, a Go `replace` or a Cargo path dependency then
/// resolves to) is news, not only an edit of a file that was there
/// (attack AE-7 to AE-10). At most `limit` folders.
fn source_tree(dir: &Path, extensions: &[&str], limit: usize, found: &mut Vec<PathBuf>) {
    found.push(dir.to_path_buf());
    walk_sources(dir, extensions, limit, true, found);
}

/// The files with one of `extensions` under `dir`, up to `limit` (hidden
/// folders, `node_modules` and virtual environments skipped).
fn source_files(dir: &Path, extensions: &[&str], limit: usize, found: &mut Vec<PathBuf>) {
    walk_sources(dir, extensions, limit, false, found);
}

/// One walk of `dir` (outside the project walk: hidden folders,
/// `node_modules` and virtual environments skipped, links not followed):
/// its files with one of `extensions`, and its folders when `folders`,
/// up to `limit` of each.
fn walk_sources(
    dir: &Path,
    extensions: &[&str],
    limit: usize,
    folders: bool,
    found: &mut Vec<PathBuf>,
) {
    if !dir.is_dir() {
        return;
    }
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            !super::files::NEVER.contains(&name.as_ref())
        })
        .build();
    let (mut n_files, mut n_folders) = (0, 0);
    for entry in walker.flatten() {
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            if folders && entry.depth() > 0 && n_folders < limit {
                found.push(entry.into_path());
                n_folders += 1;
            }
            continue;
        }
        let name = entry.file_name().to_string_lossy();
        if n_files < limit && extensions.iter().any(|ext| name.ends_with(ext)) {
            found.push(entry.into_path());
            n_files += 1;
        }
        if n_files >= limit && (!folders || n_folders >= limit) {
            return;
        }
    }
}

/// The file extensions of the sources a TypeScript server reads.
const SCRIPT_SOURCES: &[&str] = &[".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".jsx"];

/// Whether the project walk skips `path` (inside `root`): a hidden folder,
/// `node_modules`, a virtual environment, `target/` on the way.
fn walk_skips(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|relative| {
        relative.components().any(|part| {
            let name = part.as_os_str().to_string_lossy();
            name.starts_with('.') || super::files::NEVER.contains(&name.as_ref())
        })
    })
}

/// The folders a TypeScript configuration reads sources from: those it
/// maps module names to (`compilerOptions.paths`, relative to `baseUrl` or
/// the file), its `typeRoots`, and the folders of its `include` and
/// `files` entries (engine attack E-12: global typings outside the
/// project), each with the first `*` and what follows it cut off.
fn mapped_dirs(config: &Path, text: &str) -> Vec<PathBuf> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&strip_jsonc(text)) else {
        return Vec::new();
    };
    let dir = config.parent().unwrap_or(Path::new("/"));
    let options = &value["compilerOptions"];
    let base = options["baseUrl"]
        .as_str()
        .map(|base| dir.join(base))
        .unwrap_or_else(|| dir.to_path_buf());
    let folder_of = |from: &Path, target: &str| {
        let cut = target.split('*').next().unwrap_or_default();
        let target = lexically_normal(&from.join(cut));
        if cut.ends_with('/') || target.is_dir() {
            target
        } else {
            target.parent().map(Path::to_path_buf).unwrap_or(target)
        }
    };
    let strings = |value: &serde_json::Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut found: Vec<PathBuf> = options["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .flat_map(&strings)
        .map(|target| folder_of(&base, &target))
        .collect();
    for key in [&options["typeRoots"], &value["include"], &value["files"]] {
        found.extend(strings(key).iter().map(|entry| folder_of(dir, entry)));
    }
    found
}

/// The folders `.pth` files in `site` add to Python's path, and the `.pth`
/// files themselves; the Python files under those folders.
fn editable_paths(site: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(site) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "pth") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        found.push(path.clone());
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') || line.starts_with("import") {
                continue;
            }
            python_files(&lexically_normal(&site.join(line)), MAX_EXTRA_FILES, found);
        }
    }
}

/// A virtual environment's `site-packages` folders: `pip install` and
/// `pip uninstall` add and remove entries there, which moves the folder's
/// own times. An environment not there yet is stamped as missing, so that
/// making it (`uv venv`) is news.
fn site_packages(venv: &Path, found: &mut Vec<PathBuf>) {
    // Which packages count besides its own (`include-system-site-packages`,
    // edited in place: attack AE-12).
    let config = venv.join("pyvenv.cfg");
    if config.is_file() {
        found.push(config);
    }
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        if std::fs::symlink_metadata(venv).is_err() {
            found.push(venv.to_path_buf());
        }
        return;
    };
    for entry in entries.flatten() {
        let site = entry.path().join("site-packages");
        if site.is_dir() {
            found.push(site);
        }
    }
}

/// The packages of the Python environment a setting names by `path`: a
/// virtualenv or an installation's prefix (ty's `environment.python`), or
/// an interpreter in one (pyright's `python.pythonPath`). One that is not
/// there yet is stamped as missing, so that making it (`python -m venv`
/// after the settings were written) is news (attack AE-1).
fn environment_named(
    path: &Path,
    root: &Path,
    search: &crate::lsp::environment::PythonSearch,
    found: &mut Vec<PathBuf>,
) {
    if path.is_dir() {
        // `lib/python3.X/site-packages` below a virtualenv or a prefix.
        site_packages(path, found);
        return;
    }
    if !path.exists() {
        found.push(path.to_path_buf());
        return;
    }
    // An interpreter: its virtualenv's, or its own prefix's (a system or
    // pyenv Python), as for the one on `PATH`.
    let named = crate::lsp::environment::PythonSearch {
        interpreter: Some(path.to_path_buf()),
        ..search.clone()
    };
    interpreter_sites(&named, root, found);
}

/// The files ruff configurations among `configs` `extend`
/// (`extend = "../base.toml"`, `~/` for the home folder), and what those
/// extend in turn, up to 8 deep; missing ones too, so that making one is a
/// change (re-attack RE-8, attack AE-2).
pub fn ruff_extends(configs: &[PathBuf]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut seen: Vec<PathBuf> = configs.to_vec();
    let mut found = Vec::new();
    let mut next: Vec<PathBuf> = configs.to_vec();
    for _ in 0..8 {
        let extended: Vec<PathBuf> = next
            .iter()
            .filter_map(|config| {
                let text = std::fs::read_to_string(config).ok()?;
                let name = extends_named(&text)?;
                Some(match (name.strip_prefix("~/"), &home) {
                    (Some(rest), Some(home)) => home.join(rest),
                    _ => lexically_normal(&config.parent().unwrap_or(Path::new("/")).join(name)),
                })
            })
            .filter(|path| !seen.contains(path))
            .collect();
        if extended.is_empty() {
            break;
        }
        seen.extend(extended.iter().cloned());
        found.extend(extended.iter().cloned());
        next = extended;
    }
    found
}

/// The path a TOML configuration names with `extend = "…"` or `'…'`
/// (ruff's key).
fn extends_named(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("extend")?.trim_start();
        let value = rest.strip_prefix('=')?.trim();
        let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let quoted = &value[1..];
        Some(quoted[..quoted.find(quote)?].to_string())
    })
}

/// How many virtual environments a `venvPath` folder may hold before the
/// rest are left out.
const MAX_VENVS: usize = 32;

/// The virtual environments directly in `folder` (those with a
/// `pyvenv.cfg`), at most [`MAX_VENVS`].
fn virtualenvs_in(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("pyvenv.cfg").is_file())
        .take(MAX_VENVS)
        .collect()
}

/// The `site-packages` of the interpreter in `search` (see
/// [`crate::lsp::environment::PythonSearch`]): a virtualenv's own, or
/// else the prefix's (`lib/pythonX.Y/site-packages`, Debian's
/// `dist-packages`, those under `local/`) and the user site. The user
/// site is stamped even before it exists: the first `pip install --user`
/// makes it.
fn interpreter_sites(
    search: &crate::lsp::environment::PythonSearch,
    root: &Path,
    found: &mut Vec<PathBuf>,
) {
    let Some(interpreter) = &search.interpreter else {
        return;
    };
    // A pyenv shim stands for the interpreter it runs here (re-attack
    // RC-1), named by its real path (`python3` → `python3.11`).
    let interpreter = pyenv_target(interpreter, root, search.pyenv_version.as_deref())
        .and_then(|target| target.canonicalize().ok())
        .unwrap_or_else(|| interpreter.clone());
    let Some(prefix) = interpreter.parent().and_then(Path::parent) else {
        return;
    };
    if prefix.join("pyvenv.cfg").is_file() {
        site_packages(prefix, found);
        return;
    }
    let name = interpreter
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    let versions: Vec<String> = match name.strip_prefix("python") {
        Some(version) if version.contains('.') => vec![version.to_string()],
        // `python3` itself: the versions its prefix has libraries of.
        _ => std::fs::read_dir(prefix.join("lib"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let version = name.strip_prefix("python")?;
                version.contains('.').then(|| version.to_string())
            })
            .take(MAX_VENVS)
            .collect(),
    };
    let shared = prefix.join("lib/python3/dist-packages");
    if shared.is_dir() {
        found.push(shared);
    }
    for version in versions {
        for site in [
            format!("lib/python{version}/site-packages"),
            format!("lib/python{version}/dist-packages"),
            format!("local/lib/python{version}/site-packages"),
            format!("local/lib/python{version}/dist-packages"),
        ] {
            let site = prefix.join(site);
            if site.is_dir() {
                found.push(site);
            }
        }
        if let Some(base) = &search.user_base {
            found.push(base.join(format!("lib/python{version}/site-packages")));
        }
    }
}

/// The interpreter the pyenv shim `shim` (`<pyenv>/shims/python3`) runs for
/// the project at `root`: the version `PYENV_VERSION` names, else the
/// closest `.python-version` from the project up, else pyenv's global
/// `version` file; `None` for another path, or for `system`.
fn pyenv_target(shim: &Path, root: &Path, version: Option<&str>) -> Option<PathBuf> {
    let shims = shim.parent()?;
    let pyenv = shims.parent()?;
    if shims.file_name()? != "shims" || !pyenv.join("versions").is_dir() {
        return None;
    }
    let chosen = version
        .map(str::to_string)
        .or_else(|| {
            root.ancestors()
                .find_map(|dir| std::fs::read_to_string(dir.join(".python-version")).ok())
        })
        .or_else(|| std::fs::read_to_string(pyenv.join("version")).ok())?;
    // The first of several (`3.12.1:3.11.7`, or one per line).
    let first = chosen
        .split(|c: char| c == ':' || c.is_whitespace())
        .find(|part| !part.is_empty())?;
    if first == "system" || first.contains('/') {
        return None;
    }
    Some(
        pyenv
            .join("versions")
            .join(first)
            .join("bin")
            .join(shim.file_name()?),
    )
}

/// The packages of a `node_modules` folder: the folder itself (packages
/// added or removed), the installer's record, and each package's manifest
/// and typings entry (`types`/`typings`, else `index.d.ts`), scoped
/// packages and `@types/*` included.
fn node_packages(node_modules: &Path, found: &mut Vec<PathBuf>) {
    // Stamped even before it exists: `npm install` in a fresh clone makes
    // it after the server started (attack AE-5).
    found.push(node_modules.to_path_buf());
    let Ok(entries) = std::fs::read_dir(node_modules) else {
        return;
    };
    for record in [".package-lock.json", ".modules.yaml", ".yarn-state.yml"] {
        let path = node_modules.join(record);
        if path.is_file() {
            found.push(path);
        }
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if name.starts_with('@') {
            found.push(path.clone());
            if let Ok(scoped) = std::fs::read_dir(&path) {
                for package in scoped.flatten() {
                    package_files(&package.path(), found);
                }
            }
        } else {
            package_files(&path, found);
        }
    }
}

/// Type entries of one `exports` map at most: a package exporting more
/// subpaths is still seen through its manifest and installer's record.
const MAX_EXPORTED_TYPES: usize = 64;

/// One package's manifest and typings entries, when they exist: `types` /
/// `typings` (else `index.d.ts`) and the `types` conditions of its
/// `exports` map, where most packages published for ES modules declare
/// theirs. (A package linked in — `npm link`, the workspace's own packages
/// — is read through its link.)
fn package_files(package: &Path, found: &mut Vec<PathBuf>) {
    let manifest = package.join("package.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return;
    };
    found.push(manifest);
    let value = serde_json::from_str::<serde_json::Value>(&text).ok();
    let main = value
        .as_ref()
        .and_then(|value| {
            ["types", "typings"]
                .iter()
                .find_map(|key| value.get(*key)?.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| "index.d.ts".to_string());
    let mut entries = vec![main];
    if let Some(exports) = value.as_ref().and_then(|value| value.get("exports")) {
        exported_types(exports, false, &mut entries);
    }
    for entry in entries {
        let typings = lexically_normal(&package.join(entry));
        if typings.starts_with(package) && typings.is_file() && !found.contains(&typings) {
            found.push(typings);
        }
    }
}

/// The paths under `types` conditions of an `exports` map (nested by
/// subpath and by condition: `{".": {"import": {"types": …}}}`), and any
/// declaration file it names. `typed`: inside a `types` condition.
fn exported_types(exports: &serde_json::Value, typed: bool, out: &mut Vec<String>) {
    if out.len() > MAX_EXPORTED_TYPES {
        return;
    }
    match exports {
        serde_json::Value::String(path) => {
            let declaration = [".d.ts", ".d.mts", ".d.cts"]
                .iter()
                .any(|ext| path.ends_with(ext));
            if (typed || declaration) && !path.contains('*') {
                out.push(path.clone());
            }
        }
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                exported_types(value, typed || key == "types", out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                exported_types(item, typed, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas() {
        let text = r#"{
  // a comment with "quotes" and a , comma
  "extends": "./base.json", /* block */
  "s": "a // not a comment, \" still",
  "list": [1, 2,],
}"#;
        let value: serde_json::Value = serde_json::from_str(&strip_jsonc(text)).unwrap();
        assert_eq!(value["extends"], "./base.json");
        assert_eq!(value["s"], "a // not a comment, \" still");
        assert_eq!(value["list"], serde_json::json!([1, 2]));
    }

    #[test]
    fn the_sites_of_an_interpreter_without_a_virtualenv() {
        let base = std::env::temp_dir().join(format!("rh-sites-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let prefix = base.join("usr");
        for folder in [
            "bin",
            "lib/python3.12/site-packages",
            "lib/python3/dist-packages",
            "local/lib/python3.12/dist-packages",
        ] {
            std::fs::create_dir_all(prefix.join(folder)).unwrap();
        }
        std::fs::write(prefix.join("bin/python3.12"), "").unwrap();
        let search = crate::lsp::environment::PythonSearch {
            interpreter: Some(prefix.join("bin/python3.12")),
            user_base: Some(base.join("home/.local")),
            ..Default::default()
        };
        let mut found = Vec::new();
        interpreter_sites(&search, &base, &mut found);
        found.sort();
        let expected = [
            "home/.local/lib/python3.12/site-packages",
            "usr/lib/python3/dist-packages",
            "usr/lib/python3.12/site-packages",
            "usr/local/lib/python3.12/dist-packages",
        ]
        .map(|site| base.join(site));
        assert_eq!(found, expected, "the user site counts before it exists");

        // `python3` itself: the versions the prefix has libraries of; no
        // user site when `PYTHONNOUSERSITE` turns it off.
        let search = crate::lsp::environment::PythonSearch {
            interpreter: Some(prefix.join("bin/python3")),
            user_base: None,
            ..Default::default()
        };
        let mut found = Vec::new();
        interpreter_sites(&search, &base, &mut found);
        found.sort();
        assert_eq!(found, expected[1..]);

        // A virtualenv's interpreter: that environment's packages only.
        let venv = base.join("venv");
        std::fs::create_dir_all(venv.join("lib/python3.12/site-packages")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "").unwrap();
        let search = crate::lsp::environment::PythonSearch {
            interpreter: Some(venv.join("bin/python3")),
            user_base: Some(base.join("home/.local")),
            ..Default::default()
        };
        let mut found = Vec::new();
        interpreter_sites(&search, &base, &mut found);
        assert_eq!(
            found,
            [
                venv.join("pyvenv.cfg"),
                venv.join("lib/python3.12/site-packages")
            ]
        );

        // A pyenv shim: the version `.python-version` names, else the
        // global one, else `PYENV_VERSION` first of all.
        let pyenv = base.join("pyenv");
        for version in ["3.11.7", "3.12.1"] {
            let prefix = pyenv.join("versions").join(version);
            let short = &version[..4];
            std::fs::create_dir_all(prefix.join("bin")).unwrap();
            std::fs::create_dir_all(prefix.join(format!("lib/python{short}/site-packages")))
                .unwrap();
            std::fs::write(prefix.join(format!("bin/python{short}")), "").unwrap();
            std::os::unix::fs::symlink(format!("python{short}"), prefix.join("bin/python3"))
                .unwrap();
        }
        std::fs::create_dir_all(pyenv.join("shims")).unwrap();
        std::fs::write(pyenv.join("shims/python3"), "#!/bin/sh\n").unwrap();
        std::fs::write(pyenv.join("version"), "3.12.1\n").unwrap();
        let project = base.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let sites = |version: Option<&str>| {
            let search = crate::lsp::environment::PythonSearch {
                interpreter: Some(pyenv.join("shims/python3")),
                pyenv_version: version.map(str::to_string),
                ..Default::default()
            };
            let mut found = Vec::new();
            interpreter_sites(&search, &project, &mut found);
            found
        };
        let site = |version: &str, short: &str| {
            pyenv.join(format!(
                "versions/{version}/lib/python{short}/site-packages"
            ))
        };
        assert_eq!(sites(None), [site("3.12.1", "3.12")]);
        std::fs::write(project.join(".python-version"), "3.11.7\n").unwrap();
        assert_eq!(sites(None), [site("3.11.7", "3.11")]);
        assert_eq!(sites(Some("3.12.1:3.11.7")), [site("3.12.1", "3.12")]);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn search_paths_in_json_and_toml() {
        assert_eq!(
            search_paths(r#"{"extraPaths": ["../lib", "/opt/x"]}"#),
            ["../lib", "/opt/x"]
        );
        assert_eq!(
            search_paths("[tool.pyright]\nextraPaths = [\n  '../a',\n  \"b\",\n]\n"),
            ["../a", "b"]
        );
        assert_eq!(
            search_paths("[tool.ty.environment]\nextra-paths = [\"../c\"]\n"),
            ["../c"]
        );
        assert!(search_paths("extraPaths is mentioned in prose").is_empty());
    }

    #[test]
    fn setting_paths_expand_home_and_the_workspace() {
        let home = std::env::var("HOME").unwrap_or_default();
        let root = Path::new("/p");
        assert_eq!(expand_setting_path("~/hx", root), format!("{home}/hx"));
        assert_eq!(
            expand_setting_path("${userHome}/a", root),
            format!("{home}/a")
        );
        assert_eq!(
            expand_setting_path("${workspaceFolder}/../w", root),
            "/p/../w"
        );
        assert_eq!(expand_setting_path("~user/x", root), "~user/x");
        assert_eq!(expand_setting_path("lib", root), "lib");
    }

    #[test]
    fn a_file_under_two_links_out_is_named_through_both() {
        let base = std::env::temp_dir().join(format!("ralph-deps-nested-{}", std::process::id()));
        let (root, ext) = (base.join("root"), base.join("ext"));
        std::fs::create_dir_all(ext.join("sub")).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(ext.join("sub/x.py"), "").unwrap();
        let (root, ext) = (root.canonicalize().unwrap(), ext.canonicalize().unwrap());
        std::os::unix::fs::symlink(&ext, root.join("alib")).unwrap();
        std::os::unix::fs::symlink(ext.join("sub"), root.join("blib")).unwrap();
        let links = [root.join("alib"), root.join("blib")];
        let mut named: Vec<PathBuf> = files_under_links(&root, &links, &|_| true)
            .into_iter()
            .map(|(named, real)| {
                assert_eq!(real, ext.join("sub/x.py"));
                named
            })
            .collect();
        named.sort();
        assert_eq!(named, [root.join("alib/sub/x.py"), root.join("blib/x.py")]);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn importable_folder_names() {
        for name in ["pkg", "_x2", "nsdir", "données"] {
            assert!(is_python_identifier(name), "{name}");
        }
        for name in ["build-1", ".cache", "2x", "", "a b", "a.b"] {
            assert!(!is_python_identifier(name), "{name}");
        }
    }

    #[test]
    fn local_folders_of_go_include_folders_of_c() {
        let dir = std::env::temp_dir().join(format!("ralph-deps-native-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let go_mod = dir.join("go.mod");
        std::fs::write(
            &go_mod,
            "module m\n\nreplace example.com/x => ../x\nreplace (\n\tb => /abs/b // c\n\tc v1 => c v2\n)\n",
        )
        .unwrap();
        assert_eq!(go_local_folders(&go_mod), ["../x", "/abs/b"]);
        let go_work = dir.join("go.work");
        std::fs::write(&go_work, "go 1.21\n\nuse (\n\t./a\n\t../other\n)\n").unwrap();
        assert_eq!(go_local_folders(&go_work), ["./a", "../other"]);
        let flags = dir.join("compile_flags.txt");
        std::fs::write(&flags, "-std=c11\n-I/opt/inc\n-isystem\n../sys\n").unwrap();
        assert_eq!(include_folders(&flags), ["/opt/inc", "../sys"]);
        let commands = dir.join("compile_commands.json");
        std::fs::write(
            &commands,
            r#"[{"directory": "/b", "command": "cc -Iinc -c m.c"}, {"directory": "/d", "arguments": ["cc", "-I", "/x"]}]"#,
        )
        .unwrap();
        assert_eq!(include_folders(&commands), ["/b/inc", "/x"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn single_string_values_in_json_and_toml() {
        assert_eq!(
            string_values(
                r#"{"stubPath": "../stubs", "extends": "./cfg/base.json"}"#,
                "stubPath"
            ),
            ["../stubs"]
        );
        assert_eq!(
            string_values("[tool.pyright]\nextends = 'cfg/base.toml'\n", "extends"),
            ["cfg/base.toml"]
        );
        assert!(string_values(r#"{"extends": ["a", "b"]}"#, "extends").is_empty());
    }

    #[test]
    fn exported_type_entries_at_any_depth() {
        let exports = serde_json::json!({
            ".": {"import": {"types": "./dist/index.d.mts", "default": "./dist/index.mjs"},
                  "require": {"types": "./dist/index.d.cts", "default": "./dist/index.cjs"}},
            "./sub": {"types": "./dist/sub.d.ts", "default": "./dist/sub.js"},
            "./lib/*": {"types": "./dist/lib/*.d.ts"},
            "./data.json": "./data.json"
        });
        let mut found = Vec::new();
        exported_types(&exports, false, &mut found);
        found.sort();
        assert_eq!(
            found,
            [
                "./dist/index.d.cts",
                "./dist/index.d.mts",
                "./dist/sub.d.ts"
            ]
        );
    }

    #[test]
    fn lexical_normalisation() {
        assert_eq!(
            lexically_normal(Path::new("/p/a/../b/./c.json")),
            Path::new("/p/b/c.json")
        );
    }
}
