//! The warm daemon answers from the files as they are on the disk (issue
//! 30, items 1 and 3): after a dependency is changed by a shell command,
//! by `git checkout` of another branch, by a file created and by a file
//! deleted — none of it through the hooks — `check`, the post-edit hook on
//! a file that depends on it, and the Stop of a loop report what a cold
//! check (no daemon) reports; `refs` sees files created and changed by the
//! shell. Real servers: pyright, ty (its server answers the hook; the
//! daemon's project checks ask it once it knows the project), TypeScript 5
//! through typescript-language-server and TypeScript 7's own server.
//! Skipped (failed under RALPH_HOOKS_REQUIRE_SERVERS=1) when a server is
//! missing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "fresh-session";

/// (file, line, code) of every error in a `check --json` report.
type ErrorSet = BTreeSet<(String, u64, String)>;

/// One language's version of the scenario: `a` defines `helper`, `b` uses
/// its result as a number, `c` imports `thing` from `d`, which does not
/// exist at first.
struct Lang {
    ext: &'static str,
    a_number: &'static str,
    a_string: &'static str,
    /// A shell command that turns `a` from `a_number` into `a_string`.
    sed: &'static str,
    b: &'static str,
    c: &'static str,
    d: &'static str,
    /// The line of `b`'s error when `helper` returns a string, and of
    /// `c`'s when `d` is missing.
    b_line: u64,
    c_line: u64,
}

const PYTHON: Lang = Lang {
    ext: "py",
    a_number: "def helper() -> int:\n    return 1\n",
    a_string: "def helper() -> str:\n    return \"s\"\n",
    sed: "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' a.py",
    b: "from a import helper\n\nx: int = helper()\n",
    c: "from d import thing\n\ny: int = thing\n",
    d: "thing = 1\n",
    b_line: 3,
    c_line: 1,
};

const TYPESCRIPT: Lang = Lang {
    ext: "ts",
    a_number: "export function helper(): number {\n  return 1;\n}\n",
    a_string: "export function helper(): string {\n  return \"s\";\n}\n",
    sed: "sed -i 's/: number {/: string {/; s/return 1;/return \"s\";/' a.ts",
    b: "import { helper } from \"./a\";\n\nexport const x: number = helper();\n",
    c: "import { thing } from \"./d\";\n\nexport const y: number = thing;\n",
    d: "export const thing = 1;\n",
    b_line: 3,
    c_line: 1,
};

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn git(root: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A virtualenv at `venv` (`python3 -m venv --without-pip`): its
/// `site-packages`, where a test installs what it needs.
fn make_venv(venv: &Path) -> PathBuf {
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(venv)
        .status()
        .expect("python3 runs");
    assert!(
        made.success(),
        "python3 -m venv --without-pip {}",
        venv.display()
    );
    std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages")
}

/// A change made the way a Bash tool call makes it: `sh -c` in the project.
fn shell(root: &Path, script: &str) {
    let status = Command::new("sh")
        .args(["-c", script])
        .current_dir(root)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// A project whose daemon is stopped when it is dropped.
struct Project {
    dir: TempDir,
    /// The Python environment every command runs in: an activated
    /// virtualenv's `VIRTUAL_ENV` and `PATH`, or none.
    venv: std::cell::RefCell<Option<PathBuf>>,
    /// `PYTHONPATH` for every command, or none.
    python_path: std::cell::RefCell<Option<PathBuf>>,
    /// `PYTHONUSERBASE` for every command, or the runner's own.
    user_base: std::cell::RefCell<Option<PathBuf>>,
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.cli(&["daemon", "stop"], true);
    }
}

impl Project {
    fn new(label: &str) -> Project {
        let dir = TempDir::new(label);
        write(
            dir.path(),
            ".claude/ralph-hooks.json",
            &json!({
                "diagnostics": {"timeout_ms": 60_000, "ast_grep": false},
                "daemon": {"start_timeout_ms": 60_000},
            })
            .to_string(),
        );
        Project {
            dir,
            venv: std::cell::RefCell::new(None),
            python_path: std::cell::RefCell::new(None),
            user_base: std::cell::RefCell::new(None),
        }
    }

    /// Every command from now on runs with `PYTHONUSERBASE` set to
    /// `folder` (the user site is below it).
    fn set_user_base(&self, folder: &Path) {
        *self.user_base.borrow_mut() = Some(folder.to_path_buf());
    }

    /// Every command from now on runs with `PYTHONPATH` set to `folder`.
    fn set_python_path(&self, folder: Option<&Path>) {
        *self.python_path.borrow_mut() = folder.map(Path::to_path_buf);
    }

    /// Every command from now on runs as from a shell with the virtualenv
    /// `venv` activated (`None`: with none).
    fn activate(&self, venv: Option<&Path>) {
        *self.venv.borrow_mut() = venv.map(Path::to_path_buf);
    }

    /// `command` in the Python environment chosen by [`Project::activate`].
    fn in_environment(&self, command: &mut Command) {
        command
            .env_remove("VIRTUAL_ENV")
            .env_remove("CONDA_PREFIX")
            .env_remove("PYTHONPATH");
        if let Some(folder) = &*self.python_path.borrow() {
            command.env("PYTHONPATH", folder);
        }
        if let Some(folder) = &*self.user_base.borrow() {
            command.env("PYTHONUSERBASE", folder);
        }
        if let Some(venv) = &*self.venv.borrow() {
            let path = std::env::var("PATH").unwrap_or_default();
            command
                .env("VIRTUAL_ENV", venv)
                .env("PATH", format!("{}/bin:{path}", venv.display()));
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `ralph-hooks ARGS`, through the daemon or in this process only.
    fn cli(&self, args: &[&str], daemon: bool) -> Output {
        let mut command = util::command("ralph-hooks", self.path());
        self.in_environment(&mut command);
        if daemon {
            command.env_remove("RALPH_HOOKS_DAEMON");
        }
        command
            .env("CLAUDE_CODE_SESSION_ID", SESSION)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The errors `check --json` reports, warm (the daemon) or cold.
    fn errors(&self, daemon: bool) -> ErrorSet {
        let output = self.cli(&["check", "--json", "--no-ast-grep"], daemon);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "check --json is not JSON ({e}): {}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        assert_eq!(report["summary"]["inconclusive"], 0, "{report:#}");
        let mut errors = ErrorSet::new();
        for file in report["files"].as_array().unwrap() {
            for diag in file["diagnostics"].as_array().unwrap() {
                if diag["severity"] == "error" {
                    errors.insert((
                        file["path"].as_str().unwrap().to_string(),
                        diag["line"].as_u64().unwrap(),
                        diag["code"].as_str().unwrap_or_default().to_string(),
                    ));
                }
            }
        }
        errors
    }

    /// A hook with the daemon on.
    fn hook(&self, binary: &str, payload: &Value) -> (String, String) {
        let mut command = util::command(binary, self.path());
        self.in_environment(&mut command);
        command
            .env_remove("RALPH_HOOKS_DAEMON")
            .env("RALPH_HOOKS_DEBUG", "1");
        let output = util::run_with_stdin(command, payload.to_string().as_bytes());
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        (String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
    }

    /// Claude writes `relative` (its current text again) and the post-edit
    /// hook reports on it: the report's text.
    fn write_through_hook(&self, relative: &str) -> String {
        let file = self.path().join(relative);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, &text).unwrap();
        let payload = json!({
            "session_id": SESSION,
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": file, "content": text},
            "tool_response": {"type": "update", "filePath": file},
        });
        let (stdout, stderr) = self.hook("ralph-post-tool-lsp-diagnostic", &payload);
        let value: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout:?}; {stderr}"));
        value["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_else(|| panic!("no additionalContext in {value}; {stderr}"))
            .to_string()
    }

    /// The loop's Stop: its decision's text (the block reason or the
    /// system message).
    fn stop(&self) -> (Value, String) {
        let payload = json!({
            "session_id": SESSION, "hook_event_name": "Stop",
            "stop_hook_active": false, "last_assistant_message": "done",
        });
        let (stdout, stderr) = self.hook("ralph-stop-loop-controller", &payload);
        let value = if stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(stdout.trim()).unwrap()
        };
        (value, stderr)
    }

    /// The cold check reports an error at `file:line`, and the warm one
    /// (the daemon) answers exactly as the cold one.
    fn assert_warm_equals_cold_with_error(&self, file: &str, line: u64, what: &str) {
        let cold = self.errors(false);
        assert!(
            cold.iter().any(|(f, l, _)| f == file && *l == line),
            "{what}: cold {cold:?}"
        );
        assert_eq!(
            self.errors(true),
            cold,
            "{what}: warm vs cold\n{}",
            self.log()
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path().join(".claude/orchestrator/daemon/daemon.log"))
            .unwrap_or_default()
    }
}

/// The scenario for one language and server, in a project `configure`
/// has prepared (its configuration files, its TypeScript).
fn warm_answers_equal_cold_after_outside_changes(
    lang: &Lang,
    label: &str,
    configure: impl Fn(&Path),
) {
    let project = Project::new(label);
    let root = project.path();
    let name = |stem: &str| format!("{stem}.{}", lang.ext);
    let (a, b, c, d) = (name("a"), name("b"), name("c"), name("d"));
    configure(root);
    write(root, ".gitignore", ".claude/\nnode_modules\n");
    write(root, &a, lang.a_number);
    write(root, &b, lang.b);
    write(root, &c, lang.c);
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "number"]);
    git(root, &["checkout", "-q", "-b", "other"]);
    write(root, &a, lang.a_string);
    git(root, &["commit", "-q", "-am", "string"]);
    git(root, &["checkout", "-q", "main"]);

    // A loop whose condition is "no errors in the files it touched"; b and
    // c are written through the hook, which starts the daemon's server.
    let started = project.cli(&["loop", "start", "keep it clean", "--check", "true"], true);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    project.write_through_hook(&b);
    project.write_through_hook(&c);

    let d_path = root.join(&d);
    // (what happened, the change, b broken after it, c broken after it)
    type Step<'a> = (&'a str, Box<dyn Fn() + 'a>, bool, bool);
    let steps: Vec<Step> = vec![
        (
            "a changed by sed",
            Box::new(|| shell(root, lang.sed)),
            true,
            true,
        ),
        (
            "a restored by git checkout -- a",
            Box::new(|| git(root, &["checkout", "-q", "--", &a])),
            false,
            true,
        ),
        (
            "git checkout of the branch where helper returns a string",
            Box::new(|| git(root, &["checkout", "-q", "other"])),
            true,
            true,
        ),
        (
            "d created by the shell",
            Box::new(|| shell(root, &format!("printf '%s' '{}' > {d}", lang.d))),
            true,
            false,
        ),
        (
            "d deleted by the shell",
            Box::new(|| std::fs::remove_file(&d_path).unwrap()),
            true,
            true,
        ),
        (
            "git checkout of main",
            Box::new(|| git(root, &["checkout", "-q", "main"])),
            false,
            true,
        ),
    ];
    for (step, change, b_broken, c_broken) in steps {
        change();
        let cold = project.errors(false);
        let has = |errors: &ErrorSet, file: &str, line: u64| {
            errors
                .iter()
                .any(|(path, at, _)| path == file && *at == line)
        };
        assert_eq!(
            has(&cold, &b, lang.b_line),
            b_broken,
            "{step}: cold {cold:?}"
        );
        assert_eq!(
            has(&cold, &c, lang.c_line),
            c_broken,
            "{step}: cold {cold:?}"
        );

        let warm = project.errors(true);
        assert_eq!(
            warm,
            cold,
            "{step}: warm check vs cold check\n{}",
            project.log()
        );

        for (file, line, broken) in [(&b, lang.b_line, b_broken), (&c, lang.c_line, c_broken)] {
            let report = project.write_through_hook(file);
            let at = format!("{file}:{line}:");
            assert_eq!(
                report.contains(&at),
                broken,
                "{step}: the post-edit hook on {file}:\n{report}\n{}",
                project.log()
            );
        }

        let (decision, stderr) = project.stop();
        assert_eq!(
            decision["decision"], "block",
            "{step}: {decision}\n{stderr}"
        );
        let reason = decision["reason"].as_str().unwrap_or_default();
        // What remains, not what the loop fixed since the previous Stop.
        let remaining = reason
            .split("Fixed since the previous iteration")
            .next()
            .unwrap_or_default();
        for (file, line, broken) in [(&b, lang.b_line, b_broken), (&c, lang.c_line, c_broken)] {
            assert_eq!(
                remaining.contains(&format!("{file}:{line}:")),
                broken,
                "{step}: the Stop on {file}:\n{reason}\n{}",
                project.log()
            );
        }
    }
}

#[test]
fn pyright_warm_answers_equal_cold_after_outside_changes() {
    if util::require_tool("pyright-langserver", "the pyright freshness test").is_none() {
        return;
    }
    warm_answers_equal_cold_after_outside_changes(&PYTHON, "fresh-pyright", |_| {});
}

#[test]
fn ty_warm_answers_equal_cold_after_outside_changes() {
    if util::require_tool("ty", "the ty freshness test").is_none() {
        return;
    }
    warm_answers_equal_cold_after_outside_changes(&PYTHON, "fresh-ty", |root| {
        write(root, "ty.toml", "");
    });
}

#[test]
fn typescript_5_warm_answers_equal_cold_after_outside_changes() {
    if util::require_tool(
        "typescript-language-server",
        "the TypeScript 5 freshness test",
    )
    .is_none()
    {
        return;
    }
    let Some(typescript) = crate::lsp_real::typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the TypeScript 5 freshness test",
            "no global typescript@5 with tsserver",
        );
        return;
    };
    warm_answers_equal_cold_after_outside_changes(&TYPESCRIPT, "fresh-ts5", |root| {
        typescript_project(root, &typescript);
    });
}

