//! The project engine against the checkers' own command lines, side by side
//! in one run, on real code nobody here wrote:
//! - Python: the running `python3`'s standard library at three sizes (small:
//!   nine packages, ~140 files; whole: every module but the tests and the
//!   GUI and 2to3 ones, ~565; large: everything, tests included, ~1,800),
//!   checked by ty, pyrefly and pyright, each chosen by the project's own
//!   configuration file;
//! - TypeScript: the sources of the rxjs 7.8.1 npm package (251 files),
//!   with the project's TypeScript 7 (its own server) and TypeScript 5
//!   (typescript-language-server);
//!
//! For each: the checker's CLI; `ralph-hooks check` cold in its own process
//! (`RALPH_HOOKS_DAEMON=0`, without and with the ast-grep rules), cold
//! through a fresh daemon, warm (nothing changed), and warm after one file
//! changed; and whether the (file, line) error sets are the same. Then: TS 7
//! on a fresh project's first edit, a goal-only loop's first feedback on
//! ~700 files, and five language servers at once against 500 MB.
//!
//! Corpora: the standard library of `python3` on PATH; rxjs and TypeScript 7
//! from the test cache `.ci/install-servers.sh` fills
//! (`~/.cache/ralph-hooks`, or `RALPH_HOOKS_TEST_CACHE`).
//!
//! Run with `cargo bench --bench engine`. `BENCH_RUNS=N` (default 3) sets
//! the runs per cell (medians); `BENCH_ONLY=ty,pyrefly,pyright,ts7,ts5,
//! extras` picks rows; `BENCH_SIZES=small,whole,large` picks corpora.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "support/corpus.rs"]
mod corpus;
use corpus::{copy_py, count_files, stdlib};

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");
const POST_TOOL: &str = env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic");

