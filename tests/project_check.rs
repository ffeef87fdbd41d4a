//! `ralph-hooks check` and the goal-only loop (issue 11), through the real
//! binaries: the fixture project `fixtures/check/project` (Python errors in
//! two files, a TypeScript error, a clean file, a file hitting each built-in
//! Python rule, a broken file under `node_modules/` and one under a
//! `.gitignore`d folder) against the real pyright and
//! typescript-language-server; the fake server for timing faults and exact
//! loop mechanics.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "goal-session";

/// The fixture project in a temp dir, with the git-ignored file the
/// repository cannot hold and a generous per-file timeout (the servers
/// start cold in-process on a busy machine).
fn fixture_project() -> Option<TempDir> {
    util::require_tool("pyright-langserver", "the project check tests")?;
    util::require_tool("typescript-language-server", "the project check tests")?;
    let dir = TempDir::new("check");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/check/project");
    util::copy_tree(&fixture, dir.path());
    std::fs::create_dir_all(dir.path().join("ignored")).unwrap();
    std::fs::write(
        dir.path().join("ignored/bad.py"),
        "value: int = \"ignored by .gitignore\"\n",
    )
    .unwrap();
    util::write_hook_config(
        dir.path(),
        // Ruff, which lints beside pyright where installed, has its own
        // test (`ruff_lints_beside_pyright_in_check_and_can_be_turned_off`).
        json!({"diagnostics": {"timeout_ms": 60_000, "loop_budget_ms": 180_000},
               "lsp": {"servers": {"ruff": {"disabled": true}}}}),
    );
    Some(dir)
}

/// A project whose `.fake` files go to the fake server in `mode`.
fn fake_project(mode: &str, timeout_ms: u64, loop_budget_ms: u64) -> TempDir {
    let dir = TempDir::new("goal-loop");
    util::write_fake_lsp_json(dir.path(), &["--mode", mode]);
    util::write_hook_config(
        dir.path(),
        json!({"diagnostics": {"timeout_ms": timeout_ms, "loop_budget_ms": loop_budget_ms}}),
    );
    dir
}

