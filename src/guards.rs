//! PreToolUse guard rules for `ralph-pre-tool-stop-guard`. Each rule denies a
//! call with a reason that says what to do instead, or stays silent; none
//! ever allows (the user's own permission prompts stay in charge).
//!
//! | rule (`guard` key in `.claude/ralph-hooks.json`) | tools | denies |
//! | --- | --- | --- |
//! | `task_complete` (true) | Bash | `ralph-hooks task complete` without `--force` while steps are open, counting the step actions the same command runs first ([`chain`]) |
//! | `completion_tools` (`["mcp__*__task_complete"]`) | `mcp__…` | the same through an MCP tool, glob-matched by name |
//! | `loop_commands` (push/publish globs) | Bash | a matching command while a Ralph loop is RUNNING |
//! | `loop_control` (true) | Bash, Skill | while the agent works unattended: the CLI commands and slash commands that end or weaken the loop or the task ([`control`]) |
//! | `state_files` (true) | Write, Edit, MultiEdit, NotebookEdit | writing ralph-hooks' own state files |
//! | `state_files` (true) | the same and Bash | while a loop or a task continuation is active: writing, moving, removing or linking to anything in the protected set ([`protect`]): the state root, the hooks' config, Claude Code's settings (with `CLAUDE_CONFIG_DIR`'s and the managed ones), the skill, command and agent folders, `guard.protected` |
//! | `placeholders` (true) | Agent, Task | a sub-agent prompt with `{{UPPER_SNAKE}}` placeholders left |
//!
//! A skill's or slash command's `` !`…` `` line (PreSkillShellCommand) gets
//! the Bash rows, unless the user typed the command ([`check_skill_shell`]).
//!
//! A Bash command is read by [`shell`] (with the script files it runs);
//! what that reading cannot see — a script written and run in one command,
//! `python -c`, an alias, a Makefile — is checked by what the command did,
//! after it ran ([`effects`]), while the agent works unattended.
//!
//! This runs before every matching tool call, so a tool no rule looks at
//! returns before the config is even read, and globs are compiled once per
//! call and only when a rule needs them. A config that cannot be parsed, or a
//! key of the wrong type, is replaced by the defaults (never "all rules
//! off": the agent could otherwise switch the guard off by breaking the
//! file), and the user is told once. A rule whose state is unreadable lets
//! the call through and says why on stderr and to the user.
//!
//! Uses [`crate::tasks`], [`crate::ralph`] and [`crate::orchestrator`] (what
//! is open, what runs) and the layers below; used by the PreToolUse and
//! PostToolUse handlers.

pub mod chain;
pub mod control;
pub mod effects;
pub mod links;
pub mod protect;
pub mod shell;

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::hook::config::Config;
use crate::hook::ctx::Ctx;
use crate::hook::protocol::{EventName, HookOutput, SkillShellInput, ToolInput};
use crate::ralph::loop_state::{LOOP_FILE, LoopState, LoopStatus};
use crate::state::Store;
use crate::tasks::{self, TaskDoc};
use crate::util::fsread::{self, Links};
use crate::util::text::escape_controls;
use protect::{Kind, Places, ProtectedSet};

const NAME: &str = "ralph-pre-tool-stop-guard";

/// Commands a running loop may not run by default: they publish work that
/// a person should look at first (see prior art, claude-code PR #78371).
pub const DEFAULT_LOOP_COMMANDS: &[&str] = &[
    "git push*",
    "git send-pack*",
    "git http-push*",
    "git subtree push*",
    "git send-email*",
    "git svn dcommit*",
    "git p4 submit*",
    // Large files, uploaded to the remote's LFS store.
    "git lfs push*",
    // git's own programs, run by path (`$(git --exec-path)/git-push`).
    "git-push*",
    "git-send-pack*",
    "git-http-push*",
    "gh pr create*",
    "gh pr merge*",
    "gh release create*",
    "npm publish*",
    "pnpm publish*",
    "yarn publish*",
    "yarn npm publish*",
    "bun publish*",
    "cargo publish*",
];

