//! The plugin route as `ralph-hooks install` and `doctor` see it: with the
//! ralph-hooks plugin enabled (in Claude Code's settings, installed where
//! `installed_plugins.json` says), install refuses to register the hooks a
//! second time and changes nothing; doctor names the active route, and a
//! project registered both ways is a problem. The files are laid out as
//! Claude Code 2.1.332 writes them (`claude plugin install --scope project`);
//! the real CLI does the same in the e2e scenario `plugin-route-loop-completes`.

use std::path::Path;
use std::process::Output;

use serde_json::json;

use crate::util::{self, TempDir};

const PLUGIN_ID: &str = "ralph-hooks@ralph-hooks";

/// A HOME whose Claude Code has the repository's plugin (hooks-config/)
/// installed for `project`, and `project`'s settings enabling it (`enabled`).
fn install_plugin(home: &Path, project: &Path, enabled: bool) {
    let cache = home.join(".claude/plugins/cache/ralph-hooks/ralph-hooks/0.1.0");
    util::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("hooks-config"),
        &cache,
    );
    let installed = json!({"version": 2, "plugins": {PLUGIN_ID: [{
        "scope": "project", "projectPath": project, "installPath": cache, "version": "0.1.0",
        "installedAt": "2026-11-25T20:38:50.227Z", "lastUpdated": "2026-11-25T20:38:50.227Z"}]}});
    std::fs::write(
        home.join(".claude/plugins/installed_plugins.json"),
        serde_json::to_string_pretty(&installed).unwrap(),
    )
    .unwrap();
    let settings = json!({
        "extraKnownMarketplaces": {"ralph-hooks": {"source": {"source": "directory", "path": "/src/ralph-hooks"}}},
        "enabledPlugins": {PLUGIN_ID: enabled}
    });
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
}

fn cli(home: &Path, project: &Path, args: &[&str]) -> Output {
    let mut command = util::command("ralph-hooks", project);
    // The repository's plugin runs the hooks by name: on PATH, as doctor checks.
    let bin_dir = util::bin("ralph-hooks").parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    command.env("HOME", home).env("PATH", path).args(args);
    util::run_with_stdin(command, b"")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn install_refuses_to_register_the_hooks_a_plugin_already_runs() {
    let temp = TempDir::new("plugin-route-install");
    let (home, project) = (temp.path().join("home"), temp.path().join("project"));
    std::fs::create_dir_all(&project).unwrap();
    install_plugin(&home, &project, true);
    let before = std::fs::read(project.join(".claude/settings.json")).unwrap();

    let output = cli(
        &home,
        &project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("refusing to register"), "{stderr}");
    assert!(stderr.contains(PLUGIN_ID), "{stderr}");
    assert!(
        stderr.contains("claude plugin uninstall ralph-hooks@ralph-hooks"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(project.join(".claude/settings.json")).unwrap(),
        before,
        "a refused install changed the settings"
    );
    assert!(
        !project.join(".claude/commands").exists(),
        "a refused install wrote slash commands"
    );

    // Disabled (`claude plugin disable`): the plugin's hooks do not run, so
    // install registers its own.
    install_plugin(&home, &project, false);
    let output = cli(
        &home,
        &project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let settings = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains("ralph-stop-loop-controller"),
        "{settings}"
    );
}

#[test]
fn doctor_names_the_active_route_and_flags_hooks_registered_twice() {
    let temp = TempDir::new("plugin-route-doctor");
    let (home, project) = (temp.path().join("home"), temp.path().join("project"));
    std::fs::create_dir_all(&project).unwrap();
    install_plugin(&home, &project, true);

    let output = cli(&home, &project, &["doctor"]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(&format!("ok    plugin: the plugin {PLUGIN_ID}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("none (the plugin registers them"),
        "the plugin's hooks were reported missing:\n{stdout}"
    );
    assert!(!stdout.contains("MISSING Stop"), "{stdout}");

    // Registered both ways (install run before the plugin was enabled).
    install_plugin(&home, &project, false);
    let output = cli(
        &home,
        &project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mut settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    settings["enabledPlugins"][PLUGIN_ID] = json!(true);
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    let output = cli(&home, &project, &["doctor"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("PROBLEM registered twice"), "{stdout}");

    // Only `ralph-hooks install`: that route, and no plugin.
    settings["enabledPlugins"][PLUGIN_ID] = json!(false);
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    let stdout = text(&cli(&home, &project, &["doctor"]).stdout);
    assert!(
        stdout.contains("ok    `ralph-hooks install`: the hooks are registered in"),
        "{stdout}"
    );
}
