//! `ralph-hooks install [--project DIR] [--statusline] [--sandbox] [--uninstall]`:
//! registers our hooks in `<project>/.claude/settings.json` and our slash
//! commands in `<project>/.claude/commands/`; with `--statusline`, also
//! `ralph-hooks statusline` as the status line, unless the user has one;
//! with `--sandbox`, Claude Code's sandbox settings that make the
//! supervision read-only to every Bash command ([`super::sandbox`]).
//!
//! The merge keeps every other key and hook as it was (key order included).
//! Our handlers are recognised by the file name of their command, so
//! installing twice, or from a new location, replaces them instead of adding
//! duplicates, and `--uninstall` removes exactly them (`super::uninstall`
//! puts the project back as it was, formatting included, from what
//! [`super::install_record`] kept).

pub use super::hook_commands::{HOOK_BINARIES, is_ours, program_of};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

use super::command_files::Owner;
use super::progress::{self, Progress};
use crate::hook::ctx::Ctx;
use crate::state::write_atomic;
use crate::util::fsread::{self, Links, limits};

/// One handler we register.
pub struct Registration {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub binary: &'static str,
    /// An argument after the binary: `--rewake` selects the Stop binary's
    /// `asyncRewake` registration.
    pub arg: Option<&'static str>,
    /// Registered with `"asyncRewake": true`: Claude Code runs it in the
    /// background and its exit 2 wakes the session.
    pub async_rewake: bool,
    /// Seconds. The Stop hook runs the loop's checks, which may take
    /// minutes; the StopFailure hook may wait for a usage limit to reset.
    pub timeout: u64,
}

impl Registration {
    /// The command line for `program` (the binary, as a path or a name).
    pub fn command(&self, program: &str) -> String {
        match self.arg {
            Some(arg) => format!("{program} {arg}"),
            None => program.to_string(),
        }
    }
}

pub const REGISTRATIONS: &[Registration] = &[
    Registration {
        event: "SessionStart",
        matcher: None,
        binary: "ralph-session-start",
        arg: None,
        async_rewake: false,
        timeout: 30,
    },
    Registration {
        event: "UserPromptSubmit",
        matcher: None,
        binary: "ralph-user-prompt-submit",
        arg: None,
        async_rewake: false,
        timeout: 10,
    },
    Registration {
        event: "PreToolUse",
        matcher: Some(
            "^(Bash|Write|Edit|MultiEdit|NotebookEdit|Agent|Task|Skill|SlashCommand|mcp__.*)$",
        ),
        binary: "ralph-pre-tool-stop-guard",
        arg: None,
        async_rewake: false,
        timeout: 15,
    },
    // A skill's or slash command's `!` line (2.1.332): no Bash tool call,
    // so no PreToolUse; the guard reads it the same way.
    Registration {
        event: "PreSkillShellCommand",
        matcher: None,
        binary: "ralph-pre-tool-stop-guard",
        arg: None,
        async_rewake: false,
        timeout: 15,
    },
    Registration {
        event: "PostToolUse",
        matcher: Some("Write|Edit|MultiEdit|Bash"),
        binary: "ralph-post-tool-lsp-diagnostic",
        arg: None,
        async_rewake: false,
        timeout: 60,
    },
    // A Bash command that exits non-zero, or is interrupted, fires this
    // instead of PostToolUse (2.1.332); what it did is checked the same.
    Registration {
        event: "PostToolUseFailure",
        matcher: Some("Bash"),
        binary: "ralph-post-tool-lsp-diagnostic",
        arg: None,
        async_rewake: false,
        timeout: 60,
    },
    Registration {
        event: "Stop",
        matcher: None,
        binary: "ralph-stop-loop-controller",
        arg: None,
        async_rewake: false,
        timeout: 1800,
    },
    // Loops started with `--rewake`: the turn ends, the hook wakes the
    // session with the follow-up, so the block cap is never met.
    Registration {
        event: "Stop",
        matcher: None,
        binary: "ralph-stop-loop-controller",
        arg: Some(crate::hook::REWAKE_ARG),
        async_rewake: true,
        timeout: 1800,
    },
    Registration {
        event: "SubagentStop",
        matcher: None,
        binary: "ralph-stop-loop-controller",
        arg: None,
        async_rewake: false,
        timeout: 60,
    },
    // An API error ended the turn: a usage limit pauses the loop, another
    // error is recorded. An ordinary hook, so that it finishes even when
    // `claude -p` exits right after the failed turn (a background one is
    // killed then).
    Registration {
        event: "StopFailure",
        matcher: None,
        binary: "ralph-stop-loop-controller",
        arg: None,
        async_rewake: false,
        timeout: 30,
    },
];

