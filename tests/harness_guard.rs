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
