//! `ralph-hooks check` agrees with the servers' own batch CLIs (issue 11):
//! on the same tree, the set of (file, line, code) errors it reports equals
//! `pyright --outputjson`'s, and `tsc --noEmit -p`'s for a TypeScript
//! project. Skipped (or failed under RALPH_HOOKS_REQUIRE_SERVERS=1) when a
//! tool is missing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::lsp_real::typescript_with_tsserver;
use crate::util::{self, TempDir};

type ErrorSet = BTreeSet<(String, u64, String)>;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `pyright --outputjson`'s errors in `root`.
fn pyright_errors(pyright: &Path, root: &Path) -> ErrorSet {
    let output = Command::new(pyright)
        .arg("--outputjson")
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut expected = ErrorSet::new();
    for diag in cli["generalDiagnostics"].as_array().unwrap() {
        if diag["severity"] != "error" {
            continue;
        }
        let file = Path::new(diag["file"].as_str().unwrap());
        let relative = file
            .strip_prefix(root)
            .or_else(|_| file.strip_prefix(root.canonicalize().unwrap()))
            .unwrap();
        expected.insert((
            relative.to_string_lossy().into_owned(),
            diag["range"]["start"]["line"].as_u64().unwrap() + 1,
            diag["rule"].as_str().unwrap_or_default().to_string(),
        ));
    }
    expected
}

/// `ralph-hooks check --json --no-ast-grep` errors from `source`, in its
/// own process. Servers start cold here, on a busy machine: the time per
/// file is generous.
fn check_errors(root: &Path, source: &str) -> ErrorSet {
    check_errors_with(root, source, false)
}

/// The same through the project's daemon (started when none runs).
fn daemon_check_errors(root: &Path, source: &str) -> ErrorSet {
    check_errors_with(root, source, true)
}

