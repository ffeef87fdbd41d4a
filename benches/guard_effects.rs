//! What the guard's check of a Bash command's effects costs each Bash call:
//! the snapshot in the PreToolUse guard and the comparison in the
//! PostToolUse hook, while a loop runs, beside the same two hooks with no
//! loop (where nothing is snapshotted), `/bin/true` and `git status` in the
//! same repository.
//!
//! The repository has many refs: 10,000 packed remote-tracking branches and
//! 200 loose ones with reflogs (what a busy clone accumulates between two
//! `git gc`s), and a second case with 5,000 loose ones (a clone that was
//! never packed: the check stats each loose ref). The state root holds a
//! running loop, an active task with open steps and 20 more tasks, a
//! 10,000-line `events.jsonl` and a 200 KB `diagnostics.json`.
//!
//! Each PreToolUse row is followed by the PostToolUse row of the same call
//! (same `tool_use_id`), so every check finds its snapshot.
//!
//! `cargo bench --bench guard_effects` (release build). `BENCH_RUNS=N`
//! changes the number of runs per row (default 200).

#[path = "support/procs.rs"]
mod procs;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use procs::{Case, measure_all, print_table, run_once};

const SESSION: &str = "bench";

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(repo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git");
    assert!(status.success(), "git {args:?}");
}