fn cli(project: &Path, args: &[&str]) -> Output {
    util::command("ralph-hooks", project)
        .args(args)
        .env("CLAUDE_CODE_SESSION_ID", SESSION)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stop(project: &Path) -> Value {
    let payload = json!({
        "session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": false,
        "last_assistant_message": "done",
    });
    let output = util::run_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        payload.to_string().as_bytes(),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "stop hook stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = stdout(&output);
    if text.trim().is_empty() {
        return Value::Null;
    }
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stop output not JSON ({e}): {text}"))
}

fn loop_state(project: &Path) -> Value {
    let text = std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The problem lines of a text report (`path:line:col severity [source code]`),
/// without the messages (server wording may change between versions).
fn problem_heads(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim_start)
        .filter(|line| line.contains(" error [") || line.contains(" warning ["))
        .map(|line| line.split(']').next().unwrap().to_string() + "]")
        .collect()
}

/// Everything the fixture project has, errors first, then by path.
const FIXTURE_PROBLEMS: &[&str] = &[
    "app/models.py:8:14 error [Pyright reportAssignmentType]",
    "app/models.py:9:13 error [Pyright reportAssignmentType]",
    "app/rules.py:6:5 error [ast-grep sql-injection-risk]",
    "app/service.py:5:5 error [ast-grep sql-injection-risk]",
    "app/service.py:10:12 error [Pyright reportUndefinedVariable]",
    "web/index.ts:2:14 error [typescript 2322]",
    "app/rules.py:5:35 warning [ast-grep mutable-default-argument]",
    "app/rules.py:7:5 warning [ast-grep no-eval]",
    "app/rules.py:8:5 warning [ast-grep subprocess-shell-true]",
    "app/rules.py:10:12 warning [ast-grep yaml-unsafe-load]",
    "web/index.ts:4:8 warning [ast-grep convert-var-to-const]",
    "web/index.ts:7:3 warning [ast-grep no-debugger]",
    "web/index.ts:8:10 warning [ast-grep no-eval]",
];

#[test]
fn check_reports_every_problem_in_text_and_json() {
    let Some(project) = fixture_project() else {
        return;
    };
    let output = cli(project.path(), &["check"]);
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "errors found: exit 1\n{text}"
    );
    assert_eq!(problem_heads(&text), FIXTURE_PROBLEMS, "{text}");
    assert!(
        text.ends_with(
            "Checked 5 files: 6 errors, 7 warnings in 4 files (0 inconclusive, 0 languages without a server)\n"
        ),
        "{text}"
    );
    // Ignored by .gitignore, or under node_modules: never checked.
    assert!(!text.contains("ignored/bad.py"), "{text}");
    assert!(!text.contains("node_modules"), "{text}");
    // The rule's fix travels with the finding.
    assert!(text.contains("    fix: yaml.safe_load(text)"), "{text}");

    let output = cli(project.path(), &["check", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        report["summary"],
        json!({"files": 5, "clean": 1, "with_issues": 4, "inconclusive": 0, "no_server": 0,
               "errors": 6, "warnings": 7, "info": 0, "hints": 0,
               "by_source": {"Pyright": 3, "ast-grep": 9, "typescript": 1}})
    );
    let files: Vec<(String, String, String)> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["server"].as_str().unwrap_or("-").to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = |path: &str, server: &str, status: &str| {
        (path.to_string(), server.to_string(), status.to_string())
    };
    assert_eq!(
        files,
        vec![
            expect("app/clean.py", "pyright", "clean"),
            expect("app/models.py", "pyright", "issues"),
            expect("app/rules.py", "pyright", "issues"),
            expect("app/service.py", "pyright", "issues"),
            expect("web/index.ts", "typescript-language-server", "issues"),
        ]
    );
    // Each diagnostic as the JSON carries it, in the order of the text.
    let mut heads = Vec::new();
    for file in report["files"].as_array().unwrap() {
        for d in file["diagnostics"].as_array().unwrap() {
            heads.push((
                d["severity"].as_str().unwrap() != "error",
                format!(
                    "{}:{}:{} {} [{} {}]",
                    file["path"].as_str().unwrap(),
                    d["line"],
                    d["column"],
                    d["severity"].as_str().unwrap(),
                    d["source"].as_str().unwrap(),
                    d["code"].as_str().unwrap()
                ),
            ));
        }
    }
    heads.sort_by_key(|(warning, _)| *warning);
    let heads: Vec<String> = heads.into_iter().map(|(_, h)| h).collect();
    assert_eq!(heads, FIXTURE_PROBLEMS);
    let models = &report["files"][1]["diagnostics"][0];
    assert_eq!(
        (&models["end_line"], &models["end_column"]),
        (&json!(8), &json!(21))
    );
    let yaml = &report["files"][2]["diagnostics"][4];
    assert_eq!(yaml["code"], "yaml-unsafe-load");
    assert_eq!(yaml["fix"], "yaml.safe_load(text)");
}

#[test]
fn check_exit_codes_paths_and_min_severity() {
    let Some(project) = fixture_project() else {
        return;
    };
    // A clean file alone: exit 0.
    let output = cli(project.path(), &["check", "app/clean.py"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(
        stdout(&output),
        "Checked 1 file: no problems (0 inconclusive, 0 languages without a server)\n"
    );

    // One file under three spellings is one file, shown by its own path
    // (attack AE-14: `app/../app/clean.py` was checked and counted again).
    let output = cli(
        project.path(),
        &[
            "check",
            "app/clean.py",
            "app/../app/clean.py",
            "./app/clean.py",
        ],
    );
    assert_eq!(
        stdout(&output),
        "Checked 1 file: no problems (0 inconclusive, 0 languages without a server)\n"
    );

    // A path that does not exist: exit 2, said on stderr.
    let output = cli(project.path(), &["check", "app", "nope.py"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "ralph-hooks: no such file or directory: nope.py\n"
    );

    // --min-severity error: the warnings are gone, the counts follow.
    let output = cli(project.path(), &["check", "--min-severity", "error", "app"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        problem_heads(&text),
        FIXTURE_PROBLEMS[..5],
        "only the Python errors under app/\n{text}"
    );
    assert!(
        text.ends_with(
            "Checked 4 files: 5 errors in 3 files (0 inconclusive, 0 languages without a server)\n"
        ),
        "{text}"
    );

    // A file under node_modules is never checked, even when named.
    let output = cli(project.path(), &["check", "node_modules/broken/index.ts"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(
        stdout(&output).starts_with("Checked 0 files"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn an_inconclusive_file_is_exit_2_never_clean() {
    let project = fake_project("hang", 500, 30_000);
    std::fs::write(project.path().join("a.fake"), "fine\n").unwrap();
    let output = cli(project.path(), &["check"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(
        text.ends_with(
            "Checked 1 file: no problems (1 inconclusive, 0 languages without a server)\n"
        ),
        "{text}"
    );
}

#[test]
fn goal_only_loop_runs_until_python_and_typescript_have_no_errors() {
    let Some(project) = fixture_project() else {
        return;
    };
    let root = project.path();
    // A goal alone is a loop: start runs the check and gives the first
    // feedback, by file, every language in one list.
    let output = cli(root, &["loop", "start", "fix all type errors"]);
    let text = stdout(&output);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains(
            "- no errors in the project (language servers and ast-grep, `ralph-hooks check`)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Project check now: Checked 5 files: 6 errors, 7 warnings in 4 files (0 inconclusive, 0 languages without a server)\nBy file:\n    app/models.py: 2 errors\n    app/rules.py: 1 error, 4 warnings\n    app/service.py: 2 errors\n    web/index.ts: 1 error, 3 warnings\n"
        ),
        "{text}"
    );
    assert_eq!(problem_heads(&text), FIXTURE_PROBLEMS, "{text}");
    assert_eq!(
        loop_state(root)["start_record"]["files"]["app/models.py"],
        json!({"errors": 2, "warnings": 0})
    );

    // A stop blocks, naming every file with errors.
    let first = stop(root);
    assert_eq!(first["decision"], "block", "{first}");
    let prompt = first["reason"].as_str().unwrap();
    assert!(
        prompt.contains("- diagnostics: the project still has 6 errors, 7 warnings (the loop needs no errors). Fix them, errors first:"),
        "{prompt}"
    );
    for file in [
        "app/models.py:",
        "app/rules.py:6:5 error",
        "app/service.py:",
        "web/index.ts:2:14 error",
    ] {
        assert!(prompt.contains(file), "{file} missing:\n{prompt}");
    }

    // Fixing one file takes it off the next prompt, which says it was fixed.
    std::fs::write(
        root.join("app/models.py"),
        "\"\"\"Fixed.\"\"\"\n\n\ndef total(prices: list[int]) -> int:\n    return sum(prices)\n\n\ncount: int = 3\nname: int = total([1, 2])\n",
    )
    .unwrap();
    let second = stop(root);
    assert_eq!(second["decision"], "block", "{second}");
    let prompt = second["reason"].as_str().unwrap();
    assert!(
        prompt.contains("the project still has 4 errors, 7 warnings"),
        "{prompt}"
    );
    let remaining = prompt.split("  Fixed since").next().unwrap();
    assert!(
        !remaining.contains("app/models.py"),
        "models.py still listed:\n{prompt}"
    );
    assert!(
        prompt.contains("Fixed since the previous iteration (2):\n    app/models.py:8:14 error [Pyright reportAssignmentType]"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "By file, since the previous check:\n    app/models.py: fixed — 2 errors → clean"
        ),
        "{prompt}"
    );
    let history = &loop_state(root)["history"];
    assert_eq!(
        history[1]["conditions"]["project"]["files"],
        json!({
            "app/rules.py": {"errors": 1, "warnings": 4},
            "app/service.py": {"errors": 2, "warnings": 0},
            "web/index.ts": {"errors": 1, "warnings": 3},
        })
    );

    // Fixing the rest completes the loop although warnings remain.
    let rules = std::fs::read_to_string(root.join("app/rules.py"))
        .unwrap()
        .replace(
            "cursor.execute(\"DELETE FROM t WHERE name = '\" + text + \"'\")",
            "cursor.execute(\"DELETE FROM t WHERE name = %s\", (text,))",
        );
    std::fs::write(root.join("app/rules.py"), rules).unwrap();
    std::fs::write(
        root.join("app/service.py"),
        "\"\"\"Fixed.\"\"\"\n\n\ndef find_user(cursor, user_id):\n    cursor.execute(\"SELECT * FROM users WHERE id = %s\", (user_id,))\n    return cursor.fetchone()\n",
    )
    .unwrap();
    let web = std::fs::read_to_string(root.join("web/index.ts"))
        .unwrap()
        .replace("port: number = \"8080\"", "port: number = 8080");
    std::fs::write(root.join("web/index.ts"), web).unwrap();
    let last = stop(root);
    assert_eq!(last["decision"], Value::Null, "{last}");
    let message = last["systemMessage"].as_str().unwrap();
    assert!(message.contains("COMPLETED"), "{message}");
    assert!(
        message.contains(
            "Summary: 3 iteration(s), 6 problem(s) fixed (errors 6 → 0, warnings 7 → 7), "
        ),
        "{message}"
    );
    let state = loop_state(root);
    assert_eq!(state["status"], "COMPLETED");
    assert_eq!(
        state["history"][2]["conditions"]["project"]["files"],
        json!({
            "app/rules.py": {"errors": 0, "warnings": 4},
            "web/index.ts": {"errors": 0, "warnings": 3},
        })
    );
}

#[test]
fn no_warnings_keeps_a_goal_only_loop_running_and_cancel_says_how_far_it_got() {
    let relaxed = fake_project("normal", 5_000, 30_000);
    std::fs::write(relaxed.path().join("a.fake"), "WARN: meh\n").unwrap();
    let output = cli(relaxed.path(), &["loop", "start", "clean up"]);
    assert!(output.status.success());
    assert!(
        stdout(&output).contains("Nothing to fix: the loop completes at the next stop."),
        "{}",
        stdout(&output)
    );
    let done = stop(relaxed.path());
    assert_eq!(
        done["decision"],
        Value::Null,
        "a warning alone does not block: {done}"
    );
    assert_eq!(loop_state(relaxed.path())["status"], "COMPLETED");

    let strict = fake_project("normal", 5_000, 30_000);
    std::fs::write(strict.path().join("a.fake"), "WARN: meh\n").unwrap();
    std::fs::write(strict.path().join("b.fake"), "ERROR: bad\n").unwrap();
    let output = cli(
        strict.path(),
        &["loop", "start", "clean up", "--no-warnings"],
    );
    assert!(output.status.success());
    assert!(
        stdout(&output).contains("By file:\n    b.fake: 1 error\n    a.fake: 1 warning\n"),
        "errors first: {}",
        stdout(&output)
    );
    std::fs::write(strict.path().join("b.fake"), "fine\n").unwrap();
    let blocked = stop(strict.path());
    assert_eq!(blocked["decision"], "block", "{blocked}");
    let prompt = blocked["reason"].as_str().unwrap();
    assert!(
        prompt.contains("the project still has 1 warning (the loop needs no errors and warnings)"),
        "{prompt}"
    );
    assert!(
        prompt.contains("    a.fake:1:1 warning [fake W1] meh"),
        "{prompt}"
    );
    assert!(
        prompt.contains("By file, since the previous check:\n    b.fake: fixed — 1 error → clean"),
        "{prompt}"
    );
    assert_eq!(loop_state(strict.path())["status"], "RUNNING");

    let output = cli(strict.path(), &["loop", "cancel"]);
    let text = stdout(&output);
    assert!(
        text.contains(
            "Progress so far: 1 iteration(s), 1 problem(s) fixed (errors 1 → 0, warnings 1 → 1), "
        ),
        "{text}"
    );
    assert!(
        text.contains("Restart it with: ralph-hooks loop start \"clean up\" --no-warnings\n"),
        "{text}"
    );
}

#[test]
fn a_path_narrows_the_goal_only_loop() {
    let project = fake_project("normal", 5_000, 30_000);
    std::fs::create_dir_all(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/a.fake"), "ERROR: in scope\n").unwrap();
    std::fs::write(project.path().join("other.fake"), "ERROR: out of scope\n").unwrap();
    let output = cli(
        project.path(),
        &["loop", "start", "fix src", "--path", "src"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = stdout(&output);
    assert!(
        text.contains("- no errors in src (language servers"),
        "{text}"
    );
    assert!(
        text.contains("src/a.fake:1:1 error [fake E1] in scope"),
        "{text}"
    );
    assert!(!text.contains("other.fake"), "{text}");
    std::fs::write(project.path().join("src/a.fake"), "fine\n").unwrap();
    assert_eq!(stop(project.path())["decision"], Value::Null);

    let output = cli(
        project.path(),
        &["loop", "start", "fix it", "--path", "nowhere"],
    );
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--path nowhere: no such file or directory"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_hung_server_never_completes_a_goal_only_loop() {
    // The server never answers: silent for its 700 ms, it is hung, and every
    // file is inconclusive — never clean.
    let project = fake_project("hang", 700, 30_000);
    for name in ["a", "b", "c"] {
        std::fs::write(project.path().join(format!("{name}.fake")), "fine\n").unwrap();
    }
    let output = cli(project.path(), &["loop", "start", "make it clean"]);
    let text = stdout(&output);
    assert!(output.status.success());
    assert!(
        text.contains("Project check now: Checked 3 files: no problems (3 inconclusive"),
        "{text}"
    );
    assert!(text.contains("said nothing at all"), "{text}");
    for _ in 0..2 {
        let blocked = stop(project.path());
        assert_eq!(blocked["decision"], "block", "{blocked}");
        let prompt = blocked["reason"].as_str().unwrap();
        assert!(
            prompt.contains("- diagnostics: inconclusive — 3 file(s) could not be checked"),
            "{prompt}"
        );
        assert_eq!(loop_state(project.path())["status"], "RUNNING");
    }
}

#[test]
fn a_check_that_runs_out_of_its_budget_names_the_files_not_checked_yet() {
    // A busy server (it talks while it works) that needs 400 ms a file:
    // three files do not fit in a 1 s budget. Those left are "not checked
    // yet", never clean, and the loop goes on.
    let project = TempDir::new("goal-loop-budget");
    util::write_fake_lsp_json(
        project.path(),
        &["--mode", "slow-files", "--delay-ms", "400"],
    );
    util::write_hook_config(
        project.path(),
        json!({"diagnostics": {"timeout_ms": 5_000, "loop_budget_ms": 1_000}}),
    );
    for name in ["a", "b", "c", "d"] {
        std::fs::write(project.path().join(format!("{name}.fake")), "fine\n").unwrap();
    }
    let output = cli(project.path(), &["loop", "start", "make it clean"]);
    let text = stdout(&output);
    assert!(output.status.success());
    assert!(
        text.contains("The check ran out of its 1 s budget: "),
        "{text}"
    );
    assert!(text.contains("not checked yet: the time ran out"), "{text}");
    let blocked = stop(project.path());
    assert_eq!(blocked["decision"], "block", "{blocked}");
    assert_eq!(loop_state(project.path())["status"], "RUNNING");
}

#[test]
fn install_adds_the_ralph_check_command() {
    let dir = TempDir::new("install-check");
    let output = util::command("ralph-hooks", dir.path())
        .args(["install", "--project", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout(&output).contains("/loop-status, /ralph-check, "),
        "{}",
        stdout(&output)
    );
    let text = std::fs::read_to_string(dir.path().join(".claude/commands/ralph-check.md")).unwrap();
    let cli = util::bin("ralph-hooks");
    assert!(
        text.contains(&format!(
            "```!\n{} check --args-from-stdin <<'RALPH_HOOKS_ARGUMENTS'\n$ARGUMENTS\n",
            cli.display()
        )),
        "runs the installed CLI by path:\n{text}"
    );
    let text = std::fs::read_to_string(dir.path().join(".claude/commands/ralph-loop.md")).unwrap();
    assert!(text.contains("With a goal alone"), "{text}");
}

#[test]
fn the_follow_up_prompt_is_capped_with_and_n_more() {
    let project = fake_project("normal", 5_000, 30_000);
    util::write_hook_config(
        project.path(),
        json!({"diagnostics": {"timeout_ms": 5_000, "max_items": 2}}),
    );
    std::fs::write(
        project.path().join("a.fake"),
        "WARN: w1\nERROR: e1\nERROR: e2\nERROR: e3\n",
    )
    .unwrap();
    assert!(
        cli(project.path(), &["loop", "start", "fix it"])
            .status
            .success()
    );
    let blocked = stop(project.path());
    let prompt = blocked["reason"].as_str().unwrap();
    assert!(
        prompt.contains(
            "    a.fake:2:1 error [fake E1] e1\n    a.fake:3:1 error [fake E1] e2\n    … and 2 more (1 error, 1 warning)"
        ),
        "errors first, then capped:\n{prompt}"
    );
}

/// Issue 30 item 4: where installed, ruff lints beside pyright in `check`
/// (its own source in `--json`) and in the loop's project condition; a
/// project turns it off in `.lsp.json`.
#[test]
fn ruff_lints_beside_pyright_in_check_and_the_loop_and_can_be_turned_off() {
    if util::require_tool("pyright-langserver", "the ruff-beside-pyright check test").is_none()
        || util::require_tool("ruff", "the ruff-beside-pyright check test").is_none()
    {
        return;
    }
    let dir = TempDir::new("check-ruff");
    util::write_hook_config(dir.path(), json!({"diagnostics": {"timeout_ms": 60_000}}));
    std::fs::write(dir.path().join("a.py"), "import os\n\nx = f\"abc\"\n").unwrap();
    let output = cli(dir.path(), &["check", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let by_source = &report["summary"]["by_source"];
    assert!(by_source["Ruff"].as_u64().unwrap_or(0) >= 2, "{report:#}");
    assert_eq!(report["files"][0]["server"], "pyright + ruff", "{report:#}");
    let lines = stdout(&cli(dir.path(), &["check"]));
    assert!(
        lines.contains("a.py:3:5 warning [Ruff F541] f-string without any placeholders"),
        "{lines}"
    );
    assert!(
        lines.contains("a.py:1:8 warning [Ruff F401] `os` imported but unused"),
        "{lines}"
    );

    // The loop's project condition sees them too.
    let output = cli(dir.path(), &["loop", "start", "lint", "--no-warnings"]);
    assert!(output.status.success(), "{}", stdout(&output));
    let blocked = stop(dir.path());
    assert_eq!(blocked["decision"], "block", "{blocked}");
    let prompt = blocked["reason"].as_str().unwrap();
    assert!(prompt.contains("[Ruff F541]"), "{prompt}");
    cli(dir.path(), &["loop", "cancel"]);

    std::fs::write(
        dir.path().join(".lsp.json"),
        r#"{"ruff": {"disabled": true}}"#,
    )
    .unwrap();
    let output = cli(dir.path(), &["check", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert!(
        report["summary"]["by_source"].get("Ruff").is_none(),
        "{report:#}"
    );
    assert_eq!(report["files"][0]["server"], "pyright", "{report:#}");
}

/// Settings a project hands a server in `.lsp.json` are what `check`
/// answers with too, not only the post-edit hook: a checker configured
/// there is asked itself, not its command line, which would not read them
/// (engine attack E-22: ruff's `select` obeyed by the hook, not by `check`;
/// E-23: a ty rule ignored warm and reported cold).
#[test]
fn settings_given_in_lsp_json_hold_for_check_as_for_the_hook() {
    if util::require_tool("ruff", "the ruff settings check test").is_none() {
        return;
    }
    let dir = TempDir::new("check-ruff-settings");
    util::write_hook_config(dir.path(), json!({"diagnostics": {"timeout_ms": 60_000}}));
    std::fs::write(
        dir.path().join("r.py"),
        "import sys\nimport os\nx = f\"a\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({
            "ruff": {"initializationOptions": {"settings": {"lint": {"select": ["F401"]}}}},
            "pyright": {"disabled": true}, "ty": {"disabled": true},
            "basedpyright": {"disabled": true}, "pyrefly": {"disabled": true},
        })
        .to_string(),
    )
    .unwrap();
    let output = cli(dir.path(), &["check", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let codes: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|file| file["diagnostics"].as_array().unwrap())
        .filter(|diag| diag["source"] == "Ruff")
        .filter_map(|diag| diag["code"].as_str())
        .collect();
    assert_eq!(codes, ["F401", "F401"], "{report:#}");

    if util::require_tool("ty", "the ty settings check test").is_none() {
        return;
    }
    std::fs::write(dir.path().join("pyproject.toml"), "[tool.ty]\n").unwrap();
    std::fs::write(dir.path().join("a.py"), "x: int = \"s\"\n").unwrap();
    let ignore = json!({"configuration": {"rules": {"invalid-assignment": "ignore"}}});
    std::fs::write(
        dir.path().join(".lsp.json"),
        json!({
            "ty": {"initializationOptions": ignore, "settings": ignore},
            "ruff": {"disabled": true}, "pyright": {"disabled": true},
            "basedpyright": {"disabled": true}, "pyrefly": {"disabled": true},
        })
        .to_string(),
    )
    .unwrap();
    let output = cli(dir.path(), &["check", "--json", "a.py"]);
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["files"][0]["server"], "ty", "{report:#}");
    assert_eq!(report["summary"]["errors"], 0, "{report:#}");
}

/// A loop's check runs in a PID namespace of its own where bubblewrap can
/// make one: a process it detached ends with it, so it cannot cancel the
/// loop after the Stop (re-attack RA-4).
#[test]
fn a_process_a_loop_check_detached_ends_with_the_check() {
    if ralph_hooks::util::confine::own_pids(std::path::Path::new("/bin/sh")).is_none() {
        if util::servers_required() {
            panic!("bubblewrap cannot make a PID namespace here");
        }
        util::skip(
            "the detached-check test",
            "bubblewrap cannot make a PID namespace here",
        );
        return;
    }
    let dir = fake_project("normal", 5_000, 60_000);
    std::fs::write(
        dir.path().join("chk.sh"),
        "setsid -f sh -c 'sleep 1; touch left-behind; ralph-hooks loop cancel' \
         >/dev/null 2>&1 </dev/null; exit 1\n",
    )
    .unwrap();
    let output = cli(
        dir.path(),
        &[
            "loop",
            "start",
            "x",
            "--check",
            "sh chk.sh",
            "--no-diagnostics",
        ],
    );
    assert!(output.status.success(), "{}", stdout(&output));
    let blocked = stop(dir.path());
    assert_eq!(blocked["decision"], "block", "{blocked}");
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    assert!(
        !dir.path().join("left-behind").exists(),
        "the check's detached process outlived it"
    );
    let status = stdout(&cli(dir.path(), &["loop", "status"]));
    assert!(status.contains("RUNNING"), "{status}");
}
