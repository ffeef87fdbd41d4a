//! `ralph-hooks install --harness codex|gemini|cursor|copilot` (with
//! `--uninstall`), and the harness section of `ralph-hooks doctor`: the
//! hook configuration of another agent harness, in the harness's own file
//! and format, running the same binaries with `--harness <name>` so that
//! they read its payloads and answer in its words ([`crate::harness`]).
//!
//! | harness | file | events |
//! |---|---|---|
//! | Codex CLI | `.codex/hooks.json` | SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStop |
//! | Gemini CLI | `.gemini/settings.json` (`hooks`) | SessionStart, BeforeAgent, BeforeTool, AfterTool, AfterAgent |
//! | Cursor | `.cursor/hooks.json` (`version: 1`) | sessionStart, beforeSubmitPrompt, preToolUse, postToolUse, stop (`loop_limit`) |
//! | Copilot CLI | `.github/hooks/ralph-hooks.json` | sessionStart, userPromptSubmitted, preToolUse, postToolUse, agentStop |
//!
//! A shared file is merged as `install` merges `.claude/settings.json`:
//! our handlers (recognised by their binary's file name) are replaced,
//! everything else stays. The loop and task commands (`ralph-hooks loop
//! …`, `ralph-hooks task …`) are the same under every harness: the state
//! is in `<project>/.claude/orchestrator` whichever agent runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

use super::install::{binary_dir, is_ours, program_of, shell_quote};
use crate::harness::{EVENT_ARG, HARNESS_ARG, Harness};
use crate::hook::ctx::Ctx;

/// One hook in a harness's configuration.
pub struct HarnessHook {
    /// The harness's name for the event.
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub binary: &'static str,
    /// Seconds.
    pub timeout: u64,
}

const fn hook(
    event: &'static str,
    matcher: Option<&'static str>,
    binary: &'static str,
    timeout: u64,
) -> HarnessHook {
    HarnessHook {
        event,
        matcher,
        binary,
        timeout,
    }
}

const START: &str = "ralph-session-start";
const PROMPT: &str = "ralph-user-prompt-submit";
const GUARD: &str = "ralph-pre-tool-stop-guard";
const POST: &str = "ralph-post-tool-lsp-diagnostic";
const STOP: &str = "ralph-stop-loop-controller";

const CODEX: &[HarnessHook] = &[
    hook("SessionStart", None, START, 30),
    hook("UserPromptSubmit", None, PROMPT, 10),
    hook("PreToolUse", Some("Bash|apply_patch|mcp__.*"), GUARD, 15),
    hook("PostToolUse", Some("Bash|apply_patch"), POST, 60),
    hook("Stop", None, STOP, 1800),
    hook("SubagentStop", None, STOP, 60),
];
const GEMINI: &[HarnessHook] = &[
    hook("SessionStart", None, START, 30),
    hook("BeforeAgent", None, PROMPT, 10),
    hook(
        "BeforeTool",
        Some("run_shell_command|write_file|replace|mcp_.*"),
        GUARD,
        15,
    ),
    hook(
        "AfterTool",
        Some("run_shell_command|write_file|replace"),
        POST,
        60,
    ),
    hook("AfterAgent", None, STOP, 1800),
];
const CURSOR: &[HarnessHook] = &[
    hook("sessionStart", None, START, 30),
    hook("beforeSubmitPrompt", None, PROMPT, 10),
    hook("preToolUse", None, GUARD, 15),
    hook("postToolUse", None, POST, 60),
    hook("postToolUseFailure", None, POST, 60),
    hook("stop", None, STOP, 1800),
];
const COPILOT: &[HarnessHook] = &[
    hook("sessionStart", None, START, 30),
    hook("userPromptSubmitted", None, PROMPT, 10),
    hook("preToolUse", None, GUARD, 15),
    hook("postToolUse", None, POST, 60),
    hook("postToolUseFailure", None, POST, 60),
    hook("agentStop", None, STOP, 1800),
    hook("subagentStop", None, STOP, 60),
];

/// What each harness gets.
pub fn hooks(harness: Harness) -> &'static [HarnessHook] {
    match harness {
        Harness::Claude => &[],
        Harness::Codex => CODEX,
        Harness::Gemini => GEMINI,
        Harness::Cursor => CURSOR,
        Harness::Copilot => COPILOT,
    }
}

