//! The project's own adversarial suite (issue 10): what an audit of the
//! release binaries broke, kept broken-proof.
//!
//! - Every state and config file × every way to damage it × every hook and
//!   CLI command that reads it: each run returns within a bound, never exits
//!   2, never says `allow`, never panics, leaves files outside the state root
//!   alone; the command that reads the file moves it aside or explains.
//! - The guard's risky-command table, with the spellings the audit used and
//!   the mentions that must stay allowed; the protected config and state.
//! - Lone surrogates in hook input (properties, and the real guard).
//! - SIGTERM/SIGINT/SIGHUP (and SIGKILL) during a check and a diagnostic:
//!   no process of ours left, asserted through `/proc`.
//! - Every CLI command with its stdout already closed.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{Value, json};
use wait_timeout::ChildExt;

use crate::util::{self, TempDir};

const SESSION: &str = "205cbbdd-a334-4456-9333-f0dfc3cbd802";
const TASK: &str = "task_20261121T110000Z";
/// No run may take longer: a hang is a failure, not a slow test.
const BOUND: Duration = Duration::from_secs(15);

const TASK_MD: &str = "# Task: task_20261121T110000Z

## Metadata

- **Status:** in_progress
- **Priority:** high
- **Created:** 2026-11-21T11:00:00.000Z
- **Session:** 205cbbdd-a334-4456-9333-f0dfc3cbd802

## Description

Add OAuth login

## Steps

- [x] (s1) Read the auth code
- [>] (s2) Add the Google strategy

## Progress

- Task started

## Last Activity

2026-11-21T11:30:00.000Z
";

fn loop_json(project: &Path, session: Option<&str>) -> Value {
    json!({
        "version": 1, "id": "loop-20261121T110000Z-0001", "status": "RUNNING",
        "goal": "make the test suite pass", "promise": "DONE", "checks": [],
        "check_timeout_secs": 30, "diagnostics": false, "no_warnings": false,
        "iteration": 0, "max_iterations": 50, "session_id": session,
        "project_root": project.display().to_string(),
        "started_at": "2026-11-21T11:00:00Z", "updated_at": "2026-11-21T11:00:00Z",
        "ended_at": null, "completion_reason": null, "consecutive_blocks": 0,
        "touched_files": [], "history": []
    })
}

/// Runs `command` with `stdin`, killing it and failing past [`BOUND`].
fn run_bounded(mut command: Command, stdin: &[u8], what: &str) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("spawn binary");
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    // Drain the pipes from threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut buf);
        buf
    });
    let status = match child.wait_timeout(BOUND).unwrap() {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {BOUND:?} (a hang)");
        }
    };
    writer.join().unwrap();
    let output = Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    };
    assert!(
        started.elapsed() < BOUND,
        "{what}: took {:?}",
        started.elapsed()
    );
    output
}

/// One way to damage a file.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Empty,
    Truncated,
    InvalidUtf8,
    NulBytes,
    WrongType,
    FutureVersion,
    Directory,
    Fifo,
    DevZero,
    OutOfRoot,
}

const FAULTS: &[Fault] = &[
    Fault::Empty,
    Fault::Truncated,
    Fault::InvalidUtf8,
    Fault::NulBytes,
    Fault::WrongType,
    Fault::FutureVersion,
    Fault::Directory,
    Fault::Fifo,
    Fault::DevZero,
    Fault::OutOfRoot,
];

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

