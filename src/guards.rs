//! PreToolUse guard rules for `ralph-pre-tool-stop-guard`. Each rule denies a
//! call with a reason that says what to do instead, or stays silent; none
//! ever allows (the user's own permission prompts stay in charge).
//!
//! | rule (`guard` key in `.claude/ralph-hooks.json`) | tools | denies |
//! | --- | --- | --- |
//! | `task_complete` (true) | Bash | `ralph-hooks task complete` without `--force` while steps are open, counting the step actions the same command runs first ([`chain`]) |
//! | `completion_tools` (`["mcp__*__task_complete"]`) | `mcp__…` | the same through an MCP tool, glob-matched by name |
//! | `loop_commands` (push/publish globs) | Bash | a matching command while a Ralph loop is RUNNING |
//! | `state_files` (true) | Write, Edit, MultiEdit | writing ralph-hooks' own state files |
//! | `placeholders` (true) | Agent, Task | a sub-agent prompt with `{{UPPER_SNAKE}}` placeholders left |
//!
//! This runs before every matching tool call, so a tool no rule looks at
//! returns before the config is even read, and globs are compiled once per
//! call and only when a rule needs them. A rule that cannot be evaluated (its
//! config is invalid, its state unreadable) lets the call through and says
//! why on stderr and to the user.
//!
//! Uses [`crate::tasks`], [`crate::ralph`] and [`crate::orchestrator`] (what
//! is open, what runs) and the layers below; used by the PreToolUse handler.

pub mod chain;
pub mod shell;

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hook::config::Config;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{HookOutput, ToolInput};
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::state::Store;
use crate::tasks;

const NAME: &str = "ralph-pre-tool-stop-guard";

/// Commands a running loop may not run by default: they publish work that
/// a person should look at first (see prior art, claude-code PR #78371).
pub const DEFAULT_LOOP_COMMANDS: &[&str] = &[
    "git push*",
    "gh pr create*",
    "gh pr merge*",
    "npm publish*",
    "cargo publish*",
];

pub const DEFAULT_COMPLETION_TOOLS: &[&str] = &["mcp__*__task_complete"];

/// State-root entries only ralph-hooks writes, with what to do instead.
const STATE_FILES: &[(&str, &str)] = &[
    (
        "loop.json",
        "the Ralph loop's state changes only through the CLI: see it with `ralph-hooks loop status`; end the loop (only if the user asks) with `ralph-hooks loop cancel`",
    ),
    (
        "loops",
        "finished loops are an archive kept by ralph-hooks: read them, do not write them",
    ),
    (
        "tasks",
        "task files change only through the CLI: `ralph-hooks task step complete|skip|start <id>`, `ralph-hooks task step add \"…\"`, `ralph-hooks task progress \"…\"`; see the task with `ralph-hooks task status`",
    ),
    (
        "diagnostics.json",
        "the diagnostics baseline is written by the post-tool hook after each edit: fix the code and it follows",
    ),
    (
        "events.jsonl",
        "the event log is appended by the hooks and the CLI: read it, do not write it",
    ),
    (
        crate::tasks::continuation::STATE_FILE,
        "the continuation counters belong to the Stop hook: finish or skip steps (`ralph-hooks task step …`), or pause the task with `ralph-hooks task block --note \"why\"`",
    ),
    (
        ".locks",
        "lock files coordinate the hooks: never write them",
    ),
];

/// One rule's setting, or why it cannot be read.
type Setting<T> = Result<T, String>;

#[derive(Debug, Clone)]
pub struct GuardConfig {
    pub task_complete: Setting<bool>,
    pub completion_tools: Setting<Vec<String>>,
    pub loop_commands: Setting<Vec<String>>,
    pub state_files: Setting<bool>,
    pub placeholders: Setting<bool>,
}

