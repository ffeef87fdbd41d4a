//! The guard under another harness's payloads, where one case takes
//! several hooks in a row (what a golden case cannot show): Copilot CLI and
//! Cursor report a failed or refused tool call to `postToolUseFailure`,
//! which closes the call's check, so the user's `loop cancel` afterwards
//! is not taken for the call's doing.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// Runs one hook binary as `harness` would, the project from the payload.
fn hook(project: &Path, binary: &str, harness: &str, event: Option<&str>, input: &Value) -> Value {
    let mut command = util::command(binary, project);
    command.env_remove("CLAUDE_PROJECT_DIR");
    command.args(["--harness", harness]);
    if let Some(event) = event {
        command.args(["--event", event]);
    }
    let output = util::run_with_stdin(command, input.to_string().as_bytes());
    assert_eq!(
        output.status.code(),
        Some(0),
        "{binary}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
}

fn cli(project: &Path, args: &[&str]) {
    let output = util::run_with_stdin(
        {
            let mut command = util::command("ralph-hooks", project);
            command.args(args);
            command
        },
        b"",
    );
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn status(project: &Path) -> String {
    let text = std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

fn start_loop(project: &Path) {
    cli(
        project,
        &[
            "loop",
            "start",
            "ship it",
            "--check",
            "test -f done.txt",
            "--no-diagnostics",
        ],
    );
}

// See: attack finding F4 (Copilot CLI): a call that failed reached no
// post-tool hook the install registered; the user's `loop cancel` was put
// back at the next agentStop and the loop ran on to COMPLETED.
#[test]
fn copilot_a_cancel_after_a_failed_call_stands() {
    let temp = TempDir::new("copilot-failed-call");
    let project = temp.path();
    start_loop(project);
    let args = json!({"command": "make test"}).to_string();
    let pre = json!({"timestamp": 1, "cwd": project, "sessionId": "s", "toolName": "bash",
                     "toolArgs": args});
    hook(
        project,
        "ralph-pre-tool-stop-guard",
        "copilot",
        Some("preToolUse"),
        &pre,
    );
    let failed = json!({"timestamp": 2, "cwd": project, "sessionId": "s", "toolName": "bash",
                        "toolArgs": args, "error": "Command failed with exit code 2"});
    hook(
        project,
        "ralph-post-tool-lsp-diagnostic",
        "copilot",
        Some("postToolUseFailure"),
        &failed,
    );
    cli(project, &["loop", "cancel"]);
    let stop = json!({"timestamp": 3, "cwd": project, "sessionId": "s", "stop_hook_active": false});
    let answer = hook(
        project,
        "ralph-stop-loop-controller",
        "copilot",
        Some("agentStop"),
        &stop,
    );
    assert_eq!(status(project), "CANCELLED", "put back: {answer}");
    assert_ne!(answer["decision"], "block", "{answer}");
}

// The same under Cursor: a refused call (`failure_type`) closes its check.
#[test]
fn cursor_a_cancel_after_a_refused_call_stands() {
    let temp = TempDir::new("cursor-refused-call");
    let project = temp.path();
    start_loop(project);
    let common = |event: &str| {
        json!({"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [project],
               "hook_event_name": event, "tool_name": "Shell", "tool_use_id": "call_1",
               "tool_input": {"command": "make test"}})
    };
    hook(
        project,
        "ralph-pre-tool-stop-guard",
        "cursor",
        None,
        &common("preToolUse"),
    );
    let mut failed = common("postToolUseFailure");
    failed["failure_type"] = json!("permission_denied");
    failed["error_message"] = json!("The user rejected the command");
    hook(
        project,
        "ralph-post-tool-lsp-diagnostic",
        "cursor",
        None,
        &failed,
    );
    cli(project, &["loop", "cancel"]);
    let stop = json!({"conversation_id": "c1", "generation_id": "g2", "workspace_roots": [project],
                      "hook_event_name": "stop", "status": "completed", "loop_count": 0});
    let answer = hook(project, "ralph-stop-loop-controller", "cursor", None, &stop);
    assert_eq!(status(project), "CANCELLED", "put back: {answer}");
    assert!(answer.get("followup_message").is_none(), "{answer}");
}

/// One shell call's pre-tool and post-tool payloads as `harness` sends
/// them: (binary event argument, payload) for each.
fn shell_call(
    harness: &str,
    project: &Path,
    id: &str,
    command: &str,
) -> [(Option<&'static str>, Value); 2] {
    match harness {
        "codex" => {
            let pre = json!({"session_id": "s", "turn_id": "t1", "transcript_path": null,
                "cwd": project, "hook_event_name": "PreToolUse", "model": "gpt-5",
                "permission_mode": "default", "tool_name": "Bash",
                "tool_input": {"command": command}, "tool_use_id": id});
            let mut post = pre.clone();
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] = json!("");
            [(None, pre), (None, post)]
        }
        "gemini" => {
            let pre = json!({"session_id": "s", "cwd": project, "hook_event_name": "BeforeTool",
                "timestamp": "2026-11-21T12:00:00.000Z", "tool_name": "run_shell_command",
                "tool_input": {"command": command}});
            let mut post = pre.clone();
            post["hook_event_name"] = json!("AfterTool");
            post["tool_response"] = json!({"llmContent": ""});
            [(None, pre), (None, post)]
        }
        "cursor" => {
            let pre = json!({"conversation_id": "s", "generation_id": id, "cursor_version": "2.1.46",
                "workspace_roots": [project], "hook_event_name": "preToolUse", "tool_name": "Shell",
                "tool_input": {"command": command}, "tool_use_id": id, "cwd": project});
            let mut post = pre.clone();
            post["hook_event_name"] = json!("postToolUse");
            post["tool_output"] = json!("");
            [(None, pre), (None, post)]
        }
        _ => {
            let args = json!({"command": command}).to_string();
            let pre = json!({"timestamp": 1, "cwd": project, "sessionId": "s",
                "toolName": "bash", "toolArgs": args});
            let mut post = pre.clone();
            post["timestamp"] = json!(2);
            post["toolResult"] = json!({"resultType": "success", "textResultForLlm": ""});
            [(Some("preToolUse"), pre), (Some("postToolUse"), post)]
        }
    }
}

// See: attack finding H-1 (harness round): under each harness, the file
// that registers the hooks for that harness was neither denied before a
// shell call that emptied it nor put back after one that did it unseen:
// its next session ran no hooks at all.
#[test]
fn each_harness_own_hook_registration_is_guarded() {
    for (harness, file) in [
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("cursor", ".cursor/hooks.json"),
        ("copilot", ".github/hooks/ralph-hooks.json"),
    ] {
        let temp = TempDir::new(&format!("harness-own-config-{harness}"));
        let project = temp.path();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(project)
            .status()
            .unwrap();
        assert!(git.success());
        cli(project, &["install", "--harness", harness]);
        start_loop(project);
        let registered = std::fs::read(project.join(file)).unwrap();

        // Said plainly: denied before it runs.
        let [(event, pre), _] =
            shell_call(harness, project, "c1", &format!("echo '{{}}' > {file}"));
        let answer = hook(project, "ralph-pre-tool-stop-guard", harness, event, &pre);
        assert!(
            answer.to_string().contains("deny"),
            "{harness}: not denied: {answer}"
        );

        // Spelled so no text rule sees it: put back after the call.
        let (head, tail) = file.split_at(4);
        let command = format!("python3 -c \"open('{head}'+'{tail}','w').write('{{}}')\"");
        let [(pre_event, pre), (post_event, post)] = shell_call(harness, project, "c2", &command);
        let answer = hook(
            project,
            "ralph-pre-tool-stop-guard",
            harness,
            pre_event,
            &pre,
        );
        assert!(!answer.to_string().contains("deny"), "{harness}: {answer}");
        let ran = std::process::Command::new("sh")
            .args(["-c", &command])
            .current_dir(project)
            .status()
            .unwrap();
        assert!(ran.success());
        assert_ne!(std::fs::read(project.join(file)).unwrap(), registered);
        let answer = hook(
            project,
            "ralph-post-tool-lsp-diagnostic",
            harness,
            post_event,
            &post,
        );
        assert_eq!(
            std::fs::read(project.join(file)).unwrap(),
            registered,
            "{harness}: the registration was not put back: {answer}"
        );
    }
}