/// Registered besides [`REGISTRATIONS`] when `loop.auto_resume` is on in
/// `.claude/ralph-hooks.json`: a background StopFailure hook that waits for
/// a usage limit to reset and wakes the session (interactive and
/// stream-json sessions; plain `claude -p` has ended by then).
pub const AUTO_RESUME: Registration = Registration {
    event: "StopFailure",
    matcher: None,
    binary: "ralph-stop-loop-controller",
    arg: Some(crate::hook::REWAKE_ARG),
    async_rewake: true,
    timeout: 21600,
};

/// What `install` registers: [`REGISTRATIONS`], and [`AUTO_RESUME`] when
/// the project's config asks for it.
pub fn registrations(auto_resume: bool) -> Vec<&'static Registration> {
    let mut all: Vec<&'static Registration> = REGISTRATIONS.iter().collect();
    if auto_resume {
        all.push(&AUTO_RESUME);
    }
    all
}

/// Slash commands we install, with their text.
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "ralph-loop.md",
        include_str!("../../hooks-config/commands/ralph-loop.md"),
    ),
    (
        "cancel-loop.md",
        include_str!("../../hooks-config/commands/cancel-loop.md"),
    ),
    (
        "loop-status.md",
        include_str!("../../hooks-config/commands/loop-status.md"),
    ),
    // The project-wide check (issue 11).
    (
        "ralph-check.md",
        include_str!("../../hooks-config/commands/ralph-check.md"),
    ),
    (
        "resume-loop.md",
        include_str!("../../hooks-config/commands/resume-loop.md"),
    ),
    // The plan → run → sync pipeline (issue 15).
    (
        "ralph.md",
        include_str!("../../hooks-config/commands/ralph.md"),
    ),
    (
        "ralph-plan.md",
        include_str!("../../hooks-config/commands/ralph-plan.md"),
    ),
    (
        "ralph-run.md",
        include_str!("../../hooks-config/commands/ralph-run.md"),
    ),
    (
        "ralph-sync.md",
        include_str!("../../hooks-config/commands/ralph-sync.md"),
    ),
    (
        "ralph-resume.md",
        include_str!("../../hooks-config/commands/ralph-resume.md"),
    ),
    // Automatic fixes (issue 13).
    (
        "ralph-fix.md",
        include_str!("../../hooks-config/commands/ralph-fix.md"),
    ),
];

/// Sandbox mode's versions of the user's loop controls: a `!` line runs
/// inside the sandbox and cannot write the state, so the prompt hook
/// carries the command out and these only show the result.
pub const SANDBOX_COMMANDS: &[(&str, &str)] = &[
    (
        "ralph-loop.md",
        include_str!("../../hooks-config/commands/sandbox/ralph-loop.md"),
    ),
    (
        "cancel-loop.md",
        include_str!("../../hooks-config/commands/sandbox/cancel-loop.md"),
    ),
    (
        "resume-loop.md",
        include_str!("../../hooks-config/commands/sandbox/resume-loop.md"),
    ),
];

pub const EXAMPLES: &str = "\
Registers the hook binaries (absolute paths, merged into the settings: every other key stays)
and writes the slash commands (/ralph-loop, /ralph-check, /ralph-fix, …). Running it again
changes nothing.

