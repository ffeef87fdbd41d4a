//! Warm language servers, side by side in one run, for pyright,
//! typescript-language-server, clangd and ruff (whichever are installed) on
//! a small and a 1000-line file:
//! - the cold in-process hook (`RALPH_HOOKS_DAEMON=0`: the hook starts the
//!   server, checks, shuts it down);
//! - the warm hook through the daemon (the whole hook process, talking to a
//!   daemon whose server is already running);
//! - the baseline: the server's own warm time — the library's client on a
//!   live server, in this process, no hook and no daemon, with the same
//!   settle rule (so the quiet window is in both).
//!
//! Then memory: the daemon's own RSS with no server, and the RSS of the
//! daemon with pyright, ruff, clangd and gopls warm together.
//!
//! Run with `cargo bench --bench daemon` (release build). `BENCH_RUNS=N`
//! changes the runs per cell (default 7; medians are printed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ralph_hooks::daemon::config::DaemonConfig;
use ralph_hooks::daemon::paths::Paths;
use ralph_hooks::daemon::remote::{self, Target};
use ralph_hooks::daemon::wire::{self, DiagnoseReply, Outcome, Request, StatusReply};
use ralph_hooks::hook::config::Config;
use ralph_hooks::lsp::Launch;
use ralph_hooks::lsp::client::Client;
use ralph_hooks::lsp::servers::{Registry, Selection, find_binary, workspace_root};
use serde_json::{Value, json};

const HOOK: &str = env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic");
const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

/// One server's test project.
struct Case {
    server: &'static str,
    binary: &'static str,
    file: &'static str,
    comment: &'static str,
    small: String,
    large: String,
    config: Value,
}

struct Row {
    server: &'static str,
    size: &'static str,
    cold: Duration,
    warm_hook: Duration,
    own_warm: Duration,
    warm_runs_confirmed: usize,
    runs: usize,
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for case in cases() {
        if which::which(case.binary).is_err() {
            missing.push(format!("{} (`{}` not on PATH)", case.server, case.binary));
            continue;
        }
        let project = temp_project(case.server);
        if let Err(why) = setup(&case, &project) {
            missing.push(format!("{} ({why})", case.server));
            continue;
        }
        for (size, text) in [("small", &case.small), ("1000 lines", &case.large)] {
            eprintln!("measuring {} on the {size} file…", case.server);
            match measure(&case, &project, text, runs) {
                Ok((cold, warm_hook, own_warm, confirmed)) => rows.push(Row {
                    server: case.server,
                    size,
                    cold,
                    warm_hook,
                    own_warm,
                    warm_runs_confirmed: confirmed,
                    runs,
                }),
                Err(why) => missing.push(format!("{} {size}: {why}", case.server)),
            }
        }
        stop_daemon(&project);
        let _ = std::fs::remove_dir_all(&project);
    }

    println!(
        "\n{runs} runs per cell (medians), release build, {} CPUs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!(
        "| server | file | cold in-process hook | warm hook via daemon | server's own warm time (baseline) | warm hook ÷ baseline | target 1.2× + 10 ms | met |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    for row in &rows {
        let target = row.own_warm.mul_f64(1.2) + Duration::from_millis(10);
        println!(
            "| {} | {} | {} | {} | {} | {:.2}× | {} | {}{} |",
            row.server,
            row.size,
            ms(row.cold),
            ms(row.warm_hook),
            ms(row.own_warm),
            row.warm_hook.as_secs_f64() / row.own_warm.as_secs_f64(),
            ms(target),
            if row.warm_hook <= target { "yes" } else { "NO" },
            if row.warm_runs_confirmed == row.runs {
                String::new()
            } else {
                format!(" ({} of {} runs warm)", row.warm_runs_confirmed, row.runs)
            }
        );
    }
    if !missing.is_empty() {
        println!("\nnot measured: {}", missing.join("; "));
    }

