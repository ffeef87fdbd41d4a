//! The versions of the language servers a loop's diagnostics condition
//! used, for its receipt and for `verify` to compare: the `version` of the
//! npm package a server's binary belongs to, else the first line the binary
//! prints for `--version` (or `version`, as gopls wants), with a short
//! timeout. These are the binaries the check itself just ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::hook::config::Config;
use crate::lsp::servers::{Registry, find_binary};
use crate::util::process::GroupChild;

/// How long a server may take to say its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

/// What a version is said as when it cannot be told.
pub const UNKNOWN: &str = "unknown";

/// Name → version for `names`; a server not installed here is left out.
/// A file checked by a checker and a linter beside it names both
/// (`pyright + ruff`): its version names both too.
pub fn versions(
    project_root: &Path,
    config: &Config,
    names: &[String],
) -> BTreeMap<String, String> {
    let registry = Registry::load(project_root, config);
    let mut out = BTreeMap::new();
    for name in names {
        let parts: Option<Vec<String>> = name
            .split(" + ")
            .map(|part| version_of_server(&registry, project_root, part.trim()))
            .collect();
        if let Some(parts) = parts {
            out.insert(name.clone(), parts.join(" + "));
        }
    }
    out
}

/// One server's version; `None` when it is not installed here.
fn version_of_server(registry: &Registry, project_root: &Path, name: &str) -> Option<String> {
    if name == "ast-grep" {
        // Built in: this tool's own version.
        return Some(format!(
            "ast-grep built into ralph-hooks {}",
            env!("CARGO_PKG_VERSION")
        ));
    }
    let server = registry.servers.iter().find(|server| server.name == name)?;
    let program = find_binary(&server.command, project_root, &[project_root])?;
    Some(version_of(&program).unwrap_or_else(|| format!("{name} {UNKNOWN}")))
}

/// A binary's version: its npm package's, else what it prints.
pub fn version_of(program: &Path) -> Option<String> {
    if let Some(version) = npm_version(program) {
        return Some(version);
    }
    for args in [&["--version"][..], &["version"][..]] {
        if let Some(line) = printed_version(program, args) {
            return Some(line);
        }
    }
    None
}

/// The `version` in the `package.json` of the package holding `program`
/// (node_modules/.bin links into it).
fn npm_version(program: &Path) -> Option<String> {
    let real: PathBuf = std::fs::canonicalize(program).ok()?;
    for dir in real.ancestors().skip(1).take(4) {
        let manifest = dir.join("package.json");
        if let Ok(text) = std::fs::read_to_string(&manifest)
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(version) = value.get("version").and_then(|v| v.as_str())
        {
            return Some(clean(version));
        }
    }
    None
}

/// The first non-empty line `program args` prints on success, cleaned.
fn printed_version(program: &Path, args: &[&str]) -> Option<String> {
    let temp = crate::receipts::tree::TempDir::new("server-version").ok()?;
    let out_path = temp.path().join("out");
    let out = std::fs::File::create(&out_path).ok()?;
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::null());
    let mut child = GroupChild::spawn(&mut command).ok()?;
    let status = child.wait_timeout(VERSION_TIMEOUT).ok()?;
    if status.is_none() {
        child.kill();
        return None;
    }
    if !status?.success() {
        return None;
    }
    let text = std::fs::read_to_string(&out_path).ok()?;
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    Some(clean(line))
}

/// One short line without control characters: it comes from a program.
fn clean(text: &str) -> String {
    let line: String = text.chars().filter(|c| !c.is_control()).take(120).collect();
    line.trim().to_string()
}