#[test]
fn typescript_7_warm_answers_equal_cold_after_outside_changes() {
    let typescript = test_cache().join("typescript7/node_modules/typescript");
    if !typescript.join("package.json").is_file() {
        if util::servers_required() {
            panic!(
                "no TypeScript 7 in {} (run .ci/install-servers.sh)",
                typescript.display()
            );
        }
        util::skip(
            "the TypeScript 7 freshness test",
            "no TypeScript 7 (run .ci/install-servers.sh)",
        );
        return;
    }
    warm_answers_equal_cold_after_outside_changes(&TYPESCRIPT, "fresh-ts7", |root| {
        typescript_project(root, &typescript);
    });
}

fn typescript_project(root: &Path, typescript: &Path) {
    write(
        root,
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "module": "esnext",
            "moduleResolution": "bundler", "target": "esnext"}, "include": ["*.ts"]}"#,
    );
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(typescript, root.join("node_modules/typescript")).unwrap();
}

/// The test cache `.ci/install-servers.sh` fills.
fn test_cache() -> PathBuf {
    std::env::var_os("RALPH_HOOKS_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ralph-hooks"))
}

/// `refs --json`'s references as (file, line, column), warm or cold.
fn references(project: &Project, daemon: bool) -> BTreeSet<(String, u64, u64)> {
    let output = project.cli(&["refs", "a.py", "helper", "--json"], daemon);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "refs --json is not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    value["references"]
        .as_array()
        .unwrap_or_else(|| panic!("no references in {value}"))
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["line"].as_u64().unwrap(),
                r["column"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn refs_and_rename_with_pyright_warm_see_files_the_shell_created_and_changed() {
    if util::require_tool("pyright-langserver", "the pyright refs freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-refs");
    let root = project.path();
    write(root, "a.py", PYTHON.a_number);
    write(root, "b.py", PYTHON.b);
    // Warm: the hook's check, then a first `refs`, both in the daemon.
    project.write_through_hook("b.py");
    let first = references(&project, true);
    assert_eq!(first, references(&project, false), "before any change");
    assert_eq!(first.len(), 3, "{first:?}");

    // A new file using it, created by the shell.
    shell(
        root,
        "printf 'from a import helper\\n\\nhelper()\\n' > c.py",
    );
    let warm = references(&project, true);
    assert!(
        warm.contains(&("c.py".to_string(), 3, 1)),
        "the new file's use: {warm:?}\n{}",
        project.log()
    );
    assert_eq!(
        warm,
        references(&project, false),
        "after a file was created"
    );

    // Lines inserted above the uses of an existing file, by the shell.
    shell(root, "sed -i '1i # one\\n# two' b.py");
    let warm = references(&project, true);
    assert!(
        warm.contains(&("b.py".to_string(), 5, 10)),
        "the moved use: {warm:?}\n{}",
        project.log()
    );
    assert_eq!(
        warm,
        references(&project, false),
        "after lines were inserted"
    );

    // `rename`'s plan (nothing written) covers the same files, at the same
    // places, as a cold one.
    let plan = |daemon: bool| {
        let output = project.cli(&["rename", "a.py", "helper", "assist", "--json"], daemon);
        let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "rename --json is not JSON ({e}): {}\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        (value["edits"].clone(), value["files"].clone())
    };
    let warm = plan(true);
    assert_eq!(warm.0, 5, "{warm:?}\n{}", project.log());
    assert_eq!(warm, plan(false), "rename's plan, warm vs cold");
}

/// A created or deleted file costs pyright no restart before a check: told
/// of it, pyright's checks take it in (the answer is the cold one); only a
/// query across the project (`refs`) restarts it, because its references
/// leave a created file out. A restart makes the next answer a cold one
/// (benches/restart.rs).
#[test]
fn pyright_takes_in_created_and_deleted_files_without_a_restart_until_a_query() {
    if util::require_tool("pyright-langserver", "the pyright restart test").is_none() {
        return;
    }
    let project = Project::new("fresh-no-restart");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "a.py", PYTHON.a_number);
    write(root, "c.py", PYTHON.c);
    let restarts = |project: &Project| project.log().matches("restarted pyright").count();
    let report = project.write_through_hook("c.py");
    assert!(report.contains("c.py:1:"), "d is missing: {report}");

    shell(root, &format!("printf '%s' '{}' > d.py", PYTHON.d));
    let report = project.write_through_hook("c.py");
    assert!(!report.contains("c.py:1:"), "d was created: {report}");
    assert_eq!(
        project.errors(true),
        project.errors(false),
        "after d was created"
    );
    std::fs::remove_file(root.join("d.py")).unwrap();
    let report = project.write_through_hook("c.py");
    assert!(report.contains("c.py:1:"), "d was deleted: {report}");
    assert_eq!(
        project.errors(true),
        project.errors(false),
        "after d was deleted"
    );
    assert_eq!(restarts(&project), 0, "{}", project.log());

    // A query across the project: restarted first, then it sees the file.
    shell(
        root,
        "printf 'from a import helper\\n\\nhelper()\\n' > e.py",
    );
    let warm = references(&project, true);
    assert!(warm.contains(&("e.py".to_string(), 3, 1)), "{warm:?}");
    assert_eq!(restarts(&project), 1, "{}", project.log());
}

/// A symbolic link in the project retargeted by the shell (`ln -sfn`,
/// or `git checkout` of a branch where it differs): warm pyright answers
/// as a cold one, in `check` and in the post-edit hook.
#[test]
fn pyright_warm_sees_a_symlink_retargeted() {
    if util::require_tool("pyright-langserver", "the pyright symlink freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-symlink");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "vendor/v1.py", "def v() -> int:\n    return 1\n");
    write(root, "vendor/v2.py", "def v() -> str:\n    return \"s\"\n");
    std::os::unix::fs::symlink("vendor/v1.py", root.join("lnk2.py")).unwrap();
    write(root, "f2.py", "from lnk2 import v\n\nx: int = v()\n");
    let report = project.write_through_hook("f2.py");
    assert!(!report.contains("f2.py:3:"), "{report}");
    assert!(project.errors(true).is_empty());

    shell(root, "ln -sfn vendor/v2.py lnk2.py");
    project.assert_warm_equals_cold_with_error("f2.py", 3, "after the change");
    let report = project.write_through_hook("f2.py");
    assert!(report.contains("f2.py:3:"), "{report}\n{}", project.log());
}

