//! Inputs and files too large to handle the usual way: the answer says so,
//! and a loop never counts such a file as clean.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

fn cli(project: &Path, args: &[&str]) -> Output {
    util::command("ralph-hooks", project)
        .args(args)
        .env("CLAUDE_CODE_SESSION_ID", "big")
        .output()
        .unwrap()
}

#[test]
fn an_edit_whose_input_is_over_the_stdin_limit_says_not_checked_and_the_loop_checks_it() {
    let dir = TempDir::new("oversized");
    util::write_fake_lsp_json(dir.path(), &["--mode", "normal"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 20_000, "loop_budget_ms": 60_000}}),
    );
    let started = cli(
        dir.path(),
        &[
            "loop",
            "start",
            "--check",
            "true",
            "--diagnostics=touched",
            "x",
        ],
    );
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    // 9 MB: the Write's payload holds it twice (input and response).
    let file = dir.path().join("big.fake");
    let mut text = String::from("y = 1  # ERROR: y is wrong\n");
    text.push_str(&format!("# {}\n", "p".repeat(97)).repeat(90_000));
    std::fs::write(&file, &text).unwrap();
    let payload = json!({
        "session_id": "big", "transcript_path": "/tmp/x.jsonl", "cwd": dir.path(),
        "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file, "content": text,
                          "structuredPatch": [], "originalFile": null},
        "tool_use_id": "t1",
    });
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", dir.path()),
        payload.to_string().as_bytes(),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(context.contains("big.fake"), "{answer}");
    assert!(context.contains("larger than 8 MiB"), "{answer}");
    assert!(context.contains("do not take this as clean"), "{answer}");

    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".claude/orchestrator/loop.json")).unwrap(),
    )
    .unwrap();
    let touched = state["touched_files"].to_string();
    assert!(touched.contains("big.fake"), "{state}");

    // The loop's Stop checks the file from disk: its error keeps it going.
    let stop = json!({"session_id": "big", "hook_event_name": "Stop",
                      "stop_hook_active": false, "last_assistant_message": "done"});
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", dir.path()),
        stop.to_string().as_bytes(),
    );
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(answer.contains("\"decision\":\"block\""), "{answer}");
    assert!(!answer.contains("COMPLETED"), "{answer}");
}

/// A Python file with a long run of comment lines, which tree-sitter-python
/// parses in time growing with the run's square (engine attack E12): the
/// built-in rules skip it, and both `check` and the post-edit hook say the
/// file is not proven rather than clean or hanging.
#[test]
fn a_python_file_with_a_huge_comment_run_is_not_scanned_and_says_so() {
    let dir = TempDir::new("comment-run");
    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({"pyright": {"disabled": true}, "ty": {"disabled": true},
               "pyrefly": {"disabled": true}, "ruff": {"disabled": true}})
        .to_string(),
    )
    .unwrap();
    let file = dir.path().join("long.py");
    let mut text = String::from("y = eval(\"1\")\n");
    text.push_str(&"# note\n".repeat(2_500));
    std::fs::write(&file, &text).unwrap();
    let short = dir.path().join("short.py");
    std::fs::write(&short, "y = eval(\"1\")\n# one\n").unwrap();

    let output = cli(dir.path(), &["check", "--json", "long.py", "short.py"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let status_of = |name: &str| {
        report["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == name)
            .unwrap_or_else(|| panic!("{name} in {report:#}"))
            .clone()
    };
    let long = status_of("long.py");
    assert_eq!(long["status"], "inconclusive", "{long:#}");
    assert!(
        long.to_string().contains("comment lines in a row"),
        "{long:#}"
    );
    let short = status_of("short.py");
    assert_ne!(short["status"], "inconclusive", "{short:#}");
    assert!(short.to_string().contains("no-eval"), "{short:#}");

    // The post-edit hook, with a (fake) server for Python files.
    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({"fake": {"command": util::fake_lsp_server(), "args": ["--mode", "normal"],
                        "extensionToLanguage": {".py": "python"}},
               "ruff": {"disabled": true}})
        .to_string(),
    )
    .unwrap();
    let payload = json!({
        "session_id": "big", "cwd": dir.path(),
        "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file},
        "tool_use_id": "t1",
    });
    let output = util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", dir.path()),
        payload.to_string().as_bytes(),
    );
    assert_eq!(output.status.code(), Some(0));
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(answer.contains("comment lines in a row"), "{answer}");
}