Examples:
  ralph-hooks install --project ~/code/app
  ralph-hooks install --project . --statusline
  ralph-hooks install --project . --sandbox      # the supervision read-only to every Bash command
  ralph-hooks install --project . --uninstall           # the project as it was before install
  ralph-hooks install --project . --uninstall --purge   # and the state folder (loops, tasks, logs)
  ralph-hooks install --project . --harness codex       # .codex/hooks.json (also gemini, cursor, copilot)";

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Put the project back as it was before install (see docs/uninstall.md)
    #[arg(long)]
    pub uninstall: bool,
    /// With --uninstall: also remove the state folder (loops, tasks, logs) and the guard's watch folder
    #[arg(long, requires = "uninstall")]
    pub purge: bool,
    /// Also set `ralph-hooks statusline` as Claude Code's status line (unless you have one)
    #[arg(long)]
    pub statusline: bool,
    /// Sandbox mode: Claude Code runs every Bash command in its OS sandbox, where the loop's state, the hooks' config and registrations, skills and commands are read-only (needs bubblewrap and socat on Linux)
    #[arg(long)]
    pub sandbox: bool,
    /// Another agent harness's own hook configuration instead: codex, gemini, cursor or copilot
    #[arg(long, value_name = "HARNESS", conflicts_with_all = ["statusline", "sandbox"])]
    pub harness: Option<String>,
}

