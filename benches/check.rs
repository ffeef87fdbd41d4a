//! `ralph-hooks check` against the servers' own batch CLIs, side
//! by side in one run on the same generated trees:
//! - Python: `pyright --outputjson` vs `ralph-hooks check` in-process (no
//!   daemon), through a daemon started by the run (cold), and again (warm);
//! - TypeScript: `tsc --noEmit -p .` vs the same three;
//! - memory: peak RSS of the daemon and every server it runs during a warm
//!   check of a tree with Python, TypeScript, C, Rust and Go files (whichever
//!   servers are installed), against the seed's 500 MB.
//!
//! Targets: cold ≤ 1.5× the CLI, warm ≤ 0.5×.
//!
//! Run with `cargo bench --bench check`. `BENCH_FILES=N` sets the files per
//! tree (default 100); `BENCH_MEMORY_ONLY=1` runs only the memory part.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

fn temp_project(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ralph-bench-check-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join(".claude/ralph-hooks.json"),
        r#"{"diagnostics": {"timeout_ms": 60000}}"#,
    )
    .unwrap();
    dir
}

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `n` Python modules in packages of 10; every fifth has a type error and
/// imports its neighbour.
fn python_tree(root: &Path, n: usize) {
    write(root, "pyproject.toml", "[project]\nname = \"bench\"\n");
    for i in 0..n {
        let package = format!("pkg{}", i / 10);
        write(root, &format!("{package}/__init__.py"), "");
        let mut text = String::new();
        if i % 10 > 0 {
            text.push_str(&format!("from {package}.m{} import f{}\n\n", i - 1, i - 1));
        }
        text.push_str(&format!(
            "\ndef f{i}(x: int) -> int:\n    total = 0\n    for k in range(x):\n        total += k * {i}\n    return total\n\n\nclass C{i}:\n    def __init__(self, name: str) -> None:\n        self.name = name\n\n    def size(self) -> int:\n        return len(self.name)\n"
        ));
        if i % 5 == 0 {
            text.push_str(&format!("\n\nbroken{i}: str = f{i}(3)\n"));
        }
        write(root, &format!("{package}/m{i}.py"), &text);
    }
}

fn typescript_tree(root: &Path, n: usize, typescript: &Path) {
    write(
        root,
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs", "noEmit": true}, "include": ["src"]}"#,
    );
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    let _ = std::os::unix::fs::symlink(typescript, root.join("node_modules/typescript"));
    for i in 0..n {
        let mut text = String::new();
        if i > 0 {
            text.push_str(&format!("import {{ f{} }} from './m{}';\n\n", i - 1, i - 1));
        }
        text.push_str(&format!(
            "export function f{i}(x: number): number {{\n  let total = 0;\n  for (let k = 0; k < x; k++) {{\n    total += k * {i};\n  }}\n  return total;\n}}\n\nexport class C{i} {{\n  constructor(public name: string) {{}}\n  size(): number {{\n    return this.name.length;\n  }}\n}}\n"
        ));
        if i % 5 == 0 {
            text.push_str(&format!("\nexport const broken{i}: string = f{i}(3);\n"));
        }
        write(root, &format!("src/m{i}.ts"), &text);
    }
}

