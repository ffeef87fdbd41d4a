//! `ralph-hooks refs | rename | search | rewrite | fix` (issue 13), through
//! the real binary: the seed's scenarios (004 §2.3, §2.4, §3.3, §3.4, §5.3)
//! with real pyright, ruff and typescript-language-server, the
//! all-or-nothing writes with an injected write failure, conflicts, files
//! with syntax errors, languages without a server, and the hook state root
//! left alone. Most tests run the servers in-process (the daemon off, as
//! everywhere in the suite); one runs them through the warm daemon.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::new("intel");
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    dir
}

fn write(project: &Path, name: &str, text: &str) {
    let path = project.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(project: &Path, name: &str) -> String {
    std::fs::read_to_string(project.join(name)).unwrap()
}

fn cli(project: &Path) -> Command {
    let mut command = util::command("ralph-hooks", project);
    command.arg("--project").arg(project);
    command
}

fn run(project: &Path, args: &[&str]) -> Output {
    cli(project).args(args).output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

fn json(output: &Output) -> Value {
    let text = ok(output);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

const CONSOLE_JS: &str = "function main(user) {\n  console.log(\"start\");\n  const n = compute(user);\n  console.log(n);\n  return n;\n}\n";
const CONSOLE_TS: &str =
    "export function report(x: number): void {\n  console.log(`x=${x}`);\n  console.error(x);\n}\n";

// --- search (seed AC-AST-003) ---

#[test]
fn search_finds_every_console_log_with_path_and_position() {
    let dir = project(&[("src/main.js", CONSOLE_JS), ("src/report.ts", CONSOLE_TS)]);
    let out = ok(&run(dir.path(), &["search", "console.log($MSG)"]));
    assert_eq!(
        out,
        "src/main.js:2:3: console.log(\"start\")\nsrc/main.js:4:3: console.log(n)\n\
         src/report.ts:2:3: console.log(`x=${x}`)\n3 matches in 2 files (2 searched)\n"
    );
    let found = json(&run(
        dir.path(),
        &["search", "console.log($MSG)", "--json", "src/main.js"],
    ));
    assert_eq!(found["matches"].as_array().unwrap().len(), 2);
    let first = &found["matches"][0];
    assert_eq!(first["path"], "src/main.js");
    assert_eq!(
        (first["line"].clone(), first["column"].clone()),
        (2.into(), 3.into())
    );
    assert_eq!(
        (first["end_line"].clone(), first["end_column"].clone()),
        (2.into(), 23.into())
    );
    assert_eq!(first["vars"]["MSG"], "\"start\"");
}

#[test]
fn search_with_variadic_arguments_finds_calls_of_any_arity() {
    let dir = project(&[(
        "calls.js",
        "myFunc();\nmyFunc(1);\nmyFunc(a, b, c);\notherFunc(1);\nobj.myFunc(2);\n",
    )]);
    let found = json(&run(dir.path(), &["search", "myFunc($$$ARGS)", "--json"]));
    let matches = found["matches"].as_array().unwrap();
    let lines: Vec<u64> = matches
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [1, 2, 3], "{found}");
    assert_eq!(matches[0]["vars"]["ARGS"], "");
    assert_eq!(matches[2]["vars"]["ARGS"], "a, b, c");
}

#[test]
fn search_language_flag_and_bad_patterns() {
    let dir = project(&[
        ("a.py", "print(1)\n"),
        ("b.js", "print(2);\n"),
        ("notes.txt", "print(3)\n"),
    ]);
    let out = ok(&run(
        dir.path(),
        &["search", "print($X)", "--lang", "python"],
    ));
    assert!(
        out.starts_with("a.py:1:1: print(1)\n1 match in 1 file"),
        "{out}"
    );
    let out = ok(&run(dir.path(), &["search", "print($X)"]));
    assert!(out.contains("2 matches in 2 files"), "{out}");
    let output = run(dir.path(), &["search", "print($X)", "notes.txt"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no ast-grep language"),
        "{}",
        stderr(&output)
    );
    let output = run(dir.path(), &["search", "x", "--lang", "klingon"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("unknown language"));
}

#[test]
fn a_pattern_that_does_not_parse_is_refused_and_nothing_is_written() {
    let dir = project(&[("a.py", "print(1)\n"), ("b.py", "print(2)\n")]);
    let output = run(dir.path(), &["search", "print($A", "--lang", "python"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("does not parse (syntax error at line 1"),
        "{}",
        stderr(&output)
    );
    let output = run(
        dir.path(),
        &[
            "rewrite", "print($A", "log($A)", "--apply", "--lang", "python",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("does not parse"),
        "{}",
        stderr(&output)
    );
    assert_eq!(read(dir.path(), "a.py"), "print(1)\n");
    // Without --lang too: it parses in none of the project's languages.
    let output = run(dir.path(), &["rewrite", "print($A", "log($A)", "--apply"]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    assert_eq!(read(dir.path(), "b.py"), "print(2)\n");
}

// --- rewrite (seed AC-AST-004) ---

#[test]
fn rewrite_dry_run_shows_the_diff_and_writes_nothing() {
    let dir = project(&[("src/main.js", CONSOLE_JS), ("src/report.ts", CONSOLE_TS)]);
    let out = ok(&run(
        dir.path(),
        &["rewrite", "console.log($MSG)", "logger.debug($MSG)"],
    ));
    assert!(
        out.contains("-  console.log(\"start\");\n+  logger.debug(\"start\");\n"),
        "{out}"
    );
    assert!(
        out.contains("--- a/src/report.ts\n+++ b/src/report.ts\n"),
        "{out}"
    );
    assert!(out.ends_with(
        "would apply 3 replacements in 2 files; dry run, nothing written (add --apply to write)\n"
    ));
    assert_eq!(read(dir.path(), "src/main.js"), CONSOLE_JS);
    assert_eq!(read(dir.path(), "src/report.ts"), CONSOLE_TS);
}

#[test]
fn rewrite_apply_writes_every_file() {
    let dir = project(&[("src/main.js", CONSOLE_JS), ("src/report.ts", CONSOLE_TS)]);
    let out = ok(&run(
        dir.path(),
        &[
            "rewrite",
            "console.log($MSG)",
            "logger.debug($MSG)",
            "--apply",
        ],
    ));
    assert_eq!(
        out,
        "rewrote src/main.js: 2 replacements\nrewrote src/report.ts: 1 replacement\n\
         applied 3 replacements in 2 files\n"
    );
    assert_eq!(
        read(dir.path(), "src/main.js"),
        CONSOLE_JS.replace("console.log", "logger.debug")
    );
    assert!(
        read(dir.path(), "src/report.ts").contains("logger.debug(`x=${x}`);\n  console.error(x);")
    );
}

#[test]
fn rewrite_apply_rolls_back_when_a_write_fails() {
    let dir = project(&[
        ("a.js", "console.log(1);\n"),
        ("b.js", "console.log(2);\n"),
        ("c.js", "console.log(3);\n"),
    ]);
    let output = cli(dir.path())
        .args([
            "rewrite",
            "console.log($MSG)",
            "logger.debug($MSG)",
            "--apply",
        ])
        .env("RALPH_HOOKS_FAIL_WRITE", "c.js")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(
        error.contains("2 file(s) already written were restored"),
        "{error}"
    );
    assert!(error.contains("injected failure"), "{error}");
    for (name, n) in [("a.js", 1), ("b.js", 2), ("c.js", 3)] {
        assert_eq!(
            read(dir.path(), name),
            format!("console.log({n});\n"),
            "{name}"
        );
    }
}

/// Runs `args` with `RALPH_HOOKS_PAUSE_BEFORE_WRITE`, calling `meanwhile`
/// with the attempt's number (1, 2, …) each time the command has computed
/// its changes and waits to write them; `None` from it stops acting (the
/// command is let go each time). The exit code and stderr after the pauses.
fn run_with_outside_edits(
    project: &Path,
    args: &[&str],
    mut meanwhile: impl FnMut(usize),
) -> (Option<i32>, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let go_on = project.join("go-on");
    let mut child = cli(project)
        .args(args)
        .env("RALPH_HOOKS_PAUSE_BEFORE_WRITE", &go_on)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut rest = Vec::new();
    let mut attempt = 0;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.contains("pausing before writing") {
            attempt += 1;
            meanwhile(attempt);
            write(project, "go-on", "");
        } else {
            rest.push(line);
        }
    }
    let status = child.wait().unwrap();
    (status.code(), rest)
}

/// A file that changes after the rewrite was computed (another writer, the
/// user's editor) is rewritten again from its new text: the edit is kept,
/// and the rewrite lands on it. Before, the whole command was refused.
#[test]
fn rewrite_apply_computes_again_a_file_changed_since_it_was_computed() {
    let dir = project(&[("a.js", "console.log(1);\n"), ("b.js", "console.log(2);\n")]);
    let (code, stderr) = run_with_outside_edits(
        dir.path(),
        &[
            "rewrite",
            "console.log($MSG)",
            "logger.debug($MSG)",
            "--apply",
        ],
        |attempt| {
            if attempt == 1 {
                write(dir.path(), "b.js", "// edited meanwhile\nconsole.log(2);\n");
            }
        },
    );
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stderr.iter().any(|l| l.contains(
            "b.js changed since the rewrite was computed; computing it again from the current text (attempt 2 of 3)"
        )),
        "{stderr:?}"
    );
    assert_eq!(read(dir.path(), "a.js"), "logger.debug(1);\n");
    assert_eq!(
        read(dir.path(), "b.js"),
        "// edited meanwhile\nlogger.debug(2);\n"
    );
}

/// A file that changes at every attempt is refused after three: nothing
/// is written, the error names it.
#[test]
fn rewrite_apply_refuses_a_file_that_keeps_changing() {
    let dir = project(&[("a.js", "console.log(1);\n"), ("b.js", "console.log(2);\n")]);
    let mut outside = String::from("console.log(2);\n");
    let (code, stderr) = run_with_outside_edits(
        dir.path(),
        &[
            "rewrite",
            "console.log($MSG)",
            "logger.debug($MSG)",
            "--apply",
        ],
        |attempt| {
            outside = format!("// edit {attempt}\n{outside}");
            write(dir.path(), "b.js", &outside);
        },
    );
    assert_eq!(code, Some(1), "{stderr:?}");
    let error = stderr.join("\n");
    assert!(
        error.contains(
            "the files kept changing while the rewrite was computed (3 attempts); nothing written"
        ),
        "{error}"
    );
    assert!(
        error.contains("b.js changed since the changes were computed"),
        "{error}"
    );
    assert_eq!(read(dir.path(), "a.js"), "console.log(1);\n");
    assert_eq!(read(dir.path(), "b.js"), outside);
}

#[test]
fn rewrite_with_no_match_changes_nothing() {
    let dir = project(&[("src/main.js", CONSOLE_JS)]);
    let out = ok(&run(
        dir.path(),
        &["rewrite", "alert($MSG)", "logger.warn($MSG)", "--apply"],
    ));
    assert_eq!(
        out,
        "no match for \"alert($MSG)\" in 1 file; nothing to rewrite\n"
    );
    assert_eq!(read(dir.path(), "src/main.js"), CONSOLE_JS);
    let report = json(&run(
        dir.path(),
        &["rewrite", "alert($A)", "x($A)", "--json"],
    ));
    assert_eq!(report["count"], 0);
    assert_eq!(report["applied"], false);
}

#[test]
fn search_and_rewrite_never_touch_the_state_root() {
    // A state root that is not hidden (RALPH_HOOKS_STATE_DIR), so only the
    // commands' own exclusion keeps the walk out of it.
    let dir = project(&[("app.js", "console.log(1);\n")]);
    write(dir.path(), "hookstate/tool.js", "console.log(2);\n");
    let state = dir.path().join("hookstate");
    let run = |args: &[&str]| {
        cli(dir.path())
            .env("RALPH_HOOKS_STATE_DIR", &state)
            .args(args)
            .output()
            .unwrap()
    };
    let out = ok(&run(&["search", "console.log($A)"]));
    assert_eq!(
        out,
        "app.js:1:1: console.log(1)\n1 match in 1 file (1 searched)\n"
    );
    ok(&run(&[
        "rewrite",
        "console.log($A)",
        "logger.info($A)",
        "--apply",
    ]));
    assert_eq!(read(dir.path(), "app.js"), "logger.info(1);\n");
    assert_eq!(read(dir.path(), "hookstate/tool.js"), "console.log(2);\n");
    let output = run(&["rewrite", "console.log($A)", "x($A)", "hookstate/tool.js"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("hook state"),
        "{}",
        stderr(&output)
    );
}

// --- refs and rename with pyright (seed AC-LSP-003, AC-LSP-004) ---

fn python_project(name: &str) -> TempDir {
    project(&[
        ("main.py", &format!("from utils import {name}\n{name}()\n")),
        ("utils.py", &format!("def {name}():\n    pass\n")),
    ])
}

#[test]
fn refs_of_a_python_function_across_files() {
    if util::require_tool("pyright-langserver", "refs with pyright").is_none() {
        return;
    }
    let dir = python_project("helper");
    let out = ok(&run(dir.path(), &["refs", "utils.py", "helper"]));
    assert_eq!(
        out,
        "main.py:1:19  from utils import helper\nmain.py:2:1  helper()\n\
         utils.py:1:5  def helper():\n3 references: 1 definition, 2 uses in 2 files\n"
    );
    // By position: the call in main.py, in JSON.
    let found = json(&run(dir.path(), &["refs", "main.py", "2:1", "--json"]));
    assert_eq!(found["symbol"], "helper");
    assert_eq!(found["count"], 3);
    let definition: Vec<&Value> = found["references"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["is_definition"] == true)
        .collect();
    assert_eq!(definition.len(), 1);
    assert_eq!(definition[0]["path"], "utils.py");
    assert_eq!(definition[0]["line"], 1);
    // Unknown symbols and positions: exit 1 naming them.
    let output = run(dir.path(), &["refs", "utils.py", "nothere"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("unknown symbol \"nothere\""),
        "{}",
        stderr(&output)
    );
    let output = run(dir.path(), &["refs", "utils.py", "40:1"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no position 40:1 in utils.py"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn rename_a_python_function_preview_then_apply() {
    if util::require_tool("pyright-langserver", "rename with pyright").is_none() {
        return;
    }
    let dir = python_project("old_name");
    let out = ok(&run(
        dir.path(),
        &["rename", "utils.py", "old_name", "new_name"],
    ));
    assert!(
        out.starts_with(
            "would rename \"old_name\" to \"new_name\": 3 edits in 2 files (main.py, utils.py)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "-from utils import old_name\n-old_name()\n+from utils import new_name\n+new_name()\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("-def old_name():\n+def new_name():\n"),
        "{out}"
    );
    assert_eq!(
        read(dir.path(), "main.py"),
        "from utils import old_name\nold_name()\n"
    );
    let out = ok(&run(
        dir.path(),
        &["rename", "utils.py", "old_name", "new_name", "--apply"],
    ));
    assert!(
        out.ends_with("re-checked the touched files: no errors\n"),
        "{out}"
    );
    assert_eq!(
        read(dir.path(), "main.py"),
        "from utils import new_name\nnew_name()\n"
    );
    assert_eq!(read(dir.path(), "utils.py"), "def new_name():\n    pass\n");
}

#[test]
fn rename_to_an_existing_name_is_a_conflict_and_writes_nothing() {
    if util::require_tool("pyright-langserver", "rename conflicts with pyright").is_none() {
        return;
    }
    let dir = project(&[
        ("main.py", "from utils import old_name\nold_name()\n"),
        (
            "utils.py",
            "def old_name():\n    pass\n\n\ndef taken():\n    return 1\n",
        ),
    ]);
    let output = run(
        dir.path(),
        &["rename", "utils.py", "old_name", "taken", "--apply"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(
        error.contains("conflict: \"taken\" already exists in utils.py:5:5 (function)"),
        "{error}"
    );
    assert_eq!(
        read(dir.path(), "main.py"),
        "from utils import old_name\nold_name()\n"
    );
    assert!(read(dir.path(), "utils.py").starts_with("def old_name():"));
}

// --- TypeScript ---

#[test]
fn rename_across_three_typescript_files() {
    if util::require_tool("typescript-language-server", "rename with TypeScript").is_none() {
        return;
    }
    let dir = project(&[
        (
            "a.ts",
            "export function greet(name: string): string {\n  return \"hi \" + name;\n}\n",
        ),
        (
            "b.ts",
            "import { greet } from \"./a\";\nexport const b = greet(\"b\");\n",
        ),
        (
            "c.ts",
            "import { greet } from \"./a\";\nimport { b } from \"./b\";\nconsole.log(greet(b));\n",
        ),
    ]);
    let found = json(&run(dir.path(), &["refs", "a.ts", "greet", "--json"]));
    assert_eq!(found["count"], 5, "{found}");
    let out = ok(&run(
        dir.path(),
        &["rename", "a.ts", "greet", "welcome", "--apply"],
    ));
    assert!(
        out.starts_with(
            "renamed \"greet\" to \"welcome\": 5 edits in 3 files (a.ts, b.ts, c.ts)\n"
        ),
        "{out}"
    );
    assert!(
        out.ends_with("re-checked the touched files: no errors\n"),
        "{out}"
    );
    assert!(read(dir.path(), "a.ts").starts_with("export function welcome("));
    assert_eq!(
        read(dir.path(), "b.ts"),
        "import { welcome } from \"./a\";\nexport const b = welcome(\"b\");\n"
    );
    assert!(read(dir.path(), "c.ts").ends_with("console.log(welcome(b));\n"));
}

// --- servers that lack a feature, languages without a server ---

#[test]
fn a_server_without_references_says_so() {
    if util::require_tool("ruff", "ruff's missing references").is_none() {
        return;
    }
    let dir = python_project("helper");
    // Only ruff for Python: it lints, it has no references or rename.
    write(
        dir.path(),
        ".lsp.json",
        r#"{"pyright": {"disabled": true}, "basedpyright": {"disabled": true}, "ty": {"disabled": true}, "pyrefly": {"disabled": true}}"#,
    );
    for args in [
        &["refs", "utils.py", "helper"][..],
        &["rename", "utils.py", "helper", "assist"][..],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
        let error = stderr(&output);
        assert!(error.contains("ruff does not support"), "{args:?}: {error}");
    }
    assert_eq!(read(dir.path(), "utils.py"), "def helper():\n    pass\n");
}

#[test]
fn every_command_on_a_language_without_a_server() {
    let dir = project(&[("deploy.sh", "echo start\nrm -rf \"$DIR\"\necho done\n")]);
    for args in [
        &["refs", "deploy.sh", "1:1"][..],
        &["rename", "deploy.sh", "1:1", "say"][..],
    ] {
        let output = run(dir.path(), args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&output).contains("no language server handles .sh files"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    // ast-grep parses shell without any server.
    let out = ok(&run(dir.path(), &["search", "echo $A"]));
    assert!(out.contains("2 matches in 1 file"), "{out}");
    ok(&run(
        dir.path(),
        &["rewrite", "echo $A", "printf '%s\\n' $A", "--apply"],
    ));
    assert!(read(dir.path(), "deploy.sh").starts_with("printf '%s\\n' start\n"));
    let out = ok(&run(dir.path(), &["fix", "deploy.sh"]));
    assert!(
        out.contains("no language server handles .sh files"),
        "{out}"
    );
    assert!(out.contains("nothing to fix"), "{out}");
}

// --- fix (seed AC-CMD-003, /moai-fix) ---

#[test]
fn fix_applies_an_lsp_quick_fix_and_an_ast_grep_fix() {
    if util::require_tool("typescript-language-server", "fix with TypeScript").is_none() {
        return;
    }
    let dir = project(&[(
        "w.ts",
        "var count = 1;\nconst shown = consol.log(count);\nexport { shown };\n",
    )]);
    let out = ok(&run(dir.path(), &["fix", "--dry-run"]));
    assert!(out.contains("would fix 2 problems in 1 file:"), "{out}");
    assert!(
        out.contains("w.ts: ast-grep convert-var-to-const (line 1)"),
        "{out}"
    );
    assert!(
        out.contains("w.ts: typescript-language-server: Change spelling to 'console' (line 2)"),
        "{out}"
    );
    assert!(out.contains("-const shown = consol.log(count);\n"), "{out}");
    assert!(
        out.contains("+const shown = console.log(count);\n"),
        "{out}"
    );
    assert!(read(dir.path(), "w.ts").starts_with("var count"));
    let out = ok(&run(dir.path(), &["fix"]));
    assert!(out.contains("fixed 2 problems in 1 file:"), "{out}");
    assert!(!out.contains("remain"), "{out}");
    let after = read(dir.path(), "w.ts");
    assert!(after.starts_with("const count = 1"), "{after}");
    assert!(after.contains("console.log(count)"), "{after}");
    let out = ok(&run(dir.path(), &["fix"]));
    assert!(out.ends_with("nothing to fix\n"), "{out}");
}

#[test]
fn fix_runs_ruffs_fix_all_and_says_what_remains() {
    if util::require_tool("ruff", "fix with ruff").is_none() {
        return;
    }
    let dir = project(&[(
        "app.py",
        "import os\nimport sys\n\n\ndef main():\n    return undefined_name + len(sys.argv)\n",
    )]);
    // Only ruff, so the test does not depend on pyright's own reports.
    write(
        dir.path(),
        ".lsp.json",
        r#"{"pyright": {"disabled": true}, "basedpyright": {"disabled": true}, "ty": {"disabled": true}, "pyrefly": {"disabled": true}}"#,
    );
    let report = json(&run(dir.path(), &["fix", "app.py", "--json"]));
    assert_eq!(report["written"], true, "{report}");
    let file = &report["files"][0];
    assert!(
        file["fixed"][0].as_str().unwrap().starts_with("ruff: "),
        "{report}"
    );
    assert!(
        file["diff"].as_str().unwrap().contains("-import os\n"),
        "{report}"
    );
    let remaining = file["remaining"].as_array().unwrap();
    assert!(
        remaining
            .iter()
            .any(|r| r.as_str().unwrap().contains("undefined_name")),
        "{report}"
    );
    assert_eq!(
        read(dir.path(), "app.py"),
        "import sys\n\n\ndef main():\n    return undefined_name + len(sys.argv)\n"
    );
}

/// Files whose lines end (somewhere) with a lone carriage return: `fix`
/// writes what `ruff check --fix` writes (re-attack RD-10: the file was
/// emptied; RD-12: ruff's edits landed a line late after a CR in a
/// docstring, deleting used code).
#[test]
fn fix_with_ruff_on_lone_carriage_returns_writes_what_ruff_writes() {
    let Some(ruff) = util::require_tool("ruff", "fix with ruff") else {
        return;
    };
    let files: &[(&str, &str)] = &[
        (
            "p.py",
            "import sys\rimport os\rdef f(x=[]):\r    return x\rprint(os.sep, f())\r",
        ),
        (
            "s.py",
            "\"\"\"Module doc.\rSecond line.\"\"\"\nimport sys\nimport os\n\nprint(os.sep)\n",
        ),
    ];
    let dir = project(files);
    write(dir.path(), "ruff.toml", "[lint]\nselect = [\"F\", \"I\"]\n");
    write(
        dir.path(),
        ".lsp.json",
        r#"{"pyright": {"disabled": true}, "basedpyright": {"disabled": true}, "ty": {"disabled": true}, "pyrefly": {"disabled": true}}"#,
    );
    let by_ruff = TempDir::new("intel-cr-ruff");
    for (name, text) in files {
        write(by_ruff.path(), name, text);
    }
    std::fs::copy(
        dir.path().join("ruff.toml"),
        by_ruff.path().join("ruff.toml"),
    )
    .unwrap();
    let status = Command::new(&ruff)
        .args([
            "check",
            "--fix",
            "--exit-zero",
            "--no-cache",
            "--quiet",
            "p.py",
            "s.py",
        ])
        .current_dir(by_ruff.path())
        .status()
        .unwrap();
    assert!(status.success());
    ok(&run(dir.path(), &["fix", "p.py", "s.py"]));
    for (name, _) in files {
        let expected = read(by_ruff.path(), name);
        assert!(expected.contains("os.sep"), "{name}: {expected:?}");
        assert_eq!(read(dir.path(), name), expected, "{name}");
    }
}

#[test]
fn fix_removes_the_line_of_a_removed_debugger_statement() {
    let dir = project(&[(
        "g.ts",
        "export function g(legacy: number) {\n  debugger;\n  return legacy;\n}\n",
    )]);
    let out = ok(&run(dir.path(), &["fix", "--timeout", "30"]));
    assert!(out.contains("ast-grep no-debugger (line 2)"), "{out}");
    assert_eq!(
        read(dir.path(), "g.ts"),
        "export function g(legacy: number) {\n  return legacy;\n}\n"
    );
}

#[test]
fn refs_in_a_file_that_is_not_utf8_show_the_servers_columns_and_the_line() {
    // Engine attack E-5: a Latin-1 file's uses were shown at column 1 with
    // no text.
    if util::require_tool("pyright-langserver", "refs with pyright").is_none() {
        return;
    }
    let dir = project(&[("util.py", "def old_name():\n    pass\n")]);
    std::fs::write(
        dir.path().join("use2.py"),
        b"# caf\xe9 latin1 comment\nfrom util import old_name\nz = \"\xe9\"; w = old_name()\n",
    )
    .unwrap();
    let out = ok(&run(dir.path(), &["refs", "util.py", "old_name"]));
    assert!(
        out.contains("use2.py:2:18  from util import old_name"),
        "{out}"
    );
    assert!(
        out.contains("use2.py:3:14  z = \"\u{fffd}\"; w = old_name()"),
        "{out}"
    );
}

#[test]
fn fix_leaves_a_file_with_a_syntax_error_alone() {
    let dir = project(&[
        ("broken.ts", "var x = 1;\nfunction f( {\n  debugger;\n"),
        ("ok.js", "const a = 1;\n"),
    ]);
    let out = ok(&run(dir.path(), &["fix", "--no-ast-grep", "ok.js"]));
    assert!(out.contains("nothing to fix"), "{out}");
    let out = ok(&run(dir.path(), &["fix", "broken.ts", "--timeout", "30"]));
    assert!(
        out.contains("broken.ts: syntax error at broken.ts:"),
        "{out}"
    );
    assert!(out.contains("nothing to fix"), "{out}");
    assert_eq!(
        read(dir.path(), "broken.ts"),
        "var x = 1;\nfunction f( {\n  debugger;\n"
    );
}

// --- through the warm daemon ---

#[test]
fn refs_and_rename_use_the_daemons_warm_server() {
    if util::require_tool("pyright-langserver", "refs through the daemon").is_none() {
        return;
    }
    let dir = python_project("helper");
    let with_daemon = |args: &[&str]| {
        cli(dir.path())
            .env_remove("RALPH_HOOKS_DAEMON")
            .env("RALPH_HOOKS_DEBUG", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let first = with_daemon(&["refs", "utils.py", "helper"]);
    let text = ok(&first);
    assert!(
        text.ends_with("3 references: 1 definition, 2 uses in 2 files\n"),
        "{text}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = with_daemon(&["rename", "utils.py", "helper", "assist", "--apply"]);
    ok(&second);
    assert!(
        stderr(&second).contains("answered textDocument/rename (warm)"),
        "{}",
        stderr(&second)
    );
    // A file changed on disk behind the server's back is read again.
    write(
        dir.path(),
        "main.py",
        "from utils import assist\nassist()\nassist()\n",
    );
    let third = with_daemon(&["refs", "utils.py", "assist"]);
    assert!(
        ok(&third).ends_with("4 references: 1 definition, 3 uses in 2 files\n"),
        "{}",
        stdout(&third)
    );
    let status = with_daemon(&["daemon", "status"]);
    assert!(
        stdout(&status).contains("pyright pid"),
        "{}",
        stdout(&status)
    );
    ok(&with_daemon(&["daemon", "stop"]));
}

/// Issue 30: with pyright warm in the daemon, lines inserted above a use
/// by a shell command moved the uses, but pyright answered the rename from
/// the text it had read before, and the new name went in at the old
/// offsets (`# a comment lnew_name…`), exit 0, the real uses unchanged.
/// Now every file the rename touches is sent to the server with its text
/// on disk and the rename asked again: the files are renamed where the
/// uses are now.
#[test]
fn rename_after_lines_inserted_by_the_shell_through_the_warm_daemon() {
    if util::require_tool("pyright-langserver", "rename after a shell edit").is_none() {
        return;
    }
    let dir = python_project("old_name");
    let with_daemon = |args: &[&str]| {
        cli(dir.path())
            .env_remove("RALPH_HOOKS_DAEMON")
            .args(args)
            .output()
            .unwrap()
    };
    // pyright warms up and reads main.py from the disk.
    let warm = ok(&with_daemon(&["refs", "utils.py", "old_name"]));
    assert!(
        warm.ends_with("3 references: 1 definition, 2 uses in 2 files\n"),
        "{warm}"
    );
    // The shell inserts lines above the uses; pyright is not told.
    let shifted = "# a comment line\n# and a command\nfrom utils import old_name\nold_name()\n";
    write(dir.path(), "main.py", shifted);
    let output = with_daemon(&["rename", "utils.py", "old_name", "new_name", "--apply"]);
    let stop = with_daemon(&["daemon", "stop"]);
    let out = ok(&output);
    ok(&stop);
    assert_eq!(
        read(dir.path(), "main.py"),
        "# a comment line\n# and a command\nfrom utils import new_name\nnew_name()\n",
        "{out}"
    );
    assert_eq!(read(dir.path(), "utils.py"), "def new_name():\n    pass\n");
    assert!(
        out.ends_with("re-checked the touched files: no errors\n"),
        "{out}"
    );
}

/// Issue 30: a file created by the shell while pyright was warm imports
/// the old name; a server that does not know the file leaves it out of the
/// rename, and the report said "re-checked the touched files: no errors".
/// Now a file the rename did not touch that still has the old name is
/// re-checked too and named: either the server renamed it, or the report
/// shows its error — never "no errors" over a broken import.
#[test]
fn rename_never_says_no_errors_over_a_file_left_importing_the_old_name() {
    if util::require_tool("pyright-langserver", "rename after a shell-created file").is_none() {
        return;
    }
    let dir = python_project("old_name");
    let with_daemon = |args: &[&str]| {
        cli(dir.path())
            .env_remove("RALPH_HOOKS_DAEMON")
            .args(args)
            .output()
            .unwrap()
    };
    ok(&with_daemon(&["refs", "utils.py", "old_name"]));
    let extra = "from utils import old_name\n\nprint(old_name())\n";
    write(dir.path(), "extra.py", extra);
    let output = with_daemon(&["rename", "utils.py", "old_name", "new_name", "--apply"]);
    let stop = with_daemon(&["daemon", "stop"]);
    let out = ok(&output);
    ok(&stop);
    assert_eq!(
        read(dir.path(), "main.py"),
        "from utils import new_name\nnew_name()\n"
    );
    if read(dir.path(), "extra.py") == extra {
        assert!(
            out.contains(
                "re-checked the touched files and 1 other file that still mentions \"old_name\" (extra.py):\n"
            ),
            "{out}"
        );
        assert!(out.contains("extra.py:1:"), "{out}");
        assert!(!out.contains("no errors"), "{out}");
    } else {
        assert_eq!(
            read(dir.path(), "extra.py"),
            "from utils import new_name\n\nprint(new_name())\n"
        );
    }
}

/// A project whose server indexes the workspace 700 ms after the first
/// file is opened and answers references from the open files until then:
/// `index-late` as pyright does right after start-up (the open file's
/// diagnostics come when it is done), `index-progress` as clangd does (the
/// diagnostics at once, the indexing told as work-done progress), and
/// `index-progress-late` with that progress begun after the diagnostics.
fn late_indexing_project(mode: &str) -> TempDir {
    let dir = project(&[
        ("lib.fk", "thing is defined here\n"),
        ("use.fk", "uses thing\nthing again\n"),
    ]);
    let mut server = json!({"fake": {
        "command": util::fake_lsp_server().display().to_string(),
        "args": ["--mode", mode, "--delay-ms", "700"],
        "extensionToLanguage": {".fk": "fake"},
        "quietMs": 30,
    }});
    if mode == "index-progress-late" {
        // As clangd is configured: its index's progress is named.
        server["fake"]["indexProgress"] = json!("indexing");
    }
    write(dir.path(), ".lsp.json", &server.to_string());
    dir
}

#[test]
fn refs_on_a_cold_server_wait_for_its_first_analysis() {
    // In-process and through a fresh daemon: both start the server for
    // this request, and both must let it finish indexing before asking.
    // A server that tells its indexing as work-done progress (clangd's
    // background index) is waited for by the same first-analysis wait:
    // its diagnostics do not count as settled while the progress runs.
    for (mode, daemon) in [
        ("index-late", false),
        ("index-late", true),
        ("index-progress", false),
        ("index-progress", true),
        // The index begins after the file's diagnostics (clangd on a
        // loaded machine: `refs` found 1 of 4 places).
        ("index-progress-late", false),
        ("index-progress-late", true),
    ] {
        let dir = late_indexing_project(mode);
        let mut command = cli(dir.path());
        if daemon {
            command.env_remove("RALPH_HOOKS_DAEMON");
        }
        let output = command.args(["refs", "lib.fk", "1:1"]).output().unwrap();
        let text = ok(&output);
        assert!(
            text.ends_with("3 references: 0 definitions, 3 uses in 2 files\n"),
            "{mode}, daemon {daemon}: {text}"
        );
        if daemon {
            let stop = cli(dir.path())
                .env_remove("RALPH_HOOKS_DAEMON")
                .args(["daemon", "stop"])
                .output()
                .unwrap();
            ok(&stop);
        }
    }
}

/// An index that takes longer than the wait allows: the answer says it
/// may be incomplete, and why, instead of passing for the whole project.
#[test]
fn refs_from_a_server_still_indexing_say_the_answer_may_be_incomplete() {
    let dir = late_indexing_project("index-progress-late");
    let lsp = std::fs::read_to_string(dir.path().join(".lsp.json")).unwrap();
    write(
        dir.path(),
        ".lsp.json",
        &lsp.replace("\"700\"", "\"60000\""),
    );
    let output = cli(dir.path())
        .args(["refs", "lib.fk", "1:1", "--timeout", "6"])
        .output()
        .unwrap();
    ok(&output);
    assert!(
        stderr(&output).contains("was still indexing the project when it answered"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn fix_twice_through_the_daemon_gets_diagnostics_for_an_unchanged_file() {
    if util::require_tool("typescript-language-server", "fix through the daemon").is_none() {
        return;
    }
    // The warm server has the file open with the same text on the second
    // run; typescript-language-server publishes nothing for a text it
    // already has, so `fix` must not wait for a publish that never comes.
    let dir = project(&[("ok.ts", "export const n: number = 1;\n")]);
    let with_daemon = |args: &[&str]| {
        cli(dir.path())
            .env_remove("RALPH_HOOKS_DAEMON")
            .args(args)
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let out = ok(&with_daemon(&["fix", "--timeout", "20"]));
        assert_eq!(out, "nothing to fix\n");
    }
    ok(&with_daemon(&["daemon", "stop"]));
}

/// `search` and `rewrite` find what the `ast-grep` CLI finds on the same
/// files: the same (file, line, column) for each pattern, including files
/// that lack a pattern's words (which `search` does not even parse), and
/// the same texts after a rewrite.
#[test]
fn search_and_rewrite_agree_with_the_ast_grep_cli() {
    let Some(ast_grep) = util::require_tool("ast-grep", "parity with the ast-grep CLI") else {
        return;
    };
    let files: &[(&str, &str)] = &[
        (
            "src/a.js",
            "console.log(1);\nconsole.log(\"two\", 2);\nlogger.log(x);\nfunction f(a, b) {\n  console.log(a + b);\n  return foo(a, b, 3);\n}\nvar n = 4;\n",
        ),
        ("src/b.js", "export const x = foo();\nvar y = foo(1);\n"),
        (
            "src/c.ts",
            "let s: string = 'console';\nconsole.log(s);\nvar t = s;\n",
        ),
        (
            "src/d.py",
            "print(1)\nprint('log', 2)\nfoo(a, b)\n\ndef g(x=[]):\n    return foo(x)\n",
        ),
        (
            "src/e.js",
            "// console.log(nothing) in a comment\nconst q = 'console.log(q)';\n",
        ),
    ];
    let dir = project(files);
    let ours = |pattern: &str, lang: &str| -> Vec<(String, u64, u64)> {
        let found = json(&run(
            dir.path(),
            &["search", pattern, "--lang", lang, "--json", "src"],
        ));
        let mut found: Vec<(String, u64, u64)> = found["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["path"].as_str().unwrap().to_string(),
                    m["line"].as_u64().unwrap(),
                    m["column"].as_u64().unwrap(),
                )
            })
            .collect();
        found.sort();
        found
    };
    let theirs = |pattern: &str, lang: &str| -> Vec<(String, u64, u64)> {
        let output = Command::new(&ast_grep)
            .args(["run", "-p", pattern, "-l", lang, "--json=compact", "src"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let found: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "ast-grep --json: {e}: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        let mut found: Vec<(String, u64, u64)> = found
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap().to_string(),
                    m["range"]["start"]["line"].as_u64().unwrap() + 1,
                    m["range"]["start"]["column"].as_u64().unwrap() + 1,
                )
            })
            .collect();
        found.sort();
        found
    };
    for (pattern, lang) in [
        ("console.log($MSG)", "js"),
        ("console.log($$$ARGS)", "js"),
        ("$OBJ.log($X)", "js"),
        ("foo($$$ARGS)", "js"),
        ("var $A = $B", "js"),
        ("console.log($MSG)", "ts"),
        ("var $A = $B", "ts"),
        ("print($$$A)", "py"),
        ("foo($A, $B)", "py"),
        ("def $F($$$P): $$$B", "py"),
    ] {
        let expected = theirs(pattern, lang);
        assert_eq!(ours(pattern, lang), expected, "{pattern} ({lang})");
    }
    // Rewrite: our --apply and theirs (-U) on two copies give the same files.
    let copy = project(files);
    ok(&run(
        dir.path(),
        &[
            "rewrite",
            "console.log($MSG)",
            "logger.debug($MSG)",
            "--lang",
            "js",
            "src",
            "--apply",
        ],
    ));
    let status = Command::new(&ast_grep)
        .args([
            "run",
            "-p",
            "console.log($MSG)",
            "-r",
            "logger.debug($MSG)",
            "-l",
            "js",
            "-U",
            "src",
        ])
        .current_dir(copy.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    for (name, _) in files {
        assert_eq!(read(dir.path(), name), read(copy.path(), name), "{name}");
    }
    assert!(read(dir.path(), "src/a.js").starts_with("logger.debug(1);\n"));
}

// --- Rust (rust-analyzer) ---

/// rust-analyzer through the same commands: refs across two files, a
/// rename conflict found by our own symbol check, a rename applied and its
/// files re-checked (each conclusive), in one in-process session each.
#[test]
fn refs_and_rename_with_rust_analyzer() {
    let Some(program) = util::require_tool("rust-analyzer", "refs and rename in Rust") else {
        return;
    };
    let runs = Command::new(&program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        assert!(
            !util::servers_required(),
            "rust-analyzer is on PATH but does not run"
        );
        util::skip(
            "a rust-analyzer test",
            "rust-analyzer is on PATH but does not run",
        );
        return;
    }
    let dir = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        (
            "src/lib.rs",
            "pub mod util;\n\npub fn run() -> u32 {\n    util::helper(1) + util::helper(2)\n}\n",
        ),
        (
            "src/util.rs",
            "pub fn helper(x: u32) -> u32 {\n    x + 1\n}\n\npub fn other() -> u32 {\n    2\n}\n",
        ),
    ]);
    let out = ok(&run(dir.path(), &["refs", "src/util.rs", "helper"]));
    assert!(
        out.ends_with("3 references: 1 definition, 2 uses in 2 files\n"),
        "{out}"
    );
    assert!(
        out.contains("src/lib.rs:4:11  util::helper(1) + util::helper(2)\n"),
        "{out}"
    );

    let conflict = run(dir.path(), &["rename", "src/util.rs", "helper", "other"]);
    assert_eq!(conflict.status.code(), Some(1));
    assert!(
        stderr(&conflict)
            .contains("conflict: \"other\" already exists in src/util.rs:5:8 (function)"),
        "{}",
        stderr(&conflict)
    );

    let out = ok(&run(
        dir.path(),
        &["rename", "src/util.rs", "helper", "assist", "--apply"],
    ));
    assert!(
        out.starts_with(
            "renamed \"helper\" to \"assist\": 3 edits in 2 files (src/lib.rs, src/util.rs)\n"
        ),
        "{out}"
    );
    assert!(
        out.ends_with("re-checked the touched files: no errors\n"),
        "{out}"
    );
    assert_eq!(
        read(dir.path(), "src/lib.rs"),
        "pub mod util;\n\npub fn run() -> u32 {\n    util::assist(1) + util::assist(2)\n}\n"
    );
}

// --- C (clangd) ---

/// clangd finds uses in other files through its index of the compilation
/// database; without one it knows only the open file, and `refs` says so
/// instead of passing a partial answer off as complete.
#[test]
fn refs_and_rename_with_clangd() {
    if util::require_tool("clangd", "refs and rename in C").is_none() {
        return;
    }
    let files: &[(&str, &str)] = &[
        ("util.h", "int helper(int x);\n"),
        (
            "util.c",
            "#include \"util.h\"\nint helper(int x) { return x + 1; }\n",
        ),
        (
            "main.c",
            "#include \"util.h\"\nint main(void) { return helper(1) + helper(2); }\n",
        ),
    ];
    let bare = project(files);
    let output = run(bare.path(), &["refs", "util.c", "helper"]);
    ok(&output);
    assert!(
        stderr(&output).contains("note: clangd has no compile_commands.json"),
        "{}",
        stderr(&output)
    );

    let dir = project(files);
    let database = json!([
        {"directory": dir.path(), "file": "main.c", "arguments": ["cc", "-c", "main.c"]},
        {"directory": dir.path(), "file": "util.c", "arguments": ["cc", "-c", "util.c"]},
    ]);
    write(dir.path(), "compile_commands.json", &database.to_string());
    let output = run(dir.path(), &["refs", "util.c", "helper", "--json"]);
    let found = json(&output);
    assert!(!stderr(&output).contains("note:"), "{}", stderr(&output));
    let places: Vec<String> = found["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}:{}",
                r["path"].as_str().unwrap(),
                r["line"],
                r["column"]
            )
        })
        .collect();
    assert_eq!(
        places,
        ["main.c:2:25", "main.c:2:37", "util.c:2:5", "util.h:1:5"],
        "{found}"
    );
    let out = ok(&run(
        dir.path(),
        &["rename", "util.c", "helper", "assist", "--apply"],
    ));
    assert!(
        out.starts_with(
            "renamed \"helper\" to \"assist\": 4 edits in 3 files (main.c, util.c, util.h)\n"
        ),
        "{out}"
    );
    assert_eq!(read(dir.path(), "util.h"), "int assist(int x);\n");
}

// --- Go (gopls) ---

/// gopls through the same commands. It refuses a clashing name itself; the
/// answer is still ours (`conflict:` naming where), as with every server.
#[test]
fn refs_and_rename_with_gopls() {
    if util::require_tool("gopls", "refs and rename in Go").is_none()
        || util::require_tool("go", "gopls's Go toolchain").is_none()
    {
        return;
    }
    let dir = project(&[
        ("go.mod", "module example.com/sample\n\ngo 1.19\n"),
        (
            "util/util.go",
            "package util\n\nfunc Helper(x int) int {\n\treturn x + 1\n}\n\nfunc Other() int {\n\treturn 2\n}\n",
        ),
        (
            "main.go",
            "package main\n\nimport \"example.com/sample/util\"\n\nfunc main() {\n\tprintln(util.Helper(1) + util.Helper(2))\n}\n",
        ),
    ]);
    let out = ok(&run(dir.path(), &["refs", "util/util.go", "Helper"]));
    assert_eq!(
        out,
        "main.go:6:15  println(util.Helper(1) + util.Helper(2))\n\
         main.go:6:32  println(util.Helper(1) + util.Helper(2))\n\
         util/util.go:3:6  func Helper(x int) int {\n\
         3 references: 1 definition, 2 uses in 2 files\n"
    );
    let conflict = run(dir.path(), &["rename", "util/util.go", "Helper", "Other"]);
    assert_eq!(conflict.status.code(), Some(1));
    assert!(
        stderr(&conflict)
            .contains("conflict: \"Other\" already exists in util/util.go:7:6 (function)"),
        "{}",
        stderr(&conflict)
    );
    let out = ok(&run(
        dir.path(),
        &["rename", "util/util.go", "Helper", "Assist", "--apply"],
    ));
    assert!(
        out.starts_with(
            "renamed \"Helper\" to \"Assist\": 3 edits in 2 files (main.go, util/util.go)\n"
        ),
        "{out}"
    );
    assert!(
        out.ends_with("re-checked the touched files: no errors\n"),
        "{out}"
    );
    assert!(read(dir.path(), "main.go").contains("util.Assist(1) + util.Assist(2)"));
}

/// `fix` runs until a pass changes nothing: a `var` inside a function
/// assigned to a `var` overlaps the outer fix and gets its turn in the
/// next pass; the statements keep their `;`.
#[test]
fn fix_applies_overlapping_fixes_in_later_passes() {
    let dir = project(&[(
        "a.js",
        "var a = function () {\n  var b = 1;\n  return b;\n};\nconsole.log(a());\n",
    )]);
    // The ast-grep rules alone, so the outcome does not depend on a server.
    write(
        dir.path(),
        ".lsp.json",
        r#"{"typescript-language-server": {"disabled": true}}"#,
    );
    let out = ok(&run(dir.path(), &["fix", "a.js"]));
    assert!(out.contains("convert-var-to-const (line 2)"), "{out}");
    assert_eq!(
        read(dir.path(), "a.js"),
        "const a = function () {\n  const b = 1;\n  return b;\n};\nconsole.log(a());\n"
    );
    assert!(ok(&run(dir.path(), &["fix", "a.js"])).ends_with("nothing to fix\n"));
}

/// `fix` on files that change after their fixes were computed: the changed
/// file is fixed again from its new text (the edit is kept, the fixes land
/// where the code is now), the others as computed; a file that changes at
/// every attempt is refused after three, nothing written. Before, the
/// first change refused the whole command.
#[test]
fn fix_computes_again_a_file_changed_since_it_was_computed() {
    let files = [
        ("a.js", "function f() {\n  debugger;\n  return 1;\n}\n"),
        ("b.js", "function g() {\n  debugger;\n  return 2;\n}\n"),
    ];
    let dir = project(&files);
    // The ast-grep rules alone, so the outcome does not depend on a server.
    write(
        dir.path(),
        ".lsp.json",
        r#"{"typescript-language-server": {"disabled": true}}"#,
    );
    let shifted =
        "// a line added meanwhile\nfunction g() {\n  debugger;\n  debugger;\n  return 2;\n}\n";
    let (code, stderr) = run_with_outside_edits(dir.path(), &["fix"], |attempt| {
        if attempt == 1 {
            write(dir.path(), "b.js", shifted);
        }
    });
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stderr.iter().any(|l| l.contains(
            "b.js changed since the fix was computed; computing it again from the current text (attempt 2 of 3)"
        )),
        "{stderr:?}"
    );
    assert_eq!(read(dir.path(), "a.js"), "function f() {\n  return 1;\n}\n");
    assert_eq!(
        read(dir.path(), "b.js"),
        "// a line added meanwhile\nfunction g() {\n  return 2;\n}\n"
    );

    for (name, text) in files {
        write(dir.path(), name, text);
    }
    let mut outside = files[1].1.to_string();
    let (code, stderr) = run_with_outside_edits(dir.path(), &["fix"], |attempt| {
        outside = format!("// edit {attempt}\n{outside}");
        write(dir.path(), "b.js", &outside);
    });
    assert_eq!(code, Some(1), "{stderr:?}");
    let error = stderr.join("\n");
    assert!(
        error.contains(
            "the files kept changing while the fix was computed (3 attempts); nothing written"
        ),
        "{error}"
    );
    assert_eq!(read(dir.path(), "a.js"), files[0].1, "nothing written");
    assert_eq!(read(dir.path(), "b.js"), outside);
}