pub fn run(ctx: &Ctx, args: &InstallArgs) -> anyhow::Result<ExitCode> {
    let (uninstall, statusline) = (args.uninstall, args.statusline);
    let project = &ctx.project_root;
    if !project.is_dir() {
        bail!("project directory {} does not exist", project.display());
    }
    if uninstall {
        bail!("--uninstall is carried out by `uninstall::run`");
    }
    if let Some(reason) = crate::state::dedicated::not_ours(&ctx.state_root) {
        bail!(
            "refusing the state folder {}: {reason}; point RALPH_HOOKS_STATE_DIR at a folder of its own, nothing was changed",
            ctx.state_root.display()
        );
    }
    let settings_path = project.join(".claude").join("settings.json");
    let plugins = super::plugin_route::active_plugins(project);
    if !plugins.is_empty() {
        bail!(
            "{}",
            super::plugin_route::double_registration_message(&plugins, &settings_path)
        );
    }
    let settings_text = fsread::read_text(&settings_path, limits::CONFIG, Links::Follow)?;
    let mut settings = read_settings(&settings_path)?;
    let had_ours =
        remove_ours(&mut settings) > 0 || settings.get("statusLine").is_some_and(is_our_statusline);
    // How the project was, for --uninstall (the first install's record stands).
    let first_look = super::install_record::before_install(ctx, settings_text.as_deref(), had_ours);
    let sandbox_record = read_sandbox_record(ctx)?;
    let bin_dir = binary_dir()?;
    super::install_checks::refuse_ephemeral(&bin_dir)?;
    let auto_resume = crate::ralph::loops::LoopConfig::load(ctx).auto_resume;
    add_ours(&mut settings, &bin_dir, auto_resume);
    let sandbox_note = if args.sandbox || sandbox_record.is_some() {
        Some(add_sandbox(ctx, &mut settings, sandbox_record.as_ref())?)
    } else {
        None
    };
    let statusline_note = if statusline {
        Some(add_statusline(&mut settings, &bin_dir))
    } else {
        None
    };
    // The settings, then each slash command: on a slow disk that is a count.
    let progress = Progress::start("installing", progress::wanted(false));
    let total = COMMANDS.len() + 1;
    // The commands first: when one cannot be written, no hook is live yet
    // (the hooks without their commands would run while install says it
    // failed).
    let cli = shell_quote(&bin_dir.join("ralph-hooks"));
    let commands_changed = install_commands(project, &cli, sandbox_note.is_some(), &|done| {
        progress.set(done, total)
    })?;
    let settings_changed = write_settings(&settings_path, settings_text.as_deref(), &settings)?;
    let state_ignored = ctx.store().ignore_in_git()?;
    if let Some(record) = &first_look {
        super::install_record::save(ctx, record)?;
    }
    let sandbox_changed = match &sandbox_note {
        Some((record, _)) if sandbox_record.as_ref() != Some(record) => {
            ctx.store().lock(SANDBOX_RECORD)?.save_json(record)?;
            true
        }
        _ => false,
    };
    progress.set(total, total);
    progress.finish();
    if !settings_changed && !sandbox_changed && commands_changed == 0 && first_look.is_none() {
        println!(
            "ralph-hooks is already registered in {} (binaries in {}); nothing changed.",
            settings_path.display(),
            bin_dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if state_ignored {
        println!(
            "The hooks' state in {} is ignored by git ({}).",
            ctx.state_root.display(),
            ctx.state_root.join(".gitignore").display()
        );
    }
    println!(
        "Registered ralph-hooks in {} (binaries in {}).",
        settings_path.display(),
        bin_dir.display()
    );
    for registration in registrations(auto_resume) {
        println!(
            "  {:<16} {:<45} {}{}",
            registration.event,
            registration.matcher.unwrap_or("*"),
            registration.command(registration.binary),
            if registration.async_rewake {
                " (asyncRewake)"
            } else {
                ""
            }
        );
    }
    let names: Vec<String> = COMMANDS
        .iter()
        .map(|(file, _)| format!("/{}", file.trim_end_matches(".md")))
        .collect();
    println!(
        "Slash commands: {} in {}.",
        names.join(", "),
        project.join(".claude/commands").display()
    );
    if let Some(note) = statusline_note {
        println!("{note}");
    }
    if let Some((_, note)) = sandbox_note {
        println!("{note}");
    }
    println!("Start a loop with: ralph-hooks loop start \"<goal>\" --check \"<command>\"");
    Ok(ExitCode::SUCCESS)
}

/// The record of sandbox mode's install, relative to the state root.
pub(super) const SANDBOX_RECORD: &str = crate::hook::sandbox::RECORD;

pub(super) fn read_sandbox_record(ctx: &Ctx) -> anyhow::Result<Option<super::sandbox::Record>> {
    ctx.store()
        .read_json::<super::sandbox::Record>(SANDBOX_RECORD)
}

/// Merges sandbox mode into the settings; its record and what to tell the
/// user. Refused where Claude Code cannot run its sandbox: with
/// `failIfUnavailable` the session would not start.
fn add_sandbox(
    ctx: &Ctx,
    settings: &mut Value,
    previous: Option<&super::sandbox::Record>,
) -> anyhow::Result<(super::sandbox::Record, String)> {
    let available = match super::sandbox::availability() {
        Ok(what) => what,
        Err(why) => bail!(
            "sandbox mode needs Claude Code's sandbox, which cannot run here: {why}; nothing was changed"
        ),
    };
    std::fs::create_dir_all(&ctx.state_root)
        .with_context(|| format!("cannot create {}", ctx.state_root.display()))?;
    let state_root = state_root_for_settings(ctx);
    let record = super::sandbox::add(settings, &state_root, previous);
    let mut note = format!(
        "Sandbox mode ({available}): every Bash command runs in Claude Code's sandbox, where these are read-only: {}; Write/Edit/MultiEdit/NotebookEdit are denied there; dangerouslyDisableSandbox is ignored. The agent's task steps go through the hooks; /ralph-loop, /cancel-loop and /resume-loop are carried out by the prompt hook.",
        super::sandbox::protected_paths(&state_root)
            .iter()
            .map(|p| p.trim_end_matches('/'))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for finding in super::sandbox::assess(settings, &state_root) {
        if finding.problem {
            note.push_str(&format!("\nWarning: {}", finding.text));
        }
    }
    Ok((record, note))
}

/// The state root as the settings name it: relative to the project (with a
/// trailing `/`) when inside it, else absolute.
pub fn state_root_for_settings(ctx: &Ctx) -> String {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    // As given first (a state root not created yet does not canonicalize),
    // then with every link resolved.
    for (project, root) in [
        (ctx.project_root.clone(), ctx.state_root.clone()),
        (canonical(&ctx.project_root), canonical(&ctx.state_root)),
    ] {
        if let Ok(relative) = root.strip_prefix(&project)
            && !relative.as_os_str().is_empty()
        {
            return format!("{}/", relative.to_string_lossy());
        }
    }
    format!("{}/", canonical(&ctx.state_root).to_string_lossy())
}

/// Where the hook binaries are: beside this executable (how `cargo install`
/// and a build directory lay them out), else on PATH.
pub fn binary_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the ralph-hooks executable")?;
    let exe = exe.canonicalize().unwrap_or(exe);
    if let Some(dir) = exe.parent()
        && HOOK_BINARIES.iter().all(|name| dir.join(name).is_file())
    {
        return Ok(dir.to_path_buf());
    }
    if let Ok(found) = which::which("ralph-stop-loop-controller")
        && let Some(dir) = found.parent()
        && HOOK_BINARIES.iter().all(|name| dir.join(name).is_file())
    {
        return Ok(dir.to_path_buf());
    }
    bail!(
        "cannot find the hook binaries ({}) beside {} or on PATH: install them with `cargo install --path .` first",
        HOOK_BINARIES.join(", "),
        exe.display()
    )
}

/// A JSON settings file as an object: absent or empty is `{}`; anything
/// but an object is refused with a message naming the file.
pub fn read_settings(path: &Path) -> anyhow::Result<Value> {
    let Some(text) = fsread::read_text(path, limits::CONFIG, Links::Follow)? else {
        return Ok(json!({}));
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    let value: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not valid JSON; fix it by hand first, nothing was changed",
            path.display()
        )
    })?;
    if !value.is_object() {
        bail!(
            "{} is not a JSON object; fix it by hand first, nothing was changed",
            path.display()
        );
    }
    // JSON readers keep the last of two equal keys; an edit would change
    // both and lose what the first held (attack finding H-6).
    if let Some(key) = crate::util::json_splice::duplicate_key(&text) {
        bail!(
            "{} has the key \"{key}\" twice in one object; fix it by hand first, nothing was changed",
            path.display()
        );
    }
    Ok(value)
}