pub const DEFAULT_COMPLETION_TOOLS: &[&str] = &["mcp__*__task_complete"];

/// State-root entries only ralph-hooks writes, with what to do instead.
const STATE_FILES: &[(&str, &str)] = &[
    (
        "loop.json",
        "the Ralph loop's state changes only through the CLI: see it with `ralph-hooks loop status`",
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

/// The largest script file the guard reads to see what it runs.
const MAX_SCRIPT_BYTES: u64 = 64 * 1024;

#[derive(Debug, Clone)]
pub struct GuardConfig {
    pub task_complete: bool,
    pub completion_tools: Vec<String>,
    pub loop_commands: Vec<String>,
    pub loop_control: bool,
    pub state_files: bool,
    pub placeholders: bool,
    /// More paths (files or folders, relative to the project) protected
    /// while the agent works unattended.
    pub protected: Vec<String>,
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
            loop_control: true,
            state_files: true,
            placeholders: true,
            protected: Vec::new(),
            problems: Vec::new(),
        }
    }
}

const KEYS: &[&str] = &[
    "task_complete",
    "completion_tools",
    "loop_commands",
    "loop_control",
    "state_files",
    "placeholders",
    "protected",
];

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
            if !KEYS.contains(&key.as_str()) {
                eprintln!(
                    "{NAME}: warning: unknown key guard.{key} in {} (known: {})",
                    Config::file_path(project_root).display(),
                    KEYS.join(", ")
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
        setting(section, "loop_control", &mut guard.loop_control, problems);
        setting(section, "state_files", &mut guard.state_files, problems);
        setting(section, "placeholders", &mut guard.placeholders, problems);
        setting(section, "protected", &mut guard.protected, problems);
        guard
    }

    /// The protected set for this project.
    pub fn protected_set(&self, ctx: &Ctx) -> ProtectedSet {
        ProtectedSet::new(
            &places(ctx),
            &Config::file_path(&ctx.project_root),
            &self.protected,
        )
    }
}

pub fn places(ctx: &Ctx) -> Places {
    Places::from_env(&ctx.project_root, &ctx.state_root)
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

/// Who is watching: the loop and the active task as they are now, read once
/// per call and only when a rule needs them.
pub struct Supervision {
    pub loop_state: Option<LoopState>,
    pub task: Option<TaskDoc>,
    /// This session's user paused continuation with a stop phrase.
    pub continuation_paused: bool,
}

impl Supervision {
    pub fn read(ctx: &Ctx) -> anyhow::Result<Supervision> {
        let store = ctx.store();
        let loop_state = if store.exists(LOOP_FILE) {
            store.read_json::<LoopState>(LOOP_FILE)?
        } else {
            None
        };
        let task = tasks::active(store)?;
        let continuation_paused = match &task {
            Some(_) => tasks::continuation::paused_by_user(ctx)?,
            None => false,
        };
        Ok(Supervision {
            loop_state,
            task,
            continuation_paused,
        })
    }

    pub fn loop_running(&self) -> Option<&LoopState> {
        self.loop_state.as_ref().filter(|state| state.is_running())
    }

    pub fn loop_paused(&self) -> Option<&LoopState> {
        self.loop_state
            .as_ref()
            .filter(|state| state.status == LoopStatus::Paused)
    }

    /// The active task while its continuation keeps the agent going: in
    /// progress, steps open, not paused by the user.
    pub fn continuing_task(&self) -> Option<&TaskDoc> {
        self.task.as_ref().filter(|doc| {
            !self.continuation_paused
                && doc.field("Status") == Some(tasks::IN_PROGRESS)
                && !tasks::steps::open_steps(doc).is_empty()
        })
    }

    /// Whether the agent is working unattended: a Ralph loop runs, or the
    /// active task's continuation keeps the agent going at Stop.
    /// (Continuation over Claude Code's own todo list is not counted: it
    /// lives in the transcript, not in our state.)
    pub fn unattended(&self) -> bool {
        self.loop_running().is_some() || self.continuing_task().is_some()
    }
}

/// The rules that look at a tool, by name. Anything else returns at once.
enum ToolKind {
    Bash,
    FileWrite,
    Agent,
    Skill,
    Mcp,
}

fn kind_of(tool_name: &str) -> Option<ToolKind> {
    Some(match tool_name {
        "Bash" => ToolKind::Bash,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => ToolKind::FileWrite,
        "Agent" | "Task" => ToolKind::Agent,
        "Skill" | "SlashCommand" => ToolKind::Skill,
        name if name.starts_with("mcp__") => ToolKind::Mcp,
        _ => return None,
    })
}

/// The supervision state, read on first use; a read error is the rule's.
struct Lazy<'a> {
    ctx: &'a Ctx,
    cell: OnceCell<Result<Supervision, String>>,
}

