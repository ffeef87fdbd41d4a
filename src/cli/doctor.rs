//! `ralph-hooks doctor`: what is installed, where, and whether it is wired up.

use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use super::install::{self, HOOK_BINARIES, REGISTRATIONS};
use super::plugin_route::{self, ActivePlugin};
use crate::hook::ctx::Ctx;
use crate::ralph::loop_state::{LOOP_FILE, LoopState};
use crate::util::fsread::{self, Links, limits};

pub fn run(ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let mut problems = 0;
    println!("ralph-hooks {}", env!("CARGO_PKG_VERSION"));
    println!("project:    {}", ctx.project_root.display());
    println!("state root: {}", ctx.state_root.display());

    println!("\nbinaries:");
    let bin_dir = install::binary_dir().ok();
    for name in std::iter::once("ralph-hooks").chain(HOOK_BINARIES.iter().copied()) {
        let beside = bin_dir
            .as_ref()
            .map(|dir| dir.join(name))
            .filter(|p| p.is_file());
        let on_path = which::which(name).ok();
        match (beside, on_path) {
            (_, Some(path)) => println!("  ok    {name:<32} {}", path.display()),
            (Some(path), None) => println!("  ok    {name:<32} {} (not on PATH)", path.display()),
            (None, None) => {
                problems += 1;
                println!(
                    "  MISSING {name}: run `cargo install --path .` in the ralph-hooks checkout"
                );
            }
        }
    }

    let settings_path = ctx.project_root.join(".claude").join("settings.json");
    let plugins = plugin_route::active_plugins(&ctx.project_root);
    let settings: Option<Value> = fsread::read_text(&settings_path, limits::CONFIG, Links::Follow)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok());
    let registered_directly = settings
        .as_ref()
        .is_some_and(|s| REGISTRATIONS.iter().any(|r| find_handler(s, r).is_some()));
    problems += route_section(&plugins, registered_directly, &settings_path);
    for (file, count) in registered_elsewhere(&ctx.project_root) {
        if registered_directly || !plugins.is_empty() {
            problems += 1;
            println!(
                "  PROBLEM registered twice: {count} of our hook handler(s) also in {}; Claude Code merges the files, so those hooks run twice (and each stop counts two iterations). Remove one set",
                file.display()
            );
        } else {
            println!(
                "  --    {count} of our hook handler(s) in {} (install and uninstall manage only {})",
                file.display(),
                settings_path.display()
            );
        }
    }
    if let Some(why) = super::install_checks::watch_folder_problem(&ctx.state_root) {
        problems += 1;
        println!(
            "  PROBLEM the guard's watch folder: {why}; the guard then checks no Bash command (set XDG_STATE_HOME to a writable folder)"
        );
    }
    if let Some(file) = hooks_disabled_by(&ctx.project_root) {
        problems += 1;
        println!(
            "  PROBLEM `disableAllHooks` is true in {}: Claude Code runs no hook at all, so no loop is enforced and no command is checked",
            file.display()
        );
    }
    println!("\nhooks in {}:", settings_path.display());
    // On the plugin route the hooks are the plugin's, not in settings.json.
    let plugin_route = !plugins.is_empty() && !registered_directly;
    if plugin_route {
        println!("  none (the plugin registers them: see \"route\" above)");
    }
    for registration in REGISTRATIONS.iter().filter(|_| !plugin_route) {
        let found = settings
            .as_ref()
            .and_then(|s| find_handler(s, registration));
        match found {
            Some(command) => {
                let program = install::program_of(&command);
                let exists =
                    std::path::Path::new(&program).is_file() || which::which(&program).is_ok();
                if !exists {
                    problems += 1;
                }
                println!(
                    "  {} {:<13} {command}{}",
                    if exists { "ok   " } else { "BROKEN" },
                    registration.event,
                    if exists {
                        ""
                    } else {
                        " (no such file: re-run `ralph-hooks install`)"
                    }
                );
            }
            None => {
                problems += 1;
                println!(
                    "  MISSING {:<13} {} (run `ralph-hooks install`)",
                    registration.event,
                    registration.command(registration.binary)
                );
            }
        }
    }

    println!("\nsandbox mode:");
    problems += sandbox_section(ctx, settings.as_ref());
    problems += super::harness_install::doctor_section(&ctx.project_root);
    for (command, file) in unguarded_hook_scripts(ctx) {
        println!(
            "  WARN  a hook of yours runs {}, project code the agent can change (`{}`): Claude Code runs it outside every sandbox. Move it into .claude/hooks/ or list it in guard.protected",
            crate::util::text::escape_controls(&file),
            crate::util::text::escape_controls(&command)
        );
    }

    println!("\nloop:");
    match ctx.store().read_json::<LoopState>(LOOP_FILE) {
        Ok(None) => println!("  none"),
        Ok(Some(state)) => println!(
            "  {} {} iteration {}/{}: {}",
            state.id,
            state.status.as_str(),
            state.iteration,
            state.max_iterations,
            state.goal
        ),
        Err(error) => {
            problems += 1;
            println!("  UNREADABLE: {error:#}");
        }
    }
    let config = ctx.config();
    println!(
        "\nconfig: {}",
        config
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "none (defaults)".into())
    );
    println!("\ndiagnostics:");
    // Server names, commands and paths come from a repository's
    // `.lsp.json`: escaped for the terminal (engine attack E-17).
    for line in crate::diagnostics::doctor_lines(ctx) {
        println!("  {}", crate::util::text::escape_controls(&line));
    }
    println!("\ndaemon:");
    for line in super::daemon::doctor_lines(ctx) {
        println!("  {}", crate::util::text::escape_controls(&line));
    }
    println!("\ntelemetry:");
    for line in crate::telemetry::status::lines(ctx) {
        println!("  {line}");
    }
    println!(
        "\n{}",
        if problems == 0 {
            "All good.".to_string()
        } else {
            format!("{problems} problem(s) found.")
        }
    );
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Which route registers the hooks: `ralph-hooks install` (settings.json), an
/// enabled plugin, or both (a problem: every hook would run twice).
fn route_section(plugins: &[ActivePlugin], registered_directly: bool, settings: &Path) -> usize {
    println!("\nroute:");
    match (plugins.is_empty(), registered_directly) {
        (true, true) => println!(
            "  ok    `ralph-hooks install`: the hooks are registered in {}",
            settings.display()
        ),
        (true, false) => println!(
            "  --    no route active: no hooks in {} and no enabled ralph-hooks plugin",
            settings.display()
        ),
        (false, false) => {
            let mut problems = 0;
            for plugin in plugins {
                let broken = broken_plugin_commands(plugin, &|name| which::which(name).is_ok());
                if broken.is_empty() {
                    println!("  ok    plugin: {}", plugin.describe());
                } else {
                    problems += 1;
                    println!(
                        "  PROBLEM plugin: {}: its hooks cannot run, so no loop is enforced and no command is checked: {}",
                        plugin.describe(),
                        broken.join("; ")
                    );
                }
            }
            return problems;
        }
        (false, true) => {
            for plugin in plugins {
                println!(
                    "  PROBLEM registered twice: in {} and by {}; every hook runs twice. Remove one: `ralph-hooks install --uninstall`, or `{}`",
                    settings.display(),
                    plugin.describe(),
                    plugin.uninstall_command()
                );
            }
            return 1;
        }
    }
    0
}

