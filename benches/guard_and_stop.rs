//! How long the pre-tool guard and the Stop hook take as whole processes,
//! beside `/bin/true` (the floor: starting any process at all).
//!
//! The guard runs before every Bash, Write, Edit, Agent and MCP call, so
//! its target is within 3x of `/bin/true` and under 3 ms when no task is
//! active. The Stop hook is measured with a 50-step task and an
//! `events.jsonl` of 100,000 lines, next to the same task with an empty log:
//! equal times show that it never reads the log.
//!
//! `cargo bench --bench guard_and_stop` (release build). `BENCH_RUNS=N`
//! changes the number of runs per case (default 200).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSION: &str = "205cbbdd-a334-4456-9333-f0dfc3cbd802";

struct Case {
    label: String,
    program: PathBuf,
    args: Vec<String>,
    project: PathBuf,
    stdin: String,
}

struct Timing {
    median: Duration,
    p95: Duration,
    mean: Duration,
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let root = std::env::temp_dir().join(format!("ralph-bench-{}", std::process::id()));
    let guard = PathBuf::from(env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard"));
    let stop = PathBuf::from(env!("CARGO_BIN_EXE_ralph-stop-loop-controller"));
    let bin_true = PathBuf::from("/bin/true");

    let empty = project(&root, "empty");
    let with_task = project(&root, "task");
    write_task(&with_task, 50);
    let big_log = project(&root, "task-big-log");
    write_task(&big_log, 50);
    write_events(&big_log, 100_000);

    let bash = |project: &Path, command: &str| {
        payload(
            project,
            "PreToolUse",
            &format!(
                r#""tool_name":"Bash","tool_input":{{"command":{}}},"tool_use_id":"toolu_1""#,
                serde_json::to_string(command).unwrap()
            ),
        )
    };
    let stop_input = |project: &Path| {
        payload(
            project,
            "Stop",
            r#""stop_hook_active":false,"last_assistant_message":"done","background_tasks":[],"session_crons":[]"#,
        )
    };
    let cases = vec![
        Case {
            label: "/bin/true (baseline)".into(),
            program: bin_true.clone(),
            args: vec![],
            project: empty.clone(),
            stdin: bash(&empty, "cargo test"),
        },
        Case {
            label: "guard: Read, no rule looks at it".into(),
            program: guard.clone(),
            args: vec![],
            project: empty.clone(),
            stdin: payload(
                &empty,
                "PreToolUse",
                r#""tool_name":"Read","tool_input":{"file_path":"/x"},"tool_use_id":"t""#,
            ),
        },
        Case {
            label: "guard: Bash `cargo test`, no task".into(),
            program: guard.clone(),
            args: vec![],
            project: empty.clone(),
            stdin: bash(&empty, "cargo test"),
        },
        Case {
            label: "guard: Bash `task complete`, no task".into(),
            program: guard.clone(),
            args: vec![],
            project: empty.clone(),
            stdin: bash(&empty, "ralph-hooks task complete"),
        },
        Case {
            label: "guard: Bash `cargo test`, 50-step task".into(),
            program: guard.clone(),
            args: vec![],
            project: with_task.clone(),
            stdin: bash(&with_task, "cargo test"),
        },
        Case {
            label: "guard: `task complete` denied, 50 steps".into(),
            program: guard.clone(),
            args: vec![],
            project: with_task.clone(),
            stdin: bash(&with_task, "cd x && ralph-hooks task complete"),
        },
        Case {
            label: "stop: no state".into(),
            program: stop.clone(),
            args: vec![],
            project: empty.clone(),
            stdin: stop_input(&empty),
        },
        Case {
            label: "stop: 50-step task, empty events.jsonl".into(),
            program: stop.clone(),
            args: vec![],
            project: with_task.clone(),
            stdin: stop_input(&with_task),
        },
        Case {
            label: "stop: 50-step task, 100k-line events.jsonl".into(),
            program: stop.clone(),
            args: vec![],
            project: big_log.clone(),
            stdin: stop_input(&big_log),
        },
        Case {
            label: "reference: `cat` of that events.jsonl".into(),
            program: PathBuf::from("/bin/cat"),
            args: vec![
                big_log
                    .join(".claude/orchestrator/events.jsonl")
                    .display()
                    .to_string(),
            ],
            project: big_log.clone(),
            stdin: String::new(),
        },
    ];

    // Round-robin over the cases, so that load from other processes on the
    // machine falls on every case alike rather than on whichever ran then.
    for case in &cases {
        run_once(case); // warms the page cache
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(runs); cases.len()];
    for _ in 0..runs {
        for (case, times) in cases.iter().zip(samples.iter_mut()) {
            times.push(run_once(case));
        }
    }
    let results: Vec<(&Case, Timing)> = cases
        .iter()
        .zip(samples)
        .map(|(case, times)| (case, timing(times)))
        .collect();
    let baseline = results[0].1.median;
    println!("\n{runs} runs per case, whole process (spawn, stdin, wait)\n");
    println!(
        "| {:<44} | {:>9} | {:>9} | {:>9} | {:>13} |",
        "case", "median", "p95", "mean", "vs /bin/true"
    );
    println!(
        "|{:-<46}|{:->11}|{:->11}|{:->11}|{:->15}|",
        "", "", "", "", ""
    );
    for (case, timing) in &results {
        println!(
            "| {:<44} | {:>9} | {:>9} | {:>9} | {:>12.1}x |",
            case.label,
            ms(timing.median),
            ms(timing.p95),
            ms(timing.mean),
            timing.median.as_secs_f64() / baseline.as_secs_f64()
        );
    }
    let log_lines = std::fs::read_to_string(big_log.join(".claude/orchestrator/events.jsonl"))
        .map(|text| text.lines().count())
        .unwrap_or(0);
    println!(
        "\nevents.jsonl of the big-log case ends with {log_lines} lines (100,000 + one per stop)"
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn timing(mut times: Vec<Duration>) -> Timing {
    times.sort();
    let total: Duration = times.iter().sum();
    Timing {
        median: times[times.len() / 2],
        p95: times[(times.len() * 95 / 100).min(times.len() - 1)],
        mean: total / times.len() as u32,
    }
}

fn run_once(case: &Case) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(&case.program)
        .args(&case.args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CLAUDE_PROJECT_DIR", &case.project)
        .current_dir(&case.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    // /bin/true may exit before reading; a broken pipe is fine then.
    let _ = child.stdin.take().unwrap().write_all(case.stdin.as_bytes());
    child.wait().expect("wait");
    start.elapsed()
}

fn project(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn payload(project: &Path, event: &str, fields: &str) -> String {
    format!(
        r#"{{"session_id":"{SESSION}","transcript_path":"{}/transcript.jsonl","cwd":"{}","permission_mode":"default","hook_event_name":"{event}",{fields}}}"#,
        project.display(),
        project.display()
    )
}

fn write_task(project: &Path, n_steps: usize) {
    let state = project.join(".claude/orchestrator/tasks");
    std::fs::create_dir_all(&state).unwrap();
    let mut text = format!(
        "# Task: task_bench\n\n## Metadata\n\n- **Status:** in_progress\n- **Priority:** high\n- **Created:** 2026-11-21T11:00:00.000Z\n- **Session:** {SESSION}\n\n## Description\n\nA long task\n\n## Steps\n\n"
    );
    for i in 1..=n_steps {
        let marker = match i {
            1..=10 => 'x',
            11 => '>',
            _ => ' ',
        };
        text.push_str(&format!(
            "- [{marker}] (s{i}) step number {i} of the benchmark task\n"
        ));
    }
    text.push_str(
        "\n## Progress\n\n- Task started\n\n## Last Activity\n\n2026-11-21T11:30:00.000Z\n",
    );
    std::fs::write(state.join("task_bench.md"), text).unwrap();
    std::fs::write(
        state.join("active.json"),
        r#"{"version":1,"task_id":"task_bench"}"#,
    )
    .unwrap();
}

fn write_events(project: &Path, n_lines: usize) {
    let path = project.join(".claude/orchestrator/events.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..n_lines {
        writeln!(
            file,
            r#"{{"type":"task_step_update","agentId":"{SESSION}","timestamp":"2026-11-21T11:00:00.000Z","data":{{"event":"step_completed","stepId":"s{}","stepsProgress":{{"total":50,"done":10,"inProgress":1,"pending":39,"skipped":0}}}},"taskId":"task_bench"}}"#,
            i % 50
        )
        .unwrap();
    }
}
