//! Unused variables and imports: servers send
//! them as hints tagged `Unnecessary`; ralph-hooks reports them as warnings
//! by default (never blocking), configurable with `diagnostics.unused`.
//! Against the real typescript-language-server and pyright.

use serde_json::{Value, json};

use crate::lsp_real::{project, run_hook, typescript_with_tsserver, write, write_payload};
use crate::util;

/// A TypeScript project with the global typescript linked in, or `None`
/// (skipped, or a failure under RALPH_HOOKS_REQUIRE_SERVERS=1).
fn typescript_project(config: Value) -> Option<util::TempDir> {
    util::require_tool("typescript-language-server", "the unused-variable test")?;
    let Some(typescript) = typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the TypeScript unused-variable test",
            "no global typescript@5 with tsserver",
        );
        return None;
    };
    let dir = project(config);
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, dir.path().join("node_modules/typescript")).unwrap();
    write(
        dir.path(),
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}"#,
    );
    Some(dir)
}

const TS_UNUSED: &str =
    "export function main(): number {\n  const unusedVariable = 42;\n  return 1;\n}\n";

#[test]
fn typescript_unused_variable_is_a_warning() {
    let Some(dir) = typescript_project(json!({})) else {
        return;
    };
    let file = write(dir.path(), "src/index.ts", TS_UNUSED);
    let (context, output) = run_hook(dir.path(), &write_payload(&file, TS_UNUSED));
    assert!(
        context.contains(
            "src/index.ts:2:9 warning [typescript 6133] 'unusedVariable' is declared but its value is never read."
        ),
        "{context}"
    );
    assert!(output.get("decision").is_none(), "never blocking: {output}");
}

#[test]
fn typescript_unused_variable_level_is_configurable() {
    let Some(dir) = typescript_project(json!({"diagnostics": {"unused": "off"}})) else {
        return;
    };
    let file = write(dir.path(), "src/index.ts", TS_UNUSED);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, TS_UNUSED));
    // Off: as the server sent it, a hint, below the default minimum.
    assert!(context.contains("clean"), "{context}");
    assert!(!context.contains("unusedVariable"), "{context}");
}

/// The seed's own case: a top-level `const` alone in a file. In a script
/// (no import or export) TypeScript makes it a global, which may be used
/// anywhere, so nothing is reported; a module, by an export or by the
/// project's `moduleDetection: "force"`, gets the warning.
const TS_TOP_LEVEL: &str = "const unusedVariable = 42;\n";

#[test]
fn typescript_top_level_unused_constant_is_a_warning_in_a_module_only() {
    let Some(dir) = typescript_project(json!({})) else {
        return;
    };
    let warning =
        "warning [typescript 6133] 'unusedVariable' is declared but its value is never read.";
    let file = write(dir.path(), "src/script.ts", TS_TOP_LEVEL);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, TS_TOP_LEVEL));
    assert!(!context.contains(warning), "a script's global: {context}");
    let module = format!("{TS_TOP_LEVEL}export {{}};\n");
    let file = write(dir.path(), "src/module.ts", &module);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, &module));
    assert!(
        context.contains(&format!("src/module.ts:1:7 {warning}")),
        "{context}"
    );

    let Some(forced) = typescript_project(json!({})) else {
        return;
    };
    write(
        forced.path(),
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", "moduleDetection": "force"}, "include": ["src"]}"#,
    );
    let file = write(forced.path(), "src/index.ts", TS_TOP_LEVEL);
    let (context, _) = run_hook(forced.path(), &write_payload(&file, TS_TOP_LEVEL));
    assert!(
        context.contains(&format!("src/index.ts:1:7 {warning}")),
        "{context}"
    );
}

const PY_UNUSED: &str =
    "import os\n\n\ndef main() -> int:\n    unused_variable = 42\n    return 1\n";

#[test]
fn pyright_unused_variable_and_import_are_warnings() {
    if util::require_tool("pyright-langserver", "the unused-variable test").is_none() {
        return;
    }
    let dir = project(json!({}));
    let file = write(dir.path(), "app.py", PY_UNUSED);
    let (context, output) = run_hook(dir.path(), &write_payload(&file, PY_UNUSED));
    assert!(
        context.contains("app.py:1:8 warning [Pyright] \"os\" is not accessed"),
        "{context}"
    );
    assert!(
        context.contains("app.py:5:5 warning [Pyright] \"unused_variable\" is not accessed"),
        "{context}"
    );
    assert!(output.get("decision").is_none(), "never blocking: {output}");
}

#[test]
fn pyright_unused_at_info_level_hides_under_the_default_minimum() {
    if util::require_tool("pyright-langserver", "the unused-variable test").is_none() {
        return;
    }
    let dir = project(json!({"diagnostics": {"unused": "info", "min_severity": "info"}}));
    let file = write(dir.path(), "app.py", PY_UNUSED);
    let (context, _) = run_hook(dir.path(), &write_payload(&file, PY_UNUSED));
    assert!(
        context.contains("app.py:5:5 info [Pyright] \"unused_variable\" is not accessed"),
        "{context}"
    );
}
