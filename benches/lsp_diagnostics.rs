//! Speed of the diagnostics hook against each real language server, with
//! the server's own time beside it as the baseline:
//!
//! - **server cold**: a minimal client (spawn, initialize, didOpen, didSave,
//!   answer the server's requests, stop at the first publish that holds the
//!   expected diagnostic) — what the server itself needs;
//! - **hook total**: the release `ralph-post-tool-lsp-diagnostic` on a Write
//!   of the same file, from spawn to exit (it also waits for the settle
//!   window and shuts the server down);
//! - **hook peak RSS**: the hook process alone (`VmHWM`, polled), not the
//!   server.
//!
//! Also the seed's targets: a 1000-line Python file within 5 s, and one loop
//! iteration (the Stop hook re-checking three touched files) within 10 s.
//! Each figure is the median of `BENCH_RUNS` runs (default 3) after one
//! warm-up. Servers that are not installed are listed as skipped.
//!
//! Run: `cargo bench --bench lsp_diagnostics`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lsp_server::{Message, Notification, Request, RequestId, Response};
use ralph_hooks::lsp::transport::{Incoming, Transport};
use serde_json::{Value, json};

const HOOK: &str = env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic");
const STOP_HOOK: &str = env!("CARGO_BIN_EXE_ralph-stop-loop-controller");
const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

/// One benchmark case: a project, a file, and the diagnostic to wait for.
struct Case {
    label: &'static str,
    server_command: &'static str,
    server_args: &'static [&'static str],
    language_id: &'static str,
    relative: &'static str,
    text: String,
    expected: &'static str,
    await_save: bool,
    setup: fn(&Path) -> bool,
    /// The reference measurement (shared/reference/language-servers.md §1).
    reference: &'static str,
}

fn no_setup(_: &Path) -> bool {
    true
}

fn python_large() -> String {
    let mut text = String::from("def add(a: int, b: int) -> int:\n    return a + b\n\n");
    for index in 0..994 {
        text.push_str(&format!("value_{index}: int = add({index}, 1)\n"));
    }
    text.push_str("\nresult: str = add(1, 2)\n");
    text
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            label: "pyright",
            server_command: "pyright-langserver",
            server_args: &["--stdio"],
            language_id: "python",
            relative: "src/app.py",
            text: "def add(a: int, b: int) -> int:\n    return a + b\n\nresult: str = add(1, 2)\n".into(),
            expected: "is not assignable",
            await_save: false,
            setup: no_setup,
            reference: "0.89 s",
        },
        Case {
            label: "pyright, 1000 lines",
            server_command: "pyright-langserver",
            server_args: &["--stdio"],
            language_id: "python",
            relative: "src/big.py",
            text: python_large(),
            expected: "is not assignable",
            await_save: false,
            setup: no_setup,
            reference: "1.42 s",
        },
        Case {
            label: "ruff",
            server_command: "ruff",
            server_args: &["server"],
            language_id: "python",
            relative: "tool.py",
            text: "import os\n\nprint(undefined_name)\n".into(),
            expected: "undefined_name",
            await_save: false,
            setup: ruff_only,
            reference: "0.007 s",
        },
        Case {
            label: "typescript-language-server",
            server_command: "typescript-language-server",
            server_args: &["--stdio"],
            language_id: "typescript",
            relative: "src/index.ts",
            text: "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport function main(): void {\n  const result: string = add(1, 2);\n  console.log(result);\n}\n".into(),
            expected: "is not assignable",
            await_save: false,
            setup: typescript_project,
            reference: "2.23 s",
        },
        Case {
            label: "clangd",
            server_command: "clangd",
            server_args: &[],
            language_id: "c",
            relative: "main.c",
            text: "int add(int a, int b) { return a + b; }\n\nint main(void) {\n  return undefined_var;\n}\n".into(),
            expected: "undeclared identifier",
            await_save: false,
            setup: no_setup,
            reference: "0.048 s",
        },
        Case {
            label: "rust-analyzer",
            server_command: "rust-analyzer",
            server_args: &[],
            language_id: "rust",
            relative: "src/main.rs",
            text: "fn main() {\n    let s: String = 5;\n    println!(\"{s}\");\n}\n".into(),
            expected: "mismatched types",
            await_save: true,
            setup: cargo_project,
            reference: "3.2–3.4 s",
        },
    ]
}

