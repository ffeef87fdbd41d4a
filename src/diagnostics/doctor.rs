//! `ralph-hooks doctor` lines: per language, the server that would run
//! for this project and why (the registry's choice), where it is and its
//! version, what else is installed; then ast-grep.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::ast_grep;
use crate::engine::settings::Settings;
use crate::hook::ctx::Ctx;
use crate::lsp::servers::{Selection, ServerDef, find_binary};
use crate::util::fsread::{self, Links, limits};
use crate::util::process::GroupChild;

/// How long `<server> --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

pub fn doctor_lines(ctx: &Ctx) -> Vec<String> {
    let settings = Settings::load(ctx);
    let mut lines = Vec::new();
    if !settings.config.enabled {
        lines.push("turned off (\"diagnostics\": {\"enabled\": false})".to_string());
    }
    let mut languages: Vec<&str> = Vec::new();
    for server in settings.registry.servers.iter().filter(|s| s.enabled) {
        if !languages.contains(&server.language.as_str()) {
            languages.push(&server.language);
        }
    }
    let probes = crate::daemon::detect::language_probes(&ctx.project_root);
    for language in languages {
        let servers: Vec<&ServerDef> = settings
            .registry
            .servers
            .iter()
            .filter(|s| s.enabled && s.language == language)
            .collect();
        // A file of this language in the project (its folder can decide the
        // choice), else a name at the root.
        let probe = probes
            .iter()
            .find(|probe| {
                probe.extension().is_some_and(|e| {
                    servers.iter().any(|s| {
                        s.extensions
                            .contains_key(&format!(".{}", e.to_string_lossy()))
                    })
                })
            })
            .cloned()
            .or_else(|| {
                let extension = servers.first()?.extensions.keys().next()?.clone();
                Some(ctx.project_root.join(format!("ralph-probe{extension}")))
            });
        let installed: Vec<&str> = servers
            .iter()
            .filter(|s| {
                find_binary(&s.command, &ctx.project_root, &[ctx.project_root.as_path()]).is_some()
            })
            .map(|s| s.name.as_str())
            .collect();
        let selection = probe
            .as_deref()
            .map(|probe| settings.registry.select(probe, &ctx.project_root));
        match selection {
            Some(Selection::Found {
                server,
                program,
                reason,
                ..
            }) => {
                let version = match version_of(&program) {
                    Ok(version) => version,
                    Err(why) => format!("NOT WORKING: {why}"),
                };
                let mut line = format!(
                    "{language}: {} — {} ({version}) — chosen because {reason}",
                    server.name,
                    program.display()
                );
                let others: Vec<&str> = installed
                    .iter()
                    .copied()
                    .filter(|name| *name != server.name)
                    .collect();
                if !others.is_empty() {
                    line.push_str(&format!("; also installed: {}", others.join(", ")));
                }
                lines.push(line);
            }
            _ => {
                let tried: Vec<&str> = servers.iter().map(|s| s.command.as_str()).collect();
                lines.push(format!(
                    "{language}: not installed (looked for {}) — install: {}",
                    tried.join(", "),
                    servers
                        .first()
                        .map(|s| s.install_hint.as_str())
                        .unwrap_or("")
                ));
            }
        }
    }
    let sgconfig = ast_grep::config_file(&ctx.project_root);
    let rules = crate::engine::run::rule_set(ctx);
    let ast_grep_line = format!(
        "ast-grep: built in (in-process engine; built-in rules{}){}",
        if sgconfig.is_some() {
            " + the project's sgconfig.yml rules"
        } else {
            ""
        },
        if rules.problems().is_empty() {
            String::new()
        } else {
            format!(" — problems: {}", rules.problems().join("; "))
        } + &if rules.not_applicable().is_empty() {
            String::new()
        } else {
            format!(
                " — left out (no file here they could check): {}",
                rules.not_applicable().join("; ")
            )
        }
    );
    lines.push(ast_grep_line);
    for warning in &settings.registry.warnings {
        lines.push(format!("warning: {warning}"));
    }
    lines
}

/// The version a server reports: `package.json` for node servers (whose
/// language-server entry points have no `--version`), else `--version`, else
/// a `version` subcommand (the Go tools' convention: `gopls version`).
fn version_of(program: &Path) -> Result<String, String> {
    if let Some(version) = node_package_version(program) {
        return Ok(version);
    }
    version_with(program, "--version")
        .or_else(|first_error| version_with(program, "version").map_err(|_| first_error))
}

fn version_with(program: &Path, argument: &str) -> Result<String, String> {
    let mut command = Command::new(program);
    command
        .arg(argument)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = GroupChild::spawn(&mut command).map_err(|e| e.to_string())?;
    let stdout = child.child_mut().stdout.take();
    let stderr = child.child_mut().stderr.take();
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(pipe) = pipe {
                let _ = pipe.take(16 * 1024).read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(stdout.map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(stderr.map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = match child.wait_timeout(VERSION_TIMEOUT) {
        Ok(Some(status)) => status,
        _ => {
            child.kill();
            return Err(format!("`{argument}` did not finish"));
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let first = |text: &str| {
        text.lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    };
    if status.success() {
        Ok(first(&stdout)
            .or_else(|| first(&stderr))
            .unwrap_or_else(|| "version unknown".into()))
    } else {
        Err(first(&stderr)
            .or_else(|| first(&stdout))
            .unwrap_or_else(|| status.to_string()))
    }
}

/// For a script inside an npm package: that package's version.
fn node_package_version(program: &Path) -> Option<String> {
    let real = program.canonicalize().ok()?;
    let is_script = real
        .extension()
        .is_some_and(|e| e == "js" || e == "mjs" || e == "cjs");
    if !is_script {
        return None;
    }
    let mut dir = real.parent();
    for _ in 0..4 {
        let current = dir?;
        if let Ok(Some(text)) =
            fsread::read_text(&current.join("package.json"), limits::CONFIG, Links::Follow)
            && let Ok(package) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(version) = package.get("version").and_then(|v| v.as_str())
        {
            let name = package.get("name").and_then(|n| n.as_str()).unwrap_or("");
            return Some(format!("{name} {version}").trim().to_string());
        }
        dir = current.parent();
    }
    None
}
