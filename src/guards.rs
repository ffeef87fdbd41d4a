//! PreToolUse guard rules for `ralph-pre-tool-stop-guard`. Each rule denies a
//! call with a reason that says what to do instead, or stays silent; none
//! ever allows (the user's own permission prompts stay in charge).
//!
//! | rule (`guard` key in `.claude/ralph-hooks.json`) | tools | denies |
//! | --- | --- | --- |
//! | `task_complete` (true) | Bash | `ralph-hooks task complete` without `--force` while steps are open, counting the step actions the same command runs first ([`chain`]) |
//! | `completion_tools` (`["mcp__*__task_complete"]`) | `mcp__…` | the same through an MCP tool, glob-matched by name |
//! | `loop_commands` (push/publish globs) | Bash | a matching command while a Ralph loop is RUNNING |
//! | `state_files` (true) | Write, Edit, MultiEdit, NotebookEdit | writing ralph-hooks' own state files |
//! | `state_files` (true) | the same and Bash | while a loop or a task continuation is active: writing the hooks' own config (`.claude/ralph-hooks.json`, `.lsp.json`) or state, also through a link, `..`, a redirection, `tee`, `sed -i`, `cp`, `mv`, `rm`, `truncate` |
//! | `placeholders` (true) | Agent, Task | a sub-agent prompt with `{{UPPER_SNAKE}}` placeholders left |
//!
//! This runs before every matching tool call, so a tool no rule looks at
//! returns before the config is even read, and globs are compiled once per
//! call and only when a rule needs them. A config that cannot be parsed, or a
//! key of the wrong type, is replaced by the defaults (never "all rules
//! off": the agent could otherwise switch the guard off by breaking the
//! file), and the user is told once. A rule whose state is unreadable lets
//! the call through and says why on stderr and to the user.
//!
//! A hook guard is not a sandbox: it reads the command text, so an alias, a
//! script, a variable holding a command name or another language
//! (`python -c`) is invisible to it (README, "Reliability").
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
    (
        NOTICE_FILE,
        "this file remembers which config problem the guard already reported",
    ),
];

/// Remembers the last config problem reported, so it is said once.
const NOTICE_FILE: &str = "guard-notice.txt";

#[derive(Debug, Clone)]
pub struct GuardConfig {
    pub task_complete: bool,
    pub completion_tools: Vec<String>,
    pub loop_commands: Vec<String>,
    pub state_files: bool,
    pub placeholders: bool,
    /// What was wrong with the config and replaced by defaults.
    pub problems: Vec<String>,
}

impl Default for GuardConfig {
    fn default() -> GuardConfig {
        let strings = |defaults: &[&str]| defaults.iter().map(|s| s.to_string()).collect();
        GuardConfig {
            task_complete: true,
            completion_tools: strings(DEFAULT_COMPLETION_TOOLS),
            loop_commands: strings(DEFAULT_LOOP_COMMANDS),
            state_files: true,
            placeholders: true,
            problems: Vec::new(),
        }
    }
}