impl Lazy<'_> {
    fn get(&self) -> anyhow::Result<&Supervision> {
        self.cell
            .get_or_init(|| Supervision::read(self.ctx).map_err(|error| format!("{error:#}")))
            .as_ref()
            .map_err(|error| anyhow::anyhow!("{error}"))
    }
}

/// Runs the rules that apply to this tool call.
pub fn check(ctx: &Ctx, tool: &ToolInput) -> Option<HookOutput> {
    check_call(ctx, tool, true)
}

/// A skill's or a slash command's `` !`…` `` line (PreSkillShellCommand):
/// the Bash rules, on its command with its arguments filled in. A line of
/// a slash command the user typed is the user's own (`/cancel-loop` typed
/// by the user must end the loop), so it passes; one the agent called
/// through the Skill tool (`invoked_by: claude`), or whose caller is not
/// said or is `other`, is the agent's. No snapshot is taken before it:
/// Claude Code sends no event after such a line.
pub fn check_skill_shell(ctx: &Ctx, input: &SkillShellInput) -> Option<HookOutput> {
    if input.invoked_by_user() {
        return None;
    }
    if let Some(reason) = arguments_broke_out(input.tool.input_str("command").unwrap_or_default()) {
        let mut output = HookOutput::deny(reason);
        if let Some(specific) = output.hook_specific_output.as_mut() {
            specific.hook_event_name = EventName::PreSkillShellCommand.as_str();
        }
        return Some(output);
    }
    let mut tool = input.tool.clone();
    // PowerShell lines are read with the same reader: a `ralph-hooks loop
    // cancel` or a write to a protected path reads alike in both.
    tool.tool_name = "Bash".to_string();
    let mut output = check_call(ctx, &tool, false)?;
    if let Some(specific) = output.hook_specific_output.as_mut()
        && specific.permission_decision.is_some()
    {
        specific.hook_event_name = EventName::PreSkillShellCommand.as_str();
    }
    Some(output)
}

/// The here-document our slash commands hand `$ARGUMENTS` to the CLI in
/// (`<<'RALPH_HOOKS_ARGUMENTS'`) ends at a line that is only its word;
/// arguments with such a line in them end it early, and what follows runs
/// as shell lines of the command (sandbox attack S-3: the agent's Skill
/// call of `/ralph-check` ran lines of its own). The reason to refuse, when
/// the word stands on any line but the last.
fn arguments_broke_out(line: &str) -> Option<String> {
    const WORD: &str = "RALPH_HOOKS_ARGUMENTS";
    let first = line.lines().next()?;
    if !first.contains(&format!("<<'{WORD}'")) {
        return None;
    }
    let rest: Vec<&str> = line.lines().skip(1).collect();
    let last = rest.iter().rposition(|l| !l.trim().is_empty())?;
    let early = rest[..last].contains(&WORD);
    (early || rest[last] != WORD).then(|| {
        format!(
            "ralph-hooks guard: the arguments of this command contain a line `{WORD}`, \
             which would end the here-document that carries them and run what follows \
             as shell lines. Pass the arguments without that line."
        )
    })
}