type Lines = BTreeSet<(String, u64)>;

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let only: Option<Vec<String>> = std::env::var("BENCH_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let wanted = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    let sizes: Vec<String> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "small,whole,large".into())
        .split(',')
        .map(str::to_string)
        .collect();
    println!(
        "ralph-hooks engine benchmark ({} runs per cell, medians; {} cores; load {})",
        runs,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    println!();
    println!(
        "| checker | corpus | files | its CLI | cold, own process, no ast-grep | cold, own process | cold, fresh daemon | warm | warm, 1 file changed | cold ÷ CLI | warm ÷ CLI | error lines: ours / CLI, same? |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let stdlib = stdlib();
    for size in &sizes {
        let Some(stdlib) = &stdlib else {
            println!("(no python3 standard library: Python rows skipped)");
            break;
        };
        for (name, config, cli) in [
            ("ty", ("ty.toml", ""), PythonCli::Ty),
            ("pyrefly", ("pyrefly.toml", ""), PythonCli::Pyrefly),
            ("pyright", ("pyrightconfig.json", "{}"), PythonCli::Pyright),
        ] {
            if !wanted(name) || which(cli.program()).is_none() {
                continue;
            }
            // pyright takes minutes on the largest tree: its row there
            // runs once.
            let runs = if name == "pyright" && size != "small" {
                1
            } else {
                runs
            };
            let root = python_corpus(stdlib, size, config);
            let files = count_files(&root, "py");
            let (cli_time, cli_lines) = median_of(runs, || cli.run(&root));
            row(name, size, files, &root, cli_time, &cli_lines, runs, "py");
            let _ = std::fs::remove_dir_all(&root);
        }
    }
    let cache = test_cache();
    let rxjs = cache.join("corpus/rxjs-7.8.1/src");
    for (name, typescript) in [
        ("ts7", cache.join("typescript7/node_modules/typescript")),
        ("ts5", global_typescript().unwrap_or_default()),
    ] {
        if !wanted(name) {
            continue;
        }
        if !rxjs.join("index.ts").is_file() || !typescript.join("package.json").is_file() {
            println!("(no rxjs sources or no {name}: run .ci/install-servers.sh)");
            continue;
        }
        let root = rxjs_corpus(&rxjs, &typescript, name);
        let files = count_files(&root, "ts");
        let (cli_time, cli_lines) = median_of(runs, || tsc(&root));
        row(
            name,
            "rxjs 7.8.1 src",
            files,
            &root,
            cli_time,
            &cli_lines,
            runs,
            "ts",
        );
        let _ = std::fs::remove_dir_all(&root);
    }
    if wanted("extras") {
        if let Some(stdlib) = &stdlib {
            goal_loop_first_feedback(stdlib);
        }
        ts7_first_edit(&cache);
        five_servers(&cache);
    }
    println!();
    println!(
        "Targets: cold ≤ 1.2× the checker's own CLI at every size; warm ≤ 0.05×; the same error lines. ast-grep's rules are work the CLIs do not do: the no-ast-grep column is the like-for-like one."
    );
}

#[allow(clippy::too_many_arguments)]
fn row(
    name: &str,
    corpus: &str,
    files: usize,
    root: &Path,
    cli_time: Duration,
    cli_lines: &Lines,
    runs: usize,
    extension: &str,
) {
    let (plain, ours_lines) = median_of(runs, || {
        stop_daemon(root);
        check(root, false, false)
    });
    let (with_rules, _) = median_of(runs, || {
        stop_daemon(root);
        check(root, false, true)
    });
    let (fresh, _) = median_of(runs, || {
        stop_daemon(root);
        check(root, true, true)
    });
    // The daemon of the last fresh run is warm now; what it does in the
    // background after a first check (ty's server checking the whole
    // project, so that checks after changes can ask it) ends first, as it
    // does between two Stops of a loop.
    let background = daemon_background_work(root);
    let (warm, _) = median_of(runs.max(3), || check(root, true, true));
    let changed_file = first_file(root, extension);
    let (changed, _) = median_of(runs.max(3), || {
        append(
            &changed_file,
            if extension == "py" {
                "\n# edited\n"
            } else {
                "\n// edited\n"
            },
        );
        check(root, true, true)
    });
    stop_daemon(root);
    let same = if ours_lines == *cli_lines {
        "yes"
    } else {
        "NO"
    };
    println!(
        "| {name} | {corpus} | {files} | {} | {} | {} | {} | {} | {} | {:.2}× | {:.3}× | {} / {}, {same} |",
        secs(cli_time),
        secs(plain),
        secs(with_rules),
        secs(fresh),
        secs(warm),
        secs(changed),
        plain.as_secs_f64() / cli_time.as_secs_f64(),
        warm.as_secs_f64() / cli_time.as_secs_f64(),
        ours_lines.len(),
        cli_lines.len()
    );
    if let Some(took) = background {
        println!(
            "|  | (its server's background check of the whole project, after the first: {}) | | | | | | | | | | |",
            secs(took)
        );
    }
    if same == "NO" {
        let only_ours: Vec<_> = ours_lines.difference(cli_lines).take(5).collect();
        let only_cli: Vec<_> = cli_lines.difference(&ours_lines).take(5).collect();
        println!(
            "|  | only ours: {only_ours:?}; only the CLI's: {only_cli:?} | | | | | | | | | | |"
        );
    }
}

/// `ralph-hooks check --json`: its time and error lines (ast-grep's left
/// out, the CLIs have none).
fn check(root: &Path, daemon: bool, rules: bool) -> (Duration, Lines) {
    let mut command = Command::new(CLI);
    command.args(["check", "--json"]).current_dir(root);
    if !rules {
        command.arg("--no-ast-grep");
    }
    command.env("CLAUDE_PROJECT_DIR", root);
    if daemon {
        command.env_remove("RALPH_HOOKS_DAEMON");
    } else {
        command.env("RALPH_HOOKS_DAEMON", "0");
    }
    let started = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("ralph-hooks runs");
    let took = started.elapsed();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json: {e}: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let inconclusive = report["summary"]["inconclusive"].as_u64().unwrap_or(0);
    if inconclusive > 0 {
        eprintln!(
            "warning: {inconclusive} inconclusive file(s) in {}",
            root.display()
        );
    }
    let mut lines = Lines::new();
    for file in report["files"].as_array().unwrap() {
        for diag in file["diagnostics"].as_array().unwrap() {
            if diag["severity"] == "error" && diag["source"] != "ast-grep" {
                lines.insert((
                    file["path"].as_str().unwrap().to_string(),
                    diag["line"].as_u64().unwrap(),
                ));
            }
        }
    }
    (took, lines)
}

#[derive(Clone, Copy)]
enum PythonCli {
    Ty,
    Pyrefly,
    Pyright,
}

impl PythonCli {
    fn program(self) -> &'static str {
        match self {
            PythonCli::Ty => "ty",
            PythonCli::Pyrefly => "pyrefly",
            PythonCli::Pyright => "pyright",
        }
    }

    fn run(self, root: &Path) -> (Duration, Lines) {
        let mut command = Command::new(self.program());
        match self {
            PythonCli::Ty => command.args(["check", "--output-format", "concise"]),
            PythonCli::Pyrefly => command.args(["check", "--output-format", "json"]),
            PythonCli::Pyright => command.arg("--outputjson"),
        };
        let started = Instant::now();
        let output = command
            .current_dir(root)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .expect("the checker runs");
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&output.stdout);
        let mut lines = Lines::new();
        match self {
            PythonCli::Ty => {
                for line in text.lines() {
                    if let Some((location, _)) = line.split_once(": error[") {
                        let mut parts = location.rsplitn(3, ':');
                        match (parts.next(), parts.next(), parts.next()) {
                            (Some(_), Some(number), Some(path)) => {
                                lines.insert((path.to_string(), number.parse().unwrap_or(0)));
                            }
                            // A file-level error (one ty cannot read): no
                            // position here; its machine-readable output,
                            // and so ours, puts it on line 1.
                            _ => {
                                lines.insert((location.to_string(), 1));
                            }
                        }
                    }
                }
            }
            PythonCli::Pyrefly => {
                let value: Value = serde_json::from_str(&text).unwrap_or_default();
                for error in value["errors"].as_array().into_iter().flatten() {
                    if error["severity"] == "error" {
                        lines.insert((
                            error["path"].as_str().unwrap_or_default().to_string(),
                            error["line"].as_u64().unwrap_or(0),
                        ));
                    }
                }
            }
            PythonCli::Pyright => {
                let value: Value = serde_json::from_str(&text).unwrap_or_default();
                let real = root.canonicalize().unwrap();
                for diag in value["generalDiagnostics"].as_array().into_iter().flatten() {
                    if diag["severity"] == "error" {
                        let file = Path::new(diag["file"].as_str().unwrap_or_default());
                        let relative = file
                            .strip_prefix(root)
                            .or_else(|_| file.strip_prefix(&real))
                            .unwrap_or(file);
                        lines.insert((
                            relative.to_string_lossy().into_owned(),
                            diag["range"]["start"]["line"].as_u64().unwrap_or(0) + 1,
                        ));
                    }
                }
            }
        }
        (took, lines)
    }
}