impl GuardConfig {
    /// Reads the `guard` section. A file that cannot be read or parsed, a
    /// section that is not an object, or a key of the wrong type each fall
    /// back to the defaults, recorded in `problems`.
    pub fn load(project_root: &Path) -> GuardConfig {
        let mut guard = GuardConfig::default();
        let config = match Config::load(project_root) {
            Ok(config) => config,
            Err(error) => {
                guard.problems.push(format!("{error:#}"));
                return guard;
            }
        };
        let section = match config.raw("guard") {
            None => return guard,
            Some(Value::Object(section)) => section,
            Some(_) => {
                guard.problems.push(format!(
                    "section \"guard\" of {} must be an object",
                    Config::file_path(project_root).display()
                ));
                return guard;
            }
        };
        for key in section.keys() {
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
        let problems = &mut guard.problems;
        setting(section, "task_complete", &mut guard.task_complete, problems);
        setting(
            section,
            "completion_tools",
            &mut guard.completion_tools,
            problems,
        );
        setting(section, "loop_commands", &mut guard.loop_commands, problems);
        setting(section, "state_files", &mut guard.state_files, problems);
        setting(section, "placeholders", &mut guard.placeholders, problems);
        guard
    }
}

/// Overwrites `value` with `section[key]` when it is present and valid.
fn setting<T: DeserializeOwned>(
    section: &serde_json::Map<String, Value>,
    key: &str,
    value: &mut T,
    problems: &mut Vec<String>,
) {
    if let Some(raw) = section.get(key) {
        match serde_json::from_value(raw.clone()) {
            Ok(parsed) => *value = parsed,
            Err(error) => problems.push(format!("guard.{key} is invalid ({error})")),
        }
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
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => ToolKind::FileWrite,
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
    let denied_by = std::cell::Cell::new("placeholders");
    let mut outcome = |rule: &'static str, result: anyhow::Result<Option<HookOutput>>| match result
    {
        Ok(output) => {
            if output.is_some() {
                denied_by.set(rule);
            }
            output
        }
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
            let task_complete = if config.task_complete {
                outcome("task_complete", bash_task_complete(ctx, command))
            } else {
                None
            };
            task_complete
                .or_else(|| {
                    outcome(
                        "loop_commands",
                        loop_command(ctx, command, &config.loop_commands),
                    )
                })
                .or_else(|| {
                    if config.state_files {
                        outcome("state_files", bash_protected_writes(ctx, command))
                    } else {
                        None
                    }
                })
        }
        ToolKind::FileWrite => {
            let path = tool
                .input_str("file_path")
                .or_else(|| tool.input_str("notebook_path"))
                .unwrap_or_default();
            if config.state_files {
                outcome("state_files", file_write(ctx, path))
            } else {
                None
            }
        }
        ToolKind::Agent => {
            if config.placeholders {
                placeholders(tool.input_str("prompt").unwrap_or_default())
            } else {
                None
            }
        }
        ToolKind::Mcp => outcome(
            "completion_tools",
            mcp_completion(ctx, tool, &config.completion_tools),
        ),
    };
    if let Some(output) = &denied {
        log_denial(ctx, tool, denied_by.get(), output);
    }
    let mut notes = skipped;
    if !config.problems.is_empty() {
        let problem = format!(
            "{} — the guard uses its default rules until it is fixed",
            config.problems.join("; ")
        );
        eprintln!("{NAME}: warning: {problem}");
        if first_time(ctx, &problem) {
            notes.push(problem);
        }
    }
    if notes.is_empty() {
        return denied;
    }
    let message = format!("ralph-hooks guard: {}", notes.join("; "));
    Some(match denied {
        Some(denied) => denied.with_system_message(message),
        None => HookOutput::silent().with_system_message(message),
    })
}

/// Records a denial in `events.jsonl` (`guard_event` / `guard_denied`): the
/// rule, the tool and the first line of the reason. The answer is already
/// decided; a log that cannot be written only costs a warning.
fn log_denial(ctx: &Ctx, tool: &ToolInput, rule: &str, output: &HookOutput) {
    let reason = output
        .hook_specific_output
        .as_ref()
        .and_then(|specific| specific.permission_decision_reason.as_deref())
        .and_then(|reason| reason.lines().next())
        .unwrap_or_default();
    let data = serde_json::json!({
        "event": "guard_denied",
        "rule": rule,
        "tool": tool.tool_name,
        "reason": reason.chars().take(200).collect::<String>(),
    });
    let tool_use_id = tool.tool_use_id.as_deref().unwrap_or_default();
    if let Err(error) = ctx.log_event("guard_event", ("toolUseId", tool_use_id), data) {
        eprintln!("{NAME}: warning: cannot record the denial: {error:#}");
    }
}

/// Whether `problem` differs from the last one reported (remembered in the
/// state root), so a broken config is reported once, not on every call.
fn first_time(ctx: &Ctx, problem: &str) -> bool {
    let store = ctx.store();
    let stamp = format!("{:016x}\n", crate::util::text::fnv1a(problem.as_bytes()));
    let Ok(locked) = store.lock(NOTICE_FILE) else {
        return true;
    };
    if locked.load_text().ok().flatten().as_deref() == Some(stamp.as_str()) {
        return false;
    }
    let _ = locked.save_text(&stamp);
    true
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
    let Some(state) = running_loop(ctx.store())? else {
        return Ok(None);
    };
    if let (Some(owner), Some(session)) = (&state.session_id, &ctx.session_id)
        && owner != session
    {
        return Ok(None);
    }
    let set = compile(globs)?;
    // Each command the text runs, by program name with its global options
    // left out (`/usr/bin/git -C . push` is `git push`), so the globs see
    // what runs, not how it is spelled; a mention inside an argument
    // (`grep "git push" notes`) is never a command.
    let mut candidates: Vec<String> = vec![command.trim().to_string()];
    for words in shell::simple_commands(command) {
        if let Some(canonical) = shell::canonical_command(&words) {
            candidates.push(canonical);
        }
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
        "Not while the Ralph loop runs: `{hit}` matches {pattern:?}, and loop {} ({:?}) is RUNNING unattended. Publishing is for the user to decide: finish the loop's work, then tell the user what is ready and the command to run. If the user asked for it explicitly, they can end the loop first with `ralph-hooks loop cancel`.",
        state.id, state.goal
    ))))
}