/// [`check`]; `snapshot`: take the effect check's "before" for a Bash
/// command let through (only where an after-event will follow).
fn check_call(ctx: &Ctx, tool: &ToolInput, snapshot: bool) -> Option<HookOutput> {
    let kind = kind_of(&tool.tool_name)?;
    let config = GuardConfig::load(&ctx.project_root);
    let supervision = Lazy {
        ctx,
        cell: OnceCell::new(),
    };
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
    let mut context: Option<HookOutput> = None;
    let denied = match kind {
        ToolKind::Bash => {
            let text = tool.input_str("command").unwrap_or_default();
            let bash = Bash::new(ctx, tool, text);
            let denied = if config.task_complete {
                outcome("task_complete", bash_task_complete(ctx, text))
            } else {
                None
            }
            .or_else(|| {
                if config.loop_control {
                    outcome(
                        "loop_control",
                        supervision
                            .get()
                            .map(|watch| control::bash(ctx, &bash.commands, watch)),
                    )
                } else {
                    None
                }
            })
            .or_else(|| {
                if config.loop_control {
                    outcome(
                        "hook_binaries",
                        supervision
                            .get()
                            .map(|watch| control::hook_binary(text, &bash.commands, watch)),
                    )
                } else {
                    None
                }
            })
            .or_else(|| {
                outcome(
                    "loop_commands",
                    loop_command(ctx, &bash, &config.loop_commands, &supervision),
                )
            })
            .or_else(|| {
                if config.state_files {
                    outcome(
                        "state_files",
                        bash_protected_writes(ctx, &bash, &config, &supervision),
                    )
                } else {
                    None
                }
            });
            if denied.is_none() {
                // While the agent works unattended, the protected set is
                // built and walked once, for both uses below.
                let protected = supervision
                    .get()
                    .is_ok_and(|s| s.unattended())
                    .then(|| effects::Protected::now(ctx, &config));
                if config.state_files
                    && let Some(protected) = &protected
                {
                    skipped.extend(own_inodes(ctx, protected.files()));
                }
                if snapshot {
                    // What the command does is checked after it ran too,
                    // while the agent works unattended: take the "before"
                    // now.
                    context = match supervision.get() {
                        Ok(watch) => effects::before_bash(ctx, tool, protected.as_ref(), watch),
                        Err(_) => None,
                    };
                }
            }
            denied
        }
        ToolKind::FileWrite => {
            let path = tool
                .input_str("file_path")
                .or_else(|| tool.input_str("notebook_path"))
                .unwrap_or_default();
            if config.state_files {
                outcome("state_files", file_write(ctx, path, &config, &supervision))
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
        ToolKind::Skill => {
            if config.loop_control {
                outcome(
                    "loop_control",
                    supervision.get().map(|watch| control::skill(tool, watch)),
                )
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
    let decided = denied.or(context);
    if notes.is_empty() {
        return decided;
    }
    let message = format!("ralph-hooks guard: {}", notes.join("; "));
    Some(match decided {
        Some(decided) => {
            let own = decided.system_message.clone();
            let message = match own {
                Some(own) => format!("{own}\n{message}"),
                None => message,
            };
            decided.with_system_message(message)
        }
        None => HookOutput::silent().with_system_message(message),
    })
}

/// Before a Bash command while the agent works unattended: every protected
/// file of `files` (and the repository's `.git/config` and hooks, which run
/// commands for every later `git`) with another name gets a file of its
/// own, so that the command cannot change it through that name (see
/// [`links`]). Lines for the user.
fn own_inodes(ctx: &Ctx, files: &[(PathBuf, Kind)]) -> Vec<String> {
    let mut paths: Vec<PathBuf> = files.iter().map(|(path, _)| path.clone()).collect();
    let git = ctx.project_root.join(".git");
    if git.symlink_metadata().is_ok_and(|m| m.is_dir()) {
        paths.push(git.join("config"));
        if let Ok(hooks) = std::fs::read_dir(git.join("hooks")) {
            paths.extend(
                hooks
                    .filter_map(|entry| entry.ok())
                    .map(|entry| entry.path()),
            );
        }
    }
    links::separate(&paths)
}

/// [`own_inodes`] for the Stop hook, before a loop's checks run: a hard
/// link made before the loop reaches `.git/config` from the writable
/// project even when no Bash command came first (re-check: a first Stop's
/// check wrote git's config through one). Lines for the user.
pub fn give_protected_files_own_inodes(ctx: &Ctx) -> Vec<String> {
    let set = GuardConfig::load(&ctx.project_root).protected_set(ctx);
    own_inodes(ctx, &set.files())
}

/// A Bash command as the rules see it: its simple commands (script files
/// it runs read from disk) and where it runs.
pub struct Bash {
    pub text: String,
    pub commands: Vec<shell::Command>,
    /// The Bash tool's directory (the input's `cwd`, else the project).
    pub base: PathBuf,
    pub places: Places,
}

impl Bash {
    pub fn new(ctx: &Ctx, tool: &ToolInput, text: &str) -> Bash {
        let base = tool
            .common
            .cwd
            .as_deref()
            .map(PathBuf::from)
            .filter(|cwd| cwd.is_absolute())
            .unwrap_or_else(|| ctx.project_root.clone());
        let places = places(ctx);
        let scripts = DiskScripts {
            base: &base,
            places: &places,
        };
        let commands = shell::commands(text, &scripts);
        Bash {
            text: text.to_string(),
            commands,
            base,
            places,
        }
    }

    /// The directories a command may run in.
    fn dirs(&self, command: &shell::Command) -> Vec<PathBuf> {
        protect::run_dirs(&self.base, &command.cwd, &self.places)
    }
}

/// Script files a command runs, read from disk: small text files only, and
/// for a file run by its own name only a shell script (a shell `#!`, or
/// none, which the shell runs itself).
struct DiskScripts<'a> {
    base: &'a Path,
    places: &'a Places,
}

impl shell::Scripts for DiskScripts<'_> {
    fn read(&self, file: &shell::ScriptFile) -> Option<String> {
        let dirs = protect::run_dirs(self.base, &file.cwd, self.places);
        for path in protect::paths_of(&file.path, &dirs, self.places) {
            let Ok(Some(text)) = fsread::read_text(&path, MAX_SCRIPT_BYTES, Links::Follow) else {
                continue;
            };
            if text.contains('\0') {
                continue;
            }
            if !file.by_shell && !is_shell_script(&text) {
                continue;
            }
            return Some(text);
        }
        None
    }
}

fn is_shell_script(text: &str) -> bool {
    let Some(shebang) = text.strip_prefix("#!") else {
        return true;
    };
    let line = shebang.lines().next().unwrap_or_default();
    let mut words = line.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let program = match shell::basename(program) {
        "env" => words.find(|w| !w.starts_with('-')).unwrap_or_default(),
        other => other,
    };
    matches!(
        shell::basename(program),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "posh"
    )
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
    Ok(Some(HookOutput::deny(control::without_force_hint(
        &denial.reason,
    ))))
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
    if crate::util::paths::lexically_normal(&root)
        == crate::util::paths::lexically_normal(&ctx.project_root)
    {
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
    Ok(Some(HookOutput::deny(control::without_force_hint(
        &message,
    ))))
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
fn loop_command(
    ctx: &Ctx,
    bash: &Bash,
    globs: &[String],
    supervision: &Lazy<'_>,
) -> anyhow::Result<Option<HookOutput>> {
    if globs.is_empty() || bash.text.trim().is_empty() {
        return Ok(None);
    }
    let Some(state) = supervision.get()?.loop_running() else {
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
    let mut candidates: Vec<String> = vec![bash.text.trim().to_string()];
    // A git alias is what it stands for (`git -c alias.p=push p`: re-attack
    // X-4), whether the command, an earlier one of the same text or a
    // config file defines it.
    let setup = shell::git_setup(&bash.commands);
    let from_config =
        |context: &shell::GitContext, key: &str| git_config_value(&bash.base, context, key);
    let is_command =
        |context: &shell::GitContext, name: &str| git_has_command(&bash.base, context, name);
    for command in &bash.commands {
        let part = shell::command_part(&command.words);
        // A `git` further on, behind a program this reading does not know
        // as a wrapper (`setpriv --reuid=0 -- git push`: re-attack Y-1),
        // is read as a command of its own — unless the program only
        // prints or searches its words (`echo git push`).
        let behind_a_program = part
            .first()
            .filter(|program| !shell::TAKES_WORDS_AS_TEXT.contains(&shell::basename(program)))
            .and_then(|_| {
                part.iter()
                    .skip(1)
                    .position(|word| shell::basename(word) == "git")
                    .map(|at| part[at + 1..].to_vec())
            });
        for words in std::iter::once(&command.words).chain(behind_a_program.as_ref()) {
            if let Some(canonical) = shell::canonical_command(words) {
                candidates.push(canonical);
            }
            if let Some(expanded) =
                shell::git_alias_expanded(words, &command.cwd, &setup, &from_config, &is_command)
            {
                for words in shell::simple_commands(&expanded) {
                    candidates.extend(shell::canonical_command(&words));
                }
                candidates.push(expanded);
            }
            candidates.extend(shell::git_program_as_named(words));
        }
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
        "Not while the Ralph loop runs: `{hit}` matches {pattern:?}, and loop {} ({:?}) is RUNNING unattended. Publishing is for the user to decide: finish the loop's work, then tell the user what is ready and the command to run.",
        state.id, state.goal
    ))))
}

/// `git [the command's options] config --get KEY` where the command runs,
/// with the environment it sets: reading config runs no program. `None`
/// when git has no such key (or cannot say).
fn git_config_value(dir: &Path, context: &shell::GitContext, key: &str) -> Option<String> {
    if key.is_empty() || key.starts_with('-') {
        return None;
    }
    let mut command = std::process::Command::new(crate::util::trusted::program("git", Some(dir)));
    command
        .args(context.options)
        .args(["config", "--get", key])
        .envs(context.env.iter().copied());
    let output = command
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let value = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && !value.is_empty()).then_some(value)
}

/// Whether `name` is one of git's commands as the command would see them:
/// `git --list-cmds=main,others` (builtins and the `git-*` programs on
/// `PATH`, such as `git-lfs`); the command's `PATH` is not used.
fn git_has_command(dir: &Path, context: &shell::GitContext, name: &str) -> bool {
    let output = std::process::Command::new(crate::util::trusted::program("git", Some(dir)))
        .args(context.options)
        .arg("--list-cmds=main,others,nohelpers")
        .envs(context.env.iter().copied())
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    output.is_ok_and(|output| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .any(|line| line.trim() == name)
    })
}

/// What a protected path a tool or command would touch is, for the reason.
struct Hit {
    /// As the tool or command wrote it.
    written: String,
    /// The protected path it reaches.
    reached: PathBuf,
    kind: Kind,
    /// Reached through a hard link or a new link.
    through_link: bool,
}

/// A Write/Edit/MultiEdit/NotebookEdit of a protected file: one of the
/// named state files always, the rest of the protected set while the agent
/// works unattended.
fn file_write(
    ctx: &Ctx,
    file_path: &str,
    config: &GuardConfig,
    supervision: &Lazy<'_>,
) -> anyhow::Result<Option<HookOutput>> {
    if file_path.is_empty() {
        return Ok(None);
    }
    let path = crate::util::paths::lexically_normal(&ctx.project_root.join(file_path));
    if let Some(instead) = named_state_file(ctx, &path) {
        return Ok(Some(deny_state(ctx, &path, instead)));
    }
    let set = config.protected_set(ctx);
    let hit = match set.hit(&path) {
        Some((entry, reached)) => Some(Hit {
            written: ctx.display_path(&path).into_owned(),
            reached,
            kind: entry.kind,
            through_link: false,
        }),
        None => set.hard_link_of(&path).map(|reached| Hit {
            written: ctx.display_path(&path).into_owned(),
            kind: kind_of_path(&set, &reached),
            reached,
            through_link: true,
        }),
    };
    let Some(hit) = hit else {
        return outside_the_project(ctx, &path, supervision);
    };
    if !supervision.get()?.unattended() {
        return Ok(None);
    }
    Ok(Some(deny_protected(ctx, &hit, None)))
}

/// Sandbox mode, while the agent works unattended: the file tools write only
/// inside the project and the temp folders. Claude Code's sandbox confines
/// Bash, not the Write and Edit tools, and a file outside the project
/// (`~/.gitconfig`, `/etc/ld.so.preload`, a shell's rc file) can make a
/// program the hooks run, outside the sandbox, run the agent's code.
fn outside_the_project(
    ctx: &Ctx,
    path: &Path,
    supervision: &Lazy<'_>,
) -> anyhow::Result<Option<HookOutput>> {
    if !crate::hook::sandbox::installed(ctx) {
        return Ok(None);
    }
    let allowed: Vec<PathBuf> = [
        ctx.project_root.clone(),
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ]
    .iter()
    .flat_map(|root| protect::forms(root))
    .collect();
    let forms = protect::forms(path);
    let escapes = forms
        .iter()
        .any(|form| !allowed.iter().any(|root| form.starts_with(root)));
    // Claude Code's sandbox keeps a repository's `.git` read-only to Bash
    // only; the file tools are not sandboxed, and a `.git/config` they
    // write names programs (drivers, hooks) that git runs for whoever runs
    // it next, the hooks outside the sandbox included.
    let in_git_dir = forms
        .iter()
        .any(|form| form.components().any(|part| part.as_os_str() == ".git"));
    if !(escapes || in_git_dir) || !supervision.get()?.unattended() {
        return Ok(None);
    }
    let written = path.to_string_lossy();
    let shown = crate::util::text::escape_controls(&written);
    if escapes {
        return Ok(Some(HookOutput::deny(format!(
            "Not while the Ralph loop runs unattended in sandbox mode: {shown} is outside the project. The file tools write only inside the project (and the temp folders) until the loop ends; keep the work in the project, or tell the user what should change outside it."
        ))));
    }
    Ok(Some(HookOutput::deny(format!(
        "Not while the Ralph loop runs unattended in sandbox mode: {shown} is inside a repository's .git folder, which the file tools do not write until the loop ends (git's own commands do that); tell the user what should change there."
    ))))
}

fn kind_of_path(set: &ProtectedSet, path: &Path) -> Kind {
    set.hit(path).map_or(Kind::State, |(entry, _)| entry.kind)
}

/// The `instead` text when `path` (in any of its forms) is one of the named
/// state files or folders.
fn named_state_file(ctx: &Ctx, path: &Path) -> Option<&'static str> {
    let roots = protect::forms(&ctx.state_root);
    for form in protect::forms(path) {
        for root in &roots {
            let Ok(relative) = form.strip_prefix(root) else {
                continue;
            };
            let Some(first) = relative.components().next() else {
                continue;
            };
            let first = first.as_os_str().to_string_lossy();
            if let Some((_, instead)) = STATE_FILES.iter().find(|(name, _)| *name == first) {
                return Some(instead);
            }
        }
    }
    None
}