fn ruff_only(project: &Path) -> bool {
    write(
        project,
        ".claude/ralph-hooks.json",
        r#"{"lsp": {"servers": {"pyright": {"disabled": true}, "basedpyright": {"disabled": true}}}}"#,
    );
    true
}

fn typescript_project(project: &Path) -> bool {
    let Ok(output) = Command::new("npm")
        .args(["root", "-g"])
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    let typescript =
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("typescript");
    if !typescript.join("lib/tsserver.js").is_file() {
        return false;
    }
    std::fs::create_dir_all(project.join("node_modules")).unwrap();
    let _ = std::os::unix::fs::symlink(&typescript, project.join("node_modules/typescript"));
    write(
        project,
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}"#,
    );
    true
}

fn cargo_project(project: &Path) -> bool {
    write(
        project,
        "Cargo.toml",
        "[package]\nname = \"sample\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    );
    Command::new("rust-analyzer")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn write(project: &Path, relative: &str, text: &str) -> PathBuf {
    let path = project.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

/// The minimal client: seconds from spawn to the first publish for the file
/// that contains `expected`.
fn server_cold(case: &Case, project: &Path, file: &Path) -> Option<f64> {
    let program = which::which(case.server_command).ok()?;
    let started = Instant::now();
    let mut command = Command::new(program);
    command.args(case.server_args).current_dir(project);
    let mut transport = Transport::spawn(&mut command).ok()?;
    let root = ralph_hooks::lsp::uri::from_path(project);
    let uri = ralph_hooks::lsp::uri::from_path(file);
    transport.send(Message::Request(Request::new(
        RequestId::from(1),
        "initialize".into(),
        json!({
            "processId": std::process::id(), "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "bench"}],
            "capabilities": {"workspace": {"configuration": true, "workspaceFolders": true},
                             "window": {"workDoneProgress": true},
                             "textDocument": {"publishDiagnostics": {"versionSupport": true}}},
        }),
    )));
    let deadline = started + Duration::from_secs(60);
    let mut opened = false;
    while let Some(incoming) = transport.recv_until(deadline) {
        match incoming {
            Incoming::Message(Message::Response(response))
                if response.id == RequestId::from(1) && !opened =>
            {
                opened = true;
                transport.send(Message::Notification(Notification::new(
                    "initialized".into(),
                    json!({}),
                )));
                transport.send(Message::Notification(Notification::new(
                    "textDocument/didOpen".into(),
                    json!({"textDocument": {"uri": uri, "languageId": case.language_id, "version": 1, "text": case.text}}),
                )));
                if case.await_save {
                    transport.send(Message::Notification(Notification::new(
                        "textDocument/didSave".into(),
                        json!({"textDocument": {"uri": uri}}),
                    )));
                }
            }
            Incoming::Message(Message::Request(request)) => {
                let result = if request.method == "workspace/configuration" {
                    let n = request.params["items"].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; n])
                } else {
                    Value::Null
                };
                transport.send(Message::Response(Response::new_ok(request.id, result)));
            }
            Incoming::Message(Message::Notification(notification))
                if notification.method == "textDocument/publishDiagnostics" =>
            {
                let published = notification.params["uri"]
                    .as_str()
                    .and_then(ralph_hooks::lsp::uri::to_path);
                let ours = published.is_some_and(|p| {
                    ralph_hooks::lsp::uri::comparable(&p) == ralph_hooks::lsp::uri::comparable(file)
                });
                if ours
                    && notification.params["diagnostics"]
                        .to_string()
                        .contains(case.expected)
                {
                    let seconds = started.elapsed().as_secs_f64();
                    transport.kill();
                    return Some(seconds);
                }
            }
            Incoming::Closed(_) => return None,
            _ => {}
        }
    }
    transport.kill();
    None
}

/// Runs a hook binary on `payload`: seconds, peak RSS in KiB, stdout.
fn run_hook(
    binary: &str,
    project: &Path,
    payload: &Value,
    env: &[(&str, &str)],
) -> (f64, u64, String) {
    let started = Instant::now();
    let mut command = Command::new(binary);
    command
        .env("CLAUDE_PROJECT_DIR", project)
        // The in-process path this benchmark is about; the daemon has its own.
        .env("RALPH_HOOKS_DAEMON", "0")
        .envs(env.iter().copied())
        .current_dir(project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("spawn the hook");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = payload.to_string();
    std::thread::spawn(move || {
        let _ = stdin.write_all(bytes.as_bytes());
    });
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let mut peak_kib = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            && let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            peak_kib = peak_kib.max(kib);
        }
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let seconds = started.elapsed().as_secs_f64();
    (seconds, peak_kib, reader.join().unwrap_or_default())
}

fn write_payload(file: &Path) -> Value {
    json!({
        "session_id": "bench", "hook_event_name": "PostToolUse", "tool_name": "Write",
        "tool_input": {"file_path": file},
        "tool_response": {"type": "create", "filePath": file, "originalFile": null},
    })
}

fn temp_project(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ralph-bench-{}-{}",
        label.replace([' ', ','], "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn main() {
    let n_runs = runs();
    println!(
        "LSP diagnostics hook benchmark — median of {n_runs} run(s) after a warm-up; times in seconds"
    );
    println!();
    println!(
        "| server (file) | reference cold | server cold (minimal client) = baseline | hook total | hook overhead | hook peak RSS |"
    );
    println!("|---|---|---|---|---|---|");
    for case in cases() {
        let project = temp_project(case.label);
        if which::which(case.server_command).is_err() || !(case.setup)(&project) {
            println!(
                "| {} | {} | skipped: not installed | | | |",
                case.label, case.reference
            );
            continue;
        }
        let file = write(&project, case.relative, &case.text);
        let mut server_times = Vec::new();
        let mut hook_times = Vec::new();
        let mut peaks = Vec::new();
        let mut last_output = String::new();
        for run in 0..=n_runs {
            let server = server_cold(&case, &project, &file);
            let (hook, peak, output) = run_hook(HOOK, &project, &write_payload(&file), &[]);
            if run == 0 {
                continue;
            }
            if let Some(server) = server {
                server_times.push(server);
            }
            hook_times.push(hook);
            peaks.push(peak as f64);
            last_output = output;
        }
        let found = last_output.contains(case.expected);
        let hook = median(hook_times);
        let server = (!server_times.is_empty()).then(|| median(server_times));
        println!(
            "| {} | {} | {} | {:.3}{} | {} | {:.1} MiB |",
            case.label,
            case.reference,
            server.map_or("no diagnostic".into(), |s| format!("{s:.3}")),
            hook,
            if found { "" } else { " (diagnostic missing!)" },
            server.map_or(String::new(), |s| format!("{:+.0} ms", (hook - s) * 1000.0)),
            median(peaks) / 1024.0
        );
        let _ = std::fs::remove_dir_all(&project);
    }
    loop_iteration(n_runs);
}

/// One loop iteration: the Stop hook re-checking three touched Python
/// files with pyright (the seed's "diagnostics + feedback within 10 s").
fn loop_iteration(n_runs: usize) {
    println!();
    if which::which("pyright-langserver").is_err() {
        println!("loop iteration: skipped (pyright not installed)");
        return;
    }
    let mut times = Vec::new();
    for run in 0..=n_runs {
        let project = temp_project("loop");
        let mut files = Vec::new();
        for index in 0..3 {
            files.push(write(
                &project,
                &format!("src/m{index}.py"),
                &format!("def f{index}() -> int:\n    return 0\n\nx: str = f{index}()\n"),
            ));
        }
        let status = Command::new(CLI)
            .args(["loop", "start", "fix the type errors", "--diagnostics"])
            .env("CLAUDE_PROJECT_DIR", &project)
            .env("CLAUDE_CODE_SESSION_ID", "bench")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let loop_file = project.join(".claude/orchestrator/loop.json");
        let mut state: Value =
            serde_json::from_str(&std::fs::read_to_string(&loop_file).unwrap()).unwrap();
        state["touched_files"] = json!(files);
        std::fs::write(&loop_file, state.to_string()).unwrap();
        let stop =
            json!({"session_id": "bench", "hook_event_name": "Stop", "stop_hook_active": false});
        let (seconds, _, output) = run_hook(
            STOP_HOOK,
            &project,
            &stop,
            &[("CLAUDE_CODE_SESSION_ID", "bench")],
        );
        assert!(
            output.contains("3 errors"),
            "unexpected Stop output: {output}"
        );
        if run > 0 {
            times.push(seconds);
        }
        let _ = std::fs::remove_dir_all(&project);
    }
    println!("| seed target | measured | target |");
    println!("|---|---|---|");
    println!(
        "| loop iteration: Stop hook, 3 touched files, pyright | {:.3} s | ≤ 10 s |",
        median(times)
    );
}
