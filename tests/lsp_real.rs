//! The diagnostics hook against the real language servers: pyright, ruff,
//! typescript-language-server, clangd and rust-analyzer, each on a file with
//! a known error, asserting the message, the line and the severity. A
//! missing server skips its test with a printed reason, or fails it under
//! `RALPH_HOOKS_REQUIRE_SERVERS=1` (CI; `.ci/install-servers.sh` installs
//! them).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

/// Real servers start cold in every test; their speed is the benchmark's
/// business, so the deadline here is generous.
const TIMEOUT_MS: u64 = 30_000;

/// Like `util::require_tool`, but the tool must also run: rustup installs a
/// `rust-analyzer` proxy that fails when the component is missing.
fn require_working(name: &str, version_args: &[&str], why: &str) -> Option<PathBuf> {
    let path = util::require_tool(name, why)?;
    let works = Command::new(&path)
        .args(version_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if works {
        return Some(path);
    }
    if util::servers_required() {
        panic!(
            "{name} is on PATH but `{name} {}` fails; required for {why}",
            version_args.join(" ")
        );
    }
    util::skip(why, &format!("{name} is on PATH but does not run"));
    None
}

pub(crate) fn project(config: Value) -> TempDir {
    let dir = TempDir::new("lsp-real");
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    let mut config = config;
    config["diagnostics"]["timeout_ms"] = json!(TIMEOUT_MS);
    std::fs::write(
        dir.path().join(".claude/ralph-hooks.json"),
        config.to_string(),
    )
    .unwrap();
    dir
}

pub(crate) fn write(project: &Path, relative: &str, text: &str) -> PathBuf {
    let path = project.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the hook on `payload`; returns its additionalContext and the whole output.
pub(crate) fn run_hook(project: &Path, payload: &Value) -> (String, Value) {
    let command = util::command("ralph-post-tool-lsp-diagnostic", project);
    let output = util::run_with_stdin(command, payload.to_string().as_bytes());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout:?}; stderr: {stderr}"));
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (context, value)
}

pub(crate) fn write_payload(file: &Path, text: &str) -> Value {
    json!({
        "session_id": "real-session",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file, "content": text,
                          "structuredPatch": [], "originalFile": null},
    })
}

fn assert_line(context: &str, expected_prefix: &str) {
    assert!(
        context
            .lines()
            .any(|line| line.starts_with(expected_prefix)),
        "no line starting with {expected_prefix:?} in:\n{context}"
    );
}

/// The configuration of a pyright-only test: ruff, which lints beside
/// pyright where installed, is turned off (`ruff_lints_beside_pyright`).
static NO_RUFF: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| json!({"lsp": {"servers": {"ruff": {"disabled": true}}}}));

const PYTHON_SAMPLE: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\nresult: str = add(1, 2)\n";

/// pyrefly with a configuration it cannot read answers every file with no
/// diagnostics; the edit's report says the file was not checked, never
/// "clean" (attack AF-1), cold and through the daemon.
#[test]
fn pyrefly_that_cannot_read_its_configuration_is_inconclusive_not_clean() {
    if util::require_tool("pyrefly", "the pyrefly configuration test").is_none() {
        return;
    }
    let dir = project(json!({"lsp": {"servers": {"ruff": {"disabled": true}}}}));
    write(dir.path(), "pyrefly.toml", "search-path = \"src\"\n");
    let text = "x: int = 1\ny: str = 2\n";
    let file = write(dir.path(), "main.py", text);
    for daemon in [false, true] {
        let mut command = util::command("ralph-post-tool-lsp-diagnostic", dir.path());
        if daemon {
            command.env_remove("RALPH_HOOKS_DAEMON");
        }
        let output =
            util::run_with_stdin(command, write_payload(&file, text).to_string().as_bytes());
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("inconclusive") && stdout.contains("pyrefly.toml"),
            "daemon {daemon}: {stdout}"
        );
        assert!(!stdout.contains("clean —"), "daemon {daemon}: {stdout}");
    }
    let mut stop = util::command("ralph-hooks", dir.path());
    stop.env_remove("RALPH_HOOKS_DAEMON")
        .args(["daemon", "stop"]);
    let _ = stop.output();
}