    println!("\nmemory (RSS):");
    match daemon_alone() {
        Ok(kib) => println!(
            "| daemon alone, no server | {} | target under 20 MB | {} |",
            mb(kib),
            if kib < 20 * 1024 { "met" } else { "NOT MET" }
        ),
        Err(why) => println!("daemon alone: not measured ({why})"),
    }
    match servers_together() {
        Ok((status, absent)) => {
            for server in &status.servers {
                println!("| {} | {} |", server.name, mb(server.rss_kib));
            }
            let names: Vec<&str> = status.servers.iter().map(|s| s.name.as_str()).collect();
            println!(
                "| daemon + {} warm together | {} | target under 500 MB | {} |",
                names.join(" + "),
                mb(status.tree_rss_kib),
                if status.tree_rss_kib < 500 * 1024 {
                    "met"
                } else {
                    "NOT MET"
                }
            );
            if !absent.is_empty() {
                println!("not in the memory figure: {}", absent.join("; "));
            }
        }
        Err(why) => println!("servers together: not measured ({why})"),
    }
}

fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

fn mb(kib: u64) -> String {
    format!("{:.1} MB", kib as f64 / 1024.0)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn python_small() -> String {
    "import os\n\n\ndef add(a: int, b: int) -> int:\n    return a + b\n\n\nresult: str = add(1, 2)\nprint(undefined_name)\n".into()
}

fn python_large() -> String {
    let mut text = String::from("import os\n\n\n");
    for i in 0..330 {
        text.push_str(&format!("def f{i}(x: int) -> int:\n    return x + {i}\n\n"));
    }
    text.push_str("result: str = f1(1)\nprint(undefined_name)\n");
    text
}

fn cases() -> Vec<Case> {
    let mut ts_large = String::new();
    for i in 0..330 {
        ts_large.push_str(&format!(
            "export function f{i}(x: number): number {{\n  return x + {i};\n}}\n"
        ));
    }
    ts_large.push_str("export const bad: string = f1(1);\n");
    let mut c_large = String::new();
    for i in 0..330 {
        c_large.push_str(&format!("int f{i}(int x) {{\n  return x + {i};\n}}\n"));
    }
    c_large.push_str("int main(void) { return undefined_var; }\n");
    vec![
        Case {
            server: "pyright",
            binary: "pyright-langserver",
            file: "app.py",
            comment: "#",
            small: python_small(),
            large: python_large(),
            config: json!({}),
        },
        Case {
            server: "typescript-language-server",
            binary: "typescript-language-server",
            file: "src/index.ts",
            comment: "//",
            small: "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport function main(): void {\n  const result: string = add(1, 2);\n  console.log(result);\n}\n".into(),
            large: ts_large,
            config: json!({}),
        },
        Case {
            server: "clangd",
            binary: "clangd",
            file: "main.c",
            comment: "//",
            small: "int add(int a, int b) { return a + b; }\n\nint main(void) {\n  return undefined_var;\n}\n".into(),
            large: c_large,
            config: json!({}),
        },
        Case {
            server: "ruff",
            binary: "ruff",
            file: "tool.py",
            comment: "#",
            small: python_small(),
            large: python_large(),
            config: json!({"lsp": {"servers": {"pyright": {"disabled": true}, "basedpyright": {"disabled": true}}}}),
        },
    ]
}

fn temp_project(label: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ralph-bench-daemon-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    dir.canonicalize().unwrap()
}

fn setup(case: &Case, project: &Path) -> Result<(), String> {
    let mut config = case.config.clone();
    config["diagnostics"] = json!({"timeout_ms": 30_000, "ast_grep": false});
    std::fs::write(project.join(".claude/ralph-hooks.json"), config.to_string())
        .map_err(|e| e.to_string())?;
    if case.server == "typescript-language-server" {
        let typescript = global_typescript()
            .ok_or("no global TypeScript with lib/tsserver.js (npm install -g typescript@5)")?;
        std::fs::create_dir_all(project.join("node_modules")).map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(typescript, project.join("node_modules/typescript"))
            .map_err(|e| e.to_string())?;
        std::fs::write(
            project.join("tsconfig.json"),
            r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}"#,
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn global_typescript() -> Option<PathBuf> {
    let output = Command::new("npm")
        .args(["root", "-g"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let typescript =
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("typescript");
    typescript
        .join("lib/tsserver.js")
        .is_file()
        .then_some(typescript)
}

/// The file's text for run `n`: a trailing comment changes, the errors stay.
fn variant(case: &Case, text: &str, n: usize) -> String {
    format!("{text}{} run {n}\n", case.comment)
}

/// Runs the hook on a Write of `text`; returns its wall time and stderr.
fn run_hook(project: &Path, case: &Case, text: &str, daemon: bool) -> (Duration, String, String) {
    let file = project.join(case.file);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    let payload = json!({
        "session_id": "bench", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file, "content": text},
        "tool_response": {"type": "create", "filePath": file, "originalFile": null},
    });
    let mut command = Command::new(HOOK);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CLAUDE") || key.starts_with("RALPH_HOOKS") {
            command.env_remove(key.as_ref());
        }
    }
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .env("RALPH_HOOKS_DEBUG", "1")
        .env("RALPH_HOOKS_DAEMON", if daemon { "1" } else { "0" })
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("spawn the hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    (
        elapsed,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// (cold in-process hook, warm hook via the daemon, own warm time, warm runs confirmed).
fn measure(
    case: &Case,
    project: &Path,
    text: &str,
    runs: usize,
) -> Result<(Duration, Duration, Duration, usize), String> {
    let mut cold = Vec::new();
    for n in 0..runs {
        let (elapsed, stdout, stderr) = run_hook(project, case, &variant(case, text, n), false);
        if !stdout.contains("issues found") {
            return Err(format!(
                "the cold hook did not report the errors: {stdout} {}",
                stderr.lines().last().unwrap_or_default()
            ));
        }
        cold.push(elapsed);
    }
    // The first daemon run starts the daemon and the server: not timed.
    run_hook(project, case, &variant(case, text, 1000), true);
    let mut warm = Vec::new();
    let mut confirmed = 0;
    for n in 0..runs {
        let (elapsed, stdout, stderr) = run_hook(project, case, &variant(case, text, n), true);
        if !stdout.contains("issues found") {
            return Err(format!("the warm hook did not report the errors: {stdout}"));
        }
        if stderr.contains("answered (warm)") {
            confirmed += 1;
        }
        warm.push(elapsed);
    }
    let own = own_warm(case, project, text, runs)?;
    Ok((median(cold), median(warm), own, confirmed))
}

/// The launch the hook would use for the case's file.
fn launch_for(project: &Path, file: &Path) -> Result<(Launch, String), String> {
    let config = Config::load(project).map_err(|e| format!("{e:#}"))?;
    let registry = Registry::load(project, &config);
    match registry.select(file, project) {
        Selection::Found {
            server,
            program,
            language_id,
            ..
        } => {
            let root = workspace_root(server, file, project);
            Ok((server.launch(program, root, project), language_id))
        }
        _ => Err("no installed server for the file".into()),
    }
}

/// The baseline: one live client in this process, `didChange` per run.
fn own_warm(case: &Case, project: &Path, text: &str, runs: usize) -> Result<Duration, String> {
    let file = project.join(case.file);
    let (launch, language_id) = launch_for(project, &file)?;
    let deadline = || Instant::now() + Duration::from_secs(30);
    let mut client = Client::start(&launch, deadline()).map_err(|e| e.to_string())?;
    client
        .diagnose(&file, &variant(case, text, 2000), &language_id, deadline())
        .map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    for n in 0..runs {
        let started = Instant::now();
        let found = client
            .diagnose(&file, &variant(case, text, n), &language_id, deadline())
            .map_err(|e| e.to_string())?;
        times.push(started.elapsed());
        if found.is_empty() {
            return Err("the warm client saw no diagnostics".into());
        }
    }
    client.shutdown(Duration::from_secs(1));
    Ok(median(times))
}

fn stop_daemon(project: &Path) {
    let _ = Command::new(CLI)
        .args(["daemon", "stop"])
        .env("CLAUDE_PROJECT_DIR", project)
        .env_remove("RALPH_HOOKS_STATE_DIR")
        .current_dir(project)
        .stdout(Stdio::null())
        .output();
}

fn target_for(project: &Path) -> Target {
    let state_root = project.join(".claude/orchestrator");
    Target {
        paths: Paths::new(&state_root),
        project_root: project.to_path_buf(),
        state_root,
        config: DaemonConfig {
            start_timeout_ms: 10_000,
            ..DaemonConfig::default()
        },
        exe: Some(PathBuf::from(CLI)),
    }
}

fn status(target: &Target) -> Result<StatusReply, String> {
    let mut connected = remote::connect_or_start(target).map_err(|e| e.0)?;
    connected
        .conn
        .call(&Request::Status, Instant::now() + Duration::from_secs(5))
        .map_err(|e| e.to_string())
}

/// The daemon's RSS right after it started, with no server.
fn daemon_alone() -> Result<u64, String> {
    let project = temp_project("alone");
    let result = status(&target_for(&project)).map(|s| s.rss_kib);
    stop_daemon(&project);
    let _ = std::fs::remove_dir_all(&project);
    result
}

/// pyright, ruff, clangd and gopls warm in one daemon (each checked a file).
fn servers_together() -> Result<(StatusReply, Vec<String>), String> {
    let project = temp_project("together");
    std::fs::write(project.join("go.mod"), "module example.com/m\n\ngo 1.19\n").unwrap();
    let files = [
        ("pyright", "a.py", python_large()),
        ("ruff", "b.py", python_large()),
        (
            "clangd",
            "c.c",
            "int main(void) {\n  return undefined_var;\n}\n".to_string(),
        ),
        (
            "gopls",
            "main.go",
            "package main\n\nfunc main() {\n\tvar s string = 1\n}\n".to_string(),
        ),
    ];
    let target = target_for(&project);
    let mut connected = remote::connect_or_start(&target).map_err(|e| e.0)?;
    let registry = Registry::builtin();
    let mut absent = Vec::new();
    for (name, relative, text) in files {
        let server = registry
            .servers
            .iter()
            .find(|s| s.name == name)
            .expect("a built-in server");
        let Some(program) = find_binary(&server.command, &project, &[project.as_path()]) else {
            absent.push(format!("{name} (`{}` not installed)", server.command));
            continue;
        };
        let path = project.join(relative);
        std::fs::write(&path, &text).unwrap();
        let launch = server.launch(program, project.clone(), &project);
        let language_id = server
            .extensions
            .values()
            .next()
            .cloned()
            .unwrap_or_default();
        let request = Request::Diagnose {
            fingerprint: wire::fingerprint(&launch),
            launch: Box::new((&launch).into()),
            path,
            text,
            language_id,
            deadline_ms: 30_000,
            budget_ms: None,
            startup_ms: None,
        };
        let reply: DiagnoseReply = connected
            .conn
            .call(&request, Instant::now() + Duration::from_secs(31))
            .map_err(|e| e.to_string())?;
        if let Outcome::Failed { error } = reply.outcome {
            absent.push(format!("{name} (failed: {error:?})"));
        }
    }
    // Let the servers finish their background work before measuring.
    std::thread::sleep(Duration::from_secs(2));
    let result = connected
        .conn
        .call(&Request::Status, Instant::now() + Duration::from_secs(5))
        .map_err(|e| e.to_string());
    drop(connected);
    stop_daemon(&project);
    let _ = std::fs::remove_dir_all(&project);
    result.map(|status| (status, absent))
}
