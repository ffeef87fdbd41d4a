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