/// The other settings files Claude Code merges with `.claude/settings.json`
/// (the project's local file, the user's) that register hooks of ours, and
/// how many.
fn registered_elsewhere(project: &Path) -> Vec<(std::path::PathBuf, usize)> {
    let mut files = vec![project.join(".claude/settings.local.json")];
    if let Some(config) = plugin_route::claude_config_dir() {
        files.push(config.join("settings.json"));
    }
    files
        .into_iter()
        .filter_map(|file| {
            let text = fsread::read_text(&file, limits::CONFIG, Links::Follow).ok()??;
            let settings = serde_json::from_str::<Value>(&text).ok()?;
            let count = settings
                .get("hooks")?
                .as_object()?
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .filter_map(|group| group.get("hooks").and_then(Value::as_array))
                .flatten()
                .filter(|handler| install::is_ours(handler))
                .count();
            (count > 0).then_some((file, count))
        })
        .collect()
}

/// The settings file whose `"disableAllHooks": true` switches every hook
/// off, if any: the first level that sets the key decides (managed, then
/// the project's local and shared files, then the user's), as Claude Code
/// merges them.
fn hooks_disabled_by(project: &Path) -> Option<std::path::PathBuf> {
    let mut levels = vec![
        std::path::PathBuf::from("/etc/claude-code/managed-settings.json"),
        project.join(".claude/settings.local.json"),
        project.join(".claude/settings.json"),
    ];
    if let Some(config) = plugin_route::claude_config_dir() {
        levels.push(config.join("settings.json"));
    }
    for file in levels {
        let Ok(Some(text)) = fsread::read_text(&file, limits::CONFIG, Links::Follow) else {
            continue;
        };
        let Ok(settings) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        match settings.get("disableAllHooks").and_then(Value::as_bool) {
            Some(true) => return Some(file),
            Some(false) => return None,
            None => {}
        }
    }
    None
}

