//! What counts as a change between loop iterations, wherever the project
//! lives: outside a git work tree an edit between two stops is progress
//! and is named in the follow-up prompt, in a folder of a bigger work tree
//! too, and a Bash command outside git that broke a file is reported.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "6a1f0c3e-31a8-4c55-9a64-0d7c2f1b9e10";

fn cli(project: &Path, args: &[&str]) -> String {
    let mut command = util::command("ralph-hooks", project);
    command.env("CLAUDE_CODE_SESSION_ID", SESSION).args(args);
    let output = util::run_with_stdin(command, b"");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stop(project: &Path) -> Value {
    let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                       "stop_hook_active": false, "last_assistant_message": "working on it"});
    let command = util::command("ralph-stop-loop-controller", project);
    let output = util::run_with_stdin(command, input.to_string().as_bytes());
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if output.stdout.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(&output.stdout).unwrap()
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Three stops, each after an edit of `src/a.py`: every one blocks (the
/// loop keeps running) and names the file.
fn three_edited_stops_keep_running(project: &Path) {
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/a.py"), "x = 0\n").unwrap();
    cli(
        project,
        &[
            "loop",
            "start",
            "x",
            "--check",
            "exit 1",
            "--no-diagnostics",
        ],
    );
    for round in 1..=4 {
        std::fs::write(project.join("src/a.py"), format!("x = {round}\n")).unwrap();
        let output = stop(project);
        assert_eq!(output["decision"], "block", "round {round}: {output}");
        let reason = output["reason"].as_str().unwrap();
        assert!(
            reason.contains("- files changed: src/a.py"),
            "round {round}: {reason}"
        );
        assert!(
            !reason.contains("no file changed"),
            "round {round}: {reason}"
        );
    }
}

#[test]
fn outside_git_an_edit_between_stops_is_progress() {
    let temp = TempDir::new("changes-nogit");
    three_edited_stops_keep_running(temp.path());
}

#[test]
fn outside_git_stops_without_edits_still_end_as_stagnant() {
    let temp = TempDir::new("changes-nogit-idle");
    let project = temp.path();
    std::fs::write(project.join("a.py"), "x = 0\n").unwrap();
    cli(
        project,
        &[
            "loop",
            "start",
            "x",
            "--check",
            "exit 1",
            "--no-diagnostics",
        ],
    );
    let outcomes: Vec<Value> = (0..3).map(|_| stop(project)).collect();
    assert_eq!(outcomes[0]["decision"], "block");
    assert_eq!(outcomes[1]["decision"], "block");
    let last = outcomes[2]["systemMessage"].as_str().unwrap_or_default();
    assert!(last.contains("FAILED: stagnant"), "{}", outcomes[2]);
}

#[test]
fn in_a_folder_of_a_git_work_tree_an_edit_is_progress() {
    let temp = TempDir::new("changes-subdir");
    let top = temp.path();
    let project = top.join("service");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/a.py"), "x = 0\n").unwrap();
    std::fs::write(top.join(".gitignore"), ".claude/\n").unwrap();
    git(top, &["init", "-q"]);
    git(top, &["add", "-A"]);
    git(top, &["commit", "-q", "-m", "init"]);
    three_edited_stops_keep_running(&project);
}

#[test]
fn outside_git_a_bash_command_that_broke_a_file_is_reported() {
    let temp = TempDir::new("changes-bash");
    let project = temp.path();
    util::write_fake_lsp_json(project, &["--mode", "normal"]);
    util::write_hook_config(
        project,
        json!({"diagnostics": {"timeout_ms": 10_000, "ast_grep": false}}),
    );
    std::fs::write(project.join("a.fake"), "fine\n").unwrap();
    let hook = |command: &str| {
        let payload = json!({"hook_event_name": "PostToolUse", "session_id": SESSION,
            "cwd": project, "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false}});
        let command = util::command("ralph-post-tool-lsp-diagnostic", project);
        util::run_with_stdin(command, payload.to_string().as_bytes())
    };
    hook("ls");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(project.join("a.fake"), "ERROR: broken\n").unwrap();
    let output = hook("printf 'ERROR: broken' > a.fake");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("a.fake"), "stdout: {stdout}");
    assert!(stdout.contains("broken"), "stdout: {stdout}");
}