/// Writes the settings, editing the file's text in place so that its
/// formatting stays ([`crate::util::json_splice`]); true when it changed.
fn write_settings(path: &Path, before: Option<&str>, settings: &Value) -> anyhow::Result<bool> {
    let spliced = before
        .filter(|text| !text.trim().is_empty())
        .and_then(|text| crate::util::json_splice::rewrite(text, settings));
    let text = match spliced {
        Some(text) => text,
        None => {
            let mut text =
                serde_json::to_string_pretty(settings).context("cannot encode settings")?;
            text.push('\n');
            text
        }
    };
    if before == Some(text.as_str()) {
        return Ok(false);
    }
    super::settings_file::write(path, text.as_bytes())?;
    Ok(true)
}

/// Removes our handlers everywhere, and the groups, events and `hooks`
/// object that removing them left empty; ones the user left empty stay
/// (`{"hooks": {}}`, `"Stop": []`: attack A32N-5). Returns how many
/// handlers were removed.
pub fn remove_ours(settings: &mut Value) -> usize {
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return 0;
    };
    let mut removed = 0;
    let mut emptied_events = Vec::new();
    for (event, groups) in hooks.iter_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        let groups_before = groups.len();
        let mut emptied = vec![false; groups.len()];
        for (group, emptied) in groups.iter_mut().zip(&mut emptied) {
            if let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let before = handlers.len();
                handlers.retain(|handler| !is_ours(handler));
                removed += before - handlers.len();
                *emptied = before > 0 && handlers.is_empty();
            }
        }
        let mut emptied = emptied.into_iter();
        groups.retain(|_| !emptied.next().unwrap_or(false));
        if groups_before > 0 && groups.is_empty() {
            emptied_events.push(event.clone());
        }
    }
    let events_before = hooks.len();
    for event in &emptied_events {
        hooks.remove(event);
    }
    if events_before > 0 && hooks.is_empty() {
        settings
            .as_object_mut()
            .map(|object| object.remove("hooks"));
    }
    removed
}

