//! Hook start-up cost, the number that matters for hooks that run on every
//! tool call: median wall time and peak RSS of each binary beside `/bin/true`.
//!
//! Run with `cargo bench --bench hooks` (release build). `BENCH_RUNS=N`
//! changes the number of runs per row (default 300).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Row {
    name: &'static str,
    median: Duration,
    p90: Duration,
    max_rss_kib: i64,
}

/// Runs `program` with `stdin`, returning wall time and the child's peak RSS.
fn run_once(program: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &Path)]) -> (Duration, i64) {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let started = Instant::now();
    // Reaped below with wait4, which std's Child cannot do: it is the only
    // call that also returns the child's peak RSS.
    #[allow(clippy::zombie_processes)]
    let mut child = command.spawn().expect("spawn");
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin);
    }
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid with valid out-pointers; std's
    // Child is not waited on afterwards, so nothing reaps it twice.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let elapsed = started.elapsed();
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    (elapsed, usage.ru_maxrss)
}

fn measure(
    name: &'static str,
    runs: usize,
    mut prepare: impl FnMut(),
    program: &Path,
    args: &[&str],
    stdin: &[u8],
    env: &[(&str, &Path)],
) -> Row {
    let mut times = Vec::with_capacity(runs);
    let mut max_rss_kib = 0;
    for _ in 0..runs {
        prepare();
        let (elapsed, rss) = run_once(program, args, stdin, env);
        times.push(elapsed);
        max_rss_kib = max_rss_kib.max(rss);
    }
    times.sort();
    Row {
        name,
        median: times[runs / 2],
        p90: times[runs * 9 / 10],
        max_rss_kib,
    }
}

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
    let post_tool = Path::new(env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic"));
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
    let bash_input = br#"{"hook_event_name":"PostToolUse","session_id":"bench","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"","stderr":""}}"#;
    // The first run records the dirty files; the measured ones find nothing new.
    run_once(post_tool, &[], bash_input, &[("CLAUDE_PROJECT_DIR", &repo)]);

    let rows = vec![
        measure("/bin/true (baseline)", runs, || {}, true_bin, &[], b"", &[]),
        measure(
            "Stop hook, no loop",
            runs,
            || {},
            stop,
            &[],
            stop_input,
            &[("CLAUDE_PROJECT_DIR", &empty)],
        ),
        measure(
            "Stop hook, running loop (promise only)",
            runs,
            reset_loop,
            stop,
            &[],
            stop_input,
            &[("CLAUDE_PROJECT_DIR", &with_loop)],
        ),
        measure(
            "SessionStart hook, running loop",
            runs,
            reset_loop,
            session_start,
            &[],
            start_input,
            &[("CLAUDE_PROJECT_DIR", &with_loop)],
        ),
        measure(
            "git status (200 files, 3 dirty)",
            runs,
            || {},
            git,
            &[
                "-C",
                repo.to_str().unwrap(),
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--no-renames",
            ],
            b"",
            &[],
        ),
        measure(
            "PostToolUse Bash hook, command changed nothing",
            runs,
            || {},
            post_tool,
            &[],
            bash_input,
            &[("CLAUDE_PROJECT_DIR", &repo)],
        ),
    ];
    let baseline = rows[0].median;
    println!(
        "\n{runs} runs each, release build, {} CPUs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!("| what | median | p90 | × /bin/true | peak RSS |");
    println!("|---|---:|---:|---:|---:|");
    for row in &rows {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.1}× | {:.1} MB |",
            row.name,
            row.median.as_secs_f64() * 1000.0,
            row.p90.as_secs_f64() * 1000.0,
            row.median.as_secs_f64() / baseline.as_secs_f64(),
            row.max_rss_kib as f64 / 1024.0
        );
    }
    println!(
        "\ntargets: Stop hook with no loop within 3× of /bin/true and under 3 ms; peak RSS under 10 MB"
    );
    let _ = std::fs::remove_dir_all(&empty);
    let _ = std::fs::remove_dir_all(&with_loop);
    let _ = std::fs::remove_dir_all(&repo);
}
