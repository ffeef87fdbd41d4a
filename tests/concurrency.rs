//! Many writers at once, and writers killed mid-write: the state must never
//! lose an update or become unparsable.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{self, TempDir};

const SESSION: &str = "concurrency-session";

fn running_loop(project: &std::path::Path, check: &str, goal: &str) -> Value {
    json!({
        "version": 1, "id": "loop-20261121T110000Z-0001", "status": "RUNNING", "goal": goal,
        "promise": null, "checks": [check], "check_timeout_secs": 30, "diagnostics": false, "no_warnings": false,
        "iteration": 0, "max_iterations": 100000, "session_id": SESSION,
        "project_root": project.display().to_string(),
        "started_at": "2026-11-21T11:00:00Z", "updated_at": "2026-11-21T11:00:00Z", "ended_at": null,
        "completion_reason": null, "consecutive_blocks": 0, "touched_files": [], "history": []
    })
}

fn write_loop(project: &std::path::Path, state: &Value) {
    let dir = project.join(".claude/orchestrator");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("loop.json"), serde_json::to_string(state).unwrap()).unwrap();
}

fn stop_input() -> Vec<u8> {
    serde_json::to_vec(
        &json!({"hook_event_name": "Stop", "session_id": SESSION, "stop_hook_active": true,
                               "last_assistant_message": "working"}),
    )
    .unwrap()
}

fn spawn_with_stdin(mut command: Command, stdin: &[u8]) -> Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child
}

/// 12 Stop hooks each add one iteration to the same loop while 4 CLI
/// processes read it and try to start a competing loop: every iteration must
/// land, and every read must see a whole file.
#[test]
fn sixteen_processes_lose_no_update() {
    let temp = TempDir::new("concurrency");
    let project = temp.path();
    // Letters only (digits are masked in fingerprints), different every run,
    // so no two iterations look stagnant.
    let check = "cat /proc/sys/kernel/random/uuid | tr 0-9 g-p; exit 1";
    write_loop(project, &running_loop(project, check, "concurrency"));

    const N_HOOKS: usize = 12;
    let mut children = Vec::new();
    for _ in 0..N_HOOKS {
        children.push((
            "hook",
            spawn_with_stdin(
                util::command("ralph-stop-loop-controller", project),
                &stop_input(),
            ),
        ));
    }
    for index in 0..4 {
        let mut command = util::command("ralph-hooks", project);
        if index % 2 == 0 {
            command.args(["loop", "status", "--json"]);
        } else {
            command.args(["loop", "start", "competing goal", "--promise", "X"]);
        }
        children.push(("cli", spawn_with_stdin(command, b"")));
    }
    for (kind, child) in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("corrupt"),
            "{kind} saw a corrupt file: {stderr}"
        );
        if kind == "hook" {
            assert_eq!(output.status.code(), Some(0), "hook failed: {stderr}");
        }
    }

    let text = std::fs::read_to_string(project.join(".claude/orchestrator/loop.json")).unwrap();
    let state: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(state["status"], "RUNNING");
    assert_eq!(
        state["iteration"], N_HOOKS,
        "lost updates: {}",
        state["iteration"]
    );
    assert_eq!(state["history"].as_array().unwrap().len(), N_HOOKS);
    let events =
        std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl")).unwrap();
    let iterations = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("whole event line"))
        .filter(|e| e["data"]["event"] == "loop_iteration")
        .count();
    assert_eq!(iterations, N_HOOKS);
}

/// A tiny deterministic generator, so a failure can be replayed by seed.
struct Lcg(u64);