/// What keeps an active plugin's hooks from running: its files gone, no
/// hook of ours found in them, or a hook program that is not there (a path
/// under `${CLAUDE_PLUGIN_ROOT}` that is missing or not executable, or a
/// bare name `on_path` cannot find, as `sh -c` would not with this PATH).
fn broken_plugin_commands(plugin: &ActivePlugin, on_path: &dyn Fn(&str) -> bool) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let Some(root) = &plugin.install_path else {
        return Vec::new();
    };
    if !root.is_dir() {
        return vec![format!("its folder {} is gone", root.display())];
    }
    if plugin.hook_commands.is_empty() {
        return vec!["no hook of ours found in its files".to_string()];
    }
    let mut broken: Vec<String> = Vec::new();
    for command in &plugin.hook_commands {
        let program =
            install::program_of(command).replace("${CLAUDE_PLUGIN_ROOT}", &root.to_string_lossy());
        let runs = if program.contains('/') {
            std::fs::metadata(&program)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        } else {
            on_path(&program)
        };
        let why = if runs {
            continue;
        } else if program.contains('/') {
            format!("{program} is missing or not executable")
        } else {
            format!("{program} is not on PATH")
        };
        if !broken.contains(&why) {
            broken.push(why);
        }
    }
    broken
}

/// The command of the handler that is this registration: our binary, with
/// its argument (or none) and its `asyncRewake`.
fn find_handler(settings: &Value, registration: &install::Registration) -> Option<String> {
    settings
        .get("hooks")?
        .get(registration.event)?
        .as_array()?
        .iter()
        .find_map(|group| {
            group.get("hooks")?.as_array()?.iter().find_map(|handler| {
                let command = handler.get("command")?.as_str()?;
                let program = install::program_of(command);
                let name = program.rsplit('/').next()?;
                let arg = command
                    .trim()
                    .strip_suffix(registration.arg.unwrap_or("\u{0}"))
                    .is_some();
                let async_rewake =
                    handler.get("asyncRewake").and_then(Value::as_bool) == Some(true);
                (name == registration.binary
                    && arg == registration.arg.is_some()
                    && async_rewake == registration.async_rewake)
                    .then(|| command.to_string())
            })
        })
}