/// Puts `fault` at `path`, whose good content is `good`. `outside` is a
/// file beyond the state root that a link may point at.
fn damage(path: &Path, good: &str, fault: Fault, outside: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let json = path.extension().is_some_and(|e| e == "json");
    match fault {
        Fault::Empty => std::fs::write(path, "").unwrap(),
        Fault::Truncated => std::fs::write(path, &good[..good.len() / 2]).unwrap(),
        Fault::InvalidUtf8 => {
            let mut bytes = good.as_bytes()[..good.len() / 2].to_vec();
            bytes.extend_from_slice(b"\xff\xfe\xc3");
            std::fs::write(path, bytes).unwrap()
        }
        Fault::NulBytes => std::fs::write(path, good.replace(['"', '#'], "\0")).unwrap(),
        Fault::WrongType if json => std::fs::write(path, "[1, 2, 3]").unwrap(),
        Fault::WrongType => std::fs::write(path, "just some words\n").unwrap(),
        Fault::FutureVersion if json => std::fs::write(path, r#"{"version": 999}"#).unwrap(),
        Fault::FutureVersion => std::fs::write(path, "# Task: x\n\n## Nothing\n").unwrap(),
        Fault::Directory => std::fs::create_dir_all(path.join("inner")).unwrap(),
        Fault::Fifo => mkfifo(path),
        Fault::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Fault::OutOfRoot => std::os::unix::fs::symlink(outside, path).unwrap(),
    }
}

/// A file the suite damages, with its good content and the command that
/// certainly reads it (`None`: only the general promises are checked).
struct Target {
    /// Relative to the project.
    relative: &'static str,
    good: fn(&Path) -> String,
    reader: Option<&'static str>,
}

fn targets() -> Vec<Target> {
    vec![
        Target {
            relative: ".claude/orchestrator/loop.json",
            good: |project| loop_json(project, Some(SESSION)).to_string(),
            reader: Some("cli loop status"),
        },
        Target {
            relative: ".claude/orchestrator/tasks/active.json",
            good: |_| json!({"version": 1, "task_id": TASK}).to_string(),
            reader: Some("cli task status"),
        },
        Target {
            relative: ".claude/orchestrator/tasks/task_20261121T110000Z.md",
            good: |_| TASK_MD.to_string(),
            reader: Some("cli task status"),
        },
        Target {
            relative: ".claude/orchestrator/continuation.json",
            good: |_| {
                json!({"version": 1, "sessions": {SESSION: {"consecutive": 1, "unchanged": 0,
                    "last_open": 1, "updated_at": "2026-11-21T11:00:00Z"}}})
                .to_string()
            },
            reader: Some("stop"),
        },
        Target {
            relative: ".claude/orchestrator/diagnostics.json",
            good: |_| json!({"version": 1, "files": {}}).to_string(),
            reader: Some("post edit"),
        },
        Target {
            relative: ".claude/orchestrator/events.jsonl",
            good: |_| "{\"type\":\"x\"}\n".to_string(),
            reader: Some("cli task progress"),
        },
        Target {
            relative: ".claude/orchestrator/command-state/plan-SPEC-1.json",
            good: |_| json!({"version": 1, "command": "plan"}).to_string(),
            reader: Some("cli resume list"),
        },
        Target {
            relative: ".claude/ralph-hooks.json",
            good: |_| json!({"guard": {"state_files": true}}).to_string(),
            reader: Some("guard write"),
        },
        Target {
            relative: ".lsp.json",
            good: |_| util::fake_lsp_json(&["--mode", "normal"]),
            reader: None,
        },
    ]
}

/// The commands of the matrix: (label, binary, args, stdin).
fn commands(project: &Path) -> Vec<(&'static str, &'static str, Vec<&'static str>, Vec<u8>)> {
    let hook = |event: &str, extra: Value| {
        let mut input = json!({"hook_event_name": event, "session_id": SESSION,
                               "cwd": project, "transcript_path": project.join("t.jsonl")});
        for (key, value) in extra.as_object().unwrap() {
            input[key] = value.clone();
        }
        serde_json::to_vec(&input).unwrap()
    };
    let cli = |label, args: Vec<&'static str>| (label, "ralph-hooks", args, Vec::new());
    vec![
        (
            "stop",
            "ralph-stop-loop-controller",
            vec![],
            hook(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "working"}),
            ),
        ),
        (
            "session start",
            "ralph-session-start",
            vec![],
            hook("SessionStart", json!({"source": "startup"})),
        ),
        (
            "guard task complete",
            "ralph-pre-tool-stop-guard",
            vec![],
            hook(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "ralph-hooks task complete"}}),
            ),
        ),
        (
            "guard push",
            "ralph-pre-tool-stop-guard",
            vec![],
            hook(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "git push"}}),
            ),
        ),
        (
            "guard write",
            "ralph-pre-tool-stop-guard",
            vec![],
            hook(
                "PreToolUse",
                json!({"tool_name": "Write", "tool_input": {"file_path": "src/a.txt", "content": "x"}}),
            ),
        ),
        (
            "post edit",
            "ralph-post-tool-lsp-diagnostic",
            vec![],
            hook(
                "PostToolUse",
                json!({"tool_name": "Write", "tool_input": {"file_path": project.join("src/a.fake"), "content": "fine\n"}}),
            ),
        ),
        cli("cli status", vec!["status"]),
        cli("cli loop status", vec!["loop", "status"]),
        cli("cli loop cancel", vec!["loop", "cancel"]),
        cli(
            "cli loop start",
            vec!["loop", "start", "goal", "--promise", "DONE"],
        ),
        cli("cli task status", vec!["task", "status"]),
        cli("cli task list", vec!["task", "list"]),
        cli("cli task progress", vec!["task", "progress", "did a thing"]),
        cli("cli task start", vec!["task", "start", "another"]),
        cli("cli resume list", vec!["resume", "list"]),
    ]
}

/// A project with an active task with an open step and no loop, and the
/// fake language server for `.fake` files.
fn base_project(project: &Path) {
    util::write_fake_lsp_json(project, &["--mode", "normal"]);
    let tasks = project.join(".claude/orchestrator/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(
        tasks.join("active.json"),
        json!({"version": 1, "task_id": TASK}).to_string(),
    )
    .unwrap();
    std::fs::write(tasks.join(format!("{TASK}.md")), TASK_MD).unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/a.fake"), "fine\n").unwrap();
    std::fs::write(project.join(".claude/orchestrator/keep.txt"), "sibling\n").unwrap();
}

fn assert_contract(what: &str, binary: &str, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code();
    assert!(
        matches!(code, Some(0) | Some(1)),
        "{what}: exit {:?} (stderr: {stderr})",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{what}: panic: {stderr}");
    if binary != "ralph-hooks" {
        assert!(
            !stdout.contains("\"allow\""),
            "{what}: said allow: {stdout}"
        );
        if code == Some(0) && !stdout.trim().is_empty() {
            serde_json::from_str::<Value>(stdout.trim())
                .unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {stdout}"));
        }
        if code == Some(1) {
            assert_eq!(
                stderr.trim().lines().last().map(|l| l.starts_with(binary)),
                Some(true),
                "{what}: a fault must end with one line naming {binary}: {stderr}"
            );
        }
    }
}

fn corrupt_copies(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(path.parent().unwrap())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("{name}.corrupt-")))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_file_times_every_fault_times_every_reader() {
    let mut runs = 0;
    for target in targets() {
        for &fault in FAULTS {
            for index in 0..commands(Path::new("/x")).len() {
                let dir = TempDir::new("adversarial");
                let project = dir.path();
                base_project(project);
                let outside = dir.path().join("outside.json");
                std::fs::write(&outside, "outside the state root\n").unwrap();
                let path = project.join(target.relative);
                damage(&path, &(target.good)(project), fault, &outside);

                let (label, binary, args, stdin) = commands(project).swap_remove(index);
                let what = format!("{label} with {} {fault:?}", target.relative);
                let mut command = util::command(binary, project);
                command.args(&args);
                let output = run_bounded(command, &stdin, &what);
                runs += 1;
                assert_contract(&what, binary, &output);
                assert_eq!(
                    std::fs::read_to_string(&outside).unwrap(),
                    "outside the state root\n",
                    "{what}: wrote through a link out of the state root"
                );
                assert_eq!(
                    std::fs::read_to_string(project.join(".claude/orchestrator/keep.txt")).unwrap(),
                    "sibling\n",
                    "{what}: touched another file"
                );

                // Markdown is read tolerantly: half a task file, or one
                // with NULs in its text, is still a task with a Status.
                let still_a_task = target.relative.ends_with(".md")
                    && matches!(fault, Fault::Truncated | Fault::NulBytes);
                // The event log is only appended to: its content is nobody's
                // input, only what kind of file it is matters.
                let content_of_a_log = target.relative.ends_with(".jsonl")
                    && !matches!(
                        fault,
                        Fault::Directory | Fault::Fifo | Fault::DevZero | Fault::OutOfRoot
                    );
                // A directory among the command-state files is skipped, not
                // read (it is not a document).
                let skipped_directory =
                    target.relative.contains("command-state/") && fault == Fault::Directory;
                // `{"version": 999}` is a valid config: nothing to explain.
                let valid_config =
                    target.relative.ends_with("hooks.json") && fault == Fault::FutureVersion;
                if target.reader != Some(label)
                    || still_a_task
                    || content_of_a_log
                    || valid_config
                    || skipped_directory
                {
                    continue;
                }
                // The command that reads this file moved it aside, or says
                // what is wrong with it, naming it.
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                );
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let moved = !corrupt_copies(&path).is_empty();
                let named = text.contains(&name);
                // A future version is refused, not moved; config and
                // markdown "future versions" are merely other text.
                assert!(
                    moved || named,
                    "{what}: neither moved aside nor explained: {text}"
                );
                // Our own state is never left in the way: damage (of any
                // kind but a newer version) is moved aside and reported.
                let state = target.relative.starts_with(".claude/orchestrator/");
                if state && fault != Fault::FutureVersion {
                    assert!(moved, "{what}: not moved aside: {text}");
                    assert!(named, "{what}: moved without a word: {text}");
                }
                if fault == Fault::FutureVersion && target.relative.ends_with("loop.json") {
                    assert!(text.contains("newer"), "{what}: {text}");
                }
            }
        }
    }
    eprintln!("adversarial matrix: {runs} runs");
}

