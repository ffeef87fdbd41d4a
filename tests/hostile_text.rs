//! Text from language servers, rules and users that holds control
//! characters (terminal escapes, BEL, CR, NUL, backspace, right-to-left
//! overrides) reaches Claude and the terminal escaped: in the post-edit
//! hook's answer, `check` (text and JSON), `search` and `loop start`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// The characters that must never come out raw.
const RAW: [char; 7] = [
    '\u{1b}', '\u{7}', '\r', '\u{0}', '\u{8}', '\u{202e}', '\u{202d}',
];

fn assert_no_raw_controls(what: &str, text: &str) {
    for c in RAW {
        assert!(
            !text.contains(c),
            "{what} holds a raw U+{:04X}: {text:?}",
            u32::from(c)
        );
    }
}

fn cli(project: &Path, args: &[&str]) -> Output {
    util::command("ralph-hooks", project)
        .args(args)
        .output()
        .unwrap()
}

fn post_write(project: &Path, relative: &str, text: &str) -> Output {
    let file = project.join(relative);
    std::fs::write(&file, text).unwrap();
    let payload = json!({
        "session_id": "hostile", "cwd": project, "hook_event_name": "PostToolUse",
        "tool_name": "Write", "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file, "content": text,
                          "structuredPatch": [], "originalFile": null},
    });
    util::run_with_stdin(
        util::command("ralph-post-tool-lsp-diagnostic", project),
        payload.to_string().as_bytes(),
    )
}

fn additional_context(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no additionalContext in {value}"))
        .to_string()
}