/// The harness's configuration file, relative to the project.
pub fn config_path(harness: Harness) -> &'static str {
    match harness {
        Harness::Claude => ".claude/settings.json",
        Harness::Codex => ".codex/hooks.json",
        Harness::Gemini => ".gemini/settings.json",
        Harness::Cursor => ".cursor/hooks.json",
        Harness::Copilot => ".github/hooks/ralph-hooks.json",
    }
}

/// The command line of `hook` for `harness`, the binary at `program`.
pub fn command(harness: Harness, hook: &HarnessHook, program: &str) -> String {
    let mut line = format!("{program} {HARNESS_ARG} {}", harness.name());
    if harness == Harness::Copilot {
        line.push_str(&format!(" {EVENT_ARG} {}", hook.event));
    }
    line
}

/// One handler entry in the harness's format.
fn handler(harness: Harness, hook: &HarnessHook, bin_dir: &Path) -> Value {
    let program = shell_quote(&bin_dir.join(hook.binary));
    let line = command(harness, hook, &program);
    match harness {
        Harness::Gemini => json!({
            "type": "command",
            "name": hook.binary,
            "command": line,
            // Milliseconds in Gemini CLI.
            "timeout": hook.timeout * 1000,
        }),
        Harness::Cursor => {
            let mut entry = json!({"command": line, "timeout": hook.timeout});
            if hook.event == "stop" {
                entry["loop_limit"] = json!(crate::harness::cursor::LOOP_LIMIT);
            }
            entry
        }
        Harness::Copilot => json!({
            "type": "command",
            "bash": line,
            "timeoutSec": hook.timeout,
        }),
        Harness::Codex | Harness::Claude => json!({
            "type": "command",
            "command": line,
            "timeout": hook.timeout,
        }),
    }
}

/// Whether an entry of any harness's format runs one of our binaries
/// (Copilot names the command `bash`).
fn is_our_entry(entry: &Value) -> bool {
    if is_ours(entry) {
        return true;
    }
    entry
        .get("bash")
        .and_then(Value::as_str)
        .is_some_and(|bash| is_ours(&json!({ "command": bash })))
}

/// Removes our entries from `hooks` (an object of event → list), in both
/// layouts (Claude Code's matcher groups, Cursor's flat list); events left
/// empty go. Returns how many were removed.
fn remove_ours(hooks: &mut Map<String, Value>) -> usize {
    let mut removed = 0;
    for groups in hooks.values_mut() {
        let Some(list) = groups.as_array_mut() else {
            continue;
        };
        let before = list.len();
        list.retain(|entry| !is_our_entry(entry));
        removed += before - list.len();
        for group in list.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let before = inner.len();
                inner.retain(|entry| !is_our_entry(entry));
                removed += before - inner.len();
            }
        }
        list.retain(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|inner| !inner.is_empty())
        });
    }
    hooks.retain(|_, groups| groups.as_array().is_none_or(|list| !list.is_empty()));
    removed
}

/// Adds our entries for `harness` to `hooks`.
fn add_ours(harness: Harness, table: &mut Map<String, Value>, bin_dir: &Path) {
    for hook in hooks(harness) {
        let entry = handler(harness, hook, bin_dir);
        let list = table
            .entry(hook.event.to_string())
            .or_insert_with(|| json!([]));
        let Some(list) = list.as_array_mut() else {
            continue;
        };
        match harness {
            // Flat lists of handlers.
            Harness::Cursor | Harness::Copilot => list.push(entry),
            // Matcher groups, as in Claude Code.
            _ => {
                let mut group = json!({"hooks": [entry]});
                if let Some(matcher) = hook.matcher {
                    group["matcher"] = json!(matcher);
                }
                list.push(group);
            }
        }
    }
}

/// The configuration with our hooks for `harness` merged in (or, with
/// `uninstall`, taken out), and how many of ours were there before.
pub fn merged(
    harness: Harness,
    mut config: Value,
    bin_dir: &Path,
    uninstall: bool,
) -> (Value, usize) {
    if !config.is_object() {
        config = json!({});
    }
    let object = config.as_object_mut().expect("an object");
    if matches!(harness, Harness::Cursor | Harness::Copilot) && !object.contains_key("version") {
        object.insert("version".into(), json!(1));
    }
    let hooks = object
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut hooks = hooks;
    let removed = remove_ours(&mut hooks);
    if !uninstall {
        add_ours(harness, &mut hooks, bin_dir);
    }
    object.insert("hooks".into(), Value::Object(hooks));
    (config, removed)
}