#[test]
fn damaged_active_pointer_never_deadlocks_task_start() {
    // The audit's class 1: the lock on tasks/active.json was taken twice.
    let dir = TempDir::new("adversarial-deadlock");
    let project = dir.path();
    let run = |args: &[&str]| {
        let mut command = util::command("ralph-hooks", project);
        command.args(args);
        run_bounded(command, b"", &format!("{args:?}"))
    };
    assert!(run(&["task", "start", "a"]).status.success());
    std::fs::write(project.join(".claude/orchestrator/tasks/active.json"), "").unwrap();
    let second = run(&["task", "start", "b"]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    // An unsafe id is moved aside like any other damage.
    std::fs::write(
        project.join(".claude/orchestrator/tasks/active.json"),
        r#"{"version": 1, "task_id": "../../etc/passwd"}"#,
    )
    .unwrap();
    let status = run(&["task", "status"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(String::from_utf8_lossy(&status.stderr).contains("not a valid task id"));
}

#[test]
fn state_root_must_not_be_root_or_home() {
    let dir = TempDir::new("adversarial-root");
    for root in ["/", dir.path().to_str().unwrap()] {
        let mut command = util::command("ralph-hooks", dir.path());
        command
            .env("RALPH_HOOKS_STATE_DIR", root)
            .env("HOME", dir.path())
            .args(["loop", "start", "x", "--promise", "DONE"]);
        let output = run_bounded(command, b"", root);
        assert_eq!(output.status.code(), Some(1), "{root}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("refusing the state root"),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert!(!Path::new("/loop.json").exists());
    assert!(!dir.path().join("loop.json").exists());
}

#[test]
fn empty_check_is_refused() {
    let dir = TempDir::new("adversarial-check");
    let mut command = util::command("ralph-hooks", dir.path());
    command.args(["loop", "start", "x", "--check", ""]);
    let output = run_bounded(command, b"", "--check \"\"");
    assert_eq!(output.status.code(), Some(1));
    assert!(!dir.path().join(".claude/orchestrator/loop.json").exists());
}

/// Runs `args` in a project whose state entry `link` is a symlink to a
/// fresh directory (or file, with `file`) outside; returns the outputs and
/// what the outside holds afterwards.
fn with_link_out(link: &str, file: bool, runs: &[&[&str]]) -> (Vec<Output>, Vec<String>) {
    let dir = TempDir::new("adversarial-links");
    let project = dir.path().join("project");
    base_project(&project);
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let target = if file {
        std::fs::write(elsewhere.join("victim"), "mine\n").unwrap();
        elsewhere.join("victim")
    } else {
        elsewhere.clone()
    };
    let state = project.join(".claude/orchestrator");
    std::os::unix::fs::symlink(&target, state.join(link)).unwrap();
    let outputs = runs
        .iter()
        .map(|args| {
            let mut command = util::command("ralph-hooks", &project);
            command.args(*args);
            run_bounded(command, b"", &format!("{args:?}"))
        })
        .collect();
    let mut outside: Vec<String> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            format!("{name}: {text}")
        })
        .collect();
    outside.sort();
    (outputs, outside)
}

#[test]
fn state_writes_never_follow_links_out_of_the_root() {
    // The event log as a link to someone's file: moved aside, not appended to.
    let (outputs, outside) = with_link_out("events.jsonl", true, &[&["task", "progress", "hi"]]);
    assert!(outputs[0].status.success());
    assert_eq!(outside, vec!["victim: mine\n"]);
    assert!(String::from_utf8_lossy(&outputs[0].stderr).contains("symlink"));

    // A state directory leading out: the archive of a cancelled loop is
    // refused, and the refusal names the link.
    let (outputs, outside) = with_link_out(
        "loops",
        false,
        &[
            &["loop", "start", "x", "--promise", "DONE"],
            &["loop", "cancel"],
        ],
    );
    assert!(outputs[0].status.success());
    assert!(outside.is_empty(), "written outside: {outside:?}");
    let cancel = String::from_utf8_lossy(&outputs[1].stderr);
    assert!(cancel.contains("symlink out of the state root"), "{cancel}");

    // The lock directory leading out: no lock file is created there.
    let (outputs, outside) = with_link_out(".locks", false, &[&["task", "progress", "hi"]]);
    assert!(outside.is_empty(), "written outside: {outside:?}");
    assert_eq!(outputs[0].status.code(), Some(1));
}

// ---- the guard ----

fn guard(project: &Path, tool: Value) -> Output {
    let mut input = json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": project});
    for (key, value) in tool.as_object().unwrap() {
        input[key] = value.clone();
    }
    run_bounded(
        util::command("ralph-pre-tool-stop-guard", project),
        &serde_json::to_vec(&input).unwrap(),
        &input.to_string(),
    )
}

fn denied(output: &Output) -> bool {
    String::from_utf8_lossy(&output.stdout).contains("\"permissionDecision\":\"deny\"")
}

fn bash(project: &Path, command: &str) -> Output {
    guard(
        project,
        json!({"tool_name": "Bash", "tool_input": {"command": command}}),
    )
}

fn project_with_loop(label: &str) -> TempDir {
    let dir = TempDir::new(label);
    let state = dir.path().join(".claude/orchestrator");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("loop.json"),
        loop_json(dir.path(), Some(SESSION)).to_string(),
    )
    .unwrap();
    dir
}

#[test]
fn risky_command_table() {
    let dir = project_with_loop("adversarial-risky");
    let project = dir.path();
    for command in [
        "git push",
        "git push origin main",
        "git -C . push",
        "git -c k=v push",
        "git --no-pager push",
        "git --git-dir=.git --work-tree=. push origin",
        "/usr/bin/git push",
        "./bin/../git push",
        "cargo +nightly publish",
        "cargo -q publish --dry-run",
        "npm --registry https://registry.example publish",
        "npm --registry=https://registry.example publish",
        "gh -R owner/repo pr create --fill",
        "echo 'git push' | sh",
        "printf 'git push\\n' | bash",
        "echo git push | /bin/bash -s",
        "bash <<< 'git push'",
        "bash -c 'git -C . push'",
        "cd sub && git push",
        "env GIT_TRACE=1 git push",
        "git push # \u{FFFD}",
    ] {
        assert!(denied(&bash(project, command)), "not denied: {command}");
    }
    for command in [
        "grep \"git push\" notes.md",
        "git stash push",
        "git stash push -m wip",
        "git commit -m \"git push fixes\"",
        "echo git push",
        "echo 'git push' | grep push",
        "git status",
        "cargo build --release | cat",
        "npm view publish",
        "git log --grep=push",
    ] {
        let output = bash(project, command);
        assert!(
            !denied(&output),
            "denied: {command}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// The reason of a denial, or `None` when the call passed.
fn reason(output: &Output) -> Option<String> {
    let stdout: Value = serde_json::from_slice(&output.stdout).ok()?;
    stdout["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .map(str::to_string)
}

/// A project with a RUNNING loop of this session, the hooks' config and
/// Claude Code's settings, and some ordinary files.
fn supervised_project(label: &str) -> TempDir {
    let dir = project_with_loop(label);
    let project = dir.path();
    std::fs::write(project.join(".claude/ralph-hooks.json"), "{}").unwrap();
    std::fs::write(project.join(".claude/settings.json"), "{\"hooks\":{}}").unwrap();
    std::fs::write(project.join(".lsp.json"), "{}").unwrap();
    std::fs::create_dir_all(project.join("evil/.claude")).unwrap();
    std::fs::write(project.join("evil/.claude/ralph-hooks.json"), "{}").unwrap();
    std::fs::write(
        project.join("ralph-hooks.json"),
        "{\"guard\":{\"loop_commands\":[]}}",
    )
    .unwrap();
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(project.join("src/main.py"), "print(1)\n").unwrap();
    dir
}

// See: issue 24, "What was seen": every spelling of the black-box audit.
#[test]
fn pushes_in_ordinary_spellings_are_denied() {
    let dir = supervised_project("adversarial-push-spellings");
    let project = dir.path();
    std::fs::write(
        project.join("deploy.sh"),
        "#!/bin/sh\nset -e\ngit push origin main\n",
    )
    .unwrap();
    std::fs::write(
        project.join("release"),
        "#!/usr/bin/env bash\ngit -C . push --tags\n",
    )
    .unwrap();
    for command in [
        "env -i git push",
        "command -p git push",
        "time -p git push",
        "sudo -i git push",
        "sudo -s git push",
        "sh -c -- 'git push'",
        "bash <<< $'git push'",
        ">/dev/null git push",
        "2>&1 git push",
        "coproc git push",
        "npx npm publish",
        "npm exec -- npm publish",
        "pnpm publish",
        "yarn publish",
        "yarn npm publish",
        "bun publish",
        // Our own variants.
        "env -u HOME -i git push",
        "nice -n 5 git push origin main",
        "timeout -k 5 60 git push",
        "xargs -0 git push < /dev/null",
        "bash -e -o pipefail -c 'git push'",
        "bash -c \"$(printf 'git push')\"",
        "echo 'git push' | bash -s",
        "cat <<'EOF' | sh\ngit push\nEOF",
        "bash <<'EOF'\ngit push origin main\nEOF",
        "sh deploy.sh",
        "bash ./deploy.sh",
        "./deploy.sh",
        "source deploy.sh",
        "./release",
        "cd src && cd .. && sh deploy.sh",
        "pnpm dlx npm publish",
        "bunx npm publish",
        "npm exec -c 'npm publish'",
        "git push 2>/dev/null >&2",
    ] {
        let output = bash(project, command);
        assert!(denied(&output), "not denied: {command}");
        let reason = reason(&output).unwrap();
        assert!(
            !reason.contains("loop cancel"),
            "the reason teaches the way around: {reason}"
        );
    }
    for command in [
        "cat > RELEASE.md <<'EOF'\nWhen ready: git push origin main\ngit push origin main\nEOF",
        "tee notes.md <<EOF\ngit push\nEOF",
        "python3 - <<'EOF'\nprint('git push')\nEOF",
        "cat <<EOF > docs/howto.md\n    npm publish\nEOF",
        "command -v git push",
        "echo 'sh deploy.sh'",
        "npm view publish",
    ] {
        let output = bash(project, command);
        assert!(!denied(&output), "denied: {command}: {:?}", reason(&output));
    }
}

// See: issue 24: a parent directory was not protected, nor every writer form.
#[test]
fn every_form_of_writing_the_protected_set_is_denied() {
    let dir = supervised_project("adversarial-protect-forms");
    let project = dir.path();
    let abs = project.display().to_string();
    let commands = [
        "rm -rf .claude".to_string(),
        "rm -rf ./.claude".to_string(),
        format!("rm -rf {abs}/.claude"),
        "rm -r .claude/orchestrator".to_string(),
        "rm -f .claude/*".to_string(),
        "mv .claude .claude.bak".to_string(),
        "mv .claude/orchestrator /tmp/o".to_string(),
        "cp -t .claude ralph-hooks.json".to_string(),
        "mv ralph-hooks.json .claude/".to_string(),
        "cp -r evil/.claude .".to_string(),
        "echo x >| .claude/ralph-hooks.json".to_string(),
        "echo x >& .claude/ralph-hooks.json".to_string(),
        "sed -Ei 's/a/b/' .claude/ralph-hooks.json".to_string(),
        // Our own variants.
        "rm -rf .c*".to_string(),
        "rm -rf .claude/{orchestrator,commands}".to_string(),
        "rm -rf \"$PWD/.claude\"".to_string(),
        "rm -rf \"$(pwd)\"/.claude/orchestrator".to_string(),
        "cd .claude && rm -rf orchestrator".to_string(),
        "cd .claude/orchestrator; rm loop.json".to_string(),
        "bash -c 'cd .claude && rm ralph-hooks.json'".to_string(),
        "echo '{\"disableAllHooks\":true}' > .claude/settings.local.json".to_string(),
        "echo '{}' > .claude/settings.json".to_string(),
        "echo x &>> .lsp.json".to_string(),
        ": > .lsp.json".to_string(),
        "exec 3<> .lsp.json".to_string(),
        "echo x 2>.claude/orchestrator/monitor.json".to_string(),
        "echo '{}' > .claude/orchestrator/daemon/daemon.json".to_string(),
        "echo '{}' > .claude/orchestrator/bash-edits.json".to_string(),
        "perl -pi -e 's/true/false/' .claude/ralph-hooks.json".to_string(),
        "sed --in-place=.bak -e 's/a/b/' .lsp.json".to_string(),
        "ln -sf /tmp/evil.json .claude/ralph-hooks.json".to_string(),
        "install -m 644 ralph-hooks.json .claude/ralph-hooks.json".to_string(),
        "rsync -a evil/.claude/ .claude/".to_string(),
        "chmod 000 .claude/orchestrator/loop.json".to_string(),
        "touch -d yesterday .claude/orchestrator/loop.json".to_string(),
        "dd if=/dev/null of=.lsp.json".to_string(),
        "git clean -fdx".to_string(),
        "git stash -u".to_string(),
        "git stash push --all".to_string(),
        "git checkout -- .lsp.json".to_string(),
        "truncate -s0 .claude/orchestrator/loop.json".to_string(),
        "cat ralph-hooks.json | tee -a .claude/ralph-hooks.json".to_string(),
    ];
    for command in &commands {
        let output = bash(project, command);
        assert!(denied(&output), "not denied: {command}");
        let reason = reason(&output).unwrap();
        assert!(
            reason
                .contains("cannot be changed while a Ralph loop or a task continuation is active"),
            "{command}: {reason}"
        );
    }
    assert!(std::fs::read_to_string(project.join(".claude/ralph-hooks.json")).unwrap() == "{}");
}

// See: issue 24: a dangling symlink or a hard link switched the guard off.
#[test]
fn links_to_protected_files_are_denied_and_so_are_writes_through_them() {
    let dir = supervised_project("adversarial-links");
    let project = dir.path();
    std::fs::remove_file(project.join(".claude/ralph-hooks.json")).unwrap();
    std::fs::remove_file(project.join(".lsp.json")).unwrap();
    for command in [
        "ln -s .claude/ralph-hooks.json notes.json",
        "ln -s .lsp.json lsp.json",
        "ln -s ../.claude/ralph-hooks.json src/notes.json",
        "ln -s \"$PWD/.claude/orchestrator/tasks/task_new.md\" t.md",
        "ln .claude/orchestrator/loop.json h.json",
        "ln -s .claude c",
        "cp -s .claude/orchestrator/loop.json l.json",
    ] {
        let output = bash(project, command);
        if command.starts_with("cp -s") {
            // cp -s makes links too; the copy's target is what it names.
            continue;
        }
        assert!(denied(&output), "not denied: {command}");
    }
    // Links made before the loop (or by a way the text cannot see): a write
    // through them is a write of what they name.
    std::os::unix::fs::symlink(".claude/ralph-hooks.json", project.join("notes.json")).unwrap();
    std::os::unix::fs::symlink(".lsp.json", project.join("lsp.json")).unwrap();
    std::fs::hard_link(
        project.join(".claude/orchestrator/loop.json"),
        project.join("h.json"),
    )
    .unwrap();
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": project.join("notes.json"), "content": "{\"guard\":{\"loop_commands\":[]}}"}),
        ),
        (
            "Write",
            json!({"file_path": project.join("lsp.json"), "content": "{}"}),
        ),
        (
            "Write",
            json!({"file_path": project.join("h.json"), "content": "{}"}),
        ),
        (
            "Edit",
            json!({"file_path": project.join("h.json"), "old_string": "RUNNING", "new_string": "CANCELLED"}),
        ),
    ] {
        let output = guard(project, json!({"tool_name": tool, "tool_input": input}));
        assert!(denied(&output), "{tool} {input} not denied");
    }
    for command in [
        "echo '{\"guard\":{\"loop_commands\":[]}}' > notes.json",
        "sed -i s/RUNNING/CANCELLED/ h.json",
        "cat /dev/null > lsp.json",
    ] {
        assert!(denied(&bash(project, command)), "not denied: {command}");
    }
    // An ordinary link is ordinary.
    assert!(!denied(&bash(project, "ln -s src/main.py main.py")));
    std::fs::write(project.join("plain.txt"), "x").unwrap();
    std::fs::hard_link(project.join("plain.txt"), project.join("plain2.txt")).unwrap();
    assert!(!denied(&guard(
        project,
        json!({"tool_name": "Write", "tool_input": {"file_path": project.join("plain2.txt"), "content": "y"}})
    )));
}

// See: issue 24: the agent could end the loop through the CLI.
#[test]
fn the_loop_is_the_users_to_end() {
    let dir = supervised_project("adversarial-loop-control");
    let project = dir.path();
    base_project(project);
    let never_taught = |reason: &str| {
        for hint in [
            "loop cancel",
            "/cancel-loop",
            "/resume-loop",
            "loop resume",
            "terminal",
            "--force",
            "--uninstall",
        ] {
            assert!(
                !reason.contains(hint),
                "the reason teaches {hint:?}: {reason}"
            );
        }
    };
    for command in [
        "ralph-hooks loop cancel",
        "/usr/local/bin/ralph-hooks loop cancel",
        "cd src && ralph-hooks loop cancel",
        "bash -c 'ralph-hooks loop cancel'",
        "ralph-hooks task complete --force",
        "ralph-hooks task complete --force --summary done",
        "ralph-hooks task cancel",
        "ralph-hooks task steps set done",
        "ralph-hooks task step set 'a' 'b'",
        "ralph-hooks install --uninstall",
        "ralph-hooks install --project . --uninstall",
    ] {
        let output = bash(project, command);
        assert!(denied(&output), "not denied: {command}");
        never_taught(&reason(&output).unwrap());
    }
    let skill = |name: &str| {
        guard(
            project,
            json!({"tool_name": "Skill", "tool_input": {"skill": name}}),
        )
    };
    assert!(denied(&skill("cancel-loop")));
    assert!(denied(&guard(
        project,
        json!({"tool_name": "SlashCommand", "tool_input": {"command": "/cancel-loop"}})
    )));
    never_taught(&reason(&skill("cancel-loop")).unwrap());
    assert!(
        !denied(&skill("resume-loop")),
        "nothing to resume while it runs"
    );
    for command in [
        "ralph-hooks loop status",
        "ralph-hooks task status",
        "ralph-hooks task step complete s2",
        "ralph-hooks task step skip s2 --note 'not needed'",
        "ralph-hooks task block --note 'need the secret'",
        "ralph-hooks loop cancel --help",
        "ralph-hooks --project /some/other/project loop cancel",
    ] {
        let output = bash(project, command);
        assert!(!denied(&output), "denied: {command}: {:?}", reason(&output));
    }

    // The user said stop: the loop is PAUSED; resuming is theirs too.
    let mut state = loop_json(project, Some(SESSION));
    state["status"] = json!("PAUSED");
    state["paused_at"] = json!("2026-11-21T11:59:00Z");
    std::fs::write(
        project.join(".claude/orchestrator/loop.json"),
        state.to_string(),
    )
    .unwrap();
    for command in ["ralph-hooks loop resume", "env ralph-hooks loop resume"] {
        let output = bash(project, command);
        assert!(denied(&output), "not denied: {command}");
        never_taught(&reason(&output).unwrap());
    }
    assert!(denied(&skill("resume-loop")));
    assert!(denied(&skill("ralph-hooks:resume-loop")));
    // Paused, so the loop is attended again: cancelling it is allowed.
    assert!(!denied(&bash(project, "ralph-hooks loop cancel")));
}

// See: issue 24: ordinary work in the same loop is never touched.
#[test]
fn ordinary_work_in_a_loop_passes_the_guard() {
    let dir = supervised_project("adversarial-ordinary");
    let project = dir.path();
    base_project(project);
    for command in [
        "git add -A && git commit -m 'wip: git push later'",
        "cargo build --release 2>&1 | tail -5",
        "python3 -m pytest -q > test.log 2>&1",
        "echo hi > notes.txt",
        "rm -rf target build/* dist",
        "mv a.txt b.txt",
        "cp -r src backup",
        "mkdir -p .claude/commands && echo x > .claude/commands/mine.md",
        "sed -i 's/1/2/' src/main.py",
        "touch src/new.py",
        "git stash",
        "git stash pop",
        "git clean -fd",
        "git clean -fdx -e .claude -e .lsp.json",
        "git checkout main",
        "cat .claude/ralph-hooks.json .lsp.json",
        "cp .claude/ralph-hooks.json /tmp/copy.json",
        "diff .claude/settings.json /tmp/x",
        "find . -name '*.pyc'",
        "ln -s src/main.py main.py",
        "cd src && rm -rf __pycache__",
        "echo x > .claude/orchestrator/sessions/abcd1234/notes.md",
        "rm -rf *",
        "ralph-hooks task step complete s2 && ralph-hooks task progress 'done'",
    ] {
        let output = bash(project, command);
        assert!(!denied(&output), "denied: {command}: {:?}", reason(&output));
    }
    for (tool, path) in [
        ("Write", "src/new.py"),
        ("Edit", "src/main.py"),
        ("Write", ".claude/orchestrator/sessions/abcd1234/notes.md"),
        ("Write", ".claude/commands/mine.md"),
    ] {
        let output = guard(
            project,
            json!({"tool_name": tool, "tool_input": {"file_path": project.join(path), "content": "x", "old_string": "1", "new_string": "2"}}),
        );
        assert!(
            !denied(&output),
            "denied: {tool} {path}: {:?}",
            reason(&output)
        );
    }
}

#[test]
fn guard_config_and_state_are_protected_while_unattended() {
    let dir = project_with_loop("adversarial-protect");
    let project = dir.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(project.join(".claude/ralph-hooks.json"), "{}").unwrap();
    std::fs::write(project.join(".lsp.json"), "{}").unwrap();
    std::os::unix::fs::symlink(".claude/ralph-hooks.json", project.join("innocent.json")).unwrap();
    let config = project.join(".claude/ralph-hooks.json");

    for (tool, input) in [
        (
            "Write",
            json!({"file_path": config, "content": "{\"guard\":{\"loop_commands\":[]}}"}),
        ),
        (
            "Edit",
            json!({"file_path": ".claude/ralph-hooks.json", "old_string": "{", "new_string": "{ "}),
        ),
        (
            "MultiEdit",
            json!({"file_path": project.join("src/../.lsp.json"), "edits": []}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": project.join(".claude/ralph-hooks.json"), "new_source": "x"}),
        ),
        (
            "Write",
            json!({"file_path": project.join("innocent.json"), "content": "{}"}),
        ),
    ] {
        let output = guard(project, json!({"tool_name": tool, "tool_input": input}));
        assert!(denied(&output), "{tool} {input} not denied");
        let reason = String::from_utf8_lossy(&output.stdout);
        assert!(!reason.contains("loop_commands"), "{reason}");
    }
    for command in [
        "echo '{\"guard\":{\"loop_commands\":[]}}' > .claude/ralph-hooks.json",
        "echo '{}' >> ./.claude/ralph-hooks.json",
        "echo x>.lsp.json",
        "echo '{}' | tee .claude/ralph-hooks.json",
        "sed -i 's/true/false/' .claude/ralph-hooks.json",
        "cp /tmp/evil.json .claude/ralph-hooks.json",
        "cp /tmp/ralph-hooks.json .claude/",
        "mv .claude/ralph-hooks.json /tmp/x",
        "rm -f .lsp.json",
        "truncate -s 0 .claude/ralph-hooks.json",
        "echo '{}' > innocent.json",
        "echo '{}' > .claude/orchestrator/loop.json",
        "rm .claude/orchestrator/loop.json",
        "bash -c 'rm -rf .claude/orchestrator/tasks'",
    ] {
        assert!(denied(&bash(project, command)), "not denied: {command}");
    }
    for command in [
        "cat .claude/ralph-hooks.json",
        "cp .claude/ralph-hooks.json /tmp/copy.json",
        "echo hi > notes.txt",
        "grep -r ralph-hooks.json .",
    ] {
        assert!(!denied(&bash(project, command)), "denied: {command}");
    }

    // A task in progress with open steps keeps the agent going too.
    std::fs::remove_file(project.join(".claude/orchestrator/loop.json")).unwrap();
    base_project(project);
    assert!(denied(&bash(
        project,
        "echo '{}' > .claude/ralph-hooks.json"
    )));
    // Without a loop or a continuing task the user's own edits go through.
    std::fs::write(
        project.join(format!(".claude/orchestrator/tasks/{TASK}.md")),
        TASK_MD.replace("[>] (s2)", "[x] (s2)"),
    )
    .unwrap();
    assert!(!denied(&bash(
        project,
        "echo '{}' > .claude/ralph-hooks.json"
    )));
    let write = guard(
        project,
        json!({"tool_name": "Write", "tool_input": {"file_path": config, "content": "{}"}}),
    );
    assert!(!denied(&write));
}

#[test]
fn broken_config_keeps_the_default_rules_and_says_so_once() {
    let dir = project_with_loop("adversarial-broken-config");
    let project = dir.path();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    for broken in [
        "",
        "{",
        "[]",
        "{\"guard\": 5}",
        "{\"guard\": {\"loop_commands\": 7}}",
    ] {
        std::fs::write(project.join(".claude/ralph-hooks.json"), broken).unwrap();
        let first = bash(project, "git push");
        assert!(denied(&first), "{broken:?}: the push rule was switched off");
        let stdout = String::from_utf8_lossy(&first.stdout);
        assert!(stdout.contains("default rules"), "{broken:?}: {stdout}");
        let second = bash(project, "git push");
        assert!(denied(&second));
        assert!(
            !String::from_utf8_lossy(&second.stdout).contains("default rules"),
            "{broken:?}: said twice"
        );
    }
    std::fs::remove_file(project.join(".claude/ralph-hooks.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", project.join(".claude/ralph-hooks.json")).unwrap();
    let zero = bash(project, "git push");
    assert!(denied(&zero));
}

#[test]
fn lone_surrogate_in_a_command_is_still_judged() {
    let dir = project_with_loop("adversarial-surrogate");
    let input = format!(
        r#"{{"hook_event_name":"PreToolUse","session_id":"{SESSION}","tool_name":"Bash","tool_input":{{"command":"git push # \ud800"}}}}"#
    );
    let output = run_bounded(
        util::command("ralph-pre-tool-stop-guard", dir.path()),
        input.as_bytes(),
        "surrogate",
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(
        denied(&output),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn wrong_typed_tool_input_is_one_contract() {
    let dir = TempDir::new("adversarial-types");
    for (binary, event) in [
        ("ralph-pre-tool-stop-guard", "PreToolUse"),
        ("ralph-post-tool-lsp-diagnostic", "PostToolUse"),
    ] {
        for tool_input in [
            json!("ls"),
            json!([1]),
            json!({"command": 5}),
            json!({"file_path": 1}),
        ] {
            let input =
                json!({"hook_event_name": event, "tool_name": "Bash", "tool_input": tool_input});
            let output = run_bounded(
                util::command(binary, dir.path()),
                input.to_string().as_bytes(),
                binary,
            );
            assert_eq!(output.status.code(), Some(1), "{binary} {tool_input}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                stderr.starts_with(binary) && stderr.contains("tool_input"),
                "{stderr}"
            );
        }
    }
}

/// A JSON string literal for `text` with lone surrogate escapes put in at
/// the given character positions.
fn with_lone_surrogates(text: &str, at: &[(usize, u16)]) -> String {
    let mut out = String::from("\"");
    for (index, c) in text.chars().enumerate() {
        for (_, unit) in at.iter().filter(|(i, _)| *i == index) {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        let escaped = serde_json::to_string(&c.to_string()).unwrap();
        out.push_str(&escaped[1..escaped.len() - 1]);
    }
    out.push('"');
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lone_surrogates_never_stop_a_decision(
        command in "[ -~]{1,40}",
        surrogates in proptest::collection::vec((0usize..40, 0xD800u16..0xE000), 0..4),
        field in prop_oneof![Just("command"), Just("file_path"), Just("prompt")],
    ) {
        let len = command.chars().count();
        let mut at: Vec<(usize, u16)> = surrogates
            .into_iter()
            .map(|(i, unit)| (i.min(len.saturating_sub(1)), unit))
            .collect();
        // A high surrogate right before a low one is a valid pair, not lone.
        at.sort();
        at.dedup_by_key(|(i, _)| *i);
        let literal = with_lone_surrogates(&command, &at);
        let input = format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"{field}":{literal}}}}}"#
        );
        let parsed = ralph_hooks::hook::protocol::parse_input(
            input.as_bytes(),
            &[ralph_hooks::hook::protocol::EventName::PreToolUse],
        );
        let Ok(ralph_hooks::hook::protocol::HookInput::PreToolUse(tool)) = parsed else {
            return Err(TestCaseError::fail(format!("{input}: {parsed:?}")));
        };
        let value = tool.input_str(field).unwrap_or_default().to_string();
        let expected = at.len();
        prop_assert_eq!(value.matches('\u{FFFD}').count(), expected, "{}", input);
        prop_assert_eq!(value.replace('\u{FFFD}', ""), command.clone());
    }
}

// ---- signals ----

fn pid_from(path: &Path) -> u32 {
    let until = Instant::now() + BOUND;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < until, "{} never written", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_no_process_left(group: u32, what: &str) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let left = util::live_processes_in_group(group);
        let leader = std::fs::read_to_string(format!("/proc/{group}/stat"))
            .ok()
            .filter(|stat| {
                stat.rfind(')')
                    .and_then(|at| stat[at + 1..].split_whitespace().next())
                    != Some("Z")
            });
        if left.is_empty() && leader.is_none() {
            return;
        }
        assert!(
            Instant::now() < until,
            "{what}: processes of group {group} left: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Stop hook running a long check, killed by `signal`.
fn stop_hook_killed_during_check(signal: libc::c_int, check: &str) -> u32 {
    let dir = TempDir::new("adversarial-signal-check");
    let project = dir.path();
    let pid_file = project.join("check.pid");
    let mut state = loop_json(project, Some(SESSION));
    state["checks"] = json!([check.replace("PIDFILE", &pid_file.display().to_string())]);
    state["promise"] = Value::Null;
    let dir_state = project.join(".claude/orchestrator");
    std::fs::create_dir_all(&dir_state).unwrap();
    std::fs::write(dir_state.join("loop.json"), state.to_string()).unwrap();
    let mut command = util::command("ralph-stop-loop-controller", project);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let input = json!({"hook_event_name": "Stop", "session_id": SESSION, "stop_hook_active": false,
                       "last_assistant_message": "working"});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let group = pid_from(&pid_file);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = child.wait_timeout(BOUND).unwrap().expect("hook exits");
    assert!(!status.success(), "{status:?}");
    drop(dir);
    group
}

#[test]
fn sigterm_sigint_sighup_during_a_check_leave_no_process() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let group =
            stop_hook_killed_during_check(signal, "echo $$ > PIDFILE; sleep 60 & sleep 61; wait");
        assert_no_process_left(group, &format!("signal {signal}"));
    }
}

#[test]
fn sigkill_during_a_check_takes_the_check_along() {
    // SIGKILL cannot be handled: PR_SET_PDEATHSIG kills the direct child.
    let group = stop_hook_killed_during_check(libc::SIGKILL, "echo $$ > PIDFILE; exec sleep 60");
    assert_no_process_left(group, "SIGKILL");
}

#[test]
fn sigterm_during_a_diagnostic_leaves_no_server() {
    let dir = TempDir::new("adversarial-signal-lsp");
    let project = dir.path();
    let pid_file = project.join("fake.pid");
    let pid_arg = pid_file.display().to_string();
    util::write_fake_lsp_json(
        project,
        &["--mode", "hang", "--pid-file", &pid_arg, "--helper"],
    );
    util::write_hook_config(project, json!({"diagnostics": {"timeout_ms": 60_000}}));
    let file = project.join("a.fake");
    std::fs::write(&file, "text\n").unwrap();
    let input = json!({"session_id": "s", "cwd": project, "hook_event_name": "PostToolUse",
        "tool_name": "Write", "tool_input": {"file_path": file, "content": "text\n"}});
    let mut command = util::command("ralph-post-tool-lsp-diagnostic", project);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let group = pid_from(&pid_file);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait_timeout(BOUND).unwrap().expect("hook exits");
    assert!(!status.success());
    assert_no_process_left(group, "diagnostic");
}

// ---- closed stdout ----

/// A pipe whose reading end is already closed: every write gets EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are fresh and ours.
    unsafe {
        libc::close(fds[0]);
        OwnedFd::from_raw_fd(fds[1])
    }
}

#[test]
fn every_cli_command_exits_quietly_into_a_closed_pipe() {
    let dir = TempDir::new("adversarial-pipe");
    let project = dir.path();
    base_project(project);
    let template = project.join("t.md");
    std::fs::write(&template, "hello\n").unwrap();
    let template = template.display().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["help"],
        vec!["status"],
        vec!["status", "--json"],
        vec!["loop", "status"],
        vec!["loop", "status", "--json"],
        vec!["task", "status"],
        vec!["task", "status", "--json"],
        vec!["task", "list"],
        vec!["task", "list", "--json"],
        vec!["task", "progress", "x"],
        vec!["task", "step", "add", "more"],
        vec!["validate", "--schema", "phase-result"],
        vec!["path", "tasks"],
        vec!["resume", "list"],
        vec!["render", &template],
        vec!["doctor"],
        vec!["daemon", "status"],
        vec!["daemon", "status", "--json"],
        vec!["loop", "start", "goal", "--promise", "DONE"],
        vec!["loop", "cancel"],
    ];
    for args in commands {
        let mut command = util::command("ralph-hooks", project);
        command
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(closed_pipe()))
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let status = child
            .wait_timeout(BOUND)
            .unwrap()
            .unwrap_or_else(|| panic!("{args:?} hung"));
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            matches!(status.code(), Some(0) | Some(1)),
            "{args:?}: {status:?} {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}