/// A shell command that writes, moves, removes or links to a protected
/// path while the agent works unattended.
fn bash_protected_writes(
    ctx: &Ctx,
    bash: &Bash,
    config: &GuardConfig,
    supervision: &Lazy<'_>,
) -> anyhow::Result<Option<HookOutput>> {
    let mut set: Option<ProtectedSet> = None;
    for command in &bash.commands {
        let dirs = bash.dirs(command);
        let is_dir = |word: &str| {
            protect::paths_of(word, &dirs, &bash.places)
                .iter()
                .any(|path| path.is_dir())
        };
        let targets = shell::write_targets(command, &is_dir);
        if targets.is_empty() {
            continue;
        }
        let set = set.get_or_insert_with(|| config.protected_set(ctx));
        for target in targets {
            for path in protect::paths_of(&target.path, &dirs, &bash.places) {
                let hit = match set.hit(&path) {
                    Some((entry, reached)) => Some(Hit {
                        written: target.path.clone(),
                        reached,
                        kind: entry.kind,
                        through_link: target.kind == shell::TargetKind::LinkedTo,
                    }),
                    None => set.hard_link_of(&path).map(|reached| Hit {
                        written: target.path.clone(),
                        kind: kind_of_path(set, &reached),
                        reached,
                        through_link: true,
                    }),
                };
                let Some(hit) = hit else {
                    continue;
                };
                if !supervision.get()?.unattended() {
                    return Ok(None);
                }
                let words = command.words.join(" ");
                return Ok(Some(deny_protected(ctx, &hit, Some(&words))));
            }
        }
    }
    Ok(None)
}

