//! `ralph-hooks install`, `--uninstall` and `doctor` on a real project folder.

use serde_json::{Value, json};

use crate::util::{self, TempDir};

fn settings(project: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(project.join(".claude/settings.json")).unwrap())
        .unwrap()
}

fn run(project: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    util::run_with_stdin(command, b"")
}

#[test]
fn install_merges_is_idempotent_and_uninstalls_exactly() {
    let temp = TempDir::new("install");
    let project = temp.path();
    let original = json!({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "/usr/local/bin/notify-done"}]}],
            "PostToolUse": [{"matcher": "Write|Edit|MultiEdit|Bash", "hooks": [{"type": "command", "command": "prettier-hook"}]}]
        },
        "zz_last_key": true
    });
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_string_pretty(&original).unwrap(),
    )
    .unwrap();

    let output = run(
        project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let installed = settings(project);
    let text = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    assert!(
        text.find("permissions").unwrap() < text.find("zz_last_key").unwrap(),
        "key order changed:\n{text}"
    );
    assert_eq!(installed["permissions"], original["permissions"]);
    let stop = installed["hooks"]["Stop"][0]["hooks"].as_array().unwrap();
    assert_eq!(
        stop[0]["command"], "/usr/local/bin/notify-done",
        "the user's hook moved or vanished"
    );
    let ours = stop[1]["command"].as_str().unwrap();
    assert!(
        ours.starts_with('/') && ours.ends_with("/ralph-stop-loop-controller"),
        "{ours}"
    );
    assert!(std::path::Path::new(ours).is_file());
    // Our PostToolUse handler joins the user's group with the same matcher.
    assert_eq!(
        installed["hooks"]["PostToolUse"].as_array().unwrap().len(),
        1
    );
    assert_eq!(
        installed["hooks"]["PostToolUse"][0]["hooks"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    for event in ["SessionStart", "PreToolUse", "SubagentStop"] {
        assert!(
            installed["hooks"][event].is_array(),
            "{event} not registered"
        );
    }
    for command in ["ralph-loop.md", "cancel-loop.md", "loop-status.md"] {
        let text = std::fs::read_to_string(project.join(".claude/commands").join(command)).unwrap();
        assert!(
            text.contains("/ralph-hooks loop "),
            "{command} does not call the installed CLI by path:\n{text}"
        );
    }

    let output = run(
        project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert!(output.status.success());
    assert_eq!(
        settings(project),
        installed,
        "a second install changed the settings"
    );

    let doctor = run(project, &["doctor", "--project", project.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor.status.success(),
        "doctor found problems after install:\n{report}"
    );
    assert!(report.contains("All good."), "{report}");

    let output = run(
        project,
        &[
            "install",
            "--project",
            project.to_str().unwrap(),
            "--uninstall",
        ],
    );
    assert!(output.status.success());
    assert_eq!(
        settings(project),
        original,
        "uninstall did not restore the user's settings"
    );
    assert!(!project.join(".claude/commands/ralph-loop.md").exists());
}

#[test]
fn install_refuses_to_overwrite_broken_settings() {
    let temp = TempDir::new("install-broken");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/settings.json"), "{ \"hooks\": [ oops").unwrap();
    let output = run(
        project,
        &["install", "--project", project.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not valid JSON"));
    assert_eq!(
        std::fs::read_to_string(project.join(".claude/settings.json")).unwrap(),
        "{ \"hooks\": [ oops"
    );
}

#[test]
fn doctor_reports_missing_registration() {
    let temp = TempDir::new("doctor");
    let output = run(temp.path(), &["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("MISSING Stop"), "{report}");
    assert!(report.contains("run `ralph-hooks install`"), "{report}");
}

#[test]
fn install_makes_git_ignore_the_state_root_and_leaves_the_projects_gitignore() {
    let temp = TempDir::new("install-ignore");
    let project = temp.path();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    git(&["init", "-q"]);
    std::fs::write(project.join("app.py"), "x = 1\n").unwrap();
    let output = run(project, &["install"]);
    assert!(output.status.success(), "{output:?}");
    let state = project.join(".claude/orchestrator");
    assert!(state.join(".gitignore").is_file());
    assert!(!project.join(".gitignore").exists());
    // State the hooks write later stays out of `git add -A`.
    std::fs::write(state.join("loop.json"), "{}").unwrap();
    git(&["add", "-A"]);
    let staged = git(&["diff", "--cached", "--name-only"]);
    assert!(staged.contains("app.py"), "{staged}");
    assert!(!staged.contains(".claude/orchestrator"), "{staged}");
    // Running install again leaves the file as it is.
    std::fs::write(state.join(".gitignore"), "*\n# mine\n").unwrap();
    assert!(run(project, &["install"]).status.success());
    assert_eq!(
        std::fs::read_to_string(state.join(".gitignore")).unwrap(),
        "*\n# mine\n"
    );
}

/// Whether Claude Code's sandbox could run here; the tests that need it
/// skip (saying why) without it, unless RALPH_HOOKS_REQUIRE_SERVERS=1.
fn sandbox_tools() -> bool {
    util::require_tool("bwrap", "the sandbox-mode tests (Debian: bubblewrap)").is_some()
        && util::require_tool("socat", "the sandbox-mode tests (Debian: socat)").is_some()
}

#[test]
fn install_sandbox_merges_is_idempotent_and_uninstalls_exactly() {
    if !sandbox_tools() {
        return;
    }
    let temp = TempDir::new("install-sandbox");
    let project = temp.path();
    let original = json!({
        "permissions": {"deny": ["Read(./.env)"]},
        "sandbox": {"filesystem": {"denyWrite": ["./secrets"]}, "autoAllowBashIfSandboxed": false},
        "zz_last_key": true
    });
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        serde_json::to_string_pretty(&original).unwrap(),
    )
    .unwrap();
    let dir = project.to_str().unwrap();

    let output = run(project, &["install", "--project", dir, "--sandbox"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("Sandbox mode"), "{stdout}");
    let installed = settings(project);
    let sandbox = &installed["sandbox"];
    assert_eq!(sandbox["enabled"], true);
    assert_eq!(sandbox["allowUnsandboxedCommands"], false);
    assert_eq!(sandbox["failIfUnavailable"], true);
    assert_eq!(
        sandbox["autoAllowBashIfSandboxed"], false,
        "the user's choice stays"
    );
    let deny_write = sandbox["filesystem"]["denyWrite"].as_array().unwrap();
    for path in [
        "./secrets",
        "./.claude/orchestrator",
        "./.claude/ralph-hooks.json",
        "./.lsp.json",
        "./.claude/settings.json",
        "./.claude/settings.local.json",
        "./.claude/skills",
        "./.claude/commands",
        "./.claude/agents",
        "./.claude/hooks",
        "./.mcp.json",
    ] {
        assert!(
            deny_write.contains(&json!(path)),
            "{path} not read-only: {deny_write:?}"
        );
    }
    let deny = installed["permissions"]["deny"].as_array().unwrap();
    for tool in ["Write", "Edit", "MultiEdit", "NotebookEdit"] {
        for place in [
            "./.claude/orchestrator/**",
            "./.claude/skills/**",
            "./.claude/settings.json",
            // What Claude Code runs outside its sandbox (sandbox attacks
            // T-1, T-2).
            "./.claude/hooks/**",
            "./.mcp.json",
        ] {
            let rule = format!("{tool}({place})");
            assert!(deny.contains(&json!(rule)), "{rule} missing: {deny:?}");
        }
    }
    assert_eq!(deny[0], "Read(./.env)", "the user's rule stays first");
    assert!(
        installed["hooks"]["Stop"].is_array(),
        "the hooks are registered too"
    );
    assert!(project.join(".claude/orchestrator/sandbox.json").is_file());
    // The user's loop controls are carried out by the prompt hook: their
    // `!` lines only read.
    let ralph_loop =
        std::fs::read_to_string(project.join(".claude/commands/ralph-loop.md")).unwrap();
    assert!(
        ralph_loop.contains("loop status`") && !ralph_loop.contains("loop start"),
        "{ralph_loop}"
    );

    let doctor = run(project, &["doctor", "--project", dir]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success(), "doctor found problems:\n{report}");
    assert!(
        report.contains("on: every Bash command runs in Claude Code's sandbox"),
        "{report}"
    );

    // Again, with or without --sandbox: nothing changes, sandbox mode stays.
    for args in [
        &["install", "--project", dir, "--sandbox"][..],
        &["install", "--project", dir],
    ] {
        let output = run(project, args);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(
            settings(project),
            installed,
            "{args:?} changed the settings"
        );
    }

    let output = run(project, &["install", "--project", dir, "--uninstall"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        settings(project),
        original,
        "uninstall did not restore the user's settings"
    );
    assert!(!project.join(".claude/orchestrator/sandbox.json").exists());
    assert!(!project.join(".claude/commands/ralph-loop.md").exists());
}

#[test]
fn install_sandbox_refuses_where_the_sandbox_cannot_run() {
    let temp = TempDir::new("install-sandbox-missing");
    let project = temp.path();
    let mut command = util::command("ralph-hooks", project);
    // No bubblewrap on this PATH.
    command.env("PATH", project).args(["install", "--sandbox"]);
    let output = util::run_with_stdin(command, b"");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bubblewrap") && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    assert!(!project.join(".claude/settings.json").exists());
}

#[test]
fn doctor_names_each_door_out_of_the_sandbox() {
    let temp = TempDir::new("doctor-sandbox");
    let project = temp.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"sandbox": {"enabled": true, "allowUnsandboxedCommands": true,
                           "excludedCommands": ["docker", "python3"],
                           "filesystem": {"denyWrite": ["./.claude/orchestrator"]}}})
        .to_string(),
    )
    .unwrap();
    let output = run(project, &["doctor"]);
    assert_eq!(output.status.code(), Some(1));
    let report = String::from_utf8_lossy(&output.stdout);
    let section = report
        .split("sandbox mode:")
        .nth(1)
        .and_then(|rest| rest.split("\nloop:").next())
        .unwrap_or_default();
    for door in [
        "PROBLEM allowUnsandboxedCommands is not false",
        "PROBLEM excludedCommands run outside the sandbox and can write the state: docker, python3",
        "PROBLEM writable from Bash (not in sandbox.filesystem.denyWrite): .claude/ralph-hooks.json",
        "PROBLEM missing permission deny rules: Write(./.claude/orchestrator/**)",
    ] {
        assert!(section.contains(door), "{door:?} not in:\n{section}");
    }
}

/// Runs `name` with `args` as Claude Code's sandbox would: the whole
/// system as it is, the state root read-only.
fn in_read_only_state(
    project: &std::path::Path,
    name: &str,
    args: &[&str],
) -> std::process::Output {
    let base = util::command(name, project);
    let state = project.join(".claude/orchestrator");
    let mut command = std::process::Command::new("bwrap");
    command
        .args(["--dev-bind", "/", "/", "--ro-bind"])
        .arg(&state)
        .arg(&state)
        .arg("--")
        .arg(base.get_program())
        .args(args)
        .current_dir(project);
    for (key, value) in base.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    util::run_with_stdin(command, b"")
}

#[test]
fn inside_the_sandbox_task_steps_go_through_the_hooks_and_loop_control_is_refused() {
    if !sandbox_tools() {
        return;
    }
    let temp = TempDir::new("sandbox-inbox");
    let project = temp.path();
    for args in [
        &["install", "--sandbox"][..],
        &[
            "loop",
            "start",
            "tidy",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ],
        &["task", "start", "tidy"],
        &["task", "steps", "set", "look", "tidy"],
    ] {
        let output = run(project, args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    let loop_before = std::fs::read(project.join(".claude/orchestrator/loop.json")).unwrap();

    // Reading works inside as outside.
    let output = in_read_only_state(project, "ralph-hooks", &["loop", "status"]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("RUNNING"));
    // The agent's own progress is queued for the hooks.
    let output = in_read_only_state(
        project,
        "ralph-hooks",
        &["task", "step", "complete", "s1", "--note", "looked"],
    );
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .contains("Queued `ralph-hooks task step complete s1")
    );
    // Ending the loop, closing the task by force, uninstalling: the user's.
    for args in [
        &["loop", "cancel"][..],
        &["loop", "start", "easy"],
        &["task", "complete", "--force"],
        &["install", "--uninstall"],
    ] {
        let output = in_read_only_state(project, "ralph-hooks", args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("is the user's to run"),
            "{output:?}"
        );
    }
    // A forged request in the inbox, beside the queued one.
    std::fs::write(
        project.join(".claude/ralph-hooks-inbox/99999999999999999999-forged.json"),
        r#"{"args": ["task", "complete"]}"#,
    )
    .unwrap();

    // The hook after the Bash call, outside the sandbox, applies the step
    // and judges the forged close with the guard's policy (steps are open).
    let mut hook = util::command("ralph-post-tool-lsp-diagnostic", project);
    hook.env_remove("RALPH_HOOKS_NOW");
    let payload = json!({
        "hook_event_name": "PostToolUse", "session_id": "s1", "cwd": project,
        "tool_name": "Bash", "tool_input": {"command": "ralph-hooks task step complete s1 --note looked"},
        "tool_response": {"stdout": "", "stderr": ""}
    });
    let output = util::run_with_stdin(hook, payload.to_string().as_bytes());
    assert!(output.status.success(), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("applied `ralph-hooks task step complete s1 --note looked`"),
        "{context}"
    );
    assert!(
        context.contains("refused `ralph-hooks task complete`"),
        "{context}"
    );
    let status = run(project, &["task", "status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("✅ (s1) look"), "{status}");
    assert!(
        status.contains("in_progress"),
        "the forged close did not happen: {status}"
    );
    assert_eq!(
        std::fs::read(project.join(".claude/orchestrator/loop.json")).unwrap(),
        loop_before,
        "the loop is as it was"
    );
    let inbox: Vec<_> = std::fs::read_dir(project.join(".claude/ralph-hooks-inbox"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(inbox.is_empty(), "requests left: {inbox:?}");
}

/// One UserPromptSubmit call of the prompt hook; its JSON answer.
fn prompt_hook(project: &std::path::Path, prompt: &str, source: Option<&str>) -> Value {
    let mut payload = json!({
        "hook_event_name": "UserPromptSubmit", "session_id": "session-a", "cwd": project,
        "prompt": prompt
    });
    if let Some(source) = source {
        payload["source"] = json!(source);
    }
    let mut hook = util::command("ralph-user-prompt-submit", project);
    hook.env_remove("RALPH_HOOKS_NOW");
    let output = util::run_with_stdin(hook, payload.to_string().as_bytes());
    assert!(output.status.success(), "{output:?}");
    if output.stdout.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(&output.stdout).unwrap()
}

fn loop_json(project: &std::path::Path) -> Value {
    std::fs::read_to_string(project.join(".claude/orchestrator/loop.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null)
}

#[test]
fn in_sandbox_mode_the_prompt_hook_carries_out_the_users_loop_commands() {
    if !sandbox_tools() {
        return;
    }
    let temp = TempDir::new("sandbox-prompt");
    let project = temp.path();
    // Without sandbox mode the command file's own line does it: the hook
    // starts nothing.
    assert!(run(project, &["install"]).status.success());
    prompt_hook(
        project,
        "/ralph-loop \"plain goal\" --promise P --no-diagnostics",
        None,
    );
    assert_eq!(loop_json(project), Value::Null);

    assert!(run(project, &["install", "--sandbox"]).status.success());
    // A prompt that is not the user's starts nothing either.
    prompt_hook(
        project,
        "/ralph-loop \"not yours\" --promise P --no-diagnostics",
        Some("sdk"),
    );
    assert_eq!(loop_json(project), Value::Null);

    let answer = prompt_hook(
        project,
        "/ralph-loop \"E2E goal: say it\" --promise WORD --max-iterations 3 --no-diagnostics",
        None,
    );
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("The user's /ralph-loop was carried out"),
        "{answer}"
    );
    let state = loop_json(project);
    assert_eq!(state["status"], "RUNNING", "{state}");
    assert_eq!(state["goal"], "E2E goal: say it");
    assert_eq!(state["promise"], "WORD");
    assert_eq!(state["max_iterations"], 3);
    assert_eq!(
        state["session_id"], "session-a",
        "bound to the user's session"
    );

    // "stop" pauses it as always; the user's /resume-loop runs it again.
    prompt_hook(project, "stop", None);
    assert_eq!(loop_json(project)["status"], "PAUSED");
    let answer = prompt_hook(project, "/resume-loop", None);
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains("The user's /resume-loop was carried out"),
        "{answer}"
    );
    assert_eq!(loop_json(project)["status"], "RUNNING");

    let answer = prompt_hook(project, "/cancel-loop", None);
    assert!(
        answer["systemMessage"]
            .as_str()
            .unwrap_or_default()
            .contains("/cancel-loop"),
        "{answer}"
    );
    assert_eq!(loop_json(project)["status"], "CANCELLED");
}

fn write_decision(project: &std::path::Path, file_path: &std::path::Path) -> String {
    let output = util::run_with_stdin(
        util::command("ralph-pre-tool-stop-guard", project),
        &serde_json::to_vec(&json!({
            "hook_event_name": "PreToolUse", "session_id": "s-outside", "cwd": project,
            "tool_name": "Write", "tool_use_id": "toolu_w",
            "tool_input": {"file_path": file_path, "content": "[core]\n\tfsmonitor = ./x.sh\n"},
        }))
        .unwrap(),
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

// See: the black-box attack on sandbox mode (F14): the Write tool is not in
// Claude Code's sandbox, and a `~/.gitconfig` or `/etc/gitconfig` it wrote
// could make a program the hooks run execute the agent's code.
#[test]
fn in_sandbox_mode_the_file_tools_write_only_inside_the_project_while_unattended() {
    if !sandbox_tools() {
        return;
    }
    let temp = TempDir::new("sandbox-outside");
    let project = temp.path();
    assert!(run(project, &["install", "--sandbox"]).status.success());
    let outside = std::path::Path::new("/etc/gitconfig");
    // No loop: the agent is not unattended, nothing is refused.
    assert!(!write_decision(project, outside).contains("\"deny\""));
    let started = run(
        project,
        &[
            "loop",
            "start",
            "tidy",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let denied = write_decision(project, outside);
    assert!(
        denied.contains("\"deny\"") && denied.contains("outside the project"),
        "{denied}"
    );
    // Through a link inside the project, too.
    std::os::unix::fs::symlink("/etc", project.join("etc-link")).unwrap();
    let denied = write_decision(project, &project.join("etc-link/gitconfig"));
    assert!(denied.contains("\"deny\""), "{denied}");
    // A repository's .git folder inside the project: its config and hooks
    // name programs git runs for the hooks too.
    for inside_git in [
        ".git/config",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",
    ] {
        let denied = write_decision(project, &project.join(inside_git));
        assert!(
            denied.contains("\"deny\"") && denied.contains(".git folder"),
            "{inside_git}: {denied}"
        );
    }
    // Inside the project: ordinary work.
    assert!(!write_decision(project, &project.join("src/app.py")).contains("\"deny\""));
    assert!(!write_decision(project, &project.join(".gitignore")).contains("\"deny\""));
}

// Gemini CLI 0.61 runs no hook when its settings say
// `hooksConfig.enabled: false`, and skips a command listed in
// `hooksConfig.disabled`: doctor says so, as it does for Codex's
// `[features] hooks = false`.
#[test]
fn doctor_says_when_gemini_switches_the_hooks_off() {
    let temp = TempDir::new("doctor-gemini-off");
    let project = temp.path().join("project");
    let home = temp.path().join("home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let installed = run(&project, &["install", "--harness", "gemini"]);
    assert!(installed.status.success());
    let doctor = |project: &std::path::Path| {
        let mut command = util::command("ralph-hooks", project);
        command.env("HOME", &home).arg("doctor");
        let output = command.output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    assert!(!doctor(&project).contains("hooksConfig"));
    let path = project.join(".gemini/settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    settings["hooksConfig"] = json!({"enabled": false});
    std::fs::write(&path, settings.to_string()).unwrap();
    let said = doctor(&project);
    assert!(
        said.contains("hooksConfig.enabled is false") && said.contains("runs no hook"),
        "{said}"
    );
    settings["hooksConfig"] = json!({"enabled": true});
    std::fs::write(&path, settings.to_string()).unwrap();
    let stop = settings
        .pointer("/hooks/AfterAgent/0/hooks/0/command")
        .and_then(Value::as_str)
        .unwrap()
        .to_string();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"hooksConfig": {"disabled": [stop]}}).to_string(),
    )
    .unwrap();
    let said = doctor(&project);
    assert!(
        said.contains("hooksConfig.disabled") && said.contains("skips it"),
        "{said}"
    );
}

// See: harness attack H-6, H-7, H-13: a hook file with a key twice lost
// the user's handler; a linked file became a plain one and a 0444 file
// 0644; an uninstall where nothing was installed added `"hooks": {}`.
#[test]
fn harness_install_keeps_odd_files_as_they_are() {
    use std::os::unix::fs::PermissionsExt as _;
    let temp = TempDir::new("harness-odd-files");
    let project = temp.path();
    // A key twice: refused, nothing changed.
    std::fs::create_dir_all(project.join(".cursor")).unwrap();
    let twice = r#"{"version":1,"hooks":{"stop":[{"command":"a"}]},"hooks":{"preToolUse":[{"command":"b"}]}}"#;
    std::fs::write(project.join(".cursor/hooks.json"), twice).unwrap();
    let refused = run(project, &["install", "--harness", "cursor"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("twice"),
        "{refused:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join(".cursor/hooks.json")).unwrap(),
        twice
    );
    std::fs::remove_file(project.join(".cursor/hooks.json")).unwrap();

    // A link to a shared file, read-only: still a link, the target edited,
    // its mode kept; the uninstall gives the target's bytes back.
    std::fs::create_dir_all(project.join("shared")).unwrap();
    let shared = project.join("shared/hooks.json");
    let original = "{\n    \"version\": 1,\n    \"hooks\": {\n        \"afterFileEdit\": [ { \"command\": \"./fmt.sh\" } ]\n    }\n}\n";
    std::fs::write(&shared, original).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::os::unix::fs::symlink("../shared/hooks.json", project.join(".cursor/hooks.json")).unwrap();
    assert!(
        run(project, &["install", "--harness", "cursor"])
            .status
            .success()
    );
    let link = std::fs::symlink_metadata(project.join(".cursor/hooks.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the link was replaced");
    assert!(
        std::fs::read_to_string(&shared)
            .unwrap()
            .contains("ralph-stop-loop-controller")
    );
    assert_eq!(
        std::fs::metadata(&shared).unwrap().permissions().mode() & 0o777,
        0o444
    );
    assert!(
        run(project, &["install", "--harness", "cursor", "--uninstall"])
            .status
            .success()
    );
    assert!(
        std::fs::symlink_metadata(project.join(".cursor/hooks.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), original);

    // Nothing installed: an uninstall changes no byte.
    std::fs::create_dir_all(project.join(".gemini")).unwrap();
    let gemini = "{ \"theme\": \"Dracula\" }\n";
    std::fs::write(project.join(".gemini/settings.json"), gemini).unwrap();
    assert!(
        run(project, &["install", "--harness", "gemini", "--uninstall"])
            .status
            .success()
    );
    assert_eq!(
        std::fs::read_to_string(project.join(".gemini/settings.json")).unwrap(),
        gemini
    );
}

// See: harness attack H-8: Codex with `[features] hooks = false`: install
// said nothing, and doctor's advice (reinstall) did not help.
#[test]
fn a_harness_switched_off_is_said_at_install_and_doctor_names_the_switch() {
    let temp = TempDir::new("codex-hooks-off");
    let project = temp.path().join("project");
    let home = temp.path().join("home");
    std::fs::create_dir_all(project.join(".codex")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        project.join(".codex/config.toml"),
        "[features]\nhooks = false\n",
    )
    .unwrap();
    let mut install = util::command("ralph-hooks", &project);
    install
        .env("HOME", &home)
        .env_remove("CODEX_HOME")
        .args(["install", "--harness", "codex"]);
    let said = String::from_utf8_lossy(&install.output().unwrap().stdout).into_owned();
    assert!(said.contains("Warning: [features] hooks = false"), "{said}");
    let mut doctor = util::command("ralph-hooks", &project);
    doctor
        .env("HOME", &home)
        .env_remove("CODEX_HOME")
        .arg("doctor");
    let said = String::from_utf8_lossy(&doctor.output().unwrap().stdout).into_owned();
    let line = said
        .lines()
        .find(|line| line.contains("PROBLEM codex"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("turn the hooks back on where named"),
        "{said}"
    );
    assert!(!line.contains("run `ralph-hooks install"), "{line}");
}
