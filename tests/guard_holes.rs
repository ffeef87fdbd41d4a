//! Holes a black-box attack on the guard found (findings G9, G6/G10,
//! G1/G7), each driven through the real hook binaries: a helper program
//! planted in a project folder on PATH, a Stop that cannot record the
//! loop's state, a loop claimed or paused by a made-up session.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "4f1d7c2e-8a3b-4c5d-9e6f-0a1b2c3d4e5f";

fn cli(project: &Path, args: &[&str]) {
    let mut command = util::command("ralph-hooks", project);
    command.args(args);
    let output = util::run_with_stdin(command, b"");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn git(project: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(args)
        .current_dir(project)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(output.status.success(), "git {args:?}");
}

fn stop_input(project: &Path, session: &str) -> Vec<u8> {
    json!({"hook_event_name": "Stop", "session_id": session, "cwd": project,
           "stop_hook_active": false, "last_assistant_message": "All done.",
           "background_tasks": []})
    .to_string()
    .into_bytes()
}

fn plant(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// See: attack finding G9: with an activated `.venv` on Claude Code's PATH,
// the hooks ran the agent's planted `git` (and `sh`) outside the sandbox.
#[test]
fn helpers_planted_in_a_project_folder_on_path_never_run() {
    let temp = TempDir::new("holes-path");
    let project = temp.path();
    git(project, &["init", "-q"]);
    std::fs::write(project.join("a.txt"), "a").unwrap();
    git(project, &["add", "a.txt"]);
    git(project, &["commit", "-q", "-m", "a"]);
    cli(
        project,
        &[
            "loop",
            "start",
            "fix it",
            "--check",
            "exit 1",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ],
    );
    let venv = project.join(".venv/bin");
    std::fs::create_dir_all(&venv).unwrap();
    let escaped = project.join("escaped.txt");
    for name in ["git", "sh"] {
        let real = which::which(name).unwrap();
        plant(
            &venv.join(name),
            &format!(
                "#!/bin/sh\necho {name} >> '{}'\nexec '{}' \"$@\"\n",
                escaped.display(),
                real.display()
            ),
        );
    }
    std::fs::write(project.join("b.txt"), "b").unwrap();
    let path = format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut stop = util::command("ralph-stop-loop-controller", project);
    stop.env("PATH", path)
        .env("VIRTUAL_ENV", project.join(".venv"));
    let output = util::run_with_stdin(stop, &stop_input(project, SESSION));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(answer["decision"], "block", "{answer}");
    assert!(
        !escaped.exists(),
        "the hook ran a planted helper: {}",
        std::fs::read_to_string(&escaped).unwrap_or_default()
    );
}

/// A project with a loop whose check fails, started from the terminal.
fn failing_loop(label: &str) -> TempDir {
    let temp = TempDir::new(label);
    cli(
        temp.path(),
        &[
            "loop",
            "start",
            "fix it",
            "--check",
            "exit 1",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ],
    );
    temp
}

fn assert_blocked_unrecorded(output: &std::process::Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "the Stop hook must not exit 1 while a loop runs: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(answer["decision"], "block", "{answer}");
    let reason = answer["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("could not record"), "{reason}");
    assert!(
        reason.contains("exit 1"),
        "the follow-up names the failing check: {reason}"
    );
}

// See: attack finding G10: a background process holding the state's lock
// made every Stop exit 1 after 10 s, and Claude Code let "All done." through.
#[test]
fn a_held_lock_does_not_switch_the_loop_off() {
    let temp = failing_loop("holes-lock");
    let project = temp.path();
    let locks = project.join(".claude/orchestrator/.locks");
    std::fs::create_dir_all(&locks).unwrap();
    let ready = project.join("held");
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(locks.join("loop.json.lock"))
        .arg("-c")
        .arg(format!("touch '{}'; sleep 60", ready.display()))
        .spawn()
        .expect("flock");
    while !ready.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        &stop_input(project, SESSION),
    );
    let _ = holder.kill();
    let _ = holder.wait();
    assert_blocked_unrecorded(&output);
}

// See: attack finding G6: a disk the agent filled made the Stop hook fail
// to write the loop's state, exit 1, and Claude Code let "All done." through.
#[test]
fn a_state_folder_that_cannot_be_written_does_not_switch_the_loop_off() {
    let temp = failing_loop("holes-full");
    let project = temp.path();
    let Some(user) = util::Unprivileged::new(project) else {
        return;
    };
    let state = project.join(".claude/orchestrator");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o555)).unwrap();
    let output = util::run_with_stdin(
        user.command("ralph-stop-loop-controller", project),
        &stop_input(project, SESSION),
    );
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_blocked_unrecorded(&output);
}