fn write_config(path: &Path, config: &Value) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let old = std::fs::read_to_string(path).ok();
    let text = updated_text(old.as_deref(), config)?;
    if old.as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    // A linked file stays a link (its target gets the text) and keeps its
    // mode (attack finding H-7).
    super::settings_file::write(path, text.as_bytes())
}

/// The file's new text: the old text edited where `config` differs (the
/// user's indentation, spacing and key order stay, so an install and an
/// uninstall give the bytes back), or `config` pretty-printed for a new
/// file.
fn updated_text(old: Option<&str>, config: &Value) -> anyhow::Result<String> {
    if let Some(text) = old.and_then(|old| crate::util::json_splice::rewrite(old, config)) {
        return Ok(text);
    }
    let mut text = serde_json::to_string_pretty(config).context("cannot encode the hooks")?;
    text.push('\n');
    Ok(text)
}

/// Refuses a configuration whose `hooks` (or one of the events we register)
/// is not in the shape the harness reads: merging into it would drop what
/// is there or register nothing while saying it did.
fn check_shape(harness: Harness, config: &Value, path: &Path) -> anyhow::Result<()> {
    let Some(hooks) = config.get("hooks") else {
        return Ok(());
    };
    let Some(hooks) = hooks.as_object() else {
        bail!(
            "{}: \"hooks\" is not an object of events, which {} reads; fix it by hand first, nothing was changed",
            path.display(),
            harness.name()
        );
    };
    for hook in self::hooks(harness) {
        if let Some(entries) = hooks.get(hook.event)
            && !entries
                .as_array()
                .is_some_and(|list| list.iter().all(Value::is_object))
        {
            bail!(
                "{}: \"hooks\".\"{}\" is not a list of handler objects (the harness would refuse the whole file); fix it by hand first, nothing was changed",
                path.display(),
                hook.event
            );
        }
    }
    Ok(())
}

/// A word on what the harness needs besides the file.
fn note(harness: Harness) -> &'static str {
    match harness {
        Harness::Codex => {
            "Codex runs project hooks once you trust them: review them with /hooks in Codex (or run `codex exec --dangerously-bypass-hook-trust` where the hooks are vetted). Codex has no cap on Stop blocks in a row: the loop's --max-iterations is the bound."
        }
        Harness::Gemini => {
            "Gemini CLI reads hooks from the project's .gemini/settings.json; AfterAgent retries the turn with the loop's follow-up."
        }
        Harness::Cursor => {
            "Cursor sends at most loop_limit follow-ups in a row (50 here). If Cursor's third-party hooks are on, the .claude/settings.json hooks step aside for Cursor's payloads, so nothing is answered twice."
        }
        Harness::Copilot => {
            "Copilot CLI reads every .json file in .github/hooks; agentStop's block queues the loop's follow-up as the next prompt."
        }
        Harness::Claude => "",
    }
}