impl Lcg {
    fn next_below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// Kills the Stop hook at random moments while it rewrites a 2 MB
/// `loop.json`: after every kill the file parses, as the old or the new loop.
#[test]
fn killed_writers_never_leave_a_torn_file() {
    let temp = TempDir::new("crash");
    let project = temp.path();
    // A large goal makes every write take long enough to be hit mid-way.
    let goal = "x".repeat(2 * 1024 * 1024);
    let check = "cat /proc/sys/kernel/random/uuid | tr 0-9 g-p; exit 1";
    write_loop(project, &running_loop(project, check, &goal));
    let loop_path = project.join(".claude/orchestrator/loop.json");

    // One uninterrupted run sets the window the kills are spread over.
    let started = std::time::Instant::now();
    let output = spawn_with_stdin(
        util::command("ralph-stop-loop-controller", project),
        &stop_input(),
    )
    .wait_with_output()
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let full_run_micros = started.elapsed().as_micros() as u64;
    let window_micros = full_run_micros * 13 / 10;

    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let mut random = Lcg(seed);
    let mut last_iteration = 1;
    let mut n_killed_runs = 0;
    for round in 0..60 {
        let mut child = spawn_with_stdin(
            util::command("ralph-stop-loop-controller", project),
            &stop_input(),
        );
        std::thread::sleep(Duration::from_micros(random.next_below(window_micros)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_none() {
            n_killed_runs += 1;
        }
        let text = std::fs::read_to_string(&loop_path)
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): loop.json gone: {e}"));
        let state: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): torn loop.json: {e}"));
        let iteration = state["iteration"].as_u64().unwrap();
        assert!(
            iteration == last_iteration || iteration == last_iteration + 1,
            "round {round}: iteration jumped"
        );
        assert_eq!(
            state["goal"].as_str().map(str::len),
            Some(goal.len()),
            "round {round}: goal truncated"
        );
        last_iteration = iteration;
        if let Ok(events) =
            std::fs::read_to_string(project.join(".claude/orchestrator/events.jsonl"))
        {
            for line in events.lines() {
                serde_json::from_str::<Value>(line)
                    .unwrap_or_else(|e| panic!("round {round}: torn event line: {e}"));
            }
        }
    }
    // The test is only meaningful if kills really landed during runs.
    assert!(
        n_killed_runs >= 10,
        "only {n_killed_runs} of 60 runs were killed; the timing window is too small"
    );
    assert!(
        last_iteration >= 3,
        "only {} runs completed a write; the kills came too early",
        last_iteration - 1
    );
}

fn example_binary(name: &str) -> std::path::PathBuf {
    // Integration tests run from target/<profile>/deps; examples sit beside it.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    deps.parent().unwrap().join("examples").join(name)
}

/// A writer that does nothing but rewrite a 256 KB document through the store,
/// killed at random moments: every kill lands in or near a write, and the file
/// must always parse, with a counter that never goes back.
#[test]
fn store_writes_survive_kill_at_any_point() {
    let temp = TempDir::new("crash-store");
    let writer = example_binary("state_writer");
    assert!(
        writer.is_file(),
        "{} is not built (cargo test builds examples)",
        writer.display()
    );
    let doc = temp.path().join("doc.json");
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let mut random = Lcg(seed);
    let mut last_n = None;
    let mut n_reads = 0;
    for round in 0..40 {
        let mut child = Command::new(&writer)
            .arg(temp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Meanwhile, unlocked readers must only ever see whole documents.
        let deadline =
            std::time::Instant::now() + Duration::from_micros(2_000 + random.next_below(80_000));
        while std::time::Instant::now() < deadline {
            if let Ok(text) = std::fs::read_to_string(&doc) {
                n_reads += 1;
                serde_json::from_str::<Value>(&text).unwrap_or_else(|e| {
                    panic!("round {round} (seed {seed}): a reader saw a torn doc.json: {e}")
                });
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let Ok(text) = std::fs::read_to_string(&doc) else {
            continue;
        };
        let value: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): torn doc.json: {e}"));
        let n = value["n"].as_u64().unwrap();
        assert!(
            last_n.is_none_or(|last| n >= last),
            "round {round}: counter went back"
        );
        assert_eq!(
            value["payload"].as_str().map(str::len),
            Some(256 * 1024),
            "round {round}: payload cut"
        );
        last_n = Some(n);
    }
    assert!(
        last_n.is_some_and(|n| n >= 5),
        "the writer barely wrote ({last_n:?}); the test proves nothing"
    );
    assert!(
        n_reads >= 100,
        "only {n_reads} concurrent reads; the test proves nothing"
    );
}
