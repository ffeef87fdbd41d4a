//! Hook start-up cost, the number that matters for hooks that run on every
//! tool call: median wall time, median CPU time (user + system, which a
//! busy machine's run queue does not inflate) and peak RSS of each binary
//! beside `/bin/true`.
//!
//! Run with `cargo bench --bench hooks` (release build). `BENCH_RUNS=N`
//! changes the number of runs per row (default 300).
//! `BENCH_COMPARE=DIR[:DIR…]` adds rows for the binaries in each DIR (e.g.
//! copies of main's and this branch's `target/release`), measured in the
//! same round-robin, so before and after see the same load. Compare copies
//! made the same way: a freshly written copy of a binary starts measurably
//! faster than the one cargo left in `target/` (page-cache layout).
//!
//! The telemetry rows run the Stop hook (a running loop: one event per
//! Stop) and the PreToolUse guard (a denial: one event) with telemetry off,
//! on with an OTLP collector up (a loopback listener in this process), and
//! on with the collector down (nothing listening): the hooks only append to
//! the log and check that the exporter runs, so the three should match.

#[path = "support/procs.rs"]
mod procs;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use procs::{Case, measure_all, print_table, run_once};

fn temp_project(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ralph-bench-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".claude/orchestrator")).unwrap();
    dir
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let stop = Path::new(env!("CARGO_BIN_EXE_ralph-stop-loop-controller"));
    let session_start = Path::new(env!("CARGO_BIN_EXE_ralph-session-start"));
    let user_prompt = Path::new(env!("CARGO_BIN_EXE_ralph-user-prompt-submit"));
    let cli = Path::new(env!("CARGO_BIN_EXE_ralph-hooks"));
    let post_tool = Path::new(env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic"));
    let guard = Path::new(env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard"));
    let git_path = which::which("git").expect("git on PATH");
    let git = git_path.as_path();
    let true_bin = Path::new("/bin/true");

    let empty = temp_project("empty");
    let with_loop = temp_project("loop");
    let loop_json = serde_json::json!({
        "version": 1, "id": "loop-20261121T110000Z-0001", "status": "RUNNING", "goal": "make the test suite pass",
        "promise": "ALL TESTS PASS", "checks": [], "check_timeout_secs": 300, "diagnostics": false, "no_warnings": false,
        "iteration": 0, "max_iterations": 10, "session_id": "bench", "project_root": with_loop.display().to_string(),
        "started_at": "2026-11-21T11:00:00Z", "updated_at": "2026-11-21T11:00:00Z", "ended_at": null,
        "completion_reason": null, "consecutive_blocks": 0, "touched_files": [], "history": []
    })
    .to_string();
    let loop_path = with_loop.join(".claude/orchestrator/loop.json");
    let reset_loop = || std::fs::write(&loop_path, &loop_json).unwrap();
    reset_loop();

    let stop_input = br#"{"hook_event_name":"Stop","session_id":"bench","stop_hook_active":false,"last_assistant_message":"still working","background_tasks":[]}"#;
    let start_input =
        br#"{"hook_event_name":"SessionStart","session_id":"bench","source":"compact"}"#;

    // Issue 12: the prompt hook runs on every prompt, the status line on
    // every message update.
    let prompt_input = br#"{"hook_event_name":"UserPromptSubmit","session_id":"bench","prompt":"please add a test for the parser"}"#;
    let status_input = br#"{"hook_event_name":"Status","session_id":"bench","model":{"id":"m","display_name":"M"},"workspace":{}}"#;

    // A git project of 200 Python files, 3 of them dirty, for the Bash
    // PostToolUse hook on a command that changed nothing (issue 11).
    let repo = temp_project("git");
    for i in 0..200 {
        std::fs::write(repo.join(format!("m{i}.py")), format!("x{i} = {i}\n")).unwrap();
    }
    std::fs::write(repo.join(".gitignore"), ".claude/\n").unwrap();
    let git_in = |args: &[&str]| {
        Command::new(git)
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("git");
    };
    git_in(&["init", "-q"]);
    git_in(&["add", "-A"]);
    git_in(&["commit", "-q", "-m", "init"]);
    for i in 0..3 {
        std::fs::write(repo.join(format!("m{i}.py")), format!("x{i} = {i} + 1\n")).unwrap();
    }
    // The guard runs before every Bash call; outside a loop it must cost
    // what it cost before the check after commands existed.
    let guard_input = br#"{"hook_event_name":"PreToolUse","session_id":"bench","tool_name":"Bash","tool_input":{"command":"cargo test --quiet 2>&1 | tail -5"},"tool_use_id":"toolu_bench"}"#;
    let bash_input = br#"{"hook_event_name":"PostToolUse","session_id":"bench","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"","stderr":""}}"#;
    // The first run records the dirty files; the measured ones find nothing new.
    run_once(post_tool, &[], bash_input, &[("CLAUDE_PROJECT_DIR", &repo)]);

    // Telemetry: a collector that accepts anything, and a port nobody
    // listens on. Each setting has its own project (and so its own exporter).
    let collector = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let up_endpoint = format!("http://{}", collector.local_addr().unwrap());
    std::thread::spawn(move || accept_everything(collector));
    let down_endpoint = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", free.local_addr().unwrap())
    };
    let otel_up = telemetry_project("otel-up", &loop_json);
    let otel_down = telemetry_project("otel-down", &loop_json);
    let loop_json_at = |project: &Path| project.join(".claude/orchestrator/loop.json");
    let (up_loop, down_loop) = (loop_json_at(&otel_up), loop_json_at(&otel_down));
    let reset_otel_loops = || {
        std::fs::write(&up_loop, &loop_json).unwrap();
        std::fs::write(&down_loop, &loop_json).unwrap();
    };
    reset_otel_loops();
    let telemetry_env = |project: &Path, endpoint: &str| -> Vec<(&'static str, PathBuf)> {
        vec![
            ("CLAUDE_PROJECT_DIR", project.to_path_buf()),
            ("CLAUDE_CODE_ENABLE_TELEMETRY", PathBuf::from("1")),
            ("OTEL_LOGS_EXPORTER", PathBuf::from("otlp")),
            ("OTEL_METRICS_EXPORTER", PathBuf::from("otlp")),
            ("OTEL_TRACES_EXPORTER", PathBuf::from("otlp")),
            (
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                PathBuf::from("http/protobuf"),
            ),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", PathBuf::from(endpoint)),
            ("OTEL_LOGS_EXPORT_INTERVAL", PathBuf::from("1000")),
        ]
    };
    let up_owned = telemetry_env(&otel_up, &up_endpoint);
    let down_owned = telemetry_env(&otel_down, &down_endpoint);
    let up_env: Vec<(&str, &Path)> = up_owned.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let down_env: Vec<(&str, &Path)> = down_owned.iter().map(|(k, v)| (*k, v.as_path())).collect();
    let deny_input = br#"{"hook_event_name":"PreToolUse","session_id":"bench","prompt_id":"p","tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"git push origin main"}}"#;

    let nothing = || {};
    let repo_dir = repo.to_str().unwrap().to_owned();
    let git_status_args = [
        "-C",
        repo_dir.as_str(),
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    ];
    let in_repo = [("CLAUDE_PROJECT_DIR", repo.as_path())];
    let in_empty = [("CLAUDE_PROJECT_DIR", empty.as_path())];
    let in_loop = [("CLAUDE_PROJECT_DIR", with_loop.as_path())];
    let cases = [
        Case {
            name: "/bin/true (baseline)",
            prepare: &nothing,
            program: true_bin,
            args: &[],
            stdin: b"",
            env: &[],
        },
        Case {
            name: "Stop hook, no loop",
            prepare: &nothing,
            program: stop,
            args: &[],
            stdin: stop_input,
            env: &in_empty,
        },
        Case {
            name: "Stop hook, running loop (promise only)",
            prepare: &reset_loop,
            program: stop,
            args: &[],
            stdin: stop_input,
            env: &in_loop,
        },
        Case {
            name: "Stop hook, running loop, telemetry on, collector up",
            prepare: &reset_otel_loops,
            program: stop,
            args: &[],
            stdin: stop_input,
            env: &up_env,
        },
        Case {
            name: "Stop hook, running loop, telemetry on, collector down",
            prepare: &reset_otel_loops,
            program: stop,
            args: &[],
            stdin: stop_input,
            env: &down_env,
        },
        Case {
            name: "PreToolUse hook, git push denied (loop runs), telemetry off",
            prepare: &reset_loop,
            program: guard,
            args: &[],
            stdin: deny_input,
            env: &in_loop,
        },
        Case {
            name: "PreToolUse hook, git push denied, telemetry on, collector up",
            prepare: &reset_otel_loops,
            program: guard,
            args: &[],
            stdin: deny_input,
            env: &up_env,
        },
        Case {
            name: "PreToolUse hook, git push denied, telemetry on, collector down",
            prepare: &reset_otel_loops,
            program: guard,
            args: &[],
            stdin: deny_input,
            env: &down_env,
        },
        Case {
            name: "SessionStart hook, running loop",
            prepare: &reset_loop,
            program: session_start,
            args: &[],
            stdin: start_input,
            env: &in_loop,
        },
        Case {
            name: "UserPromptSubmit hook, no loop, ordinary prompt",
            prepare: &nothing,
            program: user_prompt,
            args: &[],
            stdin: prompt_input,
            env: &in_empty,
        },
        Case {
            name: "UserPromptSubmit hook, running loop, ordinary prompt",
            prepare: &reset_loop,
            program: user_prompt,
            args: &[],
            stdin: prompt_input,
            env: &in_loop,
        },
        Case {
            name: "statusline, no loop",
            prepare: &nothing,
            program: cli,
            args: &["statusline"],
            stdin: status_input,
            env: &in_empty,
        },
        Case {
            name: "statusline, running loop",
            prepare: &reset_loop,
            program: cli,
            args: &["statusline"],
            stdin: status_input,
            env: &in_loop,
        },
        Case {
            name: "PreToolUse guard, Bash, no loop",
            prepare: &nothing,
            program: guard,
            args: &[],
            stdin: guard_input,
            env: &in_repo,
        },
        Case {
            name: "git status (200 files, 3 dirty)",
            prepare: &nothing,
            program: git,
            args: &git_status_args,
            stdin: b"",
            env: &[],
        },
        Case {
            name: "PostToolUse Bash hook, command changed nothing",
            prepare: &nothing,
            program: post_tool,
            args: &[],
            stdin: bash_input,
            env: &in_repo,
        },
    ];
    // Other builds to compare, measured in the same round-robin. Each row
    // is labelled with its folder's name; a binary missing there (a hook
    // that build does not have) is left out.
    let compare: Vec<PathBuf> = std::env::var_os("BENCH_COMPARE")
        .map(|dirs| std::env::split_paths(&dirs).collect())
        .unwrap_or_default();
    let labels: Vec<(PathBuf, PathBuf, PathBuf, PathBuf, PathBuf, PathBuf, String)> = compare
        .iter()
        .map(|dir| {
            let label = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string());
            (
                dir.join("ralph-stop-loop-controller"),
                dir.join("ralph-session-start"),
                dir.join("ralph-user-prompt-submit"),
                dir.join("ralph-hooks"),
                dir.join("ralph-pre-tool-stop-guard"),
                dir.join("ralph-post-tool-lsp-diagnostic"),
                label,
            )
        })
        .collect();
    let names: Vec<[String; 8]> = labels
        .iter()
        .map(|(.., label)| {
            [
                format!("[{label}] Stop hook, no loop"),
                format!("[{label}] Stop hook, running loop (promise only)"),
                format!("[{label}] SessionStart hook, running loop"),
                format!("[{label}] UserPromptSubmit hook, no loop, ordinary prompt"),
                format!("[{label}] statusline, no loop"),
                format!("[{label}] PreToolUse guard, Bash, no loop"),
                format!("[{label}] PostToolUse Bash hook, command changed nothing"),
                format!("[{label}] PreToolUse hook, git push denied (loop runs), telemetry off"),
            ]
        })
        .collect();
    /// One compared build's row: program, arguments, stdin, set-up, env.
    type CompareRow<'a> = (
        &'a PathBuf,
        &'a [&'a str],
        &'a [u8],
        &'a dyn Fn(),
        &'a [(&'a str, &'a Path)],
    );
    let mut cases = Vec::from(cases);
    for ((stop, start, prompt, cli, guard, post, _), names) in labels.iter().zip(&names) {
        let rows: [CompareRow; 8] = [
            (stop, &[], stop_input, &nothing, &in_empty),
            (stop, &[], stop_input, &reset_loop, &in_loop),
            (start, &[], start_input, &reset_loop, &in_loop),
            (prompt, &[], prompt_input, &nothing, &in_empty),
            (cli, &["statusline"], status_input, &nothing, &in_empty),
            (guard, &[], guard_input, &nothing, &in_repo),
            (post, &[], bash_input, &nothing, &in_repo),
            (guard, &[], deny_input, &reset_loop, &in_loop),
        ];
        for ((program, args, stdin, prepare, env), name) in rows.into_iter().zip(names) {
            if program.is_file() {
                cases.push(Case {
                    name,
                    prepare,
                    program,
                    args,
                    stdin,
                    env,
                });
            }
        }
    }
    let rows = measure_all(&cases, runs);
    print_table(&rows, runs);
    println!(
        "\ntargets: Stop hook with no loop within 3× of /bin/true and under 3 ms; UserPromptSubmit hook and statusline with no loop within 2× of /bin/true (statusline under 5 ms); peak RSS under 10 MB"
    );
    // The exporters the telemetry rows started: stopped, not left behind.
    for (project, env) in [(&otel_up, &up_env), (&otel_down, &down_env)] {
        let mut stop_exporter = Command::new(cli);
        stop_exporter
            .args(["telemetry", "stop"])
            .stdout(Stdio::null());
        for (key, value) in env.iter() {
            stop_exporter.env(key, value);
        }
        let _ = stop_exporter.status();
        let _ = std::fs::remove_dir_all(project);
    }
    let _ = std::fs::remove_dir_all(&empty);
    let _ = std::fs::remove_dir_all(&with_loop);
    let _ = std::fs::remove_dir_all(&repo);
}

/// A project with a running loop, for the telemetry rows.
fn telemetry_project(label: &str, loop_json: &str) -> PathBuf {
    let dir = temp_project(label);
    std::fs::write(dir.join(".claude/orchestrator/loop.json"), loop_json).unwrap();
    dir
}

/// An OTLP/HTTP collector that takes any request and answers 200.
fn accept_everything(listener: std::net::TcpListener) {
    use std::io::{BufRead, BufReader, Read};
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || {
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            loop {
                let mut length = 0;
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let header = line.trim_end().to_ascii_lowercase();
                    if header.is_empty() {
                        break;
                    }
                    if let Some(value) = header.strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let _ = writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            }
        });
    }
}