fn check_errors_with(root: &Path, source: &str, daemon: bool) -> ErrorSet {
    write(
        root,
        ".claude/ralph-hooks.json",
        r#"{"diagnostics": {"timeout_ms": 60000}}"#,
    );
    let mut command = util::command("ralph-hooks", root);
    if daemon {
        command.env_remove("RALPH_HOOKS_DAEMON");
    }
    let output = command
        .args(["check", "--json", "--no-ast-grep"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
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
            if diag["severity"] == "error" && diag["source"] == source {
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

const PYTHON_FILES: &[(&str, &str)] = &[
    (
        "pkg/models.py",
        "class User:\n    def __init__(self, name: str) -> None:\n        self.name = name\n\n    def greet(self) -> str:\n        return 'hi ' + self.name\n\n\ndef make(count: int) -> list[User]:\n    return [User(str(i)) for i in range(count)]\n",
    ),
    (
        "pkg/service.py",
        "from pkg.models import User, make\n\n\ndef first_name(users: list[User]) -> int:\n    return users[0].name\n\n\ndef run() -> None:\n    users = make('three')\n    users[0].nickname\n    print(undefined_thing)\n",
    ),
    (
        "app.py",
        "from pkg.service import run\nimport not_a_module\n\nrun(1)\nvalue: str = 42\n",
    ),
    ("clean.py", "def ok(x: int) -> int:\n    return x + 1\n"),
];

#[test]
fn check_errors_equal_pyright_outputjson() {
    let Some(pyright) = util::require_tool("pyright", "the pyright parity test") else {
        return;
    };
    util::require_tool("pyright-langserver", "the pyright parity test");
    let dir = TempDir::new("parity-py");
    let root = dir.path();
    write(root, "pyproject.toml", "[project]\nname = \"parity\"\n");
    write(root, "pkg/__init__.py", "");
    for (path, text) in PYTHON_FILES {
        write(root, path, text);
    }
    let expected = pyright_errors(&pyright, root);
    assert!(
        expected.len() >= 6,
        "the fixture should have errors: {expected:?}"
    );
    assert_eq!(check_errors(root, "Pyright"), expected);
}

const TS_FILES: &[(&str, &str)] = &[
    (
        "src/model.ts",
        "export interface User {\n  name: string;\n  age: number;\n}\n\nexport function make(name: string): User {\n  return { name, age: '3' };\n}\n",
    ),
    (
        "src/service.ts",
        "import { make, User } from './model';\n\nexport function older(user: User): User {\n  return { ...user, age: user.age + 1 };\n}\n\nexport function run(): string {\n  const u = make(42);\n  return u.nickname;\n}\n",
    ),
    (
        "src/main.ts",
        "import { run } from './service';\nimport { missing } from './nowhere';\n\nconst count: number = run();\nconsole.log(count, missing, notDefined);\n",
    ),
    (
        "src/clean.ts",
        "export const ok = (x: number): number => x + 1;\n",
    ),
];

#[test]
fn check_errors_equal_tsc_noemit() {
    if util::require_tool("typescript-language-server", "the tsc parity test").is_none() {
        return;
    }
    let Some(typescript) = typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the tsc parity test",
            "no global typescript@5 with tsserver",
        );
        return;
    };
    let dir = TempDir::new("parity-ts");
    let root = dir.path();
    write(
        root,
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", "noEmit": true}, "include": ["src"]}"#,
    );
    for (path, text) in TS_FILES {
        write(root, path, text);
    }
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, root.join("node_modules/typescript")).unwrap();
    // The same compiler the language server uses.
    let output = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut expected = ErrorSet::new();
    // src/main.ts(4,7): error TS2322: Type 'string' is not assignable ...
    for line in text.lines() {
        let Some((location, rest)) = line.split_once("): error TS") else {
            continue;
        };
        let Some((path, position)) = location.split_once('(') else {
            continue;
        };
        let line_number: u64 = position.split(',').next().unwrap().parse().unwrap();
        let code = rest.split(':').next().unwrap().to_string();
        expected.insert((path.to_string(), line_number, code));
    }
    assert!(
        expected.len() >= 5,
        "the fixture should have errors: {text}"
    );
    assert_eq!(check_errors(root, "typescript"), expected);
}

// Real code nobody here wrote: a few packages of the running Python's
// standard library, and the sources of the rxjs npm package (fetched by
// `.ci/install-servers.sh` into the test cache; tests never go online).

/// Packages of the standard library copied into the parity projects: about
/// forty files with hundreds of real errors for every checker.
const STDLIB_PACKAGES: &[&str] = &["json", "http", "email", "logging"];

/// The standard library of the `python3` on PATH.
fn stdlib() -> Option<std::path::PathBuf> {
    let output = Command::new("python3")
        .args([
            "-c",
            "import json, os; print(os.path.dirname(os.path.dirname(json.__file__)))",
        ])
        .output()
        .ok()?;
    let path = std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    path.join("json/__init__.py").is_file().then_some(path)
}

/// A project holding [`STDLIB_PACKAGES`] and `config` (the file that makes
/// a checker the project's choice).
fn stdlib_project(label: &str, config: (&str, &str)) -> Option<TempDir> {
    let Some(source) = stdlib() else {
        if util::servers_required() {
            panic!("no python3 standard library found");
        }
        util::skip("a pyright parity test", "no python3 standard library found");
        return None;
    };
    let dir = TempDir::new(label);
    for package in STDLIB_PACKAGES {
        copy_python(&source.join(package), &dir.path().join(package));
    }
    write(dir.path(), config.0, config.1);
    Some(dir)
}

fn copy_python(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if path.is_dir() {
            if name != "__pycache__" && name != "tests" {
                copy_python(&path, &to.join(name));
            }
        } else if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(&path, to.join(name)).unwrap();
        }
    }
}

