//! The user stays in charge (issue 12), across the binaries: a stop phrase
//! pauses the loop and continuation, Stop lets the turn end, `loop resume`
//! restores blocking, the next ordinary prompt restores continuation, and
//! the status line shows each state.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "205cbbdd-a334-4456-9333-f0dfc3cbd802";

fn run(binary: &str, project: &Path, args: &[&str], stdin: &Value) -> (i32, String, String) {
    let mut command = util::command(binary, project);
    command.args(args);
    let stdin = if stdin.is_null() {
        Vec::new()
    } else {
        stdin.to_string().into_bytes()
    };
    let output = util::run_with_stdin(command, &stdin);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn prompt(project: &Path, text: &str) -> String {
    let input = json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
                       "cwd": project, "prompt": text});
    let (code, stdout, stderr) = run("ralph-user-prompt-submit", project, &[], &input);
    assert_eq!(code, 0, "prompt hook failed: {stderr}");
    stdout
}

fn stop(project: &Path, active: bool) -> String {
    let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                       "stop_hook_active": active, "last_assistant_message": "working on it",
                       "background_tasks": []});
    let (code, stdout, stderr) = run("ralph-stop-loop-controller", project, &[], &input);
    assert_eq!(code, 0, "stop hook failed: {stderr}");
    stdout
}