/// A git project with `packed` packed and `loose` loose remote-tracking
/// refs; with `supervised`, a running loop and a task in its state root.
fn project(root: &Path, label: &str, packed: usize, loose: usize, supervised: bool) -> PathBuf {
    let dir = root.join(label);
    std::fs::create_dir_all(dir.join(".claude/orchestrator/tasks")).unwrap();
    for i in 0..200 {
        std::fs::write(dir.join(format!("m{i}.py")), format!("x{i} = {i}\n")).unwrap();
    }
    std::fs::write(dir.join(".gitignore"), ".claude/\n").unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "init"]);
    let head = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&dir)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let git_dir = dir.join(".git");
    let mut packed_refs = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    for i in 0..packed {
        packed_refs.push_str(&format!("{head} refs/remotes/origin/branch-{i:05}\n"));
    }
    std::fs::write(git_dir.join("packed-refs"), packed_refs).unwrap();
    for i in 0..loose {
        let name = format!("refs/remotes/origin/loose-{i:05}");
        let path = git_dir.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{head}\n")).unwrap();
        let log = git_dir.join("logs").join(&name);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(
            &log,
            format!(
                "{0} {head} b <b@b> 1795000000 +0000\tfetch: storing head\n",
                "0".repeat(40)
            ),
        )
        .unwrap();
    }
    for i in 0..3 {
        std::fs::write(dir.join(format!("m{i}.py")), format!("x{i} = {i} + 1\n")).unwrap();
    }
    if supervised {
        let state = dir.join(".claude/orchestrator");
        let loop_json = serde_json::json!({
            "version": 1, "id": "loop-20261121T110000Z-0001", "status": "RUNNING", "goal": "bench",
            "promise": "DONE", "checks": [], "check_timeout_secs": 300, "diagnostics": false, "no_warnings": false,
            "iteration": 3, "max_iterations": 10, "session_id": SESSION, "project_root": dir.display().to_string(),
            "started_at": "2026-11-21T11:00:00Z", "updated_at": "2026-11-21T11:00:00Z", "ended_at": null,
            "completion_reason": null, "consecutive_blocks": 0, "touched_files": [], "history": []
        });
        std::fs::write(state.join("loop.json"), loop_json.to_string()).unwrap();
        for i in 0..21 {
            let id = format!("task_20261121T1100{i:02}Z");
            let steps: String = (1..=10)
                .map(|n| format!("- [{}] (s{n}) step {n}\n", if n < 4 { "x" } else { " " }))
                .collect();
            std::fs::write(
                state.join(format!("tasks/{id}.md")),
                format!("# Task: {id}\n\n## Metadata\n\n- **Status:** in_progress\n- **Priority:** high\n- **Created:** 2026-11-21T11:00:00.000Z\n\n## Description\n\nbench\n\n## Steps\n\n{steps}\n## Progress\n\n- Task started\n"),
            )
            .unwrap();
        }
        std::fs::write(
            state.join("tasks/active.json"),
            r#"{"version": 1, "task_id": "task_20261121T110000Z"}"#,
        )
        .unwrap();
        let events: String = (0..10_000)
            .map(|i| format!("{{\"type\":\"task_update\",\"n\":{i},\"data\":{{\"event\":\"progress_added\"}}}}\n"))
            .collect();
        std::fs::write(state.join("events.jsonl"), events).unwrap();
        let diagnostics = format!(
            "{{\"version\":1,\"files\":{{\"x\":\"{}\"}}}}",
            "d".repeat(200_000)
        );
        std::fs::write(state.join("diagnostics.json"), diagnostics).unwrap();
        std::fs::write(dir.join(".lsp.json"), "{}").unwrap();
        std::fs::write(dir.join(".claude/settings.json"), "{\"hooks\":{}}").unwrap();
    }
    dir
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let guard = Path::new(env!("CARGO_BIN_EXE_ralph-pre-tool-stop-guard"));
    let post = Path::new(env!("CARGO_BIN_EXE_ralph-post-tool-lsp-diagnostic"));
    let git_bin = which::which("git").expect("git on PATH");
    let root = std::env::temp_dir().join(format!("ralph-bench-effects-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let state_home = root.join("xdg-state");
    std::fs::create_dir_all(&state_home).unwrap();

    let idle = project(&root, "idle", 10_000, 200, false);
    let busy = project(&root, "busy", 10_000, 200, true);
    let loose = project(&root, "loose", 0, 5_000, true);

    let pre_input = |dir: &Path| {
        format!(
            r#"{{"hook_event_name":"PreToolUse","session_id":"{SESSION}","cwd":"{}","tool_name":"Bash","tool_input":{{"command":"cargo test --quiet"}},"tool_use_id":"toolu_bench"}}"#,
            dir.display()
        )
        .into_bytes()
    };
    let post_input = |dir: &Path| {
        format!(
            r#"{{"hook_event_name":"PostToolUse","session_id":"{SESSION}","cwd":"{}","tool_name":"Bash","tool_input":{{"command":"cargo test --quiet"}},"tool_response":{{"stdout":"ok","stderr":""}},"tool_use_id":"toolu_bench"}}"#,
            dir.display()
        )
        .into_bytes()
    };
    let inputs: Vec<(Vec<u8>, Vec<u8>)> = [&idle, &busy, &loose]
        .iter()
        .map(|dir| (pre_input(dir), post_input(dir)))
        .collect();
    let env_for = |dir: &Path| -> Vec<(&'static str, PathBuf)> {
        vec![
            ("CLAUDE_PROJECT_DIR", dir.to_path_buf()),
            ("XDG_STATE_HOME", state_home.clone()),
            ("RALPH_HOOKS_DAEMON", PathBuf::from("0")),
        ]
    };
    let envs: Vec<Vec<(&str, PathBuf)>> =
        [&idle, &busy, &loose].iter().map(|d| env_for(d)).collect();
    let env_refs: Vec<Vec<(&str, &Path)>> = envs
        .iter()
        .map(|env| env.iter().map(|(k, v)| (*k, v.as_path())).collect())
        .collect();
    // Warm up: the first check after a fresh snapshot reads every file; the
    // runs measured are the steady state of a loop.
    for (index, (pre, post_stdin)) in inputs.iter().enumerate() {
        run_once(guard, &[], pre, &env_refs[index]);
        run_once(post, &[], post_stdin, &env_refs[index]);
    }
    let nothing = || {};
    let busy_dir = busy.display().to_string();
    let git_status = [
        "-C",
        busy_dir.as_str(),
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    ];
    let cases = [
        Case {
            name: "/bin/true (baseline)",
            prepare: &nothing,
            program: Path::new("/bin/true"),
            args: &[],
            stdin: b"",
            env: &[],
        },
        Case {
            name: "git status (same repository: 200 files, 3 dirty, 10,200 refs)",
            prepare: &nothing,
            program: &git_bin,
            args: &git_status,
            stdin: b"",
            env: &[],
        },
        Case {
            name: "PreToolUse guard, Bash, no loop",
            prepare: &nothing,
            program: guard,
            args: &[],
            stdin: &inputs[0].0,
            env: &env_refs[0],
        },
        Case {
            name: "PostToolUse hook, Bash, no loop",
            prepare: &nothing,
            program: post,
            args: &[],
            stdin: &inputs[0].1,
            env: &env_refs[0],
        },
        Case {
            name: "PreToolUse guard, Bash, loop running: snapshot (200 loose + 10,000 packed refs)",
            prepare: &nothing,
            program: guard,
            args: &[],
            stdin: &inputs[1].0,
            env: &env_refs[1],
        },
        Case {
            name: "PostToolUse hook, Bash, loop running: check + diagnostics (same)",
            prepare: &nothing,
            program: post,
            args: &[],
            stdin: &inputs[1].1,
            env: &env_refs[1],
        },
        Case {
            name: "PreToolUse guard, Bash, loop running: snapshot (5,000 loose refs)",
            prepare: &nothing,
            program: guard,
            args: &[],
            stdin: &inputs[2].0,
            env: &env_refs[2],
        },
        Case {
            name: "PostToolUse hook, Bash, loop running: check + diagnostics (5,000 loose refs)",
            prepare: &nothing,
            program: post,
            args: &[],
            stdin: &inputs[2].1,
            env: &env_refs[2],
        },
    ];
    let rows = measure_all(&cases, runs);
    print_table(&rows, runs);
    let ms = |index: usize| rows[index].median.as_secs_f64() * 1000.0;
    println!(
        "\nadded per Bash call while a loop runs (pre + post, loop minus no loop): {:.2} ms with 200 loose refs, {:.2} ms with 5,000",
        ms(4) + ms(5) - ms(2) - ms(3),
        ms(6) + ms(7) - ms(2) - ms(3)
    );
    let _ = std::fs::remove_dir_all(&root);
}