/// `(file, line, code)` of every error `path:line:col: error[code]` line.
fn concise_errors(text: &str) -> ErrorSet {
    let mut errors = ErrorSet::new();
    for line in text.lines() {
        let Some((location, rest)) = line.split_once(": error[") else {
            continue;
        };
        let mut parts = location.rsplitn(3, ':');
        let (Some(_column), Some(line_number), Some(path)) =
            (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let code = rest.split(']').next().unwrap_or_default().to_string();
        errors.insert((path.to_string(), line_number.parse().unwrap(), code));
    }
    errors
}

#[test]
fn check_errors_equal_ty_check_on_the_standard_library() {
    let Some(ty) = util::require_tool("ty", "the ty parity test") else {
        return;
    };
    let Some(dir) = stdlib_project("parity-ty", ("ty.toml", "")) else {
        return;
    };
    let output = Command::new(ty)
        .args(["check", "--output-format", "concise"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let expected = concise_errors(&String::from_utf8_lossy(&output.stdout));
    assert!(expected.len() > 50, "real errors expected: {expected:?}");
    assert_eq!(check_errors(dir.path(), "ty"), expected);
}

/// `ty check`'s errors in `root`.
fn ty_check_errors(ty: &Path, root: &Path) -> ErrorSet {
    let output = Command::new(ty)
        .args(["check", "--output-format", "concise"])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    concise_errors(&String::from_utf8_lossy(&output.stdout))
}

/// ty's first project check runs `ty check`; then its server checks the
/// whole project in the daemon, and the checks after changes ask it. Its
/// answers must stay those of `ty check` through edits, a new file, a
/// deleted module that others import and its return (the server resolves
/// imports from the disk: it is told of files created and deleted), and a
/// changed configuration (the command line again).
#[test]
fn after_changes_the_daemons_ty_server_answers_as_ty_check_does() {
    let Some(ty) = util::require_tool("ty", "the ty parity test") else {
        return;
    };
    let Some(dir) = stdlib_project("parity-ty-warm", ("ty.toml", "")) else {
        return;
    };
    let root = dir.path();
    let daemon_cli = |args: &[&str]| {
        let mut command = util::command("ralph-hooks", root);
        command.env_remove("RALPH_HOOKS_DAEMON");
        command.args(args).stdin(Stdio::null()).output().unwrap()
    };
    let log = || {
        std::fs::read_to_string(root.join(".claude/orchestrator/daemon/daemon.log"))
            .unwrap_or_default()
    };
    let asked_the_server = || log().matches("asking its server").count();
    let same = |ours: ErrorSet, expected: &ErrorSet, when: &str| {
        let only_ours: Vec<_> = ours.difference(expected).collect();
        let only_ty: Vec<_> = expected.difference(&ours).collect();
        assert!(
            only_ours.is_empty() && only_ty.is_empty(),
            "{when}: only ours {only_ours:?}, only ty check's {only_ty:?}"
        );
    };

    let expected = ty_check_errors(&ty, root);
    assert!(expected.len() > 50, "real errors expected: {expected:?}");
    same(daemon_check_errors(root, "ty"), &expected, "cold, ty check");
    assert_eq!(asked_the_server(), 0, "{}", log());
    let knows_project = || {
        let output = daemon_cli(&["daemon", "status", "--json"]);
        let status: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        status["status"]["servers"]
            .as_array()
            .is_some_and(|servers| servers.iter().any(|s| s["knows_project"] == true))
    };
    let started = std::time::Instant::now();
    while !knows_project() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(180),
            "ty's server never finished its check of the whole project:\n{}",
            log()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // An edit, a new file importing a module, that module deleted.
    let tool = root.join("json/tool.py");
    let mut text = std::fs::read_to_string(&tool).unwrap();
    text.push_str("\nbroken: int = \"text\"\n");
    std::fs::write(&tool, text).unwrap();
    write(
        root,
        "newmod.py",
        "from json import scanner\nfrom json.decoder import JSONDecodeError\nwrong: str = 1\n",
    );
    let scanner = std::fs::read(root.join("json/scanner.py")).unwrap();
    std::fs::remove_file(root.join("json/scanner.py")).unwrap();
    let expected = ty_check_errors(&ty, root);
    assert!(expected.iter().any(|(path, _, _)| path == "newmod.py"));
    same(daemon_check_errors(root, "ty"), &expected, "after changes");
    assert_eq!(asked_the_server(), 1, "{}", log());

    // The module comes back; the new file goes.
    std::fs::write(root.join("json/scanner.py"), scanner).unwrap();
    std::fs::remove_file(root.join("newmod.py")).unwrap();
    let expected = ty_check_errors(&ty, root);
    same(
        daemon_check_errors(root, "ty"),
        &expected,
        "module restored",
    );
    assert_eq!(asked_the_server(), 2, "{}", log());

    // Another configuration: the command line checks again.
    write(
        root,
        "ty.toml",
        "[rules]\nunresolved-attribute = \"ignore\"\n",
    );
    let expected = ty_check_errors(&ty, root);
    same(
        daemon_check_errors(root, "ty"),
        &expected,
        "configuration changed",
    );
    assert_eq!(asked_the_server(), 2, "{}", log());
    let _ = daemon_cli(&["daemon", "stop"]);
}

#[test]
fn check_errors_equal_pyrefly_check_on_the_standard_library() {
    let Some(pyrefly) = util::require_tool("pyrefly", "the pyrefly parity test") else {
        return;
    };
    let Some(dir) = stdlib_project("parity-pyrefly", ("pyrefly.toml", "")) else {
        return;
    };
    let output = Command::new(pyrefly)
        .args(["check", "--output-format", "json"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut expected = ErrorSet::new();
    for error in cli["errors"].as_array().unwrap() {
        if error["severity"] == "error" {
            expected.insert((
                error["path"].as_str().unwrap().to_string(),
                error["line"].as_u64().unwrap(),
                error["name"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert!(expected.len() > 50, "real errors expected: {expected:?}");
    assert_eq!(check_errors(dir.path(), "Pyrefly"), expected);
}

#[test]
fn check_errors_equal_pyright_on_the_standard_library() {
    let Some(pyright) = util::require_tool("pyright", "the pyright parity test") else {
        return;
    };
    util::require_tool("pyright-langserver", "the pyright parity test");
    let Some(dir) = stdlib_project("parity-pyright", ("pyrightconfig.json", "{}")) else {
        return;
    };
    let root = dir.path();
    let expected = pyright_errors(&pyright, root);
    assert!(expected.len() > 50, "real errors expected: {expected:?}");
    assert_eq!(check_errors(root, "Pyright"), expected);
}

/// The test cache `.ci/install-servers.sh` fills.
fn test_cache() -> std::path::PathBuf {
    std::env::var_os("RALPH_HOOKS_TEST_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ralph-hooks")
        })
}

/// The rxjs 7.8.1 sources with a tsconfig both TypeScript 5 and 7 accept,
/// and `typescript` (a package folder) as the project's own TypeScript.
fn rxjs_project(label: &str, typescript: &Path) -> Option<TempDir> {
    let sources = test_cache().join("corpus/rxjs-7.8.1/src");
    if !sources.join("index.ts").is_file() {
        if util::servers_required() {
            panic!(
                "no rxjs sources in {} (run .ci/install-servers.sh)",
                sources.display()
            );
        }
        util::skip(
            "a TypeScript parity test",
            "no rxjs sources (run .ci/install-servers.sh)",
        );
        return None;
    }
    let dir = TempDir::new(label);
    util::copy_tree(&sources, &dir.path().join("src"));
    // rxjs's own tsconfig, with what TypeScript 7 removed replaced.
    write(
        dir.path(),
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noImplicitReturns": true, "moduleResolution": "bundler",
            "module": "esnext", "target": "esnext", "lib": ["esnext", "dom"], "noEmit": true,
            "stripInternal": true, "preserveConstEnums": true,
            "paths": {"rxjs": ["./src/index"], "rxjs/operators": ["./src/operators/index"],
                      "rxjs/testing": ["./src/testing/index"], "rxjs/ajax": ["./src/ajax/index"],
                      "rxjs/webSocket": ["./src/webSocket/index"], "rxjs/fetch": ["./src/fetch/index"],
                      "rxjs/internal/*": ["./src/internal/*"]}},
            "include": ["src/**/*.ts"]}"#,
    );
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::os::unix::fs::symlink(typescript, dir.path().join("node_modules/typescript")).unwrap();
    // rxjs itself is nearly clean: a few errors of our own, across files
    // that import each other, so both sides have something to find.
    for (file, line) in [
        (
            "src/internal/Observable.ts",
            "export const brokenCount: number = 'three';\n",
        ),
        (
            "src/internal/Subject.ts",
            "export const brokenName: string = brokenCount;\n",
        ),
        (
            "src/internal/util/pipe.ts",
            "export function broken(): number { return notDefined; }\n",
        ),
    ] {
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        if file.ends_with("Subject.ts") {
            text.insert_str(0, "import { brokenCount } from './Observable';\n");
        }
        text.push_str(line);
        std::fs::write(&path, text).unwrap();
    }
    Some(dir)
}

/// `tsc --noEmit -p .` of the project's own TypeScript: its errors as
/// `(file, line, code)`.
fn tsc_errors(root: &Path) -> ErrorSet {
    let output = Command::new("node")
        .args([
            "node_modules/typescript/bin/tsc",
            "--noEmit",
            "-p",
            ".",
            "--pretty",
            "false",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut expected = ErrorSet::new();
    for line in text.lines() {
        let Some((location, rest)) = line.split_once("): error TS") else {
            continue;
        };
        let Some((path, position)) = location.split_once('(') else {
            continue;
        };
        let line_number: u64 = position.split(',').next().unwrap().parse().unwrap();
        let code = rest.split(':').next().unwrap().to_string();
        expected.insert((path.to_string(), line_number, code));
    }
    expected
}

#[test]
fn check_errors_equal_typescript_7_tsc_on_rxjs() {
    let typescript = test_cache().join("typescript7/node_modules/typescript");
    if !typescript.join("package.json").is_file() {
        if util::servers_required() {
            panic!(
                "no TypeScript 7 in {} (run .ci/install-servers.sh)",
                typescript.display()
            );
        }
        util::skip(
            "the TypeScript 7 parity test",
            "no TypeScript 7 (run .ci/install-servers.sh)",
        );
        return;
    }
    let Some(dir) = rxjs_project("parity-ts7", &typescript) else {
        return;
    };
    let expected = tsc_errors(dir.path());
    assert!(expected.len() >= 3, "{expected:?}");
    let ours = check_errors(dir.path(), "ts");
    assert_eq!(ours, expected);
    // The report says which server and why.
    let output = util::command("ralph-hooks", dir.path())
        .args(["check", "--json", "--no-ast-grep", "src/index.ts"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"][0]["server"], "tsgo", "{report}");
    assert!(
        report["files"][0]["server_reason"]
            .as_str()
            .unwrap()
            .contains("the project's TypeScript is 7."),
        "{report}"
    );
}

#[test]
fn check_errors_equal_typescript_5_tsc_on_rxjs() {
    if util::require_tool("typescript-language-server", "the TypeScript 5 parity test").is_none() {
        return;
    }
    let Some(typescript) = typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        return;
    };
    let Some(dir) = rxjs_project("parity-ts5", &typescript) else {
        return;
    };
    let expected = tsc_errors(dir.path());
    assert!(expected.len() >= 3, "{expected:?}");
    assert_eq!(check_errors(dir.path(), "typescript"), expected);
}