/// A git-ignored file the project imports (generated code), changed by the
/// shell: warm pyright and ty answer as cold ones.
#[test]
fn python_warm_sees_a_git_ignored_import_changed() {
    for (server, label, config) in [
        ("pyright-langserver", "fresh-ignored", None),
        ("ty", "fresh-ignored-ty", Some("ty.toml")),
    ] {
        if util::require_tool(server, "the ignored-file freshness test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        if let Some(config) = config {
            write(root, config, "");
        }
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, ".gitignore", ".claude/\ngen/\n");
        write(root, "gen/g.py", "def g() -> int:\n    return 1\n");
        write(root, "c.py", "from gen.g import g\n\nx: int = g()\n");
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "init"]);
        let report = project.write_through_hook("c.py");
        assert!(!report.contains("c.py:3:"), "{server}: {report}");
        assert!(project.errors(true).is_empty(), "{server}");

        shell(
            root,
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' gen/g.py",
        );
        project.assert_warm_equals_cold_with_error("c.py", 3, server);
    }
}

/// A folder link that stays inside the project (`pkg -> real`): a file
/// imported through it, changed by the shell under its real path, and (for
/// pyright) renamed through the link by `rename --apply`: the warm answer
/// is the cold one (engine attack E-20; the walk saw `real/m.py` change
/// and ty, told of that path only, kept the old text under `pkg/m.py`).
#[test]
fn python_warm_sees_a_file_changed_through_a_folder_link_inside_the_project() {
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-inner-link",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-inner-link-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the inner folder link test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, "real/__init__.py", "");
        write(
            root,
            "real/m.py",
            "def rfunc() -> int:\n    return 1\n\n\nVALUE = rfunc()\n",
        );
        std::os::unix::fs::symlink("real", root.join("pkg")).unwrap();
        write(
            root,
            "c.py",
            "from pkg.m import rfunc\n\nx: int = rfunc()\n",
        );
        assert!(!project.write_through_hook("c.py").contains("c.py:"));
        assert!(project.errors(true).is_empty(), "{}", project.log());

        shell(
            root,
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' real/m.py",
        );
        project.assert_warm_equals_cold_with_error("c.py", 3, server);
        assert!(
            project.write_through_hook("c.py").contains("c.py:3:"),
            "{server}"
        );
        shell(
            root,
            "sed -i 's/-> str:/-> int:/; s/return \"s\"/return 1/' real/m.py",
        );
        assert!(
            project.errors(true).is_empty(),
            "{server}\n{}",
            project.log()
        );

        // A chain of inner links (`pkg -> real`, `real/sub -> ../other`):
        // the change is news under every path through it (re-attack RC-13).
        write(root, "other/__init__.py", "");
        write(root, "other/x.py", "def h() -> int:\n    return 1\n");
        std::os::unix::fs::symlink("../other", root.join("real/sub")).unwrap();
        write(root, "d.py", "from pkg.sub.x import h\n\ny: int = h()\n");
        assert!(
            project.errors(true).is_empty(),
            "{server}\n{}",
            project.log()
        );
        shell(
            root,
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' other/x.py",
        );
        project.assert_warm_equals_cold_with_error("d.py", 3, server);
        shell(root, "rm d.py real/sub");
        if server != "pyright-langserver" {
            continue;
        }

        let output = project.cli(&["rename", "c.py", "rfunc", "renamed_fn", "--apply"], true);
        let said = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            std::fs::read_to_string(root.join("real/m.py"))
                .unwrap()
                .contains("def renamed_fn"),
            "{said}"
        );
        assert!(
            !said.contains("unknown import symbol"),
            "{said}\n{}",
            project.log()
        );
        let cold = project.errors(false);
        assert!(cold.is_empty(), "cold after the rename: {cold:?}");
        assert_eq!(
            project.errors(true),
            cold,
            "warm after the rename\n{}",
            project.log()
        );
        assert!(!project.write_through_hook("c.py").contains("c.py:"));
    }
}

/// Claude edits a module, then a file that imports it: the second edit's
/// report has the error the first one caused, as a cold check does
/// (re-attack RD-7: a pulled server's kept answer for the unchanged text
/// was given back).
#[test]
fn the_edit_of_a_dependent_after_the_edit_of_its_module_is_answered_afresh() {
    for (server, label, config) in [
        ("ty", "fresh-dependent-ty", "ty.toml"),
        (
            "pyright-langserver",
            "fresh-dependent-pyright",
            "pyrightconfig.json",
        ),
    ] {
        if util::require_tool(server, "the dependent edit test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, "m.py", "def h() -> int:\n    return 1\n");
        write(root, "c.py", "from m import h\n\ny: int = h()\n");
        let report = project.write_through_hook("c.py");
        assert!(!report.contains("c.py:3:"), "{server}: {report}");
        write(root, "m.py", "def h() -> str:\n    return \"s\"\n");
        project.write_through_hook("m.py");
        let report = project.write_through_hook("c.py");
        assert!(
            report.contains("c.py:3:"),
            "{server}: {report}\n{}",
            project.log()
        );
    }
}

/// Folder links inside the project into a folder that holds them (`s1 ->
/// .`, the C trick of an include folder naming itself): a change is told
/// once, not under every path through them (re-attack RD-1: names grew
/// exponentially, and the daemon's memory with them).
#[test]
fn links_to_their_own_folder_do_not_multiply_a_change() {
    if util::require_tool("pyright-langserver", "the self link test").is_none() {
        return;
    }
    let project = Project::new("fresh-self-links");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "real/__init__.py", "");
    write(root, "real/m.py", "def h() -> int:\n    return 1\n");
    for n in 1..=4 {
        std::os::unix::fs::symlink(".", root.join(format!("real/s{n}"))).unwrap();
    }
    write(root, "c.py", "from real.m import h\n\ny: int = h()\n");
    assert!(project.errors(true).is_empty(), "{}", project.log());
    shell(
        root,
        "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' real/m.py",
    );
    project.assert_warm_equals_cold_with_error("c.py", 3, "self links");
    let log = project.log();
    assert!(
        log.contains("pyright: 1 changed on the disk"),
        "one change told once: {log}"
    );
}

/// A folder link inside the project to a folder the walk skips (a hidden
/// one): its files are walked through the link (re-attack RC-12: nobody
/// walked them, and a loop completed with the error in them).
#[test]
fn python_warm_sees_a_file_changed_behind_a_link_into_a_hidden_folder() {
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-hidden-link",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-hidden-link-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the hidden folder link test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, ".vendor/lib/om.py", "def o() -> int:\n    return 1\n");
        std::os::unix::fs::symlink(".vendor/lib", root.join("lib")).unwrap();
        write(root, "c.py", "from lib.om import o\n\ny: int = o()\n");
        assert!(
            project.errors(true).is_empty(),
            "{server}\n{}",
            project.log()
        );
        shell(
            root,
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' .vendor/lib/om.py",
        );
        project.assert_warm_equals_cold_with_error("c.py", 3, server);
    }
}

/// A symbolic link in the project to a file outside it, whose target the
/// shell edits: warm pyright answers as a cold one.
#[test]
fn pyright_warm_sees_a_symlinks_target_outside_the_project_changed() {
    if util::require_tool(
        "pyright-langserver",
        "the pyright link-target freshness test",
    )
    .is_none()
    {
        return;
    }
    let project = Project::new("fresh-link-target");
    let outside = TempDir::new("fresh-link-target-outside");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(outside.path(), "t.py", "def l() -> int:\n    return 1\n");
    std::os::unix::fs::symlink(outside.path().join("t.py"), root.join("lnk.py")).unwrap();
    write(root, "f.py", "from lnk import l\n\nx: int = l()\n");
    let report = project.write_through_hook("f.py");
    assert!(!report.contains("f.py:3:"), "{report}");
    assert!(project.errors(true).is_empty());

    shell(
        outside.path(),
        "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' t.py",
    );
    project.assert_warm_equals_cold_with_error("f.py", 3, "after the change");
}

/// TypeScript reads files the workspace walk skips: JSON modules (with
/// `resolveJsonModule`), a configuration that `tsconfig.json` extends under
/// another name, and typings under `node_modules`. Each changed by the
/// shell, a warm check answers as a cold one.
#[test]
fn typescript_warm_sees_json_modules_extended_configs_and_dependencies_changed() {
    if util::require_tool(
        "typescript-language-server",
        "the TypeScript dependency freshness test",
    )
    .is_none()
    {
        return;
    }
    let Some(typescript) = crate::lsp_real::typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the TypeScript dependency freshness test",
            "no global typescript@5 with tsserver",
        );
        return;
    };
    let project = Project::new("fresh-ts-deps");
    let root = project.path();
    typescript_project(root, &typescript);
    write(
        root,
        "tsconfig.json",
        r#"{
  // the shared settings live elsewhere
  "extends": "./configs/base.json",
  "compilerOptions": {"noEmit": true, "module": "esnext", "moduleResolution": "bundler",
    "target": "esnext", "resolveJsonModule": true},
  "include": ["*.ts"],
}"#,
    );
    write(
        root,
        "configs/base.json",
        r#"{"compilerOptions": {"strict": false}}"#,
    );
    write(root, "data.json", r#"{"v": 1}"#);
    write(
        root,
        "node_modules/mylib/package.json",
        r#"{"name": "mylib", "version": "1.0.0", "types": "index.d.ts"}"#,
    );
    write(
        root,
        "node_modules/mylib/index.d.ts",
        "export declare function lib(): number;\n",
    );
    write(
        root,
        "a.ts",
        "import d from \"./data.json\";\nexport const n: number = d.v;\n",
    );
    write(root, "b.ts", "export function f(x) {\n  return x;\n}\n");
    write(
        root,
        "e.ts",
        "import { lib } from \"mylib\";\nexport const q: number = lib();\n",
    );
    write(root, ".gitignore", ".claude/\nnode_modules\n");
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "init"]);
    project.write_through_hook("a.ts");
    assert!(project.errors(true).is_empty(), "{}", project.log());

    let steps: [(&str, &str, (&str, u64)); 3] = [
        (
            "a JSON module changed",
            r#"printf '{"v": "s"}' > data.json"#,
            ("a.ts", 2),
        ),
        (
            "the extended configuration turned strict on",
            r#"printf '{"compilerOptions": {"strict": true}}' > configs/base.json"#,
            ("b.ts", 1),
        ),
        (
            "a dependency's typings changed",
            "sed -i 's/number/string/' node_modules/mylib/index.d.ts",
            ("e.ts", 2),
        ),
    ];
    for (what, script, (file, line)) in steps {
        shell(root, script);
        // Warm first, right after the change: tsserver watches some files
        // itself and would catch up while a cold check ran.
        let warm = project.errors(true);
        let cold = project.errors(false);
        assert!(
            cold.iter().any(|(f, l, _)| f == file && *l == line),
            "{what}: cold {cold:?}"
        );
        assert_eq!(warm, cold, "{what}: warm vs cold\n{}", project.log());
    }
}