/// Adds our handlers, into an existing group with the same matcher when there is one.
pub fn add_ours(settings: &mut Value, bin_dir: &Path, auto_resume: bool) {
    let object = settings
        .as_object_mut()
        .expect("settings checked to be an object");
    let hooks = object.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    let hooks = hooks.as_object_mut().expect("just made an object");
    for registration in registrations(auto_resume) {
        let mut handler = json!({
            "type": "command",
            "command": registration.command(&shell_quote(&bin_dir.join(registration.binary))),
            "timeout": registration.timeout,
        });
        if registration.async_rewake {
            handler["asyncRewake"] = json!(true);
        }
        let groups = hooks.entry(registration.event).or_insert_with(|| json!([]));
        if !groups.is_array() {
            *groups = json!([]);
        }
        let groups = groups.as_array_mut().expect("just made an array");
        let same_matcher = groups.iter_mut().find(|group| {
            group
                .get("matcher")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                == registration.matcher
                && group.get("hooks").is_some_and(Value::is_array)
        });
        match same_matcher {
            Some(group) => group["hooks"]
                .as_array_mut()
                .expect("checked array")
                .push(handler),
            None => {
                let mut group = Map::new();
                if let Some(matcher) = registration.matcher {
                    group.insert("matcher".into(), json!(matcher));
                }
                group.insert("hooks".into(), json!([handler]));
                groups.push(Value::Object(group));
            }
        }
    }
}

/// Whether a `statusLine` setting runs our `ralph-hooks statusline`.
fn is_our_statusline(value: &Value) -> bool {
    value
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| {
            // `'/a b/ralph-hooks' statusline`: the program may be quoted.
            let Some(program) = command.trim().strip_suffix(" statusline") else {
                return false;
            };
            let program = program.trim().trim_matches(['\'', '"']);
            program.rsplit('/').next() == Some("ralph-hooks")
        })
}

/// Adds our status line, never replacing one the user already has; says
/// what it did.
pub fn add_statusline(settings: &mut Value, bin_dir: &Path) -> String {
    let object = settings
        .as_object_mut()
        .expect("settings checked to be an object");
    let command = format!("{} statusline", shell_quote(&bin_dir.join("ralph-hooks")));
    match object.get("statusLine") {
        Some(existing) if !is_our_statusline(existing) => format!(
            "Status line: left yours alone ({}). To use ralph-hooks' instead, set \"statusLine\": {{\"type\": \"command\", \"command\": \"{command}\"}}.",
            existing
                .get("command")
                .and_then(Value::as_str)
                .map(|c| format!("command {c:?}"))
                .unwrap_or_else(|| existing.to_string())
        ),
        _ => {
            object.insert(
                "statusLine".into(),
                json!({"type": "command", "command": command, "padding": 0}),
            );
            "Status line: `ralph-hooks statusline` shows the loop and the task at the bottom of Claude Code.".into()
        }
    }
}

/// Removes our status line (not the user's); true when there was one.
pub fn remove_statusline(settings: &mut Value) -> bool {
    let Some(object) = settings.as_object_mut() else {
        return false;
    };
    if object.get("statusLine").is_some_and(is_our_statusline) {
        object.remove("statusLine");
        return true;
    }
    false
}

/// Quotes a path for the `sh -c` that Claude Code runs a command through,
/// only when it needs it.
pub fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn install_commands(
    project: &Path,
    cli: &str,
    sandbox: bool,
    written: &dyn Fn(usize),
) -> anyhow::Result<usize> {
    let mut changed = 0;
    let dir = project.join(".claude").join("commands");
    for (done, (name, text)) in COMMANDS.iter().enumerate() {
        written(done);
        let text = SANDBOX_COMMANDS
            .iter()
            .find(|(sandboxed, _)| sandbox && sandboxed == name)
            .map_or(*text, |(_, sandboxed)| *sandboxed);
        let path = dir.join(name);
        if let Ok(Some(existing)) = fsread::read_text(&path, limits::DOCUMENT, Links::Follow) {
            let why = match super::command_files::owner(&existing) {
                Owner::User => "exists and is not ours",
                Owner::Edited => "was edited after install (delete it to get ours back)",
                Owner::Ours => "",
            };
            if !why.is_empty() {
                eprintln!(
                    "ralph-hooks: warning: {} {why}; left it alone",
                    path.display()
                );
                continue;
            }
        }
        let body = super::command_files::stamped(&text.replace("ralph-hooks ", &format!("{cli} ")));
        if std::fs::read(&path).is_ok_and(|existing| existing == body.as_bytes()) {
            continue;
        }
        write_atomic(&path, body.as_bytes())?;
        changed += 1;
    }
    Ok(changed)
}

