//! What the restart of pyright and typescript-language-server costs when
//! files come or go on the disk (the daemon restarts them: told of a
//! created file through `workspace/didChangeWatchedFiles`, neither takes it
//! in), on code nobody here wrote:
//! - pyright on a copy of the running `python3`'s standard library (~580
//!   files, `BENCH_SIZE=small|whole|large`);
//! - typescript-language-server on npm's own sources (the globally
//!   installed `npm` package: `lib/` checked, its `node_modules/` resolved),
//!   as JavaScript under a `jsconfig.json`.
//!
//! Each row is the time of the post-edit hook's answer for one file
//! (an Edit appending a line), through the project's daemon:
//! - cold: the daemon stopped before;
//! - warm, nothing else changed;
//! - warm, after a file was created elsewhere in the project (the shell);
//! - warm, after that file was deleted.
//!
//! pyright runs twice: as built in (told of created and deleted files,
//! restarted only before a project-wide query) and with
//! `"createdOrDeleted": "restart"` in `.lsp.json` (restarted before the
//! next answer, as typescript-language-server is).
//!
//! The last column says how many server starts the daemon logged during
//! the row (a restart is one). Run with `cargo bench --bench restart`;
//! `BENCH_RUNS=N` (default 3) runs per row, medians;
//! `BENCH_SERVERS=pyright,typescript` picks the servers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "support/corpus.rs"]
mod corpus;

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");
const POST_TOOL: &str = env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic");