/// A Python checker's extra search path outside the project, changed by
/// the shell (a sibling package in a monorepo): warm answers as cold, for
/// pyright (`extraPaths`) and ty (`extra-paths`).
#[test]
fn python_warm_sees_an_extra_search_path_outside_the_project_changed() {
    for (server, label, config, text) in [
        (
            "pyright-langserver",
            "fresh-extra-pyright",
            "pyrightconfig.json",
            r#"{"extraPaths": ["EXT"]}"#,
        ),
        // Given as pyright's settings, the way its documentation shows
        // them (engine attack E-18).
        (
            "pyright-langserver",
            "fresh-extra-pyright-settings",
            ".lsp.json",
            r#"{"ruff": {"disabled": true},
                "pyright": {"settings": {"python": {"analysis": {"extraPaths": ["EXT"]}}}}}"#,
        ),
        // Written as settings files are shared, relative to the workspace
        // (re-attack RC-6).
        (
            "pyright-langserver",
            "fresh-extra-pyright-workspace",
            ".lsp.json",
            r#"{"ruff": {"disabled": true},
                "pyright": {"settings": {"python": {"analysis":
                    {"extraPaths": ["${workspaceFolder}/../OUTNAME"]}}}}}"#,
        ),
        (
            "ty",
            "fresh-extra-ty",
            "ty.toml",
            "[environment]\nextra-paths = [\"EXT\"]\n",
        ),
    ] {
        if util::require_tool(server, "the extra search path freshness test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let outside = TempDir::new(&format!("{label}-lib"));
        let root = project.path();
        let ext = outside.path().display().to_string();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        let name = outside.path().file_name().unwrap().to_string_lossy();
        write(
            root,
            config,
            &text.replace("EXT", &ext).replace("OUTNAME", &name),
        );
        write(outside.path(), "ext.py", "def e() -> int:\n    return 1\n");
        write(root, "m.py", "from ext import e\n\nx: int = e()\n");
        write(root, ".gitignore", ".claude/\n");
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "init"]);
        let report = project.write_through_hook("m.py");
        assert!(!report.contains("m.py:3:"), "{server}: {report}");
        assert!(
            project.errors(true).is_empty(),
            "{server}: {}",
            project.log()
        );

        shell(
            outside.path(),
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' ext.py",
        );
        project.assert_warm_equals_cold_with_error("m.py", 3, server);
    }
}

/// A folder with no Python file in it is a namespace package (PEP 420):
/// made or removed by the shell, it changes what `import nsdir` resolves
/// to, and the warm answer follows as a cold one does (engine attack E-9:
/// pyright, told of it, kept the old answer; ty's kept command-line result
/// too). A folder made with a file in it needs no restart.
#[test]
fn python_warm_sees_a_namespace_package_come_and_go() {
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-ns-pyright",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-ns-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the namespace package test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, "b.py", "import nsdir\n\nprint(nsdir)\n");
        project.assert_warm_equals_cold_with_error("b.py", 1, server);

        shell(root, "mkdir nsdir && echo data > nsdir/data.txt");
        let cold = project.errors(false);
        assert!(cold.is_empty(), "{server}: cold {cold:?}");
        assert_eq!(
            project.errors(true),
            cold,
            "{server}: made\n{}",
            project.log()
        );

        shell(root, "rm -r nsdir");
        project.assert_warm_equals_cold_with_error("b.py", 1, server);

        // A folder no import names (a script's output) is told, not a
        // restart (re-attack RC-4: each was a cold check).
        let restarts = project.log().matches("restarting it").count();
        shell(root, "mkdir out4 logs");
        project.assert_warm_equals_cold_with_error("b.py", 1, server);
        shell(root, "mkdir -p pkg && echo 'v = 1' > pkg/m.py");
        write(
            root,
            "b.py",
            "import nsdir\nfrom pkg.m import v\n\nprint(nsdir, v)\n",
        );
        project.assert_warm_equals_cold_with_error("b.py", 1, server);
        assert_eq!(
            project.log().matches("restarting it").count(),
            restarts,
            "{server}: a folder no import names, or one made with a file in it, restarted the server\n{}",
            project.log()
        );
    }
}

/// A module changed, and a namespace package made, where the checker looks
/// besides the project: a `PYTHONPATH` folder, an `extraPaths` folder, a
/// folder linked in from outside. Warm answers as cold (re-attack RC-2,
/// RC-5).
#[test]
fn python_warm_sees_search_folders_outside_the_project_change() {
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-search-pyright",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-search-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the search folder test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let outside = TempDir::new(&format!("{label}-out"));
        let root = project.path();
        let (pp, xp, nl) = (
            outside.path().join("pp"),
            outside.path().join("xp"),
            outside.path().join("nl"),
        );
        write(&pp, "ppmod.py", "def pf() -> int:\n    return 1\n");
        write(&xp, "y.py", "Y = 1\n");
        // `deep` holds only a folder (re-attack RD-4).
        write(&nl, "deep/sub/m.py", "X = 1\n");
        std::os::unix::fs::symlink(&nl, root.join("lib")).unwrap();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        let extra = xp.display().to_string();
        let text = if config == "ty.toml" {
            format!("[environment]\nextra-paths = [\"{extra}\"]\n")
        } else {
            json!({"extraPaths": [extra]}).to_string()
        };
        write(root, config, &text);
        write(root, "a.py", "from ppmod import pf\n\nx: int = pf()\n");
        write(
            root,
            "b.py",
            "import lib.deep.nsx\nimport nsy\n\nprint(lib.deep.nsx, nsy)\n",
        );
        // Relative, as a Makefile writes it: the server's folder's
        // (re-attack RD-2).
        let name = outside.path().file_name().unwrap().to_string_lossy();
        project.set_python_path(Some(Path::new(&format!("../{name}/pp"))));
        let cold = project.errors(false);
        assert_eq!(
            project.errors(true),
            cold,
            "{server}: at first\n{}",
            project.log()
        );
        assert!(
            cold.iter().all(|(file, _, _)| file == "b.py"),
            "{server}: {cold:?}"
        );

        shell(
            &pp,
            "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' ppmod.py",
        );
        project.assert_warm_equals_cold_with_error("a.py", 3, server);

        // One at a time: each must be news on its own.
        shell(outside.path(), "mkdir nl/deep/nsx");
        project.assert_warm_equals_cold_with_error("b.py", 2, server);
        shell(outside.path(), "mkdir xp/nsy");
        let cold = project.errors(false);
        assert!(
            !cold.iter().any(|(file, _, _)| file == "b.py"),
            "{server}: {cold:?}"
        );
        assert_eq!(
            project.errors(true),
            cold,
            "{server}: made\n{}",
            project.log()
        );

        shell(outside.path(), "rmdir nl/deep/nsx xp/nsy");
        project.assert_warm_equals_cold_with_error("b.py", 1, server);
    }
}

/// The virtual environment of an interpreter named in `.lsp.json`
/// settings (`python.pythonPath`): a package replaced there, as `pip
/// install` does, is seen warm (re-attack RC-16).
#[test]
fn pyright_warm_sees_the_environment_of_a_python_path_setting_change() {
    if util::require_tool("pyright-langserver", "the pythonPath test").is_none() {
        return;
    }
    let project = Project::new("fresh-python-path");
    let outside = TempDir::new("fresh-python-path-env");
    let venv = outside.path().join("venv");
    let site = make_venv(&venv);
    write(&site, "ppk/__init__.py", "def pk() -> int: ...\n");
    let root = project.path();
    let settings = json!({
        "ruff": {"disabled": true},
        "pyright": {"settings": {"python": {"pythonPath": venv.join("bin/python3")}}},
    });
    write(root, ".lsp.json", &settings.to_string());
    write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
    let cold = project.errors(false);
    assert!(cold.is_empty(), "{cold:?}");
    assert_eq!(project.errors(true), cold, "{}", project.log());
    shell(
        &site,
        "rm -r ppk && mkdir ppk && echo 'def pk() -> str: ...' > ppk/__init__.py",
    );
    project.assert_warm_equals_cold_with_error("a.py", 3, "pythonPath");
}

/// Where a Python checker looks for modules, made after its server
/// started: a `PYTHONPATH` folder (re-attack RD-3), the user site of an
/// interpreter used without a virtualenv (`pip install --user`, RC-14).
/// Each is news to the warm server, as it is to a cold one.
#[test]
fn python_warm_sees_search_folders_and_the_user_site_made_after_it_started() {
    let version = Command::new("python3")
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .expect("python3 runs");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-late-pyright",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-late-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the late search folder test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let outside = TempDir::new(&format!("{label}-out"));
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(
            root,
            "a.py",
            "import late_pp\nimport late_user\n\nprint(late_pp, late_user)\n",
        );
        project.set_python_path(Some(&outside.path().join("pp")));
        project.set_user_base(&outside.path().join("ub"));
        project.assert_warm_equals_cold_with_error("a.py", 1, server);
        assert!(project.errors(false).iter().any(|(_, line, _)| *line == 2));

        write(&outside.path().join("pp"), "late_pp.py", "X = 1\n");
        project.assert_warm_equals_cold_with_error("a.py", 2, server);
        assert!(!project.errors(false).iter().any(|(_, line, _)| *line == 1));

        let site = outside
            .path()
            .join(format!("ub/lib/python{version}/site-packages"));
        write(&site, "late_user.py", "def lu() -> int: ...\n");
        // ty reads no user site (0.0.x): the cold answer keeps the error,
        // and the warm one must too.
        let cold = project.errors(false);
        assert!(cold.is_empty() || server == "ty", "{server}: {cold:?}");
        assert_eq!(project.errors(true), cold, "{server}\n{}", project.log());
    }
}