pub(super) fn remove_commands(project: &Path) -> anyhow::Result<usize> {
    let dir = project.join(".claude").join("commands");
    let mut removed = 0;
    for (name, _) in COMMANDS {
        let path = dir.join(name);
        let Ok(Some(text)) = fsread::read_text(&path, limits::DOCUMENT, Links::Follow) else {
            continue;
        };
        match super::command_files::owner(&text) {
            Owner::Ours => {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
                removed += 1;
            }
            Owner::Edited => println!(
                "Kept {}: it was edited after install (delete it by hand if it should go).",
                path.display()
            ),
            Owner::User => {}
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_idempotent_and_uninstall_exact() {
        let original = json!({
            "model": "x",
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/usr/bin/other-stop"}]}]},
            "permissions": {"allow": ["Bash(ls)"]}
        });
        let mut settings = original.clone();
        add_ours(&mut settings, Path::new("/opt/bin"), false);
        let once = settings.clone();
        remove_ours(&mut settings);
        add_ours(&mut settings, Path::new("/opt/bin"), false);
        assert_eq!(settings, once);
        let stop_handlers = settings["hooks"]["Stop"][0]["hooks"].as_array().unwrap();
        assert_eq!(stop_handlers.len(), 3, "{stop_handlers:?}");
        assert_eq!(
            stop_handlers[2],
            json!({"type": "command", "command": "/opt/bin/ralph-stop-loop-controller --rewake",
                   "timeout": 1800, "asyncRewake": true})
        );
        remove_ours(&mut settings);
        assert_eq!(settings, original);
    }

    #[test]
    fn statusline_never_replaces_the_users() {
        let mut settings = json!({"statusLine": {"type": "command", "command": "~/my-line.sh"}});
        let note = add_statusline(&mut settings, Path::new("/opt/bin"));
        assert!(note.contains("left yours alone"), "{note}");
        assert_eq!(settings["statusLine"]["command"], "~/my-line.sh");
        assert!(!remove_statusline(&mut settings));

        let mut settings = json!({});
        add_statusline(&mut settings, Path::new("/opt/bin"));
        assert_eq!(
            settings["statusLine"]["command"],
            "/opt/bin/ralph-hooks statusline"
        );
        let again = settings.clone();
        add_statusline(&mut settings, Path::new("/opt/bin"));
        assert_eq!(settings, again);
        assert!(remove_statusline(&mut settings));
        assert_eq!(settings, json!({}));

        // Installed from a folder with a space: still ours, replaced in place.
        let mut settings = json!({});
        add_statusline(&mut settings, Path::new("/opt/my tools"));
        assert_eq!(
            settings["statusLine"]["command"],
            "'/opt/my tools/ralph-hooks' statusline"
        );
        let note = add_statusline(&mut settings, Path::new("/opt/bin"));
        assert!(!note.contains("left yours alone"), "{note}");
        assert!(remove_statusline(&mut settings));
    }

    #[test]
    fn quoting_only_when_needed() {
        assert_eq!(shell_quote(Path::new("/a/b-c")), "/a/b-c");
        assert_eq!(shell_quote(Path::new("/a b/c")), "'/a b/c'");
        assert!(is_ours(
            &json!({"command": "'/a b/ralph-stop-loop-controller'"})
        ));
        assert!(is_ours(
            &json!({"command": "'/a b/ralph-stop-loop-controller' --rewake"})
        ));
        assert!(is_ours(
            &json!({"command": "/opt/ralph-stop-loop-controller --rewake"})
        ));
        assert!(!is_ours(&json!({"command": "/opt/my-stop --rewake"})));
    }
}