/// `ralph-hooks install --harness <name> [--uninstall]`.
pub fn run(ctx: &Ctx, name: &str, uninstall: bool) -> anyhow::Result<ExitCode> {
    let harness = match Harness::parse(name) {
        Some(Harness::Claude) | None => bail!(
            "unknown harness {name:?}: one of codex, gemini, cursor, copilot (Claude Code is `ralph-hooks install` without --harness)"
        ),
        Some(harness) => harness,
    };
    let project = &ctx.project_root;
    if !project.is_dir() {
        bail!("project directory {} does not exist", project.display());
    }
    let path = project.join(config_path(harness));
    let config = super::install::read_settings(&path)?;
    check_shape(harness, &config, &path)?;
    if uninstall {
        let (config, removed) = merged(harness, config, Path::new(""), true);
        // Nothing of ours: the file stays as it is, byte for byte (attack
        // finding H-13: a never-installed Gemini file got `"hooks": {}`).
        if removed == 0 {
            println!(
                "No ralph-hooks handler in {}; nothing was changed.",
                path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        // What the install makes of nothing: a file that is only that was
        // the install's, and goes with its folder when that is left empty.
        let made_by_install = merged(harness, json!({}), Path::new(""), true).0;
        // A link is the user's (shared from elsewhere): its target is
        // edited, never removed.
        let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if path.is_file() && !linked && config == made_by_install {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            // Folders left empty, up to the project (`.github/hooks`, then
            // `.github`); a folder with anything in it stays.
            for folder in path.ancestors().skip(1) {
                if folder == project.as_path() || std::fs::remove_dir(folder).is_err() {
                    break;
                }
            }
        } else if path.is_file() {
            write_config(&path, &config)?;
        }
        println!(
            "Removed {removed} ralph-hooks handler(s) from {}. Other settings are untouched.",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let bin_dir = binary_dir()?;
    let (config, _) = merged(harness, config, &bin_dir, false);
    write_config(&path, &config)?;
    if ctx.store().ignore_in_git()? {
        println!(
            "The hooks' state in {} is ignored by git.",
            ctx.state_root.display()
        );
    }
    println!(
        "Registered ralph-hooks for {} in {} (binaries in {}).",
        harness.name(),
        path.display(),
        bin_dir.display()
    );
    for hook in hooks(harness) {
        println!(
            "  {:<20} {:<40} {}",
            hook.event,
            hook.matcher.unwrap_or("*"),
            command(harness, hook, hook.binary)
        );
    }
    println!("{}", note(harness));
    // Registered, but switched off in the harness's own settings (attack
    // findings H-5, H-8): said now, not only by doctor.
    let written = super::install::read_settings(&path).unwrap_or_default();
    for line in switched_off(harness, project, &written) {
        println!("Warning: {line}. Turn the hooks back on there, or they never run.");
    }
    println!("Start a loop with: ralph-hooks loop start \"<goal>\" --check \"<command>\"");
    Ok(ExitCode::SUCCESS)
}

/// Our command lines found in `config`, by event.
fn found_commands(config: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let Some(hooks) = config.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, list) in hooks {
        for entry in list.as_array().into_iter().flatten() {
            let inner: Vec<&Value> = match entry.get("hooks").and_then(Value::as_array) {
                Some(inner) => inner.iter().collect(),
                None => vec![entry],
            };
            for handler in inner.into_iter().filter(|h| is_our_entry(h)) {
                let line = handler
                    .get("command")
                    .or_else(|| handler.get("bash"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                found.push((event.clone(), line.to_string()));
            }
        }
    }
    found
}

/// The harness section of `ralph-hooks doctor`: for each harness whose
/// file has our hooks, whether every event is there and every binary
/// exists. Returns the number of problems.
pub fn doctor_section(project: &Path) -> usize {
    let mut problems = 0;
    println!("\nother agent harnesses:");
    let mut any = false;
    for harness in Harness::ALL.into_iter().skip(1) {
        let path: PathBuf = project.join(config_path(harness));
        let Ok(config) = super::install::read_settings(&path) else {
            problems += 1;
            println!(
                "  BROKEN {:<8} {} is not valid JSON",
                harness.name(),
                path.display()
            );
            continue;
        };
        let found = found_commands(&config);
        if found.is_empty() {
            continue;
        }
        any = true;
        let missing: Vec<&str> = hooks(harness)
            .iter()
            .filter(|hook| !found.iter().any(|(event, _)| event == hook.event))
            .map(|hook| hook.event)
            .collect();
        let broken: Vec<String> = found
            .iter()
            .map(|(_, line)| program_of(line))
            .filter(|program| !Path::new(program).is_file() && which::which(program).is_err())
            .collect();
        let wrong_harness = found
            .iter()
            .any(|(_, line)| !line.contains(&format!("{HARNESS_ARG} {}", harness.name())));
        let mut other: Vec<String> = hooks(harness)
            .iter()
            .filter(|hook| found.iter().any(|(event, _)| event == hook.event))
            .filter(|hook| {
                // The event's binary, with the arguments the install wrote.
                let arguments = command(harness, hook, "");
                !found.iter().any(|(event, line)| {
                    event == hook.event
                        && program_of(line).rsplit('/').next() == Some(hook.binary)
                        && line.ends_with(arguments.as_str())
                })
            })
            .map(|hook| format!("{} does not run {} as installed", hook.event, hook.binary))
            .collect();
        let off = switched_off(harness, project, &config);
        let reinstall_fixes = !missing.is_empty() || !broken.is_empty() || !other.is_empty();
        other.extend(off.iter().cloned());
        let wrong_harness = wrong_harness && other.is_empty();
        if missing.is_empty() && broken.is_empty() && !wrong_harness && other.is_empty() {
            println!(
                "  ok    {:<8} {} ({} hooks)",
                harness.name(),
                path.display(),
                found.len()
            );
        } else {
            problems += 1;
            // A switch in the harness's own settings is the user's to
            // turn back (attack finding H-8): reinstalling does not.
            let advice = match (reinstall_fixes || wrong_harness, off.is_empty()) {
                (true, true) => format!("run `ralph-hooks install --harness {}`", harness.name()),
                (true, false) => format!(
                    "run `ralph-hooks install --harness {}` and turn the hooks back on where named",
                    harness.name()
                ),
                (false, _) => "turn the hooks back on where named".to_string(),
            };
            println!(
                "  PROBLEM {:<8} {}: {}{}{} — {advice}",
                harness.name(),
                path.display(),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!("missing {}; ", missing.join(", "))
                },
                if broken.is_empty() {
                    String::new()
                } else {
                    format!("no such binary {}; ", broken.join(", "))
                },
                if wrong_harness {
                    "a command without its --harness".to_string()
                } else {
                    other.join("; ")
                },
            );
        }
    }
    if !any && problems == 0 {
        println!("  none (`ralph-hooks install --harness codex|gemini|cursor|copilot`)");
    }
    problems
}

/// What switches the harness's hooks off although the file lists them:
/// Codex's `[features] hooks = false` (the project's or the user's
/// `config.toml`), Gemini's `hooksConfig` (`enabled: false`, our command
/// in `disabled`), a Cursor `stop` with `loop_limit` 0.
fn switched_off(harness: Harness, project: &Path, config: &Value) -> Vec<String> {
    let mut found = Vec::new();
    match harness {
        Harness::Codex => {
            let home = std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".codex"))
                });
            let files = std::iter::once(project.join(".codex/config.toml"))
                .chain(home.map(|home| home.join("config.toml")));
            for file in files {
                if std::fs::read_to_string(&file).is_ok_and(|text| hooks_feature_off(&text)) {
                    found.push(format!(
                        "[features] hooks = false in {}: Codex runs no hook",
                        file.display()
                    ));
                }
            }
        }
        Harness::Gemini => {
            // `hooksConfig.enabled: false` runs no hook at all; a command
            // listed in `hooksConfig.disabled` is skipped (Gemini CLI 0.61).
            let user = std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".gemini/settings.json"));
            let settings =
                std::iter::once((project.join(".gemini/settings.json"), Some(config.clone())))
                    .chain(user.map(|file| {
                        let read = super::install::read_settings(&file).ok();
                        (file, read)
                    }));
            for (file, settings) in settings {
                let Some(settings) = settings else { continue };
                if settings.pointer("/hooksConfig/enabled") == Some(&Value::Bool(false)) {
                    found.push(format!(
                        "hooksConfig.enabled is false in {}: Gemini CLI runs no hook",
                        file.display()
                    ));
                }
                let disabled = settings
                    .pointer("/hooksConfig/disabled")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .filter(|name| name.contains("ralph-"));
                for name in disabled {
                    found.push(format!(
                        "hooksConfig.disabled in {} lists {name}: Gemini CLI skips it",
                        file.display()
                    ));
                }
            }
        }
        Harness::Cursor => {
            let stops = config
                .pointer("/hooks/stop")
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for stop in stops.filter(|entry| is_our_entry(entry)) {
                if stop.get("loop_limit").and_then(Value::as_u64) == Some(0) {
                    found.push("stop has loop_limit 0: no follow-up is ever sent".to_string());
                }
            }
        }
        _ => {}
    }
    found
}

