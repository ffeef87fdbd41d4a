//! The language servers' memory in the daemon (issue 30, seed 004
//! AC-PERF-002): the start options we give typescript-language-server and
//! rust-analyzer take effect, and the errors the checks report stay. Real
//! servers; a missing one skips its test with a printed reason, or fails it
//! under `RALPH_HOOKS_REQUIRE_SERVERS=1`. `cargo bench --bench memory`
//! prints the figures.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{self, TempDir};

/// `ralph-hooks check --json` through the project's daemon (started by it).
fn check_through_daemon(project: &Path) -> Value {
    let output = util::command("ralph-hooks", project)
        .env_remove("RALPH_HOOKS_DAEMON")
        .args(["check", "--json", "--no-ast-grep"])
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json: {e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn daemon_status(project: &Path) -> Value {
    let output = util::command("ralph-hooks", project)
        .env_remove("RALPH_HOOKS_DAEMON")
        .args(["daemon", "status", "--json"])
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    value["status"].clone()
}

fn stop_daemon(project: &Path) {
    let _ = util::command("ralph-hooks", project)
        .env_remove("RALPH_HOOKS_DAEMON")
        .args(["daemon", "stop"])
        .output();
}

/// Stops the project's daemon when the test ends, passed or failed.
struct DaemonGuard<'a>(&'a Path);

impl Drop for DaemonGuard<'_> {
    fn drop(&mut self) {
        stop_daemon(self.0);
    }
}

/// The server's entry in `daemon status`.
fn server<'s>(status: &'s Value, name: &str) -> &'s Value {
    status["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in the daemon: {status}"))
}

/// The command lines of `pid` and every process below it.
fn process_tree(pid: u32) -> Vec<String> {
    let mut parents = vec![pid];
    let mut lines = Vec::new();
    let mut index = 0;
    while index < parents.len() {
        let parent = parents[index];
        if let Ok(cmdline) = std::fs::read(format!("/proc/{parent}/cmdline")) {
            lines.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rfind(')')
                .and_then(|close| stat[close + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid == Some(parent) && child != parent {
                parents.push(child);
            }
        }
        index += 1;
    }
    lines
}

fn error_lines(report: &Value) -> Vec<String> {
    report["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|file| {
            file["diagnostics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["severity"] == "error")
                .map(move |d| {
                    format!(
                        "{}:{} {} {}",
                        file["path"].as_str().unwrap_or("?"),
                        d["line"],
                        d["source"].as_str().unwrap_or("?"),
                        d["message"].as_str().unwrap_or("?")
                    )
                })
        })
        .collect()
}

/// typescript-language-server runs one tsserver and no typings installer:
/// by default it starts a syntax-only tsserver beside the semantic one, and
/// the semantic one starts `typingsInstaller.js` (455 MB together on a
/// two-file project, against about 215 MB). The type error is still found.
#[test]
fn typescript_language_server_runs_one_tsserver_and_no_typings_installer() {
    if util::require_tool("typescript-language-server", "the tsserver memory test").is_none() {
        return;
    }
    let Some(typescript) = crate::lsp_real::typescript_with_tsserver() else {
        if util::servers_required() {
            panic!("no global typescript with lib/tsserver.js (npm install -g typescript@5)");
        }
        util::skip(
            "the tsserver memory test",
            "no global typescript@5 with tsserver",
        );
        return;
    };
    let dir = TempDir::new("memory-ts5");
    let _daemon = DaemonGuard(dir.path());
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, dir.path().join("node_modules/typescript")).unwrap();
    std::fs::write(
        dir.path().join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.ts"),
        "export const total: string = 1 + 2;\n",
    )
    .unwrap();
    let report = check_through_daemon(dir.path());
    let errors = error_lines(&report);
    assert!(
        errors.iter().any(|e| e.starts_with("main.ts:1 typescript")
            && e.contains("not assignable to type 'string'")),
        "{errors:?}"
    );
    let status = daemon_status(dir.path());
    let pid = server(&status, "typescript-language-server")["pid"]
        .as_u64()
        .expect("a running server") as u32;
    let tree = process_tree(pid);
    let tsservers = tree.iter().filter(|l| l.contains("tsserver.js")).count();
    let installers = tree
        .iter()
        .filter(|l| l.contains("typingsInstaller"))
        .count();
    assert_eq!((tsservers, installers), (1, 0), "{tree:#?}");
}

/// rust-analyzer does not load the standard library's sources (about 420 MB
/// of its ~480 MB on a one-file crate); the type error the hooks report is
/// rustc's, from the `cargo check` it runs, and is still there. The bound
/// is generous: with the sysroot loaded it is over 400 MB.
#[test]
fn rust_analyzer_leaves_the_standard_library_to_cargo_check() {
    let Some(program) = util::require_tool("rust-analyzer", "the rust-analyzer memory test") else {
        return;
    };
    let works = Command::new(&program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        if util::servers_required() {
            panic!("rust-analyzer is on PATH but does not run");
        }
        util::skip(
            "the rust-analyzer memory test",
            "rust-analyzer does not run",
        );
        return;
    }
    let dir = TempDir::new("memory-rust");
    let _daemon = DaemonGuard(dir.path());
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "use std::collections::HashMap;\n\nfn main() {\n    let counts: HashMap<String, usize> = HashMap::new();\n    let total: String = counts.len();\n    println!(\"{total}\");\n}\n",
    )
    .unwrap();
    let report = check_through_daemon(dir.path());
    let errors = error_lines(&report);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("src/main.rs:5 rustc") && e.contains("mismatched types")),
        "{errors:?}"
    );
    let status = daemon_status(dir.path());
    let rss_mb = server(&status, "rust-analyzer")["rss_kib"]
        .as_u64()
        .unwrap()
        / 1024;
    assert!(
        rss_mb < 250,
        "rust-analyzer holds {rss_mb} MB: the standard library was loaded"
    );
}
