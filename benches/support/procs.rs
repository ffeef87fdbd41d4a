//! Timing whole processes, shared by the start-up benches: wall time, CPU
//! time (user + system) and peak RSS per run, rows measured round-robin.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Row {
    pub name: String,
    pub median: Duration,
    pub cpu_median: Duration,
    pub p90: Duration,
    pub max_rss_kib: i64,
}

/// One run: wall time, the child's CPU time (user + system), peak RSS.
pub fn run_once(
    program: &Path,
    args: &[&str],
    stdin: &[u8],
    env: &[(&str, &Path)],
) -> (Duration, Duration, i64) {
    let mut command = Command::new(program);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    run_command(command, stdin)
}

/// One run of a prepared command (its folder, environment): wall time, CPU
/// time (user + system) of the child and of every descendant it waited for,
/// peak RSS.
pub fn run_command(mut command: Command, stdin: &[u8]) -> (Duration, Duration, i64) {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
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
    let cpu = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (
        elapsed,
        cpu(usage.ru_utime) + cpu(usage.ru_stime),
        usage.ru_maxrss,
    )
}

/// One row of the table: a binary, its input, and what to reset before
/// each run.
#[derive(Clone, Copy)]
pub struct Case<'a> {
    pub name: &'a str,
    pub prepare: &'a dyn Fn(),
    pub program: &'a Path,
    pub args: &'a [&'a str],
    pub stdin: &'a [u8],
    pub env: &'a [(&'a str, &'a Path)],
}

/// Runs every case `runs` times, round-robin: on a busy machine each row
/// sees the same load over the same stretch of time, so the ratios to
/// `/bin/true` stay fair even when the absolute times drift.
pub fn measure_all(cases: &[Case], runs: usize) -> Vec<Row> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); cases.len()];
    let mut cpu_times: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); cases.len()];
    let mut max_rss_kib = vec![0; cases.len()];
    for _ in 0..runs {
        for (index, case) in cases.iter().enumerate() {
            (case.prepare)();
            let (elapsed, cpu, rss) = run_once(case.program, case.args, case.stdin, case.env);
            times[index].push(elapsed);
            cpu_times[index].push(cpu);
            max_rss_kib[index] = max_rss_kib[index].max(rss);
        }
    }
    cases
        .iter()
        .zip(times)
        .zip(cpu_times)
        .zip(max_rss_kib)
        .map(|(((case, mut times), mut cpu_times), max_rss_kib)| {
            times.sort();
            cpu_times.sort();
            Row {
                name: case.name.to_string(),
                median: times[runs / 2],
                cpu_median: cpu_times[runs / 2],
                p90: times[runs * 9 / 10],
                max_rss_kib,
            }
        })
        .collect()
}

/// Prints the rows as a Markdown table, the first row being the baseline.
pub fn print_table(rows: &[Row], runs: usize) {
    let baseline = rows[0].median;
    let cpu_baseline = rows[0].cpu_median.max(Duration::from_micros(1));
    println!(
        "\n{runs} runs each, round-robin, release build, {} CPUs",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!("| what | median | p90 | × /bin/true | CPU median | CPU × /bin/true | peak RSS |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.1}× | {:.2} ms | {:.1}× | {:.1} MB |",
            row.name,
            row.median.as_secs_f64() * 1000.0,
            row.p90.as_secs_f64() * 1000.0,
            row.median.as_secs_f64() / baseline.as_secs_f64(),
            row.cpu_median.as_secs_f64() * 1000.0,
            row.cpu_median.as_secs_f64() / cpu_baseline.as_secs_f64(),
            row.max_rss_kib as f64 / 1024.0
        );
    }
}