impl GuardConfig {
    /// Reads the `guard` section. Each key is read on its own, so a mistake
    /// in one switches off only that rule.
    pub fn load(project_root: &Path) -> GuardConfig {
        let config = match Config::load(project_root) {
            Ok(config) => config,
            Err(error) => return GuardConfig::broken(format!("{error:#}")),
        };
        let section = match config.raw("guard") {
            None => &Value::Null,
            Some(value @ Value::Object(_)) => value,
            Some(_) => {
                return GuardConfig::broken(format!(
                    "section \"guard\" of {} must be an object",
                    Config::file_path(project_root).display()
                ));
            }
        };
        if let Some(object) = section.as_object() {
            for key in object.keys() {
                if !matches!(
                    key.as_str(),
                    "task_complete"
                        | "completion_tools"
                        | "loop_commands"
                        | "state_files"
                        | "placeholders"
                ) {
                    eprintln!(
                        "{NAME}: warning: unknown key guard.{key} in {} (known: task_complete, completion_tools, loop_commands, state_files, placeholders)",
                        Config::file_path(project_root).display()
                    );
                }
            }
        }
        let strings = |defaults: &[&str]| defaults.iter().map(|s| s.to_string()).collect();
        GuardConfig {
            task_complete: setting(section, "task_complete", true),
            completion_tools: setting(
                section,
                "completion_tools",
                strings(DEFAULT_COMPLETION_TOOLS),
            ),
            loop_commands: setting(section, "loop_commands", strings(DEFAULT_LOOP_COMMANDS)),
            state_files: setting(section, "state_files", true),
            placeholders: setting(section, "placeholders", true),
        }
    }

    fn broken(why: String) -> GuardConfig {
        GuardConfig {
            task_complete: Err(why.clone()),
            completion_tools: Err(why.clone()),
            loop_commands: Err(why.clone()),
            state_files: Err(why.clone()),
            placeholders: Err(why),
        }
    }
}

fn setting<T: DeserializeOwned>(section: &Value, key: &str, default: T) -> Setting<T> {
    match section.get(key) {
        None => Ok(default),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|error| format!("guard.{key} is invalid ({error})")),
    }
}

/// The rules that look at a tool, by name. Anything else returns at once.
enum ToolKind {
    Bash,
    FileWrite,
    Agent,
    Mcp,
}

fn kind_of(tool_name: &str) -> Option<ToolKind> {
    Some(match tool_name {
        "Bash" => ToolKind::Bash,
        "Write" | "Edit" | "MultiEdit" => ToolKind::FileWrite,
        "Agent" | "Task" => ToolKind::Agent,
        name if name.starts_with("mcp__") => ToolKind::Mcp,
        _ => return None,
    })
}

/// Runs the rules that apply to this tool call.
pub fn check(ctx: &Ctx, tool: &ToolInput) -> Option<HookOutput> {
    let kind = kind_of(&tool.tool_name)?;
    let config = GuardConfig::load(&ctx.project_root);
    let mut skipped: Vec<String> = Vec::new();
    let mut outcome = |rule: &str, result: anyhow::Result<Option<HookOutput>>| match result {
        Ok(output) => output,
        Err(error) => {
            let line = format!("rule {rule} not evaluated, call let through: {error:#}");
            eprintln!("{NAME}: {line}");
            skipped.push(line);
            None
        }
    };
    let denied = match kind {
        ToolKind::Bash => {
            let command = tool.input_str("command").unwrap_or_default();
            outcome(
                "task_complete",
                enabled(&config.task_complete).and_then(|on| {
                    if on {
                        bash_task_complete(ctx, command)
                    } else {
                        Ok(None)
                    }
                }),
            )
            .or_else(|| {
                outcome(
                    "loop_commands",
                    setting_result(&config.loop_commands)
                        .and_then(|globs| loop_command(ctx, command, &globs)),
                )
            })
        }
        ToolKind::FileWrite => outcome(
            "state_files",
            enabled(&config.state_files).map(|on| {
                let path = tool.input_str("file_path").unwrap_or_default();
                if on { state_file(ctx, path) } else { None }
            }),
        ),
        ToolKind::Agent => outcome(
            "placeholders",
            enabled(&config.placeholders).map(|on| {
                if on {
                    placeholders(tool.input_str("prompt").unwrap_or_default())
                } else {
                    None
                }
            }),
        ),
        ToolKind::Mcp => outcome(
            "completion_tools",
            setting_result(&config.completion_tools)
                .and_then(|globs| mcp_completion(ctx, tool, &globs)),
        ),
    };
    if denied.is_some() {
        return denied;
    }
    if skipped.is_empty() {
        return None;
    }
    Some(HookOutput::silent().with_system_message(format!(
        "ralph-hooks guard: {} (fix .claude/ralph-hooks.json)",
        skipped.join("; ")
    )))
}

fn enabled(setting: &Setting<bool>) -> anyhow::Result<bool> {
    setting.clone().map_err(|why| anyhow::anyhow!(why))
}

fn setting_result(setting: &Setting<Vec<String>>) -> anyhow::Result<Vec<String>> {
    setting.clone().map_err(|why| anyhow::anyhow!(why))
}