fn timed(command: &mut Command) -> (Duration, String) {
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("run");
    (
        started.elapsed(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn check(root: &Path, daemon: bool) -> (Duration, Value) {
    let mut command = Command::new(CLI);
    command
        .args(["check", "--json", "--no-ast-grep"])
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .env("RALPH_HOOKS_DAEMON", if daemon { "1" } else { "0" });
    let (elapsed, stdout) = timed(&mut command);
    (
        elapsed,
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
    )
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

fn daemon_rss_kib(root: &Path) -> Option<(u64, Vec<(String, u64)>)> {
    let output = Command::new(CLI)
        .args(["daemon", "status", "--json"])
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let reply: Value = serde_json::from_slice(&output.stdout).ok()?;
    let status = &reply["status"];
    let servers = status["servers"]
        .as_array()?
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("?").to_string(),
                s["rss_kib"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    Some((status["tree_rss_kib"].as_u64()?, servers))
}

fn errors(report: &Value) -> u64 {
    report["summary"]["errors"].as_u64().unwrap_or(0)
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn ratio(d: Duration, base: Duration) -> String {
    format!("{:.2}×", d.as_secs_f64() / base.as_secs_f64())
}

fn typescript_package() -> Option<PathBuf> {
    let output = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let typescript = root.join("typescript");
    typescript
        .join("lib/tsserver.js")
        .is_file()
        .then_some(typescript)
}

fn main() {
    let n: usize = std::env::var("BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    println!(
        "\n{n} files per tree, {} CPUs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!(
        "| tree | reference CLI | check, no daemon | check, daemon cold | check, daemon warm | errors (CLI / check) |"
    );
    println!("|---|---:|---:|---:|---:|---|");

    // BENCH_MEMORY_ONLY=1: only the memory part.
    let timing = std::env::var_os("BENCH_MEMORY_ONLY").is_none();
    if !timing {
    } else if which::which("pyright").is_ok() {
        let root = temp_project("py");
        python_tree(&root, n);
        let (cli, out) = timed(
            Command::new("pyright")
                .arg("--outputjson")
                .current_dir(&root),
        );
        let cli_errors = serde_json::from_str::<Value>(&out)
            .map(|v| v["summary"]["errorCount"].as_u64().unwrap_or(0))
            .unwrap_or(0);
        compare_row("Python, pyright --outputjson", &root, cli, cli_errors);
    } else {
        println!("| Python | pyright not installed | | | | |");
    }

    match typescript_package().filter(|_| timing) {
        Some(typescript) => {
            let root = temp_project("ts");
            typescript_tree(&root, n, &typescript);
            let (cli, out) = timed(
                Command::new("node")
                    .args(["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."])
                    .current_dir(&root),
            );
            let cli_errors = out.lines().filter(|l| l.contains("): error TS")).count();
            compare_row("TypeScript, tsc --noEmit -p", &root, cli, cli_errors as u64);
        }
        None => println!("| TypeScript | no global typescript@5 | | | | |"),
    }
    println!("\ntargets: daemon cold ≤ 1.5× the CLI, warm ≤ 0.5×");

    // Memory: every installed server at once.
    let root = temp_project("mixed");
    python_tree(&root, 5);
    if let Some(typescript) = typescript_package() {
        typescript_tree(&root, 5, &typescript);
    }
    write(
        &root,
        "c/main.c",
        "int main(void) { return undefined_c; }\n",
    );
    write(
        &root,
        "Cargo.toml",
        "[package]\nname = \"bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(&root, "src/main.rs", "fn main() { let x: u32 = \"no\"; }\n");
    write(&root, "go.mod", "module bench\n\ngo 1.21\n");
    write(
        &root,
        "main.go",
        "package main\n\nfunc main() { var x int = \"no\" }\n",
    );
    let _ = check(&root, true);
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done, root) = (Arc::clone(&peak), Arc::clone(&done), root.clone());
        std::thread::spawn(move || {
            let mut last = None;
            while !done.load(Ordering::SeqCst) {
                if let Some((tree, servers)) = daemon_rss_kib(&root) {
                    peak.fetch_max(tree, Ordering::SeqCst);
                    last = Some(servers);
                }
                std::thread::sleep(Duration::from_millis(300));
            }
            last
        })
    };
    let _ = check(&root, true);
    std::thread::sleep(Duration::from_millis(600));
    done.store(true, Ordering::SeqCst);
    let servers = sampler.join().unwrap().unwrap_or_default();
    stop_daemon(&root);
    let _ = std::fs::remove_dir_all(&root);
    println!("\nmemory during a warm check of a mixed tree (RSS):");
    println!("| what | RSS |");
    println!("|---|---:|");
    for (name, kib) in &servers {
        println!("| {name} | {:.0} MB |", *kib as f64 / 1024.0);
    }
    let peak = peak.load(Ordering::SeqCst);
    println!(
        "| daemon + {} servers, peak | {:.0} MB (seed: 500 MB; {}) |",
        servers.len(),
        peak as f64 / 1024.0,
        if peak < 500 * 1024 { "under" } else { "OVER" }
    );
}

/// One row beside the CLI's time: `check` in-process, then through the
/// daemon cold and warm; the tree is removed afterwards.
fn compare_row(label: &str, root: &Path, cli: Duration, cli_errors: u64) {
    let (in_process, _) = check(root, false);
    let (cold, _) = check(root, true);
    let (warm, report) = check(root, true);
    stop_daemon(root);
    println!(
        "| {label} | {} | {} ({}) | {} ({}) | {} ({}) | {cli_errors} / {} |",
        secs(cli),
        secs(in_process),
        ratio(in_process, cli),
        secs(cold),
        ratio(cold, cli),
        secs(warm),
        ratio(warm, cli),
        errors(&report)
    );
    let _ = std::fs::remove_dir_all(root);
}