#[test]
fn a_servers_control_characters_are_escaped_in_the_hook_and_in_check() {
    let dir = TempDir::new("hostile-server");
    util::write_fake_lsp_json(dir.path(), &["--mode", "control-chars"]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": 10_000, "warmup_wait_ms": 10_000}}),
    );
    let output = post_write(dir.path(), "a.fake", "x = 1\n");
    assert_eq!(output.status.code(), Some(0));
    let context = additional_context(&output);
    assert_no_raw_controls("the hook's additionalContext", &context);
    assert!(context.contains("EVIL\\u{1b}]0;pwned\\u{7}"), "{context}");
    assert!(context.contains("[src\\u{1b}[31m C\\u{7}D]"), "{context}");
    assert!(context.contains("OVERWRITE\\u{202e}DESREVER"), "{context}");

    let text = cli(dir.path(), &["check"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("EVIL"), "{stdout}");
    assert_no_raw_controls("`check`", &stdout);

    let json = cli(dir.path(), &["check", "--json"]);
    let stdout = String::from_utf8_lossy(&json.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let diagnostic = &report["files"][0]["diagnostics"][0];
    for field in ["message", "source", "code"] {
        let value = diagnostic[field].as_str().unwrap_or_default();
        assert!(!value.is_empty(), "{field} missing: {diagnostic}");
        assert_no_raw_controls(&format!("`check --json` {field}"), value);
    }
}

/// A Python file whose `yaml.load` call holds ESC and BEL in a string
/// literal: the built-in rule's fix quotes it.
/// (No carriage return inside the string: Python, like the rules now,
/// reads a lone one as a line end, which makes the file invalid.)
const HOSTILE_PY: &str =
    "import yaml\ndef f():\n    return yaml.load(\"A\u{1b}]0;pwned\u{7}\u{1b}[2J\u{8}B\")\n";

fn rules_only_project() -> TempDir {
    let dir = TempDir::new("hostile-rule");
    // Python files go to the fake server (which finds nothing in this
    // text), so the finding is the built-in rule's.
    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({"fake": {
            "command": util::fake_lsp_server().display().to_string(),
            "args": ["--mode", "normal"],
            "extensionToLanguage": {".py": "python"},
        }})
        .to_string(),
    )
    .unwrap();
    dir
}

#[test]
fn a_rules_fix_quoting_a_string_with_escapes_is_escaped_in_the_hook_check_and_search() {
    let dir = rules_only_project();
    let output = post_write(dir.path(), "q.py", HOSTILE_PY);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let context = additional_context(&output);
    assert!(context.contains("yaml-unsafe-load"), "{context}");
    assert!(
        context.contains("safe_load(\"A\\u{1b}]0;pwned\\u{7}"),
        "{context}"
    );
    assert_no_raw_controls("the hook's additionalContext", &context);

    let check = cli(dir.path(), &["check"]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(stdout.contains("fix: yaml.safe_load"), "{stdout}");
    assert_no_raw_controls("`check`", &stdout);

    let json = cli(dir.path(), &["check", "--json"]);
    let stdout = String::from_utf8_lossy(&json.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let fix = report["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "yaml-unsafe-load")
        .and_then(|d| d["fix"].as_str())
        .unwrap_or_else(|| panic!("no fix in {report}"));
    assert_no_raw_controls("`check --json` fix", fix);

    let search = cli(dir.path(), &["search", "yaml.load($A)"]);
    let stdout = String::from_utf8_lossy(&search.stdout);
    assert!(stdout.contains("q.py:3:"), "{stdout}");
    assert_no_raw_controls("`search`", &stdout);
}

#[test]
fn loop_start_echoes_the_goal_escaped() {
    let dir = TempDir::new("hostile-goal");
    let output = cli(
        dir.path(),
        &[
            "loop",
            "start",
            "--check",
            "true",
            "--no-diagnostics",
            "goal\u{7}\u{1b}]0;PWNED\u{7}\u{1b}[2J",
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Goal: goal\\u{7}\\u{1b}]0;PWNED"),
        "{stdout}"
    );
    assert_no_raw_controls("`loop start`", &stdout);
}

/// `fix`, `rewrite` (their diffs and lists), `doctor` and `daemon status`
/// print a repository's file names, lines and `.lsp.json` server names
/// escaped (engine attack E-6, E-17); the hook's answer names the server
/// escaped too.
#[test]
fn fix_rewrite_doctor_and_the_hook_escape_names_and_lines_from_the_repository() {
    let dir = rules_only_project();
    let evil_name = "e\u{1b}[31mvil\nname.py";
    std::fs::write(dir.path().join(evil_name), HOSTILE_PY).unwrap();
    for args in [
        &["fix", "--dry-run"][..],
        &["rewrite", "yaml.load($A)", "yaml.safe_load($A)"][..],
        &["rewrite", "yaml.load($A)", "yaml.safe_load($A)", "--apply"][..],
    ] {
        let output = cli(dir.path(), args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("safe_load") || stdout.contains("rewrote"),
            "{args:?}: {stdout}"
        );
        assert_no_raw_controls(&format!("`{}`", args.join(" ")), &stdout);
        assert!(
            !stdout.contains("vil\nname.py"),
            "{args:?}: a newline in a file name started a line: {stdout}"
        );
    }

    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({"fake\u{1b}]0;PWN\u{7}": {
            "command": util::fake_lsp_server().display().to_string(),
            "args": ["--mode", "normal", "\u{1b}[2J"],
            "extensionToLanguage": {".py": "python"},
        }})
        .to_string(),
    )
    .unwrap();
    let doctor = cli(dir.path(), &["doctor"]);
    let stdout = String::from_utf8_lossy(&doctor.stdout);
    assert!(stdout.contains("fake"), "{stdout}");
    assert_no_raw_controls("`doctor`", &stdout);
    let output = post_write(dir.path(), "b.py", "x = 1\n");
    let context = additional_context(&output);
    assert!(context.contains("fake\\u{1b}]0;PWN"), "{context}");
    assert_no_raw_controls("the hook's additionalContext", &context);
}

// See: harness attack H-10: a loop's goal with ESC, BEL and CR reached the
// Stop's follow-up raw; under Cursor and Copilot it is submitted as the
// next prompt, shown in the terminal. Every answer's prose is escaped.
#[test]
fn a_goal_with_control_characters_reaches_no_follow_up_raw() {
    let dir = crate::util::TempDir::new("hostile-goal-follow-up");
    let project = dir.path();
    let goal = "goal \u{1b}]0;PWNED\u{7} \u{1b}[2J\r\nFAKE LINE";
    let mut start = crate::util::command("ralph-hooks", project);
    start.args([
        "loop",
        "start",
        goal,
        "--check",
        "false",
        "--no-diagnostics",
    ]);
    assert!(crate::util::run_with_stdin(start, b"").status.success());
    for (harness, payload) in [
        (
            None,
            serde_json::json!({"hook_event_name": "Stop", "session_id": "s1", "cwd": project,
            "stop_hook_active": false, "last_assistant_message": "done"}),
        ),
        (
            Some("gemini"),
            serde_json::json!({"hook_event_name": "AfterAgent", "session_id": "s1",
            "cwd": project, "prompt": "x", "prompt_response": "y", "stop_hook_active": false}),
        ),
    ] {
        let mut stop = crate::util::command("ralph-stop-loop-controller", project);
        if let Some(harness) = harness {
            stop.env_remove("CLAUDE_PROJECT_DIR")
                .args(["--harness", harness]);
        }
        let output = crate::util::run_with_stdin(stop, payload.to_string().as_bytes());
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let reason = answer["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("FAKE LINE"), "{harness:?}: {text}");
        assert!(
            !reason.contains(['\u{1b}', '\u{7}', '\r']),
            "{harness:?}: raw control characters in {reason:?}"
        );
    }
}