/// One GlobSet for all of a rule's patterns, compiled once for this call.
fn compile(patterns: &[String]) -> anyhow::Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern)
            .map_err(|error| anyhow::anyhow!("pattern {pattern:?} is not a glob: {error}"))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|error| anyhow::anyhow!("cannot compile the patterns: {error}"))
}

/// `ralph-hooks task complete` without `--force` while steps are open.
fn bash_task_complete(ctx: &Ctx, command: &str) -> anyhow::Result<Option<HookOutput>> {
    // Cheap first: almost no command mentions completing anything.
    if !command.contains("complete") {
        return Ok(None);
    }
    let mut this_project = false;
    for call in shell::task_complete_calls(command) {
        if call.force {
            continue;
        }
        let denied = match &call.project {
            Some(project) => match store_for_project(ctx, project) {
                Some(store) => deny_if_open(ctx, &store, false)?,
                None => deny_if_open(ctx, ctx.store(), true)?,
            },
            None => {
                this_project = true;
                None
            }
        };
        if denied.is_some() {
            return Ok(denied);
        }
    }
    if !this_project {
        return Ok(None);
    }
    // The steps the same command closes first count (issue 12).
    let Some(doc) = tasks::active(ctx.store())? else {
        return Ok(None);
    };
    let Some(denial) = chain::judge(command, &doc) else {
        return Ok(None);
    };
    tasks::log_stop_guard(ctx, &denial.doc_after, "pre_tool_use");
    Ok(Some(HookOutput::deny(denial.reason)))
}

/// The state of another project named by `--project` (relative to the cwd
/// the command runs in, which we take to be the project root); `None` when
/// it is this project.
fn store_for_project(ctx: &Ctx, project: &str) -> Option<Store> {
    let path = Path::new(project);
    let root = if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_root.join(path)
    };
    if lexical_normalize(&root) == lexical_normalize(&ctx.project_root) {
        return None;
    }
    Some(Store::new(root.join(".claude").join("orchestrator")))
}

/// Denies with the stop-guard message when the store's active task has open
/// steps; `ours` says whether the event goes into this project's log.
fn deny_if_open(ctx: &Ctx, store: &Store, ours: bool) -> anyhow::Result<Option<HookOutput>> {
    let Some(doc) = tasks::active(store)? else {
        return Ok(None);
    };
    let Some(message) = tasks::stop_guard_message(&doc) else {
        return Ok(None);
    };
    if ours {
        tasks::log_stop_guard(ctx, &doc, "pre_tool_use");
    }
    Ok(Some(HookOutput::deny(message)))
}

/// A configured MCP completion tool, called without a force flag.
fn mcp_completion(
    ctx: &Ctx,
    tool: &ToolInput,
    globs: &[String],
) -> anyhow::Result<Option<HookOutput>> {
    if globs.is_empty() {
        return Ok(None);
    }
    if !compile(globs)?.is_match(&tool.tool_name) {
        return Ok(None);
    }
    let forced = ["force", "force_complete"].iter().any(|key| {
        matches!(tool.tool_input.get(*key), Some(Value::Bool(true)))
            || matches!(tool.tool_input.get(*key), Some(Value::String(s)) if s == "true")
    });
    if forced {
        return Ok(None);
    }
    deny_if_open(ctx, ctx.store(), true)
}

/// Publishing commands while this session's Ralph loop runs unattended.
fn loop_command(ctx: &Ctx, command: &str, globs: &[String]) -> anyhow::Result<Option<HookOutput>> {
    if globs.is_empty() || command.trim().is_empty() {
        return Ok(None);
    }
    let store = ctx.store();
    if !store.exists(LOOP_FILE) {
        return Ok(None);
    }
    let Some(state) = store.read_json::<LoopState>(LOOP_FILE)? else {
        return Ok(None);
    };
    if !state.is_running() {
        return Ok(None);
    }
    if let (Some(owner), Some(session)) = (&state.session_id, &ctx.session_id)
        && owner != session
    {
        return Ok(None);
    }
    let set = compile(globs)?;
    let mut candidates: Vec<String> = vec![command.trim().to_string()];
    for words in shell::simple_commands(command) {
        let part = shell::command_part(&words);
        if !part.is_empty() {
            candidates.push(part.join(" "));
        }
    }
    let Some(hit) = candidates.iter().find(|text| set.is_match(text.as_str())) else {
        return Ok(None);
    };
    let pattern = globs
        .iter()
        .find(|glob| {
            Glob::new(glob)
                .map(|g| g.compile_matcher().is_match(hit.as_str()))
                .unwrap_or(false)
        })
        .cloned()
        .unwrap_or_default();
    Ok(Some(HookOutput::deny(format!(
        "Not while the Ralph loop runs: `{hit}` matches {pattern:?}, and loop {} ({:?}) is RUNNING unattended. Publishing is for the user to decide: finish the loop's work, then tell the user what is ready and the command to run. If the user asked for it explicitly, they can end the loop first with `ralph-hooks loop cancel` (rule guard.loop_commands in .claude/ralph-hooks.json).",
        state.id, state.goal
    ))))
}

