//! `ralph-hooks monitor`: the numbers it has targets for.
//!
//! - `GET /api/agents/:id/tasks` over 1,000 task files, warm (p50/p99),
//!   beside `GET …/current` (one task) and the cold first request;
//! - a CLI step change (`ralph-hooks task step add`) to its
//!   `task_step_update` on a WebSocket (p50/p99), beside the CLI command's
//!   own run time (the part of that delay that is not the monitor's);
//! - the server's RSS, idle after start-up and after the load;
//! - its CPU while idle (nothing changing) over 1,000 task files and over
//!   one task of 5,000 steps, beside an idle `sleep` (what costs nothing);
//! - the size of each binary (the hooks must not grow: compare with a
//!   build of `main`, see docs/performance.md).
//!
//! Run with `cargo bench --bench monitor` (release build). `BENCH_RUNS=N`
//! changes the number of requests/changes per row (default 300/60).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TASKS: usize = 1000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn temp_project() -> PathBuf {
    let path = std::env::temp_dir().join(format!("ralph-bench-monitor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path.canonicalize().unwrap()
}

/// 1,000 task files as the hooks write them, each with four steps.
fn seed_tasks(project: &Path) {
    let tasks = project.join(".claude/orchestrator/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    for n in 0..TASKS {
        let status = match n % 10 {
            0 => "in_progress",
            1 => "blocked",
            2..=6 => "completed",
            _ => "pending",
        };
        let text = format!(
            "# Task: task_bench_{n:04}\n\n## Metadata\n- **Status:** {status}\n- **Priority:** medium\n- **Created:** 2026-02-13T12:00:00.000Z\n\n## Description\nBenchmark task number {n}, with a description of ordinary length\n\n## Steps\n- [x] (s1) read the code\n- [>] (s2) write the change\n- [ ] (s3) test it\n- [-] (s4) skipped step\n\n## Progress\n- Task started\n- [s1] read the code — done\n\n## Last Activity\n2026-02-13T12:30:00.000Z\n"
        );
        std::fs::write(tasks.join(format!("task_bench_{n:04}.md")), text).unwrap();
    }
}

fn ralph_hooks(project: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ralph-hooks"));
    command
        .env("CLAUDE_PROJECT_DIR", project)
        .env("RALPH_HOOKS_DAEMON", "0")
        .env_remove("RALPH_HOOKS_NOW")
        .current_dir(project);
    command
}

struct Monitor {
    child: Child,
    port: u16,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn start_monitor(project: &Path) -> Monitor {
    let mut child = ralph_hooks(project)
        .args(["monitor", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the monitor");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    std::thread::spawn(move || for _ in lines {});
    let base = first.trim_start_matches("Monitor: ");
    let port = base.split("#token=").next().unwrap().trim_end_matches('/');
    let port: u16 = port.rsplit(':').next().unwrap().parse().unwrap();
    Monitor { child, port }
}

fn get(port: u16, path: &str) -> (u16, usize) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response.len())
}

fn time_gets(port: u16, path: &str, runs: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let (status, _) = get(port, path);
        times.push(started.elapsed());
        assert_eq!(status, 200, "{path}");
    }
    times.sort();
    times
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) of `pid` so far, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(close) = stat.rfind(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
    let ticks: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf(3) has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks as f64 / per_second
}

/// The share of a core `pid` uses over 10 s in which nothing changes.
fn idle_cpu(pid: u32) -> f64 {
    let window = Duration::from_secs(10);
    let before = cpu_secs(pid);
    std::thread::sleep(window);
    (cpu_secs(pid) - before) / window.as_secs_f64() * 100.0
}

/// A monitor over one task of 5,000 steps (the case that burned a core
/// when its own reads woke the watcher), idle.
fn idle_cpu_one_big_task() -> f64 {
    let project = temp_project().with_extension("steps");
    let tasks = project.join(".claude/orchestrator/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let mut text = "# Task: task_bench_steps\n\n## Metadata\n- **Status:** in_progress\n- **Priority:** medium\n- **Created:** 2026-02-13T12:00:00.000Z\n\n## Description\nMany steps\n\n## Steps\n".to_string();
    for n in 1..=5000 {
        text.push_str(&format!("- [ ] (s{n}) step number {n}\n"));
    }
    text.push_str("\n## Progress\n- Task started\n");
    std::fs::write(tasks.join("task_bench_steps.md"), text).unwrap();
    let monitor = start_monitor(&project);
    // Start-up and the first scan are not idle.
    std::thread::sleep(Duration::from_secs(2));
    let cpu = idle_cpu(monitor.child.id());
    drop(monitor);
    let _ = std::fs::remove_dir_all(&project);
    cpu
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let changes = (runs / 5).max(10);
    let project = temp_project();
    seed_tasks(&project);
    // One active task for the CLI's step changes.
    std::fs::write(
        project.join(".claude/orchestrator/tasks/active.json"),
        r#"{"version":1,"task_id":"task_bench_0000"}"#,
    )
    .unwrap();
    let agent = project.file_name().unwrap().to_string_lossy().into_owned();
    let monitor = start_monitor(&project);
    std::thread::sleep(Duration::from_millis(300));
    let idle_start = rss_kib(monitor.child.id());

    let tasks_path = format!("/api/agents/{agent}/tasks");
    let cold = time_gets(monitor.port, &tasks_path, 1)[0];
    let (_, bytes) = get(monitor.port, &tasks_path);
    let warm = time_gets(monitor.port, &tasks_path, runs);
    let one = time_gets(monitor.port, &format!("/api/agents/{agent}/current"), runs);

    // CLI change → WebSocket event.
    let stream = TcpStream::connect(("127.0.0.1", monitor.port)).unwrap();
    let (mut socket, _) =
        tungstenite::client(format!("ws://127.0.0.1:{}/ws", monitor.port), stream).unwrap();
    socket
        .get_mut()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _hello = socket.read().unwrap();
    let mut delays = Vec::new();
    let mut cli_times = Vec::new();
    for n in 0..changes {
        let started = Instant::now();
        let status = ralph_hooks(&project)
            .args(["task", "step", "add", &format!("bench step {n}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        cli_times.push(started.elapsed());
        assert!(status.success());
        loop {
            let message = socket.read().expect("a WebSocket event within 5 s");
            if let tungstenite::Message::Text(text) = message
                && text.contains("\"step_added\"")
            {
                delays.push(started.elapsed());
                break;
            }
        }
    }
    delays.sort();
    cli_times.sort();
    std::thread::sleep(Duration::from_millis(500));
    let idle_after = rss_kib(monitor.child.id());
    drop(socket);
    let idle_tasks = idle_cpu(monitor.child.id());
    drop(monitor);
    let _ = std::fs::remove_dir_all(&project);
    let idle_steps = idle_cpu_one_big_task();
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let idle_sleep = idle_cpu(sleeper.id());
    let _ = sleeper.kill();
    let _ = sleeper.wait();

    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "\nralph-hooks monitor ({TASKS} task files, {runs} requests, {changes} changes)"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   baseline / target",
        "measure", "p50", "p99"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   target p99 ≤ 20 ms; body {} KiB",
        "GET /agents/:id/tasks (1,000 tasks, warm)",
        ms(percentile(&warm, 0.5)),
        ms(percentile(&warm, 0.99)),
        bytes / 1024
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   baseline: one task",
        "GET /agents/:id/current",
        ms(percentile(&one, 0.5)),
        ms(percentile(&one, 0.99))
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   every file parsed once",
        "GET /agents/:id/tasks (cold, first request)",
        ms(cold),
        "—"
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   target p99 ≤ 500 ms",
        "CLI step change → WebSocket event",
        ms(percentile(&delays, 0.5)),
        ms(percentile(&delays, 0.99))
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   baseline: part of the row above",
        "  of which the CLI command itself",
        ms(percentile(&cli_times, 0.5)),
        ms(percentile(&cli_times, 0.99))
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   target ≤ 30 MB",
        "RSS idle: after start / after the load",
        format!("{:.1} MB", idle_start as f64 / 1024.0),
        format!("{:.1} MB", idle_after as f64 / 1024.0)
    );
    let _ = writeln!(
        out,
        "{:<44} {:>10} {:>10}   baseline: idle `sleep` {:.2} %",
        "CPU idle, % of a core (1,000 tasks / 5,000 steps)",
        format!("{idle_tasks:.2} %"),
        format!("{idle_steps:.2} %"),
        idle_sleep
    );
    let _ = writeln!(
        out,
        "\nbinary sizes (the hooks must match a build of main):"
    );
    for (name, path) in [
        ("ralph-hooks", env!("CARGO_BIN_EXE_ralph-hooks")),
        (
            "ralph-session-start",
            env!("CARGO_BIN_EXE_ralph-session-start"),
        ),
        (
            "ralph-pre-tool-stop-guard",
            env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard"),
        ),
        (
            "ralph-stop-loop-controller",
            env!("CARGO_BIN_EXE_ralph-stop-loop-controller"),
        ),
        (
            "ralph-post-tool-lsp-diagnostic",
            env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic"),
        ),
    ] {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let _ = writeln!(out, "  {name:<32} {:>8} KiB", size / 1024);
    }
}
