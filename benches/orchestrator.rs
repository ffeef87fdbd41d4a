//! Benchmark of the orchestrator-file checks, printed as a table with a
//! baseline beside each row (never asserted: speed is reported, not tested).
//!
//! - `ralph-hooks validate` over 1,000 contract files (copies of the seed
//!   examples in both layouts), in files per second, beside `cat` reading
//!   the same files.
//! - `ralph-pre-tool-stop-guard` on a Write of a file that is not an
//!   orchestrator file, beside `/bin/true` fed the same stdin: the guard runs
//!   before every tool call, so its budget is 3x `/bin/true` and under 3 ms.
//! - The same guard on a Write of a contract file, which is parsed and checked.
//!
//! Run with `cargo bench --bench orchestrator`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const N_FILES: usize = 1_000;
const VALIDATE_RUNS: usize = 7;
const GUARD_RUNS: usize = 300;

fn main() {
    let root =
        std::env::temp_dir().join(format!("ralph-bench-orchestrator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let files = make_contract_files(&root);
    let validate = env!("CARGO_BIN_EXE_ralph-hooks");
    let guard = env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard");

    // Every copy is valid, so a non-zero exit would mean the benchmark
    // measures the wrong thing.
    let check = Command::new(validate)
        .arg("validate")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    let validate_times = time_runs(VALIDATE_RUNS, || {
        run_quiet(Command::new(validate).arg("validate").args(&files), b"")
    });
    let cat_times = time_runs(VALIDATE_RUNS, || {
        run_quiet(Command::new("cat").args(&files), b"")
    });

    let project = root.join("project");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let other_write = write_input(&project, &project.join("src/main.rs"), "fn main() {}\n");
    let contract_text = std::fs::read_to_string(fixtures().join(
        "seed-001/.claude/orchestrator/sessions/a1b2c3d4/contracts/R1/T1/T1-S2/test-result.yaml",
    ))
    .unwrap();
    let contract_write = write_input(
        &project,
        &project
            .join(".claude/orchestrator/sessions/a1b2c3d4/contracts/R1/T1/T1-S2/test-result.yaml"),
        &contract_text,
    );
    let guard_command = || {
        let mut command = Command::new(guard);
        command
            .env_remove("RALPH_HOOKS_DEBUG")
            .env("CLAUDE_PROJECT_DIR", &project);
        command
    };
    let true_times = time_runs(GUARD_RUNS, || {
        run_quiet(&mut Command::new("/bin/true"), other_write.as_bytes())
    });
    let guard_other_times = time_runs(GUARD_RUNS, || {
        run_quiet(&mut guard_command(), other_write.as_bytes())
    });
    let guard_contract_times = time_runs(GUARD_RUNS, || {
        run_quiet(&mut guard_command(), contract_write.as_bytes())
    });

    let validate_median = median(&validate_times);
    let cat_median = median(&cat_times);
    let true_median = median(&true_times);
    let guard_median = median(&guard_other_times);
    println!();
    println!("| benchmark | runs | median | p95 | baseline (median) | ratio | result |");
    println!("| --- | ---: | ---: | ---: | --- | ---: | --- |");
    println!(
        "| `ralph-hooks validate` × {N_FILES} contract files | {VALIDATE_RUNS} | {} | {} | `cat` same files: {} | {:.1}x | {:.0} files/s |",
        ms(validate_median),
        ms(p95(&validate_times)),
        ms(cat_median),
        ratio(validate_median, cat_median),
        N_FILES as f64 / validate_median.as_secs_f64()
    );
    println!(
        "| guard, Write of a non-contract file | {GUARD_RUNS} | {} | {} | `/bin/true` same stdin: {} | {:.2}x | budget ≤ 3x and < 3 ms: {} |",
        ms(guard_median),
        ms(p95(&guard_other_times)),
        ms(true_median),
        ratio(guard_median, true_median),
        if ratio(guard_median, true_median) <= 3.0 && guard_median < Duration::from_millis(3) {
            "within"
        } else {
            "OVER"
        }
    );
    println!(
        "| guard, Write of a valid test-result.yaml | {GUARD_RUNS} | {} | {} | `/bin/true` same stdin: {} | {:.2}x | parsed and checked |",
        ms(median(&guard_contract_times)),
        ms(p95(&guard_contract_times)),
        ms(true_median),
        ratio(median(&guard_contract_times), true_median)
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("contracts")
}

/// 1,000 files: copies of the 14 seed examples, each set in its own
/// project so that the ids in paths keep matching the ids inside.
fn make_contract_files(root: &Path) -> Vec<PathBuf> {
    let originals = files_under(&fixtures());
    let mut files = Vec::new();
    let mut copy = 0;
    while files.len() < N_FILES {
        for original in &originals {
            if files.len() == N_FILES {
                break;
            }
            let relative = original.strip_prefix(fixtures()).unwrap();
            let target = root.join(format!("copy{copy:03}")).join(relative);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(original, &target).unwrap();
            files.push(target);
        }
        copy += 1;
    }
    files
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn write_input(project: &Path, file: &Path, content: &str) -> String {
    serde_json::json!({
        "session_id": "bench",
        "cwd": project,
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Write",
        "tool_input": {"file_path": file, "content": content},
        "tool_use_id": "toolu_bench",
    })
    .to_string()
}

fn run_quiet(command: &mut Command, stdin: &[u8]) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // /bin/true may exit before reading; a broken pipe is expected then.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait().unwrap();
}

fn time_runs(runs: usize, mut run: impl FnMut()) -> Vec<Duration> {
    run(); // warm the page cache and the binary
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect()
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn p95(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)]
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn ms(time: Duration) -> String {
    format!("{:.2} ms", time.as_secs_f64() * 1000.0)
}
