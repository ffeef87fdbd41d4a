//! The default `ralph-hooks check` (the project's type checker and the
//! built-in ast-grep rules, cold, no daemon running) against what a user
//! would run instead: the checker's own command line and then
//! `ast-grep scan` with the same rules (the built-in Python rules as an
//! `sgconfig.yml`), on CPython's standard library at ~140, ~580 and ~2,000
//! files, checked by ty (the project's `ty.toml` chooses it).
//!
//! Rows, measured round-robin in one run (each round runs every row once,
//! so a busy machine weighs on all of them alike; medians):
//! - `ty check` alone, `ast-grep scan` alone, and the two one after the
//!   other, with `ruff check` between them where ruff is installed (`check`
//!   runs it beside ty): the user's alternative, the baseline;
//! - `ralph-hooks check` in its own process (`RALPH_HOOKS_DAEMON=0`), with
//!   and without the rules;
//! - `ralph-hooks check` as a user runs it, through a daemon it starts
//!   (stopped before each run). Its CPU column is blank: the daemon is not
//!   our child, so its CPU time is not in our `getrusage`.
//!
//! Wall time and CPU time (user + system of the process and every
//! descendant it waited for) are both printed: on a shared machine the CPU
//! time is the steadier figure. The load average is printed before and
//! after.
//!
//! Run with `cargo bench --bench cold_check`. `BENCH_RUNS=N` (default 5),
//! `BENCH_SIZES=small,whole,large`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/procs.rs"]
mod procs;

const CLI: &str = env!("CARGO_BIN_EXE_ralph-hooks");

/// One row: its name, how to make its command, and whether it runs through
/// a daemon (whose CPU time is not ours to count).
type Row<'a> = (&'a str, Box<dyn Fn() -> Command + 'a>, bool);
/// The built-in rules, as the binary embeds them.
const RULES_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/astgrep/rules");

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let sizes: Vec<String> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "small,whole,large".into())
        .split(',')
        .map(str::to_string)
        .collect();
    let (Some(ty), Some(ast_grep)) = (which("ty"), which("ast-grep").or_else(|| which("sg")))
    else {
        println!("skipped: ty and ast-grep must both be on PATH");
        return;
    };
    let ruff = which("ruff");
    let Some(stdlib) = corpus::stdlib() else {
        println!("skipped: no python3 standard library");
        return;
    };
    let sg_config = python_rules_config();
    println!(
        "cold `check` against `ty check` + `ast-grep scan`: {runs} rounds, medians; {} cores; load before: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average()
    );
    println!();
    println!("| files | what | wall | × user's | CPU | × user's |");
    println!("|---:|---|---:|---:|---:|---:|");
    for size in &sizes {
        let root = temp_dir(&format!("py-{size}"));
        corpus::python_corpus(&stdlib, size, ("ty.toml", ""), &root);
        let files = corpus::count_files(&root, "py");
        let config = sg_config.join("sgconfig.yml");
        let config = config.to_str().unwrap();
        // `check` runs ruff beside ty where ruff is installed, so the
        // user's own equivalent runs it too.
        let user = match &ruff {
            Some(ruff) => format!(
                "{} check --output-format concise; {} check --no-cache --quiet .; {} scan -c {config} .",
                ty.display(),
                ruff.display(),
                ast_grep.display()
            ),
            None => format!(
                "{} check --output-format concise; {} scan -c {config} .",
                ty.display(),
                ast_grep.display()
            ),
        };
        let user_name = if ruff.is_some() {
            "`ty check`, `ruff check`, then `ast-grep scan` (the user's)"
        } else {
            "`ty check` then `ast-grep scan` (the user's)"
        };
        let rows: Vec<Row> = vec![
            (
                user_name,
                Box::new(|| {
                    let mut command = Command::new("sh");
                    command.args(["-c", &user]).current_dir(&root);
                    command
                }),
                false,
            ),
            (
                "`ty check` alone",
                Box::new(|| {
                    let mut command = Command::new(&ty);
                    command
                        .args(["check", "--output-format", "concise"])
                        .current_dir(&root);
                    command
                }),
                false,
            ),
            (
                "`ast-grep scan` alone",
                Box::new(|| {
                    let mut command = Command::new(&ast_grep);
                    command.args(["scan", "-c", config, "."]).current_dir(&root);
                    command
                }),
                false,
            ),
            (
                "`ralph-hooks check`, own process",
                Box::new(|| ours(&root, false, true)),
                false,
            ),
            (
                "`ralph-hooks check --no-ast-grep`, own process",
                Box::new(|| ours(&root, false, false)),
                false,
            ),
            (
                "`ralph-hooks check`, through a daemon it starts",
                Box::new(|| ours(&root, true, true)),
                true,
            ),
        ];
        let mut wall: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
        let mut cpu: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
        for _ in 0..runs {
            for (index, (_, command, daemon)) in rows.iter().enumerate() {
                stop_daemon(&root);
                let (elapsed, used, _) = procs::run_command(command(), b"");
                wall[index].push(elapsed);
                if !daemon {
                    cpu[index].push(used);
                }
            }
        }
        stop_daemon(&root);
        let median = |times: &mut Vec<Duration>| {
            times.sort();
            times.get(times.len() / 2).copied()
        };
        let medians: Vec<(Duration, Option<Duration>)> = wall
            .iter_mut()
            .zip(cpu.iter_mut())
            .map(|(w, c)| (median(w).unwrap(), median(c)))
            .collect();
        let (user_wall, user_cpu) = medians[0];
        for ((name, _, _), (wall, cpu)) in rows.iter().zip(&medians) {
            println!(
                "| {files} | {name} | {} | {:.2}× | {} | {} |",
                secs(*wall),
                wall.as_secs_f64() / user_wall.as_secs_f64(),
                cpu.map_or("—".into(), secs),
                cpu.zip(user_cpu).map_or("—".into(), |(c, u)| format!(
                    "{:.2}×",
                    c.as_secs_f64() / u.as_secs_f64()
                )),
            );
        }
        println!(
            "| | (our own split, one more run: {}) | | | | |",
            split(&root)
        );
        let _ = std::fs::remove_dir_all(&root);
    }
    println!();
    println!(
        "Load after: {}. Target: ours ≤ 1.2× the user's.",
        load_average()
    );
    let _ = std::fs::remove_dir_all(&sg_config);
}