/// The running loop, if any (whichever session owns it).
fn running_loop(store: &Store) -> anyhow::Result<Option<LoopState>> {
    if !store.exists(LOOP_FILE) {
        return Ok(None);
    }
    Ok(store
        .read_json::<LoopState>(LOOP_FILE)?
        .filter(LoopState::is_running))
}

/// Whether the agent is working unattended: a Ralph loop runs, or the
/// active task is in progress with open steps, so its continuation keeps
/// the agent going at Stop. (Continuation over Claude Code's own todo list
/// is not counted: it lives in the transcript, not in our state.)
fn unattended(ctx: &Ctx) -> anyhow::Result<bool> {
    if running_loop(ctx.store())?.is_some() {
        return Ok(true);
    }
    Ok(tasks::active(ctx.store())?.is_some_and(|doc| {
        doc.field("Status") == Some(tasks::IN_PROGRESS)
            && !tasks::steps::open_steps(&doc).is_empty()
    }))
}

/// What a path written by a tool is to us.
enum Protected {
    /// A state file (always denied through the file tools).
    State(&'static str),
    /// The hooks' own config (denied while unattended).
    Config,
}

/// A Write/Edit/MultiEdit/NotebookEdit of a protected file.
fn file_write(ctx: &Ctx, file_path: &str) -> anyhow::Result<Option<HookOutput>> {
    let Some((path, protected)) = protected_path(ctx, file_path) else {
        return Ok(None);
    };
    match protected {
        Protected::State(instead) => Ok(Some(deny_state(ctx, &path, instead))),
        Protected::Config if unattended(ctx)? => Ok(Some(deny_config(ctx, &path))),
        Protected::Config => Ok(None),
    }
}

/// A shell command that writes, moves or removes a protected file while the
/// agent works unattended.
fn bash_protected_writes(ctx: &Ctx, command: &str) -> anyhow::Result<Option<HookOutput>> {
    let mut hits = Vec::new();
    for words in shell::simple_commands(command) {
        for target in shell::write_targets(&words) {
            if let Some(hit) = protected_path(ctx, &target) {
                hits.push(hit);
            }
        }
    }
    let Some((path, protected)) = hits.into_iter().next() else {
        return Ok(None);
    };
    if !unattended(ctx)? {
        return Ok(None);
    }
    Ok(Some(match protected {
        Protected::State(instead) => deny_state(ctx, &path, instead),
        Protected::Config => deny_config(ctx, &path),
    }))
}

fn deny_state(ctx: &Ctx, path: &Path, instead: &str) -> HookOutput {
    HookOutput::deny(format!(
        "{} is a ralph-hooks state file and cannot be edited directly: {instead}.",
        ctx.display_path(path)
    ))
}

fn deny_config(ctx: &Ctx, path: &Path) -> HookOutput {
    HookOutput::deny(format!(
        "{} configures the hooks that supervise this work, and it cannot be changed while a Ralph loop or a task continuation is active. If a setting there is wrong, describe the change to the user and let them make it.",
        ctx.display_path(path)
    ))
}

/// `file_path` (absolute, or relative to the project) when it is one of
/// ours, checked as written, with `..` resolved, and with symlinks resolved
/// (a link to the config is the config).
fn protected_path(ctx: &Ctx, file_path: &str) -> Option<(PathBuf, Protected)> {
    if file_path.is_empty() {
        return None;
    }
    let path = Path::new(file_path);
    let path = lexical_normalize(&if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_root.join(path)
    });
    let mut forms = vec![path.clone()];
    if let Ok(real) = path.canonicalize() {
        forms.push(real);
    }
    for form in &forms {
        if let Some(relative) = relative_to_state_root(&ctx.state_root, form)
            && let Some(Component::Normal(first)) = relative.components().next()
        {
            let first = first.to_string_lossy();
            if let Some((_, instead)) = STATE_FILES.iter().find(|(name, _)| *name == first) {
                return Some((path, Protected::State(instead)));
            }
        }
    }
    let configs = [
        Config::file_path(&ctx.project_root),
        ctx.project_root.join(".lsp.json"),
    ];
    let mut config_forms: Vec<PathBuf> = Vec::new();
    for config in &configs {
        config_forms.push(lexical_normalize(config));
        if let Ok(real) = config.canonicalize() {
            config_forms.push(real);
        }
        if let (Some(parent), Some(name)) = (config.parent(), config.file_name())
            && let Ok(real_parent) = parent.canonicalize()
        {
            config_forms.push(real_parent.join(name));
        }
    }
    let mut path_forms = forms;
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name())
        && let Ok(real_parent) = parent.canonicalize()
    {
        path_forms.push(real_parent.join(name));
    }
    if path_forms.iter().any(|form| config_forms.contains(form)) {
        return Some((path, Protected::Config));
    }
    None
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