/// Whether sandbox mode is available, on and sound; the problems found. Off
/// is a problem only when it was installed (its record exists) or the
/// settings turn the sandbox on without what makes it hold.
fn sandbox_section(ctx: &Ctx, settings: Option<&Value>) -> usize {
    let installed = crate::hook::sandbox::installed(ctx);
    let available = super::sandbox::availability();
    match &available {
        Ok(what) => println!("  ok    available here: {what}"),
        Err(why) => println!("  --    not available here: {why}"),
    }
    let walls = crate::util::confine::bwrap().is_some();
    let mut problems = 0;
    match (walls, installed) {
        (true, true) => println!(
            "  ok    the loop's checks and every language server (the project's own in node_modules/.bin and .venv/bin included) run inside bubblewrap: system read-only, project writable, no network"
        ),
        (true, false) => println!(
            "  ok    the loop's checks run inside bubblewrap (system read-only, no network); language servers do not: one in the project's node_modules/.bin or .venv/bin is project code run as you (sandbox mode walls them in)"
        ),
        (false, true) => {
            problems += 1;
            println!(
                "  PROBLEM bubblewrap cannot build a sandbox here: in sandbox mode the loop's checks do not run and language servers do not start"
            );
        }
        (false, false) => println!(
            "  --    no usable bubblewrap: the loop's checks run as you (a loop they change is put back) and so do language servers from the project (node_modules/.bin, .venv/bin)"
        ),
    }
    let empty = Value::Object(Default::default());
    let settings = settings.unwrap_or(&empty);
    let enabled = settings
        .get("sandbox")
        .and_then(|s| s.get("enabled"))
        .and_then(Value::as_bool)
        == Some(true);
    if !installed && !enabled {
        match available {
            Ok(_) => println!(
                "  --    off. Recommended for unattended loops: `ralph-hooks install --sandbox` makes the loop's state, the hooks' config and registrations read-only to every Bash command"
            ),
            Err(_) => println!(
                "  --    off: the hook guard alone keeps the loop (see docs/guard-modes.md)"
            ),
        }
        return problems;
    }
    if installed && available.is_err() {
        problems += 1;
        println!(
            "  PROBLEM installed, but Claude Code cannot run its sandbox here, and `failIfUnavailable` stops the session"
        );
    }
    let state_root = install::state_root_for_settings(ctx);
    for finding in super::sandbox::assess(settings, &state_root) {
        if finding.problem {
            problems += 1;
            println!("  PROBLEM {}", finding.text);
        } else {
            println!("  ok    {}", finding.text);
        }
    }
    problems
}

/// Files in the project that a hook (or the status line) registered in
/// Claude Code's settings runs, outside the protected set: Claude Code runs
/// them outside its sandbox, and the agent can rewrite them (sandbox attack
/// T-2 was a script in `.claude/hooks/`, now protected). Only words of the
/// command that name an existing file are seen; `npm run lint` and `make`
/// run project code this cannot name. Returns (command, file) pairs.
fn unguarded_hook_scripts(ctx: &Ctx) -> Vec<(String, String)> {
    let project = &ctx.project_root;
    let settings_files = plugin_route::claude_config_dir()
        .map(|dir| dir.join("settings.json"))
        .into_iter()
        .chain([
            project.join(".claude/settings.json"),
            project.join(".claude/settings.local.json"),
        ]);
    let mut commands: Vec<String> = Vec::new();
    for file in settings_files {
        let Some(value) = plugin_route::read_json(&file) else {
            continue;
        };
        if let Some(events) = value.get("hooks").and_then(Value::as_object) {
            for groups in events.values().filter_map(Value::as_array) {
                for group in groups {
                    for hook in group
                        .get("hooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        commands.extend(
                            hook.get("command")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                        );
                    }
                }
            }
        }
        commands.extend(
            value
                .pointer("/statusLine/command")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
    }
    let Ok(root) = std::fs::canonicalize(project) else {
        return Vec::new();
    };
    let protected = crate::guards::GuardConfig::load(project).protected_set(ctx);
    let root_text = project.to_string_lossy();
    let mut found = Vec::new();
    for command in commands {
        for word in command.split_whitespace() {
            // Quotes as a shell removes them (`"$CLAUDE_PROJECT_DIR"/x.sh`).
            let word = word
                .replace(['"', '\'', ';'], "")
                .replace("${CLAUDE_PROJECT_DIR}", &root_text)
                .replace("$CLAUDE_PROJECT_DIR", &root_text);
            if word.is_empty() || word.starts_with('-') || word.contains('$') {
                continue;
            }
            let path = project.join(word);
            let inside = std::fs::canonicalize(&path)
                .is_ok_and(|real| real.starts_with(&root) && real.is_file());
            if inside && protected.hit(&path).is_none() {
                let shown = path
                    .strip_prefix(project)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                if !found
                    .iter()
                    .any(|(_, file): &(String, String)| *file == shown)
                {
                    found.push((command.clone(), shown));
                }
            }
        }
    }
    found
}