/// A ruff configuration that does not load: the ruff server answers with
/// its default rules, where `ruff check` refuses to check; the edit's
/// report says ruff did not check the file (re-attack RE-10).
#[test]
fn ruff_that_cannot_read_its_configuration_is_inconclusive() {
    if util::require_tool("ruff", "the ruff configuration test").is_none() {
        return;
    }
    let dir = project(json!({}));
    write(dir.path(), "ruff.toml", "[lint]\nselect = \"F401\"\n");
    let text = "import os\n";
    let file = write(dir.path(), "main.py", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert!(
        context.contains("(ruff): inconclusive") && context.contains("ruff.toml"),
        "{context}"
    );
    assert!(!context.contains("[Ruff F401]"), "{context}");
    // A project check that the ruff server answers (configured in
    // `.lsp.json`, so not its command line) says the same.
    write(
        dir.path(),
        ".lsp.json",
        r#"{"ruff": {"initializationOptions": {"settings": {}}}}"#,
    );
    let mut check = util::command("ralph-hooks", dir.path());
    let output = check.args(["check", "--no-ast-grep"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.contains("ruff: the server could not read its configuration"),
        "{text}"
    );
}

#[test]
fn pyright_reports_the_type_error_of_the_issue() {
    // pyright-langserver has no --version; being on PATH is the test.
    if util::require_tool("pyright-langserver", "the pyright test").is_none() {
        return;
    }
    let dir = project(NO_RUFF.clone());
    let file = write(dir.path(), "src/app.py", PYTHON_SAMPLE);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, PYTHON_SAMPLE));
    assert!(
        context.starts_with("LSP diagnostics for src/app.py (pyright): issues found — 1 error."),
        "{context}"
    );
    assert_line(
        &context,
        "src/app.py:4:15 error [Pyright reportAssignmentType] Type \"int\" is not assignable to declared type \"str\"",
    );
}

#[test]
fn pyright_edit_tells_new_errors_from_old_across_a_line_shift() {
    if util::require_tool("pyright-langserver", "the pyright classification test").is_none() {
        return;
    }
    let dir = project(NO_RUFF.clone());
    let before = "x: str = 1\n\ndef f() -> int:\n    return 0\n";
    let file = write(dir.path(), "m.py", before);
    // The first check stores the baseline: one error on line 1.
    let (first, _) = run_hook(dir.path(), &write_payload(&file, before));
    assert_line(&first, "m.py:1:10 error [Pyright reportAssignmentType]");
    // Two lines inserted above; a new error at the end.
    let after =
        "import sys\nimport json\nx: str = 1\n\ndef f() -> int:\n    return 0\n\ny: int = \"no\"\n";
    std::fs::write(&file, after).unwrap();
    let edit = json!({
        "session_id": "real-session",
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": file, "old_string": "x", "new_string": "y"},
        "tool_response": {"filePath": file, "originalFile": before, "structuredPatch": [
            {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 3,
             "lines": ["+import sys", "+import json", " x: str = 1"]},
            {"oldStart": 4, "oldLines": 1, "newStart": 6, "newLines": 3,
             "lines": ["     return 0", "+", "+y: int = \"no\""]}
        ]},
    });
    let (context, _) = run_hook(dir.path(), &edit);
    // The two new imports are unused: warnings since issue 11.
    let introduced = context
        .find("Introduced by this edit (3):")
        .expect(&context);
    assert_line(
        &context,
        "m.py:1:8 warning [Pyright] \"sys\" is not accessed",
    );
    let already = context
        .find("Already there before this edit (1):")
        .expect(&context);
    let new_error = context
        .find("m.py:8:10 error [Pyright reportAssignmentType]")
        .expect(&context);
    let old_error = context
        .find("m.py:3:10 error [Pyright reportAssignmentType]")
        .expect(&context);
    assert!(
        introduced < new_error && new_error < already && already < old_error,
        "{context}"
    );
}

