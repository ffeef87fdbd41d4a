//! Diagnostics and the Ralph loop, end to end through the real binaries
//! with the fake language server: edits that introduce errors are blocked
//! during a loop, errors keep the loop running, fixing them completes it,
//! an inconclusive check never completes it, and another session's loop is
//! left alone.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "loop-session";

struct Project {
    dir: TempDir,
}

impl Project {
    fn new(mode: &str, timeout_ms: u64) -> Project {
        let dir = TempDir::new("diag-loop");
        util::write_fake_lsp_json(dir.path(), &["--mode", mode]);
        util::write_hook_config(
            dir.path(),
            json!({"diagnostics": {"timeout_ms": timeout_ms, "warmup_wait_ms": 0}}),
        );
        Project { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn start_loop(&self, extra: &[&str]) {
        let mut command = util::command("ralph-hooks", self.path());
        command
            .args(["loop", "start", "fix every fake error"])
            .args(extra)
            .env("CLAUDE_CODE_SESSION_ID", SESSION);
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "loop start failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Writes the file and runs the post-tool hook as an Edit (or a Write
    /// that created it, when it did not exist).
    fn edit(&self, session: &str, relative: &str, text: &str) -> Value {
        let file = self.path().join(relative);
        let original = std::fs::read_to_string(&file).ok();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        let payload = match &original {
            Some(original) => json!({
                "session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
                "tool_response": {"filePath": file, "originalFile": original},
            }),
            None => json!({
                "session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Write",
                "tool_input": {"file_path": file, "content": text},
                "tool_response": {"type": "create", "filePath": file, "originalFile": null},
            }),
        };
        run_json("ralph-post-tool-lsp-diagnostic", self.path(), &payload)
    }

    fn stop(&self) -> Value {
        let payload = json!({
            "session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "done",
        });
        run_json("ralph-stop-loop-controller", self.path(), &payload)
    }

    fn loop_state(&self) -> Value {
        let text =
            std::fs::read_to_string(self.path().join(".claude/orchestrator/loop.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn file(&self, relative: &str) -> PathBuf {
        self.path().join(relative)
    }
}

/// Runs a hook; stdout as JSON (`null` when empty). Exit 0 is required.
fn run_json(binary: &str, project: &Path, payload: &Value) -> Value {
    let output = util::run_with_stdin(
        util::command(binary, project),
        payload.to_string().as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{binary} stderr: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{binary} stdout not JSON ({e}): {stdout}"))
}

fn context(output: &Value) -> &str {
    output["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn errors_keep_the_loop_running_and_fixing_them_completes_it() {
    let project = Project::new("normal", 5_000);
    project.start_loop(&["--diagnostics=touched"]);

    // An edit that introduces an error is blocked, with the error as reason.
    let edit = project.edit(SESSION, "src/a.fake", "ok\nERROR: broken thing\n");
    assert_eq!(edit["decision"], "block", "{edit}");
    let reason = edit["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("This edit introduced 1 error in src/a.fake"),
        "{reason}"
    );
    assert!(
        reason.contains("src/a.fake:2:1 error [fake E1] broken thing"),
        "{reason}"
    );
    let touched = project.loop_state()["touched_files"].clone();
    assert_eq!(touched, json!([project.file("src/a.fake")]));

    // At Stop the error keeps the loop running.
    let stop = project.stop();
    assert_eq!(stop["decision"], "block", "{stop}");
    let prompt = stop["reason"].as_str().unwrap();
    assert!(
        prompt.contains("- diagnostics: the files this loop touched still have 1 error"),
        "{prompt}"
    );
    assert!(
        prompt.contains("    src/a.fake:2:1 error [fake E1] broken thing"),
        "{prompt}"
    );
    let state = project.loop_state();
    assert_eq!(state["status"], "RUNNING");
    assert_eq!(
        state["history"][0]["conditions"]["diagnostics"]["files"]["src/a.fake"],
        json!({"errors": 1, "warnings": 0})
    );

    // The fix: clean, says what it fixed, not blocked.
    let fix = project.edit(SESSION, "src/a.fake", "ok\nall fine now\n");
    assert_eq!(fix["decision"], Value::Null, "{fix}");
    assert_eq!(
        context(&fix),
        "LSP diagnostics for src/a.fake (fake): clean — no errors or warnings. This edit fixed 1 earlier problem(s): 1 error."
    );

    // And the loop completes.
    let stop = project.stop();
    assert_eq!(stop["decision"], Value::Null, "{stop}");
    assert!(
        stop["systemMessage"]
            .as_str()
            .unwrap()
            .contains("COMPLETED"),
        "{stop}"
    );
    let state = project.loop_state();
    assert_eq!(state["status"], "COMPLETED");
    assert_eq!(
        state["history"][1]["conditions"]["diagnostics"]["files"]["src/a.fake"],
        json!({"errors": 0, "warnings": 0})
    );
}

#[test]
fn the_follow_up_prompt_says_what_was_fixed_and_what_is_new() {
    let project = Project::new("normal", 5_000);
    project.start_loop(&["--diagnostics=touched"]);
    project.edit(SESSION, "a.fake", "ERROR: first\nERROR: second\n");
    assert_eq!(project.stop()["decision"], "block");
    project.edit(SESSION, "a.fake", "fixed\nERROR: second\nERROR: third\n");
    let stop = project.stop();
    let prompt = stop["reason"].as_str().unwrap();
    assert!(
        prompt.contains(
            "Fixed since the previous iteration (1):\n    a.fake:1:1 error [fake E1] first"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "New since the previous iteration (1):\n    a.fake:3:1 error [fake E1] third"
        ),
        "{prompt}"
    );
}

#[test]
fn warnings_fail_only_a_no_warnings_loop() {
    let relaxed = Project::new("normal", 5_000);
    relaxed.start_loop(&["--diagnostics=touched"]);
    relaxed.edit(SESSION, "a.fake", "WARN: meh\n");
    assert_eq!(relaxed.stop()["decision"], Value::Null);
    assert_eq!(relaxed.loop_state()["status"], "COMPLETED");

    let strict = Project::new("normal", 5_000);
    strict.start_loop(&["--diagnostics=touched", "--no-warnings"]);
    let edit = strict.edit(SESSION, "a.fake", "WARN: meh\n");
    assert_eq!(
        edit["decision"],
        Value::Null,
        "warnings never block an edit"
    );
    let stop = strict.stop();
    assert_eq!(stop["decision"], "block");
    assert!(
        stop["reason"]
            .as_str()
            .unwrap()
            .contains("a.fake:1:1 warning [fake W1] meh")
    );
}

#[test]
fn an_inconclusive_check_does_not_complete_the_loop() {
    let project = Project::new("hang", 1_000);
    project.start_loop(&["--diagnostics=touched"]);
    let edit = project.edit(SESSION, "a.fake", "whatever\n");
    assert!(context(&edit).contains("inconclusive"), "{edit}");
    assert_eq!(
        edit["decision"],
        Value::Null,
        "a broken server never blocks an edit"
    );
    let stop = project.stop();
    assert_eq!(stop["decision"], "block", "{stop}");
    let prompt = stop["reason"].as_str().unwrap();
    assert!(
        prompt.contains("- diagnostics: inconclusive — 1 file(s) could not be checked"),
        "{prompt}"
    );
    assert!(
        prompt.contains("a.fake (fake): no result within"),
        "{prompt}"
    );
    assert_eq!(project.loop_state()["status"], "RUNNING");
}

#[test]
fn pre_existing_errors_do_not_block_an_edit() {
    let project = Project::new("normal", 5_000);
    // The file and its error exist before the loop.
    project.edit(SESSION, "a.fake", "ERROR: old problem\n");
    project.start_loop(&["--diagnostics=touched"]);
    let edit = project.edit(SESSION, "a.fake", "new line above\nERROR: old problem\n");
    assert_eq!(edit["decision"], Value::Null, "{edit}");
    let text = context(&edit);
    assert!(
        text.contains(
            "Already there before this edit (1):\na.fake:2:1 error [fake E1] old problem"
        ),
        "{text}"
    );
}

#[test]
fn another_sessions_loop_is_left_alone() {
    let project = Project::new("normal", 5_000);
    project.start_loop(&["--diagnostics=touched"]);
    let edit = project.edit("someone-else", "a.fake", "ERROR: theirs\n");
    assert_eq!(edit["decision"], Value::Null, "{edit}");
    assert!(context(&edit).contains("issues found"));
    assert_eq!(project.loop_state()["touched_files"], json!([]));
}

#[test]
fn a_loop_without_diagnostics_does_not_block_or_check() {
    let project = Project::new("normal", 5_000);
    project.start_loop(&["--no-diagnostics", "--promise", "DONE"]);
    let edit = project.edit(SESSION, "a.fake", "ERROR: ignored by the loop\n");
    assert_eq!(edit["decision"], Value::Null, "{edit}");
}

/// A committed error in a file the loop never touched: `--diagnostics`
/// (with a promise too) checks the whole project and blocks with it.
#[test]
fn diagnostics_means_the_whole_project() {
    for extra in [
        &["--diagnostics"][..],
        &["--diagnostics", "--promise", "DONE"],
    ] {
        let project = Project::new("normal", 5_000);
        std::fs::write(project.path().join("app.fake"), "ERROR: committed one\n").unwrap();
        project.start_loop(extra);
        let state = project.loop_state();
        assert_eq!(state["project"], true, "{extra:?}: {state}");
        let stop = project.stop();
        assert_eq!(stop["decision"], "block", "{extra:?}: {stop}");
        let prompt = stop["reason"].as_str().unwrap();
        assert!(prompt.contains("committed one"), "{prompt}");
        assert!(prompt.contains("no errors in the project"), "{prompt}");
    }
}

/// `--diagnostics=touched` is the narrow form, and its completion message
/// says that only the touched files were checked.
#[test]
fn diagnostics_touched_checks_the_touched_files_and_says_so() {
    let project = Project::new("normal", 5_000);
    std::fs::write(project.path().join("app.fake"), "ERROR: committed one\n").unwrap();
    project.start_loop(&["--diagnostics=touched"]);
    let stop = project.stop();
    let message = stop["systemMessage"].as_str().unwrap_or_default();
    assert!(message.contains("COMPLETED"), "{stop}");
    assert!(
        message.contains("no language-server errors in the files the loop touched"),
        "{message}"
    );
}

#[test]
fn an_unknown_diagnostics_scope_is_refused() {
    let project = Project::new("normal", 5_000);
    let output = util::command("ralph-hooks", project.path())
        .args(["loop", "start", "x", "--diagnostics=everything"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--diagnostics must be project or touched, not \"everything\""),
        "{stderr}"
    );
}