/// `ralph-hooks check` on `root`, in its own process or through a daemon.
fn ours(root: &Path, daemon: bool, rules: bool) -> Command {
    let mut command = Command::new(CLI);
    command.arg("check").current_dir(root);
    if !rules {
        command.arg("--no-ast-grep");
    }
    command.env("CLAUDE_PROJECT_DIR", root);
    if daemon {
        command.env_remove("RALPH_HOOKS_DAEMON");
    } else {
        command.env("RALPH_HOOKS_DAEMON", "0");
    }
    command
}

/// Where our own time went in one more cold run: the timings `--debug`
/// prints.
fn split(root: &Path) -> String {
    let output = ours(root, false, true)
        .arg("--debug")
        .output()
        .expect("ralph-hooks runs");
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .find_map(|line| {
            line.split_once("check: timings ")
                .map(|(_, t)| t.to_string())
        })
        .unwrap_or_else(|| "no timings printed".into())
}

/// An `sgconfig.yml` whose rules are the built-in Python ones (the other
/// languages' rules share ids, which `ast-grep scan` refuses in one
/// config, and match no `.py` file anyway).
fn python_rules_config() -> PathBuf {
    let dir = temp_dir("sgconfig");
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    for entry in std::fs::read_dir(RULES_DIR).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        if text.lines().any(|line| line.trim() == "language: python") {
            std::fs::write(rules.join(entry.file_name()), text).unwrap();
        }
    }
    std::fs::write(dir.join("sgconfig.yml"), "ruleDirs:\n  - rules\n").unwrap();
    dir
}

fn stop_daemon(root: &Path) {
    let _ = Command::new(CLI)
        .args(["daemon", "stop"])
        .env("CLAUDE_PROJECT_DIR", root)
        .current_dir(root)
        .output();
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

fn temp_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ralph-bench-cold-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