/// The project's `.venv` made after the server started (`uv venv`, then
/// a package installed): ty takes it in as a cold check does.
#[test]
fn python_warm_sees_the_projects_virtualenv_made_after_it_started() {
    for (server, label, config) in [
        ("ty", "fresh-late-venv-ty", "ty.toml"),
        (
            "pyright-langserver",
            "fresh-late-venv-pyright",
            "pyrightconfig.json",
        ),
    ] {
        if util::require_tool(server, "the late .venv test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
        project.assert_warm_equals_cold_with_error("a.py", 1, server);
        let site = make_venv(&root.join(".venv"));
        write(&site, "ppk/__init__.py", "def pk() -> str: ...\n");
        let cold = project.errors(false);
        assert_eq!(project.errors(true), cold, "{server}\n{}", project.log());
    }
}

/// A virtualenv named by pyright's `venvPath` and `venv` that did not
/// exist when the server started, then a package replaced there: each is
/// seen warm (re-attack RD-9).
#[test]
fn pyright_warm_sees_the_virtualenv_of_venv_path_made_and_changed() {
    if util::require_tool("pyright-langserver", "the venvPath test").is_none() {
        return;
    }
    let project = Project::new("fresh-venv-path");
    let outside = TempDir::new("fresh-venv-path-envs");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    let config = json!({"venvPath": outside.path(), "venv": "v1"});
    write(root, "pyrightconfig.json", &config.to_string());
    write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
    project.assert_warm_equals_cold_with_error("a.py", 1, "no virtualenv yet");

    let venv = outside.path().join("v1");
    let site = make_venv(&venv);
    write(&site, "ppk/__init__.py", "def pk() -> int: ...\n");
    let cold = project.errors(false);
    assert!(cold.is_empty(), "{cold:?}");
    assert_eq!(project.errors(true), cold, "made\n{}", project.log());

    shell(
        &site,
        "rm -r ppk && mkdir ppk && echo 'def pk() -> str: ...' > ppk/__init__.py",
    );
    project.assert_warm_equals_cold_with_error("a.py", 3, "venvPath");
}

/// The virtualenv of a `python.pythonPath` setting made after the server
/// started (the settings committed, `python -m venv` run later): warm
/// answers as cold (attack AE-1: a false clean, and a loop completed).
#[test]
fn pyright_warm_sees_the_virtualenv_of_a_python_path_setting_made_later() {
    if util::require_tool("pyright-langserver", "the late pythonPath test").is_none() {
        return;
    }
    let project = Project::new("fresh-python-path-late");
    let outside = TempDir::new("fresh-python-path-late-env");
    let venv = outside.path().join("v");
    let root = project.path();
    let settings = json!({
        "ruff": {"disabled": true},
        "pyright": {"settings": {"python": {"pythonPath": venv.join("bin/python")}}},
    });
    write(root, ".lsp.json", &settings.to_string());
    write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
    project.assert_warm_equals_cold_with_error("a.py", 1, "no virtualenv yet");
    let site = make_venv(&venv);
    write(&site, "ppk/__init__.py", "def pk() -> str: ...\n");
    project.assert_warm_equals_cold_with_error("a.py", 3, "the virtualenv made");
}

/// A ruff configuration that a project's `ruff.toml` `extend`s, in a
/// hidden folder: the warm ruff server (the post-edit hook's) takes in
/// its change (attack AE-2: it kept the old rules, and `fix` applied them).
#[test]
fn ruff_warm_sees_an_extended_configuration_change() {
    if util::require_tool("ruff", "the ruff extend test").is_none() {
        return;
    }
    let project = Project::new("fresh-ruff-extend");
    let root = project.path();
    write(
        root,
        ".config/ruff-base.toml",
        "[lint]\nselect = [\"F401\"]\n",
    );
    write(root, "ruff.toml", "extend = \".config/ruff-base.toml\"\n");
    write(root, "a.py", "import os\nl = 1\n");
    let first = project.write_through_hook("a.py");
    assert!(first.contains("F401"), "{first}");
    shell(
        root,
        "printf '[lint]\\nselect = [\"E741\"]\\n' > .config/ruff-base.toml",
    );
    let second = project.write_through_hook("a.py");
    assert!(
        second.contains("E741") && !second.contains("F401"),
        "{second}\n{}",
        project.log()
    );
}

/// ty's `[environment] python` naming a virtualenv outside the project: a
/// package installed there, then replaced, is seen warm (attack AE-3: a
/// false clean from the check and the post-edit hook).
#[test]
fn ty_warm_sees_the_environment_its_configuration_names_change() {
    if util::require_tool("ty", "the ty environment test").is_none() {
        return;
    }
    let project = Project::new("fresh-ty-python");
    let outside = TempDir::new("fresh-ty-python-env");
    let venv = outside.path().join("v");
    let site = make_venv(&venv);
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(
        root,
        "ty.toml",
        &format!("[environment]\npython = \"{}\"\n", venv.display()),
    );
    write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
    project.assert_warm_equals_cold_with_error("a.py", 1, "nothing installed");
    write(&site, "ppk/__init__.py", "def pk() -> str: ...\n");
    project.assert_warm_equals_cold_with_error("a.py", 3, "installed");
    shell(&site, "rm -r ppk && echo 'def pk() -> bytes: ...' > ppk.py");
    project.assert_warm_equals_cold_with_error("a.py", 3, "replaced");
}

/// A file a build script reads (`cargo:rerun-if-changed`), changed by the
/// shell: what the script generates changes, and the warm answer with it.
#[test]
fn rust_warm_sees_a_file_its_build_script_reads_change() {
    if util::require_tool("rust-analyzer", "the build script input test").is_none() {
        return;
    }
    let project = Project::new("fresh-build-script");
    let root = project.path();
    write(
        root,
        "Cargo.toml",
        "[package]\nname = \"gen\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(
        root,
        "build.rs",
        r#"fn main() {
    println!("cargo:rerun-if-changed=data/value.txt");
    let text = std::fs::read_to_string("data/value.txt").unwrap();
    let text = text.trim();
    let constant = match text.parse::<i32>() {
        Ok(n) => format!("pub const GEN: i32 = {n};"),
        Err(_) => format!("pub const GEN: &str = {text:?};"),
    };
    let out = std::env::var("OUT_DIR").unwrap();
    std::fs::write(format!("{out}/gen.rs"), constant).unwrap();
}
"#,
    );
    write(root, "data/value.txt", "1\n");
    write(
        root,
        "src/main.rs",
        "include!(concat!(env!(\"OUT_DIR\"), \"/gen.rs\"));\nfn main() {\n    let x: i32 = GEN;\n    println!(\"{x}\");\n}\n",
    );
    let cold = project.errors(false);
    assert!(cold.is_empty(), "{cold:?}");
    assert_eq!(project.errors(true), cold, "{}", project.log());
    shell(root, "echo abc > data/value.txt");
    project.assert_warm_equals_cold_with_error("src/main.rs", 3, "the input changed");
}

/// A ty configuration that `ty check` rejects (an environment that is not
/// there): the project cannot be checked, warm as cold, also after a
/// change (attack AE-4: warm fell back to ty's defaults and said clean).
#[test]
fn ty_warm_cannot_check_a_project_its_command_line_rejects_either() {
    if util::require_tool("ty", "the rejected configuration test").is_none() {
        return;
    }
    let project = Project::new("fresh-ty-rejected");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "ty.toml", "[environment]\npython = \".venv\"\n");
    write(root, "a.py", "x: int = \"s\"\n");
    let summary = |daemon: bool| {
        let output = project.cli(&["check", "--json", "--no-ast-grep"], daemon);
        let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        (
            output.status.code(),
            report["summary"]["inconclusive"].clone(),
        )
    };
    let cold = summary(false);
    assert_eq!(cold, (Some(2), json!(1)), "cold");
    assert_eq!(summary(true), cold, "warm at first\n{}", project.log());
    for text in ["x: int = 1\n", "x: int = 2\n"] {
        // Time for the daemon's background work between the checks.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        write(root, "a.py", text);
        assert_eq!(
            summary(true),
            summary(false),
            "after a change\n{}",
            project.log()
        );
    }
}

/// `include-system-site-packages` turned on in `.venv/pyvenv.cfg`, edited
/// in place: the base installation's packages count for ty, warm as cold
/// (attack AE-12: a false clean).
#[test]
fn ty_warm_sees_the_virtualenv_take_in_the_base_installations_packages() {
    if util::require_tool("ty", "the pyvenv.cfg test").is_none() {
        return;
    }
    let project = Project::new("fresh-pyvenv-cfg");
    let outside = TempDir::new("fresh-pyvenv-cfg-base");
    let root = project.path();
    // A base installation of our own (ty reads its layout, it runs no
    // Python): its `ppk` is what the switch lets in.
    let base = outside.path();
    write(
        base,
        "lib/python3.11/site-packages/ppk/__init__.py",
        "def pk() -> str: ...\n",
    );
    std::fs::create_dir_all(base.join("bin")).unwrap();
    std::fs::create_dir_all(root.join(".venv/lib/python3.11/site-packages")).unwrap();
    write(
        root,
        ".venv/pyvenv.cfg",
        &format!(
            "home = {}\ninclude-system-site-packages = false\nversion = 3.11.7\n",
            base.join("bin").display()
        ),
    );
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "ty.toml", "[rules]\nimport-not-found = \"ignore\"\n");
    write(root, "a.py", "from ppk import pk\n\nx: int = pk()\n");
    let cold = project.errors(false);
    assert!(cold.is_empty(), "{cold:?}");
    assert_eq!(project.errors(true), cold, "{}", project.log());
    shell(
        root,
        "sed -i 's/include-system-site-packages = false/include-system-site-packages = true/' .venv/pyvenv.cfg",
    );
    project.assert_warm_equals_cold_with_error("a.py", 3, "pyvenv.cfg");
}