#[test]
fn ruff_reports_an_undefined_name() {
    if require_working("ruff", &["--version"], "the ruff test").is_none() {
        return;
    }
    // Only ruff for Python here.
    let dir = project(json!({"lsp": {"servers": {
        "pyright": {"disabled": true}, "basedpyright": {"disabled": true},
        "ty": {"disabled": true}, "pyrefly": {"disabled": true}
    }}}));
    let text = "import os\n\nprint(undefined_name)\n";
    let file = write(dir.path(), "tool.py", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert!(context.contains("(ruff): issues found"), "{context}");
    assert_line(
        &context,
        "tool.py:3:7 error [Ruff F821] Undefined name `undefined_name`",
    );
    assert_line(
        &context,
        "tool.py:1:8 warning [Ruff F401] `os` imported but unused",
    );
}

/// Issue 30 item 4: where both are installed, ruff lints beside pyright
/// after an edit, each finding under its own source.
#[test]
fn ruff_lints_beside_pyright_after_an_edit() {
    if util::require_tool("pyright-langserver", "the ruff-beside-pyright test").is_none()
        || require_working("ruff", &["--version"], "the ruff-beside-pyright test").is_none()
    {
        return;
    }
    let dir = project(json!({}));
    let text = "import os\n\nx = f\"abc\"\ny: int = \"a\"\n";
    let file = write(dir.path(), "m.py", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert!(
        context.starts_with("LSP diagnostics for m.py (pyright + ruff): issues found"),
        "{context}"
    );
    assert_line(&context, "m.py:4:10 error [Pyright reportAssignmentType]");
    assert_line(
        &context,
        "m.py:3:5 warning [Ruff F541] f-string without any placeholders",
    );
    assert_line(
        &context,
        "m.py:1:8 warning [Ruff F401] `os` imported but unused",
    );
    // Turned off in `.lsp.json`, it is not asked.
    std::fs::write(
        dir.path().join(".lsp.json"),
        r#"{"ruff": {"disabled": true}}"#,
    )
    .unwrap();
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert!(
        context.starts_with("LSP diagnostics for m.py (pyright): issues found"),
        "{context}"
    );
    assert!(!context.contains("[Ruff"), "{context}");
}

/// The global TypeScript 5 or 6 that `.ci/install-servers.sh` installs,
/// linked into the test project (TypeScript 7 ships no tsserver).
pub(crate) fn typescript_with_tsserver() -> Option<PathBuf> {
    let output = Command::new("npm")
        .args(["root", "-g"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let typescript = root.join("typescript");
    typescript
        .join("lib/tsserver.js")
        .is_file()
        .then_some(typescript)
}

#[test]
fn typescript_language_server_reports_a_type_error() {
    if util::require_tool("typescript-language-server", "the TypeScript test").is_none() {
        return;
    }
    let Some(typescript) = typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the TypeScript test",
            "no global typescript@5 with tsserver",
        );
        return;
    };
    let dir = project(json!({}));
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, dir.path().join("node_modules/typescript")).unwrap();
    write(
        dir.path(),
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}"#,
    );
    let text = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport function main(): void {\n  const result: string = add(1, 2);\n  console.log(result);\n}\n";
    let file = write(dir.path(), "src/index.ts", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert_line(
        &context,
        "src/index.ts:6:9 error [typescript 2322] Type 'number' is not assignable to type 'string'.",
    );
}

#[test]
fn clangd_reports_an_undeclared_identifier() {
    if require_working("clangd", &["--version"], "the clangd test").is_none() {
        return;
    }
    let dir = project(json!({}));
    let text =
        "int add(int a, int b) { return a + b; }\n\nint main(void) {\n  return undefined_var;\n}\n";
    let file = write(dir.path(), "main.c", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    assert_line(
        &context,
        "main.c:4:10 error [clang undeclared_var_use] Use of undeclared identifier 'undefined_var'",
    );
}

/// An empty Cargo package of its own (`[workspace]`, so no parent's applies).
fn rust_project() -> TempDir {
    let dir = project(json!({}));
    write(
        dir.path(),
        "Cargo.toml",
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    dir
}

#[test]
fn rust_analyzer_reports_mismatched_types() {
    if require_working("rust-analyzer", &["--version"], "the rust-analyzer test").is_none() {
        return;
    }
    let dir = rust_project();
    let text = "fn main() {\n    let s: String = 5;\n    println!(\"{s}\");\n}\n";
    let file = write(dir.path(), "src/main.rs", text);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, text));
    // rustc's own diagnostic, from the cargo check rust-analyzer runs.
    assert_line(
        &context,
        "src/main.rs:2:21 error [rustc E0308] mismatched types",
    );
}

/// Warm re-checks through the daemon of one file, edited between checks;
/// each report must contain its expected text.
fn warm_rechecks(dir: &Path, file: &str, steps: &[(&str, &str)]) {
    for (text, expected) in steps {
        write(dir, file, text);
        let output = util::command("ralph-hooks", dir)
            .env_remove("RALPH_HOOKS_DAEMON")
            .args(["check", file, "--no-ast-grep"])
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&output.stdout);
        assert!(report.contains(expected), "{text:?}: {report}");
    }
    let stop = util::command("ralph-hooks", dir)
        .env_remove("RALPH_HOOKS_DAEMON")
        .args(["daemon", "stop"])
        .output()
        .unwrap();
    assert_eq!(stop.status.code(), Some(0));
}

const CLEAN: &str = "no problems (0 inconclusive";

/// A warm typescript-language-server publishes nothing when a clean file
/// changes and stays clean; every re-check through the daemon must still
/// be conclusive (it was "inconclusive" after waiting out the deadline).
#[test]
fn typescript_warm_rechecks_of_a_clean_file_are_conclusive() {
    if util::require_tool("typescript-language-server", "warm TypeScript re-checks").is_none() {
        return;
    }
    let dir = project(json!({}));
    warm_rechecks(
        dir.path(),
        "a.ts",
        &[
            ("export const a: number = 1;\n", CLEAN),
            ("export const b: number = 2;\n", CLEAN),
            (
                "export const c: number = \"x\";\n",
                "1 error in 1 file (0 inconclusive",
            ),
            ("export const d: number = 4;\n", CLEAN),
            ("export const e: number = 5;\n", CLEAN),
        ],
    );
}

/// The same for rust-analyzer, whose clean-stays-clean re-check waited out
/// the whole 30 s deadline.
#[test]
fn rust_analyzer_warm_rechecks_of_a_clean_file_are_conclusive() {
    if require_working(
        "rust-analyzer",
        &["--version"],
        "warm rust-analyzer re-checks",
    )
    .is_none()
    {
        return;
    }
    let dir = rust_project();
    let body = |expr: &str| format!("pub fn f(x: u32) -> u32 {{\n    {expr}\n}}\n");
    warm_rechecks(
        dir.path(),
        "src/lib.rs",
        &[
            (&body("x + 1"), CLEAN),
            (&body("x + 2"), CLEAN),
            (&body("x + \"a\""), "1 error in 1 file (0 inconclusive"),
            (&body("x + 4"), CLEAN),
            (&body("x + 5"), CLEAN),
        ],
    );
}