/// One project to measure: where it is, the file edited, how a new file
/// looks, and where one goes that the server's configuration leaves out.
struct Case {
    server: String,
    root: PathBuf,
    edited: PathBuf,
    created_dir: PathBuf,
    extension: &'static str,
    new_file: fn(usize) -> String,
    appended: fn(usize) -> String,
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let servers = std::env::var("BENCH_SERVERS").unwrap_or_else(|_| "pyright,typescript".into());
    println!(
        "\nload average before: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let mut cases = Vec::new();
    if servers.contains("pyright") {
        for restart in [false, true] {
            match python_case(restart) {
                Some(case) => cases.push(case),
                None => println!("pyright: skipped (pyright-langserver or python3 missing)"),
            }
        }
    }
    if servers.contains("typescript") {
        match npm_case() {
            Some(case) => cases.push(case),
            None => println!("typescript: skipped (typescript-language-server or npm missing)"),
        }
    }
    println!("\n| server, files | row | answer (median of {runs}) | server starts |");
    println!("|---|---|---:|---:|");
    for case in &cases {
        measure(case, runs);
        stop_daemon(&case.root);
        let _ = std::fs::remove_dir_all(&case.root);
    }
    println!(
        "\nload average after: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
}

fn measure(case: &Case, runs: usize) {
    let files = corpus::count_files(&case.root, case.extension.trim_start_matches('.'));
    let label = format!("{}, {files}", case.server);
    let mut edit = 0;
    let mut answer = |case: &Case| -> Duration {
        edit += 1;
        let mut text = std::fs::read_to_string(&case.edited).unwrap();
        text.push_str(&(case.appended)(edit));
        std::fs::write(&case.edited, text).unwrap();
        hook(case)
    };
    let row = |name: &str, before: &mut dyn FnMut(usize), answer: &mut dyn FnMut() -> Duration| {
        let starts_before = server_starts(&case.root);
        let mut times = Vec::new();
        for round in 0..runs {
            before(round);
            times.push(answer());
        }
        times.sort();
        println!(
            "| {label} | {name} | {:.2} s | {} |",
            times[times.len() / 2].as_secs_f64(),
            server_starts(&case.root) - starts_before
        );
    };
    let root = case.root.clone();
    row(
        "cold (daemon stopped)",
        &mut |_| stop_daemon(&root),
        &mut || answer(case),
    );
    // A warm first answer, so the rows below start warm.
    answer(case);
    row("warm, nothing else changed", &mut |_| {}, &mut || {
        answer(case)
    });
    let created =
        |dir: &Path, round: usize| dir.join(format!("bench_new_{round}{}", case.extension));
    row(
        "warm, after a file was created",
        &mut |round| {
            std::fs::create_dir_all(&case.created_dir).unwrap();
            std::fs::write(created(&case.created_dir, round), (case.new_file)(round)).unwrap()
        },
        &mut || answer(case),
    );
    row(
        "warm, after that file was deleted",
        &mut |round| std::fs::remove_file(created(&case.created_dir, round)).unwrap(),
        &mut || answer(case),
    );
}

/// The post-edit hook's answer for an Edit of the case's file: its time.
/// An answer that is not a real one (warming up, timed out) is said.
fn hook(case: &Case) -> Duration {
    let payload = json!({
        "session_id": "bench-restart",
        "hook_event_name": "PostToolUse",
        "cwd": case.root,
        "tool_name": "Edit",
        "tool_input": {"file_path": case.edited},
        "tool_response": {"filePath": case.edited},
    });
    let started = Instant::now();
    let mut child = Command::new(POST_TOOL)
        .current_dir(&case.root)
        .env("CLAUDE_PROJECT_DIR", &case.root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the post-tool hook runs");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(payload.to_string().as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let context = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    if context.contains("warming up") || context.contains("inconclusive") {
        eprintln!("warning: not a real answer: {context}");
    }
    took
}

/// Server starts the daemon logged so far (its log says so at each start).
fn server_starts(root: &Path) -> usize {
    std::fs::read_to_string(root.join(".claude/orchestrator/daemon/daemon.log"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("started") && line.contains("pid"))
        .count()
}

fn stop_daemon(root: &Path) {
    let _ = Command::new(CLI)
        .args(["daemon", "stop"])
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn hooks_config(root: &Path) {
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(
        root.join(".claude/ralph-hooks.json"),
        json!({
            "diagnostics": {"timeout_ms": 600_000, "warmup_wait_ms": 600_000, "ast_grep": false},
            "daemon": {"start_timeout_ms": 60_000},
        })
        .to_string(),
    )
    .unwrap();
}

fn temp_root(label: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!(
        "ralph-bench-restart-{label}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// pyright on the standard library; `restart`: restarted whenever files
/// come or go (what it was before it took them in when told).
fn python_case(restart: bool) -> Option<Case> {
    which::which("pyright-langserver").ok()?;
    let stdlib = corpus::stdlib()?;
    let size = std::env::var("BENCH_SIZE").unwrap_or_else(|_| "whole".into());
    let root = temp_root(if restart { "py-restart" } else { "py" });
    corpus::python_corpus(&stdlib, &size, ("pyrightconfig.json", "{}"), &root);
    // pyright alone: ruff would add its own (constant) answer to every row.
    let servers = if restart {
        json!({"ruff": {"disabled": true}, "pyright": {"createdOrDeleted": "restart"}})
    } else {
        json!({"ruff": {"disabled": true}})
    };
    std::fs::write(root.join(".lsp.json"), servers.to_string()).unwrap();
    hooks_config(&root);
    Some(Case {
        server: if restart {
            "pyright, restarted when files come or go".into()
        } else {
            "pyright (told; restarted only for queries)".into()
        },
        edited: root.join("json/decoder.py"),
        created_dir: root.join("json"),
        extension: ".py",
        new_file: |n| format!("def made_{n}() -> int:\n    return {n}\n"),
        appended: |n| format!("\nedited_{n}: int = {n}\n"),
        root,
    })
}

fn npm_case() -> Option<Case> {
    which::which("typescript-language-server").ok()?;
    let output = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let npm = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("npm");
    if !npm.join("lib").is_dir() {
        return None;
    }
    let root = temp_root("npm");
    let copied = Command::new("cp")
        .args(["-r", "--"])
        .arg(npm.join("lib"))
        .arg(npm.join("node_modules"))
        .arg(npm.join("package.json"))
        .arg(&root)
        .status()
        .ok()?;
    if !copied.success() {
        return None;
    }
    std::fs::write(
        root.join("jsconfig.json"),
        r#"{"compilerOptions": {"allowJs": true, "checkJs": true, "module": "commonjs", "target": "es2022", "noEmit": true}, "include": ["lib"]}"#,
    )
    .unwrap();
    hooks_config(&root);
    Some(Case {
        server: "typescript-language-server (restarted when files come or go)".into(),
        edited: root.join("lib/npm.js"),
        created_dir: root.join("lib/utils"),
        extension: ".js",
        new_file: |n| format!("module.exports = {{ made{n}: () => {n} }}\n"),
        appended: |n| format!("\n// edited {n}\n"),
        root,
    })
}