fn tsc(root: &Path) -> (Duration, Lines) {
    let started = Instant::now();
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
        .expect("tsc runs");
    let took = started.elapsed();
    let mut lines = Lines::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if let Some((location, _)) = line.split_once("): error TS")
            && let Some((path, position)) = location.split_once('(')
        {
            let number = position
                .split(',')
                .next()
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            lines.insert((path.to_string(), number));
        }
    }
    (took, lines)
}

fn median_of(runs: usize, mut measure: impl FnMut() -> (Duration, Lines)) -> (Duration, Lines) {
    let mut times = Vec::new();
    let mut last = Lines::new();
    for _ in 0..runs.max(1) {
        let (took, lines) = measure();
        times.push(took);
        last = lines;
    }
    times.sort();
    (times[times.len() / 2], last)
}

/// A copy of part of the standard library with `config` beside it.
fn python_corpus(stdlib: &Path, size: &str, config: (&str, &str)) -> PathBuf {
    let root = temp_dir(&format!("py-{size}-{}", config.0));
    corpus::python_corpus(stdlib, size, config, &root);
    root
}

fn rxjs_corpus(sources: &Path, typescript: &Path, label: &str) -> PathBuf {
    let root = temp_dir(&format!("rxjs-{label}"));
    copy_tree(sources, &root.join("src"));
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noImplicitReturns": true, "moduleResolution": "bundler",
            "module": "esnext", "target": "esnext", "lib": ["esnext", "dom"], "noEmit": true,
            "stripInternal": true, "preserveConstEnums": true,
            "paths": {"rxjs": ["./src/index"], "rxjs/operators": ["./src/operators/index"],
                      "rxjs/testing": ["./src/testing/index"], "rxjs/ajax": ["./src/ajax/index"],
                      "rxjs/webSocket": ["./src/webSocket/index"], "rxjs/fetch": ["./src/fetch/index"],
                      "rxjs/internal/*": ["./src/internal/*"]}},
            "include": ["src/**/*.ts"]}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(typescript, root.join("node_modules/typescript")).unwrap();
    root
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