/// Writing one of ralph-hooks' own state files.
fn state_file(ctx: &Ctx, file_path: &str) -> Option<HookOutput> {
    if file_path.is_empty() {
        return None;
    }
    let path = Path::new(file_path);
    let path = lexical_normalize(&if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_root.join(path)
    });
    let relative = relative_to_state_root(&ctx.state_root, &path)?;
    let first = relative.components().next()?;
    let Component::Normal(first) = first else {
        return None;
    };
    let first = first.to_string_lossy();
    let (_, instead) = STATE_FILES.iter().find(|(name, _)| *name == first)?;
    Some(HookOutput::deny(format!(
        "{} is a ralph-hooks state file and cannot be edited directly: {instead}.",
        ctx.display_path(&path)
    )))
}

/// `path` relative to the state root, comparing both as written and with
/// symlinks resolved (the project may be reached through a symlink).
fn relative_to_state_root(state_root: &Path, path: &Path) -> Option<PathBuf> {
    let mut roots = vec![lexical_normalize(state_root)];
    if let Ok(real) = state_root.canonicalize() {
        roots.push(real);
    }
    let mut paths = vec![lexical_normalize(path)];
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
        && let Ok(real_parent) = lexical_normalize(parent).canonicalize()
    {
        paths.push(real_parent.join(name));
    }
    for candidate in &paths {
        for root in &roots {
            if let Ok(relative) = candidate.strip_prefix(root)
                && !relative.as_os_str().is_empty()
            {
                return Some(relative.to_path_buf());
            }
        }
    }
    None
}

/// Removes `.` and resolves `..` without touching the disk.
fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `{{UPPER_SNAKE}}` placeholders still in a sub-agent prompt.
fn placeholders(prompt: &str) -> Option<HookOutput> {
    let found = find_placeholders(prompt);
    if found.is_empty() {
        return None;
    }
    Some(HookOutput::deny(format!(
        "The sub-agent prompt still has unfilled template placeholders: {}. Replace each with its real value (or render the template first: `ralph-hooks render <template> --context <file>`), then start the agent again.",
        found.join(", ")
    )))
}

/// Each distinct `{{NAME}}` (NAME = `[A-Z][A-Z0-9_]*`), in order of appearance.
pub fn find_placeholders(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let closed = after[name_len..].starts_with("}}");
        if closed && name.starts_with(|c: char| c.is_ascii_uppercase()) {
            let placeholder = format!("{{{{{name}}}}}");
            if !found.contains(&placeholder) {
                found.push(placeholder);
            }
            rest = &after[name_len + 2..];
        } else {
            rest = after;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_listed_once_in_order() {
        assert_eq!(
            find_placeholders(
                "Do {{TASK}} in {{FILE_1}}, see {{TASK}}; not {{lower}} or {{ X }} or {{}}"
            ),
            vec!["{{TASK}}", "{{FILE_1}}"]
        );
        assert!(find_placeholders("no braces here, {single}").is_empty());
    }

    #[test]
    fn state_paths_are_matched_after_normalising() {
        let root = Path::new("/p/.claude/orchestrator");
        assert_eq!(
            relative_to_state_root(root, Path::new("/p/.claude/x/../orchestrator/./loop.json")),
            Some(PathBuf::from("loop.json"))
        );
        assert_eq!(
            relative_to_state_root(root, Path::new("/p/src/loop.json")),
            None
        );
    }

    #[test]
    fn default_loop_globs_match_commands() {
        let globs: Vec<String> = DEFAULT_LOOP_COMMANDS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let set = compile(&globs).unwrap();
        assert!(set.is_match("git push origin main"));
        assert!(set.is_match("gh pr create --fill"));
        assert!(set.is_match("cargo publish"));
        assert!(!set.is_match("git status"));
    }
}