/// Whether a Codex `config.toml` turns hooks off in its `[features]` table.
fn hooks_feature_off(text: &str) -> bool {
    let mut in_features = false;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            in_features = line == "[features]";
            continue;
        }
        let flat: String = line
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
            .collect();
        let off = |key: &str| flat == format!("{key}=false");
        if in_features && (off("hooks") || off("codex_hooks")) {
            return true;
        }
        if off("features.hooks") || off("features.codex_hooks") {
            return true;
        }
        // An inline table: `features = { hooks = false }`.
        if let Some(table) = flat.strip_prefix("features={")
            && table
                .trim_end_matches('}')
                .split(',')
                .any(|pair| pair == "hooks=false" || pair == "codex_hooks=false")
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_hooks_feature_switch() {
        assert!(hooks_feature_off("[features]\ncodex_hooks = false\n"));
        assert!(hooks_feature_off("features = { hooks = false }\n"));
        assert!(hooks_feature_off("[features]\n\"hooks\" = false\n"));
        assert!(hooks_feature_off("[features]\nhooks = false\n"));
        assert!(hooks_feature_off("model = 'x'\nfeatures.hooks=false\n"));
        assert!(!hooks_feature_off(
            "[features]\nhooks = true\n[other]\nhooks = false\n"
        ));
    }

    #[test]
    fn install_merges_and_uninstall_takes_exactly_ours_out() {
        let theirs = json!({"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/usr/bin/their-hook"}]}]},"model":"x"});
        let bin = Path::new("/opt/rh");
        let (installed, removed) = merged(Harness::Codex, theirs.clone(), bin, false);
        assert_eq!(removed, 0);
        let again = merged(Harness::Codex, installed.clone(), bin, false).0;
        assert_eq!(again, installed, "installing twice changes nothing");
        assert_eq!(
            installed["hooks"]["Stop"][1]["hooks"][0]["command"],
            "/opt/rh/ralph-stop-loop-controller --harness codex"
        );
        let (back, removed) = merged(Harness::Codex, installed, bin, true);
        assert_eq!(removed, hooks(Harness::Codex).len());
        assert_eq!(back, theirs);
    }

    #[test]
    fn install_then_uninstall_gives_the_users_bytes_back() {
        let bin = Path::new("/opt/bin");
        let theirs = "{\n\t\"hooks\": {\n\t\t\"Stop\": [ { \"hooks\": [ { \"type\": \"command\", \"command\": \"mine-stop.sh\" } ] } ]\n\t}\n}\n";
        let config: Value = serde_json::from_str(theirs).unwrap();
        let (installed, _) = merged(Harness::Codex, config, bin, false);
        let installed_text = updated_text(Some(theirs), &installed).unwrap();
        assert!(installed_text.contains("ralph-stop-loop-controller"));
        assert!(
            installed_text.starts_with("{\n\t\"hooks\""),
            "{installed_text}"
        );
        let parsed: Value = serde_json::from_str(&installed_text).unwrap();
        let (back, removed) = merged(Harness::Codex, parsed, bin, true);
        assert!(removed > 0);
        assert_eq!(updated_text(Some(&installed_text), &back).unwrap(), theirs);
    }

    #[test]
    fn a_config_in_a_shape_the_harness_does_not_read_is_refused() {
        let path = Path::new(".codex/hooks.json");
        let stop_object = json!({"hooks": {"Stop": {"command": "mine.sh"}}});
        assert!(check_shape(Harness::Codex, &stop_object, path).is_err());
        let hooks_text = json!({"hooks": "see ~/.codex/hooks.json"});
        assert!(check_shape(Harness::Codex, &hooks_text, path).is_err());
        assert!(check_shape(Harness::Codex, &json!({"hooks": {"Stop": []}}), path).is_ok());
        assert!(check_shape(Harness::Codex, &json!({"hooks": {"Stop": [42]}}), path).is_err());
        assert!(check_shape(Harness::Codex, &json!({"other": 1}), path).is_ok());
    }

    #[test]
    fn cursor_and_copilot_formats() {
        let bin = Path::new("/opt/rh");
        let cursor = merged(Harness::Cursor, json!({}), bin, false).0;
        assert_eq!(cursor["version"], 1);
        assert_eq!(cursor["hooks"]["stop"][0]["loop_limit"], 50);
        let copilot = merged(Harness::Copilot, json!({}), bin, false).0;
        assert_eq!(
            copilot["hooks"]["agentStop"][0]["bash"],
            "/opt/rh/ralph-stop-loop-controller --harness copilot --event agentStop"
        );
        let (empty, removed) = merged(Harness::Copilot, copilot, bin, true);
        assert_eq!(removed, hooks(Harness::Copilot).len());
        assert_eq!(empty["hooks"], json!({}));
    }
}