fn cli(project: &Path, args: &[&str]) -> (i32, String, String) {
    let mut command = util::command("ralph-hooks", project);
    command.env("CLAUDE_CODE_SESSION_ID", SESSION).args(args);
    let output = util::run_with_stdin(command, b"");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn loop_state(project: &Path) -> Value {
    let path = project.join(".claude/orchestrator/loop.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `loop start "ship it" --promise DONE --no-diagnostics`.
fn start_loop(project: &Path) -> (i32, String, String) {
    cli(
        project,
        &[
            "loop",
            "start",
            "ship it",
            "--promise",
            "DONE",
            "--no-diagnostics",
        ],
    )
}

#[test]
fn a_paused_loop_lets_stop_through_and_resume_restores_blocking() {
    let temp = TempDir::new("control-loop");
    let project = temp.path();
    let (code, _, stderr) = start_loop(project);
    assert_eq!(code, 0, "{stderr}");
    assert!(stop(project, false).contains("\"decision\":\"block\""));
    assert_eq!(loop_state(project)["iteration"], 1);

    let said = prompt(project, "Stop!");
    assert!(said.contains("PAUSED by the user"), "{said}");
    assert_eq!(loop_state(project)["status"], "PAUSED");
    assert_eq!(stop(project, false), "", "a paused loop must not block");
    assert_eq!(stop(project, true), "");
    assert_eq!(loop_state(project)["iteration"], 1, "no iteration used");
    let (_, status, _) = cli(project, &["loop", "status"]);
    assert!(status.contains("— PAUSED"), "{status}");
    assert!(status.contains("loop resume"), "{status}");
    let (_, overview, _) = cli(project, &["status"]);
    assert!(overview.contains("PAUSED by the user"), "{overview}");
    let (code, _, stderr) = cli(project, &["loop", "start", "other", "--promise", "X"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("already PAUSED"), "{stderr}");
    let start =
        json!({"hook_event_name": "SessionStart", "session_id": SESSION, "source": "compact"});
    let (_, context, _) = run("ralph-session-start", project, &[], &start);
    assert!(context.contains("RALPH LOOP PAUSED"), "{context}");
    assert!(
        context.contains("Do not resume it yourself: only the user does"),
        "{context}"
    );

    // An ordinary prompt does not resume the loop; `loop resume` does.
    assert_eq!(prompt(project, "what did you change so far?"), "");
    assert_eq!(loop_state(project)["status"], "PAUSED");
    let (code, out, stderr) = cli(project, &["loop", "resume"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("iteration 1/10"), "{out}");
    let blocked = stop(project, false);
    assert!(blocked.contains("iteration 2/10"), "{blocked}");
    let (code, out, _) = cli(project, &["loop", "resume"]);
    assert_eq!(code, 0);
    assert!(out.contains("already RUNNING"), "{out}");

    // Pausing again, then cancelling, ends a paused loop.
    prompt(project, "pause");
    let (code, out, _) = cli(project, &["loop", "cancel"]);
    assert_eq!(code, 0);
    assert!(out.contains("Cancelled"), "{out}");
    assert_eq!(loop_state(project)["status"], "CANCELLED");
    let (code, _, stderr) = cli(project, &["loop", "resume"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("CANCELLED, not paused"), "{stderr}");

    let events =
        std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl")).unwrap();
    for event in ["loop_paused", "loop_resumed", "loop_cancelled"] {
        assert!(events.contains(event), "{event} missing from {events}");
    }
}

#[test]
fn any_prompt_resets_the_consecutive_block_count() {
    let temp = TempDir::new("control-blocks");
    let project = temp.path();
    start_loop(project);
    // Two blocks in a row (a third identical one would end it as stagnant).
    stop(project, false);
    stop(project, true);
    assert_eq!(loop_state(project)["consecutive_blocks"], 2);
    assert_eq!(prompt(project, "keep going"), "");
    assert_eq!(loop_state(project)["consecutive_blocks"], 0);
    assert_eq!(loop_state(project)["status"], "RUNNING");
}

#[test]
fn a_stop_phrase_pauses_continuation_until_the_next_ordinary_prompt() {
    let temp = TempDir::new("control-steps");
    let project = temp.path();
    for args in [
        &["task", "start", "add OAuth login"][..],
        &["task", "steps", "set", "read", "write", "test"],
    ] {
        let (code, _, stderr) = cli(project, args);
        assert_eq!(code, 0, "{stderr}");
    }
    assert!(stop(project, false).contains("[SELF-DRIVING 1/20]"));
    let said = prompt(project, "그만");
    assert!(said.contains("Continuation of task"), "{said}");
    assert_eq!(
        stop(project, false),
        "",
        "continuation must hold after stop"
    );
    assert_eq!(stop(project, true), "");
    let (_, overview, _) = cli(project, &["status"]);
    assert!(overview.contains("paused by the user"), "{overview}");
    // Another stop phrase keeps it paused; an ordinary prompt lifts it.
    prompt(project, "stop");
    assert_eq!(stop(project, false), "");
    assert_eq!(prompt(project, "ok, carry on"), "");
    assert!(stop(project, false).contains("[SELF-DRIVING 1/20]"));
}

fn statusline(project: &Path, session: &str) -> String {
    let input = json!({"hook_event_name": "Status", "session_id": session,
                       "cwd": "/somewhere/else", "model": {"id": "x", "display_name": "X"},
                       "workspace": {"current_dir": project, "project_dir": project},
                       "version": "2.1.330", "cost": {"total_cost_usd": 0.1}});
    let (code, stdout, stderr) = run("ralph-hooks", project, &["statusline"], &input);
    assert_eq!(code, 0, "statusline failed: {stderr}");
    stdout.trim_end().to_string()
}

#[test]
fn the_status_line_shows_each_state() {
    let temp = TempDir::new("control-statusline");
    let project = temp.path();
    assert_eq!(statusline(project, SESSION), "", "idle: nothing");

    start_loop(project);
    assert_eq!(statusline(project, SESSION), "ralph ▶ loop 0/10");
    stop(project, false);
    assert_eq!(
        statusline(project, SESSION),
        "ralph ▶ loop 1/10 · 1 failing"
    );
    assert_eq!(
        statusline(project, "another-session"),
        "",
        "not another session's loop"
    );

    cli(project, &["task", "start", "add OAuth login"]);
    cli(
        project,
        &[
            "task",
            "steps",
            "set",
            "read the auth code",
            "GitHub OAuth callback handler",
            "tests",
        ],
    );
    cli(project, &["task", "step", "complete", "s1"]);
    assert_eq!(
        statusline(project, SESSION),
        "ralph ▶ loop 1/10 · 1 failing · task 1/3 (s2 GitHub OAuth callb…)"
    );
    prompt(project, "stop");
    assert_eq!(
        statusline(project, SESSION),
        "ralph ⏸ loop 1/10 paused · task 1/3 (s2 GitHub OAuth callb…)"
    );
    cli(project, &["loop", "cancel"]);
    assert_eq!(
        statusline(project, SESSION),
        "ralph ⏸ task 1/3 (s2 GitHub OAuth callb…) · paused",
        "a finished loop is not shown; continuation is still paused"
    );
    prompt(project, "go on");
    assert_eq!(
        statusline(project, SESSION),
        "ralph ▶ task 1/3 (s2 GitHub OAuth callb…)"
    );
    cli(project, &["task", "block", "--note", "need the secret"]);
    assert_eq!(statusline(project, SESSION), "ralph ■ task blocked");
    cli(project, &["task", "resume"]);
    cli(project, &["task", "complete", "--force"]);
    assert_eq!(statusline(project, SESSION), "", "all finished: idle again");

    // Garbage on stdin is a fault, not a line.
    let mut command = util::command("ralph-hooks", project);
    command.arg("statusline");
    let output = util::run_with_stdin(command, b"{not json");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
}

/// The golden fixture's transcript: a TodoWrite with open items.
const TODO_TRANSCRIPT: &str = "fixtures/golden/ralph-stop-loop-controller/todos-from-todowrite-continue/project/transcript.jsonl";

#[test]
fn a_stop_phrase_pauses_todo_continuation_too() {
    let temp = TempDir::new("control-todos");
    let project = temp.path();
    let transcript = project.join("transcript.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(TODO_TRANSCRIPT),
        &transcript,
    )
    .unwrap();
    let stop_with_todos = || {
        let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                           "transcript_path": transcript, "stop_hook_active": false,
                           "last_assistant_message": "I will stop here."});
        let (code, stdout, stderr) = run("ralph-stop-loop-controller", project, &[], &input);
        assert_eq!(code, 0, "stop hook failed: {stderr}");
        stdout
    };
    assert!(
        stop_with_todos().contains("\"decision\":\"block\""),
        "open todos continue"
    );
    // No loop and no task: the pause is recorded silently.
    assert_eq!(prompt(project, "that's enough"), "");
    assert_eq!(stop_with_todos(), "", "todo continuation must hold");
    assert_eq!(prompt(project, "now finish the todos"), "");
    assert!(stop_with_todos().contains("\"decision\":\"block\""));
}

/// The guard's verdict on a Bash command, then the command itself run by a
/// real shell with our CLI first on PATH: the guard and the CLI agree.
fn guard_then_run(project: &Path, command: &str) -> (Option<String>, i32, String) {
    let input = json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
                       "tool_name": "Bash", "tool_input": {"command": command}});
    let (code, stdout, stderr) = run("ralph-pre-tool-stop-guard", project, &[], &input);
    assert_eq!(code, 0, "guard failed: {stderr}");
    let denial = (!stdout.trim().is_empty()).then(|| {
        let output: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(output["hookSpecificOutput"]["permissionDecision"], "deny");
        output["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_string()
    });
    let bin_dir = util::bin("ralph-hooks").parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The test environment of util::command (clean CLAUDE*/RALPH_HOOKS*,
    // fixed clock), for a shell instead of a binary.
    let mut template = util::command("ralph-hooks", project);
    template
        .env("PATH", path)
        .env("CLAUDE_CODE_SESSION_ID", SESSION);
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c").arg(command).current_dir(project);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    let output = util::run_with_stdin(sh, b"");
    (
        denial,
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn task_with_four_steps(project: &Path) {
    for args in [
        &["task", "start", "add OAuth login"][..],
        &["task", "steps", "set", "read", "google", "github", "tests"],
        &["task", "step", "complete", "s1"],
    ] {
        let (code, _, stderr) = cli(project, args);
        assert_eq!(code, 0, "{stderr}");
    }
}

#[test]
fn the_guard_and_the_cli_agree_on_chains() {
    let rh = "ralph-hooks task";
    // Allowed: the chain closes every open step before completing.
    let temp = TempDir::new("control-chain-ok");
    let project = temp.path();
    task_with_four_steps(project);
    let command = format!(
        "{rh} step complete s2 && {rh} step complete s3; {rh} step skip s4 --note later && {rh} complete --summary done"
    );
    let (denial, code, stderr) = guard_then_run(project, &command);
    assert_eq!(
        denial, None,
        "the guard denied a chain that closes every step"
    );
    assert_eq!(code, 0, "the CLI refused what the guard allowed: {stderr}");
    let (_, status, _) = cli(project, &["task", "list"]);
    assert!(status.contains("completed"), "{status}");

    // Denied: s4 stays open; the CLI refuses it too when run anyway.
    let temp = TempDir::new("control-chain-open");
    let project = temp.path();
    task_with_four_steps(project);
    let command = format!("{rh} step complete s2 && {rh} step complete s3 && {rh} complete");
    let (denial, code, stderr) = guard_then_run(project, &command);
    let denial = denial.expect("the guard allowed a chain that leaves s4 open");
    assert!(denial.contains("(s4) tests"), "{denial}");
    assert_ne!(code, 0, "the CLI completed a task with s4 open");
    assert!(stderr.contains("s4"), "{stderr}");
}

#[test]
fn install_statusline_never_replaces_the_users() {
    let temp = TempDir::new("control-install");
    let project = temp.path();
    let settings_path = project.join(".claude/settings.json");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        &settings_path,
        r#"{"statusLine": {"type": "command", "command": "~/my-line.sh"}}"#,
    )
    .unwrap();
    let project_arg = project.to_str().unwrap();
    let (code, out, stderr) = cli(
        project,
        &["install", "--project", project_arg, "--statusline"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("left yours alone"), "{out}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert_eq!(settings["statusLine"]["command"], "~/my-line.sh");
    assert!(
        settings["hooks"]["UserPromptSubmit"].is_array(),
        "{settings}"
    );

    // Without one, ours goes in, runs, and uninstall takes it out again.
    std::fs::write(&settings_path, "{}").unwrap();
    let (code, out, _) = cli(
        project,
        &["install", "--project", project_arg, "--statusline"],
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("Status line: `ralph-hooks statusline`"),
        "{out}"
    );
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let command = settings["statusLine"]["command"].as_str().unwrap();
    assert!(command.ends_with("/ralph-hooks statusline"), "{command}");
    let (code, out, _) = cli(
        project,
        &["install", "--project", project_arg, "--uninstall"],
    );
    assert_eq!(code, 0);
    assert!(out.contains("Removed the ralph-hooks status line"), "{out}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    assert!(settings.get("statusLine").is_none(), "{settings}");
}

// See: attack finding A35-7: the message for a "stop" that arrived
// mid-turn, and docs/guard.md, sent the user to `ralph-hooks loop pause`,
// which did not exist.
#[test]
fn loop_pause_from_a_terminal_pauses_and_the_agent_cannot() {
    let temp = TempDir::new("control-pause");
    let project = temp.path();
    let (code, _, stderr) = start_loop(project);
    assert_eq!(code, 0, "{stderr}");
    assert!(stop(project, false).contains("\"decision\":\"block\""));
    // The agent's own `loop pause` is denied before it runs.
    let input = json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project,
                       "tool_name": "Bash", "tool_input": {"command": "echo; ralph-hooks loop pause"}});
    let (code, denial, stderr) = run("ralph-pre-tool-stop-guard", project, &[], &input);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        denial.contains("pausing it is the user's decision"),
        "{denial}"
    );
    assert_eq!(loop_state(project)["status"], "RUNNING");
    let (code, out, stderr) = cli(project, &["loop", "pause"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(out.contains("Paused Ralph loop"), "{out}");
    assert_eq!(loop_state(project)["status"], "PAUSED");
    assert_eq!(stop(project, false), "", "a paused loop must not block");
    let (_, out, _) = cli(project, &["loop", "pause"]);
    assert!(out.contains("already PAUSED"), "{out}");
    let (code, out, _) = cli(project, &["loop", "resume"]);
    assert_eq!(code, 0);
    assert!(out.contains("iteration 1/10"), "{out}");
    let events =
        std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl")).unwrap();
    assert!(events.contains("\"by\":\"cli\""), "{events}");
}

// See: attack finding A35-6: a check the agent made hang, with a long
// `--check-timeout`, kept the Stop hook past Claude Code's timeout for it;
// Claude Code cancelled the hook and the session stopped, the loop still
// RUNNING. The checks of one Stop share a budget under that timeout: what
// runs past it fails, what has no time left is not run, and the Stop blocks.
#[test]
fn the_checks_of_one_stop_end_before_the_hooks_timeout() {
    let temp = TempDir::new("control-check-budget");
    let project = temp.path();
    let (code, _, stderr) = cli(
        project,
        &[
            "loop",
            "start",
            "ship it",
            "--check",
            "sleep 60",
            "--check",
            "true",
            "--check-timeout",
            "1200",
            "--no-diagnostics",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("more than the 25 min"), "{stderr}");
    let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": project,
                       "stop_hook_active": false, "last_assistant_message": "done",
                       "background_tasks": []});
    let mut command = util::command("ralph-stop-loop-controller", project);
    command.env("RALPH_HOOKS_STOP_CHECKS_SECS", "2");
    let started = std::time::Instant::now();
    let output = util::run_with_stdin(command, input.to_string().as_bytes());
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(0));
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    assert!(answer.contains("\"decision\":\"block\""), "{answer}");
    assert!(answer.contains("timed out"), "{answer}");
    assert!(
        answer.contains("not run: the Stop hook's time for checks"),
        "{answer}"
    );
}