/// TypeScript in a fresh clone: `node_modules/` made after the server
/// started (`npm install`), and a configuration `tsconfig.json` `extends`
/// made after it started: each is seen warm (attack AE-5, AE-6).
#[test]
fn typescript_warm_sees_node_modules_and_an_extended_configuration_made_later() {
    if util::require_tool("typescript-language-server", "the late node_modules test").is_none() {
        return;
    }
    let project = Project::new("fresh-ts-late");
    let outside = TempDir::new("fresh-ts-late-shared");
    let root = project.path();
    let base = outside.path().join("base.json");
    let tsconfig = json!({
        "extends": base,
        "compilerOptions": {"noEmit": true, "module": "esnext", "moduleResolution": "bundler",
            "target": "esnext"},
        "include": ["*.ts"],
    });
    write(root, "tsconfig.json", &tsconfig.to_string());
    write(
        root,
        "main.ts",
        "import { val } from \"acmelib\";\nexport const n: number = val;\nexport function f(x) { return x; }\n",
    );
    project.assert_warm_equals_cold_with_error("main.ts", 1, "not installed");
    write(
        root,
        "node_modules/acmelib/package.json",
        r#"{"name": "acmelib", "version": "1.0.0", "types": "index.d.ts"}"#,
    );
    write(
        root,
        "node_modules/acmelib/index.d.ts",
        "export declare const val: string;\n",
    );
    project.assert_warm_equals_cold_with_error("main.ts", 2, "installed");
    write(
        outside.path(),
        "base.json",
        r#"{"compilerOptions": {"strict": true}}"#,
    );
    project.assert_warm_equals_cold_with_error("main.ts", 3, "the base made");
}

/// A project opened through a folder link (every project under `/tmp` on
/// macOS): the edit's report has the checker's errors, cold and warm
/// (re-attack RC-7: ty said nothing about the edited file, read as clean).
#[test]
fn an_edit_in_a_project_opened_through_a_link_is_checked() {
    for (server, label, config) in [
        ("ty", "fresh-alias-ty", "ty.toml"),
        (
            "pyright-langserver",
            "fresh-alias-pyright",
            "pyrightconfig.json",
        ),
    ] {
        if util::require_tool(server, "the linked project test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let links = TempDir::new(&format!("{label}-links"));
        let alias = links.path().join("alias");
        std::os::unix::fs::symlink(project.path(), &alias).unwrap();
        write(
            project.path(),
            ".lsp.json",
            r#"{"ruff": {"disabled": true}}"#,
        );
        write(
            project.path(),
            config,
            if config == "ty.toml" { "" } else { "{}" },
        );
        write(project.path(), "e.py", "w: int = \"s\"\n");
        let file = alias.join("e.py");
        let payload = json!({
            "session_id": SESSION,
            "hook_event_name": "PostToolUse",
            "cwd": alias,
            "tool_name": "Write",
            "tool_input": {"file_path": file, "content": "w: int = \"s\"\n"},
            "tool_response": {"type": "create", "filePath": file},
        });
        for daemon in [false, true] {
            let mut command = util::command("ralph-post-tool-lsp-diagnostic", &alias);
            if daemon {
                command.env_remove("RALPH_HOOKS_DAEMON");
            }
            let output = util::run_with_stdin(command, payload.to_string().as_bytes());
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                stdout.contains("e.py:1:10 error"),
                "{server}, daemon {daemon}: {stdout}"
            );
        }
        let mut stop = util::command("ralph-hooks", &alias);
        stop.env_remove("RALPH_HOOKS_DAEMON")
            .args(["daemon", "stop"]);
        let _ = stop.output();
    }
}

/// The warm answer is the caller's: a check or an edit from a shell with a
/// virtualenv active sees the packages installed there, one from a shell
/// without it does not, whoever started the daemon (engine attack E-14:
/// each got the other's answer). The virtualenv lies outside the project,
/// where nothing finds it but its activation.
#[test]
fn python_warm_answers_for_the_callers_virtualenv() {
    for (server, label, config) in [
        (
            "pyright-langserver",
            "fresh-venv-pyright",
            "pyrightconfig.json",
        ),
        ("ty", "fresh-venv-ty", "ty.toml"),
    ] {
        if util::require_tool(server, "the caller's virtualenv test").is_none() {
            continue;
        }
        let project = Project::new(label);
        let outside = TempDir::new(&format!("{label}-env"));
        let venv = outside.path().join("venv");
        let site = make_venv(&venv);
        write(&site, "vpkg/__init__.py", "def vf() -> int: ...\n");
        let root = project.path();
        write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
        write(root, config, if config == "ty.toml" { "" } else { "{}" });
        write(root, "a.py", "from vpkg import vf\n\nx: int = vf()\n");

        for round in 0..2 {
            project.activate(Some(&venv));
            let cold = project.errors(false);
            assert!(cold.is_empty(), "{server} {round}: cold with it {cold:?}");
            assert_eq!(
                project.errors(true),
                cold,
                "{server} {round}: warm with it\n{}",
                project.log()
            );
            assert!(
                !project.write_through_hook("a.py").contains("a.py:1:"),
                "{server} {round}: the edit's report with it\n{}",
                project.log()
            );

            project.activate(None);
            project.assert_warm_equals_cold_with_error("a.py", 1, server);
            assert!(
                project.write_through_hook("a.py").contains("a.py:1:"),
                "{server} {round}: the edit's report without it\n{}",
                project.log()
            );
        }
    }
}

/// A file pyright was not given, changed by the shell alone (no file came
/// or went): warm `refs` answers from the disk as it is now, not from the
/// text pyright read first (engine attack E10: a comment reported as a use).
#[test]
fn refs_with_pyright_warm_see_a_file_the_shell_only_changed() {
    if util::require_tool("pyright-langserver", "the pyright refs freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-refs-changed");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "a.py", PYTHON.a_number);
    write(root, "b.py", PYTHON.b);
    write(root, "gen/u.py", "from a import helper\nx = helper()\n");
    project.write_through_hook("b.py");
    let first = references(&project, true);
    assert_eq!(first, references(&project, false), "before any change");
    assert!(
        first
            .iter()
            .any(|(file, line, _)| file == "gen/u.py" && *line == 2),
        "{first:?}"
    );

    shell(
        root,
        "printf 'from a import helper\\n# no use here\\n\\nx = helper()\\n' > gen/u.py",
    );
    let warm = references(&project, true);
    let cold = references(&project, false);
    assert!(
        cold.iter()
            .any(|(file, line, _)| file == "gen/u.py" && *line == 4),
        "{cold:?}"
    );
    assert_eq!(warm, cold, "warm vs cold\n{}", project.log());
}

/// A warm pull server is asked with the result id of what it said last:
/// after one file changed outside the hooks, the files whose diagnostics
/// did not change come back "unchanged" (not in full), and the report
/// still carries their errors, from what the daemon kept; the changed
/// file's new error is there too, as a cold check has it.
#[test]
fn a_warm_pull_server_answers_unchanged_files_by_result_id() {
    let project = Project::new("fresh-result-ids");
    let root = project.path();
    let log = root.join("fake.log");
    util::write_fake_lsp_json(
        root,
        &["--mode", "pull-only", "--log-file", log.to_str().unwrap()],
    );
    write(root, "a.fake", "ok\nERROR: kept\n");
    write(root, "b.fake", "ok\n");
    write(root, "c.fake", "WARN: kept too\n");
    let first = project.errors(true);
    assert_eq!(first.len(), 1, "{first:?}");
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!log_text().contains("unchanged"), "{}", log_text());

    shell(root, "printf 'ok\\nERROR: new\\n' > b.fake");
    let warm = project.errors(true);
    assert_eq!(
        warm,
        project.errors(false),
        "warm vs cold\n{}",
        project.log()
    );
    assert!(
        warm.iter()
            .any(|(file, line, _)| file == "a.fake" && *line == 2)
            && warm
                .iter()
                .any(|(file, line, _)| file == "b.fake" && *line == 2),
        "{warm:?}"
    );
    let unchanged: Vec<String> = log_text()
        .lines()
        .filter_map(|line| line.strip_prefix("unchanged "))
        .map(|uri| uri.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert!(unchanged.contains(&"a.fake".to_string()), "{unchanged:?}");
    assert!(!unchanged.contains(&"b.fake".to_string()), "{unchanged:?}");
}