fn first_file(root: &Path, extension: &str) -> PathBuf {
    let mut stack = vec![root.to_path_buf()];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "node_modules" && entry.file_name() != ".claude" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found.into_iter().next().expect("a file to change")
}

fn append(path: &Path, text: &str) {
    let mut current = std::fs::read_to_string(path).unwrap();
    current.push_str(text);
    std::fs::write(path, current).unwrap();
}

/// Waits until no server in the project's daemon is checking the project
/// (a ty server's background check of the whole project included); how
/// long that took, when there was any to wait for.
fn daemon_background_work(root: &Path) -> Option<Duration> {
    let started = Instant::now();
    let mut waited = false;
    loop {
        let output = Command::new(CLI)
            .args(["daemon", "status", "--json"])
            .env("CLAUDE_PROJECT_DIR", root)
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let status: Value = serde_json::from_slice(&output.stdout).ok()?;
        let servers = status["status"]["servers"].as_array()?;
        let busy = servers.iter().any(|server| {
            !server["project_check"].is_null()
                || (server["name"] == "ty" && server["knows_project"] != true)
        });
        if !busy || started.elapsed() > Duration::from_secs(600) {
            return waited.then(|| started.elapsed());
        }
        waited = true;
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop_daemon(root: &Path) {
    let _ = Command::new(CLI)
        .args(["daemon", "stop"])
        .env("CLAUDE_PROJECT_DIR", root)
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A goal-only loop's first feedback on ~700 Python files with ty: its
/// time, and whether it is complete (no file left unchecked).
fn goal_loop_first_feedback(stdlib: &Path) {
    if which("ty").is_none() {
        return;
    }
    let root = python_corpus(stdlib, "whole", ("ty.toml", ""));
    // About 700 files: the whole corpus plus the standard library's unittest tests.
    copy_py(
        &stdlib.join("test"),
        &root.join("extra_tests"),
        &["__pycache__", "support"],
    );
    let files = count_files(&root, "py");
    let started = Instant::now();
    let output = Command::new(CLI)
        .args(["loop", "start", "fix all type errors"])
        .env("CLAUDE_PROJECT_DIR", &root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .current_dir(&root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&output.stdout);
    let summary = text
        .lines()
        .find(|l| l.starts_with("Project check now:"))
        .unwrap_or("(no summary)");
    println!();
    println!(
        "goal-only loop's first feedback, ty, {files} files: {} — {summary}",
        secs(took)
    );
    stop_daemon(&root);
    let _ = std::fs::remove_dir_all(&root);
}

/// The post-edit hook on a fresh TypeScript 7 project's first edit: time and
/// the server's memory.
fn ts7_first_edit(cache: &Path) {
    let typescript = cache.join("typescript7/node_modules/typescript");
    if !typescript.join("package.json").is_file() {
        return;
    }
    let root = temp_dir("ts7-first-edit");
    std::fs::write(
        root.join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noEmit": true}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(&typescript, root.join("node_modules/typescript")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
    std::os::unix::fs::symlink(
        typescript.join("bin/tsc"),
        root.join("node_modules/.bin/tsc"),
    )
    .unwrap();
    let file = root.join("app.ts");
    let text = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const result: string = add(1, 2);\n";
    std::fs::write(&file, text).unwrap();
    let payload = serde_json::json!({
        "session_id": "bench", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file, "originalFile": null},
    });
    let started = Instant::now();
    let mut child = Command::new(POST_TOOL)
        .env("CLAUDE_PROJECT_DIR", &root)
        .env("RALPH_HOOKS_DAEMON", "0")
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let said = String::from_utf8_lossy(&output.stdout);
    let found = said.contains("2322");
    // The server alone, as the daemon keeps it.
    let rss = server_rss_via_daemon(&root, &file, text);
    println!(
        "TypeScript 7, a fresh project's first edit (no daemon: start, check, stop): {} ({}); its server warm in the daemon: {}",
        secs(took),
        if found {
            "the error reported"
        } else {
            "NO error reported"
        },
        rss.map_or("?".into(), |kib| format!("{:.0} MB", kib as f64 / 1024.0))
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The daemon's view of its servers' memory after one check of `file`.
fn server_rss_via_daemon(root: &Path, _file: &Path, _text: &str) -> Option<u64> {
    let output = Command::new(CLI)
        .args(["check", "--json"])
        .env("CLAUDE_PROJECT_DIR", root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .current_dir(root)
        .output()
        .ok()?;
    let _ = output;
    let status = daemon_status(root)?;
    stop_daemon(root);
    Some(
        status["servers"]
            .as_array()?
            .iter()
            .filter_map(|s| s["rss_kib"].as_u64())
            .sum(),
    )
}

fn daemon_status(root: &Path) -> Option<Value> {
    let output = Command::new(CLI)
        .args(["daemon", "status", "--json"])
        .env("CLAUDE_PROJECT_DIR", root)
        .current_dir(root)
        .output()
        .ok()?;
    let value: Value = serde_json::from_slice(&output.stdout).ok()?;
    (value["running"] == true).then(|| value["status"].clone())
}

/// Five languages in one project, one warm server each in the daemon: the
/// memory of every server, against the seed's 500 MB.
fn five_servers(cache: &Path) {
    let root = temp_dir("five-servers");
    std::fs::write(root.join("ty.toml"), "").unwrap();
    std::fs::write(root.join("a.py"), "x: int = 'a'\n").unwrap();
    let typescript = cache.join("typescript7/node_modules/typescript");
    if typescript.join("package.json").is_file() {
        std::fs::write(
            root.join("tsconfig.json"),
            r#"{"compilerOptions": {"strict": true, "noEmit": true}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
        let _ = std::os::unix::fs::symlink(&typescript, root.join("node_modules/typescript"));
        let _ = std::os::unix::fs::symlink(
            typescript.join("bin/tsc"),
            root.join("node_modules/.bin/tsc"),
        );
    }
    std::fs::write(root.join("b.ts"), "export const y: number = 'b';\n").unwrap();
    std::fs::write(
        root.join("c.c"),
        "int main(void) { return undefined_var; }\n",
    )
    .unwrap();
    std::fs::write(root.join("go.mod"), "module bench\n\ngo 1.19\n").unwrap();
    std::fs::write(
        root.join("d.go"),
        "package main\n\nfunc main() { var unused int }\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() { let x: String = 1; }\n",
    )
    .unwrap();
    let _ = Command::new(CLI)
        .args(["check", "--json"])
        .env("CLAUDE_PROJECT_DIR", &root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .current_dir(&root)
        .stdout(Stdio::null())
        .status();
    std::thread::sleep(Duration::from_secs(2));
    if let Some(status) = daemon_status(&root) {
        println!();
        println!(
            "Five languages, one warm server each in the daemon (RSS, server and its helpers):"
        );
        let mut total = 0;
        for server in status["servers"].as_array().into_iter().flatten() {
            let kib = server["rss_kib"].as_u64().unwrap_or(0);
            total += kib;
            println!(
                "- {}: {:.0} MB",
                server["name"].as_str().unwrap_or("?"),
                kib as f64 / 1024.0
            );
        }
        let daemon = status["rss_kib"].as_u64().unwrap_or(0);
        println!(
            "- the daemon itself: {:.0} MB; in all {:.0} MB (seed AC-PERF-002: 500 MB)",
            daemon as f64 / 1024.0,
            (total + daemon) as f64 / 1024.0
        );
    }
    stop_daemon(&root);
    let _ = std::fs::remove_dir_all(&root);
}

fn test_cache() -> PathBuf {
    std::env::var_os("RALPH_HOOKS_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ralph-hooks"))
}

fn global_typescript() -> Option<PathBuf> {
    let output = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let typescript = root.join("typescript");
    typescript
        .join("lib/tsserver.js")
        .is_file()
        .then_some(typescript)
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

fn temp_dir(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ralph-bench-engine-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.0} ms", d.as_secs_f64() * 1000.0)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}