fn deny_state(ctx: &Ctx, path: &Path, instead: &str) -> HookOutput {
    HookOutput::deny(format!(
        "{} is a ralph-hooks state file and cannot be edited directly: {instead}.",
        escape_controls(&ctx.display_path(path))
    ))
}

/// The reason for a write that reaches the protected set.
fn deny_protected(ctx: &Ctx, hit: &Hit, command: Option<&str>) -> HookOutput {
    let reached = escape_controls(&ctx.display_path(&hit.reached)).into_owned();
    let written = escape_controls(&hit.written);
    let lead = match (command, hit.through_link) {
        (None, false) => String::new(),
        (None, true) => format!("{written} is another name for {reached}: "),
        (Some(command), false) if written == reached => {
            format!("`{}` would change it: ", cap(command))
        }
        (Some(command), false) => format!(
            "`{}` would change {reached} (through `{}`): ",
            cap(command),
            written
        ),
        (Some(command), true) => format!(
            "`{}` would make `{}` another name for {reached}: ",
            cap(command),
            written
        ),
    };
    let (what, advice) = match hit.kind {
        Kind::State => {
            let instead = named_state_file(ctx, &hit.reached)
                .map(|instead| format!(" ({instead})"))
                .unwrap_or_default();
            (
                format!("is part of the state of the hooks that supervise this work{instead}"),
                "Leave it as it is; if you are cleaning up, name only the files you mean.",
            )
        }
        Kind::Config if places(ctx).loads_commands(&hit.reached) => (
            "is where Claude Code loads skills, slash commands and subagents from".to_string(),
            "A new or changed skill or command would run outside the hooks' view. If one would help, describe it to the user and let them add it.",
        ),
        Kind::Config => (
            "configures the hooks that supervise this work".to_string(),
            "If a setting there is wrong, describe the change to the user and let them make it.",
        ),
    };
    HookOutput::deny(format!(
        "{lead}{reached} {what}, and it cannot be changed while a Ralph loop or a task continuation is active. {advice}"
    ))
}

/// A command as quoted in a reason, cut to a readable length, its control
/// characters escaped.
fn cap(text: &str) -> String {
    const MAX: usize = 160;
    let text = escape_controls(text);
    if text.chars().count() <= MAX {
        return text.into_owned();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
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
    fn default_loop_globs_match_commands() {
        let globs: Vec<String> = DEFAULT_LOOP_COMMANDS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let set = compile(&globs).unwrap();
        assert!(set.is_match("git push origin main"));
        assert!(set.is_match("gh pr create --fill"));
        assert!(set.is_match("cargo publish"));
        assert!(set.is_match("pnpm publish --no-git-checks"));
        assert!(set.is_match("yarn npm publish"));
        assert!(set.is_match("bun publish"));
        assert!(!set.is_match("git status"));
    }
}