/// A warm server that has said nothing for longer than a check's silence
/// limit, because nobody asked it anything, is not hung: a project check
/// after an outside change asks it and gets its answer (it was stopped as
/// hung at once, every file inconclusive, when a warm ty was asked after
/// two idle minutes).
#[test]
fn a_server_idle_longer_than_the_silence_limit_is_asked_not_stopped() {
    let project = Project::new("fresh-idle-server");
    let root = project.path();
    write(
        root,
        ".claude/ralph-hooks.json",
        &json!({
            "diagnostics": {"timeout_ms": 1_500, "ast_grep": false},
            "daemon": {"start_timeout_ms": 60_000},
        })
        .to_string(),
    );
    util::write_fake_lsp_json(root, &["--mode", "pull-only"]);
    write(root, "a.fake", "ERROR: one\n");
    write(root, "b.fake", "ok\n");
    assert_eq!(project.errors(true).len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    shell(root, "printf 'ERROR: two\\n' > b.fake");
    // `errors` fails on an inconclusive file.
    assert_eq!(project.errors(true).len(), 2, "{}", project.log());
    assert!(
        !project.log().contains("failed a check"),
        "{}",
        project.log()
    );
}

/// clangd answers for a file from the headers it included when it built
/// that file's preamble: after a header changed (by the shell, or by
/// Claude's own edit through the post-edit hook), warm `check` and the
/// loop's Stop report what a cold check does (engine attack E-13: a false
/// "no problems" and a loop COMPLETED over an `#error`).
#[test]
fn clangd_warm_sees_a_header_changed_by_the_shell_or_an_edit() {
    if util::require_tool("clangd", "the clangd header freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-clangd-header");
    let root = project.path();
    write(root, "compile_flags.txt", "-std=c11\n");
    write(root, "cfg.h", "#define VAL 1\n");
    write(
        root,
        "m.c",
        "#include \"cfg.h\"\n#if VAL == 2\n#error boom\n#endif\nint main(void) { return 0; }\n",
    );
    assert!(project.errors(true).is_empty());
    assert!(project.errors(true).is_empty());

    shell(root, "sed -i 's/VAL 1/VAL 2/' cfg.h");
    let warm = project.errors(true);
    assert!(
        warm.iter()
            .any(|(file, line, _)| file == "m.c" && *line == 3),
        "warm after the shell's edit: {warm:?}\n{}",
        project.log()
    );
    assert_eq!(warm, project.errors(false), "warm vs cold");

    // Back, through Claude's own edit of the header; then the loop's Stop.
    shell(root, "sed -i 's/VAL 2/VAL 1/' cfg.h");
    assert!(project.errors(true).is_empty(), "{}", project.log());
    let started = project.cli(
        &[
            "loop",
            "start",
            "--check",
            "true",
            "--diagnostics",
            "project",
            "x",
        ],
        true,
    );
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    shell(root, "sed -i 's/VAL 1/VAL 2/' cfg.h");
    project.write_through_hook("cfg.h");
    let (decision, stderr) = project.stop();
    assert_eq!(
        decision["decision"],
        "block",
        "{decision}\n{stderr}\n{}",
        project.log()
    );
    let reason = decision["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("m.c:3"), "{reason}");
}

/// A folder link that leads out of the project (`lib -> ../shared/lib`):
/// a file changed in its target, by the shell, is seen warm, by pyright
/// and by TypeScript, in `check` and in the post-edit hook on the file
/// that imports it (engine attack E-1: a false "clean" as long as the
/// daemon lived, and a loop completed over the error).
#[test]
fn warm_sees_a_file_changed_under_a_folder_link_leading_out() {
    if util::require_tool("pyright-langserver", "the folder-link freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-folder-link");
    let outside = TempDir::new("fresh-folder-link-outside");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(outside.path(), "om.py", "def o() -> int:\n    return 1\n");
    std::os::unix::fs::symlink(outside.path(), root.join("lib")).unwrap();
    write(root, "c.py", "from lib.om import o\n\ny: int = o()\n");
    let report = project.write_through_hook("c.py");
    assert!(!report.contains("c.py:3:"), "{report}");
    assert!(project.errors(true).is_empty());

    shell(
        outside.path(),
        "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' om.py",
    );
    project.assert_warm_equals_cold_with_error("c.py", 3, "after the change");
    let report = project.write_through_hook("c.py");
    assert!(report.contains("c.py:3:"), "{report}");

    // And back: no stale error either.
    shell(
        outside.path(),
        "sed -i 's/-> str:/-> int:/; s/return \"s\"/return 1/' om.py",
    );
    assert!(project.errors(false).is_empty());
    assert!(project.errors(true).is_empty(), "{}", project.log());
}

/// The codes ruff reports in a warm (daemon) or cold `check --json`.
fn ruff_codes(project: &Project, daemon: bool) -> BTreeSet<(String, String)> {
    let output = project.cli(&["check", "--json", "--no-ast-grep"], daemon);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut codes = BTreeSet::new();
    for file in report["files"].as_array().unwrap() {
        for diag in file["diagnostics"].as_array().unwrap() {
            if diag["source"] == "Ruff" {
                codes.insert((
                    file["path"].as_str().unwrap().to_string(),
                    diag["code"].as_str().unwrap_or_default().to_string(),
                ));
            }
        }
    }
    codes
}

/// ruff reads the configuration closest above each file, the files it
/// `extend`s and the user's own: a change to any of them is seen by a warm
/// `check`, whose kept command-line result would otherwise outlive it
/// (engine attack E-3, E-7, E-25).
#[test]
fn a_warm_check_sees_nested_extended_and_user_ruff_configurations_change() {
    if util::require_tool("ruff", "the ruff configuration freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-ruff-configs");
    let root = project.path();
    write(
        root,
        ".lsp.json",
        r#"{"pyright": {"disabled": true}, "ty": {"disabled": true}, "basedpyright": {"disabled": true}, "pyrefly": {"disabled": true}}"#,
    );
    write(root, "sub/s.py", "import os\n");
    write(root, "sub/ruff.toml", "[lint]\nselect = [\"E\"]\n");
    write(root, "t.py", "import sys\n");
    write(root, "cfg/base.toml", "[lint]\nselect = [\"E\"]\n");
    // A chain, the second link single-quoted.
    write(root, "cfg/mid.toml", "extend = 'base.toml'\n");
    write(root, "ruff.toml", "extend = \"cfg/mid.toml\"\n");
    assert!(ruff_codes(&project, true).is_empty());
    assert!(ruff_codes(&project, true).is_empty());

    shell(
        root,
        "printf '[lint]\\nselect = [\"E\", \"F\"]\\n' > sub/ruff.toml",
    );
    let warm = ruff_codes(&project, true);
    assert_eq!(warm, ruff_codes(&project, false), "nested: warm vs cold");
    assert!(
        warm.contains(&("sub/s.py".into(), "F401".into())),
        "{warm:?}"
    );

    shell(
        root,
        "printf '[lint]\\nselect = [\"E\", \"F\"]\\n' > cfg/base.toml",
    );
    let warm = ruff_codes(&project, true);
    assert_eq!(warm, ruff_codes(&project, false), "extended: warm vs cold");
    assert!(warm.contains(&("t.py".into(), "F401".into())), "{warm:?}");
}

/// pyright reads a configuration its `pyrightconfig.json` `extends` and the
/// stubs under its `stubPath`: a change to either, by the shell, is seen
/// warm (engine attack E-2, E-11).
#[test]
fn pyright_warm_sees_an_extended_configuration_and_a_stub_path_change() {
    if util::require_tool("pyright-langserver", "the pyright extends/stubPath test").is_none() {
        return;
    }
    let project = Project::new("fresh-pyright-extends");
    let stubs = TempDir::new("fresh-pyright-stubs");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(stubs.path(), "extmod/__init__.pyi", "def e() -> int: ...\n");
    write(root, "cfg/base.json", r#"{"typeCheckingMode": "basic"}"#);
    write(
        root,
        "pyrightconfig.json",
        &json!({"extends": "./cfg/base.json", "stubPath": stubs.path()}).to_string(),
    );
    write(root, "a.py", "def f(x):\n    return x\n");
    write(root, "s.py", "from extmod import e\n\nx: int = e()\n");
    assert!(project.errors(true).is_empty(), "{}", project.log());

    shell(
        root,
        r#"printf '{"typeCheckingMode": "strict"}' > cfg/base.json"#,
    );
    let cold = project.errors(false);
    assert!(
        cold.iter().any(|(file, _, _)| file == "a.py"),
        "cold: {cold:?}"
    );
    assert_eq!(
        project.errors(true),
        cold,
        "extends: warm vs cold\n{}",
        project.log()
    );

    shell(
        root,
        r#"printf '{"typeCheckingMode": "basic"}' > cfg/base.json"#,
    );
    assert!(project.errors(true).is_empty());
    shell(
        stubs.path(),
        "sed -i 's/-> int/-> str/' extmod/__init__.pyi",
    );
    project.assert_warm_equals_cold_with_error("s.py", 3, "stubPath");
}

/// Global typings a `tsconfig.json` reaches through `typeRoots` or an
/// `include` entry outside the project: changed by the shell, seen warm
/// (engine attack E-12).
#[test]
fn typescript_warm_sees_type_roots_and_includes_outside_the_project_change() {
    if util::require_tool(
        "typescript-language-server",
        "the TypeScript typeRoots test",
    )
    .is_none()
    {
        return;
    }
    let Some(typescript) = crate::lsp_real::typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip("the TypeScript typeRoots test", "no global typescript@5");
        return;
    };
    let project = Project::new("fresh-ts-type-roots");
    let outside = TempDir::new("fresh-ts-type-roots-outside");
    let root = project.path();
    write(
        outside.path(),
        "types/gglob/index.d.ts",
        "declare function gg(): number;\n",
    );
    write(
        outside.path(),
        "shared/glob.d.ts",
        "declare function sh(): number;\n",
    );
    typescript_project(root, &typescript);
    write(
        root,
        "tsconfig.json",
        &json!({
            "compilerOptions": {"strict": true, "noEmit": true, "module": "esnext",
                "moduleResolution": "bundler", "target": "esnext",
                "typeRoots": [outside.path().join("types")], "types": ["gglob"]},
            "include": ["*.ts", outside.path().join("shared/*.d.ts")],
        })
        .to_string(),
    );
    write(
        root,
        "a.ts",
        "export const v: number = gg();\nexport const w: number = sh();\n",
    );
    assert!(project.errors(true).is_empty(), "{}", project.log());

    shell(
        outside.path(),
        "sed -i 's/number/string/' types/gglob/index.d.ts",
    );
    project.assert_warm_equals_cold_with_error("a.ts", 1, "typeRoots");

    shell(outside.path(), "sed -i 's/number/string/' shared/glob.d.ts");
    project.assert_warm_equals_cold_with_error("a.ts", 2, "include");

    // A file made in an included folder (attack AE-7).
    write(root, "b.ts", "export const z: number = made();\n");
    project.assert_warm_equals_cold_with_error("b.ts", 1, "not made yet");
    write(
        outside.path(),
        "shared/made.d.ts",
        "declare function made(): string;\n",
    );
    project.assert_warm_equals_cold_with_error("b.ts", 1, "made");
    let cold = project.errors(false);
    assert!(
        cold.iter()
            .any(|(file, _, code)| file == "b.ts" && code == "2322"),
        "{cold:?}"
    );
}

/// Sources outside the project a native build reads: a C include folder
/// named with `-I`, a Go module `replace`d by a local folder. Changed by
/// the shell, they are seen warm (engine attack E-21).
#[test]
fn warm_sees_c_include_folders_and_go_replacements_outside_the_project_change() {
    if util::require_tool("clangd", "the C include-folder freshness test").is_some() {
        let project = Project::new("fresh-c-include");
        let outside = TempDir::new("fresh-c-include-outside");
        let root = project.path();
        write(outside.path(), "x.h", "#define XVAL 1\n");
        write(
            root,
            "compile_flags.txt",
            &format!("-std=c11\n-I{}\n", outside.path().display()),
        );
        write(
            root,
            "m.c",
            "#include \"x.h\"\n#if XVAL == 2\n#error xboom\n#endif\nint main(void) { return 0; }\n",
        );
        assert!(project.errors(true).is_empty(), "{}", project.log());
        shell(outside.path(), "sed -i 's/XVAL 1/XVAL 2/' x.h");
        let warm = project.errors(true);
        assert!(
            warm.iter()
                .any(|(file, line, _)| file == "m.c" && *line == 3),
            "{warm:?}\n{}",
            project.log()
        );
        assert_eq!(warm, project.errors(false), "C: warm vs cold");
        // A header made in an include folder named first, shadowing the
        // one used so far (attack AE-9).
        let first = TempDir::new("fresh-c-include-first");
        write(
            root,
            "compile_flags.txt",
            &format!(
                "-std=c11\n-I{}\n-I{}\n",
                first.path().display(),
                outside.path().display()
            ),
        );
        shell(outside.path(), "sed -i 's/XVAL 2/XVAL 1/' x.h");
        assert!(project.errors(true).is_empty(), "{}", project.log());
        write(first.path(), "x.h", "#define XVAL 2\n");
        project.assert_warm_equals_cold_with_error("m.c", 3, "C: a header made");
    }
    if util::require_tool("gopls", "the Go replace freshness test").is_some() {
        let project = Project::new("fresh-go-replace");
        let outside = TempDir::new("fresh-go-replace-outside");
        let root = project.path();
        write(
            outside.path(),
            "go.mod",
            "module example.com/x\n\ngo 1.19\n",
        );
        write(
            outside.path(),
            "x.go",
            "package x\n\nfunc X() int { return 1 }\n",
        );
        write(
            root,
            "go.mod",
            &format!(
                "module example.com/g2\n\ngo 1.19\n\nrequire example.com/x v0.0.0\n\nreplace example.com/x => {}\n",
                outside.path().display()
            ),
        );
        write(
            root,
            "main.go",
            "package main\n\nimport \"example.com/x\"\n\nfunc main() {\n\tvar v int = x.X()\n\t_ = v\n}\n",
        );
        assert!(project.errors(true).is_empty(), "{}", project.log());
        shell(
            outside.path(),
            "sed -i 's/func X() int { return 1 }/func X() string { return \"\" }/' x.go",
        );
        let warm = project.errors(true);
        assert!(
            warm.iter()
                .any(|(file, line, _)| file == "main.go" && *line == 6),
            "{warm:?}\n{}",
            project.log()
        );
        assert_eq!(warm, project.errors(false), "Go: warm vs cold");
        // A file made in the replacement (attack AE-8).
        write(
            root,
            "main.go",
            "package main\n\nimport \"example.com/x\"\n\nfunc main() {\n\tvar v int = x.W\n\t_ = v\n}\n",
        );
        project.assert_warm_equals_cold_with_error("main.go", 6, "Go: W not there yet");
        write(outside.path(), "w.go", "package x\n\nconst W = \"s\"\n");
        let warm = project.errors(true);
        assert_eq!(warm, project.errors(false), "Go: a file made");
        write(outside.path(), "w.go", "package x\n\nconst W = 2\n");
        assert!(project.errors(true).is_empty(), "{}", project.log());
    }
    if util::require_tool("rust-analyzer", "the Cargo path dependency freshness test").is_some() {
        // A file made in a path dependency that declares it (attack AE-10).
        let project = Project::new("fresh-cargo-path");
        let outside = TempDir::new("fresh-cargo-path-dep");
        let root = project.path();
        write(
            outside.path(),
            "Cargo.toml",
            "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        );
        write(
            outside.path(),
            "src/lib.rs",
            "pub const V: i32 = 1;\npub mod extra;\n",
        );
        // `extra.rs` is generated later.
        write(
            root,
            "Cargo.toml",
            &format!(
                "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ndep = {{ path = \"{}\" }}\n",
                outside.path().display()
            ),
        );
        write(
            root,
            "src/main.rs",
            "fn main() {\n    let x: i32 = dep::V + dep::extra::W;\n    println!(\"{}\", x);\n}\n",
        );
        assert!(project.errors(true).is_empty(), "{}", project.log());
        write(
            outside.path(),
            "src/extra.rs",
            "pub const W: &str = \"s\";\n",
        );
        project.assert_warm_equals_cold_with_error("src/main.rs", 2, "Rust: a file made");
    }
}

/// Any C/C++ file a translation unit includes — an `.inc`, an included
/// `.c` (a unity build) — changed by the shell is seen by the first warm
/// check (re-attack RE-3, RE-4); an edit's own check of a `.c` file does
/// not restart clangd, but a later check of the files including it does.
#[test]
fn clangd_warm_sees_included_c_and_inc_files_change() {
    if util::require_tool("clangd", "the clangd include freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-clangd-includes");
    let root = project.path();
    write(root, "compile_flags.txt", "-std=c11\n");
    write(root, "table.inc", "#define V 1\n");
    write(root, "unit.c", "#define W 1\n");
    write(
        root,
        "m.c",
        "#include \"table.inc\"\n#include \"unit.c\"\n#if V == 2\n#error vboom\n#endif\n#if W == 2\n#error wboom\n#endif\nint main(void) { return 0; }\n",
    );
    assert!(project.errors(true).is_empty(), "{}", project.log());

    shell(root, "sed -i 's/V 1/V 2/' table.inc");
    let warm = project.errors(true);
    assert!(
        warm.iter().any(|(f, l, _)| f == "m.c" && *l == 4),
        "{warm:?}\n{}",
        project.log()
    );
    assert_eq!(warm, project.errors(false), ".inc: warm vs cold");
    shell(root, "sed -i 's/V 2/V 1/' table.inc");
    assert!(project.errors(true).is_empty(), "{}", project.log());

    // Claude edits unit.c: its own check keeps clangd; the project check
    // after it sees m.c's error.
    shell(root, "sed -i 's/W 1/W 2/' unit.c");
    project.write_through_hook("unit.c");
    let warm = project.errors(true);
    assert!(
        warm.iter().any(|(f, l, _)| f == "m.c" && *l == 7),
        "{warm:?}\n{}",
        project.log()
    );
    assert_eq!(warm, project.errors(false), "included .c: warm vs cold");
}

/// ty's kept command-line result is stamped with the files under a folder
/// link that leads out too: an edit there is seen by a warm `check`
/// (re-attack RE-12).
#[test]
fn ty_warm_sees_a_file_changed_under_a_folder_link_leading_out() {
    if util::require_tool("ty", "the ty folder-link freshness test").is_none() {
        return;
    }
    let project = Project::new("fresh-ty-folder-link");
    let outside = TempDir::new("fresh-ty-folder-link-outside");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "pyproject.toml", "[tool.ty]\n");
    write(outside.path(), "om.py", "def o() -> int:\n    return 1\n");
    std::os::unix::fs::symlink(outside.path(), root.join("lib")).unwrap();
    write(root, "c.py", "from lib.om import o\n\ny: int = o()\n");
    assert!(project.errors(true).is_empty(), "{}", project.log());
    assert!(project.errors(true).is_empty());
    shell(
        outside.path(),
        "sed -i 's/-> int:/-> str:/; s/return 1/return \"s\"/' om.py",
    );
    project.assert_warm_equals_cold_with_error("c.py", 3, "after the change");
}

/// ty reads the user's own configuration: a change to it restarts the
/// warm server, and `check` answers as a cold check (re-attack RE-7).
#[test]
fn ty_warm_sees_the_users_configuration_change() {
    if util::require_tool("ty", "the ty user-configuration test").is_none() {
        return;
    }
    let project = Project::new("fresh-ty-user-config");
    let config_home = TempDir::new("fresh-ty-user-config-home");
    let root = project.path();
    write(root, ".lsp.json", r#"{"ruff": {"disabled": true}}"#);
    write(root, "pyproject.toml", "[tool.ty]\n");
    write(root, "a.py", "x: int = \"s\"\n");
    write(
        config_home.path(),
        "ty/ty.toml",
        "[rules]\ninvalid-assignment = \"ignore\"\n",
    );
    let errors = |daemon: bool| {
        let mut command = util::command("ralph-hooks", root);
        if daemon {
            command.env_remove("RALPH_HOOKS_DAEMON");
        }
        let output = command
            .env("XDG_CONFIG_HOME", config_home.path())
            .args(["check", "--json", "--no-ast-grep"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["summary"]["errors"].as_u64().unwrap()
    };
    assert_eq!(errors(true), 0);
    // Until ty's server has checked the project: re-checks then ask it.
    let knows = || {
        let status = project.cli(&["daemon", "status", "--json"], true);
        let value: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
        value["status"]["servers"]
            .as_array()
            .is_some_and(|servers| servers.iter().any(|s| s["knows_project"] == true))
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !knows() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(knows(), "{}", project.log());
    assert_eq!(errors(true), 0);
    write(
        config_home.path(),
        "ty/ty.toml",
        "[rules]\ninvalid-assignment = \"error\"\n",
    );
    assert_eq!(errors(false), 1, "cold");
    assert_eq!(errors(true), 1, "warm\n{}", project.log());
    // And the post-edit hook, from the same warm daemon.
    let report = project.write_through_hook("a.py");
    assert!(report.contains("invalid-assignment"), "{report}");
}
