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

/// `ralph-hooks check --json --no-ast-grep` errors from `source`. Servers
/// start cold here, on a busy machine: the time per file is generous.
fn check_errors(root: &Path, source: &str) -> ErrorSet {
    write(
        root,
        ".claude/ralph-hooks.json",
        r#"{"diagnostics": {"timeout_ms": 60000}}"#,
    );
    let output = util::command("ralph-hooks", root)
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
        eprintln!("skipping the tsc parity test: no global typescript@5");
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
