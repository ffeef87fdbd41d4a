//! What answering from the disk as it is now costs (issue 30, item 1), in
//! one run on the running `python3`'s whole standard library (tests
//! included, ~2,000 files):
//! - the checker's own command line (`ty check`, or `pyright` with
//!   `BENCH_CHECKER=pyright`);
//! - `ralph-hooks check` through a fresh daemon (cold);
//! - warm, nothing changed (the daemon walks the server's files before it
//!   answers);
//! - warm after one file changed outside the hooks (a shell append);
//! - the walk itself ([`DiskView::refresh`] over the same tree, nothing
//!   changed): what the freshness check adds to every warm answer.
//!
//! Run with `cargo bench --bench fresh`. `BENCH_RUNS=N` (default 3) sets
//! the runs per cell (medians); `BENCH_STDLIB=DIR` picks the library.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ralph_hooks::daemon::fresh::DiskView;
use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let checker = std::env::var("BENCH_CHECKER").unwrap_or_else(|_| "ty".into());
    let Some(stdlib) = stdlib() else {
        println!("no python3 standard library: nothing to measure");
        return;
    };
    let (config, cli): ((&str, &str), Vec<&str>) = match checker.as_str() {
        "pyright" => (
            ("pyrightconfig.json", "{}"),
            vec!["pyright", "--outputjson"],
        ),
        _ => (
            ("ty.toml", ""),
            vec!["ty", "check", "--output-format", "concise"],
        ),
    };
    if which::which(cli[0]).is_err() {
        println!("{} is not installed: nothing to measure", cli[0]);
        return;
    }
    let root = std::env::temp_dir().join(format!("ralph-bench-fresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    copy_py(&stdlib, &root);
    std::fs::write(root.join(config.0), config.1).unwrap();
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(
        root.join(".claude/ralph-hooks.json"),
        r#"{"diagnostics": {"timeout_ms": 600000}}"#,
    )
    .unwrap();
    let files = count_py(&root);
    println!(
        "\n{checker} on the standard library ({files} files), {} CPUs shared with other work; medians of {runs}\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

    let cli_time = median((0..runs).map(|_| {
        let started = Instant::now();
        let _ = Command::new(cli[0])
            .args(&cli[1..])
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        started.elapsed()
    }));

    stop_daemon(&root);
    let (cold, cold_errors) = check(&root);
    wait_for_background_work(&root);
    let warm = median((0..runs.max(3)).map(|_| check(&root).0));
    let changed_file = root.join("json/decoder.py");
    let mut changed_errors = 0;
    let changed = median((0..runs.max(3)).map(|round| {
        let mut text = std::fs::read_to_string(&changed_file).unwrap();
        text.push_str(&format!("\nedited_{round}: int = \"not a number\"\n"));
        std::fs::write(&changed_file, text).unwrap();
        let (took, errors) = check(&root);
        changed_errors = errors;
        took
    }));
    stop_daemon(&root);

    let state = root.join(".claude/orchestrator");
    let mut view = DiskView::new(&root, &[".py".into(), ".pyi".into()], &[state]);
    view.refresh();
    let walk = median((0..10).map(|_| {
        let started = Instant::now();
        let changes = view.refresh();
        assert!(changes.is_empty(), "{changes:?}");
        started.elapsed()
    }));

    println!("| {checker}, {files} files | time | ÷ its CLI |");
    println!("|---|---:|---:|");
    println!("| `{}` | {} | 1.00× |", cli.join(" "), secs(cli_time));
    let rows = [
        ("`check`, fresh daemon (cold)", cold),
        ("`check`, warm, nothing changed", warm),
        ("`check`, warm, one file changed by the shell", changed),
    ];
    for (name, took) in rows {
        println!(
            "| {name} | {} | {:.2}× |",
            secs(took),
            took.as_secs_f64() / cli_time.as_secs_f64()
        );
    }
    println!(
        "| the freshness walk alone ({} files, nothing changed) | {:.1} ms | {:.3}× |",
        view.len(),
        walk.as_secs_f64() * 1000.0,
        walk.as_secs_f64() / cli_time.as_secs_f64()
    );
    println!(
        "\nerrors: cold {cold_errors}, after the changes {changed_errors} (one more per change)"
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn median(times: impl Iterator<Item = Duration>) -> Duration {
    let mut times: Vec<Duration> = times.collect();
    times.sort();
    times[times.len() / 2]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// `ralph-hooks check --json --no-ast-grep` through the project's daemon:
/// its time and its error count.
fn check(root: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let output = Command::new(CLI)
        .args(["check", "--json", "--no-ast-grep"])
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .env_remove("RALPH_HOOKS_DAEMON")
        .stdin(Stdio::null())
        .output()
        .expect("ralph-hooks runs");
    let took = started.elapsed();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let inconclusive = report["summary"]["inconclusive"].as_u64().unwrap_or(0);
    if inconclusive > 0 {
        eprintln!("warning: {inconclusive} inconclusive file(s)");
    }
    (took, report["summary"]["errors"].as_u64().unwrap_or(0))
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

/// Waits (up to `BENCH_BACKGROUND_SECS`, default 90) until the daemon's
/// servers are idle and, for a checker whose command line ran the cold
/// check (ty), its server knows the whole project — as between two Stops
/// of a loop.
fn wait_for_background_work(root: &Path) {
    let limit = std::env::var("BENCH_BACKGROUND_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(90);
    let until = Instant::now() + Duration::from_secs(limit);
    while Instant::now() < until {
        let output = Command::new(CLI)
            .args(["daemon", "status", "--json"])
            .current_dir(root)
            .env("CLAUDE_PROJECT_DIR", root)
            .stderr(Stdio::null())
            .output()
            .expect("ralph-hooks runs");
        let status: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
        let servers = status["status"]["servers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let settled = servers.iter().all(|server| {
            server["busy"] != true && (server["name"] != "ty" || server["knows_project"] == true)
        });
        if settled {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The standard library of the `python3` on PATH, or `BENCH_STDLIB` (a
/// Debian `python3` leaves the tests out: ~670 files; CPython's own
/// install keeps them: ~1,800).
fn stdlib() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BENCH_STDLIB") {
        return Some(PathBuf::from(path));
    }
    let output = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()[\"stdlib\"])",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    path.join("json/__init__.py").is_file().then_some(path)
}

/// Every `.py` file of the standard library but the installed packages.
fn copy_py(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    std::fs::create_dir_all(to).unwrap();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(text.as_ref(), "site-packages" | "__pycache__")
                && !text.starts_with("config-")
            {
                copy_py(&path, &to.join(&name));
            }
        } else if text.ends_with(".py") {
            let _ = std::fs::copy(&path, to.join(&name));
        }
    }
}

fn count_py(root: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                n += 1;
            }
        }
    }
    n
}