/// Runs the guard on `payload` (`harness`: `--harness NAME`), the project
/// from the payload for other harnesses.
fn guard(project: &Path, harness: Option<&str>, payload: &Value) -> Output {
    let mut command = util::command("ralph-pre-tool-stop-guard", project);
    if let Some(harness) = harness {
        command.env_remove("CLAUDE_PROJECT_DIR");
        command.args(["--harness", harness]);
    }
    util::run_with_stdin(command, payload.to_string().as_bytes())
}

// See: attack finding F1: a tool call over the 8 MiB the hooks read was a
// fault (exit 1), which Codex, Gemini and Cursor take as "go on", so a
// patch that set the loop COMPLETED beside 9 MB of padding ran unguarded;
// Claude Code's own Write of the loop's state padded past 8 MiB too.
#[test]
fn a_tool_call_over_the_input_limit_is_refused_while_a_loop_runs() {
    let dir = TempDir::new("oversized-guard");
    let project = dir.path();
    let padding = format!("+{}\n", "x".repeat(100)).repeat(90_000);
    let patch = format!(
        "*** Begin Patch\n*** Update File: .claude/orchestrator/loop.json\n@@\n-  \"status\": \"RUNNING\",\n+  \"status\": \"COMPLETED\",\n*** Add File: big.txt\n{padding}*** End Patch\n"
    );
    let codex = json!({"session_id": "s1", "turn_id": "t3", "transcript_path": null,
                       "cwd": project, "hook_event_name": "PreToolUse", "model": "gpt",
                       "permission_mode": "default", "tool_name": "apply_patch",
                       "tool_input": {"command": patch}, "tool_use_id": "c1"});
    let claude = json!({"session_id": "s1", "transcript_path": "/tmp/x.jsonl", "cwd": project,
                        "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t1",
                        "tool_input": {"file_path": project.join(".claude/orchestrator/loop.json"),
                                       "content": padding}});
    let gemini = json!({"session_id": "s1", "transcript_path": "", "cwd": project,
                        "hook_event_name": "BeforeTool", "timestamp": "2026-11-26T00:00:00Z",
                        "tool_name": "write_file",
                        "tool_input": {"file_path": ".claude/orchestrator/loop.json",
                                       "content": padding}});
    // No loop: too large to read is a fault that lets the call go on.
    let free = guard(project, Some("codex"), &codex);
    assert_eq!(free.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&free.stderr).contains("larger than 8 MiB"));

    let started = cli(project, &["loop", "start", "--check", "false", "x"]);
    assert!(started.status.success());
    let denied = |output: &Output| {
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        answer.to_string()
    };
    let answer = denied(&guard(project, Some("codex"), &codex));
    assert!(
        answer.contains("\"permissionDecision\":\"deny\""),
        "{answer}"
    );
    assert!(answer.contains("larger than 8 MiB"), "{answer}");
    let answer = denied(&guard(project, None, &claude));
    assert!(
        answer.contains("\"permissionDecision\":\"deny\""),
        "{answer}"
    );
    let answer = denied(&guard(project, Some("gemini"), &gemini));
    assert!(answer.contains("\"decision\":\"deny\""), "{answer}");
    // Cursor names the project only in `workspace_roots`, and the hook may
    // run anywhere (re-attack RA-5).
    let cursor = json!({"conversation_id": "c1", "generation_id": "g1",
                        "workspace_roots": [project], "hook_event_name": "preToolUse",
                        "tool_name": "Write",
                        "tool_input": {"file_path": project.join("big.txt"), "content": padding}});
    let mut command = util::command("ralph-pre-tool-stop-guard", project);
    command
        .env_remove("CLAUDE_PROJECT_DIR")
        .args(["--harness", "cursor"])
        .current_dir("/");
    let answer = denied(&util::run_with_stdin(
        command,
        cursor.to_string().as_bytes(),
    ));
    assert!(answer.contains("\"permission\":\"deny\""), "{answer}");
}
